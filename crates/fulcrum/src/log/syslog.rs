//! Sending log messages to a proxy's `log` targets as HAProxy's `__send_log()` does: a header
//! in the target's format (`<PRI>`, local time, host, `tag[pid]: `...), the message cut to the
//! target's `len`, a final LF, one datagram (UDP or UNIX) or one write (`stdout`/`stderr`).
//!
//! Sending never blocks a worker: each worker thread has its own unbound datagram sockets, sends
//! with `MSG_DONTWAIT`, and a full socket buffer drops the message and counts it (`dropped()`).
//! Must not touch: what a message says (callers build it), which messages are sent.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{IoSlice, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::worker::{Id, Slot};

use fulcrum_config::{LogAddr, LogEntry, LogTarget, SyslogFormat};

/// Syslog levels HAProxy uses.
pub const EMERG: u8 = 0;
pub const ALERT: u8 = 1;
pub const ERR: u8 = 3;
pub const WARNING: u8 = 4;
pub const NOTICE: u8 = 5;
pub const INFO: u8 = 6;

/// Messages dropped because a target's socket buffer was full.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Counts messages a batched send dropped.
pub(super) fn count_dropped(n: u64) {
    DROPPED.fetch_add(n, Ordering::Relaxed);
}

/// Messages dropped so far (`show info`'s `DroppedLogs`).
#[allow(dead_code)] // `show info` (the runtime API issue) reads it; unit-tested below
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Where one target's messages go, resolved at start-up.
#[derive(Debug, Clone)]
enum Dest {
    Inet(SocketAddr),
    Unix(PathBuf),
    Fd(i32),
    Ring(Arc<super::ring::Ring>),
}

#[derive(Debug, Clone)]
struct Target {
    /// Its place among its logger's targets, from 1 (HAProxy's `logger #<n>` in alerts).
    number: usize,
    dest: Dest,
    format: SyslogFormat,
    facility: u8,
    level: u8,
    minlevel: u8,
    maxlen: usize,
    sample: Option<Sampling>,
}

/// `sample <ranges>:<size>`: which of each `size` messages in turn are sent. Each copy of a
/// target (`log global` in a proxy) counts its own messages, as in HAProxy.
#[derive(Debug)]
struct Sampling {
    ranges: Box<[(u32, u32)]>,
    size: u32,
    count: AtomicU64,
}

impl Clone for Sampling {
    fn clone(&self) -> Self {
        Sampling { ranges: self.ranges.clone(), size: self.size, count: AtomicU64::new(0) }
    }
}

impl Sampling {
    /// Counts one message; whether it is one to send.
    fn take(&self) -> bool {
        let n = self.count.fetch_add(1, Ordering::Relaxed) % u64::from(self.size) + 1;
        self.ranges.iter().any(|&(lo, hi)| n >= u64::from(lo) && n <= u64::from(hi))
    }
}

/// A proxy's log targets with the header fields they share.
#[derive(Debug)]
pub struct Logger {
    targets: Vec<Target>,
    tag: Arc<str>,
    host: Option<Arc<str>>,
}

/// What every logger of the process shares (from `global`).
#[derive(Debug, Clone)]
pub struct Common {
    pub tag: Arc<str>,
    pub host: Option<Arc<str>>,
    /// `global`'s targets, resolved once: `log global` stands for them.
    global: Vec<Target>,
}

impl Common {
    /// From `global`; a target that does not resolve is an error (as in HAProxy) and left out.
    pub fn new(g: &fulcrum_config::Global, errors: &mut Vec<String>) -> Self {
        let program = std::env::args()
            .next()
            .and_then(|a| a.rsplit('/').next().map(str::to_string))
            .unwrap_or_else(|| "fulcrum".into());
        let tag: Arc<str> = g.log_tag.clone().unwrap_or(program).into();
        let host = g.log_send_hostname.as_ref().map(|h| {
            let name = h.clone().unwrap_or_else(|| crate::sys::hostname().to_string());
            Arc::<str>::from(name)
        });
        let mut global = Vec::new();
        for e in &g.logs {
            if let LogEntry::Target(t) = e {
                match target(t) {
                    Ok(t) => global.push(t),
                    Err(e) => errors.push(e),
                }
            }
        }
        Common { tag, host, global }
    }
}

impl Logger {
    /// The logger of a proxy whose `log` lines are `entries` (`log global` stands for
    /// `global`'s); `None` without targets. Host names are resolved here.
    pub fn build(
        entries: &[LogEntry],
        tag: Option<&str>,
        common: &Common,
    ) -> Result<Option<Logger>, String> {
        let mut targets = Vec::new();
        for e in entries {
            match e {
                LogEntry::Global => targets.extend(common.global.iter().cloned()),
                LogEntry::Target(t) => targets.push(target(t)?),
            }
        }
        if targets.is_empty() {
            return Ok(None);
        }
        for (i, t) in targets.iter_mut().enumerate() {
            t.number = i + 1;
        }
        let tag = tag.map_or_else(|| Arc::clone(&common.tag), Arc::from);
        Ok(Some(Logger { targets, tag, host: common.host.clone() }))
    }

    /// Checks at start that each UNIX socket target has a reader (a datagram socket is
    /// connected to it, nothing sent): one that has none (`/dev/log` missing from a chroot)
    /// gets the alert its first line would get later, at once.
    pub fn probe(&self) {
        for t in &self.targets {
            if let Dest::Unix(path) = &t.dest {
                let reached = socket2::SockAddr::unix(path)
                    .and_then(|a| dgram_socket(socket2::Domain::UNIX)?.connect(&a));
                if let Err(e) = reached {
                    send_failed(t.number, &e);
                }
            }
        }
    }

    /// Sends `msg` at `level` to every target that takes that level.
    pub fn send(&self, level: u8, msg: &str) {
        self.send_bytes(level, msg.as_bytes(), None);
    }

    /// Whether a target writes RFC 5424 (whose lines carry structured data).
    pub fn wants_sd(&self) -> bool {
        self.targets.iter().any(|t| t.format == SyslogFormat::Rfc5424)
    }

    /// Sends `msg` at `level`; RFC 5424 targets put `sd` (rendered `log-format-sd`, with its
    /// trailing space) in their structured-data field, `- ` without it.
    pub fn send_bytes(&self, level: u8, msg: &[u8], sd: Option<&[u8]>) {
        let end = msg.iter().rposition(|&c| c != b'\n' && c != 0).map_or(0, |i| i + 1);
        let msg = &msg[..end];
        for t in &self.targets {
            if level > t.level || t.sample.as_ref().is_some_and(|s| !s.take()) {
                continue;
            }
            let level = level.max(t.minlevel);
            if t.format == SyslogFormat::Rfc5424 {
                let mut header =
                    header(t.format, level, t.facility, self.host.as_deref(), &self.tag, pid())
                        .into_bytes();
                // The structured data as it is, without its trailing spaces, then one.
                let sd = sd.unwrap_or(b"-");
                let end = sd.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
                header.extend_from_slice(&sd[..end]);
                header.push(b' ');
                send_one(t, &header, msg);
                continue;
            }
            if has_subsecond_time(t.format) {
                let header =
                    header(t.format, level, t.facility, self.host.as_deref(), &self.tag, pid());
                send_one(t, header.as_bytes(), msg);
                continue;
            }
            // Headers without sub-second time change once a second: each worker keeps the
            // last few it built.
            let key = (t.format, t.facility, level);
            let sec = crate::clock::wall()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            HEADERS.with(|c| {
                let mut c = c.borrow_mut();
                let same = |h: &CachedHeader| {
                    h.key == key
                        && Arc::ptr_eq(&h.tag, &self.tag)
                        && match (&h.host, &self.host) {
                            (None, None) => true,
                            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                            _ => false,
                        }
                };
                let i = match c.iter().position(same) {
                    Some(i) => i,
                    None => {
                        if c.len() >= 8 {
                            c.remove(0);
                        }
                        c.push(CachedHeader {
                            key,
                            tag: Arc::clone(&self.tag),
                            host: self.host.clone(),
                            sec: u64::MAX,
                            bytes: String::new(),
                        });
                        c.len() - 1
                    }
                };
                let h = &mut c[i];
                if h.sec != sec {
                    h.bytes =
                        header(t.format, level, t.facility, self.host.as_deref(), &self.tag, pid());
                    h.sec = sec;
                }
                send_one(t, h.bytes.as_bytes(), msg);
            });
        }
    }
}

impl Logger {
    /// Sends on a message a `log-forward` section received, keeping its level, facility,
    /// host, tag and pid in the header each target writes.
    pub fn forward(&self, m: &super::forward::Received<'_>) {
        for t in &self.targets {
            let level = m.level.unwrap_or(INFO);
            if level > t.level || t.sample.as_ref().is_some_and(|s| !s.take()) {
                continue;
            }
            let level = level.max(t.minlevel);
            let facility = m.facility.unwrap_or(t.facility);
            let host = m.host.or(self.host.as_deref());
            let tag = m.tag.unwrap_or(&self.tag);
            let mut h = header(t.format, level, facility, host, tag, m.pid.unwrap_or(0));
            if m.pid.is_none() {
                h = h.replace("[0]: ", ": ").replace(" 0 - ", " - - ");
            }
            if t.format == SyslogFormat::Rfc5424 {
                h.push_str("- ");
            }
            send_one(t, h.as_bytes(), m.msg);
        }
    }
}

fn target(t: &LogTarget) -> Result<Target, String> {
    let dest = match &t.addr {
        LogAddr::Inet { host, port } => {
            let ip = crate::files::resolve(host).map_err(|_| {
                format!("parsing [{}] : log : invalid address: '{host}' in '{}'", t.span, t.written)
            })?;
            Dest::Inet(SocketAddr::new(ip, *port))
        }
        LogAddr::Unix(p) => Dest::Unix(p.clone()),
        LogAddr::Fd(n) => Dest::Fd(*n),
        LogAddr::Ring(name) => Dest::Ring(super::ring::find(name).ok_or_else(|| {
            format!("parsing [{}] : log : no such ring '{name}' in '{}'", t.span, t.written)
        })?),
    };
    // A ring stores messages in its own format and length unless the line says otherwise.
    let (format, maxlen) = match &dest {
        Dest::Ring(r) if t.format == SyslogFormat::Unspecified => {
            (r.format, r.maxlen.min(t.maxlen as usize))
        }
        Dest::Ring(r) => (t.format, r.maxlen.min(t.maxlen as usize)),
        _ => (t.format, t.maxlen as usize),
    };
    Ok(Target {
        number: 1,
        dest,
        format,
        facility: t.facility,
        level: t.level,
        minlevel: t.minlevel,
        maxlen,
        sample: t.sample.as_ref().map(|s| Sampling {
            ranges: s.ranges.clone().into(),
            size: s.size,
            count: AtomicU64::new(0),
        }),
    })
}

/// A header built for one target and level during one second.
struct CachedHeader {
    /// Format, facility and level; the tag and host it was built with (held, so that their
    /// addresses identify them).
    key: (SyslogFormat, u8, u8),
    tag: Arc<str>,
    host: Option<Arc<str>>,
    sec: u64,
    bytes: String,
}

/// This worker's recently built headers.
static HEADERS: Slot<RefCell<Vec<CachedHeader>>> =
    Slot::new(Id::SyslogHeaders, || RefCell::new(Vec::new()));

/// Formats whose header carries a time finer than the second (never cached).
fn has_subsecond_time(format: SyslogFormat) -> bool {
    matches!(format, SyslogFormat::Rfc5424 | SyslogFormat::Timed | SyslogFormat::Iso)
}

/// This process's id (HAProxy's `pid` in headers), read once.
fn pid() -> u32 {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PID.get_or_init(std::process::id)
}

/// The syslog header of one message (HAProxy's `build_log_header`).
fn header(
    format: SyslogFormat,
    level: u8,
    facility: u8,
    host: Option<&str>,
    tag: &str,
    pid: u32,
) -> String {
    let format = match format {
        SyslogFormat::Unspecified if host.is_some() => SyslogFormat::Rfc3164,
        SyslogFormat::Unspecified => SyslogFormat::Local,
        f => f,
    };
    let mut h = String::with_capacity(64);
    let pri = u32::from(facility) * 8 + u32::from(level);
    match format {
        SyslogFormat::Local
        | SyslogFormat::Rfc3164
        | SyslogFormat::Rfc5424
        | SyslogFormat::Priority => {
            let _ = write!(h, "<{pri}>");
        }
        SyslogFormat::Short | SyslogFormat::Timed => {
            let _ = write!(h, "<{level}>");
        }
        _ => {}
    }
    let now = crate::clock::wall();
    match format {
        SyslogFormat::Local | SyslogFormat::Rfc3164 => legacy_time(&mut h, now),
        SyslogFormat::Rfc5424 => {
            h.push_str("1 ");
            iso_time(&mut h, now);
        }
        SyslogFormat::Timed | SyslogFormat::Iso => iso_time(&mut h, now),
        _ => {}
    }
    match format {
        SyslogFormat::Rfc3164 | SyslogFormat::Local => {
            if format == SyslogFormat::Rfc3164 {
                let _ = write!(h, "{} ", host.unwrap_or("localhost"));
            }
            let _ = write!(h, "{tag}[{pid}]: ");
        }
        SyslogFormat::Rfc5424 => {
            let _ = write!(h, "{} {tag} {pid} - ", host.unwrap_or("-"));
        }
        _ => {}
    }
    h
}

const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// `Nov 24 00:42:56 ` in local time (a space pads single-digit days).
fn legacy_time(h: &mut String, now: std::time::SystemTime) {
    let t = crate::sys::local_time(now);
    let _ = write!(
        h,
        "{} {:2} {:02}:{:02}:{:02} ",
        MONTHS[(t.month as usize).min(11)],
        t.day,
        t.hour,
        t.min,
        t.sec
    );
}

/// `2026-11-24T00:42:56.566500+00:00 ` in local time.
fn iso_time(h: &mut String, now: std::time::SystemTime) {
    let t = crate::sys::local_time(now);
    let off = t.utc_offset_secs;
    let sign = if off < 0 { '-' } else { '+' };
    let off = off.unsigned_abs();
    let _ = write!(
        h,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{sign}{:02}:{:02} ",
        t.year,
        t.month + 1,
        t.day,
        t.hour,
        t.min,
        t.sec,
        t.micros,
        off / 3600,
        off % 3600 / 60
    );
}

/// This worker's datagram socket for UNIX targets (unconnected: a syslog daemon that
/// restarts makes a new socket at the same path).
static UNIX_SOCKET: Slot<RefCell<Option<socket2::Socket>>> =
    Slot::new(Id::SyslogUnix, || RefCell::new(None));
/// This worker's UDP sockets, one connected to each target address: a connected socket
/// sends without a route lookup per datagram.
static UDP_SOCKETS: Slot<RefCell<Vec<(SocketAddr, socket2::Socket)>>> =
    Slot::new(Id::SyslogUdp, || RefCell::new(Vec::new()));

/// The header and the message cut to `maxlen` in all, then LF, in one send.
fn send_one(t: &Target, header: &[u8], msg: &[u8]) {
    let h = &header[..header.len().min(t.maxlen)];
    // As HAProxy 2.6 measured: a header and its message take `len` bytes before the LF, a
    // message without header (`format raw`) one less.
    let room = if h.is_empty() { t.maxlen - 1 } else { t.maxlen - h.len() };
    let m = &msg[..msg.len().min(room)];
    let parts = [IoSlice::new(h), IoSlice::new(m), IoSlice::new(b"\n")];
    let sent = match &t.dest {
        Dest::Ring(r) => {
            r.put(&[h, m]);
            Ok(0)
        }
        Dest::Fd(fd) => write_fd(*fd, &parts),
        Dest::Inet(addr) => send_udp(*addr, &parts),
        Dest::Unix(path) => match socket2::SockAddr::unix(path) {
            Ok(a) => send_unix(&a, &parts),
            Err(e) => Err(e),
        },
    };
    if let Err(e) = sent {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        send_failed(t.number, &e);
    }
}

/// HAProxy's alert for a line a target could not take (`/dev/log` missing, a UNIX socket
/// nobody reads, no route): once in the process's life, as HAProxy prints it; a full socket
/// (`EAGAIN`) drops the line silently, as there.
#[cold]
fn send_failed(number: usize, e: &std::io::Error) {
    static ONCE: AtomicBool = AtomicBool::new(false);
    if e.kind() == std::io::ErrorKind::WouldBlock
        || ONCE.load(Ordering::Relaxed)
        || ONCE.swap(true, Ordering::Relaxed)
    {
        return;
    }
    let errno = e.raw_os_error().unwrap_or(0);
    let words = crate::sys::os_words(e);
    super::alert_as_is(&format!(
        "sendmsg()/writev() failed in logger #{number}: {words} (errno={errno})"
    ));
}

const SEND_FLAGS: libc::c_int = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;

/// A datagram socket that is never read from.
fn dgram_socket(domain: socket2::Domain) -> std::io::Result<socket2::Socket> {
    let sock = socket2::Socket::new(domain, socket2::Type::DGRAM.cloexec(), None)?;
    let _ = sock.set_recv_buffer_size(0);
    Ok(sock)
}

fn send_udp(to: SocketAddr, parts: &[IoSlice<'_>]) -> std::io::Result<usize> {
    UDP_SOCKETS.with(|s| {
        let mut s = s.borrow_mut();
        let i = match s.iter().position(|(a, _)| *a == to) {
            Some(i) => i,
            None => {
                let sock = dgram_socket(socket2::Domain::for_address(to))?;
                sock.connect(&to.into())?;
                s.push((to, sock));
                s.len() - 1
            }
        };
        if super::batch::add(&s[i].1, parts) {
            return Ok(parts.iter().map(|p| p.len()).sum());
        }
        let sent = match s[i].1.send_vectored_with_flags(parts, SEND_FLAGS) {
            // A refused earlier datagram (no listener yet): this one goes on.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                s[i].1.send_vectored_with_flags(parts, SEND_FLAGS)
            }
            r => r,
        };
        if sent.as_ref().is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock) {
            // The route or the source address changed (an address moved away): the next
            // line connects again, as an unconnected send would find its way each time.
            s.remove(i);
        }
        sent
    })
}

fn send_unix(to: &socket2::SockAddr, parts: &[IoSlice<'_>]) -> std::io::Result<usize> {
    UNIX_SOCKET.with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            *s = Some(dgram_socket(socket2::Domain::UNIX)?);
        }
        match &*s {
            Some(sock) => sock.send_to_vectored_with_flags(parts, to, SEND_FLAGS),
            None => Ok(0),
        }
    })
}

/// Writes to an inherited descriptor (`stdout`, `stderr`) without blocking the worker.
fn write_fd(fd: i32, parts: &[IoSlice<'_>]) -> std::io::Result<usize> {
    let line: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    match fd {
        1 => crate::sys::write_nonblocking(1, &line),
        2 => {
            // A worker's stderr is the terminal or a log file: one write per line.
            std::io::stderr().write(&line)
        }
        n => crate::sys::write_nonblocking(n, &line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_time(h: &str) -> String {
        // `<129>Nov 24 00:42:56 tag[1]: ` -> `<129>TIME tag[1]: `
        let re = regex::Regex::new(r"[A-Z][a-z]{2} [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] |[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{6}[+-][0-9][0-9]:[0-9][0-9] ")
            .expect("regex");
        re.replace(h, "TIME ").into_owned()
    }

    #[test]
    fn headers_in_each_format_as_haproxy_writes_them() {
        let pid = std::process::id();
        let h = |f, host| strip_time(&header(f, ALERT, 16, host, "mytag", pid));
        assert_eq!(h(SyslogFormat::Unspecified, None), format!("<129>TIME mytag[{pid}]: "));
        assert_eq!(
            h(SyslogFormat::Unspecified, Some("box")),
            format!("<129>TIME box mytag[{pid}]: ")
        );
        assert_eq!(h(SyslogFormat::Rfc3164, None), format!("<129>TIME localhost mytag[{pid}]: "));
        assert_eq!(h(SyslogFormat::Rfc5424, None), format!("<129>1 TIME - mytag {pid} - "));
        assert_eq!(h(SyslogFormat::Priority, None), "<129>");
        assert_eq!(h(SyslogFormat::Short, None), "<1>");
        assert_eq!(h(SyslogFormat::Timed, None), "<1>TIME ");
        assert_eq!(h(SyslogFormat::Iso, None), "TIME ");
        assert_eq!(h(SyslogFormat::Raw, None), "");
    }

    #[test]
    fn a_message_is_cut_to_the_target_length_with_its_header_and_a_udp_sink_gets_it() {
        let sink = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind sink");
        sink.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
        let t = Target {
            number: 1,
            dest: Dest::Inet(sink.local_addr().expect("addr")),
            format: SyslogFormat::Raw,
            facility: 16,
            level: 7,
            minlevel: 0,
            maxlen: 80,
            sample: None,
        };
        let long = "x".repeat(200);
        send_one(&t, b"<1>", long.as_bytes());
        let mut buf = [0u8; 1024];
        let n = sink.recv(&mut buf).expect("a datagram");
        assert_eq!(n, 81, "80 bytes then LF");
        assert!(buf[..n].starts_with(b"<1>xxx") && buf[n - 1] == b'\n');
        let logger = Logger { targets: vec![t], tag: "t".into(), host: None };
        logger.send(INFO, "kept\n");
        let n = sink.recv(&mut buf).expect("a datagram");
        assert_eq!(&buf[..n], b"kept\n");
        assert_eq!(dropped(), 0);
    }

    #[test]
    fn sampling_sends_the_messages_whose_turn_is_in_a_range() {
        let s = Sampling { ranges: vec![(1, 1), (3, 4)].into(), size: 5, count: AtomicU64::new(0) };
        let sent: Vec<bool> = (0..10).map(|_| s.take()).collect();
        let want = [true, false, true, true, false];
        assert_eq!(sent, [want, want].concat());
        // A copy (`log global` in another proxy) counts from its own start.
        let copy = s.clone();
        assert!(copy.take() && !copy.take());
    }
}
