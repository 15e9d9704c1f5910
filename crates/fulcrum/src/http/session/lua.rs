//! A transaction's Lua actions run (`analyse::lua`): step by step, waiting between steps as
//! the script asks, its failure logged as HAProxy logs it (the request goes on).

use super::Session;
use crate::http::analyse::lua::LuaAsk;
use crate::lua::action::{Call, Step};

impl Session<'_> {
    /// Runs the action `ask` names on the transaction (`response`: in response rules).
    #[cold]
    #[inline(never)]
    pub(super) async fn lua(&mut self, ask: LuaAsk, response: bool) {
        let Some(mut call) = Call::new(&ask.name, &ask.args) else { return };
        loop {
            match self.txn().lua_step(&mut call, response) {
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Done(_) => return,
                Step::Failed(msg) => {
                    crate::log::alert_as_is(&msg);
                    return;
                }
            }
        }
    }
}
