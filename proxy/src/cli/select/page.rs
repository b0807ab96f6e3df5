//! `wheelgate select --index URL|FILE`: choose from a real project page, HTML or JSON, fetched
//! with the proxy's upstream client or read from a saved file, through the selection the proxy
//! rewrites pages with ([`wheelgate_server::rewrite::select_files`]).

use std::path::PathBuf;

use wheelgate_index::cache::index::UPSTREAM_ACCEPT;
use wheelgate_index::upstream::{
    ClientSettings, OriginAccess, PageResponse, UpstreamClient, UpstreamError, redact,
};
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::index::{
    IndexParseError, ProjectPage, parse_project_html, parse_project_json,
};

/// Where `--index` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexSource {
    /// An index root (`https://download.pytorch.org/whl/`) or a project page
    /// (`.../whl/torch/`).
    Url(String),
    /// A saved project page.
    File(PathBuf),
}

impl IndexSource {
    /// `http://` and `https://` values are URLs; anything else is a file.
    pub fn parse(arg: &str) -> IndexSource {
        let lower = arg.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            IndexSource::Url(arg.to_string())
        } else {
            IndexSource::File(PathBuf::from(arg))
        }
    }
}

/// A page that could not be had.
#[derive(Debug, thiserror::Error)]
pub enum IndexArgError {
    #[error("could not read the saved page `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{origin}` is not a project page wheelgate can read")]
    Parse {
        origin: String,
        #[source]
        source: IndexParseError,
    },
    #[error("the page `{origin}` lists `{page}`, not `{wanted}`")]
    OtherProject {
        origin: String,
        page: String,
        wanted: String,
    },
    #[error("`{url}` has no page for `{project}`")]
    NotFound { url: String, project: String },
    #[error("`{url}` answered 304 Not Modified to a request without validators")]
    Unexpected { url: String },
    #[error("could not fetch `{url}`")]
    Fetch {
        url: String,
        #[source]
        source: UpstreamError,
    },
    #[error("could not start the async runtime to fetch the page")]
    Runtime(#[source] std::io::Error),
    #[error("an index URL was given but no client was made to fetch it")]
    NoClient,
}

/// A project page and where it came from (a redacted URL or the file's path).
#[derive(Debug)]
pub struct LoadedPage {
    pub page: ProjectPage,
    pub origin: String,
    /// The URL it was fetched from (its files' links are relative to it); `None` for a saved
    /// page.
    pub url: Option<String>,
}

/// The page of `project` from `source`; a URL fetched by `remote` (which a URL source needs).
pub fn load(
    source: &IndexSource,
    project: &str,
    remote: Option<&Remote>,
) -> Result<LoadedPage, IndexArgError> {
    let mut fetched_from = None;
    let (body, json, origin) = match source {
        IndexSource::File(path) => {
            let origin = path.display().to_string();
            let body = std::fs::read_to_string(path).map_err(|source| IndexArgError::Read {
                path: origin.clone(),
                source,
            })?;
            // A saved PEP 691 page is JSON whatever its name: its first byte says so.
            let json = body.trim_start().starts_with('{');
            (body, json, origin)
        }
        IndexSource::Url(root) => {
            let url = project_url(root, project);
            let remote = remote.ok_or(IndexArgError::NoClient)?;
            let (body, content_type) = remote.page(&url, project)?;
            let origin = redact(&url);
            fetched_from = Some(url);
            (body, content_type.contains("json"), origin)
        }
    };
    let parsed = if json {
        parse_project_json(&body)
    } else {
        parse_project_html(&body)
    }
    .map_err(|source| IndexArgError::Parse {
        origin: origin.clone(),
        source,
    })?;
    let named = normalize_name(&parsed.name);
    if !parsed.name.is_empty() && named != project {
        return Err(IndexArgError::OtherProject {
            origin,
            page: named,
            wanted: project.to_string(),
        });
    }
    Ok(LoadedPage {
        page: parsed,
        origin,
        url: fetched_from,
    })
}

/// The page URL of `project` under `root`: `root` itself when it already ends in the project's
/// name (`.../whl/torch/`), else `root/<project>/` (`.../whl/` or `.../simple/`).
pub fn project_url(root: &str, project: &str) -> String {
    let trimmed = root.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or_default();
    if normalize_name(last) == project {
        format!("{trimmed}/")
    } else {
        format!("{trimmed}/{project}/")
    }
}

/// The upstream client the proxy uses (with its access to private upstreams) on a runtime of its
/// own: the rest of `wheelgate select` is synchronous.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    pub client: UpstreamClient,
}

impl Remote {
    /// A client with `access` (none: public upstreams only).
    pub fn new(access: &[OriginAccess]) -> Result<Remote, IndexArgError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(IndexArgError::Runtime)?;
        let settings = ClientSettings {
            access: access.to_vec(),
            ..ClientSettings::default()
        };
        let client = UpstreamClient::new(&settings).map_err(|source| IndexArgError::Fetch {
            url: "(no request yet)".to_string(),
            source,
        })?;
        Ok(Remote { runtime, client })
    }

    /// Runs `future` to its end.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The body and content type of the page at `url` (of `project`, for messages).
    fn page(&self, url: &str, project: &str) -> Result<(String, String), IndexArgError> {
        let response = self
            .block_on(self.client.get_page(url, UPSTREAM_ACCEPT, None, None))
            .map_err(|source| IndexArgError::Fetch {
                url: redact(url),
                source,
            })?;
        match response {
            PageResponse::Fresh {
                body, content_type, ..
            } => Ok((body.into_text(), content_type)),
            PageResponse::NotFound => Err(IndexArgError::NotFound {
                url: redact(url),
                project: project.to_string(),
            }),
            PageResponse::NotModified => Err(IndexArgError::Unexpected { url: redact(url) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_and_project_pages() {
        assert_eq!(
            project_url("https://download.pytorch.org/whl", "torch"),
            "https://download.pytorch.org/whl/torch/"
        );
        assert_eq!(
            project_url("https://download.pytorch.org/whl/torch/", "torch"),
            "https://download.pytorch.org/whl/torch/"
        );
        assert_eq!(
            project_url("http://127.0.0.1:8080/simple/", "torchvision"),
            "http://127.0.0.1:8080/simple/torchvision/"
        );
        assert_eq!(
            IndexSource::parse("HTTPS://example.org/whl/"),
            IndexSource::Url("HTTPS://example.org/whl/".into())
        );
        assert_eq!(
            IndexSource::parse("saved/torch.html"),
            IndexSource::File("saved/torch.html".into())
        );
    }
}
