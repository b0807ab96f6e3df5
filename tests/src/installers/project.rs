//! The installers that work on a project directory rather than a command line (uv's project
//! commands, Poetry, PDM, pip-tools) and the pips of long-term-support distributions (22.0,
//! 23.0 on Python 3.10), from the venvs `scripts/e2e-tools-setup` creates (`target/e2e-tools`,
//! or `WHEELGATE_E2E_TOOLS`).
//!
//! A [`Project`] is a fresh directory with its own `HOME` and XDG directories (configuration,
//! cache, data, state), so no tool reads the host's settings, credentials or caches, and each
//! command also runs [isolated](super::isolated) from the host's `PIP_*`, `UV_*`, `POETRY_*` and
//! `PDM_*` variables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio::process::Command;
use wheelgate_config::AuthConfig;
use wheelgate_config::auth::BasicUser;

use super::{Outcome, Tools, installed, isolated, run};

/// Environment variable naming the directory of the tools' venvs (default:
/// `<workspace>/target/e2e-tools`).
pub const TOOLS_ENV: &str = "WHEELGATE_E2E_TOOLS";

/// The user and password the tests' `[auth]` accepts ([`auth_config`]).
pub const USER: &str = "ci";
pub const PASSWORD: &str = "s3cret";

/// An `[auth]` section that accepts [`USER`] with [`PASSWORD`] (given as its sha256).
pub fn auth_config() -> AuthConfig {
    AuthConfig {
        basic: vec![BasicUser {
            user: USER.to_string(),
            password: None,
            // `printf %s s3cret | sha256sum`
            password_sha256: Some(
                "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0".to_string(),
            ),
        }],
        bearer: Vec::new(),
        public_metrics: false,
    }
}

/// `http://host/...` with [`USER`] and [`PASSWORD`] put in: `http://ci:s3cret@host/...`.
pub fn with_credentials(url: &str) -> String {
    url.replacen("://", &format!("://{USER}:{PASSWORD}@"), 1)
}

/// One of the tools `scripts/e2e-tools-setup` installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Poetry,
    Pdm,
    PipCompile,
    PipSync,
    /// Python 3.10 with pip 22.0.2 (Ubuntu 22.04).
    Pip22,
    /// Python 3.10 with pip 23.0.1 (Debian 12).
    Pip23,
    /// This machine's Python with pip 26.1.2, the last pip that does not compare a wheel's
    /// `METADATA` with its `.metadata`.
    Pip26_1,
}

impl Tool {
    /// The executable: the tool itself, or for the old pips their venv's interpreter. Panics
    /// with the command that installs it when it is missing: these tests never pass silently
    /// without their tool.
    pub fn path(self) -> PathBuf {
        let root = std::env::var_os(TOOLS_ENV)
            .filter(|v| !v.is_empty())
            .map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/e2e-tools"),
                PathBuf::from,
            );
        let path = root.join(match self {
            Tool::Poetry => "poetry/bin/poetry",
            Tool::Pdm => "pdm/bin/pdm",
            Tool::PipCompile => "pip-tools/bin/pip-compile",
            Tool::PipSync => "pip-tools/bin/pip-sync",
            Tool::Pip22 => "pip-22.0/bin/python",
            Tool::Pip23 => "pip-23.0/bin/python",
            Tool::Pip26_1 => "pip-26.1/bin/python",
        });
        assert!(
            path.is_file(),
            "`{}` does not exist: run `scripts/e2e-tools-setup` (or set {TOOLS_ENV} to where it installed the tools)",
            path.display()
        );
        path
    }
}

/// A `pyproject.toml` of a project that is no package, needing `dependencies`, followed by
/// `tables` (the installer's own configuration).
pub fn pyproject(dependencies: &[&str], tables: &str) -> String {
    let dependencies: Vec<String> = dependencies.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.10\"\n\
         dependencies = [{}]\n\n{tables}",
        dependencies.join(", ")
    )
}

/// A project directory with its own home; removed when dropped.
pub struct Project {
    root: tempfile::TempDir,
}

impl Project {
    /// A new project whose `pyproject.toml` is `pyproject`.
    pub fn new(pyproject: &str) -> Project {
        let root = tempfile::tempdir().expect("a temporary directory");
        for dir in ["project", "home", "config", "cache", "data", "state"] {
            std::fs::create_dir(root.path().join(dir)).expect("writable temporary directory");
        }
        let project = Project { root };
        project.write("pyproject.toml", pyproject);
        project
    }

    /// The project's directory (where the commands run).
    pub fn dir(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// Writes `text` to `name` in the project's directory.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir().join(name), text)
            .unwrap_or_else(|err| panic!("cannot write `{name}`: {err}"));
    }

    /// The text of `name` in the project's directory.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir().join(name))
            .unwrap_or_else(|err| panic!("cannot read `{name}`: {err}"))
    }

    /// Replaces every `from` in `name` with `to`, which must change the file.
    pub fn replace(&self, name: &str, from: &str, to: &str) {
        let text = self.read(name);
        assert!(text.contains(from), "`{from}` is not in `{name}`:\n{text}");
        self.write(name, &text.replace(from, to));
    }

    /// What is installed in the project's `.venv` (name → version).
    pub fn installed(&self) -> BTreeMap<String, String> {
        installed(&self.dir().join(".venv"))
    }

    /// The interpreter of the project's `.venv`.
    pub fn venv_python(&self) -> PathBuf {
        self.dir().join(".venv/bin/python")
    }

    /// `program args...` in the project's directory, with the project's own home and the
    /// variables in `env`.
    pub async fn run(&self, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let mut command = self.command(program);
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        run(command).await
    }

    /// `uv args...` (the e2e venv's uv) with the e2e venv's interpreter as the project's Python.
    pub async fn uv(&self, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let tools = Tools::get();
        let mut command = self.command(&tools.uv);
        command.args(args).arg("--python").arg(&tools.python);
        for (key, value) in env {
            command.env(key, value);
        }
        run(command).await
    }

    fn command(&self, program: &Path) -> Command {
        let root = self.root.path();
        let mut command = isolated(program);
        command
            .current_dir(self.dir())
            .env("HOME", root.join("home"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_CACHE_HOME", root.join("cache"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_STATE_HOME", root.join("state"))
            // Poetry: the venv in the project, no keyring (a headless test has none), no prompt.
            .env("POETRY_VIRTUALENVS_IN_PROJECT", "true")
            .env("POETRY_KEYRING_ENABLED", "false")
            .env("POETRY_NO_INTERACTION", "1")
            .env("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
            // PDM: no update check against the real index, no prompt.
            .env("PDM_CHECK_UPDATE", "false")
            .env("PDM_NON_INTERACTIVE", "1");
        command
    }
}

/// `python -m pip install` with another interpreter's pip (the old pips' venvs) of
/// `requirements` from `index_url` (and nothing else) into a fresh `--target` directory; also
/// returns `pip --version` as that pip prints it.
pub async fn pip_install_with(
    python: &Path,
    index_url: &str,
    requirements: &[&str],
    target: &Path,
) -> (Outcome, String) {
    let mut version = isolated(python);
    version.args(["-m", "pip", "--version"]);
    let version = run(version).await;
    version.assert_success();
    let mut command = isolated(python);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--no-compile",
            "--progress-bar",
            "off",
            "--only-binary",
            ":all:",
            "--index-url",
            index_url,
            "--target",
        ])
        .arg(target)
        .args(requirements);
    (run(command).await, version.stdout)
}

/// Every version a lock file pins for `name` (a universal lock may pin one per platform), in the
/// lock's order.
pub fn locked_versions(lock: &str, name: &str) -> Vec<String> {
    let key = format!("name = \"{name}\"\nversion = \"");
    lock.match_indices(&key)
        .map(|(at, _)| {
            let rest = &lock[at + key.len()..];
            rest[..rest.find('"').expect("a quoted version")].to_string()
        })
        .collect()
}

/// The version a lock file pins for `name`: the `version` line after `name = "<name>"`, as
/// `uv.lock`, `poetry.lock` and `pdm.lock` all write it.
pub fn locked_version(lock: &str, name: &str) -> String {
    let key = format!("name = \"{name}\"\nversion = \"");
    let at = lock
        .find(&key)
        .unwrap_or_else(|| panic!("`{name}` is not locked:\n{lock}"));
    let rest = &lock[at + key.len()..];
    rest[..rest.find('"').expect("a quoted version")].to_string()
}
