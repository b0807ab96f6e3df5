//! Issue 41 items 2 and 6: what a hostile upstream can make the proxy read and hold. A
//! Range-ignoring upstream answering 256 MiB is read no further than a few megabytes (counted
//! by what its socket took, and by the process's peak memory); concurrent requests for one
//! derived wheel share one plan; a `METADATA` over the 8 MiB limit of core metadata, or one its
//! central directory understates, is refused with its reason, never truncated; and binding
//! refuses a 100 MB `.metadata` before storing it, saying why in `/explain/`.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wheelgate_files::cache::FileCache;
use wheelgate_files::derive::{Change, Derivations};
use wheelgate_files::wheel_metadata::read_wheel_metadata;
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};

use super::fake_upstream::Fake;
use super::proxy_under_test::{get, start, text};
use super::rogue_upstream::{Answer, Rogue, sha256};

const LIMIT: usize = 8 * 1024 * 1024;
const HOSTILE: u64 = 256 * 1024 * 1024;

/// The process's peak resident memory so far (`VmHWM`), in bytes. nextest runs each test in a
/// process of its own, so the growth over a test is the test's.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// The count once it has not moved for half a second (15 s at most).
async fn settled(count: &AtomicU64) -> u64 {
    let mut last = count.load(Ordering::SeqCst);
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = count.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

fn client() -> UpstreamClient {
    UpstreamClient::new(&ClientSettings::default()).unwrap()
}

/// A wheel whose `METADATA` is `metadata` (deflated when `deflate`), beside a module and a
/// `RECORD`; written by hand, as the zip crate here has no deflate.
fn wheel(metadata: &[u8], deflate: bool) -> Vec<u8> {
    let members: [(&str, Vec<u8>, bool); 3] = [
        ("xpkg/__init__.py", b"VALUE = 1\n".repeat(5000), false),
        ("xpkg-1.0.dist-info/METADATA", metadata.to_vec(), deflate),
        (
            "xpkg-1.0.dist-info/RECORD",
            b"xpkg/__init__.py,,\nxpkg-1.0.dist-info/METADATA,,\nxpkg-1.0.dist-info/RECORD,,\n"
                .to_vec(),
            false,
        ),
    ];
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, content, deflate) in &members {
        let (method, data) = if *deflate {
            let mut encoder =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(content).unwrap();
            (8u16, encoder.finish().unwrap())
        } else {
            (0u16, content.clone())
        };
        let offset = u32::try_from(out.len()).unwrap();
        let mut fields = Vec::new();
        fields.extend_from_slice(&method.to_le_bytes());
        fields.extend_from_slice(&[0, 0, 0, 0]); // time, date
        fields.extend_from_slice(&crc32fast::hash(content).to_le_bytes());
        fields.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
        fields.extend_from_slice(&u32::try_from(content.len()).unwrap().to_le_bytes());
        fields.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&[0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0]);
        out.extend_from_slice(&fields);
        out.extend_from_slice(&[0, 0]); // extra field
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&data);
        central.extend_from_slice(&[0x50, 0x4b, 0x01, 0x02, 20, 0, 20, 0, 0, 0]);
        central.extend_from_slice(&fields);
        central.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let directory_offset = u32::try_from(out.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 3, 0, 3, 0]);
    out.extend_from_slice(&u32::try_from(central.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// `bytes` with the sizes its central directory gives `METADATA` lowered by `by`: the
/// compressed size too when `compressed`.
fn understated(mut bytes: Vec<u8>, by: u32, compressed: bool) -> Vec<u8> {
    let name = b"xpkg-1.0.dist-info/METADATA";
    let at = (0..bytes.len() - 4)
        .filter(|&at| bytes[at..at + 4] == [0x50, 0x4b, 0x01, 0x02])
        .find(|&at| bytes[at + 46..].starts_with(name))
        .unwrap();
    let mut lower = |field: usize| {
        let value = u32::from_le_bytes(bytes[at + field..at + field + 4].try_into().unwrap());
        bytes[at + field..at + field + 4].copy_from_slice(&(value - by).to_le_bytes());
    };
    lower(24);
    if compressed {
        lower(20);
    }
    bytes
}

const METADATA: &[u8] = b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\nRequires-Dist: six\n\n";

#[tokio::test]
async fn an_upstream_that_ignores_range_is_read_no_further_than_a_few_megabytes() {
    let rogue = Rogue::start().await;
    let cache = tempfile::tempdir().unwrap();
    let files = FileCache::open(cache.path().to_path_buf(), u64::MAX).unwrap();
    let client = client();
    let before = peak_rss();
    for announce in [true, false] {
        // A `.metadata`-less wheel whose METADATA binding reads by ranges, then a derivation.
        let hits = rogue.hits("/f/xpkg-1.0-py3-none-any.whl");
        let sent = Arc::new(AtomicU64::new(0));
        rogue.set(
            "/f/xpkg-1.0-py3-none-any.whl",
            Answer::IgnoresRange {
                len: HOSTILE,
                announce,
                sent: Arc::clone(&sent),
            },
        );
        let url = rogue.url("/f/xpkg-1.0-py3-none-any.whl");
        let err = read_wheel_metadata(&client, (&url, None), "xpkg-1.0-py3-none-any.whl")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("does not honour range requests")
                && err.contains("larger than the 8388608 bytes read without ranges"),
            "{err}"
        );
        let spec = wheelgate_files::cache::FileSpec {
            url: url.clone(),
            sha256: Some("0".repeat(64)),
            size: None,
            splice: None,
            listed_on: None,
        };
        let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
        let err = Derivations::default()
            .get(
                (&client, &files),
                &spec,
                "xpkg-1.0-py3-none-any.whl",
                &change,
            )
            .await
            .unwrap_err();
        let err = wheelgate_index::error_chain::with_causes(&err);
        assert!(err.contains("does not honour range requests"), "{err}");
        // The upstream's writes have run into the closed connections.
        let sent = settled(&sent).await;
        eprintln!(
            "Content-Length {}: {sent} bytes of 2 x {HOSTILE} sent",
            if announce { "given" } else { "absent" }
        );
        // Two reads of at most the 8 MiB limit, and what the sockets' buffers took.
        assert!(sent < 40 * 1024 * 1024, "{sent} bytes sent");
        // One request each: a refusal is not retried.
        assert_eq!(rogue.hits("/f/xpkg-1.0-py3-none-any.whl") - hits, 2);
    }
    let grown = peak_rss().saturating_sub(before);
    eprintln!("peak RSS grew by {grown} bytes");
    assert!(grown < 64 * 1024 * 1024, "peak RSS grew by {grown} bytes");
    assert!(files.is_empty());
}

#[tokio::test]
async fn concurrent_requests_for_one_derivation_share_its_plan() {
    let fake = Fake::start().await;
    let spec = fake.add_file("/files/xpkg.whl", &wheel(METADATA, true));
    let cache = tempfile::tempdir().unwrap();
    let files = FileCache::open(cache.path().to_path_buf(), u64::MAX).unwrap();
    let client = client();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    let plan = |derivations: Arc<Derivations>| {
        let (client, files, spec, change) =
            (client.clone(), files.clone(), spec.clone(), change.clone());
        async move {
            derivations
                .get(
                    (&client, &files),
                    &spec,
                    "xpkg-1.0-py3-none-any.whl",
                    &change,
                )
                .await
                .unwrap()
        }
    };
    // One plan alone: its ranged reads.
    let one = plan(Arc::new(Derivations::default())).await;
    let alone = fake.hits("/files/xpkg.whl");
    let bytes_alone = fake.file_bytes_sent();
    assert!(alone >= 2, "{alone}");
    // Four at once, on tasks of their own, share one.
    let derivations = Arc::new(Derivations::default());
    let tasks: Vec<_> = (0..4)
        .map(|_| tokio::spawn(plan(Arc::clone(&derivations))))
        .collect();
    for task in tasks {
        let derivation = task.await.unwrap();
        assert_eq!(derivation.metadata, one.metadata);
        assert_eq!(derivation.spec, one.spec);
    }
    let four = fake.hits("/files/xpkg.whl") - alone;
    eprintln!(
        "one plan: {alone} reads, {bytes_alone} bytes; four concurrent requests: {four} reads, {} bytes",
        fake.file_bytes_sent() - bytes_alone
    );
    assert_eq!(four, alone);
}

#[tokio::test]
async fn a_metadata_member_over_the_limit_is_refused_before_it_is_read() {
    let fake = Fake::start().await;
    // 9 MiB of text deflates to kilobytes: only the central directory says how large it is.
    let mut large = METADATA.to_vec();
    large.extend(std::iter::repeat_n(b'a', 9 * 1024 * 1024));
    let spec = fake.add_file("/files/xpkg.whl", &wheel(&large, true));
    let cache = tempfile::tempdir().unwrap();
    let files = FileCache::open(cache.path().to_path_buf(), u64::MAX).unwrap();
    let client = client();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    let err = Derivations::default()
        .get(
            (&client, &files),
            &spec,
            "xpkg-1.0-py3-none-any.whl",
            &change,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "`xpkg-1.0.dist-info/METADATA` is {} bytes, over the limit of {LIMIT} bytes",
            large.len()
        )),
        "{err}"
    );
    let sent = fake.file_bytes_sent();
    eprintln!("derivation: {sent} bytes read");
    // The tail (the directory) only.
    assert!(sent <= 256 * 1024, "{sent}");
    // Binding's read of the same wheel by ranges says the same.
    let err = read_wheel_metadata(&client, (&spec.url, None), "xpkg-1.0-py3-none-any.whl")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "a METADATA member of {} bytes, over the {LIMIT}-byte limit of core metadata",
            large.len()
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_central_directory_that_understates_metadata_is_refused_not_truncated() {
    let client = client();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    let cases = [
        // Stored, both sizes lowered: the bytes read are a prefix; the CRC-32 tells.
        (
            understated(wheel(METADATA, false), 20, true),
            "does not match the CRC-32",
        ),
        // Deflated, its inflated size lowered: it inflates to more.
        (
            understated(wheel(METADATA, true), 20, false),
            "inflates to more than the",
        ),
        // Deflated, both lowered: the stream is cut.
        (understated(wheel(METADATA, true), 20, true), "cut short"),
    ];
    for (bytes, expected) in cases {
        let fake = Fake::start().await;
        let spec = fake.add_file("/files/xpkg.whl", &bytes);
        let cache = tempfile::tempdir().unwrap();
        let files = FileCache::open(cache.path().to_path_buf(), u64::MAX).unwrap();
        let err = Derivations::default()
            .get(
                (&client, &files),
                &spec,
                "xpkg-1.0-py3-none-any.whl",
                &change,
            )
            .await
            .map(|derivation| String::from_utf8_lossy(&derivation.metadata).into_owned())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`xpkg-1.0.dist-info/METADATA`") && err.contains(expected),
            "{expected}: {err}"
        );
    }
}

const TORCH: &str = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";
const XFORMERS: &str = "xformers-0.0.33+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";

#[tokio::test]
async fn binding_refuses_an_oversized_metadata_file_before_storing_it() {
    let rogue = Rogue::start().await;
    let torch = b"torch wheel".to_vec();
    let xformers = b"xformers wheel".to_vec();
    rogue.set(
        "/whl/torch/",
        Answer::Html(format!(
            "<html><body><a href=\"/f/{TORCH}#sha256={}\">{TORCH}</a></body></html>",
            sha256(&torch)
        )),
    );
    rogue.set(
        "/whl/xformers/",
        Answer::Html(format!(
            "<html><body><a href=\"/f/{XFORMERS}#sha256={}\" data-core-metadata=\"true\">{XFORMERS}</a></body></html>",
            sha256(&xformers)
        )),
    );
    let sent = Arc::new(AtomicU64::new(0));
    let metadata_path = format!("/f/{XFORMERS}.metadata");
    rogue.set(
        &metadata_path,
        Answer::IgnoresRange {
            len: 100 * 1024 * 1024,
            announce: true,
            sent: Arc::clone(&sent),
        },
    );
    let proxy = start(&rogue, |config| {
        config.limits.upstream_attempt_secs = 10;
        config.limits.upstream_deadline_secs = 20;
    })
    .await;
    let (status, body, _) = get(&proxy.url("/simple/xformers/")).await;
    let page = text(&body);
    assert_eq!(status, 200, "{page}");
    let (status, body, _) = get(&proxy.url("/explain/xformers/?format=json")).await;
    let explain = text(&body);
    assert_eq!(status, 200, "{explain}");
    // Whatever went on after the answers (a download left running) has ended.
    let sent = settled(&sent).await;
    let hits = rogue.hits(&metadata_path);
    eprintln!(
        "{hits} requests for the 100 MiB `.metadata`, {sent} bytes sent, {} files and {} bytes cached",
        proxy.state.files.len(),
        proxy.state.files.total_bytes()
    );
    let note = explain
        .lines()
        .find(|line| line.contains("metadata cannot be read"))
        .unwrap_or_default();
    eprintln!("{}", note.trim());
    // Refused with its reason, where the explanation shows it.
    assert!(
        explain.contains("is larger than the 8388608 bytes it may be"),
        "{explain}"
    );
    // Nothing stored, and nothing like its body read.
    assert_eq!(proxy.state.files.total_bytes(), 0);
    assert!(proxy.state.files.is_empty());
    assert!(sent < 32 * 1024 * 1024, "{sent} bytes sent");
    // Once per page request at most (the page, then its explanation).
    assert!(hits <= 2, "{hits}");
}
