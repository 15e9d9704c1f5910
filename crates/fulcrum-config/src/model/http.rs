//! The HTTP side of the model: ACLs and conditions, log-format strings,
//! `http-request`/`http-response`/`http-after-response` rules, `tcp-request` rules, backend
//! selection rules, error messages and the HTTP proxy settings (cookie persistence, connection
//! mode, forwarding headers, connection reuse).
//!
//! Files these items name (`-f` pattern files, maps, errorfiles, reply files) are kept as paths:
//! the engine reads them, with the item's [`Span`] at hand to report a problem.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{SampleExpr, Span, StickAction, VarScope};

/// How `del-header -m` matches header names (`str`, the default: the whole name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NameMatch {
    #[default]
    Str,
    Beg,
    End,
    Sub,
    Reg,
}

/// How an ACL compares a sample with its patterns (`-m <method>`, or implied by the keyword):
/// the pattern engine's own enum, so the model and the engine cannot drift apart.
pub use fulcrum_pattern::Method as MatchMethod;

// ---- ACLs and conditions ----

/// One ACL criterion: a sample, how to match it and the patterns to match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    pub span: Span,
    /// The criterion's keyword as written, without arguments (`path_beg`, `hdr`, `src`):
    /// how the runtime API's `show acl` names it.
    pub keyword: String,
    pub expr: SampleExpr,
    pub method: MatchMethod,
    /// `-i`: case-insensitive matching.
    pub ignore_case: bool,
    /// Inline patterns, in order, as written and syntax-checked. For `Int` and `Len`, the
    /// words `eq`, `ge`, `gt`, `le`, `lt` are operators applying to the values after them
    /// (default `eq`), and values are `N`, `A:B`, `A:` or `:B`. For `Ip`, `addr`, `addr/len`
    /// or `addr/dotted-mask` (IPv4 or IPv6). For `Reg`, regexes compiled by the engine.
    /// Empty for `Found` and `Bool`.
    pub patterns: Vec<String>,
    /// `-f <file>` pattern files, in order (loaded by the engine).
    pub files: Vec<PathBuf>,
}

/// One `acl <name> ...` line. Several lines with the same name are ORed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedAcl {
    pub name: String,
    pub acl: Acl,
}

/// An `if`/`unless` condition: an OR of AND-groups of terms; `unless` negates the whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub unless: bool,
    pub terms: Vec<Vec<CondTerm>>,
}

/// One term of a condition, `!` negating it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CondTerm {
    pub negate: bool,
    pub acl: AclRef,
    /// The ACL cannot match where it is used (the "will never match" warning): its fetches
    /// fail there at run time as HAProxy's do (a request's `path` in a response rule: the
    /// request has left the buffer), so it never matches (and `!` makes it true).
    pub never: bool,
}

/// A named ACL of the proxy, or an anonymous `{ ... }` one. Predefined ACLs (`TRUE`,
/// `METH_GET`, `HTTP_1.1`...) are expanded into `Anonymous` when the proxy has no ACL of that
/// name (`HTTP`, "the request is valid HTTP", becomes `always_true`: requests that reach the
/// rules are). A `Named` reference means every `acl` line of that name in the proxy, ORed,
/// including lines that come after the rule (as HAProxy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AclRef {
    Named(String),
    Anonymous(Box<Acl>),
}

// ---- log-format strings ----

/// Which line a proxy logs per stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogFormatKind {
    /// `option httplog`.
    Http,
    /// `option httplog clf`.
    HttpClf,
    /// `option httpslog`.
    Https,
    /// `option tcplog`.
    Tcp,
    /// `log-format <string>`.
    Custom(String),
}

impl LogFormatKind {
    /// The keyword that set it, as HAProxy names it in messages.
    pub fn keyword(&self) -> &'static str {
        match self {
            LogFormatKind::Http => "option httplog",
            LogFormatKind::HttpClf => "option httplog clf",
            LogFormatKind::Https => "option httpslog",
            LogFormatKind::Tcp => "option tcplog",
            LogFormatKind::Custom(_) => "log-format",
        }
    }
}

/// A proxy's log line and the line that set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFormatDecl {
    pub kind: LogFormatKind,
    pub span: Span,
}

/// A format string and where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatText {
    pub text: String,
    pub span: Span,
}

/// A proxy's formats, compiled for its mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogFormats {
    /// Each stream's line (`None`: `Connect from` lines).
    pub line: Option<LogFormat>,
    /// RFC 5424 structured data (`- ` by default).
    pub sd: Option<LogFormat>,
    /// The line of a request refused before it was complete (the stream's line otherwise).
    pub error: Option<LogFormat>,
    /// Each request's unique id.
    pub unique_id: Option<LogFormat>,
}

/// A log-format string: a proxy's log line, a header value, a redirect target, a dynamic
/// `use_backend` name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFormat {
    /// The string as written.
    pub text: String,
    pub parts: Vec<LogPart>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogPart {
    /// Literal text (`%%` already turned into `%`).
    Lit(String),
    /// A space between the fields of a log line: printed as one space, never after another.
    Sep,
    /// `%[expr]`.
    Sample(SampleExpr, LogFlags),
    /// `%ci`, `%b`...
    Var(LogVar, LogFlags),
}

/// How one variable is printed: `%{+Q,+X,+E,+M}` (and the options a format sets on all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFlags(pub u8);

impl LogFlags {
    /// `+Q`: strings in double quotes.
    pub const QUOTE: u8 = 1;
    /// `+X`: addresses, ports and counters in hexadecimal.
    pub const HEXA: u8 = 2;
    /// `+E`: `"`, `\` and `]` escaped with a backslash (RFC 5424 values).
    pub const ESCAPE: u8 = 4;
    /// `+M`: an empty string prints `-` (log lines have it).
    pub const MANDATORY: u8 = 8;
    /// Samples with control characters written `%XX` (formats that build HTTP messages).
    pub const HTTP: u8 = 16;

    pub fn has(self, f: u8) -> bool {
        self.0 & f != 0
    }
}

macro_rules! log_vars {
    ($($name:literal => $var:ident, $http:literal;)*) => {
        /// HAProxy 2.6's `%<var>` log-format variables (configuration.txt §8.2.4).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum LogVar { $($var,)* }

        impl LogVar {
            /// Every variable, its name, and whether it needs `mode http`.
            pub const ALL: &'static [(&'static str, LogVar, bool)] = &[$(($name, LogVar::$var, $http),)*];
        }
    };
}

log_vars! {
    "B" => BytesOut, false;
    "CC" => CookieClient, true;
    "CS" => CookieServer, true;
    "H" => Hostname, false;
    "ID" => UniqueId, false;
    "ST" => Status, false;
    "T" => DateGmt, false;
    "Ta" => Ta, true;
    "Tc" => Tc, false;
    "Th" => Th, false;
    "Ti" => Ti, true;
    "Tl" => DateLocal, false;
    "Tq" => Tq, true;
    "Tr" => Tr, true;
    "TR" => TR, true;
    "Td" => Td, false;
    "Ts" => Timestamp, false;
    "Tt" => Tt, false;
    "Tu" => Tu, false;
    "Tw" => Tw, false;
    "U" => BytesIn, false;
    "ac" => ActConn, false;
    "b" => Backend, false;
    "bc" => BeConn, false;
    "bi" => BackendIp, false;
    "bp" => BackendPort, false;
    "bq" => BackendQueue, false;
    "ci" => ClientIp, false;
    "cp" => ClientPort, false;
    "f" => Frontend, false;
    "fc" => FeConn, false;
    "fi" => FrontendIp, false;
    "fp" => FrontendPort, false;
    "ft" => FrontendXprt, false;
    "hr" => ReqHeaders, false;
    "hrl" => ReqHeaderList, false;
    "hs" => RespHeaders, false;
    "hsl" => RespHeaderList, false;
    "HM" => Method, true;
    "HP" => Path, true;
    "HPO" => PathOnly, true;
    "HQ" => Query, true;
    "HU" => Uri, true;
    "HV" => Version, true;
    "lc" => LogCount, false;
    "ms" => Millis, false;
    "pid" => Pid, false;
    "r" => Request, true;
    "rc" => Retries, false;
    "rt" => RequestCounter, false;
    "s" => Server, false;
    "sc" => SrvConn, false;
    "si" => ServerIp, false;
    "sp" => ServerPort, false;
    "sq" => SrvQueue, false;
    "sslc" => SslCipher, false;
    "sslv" => SslVersion, false;
    "t" => Date, false;
    "tr" => RequestDate, true;
    "trg" => RequestDateGmt, true;
    "trl" => RequestDateLocal, true;
    "ts" => TermState, false;
    "tsc" => TermStateCookies, false;
}

// ---- rules ----

/// One `http-request`, `http-response`, `http-after-response` or `redirect` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRule {
    pub span: Span,
    pub action: HttpAction,
    pub cond: Option<Condition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpAction {
    Allow,
    /// `use-service prometheus-exporter`: the request is answered with the metrics.
    PrometheusExporter,
    /// `deny [deny_status <code>] [<reply options>]`; status 403 by default. `reply` is set when
    /// reply options (content-type, string, file, hdr...) were given.
    Deny {
        status: u16,
        reply: Option<Reply>,
    },
    Return(Reply),
    Redirect(Redirect),
    SetHeader {
        name: String,
        value: LogFormat,
    },
    AddHeader {
        name: String,
        value: LogFormat,
    },
    /// `del-header <name> [-m str|beg|end|sub|reg]`.
    DelHeader {
        name: String,
        how: NameMatch,
    },
    ReplaceHeader {
        name: String,
        regex: String,
        replace: LogFormat,
    },
    ReplaceValue {
        name: String,
        regex: String,
        replace: LogFormat,
    },
    SetPath(LogFormat),
    /// `set-pathq`: the path and the query at once.
    SetPathQ(LogFormat),
    SetQuery(LogFormat),
    SetUri(LogFormat),
    SetMethod(LogFormat),
    ReplaceUri {
        regex: String,
        replace: LogFormat,
    },
    ReplacePath {
        regex: String,
        replace: LogFormat,
    },
    /// `replace-pathq`: the regex is applied to the path and query.
    ReplacePathQ {
        regex: String,
        replace: LogFormat,
    },
    SetVar {
        scope: VarScope,
        name: String,
        expr: SampleExpr,
        /// `set-var(<name>,<condition>...)`: [`VarConds`] bits.
        conds: u8,
    },
    UnsetVar {
        scope: VarScope,
        name: String,
    },
    /// `send-spoe-group <engine-id> <group-id>`: the group's messages sent to the engine's
    /// agent, the rules waiting for its answer (see `crate::spoe`).
    /// `lua.<name> [<arg>...]`: the action a Lua script registered (`core.register_action`),
    /// with the arguments it asked for.
    Lua {
        name: String,
        args: Vec<String>,
    },
    SendSpoeGroup {
        engine: String,
        group: String,
    },
    /// `wait-for-body time <time> [at-least <bytes>]`.
    WaitForBody {
        time: Duration,
        at_least: Option<u64>,
    },
    /// `set-status <code> [reason <text>]` (response rules only).
    SetStatus {
        status: u16,
        reason: Option<String>,
    },
    /// `strict-mode on|off` (request, response and after-response rules): when on (the
    /// default at the start of each rule list), a rewrite that fails (e.g. a header value
    /// that no longer fits) aborts the message with an error; when off, failures are ignored.
    StrictMode(bool),
    /// `set-var-fmt(<scope>.<name>) <fmt>`: sets a variable to the string a log-format gives.
    SetVarFmt {
        scope: VarScope,
        name: String,
        fmt: LogFormat,
        conds: u8,
    },
    /// `tarpit [deny_status <code>]` (request rules only): holds the request, answering
    /// nothing, for `timeout tarpit` (`timeout connect` when unset), then answers with the
    /// proxy's error message for `status` (500 by default) if the client is still there.
    /// Final. Reply options (`content-type`, `string`...) are refused as not supported yet.
    Tarpit {
        status: u16,
    },
    /// `reject` (request rules only): closes the client connection at once, without an
    /// answer. Final.
    Reject,
    /// `silent-drop` (request and response rules): closes the client connection at once,
    /// without an answer and without telling the client (no FIN/RST where the system allows).
    /// Final.
    SilentDrop,
    /// `early-hint <name> <fmt>` (request rules only): adds a header to the `103 Early Hints`
    /// interim response sent before the request goes on (consecutive early-hint rules build
    /// one 103 response).
    EarlyHint {
        name: String,
        value: LogFormat,
    },
    /// `http-request capture <expr> len <n>` (a new request slot) or `... id <n>`, and
    /// `http-response capture <expr> id <n>`: the value, cut to the slot's length, goes into
    /// capture slot `id` (shown by `%hr` / `%hs`).
    Capture {
        expr: SampleExpr,
        id: u32,
    },
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`.
    Stick(StickAction),
    /// `set-src`, `set-src-port`, `set-dst`, `set-dst-port <expr>`: the session's addresses
    /// as every later rule, log line and server connection sees them (`fc_src` keeps the
    /// connection's own).
    SetAddr {
        part: AddrPart,
        expr: SampleExpr,
    },
    /// `auth [realm <realm>]`: 401 asking for Basic credentials.
    Auth {
        realm: Option<String>,
    },
    /// `http-request cache-use <cache>`: the request's key is computed and looked up in the
    /// `cache` section named so; a hit is answered from it (later rules still run).
    CacheUse(String),
    /// `http-response cache-store <cache>`: the response (its head as it stands at this rule,
    /// then its body) is stored in the named cache when HAProxy's rules allow it.
    CacheStore(String),
    /// `set-bandwidth-limit <filter> [limit ...] [period ...]` (HAProxy 2.7): the proxy's
    /// bandwidth limitation filter of that name applies to this stream from now on.
    SetBandwidthLimit(Box<crate::filters::BwlimRule>),
}

/// Which address (or port) `set-src|dst[-port]` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrPart {
    Src,
    SrcPort,
    Dst,
    DstPort,
}

/// An HTTP reply built by the proxy (`return`, `deny` with reply options, `http-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: ReplyBody,
    /// `hdr <name> <fmt>` options, in order.
    pub headers: Vec<(String, LogFormat)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyBody {
    /// No payload.
    None,
    /// `string <text>`.
    String(String),
    /// `file <path>` (read by the engine). HAProxy requires `content-type` when the file is not
    /// empty; the parser cannot know, so the engine checks it when it reads the file.
    File(PathBuf),
    /// `lf-string <fmt>`.
    LfString(LogFormat),
    /// `lf-file <file>`: the file's text as a log-format string, read and parsed by the engine
    /// for the rule context it appears in.
    LfFile { path: PathBuf, ctx: crate::sample::Ctx, be_cap: bool },
    /// `errorfile <file>`: a complete raw HTTP response (read by the engine), sent as is.
    ErrorFile(PathBuf),
    /// `errorfiles <name>`: the message of `http-errors <name>` for the status (the proxy's own
    /// message when the section has none for it).
    ErrorFilesOf(String),
    /// `default-errorfiles`, or no payload option on a `deny`/`return` whose status has an
    /// error message: use the proxy's error message for that status.
    ErrorFiles,
}

/// A redirect: `redirect location|prefix|scheme <value> [code <n>] [drop-query] [append-slash]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub value: LogFormat,
    /// 301, 302 (default), 303, 307 or 308.
    pub code: u16,
    pub drop_query: bool,
    pub append_slash: bool,
    /// `ignore-empty`: the rule is skipped when its value renders empty.
    pub ignore_empty: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectKind {
    Location,
    Prefix,
    Scheme,
}

/// One `tcp-request connection|session|content` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpRule {
    pub span: Span,
    pub action: TcpAction,
    pub cond: Option<Condition>,
}

/// What a `tcp-request` rule does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpAction {
    /// `accept`: stop evaluating this list, go on.
    Accept,
    /// `reject`: close the connection.
    Reject,
    /// `silent-drop`: close without telling the client.
    SilentDrop,
    /// `close` (`tcp-response content`): close the server connection.
    Close,
    /// A non-final action shared with `http-request`: `set-var`, `set-var-fmt`, `unset-var`,
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`.
    Do(HttpAction),
}

impl TcpAction {
    pub fn accepts(&self) -> Option<bool> {
        match self {
            TcpAction::Accept => Some(true),
            TcpAction::Reject | TcpAction::SilentDrop | TcpAction::Close => Some(false),
            TcpAction::Do(_) => None,
        }
    }
}

// ---- backend selection ----

/// One `use-server <server> if|unless <cond>` rule (backends).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseServer {
    pub span: Span,
    /// A server of the backend by name (checked at load time), or a log-format naming one per
    /// request.
    pub target: ServerTarget,
    pub cond: Condition,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTarget {
    Name(String),
    Dynamic(LogFormat),
}

/// One `use_backend` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseBackend {
    pub span: Span,
    pub target: BackendTarget,
    pub cond: Option<Condition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendTarget {
    /// A backend by name, checked at load time (exists, same mode).
    Name(String),
    /// A name containing `%[`: evaluated per request, not checked at load time.
    Dynamic(LogFormat),
}

// ---- error messages ----

/// Where the error message for one status comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorSource {
    /// `errorfile <code> <file>`: a complete raw HTTP response read by the engine.
    File { path: PathBuf, span: Span },
    /// `http-error status <code> ...` (a `file` payload is read by the engine).
    Reply { reply: Reply, span: Span },
    /// `errorloc <code> <url>` / `errorloc302` (code 302) and `errorloc303` (code 303): the
    /// error is answered with a redirect to `url` (as written, not a log-format) instead.
    Location { code: u16, url: String, span: Span },
}

/// An `http-errors <name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpErrorsSection {
    pub name: String,
    pub span: Span,
    pub errors: BTreeMap<u16, ErrorSource>,
}

// ---- HTTP proxy settings ----

/// `option forwardfor [except <net>] [header <name>] [if-none]` and `option originalto
/// [except <net>] [header <name>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardFor {
    /// Source network (address, prefix length) for which the header is not added.
    pub except: Option<(IpAddr, u8)>,
    /// `X-Forwarded-For` / `X-Original-To` unless `header` says otherwise.
    pub header: String,
    /// `if-none` (forwardfor only): only add the header when the request has none.
    pub if_none: bool,
}

/// How client and server connections are kept between requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpConnMode {
    /// `option http-keep-alive` (HAProxy's default).
    #[default]
    KeepAlive,
    /// `option http-server-close`.
    ServerClose,
    /// `option httpclose`.
    Close,
}

/// `http-reuse`: sharing idle server connections between clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpReuse {
    Never,
    #[default]
    Safe,
    Aggressive,
    Always,
}

/// `cookie <name> [rewrite|insert|prefix] [indirect] [nocache] [postonly] [preserve]
/// [httponly] [secure] [domain <d>]* [maxidle <t>] [maxlife <t>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CookieCfg {
    pub span: Span,
    pub name: String,
    pub mode: CookieMode,
    pub indirect: bool,
    pub nocache: bool,
    pub httponly: bool,
    pub secure: bool,
    pub preserve: bool,
    pub domain: Vec<String>,
    pub maxidle: Option<Duration>,
    pub maxlife: Option<Duration>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieMode {
    /// `insert`: the proxy adds `Set-Cookie: <name>=<server cookie>` to responses.
    Insert,
    /// `rewrite`: the server sets the cookie; the proxy rewrites its value.
    Rewrite,
    /// `prefix`: the proxy prefixes the server's own cookie value with `<server cookie>~`.
    Prefix,
    /// None of the three: the proxy only reads the cookie (the application sets it to the
    /// server's cookie value); no response is modified.
    Passive,
}

/// One `retry-on` keyword: a failure after which a request may be retried (`retries` times).
/// A proxy without `retry-on` has `[ConnFailure]`, as HAProxy. HAProxy applies `retry-on`
/// in `mode http` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryOn {
    /// `none`: never retry (only alone on its line).
    None,
    /// `conn-failure`: the connection to the server failed; the request was not sent.
    ConnFailure,
    /// `empty-response`: the server closed after part of the request was sent, answering
    /// nothing.
    EmptyResponse,
    /// `junk-response`: the server answered something that is not a complete HTTP response.
    JunkResponse,
    /// `response-timeout`: `timeout server` struck while waiting for the response.
    ResponseTimeout,
    /// `0rtt-rejected`: a request sent as TLS early data was rejected by the server.
    ZeroRttRejected,
    /// `<status>`: the server answered this status; one of 401, 403, 404, 408, 425, 500, 501,
    /// 502, 503, 504 (the only codes HAProxy 2.6 accepts).
    Status(u16),
    /// `all-retryable-errors`: `conn-failure`, `empty-response`, `junk-response`,
    /// `response-timeout`, `0rtt-rejected`, 500, 502, 503 and 504 (see [`RetryOn::expand`]).
    AllRetryableErrors,
}

impl RetryOn {
    /// The keywords `all-retryable-errors` stands for.
    pub const ALL_RETRYABLE: [RetryOn; 9] = [
        RetryOn::ConnFailure,
        RetryOn::EmptyResponse,
        RetryOn::JunkResponse,
        RetryOn::ResponseTimeout,
        RetryOn::ZeroRttRejected,
        RetryOn::Status(500),
        RetryOn::Status(502),
        RetryOn::Status(503),
        RetryOn::Status(504),
    ];

    /// This keyword as the plain keywords it means: `all-retryable-errors` expanded, `none`
    /// empty, the others as they are.
    pub fn expand(self) -> Vec<RetryOn> {
        match self {
            RetryOn::AllRetryableErrors => RetryOn::ALL_RETRYABLE.to_vec(),
            RetryOn::None => Vec::new(),
            other => vec![other],
        }
    }
}

/// What a `capture` line records for the logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureKind {
    /// `capture request header <name> len <n>`.
    ReqHeader,
    /// `capture response header <name> len <n>`.
    ResHeader,
    /// `capture cookie <name> len <n>`: the first request `Cookie` or response `Set-Cookie`
    /// whose name starts with `name`; one per proxy (a later line replaces an earlier one).
    Cookie,
}

/// A frontend's capture slots, request and response, in declaration order: `capture request
/// header`, `declare capture request`, `http-request capture ... len` share the request
/// numbering (and likewise for responses).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureSlots {
    pub req: Vec<CaptureSlot>,
    pub res: Vec<CaptureSlot>,
}

/// One capture slot: up to `len` bytes, of the named header if it is a header capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureSlot {
    pub header: Option<String>,
    pub len: u32,
}

/// One `capture` line of a frontend or listen: up to `len` bytes of the named header (matched
/// case-insensitively, name kept as written) or cookie, shown in the HTTP log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    pub kind: CaptureKind,
    pub name: String,
    /// At most 63 for a cookie (HAProxy truncates larger lengths, with a warning).
    pub len: u32,
    pub span: Span,
}
