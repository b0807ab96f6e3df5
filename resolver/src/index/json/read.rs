//! The tolerant reader of PEP 691 JSON pages: strict only about what selection and rewriting
//! need, lenient about everything else, as pip and uv are.
//!
//! - A page is refused whole only when it is not a page: not JSON, not an object, no `files`
//!   (or `projects`) list, or an API major version other than 1.
//! - An entry whose `filename`, `url`, `hashes`, `requires-python` or `yanked` cannot be read is
//!   left off, with its reason in [`ProjectPage::dropped`]: the proxy cannot verify, select or
//!   honour it, and serving it with that field guessed could install what the index meant to
//!   withhold. The rest of the page is served.
//! - A field only passed on (`size`, `upload-time`, `provenance`, `gpg-sig`, `core-metadata`)
//!   that has an unexpected type is read as absent: installers then behave as with an index
//!   that never wrote it (for `core-metadata`: they read the wheel's own metadata).
//! - Unknown keys are ignored, and `meta`'s are kept and written back as they came
//!   ([`Meta::extra`]): PEP 691 reserves underscore keys for the index's own use, and one real
//!   registry writes `_last-serial` as a string.

use std::borrow::Cow;

use super::shape::Shape;
use crate::index::error::{IndexParseError, check_api_version, check_link_count, check_size};
use crate::index::hashes::Hashes;
use crate::index::model::{
    CoreMetadata, DroppedFile, IndexFile, Meta, ProjectLink, ProjectList, ProjectPage,
    ProjectStatus, Yanked, normalize_project_name,
};

/// A project page read from `content` (see the module's rules).
pub(super) fn project_page(content: &str) -> Result<ProjectPage, IndexParseError> {
    const WHAT: &str = "project page";
    check_size(content)?;
    let top = parse(content, WHAT)?;
    if !matches!(top, Shape::Map(_)) {
        return Err(not_a_page(
            WHAT,
            format!("is {}, not an object", top.kind()),
        ));
    }
    let meta = read_meta(top.get("meta"));
    check_api_version(&meta.api_version)?;
    let entries = match top.get("files") {
        Some(Shape::Seq(entries)) => entries,
        Some(other) => {
            return Err(not_a_page(
                WHAT,
                format!("has `files` as {}, not a list", other.kind()),
            ));
        }
        None => return Err(not_a_page(WHAT, "has no `files` list".to_owned())),
    };
    check_link_count(entries.len())?;
    let mut files = Vec::with_capacity(entries.len());
    let mut dropped = Vec::new();
    for (at, entry) in entries.iter().enumerate() {
        match read_file(entry) {
            Ok(file) => files.push(file),
            Err(reason) => dropped.push(DroppedFile {
                entry: entry
                    .get("filename")
                    .and_then(Shape::as_str)
                    .filter(|name| !name.is_empty())
                    .map_or_else(|| format!("files[{at}]"), str::to_owned),
                reason,
            }),
        }
    }
    if !dropped.is_empty() {
        tracing::debug!(
            dropped = dropped.len(),
            "entries of a JSON project page could not be read as files"
        );
    }
    Ok(ProjectPage {
        name: text(top.get("name")).unwrap_or_default(),
        files,
        versions: texts(top.get("versions")),
        meta: Meta {
            tracks: texts(top.get("tracks")),
            alternate_locations: texts(top.get("alternate-locations")),
            ..meta
        },
        base: None,
        status: top.get("project-status").and_then(read_status),
        dropped,
    })
}

/// A root page read from `content`: each project's `name` (an entry without a string name is
/// skipped; it links nowhere a client could follow).
pub(super) fn project_list(content: &str) -> Result<ProjectList, IndexParseError> {
    const WHAT: &str = "project list";
    check_size(content)?;
    let top = parse(content, WHAT)?;
    let meta = read_meta(top.get("meta"));
    check_api_version(&meta.api_version)?;
    let Some(Shape::Seq(entries)) = top.get("projects") else {
        return Err(not_a_page(WHAT, "has no `projects` list".to_owned()));
    };
    check_link_count(entries.len())?;
    let projects = entries
        .iter()
        .filter_map(|entry| entry.get("name").and_then(Shape::as_str))
        .map(|name| ProjectLink {
            href: format!("{}/", normalize_project_name(name)),
            name: name.to_owned(),
        })
        .collect();
    Ok(ProjectList { projects, meta })
}

fn parse<'a>(content: &'a str, what: &'static str) -> Result<Shape<'a>, IndexParseError> {
    serde_json::from_str(content).map_err(|source| IndexParseError::Json {
        what,
        line: source.line(),
        column: source.column(),
        source,
    })
}

fn not_a_page(what: &'static str, why: String) -> IndexParseError {
    IndexParseError::NotAPage { what, why }
}

/// `meta`: its `api-version` (a number is read as the version it spells), an integer
/// `_last-serial`, and every other member kept as it came. Anything but an object reads as no
/// `meta` at all (API version 1.0).
fn read_meta(meta: Option<&Shape<'_>>) -> Meta {
    let mut out = Meta::default();
    let Some(Shape::Map(members)) = meta else {
        return out;
    };
    let mut seen_version = false;
    let mut seen_serial = false;
    for (key, value) in members {
        match (key.as_ref(), value) {
            ("api-version", Shape::Str(version)) if !seen_version => {
                seen_version = true;
                out.api_version = version.to_string();
            }
            ("api-version", Shape::Float(_)) if !seen_version => {
                seen_version = true;
                out.api_version = value.to_json();
            }
            // `2` is API 2.0, which must be refused, not read as a version it does not spell.
            ("api-version", Shape::Unsigned(major)) if !seen_version => {
                seen_version = true;
                out.api_version = format!("{major}.0");
            }
            ("_last-serial", Shape::Unsigned(serial)) if !seen_serial => {
                seen_serial = true;
                out.last_serial = Some(*serial);
            }
            _ => out.extra.push((key.to_string(), value.to_json())),
        }
    }
    out
}

fn read_status(status: &Shape<'_>) -> Option<ProjectStatus> {
    Some(ProjectStatus {
        status: text(status.get("status"))?,
        reason: text(status.get("reason")).filter(|r| !r.is_empty()),
    })
}

/// One `files[]` entry, or why it cannot be served.
fn read_file(entry: &Shape<'_>) -> Result<IndexFile, String> {
    if !matches!(entry, Shape::Map(_)) {
        return Err(format!("the entry is {}, not an object", entry.kind()));
    }
    let required = |key: &str| match entry.get(key) {
        Some(Shape::Str(value)) if !value.trim().is_empty() => Ok(value.to_string()),
        Some(Shape::Str(_)) => Err(format!("its `{key}` is empty")),
        Some(other) => Err(format!("its `{key}` is {}, not a string", other.kind())),
        None => Err(format!("it has no `{key}`")),
    };
    let filename = required("filename")?;
    let url = required("url")?;
    let hashes = match entry.get("hashes") {
        None | Some(Shape::Null) => Hashes::new(),
        Some(table) => read_hashes(table).map_err(|why| format!("its `hashes` {why}"))?,
    };
    let requires_python = match entry.get("requires-python") {
        None | Some(Shape::Null) => None,
        Some(Shape::Str(specifier)) => Some(specifier.to_string()).filter(|s| !s.is_empty()),
        Some(other) => {
            return Err(format!(
                "its `requires-python` is {}, not a string",
                other.kind()
            ));
        }
    };
    let yanked = match entry.get("yanked") {
        None | Some(Shape::Null | Shape::Bool(false)) => Yanked::No,
        Some(Shape::Bool(true)) => Yanked::Yes { reason: None },
        // PEP 691: any string means yanked, an empty one included.
        Some(Shape::Str(reason)) => Yanked::Yes {
            reason: Some(reason.to_string()).filter(|r| !r.is_empty()),
        },
        Some(other) => {
            return Err(format!(
                "its `yanked` is {}, neither a boolean nor a reason",
                other.kind()
            ));
        }
    };
    Ok(IndexFile {
        filename,
        url,
        hashes,
        requires_python,
        yanked,
        core_metadata: read_core_metadata(entry),
        gpg_sig: match entry.get("gpg-sig") {
            Some(Shape::Bool(signed)) => Some(*signed),
            _ => None,
        },
        size: match entry.get("size") {
            Some(Shape::Unsigned(size)) => Some(*size),
            _ => None,
        },
        upload_time: text(entry.get("upload-time")).filter(|t| !t.is_empty()),
        provenance: text(entry.get("provenance")).filter(|p| !p.is_empty()),
    })
}

/// A hash table: name to hex digest. Names are read in lower case (`SHA256` is `sha256`); a
/// digest that is not a string makes the table unreadable, since the file could not be
/// verified by it.
fn read_hashes(table: &Shape<'_>) -> Result<Hashes, String> {
    let Shape::Map(members) = table else {
        return Err(format!("is {}, not an object", table.kind()));
    };
    let mut hashes = Hashes::new();
    for (name, digest) in members {
        let Shape::Str(digest) = digest else {
            return Err(format!("has `{name}` as {}, not a string", digest.kind()));
        };
        let name: Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        hashes.get_or_insert_with(&name, || digest.to_string());
    }
    Ok(hashes)
}

/// [PEP 714]: `core-metadata` decides when present, whatever the legacy keys say (and PyPI's
/// misnamed `data-dist-info-metadata`, which uv still reads). A value of another type is read
/// as "not offered": installers then read the wheel itself, which always works.
///
/// [PEP 714]: https://peps.python.org/pep-0714/
fn read_core_metadata(entry: &Shape<'_>) -> CoreMetadata {
    let offered = [
        "core-metadata",
        "dist-info-metadata",
        "data-dist-info-metadata",
    ]
    .iter()
    .find_map(|key| entry.get(key).filter(|v| !matches!(v, Shape::Null)));
    match offered {
        Some(Shape::Bool(true)) => CoreMetadata::Present,
        Some(table @ Shape::Map(_)) => match read_hashes(table) {
            Ok(hashes) if hashes.is_empty() => CoreMetadata::Present,
            Ok(hashes) => CoreMetadata::Hashes(hashes),
            Err(_) => CoreMetadata::Absent,
        },
        _ => CoreMetadata::Absent,
    }
}

fn text(value: Option<&Shape<'_>>) -> Option<String> {
    value.and_then(Shape::as_str).map(str::to_owned)
}

/// A list of strings; other items, and anything but a list, are skipped.
fn texts(value: Option<&Shape<'_>>) -> Vec<String> {
    match value {
        Some(Shape::Seq(items)) => items
            .iter()
            .filter_map(Shape::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}
