//! Runs a probe command (`nvidia-smi`) with a time limit: a hung driver makes `nvidia-smi` hang
//! in the kernel, and `wheelgate` must then move on, not wait.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use tracing::debug;

use crate::sysroot::Sysroot;

/// Most output a probe command may print; more is garbage.
const MAX_OUTPUT: u64 = 1024 * 1024;

/// Directories searched for commands besides `PATH`, all inside the sysroot: where NVIDIA's
/// packages put `nvidia-smi` (`/usr/lib/wsl/lib` on WSL2).
const EXTRA_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin", "/bin", "/usr/lib/wsl/lib"];

/// Why a command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("`{0}` is not on PATH")]
    /// The program is not on `PATH`; holds its name.
    NotFound(String),
    #[error("`{program}` could not be started")]
    /// The program was found but could not be started.
    Spawn {
        /// The program as shown in messages.
        program: String,
        #[source]
        /// The error from starting it.
        source: io::Error,
    },
    #[error("`{program}` did not finish within {} ms and was stopped", .limit.as_millis())]
    /// The program ran past its time limit and was killed.
    Timeout {
        /// The program as shown in messages.
        program: String,
        /// The time limit it ran past.
        limit: Duration,
    },
    #[error("`{program}` exited with {status}: {output}")]
    /// The program exited with a failure status.
    Failed {
        /// The program as shown in messages.
        program: String,
        /// Its exit status.
        status: ExitStatus,
        /// The first line of what it printed.
        output: String,
    },
    #[error("`{0}` printed text that is not UTF-8")]
    /// The program printed bytes that are not UTF-8; holds its name.
    NotText(String),
}

/// Finds `name` in `path_var`'s directories and the usual ones, all resolved inside `sysroot`
/// (`PATH` is split the platform's way; `.exe` is added on Windows).
pub fn find(sysroot: &Sysroot, path_var: Option<&str>, name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let from_path: Vec<String> = path_var
        .map(|p| {
            std::env::split_paths(p)
                .filter(|dir| dir.is_absolute())
                .filter_map(|dir| dir.to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    from_path
        .iter()
        .map(String::as_str)
        .chain(EXTRA_DIRS.iter().copied())
        .map(|dir| sysroot.resolve(&format!("{}/{file}", dir.trim_end_matches('/'))))
        .find(|candidate| candidate.is_file())
}

/// Runs `program` with `args` and returns what it printed on standard output, or an error
/// once `limit` has passed (the process is then killed).
pub fn run(program: &Path, args: &[&str], limit: Duration) -> Result<String, CommandError> {
    let shown = program.display().to_string();
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| CommandError::Spawn {
            program: shown.clone(),
            source,
        })?;
    // Read on another thread so a chatty command cannot fill the pipe and stall while we wait;
    // if a grandchild keeps the pipe open past the deadline, the thread is left behind rather
    // than blocking us.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let result = (&mut stdout).take(MAX_OUTPUT).read_to_end(&mut bytes);
        let _ = sender.send(result.map(|_| bytes));
    });

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                debug!(program = %shown, "command timed out");
                return Err(CommandError::Timeout {
                    program: shown,
                    limit,
                });
            }
            Ok(None) => thread::sleep(Duration::from_millis(2)),
            Err(source) => {
                return Err(CommandError::Spawn {
                    program: shown,
                    source,
                });
            }
        }
    };
    let remaining = limit
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(50));
    let bytes = match receiver.recv_timeout(remaining) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(source)) => {
            return Err(CommandError::Spawn {
                program: shown,
                source,
            });
        }
        Err(_) => {
            return Err(CommandError::Timeout {
                program: shown,
                limit,
            });
        }
    };
    let output = String::from_utf8(bytes).map_err(|_| CommandError::NotText(shown.clone()))?;
    if status.success() {
        Ok(output)
    } else {
        let first_line = output.lines().next().unwrap_or_default().trim().to_string();
        Err(CommandError::Failed {
            program: shown,
            status,
            output: first_line,
        })
    }
}
