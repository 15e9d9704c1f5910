//! [`Peer`]: one side of an HTTP transaction as the session moves bytes through it: a byte
//! stream (HTTP/1 over TCP, UNIX or TLS: a [`Stream`]), or one HTTP/2 stream through its
//! view (`h2::view::H1View` from clients, `h2::upstream::UpView` to servers), which hands the
//! session heads it built from HEADERS frames and bodies as HTTP/1 bytes.
//!
//! The views are HTTP's, so they live here and not in `connection`, whose `Stream` is bytes
//! only. This is the seam the transaction's re-cut (issue 36) widens: the views are to give
//! and take messages (a head, body data, trailers, the end) instead of HTTP/1 bytes.
//!
//! Must not touch: what the bytes mean, rules, servers.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use super::h2::upstream::UpView;
use super::h2::view::H1View;
use crate::connection::{Pipe, ServerLink, Stream};

/// One side of a transaction (see the module's doc).
pub enum Peer {
    /// HTTP/1 over a byte stream.
    Bytes(Stream),
    /// One HTTP/2 stream of a client connection (`h2::view`).
    H2(Box<H1View>),
    /// One HTTP/2 stream of a connection to a server (`h2::upstream`).
    H2Up(Box<UpView>),
}

impl From<Stream> for Peer {
    #[inline(always)]
    fn from(s: Stream) -> Peer {
        Peer::Bytes(s)
    }
}

impl Peer {
    /// The byte stream, when this side is one.
    #[inline]
    pub fn stream(&self) -> Option<&Stream> {
        match self {
            Peer::Bytes(s) => Some(s),
            _ => None,
        }
    }

    /// The SNI a connection to a server was made with (over TLS, or an HTTP/2 stream's).
    pub fn server_sni(&self) -> Option<&str> {
        match self {
            Peer::Bytes(s) => s.server_sni(),
            Peer::H2Up(v) => v.sni(),
            Peer::H2(_) => None,
        }
    }

    /// What TLS fetches on the server side read: the byte stream, or an HTTP/2 stream's
    /// connection facts.
    pub fn tls_side(&self) -> crate::tls::facts::ServerSide<'_> {
        use crate::tls::facts::ServerSide;
        match self {
            Peer::Bytes(s) => ServerSide::Stream(s),
            Peer::H2Up(v) => ServerSide::Facts(v.tls_facts()),
            Peer::H2(_) => ServerSide::Facts(None),
        }
    }

    /// The peer has shut its sending side already (no wait; plain sockets only).
    pub fn shut_by_peer(&self) -> bool {
        self.stream().is_some_and(Stream::shut_by_peer)
    }

    /// Waits until the peer sent something or closed; `Ok(true)` means it closed (EOF).
    pub async fn peer_closed(&self) -> io::Result<bool> {
        match self {
            Peer::Bytes(s) => s.peer_closed().await,
            Peer::H2(v) => v.peer_closed().await,
            Peer::H2Up(v) => v.peer_closed().await,
        }
    }
}

impl ServerLink for Peer {
    fn server_sni(&self) -> Option<&str> {
        Peer::server_sni(self)
    }
    fn discard(self) {
        if let Peer::Bytes(s) = self {
            crate::connection::discard(s)
        }
    }
}

impl Pipe for Peer {
    #[inline(always)]
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Peer::Bytes(s) => s.poll_read_ready(cx),
            Peer::H2(v) => v.poll_read_ready(cx),
            Peer::H2Up(v) => v.poll_read_ready(cx),
        }
    }
    #[inline(always)]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Peer::Bytes(s) => s.try_read(buf),
            Peer::H2(v) => v.try_read(buf),
            Peer::H2Up(v) => v.try_read(buf),
        }
    }
    #[inline(always)]
    fn clear_read_ready(&self) {
        // A short read of an HTTP/2 stream says nothing about its connection's socket.
        if let Peer::Bytes(s) = self {
            s.clear_read_ready()
        }
    }
    #[inline(always)]
    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Peer::Bytes(s) => s.poll_write_ready(cx),
            Peer::H2(v) => v.poll_write_ready(cx),
            Peer::H2Up(v) => v.poll_write_ready(cx),
        }
    }
    #[inline(always)]
    fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize> {
        match self {
            Peer::Bytes(s) => s.try_send(head, data, more),
            Peer::H2(v) => v.try_send(head, data),
            Peer::H2Up(v) => v.try_send(head, data),
        }
    }
    #[inline(always)]
    fn try_flush(&self) -> io::Result<()> {
        match self {
            Peer::Bytes(s) => s.try_flush(),
            _ => Ok(()),
        }
    }
    #[inline(always)]
    fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Peer::Bytes(s) => s.shutdown_write(),
            Peer::H2(v) => v.shutdown_write(),
            Peer::H2Up(v) => v.shutdown_write(),
        }
    }
}

impl AsFd for Peer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Peer::Bytes(s) => s.as_fd(),
            Peer::H2(v) => v.as_fd(),
            Peer::H2Up(v) => v.as_fd(),
        }
    }
}
