//! The environment variables of `wheelgate serve` (and `wheelgate config show`, which takes the
//! same flags), one constant each: clap reads each when its flag is absent, and `config show`
//! names the one a value came from. Layered over the config file, under the flags.

/// `--config FILE`: the TOML configuration file.
pub const CONFIG: &str = "WHEELGATE_CONFIG";
/// `--listen ADDR` (`listen`).
pub const LISTEN: &str = "WHEELGATE_LISTEN";
/// `--pytorch-url URL` (`pytorch_url`).
pub const PYTORCH_URL: &str = "WHEELGATE_PYTORCH_URL";
/// `--no-pytorch-index` (`pytorch_index = false`): `true` says this network has no PyTorch
/// index.
pub const NO_PYTORCH_INDEX: &str = "WHEELGATE_NO_PYTORCH_INDEX";
/// `--pypi-url URL` (`pypi_url`).
pub const PYPI_URL: &str = "WHEELGATE_PYPI_URL";
/// `--cache-dir DIR` (`cache_dir`).
pub const CACHE_DIR: &str = "WHEELGATE_CACHE_DIR";
/// `--offline` (`offline`).
pub const OFFLINE: &str = "WHEELGATE_OFFLINE";
/// `--index-ttl-secs N` (`index_ttl_secs`).
pub const INDEX_TTL: &str = "WHEELGATE_INDEX_TTL";
/// `--cache-max-bytes N` (`cache_max_bytes`).
pub const CACHE_MAX_BYTES: &str = "WHEELGATE_CACHE_MAX_BYTES";
