//! CPU feature levels: the x86-64 microarchitecture level (psABI v1 to v4) and the aarch64
//! architecture version, for wheels built for a level (`x86_64_v3` variants).

use wheelgate_resolver::{Arch, Machine};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::source::{Facts, Source, Trail};

const CPUINFO: &str = "/proc/cpuinfo";
/// `/proc/cpuinfo` repeats one block per CPU; the first block is enough and on a many-core
/// machine the whole file is large and slow for the kernel to generate.
const CPUINFO_HEAD: u64 = 16 * 1024;

/// x86-64 psABI levels as `/proc/cpuinfo` names the features (`pni` is SSE3, `abm` is LZCNT).
const X86_64_LEVELS: &[(u8, &[&str])] = &[
    (
        2,
        &[
            "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
        ],
    ),
    (
        3,
        &[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
        ],
    ),
    (
        4,
        &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"],
    ),
];

/// aarch64 versions by the `Features` (HWCAP) names that first appear in them; each level
/// requires the ones before it. SVE2 is mandatory from Armv9.0.
const AARCH64_VERSIONS: &[(&str, &[&str])] = &[
    ("8.1a", &["atomics", "asimdrdm"]),
    ("8.2a", &["dcpop"]),
    ("8.3a", &["jscvt", "fcma", "lrcpc"]),
    ("8.4a", &["dit", "uscat", "ilrcpc", "flagm"]),
    ("8.5a", &["sb", "frint"]),
    ("8.6a", &["i8mm", "bf16"]),
    ("9.0a", &["sve2"]),
];

/// The feature words of the first CPU of `/proc/cpuinfo`:
/// ```text
/// flags        : fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush ...
/// ```
/// (`Features    : fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics ...` on arm64).
pub fn parse_features(content: &str) -> Option<Vec<&str>> {
    content.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        matches!(key.trim(), "flags" | "Features").then(|| value.split_whitespace().collect())
    })
}

/// The x86-64 level of a CPU with these `/proc/cpuinfo` flags (1 at least).
pub fn x86_64_level(flags: &[&str]) -> u8 {
    let mut level = 1;
    for (next, required) in X86_64_LEVELS {
        if required.iter().all(|f| flags.contains(f)) {
            level = *next;
        } else {
            break;
        }
    }
    level
}

/// The aarch64 version of a CPU with these `Features`.
pub fn aarch64_version(features: &[&str]) -> String {
    let mut version = "8.0a";
    for (next, required) in AARCH64_VERSIONS {
        if required.iter().all(|f| features.contains(f)) {
            version = next;
        } else {
            break;
        }
    }
    version.to_string()
}

/// The x86-64 level from CPUID, on an x86-64 host.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::unnecessary_wraps)] // the same signature as on other architectures
fn host_x86_64_level() -> Option<u8> {
    use std::arch::is_x86_feature_detected as has;
    let v2 = has!("cmpxchg16b")
        && has!("popcnt")
        && has!("sse3")
        && has!("sse4.1")
        && has!("sse4.2")
        && has!("ssse3");
    let v3 = v2
        && has!("avx")
        && has!("avx2")
        && has!("bmi1")
        && has!("bmi2")
        && has!("f16c")
        && has!("fma")
        && has!("lzcnt")
        && has!("movbe")
        && has!("xsave");
    let v4 = v3
        && has!("avx512f")
        && has!("avx512bw")
        && has!("avx512cd")
        && has!("avx512dq")
        && has!("avx512vl");
    Some(if v4 {
        4
    } else if v3 {
        3
    } else if v2 {
        2
    } else {
        1
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn host_x86_64_level() -> Option<u8> {
    None
}

/// Fills the machine's x86-64 level or aarch64 version.
pub fn probe(
    ctx: &ProbeContext,
    machine: &mut Machine,
    platform_overridden: bool,
    facts: &mut Facts,
) -> Result<(), OverrideError> {
    let level_override = overrides::x86_64_level(&ctx.env)?;
    let version_override = overrides::aarch64_version(&ctx.env)?;
    match machine.platform.arch {
        Arch::X86_64 => {
            let mut trail = Trail::new("x86_64_level");
            if let Some(level) = level_override {
                machine.x86_64_level = Some(level);
                facts.push(trail.found(
                    format!("v{level}"),
                    Source::Override(overrides::X86_64_LEVEL),
                ));
                return Ok(());
            }
            if platform_overridden {
                // The CPU here is not the target's.
                trail.failed(
                    Source::Override(overrides::PLATFORM),
                    format!("platform overridden; set {} too", overrides::X86_64_LEVEL),
                );
                facts.push(trail.not_found());
                return Ok(());
            }
            if ctx.sysroot.is_host()
                && let Some(level) = host_x86_64_level()
            {
                machine.x86_64_level = Some(level);
                facts.push(trail.found(format!("v{level}"), Source::Cpuid));
                return Ok(());
            }
            match read_features(ctx) {
                Ok(flags) => {
                    let level = x86_64_level(&flags.iter().map(String::as_str).collect::<Vec<_>>());
                    machine.x86_64_level = Some(level);
                    facts.push(trail.found(format!("v{level}"), Source::File(CPUINFO.into())));
                }
                Err(reason) => {
                    trail.failed(Source::File(CPUINFO.into()), reason);
                    facts.push(trail.not_found());
                }
            }
        }
        Arch::Aarch64 => {
            let mut trail = Trail::new("aarch64_version");
            if let Some(version) = version_override {
                facts.push(trail.found(&version, Source::Override(overrides::AARCH64_VERSION)));
                machine.aarch64_version = Some(version);
                return Ok(());
            }
            if platform_overridden {
                trail.failed(
                    Source::Override(overrides::PLATFORM),
                    format!(
                        "platform overridden; set {} too",
                        overrides::AARCH64_VERSION
                    ),
                );
                facts.push(trail.not_found());
                return Ok(());
            }
            match read_features(ctx) {
                Ok(features) => {
                    let version =
                        aarch64_version(&features.iter().map(String::as_str).collect::<Vec<_>>());
                    facts.push(trail.found(&version, Source::File(CPUINFO.into())));
                    machine.aarch64_version = Some(version);
                }
                Err(reason) => {
                    trail.failed(Source::File(CPUINFO.into()), reason);
                    facts.push(trail.not_found());
                }
            }
        }
        // No wheel tag or variant property distinguishes IBM Z generations.
        Arch::S390x => {}
    }
    Ok(())
}

fn read_features(ctx: &ProbeContext) -> Result<Vec<String>, String> {
    let bytes = ctx
        .sysroot
        .read_bytes(CPUINFO, CPUINFO_HEAD)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    parse_features(&text)
        .map(|words| words.into_iter().map(str::to_string).collect())
        .ok_or_else(|| "no `flags` or `Features` line".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_from_real_flags() {
        // An Intel Xeon Platinum 8480 (Sapphire Rapids), abridged.
        let spr = "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch fsgsbase bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt\n";
        assert_eq!(x86_64_level(&parse_features(spr).unwrap()), 4);
        let westmere = "flags\t\t: fpu cx8 cmov mmx fxsr sse sse2 syscall lm pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm\n";
        assert_eq!(x86_64_level(&parse_features(westmere).unwrap()), 2);
        assert_eq!(x86_64_level(&["fpu", "sse2"]), 1);
        assert_eq!(parse_features("garbage\n"), None);
    }

    #[test]
    fn aarch64_versions_from_real_features() {
        // NVIDIA Grace (Neoverse V2).
        let grace = "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti\n";
        assert_eq!(aarch64_version(&parse_features(grace).unwrap()), "9.0a");
        // AWS Graviton2 (Neoverse N1).
        let n1 = "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n";
        assert_eq!(aarch64_version(&parse_features(n1).unwrap()), "8.2a");
        assert_eq!(aarch64_version(&["fp", "asimd"]), "8.0a");
    }
}
