//! How `wheelgate serve` runs: one connection server per core, each on its own single-threaded
//! runtime and thread, fed by one accept loop. A connection is served start to end on the
//! thread it was handed to; on one work-stealing runtime, tokio's workers kept handing
//! connections to each other (a seventh of a warm page's CPU went to task switches in
//! `scripts/bench-proxy`). Each new connection goes to the core serving the fewest at that
//! moment, so 64 keep-alive clients are split 32 and 32 (sockets sharing a port with
//! `SO_REUSEPORT`, as nginx can, split them by a hash of the client's address: unevenly, and
//! the busier core's queue showed in the 99th percentile).
//!
//! The accept loop runs on the main runtime, where the state was built and its background
//! tasks run, and where the shutdown signal is awaited. Every core shares the state (caches,
//! upstream client, metrics) and the one connection cap. On the signal the accept loop stops
//! and each core drains its connections; every core's runtime stays up until all of them have
//! drained, because a pooled upstream connection is driven by the runtime that opened it and a
//! wheel another core is still streaming may read from it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, mpsc, watch};
use tracing::{debug, error, warn};

use super::StartError;
use crate::listener::{ConnectionServer, ConnectionSlots, accept_until};
use crate::{AppState, app};

/// How many connection servers to run: one per core this process may use (its CPU affinity
/// and cgroup quota included).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Threads each core's runtime starts for blocking work (the disk copies of index pages, cache
/// files) before it serves, so that the first requests do not wait for their creation.
const BLOCKING_THREADS_AT_START: usize = 2;
/// How long an idle blocking thread is kept (tokio's default is 10 s).
const BLOCKING_KEEP_ALIVE: Duration = Duration::from_mins(10);

/// Starts [`BLOCKING_THREADS_AT_START`] of `runtime`'s blocking threads: as many tasks that wait
/// for each other, so each holds a thread of its own until all have one.
fn start_blocking_threads(runtime: &Runtime) {
    let all_started = Arc::new(std::sync::Barrier::new(BLOCKING_THREADS_AT_START));
    let tasks: Vec<_> = (0..BLOCKING_THREADS_AT_START)
        .map(|_| {
            let all_started = Arc::clone(&all_started);
            runtime.spawn_blocking(move || {
                all_started.wait();
            })
        })
        .collect();
    runtime.block_on(async {
        for task in tasks {
            let _ = task.await;
        }
    });
}

/// An accepted connection on its way to a core.
struct Handoff {
    stream: std::net::TcpStream,
    peer: SocketAddr,
    held: Held,
}

/// What an open connection holds until it ends: its slot under the cap, and its place in its
/// core's count.
struct Held {
    _slot: OwnedSemaphorePermit,
    load: Arc<AtomicUsize>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.load.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One core's connection server, seen from the accept loop.
struct Core {
    connections: mpsc::UnboundedSender<Handoff>,
    load: Arc<AtomicUsize>,
}

/// Serves `state` on `listener` (bound on `main`) with `cores` connection servers until
/// `shutdown` completes on `main`; then accepting stops and every core lets its responses in
/// flight finish for `shutdown_grace_secs`.
pub fn serve_per_core(
    main: &Runtime,
    state: &AppState,
    listener: TcpListener,
    cores: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let runtimes = (0..cores.max(1))
        .map(|_| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_keep_alive(BLOCKING_KEEP_ALIVE)
                .build()
        })
        .collect::<Result<Vec<Runtime>, _>>()
        .map_err(StartError::Serve)?;
    let limits = state.config.limits.clone();
    let grace = Duration::from_secs(state.config.shutdown_grace_secs);
    let (release, released) = watch::channel(false);
    let (done, mut finished) = mpsc::unbounded_channel::<bool>();
    let mut threads = Vec::with_capacity(runtimes.len());
    let mut targets = Vec::with_capacity(runtimes.len());
    let mut spawn_error = None;
    for (index, runtime) in runtimes.into_iter().enumerate() {
        let (connections, mut incoming) = mpsc::unbounded_channel::<Handoff>();
        let (router, limits) = (app(state.clone()), limits.clone());
        let metrics = Arc::clone(&state.metrics);
        let (mut released, done) = (released.clone(), done.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("wheelgate-core-{index}"))
            .spawn(move || {
                super::allocator::warm_this_thread(super::allocator::warm_share(
                    super::serving_threads(cores),
                ));
                start_blocking_threads(&runtime);
                runtime.block_on(async move {
                    let server = ConnectionServer::new(router, &limits, metrics);
                    // Until the accept loop stops and drops its sender.
                    while let Some(handoff) = incoming.recv().await {
                        match tokio::net::TcpStream::from_std(handoff.stream) {
                            Ok(stream) => server.serve(stream, handoff.peer, handoff.held),
                            Err(err) => {
                                debug!(peer = %handoff.peer, error = %err, "cannot take a connection onto this core");
                            }
                        }
                    }
                    let _ = done.send(server.drain(grace).await);
                    drop(done);
                    // Up until every core has drained (see the module's comment).
                    let _ = released.wait_for(|release| *release).await;
                });
            });
        match spawned {
            Ok(thread) => {
                threads.push(thread);
                targets.push(Core {
                    connections,
                    load: Arc::default(),
                });
            }
            Err(err) => {
                spawn_error = Some(err);
                break;
            }
        }
    }
    drop(done);

    let all_drained = main.block_on(async {
        if spawn_error.is_none() {
            let slots = ConnectionSlots::new(&limits);
            accept_until(
                &listener,
                &slots,
                &state.metrics,
                shutdown,
                |stream, peer, slot| hand_off(&targets, stream, peer, slot),
            )
            .await;
        }
        drop(listener);
        // The cores see their channels close and drain.
        let pending = targets.len();
        drop(targets);
        let mut all_drained = true;
        for _ in 0..pending {
            // A core that panicked drops its sender without a word; the channel closes once
            // no core is left to say anything.
            let Some(drained) = finished.recv().await else {
                break;
            };
            all_drained &= drained;
        }
        all_drained
    });
    let _ = release.send(true);
    for thread in threads {
        if thread.join().is_err() {
            error!("a core's connection server panicked");
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

/// Hands an accepted connection to the core serving the fewest connections (of those still
/// running: one whose server panicked is passed over).
fn hand_off(
    cores: &[Core],
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    slot: OwnedSemaphorePermit,
) {
    let Some(core) = cores
        .iter()
        .filter(|core| !core.connections.is_closed())
        .min_by_key(|core| core.load.load(Ordering::Relaxed))
    else {
        error!(%peer, "no core is serving; the connection is closed");
        return;
    };
    // Out of this runtime's reactor, into the core's.
    let stream = match stream.into_std() {
        Ok(stream) => stream,
        Err(err) => {
            debug!(%peer, error = %err, "cannot hand a connection to a core");
            return;
        }
    };
    core.load.fetch_add(1, Ordering::Relaxed);
    let held = Held {
        _slot: slot,
        load: Arc::clone(&core.load),
    };
    if core
        .connections
        .send(Handoff { stream, peer, held })
        .is_err()
    {
        error!(%peer, "a core's connection server has stopped; the connection is closed");
    }
}
