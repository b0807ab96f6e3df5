//! Intel GPUs by PCI device id: which ones PyTorch's XPU builds support, and their Level Zero
//! device IP version.
//!
//! Sources: PyTorch's XPU support list (Arc A and B, Data Center GPU Max, Core Ultra Meteor Lake,
//! Arrow Lake-H, Lunar Lake and Panther Lake iGPUs), the IP versions of PyTorch 2.10's
//! `variants.json` (`reference/pytorch-variants.toml`), and device ids from the Linux `xe`/`i915`
//! drivers' PCI id lists. Any other Intel GPU (UHD, Iris Xe) is not an XPU target.

/// What the table knows of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntelDevice {
    /// The marketing name (`Arc B580`).
    pub name: &'static str,
    /// Level Zero device IP version, for XPU targets.
    pub device_ip: Option<&'static str>,
    /// An integrated GPU rather than a discrete card.
    pub integrated: bool,
}

const fn xpu(name: &'static str, ip: &'static str, integrated: bool) -> IntelDevice {
    IntelDevice {
        name,
        device_ip: Some(ip),
        integrated,
    }
}

const fn igpu(name: &'static str) -> IntelDevice {
    IntelDevice {
        name,
        device_ip: None,
        integrated: true,
    }
}

/// Inclusive device-id ranges, newest first.
const DEVICES: &[(u16, u16, IntelDevice)] = &[
    (
        0xb080,
        0xb0b0,
        xpu("Intel Arc Graphics (Panther Lake)", "30.0.4", true),
    ),
    (0xe20b, 0xe20b, xpu("Intel Arc B580", "20.1.0", false)),
    (0xe20c, 0xe20c, xpu("Intel Arc B570", "20.1.0", false)),
    (
        0xe202,
        0xe223,
        xpu("Intel Arc B-series (Battlemage)", "20.1.0", false),
    ),
    (
        0x6420,
        0x6420,
        xpu("Intel Arc Graphics (Lunar Lake)", "20.4.4", true),
    ),
    (
        0x64a0,
        0x64a0,
        xpu("Intel Arc Graphics (Lunar Lake)", "20.4.4", true),
    ),
    (
        0x64b0,
        0x64b0,
        xpu("Intel Arc Graphics (Lunar Lake)", "20.4.4", true),
    ),
    (
        0x7d51,
        0x7d51,
        xpu("Intel Arc Graphics (Arrow Lake-H)", "12.74.4", true),
    ),
    (
        0x7dd1,
        0x7dd1,
        xpu("Intel Arc Graphics (Arrow Lake-H)", "12.74.4", true),
    ),
    (
        0x7d40,
        0x7d40,
        xpu("Intel Graphics (Meteor Lake)", "12.71.4", true),
    ),
    (
        0x7d45,
        0x7d45,
        xpu("Intel Arc Graphics (Meteor Lake)", "12.71.4", true),
    ),
    (
        0x7d55,
        0x7d55,
        xpu("Intel Arc Graphics (Meteor Lake)", "12.71.4", true),
    ),
    (
        0x7dd5,
        0x7dd5,
        xpu("Intel Arc Graphics (Meteor Lake)", "12.71.4", true),
    ),
    (
        0x0bd0,
        0x0bdb,
        xpu("Intel Data Center GPU Max", "12.60.7", false),
    ),
    (0x56a0, 0x56a0, xpu("Intel Arc A770", "12.55.8", false)),
    (0x56a1, 0x56a1, xpu("Intel Arc A750", "12.55.8", false)),
    (0x56a5, 0x56a5, xpu("Intel Arc A380", "12.55.8", false)),
    (0x56a6, 0x56a6, xpu("Intel Arc A310", "12.55.8", false)),
    (
        0x5690,
        0x56c1,
        xpu("Intel Arc A-series (Alchemist)", "12.55.8", false),
    ),
    (0xa780, 0xa780, igpu("Intel UHD Graphics 770")),
    (0x4680, 0x4680, igpu("Intel UHD Graphics 770")),
    (0x46a6, 0x46a6, igpu("Intel Iris Xe Graphics")),
    (0x9a49, 0x9a49, igpu("Intel Iris Xe Graphics")),
    (0x3e92, 0x3e92, igpu("Intel UHD Graphics 630")),
    (0x3e9b, 0x3e9b, igpu("Intel UHD Graphics 630")),
    (0x3ea0, 0x3ea0, igpu("Intel UHD Graphics 620")),
    (0x5917, 0x5917, igpu("Intel UHD Graphics 620")),
];

/// The table's entry for a device id (vendor `0x8086`).
pub fn lookup(device: u16) -> Option<IntelDevice> {
    DEVICES
        .iter()
        .find(|(low, high, _)| (*low..=*high).contains(&device))
        .map(|(_, _, entry)| *entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_xpu_targets_from_ordinary_igpus() {
        assert_eq!(lookup(0xe20b).unwrap().device_ip, Some("20.1.0"));
        assert_eq!(lookup(0x56a0).unwrap().name, "Intel Arc A770");
        assert_eq!(lookup(0x56b0).unwrap().device_ip, Some("12.55.8"));
        assert!(lookup(0x7d55).unwrap().integrated);
        assert_eq!(lookup(0x5917).unwrap().device_ip, None);
        assert_eq!(lookup(0x1234), None);
    }
}
