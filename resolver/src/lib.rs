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
//!
//! # Embedding it
//!
//! An installer already holds what selection needs: a project's files (names and links, from
//! a PEP 691 page or its own cache) and a target machine. Four uses, each compiled and run as a
//! doc test; `examples/choose_from_json.rs` is a whole program doing the second.
//!
//! ## Describe a machine
//!
//! The resolver never probes: the machine comes from `wheelgate-selectors`' `detect()` on the
//! machine itself, from its JSON form (`wheelgate detect --json`), or from its token
//! (`wheelgate detect --token`), which round-trips.
//!
//! ```
//! use wheelgate_resolver::{Machine, token};
//!
//! let json = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
//! let machine: Machine = serde_json::from_str(json)?;
//! let token = token::encode(&machine);
//! assert_eq!(token, "1-lx-n580.65.06-s9.0");
//! assert_eq!(token::decode(&token)?, machine);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Choose from an installer's own candidate list
//!
//! No HTML: [`select::FileRef`]s borrow the filenames and links the installer has; the answer
//! is indices into that list, per version, with every other backend's rejection.
//!
//! ```
//! use wheelgate_resolver::select::{FileRef, select_page};
//! use wheelgate_resolver::{Catalog, Machine, Policy};
//!
//! let names = [
//!     "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
//!     "torch-2.9.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
//!     "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
//! ];
//! let files: Vec<FileRef<'_>> = names
//!     .iter()
//!     .map(|name| FileRef { filename: name, url: name })
//!     .collect();
//! let h100: Machine = serde_json::from_str(
//!     r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
//! )?;
//! let selection = select_page(Catalog::embedded(), &h100, &Policy::default(), "torch", &files);
//! let version = &selection.versions[0];
//! assert_eq!(version.kept, [2]);
//! let decision = version.decision.as_ref().unwrap();
//! assert_eq!(decision.chosen.as_ref().unwrap().to_string(), "cu130");
//! for (backend, why) in decision.rejections() {
//!     println!("{backend}: {why}"); // cu126: usable, but cu130 is newer; cpu: ...
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Rewrite a page
//!
//! What the proxy does per request: parse, select, keep the chosen files, render.
//!
//! ```
//! use wheelgate_resolver::index::{parse_project_html, render_project_html};
//! use wheelgate_resolver::select::{FileRef, select_page};
//! use wheelgate_resolver::{Catalog, Machine, Os, Platform, Arch, Policy};
//!
//! let html = r#"<a href="/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=aa">torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a>
//! <a href="/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=bb">torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a>"#;
//! let mut page = parse_project_html(html)?;
//! let cpu_only = Machine::cpu_only(Platform { os: Os::Linux, arch: Arch::X86_64 });
//! let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
//! let selection = select_page(Catalog::embedded(), &cpu_only, &Policy::default(), "torch", &refs);
//! let mut index = 0;
//! page.files.retain(|_| {
//!     index += 1;
//!     selection.keeps(index - 1)
//! });
//! let rewritten = render_project_html(&page);
//! assert!(rewritten.contains("+cpu-") && !rewritten.contains("cu130"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Order wheel variants
//!
//! For a `*-variants.json` file (PEP 825), the variants that run on a machine, best first.
//!
//! ```
//! use wheelgate_resolver::Machine;
//! use wheelgate_resolver::variants::{order_variants_for_machine, parse_variants_json};
//!
//! let file = parse_variants_json(r#"{
//!   "default-priorities": {"namespace": ["nvidia"]},
//!   "providers": {"nvidia": {"requires": ["nvidia-variant-provider>=0.0.2,<1.0.0"],
//!                            "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}},
//!   "variants": {
//!     "null": {},
//!     "cuda12.6": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["90_real"]}},
//!     "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}
//!   }
//! }"#)?;
//! let h100: Machine = serde_json::from_str(
//!     r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
//! )?;
//! let order = order_variants_for_machine(&file, &h100);
//! // Both CUDA variants run on driver 580 (CUDA 13.0); the null variant comes last.
//! assert_eq!(order.labels(), ["cuda13.0", "cuda12.6", "null"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod backend;
pub mod catalog;
pub mod driver_cuda;
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
