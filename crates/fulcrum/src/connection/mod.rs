//! A connection's socket, whichever family it is (TCP or UNIX), and the per-thread buffer pool.
//!
//! Sessions see one [`Stream`] type for client and server sides and borrow 16 kB buffers from
//! the worker's pool only while data is in flight, so an idle connection holds no buffer.
//! Must not touch: proxy logic, timeouts or counters.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use tokio::net::{TcpStream, UnixStream};

/// HAProxy's default `tune.bufsize`.
pub const BUFSIZE: usize = 16384;

#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => s.poll_read_ready(cx),
            Stream::Unix(s) => s.poll_read_ready(cx),
        }
    }
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read(buf),
            Stream::Unix(s) => s.try_read(buf),
        }
    }
    /// Forgets the socket's read readiness without a syscall, after a read that drained it (a
    /// short read): the next read then waits for the event loop's next edge instead of trying
    /// `recv` and getting `EAGAIN`. Tokio clears it only if no newer event arrived meanwhile.
    pub fn clear_read_ready(&self) {
        let would_block = || -> io::Result<()> { Err(io::ErrorKind::WouldBlock.into()) };
        let _ = match self {
            Stream::Tcp(s) => s.try_io(tokio::io::Interest::READABLE, would_block),
            Stream::Unix(s) => s.try_io(tokio::io::Interest::READABLE, would_block),
        };
    }
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => s.poll_write_ready(cx),
            Stream::Unix(s) => s.poll_write_ready(cx),
        }
    }
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
        }
    }
    /// Sends `head` then `data` (one `send`, or one `sendmsg` when both have bytes), without
    /// waiting. `more`: more of the same message follows at once; on TCP the kernel may then
    /// hold a partial segment (`MSG_MORE`), so the peer gets fewer, larger segments (fewer
    /// wake-ups and ACKs on both sides of a bulk transfer).
    pub fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize> {
        let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
        let send = |sock: socket2::SockRef<'_>| {
            if head.is_empty() {
                sock.send_with_flags(data, flags)
            } else {
                sock.send_vectored_with_flags(&[IoSlice::new(head), IoSlice::new(data)], flags)
            }
        };
        match self {
            Stream::Tcp(s) => {
                s.try_io(tokio::io::Interest::WRITABLE, || send(socket2::SockRef::from(s)))
            }
            // No `MSG_MORE` on UNIX streams.
            Stream::Unix(s) => s.try_write_vectored(&[IoSlice::new(head), IoSlice::new(data)]),
        }
    }
    /// Sends a FIN (half-close): the peer reads end-of-stream, the other direction stays open.
    pub fn shutdown_write(&self) -> io::Result<()> {
        match socket2::SockRef::from(self).shutdown(Shutdown::Write) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
    /// Waits until the peer sent something or closed; `Ok(true)` means it closed (EOF).
    /// UNIX streams have no async peek: for them this reports "sent something" at once.
    pub async fn peer_closed(&self) -> io::Result<bool> {
        match self {
            Stream::Tcp(s) => Ok(s.peek(&mut [0u8; 1]).await? == 0),
            Stream::Unix(_) => Ok(false),
        }
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }
}

/// A buffer borrowed from the worker's pool; returned to it on drop.
pub struct Buf(Option<Box<[u8]>>);

thread_local! {
    static POOL: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// Buffers kept per worker for reuse; beyond this, returned buffers are freed.
const POOL_MAX: usize = 4096;

impl Buf {
    pub fn take() -> Self {
        let b = POOL.with(|p| p.borrow_mut().pop());
        Buf(Some(b.unwrap_or_else(|| vec![0u8; BUFSIZE].into_boxed_slice())))
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.0.as_deref_mut().unwrap_or(&mut [])
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            let _ = POOL.try_with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < POOL_MAX {
                    p.push(b);
                }
            });
        }
    }
}
