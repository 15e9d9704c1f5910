//! A connection's byte stream, whichever it is (TCP, UNIX, or TLS over either: bytes only,
//! nothing of HTTP), and the per-thread buffer pool.
//!
//! Sessions see one [`Stream`] type for client and server sides and borrow 16 kB buffers from
//! the worker's pool only while data is in flight, so an idle connection holds no buffer. The
//! contract is a non-blocking socket's: `try_*` calls that say `WouldBlock`, readiness polled
//! apart; TLS (`tls`) keeps it, so sessions never know which kind they have. Whole writes
//! and closing with a reset: `send` (`write_all`, `send_within`, `discard`), written against
//! [`Pipe`], the byte interface a `Stream` and an HTTP/2 stream's view share. TCP sockets are
//! registered with the event loop only once they must wait ([`LazyTcp`]). [`ServerLink`] is
//! what the connect path (`tcp::connect_server_reusing`) needs of a server connection, new
//! (a `Stream`) or idle (the caller's type).
//! Must not touch: proxy logic, timeouts or counters.

pub mod capture;
pub mod keylog;
pub mod netscaler;
mod opening;
mod pipe;
pub mod proxy;
mod send;
pub mod tls;

pub use opening::Opening;
pub use pipe::{Pipe, ServerLink};
pub use send::{abort, discard, send_within, write_all, write_all_within};

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use crate::worker::{Id, Slot};

use tokio::io::Interest;
use tokio::net::UnixStream;

/// HAProxy's default `tune.bufsize`.
pub const BUFSIZE: usize = 16384;

#[derive(Debug)]
pub enum Stream {
    /// Registered with the event loop only when it must wait.
    Tcp(LazyTcp),
    Unix(UnixStream),
    /// TLS over one of the others.
    Tls(Box<tls::TlsStream>),
}

/// A TCP connection (client or server side) used speculatively, as HAProxy does: reads and
/// writes are tried first and the socket is registered with the event loop (`epoll_ctl`) only
/// once one of them would block. A client whose request is already there when accepted and
/// whose response the socket takes at once costs neither the registration nor its removal
/// (two syscalls and an allocation per connection). Tokio's `TcpStream` registers at creation,
/// hence this type.
#[derive(Debug)]
pub struct LazyTcp {
    sock: crate::sys::LazyRegistered,
    /// While unregistered: a read came back short, so the next read waits for an event.
    drained: Cell<bool>,
}

impl LazyTcp {
    fn new(sock: std::net::TcpStream, drained: bool) -> Self {
        LazyTcp { sock: crate::sys::LazyRegistered::new(sock), drained: Cell::new(drained) }
    }

    fn sock(&self) -> socket2::SockRef<'_> {
        socket2::SockRef::from(self.sock.socket())
    }

    /// Runs the non-blocking `op`: through the registration's readiness once registered;
    /// otherwise at once, registering when it would block (so the caller can then wait).
    fn io<R>(&self, interest: Interest, op: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        if let Some(reg) = self.sock.registered() {
            return reg.try_io(interest, |_| op());
        }
        let r = op();
        if matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.sock.register()?;
        }
        r
    }

    fn poll_ready(&self, cx: &mut Context<'_>, read: bool) -> Poll<io::Result<()>> {
        if self.sock.registered().is_none() && read && !self.drained.get() {
            return Poll::Ready(Ok(())); // try the read first
        }
        let reg = match self.sock.register() {
            Ok(r) => r,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let ready = if read { reg.poll_read_ready(cx) } else { reg.poll_write_ready(cx) };
        // The guard is dropped without clearing: the readiness stays until an I/O call on the
        // socket hits `EAGAIN`.
        ready.map_ok(|_guard| ())
    }

    /// See [`Stream::clear_read_ready`]; unregistered, the next read waits for an event.
    fn clear_read_ready(&self) {
        match self.sock.registered() {
            Some(reg) => {
                let _ = reg.try_io(Interest::READABLE, |_| Err::<(), _>(would_block()));
            }
            None => self.drained.set(true),
        }
    }

    /// See [`Stream::peer_closed`].
    async fn peer_closed(&self) -> io::Result<bool> {
        let mut one = [0u8; 1];
        std::future::poll_fn(|cx| loop {
            std::task::ready!(self.poll_ready(cx, true))?;
            match self.io(Interest::READABLE, || self.sock.socket().peek(&mut one)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return Poll::Ready(r.map(|n| n == 0)),
            }
        })
        .await
    }
}

fn would_block() -> io::Error {
    io::ErrorKind::WouldBlock.into()
}

impl AsFd for LazyTcp {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.socket().as_fd()
    }
}

/// Forces the kernel buffer sizes of `sock` (`tune.rcvbuf.*` / `tune.sndbuf.*`), before
/// `listen` or `connect` so that TCP's window scale is chosen with them. The value goes to the
/// kernel as HAProxy passes it (a C `int`; the kernel doubles it and caps it at
/// `net.core.rmem_max`/`wmem_max`); failures are ignored, as HAProxy ignores them.
pub fn force_buffers(sock: &socket2::Socket, bufs: fulcrum_config::SocketBuffers) {
    if let Some(v) = bufs.rcv {
        let _ = sock.set_recv_buffer_size(v as u32 as usize);
    }
    if let Some(v) = bufs.snd {
        let _ = sock.set_send_buffer_size(v as u32 as usize);
    }
}

/// `option clitcpka|srvtcpka|tcpka` and their `*tcpka-cnt|idle|intvl`: TCP keep-alive probes
/// on a socket (a listening socket passes them to the connections it accepts).
/// `option nolinger`: the connection's close sends a reset at once, whatever is unsent (the
/// kernel keeps nothing in TIME_WAIT for it).
pub fn no_linger(s: &impl std::os::fd::AsFd) {
    let _ = socket2::SockRef::from(s).set_linger(Some(std::time::Duration::ZERO));
}

/// `tcp-ut`: `TCP_USER_TIMEOUT` of `ms` milliseconds on a connection (a failure changes
/// nothing, as in HAProxy).
#[cold]
#[inline(never)]
pub fn user_timeout(s: &impl std::os::fd::AsFd, ms: u32) {
    let d = std::time::Duration::from_millis(u64::from(ms));
    let _ = socket2::SockRef::from(s).set_tcp_user_timeout(Some(d));
}

/// A server's `tfo`: TCP Fast Open on a socket about to connect (`TCP_FASTOPEN_CONNECT`: once
/// the server gave a cookie, `connect` returns at once and the first bytes written go in the
/// SYN). A system without it connects as usual, as HAProxy does.
#[cold]
#[inline(never)]
pub fn fast_open_connect(sock: &socket2::Socket) {
    use std::os::fd::AsRawFd;
    let _ = crate::sys::set_tcp_opt(sock.as_raw_fd(), libc::TCP_FASTOPEN_CONNECT, 1);
}

pub fn set_keepalive(sock: &socket2::Socket, ka: fulcrum_config::TcpKeepAlive) {
    if !ka.on {
        return;
    }
    set_keepalive_settings(sock, ka);
}

/// Like [`set_keepalive`], for a listening socket that may come from an earlier process
/// (`-sf`): keep-alive is also turned off when this run does not ask for it.
pub fn set_listener_keepalive(sock: &socket2::Socket, ka: fulcrum_config::TcpKeepAlive) {
    if ka.on {
        set_keepalive_settings(sock, ka);
    } else if sock.keepalive().unwrap_or(false) {
        let _ = sock.set_keepalive(false);
    }
}

fn set_keepalive_settings(sock: &socket2::Socket, ka: fulcrum_config::TcpKeepAlive) {
    let mut k = socket2::TcpKeepalive::new();
    if let Some(s) = ka.idle {
        k = k.with_time(std::time::Duration::from_secs(u64::from(s)));
    }
    if let Some(s) = ka.intvl {
        k = k.with_interval(std::time::Duration::from_secs(u64::from(s)));
    }
    if let Some(n) = ka.cnt {
        k = k.with_retries(n);
    }
    let _ = sock.set_keepalive(true);
    if ka.idle.is_some() || ka.intvl.is_some() || ka.cnt.is_some() {
        let _ = sock.set_tcp_keepalive(&k);
    }
}

impl Stream {
    /// An accepted TCP connection, used speculatively (see [`LazyTcp`]).
    pub fn accepted_tcp(sock: std::net::TcpStream) -> Self {
        Stream::Tcp(LazyTcp::new(sock, false))
    }
    /// Connects to `addr` (non-blocking, `TCP_NODELAY`). On loopback the handshake is usually
    /// over when `connect` returns: then the stream comes back unregistered, and the request
    /// is sent at once (no event-loop round trip, no `SO_ERROR` read). Otherwise it waits for
    /// the handshake on the event loop, as any connect does.
    pub async fn connect_tcp(
        addr: std::net::SocketAddr,
        bufs: fulcrum_config::SocketBuffers,
        keepalive: fulcrum_config::TcpKeepAlive,
    ) -> io::Result<Stream> {
        Self::connect_tcp_with(addr, |sock| {
            force_buffers(sock, bufs);
            set_keepalive(sock, keepalive);
            Ok(())
        })
        .await
    }

    /// Like [`Stream::connect_tcp`], the socket bound first by `bind` (a `source` line).
    pub async fn connect_tcp_from(
        addr: std::net::SocketAddr,
        (bufs, keepalive): (fulcrum_config::SocketBuffers, fulcrum_config::TcpKeepAlive),
        bind: impl FnOnce(&socket2::Socket) -> io::Result<()>,
    ) -> io::Result<Stream> {
        Self::connect_tcp_with(addr, |sock| {
            force_buffers(sock, bufs);
            set_keepalive(sock, keepalive);
            bind(sock)
        })
        .await
    }

    /// A health check's connection: closed with a reset (no TIME_WAIT), and, when nothing is
    /// sent first (`delay_ack`), without acknowledging the server's SYN-ACK at once (HAProxy's
    /// `CONNECT_DELACK_ALWAYS`: a pure connect check then costs the server no accepted
    /// connection).
    pub async fn connect_check(addr: std::net::SocketAddr, delay_ack: bool) -> io::Result<Stream> {
        Self::connect_check_bound(addr, delay_ack, |_| Ok(())).await
    }

    /// Like [`Stream::connect_check`], the socket bound first by `bind` (a `source` line).
    pub async fn connect_check_bound(
        addr: std::net::SocketAddr,
        delay_ack: bool,
        bind: impl FnOnce(&socket2::Socket) -> io::Result<()>,
    ) -> io::Result<Stream> {
        Self::connect_tcp_with(addr, |sock| {
            bind(sock)?;
            sock.set_linger(Some(std::time::Duration::ZERO))?;
            if delay_ack {
                sock.set_tcp_quickack(false)?;
            }
            Ok(())
        })
        .await
    }

    async fn connect_tcp_with(
        addr: std::net::SocketAddr,
        prepare: impl FnOnce(&socket2::Socket) -> io::Result<()>,
    ) -> io::Result<Stream> {
        use socket2::{Domain, Protocol, Socket, Type};
        let ty = Type::STREAM.nonblocking().cloexec();
        let sock = Socket::new(Domain::for_address(addr), ty, Some(Protocol::TCP))?;
        sock.set_tcp_nodelay(true)?;
        prepare(&sock)?;
        match sock.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        // Nothing to read before a request went out: the first read waits for an event (a
        // speculative `recv` would nearly always find nothing).
        let s = LazyTcp::new(sock.into(), true);
        // `getpeername` succeeds once the connection is established, and only then.
        if s.sock.socket().peer_addr().is_err() {
            std::future::poll_fn(|cx| s.poll_ready(cx, false)).await?;
            if let Some(e) = s.sock.socket().take_error()? {
                return Err(e);
            }
        }
        Ok(Stream::Tcp(s))
    }
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => s.poll_ready(cx, true),
            Stream::Unix(s) => s.poll_read_ready(cx),
            Stream::Tls(s) => s.poll_read_ready(cx),
        }
    }
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => {
                s.io(Interest::READABLE, || io::Read::read(&mut s.sock.socket(), buf))
            }
            Stream::Unix(s) => s.try_read(buf),
            Stream::Tls(s) => s.try_read(buf),
        }
    }
    /// Reads into the unfilled part of `buf` (see [`crate::sys::recv_into`]: a TCP socket's
    /// read needs no zeroed buffer); one read, as [`Stream::try_read`].
    pub fn try_read_buf(&self, buf: &mut tokio::io::ReadBuf<'_>) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => {
                let fd = self.as_fd().as_raw_fd();
                s.io(Interest::READABLE, || crate::sys::recv_into(fd, buf))
            }
            _ => {
                let n = self.try_read(buf.initialize_unfilled())?;
                buf.advance(n);
                Ok(())
            }
        }
    }
    /// Reads without consuming (the PROXY protocol header). Not for TLS streams.
    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let fd = self.as_fd().as_raw_fd();
        match self {
            Stream::Tcp(s) => s.io(Interest::READABLE, || crate::sys::peek(fd, buf)),
            Stream::Unix(s) => s.try_io(Interest::READABLE, || crate::sys::peek(fd, buf)),
            Stream::Tls(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }
    /// The TLS layer, if this stream has one.
    pub fn tls(&self) -> Option<&tls::TlsStream> {
        match self {
            Stream::Tls(s) => Some(s),
            _ => None,
        }
    }
    /// The SNI a connection to a server was made with (over TLS).
    pub fn server_sni(&self) -> Option<&str> {
        match self {
            Stream::Tls(s) => s.sni(),
            _ => None,
        }
    }
    /// The stream under any TLS layer: the socket itself.
    pub fn transport(&self) -> &Stream {
        match self {
            Stream::Tls(s) => s.inner(),
            s => s,
        }
    }
    /// Forgets the socket's read readiness without a syscall, after a read that drained it (a
    /// short read): the next read then waits for the event loop's next edge instead of trying
    /// `recv` and getting `EAGAIN`. Tokio clears it only if no newer event arrived meanwhile.
    pub fn clear_read_ready(&self) {
        match self {
            Stream::Tcp(s) => s.clear_read_ready(),
            Stream::Unix(s) => {
                let _ = s.try_io(Interest::READABLE, || Err::<(), _>(would_block()));
            }
            // A short read of plaintext says nothing about the socket: TLS clears its
            // socket's readiness itself after a short read of ciphertext.
            Stream::Tls(_) => {}
        }
    }
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => s.poll_ready(cx, false),
            Stream::Unix(s) => s.poll_write_ready(cx),
            Stream::Tls(s) => s.poll_write_ready(cx),
        }
    }
    /// Sends what a layer above the socket still holds (TLS records); `WouldBlock` if the
    /// socket cannot take it all now. Plain sockets hold nothing.
    pub fn try_flush(&self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.try_flush(),
            _ => Ok(()),
        }
    }
    /// Sends the slices in one `sendmsg` (TCP, UNIX), without waiting.
    fn try_send_vectored(&self, bufs: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
        let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
        match self {
            Stream::Tcp(s) => {
                s.io(Interest::WRITABLE, || s.sock().send_vectored_with_flags(bufs, flags))
            }
            Stream::Unix(s) => s.try_write_vectored(bufs),
            Stream::Tls(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.try_send(&[], buf, false)
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
            Stream::Tcp(s) => s.io(Interest::WRITABLE, || send(s.sock())),
            // No `MSG_MORE` on UNIX streams.
            Stream::Unix(s) if head.is_empty() => s.try_write(data),
            Stream::Unix(s) => s.try_write_vectored(&[IoSlice::new(head), IoSlice::new(data)]),
            Stream::Tls(s) => s.try_send(head, data, more),
        }
    }
    /// Sends a FIN (half-close): the peer reads end-of-stream, the other direction stays open.
    pub fn shutdown_write(&self) -> io::Result<()> {
        if let Stream::Tls(s) = self {
            return s.shutdown_write();
        }
        match socket2::SockRef::from(self).shutdown(Shutdown::Write) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
    /// Waits until the peer sent something or closed; `Ok(true)` means it closed (EOF).
    /// UNIX streams have no async peek: for them this reports "sent something" at once.
    /// The peer has shut its sending side already (no wait; plain sockets only).
    pub fn shut_by_peer(&self) -> bool {
        match self.transport() {
            s @ Stream::Tcp(_) => {
                use std::os::fd::AsRawFd;
                crate::sys::peer_shut_write(s.as_fd().as_raw_fd())
            }
            _ => false,
        }
    }

    pub async fn peer_closed(&self) -> io::Result<bool> {
        match self {
            Stream::Tcp(s) => s.peer_closed().await,
            Stream::Unix(_) => Ok(false),
            Stream::Tls(s) if s.has_buffered() => Ok(false),
            // Any record (even a close_notify) counts as "sent something".
            Stream::Tls(s) => Box::pin(s.inner().peer_closed()).await,
        }
    }
}

impl Stream {
    /// Takes over a connection another worker's event loop registered: its registration is
    /// dropped here and made again with this worker's loop when it must wait (the idle pool's
    /// takeover, see `http::pool`).
    pub fn move_to_this_worker(self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(mut s) => {
                s.sock.unregister();
                s.drained.set(false);
                Stream::Tcp(s)
            }
            Stream::Unix(s) => Stream::Unix(UnixStream::from_std(s.into_std()?)?),
            Stream::Tls(s) => Stream::Tls(Box::new(s.map_inner(Stream::move_to_this_worker)?)),
        })
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
            Stream::Tls(s) => s.inner().as_fd(),
        }
    }
}

/// A buffer borrowed from the worker's pool; returned to it on drop. A new one's pages take
/// memory only as they are written (`sys::PageBuf`).
pub struct Buf(Option<crate::sys::PageBuf>);

static POOL: Slot<RefCell<Vec<crate::sys::PageBuf>>> =
    Slot::new(Id::Buffers, || RefCell::new(Vec::new()));

/// Buffers kept per worker for reuse; beyond this, returned buffers are freed.
const POOL_MAX: usize = 4096;

impl Buf {
    pub fn take() -> Self {
        let b = POOL.with(|p| p.borrow_mut().pop());
        Buf(Some(b.unwrap_or_else(|| crate::sys::PageBuf::new(BUFSIZE))))
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
            POOL.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < POOL_MAX {
                    p.push(b);
                }
            });
        }
    }
}
