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

/// Events per second over a sliding second (HAProxy's `freq_ctr`), read from a running total
/// the request path already keeps: once a second a sampler notes the total, and a read adds
/// what happened since to the part of the previous second the window still covers. Counting
/// costs the request path nothing more.
#[derive(Debug, Default)]
pub struct Rate {
    /// The total at the start of the current second.
    start: AtomicU64,
    /// Events during the previous second.
    prev: AtomicU64,
    /// When the current second started (ms since the epoch).
    at_ms: AtomicU64,
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Rate {
    /// Called about once a second with the running total.
    pub fn sample(&self, total: u64) {
        let start = self.start.swap(total, Ordering::Relaxed);
        let fresh = self.at_ms.swap(epoch_ms(), Ordering::Relaxed) == 0;
        self.prev.store(if fresh { 0 } else { total.saturating_sub(start) }, Ordering::Relaxed);
    }

    /// Events in the last second, given the running total now.
    pub fn read(&self, total: u64) -> u64 {
        let at = self.at_ms.load(Ordering::Relaxed);
        let elapsed = epoch_ms().saturating_sub(at).min(1000);
        let curr = total.saturating_sub(self.start.load(Ordering::Relaxed));
        curr + self.prev.load(Ordering::Relaxed) * (1000 - elapsed) / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_counts_since_the_last_sample_and_what_is_left_of_the_second_before() {
        let r = Rate::default();
        r.sample(100);
        assert_eq!(r.read(100), 0, "no past before the first sample");
        r.sample(110);
        let v = r.read(114);
        assert!((4..=14).contains(&v), "{v}");
        r.sample(114);
        assert!(r.read(114) <= 4);
    }
}
