//! A message body between its HTTP/2 frames and its HTTP/1 bytes, in both directions: the
//! view of a client's stream ([`super::view`]) reads one with [`Incoming`] and writes one with
//! [`Outgoing`] (a stream to a server, [`super::upstream`], has its own, over
//! [`super::backconn`]; it shares [`Framing`]).
//!
//! Owns: DATA frames, their flow control and the body's HTTP/1 framing (a length, chunks and
//! their trailers, or a tunnel's raw bytes). Must not touch: heads (each view writes its own).

use std::io;
use std::task::{Context, Poll};

use bytes::Bytes;
use fulcrum_http::ChunkedScanner;
use h2::{RecvStream, SendStream};

/// A body received in DATA frames, read as HTTP/1 bytes.
pub struct Incoming {
    /// `None` once the message has no body, or when a view handed it on.
    pub body: Option<RecvStream>,
    /// HTTP/1 bytes ready: `pending[pos..]`.
    pub pending: Vec<u8>,
    pos: usize,
    /// Written in chunks (no `content-length` says the size): trailers then close it.
    pub chunked: bool,
    /// Everything is in `pending` (or was read).
    pub ended: bool,
    /// The stream failed (reset by the peer, connection gone).
    pub failed: bool,
}

impl Incoming {
    /// `head`: HTTP/1 bytes read before the body's.
    pub fn new(head: Vec<u8>, body: Option<RecvStream>, chunked: bool) -> Incoming {
        let ended = body.as_ref().is_none_or(|b| b.is_end_stream());
        Incoming { body, pending: head, pos: 0, chunked, ended, failed: false }
    }

    /// Puts `bytes` before those not read yet.
    pub fn prepend(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.pending[self.pos..]);
        self.pending = bytes;
        self.pos = 0;
    }

    /// Nothing is ready to be read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.pending.len()
    }

    /// Ready when bytes, the end or a failure can be read.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.is_empty() || self.ended || self.failed {
            return Poll::Ready(());
        }
        self.pending.clear();
        self.pos = 0;
        let Some(body) = self.body.as_mut() else {
            self.ended = true;
            return Poll::Ready(());
        };
        match body.poll_data(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(data))) => {
                // The window opens again as soon as the bytes are here: at most one frame
                // waits in this view, and at most a window's worth inside h2.
                let _ = body.flow_control().release_capacity(data.len());
                if !self.chunked {
                    self.pending.extend_from_slice(&data);
                } else if !data.is_empty() {
                    let size = format!("{:x}\r\n", data.len());
                    self.pending.extend_from_slice(size.as_bytes());
                    self.pending.extend_from_slice(&data);
                    self.pending.extend_from_slice(b"\r\n");
                }
                // (The end, with its trailers if any, is seen by the next poll.)
                Poll::Ready(())
            }
            // The end: with trailers, they close the chunked body (without chunks, HTTP/1 has
            // no place for them: dropped).
            Poll::Ready(None) => match body.poll_trailers(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(Some(trailers))) if self.chunked => {
                    self.pending.extend_from_slice(b"0\r\n");
                    for (name, value) in trailers.iter() {
                        self.pending.extend_from_slice(name.as_str().as_bytes());
                        self.pending.extend_from_slice(b": ");
                        self.pending.extend_from_slice(value.as_bytes());
                        self.pending.extend_from_slice(b"\r\n");
                    }
                    self.pending.extend_from_slice(b"\r\n");
                    self.ended = true;
                    Poll::Ready(())
                }
                Poll::Ready(Ok(_)) => {
                    if self.chunked {
                        self.pending.extend_from_slice(b"0\r\n\r\n");
                    }
                    self.ended = true;
                    Poll::Ready(())
                }
                Poll::Ready(Err(_)) => {
                    self.failed = true;
                    Poll::Ready(())
                }
            },
            Poll::Ready(Some(Err(_))) => {
                self.failed = true;
                Poll::Ready(())
            }
        }
    }

    pub fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_ready(&self.pending, &mut self.pos, self.ended, self.failed, buf)
    }

    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = &self.pending[self.pos.min(self.pending.len())..];
        if avail.is_empty() {
            return if self.ended { Ok(0) } else { Err(io::ErrorKind::WouldBlock.into()) };
        }
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        Ok(n)
    }

    /// The body is still arriving (for the connection to read to its end).
    pub fn unfinished(&mut self) -> Option<RecvStream> {
        self.body.take().filter(|b| !self.ended && !self.failed && !b.is_end_stream())
    }
}

/// Reads bytes ready (`pending[*pos..]`) into `buf`; without any, the end (`ended`: 0), a
/// failure (`ConnectionReset`) or `WouldBlock`.
pub fn read_ready(
    pending: &[u8],
    pos: &mut usize,
    ended: bool,
    failed: bool,
    buf: &mut [u8],
) -> io::Result<usize> {
    let avail = pending.len() - *pos;
    if avail > 0 {
        let n = avail.min(buf.len());
        buf[..n].copy_from_slice(&pending[*pos..*pos + n]);
        *pos += n;
        return Ok(n);
    }
    if failed {
        return Err(io::ErrorKind::ConnectionReset.into());
    }
    if ended {
        return Ok(0);
    }
    Err(io::ErrorKind::WouldBlock.into())
}

/// How an HTTP/1 body being sent says where it ends.
pub enum Framing {
    Length(u64),
    Chunked(ChunkedScanner),
    /// Until the writer shuts its side: a response read until close, a tunnel's bytes.
    UntilClose,
}

/// A body sent in DATA frames, written as HTTP/1 bytes. Each write goes to the stream at once
/// (h2 keeps what its window does not take yet); the next write waits while the window holds
/// nothing beyond what is kept, so at most a window and one write are buffered, and a body that
/// pauses (a gRPC stream between messages) is never held back.
pub struct Outgoing {
    framing: Framing,
    stream: SendStream<Bytes>,
    /// Scratch for decoding chunks.
    decoded: Vec<u8>,
    /// A chunked body's trailer lines (`name: value` CRLF), sent as the last HEADERS frame.
    trailers: Vec<u8>,
    /// Some data went to the stream.
    sent: bool,
    /// The stream was ended (or reset).
    done: bool,
}

/// Window asked for beyond what waits to be sent: one byte, so that the stream's capacity turns
/// positive exactly when everything written so far has its window (the next write may go),
/// while holding next to nothing of the connection's window, which all its streams share (a
/// larger reservation let one waiting stream starve the others' DATA).
const WANT: usize = 1;

impl Outgoing {
    pub fn new(framing: Framing, stream: SendStream<Bytes>) -> Outgoing {
        Outgoing {
            framing,
            stream,
            decoded: Vec::new(),
            trailers: Vec::new(),
            sent: false,
            done: false,
        }
    }

    /// The whole body was sent (or the stream ended).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The stream takes another write now.
    pub fn is_flushed(&self) -> bool {
        self.done || !self.sent || self.stream.capacity() > 0
    }

    /// Ready when the stream takes another write (or there is nothing to wait for).
    pub fn poll_capacity(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.is_flushed() {
                return Poll::Ready(Ok(()));
            }
            self.stream.reserve_capacity(WANT);
            match self.stream.poll_capacity(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(h2_error(e))),
                Poll::Ready(None) => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            }
        }
    }

    /// Body bytes in their HTTP/1 framing: their data goes to the stream, which ends with the
    /// body (bytes beyond the body's end are dropped).
    pub fn take(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.done || bytes.is_empty() {
            return Ok(());
        }
        let (data, ends): (Bytes, bool) = match &mut self.framing {
            Framing::Length(left) => {
                let n = (bytes.len() as u64).min(*left) as usize;
                *left -= n as u64;
                (super::hpack::copy(&bytes[..n]), *left == 0)
            }
            Framing::Chunked(scan) => {
                self.decoded.clear();
                let s = scan
                    .decode(bytes, &mut self.decoded, &mut self.trailers)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                (super::hpack::copy(&self.decoded), s.done)
            }
            Framing::UntilClose => (super::hpack::copy(bytes), false),
        };
        if ends {
            return self.end(data);
        }
        if !data.is_empty() {
            self.sent = true;
            self.stream.send_data(data, false).map_err(h2_error)?;
            self.stream.reserve_capacity(WANT);
        }
        Ok(())
    }

    /// Ends the body as it stands: a complete message (or a body that lasts until close)
    /// ends the stream; an unfinished one resets it.
    pub fn finish(&mut self) {
        if self.done {
            return;
        }
        if matches!(self.framing, Framing::UntilClose) {
            let _ = self.end(Bytes::new());
        } else {
            self.reset(h2::Reason::CANCEL);
        }
    }

    pub fn reset(&mut self, reason: h2::Reason) {
        if !self.done {
            self.done = true;
            self.stream.send_reset(reason);
        }
    }

    /// Waits until the peer resets the stream.
    pub fn poll_reset(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.stream.poll_reset(cx).map(|_| ())
    }

    /// Ends the stream with its last data, then its trailers when it has some.
    fn end(&mut self, last: Bytes) -> io::Result<()> {
        self.done = true;
        let stream = &mut self.stream;
        if self.trailers.is_empty() {
            return stream.send_data(last, true).map_err(h2_error);
        }
        if !last.is_empty() {
            stream.send_data(last, false).map_err(h2_error)?;
        }
        let mut map = http::HeaderMap::new();
        for line in self.trailers.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if connection_specific(name) {
                continue;
            }
            if let (Ok(n), Ok(v)) =
                (http::HeaderName::from_bytes(name), http::HeaderValue::from_bytes(value))
            {
                map.append(n, v);
            }
        }
        stream.send_trailers(map).map_err(h2_error)
    }
}

/// Fields that speak for one HTTP/1 connection: never sent in HTTP/2 (RFC 9113 8.2.2).
pub fn connection_specific(name: &[u8]) -> bool {
    [&b"connection"[..], b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

pub fn h2_error(e: h2::Error) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, e)
}
