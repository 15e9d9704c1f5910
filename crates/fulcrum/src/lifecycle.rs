//! A worker's soft stop as its sessions see it: the flag ([`stopping`]), the notification that
//! connections able to end gracefully wait on ([`stop_notify`]: HTTP/2's GOAWAY), and the
//! resting connections' sockets a stop shuts ([`StopWatch`]); `runtime` calls
//! [`begin_stop`] when the worker stops accepting. Per worker (`worker` slots): no session reads
//! a shared flag per request. A frontend retiring after a reload is `Frontend::retiring`, not
//! this module's.
//!
//! Owns: the per-worker stop state. Must not touch: workers, listeners, what sessions do.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::os::fd::RawFd;
use std::rc::Rc;

use crate::worker::{Id, Slot};

/// This worker's soft-stop flag: set once the worker stops accepting, so keep-alive sessions
/// close after their current transaction and resting ones close at once.
static STOPPING: Slot<Cell<bool>> = Slot::new(Id::Stopping, || Cell::new(false));
static THREAD_NO: Slot<Cell<u32>> = Slot::new(Id::ThreadNo, || Cell::new(own_thread_no()));
/// The client sockets of this worker's resting connections (see [`StopWatch`]).
static WATCHED: Slot<RefCell<HashSet<RawFd>>> =
    Slot::new(Id::Watched, || RefCell::new(HashSet::new()));
/// Woken by a soft stop: connections that can end gracefully (HTTP/2's GOAWAY).
static STOP_NOTIFY: Slot<Rc<tokio::sync::Notify>> =
    Slot::new(Id::StopNotify, || Rc::new(tokio::sync::Notify::new()));

/// This worker's soft-stop notification (take `notified()` before checking [`stopping`]).
pub fn stop_notify() -> Rc<tokio::sync::Notify> {
    STOP_NOTIFY.with(Rc::clone)
}

/// The calling worker's number, from 0 (HAProxy's `tid`, the `thread` fetch): read once per
/// worker from its thread's name (`fulcrum-w<n>`, numbered from 1 by `runtime`), so starting a
/// worker costs nothing more; 0 on any other thread.
pub fn thread_no() -> u32 {
    THREAD_NO.with(|t| t.get())
}

fn own_thread_no() -> u32 {
    let t = std::thread::current();
    let n = t.name().and_then(|n| n.strip_prefix("fulcrum-w")?.parse::<u32>().ok());
    n.map_or(0, |n| n.saturating_sub(1))
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

/// Begins this worker's soft stop (`runtime`, once the worker stops accepting).
pub fn begin_stop() {
    STOPPING.with(|s| s.set(true));
    STOP_NOTIFY.with(|n| n.notify_waiters());
    WATCHED.with(|w| {
        for &fd in w.borrow().iter() {
            // Every registered descriptor is open (its `StopWatch` is alive) and a socket.
            let _ = crate::sys::shutdown_read(fd);
        }
    });
}
