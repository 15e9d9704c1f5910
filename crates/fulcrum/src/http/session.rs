//! The HTTP session: the client connection's loop of transactions and the exchange with a
//! server for each. See the module doc of `http` for the sequence.

use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use fulcrum_http::{Body, ChunkedScanner, Head, Method, Version};
use tokio::time::{Instant, Sleep};

use fulcrum_config as cfg;

use super::io::{send_within, write_all, write_all_within, RecvBuf};
use super::timer::{self, Timer};
use super::{pool, ConnMode, HashKey, HttpProxy, Reuse};
use crate::backend::{Backend, PickKey, ServerSlot};
use crate::connection::Stream;
use crate::counters::Counters;
use crate::frontend::{Frontend, LogFormat};
use crate::rules::sample::Vars;
use crate::rules::{self, Base, ProxyRules, Verdict};
use crate::runtime::Shared;
use crate::tcp::tunnel::{self, TunnelTimeouts};
use crate::tcp::{self, Accepted};

/// A connection to a server, attached to this session while it carries a request.
struct ServerConn {
    stream: Stream,
    be: Arc<Backend>,
    idx: usize,
    /// Requests completed on it before the current one.
    requests: u32,
    /// Bytes received from the server not forwarded yet.
    buf: RecvBuf,
    /// Counted as in use while it carries a request (the idle pool sizes itself on it).
    _in_use: pool::InUse,
}

/// Whether the client connection stays open after a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    KeepAlive,
    Close,
}

/// How moving a body ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Xfer {
    Done,
    /// The reading side closed early.
    ReadEof,
    ReadError,
    ReadTimeout,
    WriteError,
    WriteTimeout,
    /// Invalid chunked framing.
    Invalid,
    /// The watched side (the server, during an upload) has something to say.
    Interrupted,
}

struct Session<'a> {
    fe: &'a Frontend,
    http: &'a HttpProxy,
    shared: &'a Shared,
    /// Each transaction's `httplog` line is wanted (`-d`, or `option httplog` with targets).
    logs: bool,
    client: Stream,
    peer: Option<SocketAddr>,
    dst_port: u16,
    cbuf: RecvBuf,
    req: Head,
    resp: Head,
    out: Vec<u8>,
    scanner: ChunkedScanner,
    own: Option<ServerConn>,
    /// Transactions completed on this connection.
    requests: u32,
    /// The address the client connected to.
    local: Option<SocketAddr>,
    vars: Vars,
    scratch: Vec<u8>,
    /// Bytes a hash-based `balance` hashes (reused).
    key: Vec<u8>,
    /// What the current transaction's log line says (kept only under `-d`).
    log: TxnLog,
    /// The per-request memory is with the worker's spares (idle between requests).
    parked: bool,
    /// Bounds the waits for the client's bytes (see `timer`).
    ctimer: Pin<&'a mut Timer>,
    /// Bounds the waits for the server's bytes.
    stimer: Pin<&'a mut Timer>,
}

/// The facts of one transaction's `httplog` line.
#[derive(Default)]
struct TxnLog {
    request_line: Vec<u8>,
    tr: Option<Duration>,
    backend: Option<Arc<Backend>>,
    server: Option<usize>,
    /// Time to get a server connection (queue and connect together).
    tc: Option<Duration>,
    /// Time from sending the request to the response head.
    trsp: Option<Duration>,
    status: u16,
    bytes: u64,
    state: &'static str,
}

/// Per-request memory of a session parked while it idles (see `Session::park`).
struct Spare {
    req: Head,
    resp: Head,
    out: Vec<u8>,
}

thread_local! {
    static SPARES: std::cell::RefCell<Vec<Spare>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Spares kept per worker; beyond this, a parked session's memory is freed.
const SPARES_MAX: usize = 128;

/// What a hash-based balance uses for one request.
enum KeyKind {
    None,
    Ip(std::net::IpAddr),
    /// The bytes in the key buffer.
    Bytes,
}

/// An answer the rules built.
enum Built {
    Status(u16),
    Bytes(Vec<u8>),
    /// Close without an answer (`reject`, `silent-drop`).
    Drop,
}

/// How long a keep-alive connection waits for its next request inside its full session before
/// the session is dissolved into a small [`Resting`] state (an idle connection then costs a few
/// hundred bytes instead of a whole session).
const REST_AFTER: Duration = Duration::from_millis(20);

/// Where a session starts: a new connection, or one coming back from rest.
pub enum Start {
    New(Accepted),
    Resume(Resting),
}

/// What a keep-alive connection keeps while it rests between requests. It lives in the
/// connection's task (see `runtime::accept`), so every byte here is a byte per idle connection:
/// what most connections do not have (variables, a private server connection, a local address
/// for the rules) is boxed apart and absent when empty.
pub struct Resting {
    client: Stream,
    peer: Option<SocketAddr>,
    /// When `timeout http-keep-alive` ends the rest.
    deadline: Option<Instant>,
    more: Option<Box<RestingMore>>,
    requests: u32,
    dst_port: u16,
}

/// The rarer parts of a resting connection.
struct RestingMore {
    local: Option<SocketAddr>,
    /// `sess.` variables.
    vars: Vars,
    own: Option<ServerConn>,
}

impl Resting {
    /// Waits until the client sends its next request (`true`: resume the session), or closes,
    /// or the keep-alive timeout or a soft stop ends the rest (`false`: close the connection).
    pub fn wait(&self) -> RestingWait<'_> {
        RestingWait {
            client: &self.client,
            timer: self.deadline.map(tokio::time::sleep_until),
            _watched: crate::runtime::StopWatch::new(self.client.as_fd().as_raw_fd()),
        }
    }
}

pin_project_lite::pin_project! {
    /// See [`Resting::wait`]. Written by hand rather than as an `async` block: its size is
    /// part of the memory of every idle connection, and a generator keeps room for each of its
    /// sub-futures apart. A soft stop wakes it by shutting the socket's read side (the
    /// `StopWatch`), which costs no waiter here.
    pub struct RestingWait<'a> {
        client: &'a Stream,
        #[pin]
        timer: Option<Sleep>,
        _watched: crate::runtime::StopWatch,
    }
}

impl Future for RestingWait<'_> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.project();
        if crate::runtime::stopping() {
            return Poll::Ready(false);
        }
        // Readable also means closed or in error: the session finds out which.
        if this.client.poll_read_ready(cx).is_ready() {
            return Poll::Ready(true);
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(false),
            _ => Poll::Pending,
        }
    }
}

/// Serves one client connection in `mode http` until it closes (`None`), or until it has idled
/// long enough between requests to rest (`Some`; the caller waits with [`Resting::wait`] and
/// calls `serve` again).
pub async fn serve(
    fe: &Frontend,
    http: &HttpProxy,
    start: Start,
    shared: &Shared,
) -> Option<Resting> {
    let (client, peer, dst_port, requests, more) = match start {
        Start::New(conn) => (conn.client, conn.peer, conn.dst_port, 0, None),
        Start::Resume(r) => (r.client, r.peer, r.dst_port, r.requests, r.more),
    };
    let (local, vars, own) = match more {
        Some(m) => (m.local, m.vars, m.own),
        None => (None, Vars::default(), None),
    };
    let ctimer = std::pin::pin!(None);
    let stimer = std::pin::pin!(None);
    let mut s = Session {
        fe,
        http,
        shared,
        client,
        peer,
        dst_port,
        cbuf: RecvBuf::default(),
        req: Head::new(),
        resp: Head::new(),
        out: Vec::new(),
        scanner: ChunkedScanner::new(),
        own,
        requests,
        local,
        vars,
        scratch: Vec::new(),
        key: Vec::new(),
        log: TxnLog::default(),
        logs: shared.debug || (fe.logger.is_some() && fe.log_format == LogFormat::Http),
        parked: true,
        ctimer,
        stimer,
    };
    if fe.needs_dst && s.local.is_none() {
        s.local = socket2::SockRef::from(&s.client).local_addr().ok().and_then(|a| a.as_socket());
    }

    loop {
        // Clock reads only when a log line will use them.
        let waited = s.logs.then(Instant::now);
        match s.read_request().await {
            Ok(Read::Request) => {}
            Ok(Read::Rest(deadline)) => {
                s.cbuf.clear();
                s.park();
                let more = (s.local.is_some() || !s.vars.is_empty() || s.own.is_some())
                    .then(|| Box::new(RestingMore { local: s.local, vars: s.vars, own: s.own }));
                return Some(Resting {
                    client: s.client,
                    peer: s.peer,
                    deadline,
                    more,
                    requests: s.requests,
                    dst_port: s.dst_port,
                });
            }
            Ok(Read::Closed) => break,
            Err(status) => {
                s.answer_raw(status).await;
                if let Some(waited) = waited {
                    s.log = TxnLog { status, state: "CR", ..TxnLog::default() };
                    s.log.tr = Some(waited.elapsed());
                    s.print_log(waited);
                }
                break;
            }
        }
        if let Some(waited) = waited {
            s.log.request_line.clear();
            let r = &s.req;
            s.log.request_line.extend_from_slice(r.method_bytes());
            s.log.request_line.push(b' ');
            s.log.request_line.extend_from_slice(r.target());
            s.log.request_line.push(b' ');
            s.log.request_line.extend_from_slice(r.version().as_bytes());
            s.log.tr = Some(waited.elapsed());
        }
        // Not boxed: a connection idle for long leaves this future altogether (it rests), so
        // the transaction's state costs no allocation per request.
        if fe.log_format == LogFormat::Connect {
            if let Some(logger) = &fe.logger {
                let local = s.local.or_else(|| {
                    socket2::SockRef::from(&s.client).local_addr().ok().and_then(|a| a.as_socket())
                });
                let line = crate::log::connect_line(s.peer, local, &fe.name, true);
                logger.send(crate::log::syslog::INFO, &line);
            }
        }
        let next = s.transaction().await;
        if let Some(waited) = waited {
            s.print_log(waited);
        }
        s.requests += 1;
        if next == Next::Close || crate::runtime::stopping() {
            break;
        }
        s.park();
    }
    // Its heads stay warm for another session of this worker.
    s.cbuf.clear();
    s.park();
    if let Some(sc) = s.own.take() {
        s.release_server_conn(sc);
    }
    None
}

/// What waiting for a request gave.
enum Read {
    /// A request head is in `Session::req`.
    Request,
    /// Nothing more: the client closed, or stayed idle past the keep-alive timeout.
    Closed,
    /// Idle for a while with time left: rest, the keep-alive timeout ending at the deadline.
    Rest(Option<Instant>),
}

impl Session<'_> {
    /// Reads until a complete request head is parsed into `self.req`. `Ok(false)`: the client
    /// closed or stayed idle past the keep-alive timeout (nothing to answer). `Err(status)`: a
    /// bad or late request, to be answered with `status`.
    async fn read_request(&mut self) -> Result<Read, u16> {
        let t = self.http.timeouts;
        let first = self.requests == 0;
        let request_timeout = t.request.or(self.fe.timeouts.client);
        // Waiting for the first byte of a later request: `timeout http-keep-alive`.
        let idle_timeout = if first { request_timeout } else { t.keep_alive.or(request_timeout) };
        let mut started = !self.cbuf.is_empty();
        // One clock read per request while it is waited for: the deadlines count from here.
        let now = Instant::now();
        let mut deadline = if started { request_timeout } else { idle_timeout }.map(|d| now + d);
        // Once a later request has begun, `timeout http-request` counts from its first bytes;
        // computed only if the head is not complete at once.
        let mut started_late = false;
        loop {
            if !self.cbuf.is_empty() {
                self.unpark();
                match self.req.parse_request(self.cbuf.data(), &self.http.limits) {
                    Ok(Some(n)) => {
                        self.cbuf.consume(n);
                        return Ok(Read::Request);
                    }
                    Ok(None) if self.cbuf.is_full() => return Err(400),
                    Ok(None) => {}
                    Err(e) => {
                        self.note(format_args!("invalid request: {e}"));
                        return Err(e.request_status());
                    }
                }
            }
            if started_late {
                started_late = false;
                deadline = request_timeout.map(|d| Instant::now() + d);
            }
            // Between requests no soft-stop watch is armed here (it costs a lock per request):
            // within `REST_AFTER` the session rests, and resting connections close at once on a
            // soft stop.
            let read = self.cbuf.fill(&self.client);
            // Between requests, the full session waits only a little; then it rests.
            let rest_at = (!started && !first).then(|| now + REST_AFTER);
            let wait_until = match (deadline, rest_at) {
                (Some(d), Some(r)) => Some(d.min(r)),
                (d, r) => d.or(r),
            };
            let n = match wait_until {
                Some(d) => match timer::until(self.ctimer.as_mut(), d, read).await {
                    Ok(r) => r,
                    Err(_) if rest_at.is_some_and(|r| deadline.is_none_or(|d| r < d)) => {
                        return Ok(Read::Rest(deadline));
                    }
                    Err(_) => {
                        // Nothing of a later request (or a probe, with `http-ignore-probes`):
                        // close quietly. Otherwise HAProxy's 408.
                        let probe = first && !started && self.http.ignore_probes;
                        return if (started || first) && !probe {
                            Err(408)
                        } else {
                            Ok(Read::Closed)
                        };
                    }
                },
                None => read.await,
            };
            match n {
                Ok(0) | Err(_) => return Ok(Read::Closed),
                Ok(_) => {}
            }
            if !started {
                started = true;
                started_late = !first;
            }
        }
    }

    /// One request/response exchange, the request head being in `self.req`.
    async fn transaction(&mut self) -> Next {
        self.vars.end_transaction();
        let info = *self.req.info();
        let method = self.req.method();
        let version = self.req.version();
        let client_close = match version {
            Version::Http10 => !info.conn_keep_alive,
            _ => info.conn_close,
        };
        let fe = self.fe;

        // tcp-request content rules (the connection closes on reject).
        if !fe.rules.tcp_content.is_empty() && !self.tcp_content_accepts() {
            self.note(format_args!("tcp-request content reject"));
            return Next::Close;
        }
        // monitor-uri: answered here, before any rule.
        if let Some(uri) = &self.http.monitor_uri {
            if self.req.target() == uri.as_bytes() {
                let failing = {
                    let base = self.base(None);
                    let ctx = base.ctx(&self.req, None, &self.vars);
                    fe.rules.monitor_fail.iter().any(|c| c.eval(&fe.rules.acls, &ctx))
                };
                return self.answer(if failing { 503 } else { 200 }, &info, None).await;
            }
        }
        // `option http-buffer-request`: the body (up to a buffer) is there before rules run.
        if self.http.buffer_request && info.body != Body::None {
            let t = self.http.timeouts.request.or(fe.timeouts.client).unwrap_or(Duration::MAX);
            self.wait_for_body(&info, t.min(Duration::from_secs(3600)), None).await;
        }
        // Frontend rules, then legacy redirects.
        if let Some(next) = self.request_rules(&fe.rules, None, &info).await {
            return next;
        }
        // Backend choice.
        let Some(be) = self.choose_backend() else {
            return self.answer(503, &info, None).await;
        };
        Counters::inc(&be.counters.sessions);
        // Only a `mode tcp` frontend upgraded to HTTP can pick a tcp backend (for a later
        // request): as HAProxy, the stream fails and the connection closes without an answer.
        let Some(be_http) = be.http.as_deref() else {
            self.note(format_args!("tcp backend '{}' for an HTTP request: closing", be.name));
            return Next::Close;
        };
        // A `listen` proxy is its own backend: its rules ran above already.
        if !self.is_own_backend(&be) {
            if let Some(next) = self.request_rules(&be.rules, Some(&be), &info).await {
                return next;
            }
        }
        if !self.vars.early_hints.is_empty() {
            // One `103 Early Hints` per group of rules (`\0` separates groups).
            let mut hints = Vec::new();
            for group in self.vars.early_hints.split(|&b| b == 0).filter(|g| !g.is_empty()) {
                hints.extend_from_slice(b"HTTP/1.1 103 Early Hints\r\n");
                hints.extend_from_slice(group);
                hints.extend_from_slice(b"\r\n");
            }
            if write_all_within(&self.client, &hints, fe.timeouts.client).await.is_err() {
                return Next::Close;
            }
        }
        let conn_mode = merge_mode(self.http.conn_mode, be_http.conn_mode);

        // What goes to the server.
        let upgrade = info.upgrade && info.conn_upgrade;
        fulcrum_http::strip_hop_by_hop(&mut self.req, upgrade);
        if upgrade {
            let _ = self.req.set_header(b"Connection", b"upgrade");
        } else if conn_mode != ConnMode::KeepAlive {
            let _ = self.req.set_header(b"Connection", b"close");
        } else if version == Version::Http10 && info.body != Body::Chunked {
            // HTTP/1.0 asks for keep-alive explicitly (HAProxy does not for a chunked 1.0
            // request, after which the connection closes).
            let _ = self.req.set_header(b"Connection", b"keep-alive");
        }
        // An absolute-form target loses the scheme's default port, as HAProxy normalises it.
        drop_default_port(&mut self.req);
        if info.body == Body::Chunked {
            let _ = self.req.set_header(b"Transfer-Encoding", b"chunked");
        }
        self.add_addr_headers(be_http);
        let persist = self.persistence(&be, be_http);

        // A chunked body already received must be valid before anything reaches a server.
        if info.body == Body::Chunked && !self.cbuf.is_empty() {
            let mut check = ChunkedScanner::new();
            if check.scan(self.cbuf.data()).is_err() {
                let mut i = info;
                i.conn_close = true;
                return self.answer(400, &i, Some(&be)).await;
            }
        }
        // The head as it goes to the server (once for all tries); rewrites must leave it within
        // a buffer, as in HAProxy.
        self.out.clear();
        self.req.write_to(&mut self.out);
        if self.out.len() > be_http.bufsize.min(self.http.bufsize) && !self.vars.strict_off {
            return self.answer(500, &info, Some(&be)).await;
        }
        let mut keybuf = std::mem::take(&mut self.key);
        keybuf.clear();
        let key = match self.pick_key(&be_http.hash_key, &mut keybuf) {
            KeyKind::None => None,
            KeyKind::Ip(ip) => Some(PickKey::Ip(ip)),
            KeyKind::Bytes => Some(PickKey::Bytes(&keybuf)),
        };
        let retryable = info.body == Body::None;
        let mut fresh_only = false;
        let mut l7_retries = 0;
        let connect_from = self.logs.then(Instant::now);
        let (slot, mut sc, body_done) = loop {
            // An idle connection is checked for a close by the server only when the request
            // could not be sent again (it has a body).
            let got =
                self.server_conn(&be, key, persist, be_http.reuse, fresh_only, !retryable).await;
            let (slot, sc) = match got {
                Ok(v) => v,
                Err(e) => {
                    self.note(format_args!("no server: {e:?}"));
                    return self.answer(503, &info, Some(&be)).await;
                }
            };
            let reused = sc.requests > 0;
            let sent_at = connect_from.map(|c| (c, Instant::now()));
            if let Some((c, sent)) = sent_at {
                self.log.tc = Some(sent - c);
            }
            let exchanged = self.exchange(sc, &info, &be).await;
            if let Some((_, sent)) = sent_at {
                self.log.trsp = Some(sent.elapsed());
            }
            // `retry-on` (L7 retries): only a request without body can be sent again, at most
            // `retries` times, each time on a new connection.
            let ro = &be_http.retry_on;
            let may_retry = retryable && l7_retries < be.retries;
            let retry = match &exchanged {
                // Issue 3: a reused connection that dies before answering is always retried.
                Exchange::RetryFresh if reused && retryable && !fresh_only => true,
                Exchange::RetryFresh => may_retry && ro.empty_response,
                Exchange::BadResponse => may_retry && ro.junk_response,
                Exchange::ServerTimeout => may_retry && ro.response_timeout,
                Exchange::Response(_, true) => may_retry && ro.status(self.resp.status()),
                _ => false,
            };
            if retry {
                if !(reused && matches!(exchanged, Exchange::RetryFresh)) || fresh_only {
                    l7_retries += 1;
                }
                fresh_only = true;
                Counters::inc(&be.counters.retries);
                drop(exchanged);
                drop(slot);
                continue;
            }
            let idx = slot.index();
            match exchanged {
                Exchange::Response(sc, body_done) => {
                    if be.servers[idx].policy.observe.is_some() {
                        // `observe layer7`: 5xx but 501 and 505 count against the server.
                        let st = self.resp.status();
                        let bad = st >= 500 && st != 501 && st != 505;
                        observe_l7(&be, idx, bad, "Wrong http response");
                    }
                    break (slot, sc, body_done);
                }
                Exchange::RetryFresh | Exchange::BadResponse => {
                    let what = if matches!(exchanged, Exchange::RetryFresh) {
                        "Close from server (http)"
                    } else {
                        "Invalid http response"
                    };
                    observe_l7(&be, idx, true, what);
                    Counters::inc(&be.counters.failed_responses);
                    return self.answer(502, &info, Some(&be)).await;
                }
                Exchange::ServerTimeout => {
                    observe_l7(&be, idx, true, "Read timeout (http)");
                    return self.answer(504, &info, Some(&be)).await;
                }
                Exchange::ClientGone => return Next::Close,
                Exchange::BadRequest => {
                    let mut i = info;
                    i.conn_close = true;
                    return self.answer(400, &i, Some(&be)).await;
                }
            }
        };

        self.key = keybuf;
        // The response head is in `self.resp`.
        let status = self.resp.status();
        let resp_info = *self.resp.info();
        let resp_body = fulcrum_http::response_body(&self.resp, method);
        let tunnel = (status == 101 && upgrade) || (method == Method::Connect && status / 100 == 2);
        fulcrum_http::strip_hop_by_hop(&mut self.resp, status == 101);
        let server_keep = !tunnel
            && body_done
            && conn_mode == ConnMode::KeepAlive
            && !info.te_and_cl
            && resp_body != Body::UntilClose
            && match self.resp.version() {
                Version::Http10 => resp_info.conn_keep_alive,
                _ => !resp_info.conn_close,
            };
        // A chunked response body already received must be valid before the head goes out.
        if resp_body == Body::Chunked && !sc.buf.is_empty() {
            let mut check = ChunkedScanner::new();
            if check.scan(sc.buf.data()).is_err() {
                drop(slot);
                drop(sc);
                Counters::inc(&be.counters.failed_responses);
                return self.answer(502, &info, Some(&be)).await;
            }
        }
        // Response rules: backend's, then frontend's; a deny replaces the response.
        // Borrowed from the backend (a local `Arc`), not copied: no allocation per request.
        let be_ref: &Backend = &be;
        let server_name = be_ref.servers[slot.index()].name.as_str();
        if let Some(built) = self.response_rules(&be, Some(server_name)) {
            drop(slot);
            drop(sc); // the server's response is abandoned with its connection
            let mut i = info;
            i.conn_close = true;
            return match built {
                Built::Drop => Next::Close,
                Built::Status(status) => self.answer(status, &i, Some(&be)).await,
                Built::Bytes(bytes) => self.answer_bytes(bytes, &i, Some(&be)).await,
            };
        }
        self.cookie_response(be_http, &slot, persist);
        let client_keep = !tunnel
            && !info.te_and_cl
            && body_done
            && !client_close
            && conn_mode != ConnMode::Close
            && resp_body != Body::UntilClose
            && !crate::runtime::stopping();
        if status == 101 {
            let _ = self.resp.set_header(b"Connection", b"upgrade");
        } else if !client_keep && !tunnel {
            let _ = self.resp.set_header(b"Connection", b"close");
        } else if client_keep && version == Version::Http10 {
            let _ = self.resp.set_header(b"Connection", b"keep-alive");
        }
        if resp_body == Body::Chunked {
            let _ = self.resp.set_header(b"Transfer-Encoding", b"chunked");
        }
        self.after_response(Some(&be), Some(server_name));
        self.out.clear();
        self.resp.write_to(&mut self.out);
        if self.out.len() > self.http.bufsize && !self.vars.strict_off {
            // Rewrites made the head larger than a buffer: HAProxy fails the transaction.
            drop(slot);
            drop(sc);
            let mut i = info;
            i.conn_close = true;
            return self.answer(500, &i, Some(&be)).await;
        }
        // When body bytes came with the head, both leave in one `sendmsg` (see `pump`).
        let head_with_body =
            !tunnel && !sc.buf.is_empty() && !matches!(resp_body, Body::None | Body::Length(0));
        if !head_with_body {
            if let Err(e) = self.write_client_head().await {
                self.note(format_args!("client write failed: {e}"));
                return Next::Close;
            }
        }
        Counters::add(&be.counters.bytes_out, self.out.len() as u64);
        if self.logs {
            self.log.status = self.resp.status();
            self.log.bytes = self.out.len() as u64;
            self.log.backend = Some(Arc::clone(&be));
            self.log.server = Some(slot.index());
        }
        if tunnel {
            self.tunnel(sc, &be).await;
            return Next::Close;
        }
        let st = be.timeouts.server;
        let ct = self.fe.timeouts.client;
        self.scanner.reset();
        let head: &[u8] = if head_with_body { &self.out } else { &[] };
        let xfer = pump(
            &sc.stream,
            &mut sc.buf,
            &self.client,
            head,
            resp_body,
            &mut self.scanner,
            (self.stimer.as_mut(), st),
            ct,
            None,
        )
        .await;
        drop(slot);
        if xfer != Xfer::Done {
            self.note(format_args!("response body: {xfer:?}"));
            return Next::Close;
        }
        if server_keep && sc.buf.is_empty() {
            sc.requests += 1;
            self.keep_server_conn(sc);
        }
        if client_keep {
            Next::KeepAlive
        } else {
            Next::Close
        }
    }

    /// Going idle between requests: the heads and the output buffer (warm, with their capacity)
    /// go to the worker's spares, so an idle connection keeps no per-request memory.
    fn park(&mut self) {
        if self.parked || !self.cbuf.is_empty() {
            return;
        }
        let spare = Spare {
            req: std::mem::take(&mut self.req),
            resp: std::mem::take(&mut self.resp),
            out: std::mem::take(&mut self.out),
        };
        SPARES.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARES_MAX {
                s.push(spare);
            }
        });
        self.parked = true;
    }

    /// A request is arriving: take warm heads back from the worker's spares.
    fn unpark(&mut self) {
        if !self.parked {
            return;
        }
        self.parked = false;
        if let Some(spare) = SPARES.with(|s| s.borrow_mut().pop()) {
            self.req = spare.req;
            self.resp = spare.resp;
            self.out = spare.out;
        }
    }

    /// Prints the transaction's `httplog` line (under `-d`) and resets it.
    fn print_log(&mut self, started: Instant) {
        let l = std::mem::take(&mut self.log);
        let be = l.backend.as_deref();
        let line = crate::log::http_line(&crate::log::HttpLog {
            client: self.peer,
            frontend: &self.fe.name,
            backend: be.map_or(self.fe.name.as_str(), |b| b.name.as_str()),
            server: match (be, l.server) {
                (Some(b), Some(i)) => b.servers[i].name.as_str(),
                _ => "<NOSRV>",
            },
            tr: l.tr,
            tw: None,
            tc: l.tc,
            trsp: l.trsp,
            ta: started.elapsed(),
            status: l.status,
            bytes: l.bytes,
            state: if l.state.is_empty() { "--" } else { l.state },
            request_line: &l.request_line,
        });
        if self.shared.debug {
            eprintln!("{line}");
        }
        if self.fe.log_format == LogFormat::Http {
            if let Some(logger) = &self.fe.logger {
                logger.send(crate::log::syslog::INFO, &line);
            }
        }
        self.log.request_line = l.request_line;
    }

    /// Whether `be` is the frontend itself (a `listen` section), whose rules already ran.
    fn is_own_backend(&self, be: &Arc<Backend>) -> bool {
        be.name == self.fe.name && self.fe.backend.as_ref().is_some_and(|b| Arc::ptr_eq(b, be))
    }

    /// The fixed parts of a fetch context.
    fn base<'b>(&'b self, be: Option<&'b Backend>) -> Base<'b> {
        rules_base(
            self.fe,
            self.http,
            self.peer,
            self.local,
            be,
            None,
            body_view(&self.cbuf, self.req.info().body),
        )
    }

    fn tcp_content_accepts(&self) -> bool {
        let base = self.base(None);
        let ctx = base.ctx(&self.req, None, &self.vars);
        for (accept, cond) in &self.fe.rules.tcp_content {
            if rules::holds(cond, &self.fe.rules.acls, &ctx) {
                return *accept;
            }
        }
        true
    }

    /// Runs a proxy's `http-request` rules then its legacy `redirect` rules. `Some(next)`
    /// when they answered the client themselves.
    async fn request_rules(
        &mut self,
        r: &ProxyRules,
        be: Option<&Arc<Backend>>,
        info: &fulcrum_http::Info,
    ) -> Option<Next> {
        let mut start = 0;
        loop {
            let verdict = {
                let body = body_view(&self.cbuf, self.req.info().body);
                let base = rules_base(
                    self.fe,
                    self.http,
                    self.peer,
                    self.local,
                    be.map(|b| &**b),
                    None,
                    body,
                );
                let v = rules::run(
                    &r.http_request,
                    start,
                    &r.acls,
                    &base,
                    &mut self.req,
                    None,
                    &mut self.vars,
                    &mut self.scratch,
                );
                match v {
                    Verdict::Continue => {
                        // Legacy redirect rules come after http-request rules.
                        let redirect = r.redirects.iter().find(|rule| {
                            rules::holds(
                                &rule.cond,
                                &r.acls,
                                &base.ctx(&self.req, None, &self.vars),
                            )
                        });
                        match redirect.map(|rule| &rule.action) {
                            Some(rules::Action::Redirect(rd)) => Verdict::Redirect(rd),
                            _ => Verdict::Continue,
                        }
                    }
                    v => v,
                }
            };
            let built = match verdict {
                Verdict::Continue => return None,
                Verdict::WaitForBody { time, at_least, resume } => {
                    self.wait_for_body(info, time, at_least).await;
                    start = resume;
                    continue;
                }
                Verdict::Deny(status, reply) => match reply {
                    Some(rp) => Built::Bytes(self.build_reply(rp, be)),
                    None => Built::Status(status),
                },
                Verdict::Return(rp) => Built::Bytes(self.build_reply(rp, be)),
                Verdict::Redirect(rd) => Built::Bytes(self.build_redirect(rd, be)),
                Verdict::RewriteFailed => Built::Status(500),
                Verdict::Drop => return Some(Next::Close),
                Verdict::Tarpit(status) => {
                    // Hold the client for `timeout tarpit` (default: `timeout connect`).
                    let http = be.and_then(|b| b.http.as_deref()).unwrap_or(self.http);
                    if let Some(t) = http.tarpit {
                        tokio::time::sleep(t).await;
                    }
                    Built::Status(status)
                }
            };
            let next = match built {
                Built::Status(status) => self.answer(status, info, be).await,
                Built::Bytes(bytes) => self.answer_bytes(bytes, info, be).await,
                Built::Drop => Next::Close,
            };
            return Some(next);
        }
    }

    /// `wait-for-body` / `option http-buffer-request`: reads the request body into the client
    /// buffer until it is complete, `at_least` bytes are there, the buffer is full, or `time`.
    async fn wait_for_body(
        &mut self,
        info: &fulcrum_http::Info,
        time: Duration,
        at_least: Option<u64>,
    ) {
        let want = match info.body {
            Body::Length(n) => n,
            Body::Chunked => u64::MAX,
            _ => return,
        };
        let want = at_least.map_or(want, |a| a.min(want));
        let deadline = Instant::now() + time;
        // The client waits for leave to send its body: the proxy gives it, and the server will
        // not see the expectation any more.
        if info.expect_continue && self.req.header(b"expect").is_some() {
            self.req.remove_header(b"expect");
            let go = write_all(&self.client, b"HTTP/1.1 100 Continue\r\n\r\n");
            if timer::within_io(self.ctimer.as_mut(), self.fe.timeouts.client, go).await.is_err() {
                return;
            }
        }
        while (self.cbuf.len() as u64) < want && !self.cbuf.is_full() {
            if info.body == Body::Chunked {
                let mut sc = ChunkedScanner::new();
                if sc.scan(self.cbuf.data()).map(|s| s.done).unwrap_or(true) {
                    return;
                }
            }
            match timer::until(self.ctimer.as_mut(), deadline, self.cbuf.fill(&self.client)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
        }
    }

    /// Picks the backend: the first `use_backend` whose condition holds, else the default.
    fn choose_backend(&mut self) -> Option<Arc<Backend>> {
        if self.fe.rules.use_backends.is_empty() {
            return self.fe.backend.clone();
        }
        let base = self.base(None);
        let ctx = base.ctx(&self.req, None, &self.vars);
        rules::switching::choose(self.fe, &ctx)
    }

    /// Runs the backend's then the frontend's `http-response` rules on `self.resp`.
    /// Returns a status to answer instead when a rule denies the response.
    fn response_rules(&mut self, be: &Arc<Backend>, server: Option<&str>) -> Option<Built> {
        let own = self.is_own_backend(be);
        let fe = self.fe;
        let lists: [(&ProxyRules, bool); 2] = [(&be.rules, !own), (&fe.rules, true)];
        for (r, run) in lists {
            if !run || r.http_response.is_empty() {
                continue;
            }
            let v = self.run_on_response(&r.http_response, &r.acls, Some(be), server);
            let built = match v {
                Verdict::Continue | Verdict::WaitForBody { .. } | Verdict::Tarpit(_) => continue,
                Verdict::Drop => Built::Drop,
                Verdict::Deny(status, None) => {
                    Built::Status(if status == 403 { 502 } else { status })
                }
                Verdict::Deny(_, Some(rp)) | Verdict::Return(rp) => {
                    Built::Bytes(self.build_reply(rp, Some(be)))
                }
                Verdict::Redirect(rd) => {
                    // HAProxy marks redirects made from a response uncacheable.
                    let raw = self.build_redirect(rd, Some(be));
                    Built::Bytes(with_header_after_status(&raw, b"Cache-Control: no-cache\r\n"))
                }
                Verdict::RewriteFailed => Built::Status(500),
            };
            return Some(built);
        }
        None
    }

    /// Runs one list of response rules on `self.resp` (the request for context).
    fn run_on_response<'r>(
        &mut self,
        list: &'r [rules::Rule],
        acls: &rules::Acls,
        be: Option<&Backend>,
        server: Option<&str>,
    ) -> Verdict<'r> {
        let base = rules_base(self.fe, self.http, self.peer, self.local, be, server, &[]);
        let (resp, req) = (&mut self.resp, &self.req);
        rules::run(list, 0, acls, &base, resp, Some(req), &mut self.vars, &mut self.scratch)
    }

    /// Runs `http-after-response` rules (backend's, then frontend's) on `self.resp`.
    fn after_response(&mut self, be: Option<&Arc<Backend>>, server: Option<&str>) {
        let own = be.is_some_and(|b| self.is_own_backend(b));
        let be_rules = be.filter(|_| !own).map(|b| &b.rules);
        let fe = self.fe;
        for r in be_rules.into_iter().chain(std::iter::once(&fe.rules)) {
            if r.http_after_response.is_empty() {
                continue;
            }
            let _ = self.run_on_response(&r.http_after_response, &r.acls, be.map(|b| &**b), server);
        }
    }

    fn has_after_response(&self, be: Option<&Arc<Backend>>) -> bool {
        !self.fe.rules.http_after_response.is_empty()
            || be.is_some_and(|b| !b.rules.http_after_response.is_empty())
    }

    /// A `return` / `deny` reply, rendered.
    fn build_reply(&mut self, rp: &rules::ReplySpec, be: Option<&Arc<Backend>>) -> Vec<u8> {
        let base = self.base(be.map(|b| &**b));
        let ctx = base.ctx(&self.req, None, &self.vars);
        let body: std::borrow::Cow<'_, [u8]> = match &rp.body {
            rules::ReplyBody::None => (&b""[..]).into(),
            rules::ReplyBody::Bytes(b) => (&b[..]).into(),
            rules::ReplyBody::Format(f) => f.render_vec(&ctx).into(),
            rules::ReplyBody::ErrorMessage => return self.messages(be).get(rp.status).to_vec(),
        };
        let hdrs: Vec<(Vec<u8>, Vec<u8>)> =
            rp.headers.iter().map(|(n, f)| (n.as_bytes().to_vec(), f.render_vec(&ctx))).collect();
        let refs: Vec<(&[u8], &[u8])> = hdrs.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        super::reply::raw(rp.status, rp.content_type.as_deref(), &refs, &body)
    }

    /// A redirect response.
    fn build_redirect(&mut self, rd: &rules::RedirectSpec, be: Option<&Arc<Backend>>) -> Vec<u8> {
        let base = self.base(be.map(|b| &**b));
        let ctx = base.ctx(&self.req, None, &self.vars);
        let value = rd.value.render_vec(&ctx);
        let mut loc = Vec::with_capacity(value.len() + self.req.target().len() + 16);
        match rd.kind {
            cfg::RedirectKind::Location => loc.extend_from_slice(&value),
            cfg::RedirectKind::Prefix | cfg::RedirectKind::Scheme => {
                if rd.kind == cfg::RedirectKind::Scheme {
                    loc.extend_from_slice(&value);
                    loc.extend_from_slice(b"://");
                    loc.extend_from_slice(self.req.header(b"host").unwrap_or(b""));
                } else if value != b"/" {
                    loc.extend_from_slice(&value);
                }
                let path = self.req.path();
                loc.extend_from_slice(if path.is_empty() { b"/" } else { path });
                if rd.append_slash && !loc.ends_with(b"/") {
                    loc.push(b'/');
                }
                if !rd.drop_query {
                    if let Some(q) = self.req.query() {
                        loc.push(b'?');
                        loc.extend_from_slice(q);
                    }
                }
            }
        }
        if rd.kind == cfg::RedirectKind::Location && rd.append_slash && !loc.ends_with(b"/") {
            loc.push(b'/');
        }
        super::reply::raw(rd.code, None, &[(b"location", &loc)], b"")
    }

    fn messages<'m>(&'m self, be: Option<&'m Arc<Backend>>) -> &'m super::messages::Messages {
        match be.and_then(|b| b.http.as_deref()) {
            Some(h) if !h.messages.is_empty() => &h.messages,
            _ => &self.http.messages,
        }
    }

    /// Persistence cookie: the server the request's cookie names, if the backend uses cookies.
    /// With `indirect` (or `prefix`), the cookie is taken out of the request sent on.
    fn persistence(&mut self, be: &Arc<Backend>, be_http: &HttpProxy) -> Option<usize> {
        let ck = be_http.cookie.as_ref()?;
        let mut found: Option<(usize, Vec<u8>)> = None;
        for (n, v) in self.req.headers() {
            if !n.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            if let Some(val) = fulcrum_http::cookie_value(v, ck.name.as_bytes()) {
                let (id, rest) = match ck.mode {
                    cfg::CookieMode::Prefix => match val.iter().position(|&c| c == b'~') {
                        Some(i) => (&val[..i], val[i + 1..].to_vec()),
                        None => (val, Vec::new()),
                    },
                    _ => (val, Vec::new()),
                };
                if let Some(idx) = be
                    .servers
                    .iter()
                    .position(|s| s.cookie.as_deref().map(str::as_bytes) == Some(id))
                {
                    found = Some((idx, rest));
                }
                break;
            }
        }
        let (idx, rest) = found?;
        if ck.mode == cfg::CookieMode::Prefix {
            self.rewrite_request_cookie(&ck.name, Some(&rest));
        } else if ck.indirect && ck.mode == cfg::CookieMode::Insert {
            self.rewrite_request_cookie(&ck.name, None);
        }
        let srv = &be.servers[idx];
        srv.is_up().then_some(idx)
    }

    /// Replaces (or removes, with `None`) cookie `name` in the request's Cookie headers.
    fn rewrite_request_cookie(&mut self, name: &str, value: Option<&[u8]>) {
        let mut edits = Vec::new();
        for (i, (n, v)) in self.req.headers().enumerate() {
            if !n.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            let mut out: Vec<u8> = Vec::new();
            let mut changed = false;
            for part in v.split(|&c| c == b';') {
                let t = part.trim_ascii();
                if t.is_empty() {
                    continue;
                }
                let is_ours = t.len() > name.len()
                    && t[..name.len()] == *name.as_bytes()
                    && t[name.len()] == b'=';
                let piece: Vec<u8> = if is_ours {
                    changed = true;
                    match value {
                        Some(v) => [name.as_bytes(), b"=", v].concat(),
                        None => continue,
                    }
                } else {
                    t.to_vec()
                };
                if !out.is_empty() {
                    out.extend_from_slice(b"; ");
                }
                out.extend_from_slice(&piece);
            }
            if changed {
                edits.push((i, out));
            }
        }
        for (i, v) in edits.into_iter().rev() {
            if v.is_empty() {
                let mut k = 0;
                self.req.retain_headers(|_, _| {
                    let keep = k != i;
                    k += 1;
                    keep
                });
            } else {
                let _ = self.req.set_header_value_at(i, &v);
            }
        }
    }

    /// Cookie persistence on the response: insert, rewrite or prefix the server's cookie.
    fn cookie_response(
        &mut self,
        be_http: &HttpProxy,
        slot: &ServerSlot,
        persisted: Option<usize>,
    ) {
        let Some(ck) = be_http.cookie.as_ref() else { return };
        let Some(value) = slot.server().cookie.as_deref() else { return };
        match ck.mode {
            cfg::CookieMode::Insert => {
                if ck.indirect && persisted == Some(slot.index()) {
                    return;
                }
                let mut c = format!("{}={value}; path=/", ck.name);
                for d in &ck.domain {
                    c.push_str("; domain=");
                    c.push_str(d);
                }
                if ck.httponly {
                    c.push_str("; HttpOnly");
                }
                if ck.secure {
                    c.push_str("; Secure");
                }
                let _ = self.resp.add_header(b"Set-Cookie", c.as_bytes());
                if ck.nocache && cacheable(&self.resp) {
                    let _ = self.resp.add_header(b"Cache-control", b"private");
                }
            }
            cfg::CookieMode::Rewrite | cfg::CookieMode::Prefix => {
                let prefix = ck.mode == cfg::CookieMode::Prefix;
                let mut edits = Vec::new();
                for (i, (n, v)) in self.resp.headers().enumerate() {
                    if !n.eq_ignore_ascii_case(b"set-cookie") {
                        continue;
                    }
                    let name = ck.name.as_bytes();
                    if v.len() > name.len() && v.starts_with(name) && v[name.len()] == b'=' {
                        let rest = &v[name.len() + 1..];
                        let (old, attrs) = match rest.iter().position(|&c| c == b';') {
                            Some(p) => (&rest[..p], &rest[p..]),
                            None => (rest, &b""[..]),
                        };
                        let mut nv = name.to_vec();
                        nv.push(b'=');
                        nv.extend_from_slice(value.as_bytes());
                        if prefix {
                            nv.push(b'~');
                            nv.extend_from_slice(old);
                        }
                        nv.extend_from_slice(attrs);
                        edits.push((i, nv));
                    }
                }
                for (i, v) in edits {
                    let _ = self.resp.set_header_value_at(i, &v);
                }
            }
            cfg::CookieMode::Passive => {}
        }
    }

    /// The key a hash-based `balance` hashes, stored in `self.key`; `None` without one (then
    /// the client address is used for `source`, round robin otherwise).
    fn pick_key(&self, k: &HashKey, key: &mut Vec<u8>) -> KeyKind {
        let req = &self.req;
        match k {
            HashKey::Source => return self.peer.map_or(KeyKind::None, |p| KeyKind::Ip(p.ip())),
            HashKey::Uri { depth, len, whole, path_only } => {
                let t = if *path_only { req.path() } else { req.target() };
                let mut t = if *whole { t } else { t.split(|&c| c == b'?').next().unwrap_or(t) };
                if let Some(d) = depth {
                    let mut slashes = 0;
                    if let Some(end) = t.iter().position(|&c| {
                        if c == b'/' {
                            slashes += 1;
                        }
                        slashes > *d
                    }) {
                        t = &t[..end];
                    }
                }
                if let Some(l) = len {
                    t = &t[..t.len().min(*l as usize)];
                }
                key.extend_from_slice(t);
            }
            HashKey::UrlParam(name) => {
                let v = req.query().and_then(|q| fulcrum_http::url_param(q, name.as_bytes()));
                let Some(v) = v else { return KeyKind::None };
                key.extend_from_slice(v);
            }
            HashKey::Hdr { name, domain_only } => {
                let v = req.header(name.as_bytes());
                let Some(v) = v.and_then(|v| super::hdr_hash_key(v, *domain_only)) else {
                    return KeyKind::None;
                };
                key.extend_from_slice(v);
            }
        }
        KeyKind::Bytes
    }
    /// Sends the request (head, then body) and reads the final response head into `self.resp`,
    /// forwarding interim (1xx) responses. Returns whether the request body was fully sent.
    async fn exchange(
        &mut self,
        mut sc: ServerConn,
        info: &fulcrum_http::Info,
        be: &Backend,
    ) -> Exchange {
        let st = be.timeouts.server;
        let ct = self.fe.timeouts.client;
        // `self.out` holds the request head, written by `transaction` before the first try.
        if let Err(_e) = write_all_within(&sc.stream, &self.out, st).await {
            return Exchange::RetryFresh;
        }
        let mut body_done = info.body == Body::None;
        self.scanner.reset();
        let mut got_any = false;
        loop {
            if !body_done {
                let x = pump(
                    &self.client,
                    &mut self.cbuf,
                    &sc.stream,
                    &[],
                    info.body,
                    &mut self.scanner,
                    (self.ctimer.as_mut(), ct),
                    st,
                    Some((&sc.stream, &mut sc.buf)),
                )
                .await;
                match x {
                    Xfer::Done => body_done = true,
                    Xfer::Interrupted => {}
                    Xfer::Invalid => return Exchange::BadRequest,
                    Xfer::ReadEof | Xfer::ReadError | Xfer::ReadTimeout => {
                        self.note(format_args!("request body: {x:?}"));
                        return Exchange::ClientGone;
                    }
                    Xfer::WriteError | Xfer::WriteTimeout => return Exchange::BadResponse,
                }
            }
            // Read until a response head is complete (or, during an upload, until the server
            // said something: then the upload resumes if it was only an interim answer).
            loop {
                if !sc.buf.is_empty() {
                    got_any = true;
                    match self.resp.parse_response(sc.buf.data(), &self.http.limits) {
                        Ok(Some(n)) => {
                            let status = self.resp.status();
                            if (100..200).contains(&status) && status != 101 {
                                // Interim: forward as is (100 Continue, 103 Early Hints).
                                let head = &sc.buf.data()[..n];
                                if write_all_within(&self.client, head, ct).await.is_err() {
                                    return Exchange::ClientGone;
                                }
                                sc.buf.consume(n);
                                if body_done {
                                    continue;
                                }
                                break;
                            }
                            sc.buf.consume(n);
                            return Exchange::Response(sc, body_done);
                        }
                        Ok(None) if sc.buf.is_full() => return Exchange::BadResponse,
                        Ok(None) => {}
                        Err(e) => {
                            self.note(format_args!("invalid response: {e}"));
                            return Exchange::BadResponse;
                        }
                    }
                }
                if !body_done && sc.buf.is_empty() {
                    break; // back to the upload
                }
                // `timeout server` bounds each wait for the server's bytes.
                let read = sc.buf.fill(&sc.stream);
                let n = match timer::within(self.stimer.as_mut(), st, read).await {
                    Ok(r) => r,
                    Err(_) => return Exchange::ServerTimeout,
                };
                match n {
                    Ok(0) | Err(_) if !got_any => return Exchange::RetryFresh,
                    Ok(0) | Err(_) => return Exchange::BadResponse,
                    Ok(_) => {}
                }
            }
        }
    }

    /// Gets a server slot and a connection for it: the session's own connection to that
    /// server, an idle one from the pool as `reuse` allows, or a new one.
    async fn server_conn(
        &mut self,
        be: &Arc<Backend>,
        key: Option<PickKey<'_>>,
        persist: Option<usize>,
        reuse: Reuse,
        fresh_only: bool,
        check: bool,
    ) -> Result<(ServerSlot, ServerConn), tcp::Ending> {
        let mut outcome = tcp::Outcome::empty();
        let first = self.requests == 0;
        let own = &mut self.own;
        let mut idle = |idx: usize| -> Option<(Stream, u32)> {
            if fresh_only {
                return None;
            }
            if let Some(sc) = own.take() {
                let clean = !check || super::io::idle_is_clean(&sc.stream);
                if Arc::ptr_eq(&sc.be, be) && sc.idx == idx && clean {
                    return Some((sc.stream, sc.requests));
                }
                *own = Some(sc);
            }
            let min_requests = match reuse {
                Reuse::Never => return None,
                Reuse::Safe if first => return None,
                Reuse::Aggressive if first => 1,
                _ => 0,
            };
            pool::take(be, idx, min_requests, check).map(|i| (i.stream, i.requests))
        };
        let (slot, stream, requests) =
            tcp::connect_server_reusing(be, key, persist, self.dst_port, &mut outcome, &mut idle)
                .await?;
        // A previous connection of ours to another server goes to the pool now.
        if let Some(old) = self.own.take() {
            self.release_server_conn(old);
        }
        let idx = slot.index();
        Ok((
            slot,
            ServerConn {
                stream,
                be: Arc::clone(be),
                idx,
                requests,
                buf: RecvBuf::default(),
                _in_use: pool::InUse::new(),
            },
        ))
    }

    /// Keeps a finished server connection for this session's next request.
    /// With `http-reuse never` it stays private to this session; otherwise it goes to the
    /// worker's idle pool (where this session's next request will usually find it again).
    fn keep_server_conn(&mut self, sc: ServerConn) {
        if sc.be.servers[sc.idx].pool_max_conn == 0 {
            return pool::discard(sc.stream); // no idle connections kept for this server
        }
        let reuse = sc.be.http.as_deref().map(|h| h.reuse).unwrap_or(self.http.reuse);
        if reuse != Reuse::Never {
            return self.release_server_conn(sc);
        }
        if let Some(old) = self.own.replace(sc) {
            self.release_server_conn(old);
        }
    }

    /// A connection this session no longer needs: to the worker's pool unless reuse is off.
    fn release_server_conn(&self, sc: ServerConn) {
        let reuse = sc.be.http.as_deref().map(|h| h.reuse).unwrap_or(self.http.reuse);
        if reuse != Reuse::Never && sc.buf.is_empty() && !crate::runtime::stopping() {
            pool::put(&sc.be, sc.idx, sc.stream, sc.requests);
        } else if sc.buf.is_empty() {
            pool::discard(sc.stream); // idle between requests: nothing is lost by a reset
        }
    }

    /// `option forwardfor` / `option originalto` (the backend's settings win).
    fn add_addr_headers(&mut self, be_http: &HttpProxy) {
        let Some(peer) = self.peer else { return };
        let ff = be_http.forwardfor.as_ref().or(self.http.forwardfor.as_ref());
        if let Some(ff) = ff {
            let present = self.req.header(ff.header.as_bytes()).is_some();
            if !(ff.excepted(peer.ip()) || (ff.if_none && present)) {
                let v = peer.ip().to_string();
                let _ = self.req.add_header(ff.header.as_bytes(), v.as_bytes());
            }
        }
        let ot = be_http.originalto.as_ref().or(self.http.originalto.as_ref());
        if let Some(ot) = ot {
            if let Ok(local) = socket2::SockRef::from(&self.client).local_addr() {
                if let Some(ip) = local.as_socket().map(|a| a.ip()) {
                    if !ot.excepted(ip) {
                        let v = ip.to_string();
                        let _ = self.req.add_header(ot.header.as_bytes(), v.as_bytes());
                    }
                }
            }
        }
    }

    /// Writes `self.out` (a response head) to the client.
    async fn write_client_head(&mut self) -> std::io::Result<()> {
        write_all_within(&self.client, &self.out, self.fe.timeouts.client).await
    }

    /// Answers with the proxy's message for `status` (a replacement or HAProxy's built-in).
    async fn answer(
        &mut self,
        status: u16,
        info: &fulcrum_http::Info,
        be: Option<&Arc<Backend>>,
    ) -> Next {
        let msg = self.messages(be).get(status).to_vec();
        self.answer_bytes(msg, info, be).await
    }

    /// Sends a response Fulcrum built (after `http-after-response` rules). The connection stays
    /// open only when the message allows it and the request was read completely.
    async fn answer_bytes(
        &mut self,
        mut msg: Vec<u8>,
        info: &fulcrum_http::Info,
        be: Option<&Arc<Backend>>,
    ) -> Next {
        if self.has_after_response(be) {
            let limits = fulcrum_http::Limits { max_head: msg.len().max(1024), max_headers: 1000 };
            if let Ok(Some(n)) = self.resp.parse_response(&msg, &limits) {
                self.after_response(be, None);
                let mut out = Vec::with_capacity(msg.len() + 64);
                self.resp.write_to(&mut out);
                out.extend_from_slice(&msg[n..]);
                msg = out;
            }
        }
        // HAProxy closes the client connection after the answers it makes up (deny, return,
        // redirect, 503...), saying so; after a 502 or 504 the connection stays usable.
        let mut closes = message_closes(&msg);
        let status = parse_status(&msg);
        if !closes && status != 502 && status != 504 {
            closes = true;
            msg = with_connection_close(&msg);
        }
        if self.logs {
            self.log.status = parse_status(&msg);
            self.log.bytes = msg.len() as u64;
            self.log.backend = be.cloned();
        }
        let _ = write_all_within(&self.client, &msg, self.fe.timeouts.client).await;
        if closes || info.body != Body::None || info.conn_close || crate::runtime::stopping() {
            Next::Close
        } else {
            Next::KeepAlive
        }
    }

    /// Answers a request that could not even be parsed (the connection then closes).
    /// HAProxy answers these with its built-in message even when `errorfile` replaced it.
    async fn answer_raw(&mut self, status: u16) {
        let msg = super::messages::builtin_or_generic(status);
        let _ = write_all_within(&self.client, msg, self.fe.timeouts.client).await;
    }

    /// Turns the connection into a tunnel (after 101 Switching Protocols or a CONNECT 2xx).
    async fn tunnel(&mut self, sc: ServerConn, be: &Backend) {
        let ok = write_all(&sc.stream, self.cbuf.data()).await.is_ok()
            && write_all(&self.client, sc.buf.data()).await.is_ok();
        self.cbuf.clear();
        if !ok {
            return;
        }
        let t = TunnelTimeouts {
            client: be.timeouts.tunnel.or(self.fe.timeouts.client),
            server: be.timeouts.tunnel.or(be.timeouts.server),
            client_fin: self.fe.timeouts.client_fin,
            server_fin: be.timeouts.server_fin,
        };
        let (_end, moved) = tunnel::run(&self.client, &sc.stream, t).await;
        Counters::add(&be.counters.bytes_in, moved.client_to_server);
        Counters::add(&be.counters.bytes_out, moved.server_to_client);
    }

    /// A debug note about this session (under `-d`).
    fn note(&self, what: std::fmt::Arguments<'_>) {
        if self.shared.debug {
            let who = self.peer.map(|p| p.to_string()).unwrap_or_else(|| "unix".into());
            eprintln!("{}: {who}: {what}", self.fe.name);
        }
    }
}

enum Exchange {
    /// The final response head is in `Session::resp`; `bool`: the request body was fully sent.
    Response(ServerConn, bool),
    /// The connection failed before any response byte (a reused one may be retried fresh).
    RetryFresh,
    BadResponse,
    ServerTimeout,
    ClientGone,
    /// The request body turned out invalid (bad chunk) after the head was sent.
    BadRequest,
}

/// `http://host:80/...` becomes `http://host/...` (and `https://host:443/...` likewise).
fn drop_default_port(req: &mut Head) {
    let t = req.target();
    let (scheme_len, port): (usize, &[u8]) =
        if t.len() > 7 && t[..7].eq_ignore_ascii_case(b"http://") {
            (7, b":80")
        } else if t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://") {
            (8, b":443")
        } else {
            return;
        };
    let rest = &t[scheme_len..];
    let auth_end = rest.iter().position(|&c| c == b'/' || c == b'?').unwrap_or(rest.len());
    let auth = &rest[..auth_end];
    if auth.len() > port.len() && auth.ends_with(port) {
        let cut = scheme_len + auth_end - port.len();
        let mut new = Vec::with_capacity(t.len());
        new.extend_from_slice(&t[..cut]);
        new.extend_from_slice(&t[scheme_len + auth_end..]);
        let _ = req.set_target(&new);
    }
}

/// The fixed parts of a fetch context for rules: where the connection comes from and goes to,
/// the proxies, and what of the request body has arrived.
fn rules_base<'b>(
    fe: &'b Frontend,
    http: &HttpProxy,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
    backend: Option<&'b Backend>,
    server: Option<&'b str>,
    body: &'b [u8],
) -> Base<'b> {
    Base {
        src: peer,
        dst: local,
        proc_vars: &fe.proc_vars,
        frontend: &fe.name,
        backend,
        server,
        backends: &fe.backends,
        body,
        max_head: http.bufsize,
    }
}

/// The part of the client buffer that is the current request's body (what `req.body` sees).
fn body_view(cbuf: &RecvBuf, body: Body) -> &[u8] {
    let data = cbuf.data();
    match body {
        Body::None => &[],
        Body::Length(n) => &data[..data.len().min(n as usize)],
        _ => data,
    }
}

/// The raw response with a `connection: close` header added after the status line.
fn with_connection_close(msg: &[u8]) -> Vec<u8> {
    with_header_after_status(msg, b"connection: close\r\n")
}

/// The raw response with `line` (a header line with its CRLF) inserted after the status line.
fn with_header_after_status(msg: &[u8], line: &[u8]) -> Vec<u8> {
    let line_end = msg.windows(2).position(|w| w == b"\r\n").map_or(msg.len(), |p| p + 2);
    let mut out = Vec::with_capacity(msg.len() + line.len());
    out.extend_from_slice(&msg[..line_end]);
    out.extend_from_slice(line);
    out.extend_from_slice(&msg[line_end..]);
    out
}

/// Whether a response carries freshness information a cache could use (`nocache` then marks
/// it `private`): `Expires`, or `Cache-Control` with `max-age`, `s-maxage` or `public`.
fn cacheable(resp: &Head) -> bool {
    resp.headers().any(|(n, v)| {
        n.eq_ignore_ascii_case(b"expires")
            || (n.eq_ignore_ascii_case(b"cache-control")
                && fulcrum_http::comma_values(v).any(|d| {
                    let d = d.split(|&c| c == b'=').next().unwrap_or(d);
                    d.eq_ignore_ascii_case(b"max-age")
                        || d.eq_ignore_ascii_case(b"s-maxage")
                        || d.eq_ignore_ascii_case(b"public")
                }))
    })
}

/// The status code of a raw response (0 if unreadable).
fn parse_status(msg: &[u8]) -> u16 {
    msg.get(9..12)
        .and_then(|d| std::str::from_utf8(d).ok())
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// Whether a raw message says `Connection: close`.
fn message_closes(msg: &[u8]) -> bool {
    let head_end = msg.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(msg.len());
    msg[..head_end].split(|&b| b == b'\n').any(|l| {
        l.len() > 11 && l[..11].eq_ignore_ascii_case(b"connection:") && {
            let v = &l[11..];
            v.windows(5).any(|w| w.eq_ignore_ascii_case(b"close"))
        }
    })
}

/// The stricter of the frontend's and backend's connection modes.
fn merge_mode(fe: ConnMode, be: ConnMode) -> ConnMode {
    use ConnMode::*;
    match (fe, be) {
        (Close, _) | (_, Close) => Close,
        (ServerClose, _) | (_, ServerClose) => ServerClose,
        _ => KeepAlive,
    }
}

/// Moves one message body from `from` (its bytes already buffered in `fbuf` first) to `to`.
/// A non-empty `head` (the message's head, when `fbuf` holds body bytes already) leaves with
/// the first body bytes in one `sendmsg`. `read_timeout` (on the session's timer for `from`)
/// and `write_timeout` are inactivity limits of each side. With `watch`, the transfer stops
/// with `Interrupted` as soon as the watched connection delivers bytes into it (the server
/// answering during an upload).
///
/// A write is flagged `MSG_MORE` when the body goes on and the read before it filled the
/// buffer (more is surely waiting): bulk bodies then reach the peer in large segments, while a
/// body that trickles is never held back.
#[allow(clippy::too_many_arguments)]
async fn pump(
    from: &Stream,
    fbuf: &mut RecvBuf,
    to: &Stream,
    mut head: &[u8],
    body: Body,
    scanner: &mut ChunkedScanner,
    (mut read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    mut watch: Option<(&Stream, &mut RecvBuf)>,
) -> Xfer {
    let mut remaining = match body {
        Body::None | Body::Length(0) => return Xfer::Done,
        Body::Length(n) => n,
        _ => u64::MAX,
    };
    loop {
        if !fbuf.is_empty() {
            let data = fbuf.data();
            let (n, done) = match body {
                Body::Length(_) => {
                    let n = (data.len() as u64).min(remaining) as usize;
                    remaining -= n as u64;
                    (n, remaining == 0)
                }
                Body::Chunked => match scanner.scan(data) {
                    Ok(s) => (s.accepted, s.done),
                    Err(_) => return Xfer::Invalid,
                },
                _ => (data.len(), false),
            };
            if n > 0 || !head.is_empty() {
                let more = !done && fbuf.is_full();
                match send_within(to, head, &data[..n], write_timeout, more).await {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        return Xfer::WriteTimeout
                    }
                    Err(_) => return Xfer::WriteError,
                }
                head = &[];
                fbuf.consume(n);
            }
            if done {
                return Xfer::Done;
            }
            if n == 0 && fbuf.is_full() {
                return Xfer::Invalid; // a chunk-size or trailer line longer than a buffer
            }
        }
        let r = match watch.as_mut() {
            None => {
                timer::within_io(read_timer.as_mut(), read_timeout, fbuf.fill_streaming(from)).await
            }
            Some((other, obuf)) => {
                let (mut watched, mut gone) = (false, false);
                let fill = fbuf.fill_streaming(from);
                tokio::pin!(fill);
                let r = timer::within_io(
                    read_timer.as_mut(),
                    read_timeout,
                    poll_fn(|cx| {
                        if let Poll::Ready(r) = fill.as_mut().poll(cx) {
                            return Poll::Ready(r);
                        }
                        // Readiness may be stale: confirm with a non-blocking read.
                        while other.poll_read_ready(cx).is_ready() {
                            match obuf.try_fill(other) {
                                Ok(None) => continue, // spurious; readiness now cleared
                                Ok(Some(0)) | Err(_) => {
                                    gone = true;
                                    return Poll::Ready(Ok(usize::MAX));
                                }
                                Ok(Some(_)) => {
                                    watched = true;
                                    return Poll::Ready(Ok(usize::MAX));
                                }
                            }
                        }
                        Poll::Pending
                    }),
                )
                .await;
                if watched {
                    return Xfer::Interrupted;
                }
                if gone {
                    return Xfer::WriteError;
                }
                r
            }
        };
        match r {
            Ok(0) if body == Body::UntilClose => return Xfer::Done,
            Ok(0) => return Xfer::ReadEof,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Xfer::ReadTimeout,
            Err(_) => return Xfer::ReadError,
        }
    }
}

/// `observe layer7`: a server's answer counts toward its health (nothing for servers that do
/// not observe their HTTP answers).
#[inline(never)]
fn observe_l7(be: &Backend, idx: usize, failed: bool, what: &'static str) {
    let srv = &be.servers[idx];
    if srv.policy.observe == Some(fulcrum_config::Observe::Layer7) && srv.observed(failed) {
        be.change_server(idx, crate::backend::status::Change::Observed { what });
    }
}
