//! Load-balancing algorithms: pure functions of server state, one file per algorithm.
//!
//! The engine owns the servers and their live counters; it shows them to an algorithm through
//! [`ServerSet`] and gets back an index. Nothing here does I/O, reads a clock or locks: the caller
//! serialises calls on one [`Balancer`] (one per backend) and passes randomness and hash keys in,
//! so every property is testable deterministically.

/// What an algorithm may know about a backend's servers. Indices are `0..len()`, in config order.
pub trait ServerSet {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Current effective weight; may change at run time. 0 means "never chosen".
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
}
