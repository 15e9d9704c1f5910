//! One connection to an agent: connected to a server of the agent's backend, greeted
//! (HAProxy's HELLO, the agent's HELLO within `timeout hello`), then carrying the worker's
//! NOTIFY frames and their ACKs, matched by stream and frame id, until `timeout idle` passes
//! with nothing to do, the agent says DISCONNECT, breaks the protocol, or stops reading, or its
//! engine's plan is gone. Every frame still waiting when it ends gets the error HAProxy gives
//! (256 + the SPOP status); frames that never left, because the agent could not be reached,
//! wait for the next connection until their processing times out, as in HAProxy.
//!
//! With `async` agreed, a frame's ACK may come on any connection of the engine's agent in this
//! worker (HAProxy's per-thread waiting queue; the HELLO's `engine-id` tells the agent which
//! connections those are): the frames wait in the agent's list, not the connection's. A frame
//! over the agent's frame size goes in fragments (a NOTIFY without FIN, then UNSET frames)
//! when the agent can read them and `option send-frag-payload` is on.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Weak};
use std::time::Duration;

use fulcrum_spop::{self as spop, status};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

use crate::rules::spoe::{Answer, Engine};
use crate::server::Target;

/// A frame to send and who waits for its answer.
pub struct Job {
    /// The NOTIFY frame's messages.
    pub payload: Vec<u8>,
    pub stream_id: u64,
    pub frame_id: u64,
    pub reply: oneshot::Sender<Answer>,
    /// When it was written to the agent (for the processing's log line).
    pub sent: Rc<Cell<Option<std::time::Instant>>>,
}

pub(super) struct Conn {
    /// Its agent: the `async` waiting list and the engine-id.
    agent: std::rc::Weak<super::Agent>,
    queue: RefCell<VecDeque<Job>>,
    wake: Notify,
    inflight: Cell<u32>,
    closed: Cell<bool>,
    /// What both sides agreed on, once the agent said HELLO.
    caps: Cell<Option<spop::Caps>>,
}

trait Io: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

/// Why a connection ended: a SPOP status (0: idle, or its plan gone).
type End = u32;

/// A frame sent, waiting for its ACK: stream id, frame id, who waits, the connection it went
/// on.
pub(super) struct Waiter {
    sid: u64,
    fid: u64,
    reply: oneshot::Sender<Answer>,
    on: std::rc::Weak<Conn>,
}

/// Frames waiting for their ACK: a connection's own, or (`async`) its agent's.
pub(super) type Waiting = Rc<RefCell<Vec<Waiter>>>;

/// What a connection needs of its engine, copied (the task holds no strong reference: a
/// reload that retires the plan retires its connections).
#[derive(Clone, Copy)]
struct Settings {
    caps: spop::Caps,
    hello: Option<Duration>,
    idle: Option<Duration>,
    processing: Option<Duration>,
    max_frame_size: u32,
    max_waiting_frames: u32,
    send_frag: bool,
}

impl Settings {
    fn of(e: &Engine) -> Settings {
        Settings {
            caps: e.caps,
            hello: e.hello,
            idle: e.idle,
            processing: e.processing,
            max_frame_size: e.max_frame_size,
            max_waiting_frames: e.max_waiting_frames,
            send_frag: e.send_frag,
        }
    }
}

/// How long an idle connection without `timeout idle` waits before it looks whether its
/// engine's plan still runs (a reload retires it).
const LOOK_AGAIN: Duration = Duration::from_secs(5);

impl Conn {
    /// A new connection to the agent, tried after `pause`.
    pub(super) fn open_after(
        engine: &Arc<Engine>,
        agent: &Rc<super::Agent>,
        pause: Duration,
    ) -> Rc<Conn> {
        let c = Rc::new(Conn {
            agent: Rc::downgrade(agent),
            queue: RefCell::new(VecDeque::new()),
            wake: Notify::new(),
            inflight: Cell::new(0),
            closed: Cell::new(false),
            caps: Cell::new(None),
        });
        let (task, engine) = (Rc::clone(&c), Arc::downgrade(engine));
        drop(tokio::task::spawn_local(async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            run(task, engine).await
        }));
        c
    }

    pub(super) fn closed(&self) -> bool {
        self.closed.get()
    }

    /// Not greeted yet (connecting, or waiting for the agent's HELLO).
    pub(super) fn pending(&self) -> bool {
        !self.closed.get() && self.caps.get().is_none()
    }

    /// Whether one more frame may go out now.
    pub(super) fn has_room(&self, engine: &Engine) -> bool {
        if self.closed.get() || !self.queue.borrow().is_empty() {
            return false;
        }
        match self.caps.get() {
            // (Greeting: the first frame waits for it.)
            None => self.inflight.get() == 0,
            Some(c) if c.pipelining || c.async_ => self.inflight.get() < engine.max_waiting_frames,
            Some(_) => self.inflight.get() == 0,
        }
    }

    /// Frames queued, not sent yet.
    pub(super) fn queued(&self) -> usize {
        self.queue.borrow().len()
    }

    /// Frames sent, waiting for their ACK.
    pub(super) fn in_flight(&self) -> usize {
        self.inflight.get() as usize
    }

    pub(super) fn load(&self) -> usize {
        self.inflight.get() as usize + self.queue.borrow().len()
    }

    pub(super) fn push(&self, job: Job) {
        self.queue.borrow_mut().push_back(job);
        self.wake.notify_one();
    }

    fn may_send(&self, s: &Settings) -> bool {
        match self.caps.get() {
            Some(c) if c.pipelining || c.async_ => self.inflight.get() < s.max_waiting_frames,
            Some(_) => self.inflight.get() == 0,
            None => false,
        }
    }
}

async fn run(c: Rc<Conn>, engine: Weak<Engine>) {
    let mut waiting = None;
    let settings = engine.upgrade().map(|e| Settings::of(&e));
    let end = match settings {
        Some(s) => session(&c, &s, &engine, &mut waiting).await,
        None => status::NONE,
    };
    c.closed.set(true);
    if let Some(w) = waiting {
        orphans(&c, &w, end, settings.is_some_and(|s| s.processing.is_some()));
    }
    let greeted = c.caps.get().is_some();
    let left: Vec<Job> = c.queue.borrow_mut().drain(..).filter(|j| !j.reply.is_closed()).collect();
    if left.is_empty() {
        return;
    }
    match engine.upgrade() {
        // Frames that never left because the agent could not be reached wait for another
        // connection until their processing times out (error 1), as in HAProxy; without
        // `timeout processing`, the connection's error now rather than a wait without end.
        Some(e) if !greeted && e.processing.is_some() => {
            let next = super::retry(&e);
            left.into_iter().for_each(|j| next.push(j));
        }
        _ => {
            let code = 256 + if end == status::NONE { status::IO } else { end };
            for job in left {
                let _ = job.reply.send(Answer::Failed(code));
            }
        }
    }
}

/// Whether `w` went on `c`.
fn on(w: &Waiter, c: &Conn) -> bool {
    std::ptr::eq(w.on.as_ptr(), c)
}

/// The frames sent on `c` that still wait for their ACK when it ends: with `async`, while
/// another connection of the agent is open and their processing may time out, they wait on
/// (the agent may answer there, as HAProxy lets it); otherwise each gets the connection's
/// error (256 + its status).
#[inline(never)]
fn orphans(c: &Rc<Conn>, waiting: &Waiting, end: End, processing: bool) {
    let shared = c.caps.get().is_some_and(|k| k.async_);
    let another = |a: Rc<super::Agent>| {
        a.conns.borrow().iter().any(|o| !Rc::ptr_eq(o, c) && !o.closed() && !o.pending())
    };
    if shared && processing && c.agent.upgrade().is_some_and(another) {
        return;
    }
    let mine: Vec<Waiter> = waiting.borrow_mut().extract_if(.., |w| on(w, c)).collect();
    for w in mine {
        let _ = w.reply.send(Answer::Failed(256 + end));
    }
}

/// Connects to a server of the agent's backend: the stream and the slot held while it lives.
async fn connect(engine: &Weak<Engine>) -> Result<(Box<dyn Io>, crate::backend::ServerSlot), End> {
    let shared = crate::shared::shared().ok_or(status::IO)?;
    let name = engine.upgrade().map(|e| e.backend.clone()).ok_or(status::IO)?;
    let be = shared.proxies.backend(&name).ok_or(status::IO)?;
    let slot = be.acquire(None, None).await.map_err(|_| status::IO)?;
    let io: Box<dyn Io> = match slot.server().target() {
        Target::Inet(a) => {
            Box::new(tokio::net::TcpStream::connect(a).await.map_err(|_| status::IO)?)
        }
        Target::Unix(p) => {
            Box::new(tokio::net::UnixStream::connect(p).await.map_err(|_| status::IO)?)
        }
        _ => return Err(status::IO),
    };
    Ok((io, slot))
}

/// Writes `bytes` within `limit`: an agent that stops reading ends the connection.
async fn write(io: &mut Box<dyn Io>, bytes: &[u8], limit: Duration) -> Result<(), End> {
    match tokio::time::timeout(limit, io.write_all(bytes)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(status::IO),
        Err(_) => Err(status::TIMEOUT),
    }
}

/// The agent's HELLO within `timeout hello` (the connection's time counted): what both sides
/// agreed on and the agent's frame size.
async fn greet(
    io: &mut Box<dyn Io>,
    buf: &mut Vec<u8>,
    s: &Settings,
    engine_id: &str,
) -> Result<spop::AgentHello, End> {
    let mut out = Vec::with_capacity(256);
    spop::haproxy_hello(&mut out, s.max_frame_size, s.caps, engine_id);
    write(io, &out, s.hello.unwrap_or(Duration::from_secs(3600))).await?;
    let n = read_frame(io, buf, s.max_frame_size).await?;
    let got = match spop::Frame::parse(buf, s.max_frame_size) {
        Ok(Some((f, _))) if f.kind == spop::FRAME_AGENT_DISCONNECT => {
            Err(spop::agent_disconnect(&f).map_or(status::INVALID, |d| d.status))
        }
        Ok(Some((f, _))) => spop::agent_hello(&f, s.max_frame_size),
        _ => Err(status::INVALID),
    };
    buf.drain(..n);
    got
}

async fn session(
    c: &Rc<Conn>,
    s: &Settings,
    engine: &Weak<Engine>,
    waiting_out: &mut Option<Waiting>,
) -> End {
    let hello = s.hello.unwrap_or(Duration::from_secs(3600));
    let deadline = tokio::time::Instant::now() + hello;
    let Ok(Ok((mut io, _slot))) = tokio::time::timeout_at(deadline, connect(engine)).await else {
        return status::IO;
    };
    let mut buf = Vec::with_capacity(1024);
    let id = c.agent.upgrade().map(|a| a.engine_id.clone()).unwrap_or_default();
    let agent = match tokio::time::timeout_at(deadline, greet(&mut io, &mut buf, s, &id)).await {
        Err(_) => return disconnect(c, &mut io, status::TIMEOUT).await,
        Ok(Err(code)) => return disconnect(c, &mut io, code).await,
        Ok(Ok(h)) => h,
    };
    let caps = spop::Caps {
        pipelining: agent.caps.pipelining && s.caps.pipelining,
        async_: agent.caps.async_ && s.caps.async_,
        // (What the agent can read: HAProxy's fragments go out only when it can.)
        fragmentation: agent.caps.fragmentation && s.send_frag,
    };
    c.caps.set(Some(caps));
    let waiting = match c.agent.upgrade() {
        Some(a) if caps.async_ => Rc::clone(&a.waiting),
        _ => Waiting::default(),
    };
    *waiting_out = Some(Rc::clone(&waiting));
    let (max, mut out) = (agent.max_frame_size, Vec::with_capacity(1024));
    // A frame's write may take what its processing may.
    let limit = s.processing.unwrap_or(hello);
    let mut idle_since: Option<tokio::time::Instant> = None;
    loop {
        while c.may_send(s) {
            let Some(job) = c.queue.borrow_mut().pop_front() else { break };
            if job.reply.is_closed() {
                continue;
            }
            out.clear();
            if let Err(code) = notify(&mut out, &job, max, caps, s.send_frag) {
                let _ = job.reply.send(Answer::Failed(code));
                continue;
            }
            job.sent.set(Some(std::time::Instant::now()));
            let on = Rc::downgrade(c);
            let (sid, fid) = (job.stream_id, job.frame_id);
            waiting.borrow_mut().push(Waiter { sid, fid, reply: job.reply, on });
            c.inflight.set(c.inflight.get() + 1);
            if let Err(code) = write(&mut io, &out, limit).await {
                return disconnect(c, &mut io, code).await;
            }
        }
        // Those that stopped waiting (their processing timed out) free their place.
        let mine = {
            let mut w = waiting.borrow_mut();
            w.retain(|w| !(on(w, c) && w.reply.is_closed()));
            w.iter().filter(|w| on(w, c)).count()
        };
        c.inflight.set(mine as u32);
        let idle = mine == 0 && c.queue.borrow().is_empty();
        idle_since = if idle { idle_since.or(Some(tokio::time::Instant::now())) } else { None };
        let nap = match (idle, s.idle) {
            (true, Some(t)) => t.min(LOOK_AGAIN),
            (true, None) => LOOK_AGAIN,
            // (A frame waiting: look again at least each processing timeout.)
            (false, _) => s.processing.unwrap_or(LOOK_AGAIN),
        };
        tokio::select! {
            _ = c.wake.notified() => {}
            r = read_frame(&mut io, &mut buf, max) => match r {
                Err(code) => return disconnect(c, &mut io, code).await,
                Ok(n) => {
                    let sync = !caps.pipelining && !caps.async_;
                    if let Err(code) = on_frame(&buf[..n], max, c, &waiting, sync) {
                        return disconnect(c, &mut io, code).await;
                    }
                    buf.drain(..n);
                }
            },
            _ = tokio::time::sleep(nap) => {
                // Idle for `timeout idle`, or the plan is gone: the connection ends.
                let idle = c.inflight.get() == 0 && c.queue.borrow().is_empty();
                let timed_out = s.idle.zip(idle_since).is_some_and(|(t, at)| at.elapsed() >= t);
                if idle && (timed_out || engine.strong_count() == 0) {
                    return disconnect(c, &mut io, status::NONE).await;
                }
            }
        }
    }
}

/// `job`'s NOTIFY frame in `out`: one frame, or over the agent's frame size `max` fragments of
/// `max` less HAProxy's 32 reserved bytes (a NOTIFY without FIN, UNSET frames, the last with
/// FIN) when the agent reads fragments. Else the error its processing ends with: 3 ("too big")
/// with `no option send-frag-payload`, 259 (the connection's "too big") when the agent cannot
/// read fragments, as HAProxy 2.6 was seen to give.
#[inline(never)]
fn notify(out: &mut Vec<u8>, job: &Job, max: u32, caps: spop::Caps, frag: bool) -> Result<(), u32> {
    let (sid, fid) = (job.stream_id, job.frame_id);
    let at = spop::start_frame(out, spop::FRAME_NOTIFY, spop::FLAG_FIN, sid, fid);
    if out.len() - at - 4 + job.payload.len() <= max as usize {
        out.extend_from_slice(&job.payload);
        spop::end_frame(out, at);
        return Ok(());
    }
    out.truncate(at);
    if !frag {
        return Err(status::TOO_BIG);
    }
    if !caps.fragmentation {
        return Err(256 + status::TOO_BIG);
    }
    let room = max.saturating_sub(spop::FRAME_HDR_SIZE).max(1) as usize;
    let (mut kind, mut chunks) = (spop::FRAME_NOTIFY, job.payload.chunks(room).peekable());
    while let Some(chunk) = chunks.next() {
        let flags = if chunks.peek().is_none() { spop::FLAG_FIN } else { 0 };
        let at = spop::start_frame(out, kind, flags, sid, fid);
        out.extend_from_slice(chunk);
        spop::end_frame(out, at);
        kind = spop::FRAME_UNSET;
    }
    Ok(())
}

/// An agent's frame read on `c`: an ACK answers a frame waiting (with `async`, one sent on any
/// connection of the agent: that one is told its place is free), a DISCONNECT ends, other
/// frames are ignored, as HAProxy ignores them. `sync`: without pipelining, an ACK for no frame
/// while one of `c`'s waits breaks the exchange (HAProxy's "frame-id not found").
fn on_frame(
    bytes: &[u8],
    max: u32,
    c: &Rc<Conn>,
    waiting: &Waiting,
    sync: bool,
) -> Result<(), End> {
    let Ok(Some((f, _))) = spop::Frame::parse(bytes, max) else { return Ok(()) };
    match f.kind {
        spop::FRAME_ACK => {
            if f.flags & spop::FLAG_FIN == 0 {
                return Err(status::FRAG_NOT_SUPPORTED);
            }
            let mut list = waiting.borrow_mut();
            let found = list.iter().position(|w| w.sid == f.stream_id && w.fid == f.frame_id);
            let Some(i) = found else {
                // (An ACK for a frame whose processing timed out.)
                return match sync && list.iter().any(|w| on(w, c)) {
                    true => Err(status::FRAME_ID_NOT_FOUND),
                    false => Ok(()),
                };
            };
            let w = list.swap_remove(i);
            drop(list);
            let _ = w.reply.send(Answer::Ack(f.payload.to_vec()));
            match w.on.upgrade() {
                Some(o) if !Rc::ptr_eq(&o, c) => {
                    o.inflight.set(o.inflight.get().saturating_sub(1));
                    o.wake.notify_one();
                }
                _ => c.inflight.set(c.inflight.get().saturating_sub(1)),
            }
            Ok(())
        }
        spop::FRAME_AGENT_DISCONNECT => {
            Err(spop::agent_disconnect(&f).map_or(status::INVALID, |d| d.status))
        }
        _ => Ok(()),
    }
}

/// Reads until one whole frame is at the start of `buf`: its length (prefix included).
async fn read_frame(io: &mut Box<dyn Io>, buf: &mut Vec<u8>, max: u32) -> Result<usize, End> {
    loop {
        match spop::Frame::parse(buf, max) {
            Ok(Some((_, n))) => return Ok(n),
            Ok(None) => {}
            // (Too short for its metadata: whole all the same, to be ignored.)
            Err(status::INVALID) if buf.len() >= 4 => {
                let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if buf.len() >= 4 + len {
                    return Ok(4 + len);
                }
            }
            Err(code) => return Err(code),
        }
        let mut chunk = [0u8; 4096];
        match io.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(status::IO),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// HAProxy's DISCONNECT with `code`, then the end (the code). The connection takes no new
/// frame from now on.
async fn disconnect(c: &Conn, io: &mut Box<dyn Io>, code: End) -> End {
    c.closed.set(true);
    if code != status::IO {
        let mut out = Vec::with_capacity(64);
        spop::haproxy_disconnect(&mut out, code);
        let _ = tokio::time::timeout(Duration::from_millis(100), io.write_all(&out)).await;
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(payload: Vec<u8>) -> Job {
        let (reply, _) = oneshot::channel();
        Job { payload, stream_id: 7, frame_id: 300, reply, sent: Rc::default() }
    }

    /// The frames in `out`: type, flags, payload.
    fn frames(mut out: &[u8], max: u32) -> Vec<(u8, u32, Vec<u8>)> {
        let mut all = Vec::new();
        while let Ok(Some((f, n))) = spop::Frame::parse(out, max) {
            assert_eq!((f.stream_id, f.frame_id), (7, 300));
            all.push((f.kind, f.flags, f.payload.to_vec()));
            out = &out[n..];
        }
        assert!(out.is_empty(), "whole frames only");
        all
    }

    #[test]
    fn a_question_over_the_frame_size_goes_in_fragments_only_to_an_agent_that_reads_them() {
        let caps = |fragmentation| spop::Caps { pipelining: true, async_: true, fragmentation };
        let small: Vec<u8> = (0..200u8).collect();
        let mut out = Vec::new();
        assert_eq!(notify(&mut out, &job(small.clone()), 256, caps(false), true), Ok(()));
        assert_eq!(frames(&out, 256), [(spop::FRAME_NOTIFY, spop::FLAG_FIN, small)]);

        let big: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        out.clear();
        assert_eq!(notify(&mut out, &job(big.clone()), 256, caps(true), true), Ok(()));
        let got = frames(&out, 256);
        // 224 bytes a frame (HAProxy's 32 reserved): 5 frames, NOTIFY then UNSET, FIN last.
        let kinds: Vec<(u8, u32)> = got.iter().map(|(k, f, _)| (*k, *f)).collect();
        let (n, u, fin) = (spop::FRAME_NOTIFY, spop::FRAME_UNSET, spop::FLAG_FIN);
        assert_eq!(kinds, [(n, 0), (u, 0), (u, 0), (u, 0), (u, fin)]);
        assert!(got.iter().all(|(_, _, p)| p.len() <= 224));
        assert_eq!(got.into_iter().flat_map(|(_, _, p)| p).collect::<Vec<u8>>(), big);

        // An agent that cannot read fragments: the connection's "too big"; without
        // `option send-frag-payload`, the processing's.
        out.clear();
        assert_eq!(notify(&mut out, &job(big.clone()), 256, caps(false), true), Err(259));
        assert_eq!(notify(&mut out, &job(big), 256, caps(true), false), Err(3));
        assert!(out.is_empty());
    }
}
