//! Where SPOE stops the analysers, as HAProxy's SPOE filter does: before the frontend's
//! `http-request` rules (`on-frontend-http-request`, its `AN_REQ_HTTP_PROCESS_FE`
//! pre-analyser), before the backend's (`on-backend-http-request`, for the frontend's engines
//! then the backend's), before any `http-response` rule (`on-http-response`), and at each
//! `send-spoe-group` rule. Each stop is a [`SpoeAsk`]; the session sends what
//! [`Txn::spoe_payload`] builds to the agent and hands the answer to [`Txn::spoe_answer`]
//! (variables set for the rules after it), then the analysers go on.
//!
//! Must not touch: sockets, the agents' connections (`crate::spoe`).

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::spoe::SpoeEvent;

use super::Txn;
use crate::backend::Backend;
use crate::frontend::Frontend;
use crate::rules::spoe::{Answer, Engine};
use crate::rules::stick::Level;
use crate::rules::TcpVerdict;

/// Whose engine a stop asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Frontend,
    Backend,
}

/// What to send to an agent: the messages of an event or of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Event(SpoeEvent),
    Group(usize),
}

/// A stop for an agent: the engine (its place in the frontend's or the backend's
/// `ProxyRules::spoe`) and the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpoeAsk {
    pub side: Side,
    pub engine: usize,
    pub what: What,
}

impl SpoeAsk {
    /// The engine asked.
    pub fn engine<'e>(&self, fe: &'e Frontend, be: Option<&'e Backend>) -> Option<&'e Arc<Engine>> {
        match self.side {
            Side::Frontend => fe.rules.spoe.get(self.engine),
            Side::Backend => be?.rules.spoe.get(self.engine),
        }
    }

    /// The messages asked for.
    pub fn messages<'e>(&self, engine: &'e Engine) -> &'e [usize] {
        match self.what {
            What::Event(ev) => engine.on(ev),
            What::Group(g) => engine.group(g),
        }
    }
}

/// The next engine at or after `*from` in `engines` that sends messages on `ev` (`*from` then
/// points after it).
pub(super) fn next_event(
    engines: &[Arc<Engine>],
    side: Side,
    ev: SpoeEvent,
    from: &mut usize,
) -> Option<SpoeAsk> {
    while let Some(e) = engines.get(*from) {
        let engine = *from;
        *from += 1;
        if !e.on(ev).is_empty() {
            return Some(SpoeAsk { side, engine, what: What::Event(ev) });
        }
    }
    None
}

/// `on-backend-http-request` and `on-http-response`: the frontend's engines, then the
/// backend's (unless the backend is the frontend's own `listen`), `*from` counting both.
pub(super) fn next_of_both(
    fe: &Frontend,
    be: &Backend,
    own: bool,
    ev: SpoeEvent,
    from: &mut usize,
) -> Option<SpoeAsk> {
    let n = fe.rules.spoe.len();
    if *from < n {
        if let Some(a) = next_event(&fe.rules.spoe, Side::Frontend, ev, from) {
            return Some(a);
        }
    }
    if own {
        return None;
    }
    let mut i = *from - n;
    let a = next_event(&be.rules.spoe, Side::Backend, ev, &mut i);
    *from = n + i;
    a
}

/// The stops of `ev` (`on-server-session`: once per stream, as its server connection is
/// ready, HAProxy's `channel_start_analyze` of the response; `on-tcp-response`: before the
/// `tcp-response content` rules, its `AN_RES_INSPECT`): the frontend's engines, then the
/// backend's unless it is the frontend's own `listen`.
pub fn asks_of(fe: &Frontend, be: &Backend, ev: SpoeEvent) -> Vec<SpoeAsk> {
    let own = be.is_listen
        && be.name == fe.name
        && fe.backend.as_deref().is_some_and(|b| std::ptr::eq(b, be));
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(a) = next_of_both(fe, be, own, ev, &mut from) {
        out.push(a);
    }
    out
}

/// How `AN_REQ_INSPECT_FE|BE` ended among the analysers.
pub enum Inspect {
    Accept,
    Reject,
    /// An engine is asked (an event, or a `send-spoe-group` rule), then call again.
    Ask(SpoeAsk),
}

impl Txn<'_> {
    /// `AN_REQ_INSPECT_FE` (`be`: none) or `_BE`, resumable: first the SPOE engines'
    /// `on-frontend-tcp-request` (the frontend's) or `on-backend-tcp-request` (the frontend's,
    /// then the backend's), from `*from` until `*engines_done`; then the proxy's
    /// `tcp-request content` rules from `*from`, stopping at a `send-spoe-group`.
    pub(super) fn inspect(
        &mut self,
        be: Option<&Arc<Backend>>,
        engines_done: &mut bool,
        from: &mut usize,
    ) -> Inspect {
        let fe = self.fe;
        if !*engines_done {
            let ask = match be {
                // `on-client-session` when the stream starts (HAProxy's
                // `channel_start_analyze`), then `on-frontend-tcp-request`.
                None => {
                    let (engines, n) = (&fe.rules.spoe, fe.rules.spoe.len());
                    let mut a = None;
                    if *from < n {
                        a = next_event(engines, Side::Frontend, SpoeEvent::ClientSession, from);
                        if a.is_none() {
                            *from = n;
                        }
                    }
                    if a.is_none() && n > 0 {
                        let mut i = *from - n;
                        let ev = SpoeEvent::FrontendTcpRequest;
                        a = next_event(engines, Side::Frontend, ev, &mut i);
                        *from = n + i;
                    }
                    a
                }
                Some(be) => next_of_both(fe, be, false, SpoeEvent::BackendTcpRequest, from),
            };
            if let Some(a) = ask {
                return Inspect::Ask(a);
            }
            (*engines_done, *from) = (true, 0);
        }
        let r = be.map_or(&fe.rules, |b| &b.rules);
        if r.tcp_content.is_empty() {
            return Inspect::Accept;
        }
        let mut vars = std::mem::take(self.vars);
        let v = {
            let base = self.base(be.map(|b| &**b));
            let empty = crate::rules::sample::Vars::default();
            let mk = base.ctx(self.req, None, &empty);
            let list = &r.tcp_content;
            crate::rules::tcp_eval(list, *from, &r.acls, &mk, &mut vars, Level::Stream)
        };
        *self.vars = vars;
        self.sync_addrs();
        match v {
            TcpVerdict::Spoe { engine, group, resume } => {
                *from = resume;
                let side = if be.is_some() { Side::Backend } else { Side::Frontend };
                Inspect::Ask(SpoeAsk { side, engine, what: What::Group(group) })
            }
            TcpVerdict::Reject => Inspect::Reject,
            TcpVerdict::Accept | TcpVerdict::Wait(_) => Inspect::Accept,
        }
    }

    /// The NOTIFY frame's messages for `ask` as the transaction is now (`server`: the one
    /// connected; `response`: the response's analysers ask; see [`Engine::payload`]), with the frame's stream id (the
    /// stream's number, as HAProxy's) and frame id (the engine's count in the transaction).
    pub fn spoe_payload(
        &mut self,
        engine: &Engine,
        ask: &SpoeAsk,
        be: Option<&Backend>,
        server: Option<&str>,
        response: bool,
    ) -> Result<Option<(Vec<u8>, u64, u64)>, u32> {
        if self.vars.spoe_stopped(engine) {
            return Ok(None);
        }
        let which = ask.messages(engine);
        let base = self.base(be);
        let mut ctx = match response {
            false => base.ctx(self.req, None, self.vars),
            true => base.ctx(self.resp, Some(self.req), self.vars),
        };
        ctx.server = server.or(ctx.server);
        let r = engine.payload(which, &ctx);
        self.vars.flush();
        let Some(payload) = r? else { return Ok(None) };
        let stream = *self.stream_no.get_or_insert_with(crate::log::next_stream_number);
        Ok(Some((payload, stream, self.vars.spoe_frame(engine))))
    }

    /// What the agent answered (`took`: this exchange's time), applied (see
    /// [`Engine::answer`]).
    pub fn spoe_answer(&mut self, engine: &Engine, answer: Answer, took: Duration) {
        let proc_vars = self.base(None).proc_vars;
        engine.answer(answer, took, self.vars, proc_vars);
        self.note(|| format!("SPOE agent '{}': answered in {} ms", engine.agent, took.as_millis()));
    }
}
