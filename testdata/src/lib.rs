//! wheelgate-testdata: pages for tests and benchmarks that must not reach the internet: a
//! generated copy, of real size and shape, of download.pytorch.org's aggregated `/whl/torch/`
//! page, and project pages a real registry sent ([`registry`]).
//!
//! The real page (April 2026) lists about 2,800 files, about 760 KB of HTML: every torch release
//! from 1.x to 2.11, each for every backend it was published for (`cpu`, `cu92` to `cu130`,
//! `rocm3.10` to `rocm7.2`, `xpu`), every Python and platform. [`torch_page_html`] writes one with
//! the same shape: `linux_x86_64` and `manylinux_2_28_*` tags mixed within a release, unlabelled
//! macOS and old aarch64 and CUDA wheels whose link directory names the backend, `%2B` in links,
//! `#sha256=` fragments and, for newer releases, `data-dist-info-metadata`. Deterministic: the
//! same bytes on every call (the digests are derived from the filenames).
//!
//! - [`releases`]: the table of releases, backends, Pythons and platforms;
//! - [`page`]: the files of the page and its HTML;
//! - [`registry`]: project pages a real registry sent, as it sent them.

mod digest;
pub mod page;
pub mod registry;
pub mod releases;

pub use page::{PageFile, page_html, torch_files, torch_page_html};
