//! One transaction's analysers, in HAProxy's order: tcp-request content and monitor-uri,
//! the frontend's then the backend's http-request rules, backend choice, the request as it goes
//! to the server, server choice, then the response's rules and its way back to the client.
//! Must not touch: sockets beyond what `exchange` and `answer` offer.

use super::*;

/// What a response head says for the rest of its transaction.
struct Answered {
    /// As the server answered it (before any rule).
    status: u16,
    resp_body: Body,
    /// The connection turns into a tunnel (101 to an upgrade, 2xx to CONNECT).
    tunnel: bool,
    /// The body of a response to a method rewritten from HEAD: read and dropped.
    skipped: Option<Body>,
    /// The server's connection may carry another request.
    server_keep: bool,
}

impl Session<'_> {
    /// One request/response exchange, the request head being in `self.req`.
    pub(super) async fn transaction(&mut self) -> Next {
        self.vars.end_transaction();
        self.sync_addrs();
        self.vars.first_req = self.requests == 0;
        let spec = &self.fe.log.captures;
        if !spec.is_empty() {
            self.vars.caps.reset(spec);
            self.vars.caps.take_from(spec, &self.req, false);
        }
        let info = *self.req.info();
        self.body_unread = info.body != Body::None;
        let method = self.req.method();
        let version = self.req.version();
        let client_close = match version {
            Version::Http10 => !info.conn_keep_alive,
            _ => info.conn_close,
        };
        let fe = self.fe;

        // tcp-request content rules (the connection closes on reject).
        if !fe.rules.tcp_content.is_empty() && !self.tcp_content_accepts(&fe.rules, None) {
            self.note(format_args!("tcp-request content reject"));
            self.o.end(Cause::Proxy, Phase::Request);
            return Next::Close;
        }
        // Each tracked entry counts the request once (an `http-request` rule tracking one
        // later counts it then).
        if let Some(sc) = &self.vars.sc {
            sc.http_request();
        }
        // monitor-uri: answered here, before any rule.
        if let Some(uri) = &self.http.monitor_uri {
            // A monitor URI written as a path matches the path (and query) of an absolute-form
            // target too; an absolute one matches the whole target.
            let target = if uri.starts_with('/') {
                crate::rules::sample::pathq(&self.req)
            } else {
                self.req.target()
            };
            if target == uri.as_bytes() {
                let failing = {
                    let base = self.base(None);
                    let ctx = base.ctx(&self.req, None, &self.vars);
                    fe.rules.monitor_fail.iter().any(|c| c.eval(&fe.rules.acls, &ctx))
                };
                // HAProxy does not log monitoring requests.
                self.log.skip = true;
                return self.answer(if failing { 503 } else { 200 }, &info, None).await;
            }
        }
        // `option http-buffer-request`: the body (up to a buffer) is there before rules run.
        if self.http.buffer_request && info.body != Body::None {
            let t = self.http.timeouts.request.or(fe.timeouts.client).unwrap_or(Duration::MAX);
            cold(self.wait_for_body(&info, t.min(Duration::from_secs(3600)), None)).await;
        }
        self.make_unique_id(None, false);
        // Frontend rules, then legacy redirects.
        if any_request_rules(&fe.rules) {
            if let Some(next) = self.request_rules(&fe.rules, None, &info).await {
                return next;
            }
        }
        if fe.rules.stats.is_some() {
            if let Some(next) = self.stats_page(&fe.rules, None, &info).await {
                return next;
            }
        }
        // Backend choice.
        let Some(be) = self.choose_backend() else {
            self.o.end(Cause::Proxy, Phase::Request);
            return self.answer(503, &info, None).await;
        };
        Counters::inc(&be.counters.sessions);
        // The counters read it at the end too, logged or not.
        self.log.backend = Some(Arc::clone(&be));
        // Only a `mode tcp` frontend upgraded to HTTP can pick a tcp backend (for a later
        // request): as HAProxy, the stream fails and the connection closes without an answer.
        let Some(be_http) = be.http.as_deref() else {
            self.note(format_args!("tcp backend '{}' for an HTTP request: closing", be.name));
            self.o.end(Cause::Internal, Phase::Request);
            return Next::Close;
        };
        // A `listen` proxy is its own backend: its rules ran above already.
        if !self.is_own_backend(&be) {
            if !be.rules.tcp_content.is_empty() && !self.tcp_content_accepts(&be.rules, Some(&be)) {
                self.note(format_args!("tcp-request content reject (backend)"));
                Counters::inc(&be.counters.denied_req);
                Counters::inc(&fe.counters.denied_req);
                self.o.end(Cause::Proxy, Phase::Request);
                return Next::Close;
            }
            if any_request_rules(&be.rules) {
                if let Some(next) = self.request_rules(&be.rules, Some(&be), &info).await {
                    return next;
                }
            }
            if be.rules.stats.is_some() {
                if let Some(next) = self.stats_page(&be.rules, Some(&be), &info).await {
                    return next;
                }
            }
        }
        self.make_unique_id(Some(&be), true);
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

        let upgrade = self.edit_request_for_server(&info, version, conn_mode, be_http);
        let persist = self.persistence(&be, be_http);
        // `stick match|on` after a persistence cookie; `stick store-*` keys wait for the server.
        let mut stores = rules::stick::Stores::new();
        let persist = self.stick_match(&be, persist, &mut stores);

        // A chunked body already received must be valid before anything reaches a server.
        if info.body == Body::Chunked && !self.cbuf.is_empty() {
            let mut check = ChunkedScanner::new();
            if check.scan(self.cbuf.data()).is_err() {
                let mut i = info;
                i.conn_close = true;
                self.o.end(Cause::Proxy, Phase::Request);
                return self.answer(400, &i, Some(&be)).await;
            }
        }
        // The head as it goes to the server (once for all tries); rewrites must leave it within
        // a buffer, as in HAProxy.
        self.write_request_head();
        if self.out.len() > be_http.bufsize.min(self.http.bufsize) && !self.vars.strict_off {
            self.o.end(Cause::Internal, Phase::Request);
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
        let (slot, mut sc, body_done) = loop {
            // An idle connection is checked for a close by the server only when the request
            // could not be sent again (it has a body).
            let got =
                self.server_conn(&be, key, persist, be_http.reuse, fresh_only, !retryable).await;
            let (slot, sc) = match got {
                Ok(v) => v,
                Err(e) => {
                    self.note(format_args!("no server: {e:?}"));
                    let gone = matches!(e, tcp::Ending::ClientAborted);
                    e.record(&mut self.o);
                    if gone {
                        // No one to answer (`abortonclose`): status -1 in the log.
                        return Next::Close;
                    }
                    return self.answer(503, &info, Some(&be)).await;
                }
            };
            if let Some(name) = &be_http.send_name_header {
                // `http-send-name-header`: this try's server (HAProxy sets it at the last moment).
                let _ =
                    self.req.set_header(name.as_bytes(), be.servers[slot.index()].name.as_bytes());
                self.write_request_head();
            }
            let reused = sc.requests > 0;
            let exchanged = self.exchange(sc, &info, &be).await;
            if self.logs {
                self.o.marks.data = Some(crate::clock::now());
            }
            if matches!(exchanged, Exchange::Response(..)) && !self.fe.log.captures.is_empty() {
                self.vars.caps.take_from(&self.fe.log.captures, &self.resp, true);
            }
            // `retry-on` (L7 retries): only a request without body can be sent again, at most
            // `retries` times, each time on a new connection.
            let ro = &be_http.retry_on;
            let may_retry = retryable && l7_retries < be.retries;
            let retry = match &exchanged {
                // Issue 3: a reused connection that dies before answering is always retried.
                Exchange::RetryFresh if reused && retryable && !fresh_only => true,
                Exchange::RetryFresh => may_retry && ro.empty_response,
                Exchange::BadResponse | Exchange::ServerGone => may_retry && ro.junk_response,
                Exchange::ServerTimeout => may_retry && ro.response_timeout,
                Exchange::Response(_, true) => may_retry && ro.status(self.resp.status()),
                _ => false,
            };
            if retry {
                if !(reused && matches!(exchanged, Exchange::RetryFresh)) || fresh_only {
                    l7_retries += 1;
                }
                fresh_only = true;
                self.o.retries += 1;
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
                Exchange::RetryFresh | Exchange::BadResponse | Exchange::ServerGone => {
                    let (what, cause) = match exchanged {
                        Exchange::BadResponse => ("Invalid http response", Cause::Proxy),
                        _ => ("Close from server (http)", Cause::ServerAbort),
                    };
                    self.o.marks.data = None;
                    self.o.end(cause, Phase::Headers);
                    if let Some(by) = slot.ended_by() {
                        self.o.ended_by_state_change(by, Phase::Headers);
                    }
                    observe_l7(&be, idx, true, what);
                    Counters::inc(&be.counters.failed_responses);
                    return self.answer(502, &info, Some(&be)).await;
                }
                Exchange::ServerTimeout => {
                    self.o.marks.data = None;
                    self.o.end(Cause::ServerTimeout, Phase::Headers);
                    observe_l7(&be, idx, true, "Read timeout (http)");
                    return self.answer(504, &info, Some(&be)).await;
                }
                Exchange::ClientGone => {
                    self.o.marks.data = None;
                    self.o.end(Cause::ClientAbort, Phase::Headers);
                    return Next::Close;
                }
                Exchange::BadRequest => {
                    self.o.marks.data = None;
                    self.o.end(Cause::Proxy, Phase::Request);
                    let mut i = info;
                    i.conn_close = true;
                    return self.answer(400, &i, Some(&be)).await;
                }
            }
        };

        self.key = keybuf;
        // The response head is in `self.resp`.
        let Answered { status, resp_body, tunnel, skipped, mut server_keep } =
            self.response_facts(method, upgrade, body_done, conn_mode, &info);
        // A chunked response body already received must be valid before the head goes out.
        if resp_body == Body::Chunked && !sc.buf.is_empty() {
            let mut check = ChunkedScanner::new();
            if check.scan(sc.buf.data()).is_err() {
                drop(slot);
                drop(sc);
                self.o.end(Cause::Proxy, Phase::Headers);
                Counters::inc(&be.counters.failed_responses);
                return self.answer(502, &info, Some(&be)).await;
            }
        }
        if !be.rules.tcp_response.is_empty() {
            let server_name = be.servers[slot.index()].name.as_str();
            if !cold(self.tcp_response_accepts(&be, server_name)).await {
                drop(slot);
                drop(sc); // the server's response is abandoned with its connection
                Counters::inc(&be.counters.denied_resp);
                Counters::inc(&fe.counters.denied_resp);
                self.o.end(Cause::Proxy, Phase::Done);
                return Next::Close;
            }
        }
        if !be.rules.stick.is_empty() {
            let base = self.base(Some(&be));
            let ctx = base.ctx(&self.resp, Some(&self.req), &self.vars);
            rules::stick::on_response(&be.rules.stick, &be.rules.acls, &ctx, &mut stores);
            rules::stick::commit(&mut stores, slot.server());
        }
        // Response rules: backend's, then frontend's; a deny replaces the response.
        // Borrowed from the backend (a local `Arc`), not copied: no allocation per request.
        let be_ref: &Backend = &be;
        let server_name = be_ref.servers[slot.index()].name.as_str();
        if let Some(built) = self.response_rules(&be, Some(server_name), &mut sc).await {
            drop(slot);
            drop(sc); // the server's response is abandoned with its connection
                      // As HAProxy, the client's connection carries on when its request went whole.
            let mut i = info;
            i.conn_close |= !body_done;
            let cause = if matches!(built, Built::Bytes(_)) { Cause::Local } else { Cause::Proxy };
            self.o.end(cause, Phase::Headers);
            return match built {
                Built::Drop => Next::Close,
                Built::Status(status) => self.answer(status, &i, Some(&be)).await,
                Built::Bytes(bytes) => cold(self.answer_bytes(bytes, &i, Some(&be))).await,
            };
        }
        self.cookie_response(be_http, &slot, persist);
        let client_keep = self.edit_response_for_client(
            &info,
            body_done,
            client_close,
            conn_mode,
            (status, version),
            tunnel,
            resp_body,
        );
        self.after_response(Some(&be), Some(server_name));
        self.out.clear();
        self.resp.write_to(&mut self.out);
        if self.out.len() > self.http.bufsize && !self.vars.strict_off {
            // Rewrites made the head larger than a buffer: HAProxy fails the transaction.
            drop(slot);
            drop(sc);
            self.o.end(Cause::Internal, Phase::Headers);
            let mut i = info;
            i.conn_close = true;
            return self.answer(500, &i, Some(&be)).await;
        }
        // An HTTP/2 client's stream takes the head as parsed (not parsed again from its bytes).
        if let Peer::H2(view) = &self.client {
            if let Err(e) = view.send_head(&self.resp, self.out.len()) {
                self.note(format_args!("client write failed: {e}"));
                self.o.end(Cause::ClientAbort, Phase::Data);
                return Next::Close;
            }
        }
        // When body bytes came with the head, both leave in one `sendmsg` (see `pump`).
        let head_with_body =
            !tunnel && !sc.buf.is_empty() && !matches!(resp_body, Body::None | Body::Length(0));
        if !head_with_body {
            if let Err(e) = self.write_client_head().await {
                self.note(format_args!("client write failed: {e}"));
                self.o.end(Cause::ClientAbort, Phase::Data);
                return Next::Close;
            }
        }
        self.o.bytes_out +=
            if self.logs { crate::outcome::head_size(&self.resp) } else { self.out.len() as u64 };
        self.o.status = Some(status);
        if tunnel {
            cold(self.tunnel(sc, &be, &slot)).await;
            return Next::Close;
        }
        let st = be.timeouts.server;
        let ct = self.fe.timeouts.client;
        // On HTTP/2 (either side), a request body still arriving goes on beside the response.
        let duplex = !body_done && (self.h2_conn.is_some() || matches!(sc.stream, Peer::H2Up(_)));
        let mut req_scanner = if duplex { self.scanner.clone() } else { ChunkedScanner::new() };
        self.scanner.reset();
        let head: &[u8] = if head_with_body { &self.out } else { &[] };
        // (A macro, not a variable: awaited where it is made, the future is not moved.)
        macro_rules! down {
            () => {
                pump(
                    &sc.stream,
                    &mut sc.buf,
                    &self.client,
                    head,
                    resp_body,
                    &mut self.scanner,
                    (self.stimer.as_mut(), st),
                    ct,
                    None,
                    &mut self.o.bytes_out,
                )
            };
        }
        let xfer = if duplex {
            let up = pump(
                &self.client,
                &mut self.cbuf,
                &sc.stream,
                &[],
                self.body_left,
                &mut req_scanner,
                (self.ctimer.as_mut(), st.or(ct)),
                st,
                None,
                &mut self.o.bytes_in,
            );
            exchange::duplex(down!(), up).await
        } else {
            down!().await
        };
        let killed = if xfer == Xfer::Done { None } else { slot.ended_by() };
        drop(slot);
        if let Some(by) = killed {
            // The server's sessions were shut as it changed state: not the server's doing.
            self.o.ended_by_state_change(by, Phase::Data);
            return Next::Close;
        }
        if xfer != Xfer::Done {
            self.note(format_args!("response body: {xfer:?}"));
            let cause = match xfer {
                Xfer::ReadTimeout => Cause::ServerTimeout,
                Xfer::WriteError => Cause::ClientAbort,
                Xfer::WriteTimeout => Cause::ClientTimeout,
                _ => Cause::ServerAbort,
            };
            self.o.end(cause, Phase::Data);
            return Next::Close;
        }
        if let (Some(b), true) = (skipped, server_keep) {
            self.scanner.reset();
            let timer = (self.stimer.as_mut(), st);
            let x = exchange::drain(&sc.stream, &mut sc.buf, b, &mut self.scanner, timer).await;
            server_keep = x == Xfer::Done;
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

    /// What the response head says for the rest of the transaction (its hop-by-hop fields
    /// dropped on the way): see [`Answered`].
    // Called once per transaction: inlined, as it was written there.
    #[inline(always)]
    fn response_facts(
        &mut self,
        method: Method,
        upgrade: bool,
        body_done: bool,
        conn_mode: ConnMode,
        info: &fulcrum_http::Info,
    ) -> Answered {
        let status = self.resp.status();
        let resp_info = *self.resp.info();
        let resp_body = fulcrum_http::response_body(&self.resp, method);
        let tunnel = (status == 101 && upgrade) || (method == Method::Connect && status / 100 == 2);
        fulcrum_http::strip_hop_by_hop(&mut self.resp, status == 101);
        // The body a server sends for a method rewritten from HEAD never reaches the client:
        // it is read and dropped after the head went.
        let skipped = match self.req.method() {
            m if m == method => None,
            m => match fulcrum_http::response_body(&self.resp, m) {
                b @ (Body::Length(_) | Body::Chunked) => Some(b),
                _ => None,
            },
        };
        let server_keep = !tunnel
            && body_done
            && conn_mode == ConnMode::KeepAlive
            && !info.te_and_cl
            && resp_body != Body::UntilClose
            && match self.resp.version() {
                Version::Http10 => resp_info.conn_keep_alive,
                _ => !resp_info.conn_close,
            };
        Answered { status, resp_body, tunnel, skipped, server_keep }
    }

    /// The request as it goes to the server (HAProxy's `http_process_request`'s edits):
    /// hop-by-hop fields gone, `Connection` as the connection modes say, the target's default
    /// port dropped, the framing and the address headers set. Whether it asks for an upgrade.
    // Called once per transaction: inlined, as it was written there.
    #[inline(always)]
    fn edit_request_for_server(
        &mut self,
        info: &fulcrum_http::Info,
        version: Version,
        conn_mode: ConnMode,
        be_http: &HttpProxy,
    ) -> bool {
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
        upgrade
    }

    /// `stick match|on` (after a persistence cookie): the server a stick table names, else
    /// `persist`; `stick store-*` keys go into `stores` until the server is known.
    // Called once per transaction: inlined, as it was written there.
    #[inline(always)]
    fn stick_match(
        &self,
        be: &Arc<Backend>,
        persist: Option<usize>,
        stores: &mut rules::stick::Stores,
    ) -> Option<usize> {
        if be.rules.stick.is_empty() {
            return persist;
        }
        let base = self.base(Some(be));
        let ctx = base.ctx(&self.req, None, &self.vars);
        let r = &be.rules;
        let assigned = persist.is_some();
        rules::stick::on_request(&r.stick, &r.acls, &ctx, be, assigned, stores).or(persist)
    }

    /// Whether the client's connection stays open after this response, and the response's
    /// `Connection` and framing fields as that decision and the versions say (`status` as the
    /// server answered it, `version` the request's as it came).
    // Called once per transaction: inlined, as it was written there.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn edit_response_for_client(
        &mut self,
        info: &fulcrum_http::Info,
        body_done: bool,
        client_close: bool,
        conn_mode: ConnMode,
        (status, version): (u16, Version),
        tunnel: bool,
        resp_body: Body,
    ) -> bool {
        // An HTTP/1.0 response framed by Transfer-Encoding is faulty framing (RFC 9112 6.1):
        // the client connection closes after it, as HAProxy closes it.
        let faulty = self.resp.version() == Version::Http10 && resp_body == Body::Chunked;
        let client_keep = !tunnel
            && !info.te_and_cl
            && !faulty
            && body_done
            && !client_close
            && conn_mode != ConnMode::Close
            && resp_body != Body::UntilClose
            && !self.fe.retiring();
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
        client_keep
    }

    /// The key a hash-based `balance` hashes, stored in `self.key`; `None` without one (then
    /// the client address is used for `source`, round robin otherwise).
    pub(super) fn pick_key(&self, k: &HashKey, key: &mut Vec<u8>) -> KeyKind {
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
                let Some(v) = v.and_then(|v| crate::http::hdr_hash_key(v, *domain_only)) else {
                    return KeyKind::None;
                };
                key.extend_from_slice(v);
            }
        }
        KeyKind::Bytes
    }

    /// `option forwardfor` / `option originalto` (the backend's settings win).
    /// Writes the request head as it goes to the server into `self.out`.
    fn write_request_head(&mut self) {
        self.out.clear();
        if self.h2_conn.is_some() {
            // HTTP/2's absolute URI goes to an HTTP/1 server in origin form, as HAProxy sends it.
            self.req.write_origin_form_to(&mut self.out);
        } else {
            self.req.write_to(&mut self.out);
        }
    }

    pub(super) fn add_addr_headers(&mut self, be_http: &HttpProxy) {
        let Some(peer) = self.peer else { return };
        // As HAProxy: either proxy's `option forwardfor` adds the header (named by the
        // backend's when it has one); `if-none` holds only when neither says otherwise, and
        // either proxy's `except` network keeps it out.
        let (fe_ff, be_ff) = (self.http.forwardfor.as_ref(), be_http.forwardfor.as_ref());
        if let Some(ff) = be_ff.or(fe_ff) {
            let always = [fe_ff, be_ff].iter().flatten().any(|f| !f.if_none);
            let present = self.req.header(ff.header.as_bytes()).is_some();
            let excepted = [fe_ff, be_ff].iter().flatten().any(|f| f.excepted(peer.ip()));
            if !(excepted || (!always && present)) {
                let v = peer.ip().to_string();
                let _ = self.req.add_header(ff.header.as_bytes(), v.as_bytes());
            }
        }
        let (fe_ot, be_ot) = (self.http.originalto.as_ref(), be_http.originalto.as_ref());
        if let Some(ot) = be_ot.or(fe_ot) {
            let local = self.local.or_else(|| {
                socket2::SockRef::from(self.conn()).local_addr().ok().and_then(|a| a.as_socket())
            });
            {
                if let Some(ip) = local.map(|a| a.ip()) {
                    if ![fe_ot, be_ot].iter().flatten().any(|o| o.excepted(ip)) {
                        let v = ip.to_string();
                        let _ = self.req.add_header(ot.header.as_bytes(), v.as_bytes());
                    }
                }
            }
        }
    }
}

/// `http://host:80/...` becomes `http://host/...` (and `https://host:443/...` likewise).
pub(super) fn drop_default_port(req: &mut Head) {
    // (The target's form, found when it was parsed, says where the authority is.)
    let Some((scheme, _)) = req.scheme_and_authority() else { return };
    let port: &[u8] = if scheme.eq_ignore_ascii_case(b"http") {
        b":80"
    } else if scheme.eq_ignore_ascii_case(b"https") {
        b":443"
    } else {
        return;
    };
    let t = req.target();
    let scheme_len = scheme.len() + 3;
    let auth_end = t.len() - req.origin_form_target().len() - scheme_len;
    let auth = &t[scheme_len..scheme_len + auth_end];
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
#[allow(clippy::too_many_arguments)] // the context's parts, each from another place
pub(super) fn rules_base<'b>(
    fe: &'b Frontend,
    http: &HttpProxy,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
    backend: Option<&'b Backend>,
    server: Option<&'b str>,
    body: &'b [u8],
    client: &'b crate::connection::Stream,
    h2: bool,
    pp: Option<&'b crate::connection::proxy::Header>,
    bind_no: u16,
) -> Base<'b> {
    Base {
        src: peer,
        dst: local,
        proc_vars: &fe.proc_vars,
        frontend: &fe.name,
        fe: Some(fe),
        bind_no,
        backend,
        server,
        backends: &fe.backends,
        body,
        max_head: http.bufsize,
        data_htx: 0,
        client: Some(client),
        h2,
        pp,
        server_stream: None,
    }
}

/// The part of the client buffer that is the current request's body (what `req.body` sees).
pub(super) fn body_view(cbuf: &RecvBuf, body: Body) -> &[u8] {
    let data = cbuf.data();
    match body {
        Body::None => &[],
        Body::Length(n) => &data[..data.len().min(n as usize)],
        _ => data,
    }
}

/// The stricter of the frontend's and backend's connection modes.
pub(super) fn merge_mode(fe: ConnMode, be: ConnMode) -> ConnMode {
    use ConnMode::*;
    match (fe, be) {
        (Close, _) | (_, Close) => Close,
        (ServerClose, _) | (_, ServerClose) => ServerClose,
        _ => KeepAlive,
    }
}

/// Whether `request_rules` has anything to run (`http-request` rules, legacy redirects,
/// `option http-restrict-req-hdr-names`): its future is made and awaited only then, so a
/// request through a proxy without them writes none of its state.
fn any_request_rules(r: &ProxyRules) -> bool {
    !r.http_request.is_empty() || !r.redirects.is_empty() || r.restrict_hdr_names != 0
}
