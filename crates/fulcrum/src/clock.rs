//! The clock a worker's log timers read: once per turn of its event loop (HAProxy's `now` and
//! `date`, updated once per polling loop), so the marks a stream collects and the dates of its
//! log line cost no clock read each. Threads without an event loop (start-up, the supervisor)
//! read the system clocks each time. Also each worker's idle share of the last second
//! (HAProxy's `idle_pct`: what `maxcompcpuusage` and `show info` read), from its thread's CPU
//! time. Must not touch: deadlines (timeouts read the clock they need themselves).

use std::cell::Cell;
use std::time::SystemTime;

use tokio::time::Instant;

use crate::worker::{Id, Slot};

static NOW: Slot<Cell<Option<(Instant, SystemTime)>>> = Slot::new(Id::Clock, || Cell::new(None));

/// A new turn of this worker's event loop begins: reads both clocks.
pub fn tick() {
    NOW.set(Some((Instant::now(), SystemTime::now())));
}

/// This thread stops turning (its clock reads go back to the system's).
pub fn stop() {
    NOW.set(None);
}

/// A worker's last CPU-time sample and the idle share it gave.
#[derive(Clone, Copy)]
struct Idle {
    cpu_ns: u64,
    at: std::time::Instant,
    /// Percent of the time since the sample before spent waiting; `None` before a second sample.
    pct: Option<u8>,
}

static IDLE: Slot<Cell<Option<Idle>>> = Slot::new(Id::Idle, || Cell::new(None));

/// The sum and count of the workers' idle shares (`show info`'s `Idle_pct`, their mean).
static IDLE_SUM: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static IDLE_WORKERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Samples this worker's CPU time (each worker calls it about once a second): its idle share
/// since the last sample is what the CPU time did not use of the time gone by.
pub fn sample_idle() {
    use std::sync::atomic::Ordering::Relaxed;
    let (cpu_ns, at) = (crate::sys::thread_cpu_ns(), std::time::Instant::now());
    let last = IDLE.get();
    let pct = last.map(|l| {
        let wall = at.duration_since(l.at).as_nanos().max(1) as u64;
        let busy = cpu_ns.saturating_sub(l.cpu_ns).min(wall);
        (100 - busy * 100 / wall) as u8
    });
    match (last.and_then(|l| l.pct), pct) {
        (None, Some(p)) => {
            IDLE_WORKERS.fetch_add(1, Relaxed);
            IDLE_SUM.fetch_add(u32::from(p), Relaxed);
        }
        (Some(old), Some(p)) => {
            IDLE_SUM.fetch_add(u32::from(p), Relaxed);
            IDLE_SUM.fetch_sub(u32::from(old), Relaxed);
        }
        _ => {}
    }
    IDLE.set(Some(Idle { cpu_ns, at, pct }));
}

/// This worker's idle share of the last second, in percent (100 until measured).
pub fn idle_pct() -> u8 {
    IDLE.get().and_then(|i| i.pct).unwrap_or(100)
}

/// The workers' mean idle share (100 until measured).
pub fn process_idle_pct() -> u32 {
    use std::sync::atomic::Ordering::Relaxed;
    match IDLE_WORKERS.load(Relaxed) {
        0 => 100,
        n => IDLE_SUM.load(Relaxed) / n,
    }
}

/// The monotonic time of this turn.
pub fn now() -> Instant {
    NOW.get().map_or_else(Instant::now, |n| n.0)
}

/// The wall-clock time of this turn.
pub fn wall() -> SystemTime {
    NOW.get().map_or_else(SystemTime::now, |n| n.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_the_clocks_once_and_a_thread_without_turns_reads_them_each_time() {
        tick();
        let (a, w) = (now(), wall());
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!((now(), wall()), (a, w));
        tick();
        assert!(now() > a && wall() > w);
        stop();
        let b = now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(now() > b);
    }
}
