//! The Intel probe: GPUs from PCI sysfs, told apart by [`devices`] into XPU targets (Arc,
//! Data Center Max, Core Ultra iGPUs) and ordinary iGPUs, which are no reason to pick `xpu`.

pub mod devices;
pub mod library;

use wheelgate_resolver::machine::{Intel, IntelGpu};

use wheelgate_resolver::Catalog;

use crate::context::ProbeContext;
use crate::overrides::{self, IntelDeviceFact, OverrideError};
use crate::pci::{self, PciDevice};
use crate::source::{Facts, Source, Trail};

const TABLE: &str = "Intel device table";
/// The address of an Intel CPU's integrated GPU, on every generation.
const IGPU_ADDRESS: &str = "0000:00:02.0";

/// Describes the Intel GPUs, or `None` without any.
pub fn probe(
    ctx: &ProbeContext,
    linux: bool,
    pci: &[PciDevice],
    facts: &mut Facts,
) -> Result<Option<Intel>, OverrideError> {
    let mut gpus = Vec::new();
    if let Some(stated) = overrides::xpu_devices(&ctx.env)? {
        // An override states what the device is; whether PyTorch supports it is judged as for a
        // probed device: a PCI id through the device table, a device IP by the catalog at
        // selection.
        for (index, fact) in stated.into_iter().enumerate() {
            let source = Source::Override(overrides::XPU_DEVICE);
            let trail = Trail::new(format!("intel.gpu{index}"));
            let gpu = match fact {
                IntelDeviceFact::DeviceIp(ip) => {
                    facts.push(trail.found(format!("Intel GPU, device IP {ip}"), source));
                    IntelGpu {
                        device_ip: Some(ip),
                        xpu_capable: true,
                        ..IntelGpu::default()
                    }
                }
                IntelDeviceFact::PciDevice(id) => {
                    let gpu = from_table(id, false);
                    facts.push(trail.found(describe(&gpu, id), source));
                    gpu
                }
            };
            gpus.push(gpu);
        }
        return Ok((!gpus.is_empty()).then_some(Intel { gpus }));
    }
    if !linux {
        return Ok(None);
    }
    let devices: Vec<&PciDevice> = pci.iter().filter(|d| d.vendor == pci::INTEL).collect();
    if devices.is_empty() {
        let mut trail = Trail::new("intel.gpus");
        trail.failed(
            Source::File("/sys/bus/pci/devices".into()),
            "no Intel display device",
        );
        facts.push(trail.none());
        return Ok(None);
    }
    // The XPU runtime reaches a GPU through its DRM render node; without one (a container that
    // was not given /dev/dri) the device cannot be used.
    let render_node = match ctx.sysroot.list("/dev/dri") {
        Ok(entries) => Ok(entries.iter().any(|e| e.starts_with("renderD"))),
        Err(error) => Err(error.to_string()),
    };
    // Level Zero's zeInit takes tens of milliseconds: ask it only when the table cannot settle
    // a device alone (unknown to it, or an XPU target whose IP the runtime should confirm),
    // so an ordinary laptop iGPU stays on the fast path.
    let needs_runtime = devices
        .iter()
        .any(|d| devices::lookup(d.device).is_none_or(|e| e.device_ip.is_some()));
    let level_zero = if needs_runtime {
        ask_level_zero(ctx)
    } else {
        None
    };
    for (index, device) in devices.into_iter().enumerate() {
        let mut trail = Trail::new(format!("intel.gpu{index}"));
        let key = format!("8086:{:04x}", device.device);
        let table_source = Source::Table {
            table: TABLE,
            key: key.clone(),
            from: format!("/sys/bus/pci/devices/{}/device", device.address),
        };
        if devices::lookup(device.device).is_none() {
            trail.failed(table_source.clone(), format!("`{key}` is not in the table"));
        }
        let mut source = table_source;
        let mut gpu = from_table(device.device, device.address == IGPU_ADDRESS);
        if let Some(name) =
            apply_level_zero(level_zero.as_ref(), device.device, &mut gpu, &mut trail)
        {
            source = Source::Library(name);
        }
        if gpu.xpu_capable {
            match &render_node {
                Ok(true) => {}
                Ok(false) => {
                    trail.failed(
                        Source::File("/dev/dri".into()),
                        "no renderD* node: the XPU runtime cannot use the GPU here",
                    );
                    gpu.xpu_capable = false;
                }
                Err(reason) => {
                    trail.failed(
                        Source::File("/dev/dri".into()),
                        format!("{reason}: the XPU runtime cannot use the GPU here"),
                    );
                    gpu.xpu_capable = false;
                }
            }
        }
        facts.push(trail.found(describe(&gpu, device.device), source));
        gpus.push(gpu);
    }
    Ok(Some(Intel { gpus }))
}

/// A GPU as the device table describes PCI id `device`; one it does not know is no XPU target,
/// integrated when it sits where Intel CPUs put their iGPU (`at_igpu_address`).
fn from_table(device: u16, at_igpu_address: bool) -> IntelGpu {
    let entry = devices::lookup(device);
    IntelGpu {
        name: entry.map(|e| e.name.to_string()),
        pci_device: Some(device),
        device_ip: entry.and_then(|e| e.device_ip).map(str::to_string),
        xpu_capable: entry.is_some_and(|e| e.device_ip.is_some()),
        integrated: entry.map_or(at_igpu_address, |e| e.integrated),
    }
}

/// The fact line for a GPU: `Intel Arc B580 (XPU, device IP 20.1.0)`.
fn describe(gpu: &IntelGpu, device: u16) -> String {
    let name = gpu
        .name
        .clone()
        .unwrap_or_else(|| format!("Intel GPU 8086:{device:04x}"));
    match (&gpu.device_ip, gpu.xpu_capable) {
        (Some(ip), true) => format!("{name} (XPU, device IP {ip})"),
        _ => format!("{name} (not an XPU target)"),
    }
}

/// Level Zero's device IP is the runtime's own word: it wins over the table's, and it makes a
/// device the table does not know an XPU target when PyTorch lists its IP. Returns the
/// library's name when it described the device.
fn apply_level_zero(
    level_zero: Option<&LevelZeroAnswer>,
    pci_device: u16,
    gpu: &mut IntelGpu,
    trail: &mut Trail,
) -> Option<&'static str> {
    let (name, answer) = level_zero?;
    let reported = match answer {
        Ok(reported) => reported,
        Err(error) => {
            trail.failed(Source::Library(name), error);
            return None;
        }
    };
    let Some(ze) = reported.iter().find(|z| z.pci_device == pci_device) else {
        trail.failed(Source::Library(name), "does not list this device");
        return None;
    };
    let listed = Catalog::embedded().xpu_device_ips().contains(&ze.device_ip);
    gpu.xpu_capable = gpu.xpu_capable || listed;
    gpu.device_ip = Some(ze.device_ip.clone());
    gpu.integrated = ze.integrated;
    if gpu.name.is_none() {
        gpu.name.clone_from(&ze.name);
    }
    Some(name)
}

/// A library's name and what it answered.
type LevelZeroAnswer = (
    &'static str,
    Result<Vec<library::ZeDevice>, library::LibraryError>,
);

/// The first Intel library's answer, with its name; `None` when none may be loaded.
fn ask_level_zero(
    ctx: &ProbeContext,
) -> Option<(
    &'static str,
    Result<Vec<library::ZeDevice>, library::LibraryError>,
)> {
    let library = ctx.intel_libraries.first()?;
    Some((library.name(), library.query()))
}
