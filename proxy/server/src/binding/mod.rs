//! One build for the whole stack, bound by metadata: a file of a PyTorch project outside torch's
//! release train (xformers, fbgemm-gpu, torchrec, torch-tensorrt, ...) whose core metadata pins
//! torch to one release (`Requires-Dist: torch==2.9.0`) is built against that release's build
//! of torch. Of a version's builds, only the one torch of that release gets on this machine is
//! kept; a version without that build is dropped, so the installer moves to one that has it.
//! (torch's own companions, torchvision and torchaudio, are bound by the catalog's release
//! trains in the resolver.)
//!
//! Without this, an H100 under driver 570 got torch 2.9.0 `+cu129` and xformers 0.0.33 `+cu128`
//! (pinning `torch==2.9.0`): pip installs both, and xformers' extension does not load.
//!
//! Each pin is read once per file (`metadata.rs`: its PEP 658 file, else the wheel's `METADATA`
//! by ranges) and remembered by sha256; a file whose metadata cannot be read is not kept, with
//! its reason.

pub mod by_page;
pub mod extras;
pub mod files;
pub mod metadata;
pub mod pins;

use futures_util::StreamExt;
use futures_util::stream;
use wheelgate_resolver::index::ProjectPage;
use wheelgate_resolver::select::bind::{Build, Pins, apply_pins, bound_builds};
use wheelgate_resolver::select::{FileRef, PageSelection, TorchPin};
use wheelgate_resolver::{Machine, Policy, select_page};

use super::state::AppState;
use wheelgate_index::sources::ProjectPages;
use wheelgate_index::sources::pages::OwnersFailed;
pub use wheelgate_resolver::select::bind::TorchChoices;

/// Metadata reads in flight at once for one page.
const CONCURRENT_READS: usize = 16;

/// Whether `project`'s builds are bound by their metadata: a PyTorch project (selected per
/// machine) outside torch's release train.
pub fn applies(state: &AppState, project: &str) -> bool {
    state.sources.selects(project) && !state.catalog().is_release_train_project(project)
}

/// torch's pages as the machine's `/simple/torch/` reads them (`Ok(None)`: no torch anywhere),
/// for the rendering key and [`TorchChoices`]. Not counted in the sources' metrics: no client
/// asked for torch.
pub async fn torch_pages(
    state: &AppState,
    policy: &Policy,
) -> Result<Option<ProjectPages>, OwnersFailed> {
    ProjectPages::fetch(
        &state.sources,
        &state.index,
        &state.client,
        "torch",
        policy.pinned.as_ref(),
    )
    .await
}

/// The build torch gets on this machine, per public version, as `/simple/torch/` serves it,
/// from torch's pages (none: nothing is known, so no bound file is kept).
pub fn torch_choices(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    pages: Option<&ProjectPages>,
) -> TorchChoices {
    let Some(pages) = pages else {
        return TorchChoices::default();
    };
    let merged = pages.merged();
    // Offline, torch's page is what the store holds, as `/simple/torch/` serves it.
    let selection = if state.config.offline {
        let whole = merged.page();
        let offered = super::offline::offered(&whole, merged.base_url(), &state.files, true);
        let refs: Vec<FileRef<'_>> = offered.files.iter().map(FileRef::from).collect();
        select_page(state.catalog(), machine, policy, "torch", &refs)
    } else {
        select_page(state.catalog(), machine, policy, "torch", &merged.refs())
    };
    TorchChoices::from_selection(&selection)
}

/// A project's page to bind: its name, the page, and where its files were listed.
#[derive(Debug, Clone, Copy)]
pub struct Bindable<'a> {
    pub project: &'a str,
    pub page: &'a ProjectPage,
    pub listing: crate::listing::Listing<'a>,
}

/// Binds `selection` (of `page`, fetched from `base_url`) to torch's builds
/// ([`wheelgate_resolver::select::bind`]), each build's pin read from its metadata here.
/// Returns whether every pin was read (a selection made without some should not be kept for
/// long: the read may succeed next time).
pub async fn bind(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    bound: Bindable<'_>,
    torch: &TorchChoices,
    selection: &mut PageSelection,
) -> bool {
    let Bindable {
        project,
        page,
        listing,
    } = bound;
    let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    let builds = bound_builds(state.catalog(), machine, policy, project, &refs, selection);
    let mut pins = Pins::new();
    loop {
        let pending = builds.pending(selection, &pins, torch);
        if pending.is_empty() {
            break;
        }
        let read: Vec<(Build, Result<TorchPin, String>)> = stream::iter(pending)
            .map(|(key, index)| read_pin(state, page, listing, key, index))
            .buffer_unordered(CONCURRENT_READS)
            .collect()
            .await;
        pins.extend(read);
    }
    let complete = pins.values().all(Result::is_ok);
    apply_pins(selection, &builds, &pins, torch);
    complete
}

async fn read_pin(
    state: &AppState,
    page: &ProjectPage,
    listing: crate::listing::Listing<'_>,
    key: Build,
    index: usize,
) -> (Build, Result<TorchPin, String>) {
    let pin = metadata::torch_pin(state, page, listing, &page.files[index]).await;
    (key, pin)
}
