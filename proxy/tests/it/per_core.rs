//! `wheelgate serve`'s connection servers, one per core, fed by one accept loop
//! (`serve/per_core.rs`): every connection is served, the connection cap holds for all cores
//! together, and the signal stops accepting and drains every core.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::build_state;
use wheelgate_server::serve::per_core::serve_per_core;

const CORES: usize = 2;

struct Server {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Instant>,
    _cache: tempfile::TempDir,
}

/// `wheelgate serve`'s steps on `CORES` loops, with `max_connections`, on 127.0.0.1:0.
fn start(max_connections: usize) -> Server {
    let cache = tempfile::tempdir().unwrap();
    let mut config = ServeConfig {
        // Nothing here asks an upstream: a closed port.
        pypi_url: "http://127.0.0.1:9/simple".to_string(),
        pytorch_url: "http://127.0.0.1:9/whl".to_string(),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        shutdown_grace_secs: 1,
        ..ServeConfig::default()
    };
    config.limits.max_connections = max_connections;
    config.limits.header_read_timeout_secs = 30;
    let (stop, stopped) = oneshot::channel::<()>();
    let (bound, addr) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = runtime.block_on(build_state(config)).unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        bound.send(listener.local_addr().unwrap()).unwrap();
        serve_per_core(&runtime, &state, listener, CORES, async move {
            let _ = stopped.await;
        })
        .unwrap();
        Instant::now()
    });
    Server {
        addr: addr.recv().unwrap(),
        stop,
        thread,
        _cache: cache,
    }
}

/// Sends `GET /healthz` on `stream` (kept alive) and waits up to `within` for its answer.
async fn healthz(stream: &mut TcpStream, within: Duration) -> Option<String> {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !answer.ends_with(b"ok\n") {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        Some(())
    };
    tokio::time::timeout(within, read).await.ok()??;
    Some(String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_is_served_and_the_signal_stops_the_server() {
    let server = start(256);
    // 64 keep-alive connections at once: the accept loop hands them to both cores, so a core
    // that does not serve would leave half of them unanswered.
    let clients: Vec<_> = (0..64)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                let first = healthz(&mut stream, Duration::from_secs(5)).await;
                let second = healthz(&mut stream, Duration::from_secs(5)).await;
                (first, second)
            })
        })
        .collect();
    for client in clients {
        let (first, second) = client.await.unwrap();
        assert!(first.is_some_and(|a| a.starts_with("HTTP/1.1 200")));
        assert!(second.is_some_and(|a| a.starts_with("HTTP/1.1 200")));
    }

    // Another server cannot take the port.
    let taken = std::net::TcpListener::bind(server.addr).expect_err("the port is in use");
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);

    let asked = Instant::now();
    server.stop.send(()).unwrap();
    let returned = tokio::task::spawn_blocking(move || server.thread.join().unwrap())
        .await
        .unwrap();
    assert!(returned - asked < Duration::from_secs(3));
    // Every socket is closed once it returned.
    assert!(TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_cap_holds_for_all_cores_together() {
    const CAP: usize = 4;
    let server = start(CAP);
    let mut streams = Vec::new();
    for _ in 0..2 * CAP {
        streams.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // Each connection is kept open after its answer: a slot is freed only when one closes.
    let mut answered = Vec::new();
    let mut waiting = Vec::new();
    for mut stream in streams {
        if healthz(&mut stream, Duration::from_millis(300))
            .await
            .is_some()
        {
            answered.push(stream);
        } else {
            waiting.push(stream);
        }
    }
    // Exactly the cap at once over both cores: one accept loop takes every slot.
    assert_eq!(answered.len(), CAP);
    // Once the answered ones close, the waiting ones are served.
    drop(answered);
    for mut stream in waiting {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), async {
            let mut buf = [0u8; 1024];
            while !rest.ends_with(b"ok\n") {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed without an answer");
                rest.extend_from_slice(&buf[..n]);
            }
        });
        read.await.expect("served once a slot freed");
    }
    server.stop.send(()).unwrap();
    tokio::task::spawn_blocking(move || server.thread.join().unwrap())
        .await
        .unwrap();
}
