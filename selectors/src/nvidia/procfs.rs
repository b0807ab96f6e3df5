//! Parsers of the NVIDIA kernel module's files: the cheapest and most reliable sources, readable
//! without loading any library.

use wheelgate_resolver::DottedVersion;

/// A kernel file whose content is not what the driver writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcfsError {
    #[error("no driver version in `{0}`")]
    /// No driver version in the text; holds an excerpt of it.
    NoVersion(String),
    #[error("no `Model:` line in the GPU information")]
    /// The GPU information file has no `Model:` line.
    NoModel,
}

fn excerpt(content: &str) -> String {
    let line = content.lines().next().unwrap_or_default().trim();
    line.chars().take(80).collect()
}

/// `/sys/module/nvidia/version`:
/// ```text
/// 580.65.06
/// ```
pub fn parse_module_version(content: &str) -> Result<DottedVersion, ProcfsError> {
    let text = content.trim();
    text.parse::<DottedVersion>()
        .ok()
        .filter(|v| v.parts().len() >= 2)
        .ok_or_else(|| ProcfsError::NoVersion(excerpt(content)))
}

/// `/proc/driver/nvidia/version`, fields separated by two spaces:
/// ```text
/// NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 02:30:36 UTC 2025
/// GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)
/// ```
/// or, for the proprietary module of older drivers,
/// ```text
/// NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02  Thu May  2 14:37:44 UTC 2024
/// ```
pub fn parse_proc_version(content: &str) -> Result<DottedVersion, ProcfsError> {
    content
        .lines()
        .find_map(|line| line.trim().strip_prefix("NVRM version:"))
        .and_then(|rest| {
            rest.split_whitespace()
                .filter_map(|word| word.parse::<DottedVersion>().ok())
                .find(|v| v.parts().len() >= 2)
        })
        .ok_or_else(|| ProcfsError::NoVersion(excerpt(content)))
}

/// One GPU as the kernel module describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInformation {
    /// `NVIDIA H100 80GB HBM3`.
    pub model: String,
    /// `0000:18:00.0`.
    pub bus_location: Option<String>,
    /// N of `/dev/nvidiaN`.
    pub device_minor: Option<u32>,
    /// Excluded from use by the administrator (`NVreg_ExcludedGpus`).
    pub excluded: bool,
}

/// `/proc/driver/nvidia/gpus/<pci address>/information`:
/// ```text
/// Model:          NVIDIA H100 80GB HBM3
/// IRQ:            0
/// GPU UUID:      GPU-5c6fa9a4-0a43-2c8a-1e47-3f1c2e1c9d01
/// Video BIOS:      96.00.99.00.01
/// Bus Type:      PCIe
/// DMA Size:      52 bits
/// DMA Mask:      0xfffffffffffff
/// Bus Location:      0000:18:00.0
/// Device Minor:      0
/// GPU Excluded:     No
/// ```
pub fn parse_gpu_information(content: &str) -> Result<GpuInformation, ProcfsError> {
    let mut model = None;
    let mut bus_location = None;
    let mut device_minor = None;
    let mut excluded = false;
    for line in content.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Model" if !value.is_empty() => model = Some(value.to_string()),
            "Bus Location" if !value.is_empty() => bus_location = Some(value.to_ascii_lowercase()),
            "Device Minor" => device_minor = value.parse().ok(),
            "GPU Excluded" => excluded = value.eq_ignore_ascii_case("yes"),
            _ => {}
        }
    }
    Ok(GpuInformation {
        model: model.ok_or(ProcfsError::NoModel)?,
        bus_location,
        device_minor,
        excluded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_driver_versions() {
        assert_eq!(
            parse_module_version("580.65.06\n").unwrap().to_string(),
            "580.65.06"
        );
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 02:30:36 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n";
        assert_eq!(parse_proc_version(open).unwrap().to_string(), "580.65.06");
        let legacy = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02  Thu May  2 14:37:44 UTC 2024\nGCC version:  gcc version 9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2)\n";
        assert_eq!(
            parse_proc_version(legacy).unwrap().to_string(),
            "470.256.02"
        );
    }

    #[test]
    fn refuses_garbage_and_truncation() {
        for garbage in [
            "",
            "\u{0}\u{0}",
            "garbage",
            "580",
            "NVRM version: NVIDIA UNIX",
        ] {
            assert!(parse_module_version(garbage).is_err(), "{garbage:?}");
            assert!(parse_proc_version(garbage).is_err(), "{garbage:?}");
        }
        assert_eq!(
            parse_gpu_information("IRQ: 0\nBus Location: 0000:18:00.0\n"),
            Err(ProcfsError::NoModel)
        );
        assert_eq!(parse_gpu_information("Model:"), Err(ProcfsError::NoModel));
    }

    #[test]
    fn reads_gpu_information() {
        let content = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-5c6fa9a4-0a43-2c8a-1e47-3f1c2e1c9d01\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t 0000:18:00.0\nDevice Minor: \t 3\nGPU Excluded:\t No\n";
        let info = parse_gpu_information(content).unwrap();
        assert_eq!(info.model, "NVIDIA H100 80GB HBM3");
        assert_eq!(info.bus_location.as_deref(), Some("0000:18:00.0"));
        assert_eq!(info.device_minor, Some(3));
        assert!(!info.excluded);
    }
}
