//! `wheelgate serve` as a user starts it: the lines it prints before the first request, read
//! from the running binary, then checked against the server itself. The machine is described
//! through a fake system root and the documented overrides (never the host).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Kills the server when the test ends, passed or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wheelgate serve` with `args` and returns it with its first six stdout lines.
fn start(args: &[&str], env: &[(&str, &str)], root: &std::path::Path) -> (Server, Vec<String>) {
    let (server, lines, _rest) = start_reading(args, env, root);
    (server, lines)
}

/// [`start`], with the lines it prints after the first six.
fn start_reading(
    args: &[&str],
    env: &[(&str, &str)],
    root: &std::path::Path,
) -> (Server, Vec<String>, mpsc::Receiver<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
    command
        .arg("serve")
        .args(args)
        .env("WHEELGATE_SYSROOT", root)
        .env("WHEELGATE_PLATFORM", "linux-x86_64")
        .env("WHEELGATE_PROBE_LIBRARIES", "0")
        .env("WHEELGATE_PROBE_COMMANDS", "0")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let lines = (0..6)
        .map(|_| {
            receiver
                .recv_timeout(Duration::from_secs(20))
                .expect("wheelgate serve prints its start lines within 20 s")
        })
        .collect();
    (server, lines, receiver)
}

#[tokio::test]
async fn serve_says_where_for_what_machine_what_build_and_how_to_use_it() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let (_server, lines) = start(
        &[
            "--listen",
            "127.0.0.1:0",
            "--pytorch-url",
            "http://user:secret@127.0.0.1:9/whl",
            "--pypi-url",
            "http://127.0.0.1:9/simple",
            "--cache-dir",
            cache_dir,
        ],
        &[
            ("WHEELGATE_CUDA_DRIVER", "580.65.06"),
            ("WHEELGATE_CUDA_ARCH", "9.0"),
        ],
        root.path(),
    );
    // 1. The address, with the real port of `127.0.0.1:0`.
    let address = lines[0]
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {:?}", lines[0]))
        .to_string();
    assert!(address.starts_with("127.0.0.1:"), "{lines:?}");
    assert_ne!(address, "127.0.0.1:0", "{lines:?}");
    // 2. The machine, from the overrides: driver and GPU.
    assert_eq!(
        lines[1],
        "machine for /simple/ (probed): linux-x86_64; NVIDIA driver 580.65.06: GPU 0 (compute capability 9.0)"
    );
    // 3. Its build for the newest torch of the catalog, said to be the catalog's: torch's live
    // page is read after these lines.
    assert!(
        lines[2].starts_with(
            "its torch build by the catalog's expectation, not the live page (torch 2."
        ) && lines[2].contains("): cu13"),
        "{lines:?}"
    );
    // 4. Upstreams, passwords hidden.
    assert_eq!(
        lines[3],
        "upstreams: PyTorch http://***@127.0.0.1:9/whl, general http://127.0.0.1:9/simple"
    );
    // 5. The cache directory and its size.
    assert_eq!(
        lines[4],
        format!("cache: {cache_dir} (0 files, 0 B of 50.0 GiB limit)")
    );
    // 6. The exact pip line, which works: the server answers on it.
    assert_eq!(
        lines[5],
        format!("pip install torch --index-url http://{address}/simple/")
    );
    let health = reqwest::get(format!("http://{address}/healthz"))
        .await
        .unwrap();
    assert!(health.status().is_success());
}

#[tokio::test]
async fn serve_names_a_configured_machine_and_a_wildcard_listener() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let config = cache.path().join("wheelgate.toml");
    std::fs::write(
        &config,
        format!(
            "cache_dir = {:?}\npytorch_url = \"http://127.0.0.1:9/whl\"\npypi_url = \"http://127.0.0.1:9/simple\"\n\
             [machine]\nplatform = \"linux-x86_64\"\n[machine.amd]\n[[machine.amd.gpus]]\nname = \"MI300X\"\ngfx = \"gfx942\"\n",
            cache.path().join("c").to_str().unwrap()
        ),
    )
    .unwrap();
    let (_server, lines) = start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--listen",
            "0.0.0.0:0",
        ],
        &[],
        root.path(),
    );
    assert_eq!(
        lines[1],
        "machine for /simple/ (from the configuration): linux-x86_64; AMD: GPU 0 MI300X (gfx942)"
    );
    assert!(lines[2].contains("): rocm"), "{lines:?}");
    // A wildcard listener: the pip line uses loopback and says what other hosts use.
    assert!(
        lines[5].starts_with("pip install torch --index-url http://127.0.0.1:")
            && lines[5].ends_with(
                "/simple/ (from other machines: this host's name or address instead of 127.0.0.1)"
            ),
        "{lines:?}"
    );
}

/// `[catalog] extend`: the server runs with the layered catalog; an overlay that breaks the
/// catalog's rules stops the start, naming the file.
#[tokio::test]
async fn serve_starts_with_a_catalog_overlay_or_refuses_a_bad_one() {
    use wheelgate_config::{CatalogConfig, ServeConfig};
    let dir = tempfile::tempdir().unwrap();
    let overlay = dir.path().join("catalog-extra.toml");
    std::fs::write(
        &overlay,
        "[[release]]\ntorch = \"2.16\"\ncompanions = { torchvision = \"0.31\" }\nbackends.cpu = {}\nbackends.cu134 = { sm = \"cu13x\" }\n",
    )
    .unwrap();
    let config = |cache: &str| ServeConfig {
        cache_dir: dir.path().join(cache),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        catalog: CatalogConfig {
            extend: Some(overlay.clone()),
        },
        ..ServeConfig::default()
    };
    let state = wheelgate_server::serve::build_state(config("a"))
        .await
        .unwrap();
    assert_eq!(state.catalog().newest_release().torch.to_string(), "2.16");
    drop(state);

    std::fs::write(&overlay, "[[release]]\ntorch = \"2.16\"\n").unwrap();
    let Err(err) = wheelgate_server::serve::build_state(config("b")).await else {
        panic!("a release without backends started");
    };
    let message = format!(
        "{err}: {}",
        wheelgate_index::error_chain::source_chain(&err)
    );
    assert!(
        message.contains(&overlay.display().to_string()) && message.contains("line 2"),
        "{message}"
    );
}

/// A torch page with a release the built-in catalog lacks (2.16 with `cu134`), for the reload.
async fn torch_216_upstream() -> std::net::SocketAddr {
    use axum::http::header;
    use axum::response::IntoResponse;
    async fn page() -> axum::response::Response {
        let mut html = String::from("<!DOCTYPE html><html><body>\n");
        for version in ["2.16.0+cu134", "2.16.0+cpu", "2.9.0+cpu"] {
            let file = format!("torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl");
            let _ = writeln!(html, "<a href=\"/whl/{file}#sha256=00\">{file}</a><br/>");
        }
        ([(header::CONTENT_TYPE, "text/html")], html).into_response()
    }
    let router = axum::Router::new().route("/whl/torch/", axum::routing::get(page));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

/// `SIGHUP` reloads `[catalog] extend` under load: no request fails, and answers made after it
/// use the new facts (torch 2.16 no longer inferred).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_catalog_overlay_without_failing_a_request() {
    let upstream = torch_216_upstream().await;
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let overlay = dir.path().join("catalog-extra.toml");
    std::fs::write(&overlay, "updated = \"2026-11-25\"\n").unwrap();
    let config = dir.path().join("wheelgate.toml");
    std::fs::write(
        &config,
        format!(
            "pytorch_url = \"http://{upstream}/whl\"\npypi_url = \"http://{upstream}/simple\"\ncache_dir = \"{}\"\n[catalog]\nextend = \"catalog-extra.toml\"\n",
            dir.path().join("cache").display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_string();
    let (server, lines) = tokio::task::block_in_place(|| {
        start(
            &["--listen", "127.0.0.1:0", "--config", &config],
            &[
                ("WHEELGATE_CUDA_DRIVER", "580.65.06"),
                ("WHEELGATE_CUDA_ARCH", "9.0"),
            ],
            root.path(),
        )
    });
    let address = lines[0]
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_string();
    let base = format!("http://{address}");
    let client = reqwest::Client::new();
    let inferred_total = |client: reqwest::Client, base: String| async move {
        get_text(&client, &format!("{base}/metrics"))
            .await
            .lines()
            .find_map(|l| {
                l.strip_prefix("wheelgate_inferred_answers_total ")?
                    .parse::<u64>()
                    .ok()
            })
            .unwrap()
    };
    let explain = |client: reqwest::Client, base: String| async move {
        get_text(&client, &format!("{base}/explain/torch/?format=json")).await
    };
    assert!(
        explain(client.clone(), base.clone())
            .await
            .contains("torch 2.16 is not in the catalog")
    );

    // Load: four clients asking for torch's page the whole time.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut loads = Vec::new();
    for _ in 0..4 {
        let url = format!("{base}/simple/torch/");
        loads.push(tokio::spawn(load(
            client.clone(),
            url,
            std::sync::Arc::clone(&stop),
        )));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(inferred_total(client.clone(), base.clone()).await > 0);
    std::fs::write(
        &overlay,
        "updated = \"2026-11-25\"\n[[release]]\ntorch = \"2.16\"\nbackends.cpu = {}\nbackends.cu134 = { sm = \"cu13x\" }\n",
    )
    .unwrap();
    let pid = server.0.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    // The reload is in force once 2.16 is no longer inferred.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while explain(client.clone(), base.clone())
        .await
        .contains("torch 2.16 is not in the catalog")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the reload never took effect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Requests that began before the reload have ended by now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = inferred_total(client.clone(), base.clone()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answered = 0;
    for load in loads {
        let (ok, failed) = load.await.unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        answered += ok;
    }
    assert!(answered > 20, "{answered} requests under load");
    // Pages served after the reload rest on nothing inferred.
    assert_eq!(inferred_total(client.clone(), base.clone()).await, after);
    drop(server);
}

async fn get_text(client: &reqwest::Client, url: &str) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

/// Asks for `url` until `stop`: how many answered 200, and every failure.
async fn load(
    client: reqwest::Client,
    url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (u32, Vec<String>) {
    let (mut ok, mut failed) = (0u32, Vec::new());
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match client.get(&url).send().await {
            Ok(response) if response.status().is_success() => ok += 1,
            Ok(response) => failed.push(response.status().to_string()),
            Err(err) => failed.push(err.to_string()),
        }
    }
    (ok, failed)
}

/// After the first reads, `serve` says what torch's live page serves: here a version newer than
/// every release in the catalog, published for Linux only as a CUDA build, which a machine
/// without a GPU gets as its CPU build of last resort (what `pip install torch` then installs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_says_what_the_live_torch_page_serves_after_reading_it() {
    let fake = super::fake_upstream::Fake::start().await;
    super::status_page::live_pages(&fake);
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (pytorch, pypi) = (fake.url("/whl"), fake.url("/simple"));
    let (_server, lines, rest) = tokio::task::block_in_place(|| {
        start_reading(
            &[
                "--listen",
                "127.0.0.1:0",
                "--pytorch-url",
                &pytorch,
                "--pypi-url",
                &pypi,
                "--cache-dir",
                cache.path().to_str().unwrap(),
            ],
            &[],
            root.path(),
        )
    });
    // Before the read: the catalog's expectation, said to be one.
    assert!(
        lines[2].starts_with(
            "its torch build by the catalog's expectation, not the live page (torch 2.14,"
        ) && lines[2].ends_with("): cpu"),
        "{lines:?}"
    );
    let torch = tokio::task::block_in_place(|| {
        loop {
            let line = rest
                .recv_timeout(Duration::from_secs(20))
                .expect("serve says what torch's live page serves within 20 s");
            if line.starts_with("torch ") {
                break line;
            }
        }
    });
    assert!(
        torch.starts_with(
            "torch on /simple/ (the live page): 2.16.0 cu134, a CPU build of last resort (no NVIDIA GPU on this machine); elsewhere macos-arm64 cpu"
        ) && torch.ends_with("; why: /explain/torch/"),
        "{torch}"
    );
    assert!(!torch.contains("2.14"), "{torch}");
}
