//! The accept loop of one listening socket in one worker, and the worker's live-session count.
//!
//! A slot is reserved on the bind, frontend and process `maxconn` before `accept` is called;
//! while any is full the loop waits and new connections stay in the kernel's backlog.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use std::os::fd::{AsRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

mod prelude;

use super::WorkerSocket;
use crate::connection::Stream;
use crate::counters::Counters;
use crate::frontend::{Bind, Frontend};
use crate::http::{Served, Start};
use crate::log;
use crate::rules::stick::Level;
use crate::shared::Shared;
use crate::tcp::{self, Accepted};
use fulcrum_config::MuxProto;
use prelude::{needs_prelude, prelude, session_rules};

/// Sessions alive in this worker; soft stop waits for zero.
pub struct Live {
    count: Cell<usize>,
    idle: Notify,
    /// Their table (`show sess`).
    pub streams: Arc<super::sessions::Registry>,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            count: Cell::new(0),
            idle: Notify::new(),
            streams: super::sessions::Registry::for_worker(),
        }
    }
}

impl Live {
    fn inc(&self) {
        self.count.set(self.count.get() + 1);
    }
    fn dec(&self) {
        self.count.set(self.count.get() - 1);
        if self.count.get() == 0 {
            self.idle.notify_one();
        }
    }
    pub async fn wait_idle(&self) {
        while self.count.get() > 0 {
            self.idle.notified().await;
        }
    }
}

/// The `maxconn` slots a session holds and its place in the worker's live count, released
/// when it ends.
struct Slots {
    shared: Arc<Shared>,
    frontend: Arc<Frontend>,
    bind: Arc<Bind>,
    live: Option<Rc<Live>>,
    /// Its place in the worker's session table.
    stream: u32,
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.bind.limit.release();
        self.frontend.limit.release();
        self.shared.global_limit.release();
        if let Some(live) = &self.live {
            live.streams.remove(self.stream);
            live.dec();
        }
    }
}

/// A listening socket registered with the worker's event loop.
struct Listener {
    fd: AsyncFd<OwnedFd>,
    unix: bool,
}

impl Listener {
    fn new(socket: crate::listener::OpenSocket) -> io::Result<Self> {
        Ok(Listener {
            fd: crate::sys::register_listener(OwnedFd::from(socket.socket))?,
            unix: socket.unix,
        })
    }

    /// Turns an accepted descriptor into a stream on this worker's event loop.
    fn stream(&self, fd: OwnedFd) -> io::Result<Stream> {
        if self.unix {
            let std = std::os::unix::net::UnixStream::from(fd);
            Ok(Stream::Unix(tokio::net::UnixStream::from_std(std)?))
        } else {
            Ok(Stream::accepted_tcp(std::net::TcpStream::from(fd)))
        }
    }
}

/// Accepts connections for one bind address in one worker. Slots on the bind, frontend and
/// process `maxconn` are taken only once a connection is waiting, then `accept4` is called;
/// while a limit is full the loop waits and the connection stays in the kernel's backlog.
pub async fn accept_loop(ws: WorkerSocket, shared: Arc<Shared>, live: Rc<Live>) {
    let listener = match Listener::new(ws.socket) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("[ALERT]    ({}) : cannot attach listener: {e}", std::process::id());
            return;
        }
    };
    // Read once: an environment lookup takes a process-wide lock.
    let debug_sizes = std::env::var_os("FULCRUM_DEBUG_SIZES").is_some();
    // `maxsslrate` counts the connections of TLS binds.
    let ssl_rate = ws.bind.tls.is_some().then(|| Arc::clone(&shared.ssl_rate));
    loop {
        // `disable frontend`: connections wait in the kernel's backlog until it is enabled.
        while ws.frontend.disabled.load(std::sync::atomic::Ordering::Relaxed) {
            let enabled = ws.frontend.enabled.notified();
            tokio::pin!(enabled);
            enabled.as_mut().enable();
            if !ws.frontend.disabled.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            enabled.await;
        }
        let mut ready = match listener.fd.readable().await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("[ALERT]    ({}) : listener failed: {e}", std::process::id());
                return;
            }
        };
        // Up to `tune.maxaccept` connections per wake-up (64 by default): a burst of
        // connections is taken from the kernel's queue before their sessions run, so the
        // queue does not overflow (the kernel then drops SYNs, and a client waits 1 s). Then
        // the sessions run before more are taken.
        let mut taken = 0;
        let mut pause = None;
        while taken < shared.max_accept {
            // `maxconnrate` / `maxsessrate`: the rest of the second, connections wait in the
            // kernel's backlog.
            let now = crate::clock::now().into_std();
            // (And the frontend's `rate-limit sessions`.)
            let wait = shared.conn_rate.wait(now).or_else(|| shared.sess_rate.wait(now));
            let wait = wait.or_else(|| ssl_rate.as_ref().and_then(|r| r.wait(now)));
            if let Some(w) = wait.or_else(|| ws.frontend.sess_limit.wait(now)) {
                pause = Some(w);
                break;
            }
            // `disable frontend` also stops a loop that was already woken.
            if ws.frontend.disabled.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            taken += 1;
            ws.bind.limit.acquire().await;
            ws.frontend.limit.acquire().await;
            shared.global_limit.acquire().await;
            let mut slots = Slots {
                shared: Arc::clone(&shared),
                frontend: Arc::clone(&ws.frontend),
                bind: Arc::clone(&ws.bind),
                live: None,
                stream: 0,
            };
            let accepted = match ready.try_io(|fd| crate::sys::accept(fd.as_raw_fd())) {
                Ok(r) => r.and_then(|(fd, peer)| Ok((listener.stream(fd)?, peer))),
                Err(_would_block) => break, // drained, or another worker took it; `slots` drops
            };
            let (client, peer) = match accepted {
                Ok(c) => c,
                Err(e) => {
                    drop(slots);
                    if is_resource_shortage(&e) {
                        eprintln!("[WARNING]  ({}) : accept: {e}; pausing", std::process::id());
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    break;
                }
            };
            if ws.frontend.nolinger {
                crate::connection::no_linger(&client);
            }
            live.inc();
            slots.stream = live.streams.add(peer, &ws.frontend);
            slots.live = Some(Rc::clone(&live));
            shared.conn_rate.count(now);
            if let Some(r) = &ssl_rate {
                r.count(now);
            }
            let fc = &ws.frontend.counters;
            Counters::inc(&fc.conns);
            Counters::raise(&fc.max_sessions, u64::from(ws.frontend.limit.current()));
            if let Some(l) = &ws.bind.counters {
                Counters::inc(&l.conns);
                Counters::raise(&l.max_sessions, u64::from(ws.bind.limit.current()));
            }
            let mut conn = Accepted {
                client,
                peer,
                proxied: None,
                prepared: false,
                expect_proxy: false,
                expect_cip: false,
                dst_port: ws.dst_port,
                bind_no: ws.bind.number as u16,
                vars: None,
            };
            if !admit(&ws.frontend, &mut conn, &shared, &ws.bind) {
                continue;
            }
            shared.sess_rate.count(now);
            ws.frontend.sess_limit.count(now);
            // Two kinds of task, each as small as it can be: the task's size is part of the
            // memory of every idle connection.
            let stream = slots.stream;
            let handle = if ws.frontend.http.is_some() {
                let task = http_connection(slots, Start::New(conn));
                if debug_sizes {
                    eprintln!("http connection task: {} bytes", std::mem::size_of_val(&task));
                }
                let kind = super::profiling::Kind::HttpSession;
                tokio::task::spawn_local(super::profiling::Profiled::new(kind, stream, task))
            } else {
                let task = tcp_connection(slots, conn);
                let kind = super::profiling::Kind::TcpSession;
                tokio::task::spawn_local(super::profiling::Profiled::new(kind, stream, task))
            };
            // `shutdown session` ends the task (the session has not run yet: it is registered
            // before it can end).
            live.streams.set_abort(stream, handle.abort_handle());
        }
        if let Some(w) = pause {
            drop(ready);
            tokio::time::sleep(w).await;
        } else if taken == shared.max_accept {
            tokio::task::yield_now().await; // more may wait: let the sessions run first
        }
    }
}

/// A new connection passes `tcp-request connection` rules, then (when no PROXY header nor TLS
/// handshake comes first) `tcp-request session` rules, and in mode tcp, where no payload is
/// inspected, `tcp-request content` rules (in mode http the session runs those per request).
fn admit(fe: &Frontend, conn: &mut Accepted, shared: &Shared, bind: &Bind) -> bool {
    let r = &fe.rules;
    let tls = bind.tls.is_some();
    if !r.expect_proxy.is_empty() || !r.expect_cip.is_empty() {
        let local = socket2::SockRef::from(&conn.client).local_addr().ok();
        let dst = local.and_then(|a| a.as_socket());
        let vars = crate::rules::sample::Vars::default();
        let ctx = crate::frontend::Frontend::ctx(fe, conn.peer, dst, &vars);
        let any = |conds: &[Option<crate::rules::Cond>]| {
            conds.iter().any(|c| crate::rules::holds(c, &r.acls, &ctx))
        };
        (conn.expect_proxy, conn.expect_cip) = (any(&r.expect_proxy), any(&r.expect_cip));
    }
    let session_now = !needs_prelude(bind, conn);
    // Rules on the first bytes run once they are there (`tcp_connection`).
    let content_now =
        fe.http.is_none() && !fe.needs_payload && !tls && (session_now || r.tcp_session.is_empty());
    if !r.tcp_connection.is_empty() || !r.tcp_content.is_empty() && content_now {
        let local = socket2::SockRef::from(&conn.client).local_addr().ok();
        let dst = local.and_then(|a| a.as_socket());
        let mut vars = crate::rules::sample::Vars::default();
        let empty = crate::rules::sample::Vars::default();
        let mk = crate::frontend::Frontend::ctx(fe, conn.peer, dst, &empty);
        let mut accepted = connection_rules(fe, &mk, &mut vars);
        // What a refusal counts, as HAProxy counts it at each stage.
        let mut denied: fn(&Counters) -> &AtomicU64 = |c| &c.denied_conn;
        if let Some(a) = &vars.addrs {
            conn.peer = a.src;
        }
        if !vars.is_empty() {
            conn.vars = Some(Box::new(std::mem::take(&mut vars)));
        }
        if accepted && session_now {
            accepted = session_rules(fe, conn);
            denied = |c| &c.denied_sess;
        }
        if accepted && content_now {
            // (The session began: content rules run on a stream.)
            Counters::inc(&fe.counters.sessions);
            denied = |c| &c.denied_req;
            let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
            accepted =
                crate::rules::tcp_run(&r.tcp_content, &r.acls, &mk, &mut vars, Level::Stream);
            if !vars.is_empty() {
                conn.vars = Some(Box::new(vars));
            }
        }
        if !accepted {
            // What it tracked is let go before the client sees the close.
            conn.vars = None;
            fe.count(conn.bind_no, denied);
            if shared.debug {
                eprintln!("{}: connection rejected by tcp-request rules", fe.name);
            }
            return false;
        }
        if content_now {
            return true;
        }
    } else if session_now && !session_rules(fe, conn) {
        conn.vars = None;
        fe.count(conn.bind_no, |c| &c.denied_sess);
        return false;
    }
    Counters::inc(&fe.counters.sessions);
    true
}

/// `tcp-request connection` rules on a new connection (`mk`: what they see): false when they
/// reject it. `vars` takes what they set; their `set-src|dst` change the connection's own
/// addresses (`fc_src`...), where the later levels change the session's only. (`fulcrum
/// explain` runs them too.)
#[inline]
pub(crate) fn connection_rules(
    fe: &Frontend,
    mk: &crate::rules::sample::Ctx<'_>,
    vars: &mut crate::rules::sample::Vars,
) -> bool {
    let r = &fe.rules;
    let accepted = crate::rules::tcp_run(&r.tcp_connection, &r.acls, mk, vars, Level::Session);
    if let Some(a) = vars.addrs.as_mut() {
        (a.fc_src, a.fc_dst) = (a.src, a.dst);
        (a.sess_src, a.sess_dst) = (a.src, a.dst);
    }
    accepted
}

/// `tcp-request session` rules over the connection's variables (`mk`: what they see), then
/// the session counted on what it tracks: false when they reject it. (`fulcrum explain` runs
/// them too.)
#[inline]
pub(crate) fn session_rules_on(
    fe: &Frontend,
    mk: &crate::rules::sample::Ctx<'_>,
    vars: &mut crate::rules::sample::Vars,
) -> bool {
    let r = &fe.rules;
    let ok = crate::rules::tcp_run(&r.tcp_session, &r.acls, mk, vars, Level::Session);
    if let Some(sc) = &vars.sc {
        sc.session_started();
    }
    ok
}

/// A `mode http` connection. The session runs boxed and its future is freed when the
/// connection rests between requests: a resting connection then holds only this task, its
/// `Resting` state (in `start`) and the wait for its next request.
/// (Each boxed future is made in a statement of its own: a temporary alive across an `await`
/// would keep room in this task.)
/// (Not an `async fn`: that would copy its arguments into locals, and `start` would take room
/// twice.)
#[allow(clippy::manual_async_fn)] // see above
fn http_connection(slots: Slots, mut start: Start) -> impl std::future::Future<Output = ()> {
    // Only `slots`, `start`, boxes and the resting wait cross an await here: any other local
    // alive across one (an `Accepted`, a `Served`, the references to the frontend) takes room
    // in every idle connection's task. Measured (bench/run --only f): this future at 552
    // bytes put the task's cell (future + 104 bytes, in 128-byte allocator classes) at 768
    // bytes; at 272 it is 384, and an idle connection costs ~400 bytes less.
    async move {
        // A `mode tcp` frontend's connection upgraded to HTTP runs with its `upgrade` settings.
        if slots.frontend.http.is_none() && slots.frontend.upgrade.is_none() {
            return;
        }
        if matches!(&start, Start::New(conn) if needs_prelude(&slots.bind, conn)) {
            let prelude = {
                let Start::New(conn) = start else { return };
                Box::pin(prelude(&slots, conn))
            };
            match prelude.await {
                Some(c) => start = Start::New(c),
                None => return,
            }
        }
        // `proto h2`, or TLS chose HTTP/2 (`alpn h2,...`) and `proto h1` does not forbid it.
        let proto = slots.bind.proto;
        let alpn_h2 = |conn: &Accepted| {
            conn.client.tls().is_some_and(|t| t.with_conn(|c| c.alpn_protocol() == Some(b"h2")))
        };
        if matches!(&start, Start::New(conn)
            if proto == Some(MuxProto::H2) || (proto.is_none() && alpn_h2(conn)))
        {
            let h2 = {
                let Start::New(conn) = start else { return };
                let (fe, shared) = (Arc::clone(&slots.frontend), Arc::clone(&slots.shared));
                Box::pin(crate::http::h2::serve(fe, shared, conn, Vec::new()))
            };
            return h2.await;
        }
        // An HTTP/1 connection (HAProxy's `h1` statistics module), until it ends or turns
        // into HTTP/2.
        let fc = &slots.frontend.counters;
        Counters::inc(&fc.h1_total_conns);
        let h1 = crate::counters::Up::new(&fc.h1_open_conns);
        let h2 = loop {
            // The references the session needs are taken anew for each run.
            let serving = {
                let fe = &*slots.frontend;
                let Some(http) = fe.http.as_ref().or(fe.upgrade.as_ref()) else { return };
                Box::pin(crate::http::serve(fe, http, start, &slots.shared))
            };
            match serving.await {
                Served::Closed => return,
                Served::Rest(rest) => start = Start::Resume(rest),
                Served::H2(conn, prefix) => {
                    drop(h1);
                    let (fe, shared) = (Arc::clone(&slots.frontend), Arc::clone(&slots.shared));
                    break Box::pin(crate::http::h2::serve(fe, shared, conn, prefix));
                }
            }
            let Start::Resume(rest) = &start else { return };
            if !rest.wait(slots.frontend.idle_close_on_response).await {
                return;
            }
        };
        h2.await
    }
}

/// A `mode tcp` connection, with its log line. Its backend is chosen once, on the
/// connection's addresses; a `mode http` backend upgrades it to an HTTP session (as HAProxy
/// does), where each request then picks its backend again.
async fn tcp_connection(slots: Slots, conn: Accepted) {
    let mut conn = if needs_prelude(&slots.bind, &conn) {
        match Box::pin(prelude(&slots, conn)).await {
            Some(c) => c,
            None => return,
        }
    } else {
        conn
    };
    let (fe, shared) = (&*slots.frontend, &*slots.shared);
    let dst = || {
        conn.local().or_else(|| socket2::SockRef::from(&conn.client).local_addr().ok()?.as_socket())
    };
    let dst = if fe.needs_dst { dst() } else { None };
    if tcp::inspect::asks_client_session(fe) {
        Box::pin(tcp::inspect::client_session(fe, &mut conn, dst)).await;
    }
    // `tcp-request content` rules run here, not at accept, when they may read the first bytes
    // or the TLS handshake's facts (`ssl_fc_sni`: the handshake ran in the prelude).
    let late = fe.needs_payload || slots.bind.tls.is_some();
    let mut got = tcp::inspect::Inspected { payload: Vec::new(), shut: false };
    let chosen = if late || !fe.use_backends.is_empty() {
        // `tcp-request inspect-delay`: the rules see the first bytes (a ClientHello to route
        // by its name), read without consuming them.
        if fe.needs_payload {
            got = tcp::inspect::first_bytes(&conn.client, fe.inspect_delay).await;
        }
        let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
        let empty = crate::rules::sample::Vars::default();
        let mut mk = crate::frontend::Frontend::ctx(fe, conn.peer, dst, &empty);
        mk.client = Some(&conn.client);
        mk.bind_no = conn.bind_no;
        mk.pp = conn.proxied.as_deref();
        let r = &fe.rules;
        if late {
            let ev = fulcrum_config::spoe::SpoeEvent::FrontendTcpRequest;
            let v = tcp::inspect::content_rules(
                &conn.client,
                &mut got,
                fe.inspect_delay,
                (&r.tcp_content, &r.spoe, ev, r.raw_http),
                &r.acls,
                &mk,
                &mut vars,
            )
            .await;
            if v == crate::rules::TcpVerdict::Reject {
                fe.count(conn.bind_no, |c| &c.denied_req);
                return;
            }
        }
        mk.payload = &got.payload;
        let raw = if r.raw_http { tcp::inspect::raw_http(&got.payload).ok() } else { None };
        mk.req = raw.as_deref();
        let chosen = crate::frontend::switching::choose(fe, &mk.with_vars(&vars));
        if !vars.is_empty() {
            conn.vars = Some(Box::new(vars));
        }
        chosen
    } else {
        fe.backend.clone()
    };
    let Some(be) = chosen else {
        if shared.debug {
            eprintln!("{}: no backend: session closed", fe.name);
        }
        tcp::close_cleanly(&conn.client).await;
        return;
    };
    if be.http.is_some() && fe.upgrade.is_some() {
        // Boxed: a plain TCP session's task stays as small as it was.
        return Box::pin(http_connection(slots, Start::New(conn))).await;
    }
    let be = &be;
    if !be.rules.tcp_content.is_empty() || !be.rules.spoe.is_empty() || !fe.rules.spoe.is_empty() {
        // The backend's `tcp-request content` rules, on the same first bytes (and the SPOE
        // engines' `on-backend-tcp-request`: the frontend's, then the backend's).
        let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
        let empty = crate::rules::sample::Vars::default();
        let mut mk = crate::frontend::Frontend::ctx(fe, conn.peer, dst, &empty);
        mk.client = Some(&conn.client);
        mk.bind_no = conn.bind_no;
        mk.pp = conn.proxied.as_deref();
        mk.backend = Some(&**be);
        let r = &be.rules;
        let ev = fulcrum_config::spoe::SpoeEvent::BackendTcpRequest;
        for e in &fe.rules.spoe {
            let ctx = crate::rules::sample::Ctx { payload: &got.payload, ..mk };
            Box::pin(crate::spoe::ask_with(e, e.on(ev), &ctx, &mut vars)).await;
        }
        let v = tcp::inspect::content_rules(
            &conn.client,
            &mut got,
            be.inspect_delay,
            (&r.tcp_content, &r.spoe, ev, r.raw_http),
            &r.acls,
            &mk,
            &mut vars,
        )
        .await;
        if !vars.is_empty() {
            conn.vars = Some(Box::new(vars));
        }
        if v == crate::rules::TcpVerdict::Reject {
            // (HAProxy counts it on the frontend only.)
            fe.count(conn.bind_no, |c| &c.denied_req);
            return;
        }
    }
    Counters::inc(&be.counters.sessions);
    let peer = conn.peer;
    // The clock and the local address are read only for a log line.
    let logs = shared.debug || fe.logger.is_some();
    let local = match (logs, dst) {
        (true, None) => {
            socket2::SockRef::from(&conn.client).local_addr().ok().and_then(|a| a.as_socket())
        }
        (_, d) => d,
    };
    if fe.log.line.is_none() {
        if let Some(l) = &fe.logger {
            l.send(log::syslog::INFO, &log::connect_line(peer, local, &fe.name, false));
        }
    }
    // The rest only for a line at the end of the session (a format, or `-d`).
    let logs = shared.debug || (fe.logger.is_some() && fe.log.line.is_some());
    let mut outcome = crate::outcome::Outcome {
        want_server_addrs: logs && fe.log.server_addrs,
        ..Default::default()
    };
    if logs {
        let now = crate::clock::now();
        outcome.marks.start = Some(now);
        outcome.marks.request = Some(now);
    }
    // The client connection closes after the log line (HAProxy counts it in %ac then).
    // `option logasap`: the line once the server is connected, none at the end.
    let sent = std::cell::Cell::new(false);
    let early = |conn: &tcp::Accepted, outcome: &crate::outcome::Outcome| {
        tcp_line(fe, be, conn, (peer, local), outcome, shared);
        sent.set(true);
    };
    let connected = (logs && fe.log.logasap).then_some(&early as tcp::OnConnect<'_>);
    tcp::serve(fe, be, &mut conn, &mut outcome, connected).await;
    crate::stats::account(fe, conn.bind_no, Some(be), &outcome, false, false);
    if let Some(sc) = conn.vars.as_ref().and_then(|v| v.sc.as_ref()) {
        sc.bytes(outcome.bytes_in, outcome.bytes_out);
    }
    if logs && !sent.get() {
        tcp_line(fe, be, &conn, (peer, local), &outcome, shared);
    }
}

/// A TCP stream's log line (at its end, or once connected with `option logasap`).
fn tcp_line(
    fe: &Frontend,
    be: &crate::backend::Backend,
    conn: &tcp::Accepted,
    (peer, local): (Option<std::net::SocketAddr>, Option<std::net::SocketAddr>),
    outcome: &crate::outcome::Outcome,
    shared: &Shared,
) {
    // The stream's variables (`%[var(txn.x)]`), as the rules left them.
    let none = crate::rules::sample::Vars::default();
    let vars = conn.vars.as_deref().unwrap_or(&none);
    let mut ctx = crate::frontend::Frontend::ctx(fe, peer, local, vars);
    ctx.backend = Some(be);
    ctx.client = Some(&conn.client);
    ctx.pp = conn.proxied.as_deref();
    ctx.server_stream = crate::tls::facts::ServerSide::logged(outcome);
    let mut stream = crate::rules::format::Stream {
        fe,
        be: Some(be),
        outcome,
        now: crate::clock::now(),
        wall: crate::clock::wall(),
        request_line: None,
        captures: None,
        unique_id: None,
        actconn: shared.global_limit.current(),
        request_counter: log::next_stream_number(),
        log_count: fe.log.count.load(std::sync::atomic::Ordering::Relaxed),
        server_conn: outcome.server_conn,
        http: false,
        asap: fe.log.logasap,
    };
    let uid = crate::frontend::log::unique_id(fe, &ctx, &stream);
    stream.unique_id = uid.as_deref();
    crate::frontend::log::stream_line(fe, &ctx, &stream, None, shared.debug);
}

fn is_resource_shortage(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}
