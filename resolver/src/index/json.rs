//! PEP 691 JSON simple-index pages, read and written, through private wire types that keep the
//! protocol's key names and its loosely typed values (`yanked` is a boolean or a string,
//! `core-metadata` a boolean or a hash table) out of the model.

use std::borrow::Cow;

#[cfg(test)]
use serde::Serialize;

use super::error::IndexParseError;
use super::hashes::Hashes;
use super::linked::LinkedPage;
mod read;
mod shape;
mod write;

use super::model::{
    CoreMetadata, DEFAULT_API_VERSION, IndexFile, JSON_API_VERSION, Meta, ProjectList, ProjectPage,
    ProjectStatus, Yanked, parse_api_version, resolve_url,
};

/// Reads a [PEP 691] JSON project page, with [PEP 700]'s `versions`, `size` and `upload-time`,
/// [PEP 714]'s `core-metadata` (and the legacy `dist-info-metadata`, plus the
/// `data-dist-info-metadata` key PyPI wrote for a while), [PEP 740]'s `provenance` and
/// [PEP 792]'s `project-status`, tolerantly (`json/read.rs`): an entry whose needed fields
/// cannot be read is left off with its reason ([`ProjectPage::dropped`]), unknown keys are
/// ignored, and `meta`'s other members (`_last-serial` as a string too) are kept as they came.
///
/// [PEP 691]: https://peps.python.org/pep-0691/
/// [PEP 700]: https://peps.python.org/pep-0700/
/// [PEP 714]: https://peps.python.org/pep-0714/
/// [PEP 740]: https://peps.python.org/pep-0740/
/// [PEP 792]: https://peps.python.org/pep-0792/
//
// Input, as pypi.org/simple/filelock/ serves it to `Accept: application/vnd.pypi.simple.v1+json`
// (one file shown, digests shortened):
//
//     {"meta":{"_last-serial":31234567,"api-version":"1.4"},"name":"filelock",
//      "project-status":{"status":"active"},"versions":["3.19.1","3.20.0"],
//      "files":[{"core-metadata":{"sha256":"8e6b..."},"data-dist-info-metadata":{"sha256":"8e6b..."},
//        "filename":"filelock-3.20.0-py3-none-any.whl","hashes":{"sha256":"339b..."},
//        "provenance":"https://pypi.org/integrity/filelock/3.20.0/filelock-3.20.0-py3-none-any.whl/provenance",
//        "requires-python":">=3.10","size":16110,"upload-time":"2025-10-08T18:03:49.123456Z",
//        "url":"https://files.pythonhosted.org/packages/.../filelock-3.20.0-py3-none-any.whl","yanked":false}]}
pub fn parse_project_json(content: &str) -> Result<ProjectPage, IndexParseError> {
    read::project_page(content)
}

/// Reads a [PEP 691] JSON root page. JSON lists carry names only, so each link is the
/// normalized name plus `/`, relative to the list, as the PEP prescribes.
///
/// [PEP 691]: https://peps.python.org/pep-0691/
//
// Input, as pypi.org/simple/ serves it:
//
//     {"meta":{"_last-serial":31234567,"api-version":"1.4"},
//      "projects":[{"_last-serial":5678,"name":"Flask"},{"_last-serial":91011,"name":"typing_extensions"}]}
pub fn parse_project_list_json(content: &str) -> Result<ProjectList, IndexParseError> {
    read::project_list(content)
}

/// Writes a [PEP 691] JSON project page at API version 1.1 or the page's own if newer
/// ([PEP 700]): `versions`, and each file's `size` and `upload-time` where known, `yanked`
/// always, `core-metadata` when offered (never the legacy `dist-info-metadata`, which crashes
/// old pips), `gpg-sig`, `provenance`, and `project-status`.
///
/// JSON has no `<base href>`: when the page has one, links are resolved against it so they
/// still point at the same files.
///
/// [PEP 691]: https://peps.python.org/pep-0691/
/// [PEP 700]: https://peps.python.org/pep-0700/
pub fn render_project_json(page: &ProjectPage) -> String {
    let files = page.files.iter().map(|file| {
        let url = match page.base.as_deref() {
            Some(base) => Cow::Owned(resolve_url(base, &file.url)),
            None => Cow::Borrowed(file.url.as_str()),
        };
        FileOut::new(file, url)
    });
    let head = (
        &page.name[..],
        &page.meta,
        page.status.as_ref(),
        &page.versions[..],
    );
    render_files_json(head, files.collect())
}

/// Writes a [`LinkedPage`] as [`render_project_json`] writes the page of
/// [`LinkedPage::to_page`], without that copy.
pub fn render_linked_json(page: &LinkedPage<'_>) -> String {
    let files = page.files().map(|(file, link)| {
        let mut out = FileOut::new(file, Cow::Borrowed(link));
        out.core_metadata = metadata_out(page.core_metadata(file));
        out
    });
    let head = (
        &page.name[..],
        &page.meta,
        page.status.as_ref(),
        &page.versions[..],
    );
    render_files_json(head, files.collect())
}

/// The page (name, meta, status, versions) with `files`.
fn render_files_json(
    (name, meta, status, versions): (&str, &Meta, Option<&ProjectStatus>, &[String]),
    files: Vec<FileOut<'_>>,
) -> String {
    // PEP 700 makes `size` mandatory from api-version 1.1; a page that does not know every
    // file's size (download.pytorch.org's HTML gives none) can only claim 1.0, whose clients
    // ignore the extra 1.1 keys.
    // PEP 700's `versions` is mandatory from 1.1 too, and lists every version: an upstream page
    // at 1.0 (or in HTML) gives none, and an empty list beside files would say they have none.
    let api_version = if files.iter().all(|file| file.size.is_some())
        && (!versions.is_empty() || files.is_empty())
    {
        json_api_version(meta)
    } else {
        DEFAULT_API_VERSION
    };
    let wire = ProjectOut {
        meta: MetaOut {
            api_version,
            last_serial: meta.last_serial,
            extra: &meta.extra,
        },
        name,
        tracks: &meta.tracks,
        alternate_locations: &meta.alternate_locations,
        project_status: status.map(|status| StatusOut {
            status: &status.status,
            reason: status.reason.as_deref(),
        }),
        versions,
        files,
    };
    write::project(&wire)
}

/// Writes a [PEP 691] JSON root page (names only).
///
/// [PEP 691]: https://peps.python.org/pep-0691/
pub fn render_project_list_json(list: &ProjectList) -> String {
    let meta = MetaOut {
        last_serial: list.meta.last_serial,
        api_version: json_api_version(&list.meta),
        extra: &list.meta.extra,
    };
    write::list(&meta, list.projects.iter().map(|project| &project.name[..]))
}

/// The page's version when it is already 1.1 or newer, else 1.1: what the rendered keys need.
fn json_api_version(meta: &Meta) -> &str {
    let minimum = parse_api_version(JSON_API_VERSION);
    match parse_api_version(&meta.api_version) {
        Some(version) if Some(version) >= minimum => &meta.api_version,
        _ => JSON_API_VERSION,
    }
}

// ---------------------------------------------------------------------------------------------
// Wire types, writing (by hand, `json/write.rs`; serde writes them only in the tests, to hold
// that writer to serde_json's output)

#[cfg_attr(test, derive(Serialize))]
struct MetaOut<'a> {
    #[cfg_attr(test, serde(rename = "api-version"))]
    api_version: &'a str,
    #[cfg_attr(
        test,
        serde(rename = "_last-serial", skip_serializing_if = "Option::is_none")
    )]
    last_serial: Option<u64>,
    /// Compact JSON members written after the others as they came (serde cannot write raw
    /// text; the tests that compare the two writers give none).
    #[cfg_attr(test, serde(skip))]
    extra: &'a [(String, String)],
}

#[cfg_attr(test, derive(Serialize))]
#[cfg_attr(test, serde(rename_all = "kebab-case"))]
struct ProjectOut<'a> {
    meta: MetaOut<'a>,
    name: &'a str,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    project_status: Option<StatusOut<'a>>,
    #[cfg_attr(test, serde(skip_serializing_if = "<[String]>::is_empty"))]
    tracks: &'a [String],
    #[cfg_attr(test, serde(skip_serializing_if = "<[String]>::is_empty"))]
    alternate_locations: &'a [String],
    versions: &'a [String],
    files: Vec<FileOut<'a>>,
}

#[cfg_attr(test, derive(Serialize))]
struct StatusOut<'a> {
    status: &'a str,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    reason: Option<&'a str>,
}

#[cfg_attr(test, derive(Serialize))]
#[cfg_attr(test, serde(rename_all = "kebab-case"))]
struct FileOut<'a> {
    filename: &'a str,
    url: Cow<'a, str>,
    hashes: &'a Hashes,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    requires_python: Option<&'a str>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    core_metadata: Option<MetadataOut<'a>>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    gpg_sig: Option<bool>,
    yanked: YankedOut<'a>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    size: Option<u64>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    upload_time: Option<&'a str>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    provenance: Option<&'a str>,
}

#[cfg_attr(test, derive(Serialize))]
#[cfg_attr(test, serde(untagged))]
enum MetadataOut<'a> {
    Flag(bool),
    Hashes(&'a Hashes),
}

#[cfg_attr(test, derive(Serialize))]
#[cfg_attr(test, serde(untagged))]
enum YankedOut<'a> {
    Flag(bool),
    Reason(&'a str),
}

/// `core-metadata` as written: absent, `true`, or the hash table.
fn metadata_out(metadata: &CoreMetadata) -> Option<MetadataOut<'_>> {
    match metadata {
        CoreMetadata::Absent => None,
        CoreMetadata::Present => Some(MetadataOut::Flag(true)),
        CoreMetadata::Hashes(hashes) if hashes.is_empty() => Some(MetadataOut::Flag(true)),
        CoreMetadata::Hashes(hashes) => Some(MetadataOut::Hashes(hashes)),
    }
}

impl<'a> FileOut<'a> {
    /// `file` with the link `url`.
    fn new(file: &'a IndexFile, url: Cow<'a, str>) -> Self {
        FileOut {
            filename: &file.filename,
            url,
            hashes: &file.hashes,
            requires_python: file.requires_python.as_deref(),
            core_metadata: metadata_out(&file.core_metadata),
            gpg_sig: file.gpg_sig,
            yanked: match &file.yanked {
                Yanked::No => YankedOut::Flag(false),
                Yanked::Yes {
                    reason: Some(reason),
                } if !reason.is_empty() => YankedOut::Reason(reason),
                Yanked::Yes { .. } => YankedOut::Flag(true),
            },
            size: file.size,
            upload_time: file.upload_time.as_deref(),
            provenance: file.provenance.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::model::ProjectLink;
    use crate::index::{parse_project_html, render_project_html};

    /// Written in the shape pypi.org answers with (keys sorted, PyPI's legacy metadata key).
    const PYPI_FILELOCK: &str = r#"{
  "meta": {"_last-serial": 31234567, "api-version": "1.4"},
  "name": "filelock",
  "project-status": {"status": "active"},
  "versions": ["3.0.0", "3.19.1", "3.20.0"],
  "files": [
    {
      "core-metadata": {"sha256": "8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b"},
      "data-dist-info-metadata": {"sha256": "8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b0e8e6b"},
      "filename": "filelock-3.20.0-py3-none-any.whl",
      "hashes": {"sha256": "339b4732ffda5cd79b13f4e2711a7f1f9d5ff2c2cbe1b5c3ba9a2f8a4e9f46b8"},
      "provenance": "https://pypi.org/integrity/filelock/3.20.0/filelock-3.20.0-py3-none-any.whl/provenance",
      "requires-python": ">=3.10",
      "size": 16110,
      "upload-time": "2025-10-08T18:03:49.123456Z",
      "url": "https://files.pythonhosted.org/packages/76/91/7216b27286936c16f5b4d0c530087e4a54eead683e6b0b73dd0c64844af6/filelock-3.20.0-py3-none-any.whl",
      "yanked": false
    },
    {
      "core-metadata": false,
      "data-dist-info-metadata": false,
      "filename": "filelock-3.19.1.tar.gz",
      "hashes": {"sha256": "66eda1888b0171c998b35be2bcc0f6d75c388a7ce20c3f3f37aa8e96c2dddf58", "md5": "0123"},
      "provenance": null,
      "requires-python": ">=3.9",
      "size": 21687,
      "upload-time": "2025-08-14T16:56:03.016697Z",
      "url": "https://files.pythonhosted.org/packages/40/bb/filelock-3.19.1.tar.gz",
      "yanked": "Broken release, use 3.19.2"
    },
    {
      "dist-info-metadata": true,
      "filename": "filelock-3.0.0-py3-none-any.whl",
      "gpg-sig": true,
      "hashes": {},
      "requires-python": null,
      "url": "../../packages/aa/filelock-3.0.0-py3-none-any.whl",
      "yanked": true,
      "some-future-key": [1, {"x": null}]
    }
  ]
}"#;

    #[test]
    fn reads_a_pypi_style_page() {
        let page = parse_project_json(PYPI_FILELOCK).unwrap();
        assert_eq!(page.name, "filelock");
        assert_eq!(page.meta.api_version, "1.4");
        assert_eq!(page.versions, ["3.0.0", "3.19.1", "3.20.0"]);
        assert_eq!(
            page.status,
            Some(ProjectStatus {
                status: "active".to_owned(),
                reason: None
            })
        );
        let [wheel, sdist, old] = &page.files[..] else {
            panic!("{page:#?}")
        };
        assert_eq!(wheel.filename, "filelock-3.20.0-py3-none-any.whl");
        assert_eq!(
            wheel.sha256(),
            Some("339b4732ffda5cd79b13f4e2711a7f1f9d5ff2c2cbe1b5c3ba9a2f8a4e9f46b8")
        );
        assert_eq!(wheel.requires_python.as_deref(), Some(">=3.10"));
        assert_eq!(wheel.size, Some(16110));
        assert_eq!(
            wheel.upload_time.as_deref(),
            Some("2025-10-08T18:03:49.123456Z")
        );
        assert_eq!(wheel.yanked, Yanked::No);
        assert!(matches!(&wheel.core_metadata, CoreMetadata::Hashes(h) if h.len() == 1));
        assert!(
            wheel
                .provenance
                .as_deref()
                .unwrap()
                .ends_with("/provenance")
        );

        assert_eq!(sdist.core_metadata, CoreMetadata::Absent);
        assert_eq!(sdist.provenance, None);
        assert_eq!(sdist.hashes.len(), 2);
        assert_eq!(
            sdist.yanked,
            Yanked::Yes {
                reason: Some("Broken release, use 3.19.2".to_owned())
            }
        );

        assert_eq!(old.core_metadata, CoreMetadata::Present);
        assert_eq!(old.yanked, Yanked::Yes { reason: None });
        assert_eq!(old.gpg_sig, Some(true));
        assert_eq!(old.requires_python, None);
        assert_eq!(old.size, None);
        assert_eq!(old.url, "../../packages/aa/filelock-3.0.0-py3-none-any.whl");
    }

    #[test]
    fn core_metadata_wins_over_legacy_keys() {
        let file = |entries: &str| {
            let json = format!(
                r#"{{"meta":{{"api-version":"1.0"}},"name":"a","files":[{{"filename":"a-1.whl","url":"a-1.whl","hashes":{{}}{entries}}}]}}"#
            );
            parse_project_json(&json).unwrap().files.remove(0)
        };
        assert_eq!(file("").core_metadata, CoreMetadata::Absent);
        assert_eq!(
            file(r#","dist-info-metadata":true"#).core_metadata,
            CoreMetadata::Present
        );
        assert_eq!(
            file(r#","dist-info-metadata":true,"core-metadata":false"#).core_metadata,
            CoreMetadata::Absent
        );
        assert_eq!(
            file(r#","core-metadata":{}"#).core_metadata,
            CoreMetadata::Present
        );
        assert_eq!(
            file(r#","core-metadata":{"sha256":"aa"},"dist-info-metadata":{"sha256":"bb"}"#)
                .core_metadata,
            CoreMetadata::Hashes(Hashes::from([("sha256".to_owned(), "aa".to_owned())]))
        );
        assert_eq!(file(r#","yanked":"""#).yanked, Yanked::Yes { reason: None });
        assert_eq!(file(r#","yanked":null"#).yanked, Yanked::No);
    }

    fn full_page() -> ProjectPage {
        ProjectPage {
            name: "Odd.Name".to_owned(),
            files: vec![
                IndexFile {
                    filename: "odd_name-1.0+local-py3-none-any.whl".to_owned(),
                    url: "/files/odd_name-1.0%2Blocal-py3-none-any.whl".to_owned(),
                    hashes: Hashes::from([
                        ("sha256".to_owned(), "ab".repeat(32)),
                        ("blake2b_256".to_owned(), "cd".repeat(32)),
                    ]),
                    requires_python: Some("<4,>=3.8".to_owned()),
                    yanked: Yanked::Yes {
                        reason: Some("bad \"build\" <x> & \u{e9}".to_owned()),
                    },
                    core_metadata: CoreMetadata::Hashes(Hashes::from([(
                        "sha256".to_owned(),
                        "ef".repeat(32),
                    )])),
                    gpg_sig: Some(false),
                    size: Some(u64::MAX),
                    upload_time: Some("2026-04-05T10:11:12.123456Z".to_owned()),
                    provenance: Some("https://pypi.org/integrity/x/provenance".to_owned()),
                },
                IndexFile {
                    core_metadata: CoreMetadata::Present,
                    yanked: Yanked::Yes { reason: None },
                    size: Some(0),
                    ..IndexFile::new("odd_name-0.9.tar.gz", "odd_name-0.9.tar.gz")
                },
            ],
            versions: vec!["0.9".to_owned(), "1.0+local".to_owned(), "1.1".to_owned()],
            meta: Meta {
                api_version: "1.4".to_owned(),
                last_serial: Some(31_234_567),
                tracks: vec!["https://pypi.example/simple/odd-name/".to_owned()],
                alternate_locations: vec!["https://a.example/simple/odd-name/".to_owned()],
                extra: vec![("_x-future".to_owned(), r#"{"a":[1,"b"]}"#.to_owned())],
            },
            base: None,
            status: Some(ProjectStatus {
                status: "deprecated".to_owned(),
                reason: Some("use other".to_owned()),
            }),
            dropped: Vec::new(),
        }
    }

    #[test]
    fn every_field_round_trips_through_json() {
        let page = full_page();
        let json = render_project_json(&page);
        assert_eq!(parse_project_json(&json).unwrap(), page, "{json}");
        let pypi = parse_project_json(PYPI_FILELOCK).unwrap();
        // One of its files has no size, so the rendered page can only claim api-version 1.0.
        assert!(pypi.files.iter().any(|f| f.size.is_none()));
        let mut expected = pypi.clone();
        expected.meta.api_version = "1.0".to_owned();
        assert_eq!(
            parse_project_json(&render_project_json(&pypi)).unwrap(),
            expected
        );
    }

    #[test]
    fn renders_pep_700_keys_and_no_legacy_metadata_key() {
        let mut page = full_page();
        page.meta = Meta::default();
        let json = render_project_json(&page);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["meta"]["api-version"], "1.1");
        assert_eq!(value["versions"][2], "1.1");
        assert_eq!(value["files"][0]["size"], u64::MAX);
        assert_eq!(
            value["files"][0]["upload-time"],
            "2026-04-05T10:11:12.123456Z"
        );
        assert_eq!(
            value["files"][0]["core-metadata"]["sha256"],
            "ef".repeat(32)
        );
        assert_eq!(value["files"][1]["core-metadata"], true);
        assert_eq!(value["files"][1]["yanked"], true);
        assert_eq!(value["project-status"]["status"], "deprecated");
        assert!(!json.contains("dist-info-metadata"), "{json}");
        let plain = ProjectPage {
            files: vec![IndexFile::new("a-1.tar.gz", "a-1.tar.gz")],
            ..ProjectPage::default()
        };
        // PEP 700 makes `size` mandatory from 1.1: a page without sizes says 1.0.
        assert_eq!(
            render_project_json(&plain),
            r#"{"meta":{"api-version":"1.0"},"name":"","versions":[],"files":[{"filename":"a-1.tar.gz","url":"a-1.tar.gz","hashes":{},"yanked":false}]}"#
        );
    }

    #[test]
    fn fixture_page_round_trips_from_html_through_json() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
        );
        let Ok(html) = std::fs::read_to_string(path) else {
            println!("NOT RUN: fixture `{path}` is not readable");
            return;
        };
        let page = parse_project_html(&html).unwrap();
        let from_json = parse_project_json(&render_project_json(&page)).unwrap();
        // Nothing changes: the HTML gives no file sizes, so the JSON form stays at 1.0.
        let expected = page.clone();
        assert_eq!(expected.meta.api_version, "1.0");
        assert_eq!(from_json, expected);
        // And back to HTML, nothing lost either.
        assert_eq!(
            parse_project_html(&render_project_html(&from_json)).unwrap(),
            expected
        );
    }

    #[test]
    fn base_href_is_applied_when_writing_json() {
        let page = ProjectPage {
            base: Some("https://files.example/pkgs/".to_owned()),
            files: vec![IndexFile::new("a-1.tar.gz", "a/a-1.tar.gz")],
            ..ProjectPage::default()
        };
        let again = parse_project_json(&render_project_json(&page)).unwrap();
        assert_eq!(
            again.files[0].url,
            "https://files.example/pkgs/a/a-1.tar.gz"
        );
        assert_eq!(again.base, None);
    }

    #[test]
    fn lists() {
        let list = parse_project_list_json(
            r#"{"meta":{"_last-serial":1,"api-version":"1.4"},"projects":[{"_last-serial":2,"name":"Flask"},{"name":"typing_extensions"}]}"#,
        )
        .unwrap();
        assert_eq!(
            list.projects,
            [
                ProjectLink {
                    name: "Flask".to_owned(),
                    href: "flask/".to_owned()
                },
                ProjectLink {
                    name: "typing_extensions".to_owned(),
                    href: "typing-extensions/".to_owned()
                }
            ]
        );
        let json = render_project_list_json(&list);
        assert_eq!(
            json,
            r#"{"meta":{"api-version":"1.4","_last-serial":1},"projects":[{"name":"Flask"},{"name":"typing_extensions"}]}"#,
            "the list's `_last-serial` is kept"
        );
        assert_eq!(parse_project_list_json(&json).unwrap(), list);
    }

    #[test]
    fn what_is_not_a_page_is_an_error_naming_the_place() {
        for content in [
            "",
            "{",
            "[]",
            "null",
            "<html></html>",
            r#"{"name":"a"}"#,
            r#"{"files":3}"#,
            r#"{"meta":{"api-version":2},"files":[]}"#,
            "\u{0}",
            &"[".repeat(10_000),
        ] {
            let err = parse_project_json(content).unwrap_err();
            assert!(
                matches!(
                    err,
                    IndexParseError::Json { .. }
                        | IndexParseError::NotAPage { .. }
                        | IndexParseError::UnsupportedApiVersion { .. }
                ),
                "{content:.40}: {err}"
            );
            assert!(parse_project_list_json(content).is_err());
        }
        let err = parse_project_json(r#"{"files":[{"filename":"a","url":"b"},]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid PEP 691 JSON project page at line `1`, column `38`"
        );
        assert_eq!(
            parse_project_json(r#"{"name":"a"}"#)
                .unwrap_err()
                .to_string(),
            "the PEP 691 JSON project page has no `files` list"
        );
    }

    /// One bad entry costs that entry, never the page: each needed field malformed once.
    #[test]
    fn an_entry_that_cannot_be_read_is_dropped_with_its_reason() {
        let page = parse_project_json(
            r#"{"name":"a","files":[
                {"filename":"a-1.0.tar.gz","url":"a-1.0.tar.gz","hashes":{"sha256":"aa"}},
                {"filename":"a-1.1.tar.gz"},
                {"filename":7,"url":"x"},
                {"filename":"a-1.2.tar.gz","url":"b","hashes":{"sha256":1}},
                {"filename":"a-1.3.tar.gz","url":"b","hashes":[]},
                {"filename":"a-1.4.tar.gz","url":"b","yanked":3},
                {"filename":"a-1.5.tar.gz","url":"b","requires-python":{">=":3}},
                "a-1.6.tar.gz",
                {"filename":"a-1.7.tar.gz","url":"a-1.7.tar.gz","core-metadata":"yes",
                 "size":-1,"upload-time":5,"provenance":false,"gpg-sig":"no"}
            ]}"#,
        )
        .unwrap();
        let names: Vec<&str> = page.files.iter().map(|f| &f.filename[..]).collect();
        assert_eq!(names, ["a-1.0.tar.gz", "a-1.7.tar.gz"]);
        let reasons: Vec<(&str, &str)> = page
            .dropped
            .iter()
            .map(|d| (&d.entry[..], &d.reason[..]))
            .collect();
        assert_eq!(
            reasons,
            [
                ("a-1.1.tar.gz", "it has no `url`"),
                ("files[2]", "its `filename` is a number, not a string"),
                (
                    "a-1.2.tar.gz",
                    "its `hashes` has `sha256` as a number, not a string"
                ),
                ("a-1.3.tar.gz", "its `hashes` is a list, not an object"),
                (
                    "a-1.4.tar.gz",
                    "its `yanked` is a number, neither a boolean nor a reason"
                ),
                (
                    "a-1.5.tar.gz",
                    "its `requires-python` is an object, not a string"
                ),
                ("files[7]", "the entry is a string, not an object"),
            ]
        );
        // Fields only passed on read as absent when they have another type.
        let passed_on = &page.files[1];
        assert_eq!(passed_on.core_metadata, CoreMetadata::Absent);
        assert_eq!(
            (
                passed_on.size,
                &passed_on.upload_time,
                &passed_on.provenance
            ),
            (None, &None, &None)
        );
        assert_eq!(passed_on.gpg_sig, None);
    }

    /// What real registries write that the PEPs do not: a string serial, unknown keys of every
    /// type at every level, upper-case hash names, a 1.0 page without `versions`.
    #[test]
    fn reads_what_real_registries_send() {
        let page = parse_project_json(
            r#"{"files":[{"filename":"six-1.9.0.tar.gz","hashes":{"SHA256":"14fd","md5":"aa"},
                "requires-python":null,"size":29127,"upload-time":"2015-01-02T16:38:06.621099Z",
                "url":"https://files.example/six-1.9.0.tar.gz","yanked":false,
                "_mirror":{"x":[1,null]},"future":1.5}],
              "meta":{"api-version":"1.1","_last-serial":"26356948","_x":[true]},
              "name":"six","versions":["1.9.0"],"_page-key":null}"#,
        )
        .unwrap();
        assert_eq!(page.files.len(), 1);
        assert!(page.dropped.is_empty());
        assert_eq!(page.files[0].sha256(), Some("14fd"));
        assert_eq!(page.meta.last_serial, None);
        assert_eq!(
            page.meta.extra,
            [
                ("_last-serial".to_owned(), r#""26356948""#.to_owned()),
                ("_x".to_owned(), "[true]".to_owned())
            ]
        );
        // Written back as it came.
        let json = render_project_json(&page);
        assert!(
            json.starts_with(
                r#"{"meta":{"api-version":"1.1","_last-serial":"26356948","_x":[true]},"#
            ),
            "{json}"
        );
        assert_eq!(parse_project_json(&json).unwrap(), page);

        // A 1.0 page: no `versions`, so the rendered page does not claim 1.1 with none.
        let old = parse_project_json(
            r#"{"meta":{"api-version":"1.0"},"name":"a","files":[{"filename":"a-1.tar.gz","url":"a-1.tar.gz","hashes":{},"size":3}]}"#,
        )
        .unwrap();
        let value: serde_json::Value = serde_json::from_str(&render_project_json(&old)).unwrap();
        assert_eq!(value["meta"]["api-version"], "1.0");

        let list = parse_project_list_json(
            r#"{"meta":{"_last-serial":"9","api-version":"1.1"},"projects":[{"_last-serial":"2","name":"Six"},{"name":3}]}"#,
        )
        .unwrap();
        assert_eq!(list.projects.len(), 1);
        assert_eq!(
            render_project_list_json(&list),
            r#"{"meta":{"api-version":"1.1","_last-serial":"9"},"projects":[{"name":"Six"}]}"#
        );
    }

    #[test]
    fn api_version_checks() {
        let err = parse_project_json(r#"{"meta":{"api-version":"2.0"},"name":"a","files":[]}"#)
            .unwrap_err();
        assert!(matches!(err, IndexParseError::UnsupportedApiVersion { .. }));
        assert!(
            parse_project_list_json(r#"{"meta":{"api-version":"2.1"},"projects":[]}"#).is_err()
        );
        // No meta at all: read as 1.0, as PEP 629 says of a page without a version.
        let page = parse_project_json(r#"{"name":"a","files":[]}"#).unwrap();
        assert_eq!(page.meta, Meta::default());
    }
}
