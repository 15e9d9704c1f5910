//! Where in a rejected head the problem is: the byte offset HAProxy's `show errors` reports as
//! "error at position". The parser says *why* a head was refused ([`HeadError`]); this finds
//! the first byte that makes it so, by looking again at the (small, already rejected) head.
//! Cold path: called only for captured errors.

use crate::chars::{is_tchar, is_value};
use crate::HeadError;

/// The offset of the first byte `err` is about in `buf` (a request or response head as
/// received); the length of `buf` when it cannot be pinned down.
pub fn error_position(buf: &[u8], err: HeadError) -> usize {
    let line_end =
        |from: usize| buf[from..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| from + i);
    let first_end = line_end(0);
    let first = &buf[..first_end];
    let sp = |n: usize| first.iter().enumerate().filter(|(_, &b)| b == b' ').nth(n).map(|(i, _)| i);
    use HeadError::*;
    match err {
        BadMethod => first.iter().position(|&b| !is_tchar(b)).unwrap_or(0),
        BadTarget => sp(0).map_or(first_end, |i| i + 1),
        BadVersion => match (sp(0), sp(1)) {
            (Some(_), Some(i)) => i + 1,
            _ => first_end,
        },
        // A response's status line: its version is the first word, then the code.
        BadStatus => sp(0).map_or(0, |i| i + 1),
        _ => header_position(buf, first_end + 1, err, line_end),
    }
}

/// The first header line showing `err`, and the byte in it when there is one.
fn header_position(
    buf: &[u8],
    mut at: usize,
    err: HeadError,
    line_end: impl Fn(usize) -> usize,
) -> usize {
    use HeadError::*;
    let mut seen_host = false;
    let mut seen_len: Option<&[u8]> = None;
    while at < buf.len() {
        let end = line_end(at);
        let line = &buf[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let colon = line.iter().position(|&b| b == b':');
        let name = &line[..colon.unwrap_or(line.len())];
        let value = colon.map_or(&b""[..], |c| &line[c + 1..]);
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        let found = match err {
            ObsFold if matches!(line[0], b' ' | b'\t') => Some(0),
            BadHeaderName | SpaceBeforeColon => {
                name.iter().position(|&b| !is_tchar(b)).or(colon.is_none().then_some(0))
            }
            BadHeaderValue => {
                value.iter().position(|&b| !is_value(b) && b != b'\t').map(|i| name.len() + 1 + i)
            }
            BareCr => line.iter().position(|&b| b == b'\r'),
            DuplicateHost if is("host") => {
                let dup = seen_host;
                seen_host = true;
                dup.then_some(0)
            }
            BadHost if is("host") => Some(0),
            BadContentLength | ConflictingContentLength if is("content-length") => {
                let v = value.trim_ascii();
                let bad = !v.split(|&b| b == b',').all(|p| {
                    let p = p.trim_ascii();
                    !p.is_empty() && p.iter().all(u8::is_ascii_digit)
                });
                let differs = seen_len.is_some_and(|s| s != v);
                seen_len = Some(v);
                (bad || differs).then_some(0)
            }
            BadTransferEncoding | UnsupportedTransferCoding if is("transfer-encoding") => Some(0),
            _ => None,
        };
        if let Some(i) = found {
            return at + i;
        }
        at = end + 1;
    }
    buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_as_haproxy_reports_them() {
        // A space in the target: HAProxy reads "b" as the version, at 7.
        assert_eq!(
            error_position(b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n", HeadError::BadVersion),
            7
        );
        // A header without a colon: the space in its name, at 39.
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Header\r\n\r\nok";
        assert_eq!(error_position(resp, HeadError::BadHeaderName), 39);
        assert_eq!(error_position(b"G@T / HTTP/1.1\r\n\r\n", HeadError::BadMethod), 1);
        let dup = b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
        assert_eq!(error_position(dup, HeadError::DuplicateHost), 25);
        let cl = b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(error_position(cl, HeadError::ConflictingContentLength), 35);
        let bad = b"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n";
        assert_eq!(error_position(bad, HeadError::BadHeaderValue), 20);
    }
}
