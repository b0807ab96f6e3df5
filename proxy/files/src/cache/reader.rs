//! Reading a file for one client: positioned reads of a shared handle, following a download in
//! flight until the bytes it needs are on disk (the latest of them taken from the download's
//! memory, [`super::recent`]). Each reader holds at most one chunk.

use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::watch;

use wheelgate_index::cache::read_at::read_at;

use super::download::Progress;

/// Bytes read from disk per chunk sent to a client.
const READ_CHUNK: u64 = 256 * 1024;

struct Reader {
    file: Arc<File>,
    pos: u64,
    /// Exclusive end; `None`: to the end of the file, whatever length it turns out to have.
    end: Option<u64>,
    /// `None` for a committed file.
    progress: Option<watch::Receiver<Progress>>,
}

/// The bytes from `start` to `end` (exclusive; the end of the file when `None`). A committed
/// file (`progress` is `None`) must be given its `end`.
pub(super) fn stream(
    file: Arc<File>,
    start: u64,
    end: Option<u64>,
    progress: Option<watch::Receiver<Progress>>,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    let reader = Reader {
        file,
        pos: start,
        end,
        progress,
    };
    futures_util::stream::try_unfold(reader, Reader::next)
}

impl Reader {
    async fn next(mut self) -> io::Result<Option<(Bytes, Reader)>> {
        loop {
            let (available, end, in_memory) = self.bounds()?;
            if self.pos >= end {
                return Ok(None);
            }
            if let Some(bytes) = in_memory {
                self.pos += u64::try_from(bytes.len()).expect("a chunk length fits in u64");
                return Ok(Some((bytes, self)));
            }
            let readable = available.min(end);
            if self.pos < readable {
                let len = (readable - self.pos).min(READ_CHUNK);
                let bytes = read_next(&self.file, self.pos, len).await?;
                self.pos += u64::try_from(bytes.len()).expect("a chunk length fits in u64");
                return Ok(Some((bytes, self)));
            }
            let Some(progress) = self.progress.as_mut() else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the cached file is shorter than the range asked for",
                ));
            };
            if progress.changed().await.is_err()
                && !matches!(
                    *progress.borrow(),
                    Progress::Committed { .. } | Progress::Failed(_)
                )
            {
                return Err(io::Error::other("the download ended without a result"));
            }
        }
    }

    /// The bytes readable now, the end to read to (`u64::MAX` while unknown), and the next
    /// bytes to send when the download still holds them in memory (the reader is right behind
    /// it).
    fn bounds(&mut self) -> io::Result<(u64, u64, Option<Bytes>)> {
        let Some(progress) = self.progress.as_mut() else {
            let end = self.end.expect("a committed file is read with its length");
            return Ok((end, end, None));
        };
        let end = self.end.unwrap_or(u64::MAX);
        match &*progress.borrow_and_update() {
            Progress::Connecting => Ok((0, end, None)),
            Progress::Streaming {
                written, recent, ..
            } => Ok((*written, end, recent.at(self.pos, (*written).min(end)))),
            Progress::Committed { size } => match self.end {
                None => Ok((*size, *size, None)),
                Some(end) if end > *size => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the downloaded file is shorter than the range asked for",
                )),
                Some(end) => Ok((*size, end, None)),
            },
            // The client's response is cut off with this error: it must not mistake a broken
            // or corrupt transfer for a complete file.
            Progress::Failed(err) => Err(io::Error::other(Arc::clone(err))),
        }
    }
}

/// At most `len` bytes at `pos` (at least one): those the page cache holds read on this thread
/// (a file written moments ago, a file served often), else `len` read off the async threads.
async fn read_next(file: &Arc<File>, pos: u64, len: u64) -> io::Result<Bytes> {
    #[cfg(target_os = "linux")]
    if let Some(bytes) = read_cached_at(file, pos, len) {
        return Ok(bytes);
    }
    read_at(Arc::clone(file), pos, len).await
}

/// The bytes from `pos`, at most `len`, that can be read without waiting for the disk; `None`
/// when not even the first can. Costs zeroing the buffer (`RWF_NOWAIT` reads only into
/// initialized memory), less than a trip through the blocking pool and back.
#[cfg(target_os = "linux")]
fn read_cached_at(file: &File, pos: u64, len: u64) -> Option<Bytes> {
    let mut buf = vec![0; usize::try_from(len).ok()?];
    let read = rustix::io::preadv2(
        file,
        &mut [io::IoSliceMut::new(&mut buf)],
        pos,
        rustix::io::ReadWriteFlags::NOWAIT,
    );
    match read {
        Ok(read) if read > 0 => {
            buf.truncate(read);
            Some(Bytes::from(buf))
        }
        // Not in the page cache (`EAGAIN`), a file system without `RWF_NOWAIT`, an interrupt or
        // the end of the file: the blocking read decides.
        Ok(_) | Err(_) => None,
    }
}
