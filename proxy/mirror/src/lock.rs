//! PEP 751 lock files (`pylock.<environment>.toml`), one per resolved environment: every
//! package, version, wheel, size and sha256, with the file URLs the offline server answers
//! (`<server>/files/<project>/<file>`), so `uv pip install -r pylock.<environment>.toml`
//! installs exactly the resolution with no index at all. File names follow PEP 751
//! (`pylock.<name>.toml`, the name without dots), which uv checks.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use wheelgate_resolver::variants::choose::{VARIANTS_JSON_SUFFIX, variant_label};
use wheelgate_resolver::variants::plain_filename;

use super::derived::{DerivedWheels, device_links};
use super::environment::Environment;
use super::resolve::Resolution;
use wheelgate_server::rewrite::file_link;

/// The directory of a store that holds its locks.
pub const LOCKS_DIR: &str = "locks";

/// Why a lock could not be written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "`{file}` has no sha256 on its index page; a PEP 751 lock needs one for every file (`{environment}`)"
    )]
    NoHash { file: String, environment: String },
    #[error(
        "`{file}` is served with its metadata changed (a torch pin or device extras added), and its derived wheel was not built, so its hash is unknown (`{environment}`); run the sync again"
    )]
    NotDerived { file: String, environment: String },
    #[error("cannot render the lock of `{environment}`")]
    Render {
        environment: String,
        #[source]
        source: toml::ser::Error,
    },
    #[error("cannot write `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The lock's file name: `pylock.py312-linux-x86_64-cu130.toml`.
pub fn lock_file_name(environment: &Environment) -> String {
    format!("pylock.{}.toml", environment.name)
}

/// The lock's path relative to a store: `locks/pylock.<environment>.toml`.
pub fn lock_path(environment: &Environment) -> String {
    format!("{LOCKS_DIR}/{}", lock_file_name(environment))
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct PylockFile<'a> {
    lock_version: &'static str,
    environments: Vec<String>,
    requires_python: String,
    created_by: &'static str,
    packages: Vec<LockPackage<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct LockPackage<'a> {
    name: &'a str,
    version: &'a str,
    index: String,
    wheels: Vec<LockWheel<'a>>,
}

#[derive(Serialize)]
struct LockWheel<'a> {
    name: Cow<'a, str>,
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    hashes: Hashes<'a>,
}

#[derive(Serialize)]
struct Hashes<'a> {
    sha256: &'a str,
}

/// The PEP 751 text of one environment's resolution, its URLs under `server_url` (the offline
/// server's address as its clients reach it, e.g. `http://mirror:3141`); a wheel served derived
/// (`derived`) listed with the derived wheel's sha256 and size.
pub fn render_lock(
    resolution: &Resolution,
    server_url: &str,
    derived: &DerivedWheels,
) -> Result<String, LockError> {
    let server = server_url.trim_end_matches('/');
    let environment = &resolution.environment;
    let mut packages = Vec::with_capacity(resolution.packages.len());
    for package in &resolution.packages {
        let device_link = device_links(package);
        let mut wheels = Vec::new();
        for &index in &package.files {
            let file = &package.page.page.files[index];
            // A version's variants file (PEP 825) is for the server, not an installer.
            if file.filename.ends_with(VARIANTS_JSON_SUFFIX) {
                continue;
            }
            // A wheel served derived, at the server's link for it: bound by page (its torch pin
            // added, `/bound/...`) or with the machine's device extras required.
            let derived_link = match package.bound.as_ref() {
                Some(listing) => Some(listing.bound[index].link(&package.project, &file.filename)),
                None => device_link
                    .as_ref()
                    .and_then(|link_of| link_of(&file.filename)),
            };
            if let Some(link) = derived_link {
                let wheel = derived.get(&link).ok_or_else(|| LockError::NotDerived {
                    file: file.filename.clone(),
                    environment: environment.name.clone(),
                })?;
                wheels.push(LockWheel {
                    name: Cow::Borrowed(file.filename.as_str()),
                    url: format!("{server}{link}"),
                    size: Some(wheel.size),
                    hashes: Hashes {
                        sha256: &wheel.sha256,
                    },
                });
                continue;
            }
            let upstream_sha256 = file.sha256().ok_or_else(|| LockError::NoHash {
                file: file.filename.clone(),
                environment: environment.name.clone(),
            })?;
            let derived_wheel = derived.get(&package.page.page.file_url(file, &package.page.url));
            let (sha256, size) = match derived_wheel {
                Some(wheel) => (wheel.sha256.as_str(), Some(wheel.size)),
                None => (upstream_sha256, file.size),
            };
            // A variant wheel under its plain name, at the server's variant route: the name
            // and link the server's pages give it.
            let (name, link) = match (
                variant_label(&file.filename),
                plain_filename(&file.filename),
            ) {
                (Some(label), Some(plain)) => {
                    let link = file_link(&format!("{}/v/{label}", package.project), &plain);
                    (Cow::Owned(plain), link)
                }
                _ => (
                    Cow::Borrowed(file.filename.as_str()),
                    file_link(&package.project, &file.filename),
                ),
            };
            wheels.push(LockWheel {
                name,
                url: format!("{server}{link}"),
                size,
                hashes: Hashes { sha256 },
            });
        }
        packages.push(LockPackage {
            name: &package.project,
            version: &package.full_version,
            index: format!("{server}/simple/"),
            wheels,
        });
    }
    let python = environment.python;
    let lock = PylockFile {
        lock_version: "1.0",
        environments: vec![environment_marker(environment)],
        requires_python: format!("=={}.{}.*", python.major, python.minor),
        created_by: "wheelgate",
        packages,
    };
    let text = toml::to_string(&lock).map_err(|source| LockError::Render {
        environment: environment.name.clone(),
        source,
    })?;
    Ok(format!(
        "# The resolution of `{}` by `wheelgate mirror`; install with\n#   uv pip install -r {}\n{text}",
        environment.name,
        lock_file_name(environment)
    ))
}

/// The PEP 508 marker an installer checks before using the lock.
fn environment_marker(environment: &Environment) -> String {
    let markers = environment.markers();
    format!(
        "python_version == '{}' and sys_platform == '{}' and platform_machine == '{}'",
        markers.python_version(),
        markers.sys_platform(),
        markers.platform_machine()
    )
}

/// Writes one lock per resolution into `dir` (created), each atomically.
pub fn write_locks(
    dir: &Path,
    resolutions: &[Resolution],
    server_url: &str,
    derived: &DerivedWheels,
) -> Result<Vec<PathBuf>, LockError> {
    std::fs::create_dir_all(dir).map_err(|source| LockError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::with_capacity(resolutions.len());
    for resolution in resolutions {
        let text = render_lock(resolution, server_url, derived)?;
        let path = dir.join(lock_file_name(&resolution.environment));
        let temp = dir.join(format!(
            ".{}.{}.tmp",
            lock_file_name(&resolution.environment),
            std::process::id()
        ));
        let write_error = |source| LockError::Write {
            path: path.clone(),
            source,
        };
        std::fs::write(&temp, text).map_err(write_error)?;
        std::fs::rename(&temp, &path).map_err(write_error)?;
        written.push(path);
    }
    Ok(written)
}
