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

impl Backends for HashMap<String, Arc<Backend>> {
    fn named(&self, name: &str) -> Option<&dyn BackendView> {
        self.get(name).map(|b| &**b as &dyn BackendView)
    }
}
