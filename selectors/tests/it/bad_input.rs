//! Bad input never panics or hangs: unreadable, empty, truncated or garbage files, special files,
//! a library that loads but fails, a hanging or lying `nvidia-smi`. Each falls through to the
//! next source, and the reason is recorded.

use std::fs;
use std::time::{Duration, Instant};

use wheelgate_resolver::ComputeCapability;
use wheelgate_selectors::nvidia::library::{
    LibraryError, LibraryGpu, LibraryReport, NvidiaLibrary,
};
use wheelgate_selectors::{Detection, Env, detect};

use crate::support::{context, copy_fixture, temp_tree, write, write_script};

/// Every path a probe reads, for filling a tree with junk.
const PROBED: &[&str] = &[
    "/proc/sys/kernel/arch",
    "/proc/sys/kernel/osrelease",
    "/proc/cpuinfo",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/sys/module/nvidia/version",
    "/proc/driver/nvidia/version",
    "/proc/driver/nvidia/gpus/0000:18:00.0/information",
    "/sys/bus/pci/devices/0000:18:00.0/class",
    "/sys/bus/pci/devices/0000:18:00.0/vendor",
    "/sys/bus/pci/devices/0000:18:00.0/device",
    "/proc/device-tree/compatible",
    "/sys/class/kfd/kfd/topology/nodes/1/properties",
    "/sys/module/amdgpu/version",
    "/opt/rocm/.info/version",
    "/proc/1/cgroup",
];

fn tried_reasons(detection: &Detection, fact: &str) -> String {
    detection
        .facts
        .get(fact)
        .map(|f| {
            f.tried
                .iter()
                .map(|a| format!("{}: {}", a.source, a.reason))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn empty_files_everywhere() {
    let root = temp_tree("empty");
    for path in PROBED {
        write(&root, path, "");
    }
    let detection = detect(&context(&root, Env::default())).unwrap();
    // NVIDIA's directories exist, so a GPU is known to be there, but nothing about it is.
    let nvidia = detection.machine.nvidia.clone().unwrap();
    assert_eq!(nvidia.driver_version, None);
    assert!(tried_reasons(&detection, "nvidia.driver_version").contains("is empty"));
    assert_eq!(detection.machine.amd, None);
    assert_eq!(detection.machine.glibc, None);
}

#[test]
fn binary_garbage_everywhere() {
    let root = temp_tree("garbage");
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| u8::try_from(i.wrapping_mul(2_654_435_761) >> 24).unwrap())
        .collect();
    for path in PROBED {
        write(&root, path, &garbage);
    }
    let detection = detect(&context(&root, Env::default())).unwrap();
    assert_eq!(detection.machine.x86_64_level, None);
    assert!(tried_reasons(&detection, "nvidia.driver_version").contains("not UTF-8"));
    // Text garbage too.
    for path in PROBED {
        write(
            &root,
            path,
            "0xZZ\n\tgfx_target_version 99999999\nModel:\nNVRM version:\n",
        );
    }
    let detection = detect(&context(&root, Env::default())).unwrap();
    assert!(tried_reasons(&detection, "amd.gpus").contains("names no gfx target"));
}

#[test]
fn directories_and_fifos_where_files_belong() {
    let root = copy_fixture("dgx-h100");
    fs::remove_file(root.join("sys/module/nvidia/version")).unwrap();
    fs::create_dir_all(root.join("sys/module/nvidia/version")).unwrap();
    let fifo = root.join("proc/driver/nvidia/version");
    fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let started = Instant::now();
    let detection = detect(&context(&root, Env::default())).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a special file blocked the probe"
    );
    let reasons = tried_reasons(&detection, "nvidia.driver_version");
    assert!(reasons.contains("is not a regular file"), "{reasons}");
    if made {
        assert!(reasons.contains("/proc/driver/nvidia/version"), "{reasons}");
    }
    // The GPUs are still described from their own files.
    assert_eq!(detection.machine.nvidia.as_ref().unwrap().gpus.len(), 8);
}

#[cfg(unix)]
#[test]
fn permission_denied_falls_through() {
    use std::os::unix::fs::PermissionsExt;
    let root = copy_fixture("dgx-h100");
    let locked = root.join("sys/module/nvidia/version");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let detection = detect(&context(&root, Env::default())).unwrap();
    // The driver comes from the next source either way.
    let fact = detection.facts.get("nvidia.driver_version").unwrap();
    assert_eq!(fact.value.as_deref(), Some("580.65.06"));
    if fs::read(&locked).is_err() {
        // Not running as root: the denial is the recorded reason.
        assert!(tried_reasons(&detection, "nvidia.driver_version").contains("permission denied"));
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn truncated_and_oversized_files() {
    let root = copy_fixture("mi300x");
    write(
        &root,
        "/sys/class/kfd/kfd/topology/nodes/3/properties",
        "cpu_cores_count 0\nsimd_count 1216\ngfx_target_ver",
    );
    // 4 MiB of cpuinfo without a flags line: read up to a limit, then given up on.
    write(&root, "/proc/cpuinfo", "processor\t: 0\n".repeat(300_000));
    let started = Instant::now();
    let detection = detect(&context(&root, Env::default())).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(detection.machine.amd.as_ref().unwrap().gpus.len(), 7);
    assert!(tried_reasons(&detection, "amd.gpus").contains("no `gfx_target_version` line"));
    assert_eq!(detection.machine.x86_64_level, None);
}

#[test]
fn only_passed_through_gpus_count() {
    let root = copy_fixture("dgx-h100");
    for minor in [0, 1, 3, 4, 5, 6, 7] {
        fs::remove_file(root.join(format!("dev/nvidia{minor}"))).unwrap();
    }
    let detection = detect(&context(&root, Env::default())).unwrap();
    assert_eq!(detection.machine.nvidia.as_ref().unwrap().gpus.len(), 1);
    assert!(tried_reasons(&detection, "nvidia.gpus").contains("/dev/nvidia0"));
}

#[test]
fn hanging_nvidia_smi_is_stopped() {
    let root = copy_fixture("unknown-model-smi");
    write_script(&root, "/usr/bin/nvidia-smi", "exec sleep 30\n");
    let mut ctx = context(&root, Env::default());
    ctx.command_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let detection = detect(&ctx).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let nvidia = detection.machine.nvidia.clone().unwrap();
    // The kernel files still give the driver and both GPUs, with unknown compute capability.
    assert_eq!(nvidia.driver_version.unwrap().to_string(), "590.44.01");
    assert_eq!(nvidia.gpus.len(), 2);
    assert_eq!(nvidia.gpus[0].compute_capability, None);
    assert!(tried_reasons(&detection, "nvidia.gpus").contains("did not finish within 300 ms"));
}

#[test]
fn a_hanging_grandchild_does_not_hang_the_probe() {
    // A shell that starts `sleep` without exec keeps the output pipe open after it is killed.
    let root = copy_fixture("unknown-model-smi");
    write_script(&root, "/usr/bin/nvidia-smi", "sleep 30\necho never\n");
    let mut ctx = context(&root, Env::default());
    ctx.command_timeout = Duration::from_millis(300);
    let started = Instant::now();
    detect(&ctx).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn failing_or_lying_nvidia_smi_falls_through() {
    for (name, body, expected) in [
        (
            "fails",
            "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n",
            "exited with",
        ),
        ("garbage", "printf '\\001\\002,,,\\n'\n", "listed no GPU"),
        ("empty", "true\n", "listed no GPU"),
        (
            "no devices",
            "echo 'No devices were found'\n",
            "No devices were found",
        ),
    ] {
        let root = copy_fixture("unknown-model-smi");
        write_script(&root, "/usr/bin/nvidia-smi", body);
        let detection = detect(&context(&root, Env::default())).unwrap();
        assert_eq!(
            detection.machine.nvidia.as_ref().unwrap().gpus.len(),
            2,
            "{name}"
        );
        let reasons = tried_reasons(&detection, "nvidia.gpus");
        assert!(reasons.contains(expected), "{name}: {reasons}");
    }
}

#[test]
fn legacy_nvidia_smi_without_compute_cap() {
    let root = copy_fixture("unknown-model-smi");
    write_script(
        &root,
        "/usr/bin/nvidia-smi",
        "case \"$1\" in\n*compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2;;\nesac\necho '470.256.02, Tesla T4'\n",
    );
    let detection = detect(&context(&root, Env::default())).unwrap();
    let nvidia = detection.machine.nvidia.unwrap();
    assert_eq!(nvidia.gpus.len(), 1);
    assert_eq!(
        nvidia.gpus[0].compute_capability,
        Some(ComputeCapability::new(7, 5))
    );
}

/// A GPU library stand-in with a fixed answer.
struct FakeLibrary(&'static str, Result<LibraryReport, LibraryError>);

impl NvidiaLibrary for FakeLibrary {
    fn name(&self) -> &'static str {
        self.0
    }
    fn query(&self) -> Result<LibraryReport, LibraryError> {
        self.1.clone()
    }
}

fn init_failure() -> LibraryError {
    LibraryError::Call {
        function: "nvmlInit_v2",
        code: 9,
        message: Some("NVML_ERROR_DRIVER_NOT_LOADED".into()),
    }
}

#[test]
fn a_library_that_fails_to_initialize_falls_through() {
    let root = copy_fixture("dgx-h100");
    let mut ctx = context(&root, Env::default());
    ctx.nvidia_libraries = vec![
        Box::new(FakeLibrary("NVML", Err(init_failure()))),
        Box::new(FakeLibrary(
            "libcuda",
            Ok(LibraryReport {
                driver_version: None,
                cuda_version: Some("13.0".parse().unwrap()),
                gpus: vec![
                    LibraryGpu {
                        name: Some("NVIDIA H100 80GB HBM3".into()),
                        compute_capability: Some(ComputeCapability::new(9, 0)),
                        integrated: Some(false),
                    };
                    8
                ],
            }),
        )),
    ];
    let detection = detect(&ctx).unwrap();
    let nvidia = detection.machine.nvidia.clone().unwrap();
    assert_eq!(nvidia.cuda_version.unwrap().to_string(), "13.0");
    assert_eq!(nvidia.gpus.len(), 8);
    let fact = detection.facts.get("nvidia.cuda_version").unwrap();
    assert_eq!(
        fact.source.as_ref().unwrap().to_string(),
        "libcuda (library)"
    );
    assert!(
        tried_reasons(&detection, "nvidia.cuda_version").contains("NVML_ERROR_DRIVER_NOT_LOADED")
    );

    // Both failing: the kernel files answer.
    ctx.nvidia_libraries = vec![
        Box::new(FakeLibrary("NVML", Err(init_failure()))),
        Box::new(FakeLibrary(
            "libcuda",
            Err(LibraryError::NotFound("`libcuda.so.1`".into())),
        )),
    ];
    let detection = detect(&ctx).unwrap();
    let nvidia = detection.machine.nvidia.unwrap();
    assert_eq!(nvidia.cuda_version, None);
    assert_eq!(nvidia.gpus.len(), 8);
    assert_eq!(
        nvidia.gpus[0].compute_capability,
        Some(ComputeCapability::new(9, 0))
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_real_library_without_nvml_symbols_falls_through() {
    use wheelgate_selectors::ffi::nvml::Nvml;
    let root = copy_fixture("a10-535");
    let mut ctx = context(&root, Env::default());
    // libm loads on every glibc system and is not NVML.
    ctx.nvidia_libraries = vec![Box::new(Nvml::with_candidates(vec!["libm.so.6".into()]))];
    let detection = detect(&ctx).unwrap();
    assert_eq!(detection.machine.nvidia.as_ref().unwrap().gpus.len(), 1);
    assert!(
        tried_reasons(&detection, "nvidia.cuda_version").contains("has no symbol `nvmlInit_v2`")
    );
}

#[test]
fn nvml_in_a_container_without_devices_reports_none() {
    let root = copy_fixture("dgx-h100");
    let mut ctx = context(&root, Env::default());
    ctx.nvidia_libraries = vec![Box::new(FakeLibrary(
        "NVML",
        Ok(LibraryReport {
            driver_version: Some("580.65.06".parse().unwrap()),
            cuda_version: Some("13.0".parse().unwrap()),
            gpus: Vec::new(),
        }),
    ))];
    let nvidia = detect(&ctx).unwrap().machine.nvidia.unwrap();
    assert!(nvidia.gpus.is_empty());
}
