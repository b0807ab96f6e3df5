//! The mirror's binding by metadata: for a declared machine, a project built against torch
//! outside its release train (xformers, fbgemm-gpu, ...) is taken in the build the torch it
//! pins gets on that machine, as the server serves it (`wheelgate_server::binding`), so a store
//! and its locks never pair torch `+cu129` with an xformers `+cu128`. The binding step is the
//! resolver's ([`wheelgate_resolver::select::bind`]); the pins are read here, once per build,
//! through the fetcher every environment shares.

use std::sync::Arc;

use futures_util::future::join_all;
use wheelgate_resolver::select::bind::{Pins, TorchChoices, apply_pins, bound_builds};
use wheelgate_resolver::select::{FileRef, PageSelection, TorchPin};
use wheelgate_resolver::{Catalog, Machine, Policy, select_page};

use super::fetch::{Fetcher, ResolveError};
use wheelgate_index::cache::index::CachedPage;
use wheelgate_index::error_chain::source_chain;
use wheelgate_index::metrics::upstream_label;
use wheelgate_index::sources::ProjectKind;

/// torch's page and the pins of one project's builds, read for the machines it is taken for.
pub struct Binding {
    catalog: &'static Catalog,
    torch: Option<Arc<CachedPage>>,
    pins: Pins,
}

impl Binding {
    /// What binding `project` (whose page is `page`, of kind `kind`) for `machines` needs;
    /// `None` when it is not bound: not a PyTorch project, one of torch's release train (the
    /// catalog binds those), or no machine declared. A build whose metadata is invalid is not
    /// kept (its reason said in the version's notes); an upstream that fails stops the sync, as
    /// any metadata read does.
    pub(super) async fn read(
        fetcher: &Fetcher<'_>,
        kind: ProjectKind,
        project: &str,
        page: &CachedPage,
        machines: &[Machine],
        policy: &Policy,
    ) -> Result<Option<Binding>, ResolveError> {
        let catalog = fetcher.config().catalog.0;
        if kind != ProjectKind::Pytorch
            || catalog.is_release_train_project(project)
            || machines.is_empty()
        {
            return Ok(None);
        }
        let torch = fetcher.page("torch").await?;
        let refs: Vec<FileRef<'_>> = page.page.files.iter().map(FileRef::from).collect();
        // Pins are the builds' own, whatever the machine: read once for all of them.
        let mut pins = Pins::new();
        for machine in machines {
            let choices = torch_choices(catalog, torch.as_deref(), machine, policy);
            let selection = select_page(catalog, machine, policy, project, &refs);
            let builds = bound_builds(catalog, machine, policy, project, &refs, &selection);
            loop {
                let pending = builds.pending(&selection, &pins, &choices);
                if pending.is_empty() {
                    break;
                }
                let results = join_all(
                    pending
                        .iter()
                        .map(|(_, index)| fetcher.metadata(page, &page.page.files[*index])),
                )
                .await;
                for ((build, index), result) in pending.into_iter().zip(results) {
                    let pin = match result {
                        Ok(metadata) => Ok(TorchPin::of(&metadata.requires_dist)),
                        Err(err) if err.is_invalid_metadata() => Err(source_chain(&*err)),
                        Err(source) => {
                            let file = &page.page.files[index];
                            return Err(ResolveError::Metadata {
                                project: project.to_string(),
                                version: build.0.to_string(),
                                file: file.filename.clone(),
                                host: upstream_label(&page.page.file_url(file, &page.url)),
                                source,
                            });
                        }
                    };
                    pins.insert(build, pin);
                }
            }
        }
        Ok(Some(Binding {
            catalog,
            torch,
            pins,
        }))
    }

    /// Binds `selection` (of `project`'s files `refs`, for `machine`) to torch's builds there.
    pub(super) fn apply(
        &self,
        machine: &Machine,
        policy: &Policy,
        project: &str,
        refs: &[FileRef<'_>],
        selection: &mut PageSelection,
    ) {
        let torch = torch_choices(self.catalog, self.torch.as_deref(), machine, policy);
        let builds = bound_builds(self.catalog, machine, policy, project, refs, selection);
        apply_pins(selection, &builds, &self.pins, &torch);
    }
}

/// What torch (its page; none: no torch anywhere) gets on `machine`, per version.
pub(super) fn torch_choices(
    catalog: &Catalog,
    torch: Option<&CachedPage>,
    machine: &Machine,
    policy: &Policy,
) -> TorchChoices {
    torch.map_or_else(TorchChoices::default, |torch| {
        let refs: Vec<FileRef<'_>> = torch.page.files.iter().map(FileRef::from).collect();
        TorchChoices::from_selection(&select_page(catalog, machine, policy, "torch", &refs))
    })
}
