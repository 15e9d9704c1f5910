//! The backend as rules see it ([`BackendView`]).

use std::collections::HashMap;
use std::sync::Arc;

use fulcrum_config as cfg;

use super::Backend;
use crate::rules::view::{BackendView, Backends};
use crate::server::Server;

impl BackendView for Backend {
    fn name(&self) -> &str {
        &self.name
    }

    fn servers(&self) -> &[Server] {
        &self.servers
    }

    fn usable_servers(&self) -> usize {
        Backend::usable_servers(self)
    }

    fn active_sessions(&self) -> u32 {
        Backend::active_sessions(self)
    }

    fn fact(&self, what: cfg::BeFact) -> i64 {
        let ms = |d: Option<std::time::Duration>| d.map_or(0, |d| d.as_millis() as i64);
        match what {
            cfg::BeFact::Id => i64::from(self.id),
            cfg::BeFact::ConnFree => self.conn_free(),
            cfg::BeFact::ServerTimeout | cfg::BeFact::CurServerTimeout => ms(self.timeouts.server),
            cfg::BeFact::TunnelTimeout | cfg::BeFact::CurTunnelTimeout => ms(self.timeouts.tunnel),
        }
    }

    fn server_fact(&self, idx: usize, what: cfg::SrvFact) -> i64 {
        use crate::counters::Counters;
        let Some(s) = self.servers.get(idx) else { return 0 };
        match what {
            cfg::SrvFact::Queue => i64::from(self.server_queued(idx)),
            cfg::SrvFact::SessRate => {
                s.counters.sess_rate.read(Counters::get(&s.counters.sessions)) as i64
            }
            // (Fulcrum keeps it in sixteenths; HAProxy's is in the configured unit.)
            cfg::SrvFact::Weight => i64::from(s.weight().div_ceil(16)),
            cfg::SrvFact::IWeight => i64::from(s.state().iweight),
            cfg::SrvFact::UWeight => i64::from(s.state().uweight),
            cfg::SrvFact::ConnFree => match s.maxconn() {
                0 => -1,
                _ => i64::from(self.limit(idx).saturating_sub(s.cur_conns())),
            },
        }
    }

    /// `be_sess_rate`, `connslots`, `queue`, `avg_queue` of a backend, as HAProxy computes them.
    fn figure(&self, fetch: &cfg::Fetch) -> i64 {
        let be = self;
        match fetch {
            cfg::Fetch::BeSessRate { .. } => be.session_rate() as i64,
            cfg::Fetch::Queue { .. } => i64::from(be.queued()),
            cfg::Fetch::AvgQueue { .. } => {
                let (queued, n) = (i64::from(be.queued()), be.usable_servers() as i64);
                if n > 0 {
                    (queued + n - 1) / n
                } else {
                    queued * 2
                }
            }
            _ => {
                let mut slots = 0i64;
                for (i, s) in be.servers.iter().enumerate().filter(|(_, s)| s.is_up()) {
                    let (maxconn, maxqueue) = (be.limit(i), s.maxqueue);
                    if maxconn == 0 || maxqueue == 0 {
                        return -1;
                    }
                    slots += i64::from(maxconn) - i64::from(s.cur_conns()) + i64::from(maxqueue)
                        - i64::from(be.server_queued(i));
                }
                slots
            }
        }
    }
}

impl Backend {
    /// `be_conn_free`: as HAProxy 2.6, the free slots of the servers not down (backups only
    /// when no active server is up), -1 as soon as one has no `maxconn`.
    fn conn_free(&self) -> i64 {
        let active_up = self.servers.iter().any(|s| !s.backup && s.is_up());
        let mut free = 0i64;
        for (i, s) in self.servers.iter().enumerate() {
            if !s.is_up() || (active_up && s.backup) {
                continue;
            }
            let max = self.limit(i);
            if s.maxconn() == 0 {
                return -1;
            }
            free += i64::from(max.saturating_sub(s.cur_conns()));
        }
        free
    }
}

impl Backends for HashMap<String, Arc<Backend>> {
    fn named(&self, name: &str) -> Option<&dyn BackendView> {
        self.get(name).map(|b| &**b as &dyn BackendView)
    }
}
