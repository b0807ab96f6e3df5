//! `[upstreams.*]` made usable: secrets read, headers built, CA bundles loaded, each upstream's
//! origins known. Done once at start, so a missing token or an unreadable CA bundle stops the
//! server with its name instead of failing every request later.

use std::path::{Path, PathBuf};

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Certificate, Url};

use wheelgate_config::UpstreamAccessConfig;
use wheelgate_config::secrets::SecretError;

/// What requests to some origins carry: credentials and headers (marked sensitive, so they
/// never show in `Debug` output), and CA certificates trusted besides the system's.
#[derive(Debug, Clone)]
pub struct OriginAccess {
    /// The section it comes from (`[upstreams.pypi]`), for messages.
    pub section: String,
    /// The origins (`scheme://host:port`) it applies to.
    pub origins: Vec<String>,
    /// Added to every request to those origins.
    pub headers: HeaderMap,
    /// Trusted for those origins in addition to the system's roots.
    pub roots: Vec<Certificate>,
}

impl OriginAccess {
    /// Whether requests to `url` get this access.
    pub fn applies_to(&self, url: &Url) -> bool {
        self.origins.contains(&origin_of(url))
    }
}

/// An `[upstreams.*]` section that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("cannot use `{section}`")]
    Secret {
        section: String,
        #[source]
        source: SecretError,
    },
    #[error("`{section}` applies to `{url}`, which is not an http(s) URL")]
    NotHttp { section: String, url: String },
    #[error(
        "`{section}` extra_origins: `{origin}` is not an origin; give `https://host` or `https://host:port`, with no path, query or credentials"
    )]
    NotAnOrigin { section: String, origin: String },
    #[error("`{section}` gives both `token` and `basic`; an upstream takes one `Authorization`")]
    TwoAuthorizations { section: String },
    #[error(
        "`{section}` sets the header `Authorization` besides `token` or `basic`; give one of them"
    )]
    AuthorizationHeaderTwice { section: String },
    #[error(
        "`{section}` gives credentials and its upstream URL `{url}` carries `user:password@` too; keep one (the section keeps them out of the file)"
    )]
    CredentialsTwice { section: String, url: String },
    #[error("`{section}` headers: `{name}` is not a valid header name")]
    HeaderName { section: String, name: String },
    #[error(
        "`{section}`: the value of `{name}` is not a valid header value (a control character or a newline inside it?)"
    )]
    HeaderValue { section: String, name: String },
    #[error("`{section}`: cannot read the CA bundle `{path}`")]
    CaUnreadable {
        section: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{section}`: the CA bundle `{path}` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)"
    )]
    CaEmpty { section: String, path: PathBuf },
    #[error("`{section}`: the CA bundle `{path}` is not valid PEM")]
    CaInvalid {
        section: String,
        path: PathBuf,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "`{first}` and `{second}` both give access settings for `{origin}`; configure them on one of the two: they apply to every request to that origin"
    )]
    SameOrigin {
        first: String,
        second: String,
        origin: String,
    },
}

/// One source's access settings, as [`resolve_sources`] reads them
/// (`wheelgate_index::sources::Sources::access_settings`).
#[derive(Debug, Clone, Copy)]
pub struct SourceAccess<'a> {
    /// Its configuration section, for messages (`[upstreams.pypi]`, `[[sources]] internal`).
    pub section: &'a str,
    pub access: &'a UpstreamAccessConfig,
    /// Its URL, without credentials: the origin its settings apply to.
    pub url: &'a str,
    /// `user:password@` its configured URL carried.
    pub url_credentials: Option<&'a UrlCredentials>,
}

/// Credentials written into a source's URL, decoded; never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct UrlCredentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for UrlCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "UrlCredentials {{ user: {:?}, password: *** }}",
            self.user
        )
    }
}

/// The access of every source (the server's, a mirror's): each source's URL gives the origin
/// its settings apply to.
pub fn resolve_sources<'a>(
    sources: impl IntoIterator<Item = SourceAccess<'a>>,
) -> Result<Vec<OriginAccess>, AccessError> {
    let mut all: Vec<OriginAccess> = Vec::new();
    for source in sources {
        if source.access.is_empty() && source.url_credentials.is_none() {
            continue;
        }
        let resolved = resolve_one(
            source.section,
            source.access,
            source.url,
            source.url_credentials,
        )?;
        if let Some((other, shared)) = all.iter().find_map(|other| {
            other
                .origins
                .iter()
                .find(|origin| resolved.origins.contains(origin))
                .map(|origin| (other, origin))
        }) {
            // Two sources on one host with the same `user:password@` in their URLs (a mirror
            // serving both built-in indexes): one access, given once.
            let same = other.origins == resolved.origins
                && other.headers == resolved.headers
                && other.roots.is_empty()
                && resolved.roots.is_empty();
            if same {
                continue;
            }
            return Err(AccessError::SameOrigin {
                first: other.section.clone(),
                second: resolved.section.clone(),
                origin: shared.clone(),
            });
        }
        all.push(resolved);
    }
    Ok(all)
}

fn resolve_one(
    section: &str,
    access: &UpstreamAccessConfig,
    root: &str,
    url_credentials: Option<&UrlCredentials>,
) -> Result<OriginAccess, AccessError> {
    let mut origins = vec![http_origin(section, root)?];
    let authorizes = access.token.is_some()
        || access.basic.is_some()
        || access
            .headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("authorization"));
    if authorizes && url_credentials.is_some() {
        return Err(AccessError::CredentialsTwice {
            section: section.to_string(),
            url: root.to_string(),
        });
    }
    for extra in &access.extra_origins {
        let origin = parse_origin(extra).ok_or_else(|| AccessError::NotAnOrigin {
            section: section.to_string(),
            origin: extra.clone(),
        })?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(OriginAccess {
        section: section.to_string(),
        origins,
        headers: headers(section, access, url_credentials)?,
        roots: match &access.ca_bundle {
            Some(path) => read_ca_bundle(section, path)?,
            None => Vec::new(),
        },
    })
}

/// `scheme://host:port` of an http(s) URL (the port only when not the scheme's default), the
/// unit credentials and CA bundles are scoped to (RFC 6454).
pub fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn http_origin(section: &str, url: &str) -> Result<String, AccessError> {
    Url::parse(url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .map(|url| origin_of(&url))
        .ok_or_else(|| AccessError::NotHttp {
            section: section.to_string(),
            url: crate::upstream::redact(url),
        })
}

/// `https://host[:port]` (a trailing `/` allowed), nothing else.
fn parse_origin(text: &str) -> Option<String> {
    let url = Url::parse(text).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && !text.trim_end_matches('/').ends_with('?');
    bare.then(|| origin_of(&url))
}

fn headers(
    section: &str,
    access: &UpstreamAccessConfig,
    url_credentials: Option<&UrlCredentials>,
) -> Result<HeaderMap, AccessError> {
    let secret = |what: String, source: &wheelgate_config::SecretSource| {
        source.read(&what).map_err(|source| AccessError::Secret {
            section: section.to_string(),
            source,
        })
    };
    let value_error = |name: &str| AccessError::HeaderValue {
        section: section.to_string(),
        name: name.to_string(),
    };
    let mut headers = HeaderMap::new();
    let authorization = match (&access.token, &access.basic) {
        (Some(_), Some(_)) => {
            return Err(AccessError::TwoAuthorizations {
                section: section.to_string(),
            });
        }
        (Some(token), None) => Some(format!(
            "Bearer {}",
            secret(format!("{section} token"), token)?
        )),
        (None, Some(basic)) => {
            let password = secret(format!("{section} basic.password"), &basic.password)?;
            Some(format!(
                "Basic {}",
                encode_base64(format!("{}:{password}", basic.user).as_bytes())
            ))
        }
        // `user:password@` in the URL: sent as basic authentication to its origin, as a URL
        // with them would have been (`crate::sources` takes them out of the URL).
        (None, None) => url_credentials.map(|credentials| {
            format!(
                "Basic {}",
                encode_base64(format!("{}:{}", credentials.user, credentials.password).as_bytes())
            )
        }),
    };
    if let Some(value) = authorization {
        let mut value = HeaderValue::from_str(&value).map_err(|_| value_error("Authorization"))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    for (name, source) in &access.headers {
        let header =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| AccessError::HeaderName {
                section: section.to_string(),
                name: name.clone(),
            })?;
        if header == AUTHORIZATION && headers.contains_key(AUTHORIZATION) {
            return Err(AccessError::AuthorizationHeaderTwice {
                section: section.to_string(),
            });
        }
        let text = secret(format!("{section} headers.{name}"), source)?;
        let mut value = HeaderValue::from_str(&text).map_err(|_| value_error(name))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok(headers)
}

fn read_ca_bundle(section: &str, path: &Path) -> Result<Vec<Certificate>, AccessError> {
    let pem = std::fs::read(path).map_err(|source| AccessError::CaUnreadable {
        section: section.to_string(),
        path: path.to_path_buf(),
        source,
    })?;
    let certificates =
        Certificate::from_pem_bundle(&pem).map_err(|source| AccessError::CaInvalid {
            section: section.to_string(),
            path: path.to_path_buf(),
            source,
        })?;
    if certificates.is_empty() {
        return Err(AccessError::CaEmpty {
            section: section.to_string(),
            path: path.to_path_buf(),
        });
    }
    Ok(certificates)
}

/// Standard base64 with padding (RFC 4648 §4), for `Authorization: Basic`.
fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                let index = usize::try_from((group >> (18 - 6 * i)) & 0x3f).unwrap_or(0);
                out.push(char::from(ALPHABET[index]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    // The whole path from a configuration, as `serve` and `select` take it.
    use crate::sources::resolve_access as resolve;
    use wheelgate_config::ServeConfig;

    fn config(section: &str) -> ServeConfig {
        let mut config: ServeConfig = toml::from_str(section).unwrap();
        config.pytorch_url = "https://download.example/whl".into();
        if config.pypi_url == wheelgate_config::DEFAULT_PYPI_URL {
            config.pypi_url = "https://artifactory.example:8443/api/pypi/remote/simple".into();
        }
        config
    }

    #[test]
    fn builds_headers_from_files_for_the_upstream_origin_only() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "tok-123\n").unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "AKCp8k\n").unwrap();
        let text = format!(
            "[upstreams.pypi]\ntoken = {{ file = {token:?} }}\nheaders = {{ \"X-JFrog-Art-Api\" = {{ file = {key:?} }} }}\nextra_origins = [\"https://files.example\"]\n"
        );
        let access = resolve(&config(&text)).unwrap();
        assert_eq!(access.len(), 1);
        let access = &access[0];
        assert_eq!(access.headers[AUTHORIZATION], "Bearer tok-123");
        assert_eq!(access.headers["x-jfrog-art-api"], "AKCp8k");
        assert!(access.headers[AUTHORIZATION].is_sensitive());
        let applies = |url: &str| access.applies_to(&Url::parse(url).unwrap());
        assert!(applies(
            "https://artifactory.example:8443/api/pypi/remote/packages/a.whl"
        ));
        assert!(applies("https://files.example/x.whl"));
        assert!(!applies(
            "https://artifactory.example/api/pypi/remote/simple/"
        ));
        assert!(!applies("http://artifactory.example:8443/"));
        assert!(!applies("https://download.example/whl/torch/"));
        assert!(!format!("{access:?}").contains("tok-123"));
    }

    #[test]
    fn basic_credentials_are_encoded() {
        assert_eq!(encode_base64(b"ci:password"), "Y2k6cGFzc3dvcmQ=");
        assert_eq!(encode_base64(b"hello"), "aGVsbG8=");
        assert_eq!(encode_base64(b"abc"), "YWJj");
        assert_eq!(encode_base64(b""), "");
    }

    #[test]
    fn every_unusable_setting_stops_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not a certificate\n").unwrap();
        let cases = [
            (
                "[upstreams.pypi]\ntoken = { env = \"WHEELGATE_TEST_SURELY_UNSET_TOKEN\" }"
                    .to_string(),
                "WHEELGATE_TEST_SURELY_UNSET_TOKEN",
            ),
            (
                "[upstreams.pypi]\nca_bundle = \"/surely/absent/ca.pem\"".to_string(),
                "/surely/absent/ca.pem",
            ),
            (
                format!("[upstreams.pypi]\nca_bundle = {garbage:?}"),
                "holds no PEM certificate",
            ),
            (
                "[upstreams.pypi]\nextra_origins = [\"https://files.example/path\"]".to_string(),
                "https://files.example/path",
            ),
            (
                format!(
                    "[upstreams.pypi]\nheaders = {{ \"Bad Header\" = {{ file = {garbage:?} }} }}"
                ),
                "Bad Header",
            ),
        ];
        for (text, expected) in cases {
            let err = resolve(&config(&text)).unwrap_err();
            let chain = crate::error_chain::source_chain(&err);
            assert!(
                err.to_string().contains(expected) || chain.contains(expected),
                "{text}: {err}: {chain}"
            );
        }
    }

    #[test]
    fn two_upstreams_on_one_origin_are_configured_once() {
        let mut config = config(
            "[upstreams.pypi]\nheaders = { \"X-A\" = { env = \"PATH\" } }\n[upstreams.pytorch]\nheaders = { \"X-B\" = { env = \"PATH\" } }",
        );
        config.pytorch_url = "https://artifactory.example:8443/api/pypi/pytorch/simple".into();
        let err = resolve(&config).unwrap_err().to_string();
        assert!(err.contains("https://artifactory.example:8443"), "{err}");
    }
}
