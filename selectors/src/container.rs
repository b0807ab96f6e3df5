//! Is this a container? Inside one, the host's NVIDIA kernel module and `/proc/driver/nvidia`
//! are visible even when no GPU was passed through, so a missing `/dev/nvidiaN` means "no GPU
//! here"; on a bare-metal host it may only mean the node is created on first use.

use crate::overrides::Env;
use crate::sysroot::Sysroot;

/// Files container engines create.
const MARKER_FILES: &[&str] = &[
    "/.dockerenv",
    "/run/.containerenv",
    "/var/run/secrets/kubernetes.io/serviceaccount",
];

/// Words of `/proc/1/cgroup` (cgroup v1) that name a container engine.
const CGROUP_WORDS: &[&str] = &["docker", "kubepods", "containerd", "libpod", "lxc"];

/// The first sign that this is a container, if any (`/.dockerenv`, `KUBERNETES_SERVICE_HOST`).
pub fn marker(sysroot: &Sysroot, env: &Env) -> Option<String> {
    if let Some(file) = MARKER_FILES.iter().find(|path| sysroot.exists(path)) {
        return Some((*file).to_string());
    }
    for var in ["KUBERNETES_SERVICE_HOST", "container"] {
        if env.get(var).is_some() {
            return Some(format!("${var}"));
        }
    }
    let cgroup = sysroot.read("/proc/1/cgroup").ok()?;
    CGROUP_WORDS
        .iter()
        .find(|word| cgroup.contains(**word))
        .map(|word| format!("/proc/1/cgroup mentions {word}"))
}
