//! The status page at `/`, rendered by a real browser: Debian's headless Chromium
//! (`scripts/browser-setup` installs it) loads the page from a running server, dumps the DOM and
//! takes a screenshot, kept at `target/tmp/status-page.png` for people to look at.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::StatusCode;
use wheelgate_resolver::{Catalog, Machine, Policy, select_release};

use super::ops::{Fake, start};

const MACHINE: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","x86_64_level":3,
  "nvidia":{"driver_version":"580.65.06","cuda_version":"13.0",
  "gpus":[{"name":"NVIDIA H100 80GB HBM3 <b>","compute_capability":"9.0"}]}}"#;

fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("`chromium` is not installed; run scripts/browser-setup (Debian's chromium package)")
    })
}

/// Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=<png>`).
async fn browse(url: &str, mode: &str, profile: &Path) -> String {
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                &format!("--user-data-dir={}", profile.display()),
                "--window-size=1280,1600",
                mode,
                url,
            ])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("chromium finishes within 90 s")
    .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_the_machine_its_choices_and_how_to_use_it() {
    let chromium = chromium();
    assert!(chromium.is_file());
    let fake = Fake::start(10 * 1024, None).await;
    let machine: Machine = serde_json::from_str(MACHINE).unwrap();
    let proxy = start(format!("http://{}", fake.addr), |config| {
        config.machine = Some(machine.clone());
    })
    .await;
    // One page fetched, so the general upstream shows a success.
    let page = reqwest::get(proxy.url("/simple/demo/")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);

    let base = format!("http://{}", proxy.addr);
    let profile = tempfile::tempdir().unwrap();
    let dom = browse(&format!("{base}/"), "--dump-dom", profile.path()).await;

    // The machine.
    assert!(dom.contains("linux-x86_64"), "{dom}");
    assert!(dom.contains("580.65.06"), "{dom}");
    assert!(
        dom.contains("NVIDIA H100 80GB HBM3 &lt;b&gt; (compute capability 9.0)"),
        "{dom}"
    );
    assert!(
        !dom.contains("HBM3 <b>"),
        "markup from outside must be escaped"
    );
    // Its choice for the newest torch, as the resolver makes it.
    let expected = select_release(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        "torch",
        None,
    );
    let backend = expected
        .decision
        .chosen
        .expect("a build for an H100")
        .to_string();
    // No page of torch read yet: the catalog's expectation, said to be one.
    assert!(
        dom.contains(&format!(
            "<td><a href=\"/explain/torch/\"><code>torch</code></a></td><td><span class=\"muted\">\
             not read yet; the catalog's expectation for torch {}</span></td><td><span class=\"chosen\">{backend}</span>",
            expected.torch
        )),
        "torch should show {backend}: {dom}"
    );
    assert!(dom.contains(&format!("torch {}", expected.torch)), "{dom}");
    // How to use it, with the address the browser used.
    assert!(
        dom.contains(&format!("pip install torch --index-url {base}/simple/")),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("index-url = {base}/simple/")),
        "{dom}"
    );
    assert!(dom.contains("wheelgate detect --token"), "{dom}");
    // Every installer's configuration (`pip-config --format`), for the same URL.
    for expected in [
        format!(
            "[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"{base}/simple/\"\ndefault = true"
        ),
        format!("poetry source add --priority=primary wheelgate {base}/simple/"),
        format!("[[tool.pdm.source]]\nname = \"pypi\"\nurl = \"{base}/simple/\""),
        format!("UV_DEFAULT_INDEX={base}/simple/"),
    ] {
        assert!(dom.contains(&expected), "`{expected}` missing: {dom}");
    }
    // Upstream and cache health.
    assert!(dom.contains("<span class=\"ok\">ok</span>"), "{dom}");
    assert!(dom.contains("Index pages cached</th><td>1<"), "{dom}");

    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&screenshot);
    browse(
        &format!("{base}/"),
        &format!("--screenshot={}", screenshot.display()),
        profile.path(),
    )
    .await;
    let png = std::fs::read(&screenshot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(png.len() > 20_000, "a blank page is a small PNG");
}

/// A torch page whose newest version (2.16.0, newer than every release in the catalog) is
/// published only as a CUDA build for Linux, with a CPU build of an older version and a macOS
/// wheel of the newest; a torchaudio page that stops at 2.11, as torchaudio did.
pub fn live_pages(fake: &super::fake_upstream::Fake) {
    let link = |file: &str| {
        format!(
            "<a href=\"/whl/{file}#sha256={}\">{file}</a><br/>\n",
            "0".repeat(64)
        )
    };
    let torch: String = [
        "torch-2.16.0+cu134-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.16.0-cp312-none-macosx_11_0_arm64.whl",
        "torch-2.14.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.14.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
    ]
    .iter()
    .map(|file| link(file))
    .collect();
    fake.add_page(
        "/whl/torch/",
        format!("<!DOCTYPE html><html><body>\n{torch}</body></html>"),
    );
    let audio: String = [
        "torchaudio-2.11.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torchaudio-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
    ]
    .iter()
    .map(|file| link(file))
    .collect();
    fake.add_page(
        "/whl/torchaudio/",
        format!("<!DOCTYPE html><html><body>\n{audio}</body></html>"),
    );
}

/// The status page says what `/simple/` serves, from the live pages once read: the newest
/// version torch's page serves (not the catalog's newest release), its CUDA build kept as the
/// CPU build of last resort on a machine without a GPU, the macOS build, and no torchaudio for
/// that line. Before any page is read it gives the catalog's expectation, said to be one.
#[tokio::test]
async fn the_status_page_describes_the_live_pages_not_the_catalog_alone() {
    let fake = super::fake_upstream::Fake::start().await;
    live_pages(&fake);
    let proxy = start(fake.url(""), |config| {
        config.machine = Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap());
    })
    .await;
    let status = |proxy_url: String| async move {
        let response = reqwest::get(proxy_url).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.unwrap()
    };

    // Nothing read yet: the catalog's expectation, labelled, and no upstream asked for it.
    let before = status(proxy.url("/")).await;
    assert!(
        before.contains("torch's live page has not been read yet")
            && before.contains("the catalog's expectation for torch 2.14"),
        "{before}"
    );
    assert!(
        before.contains("<span class=\"bad\">no torchaudio for torch 2.14</span> in the catalog"),
        "{before}"
    );
    assert_eq!(fake.hits_under("/"), 0, "the status page asked an upstream");

    // What pip reads.
    for project in ["torch", "torchaudio"] {
        let page = reqwest::get(proxy.url(&format!("/simple/{project}/")))
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
    }
    let served = reqwest::get(proxy.url("/simple/torch/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(served.contains("torch-2.16.0+cu134"), "{served}");
    let hits = fake.hits_under("/");

    let after = status(proxy.url("/")).await;
    assert_eq!(
        fake.hits_under("/"),
        hits,
        "the status page asked an upstream"
    );
    assert!(
        after.contains("serves it for torch 2.16 (torch's live page)"),
        "{after}"
    );
    assert!(
        after.contains(
            "<td><a href=\"/explain/torch/\"><code>torch</code></a></td><td>2.16.0</td>\
             <td><span class=\"chosen\">cu134</span> <span class=\"bad\""
        ) && after.contains(">CPU build of last resort</span>"),
        "{after}"
    );
    assert!(
        after.contains("macos-arm64: <span class=\"chosen\">cpu</span>"),
        "{after}"
    );
    // torchaudio: its page stops at 2.11, and says so rather than list a build for 2.16.
    assert!(
        after.contains(
            "<td><a href=\"/explain/torchaudio/\"><code>torchaudio</code></a></td>\
             <td><span class=\"bad\">no torchaudio for torch 2.16</span> on the live page; \
             its newest: 2.11.0 (torch 2.11's)"
        ),
        "{after}"
    );
    // torchvision's page was never read: the catalog's, said so.
    assert!(
        after.contains("<td><a href=\"/explain/torchvision/\"><code>torchvision</code></a></td><td><span class=\"muted\">not read yet"),
        "{after}"
    );
}
