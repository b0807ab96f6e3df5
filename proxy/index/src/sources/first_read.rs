//! At start, one page of each source, read as any request would read it, so that a source
//! whose pages cannot be read is named before any installer fails on it (issue 40: a registry
//! whose every page answered 502 while the status page said "ok").

use std::fmt::Write as _;

use futures_util::future::join_all;

use super::{Owns, SourceKind, Sources};
use crate::cache::index::{IndexCache, IndexError};
use crate::upstream::UpstreamClient;

/// The project read from a source that owns everything: on every index that mirrors PyPI, and
/// small.
const GENERAL_PROBE: &str = "pip";

/// One line per source: what reading one of its pages gave. The pages land in the index
/// cache as any request's would.
pub async fn first_read_lines(
    sources: &Sources,
    index: &IndexCache,
    client: &UpstreamClient,
) -> Vec<String> {
    let reads = sources.iter().map(|(_, source)| async move {
        let name = &source.name;
        let Some(project) = probe_project(source) else {
            return format!(
                "source `{name}`: not read at start (it owns no single name to ask for)"
            );
        };
        let url = source.page_url(&project, None);
        match index.get(client, &url).await {
            Ok(Some(cached)) => {
                let page = &cached.page;
                let mut line = format!(
                    "source `{name}`: pages read (`{project}`: {} files)",
                    page.files.len()
                );
                if let Some(first) = page.dropped.first() {
                    let _ = write!(
                        line,
                        "; {} entries left off, the first `{}`: {}",
                        page.dropped.len(),
                        first.entry,
                        first.reason
                    );
                }
                line
            }
            Ok(None) => format!("source `{name}`: answers (it has no `{project}`)"),
            Err(error) => describe_failure(name, &error),
        }
    });
    join_all(reads).await
}

/// The project to read from `source`: one it owns by name, `pip` from the general index; none
/// for a per-build source (its pages are per torch release) or one that owns only globs.
fn probe_project(source: &super::Source) -> Option<String> {
    if source.kind == SourceKind::PerBuild {
        return None;
    }
    match &source.owns {
        Owns::PytorchNames => Some("torch".to_owned()),
        Owns::Rest => Some(GENERAL_PROBE.to_owned()),
        Owns::Patterns(patterns) => patterns
            .iter()
            .find_map(|pattern| pattern.as_name())
            .map(str::to_owned),
    }
}

fn describe_failure(name: &str, error: &IndexError) -> String {
    let message = crate::cache::index::client_message(error.root());
    match error.root() {
        IndexError::Parse { .. } => format!("source `{name}`: pages cannot be read: {message}"),
        _ => format!("source `{name}`: failed: {message}"),
    }
}
