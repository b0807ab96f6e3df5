//! A real server as a child process: started isolated from the host's installer configuration
//! with its own `HOME`, its output kept in a log file for failure messages, ready once it answers
//! HTTP, killed when dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::installers::{isolated, run};

/// How long a server may take to answer its first request. devpi-server and the Python web
/// frameworks import for a second or two alone; CI runs tests side by side on two cores.
const START_TIMEOUT: Duration = Duration::from_mins(1);

/// A running server; killed when dropped.
pub struct ServerProcess {
    name: String,
    log: PathBuf,
    /// Killed when dropped: `isolated` sets `kill_on_drop`.
    child: Child,
}

/// `program` run as the tests run every tool: no `PIP_*`, `UV_*`, proxy or `PYTHON*` variables
/// of the host, `HOME` in `home` (devpi-client and pip keep state there).
pub fn command(program: &Path, home: &Path) -> Command {
    let mut command = isolated(program);
    command.env("HOME", home).current_dir(home);
    command
}

/// Runs one setup step (`devpi-init`, `devpi upload`, the generator) to completion; panics with
/// its output unless it succeeded.
pub async fn step(what: &str, command: Command) {
    let outcome = run(command).await;
    assert!(outcome.success, "{what} failed: {outcome}");
}

impl ServerProcess {
    /// Spawns `command`, its stdout and stderr into `<dir>/<name>.log`, and waits until
    /// `ready_url` answers with a success.
    pub async fn spawn(name: &str, mut command: Command, dir: &Path, ready_url: &str) -> Self {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("a server log file");
        command
            .stdout(Stdio::from(file.try_clone().expect("log file handle")))
            .stderr(Stdio::from(file));
        let child = command
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {name}: {err}"));
        let mut server = ServerProcess {
            name: name.to_string(),
            log,
            child,
        };
        server.wait_ready(ready_url).await;
        server
    }

    async fn wait_ready(&mut self, url: &str) {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("HTTP client");
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited ({status}) before it served:\n{}",
                    self.name,
                    self.log()
                );
            }
            if let Ok(response) = client.get(url).send().await
                && response.status().is_success()
            {
                return;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "{} did not answer `{url}` within {START_TIMEOUT:?}:\n{}",
                self.name,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the server wrote so far (its last 8 KB), for a failure message.
    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(8192);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        format!(
            "--- {} log ({})\n{}",
            self.name,
            self.log.display(),
            &text[start..]
        )
    }
}

/// A loopback port free now, for a server that takes a port number rather than a listener.
/// Below Linux's ephemeral range (32768 and up), where the kernel hands out the ports of
/// outgoing connections and of `127.0.0.1:0`, from a random start so tests running side by side
/// rarely probe the same one.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const LOW: u16 = 20_000;
    const SPAN: u16 = 12_000;
    let start = RandomState::new().hash_one(std::process::id()) % u64::from(SPAN);
    let start = u16::try_from(start).expect("below SPAN");
    (0..SPAN)
        .map(|step| LOW + (start + step) % SPAN)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}
