//! A transaction's questions to SPOE agents (`analyse::spoe`): the messages built on the
//! transaction, sent through this worker's agent connections (`crate::spoe`), the answer
//! applied before the analysers go on. Nothing here waits beyond the agent's
//! `timeout processing`.

use std::time::Instant;

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
            Err(code) => Answer::Failed(code),
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
        let engines = !self.fe.rules.spoe.is_empty() || !be.rules.spoe.is_empty();
        engines && !self.t.vars.spoe_srv_asked
    }

    /// `on-server-session`, once per stream (not again for a retry), as the server connection
    /// is ready and before the request goes (see `analyse::spoe::server_session_asks`).
    #[cold]
    #[inline(never)]
    pub(super) async fn spoe_server_session(&mut self, be: &Backend, idx: usize) {
        self.t.vars.spoe_srv_asked = true;
        let server = be.servers.get(idx).map(|s| s.name.clone());
        for ask in crate::http::analyse::spoe::server_session_asks(self.fe, be) {
            self.spoe(ask, Some(be), server.as_deref(), false).await;
        }
    }
}
