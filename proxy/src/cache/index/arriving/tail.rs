//! A large page's last step on two parser threads: the tail of what is left, from an `<a` tag
//! about halfway, read and grouped on the other thread while this one reads up to it
//! (`HtmlTail` in the resolver says when the two join, and the page is the same either way).
//!
//! A cold torch page mostly arrives before the parser threads get a core (the connection's
//! thread and the upstream take both while the bytes come in), so the finishing step parses
//! most of the page, on one thread, while the other, done with PyPI's smaller page, waits.
//! With the tail on the other thread the halves run side by side (in a loop, 1.04 ms for the
//! real-size page against 1.25 whole: the tail's files, made there, are moved and later freed
//! across threads; in fresh servers the two parsers' CPU times came out even).
//!
//! Nothing waits on a thread that may never come: when this thread is done with its part and
//! the tail has not started (the other thread is busy, or there is only one), it reads the
//! tail itself.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use wheelgate_resolver::index::{HtmlTail, ProjectHtmlReader};
use wheelgate_resolver::select::FileGroups;

use super::{Parsing, group_rest};
use crate::cache::index::stored::StoredPage;
use crate::cpu_pool::CpuPool;
use crate::sync::lock;

/// What is left of a page is split when at least this much is: the tail's round trip to the
/// other thread (a few tens of microseconds) against half of what is left (a millisecond for
/// a third of a megabyte, in a fresh server).
const SPLIT_FROM_BYTES: usize = 128 * 1024;

/// The page `reader` read so far, finished from `stored` (its whole body): the tail of what is
/// left on another of `parsers` when that is large, and grouped when `groups` is.
pub(super) fn finish(
    mut reader: ProjectHtmlReader,
    stored: &Arc<StoredPage>,
    groups: Option<FileGroups>,
    parsers: &CpuPool,
) -> Parsing {
    let body = &stored.body;
    let Some(from) = reader.split_point(body, SPLIT_FROM_BYTES) else {
        return finish_here(reader, body, groups);
    };
    let tail = Arc::new(TailRead {
        stored: Arc::clone(stored),
        from,
        grouped: groups.is_some(),
        state: Mutex::new(State::Waiting),
        done: Condvar::new(),
    });
    {
        let tail = Arc::clone(&tail);
        parsers.spawn(move || tail.run());
    }
    reader.read_until(body, from);
    let mut head_groups = groups;
    if let Some(groups) = &mut head_groups {
        group_rest(groups, reader.files());
    }
    let (tail, tail_groups) = tail.take();
    let (page, joined) = reader.finish_with(body, tail)?;
    let groups = match (head_groups, tail_groups) {
        (Some(mut head), Some(tail)) if joined => {
            head.append(tail);
            Some(head)
        }
        (Some(mut groups), _) => {
            group_rest(&mut groups, &page.files);
            Some(groups)
        }
        (None, _) => None,
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

/// The tail of one page, read by whichever thread comes first.
struct TailRead {
    stored: Arc<StoredPage>,
    from: usize,
    grouped: bool,
    state: Mutex<State>,
    done: Condvar,
}

type TailParsed = (HtmlTail, Option<FileGroups>);

enum State {
    Waiting,
    Reading,
    Read(Box<TailParsed>),
    Taken,
}

impl TailRead {
    /// On the other thread: reads the tail unless the page's thread took it already.
    fn run(&self) {
        {
            let mut state = lock(&self.state);
            if !matches!(*state, State::Waiting) {
                return;
            }
            *state = State::Reading;
        }
        // A read that panics leaves the tail to the page's thread, which reads it again.
        let _unwinding = AgainOnPanic(self);
        let read = self.read();
        *lock(&self.state) = State::Read(Box::new(read));
        self.done.notify_all();
    }

    fn read(&self) -> TailParsed {
        let tail = HtmlTail::read(&self.stored.body, self.from);
        let groups = self.grouped.then(|| {
            let mut groups = FileGroups::default();
            group_rest(&mut groups, tail.files());
            groups
        });
        (tail, groups)
    }

    /// On the page's thread: the tail, read here when no other thread started it, else as soon
    /// as that thread is done.
    fn take(&self) -> TailParsed {
        let mut state = lock(&self.state);
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Reading => {
                    *state = State::Reading;
                    state = self
                        .done
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                State::Read(read) => return *read,
                // Not started (or, never, taken twice): read here.
                State::Waiting | State::Taken => {
                    drop(state);
                    return self.read();
                }
            }
        }
    }
}

/// Puts a tail whose read panicked back to waiting, and wakes the page's thread to read it.
struct AgainOnPanic<'a>(&'a TailRead);

impl Drop for AgainOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        *lock(&self.0.state) = State::Waiting;
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

    /// The real-size torch page finished in two halves (after none, or a third, of it was read
    /// as it arrived), on one parser thread and on two: the page parsed whole, and grouped so
    /// that a machine gets what a selection of the whole page gives it.
    #[test]
    fn a_large_rest_finished_in_two_halves_is_the_page_parsed_whole() {
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
        for threads in [1, 2] {
            let parsers = CpuPool::start("test-tail", threads, || {}).unwrap();
            for first in [0, body.len() / 3] {
                let mut reader = ProjectHtmlReader::default();
                reader.read(&body[..first]);
                let mut groups = FileGroups::default();
                group_rest(&mut groups, reader.files());
                assert!(reader.split_point(&body, SPLIT_FROM_BYTES).is_some());
                let (page, groups) = finish(reader, &stored, Some(groups), &parsers).unwrap();
                assert_eq!(page, whole, "{threads} threads, {first} bytes read first");
                let groups = groups.expect("asked to be grouped");
                assert_eq!(groups.len(), whole.files.len());
                let selected = select_grouped(catalog, &machine, &policy, "torch", &refs, &groups);
                assert_eq!(format!("{selected:?}"), selected_whole, "{threads} threads");
            }
        }
    }

    /// A tail taken by the page's thread before the other thread came reads the same, and the
    /// other thread then does nothing.
    #[test]
    fn a_tail_not_started_is_read_by_the_page_thread() {
        let body = wheelgate_testdata::torch_page_html();
        let reader = ProjectHtmlReader::default();
        let from = reader.split_point(&body, SPLIT_FROM_BYTES).unwrap();
        let tail = TailRead {
            stored: stored(&body),
            from,
            grouped: true,
            state: Mutex::new(State::Waiting),
            done: Condvar::new(),
        };
        let (read, groups) = tail.take();
        assert!(!read.files().is_empty());
        assert_eq!(groups.map(|groups| groups.len()), Some(read.files().len()));
        tail.run();
        assert!(matches!(*lock(&tail.state), State::Taken));
    }
}
