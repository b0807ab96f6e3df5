//! The Intel probe: GPUs from PCI sysfs, told apart by [`devices`] into XPU targets (Arc,
//! Data Center Max, Core Ultra iGPUs) and ordinary iGPUs, which are no reason to pick `xpu`.

pub mod devices;

use wheelgate_resolver::machine::{Intel, IntelGpu};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
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
    if let Some(ips) = overrides::xpu_devices(&ctx.env)? {
        for (index, ip) in ips.into_iter().enumerate() {
            facts.push(Trail::new(format!("intel.gpu{index}")).found(
                format!("XPU device IP {ip}"),
                Source::Override(overrides::XPU_DEVICE),
            ));
            gpus.push(IntelGpu {
                device_ip: Some(ip),
                xpu_capable: true,
                ..IntelGpu::default()
            });
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
    for (index, device) in devices.into_iter().enumerate() {
        let mut trail = Trail::new(format!("intel.gpu{index}"));
        let key = format!("8086:{:04x}", device.device);
        let source = Source::Table {
            table: TABLE,
            key: key.clone(),
            from: format!("/sys/bus/pci/devices/{}/device", device.address),
        };
        let entry = devices::lookup(device.device);
        let mut gpu = IntelGpu {
            name: entry.map(|e| e.name.to_string()),
            pci_device: Some(device.device),
            device_ip: entry.and_then(|e| e.device_ip).map(str::to_string),
            xpu_capable: entry.is_some_and(|e| e.device_ip.is_some()),
            integrated: entry.map_or(device.address == IGPU_ADDRESS, |e| e.integrated),
        };
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
        let name = gpu
            .name
            .clone()
            .unwrap_or_else(|| format!("Intel GPU {key}"));
        let shown = match (&gpu.device_ip, gpu.xpu_capable) {
            (Some(ip), true) => format!("{name} (XPU, device IP {ip})"),
            _ => format!("{name} (not an XPU target)"),
        };
        if entry.is_none() {
            trail.failed(source.clone(), format!("`{key}` is not in the table"));
        }
        facts.push(trail.found(shown, source));
        gpus.push(gpu);
    }
    Ok(Some(Intel { gpus }))
}
