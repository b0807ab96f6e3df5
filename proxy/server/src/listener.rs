//! The accept loop: every client connection under the same limits, so a slow or silent client
//! costs a bounded amount and the server keeps answering everyone else.
//!
//! - **Header-read timeout**: a connection must send a request's headers within
//!   `header_read_timeout_secs` of being ready for one. The clock runs whenever the connection
//!   waits for a request, so it also closes silent connections and idle keep-alive ones: a
//!   slowloris client holds a slot for seconds, not forever.
//! - **Connection cap**: at most `max_connections` at once (lowered to fit the process's
//!   descriptor limit), so the server never runs out of descriptors for its cache files, its
//!   upstream sockets and `/healthz`. At the cap it stops accepting, and says so once, until a
//!   slot frees; new clients wait in the kernel's queue meanwhile.
//! - **Graceful shutdown**: on the signal the loop stops accepting, responses in flight (a wheel
//!   streaming to pip) get `shutdown_grace_secs` to finish, and whatever is left is closed.
//!
//! HTTP/1.1 only: pip, uv and every installer speak it to a plain `http://` index, and without
//! protocol sniffing the header timeout covers a connection from its first byte.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;
use tracing::{debug, info, warn};

use wheelgate_config::LimitsConfig;
use wheelgate_index::metrics::{Metrics, Route};

/// Descriptors kept free of client connections: cache files, upstream sockets, the listener.
const RESERVED_DESCRIPTORS: u64 = 128;

/// Serves `router` on `listener` until `shutdown` completes, then lets connections finish for
/// `grace`. Returns `false` when the grace ran out with connections still open.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &LimitsConfig,
    metrics: Arc<Metrics>,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> bool {
    let slots = ConnectionSlots::new(limits);
    let server = ConnectionServer::new(router, limits, Arc::clone(&metrics));
    accept_until(
        &listener,
        &slots,
        &metrics,
        shutdown,
        |stream, peer, slot| {
            server.serve(stream, peer, slot);
        },
    )
    .await;
    drop(listener);
    server.drain(grace).await
}

/// Accepts connections on `listener`, each once it holds a slot of `slots`, and hands each to
/// `accepted` with its slot, until `shutdown` completes.
pub async fn accept_until(
    listener: &TcpListener,
    slots: &ConnectionSlots,
    metrics: &Metrics,
    shutdown: impl Future<Output = ()>,
    mut accepted: impl FnMut(TcpStream, SocketAddr, OwnedSemaphorePermit),
) {
    let mut accept_errors = ErrorLog::default();
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.take(metrics) => slot,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            result = listener.accept() => match result {
                Ok(connection) => connection,
                Err(err) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept: wait a
                    // moment rather than spin, and say so at most once a second.
                    accept_errors.note(&err);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        accepted(stream, peer, slot);
    }
}

/// Serves accepted connections on the runtime it is used on: HTTP/1.1 with the header-read
/// timeout, each connection in its own task, and a graceful drain at the end.
pub struct ConnectionServer {
    router: Router,
    http: hyper::server::conn::http1::Builder,
    graceful: GracefulShutdown,
    metrics: Arc<Metrics>,
}

impl ConnectionServer {
    /// A server of `router`'s connections under `limits`.
    pub fn new(router: Router, limits: &LimitsConfig, metrics: Arc<Metrics>) -> ConnectionServer {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout())
            .keep_alive(true);
        ConnectionServer {
            router,
            http,
            graceful: GracefulShutdown::new(),
            metrics,
        }
    }

    /// Serves `stream` from `peer` in a task of the current runtime; `held` (its connection
    /// slot, and whatever else counts it) is dropped when the connection ends.
    pub fn serve(&self, stream: TcpStream, peer: SocketAddr, held: impl Send + 'static) {
        let router = self.router.clone();
        let metrics = Arc::clone(&self.metrics);
        // Limits and request metrics here, around the router, rather than as middleware
        // layers inside it: each layer cost a few per cent of a warm page's CPU.
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            let refused = super::limits::refuse_oversized_headers(&request);
            let route = Route::of_path(request.uri().path());
            let (router, metrics) = (router.clone(), Arc::clone(&metrics));
            async move {
                if let Some(response) = refused {
                    return Ok(response);
                }
                let response = router.oneshot(request).await?;
                Ok::<_, std::convert::Infallible>(super::observe::count(&metrics, route, response))
            }
        });
        let connection = self
            .graceful
            .watch(self.http.serve_connection(TokioIo::new(stream), service));
        let metrics = Arc::clone(&self.metrics);
        tokio::spawn(async move {
            metrics.connection(1);
            if let Err(err) = connection.await {
                if err.is_timeout() {
                    metrics.connection_timed_out();
                    debug!(%peer, "closed a connection that sent no complete request in time");
                } else {
                    debug!(%peer, error = %err, "connection ended with an error");
                }
            }
            metrics.connection(-1);
            drop(held);
        });
    }

    /// Once nothing more is accepted: lets the responses in flight finish for `grace`.
    /// `false` when the grace ran out with connections still open.
    pub async fn drain(self, grace: Duration) -> bool {
        info!(
            grace_secs = grace.as_secs(),
            "shutting down: waiting for responses in flight"
        );
        tokio::select! {
            () = self.graceful.shutdown() => true,
            () = tokio::time::sleep(grace) => false,
        }
    }
}

/// The connection cap: one semaphore for the accept loop.
pub struct ConnectionSlots {
    slots: Arc<Semaphore>,
    cap: usize,
    last_warning: Mutex<Option<Instant>>,
}

impl ConnectionSlots {
    /// The cap `limits` allows (lowered to fit the descriptor limit), said once in the log.
    pub fn new(limits: &LimitsConfig) -> ConnectionSlots {
        let cap = connection_cap(limits.max_connections, open_files_limit());
        info!(
            max_connections = cap,
            header_read_timeout_secs = limits.header_read_timeout().as_secs(),
            "accepting connections"
        );
        ConnectionSlots {
            slots: Arc::new(Semaphore::new(cap)),
            cap,
            last_warning: Mutex::default(),
        }
    }

    /// A connection slot; at the cap, waits for one. Reaching the cap is counted every time
    /// and logged at most every 10 s (a slowloris at the cap would otherwise log per
    /// connection).
    async fn take(&self, metrics: &Metrics) -> OwnedSemaphorePermit {
        if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
            return slot;
        }
        metrics.connection_limit_reached();
        let warn_now = {
            let mut last = self
                .last_warning
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let due = last.is_none_or(|at| at.elapsed() >= Duration::from_secs(10));
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if warn_now {
            warn!(
                max_connections = self.cap,
                "connection limit reached: not accepting new connections until one closes (raise [limits] max_connections and the descriptor limit if this is real load)"
            );
        }
        Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}

/// The cap actually used: the configured one, lowered so that client connections leave
/// [`RESERVED_DESCRIPTORS`] of the process's descriptor limit free.
fn connection_cap(configured: usize, open_files: Option<u64>) -> usize {
    let configured = configured.max(1);
    match open_files {
        Some(limit) => {
            let room = usize::try_from(limit.saturating_sub(RESERVED_DESCRIPTORS))
                .unwrap_or(usize::MAX)
                .max(16);
            if room < configured {
                warn!(
                    configured,
                    open_files_limit = limit,
                    using = room,
                    "max_connections lowered to fit the process's descriptor limit (ulimit -n)"
                );
            }
            configured.min(room)
        }
        None => configured,
    }
}

/// The soft limit of open descriptors, from `/proc/self/limits` (Linux).
fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_files_limit(&text)
}

// A real example of this parser's input, a line of /proc/self/limits:
// Max open files            1024                 1048576              files
fn parse_open_files_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Accept errors, logged at most once a second with how many there were.
#[derive(Default)]
struct ErrorLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl ErrorLog {
    fn note(&mut self, err: &std::io::Error) {
        if self
            .last
            .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            self.suppressed += 1;
            return;
        }
        warn!(error = %err, suppressed = self.suppressed, "cannot accept a connection");
        self.last = Some(Instant::now());
        self.suppressed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_soft_descriptor_limit() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max open files            1024                 1048576              files\n";
        assert_eq!(parse_open_files_limit(text), Some(1024));
        assert_eq!(parse_open_files_limit("Max open files unlimited"), None);
        assert_eq!(parse_open_files_limit(""), None);
    }

    #[test]
    fn the_cap_leaves_descriptors_for_the_server_itself() {
        assert_eq!(connection_cap(2048, Some(1024)), 1024 - 128);
        assert_eq!(connection_cap(2048, Some(100)), 16);
        assert_eq!(connection_cap(300, Some(1_048_576)), 300);
        assert_eq!(connection_cap(300, None), 300);
    }
}
