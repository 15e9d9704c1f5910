//! What the session does when a request rule ended the transaction, and the waits the
//! response rules ask for (the rules themselves run in `analyse`).
//! Must not touch: sockets, servers (the transaction in `txn` calls these at its steps).

use super::*;

impl Session<'_> {
    /// What the session does for a rule that ended the transaction (see `analyse::Ruled`).
    pub(super) async fn ruled(
        &mut self,
        r: Ruled,
        be: Option<&Arc<Backend>>,
        info: &fulcrum_http::Info,
    ) -> Next {
        match r {
            Ruled::Answer { built, cause, phase, closes } => {
                if closes {
                    self.body_unread = false;
                }
                self.t.o.end(cause, phase);
                match built {
                    Built::Status(status) => self.answer(status, info, be).await,
                    Built::Bytes(bytes) => self.answer_bytes(bytes, info, be).await,
                    Built::Drop => Next::Close,
                }
            }
            Ruled::Tarpit(status) => {
                // Hold the client for `timeout tarpit` (default: `timeout connect`).
                let tarpit = be.map_or(self.fe.timeouts.tarpit, |b| b.timeouts.tarpit);
                if let Some(t) = tarpit {
                    tokio::time::sleep(t).await;
                }
                // As HAProxy: the tarpit counts as queueing, from no request time.
                self.t.o.marks.request = None;
                if self.logs {
                    self.t.o.marks.queue = Some(crate::clock::now());
                }
                self.t.o.end(Cause::Proxy, Phase::Tarpit);
                self.answer(status, info, be).await
            }
            Ruled::Prometheus => {
                let bytes = crate::stats::prometheus::offloaded(self.t.req.target()).await;
                self.t.o.end(Cause::Local, Phase::Request);
                self.answer_bytes(bytes, info, be).await
            }
        }
    }

    /// Runs the `http-response` rules on `self.t.resp` (see `analyse::response`), reading the
    /// response body into the server buffer when one asks to wait for it. Returns an answer to
    /// make instead of the response when a rule gives one.
    pub(super) async fn response_rules(
        &mut self,
        be: &Arc<Backend>,
        server: Option<&str>,
        sc: &mut ServerConn,
    ) -> Option<Built> {
        if !analyse::has_response_rules(self.fe, be) {
            return None;
        }
        let mut p = analyse::RespProgress::default();
        // (An earlier try's response body is not this one's.)
        if let Some(h) = &mut self.t.held {
            h.resp = None;
        }
        loop {
            match self.response_rules_step(be, server, sc, &mut p) {
                analyse::RespStop::Pass => return None,
                analyse::RespStop::Answer { built, after } => {
                    self.skip_after |= !after;
                    return Some(built);
                }
                analyse::RespStop::Spoe(ask) => {
                    Box::pin(self.spoe(ask, Some(&**be), server, true)).await
                }
                analyse::RespStop::Lua(ask) => Box::pin(self.lua(ask, true)).await,
                analyse::RespStop::WaitForBody { time, at_least } => {
                    // The rules after it run once the body (or `at-least` of it) is in the
                    // server buffer, or HAProxy's 504 answers.
                    if !self.wait_for_response_body(sc, time, at_least).await {
                        self.t.o.end(Cause::ServerTimeout, Phase::Data);
                        return Some(Built::Status(504));
                    }
                }
            }
        }
    }

    /// One run of the response rules from where `p` says, on the response body a rule waited
    /// for (lent to them, then put back) or on what the server buffer holds. (Apart from
    /// `response_rules` so that no body is held across its waits.)
    fn response_rules_step(
        &mut self,
        be: &Arc<Backend>,
        server: Option<&str>,
        sc: &ServerConn,
        p: &mut analyse::RespProgress,
    ) -> analyse::RespStop {
        let held = self.t.held.as_mut().and_then(|h| h.resp.take());
        let framing = self.t.resp.info().body;
        let body = match &held {
            Some(data) => crate::rules::sample::BodyBytes { data, chunked: false },
            None => crate::rules::sample::BodyBytes {
                data: body_view(&None, &sc.buf, framing),
                chunked: framing == fulcrum_http::Body::Chunked,
            },
        };
        let side = Some(sc.stream.tls_side());
        let stop = self.txn().response_rules(be, server, side, body, p);
        if let (Some(h), Some(data)) = (self.t.held.as_mut(), held) {
            h.resp = Some(data);
        }
        stop
    }

    /// Runs the `http-after-response` rules on `self.t.resp` (see `analyse::response`).
    #[inline]
    pub(super) fn after_response(&mut self, be: Option<&Arc<Backend>>, server: Option<&str>) {
        if analyse::has_after_response(self.fe, be) {
            self.txn().after_response(be, server);
        }
        if let Some(be) = be.filter(|_| self.fe.log.logasap) {
            self.log_asap(be);
        }
    }
}
