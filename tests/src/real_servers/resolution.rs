//! What pip and uv resolve and install from one index URL, in the terms the tests compare: each
//! resolved file's name, version, filename and sha256 (pip's `--report`, uv's PEP 751 lock from
//! `uv pip compile`), the URLs they fetched, and every installed file's bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::installers::{self, Installer, Tools, isolated, run};
use crate::wheels::sha256_hex;

use super::records::{parse_pip_report, parse_pylock};
use super::release::Resolved;

/// One installer's run against one index URL.
#[derive(Debug)]
pub struct Installation {
    /// The files it resolved.
    pub resolved: BTreeSet<Resolved>,
    /// The URLs of those files as the index gave them.
    pub urls: Vec<String>,
    /// What was installed, normalized name → version (from the `.dist-info` directories).
    pub installed: BTreeMap<String, String>,
    /// Every installed file (`acme_utils/__init__.py`), relative path → sha256; bytecode aside.
    pub tree: BTreeMap<String, String>,
    /// The commands and their output, for failure messages.
    pub output: String,
}

/// Resolves and installs `requirements` with `installer` from `index_url` (and nothing else, no
/// cache) into a fresh `--target` directory; a failed command is an error holding its output.
pub async fn install(
    installer: Installer,
    index_url: &str,
    requirements: &[&str],
) -> Result<Installation, String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let target = dir.path().join("target");
    let (resolved, urls, output) = match installer {
        Installer::Pip => with_pip(index_url, requirements, dir.path(), Some(&target)).await?,
        Installer::Uv => with_uv(index_url, requirements, dir.path(), Some(&target)).await?,
    };
    Ok(Installation {
        resolved,
        urls,
        installed: installers::installed(&target),
        tree: tree(&target),
        output,
    })
}

/// Only resolves `requirements` (`pip install --dry-run`, `uv pip compile`): the files, and the
/// output for failure messages.
pub async fn resolve(
    installer: Installer,
    index_url: &str,
    requirements: &[&str],
) -> Result<(BTreeSet<Resolved>, String), String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (resolved, _, output) = match installer {
        Installer::Pip => with_pip(index_url, requirements, dir.path(), None).await?,
        Installer::Uv => with_uv(index_url, requirements, dir.path(), None).await?,
    };
    Ok((resolved, output))
}

/// What one installer resolved, the URLs it fetched, and its output.
type Run = (BTreeSet<Resolved>, Vec<String>, String);

/// `pip install --report` into `target` (without one, `--dry-run`), and `pip download` where
/// the report lacks a hash.
async fn with_pip(
    index_url: &str,
    requirements: &[&str],
    dir: &Path,
    target: Option<&Path>,
) -> Result<Run, String> {
    let python = &Tools::get().python;
    let report = dir.join("report.json");
    let mut install = isolated(python);
    install
        .args(["-m", "pip", "install", "--no-cache-dir", "--no-compile"])
        .args(["--progress-bar", "off", "--index-url", index_url])
        .arg("--report")
        .arg(&report);
    match target {
        Some(target) => install.arg("--target").arg(target),
        None => install.args(["--dry-run", "--ignore-installed"]),
    };
    install.args(requirements);
    let installing = run(install).await;
    if !installing.success {
        return Err(installing.to_string());
    }
    let text = std::fs::read_to_string(&report).expect("pip's report");
    let (resolved, urls) = parse_pip_report(&text);
    let output = format!("{installing}\n--- report\n{text}");
    if resolved.iter().all(|file| file.sha256.is_some()) {
        // Each checked by pip against the bytes it downloaded.
        return Ok((resolved, urls, output));
    }
    // The index gave no hash, so pip's report has none: the bytes come from `pip download`, the
    // same resolution again, kept.
    let downloads = dir.join("downloads");
    let mut download = isolated(python);
    download
        .args(["-m", "pip", "download", "--no-cache-dir"])
        .args(["--progress-bar", "off", "--index-url", index_url])
        .arg("--dest")
        .arg(&downloads)
        .args(requirements);
    let downloading = run(download).await;
    let output = format!("{output}\n{downloading}");
    if !downloading.success {
        return Err(output);
    }
    let resolved = with_downloaded_hashes(resolved, &downloads)
        .map_err(|error| format!("{error}\n{output}"))?;
    Ok((resolved, urls, output))
}

/// `uv pip compile` into a PEP 751 lock (uv hashes what the index gave no hash for), then `uv
/// pip install` into `target`, if any.
async fn with_uv(
    index_url: &str,
    requirements: &[&str],
    dir: &Path,
    target: Option<&Path>,
) -> Result<Run, String> {
    let tools = Tools::get();
    let input = dir.join("requirements.in");
    let lock = dir.join("pylock.toml");
    std::fs::write(&input, requirements.join("\n")).expect("requirements file");
    let mut compile = isolated(&tools.uv);
    compile
        .args([
            "pip",
            "compile",
            "--no-cache",
            "--no-config",
            "--no-progress",
        ])
        .args(["--quiet", "--index-url", index_url, "--python"])
        .arg(&tools.python)
        .arg(&input)
        .arg("--output-file")
        .arg(&lock);
    let compiling = run(compile).await;
    if !compiling.success {
        return Err(compiling.to_string());
    }
    let text = std::fs::read_to_string(&lock).expect("uv's lock");
    let (resolved, urls) = parse_pylock(&text);
    let Some(target) = target else {
        return Ok((
            resolved,
            urls,
            format!("{compiling}\n--- pylock.toml\n{text}"),
        ));
    };
    let mut install = isolated(&tools.uv);
    install
        .args([
            "pip",
            "install",
            "--no-cache",
            "--no-config",
            "--no-progress",
        ])
        .args(["--index-url", index_url, "--python"])
        .arg(&tools.python)
        .arg("--target")
        .arg(target)
        .args(requirements);
    let installing = run(install).await;
    let output = format!("{compiling}\n--- pylock.toml\n{text}\n{installing}");
    if !installing.success {
        return Err(output);
    }
    Ok((resolved, urls, output))
}

/// `resolved` with each sha256 that of the file pip downloaded into `dir`, which must be the
/// one pip's report gave where it gave one.
fn with_downloaded_hashes(
    resolved: BTreeSet<Resolved>,
    dir: &Path,
) -> Result<BTreeSet<Resolved>, String> {
    resolved
        .into_iter()
        .map(|file| {
            let bytes = std::fs::read(dir.join(&file.filename))
                .map_err(|err| format!("pip download did not leave `{}`: {err}", file.filename))?;
            let sha256 = sha256_hex(&bytes);
            match &file.sha256 {
                Some(reported) if *reported != sha256 => Err(format!(
                    "`{}`: pip's report says sha256 {reported}, pip download got {sha256}",
                    file.filename
                )),
                _ => Ok(Resolved {
                    sha256: Some(sha256),
                    ..file
                }),
            }
        })
        .collect()
}

/// Every file under `root` but bytecode, relative path → sha256.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if entry.file_name() != "__pycache__" {
                    stack.push(path);
                }
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            let bytes = std::fs::read(&path).expect("an installed file");
            files.insert(relative, sha256_hex(&bytes));
        }
    }
    files
}
