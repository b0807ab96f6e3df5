//! What can go wrong reading an index page, and the limits that keep a hostile page from
//! costing unbounded memory.

/// Largest page either parser accepts. The biggest real simple pages (PyPI projects with
/// thousands of nightly uploads, download.pytorch.org's aggregated `/whl/nightly/torch/`) are a
/// few tens of MB; this leaves room while bounding what one upstream answer can cost.
pub const MAX_PAGE_BYTES: usize = 128 * 1024 * 1024;

/// Most files (or projects) one page may list. PyPI's root list has about 700,000 projects.
pub const MAX_LINKS: usize = 2_000_000;

/// A page that could not be read as a simple-index page ([PEP 503] HTML or [PEP 691] JSON).
///
/// Malformed HTML is not an error: the HTML parsers, like browsers and pip, recover and
/// return what they could read. These variants are for input that must not be trusted at all.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Debug, thiserror::Error)]
pub enum IndexParseError {
    /// The page is larger than [`MAX_PAGE_BYTES`].
    #[error("index page of `{len}` bytes is larger than the limit of `{limit}` bytes")]
    TooLarge {
        /// The page's size in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The page lists more than [`MAX_LINKS`] links.
    #[error("index page lists more than `{limit}` links")]
    TooManyLinks {
        /// The most links a page may list.
        limit: usize,
    },
    /// The page declares an API major version other than 1, which [PEP 629] says a client must
    /// refuse rather than misread.
    ///
    /// [PEP 629]: https://peps.python.org/pep-0629/
    #[error("index page declares API version `{version}`; only major version 1 is understood")]
    UnsupportedApiVersion {
        /// The declared version as written.
        version: String,
    },
    /// The JSON is not valid, or not shaped as [PEP 691] says.
    ///
    /// [PEP 691]: https://peps.python.org/pep-0691/
    #[error("invalid PEP 691 JSON {what} at line `{line}`, column `{column}`")]
    Json {
        /// `project page` or `project list`.
        what: &'static str,
        /// The line of the error, from 1.
        line: usize,
        /// The column of the error, from 1.
        column: usize,
        #[source]
        /// The parser's error.
        source: serde_json::Error,
    },
    /// Valid JSON, but not a page of this kind: not an object, or without the list of files
    /// (projects, for a root page) that makes it one.
    #[error("the PEP 691 JSON {what} {why}")]
    NotAPage {
        /// `project page` or `project list`.
        what: &'static str,
        /// What is missing or of the wrong type ("has no files list").
        why: String,
    },
}

pub(crate) fn check_size(content: &str) -> Result<(), IndexParseError> {
    if content.len() > MAX_PAGE_BYTES {
        return Err(IndexParseError::TooLarge {
            len: content.len(),
            limit: MAX_PAGE_BYTES,
        });
    }
    Ok(())
}

pub(crate) fn check_link_count(count: usize) -> Result<(), IndexParseError> {
    if count > MAX_LINKS {
        return Err(IndexParseError::TooManyLinks { limit: MAX_LINKS });
    }
    Ok(())
}

/// Refuses a page whose API major version is not 1 ([PEP 629]). A version that is not
/// `major.minor` at all is tolerated, as pip and uv do, since refusing it would break installs
/// that work without the proxy.
///
/// [PEP 629]: https://peps.python.org/pep-0629/
pub(crate) fn check_api_version(version: &str) -> Result<(), IndexParseError> {
    match super::model::parse_api_version(version) {
        Some((1, minor)) => {
            if minor > 4 {
                tracing::debug!(api_version = version, "index page is newer than API 1.4");
            }
            Ok(())
        }
        Some(_) => Err(IndexParseError::UnsupportedApiVersion {
            version: version.to_owned(),
        }),
        None => {
            tracing::debug!(
                api_version = version,
                "index page API version is not major.minor; reading it as 1.x"
            );
            Ok(())
        }
    }
}
