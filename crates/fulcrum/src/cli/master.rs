//! The master process of master-worker mode (`-W`, `-Ws`) under `chroot`, as HAProxy's: it
//! never enters the jail. Once the listening sockets are open it forks the worker, the process
//! that serves (jailed, its privileges dropped), and then only:
//! - passes signals on to it (SIGUSR2 reloads; SIGUSR1, SIGTERM, SIGINT stop);
//! - relays its service-manager notifications (systemd hears the process it started);
//! - for each reload the worker asks for (a signal, the runtime API's `reload`), reads and
//!   checks the configuration and every file it draws on, as `-c` does, outside the jail, and
//!   hands the worker those files (`files::Bundle`), or the errors;
//! - exits with the worker's status when it ends.
//!
//! The worker keeps its server state, counters and idle connections across reloads as without
//! a master, and no descriptor of a directory outside its jail.
//!
//! Must not touch: traffic, listening sockets, run-time state (all the worker's).

use std::os::unix::net::UnixStream;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::{signal, SignalKind};

use super::args::Args;
use super::{alert, alert_line, build_plan, load_config, owner_errors, NO_LISTENER};
use crate::files::Recording;
use crate::link;

/// Which side of the fork this process is.
pub enum Role {
    /// Serve: this process is the worker.
    Worker,
    /// Supervise the worker, through `link`.
    Master { link: UnixStream, worker: u32 },
}

/// Forks the worker. In the worker, the master's end is closed, its own end is `link`'s, and
/// it ends with the master.
pub fn fork() -> Result<Role, String> {
    let (master_end, worker_end) =
        UnixStream::pair().map_err(|e| format!("cannot create the master's socket pair: {e}"))?;
    let master = std::process::id();
    match crate::sys::fork().map_err(|e| format!("cannot fork the worker: {e}"))? {
        crate::sys::Forked::Parent(worker) => {
            drop(worker_end);
            Ok(Role::Master { link: master_end, worker })
        }
        crate::sys::Forked::Child => {
            drop(master_end);
            if !crate::sys::die_with_parent(master) {
                std::process::exit(1);
            }
            link::set(worker_end);
            Ok(Role::Worker)
        }
    }
}

/// The master's life: until the worker ends; its exit status.
pub fn run(args: &Args, link: UnixStream, worker: u32) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return abandon(worker, format!("cannot start its event loop: {e}")),
    };
    rt.block_on(supervise(args, link, worker))
}

/// Stops the worker and waits for it (the master cannot go on).
fn abandon(worker: u32, why: impl std::fmt::Display) -> i32 {
    alert(format!("master: {why}"));
    let _ = crate::sys::kill(worker, libc::SIGTERM);
    crate::sys::wait_child(worker, true).unwrap_or(1)
}

async fn supervise(args: &Args, link: UnixStream, worker: u32) -> i32 {
    let sigs = (|| {
        Ok::<_, std::io::Error>((
            signal(SignalKind::user_defined2())?,
            signal(SignalKind::user_defined1())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::child())?,
        ))
    })();
    let (mut usr2, mut usr1, mut term, mut int, mut child) = match sigs {
        Ok(s) => s,
        Err(e) => return abandon(worker, format!("cannot install signal handlers: {e}")),
    };
    let link = link.set_nonblocking(true).and_then(|_| tokio::net::UnixStream::from_std(link));
    let link = match link {
        Ok(l) => l,
        Err(e) => return abandon(worker, format!("cannot watch the worker's socket: {e}")),
    };
    let (mut from_worker, mut to_worker) = link.into_split();
    // Frames are read by their own task: a frame half read is never dropped by the select.
    let (frames_tx, mut frames) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let mut header = [0u8; 5];
            if from_worker.read_exact(&mut header).await.is_err() {
                break;
            }
            let Some(n) = link::frame_len(&header) else { break };
            let mut payload = vec![0u8; n];
            if from_worker.read_exact(&mut payload).await.is_err() {
                break;
            }
            if frames_tx.send((header[0], payload)).is_err() {
                break;
            }
        }
    });
    let pass = |sig| {
        let _ = crate::sys::kill(worker, sig);
    };
    loop {
        tokio::select! {
            _ = usr2.recv() => pass(libc::SIGUSR2),
            _ = usr1.recv() => pass(libc::SIGUSR1),
            _ = term.recv() => pass(libc::SIGTERM),
            _ = int.recv() => pass(libc::SIGINT),
            _ = child.recv() => {
                if let Some(status) = crate::sys::wait_child(worker, false) {
                    return status;
                }
            }
            frame = frames.recv() => match frame {
                Some((link::NOTIFY, state)) => {
                    crate::sys::notify_service(&String::from_utf8_lossy(&state));
                }
                Some((link::RELOAD, _)) => {
                    let (kind, payload) = files_for_reload(args);
                    if to_worker.write_all(&link::frame(kind, &payload)).await.is_err() {
                        return crate::sys::wait_child(worker, true).unwrap_or(1);
                    }
                }
                Some(_) => {}
                // The worker closed its end: it is ending.
                None => return crate::sys::wait_child(worker, true).unwrap_or(1),
            }
        }
    }
}

/// Reads and checks the configuration as `-c` does, recording every file it draws on: the
/// files for the worker, or the errors as a reload reports them.
fn files_for_reload(args: &Args) -> (u8, Vec<u8>) {
    let recording = Recording::start();
    let mut out = Vec::new();
    let valid = load_config(args, &mut out).is_some_and(|(config, _)| {
        if !config.has_listener() {
            out.push(alert_line(NO_LISTENER));
            return false;
        }
        let owner = owner_errors(&config.global);
        build_plan(&config, crate::plan::Previous::default(), owner, &mut out).is_some()
    });
    let bundle = recording.finish();
    if valid {
        (link::BUNDLE, bundle.encode())
    } else {
        (link::ERRORS, out.join("\n").into_bytes())
    }
}
