//! The interface between the Intel probe and Level Zero, so the probe can be tested with a
//! loader that fails in any way without loading a real one.

use std::fmt;

pub use crate::nvidia::library::LibraryError;

/// One GPU as Level Zero reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeDevice {
    /// PCI device id (`0xe20b` for an Arc B580), to match the device found in sysfs.
    pub pci_device: u16,
    /// The device IP version, `arch.release.revision` (`20.1.0` for Battlemage).
    pub device_ip: String,
    /// The device's name, where Level Zero gives one.
    pub name: Option<String>,
    /// An integrated GPU, as Level Zero reports it.
    pub integrated: bool,
}

/// A source of Level Zero device descriptions.
pub trait IntelLibrary: Send + Sync {
    /// Name shown as the source of facts (`Level Zero`).
    fn name(&self) -> &'static str;
    /// Loads the library if needed and lists the Intel GPUs it sees.
    fn query(&self) -> Result<Vec<ZeDevice>, LibraryError>;
}

impl fmt::Debug for dyn IntelLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `arch.release.revision` of a Level Zero IP version: `(arch << 22) | (release << 14) |
/// revision`, the form Intel's `ocloc ids` prints.
pub fn ip_version_string(ip_version: u32) -> String {
    format!(
        "{}.{}.{}",
        ip_version >> 22,
        (ip_version >> 14) & 0xff,
        ip_version & 0x3fff
    )
}

#[cfg(test)]
mod tests {
    use super::ip_version_string;

    #[test]
    fn decodes_ip_versions_as_ocloc_prints_them() {
        assert_eq!(ip_version_string((20 << 22) | (1 << 14)), "20.1.0");
        assert_eq!(ip_version_string((12 << 22) | (55 << 14) | 8), "12.55.8");
        assert_eq!(ip_version_string((12 << 22) | (71 << 14) | 4), "12.71.4");
    }
}
