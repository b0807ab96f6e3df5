//! Core metadata rewritten (requirements added or made unconditional, the version replaced): the
//! text a derived wheel's `METADATA` and its served
//! `.metadata` file both carry, byte for byte, so installers that compare the two (pip 26.2 and
//! later) find them equal. Everything else is kept as the upstream wrote it.
//!
//! Input, as wheels carry it (RFC 822-style headers, then a blank line and the description):
//!
//! ```text
//! Metadata-Version: 2.1
//! Name: torch_scatter
//! Version: 2.1.2+pt210cu128
//! Requires-Python: >=3.9
//!
//! PyTorch Extension Library of Optimized Scatter Operations
//! ```

/// `metadata` with a `Requires-Dist: <requirement>` header per `requirements` after its last
/// header line, in the file's own line ending.
pub fn with_requirements(metadata: &[u8], requirements: &[String]) -> Vec<u8> {
    let newline: &[u8] = if metadata.windows(2).any(|w| w == b"\r\n") {
        b"\r\n"
    } else {
        b"\n"
    };
    // The headers end at the first empty line (or with the file).
    let end = header_end(metadata);
    let mut out = Vec::with_capacity(metadata.len() + requirements.len() * 48);
    out.extend_from_slice(&metadata[..end]);
    if end > 0 && !metadata[..end].ends_with(b"\n") {
        out.extend_from_slice(newline);
    }
    for requirement in requirements {
        out.extend_from_slice(b"Requires-Dist: ");
        out.extend_from_slice(requirement.as_bytes());
        out.extend_from_slice(newline);
    }
    out.extend_from_slice(&metadata[end..]);
    out
}

/// `metadata` with every `Requires-Dist` that applies only under one of `extras` (`...; extra ==
/// "device-gfx942"`) made unconditional: the marker dropped where it is that comparison alone,
/// the comparison replaced by one that always holds where it is part of a larger marker. A
/// machine whose GPU needs a device package (AMD's multi-arch ROCm torch) then gets it from a
/// plain `pip install torch`.
///
/// ```text
/// Provides-Extra: device-gfx942
/// Requires-Dist: amd-torch-device-gfx942==2.10.0; extra == "device-gfx942"
/// ```
pub fn with_extras_required(metadata: &[u8], extras: &[String]) -> Vec<u8> {
    let text = String::from_utf8_lossy(metadata);
    let end = header_end(metadata);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let in_headers = at < end;
        at += line.len();
        let body = line.trim_end_matches(['\r', '\n']);
        let ending = &line[body.len()..];
        let is_requirement = body
            .get(..14)
            .is_some_and(|head| head.eq_ignore_ascii_case("requires-dist:"));
        let Some((requirement, marker)) = body
            .split_once(';')
            .filter(|_| in_headers && is_requirement)
        else {
            out.push_str(line);
            continue;
        };
        match required_marker(marker, extras) {
            Required::Always => out.push_str(requirement.trim_end()),
            Required::Within(rest) => {
                out.push_str(requirement);
                out.push(';');
                out.push_str(&rest);
            }
            Required::Untouched => out.push_str(body),
        }
        out.push_str(ending);
    }
    out.into_bytes()
}

/// A requirement's marker once its comparison to a required extra holds.
enum Required {
    /// The marker was that comparison: the requirement is unconditional.
    Always,
    /// The comparison was part of this larger marker, where it now always holds.
    Within(String),
    /// It names none of the extras.
    Untouched,
}

/// `marker` with its comparison to one of `extras` made to hold.
fn required_marker(marker: &str, extras: &[String]) -> Required {
    for extra in extras {
        for quote in ['"', '\''] {
            let comparison = format!("extra == {quote}{extra}{quote}");
            let compact: String = marker.split_whitespace().collect::<Vec<_>>().join(" ");
            if compact == comparison {
                return Required::Always;
            }
            if compact.contains(&comparison) {
                return Required::Within(format!(
                    " {}",
                    compact.replace(&comparison, "python_version >= \"0\"")
                ));
            }
        }
    }
    Required::Untouched
}

/// `metadata` with the value of its `Version` header (the first, among the headers only: the
/// description may quote one) replaced by `version`: `Version: 2.9.0+cpu` becomes
/// `Version: 2.9.0`. The spaces around the value and the line ending are kept; without a
/// `Version` header, `metadata` is returned as it is.
pub fn with_version(metadata: &[u8], version: &str) -> Vec<u8> {
    let end = header_end(metadata);
    let mut at = 0;
    while at < end {
        let line_end = metadata[at..end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(end, |i| at + i + 1);
        let line = &metadata[at..line_end];
        let is_version = line
            .iter()
            .position(|&b| b == b':')
            .filter(|&colon| line[..colon].eq_ignore_ascii_case(b"version"));
        if let Some(colon) = is_version {
            let value_start = at
                + colon
                + 1
                + line[colon + 1..]
                    .iter()
                    .take_while(|&&b| b == b' ' || b == b'\t')
                    .count();
            let ending = line.len() - line.trim_ascii_end().len();
            let value_end = (line_end - ending).max(value_start);
            let mut out = Vec::with_capacity(metadata.len() + version.len());
            out.extend_from_slice(&metadata[..value_start]);
            out.extend_from_slice(version.as_bytes());
            out.extend_from_slice(&metadata[value_end..]);
            return out;
        }
        at = line_end;
    }
    metadata.to_vec()
}

/// Where the header section ends: the start of the first empty line, else the end.
fn header_end(metadata: &[u8]) -> usize {
    let mut at = 0;
    while at < metadata.len() {
        let line_end = metadata[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(metadata.len(), |i| at + i + 1);
        let line = &metadata[at..line_end];
        if line == b"\n" || line == b"\r\n" {
            return at;
        }
        at = line_end;
    }
    metadata.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_go_after_the_headers_before_the_description() {
        let metadata = b"Metadata-Version: 2.1\nName: torch_scatter\nVersion: 2.1.2+pt210cu128\n\nScatter ops\n\nMore text\n";
        let out = with_requirements(metadata, &["torch==2.10.*".to_string()]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Metadata-Version: 2.1\nName: torch_scatter\nVersion: 2.1.2+pt210cu128\nRequires-Dist: torch==2.10.*\n\nScatter ops\n\nMore text\n"
        );
    }

    #[test]
    fn the_machines_device_extras_become_unconditional() {
        let metadata = b"Metadata-Version: 2.1\nName: torch\nProvides-Extra: device-gfx942\nProvides-Extra: device-gfx90a\nRequires-Dist: filelock\nRequires-Dist: amd-torch-device-gfx942==2.10.0; extra == \"device-gfx942\"\nRequires-Dist: amd-torch-device-gfx90a==2.10.0; extra == 'device-gfx90a'\nRequires-Dist: rocm-sdk-devel; extra == \"device-gfx942\" and platform_system == \"Linux\"\n\nRequires-Dist: in the description; extra == \"device-gfx942\"\n";
        let out = with_extras_required(metadata, &["device-gfx942".to_string()]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Metadata-Version: 2.1\nName: torch\nProvides-Extra: device-gfx942\nProvides-Extra: device-gfx90a\nRequires-Dist: filelock\nRequires-Dist: amd-torch-device-gfx942==2.10.0\nRequires-Dist: amd-torch-device-gfx90a==2.10.0; extra == 'device-gfx90a'\nRequires-Dist: rocm-sdk-devel; python_version >= \"0\" and platform_system == \"Linux\"\n\nRequires-Dist: in the description; extra == \"device-gfx942\"\n"
        );
    }

    #[test]
    fn headers_only_crlf_and_unterminated_files() {
        let out = with_requirements(b"Name: a\r\nVersion: 1\r\n", &["torch==2.9.*".into()]);
        assert_eq!(
            out,
            b"Name: a\r\nVersion: 1\r\nRequires-Dist: torch==2.9.*\r\n"
        );
        let out = with_requirements(b"Name: a\nVersion: 1", &["b".into(), "c".into()]);
        assert_eq!(
            out,
            b"Name: a\nVersion: 1\nRequires-Dist: b\nRequires-Dist: c\n"
        );
    }

    #[test]
    fn the_version_header_gets_the_new_version_and_nothing_else_changes() {
        let metadata = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+cpu\nRequires-Dist: filelock\n\nVersion: 2.9.0+cpu in the description\n";
        assert_eq!(
            String::from_utf8(with_version(metadata, "2.9.0")).unwrap(),
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\nRequires-Dist: filelock\n\nVersion: 2.9.0+cpu in the description\n"
        );
        // CRLF, the header's name in another case, trailing spaces, an unterminated file.
        assert_eq!(
            with_version(b"Name: a\r\nversion:  1.0+cu128  \r\nSummary: s\r\n", "1.0"),
            b"Name: a\r\nversion:  1.0  \r\nSummary: s\r\n"
        );
        assert_eq!(
            with_version(b"Name: a\nVersion: 1+x", "1"),
            b"Name: a\nVersion: 1"
        );
        assert_eq!(
            with_version(b"Name: a\nVersion:\n", "1"),
            b"Name: a\nVersion:1\n"
        );
    }

    #[test]
    fn metadata_without_a_version_header_is_unchanged() {
        let cases: [&[u8]; 4] = [
            b"Metadata-Version: 2.1\nName: a\n\nVersion: 1.0+cpu\n",
            b"Metadata-Version: 2.1\r\nName: a\r\n\r\nVersion: 1.0+cpu\r\n",
            // A folded line of another header is not a header.
            b"Name: a\nSummary: s\n Version: 1.0+cpu\n",
            b"",
        ];
        for metadata in cases {
            assert_eq!(with_version(metadata, "1.0"), metadata);
        }
    }
}
