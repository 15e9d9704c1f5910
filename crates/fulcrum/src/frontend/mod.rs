//! A frontend at run time: its binds, limits, client-side timeouts, counters and the backend
//! its sessions go to. Shared read-only by all workers (only atomics change).
//!
//! Must not touch: sockets (the listener owns them) or server selection (the backend does).

pub mod limit;

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::BindAddr;

use crate::backend::Backend;
use crate::counters::Counters;
use limit::Limit;

/// Client-side timeouts (HAProxy takes these from the frontend).
#[derive(Clone, Debug, Default)]
pub struct FrontendTimeouts {
    pub client: Option<Duration>,
    pub client_fin: Option<Duration>,
}

#[derive(Debug)]
pub struct Bind {
    pub addrs: Vec<BindAddr>,
    pub backlog: Option<u32>,
    pub v4v6: bool,
    /// The bind line's own `maxconn`.
    pub limit: Limit,
    /// `mode`/`user`/`group` of its UNIX sockets' files.
    pub unix: fulcrum_config::UnixPerms,
}

#[derive(Debug)]
pub struct Frontend {
    pub name: String,
    /// Stable number among all proxies (`id`, or assigned as HAProxy does).
    pub id: u32,
    pub binds: Vec<Arc<Bind>>,
    /// The frontend's `maxconn`.
    pub limit: Limit,
    pub timeouts: FrontendTimeouts,
    /// Where sessions go: the first `use_backend`, else `default_backend`.
    pub backend: Option<Arc<Backend>>,
    pub counters: Counters,
    /// `mode http` settings; `None` in `mode tcp`.
    pub http: Option<crate::http::HttpProxy>,
    /// A `mode tcp` frontend that may use a `mode http` backend: its client-side HTTP settings
    /// (timeouts, error messages, connection mode) for the connections it upgrades to HTTP.
    pub upgrade: Option<crate::http::HttpProxy>,
    /// ACLs, rules and `use_backend` switching.
    pub rules: crate::rules::ProxyRules,
    /// Every backend by name (dynamic `use_backend`, `nbsrv(<name>)`).
    pub backends: Arc<std::collections::HashMap<String, Arc<Backend>>>,
    /// Rules or headers need the address a client connected to (read once per connection).
    pub needs_dst: bool,
    /// `option clitcpka` (or `tcpka`) and `clitcpka-*`: set on its listening sockets.
    pub client_tcpka: fulcrum_config::TcpKeepAlive,
    /// `proc.` variables, shared by the whole process.
    pub proc_vars: Arc<crate::rules::sample::ProcVars>,
    /// Where its log messages go (`log` lines); `None` without any.
    pub logger: Option<Arc<crate::log::syslog::Logger>>,
    /// Which line each session (mode tcp) or request (mode http) logs, and when.
    pub log: crate::log::Settings,
    /// `disable frontend` (runtime API): its listeners stop accepting until enabled again.
    pub disabled: std::sync::atomic::AtomicBool,
    /// Wakes its accept loops when it is enabled again.
    pub enabled: tokio::sync::Notify,
}

/// Whether a `mode tcp` frontend may hand a connection to a `mode http` backend (HAProxy then
/// upgrades the stream to HTTP): its default backend or a `use_backend` names one, or a
/// dynamic `use_backend` may name any backend and one is in `mode http`.
pub fn may_upgrade(p: &fulcrum_config::Proxy, config: &fulcrum_config::Config) -> bool {
    use fulcrum_config::{BackendTarget, Mode};
    let http = |name: &str| config.backends().any(|b| b.name == name && b.mode == Mode::Http);
    let any_http = || config.backends().any(|b| b.mode == Mode::Http);
    p.default_backend.as_ref().is_some_and(|r| http(&r.name))
        || p.use_backends.iter().any(|u| match &u.target {
            BackendTarget::Name(n) => http(n),
            BackendTarget::Dynamic(_) => any_http(),
        })
}
