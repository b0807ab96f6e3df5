//! The CUDA version an NVIDIA driver supports, derived from its version alone: what
//! `nvidia-smi`, NVML's `nvmlSystemGetCudaDriverVersion_v2` and libcuda's `cuDriverGetVersion`
//! report for it, and what NVIDIA's variant provider (nvidia-variant-provider) reports as the
//! machine's CUDA version. Driver 570.86.10 supports CUDA 12.8, 575.57.08 CUDA 12.9, 580.65.06
//! CUDA 13.0.
//!
//! This is one fact, used wherever a machine is known by its driver version only (a client
//! described by token, a container without libcuda): the variant path's
//! `nvidia :: cuda_version_*` properties ([`crate::variants::SupportedProperties`]) and the
//! catalog path's explanation of a build that runs by CUDA minor-version compatibility
//! ([`crate::select`]). The catalog's own rule for whether a build runs is another fact:
//! minor-version compatibility lets any 12.x runtime run on a driver at or above the 12.x floor
//! (`525.60.13`), so a `cu129` build runs on driver 570 (CUDA 12.8); where that rule decides,
//! the explanation says so.

use crate::machine::{Nvidia, Os};
use crate::version::{CudaVersion, DottedVersion};

/// NVIDIA driver branches and the CUDA version each supports, newest first: the lowest driver
/// known to report each CUDA release, Linux and Windows. Newer branches (R590 and on, CUDA 13.1
/// and later) are not listed yet: a driver of one is taken to support at least 13.0
/// ([`DriverCuda::exact`] is `false`). A driver below the last row supports no CUDA this crate
/// knows: the CPU fallback.
///
/// Sources, row by row:
/// - NVIDIA's CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver
///   Versions" (<https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html>, as of
///   CUDA 13.1): the GA row of each release from 11.1 to 13.0, and for 11.0 the 11.0.1 RC row
///   (the 11.0.2 GA row asks for 450.51.05 / 451.48; 450.36.06 already reports 11.0). The
///   table gives no Windows driver for 13.0 ("N/A"): the R580 Windows driver 580.88 reports
///   13.0 in `nvidia-smi`
///   (<https://datascience.stackexchange.com/questions/134251/is-cuda-13-a-thing-or-am-i-misinterpreting-something>).
/// - 12.7 has no toolkit and no row in that table: it is the R565 branch, whose drivers
///   (565.57.01 Linux, 565.90 Windows) report CUDA 12.7 in `nvidia-smi`
///   (<https://github.com/akash-network/website/pull/579>, "565 / 12.7").
/// - 12.4 on Linux: 550.40.07, the R550 beta that came before the toolkit's 550.54.14, already
///   reports 12.4 (<https://github.com/Frogging-Family/nvidia-all/pull/212>).
const DRIVER_BRANCHES: &[(CudaVersion, &str, &str)] = &[
    // (CUDA version, Linux driver, Windows driver)
    (CudaVersion::new(13, 0), "580.65.06", "580.88"),
    (CudaVersion::new(12, 9), "575.51.03", "576.02"),
    (CudaVersion::new(12, 8), "570.26", "570.65"),
    (CudaVersion::new(12, 7), "565.57.01", "565.90"),
    (CudaVersion::new(12, 6), "560.28.03", "560.76"),
    (CudaVersion::new(12, 5), "555.42.02", "555.85"),
    (CudaVersion::new(12, 4), "550.40.07", "551.61"),
    (CudaVersion::new(12, 3), "545.23.06", "545.84"),
    (CudaVersion::new(12, 2), "535.54.03", "536.25"),
    (CudaVersion::new(12, 1), "530.30.02", "531.14"),
    (CudaVersion::new(12, 0), "525.60.13", "527.41"),
    (CudaVersion::new(11, 8), "520.61.05", "520.06"),
    (CudaVersion::new(11, 7), "515.43.04", "516.01"),
    (CudaVersion::new(11, 6), "510.39.01", "511.23"),
    (CudaVersion::new(11, 5), "495.29.05", "496.04"),
    (CudaVersion::new(11, 4), "470.42.01", "471.11"),
    (CudaVersion::new(11, 3), "465.19.01", "465.89"),
    (CudaVersion::new(11, 2), "460.27.03", "460.82"),
    (CudaVersion::new(11, 1), "455.23", "456.38"),
    (CudaVersion::new(11, 0), "450.36.06", "451.22"),
];

/// NVIDIA numbers its driver branches five apart (R570, R575, R580): a driver this many
/// major numbers past the newest branch above may belong to a newer branch than the table
/// knows.
const BRANCH_STEP: u32 = 5;

/// The CUDA version a driver supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverCuda {
    /// The CUDA version (`12.8` for driver 570.86.10).
    pub cuda: CudaVersion,
    /// `false` when the driver is newer than every branch the table knows: it supports at
    /// least [`Self::cuda`], maybe more.
    pub exact: bool,
}

/// The CUDA version `driver` supports, from NVIDIA's table of driver branches: the newest CUDA
/// release whose driver it meets. `None` below CUDA 11.0's driver. Other systems than Windows
/// use the Linux column.
pub fn cuda_version_from_driver(driver: &DottedVersion, os: Os) -> Option<DriverCuda> {
    DRIVER_BRANCHES
        .iter()
        .enumerate()
        .find_map(|(row, (cuda, linux, windows))| {
            let floor: DottedVersion = if os == Os::Windows { windows } else { linux }
                .parse()
                .ok()?;
            (*driver >= floor).then(|| DriverCuda {
                cuda: *cuda,
                exact: row > 0 || driver.major() < floor.major() + BRANCH_STEP,
            })
        })
}

/// Where a machine's CUDA version comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaSource {
    /// Reported by NVML or libcuda on the machine.
    Reported,
    /// Derived from the driver version by [`cuda_version_from_driver`].
    Driver {
        /// The driver version.
        driver: DottedVersion,
        /// Whether the table knows the driver's branch (see [`DriverCuda::exact`]).
        exact: bool,
    },
}

/// The CUDA version an NVIDIA machine supports: the one it reports, else the one its driver
/// version implies. `None` when neither is known, or the driver predates CUDA 11.
pub fn machine_cuda(nvidia: &Nvidia, os: Os) -> Option<(CudaVersion, CudaSource)> {
    if let Some(cuda) = nvidia.cuda_version {
        return Some((cuda, CudaSource::Reported));
    }
    let driver = nvidia.driver_version.as_ref()?;
    let derived = cuda_version_from_driver(driver, os)?;
    Some((
        derived.cuda,
        CudaSource::Driver {
            driver: driver.clone(),
            exact: derived.exact,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(driver: &str, os: Os) -> Option<(String, bool)> {
        cuda_version_from_driver(&driver.parse().unwrap(), os)
            .map(|d| (d.cuda.to_string(), d.exact))
    }

    #[test]
    fn a_driver_supports_its_branch_s_cuda_version() {
        // nvidia-smi's "CUDA Version" for these drivers.
        let cases = [
            ("580.65.06", Os::Linux, "13.0"),
            ("580.105.08", Os::Linux, "13.0"),
            ("575.57.08", Os::Linux, "12.9"),
            ("570.86.10", Os::Linux, "12.8"),
            ("570.26", Os::Linux, "12.8"),
            ("565.57.01", Os::Linux, "12.7"),
            ("560.35.03", Os::Linux, "12.6"),
            ("550.127.05", Os::Linux, "12.4"),
            ("550.40.07", Os::Linux, "12.4"),
            ("535.247.01", Os::Linux, "12.2"),
            ("525.60.13", Os::Linux, "12.0"),
            ("470.256.02", Os::Linux, "11.4"),
            ("450.36.06", Os::Linux, "11.0"),
            ("581.15", Os::Windows, "13.0"),
            ("576.88", Os::Windows, "12.9"),
            ("572.16", Os::Windows, "12.8"),
            ("566.36", Os::Windows, "12.7"),
        ];
        for (driver, os, cuda) in cases {
            assert_eq!(
                derived(driver, os),
                Some((cuda.to_string(), true)),
                "{driver} on {os:?}"
            );
        }
        assert_eq!(derived("440.33", Os::Linux), None);
        assert_eq!(derived("450.36.05", Os::Linux), None);
    }

    #[test]
    fn a_driver_past_the_newest_branch_supports_at_least_its_cuda() {
        assert_eq!(derived("584.10", Os::Linux), Some(("13.0".into(), true)));
        assert_eq!(
            derived("590.44.01", Os::Linux),
            Some(("13.0".into(), false))
        );
    }

    #[test]
    fn a_reported_cuda_version_wins_over_the_driver() {
        let nvidia: Nvidia = serde_json::from_str(
            r#"{"driver_version":"570.86.10","cuda_version":"12.9","gpus":[]}"#,
        )
        .unwrap();
        assert_eq!(
            machine_cuda(&nvidia, Os::Linux),
            Some((CudaVersion::new(12, 9), CudaSource::Reported))
        );
        let nvidia: Nvidia =
            serde_json::from_str(r#"{"driver_version":"570.86.10","gpus":[]}"#).unwrap();
        assert_eq!(
            machine_cuda(&nvidia, Os::Linux).map(|(cuda, _)| cuda),
            Some(CudaVersion::new(12, 8))
        );
    }
}
