//! Whether a wheel's platform tags can run on a machine's platform (PEP 425, PEP 600 manylinux,
//! PEP 656 musllinux, macOS and Windows tags).

use crate::machine::{Arch, Machine, Os};
use crate::version::DottedVersion;

/// Whether any of `platform_tags` runs on `machine`. Python and ABI tags are left to the
/// installer, which knows its interpreter.
pub fn platform_matches<'t>(
    machine: &Machine,
    platform_tags: impl IntoIterator<Item = &'t str>,
) -> bool {
    platform_tags
        .into_iter()
        .any(|tag| tag_matches(machine, tag))
}

fn tag_matches(machine: &Machine, tag: &str) -> bool {
    if tag == "any" {
        return true;
    }
    let platform = machine.platform;
    match platform.os {
        Os::Linux => linux_tag_matches(platform.arch, machine.glibc.as_ref(), tag),
        Os::Windows => matches!(
            (platform.arch, tag),
            (Arch::X86_64, "win_amd64") | (Arch::Aarch64, "win_arm64")
        ),
        Os::Macos => {
            let Some(rest) = tag.strip_prefix("macosx_") else {
                return false;
            };
            // `macosx_11_0_arm64`: the architecture is what follows the second number.
            let arch = rest.splitn(3, '_').nth(2).unwrap_or_default();
            match platform.arch {
                Arch::Aarch64 => matches!(arch, "arm64" | "universal2"),
                Arch::X86_64 => matches!(
                    arch,
                    "x86_64" | "universal2" | "intel" | "universal" | "fat64" | "fat3"
                ),
                Arch::S390x => false,
            }
        }
    }
}

fn linux_tag_matches(arch: Arch, glibc: Option<&DottedVersion>, tag: &str) -> bool {
    let arch_suffix = match arch {
        Arch::X86_64 => "_x86_64",
        Arch::Aarch64 => "_aarch64",
        Arch::S390x => "_s390x",
    };
    let Some(head) = tag.strip_suffix(arch_suffix) else {
        return false;
    };
    // Legacy aliases of PEP 600 tags, with the glibc each one requires.
    let required: Option<(u32, u32)> = match head {
        "linux" => return true,
        "manylinux1" => Some((2, 5)),
        "manylinux2010" => Some((2, 12)),
        "manylinux2014" => Some((2, 17)),
        _ => {
            if let Some(version) = head.strip_prefix("manylinux_") {
                parse_major_minor(version)
            } else if head.starts_with("musllinux_") {
                // A glibc machine cannot load musl wheels; an unknown libc gets the benefit of
                // the doubt, as the installer checks again.
                return glibc.is_none();
            } else {
                return false;
            }
        }
    };
    let Some((major, minor)) = required else {
        return false;
    };
    match glibc {
        Some(have) => {
            let parts = have.parts();
            let have = (
                parts.first().copied().unwrap_or(0),
                parts.get(1).copied().unwrap_or(0),
            );
            have >= (major, minor)
        }
        None => true,
    }
}

fn parse_major_minor(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('_')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Platform;

    fn machine(platform: &str, glibc: Option<&str>) -> Machine {
        let mut machine = Machine::cpu_only(platform.parse::<Platform>().unwrap());
        machine.glibc = glibc.map(|g| g.parse().unwrap());
        machine
    }

    fn matches(machine: &Machine, tag: &str) -> bool {
        platform_matches(machine, [tag])
    }

    #[test]
    fn linux_tags_respect_arch_and_glibc() {
        let m = machine("linux-x86_64", Some("2.36"));
        assert!(matches(&m, "manylinux_2_28_x86_64"));
        assert!(matches(&m, "manylinux2014_x86_64"));
        assert!(matches(&m, "linux_x86_64"));
        assert!(matches(&m, "any"));
        assert!(!matches(&m, "manylinux_2_28_aarch64"));
        assert!(!matches(&m, "win_amd64"));
        assert!(!matches(&m, "musllinux_1_2_x86_64"));
        let old = machine("linux-x86_64", Some("2.17"));
        assert!(!matches(&old, "manylinux_2_28_x86_64"));
        assert!(matches(&old, "manylinux2014_x86_64"));
    }

    #[test]
    fn windows_and_macos_tags() {
        assert!(matches(&machine("windows-x86_64", None), "win_amd64"));
        assert!(!matches(&machine("windows-x86_64", None), "win32"));
        let mac = machine("macos-arm64", None);
        assert!(matches(&mac, "macosx_11_0_arm64"));
        assert!(matches(&mac, "macosx_10_9_universal2"));
        assert!(!matches(&mac, "macosx_10_9_x86_64"));
        assert!(!matches(&mac, "manylinux_2_28_x86_64"));
    }
}
