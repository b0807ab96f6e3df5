//! A wheel's `*.dist-info/METADATA` read with HTTP range requests, for pages that offer no PEP
//! 658 `.metadata` file (download.pytorch.org's older wheels): the zip's end (end of central
//! directory record and central directory), then the one member, so a 900 MB wheel costs a few
//! kilobytes. A server that ignores `Range` answers the whole file, which works too while it is
//! small ([`WHOLE_LIMIT`]).
//!
//! Every read is bounded: a ranged answer is read up to the bytes asked for and no further, a
//! whole-file answer up to [`WHOLE_LIMIT`], and the connection is dropped past either (an
//! upstream that answers a suffix range with a 1 GiB body costs kilobytes, not a gigabyte). A
//! `METADATA` member is read only when its central directory says it fits the limit of a core
//! metadata file ([`CORE_METADATA_LIMIT`]), and only when it inflates to exactly the size the
//! directory says: refused, never truncated.

use bytes::Bytes;
use reqwest::header::{CONTENT_RANGE, HeaderMap, HeaderValue, RANGE};
use reqwest::{Method, StatusCode};

use tracing::debug;

use crate::cache::CORE_METADATA_LIMIT;
use wheelgate_index::upstream::{UpstreamClient, redact};

/// The tail fetched first: the end of central directory record (22 bytes plus a comment of at
/// most 64 KiB) and, for wheels of a few hundred files, the whole central directory.
const TAIL: u64 = 64 * 1024;
const EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
const CENTRAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
const LOCAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x03, 0x04];
/// The most a `METADATA` member may inflate to: the limit of a core metadata file the server
/// reads or serves (real ones are a few KiB to a few hundred KiB).
const MAX_METADATA: u64 = CORE_METADATA_LIMIT as u64;
/// The most a central directory may be (torch's, of about 13,000 entries, is 1.3 MB): a
/// directory said to be larger is not read.
const MAX_DIRECTORY: u64 = 64 * 1024 * 1024;
/// The most of a file read when its server ignores `Range` and answers it whole (`200`): small
/// wheels (most pure-Python ones) still work from such a server; past it the read stops, the
/// connection is dropped and the file is refused.
pub const WHOLE_LIMIT: u64 = 8 * 1024 * 1024;
/// Retries of a ranged read after a connection error or a 5xx answer, and the first wait.
const RANGE_RETRIES: u32 = 2;
const RANGE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// Why a wheel's metadata could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WheelMetadataError {
    #[error("cannot read `{url}`")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("`{url}` answered {status} to a range request")]
    Status { url: String, status: StatusCode },
    #[error("`{url}` did not answer a range request within {secs} s")]
    Timeout { url: String, secs: f64 },
    #[error("`{file}` is not a valid wheel: {problem}")]
    Zip { file: String, problem: String },
    #[error(
        "`{url}` does not honour range requests: it answered with the whole file, larger than the {limit} bytes read without ranges (read no further)"
    )]
    RangeIgnored { url: String, limit: u64 },
    #[error(
        "`{url}` answered a range request of {asked} bytes with more than that (read no further)"
    )]
    RangeOverrun { url: String, asked: u64 },
}

/// The bytes of the wheel's top-level `*.dist-info/METADATA`, the wheel at `url` listed on the
/// page at `listed_on` (whose source's access the reads carry).
pub async fn read_wheel_metadata(
    client: &UpstreamClient,
    at: (&str, Option<&str>),
    file: &str,
) -> Result<Vec<u8>, WheelMetadataError> {
    read_wheel_metadata_by_ranges(client, at, file)
        .await
        .map(|read| read.metadata)
}

/// A wheel's `METADATA` and the reads it came from.
pub struct RangedMetadata {
    pub metadata: Vec<u8>,
    /// `(offset, bytes)` of every read of the wheel: what to check against the wheel's
    /// verified bytes before the facts read here are trusted for good.
    pub reads: Vec<(u64, Bytes)>,
}

/// [`read_wheel_metadata`], with the reads it made.
pub async fn read_wheel_metadata_by_ranges(
    client: &UpstreamClient,
    (url, listed_on): (&str, Option<&str>),
    file: &str,
) -> Result<RangedMetadata, WheelMetadataError> {
    let mut reads = Vec::new();
    let metadata = read_member(client, (url, listed_on), file, &mut reads).await?;
    Ok(RangedMetadata { metadata, reads })
}

async fn read_member(
    client: &UpstreamClient,
    (url, listed_on): (&str, Option<&str>),
    file: &str,
    reads: &mut Vec<(u64, Bytes)>,
) -> Result<Vec<u8>, WheelMetadataError> {
    let whole = |bytes: Bytes, reads: &mut Vec<(u64, Bytes)>| {
        reads.push((0, bytes.clone()));
        member_from_whole(&bytes, file)
    };
    let zip_error = |problem: &str| WheelMetadataError::Zip {
        file: file.to_string(),
        problem: problem.to_string(),
    };
    let (tail, tail_start) = match get_range(client, (url, listed_on), Span::Suffix(TAIL)).await? {
        Ranged::Whole(bytes) => {
            // The server sent everything: read the member straight from it.
            return whole(bytes, reads);
        }
        Ranged::Part { bytes, start } => {
            reads.push((start, bytes.clone()));
            (bytes, start)
        }
    };
    let eocd = find_eocd(&tail).ok_or_else(|| zip_error("no end of central directory record"))?;
    let directory = CentralDirectory::parse_eocd(&tail[eocd..]).ok_or_else(|| {
        zip_error("a ZIP64 or truncated end of central directory record (not supported)")
    })?;
    let directory_bytes = if directory.offset >= tail_start {
        let from =
            usize::try_from(directory.offset - tail_start).map_err(|_| zip_error("offset"))?;
        let to = from + directory.size as usize;
        tail.get(from..to)
            .ok_or_else(|| zip_error("the central directory runs past the file"))?
            .to_vec()
    } else {
        if u64::from(directory.size) > MAX_DIRECTORY {
            return Err(zip_error(&format!(
                "a central directory of {} bytes (more than {MAX_DIRECTORY} is not read)",
                directory.size
            )));
        }
        let span = Span::At {
            offset: directory.offset,
            len: u64::from(directory.size),
        };
        match get_range(client, (url, listed_on), span).await? {
            Ranged::Whole(bytes) => return whole(bytes, reads),
            Ranged::Part { bytes, start } => {
                reads.push((start, bytes.clone()));
                bytes.to_vec()
            }
        }
    };
    let entry = find_metadata_entry(&directory_bytes)
        .ok_or_else(|| zip_error("no top-level `*.dist-info/METADATA` member"))?;
    // Refused before its bytes are asked for.
    check_sizes(&entry).map_err(|problem| zip_error(&problem))?;
    // The local header's name and extra field may differ in length from the central
    // directory's: read the fixed part first, then the data.
    let span = Span::At {
        offset: entry.local_offset,
        len: 30,
    };
    let header = match get_range(client, (url, listed_on), span).await? {
        Ranged::Whole(bytes) => return whole(bytes, reads),
        Ranged::Part { bytes, start } => {
            reads.push((start, bytes.clone()));
            bytes
        }
    };
    let data_offset = entry.local_offset
        + local_data_offset(&header).ok_or_else(|| zip_error("a bad local header"))?;
    let data = if entry.compressed_size == 0 {
        Bytes::new()
    } else {
        let span = Span::At {
            offset: data_offset,
            len: u64::from(entry.compressed_size),
        };
        match get_range(client, (url, listed_on), span).await? {
            Ranged::Whole(bytes) => return whole(bytes, reads),
            Ranged::Part { bytes, start } => {
                reads.push((start, bytes.clone()));
                bytes
            }
        }
    };
    inflate(&data, &entry).map_err(|problem| zip_error(&problem))
}

/// Which bytes of a file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// The last so many.
    Suffix(u64),
    /// `len` bytes from `offset` (`len` > 0).
    At { offset: u64, len: u64 },
}

impl Span {
    /// The `Range` header that asks for it.
    fn header(self) -> String {
        match self {
            Span::Suffix(len) => format!("bytes=-{len}"),
            Span::At { offset, len } => format!("bytes={offset}-{}", offset + len - 1),
        }
    }

    /// How many bytes it asks for: the most a ranged answer may carry.
    fn len(self) -> u64 {
        match self {
            Span::Suffix(len) | Span::At { len, .. } => len,
        }
    }
}

pub enum Ranged {
    /// `206`: `bytes` start at `start`; never more than was asked.
    Part { bytes: Bytes, start: u64 },
    /// `200`: the whole file, at most [`WHOLE_LIMIT`] bytes.
    Whole(Bytes),
}

/// [`get_range_once`], tried again after a connection error or a 5xx answer (the client's
/// `send` does not retry): at most [`RANGE_RETRIES`] more times, waiting a little longer each
/// time, as the client retries pages.
pub async fn get_range(
    client: &UpstreamClient,
    (url, listed_on): (&str, Option<&str>),
    span: Span,
) -> Result<Ranged, WheelMetadataError> {
    let mut attempt = 0;
    loop {
        // A stalling upstream costs each attempt the client's page deadline at most, not the
        // per-read timeout again for every chunk it drips.
        let once = tokio::time::timeout(
            client.deadline(),
            get_range_once(client, (url, listed_on), span),
        )
        .await
        .unwrap_or_else(|_| {
            Err(WheelMetadataError::Timeout {
                url: redact(url),
                secs: client.deadline().as_secs_f64(),
            })
        });
        match once {
            Err(err) if attempt < RANGE_RETRIES && err.is_transient() => {
                attempt += 1;
                debug!(url = %redact(url), attempt, error = %err, "ranged read failed; retrying");
                tokio::time::sleep(RANGE_BACKOFF * attempt).await;
            }
            result => return result,
        }
    }
}

impl WheelMetadataError {
    /// Whether trying again may help: the connection failed or the upstream answered 5xx.
    fn is_transient(&self) -> bool {
        match self {
            WheelMetadataError::Request { .. } | WheelMetadataError::Timeout { .. } => true,
            WheelMetadataError::Status { status, .. } => status.is_server_error(),
            WheelMetadataError::Zip { .. }
            | WheelMetadataError::RangeIgnored { .. }
            | WheelMetadataError::RangeOverrun { .. } => false,
        }
    }
}

/// One ranged `GET` of `span`, its body read as it streams and never past what may come: the
/// bytes asked for in a `206`, [`WHOLE_LIMIT`] of a `200`. Past either the response is dropped
/// (and its connection with it), before its body is read when its `Content-Length` says so.
async fn get_range_once(
    client: &UpstreamClient,
    (url, listed_on): (&str, Option<&str>),
    span: Span,
) -> Result<Ranged, WheelMetadataError> {
    let request_error = |source| WheelMetadataError::Request {
        url: redact(url),
        source,
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        RANGE,
        HeaderValue::from_str(&span.header()).expect("a range of digits is a valid header value"),
    );
    // With the upstream's access: a private upstream wants its credentials on these too.
    let mut response = client
        .send(Method::GET, url, &headers, listed_on)
        .await
        .map_err(request_error)?;
    let status = response.status();
    let start = response
        .headers()
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range_start);
    let part = match (status, start) {
        (StatusCode::PARTIAL_CONTENT, Some(start)) => Some(start),
        (StatusCode::OK | StatusCode::PARTIAL_CONTENT, _) => None,
        (status, _) => {
            return Err(WheelMetadataError::Status {
                url: redact(url),
                status,
            });
        }
    };
    let (limit, too_long) = match part {
        Some(_) => (
            span.len(),
            WheelMetadataError::RangeOverrun {
                url: redact(url),
                asked: span.len(),
            },
        ),
        None => (
            WHOLE_LIMIT,
            WheelMetadataError::RangeIgnored {
                url: redact(url),
                limit: WHOLE_LIMIT,
            },
        ),
    };
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(too_long);
    }
    let capacity = response.content_length().unwrap_or(0).min(limit);
    let mut bytes = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(request_error)? {
        if u64::try_from(bytes.len() + chunk.len()).map_or(true, |len| len > limit) {
            return Err(too_long);
        }
        bytes.extend_from_slice(&chunk);
    }
    let bytes = Bytes::from(bytes);
    Ok(match part {
        Some(start) => Ranged::Part { bytes, start },
        None => Ranged::Whole(bytes),
    })
}

/// The first byte of `Content-Range: bytes 1000-1999/2000`.
fn parse_content_range_start(value: &str) -> Option<u64> {
    let range = value.strip_prefix("bytes ")?;
    let (span, _) = range.split_once('/')?;
    span.split_once('-')?.0.parse().ok()
}

/// The metadata member of a wheel held whole in memory.
fn member_from_whole(bytes: &[u8], file: &str) -> Result<Vec<u8>, WheelMetadataError> {
    let zip_error = |problem: &str| WheelMetadataError::Zip {
        file: file.to_string(),
        problem: problem.to_string(),
    };
    let eocd = find_eocd(bytes).ok_or_else(|| zip_error("no end of central directory record"))?;
    let directory = CentralDirectory::parse_eocd(&bytes[eocd..])
        .ok_or_else(|| zip_error("a ZIP64 end of central directory record (not supported)"))?;
    let from = usize::try_from(directory.offset).map_err(|_| zip_error("offset"))?;
    let directory_bytes = bytes
        .get(from..from + directory.size as usize)
        .ok_or_else(|| zip_error("the central directory runs past the file"))?;
    let entry = find_metadata_entry(directory_bytes)
        .ok_or_else(|| zip_error("no top-level `*.dist-info/METADATA` member"))?;
    check_sizes(&entry).map_err(|problem| zip_error(&problem))?;
    let local = usize::try_from(entry.local_offset).map_err(|_| zip_error("offset"))?;
    let header = bytes
        .get(local..local + 30)
        .ok_or_else(|| zip_error("a local header runs past the file"))?;
    let start = local
        + usize::try_from(
            local_data_offset(header).ok_or_else(|| zip_error("a bad local header"))?,
        )
        .map_err(|_| zip_error("offset"))?;
    let data = bytes
        .get(start..start + entry.compressed_size as usize)
        .ok_or_else(|| zip_error("the metadata member runs past the file"))?;
    inflate(data, &entry).map_err(|problem| zip_error(&problem))
}

struct CentralDirectory {
    size: u32,
    offset: u64,
}

impl CentralDirectory {
    /// From the end of central directory record (APPNOTE 4.3.16); `None` for ZIP64.
    fn parse_eocd(record: &[u8]) -> Option<CentralDirectory> {
        let size = u32_at(record, 12)?;
        let offset = u32_at(record, 16)?;
        if offset == u32::MAX || size == u32::MAX {
            return None;
        }
        Some(CentralDirectory {
            size,
            offset: u64::from(offset),
        })
    }
}

struct Entry {
    method: u16,
    compressed_size: u32,
    size: u32,
    local_offset: u64,
}

/// The last end of central directory signature in `bytes`.
fn find_eocd(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .rposition(|w| w == EOCD_SIGNATURE)
        .filter(|&at| bytes.len() - at >= 22)
}

/// The central directory entry (APPNOTE 4.3.12) of `<name>.dist-info/METADATA` at the top level.
fn find_metadata_entry(directory: &[u8]) -> Option<Entry> {
    let mut at = 0;
    while directory.get(at..at + 4)? == CENTRAL_SIGNATURE {
        let name_len = usize::from(u16_at(directory, at + 28)?);
        let extra_len = usize::from(u16_at(directory, at + 30)?);
        let comment_len = usize::from(u16_at(directory, at + 32)?);
        let name = directory.get(at + 46..at + 46 + name_len)?;
        if let Ok(name) = std::str::from_utf8(name)
            && let Some((dir, member)) = name.split_once('/')
            && dir.ends_with(".dist-info")
            && member == "METADATA"
        {
            return Some(Entry {
                method: u16_at(directory, at + 10)?,
                compressed_size: u32_at(directory, at + 20)?,
                size: u32_at(directory, at + 24)?,
                local_offset: u64::from(u32_at(directory, at + 42)?),
            });
        }
        at += 46 + name_len + extra_len + comment_len;
    }
    None
}

/// Where a member's data starts, from its local header (APPNOTE 4.3.7).
fn local_data_offset(header: &[u8]) -> Option<u64> {
    if header.get(0..4)? != LOCAL_SIGNATURE {
        return None;
    }
    let name_len = u64::from(u16_at(header, 26)?);
    let extra_len = u64::from(u16_at(header, 28)?);
    Some(30 + name_len + extra_len)
}

fn inflate(data: &[u8], entry: &Entry) -> Result<Vec<u8>, String> {
    check_sizes(entry)?;
    match entry.method {
        0 if data.len() == entry.size as usize => Ok(data.to_vec()),
        0 => Err(format!(
            "a stored METADATA member of {} bytes where its central directory says {}",
            data.len(),
            entry.size
        )),
        8 => inflate_exact(data, entry.size as usize)
            .map_err(|problem| format!("the METADATA member {problem}")),
        method => Err(format!(
            "compression method {method} (only stored and deflate are)"
        )),
    }
}

/// Refuses a `METADATA` member whose central directory says it is larger than a core metadata
/// file may be ([`MAX_METADATA`]), before any of its bytes are read.
fn check_sizes(entry: &Entry) -> Result<(), String> {
    for (what, size) in [
        ("a METADATA member", entry.size),
        ("a compressed METADATA member", entry.compressed_size),
    ] {
        if u64::from(size) > MAX_METADATA {
            return Err(format!(
                "{what} of {size} bytes, over the {MAX_METADATA}-byte limit of core metadata"
            ));
        }
    }
    Ok(())
}

/// The deflate stream `data` inflated, when it ends within `data` and inflates to exactly
/// `size` bytes; else what is wrong with it. Never reads more than `size` bytes and one more:
/// a member that inflates past what its central directory says (or a stream cut short by a
/// directory that understates its compressed size) is refused, never truncated.
pub fn inflate_exact(data: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(size + 1);
    let mut inflater = flate2::Decompress::new(false);
    let status = inflater
        .decompress_vec(data, &mut out, flate2::FlushDecompress::Finish)
        .map_err(|err| format!("does not inflate ({err})"));
    match status {
        Ok(flate2::Status::StreamEnd) if out.len() == size => Ok(out),
        _ if out.len() > size => Err(format!(
            "inflates to more than the {size} bytes its central directory says"
        )),
        Ok(flate2::Status::StreamEnd) => Err(format!(
            "inflates to {} bytes where its central directory says {size}",
            out.len()
        )),
        Ok(_) => Err(format!(
            "is cut short: its {} bytes end before its deflate stream does",
            data.len()
        )),
        Err(problem) => Err(problem),
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A wheel with a deflated METADATA among other members, written by hand so the test
    /// covers both compression methods without the zip crate's deflate feature.
    fn wheel(metadata: &[u8], deflate: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        let members: [(&str, Vec<u8>); 3] = [
            // A large first member, as a real wheel's libraries: ranged reads skip it.
            ("pkg/__init__.py", vec![b'#'; 256 * 1024]),
            ("pkg-1.0.dist-info/METADATA", metadata.to_vec()),
            ("pkg-1.0.dist-info/RECORD", b"".to_vec()),
        ];
        for (name, content) in &members {
            let (method, data) = if deflate && name.ends_with("METADATA") {
                let mut encoder =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                encoder.write_all(content).unwrap();
                (8u16, encoder.finish().unwrap())
            } else {
                (0u16, content.clone())
            };
            let offset = u32::try_from(out.len()).unwrap();
            let name_len = u16::try_from(name.len()).unwrap();
            let sizes = |buf: &mut Vec<u8>| {
                buf.extend_from_slice(&0u32.to_le_bytes()); // crc (not checked)
                buf.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
                buf.extend_from_slice(&u32::try_from(content.len()).unwrap().to_le_bytes());
            };
            out.extend_from_slice(&LOCAL_SIGNATURE);
            out.extend_from_slice(&[20, 0, 0, 0]);
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]);
            sizes(&mut out);
            out.extend_from_slice(&name_len.to_le_bytes());
            out.extend_from_slice(&3u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"abc"); // a local extra field the central one lacks
            out.extend_from_slice(&data);
            central.extend_from_slice(&CENTRAL_SIGNATURE);
            central.extend_from_slice(&[20, 0, 20, 0, 0, 0]);
            central.extend_from_slice(&method.to_le_bytes());
            central.extend_from_slice(&[0, 0, 0, 0]);
            sizes(&mut central);
            central.extend_from_slice(&name_len.to_le_bytes());
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let directory_offset = u32::try_from(out.len()).unwrap();
        out.extend_from_slice(&central);
        out.extend_from_slice(&EOCD_SIGNATURE);
        out.extend_from_slice(&[0, 0, 0, 0, 3, 0, 3, 0]);
        out.extend_from_slice(&u32::try_from(central.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&directory_offset.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    #[test]
    fn the_metadata_member_stored_or_deflated() {
        let metadata = b"Metadata-Version: 2.1\nName: pkg\nRequires-Dist: six\n";
        for deflate in [false, true] {
            let bytes = wheel(metadata, deflate);
            assert_eq!(member_from_whole(&bytes, "pkg.whl").unwrap(), metadata);
        }
    }

    /// Serves `bytes` honouring `Range` (suffix and closed ranges), counting bytes sent.
    async fn range_server(
        bytes: Vec<u8>,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use axum::http::{HeaderMap, StatusCode, header};
        use axum::response::IntoResponse;

        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        let bytes = Arc::new(bytes);
        let handler = move |headers: HeaderMap| {
            let bytes = bytes.clone();
            let counter = counter.clone();
            async move {
                let len = bytes.len();
                let range = headers
                    .get(header::RANGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("bytes="))
                    .map(str::to_string);
                let (start, end) = match range.as_deref().map(|r| r.split_once('-')) {
                    Some(Some(("", suffix))) => {
                        (len - suffix.parse::<usize>().unwrap().min(len), len - 1)
                    }
                    Some(Some((a, b))) => {
                        (a.parse().unwrap(), b.parse::<usize>().unwrap().min(len - 1))
                    }
                    _ => {
                        counter.fetch_add(len, Ordering::SeqCst);
                        return (StatusCode::OK, bytes.to_vec()).into_response();
                    }
                };
                counter.fetch_add(end + 1 - start, Ordering::SeqCst);
                (
                    StatusCode::PARTIAL_CONTENT,
                    [(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"))],
                    bytes[start..=end].to_vec(),
                )
                    .into_response()
            }
        };
        let app = axum::Router::new().route("/pkg.whl", axum::routing::get(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pkg.whl", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, sent)
    }

    /// An upstream that answers a range request and then drips its body a byte every 200 ms:
    /// never silent long enough for the per-read timeout.
    async fn dripping_server() -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pkg.whl", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9999/10000\r\nContent-Length: 10000\r\n\r\n";
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    loop {
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        if socket.write_all(b"x").await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn a_dripping_range_read_ends_at_the_deadline() {
        let url = dripping_server().await;
        let client = UpstreamClient::new(&wheelgate_index::upstream::ClientSettings {
            deadline: std::time::Duration::from_millis(600),
            ..wheelgate_index::upstream::ClientSettings::default()
        })
        .unwrap();
        let started = std::time::Instant::now();
        let err = read_wheel_metadata(&client, (&url, None), "pkg.whl")
            .await
            .unwrap_err();
        assert!(matches!(err, WheelMetadataError::Timeout { .. }), "{err:?}");
        // Three attempts of 0.6 s and the backoff between them; without the deadline, the
        // drip would go on for 10,000 × 0.2 s.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn ranged_reads_fetch_a_few_kilobytes_of_a_large_wheel() {
        let metadata = b"Metadata-Version: 2.1\nName: pkg\nRequires-Dist: six\n";
        let bytes = wheel(metadata, true);
        let size = bytes.len();
        let (url, sent) = range_server(bytes).await;
        let client =
            UpstreamClient::new(&wheelgate_index::upstream::ClientSettings::default()).unwrap();
        let read = read_wheel_metadata(&client, (&url, None), "pkg.whl")
            .await
            .unwrap();
        assert_eq!(read, metadata);
        let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
        assert!(sent < size / 3, "{sent} of {size} bytes read");
        // A missing wheel is named with its status.
        let missing = url.replace("pkg.whl", "other.whl");
        let err = read_wheel_metadata(&client, (&missing, None), "other.whl")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("404"), "{err}");
    }

    /// `bytes` with the sizes its central directory gives `METADATA` replaced.
    fn with_directory_sizes(
        mut bytes: Vec<u8>,
        compressed: Option<u32>,
        size: Option<u32>,
    ) -> Vec<u8> {
        let name = b"pkg-1.0.dist-info/METADATA";
        let at = bytes
            .windows(4)
            .enumerate()
            .filter(|(_, w)| *w == CENTRAL_SIGNATURE)
            .map(|(at, _)| at)
            .find(|&at| bytes[at + 46..].starts_with(name))
            .unwrap();
        if let Some(compressed) = compressed {
            bytes[at + 20..at + 24].copy_from_slice(&compressed.to_le_bytes());
        }
        if let Some(size) = size {
            bytes[at + 24..at + 28].copy_from_slice(&size.to_le_bytes());
        }
        bytes
    }

    /// The sizes the central directory gives `METADATA` in `bytes`: compressed, then inflated.
    fn directory_sizes(bytes: &[u8]) -> (u32, u32) {
        let eocd = find_eocd(bytes).unwrap();
        let directory = CentralDirectory::parse_eocd(&bytes[eocd..]).unwrap();
        let from = usize::try_from(directory.offset).unwrap();
        let entry = find_metadata_entry(&bytes[from..from + directory.size as usize]).unwrap();
        (entry.compressed_size, entry.size)
    }

    #[tokio::test]
    async fn a_metadata_member_over_the_limit_is_refused_before_it_is_read() {
        // 9 MiB of text deflates to a few kilobytes: only the directory says how large it is.
        let metadata = b"Metadata-Version: 2.1\nName: pkg\n".repeat(9 * 1024 * 1024 / 32);
        let bytes = wheel(&metadata, true);
        let size = bytes.len();
        let (url, sent) = range_server(bytes.clone()).await;
        let client =
            UpstreamClient::new(&wheelgate_index::upstream::ClientSettings::default()).unwrap();
        let err = read_wheel_metadata(&client, (&url, None), "pkg.whl")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "a METADATA member of {} bytes, over the 8388608-byte limit of core metadata",
                metadata.len()
            )),
            "{err}"
        );
        // The tail only: the member itself was never asked for.
        let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
        assert!(sent <= 64 * 1024 + 1024, "{sent} of {size} bytes read");
        // Held whole (a server without ranges), refused the same way.
        let err = member_from_whole(&bytes, "pkg.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("over the 8388608-byte limit"), "{err}");
        // One byte under the limit is read.
        let fits = vec![b'a'; usize::try_from(MAX_METADATA).unwrap()];
        assert_eq!(
            member_from_whole(&wheel(&fits, true), "pkg.whl").unwrap(),
            fits
        );
    }

    #[test]
    fn a_directory_that_understates_the_member_is_refused_not_truncated() {
        let metadata = b"Metadata-Version: 2.1\nName: pkg\nRequires-Dist: six\n".repeat(40);
        let deflated = wheel(&metadata, true);
        let (compressed, size) = directory_sizes(&deflated);
        // It inflates to more than the directory says.
        let bytes = with_directory_sizes(deflated.clone(), None, Some(size - 100));
        let err = member_from_whole(&bytes, "pkg.whl")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "the METADATA member inflates to more than the {} bytes its central directory says",
                size - 100
            )),
            "{err}"
        );
        // Its deflate stream is cut where the directory says it ends.
        let bytes = with_directory_sizes(deflated, Some(compressed / 2), None);
        let err = member_from_whole(&bytes, "pkg.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is cut short"), "{err}");
        // Stored, with the data longer than the directory's inflated size.
        let stored = wheel(&metadata, false);
        let bytes = with_directory_sizes(stored, None, Some(size - 1));
        let err = member_from_whole(&bytes, "pkg.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("where its central directory says"), "{err}");
    }

    #[test]
    fn inflating_stops_one_byte_past_the_size_said() {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&vec![b'z'; 100_000]).unwrap();
        let data = encoder.finish().unwrap();
        assert_eq!(inflate_exact(&data, 100_000).unwrap().len(), 100_000);
        let err = inflate_exact(&data, 10).unwrap_err();
        assert_eq!(
            err,
            "inflates to more than the 10 bytes its central directory says"
        );
        let err = inflate_exact(&data, 200_000).unwrap_err();
        assert_eq!(
            err,
            "inflates to 100000 bytes where its central directory says 200000"
        );
        assert!(inflate_exact(&data[..data.len() / 2], 100_000).is_err());
        assert!(inflate_exact(b"\xff\xff\xff", 10).is_err());
    }

    /// An upstream that answers every request `200` with `len` bytes, whatever its `Range`
    /// (its `Content-Length` given when `announce`), counting the bytes its socket took.
    async fn range_ignoring_server(
        len: u64,
        announce: bool,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = sent.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pkg.whl", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    let length = if announce {
                        format!("Content-Length: {len}\r\n")
                    } else {
                        String::new()
                    };
                    let head = format!("HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n");
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = vec![b'x'; 64 * 1024];
                    let mut left = len;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64);
                        if socket
                            .write_all(&chunk[..usize::try_from(n).unwrap()])
                            .await
                            .is_err()
                        {
                            return;
                        }
                        counter.fetch_add(n, Ordering::SeqCst);
                        left -= n;
                    }
                });
            }
        });
        (url, sent)
    }

    #[tokio::test]
    async fn an_upstream_that_ignores_range_is_read_no_further_than_the_limit() {
        const LEN: u64 = 256 * 1024 * 1024;
        let client =
            UpstreamClient::new(&wheelgate_index::upstream::ClientSettings::default()).unwrap();
        for announce in [true, false] {
            let (url, sent) = range_ignoring_server(LEN, announce).await;
            let err = read_wheel_metadata(&client, (&url, None), "pkg.whl")
                .await
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    WheelMetadataError::RangeIgnored {
                        limit: WHOLE_LIMIT,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(
                err.to_string().contains("does not honour range requests"),
                "{err}"
            );
            // Let the server's writes run into the closed connection.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
            // The limit, and what the sockets' buffers took meanwhile: not the 256 MiB.
            assert!(
                sent < 4 * WHOLE_LIMIT,
                "announce {announce}: {sent} bytes sent"
            );
        }
    }

    #[tokio::test]
    async fn a_range_answered_with_more_than_was_asked_is_refused() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pkg.whl", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    // Asked for the last 64 KiB, answers a megabyte as a part, without length.
                    let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1048575/1048576\r\nConnection: close\r\n\r\n";
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&vec![0u8; 1024 * 1024]).await;
                });
            }
        });
        let client =
            UpstreamClient::new(&wheelgate_index::upstream::ClientSettings::default()).unwrap();
        let err = read_wheel_metadata(&client, (&url, None), "pkg.whl")
            .await
            .unwrap_err();
        assert!(
            matches!(err, WheelMetadataError::RangeOverrun { asked: TAIL, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn garbage_is_a_named_error() {
        let err = member_from_whole(b"not a zip at all", "pkg.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`pkg.whl` is not a valid wheel"), "{err}");
        let mut bytes = wheel(b"Metadata-Version: 2.1\n", false);
        let len = bytes.len();
        // The central directory offset points past the end.
        bytes[len - 6..len - 2].copy_from_slice(&u32::MAX.wrapping_sub(1).to_le_bytes());
        assert!(member_from_whole(&bytes, "pkg.whl").is_err());
        assert_eq!(parse_content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(parse_content_range_start("bytes */200"), None);
    }
}
