//! `/files/<project>/<filename>`: wheels, sdists and their PEP 658 `.metadata` files, through the
//! file cache, with the HTTP semantics pip and uv rely on: `HEAD`, `Range` (uv reads a wheel's
//! metadata by `HEAD` then `Range` when no `.metadata` is offered; pip resumes with `Range` plus
//! `If-Range`), a strong `ETag` and `304`, `Cache-Control: immutable`.
//!
//! The path is only ever used to look the file up in its project's index page: the upstream URL
//! and hash come from the page, and the cache key from those, so no client input reaches the
//! file system.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::CoreMetadata;

use wheelgate_files::cache::FileSpec;

use super::error::ApiError;
pub use super::file_response::{FilesError, respond};
use super::lookup::{FileSource, find_file};
use super::state::AppState;

const METADATA_SUFFIX: &str = ".metadata";

/// The file routes: `GET` and `HEAD` on `/files/{project}/{filename}`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/files/{project}/{filename}", get(get_file).head(head_file))
}

async fn get_file(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::GET, &project, &filename, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn head_file(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::HEAD, &project, &filename, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// A validated file request.
#[derive(Debug, PartialEq, Eq)]
struct FileRequest {
    project: String,
    /// The distribution's filename (without `.metadata`).
    filename: String,
    /// Whether the PEP 658 metadata file is asked for.
    metadata: bool,
}

/// Checks the two path segments (already percent-decoded by the router). Only names are
/// accepted, never anything path-like, though they never reach a path: they are looked up in
/// the project's page.
fn parse_request(project: &str, filename: &str) -> Result<FileRequest, ApiError> {
    let valid_project = !project.is_empty()
        && project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && normalize_name(project) == project;
    if !valid_project {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a normalized project name (PEP 503)",
            printable(project)
        )));
    }
    if filename.is_empty()
        || filename.contains(['/', '\\'])
        || filename.contains("..")
        || filename.chars().any(char::is_control)
    {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a file name",
            printable(filename)
        )));
    }
    let (dist, metadata) = match filename.strip_suffix(METADATA_SUFFIX) {
        Some(dist) => (dist, true),
        None => (filename, false),
    };
    // A wheel or sdist names its project: another's is refused at once. Any other name
    // (`.zip` and `.tar.bz2` sdists of older releases, `.egg`, `.exe`) is served only if the
    // project's page lists it, as every name is: it is looked up there, never on a path.
    if let Ok(parsed) = dist.parse::<DistFilename>()
        && normalize_name(parsed.name()) != project
    {
        return Err(ApiError::NotFound(format!(
            "`{dist}` is not a file of `{project}`"
        )));
    }
    Ok(FileRequest {
        project: project.to_string(),
        filename: dist.to_string(),
        metadata,
    })
}

/// Control characters escaped, so an error message cannot forge log lines or headers.
fn printable(text: &str) -> String {
    text.chars().flat_map(char::escape_default).collect()
}

/// Serves `filename` of `project` (also for [`super::variants`], which names the upstream
/// variant file).
pub(super) async fn serve(
    state: &AppState,
    method: &Method,
    project: &str,
    filename: &str,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let request = parse_request(project, filename)?;
    serve_listed(
        state,
        method,
        &request.project,
        &request.filename,
        request.metadata,
        headers,
    )
    .await
}

/// Serves `filename` (or its `.metadata` file) of `project`, checked by the caller, as its
/// project page lists it (also for [`super::variants`]' `*-variants.json` files, which are not
/// distribution names).
pub(super) async fn serve_listed(
    state: &AppState,
    method: &Method,
    project: &str,
    filename: &str,
    metadata: bool,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let request = FileRequest {
        project: project.to_string(),
        filename: filename.to_string(),
        metadata,
    };
    let source = find_file(state, &request.project, &request.filename)
        .await
        .map_err(ApiError::Owners)?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "`{}` has no file `{}`",
                request.project, request.filename
            ))
        })?;
    if request.metadata
        && source.core_metadata == CoreMetadata::Absent
        && wheelgate_resolver::filename::is_wheel(&request.filename)
        && source.sha256.is_some()
    {
        // Listed with `.metadata` though the upstream offers none (`server/rewrite.rs`).
        let wheel = file_spec(&source, false).expect("a file's own spec");
        return super::derived_metadata::serve(state, &wheel, &request.filename, method, headers)
            .await;
    }
    let spec = file_spec(&source, request.metadata).ok_or_else(|| {
        ApiError::NotFound(format!(
            "`{}` has no metadata file (PEP 658)",
            request.filename
        ))
    })?;
    state.metrics.file_lookup(state.files.contains(&spec));
    respond(state, &spec, method, headers)
        .await
        .map_err(|source| FilesError::Cache {
            // The name the client asked for, `.metadata` included.
            filename: if metadata {
                format!("{filename}{METADATA_SUFFIX}")
            } else {
                filename.to_string()
            },
            source,
        })
}

/// The cache's view of a page's file, or of its `.metadata` file (`None` when the page offers
/// none).
fn file_spec(source: &FileSource, metadata: bool) -> Option<FileSpec> {
    if !metadata {
        return Some(FileSpec {
            url: source.url.clone(),
            sha256: source.sha256.clone(),
            size: source.size,
            splice: None,
            listed_on: Some(std::sync::Arc::clone(&source.listed_on)),
        });
    }
    let sha256 = match &source.core_metadata {
        CoreMetadata::Absent => return None,
        CoreMetadata::Present => None,
        CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
    };
    Some(FileSpec {
        url: format!("{}{METADATA_SUFFIX}", source.url),
        sha256,
        size: None,
        splice: None,
        listed_on: Some(std::sync::Arc::clone(&source.listed_on)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_names() {
        let wheel = "torch-2.9.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
        assert_eq!(
            parse_request("torch", wheel).unwrap(),
            FileRequest {
                project: "torch".into(),
                filename: wheel.into(),
                metadata: false
            }
        );
        assert!(
            parse_request("torch", &format!("{wheel}.metadata"))
                .unwrap()
                .metadata
        );
        assert!(
            parse_request(
                "nvidia-cudnn-cu12",
                "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"
            )
            .is_ok()
        );
        assert!(parse_request("demo", "demo-1.0.tar.gz").is_ok());
        for (project, filename) in [
            ("torch", "../../etc/passwd"),
            ("torch", "..%2F..%2Fetc%2Fpasswd"),
            ("torch", "..\\..\\x.whl"),
            ("torch", "torch-2.9.0-cp311-cp311-linux_x86_64.whl\0"),
            ("torch", "torch-2.9.0-cp311-cp311-linux_x86_64.whl/x"),
            ("torch", ""),
            ("..", "x"),
            ("Torch", wheel),
            ("torch_x", "torch_x-1.0.tar.gz"),
            ("", wheel),
            ("torch\n", wheel),
        ] {
            assert!(
                matches!(
                    parse_request(project, filename),
                    Err(ApiError::BadRequest(_))
                ),
                "{project:?} {filename:?} must be refused"
            );
        }
        assert!(matches!(
            parse_request("numpy", wheel),
            Err(ApiError::NotFound(_))
        ));
        let err = parse_request("torch", "a\nb").unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        // Names that are neither wheels nor `.tar.gz` sdists are looked up like any other: a
        // page may list them (older sdists, eggs, installers).
        for listed in [
            "demo-0.6c1.zip",
            "demo-1.0.tar.bz2",
            "demo-0.4-py2.7.egg",
            "demo-1.0.win32.exe",
            "passwd",
        ] {
            assert_eq!(
                parse_request("demo", listed).unwrap().filename,
                listed,
                "{listed}"
            );
        }
    }

    #[test]
    fn metadata_spec_follows_the_page() {
        let mut source = FileSource {
            url: "https://files.example/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
            sha256: Some("a".repeat(64)),
            size: Some(10),
            core_metadata: CoreMetadata::Absent,
            listed_on: "https://files.example/simple/torch/".into(),
        };
        assert_eq!(file_spec(&source, false).unwrap().size, Some(10));
        assert_eq!(file_spec(&source, true), None);
        source.core_metadata =
            CoreMetadata::Hashes([("sha256".to_string(), "b".repeat(64))].into());
        let spec = file_spec(&source, true).unwrap();
        assert_eq!(spec.url, format!("{}.metadata", source.url));
        assert_eq!(spec.sha256, Some("b".repeat(64)));
        assert_eq!(spec.size, None);
        source.core_metadata = CoreMetadata::Present;
        assert_eq!(file_spec(&source, true).unwrap().sha256, None);
    }
}
