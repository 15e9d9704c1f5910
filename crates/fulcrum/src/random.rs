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

/// A random version 4 UUID in its usual text form.
pub fn uuid4() -> Vec<u8> {
    let (a, b) = (u64(), u64());
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut out = Vec::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";
