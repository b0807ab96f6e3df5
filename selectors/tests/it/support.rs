//! Helpers: fixture roots, temporary trees, contexts that never touch the host.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use wheelgate_selectors::{Env, ProbeContext};

/// The directory of fixture machines.
pub fn machines_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/machines")
}

/// A context on `root` with exactly `env`; GPU libraries are never loaded for a sysroot other
/// than `/`, and the command timeout is short.
pub fn context(root: &Path, env: Env) -> ProbeContext {
    let mut ctx = ProbeContext::new(root, env).expect("valid overrides");
    assert!(
        ctx.nvidia_libraries.is_empty(),
        "fixtures must not load host libraries"
    );
    ctx.command_timeout = Duration::from_secs(3);
    ctx
}

/// A fresh empty directory under Cargo's per-test temporary directory.
pub fn temp_tree(name: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("selectors-{}-{name}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a file under `root`, creating its directories.
pub fn write(root: &Path, path: &str, content: impl AsRef<[u8]>) {
    let full = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(full.parent().unwrap()).unwrap();
    fs::write(full, content).unwrap();
}

/// Writes an executable script under `root`.
#[cfg(unix)]
pub fn write_script(root: &Path, path: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(root, path, format!("#!/bin/sh\n{body}"));
    let full = root.join(path.trim_start_matches('/'));
    fs::set_permissions(full, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Copies a fixture's root into a temporary tree, to damage it.
pub fn copy_fixture(name: &str) -> PathBuf {
    let target = temp_tree(name);
    copy_dir(&machines_dir().join(name).join("root"), &target);
    target
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}
