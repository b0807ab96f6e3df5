//! The bytes a download wrote last, kept in memory as they were written (the network's own
//! buffers, not copied) for the readers right behind it: they send these instead of reading them
//! back from the `*.part` file, which saves a copy out of the page cache and a trip through the
//! blocking pool per chunk. A reader that falls behind the window, or joins late, reads from disk.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// Bytes kept per download at most (besides the chunk being added): a few writes' worth, so a
/// reader a little behind the download still finds its bytes here, and memory stays flat.
const WINDOW: u64 = 1024 * 1024;

/// A snapshot of the window, published with the download's progress: chunks in file order, each
/// with its offset, one after the other. Cheap to clone.
#[derive(Clone, Default)]
pub(super) struct Recent(Arc<[(u64, Bytes)]>);

impl Recent {
    /// The bytes from `pos` up to `end` (exclusive) that this window holds, when it holds `pos`:
    /// at most the rest of one chunk, shared rather than copied.
    pub(super) fn at(&self, pos: u64, end: u64) -> Option<Bytes> {
        let chunks = &self.0;
        let index = chunks.partition_point(|(offset, chunk)| offset + len_u64(chunk) <= pos);
        let (offset, chunk) = chunks.get(index)?;
        if *offset > pos || pos >= end {
            return None;
        }
        let from = usize::try_from(pos - offset).ok()?;
        let to = usize::try_from((end - offset).min(len_u64(chunk))).ok()?;
        Some(chunk.slice(from..to))
    }
}

impl fmt::Debug for Recent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.first(), self.0.last()) {
            (Some((start, _)), Some((offset, chunk))) => {
                write!(f, "Recent({start}..{})", offset + len_u64(chunk))
            }
            _ => f.write_str("Recent(empty)"),
        }
    }
}

/// The download's side: the chunks it wrote last, the oldest dropped past [`WINDOW`].
#[derive(Default)]
pub(super) struct Window {
    chunks: VecDeque<(u64, Bytes)>,
    /// Bytes of `chunks` together.
    len: u64,
}

impl Window {
    /// Adds `chunk`, written at `offset` right after the chunks already here.
    pub(super) fn push(&mut self, offset: u64, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        debug_assert!(
            self.chunks
                .back()
                .is_none_or(|(at, last)| at + len_u64(last) == offset),
            "chunks are added in file order, one after the other"
        );
        self.len += len_u64(&chunk);
        self.chunks.push_back((offset, chunk));
        while self.len > WINDOW
            && let Some((_, oldest)) = self.chunks.front()
            && self.len - len_u64(oldest) >= WINDOW
        {
            self.len -= len_u64(oldest);
            self.chunks.pop_front();
        }
    }

    /// What the readers are shown now.
    pub(super) fn snapshot(&self) -> Recent {
        Recent(self.chunks.iter().cloned().collect())
    }
}

fn len_u64(chunk: &Bytes) -> u64 {
    u64::try_from(chunk.len()).expect("a buffer length fits in u64")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(chunks: &[(u64, &'static [u8])]) -> Window {
        let mut window = Window::default();
        for (offset, chunk) in chunks {
            window.push(*offset, Bytes::from_static(chunk));
        }
        window
    }

    #[test]
    fn finds_the_bytes_at_a_position_within_one_chunk() {
        let recent = window(&[(10, b"abcd"), (14, b"efg"), (17, b"hij")]).snapshot();
        assert_eq!(recent.at(10, 100).unwrap(), &b"abcd"[..]);
        assert_eq!(recent.at(12, 100).unwrap(), &b"cd"[..]);
        assert_eq!(recent.at(14, 100).unwrap(), &b"efg"[..]);
        assert_eq!(recent.at(15, 16).unwrap(), &b"f"[..]);
        assert_eq!(recent.at(19, 100).unwrap(), &b"j"[..]);
        // Before, after, or at the end asked for.
        assert!(recent.at(9, 100).is_none());
        assert!(recent.at(20, 100).is_none());
        assert!(recent.at(12, 12).is_none());
        assert!(Recent::default().at(0, 100).is_none());
    }

    #[test]
    fn keeps_about_one_window_of_the_latest_chunks() {
        let chunk = Bytes::from(vec![7; 300 * 1024]);
        let mut window = Window::default();
        let mut offset = 0;
        for _ in 0..10 {
            window.push(offset, chunk.clone());
            offset += len_u64(&chunk);
        }
        assert!(window.len >= WINDOW);
        assert!(window.len < WINDOW + len_u64(&chunk));
        let recent = window.snapshot();
        assert!(recent.at(offset - 1, offset).is_some());
        assert!(recent.at(0, offset).is_none());
        assert!(recent.at(offset - WINDOW, offset).is_some());
    }
}
