//! Positioned reads of a cached file, off the async threads or into unzeroed memory: the file
//! cache's readers and the bucket's uploads read committed files this way.

use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::Bytes;

/// `len` bytes at `pos`, read off the async threads.
pub async fn read_at(file: Arc<File>, pos: u64, len: u64) -> io::Result<Bytes> {
    tokio::task::spawn_blocking(move || {
        let len = usize::try_from(len).expect("a chunk fits in memory");
        read_exact_at(&file, len, pos).map(Bytes::from)
    })
    .await
    .map_err(io::Error::other)?
}

/// Reads into the buffer's spare room: zeroing it first cost every byte served one more pass
/// (a few per cent of a cold download's work).
#[cfg(unix)]
pub fn read_exact_at(file: &File, len: usize, pos: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = pos + u64::try_from(buf.len()).expect("fits");
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    // The spare room may be larger than asked for.
    buf.truncate(len);
    Ok(buf)
}

#[cfg(windows)]
pub fn read_exact_at(file: &File, len: usize, mut pos: u64) -> io::Result<Vec<u8>> {
    let mut whole = vec![0; len];
    let mut buf = &mut whole[..];
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, pos)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        pos += u64::try_from(n).expect("fits");
    }
    Ok(whole)
}
