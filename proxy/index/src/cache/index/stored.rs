//! The stored form of an index page, in the cache directory and in the bucket: one line of
//! JSON saying what came with the page (its URL, content type, validators, fetch time and
//! body length), then the body exactly as the upstream sent it.
//!
//! The body is written as it is, neither escaped nor copied: a real-size page is 0.7 MB, and
//! serializing it inside a JSON string took a millisecond of CPU and twice its size in fresh
//! memory beside every cold request. The length in the header tells a complete copy from one
//! cut short. Reading also accepts the form earlier versions wrote (one JSON object with the
//! body inside, on one line), so their cache directories, mirrors and bucket objects still
//! serve; an earlier version reading this form ignores it as not a stored page and asks the
//! upstream. Files keep their `.json` names for the same reason.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A cached upstream page as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredPage {
    pub url: String,
    pub content_type: String,
    pub body: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub fetched_at_secs: u64,
    /// Where a redirect moved the page (`upstream::PageResponse::Fresh`'s `moved_to`): its
    /// links resolve against it. Absent in copies written before it was kept, and read as
    /// "not moved" (those resolved against `url`, as they were served then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
}

/// The first line of a stored page.
#[derive(Serialize, Deserialize)]
struct Header<'a> {
    /// This form's number: an unknown one is not read as a page.
    format: u32,
    #[serde(borrow)]
    url: Cow<'a, str>,
    #[serde(borrow)]
    content_type: Cow<'a, str>,
    #[serde(borrow)]
    etag: Option<Cow<'a, str>>,
    #[serde(borrow)]
    last_modified: Option<Cow<'a, str>>,
    fetched_at_secs: u64,
    body_bytes: u64,
    /// Unknown to earlier versions, which ignore it (serde skips unknown keys).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    moved_to: Option<Cow<'a, str>>,
}

const FORMAT: u32 = 2;

/// Why bytes are not a stored page.
#[derive(Debug, thiserror::Error)]
pub(super) enum StoredPageError {
    #[error("its first line is not a stored page's header: {0}")]
    Header(#[source] serde_json::Error),
    #[error("it is stored in form {0}, which this version does not read")]
    Format(u32),
    #[error("its body is {found} bytes where its header says {expected}: the copy was cut short")]
    Length { expected: u64, found: u64 },
    #[error("its body is not UTF-8")]
    NotUtf8,
    #[error("it is neither a stored page nor an earlier version's: {0}")]
    Legacy(#[source] serde_json::Error),
}

impl StoredPage {
    /// The header line, newline included.
    pub fn header(&self) -> Vec<u8> {
        let header = Header {
            format: FORMAT,
            url: Cow::Borrowed(&self.url),
            content_type: Cow::Borrowed(&self.content_type),
            etag: self.etag.as_deref().map(Cow::Borrowed),
            last_modified: self.last_modified.as_deref().map(Cow::Borrowed),
            fetched_at_secs: self.fetched_at_secs,
            body_bytes: self.body.len() as u64,
            moved_to: self.moved_to.as_deref().map(Cow::Borrowed),
        };
        let mut line = serde_json::to_vec(&header).expect("a header of strings serializes");
        line.push(b'\n');
        line
    }

    /// The whole stored form in one buffer (for the bucket).
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = self.header();
        let mut bytes = Vec::with_capacity(header.len() + self.body.len());
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(self.body.as_bytes());
        bytes
    }

    /// Reads a stored page, in this form or an earlier version's.
    pub fn from_bytes(bytes: &[u8]) -> Result<StoredPage, StoredPageError> {
        // An earlier version's JSON is one line: its body's line breaks are escaped inside it.
        let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
            return serde_json::from_slice(bytes).map_err(StoredPageError::Legacy);
        };
        let header: Header<'_> =
            serde_json::from_slice(&bytes[..end]).map_err(StoredPageError::Header)?;
        if header.format != FORMAT {
            return Err(StoredPageError::Format(header.format));
        }
        let body = &bytes[end + 1..];
        if body.len() as u64 != header.body_bytes {
            return Err(StoredPageError::Length {
                expected: header.body_bytes,
                found: body.len() as u64,
            });
        }
        let body = std::str::from_utf8(body).map_err(|_| StoredPageError::NotUtf8)?;
        Ok(StoredPage {
            url: header.url.into_owned(),
            content_type: header.content_type.into_owned(),
            body: body.to_owned(),
            etag: header.etag.map(Cow::into_owned),
            last_modified: header.last_modified.map(Cow::into_owned),
            fetched_at_secs: header.fetched_at_secs,
            moved_to: header.moved_to.map(Cow::into_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str) -> StoredPage {
        StoredPage {
            url: "https://download.pytorch.org/whl/torch/".to_owned(),
            content_type: "text/html".to_owned(),
            body: body.to_owned(),
            etag: Some("\"abc\"".to_owned()),
            last_modified: None,
            fetched_at_secs: 1_700_000_000,
            moved_to: None,
        }
    }

    const BODY: &str = "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n    <a href=\"/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=aa\">torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>\n  </body>\n</html>\n";

    #[test]
    fn round_trips_with_the_body_written_as_it_is() {
        let stored = page(BODY);
        let bytes = stored.to_bytes();
        assert!(bytes.ends_with(BODY.as_bytes()));
        assert_eq!(StoredPage::from_bytes(&bytes).unwrap(), stored);
        // An empty body too.
        let empty = page("");
        assert_eq!(StoredPage::from_bytes(&empty.to_bytes()).unwrap(), empty);
    }

    #[test]
    fn reads_what_earlier_versions_stored() {
        let stored = page(BODY);
        let legacy = serde_json::to_vec(&stored).unwrap();
        assert!(!legacy.contains(&b'\n'));
        assert_eq!(StoredPage::from_bytes(&legacy).unwrap(), stored);
    }

    #[test]
    fn a_copy_cut_short_or_garbage_is_not_a_page() {
        let bytes = page(BODY).to_bytes();
        for cut in [bytes.len() - 1, bytes.len() - BODY.len() + 3] {
            assert!(matches!(
                StoredPage::from_bytes(&bytes[..cut]),
                Err(StoredPageError::Length { .. })
            ));
        }
        // Cut inside the header: no line break left, and not an earlier version's JSON either.
        assert!(matches!(
            StoredPage::from_bytes(&bytes[..20]),
            Err(StoredPageError::Legacy(_))
        ));
        assert!(matches!(
            StoredPage::from_bytes(b"garbage\nmore"),
            Err(StoredPageError::Header(_))
        ));
        let mut later = bytes.clone();
        let at = later
            .windows(10)
            .position(|w| w == b"\"format\":2")
            .unwrap();
        later[at + 9] = b'7';
        assert!(matches!(
            StoredPage::from_bytes(&later),
            Err(StoredPageError::Format(7))
        ));
        let mut not_utf8 = bytes;
        let last = not_utf8.len() - 2;
        not_utf8[last] = 0xff;
        assert!(matches!(
            StoredPage::from_bytes(&not_utf8),
            Err(StoredPageError::NotUtf8)
        ));
    }
}
