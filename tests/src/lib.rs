//! End-to-end tests for wheelgate: real pip and real uv install through the proxy from fake
//! upstreams that serve pages in download.pytorch.org's exact format.
//!
//! The reusable parts live here, the tests in `tests/e2e/`:
//! - [`binary`]: the `wheelgate` binary, for command-line tests;
//! - [`wheels`]: small real wheels built in memory (correct `RECORD` hashes);
//! - [`sdists`]: small real `.zip` sdists with a build backend of their own (built offline);
//! - [`catalog`]: what the fake upstreams publish (torch 2.9.0 and 2.6.0 per backend,
//!   torchvision, pytorch-triton, filelock; a planted PyPI `pytorch-triton`);
//! - [`find_links`]: a per-build find-links host in PyG's shape (a page per torch release and
//!   build);
//! - [`simple_index`]: a plain PEP 503 index (an internal index, a PyPI with chosen files);
//! - [`reference`](mod@reference): a second catalog with torch's real dependency structure (markers,
//!   Requires-Python, per-backend `nvidia-*` pins, squatters), for the mirror's resolution;
//! - [`upstream`]: the fake PyTorch index, its second file host and the fake PyPI, counting
//!   requests;
//! - [`variant_index`]: a fake wheel-variant index (PEP 825) of torch, every schema generation;
//! - [`machines`]: the machines the tests resolve for and the build each must get;
//! - [`proxy`]: wheelgate itself, started in-process against the fakes;
//! - [`real_servers`]: real index servers (pypiserver, devpi-server, simple-repository-server,
//!   proxpi, a generated static tree) from `scripts/real-servers-setup`, started on loopback;
//! - [`served`]: the release `wheelgate serve` as its own process, for the benchmarks;
//! - [`installers`]: pip and uv from the venv `scripts/e2e-setup` creates, isolated from the
//!   host's configuration.

pub mod binary;
pub mod catalog;
pub mod find_links;
pub mod installers;
pub mod load_balancer;
pub mod machines;
pub mod proxy;
pub mod real_servers;
pub mod reference;
pub mod sdists;
pub mod served;
pub mod simple_index;
pub mod soak;
pub mod upstream;
pub mod variant_index;
pub mod wheels;
