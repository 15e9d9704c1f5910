//! What the two ends of an HTTP/2 connection do alike: [`super::frontconn`] (from clients) and
//! [`super::backconn`] (to servers) are each a [`Conn`] over their own [`Side`]. Here: the
//! output (frames queued by the streams' views and the connection's task, written in one
//! `send` per turn), a stream's send half (windows, body held back, trailers, RST_STREAM), the
//! read buffer and the frames' headers, SETTINGS, PING and WINDOW_UPDATE, and the worker's
//! registry through which views reach a connection (by key: a `Stream` must be `Send`, an
//! `Rc` is not).
//!
//! A connection's state sits behind a `RefCell` that its task and its streams' views borrow in
//! turn: they all run on one worker's event loop, so no lock, no stream handle counted across
//! threads, no frame queue per stream.
//!
//! Owns: the mechanics both sides share. Must not touch: what a side's frames mean (heads,
//! stream states, limits: `frontconn::recv`, `backconn::recv`), the views.

use crate::worker::Slot;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use fulcrum_h2::{RawDecoder, RawHead};
use tokio::io::{AsyncRead, AsyncWrite};

mod recv;
mod streams;

use super::frames::*;
pub use recv::Frame;

/// What is particular to one end of the connection.
pub trait Side: Sized + 'static {
    /// A stream's own part (`Strm::part`).
    type Part: Default;
    /// The worker's registry of this side's connections.
    fn registry() -> &'static Slot<RefCell<Registry<Self>>>;
    /// A RST_STREAM for `id` was queued (frames for it may still come).
    fn reset_sent(&mut self, _id: u32) {}
    /// A SETTINGS parameter this module does not handle.
    fn setting(&mut self, _key: u16, _value: u32) -> Result<(), ConnError> {
        Ok(())
    }
}

/// A connection error: GOAWAY with this code, then the connection ends.
pub struct ConnError(pub u32);

pub use streams::StreamMap;

/// A stream store this small is freed as soon as its streams all ended.
pub const SMALL_STORE: usize = 4;

/// One stream: what the peer sent that the view has not read, and what the view sent that
/// the windows held back; `part`, what only one side keeps.
#[derive(Default)]
pub struct Strm<P> {
    pub id: u32,
    /// Trailers, once the peer ended its side with them.
    pub trailers: Option<RawHead>,
    /// Body bytes received and not read yet.
    pub data: Vec<u8>,
    /// The peer ended its side (END_STREAM).
    pub recv_end: bool,
    /// The stream ended abnormally (RST_STREAM either way, GOAWAY, the connection failed):
    /// the error code.
    pub reset: Option<u32>,
    /// The body bytes still due per `content-length`.
    pub(super) cl_left: Option<u64>,
    /// What the peer may still send before a WINDOW_UPDATE, and bytes read since the last.
    pub(super) recv_window: i64,
    pub(super) unacked: u32,
    pub(super) reader: Option<Waker>,
    /// Waits for the peer to reset the stream.
    closer: Option<Waker>,
    /// What the peer's window lets us send.
    pub(super) send_window: i64,
    /// Body bytes the windows held back, and whether the body ends after them (with
    /// `trailers_out` when it has some).
    pub(super) pending: Vec<u8>,
    pub(super) pending_end: bool,
    trailers_out: Option<Vec<u8>>,
    /// END_STREAM (or RST_STREAM) was sent.
    pub(super) local_end: bool,
    /// Waits for the connection's window (listed in `Wire::blocked`).
    blocked: bool,
    writer: Option<Waker>,
    /// The view ended: the stream is forgotten once closed (what the peer still sends is read
    /// and dropped).
    pub(super) detached: bool,
    pub part: P,
}

impl<P> Strm<P> {
    /// Both sides are done, or it was reset.
    pub(super) fn closed(&self) -> bool {
        self.reset.is_some() || (self.local_end && self.recv_end)
    }

    pub(super) fn wake(&mut self) {
        for w in [self.reader.take(), self.writer.take(), self.closer.take()].into_iter().flatten()
        {
            w.wake();
        }
    }

    /// The peer reset it (RST_STREAM, or GOAWAY below its id): it fails with `code`.
    pub(super) fn reset_by_peer(&mut self, code: u32) {
        self.reset = Some(code);
        self.local_end = true;
        self.pending = Vec::new();
        self.wake();
    }

    /// Ready when the view may read something: bytes, the end or a failure (or `more`, what
    /// the side has for it).
    pub(super) fn poll_readable_or(&mut self, cx: &mut Context<'_>, more: bool) -> Poll<()> {
        if more || !self.data.is_empty() || self.recv_end || self.reset.is_some() {
            return Poll::Ready(());
        }
        self.reader = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ready when more than `have` bytes of data are held, the peer ended its side, the stream
    /// failed, or its window is spent (a body held unread, `wait-for-body`).
    pub(in crate::http::h2) fn poll_more(&mut self, cx: &mut Context<'_>, have: usize) -> Poll<()> {
        if self.data.len() > have || self.recv_end || self.reset.is_some() || self.recv_window <= 0
        {
            return Poll::Ready(());
        }
        self.reader = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ready once the peer reset the stream.
    pub fn poll_reset(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.reset.is_some() {
            return Poll::Ready(());
        }
        self.closer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The peer's side ended: the body must have the size `content-length` gave (false, and
    /// the stream is reset, if not).
    pub(super) fn end_recv(&mut self, w: &mut Wire) -> bool {
        if self.cl_left.is_some_and(|l| l > 0) {
            w.rst(self, PROTOCOL_ERROR);
            return false;
        }
        self.recv_end = true;
        true
    }
}

/// A header block arriving in CONTINUATION frames.
pub struct Block {
    pub id: u32,
    pub end_stream: bool,
}

/// The connection's side of the frames: what goes out, the peer's windows.
pub struct Wire {
    /// Frames queued for the socket: `out[sent..]`.
    pub out: Vec<u8>,
    sent: usize,
    driver: Option<Waker>,
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE.
    pub peer_window: i64,
    pub peer_max_frame: usize,
    /// The connection's window for what we send.
    send_window: i64,
    /// Streams waiting for the connection's window.
    blocked: VecDeque<u32>,
    /// A dynamic table size update owed at the start of the next block (the peer's
    /// SETTINGS_HEADER_TABLE_SIZE went below the default).
    owe_table_update: bool,
    /// The output's size when it was last freed (its streams all ended): the next burst
    /// starts there.
    last_size: usize,
    /// The proxy's counters (its `h2` statistics module), if the connection is a proxy's.
    pub counters: Option<std::sync::Arc<crate::counters::Counters>>,
}

impl Wire {
    fn new(out: Vec<u8>) -> Wire {
        Wire {
            out,
            sent: 0,
            driver: None,
            peer_window: 65_535,
            peer_max_frame: 16_384,
            send_window: 65_535,
            blocked: VecDeque::new(),
            owe_table_update: false,
            last_size: 0,
            counters: None,
        }
    }

    /// Counts one event of the connection's proxy's `h2` module.
    #[inline]
    pub fn count(&self, which: impl FnOnce(&crate::counters::H2Counters) -> &AtomicU64) {
        if let Some(c) = &self.counters {
            which(&c.h2).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The connection's task runs again (something was queued).
    pub fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    /// Bytes queued beyond `OUT_HIGH`: body writers wait.
    pub fn backed_up(&self) -> bool {
        self.out.len() - self.sent > OUT_HIGH
    }

    /// Bytes queued beyond four times `OUT_HIGH`: nothing more is read (a peer flooding PINGs
    /// or SETTINGS gets no answer it does not read).
    fn stalled(&self) -> bool {
        self.out.len() - self.sent > 4 * OUT_HIGH
    }

    pub fn settings(&mut self, settings: &[(u16, u32)]) {
        frame_head(&mut self.out, settings.len() * 6, SETTINGS, 0, 0);
        for (k, v) in settings {
            self.out.extend_from_slice(&k.to_be_bytes());
            self.out.extend_from_slice(&v.to_be_bytes());
        }
    }

    pub fn goaway(&mut self, last: u32, code: u32) {
        if code != NO_ERROR {
            // An error the connection dies of: found, and answered with GOAWAY.
            self.count(|c| &c.conn_proto_err);
            self.count(|c| &c.goaway_resp);
        }
        frame_head(&mut self.out, 8, GOAWAY, 0, 0);
        self.out.extend_from_slice(&last.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    pub fn window_update(&mut self, id: u32, n: u32) {
        frame_head(&mut self.out, 4, WINDOW_UPDATE, 0, id);
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    /// RST_STREAM for a stream not in the map.
    pub fn rst_frame(&mut self, id: u32, code: u32) {
        if code != NO_ERROR && code != CANCEL {
            // An error of the stream: answered with RST_STREAM.
            self.count(|c| &c.rst_stream_resp);
            if code == PROTOCOL_ERROR {
                self.count(|c| &c.strm_proto_err);
            }
        }
        frame_head(&mut self.out, 4, RST_STREAM, 0, id);
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// Resets a stream with `code` (RST_STREAM): it fails.
    pub fn rst<P>(&mut self, st: &mut Strm<P>, code: u32) {
        self.rst_frame(st.id, code);
        st.reset = Some(code);
        st.local_end = true;
        st.pending = Vec::new();
        st.wake();
        self.wake_driver();
    }

    /// A header block (HEADERS, then CONTINUATION frames past the peer's frame size), ending
    /// the stream if `end`; a table size update first if one is owed.
    pub fn head(&mut self, id: u32, block: &[u8], end: bool) {
        self.room();
        let update: &[u8] = if std::mem::take(&mut self.owe_table_update) { &[0x20] } else { &[] };
        let total = block.len() + update.len();
        let first = total.min(self.peer_max_frame);
        let mut flags = if end { END_STREAM } else { 0 };
        if first == total {
            flags |= END_HEADERS;
        }
        frame_head(&mut self.out, first, HEADERS, flags, id);
        self.out.extend_from_slice(update);
        let (now, mut rest) = block.split_at(first - update.len());
        self.out.extend_from_slice(now);
        while !rest.is_empty() {
            let n = rest.len().min(self.peer_max_frame);
            let flags = if n == rest.len() { END_HEADERS } else { 0 };
            frame_head(&mut self.out, n, CONTINUATION, flags, id);
            self.out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
    }

    /// An output freed when its streams all ended starts again at the size it had then: a
    /// connection whose streams come in bursts does not grow it from nothing each time
    /// (copied a dozen times on the way to a burst's size).
    fn room(&mut self) {
        if self.out.capacity() == 0 && self.last_size > 0 {
            self.out.reserve(self.last_size);
        }
    }

    /// Writes as much of a stream's held-back body as the windows allow, then its end.
    pub fn flush_stream<P>(&mut self, st: &mut Strm<P>) {
        self.send_body(st, &[]);
    }

    /// Writes a stream's body bytes, those held back first, as far as the windows allow (the
    /// rest held back in the stream), then its end once due: a body that fits goes straight
    /// into the output.
    pub fn send_body<P>(&mut self, st: &mut Strm<P>, data: &[u8]) {
        if st.pending.is_empty() {
            let n = self.frames_from(st, data);
            if n < data.len() {
                st.pending.extend_from_slice(&data[n..]);
                return;
            }
        } else {
            st.pending.extend_from_slice(data);
            let held = std::mem::take(&mut st.pending);
            let n = self.frames_from(st, &held);
            st.pending = held;
            st.pending.drain(..n);
            if !st.pending.is_empty() {
                return;
            }
        }
        if st.pending_end && !st.local_end {
            st.local_end = true;
            match st.trailers_out.take() {
                Some(block) => {
                    // (Trailers fit a frame: the session bounds them far below.)
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

    /// DATA frames of `src` as far as the windows allow (the last one ending the stream if
    /// its end is due after them): the bytes written. A stream stopped by the connection's
    /// window waits in `blocked`.
    fn frames_from<P>(&mut self, st: &mut Strm<P>, src: &[u8]) -> usize {
        self.room();
        let mut done = 0;
        while done < src.len() {
            let n = ((src.len() - done) as i64)
                .min(st.send_window)
                .min(self.send_window)
                .min(self.peer_max_frame as i64);
            if n <= 0 {
                if self.send_window <= 0 && st.send_window > 0 && !st.blocked {
                    st.blocked = true;
                    self.blocked.push_back(st.id);
                }
                return done;
            }
            let n = n as usize;
            let end = done + n == src.len() && st.pending_end && st.trailers_out.is_none();
            frame_head(&mut self.out, n, DATA, if end { END_STREAM } else { 0 }, st.id);
            self.out.extend_from_slice(&src[done..done + n]);
            done += n;
            st.send_window -= n as i64;
            self.send_window -= n as i64;
            if end {
                st.local_end = true;
            }
        }
        done
    }
}

/// A connection's state, shared by its task and its streams' views.
pub struct Conn<S: Side> {
    pub(super) inner: RefCell<Inner<S>>,
    key: Key<S>,
}

/// The state both sides keep; `side`, what only one keeps.
pub struct Inner<S: Side> {
    pub wire: Wire,
    pub streams: StreamMap<S::Part>,
    /// Failed or ended: every stream fails.
    pub dead: bool,
    /// The stream window we announced, and whether the peer acknowledged it.
    pub our_window: i64,
    pub acked: bool,
    pub our_max_frame: usize,
    /// What the peer may still send on the connection before our next WINDOW_UPDATE, bytes
    /// received since the last, and whether the window was opened wide.
    pub conn_recv_window: i64,
    pub conn_unacked: i64,
    pub window_opened: bool,
    /// Views waiting for the output to drain.
    pub out_waiters: Vec<Waker>,
    pub decoder: RawDecoder,
    /// A header block still arriving, its fragments in `block_buf`.
    pub block: Option<Block>,
    pub block_buf: BytesMut,
    /// Bytes read: frames at `rbuf[rpos..rend]`.
    pub rbuf: Vec<u8>,
    pub rpos: usize,
    pub rend: usize,
    pub side: S,
}

/// Where a connection is in its worker's registry: views hold this and reach the connection
/// through [`with`].
pub struct Key<S> {
    slot: u32,
    gen: u32,
    side: PhantomData<fn() -> S>,
}

impl<S> Clone for Key<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for Key<S> {}
impl<S> PartialEq for Key<S> {
    fn eq(&self, o: &Self) -> bool {
        (self.slot, self.gen) == (o.slot, o.gen)
    }
}
impl<S> Eq for Key<S> {}
impl<S> std::fmt::Debug for Key<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({}, {})", self.slot, self.gen)
    }
}

/// One worker's connections of one side.
pub struct Registry<S: Side> {
    slots: Vec<Option<Rc<Conn<S>>>>,
    free: Vec<u32>,
    gen: u32,
}

impl<S: Side> Registry<S> {
    pub const fn new() -> Self {
        Registry { slots: Vec::new(), free: Vec::new(), gen: 0 }
    }
}

/// Runs `f` on the connection `key` names, if it is still this worker's.
pub fn with<S: Side, R>(key: Key<S>, f: impl FnOnce(&Conn<S>) -> R) -> Option<R> {
    let conn = S::registry().with(|r| {
        let r = r.borrow();
        r.slots.get(key.slot as usize)?.as_ref().filter(|c| c.key == key).cloned()
    })?;
    Some(f(&conn))
}

impl<S: Side> Drop for Inner<S> {
    fn drop(&mut self) {
        if let Some(c) = &self.wire.counters {
            c.h2.open_conns.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<S: Side> Inner<S> {
    /// A new connection's state with `out` (its first frames) queued, and bytes read already;
    /// counted on `counters` (its proxy's) until it ends.
    pub fn new(
        side: S,
        tune: &fulcrum_config::TuneH2,
        (out, rbuf): (Vec<u8>, Vec<u8>),
        counters: Option<std::sync::Arc<crate::counters::Counters>>,
    ) -> Self {
        let mut decoder = RawDecoder::new(4096);
        decoder.queue_size_update(tune.header_table_size as usize);
        let mut wire = Wire::new(out);
        let mut streams = StreamMap::default();
        streams.counters = counters.clone();
        wire.counters = counters;
        wire.count(|c| &c.total_conns);
        wire.count(|c| &c.open_conns);
        Inner {
            wire,
            streams,
            dead: false,
            our_window: our_window(tune),
            acked: false,
            our_max_frame: our_max_frame(tune),
            conn_recv_window: 65_535,
            conn_unacked: 0,
            window_opened: false,
            out_waiters: Vec::new(),
            decoder,
            block: None,
            block_buf: BytesMut::new(),
            rend: rbuf.len(),
            rbuf,
            rpos: 0,
            side,
        }
    }

    /// Whether the task may read now (it is alive, and its output not backed up).
    pub fn may_read(&self) -> bool {
        !self.dead && !self.wire.stalled()
    }

    /// Reads what the socket has after the frames not handled yet.
    pub(super) fn read(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut super::Io,
    ) -> Poll<io::Result<usize>> {
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

    /// Writes what is queued: `Err` if the socket failed, `Ok(false)` if it takes no more now
    /// (the task waits for it), `Ok(true)` otherwise. A drained output lets waiting views go
    /// on, and holds no buffer if large or without streams.
    pub(super) fn write(&mut self, cx: &mut Context<'_>, io: &mut super::Io) -> Result<bool, ()> {
        let w = &mut self.wire;
        while w.sent < w.out.len() {
            match Pin::new(&mut *io).poll_write(cx, &w.out[w.sent..]) {
                Poll::Ready(Ok(n)) if n > 0 => w.sent += n,
                Poll::Ready(_) => return Err(()),
                Poll::Pending => return Ok(true),
            }
        }
        if w.sent > 0 {
            if Pin::new(&mut *io).poll_flush(cx).is_pending() {
                return Ok(false);
            }
            w.sent = 0;
            w.out.clear();
            if w.out.capacity() > OUT_HIGH {
                w.out = Vec::new();
            } else if self.streams.is_empty() {
                w.last_size = w.out.capacity();
                w.out = Vec::new();
            }
            for waker in self.out_waiters.drain(..) {
                waker.wake();
            }
        }
        Ok(true)
    }

    /// Whether all that was queued went out.
    pub fn written(&self) -> bool {
        self.wire.sent == self.wire.out.len()
    }

    /// The task waits: anything queued wakes it.
    pub fn park(&mut self, cx: &mut Context<'_>) {
        self.wire.driver = Some(cx.waker().clone());
    }

    /// An idle connection holds no read buffer.
    pub fn free_read_buffer(&mut self) {
        if self.rpos == self.rend && !self.rbuf.is_empty() {
            self.rbuf = Vec::new();
            (self.rpos, self.rend) = (0, 0);
        }
    }

    /// The connection failed or ended: every stream not done fails.
    pub fn fail_streams(&mut self) {
        self.dead = true;
        for st in self.streams.values_mut() {
            if !st.closed() {
                st.reset = Some(CANCEL);
            }
            st.wake();
        }
        for w in self.out_waiters.drain(..) {
            w.wake();
        }
    }

    /// Resets a stream of the map (RST_STREAM), unless it is done.
    pub fn reset(&mut self, id: u32, code: u32) {
        if let Some(st) = self.streams.get_mut(&id) {
            if !st.closed() {
                self.wire.rst(st, code);
                self.side.reset_sent(id);
            }
        }
    }

    /// A new stream, with its windows, in the map.
    pub fn new_stream(&mut self, id: u32) -> &mut Strm<S::Part> {
        // Until the peer acknowledged our SETTINGS, it may send as the default window lets it.
        let recv_window = if self.acked { self.our_window } else { self.our_window.max(65_535) };
        let send_window = self.wire.peer_window;
        self.streams.insert(Strm { id, recv_window, send_window, ..Strm::default() })
    }
}

impl<S: Side> Conn<S> {
    /// A new connection in this worker's registry (until its task ends).
    pub(super) fn register(inner: Inner<S>) -> Rc<Conn<S>> {
        S::registry().with(|r| {
            let mut r = r.borrow_mut();
            r.gen = r.gen.wrapping_add(1);
            let slot = match r.free.pop() {
                Some(s) => s,
                None => {
                    r.slots.push(None);
                    (r.slots.len() - 1) as u32
                }
            };
            let key = Key { slot, gen: r.gen, side: PhantomData };
            let conn = Rc::new(Conn { inner: RefCell::new(inner), key });
            r.slots[slot as usize] = Some(Rc::clone(&conn));
            conn
        })
    }

    pub fn key(&self) -> Key<S> {
        self.key
    }

    /// Leaves the worker's registry (its task ends): views still holding its key see a
    /// connection gone.
    pub fn unregister(&self) {
        S::registry().with(|r| {
            let mut r = r.borrow_mut();
            let slot = self.key.slot as usize;
            if r.slots.get(slot).and_then(|c| c.as_ref()).is_some_and(|c| c.key == self.key) {
                r.slots[slot] = None;
                r.free.push(self.key.slot);
            }
        });
    }

    /// Runs `f` on a stream (`None` once its view detached and it was forgotten).
    pub fn stream<R>(&self, id: u32, f: impl FnOnce(&mut Strm<S::Part>) -> R) -> Option<R> {
        self.inner.borrow_mut().streams.get_mut(&id).map(f)
    }

    /// Keeps an emptied body buffer for the next stream's data (see [`StreamMap::give_buf`]).
    pub fn give_buf(&self, b: Vec<u8>) {
        self.inner.borrow_mut().streams.give_buf(b);
    }

    /// Sends body bytes, as far as the windows let them go (the rest waits in the stream),
    /// and ends the stream after them if `end`.
    pub fn send_data(&self, id: u32, data: &[u8], end: bool) -> io::Result<()> {
        self.sending(id, data, |st| st.pending_end = end)
    }

    /// Ends the stream with trailers (a header block), after any body bytes held back.
    pub fn send_trailers(&self, id: u32, block: Vec<u8>) -> io::Result<()> {
        self.sending(id, &[], |st| {
            st.pending_end = true;
            st.trailers_out = Some(block);
        })
    }

    fn sending(&self, id: u32, data: &[u8], f: impl FnOnce(&mut Strm<S::Part>)) -> io::Result<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let st = i.streams.get_mut(&id).ok_or(io::ErrorKind::BrokenPipe)?;
        if st.reset.is_some() || st.local_end || st.pending_end || i.dead {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        f(st);
        i.wire.send_body(st, data);
        i.wire.wake_driver();
        Ok(())
    }

    /// Resets the stream (RST_STREAM) unless it ended already.
    pub fn reset(&self, id: u32, code: u32) {
        self.inner.borrow_mut().reset(id, code);
    }

    /// Ready when the stream takes more body bytes: those sent so far went out to the
    /// connection, and its output is not too full. `Err` with the code once it was reset.
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
        if i.wire.backed_up() {
            i.out_waiters.push(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Whether a write would be taken now (see [`Conn::poll_writable`]).
    pub fn is_writable(&self, id: u32) -> bool {
        let i = self.inner.borrow();
        let room = !i.wire.backed_up();
        i.streams.get(&id).is_none_or(|st| st.reset.is_some() || (st.pending.is_empty() && room))
    }

    /// The view read `n` body bytes: the stream's window opens again once half of it was
    /// read (not for a stream the peer ended).
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
            i.wire.window_update(id, n);
            i.wire.wake_driver();
        }
    }
}

impl<S: Side> super::body::Sink for Conn<S> {
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

/// The stream window we announce (`tune.h2.initial-window-size`).
pub fn our_window(tune: &fulcrum_config::TuneH2) -> i64 {
    i64::from(tune.initial_window_size).min(MAX_WINDOW)
}

/// The frame size we take (`tune.h2.max-frame-size`).
pub fn our_max_frame(tune: &fulcrum_config::TuneH2) -> usize {
    (tune.max_frame_size as usize).clamp(16_384, 16_777_215)
}
