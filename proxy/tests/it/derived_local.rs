//! A derived wheel of an upstream wheel the file cache already holds is planned and built from
//! that copy: no upstream request, and so offline too (an air-gapped store serves the derived
//! wheels its locks name).

use std::io::{Read as _, Write as _};

use bytes::Bytes;
use futures_util::TryStreamExt;
use wheelgate_files::cache::FileCache;
use wheelgate_files::derive::{Change, Derivations};
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};

use super::fake_upstream::Fake;

const WHEEL: &str = "xpkg-1.0-py3-none-any.whl";

/// A real wheel: a module, METADATA and RECORD.
fn wheel() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("xpkg/__init__.py", stored).unwrap();
    zip.write_all(&b"VALUE = 1\n".repeat(5000)).unwrap();
    zip.start_file("xpkg-1.0.dist-info/METADATA", stored)
        .unwrap();
    zip.write_all(b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\n\n")
        .unwrap();
    zip.start_file("xpkg-1.0.dist-info/RECORD", stored).unwrap();
    zip.write_all(
        b"xpkg/__init__.py,,\nxpkg-1.0.dist-info/METADATA,,\nxpkg-1.0.dist-info/RECORD,,\n",
    )
    .unwrap();
    zip.finish().unwrap().into_inner()
}

/// The wheel on a fake upstream, an empty file cache and a client.
struct Setup {
    fake: Fake,
    spec: wheelgate_files::cache::FileSpec,
    dir: tempfile::TempDir,
    files: FileCache,
    client: UpstreamClient,
}

impl Setup {
    async fn new() -> Setup {
        let fake = Fake::start().await;
        let spec = fake.add_file("/files/xpkg.whl", &wheel());
        let dir = tempfile::tempdir().unwrap();
        let files = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
        let client = UpstreamClient::new(&ClientSettings::default()).unwrap();
        Setup {
            fake,
            spec,
            dir,
            files,
            client,
        }
    }
}

#[tokio::test]
async fn a_cached_upstream_wheel_is_derived_from_disk_offline() {
    let Setup {
        fake,
        spec,
        dir,
        files,
        client,
    } = Setup::new().await;
    // The upstream wheel, cached once.
    let cached = files.fetch(&client, &spec, false).await.unwrap();
    let _: Vec<Bytes> = cached.stream(0, None).try_collect().await.unwrap();
    assert!(files.contains(&spec));
    let hits = fake.hits("/files/xpkg.whl");
    assert_eq!(hits, 1);

    let derivations = Derivations::default();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    let derivation = derivations
        .get((&client, &files), &spec, WHEEL, &change)
        .await
        .unwrap();
    assert!(derivation.changed);
    // Offline: built from the cached copy.
    let derived = files.fetch(&client, &derivation.spec, true).await.unwrap();
    let bytes: Vec<Bytes> = derived.stream(0, None).try_collect().await.unwrap();
    let bytes = bytes.concat();
    assert_eq!(fake.hits("/files/xpkg.whl"), hits, "no upstream request");

    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut metadata = String::new();
    zip.by_name("xpkg-1.0.dist-info/METADATA")
        .unwrap()
        .read_to_string(&mut metadata)
        .unwrap();
    assert!(
        metadata.contains("Requires-Dist: torch==2.9.*"),
        "{metadata}"
    );
    assert_eq!(metadata.as_bytes(), &derivation.metadata[..]);
    let mut module = Vec::new();
    zip.by_name("xpkg/__init__.py")
        .unwrap()
        .read_to_end(&mut module)
        .unwrap();
    assert_eq!(module, b"VALUE = 1\n".repeat(5000));
    // Its hash is known, and read back from disk by a cache opened afresh.
    let sha256 = files.derived_sha256(&derivation.spec).unwrap();
    drop(files);
    let reopened = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    assert_eq!(reopened.derived_sha256(&derivation.spec), None);
    assert_eq!(
        reopened.derived_sha256_committed(&derivation.spec).await,
        Some(sha256.clone())
    );

    // A server restarted over the cache: the first request for the derived file reads its
    // hash back, so its pages list it again.
    let restarted = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    assert_eq!(restarted.derived_sha256(&derivation.spec), None);
    restarted
        .fetch(&client, &derivation.spec, true)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while restarted.derived_sha256(&derivation.spec).is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hash was never read back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(restarted.derived_sha256(&derivation.spec), Some(sha256));
}

#[tokio::test]
async fn an_uncached_upstream_wheel_is_not_derived_offline() {
    // The upstream and the directory stay up until the test ends.
    let Setup {
        fake: _fake,
        spec,
        dir: _dir,
        files,
        client,
    } = Setup::new().await;
    let derivations = Derivations::default();
    let change = Change::AddRequirements(vec!["torch==2.9.*".to_string()]);
    // Planned by ranges upstream (online), but built offline from nothing: refused.
    let derivation = derivations
        .get((&client, &files), &spec, WHEEL, &change)
        .await
        .unwrap();
    let err = files
        .fetch(&client, &derivation.spec, true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not cached"), "{err}");
}
