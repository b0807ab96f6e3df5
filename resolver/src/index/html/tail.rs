//! A large page read by two threads: its tail, from an `<a` tag about halfway through what is
//! left, read on one while the page's reader reads up to it on the other.
//!
//! A cold torch page (0.7 MB, 2,649 links) arrives faster than one thread parses it, so most of
//! it is parsed after its last byte lands, on one thread while the other has little to do. Read
//! in two halves it is parsed in about half the time.
//!
//! The halves join only where that gives exactly what one reader gives: the page's reader must
//! arrive at the tail's first byte between two tokens, with no anchor, heading or raw text
//! (`<script>`...) open there, which is the state the tail's reader starts in; and the tail must
//! have read without an error and without a tag that says something of the page rather than of
//! a file (`<base>`, `<meta>`, a heading), whose effect depends on what came before. Anywhere
//! else the page's reader reads the tail again itself: a split never changes a page, at worst
//! it costs the tail's reading twice.

use super::{IndexFile, IndexParseError, ProjectHtmlReader, ProjectPage, Walk};
use super::{check_size, project_page, push_file};
use crate::index::MAX_LINKS;

/// The files of a page's tail, read from `from` to the page's end by a reader of its own.
pub struct HtmlTail {
    from: usize,
    files: Vec<IndexFile>,
    /// Whether it read without an error and without a tag about the page (see the module).
    clean: bool,
}

impl HtmlTail {
    /// Reads `content` (the whole page) from `from`, a place [`ProjectHtmlReader::split_point`]
    /// gave, to its end.
    pub fn read(content: &str, from: usize) -> HtmlTail {
        let mut walk = Walk {
            pos: from,
            ..Walk::default()
        };
        let mut files =
            Vec::with_capacity(super::files_expected(content.len().saturating_sub(from)));
        let read = walk.advance(content, true, usize::MAX, |anchor, text| {
            push_file(&mut files, anchor, text)
        });
        HtmlTail {
            from,
            files,
            clean: read.is_ok() && !walk.saw_head_tag,
        }
    }

    /// The files read, in page order.
    pub fn files(&self) -> &[IndexFile] {
        &self.files
    }
}

impl ProjectHtmlReader {
    /// Where a second reader could take over the rest of `content` (the whole page): the start
    /// of an `<a ` tag about halfway through what this reader has not read, when that is at
    /// least `min_rest` bytes; `None` otherwise, or when the page failed already.
    pub fn split_point(&self, content: &str, min_rest: usize) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        let rest = content.len().checked_sub(self.walk.pos)?;
        if rest < min_rest {
            return None;
        }
        let middle = self.walk.pos + rest / 2;
        let after = content.as_bytes().get(middle..)?;
        memchr::memmem::find(after, b"<a ").map(|at| middle + at)
    }

    /// Reads `content` (the whole page) up to `to`, where a tail's reader starts: the part of
    /// the page this reader reads before [`ProjectHtmlReader::finish_with`] takes the tail.
    pub fn read_until(&mut self, content: &str, to: usize) {
        if self.error.is_some() {
            return;
        }
        let files = &mut self.files;
        if let Err(err) = self.walk.advance(content, false, to, |anchor, text| {
            push_file(files, anchor, text)
        }) {
            self.error = Some(err);
        }
    }

    /// The page, from `content` (the whole text) and `tail` read meanwhile from where
    /// [`ProjectHtmlReader::read_until`] stopped: its files after this reader's where the two
    /// join exactly (see the module), else the rest read here. Says which: `true` when the
    /// tail's files are the page's last ones.
    pub fn finish_with(
        mut self,
        content: &str,
        tail: HtmlTail,
    ) -> Result<(ProjectPage, bool), IndexParseError> {
        check_size(content)?;
        if let Some(err) = self.error {
            return Err(err);
        }
        let walk = &self.walk;
        let joins = tail.clean
            && walk.pos == tail.from
            && walk.raw_text_of.is_none()
            && walk.open_at.is_none()
            && !walk.heading_open
            && self.files.len() + tail.files.len() <= MAX_LINKS;
        if joins {
            self.files.extend(tail.files);
            return Ok((project_page(self.walk.into_head(), self.files), true));
        }
        self.finish(content).map(|page| (page, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::parse_project_html;

    /// `content` read by two readers split at `from` (the first after reading `first` bytes
    /// as they arrived), and whether they joined.
    fn read_split(
        content: &str,
        first: usize,
        from: usize,
    ) -> (Result<ProjectPage, IndexParseError>, bool) {
        let mut reader = ProjectHtmlReader::default();
        reader.read(&content[..first]);
        let tail = HtmlTail::read(content, from);
        reader.read_until(content, from);
        match reader.finish_with(content, tail) {
            Ok((page, joined)) => (Ok(page), joined),
            Err(err) => (Err(err), false),
        }
    }

    const PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Links for demo</title>\
        <meta name=\"pypi:repository-version\" content=\"1.1\"></head><body>\n\
        <a href=\"/f/demo-1.0-py3-none-any.whl#sha256=aa\">demo-1.0-py3-none-any.whl</a><br/>\n\
        <a href=\"/f/demo-1.1-py3-none-any.whl#sha256=bb\" data-requires-python=\"&gt;=3.9\">demo-1.1-py3-none-any.whl</a><br/>\n\
        <a href=\"/f/demo-1.2.tar.gz\">demo-1.2.tar.gz</a>\n</body></html>\n";

    #[test]
    fn a_page_split_at_an_anchor_reads_as_the_whole_page() {
        let whole = parse_project_html(PAGE).unwrap();
        for first in [0, 40, 150] {
            let mut reader = ProjectHtmlReader::default();
            reader.read(&PAGE[..first]);
            let from = reader.split_point(PAGE, 0).unwrap();
            assert!(PAGE[from..].starts_with("<a "));
            let (page, joined) = read_split(PAGE, first, from);
            assert!(joined, "split at {from}");
            assert_eq!(page.unwrap(), whole);
        }
    }

    #[test]
    fn a_split_anywhere_never_changes_the_page() {
        let whole = parse_project_html(PAGE).unwrap();
        let mut joined_somewhere = false;
        for from in 0..=PAGE.len() {
            if !PAGE.is_char_boundary(from) {
                continue;
            }
            let (page, joined) = read_split(PAGE, 0, from);
            assert_eq!(page.unwrap(), whole, "split at {from}");
            joined_somewhere |= joined;
        }
        assert!(joined_somewhere);
    }

    #[test]
    fn a_tail_inside_a_comment_script_or_open_anchor_is_read_again() {
        for page in [
            "<html><body><!-- <a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a> --><a href=\"/y-1.0.tar.gz\">y-1.0.tar.gz</a></body>",
            "<html><script>var s = '<a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a>';</script><a href=\"/y-1.0.tar.gz\">y</a>",
            "<a href=\"/y-1.0.tar.gz\">text <a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a>",
            "<html><script><a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a></script><a href=\"/y-1.0.tar.gz\">y</a>",
        ] {
            let whole = parse_project_html(page).unwrap();
            let from = page.find("<a href=\"/x").unwrap();
            let (read, joined) = read_split(page, 0, from);
            assert!(!joined, "{page}");
            assert_eq!(read.unwrap(), whole);
        }
    }

    #[test]
    fn a_tail_that_says_something_of_the_page_is_read_again() {
        let page = "<html><body><a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a>\n\
            <a href=\"/y-1.0.tar.gz\">y-1.0.tar.gz</a><base href=\"https://elsewhere.example/\">\
            <meta name=\"pypi:repository-version\" content=\"1.0\"></body>";
        let whole = parse_project_html(page).unwrap();
        let from = page.find("<a href=\"/y").unwrap();
        let (read, joined) = read_split(page, 0, from);
        assert!(!joined);
        assert_eq!(read.unwrap(), whole);
        assert_eq!(whole.base.as_deref(), Some("https://elsewhere.example/"));
    }

    #[test]
    fn errors_are_those_of_the_whole_page() {
        let bad = "<html><body><a href=\"/x-1.0.tar.gz\">x-1.0.tar.gz</a>\n\
            <a href=\"/y-1.0.tar.gz\">y</a><meta name=\"pypi:repository-version\" content=\"2.0\">";
        let from = bad.find("<a href=\"/y").unwrap();
        let (read, _) = read_split(bad, 0, from);
        assert_eq!(
            read.unwrap_err().to_string(),
            parse_project_html(bad).unwrap_err().to_string()
        );
    }

    #[test]
    fn the_real_torch_page_split_reads_as_whole() {
        let body = wheelgate_testdata::torch_page_html();
        let whole = parse_project_html(&body).unwrap();
        for first in [0, body.len() / 3] {
            let mut reader = ProjectHtmlReader::default();
            reader.read(&body[..first]);
            let from = reader.split_point(&body, 64 * 1024).unwrap();
            let tail = HtmlTail::read(&body, from);
            assert!(!tail.files().is_empty());
            reader.read_until(&body, from);
            let (page, joined) = reader.finish_with(&body, tail).unwrap();
            assert!(joined);
            assert_eq!(page, whole);
        }
    }
}
