//! A session's per-request memory while its connection idles: the heads and output buffer
//! parked with the worker's spares (`Session::park`) and taken back warm as the next request
//! arrives (`Session::unpark`); HTTP/2 streams' tasks keep one between streams.
//!
//! Owns: the worker's spares. Must not touch: what the heads hold.

use fulcrum_http::Head;

use super::Session;
use crate::worker::{Id, Slot};

/// Per-request memory of a session parked while it idles (see `Session::park`). Boxed: it
/// goes between sessions, tasks and the worker's list as a pointer, the heads swapped in and
/// out of it (moving the heads themselves cost six `memcpy` calls per HTTP/2 stream).
#[derive(Default)]
pub struct Spare {
    req: Head,
    resp: Head,
    out: Vec<u8>,
}

// Boxed on purpose: a spare moves as a pointer (see `Spare`).
#[allow(clippy::vec_box)]
static SPARES: Slot<std::cell::RefCell<Vec<Box<Spare>>>> =
    Slot::new(Id::Spares, || std::cell::RefCell::new(Vec::new()));

/// Spares kept per worker; beyond this, a parked session's memory is freed.
const SPARES_MAX: usize = 128;

/// Takes one of the worker's spares: an HTTP/2 stream's task keeps one while it waits for its
/// next stream ([`give_spare`] before it), so the spares follow the streams in flight (a
/// thousand streams come and go in bursts of a hundred: most found no spare within
/// [`SPARES_MAX`] and allocated their heads).
pub fn take_spare() -> Option<Box<Spare>> {
    SPARES.with(|s| s.borrow_mut().pop())
}

/// Gives a spare back to the worker, for the next session that starts (see [`take_spare`]).
pub fn give_spare(spare: Box<Spare>) {
    SPARES.with(|s| s.borrow_mut().push(spare));
}

/// The room a session's heads get when no spare is left: most heads fit.
const FRESH_HEAD_BYTES: usize = 512;
const FRESH_HEAD_FIELDS: usize = 16;

impl Session<'_> {
    /// Going idle between requests: the heads and the output buffer (warm, with their capacity)
    /// go to the worker's spares, so an idle connection keeps no per-request memory.
    pub(super) fn park(&mut self) {
        if self.parked || !self.cbuf.is_empty() {
            return;
        }
        let mut spare = self.emptied.take().unwrap_or_default();
        // Only the heads' buffers move (whole heads are large: their copies cost more).
        self.t.req.swap_buffers(&mut spare.req);
        self.t.resp.swap_buffers(&mut spare.resp);
        std::mem::swap(&mut self.out, &mut spare.out);
        SPARES.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARES_MAX {
                s.push(spare);
            }
        });
        self.parked = true;
    }

    /// A request is arriving: take warm heads back from the worker's spares.
    #[inline(always)]
    pub(super) fn unpark(&mut self) {
        if !self.parked {
            return;
        }
        self.parked = false;
        if let Some(mut spare) = SPARES.with(|s| s.borrow_mut().pop()) {
            self.t.req.swap_buffers(&mut spare.req);
            self.t.resp.swap_buffers(&mut spare.resp);
            std::mem::swap(&mut self.out, &mut spare.out);
            self.emptied = Some(spare);
        } else {
            // Sized for a usual head at once (HTTP/2 streams, many at a time, often find no
            // spare: growing from nothing cost a dozen reallocations per stream).
            self.t.req = Head::with_capacity(FRESH_HEAD_BYTES, FRESH_HEAD_FIELDS);
            self.t.resp = Head::with_capacity(FRESH_HEAD_BYTES, FRESH_HEAD_FIELDS);
            self.out = Vec::with_capacity(FRESH_HEAD_BYTES);
        }
        // A head parked mid-parse (a request that never completed) belongs to other bytes.
        self.t.req.start_over();
        self.t.resp.start_over();
    }
}
