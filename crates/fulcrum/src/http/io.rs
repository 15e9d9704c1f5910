//! Socket I/O for HTTP sessions: a receive buffer that borrows a pool buffer only while it holds
//! bytes, and read helpers that try the syscall first and wait for readiness only after
//! `EAGAIN` (so a socket with data costs one syscall, not an `epoll` round trip); the write
//! helpers, which work the same way, live in `connection::send` and are re-exported here.
//!
//! Must not touch: HTTP semantics (framing, rules), timeouts policy (callers wrap these futures).

use std::future::poll_fn;
use std::io;
use std::task::Poll;

pub use crate::connection::{send_within, write_all, write_all_within};
use crate::connection::{Buf, Pipe};

/// Bytes received from one side and not consumed yet: `buf[start..end]`.
#[derive(Default)]
pub struct RecvBuf {
    buf: Option<Buf>,
    start: usize,
    end: usize,
}

impl RecvBuf {
    pub fn data(&self) -> &[u8] {
        match &self.buf {
            Some(b) => &b[self.start..self.end],
            None => &[],
        }
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Marks `n` bytes as used; gives the pool buffer back once nothing is left.
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.buf = None;
        }
    }

    /// Buffers `bytes` (a request's head begun before its connection rested) in a pool
    /// buffer; nothing must be buffered yet.
    pub fn put(&mut self, bytes: &[u8]) {
        debug_assert!(self.is_empty());
        let mut buf = Buf::take();
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        (self.buf, self.start, self.end) = (Some(buf), 0, n);
        if n == 0 {
            self.clear();
        }
    }

    /// Forgets everything buffered.
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.buf = None;
    }

    /// True when no more bytes fit without consuming some (the buffer is full).
    pub fn is_full(&self) -> bool {
        self.buf.as_ref().is_some_and(|b| self.start == 0 && self.end == b.len())
    }

    /// Reads once from `s`, appending to the buffered bytes. Returns the number of bytes read;
    /// 0 means end of stream. Fails with `OutOfMemory` when the buffer is already full.
    /// While nothing is buffered and the socket has nothing to read, the pool buffer is given
    /// back: an idle keep-alive connection holds no buffer.
    /// Readiness is checked first (no syscall while the socket is known drained), then `recv`.
    #[inline(always)]
    pub async fn fill<P: Pipe>(&mut self, s: &P) -> io::Result<usize> {
        self.fill_with(s, true).await
    }

    /// Like `fill`, for streaming a body: a short read does not clear the readiness (more data
    /// usually arrived while the previous chunk was written; trying `recv` first saves an
    /// event-loop round trip per chunk).
    pub async fn fill_streaming<P: Pipe>(&mut self, s: &P) -> io::Result<usize> {
        self.fill_with(s, false).await
    }

    async fn fill_with<P: Pipe>(&mut self, s: &P, clear_on_short: bool) -> io::Result<usize> {
        poll_fn(|cx| loop {
            match s.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.try_fill_with(s, clear_on_short) {
                Ok(Some(n)) => return Poll::Ready(Ok(n)),
                Err(e) => return Poll::Ready(Err(e)),
                Ok(None) => {}
            }
        })
        .await
    }

    /// Reads once without waiting: `Ok(None)` when the socket has nothing now, `Ok(Some(0))`
    /// at end of stream.
    pub fn try_fill<P: Pipe>(&mut self, s: &P) -> io::Result<Option<usize>> {
        self.try_fill_with(s, true)
    }

    fn try_fill_with<P: Pipe>(&mut self, s: &P, clear_on_short: bool) -> io::Result<Option<usize>> {
        let buf = self.buf.get_or_insert_with(Buf::take);
        if self.end == buf.len() {
            if self.start == 0 {
                return Err(io::Error::new(io::ErrorKind::OutOfMemory, "buffer full"));
            }
            buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let space = buf.len() - self.end;
        let r = s.try_read(&mut buf[self.end..]);
        let r = match r {
            Ok(n) => {
                self.end += n;
                if clear_on_short && n > 0 && n < space {
                    // A short read drained the socket: wait for the next event before reading.
                    s.clear_read_ready();
                }
                Ok(Some(n))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        };
        if self.start == self.end {
            self.clear();
        }
        r
    }
}

/// Without blocking: is the idle connection still good (nothing to read, not closed)?
/// Used before reusing a pooled server connection.
pub fn idle_is_clean<P: Pipe>(s: &P) -> bool {
    let mut one = [0u8; 1];
    matches!(s.try_read(&mut one), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}
