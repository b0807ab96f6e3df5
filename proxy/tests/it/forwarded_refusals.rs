//! Issue 13's "a logged refusal at request time": `wheelgate serve` itself (the binary, with its
//! log subscriber) is sent forwarded headers it must not use, and says so on standard error,
//! once a minute per kind of refusal, while the client keeps its peer address's rule.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::fake_upstream::Fake;

/// A `wheelgate serve` child process, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line of `lines` containing `needle`, waiting at most 10 s.
fn wait_for(lines: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(line) => seen.push(line),
            Err(err) => panic!(
                "no line with `{needle}` ({err}); the server wrote:\n{}",
                seen.join("\n")
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_it_must_not_use_are_refused_and_logged() {
    let upstream = Fake::start().await;
    let wheel = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";
    upstream.add_page(
        "/whl/torch/",
        format!(
            "<!DOCTYPE html>\n<html><body><a href=\"/whl/cpu/{}#sha256={}\">{wheel}</a></body></html>\n",
            wheel.replace('+', "%2B"),
            "0".repeat(64)
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wheelgate.toml");
    // 127.0.0.1 (this test) is a client of `local`, and trusts only 10.0.0.5 as a proxy.
    std::fs::write(
        &path,
        format!(
            "pytorch_url = \"{}\"\npypi_url = \"{}\"\ntrusted_proxies = [\"10.0.0.5\"]\n\
             machine = {{ platform = \"linux-x86_64\" }}\n\
             [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\nbackend = \"cpu\"\n\
             [[networks]]\nname = \"local\"\ncidr = [\"127.0.0.0/8\"]\ntoken = \"1-lx-g2.36\"\n",
            upstream.url("/whl"),
            upstream.url("/simple")
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wheelgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let _server = Server(child);
    let first = BufReader::new(stdout).lines().next().unwrap().unwrap();
    let base = first
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no address in `{first}`"))
        .trim_end_matches('/')
        .to_string();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });

    let explain = |header: &'static str, value: &'static str| {
        let url = format!("{base}/explain/torch/?format=json");
        async move {
            let body = reqwest::Client::new()
                .get(url)
                .header(header, value)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let explanation: serde_json::Value = serde_json::from_str(&body).unwrap();
            explanation["client"].clone()
        }
    };
    let mut seen = Vec::new();
    // From a peer that is not a trusted proxy: ignored, logged, the peer's rule kept.
    let client = explain("x-forwarded-for", "10.1.2.3").await;
    assert_eq!(client["rule"], "local", "{client}");
    let line = wait_for(&lines, "which is not in `trusted_proxies`", &mut seen);
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains("ignored `X-Forwarded-For` from `127.0.0.1`"),
        "{line}"
    );
    // The same again within the minute: not another warning (the throttle), the rule the same.
    let client = explain("forwarded", "for=10.1.2.3").await;
    assert_eq!(client["rule"], "local", "{client}");
    let client = explain("x-forwarded-for", "10.1.2.3").await;
    assert_eq!(client["rule"], "local", "{client}");
    std::thread::sleep(Duration::from_millis(300));
    let repeated: Vec<String> = lines
        .try_iter()
        .filter(|line| line.contains("not in `trusted_proxies`"))
        .collect();
    assert!(repeated.is_empty(), "warned again: {repeated:?}");
}
