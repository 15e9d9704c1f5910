//! Which server each live session of a worker holds a connection slot on, written by the
//! worker without a lock as slots are taken and given back (`note_server`), read by the session
//! table (`runtime::sessions`: `show sess`, `shutdown sessions server`).
//!
//! Must not touch: the session table itself, selection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::worker::{Id, Slot};

/// The server each session of a worker is using, by table slot (0: none; else the backend's
/// id in the high half, the server's index + 1 in the low half), in chunks that never move:
/// the worker writes them without a lock, readers find them under the table's lock.
pub type Chunk = [AtomicU64; CHUNK];
pub const CHUNK: usize = 256;

pub fn server_word(s: Option<(u32, usize)>) -> u64 {
    s.map_or(0, |(b, i)| u64::from(b) << 32 | (i as u64 + 1))
}

/// This worker's server chunks (its own copy of the list its session table holds).
static CHUNKS: Slot<std::cell::RefCell<Vec<Arc<Chunk>>>> =
    Slot::new(Id::ServerChunks, || std::cell::RefCell::new(Vec::new()));
/// The session whose task this worker is polling (`u32::MAX`: none).
static CURRENT: Slot<std::cell::Cell<u32>> =
    Slot::new(Id::ServerCurrent, || std::cell::Cell::new(u32::MAX));

/// The worker polls the task of the session in `slot` (`u32::MAX`: a task of no session).
#[inline]
pub fn enter(slot: u32) {
    CURRENT.set(slot);
}

/// The session being polled took a connection slot on server `idx` of backend `backend_id`
/// (`None`: gave it back): one relaxed store, no lock.
#[inline]
pub fn note_server(server: Option<(u32, usize)>) {
    let slot = CURRENT.get() as usize;
    if slot == u32::MAX as usize {
        return;
    }
    CHUNKS.with(|c| {
        if let Some(chunk) = c.borrow().get(slot / CHUNK) {
            chunk[slot % CHUNK].store(server_word(server), Ordering::Relaxed);
        }
    });
}

/// A new chunk of server words, added to this worker's own list; the session table keeps it.
pub fn add_chunk() -> Arc<Chunk> {
    let chunk: Arc<Chunk> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    CHUNKS.with(|c| c.borrow_mut().push(Arc::clone(&chunk)));
    chunk
}
