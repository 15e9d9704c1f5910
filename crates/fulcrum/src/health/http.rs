//! The HTTP side of checks: the request an `option httpchk` / `http-check send` step sends,
//! byte for byte as HAProxy 2.6's H1 multiplexer writes it (lower-case header names; an
//! HTTP/1.1 request ends with `content-length` and `connection: close`), and the response read
//! back into status, headers and body for the expect steps. Pure.

use fulcrum_config::HttpSend;
use fulcrum_http::{Body, Head, Limits};

use crate::worker::{Id, Slot};

/// Builds the request; `state` is the `X-Haproxy-Server-State` value (`http-check
/// send-state`).
pub fn request(s: &HttpSend, state: Option<&str>) -> Vec<u8> {
    let method = s.method.as_deref().unwrap_or("OPTIONS");
    let uri = s.uri.as_deref().unwrap_or("/");
    let version = s.version.as_deref().unwrap_or("HTTP/1.0");
    let mut out = format!("{method} {uri} {version}\r\n").into_bytes();
    let mut has_connection = false;
    for (n, v) in &s.headers {
        has_connection |= n.eq_ignore_ascii_case("connection");
        push_header(&mut out, n, v);
    }
    if let Some(st) = state {
        push_header(&mut out, "x-haproxy-server-state", st);
    }
    let body = s.body.as_deref().unwrap_or("");
    // HAProxy's test: `HTTP/2`, or `HTTP/x.y` of at least 1.1.
    let v = version.as_bytes();
    let http11 = (v.len() == 6 && v[5] == b'2')
        || (v.len() == 8 && (v[5] > b'1' || (v[5] == b'1' && v[7] >= b'1')));
    if http11 || !body.is_empty() {
        push_header(&mut out, "content-length", &body.len().to_string());
    }
    if http11 && !has_connection {
        push_header(&mut out, "connection", "close");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body.as_bytes());
    out
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A response as far as it was received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    /// The body received so far (de-chunked), at most the buffer size.
    pub body: Vec<u8>,
    /// The whole message arrived.
    pub complete: bool,
}

/// Why the bytes are not a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid;

/// What the expect steps of a check read from an answer besides its status line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Needs {
    pub headers: bool,
    pub body: bool,
}

/// One head per worker, reused by every check it runs (no allocation per answer).
static HEAD: Slot<std::cell::RefCell<Head>> =
    Slot::new(Id::CheckHead, || std::cell::RefCell::new(Head::new()));

/// Reads a response out of `buf` (all bytes received); `Ok(None)` while the head is
/// incomplete. `closed`: the server closed, so a body read until close is complete. Headers
/// and body are copied out only when `needs` says an expect step reads them.
pub fn parse(
    buf: &[u8],
    closed: bool,
    bufsize: usize,
    needs: Needs,
) -> Result<Option<Response>, Invalid> {
    HEAD.with(|h| parse_with(&mut h.borrow_mut(), buf, closed, bufsize, needs))
}

fn parse_with(
    head: &mut Head,
    buf: &[u8],
    closed: bool,
    bufsize: usize,
    needs: Needs,
) -> Result<Option<Response>, Invalid> {
    head.clear();
    let limits = Limits { max_head: bufsize, ..Limits::default() };
    let n = match head.parse_response(buf, &limits) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(None),
        Err(_) => return Err(Invalid),
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut r = Response {
        status: head.status(),
        reason: text(head.reason()),
        headers: match needs.headers {
            true => head.headers().map(|(n, v)| (text(n), text(v))).collect(),
            false => Vec::new(),
        },
        body: Vec::new(),
        complete: false,
    };
    let rest = &buf[n..];
    let body = if (100..200).contains(&r.status) || r.status == 204 || r.status == 304 {
        Body::None
    } else {
        head.info().body
    };
    match body {
        Body::None => r.complete = true,
        Body::Length(len) => {
            let take = rest.len().min(len as usize).min(bufsize);
            if needs.body {
                r.body.extend_from_slice(&rest[..take]);
            }
            r.complete = rest.len() as u64 >= len || take == bufsize;
        }
        Body::UntilClose => {
            if needs.body {
                r.body.extend_from_slice(&rest[..rest.len().min(bufsize)]);
            }
            r.complete = closed || rest.len() >= bufsize;
        }
        Body::Chunked => {
            let (data, done) = dechunk(rest).ok_or(Invalid)?;
            let len = data.len();
            if needs.body {
                r.body = data;
                r.body.truncate(bufsize);
            }
            r.complete = done || len >= bufsize;
        }
    }
    Ok(Some(r))
}

/// The data of a chunked body received so far, and whether its last chunk arrived; `None` when
/// it is malformed.
fn dechunk(mut b: &[u8]) -> Option<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.iter().position(|&c| c == b'\n') else { return Some((out, false)) };
        let line = String::from_utf8_lossy(&b[..eol]);
        let size_text = line.trim_end_matches('\r').split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        b = &b[eol + 1..];
        if size == 0 {
            return Some((out, true));
        }
        if b.len() < size {
            out.extend_from_slice(b);
            return Some((out, false));
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size..];
        let crlf = if b.starts_with(b"\r\n") {
            2
        } else if b.starts_with(b"\n") {
            1
        } else {
            0
        };
        if crlf == 0 {
            return if b.is_empty() || b == b"\r" { Some((out, false)) } else { None };
        }
        b = &b[crlf..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(method: Option<&str>, uri: Option<&str>, version: Option<&str>) -> HttpSend {
        HttpSend {
            method: method.map(Into::into),
            uri: uri.map(Into::into),
            version: version.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn requests_as_haproxy_writes_them() {
        assert_eq!(request(&send(None, None, None), None), b"OPTIONS / HTTP/1.0\r\n\r\n");
        let mut s = send(Some("GET"), Some("/health"), None);
        s.headers.push(("Host".into(), "example.com".into()));
        assert_eq!(
            request(&s, Some("UP 1/3")),
            b"GET /health HTTP/1.0\r\nhost: example.com\r\nx-haproxy-server-state: UP 1/3\r\n\r\n"
        );
        let mut s = send(Some("POST"), Some("/x"), Some("HTTP/1.1"));
        s.headers.push(("Host".into(), "foo".into()));
        assert_eq!(
            request(&s, None),
            b"POST /x HTTP/1.1\r\nhost: foo\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
    }

    #[test]
    fn responses_with_each_framing() {
        let all = Needs { headers: true, body: true };
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false, 16384, all)
            .expect("valid")
            .expect("head");
        assert_eq!(
            (r.status, r.reason.as_str(), &r.body[..], r.complete),
            (200, "OK", &b"hel"[..], false)
        );
        let r = parse(
            b"HTTP/1.1 503 Down\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            false,
            16384,
            all,
        )
        .expect("valid")
        .expect("head");
        assert_eq!((&r.body[..], r.complete), (&b"abc"[..], true));
        let r = parse(b"HTTP/1.0 200 OK\r\n\r\nuntil close", true, 16384, all)
            .expect("valid")
            .expect("head");
        assert!(r.complete);
        assert_eq!(parse(b"HTTP/1.1 200 OK\r\n", false, 16384, all), Ok(None));
        assert_eq!(parse(b"garbage\r\n\r\n", false, 16384, all), Err(Invalid));
        let status_only = parse(
            b"HTTP/1.1 200 OK\r\nA: b\r\nContent-Length: 2\r\n\r\nok",
            false,
            16384,
            Needs::default(),
        )
        .expect("valid")
        .expect("head");
        assert!(
            status_only.complete && status_only.headers.is_empty() && status_only.body.is_empty()
        );
    }
}
