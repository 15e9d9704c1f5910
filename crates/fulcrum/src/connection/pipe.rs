//! [`Pipe`]: what moving bytes needs of one side of a connection, whatever carries them: a
//! socket's non-blocking contract (`try_*` calls that say `WouldBlock`, readiness polled
//! apart). A [`Stream`] is one; so is an HTTP/2 stream's view while the HTTP session still
//! moves HTTP/1 bytes through it (`http::peer::Peer`). Tunnels, whole writes and receive
//! buffers are written once against it.
//!
//! Must not touch: what the bytes mean.

use std::io;
use std::os::fd::AsFd;
use std::task::{Context, Poll};

use super::Stream;

/// One side of a connection as bytes both ways (see the module's doc).
pub trait Pipe {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Forgets the read readiness after a read that drained the source (see
    /// [`Stream::clear_read_ready`]); nothing for a source that knows better itself.
    fn clear_read_ready(&self);
    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Sends `head` then `data` without waiting (see [`Stream::try_send`]).
    fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize>;
    /// Sends what a layer above the source still holds (TLS records).
    fn try_flush(&self) -> io::Result<()>;
    /// Ends the sending direction (a FIN, or the end of an HTTP/2 stream's data).
    fn shutdown_write(&self) -> io::Result<()>;
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.try_send(&[], buf, false)
    }
}

/// A connection to a server as the connect path (`tcp::connect_server_reusing`) hands it on:
/// a new one is a [`Stream`]; an idle one the caller supplies may be what a layer above made
/// of one (an HTTP/2 stream's view, `http::peer::Peer`).
pub trait ServerLink: AsFd + From<Stream> {
    /// The SNI it was made with (see [`Stream::server_sni`]).
    fn server_sni(&self) -> Option<&str>;
    /// Drops it with nothing in flight (see [`super::discard`]).
    fn discard(self);
}

impl ServerLink for Stream {
    fn server_sni(&self) -> Option<&str> {
        Stream::server_sni(self)
    }
    fn discard(self) {
        super::discard(self)
    }
}

impl Pipe for Stream {
    #[inline(always)]
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Stream::poll_read_ready(self, cx)
    }
    #[inline(always)]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        Stream::try_read(self, buf)
    }
    #[inline(always)]
    fn clear_read_ready(&self) {
        Stream::clear_read_ready(self)
    }
    #[inline(always)]
    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Stream::poll_write_ready(self, cx)
    }
    #[inline(always)]
    fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize> {
        Stream::try_send(self, head, data, more)
    }
    #[inline(always)]
    fn try_flush(&self) -> io::Result<()> {
        Stream::try_flush(self)
    }
    #[inline(always)]
    fn shutdown_write(&self) -> io::Result<()> {
        Stream::shutdown_write(self)
    }
}
