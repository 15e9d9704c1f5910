//! Idle server connections of one worker, per server: HAProxy's idle connection pool.
//!
//! A connection whose response ended cleanly and that both sides agreed to keep alive is put
//! here (unless `http-reuse never`, or `pool-max-conn` is reached); a later request to the same
//! server takes the most recently used one (warm in the kernel's caches). Each worker has its own
//! pool, behind a lock of its own that only its worker takes in the usual course; a worker that
//! finds none for a server that has idle connections elsewhere takes one over from another
//! worker (HAProxy's takeover): the socket leaves that worker's event loop and joins this one's.
//! Connections idle longer than `pool-purge-delay` are closed by [`purge`], called by the worker
//! once a second (ages count in those calls, so putting a connection reads no clock).
//!
//! Must not touch: request/response semantics; `http-reuse` policy lives in the session.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

use crate::backend::Backend;
pub use crate::connection::discard;
use crate::connection::{abort, Stream};
use crate::server::Server;
use crate::worker::{Id, Slot};

/// One server of one backend: the backend's address in memory (backends live as long as the
/// process) and the server's index.
pub type PoolKey = (usize, usize);

/// Hashes a [`PoolKey`] with one multiply per word (the Fx hash). Its two words are chosen by
/// the process, never by a peer, so SipHash's resistance to chosen keys buys nothing here and
/// it cost two hash computations per request (a `take` and a `put`).
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type ByServer = HashMap<PoolKey, Vec<Idle>, std::hash::BuildHasherDefault<KeyHasher>>;

fn key(be: &Arc<Backend>, idx: usize) -> PoolKey {
    (Arc::as_ptr(be) as usize, idx)
}

/// A server connection between requests.
pub struct Idle {
    pub stream: Stream,
    /// Requests it already carried ("proven" for `http-reuse aggressive` once >= 1).
    pub requests: u32,
    /// The purge count when it was put here (its age is counted in purges).
    since: u32,
    backend: Arc<Backend>,
    idx: usize,
    /// The server's address generation when it was made.
    addr_gen: u32,
}

impl Idle {
    fn server(&self) -> &Server {
        &self.backend.servers[self.idx]
    }

    /// Leaves the pool closed: reset (see [`discard`]) and no longer counted as idle.
    fn close(&self) {
        abort(&self.stream);
        self.server().idle_conns.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A worker's idle connections, which other workers may take over.
#[derive(Default)]
struct Lists {
    by_server: ByServer,
    /// Idle connections held by this worker, all servers together.
    total: usize,
}

type Shared = Arc<Mutex<Lists>>;

fn lock(lists: &Mutex<Lists>) -> MutexGuard<'_, Lists> {
    lists.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every worker's lists, for takeovers (a worker's entry dies with its thread).
static WORKERS: RwLock<Vec<Weak<Mutex<Lists>>>> = RwLock::new(Vec::new());

struct Pool {
    lists: Shared,
    /// The process's descriptor budget for idle connections (see [`FdLimits`]); without one
    /// (before a worker sets it), no bound.
    fds: Option<FdLimits>,
    /// Server connections carrying a request now, and the most at once since the last purge.
    in_use: usize,
    peak: usize,
    /// How many this worker needs, estimated at each purge from the peaks as HAProxy's
    /// `est_need_conns`: the mean of the last estimate and the last peak, at least that peak.
    est_need: usize,
    /// Purges so far.
    purges: u32,
}

impl Default for Pool {
    fn default() -> Self {
        let lists = Shared::default();
        let mut workers = WORKERS.write().unwrap_or_else(|e| e.into_inner());
        workers.retain(|w| w.strong_count() > 0);
        workers.push(Arc::downgrade(&lists));
        Pool { lists, fds: None, in_use: 0, peak: 0, est_need: 0, purges: 0 }
    }
}

/// Marks a server connection of this worker as carrying a request while it lives; the pool
/// keeps about as many idle connections as were in use at once lately.
pub struct InUse(());

impl InUse {
    pub fn new() -> Self {
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            p.in_use += 1;
            p.peak = p.peak.max(p.in_use);
        });
        InUse(())
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            p.in_use = p.in_use.saturating_sub(1);
        });
    }
}

/// Idle connections a worker may always keep, whatever its recent use.
const MIN_IDLE: usize = 64;

/// HAProxy's bounds on idle server connections by the descriptors the process uses
/// (`tune.pool-low-fd-ratio` and `tune.pool-high-fd-ratio` of about two per `maxconn`): above
/// `low`, a worker keeps a server's connection only when it has none idle for that server;
/// above `high`, none. The descriptors in use are estimated without a counter every request
/// would touch: the client connections (`clients`), and this worker's busy and idle server
/// connections times the workers.
#[derive(Debug, Clone)]
pub struct FdLimits {
    pub low: usize,
    pub high: usize,
    pub workers: usize,
    pub clients: Arc<crate::frontend::limit::Limit>,
}

impl FdLimits {
    /// The descriptors in use, estimated with this worker's `in_use` and `idle` server
    /// connections.
    fn used(&self, in_use: usize, idle: usize) -> usize {
        self.clients.current() as usize + self.workers * (in_use + idle)
    }
}

/// Whether the process's descriptors in use passed the low share (see [`FdLimits`]).
fn short_of_fds() -> bool {
    POOL.with(|p| {
        let p = p.borrow();
        let Some(f) = &p.fds else { return false };
        let idle = lock(&p.lists).total;
        f.used(p.in_use, idle) >= f.low
    })
}

/// Sets this worker's descriptor budget for idle connections.
pub fn set_limits(fds: FdLimits) {
    POOL.with(|p| p.borrow_mut().fds = Some(fds));
}

static POOL: Slot<RefCell<Pool>> = Slot::new(Id::ServerPool, || RefCell::new(Pool::default()));

/// Takes an idle connection to server `idx` of `be`, if any, most recently used first.
/// `min_requests`: how many requests it must already have carried (2 for `aggressive`).
/// With `check`, a connection the server closed meanwhile is skipped (one `recv`); without,
/// the caller copes with a dead one (a request without body is retried on a new connection).
pub fn take(be: &Arc<Backend>, idx: usize, min_requests: u32, check: bool) -> Option<Idle> {
    let found = POOL.with(|p| {
        let p = p.borrow();
        let mut lists = lock(&p.lists);
        let Lists { by_server, total } = &mut *lists;
        let list = by_server.get_mut(&key(be, idx))?;
        let mut i = list.len();
        while i > 0 {
            i -= 1;
            if list[i].requests < min_requests {
                continue;
            }
            let idle = list.swap_remove(i);
            idle.server().idle_conns.fetch_sub(1, Ordering::Relaxed);
            *total -= 1;
            // Made for the server's previous address: closed.
            let moved = idle.addr_gen != idle.server().addr_gen();
            if !moved && (!check || super::io::idle_is_clean(&idle.stream)) {
                return Some(idle);
            }
            // Closed by the server (or it sent something unexpected): drop it, look on.
            i = i.min(list.len());
        }
        None
    });
    found.or_else(|| take_over(be, idx, min_requests, check))
}

/// Takes an idle connection to server `idx` of `be` from another worker, when some worker
/// holds one (the server's count says so; a worker busy with its lists is passed over).
fn take_over(be: &Arc<Backend>, idx: usize, min_requests: u32, check: bool) -> Option<Idle> {
    let server = &be.servers[idx];
    let idle = server.idle_conns.load(Ordering::Relaxed);
    // `pool-low-conn`: below it, each worker keeps its own (HAProxy takes one over then only
    // when descriptors run short).
    if idle == 0 || (idle < server.pool_low_conn && !short_of_fds()) {
        return None;
    }
    let own = POOL.with(|p| Arc::as_ptr(&p.borrow().lists));
    let others: Vec<Shared> = {
        let workers = WORKERS.read().unwrap_or_else(|e| e.into_inner());
        workers.iter().filter(|w| w.as_ptr() != own).filter_map(Weak::upgrade).collect()
    };
    let k = key(be, idx);
    for other in others {
        // At most a few tries per worker: a connection the server closed is dropped, the
        // next one tried.
        for _ in 0..4 {
            let idle = {
                let Ok(mut lists) = other.try_lock() else { break };
                let Lists { by_server, total } = &mut *lists;
                let Some(list) = by_server.get_mut(&k) else { break };
                let Some(i) = list.iter().rposition(|c| c.requests >= min_requests) else {
                    break;
                };
                let idle = list.remove(i);
                server.idle_conns.fetch_sub(1, Ordering::Relaxed);
                *total -= 1;
                idle
            };
            let Idle { stream, requests, since, backend, idx: i, addr_gen } = idle;
            let Ok(stream) = stream.move_to_this_worker() else { continue };
            let idle = Idle { stream, requests, since, backend, idx: i, addr_gen };
            let moved = idle.addr_gen != server.addr_gen();
            if !moved && (!check || super::io::idle_is_clean(&idle.stream)) {
                return Some(idle);
            }
            discard(idle.stream);
        }
    }
    None
}

/// Offers a connection to the pool; it is closed instead when `pool-max-conn` is reached. A
/// session of a plan a reload replaced offers it to the current plan's server.
pub fn put(be: &Arc<Backend>, idx: usize, stream: Stream, requests: u32) {
    if be.retired.load(Ordering::Relaxed) {
        let current = crate::shared::shared();
        let next = current
            .and_then(|s| successor(be, idx, be.servers[idx].addr_gen(), &s.proxies.backends));
        return match next {
            Some((b, i)) => put(&b, i, stream, requests),
            None => discard(stream),
        };
    }
    let server = &be.servers[idx];
    let max = server.pool_max_conn;
    if max >= 0 && server.idle_conns.load(Ordering::Relaxed) >= max as u32 {
        return discard(stream);
    }
    POOL.with(|p| {
        let p = p.borrow();
        // HAProxy's rule (`srv_add_to_idle_list`): kept while the connections in use (this one
        // among them) and the idle ones together stay within what was needed at once lately,
        // above a small floor. A burst of first requests (which `http-reuse safe` sends on new
        // connections) then leaves about as many idle as were in use at its height, not more.
        let need = p.in_use.max(p.peak).max(p.est_need);
        let mut lists = lock(&p.lists);
        let (used, low, high) = match &p.fds {
            Some(f) => (f.used(p.in_use, lists.total), f.low, f.high),
            None => (0, usize::MAX, usize::MAX),
        };
        // (`pool-low-conn` idle connections more than the need, as HAProxy allows.)
        let low_conns = server.pool_low_conn as usize;
        let within_need = lists.total < MIN_IDLE || p.in_use + lists.total <= need + low_conns;
        let keep = used < high
            && ((used < low && within_need)
                || lists.by_server.get(&key(be, idx)).is_none_or(Vec::is_empty));
        if !keep {
            drop(lists);
            return discard(stream);
        }
        lists.total += 1;
        server.idle_conns.fetch_add(1, Ordering::Relaxed);
        let since = p.purges;
        let addr_gen = server.addr_gen();
        let idle = Idle { stream, requests, since, backend: Arc::clone(be), idx, addr_gen };
        lists.by_server.entry(key(be, idx)).or_default().push(idle);
    });
}

/// Called once a second: closes this worker's connections idle for longer than `delay`
/// seconds (put before the last `delay` calls: idle for `delay` to `delay` + 1 seconds), then
/// half of the idle ones beyond the most that were in use at once since the last purge (oldest
/// first), as HAProxy trims its idle connections toward recent use. Returns how many were
/// closed.
pub fn purge(delay: u32) -> usize {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.purges = p.purges.wrapping_add(1);
        let now = p.purges;
        let mut closed = 0;
        let peak = p.peak;
        let mut lists = lock(&p.lists);
        let Lists { by_server, total } = &mut *lists;
        // By age only: probing every idle connection each period would cost one syscall per
        // connection per second. A connection the server closed is noticed when taken (or its
        // request is retried) and goes with its age.
        for list in by_server.values_mut() {
            list.retain(|c| {
                let keep = now.wrapping_sub(c.since) <= delay;
                if !keep {
                    c.close();
                    closed += 1;
                }
                keep
            });
        }
        *total -= closed;
        let mut excess = total.saturating_sub(peak).div_ceil(2);
        while excess > 0 {
            // The oldest idle connection of any server (each list is oldest-first).
            let oldest = by_server
                .values_mut()
                .filter(|l| !l.is_empty())
                .max_by_key(|l| now.wrapping_sub(l[0].since));
            let Some(list) = oldest else { break };
            list.remove(0).close();
            *total -= 1;
            closed += 1;
            excess -= 1;
        }
        drop(lists);
        p.est_need = ((p.est_need + p.peak) / 2).max(p.peak);
        p.peak = p.in_use;
        closed
    })
}

/// After an in-process reload: this worker's idle connections to a server that stays (same
/// backend and server names, same address) now belong to the new plan's server, and are
/// reused by its requests; the others are closed.
pub fn adopt(backends: &[Arc<Backend>]) {
    POOL.with(|p| {
        let p = p.borrow();
        let mut lists = lock(&p.lists);
        let old = std::mem::take(&mut lists.by_server);
        for (_, list) in old {
            for mut c in list {
                if !backends.iter().any(|b| Arc::ptr_eq(b, &c.backend)) {
                    match successor(&c.backend, c.idx, c.addr_gen, backends) {
                        Some((b, idx)) => {
                            c.addr_gen = b.servers[idx].addr_gen();
                            c.backend = b;
                            c.idx = idx;
                        }
                        None => {
                            c.close();
                            lists.total -= 1;
                            continue;
                        }
                    }
                }
                lists.by_server.entry(key(&c.backend, c.idx)).or_default().push(c);
            }
        }
    });
}

/// The server of `backends` that server `idx` of `old` became: same names, same address, and
/// the connection (made at `addr_gen`) still for that address.
fn successor(
    old: &Arc<Backend>,
    idx: usize,
    addr_gen: u32,
    backends: &[Arc<Backend>],
) -> Option<(Arc<Backend>, usize)> {
    let srv = &old.servers[idx];
    let b = backends.iter().find(|b| b.name == old.name)?;
    let new = b.server_index(&srv.name)?;
    let valid = addr_gen == srv.addr_gen() && b.servers[new].target() == srv.target();
    valid.then(|| (Arc::clone(b), new))
}

/// Closes every idle connection of this worker (soft stop).
pub fn clear() {
    POOL.with(|p| {
        let p = p.borrow();
        let mut lists = lock(&p.lists);
        lists.total = 0;
        for (_, list) in lists.by_server.drain() {
            for c in list {
                c.server().idle_conns.fetch_sub(1, Ordering::Relaxed);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    //! Two workers' pools on one thread, each a `worker::Context` entered in turn: no runtime,
    //! no second thread.

    use super::*;
    use crate::worker::Context;

    /// A backend whose one server listens on `port` (nothing is sent to it).
    fn backend(port: u16, server_words: &str) -> Arc<Backend> {
        let text = format!(
            "defaults\n mode http\n timeout client 1s\n timeout server 1s\n timeout connect 1s\n\
             backend b\n server s1 127.0.0.1:{port} {server_words}\n"
        );
        let src = fulcrum_config::Source { name: "t.cfg".into(), text };
        let loaded = fulcrum_config::load(&[src], &|_| None).expect("config loads");
        let plan = crate::plan::build(&loaded.config, Default::default()).expect("plan builds");
        Arc::clone(&plan.proxies.backends[0])
    }

    /// A connection to the listener, as a server connection the pool can keep.
    fn conn(to: &std::net::TcpListener) -> Stream {
        let s = std::net::TcpStream::connect(to.local_addr().expect("addr")).expect("connect");
        s.set_nonblocking(true).expect("non-blocking");
        Stream::accepted_tcp(s)
    }

    #[test]
    fn a_worker_takes_over_idle_connections_only_from_pool_low_conn_on() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let be = backend(server.local_addr().expect("addr").port(), "pool-low-conn 2");
        let idle = || be.servers[0].idle_conns.load(Ordering::Relaxed);
        let (mut a, mut b) = (Context::new(), Context::new());
        a.enter(|| put(&be, 0, conn(&server), 1));
        assert_eq!(idle(), 1);
        // Below pool-low-conn, each worker keeps its own.
        assert!(b.enter(|| take(&be, 0, 0, false)).is_none());
        a.enter(|| put(&be, 0, conn(&server), 1));
        assert_eq!(idle(), 2);
        // From 2 on, b takes one of a's over.
        let taken = b.enter(|| take(&be, 0, 0, false));
        assert!(taken.is_some_and(|c| c.requests == 1));
        assert_eq!(idle(), 1);
        // a keeps the other; b's own pool is empty (what it took was handed out).
        assert!(b.enter(|| POOL.with(|p| lock(&p.borrow().lists).total)) == 0);
        assert!(a.enter(|| take(&be, 0, 0, false)).is_some());
        assert!(a.enter(|| take(&be, 0, 0, false)).is_none());
        assert_eq!(idle(), 0);
    }

    #[test]
    fn aggressive_reuse_takes_only_proven_connections_and_purges_close_by_age() {
        // (`purge` also trims idle connections beyond recent use: see the test below.)
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let be = backend(server.local_addr().expect("addr").port(), "");
        let mut w = Context::new();
        w.enter(|| {
            // One connection in use meanwhile: the pool keeps one idle beyond it.
            let _busy = InUse::new();
            put(&be, 0, conn(&server), 1);
            assert!(take(&be, 0, 2, false).is_none(), "one request is not proven");
            put(&be, 0, conn(&server), 2);
            assert!(take(&be, 0, 2, false).is_some_and(|c| c.requests == 2));
            // Idle for `delay` purges: kept; one more: closed.
            assert_eq!(purge(2), 0);
            assert_eq!(purge(2), 0);
            assert_eq!(purge(2), 1);
            assert!(take(&be, 0, 0, false).is_none());
        });
        assert_eq!(be.servers[0].idle_conns.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn purges_trim_idle_connections_toward_recent_use() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let be = backend(server.local_addr().expect("addr").port(), "");
        let mut w = Context::new();
        w.enter(|| {
            // Four in use at once, then all idle.
            let busy: Vec<InUse> = (0..4).map(|_| InUse::new()).collect();
            drop(busy);
            (0..4).for_each(|_| put(&be, 0, conn(&server), 1));
            // The peak was 4: nothing beyond it. Then the peak is 0: half the excess each time.
            assert_eq!(purge(100), 0);
            assert_eq!(purge(100), 2);
            assert_eq!(purge(100), 1);
            assert_eq!(purge(100), 1);
            assert_eq!(purge(100), 0);
        });
    }

    #[test]
    fn a_dropped_worker_context_closes_its_idle_connections() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let be = backend(server.local_addr().expect("addr").port(), "");
        let mut w = Context::new();
        w.enter(|| put(&be, 0, conn(&server), 1));
        let (mut accepted, _) = server.accept().expect("accept");
        drop(w);
        // The pool's connection was closed with the worker: the server reads its end.
        accepted.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
        let mut buf = [0u8; 1];
        let r = std::io::Read::read(&mut accepted, &mut buf);
        assert!(
            matches!(r, Ok(0)) || r.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset)
        );
    }
}
