//! A transaction's questions to SPOE agents (`analyse::spoe`): the messages built on the
//! transaction, sent through this worker's agent connections (`crate::spoe`), the answer
//! applied before the analysers go on. Nothing here waits beyond the agent's
//! `timeout processing`.

use std::sync::Arc;
use std::time::Instant;

use super::Session;
use crate::backend::Backend;
use crate::http::analyse::spoe::SpoeAsk;
use crate::rules::spoe::Answer;

impl Session<'_> {
    /// Asks the agent what `ask` says (`response`: for the response's analysers) and applies
    /// its answer to the transaction.
    #[cold]
    pub(super) async fn spoe(&mut self, ask: SpoeAsk, be: Option<&Arc<Backend>>, response: bool) {
        let Some(engine) = ask.engine(self.fe, be.map(|b| &**b)).cloned() else { return };
        let start = Instant::now();
        let answer = match self.txn().spoe_payload(&engine, &ask, be.map(|b| &**b), response) {
            Ok(None) => return,
            Err(code) => Answer::Failed(code),
            Ok(Some((payload, stream, frame))) => {
                crate::spoe::ask(&engine, payload, Some(stream), frame).await
            }
        };
        self.txn().spoe_answer(&engine, answer, start.elapsed());
    }
}
