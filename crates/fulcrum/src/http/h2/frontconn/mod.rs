//! One HTTP/2 connection from a client (RFC 9113, server side): frames, streams, flow control,
//! without the `h2` crate, as [`super::backconn`] is for servers. The connection's task reads
//! and handles frames and writes what the streams queued; each new stream is handed to a task
//! of the worker ([`super::tasks`]) whose view ([`super::view::H1View`]) reaches the
//! connection's state through the worker's registry (by key: a `Stream` must be `Send`) and
//! borrows it in turn with the connection's task: no lock, no stream handle counted across
//! threads, no frame queue per stream. A stream's frames go into the connection's output as
//! its view sends them, and the task writes all of them in one `send` per turn.
//!
//! Why by hand: the `h2` crate's server side took about 7,000 instructions per request (its
//! stream store behind a mutex, stream references counted, frames moved through queues), a
//! quarter of a request's cost. Header blocks are still decoded by the vendored crate's HPACK
//! decoder (`h2::raw::load`) and encoded by [`super::hpack`].
//!
//! Owns: the connection's frames, its streams' states and windows, the limits against abusive
//! clients (rapid resets, floods, header blocks without end). Must not touch: what the heads
//! and bodies mean (the view's), the transaction.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use h2::raw::{RawDecoder, RawHead};
use tokio::io::{AsyncRead, AsyncWrite};

mod recv;

use super::frames::*;
pub use super::frames::{CANCEL, NO_ERROR};

/// RST_STREAM and GOAWAY codes only the server side sends.
pub const INTERNAL_ERROR: u32 = 2;
const ENHANCE_YOUR_CALM: u32 = 11;

/// Streams a client reset before their answer began, beyond which (and beyond twice those
/// answered) the connection ends: a rapid reset flood (CVE-2023-44487).
const EARLY_RESETS: u32 = 1000;
/// Streams the connection remembers it reset, so that frames the client sent meanwhile are
/// ignored rather than taken for frames on a closed stream.
const RESET_MEMORY: usize = 128;

type StreamMap = HashMap<u32, Strm, BuildHasherDefault<IdHash>>;

/// One stream: what the client sent that the view has not read, and what the view sent that
/// the windows held back.
#[derive(Default)]
pub struct Strm {
    pub id: u32,
    /// The request's head, until the view takes it.
    pub request: Option<RawHead>,
    /// Trailers, once the request ended with them.
    pub trailers: Option<RawHead>,
    /// Body bytes received and not read yet.
    pub data: Vec<u8>,
    /// The client ended its side (END_STREAM).
    pub recv_end: bool,
    /// The stream ended abnormally (RST_STREAM either way, the connection failed): the code.
    pub reset: Option<u32>,
    cl_left: Option<u64>,
    recv_window: i64,
    unacked: u32,
    reader: Option<Waker>,
    /// Waits for the client to reset the stream (`peer_closed`).
    closer: Option<Waker>,
    send_window: i64,
    pending: Vec<u8>,
    pending_end: bool,
    trailers_out: Option<Vec<u8>>,
    /// END_STREAM (or RST_STREAM) was sent.
    local_end: bool,
    /// The final response's HEADERS went out.
    answered: bool,
    blocked: bool,
    writer: Option<Waker>,
    /// The view ended: what the client still sends is read and dropped.
    detached: bool,
    /// The client reset it: any frame of it but PRIORITY is a connection error.
    peer_reset: bool,
}

impl Strm {
    fn closed(&self) -> bool {
        self.reset.is_some() || (self.local_end && self.recv_end)
    }

    fn wake(&mut self) {
        for w in [self.reader.take(), self.writer.take(), self.closer.take()].into_iter().flatten()
        {
            w.wake();
        }
    }

    /// Ready when the view may read something: bytes, the end or a failure.
    pub fn poll_readable(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.data.is_empty() || self.recv_end || self.reset.is_some() {
            return Poll::Ready(());
        }
        self.reader = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ready once the client reset the stream.
    pub fn poll_reset(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.reset.is_some() {
            return Poll::Ready(());
        }
        self.closer = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// What the client said in its SETTINGS.
struct Peer {
    window: i64,
    max_frame: usize,
}

struct Block {
    id: u32,
    end_stream: bool,
}

/// The connection's side of the frames: what goes out, its windows.
struct Wire {
    out: Vec<u8>,
    sent: usize,
    driver: Option<Waker>,
    peer: Peer,
    send_window: i64,
    blocked: VecDeque<u32>,
    /// A dynamic table size update owed at the start of the next block.
    owe_table_update: bool,
}

/// What the connection's task learns from a turn.
pub enum Event {
    /// Streams opened: their ids are in the list given.
    Streams,
    /// The connection ended.
    Ended,
}

struct Inner {
    wire: Wire,
    streams: StreamMap,
    /// The highest stream id the client opened.
    last_id: u32,
    /// Streams opened and not yet handed to a task.
    opened: Vec<u32>,
    /// Streams the client may have open at once (ours, `tune.h2.max-concurrent-streams`).
    max_streams: usize,
    /// GOAWAY sent: streams above this id are ignored, the connection ends once the others did.
    goaway: Option<u32>,
    dead: bool,
    /// Our SETTINGS, their acknowledgement; the connection's window opened.
    our_window: i64,
    acked: bool,
    window_opened: bool,
    our_max_frame: usize,
    max_list: usize,
    /// What the client may still send on the connection before our next WINDOW_UPDATE, and
    /// bytes received since the last.
    conn_recv_window: i64,
    conn_unacked: i64,
    /// The client preface is still to come (its bytes matched so far).
    preface: usize,
    /// `rbuf` holds bytes not handled yet (read before the connection's task started).
    fresh: bool,
    /// Streams reset before their answer began, and streams answered.
    early_resets: u32,
    answered: u32,
    /// Streams this side reset lately (frames for them are ignored).
    reset_ids: VecDeque<u32>,
    out_waiters: Vec<Waker>,
    decoder: RawDecoder,
    block: Option<Block>,
    block_buf: BytesMut,
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
}

/// A connection's state, shared by its task and its streams' views.
pub struct Conn {
    inner: RefCell<Inner>,
    key: Key,
}

/// Where a connection is in its worker's registry (see [`with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    slot: u32,
    gen: u32,
}

struct Registry {
    slots: Vec<Option<Rc<Conn>>>,
    free: Vec<u32>,
    gen: u32,
}

thread_local! {
    static REGISTRY: RefCell<Registry> =
        const { RefCell::new(Registry { slots: Vec::new(), free: Vec::new(), gen: 0 }) };
}

/// Runs `f` on the connection `key` names, if it is still this worker's.
pub fn with<R>(key: Key, f: impl FnOnce(&Conn) -> R) -> Option<R> {
    let conn = REGISTRY
        .try_with(|r| {
            let r = r.borrow();
            r.slots.get(key.slot as usize)?.as_ref().filter(|c| c.key == key).cloned()
        })
        .ok()
        .flatten()?;
    Some(f(&conn))
}

/// A connection error: GOAWAY with this code, then the connection ends.
struct ConnError(u32);

impl Conn {
    /// A new connection's state, our SETTINGS queued, `prefix` (bytes read already) first in
    /// what is read; in this worker's registry until its task ends.
    pub fn new(tune: &fulcrum_config::TuneH2, max_list: usize, prefix: &[u8]) -> Rc<Conn> {
        let our_window = i64::from(tune.initial_window_size).min(MAX_WINDOW);
        let our_max_frame = (tune.max_frame_size as usize).clamp(16_384, 16_777_215);
        let mut out = Vec::with_capacity(64);
        let mut settings: Vec<(u16, u32)> = Vec::with_capacity(6);
        if tune.header_table_size != 4096 {
            settings.push((1, tune.header_table_size));
        }
        settings.push((3, tune.max_concurrent_streams));
        settings.push((4, our_window as u32));
        if our_max_frame != 16_384 {
            settings.push((5, our_max_frame as u32));
        }
        settings.push((6, max_list as u32));
        settings.push((8, 1));
        frame_head(&mut out, settings.len() * 6, SETTINGS, 0, 0);
        for (k, v) in settings {
            out.extend_from_slice(&k.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
        let mut decoder = RawDecoder::new(4096);
        decoder.queue_size_update(tune.header_table_size as usize);
        let mut rbuf = Vec::new();
        rbuf.extend_from_slice(prefix);
        let inner = RefCell::new(Inner {
            wire: Wire {
                out,
                sent: 0,
                driver: None,
                peer: Peer { window: 65_535, max_frame: 16_384 },
                send_window: 65_535,
                blocked: VecDeque::new(),
                owe_table_update: false,
            },
            streams: StreamMap::default(),
            last_id: 0,
            opened: Vec::new(),
            max_streams: tune.max_concurrent_streams as usize,
            goaway: None,
            dead: false,
            our_window,
            acked: false,
            window_opened: false,
            our_max_frame,
            max_list,
            conn_recv_window: 65_535,
            conn_unacked: 0,
            preface: 0,
            fresh: !prefix.is_empty(),
            early_resets: 0,
            answered: 0,
            reset_ids: VecDeque::new(),
            out_waiters: Vec::new(),
            decoder,
            block: None,
            block_buf: BytesMut::new(),
            rend: rbuf.len(),
            rbuf,
            rpos: 0,
        });
        REGISTRY.with(|r| {
            let mut r = r.borrow_mut();
            r.gen = r.gen.wrapping_add(1);
            let slot = match r.free.pop() {
                Some(s) => s,
                None => {
                    r.slots.push(None);
                    (r.slots.len() - 1) as u32
                }
            };
            let conn = Rc::new(Conn { inner, key: Key { slot, gen: r.gen } });
            r.slots[slot as usize] = Some(Rc::clone(&conn));
            conn
        })
    }

    pub fn key(&self) -> Key {
        self.key
    }

    /// Leaves the worker's registry (its task ends).
    pub fn unregister(&self) {
        REGISTRY.with(|r| {
            let mut r = r.borrow_mut();
            let slot = self.key.slot as usize;
            if r.slots.get(slot).and_then(|c| c.as_ref()).is_some_and(|c| c.key == self.key) {
                r.slots[slot] = None;
                r.free.push(self.key.slot);
            }
        });
    }

    /// Whether streams are open (or still being read to their end).
    pub fn has_streams(&self) -> bool {
        !self.inner.borrow().streams.is_empty()
    }

    /// Sends GOAWAY (NO_ERROR): streams opened after it are ignored, and the connection ends
    /// once those before it did.
    pub fn goaway(&self) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        if i.goaway.is_none() && !i.dead {
            i.goaway = Some(i.last_id);
            i.wire.goaway(i.last_id, NO_ERROR);
            i.wire.wake_driver();
        }
    }

    /// Runs `f` on a stream (`None` once its view detached).
    pub fn stream<R>(&self, id: u32, f: impl FnOnce(&mut Strm) -> R) -> Option<R> {
        self.inner.borrow_mut().streams.get_mut(&id).map(f)
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
        let w = &mut i.wire;
        let update: &[u8] = if std::mem::take(&mut w.owe_table_update) { &[0x20] } else { &[] };
        let total = block.len() + update.len();
        let first = total.min(w.peer.max_frame);
        let mut flags = if end { END_STREAM } else { 0 };
        if first == total {
            flags |= END_HEADERS;
        }
        frame_head(&mut w.out, first, HEADERS, flags, id);
        w.out.extend_from_slice(update);
        let (now, mut rest) = block.split_at(first - update.len());
        w.out.extend_from_slice(now);
        while !rest.is_empty() {
            let n = rest.len().min(w.peer.max_frame);
            let flags = if n == rest.len() { END_HEADERS } else { 0 };
            frame_head(&mut w.out, n, CONTINUATION, flags, id);
            w.out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        if final_head {
            st.answered = true;
            i.answered += 1;
        }
        if end {
            st.local_end = true;
        }
        w.wake_driver();
        Ok(())
    }

    /// Sends body bytes, as far as the windows let them go (the rest waits in the stream),
    /// and ends the stream after them if `end`.
    pub fn send_data(&self, id: u32, data: &[u8], end: bool) -> io::Result<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let st = i.streams.get_mut(&id).ok_or(io::ErrorKind::BrokenPipe)?;
        if st.reset.is_some() || st.local_end || st.pending_end || i.dead {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        st.pending.extend_from_slice(data);
        st.pending_end = end;
        i.wire.flush_stream(st);
        i.wire.wake_driver();
        Ok(())
    }

    /// Ends the stream with trailers (a header block), after any body bytes held back.
    pub fn send_trailers(&self, id: u32, block: Vec<u8>) -> io::Result<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let st = i.streams.get_mut(&id).ok_or(io::ErrorKind::BrokenPipe)?;
        if st.reset.is_some() || st.local_end || st.pending_end || i.dead {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        st.pending_end = true;
        st.trailers_out = Some(block);
        i.wire.flush_stream(st);
        i.wire.wake_driver();
        Ok(())
    }

    /// Resets the stream (RST_STREAM) unless it ended already.
    pub fn reset(&self, id: u32, code: u32) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        if let Some(st) = i.streams.get_mut(&id) {
            if !st.closed() {
                i.wire.rst(st, code);
                remember_reset(&mut i.reset_ids, id);
            }
        }
    }

    /// Ready when the stream takes more body bytes (see `backconn`); `Err` once it was reset.
    pub fn poll_writable(&self, id: u32, cx: &mut Context<'_>) -> Poll<Result<(), u32>> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let Some(st) = i.streams.get_mut(&id) else { return Poll::Ready(Err(CANCEL)) };
        if let Some(code) = st.reset {
            return Poll::Ready(Err(code));
        }
        if !st.pending.is_empty() {
            st.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if i.wire.out.len() - i.wire.sent > OUT_HIGH {
            i.out_waiters.push(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Whether a write would be taken now.
    pub fn is_writable(&self, id: u32) -> bool {
        let i = self.inner.borrow();
        let room = i.wire.out.len() - i.wire.sent <= OUT_HIGH;
        i.streams.get(&id).is_none_or(|st| st.reset.is_some() || (st.pending.is_empty() && room))
    }

    /// The view read `n` body bytes: the stream's window opens again once half of it was read.
    pub fn release(&self, id: u32, n: usize) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let Some(st) = i.streams.get_mut(&id) else { return };
        if st.recv_end || st.reset.is_some() {
            return;
        }
        st.unacked += n as u32;
        if i64::from(st.unacked) * 2 >= i.our_window {
            let n = std::mem::take(&mut st.unacked);
            st.recv_window += i64::from(n);
            frame_head(&mut i.wire.out, 4, WINDOW_UPDATE, 0, id);
            i.wire.out.extend_from_slice(&n.to_be_bytes());
            i.wire.wake_driver();
        }
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
            remember_reset(&mut i.reset_ids, id);
        }
        if st.closed() {
            i.streams.remove(&id);
        } else {
            st.detached = true;
            // What the view did not read opens the window again.
            let n = std::mem::take(&mut st.unacked) + st.data.len() as u32;
            st.data = Vec::new();
            if n > 0 {
                st.recv_window += i64::from(n);
                frame_head(&mut i.wire.out, 4, WINDOW_UPDATE, 0, id);
                i.wire.out.extend_from_slice(&n.to_be_bytes());
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
            if !i.dead && i.wire.out.len() - i.wire.sent <= 4 * OUT_HIGH {
                // Bytes read before (the preface's first line) are handled first.
                let r = if std::mem::take(&mut i.fresh) {
                    Poll::Ready(Ok(i.rend - i.rpos))
                } else {
                    i.read(cx, io)
                };
                match r {
                    Poll::Ready(Ok(0)) => i.fail(),
                    Poll::Ready(Ok(_)) => {
                        again = true;
                        if let Err(ConnError(code)) = i.on_frames() {
                            let last = i.last_id;
                            i.wire.goaway(last, code);
                            i.fail();
                        }
                    }
                    Poll::Ready(Err(_)) => i.fail(),
                    Poll::Pending => {}
                }
            }
            // Streams whose view ended and whose last bytes went out are forgotten.
            i.streams.retain(|_, st| !(st.detached && st.closed()));
            if i.goaway.is_some() && i.streams.is_empty() && !i.dead {
                i.fail(); // the last stream after GOAWAY ended
            }
            let w = &mut i.wire;
            while w.sent < w.out.len() {
                match Pin::new(&mut *io).poll_write(cx, &w.out[w.sent..]) {
                    Poll::Ready(Ok(n)) if n > 0 => w.sent += n,
                    Poll::Ready(_) => {
                        i.fail();
                        return Poll::Ready(Event::Ended);
                    }
                    Poll::Pending => break,
                }
            }
            if w.sent == w.out.len() && w.sent > 0 {
                if Pin::new(&mut *io).poll_flush(cx).is_pending() {
                    break;
                }
                w.sent = 0;
                w.out.clear();
                if w.out.capacity() > OUT_HIGH || i.streams.is_empty() {
                    w.out = Vec::new();
                }
                for waker in i.out_waiters.drain(..) {
                    waker.wake();
                }
            }
            if i.dead {
                if i.wire.sent == i.wire.out.len() {
                    return Poll::Ready(Event::Ended);
                }
                break;
            }
            if !i.opened.is_empty() {
                // New streams, not reset meanwhile, go to their tasks.
                let streams = &i.streams;
                opened.extend(
                    i.opened
                        .drain(..)
                        .filter(|id| streams.get(id).is_some_and(|s| s.reset.is_none())),
                );
                if !opened.is_empty() {
                    return Poll::Ready(Event::Streams);
                }
            }
            if i.streams.is_empty() && i.rpos == i.rend && i.block.is_none() {
                // An idle connection holds no buffer, no stream store.
                if !i.rbuf.is_empty() {
                    i.rbuf = Vec::new();
                    (i.rpos, i.rend) = (0, 0);
                }
                if i.streams.capacity() > 0 {
                    i.streams = StreamMap::default();
                }
                i.block_buf = BytesMut::new();
            }
            if !again {
                break;
            }
        }
        i.wire.driver = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Notes a stream this side reset (see `RESET_MEMORY`).
fn remember_reset(ids: &mut VecDeque<u32>, id: u32) {
    if ids.len() >= RESET_MEMORY {
        ids.pop_front();
    }
    ids.push_back(id);
}

impl Wire {
    fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    fn goaway(&mut self, last: u32, code: u32) {
        frame_head(&mut self.out, 8, GOAWAY, 0, 0);
        self.out.extend_from_slice(&last.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// Resets a stream with `code` (RST_STREAM): it fails.
    fn rst(&mut self, st: &mut Strm, code: u32) {
        frame_head(&mut self.out, 4, RST_STREAM, 0, st.id);
        self.out.extend_from_slice(&code.to_be_bytes());
        st.reset = Some(code);
        st.local_end = true;
        st.pending = Vec::new();
        st.wake();
        self.wake_driver();
    }

    /// Writes as much of a stream's held-back body as the windows allow, then its end.
    fn flush_stream(&mut self, st: &mut Strm) {
        while !st.pending.is_empty() {
            let n = (st.pending.len() as i64)
                .min(st.send_window)
                .min(self.send_window)
                .min(self.peer.max_frame as i64);
            if n <= 0 {
                if self.send_window <= 0 && st.send_window > 0 && !st.blocked {
                    st.blocked = true;
                    self.blocked.push_back(st.id);
                }
                return;
            }
            let n = n as usize;
            let end = n == st.pending.len() && st.pending_end && st.trailers_out.is_none();
            frame_head(&mut self.out, n, DATA, if end { END_STREAM } else { 0 }, st.id);
            self.out.extend_from_slice(&st.pending[..n]);
            st.pending.drain(..n);
            st.send_window -= n as i64;
            self.send_window -= n as i64;
            if end {
                st.local_end = true;
            }
        }
        if st.pending_end && !st.local_end {
            st.local_end = true;
            match st.trailers_out.take() {
                Some(block) => {
                    let flags = END_STREAM | END_HEADERS;
                    frame_head(&mut self.out, block.len(), HEADERS, flags, st.id);
                    self.out.extend_from_slice(&block);
                }
                None => frame_head(&mut self.out, 0, DATA, END_STREAM, st.id),
            }
        }
        if let Some(w) = st.writer.take() {
            w.wake();
        }
    }
}

impl Inner {
    /// Reads what the socket has after the frames not handled yet.
    fn read(&mut self, cx: &mut Context<'_>, io: &mut super::Io) -> Poll<io::Result<usize>> {
        let want = self.our_max_frame + 9;
        if self.rpos == self.rend {
            (self.rpos, self.rend) = (0, 0);
        }
        if self.rbuf.len() - self.rend < 4096 {
            if self.rpos > 0 {
                self.rbuf.copy_within(self.rpos..self.rend, 0);
                (self.rpos, self.rend) = (0, self.rend - self.rpos);
            }
            if self.rbuf.len() - self.rend < 4096 {
                self.rbuf.resize((self.rend + want).max(16_384 + 9), 0);
            }
        }
        let mut buf = tokio::io::ReadBuf::new(&mut self.rbuf[self.rend..]);
        match Pin::new(&mut *io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                self.rend += n;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The connection failed or ended: every stream fails.
    fn fail(&mut self) {
        self.dead = true;
        for st in self.streams.values_mut() {
            if !st.closed() {
                st.reset = Some(CANCEL);
            }
            st.wake();
        }
        self.opened.clear();
        for w in self.out_waiters.drain(..) {
            w.wake();
        }
    }
}

impl super::body::Sink for Conn {
    fn send_data(&self, id: u32, data: &[u8], end: bool) -> io::Result<()> {
        Conn::send_data(self, id, data, end)
    }
    fn send_trailers(&self, id: u32, block: Vec<u8>) -> io::Result<()> {
        Conn::send_trailers(self, id, block)
    }
    fn reset(&self, id: u32, code: u32) {
        Conn::reset(self, id, code)
    }
}
