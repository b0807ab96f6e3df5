//! Operating system and CPU architecture, and the kernel release (which tells WSL2 apart).

use wheelgate_resolver::{Arch, Os, Platform};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::source::{Facts, Source, Trail};

const KERNEL_ARCH: &str = "/proc/sys/kernel/arch";
const CPUINFO: &str = "/proc/cpuinfo";
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// A parser of one architecture source.
type Parser = fn(&str) -> Option<Arch>;

/// `/proc/sys/kernel/arch` (Linux 6.1+), or `uname -m`: `x86_64`, `aarch64`.
pub fn parse_arch(content: &str) -> Option<Arch> {
    match content.trim() {
        "x86_64" | "amd64" => Some(Arch::X86_64),
        "aarch64" | "arm64" => Some(Arch::Aarch64),
        "s390x" => Some(Arch::S390x),
        _ => None,
    }
}

/// The architecture `/proc/cpuinfo` is written for: x86 lists `flags`, arm64 `Features` and
/// `CPU implementer`, IBM Z a `vendor_id` of `IBM/S390`.
/// ```text
/// processor    : 0
/// vendor_id    : GenuineIntel
/// flags        : fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov ...
/// ```
pub fn arch_from_cpuinfo(content: &str) -> Option<Arch> {
    content.lines().find_map(|line| {
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        match key.trim() {
            "vendor_id" if value.trim().starts_with("IBM/S390") => Some(Arch::S390x),
            "flags" | "vendor_id" => Some(Arch::X86_64),
            "Features" | "CPU implementer" => Some(Arch::Aarch64),
            _ => None,
        }
    })
}

/// The platform this program was built for.
pub fn build_platform() -> Platform {
    let os = if cfg!(windows) {
        Os::Windows
    } else if cfg!(target_os = "macos") {
        Os::Macos
    } else {
        Os::Linux
    };
    let arch = if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    };
    Platform { os, arch }
}

/// Probes the platform. A sysroot other than `/` is a Linux tree.
pub fn probe(ctx: &ProbeContext, facts: &mut Facts) -> Result<Platform, OverrideError> {
    let mut trail = Trail::new("platform");
    if let Some(platform) = overrides::platform(&ctx.env)? {
        facts.push(trail.found(platform, Source::Override(overrides::PLATFORM)));
        return Ok(platform);
    }
    let build = build_platform();
    if ctx.sysroot.is_host() && build.os != Os::Linux {
        facts.push(trail.found(build, Source::Build));
        return Ok(build);
    }
    let sysroot = &ctx.sysroot;
    if let Ok(release) = sysroot.read(OSRELEASE) {
        facts.push(Trail::new("kernel").found(&release, Source::File(OSRELEASE.into())));
    }
    let readers: [(&str, Parser); 2] = [(KERNEL_ARCH, parse_arch), (CPUINFO, arch_from_cpuinfo)];
    for (path, parse) in readers {
        match sysroot.read(path) {
            Ok(text) => match parse(&text) {
                Some(arch) => {
                    let platform = Platform {
                        os: Os::Linux,
                        arch,
                    };
                    facts.push(trail.found(platform, Source::File(path.into())));
                    return Ok(platform);
                }
                None => trail.failed(Source::File(path.into()), "names no known architecture"),
            },
            Err(error) => trail.failed(Source::File(path.into()), error),
        }
    }
    let platform = Platform {
        os: Os::Linux,
        arch: build.arch,
    };
    facts.push(trail.found(platform, Source::Build));
    Ok(platform)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_architectures() {
        assert_eq!(parse_arch("x86_64\n"), Some(Arch::X86_64));
        assert_eq!(parse_arch("aarch64"), Some(Arch::Aarch64));
        assert_eq!(parse_arch("s390x"), Some(Arch::S390x));
        assert_eq!(
            arch_from_cpuinfo("vendor_id       : IBM/S390\n# processors    : 4\n"),
            Some(Arch::S390x)
        );
        assert_eq!(parse_arch("riscv64"), None);
        assert_eq!(
            arch_from_cpuinfo("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd\n"),
            Some(Arch::Aarch64)
        );
        assert_eq!(
            arch_from_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\n"),
            Some(Arch::X86_64)
        );
        assert_eq!(arch_from_cpuinfo("garbage"), None);
    }
}
