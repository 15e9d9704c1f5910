//! SPOE agents at run time (HAProxy's SPOE applets): each worker keeps its own connections to
//! each engine's agent, opened on demand to a server of the agent's `mode tcp` backend
//! (chosen by its balancer), greeted with HAProxy's HELLO and kept for later frames until
//! `timeout idle`. [`ask`] sends a transaction's NOTIFY frame on a connection with room (one
//! frame at a time, or up to `max-waiting-frames` when both sides agreed on pipelining) and
//! waits for its ACK until `timeout processing`: the answer, or the error HAProxy's
//! `set-on-error` would give. A dead, slow or garbling agent ends in an error, never in a
//! wait beyond the processing timeout.
//!
//! No lock and no counter shared between workers: a worker's connections are its own
//! (`worker` slot `Spoe`), like HAProxy's per-thread applets.
//!
//! Must not touch: the transaction (what is sent and what an answer does are
//! `rules::spoe`'s), server state.

mod conn;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::rules::sample::{Ctx, Vars};
use crate::rules::spoe::{Answer, Engine};
use crate::worker::{Id, Slot};

pub use conn::Job;

/// Each engine (of the plans this worker serves) with its agent.
type Agents = Vec<(Weak<Engine>, Rc<Agent>)>;

/// This worker's agents.
static AGENTS: Slot<RefCell<Agents>> = Slot::new(Id::Spoe, || RefCell::new(Vec::new()));

/// One engine's agent as this worker sees it.
struct Agent {
    conns: RefCell<Vec<Rc<conn::Conn>>>,
    next_stream: Cell<u64>,
    /// This worker's `engine-id` for the agent (HAProxy's per-thread UUID), and the frames
    /// waiting for an ACK that may come on any of its connections (`async`).
    engine_id: String,
    waiting: conn::Waiting,

    /// Connections opened (`maxconnrate`) and errors (`maxerrrate`) in the current second.
    opened: Cell<(u64, u32)>,
    errors: Cell<(u64, u32)>,
}

fn second() -> u64 {
    crate::clock::wall().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Counts one in a per-second counter; the count so far this second.
fn bump(c: &Cell<(u64, u32)>) -> u32 {
    let now = second();
    let (at, n) = c.get();
    let n = if at == now { n + 1 } else { 1 };
    c.set((now, n));
    n
}

fn this_second(c: &Cell<(u64, u32)>) -> u32 {
    let (at, n) = c.get();
    if at == second() {
        n
    } else {
        0
    }
}

/// This worker's agent of `engine`, if it has one already.
fn agent_for_ref(engine: &Engine) -> Option<Rc<Agent>> {
    AGENTS.with(|a| {
        let list = a.borrow();
        let found = list.iter().find(|(e, _)| std::ptr::eq(e.as_ptr(), engine));
        found.map(|(_, ag)| Rc::clone(ag))
    })
}

fn agent_for(engine: &Arc<Engine>) -> Rc<Agent> {
    match agent_for_ref(engine) {
        Some(ag) => ag,
        None => new_agent(engine),
    }
}

/// This worker's first question to `engine`'s agent: its record (once per engine and worker).
#[cold]
#[inline(never)]
fn new_agent(engine: &Arc<Engine>) -> Rc<Agent> {
    AGENTS.with(|a| {
        let mut list = a.borrow_mut();
        // (Engines of plans gone: their agents go too.)
        list.retain(|(e, _)| e.strong_count() > 0);
        let ag = Rc::new(Agent {
            conns: RefCell::new(Vec::new()),
            next_stream: Cell::new(1),
            engine_id: String::from_utf8_lossy(&crate::random::uuid4()).into_owned(),
            waiting: conn::Waiting::default(),
            opened: Cell::new((0, 0)),
            errors: Cell::new((0, 0)),
        });
        list.push((Arc::downgrade(engine), Rc::clone(&ag)));
        ag
    })
}

/// Sends one NOTIFY frame's messages (`payload`, those of `which`) to the engine's agent, as
/// frame `frame_id` of stream `stream_id` (`None`: one of this worker's own numbers), and
/// waits for its ACK, at most `timeout processing` from now. The agent's log gets HAProxy's
/// line for the processing.
pub async fn ask(
    engine: &Arc<Engine>,
    which: &[usize],
    payload: Vec<u8>,
    stream_id: Option<u64>,
    frame_id: u64,
) -> Answer {
    let agent = agent_for(engine);
    if engine.max_err_rate > 0 && this_second(&agent.errors) >= engine.max_err_rate {
        // HAProxy skips the processing while the agent errs too often.
        return Answer::Skipped;
    }
    let stream_id = stream_id.unwrap_or_else(|| {
        let n = agent.next_stream.get();
        agent.next_stream.set(n.wrapping_add(1));
        n
    });
    let start = std::time::Instant::now();
    let (tx, rx) = oneshot::channel();
    let sent = Rc::new(Cell::new(None));
    let job = Job { payload, stream_id, frame_id, reply: tx, sent: Rc::clone(&sent) };
    let answer = match pick(engine, &agent) {
        Some(conn) => {
            conn.push(job);
            let wait = engine.processing.unwrap_or(Duration::from_secs(3600));
            match tokio::time::timeout(wait, rx).await {
                Ok(Ok(a)) => a,
                Ok(Err(_)) => Answer::Failed(256 + fulcrum_spop::status::IO),
                Err(_) => Answer::Failed(1),
            }
        }
        // No connection and none may be made (no server up, `maxconnrate`): HAProxy's
        // resource error.
        None => Answer::Failed(2),
    };
    processed(engine, which, stream_id, &answer, (start, sent.get()));
    answer
}

/// A processing ended with `answer` (HAProxy's `spoe_stop_processing`): counted, and its log
/// line written. For one that failed before anything was sent (its messages too big: error
/// 3), the caller says so here.
pub fn processed(
    engine: &Engine,
    which: &[usize],
    stream_id: u64,
    answer: &Answer,
    times: (std::time::Instant, Option<std::time::Instant>),
) {
    let agent = agent_for_ref(engine);
    if matches!(answer, Answer::Failed(_)) {
        if let Some(a) = &agent {
            bump(&a.errors);
        }
        engine.failed.fetch_add(1, Relaxed);
    }
    engine.processed.fetch_add(1, Relaxed);
    if engine.logger.is_some() {
        log_line(engine, agent.as_deref(), which, stream_id, answer, times);
    }
}

/// HAProxy's line for a processing (`spoe_process_event`, `spoe_process_group`): `notice`,
/// or `warning` with the error's code; with `option dontlog-normal`, failures only. Times
/// in milliseconds (-1: the step was not reached): the request's encoding (done before it is
/// queued: 0), the wait to be sent, the wait for the ACK, its handling (0), the whole; then
/// this worker's idle and open connections to the agent and its frames queued and waiting
/// (HAProxy counts these for the process), the engine's errors and processings.
#[cold]
#[inline(never)]
fn log_line(
    engine: &Engine,
    agent: Option<&Agent>,
    which: &[usize],
    stream_id: u64,
    answer: &Answer,
    (start, sent): (std::time::Instant, Option<std::time::Instant>),
) {
    let Some(logger) = &engine.logger else { return };
    let code = match answer {
        Answer::Failed(c) => *c,
        _ => 0,
    };
    if code == 0 && engine.dontlog_normal {
        return;
    }
    let ms = |d: Duration| d.as_millis() as i64;
    let now = std::time::Instant::now();
    let queue = sent.map_or(-1, |s| ms(s.duration_since(start)));
    let (waiting, response) = match (answer, sent) {
        (Answer::Ack(_), Some(s)) => (ms(now.duration_since(s)), 0),
        _ => (-1, -1),
    };
    let none = RefCell::new(Vec::new());
    let conns = agent.map_or(&none, |a| &a.conns).borrow();
    let idles = conns.iter().filter(|c| !c.closed() && c.load() == 0).count();
    let open = conns.iter().filter(|c| !c.closed()).count();
    let queued: usize = conns.iter().map(|c| c.queued()).sum();
    let in_flight: usize = conns.iter().map(|c| c.in_flight()).sum();
    let msg = format!(
        "SPOE: [{}] <{}> sid={stream_id} st={code} 0/{queue}/{waiting}/{response}/{} {idles}/{open} {queued}/{in_flight} {}/{}",
        engine.agent,
        engine.label(which),
        ms(now.duration_since(start)),
        engine.failed.load(Relaxed),
        engine.processed.load(Relaxed),
    );
    let level = if code == 0 { NOTICE } else { WARNING };
    logger.send(level, &msg);
}

/// Syslog levels of the SPOE's lines.
const WARNING: u8 = 4;
const NOTICE: u8 = 5;

/// Asks `engine`'s agent about the messages `which` as `ctx` (with `vars`) shows the stream,
/// and applies the answer to `vars` (see `Engine::answer`): for the `tcp-request content`
/// rules and their events, which run on a context rather than a transaction.
pub async fn ask_with(engine: &Arc<Engine>, which: &[usize], ctx: &Ctx<'_>, vars: &mut Vars) {
    if which.is_empty() || vars.spoe_stopped(engine) {
        return;
    }
    let start = std::time::Instant::now();
    let payload = engine.payload(which, &ctx.with_vars(vars));
    vars.flush();
    let answer = match payload {
        Ok(None) => return,
        Err(code) => {
            let failed = Answer::Failed(code);
            processed(engine, which, 0, &failed, (start, None));
            failed
        }
        Ok(Some(p)) => {
            let frame = vars.spoe_frame(engine);
            ask(engine, which, p, None, frame).await
        }
    };
    engine.answer(answer, start.elapsed(), vars, ctx.proc_vars);
}

/// Whether a server of the agent's backend is up (else no connection is tried).
fn reachable(engine: &Engine) -> bool {
    crate::shared::shared()
        .and_then(|s| {
            s.proxies.backend(&engine.backend).map(|b| b.servers.iter().any(|s| s.is_up()))
        })
        .unwrap_or(false)
}

/// A connection with room for one more frame, or a new one (`None`: none can be had).
fn pick(engine: &Arc<Engine>, agent: &Rc<Agent>) -> Option<Rc<conn::Conn>> {
    let mut conns = agent.conns.borrow_mut();
    conns.retain(|c| !c.closed());
    if let Some(c) = conns.iter().filter(|c| c.has_room(engine)).min_by_key(|c| c.load()) {
        return Some(Rc::clone(c));
    }
    let may_open = engine.max_conn_rate == 0 || this_second(&agent.opened) < engine.max_conn_rate;
    if may_open && reachable(engine) {
        bump(&agent.opened);
        let c = conn::Conn::open_after(engine, agent, Duration::ZERO);
        conns.push(Rc::clone(&c));
        return Some(c);
    }
    // The busiest may still take it in turn.
    conns.iter().min_by_key(|c| c.load()).cloned()
}

/// Where the frames of a connection that could not reach the agent wait: a connection still
/// connecting, else a new one tried after a pause (the next second under `maxconnrate`).
fn retry(engine: &Arc<Engine>) -> Rc<conn::Conn> {
    let agent = agent_for(engine);
    let mut conns = agent.conns.borrow_mut();
    conns.retain(|c| !c.closed());
    if let Some(c) = conns.iter().find(|c| c.pending()) {
        return Rc::clone(c);
    }
    let limited = engine.max_conn_rate > 0 && this_second(&agent.opened) >= engine.max_conn_rate;
    let pause = if limited { Duration::from_secs(1) } else { RETRY_PAUSE };
    bump(&agent.opened);
    let c = conn::Conn::open_after(engine, &agent, pause);
    conns.push(Rc::clone(&c));
    c
}

/// How long a connection that could not reach the agent waits before the next try.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
