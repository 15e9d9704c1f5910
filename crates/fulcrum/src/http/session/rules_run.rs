//! The proxies' response rule lists run on a transaction (`http-response`,
//! `http-after-response`), and what the session does when a request rule ended the
//! transaction (the request's rules themselves run in `analyse`).
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
                self.o.end(cause, phase);
                match built {
                    Built::Status(status) => self.answer(status, info, be).await,
                    Built::Bytes(bytes) => self.answer_bytes(bytes, info, be).await,
                    Built::Drop => Next::Close,
                }
            }
            Ruled::Tarpit(status) => {
                // Hold the client for `timeout tarpit` (default: `timeout connect`).
                let http = be.and_then(|b| b.http.as_deref()).unwrap_or(self.http);
                if let Some(t) = http.tarpit {
                    tokio::time::sleep(t).await;
                }
                // As HAProxy: the tarpit counts as queueing, from no request time.
                self.o.marks.request = None;
                if self.logs {
                    self.o.marks.queue = Some(crate::clock::now());
                }
                self.o.end(Cause::Proxy, Phase::Tarpit);
                self.answer(status, info, be).await
            }
            Ruled::Prometheus => {
                let bytes = crate::stats::prometheus::offloaded(self.req.target()).await;
                self.o.end(Cause::Local, Phase::Request);
                self.answer_bytes(bytes, info, be).await
            }
        }
    }

    /// Runs the backend's then the frontend's `http-response` rules on `self.resp`.
    /// Returns a status to answer instead when a rule denies the response.
    pub(super) async fn response_rules(
        &mut self,
        be: &Arc<Backend>,
        server: Option<&str>,
        sc: &mut ServerConn,
    ) -> Option<Built> {
        let own = analyse::is_own_backend(self.fe, be);
        let fe = self.fe;
        let lists: [(&ProxyRules, bool); 2] = [(&be.rules, !own), (&fe.rules, true)];
        if self.resp_data_htx.is_none() {
            let body = body_view(&sc.buf, self.resp.info().body).len();
            let max_input = self.http.limits.max_head;
            self.resp_data_htx = Some(rules::room::data_len(&self.resp, body, max_input));
        }
        for (r, run) in lists {
            if !run || r.http_response.is_empty() {
                continue;
            }
            let mut start = 0;
            let v = loop {
                let list = &r.http_response;
                let v = self.run_on_response(
                    list,
                    start,
                    &r.acls,
                    Some(be),
                    server,
                    Some(sc.stream.tls_side()),
                );
                // `wait-for-body`: the response's body (or `at-least` of it) is read into the
                // server buffer first; the rules after it then run, or HAProxy's 504 answers.
                let Verdict::WaitForBody { time, at_least, resume } = v else { break v };
                if !self.wait_for_response_body(sc, time, at_least).await {
                    self.o.end(Cause::ServerTimeout, Phase::Data);
                    return Some(Built::Status(504));
                }
                start = resume;
            };
            let built = match v {
                Verdict::Continue
                | Verdict::WaitForBody { .. }
                | Verdict::Tarpit(_)
                | Verdict::Prometheus
                | Verdict::Auth(_) => continue,
                Verdict::Drop => Built::Drop,
                Verdict::Deny(status, None) => {
                    Built::Status(if status == 403 { 502 } else { status })
                }
                Verdict::Deny(_, Some(rp)) | Verdict::Return(rp) => {
                    Built::Bytes(self.build_reply(rp, Some(be)))
                }
                Verdict::Redirect(rd) => {
                    self.skip_after = true;
                    Built::Bytes(self.build_redirect(rd, Some(be)))
                }
                Verdict::RewriteFailed => {
                    Counters::inc(&fe.counters.failed_rewrites);
                    Counters::inc(&be.counters.failed_rewrites);
                    Built::Status(500)
                }
            };
            return Some(built);
        }
        None
    }

    /// Runs one list of response rules on `self.resp` (the request for context), from rule
    /// `start`; `wait-for-body` stops it (the caller waits, then resumes).
    pub(super) fn run_on_response<'r>(
        &mut self,
        list: &'r [rules::Rule],
        start: usize,
        acls: &rules::Acls,
        be: Option<&Backend>,
        server: Option<&str>,
        server_stream: Option<crate::tls::facts::ServerSide<'_>>,
    ) -> Verdict<'r> {
        let mut base = analyse::base(
            self.fe,
            self.http,
            (self.peer, self.local),
            (be, server),
            &[],
            conn_facts!(self),
        );
        base.server_stream = server_stream;
        base.data_htx = self.resp_data_htx.unwrap_or(0);
        let (resp, req) = (&mut self.resp, &self.req);
        rules::run(list, start, acls, &base, resp, Some(req), &mut self.vars, &mut self.scratch)
    }

    /// Runs `http-after-response` rules (backend's, then frontend's) on `self.resp`.
    pub(super) fn after_response(&mut self, be: Option<&Arc<Backend>>, server: Option<&str>) {
        let own = be.is_some_and(|b| analyse::is_own_backend(self.fe, b));
        let be_rules = be.filter(|_| !own).map(|b| &b.rules);
        let fe = self.fe;
        for r in be_rules.into_iter().chain(std::iter::once(&fe.rules)) {
            if r.http_after_response.is_empty() {
                continue;
            }
            let _ = self.run_on_response(
                &r.http_after_response,
                0,
                &r.acls,
                be.map(|b| &**b),
                server,
                None,
            );
        }
    }

    pub(super) fn has_after_response(&self, be: Option<&Arc<Backend>>) -> bool {
        !self.fe.rules.http_after_response.is_empty()
            || be.is_some_and(|b| !b.rules.http_after_response.is_empty())
    }
}
