//! Each worker's random number generator: the balancers' picks (`random`, power of two
//! choices), the `rand()` fetch and UUIDs. Seeded per worker from the clock (a `worker` slot); not for secrets.
//!
//! Must not touch: anything else.

use fulcrum_balance::Rng;

use crate::worker::{Id, Slot};

static RNG: Slot<std::cell::RefCell<Rng>> =
    Slot::new(Id::Random, || std::cell::RefCell::new(Rng::new(seed())));

/// A random number from this worker's generator (`rand()` fetch).
pub fn u64() -> u64 {
    RNG.with(|r| r.borrow_mut().next_u64())
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let here = &t as *const u64 as u64;
    t ^ here.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15
}

/// Runs `f` with this worker's generator.
pub fn with<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    RNG.with(|r| f(&mut r.borrow_mut()))
}
