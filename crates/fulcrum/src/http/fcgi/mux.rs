//! FastCGI connections that carry several requests at once (`option mpxs-conns`, `option
//! max-reqs`, `option get-values`: HAProxy's `mux_fcgi` with multiplexing). A connection is
//! the worker's: its task reads records and hands each request's records to that request's
//! view ([`super::FcgiView`]), and writes what the views queued, whole records from several
//! requests interleaved. Requests get increasing ids (1, 2, ...; none past 0x7FFF, as in
//! HAProxy).
//!
//! As in HAProxy 2.6, such a connection serves other transactions of the worker only with
//! `http-reuse always` (from its start, when its limit leaves room) or `aggressive` (once its
//! first request ended); under `safe` and `never` FastCGI connections stay one request at a
//! time (the session's own, or the idle pool's). Its limit is `max-reqs`; with `get-values`
//! the connection first sends `GET_VALUES` (`FCGI_MAX_REQS`, `FCGI_MPXS_CONNS`) and the
//! application's answer sets it: its `FCGI_MAX_REQS`, or 1 when it does not multiplex. An
//! `END_REQUEST` with `FCGI_CANT_MPX_CONN` brings the limit to 1; `FCGI_OVERLOADED` and
//! `FCGI_UNKNOWN_ROLE` close the connection once its requests ended. A request whose
//! transaction leaves early is aborted (`ABORT_REQUEST`) and counted until the application
//! ends it. A connection without requests for 5 s (HAProxy's default `pool-purge-delay`)
//! closes.
//!
//! Owns: the worker's multiplexed FastCGI connections and the demultiplexing of their records.
//! Must not touch: what the records mean to a request (the view's), server choice and slots.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::rc::Rc;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fulcrum_fcgi::{Kind, Record};

use crate::backend::Backend;
use crate::connection::Stream;
use crate::http_settings::FcgiApp;
use crate::worker::{Id, Slot};

/// How long a connection without requests stays open.
const IDLE: Duration = Duration::from_secs(5);
/// The last request id a connection gives (HAProxy's limit).
const MAX_ID: u16 = 0x7FFF;
/// Bytes queued for the socket above which a request's writer waits.
const QUEUE_LIMIT: usize = 256 * 1024;
/// Records of one request waiting for its view above which the connection stops reading.
const RAW_LIMIT: usize = 1024 * 1024;

/// When other transactions may take a request on a connection (`http-reuse`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Share {
    /// `always`: from the start.
    Always,
    /// `aggressive`: once a request on it ended.
    Aggressive,
}

/// One request on a connection.
struct Req {
    id: u16,
    /// Its records as read (whole, header included), waiting for its view.
    raw: Vec<u8>,
    waker: Option<Waker>,
    /// Its view is gone before the application ended it: counted until it ends.
    orphan: bool,
    /// Aborted (`ABORT_REQUEST` queued).
    aborted: bool,
    /// `END_REQUEST` came.
    ended: bool,
}

struct Inner {
    backend: Weak<Backend>,
    idx: usize,
    addr_gen: u32,
    out: Vec<u8>,
    written: usize,
    inbuf: Vec<u8>,
    reqs: Vec<Req>,
    next_id: u16,
    /// How many requests it carries at once (HAProxy's `streams_limit`).
    limit: u32,
    /// The application multiplexes (`mpxs-conns`, or what `GET_VALUES` said).
    mpxs: bool,
    /// Other transactions may take a request on it (HAProxy's "available" list).
    available: bool,
    /// Takes no new request; ends once its requests did.
    closing: bool,
    failed: Option<io::ErrorKind>,
    /// Requests it took so far.
    carried: u32,
    /// The server's `max-reuse`: after that many requests more than its first, it closes.
    max_reuse: u32,
    /// Reading waits until a view took its records.
    read_blocked: bool,
    driver: Option<Waker>,
    /// Its task ended (the connection failed or closed).
    driver_done: bool,
    writers: Vec<Waker>,
    /// What the views tell of the connection: its socket, TLS facts, SNI.
    facts: Facts,
}

struct Conn {
    key: u64,
    inner: RefCell<Inner>,
}

struct Registry {
    conns: Vec<Rc<Conn>>,
    next_key: u64,
}

static CONNS: Slot<RefCell<Registry>> =
    Slot::new(Id::FcgiMux, || RefCell::new(Registry { conns: Vec::new(), next_key: 1 }));

fn find(key: u64) -> Option<Rc<Conn>> {
    CONNS.with(|r| r.borrow().conns.iter().find(|c| c.key == key).cloned())
}

/// Runs `f` on the connection `key` names, while it is this worker's.
fn with<R>(key: u64, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
    let c = find(key)?;
    let mut i = c.inner.borrow_mut();
    Some(f(&mut i))
}

/// A request's place on a shared connection, held by its view.
pub struct Handle {
    key: u64,
    id: u16,
    /// `BEGIN_REQUEST` went: leaving early aborts the request.
    begun: std::cell::Cell<bool>,
    /// Its answer was taken whole as far as the transaction knows (its length reached): when
    /// the view leaves before `END_REQUEST`, the request is aborted only if more comes.
    answered: std::cell::Cell<bool>,
    /// The connection's socket, TLS facts and SNI.
    facts: Facts,
}

/// Whether requests of `app` on `be` go over shared connections, and how they are shared:
/// the application keeps connections and may multiplex, and `http-reuse` is `always` or
/// `aggressive`.
pub fn sharing(app: &FcgiApp, reuse: crate::http_settings::Reuse) -> Option<Share> {
    use crate::http_settings::Reuse;
    if !app.keep_conn || !(app.mpxs_conns || app.get_values) {
        return None;
    }
    match reuse {
        Reuse::Always => Some(Share::Always),
        Reuse::Aggressive => Some(Share::Aggressive),
        _ => None,
    }
}

/// A request on one of this worker's connections to that server with room for it, with the
/// number of requests the connection took before.
pub fn take(be: &Arc<Backend>, idx: usize) -> Option<(Handle, u32)> {
    let gen = be.servers[idx].addr_gen();
    let conn = CONNS.with(|r| {
        r.borrow()
            .conns
            .iter()
            .find(|c| {
                let i = c.inner.borrow();
                i.idx == idx
                    && std::ptr::eq(i.backend.as_ptr(), Arc::as_ptr(be))
                    && i.addr_gen == gen
                    && i.has_room()
            })
            .cloned()
    })?;
    let (id, before) = conn.inner.borrow_mut().open();
    let facts = conn.inner.borrow().facts.clone();
    Some((Handle::new(conn.key, id, facts), before))
}

type Facts = (Arc<OwnedFd>, Option<Arc<crate::tls::facts::Snapshot>>, Option<Box<str>>);

impl Inner {
    fn has_room(&self) -> bool {
        self.available
            && !self.closing
            && self.failed.is_none()
            && (self.reqs.len() as u32) < self.limit
            && self.next_id <= MAX_ID
    }

    /// A new request: its id, and the requests taken before.
    fn open(&mut self) -> (u16, u32) {
        let id = self.next_id;
        self.next_id += 1;
        let (raw, waker) = (Vec::new(), None);
        self.reqs.push(Req { id, raw, waker, orphan: false, aborted: false, ended: false });
        let before = self.carried;
        self.carried += 1;
        if self.carried > self.max_reuse {
            self.closing = true; // (its requests go on; no new one)
        }
        (id, before)
    }

    fn wake_driver(&mut self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    fn fail(&mut self, kind: io::ErrorKind) {
        self.failed.get_or_insert(kind);
        self.closing = true;
        for r in &mut self.reqs {
            if let Some(w) = r.waker.take() {
                w.wake();
            }
        }
        self.writers.drain(..).for_each(Waker::wake);
    }

    fn queued(&self) -> usize {
        self.out.len() - self.written
    }

    /// A request left: the connection may serve others when it has room (HAProxy lists it
    /// as available as a stream detaches), and reads again if that request's records held it.
    fn leave(&mut self) {
        if !self.closing && (self.reqs.len() as u32) < self.limit {
            self.available = true;
        }
        self.read_blocked = self.reqs.iter().any(|q| q.raw.len() > RAW_LIMIT);
    }
}

/// Starts a shared connection on `stream` (just connected) and opens its first request.
pub fn start(
    stream: Stream,
    app: &FcgiApp,
    be: &Arc<Backend>,
    idx: usize,
    share: Share,
) -> io::Result<Handle> {
    let fd = Arc::new(stream.as_fd().try_clone_to_owned()?);
    let tls = stream.tls().map(|t| Arc::new(crate::tls::facts::Snapshot::of(t)));
    let sni: Option<Box<str>> = stream.server_sni().map(Into::into);
    let mut out = Vec::new();
    if app.get_values {
        fulcrum_fcgi::get_values(&mut out, &super::ASKED_VALUES);
    }
    let limit = app.max_reqs.max(1);
    let mut inner = Inner {
        backend: Arc::downgrade(be),
        idx,
        addr_gen: be.servers[idx].addr_gen(),
        out,
        written: 0,
        inbuf: Vec::new(),
        reqs: Vec::new(),
        next_id: 1,
        limit,
        mpxs: app.mpxs_conns,
        // (HAProxy lists a new connection as available when it has room left.)
        available: share == Share::Always && limit > 1,
        closing: false,
        failed: None,
        carried: 0,
        max_reuse: be.servers[idx].max_reuse,
        read_blocked: false,
        driver: None,
        driver_done: false,
        writers: Vec::new(),
        facts: (fd, tls, sni),
    };
    let (id, _) = inner.open();
    let key = CONNS.with(|r| {
        let mut r = r.borrow_mut();
        let key = r.next_key;
        r.next_key += 1;
        r.conns.push(Rc::new(Conn { key, inner: RefCell::new(inner) }));
        key
    });
    let conn = find(key).expect("just registered");
    let facts = conn.inner.borrow().facts.clone();
    tokio::task::spawn_local(drive(conn, stream));
    Ok(Handle::new(key, id, facts))
}

/// Runs a connection until it fails, or ends without requests (idle for [`IDLE`], or closing).
/// (Idle time is read on the worker's clock: a call of Tokio's `Instant::now` here made the
/// compiler stop inlining it into every session's timers, +100 instructions per request.)
async fn drive(conn: Rc<Conn>, stream: Stream) {
    let mut idle_since = crate::clock::now();
    loop {
        tokio::select! {
            biased;
            _ = std::future::poll_fn(|cx| poll_drive(&conn, &stream, cx)) => break,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                let now = crate::clock::now();
                let mut i = conn.inner.borrow_mut();
                if i.reqs.iter().any(|r| !r.orphan) {
                    idle_since = now;
                }
                if now.duration_since(idle_since) >= IDLE {
                    i.closing = true;
                    i.available = false;
                    break;
                }
            }
        }
    }
    let mut i = conn.inner.borrow_mut();
    i.fail(io::ErrorKind::ConnectionAborted);
    i.driver_done = true;
    // Its requests' views still take what was read before the end; the last one to leave
    // forgets the connection (`Handle::drop`).
    if i.reqs.iter().all(|q| q.orphan) {
        drop(i);
        forget(conn.key);
    }
}

/// Takes a connection out of the worker's registry.
fn forget(key: u64) {
    CONNS.with(|r| r.borrow_mut().conns.retain(|c| c.key != key));
}

/// Writes what is queued and hands out what is read; `Ready` once the connection is over.
fn poll_drive(conn: &Conn, stream: &Stream, cx: &mut Context<'_>) -> Poll<()> {
    let mut i = conn.inner.borrow_mut();
    let i = &mut *i;
    if !i.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        i.driver = Some(cx.waker().clone());
    }
    if let Err(e) = write_out(i, stream, cx) {
        i.fail(e.kind());
        return Poll::Ready(());
    }
    if !i.read_blocked {
        if let Err(e) = read_in(i, stream, cx) {
            i.fail(e.kind());
            return Poll::Ready(());
        }
    }
    if i.failed.is_some() || (i.closing && i.reqs.is_empty() && i.queued() == 0) {
        return Poll::Ready(());
    }
    Poll::Pending
}

fn write_out(i: &mut Inner, stream: &Stream, cx: &mut Context<'_>) -> io::Result<()> {
    while i.written < i.out.len() {
        match stream.try_write(&i.out[i.written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => i.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match stream.poll_write_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => break,
            },
            Err(e) => return Err(e),
        }
    }
    if i.written == i.out.len() {
        i.out.clear();
        i.written = 0;
    } else if i.written >= 64 * 1024 {
        // (A busy connection's queue may never empty: what went leaves it.)
        i.out.drain(..i.written);
        i.written = 0;
    }
    if i.queued() < QUEUE_LIMIT {
        i.writers.drain(..).for_each(Waker::wake);
    }
    Ok(())
}

fn read_in(i: &mut Inner, stream: &Stream, cx: &mut Context<'_>) -> io::Result<()> {
    let mut chunk = [0u8; 16384];
    loop {
        match stream.try_read(&mut chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                i.inbuf.extend_from_slice(&chunk[..n]);
                dispatch(i)?;
                if i.read_blocked {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match stream.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(()),
            },
            Err(e) => return Err(e),
        }
    }
}

/// Hands each whole record read to its request (the connection's own: `GET_VALUES_RESULT`).
fn dispatch(i: &mut Inner) -> io::Result<()> {
    let bad = || io::Error::from(io::ErrorKind::InvalidData);
    let mut at = 0;
    let inbuf = std::mem::take(&mut i.inbuf);
    let r = loop {
        let r = match Record::parse(&inbuf[at..]) {
            Ok(Some(r)) => r,
            Ok(None) => break Ok(()),
            Err(_) => break Err(bad()),
        };
        let raw = &inbuf[at..at + r.len];
        at += r.len;
        if r.id == 0 {
            if r.kind == Kind::GetValuesResult {
                let Ok((mpxs, max)) = fulcrum_fcgi::values_result(r.content) else {
                    break Err(bad());
                };
                // (HAProxy's `fcgi_conn_handle_values_result`.)
                i.mpxs = mpxs.unwrap_or(i.mpxs);
                i.limit = max.unwrap_or(i.limit);
                if !i.mpxs {
                    i.limit = 1;
                }
            }
            continue;
        }
        let Some(pos) = i.reqs.iter().position(|q| q.id == r.id) else { continue };
        if r.kind == Kind::EndRequest {
            match fulcrum_fcgi::EndRequest::parse(r.content).map(|e| e.protocol_status) {
                Ok(1) => {
                    i.mpxs = false;
                    i.limit = 1;
                }
                Ok(2 | 3) => {
                    i.closing = true;
                    i.available = false;
                }
                _ => {}
            }
            i.reqs[pos].ended = true;
            if i.reqs[pos].orphan {
                i.reqs.remove(pos);
                i.leave();
                continue;
            }
        }
        let q = &mut i.reqs[pos];
        if q.orphan {
            // More of an answer its transaction no longer reads: the request is aborted.
            if r.kind == Kind::Stdout && !r.content.is_empty() && !q.aborted {
                q.aborted = true;
                fulcrum_fcgi::abort_request(&mut i.out, r.id);
            }
            continue;
        }
        q.raw.extend_from_slice(raw);
        i.read_blocked |= q.raw.len() > RAW_LIMIT;
        if let Some(w) = q.waker.take() {
            w.wake();
        }
    };
    i.inbuf = inbuf;
    i.inbuf.drain(..at);
    r
}

impl Handle {
    fn new(key: u64, id: u16, facts: Facts) -> Handle {
        let (begun, answered) = Default::default();
        Handle { key, id, begun, answered, facts }
    }

    pub fn id(&self) -> u16 {
        self.id
    }

    /// The transaction has the whole answer (see [`Handle::answered`]'s field).
    pub fn set_answered(&self, yes: bool) {
        self.answered.set(yes);
    }

    pub fn sni(&self) -> Option<&str> {
        self.facts.2.as_deref()
    }

    pub fn tls_facts(&self) -> Option<&crate::tls::facts::Snapshot> {
        self.facts.1.as_deref()
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.facts.0.as_fd()
    }

    /// Queues `records` (whole ones, this request's) for the connection: `Ok(true)` while the
    /// connection's queue has room for more.
    pub fn queue(&self, records: &mut Vec<u8>, begins: bool) -> io::Result<bool> {
        self.begun.set(self.begun.get() | begins);
        let r = with(self.key, |i| {
            if let Some(k) = i.failed {
                return Err(io::Error::from(k));
            }
            i.out.append(records);
            i.wake_driver();
            Ok(i.queued() < QUEUE_LIMIT)
        });
        r.unwrap_or(Err(io::ErrorKind::ConnectionAborted.into()))
    }

    /// Ready when the connection's queue has room (or it failed).
    pub fn poll_writable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = with(self.key, |i| {
            if let Some(k) = i.failed {
                return Poll::Ready(Err(io::Error::from(k)));
            }
            if i.queued() < QUEUE_LIMIT {
                return Poll::Ready(Ok(()));
            }
            if !i.writers.iter().any(|w| w.will_wake(cx.waker())) {
                i.writers.push(cx.waker().clone());
            }
            Poll::Pending
        });
        r.unwrap_or(Poll::Ready(Err(io::ErrorKind::ConnectionAborted.into())))
    }

    /// Moves this request's records read so far to `into`; `Err` when the connection failed
    /// and none are left.
    pub fn poll_records(
        &self,
        cx: &mut Context<'_>,
        into: &mut Vec<u8>,
    ) -> Poll<Result<(), io::ErrorKind>> {
        let r = with(self.key, |i| {
            let Some(q) = i.reqs.iter_mut().find(|q| q.id == self.id) else {
                return Poll::Ready(Err(io::ErrorKind::ConnectionAborted));
            };
            if !q.raw.is_empty() {
                into.append(&mut q.raw);
                if i.read_blocked {
                    i.read_blocked = false;
                    i.wake_driver();
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(k) = i.failed {
                return Poll::Ready(Err(k));
            }
            if !q.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                q.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        });
        r.unwrap_or(Poll::Ready(Err(io::ErrorKind::ConnectionAborted)))
    }
}

impl Drop for Handle {
    /// The request leaves its connection: ended, or counted until the application ends it
    /// (aborted at once unless its answer was whole). The connection may then serve others.
    fn drop(&mut self) {
        let (begun, answered) = (self.begun.get(), self.answered.get());
        let gone = with(self.key, |i| {
            let Some(pos) = i.reqs.iter().position(|q| q.id == self.id) else { return false };
            if i.reqs[pos].ended || !begun || i.failed.is_some() {
                i.reqs.remove(pos);
            } else {
                let q = &mut i.reqs[pos];
                q.orphan = true;
                q.raw = Vec::new();
                if !answered {
                    q.aborted = true;
                    fulcrum_fcgi::abort_request(&mut i.out, self.id);
                }
            }
            i.leave();
            i.wake_driver();
            // A failed connection whose task ended goes with its last request.
            i.failed.is_some() && i.reqs.iter().all(|q| q.orphan) && i.driver_done
        });
        if gone == Some(true) {
            forget(self.key);
        }
    }
}

/// Ends every shared connection of this worker once its requests are done (shutdown).
pub fn clear() {
    let all = CONNS.with(|r| r.borrow().conns.clone());
    for c in all {
        let mut i = c.inner.borrow_mut();
        i.closing = true;
        i.available = false;
        i.wake_driver();
    }
}
