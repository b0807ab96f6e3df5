//! `[auth]`: optional client authentication, HTTP basic (RFC 7617) and/or bearer tokens
//! (RFC 6750). Off by default; once any credential is configured every route except `/healthz`
//! and `/readyz` (and `/metrics` when `public_metrics = true`) asks for one.
//!
//! ```toml
//! [auth]
//! # Passwords are given in plain text, or as the hex sha256 of the password so the file holds
//! # no usable secret: `printf %s 'the password' | sha256sum`.
//! basic = [
//!   { user = "ci", password_sha256 = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8" },
//!   { user = "alice", password = "correct horse" },
//! ]
//! bearer = ["a-long-random-token"]
//! public_metrics = false
//! ```
//!
//! pip and uv send the credentials of an index URL (`http://ci:secret@wheelgate:3141/simple/`)
//! as basic authentication on every request to that host, files included.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `[auth]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Users accepted with HTTP basic authentication.
    pub basic: Vec<BasicUser>,
    /// Tokens accepted as `Authorization: Bearer <token>` (and as the password of basic
    /// authentication with any user name, for installers that only speak basic).
    pub bearer: Vec<String>,
    /// Whether `/metrics` answers without credentials (default: no).
    pub public_metrics: bool,
}

/// One basic-authentication user: exactly one of `password` and `password_sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, try_from = "RawBasicUser")]
pub struct BasicUser {
    pub user: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Lowercase hex sha256 of the password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_sha256: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBasicUser {
    /// The user name; not empty, no `:`.
    user: String,
    /// The password in plain text.
    password: Option<String>,
    /// The lowercase hex sha256 of the password (`printf %s 'the password' | sha256sum`), so
    /// the file holds no usable secret.
    password_sha256: Option<String>,
}

/// An `[auth]` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("the user `{0}` needs exactly one of `password` and `password_sha256`")]
    OnePassword(String),
    #[error("the `password_sha256` of user `{0}` is not 64 hex digits")]
    NotSha256(String),
    #[error("a user name cannot be empty or contain `:`")]
    UserName,
}

impl TryFrom<RawBasicUser> for BasicUser {
    type Error = AuthConfigError;

    fn try_from(raw: RawBasicUser) -> Result<Self, Self::Error> {
        if raw.user.is_empty() || raw.user.contains(':') {
            return Err(AuthConfigError::UserName);
        }
        let password_sha256 = match (&raw.password, raw.password_sha256) {
            (Some(_), None) => None,
            (None, Some(hash)) => {
                let hash = hash.trim().to_ascii_lowercase();
                if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(AuthConfigError::NotSha256(raw.user));
                }
                Some(hash)
            }
            _ => return Err(AuthConfigError::OnePassword(raw.user)),
        };
        Ok(BasicUser {
            user: raw.user,
            password: raw.password,
            password_sha256,
        })
    }
}

impl AuthConfig {
    /// Whether any credential is configured (authentication is on).
    pub fn enabled(&self) -> bool {
        !self.basic.is_empty() || !self.bearer.is_empty()
    }

    /// Whether an `Authorization` header value carries configured credentials.
    pub fn accepts(&self, authorization: &str) -> bool {
        let (scheme, value) = authorization
            .trim()
            .split_once(' ')
            .unwrap_or((authorization, ""));
        let value = value.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            return self
                .bearer
                .iter()
                .any(|t| same(t.as_bytes(), value.as_bytes()));
        }
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        let Some(decoded) = decode_base64(value) else {
            return false;
        };
        let Ok(decoded) = String::from_utf8(decoded) else {
            return false;
        };
        let Some((user, password)) = decoded.split_once(':') else {
            return false;
        };
        let digest = Sha256::digest(password.as_bytes());
        let matches_user = self.basic.iter().any(|entry| {
            let password_ok = match (&entry.password, &entry.password_sha256) {
                (Some(plain), _) => same(plain.as_bytes(), password.as_bytes()),
                (None, Some(hash)) => {
                    hex::decode(hash).is_ok_and(|expected| same(&expected, &digest))
                }
                (None, None) => false,
            };
            // Both compared every time, so timing does not tell a right user from a wrong one.
            same(entry.user.as_bytes(), user.as_bytes()) & password_ok
        });
        matches_user
            || self
                .bearer
                .iter()
                .any(|t| same(t.as_bytes(), password.as_bytes()))
    }
}

/// Constant-time comparison for equal lengths (lengths of secrets are not secret here).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Standard base64 (RFC 4648 §4), padding optional; `None` when invalid.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).expect("masked to a byte"));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> AuthConfig {
        toml::from_str(
            r#"
            basic = [
              { user = "ci", password_sha256 = "5E884898DA28047151D0E56F8DC6292773603D0D6AABBDD62A11EF721D1542D8" },
              { user = "alice", password = "correct horse" },
            ]
            bearer = ["tok-123"]
            "#,
        )
        .unwrap()
    }

    #[test]
    fn accepts_configured_credentials_only() {
        let auth = config();
        assert!(auth.enabled());
        // "ci:password", "alice:correct horse"
        assert!(auth.accepts("Basic Y2k6cGFzc3dvcmQ="));
        assert!(auth.accepts("basic YWxpY2U6Y29ycmVjdCBob3JzZQ=="));
        assert!(auth.accepts("Bearer tok-123"));
        // "anyone:tok-123": the token as a basic password.
        assert!(auth.accepts("Basic YW55b25lOnRvay0xMjM="));
        // "ci:wrong", "alice:password", garbage.
        assert!(!auth.accepts("Basic Y2k6d3Jvbmc="));
        assert!(!auth.accepts("Basic YWxpY2U6cGFzc3dvcmQ="));
        assert!(!auth.accepts("Basic !!!"));
        assert!(!auth.accepts("Bearer tok-1234"));
        assert!(!auth.accepts("Digest x"));
        assert!(!AuthConfig::default().enabled());
    }

    #[test]
    fn rejects_unusable_users() {
        for bad in [
            r#"basic = [{ user = "a" }]"#,
            r#"basic = [{ user = "a", password = "x", password_sha256 = "00" }]"#,
            r#"basic = [{ user = "a", password_sha256 = "abc" }]"#,
            r#"basic = [{ user = "a:b", password = "x" }]"#,
        ] {
            assert!(toml::from_str::<AuthConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decodes_base64() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(decode_base64("").unwrap(), b"");
    }
}
