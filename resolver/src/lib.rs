//! wheelgate-resolver: given a description of a machine and the files a package index offers,
//! choose for each package version the one PyTorch build that runs best on that machine, and
//! say why every other build was rejected.
//!
//! Pure and synchronous: no network, no OS probing. The pieces:
//! - [`filename`]: wheel and sdist filenames (PEP 427, PEP 625, PEP 825 variant labels);
//! - [`platform_tags`]: whether a wheel's platform tags run on a machine (PEP 425, 600, 656);
//! - [`backend`] and [`version`]: `cu128`, `rocm6.4`, driver versions, compute capabilities;
//! - [`index`]: simple-index pages (PEP 503 HTML, PEP 691 JSON), parsed and rendered;
//! - [`machine`]: the machine description selection works from;
//! - [`catalog`]: what each PyTorch build needs, as data, with inference for unknown builds;
//! - [`select`]: the choice per version, with a reason for every rejected build;
//! - [`token`]: a machine as one short path-safe URL segment (`/m/<token>/`), round-tripping;
//! - [`variants`]: wheel variants (PEP 817, PEP 825): labels, `*-variants.json`, PEP 825 ordering;

pub mod backend;
pub mod catalog;
pub mod filename;
pub mod index;
pub mod machine;
pub mod platform_tags;
pub mod select;
pub mod token;
pub mod variants;
pub mod version;

pub use backend::{Backend, BackendKind};
pub use catalog::Catalog;
pub use machine::{Arch, Machine, Os, Platform};
pub use select::{Decision, Policy, select_page, select_release};
pub use version::{ComputeCapability, CudaVersion, DottedVersion};
