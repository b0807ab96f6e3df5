//! wheelgate, the server: a package index in front of download.pytorch.org and PyPI that serves
//! every machine the right PyTorch build through one index URL.
//!
//! Below this crate (ARCHITECTURE.md draws them):
//! - `wheelgate_config` (`proxy/config/`): the configuration and its defaults;
//! - `wheelgate_index` (`proxy/index/`): the upstream client, sources, the page cache, the
//!   shared bucket and cache directory, metrics;
//! - `wheelgate_files` (`proxy/files/`): the file cache, derived wheels, wheel metadata;
//! - `wheelgate_server` (`proxy/server/`): the axum app, its routes and pages, running it;
//! - `wheelgate_mirror` (`proxy/mirror/`): `wheelgate mirror sync`, a store an offline server
//!   serves completely.
//!
//! Here:
//! - [`cli`]: the `wheelgate` command line (shared by the binary and the Python package).

pub mod cli;
