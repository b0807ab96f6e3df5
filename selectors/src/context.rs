//! What a probe may read and do: the sysroot, the environment, which GPU libraries it may load
//! and whether it may run commands. Tests build one by hand; the binary builds it from the
//! process environment.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::intel::library::IntelLibrary;
use crate::nvidia::library::NvidiaLibrary;
use crate::overrides::{self, Env, OverrideError};
use crate::sysroot::Sysroot;

/// Default time limit of a probe command: `nvidia-smi` on a multi-GPU machine without
/// persistence mode takes a second or two; a hung driver must not hang `wheelgate`.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Everything a probe needs from the outside world.
pub struct ProbeContext {
    /// Directory standing for `/`.
    pub sysroot: Sysroot,
    /// Environment variables (overrides, `PATH`, `ROCM_PATH`).
    pub env: Env,
    /// GPU libraries the NVIDIA probe asks, in order (NVML, then libcuda). Empty unless the
    /// sysroot is the host, since a library describes the host, not a captured tree.
    pub nvidia_libraries: Vec<Box<dyn NvidiaLibrary>>,
    /// The Level Zero loader the Intel probe asks for device IP versions, on the same terms;
    /// asked only when sysfs shows an Intel GPU, so machines without one never load it.
    pub intel_libraries: Vec<Box<dyn IntelLibrary>>,
    /// Whether probes may run commands (`nvidia-smi`).
    pub commands: bool,
    /// Time limit of each command.
    pub command_timeout: Duration,
}

impl fmt::Debug for ProbeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeContext")
            .field("sysroot", &self.sysroot)
            .field(
                "nvidia_libraries",
                &self
                    .nvidia_libraries
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>(),
            )
            .field(
                "intel_libraries",
                &self
                    .intel_libraries
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>(),
            )
            .field("commands", &self.commands)
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl ProbeContext {
    /// A context for the tree at `root` with the environment `env`. GPU libraries are loaded
    /// only when `root` is `/` and [`overrides::PROBE_LIBRARIES`] is not `0`.
    pub fn new(root: impl Into<PathBuf>, env: Env) -> Result<Self, OverrideError> {
        let sysroot = Sysroot::new(root);
        let libraries = sysroot.is_host() && !env.is_off(overrides::PROBE_LIBRARIES);
        let nvidia_libraries: Vec<Box<dyn NvidiaLibrary>> = if libraries {
            crate::ffi::system_nvidia_libraries()
        } else {
            Vec::new()
        };
        let intel_libraries: Vec<Box<dyn IntelLibrary>> = if libraries {
            crate::ffi::system_intel_libraries()
        } else {
            Vec::new()
        };
        let command_timeout = overrides::command_timeout_ms(&env)?
            .map_or(DEFAULT_COMMAND_TIMEOUT, Duration::from_millis);
        Ok(ProbeContext {
            commands: !env.is_off(overrides::PROBE_COMMANDS),
            sysroot,
            env,
            nvidia_libraries,
            intel_libraries,
            command_timeout,
        })
    }

    /// A context from an environment: the root is [`overrides::SYSROOT`], default `/`.
    pub fn from_env(env: Env) -> Result<Self, OverrideError> {
        let root = env.get(overrides::SYSROOT).unwrap_or("/").to_string();
        Self::new(root, env)
    }

    /// The running process's environment and machine.
    pub fn from_process() -> Result<Self, OverrideError> {
        Self::from_env(Env::from_process())
    }
}
