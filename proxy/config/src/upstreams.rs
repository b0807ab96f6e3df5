//! `[upstreams.pytorch]` and `[upstreams.pypi]`: how to reach a private upstream as companies run
//! them (Artifactory, Nexus, a TLS-inspecting proxy in between): credentials, extra headers and
//! a CA bundle, per upstream.
//!
//! ```toml
//! pypi_url = "https://artifactory.example.internal/artifactory/api/pypi/pypi-remote/simple"
//!
//! [upstreams.pypi]
//! token = { env = "ARTIFACTORY_TOKEN" }                 # Authorization: Bearer <token>
//! # basic = { user = "ci", password = { file = "/run/secrets/nexus-password" } }
//! headers = { "X-JFrog-Art-Api" = { file = "/run/secrets/artifactory-api-key" } }
//! ca_bundle = "/etc/wheelgate/company-ca.pem"           # trusted besides the system's roots
//! extra_origins = ["https://files.artifactory.example.internal"]
//! ```
//!
//! Secrets come only from the environment or a file ([`SecretSource`]); a secret written in
//! this file is refused. They are read when the server starts (a missing variable or an
//! unreadable file stops the start with its name) and sent only to the upstream's own origin
//! (scheme, host and port of its URL) and the `extra_origins` named here: never to a file host
//! on another origin that a page links to (PyPI's file host, a CDN, a presigned bucket URL an
//! Artifactory redirects to). The CA bundle is trusted for those same origins only, in addition
//! to the system's trust store (which every request uses, so a company CA installed on the host
//! or named by `SSL_CERT_FILE` covers every upstream).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secrets::SecretSource;

/// The `[upstreams]` section: access settings of each upstream (none by default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamsConfig {
    /// `[upstreams.pytorch]`: for `pytorch_url`'s origin.
    #[serde(skip_serializing_if = "UpstreamAccessConfig::is_empty")]
    pub pytorch: UpstreamAccessConfig,
    /// `[upstreams.pypi]`: for `pypi_url`'s origin (the general upstream).
    #[serde(skip_serializing_if = "UpstreamAccessConfig::is_empty")]
    pub pypi: UpstreamAccessConfig,
}

impl UpstreamsConfig {
    /// Whether no upstream has access settings.
    pub fn is_empty(&self) -> bool {
        self.pytorch.is_empty() && self.pypi.is_empty()
    }
}

/// How to reach one upstream: at most one of `token` and `basic`, any extra headers, a CA
/// bundle, and the other origins that get the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamAccessConfig {
    /// Sent as `Authorization: Bearer <token>` ([RFC 6750]); Artifactory access tokens, Nexus
    /// user tokens, `GitLab` deploy tokens.
    ///
    /// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<SecretSource>,
    /// Sent as `Authorization: Basic` ([RFC 7617]).
    ///
    /// [RFC 7617]: https://www.rfc-editor.org/rfc/rfc7617
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicCredentials>,
    /// Extra request headers by name (`X-JFrog-Art-Api`, `PRIVATE-TOKEN`), each a secret.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, SecretSource>,
    /// A PEM file of CA certificates trusted for this upstream's origins in addition to the
    /// system's trust store (it adds, never replaces: a public CDN behind the same origin keeps
    /// working).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<PathBuf>,
    /// Other origins (`https://host[:port]`) that get these credentials, headers and CA bundle:
    /// a file host of the same company the pages link to. Empty by default: credentials go to
    /// the upstream URL's own origin only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_origins: Vec<String>,
}

/// A user name (not a secret) and its password (a secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicCredentials {
    /// The user name (not a secret).
    pub user: String,
    /// The password.
    pub password: SecretSource,
}

impl UpstreamAccessConfig {
    /// Whether nothing is set (requests go out as they would without the section).
    pub fn is_empty(&self) -> bool {
        self == &UpstreamAccessConfig::default()
    }

    /// One line per setting, for `wheelgate config show`: where each secret comes from and
    /// whether it is there now, never its value.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(token) = &self.token {
            lines.push(format!("Authorization: Bearer {}", token.describe()));
        }
        if let Some(basic) = &self.basic {
            lines.push(format!(
                "Authorization: Basic user `{}`, password {}",
                basic.user,
                basic.password.describe()
            ));
        }
        for (name, source) in &self.headers {
            lines.push(format!("{name}: {}", source.describe()));
        }
        if let Some(path) = &self.ca_bundle {
            let state = if std::fs::File::open(path).is_ok() {
                "readable"
            } else {
                "unreadable"
            };
            lines.push(format!(
                "CA bundle {} ({state}), trusted besides the system's roots",
                path.display()
            ));
        }
        if !self.extra_origins.is_empty() {
            lines.push(format!("also sent to {}", self.extra_origins.join(", ")));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let config: UpstreamsConfig = toml::from_str(
            r#"
            [pypi]
            token = { env = "ARTIFACTORY_TOKEN" }
            headers = { "X-JFrog-Art-Api" = { file = "/run/secrets/key" } }
            ca_bundle = "/etc/wheelgate/company-ca.pem"
            extra_origins = ["https://files.example.internal"]
            [pytorch]
            basic = { user = "ci", password = { env = "NEXUS_PASSWORD" } }
            "#,
        )
        .unwrap();
        assert_eq!(
            config.pypi.token,
            Some(SecretSource::Env("ARTIFACTORY_TOKEN".into()))
        );
        assert_eq!(
            config.pypi.headers["X-JFrog-Art-Api"],
            SecretSource::File("/run/secrets/key".into())
        );
        assert_eq!(config.pytorch.basic.as_ref().unwrap().user, "ci");
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<UpstreamsConfig>(&text).unwrap(), config);
        assert!(UpstreamsConfig::default().is_empty());
    }

    #[test]
    fn refuses_plain_text_secrets_everywhere_they_could_be_written() {
        for bad in [
            "[pypi]\ntoken = \"abc\"",
            "[pypi]\nbasic = { user = \"ci\", password = \"abc\" }",
            "[pypi]\nheaders = { \"X-JFrog-Art-Api\" = \"abc\" }",
        ] {
            let err = toml::from_str::<UpstreamsConfig>(bad)
                .unwrap_err()
                .to_string();
            assert!(super::super::secrets::is_plain_text_refusal(&err), "{err}");
        }
        let err = toml::from_str::<UpstreamsConfig>("[pypi]\npassword = { env = \"X\" }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("password"), "{err}");
    }

    #[test]
    fn describes_sources_never_values() {
        let config: UpstreamAccessConfig = toml::from_str(
            "token = { env = \"WHEELGATE_TEST_SURELY_UNSET_TOKEN\" }\nca_bundle = \"/surely/absent.pem\"",
        )
        .unwrap();
        assert_eq!(
            config.describe(),
            [
                "Authorization: Bearer <from env WHEELGATE_TEST_SURELY_UNSET_TOKEN, unset>",
                "CA bundle /surely/absent.pem (unreadable), trusted besides the system's roots",
            ]
        );
    }
}
