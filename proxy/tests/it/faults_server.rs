//! The server against misbehaving clients and operators (issue 10, items 5 and 9, and the minor
//! items): slow-header, silent and idle connections are closed, a connection cap keeps the
//! server answering, a second server on one cache directory is refused, and control characters
//! in a redirect route are a 400.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wheelgate_server::serve::{StartError, build_state};

use super::proxy_under_test::{Proxy, config, get, logs, metric, start};
use super::rogue_upstream::Rogue;

/// Whether the server closed `stream` (a read returns end of file or an error).
async fn closed_by_server(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            // A 408 or similar before closing is fine.
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// Slow-header, silent and idle keep-alive connections, `count` of each kind, held open.
async fn slowloris(proxy: &Proxy, count: usize) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for i in 0..count * 3 {
        let Ok(mut stream) = TcpStream::connect(proxy.addr).await else {
            continue;
        };
        match i % 3 {
            // Silent: connects and sends nothing.
            0 => {}
            // Slow headers: a request line and half a header, never finished.
            1 => {
                let _ = stream
                    .write_all(b"GET /simple/ HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                    .await;
            }
            // Idle keep-alive: one complete request, then nothing.
            _ => {
                let _ = stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await;
            }
        }
        held.push(stream);
    }
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_silent_and_idle_connections_are_closed_and_others_stay_fast() {
    logs();
    let rogue = Rogue::start().await;
    let proxy = start(&rogue, |c| c.limits.header_read_timeout_secs = 1).await;
    let mut held = slowloris(&proxy, 100).await;
    assert_eq!(held.len(), 300);
    // Normal clients meanwhile: fast.
    for _ in 0..20 {
        let (status, _, took) = get(&proxy.url("/healthz")).await;
        assert_eq!(status, 200);
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
    // Every kind is closed by the server within the header timeout (1 s) and a margin.
    let started = Instant::now();
    for stream in &mut held {
        assert!(
            closed_by_server(stream, Duration::from_secs(3)).await,
            "a connection is still open after {:?}",
            started.elapsed()
        );
    }
    assert!(metric(&proxy, "wheelgate_connections_timed_out_total").await >= 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_the_connection_cap_the_server_keeps_answering_and_says_so() {
    logs();
    let rogue = Rogue::start().await;
    let proxy = start(&rogue, |c| {
        c.limits.header_read_timeout_secs = 1;
        c.limits.max_connections = 32;
    })
    .await;
    let _held = slowloris(&proxy, 40).await;
    // Past the cap, new clients wait in the kernel's queue until slots free: answered within
    // the header timeout and a margin, never refused.
    let started = Instant::now();
    let (status, _, _) = get(&proxy.url("/healthz")).await;
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(metric(&proxy, "wheelgate_connections_limit_reached_total").await >= 1);
}

#[tokio::test]
async fn a_second_server_on_the_same_cache_directory_is_refused_and_changes_nothing() {
    logs();
    let rogue = Rogue::start().await;
    let first = start(&rogue, |c| c.listen = "127.0.0.1:45678".parse().unwrap()).await;
    // A download of the first server, in flight.
    let part = first.cache.path().join("files").join(format!(
        "sha256-{}.{}.0.part",
        "a".repeat(64),
        std::process::id()
    ));
    std::fs::write(&part, b"half a wheel").unwrap();
    let err = build_state(config(&rogue, first.cache.path()))
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, StartError::Locked(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("pid {}", std::process::id()))
            && message.contains("127.0.0.1:45678")
            && message.contains("--cache-dir"),
        "{message}"
    );
    assert!(part.exists(), "the first server's download is untouched");
}

#[tokio::test]
async fn a_stale_temporary_index_file_is_removed_at_start() {
    let rogue = Rogue::start().await;
    let cache = tempfile::tempdir().unwrap();
    let index = cache.path().join("index");
    std::fs::create_dir_all(&index).unwrap();
    let stale = index.join(format!("{}.tmp4242", "b".repeat(64)));
    std::fs::write(&stale, b"{").unwrap();
    let hour_ago = std::time::SystemTime::now() - Duration::from_hours(1);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let server = build_state(config(&rogue, cache.path())).await.unwrap();
    assert!(!stale.exists());
    drop(server);
}

#[tokio::test]
async fn control_characters_in_a_redirect_route_are_a_400() {
    let rogue = Rogue::start().await;
    let proxy = start(&rogue, |_| {}).await;
    for path in [
        "/simple/to%0D%0ASet-Cookie:x",
        "/b/cu128%0D%0AX:y/simple/torch",
        "/m/tok%0Aen/simple/torch",
        "/simple/a%00b",
    ] {
        let (status, body, _) = get(&proxy.url(path)).await;
        assert_eq!(status, 400, "{path}: {}", String::from_utf8_lossy(&body));
    }
    let response = super::proxy_under_test::client()
        .get(proxy.url("/simple/Torch_Vision"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 308);
    assert_eq!(response.headers()["location"], "/simple/torch-vision/");
}
