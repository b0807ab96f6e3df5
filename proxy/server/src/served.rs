//! What `/simple/` serves one machine for torch's release train (torch, torchvision,
//! torchaudio), as the status page and `wheelgate serve`'s start lines tell it: from the live
//! pages (each owner's copy in the index cache, selected exactly as the simple route selects
//! them), or, before any page was read, the catalog's expectation, said to be the catalog's.
//!
//! The catalog alone misleads: its newest confirmed release (torch 2.14, `cpu` on a machine
//! without a GPU) is not what `pip install torch` gets when the live page has a newer version
//! published only as CUDA builds (2.15.0 `cu132`, kept as a CPU build of last resort), and it
//! has no torchaudio for the lines after 2.11 (issue 42 item 4).

use std::fmt::Write as _;

use pep440_rs::Version;
use wheelgate_resolver::catalog::ReleaseLine;
use wheelgate_resolver::select::{PlatformChoice, ReleaseSelection, VersionSelection};
use wheelgate_resolver::{Catalog, Decision, Machine, Policy, select_release};

use super::offline::offered;
use super::rewrite::select_files;
use super::state::AppState;
use wheelgate_index::sources::{ProjectPages, SourceKind, SourcePage};

/// torch's release train, in the order shown.
pub const PROJECTS: [&str; 3] = ["torch", "torchvision", "torchaudio"];

/// What `/simple/` serves for each project of torch's release train.
#[derive(Debug)]
pub struct TrainBuilds {
    /// The torch release line the rows are for: the line of the version torch's live page
    /// serves, else the catalog's newest confirmed release.
    pub line: ReleaseLine,
    /// Whether [`TrainBuilds::line`] comes from torch's live page.
    pub line_is_live: bool,
    /// One per project of [`PROJECTS`].
    pub rows: Vec<ProjectBuilds>,
}

/// One project's answer.
#[derive(Debug)]
pub struct ProjectBuilds {
    /// The normalized project name.
    pub project: String,
    pub answer: Answer,
    /// The owners whose page is not in hand (no cached copy: not read yet, or the owner has
    /// none, an absence not being cached; or its read failed): builds they may offer are not
    /// counted in a live answer.
    pub unread: Vec<String>,
}

/// Where a project's answer comes from, and what it is.
#[derive(Debug)]
pub enum Answer {
    /// From the live page.
    Live {
        /// The version served for torch's line (the newest with a build for this machine's
        /// platform, final releases first, as pip picks), else the newest served at all.
        served: Option<Served>,
        /// Whether `served` is of torch's line: `false` for a project whose page has no
        /// version of it (torchaudio after 2.11), `served` then being the newest it has.
        on_line: bool,
    },
    /// The catalog's expectation: no page of the project was read yet.
    Catalog(ReleaseSelection),
    /// The catalog lists no version of the project for torch's line; `newest` is the newest
    /// line it lists one for. No page of the project was read yet.
    CatalogNone { newest: Option<ReleaseLine> },
    /// No source serves the project on this network (the 404's reason).
    Unserved(String),
}

/// One version on a live page, as the page is selected for the machine.
#[derive(Debug)]
pub struct Served {
    pub version: Version,
    /// The torch line it belongs to, where known.
    pub line: Option<ReleaseLine>,
    /// The choice on the machine's own platform (`None`: its files carry no backend).
    pub decision: Option<Decision>,
    /// The choice on every other platform its wheels are built for.
    pub platforms: Vec<PlatformChoice>,
    /// Whether it has a build for the machine's own platform (else pip here skips it).
    pub here: bool,
}

/// From the index cache's copies only: never an upstream request (the status page must not
/// wait on one).
pub async fn cached(state: &AppState, machine: &Machine, policy: &Policy) -> TrainBuilds {
    let mut pages = Vec::with_capacity(PROJECTS.len());
    for project in PROJECTS {
        pages.push(cached_pages(state, project, policy).await);
    }
    describe(state, machine, policy, pages)
}

/// torch's pages read as a request reads them (through the index cache, fetched where no fresh
/// copy is held), then the rest from the cache: for `serve`'s line after its first reads.
pub async fn read_torch(state: &AppState) -> TrainBuilds {
    let machine = &state.default_machine;
    let policy = &state.config.policy;
    let mut pages = Vec::with_capacity(PROJECTS.len());
    for project in PROJECTS {
        if project != "torch" {
            pages.push(cached_pages(state, project, policy).await);
            continue;
        }
        let read = ProjectPages::fetch(
            &state.sources,
            &state.index,
            &state.client,
            project,
            policy.pinned.as_ref(),
        )
        .await;
        let owners = page_owner_names(state, project);
        pages.push(match read {
            Ok(Some(pages)) => {
                let unread = pages
                    .failed
                    .iter()
                    .map(|(id, _)| state.sources.get(*id).name.clone())
                    .collect();
                (Some(pages), unread)
            }
            Ok(None) | Err(_) => (None, owners),
        });
    }
    describe(state, machine, policy, pages)
}

/// The names of the sources whose project pages `project` is served from.
fn page_owner_names(state: &AppState, project: &str) -> Vec<String> {
    state
        .sources
        .page_owners(project)
        .into_iter()
        .map(|id| state.sources.get(id).name.clone())
        .collect()
}

/// Each owner's cached copy of `project`'s page (the pinned backend's where the policy pins
/// one, as the simple route asks), and the owners with none.
async fn cached_pages(
    state: &AppState,
    project: &str,
    policy: &Policy,
) -> (Option<ProjectPages>, Vec<String>) {
    let pinned = policy.pinned.as_ref();
    let mut parts = Vec::new();
    let mut unread = Vec::new();
    for id in state.sources.page_owners(project) {
        let source = state.sources.get(id);
        let mut copy = state.index.peek(&source.page_url(project, pinned)).await;
        if copy.is_none() && pinned.is_some() && source.kind == SourceKind::Pytorch {
            copy = state.index.peek(&source.page_url(project, None)).await;
        }
        match copy {
            Some(cached) => parts.push(SourcePage { source: id, cached }),
            None => unread.push(source.name.clone()),
        }
    }
    let pages = (!parts.is_empty()).then(|| ProjectPages {
        parts,
        failed: Vec::new(),
    });
    (pages, unread)
}

/// The answers from each project's pages (`pages` in the order of [`PROJECTS`]).
fn describe(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    pages: Vec<(Option<ProjectPages>, Vec<String>)>,
) -> TrainBuilds {
    let catalog = state.catalog();
    let selections: Vec<Option<Vec<VersionSelection>>> = PROJECTS
        .iter()
        .zip(&pages)
        .map(|(project, (pages, _))| {
            pages
                .as_ref()
                .map(|pages| live_versions(state, machine, policy, project, pages))
        })
        .collect();
    // torch's line: the version its live page serves here, else the catalog's newest
    // confirmed release.
    let live_line = selections[0]
        .as_ref()
        .and_then(|versions| pick(catalog, "torch", versions, None))
        .and_then(|served| served.line);
    let line =
        live_line.unwrap_or_else(|| select_release(catalog, machine, policy, "torch", None).torch);
    let rows = PROJECTS
        .iter()
        .zip(pages)
        .zip(selections)
        .map(|((project, (_, unread)), versions)| {
            let answer = if let Some(unserved) = state.sources.unserved(project) {
                Answer::Unserved(unserved.to_string())
            } else if let Some(versions) = versions {
                let on_line = pick(catalog, project, &versions, Some(line));
                let on_line_found = on_line.is_some();
                Answer::Live {
                    served: on_line.or_else(|| pick(catalog, project, &versions, None)),
                    on_line: on_line_found,
                }
            } else {
                expected(catalog, machine, policy, project, line)
            };
            ProjectBuilds {
                project: (*project).to_string(),
                answer,
                unread,
            }
        })
        .collect();
    TrainBuilds {
        line,
        line_is_live: live_line.is_some(),
        rows,
    }
}

/// The page's versions selected for the machine exactly as `/simple/<project>/` selects them
/// (offline: over the stored files only).
fn live_versions(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    pages: &ProjectPages,
) -> Vec<VersionSelection> {
    let merged = pages.merged();
    let whole = merged.page();
    let page = offered(
        &whole,
        merged.base_url(),
        &state.files,
        state.config.offline,
    );
    select_files(state.catalog(), machine, policy, project, &page).versions
}

/// The version pip picks among `versions` (newest first): one the page keeps files of, with a
/// build for the machine's own platform, a final release before any pre-release; on `line`
/// alone when given. Failing a build here, the newest kept at all.
fn pick(
    catalog: &Catalog,
    project: &str,
    versions: &[VersionSelection],
    line: Option<ReleaseLine>,
) -> Option<Served> {
    let kept = |v: &&VersionSelection| {
        !v.kept.is_empty()
            && line.is_none_or(|line| catalog.torch_line(project, &v.version) == Some(line))
    };
    let here = |v: &&VersionSelection| v.decision.as_ref().is_none_or(|d| d.chosen.is_some());
    let found = versions
        .iter()
        .filter(kept)
        .filter(here)
        .find(|v| !v.version.any_prerelease())
        .or_else(|| versions.iter().filter(kept).find(here))
        .map(|v| (v, true))
        .or_else(|| versions.iter().find(kept).map(|v| (v, false)))?;
    let (version, here) = found;
    Some(Served {
        version: version.version.clone(),
        line: catalog.torch_line(project, &version.version),
        decision: version.decision.clone(),
        platforms: version.platforms.clone(),
        here,
    })
}

/// The catalog's expectation for `project` on torch's `line`.
fn expected(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    line: ReleaseLine,
) -> Answer {
    let torch: Version = format!("{}.{}.0", line.major, line.minor)
        .parse()
        .expect("two numbers are a version");
    let release = catalog.train_release("torch", &torch).release;
    let version = if project == "torch" {
        Some(torch)
    } else {
        release.companions.get(project).map(|own| {
            format!("{}.{}.0", own.major, own.minor)
                .parse()
                .expect("a version")
        })
    };
    let Some(version) = version else {
        return Answer::CatalogNone {
            newest: catalog
                .releases()
                .iter()
                .find(|r| r.companions.contains_key(project))
                .map(|r| r.torch),
        };
    };
    Answer::Catalog(select_release(
        catalog,
        machine,
        policy,
        project,
        Some(&version),
    ))
}

/// A build in words: `cu132, a CPU build of last resort (no NVIDIA GPU on this machine)`, `cpu`,
/// `none usable`.
pub fn build_words(decision: &Decision) -> String {
    match (&decision.chosen, &decision.cpu_last_resort) {
        (Some(backend), Some(no_gpu)) => {
            format!("{backend}, a CPU build of last resort ({no_gpu})")
        }
        (Some(backend), None) => backend.to_string(),
        (None, _) => "none usable".to_string(),
    }
}

/// Each other platform's build in words: `macos-arm64 cpu, linux-aarch64 cu132 (CPU build of
/// last resort)`; empty when there is none.
pub fn platforms_words(platforms: &[PlatformChoice]) -> String {
    platforms
        .iter()
        .map(|choice| {
            let build = match (&choice.decision.chosen, &choice.decision.cpu_last_resort) {
                (Some(backend), Some(_)) => format!("{backend} (CPU build of last resort)"),
                (Some(backend), None) => backend.to_string(),
                (None, _) => "none usable".to_string(),
            };
            format!("{} {build}", choice.platform)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl TrainBuilds {
    /// torch's row.
    pub fn torch(&self) -> &ProjectBuilds {
        &self.rows[0]
    }

    /// `serve`'s line about torch: what the live page serves this machine, or the catalog's
    /// expectation, said to be the catalog's.
    pub fn torch_line(&self) -> String {
        let torch = self.torch();
        let unread = if torch.unread.is_empty() {
            String::new()
        } else {
            format!(
                "; without the page of {} (not in hand: failed, or not read yet)",
                names(&torch.unread)
            )
        };
        match &torch.answer {
            Answer::Live {
                served: Some(served),
                ..
            } => {
                let build = served
                    .decision
                    .as_ref()
                    .map_or_else(|| "every file".to_string(), build_words);
                let build = if served.here {
                    build
                } else {
                    "no build for this machine's platform".to_string()
                };
                let elsewhere = platforms_words(&served.platforms);
                let elsewhere = if elsewhere.is_empty() {
                    String::new()
                } else {
                    format!("; elsewhere {elsewhere}")
                };
                format!(
                    "torch on /simple/ (the live page): {} {build}{elsewhere}{unread}; why: /explain/torch/",
                    version_words(&served.version)
                )
            }
            Answer::Live { served: None, .. } => format!(
                "torch on /simple/ (the live page): no version with a build for this machine{unread}; why: /explain/torch/"
            ),
            Answer::Catalog(selection) => format!(
                "torch by the catalog's expectation, not the live page (not read{}): {} {}",
                if torch.unread.is_empty() {
                    String::new()
                } else {
                    format!(" from {}", names(&torch.unread))
                },
                selection.torch,
                build_words(&selection.decision)
            ),
            Answer::CatalogNone { .. } => {
                "torch: the catalog lists no release and no page was read".to_string()
            }
            Answer::Unserved(why) => format!("torch: not served on this network ({why})"),
        }
    }
}

/// `` `pytorch` ``, `` `pytorch` and `pypi` ``.
fn names(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The source names for an HTML cell, escaped.
pub fn names_html(list: &[String]) -> String {
    let mut out = String::new();
    for (i, name) in list.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == list.len() { " and " } else { ", " });
        }
        let _ = write!(out, "<code>{}</code>", super::html::escape(name));
    }
    out
}

/// The version text, with `(pre-release)` when it is one.
pub fn version_words(version: &Version) -> String {
    if version.any_prerelease() {
        format!("{version} (pre-release)")
    } else {
        version.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> Version {
        text.parse().unwrap()
    }

    #[test]
    fn companions_find_their_torch_line_past_the_catalog() {
        let catalog = Catalog::embedded();
        let line = |project, v| {
            catalog
                .torch_line(project, &version(v))
                .map(|l| l.to_string())
        };
        assert_eq!(line("torch", "2.16.0").as_deref(), Some("2.16"));
        assert_eq!(line("torchvision", "0.24.1").as_deref(), Some("2.9"));
        // Beyond the catalog, by the numbering rule, not the nearest known line.
        assert_eq!(line("torchvision", "0.31.0").as_deref(), Some("2.16"));
        assert_eq!(line("torchaudio", "2.11.0").as_deref(), Some("2.11"));
        assert_eq!(line("torchaudio", "0.13.1"), None);
    }

    #[test]
    fn names_read_as_a_list() {
        assert_eq!(names(&["pypi".into()]), "`pypi`");
        assert_eq!(
            names(&["a".into(), "b".into(), "c".into()]),
            "`a`, `b` and `c`"
        );
    }
}
