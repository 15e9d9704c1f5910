//! Traffic counters kept per frontend, backend and server, read by `-d` output today and by the
//! stats page later. Relaxed atomics: they count, they never synchronise anything.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Counters {
    /// Sessions (connections) handled in total.
    pub sessions: AtomicU64,
    /// Bytes received from clients.
    pub bytes_in: AtomicU64,
    /// Bytes sent to clients.
    pub bytes_out: AtomicU64,
    /// Failed connection attempts to servers.
    pub connect_errors: AtomicU64,
    /// Connection attempts retried.
    pub retries: AtomicU64,
    /// Retries sent to another server (`option redispatch`).
    pub redispatches: AtomicU64,
    /// Sessions closed because `timeout queue` expired.
    pub queue_timeouts: AtomicU64,
    /// Sessions that found no usable server.
    pub no_server: AtomicU64,
    /// HTTP responses that were invalid or truncated (answered 502).
    pub failed_responses: AtomicU64,
}

impl Counters {
    pub fn add(field: &AtomicU64, n: u64) {
        field.fetch_add(n, Ordering::Relaxed);
    }
    pub fn inc(field: &AtomicU64) {
        field.fetch_add(1, Ordering::Relaxed);
    }
}
