//! Shared steps of the tests.

use std::collections::BTreeMap;
use std::path::Path;

use wheelgate_e2e::installers::{self, Destination, Installer, Outcome};
use wheelgate_e2e::upstream::Upstreams;

/// Installs `requirements` with `installer` from `index_url` into a fresh `--target` directory
/// and returns what was installed (name → version); panics with the installer's output on
/// failure.
pub async fn install_ok(
    installer: Installer,
    index_url: &str,
    requirements: &[&str],
) -> (tempfile::TempDir, BTreeMap<String, String>) {
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, index_url, requirements, dir.path()).await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    (dir, dists)
}

pub async fn install_into(
    installer: Installer,
    index_url: &str,
    requirements: &[&str],
    dir: &Path,
) -> Outcome {
    installers::install(
        installer,
        index_url,
        requirements,
        &Destination::Target(dir.to_path_buf()),
    )
    .await
}

/// The version of `name` in `dists`, or a panic listing what is there.
pub fn version<'a>(dists: &'a BTreeMap<String, String>, name: &str) -> &'a str {
    dists
        .get(name)
        .unwrap_or_else(|| panic!("`{name}` was not installed; installed: {dists:?}"))
}

/// What every install through the proxy must leave true: PyPI was never asked for a project
/// only the PyTorch index publishes (torch and torchvision, which PyTorch also publishes on
/// PyPI, are merged from both), and the PyTorch index never for a PyPI one.
pub fn assert_routing_safe(upstreams: &Upstreams) {
    let catalog = wheelgate_resolver::Catalog::embedded();
    for project in catalog
        .pytorch_projects()
        .filter(|project| !catalog.is_published_on_pypi(project))
    {
        let path = format!("/simple/{project}/");
        assert_eq!(
            upstreams.pypi.log.count(&path),
            0,
            "PyPI was asked for `{project}`: {:?}",
            upstreams.pypi.log.paths()
        );
    }
    let filelock: Vec<String> = upstreams
        .pytorch
        .log
        .paths()
        .into_iter()
        .filter(|p| p.contains("filelock"))
        .collect();
    assert!(
        filelock.is_empty(),
        "the PyTorch upstream was asked for filelock: {filelock:?}"
    );
}

/// A loopback port free now, for a server whose address the store's locks must name, started
/// only after a whole mirror sync. Below Linux's ephemeral range (32768 and up): a port the
/// kernel handed out for `127.0.0.1:0` went back to that range, and the sync's own outgoing
/// connections, or another test's, took it before the server bound it ("Address already in
/// use", once in a CI run). Started at a random port so concurrent tests rarely probe the same.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const LOW: u16 = 20_000;
    const SPAN: u16 = 12_000;
    let start = RandomState::new().hash_one(std::process::id()) % u64::from(SPAN);
    let start = u16::try_from(start).expect("below SPAN");
    (0..SPAN)
        .map(|step| LOW + (start + step) % SPAN)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}

/// A machine given as JSON (as `/m/` URLs and `--machine` take it) as a TOML inline table, for
/// a mirror configuration's `machines`.
pub fn toml_inline(json: &str) -> String {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                out.push('{');
                for (i, (key, value)) in map.iter().enumerate() {
                    out.push_str(if i == 0 { " " } else { ", " });
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push_str(" = ");
                    write(value, out);
                }
                out.push_str(" }");
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(&serde_json::from_str(json).unwrap(), &mut out);
    out
}
