//! HTTP/1.1 mode: a hand-written, allocation-free request-head parser, request-body skippers
//! (Content-Length and chunked), the response-head formatter, and the per-connection loop
//! (keep-alive, pipelining with batched writes, query-driven answers: `s=` size, `c=` code,
//! `t=` delay, `k=0` close). Parsing and formatting are sans-I/O and unit-tested here.
//!
//! For black-box tests of a proxy the query can also ask for: the request echoed back
//! (`echo=head|all|body`, `echobody=1`, or the path `/echo`), a chunked answer (`chunked=1`,
//! `trailers=1`), a close-delimited one (`cl=none`), extra headers (`hdr=Name:value`,
//! `setcookie=v`), an interim answer (`info=103`), request-body facts (`bodyinfo=1`), no
//! `100 Continue` (`continue=0`), a silent close (`drop=1`, `drop=next`) or an invalid answer
//! (`bad=<kind>`, see [`Bad`]), the latter only for the first n requests with the same target
//! (`fail=n`: a flaky server, for retries). `Upgrade: websocket` gets `101` and CONNECT gets `200`, then
//! both echo bytes. `GET /__stats` answers the per-server counters ([`Counts`]: connections
//! accepted and closed, requests, bytes received); such a connection is not counted.
//! None of this costs the plain fast path more than a few flag tests.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Counter, Counts};

/// Largest accepted request head (request line + headers + blank line).
pub const MAX_HEAD: usize = 16 * 1024;
/// Per-connection read buffer size (a full head must fit in it).
const RBUF_SIZE: usize = MAX_HEAD;
/// Pending responses are flushed once the write buffer reaches this size.
const WBUF_BATCH: usize = 32 * 1024;
/// How long a closing connection keeps draining unread client bytes (avoids an RST that would
/// destroy the response in flight).
const LINGER: Duration = Duration::from_secs(1);

/// One line of the response-body pattern: the body is this line repeated, then truncated, so
/// byte `i` of any body is `BODY_LINE[i % 64]`.
pub const BODY_LINE: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.\n";
const FILLER_LEN: usize = 64 * 1024;
static FILLER: [u8; FILLER_LEN] = make_filler();

const fn make_filler() -> [u8; FILLER_LEN] {
    let mut out = [0u8; FILLER_LEN];
    let mut i = 0;
    while i < FILLER_LEN {
        out[i] = BODY_LINE[i % 64];
        i += 1;
    }
    out
}

/// What `echo=` asked for: the body of the answer is ...
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Echo {
    #[default]
    None,
    /// ... the request head exactly as received (`echo=1`, `echo=head`, path `/echo`).
    Head,
    /// ... the head and the body bytes exactly as received, chunk framing included (`echo=all`).
    All,
    /// ... the request body, de-chunked (`echo=body`).
    Body,
}

/// `drop=`: close the connection without saying so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DropConn {
    #[default]
    No,
    /// `drop=1`: right after this (keep-alive looking) answer.
    Now,
    /// `drop=next`: when the next request arrives, without answering it.
    Next,
}

/// `bad=<kind>`: an invalid or incomplete answer, after which the server closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// `status`: non-numeric status code.
    Status,
    /// `version`: `HTTX/1.1` protocol name.
    Version,
    /// `space`: a space between header name and colon.
    Space,
    /// `hdrchar`: an invalid character in a header name.
    HdrChar,
    /// `nul`: a NUL byte in a header value.
    Nul,
    /// `fold`: an obs-fold continuation line.
    Fold,
    /// `cl2`: two different Content-Length values.
    Cl2,
    /// `badcl`: a non-numeric Content-Length.
    BadCl,
    /// `clte`: both Content-Length and chunked (valid: chunked wins), body "abc".
    ClTe,
    /// `chunk`: an invalid chunk size after a valid head.
    Chunk,
    /// `truncated`: Content-Length 100, 10 bytes of body, then close.
    Truncated,
    /// `partial`: close in the middle of the head.
    Partial,
    /// `empty`: close without a byte.
    Empty,
    /// `reset`: RST without a byte.
    Reset,
    /// `garbage`: bytes that are not HTTP at all.
    Garbage,
    /// `bighdr`: a 20 kB header line.
    BigHdr,
    /// `lf`: bare LF line endings (valid for most parsers), body "ok".
    Lf,
}

impl Bad {
    pub fn parse(v: &[u8]) -> Option<Bad> {
        Some(match v {
            b"status" => Bad::Status,
            b"version" => Bad::Version,
            b"space" => Bad::Space,
            b"hdrchar" => Bad::HdrChar,
            b"nul" => Bad::Nul,
            b"fold" => Bad::Fold,
            b"cl2" => Bad::Cl2,
            b"badcl" => Bad::BadCl,
            b"clte" => Bad::ClTe,
            b"chunk" => Bad::Chunk,
            b"truncated" => Bad::Truncated,
            b"partial" => Bad::Partial,
            b"empty" => Bad::Empty,
            b"reset" => Bad::Reset,
            b"garbage" => Bad::Garbage,
            b"bighdr" => Bad::BigHdr,
            b"lf" => Bad::Lf,
            _ => return None,
        })
    }

    /// The bytes sent before closing.
    pub fn bytes(self) -> Vec<u8> {
        let s: &[u8] = match self {
            Bad::Status => b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
            Bad::Version => b"HTTX/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            Bad::Space => b"HTTP/1.1 200 OK\r\nX-Bad : x\r\nContent-Length: 0\r\n\r\n",
            Bad::HdrChar => b"HTTP/1.1 200 OK\r\nX(Bad): x\r\nContent-Length: 0\r\n\r\n",
            Bad::Nul => b"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 0\r\n\r\n",
            Bad::Fold => b"HTTP/1.1 200 OK\r\nX-Bad: a\r\n b\r\nContent-Length: 0\r\n\r\n",
            Bad::Cl2 => b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            Bad::BadCl => b"HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\nabc",
            Bad::ClTe => {
                b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\
                Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            }
            Bad::Chunk => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
            Bad::Truncated => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
            Bad::Partial => b"HTTP/1.1 200 OK\r\nContent-Le",
            Bad::Empty | Bad::Reset => b"",
            Bad::Garbage => b"\x01\x02garbage\r\n\r\n",
            Bad::Lf => b"HTTP/1.1 200 OK\nContent-Length: 2\nX-Lf: 1\n\nok",
            Bad::BigHdr => {
                let mut v = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Big: ".to_vec();
                v.resize(v.len() + 20_000, b'a');
                v.extend_from_slice(b"\r\n\r\n");
                return v;
            }
        };
        s.to_vec()
    }
}

/// What the query string asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Body size in bytes (`s=`).
    pub size: u64,
    /// Status code (`c=`).
    pub code: u16,
    /// Delay before answering, in microseconds (`t=`).
    pub delay_us: u64,
    /// `k=0` or `close=1`: close the connection after this response.
    pub close: bool,
    /// `echo=`: what to send back instead of the filler body.
    pub echo: Echo,
    /// `chunked=1`: chunked transfer-coding.
    pub chunked: bool,
    /// `trailers=1` (implies chunked): a trailer section `X-Trailer: done`.
    pub trailers: bool,
    /// `cl=none`: no Content-Length, the body ends with the connection.
    pub no_length: bool,
    /// `bad=<kind>`: an invalid answer instead.
    pub bad: Option<Bad>,
    /// `info=<1xx>`: an interim response first.
    pub interim: u16,
    /// `hdr=` or `setcookie=` present: rendered by [`extra_headers`].
    pub extra: bool,
    /// `bodyinfo=1`: `X-Body-Len` and `X-Body-Sum` (FNV-1a 64, hex) of the de-chunked body.
    pub body_info: bool,
    /// `continue=0`: never send `100 Continue`.
    pub no_continue: bool,
    /// `drop=1` / `drop=next`.
    pub drop: DropConn,
    /// `fail=n`: `c=`, `t=`, `drop=` and `bad=` apply to the first n requests with this exact
    /// target only (counted per server); later ones get a plain 200 (0: always apply).
    pub fail: u64,
}

impl Default for Answer {
    fn default() -> Self {
        Answer {
            size: 0,
            code: 200,
            delay_us: 0,
            close: false,
            echo: Echo::None,
            chunked: false,
            trailers: false,
            no_length: false,
            bad: None,
            interim: 0,
            extra: false,
            body_info: false,
            no_continue: false,
            drop: DropConn::No,
            fail: 0,
        }
    }
}

impl Answer {
    /// The answer once `fail=n` requests with the same target were seen: the failure options
    /// dropped, the rest kept.
    pub fn healed(self) -> Answer {
        Answer { code: 200, delay_us: 0, drop: DropConn::No, bad: None, fail: 0, ..self }
    }

    /// Whether anything beyond size/code/delay/close was asked (the slow path).
    fn special(&self) -> bool {
        self.echo != Echo::None
            || self.chunked
            || self.no_length
            || self.interim != 0
            || self.extra
            || self.body_info
    }
}

/// How the request body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Length(u64),
    Chunked,
}

/// A parsed request head; `Copy` and borrow-free so the read buffer can be reused at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// HEAD method: headers only in the answer.
    pub head: bool,
    /// HTTP/1.1 or later minor version (as opposed to HTTP/1.0).
    pub http11: bool,
    /// Whether the connection stays open after the answer (version, `Connection`, `k=0`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on a request with a body.
    pub expect_continue: bool,
    /// `Upgrade: websocket` with `Connection: upgrade` (HTTP/1.1): answered `101`, then echo.
    pub upgrade: bool,
    /// The CONNECT method: answered `200`, then echo.
    pub connect: bool,
    /// Where the request target lies in the head: (offset, length).
    pub target: (usize, usize),
    /// Where the `Sec-WebSocket-Key` value lies in the head, if any (length 0 if none).
    pub ws_key: (usize, usize),
    pub body: BodyKind,
    /// The query's answer, or `None` if the query was malformed (answered with 400).
    pub answer: Option<Answer>,
}

/// Result of parsing the start of a buffer as a request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A complete head of this many bytes.
    Done(Request, usize),
    /// Need more bytes.
    Partial,
    /// Protocol error: answer with this status and close.
    Invalid(u16),
}

#[inline]
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[inline]
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Next line of `buf` starting at `pos`: (line without CR/LF, position after LF).
/// `Err(())` on a bare CR inside the line.
#[inline]
fn next_line(buf: &[u8], pos: usize) -> Option<Result<(&[u8], usize), ()>> {
    let rest = &buf[pos..];
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let mut line = &rest[..nl];
    if let [l @ .., b'\r'] = line {
        line = l;
    }
    if line.contains(&b'\r') {
        return Some(Err(()));
    }
    Some(Ok((line, pos + nl + 1)))
}

/// Parses a request head at the start of `buf` (leading empty lines are skipped).
pub fn parse_request(buf: &[u8]) -> Parsed {
    match parse_inner(buf) {
        Parsed::Partial if buf.len() >= MAX_HEAD => Parsed::Invalid(431),
        Parsed::Done(_, n) if n > MAX_HEAD => Parsed::Invalid(431),
        p => p,
    }
}

fn parse_inner(buf: &[u8]) -> Parsed {
    const BAD: Parsed = Parsed::Invalid(400);
    let mut pos = 0;
    let mut line_start;
    // Request line, skipping a few leading empty lines (RFC 9112 2.2).
    let line = loop {
        match next_line(buf, pos) {
            None => {
                // Reject obvious garbage before waiting for a newline that may never come.
                if buf[pos..].iter().any(|&b| b < 0x20 && b != b'\r' && b != b'\t') {
                    return BAD;
                }
                return Parsed::Partial;
            }
            Some(Err(())) => return BAD,
            Some(Ok((l, next))) => {
                line_start = pos;
                pos = next;
                if !l.is_empty() {
                    break l;
                }
                if pos > 8 {
                    return BAD;
                }
            }
        }
    };
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return BAD;
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return BAD;
    }
    if target.is_empty() || target.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return BAD;
    }
    let http11 = match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', m] if m.is_ascii_digit() => *m != b'0',
        [b'H', b'T', b'T', b'P', b'/', maj, b'.', m]
            if maj.is_ascii_digit() && m.is_ascii_digit() =>
        {
            return Parsed::Invalid(505)
        }
        _ => return BAD,
    };

    let mut conn_close = false;
    let mut conn_keep = false;
    let mut expect_continue = false;
    let mut content_length: Option<u64> = None;
    let mut te_seen = false;
    let mut chunked = false;
    let mut conn_upgrade = false;
    let mut upgrade_ws = false;
    let mut ws_key = (0, 0);
    loop {
        let (hl, next) = match next_line(buf, pos) {
            None => return Parsed::Partial,
            Some(Err(())) => return BAD,
            Some(Ok(x)) => x,
        };
        pos = next;
        if hl.is_empty() {
            break;
        }
        let Some(colon) = hl.iter().position(|&b| b == b':') else {
            return BAD;
        };
        let name = &hl[..colon];
        // Empty name, whitespace before the colon, or obs-fold (line starting with SP/HT).
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return BAD;
        }
        let value = trim_ows(&hl[colon + 1..]);
        if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return BAD;
        }
        match name.len() {
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for tok in value.split(|&b| b == b',') {
                    let tok = trim_ows(tok);
                    if tok.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if tok.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep = true;
                    } else if tok.eq_ignore_ascii_case(b"upgrade") {
                        conn_upgrade = true;
                    }
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let Some(n) = parse_u64(value) else { return BAD };
                if content_length.is_some_and(|c| c != n) {
                    return BAD;
                }
                content_length = Some(n);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                te_seen = true;
                for tok in value.split(|&b| b == b',') {
                    let tok = trim_ows(tok);
                    if tok.is_empty() {
                        continue;
                    }
                    // "chunked" must be applied once, and last.
                    if chunked {
                        return BAD;
                    }
                    chunked = tok.eq_ignore_ascii_case(b"chunked");
                }
            }
            6 if name.eq_ignore_ascii_case(b"expect") => {
                expect_continue = value.eq_ignore_ascii_case(b"100-continue");
            }
            17 if name.eq_ignore_ascii_case(b"sec-websocket-key") => {
                ws_key = (value.as_ptr() as usize - buf.as_ptr() as usize, value.len());
            }
            7 if name.eq_ignore_ascii_case(b"upgrade") => {
                upgrade_ws = value
                    .split(|&b| b == b',')
                    .any(|t| trim_ows(t).eq_ignore_ascii_case(b"websocket"));
            }
            _ => {}
        }
    }
    let body = match (te_seen, chunked, content_length) {
        (false, _, None) | (false, _, Some(0)) => BodyKind::None,
        (false, _, Some(n)) => BodyKind::Length(n),
        (true, true, None) => BodyKind::Chunked,
        // Unknown final coding, or both Transfer-Encoding and Content-Length (smuggling bait).
        (true, _, _) => return BAD,
    };
    let answer = parse_query(target);
    let close_asked = matches!(answer, Some(Answer { close: true, .. }));
    let keep_alive = !conn_close && (http11 || conn_keep) && !close_asked;
    // The target starts one byte after the method's space.
    let target_at = line_start + method.len() + 1;
    let request = Request {
        head: method == b"HEAD",
        http11,
        keep_alive,
        expect_continue: expect_continue && http11 && body != BodyKind::None,
        upgrade: upgrade_ws && conn_upgrade && http11,
        connect: method == b"CONNECT",
        target: (target_at, target.len()),
        ws_key,
        body,
        answer,
    };
    Parsed::Done(request, pos)
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        // 19 digits always fit in a u64; longer values are rejected rather than wrapped.
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(b - b'0');
    }
    Some(n)
}

/// Splits a number from its unit suffix: `b"10ms"` → `(10, b"ms")`.
fn number_unit(v: &[u8]) -> Option<(u64, &[u8])> {
    let digits = v.iter().position(|b| !b.is_ascii_digit()).unwrap_or(v.len());
    Some((parse_u64(&v[..digits])?, &v[digits..]))
}

/// `s=` value: bytes with optional `k`/`m`/`g` suffix (binary multiples).
pub fn parse_size(v: &[u8]) -> Option<u64> {
    let (n, unit) = number_unit(v)?;
    let mult: u64 = match unit {
        b"" => 1,
        b"k" | b"K" => 1 << 10,
        b"m" | b"M" => 1 << 20,
        b"g" | b"G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `t=` value in microseconds: number with optional `us`/`ms`/`s` unit, milliseconds by default.
pub fn parse_delay(v: &[u8]) -> Option<u64> {
    let (n, unit) = number_unit(v)?;
    let mult: u64 = match unit {
        b"us" => 1,
        b"" | b"ms" => 1_000,
        b"s" => 1_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `c=` value: a status code from 200 to 599 (1xx would be taken as interim responses).
pub fn parse_code(v: &[u8]) -> Option<u16> {
    match parse_u64(v)? {
        c @ 200..=599 => Some(c as u16),
        _ => None,
    }
}

/// The query string of a request target (after `?`, before `#`), if any.
fn query_of(target: &[u8]) -> Option<&[u8]> {
    let q = target.iter().position(|&b| b == b'?')?;
    let query = &target[q + 1..];
    Some(match query.iter().position(|&b| b == b'#') {
        Some(h) => &query[..h],
        None => query,
    })
}

/// The path of a request target, origin-form or absolute-form.
fn path_of(target: &[u8]) -> &[u8] {
    let mut t = target;
    if let Some(s) = t.windows(3).position(|w| w == b"://") {
        if !t[..s].contains(&b'/') {
            t = &t[s + 3..];
            t = &t[t.iter().position(|&b| b == b'/').unwrap_or(t.len())..];
        }
    }
    let end = t.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(t.len());
    &t[..end]
}

/// The `key=value` pairs of a query (a bare `key` has an empty value).
fn pairs(query: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    query.split(|&b| b == b'&').map(|pair| match pair.iter().position(|&b| b == b'=') {
        Some(e) => (&pair[..e], &pair[e + 1..]),
        None => (pair, &b""[..]),
    })
}

fn parse_flag(v: &[u8]) -> Option<bool> {
    Some(parse_u64(v)? != 0)
}

/// Reads the answer parameters from a request target's query string. Unknown keys are ignored;
/// a malformed known value gives `None`.
pub fn parse_query(target: &[u8]) -> Option<Answer> {
    let mut a = Answer::default();
    if path_of(target) == b"/echo" {
        a.echo = Echo::Head;
    }
    let Some(query) = query_of(target) else { return Some(a) };
    for (k, v) in pairs(query) {
        match k {
            b"s" => a.size = parse_size(v)?,
            b"c" => a.code = parse_code(v)?,
            b"t" => a.delay_us = parse_delay(v)?,
            b"k" => a.close = parse_u64(v)? == 0,
            b"close" => a.close = parse_flag(v)?,
            b"echo" => {
                a.echo = match v {
                    b"0" => Echo::None,
                    b"1" | b"head" => Echo::Head,
                    b"all" => Echo::All,
                    b"body" => Echo::Body,
                    _ => return None,
                }
            }
            b"echobody" if parse_flag(v)? => a.echo = Echo::Body,
            b"chunked" => a.chunked = parse_flag(v)?,
            b"trailers" => {
                a.trailers = parse_flag(v)?;
                a.chunked |= a.trailers;
            }
            b"cl" => match v {
                b"none" => a.no_length = true,
                _ => return None,
            },
            b"bad" => a.bad = Some(Bad::parse(v)?),
            b"info" => {
                a.interim = match parse_u64(v)? {
                    c @ (100 | 102..=199) => c as u16,
                    _ => return None,
                }
            }
            b"hdr" | b"setcookie" => a.extra = true,
            b"bodyinfo" => a.body_info = parse_flag(v)?,
            b"continue" => a.no_continue = !parse_flag(v)?,
            b"fail" => a.fail = parse_u64(v)?,
            b"drop" => {
                a.drop = match v {
                    b"0" => DropConn::No,
                    b"1" => DropConn::Now,
                    b"next" => DropConn::Next,
                    _ => return None,
                }
            }
            _ => {}
        }
    }
    Some(a)
}

/// Decodes `%XX` escapes (and nothing else); invalid escapes are kept as they are.
pub fn percent_decode(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if v[i] == b'%' && i + 2 < v.len() {
            if let (Some(h), Some(l)) = (hex(v[i + 1]), hex(v[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(v[i]);
        i += 1;
    }
    out
}

/// Appends the header lines asked for by `hdr=Name:value` (repeatable) and `setcookie=value`
/// (repeatable, as `Set-Cookie: value`), percent-decoded. Lines that would break the head
/// (CR, LF, NUL, or a name that is not a token) are skipped.
pub fn extra_headers(target: &[u8], out: &mut Vec<u8>) {
    let Some(query) = query_of(target) else { return };
    for (k, v) in pairs(query) {
        let (name, value) = match k {
            b"hdr" => {
                let v = percent_decode(v);
                let Some(c) = v.iter().position(|&b| b == b':') else { continue };
                (v[..c].to_vec(), trim_ows(&v[c + 1..]).to_vec())
            }
            b"setcookie" => (b"Set-Cookie".to_vec(), percent_decode(v)),
            _ => continue,
        };
        if name.is_empty()
            || !name.iter().all(|&b| is_tchar(b))
            || value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
        {
            continue;
        }
        out.extend_from_slice(&name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
}

/// A malformed chunked request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadChunk;

/// Incremental request-body skipper: feed it bytes, it says how many belonged to the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodySkipper {
    /// Content-Length bytes still to skip.
    Length(u64),
    Chunked(Chunk),
    Done,
}

/// Chunked-decoder state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// In the chunk-size digits: value so far and number of digits.
    Size(u64, u8),
    /// After the size: extensions, skipped up to LF.
    Ext(u64),
    /// Chunk data bytes left.
    Data(u64),
    /// After data: expecting CRLF (`true` once the CR was seen).
    DataEnd(bool),
    /// Trailer section: `true` at the start of a line.
    Trailer(bool),
}

impl BodySkipper {
    pub fn new(kind: BodyKind) -> Self {
        match kind {
            BodyKind::None | BodyKind::Length(0) => BodySkipper::Done,
            BodyKind::Length(n) => BodySkipper::Length(n),
            BodyKind::Chunked => BodySkipper::Chunked(Chunk::Size(0, 0)),
        }
    }

    pub fn is_done(&self) -> bool {
        *self == BodySkipper::Done
    }

    /// Consumes body bytes from the start of `buf`; returns how many were body bytes
    /// (never reads past the end of the body). `Err` on a malformed chunked body.
    pub fn feed(&mut self, buf: &[u8]) -> Result<usize, BadChunk> {
        self.feed_with(buf, |_| {})
    }

    /// As [`feed`](Self::feed), passing each run of body data (de-chunked) to `data`.
    pub fn feed_with(
        &mut self,
        buf: &[u8],
        mut data: impl FnMut(&[u8]),
    ) -> Result<usize, BadChunk> {
        match self {
            BodySkipper::Done => Ok(0),
            BodySkipper::Length(left) => {
                let n = (*left).min(buf.len() as u64);
                data(&buf[..n as usize]);
                *left -= n;
                if *left == 0 {
                    *self = BodySkipper::Done;
                }
                Ok(n as usize)
            }
            BodySkipper::Chunked(st) => {
                let mut i = 0;
                let mut st = *st;
                while i < buf.len() {
                    let b = buf[i];
                    st = match st {
                        Chunk::Data(left) => {
                            let n = left.min((buf.len() - i) as u64);
                            data(&buf[i..i + n as usize]);
                            i += n as usize;
                            if left == n {
                                Chunk::DataEnd(false)
                            } else {
                                Chunk::Data(left - n)
                            }
                        }
                        Chunk::Size(v, d) => {
                            i += 1;
                            match b {
                                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                                    if d >= 16 {
                                        return Err(BadChunk);
                                    }
                                    let digit = (b as char).to_digit(16).unwrap_or(0);
                                    Chunk::Size(v << 4 | u64::from(digit), d + 1)
                                }
                                _ if d == 0 => return Err(BadChunk),
                                b';' | b' ' | b'\t' | b'\r' => Chunk::Ext(v),
                                b'\n' => end_size_line(v),
                                _ => return Err(BadChunk),
                            }
                        }
                        Chunk::Ext(v) => {
                            i += 1;
                            if b == b'\n' {
                                end_size_line(v)
                            } else {
                                Chunk::Ext(v)
                            }
                        }
                        Chunk::DataEnd(cr) => {
                            i += 1;
                            match (cr, b) {
                                (false, b'\r') => Chunk::DataEnd(true),
                                (_, b'\n') => Chunk::Size(0, 0),
                                _ => return Err(BadChunk),
                            }
                        }
                        Chunk::Trailer(at_start) => {
                            i += 1;
                            match b {
                                b'\n' if at_start => {
                                    *self = BodySkipper::Done;
                                    return Ok(i);
                                }
                                b'\n' => Chunk::Trailer(true),
                                b'\r' => Chunk::Trailer(at_start),
                                _ => Chunk::Trailer(false),
                            }
                        }
                    };
                }
                *self = BodySkipper::Chunked(st);
                Ok(i)
            }
        }
    }
}

fn end_size_line(size: u64) -> Chunk {
    if size == 0 {
        Chunk::Trailer(true)
    } else {
        Chunk::Data(size)
    }
}

/// Reason phrase for a status code ("" for unlisted codes, which is valid HTTP/1.1).
pub fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        511 => "Network Authentication Required",
        _ => "",
    }
}

#[inline]
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Whether a response with this status carries no body and no Content-Length.
pub fn bodyless_status(code: u16) -> bool {
    code == 204 || code == 304 || code < 200
}

/// Appends a response head. `fixed` holds the constant headers (`X-Server`, `Content-Type`),
/// each CRLF-terminated. `keep_alive_hdr` adds `Connection: keep-alive` (HTTP/1.0 clients).
pub fn write_head(
    out: &mut Vec<u8>,
    code: u16,
    content_length: u64,
    close: bool,
    keep_alive_hdr: bool,
    fixed: &[u8],
) {
    write_head_with(out, code, Framing::Length(content_length), close, keep_alive_hdr, fixed, b"");
}

/// [`write_head`] with any framing and `extra` header lines (CRLF-terminated) after `fixed`.
pub fn write_head_with(
    out: &mut Vec<u8>,
    code: u16,
    framing: Framing,
    close: bool,
    keep_alive_hdr: bool,
    fixed: &[u8],
    extra: &[u8],
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_u64(out, u64::from(code));
    out.push(b' ');
    out.extend_from_slice(reason(code).as_bytes());
    out.extend_from_slice(b"\r\n");
    if !bodyless_status(code) {
        match framing {
            Framing::Length(n) => {
                out.extend_from_slice(b"Content-Length: ");
                push_u64(out, n);
                out.extend_from_slice(b"\r\n");
            }
            Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::Close => {}
        }
    }
    out.extend_from_slice(fixed);
    out.extend_from_slice(extra);
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if keep_alive_hdr {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The constant response headers for a server name.
pub fn fixed_headers(name: &str) -> Arc<[u8]> {
    let mut v = Vec::new();
    v.extend_from_slice(b"X-Server: ");
    v.extend(name.bytes().filter(|&b| b >= 0x20 && b != 0x7f));
    v.extend_from_slice(b"\r\nContent-Type: text/plain\r\n");
    v.into()
}

/// How the answer's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    /// Neither: the body ends when the connection closes.
    Close,
}

/// Connection state between reads.
enum State {
    Head,
    Body(BodySkipper, Request),
}

/// Per-connection scratch of the slow path: what the current answer needs beyond its query.
#[derive(Default)]
struct Scratch {
    /// Extra header lines (CRLF-terminated).
    extra: Vec<u8>,
    /// The echo body being collected.
    echo: Vec<u8>,
    /// De-chunked request-body length and FNV-1a hash so far.
    body_len: u64,
    body_sum: u64,
}

impl Scratch {
    fn prepare(&mut self, a: &Answer, head: &[u8], target: &[u8]) {
        self.extra.clear();
        self.echo.clear();
        self.body_len = 0;
        self.body_sum = FNV_OFFSET;
        if a.extra {
            extra_headers(target, &mut self.extra);
        }
        if matches!(a.echo, Echo::Head | Echo::All) {
            self.echo.extend_from_slice(head);
        }
    }

    fn body(&mut self, data: &[u8], keep: bool) {
        self.body_len += data.len() as u64;
        self.body_sum = fnv1a(self.body_sum, data);
        if keep {
            self.echo.extend_from_slice(data);
        }
    }
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64-bit, continued from `h` (start with [`FNV_OFFSET`]).
pub fn fnv1a(mut h: u64, data: &[u8]) -> u64 {
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Serves one HTTP connection until it closes; false if it was a `/__stats` connection (not
/// counted).
pub(crate) async fn serve(mut stream: TcpStream, fixed: Arc<[u8]>, ctr: &Counter) -> bool {
    let mut rbuf = vec![0u8; RBUF_SIZE];
    let mut wbuf: Vec<u8> = Vec::with_capacity(WBUF_BATCH + 1024);
    let mut counted = true;
    let _ = serve_loop(&mut stream, &fixed, &mut rbuf, &mut wbuf, ctr, &mut counted).await;
    counted
}

/// How a connection ends.
enum End {
    /// Client went away (EOF) — nothing more to do.
    Eof,
    /// We answered with close: FIN, and drain leftovers if `linger`.
    Close { linger: bool },
    /// Close without a word (`drop=`, `bad=`): FIN, no draining.
    Abort,
    /// `bad=reset`: RST.
    Reset,
    /// 101 or CONNECT: echo everything from here on.
    Tunnel,
}

/// What follows an answer.
enum Next {
    Keep,
    Close,
    DropLater,
    End(End),
}

async fn serve_loop(
    stream: &mut TcpStream,
    fixed: &[u8],
    rbuf: &mut [u8],
    wbuf: &mut Vec<u8>,
    ctr: &Counter,
    counted: &mut bool,
) -> io::Result<()> {
    let (mut start, mut end) = (0usize, 0usize);
    let mut state = State::Head;
    let mut sc = Scratch::default();
    let mut first_read = true;
    let mut drop_next = false;
    let outcome = 'conn: loop {
        // Answer every complete request already buffered, batching the responses.
        loop {
            let next = match state {
                State::Head => {
                    if start == end {
                        break;
                    }
                    match parse_request(&rbuf[start..end]) {
                        Parsed::Done(req, n) => {
                            let head = &rbuf[start..start + n];
                            start += n;
                            if drop_next {
                                break 'conn End::Abort;
                            }
                            if *counted {
                                ctr.request();
                            }
                            let target = &head[req.target.0..req.target.0 + req.target.1];
                            let mut req = req;
                            if let Some(a) = req.answer.filter(|a| a.fail > 0) {
                                if ctr.attempt(target) >= a.fail {
                                    req.answer = Some(a.healed());
                                }
                            }
                            if target.starts_with(b"/__stats") {
                                write_stats(wbuf, ctr.total(), req.keep_alive, fixed);
                                if !req.keep_alive {
                                    break 'conn End::Close { linger: start < end };
                                }
                                continue;
                            }
                            let a = req.answer.unwrap_or_default();
                            if a.special() || req.upgrade {
                                sc.prepare(&a, head, target);
                            }
                            if req.upgrade && req.ws_key.1 > 0 {
                                let key = &head[req.ws_key.0..req.ws_key.0 + req.ws_key.1];
                                let accept = crate::ws::accept(key);
                                sc.extra.extend_from_slice(b"Sec-WebSocket-Accept: ");
                                sc.extra.extend_from_slice(accept.as_bytes());
                                sc.extra.extend_from_slice(b"\r\n");
                            }
                            if req.body == BodyKind::None {
                                finish(stream, wbuf, &req, fixed, &mut sc).await?
                            } else {
                                if req.expect_continue && !a.no_continue {
                                    wbuf.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                                }
                                state = State::Body(BodySkipper::new(req.body), req);
                                continue;
                            }
                        }
                        Parsed::Partial => break,
                        Parsed::Invalid(code) => {
                            write_head(wbuf, code, 0, true, false, fixed);
                            break 'conn End::Close { linger: true };
                        }
                    }
                }
                State::Body(ref mut skipper, req) => {
                    let a = req.answer.unwrap_or_default();
                    let data = &rbuf[start..end];
                    let fed = if a.body_info || a.echo == Echo::Body {
                        skipper.feed_with(data, |d| sc.body(d, a.echo == Echo::Body))
                    } else {
                        skipper.feed(data)
                    };
                    match fed {
                        Ok(n) => {
                            if a.echo == Echo::All {
                                sc.echo.extend_from_slice(&data[..n]);
                            }
                            start += n;
                        }
                        Err(BadChunk) => {
                            write_head(wbuf, 400, 0, true, false, fixed);
                            break 'conn End::Close { linger: true };
                        }
                    }
                    if !skipper.is_done() {
                        break;
                    }
                    state = State::Head;
                    finish(stream, wbuf, &req, fixed, &mut sc).await?
                }
            };
            match next {
                Next::Keep => {}
                Next::Close => break 'conn End::Close { linger: start < end },
                Next::DropLater => drop_next = true,
                Next::End(e) => break 'conn e,
            }
        }
        if !wbuf.is_empty() {
            stream.write_all(wbuf).await?;
            wbuf.clear();
        }
        if start == end {
            (start, end) = (0, 0);
        } else if start > 0 {
            rbuf.copy_within(start..end, 0);
            (start, end) = (0, end - start);
        }
        // A partial head filling the whole buffer was already answered with 431 by the parser,
        // and body bytes are always consumed, so there is room to read here.
        let n = stream.read(&mut rbuf[end..]).await?;
        if n == 0 {
            break End::Eof;
        }
        if first_read {
            first_read = false;
            if rbuf[..n].starts_with(b"GET /__stats") {
                // A control connection (a test asking for the counters) is not counted.
                *counted = false;
                ctr.uncount_conn();
            }
        }
        if *counted {
            ctr.bytes(n);
        }
        end += n;
    };
    if !wbuf.is_empty() {
        stream.write_all(wbuf).await?;
        wbuf.clear();
    }
    match outcome {
        End::Eof => {}
        End::Close { linger } => {
            stream.shutdown().await?;
            if linger {
                let _ = tokio::time::timeout(LINGER, async {
                    while let Ok(n) = stream.read(rbuf).await {
                        if n == 0 {
                            break;
                        }
                    }
                })
                .await;
            }
        }
        End::Abort => stream.shutdown().await?,
        End::Reset => {
            let _ = socket2::SockRef::from(&*stream).set_linger(Some(Duration::ZERO));
        }
        End::Tunnel => {
            if start < end {
                stream.write_all(&rbuf[start..end]).await?;
            }
            loop {
                let n = stream.read(rbuf).await?;
                if n == 0 {
                    stream.shutdown().await?;
                    break;
                }
                if *counted {
                    ctr.bytes(n);
                }
                stream.write_all(&rbuf[..n]).await?;
            }
        }
    }
    Ok(())
}

/// Appends the `/__stats` answer.
fn write_stats(wbuf: &mut Vec<u8>, c: Counts, keep: bool, fixed: &[u8]) {
    let body = format!(
        "conns {}\nclosed {}\nrequests {}\nbytes {}\n",
        c.conns, c.closed, c.requests, c.bytes
    );
    write_head(wbuf, 200, body.len() as u64, !keep, false, fixed);
    wbuf.extend_from_slice(body.as_bytes());
}

/// Answers a complete request (head and body read): the special answers (`bad=`, upgrade,
/// CONNECT) or [`respond`]; says what happens next.
async fn finish(
    stream: &mut TcpStream,
    wbuf: &mut Vec<u8>,
    req: &Request,
    fixed: &[u8],
    sc: &mut Scratch,
) -> io::Result<Next> {
    let a = req.answer.unwrap_or_default();
    if let Some(bad) = a.bad {
        if a.delay_us > 0 {
            stream.write_all(wbuf).await?;
            wbuf.clear();
            tokio::time::sleep(Duration::from_micros(a.delay_us)).await;
        }
        wbuf.extend_from_slice(&bad.bytes());
        return Ok(Next::End(if bad == Bad::Reset { End::Reset } else { End::Abort }));
    }
    if req.upgrade && req.answer.is_some() {
        wbuf.extend_from_slice(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
        );
        wbuf.extend_from_slice(&sc.extra);
        wbuf.extend_from_slice(fixed);
        wbuf.extend_from_slice(b"\r\n");
        return Ok(Next::End(End::Tunnel));
    }
    if req.connect && req.answer.is_some() {
        wbuf.extend_from_slice(b"HTTP/1.1 200 Connection established\r\n");
        wbuf.extend_from_slice(fixed);
        wbuf.extend_from_slice(b"\r\n");
        return Ok(Next::End(End::Tunnel));
    }
    if a.body_info {
        let info = format!("X-Body-Len: {}\r\nX-Body-Sum: {:016x}\r\n", sc.body_len, sc.body_sum);
        sc.extra.extend_from_slice(info.as_bytes());
    }
    let keep = respond(stream, wbuf, req, fixed, sc).await?;
    Ok(match (keep, a.drop) {
        (false, _) => Next::Close,
        (true, DropConn::Now) => Next::End(End::Abort),
        (true, DropConn::Next) => Next::DropLater,
        (true, DropConn::No) => Next::Keep,
    })
}

/// Queues (and, for delays or large bodies, writes) the answer to `req`.
/// Returns whether the connection stays open.
async fn respond(
    stream: &mut TcpStream,
    wbuf: &mut Vec<u8>,
    req: &Request,
    fixed: &[u8],
    sc: &Scratch,
) -> io::Result<bool> {
    let answer = req.answer.unwrap_or(Answer { code: 400, ..Answer::default() });
    let keep = req.keep_alive && !answer.no_length;
    if answer.delay_us > 0 {
        if !wbuf.is_empty() {
            stream.write_all(wbuf).await?;
            wbuf.clear();
        }
        tokio::time::sleep(Duration::from_micros(answer.delay_us)).await;
    }
    if answer.special() {
        respond_special(stream, wbuf, req, &answer, keep, fixed, sc).await?;
        return Ok(keep);
    }
    let size = if bodyless_status(answer.code) { 0 } else { answer.size };
    write_head(wbuf, answer.code, size, !keep, keep && !req.http11, fixed);
    if !req.head && size > 0 {
        // As much body as fits in the batch goes with the head; the rest streams from FILLER.
        let inline = size.min(WBUF_BATCH.saturating_sub(wbuf.len()) as u64) as usize;
        wbuf.extend_from_slice(&FILLER[..inline]);
        let mut sent = inline as u64;
        if sent < size {
            stream.write_all(wbuf).await?;
            wbuf.clear();
            while sent < size {
                let off = (sent % 64) as usize;
                let n = (size - sent).min((FILLER_LEN - off) as u64) as usize;
                stream.write_all(&FILLER[off..off + n]).await?;
                sent += n as u64;
            }
        }
    }
    if wbuf.len() >= WBUF_BATCH {
        stream.write_all(wbuf).await?;
        wbuf.clear();
    }
    Ok(keep)
}

/// Chunk size of chunked answers.
const CHUNK: usize = 4096;

/// The slow path: interim answer, echo, chunked or close-delimited bodies, extra headers.
async fn respond_special(
    stream: &mut TcpStream,
    wbuf: &mut Vec<u8>,
    req: &Request,
    a: &Answer,
    keep: bool,
    fixed: &[u8],
    sc: &Scratch,
) -> io::Result<()> {
    if a.interim != 0 {
        wbuf.extend_from_slice(b"HTTP/1.1 ");
        push_u64(wbuf, u64::from(a.interim));
        wbuf.push(b' ');
        wbuf.extend_from_slice(reason(a.interim).as_bytes());
        wbuf.extend_from_slice(b"\r\n");
        if a.interim == 103 {
            wbuf.extend_from_slice(b"Link: </style.css>; rel=preload\r\n");
        }
        wbuf.extend_from_slice(b"\r\n");
    }
    let bodyless = bodyless_status(a.code);
    let echo = a.echo != Echo::None;
    let size = if echo { sc.echo.len() as u64 } else { a.size };
    let framing = if a.chunked {
        Framing::Chunked
    } else if a.no_length {
        Framing::Close
    } else {
        Framing::Length(size)
    };
    let mut extra = std::borrow::Cow::Borrowed(&sc.extra[..]);
    if a.trailers {
        extra.to_mut().extend_from_slice(b"Trailer: X-Trailer\r\n");
    }
    write_head_with(wbuf, a.code, framing, !keep, keep && !req.http11, fixed, &extra);
    if req.head || bodyless {
        return Ok(());
    }
    let mut sent = 0u64;
    while sent < size {
        let piece: &[u8] =
            if echo { &sc.echo[sent as usize..] } else { &FILLER[(sent % 64) as usize..] };
        let max = if a.chunked { CHUNK } else { WBUF_BATCH };
        let n = piece.len().min((size - sent) as usize).min(max);
        if a.chunked {
            wbuf.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        }
        wbuf.extend_from_slice(&piece[..n]);
        if a.chunked {
            wbuf.extend_from_slice(b"\r\n");
        }
        sent += n as u64;
        if wbuf.len() >= WBUF_BATCH {
            stream.write_all(wbuf).await?;
            wbuf.clear();
        }
    }
    if a.chunked {
        wbuf.extend_from_slice(b"0\r\n");
        if a.trailers {
            wbuf.extend_from_slice(b"X-Trailer: done\r\n");
        }
        wbuf.extend_from_slice(b"\r\n");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(buf: &[u8]) -> (Request, usize) {
        match parse_request(buf) {
            Parsed::Done(r, n) => (r, n),
            other => panic!("expected Done for {:?}, got {other:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"0"), Some(0));
        assert_eq!(parse_size(b"123"), Some(123));
        assert_eq!(parse_size(b"1k"), Some(1024));
        assert_eq!(parse_size(b"2K"), Some(2048));
        assert_eq!(parse_size(b"3m"), Some(3 << 20));
        assert_eq!(parse_size(b"1g"), Some(1 << 30));
        assert_eq!(parse_size(b""), None);
        assert_eq!(parse_size(b"k"), None);
        assert_eq!(parse_size(b"1x"), None);
        assert_eq!(parse_size(b"1kb"), None);
        assert_eq!(parse_size(b"-1"), None);
        assert_eq!(parse_size(b"99999999999999999999"), None);
        assert_eq!(parse_size(b"9999999999999999g"), None);
    }

    #[test]
    fn delays_and_codes() {
        assert_eq!(parse_delay(b"10"), Some(10_000));
        assert_eq!(parse_delay(b"10ms"), Some(10_000));
        assert_eq!(parse_delay(b"7us"), Some(7));
        assert_eq!(parse_delay(b"2s"), Some(2_000_000));
        assert_eq!(parse_delay(b"2m"), None);
        assert_eq!(parse_delay(b""), None);
        assert_eq!(parse_code(b"200"), Some(200));
        assert_eq!(parse_code(b"503"), Some(503));
        assert_eq!(parse_code(b"100"), None);
        assert_eq!(parse_code(b"600"), None);
        assert_eq!(parse_code(b"abc"), None);
    }

    #[test]
    fn queries() {
        assert_eq!(parse_query(b"/"), Some(Answer::default()));
        assert_eq!(
            parse_query(b"/x?s=1k&c=404&t=5us&k=0&zz=1&flag"),
            Some(Answer { size: 1024, code: 404, delay_us: 5, close: true, ..Answer::default() })
        );
        assert_eq!(parse_query(b"/?k=1").map(|a| a.close), Some(false));
        assert_eq!(parse_query(b"/?s=10#s=bad").map(|a| a.size), Some(10));
        assert_eq!(parse_query(b"http://h:1/p?s=3").map(|a| a.size), Some(3));
        assert_eq!(parse_query(b"/?s=zz"), None);
        assert_eq!(parse_query(b"/?c=99"), None);
        assert_eq!(parse_query(b"/?s"), None);
        assert_eq!(parse_query(b"/?"), Some(Answer::default()));
    }

    #[test]
    fn simple_requests() {
        let (r, n) = done(b"GET /?s=5 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(n, 31);
        assert!(r.http11 && r.keep_alive && !r.head);
        assert_eq!(r.answer.map(|a| a.size), Some(5));
        assert_eq!(r.body, BodyKind::None);

        let (r, _) = done(b"HEAD / HTTP/1.1\r\n\r\n");
        assert!(r.head);
        let (r, _) = done(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n");
        assert!(!r.keep_alive);
        let (r, _) = done(b"GET /?k=0 HTTP/1.1\r\n\r\n");
        assert!(!r.keep_alive);
        let (r, _) = done(b"GET / HTTP/1.0\r\n\r\n");
        assert!(!r.http11 && !r.keep_alive);
        let (r, _) = done(b"GET / HTTP/1.0\r\nconnection: foo, keep-alive\r\n\r\n");
        assert!(r.keep_alive);
        // Bare LF line endings and a leading empty line are tolerated.
        let (r, n) = done(b"\r\nGET / HTTP/1.1\nA: b\n\n");
        assert!(r.keep_alive);
        assert_eq!(n, 23);
    }

    #[test]
    fn bodies() {
        let (r, _) = done(b"POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n");
        assert_eq!(r.body, BodyKind::Length(12));
        let (r, _) = done(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(r.body, BodyKind::None);
        let (r, _) = done(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(r.body, BodyKind::Chunked);
        let (r, _) = done(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
        assert!(r.expect_continue);
        for bad in [
            &b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
        ] {
            assert_eq!(parse_request(bad), Parsed::Invalid(400), "{:?}", bad);
        }
    }

    #[test]
    fn garbage_never_panics() {
        for bad in [
            &b"\x00\x01\x02\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"GET /\r\n\r\n",
            b"GET  / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1 \r\n\r\n",
            b"GET / FOO/1.1\r\n\r\n",
            b"G(T / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            b"GET / HTTP/1.1\r\n: empty\r\n\r\n",
            b"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
            b"GET / HTTP/1.1\r\nA: \x01\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01",
            b"\r\n\r\n\r\n\r\n\r\n",
        ] {
            assert_eq!(parse_request(bad), Parsed::Invalid(400), "{:?}", bad);
        }
        assert_eq!(parse_request(b"GET / HTTP/2.0\r\n\r\n"), Parsed::Invalid(505));
        assert_eq!(parse_request(b"GET / HTTP/1.1\r\nA: b\r\n"), Parsed::Partial);
        assert_eq!(parse_request(b""), Parsed::Partial);
        // Pseudo-random bytes at every length: no panic, never Done past the input.
        let mut x: u32 = 12345;
        let mut buf = Vec::new();
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let choices = b"GET / HTTP/1.1\r\n:aZ ?=&s0k\t\x00\xff";
            buf.push(choices[(x >> 16) as usize % choices.len()]);
            if buf.len() > 64 {
                buf.clear();
            }
            if let Parsed::Done(_, n) = parse_request(&buf) {
                assert!(n <= buf.len());
            }
        }
    }

    #[test]
    fn head_limit() {
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD, b'a');
        assert_eq!(parse_request(&big), Parsed::Invalid(431));
        big.truncate(MAX_HEAD - 10);
        assert_eq!(parse_request(&big), Parsed::Partial);
    }

    #[test]
    fn pipelined_split_at_every_boundary() {
        let stream: &[u8] = b"GET /?s=1 HTTP/1.1\r\nHost: a\r\n\r\n\
            POST /?c=201 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello\
            PUT /?s=2k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
            3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n\
            HEAD /?k=0 HTTP/1.1\r\n\r\n";
        let expected = vec![(1, 200, false), (0, 201, false), (2048, 200, false), (0, 200, true)];
        for split in 0..=stream.len() {
            // Simulate the connection loop: feed bytes in two reads, split at `split`.
            let mut buf: Vec<u8> = Vec::new();
            let mut got = Vec::new();
            let mut body: Option<BodySkipper> = None;
            for part in [&stream[..split], &stream[split..]] {
                buf.extend_from_slice(part);
                loop {
                    if let Some(sk) = body.as_mut() {
                        let n = sk.feed(&buf).expect("valid chunked body");
                        buf.drain(..n);
                        if !sk.is_done() {
                            break;
                        }
                        body = None;
                    }
                    match parse_request(&buf) {
                        Parsed::Done(r, n) => {
                            buf.drain(..n);
                            let a = r.answer.expect("valid query");
                            got.push((a.size, a.code, r.head));
                            body = Some(BodySkipper::new(r.body));
                        }
                        Parsed::Partial => break,
                        Parsed::Invalid(c) => panic!("split {split}: invalid {c}"),
                    }
                }
            }
            assert_eq!(got, expected, "split at {split}");
            assert!(buf.is_empty() && body.is_none_or(|b| b.is_done()), "split at {split}");
        }
    }

    #[test]
    fn chunked_errors() {
        let mut sk = BodySkipper::new(BodyKind::Chunked);
        assert_eq!(sk.feed(b"zz\r\n"), Err(BadChunk));
        let mut sk = BodySkipper::new(BodyKind::Chunked);
        assert_eq!(sk.feed(b"3\r\nabcX"), Err(BadChunk));
        let mut sk = BodySkipper::new(BodyKind::Chunked);
        assert_eq!(sk.feed(b"11111111111111111\r\n"), Err(BadChunk));
        let mut sk = BodySkipper::new(BodyKind::Chunked);
        assert_eq!(sk.feed(b"0\r\n\r\nGET"), Ok(5));
        assert!(sk.is_done());
        let mut sk = BodySkipper::new(BodyKind::Length(3));
        assert_eq!(sk.feed(b"abcdef"), Ok(3));
        assert!(sk.is_done());
    }

    #[test]
    fn heads() {
        let fixed = fixed_headers("s1");
        let mut out = Vec::new();
        write_head(&mut out, 200, 1234, false, false, &fixed);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nX-Server: s1\r\n\
              Content-Type: text/plain\r\n\r\n"
        );
        out.clear();
        write_head(&mut out, 204, 5, true, false, &fixed);
        assert_eq!(
            out,
            b"HTTP/1.1 204 No Content\r\nX-Server: s1\r\nContent-Type: text/plain\r\n\
              Connection: close\r\n\r\n"
        );
        out.clear();
        write_head(&mut out, 299, 0, false, true, &fixed);
        assert!(out.starts_with(b"HTTP/1.1 299 \r\nContent-Length: 0\r\n"));
        assert!(out.ends_with(b"Connection: keep-alive\r\n\r\n"));
        assert_eq!(FILLER[64 * 100 + 3], BODY_LINE[3]);
    }

    #[test]
    fn proxy_test_queries() {
        let q = |t: &[u8]| parse_query(t).expect("valid query");
        assert_eq!(q(b"/echo").echo, Echo::Head);
        assert_eq!(q(b"/echo?s=3").echo, Echo::Head);
        assert_eq!(q(b"http://h:1/echo?x").echo, Echo::Head);
        assert_eq!(q(b"/echo/x").echo, Echo::None);
        assert_eq!(q(b"/?echo=1").echo, Echo::Head);
        assert_eq!(q(b"/?echo=all").echo, Echo::All);
        assert_eq!(q(b"/?echo=body").echo, Echo::Body);
        assert_eq!(q(b"/?echobody=1").echo, Echo::Body);
        assert!(q(b"/?chunked=1").chunked);
        let a = q(b"/?trailers=1");
        assert!(a.chunked && a.trailers);
        assert!(q(b"/?cl=none").no_length);
        assert!(q(b"/?close=1").close);
        assert_eq!(q(b"/?bad=truncated").bad, Some(Bad::Truncated));
        assert_eq!(q(b"/?info=103").interim, 103);
        assert!(q(b"/?hdr=X-A:1").extra && q(b"/?setcookie=a=b").extra);
        assert!(q(b"/?bodyinfo=1").body_info);
        assert!(q(b"/?continue=0").no_continue && !q(b"/?continue=1").no_continue);
        assert_eq!(q(b"/?drop=1").drop, DropConn::Now);
        assert_eq!(q(b"/?drop=next").drop, DropConn::Next);
        let a = q(b"/?c=503&t=5&bad=garbage&drop=1&fail=2&s=3");
        assert_eq!(a.fail, 2);
        let h = a.healed();
        assert_eq!((h.code, h.delay_us, h.bad, h.drop, h.size), (200, 0, None, DropConn::No, 3));
        assert!(!q(b"/?s=1&c=201&t=1&k=1").special());
        assert!(q(b"/?echo=1").special());
        for bad in [
            &b"/?echo=2"[..],
            b"/?bad=nope",
            b"/?info=101",
            b"/?info=200",
            b"/?cl=3",
            b"/?drop=2",
            b"/?fail=x",
            b"/?chunked=x",
        ] {
            assert_eq!(parse_query(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn extra_headers_are_decoded_and_sanitised() {
        let mut out = Vec::new();
        extra_headers(b"/?hdr=X-A:%20one&setcookie=SRV=s1;%20path=/&hdr=bad&hdr=X-B:2", &mut out);
        assert_eq!(out, b"X-A: one\r\nSet-Cookie: SRV=s1; path=/\r\nX-B: 2\r\n");
        out.clear();
        // Values that would break the head are dropped, not sent.
        extra_headers(b"/?hdr=X-A:a%0d%0ab&hdr=X%20B:1&hdr=:1&setcookie=%00", &mut out);
        assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
        assert_eq!(percent_decode(b"a%41%4a%zz%4"), b"aAJ%zz%4");
    }

    #[test]
    fn request_target_upgrade_and_connect() {
        let buf = b"GET / HTTP/1.1\r\nSec-WebSocket-Key:  abc= \r\n\r\n";
        let (r, _) = done(buf);
        assert_eq!(&buf[r.ws_key.0..r.ws_key.0 + r.ws_key.1], b"abc=");
        let buf = b"\r\nGET /x?y HTTP/1.1\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\r\n";
        let (r, _) = done(buf);
        assert_eq!(&buf[r.target.0..r.target.0 + r.target.1], b"/x?y");
        assert!(r.upgrade && !r.connect);
        let (r, _) = done(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
        assert!(!r.upgrade, "Connection: upgrade is required");
        let (r, _) = done(b"GET / HTTP/1.0\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n");
        assert!(!r.upgrade, "not in HTTP/1.0");
        let buf = b"CONNECT h:443 HTTP/1.1\r\n\r\n";
        let (r, _) = done(buf);
        assert!(r.connect);
        assert_eq!(&buf[r.target.0..r.target.0 + r.target.1], b"h:443");
    }

    #[test]
    fn feed_with_dechunks() {
        let mut sk = BodySkipper::new(BodyKind::Chunked);
        let mut got = Vec::new();
        let wire = b"3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\nNEXT";
        // Byte by byte, to cross every state boundary.
        let mut used = 0;
        for i in 0..wire.len() {
            used += sk.feed_with(&wire[i..i + 1], |d| got.extend_from_slice(d)).expect("valid");
        }
        assert_eq!(got, b"abcde");
        assert_eq!(used, wire.len() - 4);
        let mut sk = BodySkipper::new(BodyKind::Length(4));
        got.clear();
        assert_eq!(sk.feed_with(b"wxyzGET", |d| got.extend_from_slice(d)), Ok(4));
        assert_eq!(got, b"wxyz");
        assert_eq!(fnv1a(FNV_OFFSET, b""), FNV_OFFSET);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn head_framings() {
        let fixed = fixed_headers("s");
        let mut out = Vec::new();
        write_head_with(&mut out, 200, Framing::Chunked, false, false, &fixed, b"A: b\r\n");
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Server: s\r\n\
              Content-Type: text/plain\r\nA: b\r\n\r\n"
        );
        out.clear();
        write_head_with(&mut out, 200, Framing::Close, true, false, &fixed, b"");
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nX-Server: s\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn bad_kinds() {
        for k in [
            "status",
            "version",
            "space",
            "hdrchar",
            "nul",
            "fold",
            "cl2",
            "badcl",
            "clte",
            "chunk",
            "truncated",
            "partial",
            "empty",
            "reset",
            "garbage",
            "bighdr",
            "lf",
        ] {
            let bad = Bad::parse(k.as_bytes()).expect(k);
            let bytes = bad.bytes();
            let empty = matches!(bad, Bad::Empty | Bad::Reset);
            assert_eq!(bytes.is_empty(), empty, "{k}");
        }
        assert!(Bad::bytes(Bad::BigHdr).len() > 20_000);
    }
}
