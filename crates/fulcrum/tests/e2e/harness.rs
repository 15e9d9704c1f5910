//! Builders for black-box scenarios: test servers, the real `fulcrum` binary, and clients, all
//! on 127.0.0.1. Every wait has a deadline; every child is killed by PID when dropped.
//!
//! The proxy's frontend sockets are opened here and handed over as `fd@3`, `fd@4`, ... (the way
//! systemd does), so tests need no fixed ports and no readiness polling.
//!
//! Every request a Fulcrum proxy started here (`fulcrum`, `start_proxy`) answers through the
//! helpers that send a whole HTTP/1 request on a new connection and read the answer
//! (`get_with`, `http_get`, `servers_of`, `exchange`) is also given to `fulcrum explain`,
//! which must say what the live proxy did (`../http/crosscheck.rs`, its skip rule and what it
//! compares): as the proxy's `Proc` is dropped, the process still up, the recorded requests
//! are explained and compared with the live answers and the proxy's `-d` log lines.
#![allow(unsafe_code)] // pre_exec + dup2 to pass listening sockets to the child.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::crosscheck::{Checker, Live};

pub const BIN: &str = env!("CARGO_BIN_EXE_fulcrum");

/// A unique scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fulcrum-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A child process killed (SIGKILL, by PID) when dropped.
pub struct Proc {
    pub child: Child,
    pub log: Option<PathBuf>,
    /// A Fulcrum proxy's `explain` cross-check (`crosscheck.rs`), run as this is dropped.
    pub explain: Option<Arc<Checker>>,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }
    /// Waits for the process to exit, at most `within`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
    pub fn log_text(&self) -> String {
        self.log.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // The `explain` checks of the requests the proxy answered, while it still runs, unless
        // the test failed already; a mismatch fails the test once the process is gone.
        let checked = self.explain.take().and_then(|check| {
            check.stop();
            let finish = std::panic::AssertUnwindSafe(|| check.finish());
            (!std::thread::panicking()).then(|| std::panic::catch_unwind(finish))
        });
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            if let Some(log) = &self.log {
                eprintln!(
                    "--- {} ---\n{}",
                    log.display(),
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
        }
        if let Some(Err(mismatch)) = checked {
            std::panic::resume_unwind(mismatch);
        }
    }
}

/// A request head as it reached a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    pub version: String,
    /// In order; names lower-cased (HAProxy sends them so).
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub fn parse(raw: &[u8]) -> Option<Head> {
        let text = std::str::from_utf8(raw).ok()?;
        let head = text.split("\r\n\r\n").next()?;
        let mut lines = head.split("\r\n");
        let mut rl = lines.next()?.splitn(3, ' ');
        let (method, target, version) = (rl.next()?, rl.next()?, rl.next()?);
        let mut headers = Vec::new();
        for l in lines {
            let (n, v) = l.split_once(':')?;
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        Some(Head {
            method: method.into(),
            target: target.into(),
            version: version.into(),
            headers,
        })
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
    pub fn all(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().filter(|(n, _)| *n == name).map(|(_, v)| v.as_str()).collect()
    }
    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
    /// Header names in order.
    pub fn names(&self) -> Vec<&str> {
        self.headers.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// A running `fulcrum testserver`.
pub struct TestServer {
    pub proc: Proc,
    pub addr: SocketAddr,
    pub name: String,
}

/// Starts `fulcrum testserver --mode <mode> -n <name>` on a free loopback port.
pub fn testserver(mode: &str, name: &str) -> TestServer {
    testserver_at("127.0.0.1:0", mode, name)
}

pub fn testserver_at(listen: &str, mode: &str, name: &str) -> TestServer {
    let mut child = Command::new(BIN)
        .args(["testserver", "-L", listen, "-n", name, "--mode", mode, "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn testserver");
    let out = child.stdout.take().expect("stdout");
    let proc = Proc { child, log: None, explain: None };
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("testserver prints its address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected testserver output {line:?}"))
        .parse()
        .expect("address");
    TestServer { proc, addr, name: name.to_string() }
}

/// The child process of `parent` (its first found), from `/proc/<pid>/stat`.
pub fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // `pid (comm) state ppid ...`: the comm may hold spaces and parentheses.
        let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent).then_some(pid)
    })
}

/// A port on which nothing listens: bound without `SO_REUSEADDR` and never listening, so a
/// connection there is refused, and held for the rest of the run so that no other test's
/// listener can take the port (a freed port reused by another test's frontend received that
/// test's health checks of its "dead" server).
pub fn dead_addr() -> SocketAddr {
    static HELD: std::sync::Mutex<Vec<socket2::Socket>> = std::sync::Mutex::new(Vec::new());
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    s.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).expect("bind");
    let addr = s.local_addr().expect("addr").as_socket().expect("inet");
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    addr
}

/// A port free now, for a listener the test or the proxy binds later (bound then closed).
pub fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// A listening socket for a proxy's frontend, on a port below the kernel's ephemeral range
/// (from 32768): a port freed by a stopped test server or a `free_addr()` comes from that
/// range, and another test's proxy still sending health checks there would otherwise reach
/// this frontend and change its connection counts (a CI flake of the tcplog test).
pub fn frontend_listener() -> TcpListener {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Where this run starts in the span, so that runs side by side rarely meet.
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = LOW + (start + n) % SPAN;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port as u16)) {
            return l;
        }
    }
    TcpListener::bind("127.0.0.1:0").expect("bind frontend")
}

/// A running proxy and the frontend addresses it was handed.
pub struct Fulcrum {
    pub proc: Proc,
    pub addrs: Vec<SocketAddr>,
    pub dir: PathBuf,
}

impl Fulcrum {
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }
}

/// Starts `fulcrum -d -f <cfg>` where the config's `{fe0}`, `{fe1}`, ... are replaced by
/// `fd@3`, `fd@4`, ...: loopback sockets opened here, already listening.
pub fn fulcrum(test: &str, cfg: &str) -> Fulcrum {
    fulcrum_with(test, cfg, &[])
}

pub fn fulcrum_with(test: &str, cfg: &str, extra_args: &[&str]) -> Fulcrum {
    let dir = scratch(test);
    let mut listeners = Vec::new();
    let mut text = cfg.to_string();
    for i in 0..8 {
        let key = format!("{{fe{i}}}");
        if text.contains(&key) {
            let l = frontend_listener();
            text = text.replace(&key, &format!("fd@{}", 3 + i));
            listeners.push(l);
        }
    }
    let path = dir.join("fulcrum.cfg");
    std::fs::write(&path, &text).expect("write cfg");
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().expect("addr")).collect();
    let mut proc = spawn_fulcrum(&dir, &path, extra_args, listeners);
    cross_check(&mut proc, &path, &text, &addrs);
    Fulcrum { proc, addrs, dir }
}

/// Spawns the binary with the given listeners as fds 3, 4, ...
pub fn spawn_fulcrum(
    dir: &std::path::Path,
    cfg: &std::path::Path,
    extra_args: &[&str],
    listeners: Vec<TcpListener>,
) -> Proc {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let log = dir.join(format!("stderr-{n}.log"));
    let err = std::fs::File::create(&log).expect("log file");
    let fds: Vec<RawFd> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    let mut cmd = Command::new(BIN);
    cmd.arg("-d").arg("-f").arg(cfg).args(extra_args).stdout(Stdio::null()).stderr(err);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for (i, &fd) in fds.iter().enumerate() {
                let target = 3 + i as RawFd;
                if fd == target {
                    let flags = libc::fcntl(fd, libc::F_GETFD);
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                } else if libc::dup2(fd, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn fulcrum");
    drop(listeners);
    Proc { child, log: Some(log), explain: None }
}

/// Spawns any program with `listeners` as fds 3, 4, ... (for `bind fd@3`, as HAProxy accepts it
/// too) and its stderr in a log file in `dir`; stdout is discarded.
pub fn spawn_with_listeners(
    mut cmd: Command,
    dir: &std::path::Path,
    listeners: Vec<TcpListener>,
) -> Proc {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let log = dir.join(format!("stderr-p{n}.log"));
    let err = std::fs::File::create(&log).expect("log file");
    let fds: Vec<RawFd> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    assert!(fds.len() <= 8, "at most 8 listeners");
    cmd.stdout(Stdio::null()).stderr(err);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // First out of the way (a listener may sit on another one's target number), then
            // into place; dup2 leaves the targets without close-on-exec.
            let mut high = [0 as RawFd; 8];
            for (i, &fd) in fds.iter().enumerate() {
                high[i] = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                if high[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &fd) in high[..fds.len()].iter().enumerate() {
                if libc::dup2(fd, 3 + i as RawFd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn");
    drop(listeners);
    Proc { child, log: Some(log), explain: None }
}

/// A GET with extra header lines; returns the status line's code, the head and the body.
pub fn get_with(addr: SocketAddr, path: &str, extra: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    sent(addr, &s, req.as_bytes(), &out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    (code, head.to_string(), body)
}

/// The payload of a chunked body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// HAProxy's binary, when installed (scenarios then run under it too).
pub fn haproxy_bin() -> Option<&'static str> {
    ["/usr/sbin/haproxy", "/usr/bin/haproxy"].into_iter().find(|p| std::path::Path::new(p).exists())
}

/// Starts `which` ("fulcrum" or "haproxy", `None` when HAProxy is not installed) in the
/// foreground on `cfg`, where `{fe0}`..`{fe3}` become listening sockets made here (their
/// addresses are returned) and `{dir}` the test's scratch directory.
pub fn start_proxy(which: &str, test: &str, cfg: &str) -> Option<(Proc, Vec<SocketAddr>, PathBuf)> {
    let bin = if which == "haproxy" { haproxy_bin()? } else { BIN };
    let dir = scratch(&format!("{test}-{which}"));
    let mut text = cfg.replace("{dir}", &dir.display().to_string());
    let mut listeners = Vec::new();
    for i in 0..4 {
        let key = format!("{{fe{i}}}");
        if text.contains(&key) {
            listeners.push(frontend_listener());
            text = text.replace(&key, &format!("fd@{}", 3 + i));
        }
    }
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().expect("addr")).collect();
    let path = dir.join("proxy.cfg");
    std::fs::write(&path, &text).expect("write cfg");
    let mut cmd = Command::new(bin);
    // Foreground; Fulcrum with its `-d` log lines on stderr, for the `explain` cross-check
    // (HAProxy's `-d` would add its debug traces).
    cmd.arg(if which == "haproxy" { "-db" } else { "-d" }).arg("-f").arg(&path);
    let mut proc = spawn_with_listeners(cmd, &dir, listeners);
    if which != "haproxy" {
        cross_check(&mut proc, &path, &text, &addrs);
    }
    Some((proc, addrs, dir))
}

/// Gives the Fulcrum proxy `proc`, started from `text` (written at `path`) with the harness's
/// frontends at `addrs`, its `explain` cross-check.
fn cross_check(proc: &mut Proc, path: &std::path::Path, text: &str, addrs: &[SocketAddr]) {
    proc.explain = Checker::new(path, text, addrs, proc.log.clone()).map(Arc::new);
    if let Some(check) = &proc.explain {
        check.start();
    }
}

/// Hands a request sent alone on the new connection `s` to `addr`, and the whole answer read
/// back, to the `explain` cross-check of the Fulcrum proxy listening there, if the harness
/// started one (`crosscheck::sent`).
fn sent(addr: SocketAddr, s: &TcpStream, raw: &[u8], answer: &[u8]) {
    let (Ok(src), Some((status, served))) = (s.local_addr(), final_answer(answer)) else {
        return;
    };
    crate::crosscheck::sent(addr, src, raw, Live { status, served: served.as_deref() });
}

/// The final answer's status in the bytes a client read (interim answers passed over), and
/// its body (a chunked one decoded) when a test server made it (`X-Server`).
fn final_answer(mut buf: &[u8]) -> Option<(u16, Option<Vec<u8>>)> {
    loop {
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let status: u16 = head.get(9..12)?.parse().ok()?;
        buf = &buf[end + 4..];
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        let served = head.contains("\r\nx-server:").then(|| {
            let body = String::from_utf8_lossy(buf);
            if head.contains("\r\ntransfer-encoding: chunked") {
                dechunk(&body).into_bytes()
            } else {
                buf.to_vec()
            }
        });
        return Some((status, served));
    }
}

/// Runs `fulcrum <args>` to completion; returns (status code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run fulcrum");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `fulcrum -c -f <cfg text>`.
pub fn check(test: &str, cfg: &str) -> (i32, String, String) {
    let dir = scratch(test);
    let path = dir.join("check.cfg");
    std::fs::write(&path, cfg).expect("write cfg");
    let p = path.to_string_lossy().into_owned();
    run(&["-c", "-f", &p])
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s
}

/// One HTTP/1.1 request with `Connection: close`; returns (status, X-Server header, body length).
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String, usize)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    sent(addr, &s, req.as_bytes(), &buf);
    parse_response(&buf)
}

/// Sends `raw` on a new connection and reads until the proxy closes it (at most 5 s): all it
/// sent back.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    s.write_all(raw).expect("write");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    sent(addr, &s, raw, &buf);
    buf
}

pub fn parse_response(buf: &[u8]) -> Option<(u16, String, usize)> {
    let text = String::from_utf8_lossy(buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let server = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("x-server").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    Some((status, server, body.len()))
}

/// Which server answers each of `n` new connections.
pub fn servers_of(addr: SocketAddr, n: usize) -> Vec<String> {
    (0..n).map(|_| http_get(addr, "/").map(|r| r.1).unwrap_or_else(|| "<failed>".into())).collect()
}

pub fn count(names: &[String], who: &str) -> usize {
    names.iter().filter(|n| *n == who).count()
}

/// Reads until EOF or timeout; true if the peer closed (EOF) within `within`.
pub fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).expect("timeout");
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
        if Instant::now() > deadline {
            return false;
        }
    }
}

/// Sends `data` and reads exactly as many bytes back.
pub fn echo_roundtrip(s: &mut TcpStream, data: &[u8]) -> Vec<u8> {
    s.write_all(data).expect("write");
    let mut back = vec![0u8; data.len()];
    s.read_exact(&mut back).expect("read echo");
    back
}

pub fn half_close(s: &TcpStream) {
    s.shutdown(Shutdown::Write).expect("shutdown");
}

/// Polls `cond` until true or the deadline passes.
pub fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Sends one command to a runtime API UNIX socket and returns the whole answer.
pub fn api(sock: &std::path::Path, cmd: &str) -> String {
    let mut s = std::os::unix::net::UnixStream::connect(sock).expect("api");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(format!("{cmd}\n").as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// systemd's side of `Type=notify`: a datagram socket at the path `NOTIFY_SOCKET` names.
pub struct Notify(std::os::unix::net::UnixDatagram);

impl Notify {
    pub fn bind(path: &std::path::Path) -> Notify {
        let s = std::os::unix::net::UnixDatagram::bind(path).expect("notify socket");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        Notify(s)
    }

    /// The next notification (within 5 s).
    pub fn next(&self) -> String {
        let mut buf = [0u8; 256];
        let n = self.0.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}
