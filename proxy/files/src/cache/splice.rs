//! Splicing: a file made from an upstream file's bytes as they stream in, some ranges copied,
//! others skipped, new bytes written between (a derived wheel: `crate::derive`). Applied chunk
//! by chunk, so the derived file streams at the upstream's pace and memory stays one chunk.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// One piece of the output, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// These bytes of the input, as they are. Copies come in increasing input order.
    Copy(Range<u64>),
    /// These bytes.
    Insert(Bytes),
}

/// How a file is made from its upstream file (carried by its `FileSpec`).
#[derive(Debug, PartialEq, Eq)]
pub struct Splice {
    pub segments: Vec<Segment>,
    /// The output's length.
    pub len: u64,
    /// What identifies the output beside the input's identity (hex sha256 over the segments),
    /// part of its cache key.
    pub identity: String,
    /// The input's bytes the plan was made from, read by ranges (at their input offsets),
    /// which nothing verified: each is compared with the input as it streams through its sha256
    /// check, and a difference fails the download before its last byte (issue 41: a host that
    /// answers ranges from a forged wheel must not shape the derived file).
    pub checks: Vec<(u64, Bytes)>,
}

impl Splice {
    /// A splice of `segments`, `len` bytes long.
    pub fn new(segments: Vec<Segment>, len: u64) -> Arc<Splice> {
        let mut hasher = Sha256::new();
        for segment in &segments {
            match segment {
                Segment::Copy(range) => {
                    hasher.update(b"c");
                    hasher.update(range.start.to_le_bytes());
                    hasher.update(range.end.to_le_bytes());
                }
                Segment::Insert(bytes) => {
                    hasher.update(b"i");
                    hasher.update(u64::try_from(bytes.len()).unwrap_or(u64::MAX).to_le_bytes());
                    hasher.update(bytes);
                }
            }
        }
        Arc::new(Splice {
            segments,
            len,
            identity: hex::encode(hasher.finalize()),
            checks: Vec::new(),
        })
    }

    /// [`Splice::new`], planned from `checks`: the input's bytes read by ranges, by offset.
    pub fn checked(segments: Vec<Segment>, len: u64, checks: Vec<(u64, Bytes)>) -> Arc<Splice> {
        let mut splice = Arc::try_unwrap(Splice::new(segments, len)).expect("just made");
        splice.checks = checks;
        Arc::new(splice)
    }

    /// The first input offset in `data` (the input's bytes from `offset`) that differs from
    /// what the plan read there, if any.
    pub fn first_difference(&self, offset: u64, data: &[u8]) -> Option<u64> {
        first_difference(&self.checks, offset, data)
    }
}

/// The first input offset in `data` (the input's bytes from `offset`) that differs from `reads`
/// (bytes read by ranges, by offset), if any.
pub fn first_difference(reads: &[(u64, Bytes)], offset: u64, data: &[u8]) -> Option<u64> {
    let end = offset + u64::try_from(data.len()).unwrap_or(u64::MAX);
    reads.iter().find_map(|(at, expected)| {
        let expected_end = at + u64::try_from(expected.len()).unwrap_or(u64::MAX);
        let from = (*at).max(offset);
        let to = expected_end.min(end);
        if from >= to {
            return None;
        }
        let here = usize::try_from(from - offset).ok()?;
        let there = usize::try_from(from - at).ok()?;
        let len = usize::try_from(to - from).ok()?;
        let (seen, planned) = (&data[here..here + len], &expected[there..there + len]);
        seen.iter()
            .zip(planned)
            .position(|(a, b)| a != b)
            .map(|at| from + u64::try_from(at).unwrap_or(0))
    })
}

/// Applies segments to input chunks fed in order.
#[derive(Debug)]
pub struct Splicer {
    segments: Vec<Segment>,
    /// The segment being produced.
    at: usize,
}

impl Splicer {
    pub fn new(segments: Vec<Segment>) -> Splicer {
        Splicer { segments, at: 0 }
    }

    /// How many bytes the output starts with that are the input's own first bytes (a derived
    /// wheel: everything up to its first replaced member), so one hash covers both up to there.
    pub fn identical_prefix(&self) -> u64 {
        match self.segments.first() {
            Some(Segment::Copy(range)) if range.start == 0 => range.end,
            _ => 0,
        }
    }

    /// Appends to `out` what the input bytes `chunk`, starting at input offset `offset`, give.
    pub fn feed(&mut self, offset: u64, chunk: &[u8], out: &mut Vec<u8>) {
        let end = offset + u64::try_from(chunk.len()).expect("a chunk length fits in u64");
        while let Some(segment) = self.segments.get(self.at) {
            match segment {
                Segment::Insert(bytes) => {
                    out.extend_from_slice(bytes);
                    self.at += 1;
                }
                Segment::Copy(range) => {
                    let from = range.start.max(offset);
                    let to = range.end.min(end);
                    if from < to {
                        let index =
                            |at: u64| usize::try_from(at - offset).expect("within the chunk");
                        out.extend_from_slice(&chunk[index(from)..index(to)]);
                    }
                    if range.end <= end {
                        self.at += 1;
                    } else {
                        return;
                    }
                }
            }
        }
    }

    /// Appends what is left once the input ended (the segments after its last copy).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        while let Some(segment) = self.segments.get(self.at) {
            if let Segment::Insert(bytes) = segment {
                out.extend_from_slice(bytes);
            }
            self.at += 1;
        }
    }
}
