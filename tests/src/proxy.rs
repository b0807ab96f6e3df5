//! wheelgate itself, started in-process on `127.0.0.1:0` against the fake upstreams, with its
//! own cache directory; stops when dropped.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use wheelgate_config::ServeConfig;
use wheelgate_resolver::Machine;

use crate::upstream::Upstreams;

/// A running proxy.
pub struct Proxy {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
    _cache: tempfile::TempDir,
}

impl Proxy {
    /// A proxy whose default machine (`/simple/`) is `machine`.
    pub async fn start(upstreams: &Upstreams, machine: &Machine) -> Proxy {
        let machine = machine.clone();
        Proxy::start_with(upstreams, move |config| config.machine = Some(machine)).await
    }

    /// A proxy with the fakes as upstreams, a fresh cache directory, and whatever `configure`
    /// changes.
    pub async fn start_with(
        upstreams: &Upstreams,
        configure: impl FnOnce(&mut ServeConfig),
    ) -> Proxy {
        let cache = tempfile::tempdir().expect("cache directory");
        let mut config = ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            pytorch_url: upstreams.pytorch_url(),
            pypi_url: upstreams.pypi_url(),
            cache_dir: cache.path().join("cache"),
            offline: false,
            ..ServeConfig::default()
        };
        configure(&mut config);
        let listen = config.listen;
        let state = wheelgate_server::serve::build_state(config)
            .await
            .expect("wheelgate state");
        // `127.0.0.1:0` unless `configure` chose a port (a test that must know the address
        // before the server starts).
        let listener = TcpListener::bind(listen)
            .await
            .expect("bind the listen address");
        let addr = listener.local_addr().expect("local address");
        // The server's own accept loop, with its limits, as `wheelgate serve` runs it.
        let task = tokio::spawn(async move {
            wheelgate_server::serve::serve_until(listener, state, std::future::pending())
                .await
                .expect("wheelgate serve");
        });
        Proxy {
            addr,
            task,
            _cache: cache,
        }
    }

    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The default machine's index: `http://127.0.0.1:<port>/simple/`.
    pub fn simple_url(&self) -> String {
        format!("{}/simple/", self.base())
    }

    /// A client machine's index: `/m/<token>/simple/`.
    pub fn machine_url(&self, machine: &Machine) -> String {
        format!(
            "{}/m/{}/simple/",
            self.base(),
            wheelgate_resolver::token::encode(machine)
        )
    }

    /// A pinned backend's index: `/b/<backend>/simple/`.
    pub fn backend_url(&self, backend: &str) -> String {
        format!("{}/b/{backend}/simple/", self.base())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A `[[sources]]` entry without access settings: `name`, its `url` (an index root or a
/// template), the `projects` it owns.
pub fn source(name: &str, url: &str, projects: &[&str]) -> wheelgate_config::SourceConfig {
    wheelgate_config::SourceConfig {
        name: name.to_string(),
        url: url.to_string(),
        projects: projects.iter().map(ToString::to_string).collect(),
        token: None,
        basic: None,
        headers: std::collections::BTreeMap::new(),
        ca_bundle: None,
        extra_origins: Vec::new(),
    }
}
