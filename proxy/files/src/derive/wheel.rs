//! A derived wheel's layout, planned from the upstream wheel's central directory alone: every
//! member's bytes copied as they are, in place, except the members replaced (`METADATA`,
//! `RECORD`, and the members of a renamed directory), which are written stored (uncompressed)
//! where the originals were, under their new names; then a new central directory with the
//! shifted offsets and names. The result is a plain ZIP with one entry per name
//! (no dead members a streaming reader such as uv's would trip over), and the same input always
//! gives the same bytes.
//!
//! Only classic ZIP (APPNOTE 4.3.12/4.3.16): a wheel past 4 GiB or with ZIP64 records is refused.

use std::collections::BTreeMap;

use crate::cache::splice::Segment;

const EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
const CENTRAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
const LOCAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x03, 0x04];
/// General purpose flag bit 3: sizes and CRC follow the data in a data descriptor.
const DATA_DESCRIPTOR: u16 = 0x0008;

/// Why a wheel cannot be derived.
pub type PlanError = String;

/// The end of central directory record (APPNOTE 4.3.16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndRecord {
    pub directory_size: u64,
    pub directory_offset: u64,
    pub comment: Vec<u8>,
}

/// Finds and reads the end record in `tail`, the last bytes of the file.
pub fn end_record(tail: &[u8]) -> Result<EndRecord, PlanError> {
    let at = tail
        .windows(4)
        .rposition(|w| w == EOCD_SIGNATURE)
        .filter(|&at| tail.len() - at >= 22)
        .ok_or("no end of central directory record")?;
    let record = &tail[at..];
    let size = u32_at(record, 12).ok_or("a truncated end record")?;
    let offset = u32_at(record, 16).ok_or("a truncated end record")?;
    let comment_len = usize::from(u16_at(record, 20).ok_or("a truncated end record")?);
    if size == u32::MAX || offset == u32::MAX || u16_at(record, 10) == Some(u16::MAX) {
        return Err("a ZIP64 wheel (not supported for derivation)".into());
    }
    Ok(EndRecord {
        directory_size: u64::from(size),
        directory_offset: u64::from(offset),
        comment: record
            .get(22..22 + comment_len)
            .ok_or("a truncated archive comment")?
            .to_vec(),
    })
}

/// One central directory record, kept whole so it is written back unchanged but for what moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CentralEntry {
    pub name: String,
    pub local_offset: u64,
    raw: Vec<u8>,
}

impl CentralEntry {
    /// The name as the record holds it (`name` is these bytes read as UTF-8, lossily).
    pub fn raw_name(&self) -> &[u8] {
        &self.raw[46..46 + usize::from(u16_at(&self.raw, 28).unwrap_or(0))]
    }

    fn flags(&self) -> u16 {
        u16_at(&self.raw, 8).unwrap_or(0)
    }

    /// The compression method (0 stored, 8 deflate).
    pub fn method(&self) -> u16 {
        u16_at(&self.raw, 10).unwrap_or(0)
    }

    pub fn compressed_size(&self) -> u64 {
        u64::from(u32_at(&self.raw, 20).unwrap_or(0))
    }

    pub fn size(&self) -> u64 {
        u64::from(u32_at(&self.raw, 24).unwrap_or(0))
    }

    /// The CRC-32 of the member's uncompressed bytes.
    pub fn crc32(&self) -> u32 {
        u32_at(&self.raw, 16).unwrap_or(0)
    }
}

/// Where the member whose local header starts `header` has its data, from that header
/// (APPNOTE 4.3.7): the local name and extra field may differ in length from the central ones.
pub fn local_data_offset(header: &[u8]) -> Option<u64> {
    if header.get(0..4)? != LOCAL_SIGNATURE {
        return None;
    }
    let name_len = u64::from(u16_at(header, 26)?);
    let extra_len = u64::from(u16_at(header, 28)?);
    Some(30 + name_len + extra_len)
}

/// Where the member after `entry` starts: the next local header, or the central directory.
pub fn member_end(entries: &[CentralEntry], entry: &CentralEntry, end: &EndRecord) -> u64 {
    entries
        .iter()
        .map(|e| e.local_offset)
        .filter(|&offset| offset > entry.local_offset)
        .min()
        .unwrap_or(end.directory_offset)
}

/// The records of a central directory's bytes.
pub fn central_entries(directory: &[u8]) -> Result<Vec<CentralEntry>, PlanError> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at < directory.len() {
        if directory.get(at..at + 4) != Some(&CENTRAL_SIGNATURE[..]) {
            return Err(format!("a bad central directory record at {at}"));
        }
        let field = |offset: usize| u16_at(directory, at + offset).map(usize::from);
        let (Some(name_len), Some(extra_len), Some(comment_len)) =
            (field(28), field(30), field(32))
        else {
            return Err("a truncated central directory".into());
        };
        let end = at + 46 + name_len + extra_len + comment_len;
        let raw = directory
            .get(at..end)
            .ok_or("a truncated central directory")?
            .to_vec();
        let name = String::from_utf8_lossy(&raw[46..46 + name_len]).into_owned();
        let local = u32_at(&raw, 42).ok_or("a truncated central directory")?;
        let sizes = [u32_at(&raw, 20), u32_at(&raw, 24)];
        if local == u32::MAX || sizes.contains(&Some(u32::MAX)) {
            return Err(format!("`{name}` has ZIP64 sizes (not supported)"));
        }
        entries.push(CentralEntry {
            name,
            local_offset: u64::from(local),
            raw,
        });
        at = end;
    }
    Ok(entries)
}

/// The name of the top-level `*.dist-info/<member>`.
pub fn dist_info_member<'a>(entries: &'a [CentralEntry], member: &str) -> Option<&'a str> {
    entries.iter().map(|e| e.name.as_str()).find(|name| {
        name.split_once('/')
            .is_some_and(|(dir, rest)| dir.ends_with(".dist-info") && rest == member)
    })
}

/// The name of the one top-level `*.dist-info/<member>`; refused when there are several (the
/// same name twice, or two `.dist-info` directories): which of them an installer reads is not
/// certain, so a derived wheel changing one of them would not say what it was derived to say.
pub fn single_dist_info_member<'a>(
    entries: &'a [CentralEntry],
    member: &str,
) -> Result<Option<&'a str>, PlanError> {
    let mut found = entries.iter().map(|e| e.name.as_str()).filter(|name| {
        name.split_once('/')
            .is_some_and(|(dir, rest)| dir.ends_with(".dist-info") && rest == member)
    });
    let first = found.next();
    if let (Some(first), Some(second)) = (first, found.next()) {
        return Err(format!(
            "two top-level `*.dist-info/{member}` members (`{first}` and `{second}`); which one an installer reads is not certain"
        ));
    }
    Ok(first)
}

/// The derived file: what to copy from the upstream's bytes and what to write between, and its
/// length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub segments: Vec<Segment>,
    pub len: u64,
}

/// What a replaced member becomes: its new content, under its name in the derived wheel (the
/// upstream's, or the one a renamed directory gives it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub name: String,
    pub content: Vec<u8>,
}

impl Replacement {
    /// The name's bytes for `entry`, the member replaced: the upstream's own bytes when the name
    /// is kept (whatever their encoding), else the new name's.
    fn name_for<'a>(&'a self, entry: &'a CentralEntry) -> &'a [u8] {
        if self.name == entry.name {
            entry.raw_name()
        } else {
            self.name.as_bytes()
        }
    }
}

/// Plans the derived wheel: `entries` (the central directory at `end.directory_offset`) with
/// the members named in `replaced` (by their upstream names) given new contents and names.
pub fn plan(
    entries: &[CentralEntry],
    end: &EndRecord,
    replaced: &BTreeMap<String, Replacement>,
) -> Result<Layout, PlanError> {
    for name in replaced.keys() {
        if !entries.iter().any(|e| &e.name == name) {
            return Err(format!("no member `{name}`"));
        }
    }
    // Members in the order their bytes lie in the file; each runs to the next one's header.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].local_offset);
    let mut segments: Vec<Segment> = Vec::new();
    let mut out: u64 = 0;
    let mut new_offsets = vec![0u64; entries.len()];
    let first = order
        .first()
        .map_or(end.directory_offset, |&i| entries[i].local_offset);
    push_copy(&mut segments, 0, first);
    out += first;
    for (position, &index) in order.iter().enumerate() {
        let entry = &entries[index];
        let next = order
            .get(position + 1)
            .map_or(end.directory_offset, |&i| entries[i].local_offset);
        if next < entry.local_offset || next > end.directory_offset {
            return Err(format!("`{}` overlaps another member", entry.name));
        }
        new_offsets[index] = out;
        if let Some(replacement) = replaced.get(&entry.name) {
            let content = &replacement.content;
            let header = local_header(entry, replacement.name_for(entry), content)?;
            out += len_u64(header.len()) + len_u64(content.len());
            let mut bytes = header;
            bytes.extend_from_slice(content);
            segments.push(Segment::Insert(bytes.into()));
        } else {
            push_copy(&mut segments, entry.local_offset, next);
            out += next - entry.local_offset;
        }
    }
    let directory_offset = out;
    let mut directory = Vec::with_capacity(usize::try_from(end.directory_size).unwrap_or(0));
    for (index, entry) in entries.iter().enumerate() {
        let replacement = replaced.get(&entry.name);
        let mut raw = match replacement {
            Some(replacement) => renamed_record(entry, replacement.name_for(entry))?,
            None => entry.raw.clone(),
        };
        let offset = u32::try_from(new_offsets[index])
            .map_err(|_| "the derived wheel would pass 4 GiB (ZIP64 is not supported)")?;
        raw[42..46].copy_from_slice(&offset.to_le_bytes());
        if let Some(replacement) = replacement {
            let (crc, size) = crc_and_size(&replacement.content)?;
            raw[8..10].copy_from_slice(&(entry.flags() & !DATA_DESCRIPTOR).to_le_bytes());
            raw[10..12].copy_from_slice(&0u16.to_le_bytes());
            raw[16..20].copy_from_slice(&crc.to_le_bytes());
            raw[20..24].copy_from_slice(&size.to_le_bytes());
            raw[24..28].copy_from_slice(&size.to_le_bytes());
        }
        directory.extend_from_slice(&raw);
    }
    let count = u16::try_from(entries.len()).map_err(|_| "more than 65,535 members (ZIP64)")?;
    let directory_size =
        u32::try_from(directory.len()).map_err(|_| "a central directory past 4 GiB")?;
    let directory_at = u32::try_from(directory_offset)
        .map_err(|_| "the derived wheel would pass 4 GiB (ZIP64 is not supported)")?;
    let comment_len =
        u16::try_from(end.comment.len()).map_err(|_| "an archive comment past 64 KiB")?;
    directory.extend_from_slice(&EOCD_SIGNATURE);
    directory.extend_from_slice(&[0, 0, 0, 0]);
    directory.extend_from_slice(&count.to_le_bytes());
    directory.extend_from_slice(&count.to_le_bytes());
    directory.extend_from_slice(&directory_size.to_le_bytes());
    directory.extend_from_slice(&directory_at.to_le_bytes());
    directory.extend_from_slice(&comment_len.to_le_bytes());
    directory.extend_from_slice(&end.comment);
    out += len_u64(directory.len());
    segments.push(Segment::Insert(directory.into()));
    Ok(Layout { segments, len: out })
}

/// `entry`'s central record under `name`: its name length and name changed, everything else
/// (its extra field and comment too) kept. An Info-ZIP Unicode Path field (APPNOTE 4.6.9) in
/// the extra field, if any, carries the CRC-32 of the old name, so readers ignore it.
fn renamed_record(entry: &CentralEntry, name: &[u8]) -> Result<Vec<u8>, PlanError> {
    let old = entry.raw_name();
    if name == old {
        return Ok(entry.raw.clone());
    }
    let name_len = u16::try_from(name.len()).map_err(|_| "a member name past 64 KiB")?;
    let mut raw = Vec::with_capacity(entry.raw.len() + name.len());
    raw.extend_from_slice(&entry.raw[..46]);
    raw[28..30].copy_from_slice(&name_len.to_le_bytes());
    raw.extend_from_slice(name);
    raw.extend_from_slice(&entry.raw[46 + old.len()..]);
    Ok(raw)
}

/// A local header (APPNOTE 4.3.7) for `content` written stored under `name`, with the entry's
/// flags (no data descriptor) and modification time.
fn local_header(entry: &CentralEntry, name: &[u8], content: &[u8]) -> Result<Vec<u8>, PlanError> {
    let (crc, size) = crc_and_size(content)?;
    let mut header = Vec::with_capacity(30 + name.len());
    header.extend_from_slice(&LOCAL_SIGNATURE);
    header.extend_from_slice(&20u16.to_le_bytes());
    header.extend_from_slice(&(entry.flags() & !DATA_DESCRIPTOR).to_le_bytes());
    header.extend_from_slice(&0u16.to_le_bytes());
    // Modification time and date, as the central record has them.
    header.extend_from_slice(&entry.raw[12..16]);
    header.extend_from_slice(&crc.to_le_bytes());
    header.extend_from_slice(&size.to_le_bytes());
    header.extend_from_slice(&size.to_le_bytes());
    header.extend_from_slice(
        &u16::try_from(name.len())
            .map_err(|_| "a member name past 64 KiB")?
            .to_le_bytes(),
    );
    header.extend_from_slice(&0u16.to_le_bytes());
    header.extend_from_slice(name);
    Ok(header)
}

fn crc_and_size(content: &[u8]) -> Result<(u32, u32), PlanError> {
    let size = u32::try_from(content.len()).map_err(|_| "a member past 4 GiB")?;
    Ok((crc32fast::hash(content), size))
}

fn push_copy(segments: &mut Vec<Segment>, from: u64, to: u64) {
    if from == to {
        return;
    }
    if let Some(Segment::Copy(last)) = segments.last_mut()
        && last.end == from
    {
        last.end = to;
        return;
    }
    segments.push(Segment::Copy(from..to));
}

fn len_u64(len: usize) -> u64 {
    u64::try_from(len).expect("a length fits in u64")
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;
    use crate::cache::splice::Splicer;

    /// A wheel written by the zip crate (stored members; a data descriptor on one of them, as
    /// streaming writers leave).
    fn wheel() -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("pkg/__init__.py", stored).unwrap();
        zip.write_all(&vec![b'#'; 100_000]).unwrap();
        zip.start_file("pkg-1.0.dist-info/METADATA", stored)
            .unwrap();
        zip.write_all(b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
            .unwrap();
        zip.start_file("pkg-1.0.dist-info/WHEEL", stored).unwrap();
        zip.write_all(b"Wheel-Version: 1.0\n").unwrap();
        zip.start_file("pkg-1.0.dist-info/RECORD", stored).unwrap();
        zip.write_all(b"pkg/__init__.py,,\npkg-1.0.dist-info/RECORD,,\n")
            .unwrap();
        zip.finish().unwrap();
        out.into_inner()
    }

    /// Replacements of `contents` that keep each member's name.
    fn kept_names<const N: usize>(contents: [(&str, Vec<u8>); N]) -> BTreeMap<String, Replacement> {
        contents
            .into_iter()
            .map(|(name, content)| {
                let name = name.to_string();
                (name.clone(), Replacement { name, content })
            })
            .collect()
    }

    fn derive(bytes: &[u8], replaced: &BTreeMap<String, Replacement>, chunk: usize) -> Vec<u8> {
        let end = end_record(bytes).unwrap();
        let from = usize::try_from(end.directory_offset).unwrap();
        let to = from + usize::try_from(end.directory_size).unwrap();
        let entries = central_entries(&bytes[from..to]).unwrap();
        let layout = plan(&entries, &end, replaced).unwrap();
        let mut splicer = Splicer::new(layout.segments.clone());
        let mut out = Vec::new();
        for (i, piece) in bytes.chunks(chunk).enumerate() {
            splicer.feed(len_u64(i * chunk), piece, &mut out);
        }
        splicer.finish(&mut out);
        assert_eq!(len_u64(out.len()), layout.len);
        out
    }

    #[test]
    fn replaced_members_read_back_and_the_rest_is_untouched() {
        let original = wheel();
        let replaced = kept_names([
            (
                "pkg-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nRequires-Dist: torch==2.10.*\n"
                    .to_vec(),
            ),
            ("pkg-1.0.dist-info/RECORD", b"pkg/__init__.py,,\n".to_vec()),
        ]);
        let whole = derive(&original, &replaced, usize::MAX);
        for chunk in [1, 7, 4096, 65_536] {
            assert_eq!(derive(&original, &replaced, chunk), whole, "chunk {chunk}");
        }
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(whole)).unwrap();
        assert_eq!(archive.len(), 4);
        let read = |archive: &mut zip::ZipArchive<_>, name: &str| {
            let mut text = Vec::new();
            archive
                .by_name(name)
                .unwrap()
                .read_to_end(&mut text)
                .unwrap();
            text
        };
        for (name, replacement) in &replaced {
            assert_eq!(read(&mut archive, name), replacement.content);
        }
        assert_eq!(read(&mut archive, "pkg/__init__.py"), vec![b'#'; 100_000]);
        assert_eq!(
            read(&mut archive, "pkg-1.0.dist-info/WHEEL"),
            b"Wheel-Version: 1.0\n"
        );
    }

    #[test]
    fn garbage_is_refused() {
        assert!(end_record(b"not a zip at all").is_err());
        assert!(central_entries(b"PK\x01\x02short").is_err());
        let original = wheel();
        let end = end_record(&original).unwrap();
        let from = usize::try_from(end.directory_offset).unwrap();
        let to = from + usize::try_from(end.directory_size).unwrap();
        let entries = central_entries(&original[from..to]).unwrap();
        let missing = kept_names([("x/METADATA", Vec::new())]);
        assert!(plan(&entries, &end, &missing).is_err());
    }

    #[test]
    fn renamed_members_carry_their_new_name_in_both_headers() {
        let original = wheel();
        let renamed = |from: &str, to: &str, content: &[u8]| {
            (
                from.to_string(),
                Replacement {
                    name: to.to_string(),
                    content: content.to_vec(),
                },
            )
        };
        let replaced = BTreeMap::from([
            renamed(
                "pkg-1.0.dist-info/WHEEL",
                "pkg-1.0.post1.dist-info/WHEEL",
                b"Wheel-Version: 1.0\n",
            ),
            renamed(
                "pkg-1.0.dist-info/RECORD",
                "pkg-1.0.dist-info/RENAMED-BUT-LONGER",
                b"pkg/__init__.py,,\n",
            ),
        ]);
        let whole = derive(&original, &replaced, usize::MAX);
        assert_eq!(derive(&original, &replaced, 7), whole);
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(whole.clone())).unwrap();
        let names: Vec<String> = archive
            .file_names()
            .map(|name| name.unwrap().into_owned())
            .collect();
        assert_eq!(names.len(), 4);
        for name in [
            "pkg/__init__.py",
            "pkg-1.0.dist-info/METADATA",
            "pkg-1.0.post1.dist-info/WHEEL",
            "pkg-1.0.dist-info/RENAMED-BUT-LONGER",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let mut text = Vec::new();
        archive
            .by_name("pkg-1.0.post1.dist-info/WHEEL")
            .unwrap()
            .read_to_end(&mut text)
            .unwrap();
        assert_eq!(text, b"Wheel-Version: 1.0\n");
        // Named in the local header too (a streaming reader, as uv's, reads those), and the old
        // name nowhere.
        let occurrences = |name: &str| {
            whole
                .windows(name.len())
                .filter(|w| *w == name.as_bytes())
                .count()
        };
        assert_eq!(occurrences("pkg-1.0.post1.dist-info/WHEEL"), 2);
        assert_eq!(occurrences("pkg-1.0.dist-info/WHEEL"), 0);
    }
}
