//! The mirror's binding by page: a project of a per-build source (PyG's
//! `torch-{torch}+{backend}.html`) is resolved, stored and locked as the server serves it
//! (`wheelgate_server::binding::by_page`): per environment, the template pages of the builds torch
//! gets there (each fetched through the index cache, so the store holds them for the offline
//! server), each wheel bound to its page's torch release and build, its core metadata carrying
//! that page's torch pin, and the lock naming the `/bound/` link and the derived wheel's hash.
//!
//! One public version is often listed for several torch releases (`2.1.2+pt28cu129`,
//! `2.1.2+pt29cu130`). The solver knows one set of requirements per public version, so the pin
//! it sees is the exact union of its files' pins (the torch releases some file of that version
//! can be installed with); once torch is resolved, only the files whose own pin admits it are
//! kept ([`BoundListing::files_for`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use futures_util::{StreamExt, stream};
use pep440_rs::{Version, VersionSpecifiers};
use wheelgate_resolver::Backend;
use wheelgate_resolver::filename::DistFilename;
use wheelgate_resolver::index::ProjectPage;
use wheelgate_resolver::select::bind::TorchChoices;

use super::bind::torch_choices;
use super::environment::{Build, Environment};
use super::fetch::{Fetcher, ResolveError};
use wheelgate_files::derive::Change;
use wheelgate_index::cache::index::CachedPage;
use wheelgate_index::metrics::upstream_label;
use wheelgate_index::sources::{SourceId, Sources};
use wheelgate_server::binding::by_page::{
    CONCURRENT_PAGES, bound_link, is_wheel_of, pin_for, requirement, wanted_pages,
};

/// What one listed file is bound to.
#[derive(Debug, Clone)]
pub struct BoundTo {
    /// The per-build source's name.
    pub source: String,
    /// The torch release whose page lists it, and the build.
    pub release: Version,
    pub backend: Backend,
    /// The specifiers its core metadata gains (`==2.10.*,!=2.10.1`).
    pub pin: String,
}

impl BoundTo {
    /// The server's link to the file (`/bound/...`), under which a lock names it.
    pub fn link(&self, project: &str, filename: &str) -> String {
        bound_link(
            &self.source,
            &self.release,
            &self.backend,
            &self.pin,
            project,
            filename,
        )
    }

    /// The change the server makes to the file: its pin added.
    pub fn change(&self) -> Change {
        Change::AddRequirements(vec![requirement(&self.pin)])
    }

    fn admits(&self, torch: &Version) -> bool {
        VersionSpecifiers::from_str(&self.pin).is_ok_and(|pin| pin.contains(torch))
    }
}

/// A per-build project's files for one environment.
#[derive(Debug)]
pub struct BoundListing {
    /// The wheels listed on its template pages, each linked to its upstream URL.
    pub page: Arc<CachedPage>,
    /// Per file of `page`, what it is bound to.
    pub bound: Vec<BoundTo>,
    /// The template pages that answered, to store.
    pub urls: Vec<String>,
}

impl BoundListing {
    /// The torch pin the solver sees for `version` (public): exactly the torch releases that
    /// some file of that version admits, as `>=lo,<=hi` less those between that none admits.
    /// `None` when no torch release admits one (nothing of that version can be installed).
    pub fn solver_pin(&self, version: &Version, torch: &TorchChoices) -> Option<String> {
        let pins: Vec<&BoundTo> = self.files_of(version).map(|i| &self.bound[i]).collect();
        let admitted: Vec<&Version> = torch
            .versions
            .iter()
            .filter(|t| pins.iter().any(|b| b.admits(t)))
            .collect();
        let (low, high) = (admitted.first()?, admitted.last()?);
        let mut pin = format!(">={low},<={high}");
        for t in &torch.versions {
            if t > low && t < high && !admitted.contains(&t) {
                let _ = write!(pin, ",!={t}");
            }
        }
        Some(pin)
    }

    /// Of the files `indices`, those whose pin admits the resolved `torch`.
    pub fn files_for(&self, indices: &[usize], torch: &Version) -> Vec<usize> {
        indices
            .iter()
            .copied()
            .filter(|&i| self.bound[i].admits(torch))
            .collect()
    }

    fn files_of<'s>(&'s self, version: &'s Version) -> impl Iterator<Item = usize> + 's {
        self.page
            .page
            .files
            .iter()
            .enumerate()
            .filter(move |(_, f)| {
                f.filename
                    .parse::<DistFilename>()
                    .is_ok_and(|d| d.version().clone().without_local() == *version)
            })
            .map(|(i, _)| i)
    }
}

/// `project`'s files from its per-build `owners` where torch gets `torch`'s builds: the
/// template pages that can matter, read through the index cache (a 404 is "no build"; a page
/// that fails stops the sync, as any source's does).
pub(super) async fn listing(
    fetcher: &Fetcher<'_>,
    sources: &Sources,
    project: &str,
    owners: &[SourceId],
    torch: &TorchChoices,
) -> Result<BoundListing, ResolveError> {
    let (wanted, order) = wanted_pages(sources, torch, owners);
    // A few at a time, as a page request reads them: a torch page of a thousand releases
    // is a thousand template pages (issue 41 item 7).
    let reads: Vec<_> = order.iter().map(|url| fetcher.template_page(url)).collect();
    let answers: Vec<_> = stream::iter(reads)
        .buffered(CONCURRENT_PAGES)
        .collect()
        .await;
    let mut files = Vec::new();
    let mut bound = Vec::new();
    let mut urls = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut pins: BTreeMap<String, String> = BTreeMap::new();
    for (url, answer) in order.iter().zip(answers) {
        let want = &wanted[url];
        let cached = match answer {
            Ok(Some(cached)) => cached,
            Ok(None) => continue,
            Err(source) => {
                return Err(ResolveError::Page {
                    project: project.to_string(),
                    host: upstream_label(url),
                    source,
                });
            }
        };
        urls.push(url.clone());
        let pin = pins
            .entry(url.clone())
            .or_insert_with(|| pin_for(torch, &want.release, &want.backend))
            .clone();
        for file in &cached.page.files {
            if !is_wheel_of(&file.filename, project) || !seen.insert(file.filename.clone()) {
                continue;
            }
            let mut listed = file.clone();
            listed.url = cached.page.file_url(file, &cached.url);
            files.push(listed);
            bound.push(BoundTo {
                source: sources.get(want.source).name.clone(),
                release: want.release.clone(),
                backend: want.backend.clone(),
                pin: pin.clone(),
            });
        }
    }
    let page = ProjectPage {
        name: project.to_string(),
        files,
        versions: Vec::new(),
        meta: wheelgate_resolver::index::Meta::default(),
        base: None,
        status: None,
        dropped: Vec::new(),
    };
    let base = urls.first().cloned().unwrap_or_default();
    Ok(BoundListing {
        page: Arc::new(CachedPage::merged(&base, page, 0)),
        bound,
        urls,
    })
}

/// What torch gets per version in `environment`: its machine's builds, or its backend.
pub(super) async fn environment_torch(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
) -> Result<TorchChoices, ResolveError> {
    let torch = fetcher.page("torch").await?;
    Ok(match &environment.build {
        Build::Machine { machine, .. } => torch_choices(
            &fetcher.config().catalog,
            torch.as_deref(),
            machine,
            &fetcher.config().policy,
        ),
        Build::Backend(backend) => backend_choices(torch.as_deref(), backend),
        Build::None => TorchChoices::default(),
    })
}

/// What torch gets per version in an environment of one backend: that backend, for every
/// version with a build of it.
pub fn backend_choices(torch: Option<&CachedPage>, backend: &Backend) -> TorchChoices {
    let mut choices = TorchChoices::default();
    let Some(torch) = torch else {
        return choices;
    };
    for file in &torch.page.files {
        let Ok(dist) = file.filename.parse::<DistFilename>() else {
            continue;
        };
        let public = dist.version().clone().without_local();
        if !choices.versions.contains(&public) {
            choices.versions.push(public.clone());
        }
        if let DistFilename::Wheel(wheel) = &dist
            && wheel.label_backend().as_ref() == Some(backend)
        {
            choices.chosen.insert(public, backend.clone());
        }
    }
    choices.versions.sort();
    choices
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use wheelgate_resolver::index::IndexFile;

    use super::*;

    fn v(text: &str) -> Version {
        Version::from_str(text).unwrap()
    }

    fn listing(files: &[(&str, &str)]) -> BoundListing {
        let page = ProjectPage {
            name: "torch-scatter".into(),
            files: files
                .iter()
                .map(|(name, _)| IndexFile::new(*name, *name))
                .collect(),
            versions: Vec::new(),
            meta: wheelgate_resolver::index::Meta::default(),
            base: None,
            status: None,
            dropped: Vec::new(),
        };
        BoundListing {
            page: Arc::new(CachedPage::merged("http://pyg/", page, 0)),
            bound: files
                .iter()
                .map(|(_, pin)| BoundTo {
                    source: "pyg".into(),
                    release: v("2.8.0"),
                    backend: "cu129".parse().unwrap(),
                    pin: (*pin).to_string(),
                })
                .collect(),
            urls: Vec::new(),
        }
    }

    /// The solver's pin of a version admits exactly the torch releases some file of it admits,
    /// even where they are not contiguous; after resolution only the matching files are kept.
    #[test]
    fn a_versions_pin_is_the_exact_union_of_its_files_pins() {
        let torch = TorchChoices {
            versions: ["2.7.0", "2.8.0", "2.8.1", "2.9.0", "2.10.0"]
                .iter()
                .map(|t| v(t))
                .collect(),
            chosen: BTreeMap::new(),
            elsewhere: Vec::new(),
        };
        let bound = listing(&[
            ("torch_scatter-2.1.2+pt27cu126-py3-none-any.whl", "==2.7.*"),
            (
                "torch_scatter-2.1.2+pt28cu129-py3-none-any.whl",
                "==2.8.*,!=2.8.1",
            ),
            (
                "torch_scatter-2.1.2+pt210cu130-py3-none-any.whl",
                "==2.10.*",
            ),
            ("torch_scatter-2.1.1+pt29cu129-py3-none-any.whl", "==2.9.*"),
        ]);
        let pin = bound.solver_pin(&v("2.1.2"), &torch).unwrap();
        assert_eq!(pin, ">=2.7.0,<=2.10.0,!=2.8.1,!=2.9.0");
        let specifiers = VersionSpecifiers::from_str(&pin).unwrap();
        for (t, admitted) in [
            ("2.7.0", true),
            ("2.8.0", true),
            ("2.8.1", false),
            ("2.9.0", false),
            ("2.10.0", true),
        ] {
            assert_eq!(specifiers.contains(&v(t)), admitted, "{t}");
        }
        assert_eq!(
            bound.solver_pin(&v("2.1.1"), &torch).unwrap(),
            ">=2.9.0,<=2.9.0"
        );
        assert_eq!(bound.solver_pin(&v("2.0.0"), &torch), None);
        assert_eq!(bound.files_for(&[0, 1, 2], &v("2.8.0")), [1]);
        assert_eq!(
            bound.files_for(&[0, 1, 2], &v("2.9.0")),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn a_backend_environment_gets_that_backend_where_torch_has_it() {
        let page = ProjectPage {
            name: "torch".into(),
            files: [
                "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.8.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl",
            ]
            .iter()
            .map(|name| IndexFile::new(*name, *name))
            .collect(),
            versions: Vec::new(),
            meta: wheelgate_resolver::index::Meta::default(),
            base: None,
            status: None,
            dropped: Vec::new(),
        };
        let cached = CachedPage::merged("http://pytorch/whl/torch/", page, 0);
        let choices = backend_choices(Some(&cached), &"cu130".parse().unwrap());
        assert_eq!(choices.versions, [v("2.8.0"), v("2.9.0")]);
        assert_eq!(
            choices.chosen,
            BTreeMap::from([(v("2.9.0"), "cu130".parse().unwrap())])
        );
    }
}
