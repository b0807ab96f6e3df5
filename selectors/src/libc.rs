//! The C library: glibc's version (for manylinux tags), or none on musl.

use wheelgate_resolver::DottedVersion;

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::source::{Facts, Source, Trail};

/// Where distributions put glibc.
const LIBC_PATHS: &[&str] = &[
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib/libc.so.6",
];
/// musl's dynamic loader, present on Alpine and other musl systems.
const MUSL_LOADERS: &[&str] = &["/lib/ld-musl-x86_64.so.1", "/lib/ld-musl-aarch64.so.1"];
/// glibc is about 2 MiB; its banner is in `.rodata`.
const LIBC_READ_LIMIT: u64 = 8 * 1024 * 1024;

/// The version in glibc's banner, which every `libc.so.6` carries as text:
/// ```text
/// GNU C Library (Debian GLIBC 2.36-9+deb12u10) stable release version 2.36.
/// ```
pub fn parse_banner(bytes: &[u8]) -> Option<DottedVersion> {
    let start = find(bytes, b"GNU C Library")?;
    let rest = &bytes[start..bytes.len().min(start + 512)];
    let at = find(rest, b"release version ")? + b"release version ".len();
    let digits: Vec<u8> = rest[at..]
        .iter()
        .copied()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .collect();
    let text = String::from_utf8(digits).ok()?;
    text.trim_end_matches('.').parse().ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Probes the glibc version; `None` on musl or when unknown.
pub fn probe(
    ctx: &ProbeContext,
    facts: &mut Facts,
) -> Result<Option<DottedVersion>, OverrideError> {
    let mut trail = Trail::new("glibc");
    if let Some(version) = overrides::glibc(&ctx.env)? {
        let shown = version
            .as_ref()
            .map_or_else(|| "none".to_string(), ToString::to_string);
        facts.push(trail.found(shown, Source::Override(overrides::GLIBC)));
        return Ok(version);
    }
    if ctx.sysroot.is_host() {
        match crate::ffi::glibc::version().map(|text| text.parse::<DottedVersion>()) {
            Some(Ok(version)) => {
                facts.push(trail.found(&version, Source::Library("glibc")));
                return Ok(Some(version));
            }
            Some(Err(error)) => trail.failed(Source::Library("glibc"), error),
            None => trail.failed(
                Source::Library("glibc"),
                "this program is not linked to glibc",
            ),
        }
    }
    if let Some(loader) = MUSL_LOADERS.iter().find(|p| ctx.sysroot.exists(p)) {
        facts.push(trail.found("none (musl)", Source::File((*loader).into())));
        return Ok(None);
    }
    for path in LIBC_PATHS {
        match ctx.sysroot.read_bytes(path, LIBC_READ_LIMIT) {
            Ok(bytes) => match parse_banner(&bytes) {
                Some(version) => {
                    facts.push(trail.found(&version, Source::File((*path).into())));
                    return Ok(Some(version));
                }
                None => trail.failed(Source::File((*path).into()), "no glibc banner"),
            },
            Err(crate::sysroot::SysrootError::NotFound(_)) => {}
            Err(error) => trail.failed(Source::File((*path).into()), error),
        }
    }
    facts.push(trail.not_found());
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_banner() {
        let bytes = b"\x7fELF....GNU C Library (Debian GLIBC 2.36-9+deb12u10) stable release version 2.36.\nCopyright";
        assert_eq!(parse_banner(bytes).unwrap().to_string(), "2.36");
        let ubuntu = b"GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8.4) stable release version 2.39.";
        assert_eq!(parse_banner(ubuntu).unwrap().to_string(), "2.39");
        assert_eq!(parse_banner(b"GNU C Library (truncated"), None);
        assert_eq!(parse_banner(b""), None);
    }
}
