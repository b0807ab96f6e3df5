//! The Intel probe with Level Zero: the loader's device IP wins over the PCI-id table, makes a
//! device the table does not know an XPU target when PyTorch lists its IP, and a loader that
//! fails leaves the table's answer with the failure recorded.

use wheelgate_selectors::intel::library::{IntelLibrary, LibraryError, ZeDevice};
use wheelgate_selectors::{Detection, Env, detect};

use crate::support::{context, copy_fixture, write};

/// A Level Zero stand-in that answers what it is given.
struct FakeLevelZero(Result<Vec<ZeDevice>, LibraryError>);

impl IntelLibrary for FakeLevelZero {
    fn name(&self) -> &'static str {
        "Level Zero"
    }

    fn query(&self) -> Result<Vec<ZeDevice>, LibraryError> {
        self.0.clone()
    }
}

fn device(pci_device: u16, device_ip: &str) -> ZeDevice {
    ZeDevice {
        pci_device,
        device_ip: device_ip.into(),
        name: Some("Intel(R) Graphics [0xe2f0]".into()),
        integrated: false,
    }
}

fn detect_with(root: &std::path::Path, level_zero: Option<FakeLevelZero>) -> Detection {
    let mut ctx = context(root, Env::default());
    ctx.intel_libraries = level_zero
        .into_iter()
        .map(|l| Box::new(l) as Box<dyn IntelLibrary>)
        .collect();
    detect(&ctx).unwrap()
}

#[test]
fn level_zero_makes_a_device_the_table_does_not_know_an_xpu_target() {
    // An Arc card with a PCI id newer than the table: the table alone says "not an XPU target".
    let root = copy_fixture("arc-b580");
    assert!(wheelgate_selectors::intel::devices::lookup(0xe2f0).is_none());
    write(
        &root,
        "/sys/bus/pci/devices/0000:03:00.0/device",
        "0xe2f0\n",
    );
    let without = detect_with(&root, None);
    let gpu = &without.machine.intel.as_ref().unwrap().gpus[0];
    assert!(!gpu.xpu_capable, "{gpu:?}");

    let with = detect_with(
        &root,
        Some(FakeLevelZero(Ok(vec![device(0xe2f0, "20.1.0")]))),
    );
    let gpu = &with.machine.intel.as_ref().unwrap().gpus[0];
    assert!(gpu.xpu_capable, "{gpu:?}");
    assert_eq!(gpu.device_ip.as_deref(), Some("20.1.0"));
    assert_eq!(gpu.name.as_deref(), Some("Intel(R) Graphics [0xe2f0]"));
    let fact = with.facts.get("intel.gpu0").unwrap();
    assert_eq!(
        fact.source.as_ref().unwrap().to_string(),
        "Level Zero (library)"
    );

    // An IP PyTorch does not list is still no reason to pick xpu.
    let unlisted = detect_with(
        &root,
        Some(FakeLevelZero(Ok(vec![device(0xe2f0, "99.0.0")]))),
    );
    assert!(!unlisted.machine.intel.as_ref().unwrap().gpus[0].xpu_capable);
}

#[test]
fn level_zero_wins_over_the_table_and_a_failing_loader_leaves_the_table() {
    let root = copy_fixture("arc-b580");
    let table = detect_with(&root, None);
    let table_gpu = table.machine.intel.as_ref().unwrap().gpus[0].clone();
    assert!(table_gpu.xpu_capable);
    let pci = table_gpu.pci_device.unwrap();

    let runtime = detect_with(&root, Some(FakeLevelZero(Ok(vec![device(pci, "20.2.0")]))));
    assert_eq!(
        runtime.machine.intel.as_ref().unwrap().gpus[0]
            .device_ip
            .as_deref(),
        Some("20.2.0")
    );

    let failure = LibraryError::Call {
        function: "zeInit",
        code: 0x7800_0001,
        message: None,
    };
    let failed = detect_with(&root, Some(FakeLevelZero(Err(failure))));
    assert_eq!(failed.machine.intel.as_ref().unwrap().gpus[0], table_gpu);
    let fact = failed.facts.get("intel.gpu0").unwrap();
    let tried: Vec<String> = fact
        .tried
        .iter()
        .map(|a| format!("{}: {}", a.source, a.reason))
        .collect();
    assert!(
        tried
            .iter()
            .any(|t| t.contains("Level Zero") && t.contains("zeInit")),
        "{tried:?}"
    );
}

#[test]
fn a_machine_without_an_intel_gpu_never_asks_level_zero() {
    struct Panicking;
    impl IntelLibrary for Panicking {
        fn name(&self) -> &'static str {
            "Level Zero"
        }
        fn query(&self) -> Result<Vec<ZeDevice>, LibraryError> {
            panic!("Level Zero was asked on a machine without an Intel GPU");
        }
    }
    let root = copy_fixture("dgx-h100");
    let mut ctx = context(&root, Env::default());
    ctx.intel_libraries = vec![Box::new(Panicking)];
    assert!(detect(&ctx).unwrap().machine.intel.is_none());
}

#[test]
fn an_ordinary_igpu_the_table_knows_never_asks_level_zero() {
    struct Panicking;
    impl IntelLibrary for Panicking {
        fn name(&self) -> &'static str {
            "Level Zero"
        }
        fn query(&self) -> Result<Vec<ZeDevice>, LibraryError> {
            panic!("Level Zero was asked about a UHD iGPU the table settles");
        }
    }
    let root = copy_fixture("intel-uhd-laptop");
    let mut ctx = context(&root, Env::default());
    ctx.intel_libraries = vec![Box::new(Panicking)];
    let gpus = detect(&ctx).unwrap().machine.intel.unwrap().gpus;
    assert!(!gpus[0].xpu_capable);
}
