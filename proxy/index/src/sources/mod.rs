//! Sources: the upstream indexes a project's pages and files come from, each owning the names
//! it serves. The PyTorch index (`pytorch_url`) and the general index (`pypi_url`) are the first
//! two, built in; `[[sources]]` adds any number more (a company's internal index, a vendor's).
//!
//! Ownership, never presence: a name is served from exactly the sources that own it, their
//! files merged as builds of one project ([`pages`]), and from no other, whatever the other
//! holds and even when every owner is down. So a name squatted on PyPI is never offered: a
//! PyTorch-only name (`pytorch-triton`, the shape of the December 2022 `torchtriton` attack) or
//! an internal `acme-utils` published publicly at 99.0.
//!
//! - The PyTorch source owns the catalog's PyTorch names (`[routing]` in `catalog.toml`).
//! - A configured source owns the names and globs of its `projects`. A glob may not take a
//!   PyTorch name unless the source lists that name too (checked at start).
//! - The general source owns every name nobody else owns, and besides the PyTorch index the
//!   names PyTorch's maintainers also publish on PyPI (the catalog's `published_on_pypi`:
//!   torch, torchvision, ...), so torch still resolves when download.pytorch.org cannot be
//!   reached. Names only on the PyTorch index (`pytorch-triton`, a placeholder on PyPI) stay
//!   the PyTorch index's alone.
//!
//! Where the network has no PyTorch index (`pytorch_index = false`), there is no PyTorch source:
//! the names published on PyPI are the general source's alone, and a name only the PyTorch
//! index publishes has no owner ([`Sources::unserved`]): it answers 404 and is never asked of
//! the general index, where it may be anyone's.

mod build;
pub mod counters;
pub mod first_read;
pub mod merge;
pub mod pages;
mod pattern;
pub mod template;

use std::fmt::Write as _;

use wheelgate_resolver::{Backend, Catalog};

pub use crate::upstream::{SourceAccess, UrlCredentials};
pub use build::SourcesError;
pub use build::split_userinfo;
pub use merge::SourcePage;
pub use pages::ProjectPages;
pub use pattern::{PatternError, ProjectPattern};
pub use template::{TemplateError, UrlTemplate};

use wheelgate_config::UpstreamAccessConfig;

/// The built-in PyTorch source's name.
pub const PYTORCH: &str = "pytorch";
/// The built-in general source's name.
pub const PYPI: &str = "pypi";

/// What an index's URLs look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// download.pytorch.org's layout: `<root>/<project>/` aggregates every backend, and
    /// `<root>/<backend>/<project>/` holds one.
    Pytorch,
    /// A PEP 503/691 simple index: `<root>/<project>/`.
    Index,
    /// A find-links page per torch release and build (its URL a [`UrlTemplate`]), every file on
    /// it built against that torch: PyG's `torch-{torch}+{backend}.html`.
    PerBuild,
}

/// Which names a source owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owns {
    /// The catalog's PyTorch names.
    PytorchNames,
    /// The names and globs of `projects`.
    Patterns(Vec<ProjectPattern>),
    /// Every name no other source owns, and the PyTorch names also published on PyPI.
    Rest,
}

/// One upstream index and the names it serves.
#[derive(Debug, Clone)]
pub struct Source {
    /// `pytorch`, `pypi`, or a `[[sources]]` name.
    pub name: String,
    pub kind: SourceKind,
    /// The index root, without a trailing slash (credentials possible: redact before showing);
    /// for a per-build source, its template as written.
    pub url: String,
    /// A per-build source's page template.
    pub template: Option<UrlTemplate>,
    /// `user:password@` the configured URL carried, taken out of `url` (so no page key, stored
    /// page or log line holds it) and sent as basic authentication to its origin instead.
    pub url_credentials: Option<UrlCredentials>,
    pub owns: Owns,
    /// Its access settings (`[upstreams.*]` for the built-in two).
    pub access: UpstreamAccessConfig,
    /// Where it is configured, for messages: `[upstreams.pytorch]`, `[[sources]] internal`.
    pub section: String,
}

impl Source {
    /// The upstream page of `project` on this source: with a backend pinned, the PyTorch
    /// index's page of that backend (other indexes have one page per project).
    pub fn page_url(&self, project: &str, pinned: Option<&Backend>) -> String {
        let mut url = String::with_capacity(self.url.len() + project.len() + 2);
        self.write_page_url(&mut url, project, pinned);
        url
    }

    /// [`Source::page_url`] written into `url` (cleared first): every page request makes one
    /// per owner, into a buffer it keeps.
    pub fn write_page_url(&self, url: &mut String, project: &str, pinned: Option<&Backend>) {
        url.clear();
        url.push_str(&self.url);
        url.push('/');
        if let (SourceKind::Pytorch, Some(backend)) = (self.kind, pinned) {
            let _ = write!(url, "{backend}/");
        }
        url.push_str(project);
        url.push('/');
    }
}

impl Owns {
    /// What a source owns, in words for the log, the status page and `config show`.
    pub fn describe(&self) -> String {
        match self {
            Owns::PytorchNames => "the catalog's PyTorch projects".to_string(),
            Owns::Patterns(patterns) => patterns
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            Owns::Rest => {
                "every project no other source owns, and the PyTorch projects published on PyPI"
                    .to_string()
            }
        }
    }
}

/// How a project's builds are served: PyTorch projects (the catalog's names, from whichever
/// sources own them) are reduced to one build per version for a machine; others are passed
/// through whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProjectKind {
    Pytorch,
    General,
}

/// A source's place in [`Sources`]; also its priority (lower first) when several own a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(pub u16);

/// What a server without a PyTorch index does, in words: its start line, the status page and
/// `config show` say it.
pub const WITHOUT_PYTORCH_INDEX: &str = "`pytorch_index = false`: PyTorch's projects published on PyPI come from the general index alone; those only the PyTorch index publishes answer 404";

/// A PyTorch project no source owns: only the PyTorch index publishes it, and this network has
/// none (`pytorch_index = false`). Its answer is a 404 naming the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{project}` is published only on the PyTorch index, and this server has none (`pytorch_index = false`): it is never looked up on the general index, where the name may be anyone's; to serve it, list it in the `projects` of a `[[sources]]` entry that holds PyTorch's builds"
)]
pub struct NoPytorchIndex {
    pub project: String,
}

/// Every source, in priority order: the PyTorch index (unless `pytorch_index = false`), the
/// configured sources as written, the general index.
#[derive(Debug, Clone)]
pub struct Sources {
    list: Vec<Source>,
    catalog: &'static Catalog,
}

impl Sources {
    /// Each source's access settings, for [`crate::upstream::resolve_sources`].
    pub fn access_settings(&self) -> impl Iterator<Item = SourceAccess<'_>> {
        self.iter().map(|(_, source)| SourceAccess {
            section: &source.section,
            access: &source.access,
            url: &source.url,
            url_credentials: source.url_credentials.as_ref(),
        })
    }

    /// Every source with its id, in priority order.
    pub fn iter(&self) -> impl Iterator<Item = (SourceId, &Source)> {
        self.list.iter().enumerate().map(|(i, s)| (id(i), s))
    }

    /// The source `id`.
    pub fn get(&self, id: SourceId) -> &Source {
        &self.list[usize::from(id.0)]
    }

    /// The source named `name`.
    pub fn by_name(&self, name: &str) -> Option<(SourceId, &Source)> {
        self.iter().find(|(_, s)| s.name == name)
    }

    /// The built-in PyTorch source; `None` where the network has none (`pytorch_index = false`).
    pub fn pytorch(&self) -> Option<&Source> {
        self.list
            .first()
            .filter(|source| source.kind == SourceKind::Pytorch)
    }

    /// The built-in general source.
    pub fn general(&self) -> &Source {
        self.list
            .last()
            .expect("the general source is always there")
    }

    /// The sources that own the normalized `project`, in priority order; empty only for a
    /// name [`Sources::unserved`] gives a reason for.
    pub fn owners(&self, project: &str) -> Vec<SourceId> {
        self.owners_where(project, |_| true)
    }

    /// Why no source serves `project`, when none does: a PyTorch name only the PyTorch index
    /// publishes, where this network has none. Checked before a page is looked up: one
    /// comparison while there is a PyTorch index.
    pub fn unserved(&self, project: &str) -> Option<NoPytorchIndex> {
        if self.pytorch().is_some() || !self.catalog.routes_to_pytorch(project) {
            return None;
        }
        self.owners(project).is_empty().then(|| NoPytorchIndex {
            project: project.to_string(),
        })
    }

    /// The owners of `project` whose kind `keep` accepts, in priority order: one list made in
    /// one pass (every page request asks).
    fn owners_where(&self, project: &str, keep: impl Fn(SourceKind) -> bool) -> Vec<SourceId> {
        // Allocated at the first owner kept: most lists of per-build owners are empty.
        let mut owners = Vec::new();
        let mut owned = false;
        for (i, source) in self.list.iter().enumerate() {
            let owns = match &source.owns {
                Owns::PytorchNames => self.catalog.routes_to_pytorch(project),
                Owns::Patterns(patterns) => patterns.iter().any(|p| p.matches(project)),
                // A PyTorch name no earlier source owns only lacks a PyTorch index: the
                // general index may not take it unless PyTorch publishes it there too.
                Owns::Rest if owned => self.catalog.is_published_on_pypi(project),
                Owns::Rest => {
                    self.pytorch().is_some()
                        || !self.catalog.routes_to_pytorch(project)
                        || self.catalog.is_published_on_pypi(project)
                }
            };
            owned |= owns;
            if owns && keep(source.kind) {
                owners.push(id(i));
            }
        }
        owners
    }

    /// The per-build sources among `project`'s owners: where they own it, its pages are theirs,
    /// one per torch release and build (`wheelgate::server::binding::by_page`).
    pub fn per_build_owners(&self, project: &str) -> Vec<SourceId> {
        self.owners_where(project, |kind| kind == SourceKind::PerBuild)
    }

    /// The owners of `project` that serve it as a project page: all but the per-build ones,
    /// whose pages are per torch release and build.
    pub fn page_owners(&self, project: &str) -> Vec<SourceId> {
        self.owners_where(project, |kind| kind != SourceKind::PerBuild)
    }

    /// Whether `project`'s pages are reduced to one build per version for a machine: the
    /// catalog's PyTorch names, from whichever sources own them.
    pub fn selects(&self, project: &str) -> bool {
        self.catalog.routes_to_pytorch(project)
    }

    /// [`ProjectKind`] of `project`.
    pub fn kind(&self, project: &str) -> ProjectKind {
        if self.selects(project) {
            ProjectKind::Pytorch
        } else {
            ProjectKind::General
        }
    }

    /// The catalog the PyTorch names come from.
    pub fn catalog(&self) -> &'static Catalog {
        self.catalog
    }
}

fn id(index: usize) -> SourceId {
    // A configuration lists a handful; 65,536 would not fit in memory as sources anyway.
    SourceId(u16::try_from(index).expect("fewer than 65,536 sources"))
}

/// Why a configuration's access settings cannot be used: its sources, or their access.
#[derive(Debug, thiserror::Error)]
pub enum ConfiguredAccessError {
    #[error(transparent)]
    Sources(#[from] SourcesError),
    #[error(transparent)]
    Access(#[from] crate::upstream::AccessError),
}

/// The access of each source `config` names, read now (secrets from the environment and files,
/// CA bundles from disk). Empty when no source has access settings.
pub fn resolve_access(
    config: &wheelgate_config::ServeConfig,
) -> Result<Vec<crate::upstream::OriginAccess>, ConfiguredAccessError> {
    let sources = Sources::configured(config)?;
    Ok(crate::upstream::resolve_sources(sources.access_settings())?)
}
