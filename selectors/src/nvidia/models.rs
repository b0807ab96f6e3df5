//! Compute capability from what the kernel files say: the GPU's model name
//! (`/proc/driver/nvidia/gpus/*/information`), its PCI device id, or the Tegra chip of a Jetson.
//! Used where no GPU library can be asked (captured trees, containers without NVML).
//!
//! Source: NVIDIA's "CUDA GPUs" compute capability table
//! (<https://developer.nvidia.com/cuda-gpus>) and the `[nvidia.gpus]` list of
//! `reference/pytorch-variants.toml`; PCI ids from the PCI ID repository (`pci.ids`).
//! Newest architectures first; an unknown name gives `None`, never a guess.

use wheelgate_resolver::ComputeCapability;

const fn cc(major: u8, minor: u8) -> ComputeCapability {
    ComputeCapability::new(major, minor)
}

/// Rules matched against the words of a model name, upper-cased, split at spaces and dashes, with
/// `NVIDIA`, `GEFORCE`, `TESLA` and `QUADRO` dropped. A rule is a run of consecutive words; in
/// a rule word `#` stands for one digit and a final `*` for one or more characters. First match
/// wins, so specific rules come before general ones (`RTX 5000` is a Quadro, `RTX 5090` is not).
const MODEL_RULES: &[(&[&str], ComputeCapability)] = &[
    // Blackwell
    (&["GB10"], cc(12, 1)),
    (&["RTX", "PRO"], cc(12, 0)),
    (&["THOR"], cc(11, 0)),
    (&["GB300"], cc(10, 3)),
    (&["B300"], cc(10, 3)),
    (&["GB200"], cc(10, 0)),
    (&["B200"], cc(10, 0)),
    (&["B100"], cc(10, 0)),
    // Hopper
    (&["GH200"], cc(9, 0)),
    (&["H100"], cc(9, 0)),
    (&["H200"], cc(9, 0)),
    (&["H800"], cc(9, 0)),
    (&["H20"], cc(9, 0)),
    // Ada Lovelace ("RTX 6000 Ada Generation" before the Quadro RTX 6000)
    (&["ADA"], cc(8, 9)),
    (&["L4"], cc(8, 9)),
    (&["L40"], cc(8, 9)),
    (&["L40S"], cc(8, 9)),
    (&["L20"], cc(8, 9)),
    // Quadro RTX (Turing), before GeForce RTX 40xx/50xx whose numbers they share
    (&["RTX", "8000"], cc(7, 5)),
    (&["RTX", "6000"], cc(7, 5)),
    (&["RTX", "5000"], cc(7, 5)),
    (&["RTX", "4000"], cc(7, 5)),
    (&["RTX", "3000"], cc(7, 5)),
    (&["RTX", "50##"], cc(12, 0)),
    (&["RTX", "40##"], cc(8, 9)),
    // Ampere
    (&["A100"], cc(8, 0)),
    (&["A800"], cc(8, 0)),
    (&["A30"], cc(8, 0)),
    (&["ORIN"], cc(8, 7)),
    (&["RTX", "30##"], cc(8, 6)),
    (&["RTX", "A*"], cc(8, 6)),
    (&["A10"], cc(8, 6)),
    (&["A10G"], cc(8, 6)),
    (&["A10M"], cc(8, 6)),
    (&["A16"], cc(8, 6)),
    (&["A40"], cc(8, 6)),
    (&["A2"], cc(8, 6)),
    // Turing
    (&["RTX", "20##"], cc(7, 5)),
    (&["TITAN", "RTX"], cc(7, 5)),
    (&["GTX", "16##"], cc(7, 5)),
    (&["T4"], cc(7, 5)),
    (&["T4G"], cc(7, 5)),
    (&["T400"], cc(7, 5)),
    (&["T600"], cc(7, 5)),
    (&["T1000"], cc(7, 5)),
    (&["T1200"], cc(7, 5)),
    // Volta
    (&["XAVIER"], cc(7, 2)),
    (&["V100"], cc(7, 0)),
    (&["V100S"], cc(7, 0)),
    (&["TITAN", "V"], cc(7, 0)),
    (&["GV100"], cc(7, 0)),
    // Pascal
    (&["P100"], cc(6, 0)),
    (&["GP100"], cc(6, 0)),
    (&["GTX", "10##"], cc(6, 1)),
    (&["GT", "10##"], cc(6, 1)),
    (&["TITAN", "XP"], cc(6, 1)),
    (&["TITAN", "X", "(PASCAL)"], cc(6, 1)),
    (&["P40"], cc(6, 1)),
    (&["P4"], cc(6, 1)),
    (&["P6000"], cc(6, 1)),
    (&["P5000"], cc(6, 1)),
    (&["P4000"], cc(6, 1)),
    (&["P2000"], cc(6, 1)),
    (&["P1000"], cc(6, 1)),
    // Maxwell
    (&["GTX", "75#"], cc(5, 0)),
    (&["GTX", "9##"], cc(5, 2)),
    (&["TITAN", "X"], cc(5, 2)),
    (&["M40"], cc(5, 2)),
    (&["M60"], cc(5, 2)),
    (&["M6000"], cc(5, 2)),
    // Kepler
    (&["K80"], cc(3, 7)),
    (&["K40"], cc(3, 5)),
    (&["K40C"], cc(3, 5)),
    (&["K40M"], cc(3, 5)),
    (&["K20"], cc(3, 5)),
];

fn word_matches(rule: &str, word: &str) -> bool {
    if let Some(prefix) = rule.strip_suffix('*') {
        return word.len() > prefix.len() && word.starts_with(prefix);
    }
    rule.len() == word.len()
        && rule.bytes().zip(word.bytes()).all(|(r, w)| {
            if r == b'#' {
                w.is_ascii_digit()
            } else {
                r == w
            }
        })
}

/// Compute capability of a GPU by its model name (`NVIDIA H100 80GB HBM3` → 9.0,
/// `Tesla V100-SXM2-32GB` → 7.0); `None` for a name the table does not know.
pub fn capability_from_model(name: &str) -> Option<ComputeCapability> {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| c.is_whitespace() || c == '-' || c == '/' || c == ',')
        .filter(|w| !w.is_empty() && !matches!(*w, "NVIDIA" | "GEFORCE" | "TESLA" | "QUADRO"))
        .collect();
    MODEL_RULES.iter().find_map(|(rule, capability)| {
        words
            .windows(rule.len())
            .any(|window| {
                window
                    .iter()
                    .zip(rule.iter())
                    .all(|(w, r)| word_matches(r, w))
            })
            .then_some(*capability)
    })
}

/// PCI device ids (vendor `0x10de`) of common data-centre and desktop GPUs, for a GPU the
/// kernel module does not describe (driver not loaded, `nouveau`).
const PCI_IDS: &[(u16, &str, ComputeCapability)] = &[
    (0x2b85, "NVIDIA GeForce RTX 5090", cc(12, 0)),
    (0x2c02, "NVIDIA GeForce RTX 5080", cc(12, 0)),
    (0x2901, "NVIDIA B200", cc(10, 0)),
    (0x2342, "NVIDIA GH200 480GB", cc(9, 0)),
    (0x2335, "NVIDIA H200", cc(9, 0)),
    (0x2330, "NVIDIA H100 80GB HBM3", cc(9, 0)),
    (0x2331, "NVIDIA H100 PCIe", cc(9, 0)),
    (0x2321, "NVIDIA H100 NVL", cc(9, 0)),
    (0x2684, "NVIDIA GeForce RTX 4090", cc(8, 9)),
    (0x2704, "NVIDIA GeForce RTX 4080", cc(8, 9)),
    (0x27b8, "NVIDIA L4", cc(8, 9)),
    (0x26b5, "NVIDIA L40", cc(8, 9)),
    (0x26b9, "NVIDIA L40S", cc(8, 9)),
    (0x20b0, "NVIDIA A100-SXM4-40GB", cc(8, 0)),
    (0x20b2, "NVIDIA A100-SXM4-80GB", cc(8, 0)),
    (0x20b5, "NVIDIA A100 80GB PCIe", cc(8, 0)),
    (0x20f1, "NVIDIA A100-PCIE-40GB", cc(8, 0)),
    (0x20b7, "NVIDIA A30", cc(8, 0)),
    (0x2204, "NVIDIA GeForce RTX 3090", cc(8, 6)),
    (0x2206, "NVIDIA GeForce RTX 3080", cc(8, 6)),
    (0x2503, "NVIDIA GeForce RTX 3060", cc(8, 6)),
    (0x2504, "NVIDIA GeForce RTX 3060", cc(8, 6)),
    (0x2235, "NVIDIA A40", cc(8, 6)),
    (0x2236, "NVIDIA A10", cc(8, 6)),
    (0x2237, "NVIDIA A10G", cc(8, 6)),
    (0x1e04, "NVIDIA GeForce RTX 2080 Ti", cc(7, 5)),
    (0x1e07, "NVIDIA GeForce RTX 2080 Ti", cc(7, 5)),
    (0x1eb8, "Tesla T4", cc(7, 5)),
    (0x1db1, "Tesla V100-SXM2-16GB", cc(7, 0)),
    (0x1db4, "Tesla V100-PCIE-16GB", cc(7, 0)),
    (0x1db5, "Tesla V100-SXM2-32GB", cc(7, 0)),
    (0x1db6, "Tesla V100-PCIE-32GB", cc(7, 0)),
    (0x1b06, "NVIDIA GeForce GTX 1080 Ti", cc(6, 1)),
    (0x1b80, "NVIDIA GeForce GTX 1080", cc(6, 1)),
    (0x15f8, "Tesla P100-PCIE-16GB", cc(6, 0)),
    (0x15f9, "Tesla P100-SXM2-16GB", cc(6, 0)),
    (0x102d, "Tesla K80", cc(3, 7)),
];

/// Name and compute capability of an NVIDIA GPU by PCI device id.
pub fn from_pci_device(device: u16) -> Option<(&'static str, ComputeCapability)> {
    PCI_IDS
        .iter()
        .find(|(id, _, _)| *id == device)
        .map(|(_, name, capability)| (*name, *capability))
}

/// Jetson chips by the `nvidia,tegraNNN` entry of `/proc/device-tree/compatible`.
const TEGRA_SOCS: &[(&str, &str, ComputeCapability)] = &[
    ("nvidia,tegra264", "Jetson Thor", cc(11, 0)),
    ("nvidia,tegra234", "Jetson Orin", cc(8, 7)),
    ("nvidia,tegra194", "Jetson Xavier", cc(7, 2)),
    ("nvidia,tegra186", "Jetson TX2", cc(6, 2)),
    ("nvidia,tegra210", "Jetson Nano / TX1", cc(5, 3)),
];

/// The Jetson chip named by one `compatible` entry.
pub fn from_tegra_compatible(entry: &str) -> Option<(&'static str, ComputeCapability)> {
    TEGRA_SOCS
        .iter()
        .find(|(compatible, _, _)| *compatible == entry)
        .map(|(_, name, capability)| (*name, *capability))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_real_model_names() {
        for (name, expected) in [
            ("NVIDIA H100 80GB HBM3", "9.0"),
            ("NVIDIA H100 PCIe", "9.0"),
            ("NVIDIA GH200 480GB", "9.0"),
            ("NVIDIA GB10", "12.1"),
            ("NVIDIA B200", "10.0"),
            ("NVIDIA GeForce RTX 5090", "12.0"),
            ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
            ("NVIDIA GeForce RTX 4090", "8.9"),
            ("NVIDIA RTX 6000 Ada Generation", "8.9"),
            ("NVIDIA L40S", "8.9"),
            ("NVIDIA L4", "8.9"),
            ("NVIDIA A100-SXM4-80GB", "8.0"),
            ("NVIDIA A100 80GB PCIe", "8.0"),
            ("NVIDIA A10", "8.6"),
            ("NVIDIA A10G", "8.6"),
            ("NVIDIA RTX A6000", "8.6"),
            ("NVIDIA GeForce RTX 3060", "8.6"),
            ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"),
            ("Tesla T4", "7.5"),
            ("Quadro RTX 8000", "7.5"),
            ("Quadro RTX 5000", "7.5"),
            ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
            ("NVIDIA GeForce GTX 1660 SUPER", "7.5"),
            ("Tesla V100-SXM2-32GB", "7.0"),
            ("Tesla V100S-PCIE-32GB", "7.0"),
            ("Tesla P100-PCIE-16GB", "6.0"),
            ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
            ("Tesla P40", "6.1"),
            ("NVIDIA GeForce GTX 980", "5.2"),
            ("NVIDIA GeForce GTX 750 Ti", "5.0"),
            ("Tesla K80", "3.7"),
        ] {
            assert_eq!(
                capability_from_model(name)
                    .map(|c| c.to_string())
                    .as_deref(),
                Some(expected),
                "{name}"
            );
        }
    }

    #[test]
    fn unknown_names_are_not_guessed() {
        for name in [
            "",
            "NVIDIA",
            "NVIDIA Graphics Device",
            "NVIDIA Future 9000",
            "A",
        ] {
            assert_eq!(capability_from_model(name), None, "{name}");
        }
    }

    #[test]
    fn maps_pci_ids_and_tegra() {
        assert_eq!(from_pci_device(0x2330).unwrap().1, cc(9, 0));
        assert_eq!(from_pci_device(0xffff), None);
        assert_eq!(
            from_tegra_compatible("nvidia,tegra234").unwrap().1,
            cc(8, 7)
        );
        assert_eq!(from_tegra_compatible("nvidia,p3701-0005"), None);
    }
}
