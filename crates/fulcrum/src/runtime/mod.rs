//! Worker threads and the process's life: `nbthread` workers, each a current-thread Tokio
//! runtime with its own share of the listening sockets (no work stealing), CPU pinning from
//! `cpu-map`; in-process reloads (SIGUSR2, the runtime API's `reload`): each worker is handed
//! a new *generation* (the new plan's listening sockets, check tasks and shared state) and the
//! old generation's frontends retire; and stopping: SIGUSR1 soft stop (close listeners, finish
//! live sessions, exit), SIGTERM/SIGINT hard stop (exit 0 at once). It sends systemd's
//! notifications (`link::notify`, under `-Ws`). What the main thread starts beside the
//! workers (the runtime API) is handed in as `OnStart`.
//!
//! Must not touch: config parsing and plan building (`cli::reload` builds a generation) or what
//! a session does (the `tcp` and `http` modules), or the runtime API.

mod accept;
pub(crate) use accept::{connection_rules, session_rules_on};
pub mod profiling;
pub mod sessions;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::frontend::{Bind, Frontend};
use crate::listener::OpenSocket;
use crate::shared::Shared;

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

/// What HAProxy says of each proxy when a soft stop begins (`stop_proxy()`): frontends and
/// `listen` sections in configuration order, then the backends; on stderr and to the proxy's
/// own log targets, at warning level.
fn stop_messages(shared: &Shared) {
    shared.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
    crate::listener::release_given_fds();
    let line = |name: &str, fe: u64, be: u64, logger: Option<&crate::log::syslog::Logger>| {
        let msg = format!("Proxy {name} stopped (cumulated conns: FE: {fe}, BE: {be})");
        if let Some(l) = logger {
            l.send(crate::log::syslog::WARNING, &format!("{msg}."));
        }
        crate::log::warning(&msg);
    };
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    for fe in &shared.proxies.frontends {
        let own = shared.proxies.backend(&fe.name);
        let be = own.map_or(0, |b| load(&b.counters.sessions));
        line(&fe.name, load(&fe.counters.sessions), be, fe.logger.as_deref());
    }
    for be in shared
        .proxies
        .backends
        .iter()
        .filter(|b| !shared.proxies.frontends.iter().any(|f| f.name == b.name))
    {
        line(&be.name, 0, load(&be.counters.sessions), be.logger.as_deref());
    }
}

/// What one worker runs for one plan: its share of the listening sockets and check tasks.
pub struct WorkerGen {
    pub sockets: Vec<WorkerSocket>,
    pub jobs: Vec<crate::health::Job>,
    pub shared: Arc<Shared>,
}

/// A new plan ready to run: one [`WorkerGen`] per worker, and messages to report.
pub struct NewPlan {
    pub workers: Vec<WorkerGen>,
    pub shared: Arc<Shared>,
    pub messages: Vec<String>,
}

/// What a new generation changes.
#[derive(Clone, Debug)]
pub enum Edit {
    /// The configuration files, read again (a reload).
    Files,
    /// `add server <backend>/<name> <words>...`: the running configuration plus a server.
    AddServer { backend: String, name: String, words: Vec<String> },
    /// `del server <backend>/<name>`: the running configuration without that server.
    DelServer { backend: String, name: String },
}

/// Builds the next generation (`cli::reload`); `Err` carries the messages that explain why
/// nothing changed.
pub type Reloader = Box<dyn FnMut(&Arc<Shared>, &Edit) -> Result<NewPlan, Vec<String>>>;

/// A reload or server edit asked for by the runtime API: its report comes back on the channel.
pub type ReloadRequest = (Edit, tokio::sync::oneshot::Sender<Result<Vec<String>, Vec<String>>>);

static RELOADS: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<ReloadRequest>> =
    std::sync::OnceLock::new();

/// Asks the main loop for a reload or a server edit (the runtime API's `reload`, `add|del
/// server`); `None` before workers start.
pub fn request_reload(
    edit: Edit,
) -> Option<tokio::sync::oneshot::Receiver<Result<Vec<String>, Vec<String>>>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    RELOADS.get()?.send((edit, tx)).ok()?;
    Some(rx)
}

/// What the main thread starts on its event loop before supervising the workers (the runtime
/// API's listeners: `runtime` does not know the API).
pub type OnStart = Box<dyn FnOnce()>;

/// Starts the workers and blocks until the process should exit; returns the exit status.
/// `first` holds each worker's first generation.
pub fn run(
    first: Vec<WorkerGen>,
    cpus: Vec<Option<Vec<u32>>>,
    shared: Arc<Shared>,
    on_start: Option<OnStart>,
    reloader: Reloader,
) -> i32 {
    crate::shared::set(&shared);
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
        if let Some(start) = on_start {
            start();
        }
        supervise(first, cpus, shared, reloader).await
    })
}

async fn supervise(
    first: Vec<WorkerGen>,
    cpus: Vec<Option<Vec<u32>>>,
    mut shared: Arc<Shared>,
    mut reloader: Reloader,
) -> i32 {
    let signals = (
        signal(SignalKind::user_defined1()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::user_defined2()),
    );
    let (Ok(mut usr1), Ok(mut term), Ok(mut int), Ok(mut usr2)) = signals else {
        eprintln!("[ALERT]    ({}) : cannot install signal handlers", std::process::id());
        return 1;
    };
    let (reload_tx, mut reload_rx) = tokio::sync::mpsc::unbounded_channel::<ReloadRequest>();
    let _ = RELOADS.set(reload_tx);
    let (state_tx, state_rx) = watch::channel(RunState::Running);
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    let mut controls = Vec::new();
    for (id, (gen, cpus)) in first.into_iter().zip(cpus).enumerate() {
        let rx = state_rx.clone();
        let (ctl_tx, ctl_rx) = tokio::sync::mpsc::unbounded_channel();
        controls.push(ctl_tx);
        let spawned = std::thread::Builder::new()
            .name(format!("fulcrum-w{}", id + 1))
            .spawn(move || worker(gen, ctl_rx, id == 0, cpus, rx));
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
    crate::link::notify("READY=1");
    loop {
        tokio::select! {
            _ = usr2.recv() => {
                if *state_tx.borrow() == RunState::Running {
                    let _ = reload(&mut reloader, &mut shared, &controls, &Edit::Files);
                }
            }
            Some((edit, reply)) = reload_rx.recv() => {
                let report = if *state_tx.borrow() == RunState::Running {
                    reload(&mut reloader, &mut shared, &controls, &edit)
                } else {
                    Err(vec!["The process is stopping: no reload.".to_string()])
                };
                let _ = reply.send(report);
            }
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
                if let Some(l) = &shared.proxies.global_logger {
                    l.send(crate::log::syslog::WARNING, msg);
                }
                for fe in &shared.proxies.frontends {
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

/// Reloads in the same process: builds the next generation (nothing changes if that fails),
/// retires the current plan's frontends (their sessions end after their current transaction),
/// and hands each worker its share. Reports go to stderr, and back to the caller.
fn reload(
    reloader: &mut Reloader,
    shared: &mut Arc<Shared>,
    controls: &[tokio::sync::mpsc::UnboundedSender<WorkerGen>],
    edit: &Edit,
) -> Result<Vec<String>, Vec<String>> {
    let files = matches!(edit, Edit::Files);
    if files {
        crate::link::notify(&format!(
            "RELOADING=1\nMONOTONIC_USEC={}",
            crate::sys::monotonic_usec()
        ));
    }
    let result = reloader(shared, edit);
    if files {
        crate::link::notify("READY=1");
    }
    let next = match result {
        Ok(n) => n,
        Err(errors) => {
            if files {
                errors.iter().for_each(|e| eprintln!("{e}"));
            }
            return Err(errors);
        }
    };
    let old = std::mem::replace(shared, next.shared);
    crate::shared::set(shared);
    // The old plan retires once the new one is current: its sessions end after their current
    // transaction, and the server connections they free go to the new plan's pools.
    for fe in &old.proxies.frontends {
        fe.retired.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    for be in old.proxies.backends.iter() {
        be.retired.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    for (gen, ctl) in next.workers.into_iter().zip(controls) {
        let _ = ctl.send(gen);
    }
    if files {
        next.messages.iter().for_each(|m| eprintln!("{m}"));
    }
    Ok(next.messages)
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
    gen: WorkerGen,
    control: tokio::sync::mpsc::UnboundedReceiver<WorkerGen>,
    first: bool,
    cpus: Option<Vec<u32>>,
    state: watch::Receiver<RunState>,
) {
    if let Some(cpus) = cpus {
        if let Err(e) = crate::sys::pin_current_thread(&cpus) {
            let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
            eprintln!(
                "[WARNING]  ({}) : cpu-map: cannot pin thread to CPUs {}: {e}",
                std::process::id(),
                list.join(",")
            );
        }
    }
    // The worker's state (pools, registries, its clock...) lives in its context, entered for the
    // thread's whole life; the event loop and its sessions end inside it.
    let mut ctx = crate::worker::Context::new();
    ctx.enter(|| event_loop(gen, control, first, state));
}

/// A worker's event loop: accepts, serves, and stops as `state` says.
fn event_loop(
    gen: WorkerGen,
    mut control: tokio::sync::mpsc::UnboundedReceiver<WorkerGen>,
    first: bool,
    mut state: watch::Receiver<RunState>,
) {
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
        crate::http::pool::set_limits(crate::http::pool::FdLimits {
            low: gen.shared.pool_fds.0,
            high: gen.shared.pool_fds.1,
            workers: gen.shared.process.nbthread,
            clients: Arc::clone(&gen.shared.global_limit),
        });
        // The accept loops run in this future, not as tasks: the local set polls it between
        // every batch of at most 61 tasks, so accepting keeps its turn however many sessions
        // are runnable (as HAProxy accepts once per polling loop). As a task, an accept loop
        // waited behind every runnable session: a burst of thousands of connections then
        // overflowed the kernel's accept queue.
        let (mut loops, mut checks) = start_generation(gen, &live);
        let accepting = std::future::poll_fn(|cx| {
            // A new turn: the log timers' clock, and the log lines of the last turn leave
            // together (see `clock`, `log::batch`).
            crate::clock::tick();
            live.streams.turn();
            crate::log::batch::flush(cx.waker());
            // A reload: the new generation's listeners replace this one's (the sockets that
            // stay are the same, duplicated: nothing waiting in their queues is lost), its
            // checks replace the old ones, and idle server connections move to the new plan.
            while let std::task::Poll::Ready(Some(gen)) = control.poll_recv(cx) {
                checks.iter().for_each(|c| c.abort());
                crate::http::pool::adopt(&gen.shared.proxies.backends);
                (loops, checks) = start_generation(gen, &live);
            }
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
        let purge = tokio::task::spawn_local(async move {
            // HAProxy's default `pool-purge-delay`, in seconds (one purge a second).
            let delay = 5;
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                crate::clock::sample_idle();
                crate::http::pool::purge(delay);
                crate::http::h2::tasks::trim();
                // One worker samples the rates, of the current plan.
                if first {
                    if let Some(s) = crate::shared::shared() {
                        crate::stats::sample(&s.proxies.frontends, &s.proxies.backends);
                        let now = crate::stick::now();
                        s.proxies.tables.values().for_each(|t| t.purge(now));
                    }
                }
            }
        });
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
        crate::lifecycle::begin_stop();
        crate::http::pool::clear();
        crate::http::h2::upstream::clear();
        crate::http::fcgi::mux::clear();
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

type AcceptLoop = Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>;

/// Starts a generation in this worker: an accept loop per listening socket (polled by the
/// worker's own future) and its check tasks.
fn start_generation(
    gen: WorkerGen,
    live: &std::rc::Rc<accept::Live>,
) -> (Vec<AcceptLoop>, Vec<tokio::task::JoinHandle<()>>) {
    let loops = gen
        .sockets
        .into_iter()
        .map(|ws| {
            let l = accept::accept_loop(ws, Arc::clone(&gen.shared), std::rc::Rc::clone(live));
            Some(Box::pin(l) as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>)
        })
        .collect();
    // Health checks run on the workers, each task on one worker; they stop with it.
    let bufsize = gen.shared.bufsize;
    let checks = gen
        .jobs
        .into_iter()
        .map(|j| {
            let task = crate::health::task(j, bufsize);
            let kind = profiling::Kind::HealthCheck;
            tokio::task::spawn_local(profiling::Profiled::new(kind, u32::MAX, task))
        })
        .collect();
    (loops, checks)
}
