//! `wheelgate select --index URL` for a project bound to torch by its metadata (xformers,
//! fbgemm-gpu, ...: a PyTorch project outside torch's release train): torch's page is fetched
//! from the same index and each offered build's pin read from its metadata (the PEP 658 file,
//! else the wheel's `METADATA` by ranges), then the resolver's binding step
//! ([`wheelgate_resolver::select::bind`]) keeps what the proxy keeps.

use futures_util::StreamExt;
use futures_util::stream;
use sha2::{Digest, Sha256};
use wheelgate_resolver::index::{CoreMetadata, IndexFile, ProjectPage};
use wheelgate_resolver::select::bind::{Pins, TorchChoices, apply_pins, bound_builds};
use wheelgate_resolver::select::{FileRef, PageSelection, TorchPin};
use wheelgate_resolver::{Catalog, Machine, Policy};

use super::page::{IndexArgError, IndexSource, LoadedPage, Remote, load, project_url};
use wheelgate_files::metadata::parse_metadata;
use wheelgate_files::wheel_metadata::read_wheel_metadata;
use wheelgate_index::upstream::{UpstreamClient, redact};
use wheelgate_server::rewrite::select_files;

/// Metadata reads in flight at once, as the proxy reads them.
const CONCURRENT_READS: usize = 16;

/// The most a PEP 658 file may hold, as the proxy reads it: core metadata is kilobytes; more is
/// an upstream's garbage.
const METADATA_LIMIT: usize = wheelgate_files::cache::CORE_METADATA_LIMIT;

/// What binding needs besides the project's own page.
pub struct BindContext<'a> {
    pub catalog: &'a Catalog,
    pub machine: &'a Machine,
    pub policy: &'a Policy,
    /// The `--index` URL.
    pub root: &'a str,
    pub remote: &'a Remote,
}

/// Binds `selection` of `loaded` (`project`'s page, fetched from a URL) to the builds torch gets
/// on the machine from the same index.
pub fn bind(
    context: &BindContext<'_>,
    project: &str,
    loaded: &LoadedPage,
    selection: &mut PageSelection,
) -> Result<(), IndexArgError> {
    let Some(page_url) = loaded.url.as_deref() else {
        return Ok(());
    };
    let torch = torch_choices(context, project)?;
    let refs: Vec<FileRef<'_>> = loaded.page.files.iter().map(FileRef::from).collect();
    let builds = bound_builds(
        context.catalog,
        context.machine,
        context.policy,
        project,
        &refs,
        selection,
    );
    let client = &context.remote.client;
    let mut pins = Pins::new();
    loop {
        let pending = builds.pending(selection, &pins, &torch);
        if pending.is_empty() {
            break;
        }
        let read: Vec<_> = context.remote.block_on(
            stream::iter(pending)
                .map(|(build, index)| async move {
                    let file = &loaded.page.files[index];
                    (build, read_pin(client, &loaded.page, page_url, file).await)
                })
                .buffer_unordered(CONCURRENT_READS)
                .collect(),
        );
        pins.extend(read);
    }
    apply_pins(selection, &builds, &pins, &torch);
    Ok(())
}

/// What torch gets on the machine, per version, from the index `project`'s page is on; none
/// when the index has no torch (then no bound build is kept, as the proxy keeps none).
fn torch_choices(context: &BindContext<'_>, project: &str) -> Result<TorchChoices, IndexArgError> {
    let root = index_root(context.root, project);
    let torch = match load(&IndexSource::Url(root), "torch", Some(context.remote)) {
        Ok(torch) => torch,
        Err(IndexArgError::NotFound { .. }) => return Ok(TorchChoices::default()),
        Err(other) => return Err(other),
    };
    let selection = select_files(
        context.catalog,
        context.machine,
        context.policy,
        "torch",
        &torch.page,
    );
    Ok(TorchChoices::from_selection(&selection))
}

/// The index an `--index` value is on: itself, or its parent when it is `project`'s own page.
fn index_root(root: &str, project: &str) -> String {
    let page = project_url(root, project);
    let trimmed = page.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/"),
        None => root.to_string(),
    }
}

/// The torch pin in `file`'s core metadata, or why it could not be read.
async fn read_pin(
    client: &UpstreamClient,
    page: &ProjectPage,
    page_url: &str,
    file: &IndexFile,
) -> Result<TorchPin, String> {
    let url = page.file_url(file, page_url);
    let bytes = match &file.core_metadata {
        CoreMetadata::Absent => read_wheel_metadata(client, (&url, Some(page_url)), &file.filename)
            .await
            .map_err(|err| err.to_string())?,
        CoreMetadata::Present => metadata_file(client, (&url, page_url), None).await?,
        CoreMetadata::Hashes(hashes) => {
            metadata_file(
                client,
                (&url, page_url),
                hashes.get("sha256").map(String::as_str),
            )
            .await?
        }
    };
    let metadata = parse_metadata(&bytes, &file.filename).map_err(|err| err.to_string())?;
    Ok(TorchPin::of(&metadata.requires_dist))
}

/// The PEP 658 file of the file at `url` (listed on the page at `page_url`), checked against the
/// page's `sha256` when it gives one.
async fn metadata_file(
    client: &UpstreamClient,
    (url, page_url): (&str, &str),
    sha256: Option<&str>,
) -> Result<Vec<u8>, String> {
    let url = format!("{url}.metadata");
    let mut response = client
        .get_stream(&url, reqwest::header::HeaderMap::new(), Some(page_url))
        .await
        .map_err(|err| wheelgate_index::error_chain::source_chain(&err))?;
    if let Some(announced) = response.content_length()
        && announced > METADATA_LIMIT as u64
    {
        return Err(format!(
            "`{}` is {announced} bytes, larger than {METADATA_LIMIT}: not a core metadata file",
            redact(&url)
        ));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("reading `{}`: {err}", redact(&url)))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > METADATA_LIMIT {
            return Err(format!(
                "`{}` is larger than {METADATA_LIMIT} bytes: not a core metadata file",
                redact(&url)
            ));
        }
    }
    if let Some(expected) = sha256 {
        let actual = hex::encode(Sha256::digest(&bytes));
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(format!(
                "`{}` has sha256 {actual}, not the {expected} its page lists",
                redact(&url)
            ));
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_of_a_project_page_is_its_parent() {
        assert_eq!(
            index_root("https://download.pytorch.org/whl/xformers/", "xformers"),
            "https://download.pytorch.org/whl/"
        );
        assert_eq!(
            index_root("https://download.pytorch.org/whl", "xformers"),
            "https://download.pytorch.org/whl/"
        );
        assert_eq!(
            index_root("http://127.0.0.1:8080/simple/", "fbgemm-gpu"),
            "http://127.0.0.1:8080/simple/"
        );
    }
}
