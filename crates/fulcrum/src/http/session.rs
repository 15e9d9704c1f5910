//! The HTTP session: the client connection's loop of transactions and the exchange with a
//! server for each. See the module doc of `http` for the sequence.

use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use fulcrum_http::{Body, ChunkedScanner, Head, Version};
use tokio::time::Instant;

use fulcrum_config as cfg;

use super::analyse::{
    self, Answered, Built, KeepFacts, Ruled, Stop, ToServer, Transaction, Tries, TryEnd, Txn,
};
use super::io::{send_within, write_all, write_all_within, RecvBuf};
use super::peer::Peer;
use super::pool;
use super::timer::{self, Timer};
use crate::backend::{Backend, PickKey, ServerSlot};
use crate::connection::{Pipe, Stream};
use crate::counters::Counters;
use crate::frontend::Frontend;
use crate::http_settings::{HttpProxy, Reuse};
use crate::outcome::{Cause, Outcome, Phase};
use crate::rules::Base;
use crate::shared::Shared;
use crate::tcp::tunnel;
use crate::tcp::{self, Accepted};

/// What fetches read of a session's client connection (`analyse::ConnFacts`), borrowing only
/// those fields (a macro: a method would borrow the whole session).
macro_rules! conn_facts {
    ($s:ident) => {
        (Some(conn_of($s.h2_conn, &$s.client)), $s.h2_conn.is_some(), $s.pp.as_deref(), $s.bind_no)
    };
}

mod answer;
mod bodies;
mod cached;
mod cookies;
mod exchange;
mod inspect;
mod lua;
mod pieces;
mod rest;
mod rules_run;
mod spare;
mod spoe;
mod stats;
mod to_fcgi;
mod txn;

use exchange::*;
pub use rest::Resting;
pub use spare::{give_spare, take_spare, Spare};
use txn::*;

/// A step's future run out of line: on the heap and polled through a pointer, so neither its
/// state nor its code sits in the caller's. For the steps a request rarely takes (error
/// answers, tunnels, rules most configurations lack): in a stream's transaction they made its
/// future larger and spread its code, which each stream runs cold from the instruction cache.
type Cold<'f, T> = Pin<Box<dyn Future<Output = T> + 'f>>;

fn cold<'f, T>(f: impl Future<Output = T> + 'f) -> Cold<'f, T> {
    Box::pin(f)
}

/// A connection to a server, attached to this session while it carries a request.
struct ServerConn {
    stream: Peer,
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

impl std::fmt::Display for Xfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Xfer::Done => "done",
            Xfer::ReadEof => "the sender closed before its end",
            Xfer::ReadError => "reading it failed",
            Xfer::ReadTimeout => "the sender was idle past its timeout",
            Xfer::WriteError => "writing it failed",
            Xfer::WriteTimeout => "the receiver was idle past its timeout",
            Xfer::Invalid => "invalid chunked framing",
            Xfer::Interrupted => "interrupted by the server's answer",
        })
    }
}

struct Session<'a> {
    fe: &'a Frontend,
    http: &'a HttpProxy,
    shared: &'a Shared,
    /// Each transaction's `httplog` line is wanted (`-d`, or `option httplog` with targets).
    logs: bool,
    /// Nothing of the request body was forwarded yet (an answer made here may drain it).
    body_unread: bool,
    /// The request body still to send once its upload was interrupted by the response (a
    /// sized body's remaining length; a chunked one's state is the scanner's).
    body_left: Body,
    client: Peer,
    peer: Option<SocketAddr>,
    dst_port: u16,
    /// The `bind` line that accepted the connection (`so_name`).
    bind_no: u16,
    cbuf: RecvBuf,
    /// The transaction in progress (its request and response, variables, outcome...).
    t: Transaction,
    out: Vec<u8>,
    scanner: ChunkedScanner,
    own: Option<ServerConn>,
    /// Transactions completed on this connection.
    requests: u32,
    /// The address the client connected to.
    local: Option<SocketAddr>,
    /// The PROXY protocol header the connection opened with, when it had one (`fc_pp_*`).
    pp: Option<Box<crate::connection::proxy::Header>>,
    /// What the current transaction's log line needs beyond `t.o` (only when `logs`).
    log: TxnLog,
    /// The per-request memory is with the worker's spares (idle between requests).
    parked: bool,
    /// The spare this session's heads came from, holding its empty ones, for `park`.
    emptied: Option<Box<Spare>>,
    /// The next answer made here skips `http-after-response` rules (an `http-response
    /// redirect`'s, as in HAProxy).
    skip_after: bool,
    /// The transaction's stick counters were counted and released already (an answer made
    /// here does it before its last write).
    sc_ended: bool,
    /// Bounds the waits for the client's bytes (see `timer`).
    ctimer: Pin<&'a mut Timer>,
    /// Bounds the waits for the server's bytes.
    stimer: Pin<&'a mut Timer>,
    /// The HTTP/2 connection this session is one stream of (`client` is then the stream's
    /// view): its socket and TLS facts answer the fetches; one request, then the session ends.
    h2_conn: Option<&'a Stream>,
}

/// What a transaction's log line needs beyond its outcome (kept only when lines are logged).
#[derive(Default)]
struct TxnLog {
    /// The request line as received (`%r`), before any rule rewrote it.
    request_line: Vec<u8>,
    /// No line for this transaction (a `monitor-uri` request).
    skip: bool,
    /// Its line went already (`option logasap`).
    sent: bool,
}

/// The client's connection (see `Session::conn`), from the session's fields (so that other
/// fields can be borrowed beside it).
fn conn_of<'s>(h2_conn: Option<&'s Stream>, client: &'s Peer) -> &'s Stream {
    match (h2_conn, client) {
        (Some(c), _) | (None, Peer::Bytes(c)) => c,
        (None, _) => unreachable!("an HTTP/2 stream's session has its connection"),
    }
}

/// How long a keep-alive connection waits for its next request inside its full session before
/// the session is dissolved into a small [`Resting`] state (an idle connection then costs a few
/// hundred bytes instead of a whole session).
const REST_AFTER: Duration = Duration::from_millis(20);

/// Where a session starts: a new connection (its client a `Stream`, or in the session a
/// `Peer`: an HTTP/2 stream's too), or one coming back from rest.
pub enum Start<C = Stream> {
    New(Accepted<C>),
    Resume(Resting),
}

/// How serving a connection ended.
pub enum Served {
    Closed,
    /// Idle long enough between requests to rest: the caller waits with [`Resting::wait`] and
    /// calls `serve` again.
    Rest(Resting),
    /// The client opened with HTTP/2's preface: the connection goes on as HTTP/2, with the
    /// bytes already read.
    H2(Accepted, Vec<u8>),
}

/// Serves one client connection in `mode http` until it closes, rests, or turns out to speak
/// HTTP/2.
pub async fn serve(fe: &Frontend, http: &HttpProxy, start: Start, shared: &Shared) -> Served {
    let (ctimer, stimer) = (std::pin::pin!(None), std::pin::pin!(None));
    let start = match start {
        Start::New(conn) => Start::New(conn.map_client(Peer::Bytes)),
        Start::Resume(r) => Start::Resume(r),
    };
    serve_with(fe, http, start, shared, None, ctimer, stimer).await
}

/// Serves one stream of an HTTP/2 connection (`conn`): its one request. The stream's task
/// gives the session's two timers (the client's, the server's; see `timer`) and keeps them
/// for its next stream: a timer filed in the worker's wheel is moved to the next stream's
/// deadline instead of taken out and filed again.
/// (A plain function returning `serve_with`'s future: no layer of its own.)
pub fn serve_stream<'a>(
    fe: &'a Frontend,
    http: &'a HttpProxy,
    stream: Accepted<Peer>,
    shared: &'a Shared,
    conn: &'a Stream,
    (ctimer, stimer): (Pin<&'a mut Timer>, Pin<&'a mut Timer>),
) -> impl Future<Output = Served> + 'a {
    serve_with(fe, http, Start::New(stream), shared, Some(conn), ctimer, stimer)
}

async fn serve_with<'a>(
    fe: &'a Frontend,
    http: &'a HttpProxy,
    start: Start<Peer>,
    shared: &'a Shared,
    h2_conn: Option<&'a Stream>,
    ctimer: Pin<&'a mut Timer>,
    stimer: Pin<&'a mut Timer>,
) -> Served {
    let (client, peer, dst_port, bind_no, requests, more, given) = match start {
        Start::New(conn) => {
            let local = conn.local();
            let given = (local, conn.proxied, conn.vars);
            (conn.client, conn.peer, conn.dst_port, conn.bind_no, 0, None, given)
        }
        Start::Resume(r) => {
            let client = Peer::Bytes(r.client);
            (client, r.peer, r.dst_port, r.bind_no, r.requests, r.more, (None, None, None))
        }
    };
    let (local, pp, vars, own, mut idle_since, mut resumed) = match more {
        Some(m) => (m.local, m.pp, m.vars, m.own, m.idle_since, m.pending),
        None => (given.0, given.1, given.2.map(|v| *v).unwrap_or_default(), None, None, None),
    };
    let mut s = Session {
        fe,
        http,
        shared,
        client,
        peer,
        dst_port,
        bind_no,
        cbuf: RecvBuf::default(),
        t: Transaction::with_vars(vars),
        out: Vec::new(),
        scanner: ChunkedScanner::new(),
        own,
        requests,
        local,
        pp,
        log: TxnLog::default(),
        logs: shared.debug || (fe.logger.is_some() && fe.log.line.is_some()),
        body_unread: false,
        body_left: Body::None,
        parked: true,
        emptied: None,
        skip_after: false,
        sc_ended: false,
        ctimer,
        stimer,
        h2_conn,
    };
    if h2_conn.is_some() {
        // As HAProxy marks every HTTP/2 stream: not a connection's first request
        // (`http_first_req` is 0, `http-reuse safe` may take an idle server connection).
        s.requests = 1;
    }
    if fe.needs_dst && s.local.is_none() {
        s.local = socket2::SockRef::from(s.conn()).local_addr().ok().and_then(|a| a.as_socket());
    }
    s.sync_addrs();
    if let Some(p) = &resumed {
        s.cbuf.put(&p.bytes);
    }

    loop {
        s.t.o = Outcome { want_server_addrs: s.logs && fe.log.server_addrs, ..Outcome::default() };
        s.t.stream_no = None;
        // Clock reads only when a log line will use them.
        if s.logs {
            s.t.o.marks.start = Some(idle_since.take().unwrap_or_else(crate::clock::now));
        }
        match s.read_request(resumed.take()).await {
            // Counted as it arrives (HAProxy's `cum_req`): the stats show the request in flight.
            Ok(Read::Request) => Counters::inc(&fe.counters.requests),
            // (Only an HTTP/1 connection's session rests or turns into HTTP/2: an HTTP/2
            // stream's serves one request.)
            Ok(Read::Rest(deadline)) if matches!(s.client, Peer::Bytes(_)) => {
                return s.rest(deadline)
            }
            Ok(Read::Closed) => break,
            Ok(Read::H2) if matches!(s.client, Peer::Bytes(_)) => return s.into_h2(),
            Ok(Read::Rest(_) | Read::H2) => break,
            Err(refused) => {
                // HAProxy counts a request it could not read too (even one that never came).
                Counters::inc(&fe.counters.requests);
                if let Some(sc) = &s.t.vars.sc {
                    sc.http_request();
                }
                if refused.answer {
                    s.answer_raw(refused.status).await;
                }
                s.t.o.status = Some(refused.status);
                s.t.o.end(refused.cause, Phase::Request);
                s.log.request_line.clear();
                s.print_log(Some(refused.null));
                break;
            }
        }
        if s.logs {
            s.log.request_line.clear();
            let r = &s.t.req;
            s.log.request_line.extend_from_slice(r.method_bytes());
            s.log.request_line.push(b' ');
            s.log.request_line.extend_from_slice(r.target());
            s.log.request_line.push(b' ');
            let version = if s.h2_conn.is_some() { b"HTTP/2.0" } else { r.version().as_bytes() };
            s.log.request_line.extend_from_slice(version);
            // As HAProxy: the line as far as `tune.http.logurilen` leaves room (1,023 bytes).
            s.log.request_line.truncate(s.http.log_uri_max);
        }
        // Not boxed: a connection idle for long leaves this future altogether (it rests), so
        // the transaction's state costs no allocation per request.
        if fe.log.line.is_none() {
            if let Some(logger) = &fe.logger {
                let local = s.local.or_else(|| {
                    socket2::SockRef::from(s.conn()).local_addr().ok().and_then(|a| a.as_socket())
                });
                let line = crate::log::connect_line(s.peer, local, &fe.name, true);
                logger.send(crate::log::syslog::INFO, &line);
            }
        }
        // HAProxy's `h1_open_streams`: an HTTP/1 transaction in progress.
        let h1 = matches!(s.client, Peer::Bytes(_))
            .then(|| crate::counters::Up::new(&fe.counters.h1_open_streams));
        let next = s.transaction().await;
        drop(h1);
        s.print_log(None);
        s.requests += 1;
        // (A retired frontend's connection closes after a response that said so: the client
        // was told, so its next request is not lost; soft stop closes at once.)
        if next == Next::Close || crate::lifecycle::stopping() || s.h2_conn.is_some() {
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
    Served::Closed
}

/// A request refused before it could be handled (HAProxy's `<BADREQ>` lines).
struct Refused {
    status: u16,
    cause: Cause,
    /// The status is sent (not to a client that left).
    answer: bool,
    /// The client sent nothing (`option dontlognull` then logs nothing).
    null: bool,
}

impl Refused {
    /// An invalid or oversized request head.
    fn invalid(status: u16) -> Refused {
        Refused { status, cause: Cause::Proxy, answer: true, null: false }
    }
}

/// What waiting for a request gave.
enum Read {
    /// A request head is in `Session::req`.
    Request,
    /// Nothing more: the client closed, or stayed idle past the keep-alive timeout.
    Closed,
    /// Idle for a while with time left: rest, the keep-alive timeout ending at the deadline.
    Rest(Option<Instant>),
    /// HTTP/2's preface opens the connection (prior knowledge): in `cbuf`.
    H2,
}

impl Session<'_> {
    /// Reads until a complete request head is parsed into `self.t.req`. `Ok(false)`: the client
    /// closed or stayed idle past the keep-alive timeout (nothing to answer). `Err(status)`: a
    /// bad or late request, to be answered with `status`.
    /// `resumed`: the request whose head had begun when the connection rested.
    async fn read_request(&mut self, resumed: Option<Box<rest::Pending>>) -> Result<Read, Refused> {
        let t = &self.fe.timeouts;
        let first = self.requests == 0;
        let request_timeout = t.http_request.or(t.client);
        // Waiting for the first byte of a later request: `timeout http-keep-alive`.
        let idle_timeout =
            if first { request_timeout } else { t.http_keep_alive.or(request_timeout) };
        let mut started = !self.cbuf.is_empty();
        self.t.data_htx = None;
        if self.t.held.is_some() {
            self.t.held = None;
        }
        if !self.parked {
            self.t.req.start_over();
        }
        // One clock read per request while it is waited for: the deadlines count from here.
        let now = self.t.o.marks.start.unwrap_or_else(Instant::now);
        if started && self.logs {
            self.t.o.marks.request_begin = Some(now);
        }
        let mut deadline = if started { request_timeout } else { idle_timeout }.map(|d| now + d);
        if let Some(p) = resumed {
            deadline = p.deadline;
            if self.logs {
                self.t.o.marks.request_begin = p.began.or(self.t.o.marks.request_begin);
            }
        }
        // Once a later request has begun, `timeout http-request` counts from its first bytes;
        // computed only if the head is not complete at once.
        let mut started_late = false;
        // An HTTP/2 stream's head comes built from its HEADERS frame (not written as text to
        // be parsed again), unless it is one a parse refuses: then as text, below.
        if matches!(self.client, Peer::H2(_)) && self.cbuf.is_empty() {
            self.unpark();
        }
        if let (Peer::H2(view), true) = (&self.client, self.cbuf.is_empty()) {
            if let Some(size) = view.take_request_head(&mut self.t.req, &self.http.limits) {
                self.t.o.bytes_in = size as u64;
                if self.logs {
                    self.t.o.marks.request_begin = Some(now);
                    self.t.o.marks.request = Some(crate::clock::now());
                    self.t.o.bytes_in = crate::outcome::head_size(&self.t.req);
                }
                return Ok(Read::Request);
            }
        }
        loop {
            if !self.cbuf.is_empty() {
                self.unpark();
                self.t.req.set_host_required(self.h2_conn.is_none());
                self.t.req.set_lenient(self.http.accept_invalid_req);
                self.t.req.set_any_method_payload(self.http.any_method_payload);
                match self.t.req.parse_request(self.cbuf.data(), &self.http.limits) {
                    Ok(Some(n)) => {
                        if let Some(e) = self.t.req.tolerated() {
                            // `accept-invalid-http-request` let it through: kept as HAProxy does.
                            self.capture_request(Some(e));
                        }
                        self.cbuf.consume(n);
                        // Rules see Connection as HAProxy's parser leaves it.
                        fulcrum_http::clean_connection(&mut self.t.req);
                        self.t.o.bytes_in = n as u64;
                        if self.logs {
                            self.t.o.marks.request = Some(crate::clock::now());
                            self.t.o.bytes_in = crate::outcome::head_size(&self.t.req);
                        }
                        return Ok(Read::Request);
                    }
                    Ok(None) if self.cbuf.is_full() => {
                        self.capture_request(None);
                        return Err(Refused::invalid(400));
                    }
                    Ok(None) => {}
                    Err(_)
                        if first
                            && self.h2_conn.is_none()
                            && self.cbuf.data().starts_with(super::h2::PREFACE_LINE)
                            && !self.h1_only()
                            && !self.http.disable_h2_upgrade =>
                    {
                        return Ok(Read::H2);
                    }
                    Err(e) => {
                        self.note(format_args!("invalid request: {e}"));
                        self.capture_request(Some(e));
                        return Err(Refused::invalid(e.request_status()));
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
            // Between requests, the full session waits only a little; then it rests. So does
            // an HTTP/1 request whose head stops coming half-way (a slow client).
            let rest_at = if !started && !first {
                Some(now + REST_AFTER)
            } else if started && matches!(self.client, Peer::Bytes(_)) {
                Some(Instant::now() + REST_AFTER)
            } else {
                None
            };
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
                            Err(Refused {
                                status: 408,
                                cause: Cause::ClientTimeout,
                                answer: true,
                                null: !started,
                            })
                        } else {
                            Ok(Read::Closed)
                        };
                    }
                },
                None => read.await,
            };
            match n {
                // A client that leaves before its request is complete: HAProxy logs a 400 it
                // could not send (a new connection closed at once, unless it is a probe to
                // ignore; a keep-alive connection closed between requests is normal).
                Ok(0) | Err(_) if started || (first && !self.http.ignore_probes) => {
                    return Err(Refused {
                        status: 400,
                        cause: Cause::ClientAbort,
                        answer: false,
                        null: !started,
                    });
                }
                Ok(0) | Err(_) => return Ok(Read::Closed),
                Ok(_) => {}
            }
            if !started {
                started = true;
                started_late = !first;
                if self.logs {
                    self.t.o.marks.request_begin = Some(crate::clock::now());
                }
            }
        }
    }

    /// Logs the transaction's line in the frontend's format (to its targets; on stderr under
    /// `-d`) and forgets what it needed. `refused`: the request was refused before it was
    /// complete (HAProxy's `<BADREQ>` lines, without request nor captures).
    fn print_log(&mut self, refused: Option<bool>) {
        self.t.trace = None; // (its end is traced as it goes)
                             // The stream's bandwidth limits end with it (a shared entry's users drop at once).
        self.t.vars.bwlim = None;
        let l = std::mem::take(&mut self.log);
        let backend = self.t.backend.take();
        let no = self.bind_no;
        crate::stats::account(self.fe, no, backend.as_deref(), &self.t.o, true, refused.is_some());
        if let (false, Some(sc)) =
            (std::mem::take(&mut self.sc_ended), self.t.vars.sc.as_deref_mut())
        {
            sc.end_http_stream(&self.t.o, refused.is_some());
        }
        if !self.logs || l.skip || l.sent {
            self.log.request_line = l.request_line;
            return;
        }
        self.render_log(refused, backend.as_deref(), &l);
        self.log.request_line = l.request_line;
    }

    /// `option logasap` (the caller checks it): the transaction's line once its response's
    /// head went through the response rules (HAProxy's end of `http_process_res_common()`),
    /// its `%B` the head's size; none at its end.
    pub(super) fn log_asap(&mut self, be: &Backend) {
        if !self.logs || self.log.skip {
            return;
        }
        let l = std::mem::take(&mut self.log);
        // (As HAProxy's: the head's size out, nothing counted in yet, the status known.)
        let o = &mut self.t.o;
        let out = std::mem::replace(&mut o.bytes_out, crate::outcome::head_size(&self.t.resp));
        let (bytes_in, status) = (std::mem::take(&mut o.bytes_in), o.status);
        o.status = Some(self.t.resp.status());
        self.render_log(None, Some(be), &l);
        let o = &mut self.t.o;
        (o.bytes_out, o.bytes_in, o.status) = (out, bytes_in, status);
        self.log = TxnLog { sent: true, ..l };
    }

    /// Renders and sends the transaction's line (see [`Self::print_log`]).
    fn render_log(&mut self, refused: Option<bool>, be: Option<&Backend>, l: &TxnLog) {
        let server = match (be, self.t.o.server) {
            (Some(b), Some(i)) => Some(b.servers[i].name.as_str()),
            _ => None,
        };
        let mut base = analyse::base(
            self.fe,
            self.http,
            (self.peer, self.local),
            (be, server),
            &[],
            conn_facts!(self),
        );
        base.comp = self.t.o.comp;
        base.server_stream = crate::tls::facts::ServerSide::logged(&self.t.o);
        let mut ctx = base.ctx(&self.t.req, None, &self.t.vars);
        let refused_at = refused;
        let refused = refused.is_some();
        if refused {
            ctx.req = None;
        }
        let mut stream = crate::rules::format::Stream {
            fe: self.fe,
            be: be.map(|b| b as _),
            outcome: &self.t.o,
            now: crate::clock::now(),
            wall: crate::clock::wall(),
            request_line: (!refused).then_some(&l.request_line[..]),
            captures: (!refused).then_some(&self.t.vars.caps),
            unique_id: None,
            actconn: self.shared.global_limit.current(),
            request_counter: self.t.stream_no.take().unwrap_or_else(crate::log::next_stream_number),
            log_count: self.fe.log.count.load(std::sync::atomic::Ordering::Relaxed),
            server_conn: self.t.o.server_conn,
            http: be.is_none_or(|b| b.http.is_some()),
            asap: self.fe.log.logasap,
        };
        let made;
        // A request refused before it was complete has no id (HAProxy logs it without a
        // stream).
        stream.unique_id = match &self.t.vars.unique_id {
            _ if refused => None,
            Some(u) => Some(&u[..]),
            None => {
                made = crate::frontend::log::unique_id(self.fe, &ctx, &stream);
                made.as_deref()
            }
        };
        crate::frontend::log::stream_line(self.fe, &ctx, &stream, refused_at, self.shared.debug);
        self.t.vars.unique_id = None;
    }

    /// `proto h1` on the bind: no switch to HTTP/2 on its preface.
    fn h1_only(&self) -> bool {
        let bind = self.fe.binds.get(usize::from(self.bind_no).wrapping_sub(1));
        bind.is_some_and(|b| b.proto == Some(fulcrum_config::MuxProto::H1))
    }

    /// The client's connection: its socket and TLS layer (an HTTP/2 stream's connection).
    fn conn(&self) -> &Stream {
        conn_of(self.h2_conn, &self.client)
    }

    /// The transaction as its analysers see it (`analyse`): the request, its variables and
    /// what is known of the connection.
    // Inlined: made in place in the caller's frame (a call cost more than the view).
    #[inline(always)]
    fn txn(&mut self) -> Txn<'_> {
        let body = body_view(&self.t.held, &self.cbuf, self.t.req.info().body);
        Txn {
            fe: self.fe,
            http: self.http,
            peer: self.peer,
            local: self.local,
            client: Some(conn_of(self.h2_conn, &self.client)),
            told_tls: None,
            h2: self.h2_conn.is_some(),
            pp: self.pp.as_deref(),
            bind_no: self.bind_no,
            // (Read only for a unique id: an atomic load per transaction otherwise.)
            actconn: match self.fe.log.unique_id {
                Some(_) => self.shared.global_limit.current(),
                None => 0,
            },
            body,
            decoded: self.t.held.as_ref().is_some_and(|h| h.req.is_some()),
            req: &mut self.t.req,
            resp: &mut self.t.resp,
            vars: &mut self.t.vars,
            scratch: &mut self.t.scratch,
            o: &mut self.t.o,
            data_htx: &mut self.t.data_htx,
            resp_data_htx: &mut self.t.resp_data_htx,
            stream_no: &mut self.t.stream_no,
            backend: &mut self.t.backend,
            key: &mut self.t.key,
            comp: self.t.comp,
        }
    }

    /// The fixed parts of a fetch context.
    fn base<'b>(&'b self, be: Option<&'b Backend>) -> Base<'b> {
        analyse::base(
            self.fe,
            self.http,
            (self.peer, self.local),
            (be, None),
            body_view(&self.t.held, &self.cbuf, self.t.req.info().body),
            conn_facts!(self),
        )
    }

    /// `set-src`/`set-dst` changed the session's addresses: everything from now on (log
    /// lines, forwarded headers, source hashing, PROXY headers) sees the new ones.
    fn sync_addrs(&mut self) {
        if let Some(a) = &self.t.vars.addrs {
            self.peer = a.src;
            self.local = a.dst;
        }
    }

    /// A debug note about this session (under `-d`).
    /// Keeps the refused request for `show errors`.
    fn capture_request(&self, err: Option<fulcrum_http::HeadError>) {
        let slot = &self.fe.invalid_req;
        let buf = self.cbuf.data();
        crate::counters::capture(slot, buf, self.shared.bufsize, err, self.peer, None, None);
    }

    /// Keeps the refused response for `show errors`.
    fn capture_response(&self, sc: &ServerConn, err: Option<fulcrum_http::HeadError>) {
        let srv = &sc.be.servers[sc.idx];
        crate::counters::capture(
            &sc.be.invalid_rep,
            sc.buf.data(),
            self.shared.bufsize,
            err,
            self.peer,
            Some((self.fe.name.clone(), self.fe.id)),
            Some((srv.name.clone(), srv.id)),
        );
    }

    fn note(&self, what: std::fmt::Arguments<'_>) {
        if self.shared.debug {
            let who = self.peer.map(|p| p.to_string()).unwrap_or_else(|| "unix".into());
            eprintln!("{}: {who}: {what}", self.fe.name);
        }
    }
}
