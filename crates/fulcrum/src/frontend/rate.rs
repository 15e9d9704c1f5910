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

/// A byte rate over the last second, shared by all worker threads (`maxcomprate`: kilobytes
/// into the compressor), read as HAProxy reads its frequency counters: the current second's
/// count plus the previous second's, weighted by what is left of the current one.
#[derive(Debug)]
pub struct KbRate {
    /// Kilobytes per second allowed (0: no limit).
    max: AtomicU32,
    /// The second (since `origin`) in the high half, its count in the low half: the current
    /// one and the one before it.
    cur: AtomicU64,
    prev: AtomicU64,
    origin: Instant,
}

impl Default for KbRate {
    fn default() -> Self {
        KbRate {
            max: AtomicU32::new(0),
            cur: AtomicU64::new(0),
            prev: AtomicU64::new(0),
            origin: Instant::now(),
        }
    }
}

impl KbRate {
    pub fn set_max(&self, max: u32) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// Counts `kb` kilobytes at `now` (threads racing at a second's turn may lose a few).
    pub fn count(&self, now: Instant, kb: u32) {
        if self.max.load(Ordering::Relaxed) == 0 || kb == 0 {
            return;
        }
        let second = now.saturating_duration_since(self.origin).as_secs();
        let old = self.cur.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            Some(match w >> 32 == second {
                true => (w & !0xffff_ffff) | ((w & 0xffff_ffff) + u64::from(kb)).min(0xffff_ffff),
                false => second << 32 | u64::from(kb),
            })
        });
        if let Ok(w) = old {
            if w >> 32 != second {
                self.prev.store(w, Ordering::Relaxed);
            }
        }
    }

    /// Whether the rate at `now` has reached the limit.
    pub fn reached(&self, now: Instant) -> bool {
        let max = u64::from(self.max.load(Ordering::Relaxed));
        if max == 0 {
            return false;
        }
        let elapsed = now.saturating_duration_since(self.origin);
        let second = elapsed.as_secs();
        let count = |w: u64, s: u64| if w >> 32 == s { w & 0xffff_ffff } else { 0 };
        let (cur, prev) = (self.cur.load(Ordering::Relaxed), self.prev.load(Ordering::Relaxed));
        let previous = count(cur, second.wrapping_sub(1)).max(count(prev, second.wrapping_sub(1)));
        let left = 1_000 - u64::from(elapsed.subsec_millis());
        count(cur, second) * 1_000 + previous * left >= max * 1_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kb_rate_counts_this_second_and_a_share_of_the_last_one() {
        let r = KbRate::default();
        r.set_max(100);
        let at = |ms: u64| r.origin + Duration::from_millis(ms);
        assert!(!r.reached(at(100)));
        r.count(at(100), 60);
        assert!(!r.reached(at(200)));
        r.count(at(300), 40);
        assert!(r.reached(at(400)), "100 kB in this second");
        // Half-way into the next second: half of the last one's 100 still counts.
        assert!(!r.reached(at(1_500)));
        r.count(at(1_500), 50);
        assert!(r.reached(at(1_500)), "50 + 100 x 0.5");
        assert!(!r.reached(at(1_900)), "50 + 100 x 0.1");
        // Two seconds later, nothing.
        assert!(!r.reached(at(3_100)));
        let unlimited = KbRate::default();
        unlimited.count(at(100), 1_000_000);
        assert!(!unlimited.reached(at(100)));
    }

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
