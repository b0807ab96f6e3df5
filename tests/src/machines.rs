//! The machines the end-to-end tests resolve for, and the torch build each must get from the
//! fake index (torch 2.9.0 for `cpu`, `cu126`, `cu128`, `cu130`, `rocm6.4`, `xpu`), following
//! the resolver's rules: the accelerator class first, then the newest usable CUDA whose driver
//! floor the driver meets and whose compiled architectures cover every GPU.

use wheelgate_resolver::Machine;

/// A machine and the build `pip install torch` must install on it.
#[derive(Debug, Clone, Copy)]
pub struct TestMachine {
    pub name: &'static str,
    /// The machine as JSON (`wheelgate_resolver::Machine`).
    pub json: &'static str,
    /// The backend torch 2.9.0 resolves to.
    pub backend: &'static str,
    /// The backend the same accelerators get on Linux aarch64 and on Windows, as the fake index
    /// publishes builds there (no ROCm or XPU on aarch64, no Volta or Pascal in its CUDA
    /// builds); on macOS every machine gets the one unlabelled build.
    pub aarch64: &'static str,
    pub windows: &'static str,
}

impl TestMachine {
    pub fn machine(&self) -> Machine {
        serde_json::from_str(self.json)
            .unwrap_or_else(|err| panic!("machine `{}`: {err}", self.name))
    }

    /// `2.9.0+<backend>`
    pub fn torch(&self) -> String {
        format!("2.9.0+{}", self.backend)
    }

    /// The torch 2.9.0 wheel this kind of machine gets on each platform: Linux x86_64, Linux
    /// aarch64, Windows and macOS, in that order.
    pub fn torch_wheels(&self) -> [String; 4] {
        use crate::catalog::{LINUX_AARCH64, LINUX_X86_64, MACOS_ARM64, WIN_AMD64};
        [
            format!("torch-2.9.0+{}-py3-none-{LINUX_X86_64}.whl", self.backend),
            format!("torch-2.9.0+{}-py3-none-{LINUX_AARCH64}.whl", self.aarch64),
            format!("torch-2.9.0+{}-py3-none-{WIN_AMD64}.whl", self.windows),
            format!("torch-2.9.0-py3-none-{MACOS_ARM64}.whl"),
        ]
    }
}

/// No accelerator: the CPU build.
pub const CPU_ONLY: TestMachine = TestMachine {
    name: "cpu-only",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36"}"#,
    backend: "cpu",
    aarch64: "cpu",
    windows: "cpu",
};

/// H100 (9.0) with a CUDA 13 driver: the newest CUDA.
pub const H100: TestMachine = TestMachine {
    name: "h100-driver-580",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#,
    backend: "cu130",
    aarch64: "cu130",
    windows: "cu130",
};

/// RTX 5090 (12.0) with a CUDA 12.8 driver: below CUDA 13's floor, so cu128.
pub const RTX_5090: TestMachine = TestMachine {
    name: "rtx5090-driver-570",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA GeForce RTX 5090","compute_capability":"12.0"}]}}"#,
    backend: "cu128",
    aarch64: "cu128",
    windows: "cu128",
};

/// V100 (7.0) with a CUDA 13 driver: CUDA 13 builds dropped Volta, so cu128.
pub const V100: TestMachine = TestMachine {
    name: "v100-driver-580",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"Tesla V100-SXM2-32GB","compute_capability":"7.0"}]}}"#,
    backend: "cu128",
    aarch64: "cpu",
    windows: "cu126",
};

/// GTX 1080 Ti (6.1) with a CUDA 13 driver: only cu126 still has Pascal.
pub const GTX_1080_TI: TestMachine = TestMachine {
    name: "gtx1080ti-driver-580",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA GeForce GTX 1080 Ti","compute_capability":"6.1"}]}}"#,
    backend: "cu126",
    aarch64: "cpu",
    windows: "cu126",
};

/// MI300X (gfx942): ROCm.
pub const MI300X: TestMachine = TestMachine {
    name: "mi300x",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#,
    backend: "rocm6.4",
    aarch64: "cpu",
    windows: "cpu",
};

/// Arc B580 (Battlemage): XPU.
pub const ARC_B580: TestMachine = TestMachine {
    name: "arc-b580",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","intel":{"gpus":[{"name":"Intel Arc B580 Graphics","pci_device":57867,"xpu_capable":true}]}}"#,
    backend: "xpu",
    aarch64: "cpu",
    windows: "xpu",
};

/// Every machine above.
pub const ALL: [TestMachine; 7] = [
    CPU_ONLY,
    H100,
    RTX_5090,
    V100,
    GTX_1080_TI,
    MI300X,
    ARC_B580,
];
