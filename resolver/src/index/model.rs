//! One model for a simple-index page, whichever format it came in: PEP 503 HTML (with the
//! attributes of PEPs 592, 629, 658, 714, 740 and 792) or PEP 691 JSON (with PEP 700's
//! additions). Parsers fill it, renderers write it back, and the proxy rewrites it in between.

use super::hashes::Hashes;

/// The API version a page that does not declare one speaks ([PEP 629]: absent means `1.0`).
///
/// [PEP 629]: https://peps.python.org/pep-0629/
pub const DEFAULT_API_VERSION: &str = "1.0";

/// The lowest API version a JSON page that carries `versions`, `size` or `upload-time` may
/// declare ([PEP 700]).
///
/// [PEP 700]: https://peps.python.org/pep-0700/
pub const JSON_API_VERSION: &str = "1.1";

/// The page-level fields of a simple-index page: its API version ([PEP 629] in HTML as
/// `<meta name="pypi:repository-version">`, [PEP 691] in JSON as `meta.api-version`), PyPI's
/// `meta._last-serial` (JSON; mirroring tools read it), and [PEP 708]'s `tracks` and
/// `alternate-locations` (JSON keys; HTML `<meta name="pypi:tracks">` and
/// `<meta name="pypi:alternate-locations">`, one per URL). Kept as the page wrote them.
///
/// [PEP 629]: https://peps.python.org/pep-0629/
/// [PEP 691]: https://peps.python.org/pep-0691/
/// [PEP 708]: https://peps.python.org/pep-0708/
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `major.minor`, as the page wrote it; [`DEFAULT_API_VERSION`] when it wrote none.
    pub api_version: String,
    /// PyPI's serial of the project's last change (JSON `meta._last-serial`).
    pub last_serial: Option<u64>,
    /// The projects this one tracks on other repositories (PEP 708).
    pub tracks: Vec<String>,
    /// Other locations of this project, all considered the same (PEP 708).
    pub alternate_locations: Vec<String>,
    /// The other members of a JSON page's `meta`, as `(key, compact JSON value)` in page order,
    /// written back as they came: the index's own keys (PEP 691 reserves a leading underscore
    /// for them; a registry may write `_last-serial` as a string, which is kept here as the
    /// string it was) and keys of API versions newer than this reader.
    pub extra: Vec<(String, String)>,
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            api_version: DEFAULT_API_VERSION.to_owned(),
            last_serial: None,
            tracks: Vec::new(),
            alternate_locations: Vec::new(),
            extra: Vec::new(),
        }
    }
}

/// A project's status marker ([PEP 792]): HTML `<meta name="pypi:project-status">` and
/// `pypi:project-status-reason`, JSON `project-status.status` and `.reason`.
///
/// [PEP 792]: https://peps.python.org/pep-0792/
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectStatus {
    /// `active`, `archived`, `quarantined`, `deprecated`, or a future value, as written.
    pub status: String,
    /// Free-text explanation for people.
    pub reason: Option<String>,
}

/// Whether a file is yanked ([PEP 592]): HTML `data-yanked`, JSON `yanked`.
///
/// [PEP 592]: https://peps.python.org/pep-0592/
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Yanked {
    /// Installable as usual.
    #[default]
    No,
    /// Only installable when pinned exactly. Parsers never produce `Some("")`: an empty reason
    /// is `None`.
    Yes {
        /// The reason the index gives, when it gives one.
        reason: Option<String>,
    },
}

/// Whether the file's core metadata is served separately at `<file URL>.metadata`
/// ([PEP 658], renamed in [PEP 714]): HTML `data-core-metadata` (legacy
/// `data-dist-info-metadata`), JSON `core-metadata` (legacy `dist-info-metadata`).
///
/// [PEP 658]: https://peps.python.org/pep-0658/
/// [PEP 714]: https://peps.python.org/pep-0714/
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CoreMetadata {
    /// Not offered: installers read metadata from the file itself.
    #[default]
    Absent,
    /// Offered, without a hash (`"true"`).
    Present,
    /// Offered, with the hashes of the metadata file (`sha256=<hex>`). Parsers never produce an
    /// empty map: that is [`CoreMetadata::Present`].
    Hashes(Hashes),
}

impl CoreMetadata {
    /// Whether `<file URL>.metadata` must exist.
    pub fn is_present(&self) -> bool {
        !matches!(self, CoreMetadata::Absent)
    }
}

/// One downloadable file of a project page ([PEP 503] anchor, [PEP 691] `files[]` entry).
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexFile {
    /// The file's name: the anchor text in HTML (or the href's last path segment, decoded,
    /// when the text is empty), `filename` in JSON. Keeps the `+` of a local version label.
    pub filename: String,
    /// The link as written (root-relative `/whl/cu130/torch-2.10.0%2Bcu130-...whl`, relative,
    /// or absolute), entity-decoded but neither resolved nor percent-decoded, without its
    /// `#fragment`. Resolve with [`ProjectPage::file_url`].
    pub url: String,
    /// Hash name to hex digest: the `#sha256=` fragment in HTML, `hashes` in JSON. May be empty
    /// (PyTorch's nightly pages carry no hash).
    pub hashes: Hashes,
    /// `Requires-Python` specifier, unescaped (`>=3.8`, never `&gt;=3.8`) ([PEP 503]).
    ///
    /// [PEP 503]: https://peps.python.org/pep-0503/
    pub requires_python: Option<String>,
    /// [PEP 592] yank status.
    ///
    /// [PEP 592]: https://peps.python.org/pep-0592/
    pub yanked: Yanked,
    /// [PEP 658] / [PEP 714] separately served metadata.
    ///
    /// [PEP 658]: https://peps.python.org/pep-0658/
    /// [PEP 714]: https://peps.python.org/pep-0714/
    pub core_metadata: CoreMetadata,
    /// Whether a detached `<file URL>.asc` signature exists ([PEP 503] `data-gpg-sig`, JSON
    /// `gpg-sig`); `None` when the page does not say.
    ///
    /// [PEP 503]: https://peps.python.org/pep-0503/
    pub gpg_sig: Option<bool>,
    /// File size in bytes ([PEP 700], JSON only: HTML cannot carry it).
    ///
    /// [PEP 700]: https://peps.python.org/pep-0700/
    pub size: Option<u64>,
    /// ISO 8601 upload time as written ([PEP 700] JSON `upload-time`; download.pytorch.org's
    /// non-standard HTML `data-upload-time`, which uv reads).
    ///
    /// [PEP 700]: https://peps.python.org/pep-0700/
    pub upload_time: Option<String>,
    /// URL of the file's provenance object ([PEP 740] HTML `data-provenance`, JSON
    /// `provenance`), as written.
    ///
    /// [PEP 740]: https://peps.python.org/pep-0740/
    pub provenance: Option<String>,
}

impl IndexFile {
    /// A file with only a name and a link; every optional attribute absent.
    pub fn new(filename: impl Into<String>, url: impl Into<String>) -> Self {
        IndexFile {
            filename: filename.into(),
            url: url.into(),
            ..IndexFile::default()
        }
    }

    /// Whether the file is yanked ([PEP 592]).
    ///
    /// [PEP 592]: https://peps.python.org/pep-0592/
    pub fn is_yanked(&self) -> bool {
        matches!(self.yanked, Yanked::Yes { .. })
    }

    /// The hex sha256 digest, if the page gave one.
    pub fn sha256(&self) -> Option<&str> {
        self.hashes.get("sha256").map(String::as_str)
    }

    /// The link of the separately served metadata file ([PEP 658]: the file's URL plus
    /// `.metadata`), unresolved like [`IndexFile::url`], when the page offers one.
    ///
    /// [PEP 658]: https://peps.python.org/pep-0658/
    pub fn metadata_url(&self) -> Option<String> {
        self.core_metadata
            .is_present()
            .then(|| format!("{}.metadata", self.url))
    }
}

/// A project page: `/simple/<project>/` ([PEP 503] HTML or [PEP 691] JSON).
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectPage {
    /// The project name as the page wrote it (JSON `name`; HTML `Links for <name>` in the
    /// title or heading). Empty when an HTML page does not say.
    pub name: String,
    /// The files, in page order.
    pub files: Vec<IndexFile>,
    /// Every version of the project, including those without files ([PEP 700], JSON only).
    /// Empty when the page came from HTML.
    ///
    /// [PEP 700]: https://peps.python.org/pep-0700/
    pub versions: Vec<String>,
    /// The page's API version ([PEP 629], [PEP 691]).
    ///
    /// [PEP 629]: https://peps.python.org/pep-0629/
    /// [PEP 691]: https://peps.python.org/pep-0691/
    pub meta: Meta,
    /// The HTML `<base href>`, as written, that relative file links resolve against.
    pub base: Option<String>,
    /// The project status marker ([PEP 792]), when the page has one.
    ///
    /// [PEP 792]: https://peps.python.org/pep-0792/
    pub status: Option<ProjectStatus>,
    /// Entries the page lists that could not be read as files (a `filename` that is not a
    /// string, a digest that is a number), each left off with its reason; the rest of the page
    /// is read as usual. A page is refused whole only when it is not a page at all.
    pub dropped: Vec<DroppedFile>,
}

/// A page entry left off the page because a field the proxy needs could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedFile {
    /// The entry's `filename` when it has a readable one, else where it stands on the page
    /// (`files[3]`).
    pub entry: String,
    /// Why it was left off: which field, and what the page wrote there.
    pub reason: String,
}

impl ProjectPage {
    /// The absolute URL of `file` for a page fetched from `page_url`: the file's link resolved
    /// against the page's `<base href>` (itself resolved against `page_url`), or against
    /// `page_url` when there is no base ([PEP 503] links may be relative, root-relative or
    /// absolute).
    ///
    /// [PEP 503]: https://peps.python.org/pep-0503/
    pub fn file_url(&self, file: &IndexFile, page_url: &str) -> String {
        match &self.base {
            Some(base) => resolve_url(&resolve_url(page_url, base), &file.url),
            None => resolve_url(page_url, &file.url),
        }
    }
}

/// One project of a root page `/simple/` ([PEP 503] anchor, [PEP 691] `projects[]` entry).
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectLink {
    /// The project name as written (anchor text, JSON `name`).
    pub name: String,
    /// The link as written (`certifi/`). JSON lists carry no link, so their parser sets the
    /// normalized name plus `/`, relative to the list's URL as PEP 691 prescribes.
    pub href: String,
}

/// A root page listing projects (`/simple/`, or download.pytorch.org's `/whl/` and
/// `/whl/<backend>/`) ([PEP 503], [PEP 691]).
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectList {
    /// The projects, in page order.
    pub projects: Vec<ProjectLink>,
    /// The page's API version ([PEP 629]).
    ///
    /// [PEP 629]: https://peps.python.org/pep-0629/
    pub meta: Meta,
}

/// `major.minor` of an API version string, `None` when it is not of that form ([PEP 629]).
///
/// [PEP 629]: https://peps.python.org/pep-0629/
pub fn parse_api_version(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// A project name normalized as [PEP 503] says: runs of `-`, `_`, `.` become one `-`, and the
/// result is lowercase.
///
/// [PEP 503]: https://peps.python.org/pep-0503/#normalized-names
pub fn normalize_project_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            in_separator = true;
            continue;
        }
        if in_separator {
            out.push('-');
            in_separator = false;
        }
        out.extend(c.to_lowercase());
    }
    if in_separator {
        out.push('-');
    }
    out
}

/// Resolves `reference` (a link as written in a page) against `base` (the page's URL or its
/// `<base href>`), as RFC 3986 section 5.2 does for the forms simple indexes use: absolute
/// (`https://download-r2.pytorch.org/...`), scheme-relative (`//host/...`), root-relative
/// (`/whl/cu130/...`), relative (`../../packages/...`), query- and fragment-only.
///
/// String-based on purpose: links are kept as written (no percent-decoding or re-encoding, so
/// `%2B` stays `%2B`), only dot segments are removed. A relative `base` gives a result
/// relative to the same place.
pub fn resolve_url(base: &str, reference: &str) -> String {
    let reference = reference.trim_matches(is_html_space);
    let base = base.trim_matches(is_html_space);
    if scheme_of(reference).is_some() {
        return reference.to_owned();
    }
    let base = base.split_once('#').map_or(base, |(before, _)| before);
    if let Some(after_slashes) = reference.strip_prefix("//") {
        return match scheme_of(base) {
            Some(scheme) => format!("{scheme}://{after_slashes}"),
            None => reference.to_owned(),
        };
    }
    if reference.is_empty() {
        return base.to_owned();
    }
    if reference.starts_with('#') {
        return format!("{base}{reference}");
    }
    let (origin, rest) = split_origin(base);
    let base_path = rest.split_once('?').map_or(rest, |(path, _)| path);
    if reference.starts_with('?') {
        return format!("{origin}{base_path}{reference}");
    }
    let (ref_path, ref_tail) = match reference.find(['?', '#']) {
        Some(at) => reference.split_at(at),
        None => (reference, ""),
    };
    let merged = if ref_path.starts_with('/') {
        ref_path.to_owned()
    } else if base_path.is_empty() && !origin.is_empty() {
        // RFC 3986 5.2.3: a base with an authority and an empty path merges as "/".
        format!("/{ref_path}")
    } else {
        let dir = base_path.rfind('/').map_or("", |at| &base_path[..=at]);
        format!("{dir}{ref_path}")
    };
    format!("{origin}{}{ref_tail}", remove_dot_segments(&merged))
}

/// HTML's "ASCII whitespace", which browsers and pip strip from both ends of a URL.
pub(crate) fn is_html_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

/// The scheme of an absolute URL (`https` of `https://...`), `None` for a relative reference.
fn scheme_of(url: &str) -> Option<&str> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first_ok && rest_ok).then_some(scheme)
}

/// Splits `https://host:port/path?q` into `https://host:port` and `/path?q`; a relative URL
/// has an empty origin.
fn split_origin(url: &str) -> (&str, &str) {
    let authority_start = match scheme_of(url) {
        Some(scheme) if url[scheme.len() + 1..].starts_with("//") => scheme.len() + 3,
        // `mailto:x`-style URLs have no authority; nothing a simple index links to.
        Some(scheme) => return url.split_at(scheme.len() + 1),
        None if url.starts_with("//") => 2,
        None => return ("", url),
    };
    match url[authority_start..].find(['/', '?', '#']) {
        Some(at) => url.split_at(authority_start + at),
        None => (url, ""),
    }
}

/// RFC 3986 5.2.4 for an absolute path; for a relative one, `..` that climbs above the start
/// is kept, since only the caller knows what it is relative to.
fn remove_dot_segments(path: &str) -> String {
    let absolute = path.starts_with('/');
    let body = if absolute { &path[1..] } else { path };
    let mut out: Vec<&str> = Vec::new();
    let mut segments = body.split('/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        match segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.last().is_some_and(|s| *s != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
                if last {
                    out.push("");
                }
            }
            _ => out.push(segment),
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "https://download.pytorch.org/whl/cu130/torch/";

    #[test]
    fn resolves_root_relative_pytorch_links_keeping_percent_encoding() {
        assert_eq!(
            resolve_url(
                PAGE,
                "/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-win_amd64.whl"
            ),
            "https://download.pytorch.org/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-win_amd64.whl"
        );
    }

    #[test]
    fn keeps_absolute_links_to_other_hosts() {
        let r2 = "https://download-r2.pytorch.org/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl";
        assert_eq!(resolve_url(PAGE, r2), r2);
        let pypi = "https://files.pythonhosted.org/packages/aa/bb/filelock-3.20.0-py3-none-any.whl";
        assert_eq!(resolve_url(PAGE, pypi), pypi);
    }

    #[test]
    fn resolves_relative_links_like_pypi_writes_them() {
        assert_eq!(
            resolve_url(
                "https://pypi.org/simple/numpy/",
                "../../packages/ab/cd/numpy-2.0.0.tar.gz"
            ),
            "https://pypi.org/packages/ab/cd/numpy-2.0.0.tar.gz"
        );
        assert_eq!(
            resolve_url(PAGE, "torch-2.0.0.whl?x=1#frag"),
            "https://download.pytorch.org/whl/cu130/torch/torch-2.0.0.whl?x=1#frag"
        );
        assert_eq!(
            resolve_url("https://h.example", "a.whl"),
            "https://h.example/a.whl"
        );
        assert_eq!(
            resolve_url("https://h.example/x/y?q=1#f", "../../../a.whl"),
            "https://h.example/a.whl"
        );
    }

    #[test]
    fn resolves_scheme_relative_query_and_fragment_references() {
        assert_eq!(
            resolve_url(PAGE, "//files.example/a.whl"),
            "https://files.example/a.whl"
        );
        assert_eq!(
            resolve_url("https://h.example/p/?old#f", "?new"),
            "https://h.example/p/?new"
        );
        assert_eq!(
            resolve_url("https://h.example/p/#f", "#g"),
            "https://h.example/p/#g"
        );
        assert_eq!(
            resolve_url("https://h.example/p/#f", ""),
            "https://h.example/p/"
        );
    }

    #[test]
    fn relative_bases_stay_relative() {
        assert_eq!(resolve_url("../files/", "a.whl"), "../files/a.whl");
        assert_eq!(resolve_url("", "./a/../b.whl"), "b.whl");
        assert_eq!(resolve_url("/whl/cu130/", "../x.whl"), "/whl/x.whl");
    }

    #[test]
    fn file_url_uses_base_href() {
        let page = ProjectPage {
            base: Some("https://mirror.example/files/".to_owned()),
            files: vec![IndexFile::new("a-1.0.tar.gz", "a/a-1.0.tar.gz")],
            ..ProjectPage::default()
        };
        assert_eq!(
            page.file_url(&page.files[0], PAGE),
            "https://mirror.example/files/a/a-1.0.tar.gz"
        );
        let relative_base = ProjectPage {
            base: Some("/other/".to_owned()),
            ..page.clone()
        };
        assert_eq!(
            relative_base.file_url(&page.files[0], PAGE),
            "https://download.pytorch.org/other/a/a-1.0.tar.gz"
        );
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        for (base, reference) in [
            ("", ""),
            ("é:", "é"),
            ("https:", "x"),
            ("https://", "/x"),
            ("//", ".."),
            ("a:b:c", "../.."),
            ("https://h/ü/", "ß/../."),
            ("/", "/./../"),
        ] {
            let _ = resolve_url(base, reference);
        }
        assert_eq!(resolve_url("https://", "/x"), "https:///x");
    }

    #[test]
    fn normalizes_names_per_pep_503() {
        assert_eq!(
            normalize_project_name("Typing_Extensions"),
            "typing-extensions"
        );
        assert_eq!(normalize_project_name("a.-_b"), "a-b");
        assert_eq!(normalize_project_name("x-"), "x-");
    }

    #[test]
    fn api_versions() {
        assert_eq!(parse_api_version("1.4"), Some((1, 4)));
        assert_eq!(parse_api_version(" 2.0 "), Some((2, 0)));
        assert_eq!(parse_api_version("1"), None);
        assert_eq!(parse_api_version("v1.0"), None);
    }

    #[test]
    fn metadata_url_only_when_offered() {
        let mut file = IndexFile::new("a-1.0-py3-none-any.whl", "/a-1.0-py3-none-any.whl");
        assert_eq!(file.metadata_url(), None);
        file.core_metadata = CoreMetadata::Present;
        assert_eq!(
            file.metadata_url().as_deref(),
            Some("/a-1.0-py3-none-any.whl.metadata")
        );
    }
}
