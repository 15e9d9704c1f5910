//! HTTP/2 to servers (HAProxy's `mux_h2` on the backend side): `server ... proto h2`, or TLS
//! whose ALPN chose `h2` (`alpn h2,http/1.1`). The transaction sends its request and reads the
//! response as it does with any server; [`UpView`] turns them into one stream of a shared
//! connection, as [`super::view`] does for a client's stream: the request head HPACK-encoded
//! from the head the session parsed ([`super::hpack`]), the final response head built from
//! the HEADERS frame for the session, bodies as HTTP/1.1 bytes. HTTP/1.1 heads stay the one
//! internal form, and every rule, log and retry works unchanged.
//!
//! Connections are the worker's (each runs as a task of its event loop) and shared by every
//! transaction of the worker going to the same server (HAProxy's "available" connections,
//! used in every `http-reuse` mode but `never`, where a connection carries one transaction).
//! One is left for another when its streams reach the server's `SETTINGS_MAX_CONCURRENT_STREAMS`,
//! and closed once idle for HAProxy's default `pool-purge-delay` (5 s), or when the server
//! sent GOAWAY.
//!
//! Owns: the worker's HTTP/2 connections to servers and the translation of one request and
//! response. Must not touch: server choice and slots (the backend), the idle HTTP/1 pool.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use fulcrum_http::{Body, ChunkedScanner, Head, Limits, Method};
use h2::client::{ResponseFuture, SendRequest};

use super::body::{connection_specific, h2_error, Framing, Incoming, Outgoing};
use crate::backend::Backend;
use crate::connection::Stream;

/// How long a connection without streams stays open (HAProxy's default `pool-purge-delay`).
const IDLE: Duration = Duration::from_secs(5);

/// What the streams of one connection and its task share.
#[derive(Default)]
struct ConnState {
    /// Streams open (views alive).
    active: AtomicUsize,
    /// Streams carried so far (the `reuse` counter counts those after the first).
    streams: AtomicU32,
    /// The connection ended (or was told to by GOAWAY): no new stream goes to it.
    closed: AtomicBool,
}

/// A connection of this worker to a server.
struct Conn {
    backend: Weak<Backend>,
    idx: usize,
    addr_gen: u32,
    sni: Option<Box<str>>,
    send: SendRequest<Bytes>,
    fd: Arc<OwnedFd>,
    tls: Option<Arc<crate::tls::facts::Snapshot>>,
    state: Arc<ConnState>,
}

thread_local! {
    static CONNS: RefCell<Vec<Conn>> = const { RefCell::new(Vec::new()) };
}

/// A new stream on one of this worker's connections to that server, with the number of
/// streams the connection carried before; `None` when none has room.
pub fn take(be: &Arc<Backend>, idx: usize, sni: Option<&str>) -> Option<(Stream, u32)> {
    CONNS.with(|c| {
        let mut conns = c.borrow_mut();
        let gen = be.servers[idx].addr_gen();
        // The first connection to that server with room for a stream (the first ones fill up,
        // the others then idle and close). Only that one is asked whether it still takes
        // streams (h2 locks the connection to say): one the server sent GOAWAY on leaves the
        // list, and the next is tried. (Asking every connection per stream cost 12,000
        // instructions with 200 connections.)
        let mut cx = Context::from_waker(Waker::noop());
        let c = loop {
            let at = conns.iter().position(|c| {
                c.idx == idx
                    && std::ptr::eq(c.backend.as_ptr(), Arc::as_ptr(be))
                    && c.addr_gen == gen
                    && c.sni.as_deref() == sni
                    && !c.state.closed.load(Ordering::Acquire)
                    && c.state.active.load(Ordering::Relaxed) < c.send.current_max_send_streams()
            })?;
            if matches!(conns[at].send.poll_ready(&mut cx), Poll::Ready(Err(_))) {
                conns.remove(at);
                continue;
            }
            break &conns[at];
        };
        let before = c.state.streams.load(Ordering::Relaxed);
        let view =
            UpView::new(c.send.clone(), Arc::clone(&c.fd), c.tls.clone(), &c.state, c.sni.clone());
        Some((Stream::H2Up(Box::new(view)), before))
    })
}

/// Whether a new connection to that server speaks HTTP/2: `proto h2`, or ALPN chose `h2`.
pub fn speaks_h2(proto: Option<fulcrum_config::MuxProto>, stream: &Stream) -> bool {
    use fulcrum_config::MuxProto;
    match proto {
        Some(p) => p == MuxProto::H2,
        None => stream.tls().is_some_and(|t| t.with_conn(|c| c.alpn_protocol() == Some(b"h2"))),
    }
}

/// Where a new connection may serve other transactions of the worker (`http-reuse` is not
/// `never`).
pub struct Share<'a> {
    pub be: &'a Arc<Backend>,
    pub idx: usize,
    /// The SNI it was made with.
    pub sni: Option<&'a str>,
}

/// Starts HTTP/2 on a new connection to a server and opens its first stream; without `share`,
/// the connection carries that one stream (a transaction under `http-reuse never`, a health
/// check). Fails when the preface could not be written.
pub async fn start(
    stream: Stream,
    tune: fulcrum_config::TuneH2,
    share: Option<Share<'_>>,
) -> io::Result<Stream> {
    let tls = stream.tls().map(|t| Arc::new(crate::tls::facts::Snapshot::of(t)));
    super::no_delay(&stream);
    let fd = Arc::new(stream.as_fd().try_clone_to_owned()?);
    let io = super::Io { s: Rc::new(stream), prefix: Vec::new(), pos: 0 };
    let mut b = h2::client::Builder::new();
    b.enable_push(false)
        // Heads as decoded bytes, built into the transaction's head: no `http` types first.
        .raw_heads(true)
        .initial_window_size(tune.initial_window_size.min(0x7fff_ffff))
        // The connection's window as large as it goes (HAProxy's choice): streams share it,
        // and one whose client reads slowly must not hold back the others.
        .initial_connection_window_size(0x7fff_ffff)
        .header_table_size(tune.header_table_size)
        .max_frame_size(tune.max_frame_size)
        .max_concurrent_streams(tune.max_concurrent_streams);
    let (send, conn) = b.handshake::<_, Bytes>(io).await.map_err(h2_error)?;
    let state = Arc::new(ConnState::default());
    let sni: Option<Box<str>> = share.as_ref().and_then(|s| s.sni).map(Into::into);
    let view = UpView::new(send.clone(), Arc::clone(&fd), tls.clone(), &state, sni.clone());
    match share {
        Some(Share { be, idx, .. }) => CONNS.with(|c| {
            c.borrow_mut().push(Conn {
                backend: Arc::downgrade(be),
                idx,
                addr_gen: be.servers[idx].addr_gen(),
                sni,
                send,
                fd,
                tls,
                state: Arc::clone(&state),
            })
        }),
        None => drop(send), // the connection ends with its one stream
    }
    tokio::task::spawn_local(drive(conn, state));
    Ok(Stream::H2Up(Box::new(view)))
}

/// Runs a connection until it ends: the server closed it or sent GOAWAY, or it stayed without
/// streams for [`IDLE`] (its handle then leaves the worker's list and h2 closes it).
async fn drive(mut conn: h2::client::Connection<super::Io, Bytes>, state: Arc<ConnState>) {
    let mut idle_since = tokio::time::Instant::now();
    let mut tick = std::pin::pin!(tokio::time::sleep(IDLE));
    let mut forgotten = false;
    loop {
        tokio::select! {
            _ = &mut conn => break,
            _ = &mut tick, if !forgotten => {
                let now = tokio::time::Instant::now();
                if state.active.load(Ordering::Relaxed) > 0 {
                    idle_since = now;
                }
                if now.duration_since(idle_since) >= IDLE {
                    // Without streams nor handles, h2 sends GOAWAY and the future ends.
                    forget(&state);
                    forgotten = true;
                } else {
                    tick.as_mut().reset(now + Duration::from_secs(1));
                }
            }
        }
    }
    forget(&state);
}

/// Takes a connection out of the worker's list.
fn forget(state: &Arc<ConnState>) {
    state.closed.store(true, Ordering::Release);
    CONNS.with(|c| c.borrow_mut().retain(|c| !Arc::ptr_eq(&c.state, state)));
}

/// Drops every connection of this worker to servers (tests, shutdown).
pub fn clear() {
    CONNS.with(|c| c.borrow_mut().clear());
}

/// One request and its response on a stream to a server, behind the session's `Stream`
/// interface (`Stream::H2Up`).
pub struct UpView {
    out: RefCell<Out>,
    inc: RefCell<In>,
    /// A duplicate of the connection's socket (`getsockname`, `shutdown session`).
    fd: Arc<OwnedFd>,
    sni: Option<Box<str>>,
    /// The connection's TLS facts (`ssl_bc*`), over TLS.
    tls: Option<Arc<crate::tls::facts::Snapshot>>,
    conn: Arc<ConnState>,
}

enum OutState {
    /// Gathering the request head.
    Head(Vec<u8>),
    Body(Outgoing),
    Done,
}

struct Out {
    send: Option<SendRequest<Bytes>>,
    state: OutState,
    /// `https` over TLS.
    tls: bool,
    /// Bytes still to come of a head sent already from its parsed form.
    skip: usize,
}

struct In {
    /// The response awaited (interim ones first).
    response: Option<ResponseFuture>,
    /// The request's method: a HEAD response has no body, a CONNECT's 2xx is a tunnel.
    method: Method,
    /// An interim response's head, to be read first.
    interim: Vec<u8>,
    /// The request was a WebSocket upgrade sent as an extended CONNECT: its key.
    websocket: Option<Vec<u8>>,
    /// The final response, its head first (as text, unless the head is still in `head`).
    message: Option<Incoming>,
    /// The final response's head as received, until the session takes it (built, or as text).
    head: Option<ResponseHead>,
    /// Woken when the request is sent (a read waiting before the response is awaited).
    waiting: Option<Waker>,
    /// The stream or the connection failed before a final response.
    failed: bool,
}

impl UpView {
    fn new(
        send: SendRequest<Bytes>,
        fd: Arc<OwnedFd>,
        tls: Option<Arc<crate::tls::facts::Snapshot>>,
        conn: &Arc<ConnState>,
        sni: Option<Box<str>>,
    ) -> UpView {
        conn.active.fetch_add(1, Ordering::Relaxed);
        conn.streams.fetch_add(1, Ordering::Relaxed);
        let https = tls.is_some();
        UpView {
            out: RefCell::new(Out {
                send: Some(send),
                state: OutState::Head(Vec::new()),
                skip: 0,
                tls: https,
            }),
            inc: RefCell::new(In {
                response: None,
                method: Method::Get,
                interim: Vec::new(),
                websocket: None,
                message: None,
                head: None,
                waiting: None,
                failed: false,
            }),
            fd,
            sni,
            tls,
            conn: Arc::clone(conn),
        }
    }

    /// The connection's TLS facts, over TLS (`ssl_bc*` fetches).
    pub fn tls_facts(&self) -> Option<&crate::tls::facts::Snapshot> {
        self.tls.as_deref()
    }

    /// The SNI the connection was made with.
    pub fn sni(&self) -> Option<&str> {
        self.sni.as_deref()
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut i = self.inc.borrow_mut();
        let i = &mut *i;
        if !i.interim.is_empty() || i.failed || i.head.is_some() {
            return Poll::Ready(Ok(()));
        }
        if let Some(m) = i.message.as_mut() {
            return m.poll_ready(cx).map(Ok);
        }
        let Some(fut) = i.response.as_mut() else {
            i.waiting = Some(cx.waker().clone());
            return Poll::Pending;
        };
        if let Poll::Ready(Some(Ok(r))) = fut.poll_informational(cx) {
            // 100 Continue, 103 Early Hints: read as HTTP/1 interim heads.
            write_status(&mut i.interim, r.status().as_u16());
            let fields = r.headers().iter().map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
            write_fields(&mut i.interim, fields);
            i.interim.extend_from_slice(b"\r\n");
            return Poll::Ready(Ok(()));
        }
        match fut.poll_raw(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) => {
                i.failed = true;
                i.response = None;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Ok((raw, body))) => {
                i.response = None;
                // (`h2` checked that the status is three digits.)
                let status = raw.status().unwrap_or(500);
                i.message = Some(match i.websocket.take() {
                    Some(key) if (200..300).contains(&status) => websocket_head(&raw, body, &key),
                    _ => {
                        let (head, body) = response_head(raw, status, body, i.method);
                        i.head = Some(head);
                        body
                    }
                });
                Poll::Ready(Ok(()))
            }
        }
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut i = self.inc.borrow_mut();
        let i = &mut *i;
        if let (Some(head), Some(m)) = (i.head.take(), i.message.as_mut()) {
            m.prepend(head.text());
        }
        if !i.interim.is_empty() {
            let n = i.interim.len().min(buf.len());
            buf[..n].copy_from_slice(&i.interim[..n]);
            i.interim.drain(..n);
            return Ok(n);
        }
        if i.failed {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        match i.message.as_mut() {
            Some(m) => m.try_read(buf),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// The final response's head is here, to be taken built ([`UpView::take_response_head`]).
    pub fn has_response_head(&self) -> bool {
        self.inc.borrow().head.is_some()
    }

    /// The final response's head built into `head` from its HEADERS frame, with the checks
    /// of a parse: `Some(size of its HTTP/1.1 text)`. `None` when there is none to take, or
    /// one a parse refuses: its text is then what the session reads, and its parse gives the
    /// error (the same 502, log and capture as any refused head).
    pub fn take_response_head(&self, head: &mut Head, limits: &Limits) -> Option<usize> {
        let mut i = self.inc.borrow_mut();
        let i = &mut *i;
        let r = i.head.as_ref()?;
        match r.build(head, limits) {
            Ok(size) => {
                i.head = None;
                Some(size)
            }
            Err(_) => {
                head.clear();
                if let (Some(r), Some(m)) = (i.head.take(), i.message.as_mut()) {
                    m.prepend(r.text());
                }
                None
            }
        }
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut o = self.out.borrow_mut();
        let r = match &mut o.state {
            OutState::Body(out) => std::task::ready!(out.poll_capacity(cx)),
            _ => Ok(()),
        };
        Poll::Ready(r.or_else(|e| self.write_failed(&mut o, e)))
    }

    /// A write of the request's body failed: when the server answered and then reset the
    /// stream with NO_ERROR, it sent its whole answer before the whole request and wants no
    /// more of it (RFC 9113 8.1), so the rest of the body is dropped and the answer read as
    /// usual (an early 413, say, reaches the client instead of a 502). Any other failure
    /// stands (a stream refused by GOAWAY, without an answer, is retried elsewhere).
    fn write_failed(&self, o: &mut Out, e: io::Error) -> io::Result<()> {
        let OutState::Body(out) = &mut o.state else { return Err(e) };
        if !out.stopped_without_error() {
            return Err(e);
        }
        let mut cx = Context::from_waker(Waker::noop());
        let answered = self.poll_read_ready(&mut cx).is_ready() && {
            let i = self.inc.borrow();
            !i.failed && (i.message.is_some() || !i.interim.is_empty())
        };
        if !answered {
            return Err(e);
        }
        o.state = OutState::Done;
        Ok(())
    }

    /// Takes HTTP/1 request bytes: all of `head` and `data`, or none with `WouldBlock` while
    /// earlier body bytes wait for the stream's window.
    pub fn try_send(&self, head: &[u8], data: &[u8]) -> io::Result<usize> {
        let mut o = self.out.borrow_mut();
        if let OutState::Body(out) = &o.state {
            if !out.is_flushed() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        for bytes in [head, data] {
            if let Err(e) = self.take(&mut o, bytes) {
                self.write_failed(&mut o, e)?;
            }
        }
        Ok(head.len() + data.len())
    }

    fn take(&self, o: &mut Out, mut bytes: &[u8]) -> io::Result<()> {
        // The head given already (`UpView::send_parsed_head`): its bytes are dropped.
        if o.skip > 0 {
            let n = o.skip.min(bytes.len());
            o.skip -= n;
            bytes = &bytes[n..];
        }
        if bytes.is_empty() {
            return Ok(());
        }
        match &mut o.state {
            OutState::Head(buf) => {
                buf.extend_from_slice(bytes);
                let mut head = super::ParseHead::take();
                head.set_host_required(false);
                let limits = Limits { max_head: buf.len().max(1024), max_headers: 10_000 };
                let n = match head.parse_request(buf, &limits) {
                    Ok(Some(n)) => n,
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                };
                let rest = buf.split_off(n);
                let req = self.request(o, &head, false)?;
                self.send_head(o, &head, Request::Map(req))?;
                if let OutState::Body(out) = &mut o.state {
                    out.take(&rest)?;
                }
                Ok(())
            }
            OutState::Body(out) => out.take(bytes),
            OutState::Done => Ok(()),
        }
    }

    /// The request head the session parsed, which it writes next as `len` bytes (in origin
    /// form if `origin_form`): sent from its fields, its bytes then dropped, instead of parsed
    /// again from them. A head that cannot go this way goes the parsing way (which says why).
    pub fn send_parsed_head(&self, head: &Head, len: usize, origin_form: bool) {
        let mut o = self.out.borrow_mut();
        let fresh = matches!(&o.state, OutState::Head(b) if b.is_empty()) && o.skip == 0;
        if !fresh || !head.is_request() {
            return;
        }
        let sent = match self.encoded_request(&o, head) {
            Some(block) => self.send_head(&mut o, head, Request::Encoded(block)),
            None => match self.request(&o, head, origin_form) {
                Ok(req) => self.send_head(&mut o, head, Request::Map(req)),
                Err(_) => return,
            },
        };
        if sent.is_ok() {
            o.skip = len;
        }
    }

    /// The request's header block encoded straight from `head` (see [`super::hpack`]), the
    /// same fields as [`request`] makes: `None` for what goes the header-map way (CONNECT, an
    /// upgrade, a target or authority that way refuses or would read otherwise).
    fn encoded_request(&self, o: &Out, head: &Head) -> Option<(http::Method, Bytes)> {
        if head.method() == Method::Connect || head.info().upgrade {
            return None;
        }
        let method = http::Method::from_bytes(head.method_bytes()).ok()?;
        let t = head.target();
        let (https, authority, path) = if t.starts_with(b"/") || t == b"*" {
            let host = head.header(b"host").filter(|h| !h.is_empty())?;
            (o.tls, host, t)
        } else {
            let (scheme, authority) = head.scheme_and_authority()?;
            let https = match scheme {
                s if s.eq_ignore_ascii_case(b"http") => false,
                s if s.eq_ignore_ascii_case(b"https") => true,
                _ => return None,
            };
            let path = match head.origin_form_target() {
                b"" => b"/".as_slice(),
                p => p,
            };
            (https, authority, path)
        };
        let skip = |name: &[u8]| {
            connection_specific(name)
                || name.eq_ignore_ascii_case(b"host")
                || name.eq_ignore_ascii_case(b"te")
        };
        // `te` only as `trailers` (RFC 9113 8.2.2).
        let te = head.header(b"te").is_some_and(|v| v.eq_ignore_ascii_case(b"trailers"));
        let extra = te.then_some((b"te".as_slice(), b"trailers".as_slice()));
        let block = super::hpack::request_block(
            head.method_bytes(),
            https,
            authority,
            path,
            head,
            skip,
            extra,
        );
        Some((method, block))
    }

    /// The HTTP/2 request for `head` (see [`request`]).
    fn request(&self, o: &Out, head: &Head, origin_form: bool) -> io::Result<http::Request<()>> {
        let server = || {
            let a = socket2::SockRef::from(&*self.fd).peer_addr().ok()?.as_socket()?;
            Some(a.to_string())
        };
        request(head, o.tls, origin_form, server)
    }

    /// Opens the stream with the request's HEADERS frame.
    fn send_head(&self, o: &mut Out, head: &Head, req: Request) -> io::Result<()> {
        let method = head.method();
        let connect = method == Method::Connect;
        // A WebSocket upgrade goes as an extended CONNECT (RFC 8441): the session only sends
        // one here when the server's `ws` allows it.
        let ws = head.info().upgrade
            && head.header(b"upgrade").is_some_and(|v| v.eq_ignore_ascii_case(b"websocket"));
        let framing = match head.info().body {
            _ if connect || ws => Some(Framing::UntilClose),
            Body::Length(0) | Body::None | Body::UntilClose => None,
            Body::Length(n) => Some(Framing::Length(n)),
            Body::Chunked => Some(Framing::Chunked(ChunkedScanner::new())),
        };
        let mut send = o.send.take().ok_or(io::ErrorKind::BrokenPipe)?;
        let end = framing.is_none();
        let sent = match req {
            Request::Map(mut req) => {
                if ws {
                    *req.method_mut() = http::Method::CONNECT;
                    req.extensions_mut().insert(h2::ext::Protocol::from_static("websocket"));
                    req.headers_mut().remove("sec-websocket-key");
                }
                send.send_request(req, end)
            }
            Request::Encoded((method, block)) => send.send_request_encoded(method, block, end),
        };
        let (response, stream) = match sent {
            Ok(r) => r,
            Err(e) => {
                // A connection that refuses a new stream (GOAWAY, stream ids used up) gets no
                // more: the transaction is retried on a new one.
                self.conn.closed.store(true, Ordering::Release);
                return Err(h2_error(e));
            }
        };
        o.state = match framing {
            Some(f) => OutState::Body(Outgoing::new(f, stream)),
            None => OutState::Done,
        };
        let mut i = self.inc.borrow_mut();
        i.method = method;
        i.websocket = ws.then(|| head.header(b"sec-websocket-key").unwrap_or_default().to_vec());
        i.response = Some(response);
        if let Some(w) = i.waiting.take() {
            w.wake();
        }
        Ok(())
    }

    /// The request's body ends here (a tunnel's client side closed).
    pub fn shutdown_write(&self) -> io::Result<()> {
        if let OutState::Body(out) = &mut self.out.borrow_mut().state {
            out.finish();
        }
        Ok(())
    }

    /// A server's stream is never idle between requests: nothing to watch.
    pub async fn peer_closed(&self) -> io::Result<bool> {
        std::future::pending().await
    }
}

/// A request for `send_head`: as a header map (what `h2` encodes), or as a header block
/// encoded already with its method.
enum Request {
    Map(http::Request<()>),
    Encoded((http::Method, Bytes)),
}

/// The HTTP/2 request for an HTTP/1.1 head: `:authority` from Host (or an absolute target),
/// `:scheme` from the connection, connection-specific fields dropped (RFC 9113 8.2.2). Without
/// a Host, the authority is the server's address (`server`): HTTP/2 wants a `:scheme` on every
/// request but CONNECT, which the `h2` crate sends only with an authority (HAProxy sends
/// none; a server would refuse the request without `:scheme`).
fn request(
    head: &Head,
    tls: bool,
    origin_form: bool,
    server: impl FnOnce() -> Option<String>,
) -> io::Result<http::Request<()>> {
    let bad = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let method = http::Method::from_bytes(head.method_bytes()).map_err(|e| bad(&e))?;
    // The origin form the session would write for an absolute-form target (see
    // `Head::write_origin_form_to`): what follows the authority, `/` if nothing.
    let target = match head.target() {
        t if origin_form
            && method != http::Method::CONNECT
            && !t.starts_with(b"/")
            && t != b"*" =>
        {
            match head.origin_form_target() {
                b"" => b"/".as_slice(),
                o => o,
            }
        }
        t => t,
    };
    let uri: http::Uri = if method == http::Method::CONNECT {
        http::Uri::try_from(target).map_err(|e| bad(&e))?
    } else if target.starts_with(b"/") || target == b"*" {
        // Origin form, or the asterisk form of `OPTIONS *` (its `:path` is `*`).
        let authority = match head.header(b"host").filter(|h| !h.is_empty()) {
            Some(h) => http::uri::Authority::try_from(h).map_err(|e| bad(&e))?,
            None => {
                let a = server().ok_or_else(|| bad(&"no authority for the request"))?;
                http::uri::Authority::try_from(a).map_err(|e| bad(&e))?
            }
        };
        http::Uri::builder()
            .scheme(if tls { "https" } else { "http" })
            .authority(authority)
            .path_and_query(target)
            .build()
            .map_err(|e| bad(&e))?
    } else {
        // Absolute form.
        http::Uri::try_from(target).map_err(|e| bad(&e))?
    };
    let mut req = http::Request::new(());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    let headers = req.headers_mut();
    let skip = |name: &[u8]| {
        connection_specific(name)
            || name.eq_ignore_ascii_case(b"host")
            || name.eq_ignore_ascii_case(b"te")
    };
    super::append_fields(head, skip, headers);
    // `te` only as `trailers` (RFC 9113 8.2.2), written as h2 wants it (lower case).
    if head.header(b"te").is_some_and(|v| v.eq_ignore_ascii_case(b"trailers")) {
        headers.append(http::header::TE, http::HeaderValue::from_static("trailers"));
    }
    Ok(req)
}

/// A response's head as received, and the field its body's HTTP/1 framing adds.
struct ResponseHead {
    /// The HEADERS frame's fields as decoded (checked by `h2` as for any head).
    raw: h2::RawHead,
    status: u16,
    framing: Option<(&'static [u8], &'static [u8])>,
}

impl ResponseHead {
    /// The head built from its fields (see [`UpView::take_response_head`]).
    fn build(&self, head: &mut Head, limits: &Limits) -> Result<usize, fulcrum_http::HeadError> {
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
    fn text(&self) -> Vec<u8> {
        let mut head = Vec::with_capacity(256);
        write_status(&mut head, self.status);
        write_fields(&mut head, self.raw.fields().chain(self.framing));
        head.extend_from_slice(b"\r\n");
        head
    }
}

/// The head of a response, and its body framed for HTTP/1: as sized by the server, else in
/// chunks (where its trailers fit).
fn response_head(
    raw: h2::RawHead,
    status: u16,
    body: h2::RecvStream,
    method: Method,
) -> (ResponseHead, Incoming) {
    let bodiless = method == Method::Head || status == 204 || status == 304;
    let tunnel = method == Method::Connect && (200..300).contains(&status);
    let sized = raw.has_content_length();
    let (body, chunked, framing) = if bodiless {
        (None, false, None)
    } else if tunnel || sized {
        (Some(body), false, None)
    } else if body.is_end_stream() {
        (None, false, Some((b"content-length".as_slice(), b"0".as_slice())))
    } else {
        (Some(body), true, Some((b"transfer-encoding".as_slice(), b"chunked".as_slice())))
    };
    (ResponseHead { raw, status, framing }, Incoming::new(Vec::new(), body, chunked))
}

/// The 101 an HTTP/1.1 WebSocket client expects, for an extended CONNECT's 2xx, with the
/// `Sec-WebSocket-Accept` its key asks for (RFC 6455 4.2.2); then the stream is the tunnel.
fn websocket_head(raw: &h2::RawHead, body: h2::RecvStream, key: &[u8]) -> Incoming {
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
    Incoming::new(head, Some(body), false)
}

/// A status's reason phrase (HTTP/2 carries none).
fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown")
}

fn write_status(out: &mut Vec<u8>, status: u16) {
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

fn write_fields<'a>(out: &mut Vec<u8>, fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
    for (name, value) in fields {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

impl Drop for UpView {
    fn drop(&mut self) {
        if let OutState::Body(out) = &mut self.out.get_mut().state {
            out.finish();
        }
        // An unread response ends its stream (h2 resets it when its handles go).
        self.conn.active.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for UpView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpView").finish_non_exhaustive()
    }
}

impl AsFd for UpView {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
