//! [`Peer`]: one side of an HTTP transaction as the session moves bytes through it: a byte
//! stream (HTTP/1 over TCP, UNIX or TLS: a [`Stream`]), or one HTTP/2 stream through its
//! view (`h2::view::H1View` from clients, `h2::upstream::UpView` to servers), which hands the
//! session heads it built from HEADERS frames and takes the heads the session parsed or built.
//!
//! The views are HTTP's, so they live here and not in `connection`, whose `Stream` is bytes
//! only. An HTTP/2 stream gives its body as [`Piece`]s (data blocks, trailers as fields, the
//! end) and takes them, so a body with an HTTP/2 side never crosses as HTTP/1 chunks: between
//! two HTTP/2 peers DATA goes to DATA, and an HTTP/1 side's framing is taken apart or written
//! by `session::pieces`; a body a rule waits for stays in its stream, and the rules see a
//! copy of its data ([`Peer::poll_held`]). (HTTP/1 bytes still reach a view for tunnels.)
//!
//! Must not touch: what the bytes mean, rules, servers.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use super::fcgi::FcgiView;
use super::h2::upstream::UpView;
use super::h2::view::H1View;
use crate::connection::{Pipe, ServerLink, Stream};

/// One piece of a message body as a driver gives it: data (in the caller's buffer), trailers
/// as fields, or the end. Each driver frames them its own way.
#[derive(Debug)]
pub enum Piece {
    /// Data bytes; `end`: the message ends with them (no trailers follow).
    Data { end: bool },
    /// The trailers, which end the message.
    Trailers(fulcrum_h2::RawHead),
    /// The message ended (after data given before).
    End,
}

/// What an HTTP/2 stream holds of a body waited for ([`Peer::poll_held`]).
#[derive(Debug, Clone, Copy)]
pub struct Hold {
    /// The body ended: all of it is held.
    pub ended: bool,
    /// Its window is spent: no more comes until some is read.
    pub full: bool,
}

/// One side of a transaction (see the module's doc).
pub enum Peer {
    /// HTTP/1 over a byte stream.
    Bytes(Stream),
    /// One HTTP/2 stream of a client connection (`h2::view`).
    H2(Box<H1View>),
    /// One HTTP/2 stream of a connection to a server (`h2::upstream`).
    H2Up(Box<UpView>),
    /// A request to a FastCGI server (`http::fcgi`).
    Fcgi(Box<FcgiView>),
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

    /// A server side that takes the request head parsed and gives the response built: an
    /// HTTP/2 stream or a FastCGI request (not HTTP/1 text).
    #[inline]
    pub fn is_message(&self) -> bool {
        matches!(self, Peer::H2Up(_) | Peer::Fcgi(_))
    }

    /// The SNI a connection to a server was made with (over TLS, or an HTTP/2 stream's).
    pub fn server_sni(&self) -> Option<&str> {
        match self {
            Peer::Bytes(s) => s.server_sni(),
            Peer::H2Up(v) => v.sni(),
            Peer::Fcgi(v) => v.server_sni(),
            Peer::H2(_) => None,
        }
    }

    /// What TLS fetches on the server side read: the byte stream, or an HTTP/2 stream's
    /// connection facts.
    pub fn tls_side(&self) -> crate::tls::facts::ServerSide<'_> {
        use crate::tls::facts::ServerSide;
        match self {
            Peer::Bytes(s) => ServerSide::Stream(s),
            Peer::H2Up(v) => {
                use std::os::fd::AsFd;
                ServerSide::Facts { tls: v.tls_facts(), fd: Some(v.as_fd()), h2: true }
            }
            Peer::Fcgi(v) => v.tls_side(),
            Peer::H2(_) => ServerSide::Facts { tls: None, fd: None, h2: true },
        }
    }

    /// The peer has shut its sending side already (no wait; plain sockets only).
    pub fn shut_by_peer(&self) -> bool {
        self.stream().is_some_and(Stream::shut_by_peer)
    }

    /// This side gives its message's body as [`Piece`]s from here on: an HTTP/2 stream whose
    /// head was taken built and whose body bytes were all read (none wait as HTTP/1 bytes).
    #[inline]
    pub fn gives_pieces(&self) -> bool {
        match self {
            Peer::Bytes(_) => false,
            Peer::H2(v) => v.gives_pieces(),
            Peer::H2Up(v) => v.gives_pieces(),
            Peer::Fcgi(v) => v.gives_pieces(),
        }
    }

    /// This side takes its message's body as [`Piece`]s from here on: an HTTP/2 stream whose
    /// head went and which took no body bytes partly (no chunk begun).
    #[inline]
    pub fn takes_pieces(&self) -> bool {
        match self {
            Peer::Bytes(_) => false,
            Peer::H2(v) => v.takes_pieces(),
            Peer::H2Up(v) => v.takes_pieces(),
            Peer::Fcgi(v) => v.takes_pieces(),
        }
    }

    /// The next piece of the body this side gives (see [`Peer::gives_pieces`]); data is
    /// swapped into `buf` (its old bytes dropped). `ConnectionReset` when the stream failed.
    pub fn poll_piece(&self, cx: &mut Context<'_>, buf: &mut Vec<u8>) -> Poll<io::Result<Piece>> {
        match self {
            Peer::Bytes(_) => Poll::Ready(Err(io::ErrorKind::Unsupported.into())),
            Peer::H2(v) => v.poll_piece(cx, buf),
            Peer::H2Up(v) => v.poll_piece(cx, buf),
            Peer::Fcgi(v) => v.poll_piece(cx, buf),
        }
    }

    /// The body this side gives, held in its stream without being read (`wait-for-body`, see
    /// [`Peer::gives_pieces`]): ready once more than `have` bytes of its data came, it ended
    /// or its window is spent, with its data so far copied into `out`. `Unsupported` for a
    /// byte stream (its bytes are buffered by the session), `ConnectionReset` when it failed.
    pub fn poll_held(
        &self,
        cx: &mut Context<'_>,
        have: usize,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<Hold>> {
        match self {
            Peer::Bytes(_) | Peer::Fcgi(_) => Poll::Ready(Err(io::ErrorKind::Unsupported.into())),
            Peer::H2(v) => v.poll_held(cx, have, out),
            Peer::H2Up(v) => v.poll_held(cx, have, out),
        }
    }

    /// Gives back a buffer [`Peer::poll_piece`] filled, emptied, to the stream's connection
    /// (its next streams' data takes it instead of allocating).
    pub fn give_buf(&self, b: Vec<u8>) {
        match self {
            Peer::Bytes(_) | Peer::Fcgi(_) => {}
            Peer::H2(v) => v.give_buf(b),
            Peer::H2Up(v) => v.give_buf(b),
        }
    }

    /// Sends data of the body this side takes, ending it with `end` (see
    /// [`Peer::takes_pieces`]). Taken whole: wait for [`Pipe::poll_write_ready`] first.
    pub fn send_data(&self, data: &[u8], end: bool) -> io::Result<()> {
        match self {
            Peer::Bytes(_) => Err(io::ErrorKind::Unsupported.into()),
            Peer::H2(v) => v.send_data(data, end),
            Peer::H2Up(v) => v.send_data(data, end),
            Peer::Fcgi(v) => v.send_data(data, end),
        }
    }

    /// Ends the body this side takes with trailers.
    pub fn send_trailers(&self, fields: &fulcrum_h2::RawHead) -> io::Result<()> {
        match self {
            Peer::Bytes(_) => Err(io::ErrorKind::Unsupported.into()),
            Peer::H2(v) => v.send_trailers(fields),
            Peer::H2Up(v) => v.send_trailers(fields),
            Peer::Fcgi(v) => v.send_trailers(),
        }
    }

    /// A server's final response head is ready to be taken built (an HTTP/2 stream's).
    #[inline]
    pub fn has_response_head(&self) -> bool {
        match self {
            Peer::H2Up(v) => v.has_response_head(),
            Peer::Fcgi(v) => v.has_response_head(),
            _ => false,
        }
    }

    /// Waits until the peer sent something or closed; `Ok(true)` means it closed (EOF).
    pub async fn peer_closed(&self) -> io::Result<bool> {
        match self {
            Peer::Bytes(s) => s.peer_closed().await,
            Peer::H2(v) => v.peer_closed().await,
            Peer::H2Up(v) => v.peer_closed().await,
            Peer::Fcgi(v) => v.peer_closed().await,
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
            Peer::Fcgi(v) => v.poll_read_ready(cx),
        }
    }
    #[inline(always)]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Peer::Bytes(s) => s.try_read(buf),
            Peer::H2(v) => v.try_read(buf),
            Peer::H2Up(v) => v.try_read(buf),
            Peer::Fcgi(v) => v.try_read(buf),
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
            Peer::Fcgi(v) => v.poll_write_ready(cx),
        }
    }
    #[inline(always)]
    fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize> {
        match self {
            Peer::Bytes(s) => s.try_send(head, data, more),
            Peer::H2(v) => v.try_send(head, data),
            Peer::H2Up(v) => v.try_send(head, data),
            // (Only bodies go to a FastCGI server, as pieces; no tunnel.)
            Peer::Fcgi(_) => Err(io::ErrorKind::Unsupported.into()),
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
            Peer::Fcgi(_) => Ok(()),
        }
    }
}

impl AsFd for Peer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Peer::Bytes(s) => s.as_fd(),
            Peer::H2(v) => v.as_fd(),
            Peer::H2Up(v) => v.as_fd(),
            Peer::Fcgi(v) => v.as_fd(),
        }
    }
}
