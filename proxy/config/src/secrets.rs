//! Where a secret comes from: an environment variable or a file, never the configuration file
//! itself. A secret written as a plain string is refused when the file is read, with the way to
//! give it instead.
//!
//! ```toml
//! token = { env = "ARTIFACTORY_TOKEN" }          # the variable's value
//! token = { file = "/run/secrets/artifactory" }   # the file's content, trailing newline removed
//! ```
//!
//! The value is read once, when the server starts ([`SecretSource::read`]); what the
//! configuration holds and shows is only the variable's name or the file's path.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The message for a secret written in the configuration file.
const PLAIN_TEXT_REFUSED: &str = "a secret written in the configuration file is refused \
     (anyone who can read the file, its backups or its version history would hold it); \
     give it as `{ env = \"VARIABLE\" }` or `{ file = \"/run/secrets/name\" }`";

/// Whether a configuration error is the refusal of a plain-text secret: its message must then
/// be shown without the offending line, which holds the secret.
pub fn is_plain_text_refusal(message: &str) -> bool {
    message.contains(PLAIN_TEXT_REFUSED)
}

/// Where one secret is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable of the server's process.
    Env(String),
    /// A file (a mounted Kubernetes or Docker secret); its content with surrounding whitespace
    /// removed, so the usual trailing newline does not end up in a header.
    File(PathBuf),
}

/// In the configuration reference: a table of one key, never the secret itself.
impl schemars::JsonSchema for SecretSource {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SecretSource".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A secret, read at start from an environment variable of the server's \
                process (`{ env = \"VARIABLE\" }`) or a file, such as a mounted Kubernetes or \
                Docker secret (`{ file = \"/run/secrets/name\" }`, surrounding whitespace \
                removed). A secret written in the file itself is refused.",
            "type": "object",
            "x-type": "secret: `{ env = \"VARIABLE\" }` or `{ file = \"PATH\" }`",
        })
    }
}

/// A secret that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the environment variable `{var}` ({what}) is not set")]
    EnvUnset { var: String, what: String },
    #[error("the environment variable `{var}` ({what}) is not valid UTF-8")]
    EnvNotUnicode { var: String, what: String },
    #[error("cannot read the file `{path}` ({what})")]
    FileUnreadable {
        path: PathBuf,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the file `{path}` ({what}) is not UTF-8 text")]
    FileNotUnicode { path: PathBuf, what: String },
    #[error("{source_name} ({what}) is empty")]
    Empty { source_name: String, what: String },
}

impl SecretSource {
    /// Reads the secret now. `what` names it in errors (`[upstreams.pypi] token`); the value is
    /// never part of an error.
    pub fn read(&self, what: &str) -> Result<String, SecretError> {
        let value = match self {
            SecretSource::Env(var) => match std::env::var(var) {
                Ok(value) => value,
                Err(std::env::VarError::NotPresent) => {
                    return Err(SecretError::EnvUnset {
                        var: var.clone(),
                        what: what.to_string(),
                    });
                }
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(SecretError::EnvNotUnicode {
                        var: var.clone(),
                        what: what.to_string(),
                    });
                }
            },
            SecretSource::File(path) => read_file(path, what)?,
        };
        let value = value.trim();
        if value.is_empty() {
            return Err(SecretError::Empty {
                source_name: self.name(),
                what: what.to_string(),
            });
        }
        Ok(value.to_string())
    }

    /// Where the secret comes from, in words, for error messages.
    pub fn name(&self) -> String {
        match self {
            SecretSource::Env(var) => format!("the environment variable `{var}`"),
            SecretSource::File(path) => format!("the file `{}`", path.display()),
        }
    }

    /// Where the secret comes from and whether it is there now, for `wheelgate config show`:
    /// `<from env FOO, set>`, `<from env FOO, unset>`, `<from file /p, readable>`,
    /// `<from file /p, unreadable>`. Never the value.
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Env(var) => {
                let state = if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
                    "set"
                } else {
                    "unset"
                };
                format!("<from env {var}, {state}>")
            }
            SecretSource::File(path) => {
                let state = if std::fs::File::open(path).is_ok() {
                    "readable"
                } else {
                    "unreadable"
                };
                format!("<from file {}, {state}>", path.display())
            }
        }
    }
}

fn read_file(path: &Path, what: &str) -> Result<String, SecretError> {
    let bytes = std::fs::read(path).map_err(|source| SecretError::FileUnreadable {
        path: path.to_path_buf(),
        what: what.to_string(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| SecretError::FileNotUnicode {
        path: path.to_path_buf(),
        what: what.to_string(),
    })
}

impl Serialize for SecretSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            SecretSource::Env(var) => map.serialize_entry("env", var)?,
            SecretSource::File(path) => map.serialize_entry("file", path)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SecretSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SourceVisitor)
    }
}

struct SourceVisitor;

impl<'de> Visitor<'de> for SourceVisitor {
    type Value = SecretSource;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`{ env = \"VARIABLE\" }` or `{ file = \"/path\" }`")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<SecretSource, E> {
        Err(E::custom(PLAIN_TEXT_REFUSED))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SecretSource, A::Error> {
        let mut found: Option<SecretSource> = None;
        while let Some(key) = map.next_key::<String>()? {
            let source = match key.as_str() {
                "env" => {
                    let var: String = map.next_value()?;
                    if var.is_empty() || var.contains(['=', '\0']) {
                        return Err(de::Error::custom(format!(
                            "`{var}` is not an environment variable name"
                        )));
                    }
                    SecretSource::Env(var)
                }
                "file" => {
                    let path: PathBuf = map.next_value()?;
                    if path.as_os_str().is_empty() {
                        return Err(de::Error::custom("the secret's `file` is empty"));
                    }
                    SecretSource::File(path)
                }
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown key `{other}` of a secret; give `env` or `file`"
                    )));
                }
            };
            if found.replace(source).is_some() {
                return Err(de::Error::custom(
                    "a secret comes from one place: give `env` or `file`, not both",
                ));
            }
        }
        found.ok_or_else(|| de::Error::custom("a secret needs `env` or `file`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Holder {
        token: SecretSource,
    }

    #[test]
    fn parses_env_and_file_and_round_trips() {
        let env: Holder = toml::from_str("token = { env = \"ARTIFACTORY_TOKEN\" }").unwrap();
        assert_eq!(env.token, SecretSource::Env("ARTIFACTORY_TOKEN".into()));
        let file: Holder = toml::from_str("token = { file = \"/run/secrets/t\" }").unwrap();
        assert_eq!(file.token, SecretSource::File("/run/secrets/t".into()));
        let text = toml::to_string(&file).unwrap();
        assert_eq!(
            toml::from_str::<Holder>(&text).unwrap().token,
            file.token,
            "{text}"
        );
    }

    #[test]
    fn refuses_plain_text_and_says_how_to_do_it() {
        let err = toml::from_str::<Holder>("token = \"s3cr3t-value\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("refused") && err.contains("{ env = "), "{err}");
        assert!(is_plain_text_refusal(&err), "{err}");
        for bad in [
            "token = { env = \"A\", file = \"/b\" }",
            "token = { value = \"x\" }",
            "token = {}",
            "token = { env = \"\" }",
            "token = 5",
        ] {
            assert!(toml::from_str::<Holder>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_a_file_trimmed_and_names_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "abc123\n").unwrap();
        let source = SecretSource::File(path.clone());
        assert_eq!(source.read("[upstreams.pypi] token").unwrap(), "abc123");
        assert!(source.describe().ends_with(", readable>"));
        let missing = SecretSource::File(dir.path().join("absent"));
        let err = missing.read("[upstreams.pypi] token").unwrap_err();
        assert!(err.to_string().contains("absent"), "{err}");
        assert!(err.to_string().contains("[upstreams.pypi] token"), "{err}");
        assert!(missing.describe().ends_with(", unreadable>"));
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(
            source.read("t").unwrap_err(),
            SecretError::Empty { .. }
        ));
        let unset = SecretSource::Env("WHEELGATE_TEST_SURELY_UNSET_VARIABLE".into());
        assert!(matches!(
            unset.read("t").unwrap_err(),
            SecretError::EnvUnset { .. }
        ));
        assert_eq!(
            unset.describe(),
            "<from env WHEELGATE_TEST_SURELY_UNSET_VARIABLE, unset>"
        );
    }
}
