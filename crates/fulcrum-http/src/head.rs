//! `Head`: one request or response head (start line + header fields) parsed strictly from the
//! engine's bytes, copied into one reusable byte store, edited in place and serialised again.
//! Also owns the framing analysis (`Info`: Content-Length, Transfer-Encoding, Connection,
//! Upgrade, Expect). Must not touch: I/O, bodies (see `chunked`), hop-by-hop policy (see `hop`).
//!
//! Storage: `store` holds the bytes of every parsed line (without line ends) and every edit's
//! new bytes; `fields` holds (name, value) spans into it. A parse starts by clearing both (their
//! capacity stays), edits append, so a warmed-up `Head` parses and edits without allocating.
//!
//! Submodules: `lines` checks each line as it arrives, `analyze` works out the framing facts
//! of a field list, `build` makes a head from parts already split (HTTP/2), `edit` changes a
//! parsed head, `write` serialises it again.

use std::ops::Range;

use crate::chars::{find_lf, is_ows, is_target, is_tchar, is_value, trim_ows, value_run};
use crate::error::{EditError, HeadError};
use crate::target::{self, Form};
use crate::values::{comma_values, has_token};

mod analyze;
mod build;
mod edit;
mod lenient;
pub(crate) mod lines;
mod write;

use analyze::*;
use lines::*;

/// The byte store stays addressable with `u32` offsets.
const MAX_STORE: usize = u32::MAX as usize;

/// Size limits for a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the start line and header fields, line ends and the final empty line included
    /// (leading empty lines count too). HAProxy's is `tune.bufsize - tune.maxrewrite`.
    pub max_head: usize,
    /// HAProxy's `tune.http.maxhdr`: at most `max_headers - 1` fields are accepted (HAProxy
    /// keeps one slot for its end-of-headers marker: 101 takes 100 fields, verified on 2.6).
    pub max_headers: usize,
}

impl Default for Limits {
    /// HAProxy 2.6's defaults: 16384-byte buffers less 1024 bytes of `maxrewrite`, 101 headers.
    fn default() -> Self {
        Limits { max_head: 16384 - 1024, max_headers: 101 }
    }
}

/// The HTTP version of a message. `HTTP/1.2` to `HTTP/1.9` are read as HTTP/1.1 (RFC 9110
/// section 2.5, as HAProxy) and written back as `HTTP/1.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1`.
    #[default]
    Http11,
}

impl Version {
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            Version::Http10 => b"HTTP/1.0",
            Version::Http11 => b"HTTP/1.1",
        }
    }
}

/// A request method. Methods are case-sensitive: `get` is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Trace,
    Connect,
    Patch,
    /// Any other token (see [`Head::method_bytes`]).
    #[default]
    Other,
}

impl Method {
    /// The method named by these bytes.
    pub fn from_bytes(m: &[u8]) -> Method {
        match m {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            b"CONNECT" => Method::Connect,
            b"PATCH" => Method::Patch,
            _ => Method::Other,
        }
    }
}

/// How the body of a message is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Body {
    /// No body.
    #[default]
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked: scan it with [`crate::ChunkedScanner`].
    Chunked,
    /// Until the server closes (responses only).
    UntilClose,
}

/// Framing and connection facts of a head.
///
/// `body` follows the current framing headers: edits keep it in step. The other fields are
/// facts about the message **as received** and edits do not change them (so the engine still
/// knows the client asked for `close` after `strip_hop_by_hop` removed Connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Info {
    /// The body as announced by Content-Length / Transfer-Encoding. For a response, the request
    /// matters too: see [`crate::response_body`].
    pub body: Body,
    /// A Connection header has `close`.
    pub conn_close: bool,
    /// A Connection header has `keep-alive`.
    pub conn_keep_alive: bool,
    /// A Connection header has `upgrade`.
    pub conn_upgrade: bool,
    /// An Upgrade header is present.
    pub upgrade: bool,
    /// `Expect: 100-continue` in an HTTP/1.1 request (ignored in HTTP/1.0, RFC 9110 10.1.1).
    pub expect_continue: bool,
    /// Both Transfer-Encoding and Content-Length were received: chunked won and Content-Length
    /// was removed. HAProxy then closes the server connection after the response.
    pub te_and_cl: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn at(start: usize, len: usize) -> Span {
        // Callers keep the store below MAX_STORE, so both fit.
        Span { start: start as u32, len: len as u32 }
    }

    fn range(self) -> Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

#[derive(Debug, Clone, Copy)]
struct Field {
    name: Span,
    value: Span,
    /// What the name means to the codec, found once when the field is stored.
    special: Special,
    drop: bool,
}

impl Field {
    fn new(name: Span, value: Span, special: Special) -> Field {
        Field { name, value, special, drop: false }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Empty,
    Request,
    Response,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No parse in progress: the next parse starts afresh.
    Idle,
    /// Skipping leading empty lines, waiting for the start line.
    StartLine,
    /// Reading header lines.
    Fields,
}

/// Header names with a meaning to the codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    ContentLength,
    TransferEncoding,
    Host,
    Connection,
    Upgrade,
    Expect,
    WsKey,
    WsAccept,
    KeepAlive,
    ProxyConnection,
    Te,
    Other,
}

pub(crate) fn special(name: &[u8]) -> Special {
    let is = |s: &[u8]| name.eq_ignore_ascii_case(s);
    match name.len() {
        2 if is(b"te") => Special::Te,
        4 if is(b"host") => Special::Host,
        6 if is(b"expect") => Special::Expect,
        7 if is(b"upgrade") => Special::Upgrade,
        10 if is(b"connection") => Special::Connection,
        10 if is(b"keep-alive") => Special::KeepAlive,
        14 if is(b"content-length") => Special::ContentLength,
        16 if is(b"proxy-connection") => Special::ProxyConnection,
        17 if is(b"transfer-encoding") => Special::TransferEncoding,
        17 if is(b"sec-websocket-key") => Special::WsKey,
        20 if is(b"sec-websocket-accept") => Special::WsAccept,
        _ => Special::Other,
    }
}

/// A CR where another byte was expected is a bare CR; anything else is `e`.
fn byte_error(b: u8, e: HeadError) -> HeadError {
    if b == b'\r' {
        HeadError::BareCr
    } else {
        e
    }
}

/// The usual reason phrase of a status code, empty when none is known.
pub fn default_reason(code: u16) -> &'static [u8] {
    match code {
        100 => b"Continue",
        101 => b"Switching Protocols",
        200 => b"OK",
        201 => b"Created",
        202 => b"Accepted",
        204 => b"No Content",
        206 => b"Partial Content",
        301 => b"Moved Permanently",
        302 => b"Found",
        303 => b"See Other",
        304 => b"Not Modified",
        307 => b"Temporary Redirect",
        308 => b"Permanent Redirect",
        400 => b"Bad Request",
        401 => b"Unauthorized",
        403 => b"Forbidden",
        404 => b"Not Found",
        405 => b"Method Not Allowed",
        408 => b"Request Timeout",
        410 => b"Gone",
        413 => b"Payload Too Large",
        414 => b"URI Too Long",
        421 => b"Misdirected Request",
        422 => b"Unprocessable Content",
        425 => b"Too Early",
        429 => b"Too Many Requests",
        431 => b"Request Header Fields Too Large",
        500 => b"Internal Server Error",
        501 => b"Not Implemented",
        502 => b"Bad Gateway",
        503 => b"Service Unavailable",
        504 => b"Gateway Timeout",
        _ => b"",
    }
}

/// One request or response head. Reuse one per connection: parsing clears it but keeps its
/// capacity.
#[derive(Debug, Clone)]
pub struct Head {
    store: Vec<u8>,
    fields: Vec<Field>,
    kind: Kind,
    method: Method,
    method_span: Span,
    target_span: Span,
    /// The target's form, found once when the target is set.
    form: Form,
    reason_span: Span,
    version: Version,
    status: u16,
    info: Info,
    phase: Phase,
    /// Input bytes consumed by the parse in progress (complete lines only).
    consumed: usize,
    seen_cl: Option<u64>,
    seen_te: bool,
    seen_host: bool,
    /// An HTTP/1.1 request must carry Host (see [`Head::set_host_required`]).
    host_optional: bool,
    /// HAProxy's `option accept-invalid-http-request|response` (see [`Head::set_lenient`]).
    lenient: bool,
    /// HAProxy's `h1-accept-payload-with-any-method`.
    any_method_payload: bool,
    /// The first fault a lenient parse let pass.
    tolerated: Option<HeadError>,
}

impl Default for Head {
    fn default() -> Self {
        Head::new()
    }
}

impl Head {
    /// An empty head. Allocates nothing until the first parse.
    pub fn new() -> Head {
        Head {
            store: Vec::new(),
            fields: Vec::new(),
            kind: Kind::Empty,
            method: Method::Other,
            method_span: Span::default(),
            target_span: Span::default(),
            form: Form::Invalid,
            reason_span: Span::default(),
            version: Version::Http11,
            status: 0,
            info: Info::default(),
            phase: Phase::Idle,
            consumed: 0,
            seen_cl: None,
            seen_te: false,
            seen_host: false,
            host_optional: false,
            lenient: false,
            any_method_payload: false,
            tolerated: None,
        }
    }

    /// An empty head with room for a head of `bytes` bytes in `fields` fields: one allocation
    /// each where a head grown from nothing reallocates as it parses.
    pub fn with_capacity(bytes: usize, fields: usize) -> Head {
        let mut h = Head::new();
        h.store.reserve_exact(bytes);
        h.fields.reserve_exact(fields);
        h
    }

    /// Exchanges this head's buffers (with their capacity) for `other`'s and leaves this head
    /// empty, as [`Head::clear`] does; `other` keeps its state with this head's bytes, to be
    /// cleared by its next use. Moves six words where swapping two heads moves both whole.
    pub fn swap_buffers(&mut self, other: &mut Head) {
        std::mem::swap(&mut self.store, &mut other.store);
        std::mem::swap(&mut self.fields, &mut other.fields);
        self.clear();
    }

    /// Forgets the head (and any parse in progress), keeping the capacity.
    pub fn clear(&mut self) {
        self.store.clear();
        self.fields.clear();
        self.kind = Kind::Empty;
        self.method = Method::Other;
        self.method_span = Span::default();
        self.target_span = Span::default();
        self.form = Form::Invalid;
        self.reason_span = Span::default();
        self.version = Version::Http11;
        self.status = 0;
        self.info = Info::default();
        self.phase = Phase::Idle;
        self.consumed = 0;
        self.seen_cl = None;
        self.seen_te = false;
        self.seen_host = false;
        self.tolerated = None;
    }

    /// Parses a request head at the start of `buf`.
    ///
    /// `Ok(None)`: incomplete, call again with the same bytes followed by more (the parse
    /// resumes after the last complete line, so a head trickling in is read once in all; call
    /// [`Head::clear`] first to start over on other bytes). `Ok(Some(n))`: complete, `n` bytes
    /// consumed including leading empty lines and the final empty line; the head holds copies,
    /// so `buf` may be reused. An invalid byte is reported as soon as it is seen, as HAProxy
    /// does, even before the head is complete. If `buf` holds `limits.max_head` bytes or more
    /// without a complete head: [`HeadError::UriTooLong`] while the request line is unfinished,
    /// else [`HeadError::HeadTooLarge`].
    pub fn parse_request(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<usize>, HeadError> {
        self.parse(buf, limits, Kind::Request)
    }

    /// Parses a response head at the start of `buf`; as [`Head::parse_request`]. A response is
    /// never "URI too long": an unfinished status line past the limit is `HeadTooLarge`.
    pub fn parse_response(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<usize>, HeadError> {
        self.parse(buf, limits, Kind::Response)
    }

    /// HAProxy's `option accept-invalid-http-request` (for requests) or
    /// `accept-invalid-http-response` (for responses), kept until changed: any byte but LF
    /// in a field name, a request-target byte above 0x7F, a Host that names another host than
    /// an absolute target, any version made of letters, digits, `.` and `/` (HTTP/1.1 when it
    /// is 8 bytes long and at least x.1 by its digits, else HTTP/1.0), and for a request
    /// none at all (an HTTP/0.9 `GET <target>`, taken as HTTP/1.0). The strict checks run
    /// first; these are tried only where one fails, and the first fault let pass is kept
    /// ([`Head::tolerated`]) for `show errors`.
    pub fn set_lenient(&mut self, on: bool) {
        self.lenient = on;
    }

    /// HAProxy's `h1-accept-payload-with-any-method`: an HTTP/1.0 GET, HEAD or DELETE request
    /// may announce a body (otherwise [`HeadError::PayloadWithMethod`], 413). Kept until changed.
    pub fn set_any_method_payload(&mut self, on: bool) {
        self.any_method_payload = on;
    }

    /// The first fault the last parse let pass ([`Head::set_lenient`]).
    pub fn tolerated(&self) -> Option<HeadError> {
        self.tolerated
    }

    fn tolerate(&mut self, e: HeadError) {
        self.tolerated.get_or_insert(e);
    }

    /// Forgets an unfinished parse: the next `parse_*` starts a new message. Parsing resumes
    /// an unfinished head only when called again on the same growing buffer, so a head reused
    /// for another buffer (another connection, another try) must start over first.
    pub fn start_over(&mut self) {
        self.phase = Phase::Idle;
    }

    fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        kind: Kind,
    ) -> Result<Option<usize>, HeadError> {
        let resume = self.phase != Phase::Idle
            && self.kind == kind
            && self.consumed <= buf.len()
            && (self.consumed == 0 || buf[self.consumed - 1] == b'\n');
        if !resume {
            self.clear();
            self.kind = kind;
            self.phase = Phase::StartLine;
        }
        let result = self.parse_lines(buf, limits);
        if !matches!(result, Ok(None)) {
            self.phase = Phase::Idle;
        }
        result
    }

    fn parse_lines(&mut self, buf: &[u8], limits: &Limits) -> Result<Option<usize>, HeadError> {
        let max_head = limits.max_head.min(MAX_STORE / 2);
        let end = buf.len().min(max_head);
        loop {
            let pos = self.consumed;
            let window = buf.get(pos..end).unwrap_or_default();
            if self.phase == Phase::Fields {
                let blank = match window {
                    [b'\n', ..] => Some(1),
                    [b'\r', b'\n', ..] => Some(2),
                    _ => None,
                };
                if let Some(k) = blank {
                    self.consumed = pos + k;
                    self.finish()?;
                    return Ok(Some(self.consumed));
                }
                // (The lenient way apart, and one call of `field`, which must stay inlined.)
                let (end, next, name, value) = match scan_field_line(window) {
                    Ok(FieldScan::Line { end, next, name, value }) => (end, next, name, value),
                    Ok(FieldScan::Partial) => return self.partial_field(buf.len() >= max_head),
                    Err(e) => match self.lenient_field(window, e)? {
                        FieldScan::Line { end, next, name, value } => (end, next, name, value),
                        FieldScan::Partial => return self.partial_field(buf.len() >= max_head),
                    },
                };
                self.consumed = pos + next;
                self.field(&window[..end], name, value, limits)?;
                continue;
            }
            match find_lf(window) {
                Some(j) => {
                    let line = window[..j].strip_suffix(b"\r").unwrap_or(&window[..j]);
                    self.consumed = pos + j + 1;
                    // Leading empty lines are skipped.
                    if !line.is_empty() {
                        self.start_line(line, true)?;
                        self.phase = Phase::Fields;
                    }
                }
                None => {
                    let part = window.strip_suffix(b"\r").unwrap_or(window);
                    if !part.is_empty() {
                        self.start_line(part, false)?;
                    }
                    if buf.len() >= max_head {
                        return Err(if self.kind == Kind::Request {
                            HeadError::UriTooLong
                        } else {
                            HeadError::HeadTooLarge
                        });
                    }
                    return Ok(None);
                }
            }
        }
    }

    fn start_line(&mut self, line: &[u8], complete: bool) -> Result<(), HeadError> {
        match self.kind {
            Kind::Response => self.status_line(line, complete),
            _ => self.request_line(line, complete),
        }
    }

    /// An unfinished field line: more to read, unless the head is already too large.
    fn partial_field(&self, too_large: bool) -> Result<Option<usize>, HeadError> {
        if too_large {
            Err(HeadError::HeadTooLarge)
        } else {
            Ok(None)
        }
    }

    fn request_line(&mut self, line: &[u8], complete: bool) -> Result<(), HeadError> {
        let l = match check_request_line(line, complete) {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(()),
            Err(e) => return self.lenient_request_line(line, complete, e),
        };
        let base = self.store.len();
        self.store.extend_from_slice(line);
        self.set_request_line(base, &l);
        Ok(())
    }

    /// Takes a checked request line stored at `base`.
    fn set_request_line(&mut self, base: usize, l: &RequestLine) {
        self.method = l.method;
        self.method_span = Span::at(base, l.m_end);
        self.target_span = Span::at(base + l.t_start, l.t_end - l.t_start);
        self.form = l.form;
        self.version = l.version;
    }

    fn status_line(&mut self, line: &[u8], complete: bool) -> Result<(), HeadError> {
        // (The strict way with its constant offsets; a refused version goes the lenient way,
        // apart, which costs the strict one nothing.)
        if let Err(e) = check_version(&line[..line.len().min(8)], false) {
            return self.lenient_status_line(line, complete, e);
        }
        match line.get(8) {
            None if !complete => return Ok(()),
            None if line.len() < 8 => {
                return self.lenient_status_line(line, complete, HeadError::BadVersion)
            }
            None => return Err(HeadError::BadStatus),
            Some(b' ') => {}
            Some(&b) => {
                let e = byte_error(b, HeadError::BadVersion);
                return self.lenient_status_line(line, complete, e);
            }
        }
        let mut code: u16 = 0;
        for k in 9..12 {
            match line.get(k) {
                None if complete => return Err(HeadError::BadStatus),
                None => return Ok(()),
                Some(&d) if d.is_ascii_digit() && (k > 9 || d != b'0') => {
                    code = code * 10 + u16::from(d - b'0');
                }
                Some(&b) => return Err(byte_error(b, HeadError::BadStatus)),
            }
        }
        // HAProxy also takes a status line without the SP before an empty reason.
        let reason = match line.get(12) {
            None => 12..12,
            Some(b' ') => 13..line.len(),
            Some(&b) => return Err(byte_error(b, HeadError::BadStatus)),
        };
        if let Some(&b) = line[reason.clone()].iter().find(|&&b| !is_value(b)) {
            return Err(byte_error(b, HeadError::BadStatus));
        }
        if !complete {
            return Ok(());
        }
        let base = self.store.len();
        self.store.extend_from_slice(line);
        self.version = if line[7] == b'0' { Version::Http10 } else { Version::Http11 };
        self.status = code;
        self.reason_span = Span::at(base + reason.start, reason.len());
        Ok(())
    }

    /// Stores a checked header line: its name is `line[..n]`, its trimmed value `value`.
    #[inline(always)]
    fn field(
        &mut self,
        line: &[u8],
        n: usize,
        value: Range<usize>,
        limits: &Limits,
    ) -> Result<(), HeadError> {
        let Some((special, kept)) = self.check_field(&line[..n], &line[value.clone()], limits)?
        else {
            return Ok(());
        };
        let base = self.store.len();
        self.store.extend_from_slice(line);
        self.fields.push(Field::new(
            Span::at(base, n),
            Span::at(base + value.start + kept.start, kept.len()),
            special,
        ));
        Ok(())
    }

    /// Checks a field's meaning before it is stored (Content-Length, Transfer-Encoding, Host,
    /// the field count): what its name means and the part of its value kept (a Content-Length
    /// list keeps its first element), or `None` for a field merged into an earlier one.
    #[inline(always)]
    fn check_field(
        &mut self,
        name: &[u8],
        value: &[u8],
        limits: &Limits,
    ) -> Result<Option<(Special, Range<usize>)>, HeadError> {
        let special = special(name);
        let mut kept = 0..value.len();
        match special {
            Special::ContentLength => {
                let (len, first) = parse_content_length(value)?;
                if let Some(prev) = self.seen_cl {
                    // Identical to the first one: merged into it, as HAProxy.
                    return if prev == len {
                        Ok(None)
                    } else {
                        Err(HeadError::ConflictingContentLength)
                    };
                }
                self.seen_cl = Some(len);
                kept = first;
            }
            Special::TransferEncoding => self.seen_te = true,
            Special::Host if self.kind == Kind::Request => {
                if self.seen_host {
                    return self.second_host(value);
                }
                self.seen_host = true;
                if !target::valid_host(value)
                    || !target::host_matches_in(self.target(), self.form, value)
                {
                    self.lenient_host(value)?;
                }
            }
            _ => {}
        }
        if self.fields.len() + 1 >= limits.max_headers {
            return Err(HeadError::TooManyHeaders);
        }
        Ok(Some((special, kept)))
    }

    #[inline(always)]
    fn finish(&mut self) -> Result<(), HeadError> {
        let te_and_cl = self.seen_te && self.seen_cl.is_some();
        if te_and_cl {
            self.fields.retain(|f| f.special != Special::ContentLength);
        }
        // Each Host value was checked against the target as it was parsed.
        let ctx = Ctx { host_checked: true, ..self.ctx(None, None) };
        let info = analyze(&ctx, self.view(None, None, None), true).map_err(|f| match f {
            Flaw::Head(e) => e,
            // Content-Length was removed just above.
            Flaw::ClAndTe => HeadError::BadTransferEncoding,
        })?;
        if self.kind == Kind::Request {
            // RFC 9112 3.2 (HAProxy 2.6 forwards it). An absolute-form or CONNECT target names
            // its host itself.
            let names_host =
                matches!(self.form, target::Form::Absolute { .. } | target::Form::Authority);
            if self.version == Version::Http11
                && !self.seen_host
                && !names_host
                && !self.host_optional
            {
                return Err(HeadError::MissingHost);
            }
            if self.version == Version::Http10 && !self.any_method_payload {
                self.payload_with_method(&info)?;
            }
        }
        self.info = Info { te_and_cl, ..info };
        Ok(())
    }

    fn bytes(&self, s: Span) -> &[u8] {
        &self.store[s.range()]
    }

    fn ctx<'a>(&'a self, target: Option<(&'a [u8], Form)>, status: Option<u16>) -> Ctx<'a> {
        let (target, form) = target.unwrap_or_else(|| (self.target(), self.form));
        Ctx {
            kind: self.kind,
            version: self.version,
            target,
            form,
            status: status.unwrap_or(self.status),
            host_checked: false,
        }
    }

    /// The field list as the framing analysis sees it after an edit (what each name means,
    /// and the value): without fields named `skip`, with field `replace.0`'s value replaced,
    /// plus `extra` (name, value) at the end.
    fn view<'a>(
        &'a self,
        skip: Option<&'a [u8]>,
        replace: Option<(usize, &'a [u8])>,
        extra: Option<(&'a [u8], &'a [u8])>,
    ) -> impl Iterator<Item = (Special, &'a [u8])> + 'a {
        self.fields
            .iter()
            .enumerate()
            .filter_map(move |(i, f)| {
                if skip.is_some_and(|s| self.bytes(f.name).eq_ignore_ascii_case(s)) {
                    return None;
                }
                let value = match replace {
                    Some((j, v)) if j == i => v,
                    _ => self.bytes(f.value),
                };
                Some((f.special, value))
            })
            .chain(extra.map(|(name, value)| (special(name), value)))
    }

    // ----- start line -----

    /// True for a request head (parsed or being parsed).
    pub fn is_request(&self) -> bool {
        self.kind == Kind::Request
    }

    /// The method (`Other` for a response).
    pub fn method(&self) -> Method {
        self.method
    }

    /// The method as sent (empty for a response).
    pub fn method_bytes(&self) -> &[u8] {
        self.bytes(self.method_span)
    }

    /// An absolute-form target's scheme and authority (without user info): `None` for the
    /// other forms, or an empty authority.
    pub fn scheme_and_authority(&self) -> Option<(&[u8], &[u8])> {
        let t = self.target();
        match self.form {
            Form::Absolute { auth_start, .. } => {
                Some((&t[..auth_start - 3], target::authority_of(t, self.form)?))
            }
            _ => None,
        }
    }

    /// The request-target as sent: origin-form, absolute-form, authority-form (CONNECT) or `*`.
    pub fn target(&self) -> &[u8] {
        self.bytes(self.target_span)
    }

    /// HAProxy's `path` fetch: the target from the first `/` after any `scheme://authority` to
    /// before the `?`. Empty for `*`, CONNECT's `host:port` and `http://host` (HAProxy's fetch
    /// then finds nothing; it does not make up a `/`).
    pub fn path(&self) -> &[u8] {
        target::path_in(self.target(), self.form)
    }

    /// The target as [`Head::write_origin_form_to`] writes it, but for the `/` it supplies for
    /// an empty path: what follows the authority of an absolute-form target, else the whole
    /// target.
    pub fn origin_form_target(&self) -> &[u8] {
        let t = self.target();
        match self.form {
            Form::Absolute { auth_end, .. } => &t[auth_end..],
            _ => t,
        }
    }

    /// HAProxy's `query` fetch: what follows the first `?` of the target (`Some(b"")` for a
    /// bare `?`), `None` without `?`.
    pub fn query(&self) -> Option<&[u8]> {
        target::query(self.target())
    }

    /// The version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The status code (0 for a request).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase, maybe empty.
    pub fn reason(&self) -> &[u8] {
        self.bytes(self.reason_span)
    }

    // ----- header fields -----

    /// The header fields in order, as (name as sent, value without surrounding OWS).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|f| (self.bytes(f.name), self.bytes(f.value)))
    }

    /// The number of header fields.
    pub fn header_len(&self) -> usize {
        self.fields.len()
    }

    /// The whole value of the first field named `name` (case-insensitive).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// How many fields are named `name` (case-insensitive). For HAProxy's `hdr_cnt`, which
    /// counts comma-separated values, use [`crate::comma_values`] on each.
    pub fn header_count(&self, name: &[u8]) -> usize {
        self.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name)).count()
    }

    /// Framing facts of the last parse, `body` kept in step by edits.
    pub fn info(&self) -> &Info {
        &self.info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-pass way `scan_field_line` replaces for header lines (and trailers still use).
    fn two_pass(w: &[u8]) -> Result<FieldScan, HeadError> {
        match find_lf(w) {
            Some(j) => {
                let line = w[..j].strip_suffix(b"\r").unwrap_or(&w[..j]);
                match check_field_line(line, true)? {
                    Some((name, value)) => {
                        Ok(FieldScan::Line { end: line.len(), next: j + 1, name, value })
                    }
                    None => unreachable!("a complete line is checked or refused"),
                }
            }
            None => {
                let part = w.strip_suffix(b"\r").unwrap_or(w);
                if !part.is_empty() {
                    check_field_line(part, false)?;
                }
                Ok(FieldScan::Partial)
            }
        }
    }

    fn agree(w: &[u8]) {
        if w.starts_with(b"\n") || w.starts_with(b"\r\n") {
            return; // the empty line: the parser's business before any scan
        }
        assert_eq!(scan_field_line(w), two_pass(w), "{:?}", String::from_utf8_lossy(w));
    }

    #[test]
    fn a_head_started_over_parses_new_bytes_from_their_start() {
        let limits = Limits::default();
        let mut h = Head::default();
        // A request cut after its request line: the parse waits for more of these bytes.
        assert_eq!(h.parse_request(b"GET /partial HTTP/1.1\r\n", &limits), Ok(None));
        // Other bytes (another connection) that happen to be as long or longer: without
        // start_over the parse would resume past "their" request line.
        h.start_over();
        let other = b"GET /other/x HTTP/1.1\r\nhost: a\r\n\r\n";
        assert_eq!(h.parse_request(other, &limits), Ok(Some(other.len())));
        assert_eq!(h.target(), b"/other/x");
    }

    #[test]
    fn the_one_pass_field_scan_agrees_with_the_two_pass_check() {
        const ALPHABET: &[u8] = b"a:\t \r\n\x01\x7f\x80(";
        // Every window of up to 5 bytes over bytes that matter to the grammar.
        let mut w = Vec::new();
        fn all(w: &mut Vec<u8>, depth: usize) {
            agree(w);
            if depth == 0 {
                return;
            }
            for &b in ALPHABET {
                w.push(b);
                all(w, depth - 1);
                w.pop();
            }
        }
        all(&mut w, 5);
        // Longer lines (the eight-byte steps of the value scan), mostly valid, bytes mixed in.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut line = b"X-Name: some value text of a header field\r\nNext: 1\r\n".to_vec();
            let len = (x % line.len() as u64) as usize + 1;
            line.truncate(len);
            let at = ((x >> 8) % len as u64) as usize;
            if !(x >> 20).is_multiple_of(3) {
                line[at] = ALPHABET[((x >> 24) % ALPHABET.len() as u64) as usize];
            }
            agree(&line);
        }
    }
}
