//! CERN's simple-repository-server in front of a local directory (`<dir>/<project>/<files>`):
//! `simple-repository-server DIR`. Its pages link `../../resources/<project>/<file>` with no
//! hash at all (it hashes nothing it serves from disk) and `data-core-metadata="true"`, the
//! metadata extracted from the wheel on request; it serves PEP 691 JSON too. Its command line
//! has no yanking (only its Python components do).

use std::path::Path;

use super::process::{ServerProcess, command, free_port};
use super::release::Release;
use super::venv_program;

/// Starts simple-repository-server on `release` (written under `dir`); returns it and its
/// index URL.
pub async fn start(release: &Release, dir: &Path) -> (ServerProcess, String) {
    let repository = dir.join("repository");
    release.write_per_project(&repository);
    let port = free_port();
    let mut serve = command(
        &venv_program("simple-repository-server", "simple-repository-server"),
        dir,
    );
    serve
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .arg(&repository);
    let index = format!("http://127.0.0.1:{port}/simple/");
    let server = ServerProcess::spawn("simple-repository-server", serve, dir, &index).await;
    (server, index)
}
