//! A large page's last step on every parser thread: what is left of it cut at `<a` tags into
//! pieces, each read and grouped by whichever thread takes it next, while this one reads the
//! first (`HtmlTail` in the resolver says when the pieces join, and the page is the same either
//! way).
//!
//! A cold torch page mostly arrives before the parser threads get a core (the connection's
//! thread and the upstream take both while the bytes come in), so the finishing step parses
//! most of the page. Cut in two halves, the second waited for the other thread, busy with
//! PyPI's smaller page, and then often ran alone at the end while the first thread idled (up to
//! a millisecond, in `perf` timelines of fresh servers). Cut in pieces that the threads take in
//! turn, they end within a piece of each other, whichever was busy first.
//!
//! Nothing waits on a thread that may never come: this thread takes pieces in turn too, and at
//! the end waits only for pieces another thread has started.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use wheelgate_resolver::index::{HtmlTail, ProjectHtmlReader};
use wheelgate_resolver::select::FileGroups;

use super::{Parsing, group_rest};
use crate::cache::index::stored::StoredPage;
use crate::cpu_pool::CpuPool;
use crate::sync::lock;

/// The least a piece holds: each costs a round trip to another thread (a few tens of
/// microseconds) and a grouping of its own, joined here; a piece this size parses in about
/// 0.15 ms in a fresh server.
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
        parsers.spawn(move || pieces.take_turns());
    }
    reader.read_until(body, first);
    let mut head_groups = groups;
    if let Some(groups) = &mut head_groups {
        group_rest(groups, reader.files());
    }
    pieces.take_turns();
    let (read, piece_groups): (Vec<HtmlTail>, Vec<Option<FileGroups>>) =
        pieces.collect().into_iter().unzip();
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

/// The pieces of one page after the first, each read by whichever thread takes it first.
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

    /// Reads the next piece no thread has taken, until none is left.
    fn take_turns(&self) {
        loop {
            let at = {
                let mut state = lock(&self.state);
                let Some(at) = state
                    .iter()
                    .position(|piece| matches!(piece, Piece::Waiting))
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

    /// On the page's thread, once it found no piece left to take: every piece in page order,
    /// waiting for those another thread is reading (one whose read panicked is read here).
    fn collect(&self) -> Vec<PieceParsed> {
        let mut collected = Vec::with_capacity(self.starts.len());
        let mut state = lock(&self.state);
        for at in 0..self.starts.len() {
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
                    // Put back after a panic (or, never, taken twice): read here.
                    Piece::Waiting | Piece::Taken => {
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

    /// Pieces all taken by the page's thread before another thread came read the same, and the
    /// other thread then does nothing; pieces never taken (as after a panic) are read by
    /// `collect` itself.
    #[test]
    fn pieces_not_started_elsewhere_are_read_by_the_page_thread() {
        let body = wheelgate_testdata::torch_page_html();
        let reader = ProjectHtmlReader::default();
        let starts = reader.split_points(&body, PIECE_BYTES, 4);
        assert_eq!(starts.len(), 3);
        let taken = Pieces::new(stored(&body), starts.clone(), true);
        taken.take_turns();
        let read = taken.collect();
        taken.take_turns();
        assert!(
            lock(&taken.state)
                .iter()
                .all(|piece| matches!(piece, Piece::Taken))
        );
        let never_taken = Pieces::new(stored(&body), starts, true);
        let read_in_collect = never_taken.collect();
        assert_eq!(read.len(), 3);
        for ((piece, groups), (again, _)) in read.iter().zip(&read_in_collect) {
            assert!(!piece.files().is_empty());
            assert_eq!(piece.files(), again.files());
            assert_eq!(
                groups.as_ref().map(FileGroups::len),
                Some(piece.files().len())
            );
        }
    }
}
