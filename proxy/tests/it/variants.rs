//! A wheel-variant index (PEP 825) through the proxy: every machine's page lists exactly one
//! variant per plain filename, under that plain name, with the upstream hash; its link fetches
//! the chosen upstream variant's bytes and `.metadata`; names the page did not list are refused;
//! a page mixing plain and variant wheels keeps its plain versions. The variants file is the
//! real torch 2.9.0 one, read in place from the shared fixtures.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use wheelgate_config::ServeConfig;
use wheelgate_resolver::Machine;
use wheelgate_server::app;
use wheelgate_server::serve::build_state;

use super::fake_upstream::{Fake, sha256};

const TAGS: &str = "cp312-cp312-manylinux_2_28_x86_64";
const LABELS: [&str; 7] = [
    "cuda12.6", "cuda12.8", "cuda13.0", "rocm6.3", "rocm6.4", "xpu", "null",
];

fn variants_json() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/variants-json/torch-2.9.0-variants.json"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("fixture `{path}`: {e}"))
}

/// The bytes of the variant `label`'s wheel and metadata (not real zips: the proxy never looks
/// inside, it serves the upstream bytes as they are).
fn wheel_bytes(label: &str) -> Vec<u8> {
    format!("wheel of {label}").into_bytes()
}

fn metadata_bytes(label: &str) -> Vec<u8> {
    format!(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\nX-Label: {label}\n\
         Requires-Dist: filelock; variant_label == '{label}'\n\
         Requires-Dist: never-installed; variant_label == 'other'\n"
    )
    .into_bytes()
}

/// torch 2.9.0 as variants (one per label, its variants file) beside torch 2.8.0 as a plain
/// local-labelled CPU wheel, as `/whl/torch/`.
fn variant_upstream(fake: &Fake) {
    variant_upstream_with(fake, &variants_json());
}

/// [`variant_upstream`] with `json` as torch 2.9.0's variants file.
fn variant_upstream_with(fake: &Fake, json: &str) {
    let mut links = String::new();
    for label in LABELS {
        let name = format!("torch-2.9.0-{TAGS}-{label}.whl");
        fake.add_file(&format!("/whl/variant/{name}"), &wheel_bytes(label));
        fake.add_file(
            &format!("/whl/variant/{name}.metadata"),
            &metadata_bytes(label),
        );
        let _ = writeln!(
            links,
            "<a href=\"/whl/variant/{name}#sha256={}\" data-core-metadata=\"sha256={}\">{name}</a><br/>",
            sha256(&wheel_bytes(label)),
            sha256(&metadata_bytes(label)),
        );
    }
    fake.add_file("/whl/variant/torch-2.9.0-variants.json", json.as_bytes());
    let _ = writeln!(
        links,
        "<a href=\"/whl/variant/torch-2.9.0-variants.json#sha256={}\">torch-2.9.0-variants.json</a><br/>",
        sha256(json.as_bytes())
    );
    let plain = format!("torch-2.8.0+cpu-{TAGS}.whl");
    fake.add_file(&format!("/whl/cpu/{plain}"), b"plain cpu wheel");
    let _ = writeln!(
        links,
        "<a href=\"/whl/cpu/{}#sha256={}\">{plain}</a><br/>",
        plain.replace('+', "%2B"),
        sha256(b"plain cpu wheel")
    );
    fake.add_page(
        "/whl/torch/",
        format!("<!DOCTYPE html>\n<html><body><h1>Links for torch</h1>\n{links}</body></html>\n"),
    );
}

struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start_proxy(upstream: SocketAddr, cache: &Path) -> Proxy {
    let config = ServeConfig {
        pytorch_url: format!("http://{upstream}/whl"),
        pypi_url: format!("http://{upstream}/simple"),
        cache_dir: cache.to_path_buf(),
        machine: Some(
            serde_json::from_str(r#"{"platform":"linux-x86_64","glibc":"2.36"}"#).unwrap(),
        ),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { axum::serve(listener, app(state)).await.unwrap() });
    Proxy { addr, task }
}

async fn get(url: &str) -> (u16, Vec<u8>) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

/// The page's JSON files (PEP 691) as (filename, url, sha256).
async fn page_files(url: &str) -> Vec<(String, String, String)> {
    let response = reqwest::Client::new()
        .get(url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{url}");
    let page: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["filename"].as_str().unwrap().to_string(),
                f["url"].as_str().unwrap().to_string(),
                f["hashes"]["sha256"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

fn token(json: &str) -> String {
    let machine: Machine = serde_json::from_str(json).unwrap();
    wheelgate_resolver::token::encode(&machine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_machine_gets_its_variant_under_the_plain_filename() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let base = format!("http://{}", proxy.addr);
    let plain = format!("torch-2.9.0-{TAGS}.whl");
    for (machine, label) in [
        (
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
            "cuda13.0",
        ),
        (
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"7.0"}]}}"#,
            "cuda12.8",
        ),
        (
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#,
            "rocm6.4",
        ),
        (r#"{"platform":"linux-x86_64"}"#, "null"),
    ] {
        let url = format!("{base}/m/{}/simple/torch/", token(machine));
        let files = page_files(&url).await;
        let names: Vec<&str> = files.iter().map(|(name, ..)| name.as_str()).collect();
        // The plain 2.8.0 wheel stays; 2.9.0 is exactly one wheel, under its plain name.
        assert_eq!(
            names,
            [format!("torch-2.8.0+cpu-{TAGS}.whl"), plain.clone()],
            "{machine}"
        );
        let (_, link, hash) = &files[1];
        assert_eq!(
            link,
            &format!("/files/torch/v/{label}/{plain}"),
            "{machine}"
        );
        // Served derived once its METADATA is read (`crate::derive`): no hash is listed before,
        // never the upstream's, which the derived wheel would not match.
        assert_eq!(hash, "", "{machine}");
        // These stand-ins are not zips: nothing can be derived, so the upstream's file is
        // served as it is.
        let (status, body) = get(&format!("{base}{link}")).await;
        assert_eq!(status, 200);
        assert_eq!(body, wheel_bytes(label), "{machine}");
        // The chosen variant's metadata, its `variant_label` markers decided (released
        // installers cannot parse them), so the page offers it without a hash.
        let (status, body) = get(&format!("{base}{link}.metadata")).await;
        assert_eq!(status, 200);
        let text = String::from_utf8(body).unwrap();
        let expected = String::from_utf8(metadata_bytes(label))
            .unwrap()
            .replace(
                &format!("variant_label == '{label}'"),
                "python_version >= \"0\"",
            )
            .replace("variant_label == 'other'", "python_version < \"0\"");
        assert_eq!(text, expected);
    }

    // The pinned route gets the pinned build's variant whatever the machine.
    let files = page_files(&format!("{base}/b/cu128/simple/torch/")).await;
    assert!(
        files
            .iter()
            .any(|(_, link, _)| link == &format!("/files/torch/v/cuda12.8/{plain}")),
        "{files:?}"
    );
}

/// A variants file that drips must not hold its project's pages (hardening, issue 20): the
/// first page waits for it about a second, then is answered with the version chosen by its
/// labels; the next page does not wait again; once the file is read, the page uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_variants_file_holds_no_page() {
    use super::fake_upstream::Behaviour;

    let fake = Fake::start().await;
    variant_upstream(&fake);
    // Every file's one chunk comes after 4 s (pages are not files: they come at once).
    fake.set(Behaviour::Slow(std::time::Duration::from_secs(4)));
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let url = format!("http://{}/simple/torch/", proxy.addr);
    for attempt in ["first", "second"] {
        let started = std::time::Instant::now();
        let files = page_files(&url).await;
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(2),
            "{attempt} page after {took:?}"
        );
        assert!(
            files
                .iter()
                .any(|(name, ..)| name.starts_with("torch-2.9.0")),
            "{attempt}: 2.9.0 chosen by its labels meanwhile: {files:?}"
        );
    }
    let explain = get(&format!("http://{}/explain/torch/?format=json", proxy.addr))
        .await
        .1;
    let explain = String::from_utf8(explain).unwrap();
    assert!(explain.contains("not read within"), "{explain}");
    // Once the files are read, the page is made with them (and kept).
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let explain = get(&format!("http://{}/explain/torch/?format=json", proxy.addr))
        .await
        .1;
    assert!(
        !String::from_utf8(explain)
            .unwrap()
            .contains("not read within"),
        "read by now"
    );
}

/// A variants file past the caps (issue 20, item 3: a 70,000-value `sm_arch` list once cost
/// 6.8 s per rendering, for every distinct `/m/<token>/`) is refused whole, quickly, the same
/// way for every machine: the page is answered from the labels, and `/explain/` says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variants_file_past_the_caps_is_refused_and_the_page_made_from_labels() {
    let fake = Fake::start().await;
    let mut hostile: serde_json::Value = serde_json::from_str(&variants_json()).unwrap();
    let values: Vec<String> = (0..70_000).map(|i| format!("{i}_real")).collect();
    hostile["variants"]["cuda13.0"]["nvidia"]["sm_arch"] = serde_json::json!(values);
    let hostile = hostile.to_string();
    assert!(
        hostile.len() < 1024 * 1024,
        "under the size cap: {}",
        hostile.len()
    );
    variant_upstream_with(&fake, &hostile);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    for driver in ["580.65.06", "580.65.07", "570.86.10"] {
        let machine = format!(
            r#"{{"platform":"linux-x86_64","glibc":"2.36","nvidia":{{"driver_version":"{driver}","gpus":[{{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}}]}}}}"#
        );
        let url = format!("http://{}/m/{}/simple/torch/", proxy.addr, token(&machine));
        let files = page_files(&url).await;
        assert!(
            files
                .iter()
                .any(|(name, ..)| name.starts_with("torch-2.9.0")),
            "2.9.0 chosen by its labels: {files:?}"
        );
    }
    let explain = String::from_utf8(
        get(&format!("http://{}/explain/torch/?format=json", proxy.addr))
            .await
            .1,
    )
    .unwrap();
    assert!(
        explain.contains("holds 70000 entries, more than the 1024 a variants file may hold"),
        "{explain}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_states_the_variant_choice_and_its_judgement() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let mi300x = token(
        r#"{"platform":"linux-x86_64","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#,
    );
    let (status, body) = get(&format!(
        "http://{}/m/{mi300x}/explain/torch/?format=json",
        proxy.addr
    ))
    .await;
    assert_eq!(status, 200);
    let explanation: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let versions = explanation["versions"].as_array().unwrap();
    let v29 = versions
        .iter()
        .find(|v| v["version"] == "2.9.0")
        .unwrap_or_else(|| panic!("{explanation:#}"));
    assert_eq!(v29["chosen"], "variant rocm6.4", "{v29:#}");
    assert_eq!(
        v29["kept"][0],
        format!("torch-2.9.0-{TAGS}.whl (variant rocm6.4)")
    );
    let notes = v29["notes"].to_string();
    assert!(notes.contains("bundle their ROCm runtime"), "{notes}");
    assert!(
        notes.contains("strict PEP 825 would choose `null`"),
        "{notes}"
    );
    let builds = v29["builds"].as_array().unwrap();
    let cuda = builds
        .iter()
        .find(|b| b["backend"] == "variant cuda13.0")
        .unwrap();
    assert_eq!(cuda["verdict"], "rejected");
    assert!(
        cuda["reason"].as_str().unwrap().contains("nvidia"),
        "{cuda}"
    );
    // Newest first: 2.9.0 before 2.8.0.
    assert_eq!(versions[0]["version"], "2.9.0");
    // The variant files not served say why; the served one is not listed as dropped.
    let dropped = explanation["dropped"].to_string();
    assert!(dropped.contains("`rocm6.4` was chosen"), "{dropped}");
    assert!(
        !dropped.contains(&format!("{TAGS}-rocm6.4.whl")),
        "{dropped}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_files_the_page_listed_are_served() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let base = format!("http://{}", proxy.addr);
    for (path, status) in [
        // A label the page has no wheel of.
        (
            format!("/files/torch/v/cuda99.9/torch-2.9.0-{TAGS}.whl"),
            404,
        ),
        // A label breaking the grammar.
        (format!("/files/torch/v/CUDA/torch-2.9.0-{TAGS}.whl"), 400),
        // A labelled name where the plain one belongs.
        (
            format!("/files/torch/v/null/torch-2.9.0-{TAGS}-null.whl"),
            400,
        ),
        (
            "/files/torch/v/null/torch-2.9.0-variants.json".to_string(),
            400,
        ),
    ] {
        let (got, body) = get(&format!("{base}{path}")).await;
        assert_eq!(got, status, "{path}: {}", String::from_utf8_lossy(&body));
    }
    // The variants file was read once through the file cache, not once per request.
    let _ = page_files(&format!("{base}/simple/torch/")).await;
    assert_eq!(fake.hits("/whl/variant/torch-2.9.0-variants.json"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variant_aware_installers_get_the_whole_page_through_the_caches() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let base = format!("http://{}", proxy.addr);
    let h100 = token(
        r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
    );
    for prefix in [
        "/variants/simple".to_string(),
        format!("/m/{h100}/variants/simple"),
        "/b/cu128/variants/simple".to_string(),
    ] {
        let files = page_files(&format!("{base}{prefix}/torch/")).await;
        // Every upstream file, unrewritten but for its link.
        assert_eq!(files.len(), LABELS.len() + 2, "{prefix}: {files:?}");
        for label in LABELS {
            let name = format!("torch-2.9.0-{TAGS}-{label}.whl");
            let (_, link, hash) = files.iter().find(|(n, ..)| n == &name).unwrap();
            assert_eq!(link, &format!("/files/torch/{name}"));
            assert_eq!(hash, &sha256(&wheel_bytes(label)));
        }
        let (_, link, _) = files
            .iter()
            .find(|(n, ..)| n == "torch-2.9.0-variants.json")
            .unwrap();
        assert_eq!(link, "/files/torch/variants-json/torch-2.9.0-variants.json");
        let (status, body) = get(&format!("{base}{link}")).await;
        assert_eq!(status, 200);
        assert_eq!(body, variants_json().into_bytes());
    }
    let labelled = format!("/files/torch/torch-2.9.0-{TAGS}-xpu.whl");
    let (status, body) = get(&format!("{base}{labelled}")).await;
    assert_eq!(status, 200);
    assert_eq!(body, wheel_bytes("xpu"));
    // Only variants files of the project, as its page lists them.
    for path in [
        "/files/torch/variants-json/torchvision-0.24.0-variants.json",
        "/files/torch/variants-json/torch-9.9.9-variants.json",
        "/files/torch/variants-json/METADATA",
    ] {
        let (status, _) = get(&format!("{base}{path}")).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = get(&format!("{base}/variants/simple/filelock/")).await;
    assert_eq!(status, 404);
}

/// A variant file the upstream fails to deliver (bytes that do not match the page's hash, a
/// connection cut short, an error status) is the upstream's fault: `502`, never `400`, for the
/// chosen variant's `.metadata`, its wheel and the pass-through variants file alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_fails_a_variant_file_is_a_bad_gateway() {
    use super::fake_upstream::Behaviour;

    let base_len = metadata_bytes("null").len();
    for behaviour in [
        Behaviour::WrongBytes,
        Behaviour::TruncateAfter(base_len / 2),
        Behaviour::Status(500),
    ] {
        let fake = Fake::start().await;
        variant_upstream(&fake);
        let cache = tempfile::tempdir().unwrap();
        let proxy = start_proxy(fake.addr, cache.path()).await;
        let base = format!("http://{}", proxy.addr);
        // The page (and its variants file) read while the upstream still serves.
        let files = page_files(&format!("{base}/simple/torch/")).await;
        let (_, link, _) = files
            .iter()
            .find(|(name, ..)| name.starts_with("torch-2.9.0"))
            .unwrap();
        fake.set(behaviour);
        for path in [
            format!("{link}.metadata"),
            link.clone(),
            "/files/torch/variants-json/torch-2.9.0-variants.json".to_string(),
        ] {
            let response = match reqwest::get(format!("{base}{path}")).await {
                Ok(response) => response,
                // The wheel's response is begun once the upstream answers; a small file that
                // then fails its check before its first byte is sent cuts the connection
                // before the head is flushed. A break all the same: no body, never a whole one
                // that does not verify.
                Err(err)
                    if path == *link
                        && !matches!(behaviour, Behaviour::Status(_))
                        && err.is_request() =>
                {
                    continue;
                }
                Err(err) => panic!("{behaviour:?} {path}: {err}"),
            };
            let status = response.status().as_u16();
            let body = response.bytes().await;
            if path.ends_with("-variants.json") {
                // Read for the page already: served from the cache whatever the upstream.
                assert_eq!(status, 200, "{behaviour:?} {path}");
                assert!(body.is_ok(), "{behaviour:?} {path}");
            } else if status == 200 {
                // Only the wheel, streamed as it downloads, can fail after its headers (bytes
                // that do not verify are known only at the end): the client sees the body
                // break, never a whole body that does not verify.
                assert!(
                    !matches!(behaviour, Behaviour::Status(_)) && !path.ends_with(".metadata"),
                    "{behaviour:?} {path}: 200"
                );
                assert!(body.is_err(), "{behaviour:?} {path}: a whole body");
            } else {
                let body = String::from_utf8_lossy(&body.unwrap()).into_owned();
                assert_eq!(status, 502, "{behaviour:?} {path}: {body}");
                assert!(body.contains('`'), "{behaviour:?} {path}: {body}");
                assert!(!body.contains("127.0.0.1"), "{behaviour:?} {path}: {body}");
            }
        }
    }
}

/// The status page shows the variant the server's machine gets, with the reasons, once the
/// project's page has been fetched (it never fetches one itself); nothing before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_the_variant_choice_with_reasons() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let base = format!("http://{}", proxy.addr);
    let status = || async {
        let (code, body) = get(&format!("{base}/")).await;
        assert_eq!(code, 200);
        String::from_utf8(body).unwrap()
    };
    let before = status().await;
    assert!(!before.contains("id=\"variants\""), "{before}");
    assert_eq!(
        fake.hits("/whl/torch/"),
        0,
        "the status page fetched a page"
    );

    let _ = page_files(&format!("{base}/simple/torch/")).await;
    let after = status().await;
    let block = &after[after
        .find("id=\"variants\"")
        .unwrap_or_else(|| panic!("{after}"))..];
    let block = &block[..block.find("id=\"upstreams\"").unwrap()];
    // The server's machine has no GPU: the null variant, every other label with its reason.
    assert!(
        block.contains("<code>torch</code> 2.9.0</td><td><span class=\"chosen\">null</span>"),
        "{block}"
    );
    assert!(block.contains("<code>cuda13.0</code>: needs"), "{block}");
    // Its `.metadata` (not yet read: the status page does not fetch it) decides nothing.
    assert!(!block.contains("pip 26.2"), "{block}");
    let (_, link, _) = page_files(&format!("{base}/simple/torch/"))
        .await
        .into_iter()
        .find(|(name, ..)| name.starts_with("torch-2.9.0"))
        .unwrap();
    let (code, _) = get(&format!("{base}{link}.metadata")).await;
    assert_eq!(code, 200);
    let with_metadata = status().await;
    assert!(
        with_metadata.contains("pip 26.2 and newer"),
        "{with_metadata}"
    );
}

/// Where the release train's decision departs from strict PEP 825 (an A100 beside a T4 share
/// no `sm_arch`), `/explain/` says which build was served and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_states_the_release_train_decision() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let a100_t4 = token(
        r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"8.0"},{"compute_capability":"7.5"}]}}"#,
    );
    let (status, body) = get(&format!(
        "http://{}/m/{a100_t4}/explain/torch/?format=json",
        proxy.addr
    ))
    .await;
    assert_eq!(status, 200);
    let explanation: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let v29 = explanation["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "2.9.0")
        .unwrap_or_else(|| panic!("{explanation:#}"));
    assert_eq!(v29["chosen"], "variant cuda13.0", "{v29:#}");
    let notes = v29["notes"].to_string();
    assert!(notes.contains("one build across torch 2.9"), "{notes}");
    assert!(
        notes.contains("PEP 825 alone would choose `null`"),
        "{notes}"
    );
}

/// A variants file whose `$schema` names a format the proxy does not read (issue 44 item 2):
/// PEP 825 says its variant wheels are unsupported. None is served, nor chosen by its label;
/// the page keeps the plain wheels, and `/explain/` says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variants_file_of_an_unknown_format_serves_plain_wheels_only() {
    let fake = Fake::start().await;
    let mut file: serde_json::Value = serde_json::from_str(&variants_json()).unwrap();
    file["$schema"] = serde_json::json!("https://variants-schema.wheelnext.dev/v9.0.0.json");
    variant_upstream_with(&fake, &file.to_string());
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let h100 = token(
        r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#,
    );
    let files = page_files(&format!("http://{}/m/{h100}/simple/torch/", proxy.addr)).await;
    assert!(
        !files
            .iter()
            .any(|(name, ..)| name.starts_with("torch-2.9.0")),
        "no variant of 2.9.0 served: {files:?}"
    );
    assert!(
        files
            .iter()
            .any(|(name, ..)| name.starts_with("torch-2.8.0")),
        "the plain wheel stays: {files:?}"
    );
    let explain = String::from_utf8(
        get(&format!(
            "http://{}/m/{h100}/explain/torch/?format=json",
            proxy.addr
        ))
        .await
        .1,
    )
    .unwrap();
    assert!(
        explain.contains("in a format this proxy does not read")
            && explain.contains("v9.0.0.json")
            && explain.contains("only its plain wheels"),
        "{explain}"
    );
}

/// Where the release train's build is one the variants file calls incompatible (rocm6.4 on a
/// machine with ROCm 6.3 installed), `/explain/` says so and names the rule: PyTorch's ROCm
/// wheels bundle their runtime (issue 44 item 3). A machine known by its driver alone (an RTX
/// 5090 on driver 570) gets the CUDA variant of its driver's CUDA version, 12.8, and the notes
/// say where that version comes from (item 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_names_the_rule_where_the_variants_file_is_overridden() {
    let fake = Fake::start().await;
    variant_upstream(&fake);
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, cache.path()).await;
    let v29 = |explanation: &serde_json::Value| {
        explanation["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == "2.9.0")
            .cloned()
            .unwrap_or_else(|| panic!("{explanation:#}"))
    };
    let explain = |machine: &str| {
        let url = format!(
            "http://{}/m/{}/explain/torch/?format=json",
            proxy.addr,
            token(machine)
        );
        async move {
            let (status, body) = get(&url).await;
            assert_eq!(status, 200);
            serde_json::from_slice::<serde_json::Value>(&body).unwrap()
        }
    };

    let rocm_6_3 = explain(
        r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"rocm_version":"6.3.4","gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#,
    )
    .await;
    let version = v29(&rocm_6_3);
    assert_eq!(version["chosen"], "variant rocm6.4", "{version:#}");
    let notes = version["notes"].to_string();
    assert!(
        notes.contains("`rocm6.4` is served although the variants file calls it incompatible here")
            && notes.contains("the ROCm 6.3.4 installed here is not what it runs on")
            && notes.contains("bundle their ROCm runtime"),
        "{notes}"
    );

    let rtx_5090 = explain(
        r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA GeForce RTX 5090","compute_capability":"12.0"}]}}"#,
    )
    .await;
    let version = v29(&rtx_5090);
    assert_eq!(version["chosen"], "variant cuda12.8", "{version:#}");
    let notes = version["notes"].to_string();
    assert!(
        notes.contains("known only from its driver 570.86.10: CUDA 12.8"),
        "{notes}"
    );
}
