//! `[object_store]`: the shared file cache in an S3-compatible bucket, so several replicas behind
//! one load balancer download each file from the upstream once.
//!
//! ```toml
//! [object_store]
//! bucket = "wheelgate"
//! prefix = "cache"                # objects go under `cache/files/<key>`
//! endpoint = "http://s3:9000"     # any S3-compatible server; AWS when absent
//! region = "us-east-1"
//! allow_http = true               # the endpoint above is plain HTTP
//! ```
//!
//! Credentials never come from the file: the usual environment variables
//! ([`ENV_ACCESS_KEY_ID`], [`ENV_SECRET_ACCESS_KEY`], [`ENV_SESSION_TOKEN`]; [`ENV_REGION`] and
//! [`ENV_ENDPOINT_URL`] when the file gives no region or endpoint), read by `object_store`'s
//! `AmazonS3Builder::from_env`, or the instance's role when none are set.

use serde::{Deserialize, Serialize};

/// The access key id (AWS's own variable name).
pub const ENV_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
/// The secret access key.
pub const ENV_SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
/// A session token for temporary credentials.
pub const ENV_SESSION_TOKEN: &str = "AWS_SESSION_TOKEN";
/// The region, when the file names none.
pub const ENV_REGION: &str = "AWS_REGION";
/// The endpoint of an S3-compatible server, when the file names none.
pub const ENV_ENDPOINT_URL: &str = "AWS_ENDPOINT_URL";

/// The key prefix when none is configured.
pub const DEFAULT_PREFIX: &str = "wheelgate";

/// The `[object_store]` section. Absent (the default): files are cached on local disk only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    /// The bucket; it must exist (the proxy never creates buckets).
    pub bucket: String,
    /// Key prefix inside the bucket ([`DEFAULT_PREFIX`]): files are stored as
    /// `<prefix>/files/<key>`, so one bucket can hold several caches.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// URL of an S3-compatible server (`MinIO`, Ceph, `s3s-fs`, ...); AWS S3 when absent (and
    /// [`ENV_ENDPOINT_URL`] is unset). Requests are path-style (`<endpoint>/<bucket>/<key>`).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The region to sign requests for; [`ENV_REGION`], else `us-east-1`, when absent.
    #[serde(default)]
    pub region: Option<String>,
    /// Allow a plain-HTTP endpoint (false: HTTPS only).
    #[serde(default)]
    pub allow_http: bool,
    /// Credentials given by a program rather than the environment (tests, embedding). Never
    /// read from or written to a file.
    #[serde(skip)]
    pub credentials: Option<StaticCredentials>,
}

/// An access key pair given in code; its `Debug` shows neither half.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for StaticCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticCredentials(<redacted>)")
    }
}

fn default_prefix() -> String {
    DEFAULT_PREFIX.to_string()
}

impl ObjectStoreConfig {
    /// A configuration for `bucket` with every other key at its default.
    pub fn new(bucket: impl Into<String>) -> ObjectStoreConfig {
        ObjectStoreConfig {
            bucket: bucket.into(),
            prefix: default_prefix(),
            endpoint: None,
            region: None,
            allow_http: false,
            credentials: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_defaults_and_unknown_keys() {
        let config: ObjectStoreConfig = toml::from_str("bucket = \"b\"\n").unwrap();
        assert_eq!(config, ObjectStoreConfig::new("b"));
        let config: ObjectStoreConfig = toml::from_str(
            "bucket = \"b\"\nprefix = \"p\"\nendpoint = \"http://127.0.0.1:9000\"\nregion = \"eu-west-1\"\nallow_http = true\n",
        )
        .unwrap();
        assert_eq!(config.prefix, "p");
        assert!(config.allow_http);
        let err =
            toml::from_str::<ObjectStoreConfig>("bucket = \"b\"\nsecret_access_key = \"s\"\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("secret_access_key"), "{err}");
        assert!(toml::from_str::<ObjectStoreConfig>("prefix = \"p\"\n").is_err());
    }

    #[test]
    fn credentials_never_show() {
        let mut config = ObjectStoreConfig::new("b");
        config.credentials = Some(StaticCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI".into(),
            session_token: None,
        });
        let shown = format!("{config:?}{}", toml::to_string(&config).unwrap());
        assert!(
            !shown.contains("AKIDEXAMPLE") && !shown.contains("wJalrXUtnFEMI"),
            "{shown}"
        );
    }
}
