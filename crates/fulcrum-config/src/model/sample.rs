//! Sample expressions in the model: the fetches Fulcrum supports (HAProxy manual §7.3), their
//! converters and the variables they read and write. Parsed by `crate::sample`; evaluated by
//! the engine's `rules::sample`.

use std::net::IpAddr;
use std::path::PathBuf;

use super::{AddrPart, AuthPart, ScFetch, TableConv};

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
    /// `res.body`, `res.body_len`, `res.body_size`: the same of the response body, in response
    /// rules (after `http-response wait-for-body` to see a whole one).
    ResBody,
    ResBodyLen,
    ResBodySize,
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
    /// `fc_err_str`: the text of `fc_err` (`Success`).
    FcErrStr,
    /// The server connection's facts (`bc_*`), in response rules and log lines.
    Bc(BcFetch),
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
    /// `baseq`: [`Fetch::Base`] with the query string.
    BaseQ,
    /// `base32` (`url: false`) and `url32` (`url: true`): HAProxy's 32-bit hash (sdbm, then
    /// its avalanche) of the first Host value (`url32`: the whole first Host line) followed by
    /// the path (`url32`: with its query), an integer; `base32+src`, `url32+src` (`src`): the
    /// hash's 4 big-endian bytes followed by the client's address (4 or 16 bytes), binary.
    HostPathHash {
        url: bool,
        src: bool,
    },
    /// `url_ip`, `url_port` (`port`): the IPv4 address and port of an absolute-form target
    /// written with an address (HAProxy 2.6 resolves nothing here; port 80 by default).
    UrlAddr {
        port: bool,
    },
    /// `hdr_val`, `req.hdr_val`, `res.hdr_val`, `shdr_val`, `urlp_val`, `res.cook_val`: the
    /// inner fetch's value read as HAProxy's `strl2ic` reads it (an optional `-`, then digits
    /// up to the first byte above `9`).
    IntOf(Box<Fetch>),
    /// `req.hdr_names([<delim>])`, `res.hdr_names(...)`: every header name, in lower case
    /// and in order, joined by the first byte of `<delim>` (`,` without it).
    HdrNames {
        response: bool,
        delim: u8,
    },
    /// `res.hdr_cnt([<name>])` / `shdr_cnt`: [`Fetch::HdrCnt`] on the response.
    ResHdrCnt {
        name: String,
    },
    /// `res.hdr_ip(<name>[,<occ>])` / `shdr_ip`: [`Fetch::HdrIp`] on the response.
    ResHdrIp {
        name: String,
        occ: Option<i32>,
    },
    /// `res.fhdr_cnt([<name>])`: [`Fetch::FhdrCnt`] on the response.
    ResFhdrCnt {
        name: String,
    },
    /// `res.hdrs`: [`Fetch::ReqHdrs`] on the response (binary).
    ResHdrs,
    /// `req.hdrs_bin`, `res.hdrs_bin` (`response`): each header as a varint-prefixed name and
    /// value, then two zero varints (HAProxy's binary header list), binary.
    HdrsBin {
        response: bool,
    },
    /// `res.cook_cnt([<name>])` / `scook_cnt`: how many `Set-Cookie` values (split at commas,
    /// as HAProxy splits them) set the cookie (any cookie when the name is empty).
    ResCookCnt {
        name: String,
    },
    /// `capture.res.ver`: `HTTP/1.1` or `HTTP/1.0`, the response's version as received.
    ResLineVersion,
    /// `req.proto_http` (`req_proto_http`, the `HTTP` ACL): the request is valid HTTP. In
    /// HTTP mode always; in `mode tcp`, once the first bytes parse as an HTTP/1 request head
    /// (while they may still become one under `tcp-request inspect-delay`, a rule waits).
    ProtoHttp,
    /// `http_auth_bearer([<header>])`: the token of a `Bearer` authorization (the
    /// `Authorization` header, or the named one).
    AuthBearer {
        header: Option<String>,
    },
    /// `meth(<method>)`: a constant method.
    Meth(String),
    /// `env(<name>)`: the process's environment variable (no sample when it is not set).
    Env(String),
    /// `hostname`: the system's host name.
    Hostname,
    /// `thread`: the worker thread running the stream, from 0.
    Thread,
    /// `stopping`: the process is stopping (a soft stop began).
    Stopping,
    /// `date(<offset>,ms)`, `date(<offset>,us)` (`micro`): the time since the epoch in that
    /// unit, plus `offset` in that unit.
    DateIn {
        offset: i64,
        micro: bool,
    },
    /// `date_us`: the microseconds of the current second.
    DateUs,
    /// A fact of the frontend that accepted the connection, or of its `bind` line.
    Fe(FeFact),
    /// A fact of the backend (`backend`: another one by name, where the fetch takes one).
    Be {
        backend: Option<String>,
        what: BeFact,
    },
    /// A fact of a server (`[<backend>/]<server>`).
    Srv {
        backend: Option<String>,
        server: String,
        what: SrvFact,
    },
    /// `src_is_local`, `dst_is_local` (`dst`), `fc_src_is_local`, `fc_dst_is_local` (`fc`:
    /// the connection's own addresses whatever `set-src`/`set-dst` did): the address is one
    /// of this host's (a socket can be bound to it).
    IsLocal {
        dst: bool,
        fc: bool,
    },
    /// `fc_http_major`: 2 for an HTTP/2 client connection, else 1.
    FcHttpMajor,
    /// `fc_rcvd_proxy`: the connection opened with a PROXY protocol header.
    FcRcvdProxy,
    /// `fc_rtt`, `fc_rttvar` (`us`: in microseconds, else milliseconds), `fc_unacked`,
    /// `fc_sacked`, `fc_lost`, `fc_retrans`, `fc_fackets`, `fc_reordering`: the client
    /// connection's `TCP_INFO`.
    TcpInfo {
        what: TcpInfoField,
        us: bool,
    },
}

/// A field of the kernel's `TCP_INFO`, in HAProxy's order (`get_tcp_info()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpInfoField {
    Rtt,
    RttVar,
    Unacked,
    Sacked,
    Lost,
    Retrans,
    Fackets,
    Reordering,
}

/// Facts of a frontend (`fe_*`) and of the `bind` line that accepted the connection (`so_id`,
/// `dst_conn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeFact {
    /// `fe_id`.
    Id,
    /// `fe_req_rate`: HTTP requests per second over the last second.
    ReqRate,
    /// `fe_sess_rate`: sessions per second over the last second.
    SessRate,
    /// `fe_defbe`: the name of its default backend (a string).
    DefBe,
    /// `fe_client_timeout`: its `timeout client` in milliseconds.
    ClientTimeout,
    /// `so_id`: the bind line's number in the frontend.
    SoId,
    /// `dst_conn`: the connections the bind line holds now.
    DstConn,
}

/// Facts of a backend (`be_*`, `cur_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeFact {
    /// `be_id`.
    Id,
    /// `be_conn_free([<backend>])`: free connection slots of the servers in use (-1 when one
    /// has no `maxconn`).
    ConnFree,
    /// `be_server_timeout`: `timeout server` in milliseconds.
    ServerTimeout,
    /// `be_tunnel_timeout`: `timeout tunnel` in milliseconds.
    TunnelTimeout,
    /// `cur_server_timeout`, `cur_tunnel_timeout`: the stream's, as HAProxy 2.6 sets them when
    /// it connects to a server: 0 before (request rules), then the backend's (Fulcrum has no
    /// `set-timeout` action yet).
    CurServerTimeout,
    CurTunnelTimeout,
}

/// Facts of a server (`srv_*([<backend>/]<server>)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrvFact {
    /// `srv_queue`: sessions waiting in its queue.
    Queue,
    /// `srv_sess_rate`: sessions per second over the last second.
    SessRate,
    /// `srv_weight`: its effective weight.
    Weight,
    /// `srv_iweight`: its configured weight.
    IWeight,
    /// `srv_uweight`: its weight as the user set it (`set server ... weight`).
    UWeight,
    /// `srv_conn_free`: connection slots left under its `maxconn` (-1 without one).
    ConnFree,
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
    /// Converters with text or address arguments (`ipmask`, `ltime`, `json`, ...).
    Text(super::TextConv),
    /// Converters that read or change a variable (`strcmp`, `add_item`, `unset-var`, ...).
    Var(super::VarConv),
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
                | TlsFetch::Err { back: true, .. }
                | TlsFetch::ServerCert(_)
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
    /// `ssl_fc_err`, `ssl_c_err`, `ssl_c_ca_err`, `ssl_c_verify`, `ssl_bc_err`: 0 once the
    /// handshake is done; `ssl_fc_err_str`, `ssl_bc_err_str` (`text`): no sample without an
    /// error.
    Err {
        back: bool,
        text: bool,
    },
    /// `ssl_fc_has_early`: early data (0-RTT) came; never, as Fulcrum does not take it.
    HasEarly,
    /// What `tune.ssl.capture-buffer-size` kept of the client's ClientHello (`ssl_fc_cipherlist_*`,
    /// `ssl_fc_extlist_bin`, `ssl_fc_eclist_bin`, `ssl_fc_ecformats_bin`,
    /// `ssl_fc_protocol_hello_id`); `grease`: GREASE values left out (the fetches' argument 1).
    Hello {
        part: HelloPart,
        grease: bool,
    },
    /// `ssl_s_*`: the same fields of the certificate the server presented (`ssl_s_der`...).
    ServerCert(Box<TlsFetch>),
    /// What `tune.ssl.keylog on` keeps of a client connection: `ssl_fc_client_random`,
    /// `ssl_fc_server_random`, `ssl_fc_session_key` (binary), the `ssl_fc_*_secret` fetches
    /// (hexadecimal text).
    Keylog(KeyPart),
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

/// The parts of a captured ClientHello (HAProxy's `struct ssl_capture`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelloPart {
    /// `ssl_fc_cipherlist_bin`: the cipher suites, two bytes each.
    Ciphers,
    /// `ssl_fc_cipherlist_hex`: the same in upper-case hexadecimal.
    CiphersHex,
    /// `ssl_fc_cipherlist_str`: OpenSSL's names, comma-separated (`UNKNOWN(xxxx)` for others).
    CiphersStr,
    /// `ssl_fc_cipherlist_xxh`: XXH64 of the whole list, whatever the capture's size.
    CiphersXxh,
    /// `ssl_fc_extlist_bin`: the extension types in order.
    Exts,
    /// `ssl_fc_eclist_bin`: the supported groups (elliptic curves).
    Groups,
    /// `ssl_fc_ecformats_bin`: the EC point formats, a byte each.
    EcFormats,
    /// `ssl_fc_protocol_hello_id`: the ClientHello's (legacy) version.
    Version,
}

/// A part of a client connection's key log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPart {
    ClientRandom,
    ServerRandom,
    /// TLS 1.2's master secret.
    SessionKey,
    /// The secret of this NSS key log label (`CLIENT_TRAFFIC_SECRET_0`...).
    Secret(&'static str),
}

/// The server connection's facts (`bc_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcFetch {
    /// `bc_src`, `bc_src_port`, `bc_dst`, `bc_dst_port`.
    Addr(AddrPart),
    /// `bc_http_major`: 2 over an HTTP/2 connection, else 1.
    HttpMajor,
    /// `bc_err` (0), `bc_err_str` (`text`: `Success`) of an established connection.
    Err { text: bool },
}

/// Fetches on the bytes waiting at the start of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// `rdp_cookie([<name>])` / `req.rdp_cookie`: the value of the RDP cookie (`Cookie:
    /// <name>=<value>` CRLF after the 11 bytes of an RDP connection request's headers; any
    /// name when empty), as HAProxy 2.6's `fetch_rdp_cookie_name` reads it.
    RdpCookie { name: String },
    /// `rdp_cookie_cnt([<name>])` / `req.rdp_cookie_cnt`: 1 when there is one, else 0.
    RdpCookieCnt { name: String },
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
