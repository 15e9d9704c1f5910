//! Ending a server's live sessions on a state change (`on-marked-down shutdown-sessions`,
//! `on-marked-up shutdown-backup-sessions`, HAProxy's `srv_shutdown_streams`).
//!
//! Only servers whose configuration asks for it keep a list: each session connected to such a
//! server registers a duplicate of its server socket (one `dup` per connection, for these
//! servers only); shutting a duplicate shuts the socket itself, so the session sees its server
//! leave and ends as if the server had closed. Holding a duplicate keeps the socket alive until
//! the session deregisters, so a descriptor number reused meanwhile is never touched.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::Server;

/// The sessions of one server that a state change may end.
#[derive(Debug, Default)]
pub struct Sessions {
    next: AtomicU64,
    live: Mutex<HashMap<u64, OwnedFd>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, OwnedFd>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Registers a session's server connection; `None` when the server keeps no list (or the
/// descriptor could not be duplicated: that session simply cannot be ended early).
pub fn track(srv: &Server, conn: &impl AsFd) -> Option<u64> {
    let list = srv.sessions.as_ref()?;
    let dup = conn.as_fd().try_clone_to_owned().ok()?;
    let token = list.next.fetch_add(1, Ordering::Relaxed);
    list.lock().insert(token, dup);
    Some(token)
}

/// Forgets a session registered by [`track`].
pub fn untrack(srv: &Server, token: u64) {
    if let Some(list) = srv.sessions.as_ref() {
        list.lock().remove(&token);
    }
}

/// Ends every registered session of `srv`: both directions of each server socket are shut.
pub fn shutdown(srv: &Server) {
    let Some(list) = srv.sessions.as_ref() else { return };
    for fd in list.lock().values() {
        let _ = socket2::SockRef::from(fd).shutdown(std::net::Shutdown::Both);
    }
}
