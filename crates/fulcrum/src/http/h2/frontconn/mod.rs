//! One HTTP/2 connection from a client (RFC 9113, server side): frames, streams, flow control,
//! without the `h2` crate, as [`super::backconn`] is for servers (what both do alike is in
//! [`super::conn`]). The connection's task reads and handles frames and writes what the
//! streams queued; each new stream is handed to a task of the worker ([`super::tasks`]) whose
//! view ([`super::view::H1View`]) reaches the connection's state through the worker's registry
//! and borrows it in turn with the connection's task. A stream's frames go into the
//! connection's output as its view sends them, and the task writes all of them in one `send`
//! per turn.
//!
//! Why by hand: the `h2` crate's server side took about 7,000 instructions per request (its
//! stream store behind a mutex, stream references counted, frames moved through queues), a
//! quarter of a request's cost. Header blocks are decoded by `fulcrum_h2::hpack::load` and
//! encoded by [`super::hpack`].
//!
//! What it does: the preface, then SETTINGS both ways, then the connection's window opened
//! wide (HAProxy's order); WINDOW_UPDATE once half a window was read; CONTINUATION bounded;
//! padding and PRIORITY checked, a request's pseudo-fields (RFC 9113 8.3.1, RFC 8441) and
//! `content-length` against DATA; 431 past `max_header_list_size`; GOAWAY on soft stop, reload
//! and idle timeout (`timeout http-keep-alive`, else `timeout client`; `http::h2::serve` says
//! when); the bodies of answered streams read to their end; rapid resets bounded
//! (ENHANCE_YOUR_CALM); nothing read while its output is backed up; no buffer while idle.
//!
//! Owns: the connection's frames, its streams' states and windows, the limits against abusive
//! clients (rapid resets, floods, header blocks without end). Must not touch: what the heads
//! and bodies mean (the view's), the transaction.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use fulcrum_h2::RawHead;

mod recv;

use super::conn::{self, ConnError, Inner, Registry, Side};
use super::frames::*;
pub use super::frames::{CANCEL, INTERNAL_ERROR, NO_ERROR};
use crate::worker::{Id, Slot};

/// Streams a client reset before their answer began, beyond which (and beyond twice those
/// answered) the connection ends: a rapid reset flood (CVE-2023-44487).
const EARLY_RESETS: u32 = 1000;
/// Streams the connection remembers it reset, so that frames the client sent meanwhile are
/// ignored rather than taken for frames on a closed stream.
const RESET_MEMORY: usize = 128;

pub type Conn = conn::Conn<Front>;
pub type Key = conn::Key<Front>;

/// What only a client's stream keeps.
#[derive(Default)]
pub struct Part {
    /// The request's head, until the view takes it.
    pub request: Option<RawHead>,
    /// The final response's HEADERS went out.
    answered: bool,
    /// The client reset it: any frame of it but PRIORITY is a connection error.
    peer_reset: bool,
}

/// What only the server side of a connection keeps.
pub struct Front {
    /// The highest stream id the client opened.
    last_id: u32,
    /// Streams opened and not yet handed to a task.
    opened: Vec<u32>,
    /// Streams the client may have open at once (ours, `tune.h2.max-concurrent-streams`).
    max_streams: usize,
    /// GOAWAY sent: streams above this id are ignored, the connection ends once the others did.
    goaway: Option<u32>,
    max_list: usize,
    /// The client preface is still to come (its bytes matched so far).
    preface: usize,
    /// `rbuf` holds bytes not handled yet (read before the connection's task started).
    fresh: bool,
    /// Streams reset before their answer began, and streams answered.
    early_resets: u32,
    answered: u32,
    /// Streams this side reset lately (frames for them are ignored).
    reset_ids: VecDeque<u32>,
    /// Streams whose view ended before they closed (forgotten once closed).
    lingering: Vec<u32>,
}

static REGISTRY: Slot<RefCell<Registry<Front>>> =
    Slot::new(Id::H2Front, || RefCell::new(Registry::new()));

impl Side for Front {
    type Part = Part;

    fn registry() -> &'static Slot<RefCell<Registry<Front>>> {
        &REGISTRY
    }

    fn reset_sent(&mut self, id: u32) {
        if self.reset_ids.len() >= RESET_MEMORY {
            self.reset_ids.pop_front();
        }
        self.reset_ids.push_back(id);
    }
}

/// Runs `f` on the connection `key` names, if it is still this worker's.
pub fn with<R>(key: Key, f: impl FnOnce(&Conn) -> R) -> Option<R> {
    conn::with(key, f)
}

/// What the connection's task learns from a turn.
pub enum Event {
    /// Streams opened: their ids are in the list given.
    Streams,
    /// The connection ended.
    Ended,
}

impl Conn {
    /// A new connection's state, our SETTINGS queued, `prefix` (bytes read already) first in
    /// what is read; in this worker's registry until its task ends.
    /// `counters`: the frontend's (its `h2` statistics module).
    pub fn new(
        tune: &fulcrum_config::TuneH2,
        max_list: usize,
        prefix: &[u8],
        counters: std::sync::Arc<crate::counters::Counters>,
    ) -> Rc<Conn> {
        let (window, max_frame) = (conn::our_window(tune), conn::our_max_frame(tune));
        let mut settings: Vec<(u16, u32)> = Vec::with_capacity(6);
        if tune.header_table_size != 4096 {
            settings.push((1, tune.header_table_size));
        }
        settings.push((3, tune.max_concurrent_streams));
        settings.push((4, window as u32));
        if max_frame != 16_384 {
            settings.push((5, max_frame as u32));
        }
        settings.push((6, max_list as u32));
        if !tune.no_websocket {
            settings.push((8, 1));
        }
        let side = Front {
            last_id: 0,
            opened: Vec::new(),
            max_streams: tune.max_concurrent_streams as usize,
            goaway: None,
            max_list,
            preface: 0,
            fresh: !prefix.is_empty(),
            early_resets: 0,
            answered: 0,
            reset_ids: VecDeque::new(),
            lingering: Vec::new(),
        };
        let first = (Vec::with_capacity(64), prefix.to_vec());
        let mut inner = Inner::new(side, tune, first, Some(counters));
        inner.wire.settings(&settings);
        Conn::register(inner)
    }

    /// Whether streams are open (or still being read to their end).
    pub fn has_streams(&self) -> bool {
        !self.inner.borrow().streams.is_empty()
    }

    /// Gives back the memory an idle connection kept for its busy times: a large stream
    /// store (kept while streams come and go in bursts) and its output buffer.
    pub fn trim(&self) {
        let mut i = self.inner.borrow_mut();
        if i.streams.is_empty() && i.streams.capacity() > 0 {
            i.streams = conn::StreamMap::default();
        }
        if i.wire.out.is_empty() && i.wire.out.capacity() > 0 {
            i.wire.out = Vec::new();
        }
    }

    /// Sends GOAWAY (NO_ERROR): streams opened after it are ignored, and the connection ends
    /// once those before it did.
    pub fn goaway(&self) {
        let mut i = self.inner.borrow_mut();
        if i.side.goaway.is_none() && !i.dead {
            let last = i.side.last_id;
            i.side.goaway = Some(last);
            i.wire.goaway(last, NO_ERROR);
            i.wire.wake_driver();
        }
    }

    /// Sends a response head (a header block): an interim one, or the final one, which ends
    /// the stream if `end`.
    pub fn send_head(&self, id: u32, block: &[u8], final_head: bool, end: bool) -> io::Result<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let st = i.streams.get_mut(&id).ok_or(io::ErrorKind::BrokenPipe)?;
        if st.reset.is_some() || st.local_end || i.dead {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        i.wire.head(id, block, end);
        if final_head {
            st.part.answered = true;
            i.side.answered += 1;
        }
        if end {
            st.local_end = true;
        }
        i.wire.wake_driver();
        Ok(())
    }

    /// A view ends. Its stream is forgotten once closed; one whose answer went whole while
    /// the client still sends its request is read to its end (HAProxy does so: the frames are
    /// still checked, the window keeps opening); any other is reset (CANCEL).
    pub fn detach(&self, id: u32) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let Some(st) = i.streams.get_mut(&id) else { return };
        // (A body that ended but waits for the window goes out still.)
        if !st.local_end && !st.pending_end && st.reset.is_none() {
            i.wire.rst(st, CANCEL);
            i.side.reset_sent(id);
        }
        if st.closed() {
            i.streams.forget(&id);
        } else {
            st.detached = true;
            i.side.lingering.push(id);
            // What the view did not read opens the window again.
            let n = std::mem::take(&mut st.unacked) + st.data.len() as u32;
            st.data = Vec::new();
            if n > 0 {
                st.recv_window += i64::from(n);
                i.wire.window_update(id, n);
            }
        }
        i.wire.wake_driver();
    }

    /// Runs the connection for a turn: reads and handles frames, writes what is queued.
    /// `Ready(Streams)` with the ids of new streams in `opened`; `Ready(Ended)` once the
    /// connection is over (it then left the registry).
    pub(super) fn poll_drive(
        &self,
        cx: &mut Context<'_>,
        io: &mut super::Io,
        opened: &mut Vec<u32>,
    ) -> Poll<Event> {
        let r = self.drive_once(cx, io, opened);
        if let Poll::Ready(Event::Ended) = r {
            self.unregister();
        }
        r
    }

    fn drive_once(
        &self,
        cx: &mut Context<'_>,
        io: &mut super::Io,
        opened: &mut Vec<u32>,
    ) -> Poll<Event> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        loop {
            let mut again = false;
            if i.may_read() {
                // Bytes read before (the preface's first line) are handled first.
                let r = if std::mem::take(&mut i.side.fresh) {
                    Poll::Ready(Ok(i.rend - i.rpos))
                } else {
                    i.read(cx, io)
                };
                match r {
                    Poll::Ready(Ok(0)) => fail(i),
                    Poll::Ready(Ok(_)) => {
                        again = true;
                        if let Err(ConnError(code)) = i.on_frames() {
                            let last = i.side.last_id;
                            i.wire.goaway(last, code);
                            fail(i);
                        }
                    }
                    Poll::Ready(Err(_)) => fail(i),
                    Poll::Pending => {}
                }
            }
            // Streams whose view ended and whose last bytes went out are forgotten.
            if !i.side.lingering.is_empty() {
                let streams = &mut i.streams;
                i.side.lingering.retain(|id| match streams.get(id) {
                    Some(st) if st.closed() => {
                        streams.forget(id);
                        false
                    }
                    Some(_) => true,
                    None => false,
                });
            }
            if i.side.goaway.is_some() && i.streams.is_empty() && !i.dead {
                fail(i); // the last stream after GOAWAY ended
            }
            match i.write(cx, io) {
                Err(()) => {
                    fail(i);
                    return Poll::Ready(Event::Ended);
                }
                Ok(false) => break,
                Ok(true) => {}
            }
            if i.dead {
                if i.written() {
                    return Poll::Ready(Event::Ended);
                }
                break;
            }
            if !i.side.opened.is_empty() {
                // New streams, not reset meanwhile, go to their tasks.
                let streams = &i.streams;
                opened.extend(
                    i.side
                        .opened
                        .drain(..)
                        .filter(|id| streams.get(id).is_some_and(|s| s.reset.is_none())),
                );
                if !opened.is_empty() {
                    return Poll::Ready(Event::Streams);
                }
            }
            if i.streams.is_empty() && i.rpos == i.rend && i.block.is_none() {
                // An idle connection holds no buffer, and no stream store unless a large one
                // (streams come and go in bursts on a busy connection: `trim` frees it after a
                // second). Memory freed at once is what the next connection takes; freed
                // later, it leaves holes among the connections' memory.
                i.free_read_buffer();
                // (A large store keeps its spare body buffers too, for the next burst.)
                if i.streams.capacity() > 0 && i.streams.capacity() <= conn::SMALL_STORE {
                    i.streams = conn::StreamMap::default();
                }
                i.block_buf = BytesMut::new();
            }
            if !again {
                break;
            }
        }
        i.park(cx);
        Poll::Pending
    }
}

/// The connection failed or ended: every stream fails.
fn fail(i: &mut Inner<Front>) {
    i.fail_streams();
    i.side.opened.clear();
}
