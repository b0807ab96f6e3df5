//! proxpi, a caching proxy companies put in front of PyPI, here in front of a
//! [plain tree](super::plain_tree) (with a yanked file) on `http.server`: `flask --app
//! proxpi.server run`, configured by `PROXPI_*` variables as its README says. It serves
//! `/index/<project>/` with links relative to the page (`<file>#sha256=...`), the files from its
//! own cache, and `data-yanked` as the upstream gave it.

use std::path::Path;

use super::plain_tree::{self, serve_directory};
use super::process::{ServerProcess, command, free_port};
use super::release::Release;
use super::venv_program;

/// Starts the upstream and proxpi on `release` (written under `dir`); returns both servers and
/// proxpi's index URL.
pub async fn start(release: &Release, dir: &Path) -> (Vec<ServerProcess>, String) {
    let tree = dir.join("upstream");
    plain_tree::write(release, &tree);
    let (upstream, upstream_base) = serve_directory(&tree, dir, "upstream http.server").await;
    let port = free_port();
    let mut serve = command(&venv_program("proxpi", "python"), dir);
    serve
        .args(["-m", "flask", "--app", "proxpi.server", "run"])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .env("PROXPI_INDEX_URL", format!("{upstream_base}/simple/"))
        .env("PROXPI_CACHE_DIR", dir.join("proxpi-cache"))
        // A file its upstream takes longer than this to send is answered with a redirect to the
        // upstream instead (0.9 s by default): on a loaded CI machine that would make which URL
        // the client gets depend on timing.
        .env("PROXPI_DOWNLOAD_TIMEOUT", "30");
    let index = format!("http://127.0.0.1:{port}/index/");
    let server = ServerProcess::spawn("proxpi", serve, dir, &index).await;
    (vec![upstream, server], index)
}
