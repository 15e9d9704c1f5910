//! The only module that calls the operating system through `unsafe` FFI.
//!
//! Owns: file-descriptor limits, privilege dropping, CPU pinning, daemonising (fork/setsid),
//! signalling other processes and taking over another process's listening sockets, and host
//! names resolved through the system resolver (`resolve_host`, safe std). Each call is a thin,
//! checked wrapper returning `io::Result`; nothing here knows about proxies or config.
//! It also wraps crypt(3) through `dlopen` (userlist passwords), `chroot`, `PR_SET_DUMPABLE`,
//! `sendmmsg` (log batches), `accept4`, `shutdown_read` of a resting socket on soft stop and a
//! socket's registration with Tokio on first need ([`LazyRegistered`]), and keeps the service
//! manager's socket connected from before `chroot` (`notify_socket`).
//! Why hand-written: these are a dozen libc calls; a wrapper crate would add more than it saves.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The inode of a descriptor's file (two descriptors of one socket share it).
pub fn inode(fd: &impl std::os::fd::AsFd) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: `st` is a writable stat buffer; the descriptor is borrowed for the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let r = unsafe { libc::fstat(fd.as_fd().as_raw_fd(), &mut st) };
    (r == 0).then_some(st.st_ino)
}

/// An I/O error in the system's words, as C's `strerror()` gives them and HAProxy prints them
/// ("Address already in use"), without Rust's " (os error N)".
pub fn os_words(e: &io::Error) -> String {
    let text = match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code).to_string(),
        None => e.to_string(),
    };
    match text.rfind(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Shuts the read side of socket `fd` (its reader wakes and reads end of stream). The caller
/// guarantees `fd` is an open socket it owns.
pub fn shutdown_read(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor number; no memory is passed.
    check(unsafe { libc::shutdown(fd, libc::SHUT_RD) }).map(|_| ())
}

/// Sets the TCP-level integer option `opt` (`libc::TCP_*`) of socket `fd` to `value`.
pub fn set_tcp_opt(fd: RawFd, opt: libc::c_int, value: libc::c_int) -> io::Result<()> {
    let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the value lives on the stack for the call, its size passed with it.
    check(unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, opt, (&raw const value).cast(), size) })
        .map(|_| ())
}

/// Sets the IP-level integer option `opt` (`libc::IP_*`) of socket `fd` to `value`.
pub fn set_ip_opt(fd: RawFd, opt: libc::c_int, value: libc::c_int) -> io::Result<()> {
    let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the value lives on the stack for the call, its size passed with it.
    check(unsafe { libc::setsockopt(fd, libc::IPPROTO_IP, opt, (&raw const value).cast(), size) })
        .map(|_| ())
}

/// The TCP-level integer option `opt` of socket `fd` (tests read what was set).
#[cfg(test)]
pub fn tcp_opt(fd: RawFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: room for a c_int on the stack, its size passed with it and updated by the call.
    check(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, opt, (&raw mut value).cast(), &raw mut size)
    })?;
    Ok(value)
}

/// `setenv` and its kin on the process's environment: with `keep_only`, every other variable
/// goes first; then each of `set` is set (`Some`) or removed (`None`).
pub fn apply_env(keep_only: Option<&[String]>, set: &[(String, Option<String>)]) {
    if let Some(keep) = keep_only {
        for (name, _) in std::env::vars_os() {
            if !keep.iter().any(|k| name == k.as_str()) {
                std::env::remove_var(name);
            }
        }
    }
    for (name, value) in set {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
}

/// This machine's host name (HAProxy's default `node`), read once.
/// The system's crypt(3) (`libcrypt.so.1`, loaded on first use, so every hash the system
/// knows works as it does for HAProxy: DES, `$1$`, `$5$`, `$6$`, `$2b$`, `$y$`...): the hash of
/// `key` with `setting` (a stored hash), `None` when the library is missing or the setting
/// is not one it knows. crypt(3) keeps its answer in a static buffer: calls are serialised.
pub fn crypt(key: &str, setting: &str) -> Option<String> {
    type CryptFn =
        unsafe extern "C" fn(*const libc::c_char, *const libc::c_char) -> *mut libc::c_char;
    static LIB: std::sync::Mutex<Option<Option<usize>>> = std::sync::Mutex::new(None);
    let key = CString::new(key).ok()?;
    let setting = CString::new(setting).ok()?;
    let mut g = LIB.lock().unwrap_or_else(|e| e.into_inner());
    let f = *g.get_or_insert_with(|| {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the handle is never closed, so the
        // symbol stays valid for the process.
        unsafe {
            let h = libc::dlopen(c"libcrypt.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if h.is_null() {
                return None;
            }
            let sym = libc::dlsym(h, c"crypt".as_ptr());
            (!sym.is_null()).then_some(sym as usize)
        }
    });
    let f = f?;
    // SAFETY: `f` is libcrypt's `crypt`, called with two C strings under the lock that
    // guards its static result buffer; the result is copied out before the lock is released.
    unsafe {
        let crypt: CryptFn = std::mem::transmute::<usize, CryptFn>(f);
        let out = crypt(key.as_ptr(), setting.as_ptr());
        if out.is_null() {
            return None;
        }
        let s = std::ffi::CStr::from_ptr(out).to_str().ok()?.to_string();
        // libxcrypt signals a bad setting with a result starting with '*'.
        (!s.starts_with('*')).then_some(s)
    }
}

pub fn hostname() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for its whole length; gethostname NUL-terminates within it
        // or truncates, and the last byte stays 0.
        let ret = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
        if ret != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    })
}

/// Whether `ip` is one of this host's addresses, as HAProxy's `addr_is_local` tells (a UDP
/// socket can be bound to it): `None` when that cannot be known (no socket, another error).
pub fn is_local_addr(ip: IpAddr) -> Option<bool> {
    let domain = if ip.is_ipv4() { socket2::Domain::IPV4 } else { socket2::Domain::IPV6 };
    let s =
        socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP)).ok()?;
    match s.bind(&std::net::SocketAddr::new(ip, 0).into()) {
        Ok(()) => Some(true),
        Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => Some(false),
        Err(_) => None,
    }
}

/// Resolves a host name through the system resolver (first answer).
pub fn resolve_host(host: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(ip);
    }
    let mut addrs =
        (host, 0).to_socket_addrs().map_err(|_| format!("could not resolve address '{host}'."))?;
    addrs.next().map(|a| a.ip()).ok_or_else(|| format!("could not resolve address '{host}'."))
}

/// A moment in local time, as syslog headers print it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalTime {
    pub year: i32,
    /// 0 for January.
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    pub micros: u32,
    /// Seconds east of UTC.
    pub utc_offset_secs: i64,
}

/// `now` in the machine's time zone (`localtime_r`).
pub fn local_time(now: std::time::SystemTime) -> LocalTime {
    let d = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as libc::time_t;
    // SAFETY: `tm` is a plain C struct that localtime_r fills; both pointers are valid.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        return LocalTime::default();
    }
    LocalTime {
        year: tm.tm_year + 1900,
        month: tm.tm_mon as u32,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        min: tm.tm_min as u32,
        sec: tm.tm_sec as u32,
        micros: d.subsec_micros(),
        utc_offset_secs: tm.tm_gmtoff,
    }
}

/// `now` as a mail's `Date` in the machine's time zone, as HAProxy's alerts write it
/// (`strftime("%a, %d %b %Y %T %z (%Z)")`: `Sun, 29 Nov 2026 22:13:10 +0000 (UTC)`).
pub fn mail_date(now: std::time::SystemTime) -> String {
    let secs = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    String::from_utf8_lossy(&strftime("%a, %d %b %Y %T %z (%Z)", secs, false)).into_owned()
}

/// The kernel's `TCP_INFO` of a TCP socket, in the order of `cfg::TcpInfoField`: rtt,
/// rttvar (microseconds), unacked, sacked, lost, retrans, fackets, reordering; `None` for a
/// socket that is not TCP (a UNIX one).
pub fn tcp_info(fd: std::os::fd::BorrowedFd<'_>) -> Option<[u32; 8]> {
    use std::os::fd::AsRawFd;
    // SAFETY: `info` is a plain C struct the kernel fills, at most `len` bytes of it.
    let info = unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let p = std::ptr::addr_of_mut!(info).cast();
        if libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, p, &mut len) != 0 {
            return None;
        }
        info
    };
    Some([
        info.tcpi_rtt,
        info.tcpi_rttvar,
        info.tcpi_unacked,
        info.tcpi_sacked,
        info.tcpi_lost,
        info.tcpi_retrans,
        info.tcpi_fackets,
        info.tcpi_reordering,
    ])
}

/// `strftime(format)` of `secs` in local time or UTC, at most 16 kB (a buffer, as HAProxy's
/// trash chunk): the `ltime` and `utime` converters.
pub fn strftime(format: &str, secs: i64, utc: bool) -> Vec<u8> {
    let Ok(fmt) = std::ffi::CString::new(format) else { return Vec::new() };
    let t = secs as libc::time_t;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `tm` is a plain C struct the conversion fills; `buf` is as long as `strftime`
    // is told, which it never writes past; `fmt` is NUL-terminated.
    let n = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = if utc { libc::gmtime_r(&t, &mut tm) } else { libc::localtime_r(&t, &mut tm) };
        if ok.is_null() {
            return Vec::new();
        }
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm)
    };
    buf.truncate(n);
    buf
}

/// Writes `buf` to descriptor `fd` without ever blocking: the descriptor is made non-blocking
/// (as HAProxy does for `log fd@<n>` targets), and a full pipe gives `WouldBlock`.
pub fn write_nonblocking(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: fcntl and write on a descriptor number; `buf` is valid for its length.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK == 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let n = libc::write(fd, buf.as_ptr().cast(), buf.len());
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Has the peer of socket `fd` shut its sending side (`POLLRDHUP`, without waiting)?
pub fn peer_shut_write(fd: RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Reads from socket `fd` (non-blocking) into the unfilled part of `buf`, which need not be
/// initialised: a `ReadBuf` made over spare capacity (as the HTTP/2 codec's reads are) would
/// otherwise be zeroed whole before every read (8 kB or more of `memset` per read).
pub fn recv_into(fd: RawFd, buf: &mut tokio::io::ReadBuf<'_>) -> io::Result<()> {
    // SAFETY: the kernel writes at most `unfilled.len()` bytes into the unfilled part, and
    // exactly the `n` bytes it reports are marked initialised and filled; nothing in the
    // unfilled part is ever read or de-initialised.
    let n = unsafe {
        let unfilled = buf.unfilled_mut();
        let n = libc::recv(fd, unfilled.as_mut_ptr().cast(), unfilled.len(), libc::MSG_DONTWAIT);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.assume_init(n as usize);
        n as usize
    };
    buf.advance(n);
    Ok(())
}

/// Reads what socket `fd` holds without consuming it (`MSG_PEEK`, non-blocking).
pub fn peek(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: recv into a buffer valid for its length.
    let n = unsafe {
        libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_PEEK | libc::MSG_DONTWAIT)
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sends `datagrams` on the connected datagram socket `fd` with one `sendmmsg` (without
/// blocking): how many the kernel took, from the first.
pub fn send_datagrams(fd: RawFd, datagrams: &[&[u8]]) -> io::Result<usize> {
    let mut iov: Vec<libc::iovec> = datagrams
        .iter()
        .map(|d| libc::iovec { iov_base: d.as_ptr() as *mut libc::c_void, iov_len: d.len() })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            // SAFETY: mmsghdr is plain data; a zeroed one is a valid empty header.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: each header points at one iovec over a slice of `datagrams`, all alive for the
    // call; the count is the array's length.
    let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, flags) };
    check(n).map(|n| n as usize)
}

/// The soft and hard `RLIMIT_NOFILE`.
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid, writable rlimit.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Sets the soft (and, when needed and permitted, hard) `RLIMIT_NOFILE` to `n`.
pub fn set_nofile_limit(n: u64) -> io::Result<()> {
    let (_, hard) = nofile_limit()?;
    let lim = libc::rlimit { rlim_cur: n, rlim_max: hard.max(n) };
    // SAFETY: `lim` is a valid rlimit.
    check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }).map(drop)
}

/// The process runs as root (its effective uid is 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sends SIGTERM to process `pid` (a child of ours not yet reaped).
pub fn terminate(pid: u32) {
    // SAFETY: kill(2) takes any pid; the caller vouches it is its own unreaped child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

/// Makes the program `cmd` starts run with these soft and hard `RLIMIT_NOFILE` limits.
pub fn nofile_in_child(cmd: &mut std::process::Command, (soft, hard): (u64, u64)) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // setrlimit(2), which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
}

/// Resolves a user name to its uid and primary gid.
pub fn lookup_user(name: &str) -> io::Result<(u32, u32)> {
    let cname = CString::new(name).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids).
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to live, correctly sized storage owned by this frame.
    let rc = unsafe {
        libc::getpwnam_r(cname.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result)
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if result.is_null() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("unknown user '{name}'")));
    }
    Ok((pwd.pw_uid, pwd.pw_gid))
}

/// Resolves a group name to its gid.
pub fn lookup_group(name: &str) -> io::Result<u32> {
    let cname = CString::new(name).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: all-zero is a valid `group`.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer refers to live, correctly sized storage owned by this frame.
    let rc = unsafe {
        libc::getgrnam_r(cname.as_ptr(), &mut grp, buf.as_mut_ptr(), buf.len(), &mut result)
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if result.is_null() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("unknown group '{name}'")));
    }
    Ok(grp.gr_gid)
}

/// `set-dumpable`: the process may dump core after changing user (which clears the flag).
pub fn set_dumpable() -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) })?;
    Ok(())
}

/// `PR_SET_NO_NEW_PRIVS` for this thread and those and the programs it starts afterwards.
pub fn no_new_privs() -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    Ok(())
}

/// `chroot <dir>`: the process's root becomes `dir`, and its working directory that root.
pub fn chroot(dir: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    notify_socket();
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: a valid NUL-terminated path for the duration of the calls.
    check(unsafe { libc::chroot(path.as_ptr()) })?;
    check(unsafe { libc::chdir(c"/".as_ptr()) })?;
    Ok(())
}

/// Drops privileges: supplementary groups, then gid, then uid (the order that cannot fail open).
pub fn drop_privileges(uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
    notify_socket();
    if let Some(gid) = gid {
        // SAFETY: a one-element array that outlives the call.
        check(unsafe { libc::setgroups(1, &gid) })?;
        // SAFETY: plain syscall.
        check(unsafe { libc::setgid(gid) })?;
    }
    if let Some(uid) = uid {
        // SAFETY: plain syscall.
        check(unsafe { libc::setuid(uid) })?;
    }
    Ok(())
}

/// Pins the calling thread to the given CPUs.
pub fn pin_current_thread(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: all-zero is a valid, empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no CPU {cpu}")));
        }
        // SAFETY: index checked against CPU_SETSIZE above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) }).map(drop)
}

/// Moves the calling thread to the idle scheduling class (`SCHED_IDLE`): it runs only when no
/// other thread wants the CPU, and yields at once when a worker wakes up (the statistics
/// renderer runs so). Falls back to the lowest `nice` where the class is refused.
pub fn lower_thread_priority() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is valid for SCHED_IDLE (priority 0).
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
        return Ok(());
    }
    // SAFETY: gettid has no preconditions; setpriority on this thread's own id.
    let tid = unsafe { libc::gettid() };
    // SAFETY: PRIO_PROCESS with a thread id changes that thread only on Linux.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) }).map(drop)
}

/// What `fork` returned to this process.
pub enum Forked {
    /// This is the parent; the value is the child's pid.
    Parent(u32),
    Child,
}

/// Forks. Must be called while the process has a single thread.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: the caller guarantees no other thread exists, so the child inherits a consistent
    // address space.
    let pid = check(unsafe { libc::fork() })?;
    Ok(if pid == 0 { Forked::Child } else { Forked::Parent(pid as u32) })
}

/// Detaches from the controlling terminal and points stdio at /dev/null.
pub fn detach() -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::setsid() })?;
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
    use std::os::fd::AsRawFd;
    for fd in 0..3 {
        // SAFETY: both descriptors are open; dup2 atomically replaces stdio.
        check(unsafe { libc::dup2(null.as_raw_fd(), fd) })?;
    }
    Ok(())
}

/// Sends `sig` to process `pid`.
/// A command that only prints (`-vv`, `-c`, `explain`) dies quietly of SIGPIPE when its
/// reader goes away (`fulcrum -vv | head -1`), as HAProxy and other Unix tools do, instead of
/// failing on the write (Rust ignores SIGPIPE; a proxy must).
pub fn sigpipe_default() {
    // SAFETY: sets a signal's disposition to its default; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub fn kill(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::kill(pid as libc::pid_t, sig) }).map(drop)
}

/// Takes ownership of an inherited descriptor number (`fd@<n>`), after checking it is open.
pub fn inherit_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_GETFD only reads descriptor flags.
    check(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: the descriptor is open and, by the `fd@` contract, handed to this process to own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Duplicates one of this process's own descriptors (close-on-exec): an in-process reload
/// takes the listening sockets that stay, and `fd@<n>` sockets, this way.
pub fn dup_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC reads no memory; the result is checked and owned here.
    let new = check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) })?;
    // SAFETY: a fresh descriptor owned by this process.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// The service manager's socket (`NOTIFY_SOCKET`), connected once: before `chroot` and the
/// change of user, which would put its path out of reach (`/run/systemd/notify` is not in a
/// jail; a test's socket may not be writable by the new user).
static NOTIFY: std::sync::OnceLock<Option<std::os::unix::net::UnixDatagram>> =
    std::sync::OnceLock::new();

/// Connects to the service manager's socket when `NOTIFY_SOCKET` names one (a path, or an
/// abstract name after `@`); `chroot` and `drop_privileges` call it first.
fn notify_socket() -> Option<&'static std::os::unix::net::UnixDatagram> {
    NOTIFY
        .get_or_init(|| {
            let path = std::env::var_os("NOTIFY_SOCKET")?;
            let sock = std::os::unix::net::UnixDatagram::unbound().ok()?;
            let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
            if let Some(name) = bytes.strip_prefix(b"@") {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).ok()?;
                sock.connect_addr(&addr).ok()?;
            } else {
                sock.connect(&path).ok()?;
            }
            Some(sock)
        })
        .as_ref()
}

/// Tells the service manager about the process (systemd's `sd_notify`: `READY=1`,
/// `RELOADING=1`, `STOPPING=1`) when it asked for it with `NOTIFY_SOCKET` (`-Ws` units of
/// `Type=notify`); does nothing otherwise.
pub fn notify_service(state: &str) {
    if let Some(sock) = notify_socket() {
        let _ = sock.send(state.as_bytes());
    }
}

/// The heap as glibc sees it: bytes obtained from the system, bytes in use (`mallinfo2`).
pub fn heap_usage() -> (u64, u64) {
    // SAFETY: plain call returning a struct by value.
    let m = unsafe { libc::mallinfo2() };
    ((m.arena + m.hblkhd) as u64, (m.uordblks + m.hblkhd) as u64)
}

/// This thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`; profiling only).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in microseconds (systemd's `MONOTONIC_USEC` of a reload notification).
pub fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// How child `pid` ended, as a shell reports it (its exit status, or 128 + the signal that
/// killed it); `None` while it runs (`block`: wait for it).
pub fn wait_child(pid: u32, block: bool) -> Option<i32> {
    let mut status = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: `status` is a valid int to write; plain syscall otherwise.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, flags) };
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if r <= 0 {
            // Not ended yet, or not (any more) our child: nothing to wait for.
            return (r < 0).then_some(1);
        }
        return Some(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            128 + libc::WTERMSIG(status)
        });
    }
}

/// This process gets SIGTERM when its parent ends; `false` when the parent (expected to be
/// `parent`) already has.
pub fn die_with_parent(parent: u32) -> bool {
    // SAFETY: plain prctl with integer arguments.
    let set = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) } == 0;
    // SAFETY: plain syscall.
    set && unsafe { libc::getppid() } as u32 == parent
}

/// Duplicates descriptor `target_fd` of process `pid` into this process (Linux >= 5.6,
/// `pidfd_getfd`). Used by `-sf` to take over the old process's listening sockets, so that
/// connections waiting in their accept queues are not lost.
pub fn steal_fd(pid: u32, target_fd: RawFd) -> io::Result<OwnedFd> {
    const SYS_PIDFD_OPEN: libc::c_long = 434;
    const SYS_PIDFD_GETFD: libc::c_long = 438;
    // SAFETY: raw syscalls with integer arguments; the returned descriptors are checked.
    let pidfd = unsafe { libc::syscall(SYS_PIDFD_OPEN, pid as libc::pid_t, 0) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `pidfd` was just returned open by the kernel and is owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    use std::os::fd::AsRawFd;
    // SAFETY: as above.
    let fd = unsafe { libc::syscall(SYS_PIDFD_GETFD, pidfd.as_raw_fd(), target_fd, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by this process.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Accepts one connection on a non-blocking listening socket with `accept4`, so the new socket
/// is non-blocking and close-on-exec without further syscalls (and inherits TCP_NODELAY from
/// the listener). Returns the peer address for TCP sockets.
pub fn accept(listener: RawFd) -> io::Result<(OwnedFd, Option<std::net::SocketAddr>)> {
    // SAFETY: `try_init` hands a correctly sized sockaddr_storage and length to accept4, which
    // fills at most that many bytes; the returned descriptor is checked before being owned.
    let (fd, addr) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            let fd = libc::accept4(
                listener,
                storage.cast(),
                len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            );
            if fd < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(fd)
            }
        })?
    };
    // SAFETY: a fresh descriptor returned by accept4, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok((fd, addr.as_socket()))
}

/// Registers a listening socket with the current Tokio event loop for readability.
pub fn register_listener(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    use tokio::io::{unix::AsyncFd, Interest};
    // SAFETY: an `OwnedFd` is open and owned until the `AsyncFd` drops it, and its `as_raw_fd`
    // always returns the same descriptor: exactly the contract `register_with_interest` asks.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(io::Error::from)
}

/// A socket registered with the current Tokio event loop only once it first has to wait.
/// Until then it costs no `epoll_ctl` and no registration record; a connection that is served
/// without ever waiting (a request already received when accepted, a response the socket takes
/// at once) closes without `epoll_ctl` at all.
#[derive(Debug)]
pub struct LazyRegistered {
    // Declared before `sock`: dropped (deregistered) before the descriptor closes.
    reg: std::cell::OnceCell<tokio::io::unix::AsyncFd<RawFd>>,
    sock: std::net::TcpStream,
}

impl LazyRegistered {
    pub fn new(sock: std::net::TcpStream) -> Self {
        LazyRegistered { reg: std::cell::OnceCell::new(), sock }
    }

    pub fn socket(&self) -> &std::net::TcpStream {
        &self.sock
    }

    /// The registration, if made.
    pub fn registered(&self) -> Option<&tokio::io::unix::AsyncFd<RawFd>> {
        self.reg.get()
    }

    /// The registration, made now if it was not (for reading and writing, edge-triggered).
    pub fn register(&self) -> io::Result<&tokio::io::unix::AsyncFd<RawFd>> {
        use std::os::fd::AsRawFd;
        if let Some(r) = self.reg.get() {
            return Ok(r);
        }
        // SAFETY: the descriptor is owned by `self.sock`, which cannot be taken out of `self`
        // and is dropped after `self.reg` (field order): it stays open, with the same number,
        // for the registration's whole life — the contract of `register`.
        let r = unsafe { tokio::io::unix::AsyncFd::register(self.sock.as_raw_fd()) }
            .map_err(io::Error::from)?;
        Ok(self.reg.get_or_init(|| r))
    }

    /// Drops the registration, if made (from any thread: another worker takes the socket over
    /// and registers it with its own event loop when it must wait).
    pub fn unregister(&mut self) {
        self.reg.take();
    }
}

/// A buffer of zeroed memory straight from the kernel (an anonymous private mapping): its
/// pages take no memory until written, so a connection that has received a few bytes holds
/// one page of it, not the whole buffer (a slow client's connection, its head trickling in).
/// A mapping the kernel refuses is the allocator's out-of-memory failure, as for a `Box`.
pub struct PageBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: a `PageBuf` owns its memory alone (as a `Box<[u8]>` does); nothing else points to it.
unsafe impl Send for PageBuf {}
// SAFETY: shared references only read it, as for a `Box<[u8]>`.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// `len` zeroed bytes (`len` > 0).
    pub fn new(len: usize) -> PageBuf {
        // SAFETY: a fresh anonymous mapping, asked of no address; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        match std::ptr::NonNull::new(p.cast::<u8>()).filter(|_| p != libc::MAP_FAILED) {
            Some(ptr) => PageBuf { ptr, len },
            None => {
                let layout =
                    std::alloc::Layout::array::<u8>(len).unwrap_or(std::alloc::Layout::new::<u8>());
                std::alloc::handle_alloc_error(layout)
            }
        }
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes the kernel zeroed, that this buffer owns alone while it lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for PageBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of that length, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod page_buf_tests {
    use super::PageBuf;

    #[test]
    fn a_page_buffer_is_zeroed_writable_and_its_own() {
        let mut a = PageBuf::new(16_384);
        let b = PageBuf::new(16_384);
        assert_eq!(a.len(), 16_384);
        assert!(a.iter().all(|&x| x == 0));
        a[0] = 7;
        a[16_383] = 9;
        assert_eq!((a[0], a[16_383]), (7, 9));
        assert!(b.iter().all(|&x| x == 0), "another buffer is untouched");
        // Moved to another thread and dropped there, as a pooled buffer may be.
        std::thread::spawn(move || drop(a)).join().expect("thread");
    }
}
