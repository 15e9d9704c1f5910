//! The clock a worker's log timers read: once per turn of its event loop (HAProxy's `now` and
//! `date`, updated once per polling loop), so the marks a stream collects and the dates of its
//! log line cost no clock read each. Threads without an event loop (start-up, the supervisor)
//! read the system clocks each time. Must not touch: deadlines (timeouts read the clock they
//! need themselves).

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
