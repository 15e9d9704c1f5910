//! A message body between HTTP/2's DATA frames and what the session moves, for both sides of
//! HTTP/2 (`frontconn` from clients, `backconn` to servers): the body's HTTP/1 framing (a
//! length, chunks and their trailers, or a tunnel's raw bytes) taken apart into DATA frames
//! ([`Sending`]), and a stream's DATA and trailers given as HTTP/1 bytes ([`Received`]); or,
//! between two HTTP/2 peers, the body as pieces both ways (data blocks, trailers as fields:
//! [`Received::poll_piece`], [`Sending::pass`]), with no HTTP/1 framing at all.
//!
//! Owns: bodies' framing. Must not touch: heads (each view writes its own), frames.

use std::io;
use std::task::{Context, Poll};

use fulcrum_http::ChunkedScanner;

use super::conn::{self, Key, Side};
use super::frames::CANCEL;
use crate::http::peer::{Hold, Piece};

/// Where a body's DATA frames go: a connection's stream.
pub trait Sink {
    fn send_data(&self, id: u32, data: &[u8], end: bool) -> io::Result<()>;
    fn send_trailers(&self, id: u32, block: Vec<u8>) -> io::Result<()>;
    fn reset(&self, id: u32, code: u32);
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

/// A message received on a stream as HTTP/1 bytes: what was put first (a head's text), then
/// its body as the stream's DATA frames bring it (in chunks, with the trailers, when no size
/// was given).
pub struct Received {
    /// Bytes ready: `pending[pos..]`.
    pending: Vec<u8>,
    pos: usize,
    chunked: bool,
    /// Everything is in `pending` (or was read).
    ended: bool,
    failed: bool,
}

impl Received {
    /// `first` to be read first; `more`: body bytes may still come from the stream.
    pub fn new(first: Vec<u8>, more: bool, chunked: bool) -> Received {
        Received { pending: first, pos: 0, chunked, ended: !more, failed: false }
    }

    pub fn prepend(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.pending[self.pos..]);
        self.pending = bytes;
        self.pos = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.pending.len()
    }

    /// Its buffer, for the connection's next streams (see `StreamMap::give_buf`).
    pub fn take_buf(&mut self) -> Vec<u8> {
        self.pos = 0;
        std::mem::take(&mut self.pending)
    }

    /// Ready when bytes, the end or a failure can be read: takes what stream `id` of the
    /// connection `key` received (its window opens again as the bytes are read: at most a
    /// window's worth waits).
    pub fn poll_ready<S: Side>(&mut self, key: Key<S>, id: u32, cx: &mut Context<'_>) -> Poll<()> {
        if !self.is_empty() || self.ended || self.failed {
            return Poll::Ready(());
        }
        self.pending.clear();
        self.pos = 0;
        let got = conn::with(key, |c| {
            let got = c.stream(id, |st| self.take(st, cx));
            if let Some(Poll::Ready(n)) = got {
                if n > 0 {
                    c.release(id, n);
                }
            }
            got
        });
        match got.flatten() {
            Some(Poll::Pending) => Poll::Pending,
            Some(Poll::Ready(_)) => Poll::Ready(()),
            None => {
                self.failed = true;
                Poll::Ready(())
            }
        }
    }

    /// Takes the stream's body bytes (their count), its end or its failure.
    fn take<P>(&mut self, st: &mut conn::Strm<P>, cx: &mut Context<'_>) -> Poll<usize> {
        if !st.data.is_empty() {
            let n = st.data.len();
            if !self.chunked {
                std::mem::swap(&mut self.pending, &mut st.data);
            } else {
                let size = format!("{n:x}\r\n");
                self.pending.extend_from_slice(size.as_bytes());
                self.pending.extend_from_slice(&st.data);
                self.pending.extend_from_slice(b"\r\n");
                st.data.clear();
            }
            return Poll::Ready(n);
        }
        if st.recv_end {
            // The end: with trailers, they close the chunked body (without chunks, HTTP/1 has
            // no place for them: dropped).
            if self.chunked {
                self.pending.extend_from_slice(b"0\r\n");
                if let Some(t) = st.trailers.take() {
                    write_fields(&mut self.pending, t.fields());
                }
                self.pending.extend_from_slice(b"\r\n");
            }
            self.ended = true;
            return Poll::Ready(0);
        }
        if st.reset.is_some() {
            self.failed = true;
            return Poll::Ready(0);
        }
        st.poll_readable_or(cx, false).map(|()| 0)
    }

    pub fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_ready(&self.pending, &mut self.pos, self.ended, self.failed, buf)
    }

    /// The body held in stream `id` of the connection `key` without reading it
    /// (`wait-for-body`): ready, its data so far copied into `out`, once more than `have`
    /// bytes of it came, the stream ended, or its window is spent (nothing more comes until
    /// some is read); `ConnectionReset` when it failed. As for a piece, only once every byte
    /// given as HTTP/1 was read: the data is then taken as pieces, the window opening as usual.
    pub fn poll_held<S: Side>(
        &mut self,
        key: Key<S>,
        id: u32,
        cx: &mut Context<'_>,
        have: usize,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<Hold>> {
        if self.failed {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        if self.ended {
            out.clear();
            return Poll::Ready(Ok(Hold { ended: true, full: false }));
        }
        let got = conn::with(key, |c| {
            c.stream(id, |st| {
                st.poll_more(cx, have).map(|()| {
                    if st.reset.is_some() {
                        return Err(io::ErrorKind::ConnectionReset.into());
                    }
                    out.clear();
                    out.extend_from_slice(&st.data);
                    Ok(Hold { ended: st.recv_end, full: st.recv_window <= 0 })
                })
            })
        });
        got.flatten().unwrap_or(Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())))
    }

    /// The body's next piece, taken from stream `id` of the connection `key` as it came: data
    /// swapped into `buf` (no copy; the stream's window opens again as for a read), the
    /// trailers as fields, the end, or `ConnectionReset`. Only once every byte given as HTTP/1
    /// was read ([`Received::is_empty`]): what came as chunks was whole chunks, so the pieces
    /// follow them.
    pub fn poll_piece<S: Side>(
        &mut self,
        key: Key<S>,
        id: u32,
        cx: &mut Context<'_>,
        buf: &mut Vec<u8>,
    ) -> Poll<io::Result<Piece>> {
        if self.failed {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        if self.ended {
            return Poll::Ready(Ok(Piece::End));
        }
        let got = conn::with(key, |c| {
            let got = c.stream(id, |st| {
                if !st.data.is_empty() {
                    buf.clear();
                    std::mem::swap(buf, &mut st.data);
                    let end = st.recv_end && st.trailers.is_none();
                    return Poll::Ready(Ok(Piece::Data { end }));
                }
                if st.recv_end {
                    return Poll::Ready(Ok(match st.trailers.take() {
                        Some(t) => Piece::Trailers(t),
                        None => Piece::End,
                    }));
                }
                if st.reset.is_some() {
                    return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
                }
                st.poll_readable_or(cx, false).map(|()| Ok(Piece::End))
            });
            if let Some(Poll::Ready(Ok(Piece::Data { .. }))) = got {
                c.release(id, buf.len());
            }
            got
        });
        let got = got.flatten().unwrap_or(Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())));
        match &got {
            Poll::Ready(Ok(Piece::Data { end: false })) | Poll::Pending => {}
            Poll::Ready(Ok(_)) => self.ended = true,
            Poll::Ready(Err(_)) => self.failed = true,
        }
        got
    }
}

/// Fields as HTTP/1 lines (`name: value` CRLF).
pub fn write_fields<'a>(out: &mut Vec<u8>, fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
    for (name, value) in fields {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

/// How an HTTP/1 body being sent says where it ends.
pub enum Framing {
    Length(u64),
    Chunked(ChunkedScanner),
    /// Until the writer shuts its side: a response read until close, a tunnel's bytes.
    UntilClose,
}

/// A body going out in DATA frames, taken as HTTP/1 bytes (a request's to a server, a
/// response's to a client).
pub struct Sending {
    framing: Framing,
    /// Scratch for decoding chunks.
    decoded: Vec<u8>,
    /// A chunked body's trailer lines (`name: value` CRLF), sent as the last HEADERS frame.
    trailers: Vec<u8>,
    /// The stream was ended (or reset).
    pub done: bool,
}

impl Sending {
    pub fn new(framing: Framing) -> Sending {
        Sending { framing, decoded: Vec::new(), trailers: Vec::new(), done: false }
    }

    /// Body bytes in their HTTP/1 framing: their data goes to the stream, which ends with the
    /// body (bytes beyond the body's end are dropped).
    pub fn take(&mut self, c: &impl Sink, id: u32, bytes: &[u8]) -> io::Result<()> {
        if self.done || bytes.is_empty() {
            return Ok(());
        }
        let mut decoded = std::mem::take(&mut self.decoded);
        let (data, ends): (&[u8], bool) = match &mut self.framing {
            Framing::Length(left) => {
                let n = (bytes.len() as u64).min(*left) as usize;
                *left -= n as u64;
                (&bytes[..n], *left == 0)
            }
            Framing::Chunked(scan) => {
                decoded.clear();
                let s = scan
                    .decode(bytes, &mut decoded, &mut self.trailers)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                (&decoded, s.done)
            }
            Framing::UntilClose => (bytes, false),
        };
        let r = if ends {
            self.end(c, id, data)
        } else if !data.is_empty() {
            c.send_data(id, data, false)
        } else {
            Ok(())
        };
        self.decoded = decoded;
        r
    }

    /// Whether the body may go on as pieces ([`Sending::pass`]): it is not over, and no
    /// HTTP/1 chunk was begun (nor trailers) that its framing would still wait to complete.
    pub fn takes_pieces(&self) -> bool {
        !self.done
            && match &self.framing {
                Framing::Length(_) => true,
                Framing::Chunked(scan) => scan.at_chunk_start() && self.trailers.is_empty(),
                Framing::UntilClose => true,
            }
    }

    /// Body data as a message's block (no HTTP/1 framing): it goes to the stream as it is,
    /// and ends it with `end`. Data after the end is dropped, as in [`Sending::take`].
    pub fn pass(&mut self, c: &impl Sink, id: u32, data: &[u8], end: bool) -> io::Result<()> {
        if self.done {
            return Ok(());
        }
        if let Framing::Length(left) = &mut self.framing {
            *left = left.saturating_sub(data.len() as u64);
        }
        self.done = end;
        if data.is_empty() && !end {
            return Ok(());
        }
        c.send_data(id, data, end)
    }

    /// Ends the body with trailers given as fields (those of one HTTP/1 connection left out).
    pub fn pass_trailers(
        &mut self,
        c: &impl Sink,
        id: u32,
        fields: &fulcrum_h2::RawHead,
    ) -> io::Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let kept = fields.fields().filter(|(n, _)| !connection_specific(n));
        c.send_trailers(id, super::hpack::block_of(kept))
    }

    /// Ends the body as it stands: a complete message (or a body that lasts until close)
    /// ends the stream; an unfinished one resets it.
    pub fn finish(&mut self, c: &impl Sink, id: u32) {
        if self.done {
            return;
        }
        if matches!(self.framing, Framing::UntilClose) {
            let _ = self.end(c, id, &[]);
        } else {
            self.done = true;
            c.reset(id, CANCEL);
        }
    }

    /// Ends the stream with its last data, then its trailers when it has some.
    pub fn end(&mut self, c: &impl Sink, id: u32, last: &[u8]) -> io::Result<()> {
        self.done = true;
        if self.trailers.is_empty() {
            return c.send_data(id, last, true);
        }
        if !last.is_empty() {
            c.send_data(id, last, false)?;
        }
        let fields = trailer_fields(&mut self.trailers);
        let block = super::hpack::block_of(fields.fields());
        c.send_trailers(id, block)
    }
}

/// Trailer lines (`name: value` CRLF, as the chunked scanner keeps them) as fields for HTTP/2:
/// names in lower case, those of one HTTP/1 connection (and any HTTP/2 could not carry) left
/// out. `lines` is emptied.
pub fn trailer_fields(lines: &mut Vec<u8>) -> fulcrum_h2::RawHead {
    let mut fields = fulcrum_h2::RawHead::new();
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (name, value) = (line[..colon].to_ascii_lowercase(), line[colon + 1..].trim_ascii());
        let valid = http::HeaderName::from_bytes(&name).is_ok()
            && http::HeaderValue::from_bytes(value).is_ok();
        if valid && !connection_specific(&name) {
            fields.push(&name, value);
        }
    }
    lines.clear();
    fields
}

/// Fields that speak for one HTTP/1 connection: never sent in HTTP/2 (RFC 9113 8.2.2).
pub fn connection_specific(name: &[u8]) -> bool {
    [&b"connection"[..], b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}
