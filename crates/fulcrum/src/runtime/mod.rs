//! Worker threads and the process's life: `nbthread` workers, each a current-thread Tokio
//! runtime with its own share of the listening sockets (no work stealing), CPU pinning from
//! `cpu-map`, and stopping: SIGUSR1 soft stop (close listeners, finish live sessions, exit),
//! SIGTERM/SIGINT hard stop (exit 0 at once).
//!
//! Must not touch: config parsing or what a session does (the `tcp` module).

mod accept;

use std::cell::RefCell;
use std::collections::HashSet;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::frontend::limit::Limit;
use crate::frontend::{Bind, Frontend};
use crate::listener::OpenSocket;

/// A listening socket assigned to one worker, with what its sessions need.
#[derive(Debug)]
pub struct WorkerSocket {
    pub frontend: Arc<Frontend>,
    pub bind: Arc<Bind>,
    pub socket: OpenSocket,
    /// The port clients connect to (0 for UNIX sockets).
    pub dst_port: u16,
}

/// Whether workers should keep accepting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Running,
    /// Stop accepting; exit once live sessions are done.
    SoftStop,
    /// Exit now (SIGTERM, SIGINT, `hard-stop-after`): send what is pending and leave.
    Exit,
}

thread_local! {
    /// This worker's soft-stop flag: set once the worker stops accepting, so keep-alive sessions
    /// close after their current transaction and resting ones close at once.
    static STOPPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The client sockets of this worker's resting connections (see [`StopWatch`]).
    static WATCHED: RefCell<HashSet<RawFd>> = RefCell::new(HashSet::new());
}

/// True once this worker is soft-stopping.
pub fn stopping() -> bool {
    STOPPING.with(|s| s.get())
}

/// Registers a resting connection's client socket for as long as it lives: a soft stop shuts
/// the read side of every registered socket, which wakes its connection (it reads end of
/// stream, or sees [`stopping`], and closes). A waiter per idle connection would cost more
/// memory; connections rest only after an idle moment, so this costs no work per request.
pub struct StopWatch(RawFd);

impl StopWatch {
    /// `fd` must stay open as long as the watch lives.
    pub fn new(fd: RawFd) -> Self {
        WATCHED.with(|w| w.borrow_mut().insert(fd));
        StopWatch(fd)
    }
}

impl Drop for StopWatch {
    fn drop(&mut self) {
        WATCHED.with(|w| w.borrow_mut().remove(&self.0));
    }
}

fn begin_stop() {
    STOPPING.with(|s| s.set(true));
    WATCHED.with(|w| {
        for &fd in w.borrow().iter() {
            // Every registered descriptor is open (its `StopWatch` is alive) and a socket.
            let _ = crate::sys::shutdown_read(fd);
        }
    });
}

/// What every worker shares.
#[derive(Debug)]
pub struct Shared {
    /// The process-wide `maxconn`.
    pub global_limit: Limit,
    /// `-d`: one line per session on stderr.
    pub debug: bool,
    /// Idle server connections each worker may keep.
    pub idle_cap: usize,
    /// `tune.maxaccept`: connections one listener accepts per wake-up (`usize::MAX`: all).
    pub max_accept: usize,
    /// `tune.bufsize`: the largest answer a check reads.
    pub bufsize: usize,
    /// Every backend (the first worker samples their rates each second).
    pub backends: Arc<Vec<Arc<crate::backend::Backend>>>,
    /// Every frontend (and `listen`), in configuration order.
    pub frontends: Vec<Arc<crate::frontend::Frontend>>,
    /// `hard-stop-after`: a soft stop lasts at most this long.
    pub hard_stop_after: Option<std::time::Duration>,
    /// `grace`: the listeners keep accepting this long after a soft stop is asked for.
    pub grace: Option<std::time::Duration>,
    /// `global`'s log targets.
    pub global_logger: Option<Arc<crate::log::syslog::Logger>>,
    /// A soft stop has begun (`show info`'s `Stopping`).
    pub stopping: std::sync::atomic::AtomicBool,
    /// `set rate-limit sessions global` (0: none; shown by `show info`).
    pub sess_rate_limit: std::sync::atomic::AtomicU32,
    /// What the process knows of itself (`show info`, the stats page).
    pub process: crate::stats::info::Process,
}

/// What HAProxy says of each proxy when a soft stop begins (`stop_proxy()`): frontends and
/// `listen` sections in configuration order, then the backends; on stderr and to the proxy's
/// own log targets, at warning level.
fn stop_messages(shared: &Shared) {
    shared.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
    let line = |name: &str, fe: u64, be: u64, logger: Option<&crate::log::syslog::Logger>| {
        let msg = format!("Proxy {name} stopped (cumulated conns: FE: {fe}, BE: {be})");
        if let Some(l) = logger {
            l.send(crate::log::syslog::WARNING, &format!("{msg}."));
        }
        crate::log::warning(&msg);
    };
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    for fe in &shared.frontends {
        let own = shared.backends.iter().find(|b| b.name == fe.name);
        let be = own.map_or(0, |b| load(&b.counters.sessions));
        line(&fe.name, load(&fe.counters.sessions), be, fe.logger.as_deref());
    }
    for be in shared.backends.iter().filter(|b| !shared.frontends.iter().any(|f| f.name == b.name))
    {
        line(&be.name, 0, load(&be.counters.sessions), be.logger.as_deref());
    }
}

/// The process's shared state, for work done away from the workers (statistics rendering).
static SHARED: std::sync::OnceLock<Arc<Shared>> = std::sync::OnceLock::new();

/// The shared state of the running process (set once workers start).
pub fn shared() -> Option<Arc<Shared>> {
    SHARED.get().cloned()
}

/// Starts the workers and blocks until the process should exit; returns the exit status.
/// `checks` holds each worker's share of the health-check tasks.
pub fn run(
    per_worker: Vec<Vec<WorkerSocket>>,
    checks: Vec<Vec<crate::health::Job>>,
    cpus: Vec<Option<Vec<u32>>>,
    shared: Arc<Shared>,
    api: Option<(Arc<crate::api::Api>, Vec<crate::api::ApiSocket>)>,
) -> i32 {
    let _ = SHARED.set(Arc::clone(&shared));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!(
                "[ALERT]    ({}) : cannot start the main event loop: {e}",
                std::process::id()
            );
            return 1;
        }
    };
    rt.block_on(async move {
        // The runtime API runs on this thread's event loop, away from the workers.
        if let Some((api, sockets)) = api {
            crate::api::start(api, sockets);
        }
        supervise(per_worker, checks, cpus, shared).await
    })
}

async fn supervise(
    per_worker: Vec<Vec<WorkerSocket>>,
    checks: Vec<Vec<crate::health::Job>>,
    cpus: Vec<Option<Vec<u32>>>,
    shared: Arc<Shared>,
) -> i32 {
    let signals = (
        signal(SignalKind::user_defined1()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    let (Ok(mut usr1), Ok(mut term), Ok(mut int)) = signals else {
        eprintln!("[ALERT]    ({}) : cannot install signal handlers", std::process::id());
        return 1;
    };
    let (state_tx, state_rx) = watch::channel(RunState::Running);
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    let mut checks = checks.into_iter();
    for (id, (sockets, cpus)) in per_worker.into_iter().zip(cpus).enumerate() {
        let rx = state_rx.clone();
        let shared = Arc::clone(&shared);
        let jobs = checks.next().unwrap_or_default();
        let spawned = std::thread::Builder::new()
            .name(format!("fulcrum-w{}", id + 1))
            .spawn(move || worker(sockets, jobs, id == 0, cpus, rx, shared));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("[ALERT]    ({}) : cannot start worker thread: {e}", std::process::id());
                return 1;
            }
        }
    }
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        for h in handles {
            let _ = h.join();
        }
        let _ = done_tx.send(());
    });
    // `hard-stop-after`: armed when a soft stop begins.
    let hard_stop = tokio::time::sleep(std::time::Duration::from_secs(86400 * 365));
    tokio::pin!(hard_stop);
    let mut hard_stop_armed = false;
    // `grace`: the soft stop itself waits this long after it is asked for.
    let grace = tokio::time::sleep(std::time::Duration::from_secs(86400 * 365));
    tokio::pin!(grace);
    let mut grace_armed = false;
    loop {
        tokio::select! {
            _ = usr1.recv() => {
                if !hard_stop_armed && !grace_armed && *state_tx.borrow() != RunState::SoftStop {
                    if let Some(d) = shared.hard_stop_after {
                        hard_stop.as_mut().reset(tokio::time::Instant::now() + d);
                        hard_stop_armed = true;
                    }
                    match shared.grace {
                        Some(d) => {
                            grace.as_mut().reset(tokio::time::Instant::now() + d);
                            grace_armed = true;
                        }
                        None => {
                            stop_messages(&shared);
                            let _ = state_tx.send(RunState::SoftStop);
                        }
                    }
                }
            }
            _ = &mut grace, if grace_armed => {
                grace_armed = false;
                stop_messages(&shared);
                let _ = state_tx.send(RunState::SoftStop);
            }
            _ = &mut hard_stop, if hard_stop_armed => {
                // HAProxy's words: to the global targets, then each frontend still holding
                // connections; those end with the process.
                let msg = "soft-stop running for too long, performing a hard-stop.";
                crate::log::warning(msg);
                if let Some(l) = &shared.global_logger {
                    l.send(crate::log::syslog::WARNING, msg);
                }
                for fe in &shared.frontends {
                    let n = fe.limit.current();
                    if n > 0 {
                        let msg = format!(
                            "Proxy {} hard-stopped ({n} remaining conns will be closed).",
                            fe.name
                        );
                        crate::log::warning(&msg);
                        if let Some(l) = &fe.logger {
                            l.send(crate::log::syslog::WARNING, &msg);
                        }
                    }
                }
                return exit_now(&state_tx, &mut done_rx).await;
            }
            _ = term.recv() => return exit_now(&state_tx, &mut done_rx).await,
            _ = int.recv() => return exit_now(&state_tx, &mut done_rx).await,
            _ = &mut done_rx => return 0,
        }
    }
}

/// A hard exit: the workers send the log lines they hold and leave their sessions; the
/// process waits for them a moment at most.
async fn exit_now(
    state: &watch::Sender<RunState>,
    done: &mut tokio::sync::oneshot::Receiver<()>,
) -> i32 {
    let _ = state.send(RunState::Exit);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(200), done).await;
    0
}

fn worker(
    sockets: Vec<WorkerSocket>,
    jobs: Vec<crate::health::Job>,
    first: bool,
    cpus: Option<Vec<u32>>,
    mut state: watch::Receiver<RunState>,
    shared: Arc<Shared>,
) {
    if let Some(cpus) = cpus {
        if let Err(e) = crate::sys::pin_current_thread(&cpus) {
            eprintln!(
                "[WARNING]  ({}) : cpu-map: cannot pin thread to {cpus:?}: {e}",
                std::process::id()
            );
        }
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("[ALERT]    ({}) : cannot start worker event loop: {e}", std::process::id());
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let live = std::rc::Rc::new(accept::Live::default());
        // The accept loops run in this future, not as tasks: the local set polls it between
        // every batch of at most 61 tasks, so accepting keeps its turn however many sessions
        // are runnable (as HAProxy accepts once per polling loop). As a task, an accept loop
        // waited behind every runnable session: a burst of thousands of connections then
        // overflowed the kernel's accept queue.
        let mut loops: Vec<_> = sockets
            .into_iter()
            .map(|ws| {
                let l = accept::accept_loop(ws, Arc::clone(&shared), std::rc::Rc::clone(&live));
                Some(Box::pin(l))
            })
            .collect();
        let accepting = std::future::poll_fn(|cx| {
            // A new turn: the log timers' clock, and the log lines of the last turn leave
            // together (see `clock`, `log::batch`).
            crate::clock::tick();
            crate::log::batch::flush(cx.waker());
            for slot in loops.iter_mut() {
                if slot
                    .as_mut()
                    .is_some_and(|l| std::future::Future::poll(l.as_mut(), cx).is_ready())
                {
                    *slot = None; // this listener failed; the others go on
                }
            }
            std::task::Poll::<()>::Pending
        });
        crate::http::pool::set_cap(shared.idle_cap);
        let rate_backends = if first { Arc::clone(&shared.backends) } else { Default::default() };
        let rate_frontends = if first { shared.frontends.clone() } else { Vec::new() };
        let purge = tokio::task::spawn_local(async move {
            // HAProxy's default `pool-purge-delay`, in seconds (one purge a second).
            let delay = 5;
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                crate::http::pool::purge(delay);
                // One worker samples the rates.
                crate::stats::sample(&rate_frontends, &rate_backends);
            }
        });
        // Health checks run on the workers, each task on one worker; they stop with it.
        let bufsize = shared.bufsize;
        let checks: Vec<_> = jobs
            .into_iter()
            .map(|j| tokio::task::spawn_local(crate::health::task(j, bufsize)))
            .collect();
        let stopping = async {
            while *state.borrow_and_update() == RunState::Running {
                if state.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            biased;
            _ = stopping => {}
            _ = accepting => {}
        }
        crate::log::batch::stop(); // from now on, each line leaves at once
        crate::clock::stop(); // and the clock is read each time
        if *state.borrow() == RunState::Exit {
            return; // the sessions end with the worker
        }
        drop(loops); // closes this worker's listening sockets
        purge.abort();
        checks.iter().for_each(|c| c.abort());
        begin_stop();
        crate::http::pool::clear();
        let exit = async {
            while *state.borrow_and_update() != RunState::Exit {
                if state.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            _ = live.wait_idle() => {}
            _ = exit => {}
        }
    });
}
