//! pypiserver serving a directory of packages, as its README starts it: `pypi-server run -p
//! PORT DIR`. Its pages link `/packages/<file>#sha256=...`; a name that is not normalized
//! answers 301 to the one that is. It has no yanking.

use std::path::Path;

use super::process::{ServerProcess, command, free_port};
use super::release::Release;
use super::venv_program;

/// Starts pypiserver on `release` (written under `dir`); returns it and its index URL.
pub async fn start(release: &Release, dir: &Path) -> (ServerProcess, String) {
    let packages = dir.join("packages");
    release.write_flat(&packages);
    let port = free_port();
    let mut serve = command(&venv_program("pypiserver", "pypi-server"), dir);
    serve
        .args(["run", "--host", "127.0.0.1", "--port", &port.to_string()])
        // Without it a project the directory lacks answers 303 to pypi.org.
        .arg("--disable-fallback")
        .arg(&packages);
    let index = format!("http://127.0.0.1:{port}/simple/");
    let server = ServerProcess::spawn("pypiserver", serve, dir, &index).await;
    (server, index)
}
