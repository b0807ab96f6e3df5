//! A derived wheel's `RECORD` (PEP 376, PEP 427): the row of its rewritten `METADATA` re-hashed,
//! and the rows of a renamed directory moved, every other row kept byte for byte, so an
//! installer's check of the installed files passes.
//!
//! Input, as wheels carry it (CSV: path, `sha256=` urlsafe base64 unpadded, size; RECORD's own
//! row with neither):
//!
//! ```text
//! torch/__init__.py,sha256=1b2Jq0m4S0w9kE1Zb8lQmZ2h2wzvXoN0T7Yq9xq3k5c,112233
//! torch-2.9.0+cpu.dist-info/METADATA,sha256=Vq3vQ2l6g3b8mJmQZ1R2n1xJm8v0o8bKcL7Pz4dD0mE,29871
//! torch-2.9.0+cpu.dist-info/RECORD,,
//! ```

use std::borrow::Cow;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// `record` with the row of `name` naming `content`'s hash and size (PEP 376/427: urlsafe
/// base64 of the sha256, unpadded). RECORD is CSV: a row's path may be quoted
/// (`"pkg-1.0.dist-info/METADATA",sha256=...,10`, as Python's `csv` module writes a path with a
/// comma), so rows are compared by their first field as CSV reads it. Refused when several rows
/// name `name`, or a row is not CSV: a RECORD left with the upstream's hash would make
/// the installed wheel fail its own check.
pub fn with_record_line(record: &[u8], name: &str, content: &[u8]) -> Result<Vec<u8>, String> {
    let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(content));
    let line = format!("{},sha256={hash},{}", csv_field(name), content.len());
    let text = std::str::from_utf8(record).map_err(|_| "is not UTF-8".to_string())?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut rows = 0;
    for piece in text.split_inclusive('\n') {
        let body = piece.trim_end_matches(['\r', '\n']);
        let (first, _) = split_first_csv_field(body)
            .ok_or_else(|| format!("has a row that is not CSV: `{}`", body.escape_default()))?;
        if first == name {
            rows += 1;
            out.push_str(&line);
            out.push_str(&piece[body.len()..]);
        } else {
            out.push_str(piece);
        }
    }
    // No row: nothing to re-hash (PEP 376 lists every file, but an installer checks only the
    // rows there are).
    match rows {
        0 | 1 => Ok(out.into_bytes()),
        _ => Err(format!("has {rows} rows for `{name}`")),
    }
}

/// `record` with every row whose path lies in one of `moves`' directories (`(from, to)`, each
/// ending in `/`: `torch-2.9.0+cpu.dist-info/`, `torch-2.9.0.dist-info/`) naming it in the
/// new one; the rest of such a row (hash, size) and every other row kept as they are. Refused
/// when a row is not CSV, as [`with_record_line`].
pub fn with_paths_moved(record: &[u8], moves: &[(String, String)]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(record).map_err(|_| "is not UTF-8".to_string())?;
    let mut out = String::with_capacity(text.len() + 64);
    for piece in text.split_inclusive('\n') {
        let body = piece.trim_end_matches(['\r', '\n']);
        let (path, rest) = split_first_csv_field(body)
            .ok_or_else(|| format!("has a row that is not CSV: `{}`", body.escape_default()))?;
        let new_path = moves.iter().find_map(|(from, to)| {
            path.strip_prefix(from.as_str())
                .map(|inside| format!("{to}{inside}"))
        });
        match new_path {
            Some(new_path) => {
                out.push_str(&csv_field(&new_path));
                out.push_str(rest);
                out.push_str(&piece[body.len()..]);
            }
            None => out.push_str(piece),
        }
    }
    Ok(out.into_bytes())
}

/// The first field of a CSV row (RFC 4180: a field in quotes holds commas, and `""` for a
/// quote) and what follows it (from its comma on); `None` for a quoted field not closed, or
/// followed by anything but a comma.
fn split_first_csv_field(row: &str) -> Option<(Cow<'_, str>, &str)> {
    let Some(quoted) = row.strip_prefix('"') else {
        let end = row.find(',').unwrap_or(row.len());
        return Some((row[..end].into(), &row[end..]));
    };
    let mut field = String::new();
    let mut chars = quoted.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '"' {
            field.push(c);
            continue;
        }
        match chars.peek() {
            Some((_, '"')) => {
                field.push('"');
                chars.next();
            }
            None | Some((_, ',')) => return Some((field.into(), &quoted[at + 1..])),
            Some(_) => return None,
        }
    }
    None
}

/// `value` as a CSV field, quoted only where it must be (as Python's `csv` module writes).
fn csv_field(value: &str) -> Cow<'_, str> {
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\"")).into()
    } else {
        value.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_line_of_metadata_is_rehashed() {
        let record = b"pkg/__init__.py,sha256=abc,3\r\npkg-1.0.dist-info/METADATA,sha256=old,10\r\npkg-1.0.dist-info/RECORD,,\r\n";
        let out = with_record_line(record, "pkg-1.0.dist-info/METADATA", b"new").unwrap();
        let text = String::from_utf8(out).unwrap();
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b"new"));
        assert_eq!(
            text,
            format!(
                "pkg/__init__.py,sha256=abc,3\r\npkg-1.0.dist-info/METADATA,sha256={hash},3\r\npkg-1.0.dist-info/RECORD,,\r\n"
            )
        );
    }

    #[test]
    fn a_quoted_record_row_is_rehashed_and_an_ambiguous_record_refused() {
        let name = "pkg-1.0.dist-info/METADATA";
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b"new"));
        // As Python's `csv` module writes with `quoting=csv.QUOTE_ALL`.
        let quoted = b"\"pkg/__init__.py\",\"sha256=abc\",\"3\"\n\"pkg-1.0.dist-info/METADATA\",\"sha256=old\",\"10\"\n";
        let out = String::from_utf8(with_record_line(quoted, name, b"new").unwrap()).unwrap();
        assert_eq!(
            out,
            format!("\"pkg/__init__.py\",\"sha256=abc\",\"3\"\n{name},sha256={hash},3\n")
        );
        let comma = "pkg-1.0.dist-info/ME,TA";
        let out = String::from_utf8(
            with_record_line(b"\"pkg-1.0.dist-info/ME,TA\",sha256=old,1\n", comma, b"new").unwrap(),
        )
        .unwrap();
        assert_eq!(out, format!("\"{comma}\",sha256={hash},3\n"));
        let twice = b"pkg-1.0.dist-info/METADATA,,\n\"pkg-1.0.dist-info/METADATA\",,\n";
        assert!(
            with_record_line(twice, name, b"new")
                .unwrap_err()
                .contains("2 rows")
        );
        let unclosed = b"\"pkg-1.0.dist-info/METADATA,sha256=old,10\n";
        assert!(
            with_record_line(unclosed, name, b"new")
                .unwrap_err()
                .contains("not CSV")
        );
    }

    #[test]
    fn rows_under_a_moved_directory_name_it_and_the_others_are_kept() {
        let moves = [
            (
                "pkg-1.0+cpu.dist-info/".to_string(),
                "pkg-1.0.dist-info/".to_string(),
            ),
            ("pkg-1.0+cpu.data/".to_string(), "pkg-1.0.data/".to_string()),
        ];
        let record = b"pkg/__init__.py,sha256=abc,3\r\npkg-1.0+cpu.data/scripts/run,sha256=def,4\r\n\"pkg-1.0+cpu.dist-info/METADATA\",\"sha256=old\",\"10\"\r\n\"pkg-1.0+cpu.dist-info/a,b\",,\r\npkg-1.0+cpu.dist-info/RECORD,,\r\nother-1.0+cpu.dist-info/x,,\r\n";
        let out = String::from_utf8(with_paths_moved(record, &moves).unwrap()).unwrap();
        assert_eq!(
            out,
            "pkg/__init__.py,sha256=abc,3\r\npkg-1.0.data/scripts/run,sha256=def,4\r\npkg-1.0.dist-info/METADATA,\"sha256=old\",\"10\"\r\n\"pkg-1.0.dist-info/a,b\",,\r\npkg-1.0.dist-info/RECORD,,\r\nother-1.0+cpu.dist-info/x,,\r\n"
        );
        assert!(
            with_paths_moved(b"\"pkg-1.0+cpu.dist-info/RECORD,,\n", &moves)
                .unwrap_err()
                .contains("not CSV")
        );
    }
}
