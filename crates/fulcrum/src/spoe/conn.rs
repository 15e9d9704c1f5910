//! One connection to an agent: connected to a server of the agent's backend, greeted
//! (HAProxy's HELLO, the agent's HELLO within `timeout hello`), then carrying the worker's
//! NOTIFY frames and their ACKs, matched by stream and frame id, until `timeout idle` passes
//! with nothing to do, the agent says DISCONNECT, or it breaks the protocol. Every frame still
//! waiting when it ends gets the error HAProxy gives (256 + the SPOP status).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
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

/// Why a connection ended: a SPOP status (0: it was idle).
type End = u32;

impl Conn {
    /// A new connection to the agent, tried after `pause`.
    pub(super) fn open_after(engine: Arc<Engine>, pause: Duration) -> Rc<Conn> {
        let c = Rc::new(Conn {
            queue: RefCell::new(VecDeque::new()),
            wake: Notify::new(),
            inflight: Cell::new(0),
            closed: Cell::new(false),
            caps: Cell::new(None),
        });
        let task = Rc::clone(&c);
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

    pub(super) fn load(&self) -> usize {
        self.inflight.get() as usize + self.queue.borrow().len()
    }

    pub(super) fn push(&self, job: Job) {
        self.queue.borrow_mut().push_back(job);
        self.wake.notify_one();
    }

    fn may_send(&self, engine: &Engine) -> bool {
        match self.caps.get() {
            Some(c) if c.pipelining => self.inflight.get() < engine.max_waiting_frames,
            Some(_) => self.inflight.get() == 0,
            None => false,
        }
    }
}

async fn run(c: Rc<Conn>, engine: Arc<Engine>) {
    let mut waiting: Vec<(u64, u64, oneshot::Sender<Answer>)> = Vec::new();
    let end = session(&c, &engine, &mut waiting).await;
    c.closed.set(true);
    let code = 256 + if end == status::NONE { status::IO } else { end };
    for (_, _, reply) in waiting.drain(..) {
        let _ = reply.send(Answer::Failed(code));
    }
    let greeted = c.caps.get().is_some();
    for job in c.queue.borrow_mut().drain(..) {
        // A frame that never left because no agent could be reached: as in HAProxy, it
        // waits for another connection until its processing times out (error 1); without
        // `timeout processing`, the connection's error now rather than a wait without end.
        if job.reply.is_closed() {
            continue;
        }
        if !greeted && engine.processing.is_some() {
            if let Some(next) = super::retry(&engine) {
                next.push(job);
                continue;
            }
            drop(job);
            continue;
        }
        let _ = job.reply.send(Answer::Failed(code));
    }
}

/// Connects to a server of the agent's backend: the stream and the slot held while it lives.
async fn connect(engine: &Engine) -> Result<(Box<dyn Io>, crate::backend::ServerSlot), End> {
    let shared = crate::shared::shared().ok_or(status::IO)?;
    let be = shared.proxies.backend(&engine.backend).ok_or(status::IO)?;
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

async fn session(
    c: &Conn,
    engine: &Engine,
    waiting: &mut Vec<(u64, u64, oneshot::Sender<Answer>)>,
) -> End {
    let hello = engine.hello.unwrap_or(Duration::from_secs(3600));
    let deadline = tokio::time::Instant::now() + hello;
    let Ok(Ok((mut io, _slot))) =
        tokio::time::timeout_at(deadline, connect(engine)).await.map_err(|_| ())
    else {
        return status::IO;
    };
    let mut out = Vec::with_capacity(256);
    spop::haproxy_hello(&mut out, engine.max_frame_size, engine.caps, "");
    if io.write_all(&out).await.is_err() {
        return status::IO;
    }
    let mut buf = Vec::with_capacity(1024);
    let agent = match tokio::time::timeout_at(deadline, read_frame(&mut io, &mut buf, engine)).await
    {
        Err(_) => return disconnect(&mut io, status::TIMEOUT).await,
        Ok(Err(code)) => return disconnect(&mut io, code).await,
        Ok(Ok(n)) => {
            let got = spop::Frame::parse(&buf, engine.max_frame_size)
                .ok()
                .flatten()
                .ok_or(status::INVALID)
                .and_then(|(f, _)| match f.kind {
                    spop::FRAME_AGENT_DISCONNECT => {
                        Err(spop::agent_disconnect(&f).map_or(status::INVALID, |d| d.status))
                    }
                    _ => spop::agent_hello(&f, engine.max_frame_size),
                });
            buf.drain(..n);
            match got {
                Ok(h) => h,
                Err(code) => return disconnect(&mut io, code).await,
            }
        }
    };
    let caps = spop::Caps {
        pipelining: agent.caps.pipelining && engine.caps.pipelining,
        async_: agent.caps.async_ && engine.caps.async_,
        fragmentation: false,
    };
    c.caps.set(Some(caps));
    let max = agent.max_frame_size;
    loop {
        // Frames the agent may take now.
        while c.may_send(engine) {
            let Some(job) = c.queue.borrow_mut().pop_front() else { break };
            if job.reply.is_closed() {
                continue;
            }
            out.clear();
            let at = spop::start_frame(
                &mut out,
                spop::FRAME_NOTIFY,
                spop::FLAG_FIN,
                job.stream_id,
                job.frame_id,
            );
            out.extend_from_slice(&job.payload);
            spop::end_frame(&mut out, at);
            if out.len() - 4 > max as usize {
                let _ = job.reply.send(Answer::Failed(3));
                continue;
            }
            if io.write_all(&out).await.is_err() {
                waiting.push((job.stream_id, job.frame_id, job.reply));
                return status::IO;
            }
            waiting.push((job.stream_id, job.frame_id, job.reply));
            c.inflight.set(waiting.len() as u32);
        }
        // Those that stopped waiting (their processing timed out) free their place.
        waiting.retain(|(_, _, r)| !r.is_closed());
        c.inflight.set(waiting.len() as u32);
        let idle = waiting.is_empty() && c.queue.borrow().is_empty();
        let nap = match (idle, engine.idle) {
            (true, Some(t)) => t,
            (true, None) => Duration::from_secs(3600),
            // (A frame waiting: look again at least each processing timeout.)
            (false, _) => engine.processing.unwrap_or(Duration::from_secs(1)),
        };
        tokio::select! {
            _ = c.wake.notified() => {}
            r = read_frame(&mut io, &mut buf, engine) => match r {
                Err(code) => return disconnect(&mut io, code).await,
                Ok(n) => {
                    if let Err(code) = on_frame(&buf[..n], engine, waiting) {
                        return disconnect(&mut io, code).await;
                    }
                    buf.drain(..n);
                    c.inflight.set(waiting.len() as u32);
                }
            },
            _ = tokio::time::sleep(nap) => {
                if idle && engine.idle.is_some() {
                    c.closed.set(true);
                    let _ = disconnect(&mut io, status::NONE).await;
                    return status::NONE;
                }
            }
        }
    }
}

/// An agent's frame while frames are waiting: an ACK answers one, a DISCONNECT ends.
fn on_frame(
    bytes: &[u8],
    engine: &Engine,
    waiting: &mut Vec<(u64, u64, oneshot::Sender<Answer>)>,
) -> Result<(), End> {
    let (f, _) = spop::Frame::parse(bytes, engine.max_frame_size)?.ok_or(status::INVALID)?;
    match f.kind {
        spop::FRAME_ACK => {
            if f.flags & spop::FLAG_FIN == 0 {
                return Err(status::FRAG_NOT_SUPPORTED);
            }
            // (An ACK for a frame no one waits for any more is dropped.)
            if let Some(i) =
                waiting.iter().position(|(s, fr, _)| *s == f.stream_id && *fr == f.frame_id)
            {
                let (_, _, reply) = waiting.swap_remove(i);
                let _ = reply.send(Answer::Ack(f.payload.to_vec()));
            }
            Ok(())
        }
        spop::FRAME_AGENT_DISCONNECT => {
            Err(spop::agent_disconnect(&f).map_or(status::INVALID, |d| d.status.max(status::IO)))
        }
        _ => Err(status::INVALID),
    }
}

/// Reads until one whole frame is at the start of `buf`: its length (prefix included).
async fn read_frame(
    io: &mut Box<dyn Io>,
    buf: &mut Vec<u8>,
    engine: &Engine,
) -> Result<usize, End> {
    loop {
        match spop::Frame::parse(buf, engine.max_frame_size) {
            Ok(Some((_, n))) => return Ok(n),
            Ok(None) => {}
            Err(code) => return Err(code),
        }
        let mut chunk = [0u8; 4096];
        match io.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(status::IO),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// HAProxy's DISCONNECT with `code`, then the end (the code).
async fn disconnect(io: &mut Box<dyn Io>, code: End) -> End {
    if code != status::IO {
        let mut out = Vec::with_capacity(64);
        spop::haproxy_disconnect(&mut out, code);
        let _ = tokio::time::timeout(Duration::from_millis(100), io.write_all(&out)).await;
    }
    code
}
