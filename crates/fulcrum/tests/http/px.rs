//! The `http` target's harness: one scenario, several proxies.
//!
//! A test is a closure run once per *target*: Fulcrum, and HAProxy 2.6 when it is installed. Each
//! run starts its own servers and its own proxy from the same configuration text (`{fe0}`...
//! become `fd@3`..., listening sockets opened here and passed to the child, which works for
//! HAProxy too; `{port0}`... their ports; `{dir}` the run's scratch directory), sends the same
//! bytes and asserts the same expectations. Whatever the closure returns is compared between the
//! targets, so a test can also say "same status line, same chosen headers, same bytes at the
//! server".
//!
//! `FULCRUM_TEST_TARGET` selects the targets: `fulcrum`, `haproxy` (proves that the expectations
//! are HAProxy's real behaviour) or `both` (the default; HAProxy is skipped when not installed).
//! `HAPROXY` names the binary (default `/usr/sbin/haproxy`, else `haproxy` in `PATH`).
//!
//! Header names are compared without case everywhere: HAProxy sends every header name in lower
//! case (to servers and to clients); values and order are compared exactly.
//!
//! Every request a Fulcrum proxy answers through the helpers here (`Px::send`, `get`,
//! `get_with`, `Client::request`/`try_request` on a client from `Px::client`/`client_to`), and
//! through `h2client::h2c`, is also given to `fulcrum explain` with the same configuration
//! file, frontend and client address (an HTTP/2 request as its HTTP/1.1 equivalent), and what
//! explain says (status, termination state, backend, server, the head the server got) must be
//! what the live proxy did (`crosscheck.rs`, issue 36 §2). The skip rule, in short (the
//! details and reasons are `crosscheck.rs`'s): no request is checked on a proxy whose live
//! state may leave its configuration (a runtime API, the stats admin form, agent checks,
//! conditions drawn by chance), and with health checks or observed errors none after a server
//! changed state; only the first request of a proxy whose
//! decisions read what requests accumulate (stick tables, counters, rates, `proc.`
//! variables); only the first request of each connection (over HTTP/2, a stream whose
//! request line the connection's other streams do not repeat, and its only stream where the
//! configuration reads `sess.` variables); only exactly one complete request that opens no
//! tunnel; at most a few distinct requests per proxy.
//! `FULCRUM_TEST_EXPLAIN=off` turns it off, `all` checks every eligible request.
#![allow(dead_code)]

use std::fmt::Debug;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use fulcrum_testserver::{Counts, Mode, Running};

use crate::crosscheck::{Checker, Live};
pub use crate::harness::Head;
use crate::harness::{scratch, spawn_with_listeners, Proc, BIN};

/// A proxy implementation under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Fulcrum,
    Haproxy,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Fulcrum => "fulcrum",
            Target::Haproxy => "haproxy",
        }
    }

    pub fn is_haproxy(self) -> bool {
        self == Target::Haproxy
    }
}

/// The HAProxy binary, if installed.
pub fn haproxy_bin() -> Option<String> {
    if let Ok(p) = std::env::var("HAPROXY") {
        return Some(p);
    }
    if std::path::Path::new("/usr/sbin/haproxy").exists() {
        return Some("/usr/sbin/haproxy".into());
    }
    let ok = Command::new("haproxy").arg("-v").output().map(|o| o.status.success());
    ok.unwrap_or(false).then(|| "haproxy".into())
}

/// The targets selected by `FULCRUM_TEST_TARGET`.
pub fn targets() -> Vec<Target> {
    let want = std::env::var("FULCRUM_TEST_TARGET").unwrap_or_default();
    match want.as_str() {
        "fulcrum" => vec![Target::Fulcrum],
        "haproxy" => {
            assert!(haproxy_bin().is_some(), "FULCRUM_TEST_TARGET=haproxy but no haproxy found");
            vec![Target::Haproxy]
        }
        "" | "both" => {
            let mut t = Vec::new();
            if haproxy_bin().is_some() {
                t.push(Target::Haproxy);
            }
            t.push(Target::Fulcrum);
            t
        }
        other => panic!("FULCRUM_TEST_TARGET={other}: expected fulcrum, haproxy or both"),
    }
}

/// Runs `scenario` once per selected target. Every target runs even when one fails; then the
/// failures are reported together. When several targets pass, their results must be equal.
pub fn each<R: Debug + PartialEq>(scenario: impl Fn(Target) -> R) {
    let mut failed = Vec::new();
    let mut results: Vec<(Target, R)> = Vec::new();
    for t in targets() {
        eprintln!("=== target {}", t.name());
        match catch_unwind(AssertUnwindSafe(|| scenario(t))) {
            Ok(r) => results.push((t, r)),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failed.push(format!("[{}] {msg}", t.name()));
            }
        }
    }
    assert!(failed.is_empty(), "failed on: {}", failed.join("\n"));
    if let Some(((t0, r0), rest)) = results.split_first() {
        for (t, r) in rest {
            assert_eq!(r0, r, "{} and {} observed different things", t0.name(), t.name());
        }
    }
}

/// A running proxy (either target) and the frontend addresses it was handed.
pub struct Px {
    pub target: Target,
    pub proc: Proc,
    pub addrs: Vec<SocketAddr>,
    pub dir: PathBuf,
    /// The `explain` cross-check of a Fulcrum proxy's answers (`crosscheck.rs`).
    pub explain: Option<Arc<Checker>>,
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// Replaces `{fe0}`... by `fd@3`... (returning the listeners, in order), `{port0}`... by their
/// port numbers, and `{dir}` by the scratch directory.
fn fill(cfg: &str, dir: &std::path::Path) -> (String, Vec<TcpListener>) {
    let mut listeners = Vec::new();
    let mut text = cfg.replace("{dir}", &dir.to_string_lossy());
    for i in 0..8 {
        let key = format!("{{fe{i}}}");
        if text.contains(&key) {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind frontend");
            let port = l.local_addr().expect("addr").port();
            text = text.replace(&key, &format!("fd@{}", 3 + listeners.len()));
            text = text.replace(&format!("{{port{i}}}"), &port.to_string());
            listeners.push(l);
        }
    }
    (text, listeners)
}

impl Target {
    /// Starts this target with `cfg`.
    pub fn start(self, cfg: &str) -> Px {
        self.start_with(cfg, &[])
    }

    /// Starts this target with `cfg` after writing `files` (name, content) in its directory.
    pub fn start_with(self, cfg: &str, files: &[(&str, &str)]) -> Px {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = scratch(&format!("http-{n}-{}", self.name()));
        for (name, content) in files {
            std::fs::write(dir.join(name), content).expect("write file");
        }
        let (text, listeners) = fill(cfg, &dir);
        let path = dir.join("proxy.cfg");
        std::fs::write(&path, &text).expect("write cfg");
        let addrs: Vec<SocketAddr> =
            listeners.iter().map(|l| l.local_addr().expect("addr")).collect();
        let mut cmd = match self {
            Target::Fulcrum => {
                let mut c = Command::new(BIN);
                c.arg("-d");
                c
            }
            Target::Haproxy => {
                let mut c = Command::new(haproxy_bin().expect("haproxy"));
                // Foreground without debug traces.
                c.arg("-db");
                c
            }
        };
        cmd.arg("-f").arg(&path);
        let proc = spawn_with_listeners(cmd, &dir, listeners);
        let explain = match self {
            Target::Fulcrum => Checker::new(&path, &text, &addrs, proc.log.clone()).map(Arc::new),
            Target::Haproxy => None,
        };
        // The HTTP/2 client finds it by address.
        if let Some(check) = &explain {
            check.start();
        }
        Px { target: self, proc, addrs, dir, explain }
    }
}

impl Drop for Px {
    /// The `explain` checks of the requests this proxy answered (`crosscheck.rs`), while it
    /// is still up, unless the test already failed.
    fn drop(&mut self) {
        if let Some(check) = &self.explain {
            check.stop();
            if !std::thread::panicking() {
                check.finish();
            }
        }
    }
}

impl Px {
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }
    pub fn is_haproxy(&self) -> bool {
        self.target.is_haproxy()
    }
    /// A new client connection to frontend 0.
    pub fn client(&self) -> Client {
        self.client_to(0)
    }
    pub fn client_to(&self, fe: usize) -> Client {
        let mut c = Client::connect(self.addrs[fe]);
        c.explain = self.explain.clone().map(|e| (e, fe));
        c
    }
    /// One request on a new connection (raw bytes as given); the first final answer.
    pub fn send(&self, raw: &[u8]) -> Resp {
        self.client().request(raw)
    }
    /// `GET <path>` with `Host: t` and `Connection: close` on a new connection.
    pub fn get(&self, path: &str) -> Resp {
        self.send(get(path).as_bytes())
    }
    /// `GET <path>` with extra header lines (each `Name: value`).
    pub fn get_with(&self, path: &str, headers: &[&str]) -> Resp {
        self.send(get_with(path, headers).as_bytes())
    }
    pub fn log(&self) -> String {
        self.proc.log_text()
    }
}

/// `GET <path> HTTP/1.1` with `Host: t` and `Connection: close`.
pub fn get(path: &str) -> String {
    get_with(path, &[])
}

pub fn get_with(path: &str, headers: &[&str]) -> String {
    let mut s = format!("GET {path} HTTP/1.1\r\nHost: t\r\n");
    for h in headers {
        s.push_str(h);
        s.push_str("\r\n");
    }
    s.push_str("Connection: close\r\n\r\n");
    s
}

/// A test server in this process (one thread).
pub fn server(name: &str) -> Running {
    server_mode(name, Mode::Http)
}

pub fn server_mode(name: &str, mode: Mode) -> Running {
    fulcrum_testserver::spawn(fulcrum_testserver::Options {
        listen: vec!["127.0.0.1:0".parse().expect("addr")],
        name: name.into(),
        threads: 1,
        mode,
        quiet: true,
    })
    .expect("test server")
}

/// A parsed answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resp {
    pub version: String,
    pub status: u16,
    pub reason: String,
    /// In order, names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Vec<(String, String)>,
    /// Interim (1xx) answers received before this one.
    pub interim: Vec<Resp>,
    /// Whether the connection was closed right after this answer was read (only known for
    /// close-delimited bodies).
    pub closed: bool,
}

impl Resp {
    /// The first value of a header (name without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// Every value of a header, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The test server that answered (`X-Server`).
    pub fn server(&self) -> &str {
        self.header("x-server").unwrap_or("")
    }
    /// The request head that reached the server, when the answer is an echo (`/echo`).
    pub fn echoed(&self) -> Head {
        Head::parse(&self.body).unwrap_or_else(|| panic!("not an echoed head: {:?}", self.text()))
    }
    /// Status line and the listed headers (names lower-cased): what tests compare across
    /// targets.
    pub fn summary(&self, headers: &[&str]) -> (u16, Vec<(String, Option<String>)>) {
        let h =
            headers.iter().map(|n| (n.to_lowercase(), self.header(n).map(String::from))).collect();
        (self.status, h)
    }
}

/// A raw client connection with a read-ahead buffer.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
    eof: bool,
    /// The proxy's `explain` cross-check and the harness frontend this client reached.
    explain: Option<(Arc<Checker>, usize)>,
    /// Bytes were sent on this connection already.
    used: bool,
}

/// Every read and write gives up after this: the slowest expected answer takes 1.5 s.
pub const IO_TIMEOUT: Duration = Duration::from_secs(3);

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        // A blocking connect returns once the handshake is done, even if the proxy resets the
        // connection right after (connect_timeout would report that reset instead); loopback.
        let s = TcpStream::connect(addr).expect("connect");
        // These fail (EINVAL) on a connection the peer already reset: then reads fail anyway.
        let _ = s.set_read_timeout(Some(IO_TIMEOUT));
        let _ = s.set_write_timeout(Some(IO_TIMEOUT));
        let _ = s.set_nodelay(true);
        Client { s, buf: Vec::new(), eof: false, explain: None, used: false }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.used = true;
        self.s.write_all(bytes).expect("write to proxy");
    }

    /// Writes, ignoring errors (the proxy may already have closed).
    pub fn send_lossy(&mut self, bytes: &[u8]) -> bool {
        self.used = true;
        self.s.write_all(bytes).is_ok()
    }

    /// Sends `raw` and reads the final answer (interim ones are in `interim`); a Fulcrum
    /// proxy's answer is cross-checked with `explain` (see the module doc).
    pub fn request(&mut self, raw: &[u8]) -> Resp {
        self.try_request(raw).unwrap_or_else(|e| panic!("no answer to {:?}: {e}", show(raw)))
    }

    /// [`Client::request`], the lack of an answer told rather than a panic.
    pub fn try_request(&mut self, raw: &[u8]) -> Result<Resp, String> {
        let first = !self.used;
        self.send_lossy(raw);
        let resp = self.read_final(raw.starts_with(b"HEAD "))?;
        if let (Some((check, fe)), Ok(src)) = (&self.explain, self.s.local_addr()) {
            let served = resp.has("x-server").then_some(&resp.body[..]);
            check.check(*fe, src, raw, first, Live { status: resp.status, served });
        }
        Ok(resp)
    }

    /// Reads more bytes into the buffer; false on EOF/reset/timeout.
    fn fill(&mut self) -> Result<(), String> {
        if self.eof {
            return Err("connection closed".into());
        }
        let mut tmp = [0u8; 16384];
        let read = loop {
            match self.s.read(&mut tmp) {
                // A signal caught by the test process (glibc's own, a thread's): a read under
                // `SO_RCVTIMEO` is never restarted (signal(7)), so it is read again here.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        match read {
            Ok(0) => {
                self.eof = true;
                Err("connection closed".into())
            }
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                self.eof = true;
                Err("connection reset".into())
            }
            Err(e) => Err(format!("read: {e}")),
        }
    }

    fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(p) = self.buf.iter().position(|&b| b == b'\n') {
                let l: Vec<u8> = self.buf.drain(..=p).collect();
                let l = String::from_utf8_lossy(&l).into_owned();
                return Ok(l.trim_end_matches('\n').trim_end_matches('\r').to_string());
            }
            self.fill()?;
        }
    }

    pub fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.buf.len() < n {
            self.fill()?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// One answer, interim or final. `head`: it answers a HEAD request.
    pub fn read_one(&mut self, head: bool) -> Result<Resp, String> {
        let status_line = self.line()?;
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default().to_string();
        let status = parts
            .next()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let reason = parts.next().unwrap_or_default().to_string();
        let mut r = Resp { version, status, reason, ..Resp::default() };
        loop {
            let l = self.line()?;
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').ok_or_else(|| format!("bad header line {l:?}"))?;
            r.headers.push((n.to_string(), v.trim().to_string()));
        }
        if head || status < 200 || status == 204 || status == 304 {
            return Ok(r);
        }
        let chunked = r.header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        if chunked {
            loop {
                let size_line = self.line()?;
                let size = size_line.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size, 16)
                    .map_err(|_| format!("bad chunk size {size_line:?}"))?;
                if size == 0 {
                    loop {
                        let l = self.line()?;
                        if l.is_empty() {
                            return Ok(r);
                        }
                        if let Some((n, v)) = l.split_once(':') {
                            r.trailers.push((n.to_string(), v.trim().to_string()));
                        }
                    }
                }
                let data = self.read_exact(size + 2)?;
                r.body.extend_from_slice(&data[..size]);
            }
        }
        if let Some(cl) = r.header("content-length") {
            let n: usize = cl.parse().map_err(|_| format!("bad content-length {cl:?}"))?;
            r.body = self.read_exact(n)?;
            return Ok(r);
        }
        // Close-delimited.
        loop {
            match self.fill() {
                Ok(()) => {}
                Err(e) if self.eof => {
                    let _ = e;
                    r.body = std::mem::take(&mut self.buf);
                    r.closed = true;
                    return Ok(r);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The final answer; interim answers before it are collected in `interim`.
    pub fn read_final(&mut self, head: bool) -> Result<Resp, String> {
        let mut interim = Vec::new();
        loop {
            let r = self.read_one(head)?;
            if r.status >= 200 || r.status == 101 {
                return Ok(Resp { interim, ..r });
            }
            interim.push(r);
        }
    }

    pub fn read(&mut self) -> Resp {
        self.read_final(false).unwrap_or_else(|e| panic!("no answer: {e}"))
    }

    /// True if the proxy closes the connection (EOF or reset) within `within`, with nothing but
    /// (possibly) already buffered bytes left; extra bytes received are kept in the buffer.
    pub fn closed_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.eof {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let _ = self.s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            let r = self.fill();
            let _ = self.s.set_read_timeout(Some(IO_TIMEOUT));
            if r.is_err() && !self.eof {
                return false;
            }
        }
    }

    /// Whatever is buffered and not yet parsed.
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Reads whatever arrives within `within` (or until EOF); returns it with what was buffered.
    pub fn read_for(&mut self, within: Duration) -> Vec<u8> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline && !self.eof {
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = self.s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            if self.fill().is_err() {
                break;
            }
        }
        let _ = self.s.set_read_timeout(Some(IO_TIMEOUT));
        std::mem::take(&mut self.buf)
    }
}

/// Printable form of raw bytes.
pub fn show(raw: &[u8]) -> String {
    raw.escape_ascii().to_string()
}

/// Polls `cond` every 5 ms until true or `within` passes.
pub fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

/// An address where nothing listens and that no port-0 bind can be given (unlike a port bound
/// then closed, which another test may get in the meantime).
pub const DEAD: &str = "127.0.0.1:1";

/// `defaults` for HTTP scenarios: short but safe timeouts.
pub const DEFAULTS: &str =
    "defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n";

/// A `listen` proxy on `{fe0}` with the given lines, in HTTP mode.
pub fn listen(lines: &str) -> String {
    format!("{DEFAULTS}listen px\n bind {{fe0}}\n{lines}")
}
