//! Rewriting an upstream page for one machine: keep, per version, only the chosen build's files
//! (every attribute kept), and point every file link at the proxy.

use std::collections::BTreeSet;

use pep440_rs::Version;
use wheelgate_resolver::filename::DistFilename;
use wheelgate_resolver::index::{
    IndexFile, LinkedPage, ProjectPage, render_linked_html, render_linked_json,
    render_project_html, render_project_json,
};
use wheelgate_resolver::select::{FileRef, PageSelection, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy};

use wheelgate_index::sources::merge::{Origins, drop_same_builds};

/// The page a client gets: `upstream` reduced to the machine's builds when `select` is set (a
/// PyTorch project), each build once when several sources offer it (`origins`), with links to
/// `/files/<project>/<filename>`.
pub fn rewrite_page(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    upstream: &ProjectPage,
    origins: &Origins,
    select: bool,
) -> ProjectPage {
    if select {
        let selection = select_files(catalog, machine, policy, project, upstream);
        rewrite_selected(project, upstream, origins, &selection)
    } else {
        rewrite_whole(project, upstream)
    }
}

/// `upstream` reduced to what `selection` keeps (each build once when several sources offer
/// it), linked to the proxy.
pub fn rewrite_selected(
    project: &str,
    upstream: &ProjectPage,
    origins: &Origins,
    selection: &PageSelection,
) -> ProjectPage {
    let files: Vec<&IndexFile> = upstream.files.iter().collect();
    rewrite_selected_files(project, &files, upstream, origins, selection)
}

/// [`rewrite_selected`] over `files` (indexed as the selection was made), borrowed from their
/// pages; `first` gives the page's name, meta and status.
pub fn rewrite_selected_files(
    project: &str,
    files: &[&IndexFile],
    first: &ProjectPage,
    origins: &Origins,
    selection: &PageSelection,
) -> ProjectPage {
    link_selected_files(project, files, first, origins, selection).to_page()
}

/// [`rewrite_selected_files`] with the kept files borrowed where they lie: rendered as it is,
/// nothing of them is copied.
pub fn link_selected_files<'a>(
    project: &str,
    files: &[&'a IndexFile],
    first: &ProjectPage,
    origins: &Origins,
    selection: &PageSelection,
) -> LinkedPage<'a> {
    let mut kept: Vec<usize> = selection
        .versions
        .iter()
        .flat_map(|v| v.kept.iter().copied())
        .collect();
    kept.sort_unstable();
    drop_same_builds(|i| &files[i].filename, origins, &mut kept);
    // The selection already knows each version: no filename is parsed twice.
    let mut versions: Vec<&Version> = selection
        .versions
        .iter()
        .filter(|v| !v.kept.is_empty())
        .map(|v| &v.version)
        .collect();
    versions.sort();
    let versions = versions.into_iter().map(Version::to_string).collect();
    linked(project, files, first, kept, versions)
}

/// A page rewritten for a machine, ready to render: its kept files where they lie (a plain
/// selection), or a copy of them (a page not selected, or one that something changed further:
/// a machine's extras, variants, binding, an offline mirror's reduction).
pub enum Rewritten<'a> {
    /// The kept files where they lie, links rewritten beside them.
    Linked(LinkedPage<'a>),
    /// A copy of them, links rewritten in it.
    Copied(ProjectPage),
}

impl Rewritten<'_> {
    /// Whether the page lists no file.
    pub fn is_empty(&self) -> bool {
        match self {
            Rewritten::Linked(page) => page.is_empty(),
            Rewritten::Copied(page) => page.files.is_empty(),
        }
    }

    /// The page as PEP 691 JSON.
    pub fn render_json(&self) -> String {
        match self {
            Rewritten::Linked(page) => render_linked_json(page),
            Rewritten::Copied(page) => render_project_json(page),
        }
    }

    /// The page as PEP 503 HTML.
    pub fn render_html(&self) -> String {
        match self {
            Rewritten::Linked(page) => render_linked_html(page),
            Rewritten::Copied(page) => render_project_html(page),
        }
    }
}

/// `upstream` whole (a project whose builds are not selected), linked to the proxy. Its
/// `versions` as the upstream wrote them (PEP 700: fileless versions included, `0.6c1` not
/// re-spelled); from the files only for a page that gives none (HTML).
fn rewrite_whole(project: &str, upstream: &ProjectPage) -> ProjectPage {
    let versions = if upstream.versions.is_empty() {
        let versions: BTreeSet<Version> = upstream
            .files
            .iter()
            .filter_map(|file| file.filename.parse::<DistFilename>().ok())
            .map(|parsed| parsed.version().clone().without_local())
            .collect();
        versions.iter().map(Version::to_string).collect()
    } else {
        upstream.versions.clone()
    };
    let files: Vec<&IndexFile> = upstream.files.iter().collect();
    linked(
        project,
        &files,
        upstream,
        (0..files.len()).collect(),
        versions,
    )
    .to_page()
}

/// Files `kept` of `files` with their links pointing at the proxy, every other field kept;
/// `upstream` gives the page's meta and status.
fn linked<'a>(
    project: &str,
    files: &[&'a IndexFile],
    upstream: &ProjectPage,
    kept: Vec<usize>,
    versions: Vec<String>,
) -> LinkedPage<'a> {
    let mut page = LinkedPage::new(
        project.to_string(),
        versions,
        upstream.meta.clone(),
        upstream.status.clone(),
    );
    // Every verifiable wheel is offered with its `.metadata`: where the upstream has none (a
    // registry mirror, Artifactory and Nexus remotes), `server/files.rs` reads it from the
    // verified wheel once and keeps it, so installers resolve on kilobytes.
    page.derived_metadata = true;
    // `/files/<project>/` and a filename of a few dozen bytes, a `+` of it encoded.
    page.reserve(kept.len(), project.len() + 80);
    for index in kept {
        page.push(files[index], |link| {
            push_file_link(link, project, &files[index].filename);
        });
    }
    page
}

/// The selection the proxy rewrites `upstream` by, for one machine: shared with
/// `wheelgate select --index`, so the command answers exactly what the proxy serves.
pub fn select_files(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    upstream: &ProjectPage,
) -> PageSelection {
    let refs: Vec<FileRef<'_>> = upstream.files.iter().map(FileRef::from).collect();
    select_page(catalog, machine, policy, project, &refs)
}

/// The proxy's link to a file: root-relative, so it works behind any host name and under every
/// route prefix; the filename percent-encoded (`+` as `%2B`, as download.pytorch.org does).
pub fn file_link(project: &str, filename: &str) -> String {
    let mut link = String::with_capacity(filename.len() + project.len() + 16);
    push_file_link(&mut link, project, filename);
    link
}

/// Appends [`file_link`] to `link`.
fn push_file_link(link: &mut String, project: &str, filename: &str) {
    link.push_str("/files/");
    link.push_str(project);
    link.push('/');
    push_encoded(link, filename);
}

/// Appends `segment` to `link` as one path segment: RFC 3986 unreserved bytes as they are,
/// every other byte percent-encoded. Runs of unreserved bytes are copied whole (a filename is
/// one or two of them, split at a local version's `+`): byte by byte, with a formatter for
/// each escape, it was a third of rewriting a selected torch page's links.
pub fn push_encoded(link: &mut String, segment: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = segment.as_bytes();
    let mut run = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            continue;
        }
        // A run ends before a byte that is not ASCII or starts one after it: either way at a
        // character boundary.
        link.push_str(segment.get(run..at).unwrap_or_default());
        link.push('%');
        link.push(char::from(HEX[usize::from(byte >> 4)]));
        link.push(char::from(HEX[usize::from(byte & 0x0f)]));
        run = at + 1;
    }
    link.push_str(segment.get(run..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use wheelgate_resolver::index::parse_project_html;

    #[test]
    fn every_byte_but_unreserved_ones_is_percent_encoded() {
        // What RFC 3986 asks, byte by byte: the reference the run-copying encoder must match.
        let reference = |segment: &str| {
            segment
                .bytes()
                .map(|byte| {
                    if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                        char::from(byte).to_string()
                    } else {
                        format!("%{byte:02X}")
                    }
                })
                .collect::<String>()
        };
        for segment in [
            "",
            "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "+leading and trailing+",
            "a%2Bb/c?d#e",
            "ünïcødé-1.0.tar.gz",
            "日本-😀-~ok",
        ] {
            let mut link = String::from("/files/x/");
            push_encoded(&mut link, segment);
            assert_eq!(
                link,
                format!("/files/x/{}", reference(segment)),
                "{segment}"
            );
        }
    }

    #[test]
    fn links_point_at_the_proxy_with_plus_encoded() {
        assert_eq!(
            file_link(
                "torch",
                "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
            ),
            "/files/torch/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
    }

    #[test]
    fn keeps_one_backend_and_every_attribute() {
        let html = r#"<h1>Links for torch</h1>
<a href="/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=aa" data-dist-info-metadata="sha256=bb" data-core-metadata="sha256=bb" data-upload-time="2026-04-05T10:11:12Z">torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="https://download-r2.example/whl/cu128/torch-2.9.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=cc">torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=dd">torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>"#;
        let upstream = parse_project_html(html).unwrap();
        let machine: Machine = serde_json::from_str(r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#).unwrap();
        let page = rewrite_page(
            Catalog::embedded(),
            &machine,
            &Policy::default(),
            "torch",
            &upstream,
            &Origins::One(wheelgate_index::sources::SourceId(0)),
            true,
        );
        assert_eq!(page.files.len(), 1);
        let file = &page.files[0];
        assert_eq!(
            file.filename,
            "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(
            file.url,
            "/files/torch/torch-2.9.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(file.sha256(), Some("cc"));
        assert_eq!(page.versions, ["2.9.0"]);

        let h100: Machine = serde_json::from_str(r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#).unwrap();
        let page = rewrite_page(
            Catalog::embedded(),
            &h100,
            &Policy::default(),
            "torch",
            &upstream,
            &Origins::One(wheelgate_index::sources::SourceId(0)),
            true,
        );
        assert_eq!(
            page.files[0].upload_time.as_deref(),
            Some("2026-04-05T10:11:12Z")
        );
        assert!(page.files[0].core_metadata.is_present());
    }
}
