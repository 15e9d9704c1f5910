//! One HTTP/2 stream seen as an HTTP/1.1 connection carrying one request: the session takes
//! the request head built from the HEADERS frame's fields (with a parse's checks: no HTTP/1
//! text written and scanned again) and reads the body as HTTP/1.1 bytes from the DATA frames
//! (chunked when no `content-length` says its size); it hands over its response head as it
//! parsed it, which goes out HPACK-encoded from its fields ([`super::hpack`]; no HTTP/1 text
//! is written for it), and writes the body as HTTP/1.1 bytes, which go out as DATA frames (a
//! 1xx as an interim HEADERS frame). Between two HTTP/2 peers the bodies go as pieces instead
//! (`poll_piece`, `send_data`, `send_trailers`: DATA to DATA, trailers as fields).
//!
//! HTTP/1.1 heads are the one internal form between the HTTP/2 framing and the transaction, as
//! HTX is in HAProxy: every rule, fetch, log and counter then works on HTTP/2 requests
//! unchanged, and the HTTP/1 path pays nothing for HTTP/2's existence. A head a parse would
//! refuse, or one read as bytes before it is taken, goes as HTTP/1.1 text, whose parse then
//! gives the very answer, log line and capture an HTTP/1 client would get.
//!
//! [`H1View::take_request_head`] builds the head through `Head::begin_request`, `build_field`
//! and `end_head`: HAProxy's absolute URI from `:scheme`/`:authority`/`:path`, `:authority`
//! as Host, cookies joined, a body without length chunked.
//!
//! Owns: the stream's request and response framing. Must not touch: the connection (the
//! driver in `http::h2` does), rules, servers.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll};

use fulcrum_http::{Body, ChunkedScanner, Head, HeadError, Limits, Method};

use super::body::{connection_specific, Framing, Received, Sending};
use super::frontconn::{self, Key, INTERNAL_ERROR};

/// An HTTP/2 stream behind the session's `Stream` interface (`Stream::H2`).
pub struct H1View {
    conn: Key,
    id: u32,
    recv: RefCell<Recv>,
    /// The request head, until the session takes it (built, or as text).
    head: RefCell<Option<RequestHead>>,
    send: RefCell<Send>,
    /// A duplicate of the connection's socket (`getsockname` and socket options).
    fd: Arc<OwnedFd>,
}

/// The request's HTTP/1 bytes: its head's text (unless taken built), then its body.
type Recv = Received;

enum SendState {
    /// Gathering the response head.
    Head(Vec<u8>),
    Body(Sending),
    Done,
}

struct Send {
    state: SendState,
    /// A final head went out.
    answered: bool,
    /// The request's method (a HEAD response has no body).
    method: Method,
    /// A CONNECT (plain or extended): its success opens a tunnel on the stream.
    tunnel: Tunnel,
    /// Bytes that followed the head in what the session wrote.
    scratch: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tunnel {
    No,
    /// CONNECT: a 2xx opens the tunnel.
    Connect,
    /// Extended CONNECT (RFC 8441, WebSocket over HTTP/2): the request went on as an HTTP/1.1
    /// upgrade, whose 101 opens the tunnel and answers 200.
    Upgrade,
}

/// A request head as received in its HEADERS frame, until the session takes it.
struct RequestHead {
    /// The HEADERS frame's fields as decoded (checked by `h2` as for any head).
    raw: fulcrum_h2::RawHead,
    tunnel: Tunnel,
    /// The body goes in chunks (no `content-length`).
    chunked: bool,
}

/// Where a request head goes: a head built from its parts, or its HTTP/1.1 text.
trait HeadOut {
    fn start(&mut self, method: &[u8], target: &[&[u8]]) -> Result<(), HeadError>;
    fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), HeadError>;
}

struct Built<'a> {
    head: &'a mut Head,
    limits: &'a Limits,
}

impl HeadOut for Built<'_> {
    fn start(&mut self, method: &[u8], target: &[&[u8]]) -> Result<(), HeadError> {
        self.head.set_host_required(false);
        self.head.begin_request(method, target)
    }

    fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), HeadError> {
        self.head.build_field(name, value, self.limits)
    }
}

/// The text, without its final empty line.
impl HeadOut for Vec<u8> {
    fn start(&mut self, method: &[u8], target: &[&[u8]]) -> Result<(), HeadError> {
        self.extend_from_slice(method);
        self.push(b' ');
        for piece in target {
            self.extend_from_slice(piece);
        }
        self.extend_from_slice(b" HTTP/1.1\r\n");
        Ok(())
    }

    fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), HeadError> {
        self.extend_from_slice(name);
        self.extend_from_slice(b": ");
        self.extend_from_slice(value);
        self.extend_from_slice(b"\r\n");
        Ok(())
    }
}

impl RequestHead {
    /// The HTTP/1.1 request HAProxy makes of an HTTP/2 one: the absolute URI built from
    /// `:scheme`, `:authority` and `:path` (what `url` and the log show; servers get the origin
    /// form), `:authority` as Host, cookie fields joined (RFC 9113 8.2.3), an extended CONNECT
    /// as an HTTP/1.1 upgrade, chunked framing for a body of unknown size.
    fn write(&self, out: &mut impl HeadOut) -> Result<(), HeadError> {
        let raw = &self.raw;
        let method = if self.tunnel == Tunnel::Upgrade {
            b"GET".as_slice()
        } else {
            raw.method().unwrap_or_default()
        };
        // The scheme's default port is dropped from the authority, as HAProxy normalises it
        // (RFC 3986 6.2.3): `http://a:80/` is `http://a/`, its Host `a`.
        let scheme = raw.scheme();
        let authority = raw.authority().map(|a| {
            let default: &[u8] = match scheme {
                Some(b"http") => b":80",
                Some(b"https") => b":443",
                _ => return a,
            };
            a.strip_suffix(default).unwrap_or(a)
        });
        if self.tunnel == Tunnel::Connect {
            out.start(method, &[authority.unwrap_or_default()])?;
        } else {
            let path = match raw.path() {
                None | Some(b"") => b"/".as_slice(),
                Some(p) => p,
            };
            match (scheme, authority) {
                (Some(scheme), Some(a)) => out.start(method, &[scheme, b"://", a, path])?,
                _ => out.start(method, &[path])?,
            }
        }
        // `:authority` is the Host (RFC 9113 8.3.1); a `host` field is used only without it.
        if let Some(a) = authority {
            out.field(b"host", a)?;
        }
        // Without an authority, HTTP/1.1 wants an empty Host (RFC 9112 3.2).
        if authority.is_none() && !raw.contains(b"host") {
            out.field(b"host", b"")?;
        }
        let mut cookies = 0;
        for (name, value) in raw.fields() {
            if name == b"host" && authority.is_some() {
                continue;
            }
            if name == b"cookie" {
                cookies += 1;
                continue;
            }
            out.field(name, value)?;
        }
        if cookies > 0 {
            let mut all = raw.fields().filter(|(n, _)| *n == b"cookie").map(|(_, v)| v);
            match (cookies, all.next()) {
                (1, Some(v)) => out.field(b"cookie", v)?,
                (_, first) => {
                    let mut joined = first.map(<[u8]>::to_vec).unwrap_or_default();
                    for v in all {
                        joined.extend_from_slice(b"; ");
                        joined.extend_from_slice(v);
                    }
                    out.field(b"cookie", &joined)?;
                }
            }
        }
        if let (Tunnel::Upgrade, Some(p)) = (self.tunnel, raw.protocol()) {
            out.field(b"connection", b"upgrade")?;
            out.field(b"upgrade", p)?;
            // HTTP/1.1 WebSocket wants a key (RFC 6455 4.1), which HTTP/2 has no use for.
            if p.eq_ignore_ascii_case(b"websocket") && !raw.contains(b"sec-websocket-key") {
                out.field(b"sec-websocket-key", super::websocket_key().as_bytes())?;
            }
        }
        if self.chunked {
            out.field(b"transfer-encoding", b"chunked")?;
        }
        Ok(())
    }
}

impl H1View {
    /// The view of stream `id` of the connection `conn`, whose request head is `raw`
    /// (`ended`: the request has no body), on the connection whose socket `fd` duplicates.
    pub fn new(
        conn: Key,
        id: u32,
        raw: fulcrum_h2::RawHead,
        ended: bool,
        fd: Arc<OwnedFd>,
    ) -> H1View {
        let connect = raw.method() == Some(b"CONNECT");
        let tunnel = match (connect, raw.protocol()) {
            (true, Some(_)) => Tunnel::Upgrade,
            (true, None) => Tunnel::Connect,
            _ => Tunnel::No,
        };
        let method = if tunnel == Tunnel::Upgrade {
            Method::Get
        } else {
            Method::from_bytes(raw.method().unwrap_or_default())
        };
        let sized = raw.has_content_length();
        // A tunnel's bytes go as they come.
        let chunked = !ended && !sized && tunnel == Tunnel::No;
        H1View {
            conn,
            id,
            recv: RefCell::new(Received::new(Vec::new(), !ended, chunked)),
            head: RefCell::new(Some(RequestHead { raw, tunnel, chunked })),
            send: RefCell::new(Send {
                state: SendState::Head(Vec::new()),
                answered: false,
                method,
                tunnel,
                scratch: Vec::new(),
            }),
            fd,
        }
    }

    /// The request head built into `head` from the HEADERS frame's fields, with the checks of a
    /// parse: `Some(size of its HTTP/1.1 text)`. `None` when the head was taken already, or is
    /// one a parse refuses: its HTTP/1.1 text is then what the session reads, and its parse
    /// gives the error (the same answer, log and capture as any refused head).
    pub fn take_request_head(&self, head: &mut Head, limits: &Limits) -> Option<usize> {
        let mut pending = self.head.borrow_mut();
        let req = pending.as_ref()?;
        // HAProxy decodes an HTTP/2 head into a list of twice `tune.http.maxhdr` entries, the
        // pseudo-fields and the end marker among them: 197 fields beside the four
        // pseudo-fields pass with the default 101 (checked with HAProxy 2.6), where HTTP/1
        // takes 100. (Beyond that HAProxy ends the connection; here the text's parse answers
        // 400.)
        let limits = &Limits { max_headers: (2 * limits.max_headers).saturating_sub(3), ..*limits };
        let mut out = Built { head, limits };
        match req.write(&mut out).and_then(|()| out.head.end_head(limits)) {
            Ok(size) => {
                *pending = None;
                Some(size)
            }
            Err(_) => {
                out.head.clear();
                drop(pending);
                self.write_request_text();
                None
            }
        }
    }

    /// The request head as HTTP/1.1 text, ahead of the body's bytes, for a session that reads
    /// before (or instead of) taking it built.
    fn write_request_text(&self) {
        let Some(req) = self.head.borrow_mut().take() else { return };
        let mut text = Vec::with_capacity(256);
        let _ = req.write(&mut text);
        text.extend_from_slice(b"\r\n");
        self.recv.borrow_mut().prepend(text);
    }

    /// The request's bytes (its head first as text, when it was not taken built).
    fn recv(&self) -> std::cell::RefMut<'_, Recv> {
        if self.head.borrow().is_some() {
            self.write_request_text();
        }
        self.recv.borrow_mut()
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.recv().poll_ready(self.conn, self.id, cx).map(Ok)
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv().try_read(buf)
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.send.borrow().state {
            SendState::Body(s) if !s.done => {
                match frontconn::with(self.conn, |c| c.poll_writable(self.id, cx)) {
                    Some(Poll::Pending) => Poll::Pending,
                    Some(Poll::Ready(Ok(()))) => Poll::Ready(Ok(())),
                    _ => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
                }
            }
            _ => Poll::Ready(Ok(())),
        }
    }

    /// Takes HTTP/1 response bytes: all of `head` and `data`, or none with `WouldBlock` while
    /// earlier body bytes wait for the stream's window.
    pub fn try_send(&self, head: &[u8], data: &[u8]) -> io::Result<usize> {
        let mut s = self.send.borrow_mut();
        if let SendState::Body(b) = &s.state {
            let id = self.id;
            if !b.done && !frontconn::with(self.conn, |c| c.is_writable(id)).unwrap_or(true) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        frontconn::with(self.conn, |c| {
            s.take(c, self.id, head)?;
            s.take(c, self.id, data)
        })
        .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))?;
        Ok(head.len() + data.len())
    }

    /// Sends the final response head the session parsed, HPACK-encoded from its fields: no
    /// HTTP/1 text is written for it. `Ok(false)` for anything else (an interim head, a head
    /// begun already), which goes as text and is parsed here.
    pub fn send_head(&self, head: &Head) -> io::Result<bool> {
        let mut s = self.send.borrow_mut();
        let fresh = matches!(&s.state, SendState::Head(b) if b.is_empty());
        if !fresh || head.status() < 200 {
            return Ok(false);
        }
        frontconn::with(self.conn, |c| s.respond(c, self.id, head))
            .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))?;
        Ok(true)
    }

    /// Sends an interim response head (100 Continue, 103 Early Hints) as parsed, HPACK-encoded
    /// from its fields; `Ok(false)` once a head was begun as text (it then goes as text too).
    pub fn send_interim(&self, head: &Head) -> io::Result<bool> {
        let s = self.send.borrow();
        if !matches!(&s.state, SendState::Head(b) if b.is_empty()) {
            return Ok(false);
        }
        frontconn::with(self.conn, |c| {
            send_block(c, self.id, head, connection_specific, false, false)
        })
        .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))?;
        Ok(true)
    }

    /// The request's body goes on as pieces: its head was taken built and every byte given
    /// as HTTP/1 was read.
    pub fn gives_pieces(&self) -> bool {
        self.head.borrow().is_none() && self.recv.borrow().is_empty()
    }

    /// The request body's next piece (see `Received::poll_piece`).
    pub fn poll_piece(
        &self,
        cx: &mut Context<'_>,
        buf: &mut Vec<u8>,
    ) -> Poll<io::Result<crate::http::peer::Piece>> {
        self.recv.borrow_mut().poll_piece(self.conn, self.id, cx, buf)
    }

    /// The request body held in the stream, unread (see `Received::poll_held`).
    pub fn poll_held(
        &self,
        cx: &mut Context<'_>,
        have: usize,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<crate::http::peer::Hold>> {
        self.recv.borrow_mut().poll_held(self.conn, self.id, cx, have, out)
    }

    /// Gives back the buffer pieces were read into, for the connection's next streams.
    pub fn give_buf(&self, b: Vec<u8>) {
        frontconn::with(self.conn, |c| c.give_buf(b));
    }

    /// The response's body goes on as pieces: its final head went and no HTTP/1 body bytes
    /// were taken partly.
    pub fn takes_pieces(&self) -> bool {
        let s = self.send.borrow();
        matches!(&s.state, SendState::Body(b) if b.takes_pieces())
    }

    /// Response body data as a block (see `Sending::pass`).
    pub fn send_data(&self, data: &[u8], end: bool) -> io::Result<()> {
        let mut s = self.send.borrow_mut();
        let SendState::Body(b) = &mut s.state else { return Ok(()) };
        frontconn::with(self.conn, |c| b.pass(c, self.id, data, end))
            .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))
    }

    /// Ends the response body with trailers.
    pub fn send_trailers(&self, fields: &fulcrum_h2::RawHead) -> io::Result<()> {
        let mut s = self.send.borrow_mut();
        let SendState::Body(b) = &mut s.state else { return Ok(()) };
        frontconn::with(self.conn, |c| b.pass_trailers(c, self.id, fields))
            .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))
    }

    /// The response ends here (a body that lasts until the connection closes).
    pub fn shutdown_write(&self) -> io::Result<()> {
        let mut s = self.send.borrow_mut();
        frontconn::with(self.conn, |c| s.finish(c, self.id));
        Ok(())
    }

    /// Waits until the client resets the stream (`Ok(true)`).
    pub async fn peer_closed(&self) -> io::Result<bool> {
        std::future::poll_fn(|cx| {
            match frontconn::with(self.conn, |c| c.stream(self.id, |st| st.poll_reset(cx))) {
                Some(Some(Poll::Pending)) => Poll::Pending,
                _ => Poll::Ready(Ok(true)),
            }
        })
        .await
    }
}

impl Send {
    /// Takes bytes of the HTTP/1 response.
    fn take(&mut self, c: &frontconn::Conn, id: u32, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match &mut self.state {
                SendState::Head(buf) => {
                    buf.extend_from_slice(bytes);
                    bytes = &[];
                    self.head_ready(c, id)?;
                    // What followed the head in the same bytes is body.
                    if let SendState::Body(out) = &mut self.state {
                        let scratch = std::mem::take(&mut self.scratch);
                        out.take(c, id, &scratch)?;
                    }
                }
                SendState::Body(out) => {
                    out.take(c, id, bytes)?;
                    bytes = &[];
                }
                SendState::Done => return Ok(()), // beyond the message: dropped
            }
        }
        Ok(())
    }

    /// Sends the gathered head once complete (1xx heads as interim responses); the bytes
    /// after it are left in `scratch`.
    fn head_ready(&mut self, c: &frontconn::Conn, id: u32) -> io::Result<()> {
        loop {
            let SendState::Head(buf) = &mut self.state else { return Ok(()) };
            let mut head = super::ParseHead::take();
            let limits = Limits { max_head: buf.len().max(1024), max_headers: 10_000 };
            let n = match head.parse_response(buf, &limits) {
                Ok(Some(n)) => n,
                Ok(None) => return Ok(()),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            };
            self.scratch.clear();
            self.scratch.extend_from_slice(&buf[n..]);
            if self.respond(c, id, &head)? {
                return Ok(());
            }
            // Interim: the next head follows.
            if let SendState::Head(buf) = &mut self.state {
                buf.drain(..n);
            }
        }
    }

    /// Sends a response head: `Ok(false)` for an interim one (100 Continue, 103 Early Hints;
    /// 101 has no HTTP/2 meaning), `Ok(true)` once the final one is on its way (the state is
    /// then the body's).
    fn respond(&mut self, c: &frontconn::Conn, id: u32, head: &Head) -> io::Result<bool> {
        let status = head.status();
        let opens = match self.tunnel {
            Tunnel::Upgrade => status == 101,
            Tunnel::Connect => (200..300).contains(&status),
            Tunnel::No => false,
        };
        if opens {
            // The tunnel: 200 without the upgrade's fields, then DATA both ways.
            let skip = |n: &[u8]| {
                connection_specific(n) || n.eq_ignore_ascii_case(b"sec-websocket-accept")
            };
            let fields = head.headers().filter(|(n, _)| !skip(n));
            let block = super::hpack::block_of(
                std::iter::once((b":status".as_slice(), b"200".as_slice())).chain(fields),
            );
            c.send_head(id, &block, true, false)?;
            self.answered = true;
            self.state = SendState::Body(Sending::new(Framing::UntilClose));
            return Ok(true);
        }
        if (100..200).contains(&status) {
            if status != 101 {
                send_block(c, id, head, connection_specific, false, false)?;
            }
            return Ok(false);
        }
        let framing = match fulcrum_http::response_body(head, self.method) {
            Body::None | Body::Length(0) => None,
            Body::Length(len) => Some(Framing::Length(len)),
            Body::Chunked => Some(Framing::Chunked(ChunkedScanner::new())),
            Body::UntilClose => Some(Framing::UntilClose),
        };
        // The final head, encoded from its fields (`hpack`); `te` too is for requests only
        // (RFC 9113 8.2.2).
        let skip = |n: &[u8]| connection_specific(n) || n.eq_ignore_ascii_case(b"te");
        send_block(c, id, head, skip, true, framing.is_none())?;
        self.answered = true;
        self.state = match framing {
            Some(framing) => SendState::Body(Sending::new(framing)),
            None => SendState::Done,
        };
        Ok(true)
    }

    /// Ends the response as it stands (see [`Sending::finish`]); without a head sent, the
    /// stream is reset.
    fn finish(&mut self, c: &frontconn::Conn, id: u32) {
        match std::mem::replace(&mut self.state, SendState::Done) {
            SendState::Body(mut out) => out.finish(c, id),
            SendState::Head(_) => c.reset(id, INTERNAL_ERROR),
            SendState::Done => {}
        }
    }
}

/// Sends a response head's block (encoded in the worker's buffer, see `hpack::scratch`).
fn send_block(
    c: &frontconn::Conn,
    id: u32,
    head: &Head,
    skip: impl Fn(&[u8]) -> bool,
    final_head: bool,
    end: bool,
) -> io::Result<()> {
    let mut block = super::hpack::scratch();
    super::hpack::response_block(head, skip, &mut block);
    let sent = c.send_head(id, &block, final_head, end);
    super::hpack::put_back(block);
    sent
}

impl Drop for H1View {
    fn drop(&mut self) {
        let id = self.id;
        let send = self.send.get_mut();
        let buf = self.recv.get_mut().take_buf();
        frontconn::with(self.conn, |c| {
            send.finish(c, id);
            c.detach(id);
            c.give_buf(buf);
        });
    }
}

impl std::fmt::Debug for H1View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1View").finish_non_exhaustive()
    }
}

impl AsFd for H1View {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
