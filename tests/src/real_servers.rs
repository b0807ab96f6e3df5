//! Real package index servers, the software companies run, as upstreams of wheelgate: each
//! installed by `scripts/real-servers-setup` into its own venv (`target/real-servers/<name>`, or
//! under `WHEELGATE_REAL_SERVERS`), started per test on a free loopback port with its data in a
//! temporary directory, publishing the same [`release::Release`], and killed when dropped.
//! None reaches past 127.0.0.1: devpi has no mirror index, pypiserver no fallback to pypi.org,
//! proxpi's upstream is a local tree.
//!
//! - [`pypiserver`], [`devpi`], [`simple_repository`] (simple-repository-server), [`proxpi`],
//!   [`static_tree`] (simple-repository-generator's output on `http.server`): one server each;
//! - [`plain_tree`]: a hand-written PEP 503 tree, the upstream of proxpi and the generator;
//! - [`release`]: what they publish and what installing from them must give;
//! - [`resolution`]: what pip and uv resolved and installed, in comparable terms, read by
//!   [`records`] from their own records of it;
//! - [`process`]: a server process, its log and readiness.

pub mod devpi;
pub mod plain_tree;
pub mod process;
pub mod proxpi;
pub mod pypiserver;
pub mod records;
pub mod release;
pub mod resolution;
pub mod simple_repository;
pub mod static_tree;

use std::fmt;
use std::path::{Path, PathBuf};

use process::ServerProcess;
use release::Release;

/// Environment variable naming the directory of the servers' venvs (default:
/// `<workspace>/target/real-servers`).
pub const SERVERS_ENV: &str = "WHEELGATE_REAL_SERVERS";

/// One of the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Pypiserver,
    Devpi,
    SimpleRepositoryServer,
    Proxpi,
    StaticTree,
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Server::Pypiserver => "pypiserver",
            Server::Devpi => "devpi-server",
            Server::SimpleRepositoryServer => "simple-repository-server",
            Server::Proxpi => "proxpi",
            Server::StaticTree => "simple-repository-generator's tree",
        })
    }
}

/// A started server.
pub struct Running {
    pub server: Server,
    /// The index URL a client is given (`.../simple/`, `.../acme/dev/+simple/`, `.../index/`).
    pub index_url: String,
    /// Whether it serves [`release::YANKED`] yanked.
    pub yanks: bool,
    processes: Vec<ServerProcess>,
    // Declared last: dropped after the processes that use it.
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts the server publishing `release`; panics, with its log, if it does not come up.
    pub async fn start(self, release: &Release) -> Running {
        let dir = tempfile::tempdir().expect("a server directory");
        let path = dir.path();
        let (processes, index_url, yanks) = match self {
            Server::Pypiserver => {
                let (server, url) = pypiserver::start(release, path).await;
                (vec![server], url, false)
            }
            Server::Devpi => {
                let (server, url) = devpi::start(release, path).await;
                (vec![server], url, false)
            }
            Server::SimpleRepositoryServer => {
                let (server, url) = simple_repository::start(release, path).await;
                (vec![server], url, false)
            }
            Server::Proxpi => {
                let (servers, url) = proxpi::start(release, path).await;
                (servers, url, true)
            }
            Server::StaticTree => {
                let (server, url) = static_tree::start(release, path).await;
                (vec![server], url, true)
            }
        };
        Running {
            server: self,
            index_url,
            yanks,
            processes,
            _dir: dir,
        }
    }
}

impl Running {
    /// What the server's processes logged, for a failure message.
    pub fn logs(&self) -> String {
        self.processes
            .iter()
            .map(ServerProcess::log)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `program` in the server venv `venv`, or a panic that says how to install it: these tests
/// never pass silently without their servers.
pub fn venv_program(venv: &str, program: &str) -> PathBuf {
    let root = std::env::var_os(SERVERS_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/real-servers"),
            PathBuf::from,
        );
    let path = root.join(venv).join("bin").join(program);
    assert!(
        path.is_file(),
        "the real index servers are not installed: `{}` does not exist: run `scripts/real-servers-setup` (or set {SERVERS_ENV} to the directory it fills)",
        path.display()
    );
    path
}
