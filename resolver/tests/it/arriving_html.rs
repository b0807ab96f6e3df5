//! A project page read while it arrives (`ProjectHtmlReader`) gives exactly what the whole-page
//! parse gives, errors included, however the text is cut into arrivals: at every byte of small
//! pages that exercise each kind of token, at random cuts of the real captured page, and on
//! random mutations of it.

use proptest::prelude::*;
use wheelgate_resolver::index::{
    IndexParseError, ProjectHtmlReader, ProjectPage, parse_project_html,
};

/// Pages with every construct whose reading depends on what follows it: comments, raw text,
/// headings, meta tags (PEP 629, 708, 792), `<base>`, character references, multi-byte text,
/// an anchor closed by the next one, and a tag cut off by the end.
const TRICKY: &[&str] = &[
    concat!(
        "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.4\">",
        "<meta name=\"pypi:tracks\" content=\"https://example.org/simple/p/\">",
        "<meta name=\"pypi:alternate-locations\" content=\"https://a.example/simple/p/\">",
        "<meta name=\"pypi:project-status\" content=\"quarantined\">",
        "<meta name=\"pypi:project-status-reason\" content=\"under review &amp; more\">",
        "<title>Links for p&#233;</title><base href=\"https://files.example/base/\">",
        "<script>var a = \"<a href='x.whl'>x.whl</a>\"; // </scriptx\n</script>",
        "<style>a { content: '</a>' }</style></head>\n<body><h1>Links for pé</h1>\n",
        "<!-- <a href=\"c.whl\">commented-1.0.tar.gz</a> -->",
        "<a href=\"p-1.0-py3-none-any.whl#sha256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" ",
        "data-requires-python=\"&gt;=3.9\" data-dist-info-metadata=\"sha256=aa\" data-core-metadata=\"sha256=aa\" ",
        "data-yanked=\"bad &quot;build&quot;\">p-1.0-py3-none-any.whl</a><br/>\n",
        "<a href='p-1.1.tar.gz#md5=00' data-provenance=https://p.example/prov>p-1.1&#x2e;tar.gz<a href=\"p-1.2.zip\">p-1.2.zip</a>\n",
        "<textarea></a></textarea><a HREF=\"/ünï/p-1.3-py3-none-any.whl\" data-gpg-sig=\"true\">  p-1.3-py3-none-any.whl  </a>",
        "<?php echo 1 ?><!x><a href=\"p-1.4.tar.gz\" data-upload-time=\"2025-01-01T00:00:00Z\">p-1.4.tar.gz</A >",
        "</body></html>\n<!--TIMESTAMP 1774772182-->",
    ),
    "<a href=\"p-1.0.tar.gz\">p-1.0.tar.gz</a><a href=\"p-2.0.tar.gz\">p-2.0",
    "<a href=\"p-1.0.tar.gz\">p-1.0.tar.gz</a><a href=\"p-2.0.tar.gz\" data-x=\"never closed",
    "<html><title>Links for x</title><!-- never closed <a href=\"x-1.0.tar.gz\">",
    "<meta name=\"pypi:repository-version\" content=\"2.0\"><a href=\"p-1.0.tar.gz\">p-1.0.tar.gz</a>",
    "",
];

fn same(
    left: &Result<ProjectPage, IndexParseError>,
    right: &Result<ProjectPage, IndexParseError>,
) -> bool {
    match (left, right) {
        (Ok(left), Ok(right)) => left == right,
        (Err(left), Err(right)) => left.to_string() == right.to_string(),
        _ => false,
    }
}

/// The page read in arrivals ending at each of `cuts` (ascending), then finished.
fn read_in_parts(page: &str, cuts: &[usize]) -> Result<ProjectPage, IndexParseError> {
    let mut reader = ProjectHtmlReader::default();
    for &cut in cuts {
        if let Some(prefix) = page.get(..cut) {
            reader.read(prefix);
        }
    }
    reader.finish(page)
}

/// The page read in arrivals ending at each of `cuts` (ascending), each arrival read in steps
/// of `step` bytes, then finished.
fn read_in_steps(page: &str, cuts: &[usize], step: usize) -> Result<ProjectPage, IndexParseError> {
    let mut reader = ProjectHtmlReader::default();
    for &cut in cuts {
        if let Some(prefix) = page.get(..cut) {
            while reader.read_step(prefix, step) {}
        }
    }
    reader.finish(page)
}

#[test]
fn a_page_cut_at_any_byte_reads_as_the_whole_page() {
    for page in TRICKY {
        let whole = parse_project_html(page);
        for cut in 0..=page.len() {
            let parts = read_in_parts(page, &[cut]);
            assert!(
                same(&parts, &whole),
                "cut at byte {cut} of {page:?}:\n{parts:?}\nagainst\n{whole:?}"
            );
        }
        // Every byte its own arrival: each pause lands inside every construct in turn.
        let every: Vec<usize> = (0..=page.len()).collect();
        assert!(
            same(&read_in_parts(page, &every), &whole),
            "byte by byte: {page:?}"
        );
    }
}

#[test]
fn the_tricky_page_reads_what_it_holds() {
    // Guards the test above: a reader that skipped anchors or head fields would match a parser
    // that did the same, so the whole-page reading itself is pinned here.
    let page = parse_project_html(TRICKY[0]).expect("the page parses");
    let names: Vec<&str> = page
        .files
        .iter()
        .map(|file| file.filename.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "p-1.0-py3-none-any.whl",
            "p-1.1.tar.gz",
            "p-1.2.zip",
            "p-1.3-py3-none-any.whl",
            "p-1.4.tar.gz"
        ]
    );
    assert_eq!(page.name, "pé");
    assert_eq!(page.meta.tracks, ["https://example.org/simple/p/"]);
    assert_eq!(
        page.meta.alternate_locations,
        ["https://a.example/simple/p/"]
    );
    assert_eq!(page.base.as_deref(), Some("https://files.example/base/"));
    let status = page.status.expect("a project status");
    assert_eq!(status.reason.as_deref(), Some("under review & more"));
}

fn captured_page() -> Option<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
    );
    std::fs::read_to_string(path).ok()
}

#[test]
fn the_real_size_torch_page_read_in_chunks_reads_as_the_whole_page() {
    let page = wheelgate_testdata::torch_page_html();
    let whole = parse_project_html(&page);
    assert!(whole.as_ref().is_ok_and(|page| page.files.len() > 2000));
    // The sizes a socket hands over: from a few bytes to tens of kilobytes.
    for chunk in [1, 7, 100, 1_460, 16_384, 65_536] {
        let cuts: Vec<usize> = (1..=page.len() / chunk).map(|i| i * chunk).collect();
        assert!(
            same(&read_in_parts(&page, &cuts), &whole),
            "chunks of {chunk} bytes"
        );
    }
    for step in [1_000, 65_536] {
        let cuts = [page.len() / 3, page.len()];
        assert!(
            same(&read_in_steps(&page, &cuts, step), &whole),
            "steps of {step} bytes"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_cuts_of_a_mutated_real_page_read_as_the_whole_page(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec!["<", ">", "\"", "'", "<!--", "-->", "</a>", "<a href=x-1.0.tar.gz>", "&", "&amp", "<script>", "é", " "])), 0..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
        step in 1usize..4096,
    ) {
        let mut page = captured_page().unwrap_or_else(|| TRICKY[0].to_string());
        for (at, text) in edits {
            let mut at = at.index(page.len() + 1);
            while !page.is_char_boundary(at) {
                at -= 1;
            }
            page.insert_str(at, text);
        }
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(page.len() + 1)).collect();
        cuts.sort_unstable();
        let whole = parse_project_html(&page);
        let parts = read_in_parts(&page, &cuts);
        prop_assert!(same(&parts, &whole), "cuts {:?}", cuts);
        let steps = read_in_steps(&page, &cuts, step);
        prop_assert!(same(&steps, &whole), "cuts {:?}, steps of {}", cuts, step);
    }
}

#[test]
fn a_token_longer_than_many_arrivals_reads_as_the_whole_page() {
    // An attribute value spread over hundreds of arrivals: each step waits until as much again
    // has arrived before reading the open tag again (linear, not quadratic, in its length).
    let mut page = String::from("<a href=\"p-1.0.tar.gz\">p-1.0.tar.gz</a><a data-x=\"");
    page.push_str(&"x".repeat(300_000));
    page.push_str(
        "\" href=\"p-2.0.tar.gz\">p-2.0.tar.gz</a><a href=\"p-3.0.tar.gz\">p-3.0.tar.gz</a>",
    );
    let whole = parse_project_html(&page);
    assert_eq!(whole.as_ref().map(|page| page.files.len()).ok(), Some(3));
    let cuts: Vec<usize> = (1..=page.len() / 1_000).map(|i| i * 1_000).collect();
    assert!(same(&read_in_parts(&page, &cuts), &whole));
    assert!(same(&read_in_steps(&page, &cuts, 512), &whole));
}
