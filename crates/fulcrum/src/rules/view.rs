//! What rules, samples and log formats read of the run-time proxies, as traits the proxies
//! implement (`backend`, `frontend`): a proxy holds its compiled rules, so the rules sit below
//! the proxies and see them only through these views (`fe_conn`, `so_name`, `nbsrv`,
//! `be_conn`, `srv_is_up`, `%b`, `%bc`...).
//!
//! Must not touch: the proxies' state (read only).

use fulcrum_config as cfg;

use crate::server::Server;

/// A frontend as rules read it.
pub trait FrontendView: Sync {
    /// Its connections now (`fe_conn`, `%fc`).
    fn current_conns(&self) -> u32;
    /// The `name` of its `bind` line number `number` (from 1; `so_name`).
    fn bind_name(&self, number: u32) -> Option<&str>;
    /// `fe_id`, `fe_req_rate`, `fe_sess_rate`, `fe_client_timeout`, and of its `bind` line
    /// number `bind` `so_id` and `dst_conn` (`None` for `fe_defbe`, or an unknown line).
    fn fact(&self, what: cfg::FeFact, bind: u16) -> Option<i64>;
    /// The name of its default backend (`fe_defbe`).
    fn default_backend(&self) -> Option<&str>;
}

/// A backend as rules read it.
pub trait BackendView: Sync {
    fn name(&self) -> &str;
    /// Its servers, in configuration order (`srv_is_up`, `srv_conn`, `srv_id`, `%s`, stick
    /// entries naming a server).
    fn servers(&self) -> &[Server];
    /// Servers that may take traffic (`nbsrv`).
    fn usable_servers(&self) -> usize;
    /// Sessions it serves now (`be_conn`, `%bc`).
    fn active_sessions(&self) -> u32;
    /// `be_sess_rate`, `connslots`, `queue` and `avg_queue`, as HAProxy computes them.
    fn figure(&self, fetch: &cfg::Fetch) -> i64;
    /// `be_id`, `be_conn_free`, its timeouts.
    fn fact(&self, what: cfg::BeFact) -> i64;
    /// Server number `idx`'s `srv_queue`, `srv_sess_rate`, weights and `srv_conn_free`.
    fn server_fact(&self, idx: usize, what: cfg::SrvFact) -> i64;
}

/// Every backend of the plan by name (`nbsrv(<name>)`, `be_conn(<name>)`).
pub trait Backends: Sync {
    fn named(&self, name: &str) -> Option<&dyn BackendView>;
}

/// No backends (a server's `sni` expression, tests).
pub struct NoBackends;

impl Backends for NoBackends {
    fn named(&self, _: &str) -> Option<&dyn BackendView> {
        None
    }
}
