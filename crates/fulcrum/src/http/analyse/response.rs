//! The response analysers on the message alone, in HAProxy 2.6's order: `AN_RES_STORE_RULES`
//! (`stick store-response`, then the stick entries stored with the server,
//! [`Txn::store_sticks`]), `AN_RES_HTTP_PROCESS_BE` (`http_process_res_common`: the backend's
//! `http-response` rules, then the frontend's, [`Txn::response_rules`]) and the
//! `http-after-response` rules (`http_eval_after_res_rules`, [`Txn::after_response`], also run
//! on the answers Fulcrum makes itself).
//!
//! A `wait-for-body` stops the rules with [`RespStop::WaitForBody`]: the session reads the
//! body into its server buffer and calls again, resuming at the rule after it
//! ([`RespProgress`]). What a response head says for its framing (the client connection kept or
//! closed) is the connection driver's, not the analysers'.
//!
//! Must not touch: sockets, timers, the request's analysers.

use std::sync::Arc;
use std::time::Duration;

use super::{is_own_backend, Built, Txn};
use crate::backend::Backend;
use crate::counters::Counters;
use crate::frontend::Frontend;
use crate::rules::sample::BodyBytes;
use crate::rules::{self, Verdict};
use crate::tls::facts::ServerSide;

/// Where the `http-response` rules are: the backend's list (0), the frontend's (1), and the
/// rule a `wait-for-body` resumes from.
#[derive(Default, Debug)]
pub struct RespProgress {
    list: u8,
    from: usize,
    /// The SPOE engines asked on `on-http-response` so far (`usize::MAX`: all).
    spoe: usize,
}

/// Why [`Txn::response_rules`] stopped.
#[derive(Debug)]
pub enum RespStop {
    /// The response goes on to the client.
    Pass,
    /// `http-response wait-for-body`: the response body (or `at_least` of it) is read for
    /// `time`, then call again; HAProxy answers 504 when it does not come.
    WaitForBody { time: Duration, at_least: Option<u64> },
    /// `on-http-response` or `http-response send-spoe-group`: as the request's
    /// `Stop::Spoe`, then call again.
    Spoe(super::spoe::SpoeAsk),
    /// A `lua.<name>` rule: run it, then call again.
    Lua(super::lua::LuaAsk),
    /// A rule answers instead of the server (`deny`: 502 unless it names a status; `return`,
    /// `redirect`; a failed rewrite: 500; `silent-drop`). `after`: whether the
    /// `http-after-response` rules still run on the answer (not after a redirect).
    Answer { built: Built, after: bool },
}

/// Whether any `http-response` rule may run for a response from `be` (checked before a
/// transaction's view is made).
#[inline]
pub fn has_response_rules(fe: &Frontend, be: &Backend) -> bool {
    !fe.rules.http_response.is_empty()
        || !be.rules.http_response.is_empty()
        || !fe.rules.spoe.is_empty()
        || !be.rules.spoe.is_empty()
}

/// Whether `http-after-response` rules may run (the frontend's, or `be`'s).
#[inline]
pub fn has_after_response(fe: &Frontend, be: Option<&Arc<Backend>>) -> bool {
    !fe.rules.http_after_response.is_empty()
        || be.is_some_and(|b| !b.rules.http_after_response.is_empty())
}

impl Txn<'_> {
    /// `stick store-response` rules, then every key noted for storing (`stores`, the request's
    /// `stick on|store-request` ones too) stored with `server`.
    pub fn store_sticks(
        &mut self,
        be: &Backend,
        stores: &mut rules::stick::Stores,
        server: &crate::server::Server,
    ) {
        let base = self.base(Some(be));
        let ctx = base.ctx(self.resp, Some(self.req), self.vars);
        rules::stick::on_response(&be.rules.stick, &be.rules.acls, &ctx, stores);
        rules::stick::commit(stores, server);
    }

    /// Runs the backend's then the frontend's `http-response` rules on the response from
    /// `server`, from where `p` says (`body`: the response body bytes received with the head
    /// or waited for, for `res.body` and the room left to rewrites; `side`: the server
    /// connection's facts).
    pub fn response_rules(
        &mut self,
        be: &Arc<Backend>,
        server: Option<&str>,
        side: Option<ServerSide<'_>>,
        body: BodyBytes<'_>,
        p: &mut RespProgress,
    ) -> RespStop {
        let body_len = body.data.len();
        let fe = self.fe;
        let own = is_own_backend(fe, be);
        if self.resp_data_htx.is_none() {
            let max_input = self.http.limits.max_head;
            *self.resp_data_htx = Some(rules::room::data_len(self.resp, body_len, max_input));
        }
        if p.spoe != usize::MAX {
            let ev = fulcrum_config::spoe::SpoeEvent::HttpResponse;
            if let Some(ask) = super::spoe::next_of_both(fe, be, own, ev, &mut p.spoe) {
                return RespStop::Spoe(ask);
            }
            p.spoe = usize::MAX;
        }
        while p.list < 2 {
            let (r, run) = if p.list == 0 { (&be.rules, !own) } else { (&fe.rules, true) };
            if !run || r.http_response.is_empty() {
                (p.list, p.from) = (p.list + 1, 0);
                continue;
            }
            let on = (Some(&**be), server, side, body);
            let v = self.run_on_response(&r.http_response, p.from, &r.acls, on);
            let built = match v {
                Verdict::WaitForBody { time, at_least, resume } => {
                    p.from = resume;
                    return RespStop::WaitForBody { time, at_least };
                }
                Verdict::Spoe { engine, group, resume } => {
                    p.from = resume;
                    use super::spoe::{Side, SpoeAsk, What};
                    let side = if p.list == 0 { Side::Backend } else { Side::Frontend };
                    return RespStop::Spoe(SpoeAsk { side, engine, what: What::Group(group) });
                }
                Verdict::Lua { name, args, resume } => {
                    p.from = resume;
                    return RespStop::Lua(super::lua::LuaAsk {
                        name: name.into(),
                        args: args.into(),
                    });
                }
                Verdict::Continue | Verdict::Tarpit(_) | Verdict::Prometheus | Verdict::Auth(_) => {
                    (p.list, p.from) = (p.list + 1, 0);
                    continue;
                }
                Verdict::Drop => Built::Drop,
                Verdict::Deny(status, None) => {
                    Built::Status(if status == 403 { 502 } else { status })
                }
                Verdict::Deny(_, Some(rp)) | Verdict::Return(rp) => {
                    Built::Bytes(self.build_reply(rp, Some(be)))
                }
                Verdict::Redirect(rd) => {
                    let bytes = self.build_redirect(rd, Some(be));
                    return RespStop::Answer { built: Built::Bytes(bytes), after: false };
                }
                Verdict::RewriteFailed => {
                    fe.count(self.bind_no, |c| &c.failed_rewrites);
                    Counters::inc(&be.counters.failed_rewrites);
                    Built::Status(500)
                }
            };
            return RespStop::Answer { built, after: true };
        }
        RespStop::Pass
    }

    /// Runs one list of response rules on the response (the request for context), from rule
    /// `start`; `wait-for-body` stops it.
    fn run_on_response<'r>(
        &mut self,
        list: &'r [rules::Rule],
        start: usize,
        acls: &rules::Acls,
        (be, server, side, body): (
            Option<&Backend>,
            Option<&str>,
            Option<ServerSide<'_>>,
            BodyBytes<'_>,
        ),
    ) -> Verdict<'r> {
        let mut base = self.base(be);
        // Response rules see the response body (no request body), and the server that answered.
        (base.body, base.body_chunked) = (body.data, body.chunked);
        (base.server, base.server_stream) = (server, side);
        base.comp = self.comp;
        base.data_htx = self.resp_data_htx.unwrap_or(0);
        let (resp, req) = (&mut *self.resp, &*self.req);
        rules::run(list, start, acls, &base, resp, Some(req), self.vars, self.scratch)
    }

    /// Runs the `http-after-response` rules (the backend's, then the frontend's) on the
    /// response, a server's or one made here.
    pub fn after_response(&mut self, be: Option<&Arc<Backend>>, server: Option<&str>) {
        let fe = self.fe;
        let own = be.is_some_and(|b| is_own_backend(fe, b));
        let be_rules = be.filter(|_| !own).map(|b| &b.rules);
        for r in be_rules.into_iter().chain(std::iter::once(&fe.rules)) {
            if r.http_after_response.is_empty() {
                continue;
            }
            let list = &r.http_after_response;
            let _ = self.run_on_response(
                list,
                0,
                &r.acls,
                (be.map(|b| &**b), server, None, BodyBytes::default()),
            );
        }
    }
}
