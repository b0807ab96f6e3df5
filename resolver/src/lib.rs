//! wheelgate-resolver: given a description of a machine and the files a package index offers,
//! choose for each package version the one PyTorch build that runs best on that machine, and
//! say why every other build was rejected.
//!
//! Pure and synchronous: no network, no OS probing. The pieces:
//! - [`filename`]: wheel and sdist filenames (PEP 427, PEP 625, PEP 825 variant labels);
//! - [`backend`] and [`version`]: `cu128`, `rocm6.4`, driver versions, compute capabilities;
//! - [`machine`]: the machine description selection works from;

pub mod backend;
pub mod machine;
pub mod version;

pub use backend::{Backend, BackendKind};
pub use machine::{Arch, Machine, Os, Platform};
pub use version::{ComputeCapability, CudaVersion, DottedVersion};
