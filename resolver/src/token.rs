//! The machine token: a [`Machine`] as one short, readable, path-safe URL segment, for
//! `/m/<token>/simple/...` (printed by `wheelgate detect --token`). It round-trips exactly:
//! `decode(&encode(m)) == m`.
//!
//! # Format (version 1)
//!
//! Fields separated by `-`; the first is the format version `1`, the second the platform
//! (`lx` linux-x86_64, `la` linux-aarch64, `ls` linux-s390x, `wx`, `wa` Windows, `mx`, `ma`
//! macOS). Every other
//! field is one lowercase key letter and a value:
//!
//! | field | meaning |
//! | --- | --- |
//! | `v3` | x86-64 level |
//! | `a8.2a` | aarch64 version |
//! | `g2.39` | glibc version |
//! | `n580.65.06` | NVIDIA section, with the driver version if known (`n` alone otherwise) |
//! | `c13.0` | NVIDIA: highest CUDA version |
//! | `s9.0ix8` | NVIDIA GPU: compute capability (may be empty), `i` integrated, `x8` eight alike |
//! | `m6.4.1` | AMD section, with the installed ROCm version if any |
//! | `k1100ix2` | AMD GPU: gfx target without `gfx`, `i` integrated, `x2` two alike |
//! | `e` | Intel section |
//! | `qe20byix2` | Intel GPU: PCI device id (4 hex digits, may be absent), `y` XPU-capable, `i` integrated |
//! | `u20.1.0` | Intel: device IP of the GPU field before |
//! | `tNVIDIA_H100_80GB_HBM3` | name of the GPU field before |
//!
//! Fields come in the order of the table. Free text (names, device IPs, the aarch64 version)
//! keeps ASCII letters, digits and `.`, writes a space as `_`, and every other byte as `~XX`
//! (hex), so a token only ever holds `[A-Za-z0-9._~-]`: RFC 3986 unreserved characters, safe
//! in a path segment without percent-encoding. Identical consecutive GPUs share one field with a
//! count, so a DGX with eight H100 is
//! `1-lx-v4-g2.35-n580.65.06-c13.0-s9.0x8-tNVIDIA_H100_80GB_HBM3`.
//!
//! A new field of [`Machine`] needs a key here; the round-trip tests catch a forgotten one.

use std::fmt::Write as _;

use crate::machine::{Amd, AmdGpu, GfxTarget, Intel, IntelGpu, Nvidia, NvidiaGpu};
use crate::{Arch, ComputeCapability, CudaVersion, DottedVersion, Machine, Os, Platform};

/// The format version this module writes and reads.
pub const VERSION: &str = "1";
/// Longest token accepted (a machine with many distinct GPUs stays far below).
pub const MAX_LEN: usize = 4096;
/// Most GPUs of one vendor a token may describe.
pub const MAX_GPUS: usize = 1024;

/// A string that is not a machine token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the machine token is empty")]
    /// The token is the empty string.
    Empty,
    #[error("the machine token is {0} characters long (at most {MAX_LEN})")]
    /// The token is longer than [`MAX_LEN`]; holds its length.
    TooLong(usize),
    #[error("unsupported machine token version `{0}` (this wheelgate reads version {VERSION})")]
    /// The token's version field is not [`VERSION`]; holds it, shortened.
    Version(String),
    #[error("`{0}` is not a platform code (expected `lx`, `la`, `ls`, `wx`, `wa`, `mx` or `ma`)")]
    /// The platform code is not one of the known ones; holds it.
    Platform(String),
    /// A field whose value does not parse.
    #[error("field `{field}` of the machine token is invalid: {reason}")]
    Field {
        /// The field, shortened.
        field: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    #[error("field `{0}` of the machine token is out of place")]
    /// A field out of the token's fixed order, repeated, or not after the GPU it belongs to;
    /// holds the field, shortened.
    Order(String),
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// The token of a machine.
pub fn encode(machine: &Machine) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(VERSION);
    out.push('-');
    out.push_str(platform_code(machine.platform));
    if let Some(level) = machine.x86_64_level {
        let _ = write!(out, "-v{level}");
    }
    if let Some(version) = &machine.aarch64_version {
        out.push_str("-a");
        escape_into(&mut out, version);
    }
    if let Some(glibc) = &machine.glibc {
        let _ = write!(out, "-g{glibc}");
    }
    if let Some(nvidia) = &machine.nvidia {
        encode_nvidia(&mut out, nvidia);
    }
    if let Some(amd) = &machine.amd {
        out.push_str("-m");
        if let Some(rocm) = &amd.rocm_version {
            let _ = write!(out, "{rocm}");
        }
        for (gpu, count) in groups(&amd.gpus) {
            let _ = write!(out, "-k{}", gpu.gfx.as_str().trim_start_matches("gfx"));
            flags(&mut out, &[(gpu.integrated, 'i')], count);
            name_field(&mut out, gpu.name.as_deref());
        }
    }
    if let Some(intel) = &machine.intel {
        out.push_str("-e");
        for (gpu, count) in groups(&intel.gpus) {
            out.push_str("-q");
            if let Some(device) = gpu.pci_device {
                let _ = write!(out, "{device:04x}");
            }
            flags(
                &mut out,
                &[(gpu.xpu_capable, 'y'), (gpu.integrated, 'i')],
                count,
            );
            if let Some(ip) = &gpu.device_ip {
                out.push_str("-u");
                escape_into(&mut out, ip);
            }
            name_field(&mut out, gpu.name.as_deref());
        }
    }
    out
}

fn encode_nvidia(out: &mut String, nvidia: &Nvidia) {
    out.push_str("-n");
    if let Some(driver) = &nvidia.driver_version {
        let _ = write!(out, "{driver}");
    }
    if let Some(cuda) = &nvidia.cuda_version {
        let _ = write!(out, "-c{cuda}");
    }
    for (gpu, count) in groups(&nvidia.gpus) {
        out.push_str("-s");
        if let Some(capability) = gpu.compute_capability {
            let _ = write!(out, "{capability}");
        }
        flags(out, &[(gpu.integrated, 'i')], count);
        name_field(out, gpu.name.as_deref());
    }
}

fn platform_code(platform: Platform) -> &'static str {
    match (platform.os, platform.arch) {
        (Os::Linux, Arch::X86_64) => "lx",
        (Os::Linux, Arch::Aarch64) => "la",
        (Os::Windows, Arch::X86_64) => "wx",
        (Os::Windows, Arch::Aarch64) => "wa",
        (Os::Macos, Arch::X86_64) => "mx",
        (Os::Macos, Arch::Aarch64) => "ma",
        // `Platform` admits s390x on Linux only.
        (_, Arch::S390x) => "ls",
    }
}

/// Runs of identical consecutive GPUs, with their length.
fn groups<T: PartialEq>(gpus: &[T]) -> Vec<(&T, usize)> {
    let mut runs: Vec<(&T, usize)> = Vec::new();
    for gpu in gpus {
        match runs.last_mut() {
            Some((last, count)) if *last == gpu => *count += 1,
            _ => runs.push((gpu, 1)),
        }
    }
    runs
}

fn flags(out: &mut String, set: &[(bool, char)], count: usize) {
    for (on, letter) in set {
        if *on {
            out.push(*letter);
        }
    }
    if count > 1 {
        let _ = write!(out, "x{count}");
    }
}

fn name_field(out: &mut String, name: Option<&str>) {
    if let Some(name) = name {
        out.push_str("-t");
        escape_into(out, name);
    }
}

fn escape_into(out: &mut String, text: &str) {
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' => out.push(char::from(byte)),
            b' ' => out.push('_'),
            _ => {
                let _ = write!(out, "~{byte:02X}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Where in the token the decoder is; fields may only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Platform,
    Level,
    Aarch64,
    Glibc,
    Nvidia,
    Cuda,
    NvidiaGpu,
    Amd,
    AmdGpu,
    Intel,
    IntelGpu,
}

/// Which GPU group a `t` or `u` field applies to: (vendor rank, first index, count).
#[derive(Debug, Clone, Copy)]
struct Group {
    rank: Rank,
    start: usize,
    count: usize,
    named: bool,
    has_ip: bool,
}

/// The machine of a token.
pub fn decode(token: &str) -> Result<Machine, TokenError> {
    if token.is_empty() {
        return Err(TokenError::Empty);
    }
    if token.len() > MAX_LEN {
        return Err(TokenError::TooLong(token.len()));
    }
    let mut fields = token.split('-');
    let format = fields.next().unwrap_or_default();
    if format != VERSION {
        return Err(TokenError::Version(format.chars().take(16).collect()));
    }
    let code = fields.next().unwrap_or_default();
    let platform = parse_platform(code).ok_or_else(|| TokenError::Platform(code.into()))?;
    let mut machine = Machine::cpu_only(platform);
    let mut rank = Rank::Platform;
    let mut group: Option<Group> = None;

    for field in fields {
        let bad = |reason: &'static str| TokenError::Field {
            field: field.chars().take(40).collect(),
            reason,
        };
        let out_of_place = || TokenError::Order(field.chars().take(40).collect());
        let mut chars = field.chars();
        let key = chars.next().ok_or_else(|| bad("empty field"))?;
        let value = chars.as_str();
        if matches!(key, 't' | 'u') {
            let current = group.as_mut().ok_or_else(out_of_place)?;
            if current.named || (key == 'u' && (current.rank != Rank::IntelGpu || current.has_ip)) {
                return Err(out_of_place());
            }
            let text = unescape(value).ok_or_else(|| bad("bad escape"))?;
            apply_text(&mut machine, *current, key, &text);
            if key == 't' {
                current.named = true;
            } else {
                current.has_ip = true;
            }
            continue;
        }
        let next = match key {
            'v' => Rank::Level,
            'a' => Rank::Aarch64,
            'g' => Rank::Glibc,
            'n' => Rank::Nvidia,
            'c' => Rank::Cuda,
            's' => Rank::NvidiaGpu,
            'm' => Rank::Amd,
            'k' => Rank::AmdGpu,
            'e' => Rank::Intel,
            'q' => Rank::IntelGpu,
            _ => return Err(bad("unknown key")),
        };
        let repeatable = matches!(next, Rank::NvidiaGpu | Rank::AmdGpu | Rank::IntelGpu);
        if next < rank || (next == rank && !repeatable) {
            return Err(out_of_place());
        }
        rank = next;
        group = None;
        match key {
            'v' => {
                let level: u8 = value.parse().map_err(|_| bad("expected a level"))?;
                machine.x86_64_level = Some(level);
            }
            'a' => {
                machine.aarch64_version = Some(unescape(value).ok_or_else(|| bad("bad escape"))?);
            }
            'g' => machine.glibc = Some(version(value).ok_or_else(|| bad("expected a version"))?),
            'n' => {
                machine.nvidia = Some(Nvidia {
                    driver_version: optional_version(value)
                        .ok_or_else(|| bad("expected a version"))?,
                    ..Nvidia::default()
                });
            }
            'c' => {
                let nvidia = machine.nvidia.as_mut().ok_or_else(out_of_place)?;
                let cuda: CudaVersion =
                    value.parse().map_err(|_| bad("expected a CUDA version"))?;
                nvidia.cuda_version = Some(cuda);
            }
            'm' => {
                machine.amd = Some(Amd {
                    rocm_version: optional_version(value)
                        .ok_or_else(|| bad("expected a version"))?,
                    gpus: Vec::new(),
                });
            }
            'e' if value.is_empty() => machine.intel = Some(Intel::default()),
            'e' => return Err(bad("expected no value")),
            _ => group = Some(decode_gpu(&mut machine, next, value).map_err(bad)?),
        }
    }
    Ok(machine)
}

fn parse_platform(code: &str) -> Option<Platform> {
    let (os, arch) = match code {
        "lx" => (Os::Linux, Arch::X86_64),
        "la" => (Os::Linux, Arch::Aarch64),
        "wx" => (Os::Windows, Arch::X86_64),
        "wa" => (Os::Windows, Arch::Aarch64),
        "mx" => (Os::Macos, Arch::X86_64),
        "ma" => (Os::Macos, Arch::Aarch64),
        "ls" => (Os::Linux, Arch::S390x),
        _ => return None,
    };
    Some(Platform { os, arch })
}

fn version(text: &str) -> Option<DottedVersion> {
    text.bytes()
        .all(|b| b.is_ascii_digit() || b == b'.')
        .then(|| text.parse().ok())
        .flatten()
}

/// `Some(None)` for an empty value.
#[allow(clippy::option_option)] // empty, valid and invalid are three different answers
fn optional_version(text: &str) -> Option<Option<DottedVersion>> {
    if text.is_empty() {
        Some(None)
    } else {
        version(text).map(Some)
    }
}

/// Splits `<body><flags>[x<count>]` where `flags` are letters of `allowed` in order.
fn split_flags<'t>(
    text: &'t str,
    body: impl Fn(char) -> bool,
    allowed: &[char],
) -> Result<(&'t str, Vec<bool>, usize), &'static str> {
    let end = text.find(|c: char| !body(c)).unwrap_or(text.len());
    let (head, mut rest) = text.split_at(end);
    let mut set = vec![false; allowed.len()];
    for (index, letter) in allowed.iter().enumerate() {
        if let Some(after) = rest.strip_prefix(*letter) {
            set[index] = true;
            rest = after;
        }
    }
    let count = match rest.strip_prefix('x') {
        None if rest.is_empty() => 1,
        None => return Err("unexpected characters"),
        Some(digits) => {
            if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err("bad count");
            }
            digits.parse::<usize>().map_err(|_| "bad count")?
        }
    };
    if count == 0 || count > MAX_GPUS {
        return Err("bad count");
    }
    Ok((head, set, count))
}

fn decode_gpu(machine: &mut Machine, rank: Rank, value: &str) -> Result<Group, &'static str> {
    let (start, count) = match rank {
        Rank::NvidiaGpu => {
            let nvidia = machine.nvidia.as_mut().ok_or("GPU before its section")?;
            let (cc, set, count) = split_flags(value, |c| c.is_ascii_digit() || c == '.', &['i'])?;
            let compute_capability = if cc.is_empty() {
                None
            } else {
                Some(
                    cc.parse::<ComputeCapability>()
                        .map_err(|_| "expected a compute capability")?,
                )
            };
            let gpu = NvidiaGpu {
                name: None,
                compute_capability,
                integrated: set[0],
            };
            push(&mut nvidia.gpus, &gpu, count)?
        }
        Rank::AmdGpu => {
            let amd = machine.amd.as_mut().ok_or("GPU before its section")?;
            let (digits, set, count) =
                split_flags(value, |c| matches!(c, '0'..='9' | 'a'..='f'), &['i'])?;
            let gfx: GfxTarget = format!("gfx{digits}")
                .parse()
                .map_err(|_| "expected a gfx target")?;
            let gpu = AmdGpu {
                name: None,
                gfx,
                integrated: set[0],
            };
            push(&mut amd.gpus, &gpu, count)?
        }
        _ => {
            let intel = machine.intel.as_mut().ok_or("GPU before its section")?;
            let (hex, set, count) =
                split_flags(value, |c| matches!(c, '0'..='9' | 'a'..='f'), &['y', 'i'])?;
            let pci_device = match hex.len() {
                0 => None,
                4 => Some(u16::from_str_radix(hex, 16).map_err(|_| "bad PCI id")?),
                _ => return Err("expected a 4-digit PCI id"),
            };
            let gpu = IntelGpu {
                pci_device,
                xpu_capable: set[0],
                integrated: set[1],
                ..IntelGpu::default()
            };
            push(&mut intel.gpus, &gpu, count)?
        }
    };
    Ok(Group {
        rank,
        start,
        count,
        named: false,
        has_ip: false,
    })
}

fn push<T: Clone>(
    list: &mut Vec<T>,
    gpu: &T,
    count: usize,
) -> Result<(usize, usize), &'static str> {
    let start = list.len();
    if start + count > MAX_GPUS {
        return Err("too many GPUs");
    }
    list.extend(std::iter::repeat_n(gpu.clone(), count));
    Ok((start, count))
}

fn apply_text(machine: &mut Machine, group: Group, key: char, text: &str) {
    let range = group.start..group.start + group.count;
    match group.rank {
        Rank::NvidiaGpu => {
            if let Some(nvidia) = machine.nvidia.as_mut() {
                for gpu in &mut nvidia.gpus[range] {
                    gpu.name = Some(text.to_string());
                }
            }
        }
        Rank::AmdGpu => {
            if let Some(amd) = machine.amd.as_mut() {
                for gpu in &mut amd.gpus[range] {
                    gpu.name = Some(text.to_string());
                }
            }
        }
        _ => {
            if let Some(intel) = machine.intel.as_mut() {
                for gpu in &mut intel.gpus[range] {
                    if key == 't' {
                        gpu.name = Some(text.to_string());
                    } else {
                        gpu.device_ip = Some(text.to_string());
                    }
                }
            }
        }
    }
}

fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'_' => out.push(b' '),
            b'~' => {
                let hex = text.get(index + 1..index + 3)?;
                if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                index += 2;
            }
            b @ (b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.') => out.push(b),
            _ => return None,
        }
        index += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dgx() -> Machine {
        serde_json::from_str(
            r#"{"platform":"linux-x86_64","x86_64_level":4,"glibc":"2.35","nvidia":{"driver_version":"580.65.06","cuda_version":"13.0","gpus":[
            {"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},
            {"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},
            {"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},
            {"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"},{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_dgx_is_short_and_readable() {
        let token = encode(&dgx());
        assert_eq!(
            token,
            "1-lx-v4-g2.35-n580.65.06-c13.0-s9.0x8-tNVIDIA_H100_80GB_HBM3"
        );
        assert_eq!(decode(&token).unwrap(), dgx());
    }

    #[test]
    fn every_section_round_trips() {
        let json = r#"{"platform":"linux-aarch64","aarch64_version":"9.0a","glibc":"2.39",
            "nvidia":{"gpus":[{"name":"Orin-AGX (dev kit) ~ü_","compute_capability":"8.7","integrated":true},{}]},
            "amd":{"rocm_version":"6.4.1","gpus":[{"gfx":"gfx1101"},{"name":"AMD Radeon 780M","gfx":"gfx1103","integrated":true},{"gfx":"gfx90a"}]},
            "intel":{"gpus":[{"name":"Intel Arc B580","pci_device":57867,"device_ip":"20.1.0","xpu_capable":true},{"pci_device":18048,"xpu_capable":false,"integrated":true},{"xpu_capable":false}]}}"#;
        let machine: Machine = serde_json::from_str(json).unwrap();
        let token = encode(&machine);
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b)),
            "{token}"
        );
        assert_eq!(decode(&token).unwrap(), machine, "{token}");
        let bare = Machine::cpu_only("macos-arm64".parse().unwrap());
        assert_eq!(encode(&bare), "1-ma");
        assert_eq!(decode("1-ma").unwrap(), bare);
    }

    #[test]
    fn refuses_bad_tokens() {
        for token in [
            "",
            "2-lx",
            "1",
            "1-zz",
            "1-lx-z",
            "1-lx-g2.39-v3",
            "1-lx-v3-v3",
            "1-lx-s9.0",
            "1-lx-c13.0",
            "1-lx-n-s9.0x0",
            "1-lx-n-s9.0x99999",
            "1-lx-n-s9.0x1025",
            "1-lx-n-s9.0-tA-tB",
            "1-lx-n-s9.0-u20.1",
            "1-lx-n-sbanana",
            "1-lx-m-kzz",
            "1-lx-e-q12345",
            "1-lx-tName",
            "1-lx-n-s-t~ZZ",
            "1-lx-n-s-t~C3",
            "1-lx-n-s-ta%20b",
            "1-lx--v3",
            "1-lx-eX",
        ] {
            assert!(decode(token).is_err(), "{token}");
        }
        assert_eq!(
            decode(&"1-lx-".repeat(2000)),
            Err(TokenError::TooLong(10_000))
        );
    }

    fn arb_version() -> impl Strategy<Value = DottedVersion> {
        prop::collection::vec(0u32..1000, 1..4).prop_map(|parts| {
            parts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(".")
                .parse()
                .unwrap()
        })
    }

    fn arb_machine() -> impl Strategy<Value = Machine> {
        let nvidia_gpu = (
            prop::option::of(".*"),
            prop::option::of((1u8..30, 0u8..10)),
            any::<bool>(),
        )
            .prop_map(|(name, cc, integrated)| NvidiaGpu {
                name,
                compute_capability: cc.map(|(a, b)| ComputeCapability::new(a, b)),
                integrated,
            });
        let nvidia = (
            prop::option::of(arb_version()),
            prop::option::of((1u16..99, 0u16..99)),
            prop::collection::vec(nvidia_gpu.clone(), 0..3).prop_flat_map(move |gpus| {
                // Repeat some GPUs to exercise the counts.
                (Just(gpus), 1usize..4)
            }),
        )
            .prop_map(|(driver, cuda, (gpus, times))| Nvidia {
                driver_version: driver,
                cuda_version: cuda.map(|(a, b)| CudaVersion::new(a, b)),
                gpus: gpus
                    .into_iter()
                    .flat_map(|g| std::iter::repeat_n(g, times))
                    .collect(),
            });
        let amd_gpu = (
            prop::option::of("[ -~]{0,12}"),
            "gfx[1-9][0-9]?[0-9a-f]{2}",
            any::<bool>(),
        )
            .prop_map(|(name, gfx, integrated)| AmdGpu {
                name,
                gfx: gfx.parse().unwrap(),
                integrated,
            });
        let amd = (
            prop::option::of(arb_version()),
            prop::collection::vec(amd_gpu, 0..3),
        )
            .prop_map(|(rocm_version, gpus)| Amd { rocm_version, gpus });
        let intel_gpu = (
            prop::option::of(".{0,10}"),
            prop::option::of(any::<u16>()),
            prop::option::of("[0-9.]{1,8}"),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(name, pci_device, device_ip, xpu_capable, integrated)| IntelGpu {
                    name,
                    pci_device,
                    device_ip,
                    xpu_capable,
                    integrated,
                },
            );
        let intel = prop::collection::vec(intel_gpu, 0..3).prop_map(|gpus| Intel { gpus });
        (
            prop::sample::select(vec!["lx", "la", "ls", "wx", "wa", "mx", "ma"]),
            prop::option::of(1u8..5),
            prop::option::of(".{0,6}"),
            prop::option::of(arb_version()),
            prop::option::of(nvidia),
            prop::option::of(amd),
            prop::option::of(intel),
        )
            .prop_map(
                |(code, level, aarch64, glibc, nvidia, amd, intel)| Machine {
                    platform: parse_platform(code).unwrap(),
                    x86_64_level: level,
                    aarch64_version: aarch64,
                    glibc,
                    nvidia,
                    amd,
                    intel,
                },
            )
    }

    proptest! {
        #[test]
        fn any_machine_round_trips(machine in arb_machine()) {
            let token = encode(&machine);
            prop_assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b)));
            prop_assert_eq!(decode(&token).unwrap(), machine);
        }

        #[test]
        fn garbage_never_panics(text in ".{0,80}") {
            let _ = decode(&text);
        }

        #[test]
        fn mutated_tokens_never_panic(index in 0usize..60, byte in any::<u8>()) {
            let mut bytes = encode(&dgx()).into_bytes();
            let at = index % bytes.len();
            bytes[at] = byte;
            if let Ok(text) = String::from_utf8(bytes) {
                let _ = decode(&text);
            }
        }
    }
}
