//! Sample expressions (HAProxy manual §7.3): `<fetch>[(<args>)][,<converter>[(<args>)]]...`,
//! as written in ACL criteria, in `%[...]` blocks of log-format strings and after `set-var`.
//!
//! Parses into [`SampleExpr`] with HAProxy's argument syntax (comma-separated, optional
//! arguments, quotes and backslash escapes) and HAProxy's messages, and knows each fetch's
//! output type (for the ACL default match and converter input checks) and where it may be used
//! (request or response side).

use crate::model::{Converter, Fetch, MapMatch, PayloadFetch, PpFetch, SampleExpr, VarScope};
use crate::sample_names;

mod conv;
mod conv_text;
mod stick;
mod tls;
use conv::{build_converter, castable};
pub use stick::SLOTS as STICK_COUNTERS;

/// Output type of a fetch or converter, as HAProxy types samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmpType {
    Bool,
    Int,
    Ip,
    Str,
    /// An HTTP method (`method`): matched as a string.
    Meth,
    /// A block of bytes (`req.body`, `req.hdrs`): an ACL must say `-m`; converters taking a
    /// string accept it.
    Bin,
    /// Known only at run time (`var()`): an ACL must say `-m`.
    Any,
}

/// Which rule contexts may evaluate a fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Avail {
    /// Connection-level, internal state or constants: everywhere.
    Always,
    /// The request method: everywhere but `tcp-request connection`.
    Method,
    /// Request line and headers: request-side rules only.
    Request,
    /// The `hdr()` sample fetch (not the ACL keyword): the headers of the message being
    /// processed (request or response), so everywhere but `tcp-request connection`.
    Message,
    /// The response: `http-response` and `http-after-response` only.
    Response,
    /// The client connection's transport layer (`ssl_fc`): everywhere but
    /// `tcp-request connection`.
    Session,
    /// The backend (`be_name`): once a backend is known, so response rules, and the request
    /// rules of a proxy with backend capability; never `tcp-request connection` nor
    /// `use_backend`.
    Backend,
    /// The server (`srv_name`): response rules, and still in the log line.
    Server,
    /// The server connection's addresses (`bc_src`...): as [`Avail::Server`] (HAProxy's
    /// `L4SRV`).
    ServerAddr,
    /// The server connection's transport layer (`ssl_bc*`): as [`Avail::Server`] (`L5SRV`).
    ServerConn,
    /// What the request's (`response`: the response's) captures hold: where the message is
    /// available, and still in the log line (HAProxy's `SMP_USE_HRQHP` / `SMP_USE_HRSHP`).
    Captured { response: bool },
}

/// The kind of rule a sample or condition is evaluated by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    TcpConnection,
    /// `tcp-request session`: after the PROXY header and the TLS handshake.
    TcpSession,
    TcpContent,
    /// `tcp-response content`: the backend, with the server's response.
    TcpResponse,
    HttpRequest,
    HttpResponse,
    /// `use_backend`.
    Switching,
    /// `monitor fail`: HAProxy does not check.
    Monitor,
    /// A log line, at the end of the stream: the connection, the proxies, variables and
    /// captures, not the request's headers any more (HAProxy's `SMP_VAL_FE_LOG_END`).
    Log,
}

impl Avail {
    pub fn usable_in(self, ctx: Ctx) -> bool {
        match (self, ctx) {
            (_, Ctx::Monitor)
            | (Avail::Always, _)
            | (
                Avail::Captured { .. } | Avail::Server | Avail::ServerAddr | Avail::ServerConn,
                Ctx::Log,
            ) => true,
            (Avail::Captured { response }, c) => {
                if response {
                    Avail::Response.usable_in(c)
                } else {
                    Avail::Request.usable_in(c)
                }
            }
            (Avail::Request | Avail::Message | Avail::Response, Ctx::Log) => false,
            (Avail::Method | Avail::Message, c) => {
                !matches!(c, Ctx::TcpConnection | Ctx::TcpSession)
            }
            (Avail::Request, c) => {
                !matches!(c, Ctx::TcpConnection | Ctx::TcpSession | Ctx::HttpResponse)
            }
            (Avail::Response | Avail::Server | Avail::ServerAddr | Avail::ServerConn, c) => {
                matches!(c, Ctx::HttpResponse | Ctx::TcpResponse)
            }
            (Avail::Session, c) => c != Ctx::TcpConnection,
            (Avail::Backend, c) => {
                !matches!(c, Ctx::TcpConnection | Ctx::TcpSession | Ctx::Switching)
            }
        }
    }

    /// Like [`Avail::usable_in`], for a proxy that has backend capability (`be_cap`) or not:
    /// without it, request rules run before any backend is known.
    pub fn usable_in_proxy(self, ctx: Ctx, be_cap: bool) -> bool {
        let before_backend = matches!(ctx, Ctx::TcpContent | Ctx::HttpRequest);
        self.usable_in(ctx) && !(self == Avail::Backend && before_backend && !be_cap)
    }
    /// What the fetch needs, as HAProxy words it in "may not be reliably used here".
    pub fn needs(self) -> &'static str {
        match self {
            Avail::Always => "nothing",
            Avail::Method | Avail::Request | Avail::Message => "HTTP request headers",
            Avail::Captured { response: false } => "HTTP request headers",
            Avail::Response | Avail::Captured { response: true } => "HTTP response headers",
            Avail::Session => "client-side connection",
            Avail::Backend => "backend",
            Avail::Server => "server",
            Avail::ServerAddr => "server address",
            Avail::ServerConn => "server-side connection",
        }
    }
}

/// A parsed expression with what later checks need to know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub expr: SampleExpr,
    /// Type of the last fetch or converter.
    pub out: SmpType,
    pub avail: Avail,
    /// The fetch keyword as written (`req.hdr`, `hdr_beg`).
    pub kw: String,
}

/// Why an expression was refused. The `Display`-like formatting depends on where the
/// expression was written, see [`SmpError::plain`] and [`SmpError::in_acl`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmpError {
    MissingFetch,
    UnknownFetch(String),
    /// A problem with the fetch's arguments: (fetch keyword, message).
    FetchArg(String, String),
    /// Arguments of the right types that the fetch refuses (HAProxy's argument validation):
    /// (fetch keyword, message).
    ArgCheck(String, String),
    /// A converter problem, message fully worded (`unknown converter 'x'`).
    Conv(String),
    /// Anything else, fully worded.
    Other(String),
}

impl SmpError {
    /// The message as HAProxy's sample expression parser words it (log-format, set-var).
    pub fn plain(&self) -> String {
        match self {
            SmpError::MissingFetch => "missing fetch method".into(),
            SmpError::UnknownFetch(f) => format!("unknown fetch method '{f}'"),
            SmpError::FetchArg(f, m) => format!("fetch method '{f}' : {m}"),
            SmpError::ArgCheck(f, m) => format!("invalid args in fetch method '{f}' : {m}"),
            SmpError::Conv(m) | SmpError::Other(m) => m.clone(),
        }
    }

    /// The message for an ACL criterion `text`; `acl_kw` is set when the criterion starts with
    /// an ACL keyword (HAProxy then names the keyword instead of the expression).
    pub fn in_acl(&self, text: &str, acl_kw: Option<&str>) -> String {
        match (self, acl_kw) {
            (SmpError::FetchArg(_, m), Some(kw)) => format!("ACL keyword '{kw}' : {m}."),
            (SmpError::ArgCheck(_, m), Some(kw)) => format!("in argument to '{kw}', {m}."),
            (SmpError::Conv(m), Some(kw)) => format!("ACL keyword '{kw}' : {m}.."),
            _ => format!("{} in ACL expression '{text}'.", self.plain()),
        }
    }
}

/// Argument types of fetches and converters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArgT {
    Str,
    Int,
}

impl ArgT {
    fn name(self) -> &'static str {
        match self {
            ArgT::Str => "string",
            ArgT::Int => "integer",
        }
    }
}

/// One argument value after checking its type.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Arg {
    Str(String),
    Int(i64),
}

impl Arg {
    fn str(&self) -> String {
        match self {
            Arg::Str(s) => s.clone(),
            Arg::Int(i) => i.to_string(),
        }
    }
    fn int(&self) -> i64 {
        match self {
            Arg::Int(i) => *i,
            Arg::Str(_) => 0,
        }
    }
}

/// Argument list as written: `None` when there were no parentheses.
struct RawArgs {
    /// Each argument with the byte offset (in the whole input) of the comma before it, or of
    /// the first character for the first argument.
    items: Vec<(String, usize)>,
    /// Byte offset just after the closing parenthesis.
    end: usize,
}

/// Splits the argument list starting at `open` (the `(`) in `s`. Commas separate arguments;
/// quotes and backslashes protect commas and parentheses.
fn split_args(s: &str, open: usize) -> Result<RawArgs, String> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut start = open + 1;
    let mut i = open + 1;
    let mut quote: Option<u8> = None;
    loop {
        let Some(&c) = bytes.get(i) else {
            return Err("missing closing ')' after arguments".into());
        };
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (None, b'"' | b'\'') => quote = Some(c),
            // HAProxy's `make_arg_list`: outside single quotes, `\\`, `\ `, `\"` and `\'` stand
            // for the character, `\r`, `\n`, `\t` for the control characters, and any other
            // backslash stays (a regex's `\d` reaches the regex).
            (q, b'\\') if q != Some(b'\'') && i + 1 < bytes.len() => {
                match bytes[i + 1] {
                    c @ (b'\\' | b' ' | b'"' | b'\'') => cur.push(char::from(c)),
                    b'r' => cur.push('\r'),
                    b'n' => cur.push('\n'),
                    b't' => cur.push('\t'),
                    _ => {
                        cur.push('\\');
                        i += 1;
                        continue;
                    }
                }
                i += 2;
                continue;
            }
            (None, b',') => {
                items.push((std::mem::take(&mut cur), start));
                start = i;
            }
            (None, b')') => {
                items.push((cur, start));
                return Ok(RawArgs { items, end: i + 1 });
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or(' ');
                cur.push(ch);
                i += ch.len_utf8();
                continue;
            }
        }
        i += 1;
    }
}

fn parse_int(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Checks `raw` against `spec` (types; the first `mandatory` are required). `s` is the whole
/// input, for the "expected ')' before" message.
fn check_args(
    s: &str,
    raw: Option<&RawArgs>,
    spec: &[ArgT],
    mandatory: usize,
) -> Result<Vec<Arg>, (usize, String)> {
    let mut items: Vec<(String, usize)> = match raw {
        Some(r) if r.items.len() == 1 && r.items[0].0.is_empty() => Vec::new(),
        Some(r) => r.items.clone(),
        None => Vec::new(),
    };
    // An empty optional integer ends the list, as HAProxy: fine when it is the last.
    let empty_opt = items.iter().enumerate().position(|(i, (text, _))| {
        text.is_empty() && i >= mandatory && spec.get(i) == Some(&ArgT::Int)
    });
    if let Some(i) = empty_opt {
        if let Some((_, at)) = items.get(i + 1) {
            return Err((i, format!("expected ')' before '{}'", &s[*at..])));
        }
        items.truncate(i);
    }
    if items.len() > spec.len() {
        let (_, at) = &items[spec.len()];
        let idx = if spec.is_empty() { 0 } else { spec.len() };
        return Err((idx, format!("expected ')' before '{}'", &s[*at..])));
    }
    let mut out = Vec::new();
    for (i, (text, _)) in items.iter().enumerate() {
        match spec[i] {
            ArgT::Str => out.push(Arg::Str(text.clone())),
            ArgT::Int if text.is_empty() => {
                let msg = format!("expected type 'integer' at position {}, but got nothing", i + 1);
                return Err((i + 1, msg));
            }
            ArgT::Int => match parse_int(text) {
                Some(v) => out.push(Arg::Int(v)),
                None => {
                    let msg =
                        format!("failed to parse '{text}' as type 'integer' at position {}", i + 1);
                    return Err((i + 1, msg));
                }
            },
        }
    }
    if out.len() < mandatory {
        let pos = out.len() + 1;
        let t = spec[out.len()];
        if out.is_empty() && t == ArgT::Str {
            // `str` or `str()`: an empty string, as HAProxy.
            out.push(Arg::Str(String::new()));
        } else if out.is_empty() && t == ArgT::Int {
            return Err((1, "expected type 'integer' at position 1, but got nothing".into()));
        } else {
            let msg = format!(
                "missing arguments (got {}/{mandatory}), type '{}' expected",
                out.len(),
                t.name()
            );
            return Err((pos, msg));
        }
    }
    Ok(out)
}

/// How a fetch keyword's arguments are declared and what it yields.
struct FetchDef {
    args: &'static [ArgT],
    mandatory: usize,
    out: SmpType,
    avail: Avail,
}

const NONE: &[ArgT] = &[];
const S: &[ArgT] = &[ArgT::Str];
const SS: &[ArgT] = &[ArgT::Str, ArgT::Str];
const SI: &[ArgT] = &[ArgT::Str, ArgT::Int];
const IS: &[ArgT] = &[ArgT::Int, ArgT::Str];
const I: &[ArgT] = &[ArgT::Int];
const II: &[ArgT] = &[ArgT::Int, ArgT::Int];
const IIS: &[ArgT] = &[ArgT::Int, ArgT::Int, ArgT::Str];
const ISI: &[ArgT] = &[ArgT::Int, ArgT::Str, ArgT::Int];
const SSS: &[ArgT] = &[ArgT::Str, ArgT::Str, ArgT::Str];
const SIS: &[ArgT] = &[ArgT::Str, ArgT::Int, ArgT::Str];

/// `req.payload(<offset>,<length>)` and `req.payload_lv(<offset1>,<length>[,<offset2>])`, with
/// HAProxy's checks.
fn payload(name: &str, args: &[Arg]) -> Result<Fetch, SmpError> {
    let bad = |m: &str| Err(SmpError::ArgCheck(name.to_string(), m.to_string()));
    let int = |i: usize| args.get(i).map_or(0, Arg::int);
    let (offset, length) = (int(0), int(1));
    if offset < 0 || offset > u32::MAX as i64 || !(0..=u32::MAX as i64).contains(&length) {
        return bad("payload offset and length must be positive");
    }
    let (offset, length) = (offset as u32, length as u32);
    if !name.ends_with("_lv") {
        return Ok(Fetch::Payload(PayloadFetch::Bytes { offset, length }));
    }
    if length == 0 {
        return bad("payload length must be > 0");
    }
    if length > 4 {
        return bad("payload length must be <= 4 bytes");
    }
    let at = match args.get(2).map(Arg::str) {
        None => None,
        Some(t) if t.is_empty() => None,
        Some(t) => {
            let (rel, digits) = match t.strip_prefix('+') {
                Some(d) => (true, d),
                None => (false, t.as_str()),
            };
            match digits.parse::<i64>() {
                Ok(n) => Some((n, rel)),
                Err(_) => return bad("payload offset2 must be an integer"),
            }
        }
    };
    Ok(Fetch::Payload(PayloadFetch::Lv { offset, length, at }))
}

fn fetch_def(name: &str) -> Option<FetchDef> {
    use Avail::*;
    use SmpType::*;
    let d = |args, mandatory, out, avail| Some(FetchDef { args, mandatory, out, avail });
    match name {
        "src" | "dst" | "fc_src" | "fc_dst" => d(NONE, 0, Ip, Always),
        "fc_src_port" | "fc_dst_port" => d(NONE, 0, Int, Always),
        "src_port" | "dst_port" => d(NONE, 0, Int, Always),
        "path" | "url" | "query" => d(NONE, 0, Str, Request),
        "method" => d(NONE, 0, Meth, Method),
        "req.ver" | "req_ver" => d(NONE, 0, Str, Request),
        "url_param" | "urlp" => d(SS, 0, Str, Request),
        "hdr" => d(SI, 0, Str, Message),
        "req.hdr" => d(SI, 0, Str, Request),
        "hdr_cnt" | "req.hdr_cnt" => d(S, 0, Int, Request),
        "hdr_ip" | "req.hdr_ip" => d(SI, 0, Ip, Request),
        "cook" | "req.cook" => d(S, 0, Str, Request),
        "fe_conn" => d(NONE, 0, Int, Always),
        "so_name" => d(NONE, 0, Str, Always),
        "last_rule_file" => d(NONE, 0, Str, Always),
        "last_rule_line" => d(NONE, 0, Int, Always),
        "nbsrv" | "be_conn" | "be_sess_rate" | "connslots" | "queue" | "avg_queue" => {
            d(S, 0, Int, Always)
        }
        "srv_conn" => d(S, 1, Int, Always),
        "srv_is_up" => d(S, 1, Bool, Always),
        "always_true" | "always_false" => d(NONE, 0, Bool, Always),
        "status" => d(NONE, 0, Int, Response),
        "res.hdr" | "shdr" => d(SI, 0, Str, Response),
        "req.fhdr" => d(SI, 0, Str, Request),
        "req.fhdr_cnt" => d(S, 0, Int, Request),
        "res.fhdr" => d(SI, 0, Str, Response),
        "req.body" | "req.hdrs" => d(NONE, 0, Bin, Request),
        "req.body_len" | "req.body_size" => d(NONE, 0, Int, Request),
        "res.body" => d(NONE, 0, Bin, Response),
        "res.body_len" | "res.body_size" => d(NONE, 0, Int, Response),
        "req.body_param" => d(S, 0, Bin, Request),
        "base" => d(NONE, 0, Str, Request),
        "ssl_fc" | "ssl_fc_is_resumed" | "ssl_fc_has_sni" | "ssl_fc_has_crt" | "ssl_c_used" => {
            d(NONE, 0, Bool, Session)
        }
        "ssl_bc" | "ssl_bc_is_resumed" => d(NONE, 0, Bool, ServerConn),
        "fc_err" => d(NONE, 0, Int, Always),
        "fc_err_str" => d(NONE, 0, Str, Always),
        "bc_src" | "bc_dst" => d(NONE, 0, Ip, ServerAddr),
        "bc_src_port" | "bc_dst_port" | "bc_http_major" | "bc_err" => d(NONE, 0, Int, ServerAddr),
        "bc_err_str" => d(NONE, 0, Str, ServerAddr),
        "ssl_bc_err" => d(NONE, 0, Int, ServerConn),
        "ssl_bc_err_str" => d(NONE, 0, Str, ServerConn),
        "ssl_fc_err_str" => d(NONE, 0, Str, Session),
        "ssl_fc_has_early" => d(NONE, 0, Bool, Session),
        // (HAProxy declares the `_bin` ones strings and the `_hex` one binary.)
        "ssl_fc_cipherlist_bin"
        | "ssl_fc_extlist_bin"
        | "ssl_fc_eclist_bin"
        | "ssl_fc_cipherlist_str" => d(I, 0, Str, Session),
        "ssl_fc_cipherlist_hex" => d(I, 0, Bin, Session),
        "ssl_fc_ecformats_bin" => d(NONE, 0, Str, Session),
        "ssl_fc_cipherlist_xxh" | "ssl_fc_protocol_hello_id" => d(NONE, 0, Int, Session),
        "ssl_fc_client_random" | "ssl_fc_server_random" | "ssl_fc_session_key" => {
            d(NONE, 0, Bin, Session)
        }
        "ssl_fc_client_early_traffic_secret"
        | "ssl_fc_client_handshake_traffic_secret"
        | "ssl_fc_server_handshake_traffic_secret"
        | "ssl_fc_client_traffic_secret_0"
        | "ssl_fc_server_traffic_secret_0"
        | "ssl_fc_exporter_secret"
        | "ssl_fc_early_exporter_secret" => d(NONE, 0, Str, Session),
        // (HAProxy 2.6 declares these of the client connection: accepted everywhere, they find
        // no server connection before the response.)
        "ssl_s_s_dn" | "ssl_s_i_dn" => d(SIS, 0, Str, Session),
        "ssl_s_notafter" | "ssl_s_notbefore" | "ssl_s_sig_alg" | "ssl_s_key_alg" => {
            d(NONE, 0, Str, Session)
        }
        "ssl_s_version" => d(NONE, 0, Int, Session),
        "ssl_s_serial" | "ssl_s_sha1" | "ssl_s_der" => d(NONE, 0, Bin, Session),
        "ssl_fc_err" | "ssl_c_err" | "ssl_c_ca_err" | "ssl_c_verify" | "ssl_c_version"
        | "ssl_fc_use_keysize" | "ssl_fc_alg_keysize" | "ssl_c_ca_err_depth" => {
            d(NONE, 0, Int, Session)
        }
        "ssl_bc_use_keysize" | "ssl_bc_alg_keysize" => d(NONE, 0, Int, ServerConn),
        "ssl_fc_sni" | "ssl_fc_protocol" | "ssl_fc_cipher" | "ssl_fc_alpn" | "ssl_fc_npn"
        | "ssl_c_notafter" | "ssl_c_notbefore" | "ssl_c_sig_alg" | "ssl_c_key_alg"
        | "ssl_f_notafter" | "ssl_f_notbefore" | "ssl_f_sig_alg" | "ssl_f_key_alg" => {
            d(NONE, 0, Str, Session)
        }
        "ssl_c_s_dn" | "ssl_c_i_dn" | "ssl_f_s_dn" | "ssl_f_i_dn" => d(SIS, 0, Str, Session),
        "ssl_f_version" => d(NONE, 0, Int, Session),
        "ssl_bc_protocol" | "ssl_bc_cipher" | "ssl_bc_alpn" => d(NONE, 0, Str, ServerConn),
        "ssl_fc_session_id" | "ssl_c_serial" | "ssl_c_sha1" | "ssl_c_der" | "ssl_f_serial"
        | "ssl_f_sha1" | "ssl_f_der" => d(NONE, 0, Bin, Session),
        "ssl_bc_session_id" => d(NONE, 0, Bin, ServerConn),
        "req.ssl_sni" | "req_ssl_sni" | "req.ssl_alpn" => d(NONE, 0, Str, Session),
        "fc_pp_authority" | "fc_pp_unique_id" => d(NONE, 0, Str, Session),
        "fc_pp_tlv" => d(S, 1, Str, Session),
        "req.ssl_hello_type" | "req_ssl_hello_type" | "req.ssl_ver" | "req_ssl_ver" | "req.len"
        | "req_len" => d(NONE, 0, Int, Session),
        "req.payload" | "payload" => d(II, 2, Bin, Session),
        "req.payload_lv" | "payload_lv" => d(IIS, 2, Bin, Session),
        "res.len" => d(NONE, 0, Int, Response),
        "res.payload" => d(II, 2, Bin, Response),
        "res.payload_lv" => d(IIS, 2, Bin, Response),
        "wait_end" => d(NONE, 0, Bool, Always),
        "cook_cnt" | "req.cook_cnt" | "cook_val" | "req.cook_val" => d(S, 0, Int, Request),
        "res.cook" | "scook" => d(S, 0, Str, Response),
        "res.ver" | "resp_ver" => d(NONE, 0, Str, Response),
        "res.comp" => d(NONE, 0, Bool, Captured { response: true }),
        "res.comp_algo" => d(NONE, 0, Str, Captured { response: true }),
        // (HAProxy's SMP_USE_HRSHP: in the response rules and still in the log line.)
        "res.cache_hit" => d(NONE, 0, Bool, Captured { response: true }),
        "res.cache_name" => d(NONE, 0, Str, Captured { response: true }),
        "date" => d(IS, 0, Int, Always),
        "rand" => d(I, 0, Int, Always),
        "fe_name" => d(NONE, 0, Str, Always),
        "unique-id" => d(NONE, 0, Str, Always),
        "be_name" => d(NONE, 0, Str, Backend),
        "srv_name" => d(NONE, 0, Str, Server),
        "capture.req.hdr" => d(I, 1, Str, Captured { response: false }),
        "capture.req.uri" | "capture.req.method" | "capture.req.ver" => {
            d(NONE, 0, Str, Captured { response: false })
        }
        "capture.res.hdr" => d(I, 1, Str, Captured { response: true }),
        "var" => d(SS, 1, Any, Always),
        "str" => d(S, 1, Str, Always),
        "bin" => d(S, 1, Bin, Always),
        "pathq" => d(NONE, 0, Str, Request),
        "srv_id" => d(NONE, 0, Int, Server),
        "http_first_req" => d(NONE, 0, Bool, Always),
        "uuid" => d(I, 0, Str, Always),
        "int" => d(I, 1, Int, Always),
        "bool" => d(S, 1, Bool, Always),
        "ipv4" | "ipv6" => d(S, 1, Ip, Always),
        "http_auth" => d(S, 1, Bool, Request),
        "http_auth_group" => d(S, 1, Str, Request),
        "http_auth_user" | "http_auth_pass" | "http_auth_type" => d(NONE, 0, Str, Request),
        "baseq" => d(NONE, 0, Str, Request),
        "base32" | "url32" | "url_port" => d(NONE, 0, Int, Request),
        "base32+src" | "url32+src" | "req.hdrs_bin" => d(NONE, 0, Bin, Request),
        "url_ip" => d(NONE, 0, Ip, Request),
        "hdr_val" | "req.hdr_val" => d(SI, 0, Int, Request),
        "res.hdr_val" | "shdr_val" => d(SI, 0, Int, Response),
        "urlp_val" => d(SS, 0, Int, Request),
        "req.hdr_names" | "http_auth_bearer" => d(S, 0, Str, Request),
        "res.hdr_names" => d(S, 0, Str, Response),
        "res.hdr_cnt" | "shdr_cnt" | "res.fhdr_cnt" => d(S, 0, Int, Response),
        "res.cook_cnt" | "scook_cnt" | "res.cook_val" | "scook_val" => d(S, 0, Int, Response),
        "res.hdr_ip" | "shdr_ip" => d(SI, 0, Ip, Response),
        "res.hdrs" | "res.hdrs_bin" => d(NONE, 0, Bin, Response),
        "capture.res.ver" => d(NONE, 0, Str, Captured { response: true }),
        "req.proto_http" | "req_proto_http" => d(NONE, 0, Bool, Request),
        "rdp_cookie" | "req.rdp_cookie" | "req_rdp_cookie" => d(S, 0, Str, Session),
        "rdp_cookie_cnt" | "req.rdp_cookie_cnt" | "req_rdp_cookie_cnt" => d(S, 0, Int, Session),
        "meth" => d(S, 1, Meth, Always),
        "env" => d(S, 1, Str, Always),
        "hostname" => d(NONE, 0, Str, Always),
        "thread" | "proc" | "date_us" => d(NONE, 0, Int, Always),
        "stopping" => d(NONE, 0, Bool, Always),
        "fe_id" | "fe_client_timeout" | "so_id" | "dst_conn" => d(NONE, 0, Int, Always),
        "fe_req_rate" | "fe_sess_rate" => d(S, 0, Int, Always),
        "fe_defbe" => d(NONE, 0, Str, Always),
        "be_id" | "be_server_timeout" | "be_tunnel_timeout" | "cur_server_timeout"
        | "cur_tunnel_timeout" => d(NONE, 0, Int, Backend),
        "be_conn_free" => d(S, 0, Int, Always),
        "srv_queue" | "srv_sess_rate" | "srv_weight" | "srv_iweight" | "srv_uweight"
        | "srv_conn_free" => d(S, 1, Int, Always),
        "src_is_local" | "dst_is_local" | "fc_src_is_local" | "fc_dst_is_local" => {
            d(NONE, 0, Bool, Always)
        }
        "fc_http_major" => d(NONE, 0, Int, Session),
        "fc_rcvd_proxy" => d(NONE, 0, Bool, Session),
        "fc_rtt" | "fc_rttvar" | "fc_unacked" | "fc_sacked" | "fc_lost" | "fc_retrans"
        | "fc_fackets" | "fc_reordering" => d(S, 0, Int, Always),
        "prio_class" | "prio_offset" => d(NONE, 0, Int, Session),
        _ => stick::def(name).and_then(|(args, mandatory, out)| d(args, mandatory, out, Always)),
    }
}

/// Parses `scope.name` of `var()`, `set-var()` and `unset-var()`.
pub fn parse_var_name(text: &str) -> Result<(VarScope, String), String> {
    if text.is_empty() {
        return Err("Empty variable name cannot be accepted".into());
    }
    let bad = || {
        format!("invalid variable name '{text}'. A variable name must be start by its scope. The scope can be 'proc', 'sess', 'txn', 'req', 'res' or 'check'")
    };
    let (scope, name) = text.split_once('.').ok_or_else(bad)?;
    let scope = match scope {
        "proc" => VarScope::Proc,
        "sess" => VarScope::Sess,
        "txn" => VarScope::Txn,
        "req" => VarScope::Req,
        "res" => VarScope::Res,
        "check" => VarScope::Check,
        _ => return Err(bad()),
    };
    if name.is_empty() {
        return Err(bad());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '.' || *c == '_')) {
        return Err(format!("invalid character '{c}' in variable name '{text}'"));
    }
    Ok((scope, name.to_string()))
}

fn opt_str(args: &[Arg], i: usize) -> Option<String> {
    args.get(i).map(Arg::str).filter(|s| !s.is_empty())
}

fn header_name(args: &[Arg]) -> String {
    args.first().map(Arg::str).unwrap_or_default().to_ascii_lowercase()
}

/// HAProxy keeps the positions of the last 10 header values (`MAX_HDR_HISTORY`).
const MAX_HDR_HISTORY: i64 = 10;

/// The `<occ>` of header fetches: HAProxy refuses occurrences below -10.
fn occurrence(name: &str, args: &[Arg]) -> Result<Option<i32>, SmpError> {
    match args.get(1).map(Arg::int) {
        Some(n) if n < -MAX_HDR_HISTORY => Err(SmpError::ArgCheck(
            name.to_string(),
            format!("header occurrence must be >= -{MAX_HDR_HISTORY}"),
        )),
        occ => Ok(occ.map(|n| n.clamp(i32::MIN as i64, i32::MAX as i64) as i32)),
    }
}

fn first_str(args: &[Arg]) -> String {
    args.first().map(Arg::str).unwrap_or_default()
}

/// Builds the model's fetch from a checked argument list.
fn build_fetch(name: &str, args: &[Arg]) -> Result<Fetch, SmpError> {
    let fetch = match name {
        "src" => Fetch::Src,
        "fc_src" => Fetch::Fc(crate::model::AddrPart::Src),
        "fc_src_port" => Fetch::Fc(crate::model::AddrPart::SrcPort),
        "fc_dst" => Fetch::Fc(crate::model::AddrPart::Dst),
        "fc_dst_port" => Fetch::Fc(crate::model::AddrPart::DstPort),
        "src_port" => Fetch::SrcPort,
        "dst" => Fetch::Dst,
        "dst_port" => Fetch::DstPort,
        "path" => Fetch::Path,
        "url" => Fetch::Url,
        "query" => Fetch::Query,
        "method" => Fetch::Method,
        "req.ver" | "req_ver" => Fetch::ReqVer,
        "url_param" | "urlp" => {
            if args.len() > 1 {
                let msg = format!("the delimiter argument of '{name}' is not supported yet");
                return Err(SmpError::Other(msg));
            }
            Fetch::UrlParam { name: args.first().map(Arg::str).unwrap_or_default() }
        }
        "hdr" | "req.hdr" => Fetch::Hdr { name: header_name(args), occ: occurrence(name, args)? },
        "hdr_cnt" | "req.hdr_cnt" => Fetch::HdrCnt { name: header_name(args) },
        "hdr_ip" | "req.hdr_ip" => {
            Fetch::HdrIp { name: header_name(args), occ: occurrence(name, args)? }
        }
        "cook" | "req.cook" => Fetch::Cook { name: first_str(args) },
        "nbsrv" => Fetch::NbSrv { backend: opt_str(args, 0) },
        "be_conn" => Fetch::BeConn { backend: opt_str(args, 0) },
        "fe_conn" => Fetch::FeConn,
        "so_name" => Fetch::SoName,
        "last_rule_file" => Fetch::LastRule { line: false },
        "last_rule_line" => Fetch::LastRule { line: true },
        "be_sess_rate" => Fetch::BeSessRate { backend: opt_str(args, 0) },
        "connslots" => Fetch::ConnSlots { backend: opt_str(args, 0) },
        "queue" => Fetch::Queue { backend: opt_str(args, 0) },
        "avg_queue" => Fetch::AvgQueue { backend: opt_str(args, 0) },
        "srv_is_up" | "srv_conn" => {
            let arg = first_str(args);
            let (backend, server) = match arg.split_once('/') {
                Some((b, s)) => (Some(b.to_string()), s.to_string()),
                None => (None, arg),
            };
            if name == "srv_is_up" {
                Fetch::SrvIsUp { backend, server }
            } else {
                Fetch::SrvConn { backend, server }
            }
        }
        "always_true" => Fetch::AlwaysTrue,
        "always_false" => Fetch::AlwaysFalse,
        "status" => Fetch::Status,
        "res.hdr" | "shdr" => {
            Fetch::ResHdr { name: header_name(args), occ: occurrence(name, args)? }
        }
        "req.fhdr" => Fetch::Fhdr { name: header_name(args), occ: occurrence(name, args)? },
        "req.fhdr_cnt" => Fetch::FhdrCnt { name: header_name(args) },
        "res.fhdr" => Fetch::ResFhdr { name: header_name(args), occ: occurrence(name, args)? },
        "req.body" => Fetch::ReqBody,
        "req.body_len" => Fetch::ReqBodyLen,
        "req.body_size" => Fetch::ReqBodySize,
        "res.body" => Fetch::ResBody,
        "res.body_len" => Fetch::ResBodyLen,
        "res.body_size" => Fetch::ResBodySize,
        "req.body_param" => Fetch::ReqBodyParam { name: first_str(args) },
        "req.hdrs" => Fetch::ReqHdrs,
        "base" => Fetch::Base,
        "fc_err" => Fetch::FcErr,
        "fc_pp_authority" => Fetch::Pp(PpFetch::Authority),
        "fc_pp_unique_id" => Fetch::Pp(PpFetch::UniqueId),
        "fc_pp_tlv" => {
            let t = first_str(args);
            let n = match t.to_ascii_uppercase().as_str() {
                "ALPN" => 0x01,
                "AUTHORITY" => 0x02,
                "CRC32C" => 0x03,
                "NOOP" => 0x04,
                "UNIQUE_ID" => 0x05,
                "SSL" => 0x20,
                "SSL_VERSION" => 0x21,
                "SSL_CN" => 0x22,
                "SSL_CIPHER" => 0x23,
                "SSL_SIG_ALG" => 0x24,
                "SSL_KEY_ALG" => 0x25,
                "NETNS" => 0x30,
                _ => match t
                    .strip_prefix("0x")
                    .map(|h| u8::from_str_radix(h, 16))
                    .unwrap_or_else(|| t.parse())
                {
                    Ok(n) => n,
                    Err(_) => {
                        let msg = format!("'{t}' is not a TLV type (a number 0..255 or a name)");
                        return Err(SmpError::ArgCheck(name.to_string(), msg));
                    }
                },
            };
            Fetch::Pp(PpFetch::Tlv(n))
        }
        "req.ssl_sni" | "req_ssl_sni" => Fetch::Payload(PayloadFetch::SslSni),
        "req.ssl_alpn" => Fetch::Payload(PayloadFetch::SslAlpn),
        "req.ssl_hello_type" | "req_ssl_hello_type" => Fetch::Payload(PayloadFetch::SslHelloType),
        "req.ssl_ver" | "req_ssl_ver" => Fetch::Payload(PayloadFetch::SslVer),
        "req.len" | "req_len" | "res.len" => Fetch::Payload(PayloadFetch::Len),
        "req.payload" | "payload" | "res.payload" | "req.payload_lv" | "payload_lv"
        | "res.payload_lv" => payload(name, args)?,
        "wait_end" => Fetch::WaitEnd,
        _ if name.starts_with("ssl_") => tls::build(name, args),
        "bc_src" | "bc_src_port" | "bc_dst" | "bc_dst_port" | "bc_http_major" | "bc_err"
        | "bc_err_str" => tls::backend(name),
        "fc_err_str" => Fetch::FcErrStr,
        "cook_cnt" | "req.cook_cnt" => Fetch::CookCnt { name: first_str(args) },
        "cook_val" | "req.cook_val" => Fetch::CookVal { name: first_str(args) },
        "res.cook" | "scook" => Fetch::ResCook { name: first_str(args) },
        "res.ver" | "resp_ver" => Fetch::ResVer,
        "res.comp" => Fetch::ResComp,
        "res.comp_algo" => Fetch::ResCompAlgo,
        "res.cache_hit" => Fetch::ResCacheHit,
        "res.cache_name" => Fetch::ResCacheName,
        "date" => date(args)?,
        "rand" => match args.first().map(Arg::int) {
            Some(r) if r < 0 => {
                let msg = format!("a negative range ({r}) is not supported");
                return Err(SmpError::ArgCheck(name.to_string(), msg));
            }
            r => Fetch::Rand { range: r.map(|r| r as u64) },
        },
        "fe_name" => Fetch::FeName,
        "unique-id" => Fetch::UniqueId,
        "capture.req.hdr" | "capture.res.hdr" => {
            let slot = args.first().map_or(0, Arg::int);
            if slot < 0 {
                let msg = format!("invalid capture slot {slot}");
                return Err(SmpError::ArgCheck(name.to_string(), msg));
            }
            Fetch::Captured { response: name == "capture.res.hdr", slot: slot as u32 }
        }
        "be_name" => Fetch::BeName,
        "srv_name" => Fetch::SrvName,
        "var" => {
            let text = args.first().map(Arg::str).unwrap_or_default();
            let (scope, name) = parse_var_name(&text).map_err(|m| {
                SmpError::Other(format!("invalid args in fetch method 'var' : {m}"))
            })?;
            Fetch::Var { scope, name, default: args.get(1).map(Arg::str) }
        }
        "str" => Fetch::Str(args.first().map(Arg::str).unwrap_or_default()),
        "bin" => {
            let text = args.first().map(Arg::str).unwrap_or_default();
            let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let bytes: Option<Vec<u8>> = text
                .len()
                .is_multiple_of(2)
                .then(|| {
                    text.as_bytes().chunks(2).map(|p| Some(hex(p[0])? << 4 | hex(p[1])?)).collect()
                })
                .flatten();
            match bytes {
                Some(b) => Fetch::Bin(b),
                None => {
                    return Err(SmpError::ArgCheck(
                        name.to_string(),
                        format!("failed to parse '{text}' as type 'binary'"),
                    ))
                }
            }
        }
        "pathq" => Fetch::PathQ,
        "srv_id" => Fetch::SrvId,
        "http_first_req" => Fetch::HttpFirstReq,
        "uuid" => match args.first().map(Arg::int) {
            None | Some(4) => Fetch::Uuid,
            Some(_) => {
                return Err(SmpError::ArgCheck(
                    name.to_string(),
                    "Unsupported UUID version".to_string(),
                ))
            }
        },
        "int" => Fetch::Int(args.first().map(Arg::int).unwrap_or_default()),
        "bool" => match args.first().map(Arg::str).as_deref() {
            Some("true" | "1") => Fetch::Bool(true),
            Some("false" | "0") => Fetch::Bool(false),
            _ => {
                let msg = "Expects 'true', 'false', '0' or '1'".to_string();
                return Err(SmpError::ArgCheck(name.to_string(), msg));
            }
        },
        "capture.req.uri" => Fetch::ReqLine(crate::model::ReqLinePart::Uri),
        "capture.req.method" => Fetch::ReqLine(crate::model::ReqLinePart::Method),
        "capture.req.ver" => Fetch::ReqLine(crate::model::ReqLinePart::Version),
        "http_auth" => Fetch::HttpAuth { userlist: first_str(args) },
        "http_auth_group" => Fetch::HttpAuthGroup { userlist: first_str(args) },
        "http_auth_user" => Fetch::AuthPart(crate::model::AuthPart::User),
        "http_auth_pass" => Fetch::AuthPart(crate::model::AuthPart::Pass),
        "http_auth_type" => Fetch::AuthPart(crate::model::AuthPart::Type),
        "ipv4" | "ipv6" => {
            let text = first_str(args);
            let ip: Option<std::net::IpAddr> = match name {
                "ipv4" => text.parse::<std::net::Ipv4Addr>().ok().map(Into::into),
                _ => text.parse::<std::net::Ipv6Addr>().ok().map(Into::into),
            };
            match ip {
                Some(ip) => Fetch::IpConst(ip),
                None => {
                    let msg = format!("failed to parse '{text}' as type '{name}' at position 1");
                    return Err(SmpError::FetchArg(name.to_string(), msg));
                }
            }
        }
        "baseq" => Fetch::BaseQ,
        "base32" | "base32+src" | "url32" | "url32+src" => {
            Fetch::HostPathHash { url: name.starts_with("url"), src: name.ends_with("+src") }
        }
        "url_ip" | "url_port" => Fetch::UrlAddr { port: name == "url_port" },
        "hdr_val" | "req.hdr_val" => Fetch::IntOf(Box::new(build_fetch("req.hdr", args)?)),
        "res.hdr_val" | "shdr_val" => Fetch::IntOf(Box::new(build_fetch("res.hdr", args)?)),
        "urlp_val" => Fetch::IntOf(Box::new(build_fetch("urlp", args)?)),
        "res.cook_val" | "scook_val" => Fetch::IntOf(Box::new(build_fetch("res.cook", args)?)),
        "req.hdr_names" | "res.hdr_names" => Fetch::HdrNames {
            response: name.starts_with("res"),
            // (HAProxy takes the first byte of the argument: NUL when it is empty.)
            delim: args.first().map_or(b',', |a| a.str().bytes().next().unwrap_or(0)),
        },
        "res.hdr_cnt" | "shdr_cnt" => Fetch::ResHdrCnt { name: header_name(args) },
        "res.hdr_ip" | "shdr_ip" => {
            Fetch::ResHdrIp { name: header_name(args), occ: occurrence(name, args)? }
        }
        "res.fhdr_cnt" => Fetch::ResFhdrCnt { name: header_name(args) },
        "res.hdrs" => Fetch::ResHdrs,
        "req.hdrs_bin" | "res.hdrs_bin" => Fetch::HdrsBin { response: name.starts_with("res") },
        "res.cook_cnt" | "scook_cnt" => Fetch::ResCookCnt { name: first_str(args) },
        "capture.res.ver" => Fetch::ResLineVersion,
        "req.proto_http" | "req_proto_http" => Fetch::ProtoHttp,
        "rdp_cookie" | "req.rdp_cookie" | "req_rdp_cookie" => {
            Fetch::Payload(PayloadFetch::RdpCookie { name: first_str(args) })
        }
        "rdp_cookie_cnt" | "req.rdp_cookie_cnt" | "req_rdp_cookie_cnt" => {
            Fetch::Payload(PayloadFetch::RdpCookieCnt { name: first_str(args) })
        }
        "http_auth_bearer" => Fetch::AuthBearer { header: opt_str(args, 0) },
        "meth" => Fetch::Meth(first_str(args)),
        "env" => Fetch::Env(first_str(args)),
        "hostname" => Fetch::Hostname,
        "thread" => Fetch::Thread,
        "stopping" => Fetch::Stopping,
        // (HAProxy 2.6: historically the process number, always 1 now.)
        "proc" => Fetch::Int(1),
        // (Fulcrum has no `set-priority-class|offset` action yet: both stay 0.)
        "prio_class" | "prio_offset" => Fetch::Int(0),
        "date_us" => Fetch::DateUs,
        "fe_id" => Fetch::Fe(crate::model::FeFact::Id),
        "fe_client_timeout" => Fetch::Fe(crate::model::FeFact::ClientTimeout),
        "so_id" => Fetch::Fe(crate::model::FeFact::SoId),
        "dst_conn" => Fetch::Fe(crate::model::FeFact::DstConn),
        "fe_defbe" => Fetch::Fe(crate::model::FeFact::DefBe),
        "fe_req_rate" | "fe_sess_rate" => {
            if let Some(other) = opt_str(args, 0) {
                let msg = format!("another frontend ('{other}') in '{name}' is not supported yet");
                return Err(SmpError::Other(msg));
            }
            Fetch::Fe(if name == "fe_req_rate" {
                crate::model::FeFact::ReqRate
            } else {
                crate::model::FeFact::SessRate
            })
        }
        "be_id" | "be_server_timeout" | "be_tunnel_timeout" | "cur_server_timeout"
        | "cur_tunnel_timeout" | "be_conn_free" => {
            use crate::model::BeFact;
            let what = match name {
                "be_id" => BeFact::Id,
                "be_conn_free" => BeFact::ConnFree,
                "be_server_timeout" => BeFact::ServerTimeout,
                "be_tunnel_timeout" => BeFact::TunnelTimeout,
                "cur_server_timeout" => BeFact::CurServerTimeout,
                _ => BeFact::CurTunnelTimeout,
            };
            Fetch::Be { backend: opt_str(args, 0), what }
        }
        "srv_queue" | "srv_sess_rate" | "srv_weight" | "srv_iweight" | "srv_uweight"
        | "srv_conn_free" => {
            use crate::model::SrvFact;
            let arg = first_str(args);
            let (backend, server) = match arg.split_once('/') {
                Some((b, s)) => (Some(b.to_string()), s.to_string()),
                None => (None, arg),
            };
            let what = match name {
                "srv_queue" => SrvFact::Queue,
                "srv_sess_rate" => SrvFact::SessRate,
                "srv_weight" => SrvFact::Weight,
                "srv_iweight" => SrvFact::IWeight,
                "srv_uweight" => SrvFact::UWeight,
                _ => SrvFact::ConnFree,
            };
            Fetch::Srv { backend, server, what }
        }
        "src_is_local" | "dst_is_local" | "fc_src_is_local" | "fc_dst_is_local" => {
            Fetch::IsLocal { dst: name.contains("dst"), fc: name.starts_with("fc_") }
        }
        "fc_http_major" => Fetch::FcHttpMajor,
        "fc_rcvd_proxy" => Fetch::FcRcvdProxy,
        "fc_rtt" | "fc_rttvar" | "fc_unacked" | "fc_sacked" | "fc_lost" | "fc_retrans"
        | "fc_fackets" | "fc_reordering" => tcp_info(name, args)?,
        _ if stick::def(name).is_some() => stick::build(name, args)?,
        _ => return Err(SmpError::UnknownFetch(name.to_string())),
    };
    Ok(fetch)
}

/// `date([<offset>[,<unit>]])`: the unit must be `s`, `ms` or `us`.
fn date(args: &[Arg]) -> Result<Fetch, SmpError> {
    let offset = args.first().map(Arg::int).unwrap_or(0);
    match args.get(1).map(Arg::str).as_deref() {
        None | Some("s") => {}
        Some(u @ ("ms" | "us")) => return Ok(Fetch::DateIn { offset, micro: u == "us" }),
        Some(u) => {
            let msg = format!("expects 's', 'ms' or 'us', got '{u}'");
            return Err(SmpError::ArgCheck("date".into(), msg));
        }
    }
    Ok(Fetch::Date { offset })
}

/// The `TCP_INFO` fetches: the times take a unit (`ms` by default, or `us`); HAProxy warns of
/// an argument given to a counter and ignores it, as here (without the warning).
fn tcp_info(name: &str, args: &[Arg]) -> Result<Fetch, SmpError> {
    use crate::model::TcpInfoField as T;
    let what = match name {
        "fc_rtt" => T::Rtt,
        "fc_rttvar" => T::RttVar,
        "fc_unacked" => T::Unacked,
        "fc_sacked" => T::Sacked,
        "fc_lost" => T::Lost,
        "fc_retrans" => T::Retrans,
        "fc_fackets" => T::Fackets,
        _ => T::Reordering,
    };
    let us = match (what, args.first().map(Arg::str).as_deref()) {
        (T::Rtt | T::RttVar, None | Some("ms")) => false,
        (T::Rtt | T::RttVar, Some("us")) => true,
        (T::Rtt | T::RttVar, Some(u)) => {
            let msg = format!("expects 'us' or 'ms', got '{u}'");
            return Err(SmpError::ArgCheck(name.into(), msg));
        }
        _ => false,
    };
    Ok(Fetch::TcpInfo { what, us })
}

fn is_known_fetch(name: &str) -> bool {
    sample_names::FETCHES.contains(&name) || sample_names::ACL_KEYWORDS.contains(&name)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+')
}

/// Where an expression stops: end of input, or a `]` in log-format strings.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The whole input is the expression.
    Input,
    /// Stops before a `]` (log-format `%[...]`).
    Bracket,
}

/// Parses the expression at the start of `s`, whose fetch is `fetch_name` (already resolved from
/// an ACL keyword when the caller did). Returns the parsed expression and the byte offset where it
/// ends (at `]` or the end of `s`).
pub fn parse(s: &str, end: End) -> Result<(Parsed, usize), SmpError> {
    let name_len = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    let name = &s[..name_len];
    parse_with_fetch(s, end, name, name_len)
}

/// Like [`parse`], with the fetch keyword `kw` taking the first `kw_len` bytes of `s` and being
/// evaluated as the fetch `fetch_name` (ACL keywords like `path_beg` name the fetch `path`).
pub fn parse_as(
    s: &str,
    end: End,
    kw_len: usize,
    fetch_name: &str,
) -> Result<(Parsed, usize), SmpError> {
    parse_with_fetch(s, end, fetch_name, kw_len)
}

fn parse_with_fetch(
    s: &str,
    end: End,
    fetch_name: &str,
    name_len: usize,
) -> Result<(Parsed, usize), SmpError> {
    let kw = s[..name_len].to_string();
    if kw.is_empty() {
        return Err(SmpError::MissingFetch);
    }
    let Some(def) = fetch_def(fetch_name) else {
        if is_known_fetch(&kw) {
            return Err(SmpError::Other(format!("fetch method '{kw}' is not supported yet")));
        }
        return Err(SmpError::UnknownFetch(kw));
    };
    let mut pos = name_len;
    let raw = if s[pos..].starts_with('(') {
        let r = split_args(s, pos).map_err(|m| SmpError::FetchArg(kw.clone(), m))?;
        pos = r.end;
        Some(r)
    } else {
        None
    };
    let args = check_args(s, raw.as_ref(), def.args, def.mandatory)
        .map_err(|(_, m)| SmpError::FetchArg(kw.clone(), m))?;
    let fetch = build_fetch(fetch_name, &args)?;
    let mut out = def.out;
    let mut converters = Vec::new();
    let mut last_conv: Option<String> = None;
    loop {
        let rest = &s[pos..];
        if rest.is_empty() || (end == End::Bracket && rest.starts_with(']')) {
            break;
        }
        if !rest.starts_with(',') {
            if end == End::Bracket {
                // The log-format parser reports what follows the expression.
                break;
            }
            let msg = match &last_conv {
                Some(c) => format!("missing comma after converter '{c}'"),
                None => format!("missing comma after fetch keyword '{kw}'"),
            };
            return Err(SmpError::Other(msg));
        }
        pos += 1;
        let conv_len = s[pos..].find(|c: char| !is_name_char(c)).unwrap_or(s.len() - pos);
        let conv_name = s[pos..pos + conv_len].to_string();
        if conv_name.is_empty() {
            return Err(SmpError::Conv("missing converter name after ','".into()));
        }
        pos += conv_len;
        let raw = if s[pos..].starts_with('(') {
            let r = split_args(s, pos).map_err(|m| {
                SmpError::Conv(format!("invalid arg 1 in converter '{conv_name}' : {m}"))
            })?;
            pos = r.end;
            Some(r)
        } else {
            None
        };
        let (conv, input, conv_out) = build_converter(s, &conv_name, raw.as_ref())?;
        if !castable(out, input) {
            return Err(SmpError::Conv(format!("converter '{conv_name}' cannot be applied")));
        }
        converters.push(conv);
        out = conv_out;
        last_conv = Some(conv_name);
    }
    let expr = SampleExpr { fetch, converters, text: s[..pos].to_string() };
    Ok((Parsed { expr, out, avail: def.avail, kw }, pos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TlsFetch;

    fn ok(s: &str) -> Parsed {
        parse(s, End::Input).unwrap_or_else(|e| panic!("{s}: {e:?}")).0
    }

    fn err(s: &str) -> String {
        parse(s, End::Input).expect_err(s).plain()
    }

    #[test]
    fn a_bare_fetch_has_no_converters_and_keeps_its_text() {
        let p = ok("src");
        assert_eq!(p.expr.fetch, Fetch::Src);
        assert!(p.expr.converters.is_empty());
        assert_eq!((p.expr.text.as_str(), p.out, p.avail), ("src", SmpType::Ip, Avail::Always));
    }

    #[test]
    fn header_fetches_lower_case_the_name_and_take_an_occurrence() {
        assert_eq!(
            ok("req.hdr(Host,-1)").expr.fetch,
            Fetch::Hdr { name: "host".into(), occ: Some(-1) }
        );
        assert_eq!(ok("hdr").expr.fetch, Fetch::Hdr { name: String::new(), occ: None });
        assert_eq!(ok("hdr_cnt(X-A)").expr.fetch, Fetch::HdrCnt { name: "x-a".into() });
        assert_eq!(
            ok("shdr(Location)").expr.fetch,
            Fetch::ResHdr { name: "location".into(), occ: None }
        );
        assert_eq!(ok("hdr_ip(X-Forwarded-For,1)").out, SmpType::Ip);
    }

    #[test]
    fn full_line_header_fetches_keep_the_shape_of_hdr() {
        assert_eq!(
            ok("req.fhdr(User-Agent,-1)").expr.fetch,
            Fetch::Fhdr { name: "user-agent".into(), occ: Some(-1) }
        );
        assert_eq!(ok("req.fhdr").expr.fetch, Fetch::Fhdr { name: String::new(), occ: None });
        assert_eq!(ok("req.fhdr_cnt(Via)").expr.fetch, Fetch::FhdrCnt { name: "via".into() });
        let p = ok("res.fhdr(Server)");
        assert_eq!(p.expr.fetch, Fetch::ResFhdr { name: "server".into(), occ: None });
        assert_eq!((p.out, p.avail), (SmpType::Str, Avail::Response));
        assert_eq!(ok("req.fhdr(a)").avail, Avail::Request);
        assert_eq!(err("fhdr(host)"), "unknown fetch method 'fhdr'");
    }

    #[test]
    fn value_fetches_wrap_their_string_fetch_and_hashes_say_their_parts() {
        let p = ok("hdr_val(X-N,2)");
        let inner = Fetch::Hdr { name: "x-n".into(), occ: Some(2) };
        assert_eq!(p.expr.fetch, Fetch::IntOf(Box::new(inner)));
        assert_eq!((p.out, p.avail), (SmpType::Int, Avail::Request));
        let p = ok("shdr_val(x-n)");
        assert_eq!((p.out, p.avail), (SmpType::Int, Avail::Response));
        let inner = Fetch::UrlParam { name: "n".into() };
        assert_eq!(ok("urlp_val(n)").expr.fetch, Fetch::IntOf(Box::new(inner)));
        let p = ok("base32+src");
        assert_eq!(p.expr.fetch, Fetch::HostPathHash { url: false, src: true });
        assert_eq!(p.out, SmpType::Bin);
        assert_eq!(ok("url32").expr.fetch, Fetch::HostPathHash { url: true, src: false });
        assert_eq!(ok("url_port").expr.fetch, Fetch::UrlAddr { port: true });
        let names = |t: &str| ok(t).expr.fetch;
        assert_eq!(names("req.hdr_names"), Fetch::HdrNames { response: false, delim: b',' });
        assert_eq!(names("res.hdr_names(;x)"), Fetch::HdrNames { response: true, delim: b';' });
        assert_eq!(names("req.hdr_names()"), Fetch::HdrNames { response: false, delim: b',' });
        let p = ok("meth(GET)");
        assert_eq!((p.expr.fetch, p.out), (Fetch::Meth("GET".into()), SmpType::Meth));
        // (As `str`, HAProxy 2.6 takes `meth` without its argument: an empty method.)
        assert_eq!(ok("meth").expr.fetch, Fetch::Meth(String::new()));
        assert_eq!(ok("http_auth_bearer").expr.fetch, Fetch::AuthBearer { header: None });
        assert_eq!(ok("req_proto_http").out, SmpType::Bool);
    }

    #[test]
    fn process_proxy_and_server_facts_name_what_they_read() {
        use crate::model::{BeFact, FeFact, SrvFact};
        let p = ok("srv_weight(be/s1)");
        let want =
            Fetch::Srv { backend: Some("be".into()), server: "s1".into(), what: SrvFact::Weight };
        assert_eq!((p.expr.fetch, p.avail), (want, Avail::Always));
        let p = ok("srv_queue(s1)");
        assert!(matches!(p.expr.fetch, Fetch::Srv { backend: None, what: SrvFact::Queue, .. }));
        let p = ok("cur_server_timeout");
        let want = Fetch::Be { backend: None, what: BeFact::CurServerTimeout };
        assert_eq!((p.expr.fetch, p.avail), (want, Avail::Backend));
        assert_eq!(ok("be_conn_free(b)").avail, Avail::Always);
        assert_eq!(ok("fe_req_rate").expr.fetch, Fetch::Fe(FeFact::ReqRate));
        assert_eq!(
            err("fe_sess_rate(other)"),
            "another frontend ('other') in 'fe_sess_rate' is not supported yet"
        );
        assert_eq!(ok("date(-5,us)").expr.fetch, Fetch::DateIn { offset: -5, micro: true });
        assert_eq!(ok("proc").expr.fetch, Fetch::Int(1));
        let p = ok("fc_dst_is_local");
        assert_eq!(p.expr.fetch, Fetch::IsLocal { dst: true, fc: true });
        assert_eq!(ok("fc_rcvd_proxy").avail, Avail::Session);
        // (As `str`, HAProxy 2.6 takes `env` without its argument.)
        assert_eq!(ok("env").expr.fetch, Fetch::Env(String::new()));
    }

    #[test]
    fn header_occurrences_below_minus_ten_are_refused_as_haproxy() {
        ok("req.hdr(x,-10)");
        assert_eq!(
            err("req.fhdr(x,-11)"),
            "invalid args in fetch method 'req.fhdr' : header occurrence must be >= -10"
        );
        let e = parse("hdr(x,-11)", End::Input).expect_err("bad");
        assert_eq!(
            e.in_acl("hdr(x,-11)", Some("hdr")),
            "in argument to 'hdr', header occurrence must be >= -10."
        );
        assert_eq!(
            e.in_acl("hdr(x,-11)", None),
            "invalid args in fetch method 'hdr' : header occurrence must be >= -10 in ACL expression 'hdr(x,-11)'."
        );
    }

    #[test]
    fn body_and_header_block_fetches_are_binary_request_samples() {
        for (text, fetch) in [
            ("req.body", Fetch::ReqBody),
            ("req.hdrs", Fetch::ReqHdrs),
            ("req.body_param(user)", Fetch::ReqBodyParam { name: "user".into() }),
            ("req.body_param", Fetch::ReqBodyParam { name: String::new() }),
        ] {
            let p = ok(text);
            assert_eq!((p.expr.fetch, p.out, p.avail), (fetch, SmpType::Bin, Avail::Request));
        }
        assert_eq!(ok("req.body_len").out, SmpType::Int);
        assert_eq!(ok("req.body_size").expr.fetch, Fetch::ReqBodySize);
        assert_eq!(ok("req.body,lower").out, SmpType::Str);
        assert_eq!(err("req.body,map_int(/m)"), "converter 'map_int' cannot be applied");
        assert_eq!(
            err("req.body_len(1)"),
            "fetch method 'req.body_len' : expected ')' before '1)'"
        );
    }

    #[test]
    fn cookie_fetches_keep_the_name_as_written() {
        assert_eq!(ok("req.cook_cnt(SID)").expr.fetch, Fetch::CookCnt { name: "SID".into() });
        assert_eq!(ok("cook_cnt").expr.fetch, Fetch::CookCnt { name: String::new() });
        let p = ok("cook_val(Bucket)");
        assert_eq!((p.expr.fetch, p.out), (Fetch::CookVal { name: "Bucket".into() }, SmpType::Int));
        assert_eq!(ok("req.cook_val").expr.fetch, Fetch::CookVal { name: String::new() });
        let p = ok("scook(SID)");
        assert_eq!(
            (p.expr.fetch, p.avail),
            (Fetch::ResCook { name: "SID".into() }, Avail::Response)
        );
        assert_eq!(ok("res.cook").expr.fetch, Fetch::ResCook { name: String::new() });
    }

    #[test]
    fn base_ssl_fc_version_and_name_fetches_have_haproxy_types_and_places() {
        let cases = [
            ("base", Fetch::Base, SmpType::Str, Avail::Request),
            ("ssl_fc", Fetch::Tls(TlsFetch::Used { back: false }), SmpType::Bool, Avail::Session),
            ("res.ver", Fetch::ResVer, SmpType::Str, Avail::Response),
            ("resp_ver", Fetch::ResVer, SmpType::Str, Avail::Response),
            ("res.comp", Fetch::ResComp, SmpType::Bool, Avail::Captured { response: true }),
            ("res.comp_algo", Fetch::ResCompAlgo, SmpType::Str, Avail::Captured { response: true }),
            ("fe_name", Fetch::FeName, SmpType::Str, Avail::Always),
            ("be_name", Fetch::BeName, SmpType::Str, Avail::Backend),
            ("srv_name", Fetch::SrvName, SmpType::Str, Avail::Server),
            ("unique-id", Fetch::UniqueId, SmpType::Str, Avail::Always),
        ];
        for (text, fetch, out, avail) in cases {
            let p = ok(text);
            assert_eq!((p.expr.fetch, p.out, p.avail), (fetch, out, avail), "{text}");
        }
    }

    #[test]
    fn date_takes_an_offset_in_seconds_and_only_the_seconds_unit() {
        assert_eq!(ok("date").expr.fetch, Fetch::Date { offset: 0 });
        assert_eq!(ok("date()").expr.fetch, Fetch::Date { offset: 0 });
        assert_eq!(ok("date(-3600)").expr.fetch, Fetch::Date { offset: -3600 });
        assert_eq!(ok("date(60,s)").expr.fetch, Fetch::Date { offset: 60 });
        assert_eq!(ok("date").out, SmpType::Int);
        assert_eq!(ok("date(1,ms)").expr.fetch, Fetch::DateIn { offset: 1, micro: false });
        assert_eq!(
            err("date(1,xs)"),
            "invalid args in fetch method 'date' : expects 's', 'ms' or 'us', got 'xs'"
        );
        assert_eq!(err("date(,s)"), "fetch method 'date' : expected ')' before ',s)'");
    }

    #[test]
    fn rand_takes_an_optional_non_negative_range() {
        assert_eq!(ok("rand").expr.fetch, Fetch::Rand { range: None });
        assert_eq!(ok("rand()").expr.fetch, Fetch::Rand { range: None });
        assert_eq!(ok("rand(5000000000)").expr.fetch, Fetch::Rand { range: Some(5_000_000_000) });
        assert_eq!(ok("rand(0)").expr.fetch, Fetch::Rand { range: Some(0) });
        assert_eq!(
            err("rand(-1)"),
            "invalid args in fetch method 'rand' : a negative range (-1) is not supported"
        );
        assert_eq!(err("rand(1,)"), "fetch method 'rand' : expected ')' before ',)'");
    }

    #[test]
    fn an_empty_optional_integer_argument_ends_the_list_as_haproxy() {
        assert_eq!(ok("req.hdr(x,)").expr.fetch, Fetch::Hdr { name: "x".into(), occ: None });
        assert_eq!(err("req.hdr(x,,)"), "fetch method 'req.hdr' : expected ')' before ',)'");
        assert_eq!(
            ok("path,field(1,:,)").expr.converters,
            vec![Converter::Field { index: 1, delims: ":".into(), count: None }]
        );
        assert_eq!(
            err("path,field(1,:,,)"),
            "invalid arg 2 in converter 'field' : expected ')' before ',)'"
        );
    }

    #[test]
    fn be_name_needs_a_backend_before_the_response() {
        let be = Avail::Backend;
        assert!(be.usable_in_proxy(Ctx::HttpResponse, false));
        assert!(!be.usable_in_proxy(Ctx::HttpRequest, false));
        assert!(!be.usable_in_proxy(Ctx::TcpContent, false));
        assert!(be.usable_in_proxy(Ctx::HttpRequest, true));
        assert!(be.usable_in_proxy(Ctx::TcpContent, true));
        assert!(!be.usable_in_proxy(Ctx::Switching, true));
        assert!(!be.usable_in_proxy(Ctx::TcpConnection, true));
        assert!(!Avail::Server.usable_in_proxy(Ctx::HttpRequest, true));
        assert!(Avail::Server.usable_in_proxy(Ctx::HttpResponse, false));
        assert!(!Avail::Session.usable_in(Ctx::TcpConnection));
        assert!(Avail::Session.usable_in(Ctx::TcpContent));
    }

    #[test]
    fn converters_chain_and_change_the_output_type() {
        let p = ok("req.hdr(host),lower,field(1,:),map_dom(/etc/hosts.map,default)");
        assert_eq!(
            p.expr.converters,
            vec![
                Converter::Lower,
                Converter::Field { index: 1, delims: ":".into(), count: None },
                Converter::Map {
                    kind: MapMatch::Dom,
                    file: "/etc/hosts.map".into(),
                    default: Some("default".into())
                },
            ]
        );
        assert_eq!(ok("src_port,map_int(/m)").out, SmpType::Str);
        assert_eq!(
            ok("path,regsub(^/api/,/,g)").expr.converters,
            vec![Converter::Regsub {
                regex: "^/api/".into(),
                subst: "/".into(),
                flags: "g".into()
            }]
        );
    }

    #[test]
    fn quotes_and_backslashes_protect_commas_in_arguments() {
        let p = ok(r#"path,regsub("a,b",x\ y,g)"#);
        assert_eq!(
            p.expr.converters,
            vec![Converter::Regsub { regex: "a,b".into(), subst: "x y".into(), flags: "g".into() }]
        );
        // As HAProxy's `make_arg_list`: other backslashes stay, single quotes keep all.
        let p = ok(r#"path,regsub(:\d+$,\t),regsub(x,'\t')"#);
        assert_eq!(
            p.expr.converters,
            vec![
                Converter::Regsub { regex: ":\\d+$".into(), subst: "\t".into(), flags: "".into() },
                Converter::Regsub { regex: "x".into(), subst: "\\t".into(), flags: "".into() }
            ]
        );
    }

    #[test]
    fn constants_and_variables_parse() {
        assert_eq!(ok("int(-5)").expr.fetch, Fetch::Int(-5));
        assert_eq!(ok("str(a b)").expr.fetch, Fetch::Str("a b".into()));
        assert_eq!(ok("str").expr.fetch, Fetch::Str(String::new()));
        assert_eq!(
            ok("var(txn.my.var)").expr.fetch,
            Fetch::Var { scope: VarScope::Txn, name: "my.var".into(), default: None }
        );
        assert_eq!(ok("nbsrv(be)").expr.fetch, Fetch::NbSrv { backend: Some("be".into()) });
        assert_eq!(ok("be_conn").expr.fetch, Fetch::BeConn { backend: None });
    }

    #[test]
    fn argument_errors_use_haproxy_wording() {
        assert_eq!(err("hdr(a,1,2)"), "fetch method 'hdr' : expected ')' before ',2)'");
        assert_eq!(err("path(x)"), "fetch method 'path' : expected ')' before 'x)'");
        assert_eq!(
            err("int(a)"),
            "fetch method 'int' : failed to parse 'a' as type 'integer' at position 1"
        );
        assert_eq!(
            err("int"),
            "fetch method 'int' : expected type 'integer' at position 1, but got nothing"
        );
        assert_eq!(
            err("int(0x10)"),
            "fetch method 'int' : failed to parse '0x10' as type 'integer' at position 1"
        );
        assert_eq!(
            err("path,field(1)"),
            "invalid arg 2 in converter 'field' : missing arguments (got 1/2), type 'string' expected"
        );
        assert_eq!(err("path,field"), "invalid arg 1 in converter 'field' : expected type 'integer' at position 1, but got nothing");
        assert_eq!(
            err("path,field(0,/)"),
            "invalid args in converter 'field' : Unexpected value 0 for index"
        );
        assert_eq!(
            err("path,field(1,)"),
            "invalid args in converter 'field' : Empty separators list"
        );
        assert_eq!(
            err("path,lower(1)"),
            "invalid arg 1 in converter 'lower' : expected ')' before '1)'"
        );
        assert_eq!(
            err("path,regsub(a,b,x)"),
            "invalid args in converter 'regsub' : invalid regex flag 'x', only 'i' and 'g' are supported"
        );
        assert_eq!(
            err("var"),
            "invalid args in fetch method 'var' : Empty variable name cannot be accepted"
        );
        assert!(err("var(x)")
            .starts_with("invalid args in fetch method 'var' : invalid variable name 'x'."));
    }

    #[test]
    fn unknown_and_unsupported_names_are_told_apart() {
        assert_eq!(err("bogus"), "unknown fetch method 'bogus'");
        assert_eq!(err("distcc_body"), "fetch method 'distcc_body' is not supported yet");
        assert_eq!(err("path,bogus"), "unknown converter 'bogus'");
        assert_eq!(err("path,protobuf(1)"), "converter 'protobuf' is not supported yet");
        assert_eq!(err("path,map_beg_int(/m)"), "converter 'map_beg_int' is not supported yet");
        assert_eq!(err(""), "missing fetch method");
    }

    #[test]
    fn converters_refuse_inputs_that_cannot_be_cast() {
        assert_eq!(err("method,map_int(/m)"), "converter 'map_int' cannot be applied");
        assert_eq!(err("always_true,map_ip(/m)"), "converter 'map_ip' cannot be applied");
        ok("src,lower");
        ok("int(3),map_ip(/m)");
    }

    #[test]
    fn a_bracket_ends_the_expression_in_log_format_mode() {
        let (p, end) = parse("path,lower]tail", End::Bracket).expect("parses");
        assert_eq!((p.expr.text.as_str(), end), ("path,lower", 10));
        assert_eq!(parse("path)x]", End::Bracket).expect("stops").1, 4);
        let e = parse("path)x", End::Input).expect_err("bad");
        assert_eq!(e.plain(), "missing comma after fetch keyword 'path'");
    }

    #[test]
    fn acl_wording_depends_on_the_keyword_kind() {
        let e = parse("hdr(a,1,2)", End::Input).expect_err("bad");
        assert_eq!(
            e.in_acl("hdr(a,1,2)", Some("hdr")),
            "ACL keyword 'hdr' : expected ')' before ',2)'."
        );
        let e = parse("nbsrv(a,b)", End::Input).expect_err("bad");
        assert_eq!(
            e.in_acl("nbsrv(a,b)", None),
            "fetch method 'nbsrv' : expected ')' before ',b)' in ACL expression 'nbsrv(a,b)'."
        );
        let e = parse("path,bogus", End::Input).expect_err("bad");
        assert_eq!(
            e.in_acl("path,bogus", Some("path")),
            "ACL keyword 'path' : unknown converter 'bogus'.."
        );
    }
}
