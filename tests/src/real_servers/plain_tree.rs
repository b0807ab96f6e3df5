//! A plain static PEP 503 tree, as a company writes one by hand or with a script and puts on any
//! web server: `simple/index.html` lists the projects, `simple/<project>/index.html` links
//! `../../packages/<file>#sha256=...` with `data-yanked` on the yanked file. It is the upstream
//! proxpi caches and the index simple-repository-generator mirrors, served by
//! [`serve_directory`].

use std::fmt::Write as _;
use std::path::Path;

use tokio::process::Command;

use super::process::{ServerProcess, command, free_port};
use super::release::{Release, YANK_REASON, YANKED};
use crate::installers::Tools;

/// Writes `release` as a tree under `root` (`root/simple/`, `root/packages/`).
pub fn write(release: &Release, root: &Path) {
    let packages = root.join("packages");
    std::fs::create_dir_all(&packages).expect("packages directory");
    let mut index = String::from("<!DOCTYPE html>\n<html><body>\n");
    for project in release.projects() {
        let _ = writeln!(index, "<a href=\"{project}/\">{project}</a><br>");
        let mut page = format!(
            "<!DOCTYPE html>\n<html><head><title>Links for {project}</title></head><body>\n"
        );
        for dist in release.dists.iter().filter(|d| d.project == project) {
            std::fs::write(packages.join(&dist.filename), &dist.bytes).expect("write a package");
            let yanked = if dist.filename == YANKED {
                format!(" data-yanked=\"{YANK_REASON}\"")
            } else {
                String::new()
            };
            let _ = writeln!(
                page,
                "<a href=\"../../packages/{file}#sha256={sha256}\"{yanked}>{file}</a><br>",
                file = dist.filename,
                sha256 = dist.sha256,
            );
        }
        page.push_str("</body></html>\n");
        let dir = root.join("simple").join(project);
        std::fs::create_dir_all(&dir).expect("project directory");
        std::fs::write(dir.join("index.html"), page).expect("write a project page");
    }
    index.push_str("</body></html>\n");
    std::fs::write(root.join("simple/index.html"), index).expect("write the project list");
}

/// `root` served by Python's own `http.server` (the test venv's interpreter, standard library
/// only) on a free loopback port; returns the server and its base URL. A directory URL without
/// its slash answers 301 to the one with it, as most static web servers do.
pub async fn serve_directory(root: &Path, home: &Path, name: &str) -> (ServerProcess, String) {
    let port = free_port();
    let mut serve: Command = command(&Tools::get().python, home);
    serve
        .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
        .arg(root)
        .arg(port.to_string());
    let base = format!("http://127.0.0.1:{port}");
    let server = ServerProcess::spawn(name, serve, home, &format!("{base}/simple/")).await;
    (server, base)
}
