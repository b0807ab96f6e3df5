//! Project pages a real registry sent (`testdata/registry/`, see its README): the variations of
//! the world the PEPs do not describe, kept in the suite.

/// One captured page.
#[derive(Debug, Clone, Copy)]
pub struct CapturedPage {
    /// The project the page is of.
    pub project: &'static str,
    /// The `Content-Type` the registry answered with.
    pub content_type: &'static str,
    /// The page as it came (its file host replaced).
    pub body: &'static str,
    /// How many files the page lists, counted when it was captured.
    pub files: usize,
    /// How many of them are yanked.
    pub yanked: usize,
}

const JSON: &str = "application/vnd.pypi.simple.v1+json";
const HTML: &str = "text/html";

/// Every captured page: each project in JSON, then in HTML.
pub const REGISTRY_PAGES: [CapturedPage; 4] = [
    CapturedPage {
        project: "six",
        content_type: JSON,
        body: include_str!("../registry/six.json"),
        files: 48,
        yanked: 0,
    },
    CapturedPage {
        project: "six",
        content_type: HTML,
        body: include_str!("../registry/six.html"),
        files: 48,
        yanked: 0,
    },
    CapturedPage {
        project: "packaging",
        content_type: JSON,
        body: include_str!("../registry/packaging.json"),
        files: 110,
        yanked: 2,
    },
    CapturedPage {
        project: "packaging",
        content_type: HTML,
        body: include_str!("../registry/packaging.html"),
        files: 110,
        yanked: 2,
    },
];

impl CapturedPage {
    /// Whether the page is PEP 691 JSON (else PEP 503 HTML).
    pub fn is_json(&self) -> bool {
        self.content_type.contains("json")
    }
}
