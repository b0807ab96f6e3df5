//! Real pip and real uv, from the venv `scripts/e2e-setup` creates (`target/e2e-venv`, or
//! `WHEELGATE_E2E_VENV`), run against an index URL into a fresh `--target` directory or venv,
//! isolated from the host's configuration: no pip.conf, no uv.toml, no `PIP_*`/`UV_*`
//! variables, no HTTP proxy, no cache.
//!
//! [`project`]: the installers that work on a project (uv projects, Poetry, PDM, pip-tools) and
//! the older pips, from the venvs `scripts/e2e-tools-setup` creates.

pub mod project;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::process::Command;

/// Environment variable naming the venv with pip and uv (default: `<workspace>/target/e2e-venv`).
pub const VENV_ENV: &str = "WHEELGATE_E2E_VENV";

/// How long one installer run may take before the test fails.
const RUN_TIMEOUT: Duration = Duration::from_mins(3);

/// The Python interpreter (with pip) and the uv binary the tests run.
#[derive(Debug)]
pub struct Tools {
    pub python: PathBuf,
    pub uv: PathBuf,
}

impl Tools {
    /// The tools, or a panic that says how to install them: the e2e tests never pass silently
    /// without pip and uv.
    pub fn get() -> &'static Tools {
        static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
        match TOOLS.get_or_init(Tools::locate) {
            Ok(tools) => tools,
            Err(message) => panic!("{message}"),
        }
    }

    fn locate() -> Result<Tools, String> {
        let venv = std::env::var_os(VENV_ENV)
            .filter(|v| !v.is_empty())
            .map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/e2e-venv"),
                PathBuf::from,
            );
        let (python, uv) = if cfg!(windows) {
            (venv.join("Scripts/python.exe"), venv.join("Scripts/uv.exe"))
        } else {
            (venv.join("bin/python"), venv.join("bin/uv"))
        };
        for tool in [&python, &uv] {
            if !tool.is_file() {
                return Err(format!(
                    "the end-to-end tests need pip and uv in a venv, and `{}` does not exist: run `scripts/e2e-setup` (or set {VENV_ENV} to a venv that has pip and uv)",
                    tool.display()
                ));
            }
        }
        Ok(Tools { python, uv })
    }
}

/// Which installer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installer {
    Pip,
    Uv,
}

impl fmt::Display for Installer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Installer::Pip => "pip",
            Installer::Uv => "uv",
        })
    }
}

/// Where an installer puts packages.
#[derive(Debug, Clone)]
pub enum Destination {
    /// `--target <dir>`
    Target(PathBuf),
    /// A virtual environment's interpreter (`uv pip install --python`, `pip --python`).
    Venv(PathBuf),
}

/// The result of one installer run.
#[derive(Debug)]
pub struct Outcome {
    pub success: bool,
    pub command: String,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Panics with the installer's output unless it succeeded.
    pub fn assert_success(&self) {
        assert!(
            self.success,
            "`{}` failed:\n--- stdout\n{}\n--- stderr\n{}",
            self.command, self.stdout, self.stderr
        );
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` (success: {})\n--- stdout\n{}\n--- stderr\n{}",
            self.command, self.success, self.stdout, self.stderr
        )
    }
}

/// A command with the host's installer configuration removed.
pub(crate) fn isolated(program: &Path) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let upper = key.to_ascii_uppercase();
        if upper.starts_with("PIP_")
            || upper.starts_with("UV_")
            || upper.starts_with("POETRY_")
            || upper.starts_with("PDM_")
            || upper.starts_with("PYTHON")
            || upper.ends_with("_PROXY")
            || matches!(
                upper.as_str(),
                "VIRTUAL_ENV" | "CONDA_PREFIX" | "SSL_CERT_FILE" | "REQUESTS_CA_BUNDLE"
            )
        {
            command.env_remove(key);
        }
    }
    command
        // pip: os.devnull as the configuration file means no configuration file at all.
        .env(
            "PIP_CONFIG_FILE",
            if cfg!(windows) { "nul" } else { "/dev/null" },
        )
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("NO_COLOR", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

pub(crate) async fn run(mut command: Command) -> Outcome {
    let description = format!("{:?}", command.as_std()).replace('"', "");
    let output = tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("`{description}` did not finish in {RUN_TIMEOUT:?}"))
        .unwrap_or_else(|err| panic!("cannot run `{description}`: {err}"));
    Outcome {
        success: output.status.success(),
        command: description,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `installer` to install `requirements` from `index_url` (and nothing else) into
/// `destination`, without any cache.
pub async fn install(
    installer: Installer,
    index_url: &str,
    requirements: &[&str],
    destination: &Destination,
) -> Outcome {
    let tools = Tools::get();
    let mut command = match installer {
        Installer::Pip => {
            let mut command = isolated(&tools.python);
            command.args(["-m", "pip"]);
            if let Destination::Venv(python) = destination {
                command.arg("--python").arg(python);
            }
            command.args([
                "install",
                "--no-cache-dir",
                "--no-compile",
                "--progress-bar",
                "off",
                "--only-binary",
                ":all:",
                "--index-url",
                index_url,
            ]);
            command
        }
        Installer::Uv => {
            let mut command = isolated(&tools.uv);
            command.args([
                "pip",
                "install",
                "--no-cache",
                "--no-config",
                "--no-progress",
                "--only-binary",
                ":all:",
                "--index-url",
                index_url,
            ]);
            match destination {
                Destination::Target(_) => command.arg("--python").arg(&tools.python),
                Destination::Venv(python) => command.arg("--python").arg(python),
            };
            command
        }
    };
    if let Destination::Target(dir) = destination {
        command.arg("--target").arg(dir);
    }
    command.args(requirements);
    run(command).await
}

/// Creates a fresh virtual environment without pip at `dir`; returns its interpreter.
pub async fn create_venv(dir: &Path) -> PathBuf {
    let tools = Tools::get();
    let mut command = isolated(&tools.uv);
    command
        .args(["venv", "--no-config", "--quiet", "--python"])
        .arg(&tools.python)
        .arg(dir);
    run(command).await.assert_success();
    if cfg!(windows) {
        dir.join("Scripts/python.exe")
    } else {
        dir.join("bin/python")
    }
}

/// Every distribution installed in a `--target` directory or a venv's site-packages, as
/// normalized name → version, read from the `<name>-<version>.dist-info` directory names.
pub fn installed(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".dist-info")
                && let Some((dist, version)) = stem.split_once('-')
            {
                found.insert(
                    dist.to_ascii_lowercase().replace('_', "-"),
                    version.to_string(),
                );
            } else if entry.file_type().is_ok_and(|t| t.is_dir())
                && (matches!(name.as_str(), "lib" | "Lib" | "site-packages")
                    || name.starts_with("python3"))
            {
                stack.push(entry.path());
            }
        }
    }
    found
}

/// Imports `module` with the test interpreter from a `--target` directory and returns its
/// `__version__`: the installed files really are the chosen build.
pub async fn imported_version(
    python: Option<&Path>,
    target: Option<&Path>,
    module: &str,
) -> String {
    let tools = Tools::get();
    let mut command = isolated(python.unwrap_or(&tools.python));
    let script = format!(
        "import sys\nif len(sys.argv) > 1: sys.path.insert(0, sys.argv[1])\nimport {module}\nprint({module}.__version__)"
    );
    command.arg("-c").arg(script);
    if let Some(target) = target {
        command.arg(target);
    }
    let outcome = run(command).await;
    outcome.assert_success();
    outcome.stdout.trim().to_string()
}

/// `uv pip compile` of `requirements` from `index_url` (and nothing else) for another Python
/// (`3.10`) and platform (`x86_64-manylinux_2_28`), without installing; stdout lists the pins.
pub async fn uv_compile(
    index_url: &str,
    requirements: &[&str],
    python_version: &str,
    python_platform: &str,
) -> Outcome {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("requirements.in");
    std::fs::write(&input, requirements.join("\n")).expect("writable temporary directory");
    let mut command = isolated(&Tools::get().uv);
    command
        .args([
            "pip",
            "compile",
            "--no-cache",
            "--no-config",
            "--no-progress",
            "--no-header",
            "--no-annotate",
            "--only-binary",
            ":all:",
            "--python-version",
            python_version,
            "--python-platform",
            python_platform,
            "--index-url",
            index_url,
        ])
        .arg(&input);
    run(command).await
}

/// `pip install --dry-run --report -` of `requirements` from `index_url` for another Python
/// (`3.10`) and platform tag (`manylinux_2_28_x86_64`); stdout is pip's JSON report.
pub async fn pip_dry_run(
    index_url: &str,
    requirements: &[&str],
    python_version: &str,
    platform: &str,
) -> Outcome {
    let mut command = isolated(&Tools::get().python);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            "-",
            "--no-cache-dir",
            "--only-binary",
            ":all:",
            "--python-version",
            python_version,
            "--platform",
            platform,
            "--index-url",
            index_url,
        ])
        .args(requirements);
    run(command).await
}

/// `uv pip install -r <lock>` of a PEP 751 lock into the venv of `python`, without any index.
pub async fn uv_install_lock(lock: &Path, python: &Path) -> Outcome {
    let mut command = isolated(&Tools::get().uv);
    command
        .args([
            "pip",
            "install",
            "--no-cache",
            "--no-config",
            "--no-progress",
            "--python",
        ])
        .arg(python)
        .arg("-r")
        .arg(lock);
    run(command).await
}

/// `uv pip install -r <lock>` into a `--target` directory for another Python (`3.10`) and
/// platform (`aarch64-manylinux_2_28`), without any index.
pub async fn uv_install_lock_for(
    lock: &Path,
    python_version: &str,
    python_platform: &str,
    target: &Path,
) -> Outcome {
    let tools = Tools::get();
    let mut command = isolated(&tools.uv);
    command
        .args([
            "pip",
            "install",
            "--no-cache",
            "--no-config",
            "--no-progress",
            "--python",
        ])
        .arg(&tools.python)
        .args([
            "--python-version",
            python_version,
            "--python-platform",
            python_platform,
        ])
        .arg("--target")
        .arg(target)
        .arg("-r")
        .arg(lock);
    run(command).await
}
