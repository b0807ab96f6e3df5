//! `wheelgate mirror sync`, `mirror lock` and `wheelgate select --index URL` against a private
//! upstream as companies run one: HTTPS with a company CA, a bearer token and an
//! `X-JFrog-Art-Api` header required on every request (pages, the ranged reads of a wheel's
//! `METADATA`, `HEAD`s for sizes, downloads). They must read the same `[upstreams.*]` sections
//! `wheelgate serve` reads (the mirror's from its own file, `select` from `--config`), and stop
//! naming what is missing.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

use super::fake_upstream::sha256;
use super::tls_upstream::{TestCa, TlsServer};

const TOKEN: &str = "tok-mirror-51c2";
const API_KEY: &str = "AKCp8k-mirror-key";
const WHEEL: &str = "demo-1.0-py3-none-any.whl";
const TORCH_CPU: &str = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";
const TORCH_CU130: &str = "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl";
const CPU_MACHINE: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;

/// A wheel of `demo 1.0` (a stored zip, the layout the ranged reader expects) with no PEP 658
/// file beside it on the page: its `METADATA` is read from the wheel itself.
fn demo_wheel() -> Vec<u8> {
    let members: [(&str, &[u8]); 2] = [
        ("demo/__init__.py", b"VALUE = 1\n"),
        (
            "demo-1.0.dist-info/METADATA",
            b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        ),
    ];
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, data) in members {
        let offset = u32::try_from(out.len()).unwrap();
        let len = u32::try_from(data.len()).unwrap().to_le_bytes();
        let name_len = u16::try_from(name.len()).unwrap().to_le_bytes();
        // Local header: signature, version, flags, method 0 (stored), time, date, crc (unchecked).
        out.extend_from_slice(&[0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&len);
        out.extend_from_slice(&len);
        out.extend_from_slice(&name_len);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        // Central directory entry.
        central.extend_from_slice(&[0x50, 0x4b, 0x01, 0x02, 20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&[0, 0, 0, 0]);
        central.extend_from_slice(&len);
        central.extend_from_slice(&len);
        central.extend_from_slice(&name_len);
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let directory_offset = u32::try_from(out.len()).unwrap();
    let directory_size = u32::try_from(central.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 2, 0, 2, 0]);
    out.extend_from_slice(&directory_size.to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    authorized: bool,
}

#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The private upstream: 401 without both credentials; a PEP 691 page of `demo` (no size, no
/// core metadata, so sizes come from `HEAD` and metadata from the wheel) and one of `torch`.
async fn private(
    State(recorder): State<Recorder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let authorized = headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v == format!("Bearer {TOKEN}").as_str())
        && headers.get("x-jfrog-art-api").is_some_and(|v| v == API_KEY);
    recorder.seen.lock().unwrap().push(Seen {
        method: method.clone(),
        path: uri.path().to_string(),
        authorized,
    });
    if !authorized {
        return (StatusCode::UNAUTHORIZED, "credentials required").into_response();
    }
    let json = |body: String| {
        (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            body,
        )
            .into_response()
    };
    let torch_file = |name: &str| {
        format!(
            r#"{{"filename":"{name}","url":"../../packages/{}","hashes":{{"sha256":"{}"}}}}"#,
            name.replace('+', "%2B"),
            sha256(name.as_bytes())
        )
    };
    match uri.path() {
        "/api/pypi/remote/simple/demo/" => json(format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"demo","files":[{{"filename":"{WHEEL}","url":"../../packages/{WHEEL}","hashes":{{"sha256":"{}"}}}}]}}"#,
            sha256(&demo_wheel())
        )),
        "/api/pypi/remote/packages/demo-1.0-py3-none-any.whl" => demo_wheel().into_response(),
        "/api/pypi/whl/torch/" => json(format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"torch","files":[{},{}]}}"#,
            torch_file(TORCH_CPU),
            torch_file(TORCH_CU130)
        )),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The private upstream over TLS, and a directory with its CA bundle and secret files.
struct Upstream {
    server: TlsServer,
    recorder: Recorder,
    dir: tempfile::TempDir,
}

impl Upstream {
    async fn start() -> Upstream {
        let ca = TestCa::new();
        let recorder = Recorder::default();
        let router = Router::new().fallback(private).with_state(recorder.clone());
        let server = TlsServer::start(&ca, &[], router).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), &ca.pem).unwrap();
        std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
        std::fs::write(dir.path().join("api-key"), format!("{API_KEY}\n")).unwrap();
        Upstream {
            server,
            recorder,
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An `[upstreams.<section>]` with the token, the API key and the CA bundle, `token_file`
    /// replacing the token's file when given.
    fn section(&self, section: &str, token_file: Option<&Path>) -> String {
        let token = token_file.map_or_else(|| self.path("token"), Path::to_path_buf);
        // TOML basic strings: the temporary paths hold no quote or backslash.
        format!(
            "[upstreams.{section}]\ntoken = {{ file = \"{}\" }}\nheaders = {{ \"X-JFrog-Art-Api\" = {{ file = \"{}\" }} }}\nca_bundle = \"{}\"\n",
            token.display(),
            self.path("api-key").display(),
            self.path("ca.pem").display()
        )
    }

    /// A mirror configuration of `demo` with its dependencies resolved, from the private
    /// upstream as the general one.
    fn mirror_config(&self, access: &str) -> MirrorConfig {
        let text = format!(
            "pypi_url = {:?}\npytorch_url = \"http://127.0.0.1:9/whl\"\npython = [\"3.12\"]\n\n[[package]]\nname = \"demo\"\nversions = \"==1.0\"\n\n{access}",
            self.server.url("/api/pypi/remote/simple")
        );
        MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.recorder.seen.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn mirror_sync_and_dry_run_use_the_private_upstreams_access() {
    let upstream = Upstream::start().await;
    let config = upstream.mirror_config(&upstream.section("pypi", None));

    // The dry run sizes the wheel with a HEAD, which needs the credentials too.
    let store = tempfile::tempdir().unwrap();
    let dry = mirror::dry_run(&config, store.path(), 2).await.unwrap();
    let wheel_len = u64::try_from(demo_wheel().len()).unwrap();
    assert_eq!(dry.plan.files.len(), 1, "{:?}", dry.plan.files);
    assert_eq!(dry.sizes, vec![Some(wheel_len)]);
    assert!(
        upstream.seen().iter().any(|s| s.method == Method::HEAD),
        "{:?}",
        upstream.seen()
    );

    let options = SyncOptions {
        store: store.path().to_path_buf(),
        jobs: 2,
    };
    let report = mirror::sync(&config, &options, &NoProgress).await.unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    assert_eq!(report.downloaded, 1);
    assert!(store.path().join(mirror::MARKER).is_file());
    let seen = upstream.seen();
    // The page, the wheel's METADATA by ranges (no PEP 658 file), the download: all carried
    // the credentials and were answered.
    assert!(seen.iter().all(|s| s.authorized), "{seen:?}");
    let wheel_requests = seen
        .iter()
        .filter(|s| s.method == Method::GET && s.path.ends_with(WHEEL))
        .count();
    assert!(wheel_requests >= 2, "metadata and download: {seen:?}");

    // `mirror lock` takes the same access.
    let out = tempfile::tempdir().unwrap();
    let (_, written) = mirror::lock(&config, out.path()).await.unwrap();
    assert_eq!(written.len(), 1);
    let lock = std::fs::read_to_string(&written[0]).unwrap();
    assert!(lock.contains("demo-1.0-py3-none-any.whl"), "{lock}");
}

#[tokio::test]
async fn mirror_sync_without_access_fails_and_a_missing_secret_stops_it_first() {
    let upstream = Upstream::start().await;

    // No section: the CA is unknown, nothing is fetched and the store is not complete.
    let config = upstream.mirror_config("");
    let store = tempfile::tempdir().unwrap();
    let options = SyncOptions {
        store: store.path().join("store"),
        jobs: 1,
    };
    let result = mirror::sync(&config, &options, &NoProgress).await;
    assert!(
        result.as_ref().map_or(true, |report| !report.is_complete()),
        "a sync without the CA bundle completed"
    );
    assert!(!options.store.join(mirror::MARKER).exists());
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());

    // An unreadable token file or CA bundle: stopped with its path before the store is created.
    let absent_token = upstream.path("absent-token");
    let absent_ca = upstream.path("absent-ca.pem");
    let ca = upstream.path("ca.pem").display().to_string();
    for (section, absent) in [
        (upstream.section("pypi", Some(&absent_token)), &absent_token),
        (
            upstream
                .section("pypi", None)
                .replace(&ca, absent_ca.to_str().unwrap()),
            &absent_ca,
        ),
    ] {
        let config = upstream.mirror_config(&section);
        let options = SyncOptions {
            store: store.path().join("other"),
            jobs: 1,
        };
        let Err(err) = mirror::sync(&config, &options, &NoProgress).await else {
            panic!("an unreadable {} must stop the sync", absent.display());
        };
        let chain = wheelgate_index::error_chain::source_chain(&err);
        assert!(chain.contains("[upstreams.pypi]"), "{chain}");
        assert!(
            chain.contains(absent.to_str().unwrap()),
            "the path is named: {chain}"
        );
        assert!(!options.store.exists(), "the store was touched");
    }
}

#[test]
fn a_plain_text_secret_in_a_mirror_file_is_refused_without_repeating_it() {
    let text = "[[package]]\nname = \"demo\"\ndependencies = false\n\n[upstreams.pypi]\ntoken = \"s3cr3t-plain\"\n";
    let err = MirrorConfig::parse(text, Path::new("mirror.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 6"), "{err}");
    assert!(err.contains("{ env = "), "{err}");
    assert!(!err.contains("s3cr3t-plain"), "{err}");
}

/// `wheelgate select` as a user runs it.
async fn select(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_wheelgate"))
            .arg("select")
            .args(&args)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn select_index_reads_the_servers_upstreams_with_config() {
    let upstream = Upstream::start().await;
    let machine = upstream.path("machine.json");
    std::fs::write(&machine, CPU_MACHINE).unwrap();
    let index = upstream.server.url("/api/pypi/whl/");
    let serve_config = upstream.path("wheelgate.toml");
    std::fs::write(
        &serve_config,
        format!(
            "pytorch_url = {:?}\n\n{}",
            upstream.server.url("/api/pypi/whl"),
            upstream.section("pytorch", None)
        ),
    )
    .unwrap();
    let args = |config: Option<&Path>| {
        let mut args = vec![
            "--index".to_string(),
            index.clone(),
            "--machine".to_string(),
            machine.display().to_string(),
            "--json".to_string(),
        ];
        if let Some(config) = config {
            args.extend(["--config".to_string(), config.display().to_string()]);
        }
        args.push("torch==2.9.0".to_string());
        args
    };

    let output = select(args(Some(&serve_config))).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answers[0]["backend"], "cpu", "{stdout}");
    assert_eq!(answers[0]["files"][0], TORCH_CPU, "{stdout}");
    assert!(upstream.seen().iter().all(|s| s.authorized));

    // Without --config the company CA is not trusted: a clear failure, no answer.
    let output = select(args(None)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("could not fetch"), "{stderr}");

    // Sections for another origin (pytorch_url unset: download.pytorch.org's): fetched without
    // them, and the log says why.
    let elsewhere = upstream.path("elsewhere.toml");
    std::fs::write(&elsewhere, upstream.section("pytorch", None)).unwrap();
    let output = select(args(Some(&elsewhere))).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("apply to other origins than the --index URL's"),
        "{stderr}"
    );

    // A section whose secret is missing stops it, naming the file.
    let broken = upstream.path("broken.toml");
    let absent = upstream.path("absent-token");
    std::fs::write(
        &broken,
        format!(
            "pytorch_url = {:?}\n\n{}",
            upstream.server.url("/api/pypi/whl"),
            upstream.section("pytorch", Some(&absent))
        ),
    )
    .unwrap();
    let output = select(args(Some(&broken))).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("[upstreams.pytorch]"), "{stderr}");
    assert!(stderr.contains(absent.to_str().unwrap()), "{stderr}");
}
