//! The frontend as rules see it ([`FrontendView`]).

use std::net::SocketAddr;

use fulcrum_config as cfg;

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

    fn fact(&self, what: cfg::FeFact, bind: u16) -> Option<i64> {
        use crate::counters::Counters;
        let c = &self.counters;
        let ms = |d: Option<std::time::Duration>| d.map_or(0, |d| d.as_millis() as i64);
        Some(match what {
            cfg::FeFact::Id => i64::from(self.id),
            cfg::FeFact::ReqRate => c.req_rate.read(Counters::get(&c.requests)) as i64,
            cfg::FeFact::SessRate => c.sess_rate.read(Counters::get(&c.sessions)) as i64,
            cfg::FeFact::ClientTimeout => ms(self.timeouts.client),
            cfg::FeFact::SoId => {
                i64::from(self.binds.iter().find(|b| b.number == u32::from(bind))?.so_id)
            }
            cfg::FeFact::DstConn => {
                let b = self.binds.iter().find(|b| b.number == u32::from(bind))?;
                i64::from(b.limit.current())
            }
            cfg::FeFact::DefBe => return None,
        })
    }

    fn default_backend(&self) -> Option<&str> {
        self.backend.as_deref().map(|b| b.name.as_str())
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
