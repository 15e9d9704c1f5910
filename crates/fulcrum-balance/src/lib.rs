//! Load-balancing algorithms: pure functions of server state, one file per algorithm.
//!
//! The engine owns the servers and their live counters; it shows them to an algorithm through
//! [`ServerSet`] and gets back an index. Nothing here does I/O, reads a clock or locks: the caller
//! serialises calls on one [`Balancer`] (one per backend) and passes randomness and hash keys in,
//! so every property is testable deterministically.
//!
//! Rules shared by every algorithm (HAProxy 2.6 semantics):
//! - a server is *eligible* when `usable(i)` and `weight(i) > 0` (weight 0 means no traffic);
//! - backup servers are considered only when no active server is eligible; then only the first
//!   eligible backup in config order is used, unless [`Balancer::allbackups`] is set, in which
//!   case every eligible backup is balanced with the algorithm;
//! - [`Pick::exclude`] is never returned while another candidate of the same group exists.
//!
//! `pick` never allocates: per-backend tables (maps, rings, counters) are rebuilt only when
//! [`ServerSet::generation`] (or the server count) changes.

mod candidates;
mod first;
mod hash;
mod hashfn;
mod leastconn;
mod map;
mod random;
mod rng;
mod roundrobin;
mod static_rr;
#[cfg(test)]
mod testutil;

pub use hashfn::{full_hash, hash_crc32, hash_djb2, hash_key, hash_sdbm, hash_wt6, source_hash};
pub use rng::Rng;

use candidates::Candidates;

/// What an algorithm may know about a backend's servers. Indices are `0..len()`, in config order.
pub trait ServerSet {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Current effective weight, in sixteenths of a configured weight unit (HAProxy's
    /// `BE_WEIGHT_SCALE`: weight 1 is 16, so a server warming up can hold a fraction); may
    /// change at run time. 0 means "never chosen". Only ratios matter, except for the
    /// consistent-hash ring, which places one point per sixteenth.
    fn weight(&self, i: usize) -> u32;
    /// The server may take this connection now (up, not in maintenance, not full when the
    /// caller only wants servers with a free slot).
    fn usable(&self, i: usize) -> bool;
    /// A `backup` server: chosen only when no active server is usable.
    fn backup(&self, i: usize) -> bool;
    /// Connections the server holds now (leastconn, random, first).
    fn load(&self, i: usize) -> u32;
    /// The server's `maxconn` (0: unlimited), for `first`.
    fn maxconn(&self, i: usize) -> u32;
    /// Changes whenever a weight, a usable state or the server list changes, so algorithms
    /// with precomputed tables (map-based and consistent hashing) know to rebuild them.
    fn generation(&self) -> u64;
    /// Stable identity of server `i` (HAProxy's `id`/puid, 1-based by default). Consistent
    /// hashing places a server's points on the ring from this value, so a server keeps its
    /// points when others are added or removed. The default (`i + 1`) equals HAProxy's
    /// automatic ids; engines that may remove servers from the middle of the list should
    /// return the configured `id` instead.
    fn id(&self, i: usize) -> u32 {
        u32::try_from(i).map_or(u32::MAX, |i| i.saturating_add(1))
    }
}

/// `balance` algorithm of a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// `roundrobin`: smooth weighted round robin; run-time weight changes apply at once.
    RoundRobin,
    /// `static-rr`: weighted round robin with the weights first seen (run-time changes other
    /// than to/from 0 are ignored, as in HAProxy).
    StaticRr,
    /// `leastconn`: lowest `(load + 1) / weight` (idle servers first), ties in turn.
    LeastConn,
    /// `first`: first server in config order with a free slot (`load < maxconn`).
    First,
    /// `source`: hash of the client address ([`Pick::key`] = its octets, 4 or 16 bytes),
    /// folded as HAProxy does (XOR of big-endian 32-bit words, then [`HashConfig::avalanche`]);
    /// HAProxy ignores the hash function for `source`, and so does this.
    Source,
    /// `uri`, `url_param`, `hdr`, `rdp-cookie`, `hash <expr>`: [`Pick::key`] hashed with
    /// [`hash_key`] using [`HashConfig::function`] and [`HashConfig::avalanche`].
    Hash,
    /// `random(<draws>)`: `draws` weighted random picks, the least loaded (`load / weight`)
    /// wins. `draws` 0 is treated as 1; HAProxy's default is 2.
    Random { draws: u32 },
}

/// Hash function of `hash-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HashFunction {
    #[default]
    Sdbm,
    Djb2,
    Wt6,
    Crc32,
}

/// `hash-type <method> <function> [<modifier>]`; only used by [`Algorithm::Source`] and
/// [`Algorithm::Hash`]. The default is HAProxy's: `map-based sdbm`, no avalanche.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HashConfig {
    /// `consistent` (ring) rather than `map-based` (table indexed by `hash % total weight`).
    pub consistent: bool,
    pub function: HashFunction,
    /// The `avalanche` modifier: apply [`full_hash`] to the hash.
    pub avalanche: bool,
}

/// Per-pick inputs.
pub struct Pick<'a> {
    /// Bytes to hash for [`Algorithm::Source`]/[`Algorithm::Hash`]. `None` (no address, no
    /// such header...) falls back to round robin over the hash table, as HAProxy does.
    pub key: Option<&'a [u8]>,
    pub rng: &'a mut Rng,
    /// A server to avoid (redispatch after a failure), honoured when another candidate of the
    /// same group (active, or backup when no active is eligible) is eligible.
    pub exclude: Option<usize>,
}

impl<'a> Pick<'a> {
    pub fn new(rng: &'a mut Rng) -> Self {
        Pick { key: None, rng, exclude: None }
    }
    #[must_use]
    pub fn with_key(mut self, key: &'a [u8]) -> Self {
        self.key = Some(key);
        self
    }
    #[must_use]
    pub fn excluding(mut self, server: usize) -> Self {
        self.exclude = Some(server);
        self
    }
}

/// One state per algorithm; dispatch is an exhaustive `match`.
#[derive(Debug)]
enum State {
    RoundRobin(roundrobin::RoundRobin),
    StaticRr(static_rr::StaticRr),
    LeastConn(leastconn::LeastConn),
    First(first::First),
    Hash(hash::Hashing),
    Random(random::Random),
}

/// The balancing state of one backend.
#[derive(Debug)]
pub struct Balancer {
    /// `option allbackups`: when no active server is eligible, balance over every eligible
    /// backup instead of using only the first one.
    pub allbackups: bool,
    algorithm: Algorithm,
    hash: HashConfig,
    state: State,
    /// `(generation, len)` the tables were built for.
    built_for: Option<(u64, usize)>,
}

impl Balancer {
    pub fn new(algo: Algorithm, hash: HashConfig) -> Self {
        let state = match algo {
            Algorithm::RoundRobin => State::RoundRobin(roundrobin::RoundRobin::default()),
            Algorithm::StaticRr => State::StaticRr(static_rr::StaticRr::default()),
            Algorithm::LeastConn => State::LeastConn(leastconn::LeastConn::default()),
            Algorithm::First => State::First(first::First),
            Algorithm::Source => State::Hash(hash::Hashing::new(hash::KeyKind::Source, hash)),
            Algorithm::Hash => State::Hash(hash::Hashing::new(hash::KeyKind::Bytes, hash)),
            Algorithm::Random { draws } => State::Random(random::Random::new(draws)),
        };
        Balancer { allbackups: false, algorithm: algo, hash, state, built_for: None }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    pub fn hash_config(&self) -> HashConfig {
        self.hash
    }

    /// Chooses a server for one connection, or `None` when no server is eligible (or, for
    /// `first`, when every candidate is full: the caller queues).
    pub fn pick(&mut self, set: &dyn ServerSet, ctx: &mut Pick) -> Option<usize> {
        let len = set.len();
        if len == 0 {
            return None;
        }
        let now = (set.generation(), len);
        if self.built_for != Some(now) {
            self.rebuild(set);
            self.built_for = Some(now);
        }
        let cand = Candidates::compute(set, self.allbackups, ctx.exclude)?;
        let chosen = match &mut self.state {
            State::RoundRobin(s) => s.pick(set, &cand),
            State::StaticRr(s) => s.pick(set, &cand),
            State::LeastConn(s) => s.pick(set, &cand),
            State::First(s) => s.pick(set, &cand),
            State::Hash(s) => s.pick(set, &cand, ctx.key),
            State::Random(s) => s.pick(set, &cand, ctx.rng),
        };
        if let Some(i) = chosen {
            debug_assert!(cand.allows_ignoring_exclude(set, i));
        }
        chosen
    }

    /// Rebuilds per-generation tables (the only place that allocates).
    fn rebuild(&mut self, set: &dyn ServerSet) {
        match &mut self.state {
            State::RoundRobin(s) => s.rebuild(set),
            State::StaticRr(s) => s.rebuild(set),
            State::LeastConn(s) => s.rebuild(set),
            State::First(_) => {}
            State::Hash(s) => s.rebuild(set),
            State::Random(_) => {}
        }
    }
}
