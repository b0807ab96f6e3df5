//! A static PEP 503 tree as simple-repository-generator writes it (`simple-repository-generator
//! --copy -o OUT SOURCE`), mirrored from a [plain tree](super::plain_tree) with a yanked file and
//! served by `http.server`, as a company publishes a snapshot on any web server. Its pages are
//! whole HTML documents (a table per file, a stylesheet, a script whose comment holds a bare
//! `<a href>`); links `../../packages/<project>/<file>#sha256=...` with `data-core-metadata` and
//! the `.metadata` files beside them; `data-yanked` kept.

use std::path::Path;

use super::plain_tree::{self, serve_directory};
use super::process::{ServerProcess, command, step};
use super::release::Release;
use super::venv_program;

/// Writes the tree for `release` under `dir` and serves it; returns the server and the index
/// URL.
pub async fn start(release: &Release, dir: &Path) -> (ServerProcess, String) {
    let source = dir.join("source");
    plain_tree::write(release, &source);
    let generated = dir.join("generated");
    {
        // The generator reads yanks only from an index over HTTP, not from a directory.
        let (_source_server, source_base) =
            serve_directory(&source, dir, "source http.server").await;
        let mut generate = command(
            &venv_program("simple-repository-generator", "simple-repository-generator"),
            dir,
        );
        generate
            .args(["--copy", "--output"])
            .arg(&generated)
            .arg(format!("{source_base}/simple/"));
        step("simple-repository-generator", generate).await;
    }
    let (server, base) = serve_directory(&generated, dir, "http.server").await;
    (server, format!("{base}/simple/"))
}
