//! Rendering log-format strings as HAProxy 2.6's `sess_build_logline` does: a proxy's log
//! line, and the formats of rules (header values, redirects, replies). Spaces between fields
//! print once; strings honour `+Q` (quotes), `+E` (RFC 5424 escapes) and `M` (`-` when empty);
//! the request line and its parts are `#XX`-encoded with HAProxy's URL map, captures with its
//! header map; `+X` writes addresses, ports and counters in hexadecimal.
//! A frontend's log settings ([`Settings`]) are compiled here; `frontend::log` sends its lines.
//! Must not touch: how a stream ended (it reads the [`Outcome`]), where lines go (`log::syslog`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use fulcrum_config::{LogFlags, LogVar};
use tokio::time::Instant;

use super::sample::{Ctx, Expr};
use super::view::{BackendView, FrontendView};
use crate::log::dates;
use crate::outcome::Outcome;

/// A frontend's logging, compiled: its line (`None`: `Connect from` lines), structured data,
/// error line, unique id, and HAProxy's options on what to log.
#[derive(Debug, Default)]
pub struct Settings {
    pub line: Option<Format>,
    pub sd: Option<Format>,
    pub error: Option<Format>,
    pub unique_id: Option<Format>,
    pub unique_id_header: Option<Box<str>>,
    /// What each transaction captures.
    pub captures: CaptureSpec,
    pub dontlognull: bool,
    pub dontlog_normal: bool,
    pub separate_errors: bool,
    /// `option logasap`: a line as soon as the server answered, `%B`, `%Ta`, `%Tt` and `%Tu`
    /// marked `+` (the stream goes on).
    pub logasap: bool,
    /// A format prints the server connection's addresses (`%bi`, `%bp`, `%si`, `%sp`).
    pub server_addrs: bool,
    /// Lines sent so far (`%lc`).
    pub count: AtomicU64,
}

/// A compiled format.
#[derive(Debug, Default)]
pub struct Format {
    parts: Vec<Part>,
}

#[derive(Debug)]
pub enum Part {
    Lit(Box<[u8]>),
    Sep,
    Var(LogVar, LogFlags),
    Sample(Expr, LogFlags),
}

impl Format {
    pub fn new(parts: Vec<Part>) -> Format {
        Format { parts }
    }

    /// Whether one of the format's sample expressions fetches what `pred` says.
    pub fn uses_fetch(&self, pred: impl Fn(&fulcrum_config::Fetch) -> bool) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Sample(e, _) if pred(&e.fetch)))
    }

    /// Whether the format prints one of `vars`.
    pub fn uses_any(&self, vars: &[LogVar]) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Var(v, _) if vars.contains(v)))
    }

    /// Appends the formatted text to `out`. `stream` is what a log line knows beyond the
    /// rules' context (a rule's format has none: stream variables print as absent).
    pub fn render(&self, ctx: &Ctx<'_>, stream: Option<&Stream<'_>>, out: &mut Vec<u8>) {
        let mut last_space = true;
        // What several variables derive from the stream, worked out once per line.
        let d = stream.map(|s| Derived {
            timers: s.outcome.timers(s.now, s.http),
            accept: s.wall - s.outcome.age(s.now),
            request: s.wall - s.outcome.request_age(s.now),
        });
        for p in &self.parts {
            match p {
                Part::Sep => {
                    if !last_space {
                        out.push(b' ');
                        last_space = true;
                    }
                }
                Part::Lit(s) => {
                    out.extend_from_slice(s);
                    last_space = false;
                }
                Part::Sample(e, f) => {
                    let v = e.eval(ctx);
                    let bytes = v.as_ref().map(|v| v.as_bytes());
                    let b = bytes.as_deref();
                    // Binary samples stop at their first NUL, as HAProxy's C strings do.
                    let b = b.map(|b| &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]);
                    if f.has(LogFlags::HTTP) {
                        // (HAProxy 2.6's `lf_encode_chunk()`: no quotes in a header's value,
                        // whatever `+Q` says.)
                        encode(out, b.unwrap_or(b""), b'%', http_encoded, *f);
                    } else {
                        text(out, b, *f);
                    }
                    last_space = false;
                }
                Part::Var(v, f) => {
                    use LogVar as V;
                    // (`option logasap`: what the stream goes on counting.)
                    let more = matches!(v, V::BytesOut | V::Ta | V::Tt | V::Tu);
                    if more && stream.is_some_and(|s| s.asap) {
                        out.push(b'+');
                    }
                    if var(out, *v, *f, ctx, stream, d.as_ref()) {
                        last_space = false;
                    }
                }
            }
        }
    }

    pub fn render_vec(&self, ctx: &Ctx<'_>) -> Vec<u8> {
        let mut v = Vec::new();
        self.render(ctx, None, &mut v);
        v
    }
}

/// The stream's timers and the wall-clock moments it began and its request began.
struct Derived {
    timers: crate::outcome::Timers,
    accept: SystemTime,
    request: SystemTime,
}

/// What a log line knows about its stream beyond the rules' context.
pub struct Stream<'a> {
    pub fe: &'a dyn FrontendView,
    pub be: Option<&'a dyn BackendView>,
    pub outcome: &'a Outcome,
    /// When the line is built, on the monotonic clock and the wall clock.
    pub now: Instant,
    pub wall: SystemTime,
    /// The request line as received (`None`: `<BADREQ>`).
    pub request_line: Option<&'a [u8]>,
    /// Captured request and response values (`None`: no stream, nothing printed).
    pub captures: Option<&'a Captures>,
    /// The unique id, if one was made.
    pub unique_id: Option<&'a [u8]>,
    /// `%ac`: connections of the process.
    pub actconn: u32,
    /// `%rt`: the stream's number.
    pub request_counter: u64,
    /// `%lc`: lines the frontend logged before this one.
    pub log_count: u64,
    /// The server connection's source and destination (`%bi`/`%bp`, `%si`/`%sp`).
    pub server_conn: Option<(SocketAddr, SocketAddr)>,
    /// The backend is in `mode http` (`%Td` counts from the response head).
    pub http: bool,
    /// `option logasap`: `%B`, `%Ta`, `%Tt` and `%Tu` are marked `+` (what the stream had
    /// when the line was made, HAProxy's `LW_BYTES` left out).
    pub asap: bool,
}

/// A frontend's capture slots: each request and response slot's header (`None` for a slot
/// filled by rules) and length, and `capture cookie`'s name prefix and length.
#[derive(Debug, Default)]
pub struct CaptureSpec {
    pub req: Vec<(Option<Box<[u8]>>, u32)>,
    pub res: Vec<(Option<Box<[u8]>>, u32)>,
    pub cookie: Option<(Box<[u8]>, u32)>,
}

impl CaptureSpec {
    pub fn is_empty(&self) -> bool {
        self.req.is_empty() && self.res.is_empty() && self.cookie.is_none()
    }
}

/// A stream's captured values, one slot per declared capture, and the cookies `capture
/// cookie` found.
#[derive(Debug, Default)]
pub struct Captures {
    pub req: Vec<Option<Vec<u8>>>,
    pub res: Vec<Option<Vec<u8>>>,
    req_len: Vec<u32>,
    res_len: Vec<u32>,
    pub cookie_req: Option<Vec<u8>>,
    pub cookie_res: Option<Vec<u8>>,
}

impl Captures {
    /// Empty slots for a new transaction of a frontend with these captures.
    pub fn reset(&mut self, spec: &CaptureSpec) {
        self.req.clear();
        self.res.clear();
        self.req.resize_with(spec.req.len(), || None);
        self.res.resize_with(spec.res.len(), || None);
        self.req_len.clear();
        self.req_len.extend(spec.req.iter().map(|s| s.1));
        self.res_len.clear();
        self.res_len.extend(spec.res.iter().map(|s| s.1));
        self.cookie_req = None;
        self.cookie_res = None;
    }

    /// Stores `v`, cut to the slot's length, in request (or response) slot `id`; nothing for
    /// a slot that does not exist.
    pub fn store(&mut self, response: bool, id: u32, v: &[u8]) {
        let (slots, lens) =
            if response { (&mut self.res, &self.res_len) } else { (&mut self.req, &self.req_len) };
        if let (Some(slot), Some(&len)) = (slots.get_mut(id as usize), lens.get(id as usize)) {
            *slot = Some(v[..v.len().min(len as usize)].to_vec());
        }
    }

    /// The header captures of a request (`response`: of a response) from its head; the cookie
    /// capture from `Cookie` (`Set-Cookie`).
    pub fn take_from(&mut self, spec: &CaptureSpec, head: &fulcrum_http::Head, response: bool) {
        let (defs, slots) =
            if response { (&spec.res, &mut self.res) } else { (&spec.req, &mut self.req) };
        for (i, (name, len)) in defs.iter().enumerate() {
            let Some(name) = name else { continue };
            // The last occurrence wins, as HAProxy.
            let v = head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name)).last();
            if let (Some((_, v)), Some(slot)) = (v, slots.get_mut(i)) {
                *slot = Some(v[..v.len().min(*len as usize)].to_vec());
            }
        }
        let Some((prefix, len)) = &spec.cookie else { return };
        let hdr: &[u8] = if response { b"set-cookie" } else { b"cookie" };
        let found =
            head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(hdr)).find_map(|(_, v)| {
                let pairs: Box<dyn Iterator<Item = &[u8]>> = if response {
                    Box::new(v.split(|&c| c == b';').take(1))
                } else {
                    Box::new(v.split(|&c| c == b';'))
                };
                pairs.map(<[u8]>::trim_ascii).find(|p| p.starts_with(prefix)).map(|p| {
                    // `name = value` is kept as `name=value`.
                    match p.iter().position(|&c| c == b'=') {
                        Some(e) => [p[..e].trim_ascii(), b"=", p[e + 1..].trim_ascii()].concat(),
                        None => p.to_vec(),
                    }
                })
            });
        if let Some(mut c) = found {
            c.truncate(*len as usize);
            if response {
                self.cookie_res = Some(c);
            } else {
                self.cookie_req = Some(c);
            }
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// HAProxy's URL map (`%r`, `%H*`): controls, 0x7F and above, `"` and `#`.
fn url_encoded(c: u8) -> bool {
    !(0x20..0x7f).contains(&c) || c == b'"' || c == b'#'
}

/// HAProxy's header map (captures): the URL map and `{`, `|`, `}`.
fn hdr_encoded(c: u8) -> bool {
    url_encoded(c) || matches!(c, b'{' | b'|' | b'}')
}

/// Control characters but TAB, and DEL (samples in formats that build HTTP messages).
fn http_encoded(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// RFC 5424 parameter values: `"`, `\` and `]` take a backslash under `+E`.
fn sd_escaped(c: u8) -> bool {
    matches!(c, b'"' | b'\\' | b']')
}

/// Writes `s` with the characters `map` names as `<esc>XX`; under `+E`, the others that RFC
/// 5424 reserves get a backslash.
fn encode(out: &mut Vec<u8>, s: &[u8], esc: u8, map: fn(u8) -> bool, f: LogFlags) {
    for &c in s {
        if map(c) {
            out.extend_from_slice(&[esc, HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
        } else if f.has(LogFlags::ESCAPE) && sd_escaped(c) {
            out.extend_from_slice(&[b'\\', c]);
        } else {
            out.push(c);
        }
    }
}

/// HAProxy's `lf_text_len`: a string, quoted under `+Q`, escaped under `+E`; an absent or
/// empty one prints `-` when mandatory (and not quoted).
fn text(out: &mut Vec<u8>, s: Option<&[u8]>, f: LogFlags) {
    let q = f.has(LogFlags::QUOTE);
    if q {
        out.push(b'"');
    }
    match s {
        Some(s) if !s.is_empty() => {
            if f.has(LogFlags::ESCAPE) {
                for &c in s {
                    if sd_escaped(c) {
                        out.push(b'\\');
                    }
                    out.push(c);
                }
            } else {
                out.extend_from_slice(s);
            }
        }
        _ if f.has(LogFlags::MANDATORY) && !q => out.push(b'-'),
        _ => {}
    }
    if q {
        out.push(b'"');
    }
}

/// A decimal integer, without the formatting machinery (a log line has a dozen of them).
fn num(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    let mut v = n.unsigned_abs();
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// `%ci`-like: an address as text (quoted under `+Q`), or in hexadecimal under `+X`; `-` for
/// none; `unix` for a UNIX socket.
fn ip(out: &mut Vec<u8>, a: Option<SocketAddr>, unix: bool, f: LogFlags) {
    match a {
        Some(a) if f.has(LogFlags::HEXA) => match a.ip() {
            std::net::IpAddr::V4(v4) => {
                for b in v4.octets() {
                    let _ = write!(out, "{b:02X}");
                }
            }
            std::net::IpAddr::V6(v6) => {
                for b in v6.octets() {
                    let _ = write!(out, "{b:02X}");
                }
            }
        },
        Some(a) if !f.has(LogFlags::QUOTE) && !f.has(LogFlags::ESCAPE) => match a.ip() {
            // The common case, written in place.
            std::net::IpAddr::V4(v4) => {
                for (i, b) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        out.push(b'.');
                    }
                    num(out, i64::from(b));
                }
            }
            ip6 => {
                let _ = write!(out, "{ip6}");
            }
        },
        Some(a) => {
            let start = out.len();
            let _ = write!(out, "{}", a.ip());
            let written = out.split_off(start);
            text(out, Some(&written), f);
        }
        None if unix => text(out, Some(b"unix"), f),
        None => text(out, None, f),
    }
}

/// `%cp`-like: a port (4 hex digits under `+X`); `-` for none; the listener's number for a
/// UNIX socket.
fn port(out: &mut Vec<u8>, a: Option<SocketAddr>, unix: bool, f: LogFlags) {
    match a {
        Some(a) if f.has(LogFlags::HEXA) => {
            let _ = write!(out, "{:04X}", a.port());
        }
        Some(a) => num(out, i64::from(a.port())),
        None if unix => out.push(b'1'),
        None => text(out, None, f),
    }
}

fn hex_or_dec(out: &mut Vec<u8>, n: u64, f: LogFlags, width: usize) {
    if f.has(LogFlags::HEXA) {
        let _ = write!(out, "{n:0width$X}");
    } else {
        let _ = write!(out, "{n}");
    }
}

/// A part of the request line as HAProxy's `%HM`..`%HV` find it, quoted under `+Q`, URL-map
/// encoded.
fn request_part(out: &mut Vec<u8>, line: Option<&[u8]>, v: LogVar, f: LogFlags) {
    let q = f.has(LogFlags::QUOTE);
    if q {
        out.push(b'"');
    }
    let sp = |c: &u8| *c == b' ' || *c == b'\t';
    let part: Option<&[u8]> = line.and_then(|l| {
        let m_end = l.iter().position(sp);
        let after = |i: usize| {
            let rest = &l[i..];
            let skip = rest.iter().take_while(|c| sp(c)).count();
            (skip, &rest[skip..])
        };
        match v {
            LogVar::Request => Some(l),
            LogVar::Method => m_end.map(|e| &l[..e]),
            _ => {
                let (spaces, rest) = after(m_end.unwrap_or(l.len()));
                if spaces == 0 && v != LogVar::Query {
                    return None;
                }
                let uri_end = rest.iter().position(sp).unwrap_or(rest.len());
                let uri = &rest[..uri_end];
                Some(match v {
                    LogVar::Uri => uri,
                    LogVar::Path => {
                        &uri[..uri.iter().position(|&c| c == b'?').unwrap_or(uri.len())]
                    }
                    LogVar::PathOnly => path_only(uri),
                    LogVar::Query => {
                        let q = l.iter().position(|&c| c == b'?').unwrap_or(l.len());
                        let end = l[q..].iter().position(sp).map_or(l.len(), |e| q + e);
                        &l[q..end]
                    }
                    _ => {
                        let ver = &rest[uri_end..];
                        let ver = &ver[ver.iter().take_while(|c| sp(c)).count()..];
                        if ver.is_empty() {
                            b"HTTP/0.9"
                        } else {
                            ver
                        }
                    }
                })
            }
        }
    });
    encode(out, part.unwrap_or(b"<BADREQ>"), b'#', url_encoded, f);
    if q {
        out.push(b'"');
    }
}

/// The path of a request target, without scheme, authority nor query (`*` and an authority
/// alone give nothing).
fn path_only(uri: &[u8]) -> &[u8] {
    let uri = &uri[..uri.iter().position(|&c| c == b'?').unwrap_or(uri.len())];
    if uri.first() == Some(&b'/') {
        return uri;
    }
    match uri.windows(3).position(|w| w == b"://") {
        Some(i) => {
            let rest = &uri[i + 3..];
            rest.iter().position(|&c| c == b'/').map_or(&b""[..], |p| &rest[p..])
        }
        None => b"",
    }
}

/// `%hr`/`%hs` (`{a|b}`) and `%hrl`/`%hsl` (`a b`, `-` for an empty slot).
fn captures(out: &mut Vec<u8>, slots: &[Option<Vec<u8>>], list: bool, f: LogFlags) {
    let q = f.has(LogFlags::QUOTE);
    if list {
        for (i, s) in slots.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            if q {
                out.push(b'"');
            }
            match s {
                Some(v) => encode(out, v, b'#', hdr_encoded, f),
                None if !q => out.push(b'-'),
                None => {}
            }
            if q {
                out.push(b'"');
            }
        }
        return;
    }
    if q {
        out.push(b'"');
    }
    out.push(b'{');
    for (i, s) in slots.iter().enumerate() {
        if i > 0 {
            out.push(b'|');
        }
        if let Some(v) = s {
            encode(out, v, b'#', hdr_encoded, f);
        }
    }
    out.push(b'}');
    if q {
        out.push(b'"');
    }
}

/// Renders one variable; false when it printed nothing and leaves the separator state as it
/// was (captures without slots).
fn var(
    out: &mut Vec<u8>,
    v: LogVar,
    f: LogFlags,
    ctx: &Ctx<'_>,
    s: Option<&Stream<'_>>,
    d: Option<&Derived>,
) -> bool {
    use LogVar as V;
    let o = s.map(|s| s.outcome);
    let t = |pick: fn(&crate::outcome::Timers) -> i64| d.map_or(-1, |d| pick(&d.timers));
    let be = ctx.backend.or(s.and_then(|s| s.be));
    let unix_client = ctx.src.is_none();
    // The moment the stream began, and its request began, on the wall clock.
    let accept = d.map(|d| d.accept);
    let request = d.map(|d| d.request);
    match v {
        V::BytesOut => num(out, o.map_or(0, |o| o.bytes_out as i64)),
        V::BytesIn => num(out, o.map_or(0, |o| o.bytes_in as i64)),
        V::CookieClient => text(out, s.and_then(|s| s.captures?.cookie_req.as_deref()), f),
        V::CookieServer => text(out, s.and_then(|s| s.captures?.cookie_res.as_deref()), f),
        V::Hostname => text(out, Some(crate::sys::hostname().as_bytes()), f),
        V::UniqueId => text(out, s.and_then(|s| s.unique_id), f),
        // An HTTP stream that never got a status (the client left first) logs -1, as
        // HAProxy's transaction does; a TCP stream has none: 0.
        V::Status => {
            let none = if s.is_some_and(|s| s.http) { -1 } else { 0 };
            num(out, o.and_then(|o| o.status).map_or(none, i64::from))
        }
        V::DateGmt => dates::gmt_date(out, accept.unwrap_or_else(SystemTime::now)),
        V::DateLocal => dates::local_date(out, accept.unwrap_or_else(SystemTime::now)),
        V::Date => dates::log_date(out, accept.unwrap_or_else(SystemTime::now)),
        V::RequestDate => dates::log_date(out, request.unwrap_or_else(SystemTime::now)),
        V::RequestDateGmt => dates::gmt_date(out, request.unwrap_or_else(SystemTime::now)),
        V::RequestDateLocal => dates::local_date(out, request.unwrap_or_else(SystemTime::now)),
        V::Timestamp => {
            let t = accept.unwrap_or_else(SystemTime::now);
            let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
            hex_or_dec(out, secs, f, 4);
        }
        V::Millis => {
            let t = accept.unwrap_or_else(SystemTime::now);
            let m = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_millis();
            if f.has(LogFlags::HEXA) {
                let _ = write!(out, "{m:02X}");
            } else {
                let _ = write!(out, "{m:03}");
            }
        }
        V::Th => num(out, t(|t| t.th)),
        V::Ti => num(out, t(|t| t.ti)),
        V::TR => num(out, t(|t| t.tr)),
        V::Tq => num(out, t(|t| t.tq)),
        V::Tw => num(out, t(|t| t.tw)),
        V::Tc => num(out, t(|t| t.tc)),
        V::Tr => num(out, t(|t| t.tresp)),
        V::Td => num(out, t(|t| t.td)),
        V::Ta => num(out, t(|t| t.ta)),
        V::Tt => num(out, t(|t| t.tt)),
        V::Tu => num(out, t(|t| t.tu)),
        V::ActConn => num(out, s.map_or(0, |s| i64::from(s.actconn))),
        V::FeConn => num(out, s.map_or(0, |s| i64::from(s.fe.current_conns()))),
        V::BeConn => num(out, be.map_or(0, |b| i64::from(b.active_sessions()))),
        V::SrvConn => {
            let n = match (be, o.and_then(|o| o.server)) {
                (Some(b), Some(i)) => b.servers()[i].cur_conns(),
                _ => 0,
            };
            num(out, i64::from(n));
        }
        V::Retries => {
            if o.is_some_and(|o| o.redispatched) {
                out.push(b'+');
            }
            num(out, o.map_or(0, |o| i64::from(o.retries)));
        }
        V::SrvQueue => num(out, o.map_or(0, |o| i64::from(o.srv_queue))),
        V::BackendQueue => num(out, o.map_or(0, |o| i64::from(o.be_queue))),
        V::Backend => text(out, Some(be.map_or(ctx.frontend, |b| b.name()).as_bytes()), f),
        V::Frontend => text(out, Some(ctx.frontend.as_bytes()), f),
        V::FrontendXprt => {
            let q = f.has(LogFlags::QUOTE);
            if q {
                out.push(b'"');
            }
            out.extend_from_slice(ctx.frontend.as_bytes());
            // HAProxy marks a TLS connection's frontend with `~`.
            if ctx.client.is_some_and(|c| c.tls().is_some()) {
                out.push(b'~');
            }
            if q {
                out.push(b'"');
            }
        }
        V::Server => {
            let name = match (be, o.and_then(|o| o.server)) {
                (Some(b), Some(i)) => b.servers()[i].name.as_str(),
                _ if o.is_some_and(|o| o.from_cache) => "<CACHE>",
                _ => ctx.server.unwrap_or("<NOSRV>"),
            };
            text(out, Some(name.as_bytes()), f);
        }
        V::ClientIp => ip(out, ctx.src, unix_client, f),
        V::ClientPort => port(out, ctx.src, unix_client, f),
        V::FrontendIp => ip(out, ctx.dst, unix_client, f),
        V::FrontendPort => port(out, ctx.dst, unix_client, f),
        V::BackendIp => ip(out, s.and_then(|s| s.server_conn).map(|c| c.0), false, f),
        V::BackendPort => port(out, s.and_then(|s| s.server_conn).map(|c| c.0), false, f),
        V::ServerIp => ip(out, s.and_then(|s| s.server_conn).map(|c| c.1), false, f),
        V::ServerPort => port(out, s.and_then(|s| s.server_conn).map(|c| c.1), false, f),
        V::ReqHeaders | V::ReqHeaderList | V::RespHeaders | V::RespHeaderList => {
            let Some(c) = s.and_then(|s| s.captures) else { return false };
            let slots = if matches!(v, V::ReqHeaders | V::ReqHeaderList) { &c.req } else { &c.res };
            if slots.is_empty() {
                return false;
            }
            captures(out, slots, matches!(v, V::ReqHeaderList | V::RespHeaderList), f);
        }
        V::Method | V::Uri | V::Path | V::PathOnly | V::Query | V::Version | V::Request => {
            let line = match s {
                Some(s) => s.request_line,
                None => None,
            };
            // A rule's format (no stream) reads the request as it is now.
            let owned;
            let line = match (line, s, ctx.req) {
                (Some(l), _, _) => Some(l),
                (None, None, Some(r)) => {
                    owned =
                        [r.method_bytes(), b" ", r.target(), b" ", r.version().as_bytes()].concat();
                    Some(&owned[..])
                }
                _ => None,
            };
            request_part(out, line, v, f);
        }
        V::LogCount => hex_or_dec(out, s.map_or(0, |s| s.log_count), f, 4),
        V::RequestCounter => hex_or_dec(out, s.map_or(0, |s| s.request_counter), f, 4),
        V::Pid => hex_or_dec(out, u64::from(std::process::id()), f, 4),
        V::SslCipher | V::SslVersion => {
            let fields = ctx.client.and_then(crate::tls::facts::log_fields);
            let t = fields.map(|(ver, cipher)| if v == V::SslVersion { ver } else { cipher });
            text(out, t.map(str::as_bytes), f)
        }
        V::TermState => {
            let st = o.map_or([b'-'; 2], |o| o.state());
            out.extend_from_slice(&st);
        }
        V::TermStateCookies => {
            let st = o.map_or([b'-'; 4], |o| o.state_with_cookies());
            out.extend_from_slice(&st);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        for n in [0, 7, -1, 10, 99, 100, -12345, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            num(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    #[test]
    fn addresses_are_written_in_place_or_quoted_as_text() {
        let plain = LogFlags::default();
        let quoted = LogFlags(LogFlags::QUOTE);
        let cases = [
            ("127.0.0.1:80", plain, "127.0.0.1"),
            ("10.200.3.255:80", quoted, "\"10.200.3.255\""),
            ("[::1]:80", plain, "::1"),
            ("[2001:db8::7]:80", quoted, "\"2001:db8::7\""),
        ];
        for (addr, f, want) in cases {
            let mut out = b"x ".to_vec();
            ip(&mut out, Some(addr.parse().expect("address")), false, f);
            assert_eq!(String::from_utf8_lossy(&out), format!("x {want}"), "{addr}");
        }
    }
}
