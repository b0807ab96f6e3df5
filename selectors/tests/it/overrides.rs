//! Overrides replace probed facts; an empty value is absent; a bad value is a clear error.

use wheelgate_resolver::select::select_release;
use wheelgate_resolver::{Backend, Catalog, Policy};
use wheelgate_selectors::overrides::{self as vars};
use wheelgate_selectors::{DetectError, Env, backend_override, detect};

use crate::support::{context, machines_dir};

#[test]
fn overrides_describe_a_target_machine_on_a_gpu_less_one() {
    let root = machines_dir().join("no-gpu-cloud-vm/root");
    let env = Env::from_pairs([
        (vars::CUDA_DRIVER, "580.65.06"),
        (vars::CUDA_ARCH, "9.0,9.0"),
        (vars::CUDA_VERSION, "13.0"),
        (vars::PLATFORM, "linux-aarch64"),
        (vars::GLIBC, "2.39"),
        (vars::BACKEND, "cu130"),
    ]);
    let detection = detect(&context(&root, env)).unwrap();
    let machine = detection.machine;
    assert_eq!(machine.platform.to_string(), "linux-aarch64");
    assert_eq!(machine.x86_64_level, None);
    let nvidia = machine.nvidia.unwrap();
    assert_eq!(nvidia.driver_version.unwrap().to_string(), "580.65.06");
    assert_eq!(nvidia.cuda_version.unwrap().to_string(), "13.0");
    assert_eq!(nvidia.gpus.len(), 2);
    assert_eq!(
        detection.backend_pin,
        Some("cu130".parse::<Backend>().unwrap())
    );
    let source = detection
        .facts
        .get("nvidia.driver_version")
        .unwrap()
        .source
        .clone();
    assert_eq!(source.unwrap().to_string(), "env WHEELGATE_CUDA_DRIVER");
}

#[test]
fn none_removes_probed_devices() {
    let root = machines_dir().join("rtx3060-intel-igpu/root");
    let env = Env::from_pairs([(vars::CUDA_ARCH, "none"), (vars::XPU_DEVICE, "none")]);
    let machine = detect(&context(&root, env)).unwrap().machine;
    // The driver is still the machine's; no GPU is left for CUDA.
    assert_eq!(machine.nvidia.unwrap().gpus.len(), 0);
    assert_eq!(machine.intel, None);

    let root = machines_dir().join("rx7900xtx/root");
    let env = Env::from_pairs([(vars::AMD_GFX, "none")]);
    assert_eq!(detect(&context(&root, env)).unwrap().machine.amd, None);
}

#[test]
fn gfx_and_xpu_overrides_add_devices() {
    let root = machines_dir().join("no-gpu-cloud-vm/root");
    let env = Env::from_pairs([
        (vars::AMD_GFX, "gfx1151"),
        (vars::ROCM_VERSION, "7.2.0"),
        (vars::XPU_DEVICE, "20.1.0"),
    ]);
    let machine = detect(&context(&root, env)).unwrap().machine;
    let amd = machine.amd.unwrap();
    assert_eq!(amd.gpus[0].gfx.as_str(), "gfx1151");
    assert!(amd.gpus[0].integrated, "gfx1151 is an APU target");
    assert_eq!(amd.rocm_version.unwrap().to_string(), "7.2.0");
    let intel = machine.intel.unwrap();
    assert!(intel.gpus[0].xpu_capable);
    assert_eq!(intel.gpus[0].device_ip.as_deref(), Some("20.1.0"));
}

/// Issue 8: an override states the device; the catalog and the selection rules judge it, as for
/// a probed device. `12.0.0` is an Iris Xe iGPU's device IP, which PyTorch's XPU builds lack.
#[test]
fn xpu_override_states_a_device_that_selection_judges() {
    let root = machines_dir().join("no-gpu-cloud-vm/root");
    let chosen = |stated: &str| {
        let env = Env::from_pairs([(vars::XPU_DEVICE, stated)]);
        let machine = detect(&context(&root, env)).unwrap().machine;
        let version = "2.9.0".parse().unwrap();
        let selection = select_release(
            Catalog::embedded(),
            &machine,
            &Policy::default(),
            "torch",
            Some(&version),
        );
        let text: Vec<String> = selection
            .decision
            .considered
            .iter()
            .map(ToString::to_string)
            .collect();
        (
            selection.decision.chosen.unwrap().to_string(),
            text.join("\n"),
            machine.intel.unwrap().gpus,
        )
    };
    let (backend, why, gpus) = chosen("12.0.0");
    assert_eq!(backend, "cpu", "{why}");
    assert!(
        why.contains("xpu: the Intel GPU has device IP 12.0.0"),
        "{why}"
    );
    assert_eq!(gpus[0].device_ip.as_deref(), Some("12.0.0"));
    // A listed IP and a listed PCI id are XPU targets; an Iris Xe PCI id is not.
    assert_eq!(chosen("20.1.0").0, "xpu");
    let (backend, _, gpus) = chosen("8086:e20b");
    assert_eq!(backend, "xpu");
    assert_eq!(gpus[0].name.as_deref(), Some("Intel Arc B580"));
    assert_eq!(gpus[0].device_ip.as_deref(), Some("20.1.0"));
    let (backend, _, gpus) = chosen("0x9a49");
    assert_eq!(backend, "cpu");
    assert!(!gpus[0].xpu_capable);
    // Several GPUs: one supported device is enough.
    assert_eq!(chosen("12.0.0,20.4.4").0, "xpu");
}

#[test]
fn empty_values_are_absent() {
    let root = machines_dir().join("dgx-h100/root");
    let env = Env::from_pairs([
        (vars::CUDA_DRIVER, ""),
        (vars::CUDA_ARCH, ""),
        (vars::BACKEND, ""),
    ]);
    let detection = detect(&context(&root, env)).unwrap();
    let nvidia = detection.machine.nvidia.unwrap();
    assert_eq!(nvidia.driver_version.unwrap().to_string(), "580.65.06");
    assert_eq!(nvidia.gpus.len(), 8);
    assert_eq!(detection.backend_pin, None);
}

#[test]
fn a_malformed_override_is_a_clear_error() {
    let root = machines_dir().join("no-gpu-cloud-vm/root");
    for (var, value) in [
        (vars::CUDA_DRIVER, "latest"),
        (vars::CUDA_ARCH, "9.0,hopper"),
        (vars::AMD_GFX, "navi31"),
        (vars::PLATFORM, "beos-x86"),
        (vars::BACKEND, "cuda"),
        (vars::X86_64_LEVEL, "9"),
    ] {
        let env = Env::from_pairs([(var, value)]);
        let error = detect(&context(&root, env)).unwrap_err();
        let DetectError::Override(error) = error;
        assert_eq!(error.var, var);
        assert!(error.to_string().contains(value), "{error}");
    }
}

#[test]
fn the_backend_pin_is_read_from_an_explicit_environment() {
    let env = Env::from_pairs([(vars::BACKEND, "rocm6.4")]);
    assert_eq!(
        backend_override(&env).unwrap(),
        Some("rocm6.4".parse().unwrap())
    );
    assert_eq!(backend_override(&Env::default()).unwrap(), None);
}

#[test]
fn every_variable_is_documented_in_the_list() {
    let names: Vec<&str> = vars::ALL.iter().map(|(name, _)| *name).collect();
    for var in [
        vars::SYSROOT,
        vars::BACKEND,
        vars::CUDA_DRIVER,
        vars::CUDA_ARCH,
        vars::AMD_GFX,
        vars::XPU_DEVICE,
        vars::PLATFORM,
    ] {
        assert!(names.contains(&var), "{var}");
    }
    assert!(names.iter().all(|n| n.starts_with("WHEELGATE_")));
}
