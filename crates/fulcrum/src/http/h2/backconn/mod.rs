//! One HTTP/2 connection to a server (RFC 9113, client side): frames, streams, flow control,
//! without the `h2` crate. Its streams are the transactions of one worker, all on that
//! worker's event loop, so the connection's state sits behind a `RefCell` that the
//! connection's task (reads frames, writes what the streams queued) and the streams' views
//! ([`super::upstream::UpView`]) borrow in turn: no lock, no stream handle counted across
//! threads, no frame queue per stream. A stream's HEADERS and DATA frames are written into the
//! connection's output as the view sends them, and the task writes everything queued since
//! its last turn in one `send` (HAProxy's `mux_h2` works the same way).
//!
//! Why by hand: the `h2` crate's client keeps its streams behind an `Arc<Mutex<_>>` shared
//! with its handles, and moves each frame through per-stream queues and a prioritiser: through
//! an HTTP/2 server, 40.7k instructions per request where HAProxy takes 32.6k, of which the
//! crate's client side took about 7k (`bench/h2.py`, callgrind). Header blocks are still
//! decoded by the vendored crate's HPACK decoder (`h2::raw`), and encoded by
//! [`super::hpack`] (literals only: the server's table size never matters).
//!
//! Owns: the connection's frames, its streams' states and windows. Must not touch: what the
//! heads and bodies mean (the view's), the worker's list of connections (`upstream`).

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
pub use super::frames::{CANCEL, NO_ERROR, REFUSED_STREAM};

type StreamMap = HashMap<u32, Strm, BuildHasherDefault<IdHash>>;

/// One stream: what the server sent that the view has not read, and what the view sent that
/// the windows held back. Kept until its view ends, even once the stream closed.
#[derive(Default)]
pub struct Strm {
    pub id: u32,
    /// Interim (1xx) heads, oldest first.
    pub interim: VecDeque<RawHead>,
    /// The final head, until the view takes it.
    pub response: Option<RawHead>,
    got_final: bool,
    /// Trailers, once the stream ended with them.
    pub trailers: Option<RawHead>,
    /// Body bytes received and not read yet.
    pub data: Vec<u8>,
    /// The server ended its side (END_STREAM).
    pub recv_end: bool,
    /// The stream ended abnormally (RST_STREAM either way, GOAWAY, the connection failed):
    /// the error code.
    pub reset: Option<u32>,
    /// A response to HEAD, or a 204 or 304: no body whatever `content-length` says.
    pub bodiless: bool,
    /// The body bytes still due per `content-length`.
    cl_left: Option<u64>,
    /// What the server may still send before a WINDOW_UPDATE, and bytes read since the last.
    recv_window: i64,
    unacked: u32,
    reader: Option<Waker>,
    /// What the server's window lets us send.
    send_window: i64,
    /// Body bytes the windows held back, and whether the body ends after them (with
    /// `trailers_out` when it has some).
    pending: Vec<u8>,
    pending_end: bool,
    trailers_out: Option<Vec<u8>>,
    /// END_STREAM (or RST_STREAM) was sent.
    local_end: bool,
    /// Waits for the connection's window (listed in `blocked`).
    blocked: bool,
    writer: Option<Waker>,
}

impl Strm {
    /// Both sides are done, or it was reset: frames for it are ignored.
    fn closed(&self) -> bool {
        self.reset.is_some() || (self.local_end && self.recv_end)
    }

    fn wake(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
        if let Some(w) = self.writer.take() {
            w.wake();
        }
    }

    /// Ready when the view may read something: a head, bytes, the end or a failure.
    pub fn poll_readable(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.interim.is_empty()
            || self.response.is_some()
            || !self.data.is_empty()
            || self.recv_end
            || self.reset.is_some()
        {
            return Poll::Ready(());
        }
        self.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// What the server said in its SETTINGS.
struct Peer {
    max_streams: u32,
    window: i64,
    max_frame: usize,
    connect_protocol: bool,
    /// Its first SETTINGS came.
    known: bool,
}

/// A header block arriving in CONTINUATION frames.
struct Block {
    id: u32,
    end_stream: bool,
}

/// The connection's side of the frames: what goes out, its windows.
struct Wire {
    /// Frames queued for the socket: `out[sent..]`.
    out: Vec<u8>,
    sent: usize,
    driver: Option<Waker>,
    peer: Peer,
    send_window: i64,
    /// Streams waiting for the connection's window.
    blocked: VecDeque<u32>,
}

struct Inner {
    wire: Wire,
    streams: StreamMap,
    next_id: u32,
    /// Views alive (streams opened or about to be).
    active: usize,
    /// Streams opened so far.
    carried: u32,
    /// In the worker's list: stays open without streams (until idle too long).
    shared: bool,
    /// No new stream: GOAWAY came, ids ran out, or the connection left the list.
    closing: bool,
    /// Failed or ended: every stream fails.
    dead: bool,
    /// Bytes received since the connection's last WINDOW_UPDATE.
    conn_unacked: i64,
    /// A dynamic table size update owed at the start of the next block (the server's
    /// SETTINGS_HEADER_TABLE_SIZE went below the default).
    owe_table_update: bool,
    /// The stream window we announced, and whether the server acknowledged it.
    our_window: i64,
    acked: bool,
    our_max_frame: usize,
    /// Views waiting for the output to drain.
    out_waiters: Vec<Waker>,
    decoder: RawDecoder,
    /// A header block still arriving, its fragments in `block_buf`.
    block: Option<Block>,
    block_buf: BytesMut,
    /// Bytes read: frames at `rbuf[rpos..rend]`.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
}

/// A connection's state, shared by its task and its streams' views.
pub struct Conn {
    inner: RefCell<Inner>,
    key: Key,
}

/// Where a connection is in its worker's registry: views hold this (a `Stream` must be
/// `Send`, an `Rc` is not) and reach the connection through [`with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    slot: u32,
    gen: u32,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = const { RefCell::new(Registry { slots: Vec::new(), free: Vec::new(), gen: 0 }) };
}

struct Registry {
    slots: Vec<Option<Rc<Conn>>>,
    free: Vec<u32>,
    gen: u32,
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
    /// A new connection's state, its preface and SETTINGS queued, in this worker's registry
    /// until its task ends.
    pub fn new(tune: &fulcrum_config::TuneH2, shared: bool) -> Rc<Conn> {
        let our_window = i64::from(tune.initial_window_size).min(MAX_WINDOW);
        let our_max_frame = (tune.max_frame_size as usize).clamp(16_384, 16_777_215);
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(PREFACE);
        let mut settings: Vec<(u16, u32)> = vec![(2, 0), (4, our_window as u32)];
        if tune.header_table_size != 4096 {
            settings.push((1, tune.header_table_size));
        }
        if our_max_frame != 16_384 {
            settings.push((5, our_max_frame as u32));
        }
        frame_head(&mut out, settings.len() * 6, SETTINGS, 0, 0);
        for (k, v) in settings {
            out.extend_from_slice(&k.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
        // The connection's window as large as it goes (HAProxy's choice): streams share it,
        // and one whose client reads slowly must not hold back the others.
        frame_head(&mut out, 4, WINDOW_UPDATE, 0, 0);
        out.extend_from_slice(&((MAX_WINDOW - 65_535) as u32).to_be_bytes());
        let mut decoder = RawDecoder::new(4096);
        decoder.queue_size_update(tune.header_table_size as usize);
        let inner = RefCell::new(Inner {
            wire: Wire {
                out,
                sent: 0,
                driver: None,
                peer: Peer {
                    max_streams: INITIAL_STREAMS,
                    window: 65_535,
                    max_frame: 16_384,
                    connect_protocol: false,
                    known: false,
                },
                send_window: 65_535,
                blocked: VecDeque::new(),
            },
            streams: StreamMap::default(),
            next_id: 1,
            active: 0,
            carried: 0,
            shared,
            closing: false,
            dead: false,
            conn_unacked: 0,
            owe_table_update: false,
            our_window,
            acked: false,
            our_max_frame,
            out_waiters: Vec::new(),
            decoder,
            block: None,
            block_buf: BytesMut::new(),
            rbuf: Vec::new(),
            rpos: 0,
            rend: 0,
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

    /// Leaves the worker's registry (its task ended): views still holding its key see a
    /// connection gone.
    fn unregister(&self) {
        REGISTRY.with(|r| {
            let mut r = r.borrow_mut();
            let slot = self.key.slot as usize;
            if r.slots.get(slot).and_then(|c| c.as_ref()).is_some_and(|c| c.key == self.key) {
                r.slots[slot] = None;
                r.free.push(self.key.slot);
            }
        });
    }

    /// Whether a new stream may go on it now.
    pub fn has_room(&self) -> bool {
        let i = self.inner.borrow();
        !i.closing && !i.dead && (i.active as u64) < u64::from(i.wire.peer.max_streams)
    }

    /// Streams opened so far.
    pub fn carried(&self) -> u32 {
        self.inner.borrow().carried
    }

    /// Views alive.
    pub fn active(&self) -> usize {
        self.inner.borrow().active
    }

    /// A view starts (before its stream opens).
    pub fn attach(&self) {
        self.inner.borrow_mut().active += 1;
    }

    /// Takes no new stream, and ends once it has none (it left the worker's list).
    pub fn forget(&self) {
        let mut i = self.inner.borrow_mut();
        i.shared = false;
        i.closing = true;
        i.wire.wake_driver();
    }

    /// Whether the server allows extended CONNECT (RFC 8441), or has not said yet.
    pub fn may_connect_protocol(&self) -> bool {
        let i = self.inner.borrow();
        !i.wire.peer.known || i.wire.peer.connect_protocol
    }

    /// Opens a stream with a request's header block (HEADERS, then CONTINUATION frames if
    /// it is larger than a frame), ending it there if `end`: its id.
    pub fn open(&self, block: &[u8], end: bool, bodiless: bool) -> io::Result<u32> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        if i.dead || i.closing || i.next_id > MAX_ID {
            i.closing = true;
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let id = i.next_id;
        i.next_id += 2;
        i.carried += 1;
        let w = &mut i.wire;
        let update: &[u8] = if std::mem::take(&mut i.owe_table_update) { &[0x20] } else { &[] };
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
        let recv_window = if i.acked { i.our_window } else { i.our_window.max(65_535) };
        let st = Strm {
            id,
            bodiless,
            recv_window,
            send_window: w.peer.window,
            local_end: end,
            ..Strm::default()
        };
        i.streams.insert(id, st);
        w.wake_driver();
        Ok(id)
    }

    /// Runs `f` on a stream of this connection (`None` once its view detached).
    pub fn stream<R>(&self, id: u32, f: impl FnOnce(&mut Strm) -> R) -> Option<R> {
        self.inner.borrow_mut().streams.get_mut(&id).map(f)
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
            }
        }
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
        if i.wire.out.len() - i.wire.sent > OUT_HIGH {
            i.out_waiters.push(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Whether a write would be taken now (see [`Conn::poll_writable`]).
    pub fn is_writable(&self, id: u32) -> bool {
        let i = self.inner.borrow();
        i.streams.get(&id).is_none_or(|st| {
            st.reset.is_some()
                || (st.pending.is_empty() && i.wire.out.len() - i.wire.sent <= OUT_HIGH)
        })
    }

    /// The view read `n` body bytes: the stream's window opens again once half of it was
    /// read (not for a stream the server ended).
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

    /// A view ends: its stream (`id`, 0 if none opened), if still open, is reset (CANCEL).
    pub fn detach(&self, id: u32) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        i.active -= 1;
        if let Some(mut st) = i.streams.remove(&id) {
            if !st.closed() {
                i.wire.rst(&mut st, CANCEL);
            }
        }
        if i.active == 0 {
            i.wire.wake_driver();
        }
    }

    /// Runs the connection: reads and handles frames, writes what is queued, until the
    /// connection fails, the server closes it, or it ends without streams (out of the
    /// worker's list). Then it leaves the registry.
    pub(super) fn poll_drive(&self, cx: &mut Context<'_>, io: &mut super::Io) -> Poll<()> {
        let r = self.drive_once(cx, io);
        if r.is_ready() {
            self.unregister();
        }
        r
    }

    fn drive_once(&self, cx: &mut Context<'_>, io: &mut super::Io) -> Poll<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        loop {
            let mut again = false;
            // Reads while the output is not backed up.
            if !i.dead && i.wire.out.len() - i.wire.sent <= 4 * OUT_HIGH {
                match i.read(cx, io) {
                    Poll::Ready(Ok(0)) => i.fail(),
                    Poll::Ready(Ok(_)) => {
                        again = true;
                        if let Err(ConnError(code)) = i.on_frames() {
                            i.wire.goaway(code);
                            i.fail();
                        }
                    }
                    Poll::Ready(Err(_)) => i.fail(),
                    Poll::Pending => {}
                }
            }
            if !i.dead && i.active == 0 && (!i.shared || i.closing) {
                // Without streams and out of the list: GOAWAY, then the connection ends.
                i.wire.goaway(NO_ERROR);
                i.fail();
            }
            // Writes what is queued.
            let w = &mut i.wire;
            while w.sent < w.out.len() {
                match Pin::new(&mut *io).poll_write(cx, &w.out[w.sent..]) {
                    Poll::Ready(Ok(n)) if n > 0 => w.sent += n,
                    Poll::Ready(_) => {
                        i.fail();
                        return Poll::Ready(());
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
                if w.out.capacity() > OUT_HIGH || i.active == 0 {
                    w.out = Vec::new();
                }
                for waker in i.out_waiters.drain(..) {
                    waker.wake();
                }
            }
            if i.dead {
                if i.wire.sent == i.wire.out.len() {
                    return Poll::Ready(());
                }
                break;
            }
            if i.active == 0 && i.rpos == i.rend && !i.rbuf.is_empty() {
                // An idle connection holds no buffer.
                i.rbuf = Vec::new();
                (i.rpos, i.rend) = (0, 0);
            }
            if !again {
                break;
            }
        }
        i.wire.driver = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Wire {
    fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    fn goaway(&mut self, code: u32) {
        frame_head(&mut self.out, 8, GOAWAY, 0, 0);
        self.out.extend_from_slice(&0u32.to_be_bytes());
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

    /// The connection failed or ended: every stream fails (those the server had not ended
    /// yet lose their response).
    fn fail(&mut self) {
        self.dead = true;
        self.closing = true;
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
