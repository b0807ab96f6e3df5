//! Conservative inference for builds the catalog does not describe: a `cu129` the index lists
//! for a release the catalog has no `cu129` entry for, a `rocm7.3` between known ROCm lists.
//!
//! Every source that could stand in for the missing facts is gathered (the release's own
//! nearest builds of the same family first, then the same backend in the nearest releases, then
//! the family in the nearest releases) and the requirement is what *all* of them admit: an
//! inferred build never admits a GPU that a known neighbour rejects. Torch 2.11's `cu129`
//! therefore takes 2.11 `cu128`'s list without Volta, not 2.10 `cu129`'s list with it.

use super::rules::sm_set_name;
use super::{Catalog, Release};
use crate::backend::Backend;
use crate::machine::{GfxTarget, Platform};
use crate::version::{ComputeCapability, CudaVersion, DottedVersion};

/// One known build whose list stands in for a missing one, as shown in explanations
/// (`cu128 for torch 2.11`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source<T> {
    pub name: String,
    pub list: Vec<T>,
}

/// The architectures every source admits, and the sources, for the explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agreed<T> {
    pub list: Vec<T>,
    pub sources: Vec<String>,
}

impl Catalog {
    /// The compiled compute capabilities of CUDA `cuda` for `release` on `platform` when the
    /// catalog gives none, from every neighbour that has one; `None` when no neighbour does.
    pub(crate) fn infer_sm(
        &self,
        release: &Release,
        backend: &Backend,
        cuda: CudaVersion,
        platform: Platform,
    ) -> Option<Agreed<ComputeCapability>> {
        let set_of = |release: &Release, candidate: &Backend| {
            release
                .backends
                .get(candidate)
                .and_then(|entry| sm_set_name(entry, platform))
                .map(|set| Source {
                    name: format!("{candidate} for torch {}", release.torch),
                    list: self.sm_sets[set].clone(),
                })
        };
        // 1. The release's own nearest builds of the same CUDA family, below and above.
        let mut sources = nearest_in_family(release, cuda, |b| set_of(release, b));
        // 2. The same backend in the nearest releases, older and newer.
        sources.extend(self.nearest_releases(release, |r| set_of(r, backend)));
        // 3. Only when neither says anything: the family's nearest builds in the nearest
        //    releases that have one.
        if sources.is_empty() {
            let found = self.nearest_releases(release, |r| {
                let found = nearest_in_family(r, cuda, |b| set_of(r, b));
                (!found.is_empty()).then_some(found)
            });
            sources.extend(found.into_iter().flatten());
        }
        agree_sm(&sources)
    }

    /// The gfx targets of an unknown ROCm version: the known lists just below and above it, and
    /// the release's own nearest ROCm builds, intersected.
    pub(crate) fn infer_gfx(
        &self,
        release: &Release,
        version: &DottedVersion,
    ) -> Option<Agreed<GfxTarget>> {
        let known = |v: &DottedVersion| {
            self.rocm_gfx
                .iter()
                .find(|(known, _)| known == v)
                .map(|(known, list)| Source {
                    name: format!("rocm{known}"),
                    list: list.clone(),
                })
        };
        // `rocm_gfx` is newest first.
        let older = self.rocm_gfx.iter().find(|(v, _)| v < version);
        let newer = self.rocm_gfx.iter().rev().find(|(v, _)| v > version);
        let mut sources: Vec<Source<GfxTarget>> = [older, newer]
            .into_iter()
            .flatten()
            .filter_map(|(v, _)| known(v))
            .collect();
        let own: Vec<&DottedVersion> = release
            .backends
            .keys()
            .filter_map(|b| match b {
                Backend::Rocm(v) => Some(v),
                _ => None,
            })
            .collect();
        let own_older = own.iter().filter(|v| **v < version).max();
        let own_newer = own.iter().filter(|v| **v > version).min();
        for v in [own_older, own_newer].into_iter().flatten() {
            if let Some(source) = known(v)
                && !sources.contains(&source)
            {
                sources.push(source);
            }
        }
        if sources.is_empty() {
            return None;
        }
        let list = sources[0]
            .list
            .iter()
            .filter(|gfx| sources.iter().all(|s| s.list.contains(gfx)))
            .cloned()
            .collect();
        Some(Agreed {
            list,
            sources: sources.into_iter().map(|s| s.name).collect(),
        })
    }

    /// `find` applied to the nearest older release and the nearest newer release for which it
    /// finds something (releases are newest first).
    fn nearest_releases<T>(
        &self,
        release: &Release,
        find: impl Fn(&Release) -> Option<T>,
    ) -> Vec<T> {
        let older = self
            .releases
            .iter()
            .filter(|r| r.torch < release.torch)
            .find_map(&find);
        let newer = self
            .releases
            .iter()
            .rev()
            .filter(|r| r.torch > release.torch)
            .find_map(&find);
        older.into_iter().chain(newer).collect()
    }
}

/// The release's builds of CUDA `cuda`'s family nearest below and above it that `set_of` knows.
fn nearest_in_family<T>(
    release: &Release,
    cuda: CudaVersion,
    set_of: impl Fn(&Backend) -> Option<Source<T>>,
) -> Vec<Source<T>> {
    let family = |b: &&Backend| matches!(b, Backend::Cuda(v) if v.major == cuda.major);
    let version = |b: &Backend| match b {
        Backend::Cuda(v) => *v,
        _ => unreachable!("filtered to CUDA"),
    };
    // Backends are ordered by version within their kind.
    let below = release
        .backends
        .keys()
        .filter(family)
        .filter(|b| version(b) < cuda)
        .rev()
        .find_map(&set_of);
    let above = release
        .backends
        .keys()
        .filter(family)
        .filter(|b| version(b) > cuda)
        .find_map(&set_of);
    below.into_iter().chain(above).collect()
}

/// The compute capabilities every source covers. SASS for `X.Z` runs on `X.Y` when `Z <= Y`,
/// so an entry of one list is kept when every other list covers it: a GPU is covered by the
/// result exactly when every source covers it.
fn agree_sm(sources: &[Source<ComputeCapability>]) -> Option<Agreed<ComputeCapability>> {
    if sources.is_empty() {
        return None;
    }
    let covers = |list: &[ComputeCapability], cc: &ComputeCapability| {
        list.iter()
            .any(|s| s.major == cc.major && s.minor <= cc.minor)
    };
    let mut list: Vec<ComputeCapability> = sources
        .iter()
        .flat_map(|s| s.list.iter().copied())
        .filter(|cc| sources.iter().all(|s| covers(&s.list, cc)))
        .collect();
    list.sort_unstable();
    list.dedup();
    Some(Agreed {
        list,
        sources: sources.iter().map(|s| s.name.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ccs(text: &[&str]) -> Vec<ComputeCapability> {
        text.iter().map(|t| t.parse().unwrap()).collect()
    }

    #[test]
    fn agreement_covers_exactly_what_every_source_covers() {
        let a = Source {
            name: "a".into(),
            list: ccs(&["7.0", "7.5", "8.0", "8.6", "9.0"]),
        };
        let b = Source {
            name: "b".into(),
            list: ccs(&["7.5", "8.6", "10.0"]),
        };
        let agreed = agree_sm(&[a.clone(), b]).unwrap();
        assert_eq!(agreed.list, ccs(&["7.5", "8.6"]));
        assert_eq!(agreed.sources, ["a", "b"]);
        let covered = |cc: &str| {
            let cc: ComputeCapability = cc.parse().unwrap();
            agreed
                .list
                .iter()
                .any(|s| s.major == cc.major && s.minor <= cc.minor)
        };
        // 8.0 is in both lists' reach only from 8.6 up in `b`; 7.0 and 10.0 in one list only.
        for (cc, expected) in [
            ("7.0", false),
            ("7.5", true),
            ("8.0", false),
            ("8.9", true),
            ("9.0", false),
            ("10.0", false),
        ] {
            assert_eq!(covered(cc), expected, "{cc}");
        }
        assert_eq!(agree_sm(std::slice::from_ref(&a)).unwrap().list, a.list);
        assert_eq!(agree_sm(&[]), None);
    }
}
