//! Which torch release a distribution is built against, from its core metadata: a
//! `Requires-Dist: torch` whose specifiers admit the versions of one release line only
//! (`torch==2.9.0`, `torch==2.9.*`, `torch>=2.9,<2.10`). Judged against the torch versions the
//! torch page lists, so a pin that admits several release lines (`torch>=2.0`) binds nothing.

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{Requirement, VerbatimUrl};

/// What a file's metadata says about torch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TorchPin {
    /// No `Requires-Dist: torch` (or one with no version specifiers): not bound.
    None,
    /// The specifiers of its unconditional `Requires-Dist: torch`.
    Specifiers(VersionSpecifiers),
}

impl TorchPin {
    /// The pin in `requires_dist`: the first `torch` requirement without markers.
    pub fn of(requires_dist: &[Requirement<VerbatimUrl>]) -> TorchPin {
        requires_dist
            .iter()
            .find(|r| r.name.as_ref() == "torch" && r.marker.is_true())
            .and_then(|r| match &r.version_or_url {
                Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers))
                    if !specifiers.is_empty() =>
                {
                    Some(TorchPin::Specifiers(specifiers.clone()))
                }
                _ => None,
            })
            .unwrap_or(TorchPin::None)
    }

    /// The newest of `torch_versions` the pin admits, when every version it admits is of one
    /// release line (same major and minor); `None` when it binds to no single release, or to
    /// one the torch page does not list.
    pub fn bound_to<'a>(&self, torch_versions: &'a [Version]) -> Option<&'a Version> {
        let TorchPin::Specifiers(specifiers) = self else {
            return None;
        };
        let admitted: Vec<&Version> = torch_versions
            .iter()
            .filter(|v| specifiers.contains(v))
            .collect();
        let line = |v: &Version| (v.release().first().copied(), v.release().get(1).copied());
        let first = admitted.first()?;
        admitted
            .iter()
            .all(|v| line(v) == line(first))
            .then(|| admitted.into_iter().max().expect("not empty"))
    }

    /// The pin as written, for explanations (`==2.9.0`).
    pub fn describe(&self) -> String {
        match self {
            TorchPin::None => "no torch requirement".to_string(),
            TorchPin::Specifiers(specifiers) => format!("torch{specifiers}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn pin(line: &str) -> TorchPin {
        TorchPin::of(&[Requirement::from_str(line).unwrap()])
    }

    fn versions(list: &[&str]) -> Vec<Version> {
        list.iter().map(|v| Version::from_str(v).unwrap()).collect()
    }

    #[test]
    fn pins_to_one_release_line_bind() {
        let torch = versions(&["2.8.0", "2.9.0", "2.9.1", "2.10.0"]);
        let bound = |line: &str| pin(line).bound_to(&torch).map(ToString::to_string);
        assert_eq!(bound("torch==2.9.0").as_deref(), Some("2.9.0"));
        assert_eq!(bound("torch==2.9.*").as_deref(), Some("2.9.1"));
        assert_eq!(bound("torch>=2.9,<2.10").as_deref(), Some("2.9.1"));
        assert_eq!(bound("torch (==2.8.0)").as_deref(), Some("2.8.0"));
        // Several lines, none listed, no pin at all, or another project: not bound.
        assert_eq!(bound("torch>=2.0"), None);
        assert_eq!(bound("torch==2.7.0"), None);
        assert_eq!(bound("torch"), None);
        assert_eq!(bound("torchvision==0.24.0"), None);
        // A requirement under a marker is not what every install gets.
        assert_eq!(bound("torch==2.9.0; sys_platform == 'linux'"), None);
        assert_eq!(pin("torch==2.9.0").describe(), "torch==2.9.0");
    }
}
