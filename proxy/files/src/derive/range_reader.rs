//! Ranged reads of one upstream wheel, for a plan: each read bounded to the bytes asked for,
//! every byte read kept for the plan to be checked against the verified file, and a member's
//! content inflated exactly as its central directory says. Apart from the plan (`mod.rs`)
//! because how bytes are fetched (by ranges, from a whole answer, from a local copy, from bytes
//! held) is its own concern.

use std::path::PathBuf;

use bytes::Bytes;

use super::wheel::{self, CentralEntry, EndRecord};
use super::{DeriveError, MAX_LOCAL_HEADER, Source};
use crate::wheel_metadata::{Ranged, Span, get_range, inflate_exact};

/// Ranged reads of one upstream file, or slices of it once a server answered a range with
/// the whole file.
pub(super) struct RangeReader<'a> {
    source: Source<'a>,
    url: &'a str,
    /// The page that lists it, whose source's access the reads carry.
    listed_on: Option<&'a str>,
    /// The file's name, for errors.
    pub(super) file: &'a str,
    /// The whole file, once its server answered a range with it (a small file: see
    /// [`crate::wheel_metadata::WHOLE_LIMIT`]).
    whole: Option<Bytes>,
    /// Every byte read from the upstream, by offset: the plan is checked against the verified
    /// file as it streams ([`crate::cache::splice::Splice::checked`]).
    pub(super) read: Vec<(u64, Bytes)>,
    /// Bytes read already that [`RangeReader::member`] slices from rather than asking again, by
    /// offset: the tail and the spans read ahead, once a rename (which reads many members, not
    /// two) holds them.
    pub(super) held: Vec<(u64, Bytes)>,
}

impl<'a> RangeReader<'a> {
    /// A reader of the file `file` at `url` (listed on `listed_on`), from `source`.
    pub(super) fn new(
        source: Source<'a>,
        url: &'a str,
        listed_on: Option<&'a str>,
        file: &'a str,
    ) -> RangeReader<'a> {
        RangeReader {
            source,
            url,
            listed_on,
            file,
            whole: None,
            read: Vec::new(),
            held: Vec::new(),
        }
    }

    /// Keeps `bytes` (the file's from `start`) for [`RangeReader::member`] to slice from.
    pub(super) fn hold(&mut self, start: u64, bytes: Bytes) {
        self.held.push((start, bytes));
    }

    /// Whether `len` bytes at `offset` are held.
    pub(super) fn holds(&self, offset: u64, len: u64) -> bool {
        self.held_at(offset, len).is_some()
    }

    /// The held bytes that hold `len` bytes at `offset`, and where they start.
    fn held_at(&self, offset: u64, len: u64) -> Option<(Bytes, u64)> {
        self.held
            .iter()
            .find(|(start, bytes)| slice(bytes, *start, offset, len).is_some())
            .map(|(start, bytes)| (bytes.clone(), *start))
    }

    /// Reads `len` bytes at `offset` and holds them, for the members there to be sliced from.
    pub(super) async fn read_ahead(&mut self, offset: u64, len: u64) -> Result<(), DeriveError> {
        if len == 0 || self.holds(offset, len) {
            return Ok(());
        }
        let (bytes, start) = self.read(Span::At { offset, len }).await?;
        self.hold(start, bytes);
        Ok(())
    }

    /// The bytes of `span` and where they start.
    pub(super) async fn read(&mut self, span: Span) -> Result<(Bytes, u64), DeriveError> {
        if let Some(whole) = &self.whole {
            return Ok((whole.clone(), 0));
        }
        let client = match &self.source {
            Source::Upstream(client) => *client,
            Source::Local(path) => {
                return read_local(path.clone(), span)
                    .await
                    .map(|(bytes, start)| (Bytes::from(bytes), start))
                    .map_err(|source| DeriveError::Local {
                        file: self.file.to_string(),
                        source,
                    });
            }
        };
        match get_range(client, (self.url, self.listed_on), span)
            .await
            .map_err(|source| DeriveError::Read {
                file: self.file.to_string(),
                source,
            })? {
            Ranged::Part { bytes, start } => {
                self.read.push((start, bytes.clone()));
                Ok((bytes, start))
            }
            Ranged::Whole(bytes) => {
                self.read.push((0, bytes.clone()));
                self.whole = Some(bytes.clone());
                Ok((bytes, 0))
            }
        }
    }

    /// `len` bytes at `offset`: from `held` (read from `held_start`) when it has them.
    pub(super) async fn slice_or_read(
        &mut self,
        held: &[u8],
        held_start: u64,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, DeriveError> {
        if let Some(bytes) = slice(held, held_start, offset, len) {
            return Ok(bytes.to_vec());
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let (bytes, start) = self.read(Span::At { offset, len }).await?;
        slice(&bytes, start, offset, len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| DeriveError::Zip {
                file: self.file.to_string(),
                problem: format!(
                    "the upstream answered a range of {} bytes at {start}",
                    bytes.len()
                ),
            })
    }

    /// The inflated content of the member `name`, at most `limit` bytes: a member its central
    /// directory says is larger is refused before it is read, and one that does not inflate to
    /// exactly the size and CRC-32 its central directory says is refused, never truncated.
    pub(super) async fn member(
        &mut self,
        entries: &[CentralEntry],
        end: &EndRecord,
        name: &str,
        limit: u64,
    ) -> Result<Vec<u8>, DeriveError> {
        let zip_error = |problem: String| DeriveError::Zip {
            file: self.file.to_string(),
            problem,
        };
        let entry = entries
            .iter()
            .find(|e| e.name == name)
            .expect("a member of the directory");
        for (what, size) in [("", entry.size()), (" compressed", entry.compressed_size())] {
            if size > limit {
                return Err(zip_error(format!(
                    "`{name}` is{what} {size} bytes, over the limit of {limit} bytes"
                )));
            }
        }
        // Its local header and data: never more, whatever lies between it and the next member.
        let span = (wheel::member_end(entries, entry, end).saturating_sub(entry.local_offset))
            .min(MAX_LOCAL_HEADER + entry.compressed_size());
        let (held, held_start) = self
            .held_at(entry.local_offset, span)
            .unwrap_or((Bytes::new(), 0));
        let bytes = self
            .slice_or_read(&held, held_start, entry.local_offset, span)
            .await?;
        let start = wheel::local_data_offset(&bytes)
            .and_then(|at| usize::try_from(at).ok())
            .ok_or_else(|| zip_error(format!("a bad local header for `{name}`")))?;
        let data = usize::try_from(entry.compressed_size())
            .ok()
            .and_then(|len| bytes.get(start..start + len))
            .ok_or_else(|| zip_error(format!("`{name}` runs past its member")))?;
        let size = usize::try_from(entry.size()).expect("at most the limit");
        let content = match entry.method() {
            0 if data.len() == size => data.to_vec(),
            0 => {
                return Err(zip_error(format!(
                    "`{name}` is stored in {} bytes where its central directory says {size}",
                    data.len()
                )));
            }
            8 => inflate_exact(data, size)
                .map_err(|problem| zip_error(format!("`{name}` {problem}")))?,
            method => {
                return Err(zip_error(format!(
                    "`{name}` uses compression method {method} (only stored and deflate are read)"
                )));
            }
        };
        if crc32fast::hash(&content) != entry.crc32() {
            return Err(zip_error(format!(
                "`{name}` does not match the CRC-32 its central directory gives"
            )));
        }
        Ok(content)
    }
}

/// `span` of the file at `path` and where it starts, read in place.
async fn read_local(path: PathBuf, span: Span) -> std::io::Result<(Vec<u8>, u64)> {
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt as _;
        let file = std::fs::File::open(&path)?;
        let size = file.metadata()?.len();
        let (offset, len) = match span {
            Span::Suffix(len) => (size.saturating_sub(len), len.min(size)),
            Span::At { offset, len } => (offset, len),
        };
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{len} bytes at {offset} of a {size}-byte file"),
            ));
        }
        let mut bytes = vec![0; usize::try_from(len).map_err(std::io::Error::other)?];
        file.read_exact_at(&mut bytes, offset)?;
        Ok((bytes, offset))
    })
    .await
    .map_err(std::io::Error::other)?
}

fn slice(held: &[u8], held_start: u64, offset: u64, len: u64) -> Option<&[u8]> {
    let from = usize::try_from(offset.checked_sub(held_start)?).ok()?;
    let to = from.checked_add(usize::try_from(len).ok()?)?;
    held.get(from..to)
}
