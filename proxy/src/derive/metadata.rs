//! Core metadata with requirements added: the text a derived wheel's `METADATA` and its served
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
}
