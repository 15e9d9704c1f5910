//! A stream's messages as HTTP/1 bytes: the response read from the stream (its head as
//! text or built, its body in its HTTP/1 framing, trailers included) and the request's body
//! sent in DATA frames.
//!
//! Owns: the HTTP/1 framing of bodies to and from a server's stream. Must not touch: frames
//! (the connection's, `backconn`), the request head.

use std::io;
use std::task::{Context, Poll};

use fulcrum_http::{Head, Limits, Method};

use super::super::backconn::{self, Key};
use super::super::body::read_ready;

/// A response's HTTP/1 bytes: its head's text (unless taken built), then its body as the
/// stream's DATA frames bring it (in chunks, with the trailers, when the server gave no size).
pub(super) struct Msg {
    /// Bytes ready: `pending[pos..]`.
    pending: Vec<u8>,
    pos: usize,
    chunked: bool,
    /// Everything is in `pending` (or was read).
    ended: bool,
    failed: bool,
}

impl Msg {
    /// `more`: body bytes may still come from the stream.
    pub(super) fn new(head: Vec<u8>, more: bool, chunked: bool) -> Msg {
        Msg { pending: head, pos: 0, chunked, ended: !more, failed: false }
    }

    pub(super) fn prepend(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.pending[self.pos..]);
        self.pending = bytes;
        self.pos = 0;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pos >= self.pending.len()
    }

    /// Ready when bytes, the end or a failure can be read.
    pub(super) fn poll_ready(&mut self, key: Key, id: u32, cx: &mut Context<'_>) -> Poll<()> {
        if !self.is_empty() || self.ended || self.failed {
            return Poll::Ready(());
        }
        self.pending.clear();
        self.pos = 0;
        let got = backconn::with(key, |c| {
            let got = c.stream(id, |st| {
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
                    // The end: with trailers, they close the chunked body (without chunks,
                    // HTTP/1 has no place for them: dropped).
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
                st.poll_readable(cx).map(|()| 0)
            });
            // The window opens again as the bytes are read: at most a window's worth waits.
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

    pub(super) fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_ready(&self.pending, &mut self.pos, self.ended, self.failed, buf)
    }
}

/// A response's head as received, and the field its body's HTTP/1 framing adds.
pub(super) struct ResponseHead {
    /// The HEADERS frame's fields as decoded (checked as for any head).
    raw: h2::RawHead,
    status: u16,
    framing: Option<(&'static [u8], &'static [u8])>,
}

impl ResponseHead {
    /// The head built from its fields (see [`UpView::take_response_head`]).
    pub(super) fn build(
        &self,
        head: &mut Head,
        limits: &Limits,
    ) -> Result<usize, fulcrum_http::HeadError> {
        head.begin_response(self.status, reason(self.status).as_bytes())?;
        for (name, value) in self.raw.fields() {
            head.build_field(name, value, limits)?;
        }
        if let Some((name, value)) = self.framing {
            head.build_field(name, value, limits)?;
        }
        head.end_head(limits)
    }

    /// The head as HTTP/1.1 text.
    pub(super) fn text(&self) -> Vec<u8> {
        let mut head = Vec::with_capacity(256);
        write_status(&mut head, self.status);
        write_fields(&mut head, self.raw.fields().chain(self.framing));
        head.extend_from_slice(b"\r\n");
        head
    }
}

/// The head of a response, and its body framed for HTTP/1: as sized by the server, else in
/// chunks (where its trailers fit). `ended`: the stream ended with the head.
pub(super) fn response_head(
    raw: h2::RawHead,
    status: u16,
    ended: bool,
    method: Method,
) -> (ResponseHead, Msg) {
    let bodiless = method == Method::Head || status == 204 || status == 304;
    let tunnel = method == Method::Connect && (200..300).contains(&status);
    let sized = raw.has_content_length();
    let (more, chunked, framing) = if bodiless {
        (false, false, None)
    } else if tunnel || sized {
        (true, false, None)
    } else if ended {
        (false, false, Some((b"content-length".as_slice(), b"0".as_slice())))
    } else {
        (true, true, Some((b"transfer-encoding".as_slice(), b"chunked".as_slice())))
    };
    (ResponseHead { raw, status, framing }, Msg::new(Vec::new(), more, chunked))
}

/// The 101 an HTTP/1.1 WebSocket client expects, for an extended CONNECT's 2xx, with the
/// `Sec-WebSocket-Accept` its key asks for (RFC 6455 4.2.2); then the stream is the tunnel.
pub(super) fn websocket_head(raw: &h2::RawHead, key: &[u8]) -> Msg {
    use base64::Engine;
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(
        b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n",
    );
    if !key.is_empty() {
        let mut input = key.to_vec();
        input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
        let sha = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
        head.extend_from_slice(b"sec-websocket-accept: ");
        head.extend_from_slice(
            base64::engine::general_purpose::STANDARD.encode(sha.as_ref()).as_bytes(),
        );
        head.extend_from_slice(b"\r\n");
    }
    let rest =
        raw.fields().filter(|(n, _)| *n != b"content-length" && *n != b"sec-websocket-accept");
    write_fields(&mut head, rest);
    head.extend_from_slice(b"\r\n");
    Msg::new(head, true, false)
}

/// A status's reason phrase (HTTP/2 carries none).
pub(super) fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown")
}

pub(super) fn write_status(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(&[
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]);
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

pub(super) fn write_fields<'a>(
    out: &mut Vec<u8>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    for (name, value) in fields {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}
