//! Rendered index pages, gzip-compressed once and reused. pip and uv ask for gzip
//! (`Accept-Encoding: gzip, deflate`, `gzip, br`), and a real-size rewritten `/simple/torch/`
//! shrinks about 4×; serving the bigger body cost most of a warm request's CPU (the kernel
//! copying it into the socket). A page is compressed in the background when it is asked for
//! a second time: the cold request that rendered it neither waits for the compression nor
//! shares the CPU with it (a cold page is the latency that matters most), a page asked for
//! once is never compressed, and later requests get the compressed body.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use axum::http::HeaderValue;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;

use super::header_list::{elements, split_on, split_once_on};

/// Bodies smaller than this are sent as they are: gzip's header and the client's work would
/// cost about what the bytes saved are worth. A page with two or three links is already above
/// it, and gains about half.
const MIN_BODY: usize = 512;

/// One rendering's gzip form, made at most once and shared by every copy of the rendering.
#[derive(Default)]
pub struct Precompressed {
    gzip: OnceLock<Encoded>,
    /// Asked for with gzip before (the first ask only sets this).
    asked: AtomicBool,
    started: AtomicBool,
}

/// A compressed body and its own strong `ETag` (a different representation, so a different tag).
#[derive(Clone)]
pub struct Encoded {
    pub body: Bytes,
    pub etag: HeaderValue,
}

impl Precompressed {
    /// The gzip form when it is ready. Otherwise `None`, and, the second time, a background task
    /// starts making it from `body` (whose tag is `etag`); the caller sends `body` meanwhile.
    pub fn gzip_or_start(self: &Arc<Self>, body: &Bytes, etag: &HeaderValue) -> Option<Encoded> {
        if let Some(ready) = self.gzip.get() {
            return Some(ready.clone());
        }
        if body.len() < MIN_BODY
            || !self.asked.swap(true, Ordering::AcqRel)
            || self.started.swap(true, Ordering::AcqRel)
        {
            return None;
        }
        let this = Arc::clone(self);
        let (body, etag) = (body.clone(), etag.clone());
        tokio::task::spawn_blocking(move || {
            if let Some(encoded) = gzip(&body, &etag) {
                let _ = this.gzip.set(encoded);
            }
        });
        None
    }
}

/// `body` gzip-compressed (the default level: a real-size page takes a few milliseconds once),
/// tagged `"<identity tag>-gzip"`.
fn gzip(body: &[u8], etag: &HeaderValue) -> Option<Encoded> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::default());
    encoder.write_all(body).ok()?;
    let mut compressed = encoder.finish().ok()?;
    // Held as long as the page is: no more than its length (the buffer may have doubled).
    compressed.shrink_to_fit();
    let tag = etag.to_str().ok()?.strip_suffix('"')?;
    let etag = HeaderValue::from_str(&format!("{tag}-gzip\"")).ok()?;
    Some(Encoded {
        body: Bytes::from(compressed),
        etag,
    })
}

// A real example of this parser's input, pip's (requests') header: `gzip, deflate`; uv sends
// `gzip, br`.
/// Whether an `Accept-Encoding` value admits gzip (RFC 9110 §12.5.3): `gzip` or `x-gzip` with a
/// non-zero quality, or `*` with a non-zero quality when gzip is not refused by name.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(value) = accept_encoding else {
        return false;
    };
    let mut named = None;
    let mut wildcard = None;
    for item in elements(value) {
        let mut parts = split_on(item, b';');
        let coding = parts.next().unwrap_or_default().trim();
        let quality = parts
            .filter_map(|param| split_once_on(param, b'='))
            .find(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, q)| q.trim().parse::<f32>().unwrap_or(0.0));
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            named = Some(quality > 0.0);
        } else if coding == "*" {
            wildcard = Some(quality > 0.0);
        }
    }
    named.or(wildcard).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read as _;

    #[test]
    fn what_installers_send_admits_gzip() {
        assert!(accepts_gzip(Some("gzip, deflate")));
        assert!(accepts_gzip(Some("gzip, br")));
        assert!(accepts_gzip(Some("br;q=1.0, GZIP;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(None));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("gzip;q=0, *")));
        assert!(!accepts_gzip(Some("br, *;q=0")));
        assert!(!accepts_gzip(Some("gzip;q=garbage")));
    }

    #[tokio::test]
    async fn compressed_once_in_the_background_then_served() {
        let body = Bytes::from("<a href=\"x\">torch-2.9.0</a>\n".repeat(200));
        let etag = HeaderValue::from_static("\"abc\"");
        let cell = Arc::new(Precompressed::default());
        assert!(cell.gzip_or_start(&body, &etag).is_none(), "the first ask");
        assert!(
            !cell.started.load(Ordering::Acquire),
            "the first ask starts nothing"
        );
        assert!(cell.gzip_or_start(&body, &etag).is_none(), "not ready yet");
        assert!(cell.started.load(Ordering::Acquire));
        let mut ready = None;
        for _ in 0..200 {
            ready = cell.gzip_or_start(&body, &etag);
            if ready.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let ready = ready.expect("compressed within a second");
        assert_eq!(ready.etag, "\"abc-gzip\"");
        assert!(ready.body.len() < body.len() / 4);
        let mut plain = Vec::new();
        GzDecoder::new(&ready.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, body);
    }

    #[test]
    fn small_bodies_are_not_compressed() {
        let cell = Arc::new(Precompressed::default());
        let body = Bytes::from_static(b"{}");
        for _ in 0..3 {
            assert!(
                cell.gzip_or_start(&body, &HeaderValue::from_static("\"x\""))
                    .is_none()
            );
        }
        assert!(!cell.started.load(Ordering::Acquire));
    }
}
