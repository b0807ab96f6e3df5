//! Which source this binary was built from (`build.rs`): shown by `wheelgate --version`, the
//! status page and `/metrics` (`wheelgate_build_info`), so an operator can tell which build a
//! server runs.

/// The package version (`0.1.0`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit, 12 hex digits (`unknown` when built outside a git checkout).
pub const COMMIT: &str = env!("WHEELGATE_GIT_COMMIT");
/// The build date, `YYYY-MM-DD` (UTC; `SOURCE_DATE_EPOCH` when set).
pub const BUILD_DATE: &str = env!("WHEELGATE_BUILD_DATE");

/// `0.1.0 (commit 0123456789ab, built 2026-11-25)`: the `--version` line after the name.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("WHEELGATE_GIT_COMMIT"),
    ", built ",
    env!("WHEELGATE_BUILD_DATE"),
    ")"
);

/// The same, as `/metrics` labels `wheelgate_build_info`.
pub const LABELS: wheelgate_index::metrics::BuildLabels = wheelgate_index::metrics::BuildLabels {
    version: VERSION,
    commit: COMMIT,
    build_date: BUILD_DATE,
};
