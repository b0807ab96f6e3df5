//! devpi-server with a user index, filled the way its users fill one: `devpi-init
//! --no-root-pypi` (no mirror of pypi.org, so nothing is ever fetched from the internet),
//! `devpi-server`, then devpi-client's `use`, `user -c`, `login`, `index -c` and `upload`.
//! Pages are served at `/<user>/<index>/+simple/<project>/`, a name that is not normalized
//! answers 302 to the one that is, and links are relative to the page:
//! `../../+f/<hash path>/<file>#sha256=...`; its JSON pages are `api-version` 1.0 without
//! `versions`. devpi yanks only on mirror indexes ("PEP 592 isn't supported for private stages
//! yet", devpi-server 6.20's `model.py`), so nothing is yanked here.

use std::path::Path;

use tokio::process::Command;

use super::process::{ServerProcess, command, free_port, step};
use super::release::Release;
use super::venv_program;

const USER: &str = "acme";
const PASSWORD: &str = "devpi-test-password";
const INDEX: &str = "dev";

/// Starts devpi-server, creates the user and index and uploads `release` (written under `dir`);
/// returns the server and the index's URL.
pub async fn start(release: &Release, dir: &Path) -> (ServerProcess, String) {
    let packages = dir.join("packages");
    release.write_flat(&packages);
    let serverdir = dir.join("server");
    let mut init = command(&venv_program("devpi", "devpi-init"), dir);
    init.arg("--serverdir")
        .arg(&serverdir)
        .arg("--no-root-pypi");
    step("devpi-init", init).await;

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut serve = command(&venv_program("devpi", "devpi-server"), dir);
    serve
        .arg("--serverdir")
        .arg(&serverdir)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .arg("--offline-mode")
        // The key that signs login tokens is derived from the server's secret with argon2 at
        // start: by default 16 passes over 512 MiB, 13 s on a CI core. The same hidden options
        // devpi's own tests lower; nothing on the index pages depends on them.
        .args(["--argon2-memory-cost", "8", "--argon2-time-cost", "1"])
        .args(["--argon2-parallelism", "1"]);
    let server = ServerProcess::spawn("devpi-server", serve, dir, &format!("{base}/+api")).await;

    let clientdir = dir.join("client");
    let devpi = |args: &[&str]| -> Command {
        let mut client = command(&venv_program("devpi", "devpi"), dir);
        client.arg("--clientdir").arg(&clientdir).args(args);
        client
    };
    step("devpi use", devpi(&["use", &base])).await;
    let password = format!("password={PASSWORD}");
    step("devpi user -c", devpi(&["user", "-c", USER, &password])).await;
    step(
        "devpi login",
        devpi(&["login", USER, "--password", PASSWORD]),
    )
    .await;
    step("devpi index -c", devpi(&["index", "-c", INDEX, "bases="])).await;
    let index = format!("{USER}/{INDEX}");
    let mut upload = devpi(&["upload", "--index", &index, "--from-dir"]);
    upload.arg(&packages);
    step("devpi upload", upload).await;
    (server, format!("{base}/{index}/+simple/"))
}
