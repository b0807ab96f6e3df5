//! The variant metadata files: the index-level `{name}-{version}-variants.json` (PEP 825,
//! "Index-level metadata") and the per-wheel `*.dist-info/variant.json`, which has the same
//! shape with exactly one variant.
//!
//! Every generation PyTorch and the WheelNext drafts published is read into one model:
//!
//! - the bare `https://variants-schema.wheelnext.dev/` (torch 2.8);
//! - `v0.0.2` (torch 2.9): `providers.*.plugin-use`, and the values of a static namespace
//!   given as `default-priorities.property`;
//! - `v0.0.3` (PEP 817, torch 2.10): `providers.*.install-time` and a top-level
//!   `static-properties`;
//! - PEP 825's `peps/825/v0.1.x`: only `default-priorities.namespace` and `variants`;
//! - variantlib's `v0.2.x` (variantlib 0.2, the reference implementation): a static namespace's
//!   values in `providers.<ns>.static-properties`, its feature order in
//!   `providers.<ns>.feature-order`.
//!
//! A file without `$schema` is read too (variantlib does not require one). A `$schema` naming
//! any other format is refused ([`VariantsError::UnknownFormat`]): PEP 825 says tools MUST
//! treat variant wheels of an unknown format version as unsupported, and a format read as if
//! known can serve the wrong variant silently. Within a known format unknown keys are ignored.
//! Names are
//! validated (namespace and feature `^[a-z0-9_]+$`, value `^[a-z0-9_.]+$`, label
//! `^[0-9a-z_.]+$`) and any malformed input is an error, never a panic.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::{VariantsError, shorten};
use super::label::check_label;

/// The properties of one variant: namespace → feature → values. The values of a feature are a
/// set (a machine needs only one of them); files need not list them sorted.
pub type Properties = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// A feature with its values in the order the file gives them, most preferred first. Used where
/// order carries meaning: `static-properties` and `default-priorities.property`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedFeature {
    /// The feature name.
    pub name: String,
    /// Its values, most preferred first.
    pub values: Vec<String>,
}

/// One entry of `providers`: the plugin that would report a namespace's supported values.
/// This crate never runs plugins; it computes the reference providers' answers itself
/// (see [`super::properties`]), so these fields are kept for display and for static-ness.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provider {
    /// PEP 508 marker deciding where the provider applies (`platform_system == 'Linux'`).
    /// Not evaluated here.
    pub enable_if: Option<String>,
    /// Requirements that install the provider plugin (`nvidia-variant-provider>=0.0.2,<1.0.0`).
    pub requires: Vec<String>,
    /// The plugin's entry point (`nvidia_variant_provider.plugin:NvidiaVariantPlugin`).
    pub plugin_api: Option<String>,
    /// `v0.0.3`: `false` marks a static namespace whose values come from `static-properties`.
    pub install_time: Option<bool>,
    /// `v0.0.2`: `none` marks a static namespace whose values come from
    /// `default-priorities.property`.
    pub plugin_use: Option<String>,
    /// Whether the provider is only used when the user enables it.
    pub optional: Option<bool>,
    /// variantlib's `v0.2.x`: `static-properties`, the values of a static namespace, most
    /// preferred first, its features in `feature-order` where given, else in document order.
    pub static_properties: Option<Vec<RankedFeature>>,
    /// variantlib's `v0.2.x`: `feature-order`, the static namespace's features, most preferred
    /// first.
    pub feature_order: Vec<String>,
}

impl Provider {
    /// Whether the namespace is static: its supported values are written in the file, not
    /// reported by a plugin at install time (PyTorch's `priority`).
    pub fn is_static(&self) -> bool {
        self.install_time == Some(false)
            || self.plugin_use.as_deref() == Some("none")
            || self.static_properties.is_some()
    }
}

/// Which draft of the variant metadata format a file declares in `$schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaGeneration {
    /// `https://variants-schema.wheelnext.dev/` without a version (torch 2.8).
    Unversioned,
    /// `https://variants-schema.wheelnext.dev/v0.0.2.json` (torch 2.9).
    V0_0_2,
    /// `https://variants-schema.wheelnext.dev/v0.0.3.json`, PEP 817 (torch 2.10).
    V0_0_3,
    /// `https://variants-schema.wheelnext.dev/peps/825/v0.1.x.json`, PEP 825.
    Pep825,
    /// `https://variants-schema.wheelnext.dev/v0.2.x.json`, what variantlib 0.2 (the reference
    /// implementation) writes: static namespaces in `providers.<ns>.static-properties`.
    Variantlib0_2,
    /// No `$schema`: read as the union of the formats above.
    Unstated,
    /// A `$schema` this crate does not read: [`parse_variants_json`] refuses such a file.
    Unknown,
}

/// A parsed `{name}-{version}-variants.json` or `variant.json`, in one model for every
/// generation (PEP 817 and PEP 825).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VariantsFile {
    /// The `$schema` URL, if any.
    pub schema: Option<String>,
    /// `default-priorities.namespace`: namespaces, most preferred first.
    pub namespace_priorities: Vec<String>,
    /// `default-priorities.feature`: per namespace, features to prefer over the provider's order.
    pub feature_priorities: BTreeMap<String, Vec<String>>,
    /// `default-priorities.property`: per namespace and feature, values to prefer over the
    /// provider's order.
    pub property_priorities: BTreeMap<String, Vec<RankedFeature>>,
    /// The supported values of static namespaces, most preferred first: `static-properties`
    /// (`v0.0.3`), or for a `v0.0.2` provider with `plugin-use: none`, its
    /// `default-priorities.property` entry.
    pub static_properties: BTreeMap<String, Vec<RankedFeature>>,
    /// `providers`, by namespace.
    pub providers: BTreeMap<String, Provider>,
    /// `variants`: every label with its properties.
    pub variants: BTreeMap<String, Properties>,
}

impl VariantsFile {
    /// The draft named by `$schema`.
    pub fn generation(&self) -> SchemaGeneration {
        match self.schema.as_deref() {
            Some(schema) => generation_of(schema),
            None => SchemaGeneration::Unstated,
        }
    }

    /// The labels, in lexical order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.variants.keys().map(String::as_str)
    }

    /// The properties of one label.
    pub fn properties(&self, label: &str) -> Option<&Properties> {
        self.variants.get(label)
    }

    /// Whether `label` is the null variant: present, with no properties (PEP 825 reserves the
    /// label `null` for it; torch 2.8 called it `00000000`).
    pub fn is_null_variant(&self, label: &str) -> bool {
        self.variants
            .get(label)
            .is_some_and(|props| props.values().all(BTreeMap::is_empty))
    }

    /// Whether the file declares `namespace` static, so that its supported values come from
    /// [`Self::static_properties`] rather than from the machine.
    pub fn is_static_namespace(&self, namespace: &str) -> bool {
        self.static_properties.contains_key(namespace)
            || self
                .providers
                .get(namespace)
                .is_some_and(Provider::is_static)
    }

    /// The only variant of a wheel's `variant.json`; `None` unless there is exactly one.
    pub fn single_variant(&self) -> Option<(&str, &Properties)> {
        let mut iter = self.variants.iter();
        match (iter.next(), iter.next()) {
            (Some((label, props)), None) => Some((label.as_str(), props)),
            _ => None,
        }
    }
}

/// The format a `$schema` URL names. `v0.2.x` and `peps/825/v0.1.x` take any patch number
/// (`v0.2.0`, `v0.1.1`): patches of these drafts change no key this crate reads.
fn generation_of(schema: &str) -> SchemaGeneration {
    let Some(rest) = schema
        .trim()
        .strip_prefix("https://variants-schema.wheelnext.dev")
    else {
        return SchemaGeneration::Unknown;
    };
    let patch_of = |prefix: &str| {
        rest.strip_prefix(prefix)
            .and_then(|tail| tail.strip_suffix(".json"))
            .is_some_and(|patch| !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()))
    };
    match rest {
        "" | "/" => SchemaGeneration::Unversioned,
        "/v0.0.2.json" => SchemaGeneration::V0_0_2,
        "/v0.0.3.json" => SchemaGeneration::V0_0_3,
        _ if patch_of("/peps/825/v0.1.") => SchemaGeneration::Pep825,
        _ if patch_of("/v0.2.") => SchemaGeneration::Variantlib0_2,
        _ => SchemaGeneration::Unknown,
    }
}

/// Parses an index-level `{name}-{version}-variants.json` (PEP 825), any generation.
///
/// Real input (torch 2.10, shortened):
///
/// ```json
/// {"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
///  "default-priorities": {"namespace": ["nvidia", "intel", "amd", "priority"]},
///  "providers": {"priority": {"install-time": false, "requires": []}},
///  "static-properties": {"priority": {"order": ["1", "2", "3"]}},
///  "variants": {"null": {},
///               "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"],
///                                       "sm_arch": ["75_real", "120_virtual"]},
///                            "priority": {"order": ["1"]}}}}
/// ```
pub fn parse_variants_json(content: &str) -> Result<VariantsFile, VariantsError> {
    // A byte-order mark is not JSON, but editors on Windows write one.
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let root: Json = serde_json::from_str(content).map_err(|source| VariantsError::Json {
        line: source.line(),
        column: source.column(),
        source,
    })?;
    let top = object(&root, "/")?;

    let schema = match lookup(top, "$schema") {
        Some(value) => Some(string(value, "/$schema")?),
        None => None,
    };
    if let Some(schema) = &schema
        && generation_of(schema) == SchemaGeneration::Unknown
    {
        return Err(VariantsError::UnknownFormat {
            schema: shorten(schema),
        });
    }

    let priorities_path = "/default-priorities";
    let priorities = object(
        lookup(top, "default-priorities").ok_or_else(|| missing(priorities_path))?,
        priorities_path,
    )?;
    let namespace_path = "/default-priorities/namespace";
    let namespace_priorities = names(
        lookup(priorities, "namespace").ok_or_else(|| missing(namespace_path))?,
        namespace_path,
        Name::Namespace,
    )?;
    let feature_priorities = match lookup(priorities, "feature") {
        Some(json) => by_namespace(json, "/default-priorities/feature", |json, path| {
            names(json, path, Name::Feature)
        })?,
        None => BTreeMap::new(),
    };
    let property_priorities = match lookup(priorities, "property") {
        Some(json) => by_namespace(json, "/default-priorities/property", |json, path| {
            ranked_features(json, path, AllowEmpty::Yes)
        })?,
        None => BTreeMap::new(),
    };

    let providers = match lookup(top, "providers") {
        Some(json) => by_namespace(json, "/providers", provider)?,
        None => BTreeMap::new(),
    };

    let mut static_properties = match lookup(top, "static-properties") {
        Some(json) => by_namespace(json, "/static-properties", |json, path| {
            ranked_features(json, path, AllowEmpty::Yes)
        })?,
        None => BTreeMap::new(),
    };
    // variantlib's `v0.2.x`: a static namespace's values, and its feature order, sit in its
    // provider entry.
    let mut feature_priorities = feature_priorities;
    for (namespace, provider) in &providers {
        if let Some(features) = &provider.static_properties {
            let mut features = features.clone();
            let rank = |name: &str| {
                provider
                    .feature_order
                    .iter()
                    .position(|f| f == name)
                    .unwrap_or(usize::MAX)
            };
            features.sort_by_key(|feature| rank(&feature.name));
            static_properties
                .entry(namespace.clone())
                .or_insert(features);
            if !provider.feature_order.is_empty() {
                feature_priorities
                    .entry(namespace.clone())
                    .or_insert_with(|| provider.feature_order.clone());
            }
        }
    }
    // `v0.0.2` had no `static-properties`: a provider with `plugin-use: none` took its values
    // from `default-priorities.property` (torch 2.9's `priority :: order`).
    for (namespace, provider) in &providers {
        if provider.is_static()
            && !static_properties.contains_key(namespace)
            && let Some(features) = property_priorities.get(namespace)
        {
            static_properties.insert(namespace.clone(), features.clone());
        }
    }

    let variants_path = "/variants";
    let variants = variant_map(
        lookup(top, "variants").ok_or_else(|| missing(variants_path))?,
        variants_path,
    )?;

    Ok(VariantsFile {
        schema,
        namespace_priorities,
        feature_priorities,
        property_priorities,
        static_properties,
        providers,
        variants,
    })
}

/// Parses a wheel's `*.dist-info/variant.json` (PEP 825, "Variant metadata"): the same shape
/// as the index-level file, with exactly one variant, the wheel's own.
///
/// Example input, written for illustration (no wheel's file is captured in the fixtures): the
/// index-level shape of torch 2.10, cut down to the wheel's one label:
///
/// ```json
/// {"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
///  "default-priorities": {"namespace": ["nvidia", "intel", "amd", "priority"]},
///  "variants": {"null": {}}}
/// ```
pub fn parse_variant_json(content: &str) -> Result<VariantsFile, VariantsError> {
    let file = parse_variants_json(content)?;
    if file.variants.len() == 1 {
        Ok(file)
    } else {
        Err(VariantsError::NotOneVariant {
            count: file.variants.len(),
        })
    }
}

/// The three kinds of name a property is made of.
#[derive(Clone, Copy)]
enum Name {
    Namespace,
    Feature,
    Value,
}

impl Name {
    fn check(self, text: &str, path: &str) -> Result<(), VariantsError> {
        let allow_dot = matches!(self, Name::Value);
        let valid = !text.is_empty()
            && text.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'_'
                    || (allow_dot && b == b'.')
            });
        if valid {
            return Ok(());
        }
        let path = path.to_string();
        Err(match self {
            Name::Namespace => VariantsError::InvalidNamespace {
                path,
                name: shorten(text),
            },
            Name::Feature => VariantsError::InvalidFeature {
                path,
                name: shorten(text),
            },
            Name::Value => VariantsError::InvalidValue {
                path,
                value: shorten(text),
            },
        })
    }
}

/// Whether a feature may list no values: harmless in priorities, meaningless in a variant.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AllowEmpty {
    Yes,
    No,
}

fn missing(path: &str) -> VariantsError {
    VariantsError::Missing {
        path: path.to_string(),
    }
}

fn wrong_type(path: &str, expected: &'static str) -> VariantsError {
    VariantsError::WrongType {
        path: path.to_string(),
        expected,
    }
}

fn child(path: &str, key: &str) -> String {
    if path == "/" {
        format!("/{key}")
    } else {
        format!("{path}/{key}")
    }
}

/// The entries of a JSON object, rejecting duplicate keys (whose meaning would depend on which
/// one a reader keeps).
/// The most entries one list or object of a variants file may hold. PyTorch's list about ten
/// variants and at most about fifteen values in a list (`sm_arch`).
pub const MAX_ENTRIES: usize = 1024;
/// The most property values all variants of a file may list together.
pub const MAX_VALUES: usize = 16_384;

fn object<'a>(json: &'a Json, path: &str) -> Result<&'a [(String, Json)], VariantsError> {
    let Json::Object(entries) = json else {
        return Err(wrong_type(path, "an object"));
    };
    too_many(path, entries.len(), "entries", MAX_ENTRIES)?;
    let mut seen = std::collections::BTreeSet::new();
    for (key, _) in entries {
        if !seen.insert(key.as_str()) {
            return Err(VariantsError::DuplicateKey {
                path: path.to_string(),
                key: shorten(key),
            });
        }
    }
    Ok(entries)
}

fn lookup<'a>(entries: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn string(json: &Json, path: &str) -> Result<String, VariantsError> {
    match json {
        Json::String(text) => Ok(text.clone()),
        _ => Err(wrong_type(path, "a string")),
    }
}

fn boolean(json: &Json, path: &str) -> Result<bool, VariantsError> {
    match json {
        Json::Bool(value) => Ok(*value),
        _ => Err(wrong_type(path, "`true` or `false`")),
    }
}

fn too_many(
    path: &str,
    count: usize,
    what: &'static str,
    limit: usize,
) -> Result<(), VariantsError> {
    if count > limit {
        return Err(VariantsError::TooMany {
            path: path.to_string(),
            count,
            what,
            limit,
        });
    }
    Ok(())
}

fn strings(json: &Json, path: &str) -> Result<Vec<String>, VariantsError> {
    let Json::Array(items) = json else {
        return Err(wrong_type(path, "an array of strings"));
    };
    too_many(path, items.len(), "entries", MAX_ENTRIES)?;
    items
        .iter()
        .map(|item| match item {
            Json::String(text) => Ok(text.clone()),
            _ => Err(wrong_type(path, "an array of strings")),
        })
        .collect()
}

/// A list of names, validated, duplicates dropped (the lists are sets or priority orders, where
/// a repeat adds nothing).
fn names(json: &Json, path: &str, kind: Name) -> Result<Vec<String>, VariantsError> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for name in strings(json, path)? {
        kind.check(&name, path)?;
        if seen.insert(name.clone()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// An object keyed by namespace, each value read by `read`.
fn by_namespace<T>(
    json: &Json,
    path: &str,
    read: impl Fn(&Json, &str) -> Result<T, VariantsError>,
) -> Result<BTreeMap<String, T>, VariantsError> {
    let mut out = BTreeMap::new();
    for (namespace, value) in object(json, path)? {
        Name::Namespace.check(namespace, path)?;
        let value = read(value, &child(path, namespace))?;
        out.insert(namespace.clone(), value);
    }
    Ok(out)
}

/// `{"feature": ["value", ...], ...}` in document order.
fn ranked_features(
    json: &Json,
    path: &str,
    allow_empty: AllowEmpty,
) -> Result<Vec<RankedFeature>, VariantsError> {
    let mut out = Vec::new();
    for (feature, values) in object(json, path)? {
        Name::Feature.check(feature, path)?;
        let feature_path = child(path, feature);
        let values = names(values, &feature_path, Name::Value)?;
        if values.is_empty() && allow_empty == AllowEmpty::No {
            return Err(VariantsError::EmptyValues { path: feature_path });
        }
        out.push(RankedFeature {
            name: feature.clone(),
            values,
        });
    }
    Ok(out)
}

fn provider(json: &Json, path: &str) -> Result<Provider, VariantsError> {
    let entries = object(json, path)?;
    let text = |key: &str| -> Result<Option<String>, VariantsError> {
        lookup(entries, key)
            .map(|v| string(v, &child(path, key)))
            .transpose()
    };
    let flag = |key: &str| -> Result<Option<bool>, VariantsError> {
        lookup(entries, key)
            .map(|v| boolean(v, &child(path, key)))
            .transpose()
    };
    Ok(Provider {
        enable_if: text("enable-if")?,
        requires: lookup(entries, "requires")
            .map(|v| strings(v, &child(path, "requires")))
            .transpose()?
            .unwrap_or_default(),
        plugin_api: text("plugin-api")?,
        install_time: flag("install-time")?,
        plugin_use: text("plugin-use")?,
        optional: flag("optional")?,
        static_properties: lookup(entries, "static-properties")
            .map(|v| ranked_features(v, &child(path, "static-properties"), AllowEmpty::No))
            .transpose()?,
        feature_order: lookup(entries, "feature-order")
            .map(|v| names(v, &child(path, "feature-order"), Name::Feature))
            .transpose()?
            .unwrap_or_default(),
    })
}

fn variant_map(json: &Json, path: &str) -> Result<BTreeMap<String, Properties>, VariantsError> {
    let mut out = BTreeMap::new();
    let mut values = 0;
    for (label, properties) in object(json, path)? {
        check_label(label)?;
        let properties = by_namespace(properties, &child(path, label), |json, path| {
            Ok(ranked_features(json, path, AllowEmpty::No)?
                .into_iter()
                .map(|feature| (feature.name, feature.values))
                .collect())
        })?;
        let properties: Properties = properties;
        values += properties
            .values()
            .flat_map(|features| features.values())
            .map(Vec::len)
            .sum::<usize>();
        too_many(
            path,
            values,
            "property values over all variants",
            MAX_VALUES,
        )?;
        out.insert(label.clone(), properties);
    }
    Ok(out)
}

/// A JSON tree that keeps the order of object keys (the order of `static-properties` features
/// is a priority order) and their duplicates (so they can be rejected). `serde_json::Value`
/// would sort keys and drop duplicates without the `preserve_order` feature.
enum Json {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Json, E> {
        Ok(Json::Bool(value))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_str<E>(self, value: &str) -> Result<Json, E> {
        Ok(Json::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Json, E> {
        Ok(Json::String(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_file_past_the_total_cap_on_values_is_refused() {
        let values: Vec<String> = (0..1000).map(|i| format!("\"{i}_real\"")).collect();
        let variant = format!(r#"{{"nvidia": {{"sm_arch": [{}]}}}}"#, values.join(","));
        let variants: Vec<String> = (0..=MAX_VALUES / 1000)
            .map(|i| format!(r#""v{i}": {variant}"#))
            .collect();
        let text = format!(
            r#"{{"default-priorities": {{"namespace": ["nvidia"]}}, "variants": {{{}}}}}"#,
            variants.join(",")
        );
        let err = parse_variants_json(&text).unwrap_err().to_string();
        assert!(
            err.contains("property values over all variants")
                && err.contains(&format!("more than the {MAX_VALUES}")),
            "{err}"
        );
    }
    use super::*;
    use crate::variants::fixture;

    fn ranked(name: &str, values: &[&str]) -> RankedFeature {
        RankedFeature {
            name: name.to_string(),
            values: values.iter().map(ToString::to_string).collect(),
        }
    }

    fn labels(file: &VariantsFile) -> Vec<&str> {
        file.labels().collect()
    }

    #[test]
    fn parses_torch_2_8_unversioned() {
        let Some(text) = fixture("torch-2.8.0-variants.json") else {
            return;
        };
        let file = parse_variants_json(&text).unwrap();
        assert_eq!(file.generation(), SchemaGeneration::Unversioned);
        assert_eq!(labels(&file), ["00000000", "cu126", "cu128", "cu129"]);
        assert_eq!(file.namespace_priorities, ["nvidia"]);
        assert!(file.is_null_variant("00000000"));
        assert!(!file.is_null_variant("cu128"));
        assert!(file.static_properties.is_empty());
        let cu129 = &file.properties("cu129").unwrap()["nvidia"];
        assert_eq!(cu129["cuda_version_lower_bound"], ["12.9"]);
        // Value lists are sets, not sorted in this file.
        assert_eq!(cu129["sm_arch"][0], "100_real");
        assert_eq!(cu129["sm_arch"].len(), 8);
        let nvidia = &file.providers["nvidia"];
        assert_eq!(
            nvidia.plugin_api.as_deref(),
            Some("nvidia_variant_provider.plugin:NvidiaVariantPlugin")
        );
        assert_eq!(nvidia.requires, ["nvidia-variant-provider>=0.0.1,<1.0.0"]);
        assert!(!nvidia.is_static());
    }

    #[test]
    fn parses_v0_0_2_fixtures_with_static_values_in_property_priorities() {
        for name in [
            "torch-2.9.0-variants.json",
            "torchvision-0.24.0-variants.json",
        ] {
            let Some(text) = fixture(name) else {
                return;
            };
            let file = parse_variants_json(&text).unwrap();
            assert_eq!(file.generation(), SchemaGeneration::V0_0_2, "{name}");
            assert_eq!(
                labels(&file),
                [
                    "cuda12.6", "cuda12.8", "cuda13.0", "null", "rocm6.3", "rocm6.4", "xpu"
                ]
            );
            assert_eq!(
                file.namespace_priorities,
                ["nvidia", "intel", "amd", "priority"]
            );
            assert_eq!(
                file.providers["priority"].plugin_use.as_deref(),
                Some("none")
            );
            assert!(file.is_static_namespace("priority"));
            assert!(!file.is_static_namespace("nvidia"));
            assert_eq!(
                file.static_properties["priority"],
                [ranked("order", &["1", "2", "3"])]
            );
            assert_eq!(
                file.properties("rocm6.4").unwrap()["amd"]["rocm_version"],
                ["6.4"]
            );
            assert_eq!(
                file.properties("xpu").unwrap()["intel"]["device_ip"].len(),
                6
            );
        }
    }

    #[test]
    fn parses_v0_0_3_fixtures_with_static_properties() {
        for name in [
            "torch-2.10.0-variants.json",
            "torchvision-0.25.0-variants.json",
        ] {
            let Some(text) = fixture(name) else {
                return;
            };
            let file = parse_variants_json(&text).unwrap();
            assert_eq!(file.generation(), SchemaGeneration::V0_0_3, "{name}");
            assert_eq!(
                labels(&file),
                [
                    "cuda12.6", "cuda12.8", "cuda13.0", "null", "rocm7.0", "rocm7.1", "xpu"
                ]
            );
            assert_eq!(file.providers["priority"].install_time, Some(false));
            assert!(file.property_priorities.is_empty());
            assert_eq!(
                file.static_properties["priority"],
                [ranked("order", &["1", "2", "3"])]
            );
            assert_eq!(
                file.properties("cuda13.0").unwrap()["priority"]["order"],
                ["1"]
            );
            assert!(file.is_null_variant("null"));
        }
    }

    #[test]
    fn parses_hand_written_v0_0_2() {
        let text = r#"{
            "$schema": "https://variants-schema.wheelnext.dev/v0.0.2.json",
            "default-priorities": {
                "namespace": ["x86_64", "tier"],
                "feature": {"x86_64": ["level"]},
                "property": {
                    "x86_64": {"level": ["v3", "v2"]},
                    "tier": {"rank": ["gold", "silver"], "speed": ["fast"]}
                }
            },
            "providers": {
                "x86_64": {"requires": ["provider-variant-x86-64"], "plugin-api": "x:Plugin",
                           "plugin-use": "all", "optional": true, "comment": "ignored"},
                "tier": {"requires": [], "plugin-use": "none"}
            },
            "variants": {"x86_64_v3": {"x86_64": {"level": ["v3"]}, "tier": {"rank": ["gold"]}}},
            "future-key": {"anything": [1, 2.5, null, true]}
        }"#;
        let file = parse_variants_json(text).unwrap();
        assert_eq!(file.feature_priorities["x86_64"], ["level"]);
        assert_eq!(
            file.property_priorities["x86_64"],
            [ranked("level", &["v3", "v2"])]
        );
        assert!(!file.is_static_namespace("x86_64"));
        assert!(file.is_static_namespace("tier"));
        // Document order of features is kept: `rank` before `speed`.
        assert_eq!(
            file.static_properties["tier"],
            [
                ranked("rank", &["gold", "silver"]),
                ranked("speed", &["fast"])
            ]
        );
        assert_eq!(file.providers["x86_64"].optional, Some(true));
        assert!(!file.static_properties.contains_key("x86_64"));
    }

    #[test]
    fn parses_pep_825_v0_1() {
        let text = r#"{
            "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
            "default-priorities": {"namespace": ["nvidia"]},
            "variants": {
                "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}},
                "null": {}
            }
        }"#;
        let file = parse_variants_json(text).unwrap();
        assert_eq!(file.generation(), SchemaGeneration::Pep825);
        assert!(file.providers.is_empty());
        assert!(file.static_properties.is_empty());
        assert_eq!(labels(&file), ["cuda13.0", "null"]);
    }

    #[test]
    fn parses_variantlib_v0_2_with_static_properties_in_the_provider() {
        // As variantlib 0.2.2 writes it (`VariantsJson.to_str`), torch 2.10's shape.
        let text = r#"{
            "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
            "default-priorities": {"namespace": ["nvidia", "priority"]},
            "providers": {
                "nvidia": {"plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
                           "requires": ["nvidia-variant-provider>=0.0.2,<1.0.0"]},
                "priority": {"static-properties": {"tier": ["gold"], "order": ["1", "2", "3"]},
                             "feature-order": ["order", "tier"]}
            },
            "variants": {"null": {},
                         "cuda12.8": {"nvidia": {"cuda_version_lower_bound": ["12.8"]},
                                      "priority": {"order": ["2"]}}}
        }"#;
        let file = parse_variants_json(text).unwrap();
        assert_eq!(file.generation(), SchemaGeneration::Variantlib0_2);
        assert!(file.is_static_namespace("priority"));
        assert!(!file.is_static_namespace("nvidia"));
        // Features in `feature-order`, values most preferred first.
        assert_eq!(
            file.static_properties["priority"],
            [ranked("order", &["1", "2", "3"]), ranked("tier", &["gold"])]
        );
        assert_eq!(file.feature_priorities["priority"], ["order", "tier"]);
        assert!(!file.static_properties.contains_key("nvidia"));
    }

    #[test]
    fn refuses_a_schema_of_an_unknown_format() {
        let file = |schema: &str| {
            format!(
                r#"{{"$schema": "{schema}", "default-priorities": {{"namespace": ["a"]}}, "variants": {{"null": {{}}}}}}"#
            )
        };
        for schema in [
            "https://variants-schema.wheelnext.dev/v9.0.0.json",
            "https://variants-schema.wheelnext.dev/v0.0.4.json",
            "https://variants-schema.wheelnext.dev/v0.3.0.json",
            "https://variants-schema.wheelnext.dev/peps/825/v0.2.0.json",
            "https://variants-schema.wheelnext.dev/peps/825/v0.1.json",
            "https://example.invalid/v0.0.3.json",
            "",
        ] {
            let error = parse_variants_json(&file(schema)).unwrap_err();
            assert!(
                matches!(error, VariantsError::UnknownFormat { .. }),
                "{schema}: {error}"
            );
            let message = error.to_string();
            assert!(
                message.starts_with(crate::variants::UNKNOWN_FORMAT)
                    && message.contains(&format!("`{schema}`")),
                "{message}"
            );
        }
        for (schema, generation) in [
            (
                "https://variants-schema.wheelnext.dev/",
                SchemaGeneration::Unversioned,
            ),
            (
                "https://variants-schema.wheelnext.dev/v0.0.2.json",
                SchemaGeneration::V0_0_2,
            ),
            (
                "https://variants-schema.wheelnext.dev/peps/825/v0.1.12.json",
                SchemaGeneration::Pep825,
            ),
            (
                "https://variants-schema.wheelnext.dev/v0.2.3.json",
                SchemaGeneration::Variantlib0_2,
            ),
        ] {
            let parsed = parse_variants_json(&file(schema)).unwrap();
            assert_eq!(parsed.generation(), generation, "{schema}");
        }
        // No `$schema` at all: read (variantlib requires none either).
        let unstated =
            parse_variants_json(r#"{"default-priorities": {"namespace": ["a"]}, "variants": {}}"#)
                .unwrap();
        assert_eq!(unstated.generation(), SchemaGeneration::Unstated);
    }

    #[test]
    fn parses_dist_info_variant_json() {
        let text = r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {"namespace": ["nvidia", "priority"]},
            "providers": {"priority": {"install-time": false}},
            "static-properties": {"priority": {"order": ["1", "2"]}},
            "variants": {"cuda12.8": {"nvidia": {"sm_arch": ["90_real"]}, "priority": {"order": ["2"]}}}}"#;
        let file = parse_variant_json(text).unwrap();
        let (label, props) = file.single_variant().unwrap();
        assert_eq!(label, "cuda12.8");
        assert_eq!(props["nvidia"]["sm_arch"], ["90_real"]);

        let two = r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"x": {}, "y": {}}}"#;
        assert!(matches!(
            parse_variant_json(two),
            Err(VariantsError::NotOneVariant { count: 2 })
        ));
        let none = r#"{"default-priorities": {"namespace": ["a"]}, "variants": {}}"#;
        assert!(matches!(
            parse_variant_json(none),
            Err(VariantsError::NotOneVariant { count: 0 })
        ));
    }

    #[test]
    fn rejects_malformed_metadata_with_named_errors() {
        let cases: &[(&str, &str)] = &[
            ("", "not valid JSON"),
            ("{", "not valid JSON"),
            ("[1, 2]", "`/` must be an object"),
            (r#"{"variants": {}}"#, "no `/default-priorities`"),
            (
                r#"{"default-priorities": {}, "variants": {}}"#,
                "no `/default-priorities/namespace`",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}}"#,
                "no `/variants`",
            ),
            (
                r#"{"default-priorities": {"namespace": "nvidia"}, "variants": {}}"#,
                "`/default-priorities/namespace` must be an array of strings",
            ),
            (
                r#"{"default-priorities": {"namespace": ["Nvidia"]}, "variants": {}}"#,
                "`Nvidia` at `/default-priorities/namespace` is not a valid variant namespace",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"CUDA": {}}}"#,
                "`CUDA` is not a valid variant label",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"x": {"a": {"sm-arch": ["1"]}}}}"#,
                "`sm-arch` at `/variants/x/a` is not a valid variant feature",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"x": {"a": {"f": ["12,0"]}}}}"#,
                "`12,0` at `/variants/x/a/f` is not a valid variant value",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"x": {"a": {"f": []}}}}"#,
                "`/variants/x/a/f` lists no values",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {"x": {}, "x": {}}}"#,
                "`/variants` lists `x` twice",
            ),
            (
                r#"{"default-priorities": {"namespace": ["a"]}, "variants": {}, "providers": {"a": {"install-time": "no"}}}"#,
                "`/providers/a/install-time` must be `true` or `false`",
            ),
            (
                r#"{"$schema": 3, "default-priorities": {"namespace": ["a"]}, "variants": {}}"#,
                "`/$schema` must be a string",
            ),
        ];
        for (text, expected) in cases {
            let message = parse_variants_json(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}\n{message}");
        }
    }

    #[test]
    fn long_garbage_names_are_shortened_in_errors() {
        let label = "X".repeat(10_000);
        let text = format!(
            r#"{{"default-priorities": {{"namespace": ["a"]}}, "variants": {{"{label}": {{}}}}}}"#
        );
        let message = parse_variants_json(&text).unwrap_err().to_string();
        assert!(message.len() < 300, "{message}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "[".repeat(100_000);
        assert!(matches!(
            parse_variants_json(&text),
            Err(VariantsError::Json { .. })
        ));
        let text = format!(
            r#"{{"default-priorities": {{"namespace": ["a"]}}, "variants": {}}}"#,
            "{\"a\":".repeat(50_000)
        );
        assert!(parse_variants_json(&text).is_err());
    }

    #[test]
    fn every_truncation_of_a_real_file_fails_cleanly() {
        let Some(text) = fixture("torch-2.8.0-variants.json") else {
            return;
        };
        let full = parse_variants_json(&text).unwrap();
        for cut in 0..text.len() {
            if let Ok(partial) = parse_variants_json(&text[..cut]) {
                // Only trailing whitespace may be cut from a file that still parses.
                assert_eq!(partial, full);
            }
        }
    }

    #[test]
    fn accepts_a_byte_order_mark() {
        let text = "\u{feff}{\"default-priorities\": {\"namespace\": [\"a\"]}, \"variants\": {\"null\": {}}}";
        assert!(parse_variants_json(text).unwrap().is_null_variant("null"));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = parse_variants_json(&text);
        }

        #[test]
        fn json_like_text_never_panics(
            text in r#"[{}\[\]":,a-z0-9. ]{0,200}"#
        ) {
            let _ = parse_variants_json(&text);
        }
    }
}
