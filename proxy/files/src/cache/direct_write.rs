//! Writing a large download's `*.part` file past the page cache (Linux's `O_DIRECT`), whole
//! aligned blocks at a time through a second handle, the unaligned end through the shared one.
//!
//! Why: during a cold install of five large wheels, copying every byte into the page cache
//! was a sixth of the proxy's CPU (`copy_folio_from_iter_atomic` in `perf`), more than anything
//! but the sha256 check, and its writeback more again; on two cores that CPU is the install's
//! time. A direct write hands the bytes to the device from this process's memory instead: one
//! copy into an aligned buffer that stays in the CPU's cache. Readers behind the download read
//! the bytes back through the page cache as before (the device fills it; readahead keeps ahead),
//! and the last of them come from memory ([`super::recent`]).
//!
//! Where direct I/O is refused (a file system without it, such as tmpfs on older kernels, or a
//! block size above [`BLOCK`]), the writer falls back to ordinary writes, once, for the rest of
//! the file: the bytes end up the same either way.

use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::Bytes;

/// Offsets, lengths and buffer addresses of direct writes are multiples of this: the page size,
/// which covers every common device's logical block.
const BLOCK: usize = 4096;
/// Bytes staged before a direct write at most: whole blocks.
const STAGING: usize = 1024 * 1024;
/// Files shorter than this (or of unknown length) are written through the page cache: the copy
/// saved is small, and their readers find them there.
pub(super) const DIRECT_FROM: u64 = 16 * 1024 * 1024;

/// Appends a file's bytes in order from offset 0.
pub(super) struct FileWriter {
    /// The handle readers share; writes the unaligned end, and everything without `direct`.
    shared: Arc<File>,
    /// The same file opened for direct writes, while they work.
    direct: Option<File>,
    /// Staged bytes live at `buf[start..start + staged]`, `start` making their address aligned.
    buf: Vec<u8>,
    start: usize,
    staged: usize,
    /// Bytes in the file: what readers may read.
    on_disk: u64,
}

impl FileWriter {
    /// A writer of `shared`'s file, writing whole blocks through `direct` when given.
    pub(super) fn new(shared: Arc<File>, direct: Option<File>) -> FileWriter {
        FileWriter {
            shared,
            direct,
            buf: Vec::new(),
            start: 0,
            staged: 0,
            on_disk: 0,
        }
    }

    /// Bytes readable in the file: those appended, less at most a block's worth staged.
    pub(super) fn on_disk(&self) -> u64 {
        self.on_disk
    }

    /// Appends `chunks`, one after the other.
    pub(super) fn append_chunks(&mut self, chunks: &[Bytes]) -> io::Result<()> {
        if self.direct.is_none() {
            write_chunks_at(&self.shared, chunks, self.on_disk)?;
            self.on_disk += chunks.iter().map(|chunk| len_u64(chunk.len())).sum::<u64>();
            return Ok(());
        }
        for chunk in chunks {
            self.stage(chunk)?;
        }
        self.write_whole_blocks()
    }

    /// Appends `data`.
    pub(super) fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.direct.is_none() {
            write_all_at(&self.shared, data, self.on_disk)?;
            self.on_disk += len_u64(data.len());
            return Ok(());
        }
        self.stage(data)?;
        self.write_whole_blocks()
    }

    /// Writes what is still staged: the file is then whole.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        if self.staged > 0 {
            let range = self.start..self.start + self.staged;
            write_all_at(&self.shared, &self.buf[range], self.on_disk)?;
            self.on_disk += len_u64(self.staged);
            self.staged = 0;
        }
        Ok(())
    }

    /// Copies `data` into the staging buffer, writing it each time it fills.
    fn stage(&mut self, mut data: &[u8]) -> io::Result<()> {
        if self.direct.is_none() {
            return self.append(data);
        }
        if self.buf.is_empty() {
            self.buf = vec![0; STAGING + BLOCK];
            self.start = self.buf.as_ptr().align_offset(BLOCK);
        }
        while !data.is_empty() {
            let take = (STAGING - self.staged).min(data.len());
            let at = self.start + self.staged;
            self.buf[at..at + take].copy_from_slice(&data[..take]);
            self.staged += take;
            data = &data[take..];
            if self.staged == STAGING {
                self.write_whole_blocks()?;
                if self.direct.is_none() {
                    // Fell back: the rest goes through the page cache as it comes.
                    return self.append(data);
                }
            }
        }
        Ok(())
    }

    /// Writes the staged whole blocks directly and moves the remainder to the front; on a
    /// refusal of direct I/O, writes everything staged through the shared handle and stops
    /// writing directly.
    fn write_whole_blocks(&mut self) -> io::Result<()> {
        let whole = self.staged / BLOCK * BLOCK;
        let Some(direct) = &self.direct else {
            return self.finish();
        };
        let mut done = 0;
        while done < whole {
            let from = self.start + done;
            let written =
                direct_write_at(direct, &self.buf[from..self.start + whole], self.on_disk);
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => {
                    done += written;
                    self.on_disk += len_u64(written);
                    if done < whole && done % BLOCK != 0 {
                        // A short write off a block boundary: the rest cannot go directly.
                        return self.fall_back(done);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::InvalidInput => {
                    return self.fall_back(done);
                }
                Err(err) => return Err(err),
            }
        }
        let rest = self.staged - whole;
        self.buf
            .copy_within(self.start + whole..self.start + self.staged, self.start);
        self.staged = rest;
        Ok(())
    }

    /// Stops writing directly; the staged bytes past `done` go through the shared handle.
    fn fall_back(&mut self, done: usize) -> io::Result<()> {
        self.direct = None;
        let range = self.start + done..self.start + self.staged;
        write_all_at(&self.shared, &self.buf[range], self.on_disk)?;
        self.on_disk += len_u64(self.staged - done);
        self.staged = 0;
        self.buf = Vec::new();
        Ok(())
    }
}

/// Opens `path` a second time for direct writes; `None` where the system has none or refuses.
#[cfg(target_os = "linux")]
pub(super) fn open_direct(path: &std::path::Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let direct = i32::try_from(rustix::fs::OFlags::DIRECT.bits()).ok()?;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(direct)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
pub(super) fn open_direct(_path: &std::path::Path) -> Option<File> {
    None
}

#[cfg(unix)]
fn direct_write_at(file: &File, data: &[u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, data, offset)
}

#[cfg(windows)]
fn direct_write_at(file: &File, data: &[u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_write(file, data, offset)
}

fn len_u64(len: usize) -> u64 {
    u64::try_from(len).expect("a buffer length fits in u64")
}

// Positioned writes leave the file offset alone, so readers and the writer share one handle.
#[cfg(unix)]
fn write_all_at(file: &File, data: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, offset)
}

/// Writes `chunks` one after the other from `offset`: one vectored system call for many chunks.
#[cfg(unix)]
fn write_chunks_at(file: &File, chunks: &[Bytes], mut offset: u64) -> io::Result<()> {
    // Below every system's IOV_MAX (1,024 on Linux).
    const MOST_SLICES: usize = 512;
    let mut next = 0;
    // Bytes of `chunks[next]` already written.
    let mut done = 0;
    while next < chunks.len() {
        let slices: Vec<io::IoSlice<'_>> = chunks[next..]
            .iter()
            .take(MOST_SLICES)
            .enumerate()
            .map(|(at, chunk)| io::IoSlice::new(if at == 0 { &chunk[done..] } else { chunk }))
            .collect();
        let mut written = match rustix::io::pwritev(file, &slices, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => written,
            Err(rustix::io::Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        };
        offset += len_u64(written);
        while next < chunks.len() && written >= chunks[next].len() - done {
            written -= chunks[next].len() - done;
            next += 1;
            done = 0;
        }
        done += written;
    }
    Ok(())
}

#[cfg(windows)]
fn write_chunks_at(file: &File, chunks: &[Bytes], mut offset: u64) -> io::Result<()> {
    for chunk in chunks {
        write_all_at(file, chunk, offset)?;
        offset += len_u64(chunk.len());
    }
    Ok(())
}

#[cfg(windows)]
fn write_all_at(file: &File, mut data: &[u8], mut offset: u64) -> io::Result<()> {
    while !data.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, data, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
        offset += len_u64(n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ at every offset, so a misplaced piece shows.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| u8::try_from((i * 7 + i / 4093) % 251).unwrap())
            .collect()
    }

    /// A new, empty `*.part` file in `dir` and its shared handle.
    fn new_part(dir: &tempfile::TempDir) -> (std::path::PathBuf, Arc<File>) {
        let path = dir.path().join("out.part");
        let shared = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        (path, Arc::new(shared))
    }

    /// `pieces` appended (as chunks when `chunked`), then finished; returns the file and the
    /// readable length seen after each piece.
    fn write(pieces: &[Vec<u8>], direct: bool, chunked: bool) -> (Vec<u8>, Vec<u64>) {
        let dir = tempfile::tempdir().unwrap();
        let (path, shared) = new_part(&dir);
        let direct = direct.then(|| open_direct(&path)).flatten();
        let mut writer = FileWriter::new(shared, direct);
        let mut readable = Vec::new();
        for piece in pieces {
            if chunked {
                let chunks: Vec<Bytes> = piece.chunks(5000).map(Bytes::copy_from_slice).collect();
                writer.append_chunks(&chunks).unwrap();
            } else {
                writer.append(piece).unwrap();
            }
            readable.push(writer.on_disk());
        }
        writer.finish().unwrap();
        readable.push(writer.on_disk());
        (std::fs::read(&path).unwrap(), readable)
    }

    #[test]
    fn a_file_written_directly_holds_every_byte_in_order() {
        let all = pattern(3 * STAGING + 12_345);
        // Pieces that cross the staging buffer's end and blocks' ends anywhere.
        let cuts = [
            0,
            1,
            4095,
            4097,
            STAGING - 3,
            STAGING + 5000,
            2 * STAGING + 17,
            all.len(),
        ];
        let pieces: Vec<Vec<u8>> = cuts.windows(2).map(|w| all[w[0]..w[1]].to_vec()).collect();
        for chunked in [false, true] {
            let (file, readable) = write(&pieces, true, chunked);
            assert_eq!(file.len(), all.len());
            assert!(file == all, "the file differs from what was appended");
            // Readable lengths never pass what was appended, grow, and end at the whole file.
            let mut appended = 0;
            for (piece, seen) in pieces.iter().zip(&readable) {
                appended += u64::try_from(piece.len()).unwrap();
                assert!(*seen <= appended);
                assert!(
                    appended - seen < u64::try_from(BLOCK).unwrap()
                        || cfg!(not(target_os = "linux"))
                );
            }
            assert!(readable.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(*readable.last().unwrap(), u64::try_from(all.len()).unwrap());
        }
    }

    #[test]
    fn a_file_written_through_the_page_cache_is_the_same() {
        let all = pattern(STAGING + 777);
        let pieces = vec![all[..1000].to_vec(), all[1000..].to_vec()];
        for chunked in [false, true] {
            let (file, readable) = write(&pieces, false, chunked);
            assert!(file == all);
            // Nothing is staged: each piece is readable as soon as it is appended.
            let len = u64::try_from(all.len()).unwrap();
            assert_eq!(readable, vec![1000, len, len]);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_write_refused_as_direct_goes_through_the_page_cache_instead() {
        let dir = tempfile::tempdir().unwrap();
        let (path, shared) = new_part(&dir);
        let Some(direct) = open_direct(&path) else {
            // This file system has no direct I/O: nothing to refuse.
            return;
        };
        let mut writer = FileWriter::new(shared, Some(direct));
        // Direct writes need aligned offsets: with one byte already in the file, every direct
        // write is off its block and refused (EINVAL), as a device whose blocks are larger
        // than BLOCK refuses them.
        writer.on_disk = 1;
        std::os::unix::fs::FileExt::write_all_at(&*writer.shared, b"x", 0).unwrap();
        let all = pattern(2 * STAGING + 3);
        writer.append(&all).unwrap();
        assert!(
            writer.direct.is_none(),
            "the unaligned direct write was refused"
        );
        writer.finish().unwrap();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(file[0], b'x');
        assert!(file[1..] == all[..]);
    }

    #[test]
    fn chunks_are_written_in_order_past_one_vectored_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let file = File::create(&path).unwrap();
        // More chunks than one call takes, of sizes that do not line up with anything.
        let chunks: Vec<Bytes> = (0..1500_u32)
            .map(|i| {
                let len = usize::try_from(1 + (i * 7919) % 3001).unwrap();
                Bytes::from(vec![u8::try_from(i % 251).unwrap(); len])
            })
            .collect();
        write_all_at(&file, b"head", 0).unwrap();
        write_chunks_at(&file, &chunks, 4).unwrap();
        let mut expected = b"head".to_vec();
        for chunk in &chunks {
            expected.extend_from_slice(chunk);
        }
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }
}
