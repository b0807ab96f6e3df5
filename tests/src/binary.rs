//! The `wheelgate` binary, for tests that run the command line as users do.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/debug/wheelgate` beside the running test binary (built by `cargo test --workspace`
/// and `cargo nextest run --workspace`; built here when absent).
pub fn path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let binary = dir.join(format!("wheelgate{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "wheelgate", "--bin", "wheelgate"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cannot build the wheelgate binary");
    }
    binary
}
