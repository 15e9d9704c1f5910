//! A rate limit shared by all worker threads (`maxconnrate`, `maxsessrate`, the runtime API's
//! `set rate-limit sessions global`): events counted per second of the process's clock in one
//! atomic word; while the current second's count has reached the limit, accept loops wait for
//! the next second and connections stay in the kernel's backlog, as HAProxy pauses its
//! listeners.
//!
//! With no limit (0) the accept path reads one relaxed atomic and nothing else.
//!
//! Also compression's rates ([`CompRate`]: `maxcomprate`, `maxcompcpuusage`), read as
//! HAProxy reads its frequency counters.

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

/// A count per second shared by all worker threads, read as HAProxy reads its frequency
/// counters: the current second's count plus the previous second's, weighted by what is left
/// of the current one. Each word holds the second (since the owner's origin) in its high
/// half and the count in its low half (saturating).
#[derive(Debug, Default)]
struct PerSecond {
    cur: AtomicU64,
    prev: AtomicU64,
}

impl PerSecond {
    /// Counts `n` in `second` (threads racing at a second's turn may lose a few).
    fn count(&self, second: u64, n: u64) {
        let old = self.cur.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            Some(match w >> 32 == second {
                true => (w & !0xffff_ffff) | ((w & 0xffff_ffff) + n).min(0xffff_ffff),
                false => second << 32 | n.min(0xffff_ffff),
            })
        });
        if let Ok(w) = old {
            if w >> 32 != second {
                self.prev.store(w, Ordering::Relaxed);
            }
        }
    }

    /// The rate in `second`, `left` milliseconds of it still to come.
    fn read(&self, second: u64, left: u64) -> u64 {
        let count = |w: u64, s: u64| if w >> 32 == s { w & 0xffff_ffff } else { 0 };
        let (cur, prev) = (self.cur.load(Ordering::Relaxed), self.prev.load(Ordering::Relaxed));
        let previous = count(cur, second.wrapping_sub(1)).max(count(prev, second.wrapping_sub(1)));
        count(cur, second) + previous * left / 1_000
    }
}

/// Compression's limits, shared by all worker threads across reloads: `maxcomprate`
/// (HAProxy's `comp_rate_lim`, in bytes per second) compared with the bytes into the
/// compressors (`comp_bps_in`: a response begins plain while it is over) and out of them
/// (`comp_bps_out`: responses under way lower their level while it is over), and
/// `maxcompcpuusage` (HAProxy's `compress_min_idle`: the same, while this worker's idle share
/// of the last second is under it).
#[derive(Debug)]
pub struct CompRate {
    max: AtomicU64,
    min_idle: AtomicU32,
    bps_in: PerSecond,
    bps_out: PerSecond,
    origin: Instant,
}

impl Default for CompRate {
    fn default() -> Self {
        CompRate {
            max: AtomicU64::new(0),
            min_idle: AtomicU32::new(0),
            bps_in: PerSecond::default(),
            bps_out: PerSecond::default(),
            origin: Instant::now(),
        }
    }
}

impl CompRate {
    /// `maxcomprate` in kilobytes per second (0: none) and `compress_min_idle` (0 to 100).
    pub fn set(&self, max_kb: u32, min_idle: u8) {
        self.max.store(u64::from(max_kb) * 1024, Ordering::Relaxed);
        self.min_idle.store(u32::from(min_idle.min(100)), Ordering::Relaxed);
    }

    /// `set rate-limit http-compression global`: a new `maxcomprate` in kilobytes per second.
    pub fn set_max(&self, max_kb: u32) {
        self.max.store(u64::from(max_kb) * 1024, Ordering::Relaxed);
    }

    /// The limit in bytes per second (`show info`'s `CompressBpsRateLim`).
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    fn at(&self, now: Instant) -> (u64, u64) {
        let elapsed = now.saturating_duration_since(self.origin);
        (elapsed.as_secs(), 1_000 - u64::from(elapsed.subsec_millis()))
    }

    /// A compressed block: `bytes_in` into the compressor, `bytes_out` out of it.
    pub fn count(&self, now: Instant, bytes_in: u64, bytes_out: u64) {
        let (second, _) = self.at(now);
        self.bps_in.count(second, bytes_in);
        self.bps_out.count(second, bytes_out);
    }

    /// Bytes per second into and out of the compressors (`CompressBpsIn`, `CompressBpsOut`).
    pub fn rates(&self, now: Instant) -> (u64, u64) {
        let (second, left) = self.at(now);
        (self.bps_in.read(second, left), self.bps_out.read(second, left))
    }

    fn idle_short(&self) -> bool {
        let min = self.min_idle.load(Ordering::Relaxed);
        min > 0 && u32::from(crate::clock::idle_pct()) < min
    }

    /// Whether a response beginning now stays plain (HAProxy's
    /// `select_compression_response_header()`).
    pub fn begins_plain(&self, now: Instant) -> bool {
        let max = self.max();
        (max > 0 && self.rates(now).0 > max) || self.idle_short()
    }

    /// Whether the compressions under way lower their level (HAProxy's
    /// `deflate_flush_or_finish()`).
    pub fn pressed(&self, now: Instant) -> bool {
        let max = self.max();
        (max > 0 && self.rates(now).1 > max) || self.idle_short()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_rates_count_this_second_and_a_share_of_the_last_one() {
        let r = CompRate::default();
        r.set(100, 0);
        let at = |ms: u64| r.origin + Duration::from_millis(ms);
        assert!(!r.begins_plain(at(100)) && !r.pressed(at(100)));
        r.count(at(100), 60 * 1024, 10);
        assert!(!r.begins_plain(at(200)));
        r.count(at(300), 40 * 1024 + 1, 102_390);
        assert!(r.begins_plain(at(400)), "over 100 kB in this second");
        assert!(!r.pressed(at(400)), "102,400 bytes out, not over 102,400");
        r.count(at(400), 0, 1);
        assert!(r.pressed(at(400)));
        // Half-way into the next second: half of the last one's still counts.
        assert!(!r.begins_plain(at(1_500)));
        r.count(at(1_500), 50 * 1024 + 1, 0);
        assert!(r.begins_plain(at(1_500)), "50k + 100k x 0.5");
        assert!(!r.begins_plain(at(1_900)), "50k + 100k x 0.1");
        assert_eq!(r.rates(at(3_100)), (0, 0), "two seconds later, nothing");
        let unlimited = CompRate::default();
        unlimited.count(at(100), 1 << 30, 1 << 30);
        assert!(!unlimited.begins_plain(at(100)) && !unlimited.pressed(at(100)));
        assert_eq!(unlimited.rates(at(100)), (1 << 30, 1 << 30), "counted all the same");
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
