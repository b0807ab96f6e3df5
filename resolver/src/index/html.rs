//! PEP 503 HTML simple-index pages, read and written.
//!
//! The reader is a small byte scanner instead of an HTML5 parser: simple pages are flat lists
//! of anchors, and the proxy parses every page it serves, so it must be fast (the 52 KB
//! download.pytorch.org cu130/torch page parses at well over 100 MB/s in release builds) and
//! must never fail on a page pip would accept. It follows the HTML tokenizer where that
//! matters for these pages: quoted, single-quoted and unquoted attributes, case-insensitive
//! names, first attribute wins, comments, `<script>`/`<style>` raw text, character references.

use std::borrow::Cow;

mod tail;
pub use tail::HtmlTail;

use super::error::{IndexParseError, check_api_version, check_link_count, check_size};
use super::hashes::Hashes;
use super::linked::LinkedPage;
use super::model::{
    CoreMetadata, DEFAULT_API_VERSION, IndexFile, Meta, ProjectLink, ProjectList, ProjectPage,
    ProjectStatus, Yanked, is_html_space, parse_api_version,
};

/// Reads a [PEP 503] project page (with [PEP 592] `data-yanked`, [PEP 629]
/// `pypi:repository-version`, [PEP 658]/[PEP 714] `data-core-metadata` and legacy
/// `data-dist-info-metadata`, [PEP 740] `data-provenance`, [PEP 792] project status, and
/// download.pytorch.org's `data-upload-time`).
///
/// Malformed markup gives a best-effort page; anchors without a link or a file name are
/// skipped. A page with no anchors is a valid empty page.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 592]: https://peps.python.org/pep-0592/
/// [PEP 629]: https://peps.python.org/pep-0629/
/// [PEP 658]: https://peps.python.org/pep-0658/
/// [PEP 714]: https://peps.python.org/pep-0714/
/// [PEP 740]: https://peps.python.org/pep-0740/
/// [PEP 792]: https://peps.python.org/pep-0792/
//
// Input, as download.pytorch.org/whl/cu130/torch/ serves it (hashes shortened):
//
//     <!DOCTYPE html>
//     <html>
//       <body>
//         <h1>Links for torch</h1>
//         <a href="/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-manylinux_2_28_aarch64.whl#sha256=adfb2bca94f1..." data-dist-info-metadata="sha256=b0d90eccbeb7..." data-core-metadata="sha256=b0d90eccbeb7...">torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl</a><br/>
//       </body>
//     </html>
//     <!--TIMESTAMP 1774772182-->
//
// and as PyPI serves it:
//
//     <a href="https://files.pythonhosted.org/packages/.../filelock-3.20.0-py3-none-any.whl#sha256=..." data-requires-python="&gt;=3.9" data-dist-info-metadata="sha256=..." data-core-metadata="sha256=..." data-provenance="https://pypi.org/integrity/filelock/3.20.0/filelock-3.20.0-py3-none-any.whl/provenance">filelock-3.20.0-py3-none-any.whl</a><br />
pub fn parse_project_html(content: &str) -> Result<ProjectPage, IndexParseError> {
    check_size(content)?;
    let mut files = Vec::with_capacity(files_expected(content.len()));
    let head = walk(content, |anchor, text| push_file(&mut files, anchor, text))?;
    Ok(project_page(head, files))
}

/// A [PEP 503] project page read while it arrives. Each [`read`](Self::read) takes the anchors
/// the text so far completes, so a page of thousands of links is mostly parsed by the time its
/// last bytes land instead of after; [`finish`](Self::finish) gives what
/// [`parse_project_html`] gives for the whole text, errors included.
#[derive(Default)]
pub struct ProjectHtmlReader {
    walk: Walk,
    /// How much text the last step had.
    read_up_to: usize,
    files: Vec<IndexFile>,
    /// The first error the page's text gave; the walk stops there, as a whole-page parse does.
    error: Option<IndexParseError>,
}

impl ProjectHtmlReader {
    /// A reader of a page `length` bytes long, room made for its files at once (as
    /// [`parse_project_html`] makes it); `0` when the length is not known.
    pub fn for_length(length: usize) -> Self {
        ProjectHtmlReader {
            files: Vec::with_capacity(files_expected(length)),
            ..ProjectHtmlReader::default()
        }
    }

    /// Reads what `arrived`, the page so far, completes. Each call's text must begin with the
    /// previous call's.
    pub fn read(&mut self, arrived: &str) {
        self.read_until_token_at(arrived, usize::MAX);
    }

    /// Reads what `arrived`, the page so far, completes, as [`read`](Self::read) does, but stops
    /// at the first token `bytes` or more past where it began: a caller can see between steps
    /// whether the page's end came meanwhile (and cut what is left for several threads). Says
    /// whether it stopped there, with more to read.
    pub fn read_step(&mut self, arrived: &str, bytes: usize) -> bool {
        let until = self.walk.pos.saturating_add(bytes.max(1));
        self.read_until_token_at(arrived, until)
    }

    /// Reads what `arrived` completes up to the first token starting at `until` or later; says
    /// whether it stopped there.
    fn read_until_token_at(&mut self, arrived: &str, until: usize) -> bool {
        if self.error.is_some() || arrived.len() > super::MAX_PAGE_BYTES {
            return false;
        }
        // A step reads the token it stopped at again from its start: it waits until at least
        // that much more has arrived, so that one huge token (an attribute never closed) fed a
        // few bytes at a time costs linear time, not quadratic.
        let pending = self.read_up_to.saturating_sub(self.walk.pos);
        if arrived.len() < self.read_up_to + pending {
            return false;
        }
        let files = &mut self.files;
        if let Err(err) = self.walk.advance(arrived, false, until, |anchor, text| {
            push_file(files, anchor, text)
        }) {
            self.read_up_to = arrived.len();
            self.error = Some(err);
            return false;
        }
        let stopped_at_until = self.walk.pos >= until;
        // Stopped before `until`, the token there waits for more text; stopped at it, nothing
        // is pending and the next step may go on at once.
        self.read_up_to = if stopped_at_until {
            self.walk.pos
        } else {
            arrived.len()
        };
        stopped_at_until
    }

    /// The files read so far, in page order: the first files of the finished page.
    pub fn files(&self) -> &[IndexFile] {
        &self.files
    }

    /// The page, from `content`: the whole text, which begins with everything read before.
    pub fn finish(mut self, content: &str) -> Result<ProjectPage, IndexParseError> {
        check_size(content)?;
        if let Some(err) = self.error {
            return Err(err);
        }
        let files = &mut self.files;
        self.walk
            .advance(content, true, usize::MAX, |anchor, text| {
                push_file(files, anchor, text)
            })?;
        Ok(project_page(self.walk.into_head(), self.files))
    }
}

fn push_file(
    files: &mut Vec<IndexFile>,
    anchor: &Anchor<'_>,
    text: &str,
) -> Result<(), IndexParseError> {
    if let Some(file) = anchor.to_file(text) {
        files.push(file);
        check_link_count(files.len())?;
    }
    Ok(())
}

fn project_page(head: Head, files: Vec<IndexFile>) -> ProjectPage {
    ProjectPage {
        name: head.name.unwrap_or_default(),
        files,
        versions: Vec::new(),
        meta: head.meta,
        base: head.base,
        status: head.status,
        dropped: Vec::new(),
    }
}

/// Reads a [PEP 503] root page: one anchor per project, the anchor text its name.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
//
// Input, as download.pytorch.org/whl/cu130/ serves it:
//
//     <!DOCTYPE html>
//     <html>
//       <body>
//         <a href="certifi/">certifi</a><br/>
//         <a href="charset-normalizer/">charset-normalizer</a><br/>
//       </body>
//     </html>
//     <!--TIMESTAMP 1774765727-->
pub fn parse_project_list_html(content: &str) -> Result<ProjectList, IndexParseError> {
    check_size(content)?;
    let mut projects = Vec::new();
    let head = walk(content, |anchor, text| {
        if let Some(project) = anchor.to_project(text) {
            projects.push(project);
            check_link_count(projects.len())?;
        }
        Ok(())
    })?;
    Ok(ProjectList {
        projects,
        meta: head.meta,
    })
}

/// Writes a [PEP 503] project page the way PyPI does, keeping every attribute HTML can carry:
/// the first hash as a `#<name>=<hex>` fragment (sha256 preferred), `data-requires-python`,
/// `data-yanked`, both `data-dist-info-metadata` and `data-core-metadata` ([PEP 714] asks for
/// both while old clients remain), `data-gpg-sig`, `data-provenance`, `data-upload-time`.
/// `size` and `versions` have no HTML form and are left out. Metadata that is absent is never
/// written as `"false"`, which pip would read as present.
///
/// Links are written as stored; the proxy rewrites them before rendering.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 714]: https://peps.python.org/pep-0714/
pub fn render_project_html(page: &ProjectPage) -> String {
    let files = page.files.iter().map(|file| (file, file.url.as_str()));
    let head = (
        &page.name[..],
        &page.meta,
        page.status.as_ref(),
        page.base.as_deref(),
    );
    render_files_html(
        head,
        files.map(|(file, link)| (file, link, &file.core_metadata)),
    )
}

/// Writes a [`LinkedPage`] as [`render_project_html`] writes the page of
/// [`LinkedPage::to_page`], without that copy.
pub fn render_linked_html(page: &LinkedPage<'_>) -> String {
    let head = (&page.name[..], &page.meta, page.status.as_ref(), None);
    render_files_html(
        head,
        page.files()
            .map(|(file, link)| (file, link, page.core_metadata(file))),
    )
}

/// The page (name, meta, status, base) with `files`, each written with the link beside it.
fn render_files_html<'f>(
    (name, meta, status, base): (&str, &Meta, Option<&ProjectStatus>, Option<&str>),
    files: impl ExactSizeIterator<Item = (&'f IndexFile, &'f str, &'f CoreMetadata)>,
) -> String {
    let mut out = String::with_capacity(512 + files.len() * 400);
    render_head(&mut out, meta, status, base);
    out.push_str("    <title>Links for ");
    escape_into(&mut out, name);
    out.push_str("</title>\n  </head>\n  <body>\n    <h1>Links for ");
    escape_into(&mut out, name);
    out.push_str("</h1>\n");
    for (file, link, metadata) in files {
        render_file(&mut out, file, link, metadata);
    }
    out.push_str("  </body>\n</html>\n");
    out
}

/// Writes a [PEP 503] root page: one anchor per project.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
pub fn render_project_list_html(list: &ProjectList) -> String {
    let mut out = String::with_capacity(256 + list.projects.len() * 64);
    render_head(&mut out, &list.meta, None, None);
    out.push_str("    <title>Simple index</title>\n  </head>\n  <body>\n");
    for project in &list.projects {
        out.push_str("    <a href=\"");
        escape_into(&mut out, &project.href);
        out.push_str("\">");
        escape_into(&mut out, &project.name);
        out.push_str("</a><br />\n");
    }
    out.push_str("  </body>\n</html>\n");
    out
}

fn render_head(out: &mut String, meta: &Meta, status: Option<&ProjectStatus>, base: Option<&str>) {
    // A version that is not `major.minor` would make clients that check it (PEP 629) refuse
    // the page; the parser tolerated it, the renderer does not repeat it.
    let version = if parse_api_version(&meta.api_version).is_some() {
        meta.api_version.as_str()
    } else {
        DEFAULT_API_VERSION
    };
    out.push_str("<!DOCTYPE html>\n<html>\n  <head>\n");
    out.push_str("    <meta name=\"pypi:repository-version\" content=\"");
    escape_into(out, version);
    out.push_str("\">\n");
    for (name, urls) in [
        ("pypi:tracks", &meta.tracks),
        ("pypi:alternate-locations", &meta.alternate_locations),
    ] {
        for url in urls {
            out.push_str("    <meta name=\"");
            out.push_str(name);
            out.push_str("\" content=\"");
            escape_into(out, url);
            out.push_str("\">\n");
        }
    }
    if let Some(status) = status {
        out.push_str("    <meta name=\"pypi:project-status\" content=\"");
        escape_into(out, &status.status);
        out.push_str("\">\n");
        if let Some(reason) = &status.reason {
            out.push_str("    <meta name=\"pypi:project-status-reason\" content=\"");
            escape_into(out, reason);
            out.push_str("\">\n");
        }
    }
    if let Some(base) = base {
        out.push_str("    <base href=\"");
        escape_into(out, base);
        out.push_str("\">\n");
    }
}

/// One anchor: `file` linked to `link`, its core metadata as `metadata` says.
fn render_file(out: &mut String, file: &IndexFile, link: &str, metadata: &CoreMetadata) {
    out.push_str("    <a href=\"");
    escape_into(out, link);
    if let Some((name, value)) = preferred_hash(&file.hashes) {
        out.push('#');
        escape_into(out, name);
        out.push('=');
        escape_into(out, value);
    }
    out.push('"');
    if let Some(requires_python) = &file.requires_python {
        push_attr(out, "data-requires-python", requires_python);
    }
    if let Yanked::Yes { reason } = &file.yanked {
        push_attr(out, "data-yanked", reason.as_deref().unwrap_or(""));
    }
    let metadata = match metadata {
        CoreMetadata::Absent => None,
        CoreMetadata::Present => Some("true".to_owned()),
        CoreMetadata::Hashes(hashes) => Some(
            preferred_hash(hashes).map_or_else(|| "true".to_owned(), |(n, v)| format!("{n}={v}")),
        ),
    };
    if let Some(metadata) = metadata {
        push_attr(out, "data-dist-info-metadata", &metadata);
        push_attr(out, "data-core-metadata", &metadata);
    }
    if let Some(gpg_sig) = file.gpg_sig {
        push_attr(out, "data-gpg-sig", if gpg_sig { "true" } else { "false" });
    }
    if let Some(provenance) = &file.provenance {
        push_attr(out, "data-provenance", provenance);
    }
    if let Some(upload_time) = &file.upload_time {
        push_attr(out, "data-upload-time", upload_time);
    }
    out.push('>');
    escape_into(out, &file.filename);
    out.push_str("</a><br />\n");
}

/// An HTML link carries one hash; sha256 is the one every installer checks.
fn preferred_hash(hashes: &Hashes) -> Option<(&str, &str)> {
    hashes
        .get("sha256")
        .map(|value| ("sha256", value.as_str()))
        .or_else(|| {
            hashes
                .iter()
                .next()
                .map(|(name, value)| (name, value.as_str()))
        })
}

fn push_attr(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    escape_into(out, value);
    out.push('"');
}

/// Escapes for both text and double- or single-quoted attribute values.
fn escape_into(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

// ---------------------------------------------------------------------------------------------
// Reading: page walk

/// What a page says outside its anchors.
#[derive(Default)]
struct Head {
    name: Option<String>,
    meta: Meta,
    base: Option<String>,
    status: Option<ProjectStatus>,
}

/// The attributes of one `<a>` that mean something on a simple page, raw (not yet decoded).
#[derive(Default)]
struct Anchor<'a> {
    href: Option<&'a str>,
    requires_python: Option<&'a str>,
    yanked: Option<&'a str>,
    core_metadata: Option<&'a str>,
    dist_info_metadata: Option<&'a str>,
    gpg_sig: Option<&'a str>,
    provenance: Option<&'a str>,
    upload_time: Option<&'a str>,
}

impl<'a> Anchor<'a> {
    fn from_attrs(attrs: &[(&'a str, &'a str)]) -> Self {
        let mut anchor = Anchor::default();
        for &(name, value) in attrs {
            let slot = if name.eq_ignore_ascii_case("href") {
                &mut anchor.href
            } else if let Some(data) = name
                .get(..5)
                .filter(|prefix| prefix.eq_ignore_ascii_case("data-"))
                .and_then(|_| name.get(5..))
            {
                if data.eq_ignore_ascii_case("core-metadata") {
                    &mut anchor.core_metadata
                } else if data.eq_ignore_ascii_case("dist-info-metadata") {
                    &mut anchor.dist_info_metadata
                } else if data.eq_ignore_ascii_case("requires-python") {
                    &mut anchor.requires_python
                } else if data.eq_ignore_ascii_case("yanked") {
                    &mut anchor.yanked
                } else if data.eq_ignore_ascii_case("gpg-sig") {
                    &mut anchor.gpg_sig
                } else if data.eq_ignore_ascii_case("provenance") {
                    &mut anchor.provenance
                } else if data.eq_ignore_ascii_case("upload-time") {
                    &mut anchor.upload_time
                } else {
                    continue;
                }
            } else {
                continue;
            };
            // HTML keeps the first of duplicated attributes.
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        anchor
    }

    fn to_file(&self, text: &str) -> Option<IndexFile> {
        let Some(href) = self.href else {
            tracing::debug!(text, "skipping anchor without href");
            return None;
        };
        let (url, fragment) = decode_link(href.trim_matches(is_html_space));
        let filename = filename_from(text, &url);
        if filename.is_empty() {
            tracing::debug!(href, "skipping anchor without a file name");
            return None;
        }
        let mut hashes = Hashes::new();
        if let Some(fragment) = fragment {
            parse_hash_fragment(&fragment, &mut hashes);
        }
        let requires_python = self
            .requires_python
            .map(decode_requires_python)
            .filter(|s| !s.is_empty());
        let yanked = match self.yanked {
            None => Yanked::No,
            Some(reason) => Yanked::Yes {
                reason: Some(decode(reason))
                    .filter(|r| !r.is_empty())
                    .map(Cow::into_owned),
            },
        };
        let core_metadata = self
            .core_metadata
            .or(self.dist_info_metadata)
            .map_or(CoreMetadata::Absent, |raw| {
                parse_metadata_attr(&decode(raw))
            });
        let gpg_sig = self
            .gpg_sig
            .and_then(|v| match decode(v).trim_matches(is_html_space) {
                v if v.eq_ignore_ascii_case("true") => Some(true),
                v if v.eq_ignore_ascii_case("false") => Some(false),
                _ => None,
            });
        let non_empty = |v: Option<&str>| {
            v.map(|v| decode(v.trim_matches(is_html_space)))
                .filter(|v| !v.is_empty())
                .map(Cow::into_owned)
        };
        Some(IndexFile {
            filename,
            url,
            hashes,
            requires_python,
            yanked,
            core_metadata,
            gpg_sig,
            size: None,
            upload_time: non_empty(self.upload_time),
            provenance: non_empty(self.provenance),
        })
    }

    fn to_project(&self, text: &str) -> Option<ProjectLink> {
        let href = decode(self.href?.trim_matches(is_html_space)).into_owned();
        let name = if text.is_empty() {
            let path = href.split(['?', '#']).next().unwrap_or("");
            percent_decode(path.trim_end_matches('/').rsplit('/').next().unwrap_or(""))
        } else {
            text.to_owned()
        };
        (!name.is_empty()).then_some(ProjectLink { name, href })
    }
}

/// Walks the page once, calling `on_anchor` with each anchor's attributes and its trimmed,
/// decoded text, and returns what the page says outside its anchors.
fn walk<'a>(
    content: &'a str,
    on_anchor: impl FnMut(&Anchor<'a>, &str) -> Result<(), IndexParseError>,
) -> Result<Head, IndexParseError> {
    let mut walk = Walk::default();
    walk.advance(content, true, usize::MAX, on_anchor)?;
    Ok(walk.into_head())
}

/// How many bytes past a token the input must hold before a walk over a page still arriving
/// takes the token: the scanner decides a token by at most the bytes of `</textarea` and one
/// more after it, so a token this far from the end reads the same whatever arrives next.
const SETTLED_MARGIN: usize = 16;

/// Room for the files of a page this long. Real pages spend 150 to 450 bytes per link:
/// reserving for one per 256 bytes spares the growing vector most of its copies of a page of
/// thousands of files.
fn files_expected(length: usize) -> usize {
    (length / 256).min(8192)
}

/// A walk over a page, resumable: a page still arriving is walked as far as its complete tokens
/// go, and the walk goes on from there when more has arrived. Nothing it holds borrows the
/// text, which grows (and moves) between steps; an anchor open at a pause is read again from
/// where its tag starts.
#[derive(Default)]
struct Walk {
    head: Head,
    status_reason: Option<String>,
    /// Where the next token starts, and the raw-text element (`<script>`...) it is inside.
    pos: usize,
    raw_text_of: Option<&'static str>,
    /// Where the open anchor's `<a` tag starts, with the scanner's raw-text state there.
    open_at: Option<(usize, Option<&'static str>)>,
    heading_open: bool,
    /// The open anchor's or heading's text so far, decoded.
    text: String,
    /// Whether a tag that says something of the page rather than of a file (`<base>`, `<meta>`,
    /// a `<title>` or `<h1>` that could name the project) was read: a page's tail read on its
    /// own cannot know what it would have changed (`tail.rs`).
    saw_head_tag: bool,
}

impl Walk {
    /// Takes `content`'s tokens from where the walk stopped, up to the first one that starts at
    /// `until` or later; when `at_end` is false, `content` may be a prefix of the page and the
    /// walk stops before the first token that more text could change. `content` must extend
    /// the text of earlier steps.
    fn advance<'a>(
        &mut self,
        content: &'a str,
        at_end: bool,
        until: usize,
        mut on_anchor: impl FnMut(&Anchor<'a>, &str) -> Result<(), IndexParseError>,
    ) -> Result<(), IndexParseError> {
        let mut scanner = Scanner::new(content);
        let mut open: Option<Anchor<'a>> = None;
        if let Some((at, raw_text_of)) = self.open_at {
            scanner.pos = at;
            scanner.raw_text_of = raw_text_of;
            if let Some(Token::Start(_)) = scanner.next_token() {
                open = Some(Anchor::from_attrs(&scanner.attrs));
            }
        }
        scanner.pos = self.pos;
        scanner.raw_text_of = self.raw_text_of;
        let head = &mut self.head;
        let text = &mut self.text;
        let mut finish = |open: &mut Option<Anchor<'a>>, text: &mut String| {
            let result = match open.take() {
                Some(anchor) => on_anchor(&anchor, text.trim()),
                None => Ok(()),
            };
            text.clear();
            result
        };

        loop {
            let (token_start, raw_text_of) = (scanner.pos, scanner.raw_text_of);
            if token_start >= until {
                break;
            }
            let token = scanner.next_token();
            if !at_end && (token.is_none() || scanner.pos + SETTLED_MARGIN > content.len()) {
                scanner.pos = token_start;
                scanner.raw_text_of = raw_text_of;
                break;
            }
            let Some(token) = token else { break };
            match token {
                Token::Text(raw) => {
                    if open.is_some() || self.heading_open {
                        decode_into(text, raw);
                    }
                }
                Token::Start(tag) => {
                    if tag.eq_ignore_ascii_case("a") {
                        // An `<a>` inside an open one closes it, as in HTML.
                        finish(&mut open, text)?;
                        self.heading_open = false;
                        open = Some(Anchor::from_attrs(&scanner.attrs));
                        self.open_at = Some((token_start, raw_text_of));
                    } else if tag.eq_ignore_ascii_case("base") {
                        self.saw_head_tag = true;
                        if head.base.is_none() {
                            head.base = attr(&scanner.attrs, "href")
                                .map(|href| decode(href.trim_matches(is_html_space)).into_owned());
                        }
                    } else if tag.eq_ignore_ascii_case("meta") {
                        self.saw_head_tag = true;
                        read_meta(&scanner.attrs, head, &mut self.status_reason)?;
                    } else if (tag.eq_ignore_ascii_case("title") || tag.eq_ignore_ascii_case("h1"))
                        && head.name.is_none()
                        && open.is_none()
                    {
                        self.saw_head_tag = true;
                        self.heading_open = true;
                        text.clear();
                    }
                }
                Token::End(tag) => {
                    if tag.eq_ignore_ascii_case("a")
                        || tag.eq_ignore_ascii_case("body")
                        || tag.eq_ignore_ascii_case("html")
                    {
                        finish(&mut open, text)?;
                    } else if self.heading_open
                        && (tag.eq_ignore_ascii_case("title") || tag.eq_ignore_ascii_case("h1"))
                    {
                        self.heading_open = false;
                        // PyPI and download.pytorch.org title their pages `Links for <name>`;
                        // any other heading does not name the project.
                        if let Some(name) = text.trim().strip_prefix("Links for") {
                            head.name = Some(name.trim().to_owned());
                        }
                        text.clear();
                    }
                }
            }
            if open.is_none() {
                self.open_at = None;
            }
        }
        if at_end {
            finish(&mut open, text)?;
            self.open_at = None;
        }
        self.pos = scanner.pos;
        self.raw_text_of = scanner.raw_text_of;
        Ok(())
    }

    fn into_head(self) -> Head {
        let mut head = self.head;
        if let Some(status) = &mut head.status {
            status.reason = self.status_reason;
        }
        head
    }
}

fn read_meta(
    attrs: &[(&str, &str)],
    head: &mut Head,
    status_reason: &mut Option<String>,
) -> Result<(), IndexParseError> {
    let (Some(name), Some(content)) = (attr(attrs, "name"), attr(attrs, "content")) else {
        return Ok(());
    };
    let name = name.trim_matches(is_html_space);
    let content = decode(content.trim_matches(is_html_space)).into_owned();
    if name.eq_ignore_ascii_case("pypi:repository-version") {
        check_api_version(&content)?;
        head.meta.api_version = content;
    } else if name.eq_ignore_ascii_case("pypi:project-status") {
        head.status = Some(ProjectStatus {
            status: content,
            reason: None,
        });
    } else if name.eq_ignore_ascii_case("pypi:project-status-reason") && !content.is_empty() {
        *status_reason = Some(content);
    } else if name.eq_ignore_ascii_case("pypi:tracks") && !content.is_empty() {
        head.meta.tracks.push(content);
    } else if name.eq_ignore_ascii_case("pypi:alternate-locations") && !content.is_empty() {
        head.meta.alternate_locations.push(content);
    }
    Ok(())
}

fn attr<'a>(attrs: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, v)| v)
}

/// The anchor text, or when it is empty the link's last path segment, percent-decoded
/// (`torch-2.10.0%2Bcu130-...whl` names `torch-2.10.0+cu130-...whl`).
fn filename_from(text: &str, url: &str) -> String {
    if !text.is_empty() {
        return text.to_owned();
    }
    let path = url.split('?').next().unwrap_or("");
    percent_decode(path.rsplit('/').next().unwrap_or(""))
}

/// `#sha256=<hex>`, or any other `<hash name>=<hex>`; parts joined by `&` as pip accepts.
/// Parts that are not hashes (`egg=`, `subdirectory=`) say nothing about a file on an index
/// and are dropped.
fn parse_hash_fragment(fragment: &str, hashes: &mut Hashes) {
    // Parts found by byte searches: `split` and `split_once` with a char set up a searcher for
    // each, on every link of a page (whose fragment is nearly always one `sha256=<hex>`).
    let mut rest = fragment;
    loop {
        let (part, next) = match memchr::memchr(b'&', rest.as_bytes()) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        read_hash_part(part, hashes);
        match next {
            Some(next) => rest = next,
            None => return,
        }
    }
}

/// One `<hash name>=<hex>` part of a link's fragment, into `hashes` when it is one.
fn read_hash_part(part: &str, hashes: &mut Hashes) {
    let Some(equals) = memchr::memchr(b'=', part.as_bytes()) else {
        return;
    };
    let (name, value) = (&part[..equals], &part[equals + 1..]);
    let is_hash_name = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !matches!(name, "egg" | "subdirectory");
    let is_hex = !value.is_empty() && all_hex_digits(value.as_bytes());
    if is_hash_name && is_hex {
        // Hash names are case-insensitive (Python's hashlib); pip matches only lowercase.
        let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        hashes.get_or_insert_with(&name, || value.to_owned());
    } else {
        tracing::debug!(part, "ignoring URL fragment part that is not a hash");
    }
}

/// Whether every byte is a hex digit. Every link of a page carries a 64-digit digest: a fold
/// without early exit lets the compiler check 16 or 32 bytes per step, where `all` with its
/// branch per byte was a third of the parse.
fn all_hex_digits(bytes: &[u8]) -> bool {
    bytes.iter().fold(true, |ok, &b| {
        ok & ((b.wrapping_sub(b'0') < 10) | ((b | 0x20).wrapping_sub(b'a') < 6))
    })
}

/// `true`, `sha256=<hex>`, and what pip does with anything else: `false` (which some servers
/// write) means absent here, since serving it on would have pip fetch a `.metadata` file that
/// does not exist; any other value means present without a hash, as pip reads it.
fn parse_metadata_attr(value: &str) -> CoreMetadata {
    let value = value.trim_matches(is_html_space);
    if value.eq_ignore_ascii_case("false") {
        return CoreMetadata::Absent;
    }
    let split = memchr::memchr(b'=', value.as_bytes()).map(|at| (&value[..at], &value[at + 1..]));
    match split {
        Some((name, hash)) if !name.is_empty() && !hash.is_empty() => {
            let mut hashes = Hashes::new();
            hashes.insert(name, hash.to_owned());
            CoreMetadata::Hashes(hashes)
        }
        _ => {
            if !value.is_empty() && !value.eq_ignore_ascii_case("true") {
                tracing::debug!(value, "core-metadata value is neither true nor a hash");
            }
            CoreMetadata::Present
        }
    }
}

/// Some indexes escape `data-requires-python` twice (`&amp;gt;=3.8`); pip unescapes it twice
/// too. A specifier never contains `&`, so a second pass cannot damage a correct value.
fn decode_requires_python(raw: &str) -> String {
    let once = decode(raw.trim_matches(is_html_space));
    if memchr::memchr(b'&', once.as_bytes()).is_some() {
        decode(&once).into_owned()
    } else {
        once.into_owned()
    }
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Reading: character references

/// `raw` with its character references decoded; borrowed when it has none, as nearly every
/// attribute value.
fn decode(raw: &str) -> Cow<'_, str> {
    if memchr::memchr(b'&', raw.as_bytes()).is_none() {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    decode_into(&mut out, raw);
    Cow::Owned(out)
}

/// A link decoded up to its first `#` (a literal one, or one written as a reference such as
/// `&#35;`), and the decoded fragment after it: what decoding the whole link and splitting it
/// at its first `#` gives, without copying the fragment (the 64-digit digest of every link)
/// only to cut it off again. The link gets an allocation of its own size; the fragment is
/// borrowed unless it holds a reference.
fn decode_link(raw: &str) -> (String, Option<Cow<'_, str>>) {
    // Nearly every link has no reference before its fragment: copied at once, at its size.
    match memchr::memchr2(b'&', b'#', raw.as_bytes()) {
        None => return (raw.to_owned(), None),
        Some(at) if raw.as_bytes()[at] == b'#' => {
            return (raw[..at].to_owned(), Some(decode(&raw[at + 1..])));
        }
        Some(_) => {}
    }
    let mut url = String::with_capacity(raw.len());
    let mut rest = raw;
    loop {
        let Some(at) = memchr::memchr2(b'&', b'#', rest.as_bytes()) else {
            url.push_str(rest);
            return (url, None);
        };
        url.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if rest.as_bytes()[at] == b'#' {
            return (url, Some(decode(after)));
        }
        match decode_reference(after) {
            Some(('#', consumed)) => {
                return (url, Some(decode(after.get(consumed..).unwrap_or(""))));
            }
            Some((c, consumed)) => {
                url.push(c);
                rest = after.get(consumed..).unwrap_or("");
            }
            None => {
                url.push('&');
                rest = after;
            }
        }
    }
}

/// Appends `raw` with its character references (`&gt;`, `&#43;`, `&#x2B;`) decoded. Unknown
/// or malformed references stay as written, as browsers leave them.
fn decode_into(out: &mut String, raw: &str) {
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'&', rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some((c, consumed)) = decode_reference(after) {
            out.push(c);
            rest = after.get(consumed..).unwrap_or("");
        } else {
            out.push('&');
            rest = after;
        }
    }
    out.push_str(rest);
}

/// Decodes the reference at the start of `s` (just after `&`): the character and how many
/// bytes it took, all ASCII.
fn decode_reference(s: &str) -> Option<(char, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (radix, start) = match bytes.get(1) {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits = bytes[start..]
            .iter()
            .take_while(|b| char::from(**b).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        // Saturate instead of overflowing: `&#99999999999;` is just out of range.
        let value = bytes[start..start + digits].iter().fold(0u32, |acc, b| {
            let digit = char::from(*b).to_digit(radix).unwrap_or(0);
            acc.saturating_mul(radix)
                .saturating_add(digit)
                .min(0x11_0000)
        });
        let mut consumed = start + digits;
        if bytes.get(consumed) == Some(&b';') {
            consumed += 1;
        }
        let c = match value {
            0 => '\u{FFFD}',
            v => char::from_u32(v).unwrap_or('\u{FFFD}'),
        };
        return Some((c, consumed));
    }
    let len = bytes
        .iter()
        .take(32)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let name = s.get(..len)?;
    let c = named_reference(name)?;
    if bytes.get(len) == Some(&b';') {
        return Some((c, len + 1));
    }
    // Without `;`, HTML decodes only its legacy names, and inside attributes not before `=`
    // (so `?a=1&lt=2` in a link stays as written).
    let legacy = matches!(name, "amp" | "lt" | "gt" | "quot");
    (legacy && bytes.get(len) != Some(&b'=')).then_some((c, len))
}

/// The named references that turn up in index pages; HTML has about 2,000, almost all of them
/// letters no project or file name may contain.
fn named_reference(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{A0}',
        "plus" => '+',
        "equals" => '=',
        "num" => '#',
        "percnt" => '%',
        "sol" => '/',
        "bsol" => '\\',
        "colon" => ':',
        "semi" => ';',
        "comma" => ',',
        "period" => '.',
        "excl" => '!',
        "quest" => '?',
        "commat" => '@',
        "lowbar" => '_',
        "dash" | "hyphen" => '\u{2010}',
        "lpar" => '(',
        "rpar" => ')',
        "lsqb" => '[',
        "rsqb" => ']',
        "lcub" => '{',
        "rcub" => '}',
        "ast" => '*',
        "dollar" => '$',
        "verbar" => '|',
        "grave" => '`',
        "Hat" => '^',
        "tilde" => '\u{2DC}',
        "copy" => '\u{A9}',
        "reg" => '\u{AE}',
        "hellip" => '\u{2026}',
        "ndash" => '\u{2013}',
        "mdash" => '\u{2014}',
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Reading: tokens

enum Token<'a> {
    /// Raw text between tags, not yet decoded.
    Text(&'a str),
    /// A start tag's name as written; its attributes are in [`Scanner::attrs`].
    Start(&'a str),
    /// An end tag's name as written.
    End(&'a str),
}

/// Splits HTML into tokens without allocating: every token borrows from the input, and one
/// attribute vector is reused for all tags. Every slice boundary is at an ASCII byte or the
/// end of the input, so slices always fall on `char` boundaries; `slice` makes that a
/// guarantee rather than an argument.
struct Scanner<'a> {
    src: &'a str,
    pos: usize,
    /// Attributes of the last start tag, `(name, raw value)`; `""` for a bare attribute.
    attrs: Vec<(&'a str, &'a str)>,
    /// Set after `<script>`, `<style>`, `<title>` or `<textarea>`: their content is text up to
    /// the matching end tag, whatever it contains.
    raw_text_of: Option<&'static str>,
}

const RAW_TEXT_TAGS: [&str; 4] = ["script", "style", "title", "textarea"];

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Where `needle` next is, from `from`. Vectorised (`memchr`): quoted values (links, digests)
/// are most of a page's bytes, and the byte loop this replaced was a third of the parse.
fn find_byte(bytes: &[u8], from: usize, needle: u8) -> Option<usize> {
    memchr::memchr(needle, bytes.get(from..)?).map(|at| at + from)
}

impl<'a> Scanner<'a> {
    fn new(src: &'a str) -> Self {
        Scanner {
            src,
            pos: 0,
            attrs: Vec::with_capacity(8),
            raw_text_of: None,
        }
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.src.get(from..to).unwrap_or("")
    }

    fn next_token(&mut self) -> Option<Token<'a>> {
        let bytes = self.src.as_bytes();
        let len = bytes.len();
        loop {
            if let Some(tag) = self.raw_text_of.take() {
                let start = self.pos;
                let end = self.find_end_tag(tag).unwrap_or(len);
                self.pos = end;
                // Script and style text is code, never part of a name.
                if end > start && matches!(tag, "title" | "textarea") {
                    return Some(Token::Text(self.slice(start, end)));
                }
            }
            let start = self.pos;
            if start >= len {
                return None;
            }
            if bytes[start] != b'<' {
                let end = find_byte(bytes, start, b'<').unwrap_or(len);
                self.pos = end;
                return Some(Token::Text(self.slice(start, end)));
            }
            match bytes.get(start + 1) {
                Some(b'!') => {
                    self.pos = if bytes[start..].starts_with(b"<!--") {
                        // `<!-->` and `<!--->` are complete (empty) comments in HTML.
                        find_subslice(bytes, start + 2, b"-->").map_or(len, |at| at + 3)
                    } else {
                        find_byte(bytes, start, b'>').map_or(len, |at| at + 1)
                    };
                }
                Some(b'?') => self.pos = find_byte(bytes, start, b'>').map_or(len, |at| at + 1),
                Some(b'/') => match bytes.get(start + 2) {
                    Some(b) if b.is_ascii_alphabetic() => {
                        let name_end = self.tag_name_end(start + 2);
                        let name = self.slice(start + 2, name_end);
                        // End tags may carry (ignored) attributes; read them only to find `>`.
                        let end = self.read_attrs(name_end);
                        self.attrs.clear();
                        self.pos = end?;
                        return Some(Token::End(name));
                    }
                    Some(b'>') => self.pos = start + 3,
                    Some(_) => self.pos = find_byte(bytes, start, b'>').map_or(len, |at| at + 1),
                    None => {
                        self.pos = len;
                        return Some(Token::Text(self.slice(start, len)));
                    }
                },
                Some(b) if b.is_ascii_alphabetic() => {
                    let name_end = self.tag_name_end(start + 1);
                    let name = self.slice(start + 1, name_end);
                    // A tag cut off by the end of the input is dropped, as in HTML.
                    self.pos = self.read_attrs(name_end)?;
                    self.raw_text_of = RAW_TEXT_TAGS
                        .iter()
                        .find(|t| t.eq_ignore_ascii_case(name))
                        .copied();
                    return Some(Token::Start(name));
                }
                _ => {
                    let end = find_byte(bytes, start + 1, b'<').unwrap_or(len);
                    self.pos = end;
                    return Some(Token::Text(self.slice(start, end)));
                }
            }
        }
    }

    fn tag_name_end(&self, from: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut i = from;
        while i < bytes.len() && !is_space(bytes[i]) && !matches!(bytes[i], b'/' | b'>') {
            i += 1;
        }
        i
    }

    /// Reads attributes from `from` to the tag's `>`, into `self.attrs`, and returns the
    /// position after `>`; `None` (with `pos` at the end) when the input ends inside the tag.
    fn read_attrs(&mut self, from: usize) -> Option<usize> {
        self.attrs.clear();
        let bytes = self.src.as_bytes();
        let len = bytes.len();
        let mut i = from;
        let result = loop {
            while i < len && (is_space(bytes[i]) || bytes[i] == b'/') {
                i += 1;
            }
            match bytes.get(i) {
                None => break None,
                Some(b'>') => break Some(i + 1),
                Some(_) => {}
            }
            let name_start = i;
            // The first character may be `=`: HTML makes it part of the name.
            i += 1;
            while i < len && !is_space(bytes[i]) && !matches!(bytes[i], b'/' | b'>' | b'=') {
                i += 1;
            }
            let name = self.slice(name_start, i);
            while i < len && is_space(bytes[i]) {
                i += 1;
            }
            let mut value = "";
            if bytes.get(i) == Some(&b'=') {
                i += 1;
                while i < len && is_space(bytes[i]) {
                    i += 1;
                }
                match bytes.get(i) {
                    None => break None,
                    Some(&quote @ (b'"' | b'\'')) => {
                        let Some(close) = find_byte(bytes, i + 1, quote) else {
                            break None;
                        };
                        value = self.slice(i + 1, close);
                        i = close + 1;
                    }
                    Some(b'>') => {}
                    Some(_) => {
                        let value_start = i;
                        while i < len && !is_space(bytes[i]) && bytes[i] != b'>' {
                            i += 1;
                        }
                        value = self.slice(value_start, i);
                    }
                }
            }
            self.attrs.push((name, value));
        };
        if result.is_none() {
            self.attrs.clear();
            self.pos = len;
        }
        result
    }

    /// Where `</tag` (any case, then a space, `/`, `>` or the end) starts, from `self.pos`.
    fn find_end_tag(&self, tag: &str) -> Option<usize> {
        let bytes = self.src.as_bytes();
        let mut from = self.pos;
        loop {
            let at = find_subslice(bytes, from, b"</")?;
            let name_end = at + 2 + tag.len();
            let matches_name = bytes
                .get(at + 2..name_end)
                .is_some_and(|name| name.eq_ignore_ascii_case(tag.as_bytes()));
            let ends_name = bytes
                .get(name_end)
                .is_none_or(|&b| is_space(b) || matches!(b, b'/' | b'>'));
            if matches_name && ends_name {
                return Some(at);
            }
            from = at + 2;
        }
    }
}

fn find_subslice(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes.get(from..)?, needle).map(|at| at + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/pytorch-index/"
    );

    /// The captured page, or `None` (after saying so) when the fixtures are not checked out.
    fn fixture(name: &str) -> Option<String> {
        let path = format!("{FIXTURES}{name}");
        match std::fs::read_to_string(&path) {
            Ok(content) => Some(content),
            Err(err) => {
                println!("NOT RUN: fixture `{path}` is not readable ({err})");
                None
            }
        }
    }

    fn one_file(html: &str) -> IndexFile {
        let page = parse_project_html(html).unwrap();
        assert_eq!(page.files.len(), 1, "{page:#?}");
        page.files.into_iter().next().unwrap()
    }

    #[test]
    fn reads_every_link_of_the_cu130_torch_page() {
        let Some(html) = fixture("whl_cu130_torch.html") else {
            return;
        };
        let page = parse_project_html(&html).unwrap();
        assert_eq!(html.matches("<a ").count(), 182);
        assert_eq!(page.files.len(), 182);
        assert_eq!(page.name, "torch");
        assert_eq!(page.meta.api_version, "1.0");
        assert_eq!(page.base, None);

        let first = &page.files[0];
        assert_eq!(
            first.filename,
            "torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl"
        );
        assert_eq!(
            first.url,
            "/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-manylinux_2_28_aarch64.whl"
        );
        assert_eq!(
            first.sha256(),
            Some("adfb2bca94f12a5baca6ccf9aa40d6c5b1259748ebb38938be670b07a24d4e15")
        );
        assert_eq!(
            first.core_metadata,
            CoreMetadata::Hashes(Hashes::from([(
                "sha256".to_owned(),
                "b0d90eccbeb7479463e1093d577979226c22ccf5de748692a1e4a1ca7e43c269".to_owned()
            )]))
        );
        assert_eq!(first.requires_python, None);
        assert_eq!(first.yanked, Yanked::No);

        for file in &page.files {
            assert!(file.url.starts_with("/whl/"), "{}", file.url);
            assert!(!file.url.contains('#'), "{}", file.url);
            assert!(file.hashes.len() <= 1);
            assert!(
                file.sha256().is_none_or(|h| h.len() == 64),
                "{}",
                file.filename
            );
            // The link's last segment, percent-decoded, is the file name.
            let last = file.url.rsplit('/').next().unwrap();
            assert_eq!(last.replace("%2B", "+"), file.filename);
        }
        let local = page.files.iter().filter(|f| f.filename.contains('+'));
        assert!(local.clone().all(|f| f.url.contains("%2B")));
        assert!(local.count() > 0);
        // The torch 2.11.0 links of this capture have no `#sha256=` fragment.
        let with_hash = page.files.iter().filter(|f| f.sha256().is_some());
        assert_eq!(with_hash.count(), 161);
        let with_metadata = page.files.iter().filter(|f| f.core_metadata.is_present());
        assert_eq!(with_metadata.count(), 84);
        assert_eq!(
            page.files.last().unwrap().filename,
            "torch-2.0.1-cp39-cp39-manylinux2014_aarch64.whl"
        );
    }

    #[test]
    fn reads_every_link_of_the_root_and_backend_lists() {
        for (name, count) in [("whl.html", 191), ("whl_cu130.html", 114)] {
            let Some(html) = fixture(name) else {
                return;
            };
            assert_eq!(html.matches("<a ").count(), count);
            let list = parse_project_list_html(&html).unwrap();
            assert_eq!(list.projects.len(), count, "{name}");
            for project in &list.projects {
                assert_eq!(format!("{}/", project.name), project.href);
            }
            assert_eq!(list.projects[0].name, "certifi");
            // Read as a project page, the same anchors are files named like the projects.
            let page = parse_project_html(&html).unwrap();
            assert_eq!(page.files.len(), count, "{name}");
            assert_eq!(page.files[0].url, "certifi/");
            assert_eq!(page.files[0].filename, "certifi");
        }
        let Some(html) = fixture("whl_cu130.html") else {
            return;
        };
        let list = parse_project_list_html(&html).unwrap();
        assert!(list.projects.iter().any(|p| p.name == "torch"));
        assert_eq!(
            parse_project_list_html(&render_project_list_html(&list)).unwrap(),
            list
        );
    }

    #[test]
    fn fixture_pages_round_trip_through_html() {
        for name in ["whl_cu130_torch.html", "whl.html", "whl_cu130.html"] {
            let Some(html) = fixture(name) else {
                return;
            };
            let page = parse_project_html(&html).unwrap();
            let again = parse_project_html(&render_project_html(&page)).unwrap();
            assert_eq!(again, page, "{name}");
        }
    }

    fn full_file() -> IndexFile {
        IndexFile {
            filename: "Odd & <name>-1.0+local-py3-none-any.whl".to_owned(),
            url: "https://files.example/p/a%2Bb?x=1&y=\"2\"".to_owned(),
            hashes: Hashes::from([("sha256".to_owned(), "ab".repeat(32))]),
            requires_python: Some("<4,>=3.8,!=3.9.*".to_owned()),
            yanked: Yanked::Yes {
                reason: Some("broken \"wheel\" <see #12> & 'more'".to_owned()),
            },
            core_metadata: CoreMetadata::Hashes(Hashes::from([(
                "sha256".to_owned(),
                "cd".repeat(32),
            )])),
            gpg_sig: Some(false),
            size: None,
            upload_time: Some("2026-04-05T10:11:12Z".to_owned()),
            provenance: Some(
                "https://pypi.org/integrity/a/1.0/a-1.0-py3-none-any.whl/provenance".to_owned(),
            ),
        }
    }

    #[test]
    fn every_attribute_round_trips_through_html() {
        let page = ProjectPage {
            name: "Odd & Name".to_owned(),
            files: vec![
                full_file(),
                IndexFile {
                    yanked: Yanked::Yes { reason: None },
                    core_metadata: CoreMetadata::Present,
                    gpg_sig: Some(true),
                    ..IndexFile::new("b-2.0.tar.gz", "../../b/b-2.0.tar.gz")
                },
                IndexFile::new("c-3.0.zip", "c-3.0.zip"),
            ],
            versions: Vec::new(),
            meta: Meta {
                api_version: "1.4".to_owned(),
                last_serial: None,
                tracks: vec!["https://pypi.example/simple/c/".to_owned()],
                alternate_locations: vec![
                    "https://a.example/simple/c/".to_owned(),
                    "https://b.example/simple/c/?x=1&y=\"2\"".to_owned(),
                ],
                extra: Vec::new(),
            },
            base: Some("https://mirror.example/a b/".to_owned()),
            status: Some(ProjectStatus {
                status: "archived".to_owned(),
                reason: Some("moved to <new> & \"better\"".to_owned()),
            }),
            dropped: Vec::new(),
        };
        let html = render_project_html(&page);
        assert_eq!(parse_project_html(&html).unwrap(), page, "{html}");
    }

    #[test]
    fn renders_both_metadata_attributes_and_never_false() {
        let mut file = IndexFile::new("a-1.0-py3-none-any.whl", "a-1.0-py3-none-any.whl");
        let page_with = |file: &IndexFile| ProjectPage {
            files: vec![file.clone()],
            ..ProjectPage::default()
        };
        let html = render_project_html(&page_with(&file));
        assert!(!html.contains("metadata"), "{html}");
        file.core_metadata = CoreMetadata::Present;
        let html = render_project_html(&page_with(&file));
        assert!(html.contains(r#"data-dist-info-metadata="true" data-core-metadata="true""#));
        file.core_metadata = CoreMetadata::Hashes(Hashes::from([
            ("md5".to_owned(), "00".to_owned()),
            ("sha256".to_owned(), "ff".to_owned()),
        ]));
        let html = render_project_html(&page_with(&file));
        assert!(
            html.contains(r#"data-dist-info-metadata="sha256=ff" data-core-metadata="sha256=ff""#)
        );
        assert!(!html.contains("\"false\""));
    }

    #[test]
    fn renders_escaped_requires_python_like_pypi() {
        let page = ProjectPage {
            name: "filelock".to_owned(),
            files: vec![IndexFile {
                requires_python: Some(">=3.9".to_owned()),
                hashes: Hashes::from([("sha256".to_owned(), "00ff".to_owned())]),
                ..IndexFile::new(
                    "filelock-3.20.0-py3-none-any.whl",
                    "https://files.pythonhosted.org/packages/f/filelock-3.20.0-py3-none-any.whl",
                )
            }],
            ..ProjectPage::default()
        };
        let html = render_project_html(&page);
        assert!(html.contains(
            r#"<a href="https://files.pythonhosted.org/packages/f/filelock-3.20.0-py3-none-any.whl#sha256=00ff" data-requires-python="&gt;=3.9">filelock-3.20.0-py3-none-any.whl</a>"#
        ), "{html}");
        assert!(html.contains(r#"<meta name="pypi:repository-version" content="1.0">"#));
        assert!(html.contains("<h1>Links for filelock</h1>"));
    }

    #[test]
    fn pypi_style_absolute_links_with_escaped_requires_python() {
        let file = one_file(
            r#"<!DOCTYPE html>
<html>
  <head>
    <meta name="pypi:repository-version" content="1.4">
    <title>Links for filelock</title>
  </head>
  <body>
    <h1>Links for filelock</h1>
    <a href="https://files.pythonhosted.org/packages/4a/bb/filelock-3.20.0-py3-none-any.whl#sha256=339b4732ffda5cd79b13f4e2711a7f1f9d5ff2c2cbe1b5c3ba9a2f8a4e9f46b8" data-requires-python="&gt;=3.9" data-dist-info-metadata="sha256=7f3c" data-core-metadata="sha256=7f3c" data-provenance="https://pypi.org/integrity/filelock/3.20.0/filelock-3.20.0-py3-none-any.whl/provenance">filelock-3.20.0-py3-none-any.whl</a><br />
  </body>
</html>
<!--SERIAL 31234567-->"#,
        );
        assert_eq!(
            file.url,
            "https://files.pythonhosted.org/packages/4a/bb/filelock-3.20.0-py3-none-any.whl"
        );
        assert_eq!(file.requires_python.as_deref(), Some(">=3.9"));
        assert_eq!(file.sha256().map(str::len), Some(64));
        assert_eq!(
            file.core_metadata,
            CoreMetadata::Hashes(Hashes::from([("sha256".to_owned(), "7f3c".to_owned())]))
        );
        assert!(file.provenance.as_deref().unwrap().ends_with("/provenance"));
        let page = parse_project_html(
            r#"<meta name="pypi:repository-version" content="1.4"><title>Links for filelock</title>"#,
        )
        .unwrap();
        assert_eq!(page.meta.api_version, "1.4");
        assert_eq!(page.name, "filelock");
    }

    #[test]
    fn double_escaped_requires_python() {
        let file =
            one_file(r#"<a href="a-1.tar.gz" data-requires-python="&amp;gt;=3.8">a-1.tar.gz</a>"#);
        assert_eq!(file.requires_python.as_deref(), Some(">=3.8"));
        let file = one_file(r#"<a href="a-1.tar.gz" data-requires-python="">a-1.tar.gz</a>"#);
        assert_eq!(file.requires_python, None);
    }

    #[test]
    fn yanked_forms() {
        let file = one_file(r#"<a href="a-1.tar.gz" data-yanked="">a-1.tar.gz</a>"#);
        assert_eq!(file.yanked, Yanked::Yes { reason: None });
        let file = one_file(r"<a href=a-1.tar.gz data-yanked>a-1.tar.gz</a>");
        assert_eq!(file.yanked, Yanked::Yes { reason: None });
        let file = one_file(
            r#"<a href="a-1.tar.gz" data-yanked="Broken on &lt;3.9 &amp; &quot;Windows&quot;">a-1.tar.gz</a>"#,
        );
        assert_eq!(
            file.yanked,
            Yanked::Yes {
                reason: Some("Broken on <3.9 & \"Windows\"".to_owned())
            }
        );
        assert!(file.is_yanked());
    }

    #[test]
    fn metadata_forms() {
        let meta = |attrs: &str| {
            one_file(&format!(r#"<a href="a-1.whl" {attrs}>a-1.whl</a>"#)).core_metadata
        };
        let sha =
            |v: &str| CoreMetadata::Hashes(Hashes::from([("sha256".to_owned(), v.to_owned())]));
        assert_eq!(meta(r#"data-core-metadata="true""#), CoreMetadata::Present);
        assert_eq!(
            meta(r#"data-dist-info-metadata="true""#),
            CoreMetadata::Present
        );
        assert_eq!(meta(r#"data-dist-info-metadata="sha256=aa""#), sha("aa"));
        assert_eq!(
            meta(r#"data-dist-info-metadata="sha256=aa" data-core-metadata="sha256=bb""#),
            sha("bb")
        );
        assert_eq!(meta(r#"data-core-metadata="false""#), CoreMetadata::Absent);
        assert_eq!(meta("data-core-metadata"), CoreMetadata::Present);
        assert_eq!(meta("data-core-metadata=yes"), CoreMetadata::Present);
        assert_eq!(meta(""), CoreMetadata::Absent);
    }

    #[test]
    fn other_attributes() {
        let file = one_file(
            r#"<a href="a-1.whl" data-gpg-sig="true" data-upload-time="2026-04-05T10:11:12Z" data-unknown="x">a-1.whl</a>"#,
        );
        assert_eq!(file.gpg_sig, Some(true));
        assert_eq!(file.upload_time.as_deref(), Some("2026-04-05T10:11:12Z"));
        assert_eq!(
            one_file(r#"<a href="a" data-gpg-sig="false">a</a>"#).gpg_sig,
            Some(false)
        );
        assert_eq!(
            one_file(r#"<a href="a" data-gpg-sig="maybe">a</a>"#).gpg_sig,
            None
        );
    }

    #[test]
    fn base_href_is_kept_and_used() {
        let page = parse_project_html(
            r#"<html><head><BASE HREF="https://files.example/pkgs/"><base href="ignored/"></head>
            <body><a href="a/a-1.0.tar.gz#md5=0123456789abcdef">a-1.0.tar.gz</a></body></html>"#,
        )
        .unwrap();
        assert_eq!(page.base.as_deref(), Some("https://files.example/pkgs/"));
        let file = &page.files[0];
        assert_eq!(
            file.hashes.get("md5").map(String::as_str),
            Some("0123456789abcdef")
        );
        assert_eq!(
            page.file_url(file, "https://index.example/simple/a/"),
            "https://files.example/pkgs/a/a-1.0.tar.gz"
        );
    }

    #[test]
    fn entities_in_text_and_links() {
        let file = one_file(
            "<a href=\"/x/torch-2.9.0&#43;cu128-cp312.whl?a=1&amp;b=2&lt=3#sha512=AbCd&egg=torch\">\n  torch-2.9.0&#x2B;cu128&plus;&nbsp;&bogus;&#0;&#99999999999;.whl\n</a>",
        );
        assert_eq!(file.url, "/x/torch-2.9.0+cu128-cp312.whl?a=1&b=2&lt=3");
        assert_eq!(
            file.hashes,
            Hashes::from([("sha512".to_owned(), "AbCd".to_owned())])
        );
        assert_eq!(
            file.filename,
            "torch-2.9.0+cu128+\u{a0}&bogus;\u{fffd}\u{fffd}.whl"
        );
    }

    /// What `decode_link` replaced: decode the whole link, then split at the first `#`.
    fn decode_then_split(raw: &str) -> (String, Option<String>) {
        let decoded = decode(raw).into_owned();
        match decoded.split_once('#') {
            Some((url, fragment)) => (url.to_owned(), Some(fragment.to_owned())),
            None => (decoded, None),
        }
    }

    #[test]
    fn links_split_at_a_hash_written_as_a_reference_and_decode_their_fragment() {
        for raw in [
            "a-1.whl&#35;sha256=ab",
            "a-1.whl&num;sha256=ab",
            "a-1.whl&#x23sha256=ab",
            "a&amp;b-1.whl#sha256=ab&amp;md5=cd",
            "a-1.whl#sha256=ab#md5=cd",
            "a-1.whl&#43;#",
            "a-1.whl&",
            "&#35;",
            "#",
            "",
        ] {
            let (url, fragment) = decode_link(raw);
            assert_eq!(
                (url, fragment.map(Cow::into_owned)),
                decode_then_split(raw),
                "{raw}"
            );
        }
        let file = one_file(r#"<a href="a-1.whl&#35;sha256=AB&amp;md5=cd">a-1.whl</a>"#);
        assert_eq!(file.url, "a-1.whl");
        assert_eq!(
            file.hashes,
            Hashes::from([
                ("sha256".to_owned(), "AB".to_owned()),
                ("md5".to_owned(), "cd".to_owned())
            ])
        );
    }

    #[test]
    fn the_first_of_duplicated_hash_names_wins_whatever_their_case() {
        let file = one_file(r#"<a href="a-1.whl#sha256=aa&SHA256=bb&Md5=cc">a-1.whl</a>"#);
        assert_eq!(
            file.hashes,
            Hashes::from([
                ("sha256".to_owned(), "aa".to_owned()),
                ("md5".to_owned(), "cc".to_owned())
            ])
        );
    }

    #[test]
    fn uppercase_tags_and_attribute_quoting_forms() {
        let page = parse_project_html(
            "<HTML><BODY><H1>Links for X</H1>\n\
             <A HREF=/x/a-1.whl#SHA256=ab Data-Requires-Python='&gt;=3' data-yanked=why>a-1.whl</A><BR>\n\
             <a\thref = \"b-1.whl\"\n data-core-metadata = true >b-1.whl</a >\n\
             <a href='c-1.whl' href=\"ignored\">c-1.whl</a/>\n\
             </BODY></HTML>",
        )
        .unwrap();
        assert_eq!(page.name, "X");
        let [a, b, c] = &page.files[..] else {
            panic!("{page:#?}")
        };
        assert_eq!(a.url, "/x/a-1.whl");
        assert_eq!(a.sha256(), Some("ab"));
        assert_eq!(a.requires_python.as_deref(), Some(">=3"));
        assert_eq!(
            a.yanked,
            Yanked::Yes {
                reason: Some("why".to_owned())
            }
        );
        assert_eq!(b.url, "b-1.whl");
        assert_eq!(b.core_metadata, CoreMetadata::Present);
        assert_eq!(c.url, "c-1.whl");
    }

    #[test]
    fn empty_text_takes_the_name_from_the_link() {
        let file = one_file(
            r#"<a href="/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-win_amd64.whl?x=%zz#sha256=00"> </a>"#,
        );
        assert_eq!(
            file.filename,
            "torch-2.10.0+cu130-cp310-cp310-win_amd64.whl"
        );
        assert_eq!(
            file.url,
            "/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-win_amd64.whl?x=%zz"
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%C3%A9%FF"), "é\u{fffd}");
    }

    #[test]
    fn comments_scripts_and_links_without_files_are_skipped() {
        let page = parse_project_html(
            r#"<!DOCTYPE html><!-- <a href="in-comment.whl">x</a> --><!---->
            <script>document.write('<a href="in-script.whl">x</a>')</script>
            <style>a::before { content: "</a>" }</style>
            <a name="anchor-without-href">text</a>
            <a href="">  </a>
            <a href="/dir/"></a>
            <a href="real-1.whl">real-1.whl</a>
            <!--TIMESTAMP 1774772182-->"#,
        )
        .unwrap();
        let names: Vec<_> = page.files.iter().map(|f| f.filename.as_str()).collect();
        assert_eq!(names, ["real-1.whl"]);
    }

    #[test]
    fn unclosed_and_nested_anchors_close_at_the_next_anchor() {
        let page = parse_project_html(
            "<a href=a-1.whl>a-1.whl<br><a href=b-1.whl><span>b-1</span>.whl</body> tail",
        )
        .unwrap();
        let names: Vec<_> = page.files.iter().map(|f| f.filename.as_str()).collect();
        assert_eq!(names, ["a-1.whl", "b-1.whl"]);
    }

    #[test]
    fn project_status_and_api_version() {
        let page = parse_project_html(
            r#"<meta name="pypi:repository-version" content="1.4">
            <meta name="pypi:project-status" content="quarantined">
            <meta name="pypi:project-status-reason" content="malware &amp; more">"#,
        )
        .unwrap();
        assert_eq!(page.files, []);
        assert_eq!(
            page.status,
            Some(ProjectStatus {
                status: "quarantined".to_owned(),
                reason: Some("malware & more".to_owned())
            })
        );
        let err = parse_project_html(r#"<meta name="pypi:repository-version" content="2.0">"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "index page declares API version `2.0`; only major version 1 is understood"
        );
        assert!(
            parse_project_list_html(r#"<meta name="pypi:repository-version" content="3.1">"#)
                .is_err()
        );
        // Not major.minor: tolerated like pip does, and not repeated when rendering.
        let page =
            parse_project_html(r#"<meta name="pypi:repository-version" content="new">"#).unwrap();
        assert!(render_project_html(&page).contains(r#"content="1.0""#));
    }

    #[test]
    fn empty_and_text_only_pages_are_empty() {
        for content in [
            "",
            "   ",
            "<html><body></body></html>",
            "not html at all",
            "{\"files\": []}",
        ] {
            let page = parse_project_html(content).unwrap();
            assert_eq!(page, ProjectPage::default(), "{content:?}");
        }
    }

    #[test]
    fn malformed_inputs_do_not_panic() {
        for content in [
            "<",
            "<a",
            "<a href=\"x",
            "<a href='x' data-yanked=\"",
            "<a href=x>unterminated",
            "</",
            "</a",
            "</ a>",
            "<!--",
            "<!-- <a href=x>x</a>",
            "<!",
            "<?xml",
            "<script><a href=x>x</a>",
            "<title>Links for",
            "<<<>>><a href=é>ü</a><a href=ü#ß=é>&#xD800;&#x110000;&#;&#x;&",
            "<a href=x#sha256=>x</a><a href=#>y</a><a href=x#=ab>z</a>",
            "<a =x href=y>y</a><a/href=z>z</a><a href = >w</a>",
            "\u{0}\u{feff}<a href=\u{0}>\u{0}</a>",
            "&&&&;&#x&#&amp&ampx&lt=",
            "<a href=x>&#",
            "<a href=x>&#x1F600;😀</a>",
        ] {
            let _ = parse_project_html(content);
            let _ = parse_project_list_html(content);
        }
        let page = parse_project_html("<a href=x>&#x1F600;😀</a>").unwrap();
        assert_eq!(page.files[0].filename, "😀😀");
    }

    #[test]
    fn limits_pathological_pages() {
        let huge = "x".repeat(crate::index::MAX_PAGE_BYTES + 1);
        assert!(matches!(
            parse_project_html(&huge),
            Err(IndexParseError::TooLarge { .. })
        ));
        // Many unclosed anchors stay linear: each one closes at the next.
        let many = "<a href=x>".repeat(200_000);
        assert_eq!(parse_project_html(&many).unwrap().files.len(), 200_000);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_text_never_panics(content in any::<String>()) {
                let _ = parse_project_html(&content);
                let _ = parse_project_list_html(&content);
            }

            #[test]
            fn decoding_a_link_is_decoding_it_whole_then_splitting_it(
                raw in "(a|#|&|;|#35|&#35;|&num;|&#x23|&amp;|&lt|=|sha256|x2B|é)*"
            ) {
                let (url, fragment) = decode_link(&raw);
                prop_assert_eq!((url, fragment.map(Cow::into_owned)), decode_then_split(&raw));
            }

            #[test]
            fn html_like_text_never_panics(
                content in "(<a |<A |</a>|<!--|-->|<script>|</script|href=|HREF='|data-yanked|data-core-metadata=|\"|'|=| |>|#sha256=ab|&amp;|&#x2B;|&#|;|é|x|<base href=|<meta name=pypi:repository-version content=)*"
            ) {
                let _ = parse_project_html(&content);
                let _ = parse_project_list_html(&content);
            }

            #[test]
            fn rendered_pages_read_back_the_same(
                name in "[A-Za-z0-9._ &<>\"'-]{0,12}",
                files in proptest::collection::vec(
                    (
                        "[a-zA-Z0-9._+&<>\"'-]{1,20}",
                        "[a-zA-Z0-9./%+?=&<>\"' -]{0,30}",
                        proptest::option::of("[0-9a-f]{1,64}"),
                        proptest::option::of("[<>=!., 0-9*&\"]{1,12}"),
                        proptest::option::of(proptest::option::of("[ -~]{1,12}")),
                    ),
                    0..8,
                ),
            ) {
                let page = ProjectPage {
                    name: name.trim().to_owned(),
                    files: files
                        .into_iter()
                        .map(|(filename, url, sha, requires_python, yanked)| IndexFile {
                            filename,
                            url: url.trim_matches(is_html_space).replace('#', ""),
                            hashes: sha.map(|s| ("sha256".to_owned(), s)).into_iter().collect(),
                            requires_python: requires_python
                                .filter(|r| !r.trim().is_empty() && !r.contains('&'))
                                .map(|r| r.trim().to_owned()),
                            yanked: match yanked {
                                None => Yanked::No,
                                Some(reason) => Yanked::Yes {
                                    reason: reason.filter(|r| !r.is_empty()),
                                },
                            },
                            ..IndexFile::default()
                        })
                        .collect(),
                    ..ProjectPage::default()
                };
                let html = render_project_html(&page);
                prop_assert_eq!(parse_project_html(&html).unwrap(), page);
            }
        }
    }
}
