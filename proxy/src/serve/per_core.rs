//! One accept loop per core, as `wheelgate serve` runs: each core's thread drives its own
//! single-threaded runtime and accepts on its own socket, every socket bound to the same port
//! with `SO_REUSEPORT`, so the kernel spreads connections over the cores and a connection is
//! served start to end on the thread that accepted it. This is how nginx's worker processes
//! work; on one work-stealing runtime, tokio's workers kept handing connections to each other
//! (a seventh of a warm page's CPU went to task switches in `scripts/bench-proxy`).
//!
//! The cores share the state (caches, upstream client, metrics), the connection cap (one
//! semaphore) and the shutdown signal. The main runtime, where the state was built, keeps the
//! background tasks started then and waits for the signal. Every core's runtime stays up until
//! all of them have finished their graceful shutdown: a pooled upstream connection is driven by
//! the runtime that opened it, and a wheel that another core is still streaming may read from it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch};
use tracing::{error, warn};

use super::StartError;
use crate::server::listener::{ConnectionSlots, serve_with_slots};
use crate::server::{AppState, app};

/// Connections the kernel queues per socket before they are accepted (as tokio's own `bind`).
const BACKLOG: i32 = 1024;

/// How many accept loops to run: one per core this process may use (its CPU affinity and
/// cgroup quota included).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The first listening socket on `addr`, shareable by the other cores' ([`bind_shared`]).
/// A plain bind comes first: it fails when anything listens there already, even another
/// `wheelgate serve` whose sockets allow sharing (the kernel would otherwise split the port's
/// connections between the two servers without a word). It also picks the port of
/// `--listen 127.0.0.1:0`.
pub fn bind_first(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // As any server: connections of an earlier run still in TIME_WAIT do not block the port.
    probe.set_reuse_address(true)?;
    probe.bind(&addr.into())?;
    let local = probe
        .local_addr()?
        .as_socket()
        .ok_or_else(|| std::io::Error::other("the bound address is not an IP address"))?;
    drop(probe);
    bind_shared(local)
}

/// A listening socket on `addr` that other sockets of this process may share
/// (`SO_REUSEPORT`); non-blocking, for a runtime to take.
pub fn bind_shared(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Bytes of heap a core's thread grows its allocator arena by before it serves.
const ARENA_ROOM: usize = 8 * 1024 * 1024;

/// Grows this thread's allocator arena by [`ARENA_ROOM`] and gives the memory back at once.
/// glibc gives each new thread its own arena and grows it one page at a time, with one
/// `mprotect` call per page; the first uncached real-size page a fresh server parses made over
/// 200 of them (a fifth of a millisecond and more, in `scripts/bench-proxy`'s cold figure).
/// Grown here, the arena keeps its writable size when the memory is returned, so later growth
/// within it makes no call; the pages themselves are released (resident memory does not grow).
/// With another allocator this is one short allocation and free.
fn grow_allocator_arena() {
    // Blocks under glibc's threshold for a separate mapping (128 KiB), so they come from the
    // arena.
    const BLOCK: usize = 64 * 1024;
    let blocks: Vec<Vec<u8>> = (0..ARENA_ROOM / BLOCK)
        .map(|_| Vec::with_capacity(BLOCK))
        .collect();
    drop(std::hint::black_box(blocks));
}

/// Serves `state` on `first` (bound by [`bind_first`]) and on one more socket of the same
/// address per further core, until `shutdown` completes on `main`; then every core stops
/// accepting and lets its responses in flight finish for `shutdown_grace_secs`.
pub fn serve_per_core(
    main: &Runtime,
    state: &AppState,
    first: std::net::TcpListener,
    cores: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let local = first.local_addr().map_err(StartError::Serve)?;
    let listen_error = |source| StartError::Listen {
        addr: local,
        source,
    };
    let mut sockets = vec![first];
    // The same port as the first socket: `--listen 127.0.0.1:0` picked it.
    for _ in 1..cores.max(1) {
        sockets.push(bind_shared(local).map_err(listen_error)?);
    }
    // Everything that can fail is done here, before any thread starts.
    let mut loops = Vec::with_capacity(sockets.len());
    for socket in sockets {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(StartError::Serve)?;
        let listener = runtime
            .block_on(async { tokio::net::TcpListener::from_std(socket) })
            .map_err(listen_error)?;
        loops.push((runtime, listener));
    }

    let limits = state.config.limits.clone();
    let grace = Duration::from_secs(state.config.shutdown_grace_secs);
    let slots = ConnectionSlots::new(&limits);
    let (stop, stopped) = watch::channel(false);
    let (release, released) = watch::channel(false);
    let (done, mut finished) = mpsc::unbounded_channel::<bool>();
    let mut threads = Vec::with_capacity(loops.len());
    let mut spawn_error = None;
    for (core, (runtime, listener)) in loops.into_iter().enumerate() {
        let (router, slots, limits) = (app(state.clone()), slots.clone(), limits.clone());
        let metrics = Arc::clone(&state.metrics);
        let (mut stopped, mut released, done) = (stopped.clone(), released.clone(), done.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("wheelgate-core-{core}"))
            .spawn(move || {
                grow_allocator_arena();
                runtime.block_on(async move {
                    let stop = async move {
                        let _ = stopped.wait_for(|stop| *stop).await;
                    };
                    let drained =
                        serve_with_slots(listener, router, &slots, &limits, metrics, grace, stop)
                            .await;
                    let _ = done.send(drained);
                    drop(done);
                    // Up until every core has drained (see the module's comment).
                    let _ = released.wait_for(|release| *release).await;
                });
            });
        match spawned {
            Ok(thread) => threads.push(thread),
            Err(err) => {
                spawn_error = Some(err);
                break;
            }
        }
    }
    drop(done);

    let all_drained = main.block_on(async {
        let (mut pending, mut all_drained) = (threads.len(), true);
        if spawn_error.is_none() {
            tokio::select! {
                () = shutdown => {}
                // A core's loop ended before the signal: it can only have failed.
                early = finished.recv() => {
                    error!("an accept loop stopped unexpectedly; shutting the server down");
                    if let Some(drained) = early {
                        pending -= 1;
                        all_drained &= drained;
                    }
                }
            }
        }
        let _ = stop.send(true);
        // Each loop says once how its drain went; a loop that panicked drops its sender
        // without a word, and the channel closes once no loop is left to say anything.
        while pending > 0 {
            let Some(drained) = finished.recv().await else {
                break;
            };
            pending -= 1;
            all_drained &= drained;
        }
        all_drained
    });
    let _ = release.send(true);
    for thread in threads {
        if thread.join().is_err() {
            error!("an accept loop panicked");
        }
    }
    if let Some(err) = spawn_error {
        return Err(StartError::Serve(err));
    }
    if !all_drained {
        warn!(
            grace_secs = grace.as_secs(),
            "shutdown grace elapsed; closing the responses still in flight"
        );
    }
    Ok(())
}
