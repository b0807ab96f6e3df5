//! An upstream page parsed while it arrives. The body of a real-size download.pytorch.org page
//! (0.7 MB) takes about as long to arrive as to parse; read chunk by chunk, it is parsed by the
//! time its last bytes land, instead of parsing starting only then. HTML only: PyPI's JSON pages
//! are parsed whole, as before.

use wheelgate_resolver::index::{IndexParseError, ProjectHtmlReader, ProjectPage};

use super::parse;
use super::stored::StoredPage;
use crate::upstream::BodyReader;

/// Below this much left to parse, a page is finished on the thread that fetched it: a round
/// trip to the parser threads costs more than parsing it (about 0.1 ms).
pub(super) const FINISH_HERE_BYTES: usize = 64 * 1024;

/// What an answer's body read as it arrived.
#[derive(Default)]
pub(super) struct ArrivingPage {
    html: Option<ProjectHtmlReader>,
}

impl BodyReader for ArrivingPage {
    fn begin(&mut self, content_type: &str) {
        self.html = (!super::is_json(content_type)).then(ProjectHtmlReader::default);
    }

    fn arrived(&mut self, so_far: &str) {
        if let Some(reader) = &mut self.html {
            reader.read(so_far);
        }
    }
}

impl ArrivingPage {
    /// How many bytes of `stored` are left to parse.
    pub(super) fn rest(&self, stored: &StoredPage) -> usize {
        let taken = match &self.html {
            Some(reader) if !super::is_json(&stored.content_type) => reader.taken(),
            _ => 0,
        };
        stored.body.len().saturating_sub(taken)
    }

    /// `stored` parsed: what was read as it arrived, finished; the whole body where nothing was.
    pub(super) fn finish(self, stored: &StoredPage) -> Result<ProjectPage, IndexParseError> {
        match self.html {
            Some(reader) if !super::is_json(&stored.content_type) => reader.finish(&stored.body),
            _ => parse(stored),
        }
    }
}
