//! PEP 658 metadata for every wheel whose upstream offers none (issue 40 item 5): listed on the
//! page, read from the wheel once the file cache verified it, kept, and served again without
//! the upstream; never from bytes that did not verify.

use std::io::Write as _;

use super::proxy_under_test::{client, get, logs, start, text};
use super::rogue_upstream::{Answer, Rogue, sha256};

const WHEEL: &str = "demo-1.0-py3-none-any.whl";
const METADATA: &[u8] =
    b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: six>=1.16\n\nA demo.\n";

/// A real wheel: a module of some size, METADATA and RECORD (stored: the test's zip writer
/// has no deflate; the reader's inflating is tested beside it).
fn wheel(metadata: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("demo/__init__.py", stored).unwrap();
    zip.write_all(&b"VALUE = 1\n".repeat(20_000)).unwrap();
    zip.start_file("demo-1.0.dist-info/METADATA", stored)
        .unwrap();
    zip.write_all(metadata).unwrap();
    zip.start_file("demo-1.0.dist-info/RECORD", stored).unwrap();
    zip.write_all(b"demo/__init__.py,,\n").unwrap();
    zip.finish().unwrap().into_inner()
}

/// A registry page for `demo` without `core-metadata`: the wheel (listed with `sha256`), an
/// sdist, and a wheel without a hash.
fn page(bytes: &[u8]) -> String {
    let (sha, size) = (sha256(bytes), bytes.len());
    format!(
        r#"{{"meta":{{"api-version":"1.1","_last-serial":"7"}},"name":"demo","versions":["1.0"],"files":[
        {{"filename":"{WHEEL}","url":"/f/{WHEEL}","hashes":{{"sha256":"{sha}"}},"size":{size}}},
        {{"filename":"demo-1.0.tar.gz","url":"/f/demo-1.0.tar.gz","hashes":{{"sha256":"{sha}"}},"size":1}},
        {{"filename":"demo-1.0-py2-none-any.whl","url":"/f/demo-1.0-py2-none-any.whl","hashes":{{}},"size":1}}]}}"#
    )
}

async fn json_page(url: &str) -> serde_json::Value {
    let body = client()
        .get(url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str(&body).unwrap_or_else(|err| panic!("{err}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verifiable_wheel_is_listed_with_metadata_read_once_from_the_verified_wheel() {
    logs();
    let bytes = wheel(METADATA);
    let rogue = Rogue::start().await;
    rogue.set("/simple/demo/", Answer::Json(page(&bytes)));
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(bytes.clone()));
    let proxy = start(&rogue, |_| {}).await;

    let page = json_page(&proxy.url("/simple/demo/")).await;
    let offered: Vec<(&str, &serde_json::Value)> = page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["filename"].as_str().unwrap(), &f["core-metadata"]))
        .collect();
    assert_eq!(
        offered,
        [
            (WHEEL, &serde_json::Value::Bool(true)),
            // An sdist has no METADATA to give, a wheel without a hash cannot be verified.
            ("demo-1.0.tar.gz", &serde_json::Value::Null),
            ("demo-1.0-py2-none-any.whl", &serde_json::Value::Null),
        ]
    );
    let (_, html, _) = get(&proxy.url("/simple/demo/")).await;
    assert_eq!(
        text(&html).matches("data-core-metadata=\"true\"").count(),
        1
    );

    let metadata_url = proxy.url(&format!("/files/demo/{WHEEL}.metadata"));
    for _ in 0..3 {
        let (status, body, _) = get(&metadata_url).await;
        assert_eq!(
            (status, body.as_slice()),
            (200, METADATA),
            "{}",
            text(&body)
        );
    }
    // The wheel once, whole: the bytes the metadata came from were verified.
    assert_eq!(rogue.hits(&format!("/f/{WHEEL}")), 1);
    let kept = proxy
        .cache
        .path()
        .join("metadata")
        .join(format!("{}.metadata", sha256(&bytes)));
    assert_eq!(std::fs::read(&kept).unwrap(), METADATA);
    // And the wheel itself still downloads whole, from the cache.
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL}"))).await;
    assert_eq!((status, body.len()), (200, bytes.len()));
    assert_eq!(rogue.hits(&format!("/f/{WHEEL}")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_metadata_is_served_with_the_upstream_and_the_wheel_gone() {
    logs();
    let bytes = wheel(METADATA);
    let rogue = Rogue::start().await;
    rogue.set("/simple/demo/", Answer::Json(page(&bytes)));
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(bytes.clone()));
    let proxy = start(&rogue, |_| {}).await;
    let metadata_url = proxy.url(&format!("/files/demo/{WHEEL}.metadata"));
    assert_eq!(get(&metadata_url).await.0, 200);
    // The wheel evicted from the file cache, the upstream's file gone: kilobytes kept serve.
    for entry in std::fs::read_dir(proxy.cache.path().join("files")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("sha256-")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    rogue.set(&format!("/f/{WHEEL}"), Answer::Status(500));
    let (status, body, _) = get(&metadata_url).await;
    assert_eq!((status, body.as_slice()), (200, METADATA));
}

/// A wheel whose bytes do not match the page's sha256 gives no metadata, and nothing is kept:
/// a host cannot make the proxy serve dependencies of a wheel it never published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wheel_that_does_not_verify_gives_no_metadata() {
    logs();
    let published = wheel(METADATA);
    let forged = wheel(
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: evildep\n\nA demo!\n",
    );
    let rogue = Rogue::start().await;
    rogue.set("/simple/demo/", Answer::Json(page(&published)));
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(forged));
    let proxy = start(&rogue, |_| {}).await;
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL}.metadata"))).await;
    let body = text(&body);
    assert_eq!(status, 502, "{body}");
    assert!(!body.contains("evildep"), "{body}");
    let kept = proxy.cache.path().join("metadata");
    assert_eq!(std::fs::read_dir(kept).unwrap().count(), 0);
}

/// A verified wheel without a METADATA member: a clear 502 naming the problem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_wheel_without_metadata_is_a_clear_error() {
    logs();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("demo/__init__.py", stored).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let rogue = Rogue::start().await;
    rogue.set("/simple/demo/", Answer::Json(page(&bytes)));
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(bytes));
    let proxy = start(&rogue, |_| {}).await;
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL}.metadata"))).await;
    assert_eq!(status, 502);
    assert!(
        text(&body).contains("no top-level `*.dist-info/METADATA` member"),
        "{}",
        text(&body)
    );
}
