//! A backend at run time: its servers, its balancer and its queue; choosing a server for a
//! session and giving the slot back when the session ends.
//!
//! `acquire` implements HAProxy's order: pick a usable server with a free slot through the
//! balance algorithm; if every usable server is full, wait in the queue (`timeout queue`);
//! if no server is usable at all, fail. The returned [`ServerSlot`] releases itself on drop and
//! hands the slot straight to the oldest waiter, if any. Must not touch sockets.

mod queue;
pub mod status;
mod use_server;
pub use use_server::Persist;
mod view;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fulcrum_balance::{Balancer, Pick, ServerSet};

use crate::counters::Counters;
use crate::server::Server;
use queue::{Queue, Wake};

#[derive(Debug)]
pub struct Backend {
    pub name: String,
    /// Stable number among all proxies (`id`, or assigned as HAProxy does).
    pub id: u32,
    pub servers: Vec<Server>,
    balancer: Mutex<Balancer>,
    /// True for algorithms that map a key to one server (`source`): a full server is waited
    /// for in its own queue instead of being skipped.
    deterministic: bool,
    queue: Queue,
    /// Bumped whenever weights or states change, for hash tables.
    generation: AtomicU64,
    /// The algorithm follows run-time weight changes.
    dynamic: bool,
    /// `option allbackups` (the balancer's setting, read without its lock).
    allbackups: bool,
    /// Times the backend lost its last usable server.
    pub down_transitions: AtomicU64,
    /// When it last gained or lost its last usable server, and its time without one.
    pub updown: Mutex<UpDown>,
    /// The balance algorithm's name as HAProxy prints it (`roundrobin`, `hdr`...).
    pub algo: &'static str,
    /// The persistence cookie's name, for the stats.
    pub cookie_name: Option<String>,
    /// `fullconn`, when set (the stats' `slim`; HAProxy's default is worked out there).
    pub fullconn: Option<u32>,
    /// Sessions given a server, per second (`be_sess_rate`), sampled from the servers'
    /// session counters.
    sess_rate: crate::counters::Rate,
    /// `option log-health-checks`.
    pub log_health_checks: bool,
    /// A `listen` section (HAProxy calls it a "proxy" in messages).
    pub is_listen: bool,
    /// Where its log messages go (server state changes, alerts).
    pub logger: Option<Arc<crate::log::syslog::Logger>>,
    /// How its servers are checked.
    pub health_check: Arc<fulcrum_config::HealthCheck>,
    /// `email-alert`: where its servers' state changes are mailed.
    pub mail: Option<Box<crate::mail::Alerts>>,
    /// `option external-check`: the program its health checks run instead of steps.
    pub external_check: Option<Box<ExternalCheck>>,
    /// The check steps' compiled samples (`set-var`, `name-lf`...), one per configured step.
    pub check_samples: Arc<Vec<crate::rules::check::StepSamples>>,
    pub retries: u32,
    pub redispatch: bool,
    pub abortonclose: bool,
    /// The proxy's timeouts, HAProxy's defaults applied (`plan::timeouts`); a backend reads
    /// the server side's, `queue`, `tunnel`, and its checks `check` and `connect`.
    pub timeouts: fulcrum_config::Timeouts,
    /// `tcp-request inspect-delay` for the backend's `tcp-request content` rules.
    pub inspect_delay: Option<Duration>,
    /// `tcp-response inspect-delay` (`None` for 0 too: nothing is waited for).
    pub response_inspect_delay: Option<Duration>,
    /// Shared with the backend of the same name of the plan before a reload.
    pub counters: Arc<Counters>,
    /// `mode http` settings; `None` in `mode tcp`.
    pub http: Option<Box<crate::http_settings::HttpProxy>>,
    /// ACLs and rules of the backend section.
    pub rules: crate::rules::ProxyRules,
    /// Its rules or headers read the client connection's local address.
    pub uses_dst: bool,
    /// A reload replaced it (its sessions' idle server connections go to its successor).
    pub retired: std::sync::atomic::AtomicBool,
    /// The last invalid response its servers sent (`show errors`).
    pub invalid_rep: crate::counters::Slot,
    /// `tune.rcvbuf.server` / `tune.sndbuf.server` (global), for its server connections.
    pub server_bufs: fulcrum_config::SocketBuffers,
    /// `option srvtcpka` (or `tcpka`) and `srvtcpka-*`.
    pub server_tcpka: fulcrum_config::TcpKeepAlive,
    /// `option nolinger`: server connections end with a reset.
    pub nolinger: bool,
    /// `option independent-streams`: in a tunnel, only what the server sends refreshes its
    /// timeout.
    pub independent_streams: bool,
    /// `track`: for each of its servers that others track, those servers (their backend,
    /// their index); set once the plan's backends exist.
    pub trackers: std::sync::OnceLock<Trackers>,
    /// `source`: how connections to servers without their own are bound.
    pub source: Option<std::sync::Arc<crate::server::source::SourceBind>>,
    /// `option prefer-last-server`: a session's next request goes to the server of the
    /// connection it keeps.
    pub prefer_last_server: bool,
    /// `max-keep-alive-queue` (`None`: unlimited).
    pub max_ka_queue: Option<u32>,
    /// `option persist`: persistence may choose a server that is down.
    pub persist: bool,
    /// `balance rdp-cookie(<name>)`: the RDP cookie hashed (`mode tcp`).
    pub rdp_balance: Option<Box<str>>,
    /// `persist rdp-cookie(<name>)`: the RDP cookie naming a server (`mode tcp`).
    pub rdp_persist: Option<Box<str>>,
    /// `disabled`: no server is chosen (503), nothing is checked, no statistics row.
    pub disabled: bool,
    /// The load at which `minconn` servers reach their `maxconn`: `fullconn`, or HAProxy's
    /// default (a tenth of the limits of the frontends that lead here), set when the plan
    /// starts.
    pub fullconn_now: std::sync::atomic::AtomicU32,
}

/// The servers tracking each tracked server of a backend, by its index.
pub type Trackers = std::collections::HashMap<usize, Vec<(std::sync::Weak<Backend>, usize)>>;

/// What a backend's external checks need (`option external-check`), prepared with the plan
/// and run by `health::external`.
#[derive(Debug, Clone)]
pub struct ExternalCheck {
    pub command: String,
    /// `external-check path` (HAProxy's default: empty).
    pub path: String,
    /// The proxy's first `bind` address and port (`NOT_USED` without one).
    pub proxy_addr: String,
    pub proxy_port: String,
    /// `insecure-fork-wanted` was set.
    pub may_fork: bool,
    /// `mode tcp`: the server protocol shown is `tcp` (else `h1`, or the server's `proto`).
    pub tcp: bool,
}

/// A backend's up/down history (HAProxy's `last_change`, `down_time`).
#[derive(Debug, Clone, Copy)]
pub struct UpDown {
    pub last_change: std::time::Instant,
    pub down_since: Option<std::time::Instant>,
    pub down_time: Duration,
}

impl UpDown {
    /// Time without a usable server, counting the current stretch.
    pub fn downtime(&self, now: std::time::Instant) -> Duration {
        self.down_time
            + self.down_since.map_or(Duration::ZERO, |d| now.saturating_duration_since(d))
    }
}

/// Why no server could be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireError {
    /// No server is usable (all down, in maintenance, or none configured).
    NoServer,
    /// Waited in the queue for `timeout queue` without getting a slot: in the server's
    /// queue (`server`) or the backend's, at this position (as `%sq` / `%bq` print it).
    QueueTimeout { server: bool, pos: u32 },
    /// The server's or backend's queue is full (`maxqueue`).
    QueueFull,
}

impl std::fmt::Display for AcquireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcquireError::NoServer => f.write_str("no server is usable"),
            AcquireError::QueueTimeout { server: true, pos } => {
                write!(f, "timeout queue expired in the server's queue (position {pos})")
            }
            AcquireError::QueueTimeout { server: false, pos } => {
                write!(f, "timeout queue expired in the backend's queue (position {pos})")
            }
            AcquireError::QueueFull => f.write_str("the queue is full (maxqueue)"),
        }
    }
}

/// The outcome of one try at a slot.
/// The queue a request found no free slot in: a server's own, or the backend's (`None`).
#[derive(Debug)]
pub struct Line(Option<usize>);

enum Attempt {
    Got(ServerSlot),
    Failed(AcquireError),
    /// Wait in this line: a server's own, or the backend's (`None`).
    Wait(Option<usize>),
}

/// A connection slot on one server, released (or handed to a waiter) on drop.
#[derive(Debug)]
pub struct ServerSlot {
    backend: Arc<Backend>,
    idx: usize,
    /// The session's registration for `on-marked-down`-style shutdowns.
    tracked: Option<u64>,
    /// It waited in a queue: the server's (`true`) or the backend's, and its position there.
    pub queued: Option<(bool, u32)>,
}

impl ServerSlot {
    pub fn server(&self) -> &Server {
        &self.backend.servers[self.idx]
    }
    pub fn index(&self) -> usize {
        self.idx
    }
    /// Lets a state change of the server end this session (when its policy asks for it).
    #[inline]
    pub fn track(&mut self, conn: &impl std::os::fd::AsFd) {
        if self.tracked.is_none() && self.server().sessions.is_some() {
            self.tracked = crate::server::kill::track(self.server(), conn);
        }
    }
}

impl Backend {
    /// The algorithm maps a key to one server (`source`, `uri`, `url_param`, `hdr`: HAProxy's
    /// hash kind).
    pub fn maps_keys(&self) -> bool {
        self.deterministic
    }
}

impl ServerSlot {
    /// Why a server state change ended this session (`on-marked-down shutdown-sessions`,
    /// `on-marked-up shutdown-backup-sessions`), if one did.
    pub fn ended_by(&self) -> Option<crate::outcome::Cause> {
        crate::server::kill::ended_by(self.server(), self.tracked?)
    }
}

impl Drop for ServerSlot {
    fn drop(&mut self) {
        crate::server::users::note_server(None);
        if let Some(token) = self.tracked.take() {
            crate::server::kill::untrack(self.server(), token);
        }
        self.backend.release(self.idx);
    }
}

/// The view of the servers an algorithm gets.
struct View<'a> {
    be: &'a Backend,
    /// Only servers with a free slot are usable.
    need_slot: bool,
}

impl ServerSet for View<'_> {
    fn len(&self) -> usize {
        self.be.servers.len()
    }
    fn weight(&self, i: usize) -> u32 {
        self.be.servers[i].weight()
    }
    fn usable(&self, i: usize) -> bool {
        let s = &self.be.servers[i];
        s.lb_usable() && (!self.need_slot || s.has_free_slot(self.be.limit(i)))
    }
    fn backup(&self, i: usize) -> bool {
        self.be.servers[i].backup
    }
    fn load(&self, i: usize) -> u32 {
        self.be.servers[i].cur_conns()
    }
    fn maxconn(&self, i: usize) -> u32 {
        self.be.limit(i)
    }
    fn id(&self, i: usize) -> u32 {
        self.be.servers[i].id
    }
    fn generation(&self) -> u64 {
        self.be.generation.load(Ordering::Relaxed)
    }
}

/// What a hash-based algorithm hashes: the client's address (`source`) or request bytes
/// (`uri`, `url_param`, `hdr`).
#[derive(Clone, Copy, Debug)]
pub enum PickKey<'a> {
    Ip(IpAddr),
    Bytes(&'a [u8]),
}

impl Backend {
    /// The index of the server named `name` (the registry's way: callers do not search).
    pub fn server_index(&self, name: &str) -> Option<usize> {
        self.servers.iter().position(|s| s.name == name)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        servers: Vec<Server>,
        balancer: Balancer,
        deterministic: bool,
        retries: u32,
        redispatch: bool,
        abortonclose: bool,
        timeouts: fulcrum_config::Timeouts,
    ) -> Self {
        let n = servers.len();
        let dynamic = Self::is_dynamic(&balancer);
        let allbackups = balancer.allbackups;
        Self {
            name,
            id: 0,
            servers,
            balancer: Mutex::new(balancer),
            deterministic,
            queue: Queue::new(n),
            generation: AtomicU64::new(0),
            dynamic,
            allbackups,
            down_transitions: AtomicU64::new(0),
            updown: Mutex::new(UpDown {
                last_change: std::time::Instant::now(),
                down_since: None,
                down_time: Duration::ZERO,
            }),
            algo: "roundrobin",
            inspect_delay: None,
            response_inspect_delay: None,
            cookie_name: None,
            fullconn: None,
            sess_rate: Default::default(),
            log_health_checks: false,
            is_listen: false,
            logger: None,
            health_check: Default::default(),
            external_check: None,
            mail: None,
            check_samples: Default::default(),
            retries,
            redispatch,
            abortonclose,
            timeouts,
            counters: Arc::default(),
            http: None,
            rules: Default::default(),
            uses_dst: false,
            retired: Default::default(),
            invalid_rep: Default::default(),
            server_bufs: fulcrum_config::SocketBuffers::default(),
            server_tcpka: Default::default(),
            nolinger: false,
            independent_streams: false,
            trackers: Default::default(),
            source: None,
            prefer_last_server: false,
            max_ka_queue: None,
            persist: false,
            rdp_balance: None,
            rdp_persist: None,
            disabled: false,
            fullconn_now: Default::default(),
        }
    }

    pub fn allbackups(&self) -> bool {
        self.allbackups
    }

    /// The algorithm follows run-time weight changes (not `static-rr`, nor map-based hashing).
    pub fn dynamic_weights(&self) -> bool {
        self.dynamic
    }

    fn is_dynamic(b: &Balancer) -> bool {
        match b.algorithm() {
            fulcrum_balance::Algorithm::StaticRr => false,
            fulcrum_balance::Algorithm::Source | fulcrum_balance::Algorithm::Hash => {
                b.hash_config().consistent
            }
            _ => true,
        }
    }

    /// Sessions its servers took in all.
    fn sessions_total(&self) -> u64 {
        self.servers.iter().map(|s| s.counters.sessions.load(Ordering::Relaxed)).sum()
    }

    /// Notes the session total; called once a second.
    pub fn sample_rates(&self) {
        self.sess_rate.sample(self.sessions_total());
    }

    /// Sessions per second over the last second (`be_sess_rate`).
    pub fn session_rate(&self) -> u64 {
        self.sess_rate.read(self.sessions_total())
    }

    /// Sessions waiting in this backend's queues.
    pub fn queued(&self) -> u32 {
        self.queue.len()
    }

    /// Sessions waiting for server `idx` in particular.
    pub fn server_queued(&self, idx: usize) -> u32 {
        self.queue.line_len(Some(idx))
    }

    /// Sessions holding a server slot now.
    pub fn active_sessions(&self) -> u32 {
        self.servers.iter().map(Server::cur_conns).sum()
    }

    /// Usable active servers and usable backup servers (HAProxy's `srv_act`, `srv_bck`).
    pub fn usable_counts(&self) -> (usize, usize) {
        let (mut act, mut bck) = (0, 0);
        for s in self.servers.iter().filter(|s| s.lb_usable()) {
            if s.backup {
                bck += 1;
            } else {
                act += 1;
            }
        }
        (act, bck)
    }

    /// Servers that can take new traffic, as `nbsrv()` counts them (HAProxy's
    /// `be_usable_srv`): the usable active ones; without any, 1 if a backup can take over
    /// (all usable backups with `option allbackups`).
    pub fn usable_servers(&self) -> usize {
        match self.usable_counts() {
            (0, 0) => 0,
            (0, bck) if self.allbackups() => bck,
            (0, _) => 1,
            (act, _) => act,
        }
    }

    /// Server `idx`'s connection limit now (0: none): its `maxconn` (as `slowstart` lets it),
    /// or with `minconn` HAProxy's dynamic limit: `maxconn` times the backend's sessions over
    /// its `fullconn`, at least `minconn`.
    #[inline]
    pub fn limit(&self, idx: usize) -> u32 {
        let s = &self.servers[idx];
        let max = s.maxconn();
        if s.minconn == 0 || max == 0 {
            return max;
        }
        self.dynamic_limit(s, max)
    }

    /// [`Backend::limit`] for a `minconn` server (`max`: its `maxconn` now).
    #[inline(never)]
    fn dynamic_limit(&self, s: &Server, max: u32) -> u32 {
        let full = self.fullconn_now.load(Ordering::Relaxed);
        let load = self.active_sessions() + self.queued();
        if full == 0 || load >= full {
            return max;
        }
        let scaled = u64::from(load) * u64::from(max) / u64::from(full);
        (scaled as u32).max(s.minconn.min(max))
    }

    /// Takes a connection slot on server `idx` if its limit allows.
    #[inline]
    fn take(&self, idx: usize) -> bool {
        self.servers[idx].try_take_slot(self.limit(idx))
    }

    /// Runs the balance algorithm once.
    fn pick(
        &self,
        key: Option<PickKey<'_>>,
        need_slot: bool,
        exclude: Option<usize>,
    ) -> Option<usize> {
        let view = View { be: self, need_slot };
        let (v4, v6);
        let key_bytes: Option<&[u8]> = match key {
            Some(PickKey::Ip(IpAddr::V4(a))) => {
                v4 = a.octets();
                Some(&v4)
            }
            Some(PickKey::Ip(IpAddr::V6(a))) => {
                v6 = a.octets();
                Some(&v6)
            }
            Some(PickKey::Bytes(b)) => Some(b),
            None => None,
        };
        let mut balancer = self.balancer.lock().unwrap_or_else(|e| e.into_inner());
        crate::random::with(|rng| {
            let mut ctx = Pick { key: key_bytes, rng, exclude };
            balancer.pick(&view, &mut ctx)
        })
    }

    /// Chooses a server and takes a slot on it, waiting in the queue when all are full.
    pub async fn acquire(
        self: &Arc<Self>,
        key: Option<PickKey<'_>>,
        exclude: Option<usize>,
    ) -> Result<ServerSlot, AcquireError> {
        self.acquire_persist(key, None, exclude).await
    }

    /// Like `acquire`, but a usable `persist` server (from a persistence cookie) is taken
    /// first, waiting in its own queue when it is full.
    pub async fn acquire_persist(
        self: &Arc<Self>,
        key: Option<PickKey<'_>>,
        persist: Option<usize>,
        exclude: Option<usize>,
    ) -> Result<ServerSlot, AcquireError> {
        // The usual case, a free slot at once, costs no wait machinery.
        match self.try_acquire_persist(key, persist, exclude)? {
            Ok(slot) => Ok(slot),
            Err(line) => self.acquire_queued(line, key, exclude).await,
        }
    }

    /// `acquire_persist`'s first step, without a future: a free slot, or the line to wait in
    /// (`Err`: go on with [`Backend::acquire_queued`]).
    pub fn try_acquire_persist(
        self: &Arc<Self>,
        key: Option<PickKey<'_>>,
        persist: Option<usize>,
        exclude: Option<usize>,
    ) -> Result<Result<ServerSlot, Line>, AcquireError> {
        match self.attempt(key, persist, exclude) {
            Attempt::Got(slot) => Ok(Ok(slot)),
            Attempt::Failed(e) => Err(e),
            Attempt::Wait(line) => Ok(Err(Line(line))),
        }
    }

    /// The rest of `acquire_persist` once a first attempt found no free slot: waits in `line`.
    pub async fn acquire_queued(
        self: &Arc<Self>,
        Line(mut line): Line,
        key: Option<PickKey<'_>>,
        exclude: Option<usize>,
    ) -> Result<ServerSlot, AcquireError> {
        loop {
            match self.wait_in_queue(line).await {
                Ok(slot) => return Ok(slot),
                Err(Some(e)) => return Err(e),
                // Its server went down while it waited: choose again, without persistence.
                Err(None) => {}
            }
            line = match self.attempt(key, None, exclude) {
                Attempt::Got(slot) => return Ok(slot),
                Attempt::Failed(e) => return Err(e),
                Attempt::Wait(line) => line,
            };
        }
    }

    /// Takes a slot if one is free; otherwise says which line to wait in.
    fn attempt(
        self: &Arc<Self>,
        key: Option<PickKey<'_>>,
        persist: Option<usize>,
        exclude: Option<usize>,
    ) -> Attempt {
        if self.disabled {
            return Attempt::Failed(AcquireError::NoServer);
        }
        // (Whether a server that is down may be used was decided where persistence chose it:
        // `option persist`, `force-persist`.)
        if let Some(idx) = persist.filter(|&i| Some(i) != exclude) {
            if self.take(idx) {
                return Attempt::Got(self.slot(idx));
            }
            return Attempt::Wait(Some(idx));
        }
        if self.deterministic {
            if let Some(idx) = self.pick(key, false, exclude) {
                if self.take(idx) {
                    return Attempt::Got(self.slot(idx));
                }
                return Attempt::Wait(Some(idx));
            }
        } else {
            // A few tries: another thread may take the slot between pick and take.
            for _ in 0..4 {
                match self.pick(key, true, exclude) {
                    Some(idx) if self.take(idx) => return Attempt::Got(self.slot(idx)),
                    Some(_) => continue,
                    None => break,
                }
            }
        }
        if self.usable_servers() == 0 {
            Counters::inc(&self.counters.no_server);
            return Attempt::Failed(AcquireError::NoServer);
        }
        Attempt::Wait(None)
    }

    fn slot(self: &Arc<Self>, idx: usize) -> ServerSlot {
        let srv = &self.servers[idx];
        Counters::inc(&srv.counters.sessions);
        Counters::raise(&srv.counters.max_sessions, u64::from(srv.cur_conns()));
        crate::server::users::note_server(Some((self.id, idx)));
        ServerSlot { backend: Arc::clone(self), idx, tracked: None, queued: None }
    }

    async fn wait_in_queue(
        self: &Arc<Self>,
        server: Option<usize>,
    ) -> Result<ServerSlot, Option<AcquireError>> {
        let limit = server.map(|i| self.servers[i].maxqueue).unwrap_or(0);
        let mut ticket = self.queue.enqueue(server, limit, |srv| self.dispatch_one(srv));
        if ticket.is_err() && server.is_some() {
            // The server's queue is full (`maxqueue`): wait for any server instead.
            ticket = self.queue.enqueue(None, 0, |srv| self.dispatch_one(srv));
        }
        // The longest queue seen (`qmax`), the server's or the backend's.
        match server {
            Some(i) => Counters::raise(
                &self.servers[i].counters.max_queue,
                u64::from(self.server_queued(i)),
            ),
            None => Counters::raise(&self.counters.max_queue, u64::from(self.queued())),
        }
        let ticket = match ticket {
            Ok(queue::Enqueued::Served(idx)) => return Ok(self.slot(idx)),
            Ok(queue::Enqueued::Waiting(t)) => t,
            Err(()) => return Err(Some(AcquireError::QueueFull)),
        };
        // HAProxy: without `timeout queue`, the connect timeout applies.
        let wait = self.timeouts.queue.or(self.timeouts.connect);
        match ticket.wait(wait, &self.queue).await {
            Ok(Wake::Slot(idx, pos)) => {
                let mut slot = self.slot(idx);
                slot.queued = Some((server.is_some(), pos));
                Ok(slot)
            }
            Ok(Wake::Redispatch) => Err(None),
            Err(pos) => {
                Counters::inc(&self.counters.queue_timeouts);
                Err(Some(AcquireError::QueueTimeout { server: server.is_some(), pos }))
            }
        }
    }

    /// Finds a free slot for a waiter: on its server, or on any server chosen by the balancer.
    fn dispatch_one(&self, server: Option<usize>) -> Option<usize> {
        match server {
            // Sessions bound to a server wait while it is down (unless redistributed).
            Some(idx) => {
                let s = &self.servers[idx];
                (s.is_up() && self.take(idx)).then_some(idx)
            }
            None => {
                for _ in 0..4 {
                    let idx = self.pick(None, true, None)?;
                    if self.take(idx) {
                        return Some(idx);
                    }
                }
                None
            }
        }
    }

    fn release(&self, idx: usize) {
        self.servers[idx].give_back_slot();
        self.queue.on_release(|srv| self.dispatch_one(srv), |i| self.servers[i].give_back_slot());
    }

    /// Serves waiters a server that came up (or grew) can now take; how many.
    fn grab_queued(&self) -> u32 {
        self.queue.on_release(|srv| self.dispatch_one(srv), |i| self.servers[i].give_back_slot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Target;
    use fulcrum_balance::{Algorithm, HashConfig};

    fn backend(weights: &[u32], maxconn: u32, queue: Option<Duration>) -> Arc<Backend> {
        let servers = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let addr = format!("127.0.0.1:{}", 9000 + i).parse().expect("addr");
                Server::new(format!("s{i}"), Target::Inet(addr), w, maxconn, 0)
            })
            .collect();
        let timeouts = fulcrum_config::Timeouts { queue, ..Default::default() };
        let balancer = Balancer::new(Algorithm::RoundRobin, HashConfig::default());
        Arc::new(Backend::new("be".into(), servers, balancer, false, 3, false, false, timeouts))
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt")
    }

    #[test]
    fn set_weight_changes_the_shares_from_the_next_pick() {
        rt().block_on(async {
            let be = backend(&[1, 1], 0, None);
            let mut counts = [0; 2];
            for _ in 0..100 {
                counts[be.acquire(None, None).await.expect("slot").index()] += 1;
            }
            assert_eq!(counts, [50, 50]);
            be.change_server(1, status::Change::Weight(3));
            let mut counts = [0; 2];
            for _ in 0..100 {
                counts[be.acquire(None, None).await.expect("slot").index()] += 1;
            }
            assert_eq!(counts, [25, 75]);
        });
    }

    #[test]
    fn maintenance_takes_a_server_out_and_none_left_is_an_error() {
        rt().block_on(async {
            let be = backend(&[1, 1], 0, None);
            let maint = |flag| status::Change::SetAdmin { flag, cause: String::new() };
            be.change_server(0, maint(crate::server::state::Admin::FMAINT));
            for _ in 0..10 {
                assert_eq!(be.acquire(None, None).await.expect("slot").index(), 1);
            }
            be.change_server(1, maint(crate::server::state::Admin::FMAINT));
            assert_eq!(be.acquire(None, None).await.expect_err("none"), AcquireError::NoServer);
            let flag = crate::server::state::Admin::FMAINT;
            be.change_server(0, status::Change::ClearAdmin { flag });
            assert_eq!(be.acquire(None, None).await.expect("slot").index(), 0);
        });
    }

    #[test]
    fn a_released_slot_goes_to_the_oldest_waiter() {
        rt().block_on(async {
            let be = backend(&[1], 1, Some(Duration::from_secs(5)));
            let first = be.acquire(None, None).await.expect("slot");
            let (b1, b2) = (Arc::clone(&be), Arc::clone(&be));
            let w1 = tokio::spawn(async move { b1.acquire(None, None).await.map(|s| s.index()) });
            tokio::task::yield_now().await;
            let w2 = tokio::spawn(async move { b2.acquire(None, None).await.map(|s| s.index()) });
            tokio::task::yield_now().await;
            assert_eq!(be.queued(), 2);
            drop(first);
            assert_eq!(w1.await.expect("join"), Ok(0));
            assert_eq!(w2.await.expect("join"), Ok(0));
            assert_eq!(be.queued(), 0);
            assert_eq!(be.servers[0].cur_conns(), 0, "every slot given back");
        });
    }

    #[test]
    fn queue_timeout_leaves_the_queue_and_keeps_counts_right() {
        rt().block_on(async {
            let be = backend(&[1], 1, Some(Duration::from_millis(30)));
            let held = be.acquire(None, None).await.expect("slot");
            assert_eq!(
                be.acquire(None, None).await.expect_err("timeout"),
                AcquireError::QueueTimeout { server: false, pos: 1 }
            );
            assert_eq!(be.queued(), 0);
            drop(held);
            assert_eq!(be.servers[0].cur_conns(), 0);
            assert!(be.acquire(None, None).await.is_ok());
        });
    }
}
