//! A transaction's Lua actions (`http-request lua.<name>`, `http-response lua.<name>`): the
//! rules stop at one ([`LuaAsk`]), the session runs it step by step ([`Txn::lua_step`], each
//! step lending the script the request, the response in response rules, and the variables),
//! waits between steps as the script asks, then calls the analysers again.
//!
//! Must not touch: Lua states (`crate::lua`).

use crate::lua::action::{Call, Step};
use crate::lua::txn_access::Access;

use super::Txn;

/// A rule's `lua.<name>` and its arguments.
#[derive(Debug)]
pub struct LuaAsk {
    pub name: Box<str>,
    pub args: Box<[String]>,
}

impl Txn<'_> {
    /// Runs `call` until it ends or waits, on the request (`response`: and the response).
    #[cold]
    #[inline(never)]
    pub fn lua_step(&mut self, call: &mut Call, response: bool) -> Step {
        let proc_vars = self.base(None).proc_vars;
        let resp = if response { Some(&mut *self.resp) } else { None };
        let access = Access { req: self.req, resp, vars: self.vars, proc_vars };
        let step = call.step(access);
        self.vars.flush();
        step
    }
}
