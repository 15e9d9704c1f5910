//! The server side of a transaction: a connection (own, pooled or new), sending the request
//! and its body, reading the response head, moving bodies (`pump`), tunnels.
//! Must not touch: rules and answers (the transaction decides from what this returns).

use super::*;
use crate::connection::ServerLink as _;
use crate::http::h2::upstream;

/// A client's half-close this soon after its request is taken as sent with it.
const WITH_THE_REQUEST: Duration = Duration::from_millis(2);

impl Session<'_> {
    /// Sends the request (head, then body) and reads the final response head into `self.t.resp`,
    /// forwarding interim (1xx) responses. Returns whether the request body was fully sent.
    pub(super) async fn exchange(
        &mut self,
        mut sc: ServerConn,
        info: &fulcrum_http::Info,
        be: &Backend,
    ) -> Exchange {
        let st = be.timeouts.server;
        let ct = self.fe.timeouts.client;
        self.trace_request_head(info.body);
        if let Err(x) = self.send_head(&sc, info, be, (st, ct)).await {
            return x;
        }
        let mut body_done = info.body == Body::None;
        self.body_unread = false;
        self.scanner.reset();
        // A new connection's bytes: nothing of an earlier try's response is resumed.
        self.t.resp.start_over();
        self.t.resp_data_htx = None;
        let mut got_any = false;
        self.body_left = info.body;
        loop {
            if !body_done {
                let before = self.t.o.bytes_in;
                // As HAProxy: once the request is on its way, `timeout server` bounds a
                // stalled upload too (the server owes an answer: 504 when it expires).
                let filtered = self.t.vars.bwlim.as_ref().is_some_and(|b| !b.up.is_empty())
                    || self.t.trace.is_some();
                let x = if filtered {
                    cold(self.filtered_request_body(&mut sc, st.or(ct), st)).await
                } else {
                    let timer = (self.ctimer.as_mut(), st.or(ct));
                    let watch = Some((&sc.stream, &mut sc.buf));
                    let (body, scanner) = (self.body_left, &mut self.scanner);
                    let (from, fbuf, moved) =
                        (&self.client, &mut self.cbuf, &mut self.t.o.bytes_in);
                    pump(from, fbuf, &sc.stream, &[], body, scanner, timer, st, watch, moved).await
                };
                // What is left of a sized body, should the upload resume.
                if let Body::Length(n) = self.body_left {
                    self.body_left = Body::Length(n.saturating_sub(self.t.o.bytes_in - before));
                }
                match x {
                    Xfer::Done => body_done = true,
                    Xfer::Interrupted => {}
                    Xfer::Invalid => return Exchange::BadRequest,
                    Xfer::ReadTimeout if st.is_some() => return Exchange::ServerTimeout,
                    Xfer::ReadEof | Xfer::ReadError | Xfer::ReadTimeout => {
                        self.note(format_args!("request body: {x}"));
                        return Exchange::ClientGone;
                    }
                    Xfer::WriteError | Xfer::WriteTimeout => return Exchange::ServerGone,
                }
            }
            // Read until a response head is complete (or, during an upload, until the server
            // said something: then the upload resumes if it was only an interim answer).
            loop {
                // An HTTP/2 server's final response head comes built from its HEADERS frame
                // (not written as text to be parsed again), unless a parse would refuse it.
                if sc.buf.is_empty() {
                    let built = match &sc.stream {
                        Peer::H2Up(v) => v.take_response_head(&mut self.t.resp, &self.http.limits),
                        Peer::Fcgi(v) => v.take_response_head(&mut self.t.resp, &self.http.limits),
                        _ => None,
                    };
                    if built.is_some() {
                        return Exchange::Response(sc, body_done);
                    }
                }
                if !sc.buf.is_empty() {
                    got_any = true;
                    let lenient = sc.be.http.as_ref().is_some_and(|h| h.accept_invalid_resp);
                    self.t.resp.set_lenient(lenient);
                    match self.t.resp.parse_response(sc.buf.data(), &self.http.limits) {
                        Ok(Some(n)) => {
                            if let Some(e) = self.t.resp.tolerated() {
                                self.capture_response(&sc, Some(e));
                            }
                            fulcrum_http::clean_connection(&mut self.t.resp);
                            let status = self.t.resp.status();
                            if (100..200).contains(&status) && status != 101 {
                                // Interim: forward as is (100 Continue, 103 Early Hints).
                                let head = &sc.buf.data()[..n];
                                if answer::send_text(&self.client, head, ct).await.is_err() {
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
                        Ok(None) if sc.buf.is_full() => {
                            self.capture_response(&sc, None);
                            return Exchange::BadResponse;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            self.note(format_args!("invalid response: {e}"));
                            self.capture_response(&sc, Some(e));
                            return Exchange::BadResponse;
                        }
                    }
                }
                if !body_done && sc.buf.is_empty() {
                    break; // back to the upload
                }
                // `timeout server` bounds each wait for the server's bytes.
                let watch = be.abortonclose && body_done && !self.client_shut();
                let read = fill_or_head(&mut sc.buf, &sc.stream);
                let waited = timer::within(self.stimer.as_mut(), st, read);
                // `option abortonclose`: a client that leaves while the response is awaited
                // abandons it (the server connection closes; HAProxy logs 400 `CH`).
                let got = if watch {
                    tokio::select! {
                        biased;
                        r = waited => Some(r),
                        _ = tcp::client_left(self.client.peer_closed()) => None,
                    }
                } else {
                    Some(waited.await)
                };
                let Some(got) = got else {
                    self.t.o.status = Some(400);
                    return Exchange::ClientGone;
                };
                let n = match got {
                    Ok(r) => r,
                    Err(_) => return Exchange::ServerTimeout,
                };
                if let Err(e) = &n {
                    self.note(format_args!("response head: {e}"));
                }
                // A stream to an HTTP/2 server that failed was processed, unless the server
                // refused it: only that one goes again (never a request the server may have
                // acted on).
                // (A FastCGI request is taken too, unless its connection was an idle one the
                // application had closed: that one goes again on a new connection.)
                let refused =
                    matches!(&n, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused);
                let h2_taken = match sc.stream {
                    Peer::H2Up(_) => !refused,
                    Peer::Fcgi(_) => sc.requests == 0,
                    _ => false,
                };
                match n {
                    Ok(0) | Err(_) if !got_any && !h2_taken => return Exchange::RetryFresh,
                    Ok(0) | Err(_) => return Exchange::ServerGone,
                    Ok(_) => {}
                }
            }
        }
    }

    /// Sends the request's head: as HTTP/1 text, or taken parsed by an HTTP/2 stream or a
    /// FastCGI request (which get no text). `Err`: the exchange's end.
    async fn send_head(
        &mut self,
        sc: &ServerConn,
        info: &fulcrum_http::Info,
        be: &Backend,
        (st, ct): (Option<Duration>, Option<Duration>),
    ) -> Result<(), Exchange> {
        if let Peer::Fcgi(_) = sc.stream {
            return cold(self.send_fcgi_head(sc, info, be, ct)).await;
        }
        // A stream to an HTTP/2 server takes the head as parsed: no HTTP/1 text is written.
        let parsed = match &sc.stream {
            Peer::H2Up(up) => up.send_parsed_head(&self.t.req, self.h2_conn.is_some()),
            _ => Ok(false),
        };
        let sent = match parsed {
            Ok(true) => Ok(()),
            Ok(false) => {
                // The head's text, written once for all tries (a rule may have set it).
                if self.out.is_empty() {
                    self.write_request_head();
                }
                write_all_within(&sc.stream, &self.out, st).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            self.note(format_args!("request head not sent: {e}"));
            return Err(Exchange::RetryFresh);
        }
        Ok(())
    }

    /// The client has already shut its side (a half-close after its request).
    fn client_shut(&self) -> bool {
        self.client.shut_by_peer()
    }

    /// Gets a server slot and a connection for it: the session's own connection to that
    /// server, an idle one from the pool as `reuse` allows, or a new one.
    /// `option prefer-last-server`: the server of the connection this session keeps (a
    /// private one: `http-reuse never`, a PROXY header), when it is in `be`, usable (with
    /// `max-keep-alive-queue`, not too busy), and the algorithm does not map a key to a server
    /// (HAProxy's `assign_server()`).
    pub(super) fn last_server(&self, be: &Arc<Backend>) -> Option<usize> {
        if !be.prefer_last_server || be.maps_keys() {
            return None;
        }
        let sc = self.own.as_ref()?;
        let i = sc.idx;
        // `max-keep-alive-queue`: kept only with room, or fewer waiting than it says.
        let queue_ok = |n: u32| be.servers[i].has_free_slot(be.limit(i)) || be.server_queued(i) < n;
        let ok = Arc::ptr_eq(&sc.be, be) && be.servers[i].lb_usable();
        (ok && be.max_ka_queue.is_none_or(queue_ok)).then_some(i)
    }

    pub(super) async fn server_conn(
        &mut self,
        be: &Arc<Backend>,
        key: Option<PickKey<'_>>,
        persist: Option<usize>,
        reuse: Reuse,
        fresh_only: bool,
        check: bool,
    ) -> Result<(ServerSlot, ServerConn), tcp::Ending> {
        let persist = persist.or_else(|| self.last_server(be));
        let first = self.requests == 0;
        let watch = be.abortonclose && !self.client_shut();
        let open = tcp::Opening {
            src: self.peer,
            dst: self.local,
            client: Some(conn_of(self.h2_conn, &self.client)),
            req: Some(&self.t.req),
            unique_id: self.t.vars.unique_id.as_deref().and_then(|u| std::str::from_utf8(u).ok()),
            abortonclose: be.abortonclose,
            upgrade: self.t.req.info().upgrade,
        };
        // An upgrade (WebSocket) takes HTTP/2 only as the server's `ws` allows (extended
        // CONNECT); else it goes over HTTP/1.1 whatever the server's protocol.
        let upgrade = self.t.req.info().upgrade;
        let h2_ok = |srv: &crate::server::Server| !upgrade || srv.ws_h2;
        let own = &mut self.own;
        let mut idle = |idx: usize| -> Option<(Peer, u32)> {
            if fresh_only {
                return None;
            }
            // A stream on an HTTP/2 connection of this worker with room for it, in every
            // reuse mode but `never` (HAProxy's "available" connections, first request too).
            let srv = &be.servers[idx];
            // (Not with a PROXY header: it speaks for one client.)
            if srv.may_h2 && reuse != Reuse::Never && h2_ok(srv) && srv.send_proxy.is_none() {
                let sni =
                    srv.traffic_tls().and_then(|t| t.sni.as_ref()).and_then(|_| open.sni(srv));
                if let Some(found) = upstream::take(be, idx, sni.as_deref()) {
                    return Some(found);
                }
            }
            // A request on a FastCGI connection of this worker shared by several (`mpxs-conns`
            // under `http-reuse always|aggressive`).
            if srv.proto == Some(fulcrum_config::MuxProto::Fcgi) && reuse != Reuse::Never {
                if let Some(found) = super::to_fcgi::shared_fcgi(be, idx, reuse) {
                    return Some(found);
                }
            }
            if let Some(sc) = own.take() {
                let clean = !check || crate::http::io::idle_is_clean(&sc.stream);
                if Arc::ptr_eq(&sc.be, be) && sc.idx == idx && clean {
                    return Some((sc.stream, sc.requests));
                }
                *own = Some(sc);
            }
            let min_requests = match reuse {
                Reuse::Never => return None,
                Reuse::Safe if first => return None,
                // `aggressive`: a first request takes only a connection proven reusable (it
                // carried a later request of some client connection before).
                Reuse::Aggressive if first => 2,
                _ => 0,
            };
            pool::take(be, idx, min_requests, check).map(|i| (Peer::Bytes(i.stream), i.requests))
        };
        // (A macro, not a variable: awaited where it is made, the future is not moved.)
        macro_rules! connecting {
            () => {
                tcp::connect_server_reusing(
                    be,
                    key,
                    persist,
                    self.dst_port,
                    &open,
                    &mut self.t.o,
                    &mut idle,
                )
            };
        }
        // `option abortonclose`: a client that leaves while its request waits for a slot or
        // a connection abandons it (`CQ`, `CC`). As in HAProxy, a client that had already
        // half-closed when its request was read still gets its answer.
        let (slot, stream, requests) = if watch {
            // A half-close that follows the request at once came with it (HAProxy reads them
            // together and keeps the request): only a later one abandons it.
            let since = Instant::now();
            let mut connecting = cold(connecting!());
            tokio::select! {
                biased;
                r = &mut connecting => r,
                _ = tcp::client_left(self.client.peer_closed()) => {
                    if since.elapsed() < WITH_THE_REQUEST {
                        connecting.await
                    } else {
                        Err(tcp::Ending::ClientAborted)
                    }
                }
            }
        } else {
            // Usually a free slot and an idle connection, found without a future; else the
            // queue, a connect, retries: out of line.
            match tcp::reuse_at_once(be, key, persist, &open, &mut self.t.o, &mut idle)? {
                tcp::AtOnce::Reused(slot, stream, requests) => Ok((slot, stream, requests)),
                tcp::AtOnce::Continue(from) => {
                    let port = self.dst_port;
                    let o = &mut self.t.o;
                    cold(tcp::connect_after(be, key, persist, port, &open, o, &mut idle, from))
                        .await
                }
            }
        }?;
        // A new connection to a server speaking HTTP/2: the transaction gets its first stream.
        let srv = slot.server();
        let stream = match stream {
            Peer::Bytes(stream)
                if srv.may_h2 && h2_ok(srv) && upstream::speaks_h2(srv.proto, &stream) =>
            {
                // The SNI as `take` looks it up (not the name the TLS layer could use).
                let sni =
                    srv.traffic_tls().and_then(|t| t.sni.as_ref()).and_then(|_| open.sni(srv));
                let shared = reuse != Reuse::Never && srv.send_proxy.is_none();
                let share =
                    shared.then(|| upstream::Share { be, idx: slot.index(), sni: sni.as_deref() });
                let counters = Some(Arc::clone(&be.counters));
                cold(upstream::start(stream, self.shared.h2, share, counters))
                    .await
                    .map_err(|e| tcp::Ending::ConnectFailed(e.kind(), None))?
            }
            // A FastCGI server: the request goes as FastCGI records.
            Peer::Bytes(stream) if srv.proto == Some(fulcrum_config::MuxProto::Fcgi) => {
                match be.http.as_ref().and_then(|h| h.fcgi.clone()) {
                    Some(app) => {
                        super::to_fcgi::fcgi_peer(stream, app, be, slot.index(), reuse, requests)
                            .map_err(|e| tcp::Ending::ConnectFailed(e.kind(), None))?
                    }
                    None => Peer::Bytes(stream),
                }
            }
            stream => stream,
        };
        // `connect` / `reuse` of the stats: a connection that served requests before is reused.
        for c in [&be.counters, &slot.server().counters] {
            Counters::inc(if requests > 0 { &c.reuses } else { &c.connects });
        }
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
    /// The rest of the request's body to the server through the filters that see it
    /// (`bwlim-in` limits, `filter trace`); `read_timeout` bounds the client's silences.
    async fn filtered_request_body(
        &mut self,
        sc: &mut ServerConn,
        read_timeout: Option<Duration>,
        st: Option<Duration>,
    ) -> Xfer {
        let limits = self.t.vars.bwlim.as_deref_mut().filter(|b| !b.up.is_empty());
        let limits = limits.map(|b| &mut b.up[..]);
        let trace = self.t.trace.as_deref().map(|t| (t, crate::http::trace::Channel::Request));
        let f = pieces::Filters { limits, trace, ..Default::default() };
        let timer = (self.ctimer.as_mut(), read_timeout);
        let watch = Some((&sc.stream, &mut sc.buf));
        let (body, scanner) = (self.body_left, &mut self.scanner);
        let (from, fbuf, moved) = (&self.client, &mut self.cbuf, &mut self.t.o.bytes_in);
        let to = &sc.stream;
        filtered_pump(from, fbuf, to, &[], body, scanner, timer, st, watch, moved, f).await
    }

    /// The trace filters see the request's head as it goes on (and its end when it has no
    /// payload).
    pub(super) fn trace_request_head(&mut self, body: Body) {
        if let Some(t) = self.t.trace.as_deref_mut() {
            let first = t.headers(crate::http::trace::Channel::Request, &self.t.req);
            if first && matches!(body, Body::None | Body::Length(0)) {
                t.no_payload(crate::http::trace::Channel::Request);
            }
        }
    }

    pub(super) fn keep_server_conn(&mut self, sc: ServerConn) {
        if let Peer::H2Up(_) = sc.stream {
            return; // its stream ends; the connection stays the worker's
        }
        // `option keep-conn`: a FastCGI connection whose request ended cleanly carries the
        // next one (kept as bytes until then); else the application closes it.
        let sc = if let Peer::Fcgi(_) = sc.stream {
            let Some(sc) = super::to_fcgi::fcgi_reusable(sc) else { return };
            sc
        } else {
            sc
        };
        let srv = &sc.be.servers[sc.idx];
        if srv.pool_max_conn == 0 {
            return sc.stream.discard(); // no idle connections kept for this server
        }
        // `max-reuse`: a connection that carried its last request closes (dropped: a FIN).
        if sc.requests > srv.max_reuse {
            return;
        }
        // A PROXY header speaks for one client connection (and with the unique-id TLV, for one
        // request): such a connection stays private to its client, or is not reused at all.
        let proxied = srv.send_proxy.as_ref();
        if proxied.is_some_and(|sp| sp.options.iter().any(|o| o == "unique-id")) {
            return sc.stream.discard();
        }
        let reuse = sc.be.http.as_deref().map(|h| h.reuse).unwrap_or(self.http.reuse);
        if reuse != Reuse::Never && proxied.is_none() {
            return self.release_server_conn(sc);
        }
        if let Some(old) = self.own.replace(sc) {
            self.release_server_conn(old);
        }
    }

    /// A connection this session no longer needs: to the worker's pool unless reuse is off.
    pub(super) fn release_server_conn(&self, sc: ServerConn) {
        let Peer::Bytes(stream) = sc.stream else {
            return; // an HTTP/2 stream ends; its connection stays the worker's
        };
        let reuse = sc.be.http.as_deref().map(|h| h.reuse).unwrap_or(self.http.reuse);
        let shared = sc.be.servers[sc.idx].send_proxy.is_none();
        if reuse != Reuse::Never && shared && sc.buf.is_empty() && !crate::lifecycle::stopping() {
            pool::put(&sc.be, sc.idx, stream, sc.requests);
        } else if sc.buf.is_empty() {
            pool::discard(stream); // idle between requests: nothing is lost by a reset
        }
    }

    /// Turns the connection into a tunnel (after 101 Switching Protocols or a CONNECT 2xx).
    pub(super) async fn tunnel(&mut self, sc: ServerConn, be: &Backend, slot: &ServerSlot) {
        self.body_unread = false;
        let ok = write_all(&sc.stream, self.cbuf.data()).await.is_ok()
            && write_all(&self.client, sc.buf.data()).await.is_ok();
        self.cbuf.clear();
        if !ok {
            return;
        }
        let t = tcp::tunnel_timeouts(self.fe, be);
        let killed = || slot.ended_by().is_some();
        let limits = self.t.vars.bwlim.take();
        let (end, moved) = tunnel::run(&self.client, &sc.stream, t, &killed, limits).await;
        self.t.o.bytes_in += moved.client_to_server;
        self.t.o.bytes_out += moved.server_to_client;
        tcp::Ending::Tunnel(end).record(&mut self.t.o);
        if let Some(by) = slot.ended_by() {
            self.t.o.ended_by_state_change(by, Phase::Done);
        }
    }
}

pub(super) enum Exchange {
    /// The final response head is in `Session::resp`; `bool`: the request body was fully sent.
    Response(ServerConn, bool),
    /// The connection failed before any response byte (a reused one may be retried fresh).
    RetryFresh,
    BadResponse,
    /// The server closed (or failed) after part of a response, or while the request was sent.
    ServerGone,
    ServerTimeout,
    ClientGone,
    /// The request body turned out invalid (bad chunk) after the head was sent.
    BadRequest,
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
pub(super) async fn pump(
    from: &Peer,
    fbuf: &mut RecvBuf,
    to: &Peer,
    mut head: &[u8],
    body: Body,
    scanner: &mut ChunkedScanner,
    (mut read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    mut watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
) -> Xfer {
    let mut remaining = match body {
        Body::None | Body::Length(0) => return Xfer::Done,
        Body::Length(n) => n,
        _ => u64::MAX,
    };
    // When either side is HTTP/2, the body goes as pieces (see `pieces`): an HTTP/2 side
    // gives them once no byte of it waits here as HTTP/1, and takes them once no HTTP/1 chunk
    // of it was begun; an HTTP/1 side's bytes are taken apart or framed on the way.
    let boundary =
        matches!(body, Body::Length(_)) || (body == Body::Chunked && scanner.at_chunk_start());
    let h2_gives = fbuf.is_empty() && boundary && from.gives_pieces();
    let h2_takes = head.is_empty() && to.takes_pieces();
    let h1 = |p: &Peer| matches!(p, Peer::Bytes(_));
    if h2_takes && h1(from) && fbuf.len() as u64 >= remaining {
        // A sized body all here (a small answer read with its head): one last piece, given
        // now if the stream takes it (no transfer set up).
        let noop = &mut std::task::Context::from_waker(std::task::Waker::noop());
        if let Poll::Ready(Ok(())) = to.poll_write_ready(noop) {
            let n = remaining as usize;
            if to.send_data(&fbuf.data()[..n], true).is_err() {
                return Xfer::WriteError;
            }
            *moved += n as u64;
            fbuf.consume(n);
            return Xfer::Done;
        }
    }
    if h2_gives && h2_takes {
        let sized = matches!(body, Body::Length(_));
        // What came already goes at once, with no transfer set up (a gRPC call's bodies).
        if let Some(x) = pieces::relay_ready(from, to, sized, &mut remaining, moved) {
            return x;
        }
        let timer = (read_timer, read_timeout);
        let left = (sized, remaining);
        return cold(pieces::between_h2(from, to, left, timer, write_timeout, watch, moved)).await;
    }
    if (h2_gives && h1(to)) || (h2_takes && h1(from)) {
        let timer = (read_timer, read_timeout);
        let (wt, none) = (write_timeout, Default::default());
        return cold(as_pieces(from, fbuf, to, head, body, scanner, timer, wt, watch, moved, none))
            .await;
    }
    // A chunked body not in canonical form goes as the scanner writes it again (rare: no
    // allocation otherwise).
    let mut rewritten = Vec::new();
    loop {
        if !fbuf.is_empty() {
            let data = fbuf.data();
            let before = scanner.payload();
            let mut rewrite = false;
            let (n, done) = match body {
                Body::Length(_) => {
                    let n = (data.len() as u64).min(remaining) as usize;
                    remaining -= n as u64;
                    (n, remaining == 0)
                }
                Body::Chunked => {
                    let mut from = scanner.clone();
                    match scanner.scan(data) {
                        Ok(s) if s.canonical => (s.accepted, s.done),
                        Ok(s) => {
                            rewrite = true;
                            rewritten.clear();
                            from.render(&data[..s.accepted], &mut rewritten);
                            (s.accepted, s.done)
                        }
                        Err(_) => return Xfer::Invalid,
                    }
                }
                _ => (data.len(), false),
            };
            let out: &[u8] = if rewrite { &rewritten } else { &data[..n] };
            // Data bytes (a chunked body's framing is not counted, as HAProxy counts).
            let data_bytes = match body {
                Body::Chunked => scanner.payload() - before,
                _ => n as u64,
            };
            if n > 0 || !head.is_empty() {
                let more = !done && fbuf.is_full();
                match send_within(to, head, out, write_timeout, more).await {
                    Ok(()) => *moved += data_bytes,
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
        match pieces::fill_watching(fbuf, from, &mut watch, (read_timer.as_mut(), read_timeout))
            .await
        {
            Ok(0) if body == Body::UntilClose => return Xfer::Done,
            Ok(0) => return Xfer::ReadEof,
            Ok(_) => {}
            Err(x) => return x,
        }
    }
}

/// A body through `filters` (compression, the cache store, bandwidth limits, trace filters):
/// [`pump`] when none sees it, else as pieces (see [`as_pieces`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn filtered_pump(
    from: &Peer,
    fbuf: &mut RecvBuf,
    to: &Peer,
    head: &[u8],
    body: Body,
    scanner: &mut ChunkedScanner,
    timer: (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
    filters: pieces::Filters<'_>,
) -> Xfer {
    let (t, w) = (timer, write_timeout);
    match filters.is_empty() {
        true => pump(from, fbuf, to, head, body, scanner, t, w, watch, moved).await,
        false => as_pieces(from, fbuf, to, head, body, scanner, t, w, watch, moved, filters).await,
    }
}

/// [`pump`] as pieces (see `pieces`) through `filters`: a body with an HTTP/2 side, or one
/// that filters see. `head` as for [`pump`] (never with an HTTP/2 sink). (The rest of an
/// HTTP/2 body already partly buffered as HTTP/1 goes unfiltered, by `pump`.)
#[allow(clippy::too_many_arguments)]
async fn as_pieces(
    from: &Peer,
    fbuf: &mut RecvBuf,
    to: &Peer,
    head: &[u8],
    body: Body,
    scanner: &mut ChunkedScanner,
    timer: (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
    filters: pieces::Filters<'_>,
) -> Xfer {
    let sized = match body {
        Body::None | Body::Length(0) => return Xfer::Done,
        Body::Length(n) => Some(n),
        _ => None,
    };
    let boundary = sized.is_some() || (body == Body::Chunked && scanner.at_chunk_start());
    let source = match (from.gives_pieces(), fbuf.is_empty() && boundary) {
        (true, true) => pieces::Source::Pieces(from, sized),
        (true, false) => {
            let (t, w) = (timer, write_timeout);
            return pump(from, fbuf, to, head, body, scanner, t, w, watch, moved).await;
        }
        (false, _) => pieces::Source::H1 { peer: from, buf: fbuf, body, scanner },
    };
    let sink = match head.is_empty() && to.takes_pieces() {
        true => pieces::Sink::Pieces(to),
        false => pieces::Sink::H1 { peer: to, head, chunked: body == Body::Chunked },
    };
    pieces::pump(source, sink, timer, write_timeout, watch, moved, filters).await
}

/// Reads a message body to its end and drops it: the body a server sends for a request whose
/// method a rule rewrote from HEAD (the client gets none), so that its connection can carry
/// the next request.
pub(super) async fn drain(
    from: &Peer,
    buf: &mut RecvBuf,
    body: Body,
    scanner: &mut ChunkedScanner,
    (mut timer, timeout): (Pin<&mut Timer>, Option<Duration>),
) -> Xfer {
    let mut remaining = match body {
        Body::None | Body::Length(0) => return Xfer::Done,
        Body::Length(n) => n,
        _ => u64::MAX,
    };
    loop {
        if !buf.is_empty() {
            let data = buf.data();
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
            buf.consume(n);
            if done {
                return Xfer::Done;
            }
            if n == 0 && buf.is_full() {
                return Xfer::Invalid;
            }
        }
        match timer::within_io(timer.as_mut(), timeout, buf.fill_streaming(from)).await {
            Ok(0) if body == Body::UntilClose => return Xfer::Done,
            Ok(0) => return Xfer::ReadEof,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Xfer::ReadTimeout,
            Err(_) => return Xfer::ReadError,
        }
    }
}

/// Both bodies of an HTTP/2 transaction at once: the response's (`down`, which decides the
/// outcome) and the rest of the request's (`up`), as a gRPC bidirectional call needs (each
/// message may wait for the answer to the one before). The request body stops when the
/// response ends first (the stream's view ends it). HTTP/1 transactions do not come here: an
/// early response ends their upload, as before.
pub(super) async fn duplex(
    down: impl std::future::Future<Output = Xfer>,
    up: impl std::future::Future<Output = Xfer>,
) -> Xfer {
    let mut down = std::pin::pin!(down);
    let mut up = std::pin::pin!(up);
    let mut up_done = false;
    loop {
        tokio::select! {
            biased;
            x = &mut down => return x,
            x = &mut up, if !up_done => match x {
                // The client left mid-body: the transaction ends (its server stream is reset
                // as it goes) rather than waiting for an answer that needs the rest.
                Xfer::ReadEof | Xfer::ReadError | Xfer::ReadTimeout => return Xfer::WriteError,
                Xfer::Invalid => return Xfer::Invalid,
                // Done, or the server takes no more of it (it answered): the answer goes on.
                _ => up_done = true,
            },
        }
    }
}

/// `observe layer7`: a server's answer counts toward its health (nothing for servers that do
/// not observe their HTTP answers).
#[inline(never)]
pub(super) fn observe_l7(be: &Backend, idx: usize, failed: bool, what: &'static str) {
    let srv = &be.servers[idx];
    if srv.policy.observe == Some(fulcrum_config::Observe::Layer7) && srv.observed(failed) {
        be.change_server(idx, crate::backend::status::Change::Observed { what });
    }
}

/// Waits for a server's bytes (see [`RecvBuf::fill`]), or for an HTTP/2 server's response
/// head, which is taken built at the top of the response loop: `Ok(n)` bytes read, `Ok(1)`
/// for a head ready (nothing read).
async fn fill_or_head(buf: &mut RecvBuf, s: &Peer) -> std::io::Result<usize> {
    if let (Peer::H2Up(_) | Peer::Fcgi(_), true) = (s, buf.is_empty()) {
        std::future::poll_fn(|cx| s.poll_read_ready(cx)).await?;
        if s.has_response_head() {
            return Ok(1);
        }
    }
    buf.fill(s).await
}
