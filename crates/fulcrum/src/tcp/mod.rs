//! `mode tcp`: one session from accept to close. Chooses a server through the backend, connects
//! within `timeout connect` with `retries` (the last one redispatched with `option redispatch`),
//! then tunnels bytes both ways until both directions are done or a timeout fires.
//! `after_failure` (what follows a failed connection attempt) is unit-tested without sockets.
//!
//! Must not touch: accept and limits (the listener), selection policy (backend and balancer).

pub mod inspect;
pub mod socks4;
pub mod tunnel;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixStream;

use crate::backend::{AcquireError, Backend, PickKey, ServerSlot};
pub use crate::connection::Opening;
use crate::connection::{ServerLink, Stream};
use crate::counters::Counters;
use crate::frontend::Frontend;
use crate::outcome::{Cause, Outcome, Phase};
use crate::server::{Endpoint, Target};
use tunnel::{TunnelEnd, TunnelTimeouts};

/// How a session ended, as the code that saw it says it ([`Ending::record`] turns it into
/// the outcome's termination state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// No server could be had (`SC`-like: no server, queue full or queue timeout).
    NoServer(AcquireError),
    /// Every connection attempt failed; how the last one did decides the code: refused or
    /// reset `SC`, timed out `sC`, out of local resources (descriptors, ports) `RC`.
    ConnectFailed(io::ErrorKind, Option<i32>),
    /// The client left while waiting for a server (`CQ`/`CC`, abortonclose).
    ClientAborted,
    /// The server connection could not have its TLS layer (`maxsslconn`): HAProxy's internal
    /// error, not retried (`IC`, a 500).
    TooManyTls,
    /// `usesrc hdr_ip()` found no address to bind in the request: HAProxy's internal error
    /// too (`IC`, a 500), not retried.
    NoSourceHeader,
    Tunnel(TunnelEnd),
    /// The server chosen (this index) has `redir`: the request is answered with a
    /// redirection to it instead of a connection (`LC`).
    Redirect(usize),
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::NoServer(e) => e.fmt(f),
            Ending::ConnectFailed(kind, errno) => {
                let e = match errno {
                    Some(n) => io::Error::from_raw_os_error(*n),
                    None => io::Error::from(*kind),
                };
                write!(f, "connection to the server failed: {}", crate::sys::os_words(&e))
            }
            Ending::ClientAborted => f.write_str("the client left while a server was awaited"),
            Ending::TooManyTls => f.write_str("too many SSL connections (maxsslconn)"),
            Ending::NoSourceHeader => {
                f.write_str("no source address in the request (usesrc hdr_ip)")
            }
            Ending::Tunnel(t) => t.fmt(f),
            Ending::Redirect(_) => f.write_str("the server redirects its requests (redir)"),
        }
    }
}

/// The SPOE engines' `on-server-session`, then `on-tcp-response` (the frontend's engines, then
/// the backend's), once the server is connected: asked as the server connection's analysers
/// start, with no response byte yet.
#[cold]
async fn server_events(
    fe: &Frontend,
    be: &Arc<Backend>,
    conn: &mut Accepted,
    srv: &crate::server::Server,
) {
    let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
    let empty = crate::rules::sample::Vars::default();
    let mut ctx = crate::frontend::Frontend::ctx(fe, conn.peer, conn.local(), &empty);
    ctx.backend = Some(&**be);
    ctx.server = Some(&srv.name);
    ctx.client = Some(&conn.client);
    ctx.bind_no = conn.bind_no;
    ctx.pp = conn.proxied.as_deref();
    let own = fe.is_own_backend(be);
    inspect::when_connected(fe, be, own, &ctx, &mut vars).await;
    if !vars.is_empty() {
        conn.vars = Some(Box::new(vars));
    }
}

/// What `Opening` (defined in `connection`, for the TLS settings to read) does here, where
/// the servers are known.
impl Opening<'_> {
    /// The SNI a connection to server `srv` sends (`sni`), if any.
    pub fn sni(&self, srv: &crate::server::Server) -> Option<String> {
        let sni = srv.traffic_tls()?.sni.as_ref()?;
        let client_sni = self.client.and_then(|c| c.tls()).and_then(|t| {
            t.with_conn(|c| match c {
                rustls::Connection::Server(s) => s.server_name().map(str::to_string),
                rustls::Connection::Client(_) => None,
            })
        });
        let host = self.req.and_then(|r| r.header(b"host"));
        sni.value(host, client_sni.as_deref(), self)
    }
}

/// Turns a fresh connection to `srv` into what the server expects: a PROXY protocol header
/// first (`send-proxy*`), then TLS (`ssl`) with the handshake run here, counted on the
/// server's and `be`'s counters. `limit` bounds the whole (it is what is left of `timeout
/// connect`).
pub async fn open_layers(
    be: &Counters,
    srv: &crate::server::Server,
    stream: Stream,
    open: &Opening<'_>,
    limit: Option<Duration>,
) -> io::Result<Stream> {
    let work = async {
        if let Some(sp) = &srv.send_proxy {
            let dst = open.dst.or_else(|| {
                let c = open.client?;
                socket2::SockRef::from(c).local_addr().ok()?.as_socket()
            });
            let header = crate::tls::facts::proxy_header(sp, open, dst);
            crate::connection::write_all(&stream, &header).await?;
        }
        let Some(origin) = srv.traffic_tls() else { return Ok(stream) };
        let sni = open.sni(srv);
        let ip = socket2::SockRef::from(stream.transport())
            .peer_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |a| a.ip());
        let name = crate::tls::server_name(sni.as_deref(), ip);
        let config = if open.upgrade && !srv.ws_h2 { &origin.config_h1 } else { &origin.config };
        let tls = crate::connection::tls::TlsStream::client(stream, Arc::clone(config), name)?;
        let done = tls.handshake().await;
        let resumed = done.is_ok() && tls.resumed();
        crate::counters::handshake_done(&[be, &srv.counters], done.is_ok(), resumed, false);
        done?;
        Ok(Stream::Tls(Box::new(tls)))
    };
    match limit {
        Some(d) => tokio::time::timeout(d, work)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timeout"))),
        None => work.await,
    }
}

/// Everything a TCP session needs to know about where it came from.
pub struct Accepted<C = Stream> {
    /// The connection's byte stream; for one HTTP/2 stream's session, its view
    /// (`http::peer::Peer`).
    pub client: C,
    pub peer: Option<SocketAddr>,
    /// What a PROXY protocol header said (boxed: most connections have none, and this
    /// struct is part of every connection task's size).
    pub proxied: Option<Box<crate::connection::proxy::Header>>,
    /// The PROXY header was read and the TLS handshake run (`runtime::accept`).
    pub prepared: bool,
    /// `tcp-request connection expect-proxy layer4` matched: a PROXY header comes first.
    pub expect_proxy: bool,
    /// `tcp-request connection expect-netscaler-cip layer4` matched: a NetScaler Client IP
    /// header comes first.
    pub expect_cip: bool,
    /// The port the client connected to (for servers without a port).
    pub dst_port: u16,
    /// The number of the `bind` line that accepted it, from 1 (`so_name`).
    pub bind_no: u16,
    /// What `tcp-request connection|session` rules set or tracked for the session (boxed:
    /// most connections have none).
    pub vars: Option<Box<crate::rules::sample::Vars>>,
}

impl<C> Accepted<C> {
    /// The same with its client made another type (a byte stream into an HTTP session's
    /// `Peer`).
    pub fn map_client<D>(self, f: impl FnOnce(C) -> D) -> Accepted<D> {
        let Accepted {
            client,
            peer,
            proxied,
            prepared,
            expect_proxy,
            expect_cip,
            dst_port,
            bind_no,
            vars,
        } = self;
        Accepted {
            client: f(client),
            peer,
            proxied,
            prepared,
            expect_proxy,
            expect_cip,
            dst_port,
            bind_no,
            vars,
        }
    }

    /// The original destination a PROXY protocol header gave (else `None`: the socket's).
    pub fn local(&self) -> Option<SocketAddr> {
        self.proxied.as_ref().and_then(|h| h.addrs).map(|a| a.1)
    }
}

impl Ending {
    /// Records this ending in the stream's outcome (HAProxy's termination state).
    pub fn record(self, o: &mut Outcome) {
        let (cause, phase) = match self {
            Ending::Tunnel(TunnelEnd::Done) => return,
            Ending::Tunnel(TunnelEnd::ClientError) => (Cause::ClientAbort, Phase::Data),
            Ending::Tunnel(TunnelEnd::ServerError) => (Cause::ServerAbort, Phase::Data),
            Ending::Tunnel(TunnelEnd::ClientTimeout) => (Cause::ClientTimeout, Phase::Data),
            Ending::Tunnel(TunnelEnd::ServerTimeout) => (Cause::ServerTimeout, Phase::Data),
            Ending::NoServer(AcquireError::QueueTimeout { server, pos }) => {
                if server {
                    o.srv_queue = pos;
                } else {
                    o.be_queue = pos;
                }
                (Cause::ServerTimeout, Phase::Queue)
            }
            Ending::NoServer(AcquireError::QueueFull) => (Cause::ServerAbort, Phase::Queue),
            Ending::NoServer(AcquireError::NoServer) => (Cause::ServerAbort, Phase::Connect),
            Ending::ConnectFailed(io::ErrorKind::TimedOut, _) => {
                (Cause::ServerTimeout, Phase::Connect)
            }
            Ending::ConnectFailed(_, Some(errno)) if is_resource_error(errno) => {
                (Cause::Resource, Phase::Connect)
            }
            Ending::ConnectFailed(..) => (Cause::ServerAbort, Phase::Connect),
            Ending::TooManyTls | Ending::NoSourceHeader => (Cause::Internal, Phase::Connect),
            Ending::ClientAborted if o.marks.queue.is_none() => {
                // It left the queue: HAProxy counts that time as queueing, and gives the
                // position (1 here: those served while it waited are not counted).
                if o.marks.start.is_some() {
                    o.marks.queue = Some(crate::clock::now());
                }
                o.be_queue = 1;
                (Cause::ClientAbort, Phase::Queue)
            }
            // Before a server was assigned the stream was queued (`CQ`), after it connecting.
            Ending::ClientAborted if o.server.is_none() => (Cause::ClientAbort, Phase::Queue),
            Ending::ClientAborted => (Cause::ClientAbort, Phase::Connect),
            Ending::Redirect(_) => (Cause::Local, Phase::Connect),
        };
        o.end(cause, phase);
    }
}

/// `persist rdp-cookie`: the server whose IPv4 address and port the RDP cookie names, as
/// HAProxy 2.6's `tcp_persist_rdp_cookie` reads them (`<address>.<port>.`: both decimal
/// integers of the bytes in network order read as host integers, Microsoft's encoding), if it
/// is up or `option persist` is set.
fn rdp_persist(be: &Backend, first: &[u8]) -> Option<usize> {
    let name = be.rdp_persist.as_deref()?;
    let v = crate::rules::sample::rdp_cookie(first, name.as_bytes()).ok()?;
    let (addr, rest) = strtoul(v);
    let (port, rest) = strtoul(rest.strip_prefix(b".")?);
    rest.strip_prefix(b".")?;
    let ip = IpAddr::V4(std::net::Ipv4Addr::from((addr as u32).swap_bytes()));
    let port = (port as u16).swap_bytes();
    be.servers.iter().position(|s| {
        matches!(s.target(), Target::Inet(a) if a.ip() == ip && a.port() == port)
            && (s.is_up() || be.persist)
    })
}

/// C's `strtoul` in base 10: the leading digits' value (0 without any) and what follows them.
fn strtoul(s: &[u8]) -> (u64, &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let v = s[..n].iter().fold(0u64, |v, c| v.wrapping_mul(10).wrapping_add(u64::from(c - b'0')));
    (v, &s[n..])
}

/// A connect that failed for want of a local resource (HAProxy's `SF_ERR_RESOURCE`): out of
/// descriptors, memory or buffers, or of source ports.
fn is_resource_error(errno: i32) -> bool {
    matches!(
        errno,
        libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::EADDRNOTAVAIL
    )
}

/// What [`serve`] calls once the server's connection is established.
pub type OnConnect<'a> = &'a dyn Fn(&Accepted, &Outcome);

/// Serves one TCP session to its end, recording how it went in `out`; `on_connect` is
/// called once the server's connection is established (`option logasap`'s line).
pub async fn serve(
    fe: &Frontend,
    be: &Arc<Backend>,
    conn: &mut Accepted,
    out: &mut Outcome,
    on_connect: Option<OnConnect<'_>>,
) {
    // The first bytes, still waiting unread, for `use-server` rules (`req.ssl_sni`...) and
    // the RDP cookie (`balance rdp-cookie`, `persist rdp-cookie`).
    let mut first = Vec::new();
    if !be.rules.use_servers.is_empty() || be.rdp_balance.is_some() || be.rdp_persist.is_some() {
        first.resize(crate::connection::BUFSIZE, 0);
        let n = conn.client.try_peek(&mut first).unwrap_or(0);
        first.truncate(n);
    }
    let key = match &be.rdp_balance {
        // Without the cookie, round robin (HAProxy 2.6's fallback).
        Some(name) => crate::rules::sample::rdp_cookie(&first, name.as_bytes())
            .ok()
            .filter(|v| !v.is_empty())
            .map(PickKey::Bytes),
        None => conn.peer.map(|p| PickKey::Ip(p.ip())),
    };
    // `stick match|on` picks the server; `stick store-*` keys wait for the one connected to.
    let mut stores = crate::rules::stick::Stores::new();
    // `use-server` first (on the first bytes, still waiting unread: `req.ssl_sni`...), then
    // `stick match|on`, on the session as its rules see it.
    let r = &be.rules;
    let persist = if r.use_servers.is_empty() && r.stick.is_empty() && be.rdp_persist.is_none() {
        None
    } else {
        let vars = conn.vars.as_deref();
        let empty = crate::rules::sample::Vars::default();
        let mut ctx =
            crate::frontend::Frontend::ctx(fe, conn.peer, conn.local(), vars.unwrap_or(&empty));
        ctx.backend = Some(&**be);
        ctx.client = Some(&conn.client);
        ctx.bind_no = conn.bind_no;
        ctx.pp = conn.proxied.as_deref();
        let ctx = crate::rules::sample::Ctx { payload: &first, ..ctx };
        let down_ok = be.persist_rules(&ctx).down_ok(be);
        let assigned = be.use_server(&ctx, down_ok);
        let assigned = assigned.or_else(|| rdp_persist(be, &first));
        assigned.or_else(|| {
            let then = (false, down_ok);
            crate::rules::stick::on_request(&r.stick, &r.acls, &ctx, &**be, then, &mut stores)
        })
    };
    let open = Opening {
        src: conn.peer,
        dst: conn.local(),
        client: Some(&conn.client),
        ..Default::default()
    };
    let connecting = connect_server(be, key, persist, conn.dst_port, &open, out);
    let connected = if be.abortonclose {
        tokio::select! {
            r = connecting => r,
            _ = client_left(conn.client.peer_closed()) => Err(Ending::ClientAborted),
        }
    } else {
        connecting.await
    };
    let (slot, server) = match connected {
        Ok(v) => v,
        Err(e) => return e.record(out),
    };
    if !stores.is_empty() {
        crate::rules::stick::commit(&mut stores, slot.server());
    }
    Counters::inc(&be.counters.connects);
    Counters::inc(&slot.server().counters.connects);
    if let Some(f) = on_connect {
        f(conn, out);
    }
    if inspect::asks_when_connected(fe, be) {
        Box::pin(server_events(fe, be, conn, slot.server())).await;
    }
    if !be.rules.tcp_response.is_empty()
        && !Box::pin(inspect::response_rules_accept(fe, be, conn, slot.server())).await
    {
        Counters::inc(&be.counters.denied_resp);
        fe.count(conn.bind_no, |c| &c.denied_resp);
        return out.end(crate::outcome::Cause::Proxy, Phase::Done);
    }
    let t = tunnel_timeouts(fe, be);
    let limits = conn.vars.as_mut().and_then(|v| v.bwlim.take());
    let killed = || slot.ended_by().is_some();
    let (end, moved) = tunnel::run(&conn.client, &server, t, &killed, limits).await;
    let srv = slot.server();
    let lc = fe.listener(conn.bind_no);
    for c in [&*fe.counters, &be.counters, &srv.counters].into_iter().chain(lc) {
        Counters::add(&c.bytes_in, moved.client_to_server);
        Counters::add(&c.bytes_out, moved.server_to_client);
    }
    out.bytes_in = moved.client_to_server;
    out.bytes_out = moved.server_to_client;
    Ending::Tunnel(end).record(out);
    if let Some(by) = slot.ended_by() {
        // HAProxy shuts such a stream without an error on either side: no phase (`D-`).
        out.ended_by_state_change(by, Phase::Done);
    }
}

/// HAProxy: once connected, `timeout tunnel` replaces both client and server timeouts.
pub(crate) fn tunnel_timeouts(fe: &Frontend, be: &Backend) -> TunnelTimeouts {
    let tunnel = be.timeouts.tunnel;
    TunnelTimeouts {
        client: tunnel.or(fe.timeouts.client),
        server: tunnel.or(be.timeouts.server),
        client_fin: fe.timeouts.client_fin,
        server_fin: be.timeouts.server_fin,
        client_reads_only: fe.independent_streams,
        server_reads_only: be.independent_streams,
    }
}

/// Closes a session that will have no server as HAProxy does, with a FIN: our side is shut,
/// then what the client sends is read and dropped until it closes too (a second at most), so
/// unread bytes never turn the close into a reset.
pub(crate) async fn close_cleanly(client: &Stream) {
    let _ = client.shutdown_write();
    if !matches!(client.transport(), Stream::Tcp(_)) {
        return; // UNIX streams have no readiness wait here (see `Stream::peer_closed`).
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut sink = [0u8; 2048];
    loop {
        match client.try_read(&mut sink) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
        match tokio::time::timeout_at(deadline, client.peer_closed()).await {
            Ok(Ok(false)) => {}
            _ => return,
        }
    }
}

/// Resolves when the client has closed its side (with nothing left to read): `closed` is
/// its `peer_closed()`.
pub(crate) async fn client_left(closed: impl std::future::Future<Output = io::Result<bool>>) {
    match closed.await {
        Ok(true) | Err(_) => {}
        Ok(false) => std::future::pending().await,
    }
}

/// Takes a server slot and connects, retrying as `retries` and `option redispatch` say.
async fn connect_server(
    be: &Arc<Backend>,
    key: Option<PickKey<'_>>,
    persist: Option<usize>,
    dst_port: u16,
    open: &Opening<'_>,
    out: &mut Outcome,
) -> Result<(ServerSlot, Stream), Ending> {
    connect_server_reusing::<Stream>(be, key, persist, dst_port, open, out, &mut |_| None)
        .await
        .map(|(s, c, _)| (s, c))
}

/// Like `connect_server`, but before each connection attempt `idle(server index)` may supply
/// an existing connection to that server (with the number of requests it already carried).
pub async fn connect_server_reusing<L: ServerLink>(
    be: &Arc<Backend>,
    key: Option<PickKey<'_>>,
    persist: Option<usize>,
    dst_port: u16,
    open: &Opening<'_>,
    out: &mut Outcome,
    idle: &mut dyn FnMut(usize) -> Option<(L, u32)>,
) -> Result<(ServerSlot, L, u32), Ending> {
    match reuse_at_once(be, key, persist, open, out, idle)? {
        AtOnce::Reused(slot, stream, requests) => Ok((slot, stream, requests)),
        AtOnce::Continue(from) => {
            connect_after(be, key, persist, dst_port, open, out, idle, from).await
        }
    }
}

/// What [`reuse_at_once`] found.
pub enum AtOnce<L> {
    /// A free slot, and an idle connection to its server.
    Reused(ServerSlot, L, u32),
    /// The rest is [`connect_after`]'s.
    Continue(From),
}

/// Where [`connect_after`] starts.
pub enum From {
    /// With this slot (its idle connections were looked at already).
    Slot(ServerSlot),
    /// Waiting in this queue for a slot.
    Queue(crate::backend::Line),
}

/// `connect_server_reusing`'s usual case, without a future: a free slot at once and an idle
/// connection for it (a request's future that awaits this one step then holds none of the
/// connect's or the queue's state, and runs none of their code).
pub fn reuse_at_once<L: ServerLink>(
    be: &Arc<Backend>,
    key: Option<PickKey<'_>>,
    persist: Option<usize>,
    open: &Opening<'_>,
    out: &mut Outcome,
    idle: &mut dyn FnMut(usize) -> Option<(L, u32)>,
) -> Result<AtOnce<L>, Ending> {
    // The clock is read only when the slot has to be waited for, and before a connect: a
    // request that finds a free slot and an idle connection reads none.
    let mut slot = match be.try_acquire_persist(key, persist, None).map_err(Ending::NoServer)? {
        Ok(slot) => slot,
        Err(line) => return Ok(AtOnce::Continue(From::Queue(line))),
    };
    out.marks.queue = out.marks.request;
    took(&slot, out);
    redirects(&slot, open)?;
    Ok(match reuse_idle(&mut slot, open, out, idle) {
        Some((stream, requests)) => AtOnce::Reused(slot, stream, requests),
        None => AtOnce::Continue(From::Slot(slot)),
    })
}

/// `redir`: a server with a redirection prefix takes no GET or HEAD request; the request is
/// answered with a redirection instead (HAProxy's `SF_REDIRECTABLE` streams).
fn redirects(slot: &ServerSlot, open: &Opening<'_>) -> Result<(), Ending> {
    use fulcrum_http::Method;
    let redirectable = open.req.is_some_and(|r| matches!(r.method(), Method::Get | Method::Head));
    match slot.server().redir.is_some() && redirectable {
        true => Err(Ending::Redirect(slot.index())),
        false => Ok(()),
    }
}

/// The slot's server and queue positions, for the log line.
fn took(slot: &ServerSlot, out: &mut Outcome) {
    out.server = Some(slot.index());
    match slot.queued {
        Some((true, pos)) => out.srv_queue = pos,
        Some((false, pos)) => out.be_queue = pos,
        None => {}
    }
}

/// An idle connection to the slot's server, if `idle` has one (and, for TLS, one made with
/// this request's SNI).
fn reuse_idle<L: ServerLink>(
    slot: &mut ServerSlot,
    open: &Opening<'_>,
    out: &mut Outcome,
    idle: &mut dyn FnMut(usize) -> Option<(L, u32)>,
) -> Option<(L, u32)> {
    let (stream, requests) = idle(slot.index())?;
    // A TLS connection made with another SNI is not reused for this one.
    let srv = slot.server();
    if srv.traffic_tls().is_some_and(|o| o.sni.is_some())
        && stream.server_sni() != open.sni(srv).as_deref()
    {
        stream.discard();
        return None;
    }
    out.marks.connect = out.marks.queue;
    note_addrs(out, &stream);
    slot.track(&stream);
    Some((stream, requests))
}

/// The rest of `connect_server_reusing` after [`reuse_at_once`]: the wait for a slot, new
/// connections, retries and redispatch.
#[allow(clippy::too_many_arguments)]
pub async fn connect_after<L: ServerLink>(
    be: &Arc<Backend>,
    key: Option<PickKey<'_>>,
    persist: Option<usize>,
    dst_port: u16,
    open: &Opening<'_>,
    out: &mut Outcome,
    idle: &mut dyn FnMut(usize) -> Option<(L, u32)>,
    from: From,
) -> Result<(ServerSlot, L, u32), Ending> {
    let (mut slot, mut looked) = match from {
        From::Slot(slot) => (slot, true),
        From::Queue(line) => {
            let r = be.acquire_queued(line, key, None).await;
            out.marks.queue = Some(crate::clock::now());
            let slot = r.map_err(Ending::NoServer)?;
            took(&slot, out);
            redirects(&slot, open)?;
            (slot, false)
        }
    };
    let mut retries_left = be.retries;
    loop {
        if !std::mem::take(&mut looked) {
            if let Some((stream, requests)) = reuse_idle(&mut slot, open, out, idle) {
                return Ok((slot, stream, requests));
            }
        }
        // (Boxed: the state of a connect and a TLS handshake is large, and a request that
        // finds an idle connection should not have it moved around with its own.)
        // (`tfo` on the stream's first attempt only, as HAProxy: a retry, at the connection
        // or the request's level, connects plainly.)
        let first = out.retries == 0;
        let connected = Box::pin(open_new(be, &slot, dst_port, open, first)).await;
        let err = match connected {
            Ok(stream) => {
                out.marks.connect = Some(crate::clock::now());
                note_addrs(out, &stream);
                if slot.server().policy.observe.is_some() {
                    observe(be, slot.index(), false, "L4 successful connection");
                }
                slot.track(&stream);
                return Ok((slot, L::from(stream), 0));
            }
            Err(e) => e,
        };
        Counters::inc(&slot.server().counters.connect_errors);
        Counters::inc(&be.counters.connect_errors);
        if crate::connection::tls::is_too_many(&err) {
            return Err(Ending::TooManyTls); // (before any connection: nothing to observe)
        }
        if crate::server::source::is_no_header(&err) {
            return Err(Ending::NoSourceHeader);
        }
        observe(be, slot.index(), true, "L4 unsuccessful connection");
        let next = after_failure(be, persist, retries_left, err.kind());
        if next == Retry::GiveUp {
            return Err(Ending::ConnectFailed(err.kind(), err.raw_os_error()));
        }
        if open.abortonclose && open.client.is_some_and(|c| c.shut_by_peer()) {
            return Err(Ending::ClientAborted);
        }
        retries_left -= 1;
        out.retries += 1;
        Counters::inc(&be.counters.retries);
        match next {
            Retry::OtherServer => {
                let failed = slot.index();
                drop(slot);
                slot = be.acquire(key, Some(failed)).await.map_err(Ending::NoServer)?;
                out.server = Some(slot.index());
                out.redispatched = true;
                Counters::inc(&be.counters.redispatches);
            }
            Retry::SameServer { pause: Some(pause) } => tokio::time::sleep(pause).await,
            Retry::SameServer { pause: None } | Retry::GiveUp => {}
        }
    }
}

/// What follows a failed connection attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// No retry left: the stream ends (503, `sC`).
    GiveUp,
    /// The next attempt goes to another server (`option redispatch`).
    OtherServer,
    /// The next attempt goes to the same server, after a pause when it refused.
    SameServer { pause: Option<Duration> },
}

/// HAProxy's `retries` and `option redispatch` after a failed connection attempt, with
/// `retries_left` before it is counted and `persist` the server a cookie tied the stream to.
pub fn after_failure(
    be: &Backend,
    persist: Option<usize>,
    retries_left: u32,
    kind: io::ErrorKind,
) -> Retry {
    if retries_left == 0 {
        return Retry::GiveUp;
    }
    // As HAProxy: the last retry goes to another server, and so does every retry of a session
    // that no cookie ties to its server when the algorithm does not map a key to one server
    // (it does not matter which server takes it).
    let last = retries_left == 1;
    let any_server = persist.is_none() && !be.maps_keys();
    if be.redispatch && (last || any_server) && be.usable_servers() > 1 {
        return Retry::OtherServer;
    }
    // HAProxy's turn-around: do not hammer a server that just refused (a timeout waited
    // already).
    let pause = (kind != io::ErrorKind::TimedOut)
        .then(|| be.timeouts.connect.unwrap_or(Duration::MAX).min(Duration::from_secs(1)));
    Retry::SameServer { pause }
}

/// A new connection to the slot's server: TCP (or through SOCKS4), then the PROXY header and
/// TLS within what is left of `timeout connect`. `first`: the stream's first attempt (`tfo`).
async fn open_new(
    be: &Backend,
    slot: &ServerSlot,
    dst_port: u16,
    open: &Opening<'_>,
    first: bool,
) -> io::Result<Stream> {
    let srv = slot.server();
    let target = srv.target();
    let endpoint = target.resolve(dst_port);
    let tls = srv.traffic_tls().is_some();
    if tls {
        // (As HAProxy: the TLS layer is refused before the connection is made.)
        crate::connection::tls::room()?;
    }
    let started = (tls || srv.send_proxy.is_some()).then(std::time::Instant::now);
    let source = srv.source.as_deref().or(be.source.as_deref());
    let tfo = srv.tfo && first;
    let connected = match (srv.socks4, source, endpoint) {
        (Some(proxy), _, _) => connect_socks4(proxy, endpoint, be).await,
        // A socket prepared before it connects: bound first (`source`), or TCP Fast Open.
        (None, src, Endpoint::Inet(addr)) if src.is_some() || tfo => {
            let opts = (be.server_bufs, be.server_tcpka);
            let attempt = Stream::connect_tcp_from(addr, opts, |s| {
                if tfo {
                    crate::connection::fast_open_connect(s);
                }
                let header = |name: &str, occ: i32| {
                    crate::rules::sample::header_value_at(open.req?, name, occ)
                };
                src.map_or(Ok(()), |src| src.bind(s, open.src, &header))
            });
            within(be.timeouts.connect, attempt).await
        }
        (None, _, _) => {
            connect(endpoint, be.timeouts.connect, be.server_bufs, be.server_tcpka).await
        }
    };
    if be.nolinger {
        if let Ok(s) = &connected {
            crate::connection::no_linger(s);
        }
    }
    if let (Some(ms), Ok(s)) = (srv.tcp_ut, &connected) {
        crate::connection::user_timeout(s, ms);
    }
    match (started, connected) {
        (Some(t0), Ok(stream)) => {
            let left = be.timeouts.connect.map(|d| d.saturating_sub(t0.elapsed()));
            open_layers(&be.counters, srv, stream, open, left).await
        }
        (_, connected) => connected,
    }
}

/// Keeps the server connection's addresses for a log line that prints them (two system
/// calls, made only then).
fn note_addrs(out: &mut Outcome, stream: &impl AsFd) {
    if out.want_server_addrs {
        let s = socket2::SockRef::from(stream);
        let (local, peer) = (s.local_addr().ok(), s.peer_addr().ok());
        out.server_conn = local.zip(peer).and_then(|(l, p)| l.as_socket().zip(p.as_socket()));
    }
}

/// `observe`: a connection attempt's outcome counts toward the server's health (costs nothing
/// for servers that do not observe).
#[inline(never)]
pub fn observe(be: &Backend, idx: usize, failed: bool, what: &'static str) {
    let srv = &be.servers[idx];
    let Some(mode) = srv.policy.observe else { return };
    // Under `observe layer7` a connection that opens says nothing about the server.
    if mode == fulcrum_config::Observe::Layer7 && !failed {
        return;
    }
    if srv.observed(failed) {
        be.change_server(idx, crate::backend::status::Change::Observed { what });
    }
}

/// Opens a connection to a server within the connect timeout, with the kernel buffer sizes
/// `tune.rcvbuf.server` / `tune.sndbuf.server` force (TCP only).
/// A connection to the server through its SOCKS4 proxy, within `timeout connect`.
async fn connect_socks4(
    proxy: SocketAddr,
    endpoint: Endpoint<'_>,
    be: &Backend,
) -> io::Result<Stream> {
    let Endpoint::Inet(target) = endpoint else {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "SOCKS4 needs an IPv4 server"));
    };
    let attempt = async {
        let s = Stream::connect_tcp(proxy, be.server_bufs, be.server_tcpka).await?;
        socks4::handshake(&s, target).await?;
        Ok(s)
    };
    match be.timeouts.connect {
        Some(d) => tokio::time::timeout(d, attempt)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "connect timeout"))),
        None => attempt.await,
    }
}

/// `attempt` within `timeout` (`timeout connect`), a timeout being a `TimedOut` error.
async fn within(
    timeout: Option<Duration>,
    attempt: impl std::future::Future<Output = io::Result<Stream>>,
) -> io::Result<Stream> {
    match timeout {
        Some(d) => tokio::time::timeout(d, attempt)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "connect timeout"))),
        None => attempt.await,
    }
}

pub async fn connect(
    endpoint: Endpoint<'_>,
    timeout: Option<Duration>,
    bufs: fulcrum_config::SocketBuffers,
    keepalive: fulcrum_config::TcpKeepAlive,
) -> io::Result<Stream> {
    let attempt = async {
        match endpoint {
            Endpoint::Inet(addr) => Stream::connect_tcp(addr, bufs, keepalive).await,
            Endpoint::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
        }
    };
    match timeout {
        Some(d) => tokio::time::timeout(d, attempt)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "connect timeout"))),
        None => attempt.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backend `b` of a configuration with these server lines and options.
    fn backend(lines: &str) -> Arc<Backend> {
        let text = format!(
            "defaults\n mode tcp\n timeout client 1s\n timeout server 1s\n \
             timeout connect 300ms\nfrontend f\n bind 127.0.0.1:8000\n default_backend b\nbackend b\n{lines}"
        );
        let src = fulcrum_config::Source { name: "t.cfg".into(), text };
        let loaded = fulcrum_config::load(&[src], &|_| None).expect("config loads");
        let plan = crate::plan::build(&loaded.config, Default::default()).expect("plan builds");
        let be = plan.proxies.backends.iter().find(|b| b.name == "b").expect("backend b");
        Arc::clone(be)
    }

    const TWO: &str = " server s1 127.0.0.1:1\n server s2 127.0.0.1:2\n";
    const REFUSED: io::ErrorKind = io::ErrorKind::ConnectionRefused;
    const TIMED_OUT: io::ErrorKind = io::ErrorKind::TimedOut;

    #[test]
    fn without_redispatch_retries_stay_on_the_server_pausing_after_a_refusal() {
        let be = backend(&format!(" retries 2\n{TWO}"));
        let pause = Some(Duration::from_millis(300));
        assert_eq!(after_failure(&be, None, 2, REFUSED), Retry::SameServer { pause });
        assert_eq!(after_failure(&be, None, 1, REFUSED), Retry::SameServer { pause });
        assert_eq!(after_failure(&be, None, 0, REFUSED), Retry::GiveUp);
        // A timed-out attempt waited `timeout connect` already: no pause.
        assert_eq!(after_failure(&be, None, 2, TIMED_OUT), Retry::SameServer { pause: None });
        // The pause is at most a second.
        let slow = backend(&format!(" retries 2\n timeout connect 5s\n{TWO}"));
        let second = Some(Duration::from_secs(1));
        assert_eq!(after_failure(&slow, None, 1, REFUSED), Retry::SameServer { pause: second });
    }

    #[test]
    fn redispatch_moves_every_retry_unless_a_cookie_or_a_key_ties_the_server() {
        let be = backend(&format!(" retries 3\n option redispatch\n{TWO}"));
        assert_eq!(after_failure(&be, None, 3, REFUSED), Retry::OtherServer);
        assert_eq!(after_failure(&be, None, 0, REFUSED), Retry::GiveUp);
        // Tied by a cookie: the same server until the last retry.
        let pause = Some(Duration::from_millis(300));
        assert_eq!(after_failure(&be, Some(0), 3, REFUSED), Retry::SameServer { pause });
        assert_eq!(after_failure(&be, Some(0), 1, REFUSED), Retry::OtherServer);
        // An algorithm that maps a key to one server ties it the same way.
        let hashed = backend(&format!(" retries 3\n option redispatch\n balance source\n{TWO}"));
        assert_eq!(after_failure(&hashed, None, 2, REFUSED), Retry::SameServer { pause });
        assert_eq!(after_failure(&hashed, None, 1, REFUSED), Retry::OtherServer);
    }

    #[test]
    fn a_servers_tcp_ut_reaches_its_connections() {
        let be = backend(" server s1 127.0.0.1:1 tcp-ut 2500\n server s2 127.0.0.1:2\n");
        assert_eq!((be.servers[0].tcp_ut, be.servers[1].tcp_ut), (Some(2500), None));
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
        let c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let s = Stream::accepted_tcp(c);
        crate::connection::user_timeout(&s, 2500);
        let set = socket2::SockRef::from(&s).tcp_user_timeout().expect("getsockopt");
        assert_eq!(set, Some(Duration::from_millis(2500)));
    }

    #[test]
    fn redispatch_needs_another_usable_server() {
        let one = " retries 3\n option redispatch\n server s1 127.0.0.1:1\n \
                   server s2 127.0.0.1:2 disabled\n";
        let be = backend(one);
        assert_eq!(be.usable_servers(), 1);
        let pause = Some(Duration::from_millis(300));
        assert_eq!(after_failure(&be, None, 1, REFUSED), Retry::SameServer { pause });
    }
}
