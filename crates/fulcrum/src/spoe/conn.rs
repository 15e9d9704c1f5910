//! One connection to an agent: connected to a server of the agent's backend, greeted
//! (HAProxy's HELLO, the agent's HELLO within `timeout hello`), then carrying the worker's
//! NOTIFY frames and their ACKs, matched by stream and frame id, until `timeout idle` passes
//! with nothing to do, the agent says DISCONNECT, breaks the protocol, or stops reading, or its
//! engine's plan is gone. Every frame still waiting when it ends gets the error HAProxy gives
//! (256 + the SPOP status); frames that never left, because the agent could not be reached,
//! wait for the next connection until their processing times out, as in HAProxy.

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

/// Frames waiting for their ACK: stream id, frame id, who waits.
type Waiting = Vec<(u64, u64, oneshot::Sender<Answer>)>;

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
        }
    }
}

/// How long an idle connection without `timeout idle` waits before it looks whether its
/// engine's plan still runs (a reload retires it).
const LOOK_AGAIN: Duration = Duration::from_secs(5);

impl Conn {
    /// A new connection to the agent, tried after `pause`.
    pub(super) fn open_after(engine: &Arc<Engine>, pause: Duration) -> Rc<Conn> {
        let c = Rc::new(Conn {
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
            Some(c) if c.pipelining => self.inflight.get() < engine.max_waiting_frames,
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
            Some(c) if c.pipelining => self.inflight.get() < s.max_waiting_frames,
            Some(_) => self.inflight.get() == 0,
            None => false,
        }
    }
}

async fn run(c: Rc<Conn>, engine: Weak<Engine>) {
    let mut waiting = Waiting::new();
    let settings = engine.upgrade().map(|e| Settings::of(&e));
    let end = match settings {
        Some(s) => session(&c, &s, &engine, &mut waiting).await,
        None => status::NONE,
    };
    c.closed.set(true);
    for (_, _, reply) in waiting.drain(..) {
        let _ = reply.send(Answer::Failed(256 + end));
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
) -> Result<spop::AgentHello, End> {
    let mut out = Vec::with_capacity(256);
    spop::haproxy_hello(&mut out, s.max_frame_size, s.caps, "");
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

async fn session(c: &Conn, s: &Settings, engine: &Weak<Engine>, waiting: &mut Waiting) -> End {
    let hello = s.hello.unwrap_or(Duration::from_secs(3600));
    let deadline = tokio::time::Instant::now() + hello;
    let Ok(Ok((mut io, _slot))) = tokio::time::timeout_at(deadline, connect(engine)).await else {
        return status::IO;
    };
    let mut buf = Vec::with_capacity(1024);
    let agent = match tokio::time::timeout_at(deadline, greet(&mut io, &mut buf, s)).await {
        Err(_) => return disconnect(c, &mut io, status::TIMEOUT).await,
        Ok(Err(code)) => return disconnect(c, &mut io, code).await,
        Ok(Ok(h)) => h,
    };
    let caps = spop::Caps {
        pipelining: agent.caps.pipelining && s.caps.pipelining,
        async_: false,
        fragmentation: false,
    };
    c.caps.set(Some(caps));
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
            let (sid, fid) = (job.stream_id, job.frame_id);
            let at = spop::start_frame(&mut out, spop::FRAME_NOTIFY, spop::FLAG_FIN, sid, fid);
            out.extend_from_slice(&job.payload);
            spop::end_frame(&mut out, at);
            if out.len() - 4 > max as usize {
                let _ = job.reply.send(Answer::Failed(3));
                continue;
            }
            job.sent.set(Some(std::time::Instant::now()));
            waiting.push((sid, fid, job.reply));
            c.inflight.set(waiting.len() as u32);
            if let Err(code) = write(&mut io, &out, limit).await {
                return disconnect(c, &mut io, code).await;
            }
        }
        // Those that stopped waiting (their processing timed out) free their place.
        waiting.retain(|(_, _, r)| !r.is_closed());
        c.inflight.set(waiting.len() as u32);
        let idle = waiting.is_empty() && c.queue.borrow().is_empty();
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
                    let sync = !caps.pipelining;
                    if let Err(code) = on_frame(&buf[..n], max, waiting, sync) {
                        return disconnect(c, &mut io, code).await;
                    }
                    buf.drain(..n);
                    c.inflight.set(waiting.len() as u32);
                }
            },
            _ = tokio::time::sleep(nap) => {
                // Idle for `timeout idle`, or the plan is gone: the connection ends.
                let idle = waiting.is_empty() && c.queue.borrow().is_empty();
                let timed_out = s.idle.zip(idle_since).is_some_and(|(t, at)| at.elapsed() >= t);
                if idle && (timed_out || engine.strong_count() == 0) {
                    return disconnect(c, &mut io, status::NONE).await;
                }
            }
        }
    }
}

/// An agent's frame while frames are waiting: an ACK answers one, a DISCONNECT ends, other
/// frames are ignored, as HAProxy ignores them. `sync`: without pipelining, an ACK for no frame
/// while one waits breaks the exchange (HAProxy's "frame-id not found").
fn on_frame(bytes: &[u8], max: u32, waiting: &mut Waiting, sync: bool) -> Result<(), End> {
    let Ok(Some((f, _))) = spop::Frame::parse(bytes, max) else { return Ok(()) };
    match f.kind {
        spop::FRAME_ACK => {
            if f.flags & spop::FLAG_FIN == 0 {
                return Err(status::FRAG_NOT_SUPPORTED);
            }
            let found =
                waiting.iter().position(|(s, fr, _)| *s == f.stream_id && *fr == f.frame_id);
            match found {
                Some(i) => {
                    let (_, _, reply) = waiting.swap_remove(i);
                    let _ = reply.send(Answer::Ack(f.payload.to_vec()));
                }
                None if sync && !waiting.is_empty() => return Err(status::FRAME_ID_NOT_FOUND),
                // (An ACK for a frame whose processing timed out.)
                None => {}
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
