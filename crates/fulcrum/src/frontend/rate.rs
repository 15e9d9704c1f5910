//! A rate limit shared by all worker threads (`maxconnrate`, `maxsessrate`, the runtime API's
//! `set rate-limit sessions global`): events counted per second of the process's clock in one
//! atomic word; while the current second's count has reached the limit, accept loops wait for
//! the next second and connections stay in the kernel's backlog, as HAProxy pauses its
//! listeners.
//!
//! With no limit (0) the accept path reads one relaxed atomic and nothing else.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct RateLimit {
    /// Events per second allowed (0: no limit).
    max: AtomicU32,
    /// The second (since `origin`) in the high half, the events counted in it in the low half.
    window: AtomicU64,
    origin: Instant,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::new(0)
    }
}

impl RateLimit {
    pub fn new(max: u32) -> Self {
        RateLimit { max: AtomicU32::new(max), window: AtomicU64::new(0), origin: Instant::now() }
    }

    pub fn max(&self) -> u32 {
        self.max.load(Ordering::Relaxed)
    }

    pub fn set_max(&self, max: u32) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// How long to wait before the next event may happen at `now` (`None`: it may now).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let max = self.max();
        if max == 0 {
            return None;
        }
        let elapsed = now.saturating_duration_since(self.origin);
        let second = elapsed.as_secs();
        let w = self.window.load(Ordering::Relaxed);
        if w >> 32 != second || (w & 0xffff_ffff) < u64::from(max) {
            return None;
        }
        Some(Duration::from_secs(second + 1).saturating_sub(elapsed).max(Duration::from_millis(1)))
    }

    /// Counts an event that happened at `now` (a few may pass the limit when threads race).
    pub fn count(&self, now: Instant) {
        if self.max() == 0 {
            return;
        }
        let second = now.saturating_duration_since(self.origin).as_secs();
        let _ = self.window.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            Some(if w >> 32 == second { w + 1 } else { second << 32 | 1 })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_within_a_second_and_the_next_second_starts_over() {
        let r = RateLimit::new(3);
        let t0 = r.origin + Duration::from_millis(200);
        for _ in 0..3 {
            assert_eq!(r.wait(t0), None);
            r.count(t0);
        }
        let wait = r.wait(t0).expect("limit reached");
        assert_eq!(wait, Duration::from_millis(800), "until the next second");
        let t1 = r.origin + Duration::from_millis(1000);
        assert_eq!(r.wait(t1), None, "a new second");
        r.count(t1);
        assert_eq!(r.wait(t1), None);
        r.set_max(0);
        assert_eq!(r.wait(t0), None, "no limit");
    }
}
