//! A wheel's version renamed (`torch 2.9.0+cpu` served as `2.9.0`). `METADATA`'s `Version` is
//! not the only place the version lives: the `.dist-info` directory and a `.data` directory
//! carry it in their names (`torch-2.9.0+cpu.dist-info/`), and installers read it there (uv
//! takes an installed distribution's version from its `.dist-info` name, and installs the
//! `.data` directory named by the `.dist-info`'s prefix). So this change, unlike the others,
//! moves members: every member of those directories gets the new name, and so does its
//! `RECORD` row. Apart from `mod.rs` because only this change moves members, and how it reads
//! them (many, not two) is its own.

use std::collections::{BTreeMap, BTreeSet};

use super::wheel::{self, CentralEntry, EndRecord, PlanError, Replacement};
use super::{DeriveError, MAX_LOCAL_HEADER, MAX_RECORD, RangeReader};

/// The most the members a rename moves may inflate to together (`METADATA` and `RECORD` aside,
/// read under their own limits): each is rewritten stored, and held with the plan.
pub const MAX_MOVED: u64 = 32 * 1024 * 1024;
/// The most one read ahead asks for: moved members lying one after another are read in one
/// request, not one each.
const READ_AHEAD: u64 = 8 * 1024 * 1024;

/// The top-level directories a version rename moves.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Moves {
    /// Each `(from, to)`, ending in `/`: `torch-2.9.0+cpu.dist-info/`, `torch-2.9.0.dist-info/`.
    dirs: Vec<(String, String)>,
}

impl Moves {
    /// The moves that give the wheel whose `METADATA` is `metadata_name`
    /// (`torch-2.9.0+cpu.dist-info/METADATA`) the version `version`: its `.dist-info`
    /// directory, and the `.data` directory of the same prefix when it has one; none when the
    /// names carry `version` already. Refused for a version no directory name can carry,
    /// another top-level `.data` directory (which one an installer reads after the rename is not
    /// certain), a directory of a new name there already, or a moved member whose name is not
    /// UTF-8 or is there twice.
    pub fn of(
        entries: &[CentralEntry],
        metadata_name: &str,
        version: &str,
    ) -> Result<Moves, PlanError> {
        // PEP 440's normalized form (a local label's separators are dots), and `_` (PEP 427's
        // escape): a `-` or `/` would change what the directory's name says.
        if version.is_empty()
            || !version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '!' | '+' | '_'))
        {
            return Err(format!(
                "`{version}` cannot be a version in a directory's name"
            ));
        }
        let (dist_info, _) = metadata_name
            .split_once('/')
            .ok_or_else(|| format!("`{metadata_name}` is not in a directory"))?;
        let prefix = dist_info
            .strip_suffix(".dist-info")
            .ok_or_else(|| format!("`{dist_info}` is not a `.dist-info` directory"))?;
        let (project, _) = prefix
            .rsplit_once('-')
            .filter(|(project, old)| !project.is_empty() && !old.is_empty())
            .ok_or_else(|| format!("`{dist_info}` is not named `<name>-<version>.dist-info`"))?;
        let new_prefix = format!("{project}-{version}");
        if new_prefix == prefix {
            return Ok(Moves::default());
        }
        let top_level: BTreeSet<&str> = entries
            .iter()
            .filter_map(|e| e.name.split_once('/').map(|(dir, _)| dir))
            .collect();
        let mut dirs = vec![(
            format!("{prefix}.dist-info/"),
            format!("{new_prefix}.dist-info/"),
        )];
        // Named exactly, as installers match it (pip: `path.split("/")[0].endswith(".data")`).
        let data_dirs = top_level
            .iter()
            .filter(|dir| dir.strip_suffix(".data").is_some());
        for dir in data_dirs {
            if *dir != format!("{prefix}.data") {
                return Err(format!(
                    "a .data directory `{dir}/` not named after `{dist_info}/` (which one an installer reads once it is renamed is not certain)"
                ));
            }
            dirs.push((format!("{prefix}.data/"), format!("{new_prefix}.data/")));
        }
        for (_, to) in &dirs {
            if top_level.contains(to.trim_end_matches('/')) {
                return Err(format!(
                    "a directory `{to}` there already, the rename's target"
                ));
            }
        }
        let moves = Moves { dirs };
        let mut seen = BTreeSet::new();
        for entry in entries.iter().filter(|e| moves.moved(&e.name).is_some()) {
            if entry.raw_name() != entry.name.as_bytes() {
                return Err(format!(
                    "`{}` has a name that is not UTF-8, in a directory to rename",
                    entry.name
                ));
            }
            if !seen.insert(entry.name.as_str()) {
                return Err(format!(
                    "two members named `{}`, in a directory to rename",
                    entry.name
                ));
            }
        }
        Ok(moves)
    }

    /// Whether nothing moves.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Each directory moved, `(from, to)`, ending in `/`.
    pub fn dirs(&self) -> &[(String, String)] {
        &self.dirs
    }

    /// The name `name` has once the directories are moved.
    pub fn name_after(&self, name: &str) -> String {
        self.moved(name).unwrap_or_else(|| name.to_string())
    }

    /// The new name of `name`, when it lies in a moved directory.
    fn moved(&self, name: &str) -> Option<String> {
        self.dirs.iter().find_map(|(from, to)| {
            name.strip_prefix(from.as_str())
                .map(|inside| format!("{to}{inside}"))
        })
    }
}

/// The members `moves` moves, but those in `rewritten` (`METADATA` and `RECORD`, which the
/// caller reads and rewrites itself): each with its content, under its new name. Refused before
/// anything is read past [`MAX_MOVED`] together or [`MAX_RECORD`] each. The members lying one
/// after another are read ahead together, `rewritten` too, so they cost a request or two, not one
/// each (the `.dist-info` members usually lie in the tail read first, and cost none).
pub(super) async fn moved_members(
    reader: &mut RangeReader<'_>,
    (entries, end): (&[CentralEntry], &EndRecord),
    moves: &Moves,
    rewritten: &[&str],
) -> Result<BTreeMap<String, Replacement>, DeriveError> {
    let members: Vec<&CentralEntry> = entries
        .iter()
        .filter(|e| moves.moved(&e.name).is_some())
        .collect();
    let total: u64 = members
        .iter()
        .filter(|e| !rewritten.contains(&e.name.as_str()))
        .map(|e| e.size())
        .sum();
    if total > MAX_MOVED {
        return Err(DeriveError::Zip {
            file: reader.file.to_string(),
            problem: format!(
                "the members to rename are {total} bytes, over the limit of {MAX_MOVED} bytes"
            ),
        });
    }
    read_ahead(reader, (entries, end), &members).await?;
    let mut replaced = BTreeMap::new();
    for entry in members {
        if rewritten.contains(&entry.name.as_str()) {
            continue;
        }
        let content = reader.member(entries, end, &entry.name, MAX_RECORD).await?;
        let replacement = Replacement {
            name: moves.name_after(&entry.name),
            content,
        };
        replaced.insert(entry.name.clone(), replacement);
    }
    Ok(replaced)
}

/// Reads the runs of `moved` members that lie one after another, and are not held already, in
/// one request each (at most [`READ_AHEAD`] bytes, and [`MAX_MOVED`] in all): a member alone, or
/// one followed by more than its own read would take (bytes no member owns), is left to its own
/// read.
async fn read_ahead(
    reader: &mut RangeReader<'_>,
    (entries, end): (&[CentralEntry], &EndRecord),
    moved: &[&CentralEntry],
) -> Result<(), DeriveError> {
    let mut extents: Vec<(u64, u64)> = moved
        .iter()
        .map(|e| (e, e.local_offset, wheel::member_end(entries, e, end)))
        .filter(|&(e, from, to)| {
            to > from
                && to - from <= MAX_LOCAL_HEADER + e.compressed_size()
                && !reader.holds(from, to - from)
        })
        .map(|(_, from, to)| (from, to))
        .collect();
    extents.sort_unstable();
    // Each run: where it starts and ends, and how many members it has.
    let mut runs: Vec<(u64, u64, usize)> = Vec::new();
    for (from, to) in extents {
        match runs.last_mut() {
            Some((start, stop, members)) if *stop == from && to - *start <= READ_AHEAD => {
                *stop = to;
                *members += 1;
            }
            _ => runs.push((from, to, 1)),
        }
    }
    let mut budget = MAX_MOVED;
    for (start, stop, members) in runs {
        if members > 1 && stop - start <= budget {
            budget -= stop - start;
            reader.read_ahead(start, stop - start).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use base64::Engine as _;
    use sha2::{Digest, Sha256};

    use super::super::tests::{derived_with, zipped};
    use super::super::{Change, Derivation};
    use super::*;
    use crate::cache::splice::{Segment, Splicer};

    /// A wheel of `members` (name, content, deflated or stored), written by hand: the zip crate
    /// here is built without deflate.
    fn handmade(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let (mut out, mut central) = (Vec::new(), Vec::new());
        for (name, content, deflate) in members {
            let (method, data) = if *deflate {
                let mut encoder =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                encoder.write_all(content).unwrap();
                (8u16, encoder.finish().unwrap())
            } else {
                (0u16, content.to_vec())
            };
            let offset = u32::try_from(out.len()).unwrap();
            let mut fields = Vec::new();
            fields.extend_from_slice(&method.to_le_bytes());
            fields.extend_from_slice(&[0, 0, 0x21, 0]); // time, date (1980-01-01)
            fields.extend_from_slice(&crc32fast::hash(content).to_le_bytes());
            fields.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
            fields.extend_from_slice(&u32::try_from(content.len()).unwrap().to_le_bytes());
            fields.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
            out.extend_from_slice(&[0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0]);
            out.extend_from_slice(&fields);
            out.extend_from_slice(&[0, 0]); // extra field
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&data);
            central.extend_from_slice(&[0x50, 0x4b, 0x01, 0x02, 20, 3, 20, 0, 0, 0]);
            central.extend_from_slice(&fields);
            // Extra, comment, disk, internal attributes; then external ones (0o644 on Unix).
            central.extend_from_slice(&[0; 8]);
            central.extend_from_slice(&(0o100_644u32 << 16).to_le_bytes());
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let count = u16::try_from(members.len()).unwrap().to_le_bytes();
        let directory_offset = u32::try_from(out.len()).unwrap();
        out.extend_from_slice(&central);
        out.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0]);
        out.extend_from_slice(&count);
        out.extend_from_slice(&count);
        out.extend_from_slice(&u32::try_from(central.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&directory_offset.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// The derived wheel's bytes: `wheel` fed through the derivation's splice in small chunks.
    fn spliced(wheel: &[u8], derivation: &Derivation) -> Vec<u8> {
        let splice = derivation.spec.splice.as_ref().expect("a derived wheel");
        let mut splicer = Splicer::new(splice.segments.clone());
        let mut out = Vec::new();
        for (i, piece) in wheel.chunks(97).enumerate() {
            splicer.feed(u64::try_from(i * 97).unwrap(), piece, &mut out);
        }
        splicer.finish(&mut out);
        assert_eq!(u64::try_from(out.len()).unwrap(), splice.len);
        out
    }

    fn read(archive: &mut zip::ZipArchive<std::io::Cursor<Vec<u8>>>, name: &str) -> Vec<u8> {
        let mut content = Vec::new();
        archive
            .by_name(name)
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .read_to_end(&mut content)
            .unwrap();
        content
    }

    fn record_hash(content: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(content))
    }

    const MODULE: &[u8] = b"VALUE = 1\n";
    const METADATA: &[u8] =
        b"Metadata-Version: 2.1\r\nName: xpkg\r\nVersion: 1.0+cpu\r\n\r\nVersion: 1.0+cpu\r\n";
    const WHEEL: &[u8] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
    const ENTRY_POINTS: &[u8] = b"[console_scripts]\nxpkg = xpkg:main\n";
    const RECORD: &[u8] = b"xpkg/__init__.py,sha256=mod,10\n\
        xpkg-1.0+cpu.data/scripts/xpkg-tool,sha256=tool,13\n\
        xpkg-1.0+cpu.dist-info/METADATA,sha256=old,60\n\
        xpkg-1.0+cpu.dist-info/WHEEL,sha256=wheel,57\n\
        xpkg-1.0+cpu.dist-info/entry_points.txt,sha256=entry,35\n\
        xpkg-1.0+cpu.dist-info/RECORD,,\n";

    /// `xpkg 1.0+cpu`: a module, a script in its `.data` directory, and its `.dist-info` with
    /// a directory entry, some members deflated.
    fn cpu_wheel() -> Vec<u8> {
        handmade(&[
            ("xpkg/__init__.py", MODULE, false),
            (
                "xpkg-1.0+cpu.data/scripts/xpkg-tool",
                b"#!python\nrun\n",
                true,
            ),
            ("xpkg-1.0+cpu.dist-info/", b"", false),
            ("xpkg-1.0+cpu.dist-info/METADATA", METADATA, true),
            ("xpkg-1.0+cpu.dist-info/WHEEL", WHEEL, false),
            (
                "xpkg-1.0+cpu.dist-info/entry_points.txt",
                ENTRY_POINTS,
                true,
            ),
            ("xpkg-1.0+cpu.dist-info/RECORD", RECORD, true),
        ])
    }

    #[tokio::test]
    async fn a_wheel_derived_with_a_plain_version_names_it_everywhere() {
        let wheel = cpu_wheel();
        let change = Change::PlainVersion("1.0".to_string());
        let derivation = derived_with(&wheel, &change).await.unwrap();
        assert!(derivation.changed);
        let bytes = spliced(&wheel, &derivation);
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.clone())).unwrap();
        let mut names: Vec<String> = archive
            .file_names()
            .map(|name| name.unwrap().into_owned())
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "xpkg-1.0.data/scripts/xpkg-tool",
                "xpkg-1.0.dist-info/",
                "xpkg-1.0.dist-info/METADATA",
                "xpkg-1.0.dist-info/RECORD",
                "xpkg-1.0.dist-info/WHEEL",
                "xpkg-1.0.dist-info/entry_points.txt",
                "xpkg/__init__.py",
            ]
        );
        let metadata = read(&mut archive, "xpkg-1.0.dist-info/METADATA");
        assert_eq!(
            metadata,
            b"Metadata-Version: 2.1\r\nName: xpkg\r\nVersion: 1.0\r\n\r\nVersion: 1.0+cpu\r\n"
        );
        // The served `.metadata` is the wheel's own, byte for byte.
        assert_eq!(derivation.metadata, metadata);
        let record = String::from_utf8(read(&mut archive, "xpkg-1.0.dist-info/RECORD")).unwrap();
        assert_eq!(
            record,
            format!(
                "xpkg/__init__.py,sha256=mod,10\n\
                 xpkg-1.0.data/scripts/xpkg-tool,sha256=tool,13\n\
                 xpkg-1.0.dist-info/METADATA,sha256={},{}\n\
                 xpkg-1.0.dist-info/WHEEL,sha256=wheel,57\n\
                 xpkg-1.0.dist-info/entry_points.txt,sha256=entry,35\n\
                 xpkg-1.0.dist-info/RECORD,,\n",
                record_hash(&metadata),
                metadata.len()
            )
        );
        assert_eq!(read(&mut archive, "xpkg/__init__.py"), MODULE);
        assert_eq!(read(&mut archive, "xpkg-1.0.dist-info/WHEEL"), WHEEL);
        assert_eq!(
            read(&mut archive, "xpkg-1.0.dist-info/entry_points.txt"),
            ENTRY_POINTS
        );
        assert_eq!(
            read(&mut archive, "xpkg-1.0.data/scripts/xpkg-tool"),
            b"#!python\nrun\n"
        );
        assert!(archive.by_name("xpkg-1.0.dist-info/").unwrap().is_dir());
        // Unix permissions kept (the central record's attributes).
        assert_eq!(
            archive
                .by_name("xpkg-1.0.data/scripts/xpkg-tool")
                .unwrap()
                .unix_mode(),
            Some(0o100_644)
        );
        // The module's member copied as it lies upstream: the file starts with it.
        let module_member = 30 + "xpkg/__init__.py".len() + MODULE.len();
        assert_eq!(bytes[..module_member], wheel[..module_member]);
        assert!(matches!(
            derivation.spec.splice.as_ref().unwrap().segments.first(),
            Some(Segment::Copy(range)) if range.start == 0
        ));
        // The old version is gone from every name.
        assert!(!bytes.windows(13).any(|w| w == b"1.0+cpu.dist-"));
        assert!(!bytes.windows(12).any(|w| w == b"1.0+cpu.data"));

        let again = derived_with(&wheel, &change).await.unwrap();
        assert_eq!(again.spec, derivation.spec);
        assert_eq!(spliced(&wheel, &again), bytes);
    }

    #[tokio::test]
    async fn a_wheel_of_the_plain_version_already_is_not_changed() {
        let wheel = zipped(&[
            ("xpkg/__init__.py", MODULE),
            (
                "xpkg-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\n\n",
            ),
            ("xpkg-1.0.dist-info/RECORD", b"xpkg/__init__.py,,\n"),
        ]);
        let derivation = derived_with(&wheel, &Change::PlainVersion("1.0".to_string()))
            .await
            .unwrap();
        assert!(!derivation.changed);
        assert!(derivation.spec.splice.is_none());
    }

    #[tokio::test]
    async fn what_a_rename_cannot_name_faithfully_is_refused_with_its_reason() {
        let metadata: &[u8] = b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0+cpu\n\n";
        let cases: [(Vec<u8>, &str, &str); 5] = [
            (
                zipped(&[
                    ("xpkg-1.0+cpu.dist-info/METADATA", metadata),
                    ("other-1.0+cpu.dist-info/METADATA", metadata),
                ]),
                "1.0",
                "two top-level `*.dist-info/METADATA` members",
            ),
            (
                zipped(&[
                    ("xpkg-1.0+cpu.dist-info/METADATA", metadata),
                    ("other-1.0+cpu.data/scripts/x", b"x"),
                ]),
                "1.0",
                "a .data directory `other-1.0+cpu.data/`",
            ),
            (
                zipped(&[
                    ("xpkg-1.0+cpu.dist-info/METADATA", metadata),
                    ("xpkg-1.0.dist-info/LICENSE", b"MIT"),
                ]),
                "1.0",
                "a directory `xpkg-1.0.dist-info/` there already",
            ),
            (
                zipped(&[("xpkg-1.0+cpu.dist-info/METADATA", metadata)]),
                "1.0/../evil",
                "cannot be a version in a directory's name",
            ),
            (
                zipped(&[("xpkg.dist-info/METADATA", metadata)]),
                "1.0",
                "is not named `<name>-<version>.dist-info`",
            ),
        ];
        for (wheel, version, expected) in cases {
            let change = Change::PlainVersion(version.to_string());
            let err = derived_with(&wheel, &change).await.unwrap_err();
            assert!(err.is_refusal(), "{err}");
            let message = err.to_string();
            assert!(message.contains(expected), "{message}");
        }
    }

    #[tokio::test]
    async fn members_to_rename_past_their_limit_are_refused_before_they_are_read() {
        // Each under the limit of one member, together over theirs.
        let large = vec![b'x'; usize::try_from(MAX_MOVED).unwrap() / 3 + 1];
        let wheel = zipped(&[
            (
                "xpkg-1.0+cpu.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0+cpu\n\n",
            ),
            ("xpkg-1.0+cpu.data/data/a", &large),
            ("xpkg-1.0+cpu.data/data/b", &large),
            ("xpkg-1.0+cpu.data/data/c", &large),
        ]);
        let err = derived_with(&wheel, &Change::PlainVersion("1.0".to_string()))
            .await
            .unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert!(
            err.to_string().contains("the members to rename are"),
            "{err}"
        );
    }

    /// The end record and central directory of `wheel`.
    fn directory(wheel: &[u8]) -> (EndRecord, Vec<CentralEntry>) {
        let end = wheel::end_record(wheel).unwrap();
        let from = usize::try_from(end.directory_offset).unwrap();
        let to = from + usize::try_from(end.directory_size).unwrap();
        let entries = wheel::central_entries(&wheel[from..to]).unwrap();
        (end, entries)
    }

    #[tokio::test]
    async fn members_outside_the_tail_are_read_ahead_together_and_renamed() {
        // Scripts first, then a module larger than the tail read, then the `.dist-info`.
        let padding = vec![b'#'; usize::try_from(super::super::TAIL).unwrap() + 1024];
        let record =
            b"xpkg-1.0+cpu.data/scripts/a,,\nxpkg/big.py,,\nxpkg-1.0+cpu.dist-info/RECORD,,\n";
        let wheel = handmade(&[
            ("xpkg-1.0+cpu.data/scripts/a", b"a\n", true),
            ("xpkg-1.0+cpu.data/scripts/b", b"bb\n", false),
            ("xpkg-1.0+cpu.data/scripts/c", b"ccc\n", true),
            ("xpkg/big.py", &padding, false),
            ("xpkg-1.0+cpu.dist-info/METADATA", METADATA, true),
            ("xpkg-1.0+cpu.dist-info/RECORD", record, false),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("xpkg.whl");
        std::fs::write(&path, &wheel).unwrap();
        let mut reader = RangeReader::new(
            super::super::Source::Local(path),
            "http://127.0.0.1:9/xpkg.whl",
            None,
            "xpkg.whl",
        );
        let (tail, tail_start) = reader
            .read(crate::wheel_metadata::Span::Suffix(super::super::TAIL))
            .await
            .unwrap();
        reader.hold(tail_start, tail);
        let (end, entries) = directory(&wheel);
        let metadata_name = "xpkg-1.0+cpu.dist-info/METADATA";
        let moves = Moves::of(&entries, metadata_name, "1.0").unwrap();
        let rewritten = [metadata_name, "xpkg-1.0+cpu.dist-info/RECORD"];
        let replaced = moved_members(&mut reader, (&entries, &end), &moves, &rewritten)
            .await
            .unwrap();
        // The tail, and one read of the three scripts.
        assert_eq!(reader.held.len(), 2);
        assert_eq!(reader.held[1].0, 0);
        let scripts: Vec<(&str, &str, &[u8])> = replaced
            .iter()
            .map(|(from, to)| (from.as_str(), to.name.as_str(), to.content.as_slice()))
            .collect();
        assert_eq!(
            scripts,
            [
                (
                    "xpkg-1.0+cpu.data/scripts/a",
                    "xpkg-1.0.data/scripts/a",
                    &b"a\n"[..]
                ),
                (
                    "xpkg-1.0+cpu.data/scripts/b",
                    "xpkg-1.0.data/scripts/b",
                    b"bb\n"
                ),
                (
                    "xpkg-1.0+cpu.data/scripts/c",
                    "xpkg-1.0.data/scripts/c",
                    b"ccc\n"
                ),
            ]
        );

        let derivation = derived_with(&wheel, &Change::PlainVersion("1.0".to_string()))
            .await
            .unwrap();
        let bytes = spliced(&wheel, &derivation);
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        assert_eq!(read(&mut archive, "xpkg-1.0.data/scripts/c"), b"ccc\n");
        assert_eq!(read(&mut archive, "xpkg/big.py"), padding);
        assert_eq!(
            read(&mut archive, "xpkg-1.0.dist-info/RECORD"),
            b"xpkg-1.0.data/scripts/a,,\nxpkg/big.py,,\nxpkg-1.0.dist-info/RECORD,,\n"
        );
    }

    #[test]
    fn moves_name_the_dist_info_and_its_data_directory() {
        let wheel = cpu_wheel();
        let (_, entries) = directory(&wheel);
        let moves = Moves::of(&entries, "xpkg-1.0+cpu.dist-info/METADATA", "1.0").unwrap();
        assert_eq!(
            moves.dirs(),
            [
                (
                    "xpkg-1.0+cpu.dist-info/".to_string(),
                    "xpkg-1.0.dist-info/".to_string()
                ),
                (
                    "xpkg-1.0+cpu.data/".to_string(),
                    "xpkg-1.0.data/".to_string()
                ),
            ]
        );
        assert_eq!(moves.name_after("xpkg/__init__.py"), "xpkg/__init__.py");
        assert_eq!(
            moves.name_after("xpkg-1.0+cpu.dist-info/"),
            "xpkg-1.0.dist-info/"
        );
        let same = Moves::of(&entries, "xpkg-1.0+cpu.dist-info/METADATA", "1.0+cpu").unwrap();
        assert!(same.is_empty());
    }
}
