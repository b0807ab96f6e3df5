//! A network without the PyTorch index (`pytorch_index = false`, `--no-pytorch-index`,
//! `WHEELGATE_NO_PYTORCH_INDEX=true`): the PyTorch projects PyTorch publishes on PyPI too
//! (torch, xformers) come from the general index alone, selected as ever; a name only the
//! PyTorch index publishes (`pytorch-triton`) answers 404 naming the setting, and the general
//! index is never asked for it, though a squatter there has it. A fake PyTorch index at
//! `pytorch_url` counts every request that reaches it: none may.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::Command;

use axum::http::{StatusCode, header};
use wheelgate_config::ServeConfig;
use wheelgate_server::AppState;
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::{Fake, sha256};

/// Driver 570 and an H100: PyPI's plain torch 2.9.0 and 2.10.0 (cu128, the releases' default
/// builds) run on it.
const DRIVER_570: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"9.0"}]}}"#;
const PLATFORM: &str = "manylinux_2_28_x86_64";
/// PyPI's xformers 0.0.33 is one abi3 wheel per platform, its metadata pinning torch 2.9.0.
const XFORMERS: &str = "xformers-0.0.33-cp39-abi3-manylinux_2_28_x86_64.whl";
const SQUATTED: &str = "pytorch_triton-99.0-py3-none-any.whl";

fn torch(version: &str) -> String {
    format!("torch-{version}-cp312-cp312-{PLATFORM}.whl")
}

/// A PEP 503 page of `files` (name, bytes) on `fake`, each file served under `/files/` and
/// each wheel's PEP 658 metadata (`metadata`, when given) beside it.
fn publish(fake: &Fake, project: &str, files: &[(String, Vec<u8>)], metadata: Option<&str>) {
    let mut html = String::from("<!DOCTYPE html><html><body>\n");
    for (name, bytes) in files {
        let path = format!("/files/{name}");
        fake.add_file(&path, bytes);
        let mut core = String::new();
        if let Some(text) = metadata {
            fake.add_file(&format!("{path}.metadata"), text.as_bytes());
            core = format!(" data-core-metadata=\"sha256={}\"", sha256(text.as_bytes()));
        }
        let _ = writeln!(
            html,
            "<a href=\"{path}#sha256={}\"{core}>{name}</a><br/>",
            sha256(bytes)
        );
    }
    html.push_str("</body></html>\n");
    fake.add_page(&format!("/simple/{project}/"), html.clone());
    fake.add_page(&format!("/whl/{project}/"), html);
}

struct Network {
    /// At `pytorch_url`: it holds torch and pytorch-triton, so anything asked of it would show.
    pytorch: Fake,
    /// At `pypi_url`: torch's default builds, xformers, and a squatted `pytorch-triton`.
    general: Fake,
    proxy: SocketAddr,
    state: AppState,
    _cache: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Network {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.proxy)
    }
}

/// The two fakes and a server in front of them, `edit` applied to its configuration.
async fn network(edit: impl FnOnce(&mut ServeConfig)) -> Network {
    let pytorch = Fake::start().await;
    publish(
        &pytorch,
        "torch",
        &[
            (torch("2.9.0+cu128"), b"pytorch index cu128".to_vec()),
            (torch("2.9.0+cu126"), b"pytorch index cu126".to_vec()),
        ],
        None,
    );
    publish(
        &pytorch,
        "pytorch-triton",
        &[(
            format!("pytorch_triton-3.5.0-cp312-cp312-{PLATFORM}.whl"),
            b"triton".to_vec(),
        )],
        None,
    );
    let general = Fake::start().await;
    publish(
        &general,
        "torch",
        &[
            (torch("2.9.0"), b"pypi torch 2.9.0".to_vec()),
            (torch("2.10.0"), b"pypi torch 2.10.0".to_vec()),
        ],
        None,
    );
    publish(
        &general,
        "xformers",
        &[(XFORMERS.to_string(), b"pypi xformers".to_vec())],
        Some(
            "Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.33\nRequires-Dist: torch==2.9.0\n",
        ),
    );
    publish(
        &general,
        "pytorch-triton",
        &[(SQUATTED.to_string(), b"a squatter".to_vec())],
        None,
    );
    let cache = tempfile::tempdir().unwrap();
    let mut config = ServeConfig {
        pytorch_url: pytorch.url("/whl"),
        pypi_url: general.url("/simple"),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(DRIVER_570).unwrap()),
        ..ServeConfig::default()
    };
    edit(&mut config);
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_until(listener, state.clone(), async move {
        let _ = stopped.await;
    }));
    Network {
        pytorch,
        general,
        proxy,
        state,
        _cache: cache,
        _stop: stop,
    }
}

fn no_pytorch_index(config: &mut ServeConfig) {
    config.pytorch_index = false;
}

async fn get(url: &str) -> (StatusCode, String) {
    let response = reqwest::Client::new()
        .get(url)
        .header(header::ACCEPT, "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

fn filenames(json: &str) -> Vec<String> {
    let page: serde_json::Value = serde_json::from_str(json).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn torch_and_xformers_come_from_the_general_index_alone() {
    let network = network(no_pytorch_index).await;
    let (status, body) = get(&network.url("/simple/torch/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Selected as when the PyTorch index is down: each release's default build, which runs
    // under driver 570.
    assert_eq!(
        filenames(&body),
        [torch("2.9.0"), torch("2.10.0")],
        "{body}"
    );
    let (_, explain) = get(&network.url("/explain/torch/?format=json")).await;
    let explain: serde_json::Value = serde_json::from_str(&explain).unwrap();
    let sources: Vec<&str> = explain["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["pypi"], "{explain}");
    // Its files too.
    let wheel = reqwest::get(network.url(&format!("/files/torch/{}", torch("2.10.0"))))
        .await
        .unwrap();
    assert_eq!(wheel.status(), StatusCode::OK);
    assert_eq!(&wheel.bytes().await.unwrap()[..], b"pypi torch 2.10.0");
    // xformers, published on PyPI by its own organisation, is PyPI's now: bound to the torch
    // build its metadata pins, as from the PyTorch index.
    let (status, body) = get(&network.url("/simple/xformers/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), [XFORMERS], "{body}");
    assert!(network.general.hits("/simple/torch/") >= 1);
    assert!(network.general.hits("/simple/xformers/") >= 1);
    assert_eq!(
        network.pytorch.hits_under("/"),
        0,
        "the PyTorch index was asked"
    );
    let (_, metrics) = get(&network.url("/metrics")).await;
    assert!(!metrics.contains("source=\"pytorch\""), "{metrics}");
}

#[tokio::test]
async fn a_name_only_the_pytorch_index_publishes_answers_404_naming_the_setting() {
    let network = network(no_pytorch_index).await;
    for path in ["/simple/pytorch-triton/", "/explain/pytorch-triton/"] {
        let (status, body) = get(&network.url(path)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(
            body.contains("`pytorch-triton` is published only on the PyTorch index")
                && body.contains("`pytorch_index = false`")
                && body.contains("never looked up on the general index"),
            "{path}: {body}"
        );
    }
    // A file of it, by the squatter's name: nothing to look it up on either.
    let (status, body) = get(&network.url(&format!("/files/pytorch-triton/{SQUATTED}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(network.general.hits_under("/simple/pytorch-triton/"), 0);
    assert_eq!(network.general.hits_under("/files/pytorch_triton"), 0);
    assert_eq!(
        network.pytorch.hits_under("/"),
        0,
        "the PyTorch index was asked"
    );
}

#[tokio::test]
async fn the_start_lines_the_status_page_and_the_first_reads_say_there_is_none() {
    let network = network(no_pytorch_index).await;
    let lines = wheelgate::cli::serve::start_lines(&network.state, network.proxy);
    let upstreams = lines
        .iter()
        .find(|line| line.starts_with("upstreams: "))
        .unwrap();
    assert!(
        upstreams.starts_with("upstreams: PyTorch none (`pytorch_index = false`: ")
            && upstreams.ends_with(&format!(", general {}", network.general.url("/simple"))),
        "{upstreams}"
    );
    let (status, page) = get(&network.url("/")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("<td>pytorch</td>") && page.contains("none on this network"),
        "{page}"
    );
    assert!(!page.contains(&network.pytorch.url("/whl")), "{page}");
    let reads = wheelgate_index::sources::first_read::first_read_lines(
        &network.state.sources,
        &network.state.index,
        &network.state.client,
    )
    .await;
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert!(reads[0].starts_with("source `pypi`"), "{reads:?}");
    assert_eq!(
        network.pytorch.hits_under("/"),
        0,
        "the PyTorch index was asked"
    );
}

#[tokio::test]
async fn with_a_pytorch_index_the_same_network_asks_it_and_never_the_squatter() {
    // The contrast: the fakes above see what the setting spares them.
    let network = network(|_| {}).await;
    let (status, body) = get(&network.url("/simple/pytorch-triton/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body.contains(SQUATTED), "{body}");
    let (status, body) = get(&network.url("/simple/torch/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("2.9.0+cu128"), "{body}");
    assert!(network.pytorch.hits("/whl/torch/") >= 1);
    assert_eq!(network.general.hits_under("/simple/pytorch-triton/"), 0);
}

#[tokio::test]
async fn with_the_pytorch_index_unreachable_xformers_is_served_from_pypi() {
    // Before xformers joined `published_on_pypi`, this answered 502.
    let network = network(|config| config.pytorch_url = "http://127.0.0.1:9/whl".into()).await;
    let (status, body) = get(&network.url("/simple/xformers/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), [XFORMERS], "{body}");
}

#[test]
fn the_environment_variable_says_it_as_the_flag_does() {
    let cache = tempfile::tempdir().unwrap();
    let show = |env: Option<&str>, flag: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
        command
            .args(["config", "show", "--cache-dir"])
            .arg(cache.path())
            .env_remove("WHEELGATE_NO_PYTORCH_INDEX")
            .env_remove("WHEELGATE_CONFIG");
        if flag {
            command.arg("--no-pytorch-index");
        }
        if let Some(value) = env {
            command.env("WHEELGATE_NO_PYTORCH_INDEX", value);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let text = show(Some("true"), false);
    assert!(
        text.contains("pytorch_index = false  # env WHEELGATE_NO_PYTORCH_INDEX")
            && text.contains("#   pytorch: none (`pytorch_index = false`"),
        "{text}"
    );
    let text = show(Some("false"), true);
    assert!(
        text.contains("pytorch_index = false  # flag --no-pytorch-index"),
        "{text}"
    );
    let text = show(None, false);
    assert!(text.contains("pytorch_index = true  # default"), "{text}");
    assert!(!text.contains("#   pytorch: none"), "{text}");
}
