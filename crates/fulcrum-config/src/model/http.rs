//! The HTTP side of the model: sample expressions, ACLs and conditions, log-format strings,
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

use super::{AuthPart, ScFetch, Span, StickAction, TableConv};

// ---- sample expressions ----

/// A sample fetch and its converter chain, e.g. `req.hdr(host),lower,map_dom(/etc/hosts.map)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleExpr {
    pub fetch: Fetch,
    pub converters: Vec<Converter>,
    /// The expression as written in the configuration.
    pub text: String,
}

/// The sample fetches Fulcrum supports (HAProxy manual §7.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// `src`: the client's address.
    Src,
    /// `src_port`.
    SrcPort,
    /// `dst`: the address the client connected to.
    Dst,
    /// `dst_port`.
    DstPort,
    /// `path`: the request path, without the query string.
    Path,
    /// `url`: the request target as received.
    Url,
    /// `query`: the query string, without the `?`.
    Query,
    /// `method`.
    Method,
    /// `req.ver` (`req_ver`): the request's HTTP version, e.g. `1.1`.
    ReqVer,
    /// `url_param(<name>)` / `urlp(<name>)`.
    UrlParam {
        name: String,
    },
    /// `hdr(<name>[,<occ>])` / `req.hdr(...)`: the name is lower-cased; an empty name means
    /// every value of every header. `occ` picks one occurrence (negative counts from the end);
    /// without it an ACL tries every value, a log-format or `set-var` uses the last one.
    /// Always the request: the `hdr()` fetch of a response rule's log-format or `set-var` is
    /// stored as [`Fetch::ResHdr`].
    Hdr {
        name: String,
        occ: Option<i32>,
    },
    /// `hdr_cnt(<name>)` / `req.hdr_cnt(<name>)`: how many values the header has.
    HdrCnt {
        name: String,
    },
    /// `hdr_ip(<name>[,<occ>])` / `req.hdr_ip(...)`: a header value parsed as an IP address.
    HdrIp {
        name: String,
        occ: Option<i32>,
    },
    /// `cook(<name>)` / `req.cook(<name>)`: a request cookie's value.
    Cook {
        name: String,
    },
    /// `nbsrv([<backend>])`: usable servers of the backend (the current one when `None`).
    NbSrv {
        backend: Option<String>,
    },
    /// `be_conn([<backend>])`: current connections of the backend.
    BeConn {
        backend: Option<String>,
    },
    /// `be_sess_rate([<backend>])`: sessions per second the backend takes.
    BeSessRate {
        backend: Option<String>,
    },
    /// `connslots([<backend>])`: free connection and queue slots of the up servers (-1 when
    /// one of them has no `maxconn` or `maxqueue`).
    ConnSlots {
        backend: Option<String>,
    },
    /// `queue([<backend>])`: sessions waiting in the backend's queues.
    Queue {
        backend: Option<String>,
    },
    /// `avg_queue([<backend>])`: queued sessions per usable server.
    AvgQueue {
        backend: Option<String>,
    },
    /// `srv_is_up([<backend>/]<server>)`: the server is up.
    SrvIsUp {
        backend: Option<String>,
        server: String,
    },
    /// `srv_conn([<backend>/]<server>)`: the server's current connections.
    SrvConn {
        backend: Option<String>,
        server: String,
    },
    /// `always_true`.
    AlwaysTrue,
    /// `fe_conn`: the frontend's current connections (another frontend by name: not yet).
    FeConn,
    /// `so_name`: the name of the `bind` line that accepted the connection.
    SoName,
    /// `last_rule_file` / `last_rule_line` (`line`): where the stream's last final rule
    /// (`accept`, `reject`, `allow`, `deny`, `redirect`...) was written.
    LastRule {
        line: bool,
    },
    /// `wait_end` (the `WAIT_END` ACL): true once the inspection delay is over; until then
    /// a rule that tests it waits.
    WaitEnd,
    /// `always_false`.
    AlwaysFalse,
    /// `status`: the response status code.
    Status,
    /// `res.hdr(<name>[,<occ>])` / `shdr(...)`; name lower-cased.
    ResHdr {
        name: String,
        occ: Option<i32>,
    },
    /// `req.fhdr(<name>[,<occ>])`: like [`Fetch::Hdr`] but each value is a whole header line's
    /// value, not split at commas (for `User-Agent`, `Date`...). Name lower-cased; an empty
    /// name means every header. Without `occ` an ACL tries every line, other uses take the last.
    Fhdr {
        name: String,
        occ: Option<i32>,
    },
    /// `req.fhdr_cnt([<name>])`: how many header lines (not comma-separated values) the
    /// request has with that name (every header line when empty). Name lower-cased.
    FhdrCnt {
        name: String,
    },
    /// `res.fhdr(<name>[,<occ>])`: [`Fetch::Fhdr`] on the response. Name lower-cased.
    ResFhdr {
        name: String,
        occ: Option<i32>,
    },
    /// `req.body`: the request body buffered so far (binary: an ACL must say `-m`). Needs
    /// `option http-buffer-request` or `http-request wait-for-body` to see a whole body.
    ReqBody,
    /// `req.body_len`: bytes of request body buffered so far (integer).
    ReqBodyLen,
    /// `req.body_size`: the request body's announced size (`Content-Length`, or the bytes
    /// buffered so far for a chunked body) (integer).
    ReqBodySize,
    /// `req.body_param([<name>])`: a parameter of an `application/x-www-form-urlencoded`
    /// request body (binary: an ACL must say `-m`); an empty name means the first parameter.
    /// Case-sensitive name.
    ReqBodyParam {
        name: String,
    },
    /// `req.hdrs`: the request's header block as received, `name: value` lines each ending
    /// with CRLF, plus the empty line (binary: an ACL must say `-m`).
    ReqHdrs,
    /// `base`: the first `Host` header value followed by the path (no query string).
    Base,
    /// A TLS fact of the client connection (`ssl_fc*`, `ssl_c_*`) or the server's (`ssl_bc*`).
    Tls(TlsFetch),
    /// `fc_err`: the client connection's error code; 0 (none) for a connection that reaches a
    /// rule or a log line (TLS handshake errors come with TLS).
    FcErr,
    /// `fc_pp_authority`, `fc_pp_unique_id`, `fc_pp_tlv(<type>)`: TLVs of the PROXY protocol
    /// header the connection opened with (`Some(type)`), or its authority (`None`... see
    /// [`PpFetch`]).
    Pp(PpFetch),
    /// What the first bytes of a connection say (`req.ssl_sni`, `req.len`...), before any
    /// layer reads them: `mode tcp` rules after `tcp-request inspect-delay`.
    Payload(PayloadFetch),
    /// TLS facts Fulcrum does not keep (`ssl_fc_cipherlist_*`, `ssl_f_*`...): no sample.
    TlsOnly,
    /// `cook_cnt([<name>])` / `req.cook_cnt(...)`: how many times the request cookie appears
    /// (every cookie when the name is empty) (integer).
    CookCnt {
        name: String,
    },
    /// `cook_val([<name>])` / `req.cook_val(...)`: the request cookie's value read as an
    /// integer (the leading digits, as `atoi`).
    CookVal {
        name: String,
    },
    /// `res.cook([<name>])` / `scook(...)`: a cookie set by the response (`Set-Cookie`).
    ResCook {
        name: String,
    },
    /// `res.ver` (`resp_ver`): the response's HTTP version, e.g. `1.1`.
    ResVer,
    /// `res.comp`: whether the response is compressed (boolean); `res.comp_algo`: with which
    /// algorithm (its configuration name; no value when it is not).
    ResComp,
    ResCompAlgo,
    /// `res.cache_hit`: the response came from a cache (boolean); `res.cache_name`: which
    /// (no value when none did).
    ResCacheHit,
    ResCacheName,
    /// `date([<offset>[,s]])`: the current time in seconds since the epoch plus `offset`
    /// seconds (integer). The `ms` and `us` units are refused as not supported yet.
    Date {
        offset: i64,
    },
    /// `rand([<range>])`: a random integer; with a range, in `0..range` (computed as HAProxy
    /// does: `(rand32 * range) >> 32`), else any 32-bit value.
    Rand {
        range: Option<u64>,
    },
    /// `fe_name`: the name of the frontend that accepted the connection.
    FeName,
    /// `unique-id`: the request's `unique-id-format` id (no sample without one).
    UniqueId,
    /// `capture.req.hdr(<slot>)`, `capture.res.hdr(<slot>)`: what a capture slot holds.
    Captured {
        response: bool,
        slot: u32,
    },
    /// `be_name`: the name of the backend handling the stream (once one is chosen).
    BeName,
    /// `srv_name`: the name of the server the request was sent to (response side only).
    SrvName,
    /// `var(<scope>.<name>)`.
    Var {
        scope: VarScope,
        name: String,
        /// `var(<name>,<default>)`: a string given when the variable is not set.
        default: Option<String>,
    },
    /// `str(<s>)`: a constant string.
    Str(String),
    /// `bin(<hex>)`: constant bytes.
    Bin(Vec<u8>),
    /// `pathq`: the path and query of the request target (no scheme or authority).
    PathQ,
    /// `srv_id`: the number of the server that took the request.
    SrvId,
    /// `http_first_req`: the request is the first of its connection.
    HttpFirstReq,
    /// `uuid([4])`: a random version 4 UUID.
    Uuid,
    /// `int(<n>)`: a constant integer.
    Int(i64),
    /// `bool(<true|false|1|0>)`.
    Bool(bool),
    /// `ipv4(<addr>)`, `ipv6(<addr>)`: a constant address.
    IpConst(IpAddr),
    /// `http_auth(<userlist>)`: the request's Basic credentials are a user's of the list.
    HttpAuth {
        userlist: String,
    },
    /// `http_auth_group(<userlist>)`: the groups of the user the credentials authenticate.
    HttpAuthGroup {
        userlist: String,
    },
    /// `http_auth_user`, `http_auth_pass`, `http_auth_type`.
    AuthPart(AuthPart),
    /// `capture.req.uri`, `capture.req.method`, `capture.req.ver`: the request line (as the
    /// request has it when read; rewrites are seen).
    ReqLine(ReqLinePart),
    /// `fc_src`, `fc_src_port`, `fc_dst`, `fc_dst_port`: the connection's own addresses,
    /// whatever `set-src`/`set-dst` did.
    Fc(AddrPart),
    /// A stick counter (`sc_*`, `sc0_*`, `src_*`).
    Sc(ScFetch),
    /// `table_avl([<table>])` (free entries), `table_cnt([<table>])` (used entries); the
    /// proxy's own table when `None`.
    TableSize {
        table: Option<String>,
        used: bool,
    },
}

/// Which part of the request line `capture.req.*` gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqLinePart {
    Uri,
    Method,
    Version,
}

/// The conditions `set-var(<name>,<cond>...)` may put on a store (HAProxy's `VF_COND_*`), as
/// bits of a `u8`.
pub struct VarConds;

impl VarConds {
    pub const IFEXISTS: u8 = 1;
    pub const IFNOTEXISTS: u8 = 2;
    pub const IFEMPTY: u8 = 4;
    pub const IFNOTEMPTY: u8 = 8;
    pub const IFSET: u8 = 16;
    pub const IFNOTSET: u8 = 32;
    pub const IFGT: u8 = 64;
    pub const IFLT: u8 = 128;

    /// The bits of a comma-separated list, or HAProxy's message for a wrong word.
    pub fn parse(list: &str) -> Result<u8, String> {
        let mut bits = 0;
        for w in list.split(',') {
            bits |= match w {
                "ifexists" => Self::IFEXISTS,
                "ifnotexists" => Self::IFNOTEXISTS,
                "ifempty" => Self::IFEMPTY,
                "ifnotempty" => Self::IFNOTEMPTY,
                "ifset" => Self::IFSET,
                "ifnotset" => Self::IFNOTSET,
                "ifgt" => Self::IFGT,
                "iflt" => Self::IFLT,
                _ => return Err(format!("unknown condition \"{w}\"")),
            };
        }
        Ok(bits)
    }
}

/// The scope of a variable (`proc.`, `sess.`, `txn.`, `req.`, `res.`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarScope {
    Proc,
    Sess,
    Txn,
    Req,
    Res,
    /// `check.`: a health check's own, for the duration of one check.
    Check,
}

/// A converter applied to a sample (HAProxy manual §7.3.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Converter {
    /// `hex`: the bytes in upper-case hexadecimal (an integer as its 8 big-endian bytes).
    Hex,
    Lower,
    Upper,
    /// `field(<index>,<delimiters>[,<count>])`.
    Field {
        index: i32,
        delims: String,
        count: Option<i32>,
    },
    /// `word(<index>,<delimiters>[,<count>])`.
    Word {
        index: i32,
        delims: String,
        count: Option<i32>,
    },
    /// `regsub(<regex>,<subst>[,<flags>])`: regex kept as written, compiled by the engine;
    /// flags are `g` (all matches) and `i` (ignore case).
    Regsub {
        regex: String,
        subst: String,
        flags: String,
    },
    /// `map(<file>[,<default>])` (= `map_str`) and the `map_<match>` variants. The file is
    /// loaded by the engine.
    Map {
        kind: MapMatch,
        file: PathBuf,
        default: Option<String>,
    },
    /// The converters that need nothing compiled: hashes, encodings, arithmetic.
    Pure(PureConv),
    /// `in_table(<table>)`, `table_<data>(<table>)`: the input's entry in a stick table.
    Table {
        what: TableConv,
        table: String,
    },
    /// `set-var(<name>[,<condition>...])`: stores the sample in a variable and passes it on.
    SetVar {
        scope: VarScope,
        name: String,
        conds: u8,
    },
    /// `concat([<start>],[<var>],[<end>])`: the input, then `start`, the variable's value (when
    /// it exists), `end`.
    Concat {
        start: String,
        var: Option<(VarScope, String)>,
        end: String,
    },
    /// `add`, `sub`, `mul`, `div`, `mod`, `and`, `or`, `xor` with a variable's value.
    ArithVar {
        op: ArithOp,
        scope: VarScope,
        name: String,
    },
}

/// Converters computed from their input and literal arguments alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PureConv {
    /// `length`: the input's length in bytes.
    Length,
    /// `bytes(<offset>[,<length>])`: a part of the input (empty past its end).
    Bytes {
        offset: i64,
        len: Option<i64>,
    },
    /// `base64`, `b64dec`, `ub64enc`, `ub64dec`.
    Base64,
    B64Dec,
    Ub64Enc,
    Ub64Dec,
    /// `url_dec([<in_form>])`: `%XX` decoded (and `+` as a space in a form).
    UrlDec {
        form: bool,
    },
    /// `sha1`, `sha2([<bits>])`: the digest, binary.
    Sha1,
    Sha2 {
        bits: u16,
    },
    /// `crc32`, `crc32c`, `djb2`, `sdbm`, `wt6` (`avalanche`: HAProxy's `full_hash` after).
    Hash32 {
        kind: Hash32,
        avalanche: bool,
    },
    /// `xxh32`, `xxh64`, `xxh3` with their seed.
    Xxh32(u32),
    Xxh64(u64),
    Xxh3(u64),
    /// `add`, `sub`, `mul`, `div`, `mod`, `and`, `or`, `xor` with a literal integer.
    Arith {
        op: ArithOp,
        value: i64,
    },
    /// `neg`, `cpl`, `bool`, `not`, `odd`, `even`.
    Neg,
    Cpl,
    Bool,
    Not,
    Odd,
    Even,
    /// `hex2i`: hexadecimal text to an integer.
    Hex2i,
    /// `host_only`: a Host value without its port, in lower case.
    HostOnly,
    /// `port_only`: a Host value's port (0 without one).
    PortOnly,
    /// `http_date([<offset>])`: seconds since the epoch (plus `offset`) as an HTTP date.
    HttpDate {
        offset: i64,
    },
}

/// The 32-bit hashes of HAProxy's `hash.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash32 {
    Crc32,
    Crc32c,
    Djb2,
    Sdbm,
    Wt6,
}

/// Integer operators of the arithmetic converters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
}

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

/// How a `map_*` converter matches its input against the map's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMatch {
    Str,
    Beg,
    End,
    Sub,
    Dom,
    Reg,
    /// `map_regm`: `reg`, the value's `\1`..`\9` replaced by the regex's groups.
    Regm,
    Ip,
    Int,
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

impl TlsFetch {
    /// A fact of the server connection (`ssl_bc*`).
    pub fn is_back(&self) -> bool {
        matches!(
            self,
            TlsFetch::Used { back: true }
                | TlsFetch::Protocol { back: true }
                | TlsFetch::Cipher { back: true }
                | TlsFetch::Alpn { back: true }
                | TlsFetch::IsResumed { back: true }
                | TlsFetch::Keysize { back: true }
                | TlsFetch::SessionId { back: true }
        )
    }
}

/// The TLS fetches (HAProxy's `ssl_fc*`, `ssl_c_*`, `ssl_bc*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsFetch {
    /// `ssl_fc` / `ssl_bc`: the connection is TLS (boolean).
    Used {
        back: bool,
    },
    /// `ssl_fc_has_sni`.
    HasSni,
    /// `ssl_fc_sni`.
    Sni,
    /// `ssl_fc_protocol` / `ssl_bc_protocol`: `TLSv1.3`...
    Protocol {
        back: bool,
    },
    /// `ssl_fc_cipher` / `ssl_bc_cipher`: OpenSSL's name of the suite.
    Cipher {
        back: bool,
    },
    /// `ssl_fc_alpn` / `ssl_bc_alpn`.
    Alpn {
        back: bool,
    },
    /// `ssl_fc_is_resumed` / `ssl_bc_is_resumed`.
    IsResumed {
        back: bool,
    },
    /// `ssl_fc_use_keysize`, `ssl_fc_alg_keysize` (and `ssl_bc_*`): the cipher's key bits.
    Keysize {
        back: bool,
    },
    /// `ssl_fc_session_id` / `ssl_bc_session_id` (binary).
    SessionId {
        back: bool,
    },
    /// `ssl_fc_err`, `ssl_c_err`, `ssl_c_ca_err`, `ssl_c_verify`: 0 once the handshake is done.
    Err,
    /// `ssl_fc_has_crt`, `ssl_c_used`: the client sent a certificate.
    HasCrt,
    /// `ssl_c_s_dn([field[,occ]])`, `ssl_c_i_dn(...)`.
    Dn {
        issuer: bool,
        field: Option<String>,
        occ: i32,
    },
    /// `ssl_c_serial` (binary).
    Serial,
    /// `ssl_c_sha1` (binary).
    Sha1,
    /// `ssl_c_der` (binary).
    Der,
    /// `ssl_c_notafter`, `ssl_c_notbefore`: `YYMMDDhhmmss[Z]`.
    NotAfter,
    NotBefore,
    /// `ssl_c_version`.
    Version,
    /// `ssl_c_sig_alg`, `ssl_c_key_alg`.
    SigAlg,
    KeyAlg,
    /// `ssl_f_*`: the same fields of the certificate this side presented.
    Local(Box<TlsFetch>),
}

/// Fetches on the bytes waiting at the start of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadFetch {
    /// `req.ssl_sni` / `req_ssl_sni`: the ClientHello's server name.
    SslSni,
    /// `req.ssl_alpn`: the first protocol the ClientHello offers.
    SslAlpn,
    /// `req.ssl_hello_type` / `req_ssl_hello_type`: 1 for a ClientHello.
    SslHelloType,
    /// `req.ssl_ver` / `req_ssl_ver`: `major << 16 | minor` of the record.
    SslVer,
    /// `req.len` / `req_len` / `res.len`: how many bytes are waiting.
    Len,
    /// `req.payload(<offset>,<length>)` / `res.payload(...)`: bytes at `offset` (`length` 0:
    /// all that is there).
    Bytes { offset: u32, length: u32 },
    /// `req.payload_lv(<offset1>,<length>[,<offset2>])` / `res.payload_lv(...)`: a block
    /// whose length is the big-endian integer of `length` bytes at `offset1`; the block
    /// follows the length, or starts at `offset2` (absolute, or relative after a `+`).
    Lv { offset: u32, length: u32, at: Option<(i64, bool)> },
}

/// TLVs of a received PROXY protocol v2 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PpFetch {
    /// `fc_pp_authority` (PP2_TYPE_AUTHORITY).
    Authority,
    /// `fc_pp_unique_id` (PP2_TYPE_UNIQUE_ID).
    UniqueId,
    /// `fc_pp_tlv(<type>)`: any TLV by number (or HAProxy's names: ALPN, AUTHORITY, CRC32C,
    /// NOOP, UNIQUE_ID, SSL, NETNS...).
    Tlv(u8),
}
