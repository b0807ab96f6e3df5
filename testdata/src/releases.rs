//! What download.pytorch.org's aggregated `/whl/torch/` lists, release by release: the backends
//! each torch release was published for, on which platforms, for which Pythons, and whether the
//! files carry the `+<backend>` local label. Sources: the page itself (April 2026, its cu130 part
//! captured in `../shared/fixtures/pytorch-index/whl_cu130_torch.html`), pytorch/test-infra's
//! release matrices, and `../shared/reference/pytorch-variants.toml` (cu129, `win_arm64`,
//! `linux_s390x`). Newest first. Where the real page has a one-off (a withdrawn Python, a
//! single missing wheel) the table keeps the regular shape: it is a benchmark and test input,
//! not a mirror.

/// Linux `x86_64` before `manylinux_2_28` (and ROCm and XPU builds to this day).
pub const LINUX_X86_64: &str = "linux_x86_64";
/// Linux x86_64 from torch 2.6 (CUDA and CPU builds).
pub const MANYLINUX_X86_64: &str = "manylinux_2_28_x86_64";
/// Linux aarch64 up to torch 2.5: a compressed tag set.
pub const MANYLINUX2014_AARCH64: &str = "manylinux_2_17_aarch64.manylinux2014_aarch64";
/// Linux aarch64 from torch 2.6.
pub const MANYLINUX_AARCH64: &str = "manylinux_2_28_aarch64";
/// IBM Z, CPU only.
pub const MANYLINUX_S390X: &str = "manylinux_2_28_s390x";
pub const WIN_AMD64: &str = "win_amd64";
pub const WIN_ARM64: &str = "win_arm64";
/// Intel Macs, up to torch 2.2.
pub const MACOS_X86_64: &str = "macosx_10_9_x86_64";
/// Apple silicon, from torch 1.12.
pub const MACOS_ARM64: &str = "macosx_11_0_arm64";

/// One backend's files of a release.
#[derive(Debug, Clone, Copy)]
pub struct Build {
    /// The directory under `/whl/` (`cpu`, `cu128`, `rocm6.4`, `xpu`).
    pub backend: &'static str,
    /// Whether the filenames carry `+<backend>`; unlabelled files are known only by their link's
    /// directory (old CUDA defaults, the aarch64 CPU and cu124 wheels of torch 2.1 to 2.5).
    pub labelled: bool,
    /// The link's directory under `/whl/` (empty: `/whl/` itself, which names no backend).
    pub directory: &'static str,
    pub platforms: &'static [&'static str],
}

/// The files of one or more releases that share a build matrix.
#[derive(Debug, Clone, Copy)]
pub struct Release {
    pub versions: &'static [&'static str],
    /// `CPython` versions as wheel Python tags (`cp312`; `cp313t` is the free-threaded build,
    /// published for Linux only).
    pub pythons: &'static [&'static str],
    pub builds: &'static [Build],
    /// macOS wheels: never labelled, linked from `/whl/cpu/`.
    pub macos: &'static [&'static str],
    /// Whether the links carry `data-dist-info-metadata` (PEP 714) as the newer ones do.
    pub metadata: bool,
}

const fn labelled(backend: &'static str, platforms: &'static [&'static str]) -> Build {
    Build {
        backend,
        labelled: true,
        directory: backend,
        platforms,
    }
}

const fn plain(backend: &'static str, platforms: &'static [&'static str]) -> Build {
    Build {
        backend,
        labelled: false,
        directory: backend,
        platforms,
    }
}

/// Unlabelled aarch64 CPU wheels of torch 2.0, linked from `/whl/` itself.
const fn plain_at_root(platforms: &'static [&'static str]) -> Build {
    Build {
        backend: "cpu",
        labelled: false,
        directory: "",
        platforms,
    }
}

/// The pre-cxx11-ABI switch CPU builds of torch 2.1 to 2.6 (`+cpu.cxx11.abi`, under
/// `/whl/cpu-cxx11-abi/`): a local label that is not a backend name.
const fn cxx11(platforms: &'static [&'static str]) -> Build {
    Build {
        backend: "cpu.cxx11.abi",
        labelled: true,
        directory: "cpu-cxx11-abi",
        platforms,
    }
}

const PY_310_314: &[&str] = &[
    "cp310", "cp311", "cp312", "cp313", "cp313t", "cp314", "cp314t",
];
const PY_39_313: &[&str] = &["cp39", "cp310", "cp311", "cp312", "cp313", "cp313t"];
const PY_39_313_PLAIN: &[&str] = &["cp39", "cp310", "cp311", "cp312", "cp313"];
const PY_38_312: &[&str] = &["cp38", "cp39", "cp310", "cp311", "cp312"];
const PY_38_311: &[&str] = &["cp38", "cp39", "cp310", "cp311"];
const PY_37_310: &[&str] = &["cp37", "cp38", "cp39", "cp310"];
const PY_36_39: &[&str] = &["cp36", "cp37", "cp38", "cp39"];
const PY_35_38: &[&str] = &["cp35", "cp36", "cp37", "cp38"];
const PY_27_37: &[&str] = &["cp27", "cp35", "cp36", "cp37"];
const PY_27_36: &[&str] = &["cp27", "cp35", "cp36"];

const LINUX_NEW: &[&str] = &[MANYLINUX_X86_64, MANYLINUX_AARCH64, WIN_AMD64];
const LINUX_OLD: &[&str] = &[LINUX_X86_64, WIN_AMD64];
const X86_ONLY_NEW: &[&str] = &[MANYLINUX_X86_64, WIN_AMD64];
const ROCM: &[&str] = &[LINUX_X86_64];
const XPU: &[&str] = &[LINUX_X86_64, WIN_AMD64];
const LINUX_ONLY_NEW: &[&str] = &[MANYLINUX_X86_64, MANYLINUX_AARCH64];
const MAC_ARM: &[&str] = &[MACOS_ARM64];
const MAC_BOTH: &[&str] = &[MACOS_X86_64, MACOS_ARM64];
const MAC_X86: &[&str] = &[MACOS_X86_64];

/// Every release on the page, newest first.
pub const RELEASES: &[Release] = &[
    Release {
        versions: &["2.11.0"],
        pythons: PY_310_314,
        builds: &[
            labelled(
                "cpu",
                &[
                    MANYLINUX_X86_64,
                    MANYLINUX_AARCH64,
                    WIN_AMD64,
                    MANYLINUX_S390X,
                ],
            ),
            labelled("cu126", LINUX_NEW),
            labelled("cu128", LINUX_NEW),
            labelled("cu129", LINUX_ONLY_NEW),
            labelled("cu130", LINUX_NEW),
            labelled("rocm7.1", ROCM),
            labelled("rocm7.2", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.10.0"],
        pythons: PY_310_314,
        builds: &[
            labelled(
                "cpu",
                &[
                    MANYLINUX_X86_64,
                    MANYLINUX_AARCH64,
                    WIN_AMD64,
                    WIN_ARM64,
                    MANYLINUX_S390X,
                ],
            ),
            labelled("cu126", LINUX_NEW),
            labelled("cu128", LINUX_NEW),
            labelled("cu129", LINUX_ONLY_NEW),
            labelled("cu130", LINUX_NEW),
            labelled("rocm7.0", ROCM),
            labelled("rocm7.1", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.9.1"],
        pythons: PY_310_314,
        builds: &[
            labelled(
                "cpu",
                &[
                    MANYLINUX_X86_64,
                    MANYLINUX_AARCH64,
                    WIN_AMD64,
                    WIN_ARM64,
                    MANYLINUX_S390X,
                ],
            ),
            labelled("cu126", LINUX_NEW),
            labelled("cu128", LINUX_NEW),
            labelled("cu129", LINUX_ONLY_NEW),
            labelled("cu130", LINUX_NEW),
            labelled("rocm6.3", ROCM),
            labelled("rocm6.4", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.9.0"],
        pythons: PY_310_314,
        builds: &[
            labelled(
                "cpu",
                &[
                    MANYLINUX_X86_64,
                    MANYLINUX_AARCH64,
                    WIN_AMD64,
                    WIN_ARM64,
                    MANYLINUX_S390X,
                ],
            ),
            labelled("cu126", LINUX_NEW),
            labelled("cu128", LINUX_NEW),
            labelled("cu129", LINUX_NEW),
            labelled("cu130", LINUX_NEW),
            labelled("rocm6.3", ROCM),
            labelled("rocm6.4", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.8.0"],
        pythons: PY_39_313,
        builds: &[
            labelled(
                "cpu",
                &[
                    MANYLINUX_X86_64,
                    MANYLINUX_AARCH64,
                    WIN_AMD64,
                    WIN_ARM64,
                    MANYLINUX_S390X,
                ],
            ),
            labelled("cu126", X86_ONLY_NEW),
            labelled("cu128", X86_ONLY_NEW),
            // 2.8.0's only aarch64 CUDA build is cu129.
            labelled("cu129", LINUX_NEW),
            labelled("rocm6.3", ROCM),
            labelled("rocm6.4", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.7.1", "2.7.0"],
        pythons: PY_39_313,
        builds: &[
            labelled(
                "cpu",
                &[MANYLINUX_X86_64, MANYLINUX_AARCH64, WIN_AMD64, WIN_ARM64],
            ),
            labelled("cu118", X86_ONLY_NEW),
            labelled("cu126", X86_ONLY_NEW),
            labelled("cu128", LINUX_NEW),
            labelled("rocm6.2.4", ROCM),
            labelled("rocm6.3", ROCM),
            labelled("xpu", XPU),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.6.0"],
        pythons: PY_39_313,
        builds: &[
            labelled("cpu", &[MANYLINUX_X86_64, MANYLINUX_AARCH64, WIN_AMD64]),
            labelled("cu118", X86_ONLY_NEW),
            labelled("cu124", X86_ONLY_NEW),
            labelled("cu126", LINUX_NEW),
            labelled("rocm6.1", ROCM),
            labelled("rocm6.2.4", ROCM),
            labelled("xpu", XPU),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_ARM,
        metadata: true,
    },
    Release {
        versions: &["2.5.1", "2.5.0"],
        pythons: PY_39_313_PLAIN,
        builds: &[
            // The unlabelled aarch64 wheels of 2.5 are the cu124 build; the CPU ones carry +cpu.
            labelled("cpu", &[LINUX_X86_64, WIN_AMD64, MANYLINUX2014_AARCH64]),
            labelled("cu118", LINUX_OLD),
            labelled("cu121", LINUX_OLD),
            labelled("cu124", LINUX_OLD),
            plain("cu124", &[MANYLINUX2014_AARCH64]),
            labelled("rocm6.1", ROCM),
            labelled("rocm6.2", ROCM),
            labelled("xpu", XPU),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_ARM,
        metadata: false,
    },
    Release {
        versions: &["2.4.1", "2.4.0"],
        pythons: PY_38_312,
        builds: &[
            labelled("cpu", LINUX_OLD),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
            labelled("cu118", LINUX_OLD),
            labelled("cu121", LINUX_OLD),
            labelled("cu124", LINUX_OLD),
            labelled("rocm6.0", ROCM),
            labelled("rocm6.1", ROCM),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_ARM,
        metadata: false,
    },
    Release {
        versions: &["2.3.1", "2.3.0"],
        pythons: PY_38_312,
        builds: &[
            labelled("cpu", LINUX_OLD),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
            labelled("cu118", LINUX_OLD),
            labelled("cu121", LINUX_OLD),
            labelled("rocm5.7", ROCM),
            labelled("rocm6.0", ROCM),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_ARM,
        metadata: false,
    },
    Release {
        versions: &["2.2.2", "2.2.1", "2.2.0"],
        pythons: PY_38_312,
        builds: &[
            labelled("cpu", LINUX_OLD),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
            labelled("cu118", LINUX_OLD),
            labelled("cu121", LINUX_OLD),
            labelled("rocm5.6", ROCM),
            labelled("rocm5.7", ROCM),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_BOTH,
        metadata: false,
    },
    Release {
        versions: &["2.1.2", "2.1.1", "2.1.0"],
        pythons: PY_38_311,
        builds: &[
            labelled("cpu", LINUX_OLD),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
            labelled("cu118", LINUX_OLD),
            labelled("cu121", LINUX_OLD),
            labelled("rocm5.5", ROCM),
            labelled("rocm5.6", ROCM),
            cxx11(&[LINUX_X86_64]),
        ],
        macos: MAC_BOTH,
        metadata: false,
    },
    Release {
        versions: &["2.0.1", "2.0.0"],
        pythons: PY_38_311,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu117", LINUX_OLD),
            labelled("cu118", LINUX_OLD),
            labelled("rocm5.3", ROCM),
            labelled("rocm5.4.2", ROCM),
            plain_at_root(&[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_BOTH,
        metadata: false,
    },
    Release {
        versions: &["1.13.1", "1.13.0"],
        pythons: PY_37_310,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu116", LINUX_OLD),
            labelled("cu117", LINUX_OLD),
            labelled("rocm5.1.1", ROCM),
            labelled("rocm5.2", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_BOTH,
        metadata: false,
    },
    Release {
        versions: &["1.12.1", "1.12.0"],
        pythons: PY_37_310,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu102", LINUX_OLD),
            labelled("cu113", LINUX_OLD),
            labelled("cu116", LINUX_OLD),
            labelled("rocm5.0", ROCM),
            labelled("rocm5.1.1", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_BOTH,
        metadata: false,
    },
    Release {
        versions: &["1.11.0"],
        pythons: PY_37_310,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu102", LINUX_OLD),
            labelled("cu113", LINUX_OLD),
            labelled("cu115", LINUX_OLD),
            labelled("rocm4.3.1", ROCM),
            labelled("rocm4.5.2", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.10.2", "1.10.1", "1.10.0"],
        pythons: PY_36_39,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu102", LINUX_OLD),
            labelled("cu111", LINUX_OLD),
            labelled("cu113", LINUX_OLD),
            labelled("rocm4.1", ROCM),
            labelled("rocm4.2", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.9.1", "1.9.0"],
        pythons: PY_36_39,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu102", LINUX_OLD),
            labelled("cu111", LINUX_OLD),
            labelled("rocm4.0.1", ROCM),
            labelled("rocm4.2", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.8.1", "1.8.0"],
        pythons: PY_36_39,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu101", &[LINUX_X86_64]),
            labelled("cu102", LINUX_OLD),
            labelled("cu111", LINUX_OLD),
            labelled("rocm3.10", ROCM),
            labelled("rocm4.0.1", ROCM),
            plain("cpu", &[MANYLINUX2014_AARCH64]),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.7.1", "1.7.0"],
        pythons: PY_36_39,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu92", LINUX_OLD),
            labelled("cu101", LINUX_OLD),
            // The CUDA 10.2 build was the default: no label, known by its directory.
            plain("cu102", LINUX_OLD),
            labelled("cu110", LINUX_OLD),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.6.0", "1.5.1", "1.5.0"],
        pythons: PY_35_38,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu92", LINUX_OLD),
            labelled("cu101", LINUX_OLD),
            plain("cu102", LINUX_OLD),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.4.0", "1.3.1", "1.3.0", "1.2.0"],
        pythons: PY_27_37,
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu92", LINUX_OLD),
            plain("cu100", LINUX_OLD),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["1.1.0", "1.0.1", "1.0.0"],
        pythons: PY_27_37,
        // The real page lists the same unlabelled filename under several directories here; the
        // generated one labels the non-default builds so that every filename is unique.
        builds: &[
            labelled("cpu", &[LINUX_X86_64]),
            labelled("cu90", &[LINUX_X86_64]),
            plain("cu100", &[LINUX_X86_64]),
        ],
        macos: MAC_X86,
        metadata: false,
    },
    Release {
        versions: &["0.4.1", "0.4.0"],
        pythons: PY_27_36,
        // As for 1.0: labels where the real page repeats a filename under several directories.
        builds: &[
            labelled("cpu", LINUX_OLD),
            labelled("cu80", LINUX_OLD),
            labelled("cu90", LINUX_OLD),
            plain("cu92", LINUX_OLD),
        ],
        macos: MAC_X86,
        metadata: false,
    },
];
