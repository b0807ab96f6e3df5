//! A wheel's `*.dist-info/METADATA` read with HTTP range requests, for pages that offer no PEP
//! 658 `.metadata` file (download.pytorch.org's older wheels): the zip's end (end of central
//! directory record and central directory), then the one member, so a 900 MB wheel costs a few
//! kilobytes. A server that ignores `Range` answers the whole file, which works too.

use std::io::Read as _;

use reqwest::header::{CONTENT_RANGE, HeaderMap, HeaderValue, RANGE};
use reqwest::{Method, StatusCode};

use tracing::debug;

use crate::upstream::{UpstreamClient, redact};

/// The tail fetched first: the end of central directory record (22 bytes plus a comment of at
/// most 64 KiB) and, for wheels of a few hundred files, the whole central directory.
const TAIL: u64 = 64 * 1024;
const EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
const CENTRAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
const LOCAL_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x03, 0x04];
/// The most a `METADATA` file may inflate to (real ones are a few KiB to a few hundred KiB).
const MAX_METADATA: u64 = 16 * 1024 * 1024;
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
}

/// The bytes of the wheel's top-level `*.dist-info/METADATA`.
pub async fn read_wheel_metadata(
    client: &UpstreamClient,
    url: &str,
    file: &str,
) -> Result<Vec<u8>, WheelMetadataError> {
    let zip_error = |problem: &str| WheelMetadataError::Zip {
        file: file.to_string(),
        problem: problem.to_string(),
    };
    let (tail, tail_start) = match get_range(client, url, &format!("bytes=-{TAIL}")).await? {
        Ranged::Whole(bytes) => {
            // The server sent everything: read the member straight from it.
            return member_from_whole(&bytes, file);
        }
        Ranged::Part { bytes, start } => (bytes, start),
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
        let range = format!(
            "bytes={}-{}",
            directory.offset,
            directory.offset + u64::from(directory.size) - 1
        );
        match get_range(client, url, &range).await? {
            Ranged::Whole(bytes) => return member_from_whole(&bytes, file),
            Ranged::Part { bytes, .. } => bytes,
        }
    };
    let entry = find_metadata_entry(&directory_bytes)
        .ok_or_else(|| zip_error("no top-level `*.dist-info/METADATA` member"))?;
    // The local header's name and extra field may differ in length from the central
    // directory's: read the fixed part first, then the data.
    let header = match get_range(
        client,
        url,
        &format!("bytes={}-{}", entry.local_offset, entry.local_offset + 29),
    )
    .await?
    {
        Ranged::Whole(bytes) => return member_from_whole(&bytes, file),
        Ranged::Part { bytes, .. } => bytes,
    };
    let data_offset = entry.local_offset
        + local_data_offset(&header).ok_or_else(|| zip_error("a bad local header"))?;
    let data = if entry.compressed_size == 0 {
        Vec::new()
    } else {
        let range = format!(
            "bytes={data_offset}-{}",
            data_offset + u64::from(entry.compressed_size) - 1
        );
        match get_range(client, url, &range).await? {
            Ranged::Whole(bytes) => return member_from_whole(&bytes, file),
            Ranged::Part { bytes, .. } => bytes,
        }
    };
    inflate(&data, &entry).map_err(|problem| zip_error(&problem))
}

pub(crate) enum Ranged {
    /// `206`: `bytes` start at `start`.
    Part { bytes: Vec<u8>, start: u64 },
    /// `200`: the whole file.
    Whole(Vec<u8>),
}

/// [`get_range_once`], tried again after a connection error or a 5xx answer (the client's
/// `send` does not retry): at most [`RANGE_RETRIES`] more times, waiting a little longer each
/// time, as the client retries pages.
pub(crate) async fn get_range(
    client: &UpstreamClient,
    url: &str,
    range: &str,
) -> Result<Ranged, WheelMetadataError> {
    let mut attempt = 0;
    loop {
        // A stalling upstream costs each attempt the client's page deadline at most, not the
        // per-read timeout again for every chunk it drips.
        let once = tokio::time::timeout(client.deadline(), get_range_once(client, url, range))
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
            WheelMetadataError::Zip { .. } => false,
        }
    }
}

async fn get_range_once(
    client: &UpstreamClient,
    url: &str,
    range: &str,
) -> Result<Ranged, WheelMetadataError> {
    let request_error = |source| WheelMetadataError::Request {
        url: redact(url),
        source,
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        RANGE,
        HeaderValue::from_str(range).expect("a range of digits is a valid header value"),
    );
    // With the upstream's access: a private upstream wants its credentials on these too.
    let response = client
        .send(Method::GET, url, &headers)
        .await
        .map_err(request_error)?;
    let status = response.status();
    let start = response
        .headers()
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range_start);
    let bytes = match status {
        StatusCode::OK | StatusCode::PARTIAL_CONTENT => {
            response.bytes().await.map_err(request_error)?.to_vec()
        }
        status => {
            return Err(WheelMetadataError::Status {
                url: redact(url),
                status,
            });
        }
    };
    match (status, start) {
        (StatusCode::PARTIAL_CONTENT, Some(start)) => Ok(Ranged::Part { bytes, start }),
        _ => Ok(Ranged::Whole(bytes)),
    }
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
    if u64::from(entry.size) > MAX_METADATA {
        return Err(format!("a METADATA member of {} bytes", entry.size));
    }
    match entry.method {
        0 => Ok(data.to_vec()),
        8 => {
            let mut out = Vec::with_capacity(entry.size as usize);
            flate2::read::DeflateDecoder::new(data)
                .take(MAX_METADATA)
                .read_to_end(&mut out)
                .map_err(|err| format!("the METADATA member does not inflate ({err})"))?;
            Ok(out)
        }
        method => Err(format!(
            "compression method {method} (only stored and deflate are)"
        )),
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
                    let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99999/100000\r\nContent-Length: 100000\r\n\r\n";
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
        let client = UpstreamClient::new(&crate::upstream::ClientSettings {
            deadline: std::time::Duration::from_millis(600),
            ..crate::upstream::ClientSettings::default()
        })
        .unwrap();
        let started = std::time::Instant::now();
        let err = read_wheel_metadata(&client, &url, "pkg.whl")
            .await
            .unwrap_err();
        assert!(matches!(err, WheelMetadataError::Timeout { .. }), "{err:?}");
        // Three attempts of 0.6 s and the backoff between them; without the deadline, the
        // drip would go on for 100,000 × 0.2 s.
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
        let client = UpstreamClient::new(&crate::upstream::ClientSettings::default()).unwrap();
        let read = read_wheel_metadata(&client, &url, "pkg.whl").await.unwrap();
        assert_eq!(read, metadata);
        let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
        assert!(sent < size / 3, "{sent} of {size} bytes read");
        // A missing wheel is named with its status.
        let missing = url.replace("pkg.whl", "other.whl");
        let err = read_wheel_metadata(&client, &missing, "other.whl")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("404"), "{err}");
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
