//! A transaction's questions to SPOE agents (`analyse::spoe`): the messages built on the
//! transaction, sent through this worker's agent connections (`crate::spoe`), the answer
//! applied before the analysers go on. Nothing here waits beyond the agent's
//! `timeout processing`.

use std::time::Instant;

use fulcrum_config::spoe::SpoeEvent;

use super::Session;
use crate::backend::Backend;
use crate::http::analyse::spoe::SpoeAsk;
use crate::rules::spoe::Answer;

impl Session<'_> {
    /// Asks the agent what `ask` says (`server`: the server's name once one is connected;
    /// `response`: for the response's analysers) and applies its answer to the transaction.
    #[cold]
    pub(super) async fn spoe(
        &mut self,
        ask: SpoeAsk,
        be: Option<&Backend>,
        server: Option<&str>,
        response: bool,
    ) {
        let Some(engine) = ask.engine(self.fe, be).cloned() else { return };
        let start = Instant::now();
        let answer = match self.txn().spoe_payload(&engine, &ask, be, server, response) {
            Ok(None) => return,
            Err(code) => {
                let failed = Answer::Failed(code);
                let stream = self.t.stream_no.unwrap_or(0);
                crate::spoe::processed(
                    &engine,
                    ask.messages(&engine),
                    stream,
                    &failed,
                    (start, None),
                );
                failed
            }
            Ok(Some((payload, stream, frame))) => {
                crate::spoe::ask(&engine, ask.messages(&engine), payload, Some(stream), frame).await
            }
        };
        self.txn().spoe_answer(&engine, answer, start.elapsed());
    }

    /// Whether the stream's engines are still to be asked `on-server-session` (see
    /// [`Session::spoe_server_session`]).
    #[inline]
    pub(super) fn asks_server_session(&self, be: &Backend) -> bool {
        self.has_engines(be) && !self.t.vars.spoe_srv_asked
    }

    /// Whether the stream has SPOE engines (the frontend's or `be`'s).
    #[inline]
    pub(super) fn has_engines(&self, be: &Backend) -> bool {
        !self.fe.rules.spoe.is_empty() || !be.rules.spoe.is_empty()
    }

    /// `on-server-session`, once per stream (not again for a retry), as the server connection
    /// is ready and before the request goes (see `analyse::spoe::asks_of`).
    #[cold]
    #[inline(never)]
    pub(super) async fn spoe_server_session(&mut self, be: &Backend, idx: usize) {
        self.t.vars.spoe_srv_asked = true;
        self.spoe_event(SpoeEvent::ServerSession, be, idx, false).await;
    }

    /// Asks the stream's engines about `ev` once server `idx` of `be` is connected
    /// (`on-server-session`; `on-tcp-response` before the backend's `tcp-response content`
    /// rules, which see its variables: `response`, the head is in).
    #[cold]
    #[inline(never)]
    pub(super) async fn spoe_event(
        &mut self,
        ev: SpoeEvent,
        be: &Backend,
        idx: usize,
        response: bool,
    ) {
        let server = be.servers.get(idx).map(|s| s.name.clone());
        for ask in crate::http::analyse::spoe::asks_of(self.fe, be, ev) {
            self.spoe(ask, Some(be), server.as_deref(), response).await;
        }
    }
}
