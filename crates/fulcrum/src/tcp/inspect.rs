//! Content inspection of a `mode tcp` connection: `tcp-request content` rules (the
//! frontend's, then the backend's) run on the first bytes the client sent, peeked and never
//! consumed. Under `tcp-request inspect-delay` a rule that cannot be decided yet (`req.len`,
//! `req.payload` beyond the bytes there, `WAIT_END`: see `rules::Cond::eval3`) waits for more
//! bytes, the client's end of stream, a full buffer or the end of the delay, then the list
//! resumes at that rule, as HAProxy's inspection analyser does. Owns no state beyond one call;
//! must not read from the socket nor clear its readiness (the tunnel forwards every byte
//! afterwards).

use std::cell::Cell;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::spoe::SpoeEvent;

use tokio::time::Instant;

use crate::connection::{Stream, BUFSIZE};
use crate::rules::sample::{Ctx, Vars};
use crate::rules::spoe::Engine;
use crate::rules::stick::Level;
use crate::rules::{tcp_eval, Acls, TcpRule, TcpVerdict};

/// How often bytes already seen are peeked again while more are awaited. The socket's
/// readiness is never cleared here: with bytes still waiting, a cleared (edge-triggered)
/// readiness would stall the tunnel that reads them afterwards until the client sends more.
const RECHECK: Duration = Duration::from_millis(10);

/// Whether an SPOE engine of the frontend sends messages on `on-client-session`.
pub fn asks_client_session(fe: &crate::frontend::Frontend) -> bool {
    fe.rules.spoe.iter().any(|e| !e.on(SpoeEvent::ClientSession).is_empty())
}

/// The frontend's engines' `on-client-session`, as the stream starts: before its first bytes
/// are awaited (a protocol whose server speaks first sends none), as HAProxy asks it.
#[cold]
pub async fn client_session(
    fe: &crate::frontend::Frontend,
    conn: &mut super::Accepted,
    dst: Option<std::net::SocketAddr>,
) {
    let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
    let empty = Vars::default();
    let mut ctx = crate::frontend::Frontend::ctx(fe, conn.peer, dst, &empty);
    ctx.client = Some(&conn.client);
    ctx.bind_no = conn.bind_no;
    ctx.pp = conn.proxied.as_deref();
    for e in &fe.rules.spoe {
        crate::spoe::ask_with(e, e.on(SpoeEvent::ClientSession), &ctx, &mut vars).await;
    }
    if !vars.is_empty() {
        conn.vars = Some(Box::new(vars));
    }
}

/// Whether an SPOE engine of the stream (the frontend's, the backend's) sends messages on
/// `on-server-session` or `on-tcp-response`.
pub fn asks_when_connected(fe: &crate::frontend::Frontend, be: &crate::backend::Backend) -> bool {
    let evs = [SpoeEvent::ServerSession, SpoeEvent::TcpResponse];
    fe.rules.spoe.iter().chain(&be.rules.spoe).any(|e| evs.iter().any(|ev| !e.on(*ev).is_empty()))
}

/// Asks the engines about `on-server-session`, then `on-tcp-response`: the frontend's, then
/// the backend's (unless it is the frontend's own `listen`), as HAProxy's filters run.
pub async fn when_connected(
    fe: &crate::frontend::Frontend,
    be: &crate::backend::Backend,
    own: bool,
    ctx: &Ctx<'_>,
    vars: &mut Vars,
) {
    let engines = fe.rules.spoe.iter().chain(be.rules.spoe.iter().filter(|_| !own));
    let engines: Vec<&Arc<Engine>> = engines.collect();
    for ev in [SpoeEvent::ServerSession, SpoeEvent::TcpResponse] {
        for e in &engines {
            crate::spoe::ask_with(e, e.on(ev), ctx, vars).await;
        }
    }
}

/// `tcp-response content` rules in mode tcp, once the server is connected. Rules that read
/// the response's bytes are refused at start-up, so these decide at once.
pub(super) async fn response_rules_accept(
    fe: &crate::frontend::Frontend,
    be: &crate::backend::Backend,
    conn: &mut super::Accepted,
    srv: &crate::server::Server,
) -> bool {
    let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
    let empty = crate::rules::sample::Vars::default();
    let mut ctx = crate::frontend::Frontend::ctx(fe, conn.peer, conn.local(), &empty);
    ctx.backend = Some(be);
    ctx.server = Some(&srv.name);
    ctx.client = Some(&conn.client);
    ctx.bind_no = conn.bind_no;
    ctx.pp = conn.proxied.as_deref();
    let r = &be.rules;
    let level = Level::Stream;
    // (Rules on the response's bytes are not waited for: they see none.)
    let mut from = 0;
    let ok = loop {
        match tcp_eval(&r.tcp_response, from, &r.acls, &ctx, &mut vars, level) {
            // `send-spoe-group`: the backend's engine is asked, then the list goes on; without
            // `tcp-response inspect-delay` it does nothing, as in HAProxy 2.6 (measured).
            TcpVerdict::Spoe { engine, group, resume } => {
                let engine = r.spoe.get(engine).filter(|_| be.response_inspect_delay.is_some());
                if let Some(e) = engine {
                    Box::pin(crate::spoe::ask_with(e, e.group(group), &ctx, &mut vars)).await;
                }
                from = resume;
            }
            v => break v != TcpVerdict::Reject,
        }
    };
    if !vars.is_empty() {
        conn.vars = Some(Box::new(vars));
    }
    ok
}

/// The bytes waiting at the start of a connection, as the rules see them.
pub struct Inspected {
    pub payload: Vec<u8>,
    /// The client shut its side: no more bytes will come.
    pub shut: bool,
}

/// Waits for the first bytes: until a TLS record is complete, the bytes are not TLS, the
/// buffer is full, the client shuts or `delay` ends (routing by `req.ssl_sni` needs no rule
/// that waits).
pub async fn first_bytes(client: &Stream, delay: Option<Duration>) -> Inspected {
    let mut buf = vec![0u8; BUFSIZE];
    let mut shut = false;
    let wait = async {
        let mut seen = 0;
        loop {
            if std::future::poll_fn(|cx| client.poll_read_ready(cx)).await.is_err() {
                return true;
            }
            match client.try_peek(&mut buf) {
                Ok(0) => return true,
                Ok(n) => {
                    let h = crate::tls::hello::parse(&buf[..n]);
                    if h.settled || n == buf.len() {
                        return false;
                    }
                    if n == seen && peer_shut(client) {
                        return true;
                    }
                    if n == seen {
                        tokio::time::sleep(RECHECK).await;
                    }
                    seen = n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return true,
            }
        }
    };
    if let Ok(s) = tokio::time::timeout(delay.unwrap_or(Duration::ZERO), wait).await {
        shut = s;
    }
    // What is there now, whatever the wait ended on.
    let n = client.try_peek(&mut buf).unwrap_or(0);
    buf.truncate(n);
    Inspected { payload: buf, shut }
}

fn peer_shut(client: &Stream) -> bool {
    use std::os::fd::{AsFd, AsRawFd};
    crate::sys::peer_shut_write(client.as_fd().as_raw_fd())
}

/// Waits until more than `got.payload.len()` bytes wait, the client shuts or `deadline`.
async fn more_bytes(client: &Stream, got: &mut Inspected, deadline: Instant) {
    let mut buf = vec![0u8; BUFSIZE];
    let seen = got.payload.len();
    let wait = async {
        loop {
            if std::future::poll_fn(|cx| client.poll_read_ready(cx)).await.is_err() {
                return (0, true);
            }
            match client.try_peek(&mut buf) {
                Ok(0) => return (0, true),
                Ok(n) if n > seen => return (n, false),
                Ok(_) if peer_shut(client) => return (0, true),
                Ok(_) => tokio::time::sleep(RECHECK).await,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return (0, true),
            }
        }
    };
    if let Ok((n, shut)) = tokio::time::timeout_at(deadline, wait).await {
        got.shut |= shut;
        if n > seen {
            buf.truncate(n);
            got.payload = buf;
        }
    }
}

/// The first bytes read as an HTTP/1 request head, for rules of a `mode tcp` proxy that read
/// the request (`req.proto_http` and the `HTTP` ACL, `hdr()`, `path`...), as HAProxy 2.6 parses
/// a raw stream's buffer for them: `Ok(head)` once a whole valid head is there, `Err(true)`
/// while the bytes may still become one, `Err(false)` when they cannot (not HTTP, or a head
/// larger than a buffer).
pub fn raw_http(payload: &[u8]) -> Result<Box<fulcrum_http::Head>, bool> {
    let mut head = Box::new(fulcrum_http::Head::new());
    match head.parse_request(payload, &fulcrum_http::Limits::default()) {
        Ok(Some(_)) => Ok(head),
        Ok(None) => Err(payload.len() < BUFSIZE),
        Err(_) => Err(false),
    }
}

/// Runs `list` on the inspected bytes, waiting as long as `delay` allows while a rule cannot
/// be decided; `Accept` or `Reject`. With `raw`, rules reading the request see the bytes as
/// an HTTP request once they are one ([`raw_http`]). First the SPOE engines that send messages on `ev` (the
/// list's `on-frontend-tcp-request` or `on-backend-tcp-request`) are asked, on the bytes there,
/// as HAProxy's SPOE filter asks before its inspection analyser; a `send-spoe-group` rule asks
/// its engine, then the list goes on.
#[allow(clippy::too_many_arguments)]
pub async fn content_rules(
    client: &Stream,
    got: &mut Inspected,
    delay: Option<Duration>,
    (list, spoe, ev, raw): (&[TcpRule], &[Arc<Engine>], SpoeEvent, bool),
    acls: &Acls,
    template: &Ctx<'_>,
    vars: &mut Vars,
) -> TcpVerdict {
    // (Boxed, as below: a session without SPOE keeps its task as small as it was.)
    for e in spoe {
        let ctx = Ctx { payload: &got.payload, more: None, ..*template };
        Box::pin(crate::spoe::ask_with(e, e.on(ev), &ctx, vars)).await;
    }
    let deadline = delay.map(|d| Instant::now() + d);
    let more = Cell::new(false);
    let mut from = 0;
    loop {
        let done = deadline.is_none_or(|d| Instant::now() >= d)
            || got.shut
            || got.payload.len() >= BUFSIZE;
        let parsed = if raw { raw_http(&got.payload) } else { Err(false) };
        let ctx = Ctx {
            payload: &got.payload,
            more: (!done).then_some(&more),
            req: parsed.as_deref().ok().or(template.req),
            raw_pending: parsed.as_ref().err() == Some(&true),
            ..*template
        };
        match tcp_eval(list, from, acls, &ctx, vars, Level::Stream) {
            TcpVerdict::Wait(i) => from = i,
            TcpVerdict::Spoe { engine, group, resume } => {
                if let Some(e) = spoe.get(engine) {
                    let ctx = Ctx { more: None, ..ctx };
                    Box::pin(crate::spoe::ask_with(e, e.group(group), &ctx, vars)).await;
                }
                from = resume;
                continue;
            }
            v => return v,
        }
        if let Some(d) = deadline {
            more_bytes(client, got, d).await;
        }
    }
}
