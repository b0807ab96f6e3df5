//! The one error type of the wheel-variants module.

/// Why variant metadata (a `{name}-{version}-variants.json` file, a wheel's
/// `*.dist-info/variant.json`, or a variant label) was rejected.
///
/// Paths are written like JSON pointers (`/variants/cuda12.8/nvidia/sm_arch`) so that labels
/// containing dots stay readable. Offending names are shortened to 80 characters, so that a
/// hostile file cannot flood a log.
#[derive(Debug, thiserror::Error)]
pub enum VariantsError {
    /// The text is not JSON at all (or nests deeper than `serde_json`'s limit).
    #[error("variant metadata is not valid JSON (line {line}, column {column})")]
    Json {
        /// The line of the parse error, from 1.
        line: usize,
        /// The column of the parse error, from 1.
        column: usize,
        #[source]
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A required key is absent.
    #[error("variant metadata has no `{path}`")]
    Missing {
        /// Where the key was expected, as a JSON pointer.
        path: String,
    },
    /// A key holds the wrong kind of JSON value.
    #[error("`{path}` must be {expected}")]
    WrongType {
        /// The key, as a JSON pointer.
        path: String,
        /// The kind of value expected (`an object`, `a string`).
        expected: &'static str,
    },
    /// The same key appears twice in one object, so its meaning is ambiguous.
    #[error("`{path}` lists `{key}` twice")]
    DuplicateKey {
        /// The object holding the key, as a JSON pointer.
        path: String,
        /// The repeated key, shortened.
        key: String,
    },
    /// A variant label outside `^[0-9a-z_.]+$`.
    #[error(
        "`{label}` is not a valid variant label (expected lowercase letters, digits, `_` and `.`)"
    )]
    InvalidLabel {
        /// The label as given, shortened.
        label: String,
    },
    /// A namespace outside `^[a-z0-9_]+$`.
    #[error(
        "`{name}` at `{path}` is not a valid variant namespace (expected lowercase letters, digits and `_`)"
    )]
    InvalidNamespace {
        /// Where the name is, as a JSON pointer.
        path: String,
        /// The namespace as given, shortened.
        name: String,
    },
    /// A feature name outside `^[a-z0-9_]+$`.
    #[error(
        "`{name}` at `{path}` is not a valid variant feature (expected lowercase letters, digits and `_`)"
    )]
    InvalidFeature {
        /// Where the name is, as a JSON pointer.
        path: String,
        /// The feature name as given, shortened.
        name: String,
    },
    /// A feature value outside `^[a-z0-9_.]+$`.
    #[error(
        "`{value}` at `{path}` is not a valid variant value (expected lowercase letters, digits, `_` and `.`)"
    )]
    InvalidValue {
        /// Where the value is, as a JSON pointer.
        path: String,
        /// The value as given, shortened.
        value: String,
    },
    /// A feature of a variant with an empty value list, which no machine could ever satisfy.
    #[error("`{path}` lists no values")]
    EmptyValues {
        /// The feature, as a JSON pointer.
        path: String,
    },
    /// More entries than a variants file may hold ([`MAX_ENTRIES`](super::schema::MAX_ENTRIES),
    /// [`MAX_VALUES`](super::schema::MAX_VALUES)): refused whole, so that choosing from a file
    /// is bounded work whatever it says.
    #[error("`{path}` holds {count} {what}, more than the {limit} a variants file may hold")]
    TooMany {
        /// Where, as a JSON pointer (`/` for the whole file).
        path: String,
        /// How many it holds (at least: counting stops past the limit).
        count: usize,
        /// What was counted (`entries`, `property values over all variants`).
        what: &'static str,
        /// The cap.
        limit: usize,
    },
    /// A `$schema` naming a format this crate does not read. PEP 825: tools MUST treat variant
    /// wheels of an unknown format version as unsupported, so the file is refused and the
    /// version's variant wheels are not served (see [`UNKNOWN_FORMAT`]).
    #[error(
        "{UNKNOWN_FORMAT} `{schema}` (read: the unversioned URL, `v0.0.2`, `v0.0.3`, variantlib's `v0.2.x` and PEP 825's `peps/825/v0.1.x`)"
    )]
    UnknownFormat {
        /// The `$schema` as given, shortened.
        schema: String,
    },
    /// A wheel's `variant.json` that does not describe exactly one variant.
    #[error(
        "a wheel's `variant.json` must describe exactly one variant, this one describes {count}"
    )]
    NotOneVariant {
        /// How many variants it describes.
        count: usize,
    },
}

/// How the message of [`VariantsError::UnknownFormat`] begins. The proxy keeps a variants
/// file's error as its message (a cached, cloneable string); the chooser tells this refusal
/// from an unreadable file by it, since the two are served differently (no variant wheel, or
/// the wheels chosen by their labels).
pub const UNKNOWN_FORMAT: &str = "variant metadata in a format this proxy does not read:";

/// Caps a name taken from untrusted input before it goes into an error message.
pub(crate) fn shorten(text: &str) -> String {
    const LIMIT: usize = 80;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}
