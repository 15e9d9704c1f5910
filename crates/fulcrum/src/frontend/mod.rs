//! A frontend at run time: its binds, limits, client-side timeouts, counters, rules and the
//! backend its sessions go to (`switching`: `use_backend`), and its log lines (`log`). Shared
//! read-only by all workers (only atomics change). Its timeouts are the configuration's
//! `Timeouts` with HAProxy's defaults applied by `plan::timeouts`, as backends hold theirs.
//!
//! Must not touch: sockets (the listener owns them) or server selection (the backend does).

pub mod limit;
pub mod log;
pub mod rate;
pub mod switching;
mod view;

use std::sync::Arc;

use fulcrum_config::BindAddr;

use crate::backend::Backend;
use crate::counters::Counters;
use limit::Limit;

#[derive(Debug)]
pub struct Bind {
    pub addrs: Vec<BindAddr>,
    pub backlog: Option<u32>,
    /// `IPV6_V6ONLY` (`None`: the system's default).
    pub only_v6: Option<bool>,
    /// `defer-accept`, `tfo`, `mss`, `interface`.
    pub sockopts: fulcrum_config::BindSockOpts,
    /// The bind line's own `maxconn` (its count kept across a reload when the addresses stay).
    pub limit: Arc<Limit>,
    /// The configured `maxconn` (0: none), applied to `limit` when a reload commits.
    pub maxconn: u32,
    /// `mode`/`user`/`group` of its UNIX sockets' files.
    pub unix: fulcrum_config::UnixPerms,
    /// `ssl`: connections are TLS, with this configuration (certificates loaded once).
    pub tls: Option<Arc<crate::tls::BindTls>>,
    /// `accept-proxy`: connections open with a PROXY protocol header.
    pub accept_proxy: bool,
    /// `accept-netscaler-cip <magic>`: connections open with a NetScaler Client IP header.
    pub netscaler_cip: Option<u32>,
    /// `proto h1|h2`.
    pub proto: Option<fulcrum_config::MuxProto>,
    /// `name`, and its number in the frontend (from 1): how log lines name it.
    pub name: Option<String>,
    pub number: u32,
    /// Its (first) listener's id, as HAProxy numbers them (`id`): `so_id`.
    pub so_id: u32,
    /// `thread`: the threads (from 1) whose workers accept on it (empty: every one).
    pub threads: Vec<u32>,
    /// `option socket-stats`: the line's own counters (HAProxy's listener counters).
    pub counters: Option<Arc<crate::counters::Counters>>,
    /// Its first socket's address as the statistics write it, once it listens.
    pub bound: std::sync::OnceLock<String>,
    /// Where it is written, as HAProxy's messages about it start: `Binding [file:line] for
    /// frontend NAME` (`proxy NAME` in a `listen` section).
    pub origin: String,
}

#[derive(Debug)]
pub struct Frontend {
    pub name: String,
    /// Stable number among all proxies (`id`, or assigned as HAProxy does).
    pub id: u32,
    pub binds: Vec<Arc<Bind>>,
    /// The frontend's `maxconn`; its count is shared with the same frontend of the plan
    /// before a reload.
    pub limit: Arc<Limit>,
    /// The configured `maxconn` (0: none), applied to `limit` when a reload commits.
    pub maxconn: u32,
    /// The proxy's timeouts, HAProxy's defaults applied (`plan::timeouts`); a frontend reads
    /// the client side's and `timeout http-request`/`http-keep-alive`.
    pub timeouts: fulcrum_config::Timeouts,
    /// Where sessions go: the first `use_backend`, else `default_backend`.
    pub backend: Option<Arc<Backend>>,
    /// Shared with the frontend of the same name of the plan before a reload.
    pub counters: Arc<Counters>,
    /// `mode http` settings; `None` in `mode tcp`.
    pub http: Option<crate::http_settings::HttpProxy>,
    /// A `mode tcp` frontend that may use a `mode http` backend: its client-side HTTP settings
    /// (timeouts, error messages, connection mode) for the connections it upgrades to HTTP.
    pub upgrade: Option<crate::http_settings::HttpProxy>,
    /// ACLs and rules (`switching`: the `use_backend` rules grouped for evaluation).
    pub rules: crate::rules::ProxyRules,
    /// `use_backend` rules: a fixed backend or a format naming one, with the condition.
    pub use_backends: switching::UseBackends,
    /// Every backend by name (dynamic `use_backend`, `nbsrv(<name>)`).
    pub backends: Arc<std::collections::HashMap<String, Arc<Backend>>>,
    /// Rules or headers need the address a client connected to (read once per connection).
    pub needs_dst: bool,
    /// `mode tcp` rules read the connection's first bytes: they wait for them, up to
    /// `inspect_delay` (`tcp-request inspect-delay`).
    pub needs_payload: bool,
    pub inspect_delay: Option<std::time::Duration>,
    /// `option clitcpka` (or `tcpka`) and `clitcpka-*`: set on its listening sockets.
    pub client_tcpka: fulcrum_config::TcpKeepAlive,
    /// `proc.` variables, shared by the whole process.
    pub proc_vars: Arc<crate::rules::sample::ProcVars>,
    /// Where its log messages go (`log` lines); `None` without any.
    pub logger: Option<Arc<crate::log::syslog::Logger>>,
    /// Which line each session (mode tcp) or request (mode http) logs, and when.
    pub log: crate::rules::format::Settings,
    /// `disable frontend` (runtime API): its listeners stop accepting until enabled again.
    pub disabled: std::sync::atomic::AtomicBool,
    /// `option nolinger`: client connections end with a reset.
    pub nolinger: bool,
    /// `option independent-streams`: in a tunnel, only what the client sends refreshes its
    /// timeout.
    pub independent_streams: bool,
    /// `option idle-close-on-response`: a soft stop leaves its idle HTTP/1 connections open
    /// for one more request (answered with `connection: close`, as every request then is).
    pub idle_close_on_response: bool,
    /// `rate-limit sessions`: new sessions per second (no limit: 0).
    pub sess_limit: crate::frontend::rate::RateLimit,
    /// Wakes its accept loops when it is enabled again.
    pub enabled: tokio::sync::Notify,
    /// A reload replaced it: its sessions end after their current transaction (see
    /// [`Frontend::retiring`]).
    pub retired: std::sync::atomic::AtomicBool,
    /// The last invalid request it received (`show errors`).
    pub invalid_req: crate::counters::Slot,
}

impl Frontend {
    /// Whether `be` is this proxy's own backend half (a `listen` section; a frontend and a
    /// backend may share a name).
    pub fn is_own_backend(&self, be: &Arc<Backend>) -> bool {
        be.is_listen
            && be.name == self.name
            && self.backend.as_ref().is_some_and(|b| Arc::ptr_eq(b, be))
    }

    /// True when a session of this frontend should end after its current transaction: the
    /// worker is soft-stopping, or a reload replaced the frontend (its sessions finish on the
    /// plan they started with, their clients' next connections go to the new one).
    pub fn retiring(&self) -> bool {
        crate::lifecycle::stopping() || self.retired.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes over the live state of the frontend of the same name in the plan before an
    /// in-process reload, while this one is not shared yet: counters, its connection count,
    /// those of binds on the same addresses (the new `maxconn`s apply to them once the reload
    /// commits, see [`Frontend::apply_maxconn`]), and `disable frontend`.
    pub fn carry_from(&mut self, old: &Frontend) {
        use std::sync::atomic::Ordering::Relaxed;
        self.counters = Arc::clone(&old.counters);
        self.limit = Arc::clone(&old.limit);
        for bind in self.binds.iter_mut() {
            let Some(o) = old.binds.iter().find(|o| o.addrs == bind.addrs) else { continue };
            let Some(b) = Arc::get_mut(bind) else { continue };
            b.limit = Arc::clone(&o.limit);
            if let (Some(_), Some(c)) = (&b.counters, &o.counters) {
                b.counters = Some(Arc::clone(c));
            }
        }
        self.disabled.store(old.disabled.load(Relaxed), Relaxed);
    }

    /// The counters of bind line `bind_no` (from 1), with `option socket-stats`.
    #[inline]
    pub fn listener(&self, bind_no: u16) -> Option<&crate::counters::Counters> {
        let bind = self.binds.get(usize::from(bind_no).wrapping_sub(1))?;
        bind.counters.as_deref()
    }

    /// Adds one to a counter of the frontend and of bind line `bind_no`'s (`option
    /// socket-stats`), as HAProxy counts both.
    pub fn count(
        &self,
        bind_no: u16,
        which: impl Fn(&crate::counters::Counters) -> &std::sync::atomic::AtomicU64,
    ) {
        crate::counters::Counters::inc(which(&self.counters));
        if let Some(l) = self.listener(bind_no) {
            crate::counters::Counters::inc(which(l));
        }
    }

    /// Sets its limits to what its configuration says (a reload committed).
    pub fn apply_maxconn(&self) {
        self.limit.set_max(self.maxconn);
        for b in &self.binds {
            b.limit.set_max(b.maxconn);
        }
    }
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
