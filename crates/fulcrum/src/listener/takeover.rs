//! Taking over the listening sockets of the processes named by `-sf`/`-st`.
//!
//! With SO_REUSEPORT alone, connections waiting in an old process's accept queue are reset
//! when it closes its listeners. Instead, the new process duplicates the old listeners into
//! itself (`pidfd_getfd`, Linux 5.6+), so the very same queues keep being served. When that is
//! not permitted, the new process binds fresh sockets, as HAProxy does without `-x`.
//!
//! An in-process reload does the same with its own sockets (the duplicates `listener` keeps):
//! the new generation listens on the very sockets the old one did.

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

    /// This process's own listening sockets (duplicates of those remembered for the running
    /// generation), for an in-process reload.
    pub fn from_self() -> std::io::Result<Self> {
        let mut me = Inherited::default();
        for socket in super::remembered() {
            me.add(socket);
        }
        Ok(me)
    }

    fn add(&mut self, socket: Socket) {
        let Ok(local) = socket.local_addr() else { return };
        if let Some(sa) = local.as_socket() {
            // One descriptor per socket (a process may hold several of one socket).
            let list = self.inet.entry(sa).or_default();
            let ino = crate::sys::inode(&socket);
            if ino.is_some() && list.iter().any(|s| crate::sys::inode(s) == ino) {
                return;
            }
            list.push(socket);
        } else if let Some(path) = local.as_pathname() {
            self.unix.entry(path.to_path_buf()).or_insert(socket);
        }
    }

    fn collect(&mut self, pid: u32) -> std::io::Result<()> {
        let dir = std::fs::read_dir(format!("/proc/{pid}/fd"))?;
        for entry in dir.flatten() {
            let Ok(link) = std::fs::read_link(entry.path()) else { continue };
            if !link.to_string_lossy().starts_with("socket:") {
                continue;
            }
            let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let socket = Socket::from(crate::sys::steal_fd(pid, fd)?);
            if socket.is_listener().unwrap_or(false) {
                self.add(socket);
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
