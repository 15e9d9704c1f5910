//! Ending a server's live sessions on a state change (`on-marked-down shutdown-sessions`,
//! `on-marked-up shutdown-backup-sessions`, HAProxy's `srv_shutdown_streams`).
//!
//! Only servers whose configuration asks for it keep a list: each session connected to such a
//! server registers a duplicate of its server socket (one `dup` per connection, for these
//! servers only); shutting a duplicate shuts the socket itself, so the session sees its server
//! leave and ends as if the server had closed. Holding a duplicate keeps the socket alive until
//! the session deregisters, so a descriptor number reused meanwhile is never touched. A
//! session ended this way finds why in its registration ([`ended_by`]): its log line says `D`
//! (server marked down) or `U` (an active server came back), not that the server closed.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::Server;
use crate::outcome::Cause;

/// A registered session: live (its socket's duplicate), or ended by a state change.
#[derive(Debug)]
enum Entry {
    Live(OwnedFd),
    Ended(Cause),
}

/// The sessions of one server that a state change may end.
#[derive(Debug, Default)]
pub struct Sessions {
    next: AtomicU64,
    live: Mutex<HashMap<u64, Entry>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Registers a session's server connection; `None` when the server keeps no list (or the
/// descriptor could not be duplicated: that session simply cannot be ended early).
pub fn track(srv: &Server, conn: &impl AsFd) -> Option<u64> {
    let list = srv.sessions.as_ref()?;
    let dup = conn.as_fd().try_clone_to_owned().ok()?;
    let token = list.next.fetch_add(1, Ordering::Relaxed);
    list.lock().insert(token, Entry::Live(dup));
    Some(token)
}

/// Forgets a session registered by [`track`].
pub fn untrack(srv: &Server, token: u64) {
    if let Some(list) = srv.sessions.as_ref() {
        list.lock().remove(&token);
    }
}

/// Why a state change ended the session registered as `token`, if it did.
pub fn ended_by(srv: &Server, token: u64) -> Option<Cause> {
    match srv.sessions.as_ref()?.lock().get(&token) {
        Some(Entry::Ended(cause)) => Some(*cause),
        _ => None,
    }
}

/// Ends every registered session of `srv`, for `why` (`Cause::Down` or `Cause::Up`): both
/// directions of each server socket are shut, and the duplicate is let go.
pub fn shutdown(srv: &Server, why: Cause) {
    let Some(list) = srv.sessions.as_ref() else { return };
    for entry in list.lock().values_mut() {
        if let Entry::Live(fd) = entry {
            let _ = socket2::SockRef::from(&*fd).shutdown(std::net::Shutdown::Both);
            *entry = Entry::Ended(why);
        }
    }
}
