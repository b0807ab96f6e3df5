//! `[[sources]]`: more upstream indexes, each owning the project names it lists. The PyTorch
//! index (`pytorch_url`, `[upstreams.pytorch]`) and the general index (`pypi_url`,
//! `[upstreams.pypi]`) are the first two sources, built in; this section adds any number more
//! (`wheelgate::sources` turns them all into one list and decides who owns a name).
//!
//! ```toml
//! [[sources]]
//! name = "internal"                                # [a-z0-9-]+, unique
//! url = "https://pypi.internal.example/simple"     # a PEP 503/691 index: the page of P is {url}/P/
//! projects = ["acme-*", "billing-client"]          # normalized names or globs it serves
//! token = { env = "INTERNAL_INDEX_TOKEN" }         # the keys of [upstreams.*], all optional
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secrets::SecretSource;
use super::upstreams::{BasicCredentials, UpstreamAccessConfig};

/// One `[[sources]]` entry as written: its name, index URL, the names it owns, and the same
/// access keys as `[upstreams.pytorch]` / `[upstreams.pypi]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Shown in `/explain/`, the status page, metrics and logs.
    pub name: String,
    /// A PEP 503/691 simple index: the page of project `P` is `{url}/P/`.
    pub url: String,
    /// Normalized names or globs (`acme-*`) this source serves, and no other source (PyPI
    /// included) ever does.
    pub projects: Vec<String>,
    /// `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<SecretSource>,
    /// `Authorization: Basic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicCredentials>,
    /// Extra request headers by name, each a secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, SecretSource>,
    /// A PEM bundle trusted for this source's origins besides the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<PathBuf>,
    /// Other origins (a file host of the same index) that get the same access.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_origins: Vec<String>,
}

impl SourceConfig {
    /// The access keys, in the form `[upstreams.*]` uses.
    pub fn access(&self) -> UpstreamAccessConfig {
        UpstreamAccessConfig {
            token: self.token.clone(),
            basic: self.basic.clone(),
            headers: self.headers.clone(),
            ca_bundle: self.ca_bundle.clone(),
            extra_origins: self.extra_origins.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        sources: Vec<SourceConfig>,
    }

    #[test]
    fn parses_the_documented_example_and_refuses_unknown_keys() {
        let file: File = toml::from_str(
            r#"
            [[sources]]
            name = "internal"
            url = "https://pypi.internal.example/simple"
            projects = ["acme-*", "billing-client"]
            token = { env = "INTERNAL_INDEX_TOKEN" }
            "#,
        )
        .unwrap();
        let source = &file.sources[0];
        assert_eq!(source.projects, ["acme-*", "billing-client"]);
        assert_eq!(
            source.access().token,
            Some(SecretSource::Env("INTERNAL_INDEX_TOKEN".into()))
        );
        let err = toml::from_str::<File>(
            "[[sources]]\nname = \"a\"\nurl = \"https://a.example/simple\"\nproject = [\"x\"]\n",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("project"), "{err}");
        let plain = toml::from_str::<File>(
            "[[sources]]\nname = \"a\"\nurl = \"https://a.example/simple\"\nprojects = [\"x\"]\ntoken = \"secret\"\n",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            super::super::secrets::is_plain_text_refusal(&plain),
            "{plain}"
        );
    }
}
