//! One HTTP/2 stream seen as an HTTP/1.1 connection carrying one request: the session reads the
//! request as HTTP/1.1 bytes (its head written from the HEADERS frame, its body from the DATA
//! frames, chunked when no `content-length` says its size) and writes its response as HTTP/1.1
//! bytes, which go out as HEADERS and DATA frames (a 1xx as an interim HEADERS frame).
//!
//! HTTP/1.1 is the one internal form between the HTTP/2 framing and the transaction, as HTX is
//! in HAProxy: every rule, fetch, log and counter then works on HTTP/2 requests unchanged, and
//! the HTTP/1 path pays nothing for HTTP/2's existence. The cost is one HTTP/1 head written and
//! parsed again per stream and direction (measured in `bench/`).
//!
//! Owns: the stream's request and response framing. Must not touch: the connection (the
//! driver in `http::h2` does), rules, servers.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use fulcrum_http::{Body, ChunkedScanner, Head, Limits, Method};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};

/// An HTTP/2 stream behind the session's `Stream` interface (`Stream::H2`).
pub struct H1View {
    recv: RefCell<Recv>,
    send: RefCell<Send>,
    /// A duplicate of the connection's socket (`getsockname` and socket options).
    fd: Arc<OwnedFd>,
    /// Where a request still being received goes when the view ends before it (an answer
    /// made early): the connection reads it to its end, as HAProxy does, so the rest of its
    /// frames are still checked and the window keeps opening.
    leftovers: Leftovers,
}

/// Request bodies a connection reads to their end after their streams' views ended.
pub type Leftovers = Arc<std::sync::Mutex<Vec<RecvStream>>>;

/// Reads what the leftovers received, releasing the window; drops those that ended. Never
/// ready: polled beside the connection, it is woken by the connection's frames.
pub fn poll_leftovers(leftovers: &Leftovers, cx: &mut Context<'_>) -> Poll<()> {
    let mut l = leftovers.lock().unwrap_or_else(|e| e.into_inner());
    l.retain_mut(|body| loop {
        match body.poll_data(cx) {
            Poll::Ready(Some(Ok(data))) => {
                let _ = body.flow_control().release_capacity(data.len());
            }
            Poll::Pending => return true,
            Poll::Ready(_) => return false,
        }
    });
    Poll::Pending
}

struct Recv {
    /// Taken by the leftovers when the view ends early.
    body: Option<RecvStream>,
    /// HTTP/1 bytes ready for the session: `pending[pos..]`.
    pending: Vec<u8>,
    pos: usize,
    /// The body is sent on chunked (no `content-length`).
    chunked: bool,
    /// Everything of the request is in `pending` (or was read).
    ended: bool,
    /// The stream failed (reset by the client, connection gone).
    failed: bool,
}

enum SendState {
    /// Gathering the response head.
    Head(Vec<u8>),
    Body {
        framing: Framing,
        stream: SendStream<Bytes>,
    },
    Done,
}

enum Framing {
    Length(u64),
    Chunked(ChunkedScanner),
    UntilClose,
}

struct Send {
    respond: Option<SendResponse<Bytes>>,
    state: SendState,
    /// The request's method (a HEAD response has no body).
    method: Method,
    /// Decoded body bytes not accepted by the stream's window yet.
    held: Vec<u8>,
    /// Those end the stream.
    held_ends: bool,
    /// Scratch for decoding a chunked body.
    scratch: Vec<u8>,
    /// A chunked body's trailer lines (`name: value` CRLF), sent as the last HEADERS frame.
    trailers: Vec<u8>,
}

/// Fields that speak for one HTTP/1 connection: never sent in HTTP/2 (RFC 9113 8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    [&b"connection"[..], b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

impl H1View {
    /// The view of a request just accepted on the connection whose socket `fd` duplicates.
    pub fn new(
        req: http::Request<RecvStream>,
        respond: SendResponse<Bytes>,
        fd: Arc<OwnedFd>,
        leftovers: Leftovers,
    ) -> H1View {
        let (parts, body) = req.into_parts();
        let mut head = Vec::with_capacity(256);
        let method = parts.method.as_str().as_bytes();
        head.extend_from_slice(method);
        head.push(b' ');
        // The scheme's default port is dropped from the authority, as HAProxy normalises it
        // (RFC 3986 6.2.3): `http://a:80/` is `http://a/`, its Host `a`.
        let authority = parts.uri.authority().map(|a| {
            let default = match parts.uri.scheme_str() {
                Some("http") => ":80",
                Some("https") => ":443",
                _ => return a.as_str(),
            };
            a.as_str().strip_suffix(default).unwrap_or(a.as_str())
        });
        if parts.method == http::Method::CONNECT {
            head.extend_from_slice(authority.unwrap_or("").as_bytes());
        } else {
            // The absolute URI HAProxy builds from `:scheme`, `:authority` and `:path` (what
            // `url` and the log show; servers get the origin form).
            if let (Some(scheme), Some(a)) = (parts.uri.scheme_str(), authority) {
                head.extend_from_slice(scheme.as_bytes());
                head.extend_from_slice(b"://");
                head.extend_from_slice(a.as_bytes());
            }
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            head.extend_from_slice(if path.is_empty() { b"/" } else { path.as_bytes() });
        }
        head.extend_from_slice(b" HTTP/1.1\r\n");
        // `:authority` is the Host (RFC 9113 8.3.1); a `host` field is used only without it.
        if let Some(a) = authority {
            head.extend_from_slice(b"host: ");
            head.extend_from_slice(a.as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        let mut cookies = 0;
        for (name, value) in parts.headers.iter() {
            if name == http::header::HOST && authority.is_some() {
                continue;
            }
            if name == http::header::COOKIE {
                cookies += 1;
                continue;
            }
            head.extend_from_slice(name.as_str().as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        // Cookie fields are joined into one for HTTP/1 (RFC 9113 8.2.3).
        if cookies > 0 {
            head.extend_from_slice(b"cookie: ");
            for (i, v) in parts.headers.get_all(http::header::COOKIE).iter().enumerate() {
                if i > 0 {
                    head.extend_from_slice(b"; ");
                }
                head.extend_from_slice(v.as_bytes());
            }
            head.extend_from_slice(b"\r\n");
        }
        let sized = parts.headers.contains_key(http::header::CONTENT_LENGTH);
        let ended = body.is_end_stream();
        let chunked = !ended && !sized;
        if chunked {
            head.extend_from_slice(b"transfer-encoding: chunked\r\n");
        }
        head.extend_from_slice(b"\r\n");
        let method = Method::from_bytes(method);
        H1View {
            recv: RefCell::new(Recv {
                body: Some(body),
                pending: head,
                pos: 0,
                chunked,
                ended,
                failed: false,
            }),
            send: RefCell::new(Send {
                respond: Some(respond),
                state: SendState::Head(Vec::new()),
                method,
                held: Vec::new(),
                held_ends: false,
                scratch: Vec::new(),
                trailers: Vec::new(),
            }),
            fd,
            leftovers,
        }
    }

    fn recv(&self) -> std::cell::RefMut<'_, Recv> {
        self.recv.borrow_mut()
    }

    fn send(&self) -> std::cell::RefMut<'_, Send> {
        self.send.borrow_mut()
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut r = self.recv();
        if r.pos < r.pending.len() || r.ended || r.failed {
            return Poll::Ready(Ok(()));
        }
        r.pending.clear();
        r.pos = 0;
        let r = &mut *r;
        let Some(body) = r.body.as_mut() else { return Poll::Ready(Ok(())) };
        match body.poll_data(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(data))) => {
                // The window opens again as soon as the bytes are here: at most one frame
                // waits in this view, and at most a window's worth inside h2.
                let _ = body.flow_control().release_capacity(data.len());
                if r.chunked {
                    if !data.is_empty() {
                        let size = format!("{:x}\r\n", data.len());
                        r.pending.extend_from_slice(size.as_bytes());
                        r.pending.extend_from_slice(&data);
                        r.pending.extend_from_slice(b"\r\n");
                    }
                } else {
                    r.pending.extend_from_slice(&data);
                }
                // (The end, with its trailers if any, is seen by the next poll.)
                Poll::Ready(Ok(()))
            }
            // The end: with trailers, they close the chunked body (without a length to say
            // where the body ends, HTTP/1 has no place for them: dropped).
            Poll::Ready(None) => match body.poll_trailers(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(Some(trailers))) if r.chunked => {
                    r.pending.extend_from_slice(b"0\r\n");
                    for (name, value) in trailers.iter() {
                        r.pending.extend_from_slice(name.as_str().as_bytes());
                        r.pending.extend_from_slice(b": ");
                        r.pending.extend_from_slice(value.as_bytes());
                        r.pending.extend_from_slice(b"\r\n");
                    }
                    r.pending.extend_from_slice(b"\r\n");
                    r.ended = true;
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Ok(_)) => {
                    r.end();
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Err(_)) => {
                    r.failed = true;
                    Poll::Ready(Ok(()))
                }
            },
            Poll::Ready(Some(Err(_))) => {
                r.failed = true;
                Poll::Ready(Ok(()))
            }
        }
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut r = self.recv();
        let avail = r.pending.len() - r.pos;
        if avail > 0 {
            let n = avail.min(buf.len());
            buf[..n].copy_from_slice(&r.pending[r.pos..r.pos + n]);
            r.pos += n;
            return Ok(n);
        }
        if r.failed {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if r.ended {
            return Ok(0);
        }
        Err(io::ErrorKind::WouldBlock.into())
    }

    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.recv();
        let avail = &r.pending[r.pos..];
        if avail.is_empty() {
            return if r.ended { Ok(0) } else { Err(io::ErrorKind::WouldBlock.into()) };
        }
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        Ok(n)
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut s = self.send();
        let s = &mut *s;
        if s.held.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let SendState::Body { stream, .. } = &mut s.state else { return Poll::Ready(Ok(())) };
        loop {
            if stream.capacity() > 0 {
                return Poll::Ready(Ok(()));
            }
            stream.reserve_capacity(s.held.len());
            match stream.poll_capacity(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(h2_error(e))),
                Poll::Ready(None) => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            }
        }
    }

    /// Takes HTTP/1 response bytes: all of `head` and `data`, or none with `WouldBlock` while
    /// earlier body bytes wait for the stream's window.
    pub fn try_send(&self, head: &[u8], data: &[u8]) -> io::Result<usize> {
        let mut s = self.send();
        s.flush_held()?;
        if !s.held.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        s.take(head)?;
        s.take(data)?;
        s.flush_held()?;
        Ok(head.len() + data.len())
    }

    /// The response ends here (a body that lasts until the connection closes).
    pub fn shutdown_write(&self) -> io::Result<()> {
        self.send().finish();
        Ok(())
    }

    /// Waits until the client resets the stream (`Ok(true)`).
    pub async fn peer_closed(&self) -> io::Result<bool> {
        std::future::poll_fn(|cx| {
            let mut s = self.send();
            let s = &mut *s;
            let reset = match (&mut s.state, s.respond.as_mut()) {
                (SendState::Body { stream, .. }, _) => stream.poll_reset(cx),
                (_, Some(respond)) => respond.poll_reset(cx),
                _ => return Poll::Pending,
            };
            reset.map(|_| Ok(true))
        })
        .await
    }
}

impl Recv {
    fn end(&mut self) {
        if self.chunked {
            self.pending.extend_from_slice(b"0\r\n\r\n");
        }
        self.ended = true;
    }
}

/// Ends a response with its last data, then its trailers when it has some.
fn end(stream: &mut SendStream<Bytes>, last: Bytes, trailers: &[u8]) -> io::Result<()> {
    if trailers.is_empty() {
        return stream.send_data(last, true).map_err(h2_error);
    }
    if !last.is_empty() {
        stream.send_data(last, false).map_err(h2_error)?;
    }
    let mut map = http::HeaderMap::new();
    for line in trailers.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
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

fn h2_error(e: h2::Error) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, e)
}

impl Send {
    /// Takes bytes of the HTTP/1 response.
    fn take(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match &mut self.state {
                SendState::Head(buf) => {
                    buf.extend_from_slice(bytes);
                    bytes = &[];
                    self.head_ready()?;
                    // What followed the head in the same bytes is body.
                    if let SendState::Body { .. } = self.state {
                        let rest = std::mem::take(&mut self.scratch);
                        self.body(&rest)?;
                        self.scratch = rest;
                        self.scratch.clear();
                    }
                }
                SendState::Body { .. } => {
                    self.body(bytes)?;
                    bytes = &[];
                }
                SendState::Done => return Ok(()), // beyond the message: dropped
            }
        }
        Ok(())
    }

    /// Sends the gathered head once complete (1xx heads as interim responses); the bytes
    /// after it are left in `scratch`.
    fn head_ready(&mut self) -> io::Result<()> {
        loop {
            let SendState::Head(buf) = &mut self.state else { return Ok(()) };
            let mut head = Head::new();
            let limits = Limits { max_head: buf.len().max(1024), max_headers: 10_000 };
            let n = match head.parse_response(buf, &limits) {
                Ok(Some(n)) => n,
                Ok(None) => return Ok(()),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            };
            let status = head.status();
            let mut resp = http::Response::new(());
            *resp.status_mut() = http::StatusCode::from_u16(status)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            for (name, value) in head.headers() {
                if connection_specific(name) {
                    continue;
                }
                let (Ok(n), Ok(v)) =
                    (http::HeaderName::from_bytes(name), http::HeaderValue::from_bytes(value))
                else {
                    continue;
                };
                resp.headers_mut().append(n, v);
            }
            let respond = self.respond.as_mut().ok_or(io::ErrorKind::BrokenPipe)?;
            if (100..200).contains(&status) {
                // Interim (100 Continue, 103 Early Hints); 101 has no HTTP/2 meaning.
                if status != 101 {
                    respond.send_informational(resp).map_err(h2_error)?;
                }
                buf.drain(..n);
                continue;
            }
            let framing = match fulcrum_http::response_body(&head, self.method) {
                Body::None | Body::Length(0) => None,
                Body::Length(len) => Some(Framing::Length(len)),
                Body::Chunked => Some(Framing::Chunked(ChunkedScanner::new())),
                Body::UntilClose => Some(Framing::UntilClose),
            };
            let mut respond = self.respond.take().ok_or(io::ErrorKind::BrokenPipe)?;
            let stream = respond.send_response(resp, framing.is_none()).map_err(h2_error)?;
            self.scratch.clear();
            self.scratch.extend_from_slice(&buf[n..]);
            self.state = match framing {
                Some(framing) => SendState::Body { framing, stream },
                None => SendState::Done,
            };
            return Ok(());
        }
    }

    /// Body bytes in their HTTP/1 framing: their data joins what waits for the window.
    fn body(&mut self, bytes: &[u8]) -> io::Result<()> {
        let SendState::Body { framing, .. } = &mut self.state else { return Ok(()) };
        match framing {
            Framing::Length(left) => {
                let n = (bytes.len() as u64).min(*left) as usize;
                self.held.extend_from_slice(&bytes[..n]);
                *left -= n as u64;
                self.held_ends = *left == 0;
            }
            Framing::Chunked(scan) => {
                let s = scan
                    .decode(bytes, &mut self.held, &mut self.trailers)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.held_ends = s.done;
            }
            Framing::UntilClose => self.held.extend_from_slice(bytes),
        }
        Ok(())
    }

    /// Sends what the window takes of the held bytes.
    fn flush_held(&mut self) -> io::Result<()> {
        let SendState::Body { stream, .. } = &mut self.state else { return Ok(()) };
        if self.held.is_empty() && !self.held_ends {
            return Ok(());
        }
        if self.held.is_empty() {
            end(stream, Bytes::new(), &self.trailers)?;
            self.state = SendState::Done;
            return Ok(());
        }
        stream.reserve_capacity(self.held.len());
        let n = stream.capacity().min(self.held.len());
        if n == 0 {
            return Ok(());
        }
        let all = n == self.held.len();
        let chunk = Bytes::copy_from_slice(&self.held[..n]);
        self.held.drain(..n);
        if all && self.held_ends {
            end(stream, chunk, &self.trailers)?;
            self.state = SendState::Done;
        } else {
            stream.send_data(chunk, false).map_err(h2_error)?;
        }
        Ok(())
    }

    /// Ends the response as it stands: a complete message (or a body read until close) ends
    /// the stream with its last bytes, which h2 keeps until the window takes them; an
    /// unfinished one resets the stream.
    fn finish(&mut self) {
        match std::mem::replace(&mut self.state, SendState::Done) {
            SendState::Body { framing, mut stream }
                if self.held_ends || matches!(framing, Framing::UntilClose) =>
            {
                let last = Bytes::from(std::mem::take(&mut self.held));
                let _ = end(&mut stream, last, &self.trailers);
            }
            SendState::Body { mut stream, .. } => stream.send_reset(h2::Reason::CANCEL),
            SendState::Head(_) => {
                if let Some(mut r) = self.respond.take() {
                    r.send_reset(h2::Reason::INTERNAL_ERROR);
                }
            }
            SendState::Done => {}
        }
    }
}

impl Drop for H1View {
    fn drop(&mut self) {
        self.send().finish();
        let r = self.recv.get_mut();
        if let Some(body) = r.body.take().filter(|b| !r.ended && !r.failed && !b.is_end_stream()) {
            self.leftovers.lock().unwrap_or_else(|e| e.into_inner()).push(body);
        }
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
