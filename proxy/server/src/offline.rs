//! What an offline server offers: only files it can deliver. A mirrored store keeps upstream
//! pages as they were, links to files that were never mirrored included; offered as they are, an
//! installer may choose a version the store lacks and fail mid-install ("not cached and this
//! server is offline"). So offline, a page is reduced to the files in the file cache before
//! selection and rewriting (HTML and JSON alike), and a `.metadata` link is kept only when that
//! file is stored too (the installer then reads the stored wheel instead).

use std::borrow::Cow;

use tracing::debug;
use wheelgate_resolver::index::{CoreMetadata, ProjectPage};

use wheelgate_files::cache::{FileCache, FileSpec};

/// Why an offline page leaves a file out, for explanations and logs.
pub const NOT_MIRRORED: &str = "not mirrored: the store has no copy, and this server is offline";

/// A page reduced to what the store holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPage {
    pub page: ProjectPage,
    /// The files left out ([`NOT_MIRRORED`]).
    pub left_out: Vec<String>,
}

/// `upstream` (fetched from `page_url`) as an offline server offers it: only files whose copy
/// `files` holds, under the same key the file route derives from the page (URL and sha256).
pub fn stored_only(upstream: &ProjectPage, page_url: &str, files: &FileCache) -> StoredPage {
    let mut page = upstream.clone();
    let mut left_out = Vec::new();
    page.files.retain_mut(|file| {
        let url = upstream.file_url(file, page_url);
        let spec = FileSpec {
            url: url.clone(),
            sha256: file.sha256().map(str::to_ascii_lowercase),
            size: file.size,
            splice: None,
            listed_on: None,
        };
        if !files.contains(&spec) {
            left_out.push(file.filename.clone());
            return false;
        }
        let metadata_sha256 = match &file.core_metadata {
            CoreMetadata::Absent => return true,
            CoreMetadata::Present => None,
            CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
        };
        let metadata = FileSpec {
            url: format!("{url}.metadata"),
            sha256: metadata_sha256,
            size: None,
            splice: None,
            listed_on: None,
        };
        if !files.contains(&metadata) {
            file.core_metadata = CoreMetadata::Absent;
        }
        true
    });
    if !left_out.is_empty() {
        debug!(page = %wheelgate_index::upstream::redact(page_url), left_out = left_out.len(), reason = NOT_MIRRORED, "offline page reduced to stored files");
        // The page's own `versions` (PEP 700) lose the versions whose every file is left out;
        // versions that never had a file stay, as the upstream listed them.
        let versions_of = |files: &[wheelgate_resolver::index::IndexFile]| {
            files
                .iter()
                .filter_map(|f| {
                    f.filename
                        .parse::<wheelgate_resolver::filename::DistFilename>()
                        .ok()
                })
                .map(|parsed| parsed.version().clone().without_local())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (listed, stored) = (versions_of(&upstream.files), versions_of(&page.files));
        page.versions.retain(|text| {
            text.parse::<pep440_rs::Version>()
                .map_or(true, |v| !listed.contains(&v) || stored.contains(&v))
        });
    }
    StoredPage { page, left_out }
}

/// The page to rewrite (fetched from `page_url`, or merged with absolute links): reduced to
/// stored files when `offline`, else as it is.
pub fn offered<'a>(
    page: &'a ProjectPage,
    page_url: &str,
    files: &FileCache,
    offline: bool,
) -> Cow<'a, ProjectPage> {
    if offline {
        Cow::Owned(stored_only(page, page_url, files).page)
    } else {
        Cow::Borrowed(page)
    }
}

#[cfg(test)]
mod tests {
    use wheelgate_resolver::index::parse_project_html;

    use super::*;
    use wheelgate_index::upstream::{ClientSettings, UpstreamClient};

    // Two torch builds as download.pytorch.org lists them, one with PEP 658 metadata.
    const PAGE: &str = r#"<!DOCTYPE html><html><body>
<a href="/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=HASH1" data-core-metadata="sha256=HASH2">torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=HASH3" data-core-metadata="sha256=HASH4">torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
</body></html>"#;

    fn sha256(bytes: &[u8]) -> String {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(bytes))
    }

    /// A file upstream at `path`, served once by a one-shot fake so the cache can store it.
    async fn store(files: &FileCache, url: String, body: &'static [u8]) {
        let spec = FileSpec {
            url,
            sha256: Some(sha256(body)),
            size: None,
            splice: None,
            listed_on: None,
        };
        let client = UpstreamClient::new(&ClientSettings::default()).unwrap();
        let cached = files.fetch(&client, &spec, false).await.unwrap();
        let _: Vec<bytes::Bytes> = futures_util::TryStreamExt::try_collect(cached.stream(0, None))
            .await
            .unwrap();
        assert!(files.contains(&spec));
    }

    #[tokio::test]
    async fn only_stored_files_and_metadata_are_offered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route(
                "/whl/cpu/{file}",
                axum::routing::get(|| async { &b"cpu wheel"[..] }),
            )
            .route(
                "/whl/cu130/{file}",
                axum::routing::get(|| async { &b"cuda wheel"[..] }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });

        let html = PAGE
            .replace("HASH1", &sha256(b"cuda wheel"))
            .replace("HASH2", &sha256(b"cuda metadata"))
            .replace("HASH3", &sha256(b"cpu wheel"))
            .replace("HASH4", &sha256(b"cpu metadata"));
        let page = parse_project_html(&html).unwrap();
        let page_url = format!("{base}/whl/torch/");
        let dir = tempfile::tempdir().unwrap();
        let files = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();

        // Nothing stored: nothing offered.
        let offered = stored_only(&page, &page_url, &files);
        assert!(offered.page.files.is_empty());
        assert_eq!(offered.left_out.len(), 2);

        // The CPU wheel stored, not its metadata: offered, without a metadata link.
        let cpu = &page.files[1];
        store(&files, page.file_url(cpu, &page_url), b"cpu wheel").await;
        let offered = stored_only(&page, &page_url, &files);
        assert_eq!(offered.page.files.len(), 1);
        assert_eq!(offered.page.files[0].filename, cpu.filename);
        assert_eq!(offered.page.files[0].core_metadata, CoreMetadata::Absent);
        assert_eq!(
            offered.left_out,
            ["torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"]
        );
    }
}
