//! An upstream HTML page parsed while it arrives. A real-size download.pytorch.org page
//! (0.7 MB, 2,649 links) takes about as long to arrive as to parse; parsed chunk by chunk on the
//! parser threads while the connection's thread goes on reading, it is parsed by the time its
//! last bytes land, instead of parsing starting only then.
//!
//! The connection's thread only queues each chunk (and, when no read of this page is under way,
//! starts one on the parser threads): parsing there would leave the sockets of the other pages
//! of the request unread (see `cpu_pool.rs`). A read takes every chunk queued and parses as far
//! as the text goes; the last step, once the whole body is in, finishes the page.
//!
//! The finish is queued like a chunk, and taken by the read under way when there is one. A
//! finish that ran as a job of its own waited there for that read to end, holding a parser
//! thread idle: the other page of a merged request (PyPI's torch page beside PyTorch's) then
//! waited for it in the queue, and was parsed only after the torch page, a millisecond later.
//!
//! PyPI's JSON pages are parsed whole, as before, on the parser threads; a small one (under
//! [`FINISH_HERE_BYTES`]) on the connection's thread, where it costs less than the round trip.
//!
//! A page whose project is selected is also grouped (`FileGroups`, the per-file part of a
//! selection) where it is parsed, piece by piece right after each piece is read, while its
//! files are still in the parser thread's cache. The connection's thread then only decides per
//! version: 0.4 ms for the torch page instead of 1.5 for a whole selection, on every machine's
//! first request for a cached page. (A cold page gains nothing: during its arrival the parser
//! threads have no idle core, so the work moved there is still on its critical path.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wheelgate_resolver::index::{IndexFile, IndexParseError, ProjectHtmlReader, ProjectPage};
use wheelgate_resolver::select::{FileGroups, FileRef};

use super::parse;
use super::stored::StoredPage;
use crate::cpu_pool::CpuPool;
use crate::sync::lock;
use crate::upstream::{ArrivingText, BodyReader, PageBody};

mod tail;

/// A page not read as it arrived (JSON) and at most this large is parsed on the thread that
/// fetched it: a round trip to the parser threads costs more than parsing it (about 0.1 ms).
const FINISH_HERE_BYTES: usize = 64 * 1024;

/// How far a read of arrived text goes before it looks whether the body's end came: about
/// 0.15 ms of parsing in a fresh server, against the page's millisecond and more.
const READ_STEP_BYTES: usize = 64 * 1024;

/// What an answer's body read as it arrived.
pub(super) struct ArrivingPage {
    parsers: Option<CpuPool>,
    /// Whether the page is grouped for selection too.
    grouped: bool,
    /// The current attempt's HTML body, read on `parsers`; `None` for JSON or without them.
    html: Option<Arc<Reading>>,
}

/// One answer's HTML body, shared between the connection's thread (which queues chunks) and
/// the parser threads (which read them).
struct Reading {
    /// The threads it is read on (the last step may take two of them, `tail.rs`).
    parsers: CpuPool,
    queued: Mutex<Queued>,
    parsed: Mutex<Parsed>,
    /// Set when the body is finished or a retry replaced it: a read still queued does nothing.
    done: AtomicBool,
}

#[derive(Default)]
struct Queued {
    chunks: Vec<Bytes>,
    /// Whether a read is queued or under way; it takes chunks queued meanwhile before it ends.
    reading: bool,
    /// The whole body, once in, and where its page goes: the read takes it last.
    finish: Option<Finish>,
}

struct Finish {
    /// The answer without its body, which the read's text becomes.
    shell: StoredPage,
    page: tokio::sync::oneshot::Sender<(Arc<StoredPage>, Parsing)>,
}

struct Parsed {
    text: ArrivingText,
    reader: ProjectHtmlReader,
    /// The files read so far, grouped; `None` when the page is not grouped.
    groups: Option<FileGroups>,
}

/// A page parsed, and grouped when it was asked to be.
pub(super) type ParsedPage = (ProjectPage, Option<FileGroups>);

type Parsing = Result<ParsedPage, IndexParseError>;

impl ArrivingPage {
    /// A page to be read on `parsers` as it arrives; without them, parsed whole once in.
    pub(super) fn new(parsers: Option<CpuPool>, grouped: bool) -> ArrivingPage {
        ArrivingPage {
            parsers,
            grouped,
            html: None,
        }
    }

    /// The answer (`shell`, its body apart) made whole and parsed. A body read as it arrived
    /// ([`PageBody::Chunks`]) is finished on the parser threads, where its text already is, and
    /// comes back as the stored page's body; a whole one is parsed there or here by its size.
    pub(super) async fn finish(
        mut self,
        shell: StoredPage,
        body: PageBody,
    ) -> (Arc<StoredPage>, Parsing) {
        let grouped = self.grouped;
        let parsers = self.parsers.take();
        let reading = self.html.take();
        let chunks = match body {
            PageBody::Text(text) => {
                if let Some(reading) = &reading {
                    reading.done.store(true, Ordering::Relaxed);
                }
                let stored = Arc::new(StoredPage {
                    body: text,
                    ..shell
                });
                let parsed = parse_whole(parsers.as_ref(), &stored, grouped).await;
                return (stored, parsed);
            }
            PageBody::Chunks(chunks) => chunks,
        };
        let (Some(parsers), Some(reading)) = (parsers, reading) else {
            // Kept for a reader that is gone: made whole here.
            let body = PageBody::Chunks(chunks).into_text();
            let stored = Arc::new(StoredPage { body, ..shell });
            return (Arc::clone(&stored), parse_grouped(&stored, grouped));
        };
        // The shell has no body: a copy of it is a few short strings.
        let fallback = shell.clone();
        let (page, parsed) = tokio::sync::oneshot::channel();
        let start = {
            let mut queued = lock(&reading.queued);
            queued.finish = Some(Finish { shell, page });
            !std::mem::replace(&mut queued.reading, true)
        };
        if start {
            let reading = Arc::clone(&reading);
            parsers.spawn(move || reading.read_queued());
        }
        if let Ok(done) = parsed.await {
            return done;
        }
        // The read panicked: the body made whole from its chunks, and parsed again.
        let stored = Arc::new(StoredPage {
            body: PageBody::Chunks(chunks).into_text(),
            ..fallback
        });
        let parsed = {
            let stored = Arc::clone(&stored);
            parsers.run(move || parse_grouped(&stored, grouped)).await
        };
        (stored, parsed)
    }
}

/// `stored` parsed whole: here when it is small or there are no parser threads, else there.
async fn parse_whole(
    parsers: Option<&CpuPool>,
    stored: &Arc<StoredPage>,
    grouped: bool,
) -> Parsing {
    match parsers {
        Some(parsers) if stored.body.len() > FINISH_HERE_BYTES => {
            let stored = Arc::clone(stored);
            parsers.run(move || parse_grouped(&stored, grouped)).await
        }
        _ => parse_grouped(stored, grouped),
    }
}

impl Drop for ArrivingPage {
    /// A body never finished (the fetch failed, timed out or was refused): reads still queued
    /// for it do nothing.
    fn drop(&mut self) {
        if let Some(reading) = &self.html {
            reading.done.store(true, Ordering::Relaxed);
        }
    }
}

impl BodyReader for ArrivingPage {
    fn begin(&mut self, content_type: &str, length: Option<usize>) {
        if let Some(old) = self.html.take() {
            old.done.store(true, Ordering::Relaxed);
        }
        if let Some(parsers) = self
            .parsers
            .as_ref()
            .filter(|_| !super::is_json(content_type))
        {
            self.html = Some(Arc::new(Reading {
                parsers: parsers.clone(),
                queued: Mutex::default(),
                parsed: Mutex::new(Parsed {
                    // Its whole length at once, where it was announced: no copies as it grows.
                    text: ArrivingText::with_capacity(length.unwrap_or(0)),
                    reader: ProjectHtmlReader::for_length(length.unwrap_or(0)),
                    groups: self.grouped.then(FileGroups::default),
                }),
                done: AtomicBool::new(false),
            }));
        }
    }

    fn keeps_text(&self) -> bool {
        self.html.is_some()
    }

    fn arrived(&mut self, chunk: &Bytes) {
        let (Some(reading), Some(parsers)) = (&self.html, &self.parsers) else {
            return;
        };
        let start = {
            let mut queued = lock(&reading.queued);
            queued.chunks.push(chunk.clone());
            !std::mem::replace(&mut queued.reading, true)
        };
        if start {
            let reading = Arc::clone(reading);
            parsers.spawn(move || reading.read_queued());
        }
    }
}

impl Reading {
    /// Takes the queued chunks and parses as far as they go, until none is left; finishes the
    /// page when its whole body is in.
    fn read_queued(&self) {
        let _unwinding = AbandonedOnPanic(self);
        let mut parsed = lock(&self.parsed);
        let Parsed {
            text,
            reader,
            groups,
        } = &mut *parsed;
        loop {
            if self.done.load(Ordering::Relaxed) {
                let mut queued = lock(&self.queued);
                queued.reading = false;
                // A finish queued after a read panicked: its waiter parses the body whole.
                queued.finish = None;
                return;
            }
            let chunks = {
                let mut queued = lock(&self.queued);
                if let Some(finish) = queued.finish.take() {
                    queued.reading = false;
                    let rest = std::mem::take(&mut queued.chunks);
                    drop(queued);
                    self.done.store(true, Ordering::Relaxed);
                    // The text, with the chunks still queued, is the whole body: the stored
                    // page's, which the reader reads on from where it stopped.
                    for chunk in &rest {
                        text.push(chunk);
                    }
                    let body = std::mem::replace(text, ArrivingText::with_capacity(0)).finish();
                    let stored = Arc::new(StoredPage {
                        body,
                        ..finish.shell
                    });
                    let page = tail::finish(
                        std::mem::take(reader),
                        &stored,
                        groups.take(),
                        &self.parsers,
                    );
                    // Nobody waits for it when the request went away meanwhile.
                    let _ = finish.page.send((stored, page));
                    return;
                }
                if queued.chunks.is_empty() {
                    queued.reading = false;
                    return;
                }
                std::mem::take(&mut queued.chunks)
            };
            for chunk in &chunks {
                text.push(chunk);
            }
            // Text that is not UTF-8 is left to the end, which reads the body as the fetch
            // decoded it.
            if let Some(so_far) = text.so_far() {
                // In steps: when the body's end comes while a burst of chunks is read, what is
                // left of them is cut for every parser thread (`tail.rs`) rather than read on
                // here alone.
                while reader.read_step(so_far, READ_STEP_BYTES) {
                    if let Some(groups) = groups.as_mut() {
                        group_rest(groups, reader.files());
                    }
                    if self.finish_queued() {
                        break;
                    }
                }
                if let Some(groups) = groups {
                    group_rest(groups, reader.files());
                }
            }
        }
    }

    fn finish_queued(&self) -> bool {
        lock(&self.queued).finish.is_some()
    }
}

/// Groups the files of `files` (the page so far) after those grouped already.
fn group_rest(groups: &mut FileGroups, files: &[IndexFile]) {
    let rest: Vec<FileRef<'_>> = files
        .get(groups.len()..)
        .unwrap_or_default()
        .iter()
        .map(FileRef::from)
        .collect();
    groups.add(&rest);
}

/// `stored` parsed whole, and grouped when `grouped`.
fn parse_grouped(stored: &StoredPage, grouped: bool) -> Parsing {
    let page = parse(stored)?;
    let groups = grouped.then(|| {
        let mut groups = FileGroups::default();
        group_rest(&mut groups, &page.files);
        groups
    });
    Ok((page, groups))
}

/// Ends a read that panicked so that nothing waits on it: later reads do nothing, and a finish
/// queued is dropped (its waiter parses the whole body instead).
struct AbandonedOnPanic<'a>(&'a Reading);

impl Drop for AbandonedOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.done.store(true, Ordering::Relaxed);
            let mut queued = lock(&self.0.queued);
            queued.reading = false;
            queued.finish = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(content_type: &str, body: &str) -> Arc<StoredPage> {
        Arc::new(StoredPage {
            body: body.to_string(),
            ..shell(content_type)
        })
    }

    /// An answer without its body, as the fetch hands it to `finish`.
    fn shell(content_type: &str) -> StoredPage {
        StoredPage {
            url: "http://upstream.test/whl/torch/".to_string(),
            content_type: content_type.to_string(),
            body: String::new(),
            etag: None,
            last_modified: None,
            fetched_at_secs: 0,
            moved_to: None,
        }
    }

    fn chunks(body: &str, size: usize) -> Vec<Bytes> {
        body.as_bytes()
            .chunks(size)
            .map(Bytes::copy_from_slice)
            .collect()
    }

    /// `body` fed in chunks of `size` (after a first attempt cut short, which a retry replaces)
    /// and finished, grouped, on `parsers`.
    async fn read_in_chunks(parsers: &CpuPool, body: &str, size: usize) -> ParsedPage {
        let mut page = ArrivingPage::new(Some(parsers.clone()), true);
        page.begin("text/html", None);
        for chunk in body.as_bytes().chunks(size).take(3) {
            page.arrived(&Bytes::copy_from_slice(chunk));
        }
        page.begin("text/html", None);
        assert!(page.keeps_text(), "an HTML page read on the parser threads");
        let arrived = chunks(body, size);
        for chunk in &arrived {
            page.arrived(chunk);
            // Some steps wait for the parser threads to catch up, some do not.
            if chunk.len() % 3 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let (stored, parsed) = page
            .finish(shell("text/html"), PageBody::Chunks(arrived))
            .await;
        // The text the read kept is the stored page's body.
        assert_eq!(stored.body, body);
        parsed.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_read_as_it_arrives_is_the_page_parsed_whole() {
        let parsers = CpuPool::start("test-parse", 2, || {}).unwrap();
        let body = wheelgate_testdata::torch_page_html();
        let whole = parse(&stored("text/html", &body)).unwrap();
        assert!(whole.files.len() > 2000);
        let refs: Vec<FileRef<'_>> = whole.files.iter().map(FileRef::from).collect();
        let machine: wheelgate_resolver::Machine = serde_json::from_str(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
        )
        .unwrap();
        let select = |groups: Option<&FileGroups>| {
            let (catalog, policy) = (
                wheelgate_resolver::Catalog::embedded(),
                wheelgate_resolver::Policy::default(),
            );
            let selection = match groups {
                Some(groups) => wheelgate_resolver::select::select_grouped(
                    catalog, &machine, &policy, "torch", &refs, groups,
                ),
                None => wheelgate_resolver::select::select_page(
                    catalog, &machine, &policy, "torch", &refs,
                ),
            };
            format!("{selection:?}")
        };
        let selected_whole = select(None);
        for size in [1_000, 7_919, 65_536, body.len()] {
            let (page, groups) = read_in_chunks(&parsers, &body, size).await;
            assert_eq!(page, whole, "chunks of {size}");
            // Grouped as it arrived: the whole page's files, selected as the whole page is.
            let groups = groups.expect("asked to be grouped");
            assert_eq!(groups.len(), whole.files.len(), "chunks of {size}");
            assert_eq!(select(Some(&groups)), selected_whole, "chunks of {size}");
        }
    }

    /// The finish of a page whose read is queued goes with that read: no job of its own waits
    /// on a parser thread for the read to end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_finish_is_taken_by_the_read_under_way() {
        let parsers = CpuPool::start("test-parse", 1, || {}).unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        parsers.spawn(move || {
            let _ = held.recv();
        });
        let body = wheelgate_testdata::torch_page_html();
        let mut page = ArrivingPage::new(Some(parsers.clone()), false);
        page.begin("text/html", Some(body.len()));
        let arrived = chunks(&body, 100_000);
        for chunk in &arrived {
            page.arrived(chunk);
        }
        let reading = Arc::clone(page.html.as_ref().unwrap());
        let finishing = tokio::spawn(async move {
            page.finish(shell("text/html"), PageBody::Chunks(arrived))
                .await
        });
        while lock(&reading.queued).finish.is_none() {
            tokio::task::yield_now().await;
        }
        assert!(lock(&reading.queued).reading, "the read is still queued");
        release.send(()).unwrap();
        let (stored, parsed) = finishing.await.unwrap();
        assert_eq!(stored.body, body);
        // Of its announced length: sized once, never grown.
        assert_eq!(stored.body.capacity(), body.len());
        let (finished, groups) = parsed.unwrap();
        assert_eq!(finished, parse(&stored).unwrap());
        assert!(groups.is_none(), "not asked to be grouped");
        assert!(lock(&reading.queued).finish.is_none());
    }

    #[tokio::test]
    async fn json_and_pages_without_parser_threads_are_parsed_whole() {
        let json = r#"{"meta":{"api-version":"1.1"},"name":"demo","files":[{"filename":"demo-1.0.tar.gz","url":"https://f.test/demo-1.0.tar.gz","hashes":{}}]}"#;
        let parsers = CpuPool::start("test-parse", 1, || {}).unwrap();
        let mut page = ArrivingPage::new(Some(parsers), true);
        page.begin("application/vnd.pypi.simple.v1+json", None);
        page.arrived(&Bytes::from_static(json.as_bytes()));
        assert!(page.html.is_none(), "JSON is not read as it arrives");
        assert!(!page.keeps_text(), "the fetch keeps a JSON page's text");
        let (stored, parsed) = page
            .finish(
                shell("application/vnd.pypi.simple.v1+json"),
                PageBody::Text(json.to_string()),
            )
            .await;
        assert_eq!(stored.body, json);
        let (json_page, groups) = parsed.unwrap();
        assert_eq!(json_page.files[0].filename, "demo-1.0.tar.gz");
        assert_eq!(groups.map(|groups| groups.len()), Some(1), "grouped whole");

        let html = "<a href=\"/f/demo-1.0.tar.gz\">demo-1.0.tar.gz</a>";
        let mut page = ArrivingPage::new(None, true);
        page.begin("text/html", None);
        page.arrived(&Bytes::from_static(html.as_bytes()));
        assert!(!page.keeps_text(), "no parser threads read it");
        let (_, parsed) = page
            .finish(shell("text/html"), PageBody::Text(html.to_string()))
            .await;
        let (html_page, groups) = parsed.unwrap();
        assert_eq!(html_page.files[0].filename, "demo-1.0.tar.gz");
        assert_eq!(groups.map(|groups| groups.len()), Some(1), "grouped whole");
    }

    /// A read that ends without finishing (a panic in it) loses nothing: the body is made
    /// whole from the chunks the fetch kept, and parsed again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_whose_read_was_abandoned_is_made_whole_from_its_chunks() {
        let parsers = CpuPool::start("test-parse", 1, || {}).unwrap();
        let body = wheelgate_testdata::torch_page_html();
        let mut page = ArrivingPage::new(Some(parsers), true);
        page.begin("text/html", Some(body.len()));
        let arrived = chunks(&body, 65_536);
        for chunk in &arrived {
            page.arrived(chunk);
        }
        // What a panic in the read leaves (`AbandonedOnPanic`).
        page.html
            .as_ref()
            .unwrap()
            .done
            .store(true, Ordering::Relaxed);
        let (stored, parsed) = page
            .finish(shell("text/html"), PageBody::Chunks(arrived))
            .await;
        assert_eq!(stored.body, body);
        let (finished, groups) = parsed.unwrap();
        assert_eq!(finished, parse(&stored).unwrap());
        assert_eq!(
            groups.map(|groups| groups.len()),
            Some(finished.files.len())
        );
    }
}
