//! The server's configuration: one serde struct per section with documented defaults, layered
//! defaults → TOML file → environment → command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wheelgate_resolver::{Machine, Policy};

pub mod object_store;
pub use object_store::{ObjectStoreConfig, StaticCredentials};

pub mod auth;
pub use auth::AuthConfig;

pub mod env;

pub mod catalog;
pub use catalog::{CatalogConfig, LoadedCatalog};

pub mod limits;
pub use limits::LimitsConfig;

pub mod secrets;
pub use secrets::SecretSource;

pub mod upstreams;
pub use upstreams::{UpstreamAccessConfig, UpstreamsConfig};
pub mod sources;
pub use sources::SourceConfig;
pub mod networks;
pub use networks::{ClientNetworks, NetworkRule};

/// Default listen address: loopback only, so a proxy started on a laptop is not an open index
/// for the network; a shared server sets `--listen 0.0.0.0:3141`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:3141";
/// download.pytorch.org's wheel root.
pub const DEFAULT_PYTORCH_URL: &str = "https://download.pytorch.org/whl";
/// PyPI's simple index, used when pip names no other.
pub const DEFAULT_PYPI_URL: &str = "https://pypi.org/simple";
/// How long an index page is served from cache before it is revalidated upstream: a release
/// published upstream is on the proxy's pages this long after at most. A revalidation is a
/// conditional request (a 304 costs nothing) and at most one per page is in flight.
pub const DEFAULT_INDEX_TTL_SECS: u64 = 10;
/// Default limit of the file cache: 50 GiB, a few dozen CUDA wheels.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 50 * 1024 * 1024 * 1024;
/// How long a shutdown waits for responses in flight (a wheel download) before it closes them:
/// under Kubernetes' default 30 s `terminationGracePeriodSeconds` minus a little.
pub const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 25;

/// Everything `wheelgate serve` runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServeConfig {
    /// Address to listen on (`DEFAULT_LISTEN`).
    pub listen: SocketAddr,
    /// The PyTorch upstream: the root under which `<backend>/<project>/` pages live.
    pub pytorch_url: String,
    /// Whether this network has a PyTorch index (default `true`). `false`: none is ever asked
    /// (`pytorch_url` and `[upstreams.pytorch]` unused); the PyTorch projects PyTorch also
    /// publishes on PyPI (the catalog's `published_on_pypi`) come from the general index alone,
    /// and those only the PyTorch index publishes (`pytorch-triton`) answer 404, never looked
    /// up elsewhere.
    pub pytorch_index: bool,
    /// The general upstream: a PEP 503/691 simple index (PyPI or a company mirror). When
    /// neither the file nor `--pypi-url` sets it, `wheelgate serve` takes the index pip is
    /// configured with on the host (`PIP_INDEX_URL`, then `pip.conf`), unless that is the server
    /// itself.
    #[schemars(extend("x-default" = "the index pip is configured with, else `\"https://pypi.org/simple\"`"))]
    pub pypi_url: String,
    /// Where files and index pages are cached.
    #[schemars(extend("x-default" = "`$XDG_CACHE_HOME/wheelgate`, else `~/.cache/wheelgate`"))]
    pub cache_dir: PathBuf,
    /// Serve only what is cached; never contact an upstream.
    pub offline: bool,
    /// Whether `wheelgate serve` reads one page of each source at start and prints what it got
    /// (default `true`), so a source whose pages cannot be read is named before any installer
    /// meets it. `false` for a server that must ask nothing before its first client (a
    /// benchmark's cold page, a test counting upstream requests).
    pub read_sources_at_start: bool,
    /// Seconds an index page is fresh; an older one is revalidated before it is answered
    /// (waiting at most `[limits] revalidate_wait_ms`).
    pub index_ttl_secs: u64,
    /// Size limit of the file cache in bytes; least recently used files are evicted past it.
    pub cache_max_bytes: u64,
    /// The machine `/simple/` resolves for; the host's own (probed) when absent. A table in the
    /// JSON model's shape (`wheelgate detect --json`), e.g. `{ platform = "linux-x86_64", nvidia
    /// = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }`.
    #[schemars(with = "Option<serde_json::Value>", extend("x-type" = "table (a machine)", "x-default" = "the host's own, probed at start"))]
    pub machine: Option<Machine>,
    /// Selection policy for every route: `pinned = "cu128"` serves exactly that backend (a
    /// version not built for it gets no files); `prefer = ["cu128"]` ranks those backends first
    /// within their family when usable, in that order.
    #[schemars(with = "serde_json::Value", extend("x-type" = "table: `pinned`, `prefer`", "x-default" = "nothing pinned or preferred"))]
    pub policy: Policy,
    /// `[object_store]`: committed files shared through an S3-compatible bucket (none: local
    /// disk only).
    pub object_store: Option<ObjectStoreConfig>,
    /// Seconds a shutdown waits for responses in flight before closing them.
    pub shutdown_grace_secs: u64,
    /// `[auth]`: client authentication; off unless credentials are configured.
    pub auth: AuthConfig,
    /// `[limits]`: timeouts, size limits, the connection cap and the upstream breakers.
    pub limits: LimitsConfig,
    /// `[upstreams.pytorch]`, `[upstreams.pypi]`: credentials, headers and CA bundles of
    /// private upstreams (none by default).
    #[serde(skip_serializing_if = "UpstreamsConfig::is_empty")]
    pub upstreams: UpstreamsConfig,
    /// `[[sources]]`: more indexes, each owning the names it lists (`config/sources.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceConfig>,
    /// `[catalog]`: the built-in build facts, or with an operator's overlay.
    #[serde(skip_serializing_if = "CatalogConfig::is_empty")]
    pub catalog: CatalogConfig,
    /// Peers (load balancers) whose `X-Forwarded-For` / `Forwarded` headers name the client;
    /// from anyone else those headers are ignored.
    pub trusted_proxies: Vec<String>,
    /// `[[networks]]`: client networks mapped to machines; the first matching rule decides
    /// what `/simple/` resolves for (`config/networks.rs`).
    pub networks: Vec<NetworkRule>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            pytorch_url: DEFAULT_PYTORCH_URL.to_string(),
            pytorch_index: true,
            pypi_url: DEFAULT_PYPI_URL.to_string(),
            cache_dir: default_cache_dir(),
            offline: false,
            read_sources_at_start: true,
            index_ttl_secs: DEFAULT_INDEX_TTL_SECS,
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            machine: None,
            policy: Policy::default(),
            object_store: None,
            shutdown_grace_secs: DEFAULT_SHUTDOWN_GRACE_SECS,
            auth: AuthConfig::default(),
            limits: LimitsConfig::default(),
            upstreams: UpstreamsConfig::default(),
            sources: Vec::new(),
            catalog: CatalogConfig::default(),
            trusted_proxies: Vec::new(),
            networks: Vec::new(),
        }
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the configuration file `{path}` is invalid: {message}")]
    Parse { path: PathBuf, message: String },
}

impl ServeConfig {
    /// Reads a TOML configuration file over the defaults.
    pub fn from_file(path: &Path) -> Result<ServeConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config: ServeConfig = toml::from_str(&text).map_err(|err| ConfigError::Parse {
            path: path.to_path_buf(),
            message: parse_message(&text, &err),
        })?;
        // A relative overlay sits beside the file that names it.
        if let Some(dir) = path.parent() {
            config.catalog.resolved_against(dir);
        }
        Ok(config)
    }

    /// The PyTorch upstream without a trailing slash.
    pub fn pytorch_root(&self) -> &str {
        self.pytorch_url.trim_end_matches('/')
    }

    /// The PyTorch index's URL as configured, `None` with `pytorch_index = false`.
    pub fn pytorch_index_url(&self) -> Option<&str> {
        self.pytorch_index.then_some(self.pytorch_url.as_str())
    }

    /// The general upstream without a trailing slash.
    pub fn pypi_root(&self) -> &str {
        self.pypi_url.trim_end_matches('/')
    }
}

/// The message of a parse error: toml's own (with the offending line), except for a refused
/// plain-text secret, whose line holds the secret: then only its line number and the refusal.
fn parse_message(text: &str, err: &toml::de::Error) -> String {
    if !secrets::is_plain_text_refusal(err.message()) {
        return err.to_string();
    }
    let line = err
        .span()
        .and_then(|span| text.get(..span.start))
        .map_or(0, |before| before.matches('\n').count() + 1);
    format!("line {line}: {}", err.message())
}

/// `$XDG_CACHE_HOME/wheelgate`, else `~/.cache/wheelgate`, else `./wheelgate-cache`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("wheelgate");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home).join(".cache").join("wheelgate");
    }
    PathBuf::from("wheelgate-cache")
}

/// The index pip is configured with on this machine (`PIP_INDEX_URL`, then `pip config`'s
/// `global.index-url` files), else PyPI's.
pub fn pip_configured_index() -> String {
    if let Ok(url) = std::env::var("PIP_INDEX_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_string();
    }
    let mut files = Vec::new();
    if let Some(path) = std::env::var_os("PIP_CONFIG_FILE") {
        files.push(PathBuf::from(path));
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        files.push(home.join(".config/pip/pip.conf"));
        files.push(home.join(".pip/pip.conf"));
    }
    files.push(PathBuf::from("/etc/pip.conf"));
    for file in files {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(url) = index_url_from_pip_conf(&text)
        {
            return url;
        }
    }
    DEFAULT_PYPI_URL.to_string()
}

// A real example of this parser's input, a pip.conf:
// [global]
// index-url = https://mirror.example/simple
fn index_url_from_pip_conf(text: &str) -> Option<String> {
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_ascii_lowercase();
        } else if matches!(section.as_str(), "global" | "install")
            && let Some((key, value)) = line.split_once('=')
            && matches!(key.trim(), "index-url" | "index_url")
            && !value.trim().is_empty()
        {
            return Some(value.trim().to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_config_in_deploy_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/wheelgate.toml");
        let config = ServeConfig::from_file(&path).unwrap();
        assert_eq!(config.listen.to_string(), "0.0.0.0:3141");
        assert_eq!(config.policy.prefer[0].to_string(), "cu128");
        let machine = config.machine.unwrap();
        assert_eq!(
            machine.nvidia.unwrap().gpus[0]
                .compute_capability
                .unwrap()
                .to_string(),
            "9.0"
        );
    }

    #[test]
    fn reads_pip_conf_index_url() {
        assert_eq!(
            index_url_from_pip_conf("[global]\nindex-url = https://m.example/simple\n").as_deref(),
            Some("https://m.example/simple")
        );
        assert_eq!(index_url_from_pip_conf("[other]\nindex-url = x\n"), None);
    }

    #[test]
    fn config_file_layers_over_defaults_and_rejects_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(
            &path,
            "listen = \"0.0.0.0:8080\"\noffline = true\n[policy]\npinned = \"cu128\"\n",
        )
        .unwrap();
        let config = ServeConfig::from_file(&path).unwrap();
        assert_eq!(config.listen.to_string(), "0.0.0.0:8080");
        assert!(config.offline);
        assert_eq!(config.pytorch_url, DEFAULT_PYTORCH_URL);
        assert_eq!(config.policy.pinned.unwrap().to_string(), "cu128");
        std::fs::write(&path, "lisen = \"x\"\n").unwrap();
        let err = ServeConfig::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("lisen"), "{err}");
    }

    #[test]
    fn pytorch_index_false_leaves_no_pytorch_source_whatever_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        assert!(ServeConfig::default().pytorch_index);
        assert_eq!(
            ServeConfig::default().pytorch_index_url(),
            Some(DEFAULT_PYTORCH_URL)
        );
        // The one setting wins over a URL and access settings layered elsewhere: they stay
        // unused, and `serve` and `config show` say there is no PyTorch index (the sources it
        // makes: `sources::build`'s tests).
        std::fs::write(
            &path,
            "pytorch_url = \"https://artifactory.example/whl\"\npytorch_index = false\n\
             [upstreams.pytorch]\nca_bundle = \"/etc/ssl/company.pem\"\n",
        )
        .unwrap();
        let config = ServeConfig::from_file(&path).unwrap();
        assert!(!config.pytorch_index);
        assert_eq!(config.pytorch_index_url(), None);
        std::fs::write(&path, "pytorch_index = \"no\"\n").unwrap();
        let err = ServeConfig::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("pytorch_index"), "{err}");
    }

    #[test]
    fn a_refused_plain_text_secret_is_not_repeated_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(
            &path,
            "offline = false\n[upstreams.pypi]\ntoken = \"hunter2-secret\"\n",
        )
        .unwrap();
        let err = ServeConfig::from_file(&path).unwrap_err().to_string();
        assert!(!err.contains("hunter2-secret"), "{err}");
        assert!(err.contains("line 3") && err.contains("{ env = "), "{err}");
    }
}
