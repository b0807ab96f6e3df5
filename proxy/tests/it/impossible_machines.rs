//! A machine that cannot exist (an NVIDIA GPU on a Mac, a Radeon on Windows, compute
//! capability 2.1) is refused wherever a machine comes from the outside, each in its own words:
//! a 400 for `/m/<token>/`, a start error naming the `[[networks]]` rule or the configured
//! `machine`, a `select --machine` error naming the file. A doubtful one (an unknown `gfx9999`)
//! is served, and a probed machine (overrides included) only warned about. And
//! `trusted_proxies` without a `[[networks]]` rule is a warning at start.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use axum::http::StatusCode;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::Fake;

const MAC_WITH_H100: &str =
    r#"{ platform = "macos-arm64", nvidia = { gpus = [{ compute_capability = "9.0" }] } }"#;

fn torch_page() -> String {
    let mut html = String::new();
    for backend in ["cpu", "rocm6.4"] {
        let name = format!("torch-2.9.0+{backend}-cp312-cp312-manylinux_2_28_x86_64.whl");
        let _ = writeln!(
            html,
            "<a href=\"/whl/{backend}/{}#sha256={}\">{name}</a><br/>",
            name.replace('+', "%2B"),
            "0".repeat(64)
        );
    }
    html
}

async fn get(url: &str) -> (StatusCode, String) {
    let response = reqwest::get(url).await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn a_token_of_a_machine_that_cannot_exist_is_a_400_naming_the_fact() {
    let upstream = Fake::start().await;
    upstream.add_page("/whl/torch/", torch_page());
    let cache = tempfile::tempdir().unwrap();
    let config = ServeConfig {
        pytorch_url: upstream.url("/whl"),
        pypi_url: upstream.url("/simple"),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_until(listener, state, async move {
        let _ = stopped.await;
    }));

    for (path, fact) in [
        (
            "/m/1-ma-n-s9.0/simple/torch/",
            "a `macos-arm64` machine cannot have NVIDIA GPUs",
        ),
        (
            "/m/1-wx-m-k1100/simple/torch/",
            "a `windows-x86_64` machine cannot use its AMD GPU `gfx1100` through ROCm",
        ),
        (
            "/m/1-lx-n580.65.06-s2.1/explain/torch/",
            "NVIDIA GPU 1 has compute capability `2.1`",
        ),
    ] {
        let (status, body) = get(&format!("{base}{path}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(
            body.contains("describes a machine that cannot exist") && body.contains(fact),
            "{path}: {body}"
        );
    }
    // Doubtful, not impossible: served, with no ROCm build for a gfx target no build lists.
    let (status, body) = get(&format!("{base}/m/1-lx-m-k9999/simple/torch/")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("torch-2.9.0+cpu-"), "{body}");
    assert!(!body.contains("+rocm6.4-"), "{body}");
}

/// `wheelgate serve` with `config` as its configuration file (offline: nothing is fetched).
fn serve_with(config: &str) -> (Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wheelgate.toml");
    std::fs::write(&path, format!("offline = true\n{config}")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .env("WHEELGATE_PLATFORM", "linux-x86_64")
        .env("WHEELGATE_PROBE_LIBRARIES", "0")
        .env("WHEELGATE_PROBE_COMMANDS", "0")
        .env_remove("RUST_LOG");
    (command, dir)
}

fn refused(output: &Output) -> String {
    assert!(!output.status.success(), "started");
    assert!(output.stdout.is_empty(), "nothing served");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_networks_rule_or_configured_machine_that_cannot_exist_stops_the_start() {
    let (mut command, _dir) = serve_with(&format!(
        "[[networks]]\nname = \"macs\"\ncidr = [\"10.3.0.0/16\"]\nmachine = {MAC_WITH_H100}\n"
    ));
    let stderr = refused(&command.output().unwrap());
    assert!(
        stderr.contains("the [[networks]] rule `macs` names a machine that cannot exist")
            && stderr.contains("a `macos-arm64` machine cannot have NVIDIA GPUs"),
        "{stderr}"
    );

    let (mut command, _dir) = serve_with(
        "[machine]\nplatform = \"windows-x86_64\"\n[machine.amd]\n[[machine.amd.gpus]]\ngfx = \"gfx1100\"\n",
    );
    let stderr = refused(&command.output().unwrap());
    assert!(
        stderr.contains("the configured `machine` cannot exist")
            && stderr.contains("a `windows-x86_64` machine cannot use its AMD GPU `gfx1100`"),
        "{stderr}"
    );
}

#[test]
fn select_names_the_machine_file_that_cannot_exist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mac.json");
    std::fs::write(
        &path,
        r#"{"platform":"macos-arm64","nvidia":{"gpus":[{"compute_capability":"9.0"}]}}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_wheelgate"))
        .args(["select", "torch==2.9.0", "--machine"])
        .arg(&path)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = refused(&output);
    assert!(
        stderr.contains(&format!(
            "the machine file `{}` describes a machine that cannot exist",
            path.display()
        )) && stderr.contains("a `macos-arm64` machine cannot have NVIDIA GPUs"),
        "{stderr}"
    );
}

/// The server's stderr lines up to the first that holds `wanted`, which is last; all of them,
/// without it, when the server ends or is silent for 20 s.
fn stderr_until(command: &mut Command, wanted: &str) -> Vec<String> {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = receiver.recv_timeout(Duration::from_secs(20)) {
        let done = line.contains(wanted);
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

#[test]
fn trusted_proxies_without_a_networks_rule_is_a_warning_at_start() {
    let wanted = "`trusted_proxies` is set but no [[networks]] rule is";
    let (mut command, _dir) = serve_with("trusted_proxies = [\"10.0.0.5\"]\n");
    let lines = stderr_until(&mut command, wanted);
    let line = lines.last().expect("a line on stderr");
    assert!(
        line.contains(wanted) && line.contains("WARN") && line.contains("10.0.0.5"),
        "{lines:?}"
    );

    // With a rule, forwarded headers are used: no warning before the rule is logged.
    let (mut command, _dir) = serve_with(
        "trusted_proxies = [\"10.0.0.5\"]\n[[networks]]\ncidr = [\"10.2.0.0/16\"]\ntoken = \"1-lx\"\n",
    );
    command.env("RUST_LOG", "info");
    let lines = stderr_until(&mut command, "client network");
    assert!(
        lines
            .last()
            .is_some_and(|line| line.contains("client network")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|line| line.contains(wanted)), "{lines:?}");
}

#[test]
fn a_probed_machine_that_cannot_exist_is_a_warning_naming_the_overrides() {
    // The host exists, so the server starts; the overrides that describe the impossible are said.
    let (mut command, _dir) = serve_with("");
    command
        .env("WHEELGATE_PLATFORM", "windows-x86_64")
        .env("WHEELGATE_AMD_GFX", "gfx1100");
    let lines = stderr_until(&mut command, "cannot use its AMD GPU `gfx1100`");
    let line = lines.last().expect("a line on stderr");
    assert!(
        line.contains("cannot use its AMD GPU `gfx1100`")
            && line.contains("WARN")
            && line.contains("WHEELGATE_* overrides"),
        "{lines:?}"
    );
}
