//! The proxies' rule lists run on a transaction: `http-request` (with the legacy `redirect`
//! rules), backend choice by `use_backend`, `http-response`, `http-after-response`.
//! Must not touch: sockets, servers (the transaction in `txn` calls these at its steps).

use super::*;

impl Session<'_> {
    /// Runs a proxy's `http-request` rules then its legacy `redirect` rules. `Some(next)`
    /// when they answered the client themselves.
    pub(super) async fn request_rules(
        &mut self,
        r: &ProxyRules,
        be: Option<&Arc<Backend>>,
        info: &fulcrum_http::Info,
    ) -> Option<Next> {
        let mut start = 0;
        loop {
            let verdict = {
                let body = body_view(&self.cbuf, self.req.info().body);
                let max_input = self.http.limits.max_head;
                let data_htx = *self
                    .req_data_htx
                    .get_or_insert_with(|| rules::room::data_len(&self.req, body.len(), max_input));
                let mut base = rules_base(
                    self.fe,
                    self.http,
                    self.peer,
                    self.local,
                    be.map(|b| &**b),
                    None,
                    body,
                    conn_of(self.h2_conn, &self.client),
                    self.h2_conn.is_some(),
                    self.pp.as_deref(),
                    self.bind_no,
                );
                base.data_htx = data_htx;
                let v = rules::run(
                    &r.http_request,
                    start,
                    &r.acls,
                    &base,
                    &mut self.req,
                    None,
                    &mut self.vars,
                    &mut self.scratch,
                );
                match v {
                    Verdict::Continue
                        if r.restrict_hdr_names != 0
                            && !restrict_header_names(&mut self.req, r.restrict_hdr_names) =>
                    {
                        Verdict::Deny(403, None)
                    }
                    Verdict::Continue => {
                        // Legacy redirect rules come after http-request rules.
                        let redirect = r.redirects.iter().find(|rule| {
                            let ctx = base.ctx(&self.req, None, &self.vars);
                            rules::holds(&rule.cond, &r.acls, &ctx)
                                && !matches!(&rule.action, rules::Action::Redirect(rd) if rd.skipped(&ctx))
                        });
                        match redirect.map(|rule| &rule.action) {
                            Some(rules::Action::Redirect(rd)) => Verdict::Redirect(rd),
                            _ => Verdict::Continue,
                        }
                    }
                    v => v,
                }
            };
            self.sync_addrs();
            let (cause, phase) = match &verdict {
                Verdict::Return(_)
                | Verdict::Redirect(_)
                | Verdict::Prometheus
                | Verdict::Auth(_) => (Cause::Local, Phase::Request),
                Verdict::RewriteFailed => (Cause::Internal, Phase::Request),
                Verdict::Tarpit(_) => (Cause::Proxy, Phase::Tarpit),
                _ => (Cause::Proxy, Phase::Request),
            };
            // A denied or tarpitted request is an HTTP error for what the session tracks.
            if matches!(verdict, Verdict::Deny(..) | Verdict::Tarpit(_) | Verdict::Auth(_)) {
                if let Some(sc) = &self.vars.sc {
                    sc.http_error();
                }
            }
            let built = match verdict {
                Verdict::Continue => return None,
                Verdict::WaitForBody { time, at_least, resume } => {
                    if !self.wait_for_body(info, time, at_least).await {
                        // The body did not come in time: HAProxy's 408.
                        self.o.end(Cause::ClientTimeout, Phase::Request);
                        let mut i = *info;
                        i.conn_close = true;
                        return Some(self.answer(408, &i, be).await);
                    }
                    start = resume;
                    continue;
                }
                Verdict::Deny(status, reply) => match reply {
                    Some(rp) => Built::Bytes(self.build_reply(rp, be)),
                    None => Built::Status(status),
                },
                Verdict::Return(rp) => Built::Bytes(self.build_reply(rp, be)),
                Verdict::Auth(realm) => Built::Bytes(self.auth_reply(realm, be)),
                Verdict::Prometheus => {
                    Built::Bytes(crate::stats::prometheus::offloaded(self.req.target()).await)
                }
                Verdict::Redirect(rd) => {
                    // HAProxy closes after a redirect of a request that has a body.
                    if !matches!(info.body, Body::None | Body::Length(0)) {
                        self.body_unread = false;
                    }
                    Built::Bytes(self.build_redirect(rd, be))
                }
                Verdict::RewriteFailed => {
                    Counters::inc(&self.fe.counters.failed_rewrites);
                    if let Some(b) = be {
                        Counters::inc(&b.counters.failed_rewrites);
                    }
                    Built::Status(500)
                }
                Verdict::Drop => {
                    self.o.end(cause, phase);
                    return Some(Next::Close);
                }
                Verdict::Tarpit(status) => {
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
                    Built::Status(status)
                }
            };
            self.o.end(cause, phase);
            let next = match built {
                Built::Status(status) => self.answer(status, info, be).await,
                Built::Bytes(bytes) => self.answer_bytes(bytes, info, be).await,
                Built::Drop => Next::Close,
            };
            return Some(next);
        }
    }

    /// Picks the backend: the first `use_backend` whose condition holds, else the default.
    pub(super) fn choose_backend(&mut self) -> Option<Arc<Backend>> {
        if self.fe.rules.use_backends.is_empty() {
            return self.fe.backend.clone();
        }
        let base = self.base(None);
        let ctx = base.ctx(&self.req, None, &self.vars);
        rules::switching::choose(self.fe, &ctx)
    }

    /// Runs the backend's then the frontend's `http-response` rules on `self.resp`.
    /// Returns a status to answer instead when a rule denies the response.
    pub(super) async fn response_rules(
        &mut self,
        be: &Arc<Backend>,
        server: Option<&str>,
        sc: &mut ServerConn,
    ) -> Option<Built> {
        let own = self.is_own_backend(be);
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
        let mut base = rules_base(
            self.fe,
            self.http,
            self.peer,
            self.local,
            be,
            server,
            &[],
            conn_of(self.h2_conn, &self.client),
            self.h2_conn.is_some(),
            self.pp.as_deref(),
            self.bind_no,
        );
        base.server_stream = server_stream;
        base.data_htx = self.resp_data_htx.unwrap_or(0);
        let (resp, req) = (&mut self.resp, &self.req);
        rules::run(list, start, acls, &base, resp, Some(req), &mut self.vars, &mut self.scratch)
    }

    /// Runs `http-after-response` rules (backend's, then frontend's) on `self.resp`.
    pub(super) fn after_response(&mut self, be: Option<&Arc<Backend>>, server: Option<&str>) {
        let own = be.is_some_and(|b| self.is_own_backend(b));
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

/// `option http-restrict-req-hdr-names delete|reject` (`mode` 1 or 2): header names with a
/// character other than a letter, a digit or `-` are removed, or (false) refuse the request.
fn restrict_header_names(req: &mut Head, mode: u8) -> bool {
    let bad = |n: &[u8]| n.iter().any(|&c| !c.is_ascii_alphanumeric() && c != b'-');
    if !req.headers().any(|(n, _)| bad(n)) {
        return true;
    }
    if mode == 2 {
        return false;
    }
    req.retain_headers(|n, _| !bad(n));
    true
}
