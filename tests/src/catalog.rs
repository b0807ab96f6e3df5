//! What the fake upstreams publish, modelled on download.pytorch.org and PyPI: which project,
//! version, backend and platform, where each file's link points, and the wheels themselves.
//!
//! PyTorch side (as of 2026): torch 2.9.0 for `cpu`, `cu126`, `cu128`, `cu130`, `rocm6.4`, `xpu`;
//! torch 2.6.0 for `cpu`, `cu118`, `cu124`, `cu126`, `rocm6.2.4`, `xpu`; torchvision 0.24.0
//! (requiring `torch==2.9.0`, no local label, as the real ones do) for torch 2.9.0's backends;
//! `pytorch-triton` 3.5.0 under the CUDA backends; unlabelled macOS wheels under `/whl/cpu/`; a
//! legacy unlabelled wheel linked at `/whl/<file>` from every torch page (the real cu130 page
//! lists such wheels from 2017); and `filelock` 3.13.1 republished from PyPI, as the real index
//! does. General side (PyPI): `filelock` 3.20.0, and planted to prove routing safety a
//! `pytorch-triton` 99.0 that must never be served (PyTorch's own PyPI projects, torch
//! included, are merged with the PyTorch index's: none is published here).

use std::sync::OnceLock;

use crate::wheels::{BuiltWheel, WheelSpec};

/// Platform tags of the Linux x86_64, Linux aarch64 and Windows wheels (`py3-none-<platform>`,
/// so any `CPython` installs them).
pub const LINUX_X86_64: &str = "manylinux_2_28_x86_64";
pub const LINUX_AARCH64: &str = "manylinux_2_28_aarch64";
pub const WIN_AMD64: &str = "win_amd64";
pub const MACOS_ARM64: &str = "macosx_11_0_arm64";

/// Upload time written as `data-upload-time` on some PyTorch links (since April 2026).
pub const UPLOAD_TIME: &str = "2026-04-05T10:11:12Z";

/// Where a file's link on a download.pytorch.org page points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkForm {
    /// `/whl/cu130/torch-2.9.0%2Bcu130-....whl#sha256=...`
    RootRelative,
    /// `http://<pytorch host>/whl/cu130/...` (the real pages' `https://download.pytorch.org/...`).
    AbsolutePrimary,
    /// `http://<second host>/whl/cu128/...` (the real pages' `https://download-r2.pytorch.org/...`).
    AbsoluteR2,
}

/// One file on the fake PyTorch index.
#[derive(Debug, Clone)]
pub struct PytorchFile {
    /// Normalized project name (`torch`, `pytorch-triton`).
    pub project: String,
    /// The backend page it is listed on; `None` for a legacy file listed on every torch page.
    pub backend: Option<String>,
    /// The directory under `/whl/` the file is stored in: the backend, or empty for a file
    /// stored at the root (legacy wheels, pytorch-triton, republished PyPI projects).
    pub dir: String,
    pub link: LinkForm,
    pub upload_time: Option<&'static str>,
    /// Whether the link advertises PEP 658 metadata (`data-core-metadata`).
    pub has_metadata: bool,
    pub wheel: BuiltWheel,
}

impl PytorchFile {
    /// The path the file is served at on either PyTorch host, unencoded (`/whl/cu130/torch-2.9.0+cu130-...whl`).
    pub fn path(&self) -> String {
        if self.dir.is_empty() {
            format!("/whl/{}", self.wheel.filename)
        } else {
            format!("/whl/{}/{}", self.dir, self.wheel.filename)
        }
    }
}

/// One file on the fake PyPI.
#[derive(Debug, Clone)]
pub struct PypiFile {
    pub project: String,
    pub version: String,
    pub requires_python: Option<String>,
    pub upload_time: &'static str,
    pub wheel: BuiltWheel,
}

/// Everything both fake upstreams publish.
#[derive(Debug)]
pub struct Catalog {
    pub pytorch: Vec<PytorchFile>,
    pub pypi: Vec<PypiFile>,
}

/// Backends torch 2.9.0 and torchvision 0.24.0 are published for.
pub const TORCH_29_BACKENDS: [&str; 6] = ["cpu", "cu126", "cu128", "cu130", "rocm6.4", "xpu"];
/// Backends torch 2.6.0 is published for.
pub const TORCH_26_BACKENDS: [&str; 6] = ["cpu", "cu118", "cu124", "cu126", "rocm6.2.4", "xpu"];

/// Every backend that has a page.
pub fn backends() -> Vec<&'static str> {
    let mut all: Vec<&str> = TORCH_29_BACKENDS
        .iter()
        .chain(TORCH_26_BACKENDS.iter())
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The platforms a backend's wheels exist for (ROCm: Linux x86_64 only; XPU: Linux x86_64 and
/// Windows; older CUDA: no aarch64).
fn platforms(backend: &str) -> &'static [&'static str] {
    match backend {
        "cpu" | "cu128" | "cu130" => &[LINUX_X86_64, LINUX_AARCH64, WIN_AMD64],
        b if b.starts_with("rocm") => &[LINUX_X86_64],
        _ => &[LINUX_X86_64, WIN_AMD64],
    }
}

/// Link forms as the real index mixes them: torchvision and torch cu128 / rocm live on the
/// second host, torch cu130 is linked absolutely to the primary host, the rest root-relative.
fn link_form(project: &str, backend: &str) -> LinkForm {
    match (project, backend) {
        ("torchvision", _) | ("torch", "cu128" | "rocm6.4") => LinkForm::AbsoluteR2,
        ("torch", "cu126") => LinkForm::AbsolutePrimary,
        _ => LinkForm::RootRelative,
    }
}

fn pytorch_file(
    project: &str,
    backend: Option<&str>,
    spec: &WheelSpec,
    upload_time: Option<&'static str>,
) -> PytorchFile {
    PytorchFile {
        project: project.to_string(),
        backend: backend.map(str::to_string),
        dir: backend.unwrap_or_default().to_string(),
        link: backend.map_or(LinkForm::RootRelative, |b| link_form(project, b)),
        upload_time,
        has_metadata: backend.is_some(),
        wheel: spec.build(),
    }
}

/// A file stored once at `/whl/<file>` and listed on `backend`'s page (with metadata).
fn shared_file(project: &str, backend: &str, spec: &WheelSpec) -> PytorchFile {
    PytorchFile {
        dir: String::new(),
        link: LinkForm::RootRelative,
        ..pytorch_file(project, Some(backend), spec, None)
    }
}

impl Catalog {
    /// The catalog, built once per test process (a few dozen tiny zips, milliseconds).
    pub fn get() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(Catalog::build)
    }

    fn build() -> Catalog {
        let mut pytorch = Vec::new();
        for (version, backends, upload_time) in [
            ("2.9.0", &TORCH_29_BACKENDS, Some(UPLOAD_TIME)),
            ("2.6.0", &TORCH_26_BACKENDS, None),
        ] {
            for backend in backends {
                for platform in platforms(backend) {
                    let mut spec = WheelSpec::new(
                        "torch",
                        &format!("{version}+{backend}"),
                        &format!("py3-none-{platform}"),
                    )
                    .requires("filelock")
                    .requires_python(">=3.9");
                    // Like the real ROCm builds, which need triton from the PyTorch index.
                    if backend.starts_with("rocm") {
                        spec = spec.requires("pytorch-triton-rocm==3.5.0");
                    }
                    pytorch.push(pytorch_file("torch", Some(backend), &spec, upload_time));
                }
            }
            // macOS wheels carry no local label and live under /whl/cpu/.
            let spec = WheelSpec::new("torch", version, &format!("py3-none-{MACOS_ARM64}"))
                .requires("filelock");
            pytorch.push(pytorch_file("torch", Some("cpu"), &spec, upload_time));
        }
        for backend in TORCH_29_BACKENDS {
            for platform in platforms(backend) {
                let spec = WheelSpec::new(
                    "torchvision",
                    &format!("0.24.0+{backend}"),
                    &format!("py3-none-{platform}"),
                )
                .requires("torch==2.9.0");
                pytorch.push(pytorch_file(
                    "torchvision",
                    Some(backend),
                    &spec,
                    Some(UPLOAD_TIME),
                ));
            }
        }
        let spec = WheelSpec::new("torchvision", "0.24.0", &format!("py3-none-{MACOS_ARM64}"))
            .requires("torch==2.9.0");
        pytorch.push(pytorch_file(
            "torchvision",
            Some("cpu"),
            &spec,
            Some(UPLOAD_TIME),
        ));
        // One pytorch-triton wheel serves every CUDA backend: stored once at the root of /whl/,
        // listed on each CUDA backend's page.
        let spec = WheelSpec::new(
            "pytorch-triton",
            "3.5.0",
            "py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64",
        );
        for backend in ["cu126", "cu128", "cu130"] {
            pytorch.push(shared_file("pytorch-triton", backend, &spec));
        }
        // Its ROCm sibling, which the ROCm torch wheels require, likewise listed on each ROCm page.
        let spec = WheelSpec::new(
            "pytorch-triton-rocm",
            "3.5.0",
            "py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64",
        );
        for backend in ["rocm6.2.4", "rocm6.4"] {
            pytorch.push(shared_file("pytorch-triton-rocm", backend, &spec));
        }
        // A 2017 macOS wheel at the root of /whl/, listed on every torch page.
        let spec = WheelSpec::new("torch", "0.4.1", "py3-none-macosx_10_7_x86_64");
        pytorch.push(pytorch_file("torch", None, &spec, None));
        // PyPI projects the real index republishes, in an older version.
        let spec = WheelSpec::new("filelock", "3.13.1", "py3-none-any");
        for backend in backends() {
            pytorch.push(shared_file("filelock", backend, &spec));
        }

        let pypi = vec![
            pypi_file(
                &WheelSpec::new("filelock", "3.19.1", "py3-none-any").requires_python(">=3.9"),
                "2025-08-14T16:56:01.123456Z",
            ),
            pypi_file(
                &WheelSpec::new("filelock", "3.20.0", "py3-none-any").requires_python(">=3.10"),
                "2025-10-08T18:03:48.456789Z",
            ),
            // Planted: a PyPI `pytorch-triton` (a name only the PyTorch index publishes) that
            // must never reach a client.
            pypi_file(
                &WheelSpec::new("pytorch-triton", "99.0", "py3-none-any"),
                "2026-01-01T00:00:00Z",
            ),
        ];
        Catalog { pytorch, pypi }
    }

    /// The files of one project on the fake PyTorch index listed on `/whl/<backend>/<project>/`
    /// (`backend` `None`: the aggregated `/whl/<project>/`), sorted by file name like the real pages.
    pub fn pytorch_page(&self, backend: Option<&str>, project: &str) -> Vec<&PytorchFile> {
        let mut files: Vec<&PytorchFile> = self
            .pytorch
            .iter()
            .filter(|f| f.project == project)
            .filter(|f| match (backend, &f.backend) {
                (None, _) | (_, None) => true,
                (Some(wanted), Some(b)) => wanted == b,
            })
            .collect();
        files.sort_by(|a, b| {
            a.wheel
                .filename
                .cmp(&b.wheel.filename)
                .then(a.dir.cmp(&b.dir))
        });
        // A file listed on several backend pages appears once on the aggregated page.
        files.dedup_by(|a, b| a.path() == b.path());
        files
    }

    /// Projects with a page under `/whl/<backend>/` (`None`: all).
    pub fn pytorch_projects(&self, backend: Option<&str>) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .pytorch
            .iter()
            .filter(|f| backend.is_none() || f.backend.as_deref() == backend)
            .map(|f| f.project.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The PyPI files of one project, oldest version first.
    pub fn pypi_project(&self, project: &str) -> Vec<&PypiFile> {
        self.pypi.iter().filter(|f| f.project == project).collect()
    }

    pub fn pypi_projects(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.pypi.iter().map(|f| f.project.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The torch wheel for a version, backend and platform, if published.
    pub fn torch_wheel(
        &self,
        version: &str,
        backend: &str,
        platform: &str,
    ) -> Option<&PytorchFile> {
        let name = format!("torch-{version}+{backend}-py3-none-{platform}.whl");
        self.pytorch.iter().find(|f| f.wheel.filename == name)
    }
}

fn pypi_file(spec: &WheelSpec, upload_time: &'static str) -> PypiFile {
    PypiFile {
        project: spec.name.clone(),
        version: spec.version.clone(),
        requires_python: spec.requires_python.clone(),
        upload_time,
        wheel: spec.build(),
    }
}
