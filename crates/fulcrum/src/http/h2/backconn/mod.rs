//! One HTTP/2 connection to a server (RFC 9113, client side): frames, streams, flow control,
//! without the `h2` crate (what it does as [`super::frontconn`] does is in [`super::conn`]).
//! Its streams are the transactions of one worker, all on that worker's event loop: the
//! connection's task (reads frames, writes what the streams queued) and the streams' views
//! ([`super::upstream::UpView`]) borrow its state in turn. A stream's HEADERS and DATA frames
//! are written into the connection's output as the view sends them, and the task writes
//! everything queued since its last turn in one `send` (HAProxy's `mux_h2` works the same
//! way).
//!
//! Why by hand: the `h2` crate's client keeps its streams behind an `Arc<Mutex<_>>` shared
//! with its handles, and moves each frame through per-stream queues and a prioritiser: through
//! an HTTP/2 server, 40.7k instructions per request where HAProxy takes 32.6k, of which the
//! crate's client side took about 7k (`bench/h2.py`, callgrind). Header blocks are
//! decoded by `fulcrum_h2::hpack`, and encoded by
//! [`super::hpack`] (literals only: the server's table size never matters).
//!
//! Owns: the connection's frames, its streams' states and windows. Must not touch: what the
//! heads and bodies mean (the view's), the worker's list of connections (`upstream`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::task::{Context, Poll};

use fulcrum_h2::RawHead;

mod recv;

use super::conn::{self, ConnError, Inner, Registry, Side};
use super::frames::*;
pub use super::frames::{CANCEL, NO_ERROR, REFUSED_STREAM};
use crate::worker::{Id, Slot};

pub type Conn = conn::Conn<Back>;
pub type Key = conn::Key<Back>;
pub type Strm = conn::Strm<Part>;

/// What only a stream to a server keeps (kept until its view ends, even once it closed).
#[derive(Default)]
pub struct Part {
    /// Interim (1xx) heads, oldest first.
    pub interim: VecDeque<RawHead>,
    /// The final head, until the view takes it.
    pub response: Option<RawHead>,
    got_final: bool,
    /// A response to HEAD, or a 204 or 304: no body whatever `content-length` says.
    pub bodiless: bool,
}

impl Strm {
    /// Ready when the view may read something: a head, bytes, the end or a failure.
    pub fn poll_readable(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let head = !self.part.interim.is_empty() || self.part.response.is_some();
        self.poll_readable_or(cx, head)
    }
}

/// What only the client side of a connection keeps.
pub struct Back {
    next_id: u32,
    /// Views alive (streams opened or about to be).
    active: usize,
    /// Streams opened so far.
    carried: u32,
    /// Views started so far, and the server's `max-reuse`: past it, no new view, and the
    /// connection ends once its streams did.
    attached: u32,
    max_reuse: u32,
    /// In the worker's list: stays open without streams (until idle too long).
    shared: bool,
    /// No new stream: GOAWAY came, ids ran out, or the connection left the list.
    closing: bool,
    /// Its task ended: it stays in the registry only for the views still reading what came
    /// before the end, and leaves it with the last.
    ended: bool,
    /// What the server said in its SETTINGS (and whether its first came).
    max_streams: u32,
    connect_protocol: bool,
    known: bool,
}

static REGISTRY: Slot<RefCell<Registry<Back>>> =
    Slot::new(Id::H2Back, || RefCell::new(Registry::new()));

impl Back {
    /// It took as many views as `max-reuse` allows.
    fn spent(&self) -> bool {
        self.attached > self.max_reuse
    }
}

impl Side for Back {
    type Part = Part;

    fn registry() -> &'static Slot<RefCell<Registry<Back>>> {
        &REGISTRY
    }

    fn setting(&mut self, key: u16, v: u32) -> Result<(), ConnError> {
        match key {
            3 => self.max_streams = v,
            8 if v > 1 => return Err(ConnError(PROTOCOL_ERROR)),
            8 => self.connect_protocol = v == 1,
            _ => {}
        }
        Ok(())
    }
}

/// Runs `f` on the connection `key` names, if it is still this worker's.
pub fn with<R>(key: Key, f: impl FnOnce(&Conn) -> R) -> Option<R> {
    conn::with(key, f)
}

impl Conn {
    /// A new connection's state, its preface and SETTINGS queued, in this worker's registry
    /// until its task ends.
    /// `counters`: the backend's (its `h2` statistics module), for a proxy's connection.
    pub fn new(
        tune: &fulcrum_config::TuneH2,
        shared: bool,
        counters: Option<std::sync::Arc<crate::counters::Counters>>,
    ) -> Rc<Conn> {
        let (window, max_frame) = (conn::our_window(tune), conn::our_max_frame(tune));
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(PREFACE);
        let mut settings: Vec<(u16, u32)> = vec![(2, 0), (4, window as u32)];
        if tune.header_table_size != 4096 {
            settings.push((1, tune.header_table_size));
        }
        if max_frame != 16_384 {
            settings.push((5, max_frame as u32));
        }
        let side = Back {
            next_id: 1,
            active: 0,
            carried: 0,
            attached: 0,
            max_reuse: u32::MAX,
            shared,
            closing: false,
            ended: false,
            max_streams: INITIAL_STREAMS,
            connect_protocol: false,
            known: false,
        };
        let mut inner = Inner::new(side, tune, (out, Vec::new()), counters);
        inner.wire.settings(&settings);
        inner.open_window();
        Conn::register(inner)
    }

    /// Whether a new stream may go on it now.
    pub fn has_room(&self) -> bool {
        let i = self.inner.borrow();
        let s = &i.side;
        !s.closing && !i.dead && (s.active as u64) < u64::from(s.max_streams) && !s.spent()
    }

    /// The server's `max-reuse`: the connection takes that many views after its first.
    pub fn set_max_reuse(&self, max: u32) {
        self.inner.borrow_mut().side.max_reuse = max;
    }

    /// Streams opened so far.
    pub fn carried(&self) -> u32 {
        self.inner.borrow().side.carried
    }

    /// Views alive.
    pub fn active(&self) -> usize {
        self.inner.borrow().side.active
    }

    /// A view starts (before its stream opens).
    pub fn attach(&self) {
        let s = &mut self.inner.borrow_mut().side;
        s.active += 1;
        s.attached = s.attached.saturating_add(1);
    }

    /// Takes no new stream, and ends once it has none (it left the worker's list).
    pub fn forget(&self) {
        let mut i = self.inner.borrow_mut();
        i.side.shared = false;
        i.side.closing = true;
        i.wire.wake_driver();
    }

    /// Whether the server allows extended CONNECT (RFC 8441), or has not said yet.
    pub fn may_connect_protocol(&self) -> bool {
        let s = &self.inner.borrow().side;
        !s.known || s.connect_protocol
    }

    /// Opens a stream with a request's header block (HEADERS, then CONTINUATION frames if
    /// it is larger than a frame), ending it there if `end`: its id.
    pub fn open(&self, block: &[u8], end: bool, bodiless: bool) -> io::Result<u32> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        let s = &mut i.side;
        if i.dead || s.closing || s.next_id > MAX_ID {
            s.closing = true;
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let id = s.next_id;
        s.next_id += 2;
        s.carried += 1;
        i.wire.head(id, block, end);
        let st = i.new_stream(id);
        st.part.bodiless = bodiless;
        st.local_end = end;
        i.wire.wake_driver();
        Ok(id)
    }

    /// A view ends: its stream (`id`, 0 if none opened), if still open, is reset (CANCEL).
    pub fn detach(&self, id: u32) {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        i.side.active -= 1;
        if let Some(st) = i.streams.get_mut(&id) {
            if !st.closed() {
                i.wire.rst(st, CANCEL);
            }
            i.streams.forget(&id);
        }
        if i.side.active == 0 {
            if i.side.ended {
                self.unregister();
            } else {
                i.wire.wake_driver();
            }
        }
    }

    /// Runs the connection: reads and handles frames, writes what is queued, until the
    /// connection fails, the server closes it, or it ends without streams (out of the
    /// worker's list). Then it leaves the registry, or, while views are left (a response that
    /// came whole just before the server closed, not read yet), with the last of them.
    pub(super) fn poll_drive(&self, cx: &mut Context<'_>, io: &mut super::Io) -> Poll<()> {
        let r = self.drive_once(cx, io);
        if r.is_ready() {
            let mut i = self.inner.borrow_mut();
            i.side.ended = true;
            if i.side.active == 0 {
                drop(i);
                self.unregister();
            }
        }
        r
    }

    fn drive_once(&self, cx: &mut Context<'_>, io: &mut super::Io) -> Poll<()> {
        let mut i = self.inner.borrow_mut();
        let i = &mut *i;
        loop {
            let mut again = false;
            if i.may_read() {
                match i.read(cx, io) {
                    Poll::Ready(Ok(0)) => fail(i),
                    Poll::Ready(Ok(_)) => {
                        again = true;
                        if let Err(ConnError(code)) = i.on_frames() {
                            i.wire.goaway(0, code);
                            fail(i);
                        }
                    }
                    Poll::Ready(Err(_)) => fail(i),
                    Poll::Pending => {}
                }
            }
            let s = &i.side;
            if !i.dead && s.active == 0 && (!s.shared || s.closing || s.spent()) {
                // Without streams and out of the list: GOAWAY, then the connection ends.
                i.wire.goaway(0, NO_ERROR);
                fail(i);
            }
            match i.write(cx, io) {
                Err(()) => {
                    fail(i);
                    return Poll::Ready(());
                }
                Ok(false) => break,
                Ok(true) => {}
            }
            if i.dead {
                if i.written() {
                    return Poll::Ready(());
                }
                break;
            }
            if i.side.active == 0 {
                i.free_read_buffer();
                // Spare body buffers stay only with a busy connection's large stream store.
                if i.streams.capacity() <= conn::SMALL_STORE {
                    i.streams.drop_bufs();
                }
            }
            if !again {
                break;
            }
        }
        i.park(cx);
        Poll::Pending
    }
}

/// The connection failed or ended: every stream fails (those the server had not ended yet
/// lose their response).
fn fail(i: &mut Inner<Back>) {
    i.fail_streams();
    i.side.closing = true;
}
