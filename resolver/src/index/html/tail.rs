//! A large page read by several threads: what is left of it cut at `<a` tags into pieces, each
//! read by a reader of its own, while the page's reader reads the first.
//!
//! A cold torch page (0.7 MB, 2,649 links) arrives faster than one thread parses it, so most of
//! it is parsed after its last byte lands. Cut in two, one half waited for the thread busy with
//! the other page of the request (PyPI's), and one thread often read alone at the end; cut in
//! pieces taken in turn, whichever thread is free takes the next one, and the threads end
//! within a piece of each other.
//!
//! The pieces join only where that gives exactly what one reader gives: each reader must arrive
//! at the next piece's first byte between two tokens, with no anchor, heading or raw text
//! (`<script>`...) open there, which is the state the next piece's reader starts in; and every
//! piece must have read without an error and without a tag that says something of the page
//! rather than of a file (`<base>`, `<meta>`, a heading), whose effect depends on what came
//! before. Anywhere else the page's reader reads the rest again itself: a split never changes a
//! page, at worst it costs the pieces' reading twice.

use super::{IndexFile, IndexParseError, ProjectHtmlReader, ProjectPage, Walk};
use super::{check_size, project_page, push_file};
use crate::index::MAX_LINKS;

/// The files of one piece of a page, read from `from` by a reader of its own up to the next
/// piece or to the page's end.
pub struct HtmlTail {
    from: usize,
    /// Where the next piece starts; `None` for the last piece, read to the page's end.
    to: Option<usize>,
    files: Vec<IndexFile>,
    /// Whether it read without an error and without a tag about the page, and (for a piece
    /// before another) stopped exactly at `to` with nothing open (see the module).
    clean: bool,
}

impl HtmlTail {
    /// Reads `content` (the whole page) from `from` to `to` (the next piece's start) or, when
    /// `to` is `None`, to its end; both are places [`ProjectHtmlReader::split_points`] gave.
    pub fn read(content: &str, from: usize, to: Option<usize>) -> HtmlTail {
        let mut walk = Walk {
            pos: from,
            ..Walk::default()
        };
        let until = to.unwrap_or(content.len());
        let mut files = Vec::with_capacity(super::files_expected(until.saturating_sub(from)));
        let on_anchor = |anchor: &_, text: &_| push_file(&mut files, anchor, text);
        let read = match to {
            None => walk.advance(content, true, usize::MAX, on_anchor),
            Some(to) => walk.advance(content, false, to, on_anchor),
        };
        let ends_clean = match to {
            None => true,
            Some(to) => walk.pos == to && walk.between_files(),
        };
        HtmlTail {
            from,
            to,
            files,
            clean: read.is_ok() && !walk.saw_head_tag && ends_clean,
        }
    }

    /// The files read, in page order.
    pub fn files(&self) -> &[IndexFile] {
        &self.files
    }
}

impl Walk {
    /// Whether nothing is open where the walk stopped: no anchor, heading or raw text, the
    /// state a reader of the next piece starts in.
    fn between_files(&self) -> bool {
        self.raw_text_of.is_none() && self.open_at.is_none() && !self.heading_open
    }
}

impl ProjectHtmlReader {
    /// Where readers of their own could take over the rest of `content` (the whole page): the
    /// starts of `<a ` tags cutting what this reader has not read into up to `pieces` pieces of
    /// about `piece_bytes` or more (the first one this reader's), in page order; none when
    /// less than two pieces' worth is left, or when the page failed already.
    pub fn split_points(&self, content: &str, piece_bytes: usize, pieces: usize) -> Vec<usize> {
        let mut points = Vec::new();
        if self.error.is_some() {
            return points;
        }
        let Some(rest) = content.len().checked_sub(self.walk.pos) else {
            return points;
        };
        let count = (rest / piece_bytes.max(1)).min(pieces);
        if count < 2 {
            return points;
        }
        let mut after = self.walk.pos;
        for piece in 1..count {
            let near = (self.walk.pos + rest * piece / count).max(after);
            let Some(at) = content
                .as_bytes()
                .get(near..)
                .and_then(|bytes| memchr::memmem::find(bytes, b"<a "))
            else {
                break;
            };
            points.push(near + at);
            after = near + at + 1;
        }
        points
    }

    /// Reads `content` (the whole page) up to `to`, where the first piece read by another
    /// reader starts: the part of the page this reader reads before
    /// [`ProjectHtmlReader::finish_with`] takes the pieces.
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

    /// The page, from `content` (the whole text) and `pieces` read meanwhile, in page order,
    /// from where [`ProjectHtmlReader::read_until`] stopped: their files after this reader's
    /// where all of them join exactly (see the module), else the rest read here. Says which:
    /// `true` when the pieces' files are the page's last ones.
    pub fn finish_with(
        mut self,
        content: &str,
        pieces: Vec<HtmlTail>,
    ) -> Result<(ProjectPage, bool), IndexParseError> {
        check_size(content)?;
        if let Some(err) = self.error {
            return Err(err);
        }
        if self.joins(&pieces) {
            for piece in pieces {
                self.files.extend(piece.files);
            }
            return Ok((project_page(self.walk.into_head(), self.files), true));
        }
        self.finish(content).map(|page| (page, false))
    }

    /// Whether `pieces` follow what this reader read, each where the one before stopped, and
    /// end the page.
    fn joins(&self, pieces: &[HtmlTail]) -> bool {
        let Some(first) = pieces.first() else {
            return false;
        };
        let mut at = Some(first.from);
        for piece in pieces {
            if !piece.clean || at != Some(piece.from) {
                return false;
            }
            at = piece.to;
        }
        let files = self.files.len() + pieces.iter().map(|p| p.files.len()).sum::<usize>();
        at.is_none()
            && self.walk.pos == first.from
            && self.walk.between_files()
            && files <= MAX_LINKS
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
        read_pieces(content, first, &[from])
    }

    /// `content` read by readers of pieces starting at `points` (in order) and the page's
    /// reader up to the first of them, after reading `first` bytes as they arrived.
    fn read_pieces(
        content: &str,
        first: usize,
        points: &[usize],
    ) -> (Result<ProjectPage, IndexParseError>, bool) {
        let mut reader = ProjectHtmlReader::default();
        reader.read(&content[..first]);
        let pieces = pieces_of(content, points);
        reader.read_until(content, points[0]);
        match reader.finish_with(content, pieces) {
            Ok((page, joined)) => (Ok(page), joined),
            Err(err) => (Err(err), false),
        }
    }

    /// The pieces starting at `points`, each read by a reader of its own.
    fn pieces_of(content: &str, points: &[usize]) -> Vec<HtmlTail> {
        points
            .iter()
            .enumerate()
            .map(|(at, &from)| HtmlTail::read(content, from, points.get(at + 1).copied()))
            .collect()
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
            let points = reader.split_points(PAGE, 1, 2);
            let from = points[0];
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
            for pieces in [2, 3, 8] {
                let mut reader = ProjectHtmlReader::default();
                reader.read(&body[..first]);
                let points = reader.split_points(&body, 32 * 1024, pieces);
                assert_eq!(points.len(), pieces - 1, "{pieces} pieces");
                let read = pieces_of(&body, &points);
                assert!(read.iter().all(|piece| !piece.files().is_empty()));
                reader.read_until(&body, points[0]);
                let (page, joined) = reader.finish_with(&body, read).unwrap();
                assert!(joined, "{pieces} pieces after {first} bytes");
                assert_eq!(page, whole);
            }
        }
    }

    #[test]
    fn pieces_cut_anywhere_never_change_the_page() {
        let whole = parse_project_html(PAGE).unwrap();
        let bounds: Vec<usize> = (1..PAGE.len())
            .filter(|&at| PAGE.is_char_boundary(at))
            .collect();
        let mut joined_somewhere = false;
        for (at, &first) in bounds.iter().enumerate() {
            for &second in bounds[at + 1..].iter().step_by(7) {
                let (page, joined) = read_pieces(PAGE, 0, &[first, second]);
                assert_eq!(page.unwrap(), whole, "pieces at {first} and {second}");
                joined_somewhere |= joined;
            }
        }
        assert!(joined_somewhere);
    }

    #[test]
    fn pieces_that_do_not_follow_each_other_are_read_again() {
        let whole = parse_project_html(PAGE).unwrap();
        let anchors: Vec<usize> = PAGE.match_indices("<a ").map(|(at, _)| at).collect();
        let (first, second) = (anchors[0], anchors[1]);
        // A piece missing between the two: the second starts after where the first stops.
        let mut reader = ProjectHtmlReader::default();
        let read = vec![
            HtmlTail::read(PAGE, first, Some(second)),
            HtmlTail::read(PAGE, anchors[2], None),
        ];
        reader.read_until(PAGE, first);
        let (page, joined) = reader.finish_with(PAGE, read).unwrap();
        assert!(!joined);
        assert_eq!(page, whole);
    }

    #[test]
    fn small_rests_are_not_cut() {
        let reader = ProjectHtmlReader::default();
        assert!(reader.split_points(PAGE, PAGE.len(), 8).is_empty());
        assert_eq!(reader.split_points(PAGE, 1, 3).len(), 2);
    }
}
