//! A transaction's cache steps (see `crate::cache`): the lookups its rules made counted, a hit
//! answered in place of a server (HAProxy's cache applet: the stored head with `Age`, `304`
//! to a matching conditional request, no body to HEAD, then the response rules, filters and
//! log as for a server's answer), and a response stored as its body passes.
//! Must not touch: the decisions on heads (`cache::policy`), the server side.

use super::*;
use crate::http::analyse::compress;

impl Session<'_> {
    /// Counts the lookups and hits the request rules made (on the frontend's counters for
    /// its rules, the backend's for its own).
    #[cold]
    pub(super) fn count_cache_lookups(&mut self) {
        let Some(t) = self.t.vars.cache.as_deref_mut() else { return };
        let (lookups, hits) = (std::mem::take(&mut t.lookups), std::mem::take(&mut t.hits));
        let be = self.t.backend.as_deref();
        for (side, c) in
            [Some(&*self.fe.counters), be.map(|b| &*b.counters)].into_iter().enumerate()
        {
            if let Some(c) = c {
                Counters::add(&c.cache_lookups, u64::from(lookups[side]));
                Counters::add(&c.cache_hits, u64::from(hits[side]));
            }
        }
    }

    /// The store `cache-store` began for the response, if it did: its body (`body`) passes
    /// through it; a response without one is stored at once.
    #[inline(always)]
    pub(super) fn take_store(&mut self, body: Body) -> Option<Box<crate::cache::Writer>> {
        let mut w = self.t.vars.cache.as_deref_mut().and_then(|c| c.store.take())?;
        if matches!(body, Body::None | Body::Length(0)) {
            w.finish();
            return None;
        }
        Some(w)
    }

    /// Whether a cache answers the request.
    #[inline(always)]
    pub(super) fn cache_hit(&self) -> bool {
        self.t.vars.cache.as_ref().is_some_and(|c| c.hit.is_some())
    }

    /// Answers the request from the cache entry its `cache-use` found.
    pub(super) async fn serve_cached(
        &mut self,
        asked: &Asked,
        be: &Arc<Backend>,
        conn_mode: crate::http_settings::ConnMode,
        comp: compress::Settings<'_>,
    ) -> Next {
        let Some(hit) = self.t.vars.cache.as_ref().and_then(|c| c.hit.as_ref()) else {
            return Next::Close;
        };
        let (entry, not_modified) = (Arc::clone(&hit.entry), hit.not_modified);
        let info = asked.info;
        self.trace_request_head(info.body);
        let body_done = self.drain_request_body(info.body);
        self.t.resp.copy_from(&entry.head);
        if not_modified {
            let _ = self.t.resp.set_status(304, None);
        }
        let t = &mut self.t;
        t.scratch.clear();
        let _ = std::io::Write::write_fmt(
            &mut t.scratch,
            format_args!("{}", entry.age(crate::cache::now())),
        );
        let _ = t.resp.add_header(b"age", &t.scratch);
        self.t.o.from_cache = true;
        self.t.o.end(Cause::Local, Phase::Request);
        // The cache takes the request as a server would, at once: `Tw`, `Tc`, `Tr` are 0.
        if self.logs {
            let now = Some(crate::clock::now());
            let m = &mut self.t.o.marks;
            (m.queue, m.connect, m.data) = (now, now, now);
        }
        let no_body = not_modified || asked.method == fulcrum_http::Method::Head;
        let body: &[u8] = if no_body { &[] } else { &entry.body };
        let resp_body = if no_body { Body::None } else { Body::Length(body.len() as u64) };
        if self.t.comp.is_some() {
            self.compress_response(asked, resp_body, no_body, comp);
        }
        if let Some(built) = self.cached_response_rules(be, body).await {
            return cold(self.answer_built(built, info, body_done, be)).await;
        }
        let server = Some("<CACHE>");
        self.after_response(Some(be), server);
        let keep = KeepFacts {
            status: self.t.resp.status(),
            version: asked.version,
            resp_body,
            tunnel: false,
            te_and_cl: info.te_and_cl,
            body_done,
            client_close: asked.client_close,
            conn_mode,
            retiring: || self.fe.retiring(),
        };
        let client_keep = analyse::client_keeps(&mut self.t.resp, &keep);
        let (len, parsed) = match self.client_head() {
            Ok(v) => v,
            Err(out) => return cold(self.head_failed(out, info, be)).await,
        };
        self.t.o.bytes_out +=
            if self.logs { crate::outcome::head_size(&self.t.resp) } else { len as u64 };
        self.t.o.status = Some(self.t.resp.status());
        let ct = self.fe.timeouts.client;
        // (Through the filters' path when a bandwidth limit or a trace filter sees the body.)
        let sent = if self.t.comp.is_some() || parsed || self.filters_see_response() {
            self.cached_body(body, be).await == Xfer::Done
        } else {
            // An HTTP/1 client: the head and the body in one write.
            self.t.o.bytes_out += body.len() as u64;
            send_within(&self.client, &self.out, body, ct, false).await.is_ok()
        };
        match (sent, client_keep) {
            (true, true) => Next::KeepAlive,
            (false, _) => {
                self.t.o.end(Cause::ClientAbort, Phase::Data);
                Next::Close
            }
            _ => Next::Close,
        }
    }

    /// The response rules on a cached answer (a rule waiting for the body has it at once).
    async fn cached_response_rules(&mut self, be: &Arc<Backend>, body: &[u8]) -> Option<Built> {
        if !analyse::has_response_rules(self.fe, be) {
            return None;
        }
        let mut p = analyse::RespProgress::default();
        loop {
            match self.txn().response_rules(
                be,
                Some("<CACHE>"),
                None,
                crate::rules::sample::BodyBytes { data: body, chunked: false },
                &mut p,
            ) {
                analyse::RespStop::Pass => return None,
                analyse::RespStop::Answer { built, after } => {
                    self.skip_after |= !after;
                    return Some(built);
                }
                analyse::RespStop::Spoe(ask) => {
                    Box::pin(self.spoe(ask, Some(&**be), None, true)).await
                }
                analyse::RespStop::Lua(ask) => Box::pin(self.lua(ask, true)).await,
                analyse::RespStop::WaitForBody { .. } => {
                    let held = self.t.held.get_or_insert_with(Default::default);
                    held.resp = Some(body.to_vec());
                }
            }
        }
    }

    /// A cached body to an HTTP/2 client, or compressed, or seen by a bandwidth limit or a
    /// trace filter: as pieces.
    async fn cached_body(&mut self, body: &[u8], be: &Backend) -> Xfer {
        let mut enc = self.t.comp.map(|a| {
            crate::http::encoder::Encoder::new(a, self.http.comp_level, self.http.comp_window)
        });
        let comp_at = self.comp_at(be);
        let to = match self.client.takes_pieces() {
            true => pieces::Sink::Pieces(&self.client),
            // (Chunks when compressed: the stored length no longer holds.)
            false => {
                let chunked = self.t.comp.is_some();
                pieces::Sink::H1 { peer: &self.client, head: &self.out, chunked }
            }
        };
        let timer = (self.ctimer.as_mut(), self.fe.timeouts.client);
        let (ct, out) = (self.fe.timeouts.client, &mut self.t.o.bytes_out);
        let rate = Some(&*self.shared.comp_rate);
        let limits = self.t.vars.bwlim.as_deref_mut().map(|b| &mut b.down[..]);
        let trace = self.t.trace.as_deref().map(|t| (t, crate::http::trace::Channel::Response));
        let filters =
            pieces::Filters { store: None, enc: enc.as_mut(), comp_at, rate, limits, trace };
        let x = pieces::pump(pieces::Source::Memory(body), to, timer, ct, None, out, filters).await;
        if let Some(enc) = &enc {
            self.count_compression(enc, be, x);
        }
        x
    }

    /// The response's body through the filters it has (the cache store, compression), as
    /// pieces from the server's framing to the client's (chunks to an HTTP/1 client when its
    /// length changes).
    pub(super) async fn filtered_body(
        &mut self,
        sc: &mut ServerConn,
        body: Body,
        be: &Backend,
        st: Option<Duration>,
        mut store: Option<Box<crate::cache::Writer>>,
    ) -> Xfer {
        let mut enc = self.t.comp.map(|a| {
            crate::http::encoder::Encoder::new(a, self.http.comp_level, self.http.comp_window)
        });
        let comp_at = self.comp_at(be);
        if matches!(body, Body::None | Body::Length(0)) && enc.is_none() && store.is_none() {
            // (Here for the trace filters or bandwidth limits alone: no payload to move.)
            if let Some(t) = self.t.trace.as_deref_mut() {
                t.no_payload(crate::http::trace::Channel::Response);
            }
            return Xfer::Done;
        }
        self.scanner.reset();
        let from = match (sc.stream.gives_pieces() && sc.buf.is_empty(), body) {
            (true, Body::Length(n)) => pieces::Source::Pieces(&sc.stream, Some(n)),
            (true, _) => pieces::Source::Pieces(&sc.stream, None),
            (false, _) => pieces::Source::H1 {
                peer: &sc.stream,
                buf: &mut sc.buf,
                body,
                scanner: &mut self.scanner,
            },
        };
        let chunked = enc.is_some() || body == Body::Chunked;
        let to = match self.client.takes_pieces() {
            true => pieces::Sink::Pieces(&self.client),
            false => pieces::Sink::H1 { peer: &self.client, head: &[], chunked },
        };
        let timer = (self.stimer.as_mut(), st);
        let (ct, out) = (self.fe.timeouts.client, &mut self.t.o.bytes_out);
        let rate = Some(&*self.shared.comp_rate);
        let limits = self.t.vars.bwlim.as_deref_mut().map(|b| &mut b.down[..]);
        let trace = self.t.trace.as_deref().map(|t| (t, crate::http::trace::Channel::Response));
        let store = store.as_deref_mut();
        let filters = pieces::Filters { store, enc: enc.as_mut(), comp_at, rate, limits, trace };
        let x = pieces::pump(from, to, timer, ct, None, out, filters).await;
        if let Some(enc) = &enc {
            self.count_compression(enc, be, x);
        }
        x
    }

    /// The place of the filter that compresses this stream's response among its filters: the
    /// frontend's compression filter when it has one (its filters come first, and HAProxy's
    /// first compression filter is the one that compresses), else the backend's.
    pub(super) fn comp_at(&self, be: &Backend) -> u32 {
        let be_at = be.http.as_ref().and_then(|h| h.comp_filter);
        self.http.comp_filter.or(be_at).unwrap_or(u32::MAX)
    }

    /// The compression counters of a response's body.
    pub(super) fn count_compression(
        &self,
        enc: &crate::http::encoder::Encoder,
        be: &Backend,
        x: Xfer,
    ) {
        for c in [&*self.fe.counters, &*be.counters] {
            Counters::add(&c.comp_in, enc.bytes_in);
            Counters::add(&c.comp_out, enc.bytes_out);
            Counters::add(&c.comp_byp, enc.bypassed);
            if x == Xfer::Done {
                Counters::inc(&c.comp_rsp);
            }
        }
    }
}
