//! `wheelgate mirror sync` (resolving dependencies) and `mirror lock` against an upstream that
//! misbehaves while the resolution reads it: malformed core metadata (PEP 658 files that are not
//! metadata, an invalid `Requires-Dist` or marker, a wrong sha256, nothing at all; a wheel that
//! is not a zip), pages that fail after the first ones were read (5xx, a reset connection, a
//! stall past the deadline), and pages that lie (a version without files, a yanked-only one, a
//! file whose bytes disagree with its hash).
//!
//! What an operator expects: a version with invalid metadata is skipped with a logged reason when
//! another satisfies the requirements (as pip and uv skip such a candidate); otherwise the sync
//! fails naming the project, the version and the upstream's host, after bounded retries; no
//! `mirror-complete.json`, no lock and no unverified file is left behind; and the same command
//! completes once the upstream heals.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions, SyncReport};

use super::rogue_upstream::{Answer, Rogue, sha256};

/// One version of a project as the rogue upstream publishes it.
struct Release {
    version: &'static str,
    /// The `.metadata` file served (`None`: the page offers none; read from the wheel).
    metadata: Option<Vec<u8>>,
    yanked: bool,
    /// The wheel is a real zip holding its `METADATA` (else bytes that are no zip).
    real_wheel: bool,
}

impl Release {
    /// A release whose PEP 658 file is valid metadata requiring `requires`.
    fn good(project: &str, version: &'static str, requires: &[&str]) -> Release {
        Release {
            version,
            metadata: Some(core_metadata(project, version, requires).into_bytes()),
            yanked: false,
            real_wheel: false,
        }
    }

    fn with_metadata(version: &'static str, metadata: &[u8]) -> Release {
        Release {
            version,
            metadata: Some(metadata.to_vec()),
            yanked: false,
            real_wheel: false,
        }
    }
}

fn core_metadata(project: &str, version: &str, requires: &[&str]) -> String {
    let mut text = format!("Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n");
    for requirement in requires {
        let _ = writeln!(text, "Requires-Dist: {requirement}");
    }
    text
}

fn wheel_name(project: &str, version: &str) -> String {
    format!("{project}-{version}-py3-none-any.whl")
}

/// A wheel's bytes (the sync checks them against the page's sha256, nothing more).
fn wheel_bytes(project: &str, version: &str) -> Vec<u8> {
    format!("wheel of {project} {version}").into_bytes()
}

/// A real wheel (a stored zip, crc unchecked by the ranged reader) holding only its `METADATA`.
fn zip_wheel(project: &str, version: &str) -> Vec<u8> {
    let name = format!("{project}-{version}.dist-info/METADATA");
    let data = core_metadata(project, version, &[]).into_bytes();
    let len = u32::try_from(data.len()).unwrap().to_le_bytes();
    let name_len = u16::try_from(name.len()).unwrap().to_le_bytes();
    // Local header: signature, version, flags, method 0 (stored), time, date, crc.
    let mut out = vec![
        0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    out.extend_from_slice(&len);
    out.extend_from_slice(&len);
    out.extend_from_slice(&name_len);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&data);
    let directory_offset = u32::try_from(out.len()).unwrap();
    let mut central = vec![
        0x50, 0x4b, 0x01, 0x02, 20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    central.extend_from_slice(&len);
    central.extend_from_slice(&len);
    central.extend_from_slice(&name_len);
    central.extend_from_slice(&[0; 12]);
    central.extend_from_slice(&0u32.to_le_bytes());
    central.extend_from_slice(name.as_bytes());
    let directory_size = u32::try_from(central.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 1, 0, 1, 0]);
    out.extend_from_slice(&directory_size.to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// The rogue upstream as the general (PyPI) upstream: pages under `/simple/`, files under `/f/`.
struct Index {
    rogue: Rogue,
}

impl Index {
    async fn start() -> Index {
        Index {
            rogue: Rogue::start().await,
        }
    }

    fn page_path(project: &str) -> String {
        format!("/simple/{project}/")
    }

    fn file_path(project: &str, version: &str) -> String {
        format!("/f/{}", wheel_name(project, version))
    }

    fn metadata_path(project: &str, version: &str) -> String {
        format!("{}.metadata", Index::file_path(project, version))
    }

    /// Publishes `project`'s page (PEP 503 HTML with PEP 658 and PEP 592 attributes), its
    /// wheels and their `.metadata` files, each hash the true one.
    fn publish(&self, project: &str, releases: &[Release]) {
        let mut links = String::new();
        for release in releases {
            let name = wheel_name(project, release.version);
            let bytes = if release.real_wheel {
                zip_wheel(project, release.version)
            } else {
                wheel_bytes(project, release.version)
            };
            let mut attributes = String::new();
            if let Some(metadata) = &release.metadata {
                let hash = sha256(metadata);
                let _ = write!(
                    attributes,
                    " data-dist-info-metadata=\"sha256={hash}\" data-core-metadata=\"sha256={hash}\""
                );
                self.rogue.set(
                    &Index::metadata_path(project, release.version),
                    Answer::File(metadata.clone()),
                );
            }
            if release.yanked {
                attributes.push_str(" data-yanked=\"broken\"");
            }
            let _ = writeln!(
                links,
                "<a href=\"/f/{name}#sha256={}\"{attributes}>{name}</a><br/>",
                sha256(&bytes)
            );
            self.rogue.set(
                &Index::file_path(project, release.version),
                Answer::File(bytes),
            );
        }
        self.rogue.set(
            &Index::page_path(project),
            Answer::Html(format!(
                "<!DOCTYPE html>\n<html><body>\n<h1>Links for {project}</h1>\n{links}</body></html>\n"
            )),
        );
    }

    /// `app 1.0` requiring `dep`, and `dep`'s releases.
    fn publish_app_and(&self, dep: &[Release]) {
        self.publish("app", &[Release::good("app", "1.0", &["dep"])]);
        self.publish("dep", dep);
    }

    /// `host:port`, as errors name the upstream.
    fn host(&self) -> String {
        self.rogue.addr.to_string()
    }

    /// A mirror of `app` with its dependencies, for Python 3.12 on one platform.
    fn config(&self) -> MirrorConfig {
        Index::config_at(&self.rogue.url("/simple"))
    }

    /// The same, with the index at `pypi_url`.
    fn config_at(pypi_url: &str) -> MirrorConfig {
        let text = format!(
            "pypi_url = \"{pypi_url}\"\npytorch_url = \"http://127.0.0.1:9/whl\"\npython = [\"3.12\"]\nplatforms = [\"linux-x86_64\"]\n\n[[package]]\nname = \"app\"\n"
        );
        MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap()
    }
}

fn options(store: &Path) -> SyncOptions {
    SyncOptions {
        store: store.to_path_buf(),
        jobs: 2,
    }
}

/// The version of `project` the (single) environment resolved.
fn resolved(report: &SyncReport, project: &str) -> String {
    let [resolution] = report.plan.resolutions.as_slice() else {
        panic!("one environment: {:?}", report.plan.resolutions.len());
    };
    resolution
        .packages
        .iter()
        .find(|p| p.project == project)
        .map_or_else(
            || panic!("`{project}` not resolved"),
            |p| p.version.to_string(),
        )
}

/// Every file under the store's `files/`, committed or not.
fn store_files(store: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(store.join("files")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect()
}

/// Nothing of a failed sync looks complete: no marker, no lock.
fn assert_not_complete(store: &Path) {
    assert!(!store.join(mirror::MARKER).exists(), "a marker was left");
    assert!(!store.join("locks").exists(), "locks were left");
}

/// A sync that must fail while resolving: its error, whole, on one line.
async fn failed_sync(config: &MirrorConfig, store: &Path) -> String {
    match mirror::sync(config, &options(store), &NoProgress).await {
        Ok(report) => panic!(
            "the sync succeeded: complete {}, failures {:?}",
            report.is_complete(),
            report.failures
        ),
        Err(err) => format!(
            "{err}: {}",
            wheelgate_index::error_chain::source_chain(&err)
        ),
    }
}

async fn complete_sync(config: &MirrorConfig, store: &Path) -> SyncReport {
    let report = mirror::sync(config, &options(store), &NoProgress)
        .await
        .unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    assert!(store.join(mirror::MARKER).is_file());
    report
}

/// The metadata a `dep` release must not be resolved from, by what is wrong with it.
fn malformed_metadata() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("not RFC 822", b"<html><body>Not Found</body></html>\n".to_vec()),
        ("empty", Vec::new()),
        (
            "an invalid Requires-Dist",
            b"Metadata-Version: 2.1\nName: dep\nVersion: 2.0\nRequires-Dist: six (>=)\n".to_vec(),
        ),
        (
            "a marker that cannot be evaluated",
            b"Metadata-Version: 2.1\nName: dep\nVersion: 2.0\nRequires-Dist: six; python_version >>> '3'\n"
                .to_vec(),
        ),
        (
            "an unknown marker variable",
            b"Metadata-Version: 2.1\nName: dep\nVersion: 2.0\nRequires-Dist: six; gpu_vendor == 'nvidia'\n"
                .to_vec(),
        ),
        ("not UTF-8", vec![0xff, 0xfe, 0x00, 0x41]),
        // Valid headers, then a body past the 8 MiB a core metadata file may weigh: refused
        // without being held in memory (a 300 MB one once took the mirror to 630 MB).
        ("larger than core metadata may be", {
            let mut huge = b"Metadata-Version: 2.1\nName: dep\nVersion: 2.0\n\n".to_vec();
            huge.resize(9 * 1024 * 1024, b'x');
            huge
        }),
    ]
}

#[tokio::test]
async fn a_version_with_malformed_metadata_is_skipped_for_one_that_satisfies() {
    for (what, metadata) in malformed_metadata() {
        let index = Index::start().await;
        index.publish_app_and(&[
            Release::good("dep", "1.0", &[]),
            Release::with_metadata("2.0", &metadata),
        ]);
        let store = tempfile::tempdir().unwrap();
        let report = complete_sync(&index.config(), store.path()).await;
        assert_eq!(resolved(&report, "dep"), "1.0", "{what}");
        assert_eq!(
            index.rogue.hits(&Index::file_path("dep", "2.0")),
            0,
            "{what}: the skipped version was downloaded"
        );
        assert_eq!(
            index.rogue.hits(&Index::file_path("dep", "1.0")),
            1,
            "{what}"
        );
        // The lock takes the same choice.
        let out = tempfile::tempdir().unwrap();
        let (_, written) = mirror::lock(&index.config(), out.path()).await.unwrap();
        let lock = std::fs::read_to_string(&written[0]).unwrap();
        assert!(lock.contains(&wheel_name("dep", "1.0")), "{what}: {lock}");
        assert!(!lock.contains(&wheel_name("dep", "2.0")), "{what}: {lock}");
    }
}

#[tokio::test]
async fn a_wheel_whose_metadata_is_garbage_is_skipped_read_by_ranges() {
    let index = Index::start().await;
    index.publish_app_and(&[
        Release::good("dep", "1.0", &[]),
        // No PEP 658 file: the wheel itself is read, and it is no zip.
        Release {
            version: "2.0",
            metadata: None,
            yanked: false,
            real_wheel: false,
        },
    ]);
    let store = tempfile::tempdir().unwrap();
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(resolved(&report, "dep"), "1.0");
    // Read once for its metadata (the server ignores `Range`), never downloaded into the store.
    assert_eq!(index.rogue.hits(&Index::file_path("dep", "2.0")), 1);
}

#[tokio::test]
async fn malformed_metadata_of_the_only_version_fails_naming_it() {
    for (what, metadata) in malformed_metadata() {
        let index = Index::start().await;
        index.publish_app_and(&[Release::with_metadata("2.0", &metadata)]);
        let store = tempfile::tempdir().unwrap();
        let message = failed_sync(&index.config(), store.path()).await;
        for needed in ["dep", "2.0", &index.host(), "invalid"] {
            assert!(message.contains(needed), "{what}: `{needed}` in {message}");
        }
        assert_not_complete(store.path());
        let out = tempfile::tempdir().unwrap();
        let Err(err) = mirror::lock(&index.config(), &out.path().join("locks")).await else {
            panic!("{what}: a lock was written");
        };
        assert!(err.to_string().contains("dep"), "{what}: {err}");
        assert!(!out.path().join("locks").exists(), "{what}");
    }
}

#[tokio::test]
async fn metadata_that_disagrees_with_its_hash_stops_the_sync_and_a_rerun_completes() {
    let index = Index::start().await;
    index.publish_app_and(&[
        Release::good("dep", "1.0", &[]),
        Release::good("dep", "2.0", &[]),
    ]);
    // The page's hash is of the true metadata; the file served is another.
    let lie = core_metadata("dep", "2.0", &["evil"]).into_bytes();
    index.rogue.set(
        &Index::metadata_path("dep", "2.0"),
        Answer::File(lie.clone()),
    );
    let store = tempfile::tempdir().unwrap();
    let message = failed_sync(&index.config(), store.path()).await;
    for needed in ["`dep` 2.0", &index.host(), "sha256"] {
        assert!(message.contains(needed), "`{needed}` in {message}");
    }
    assert!(!message.contains("evil"), "{message}");
    assert_not_complete(store.path());
    assert!(
        !store_files(store.path()).contains(&lie),
        "the lying metadata was stored"
    );

    // Healed: the same command completes, with the newest version.
    index.publish_app_and(&[
        Release::good("dep", "1.0", &[]),
        Release::good("dep", "2.0", &[]),
    ]);
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(resolved(&report, "dep"), "2.0");
}

#[tokio::test]
async fn a_page_failing_mid_resolution_fails_after_retries_and_a_rerun_completes() {
    for (what, answer) in [
        ("503", Answer::Status(503)),
        ("500", Answer::Status(500)),
        ("a reset connection", Answer::Close),
    ] {
        let index = Index::start().await;
        index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
        // `app`'s page and metadata are read, then `dep`'s page fails.
        index.rogue.set(&Index::page_path("dep"), answer);
        let store = tempfile::tempdir().unwrap();
        let message = failed_sync(&index.config(), store.path()).await;
        for needed in ["`dep`", &index.host()] {
            assert!(message.contains(needed), "{what}: `{needed}` in {message}");
        }
        assert_eq!(index.rogue.hits(&Index::page_path("app")), 1, "{what}");
        assert_eq!(
            index.rogue.hits(&Index::page_path("dep")),
            3,
            "{what}: one request and two retries"
        );
        assert_not_complete(store.path());
        let out = tempfile::tempdir().unwrap();
        assert!(
            mirror::lock(&index.config(), &out.path().join("locks"))
                .await
                .is_err(),
            "{what}"
        );
        assert!(!out.path().join("locks").exists(), "{what}");

        index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
        let report = complete_sync(&index.config(), store.path()).await;
        assert_eq!(resolved(&report, "dep"), "1.0", "{what}");
    }
}

#[tokio::test]
async fn a_metadata_file_failing_fails_the_sync_naming_the_version() {
    let index = Index::start().await;
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    index
        .rogue
        .set(&Index::metadata_path("dep", "1.0"), Answer::Status(503));
    let store = tempfile::tempdir().unwrap();
    let message = failed_sync(&index.config(), store.path()).await;
    for needed in ["`dep` 1.0", &index.host(), "503"] {
        assert!(message.contains(needed), "`{needed}` in {message}");
    }
    // Prefetched, then asked for by the solver: still one request and two retries in all.
    assert_eq!(
        index.rogue.hits(&Index::metadata_path("dep", "1.0")),
        3,
        "one request and two retries"
    );
    assert_not_complete(store.path());
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    complete_sync(&index.config(), store.path()).await;
}

#[tokio::test]
async fn a_page_stalling_past_the_deadline_fails_within_it() {
    let index = Index::start().await;
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    index.rogue.set(&Index::page_path("dep"), Answer::Stall);
    let store = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let message = failed_sync(&index.config(), store.path()).await;
    let took = started.elapsed();
    for needed in ["`dep`", &index.host(), "did not answer within"] {
        assert!(message.contains(needed), "`{needed}` in {message}");
    }
    // The client's deadline for a page over all its attempts (14 s), not minutes.
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_not_complete(store.path());
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    complete_sync(&index.config(), store.path()).await;
}

#[tokio::test]
async fn yanked_only_and_fileless_versions_are_not_chosen() {
    let index = Index::start().await;
    index.publish("app", &[Release::good("app", "1.0", &["dep"])]);
    // PEP 700 JSON: 4.0 is listed among the versions but has no file; 3.0 has only yanked ones.
    let file = |version: &str, yanked: bool| {
        let name = wheel_name("dep", version);
        let metadata = core_metadata("dep", version, &[]).into_bytes();
        index.rogue.set(
            &Index::file_path("dep", version),
            Answer::File(wheel_bytes("dep", version)),
        );
        index.rogue.set(
            &Index::metadata_path("dep", version),
            Answer::File(metadata.clone()),
        );
        format!(
            r#"{{"filename":"{name}","url":"/f/{name}","hashes":{{"sha256":"{}"}},"core-metadata":{{"sha256":"{}"}},"yanked":{yanked}}}"#,
            sha256(&wheel_bytes("dep", version)),
            sha256(&metadata)
        )
    };
    let files = [file("2.0", false), file("3.0", true)].join(",");
    index.rogue.set(
        &Index::page_path("dep"),
        Answer::Json(format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"dep","versions":["2.0","3.0","4.0"],"files":[{files}]}}"#
        )),
    );
    let store = tempfile::tempdir().unwrap();
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(resolved(&report, "dep"), "2.0");
    assert_eq!(index.rogue.hits(&Index::file_path("dep", "3.0")), 0);
}

#[tokio::test]
async fn a_file_whose_bytes_disagree_with_its_hash_fails_and_is_not_stored() {
    let index = Index::start().await;
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    let lie = b"not the wheel the page hashed".to_vec();
    index
        .rogue
        .set(&Index::file_path("dep", "1.0"), Answer::File(lie.clone()));
    let store = tempfile::tempdir().unwrap();
    let report = mirror::sync(&index.config(), &options(store.path()), &NoProgress)
        .await
        .unwrap();
    assert!(!report.is_complete());
    let [failure] = report.failures.as_slice() else {
        panic!("one failure: {:?}", report.failures);
    };
    assert_eq!(failure.what, wheel_name("dep", "1.0"));
    assert!(failure.message.contains("sha256"), "{}", failure.message);
    assert!(
        failure.message.contains(&index.host()),
        "{}",
        failure.message
    );
    assert_not_complete(store.path());
    assert!(
        !store_files(store.path()).contains(&lie),
        "the lie was stored"
    );

    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(
        report.downloaded, 1,
        "only the file that failed is fetched again"
    );
}

#[tokio::test]
async fn a_ranged_read_failing_is_retried_then_fails_naming_the_version() {
    // No PEP 658 file: the wheel's `METADATA` is read by ranges.
    let release = || Release {
        version: "1.0",
        metadata: None,
        yanked: false,
        real_wheel: true,
    };
    let index = Index::start().await;
    index.publish_app_and(&[release()]);
    let wheel = Index::file_path("dep", "1.0");
    index.rogue.set(&wheel, Answer::Status(503));
    let store = tempfile::tempdir().unwrap();
    let message = failed_sync(&index.config(), store.path()).await;
    for needed in ["`dep` 1.0", &index.host(), "503"] {
        assert!(message.contains(needed), "`{needed}` in {message}");
    }
    // Prefetched, then asked for by the solver: still one read and two retries in all.
    assert_eq!(index.rogue.hits(&wheel), 3, "one read and two retries");
    assert_not_complete(store.path());
    index.publish_app_and(&[release()]);
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(resolved(&report, "dep"), "1.0");
}

#[tokio::test]
async fn failures_never_repeat_credentials_of_the_index_url() {
    const SECRET: &str = "s3cret-pw-7f1";
    for (what, page, metadata) in [
        ("a page that fails", Some(Answer::Status(503)), None),
        ("a page reset", Some(Answer::Close), None),
        ("metadata that fails", None, Some(Answer::Status(503))),
        (
            "invalid metadata",
            None,
            Some(Answer::File(b"garbage".to_vec())),
        ),
    ] {
        let index = Index::start().await;
        index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
        if let Some(answer) = page {
            index.rogue.set(&Index::page_path("dep"), answer);
        }
        if let Some(answer) = metadata {
            index.rogue.set(&Index::metadata_path("dep", "1.0"), answer);
        }
        let url = format!("http://mirror:{SECRET}@{}/simple", index.host());
        let store = tempfile::tempdir().unwrap();
        let message = failed_sync(&Index::config_at(&url), store.path()).await;
        assert!(message.contains("`dep`"), "{what}: {message}");
        assert!(!message.contains(SECRET), "{what}: {message}");
        assert_not_complete(store.path());
    }
}

#[tokio::test]
async fn an_update_during_an_outage_is_not_marked_complete_with_old_pages() {
    let index = Index::start().await;
    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    let store = tempfile::tempdir().unwrap();
    complete_sync(&index.config(), store.path()).await;
    // Pages are stored with their fetch time to the second.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // The update cycle meets an outage of `dep`'s page: the index cache falls back on the
    // stored copy, so the plan can be made, but the store is not up to date.
    index
        .rogue
        .set(&Index::page_path("dep"), Answer::Status(503));
    let report = mirror::sync(&index.config(), &options(store.path()), &NoProgress)
        .await
        .unwrap();
    assert!(!report.is_complete());
    let [failure] = report.failures.as_slice() else {
        panic!("one failure: {:?}", report.failures);
    };
    assert!(failure.what.ends_with("/simple/dep/"), "{failure:?}");
    for needed in ["`dep`", &index.host(), "earlier sync"] {
        assert!(
            failure.message.contains(needed),
            "`{needed}` in {failure:?}"
        );
    }
    assert_not_complete(store.path());

    index.publish_app_and(&[Release::good("dep", "1.0", &[])]);
    let report = complete_sync(&index.config(), store.path()).await;
    assert_eq!(report.downloaded, 0, "every file was already there");
}

/// One writer per store (hardening, issue 20): a sync into a store another sync (or a server)
/// holds stops at once, naming the holder, and touches nothing; two syncs never both report a
/// complete store.
#[tokio::test]
async fn a_store_in_use_is_refused() {
    let store = tempfile::tempdir().unwrap();
    let held = wheelgate_index::cache::lock::CacheDirLock::acquire(
        store.path(),
        "running `wheelgate mirror sync`",
    )
    .unwrap();
    let config = Index::config_at("http://127.0.0.1:9/simple");
    let err = mirror::sync(&config, &options(store.path()), &NoProgress)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is in use by another wheelgate")
            && err.contains("running `wheelgate mirror sync`"),
        "{err}"
    );
    assert!(!store.path().join(mirror::MARKER).exists());
    drop(held);
}

/// A resolution that backtracks through many versions of one project (issue 20, item 8: 1,202
/// metadata files once took 57 s, read one after another) reads the older versions' metadata
/// ahead, many at once. `dep` 2.0 to 30.0 each require `other==2` where `app` pins `other==1`,
/// so the solver walks down to `dep` 1.0; each of those metadata files takes 300 ms to arrive.
/// One after another that is 8.7 s; read ahead, a few rounds of 300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backtracking_reads_older_versions_metadata_ahead() {
    let index = Index::start().await;
    index.publish("app", &[Release::good("app", "1.0", &["dep", "other==1"])]);
    index.publish(
        "other",
        &[
            Release::good("other", "1.0", &[]),
            Release::good("other", "2.0", &[]),
        ],
    );
    let versions: Vec<&'static str> = (1..=30)
        .map(|n| &*Box::leak(format!("{n}.0").into_boxed_str()))
        .collect();
    let releases: Vec<Release> = versions
        .iter()
        .map(|&v| {
            if v == "1.0" {
                Release::good("dep", v, &[])
            } else {
                Release::good("dep", v, &["other==2"])
            }
        })
        .collect();
    index.publish("dep", &releases);
    for release in &releases[1..] {
        let body = release.metadata.clone().unwrap();
        let chunk = body.len() / 2 + 1;
        index.rogue.set(
            &Index::metadata_path("dep", release.version),
            Answer::SlowFile {
                body,
                chunk,
                every: Duration::from_millis(300),
            },
        );
    }
    let out = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (plan, _) = mirror::lock(&index.config(), out.path()).await.unwrap();
    let took = started.elapsed();
    let dep = plan.resolutions[0]
        .packages
        .iter()
        .find(|p| p.project == "dep")
        .unwrap();
    assert_eq!(dep.version.to_string(), "1.0");
    assert!(
        took < Duration::from_millis(29 * 300 / 2),
        "{took:?}: the metadata of the versions backtracked through was read one at a time"
    );
}
