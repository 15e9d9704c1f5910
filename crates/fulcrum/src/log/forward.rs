//! `log-forward` sections at run time: syslog messages received over UDP (`dgram-bind`, one
//! per datagram) or TCP (`bind`: RFC 6587 octet counting, or one message per line) are read as
//! RFC 5424 or RFC 3164 (level, facility, host, tag and pid kept) and sent on to the section's
//! `log` targets, each in its own format, as HAProxy's log-forward does.
//!
//! Listeners have their own threads (blocking reads: relaying logs is not the request path),
//! started once with the process; a reload keeps them as they were started.
//!
//! Must not touch: the targets' formats and sockets (`syslog`), the proxies' own logging.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use super::syslog::Logger;

/// A message as received, its header read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Received<'a> {
    pub level: Option<u8>,
    pub facility: Option<u8>,
    pub host: Option<&'a str>,
    pub tag: Option<&'a str>,
    pub pid: Option<u32>,
    pub msg: &'a [u8],
}

/// Reads a syslog message: `<PRI>1 TIME HOST APP PROCID MSGID SD MSG` (RFC 5424),
/// `<PRI>Mmm dd hh:mm:ss [HOST ]TAG[PID]: MSG` (RFC 3164, HAProxy's `local`), or without
/// header (then sent on whole).
pub fn parse<'a>(raw: &'a [u8]) -> Received<'a> {
    let end = raw.iter().rposition(|&c| c != b'\n' && c != b'\r' && c != 0).map_or(0, |i| i + 1);
    let raw = &raw[..end];
    let whole = Received { msg: raw, ..Received::default() };
    let Some(rest) = raw.strip_prefix(b"<") else { return whole };
    let Some(close) = rest.iter().take(4).position(|&c| c == b'>') else { return whole };
    let Some(pri) = std::str::from_utf8(&rest[..close]).ok().and_then(|p| p.parse::<u16>().ok())
    else {
        return whole;
    };
    let (facility, level) = (Some((pri / 8).min(23) as u8), Some((pri % 8) as u8));
    let rest = &rest[close + 1..];
    let text = |b: &'a [u8]| std::str::from_utf8(b).ok();
    let word = |b: &'a [u8]| -> (&'a [u8], &'a [u8]) {
        match b.iter().position(|&c| c == b' ') {
            Some(i) => (&b[..i], &b[i + 1..]),
            None => (b, &b[b.len()..]),
        }
    };
    let nil = |w: &'a [u8]| if w == b"-" { None } else { text(w) };
    if let Some(r) = rest.strip_prefix(b"1 ") {
        let (_time, r) = word(r);
        let (host, r) = word(r);
        let (tag, r) = word(r);
        let (pid, r) = word(r);
        let (_msgid, r) = word(r);
        // Structured data: `-` or `[...]` elements (brackets inside quoted values escaped).
        let r = if let Some(after) = r.strip_prefix(b"- ") {
            after
        } else if r.first() == Some(&b'[') {
            let (mut i, mut depth_end, mut quoted) = (0, r.len(), false);
            while i < r.len() {
                match r[i] {
                    b'\\' => i += 1,
                    b'"' => quoted = !quoted,
                    b']' if !quoted && r.get(i + 1) != Some(&b'[') => {
                        depth_end = i + 1;
                        break;
                    }
                    _ => {}
                }
                i += 1;
            }
            r[depth_end..].strip_prefix(b" ").unwrap_or(&r[depth_end..])
        } else {
            r
        };
        return Received {
            level,
            facility,
            host: nil(host),
            tag: nil(tag),
            pid: nil(pid).and_then(|p| p.parse().ok()),
            msg: r,
        };
    }
    // RFC 3164: a 15-character time, then the host unless the next word is already the tag.
    let r = match rest.get(15) {
        Some(b' ') if rest[3] == b' ' => &rest[16..],
        _ => rest,
    };
    let (first, after) = word(r);
    let is_tag = |w: &[u8]| w.ends_with(b":") || w.contains(&b'[');
    let (host, tagword, msg) = if is_tag(first) {
        (None, first, after)
    } else {
        let (second, after2) = word(after);
        if is_tag(second) {
            (text(first), second, after2)
        } else {
            return Received { level, facility, msg: r, ..Received::default() };
        }
    };
    let tagword = tagword.strip_suffix(b":").unwrap_or(tagword);
    let (tag, pid) = match tagword.iter().position(|&c| c == b'[') {
        Some(i) => {
            let pid = tagword[i + 1..].strip_suffix(b"]").and_then(text);
            (text(&tagword[..i]), pid.and_then(|p| p.parse().ok()))
        }
        None => (text(tagword), None),
    };
    Received { level, facility, host, tag, pid, msg }
}

/// A `log-forward` section's sockets, bound (at start-up, with the process's privileges) and
/// not yet served.
pub struct Bound {
    dgram: Vec<(UdpSocket, Arc<Logger>)>,
    stream: Vec<(TcpListener, Arc<Logger>, Option<Duration>)>,
}

/// Binds every `log-forward` section's sockets.
pub fn bind(
    forwards: &[(fulcrum_config::logfwd::LogForward, Arc<Logger>)],
) -> Result<Bound, String> {
    let mut bound = Bound { dgram: Vec::new(), stream: Vec::new() };
    for (f, logger) in forwards {
        for a in &f.dgram_binds {
            let sock = UdpSocket::bind(a).map_err(|e| {
                format!("log-forward '{}' : cannot bind UDP socket ({e}) for {a}", f.name)
            })?;
            bound.dgram.push((sock, Arc::clone(logger)));
        }
        for a in &f.binds {
            let l = TcpListener::bind(a).map_err(|e| {
                format!("log-forward '{}' : cannot bind socket ({e}) for {a}", f.name)
            })?;
            bound.stream.push((l, Arc::clone(logger), f.timeout_client));
        }
    }
    Ok(bound)
}

impl Bound {
    /// Serves the sockets, each on a thread of its own (in the process that stays: threads do
    /// not survive a fork).
    pub fn run(self) {
        for (sock, logger) in self.dgram {
            spawn(move || {
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = sock.recv(&mut buf) {
                    logger.forward(&parse(&buf[..n]));
                }
            });
        }
        for (l, logger, idle) in self.stream {
            spawn(move || {
                for conn in l.incoming().flatten() {
                    let logger = Arc::clone(&logger);
                    let _ = conn.set_read_timeout(idle.or(Some(Duration::from_secs(3600))));
                    spawn(move || stream(conn, &logger));
                }
            });
        }
    }
}

fn spawn(f: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new().name("fulcrum-logfwd".into()).spawn(f);
}

/// The messages of one TCP connection: `<len> <msg>` frames, or lines.
fn stream(mut conn: std::net::TcpStream, logger: &Logger) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while let Some((msg, used)) = frame(&buf) {
            logger.forward(&parse(msg));
            buf.drain(..used);
        }
        if buf.len() > 1 << 20 {
            return; // a frame larger than anything syslog sends
        }
    }
}

/// The first complete message of `buf` and the bytes it takes.
fn frame(buf: &[u8]) -> Option<(&[u8], usize)> {
    let digits = buf.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && buf.get(digits) == Some(&b' ') {
        let len: usize = std::str::from_utf8(&buf[..digits]).ok()?.parse().ok()?;
        let start = digits + 1;
        return (buf.len() >= start + len).then(|| (&buf[start..start + len], start + len));
    }
    let nl = buf.iter().position(|&c| c == b'\n' || c == 0)?;
    Some((&buf[..nl], nl + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3164_and_rfc5424_headers() {
        let m = parse(b"<134>Nov 26 10:00:00 fulcrum[42]: hello world\n");
        assert_eq!(
            m,
            Received {
                level: Some(6),
                facility: Some(16),
                host: None,
                tag: Some("fulcrum"),
                pid: Some(42),
                msg: b"hello world"
            }
        );
        let m = parse(b"<134>Nov  6 10:00:00 web1 haproxy[7]: x y");
        assert_eq!(
            (m.host, m.tag, m.pid, m.msg),
            (Some("web1"), Some("haproxy"), Some(7), &b"x y"[..])
        );
        let m = parse(b"<133>1 2026-11-26T10:00:00.1+00:00 - fulcrum 42 - - GET /a");
        assert_eq!(
            (m.level, m.host, m.tag, m.pid, m.msg),
            (Some(5), None, Some("fulcrum"), Some(42), &b"GET /a"[..])
        );
        let m = parse(b"<134>1 T h app - id [a x=\"]\\]\"][b] text");
        assert_eq!((m.host, m.tag, m.pid, m.msg), (Some("h"), Some("app"), None, &b"text"[..]));
        assert_eq!(parse(b"no header").msg, b"no header");
    }

    #[test]
    fn frames_are_octet_counted_or_lines() {
        assert_eq!(frame(b"5 hello6 world!"), Some((&b"hello"[..], 7)));
        assert_eq!(frame(b"5 hel"), None);
        assert_eq!(frame(b"<134>a\n<134>b"), Some((&b"<134>a"[..], 7)));
        assert_eq!(frame(b"<134>a"), None);
    }
}
