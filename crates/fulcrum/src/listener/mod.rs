//! Listening sockets: resolving `bind` host names (`resolve`), opening every `bind` address once
//! per worker (SO_REUSEPORT), UNIX and inherited (`fd@`) sockets, taking over an old process's
//! sockets on `-sf`/`-st` (the accept loops that use them are in `runtime::accept`).
//!
//! Sockets are opened on the main thread before workers start (so bind errors are reported
//! before daemonising and before old processes are told to leave); each worker then turns its
//! share into Tokio listeners. Must not touch: what a session does after `accept`.

mod resolve;
mod takeover;

use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::Path;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use fulcrum_config::BindAddr;

pub use resolve::resolve_binds;
pub use takeover::Inherited;

/// One listening socket, not yet attached to an event loop.
#[derive(Debug)]
pub struct OpenSocket {
    pub socket: Socket,
    pub unix: bool,
}

/// Per-address options from the `bind` line.
#[derive(Clone, Copy, Debug)]
pub struct BindOptions<'a> {
    pub backlog: Option<u32>,
    /// `IPV6_V6ONLY` on IPv6 sockets (`None`: left to the system's default, as HAProxy does).
    pub only_v6: Option<bool>,
    /// `defer-accept`, `tfo`, `mss`, `interface` (TCP listeners only).
    pub sockopts: &'a fulcrum_config::BindSockOpts,
    /// `tune.rcvbuf.client` / `tune.sndbuf.client`: set on TCP listeners, whose accepted
    /// connections inherit them.
    pub bufs: fulcrum_config::SocketBuffers,
    /// TCP keep-alive probes, likewise inherited by accepted connections.
    pub keepalive: fulcrum_config::TcpKeepAlive,
    /// `mode`, `uid`/`user`, `gid`/`group` of a UNIX socket's file (names resolved).
    pub unix: UnixOwner,
    /// SO_REUSEPORT on TCP listeners, a socket per worker (`noreuseport`: one socket, shared,
    /// so no other process may bind the address meanwhile).
    pub reuseport: bool,
}

/// The mode and owner a UNIX socket's file is given.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnixOwner {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl UnixOwner {
    /// Resolves the user and group names of a `bind` / `stats socket` line.
    pub fn resolve(p: &fulcrum_config::UnixPerms) -> Result<Self, String> {
        use fulcrum_config::UserSpec;
        let uid = match &p.owner {
            None => None,
            Some(UserSpec::Id(n)) => Some(*n),
            Some(UserSpec::Name(n)) => Some(
                crate::sys::lookup_user(n)
                    .map_err(|_| format!("'user' : unknown user name '{n}'"))?
                    .0,
            ),
        };
        let gid = match &p.group {
            None => None,
            Some(UserSpec::Id(n)) => Some(*n),
            Some(UserSpec::Name(n)) => Some(
                crate::sys::lookup_group(n)
                    .map_err(|_| format!("'group' : unknown group name '{n}'"))?,
            ),
        };
        Ok(UnixOwner { mode: p.mode, uid, gid })
    }
}

/// HAProxy's default backlog follows `maxconn`; the kernel caps it with somaxconn anyway.
const DEFAULT_BACKLOG: i32 = 1024;

/// Opens `count` sockets for one address: one per worker where the address family allows
/// SO_REUSEPORT, otherwise one socket shared by all workers (returned `count` times, duplicated).
pub fn open(
    addr: &BindAddr,
    opts: BindOptions,
    count: usize,
    inherited: &mut Inherited,
) -> io::Result<Vec<OpenSocket>> {
    let backlog = opts.backlog.map(|b| b.min(i32::MAX as u32) as i32).unwrap_or(DEFAULT_BACKLOG);
    let sockets = open_sockets(addr, opts, count, inherited, backlog)?;
    // Also on sockets taken over or inherited: what accepted connections get is this run's.
    for s in sockets.iter().filter(|s| !s.unix) {
        crate::connection::set_listener_keepalive(&s.socket, opts.keepalive);
    }
    Ok(sockets)
}

fn open_sockets(
    addr: &BindAddr,
    opts: BindOptions,
    count: usize,
    inherited: &mut Inherited,
    backlog: i32,
) -> io::Result<Vec<OpenSocket>> {
    match addr {
        BindAddr::Inet(sa) => {
            let mut out: Vec<OpenSocket> = inherited
                .take_inet(sa)
                .into_iter()
                .map(|s| OpenSocket { socket: s, unix: false })
                .collect();
            if !opts.reuseport {
                let socket = match out.into_iter().next() {
                    Some(s) => s.socket,
                    None => open_inet(sa, &opts, backlog)?,
                };
                return duplicate(socket, count, false);
            }
            while out.len() < count {
                let socket = open_inet(sa, &opts, backlog)?;
                out.push(OpenSocket { socket, unix: false });
            }
            Ok(out)
        }
        BindAddr::Unix(path) => {
            let socket = match inherited.take_unix(path) {
                Some(s) => s,
                None => open_unix(path, backlog, opts.unix)?,
            };
            duplicate(socket, count, true)
        }
        BindAddr::Host { text, .. } => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("host name of '{text}' not resolved"),
        )),
        BindAddr::Fd(fd) => {
            let socket = Socket::from(inherited_fd(*fd)?);
            if !socket.is_listener().unwrap_or(false) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("fd@{fd} is not a listening socket"),
                ));
            }
            socket.set_nonblocking(true)?;
            let unix = socket.local_addr()?.as_socket().is_none();
            duplicate(socket, count, unix)
        }
    }
}

/// The `fd@<n>` sockets the process was given, kept open under their own numbers while it
/// runs: the workers listen on duplicates, so a reload finds `fd@<n>` where it was (a worker
/// closing its duplicate must not free the number for another socket).
static GIVEN_FDS: std::sync::Mutex<Vec<(std::os::fd::RawFd, OwnedFd)>> =
    std::sync::Mutex::new(Vec::new());

/// A duplicate of inherited descriptor `n`, which is taken over the first time.
fn inherited_fd(n: std::os::fd::RawFd) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let mut given = GIVEN_FDS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, fd)) = given.iter().find(|(k, _)| *k == n) {
        return crate::sys::dup_fd(fd.as_raw_fd());
    }
    let owned = crate::sys::inherit_fd(n)?;
    let dup = crate::sys::dup_fd(owned.as_raw_fd())?;
    given.push((n, owned));
    Ok(dup)
}

/// Closes the kept `fd@<n>` sockets (a soft stop: once the workers close theirs, the
/// listeners are gone).
pub fn release_given_fds() {
    GIVEN_FDS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    LISTENING.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Duplicates of the listening sockets the workers use, kept by the main thread so that a
/// reload can listen on the very same sockets without looking them up in `/proc` (absent in
/// a chroot). Replaced at each generation; released with the `fd@` ones at a soft stop.
static LISTENING: std::sync::Mutex<Vec<Socket>> = std::sync::Mutex::new(Vec::new());

/// Remembers the listening sockets of the generation that starts (duplicates).
pub fn remember<'a>(sockets: impl Iterator<Item = &'a Socket>) {
    let dups: Vec<Socket> = sockets.filter_map(|s| s.try_clone().ok()).collect();
    *LISTENING.lock().unwrap_or_else(|e| e.into_inner()) = dups;
}

/// Duplicates of the remembered listening sockets (a reload takes them over).
pub fn remembered() -> Vec<Socket> {
    let kept = LISTENING.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter().filter_map(|s| s.try_clone().ok()).collect()
}

fn duplicate(socket: Socket, count: usize, unix: bool) -> io::Result<Vec<OpenSocket>> {
    let mut out = Vec::with_capacity(count);
    for _ in 1..count {
        out.push(OpenSocket { socket: socket.try_clone()?, unix });
    }
    out.push(OpenSocket { socket, unix });
    Ok(out)
}

fn open_inet(sa: &SocketAddr, opts: &BindOptions<'_>, backlog: i32) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(*sa), Type::STREAM, Some(Protocol::TCP))?;
    if let (true, Some(only)) = (sa.is_ipv6(), opts.only_v6) {
        socket.set_only_v6(only)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(opts.reuseport)?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(true)?;
    crate::connection::force_buffers(&socket, opts.bufs);
    if let Some(name) = &opts.sockopts.interface {
        socket.bind_device(Some(name.as_bytes()))?;
    }
    if opts.sockopts.transparent {
        make_foreign(&socket, sa)?;
    }
    socket.bind(&SockAddr::from(*sa))?;
    set_sockopts(&socket, opts.sockopts, backlog)?;
    socket.listen(backlog)?;
    Ok(socket)
}

/// `transparent`: lets the socket take a foreign address as HAProxy does, with
/// `IP_TRANSPARENT` (which needs `CAP_NET_ADMIN`, and lets TPROXY rules hand it connections
/// for any address), else `IP_FREEBIND` (an address not configured here, yet).
fn make_foreign(socket: &Socket, sa: &SocketAddr) -> io::Result<()> {
    let transparent = match sa {
        SocketAddr::V4(_) => socket.set_ip_transparent_v4(true),
        SocketAddr::V6(_) => socket.set_ip_transparent_v6(true),
    };
    let free = || match sa {
        SocketAddr::V4(_) => socket.set_freebind_v4(true),
        SocketAddr::V6(_) => socket.set_freebind_v6(true),
    };
    transparent.or_else(|_| free()).map_err(|_| {
        io::Error::new(io::ErrorKind::PermissionDenied, "cannot make receiving socket transparent")
    })
}

/// `defer-accept`, `tfo` (its queue as long as the backlog), `mss` (a negative one taken
/// off the default) and `tcp-ut` (accepted sockets inherit it), set before `listen` as
/// HAProxy does.
fn set_sockopts(socket: &Socket, o: &fulcrum_config::BindSockOpts, backlog: i32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = socket.as_raw_fd();
    if o.defer_accept {
        crate::sys::set_tcp_opt(fd, libc::TCP_DEFER_ACCEPT, 1)?;
    }
    if o.tfo {
        crate::sys::set_tcp_opt(fd, libc::TCP_FASTOPEN, backlog)?;
    }
    if let Some(ms) = o.tcp_ut {
        socket.set_tcp_user_timeout(Some(std::time::Duration::from_millis(u64::from(ms))))?;
    }
    match o.mss {
        Some(m) if m > 0 => socket.set_tcp_mss(m as u32)?,
        Some(m) => {
            let default = socket.tcp_mss()? as i32;
            socket.set_tcp_mss((default + m).max(1) as u32)?;
        }
        None => {}
    }
    Ok(())
}

/// Opens a UNIX listener as HAProxy does: bound under a temporary name next to `path`, given
/// its mode and owner, then renamed over `path`, so a client never finds a half-made socket
/// and a previous process's socket file is replaced in one step (its listener keeps working
/// until it leaves).
pub fn open_unix(path: &Path, backlog: i32, owner: UnixOwner) -> io::Result<Socket> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "not a socket file"));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_nonblocking(true)?;
    socket.bind(&SockAddr::unix(&tmp)?)?;
    let placed = (|| {
        if owner.uid.is_some() || owner.gid.is_some() {
            std::os::unix::fs::chown(&tmp, owner.uid, owner.gid)?;
        }
        if let Some(mode) = owner.mode {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        }
        socket.listen(backlog)?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(socket)
}

/// A listening socket's address as HAProxy's statistics write it: `ip:port` (`[ip]:port`
/// for IPv6), `unix` for a UNIX socket.
pub fn stats_addr(socket: &Socket) -> String {
    match socket.local_addr().ok().and_then(|a| a.as_socket()) {
        Some(sa) => sa.to_string(),
        None => "unix".into(),
    }
}

/// The port a session's client connected to, for servers without a port.
pub fn local_port(socket: &Socket) -> u16 {
    socket.local_addr().ok().and_then(|a| a.as_socket()).map(|a| a.port()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fulcrum_config::BindSockOpts;
    use std::os::fd::AsRawFd;

    fn listener(o: &BindSockOpts) -> io::Result<Socket> {
        let opts = BindOptions {
            backlog: None,
            only_v6: None,
            bufs: Default::default(),
            keepalive: Default::default(),
            unix: UnixOwner::default(),
            sockopts: o,
            reuseport: true,
        };
        open_inet(&"127.0.0.1:0".parse().expect("an address"), &opts, 64)
    }

    #[test]
    fn the_bind_lines_tcp_options_are_set_on_the_listener() {
        let opt = |s: &Socket, o| crate::sys::tcp_opt(s.as_raw_fd(), o).expect("getsockopt");
        let plain = listener(&BindSockOpts::default()).expect("a listener");
        assert_eq!((opt(&plain, libc::TCP_DEFER_ACCEPT), opt(&plain, libc::TCP_FASTOPEN)), (0, 0));
        let default_mss = plain.tcp_mss().expect("mss");
        assert_eq!(plain.tcp_user_timeout().expect("user timeout"), None);
        let set = BindSockOpts {
            defer_accept: true,
            tfo: true,
            mss: Some(1200),
            interface: None,
            tcp_ut: Some(1500),
            transparent: true,
        };
        let s = listener(&set).expect("a listener");
        // `transparent`: `IP_TRANSPARENT` with `CAP_NET_ADMIN`, else `IP_FREEBIND`.
        let foreign = s.ip_transparent_v4().expect("get") || s.freebind_v4().expect("get");
        assert!(foreign && !plain.freebind_v4().expect("get"));
        assert_ne!(opt(&s, libc::TCP_DEFER_ACCEPT), 0);
        // `tcp-ut`: on the listener, and on the connections it accepts.
        let ut = Some(std::time::Duration::from_millis(1500));
        assert_eq!(s.tcp_user_timeout().expect("user timeout"), ut);
        let addr = s.local_addr().expect("addr").as_socket().expect("inet");
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        // (`defer-accept`: the connection comes once it brings data.)
        std::io::Write::write_all(&mut c, b"x").expect("write");
        s.set_nonblocking(false).expect("blocking");
        let (accepted, _) = s.accept().expect("accept");
        assert_eq!(accepted.tcp_user_timeout().expect("user timeout"), ut);
        assert_eq!(opt(&s, libc::TCP_FASTOPEN), 64, "the queue as long as the backlog");
        assert_eq!(s.tcp_mss().expect("mss"), 1200);
        // A negative MSS is taken off the default.
        let s = listener(&BindSockOpts { mss: Some(-36), ..Default::default() }).expect("ok");
        assert_eq!(s.tcp_mss().expect("mss"), default_mss - 36);
        // `interface` needs CAP_NET_RAW: bound to it, or refused for want of it.
        match listener(&BindSockOpts { interface: Some("lo".into()), ..Default::default() }) {
            Ok(s) => assert_eq!(s.device().expect("device").as_deref(), Some(&b"lo"[..])),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        }
    }
}
