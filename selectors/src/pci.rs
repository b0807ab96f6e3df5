//! Display devices on the PCI bus, from sysfs: GPUs are there whether or not a driver is
//! loaded, so this tells "an NVIDIA GPU without its driver" from "no NVIDIA GPU".

use crate::source::{Fact, Source, Trail};
use crate::sysroot::Sysroot;

/// PCI vendor id of NVIDIA.
pub const NVIDIA: u16 = 0x10de;
/// PCI vendor id of AMD (ATI).
pub const AMD: u16 = 0x1002;
/// PCI vendor id of Intel.
pub const INTEL: u16 = 0x8086;

const DEVICES: &str = "/sys/bus/pci/devices";

/// One display-class PCI device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciDevice {
    /// Bus address (`0000:18:00.0`).
    pub address: String,
    /// PCI vendor id (`0x10de` NVIDIA, `0x1002` AMD, `0x8086` Intel).
    pub vendor: u16,
    /// PCI device id.
    pub device: u16,
    /// Class code (`0x030000` VGA, `0x030200` 3D controller).
    pub class: u32,
}

/// Why a PCI attribute file was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a hexadecimal PCI id")]
pub struct PciParseError(String);

/// Reads a sysfs PCI attribute. Example contents: `0x10de` (vendor), `0x2330` (device),
/// `0x030200` (class).
pub fn parse_hex(content: &str) -> Result<u32, PciParseError> {
    let text = content.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || digits.len() > 8 {
        return Err(PciParseError(text.to_string()));
    }
    u32::from_str_radix(digits, 16).map_err(|_| PciParseError(text.to_string()))
}

/// Lists the display-class devices (class `0x03xxxx`). Reads each device's `class` first and the
/// other attributes only for displays, since a server has a hundred PCI functions. A device
/// whose files cannot be read is skipped with the reason logged.
pub fn scan(sysroot: &Sysroot) -> (Vec<PciDevice>, Fact) {
    let mut trail = Trail::new("pci.display_devices");
    let addresses = match sysroot.list(DEVICES) {
        Ok(addresses) => addresses,
        Err(error) => {
            trail.failed(Source::File(DEVICES.into()), error);
            return (Vec::new(), trail.not_found());
        }
    };
    let mut devices = Vec::new();
    for address in addresses {
        let read = |attribute: &str| {
            let path = format!("{DEVICES}/{address}/{attribute}");
            sysroot
                .read(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| parse_hex(&text).map_err(|e| e.to_string()))
                .map_err(|reason| (path, reason))
        };
        let device = read("class").and_then(|class| {
            if class >> 16 != 0x03 {
                return Ok(None);
            }
            let vendor = read("vendor")?;
            let device = read("device")?;
            Ok(Some(PciDevice {
                address: address.clone(),
                vendor: u16::try_from(vendor).unwrap_or_default(),
                device: u16::try_from(device).unwrap_or_default(),
                class,
            }))
        });
        match device {
            Ok(Some(device)) => devices.push(device),
            Ok(None) => {}
            Err((path, reason)) => trail.failed(Source::File(path), reason),
        }
    }
    // `10de:2330 x8, 102b:0536`: ids in bus order, identical ones counted.
    let mut shown: Vec<(String, usize)> = Vec::new();
    for device in &devices {
        let id = format!("{:04x}:{:04x}", device.vendor, device.device);
        match shown.iter_mut().find(|(seen, _)| *seen == id) {
            Some((_, count)) => *count += 1,
            None => shown.push((id, 1)),
        }
    }
    let value = if shown.is_empty() {
        "none".to_string()
    } else {
        shown
            .iter()
            .map(|(id, count)| match count {
                1 => id.clone(),
                _ => format!("{id} x{count}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    (devices, trail.found(value, Source::File(DEVICES.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_hex() {
        assert_eq!(parse_hex("0x10de\n"), Ok(0x10de));
        assert_eq!(parse_hex("0x030200"), Ok(0x03_0200));
        assert!(parse_hex("").is_err());
        assert!(parse_hex("0xzz").is_err());
        assert!(parse_hex("0x123456789").is_err());
    }
}
