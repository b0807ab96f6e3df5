//! A second catalog whose wheels carry torch's real dependency structure
//! (`shared/reference/torch-dependencies.md`, read from the registry's metadata on 2026-11-22),
//! for the mirror's resolution tests: markers, Requires-Python, per-backend `nvidia-*` pins, the
//! `sympy → mpmath` and `Jinja2 → MarkupSafe` chains, a newer `mpmath` the pin excludes, older
//! versions a Python 3.10 environment needs, and planted squatters.
//!
//! PyTorch side: torch 2.9.0 and torchvision 0.24.0 for `cpu`, `cu128` and `cu130` on Linux
//! x86_64 and aarch64. The CUDA builds pin their own `nvidia-*` packages: cu128 the 16 `-cu12`
//! pins of the reference (PyPI's torch 2.9.0 is that build), cu130 a different set with `-cu13`
//! names (representative versions: the reference lists only the cu128 build). General side: the
//! dependencies in the versions the reference names plus the older ones Python 3.10 needs,
//! the `nvidia-*` wheels (built here, as the reference says), and a squatter: `pytorch-triton`
//! 99.0 (torch and torchvision, which PyTorch also publishes on PyPI, are merged from both
//! indexes; none is published here).
//!
//! Every wheel is `py3-none-<platform>` (or `any`), so the host's Python installs it.

use std::sync::OnceLock;

use crate::catalog::{Catalog, LINUX_AARCH64, LINUX_X86_64, LinkForm, PypiFile, PytorchFile};
use crate::wheels::WheelSpec;

/// The marker of the CUDA libraries and triton.
const LINUX_X86: &str = "platform_system == \"Linux\" and platform_machine == \"x86_64\"";

/// The `nvidia-*` pins of torch 2.9.0+cu128 (the reference's list).
pub const CU128_PINS: [(&str, &str); 16] = [
    ("nvidia-cuda-nvrtc-cu12", "12.8.93"),
    ("nvidia-cuda-runtime-cu12", "12.8.90"),
    ("nvidia-cuda-cupti-cu12", "12.8.90"),
    ("nvidia-cudnn-cu12", "9.10.2.21"),
    ("nvidia-cublas-cu12", "12.8.4.1"),
    ("nvidia-cufft-cu12", "11.3.3.83"),
    ("nvidia-curand-cu12", "10.3.9.90"),
    ("nvidia-cusolver-cu12", "11.7.3.90"),
    ("nvidia-cusparse-cu12", "12.5.8.93"),
    ("nvidia-cusparselt-cu12", "0.7.1"),
    ("nvidia-nccl-cu12", "2.27.5"),
    ("nvidia-nvshmem-cu12", "3.3.20"),
    ("nvidia-nvtx-cu12", "12.8.90"),
    ("nvidia-nvjitlink-cu12", "12.8.93"),
    ("nvidia-cufile-cu12", "1.13.1.3"),
    ("triton", "3.5.0"),
];

/// The `nvidia-*` pins of torch 2.9.0+cu130 (other names and versions than cu128's).
pub const CU130_PINS: [(&str, &str); 7] = [
    ("nvidia-cuda-runtime-cu13", "13.0.96"),
    ("nvidia-cublas-cu13", "13.1.0.3"),
    ("nvidia-cudnn-cu13", "9.13.0.50"),
    ("nvidia-nccl-cu13", "2.27.7"),
    ("nvidia-nvshmem-cu13", "3.3.24"),
    ("nvidia-nvjitlink-cu13", "13.0.88"),
    ("triton", "3.5.0"),
];

/// Backends the reference catalog publishes torch and torchvision for.
pub const BACKENDS: [&str; 3] = ["cpu", "cu128", "cu130"];

/// The catalog, built once per test process.
pub fn reference() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(build)
}

fn torch(backend: &str, platform: &str) -> WheelSpec {
    let mut spec = WheelSpec::new(
        "torch",
        &format!("2.9.0+{backend}"),
        &format!("py3-none-{platform}"),
    )
    .requires_python(">=3.10")
    .requires("filelock")
    .requires("typing-extensions>=4.10.0")
    .requires("setuptools; python_version >= \"3.12\"")
    .requires("sympy>=1.13.3")
    .requires("networkx>=2.5.1")
    .requires("jinja2")
    .requires("fsspec>=0.8.5")
    .requires("opt-einsum>=3.3; extra == \"opt-einsum\"");
    let pins: &[(&str, &str)] = match backend {
        "cu128" => &CU128_PINS,
        "cu130" => &CU130_PINS,
        _ => &[],
    };
    for (name, version) in pins {
        spec = spec.requires(&format!("{name}=={version}; {LINUX_X86}"));
    }
    spec
}

fn pytorch(project: &str, backend: &str, spec: &WheelSpec) -> PytorchFile {
    PytorchFile {
        project: project.to_string(),
        backend: Some(backend.to_string()),
        dir: backend.to_string(),
        link: LinkForm::RootRelative,
        upload_time: None,
        has_metadata: true,
        wheel: spec.build(),
    }
}

fn pypi(spec: &WheelSpec) -> PypiFile {
    PypiFile {
        project: wheelgate_resolver_name(&spec.name),
        version: spec.version.clone(),
        requires_python: spec.requires_python.clone(),
        upload_time: "2026-11-01T00:00:00Z",
        wheel: spec.build(),
    }
}

/// PEP 503 normalization (the fake PyPI lists projects by normalized name).
fn wheelgate_resolver_name(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

fn build() -> Catalog {
    let mut pytorch_files = Vec::new();
    for backend in BACKENDS {
        for platform in [LINUX_X86_64, LINUX_AARCH64] {
            pytorch_files.push(pytorch("torch", backend, &torch(backend, platform)));
            let vision = WheelSpec::new(
                "torchvision",
                &format!("0.24.0+{backend}"),
                &format!("py3-none-{platform}"),
            )
            .requires_python(">=3.10")
            .requires("numpy")
            .requires("torch (==2.9.0)")
            .requires("pillow (!=8.3.*,>=5.3.0)");
            pytorch_files.push(pytorch("torchvision", backend, &vision));
        }
    }
    let any = "py3-none-any";
    let mut general = vec![
        WheelSpec::new("filelock", "3.19.1", any).requires_python(">=3.9"),
        WheelSpec::new("filelock", "4.2.11", any).requires_python(">=3.11"),
        WheelSpec::new("typing_extensions", "4.16.0", any).requires_python(">=3.9"),
        WheelSpec::new("setuptools", "84.2.1", any).requires_python(">=3.10"),
        WheelSpec::new("sympy", "1.14.0", any)
            .requires_python(">=3.9")
            .requires("mpmath<1.4,>=1.1.0"),
        WheelSpec::new("mpmath", "1.3.0", any),
        // Newer than sympy's pin allows: never resolved.
        WheelSpec::new("mpmath", "1.4.0", any),
        WheelSpec::new("networkx", "3.4.2", any).requires_python(">=3.10"),
        WheelSpec::new("networkx", "3.6.1", any).requires_python("!=3.14.1,>=3.11"),
        WheelSpec::new("Jinja2", "3.1.6", any)
            .requires_python(">=3.7")
            .requires("MarkupSafe>=2.0"),
        WheelSpec::new("fsspec", "2026.9.0", any).requires_python(">=3.10"),
        WheelSpec::new("opt_einsum", "3.4.0", any).requires_python(">=3.8"),
        // Planted: a name only the PyTorch index publishes, never to be taken from here.
        WheelSpec::new("pytorch-triton", "99.0", any),
    ];
    for platform in [LINUX_X86_64, LINUX_AARCH64] {
        let tags = format!("py3-none-{platform}");
        general.extend([
            WheelSpec::new("MarkupSafe", "3.0.4", &tags).requires_python(">=3.9"),
            WheelSpec::new("numpy", "2.2.6", &tags).requires_python(">=3.10"),
            WheelSpec::new("numpy", "2.4.6", &tags).requires_python(">=3.11"),
            WheelSpec::new("pillow", "11.3.0", &tags).requires_python(">=3.9"),
            WheelSpec::new("pillow", "13.0.0", &tags).requires_python(">=3.11"),
        ]);
    }
    let mut nvidia: Vec<(&str, &str)> = CU128_PINS.iter().chain(&CU130_PINS).copied().collect();
    nvidia.sort_unstable();
    nvidia.dedup();
    for (name, version) in nvidia {
        let mut spec = WheelSpec::new(name, version, &format!("py3-none-{LINUX_X86_64}"));
        if name == "triton" {
            spec = spec
                .requires_python(">=3.10,<3.15")
                .requires("importlib-metadata; python_version < \"3.10\"");
        }
        general.push(spec);
    }
    Catalog {
        pytorch: pytorch_files,
        pypi: general.iter().map(pypi).collect(),
    }
}
