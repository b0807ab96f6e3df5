//! PEP 691 JSON simple-index pages, read and written, through private wire types that keep the
//! protocol's key names and its loosely typed values (`yanked` is a boolean or a string,
//! `core-metadata` a boolean or a hash table) out of the model.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::error::{IndexParseError, check_api_version, check_link_count, check_size};
use super::hashes::Hashes;
use super::linked::LinkedPage;
mod write;

use super::model::{
    CoreMetadata, DEFAULT_API_VERSION, IndexFile, JSON_API_VERSION, Meta, ProjectLink, ProjectList,
    ProjectPage, ProjectStatus, Yanked, normalize_project_name, parse_api_version, resolve_url,
};

/// Reads a [PEP 691] JSON project page, with [PEP 700]'s `versions`, `size` and `upload-time`,
/// [PEP 714]'s `core-metadata` (and the legacy `dist-info-metadata`, plus the
/// `data-dist-info-metadata` key PyPI wrote for a while), [PEP 740]'s `provenance` and
/// [PEP 792]'s `project-status`. Unknown keys are ignored, as the PEP asks.
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
    check_size(content)?;
    let wire: ProjectIn =
        serde_json::from_str(content).map_err(|source| json_error("project page", source))?;
    let mut meta = wire.meta.into_meta();
    check_api_version(&meta.api_version)?;
    check_link_count(wire.files.len())?;
    meta.tracks = wire.tracks;
    meta.alternate_locations = wire.alternate_locations;
    Ok(ProjectPage {
        name: wire.name,
        files: wire.files.into_iter().map(FileIn::into_file).collect(),
        versions: wire.versions,
        meta,
        base: None,
        status: wire.project_status.map(|status| ProjectStatus {
            status: status.status,
            reason: status.reason.filter(|r| !r.is_empty()),
        }),
    })
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
    check_size(content)?;
    let wire: ListIn =
        serde_json::from_str(content).map_err(|source| json_error("project list", source))?;
    let meta = wire.meta.into_meta();
    check_api_version(&meta.api_version)?;
    check_link_count(wire.projects.len())?;
    Ok(ProjectList {
        projects: wire
            .projects
            .into_iter()
            .map(|project| ProjectLink {
                href: format!("{}/", normalize_project_name(&project.name)),
                name: project.name,
            })
            .collect(),
        meta,
    })
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
    let files = page
        .files()
        .map(|(file, link)| FileOut::new(file, Cow::Borrowed(link)));
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
    let api_version = if files.iter().all(|file| file.size.is_some()) {
        json_api_version(meta)
    } else {
        DEFAULT_API_VERSION
    };
    let wire = ProjectOut {
        meta: MetaOut {
            api_version,
            last_serial: meta.last_serial,
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
    let wire = ListOut {
        meta: MetaOut {
            last_serial: list.meta.last_serial,
            api_version: json_api_version(&list.meta),
        },
        projects: list
            .projects
            .iter()
            .map(|project| NameOut {
                name: &project.name,
            })
            .collect(),
    };
    serde_json::to_string(&wire).unwrap_or_default()
}

fn json_error(what: &'static str, source: serde_json::Error) -> IndexParseError {
    IndexParseError::Json {
        what,
        line: source.line(),
        column: source.column(),
        source,
    }
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
// Wire types, reading

#[derive(Deserialize, Default)]
struct MetaIn {
    #[serde(rename = "api-version")]
    api_version: Option<String>,
    #[serde(rename = "_last-serial")]
    last_serial: Option<u64>,
}

trait IntoMeta {
    fn into_meta(self) -> Meta;
}

impl IntoMeta for Option<MetaIn> {
    fn into_meta(self) -> Meta {
        let meta = self.unwrap_or_default();
        Meta {
            api_version: meta
                .api_version
                .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned()),
            last_serial: meta.last_serial,
            ..Meta::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ProjectIn {
    meta: Option<MetaIn>,
    #[serde(default)]
    name: String,
    // Required: a document without `files` is not a project page (it may be a list).
    files: Vec<FileIn>,
    #[serde(default)]
    versions: Vec<String>,
    project_status: Option<StatusIn>,
    #[serde(default)]
    tracks: Vec<String>,
    #[serde(default)]
    alternate_locations: Vec<String>,
}

#[derive(Deserialize)]
struct StatusIn {
    status: String,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FileIn {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: Hashes,
    requires_python: Option<String>,
    #[serde(default)]
    yanked: YankedIn,
    core_metadata: Option<MetadataIn>,
    dist_info_metadata: Option<MetadataIn>,
    // PyPI's JSON carried this misnamed key before PEP 714; uv still reads it.
    data_dist_info_metadata: Option<MetadataIn>,
    gpg_sig: Option<bool>,
    size: Option<u64>,
    upload_time: Option<String>,
    provenance: Option<String>,
}

impl FileIn {
    fn into_file(self) -> IndexFile {
        // PEP 714: `core-metadata` decides when present, whatever the legacy keys say.
        let metadata = self
            .core_metadata
            .or(self.dist_info_metadata)
            .or(self.data_dist_info_metadata);
        let non_empty = |v: Option<String>| v.filter(|v| !v.is_empty());
        IndexFile {
            filename: self.filename,
            url: self.url,
            hashes: self.hashes,
            requires_python: non_empty(self.requires_python),
            yanked: match self.yanked {
                YankedIn::Flag(false) => Yanked::No,
                YankedIn::Flag(true) => Yanked::Yes { reason: None },
                YankedIn::Reason(reason) => Yanked::Yes {
                    reason: Some(reason).filter(|r| !r.is_empty()),
                },
            },
            core_metadata: match metadata {
                None | Some(MetadataIn::Flag(false)) => CoreMetadata::Absent,
                Some(MetadataIn::Flag(true)) => CoreMetadata::Present,
                Some(MetadataIn::Hashes(hashes)) if hashes.is_empty() => CoreMetadata::Present,
                Some(MetadataIn::Hashes(hashes)) => CoreMetadata::Hashes(hashes),
            },
            gpg_sig: self.gpg_sig,
            size: self.size,
            upload_time: non_empty(self.upload_time),
            provenance: non_empty(self.provenance),
        }
    }
}

/// `yanked`: `false`, `true`, or a reason string ([PEP 592] in [PEP 691]'s form); `null` is
/// read as `false`. An empty reason still means yanked, since the PEP calls any string truthy.
///
/// [PEP 592]: https://peps.python.org/pep-0592/
/// [PEP 691]: https://peps.python.org/pep-0691/
enum YankedIn {
    Flag(bool),
    Reason(String),
}

impl Default for YankedIn {
    fn default() -> Self {
        YankedIn::Flag(false)
    }
}

impl<'de> Deserialize<'de> for YankedIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct YankedVisitor;
        impl Visitor<'_> for YankedVisitor {
            type Value = YankedIn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`yanked` as a boolean or a reason string")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<YankedIn, E> {
                Ok(YankedIn::Flag(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<YankedIn, E> {
                Ok(YankedIn::Reason(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<YankedIn, E> {
                Ok(YankedIn::Reason(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<YankedIn, E> {
                Ok(YankedIn::Flag(false))
            }
        }
        deserializer.deserialize_any(YankedVisitor)
    }
}

/// `core-metadata`: a boolean, or a table of hash name to hex digest ([PEP 714]).
///
/// [PEP 714]: https://peps.python.org/pep-0714/
enum MetadataIn {
    Flag(bool),
    Hashes(Hashes),
}

impl<'de> Deserialize<'de> for MetadataIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetadataVisitor;
        impl<'de> Visitor<'de> for MetadataVisitor {
            type Value = MetadataIn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`core-metadata` as a boolean or a table of hashes")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<MetadataIn, E> {
                Ok(MetadataIn::Flag(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataIn, A::Error> {
                let mut hashes = Hashes::new();
                while let Some((name, digest)) = map.next_entry::<String, String>()? {
                    hashes.get_or_insert_with(&name, || digest);
                }
                Ok(MetadataIn::Hashes(hashes))
            }
        }
        deserializer.deserialize_any(MetadataVisitor)
    }
}

#[derive(Deserialize)]
struct ListIn {
    meta: Option<MetaIn>,
    projects: Vec<NameIn>,
}

#[derive(Deserialize)]
struct NameIn {
    name: String,
}

// ---------------------------------------------------------------------------------------------
// Wire types, writing (by hand, `json/write.rs`; serde writes them only in the tests, to hold
// that writer to serde_json's output)

#[derive(Serialize)]
struct MetaOut<'a> {
    #[serde(rename = "api-version")]
    api_version: &'a str,
    #[serde(rename = "_last-serial", skip_serializing_if = "Option::is_none")]
    last_serial: Option<u64>,
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

impl<'a> FileOut<'a> {
    /// `file` with the link `url`.
    fn new(file: &'a IndexFile, url: Cow<'a, str>) -> Self {
        FileOut {
            filename: &file.filename,
            url,
            hashes: &file.hashes,
            requires_python: file.requires_python.as_deref(),
            core_metadata: match &file.core_metadata {
                CoreMetadata::Absent => None,
                CoreMetadata::Present => Some(MetadataOut::Flag(true)),
                CoreMetadata::Hashes(hashes) if hashes.is_empty() => Some(MetadataOut::Flag(true)),
                CoreMetadata::Hashes(hashes) => Some(MetadataOut::Hashes(hashes)),
            },
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

#[derive(Serialize)]
struct ListOut<'a> {
    meta: MetaOut<'a>,
    projects: Vec<NameOut<'a>>,
}

#[derive(Serialize)]
struct NameOut<'a> {
    name: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
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
            },
            base: None,
            status: Some(ProjectStatus {
                status: "deprecated".to_owned(),
                reason: Some("use other".to_owned()),
            }),
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
    fn malformed_json_is_an_error_naming_the_place() {
        for content in [
            "",
            "{",
            "[]",
            "null",
            "<html></html>",
            r#"{"name":"a"}"#,
            r#"{"files":3}"#,
            r#"{"files":[{"filename":"a"}]}"#,
            r#"{"files":[{"filename":"a","url":"b","hashes":{"sha256":1}}]}"#,
            r#"{"files":[{"filename":"a","url":"b","yanked":3}]}"#,
            r#"{"files":[{"filename":"a","url":"b","core-metadata":"yes"}]}"#,
            r#"{"files":[{"filename":"a","url":"b","size":-1}]}"#,
            r#"{"files":[{"filename":"a","url":"b","size":1.5}]}"#,
            r#"{"meta":{"api-version":2},"files":[]}"#,
            "\u{0}",
            &"[".repeat(10_000),
        ] {
            let err = parse_project_json(content).unwrap_err();
            assert!(
                matches!(err, IndexParseError::Json { .. }),
                "{content:.40}: {err}"
            );
            assert!(parse_project_list_json(content).is_err());
        }
        let err =
            parse_project_json(r#"{"files":[{"filename":"a","url":"b","yanked":3}]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid PEP 691 JSON project page at line `1`, column `46`"
        );
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            source.contains("`yanked` as a boolean or a reason string"),
            "{source}"
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
