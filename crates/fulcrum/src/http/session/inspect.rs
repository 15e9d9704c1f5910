//! `tcp-response content` rules inside an HTTP transaction (the request's `tcp-request
//! content` rules run among the analysers, `analyse`): the backend's response rules when the
//! response's head arrives
//! (before stick rules and `http-response` rules), as HAProxy's analysers order them. A
//! response rule that cannot be decided yet (`WAIT_END`) waits for `tcp-response
//! inspect-delay`. Reads and writes only the transaction's variables.

use std::cell::Cell;

use crate::backend::Backend;
use crate::counters::Counters;
use crate::outcome::{Cause, Phase};
use crate::rules::sample::Vars;
use crate::rules::stick::Level;
use crate::rules::{self, TcpVerdict};

use super::Session;

impl Session<'_> {
    /// Asks the SPOE engines `on-tcp-response`, then runs the backend's `tcp-response
    /// content` rules on the response's head of server `idx`; false when one rejects
    /// (counted and recorded: the connection then closes without an answer).
    pub(super) async fn tcp_response_accepts(&mut self, be: &Backend, idx: usize) -> bool {
        if self.has_engines(be) {
            let ev = fulcrum_config::spoe::SpoeEvent::TcpResponse;
            self.spoe_event(ev, be, idx, true).await;
        }
        if be.rules.tcp_response.is_empty() {
            return true;
        }
        let accepts = self.tcp_response_rules(be, &be.servers[idx].name).await;
        if !accepts {
            Counters::inc(&be.counters.denied_resp);
            self.fe.count(self.bind_no, |c| &c.denied_resp);
            self.t.o.end(Cause::Proxy, Phase::Done);
        }
        accepts
    }

    async fn tcp_response_rules(&mut self, be: &Backend, server: &str) -> bool {
        let delay = be.response_inspect_delay;
        let deadline = delay.map(|d| tokio::time::Instant::now() + d);
        let more = Cell::new(false);
        let mut from = 0;
        loop {
            let done = deadline.is_none_or(|d| tokio::time::Instant::now() >= d);
            let mut vars = std::mem::take(&mut self.t.vars);
            let v = {
                let mut base = self.base(Some(be));
                base.server = Some(server);
                let empty = Vars::default();
                let mut mk = base.ctx(&self.t.resp, Some(&self.t.req), &empty);
                mk.more = (!done).then_some(&more);
                let r = &be.rules;
                rules::tcp_eval(&r.tcp_response, from, &r.acls, &mk, &mut vars, Level::Stream)
            };
            self.t.vars = vars;
            match v {
                TcpVerdict::Wait(i) => from = i,
                // `send-spoe-group`: the backend's engine is asked, then the list goes on;
                // without `tcp-response inspect-delay` it does nothing, as in HAProxy 2.6
                // (measured: the agent's answer is never waited for).
                TcpVerdict::Spoe { engine, group, resume } => {
                    use crate::http::analyse::spoe::{Side, SpoeAsk, What};
                    if delay.is_some() {
                        let ask = SpoeAsk { side: Side::Backend, engine, what: What::Group(group) };
                        Box::pin(self.spoe(ask, Some(be), Some(server), true)).await;
                    }
                    from = resume;
                    continue;
                }
                v => return v == TcpVerdict::Accept,
            }
            // Nothing more arrives for the head's rules: only the delay can end.
            if let Some(d) = deadline {
                tokio::time::sleep_until(d).await;
            }
        }
    }
}
