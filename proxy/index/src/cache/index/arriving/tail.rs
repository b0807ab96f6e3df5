//! A large page's last step on every parser thread: what is left of it cut at `<a` tags into
//! pieces. This thread's reader goes on through them from the front, the other threads take
//! them from the end, each reading and grouping its piece on its own, until the two meet
//! (`HtmlTail` in the resolver says when the pieces join, and the page is the same either way).
//! The pieces read here need no joining: only the others' files are moved into the page.
//!
//! A cold torch page mostly arrives before the parser threads get a core (the connection's
//! thread and the upstream take both while the bytes come in), so the finishing step parses
//! most of the page. Cut in two halves, the second waited for the other thread, busy with
//! PyPI's smaller page, and then often ran alone at the end while the first thread idled (up to
//! a millisecond, in `perf` timelines of fresh servers). Cut in pieces, read from the front here
//! and from the end elsewhere, the threads end within a piece of each other, whichever was busy
//! first. (Taken in turn from the front by every thread, seven pieces of the torch page's eight
//! were read elsewhere, and their files, moved into the page on this thread, cost 0.16 to
//! 0.29 ms at the end.)
//!
//! Nothing waits on a thread that may never come: this thread reads every piece no other thread
//! took, and at the end waits only for pieces another thread has started.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use wheelgate_resolver::index::{HtmlTail, ProjectHtmlReader};
use wheelgate_resolver::select::FileGroups;

use super::{Parsing, group_rest};
use crate::cache::index::stored::StoredPage;
use crate::cpu_pool::CpuPool;
use crate::sync::lock;

/// The least a piece holds: one read elsewhere costs a round trip to another thread (a few
/// tens of microseconds) and a grouping of its own, joined here; a piece this size parses in
/// about 0.15 ms in a fresh server.
const PIECE_BYTES: usize = 64 * 1024;

/// The most pieces per parser thread: enough that the threads end within a small piece of each
/// other, however busy each was when the rest was cut.
const PIECES_PER_THREAD: usize = 4;

/// The page `reader` read so far, finished from `stored` (its whole body): what is left cut
/// into pieces read on every one of `parsers` when it is large, and grouped when `groups` is.
pub(super) fn finish(
    mut reader: ProjectHtmlReader,
    stored: &Arc<StoredPage>,
    groups: Option<FileGroups>,
    parsers: &CpuPool,
) -> Parsing {
    let body = &stored.body;
    let threads = parsers.threads();
    let points = if threads > 1 {
        reader.split_points(body, PIECE_BYTES, PIECES_PER_THREAD * threads)
    } else {
        Vec::new()
    };
    let Some(&first) = points.first() else {
        return finish_here(reader, body, groups);
    };
    let pieces = Arc::new(Pieces::new(Arc::clone(stored), points, groups.is_some()));
    for _ in 1..threads {
        let pieces = Arc::clone(&pieces);
        parsers.spawn(move || pieces.take_from_the_end());
    }
    reader.read_until(body, first);
    let mut head_groups = groups;
    if let Some(groups) = &mut head_groups {
        group_rest(groups, reader.files());
    }
    // The page's reader reads on through each next piece no other thread took; the last one,
    // when it gets there, is read by the finish.
    let mut here = 0;
    while pieces.take_here(here) {
        here += 1;
        if let Some(&next) = pieces.starts.get(here) {
            reader.read_until(body, next);
            if let Some(groups) = &mut head_groups {
                group_rest(groups, reader.files());
            }
        }
    }
    let (read, piece_groups): (Vec<HtmlTail>, Vec<Option<FileGroups>>) =
        pieces.collect_from(here).into_iter().unzip();
    let (page, joined) = reader.finish_with(body, read)?;
    let groups = match head_groups {
        Some(mut head) if joined => {
            for piece in piece_groups.into_iter().flatten() {
                head.append(piece);
            }
            Some(head)
        }
        Some(mut groups) => {
            group_rest(&mut groups, &page.files);
            Some(groups)
        }
        None => None,
    };
    Ok((page, groups))
}

/// The page finished on this thread alone.
fn finish_here(reader: ProjectHtmlReader, body: &str, groups: Option<FileGroups>) -> Parsing {
    reader.finish(body).map(|page| {
        let groups = groups.map(|mut groups| {
            group_rest(&mut groups, &page.files);
            groups
        });
        (page, groups)
    })
}

/// The pieces of one page after the first: the page's reader takes them from the front, the
/// other threads from the end.
struct Pieces {
    stored: Arc<StoredPage>,
    /// Where each piece starts; each runs to the next one's start, the last to the page's end.
    starts: Vec<usize>,
    grouped: bool,
    state: Mutex<Vec<Piece>>,
    done: Condvar,
}

type PieceParsed = (HtmlTail, Option<FileGroups>);

enum Piece {
    Waiting,
    /// Read by the page's own reader.
    Here,
    Reading,
    Read(Box<PieceParsed>),
    Taken,
}

impl Pieces {
    fn new(stored: Arc<StoredPage>, starts: Vec<usize>, grouped: bool) -> Pieces {
        let state = starts.iter().map(|_| Piece::Waiting).collect();
        Pieces {
            stored,
            starts,
            grouped,
            state: Mutex::new(state),
            done: Condvar::new(),
        }
    }

    /// On the page's thread: takes piece `at`, the one after those its reader read, unless
    /// another thread has.
    fn take_here(&self, at: usize) -> bool {
        let mut state = lock(&self.state);
        match state.get_mut(at) {
            Some(piece @ Piece::Waiting) => {
                *piece = Piece::Here;
                true
            }
            _ => false,
        }
    }

    /// On another thread: reads the last piece no thread has taken, until none is left.
    fn take_from_the_end(&self) {
        loop {
            let at = {
                let mut state = lock(&self.state);
                let Some(at) = state
                    .iter()
                    .rposition(|piece| matches!(piece, Piece::Waiting))
                else {
                    return;
                };
                state[at] = Piece::Reading;
                at
            };
            // A read that panics leaves its piece to the page's thread, which reads it again.
            let _unwinding = AgainOnPanic(self, at);
            let read = self.read(at);
            lock(&self.state)[at] = Piece::Read(Box::new(read));
            self.done.notify_all();
        }
    }

    fn read(&self, at: usize) -> PieceParsed {
        let piece = HtmlTail::read(
            &self.stored.body,
            self.starts[at],
            self.starts.get(at + 1).copied(),
        );
        let groups = self.grouped.then(|| {
            let mut groups = FileGroups::default();
            group_rest(&mut groups, piece.files());
            groups
        });
        (piece, groups)
    }

    /// On the page's thread, once another thread had taken its next piece (or none was left):
    /// the pieces from `from` on in page order, waiting for those another thread is reading
    /// (one never read, as after a panic, is read here).
    fn collect_from(&self, from: usize) -> Vec<PieceParsed> {
        let mut collected = Vec::with_capacity(self.starts.len().saturating_sub(from));
        let mut state = lock(&self.state);
        for at in from..self.starts.len() {
            loop {
                match std::mem::replace(&mut state[at], Piece::Taken) {
                    Piece::Read(read) => {
                        collected.push(*read);
                        break;
                    }
                    Piece::Reading => {
                        state[at] = Piece::Reading;
                        state = self
                            .done
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    // Put back after a panic (or, never, taken twice or read here): read here.
                    Piece::Waiting | Piece::Here | Piece::Taken => {
                        drop(state);
                        collected.push(self.read(at));
                        state = lock(&self.state);
                        break;
                    }
                }
            }
        }
        collected
    }
}

/// Puts a piece whose read panicked back to waiting, and wakes the page's thread to read it.
struct AgainOnPanic<'a>(&'a Pieces, usize);

impl Drop for AgainOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        lock(&self.0.state)[self.1] = Piece::Waiting;
        self.0.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wheelgate_resolver::select::{FileRef, select_grouped, select_page};

    fn stored(body: &str) -> Arc<StoredPage> {
        Arc::new(StoredPage {
            url: "http://upstream.test/whl/torch/".to_string(),
            content_type: "text/html".to_string(),
            body: body.to_string(),
            etag: None,
            last_modified: None,
            fetched_at_secs: 0,
            moved_to: None,
        })
    }

    /// The real-size torch page finished in pieces (after none, or a third, of it was read as
    /// it arrived), on one parser thread, two and three: the page parsed whole, and grouped so
    /// that a machine gets what a selection of the whole page gives it.
    #[test]
    fn a_large_rest_finished_in_pieces_is_the_page_parsed_whole() {
        let body = wheelgate_testdata::torch_page_html();
        let stored = stored(&body);
        let whole = super::super::parse(&stored).unwrap();
        let refs: Vec<FileRef<'_>> = whole.files.iter().map(FileRef::from).collect();
        let machine: wheelgate_resolver::Machine = serde_json::from_str(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
        )
        .unwrap();
        let (catalog, policy) = (
            wheelgate_resolver::Catalog::embedded(),
            wheelgate_resolver::Policy::default(),
        );
        let selected_whole = format!(
            "{:?}",
            select_page(catalog, &machine, &policy, "torch", &refs)
        );
        for threads in [1, 2, 3] {
            let parsers = CpuPool::start("test-tail", threads, || {}).unwrap();
            for first in [0, body.len() / 3] {
                let mut reader = ProjectHtmlReader::default();
                reader.read(&body[..first]);
                let mut groups = FileGroups::default();
                group_rest(&mut groups, reader.files());
                let points = reader.split_points(&body, PIECE_BYTES, PIECES_PER_THREAD * threads);
                assert!(points.len() >= threads, "{points:?}");
                let (page, groups) = finish(reader, &stored, Some(groups), &parsers).unwrap();
                assert_eq!(page, whole, "{threads} threads, {first} bytes read first");
                let groups = groups.expect("asked to be grouped");
                assert_eq!(groups.len(), whole.files.len());
                let selected = select_grouped(catalog, &machine, &policy, "torch", &refs, &groups);
                assert_eq!(format!("{selected:?}"), selected_whole, "{threads} threads");
            }
        }
    }

    /// The page's reader takes pieces from the front, another thread from the end, until they
    /// meet; pieces no thread took (as after a panic) are read by `collect_from` itself.
    #[test]
    fn pieces_are_taken_from_both_ends_and_the_rest_read_here() {
        let body = wheelgate_testdata::torch_page_html();
        let reader = ProjectHtmlReader::default();
        let starts = reader.split_points(&body, PIECE_BYTES, 4);
        assert_eq!(starts.len(), 3);
        let pieces = Pieces::new(stored(&body), starts.clone(), true);
        assert!(pieces.take_here(0));
        pieces.take_from_the_end();
        assert!(!pieces.take_here(1), "the other thread took the rest");
        let elsewhere = pieces.collect_from(1);
        pieces.take_from_the_end();
        assert!(matches!(lock(&pieces.state)[0], Piece::Here));
        let never_taken = Pieces::new(stored(&body), starts, true);
        let read_in_collect = never_taken.collect_from(0);
        assert_eq!((elsewhere.len(), read_in_collect.len()), (2, 3));
        for ((piece, groups), (again, _)) in elsewhere.iter().zip(&read_in_collect[1..]) {
            assert!(!piece.files().is_empty());
            assert_eq!(piece.files(), again.files());
            assert_eq!(
                groups.as_ref().map(FileGroups::len),
                Some(piece.files().len())
            );
        }
    }
}
