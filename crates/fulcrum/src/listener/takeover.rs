//! Taking over the listening sockets of the processes named by `-sf`/`-st`.
//!
//! With SO_REUSEPORT alone, connections waiting in an old process's accept queue are reset
//! when it closes its listeners. Instead, the new process duplicates the old listeners into
//! itself (`pidfd_getfd`, Linux 5.6+), so the very same queues keep being served. When that is
//! not permitted, the new process binds fresh sockets, as HAProxy does without `-x`.
//!
//! An in-process reload does the same with its own sockets (duplicated with `fcntl`): the
//! new generation listens on the very sockets the old one did.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use socket2::Socket;

/// Listening sockets taken from old processes, by address.
#[derive(Debug, Default)]
pub struct Inherited {
    inet: HashMap<SocketAddr, Vec<Socket>>,
    unix: HashMap<PathBuf, Socket>,
}

impl Inherited {
    /// Collects the listening sockets of the given processes. Failures are reported as notes
    /// and leave the map partly filled: fresh sockets are bound for what is missing.
    pub fn from_processes(pids: &[u32], notes: &mut Vec<String>) -> Self {
        let mut me = Inherited::default();
        for &pid in pids {
            if let Err(e) = me.collect(pid) {
                notes.push(format!("could not take over the sockets of process {pid}: {e}"));
            }
        }
        me
    }

    /// Collects this process's own listening sockets (duplicated), for an in-process reload.
    pub fn from_self() -> std::io::Result<Self> {
        let mut me = Inherited::default();
        me.collect_from(std::process::id(), true)?;
        Ok(me)
    }

    fn collect(&mut self, pid: u32) -> std::io::Result<()> {
        self.collect_from(pid, false)
    }

    fn collect_from(&mut self, pid: u32, own: bool) -> std::io::Result<()> {
        let dir = std::fs::read_dir(format!("/proc/{pid}/fd"))?;
        for entry in dir.flatten() {
            let Ok(link) = std::fs::read_link(entry.path()) else { continue };
            if !link.to_string_lossy().starts_with("socket:") {
                continue;
            }
            let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let fd = if own { crate::sys::dup_fd(fd) } else { crate::sys::steal_fd(pid, fd) };
            let fd = match fd {
                Ok(fd) => fd,
                Err(e) if !own => return Err(e),
                Err(_) => continue, // closed meanwhile
            };
            let socket = Socket::from(fd);
            if !socket.is_listener().unwrap_or(false) {
                continue;
            }
            let Ok(local) = socket.local_addr() else { continue };
            if let Some(sa) = local.as_socket() {
                self.inet.entry(sa).or_default().push(socket);
            } else if let Some(path) = local.as_pathname() {
                self.unix.entry(path.to_path_buf()).or_insert(socket);
            }
        }
        Ok(())
    }

    pub fn take_inet(&mut self, addr: &SocketAddr) -> Vec<Socket> {
        let sockets = self.inet.remove(addr).unwrap_or_default();
        for s in &sockets {
            let _ = s.set_nonblocking(true);
        }
        sockets
    }

    pub fn take_unix(&mut self, path: &Path) -> Option<Socket> {
        self.unix.remove(path)
    }
}
