//! What every real server publishes in these tests, and what pip and uv must then install from
//! it: wheels and a `.zip` sdist built by the test, one wheel yanked (PEP 592) where the server
//! can yank.
//!
//! `acme-utils` 1.0 and 1.1 (the newest, yanked) need `acme-core>=2` (2.0 and 2.1 published) and
//! `acme-legacy`, published only as `acme_legacy-0.3.zip`: installing `acme-utils` takes a
//! version choice, a yank, a dependency and an sdist build.

use std::collections::BTreeSet;
use std::path::Path;

use crate::sdists::SdistSpec;
use crate::wheels::WheelSpec;

/// What the tests ask pip and uv to install.
pub const REQUIREMENTS: &[&str] = &["acme-utils"];

/// The requirement that must still get the yanked file.
pub const YANKED_PIN: &[&str] = &["acme-utils==1.1"];

/// The wheel the servers that can yank publish yanked.
pub const YANKED: &str = "acme_utils-1.1-py3-none-any.whl";

/// The reason given for the yank, where the server carries one.
pub const YANK_REASON: &str = "broken RECORD";

/// One published file.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Normalized project name (`acme-utils`).
    pub project: &'static str,
    pub version: &'static str,
    pub filename: String,
    pub bytes: Vec<u8>,
    /// Hex sha256 of `bytes`.
    pub sha256: String,
}

/// A file an installer resolved: the same four facts whether it came from the server or through
/// wheelgate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resolved {
    /// Normalized project name.
    pub name: String,
    pub version: String,
    pub filename: String,
    /// Hex sha256 of the bytes (`None` only while an installer's record lacks it).
    pub sha256: Option<String>,
}

/// Every file the servers publish.
#[derive(Debug, Clone)]
pub struct Release {
    pub dists: Vec<Dist>,
}

impl Release {
    pub fn build() -> Release {
        let requires = ["acme-core>=2", "acme-legacy"];
        let wheel = |project: &'static str, version: &'static str, requires: &[&str]| {
            let built = requires
                .iter()
                .fold(
                    WheelSpec::new(project, version, "py3-none-any"),
                    |spec, r| spec.requires(r),
                )
                .build();
            Dist {
                project,
                version,
                filename: built.filename,
                bytes: built.bytes,
                sha256: built.sha256,
            }
        };
        let sdist = SdistSpec::new("acme-legacy", "0.3").build();
        Release {
            dists: vec![
                wheel("acme-utils", "1.0", &requires),
                wheel("acme-utils", "1.1", &requires),
                wheel("acme-core", "2.0", &[]),
                wheel("acme-core", "2.1", &[]),
                Dist {
                    project: "acme-legacy",
                    version: "0.3",
                    filename: sdist.filename,
                    bytes: sdist.bytes,
                    sha256: sdist.sha256,
                },
            ],
        }
    }

    /// The projects, each once, in order.
    pub fn projects(&self) -> BTreeSet<&'static str> {
        self.dists.iter().map(|d| d.project).collect()
    }

    /// What installing [`REQUIREMENTS`] resolves to: `acme-utils` 1.0 where 1.1 is yanked, else
    /// 1.1; `acme-core` 2.1; the `acme-legacy` sdist.
    pub fn expected(&self, yanks: bool) -> BTreeSet<Resolved> {
        self.expected_with(if yanks { "1.0" } else { "1.1" })
    }

    /// What installing `acme-utils==<utils>` resolves to (PEP 592: a yanked file is still
    /// chosen by a pin that matches only it).
    pub fn expected_with(&self, utils: &str) -> BTreeSet<Resolved> {
        self.dists
            .iter()
            .filter(|d| match d.project {
                "acme-utils" => d.version == utils,
                "acme-core" => d.version == "2.1",
                _ => true,
            })
            .map(|d| Resolved {
                name: d.project.to_string(),
                version: d.version.to_string(),
                filename: d.filename.clone(),
                sha256: Some(d.sha256.clone()),
            })
            .collect()
    }

    /// Writes every file into `dir`, flat (pypiserver's layout, and what `devpi upload
    /// --from-dir` reads).
    pub fn write_flat(&self, dir: &Path) {
        std::fs::create_dir_all(dir).expect("package directory");
        for dist in &self.dists {
            std::fs::write(dir.join(&dist.filename), &dist.bytes).expect("write a package");
        }
    }

    /// Writes every file into `dir/<project>/` (simple-repository-server's local layout).
    pub fn write_per_project(&self, dir: &Path) {
        for dist in &self.dists {
            let project = dir.join(dist.project);
            std::fs::create_dir_all(&project).expect("project directory");
            std::fs::write(project.join(&dist.filename), &dist.bytes).expect("write a package");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_yank_changes_only_acme_utils() {
        let release = Release::build();
        let names = |set: &BTreeSet<Resolved>| {
            set.iter()
                .map(|r| format!("{}=={}", r.name, r.version))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&release.expected(true)),
            ["acme-core==2.1", "acme-legacy==0.3", "acme-utils==1.0"]
        );
        assert_eq!(
            names(&release.expected(false)),
            ["acme-core==2.1", "acme-legacy==0.3", "acme-utils==1.1"]
        );
        assert!(release.dists.iter().any(|d| d.filename == YANKED));
        assert!(
            release
                .expected(false)
                .iter()
                .any(|r| r.filename == "acme_legacy-0.3.zip")
        );
    }
}
