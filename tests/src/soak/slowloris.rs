//! A slowloris: `count` connections held open by sending nothing or a request head that never
//! ends, each reopened as soon as the server closes it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Counters of the slowloris.
#[derive(Default)]
pub struct Slowloris {
    pub opened: AtomicU64,
    pub closed_by_server: AtomicU64,
}

/// Starts `count` connections to `addr` that live until `until`.
pub fn start(addr: SocketAddr, count: usize, until: Instant) -> Arc<Slowloris> {
    let counters = Arc::new(Slowloris::default());
    for i in 0..count {
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            while Instant::now() < until {
                let Ok(mut stream) = TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                counters.opened.fetch_add(1, Ordering::Relaxed);
                if i % 2 == 1 {
                    let _ = stream
                        .write_all(b"GET /simple/ HTTP/1.1\r\nHost: x\r\n")
                        .await;
                }
                let mut buf = [0u8; 256];
                let left = until.saturating_duration_since(Instant::now());
                // Drips one header byte a second until the server closes the connection.
                let held = tokio::time::timeout(left, async {
                    loop {
                        tokio::select! {
                            read = stream.read(&mut buf) => {
                                if matches!(read, Ok(0) | Err(_)) {
                                    return;
                                }
                            }
                            () = tokio::time::sleep(Duration::from_secs(1)) => {
                                if i % 2 == 1 && stream.write_all(b"X").await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                })
                .await;
                if held.is_ok() {
                    counters.closed_by_server.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    counters
}
