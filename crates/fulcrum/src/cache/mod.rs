//! HTTP caches (`cache` sections, HAProxy 2.6's `cache.c`): whole responses stored in memory
//! shared by every worker, found by their request's host and target (and, with
//! `process-vary`, the secondary key `Vary` names), answered by the transaction in place of a
//! server. Memory is counted in HAProxy's 1 kB blocks and never exceeds `total-max-size`:
//! storing an object first evicts the least recently used ones (a second-chance FIFO: a hit
//! marks its entry, which the eviction then passes over once; HAProxy evicts the least
//! recently released). The index is split in 16 shards by key, each behind its own lock: a
//! hit read-locks one shard; stores, evictions and expiries take the global lock first. What a transaction looked up and is storing lives in [`Txn`]; the
//! decisions on heads are in [`policy`].
//!
//! Must not touch: sessions, sockets, rules (they call in).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use fulcrum_config as cfg;
use fulcrum_http::{Head, Method};

pub mod policy;

/// HAProxy's block size: an object takes whole blocks.
pub const BLOCK: u32 = 1024;
/// What HAProxy's `struct cache_entry` takes at the start of an object (x86_64).
const ENTRY_SIZE: u32 = 112;

/// One `cache` section at run time.
pub struct Cache {
    pub name: Arc<str>,
    pub max_blocks: u32,
    pub max_object: u32,
    pub max_age: u32,
    pub process_vary: bool,
    pub max_secondary: u32,
    shards: Box<[Padded]>,
    global: Mutex<Global>,
    /// Body bytes held by stores in progress: with the entries' blocks, within the size
    /// (room is made for them as they come, as HAProxy reserves its blocks).
    pending: AtomicU64,
}

/// A stored response.
pub struct Entry {
    /// The cache's name (`res.cache_name`).
    pub cache_name: Arc<str>,
    /// The response head as it stood when `cache-store` ran (its `Age` removed).
    pub head: Head,
    pub body: Box<[u8]>,
    pub etag: Option<Box<[u8]>>,
    /// Seconds since the epoch (see [`policy::last_modified`]).
    pub last_modified: i64,
    /// When it was stored, when it expires (seconds since the epoch), the `Age` it came with.
    pub stored: i64,
    pub expire: i64,
    pub origin_age: i64,
    /// The `Vary` signature and the secondary key it was stored under.
    pub sig: u8,
    pub sec: [u32; 2],
    /// Bytes as HAProxy counts them (its entry header, the head's text, the body) and blocks.
    pub size: u32,
    pub blocks: u32,
    key: Box<[u8]>,
    /// Hit since the eviction last passed it.
    used: AtomicBool,
    /// Removed from the index (its blocks are free).
    dead: AtomicBool,
}

impl Entry {
    /// The `Age` a hit answers with at `now`.
    pub fn age(&self, now: i64) -> i64 {
        ((now - self.stored).max(0) + self.origin_age).min(1 << 31)
    }
    fn hash(&self) -> u32 {
        let h = xxhash_rust::xxh3::xxh3_64(&self.key);
        (h >> 32) as u32
    }
}

/// Keys hashed with XXH3 (SipHash took a tenth of a hit's own time).
#[derive(Default, Clone, Copy)]
struct KeyHash;

impl std::hash::BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 ^= (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Entries by primary key (one, or with `Vary` up to `max-secondary-entries`), for the keys
/// whose hash falls in this shard: a hit read-locks its shard alone.
#[derive(Default)]
struct Shard {
    by_key: HashMap<Box<[u8]>, Vec<Arc<Entry>>, KeyHash>,
}

/// A shard on a cache line of its own (two workers' hits on other shards do not contend).
#[derive(Default)]
#[repr(align(128))]
struct Padded(RwLock<Shard>);

const SHARDS: usize = 16;

/// What the whole cache shares: the eviction's order and the room in use. Taken before a
/// shard's lock by everything but a lookup.
#[derive(Default)]
struct Global {
    /// Every entry in the order stored (the eviction's), possibly some dead ones.
    order: VecDeque<Weak<Entry>>,
    used_blocks: u32,
    entries: usize,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cache {}", self.name)
    }
}

impl std::fmt::Debug for Txn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hit = self.hit.as_ref().map(|h| &*h.entry.cache_name);
        write!(f, "cache txn (hit {hit:?}, storing {})", self.store.is_some())
    }
}

impl Cache {
    pub fn new(c: &cfg::cache::CacheSection) -> Cache {
        Cache {
            name: c.name.as_str().into(),
            max_blocks: (c.total_max_size / u64::from(BLOCK)).min(u64::from(u32::MAX)) as u32,
            // (Resolved by the configuration: a 256th of the size when unset.)
            max_object: match c.max_object_size {
                0 => (c.total_max_size / 256).min(u64::from(u32::MAX)) as u32,
                n => n,
            },
            max_age: c.max_age,
            process_vary: c.process_vary,
            max_secondary: c.max_secondary_entries,
            shards: (0..SHARDS).map(|_| Padded::default()).collect(),
            global: Mutex::new(Global::default()),
            pending: AtomicU64::new(0),
        }
    }

    /// The live entry for `key` that answers `req` at `now` (an expired one is removed).
    pub fn lookup(&self, key: &[u8], req: &Head, now: i64) -> Option<Arc<Entry>> {
        let mut expired = false;
        let found = {
            let st = self.read(key);
            let list = st.by_key.get(key)?;
            let sig = list.first()?.sig;
            let sec = match sig {
                0 => None,
                _ => Some(policy::secondary(req, sig)?),
            };
            let found = list.iter().find(|e| {
                let live = e.expire > now;
                expired |= !live;
                live && sec.is_none_or(|s| {
                    policy::codings_match(e.sec[0], s[0]) && e.sec[1] == s[1] && e.sig == sig
                })
            });
            found.cloned()
        };
        if expired {
            self.purge_key(key, now);
        }
        // (Read first: a hot entry's line is not written by every hit.)
        if let Some(e) = found.as_ref().filter(|e| !e.used.load(Ordering::Relaxed)) {
            e.used.store(true, Ordering::Relaxed);
        }
        found
    }

    /// Removes `key`'s entries (an unsafe method's success invalidates them).
    pub fn invalidate(&self, key: &[u8]) {
        let mut g = self.global();
        if let Some(list) = self.write(key).by_key.remove(key) {
            for e in &list {
                g.forget(e);
            }
        }
    }

    fn purge_key(&self, key: &[u8], now: i64) {
        let mut g = self.global();
        let mut st = self.write(key);
        let Some(mut list) = st.by_key.remove(key) else { return };
        list.retain(|e| e.expire > now || !g.forget(e));
        if !list.is_empty() {
            st.by_key.insert(key.into(), list);
        }
    }

    fn shard(&self, key: &[u8]) -> &RwLock<Shard> {
        let h = xxhash_rust::xxh3::xxh3_64(key);
        &self.shards[(h >> 60) as usize % SHARDS].0
    }
    fn read(&self, key: &[u8]) -> RwLockReadGuard<'_, Shard> {
        self.shard(key).read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self, key: &[u8]) -> RwLockWriteGuard<'_, Shard> {
        self.shard(key).write().unwrap_or_else(|e| e.into_inner())
    }
    fn global(&self) -> MutexGuard<'_, Global> {
        self.global.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evicts the oldest entry not hit since the eviction last passed it (`list`: the entries
    /// of the key being stored, out of their shard meanwhile); false when none is left.
    fn evict_one(&self, g: &mut Global, list: &mut Vec<Arc<Entry>>) -> bool {
        while let Some(w) = g.order.pop_front() {
            let Some(e) = w.upgrade() else { continue };
            if e.dead.load(Ordering::Relaxed) {
                continue;
            }
            if e.used.swap(false, Ordering::Relaxed) {
                g.order.push_back(w);
                continue;
            }
            g.forget(&e);
            let mut st = self.write(&e.key);
            match st.by_key.get_mut(&e.key) {
                Some(l) => {
                    l.retain(|o| !Arc::ptr_eq(o, &e));
                    if l.is_empty() {
                        st.by_key.remove(&e.key);
                    }
                }
                None => list.retain(|o| !Arc::ptr_eq(o, &e)),
            }
            return true;
        }
        false
    }

    /// Stores a complete entry: replaces the one of the same keys, refuses one past
    /// `max-secondary-entries`, evicts until it fits.
    fn insert(&self, e: Entry, now: i64) -> bool {
        if e.blocks > self.max_blocks || e.expire <= now {
            return false;
        }
        let mut g = self.global();
        let mut list = self.write(&e.key).by_key.remove(&e.key).unwrap_or_default();
        // The entry it replaces goes, with expired ones and those of another `Vary`.
        list.retain(|o| {
            let goes = o.expire <= now || o.sig != e.sig || o.sec == e.sec;
            if goes {
                g.forget(o);
            }
            !goes
        });
        if e.sig != 0 && list.len() >= self.max_secondary as usize {
            self.write(&e.key).by_key.insert(e.key.clone(), list);
            return false;
        }
        while g.used_blocks + e.blocks > self.max_blocks {
            if !self.evict_one(&mut g, &mut list) {
                break;
            }
        }
        let e = Arc::new(e);
        g.used_blocks += e.blocks;
        g.entries += 1;
        g.order.push_back(Arc::downgrade(&e));
        list.push(Arc::clone(&e));
        self.write(&e.key).by_key.insert(e.key.clone(), list);
        if g.order.len() > 2 * g.entries + 64 {
            g.order.retain(|w| w.upgrade().is_some_and(|e| !e.dead.load(Ordering::Relaxed)));
        }
        true
    }

    /// Takes room for `n` more bytes of a store in progress, evicting entries when the
    /// entries and the stores in progress would exceed the size; false when they still would.
    fn reserve(&self, n: u64) -> bool {
        let total = u64::from(self.max_blocks) * u64::from(BLOCK);
        let pending = self.pending.fetch_add(n, Ordering::Relaxed) + n;
        let fits = |g: &Global| pending + u64::from(g.used_blocks) * u64::from(BLOCK) <= total;
        let mut g = self.global();
        while !fits(&g) && self.evict_one(&mut g, &mut Vec::new()) {}
        let ok = fits(&g);
        if !ok {
            self.pending.fetch_sub(n, Ordering::Relaxed);
        }
        ok
    }

    /// `show cache`'s lines for this cache (HAProxy 2.6's format; addresses are the
    /// entries').
    pub fn show(&self, now: i64, out: &mut String) {
        use std::fmt::Write;
        let g = self.global();
        let me = self as *const Cache as usize;
        let free = self.max_blocks.saturating_sub(g.used_blocks);
        let _ = writeln!(out, "{me:#x}: {} (shctx:{me:#x}, available blocks:{free})", self.name);
        let mut all: Vec<Arc<Entry>> = Vec::new();
        for sh in self.shards.iter() {
            let st = sh.0.read().unwrap_or_else(|e| e.into_inner());
            all.extend(st.by_key.values().flatten().filter(|e| e.expire > now).cloned());
        }
        all.sort_by_key(|e| (e.hash(), e.stored));
        for e in all {
            let vary: String =
                e.sec.iter().flat_map(|w| w.to_ne_bytes()).map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(
                out,
                "{:#x} hash:{} vary:0x{vary} size:{} ({} blocks), refcount:{}, expire:{}",
                Arc::as_ptr(&e) as usize,
                e.hash(),
                e.size,
                e.blocks,
                Arc::strong_count(&e) - 2,
                e.expire - now
            );
        }
    }

    /// Blocks in use, entries.
    #[cfg(test)]
    pub fn usage(&self) -> (u32, usize) {
        let g = self.global();
        (g.used_blocks, g.entries)
    }
}

impl Global {
    /// Marks `e` removed and frees its blocks (true: it was live).
    fn forget(&mut self, e: &Entry) -> bool {
        if e.dead.swap(true, Ordering::Relaxed) {
            return false;
        }
        self.used_blocks -= e.blocks;
        self.entries -= 1;
        true
    }
}

/// The plan's caches, by name.
#[derive(Default, Debug)]
pub struct Caches(pub Vec<Arc<Cache>>);

impl Caches {
    pub fn build(config: &cfg::Config) -> Caches {
        Caches(config.caches.iter().map(|c| Arc::new(Cache::new(c))).collect())
    }
    pub fn get(&self, name: &str) -> Option<&Arc<Cache>> {
        self.0.iter().find(|c| &*c.name == name)
    }
}

/// A transaction's dealings with caches: its key, what the request allows, the hit it is
/// answered with, the response being stored; the counters its lookups owe.
#[derive(Default)]
pub struct Txn {
    /// The primary key (empty: none).
    pub key: Vec<u8>,
    pub asked: Option<policy::Asked>,
    pub hit: Option<Hit>,
    pub store: Option<Box<Writer>>,
    /// Lookups and hits to count on the frontend's and the backend's counters.
    pub lookups: [u32; 2],
    pub hits: [u32; 2],
}

impl Txn {
    /// What a new transaction starts with (the key's room kept).
    pub fn reset(&mut self) {
        self.key.clear();
        self.asked = None;
        self.hit = None;
        self.store = None;
        (self.lookups, self.hits) = ([0, 0], [0, 0]);
    }
}

/// A request answered from a cache.
pub struct Hit {
    /// (Its cache is named by the entry: a hit takes no reference on the cache.)
    pub entry: Arc<Entry>,
    /// The request's validators match: `304 Not Modified`.
    pub not_modified: bool,
}

/// The seconds-since-epoch clock the caches use.
pub fn now() -> i64 {
    crate::clock::wall().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `http-request cache-use`: the key made, the cache looked up (`fe`: the rule is the
/// frontend's, whose counters count it).
pub fn use_cache(cache: &Arc<Cache>, req: &Head, t: &mut Txn, fe: bool) {
    let asked = *t.asked.get_or_insert_with(|| policy::asked(req));
    if t.key.is_empty() && !policy::key(req, &mut t.key) {
        return;
    }
    if asked.ignore || t.hit.is_some() {
        return;
    }
    let side = usize::from(!fe);
    t.lookups[side] += 1;
    if let Some(entry) = cache.lookup(&t.key, req, now()) {
        t.hits[side] += 1;
        let not_modified = policy::not_modified(req, entry.etag.as_deref(), entry.last_modified);
        t.hit = Some(Hit { entry, not_modified });
    }
}

/// A transaction's cache state, made at its first cache rule.
pub fn txn(slot: &mut Option<Box<Txn>>) -> &mut Txn {
    slot.get_or_insert_with(Default::default)
}

/// `http-response cache-store`: whether the response (`resp`, to `req`: none outside the
/// response rules) is stored; if so its store begins (`t.store`), its body to be added as it
/// goes ([`Writer`]).
pub fn store_response(
    cache: &Arc<Cache>,
    req: Option<&Head>,
    resp: &mut Head,
    slot: &mut Option<Box<Txn>>,
) {
    let Some(req) = req else { return };
    let t = txn(slot);
    if t.hit.is_some() || t.store.is_some() || req.version() == fulcrum_http::Version::Http10 {
        return;
    }
    let method = req.method();
    if method != Method::Get {
        let unsafe_method = !matches!(method, Method::Options | Method::Head | Method::Trace);
        if (200..400).contains(&resp.status()) && unsafe_method && !t.key.is_empty() {
            cache.invalidate(&t.key);
        }
        return;
    }
    if t.key.is_empty() || resp.status() != 200 {
        return;
    }
    if let Some(w) = begin_store(cache, req, resp, t) {
        t.store = Some(Box::new(w));
    }
}

fn begin_store(cache: &Arc<Cache>, req: &Head, resp: &mut Head, t: &Txn) -> Option<Writer> {
    let asked = t.asked.unwrap_or(policy::Asked { ignore: false, cacheable: true });
    let sig = policy::vary(resp)?;
    if sig != 0 && !cache.process_vary {
        return None;
    }
    if asked.ignore || !policy::storable(resp, asked.cacheable) {
        return None;
    }
    let now = now();
    let (lifetime, fresh) = policy::lifetime(resp, cache.max_age, now);
    let mut origin_age = 0;
    if let Some(v) = resp.header(b"age") {
        let v = v.split(|&b| b == b',').next().unwrap_or(b"").trim_ascii();
        let age: i64 = std::str::from_utf8(v).ok()?.parse().ok()?;
        if age <= 0 || age > fresh {
            return None;
        }
        origin_age = age.min(1 << 31);
        resp.remove_header(b"age");
    }
    let mut sec = [0, 0];
    if sig != 0 {
        sec = policy::secondary(req, sig & policy::VARY_REFERER)?;
        if sig & policy::VARY_ENCODING != 0 {
            sec[0] = policy::content_codings(resp)?;
        }
    }
    let head_len = resp.text_len(false) as u32;
    let size = ENTRY_SIZE + head_len;
    if let fulcrum_http::Body::Length(n) = resp.info().body {
        if u64::from(size) + n > u64::from(cache.max_object) {
            return None;
        }
    }
    if size > cache.max_object {
        return None;
    }
    let mut head = Head::new();
    head.copy_from(resp);
    Some(Writer {
        cache: Arc::clone(cache),
        key: t.key.as_slice().into(),
        etag: policy::etag(&head),
        last_modified: policy::last_modified(&head, now),
        head,
        body: Vec::new(),
        size,
        stored: now,
        expire: now + lifetime,
        origin_age,
        sig,
        sec,
        failed: false,
        reserved: 0,
    })
}

/// A response being stored: its head, its body as it passes.
pub struct Writer {
    cache: Arc<Cache>,
    key: Box<[u8]>,
    head: Head,
    etag: Option<Box<[u8]>>,
    last_modified: i64,
    body: Vec<u8>,
    size: u32,
    stored: i64,
    expire: i64,
    origin_age: i64,
    sig: u8,
    sec: [u32; 2],
    failed: bool,
    /// Bytes reserved in the cache (given back when the store ends, stored or not).
    reserved: u64,
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.cache.pending.fetch_sub(self.reserved, Ordering::Relaxed);
    }
}

impl Writer {
    /// Body data on its way to the client; past `max-object-size` the store is abandoned.
    pub fn push(&mut self, data: &[u8]) {
        if self.failed || data.is_empty() {
            return;
        }
        let size = u64::from(self.size) + (self.body.len() + data.len()) as u64;
        if size > u64::from(self.cache.max_object) || !self.cache.reserve(data.len() as u64) {
            self.fail();
            return;
        }
        self.reserved += data.len() as u64;
        self.body.extend_from_slice(data);
    }

    /// The response cannot be stored after all (trailers, a failed transfer).
    pub fn fail(&mut self) {
        self.failed = true;
        self.body = Vec::new();
        // Its room goes to the other stores at once.
        self.cache.pending.fetch_sub(std::mem::take(&mut self.reserved), Ordering::Relaxed);
    }

    /// The whole body came: the entry is stored (false when it was not), before its last
    /// bytes go to the client (who may ask again at once, on another connection), as
    /// HAProxy's entry is complete once the message ended. A body that came without a length
    /// (chunks, HTTP/2 data) is stored with its length. Later calls do nothing.
    pub fn finish(&mut self) -> bool {
        if std::mem::replace(&mut self.failed, true) {
            return false;
        }
        let mut head = std::mem::take(&mut self.head);
        if !matches!(head.info().body, fulcrum_http::Body::Length(_))
            && !framed(&mut head, self.body.len())
        {
            return false;
        }
        let size = self.size + self.body.len() as u32;
        let e = Entry {
            cache_name: Arc::clone(&self.cache.name),
            head,
            body: std::mem::take(&mut self.body).into_boxed_slice(),
            etag: self.etag.take(),
            last_modified: self.last_modified,
            stored: self.stored,
            expire: self.expire,
            origin_age: self.origin_age,
            sig: self.sig,
            sec: self.sec,
            size,
            blocks: size.div_ceil(BLOCK),
            key: std::mem::take(&mut self.key),
            used: AtomicBool::new(false),
            dead: AtomicBool::new(false),
        };
        self.cache.insert(e, now())
    }
}

/// `head` with a `Content-Length` of `len` in place of its chunked framing (read again, so
/// its facts say so); false if it would not parse.
fn framed(head: &mut Head, len: usize) -> bool {
    head.remove_header(b"transfer-encoding");
    let _ = head.set_header(b"content-length", len.to_string().as_bytes());
    let mut text = Vec::with_capacity(head.text_len(false));
    head.write_to(&mut text);
    let limits = fulcrum_http::Limits { max_head: text.len() + 1, max_headers: 10_000 };
    head.clear();
    matches!(head.parse_response(&text, &limits), Ok(Some(_)))
}

#[cfg(test)]
mod tests;
