//! End-to-end tests: real pip and real uv install through wheelgate, started in-process, from
//! fake upstreams on 127.0.0.1 that serve download.pytorch.org's exact page format and PyPI's
//! JSON and HTML. Nothing reaches the internet. pip and uv come from `scripts/e2e-setup`, the
//! other installers from `scripts/e2e-tools-setup`.
//!
//! - `fixtures`: the fakes themselves are what real installers accept (pip and uv install
//!   straight from the fake PyTorch index);
//! - `install`: pip and uv install `torch` for each machine, through the server's default
//!   machine and through `/m/<token>/`; `torch torchvision` from one backend; per-version
//!   fallback; a pinned `/b/<backend>/`;
//! - `routing`: the planted PyPI `pytorch-triton` (a name only the PyTorch index publishes) is
//!   never served;
//! - `sources`: `[[sources]]` with real pip and uv: an internal index owning `acme-*` beside a
//!   squatting PyPI (up, down, unreachable); torch from PyPI while the PyTorch index is down;
//!   PyPI-only releases of PyTorch projects; a CUDA build of last resort on a CPU machine;
//! - `rewriting`: no client ever receives an upstream URL; every link and `.metadata` works;
//!   one backend per version; the User-Agent refines the platform;
//! - `caching`: one upstream download per file across installers;
//! - `mirror`: `wheelgate mirror sync` into a store, then pip and uv from an offline server on it
//!   with the upstreams gone; bad configs, dry runs and a full disk.
//! - `by_page_mirror`: a store and its locks of PyG-style extensions bound by page, installed
//!   offline by pip and uv in the build of the torch beside them;
//! - `device_extras_mirror`: a store and its locks of AMD's multi-arch torch, its device package
//!   resolved per machine, installed offline by pip and uv;
//! - `mirror_resolve`: the complete mirror on upstreams with torch's real dependency structure:
//!   top-level requirements only, 12 environments resolved, pip and uv offline, PEP 751 locks;
//!   conflicts and missing requirements named.
//! - `networks`: `[[networks]]` rules with real pip: clients on `127.0.0.1` and `::1` of one
//!   dual-stack server, and behind a load balancer appending `X-Forwarded-For` (trusted, and
//!   not), each network getting its own build from the same `/simple/` URL.
//! - `variants`: a wheel-variant index (PEP 825): pip and uv get the machine's variant under
//!   the plain filename, for every schema generation, through `/m/<token>/` and `/b/cu128/`.
//! - `variantlib`: wheelgate's variants-file validation and PEP 825 ordering against variantlib
//!   0.2.2, the reference implementation (from `scripts/variantlib-setup`), on PyTorch's
//!   published files and seeded generated ones; every difference is one the docs' table
//!   records.
//! - `auth`: pip and uv through a server that requires credentials, given in the index URL;
//!   without them both fail.
//! - `real_servers`: real index servers companies run (pypiserver, a devpi-server user index,
//!   simple-repository-server, proxpi, a simple-repository-generator tree; from
//!   `scripts/real-servers-setup`) as the general upstream and as a `[[sources]]` owner: pip and
//!   uv install through wheelgate exactly what they install from the server, yanks and a `.zip`
//!   sdist included.
//! - `installers_uv`, `installers_poetry`, `installers_pdm`, `installers_piptools`,
//!   `installers_oldpip`: every other installer people use (uv projects, Poetry, PDM,
//!   pip-tools, pip 22.0 and 23.0 on Python 3.10, from `scripts/e2e-tools-setup`), configured as
//!   `wheelgate pip-config --format` says: the token machine's build lands, what each lock file
//!   does on another machine, credentials where each tool takes them.

mod auth;
mod binding;
mod by_page;
mod by_page_mirror;
mod caching;
mod device_extras;
mod device_extras_mirror;
mod fixtures;
mod freshness;
mod install;
mod installers_oldpip;
mod installers_pdm;
mod installers_piptools;
mod installers_poetry;
mod installers_support;
mod installers_uv;
mod mirror;
mod mirror_resolve;
mod networks;
mod real_servers;
mod rewriting;
mod routing;
mod sources;
mod support;
mod universal_lock;
mod variantlib;
mod variants;
mod variants_mirror;
