//! A PEP 691 project page written key by key: the bytes `serde_json` writes for the wire types
//! of `json.rs` (the tests hold the two to the same output), in a fraction of the work.
//!
//! `serde_json` checks every byte of every string for a character to escape, one at a time, and
//! grows its buffer from 128 bytes by doubling. For a cold merged `/simple/torch/` that was
//! 1.7 of the 8.9 million instructions its request ran on the connection's thread (callgrind),
//! all of it after the pages were parsed, on the request's critical path. Here the buffer is
//! sized once, and a string is checked in one pass the compiler vectorizes and copied whole;
//! the rare one with a character to escape is escaped by `serde_json` itself.

use super::super::hashes::Hashes;
use super::{FileOut, MetaOut, MetadataOut, ProjectOut, YankedOut};

/// `page` as compact JSON, exactly as `serde_json::to_string` writes it.
pub(super) fn project(page: &ProjectOut<'_>) -> String {
    let mut out = String::with_capacity(capacity(page));
    out.push_str("{\"meta\":");
    push_meta(&mut out, &page.meta);
    out.push_str(",\"name\":");
    push_str(&mut out, page.name);
    if let Some(status) = &page.project_status {
        out.push_str(",\"project-status\":{\"status\":");
        push_str(&mut out, status.status);
        if let Some(reason) = status.reason {
            out.push_str(",\"reason\":");
            push_str(&mut out, reason);
        }
        out.push('}');
    }
    if !page.tracks.is_empty() {
        out.push_str(",\"tracks\":");
        push_list(&mut out, page.tracks);
    }
    if !page.alternate_locations.is_empty() {
        out.push_str(",\"alternate-locations\":");
        push_list(&mut out, page.alternate_locations);
    }
    out.push_str(",\"versions\":");
    push_list(&mut out, page.versions);
    out.push_str(",\"files\":[");
    for (at, file) in page.files.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        push_file(&mut out, file);
    }
    out.push_str("]}");
    out
}

/// A root page: `meta`, then each project's name.
pub(super) fn list<'a>(meta: &MetaOut<'_>, names: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("{\"meta\":");
    push_meta(&mut out, meta);
    out.push_str(",\"projects\":[");
    for (at, name) in names.enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        push_str(&mut out, name);
        out.push('}');
    }
    out.push_str("]}");
    out
}

/// `meta`, its members passed through as they came last.
fn push_meta(out: &mut String, meta: &MetaOut<'_>) {
    out.push_str("{\"api-version\":");
    push_str(out, meta.api_version);
    if let Some(serial) = meta.last_serial {
        out.push_str(",\"_last-serial\":");
        push_u64(out, serial);
    }
    for (key, value) in meta.extra {
        out.push(',');
        push_str(out, key);
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
}

fn push_file(out: &mut String, file: &FileOut<'_>) {
    out.push_str("{\"filename\":");
    push_str(out, file.filename);
    out.push_str(",\"url\":");
    push_str(out, &file.url);
    out.push_str(",\"hashes\":");
    push_hashes(out, file.hashes);
    if let Some(requires_python) = file.requires_python {
        out.push_str(",\"requires-python\":");
        push_str(out, requires_python);
    }
    match &file.core_metadata {
        None => {}
        Some(MetadataOut::Flag(flag)) => {
            out.push_str(",\"core-metadata\":");
            push_bool(out, *flag);
        }
        Some(MetadataOut::Hashes(hashes)) => {
            out.push_str(",\"core-metadata\":");
            push_hashes(out, hashes);
        }
    }
    if let Some(signed) = file.gpg_sig {
        out.push_str(",\"gpg-sig\":");
        push_bool(out, signed);
    }
    out.push_str(",\"yanked\":");
    match &file.yanked {
        YankedOut::Flag(flag) => push_bool(out, *flag),
        YankedOut::Reason(reason) => push_str(out, reason),
    }
    if let Some(size) = file.size {
        out.push_str(",\"size\":");
        push_u64(out, size);
    }
    if let Some(time) = file.upload_time {
        out.push_str(",\"upload-time\":");
        push_str(out, time);
    }
    if let Some(provenance) = file.provenance {
        out.push_str(",\"provenance\":");
        push_str(out, provenance);
    }
    out.push('}');
}

fn push_hashes(out: &mut String, hashes: &Hashes) {
    out.push('{');
    for (at, (name, digest)) in hashes.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        push_str(out, name);
        out.push(':');
        push_str(out, digest);
    }
    out.push('}');
}

fn push_list(out: &mut String, items: &[String]) {
    out.push('[');
    for (at, item) in items.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        push_str(out, item);
    }
    out.push(']');
}

/// `text` as a JSON string. `serde_json` escapes `"`, `\` and the control characters below
/// U+0020, nothing else; text without them is copied as it is.
fn push_str(out: &mut String, text: &str) {
    if needs_no_escape(text.as_bytes()) {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        // Serializing a string cannot fail.
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    }
}

/// Whether no byte needs escaping: a fold without early exit, which the compiler checks 16 or
/// 32 bytes at a time (a branch per byte was what made `serde_json`'s check slow).
fn needs_no_escape(bytes: &[u8]) -> bool {
    let escaped = bytes.iter().fold(0u8, |escaped, &byte| {
        escaped | u8::from(byte < 0x20) | u8::from(byte == b'"') | u8::from(byte == b'\\')
    });
    escaped == 0
}

fn push_bool(out: &mut String, value: bool) {
    out.push_str(if value { "true" } else { "false" });
}

fn push_u64(out: &mut String, value: u64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = write!(out, "{value}");
}

/// The page's length when nothing needs escaping, give or take a few bytes per file: the
/// keys, quotes and separators each file and hash takes, and its strings.
fn capacity(page: &ProjectOut<'_>) -> usize {
    let strings = |items: &[String]| items.iter().map(|item| item.len() + 3).sum::<usize>();
    let hashes = |hashes: &Hashes| {
        hashes
            .iter()
            .map(|(name, digest)| name.len() + digest.len() + 6)
            .sum::<usize>()
    };
    let head = 128
        + page.name.len()
        + page
            .meta
            .extra
            .iter()
            .map(|(key, value)| key.len() + value.len() + 4)
            .sum::<usize>()
        + strings(page.tracks)
        + strings(page.alternate_locations)
        + strings(page.versions);
    let files: usize = page
        .files
        .iter()
        .map(|file| {
            let optional = [file.requires_python, file.upload_time, file.provenance]
                .iter()
                .map(|text| text.map_or(0, |text| text.len() + 24))
                .sum::<usize>();
            let metadata = match &file.core_metadata {
                Some(MetadataOut::Hashes(metadata)) => hashes(metadata) + 20,
                _ => 24,
            };
            let yanked = match &file.yanked {
                YankedOut::Reason(reason) => reason.len(),
                YankedOut::Flag(_) => 0,
            };
            64 + file.filename.len()
                + file.url.len()
                + hashes(file.hashes)
                + optional
                + metadata
                + yanked
                + if file.size.is_some() { 32 } else { 0 }
        })
        .sum();
    head + files
}

#[cfg(test)]
mod tests {
    use super::super::{FileOut, MetaOut, MetadataOut, ProjectOut, StatusOut, YankedOut};
    use super::*;
    use proptest::prelude::*;
    use std::borrow::Cow;

    /// Text with what JSON must escape in it more often than chance would put it there.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9.+-]{0,24}",
            any::<String>(),
            "[\"\\\\\u{0}-\u{1f}\u{7f}é🐍a]{0,8}",
        ]
    }

    struct Owned {
        meta: (String, Option<u64>),
        name: String,
        status: Option<(String, Option<String>)>,
        tracks: Vec<String>,
        alternate: Vec<String>,
        versions: Vec<String>,
        files: Vec<OwnedFile>,
    }

    #[derive(Debug)]
    struct OwnedFile {
        filename: String,
        url: String,
        hashes: Hashes,
        requires_python: Option<String>,
        /// Absent, present without hashes, or with them.
        #[allow(clippy::option_option)]
        metadata: Option<Option<Hashes>>,
        gpg_sig: Option<bool>,
        yanked: Result<bool, String>,
        size: Option<u64>,
        upload_time: Option<String>,
        provenance: Option<String>,
    }

    impl std::fmt::Debug for Owned {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Owned")
                .field("name", &self.name)
                .field("files", &self.files)
                .finish_non_exhaustive()
        }
    }

    fn hashes() -> impl Strategy<Value = Hashes> {
        proptest::collection::vec((text(), text()), 0..3)
            .prop_map(|pairs| pairs.into_iter().collect())
    }

    fn file() -> impl Strategy<Value = OwnedFile> {
        (
            (text(), text(), hashes(), proptest::option::of(text())),
            (
                proptest::option::of(proptest::option::of(hashes())),
                proptest::option::of(any::<bool>()),
                prop_oneof![any::<bool>().prop_map(Ok), text().prop_map(Err)],
            ),
            (
                proptest::option::of(any::<u64>()),
                proptest::option::of(text()),
                proptest::option::of(text()),
            ),
        )
            .prop_map(
                |(
                    (filename, url, hashes, requires_python),
                    (metadata, gpg_sig, yanked),
                    (size, upload_time, provenance),
                )| OwnedFile {
                    filename,
                    url,
                    hashes,
                    requires_python,
                    metadata,
                    gpg_sig,
                    yanked,
                    size,
                    upload_time,
                    provenance,
                },
            )
    }

    fn page() -> impl Strategy<Value = Owned> {
        let list = || proptest::collection::vec(text(), 0..3);
        (
            (text(), proptest::option::of(any::<u64>()), text()),
            proptest::option::of((text(), proptest::option::of(text()))),
            (list(), list(), list()),
            proptest::collection::vec(file(), 0..6),
        )
            .prop_map(
                |((api, serial, name), status, (tracks, alternate, versions), files)| Owned {
                    meta: (api, serial),
                    name,
                    status,
                    tracks,
                    alternate,
                    versions,
                    files,
                },
            )
    }

    fn wire(page: &Owned) -> ProjectOut<'_> {
        ProjectOut {
            meta: MetaOut {
                api_version: &page.meta.0,
                last_serial: page.meta.1,
                extra: &[],
            },
            name: &page.name,
            project_status: page.status.as_ref().map(|(status, reason)| StatusOut {
                status,
                reason: reason.as_deref(),
            }),
            tracks: &page.tracks,
            alternate_locations: &page.alternate,
            versions: &page.versions,
            files: page
                .files
                .iter()
                .map(|file| FileOut {
                    filename: &file.filename,
                    url: Cow::Borrowed(&file.url),
                    hashes: &file.hashes,
                    requires_python: file.requires_python.as_deref(),
                    core_metadata: file.metadata.as_ref().map(|metadata| match metadata {
                        None => MetadataOut::Flag(true),
                        Some(hashes) => MetadataOut::Hashes(hashes),
                    }),
                    gpg_sig: file.gpg_sig,
                    yanked: match &file.yanked {
                        Ok(flag) => YankedOut::Flag(*flag),
                        Err(reason) => YankedOut::Reason(reason),
                    },
                    size: file.size,
                    upload_time: file.upload_time.as_deref(),
                    provenance: file.provenance.as_deref(),
                })
                .collect(),
        }
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(page in page()) {
            let wire = wire(&page);
            prop_assert_eq!(project(&wire), serde_json::to_string(&wire).unwrap());
        }
    }

    #[test]
    fn the_buffer_is_sized_once_for_a_plain_page() {
        let page = Owned {
            meta: ("1.1".to_string(), Some(7)),
            name: "torch".to_string(),
            status: None,
            tracks: Vec::new(),
            alternate: Vec::new(),
            versions: vec!["2.9.0".to_string()],
            files: (0..50)
                .map(|n| OwnedFile {
                    filename: format!("torch-2.9.0+cu130-cp3{n}-cp3{n}-manylinux_2_28_x86_64.whl"),
                    url: format!(
                        "/files/torch/torch-2.9.0%2Bcu130-cp3{n}-cp3{n}-manylinux_2_28_x86_64.whl"
                    ),
                    hashes: Hashes::from([("sha256".to_string(), "ab".repeat(32))]),
                    requires_python: Some(">=3.10".to_string()),
                    metadata: Some(Some(Hashes::from([(
                        "sha256".to_string(),
                        "cd".repeat(32),
                    )]))),
                    gpg_sig: None,
                    yanked: Ok(false),
                    size: None,
                    upload_time: None,
                    provenance: None,
                })
                .collect(),
        };
        let wire = wire(&page);
        let written = project(&wire);
        assert!(
            written.len() <= capacity(&wire),
            "{} > {}",
            written.len(),
            capacity(&wire)
        );
        assert!(capacity(&wire) < written.len() + written.len() / 8);
    }
}
