//! An operator's catalog layered over another (`[catalog] extend` in the proxy's
//! configuration): a file in the catalog's own format that adds or corrects facts between
//! wheelgate releases (a new torch release, a backend, an architecture set, a routing name).
//!
//! Layering, key by key:
//! - `cuda_families`, `sm_sets`, `rocm_gfx`: an entry of the overlay adds or replaces the
//!   entry of that name;
//! - `xpu.device_ips`: replaced when given;
//! - `[[release]]`: matched by `torch`. A release the base lacks is added (it must then be
//!   complete: `backends` at least). One it has is corrected: `inferred` replaced when given,
//!   `companions` and `plain` merged key by key, each backend of `backends` replacing that
//!   backend's entry; `replace = true` replaces the whole release instead (to remove a backend);
//! - `routing`: each list's names are added.
//!
//! The overlay is checked alone first (unknown keys, wrong shapes: its own line and column),
//! then the layered whole with the built-in catalog's rules (an unknown sm set names the
//! overlay's release and its line).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Catalog, CatalogError};

/// What the overlay changed: one fact, where the overlay states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayFact {
    /// 1-based line in the overlay.
    pub line: usize,
    /// `release 2.16 (added)`, `release 2.15 backend cu126 (corrected)`, `sm set cu13x_216 (added)`.
    pub fact: String,
}

/// A catalog with an overlay, and what the overlay changed.
#[derive(Debug, Clone)]
pub struct Overlaid {
    /// The layered catalog.
    pub catalog: Catalog,
    /// What the overlay added or corrected, in the overlay's order.
    pub facts: Vec<OverlayFact>,
}

/// An overlay that cannot be layered.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("line {line}, column {column}: {message}")]
    /// Not TOML, or a key or value of the wrong shape (the toml reader's message).
    Shape {
        /// 1-based line in the overlay.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The toml reader's message.
        message: String,
    },
    #[error("line {line}, `{key}`: {source}")]
    /// The layered catalog breaks one of the catalog's rules, at this key of the overlay.
    Rule {
        /// 1-based line in the overlay.
        line: usize,
        /// The key at fault (`release 2.16 backends.cu134`).
        key: String,
        /// The rule broken.
        #[source]
        source: CatalogError,
    },
    #[error(
        "release {torch} (line {line}) is not in the built-in catalog, so it must be complete: it has no `backends`"
    )]
    /// A new release without backends.
    Incomplete {
        /// The release line as written.
        torch: String,
        /// 1-based line of its `torch` key.
        line: usize,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverlay {
    updated: Option<toml::Value>,
    #[serde(default)]
    cuda_families: BTreeMap<String, toml::Value>,
    #[serde(default)]
    sm_sets: BTreeMap<String, toml::Value>,
    #[serde(default)]
    rocm_gfx: BTreeMap<String, toml::Value>,
    xpu: Option<toml::Table>,
    #[serde(default)]
    release: Vec<RawOverlayRelease>,
    routing: Option<RawOverlayRouting>,
}

/// A release as the overlay gives it: every key optional but `torch`; `backends`' entries
/// have the catalog's own shape (checked when the whole is read).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverlayRelease {
    torch: String,
    #[serde(default)]
    replace: bool,
    inferred: Option<bool>,
    companions: Option<toml::Table>,
    plain: Option<toml::Table>,
    backends: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverlayRouting {
    #[serde(default)]
    pytorch_built: Vec<String>,
    #[serde(default)]
    triton_family: Vec<String>,
    #[serde(default)]
    published_on_pypi: Vec<String>,
}

impl Catalog {
    /// The catalog `base` (the catalog's TOML form) with `overlay` layered over it, and what the
    /// overlay changed.
    pub fn from_toml_with_overlay(base: &str, overlay: &str) -> Result<Overlaid, OverlayError> {
        let raw: RawOverlay = toml::from_str(overlay).map_err(|err| shape_error(overlay, &err))?;
        let mut whole: toml::Table = toml::from_str(base).map_err(|err| shape_error(base, &err))?;
        let mut facts = Vec::new();
        let mut fact = |line: usize, text: String| facts.push(OverlayFact { line, fact: text });
        if let Some(updated) = raw.updated {
            fact(
                line_of_key(overlay, "updated"),
                "`updated` (replaced)".to_string(),
            );
            whole.insert("updated".into(), updated);
        }
        for (section, entries) in [
            ("cuda_families", raw.cuda_families),
            ("sm_sets", raw.sm_sets),
            ("rocm_gfx", raw.rocm_gfx),
        ] {
            let table = table_at(&mut whole, section);
            for (name, value) in entries {
                let verb = if table.contains_key(&name) {
                    "corrected"
                } else {
                    "added"
                };
                fact(
                    line_of_key(overlay, &name),
                    format!("{section} `{name}` ({verb})"),
                );
                table.insert(name, value);
            }
        }
        if let Some(xpu) = raw.xpu {
            let table = table_at(&mut whole, "xpu");
            for (key, value) in xpu {
                fact(
                    line_of_key(overlay, &key),
                    format!("xpu `{key}` (replaced)"),
                );
                table.insert(key, value);
            }
        }
        let mut release_lines = Vec::new();
        for release in raw.release {
            let line = line_of_release(overlay, &release.torch);
            release_lines.push((release.torch.clone(), line));
            layer_release(&mut whole, release, line, &mut fact)?;
        }
        if let Some(routing) = raw.routing {
            let table = table_at(&mut whole, "routing");
            for (key, names) in [
                ("pytorch_built", routing.pytorch_built),
                ("triton_family", routing.triton_family),
                ("published_on_pypi", routing.published_on_pypi),
            ] {
                let list = table
                    .entry(key)
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                let Some(list) = list.as_array_mut() else {
                    continue;
                };
                for name in names {
                    let value = toml::Value::String(name.clone());
                    if !list.contains(&value) {
                        fact(
                            line_of_key(overlay, key),
                            format!("routing `{key}` `{name}` (added)"),
                        );
                        list.push(value);
                    }
                }
            }
        }
        let text = toml::to_string(&whole).expect("a table serializes");
        let catalog = Catalog::from_toml(&text).map_err(|source| {
            let (key, line) = rule_place(&source, &release_lines, overlay);
            OverlayError::Rule { line, key, source }
        })?;
        Ok(Overlaid { catalog, facts })
    }
}

/// Layers one release of the overlay over `whole`'s `release` array.
fn layer_release(
    whole: &mut toml::Table,
    release: RawOverlayRelease,
    line: usize,
    fact: &mut impl FnMut(usize, String),
) -> Result<(), OverlayError> {
    let releases = whole
        .entry("release")
        .or_insert_with(|| toml::Value::Array(Vec::new()))
        .as_array_mut()
        .expect("the catalog's `release` is an array");
    let torch = release.torch.clone();
    let position = releases
        .iter()
        .position(|r| r.get("torch").and_then(toml::Value::as_str) == Some(torch.as_str()));
    let existing = match position {
        Some(index) if !release.replace => releases[index]
            .as_table_mut()
            .expect("a release is a table"),
        _ => {
            if release.backends.is_none() {
                return Err(OverlayError::Incomplete { torch, line });
            }
            let mut table = toml::Table::new();
            table.insert("torch".into(), toml::Value::String(torch.clone()));
            let verb = if position.is_some() {
                "replaced"
            } else {
                "added"
            };
            fact(line, format!("release {torch} ({verb})"));
            match position {
                Some(index) => releases[index] = toml::Value::Table(table),
                None => releases.push(toml::Value::Table(table)),
            }
            let index = position.unwrap_or(releases.len() - 1);
            let table = releases[index].as_table_mut().expect("just inserted");
            fill_release(table, release, None, line, fact);
            return Ok(());
        }
    };
    fill_release(existing, release, Some(&torch), line, fact);
    Ok(())
}

/// Writes the overlay's keys of a release into `table`; `correcting` names the release when it
/// corrects one the base has (each change is then a fact of its own).
fn fill_release(
    table: &mut toml::Table,
    release: RawOverlayRelease,
    correcting: Option<&str>,
    line: usize,
    fact: &mut impl FnMut(usize, String),
) {
    if let Some(inferred) = release.inferred {
        table.insert("inferred".into(), toml::Value::Boolean(inferred));
        if let Some(torch) = correcting {
            fact(line, format!("release {torch} `inferred` (corrected)"));
        }
    }
    for (key, entries) in [
        ("companions", release.companions),
        ("plain", release.plain),
        ("backends", release.backends),
    ] {
        let Some(entries) = entries else { continue };
        let target = table
            .entry(key)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("a release's maps are tables");
        for (name, value) in entries {
            if let Some(torch) = correcting {
                let verb = if target.contains_key(&name) {
                    "corrected"
                } else {
                    "added"
                };
                fact(line, format!("release {torch} {key} `{name}` ({verb})"));
            }
            target.insert(name, value);
        }
    }
}

/// The table at `key` of `whole`, created empty when absent.
fn table_at<'a>(whole: &'a mut toml::Table, key: &str) -> &'a mut toml::Table {
    whole
        .entry(key)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .expect("the catalog's sections are tables")
}

/// Where in the overlay a rule error lies: the release it names, else the file's first line.
fn rule_place(
    error: &CatalogError,
    releases: &[(String, usize)],
    overlay: &str,
) -> (String, usize) {
    let release = match error {
        CatalogError::UnknownSmSet {
            release, backend, ..
        } => Some((
            release.clone(),
            format!("release {release} backends.{backend}"),
        )),
        CatalogError::InvalidReleaseLine(text) => Some((text.clone(), format!("release {text}"))),
        CatalogError::InvalidValue { place, .. } => place
            .strip_prefix("release ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(|torch| (torch.to_string(), place.clone())),
        _ => None,
    };
    if let Some((torch, key)) = release
        && let Some((_, line)) = releases.iter().find(|(t, _)| *t == torch)
    {
        return (key, *line);
    }
    let key = match error {
        CatalogError::InvalidFamily(_) => "cuda_families",
        CatalogError::InvalidValue { place, .. } => place.as_str(),
        CatalogError::PublishedNotRouted(_) => "routing.published_on_pypi",
        _ => "release",
    }
    .to_string();
    let line = line_of_key(overlay, key.rsplit('.').next().unwrap_or(&key));
    (key, line)
}

fn shape_error(text: &str, error: &toml::de::Error) -> OverlayError {
    let (line, column) = error
        .span()
        .map_or((1, 1), |span| line_column(text, span.start));
    OverlayError::Shape {
        line,
        column,
        message: error.message().to_string(),
    }
}

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |at| before.len() - at - 1)
        + 1;
    (line, column)
}

/// The line of a release's `torch = "X"` in the overlay (1 when not found as written).
fn line_of_release(overlay: &str, torch: &str) -> usize {
    let wanted = format!("torch=\"{torch}\"");
    overlay
        .lines()
        .position(|line| line.replace([' ', '\t'], "").starts_with(&wanted))
        .map_or(1, |index| index + 1)
}

/// The first line that sets or opens `key` (1 when not found as written).
fn line_of_key(overlay: &str, key: &str) -> usize {
    overlay
        .lines()
        .position(|line| {
            let line = line
                .trim_start()
                .trim_start_matches('[')
                .trim_start_matches('"');
            line.starts_with(key)
                && line[key.len()..]
                    .trim_start_matches('"')
                    .trim_start()
                    .starts_with(['=', '.', ']'])
        })
        .map_or(1, |index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::super::EMBEDDED_CATALOG;
    use super::*;

    #[test]
    fn a_new_release_is_added_and_an_old_one_corrected() {
        let overlay = r#"
[sm_sets]
cu134_216 = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]

[[release]]
torch = "2.16"
companions = { torchvision = "0.31", torchaudio = "2.16" }
plain = { linux-x86_64 = "cu134" }
backends.cpu = {}
backends.cu134 = { sm = "cu134_216" }

[[release]]
torch = "2.9"
backends.cu129 = { sm = "cu12_legacy" }
"#;
        let overlaid = Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, overlay).unwrap();
        let newest = overlaid.catalog.newest_release();
        assert_eq!(newest.torch.to_string(), "2.16");
        assert!(!newest.inferred);
        let facts: Vec<String> = overlaid
            .facts
            .iter()
            .map(|f| format!("{}: {}", f.line, f.fact))
            .collect();
        assert_eq!(
            facts,
            [
                "3: sm_sets `cu134_216` (added)",
                "6: release 2.16 (added)",
                "13: release 2.9 backends `cu129` (corrected)",
            ]
        );
        // The rest of 2.9 stays.
        let nine = overlaid
            .catalog
            .releases()
            .iter()
            .find(|r| r.torch.to_string() == "2.9")
            .unwrap();
        assert!(nine.backends.len() > 3);
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let unknown_key = "[[release]]\ntorch = \"2.16\"\nbackend.cpu = {}\n";
        let error = Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, unknown_key).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("line 3, column 1: unknown field `backend`"),
            "{error}"
        );
        let unknown_set = "\n[[release]]\ntorch = \"2.16\"\nbackends.cu134 = { sm = \"nope\" }\n";
        let error = Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, unknown_set).unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 3, `release 2.16 backends.cu134`: release 2.16: backend `cu134` refers to an unknown sm set `nope`"
        );
        let incomplete = "[[release]]\ntorch = \"2.16\"\ninferred = false\n";
        let error = Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, incomplete).unwrap_err();
        assert!(
            matches!(error, OverlayError::Incomplete { line: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn replace_removes_a_backend() {
        let overlay = "[[release]]\ntorch = \"2.9\"\nreplace = true\ncompanions = { torchvision = \"0.24\", torchaudio = \"2.9\" }\nbackends.cpu = {}\n";
        let overlaid = Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, overlay).unwrap();
        let nine = overlaid
            .catalog
            .releases()
            .iter()
            .find(|r| r.torch.to_string() == "2.9")
            .unwrap();
        assert_eq!(nine.backends.len(), 1);
    }
}
