//! The live client sessions of each worker, for the runtime API's `show sess` and `shutdown
//! session`: each accepted connection is registered with its task's abort handle (two
//! uncontended locks, no allocation once the worker's table has grown) and deregistered when
//! it ends (idle keep-alive connections included: HAProxy lists only connections carrying a
//! request).
//!
//! `shutdown session` aborts the session's task: both its sockets close at once, wherever it
//! was waiting (HAProxy's `stream_shutdown`); no log line is written for it. Must not touch:
//! what a session does.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::frontend::Frontend;
use crate::worker::{Id, Slot};

/// One live session: 48 bytes, for every connection the worker holds, idle ones included
/// (part of scenario f's memory per idle connection, `bench/run --only f`).
#[derive(Debug)]
struct Entry {
    id: u64,
    task: Option<tokio::task::AbortHandle>,
    frontend: Arc<Frontend>,
    peer: Peer,
    /// When it started: seconds since the table's `base`.
    since: u32,
}

/// A client's address in 19 bytes (a `SocketAddr` takes 32).
#[derive(Debug, Clone, Copy)]
struct Peer {
    ip: [u8; 16],
    port: u16,
    family: Family,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Family {
    V4,
    V6,
    Unix,
}

impl Peer {
    fn of(a: Option<SocketAddr>) -> Peer {
        let mut ip = [0; 16];
        match a {
            Some(SocketAddr::V4(a)) => {
                ip[..4].copy_from_slice(&a.ip().octets());
                Peer { ip, port: a.port(), family: Family::V4 }
            }
            Some(SocketAddr::V6(a)) => {
                Peer { ip: a.ip().octets(), port: a.port(), family: Family::V6 }
            }
            None => Peer { ip, port: 0, family: Family::Unix },
        }
    }

    /// HAProxy's `proto=` and `src=`.
    fn show(&self) -> (&'static str, String) {
        match self.family {
            Family::V4 => {
                let ip = std::net::Ipv4Addr::new(self.ip[0], self.ip[1], self.ip[2], self.ip[3]);
                ("tcpv4", SocketAddr::from((ip, self.port)).to_string())
            }
            Family::V6 => {
                let ip = std::net::Ipv6Addr::from(self.ip);
                ("tcpv6", SocketAddr::from((ip, self.port)).to_string())
            }
            Family::Unix => ("unix", "unix".to_string()),
        }
    }
}

/// One worker's table.
#[derive(Debug)]
pub struct Registry {
    worker: u64,
    /// What the entries' `since` counts from.
    base: Instant,
    inner: Mutex<Table>,
    /// Turns of the worker's event loop and connections it accepted (`show activity`).
    loops: AtomicU64,
    accepted: AtomicU64,
}

#[derive(Debug, Default)]
struct Table {
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    next: u64,
    /// The server words of the slots (see [`Chunk`]).
    chunks: Vec<Arc<Chunk>>,
}

impl Table {
    fn server(&self, slot: usize) -> u64 {
        self.chunks.get(slot / CHUNK).map_or(0, |c| c[slot % CHUNK].load(Ordering::Relaxed))
    }

    /// Makes room for `slot`'s server word (in the worker's own list too) and clears it.
    fn prepare(&mut self, slot: usize) {
        while self.chunks.len() <= slot / CHUNK {
            self.chunks.push(crate::server::users::add_chunk());
        }
        self.chunks[slot / CHUNK][slot % CHUNK].store(0, Ordering::Relaxed);
    }
}

/// Every worker's table.
static WORKERS: Mutex<Vec<Arc<Registry>>> = Mutex::new(Vec::new());

use crate::server::users::{server_word, Chunk, CHUNK};

/// This worker's table.
static MINE: Slot<std::cell::RefCell<Option<Arc<Registry>>>> =
    Slot::new(Id::Sessions, || std::cell::RefCell::new(None));

/// `shutdown sessions server`: ends every session using server `idx` of backend
/// `backend_id`; how many.
pub fn abort_on_server(backend_id: u32, idx: usize) -> usize {
    let mut n = 0;
    let want = server_word(Some((backend_id, idx)));
    for r in lock(&WORKERS).iter() {
        let t = lock(&r.inner);
        for (i, e) in t.slots.iter().enumerate() {
            let Some(e) = e else { continue };
            if t.server(i) == want {
                if let Some(task) = &e.task {
                    task.abort();
                    n += 1;
                }
            }
        }
    }
    n
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// A new worker's table, known to the runtime API.
    pub fn for_worker() -> Arc<Registry> {
        let mut all = lock(&WORKERS);
        let r = Arc::new(Registry {
            worker: all.len() as u64 + 1,
            base: Instant::now(),
            inner: Mutex::default(),
            loops: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        });
        all.push(Arc::clone(&r));
        MINE.with(|m| *m.borrow_mut() = Some(Arc::clone(&r)));
        r
    }

    /// Registers a session; the slot to give back with [`Registry::remove`].
    /// Another turn of the worker's event loop.
    pub fn turn(&self) {
        self.loops.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(&self, peer: Option<SocketAddr>, frontend: &Arc<Frontend>) -> u32 {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        let mut t = lock(&self.inner);
        t.next += 1;
        let since = crate::clock::now().into_std().saturating_duration_since(self.base);
        let entry = Entry {
            id: self.worker << 40 | t.next,
            task: None,
            frontend: Arc::clone(frontend),
            peer: Peer::of(peer),
            since: since.as_secs() as u32,
        };
        let slot = match t.free.pop() {
            Some(i) => {
                t.slots[i as usize] = Some(entry);
                i
            }
            None => {
                t.slots.push(Some(entry));
                (t.slots.len() - 1) as u32
            }
        };
        t.prepare(slot as usize);
        slot
    }

    /// The session's task, once spawned.
    pub fn set_abort(&self, slot: u32, task: tokio::task::AbortHandle) {
        if let Some(Some(e)) = lock(&self.inner).slots.get_mut(slot as usize) {
            e.task = Some(task);
        }
    }

    pub fn remove(&self, slot: u32) {
        let mut t = lock(&self.inner);
        if let Some(s) = t.slots.get_mut(slot as usize) {
            *s = None;
            t.free.push(slot);
        }
    }
}

/// `show sess`: one line per live session, HAProxy's first fields.
pub fn show(out: &mut String) {
    use std::fmt::Write as _;
    let now = Instant::now();
    let shared = crate::shared::shared();
    let names = |(b, s): (u32, u32)| {
        let be = shared.as_ref()?.proxies.backend_by_id(b)?.clone();
        let srv = be.servers.get(s as usize)?.name.clone();
        Some((be.name.clone(), srv))
    };
    for r in lock(&WORKERS).iter() {
        let t = lock(&r.inner);
        let up = now.saturating_duration_since(r.base).as_secs();
        for (i, e) in t.slots.iter().enumerate() {
            let Some(e) = e else { continue };
            let word = t.server(i);
            let server = (word != 0).then(|| ((word >> 32) as u32, (word as u32).wrapping_sub(1)));
            let (be, srv) =
                server.and_then(names).unwrap_or_else(|| ("<NONE>".into(), "<none>".into()));
            let (proto, src) = e.peer.show();
            let age = up.saturating_sub(u64::from(e.since));
            let _ = writeln!(
                out,
                "0x{:012x}: proto={proto} src={src} fe={} be={be} srv={srv} ts=00 epoch=0 age={} calls=0",
                e.id,
                e.frontend.name,
                human_age(age),
            );
        }
    }
}

/// `show activity`: HAProxy's lines that Fulcrum measures, each as the total then one value
/// per worker; the API runs on the main thread, outside the workers (thread 0).
pub fn activity(out: &mut String) {
    use std::fmt::Write as _;
    let all = lock(&WORKERS);
    let n = all.len();
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let _ = writeln!(out, "thread_id: 0 (1..{n})");
    let _ = writeln!(out, "date_now: {}.{:06}", now.as_secs(), now.subsec_micros());
    let line = |out: &mut String, name: &str, v: &dyn Fn(&Registry) -> u64| {
        let each: Vec<u64> = all.iter().map(|r| v(r)).collect();
        let per: Vec<String> = each.iter().map(u64::to_string).collect();
        let _ = writeln!(out, "{name}: {} [ {} ]", each.iter().sum::<u64>(), per.join(" "));
    };
    line(out, "loops", &|r| r.loops.load(Ordering::Relaxed));
    line(out, "accepted", &|r| r.accepted.load(Ordering::Relaxed));
    line(out, "curr_sess", &|r| lock(&r.inner).slots.iter().flatten().count() as u64);
}

/// HAProxy's `human_time` for ages: `5s`, `2m5s`, `1h2m`, `3d1h`.
fn human_age(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{}s", s / 60, s % 60),
        3600..=86399 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

/// `shutdown session <id>`: ends the session; `false` when no live session has that id.
pub fn shutdown(id: u64) -> bool {
    for r in lock(&WORKERS).iter() {
        let t = lock(&r.inner);
        let Some(e) = t.slots.iter().flatten().find(|e| e.id == id) else { continue };
        if let Some(task) = &e.task {
            task.abort();
        }
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_haproxy_writes_them() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(125), "2m5s");
        assert_eq!(human_age(3720), "1h2m");
        assert_eq!(human_age(90000), "1d1h");
    }

    #[test]
    fn an_entry_keeps_the_peer_it_was_given_in_48_bytes() {
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 48);
        let v4: SocketAddr = "192.0.2.7:51234".parse().expect("v4");
        let v6: SocketAddr = "[2001:db8::1]:443".parse().expect("v6");
        assert_eq!(Peer::of(Some(v4)).show(), ("tcpv4", "192.0.2.7:51234".to_string()));
        assert_eq!(Peer::of(Some(v6)).show(), ("tcpv6", "[2001:db8::1]:443".to_string()));
        assert_eq!(Peer::of(None).show(), ("unix", "unix".to_string()));
    }
}
