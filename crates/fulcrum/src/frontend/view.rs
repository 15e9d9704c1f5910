//! The frontend as rules see it ([`FrontendView`]).

use std::net::SocketAddr;

use super::Frontend;
use crate::rules::sample::{Ctx, Vars};
use crate::rules::view::FrontendView;

impl FrontendView for Frontend {
    fn current_conns(&self) -> u32 {
        self.limit.current()
    }

    fn bind_name(&self, number: u32) -> Option<&str> {
        self.binds.iter().find(|b| b.number == number).and_then(|b| b.name.as_deref())
    }
}

impl Frontend {
    /// What a rule run on a connection alone sees (no request yet): its addresses, the
    /// frontend, `vars`.
    pub fn ctx<'a>(
        &'a self,
        src: Option<SocketAddr>,
        dst: Option<SocketAddr>,
        vars: &'a Vars,
    ) -> Ctx<'a> {
        let (src, dst) = vars.addrs.as_ref().map_or((src, dst), |a| (a.src, a.dst));
        Ctx {
            src,
            dst,
            frontend: &self.name,
            fe: Some(self),
            ..Ctx::process(&self.proc_vars, &*self.backends, vars)
        }
    }
}
