//! Stick tables (HAProxy's `stktable`): keyed entries holding counters, shared by every worker.
//!
//! A table is split in shards (one for small tables, so `size` and the eviction order are
//! exact; up to 64 for large ones), each a lock around a hash map and an order of entries by
//! last touch. Sessions that track an entry hold it (`Arc`) and update its counters under the
//! entry's own small lock, without touching the shard: a keep-alive request on a tracked
//! entry costs one uncontended lock. Touching an entry is one atomic store; the order is
//! brought up to date lazily, when the oldest entries are looked at (expiry, eviction).
//!
//! Entries expire `expire` after their last touch unless a session tracks them; a full table
//! evicts its least recently touched untracked entries (`nopurge`: refuses new ones). Expired
//! entries go when a shard is full, when `purge` runs (once a second) and are skipped by reads.
//! The first worker purges the tables once a second; a reload keeps a table declared the same
//! way (`Table::same_as`).
//!
//! Must not touch: sessions, rules (`track` keeps what a session holds).

pub mod dict;
pub mod freq;
pub mod track;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use fulcrum_config as cfg;
use fulcrum_config::{DataType, TableKey};

pub use freq::Layout;

/// A key as the table stores it (converted to the table's type: from a sample by
/// `rules::stick::key_of`, from the runtime API's text by `rules::stick::parse_key`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    V4([u8; 4]),
    V6([u8; 16]),
    Int(i32),
    /// Strings (cut to the table's length) and binary keys (cut or zero-padded).
    Bytes(Box<[u8]>),
}

impl Key {
    /// The key as `show table` prints it.
    pub fn show(&self, t: TableKey) -> String {
        match self {
            Key::V4(a) => std::net::Ipv4Addr::from(*a).to_string(),
            Key::V6(a) => std::net::Ipv6Addr::from(*a).to_string(),
            Key::Int(i) => i.to_string(),
            Key::Bytes(b) if matches!(t, TableKey::Binary { .. }) => {
                b.iter().map(|x| format!("{x:02X}")).collect()
            }
            Key::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        }
    }
}

/// The tables' clock, in microseconds (fine enough that touches a millisecond apart keep
/// their order for eviction).
pub fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    let now = crate::clock::now().into_std();
    now.saturating_duration_since(epoch).as_micros() as u64
}

/// The millisecond tick of frequency counters at `now` (as HAProxy's `now_ms`, which wraps;
/// offset so a fresh counter's zero tick is far in the past).
pub fn tick(now: u64) -> u32 {
    ((now / 1000) as u32).wrapping_add(1 << 31)
}

/// One entry: the key, its counters and who holds it.
#[derive(Debug)]
pub struct Entry {
    pub key: Key,
    /// Sessions tracking it (HAProxy's `ref_cnt`, `show table`'s `use`).
    pub trackers: AtomicU32,
    /// When it was last touched ([`now`], microseconds).
    touched: AtomicU64,
    /// Its place in the shard's order: the touch time it was queued with (changed under the
    /// shard's lock only).
    queued: AtomicU64,
    words: Mutex<Words>,
}

/// An entry's data words: inline for the usual one to three, else on the heap.
#[derive(Debug)]
pub enum Words {
    Inline(u8, [u64; 3]),
    Heap(Box<[u64]>),
}

impl Words {
    fn new(n: usize) -> Words {
        if n <= 3 {
            Words::Inline(n as u8, [0; 3])
        } else {
            Words::Heap(vec![0; n].into())
        }
    }
}

impl std::ops::Deref for Words {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            Words::Inline(n, w) => &w[..usize::from(*n)],
            Words::Heap(b) => b,
        }
    }
}

impl std::ops::DerefMut for Words {
    fn deref_mut(&mut self) -> &mut [u64] {
        match self {
            Words::Inline(n, w) => &mut w[..usize::from(*n)],
            Words::Heap(b) => b,
        }
    }
}

impl Entry {
    /// The entry's counters, locked.
    pub fn data(&self) -> MutexGuard<'_, Words> {
        self.words.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn touch(&self, now: u64) {
        self.touched.fetch_max(now, Ordering::Relaxed);
    }
    pub fn touched(&self) -> u64 {
        self.touched.load(Ordering::Relaxed)
    }
    /// Its key in a shard's order: (queued touch time, identity).
    fn order_key(self: &Arc<Self>) -> (u64, usize) {
        (self.queued.load(Ordering::Relaxed), Arc::as_ptr(self) as usize)
    }
}

/// A shard's entries, found by key (the set holds the entries themselves: one pointer per
/// slot, not a copy of the key).
#[derive(Debug, Clone)]
struct Held(Arc<Entry>);

impl std::hash::Hash for Held {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.key.hash(h)
    }
}
impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for Held {}
impl std::borrow::Borrow<Key> for Held {
    fn borrow(&self) -> &Key {
        &self.0.key
    }
}

#[derive(Default)]
struct Shard {
    map: HashSet<Held>,
    /// Entries by (touch time when queued, identity): the oldest first. An entry touched
    /// since it was queued is moved when it comes to the front.
    order: BTreeMap<(u64, usize), Arc<Entry>>,
}

/// A stick table of the running configuration.
pub struct Table {
    /// The proxy that declares it.
    pub name: Arc<str>,
    /// Its place among the tables (configuration order).
    pub order: usize,
    pub key: TableKey,
    pub size: u32,
    /// Microseconds an untouched entry lives (0: forever).
    pub expire: u64,
    pub nopurge: bool,
    pub layout: Layout,
    shards: Box<[Mutex<Shard>]>,
    /// Entries in the table.
    used: AtomicU32,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Entries looked at, at most, to find room in a full shard.
const EVICT_SCAN: usize = 64;

impl Table {
    pub fn new(name: &str, order: usize, t: &cfg::StickTable) -> Table {
        let shards = (t.size / 4096).clamp(1, 64).next_power_of_two().min(64) as usize;
        Table {
            name: name.into(),
            order,
            key: t.key,
            size: t.size,
            expire: t.expire.map_or(0, |d| d.as_micros() as u64),
            nopurge: t.nopurge,
            layout: Layout::new(&t.store),
            shards: (0..shards).map(|_| Mutex::new(Shard::default())).collect(),
            used: AtomicU32::new(0),
        }
    }

    /// Declared as `t` (a reload keeps the table and its entries).
    pub fn same_as(&self, t: &cfg::StickTable) -> bool {
        self.key == t.key
            && self.size == t.size
            && self.expire == t.expire.map_or(0, |d| d.as_micros() as u64)
            && self.nopurge == t.nopurge
            && self.layout.stored == {
                let mut s = t.store.clone();
                s.sort_by_key(|x| x.ty);
                s
            }
    }

    /// Entries in the table.
    pub fn used(&self) -> u32 {
        self.used.load(Ordering::Relaxed)
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard> {
        let i = if self.shards.len() == 1 {
            0
        } else {
            use std::hash::BuildHasher;
            static SEED: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
            SEED.get_or_init(Default::default).hash_one(key) as usize & (self.shards.len() - 1)
        };
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn shard_cap(&self) -> usize {
        (self.size as usize).div_ceil(self.shards.len()).max(1)
    }

    fn expired(&self, e: &Entry, now: u64) -> bool {
        self.expire != 0
            && e.trackers.load(Ordering::Relaxed) == 0
            && self.deadline(e.touched()) <= now / 1000
    }

    /// The entry of `key`, when there is one and it has not expired.
    pub fn lookup(&self, key: &Key, now: u64) -> Option<Arc<Entry>> {
        let s = self.shard(key);
        s.map.get(key).map(|h| &h.0).filter(|e| !self.expired(e, now)).cloned()
    }

    /// The entry of `key`, created (and touched) as needed; `None` when the table is full and
    /// nothing can go (`nopurge`, or every old entry is tracked).
    pub fn get_or_create(&self, key: Key, now: u64) -> Option<Arc<Entry>> {
        let mut s = self.shard(&key);
        if let Some(Held(e)) = s.map.get(&key) {
            if !self.expired(e, now) {
                e.touch(now);
                return Some(e.clone());
            }
        }
        self.remove_expired(&mut s, now, usize::MAX);
        if let Some(Held(e)) = s.map.get(&key) {
            // expired, but tracked again since
            e.touch(now);
            return Some(e.clone());
        }
        if s.map.len() >= self.shard_cap() && (self.nopurge || !self.evict_oldest(&mut s, now)) {
            return None;
        }
        let e = Arc::new(Entry {
            key,
            trackers: AtomicU32::new(0),
            touched: AtomicU64::new(now),
            queued: AtomicU64::new(now),
            words: Mutex::new(Words::new(self.layout.words)),
        });
        s.order.insert(e.order_key(), e.clone());
        s.map.insert(Held(e.clone()));
        self.used.fetch_add(1, Ordering::Relaxed);
        Some(e)
    }

    fn unlink(&self, s: &mut Shard, e: &Arc<Entry>) {
        s.order.remove(&e.order_key());
        if s.map.remove(&e.key) {
            self.used.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Queues an entry again at `at` (under the shard's lock).
    fn queue_at(s: &mut Shard, e: &Arc<Entry>, at: u64) {
        s.order.remove(&e.order_key());
        e.queued.store(at, Ordering::Relaxed);
        s.order.insert(e.order_key(), e.clone());
    }

    /// Moves an entry touched since it was queued to its place; true when it was moved.
    fn requeue(s: &mut Shard, e: &Arc<Entry>) -> bool {
        let t = e.touched();
        if t <= e.queued.load(Ordering::Relaxed) {
            return false;
        }
        Self::queue_at(s, e, t);
        true
    }

    /// Removes expired entries from the front of the order (at most `max` looked at).
    fn remove_expired(&self, s: &mut Shard, now: u64, max: usize) {
        if self.expire == 0 {
            return;
        }
        let mut looked = 0;
        while looked < max {
            let Some((&(t, _), e)) = s.order.first_key_value() else { break };
            if self.deadline(t) > now / 1000 {
                break;
            }
            looked += 1;
            let e = e.clone();
            if Self::requeue(s, &e) {
                continue;
            }
            if e.trackers.load(Ordering::Relaxed) > 0 {
                // Tracked: it stays; looked at again an expiry period later.
                Self::queue_at(s, &e, now);
                continue;
            }
            self.unlink(s, &e);
        }
    }

    /// Evicts the least recently touched untracked entry; false when none was found.
    fn evict_oldest(&self, s: &mut Shard, now: u64) -> bool {
        for _ in 0..EVICT_SCAN {
            let Some((_, e)) = s.order.first_key_value() else { return false };
            let e = e.clone();
            if Self::requeue(s, &e) {
                continue;
            }
            if e.trackers.load(Ordering::Relaxed) > 0 {
                // In use now: it goes to the back.
                let at = now.max(e.queued.load(Ordering::Relaxed));
                Self::queue_at(s, &e, at);
                continue;
            }
            self.unlink(s, &e);
            return true;
        }
        false
    }

    /// The millisecond an entry touched at `touched` expires (expiry counts in whole
    /// milliseconds, as HAProxy's ticks do: touched in a millisecond, it lives `expire` from
    /// that millisecond's start).
    fn deadline(&self, touched: u64) -> u64 {
        touched / 1000 + self.expire / 1000
    }

    /// Removes an entry nobody tracks any more if it has expired (HAProxy's
    /// `stksess_kill_if_expired`, when a tracker lets go).
    pub fn kill_if_expired(&self, e: &Arc<Entry>, now: u64) {
        if !self.expired(e, now) {
            return;
        }
        let mut s = self.shard(&e.key);
        if s.map.get(&e.key).is_some_and(|h| Arc::ptr_eq(&h.0, e)) && self.expired(e, now) {
            self.unlink(&mut s, e);
        }
    }

    /// Drops expired entries (called once a second).
    pub fn purge(&self, now: u64) {
        for sh in self.shards.iter() {
            let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
            self.remove_expired(&mut s, now, 10_000);
        }
    }

    /// Every live entry, oldest touch first within each shard (`show table`).
    pub fn entries(&self, now: u64) -> Vec<Arc<Entry>> {
        let mut out = Vec::new();
        for sh in self.shards.iter() {
            let s = sh.lock().unwrap_or_else(|e| e.into_inner());
            out.extend(s.map.iter().map(|h| &h.0).filter(|e| !self.expired(e, now)).cloned());
        }
        out
    }

    /// Removes an entry unless a session tracks it; true when it went (`clear table`).
    pub fn remove(&self, key: &Key) -> bool {
        let mut s = self.shard(key);
        let Some(Held(e)) = s.map.get(key).cloned() else { return false };
        if e.trackers.load(Ordering::Relaxed) > 0 {
            return false;
        }
        self.unlink(&mut s, &e);
        true
    }

    /// Milliseconds until an entry expires (`show table`'s `exp`, `table_expire`): `None`
    /// for a table without `expire`.
    pub fn expires_in(&self, e: &Entry, now: u64) -> Option<u64> {
        (self.expire != 0).then(|| self.deadline(e.touched()).saturating_sub(now / 1000))
    }

    /// Reads a data type of an entry (a rate over its period).
    pub fn read(&self, e: &Entry, ty: DataType, idx: u16) -> Option<u64> {
        freq::read(&self.layout, &e.data(), ty, idx, tick(now()))
    }

    /// Adds to data types of an entry at once (one lock), and touches it when one of them is
    /// stored (as HAProxy touches an entry whose data changed).
    pub fn add(&self, e: &Entry, adds: &[(DataType, u64)]) {
        if !adds.iter().any(|(ty, _)| self.layout.has(*ty)) {
            return;
        }
        let now = now();
        {
            let mut w = e.data();
            for &(ty, n) in adds {
                freq::add(&self.layout, &mut w, ty, 0, n, tick(now));
            }
        }
        e.touch(now);
    }
}

/// The tables of a plan, by the name of the proxy that declares them.
pub type Tables = HashMap<String, Arc<Table>>;

#[cfg(test)]
mod tests;
