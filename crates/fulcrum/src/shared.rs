//! What every worker and session of the running plan reads: the plan's process-wide settings
//! and proxies ([`Shared`]), what the process knows of itself ([`Process`]), and the current
//! one for code that has no other way to it ([`shared`]: the stats page, the runtime API).
//! [`Proxies`] holds the frontends, backends, stick tables and global log targets, with the
//! registry that finds a proxy by name and id.
//!
//! Must not touch: how workers run or plans are built (`runtime`, `cli::reload`).

use std::sync::Arc;

use crate::frontend::limit::Limit;

/// What every worker shares.
#[derive(Debug)]
pub struct Shared {
    /// The process-wide `maxconn` (the same across reloads).
    pub global_limit: Arc<Limit>,
    /// `-d`: one line per session on stderr.
    pub debug: bool,
    /// `tune.pool-low-fd-ratio` and `tune.pool-high-fd-ratio` of the process's descriptors:
    /// the idle server connections' budget (`http::pool::FdLimits`).
    pub pool_fds: (usize, usize),
    /// `tune.h2.*`.
    pub h2: fulcrum_config::TuneH2,
    /// `tune.maxaccept`: connections one listener accepts per wake-up (`usize::MAX`: all).
    pub max_accept: usize,
    /// `tune.bufsize`: the largest answer a check reads.
    pub bufsize: usize,
    /// The plan's proxies, stick tables and global log targets (the first worker samples
    /// the backends' rates and purges the tables each second).
    pub proxies: Arc<Proxies>,
    /// `hard-stop-after`: a soft stop lasts at most this long.
    pub hard_stop_after: Option<std::time::Duration>,
    /// `grace`: the listeners keep accepting this long after a soft stop is asked for.
    pub grace: Option<std::time::Duration>,
    /// A soft stop has begun (`show info`'s `Stopping`).
    pub stopping: std::sync::atomic::AtomicBool,
    /// `maxconnrate`, `maxsessrate` / `set rate-limit sessions global` (the same across
    /// reloads).
    pub conn_rate: Arc<crate::frontend::rate::RateLimit>,
    pub sess_rate: Arc<crate::frontend::rate::RateLimit>,
    /// `maxsslrate` / `set rate-limit ssl-sessions global`: connections accepted on TLS binds.
    pub ssl_rate: Arc<crate::frontend::rate::RateLimit>,
    /// `maxcomprate` and `maxcompcpuusage` (the same across reloads).
    pub comp_rate: Arc<crate::frontend::rate::CompRate>,
    /// What the process knows of itself (`show info`, the stats page).
    pub process: Process,
}

/// A plan's proxies and what goes with them, held once (by the plan, and by each worker's
/// [`Shared`]), with the registry by name and id the runtime API and the stats page use.
#[derive(Debug)]
pub struct Proxies {
    /// Every frontend (and `listen`), in configuration order.
    pub frontends: Vec<Arc<crate::frontend::Frontend>>,
    /// Every backend (and `listen`), in configuration order.
    pub backends: Vec<Arc<crate::backend::Backend>>,
    /// `global`'s log targets: where process-wide messages go (HAProxy's `send_log(NULL, ...)`).
    pub global_logger: Option<Arc<crate::log::syslog::Logger>>,
    /// The stick tables, by the name of the proxy declaring them.
    pub tables: Arc<crate::stick::Tables>,
    /// The `cache` sections.
    pub caches: Arc<crate::cache::Caches>,
}

impl Proxies {
    pub fn backend(&self, name: &str) -> Option<&Arc<crate::backend::Backend>> {
        self.backends.iter().find(|b| b.name == name)
    }
    pub fn backend_by_id(&self, id: u32) -> Option<&Arc<crate::backend::Backend>> {
        self.backends.iter().find(|b| b.id == id)
    }
    pub fn frontend(&self, name: &str) -> Option<&Arc<crate::frontend::Frontend>> {
        self.frontends.iter().find(|f| f.name == name)
    }
    pub fn frontend_by_id(&self, id: u32) -> Option<&Arc<crate::frontend::Frontend>> {
        self.frontends.iter().find(|f| f.id == id)
    }
}

/// What the process knows of itself from start-up.
#[derive(Debug)]
pub struct Process {
    pub started: std::time::SystemTime,
    pub started_at: std::time::Instant,
    pub nbthread: usize,
    /// The `maxconn` the process started with (`Hard_maxconn`).
    pub hard_maxconn: u32,
    pub ulimit_n: u64,
    pub node: String,
    pub description: Option<String>,
    /// Listening sockets, counted once per address (not per worker).
    pub listeners: usize,
}

/// The current generation's shared state, for work done away from the workers (statistics
/// rendering, the runtime API); replaced by each reload.
static SHARED: std::sync::RwLock<Option<Arc<Shared>>> = std::sync::RwLock::new(None);

/// The shared state of the running process's current plan (set once workers start).
pub fn shared() -> Option<Arc<Shared>> {
    SHARED.read().unwrap_or_else(|e| e.into_inner()).clone()
}

pub fn set(s: &Arc<Shared>) {
    *SHARED.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(s));
}
