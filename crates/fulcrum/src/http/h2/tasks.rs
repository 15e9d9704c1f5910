//! The tasks HTTP/2 streams run in: each worker keeps a few idle ones and hands a new stream to
//! one of them, instead of spawning a task per stream. A stream's transaction is a large future
//! (8 kB: the session and every step it may await); spawned in a new task it was allocated and
//! copied in whole for every stream (a seventh of a stream's instructions, with glibc's slow
//! path for the block and the spawn itself). A task that goes on to its next stream makes the
//! next transaction in place, in the memory it already has.
//!
//! Idle tasks follow the load: those idle for [`IDLE_FOR`] end (the worker's purge, once a
//! second, calls [`trim`]), and at most [`MAX_IDLE`] wait. An idle task holds nothing of its
//! last stream (no connection, no buffer): only its memory. (A fixed small number of idle
//! tasks was not enough: 1,000 streams at once come and go in bursts of a hundred, and most
//! streams still found no idle task.) [`IDLE_FOR`] is 2 s.
//!
//! An idle task also keeps a session's spare heads ([`crate::http::session::take_spare`]): the
//! spares then follow the load as the tasks do; and its session's two timers, moved from one
//! stream's deadlines to the next's (no timer taken out of the worker's wheel and filed again
//! per stream).
//!
//! Owns: the idle tasks of this worker. Must not touch: what a stream does (the session).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};

use crate::connection::Stream;
use crate::frontend::Frontend;
use crate::shared::Shared;
use crate::tcp::Accepted;
use crate::worker::{Id, Slot};

/// Most idle tasks a worker keeps (about 8 kB each).
const MAX_IDLE: usize = 4096;

/// How long a task waits idle before it ends.
const IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// One stream to serve: its frontend, the worker's plan, the stream as a connection, and the
/// HTTP/2 connection it belongs to.
pub struct Job {
    pub fe: Arc<Frontend>,
    pub shared: Arc<Shared>,
    pub stream: Accepted<crate::http::peer::Peer>,
    pub conn: Rc<Stream>,
}

/// An idle task's mailbox.
#[derive(Default)]
struct Idle {
    job: RefCell<Option<Job>>,
    waker: RefCell<Option<Waker>>,
    /// Since when it waits.
    since: std::cell::Cell<Option<tokio::time::Instant>>,
    /// Told to end.
    ended: std::cell::Cell<bool>,
}

static IDLE: Slot<RefCell<VecDeque<Rc<Idle>>>> =
    Slot::new(Id::H2Tasks, || RefCell::new(VecDeque::new()));

/// Serves a stream in an idle task of this worker, or in a new one.
pub fn run(job: Job) {
    match IDLE.with(|i| i.borrow_mut().pop_back()) {
        Some(idle) => {
            *idle.job.borrow_mut() = Some(job);
            if let Some(w) = idle.waker.borrow_mut().take() {
                w.wake();
            }
        }
        // Boxed: Tokio's moves of a task's future (at spawn, at completion) then copy a
        // pointer, not the whole future.
        None => {
            let t = Box::pin(task(job));
            if debug_sizes() {
                eprintln!("http/2 stream task: {} bytes", std::mem::size_of_val(&*t));
            }
            drop(tokio::task::spawn_local(t));
        }
    }
}

/// `FULCRUM_DEBUG_SIZES` is set (read once: an environment lookup takes a process-wide lock).
fn debug_sizes() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FULCRUM_DEBUG_SIZES").is_some())
}

/// A task: its first stream, then those it is handed while it waits idle.
async fn task(first: Job) {
    let mailbox = Rc::new(Idle::default());
    let mut next = Some(first);
    // The heads of its last stream, kept for its next one; and its session's timers.
    let mut spare = None;
    let (mut ctimer, mut stimer) = (std::pin::pin!(None), std::pin::pin!(None));
    while let Some(job) = next.take() {
        if let Some(s) = spare.take() {
            crate::http::session::give_spare(s);
        }
        // Served here, not in a helper future of its own: one layer less to build and to
        // resume through per stream.
        let Job { fe, shared, stream, conn } = job;
        if let Some(http) = fe.http.as_ref().or(fe.upgrade.as_ref()) {
            let timers = (ctimer.as_mut(), stimer.as_mut());
            crate::http::session::serve_stream(&fe, http, stream, &shared, &conn, timers).await;
        }
        drop((fe, shared, conn));
        spare = crate::http::session::take_spare();
        next = wait(&mailbox).await;
    }
}

/// Waits idle for the next stream; `None` (the task ends) when enough tasks wait already.
async fn wait(mailbox: &Rc<Idle>) -> Option<Job> {
    let listed = IDLE.with(|i| {
        let mut i = i.borrow_mut();
        let room = i.len() < MAX_IDLE;
        if room {
            mailbox.since.set(Some(crate::clock::now()));
            i.push_back(Rc::clone(mailbox));
        }
        room
    });
    if !listed {
        return None;
    }
    std::future::poll_fn(|cx| match mailbox.job.borrow_mut().take() {
        Some(job) => Poll::Ready(Some(job)),
        None if mailbox.ended.get() => Poll::Ready(None),
        None => {
            *mailbox.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}

/// Ends the tasks idle for [`IDLE_FOR`] (the oldest are first in the list: taken from its
/// front, the others do not move).
pub fn trim() {
    let now = crate::clock::now();
    let old: Vec<Rc<Idle>> = IDLE.with(|i| {
        let mut i = i.borrow_mut();
        let n = i
            .iter()
            .take_while(|t| t.since.get().is_some_and(|s| now.duration_since(s) >= IDLE_FOR))
            .count();
        i.drain(..n).collect()
    });
    for t in old {
        t.ended.set(true);
        if let Some(w) = t.waker.borrow_mut().take() {
            w.wake();
        }
    }
}
