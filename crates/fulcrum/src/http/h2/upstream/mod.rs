//! HTTP/2 to servers (HAProxy's `mux_h2` on the backend side): `server ... proto h2`, or TLS
//! whose ALPN chose `h2` (`alpn h2,http/1.1`). The transaction sends its request and reads the
//! response as it does with any server; [`UpView`] turns them into one stream of a shared
//! connection ([`super::backconn`]), as [`super::view`] does for a client's stream: the
//! request head HPACK-encoded from the head the session parsed ([`super::hpack`]; no HTTP/1
//! text is written for it), the final response head built from the HEADERS frame for the
//! session, bodies as HTTP/1.1 bytes, or as pieces when the client speaks HTTP/2 too.
//! HTTP/1.1 heads stay the one internal form, and every rule, log and retry works unchanged.
//!
//! Connections are the worker's (each runs as a task of its event loop) and shared by every
//! transaction of the worker going to the same server (HAProxy's "available" connections,
//! used in every `http-reuse` mode but `never`, where a connection carries one transaction).
//! One is left for another when its streams reach the server's `SETTINGS_MAX_CONCURRENT_STREAMS`,
//! and closed once idle for HAProxy's default `pool-purge-delay` (5 s), or when the server
//! sent GOAWAY. The worker's connections are found by backend, server, address generation and
//! SNI. Health checks use an HTTP/2 connection of their own.
//!
//! The final response head is built by [`UpView::take_response_head`]; interim heads, and one
//! a parse refuses, come as HTTP/1.1 text. The response body is held unread while a response
//! rule waits for it (`poll_held`).
//!
//! Owns: the worker's HTTP/2 connections to servers and the translation of one request and
//! response. Must not touch: server choice and slots (the backend), the idle HTTP/1 pool.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::rc::Rc;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fulcrum_http::{Body, ChunkedScanner, Head, Limits, Method};

use super::backconn::{self, Conn, Key, NO_ERROR, REFUSED_STREAM};
use super::body::{connection_specific, Framing, Sending};
use crate::backend::Backend;
use crate::connection::Stream;
use crate::http::peer::Peer;
use crate::worker::{Id, Slot};

mod message;
mod request;

use message::{response_head, websocket_head, write_fields, write_status, Msg, ResponseHead};
use request::{map_block, request, Request};

/// How long a connection without streams stays open (HAProxy's default `pool-purge-delay`).
const IDLE: Duration = Duration::from_secs(5);

/// A connection of this worker to a server.
struct Entry {
    backend: Weak<Backend>,
    idx: usize,
    addr_gen: u32,
    sni: Option<Box<str>>,
    conn: Rc<Conn>,
    fd: Arc<OwnedFd>,
    tls: Option<Arc<crate::tls::facts::Snapshot>>,
}

static CONNS: Slot<RefCell<Vec<Entry>>> = Slot::new(Id::H2Upstream, || RefCell::new(Vec::new()));

/// A new stream on one of this worker's connections to that server, with the number of
/// streams the connection carried before; `None` when none has room.
pub fn take(be: &Arc<Backend>, idx: usize, sni: Option<&str>) -> Option<(Peer, u32)> {
    CONNS.with(|c| {
        let conns = c.borrow();
        let gen = be.servers[idx].addr_gen();
        // The first connection to that server with room for a stream (the first ones fill up,
        // the others then idle and close).
        let e = conns.iter().find(|c| {
            c.idx == idx
                && std::ptr::eq(c.backend.as_ptr(), Arc::as_ptr(be))
                && c.addr_gen == gen
                && c.sni.as_deref() == sni
                && c.conn.has_room()
        })?;
        let before = e.conn.carried();
        let view = UpView::new(&e.conn, Arc::clone(&e.fd), e.tls.clone(), e.sni.clone());
        Some((Peer::H2Up(Box::new(view)), before))
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
/// check). The preface goes out with the first stream's request. `counters`: the backend's,
/// for a transaction's connection (a health check's counts in no proxy's `h2` module).
pub async fn start(
    stream: Stream,
    tune: fulcrum_config::TuneH2,
    share: Option<Share<'_>>,
    counters: Option<Arc<crate::counters::Counters>>,
) -> io::Result<Peer> {
    let tls = stream.tls().map(|t| Arc::new(crate::tls::facts::Snapshot::of(t)));
    super::no_delay(&stream);
    let fd = Arc::new(stream.as_fd().try_clone_to_owned()?);
    let io = super::Io { s: Rc::new(stream), prefix: Vec::new(), pos: 0 };
    let conn = Conn::new(&tune, share.is_some(), counters);
    conn.set_max_reuse(share.as_ref().map_or(u32::MAX, |s| s.be.servers[s.idx].max_reuse));
    let sni: Option<Box<str>> = share.as_ref().and_then(|s| s.sni).map(Into::into);
    let view = UpView::new(&conn, Arc::clone(&fd), tls.clone(), sni.clone());
    if let Some(Share { be, idx, .. }) = share {
        CONNS.with(|c| {
            c.borrow_mut().push(Entry {
                backend: Arc::downgrade(be),
                idx,
                addr_gen: be.servers[idx].addr_gen(),
                sni,
                conn: Rc::clone(&conn),
                fd,
                tls,
            })
        });
    }
    tokio::task::spawn_local(drive(conn, io));
    Ok(Peer::H2Up(Box::new(view)))
}

/// Runs a connection until it ends: the server closed it or sent GOAWAY, or it stayed without
/// streams for [`IDLE`] (it then leaves the worker's list, and ends with GOAWAY).
async fn drive(conn: Rc<Conn>, mut io: super::Io) {
    let mut idle_since = tokio::time::Instant::now();
    let mut tick = std::pin::pin!(tokio::time::sleep(IDLE));
    let mut forgotten = false;
    loop {
        tokio::select! {
            biased;
            _ = std::future::poll_fn(|cx| conn.poll_drive(cx, &mut io)) => break,
            _ = &mut tick, if !forgotten => {
                let now = tokio::time::Instant::now();
                if conn.active() > 0 {
                    idle_since = now;
                }
                if now.duration_since(idle_since) >= IDLE {
                    forget(&conn);
                    forgotten = true;
                } else {
                    tick.as_mut().reset(now + Duration::from_secs(1));
                }
            }
        }
    }
    forget(&conn);
}

/// Takes a connection out of the worker's list: it takes no new stream, and ends once its
/// streams did.
fn forget(conn: &Rc<Conn>) {
    conn.forget();
    CONNS.with(|c| c.borrow_mut().retain(|e| !Rc::ptr_eq(&e.conn, conn)));
}

/// Ends every connection of this worker to servers once its streams are done (tests,
/// shutdown).
pub fn clear() {
    let all = CONNS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    for e in all {
        e.conn.forget();
    }
}

/// One request and its response on a stream to a server, behind the session's `Stream`
/// interface (`Peer::H2Up`). It names its connection by key (a `Stream` moves between
/// threads in the idle pool's types, an `Rc` cannot; a view never leaves its worker).
pub struct UpView {
    conn: Key,
    /// The stream's id once opened (0 before).
    id: Cell<u32>,
    out: RefCell<Out>,
    inc: RefCell<In>,
    /// A duplicate of the connection's socket (`getsockname`, `shutdown session`).
    fd: Arc<OwnedFd>,
    sni: Option<Box<str>>,
    /// The connection's TLS facts (`ssl_bc*`), over TLS.
    tls: Option<Arc<crate::tls::facts::Snapshot>>,
}

enum OutState {
    /// Gathering the request head.
    Head(Vec<u8>),
    Body(Sending),
    Done,
}

struct Out {
    state: OutState,
    /// `https` over TLS.
    tls: bool,
}

struct In {
    /// The request's method: a HEAD response has no body, a CONNECT's 2xx is a tunnel.
    method: Method,
    /// An interim response's head, to be read first.
    interim: Vec<u8>,
    /// The request was a WebSocket upgrade sent as an extended CONNECT: its key.
    websocket: Option<Vec<u8>>,
    /// The final response, its head first (as text, unless the head is still in `head`).
    message: Option<Msg>,
    /// The final response's head as received, until the session takes it (built, or as text).
    head: Option<ResponseHead>,
    /// Woken when the request is sent (a read waiting before the stream opened).
    waiting: Option<Waker>,
    /// The stream or the connection failed before a final response.
    failed: bool,
    /// The server refused the stream (it may go again on another connection).
    refused: bool,
}

impl UpView {
    fn new(
        conn: &Conn,
        fd: Arc<OwnedFd>,
        tls: Option<Arc<crate::tls::facts::Snapshot>>,
        sni: Option<Box<str>>,
    ) -> UpView {
        conn.attach();
        let https = tls.is_some();
        UpView {
            conn: conn.key(),
            id: Cell::new(0),
            out: RefCell::new(Out { state: OutState::Head(Vec::new()), tls: https }),
            inc: RefCell::new(In {
                method: Method::Get,
                interim: Vec::new(),
                websocket: None,
                message: None,
                head: None,
                waiting: None,
                failed: false,
                refused: false,
            }),
            fd,
            sni,
            tls,
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
        let id = self.id.get();
        if let Some(m) = i.message.as_mut() {
            return m.poll_ready(self.conn, id, cx).map(Ok);
        }
        if id == 0 {
            i.waiting = Some(cx.waker().clone());
            return Poll::Pending;
        }
        enum Got {
            Interim(fulcrum_h2::RawHead),
            Final(fulcrum_h2::RawHead, bool),
            Failed,
            Refused,
        }
        let got = backconn::with(self.conn, |c| {
            c.stream(id, |st| {
                if let Some(raw) = st.part.interim.pop_front() {
                    return Some(Got::Interim(raw));
                }
                if let Some(raw) = st.part.response.take() {
                    return Some(Got::Final(raw, st.recv_end && st.data.is_empty()));
                }
                if let Some(code) = st.reset {
                    // Refused (REFUSED_STREAM, or above a GOAWAY's last stream): the server
                    // did not process it, and it may go again elsewhere (RFC 9113 8.7).
                    return Some(if code == REFUSED_STREAM { Got::Refused } else { Got::Failed });
                }
                st.poll_readable(cx).is_ready().then_some(Got::Failed)
            })
        })
        .flatten()
        .unwrap_or(Some(Got::Failed));
        match got {
            None => Poll::Pending,
            Some(Got::Interim(raw)) => {
                // 100 Continue, 103 Early Hints: read as HTTP/1 interim heads.
                write_status(&mut i.interim, raw.status().unwrap_or(100));
                write_fields(&mut i.interim, raw.fields());
                i.interim.extend_from_slice(b"\r\n");
                Poll::Ready(Ok(()))
            }
            Some(Got::Refused) => {
                i.failed = true;
                i.refused = true;
                Poll::Ready(Ok(()))
            }
            Some(Got::Failed) => {
                i.failed = true;
                Poll::Ready(Ok(()))
            }
            Some(Got::Final(raw, ended)) => {
                // (The status was checked to be three digits.)
                let status = raw.status().unwrap_or(500);
                i.message = Some(match i.websocket.take() {
                    Some(key) if (200..300).contains(&status) => websocket_head(&raw, &key),
                    _ => {
                        let (head, body) = response_head(raw, status, ended, i.method);
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
            // (Only a refused stream is sent again: `exchange` retries on `ConnectionRefused`.)
            let kind = if i.refused {
                io::ErrorKind::ConnectionRefused
            } else {
                io::ErrorKind::ConnectionReset
            };
            return Err(kind.into());
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
        let id = self.id.get();
        let r = match &o.state {
            OutState::Body(s) if !s.done => {
                match backconn::with(self.conn, |c| c.poll_writable(id, cx)) {
                    Some(Poll::Pending) => return Poll::Pending,
                    Some(Poll::Ready(Ok(()))) => Ok(()),
                    _ => Err(io::ErrorKind::BrokenPipe.into()),
                }
            }
            _ => Ok(()),
        };
        Poll::Ready(r.or_else(|e| self.write_failed(&mut o, e)))
    }

    /// A write of the request's body failed: when the server answered and then reset the
    /// stream with NO_ERROR, it sent its whole answer before the whole request and wants no
    /// more of it (RFC 9113 8.1), so the rest of the body is dropped and the answer read as
    /// usual (an early 413, say, reaches the client instead of a 502). Any other failure
    /// stands (a stream refused, without an answer, may go again elsewhere: see `exchange`).
    fn write_failed(&self, o: &mut Out, e: io::Error) -> io::Result<()> {
        let OutState::Body(_) = &o.state else { return Err(e) };
        let id = self.id.get();
        let code = backconn::with(self.conn, |c| c.stream(id, |st| st.reset)).flatten().flatten();
        if code != Some(NO_ERROR) {
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
        if let OutState::Body(s) = &o.state {
            let id = self.id.get();
            if !s.done && !backconn::with(self.conn, |c| c.is_writable(id)).unwrap_or(true) {
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

    fn take(&self, o: &mut Out, bytes: &[u8]) -> io::Result<()> {
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
                self.take(o, &rest)
            }
            OutState::Body(s) => {
                let id = self.id.get();
                backconn::with(self.conn, |c| s.take(c, id, bytes))
                    .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()))
            }
            OutState::Done => Ok(()),
        }
    }

    /// Opens the stream with the request head the session parsed (in origin form if
    /// `origin_form`), HPACK-encoded from its fields: no HTTP/1 text is written for it.
    /// `Ok(false)` when it cannot go this way (a head begun already, or one the header map
    /// refuses): the session then writes its text, whose parse says why.
    pub fn send_parsed_head(&self, head: &Head, origin_form: bool) -> io::Result<bool> {
        let mut o = self.out.borrow_mut();
        let fresh = matches!(&o.state, OutState::Head(b) if b.is_empty());
        if !fresh || !head.is_request() {
            return Ok(false);
        }
        let req = match self.encoded_request(&o, head) {
            Some(block) => Request::Encoded(block),
            None => match self.request(&o, head, origin_form) {
                Ok(req) => Request::Map(req),
                Err(_) => return Ok(false),
            },
        };
        self.send_head(&mut o, head, req).map(|()| true)
    }

    /// The request's header block encoded straight from `head` (see [`super::hpack`]), the
    /// same fields as [`request`] makes: `None` for what goes the header-map way (CONNECT, an
    /// upgrade, a target or authority that way refuses or would read otherwise).
    fn encoded_request(&self, o: &Out, head: &Head) -> Option<Vec<u8>> {
        if head.method() == Method::Connect || head.info().upgrade {
            return None;
        }
        http::Method::from_bytes(head.method_bytes()).ok()?;
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
        let mut block = super::hpack::scratch();
        let p = super::hpack::Pseudo { method: head.method_bytes(), https, authority, path };
        super::hpack::request_block(p, head, skip, extra, &mut block);
        Some(block)
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
        let end = framing.is_none();
        let opened = backconn::with(self.conn, |c| {
            let block = match req {
                Request::Map(req) => {
                    if ws && !c.may_connect_protocol() {
                        return Err(io::Error::other("the server refuses extended CONNECT"));
                    }
                    map_block(&req, ws)
                }
                Request::Encoded(block) => block,
            };
            let opened = c.open(&block, end, method == Method::Head);
            super::hpack::put_back(block);
            opened
        });
        // A connection that refuses a new stream (GOAWAY, stream ids used up) gets no more:
        // the head is not sent, and the transaction goes to a new one.
        let id = opened.unwrap_or_else(|| Err(io::ErrorKind::BrokenPipe.into()))?;
        self.id.set(id);
        o.state = match framing {
            Some(framing) => OutState::Body(Sending::new(framing)),
            None => OutState::Done,
        };
        let mut i = self.inc.borrow_mut();
        i.method = method;
        i.websocket = ws.then(|| head.header(b"sec-websocket-key").unwrap_or_default().to_vec());
        if let Some(w) = i.waiting.take() {
            w.wake();
        }
        Ok(())
    }

    /// The response's body goes on as pieces: its head was taken built and every byte given
    /// as HTTP/1 was read.
    pub fn gives_pieces(&self) -> bool {
        let i = self.inc.borrow();
        i.head.is_none() && i.interim.is_empty() && i.message.as_ref().is_some_and(Msg::is_empty)
    }

    /// Gives back the buffer pieces were read into, for the connection's next streams.
    pub fn give_buf(&self, b: Vec<u8>) {
        backconn::with(self.conn, |c| c.give_buf(b));
    }

    /// The response body's next piece (see `Received::poll_piece`).
    pub fn poll_piece(
        &self,
        cx: &mut Context<'_>,
        buf: &mut Vec<u8>,
    ) -> Poll<io::Result<crate::http::peer::Piece>> {
        let mut i = self.inc.borrow_mut();
        let i = &mut *i;
        match i.message.as_mut() {
            Some(m) if !i.failed => m.poll_piece(self.conn, self.id.get(), cx, buf),
            _ => Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())),
        }
    }

    /// The response body held in the stream, unread (see `Received::poll_held`).
    pub fn poll_held(
        &self,
        cx: &mut Context<'_>,
        have: usize,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<crate::http::peer::Hold>> {
        let mut i = self.inc.borrow_mut();
        let i = &mut *i;
        match i.message.as_mut() {
            Some(m) if !i.failed => m.poll_held(self.conn, self.id.get(), cx, have, out),
            _ => Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())),
        }
    }

    /// The request's body goes on as pieces: the stream is open and no HTTP/1 body bytes were
    /// taken partly.
    pub fn takes_pieces(&self) -> bool {
        let o = self.out.borrow();
        matches!(&o.state, OutState::Body(b) if b.takes_pieces())
    }

    /// Request body data as a block (see `Sending::pass`); a failure is taken as by
    /// [`UpView::try_send`] (an answered stream's reset drops the rest of the body).
    pub fn send_data(&self, data: &[u8], end: bool) -> io::Result<()> {
        self.passing(|c, id, b| b.pass(c, id, data, end))
    }

    /// Ends the request body with trailers.
    pub fn send_trailers(&self, fields: &fulcrum_h2::RawHead) -> io::Result<()> {
        self.passing(|c, id, b| b.pass_trailers(c, id, fields))
    }

    fn passing(
        &self,
        f: impl FnOnce(&Conn, u32, &mut Sending) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut o = self.out.borrow_mut();
        let OutState::Body(b) = &mut o.state else { return Ok(()) };
        let id = self.id.get();
        let r = backconn::with(self.conn, |c| f(c, id, b))
            .unwrap_or(Err(io::ErrorKind::BrokenPipe.into()));
        match r {
            Err(e) => self.write_failed(&mut o, e),
            ok => ok,
        }
    }

    /// The request's body ends here (a tunnel's client side closed).
    pub fn shutdown_write(&self) -> io::Result<()> {
        if let OutState::Body(s) = &mut self.out.borrow_mut().state {
            let id = self.id.get();
            backconn::with(self.conn, |c| s.finish(c, id));
        }
        Ok(())
    }

    /// A server's stream is never idle between requests: nothing to watch.
    pub async fn peer_closed(&self) -> io::Result<bool> {
        std::future::pending().await
    }
}

impl Drop for UpView {
    fn drop(&mut self) {
        let id = self.id.get();
        let out = &mut self.out.get_mut().state;
        let buf = self.inc.get_mut().message.as_mut().map(Msg::take_buf);
        backconn::with(self.conn, |c| {
            if let OutState::Body(s) = out {
                s.finish(c, id);
            }
            // An unread response ends its stream (reset, CANCEL).
            c.detach(id);
            if let Some(b) = buf {
                c.give_buf(b);
            }
        });
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
