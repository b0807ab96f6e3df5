//! The threads that hash and write downloads, below normal priority.
//!
//! A download's sha256 and its writes are most of the CPU a cold file costs (a third of it is
//! the hash alone), and they run while the client that asked for the file is busy with the bytes
//! already sent: an installer on the same machine unpacks them. At normal priority the two
//! shared the cores evenly, and the installer, whose unpacking is what the user waits for, got
//! half of them while the proxy ran seconds ahead of it: uv installing five large wheels from
//! the registry finished 7 s after the proxy had every byte (`scripts/bench-cold-install
//! --registry`). At nice 19 the proxy takes what the installer leaves, and when the installer
//! catches up and waits for bytes, the proxy has the cores again: the install ran within a few
//! percent of a direct one. On a machine with nothing else to run, the priority changes
//! nothing. Connections, pages and cache hits keep their threads at normal priority.
//!
//! Not `SCHED_IDLE` (as the page writer, `serve/background.rs`): a download whose writer never
//! runs while something else keeps the cores busy would hold its clients until the machine goes
//! idle; at nice 19 it still gets a share.

use wheelgate_index::cpu_pool::CpuPool;

/// The nice value of the writer threads: the lowest priority short of none.
const NICE: i32 = 19;

/// Starts the writers: two per core, so that one waiting for the disk leaves the core to
/// another.
pub fn start(cores: usize) -> std::io::Result<CpuPool> {
    CpuPool::start("wheelgate-write", 2 * cores.max(1), lower_this_thread)
}

/// Lowers the calling thread's priority to [`NICE`]. A refusal (a sandbox) leaves it as it was,
/// which is only slower for the installers beside it.
#[cfg(target_os = "linux")]
fn lower_this_thread() {
    if let Err(err) = wheelgate_index::cpu_pool::lower_this_thread(NICE) {
        tracing::debug!(error = %err, "the download writers stay at normal priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_writers_run_below_normal_priority() {
        let writers = start(1).unwrap();
        assert_eq!(writers.threads(), 2);
        let (name, nice) = writers
            .run(|| {
                (
                    std::thread::current().name().map(str::to_string),
                    rustix::process::getpriority_process(None).unwrap(),
                )
            })
            .await;
        assert!(name.unwrap().starts_with("wheelgate-write-"));
        assert_eq!(nice, NICE);
    }
}
