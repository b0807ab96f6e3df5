//! wheelgate-selectors: probes that describe the local machine for wheelgate-resolver, fast and
//! without a GPU library or subprocess wherever the kernel already says it.
//!
//! - [`detect()`] runs every probe and returns a [`Machine`](wheelgate_resolver::Machine) with
//!   the [`source`] of each fact and what was tried before it;
//! - every file is read through a [`sysroot::Sysroot`] (`WHEELGATE_SYSROOT`), so tests and image
//!   builds describe a machine from a captured tree;
//! - every fact has an environment override, all listed in [`overrides`];
//! - [`nvidia`], [`amd`], [`intel`], [`cpu`], [`platform`] and [`libc`] are the probes; [`ffi`]
//!   holds the only `unsafe` code (NVML and libcuda loaded at run time).
//!
//! ```no_run
//! let ctx = wheelgate_selectors::ProbeContext::from_process()?;
//! let detection = wheelgate_selectors::detect(&ctx)?;
//! println!("{}", serde_json::to_string(&detection.machine)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod amd;
pub mod command;
pub mod container;
pub mod context;
pub mod cpu;
pub mod detect;
pub mod ffi;
pub mod intel;
pub mod libc;
pub mod nvidia;
pub mod overrides;
pub mod pci;
pub mod platform;
pub mod source;
pub mod sysroot;

pub use context::ProbeContext;
pub use detect::{DetectError, Detection, detect};
pub use overrides::{Env, backend_override};
pub use source::{Attempt, Fact, Facts, Source};
