//! What `/explain/<project>/` says, as data: the JSON it answers, which `explain.rs` renders
//! as HTML and `variants/` adds its part to.

use serde::Serialize;
use wheelgate_resolver::{Machine, Policy};

use super::client_addr::ClientReport;

/// What `/explain/<project>/` answers, in its JSON form.
#[derive(Debug, Serialize)]
pub struct Explanation {
    pub project: String,
    /// The machine in one line ([`describe_machine`](super::explain::describe_machine)).
    pub machine: String,
    /// The machine in the JSON model's shape (what `wheelgate detect --json` prints).
    pub machine_detail: Machine,
    pub policy: Policy,
    /// The project page this explains (root-relative).
    pub simple_url: String,
    /// The upstream page it was rewritten from (credentials redacted): the first source's.
    pub upstream_url: String,
    /// Every source that owns the project, in priority order: its page, and whether it
    /// answered (a source that failed with nothing cached has no builds on the page).
    pub sources: Vec<SourceReport>,
    /// The source of every file on the pages, by filename.
    pub file_sources: std::collections::BTreeMap<String, String>,
    /// `false` for projects of the general upstream: their pages are passed through whole.
    pub selected: bool,
    /// How many files the page lists, serves, and leaves off and why; for projects whose
    /// builds are selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<FileCounts>,
    /// Newest version first.
    pub versions: Vec<VersionExplanation>,
    /// Files left off for a reason other than their backend (wheel-variant files, names that do
    /// not parse, files an offline server's store does not hold).
    pub dropped: Vec<DroppedFile>,
    /// Under `/explain/` (no prefix) with `[[networks]]` configured: the asking client's address
    /// and the rule that decided the machine, or that none did. Absent under `/b/` and `/m/`,
    /// whose URL decides, and without rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientReport>,
}

/// One version: the build kept on the machine's own platform and why every other was not, and
/// the same for each other platform its wheels are built for.
#[derive(Debug, Default, Serialize)]
pub struct VersionExplanation {
    pub version: String,
    /// The backend kept on the machine's own platform; `None` when no build is usable, or when
    /// the files carry no backend.
    pub chosen: Option<String>,
    /// The files the page keeps for this version, on every platform.
    pub kept: Vec<String>,
    /// Every backend offered, the chosen one first, judged for the machine's own platform.
    pub builds: Vec<BuildVerdict>,
    /// What the user should know: inferred rules, a GPU no build can use, a pin.
    pub notes: Vec<String>,
    /// The choice on each other platform the version's wheels are built for, for the same
    /// accelerators there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<PlatformExplanation>,
    /// Kept files the page also lists under the plain version, by those names
    /// (`server/plain_version.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plain_aliases: Vec<String>,
}

/// One version's choice on a platform other than the machine's own.
#[derive(Debug, Serialize)]
pub struct PlatformExplanation {
    /// `linux-aarch64`, `windows-x86_64`, `macos-arm64`, ...
    pub platform: String,
    /// The backend kept there; `None` when none runs there.
    pub chosen: Option<String>,
    /// Every backend offered, the chosen one first, judged for that platform.
    pub builds: Vec<BuildVerdict>,
    /// What the user should know about the choice there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How many of the page's files are served and why the others are not.
#[derive(Debug, Default, Serialize)]
pub struct FileCounts {
    /// Files on the (merged) upstream page.
    pub listed: usize,
    /// Files of the upstream page the rewritten page serves.
    pub kept: usize,
    /// Kept files the page lists a second time, under the plain version
    /// ([`VersionExplanation::plain_aliases`]).
    pub plain_aliases: usize,
    /// Files left off because another build of their version was chosen for their platform,
    /// per platform.
    pub other_builds: std::collections::BTreeMap<String, usize>,
    /// Files left off for another reason: the `dropped` list.
    pub other_reasons: usize,
}

/// What happened to one backend of a version.
#[derive(Debug, Serialize)]
pub struct BuildVerdict {
    pub backend: String,
    /// `chosen`, `usable` (runs here, lost on preference) or `rejected` (would not run here, or
    /// has no file for this platform).
    pub verdict: &'static str,
    /// Why it was not chosen; `None` for the chosen build.
    pub reason: Option<String>,
}

/// A file dropped for a reason other than its backend.
#[derive(Debug, Serialize)]
pub struct DroppedFile {
    pub filename: String,
    pub reason: String,
}

/// One source of the project.
#[derive(Debug, Serialize)]
pub struct SourceReport {
    pub name: String,
    /// Its page of the project (credentials redacted).
    pub url: String,
    /// Files its page lists (0 when it has no such project or failed).
    pub files: usize,
    /// Why its builds are missing: it failed and nothing is cached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
