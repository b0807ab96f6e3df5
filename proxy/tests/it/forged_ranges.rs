//! A derived wheel is made only from verified bytes (issue 41 item 1): a host that answers
//! plain GETs honestly but ranged reads from a forged wheel of the same layout (its METADATA
//! adding `Requires-Dist: evildep`) gets no derived file served whole and nothing kept, though
//! the file itself verifies against its page's sha256. Facts read by ranges for selection (a
//! binding pin) are checked the same way once the verified bytes pass, and forgotten when they
//! differ.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use wheelgate_files::cache::{FileCache, FileCacheError, FileSpec};
use wheelgate_files::derive::{Change, Derivations};
use wheelgate_files::wheel_metadata::read_wheel_metadata_by_ranges;
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};

const WHEEL: &str = "xpkg-1.0-py3-none-any.whl";

/// A stored wheel whose METADATA requires `dependency` (every candidate the same length, so
/// the honest and the forged wheel share one layout).
fn wheel(dependency: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("xpkg/__init__.py", stored).unwrap();
    zip.write_all(&b"VALUE = 1\n".repeat(5000)).unwrap();
    zip.start_file("xpkg-1.0.dist-info/METADATA", stored)
        .unwrap();
    write!(
        zip,
        "Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\nRequires-Dist: {dependency}\n\n"
    )
    .unwrap();
    zip.start_file("xpkg-1.0.dist-info/RECORD", stored).unwrap();
    zip.write_all(b"xpkg/__init__.py,,\nxpkg-1.0.dist-info/METADATA,,\n")
        .unwrap();
    zip.finish().unwrap().into_inner()
}

#[derive(Clone)]
struct TwoFaced {
    honest: Bytes,
    forged: Bytes,
}

/// Plain GETs get the honest wheel; a `Range` is answered from the forged one.
async fn two_faced(State(files): State<TwoFaced>, headers: HeaderMap) -> Response {
    let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return files.honest.into_response();
    };
    let len = files.forged.len() as u64;
    let spec = range.trim_start_matches("bytes=");
    let (start, end) = match spec.split_once('-') {
        Some(("", suffix)) => (len - suffix.parse::<u64>().unwrap().min(len), len - 1),
        Some((from, "")) => (from.parse().unwrap(), len - 1),
        Some((from, to)) => (
            from.parse().unwrap(),
            to.parse::<u64>().unwrap().min(len - 1),
        ),
        None => return StatusCode::BAD_REQUEST.into_response(),
    };
    let body = files
        .forged
        .slice(usize::try_from(start).unwrap()..=usize::try_from(end).unwrap());
    (
        StatusCode::PARTIAL_CONTENT,
        [(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"))],
        body,
    )
        .into_response()
}

/// A server of `honest` to plain GETs and of `forged` to ranged ones; the wheel's spec.
async fn serve_two_faced(honest: Bytes, forged: Bytes) -> FileSpec {
    let router = Router::new().fallback(two_faced).with_state(TwoFaced {
        honest: honest.clone(),
        forged,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    FileSpec {
        url: format!("http://{addr}/files/{WHEEL}"),
        sha256: Some(hex::encode(Sha256::digest(&honest))),
        size: Some(honest.len() as u64),
        splice: None,
        listed_on: None,
    }
}

/// Downloads `spec`'s file through `files` to its end.
async fn download(files: &FileCache, client: &UpstreamClient, spec: &FileSpec) {
    let file = files.fetch(client, spec, false).await.unwrap();
    let mut stream = std::pin::pin!(file.stream(0, None));
    while let Some(chunk) = stream.next().await {
        chunk.unwrap();
    }
}

/// Reads the wheel's METADATA by ranges and has its reads checked; returns the METADATA and a
/// count of the times the facts were forgotten.
async fn read_checked(
    files: &FileCache,
    client: &UpstreamClient,
    spec: &FileSpec,
) -> (String, Arc<AtomicUsize>) {
    let read = read_wheel_metadata_by_ranges(client, (&spec.url, None), WHEEL)
        .await
        .unwrap();
    let forgotten = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&forgotten);
    files.check_ranges(
        spec,
        read.reads,
        Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }),
    );
    (String::from_utf8(read.metadata).unwrap(), forgotten)
}

async fn settled(count: &AtomicUsize) -> usize {
    // A check against a file already held runs off the async threads.
    for _ in 0..100 {
        if count.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    count.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_read_from_forged_ranges_are_forgotten_once_the_verified_wheel_passes() {
    let honest = Bytes::from(wheel("aaaaaaa"));
    let spec = serve_two_faced(honest, Bytes::from(wheel("evildep"))).await;
    let dir = tempfile::tempdir().unwrap();
    let files = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = UpstreamClient::new(&ClientSettings::default()).unwrap();

    // Read before the cache holds the wheel: checked as its download passes.
    let (metadata, forgotten) = read_checked(&files, &client, &spec).await;
    assert!(metadata.contains("evildep"), "the test's forgery was read");
    assert_eq!(
        forgotten.load(Ordering::SeqCst),
        0,
        "nothing to check against yet"
    );
    download(&files, &client, &spec).await;
    assert_eq!(
        forgotten.load(Ordering::SeqCst),
        1,
        "forgotten as the verified bytes passed"
    );

    // Read while the cache holds it: checked against the cached copy at once.
    let (_, forgotten) = read_checked(&files, &client, &spec).await;
    assert_eq!(settled(&forgotten).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_read_from_honest_ranges_are_kept() {
    let honest = Bytes::from(wheel("aaaaaaa"));
    let spec = serve_two_faced(honest.clone(), honest).await;
    let dir = tempfile::tempdir().unwrap();
    let files = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = UpstreamClient::new(&ClientSettings::default()).unwrap();
    let (metadata, forgotten) = read_checked(&files, &client, &spec).await;
    assert!(metadata.contains("aaaaaaa"));
    download(&files, &client, &spec).await;
    let (_, again) = read_checked(&files, &client, &spec).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(forgotten.load(Ordering::SeqCst), 0);
    assert_eq!(again.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_derived_wheel_planned_from_forged_ranges_is_never_served_whole_nor_kept() {
    let honest = Bytes::from(wheel("aaaaaaa"));
    let forged = Bytes::from(wheel("evildep"));
    assert_eq!(honest.len(), forged.len(), "one layout");
    let router = Router::new().fallback(two_faced).with_state(TwoFaced {
        honest: honest.clone(),
        forged,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _server = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let spec = FileSpec {
        url: format!("http://{addr}/files/{WHEEL}"),
        sha256: Some(hex::encode(Sha256::digest(&honest))),
        size: Some(honest.len() as u64),
        splice: None,
        listed_on: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let files = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = UpstreamClient::new(&ClientSettings::default()).unwrap();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    let derivation = Derivations::default()
        .get((&client, &files), &spec, WHEEL, &change)
        .await
        .unwrap();
    // The plan could only read what the ranges gave.
    assert!(
        String::from_utf8_lossy(&derivation.metadata).contains("evildep"),
        "the test's forgery reached the plan"
    );

    let derived = files.fetch(&client, &derivation.spec, false).await;
    let failure = match derived {
        Err(err) => err,
        Ok(file) => {
            let mut stream = std::pin::pin!(file.stream(0, None));
            let mut received = 0;
            let mut failure = None;
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(bytes) => received += bytes.len() as u64,
                    Err(err) => {
                        failure = Some(err.to_string());
                        break;
                    }
                }
            }
            assert!(
                received < derivation.spec.splice.as_ref().unwrap().len,
                "the derived file was delivered whole ({received} bytes)"
            );
            let failure = failure.expect("the download failed");
            assert!(failure.contains("differ"), "{failure}");
            return assert!(!files.contains(&derivation.spec), "nothing is kept");
        }
    };
    assert!(
        matches!(failure.root(), FileCacheError::PlannedFromOtherBytes { .. }),
        "{failure}"
    );
    assert!(!files.contains(&derivation.spec), "nothing is kept");
}
