//! One transaction's analysers, in HAProxy's order: tcp-request content and monitor-uri,
//! the frontend's then the backend's http-request rules, backend choice, the request as it goes
//! to the server, server choice, then the response's rules and its way back to the client.
//! Must not touch: sockets beyond what `exchange` and `answer` offer.

use super::*;
use crate::http::analyse::compress;

/// Why the response head could not go to the client.
pub(super) enum HeadOut {
    /// Rewrites made it larger than a buffer (500).
    TooLarge,
    /// The client's stream failed.
    Failed(std::io::Error),
}

/// What the client asked, as it asked it (before any rule).
pub(super) struct Asked {
    pub info: fulcrum_http::Info,
    pub method: fulcrum_http::Method,
    pub version: Version,
    /// `Connection: close`, or HTTP/1.0 without keep-alive.
    pub client_close: bool,
}

impl Session<'_> {
    /// One request/response exchange, the request head being in `self.t.req`.
    pub(super) async fn transaction(&mut self) -> Next {
        let asked = self.begin_transaction();
        let info = asked.info;
        let (be, to) = match self.request_analysers(&info).await {
            Ok(v) => v,
            Err(next) => return next,
        };
        let be_http = be.http.as_deref().expect("an HTTP backend");
        let ToServer { upgrade, persist, mut stores, key, conn_mode } = to;
        // The algorithm the request accepts (before its head goes: `offload` removes it).
        let comp = compress::Settings::of(be_http, self.http);
        self.t.comp = comp.any().then(|| compress::select_request(&mut self.t.req, comp)).flatten();
        if self.cache_hit() {
            return cold(self.serve_cached(&asked, &be, conn_mode, comp)).await;
        }
        let keybuf = std::mem::take(&mut self.t.key);

        // The head as it goes to the server (its text written when a try needs it: an HTTP/2
        // server takes it as parsed); rewrites must leave it within a buffer, as in HAProxy.
        if self.request_head_too_large(be_http) {
            self.t.key = keybuf;
            return self.answer(500, &info, Some(&be)).await;
        }
        let key = key.pick(&keybuf);
        let (retryable, mut fresh_only, mut l7_retries) = (info.body == Body::None, false, 0);
        let (slot, mut sc, body_done) = loop {
            // An idle connection is checked for a close by the server only when the request
            // could not be sent again (it has a body).
            let got =
                self.server_conn(&be, key, persist, be_http.reuse, fresh_only, !retryable).await;
            let (slot, sc) = match got {
                Ok(v) => v,
                // No one to answer when the client left (`abortonclose`): status -1 in the log.
                Err(e) => return cold(self.no_connection(e, &be, &info)).await,
            };
            if be_http.send_name_header.is_some() && self.txn().name_server(&be, slot.index()) {
                self.write_request_head();
            }
            if self.asks_server_session(&be) {
                cold(self.spoe_server_session(&be, slot.index())).await;
            }
            let reused = sc.requests > 0;
            let exchanged = self.exchange(sc, &info, &be).await;
            self.try_done(&exchanged);
            let tries = Tries { reused, retryable, fresh_only, used: l7_retries };
            if let Some(counts) = self.retry_due(&exchanged, tries, &be) {
                l7_retries += u32::from(counts);
                fresh_only = true;
                drop(exchanged);
                drop(slot);
                continue;
            }
            match self.try_ended(exchanged, &slot, &be) {
                Ok((sc, body_done)) => break (slot, sc, body_done),
                Err(None) => return Next::Close,
                Err(Some((status, close))) => {
                    let mut i = info;
                    i.conn_close |= close;
                    return self.answer(status, &i, Some(&be)).await;
                }
            }
        };

        self.t.key = keybuf;
        // The response head is in `self.t.resp`.
        let a = analyse::answered(
            &self.t.req,
            &mut self.t.resp,
            asked.method,
            upgrade,
            body_done,
            conn_mode,
            &info,
        );
        // A chunked response body already received must be valid before the head goes out.
        let Answered { status, resp_body, tunnel, skipped, mut server_keep } = a;
        // On HTTP/2, a response may begin while the request's body still arrives.
        let duplex = !body_done && (self.h2_conn.is_some() || sc.stream.is_message());
        if self.t.comp.is_some() {
            self.compress_response(&asked, resp_body, tunnel || skipped.is_some(), comp);
        }
        if resp_body == Body::Chunked && self.bad_chunks(&sc.buf, &be) {
            drop((slot, sc));
            return self.answer(502, &info, Some(&be)).await;
        }
        if (self.has_engines(&be) || !be.rules.tcp_response.is_empty())
            && !cold(self.tcp_response_accepts(&be, slot.index())).await
        {
            drop((slot, sc)); // the server's response is abandoned with its connection
            return Next::Close;
        }
        if !be.rules.stick.is_empty() {
            self.txn().store_sticks(&be, &mut stores, slot.server());
        }
        // Response rules: backend's, then frontend's; a deny replaces the response.
        // Borrowed from the backend (a local `Arc`), not copied: no allocation per request.
        let be_ref: &Backend = &be;
        let server_name = be_ref.servers[slot.index()].name.as_str();
        if let Some(built) = self.response_rules(&be, Some(server_name), &mut sc).await {
            drop((slot, sc)); // the server's response is abandoned with its connection
            return cold(self.answer_built(built, info, body_done, &be)).await;
        }
        let store = self.take_store(resp_body); // `cache-store` began storing the response
        self.cookie_response(be_http, &slot, persist);
        let client_keep = self.client_keeps(&asked, &a, body_done, conn_mode);
        self.after_response(Some(&be), Some(server_name));
        let (len, parsed) = match self.client_head() {
            Ok(v) => v,
            Err(out) => {
                drop((slot, sc));
                return cold(self.head_failed(out, info, &be)).await;
            }
        };
        // When body bytes came with the head, both leave in one `sendmsg` (see `pump`).
        let limited = self.filters_see_response();
        let head_with_body = !parsed
            && self.t.comp.is_none()
            && store.is_none()
            && !limited
            && !tunnel
            && !sc.buf.is_empty()
            && !matches!(resp_body, Body::None | Body::Length(0));
        if !head_with_body && !parsed && self.write_client_head().await.is_err() {
            return Next::Close;
        }
        self.t.o.bytes_out +=
            if self.logs { crate::outcome::head_size(&self.t.resp) } else { len as u64 };
        self.t.o.status = Some(status);
        if tunnel {
            cold(self.tunnel(sc, &be, &slot)).await;
            return Next::Close;
        }
        let st = be.timeouts.server;
        // On HTTP/2 (either side), a request body still arriving goes on beside the response.
        let xfer = if duplex {
            cold(self.duplex(&mut sc, (head_with_body, resp_body), st, (store, &be))).await
        } else if self.t.comp.is_some() || store.is_some() || limited {
            cold(self.filtered_body(&mut sc, resp_body, &be, st, store)).await
        } else {
            self.scanner.reset();
            let head: &[u8] = if head_with_body { &self.out } else { &[] };
            let timer = (self.stimer.as_mut(), st);
            let (ct, out) = (self.fe.timeouts.client, &mut self.t.o.bytes_out);
            let s = &mut self.scanner;
            pump(&sc.stream, &mut sc.buf, &self.client, head, resp_body, s, timer, ct, None, out)
                .await
        };
        if xfer != Xfer::Done {
            self.body_failed(xfer, slot);
            return Next::Close;
        }
        drop(slot);
        if let (Some(b), true) = (skipped, server_keep) {
            server_keep = cold(self.drain_skipped(&mut sc, b, st)).await;
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

    /// A transaction's first steps: the previous one's variables gone, the addresses the
    /// rules see, the request's captures; what the client asked, as it asked it.
    #[inline(always)]
    fn begin_transaction(&mut self) -> Asked {
        self.t.vars.end_transaction();
        self.sync_addrs();
        self.t.vars.first_req = self.requests == 0;
        let spec = &self.fe.log.captures;
        if !spec.is_empty() {
            self.t.vars.caps.reset(spec);
            self.t.vars.caps.take_from(spec, &self.t.req, false);
        }
        if !self.http.traces.is_empty() {
            let n = *self.t.stream_no.get_or_insert_with(crate::log::next_stream_number);
            self.t.trace = crate::http::trace::Traces::start(&self.http.traces, n);
        }
        let info = *self.t.req.info();
        self.body_unread = info.body != Body::None;
        let version = self.t.req.version();
        let client_close = match version {
            Version::Http10 => !info.conn_keep_alive,
            _ => info.conn_close,
        };
        Asked { info, method: self.t.req.method(), version, client_close }
    }

    /// Whether the response is compressed (`plain`: it cannot be), once its head is in and
    /// before the response rules.
    #[cold]
    pub(super) fn compress_response(
        &mut self,
        asked: &Asked,
        body: Body,
        plain: bool,
        comp: compress::Settings<'_>,
    ) {
        let asked = compress::Asked { method: asked.method, version: asked.version };
        // `maxcomprate`: over the limit, a response begins uncompressed; `maxcompcpuusage`:
        // nor while this worker was busier than it allows.
        let now = crate::clock::now().into_std();
        let plain = plain || self.shared.comp_rate.begins_plain(now);
        self.t.comp = match (plain, self.t.comp) {
            (false, Some(algo)) => compress::select_response(algo, asked, &self.t.resp, body, comp),
            _ => None,
        };
        self.t.o.comp = self.t.comp;
    }

    /// `http-request early-hint`: the 103 answer, sent before the request goes on.
    async fn early_hints(&mut self) -> std::io::Result<()> {
        let hints = analyse::early_hints(&self.t.vars.early_hints);
        answer::send_text(&self.client, &hints, self.fe.timeouts.client).await
    }

    /// Whether rewrites made the head as it goes to the server larger than a buffer (HAProxy
    /// then fails the transaction: 500). Its text is written when a try needs it (an HTTP/2
    /// server takes it as parsed).
    #[inline(always)]
    fn request_head_too_large(&mut self, be_http: &HttpProxy) -> bool {
        // `h1-case-adjust` for HTTP/1 servers (an HTTP/2 one gets names in lower case).
        if let Some(case) = &be_http.case_server {
            self.t.req.adjust_name_case(|n| case.get(n));
        }
        let len = self.request_head_len();
        let too = len > be_http.bufsize.min(self.http.bufsize) && !self.t.vars.strict_off;
        if too {
            self.t.o.end(Cause::Internal, Phase::Request);
        }
        too
    }

    /// Whether the client's connection stays open after the response (see
    /// [`analyse::client_keeps`]).
    #[inline(always)]
    fn client_keeps(
        &mut self,
        asked: &Asked,
        a: &Answered,
        body_done: bool,
        conn_mode: crate::http_settings::ConnMode,
    ) -> bool {
        let keep = KeepFacts {
            status: a.status,
            version: asked.version,
            resp_body: a.resp_body,
            tunnel: a.tunnel,
            te_and_cl: asked.info.te_and_cl,
            body_done,
            client_close: asked.client_close,
            conn_mode,
            retiring: || self.fe.retiring(),
        };
        analyse::client_keeps(&mut self.t.resp, &keep)
    }

    /// After each try: the time the response head came, and its captures.
    #[inline(always)]
    fn try_done(&mut self, exchanged: &Exchange) {
        if self.logs {
            self.t.o.marks.data = Some(crate::clock::now());
        }
        if matches!(exchanged, Exchange::Response(..)) && !self.fe.log.captures.is_empty() {
            self.t.vars.caps.take_from(&self.fe.log.captures, &self.t.resp, true);
        }
    }

    /// Whether the chunked body bytes that came with the response head are invalid (the
    /// transaction then answers 502 instead).
    #[inline(always)]
    fn bad_chunks(&mut self, buf: &RecvBuf, be: &Backend) -> bool {
        if buf.is_empty() || ChunkedScanner::new().scan(buf.data()).is_ok() {
            return false;
        }
        self.t.o.end(Cause::Proxy, Phase::Headers);
        Counters::inc(&be.counters.failed_responses);
        true
    }

    /// The answer a response rule built in place of the server's response. As HAProxy, the
    /// client's connection carries on when its request went whole.
    pub(super) async fn answer_built(
        &mut self,
        built: Built,
        mut info: fulcrum_http::Info,
        body_done: bool,
        be: &Arc<Backend>,
    ) -> Next {
        info.conn_close |= !body_done;
        let cause = if matches!(built, Built::Bytes(_)) { Cause::Local } else { Cause::Proxy };
        self.t.o.end(cause, Phase::Headers);
        match built {
            Built::Drop => Next::Close,
            Built::Status(status) => self.answer(status, &info, Some(be)).await,
            Built::Bytes(bytes) => self.answer_bytes(bytes, &info, Some(be)).await,
        }
    }

    /// The response's body to the client while the rest of the request's goes to the server
    /// (HTTP/2 on either side), each through the filters that see it: the cache store,
    /// compression and `bwlim-out` limits on the response's, `bwlim-in` limits on the
    /// request's, trace filters on both.
    async fn duplex(
        &mut self,
        sc: &mut ServerConn,
        (head_with_body, resp_body): (bool, Body),
        st: Option<Duration>,
        (mut store, be): (Option<Box<crate::cache::Writer>>, &Backend),
    ) -> Xfer {
        use crate::http::trace::Channel;
        let ct = self.fe.timeouts.client;
        let mut req_scanner = self.scanner.clone();
        self.scanner.reset();
        let mut enc = self.t.comp.map(|a| {
            crate::http::encoder::Encoder::new(a, self.http.comp_level, self.http.comp_window)
        });
        let comp_at = self.comp_at(be);
        let (up, down) = match self.t.vars.bwlim.as_deref_mut() {
            Some(b) => (Some(&mut b.up[..]), Some(&mut b.down[..])),
            None => (None, None),
        };
        let trace = self.t.trace.as_deref();
        let down_f = pieces::Filters {
            store: store.as_deref_mut(),
            enc: enc.as_mut(),
            comp_at,
            rate: Some(&*self.shared.comp_rate),
            limits: down.filter(|l| !l.is_empty()),
            trace: trace.map(|t| (t, Channel::Response)),
        };
        let up_f = pieces::Filters {
            limits: up.filter(|l| !l.is_empty()),
            trace: trace.map(|t| (t, Channel::Request)),
            ..Default::default()
        };
        let head: &[u8] = if head_with_body { &self.out } else { &[] };
        let down = exchange::filtered_pump(
            &sc.stream,
            &mut sc.buf,
            &self.client,
            head,
            resp_body,
            &mut self.scanner,
            (self.stimer.as_mut(), st),
            ct,
            None,
            &mut self.t.o.bytes_out,
            down_f,
        );
        let up = exchange::filtered_pump(
            &self.client,
            &mut self.cbuf,
            &sc.stream,
            &[],
            self.body_left,
            &mut req_scanner,
            (self.ctimer.as_mut(), st.or(ct)),
            st,
            None,
            &mut self.t.o.bytes_in,
            up_f,
        );
        let x = exchange::duplex(down, up).await;
        if let Some(enc) = &enc {
            self.count_compression(enc, be, x);
        }
        x
    }

    /// The body of a response to a method rewritten from HEAD, read and dropped; whether the
    /// server's connection can carry another request after it.
    async fn drain_skipped(&mut self, sc: &mut ServerConn, b: Body, st: Option<Duration>) -> bool {
        self.scanner.reset();
        let timer = (self.stimer.as_mut(), st);
        exchange::drain(&sc.stream, &mut sc.buf, b, &mut self.scanner, timer).await == Xfer::Done
    }

    /// The request analysers (`analyse`) up to the backend, in HAProxy's order; each stop asks
    /// the session for what only it can do (a wait, an answer, the stats page), then they go
    /// on. The backend chosen and what goes to its server, or how the transaction ended.
    async fn request_analysers(
        &mut self,
        info: &fulcrum_http::Info,
    ) -> Result<(Arc<Backend>, ToServer), Next> {
        let info = *info;
        let fe = self.fe;
        // The request analysers (`analyse`) up to the backend; each stop asks the session
        // for what only it can do, then they go on.
        let mut progress = analyse::Progress::default();
        let to = loop {
            let stop = self.txn().request(&mut progress);
            if self.t.vars.cache.as_ref().is_some_and(|c| c.lookups != [0, 0]) {
                self.count_cache_lookups();
            }
            self.sync_addrs();
            let be = progress.be.as_ref();
            match stop {
                Stop::Backend(to) => break to,
                Stop::Reject => {
                    self.note(format_args!("tcp-request content reject"));
                    self.t.o.end(Cause::Proxy, Phase::Request);
                    return Err(Next::Close);
                }
                Stop::Monitor { failing } => {
                    // HAProxy does not log monitoring requests.
                    self.log.skip = true;
                    return Err(self.answer(if failing { 503 } else { 200 }, &info, None).await);
                }
                Stop::BufferBody | Stop::WaitForBody { .. } => {
                    // `option http-buffer-request` (an `fcgi-app` backend), `wait-for-body`.
                    if !cold(self.body_stop(&stop, &info, be)).await {
                        // The body did not come in time: HAProxy's 408.
                        self.t.o.end(Cause::ClientTimeout, Phase::Request);
                        let mut i = info;
                        i.conn_close = true;
                        return Err(self.answer(408, &i, be).await);
                    }
                }
                Stop::Ruled(r) => return Err(cold(self.ruled(r, be, &info)).await),
                Stop::Spoe(ask) => {
                    Box::pin(self.spoe(ask, progress.be.clone().as_deref(), None, false)).await
                }
                Stop::Lua(ask) => Box::pin(self.lua(ask, false)).await,
                Stop::Stats => {
                    let rules = Txn::stats_rules(fe, &progress);
                    if let Some(next) = cold(self.stats_page(rules, be, &info)).await {
                        return Err(next);
                    }
                }
                Stop::NoBackend => {
                    self.t.o.end(Cause::Proxy, Phase::Request);
                    return Err(self.answer(503, &info, None).await);
                }
                Stop::BadBody => {
                    self.t.o.end(Cause::Proxy, Phase::Request);
                    let mut i = info;
                    i.conn_close = true;
                    return Err(self.answer(400, &i, be).await);
                }
                Stop::TcpBackend => {
                    // As HAProxy: the stream fails and the connection closes without an
                    // answer.
                    self.note(format_args!("tcp backend for an HTTP request: closing"));
                    self.t.o.end(Cause::Internal, Phase::Request);
                    return Err(Next::Close);
                }
            }
        };
        let be = progress.be.take().expect("the analysers chose a backend");
        self.trace_backend(&be);
        // `early-hint` rules: the 103 goes before the request does.
        if !self.t.vars.early_hints.is_empty() && cold(self.early_hints()).await.is_err() {
            return Err(Next::Close);
        }
        Ok((be, to))
    }

    /// A bandwidth limit or a trace filter sees the response's body (it then goes through the
    /// filters' path).
    pub(super) fn filters_see_response(&self) -> bool {
        self.t.vars.bwlim.as_ref().is_some_and(|b| !b.down.is_empty()) || self.t.trace.is_some()
    }

    /// The backend is chosen: the trace filters (the frontend's, and the backend's attached
    /// now; a `listen`'s are attached already) see it.
    fn trace_backend(&mut self, be: &Arc<Backend>) {
        let own = analyse::is_own_backend(self.fe, be);
        let filters = be.http.as_deref().filter(|_| !own).map_or(&[][..], |h| &h.traces);
        if self.t.trace.is_none() && !filters.is_empty() {
            let n = *self.t.stream_no.get_or_insert_with(crate::log::next_stream_number);
            self.t.trace = Some(crate::http::trace::Traces::empty(n));
        }
        if let Some(t) = self.t.trace.as_deref_mut() {
            t.set_backend(&be.name, filters);
        }
    }

    /// `retry-on` (L7 retries, `analyse::retry`) after a try ended so: a request without
    /// body goes again, on a new connection each time; how many retries it counts, counted.
    fn retry_due(&mut self, exchanged: &Exchange, tries: Tries, be: &Backend) -> Option<bool> {
        let be_http = be.http.as_deref()?;
        let end = match exchanged {
            Exchange::RetryFresh => TryEnd::Empty,
            Exchange::BadResponse | Exchange::ServerGone => TryEnd::Junk,
            Exchange::ServerTimeout => TryEnd::Timeout,
            Exchange::Response(_, true) => TryEnd::Status(self.t.resp.status()),
            _ => TryEnd::Other,
        };
        let counts = analyse::retry(end, tries, be.retries, &be_http.retry_on)?;
        self.t.o.retries += 1;
        Counters::inc(&be.counters.retries);
        Some(counts)
    }

    /// What a try's end means once no retry is due: the response head came (the server's
    /// connection, and whether the request body went whole), or the transaction ends with the
    /// outcome recorded: `Some((status, close))` answered with that status (`close`: the
    /// client's connection closes), `None` closed without an answer.
    fn try_ended(
        &mut self,
        exchanged: Exchange,
        slot: &ServerSlot,
        be: &Backend,
    ) -> Result<(ServerConn, bool), Option<(u16, bool)>> {
        let idx = slot.index();
        if !matches!(exchanged, Exchange::Response(..)) {
            self.t.o.marks.data = None;
        }
        match exchanged {
            Exchange::Response(sc, body_done) => {
                if be.servers[idx].policy.observe.is_some() {
                    // `observe layer7`: 5xx but 501 and 505 count against the server.
                    let st = self.t.resp.status();
                    let bad = st >= 500 && st != 501 && st != 505;
                    observe_l7(be, idx, bad, "Wrong http response");
                }
                Ok((sc, body_done))
            }
            Exchange::RetryFresh | Exchange::BadResponse | Exchange::ServerGone => {
                let (what, cause) = match exchanged {
                    Exchange::BadResponse => ("Invalid http response", Cause::Proxy),
                    _ => ("Close from server (http)", Cause::ServerAbort),
                };
                self.t.o.end(cause, Phase::Headers);
                if let Some(by) = slot.ended_by() {
                    self.t.o.ended_by_state_change(by, Phase::Headers);
                }
                observe_l7(be, idx, true, what);
                Counters::inc(&be.counters.failed_responses);
                Err(Some((502, false)))
            }
            Exchange::ServerTimeout => {
                self.t.o.end(Cause::ServerTimeout, Phase::Headers);
                observe_l7(be, idx, true, "Read timeout (http)");
                Err(Some((504, false)))
            }
            Exchange::ClientGone => {
                self.t.o.end(Cause::ClientAbort, Phase::Headers);
                Err(None)
            }
            Exchange::BadRequest => {
                self.t.o.end(Cause::Proxy, Phase::Request);
                Err(Some((400, true)))
            }
        }
    }

    /// Records how the response body's transfer failed (the client's connection then closes).
    fn body_failed(&mut self, xfer: Xfer, slot: ServerSlot) {
        if let Some(by) = slot.ended_by() {
            // The server's sessions were shut as it changed state: not the server's doing.
            self.t.o.ended_by_state_change(by, Phase::Data);
            return;
        }
        self.note(format_args!("response body: {xfer}"));
        let cause = match xfer {
            Xfer::ReadTimeout => Cause::ServerTimeout,
            Xfer::WriteError => Cause::ClientAbort,
            Xfer::WriteTimeout => Cause::ClientTimeout,
            _ => Cause::ServerAbort,
        };
        self.t.o.end(cause, Phase::Data);
    }

    /// Records why no server could be had; true when the client left (nothing to answer),
    /// else the transaction answers 503.
    /// What follows when no server connection could be had: nothing when the client left
    /// (`abortonclose`), a server's redirection (`redir`), else a 503.
    async fn no_connection(
        &mut self,
        e: tcp::Ending,
        be: &Arc<Backend>,
        info: &fulcrum_http::Info,
    ) -> Next {
        if self.no_server(e) {
            return Next::Close;
        }
        match e {
            tcp::Ending::Redirect(idx) => self.server_redirect(be, idx, info).await,
            tcp::Ending::TooManyTls | tcp::Ending::NoSourceHeader => {
                self.answer(500, info, Some(be)).await
            }
            _ => self.answer(503, info, Some(be)).await,
        }
    }

    /// `redir`: HAProxy's `http_perform_server_redirect()`: a 302 to the server's prefix (a
    /// prefix of `/` alone keeps the URL relative) followed by the request's path, and the
    /// connection closes.
    async fn server_redirect(
        &mut self,
        be: &Arc<Backend>,
        idx: usize,
        info: &fulcrum_http::Info,
    ) -> Next {
        let prefix = be.servers[idx].redir.as_deref().unwrap_or("");
        let path = match self.t.req.origin_form_target() {
            b"" => &b"/"[..],
            p => p,
        };
        // (As HAProxy's HTTP/1 side writes it: names in lower case, `connection` last.)
        let mut msg =
            b"HTTP/1.1 302 Found\r\ncache-control: no-cache\r\ncontent-length: 0\r\nlocation: "
                .to_vec();
        if prefix != "/" {
            msg.extend_from_slice(prefix.as_bytes());
        }
        msg.extend_from_slice(path);
        msg.extend_from_slice(b"\r\nconnection: close\r\n\r\n");
        let mut i = *info;
        i.conn_close = true;
        self.answer_bytes(msg, &i, Some(be)).await
    }

    fn no_server(&mut self, e: tcp::Ending) -> bool {
        self.note(format_args!("no server: {e}"));
        let gone = matches!(e, tcp::Ending::ClientAborted);
        e.record(&mut self.t.o);
        gone
    }

    /// When the response head could not go to the client: a 500 when rewrites made it larger
    /// than a buffer (HAProxy fails the transaction), the end when the client's stream failed.
    pub(super) async fn head_failed(
        &mut self,
        out: HeadOut,
        mut info: fulcrum_http::Info,
        be: &Arc<Backend>,
    ) -> Next {
        match out {
            HeadOut::TooLarge => {
                self.t.o.end(Cause::Internal, Phase::Headers);
                info.conn_close = true;
                self.answer(500, &info, Some(be)).await
            }
            HeadOut::Failed(e) => {
                self.note(format_args!("client write failed: {e}"));
                self.t.o.end(Cause::ClientAbort, Phase::Data);
                Next::Close
            }
        }
    }

    /// The response head for the client, once its rules ran: an HTTP/2 client's stream takes
    /// it as parsed (`.1`: no HTTP/1 text is written), else its text is in `self.out`; `.0`
    /// its text's length either way.
    #[inline(always)]
    pub(super) fn client_head(&mut self) -> Result<(usize, bool), HeadOut> {
        if let Some(t) = self.t.trace.as_deref_mut() {
            t.headers(crate::http::trace::Channel::Response, &self.t.resp);
        }
        // A compressed response says so (after the response rules, as HAProxy's filter).
        if let Some(algo) = self.t.comp {
            if compress::rewrite_response(&mut self.t.resp, algo).is_err() {
                (self.t.comp, self.t.o.comp) = (None, None);
            }
        }
        self.out.clear();
        let len = if self.h2_conn.is_some() {
            self.t.resp.text_len(false)
        } else {
            if let Some(case) = &self.http.case_client {
                self.t.resp.adjust_name_case(|n| case.get(n));
            }
            self.t.resp.write_to(&mut self.out);
            self.out.len()
        };
        if len > self.http.bufsize && !self.t.vars.strict_off {
            return Err(HeadOut::TooLarge);
        }
        let parsed = match &self.client {
            Peer::H2(view) => view.send_head(&self.t.resp).map_err(HeadOut::Failed)?,
            _ => false,
        };
        if !parsed && self.out.is_empty() {
            self.t.resp.write_to(&mut self.out);
        }
        Ok((len, parsed))
    }

    /// The length of the request head's text as it goes to the server: written into
    /// `self.out` for an HTTP/1 client (a try will need it), measured only for an HTTP/2 one
    /// (an HTTP/2 server takes the head as parsed; `exchange` writes it when one does not).
    #[inline(always)]
    fn request_head_len(&mut self) -> usize {
        if self.h2_conn.is_some() {
            self.out.clear();
            self.t.req.text_len(true)
        } else {
            self.write_request_head();
            self.out.len()
        }
    }

    /// Writes the request head as it goes to the server into `self.out`.
    pub(super) fn write_request_head(&mut self) {
        self.out.clear();
        if self.h2_conn.is_some() {
            // HTTP/2's absolute URI goes to an HTTP/1 server in origin form, as HAProxy sends it.
            self.t.req.write_origin_form_to(&mut self.out);
        } else {
            self.t.req.write_to(&mut self.out);
        }
    }
}

/// The current request's body as `req.body` sees it: the data a rule waited for (`held`),
/// else the part of the client buffer that is its body.
#[inline(always)]
pub(super) fn body_view<'a>(
    held: &'a Option<Box<analyse::Held>>,
    cbuf: &'a RecvBuf,
    body: Body,
) -> &'a [u8] {
    if let Some(h) = held.as_ref().and_then(|h| h.req.as_deref()) {
        return h;
    }
    let data = cbuf.data();
    match body {
        Body::None => &[],
        Body::Length(n) => &data[..data.len().min(n as usize)],
        _ => data,
    }
}
