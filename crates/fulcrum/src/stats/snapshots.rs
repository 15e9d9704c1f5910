//! Error snapshots, as HAProxy keeps them for `show errors`: the last invalid request each
//! frontend received and the last invalid response each backend got, with the bytes as they
//! arrived (up to a buffer), where the error is, who sent them and when.
//!
//! Taken by the HTTP session when it refuses a head (`counters::capture`: a cold path, one lock
//! and one copy per refused message), rendered here for the runtime API. The proxies hold their
//! snapshots in `counters::Slot`s. Must not touch: what the session answers.

use std::fmt::Write as _;
use std::time::SystemTime;

use crate::counters::Snapshot;

/// One proxy's part of `show errors`: its name and id, and its snapshots.
pub struct ProxyErrors<'a> {
    pub name: &'a str,
    pub id: u32,
    pub request: Option<Snapshot>,
    pub response: Option<Snapshot>,
}

fn date(out: &mut String, t: SystemTime) {
    let mut b = Vec::new();
    crate::log::dates::log_date(&mut b, t);
    out.push_str(&String::from_utf8_lossy(&b));
}

/// `show errors [<proxy>] [request|response]` in HAProxy 2.6's format (without the H1
/// multiplexer's internal flags, which Fulcrum does not have).
pub fn render(proxies: &[ProxyErrors<'_>], bufsize: usize, out: &mut String) {
    out.push_str("Total events captured on [");
    date(out, SystemTime::now());
    let _ = writeln!(out, "] : {}", crate::counters::snapshots_taken());
    for p in proxies {
        for (s, req) in [(&p.request, true), (&p.response, false)] {
            let Some(s) = s else { continue };
            out.push_str(" \n[");
            date(out, s.when);
            let other = s.other.as_ref();
            let (oname, oid) = other.map_or(("<NONE>", -1), |(n, i)| (n.as_str(), i64::from(*i)));
            if req {
                let _ = write!(
                    out,
                    "] frontend {} (#{}): invalid request\n  backend {oname} (#{oid})",
                    p.name, p.id
                );
            } else {
                let _ = write!(
                    out,
                    "] backend {} (#{}): invalid response\n  frontend {oname} (#{oid})",
                    p.name, p.id
                );
            }
            let (sname, sid) =
                s.server.as_ref().map_or(("<NONE>", -1), |(n, i)| (n.as_str(), i64::from(*i)));
            let (ip, port) =
                s.src.map_or(("unix".to_string(), 0), |a| (a.ip().to_string(), a.port()));
            let len = s.buf.len();
            let _ = write!(
                out,
                ", server {sname} (#{sid}), event #{}, src {ip}:{port}\n  buffer starts at 0 (including 0 out), {} free,\n  len {len}, wraps at {}, error at position {}\n  \n",
                s.event,
                bufsize.saturating_sub(len),
                bufsize.saturating_sub(48),
                s.error_at,
            );
            dump(&s.buf, out);
        }
    }
}

/// HAProxy's `dump_text_line`: one output line per input line, at most 80 columns (longer
/// lines continue on a line marked `+`), non-printable bytes escaped.
fn dump(buf: &[u8], out: &mut String) {
    let mut ptr = 0;
    while ptr < buf.len() {
        let start = out.len();
        let bol = ptr == 0 || buf[ptr - 1] == b'\n';
        let _ = write!(out, "  {ptr:05}{} ", if bol { ' ' } else { '+' });
        let end = start + 80;
        while ptr < buf.len() {
            let c = buf[ptr];
            let esc: Option<char> = match c {
                b'\t' => Some('t'),
                b'\n' => Some('n'),
                b'\r' => Some('r'),
                0x1b => Some('e'),
                b'\\' => Some('\\'),
                _ => None,
            };
            if c.is_ascii_graphic() && c != b'\\' || c == b' ' {
                if out.len() > end - 2 {
                    break;
                }
                out.push(c as char);
            } else if let Some(e) = esc {
                if out.len() > end - 3 {
                    break;
                }
                out.push('\\');
                out.push(e);
            } else {
                if out.len() > end - 5 {
                    break;
                }
                let _ = write!(out, "\\x{c:02X}");
            }
            ptr += 1;
            if c == b'\n' {
                break;
            }
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_dumped_as_haproxy_dumps_them() {
        let mut out = String::new();
        dump(b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n", &mut out);
        assert_eq!(
            out,
            "  00000  GET /a b c HTTP/1.1\\r\\n\n  00021  Host: x\\r\\n\n  00030  \\r\\n\n"
        );
        let mut long = String::new();
        dump(&[b'a'; 100], &mut long);
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].len() <= 80 && lines[1].starts_with("  00070+ "), "{long}");
        let mut bin = String::new();
        dump(b"\x01\\", &mut bin);
        assert_eq!(bin, "  00000  \\x01\\\\\n");
    }
}
