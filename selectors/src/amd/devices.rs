//! Names of AMD GPUs by PCI device id, and which gfx targets are integrated GPUs of APUs.
//!
//! Sources: the PCI ID repository (`pci.ids`, vendor `1002`), AMD's ROCm hardware tables and
//! LLVM's AMDGPU processor table (<https://llvm.org/docs/AMDGPUUsage.html#processors>).

/// Marketing names by PCI device id (`device_id` of the KFD node, decimal there).
const NAMES: &[(u16, &str)] = &[
    (0x75a0, "AMD Instinct MI355X"),
    (0x74a1, "AMD Instinct MI300X"),
    (0x74a0, "AMD Instinct MI300A"),
    (0x740f, "AMD Instinct MI210"),
    (0x740c, "AMD Instinct MI250X / MI250"),
    (0x738c, "AMD Instinct MI100"),
    (0x66a1, "AMD Instinct MI50 / MI60"),
    (0x7550, "AMD Radeon RX 9070 XT"),
    (0x744c, "AMD Radeon RX 7900 XTX"),
    (0x747e, "AMD Radeon RX 7800 XT"),
    (0x7480, "AMD Radeon RX 7600"),
    (0x73bf, "AMD Radeon RX 6900 XT"),
    (0x1586, "AMD Radeon 8060S (Strix Halo)"),
    (0x150e, "AMD Radeon 890M (Strix Point)"),
    (0x15bf, "AMD Radeon 780M (Phoenix)"),
];

/// gfx targets that exist only as integrated GPUs of APUs (LLVM's processor table: Raven,
/// Renoir, Rembrandt, Raphael, Phoenix, Strix).
const APU_TARGETS: &[&str] = &[
    "gfx902", "gfx909", "gfx90c", "gfx1033", "gfx1035", "gfx1036", "gfx1037", "gfx1103", "gfx1150",
    "gfx1151", "gfx1152", "gfx1153",
];

/// The marketing name of an AMD GPU by PCI device id.
pub fn name(device: u16) -> Option<&'static str> {
    NAMES.iter().find(|(id, _)| *id == device).map(|(_, n)| *n)
}

/// Whether a gfx target is only ever an APU's integrated GPU.
pub fn is_apu_target(gfx: &str) -> bool {
    APU_TARGETS.contains(&gfx)
}
