//! The accept loop of one listening socket in one worker, and the worker's live-session count.
//!
//! A slot is reserved on the bind, frontend and process `maxconn` before `accept` is called;
//! while any is full the loop waits and new connections stay in the kernel's backlog.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Notify;

use super::{Shared, WorkerSocket};
use crate::connection::Stream;
use crate::counters::Counters;
use crate::frontend::{Bind, Frontend};
use crate::log;
use crate::tcp::{self, Accepted};

/// Sessions alive in this worker; soft stop waits for zero.
#[derive(Default)]
pub struct Live {
    count: Cell<usize>,
    idle: Notify,
}

impl Live {
    fn inc(&self) {
        self.count.set(self.count.get() + 1);
    }
    fn dec(&self) {
        self.count.set(self.count.get() - 1);
        if self.count.get() == 0 {
            self.idle.notify_one();
        }
    }
    pub async fn wait_idle(&self) {
        while self.count.get() > 0 {
            self.idle.notified().await;
        }
    }
}

/// The `maxconn` slots a session holds, released when it ends.
struct Slots {
    shared: Arc<Shared>,
    frontend: Arc<Frontend>,
    bind: Arc<Bind>,
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.bind.limit.release();
        self.frontend.limit.release();
        self.shared.global_limit.release();
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    async fn accept(&self) -> io::Result<(Stream, Option<std::net::SocketAddr>)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s), Some(peer)))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                Ok((Stream::Unix(s), None))
            }
        }
    }
}

pub async fn accept_loop(ws: WorkerSocket, shared: Arc<Shared>, live: Rc<Live>) {
    let listener = match attach(ws.socket) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("[ALERT]    ({}) : cannot attach listener: {e}", std::process::id());
            return;
        }
    };
    loop {
        ws.bind.limit.acquire().await;
        ws.frontend.limit.acquire().await;
        shared.global_limit.acquire().await;
        let slots = Slots {
            shared: Arc::clone(&shared),
            frontend: Arc::clone(&ws.frontend),
            bind: Arc::clone(&ws.bind),
        };
        let (client, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                drop(slots);
                if is_resource_shortage(&e) {
                    eprintln!("[WARNING]  ({}) : accept: {e}; pausing", std::process::id());
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        live.inc();
        let live = Rc::clone(&live);
        let fe = Arc::clone(&ws.frontend);
        let conn = Accepted { client, peer, dst_port: ws.dst_port };
        tokio::task::spawn_local(async move {
            session(&fe, conn, &slots.shared).await;
            drop(slots);
            live.dec();
        });
    }
}

async fn session(fe: &Frontend, conn: Accepted, shared: &Shared) {
    Counters::inc(&fe.counters.sessions);
    let Some(be) = fe.backend.as_ref() else {
        if shared.debug {
            eprintln!("{}: no backend: session closed", fe.name);
        }
        return;
    };
    Counters::inc(&be.counters.sessions);
    let peer = conn.peer;
    let start = tokio::time::Instant::now();
    let outcome = tcp::serve(fe, be, conn).await;
    if shared.debug {
        let actconn = shared.global_limit.current();
        eprintln!("{}", log::tcp_line(peer, fe, be, &outcome, start.elapsed(), actconn));
    }
}

fn attach(socket: crate::listener::OpenSocket) -> io::Result<Listener> {
    if socket.unix {
        let std: std::os::unix::net::UnixListener =
            std::os::fd::OwnedFd::from(socket.socket).into();
        Ok(Listener::Unix(UnixListener::from_std(std)?))
    } else {
        let std: std::net::TcpListener = socket.socket.into();
        Ok(Listener::Tcp(TcpListener::from_std(std)?))
    }
}

fn is_resource_shortage(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}
