//! A server of a backend at run time: where it is, what the configuration says of it, its
//! live connection count and counters, and its state record (`state`).
//!
//! The request path reads only the atomics of [`Hot`] (usable or not, effective weight and
//! `maxconn`), published from the [`Record`] whenever it changes. The record itself changes only
//! through `backend::status`, the single entry point for state changes.
//!
//! Must not touch: selection (the backend and balancer do that) or sockets (the session does).

pub mod kill;
pub mod source;
pub mod state;
pub mod users;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::counters::Counters;
pub use state::Record;

/// Where connections to a server go, resolved at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Inet(SocketAddr),
    /// No port in the config: the port the client connected to, plus an offset.
    InetRelative {
        ip: IpAddr,
        offset: i32,
    },
    Unix(PathBuf),
    /// No address yet (`init-addr none` and the name did not resolve): in maintenance.
    Unresolved,
}

impl Target {
    /// The address to connect to for a client that connected to `dst_port`.
    pub fn resolve(&self, dst_port: u16) -> Endpoint<'_> {
        match self {
            Target::Inet(a) => Endpoint::Inet(*a),
            Target::InetRelative { ip, offset } => {
                let port = (i32::from(dst_port) + offset).clamp(0, 65535) as u16;
                Endpoint::Inet(SocketAddr::new(*ip, port))
            }
            Target::Unix(p) => Endpoint::Unix(p),
            Target::Unresolved => Endpoint::Inet(SocketAddr::from(([0, 0, 0, 0], 0))),
        }
    }
}

/// A concrete address to connect to.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint<'a> {
    Inet(SocketAddr),
    Unix(&'a std::path::Path),
}

/// What the configuration says about a server's checks and state changes.
#[derive(Debug, Default)]
pub struct Policy {
    /// `check` settings (`None`: not checked).
    pub check: Option<fulcrum_config::ServerCheck>,
    /// `rise` as configured, checked or not (an unchecked server's health counter shows it).
    pub rise: u32,
    /// `agent-check` settings (`None`: no agent).
    pub agent: Option<fulcrum_config::AgentCheck>,
    pub observe: Option<fulcrum_config::Observe>,
    pub on_error: fulcrum_config::OnError,
    pub error_limit: u32,
    /// `on-marked-down shutdown-sessions`.
    pub shutdown_on_down: bool,
    /// `on-marked-up shutdown-backup-sessions`.
    pub shutdown_backups_on_up: bool,
    /// The address checks connect to (`addr`), resolved at start-up.
    pub check_addr: Option<IpAddr>,
    /// The address the agent is asked at (`agent-addr`), resolved at start-up.
    pub agent_addr: Option<IpAddr>,
}

/// Where checks go and what the agent is sent, as the runtime API changed them (`set server
/// ... check-addr|check-port|agent-addr|agent-port|agent-send`); `None`: as configured.
#[derive(Clone, Debug, Default)]
pub struct CheckTarget {
    pub check_addr: Option<IpAddr>,
    pub check_port: Option<u16>,
    pub agent_addr: Option<IpAddr>,
    pub agent_port: Option<u16>,
    pub agent_send: Option<String>,
}

/// What the request path reads, published from the record after every change.
#[derive(Debug)]
struct Hot {
    /// [`UP`] and [`LB`] bits.
    flags: AtomicU8,
    /// Effective weight in sixteenths ([`state::WEIGHT_SCALE`]).
    eweight: AtomicU32,
    /// `maxconn` in force (ramping during slow start); 0: unlimited.
    maxconn: AtomicU32,
}

/// Up (persistence may use it).
const UP: u8 = 1;
/// Usable by the balancers.
const LB: u8 = 2;

#[derive(Debug)]
pub struct Server {
    pub name: String,
    /// Stable number in its backend (`id`, or assigned in order as HAProxy does).
    pub id: u32,
    /// Where connections go; changed at run time by `set server ... addr`.
    target: std::sync::RwLock<Target>,
    /// Bumped at each address change: idle connections and checks made for an older
    /// address are not used any more.
    addr_gen: AtomicU32,
    /// 0: unlimited.
    pub maxqueue: u32,
    /// `minconn` below `maxconn`: the limit grows from it to `maxconn` with the backend's load
    /// (HAProxy's `srv_dynamic_maxconn()`); 0 when the limit is `maxconn` alone.
    pub minconn: u32,
    pub backup: bool,
    hot: Hot,
    /// The state record; changed only through `backend::status`.
    state: Mutex<Record>,
    pub policy: Policy,
    /// Connections currently assigned to this server (including ones still connecting);
    /// shared with the same server of the plan before a reload (sessions of both count here).
    cur_conns: Arc<AtomicU32>,
    /// Shared with the same server of the plan before a reload.
    pub counters: Arc<Counters>,
    /// Idle connections to this server in the workers' pools (`pool-max-conn` caps them);
    /// shared across a reload, as the connections are.
    pub idle_conns: Arc<AtomicU32>,
    /// `pool-max-conn`: -1 unlimited, 0 no pooling.
    pub pool_max_conn: i32,
    /// `pool-low-conn` (0: none).
    pub pool_low_conn: u32,
    /// `cookie <value>`: the persistence cookie value naming this server.
    pub cookie: Option<String>,
    /// Live sessions a state change may end (only for servers whose policy says so).
    pub sessions: Option<kill::Sessions>,
    /// Consecutive errors seen in live traffic (`observe`).
    consecutive_errors: AtomicU32,
    /// Wakes the health check task early (observed errors ask for `fastinter`).
    pub check_soon: tokio::sync::Notify,
    /// Check and agent destinations changed at run time; `check_gen` is bumped at each change
    /// (the check tasks then rebuild what they send where).
    check_target: Mutex<CheckTarget>,
    check_gen: AtomicU32,
    /// The server's TLS settings: for its connections when `ssl` says so (see
    /// [`Server::traffic_tls`]), for checks as `check-ssl` or `tcp-check connect ssl` say.
    pub tls: Option<Arc<crate::tls::Origin>>,
    /// `send-proxy*`: a PROXY protocol header opens each connection.
    pub send_proxy: Option<Box<fulcrum_config::SendProxy>>,
    /// `socks4`: connections go through this SOCKS4 proxy.
    pub socks4: Option<SocketAddr>,
    /// `tcp-ut`: `TCP_USER_TIMEOUT` on its connections (milliseconds).
    pub tcp_ut: Option<u32>,
    /// `tfo`: TCP Fast Open on the first attempt of a new connection.
    pub tfo: bool,
    /// `non-stick`: its streams store nothing in stick tables.
    pub non_stick: bool,
    /// `max-reuse`: a connection to it carries at most this many requests more than its first
    /// (`u32::MAX`: no limit).
    pub max_reuse: u32,
    /// `proto h1|h2`: the protocol spoken whatever ALPN says.
    pub proto: Option<fulcrum_config::MuxProto>,
    /// Its connections may speak HTTP/2 (`proto h2`, or `h2` offered by ALPN): transactions
    /// look for a stream on one first (`http::h2::upstream`).
    pub may_h2: bool,
    /// HTTP health checks speak HTTP/2 (`check-proto h2`, or `proto h2` without it).
    pub check_h2: bool,
    /// WebSocket upgrades go over HTTP/2 (extended CONNECT): `ws h2`, or `ws auto` with
    /// `proto h2` or an ALPN list of `h2` alone (HAProxy's choices); else over HTTP/1.1.
    pub ws_h2: bool,
    /// `redir <prefix>`: GET and HEAD requests are redirected to it rather than sent.
    pub redir: Option<String>,
    /// `source`: how its connections are bound (the backend's otherwise).
    pub source: Option<std::sync::Arc<source::SourceBind>>,
    /// `track`: the server it follows, as messages name it (`be/srv`).
    pub track: Option<String>,
}

impl Server {
    #[cfg(test)]
    pub fn new(name: String, target: Target, weight: u32, maxconn: u32, maxqueue: u32) -> Self {
        Self::with_minconn(name, target, weight, (0, maxconn), maxqueue)
    }

    /// A server with a dynamic limit: `minconn` up to `maxconn` with its backend's load (0:
    /// the limit is `maxconn` alone).
    pub fn with_minconn(
        name: String,
        target: Target,
        weight: u32,
        (minconn, maxconn): (u32, u32),
        maxqueue: u32,
    ) -> Self {
        let record = Record::new(weight, maxconn, Instant::now());
        let s = Self {
            name,
            id: 0,
            target: std::sync::RwLock::new(target),
            addr_gen: AtomicU32::new(0),
            maxqueue,
            minconn,
            backup: false,
            hot: Hot {
                flags: AtomicU8::new(0),
                eweight: AtomicU32::new(0),
                maxconn: AtomicU32::new(0),
            },
            state: Mutex::new(record),
            policy: Policy::default(),
            cur_conns: Arc::default(),
            counters: Arc::default(),
            idle_conns: Arc::default(),
            pool_max_conn: -1,
            pool_low_conn: 0,
            cookie: None,
            sessions: None,
            consecutive_errors: AtomicU32::new(0),
            check_soon: tokio::sync::Notify::new(),
            check_target: Mutex::new(CheckTarget::default()),
            check_gen: AtomicU32::new(0),
            tls: None,
            send_proxy: None,
            socks4: None,
            tcp_ut: None,
            tfo: false,
            non_stick: false,
            max_reuse: u32::MAX,
            proto: None,
            may_h2: false,
            check_h2: false,
            ws_h2: false,
            redir: None,
            source: None,
            track: None,
        };
        s.publish(&s.state(), Instant::now());
        s
    }

    /// Where connections to it go now.
    pub fn target(&self) -> Target {
        self.target.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Moves it (the runtime API's `set server ... addr`).
    pub fn set_target(&self, t: Target) {
        *self.target.write().unwrap_or_else(|e| e.into_inner()) = t;
        self.addr_gen.fetch_add(1, Ordering::Release);
    }

    /// Where its checks go, as changed at run time.
    /// The TLS side of the server's connections (`ssl`), if they have one.
    pub fn traffic_tls(&self) -> Option<&Arc<crate::tls::Origin>> {
        self.tls.as_ref().filter(|o| o.ssl)
    }

    pub fn check_target(&self) -> CheckTarget {
        self.check_target.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes where its checks go (the runtime API); the check tasks follow.
    pub fn set_check_target(&self, edit: impl FnOnce(&mut CheckTarget)) {
        edit(&mut self.check_target.lock().unwrap_or_else(|e| e.into_inner()));
        self.check_gen.fetch_add(1, Ordering::Release);
    }

    /// Changes when the checks must be rebuilt: a new address or check target.
    pub fn check_version(&self) -> u64 {
        u64::from(self.addr_gen()) << 32 | u64::from(self.check_gen.load(Ordering::Acquire))
    }

    /// Which address generation it is at (see [`Server::set_target`]).
    pub fn addr_gen(&self) -> u32 {
        self.addr_gen.load(Ordering::Acquire)
    }

    /// The state record, locked (for the status entry point, checks and reports; never the
    /// request path).
    pub fn state(&self) -> MutexGuard<'_, Record> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copies what the request path reads out of the record.
    pub(crate) fn publish(&self, r: &Record, now: Instant) {
        let flags = if r.is_up() { UP } else { 0 } | if r.lb_usable() { LB } else { 0 };
        self.hot.eweight.store(r.eweight, Ordering::Relaxed);
        self.hot.maxconn.store(r.effective_maxconn(now), Ordering::Relaxed);
        self.hot.flags.store(flags, Ordering::Relaxed);
    }

    /// Effective weight in sixteenths of a configured weight unit.
    pub fn weight(&self) -> u32 {
        self.hot.eweight.load(Ordering::Relaxed)
    }
    /// The `maxconn` in force (0: unlimited).
    pub fn maxconn(&self) -> u32 {
        self.hot.maxconn.load(Ordering::Relaxed)
    }
    pub fn cur_conns(&self) -> u32 {
        self.cur_conns.load(Ordering::Relaxed)
    }
    /// Up and not in maintenance: persistence may still use it (drained or stopping too).
    pub fn is_up(&self) -> bool {
        self.hot.flags.load(Ordering::Relaxed) & UP != 0
    }
    /// Usable by the balancers: up, ready, not stopping, weight above 0.
    pub fn lb_usable(&self) -> bool {
        self.hot.flags.load(Ordering::Relaxed) & LB != 0
    }
    /// Whether a connection slot is free under `max` (see [`crate::backend::Backend::limit`]).
    pub fn has_free_slot(&self, max: u32) -> bool {
        max == 0 || self.cur_conns() < max
    }

    /// Takes a connection slot if `max` (the server's limit now) allows.
    pub(crate) fn try_take_slot(&self, max: u32) -> bool {
        if max == 0 {
            self.cur_conns.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        self.cur_conns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| (c < max).then_some(c + 1))
            .is_ok()
    }

    /// Counts a success or an error seen in live traffic (`observe`); true when `error-limit`
    /// consecutive errors were reached (the count starts over). A success costs one relaxed
    /// store, and only on servers that observe.
    pub fn observed(&self, failed: bool) -> bool {
        if !failed {
            if self.consecutive_errors.load(Ordering::Relaxed) != 0 {
                self.consecutive_errors.store(0, Ordering::Relaxed);
            }
            return false;
        }
        let n = self.consecutive_errors.fetch_add(1, Ordering::Relaxed) + 1;
        if n < self.policy.error_limit.max(1) {
            return false;
        }
        self.consecutive_errors.store(0, Ordering::Relaxed);
        true
    }

    /// A check passed: observed errors start over (HAProxy resets them then too).
    pub(crate) fn clear_observed(&self) {
        self.consecutive_errors.store(0, Ordering::Relaxed);
    }

    /// Takes over what the same server of the previous plan had live: its counters, its
    /// connection count and its idle connections' count (a reload; the server is not shared
    /// yet).
    pub(crate) fn adopt_live(&mut self, old: &Server) {
        self.counters = Arc::clone(&old.counters);
        self.cur_conns = Arc::clone(&old.cur_conns);
        self.idle_conns = Arc::clone(&old.idle_conns);
        *self.check_target.get_mut().unwrap_or_else(|e| e.into_inner()) = old.check_target();
    }

    pub(crate) fn give_back_slot(&self) {
        self.cur_conns.fetch_sub(1, Ordering::SeqCst);
    }
}
