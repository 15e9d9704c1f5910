//! The health-check side of the model: a server's check and agent settings (`check`, `inter`,
//! `rise`, `agent-check`...), what happens around state changes (`slowstart`, `observe`,
//! `on-marked-down`...), and a backend's check recipe.
//!
//! As in HAProxy, every check kind (`option httpchk`, `option redis-check`, `tcp-check` lines...)
//! is one ordered list of steps: connect, send, expect. The protocol options build their lists
//! here, so the engine runs one kind of thing.

use std::time::Duration;

use super::{LogFormat, SampleExpr, VarScope};

/// HAProxy's default `inter` (`DEF_CHKINTR`).
pub const DEFAULT_INTER: Duration = Duration::from_millis(2000);
/// HAProxy's default `rise` (`DEF_RISETIME`).
pub const DEFAULT_RISE: u32 = 2;
/// HAProxy's default `fall` (`DEF_FALLTIME`).
pub const DEFAULT_FALL: u32 = 3;

/// `check` and its timing options on a `server` (or `default-server`) line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCheck {
    /// `check`: health checks are run.
    pub enabled: bool,
    /// `check-via-socks4`: checks go through the server's `socks4` proxy too.
    pub via_socks4: bool,
    /// `inter`: time between two checks while the server is fully up or fully down.
    pub inter: Duration,
    /// `fastinter`: between checks while the server is going up or down (`inter` if unset).
    pub fastinter: Option<Duration>,
    /// `downinter`: between checks while the server is down (`inter` if unset).
    pub downinter: Option<Duration>,
    /// `rise`: consecutive successes that bring a down server up.
    pub rise: u32,
    /// `fall`: consecutive failures that take an up server down.
    pub fall: u32,
    /// `port`: where checks connect (the server's port if unset).
    pub port: Option<u16>,
    /// `addr`: where checks connect (the server's address if unset), as written.
    pub addr: Option<String>,
    /// The port written with `addr <ip>:<port>`: checks use it when `port` is not set.
    pub addr_port: Option<u16>,
    /// `check-send-proxy`: checks start with a PROXY protocol v1 line.
    pub send_proxy: bool,
}

impl Default for ServerCheck {
    fn default() -> Self {
        ServerCheck {
            enabled: false,
            via_socks4: false,
            inter: DEFAULT_INTER,
            fastinter: None,
            downinter: None,
            rise: DEFAULT_RISE,
            fall: DEFAULT_FALL,
            port: None,
            addr: None,
            addr_port: None,
            send_proxy: false,
        }
    }
}

/// `agent-check` and its options: a second, auxiliary check asking an agent on the server for
/// its state and weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCheck {
    /// `agent-check` was given.
    pub enabled: bool,
    /// `agent-port` (required with `agent-check`).
    pub port: Option<u16>,
    /// `agent-addr`: the agent's address, as written (the server's if unset).
    pub addr: Option<String>,
    /// `agent-inter` (HAProxy's default: 2s).
    pub inter: Duration,
    /// `agent-send`: a string sent to the agent on connect.
    pub send: Option<String>,
}

impl Default for AgentCheck {
    fn default() -> Self {
        AgentCheck { enabled: false, port: None, addr: None, inter: DEFAULT_INTER, send: None }
    }
}

/// `observe`: which live traffic counts as evidence of a server's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observe {
    /// Connection errors (`layer4`).
    Layer4,
    /// HTTP responses too (`layer7`): 5xx but 501/505, invalid or truncated answers.
    Layer7,
}

/// `on-error`: what `error-limit` consecutive observed errors do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// Only switch to `fastinter` checks (HAProxy's default).
    #[default]
    Fastinter,
    /// Count as one failed check.
    FailCheck,
    /// Leave one more failure before DOWN, then count as a failed check.
    SuddenDeath,
    /// Mark the server DOWN at once.
    MarkDown,
}

/// `init-addr` methods, tried in order until one gives an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitAddr {
    /// `last`: the address in the server-state file (no state file yet: never gives one).
    Last,
    /// `libc`: the system resolver.
    Libc,
    /// `none`: start without an address, in maintenance (RMAINT).
    None,
    /// An IP address to use.
    Ip(std::net::IpAddr),
}

/// How a backend checks its servers: the kind (for messages and defaults) and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub kind: CheckKind,
    /// The steps, in order, as configured. The engine adds HAProxy's implicit first `connect`
    /// (and, for HTTP, the implicit last `expect status 200-399`).
    pub steps: Vec<CheckStep>,
    /// `http-check disable-on-404`: a 404 from an up server makes it stop taking new traffic
    /// (NOLB) instead of failing the check.
    pub disable_on_404: bool,
    /// `http-check send-state`: checks carry an `X-Haproxy-Server-State` header.
    pub send_state: bool,
    /// `external-check command|path` (used with `option external-check`).
    pub external: ExternalCheck,
}

/// `external-check command <cmd>` and `external-check path <path>`: the program an external
/// check runs, and the `PATH` it gets (HAProxy's default: empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalCheck {
    pub command: Option<String>,
    pub path: Option<String>,
}

impl Default for HealthCheck {
    fn default() -> Self {
        HealthCheck {
            kind: CheckKind::Connect,
            steps: Vec::new(),
            disable_on_404: false,
            send_state: false,
            external: ExternalCheck::default(),
        }
    }
}

/// The check option in force (the last one configured wins, as in HAProxy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// No option: a connection that opens is a success (layer 4).
    Connect,
    /// `option tcp-check`: the `tcp-check` lines.
    Tcp,
    /// `option httpchk` with `http-check` lines.
    Http,
    Redis,
    Mysql,
    Pgsql,
    Smtp,
    Ldap,
    /// `option spop-check`: an SPOE agent's HELLO.
    Spop,
    SslHello,
    /// `option external-check`: a program's exit status (`external-check command`).
    External,
}

/// One step of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckStep {
    Connect(ConnectStep),
    Send(SendStep),
    Expect(ExpectStep),
    /// `tcp-check comment` / `http-check comment`: names the steps after it in messages.
    Comment(String),
    /// `set-var(<name>[,<cond>...]) <expr>`: the sample is read from the check's response
    /// (`res.hdr`, `res.fhdr`...), variables and constants.
    SetVar {
        scope: VarScope,
        name: String,
        expr: SampleExpr,
        conds: u8,
    },
    /// `unset-var(<name>)`.
    UnsetVar {
        scope: VarScope,
        name: String,
    },
}

/// `tcp-check connect` / `http-check connect`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectStep {
    /// `port <n>`: overrides the server's check port.
    pub port: Option<u16>,
    /// `addr <ip>`: overrides the server's check address, as written.
    pub addr: Option<String>,
    /// `send-proxy`: a PROXY protocol v1 line first.
    pub send_proxy: bool,
    /// `linger`: close cleanly instead of with a reset.
    pub linger: bool,
    /// `comment <text>`.
    pub comment: Option<String>,
    /// `default`: the server's check settings apply (`check-ssl`, `check-sni`, `check-alpn`,
    /// `check-send-proxy`, `check-via-socks4`).
    pub default: bool,
    /// `ssl`: over TLS, with the server's TLS settings (`verify`, `crt`...).
    pub ssl: bool,
    /// `sni <name>` (with `ssl`).
    pub sni: Option<String>,
    /// `alpn <list>` (with `ssl`), as written: comma-separated.
    pub alpn: Option<Vec<String>>,
    /// `via-socks4`: through the server's `socks4` proxy.
    pub via_socks4: bool,
}

/// `tcp-check send|send-binary` / `http-check send`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendStep {
    /// Raw bytes (`send` with escapes resolved, or `send-binary` decoded from hex).
    Bytes { data: Vec<u8>, comment: Option<String> },
    /// An HTTP request (`option httpchk` and `http-check send`).
    Http(HttpSend),
    /// `send-lf <fmt>` / `send-binary-lf <fmt>`: a log-format string rendered at each run
    /// (for `binary`, into hexadecimal digits then decoded).
    Lf { fmt: LogFormat, binary: bool, comment: Option<String> },
    /// Bytes with the current Unix time (seconds, 4 bytes big-endian) written at `time_at` as
    /// they are sent: HAProxy's `%[date(),htonl,hex]` in the client hello of
    /// `option ssl-hello-chk`.
    Dated { data: Vec<u8>, time_at: usize },
}

/// The request an HTTP check sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSend {
    /// `meth`: `OPTIONS` when unset.
    pub method: Option<String>,
    /// `uri`: `/` when unset.
    pub uri: Option<String>,
    /// `ver`: `HTTP/1.0` when unset.
    pub version: Option<String>,
    /// `hdr <name> <value>` in order.
    pub headers: Vec<(String, String)>,
    /// `body <string>`.
    pub body: Option<String>,
    pub comment: Option<String>,
    /// Set on the request an `option httpchk` line gives, which a later `http-check send`
    /// completes instead of adding a second request.
    pub from_option: bool,
    /// `uri-lf <fmt>`: the URI rendered at each check (`/` when it renders empty); `uri` is
    /// then unset.
    pub uri_lf: Option<LogFormat>,
    /// `body-lf <fmt>`: the body rendered at each check; `body` is then unset.
    pub body_lf: Option<LogFormat>,
    /// The `hdr` values that hold log-format variables, by their index in `headers`: rendered
    /// at each check, the header left out when one renders empty (as HAProxy 2.6).
    pub header_lf: Vec<(usize, LogFormat)>,
}

impl HttpSend {
    /// Whether a part is rendered at each check (else the request is the same every time).
    pub fn has_lf(&self) -> bool {
        self.uri_lf.is_some() || self.body_lf.is_some() || !self.header_lf.is_empty()
    }
}

/// `tcp-check expect` / `http-check expect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectStep {
    pub kind: ExpectKind,
    /// `!`: the check fails when the pattern matches.
    pub inverse: bool,
    /// `min-recv <n>`: bytes to wait for before matching (-1: wait for a match or the end).
    pub min_recv: i64,
    /// `ok-status`, `error-status`, `tout-status` (HAProxy's L7OK, L7RSP/L7STS, L7TOUT).
    pub ok_status: Option<CheckStatus>,
    pub error_status: Option<CheckStatus>,
    pub tout_status: Option<CheckStatus>,
    /// `on-success` / `on-error` messages.
    pub on_success: Option<CheckMessage>,
    pub on_error: Option<CheckMessage>,
    /// Where the check's response code comes from (HAProxy's `status-code <expr>`; only the
    /// protocol checks set it).
    pub status_code: Option<Payload>,
    pub comment: Option<String>,
}

impl ExpectStep {
    pub fn new(kind: ExpectKind) -> Self {
        ExpectStep {
            kind,
            inverse: false,
            min_recv: -1,
            ok_status: None,
            error_status: None,
            tout_status: None,
            on_success: None,
            on_error: None,
            status_code: None,
            comment: None,
        }
    }
}

/// An `on-success` / `on-error` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckMessage {
    /// Text as written (log-format is not evaluated yet).
    Text(String),
    /// The one log-format form HAProxy's protocol checks use: part of the answer,
    /// `%[res.payload(<offset>,<len>),ltrim(' '),cut_crlf]`.
    Payload(Payload),
}

/// `res.payload(<offset>,<len>)` over the bytes received since the last send, with the
/// converters HAProxy's protocol checks apply to it. Read as text, it ends at a NUL byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    pub offset: usize,
    /// 0: up to the end of what was received.
    pub len: usize,
    /// `ltrim(' ')`: leading spaces removed.
    pub ltrim_spaces: bool,
    /// `cut_crlf`: cut at the first CR or LF.
    pub cut_crlf: bool,
}

impl Payload {
    /// `res.payload(<offset>,<len>)` without converters.
    pub const fn new(offset: usize, len: usize) -> Self {
        Payload { offset, len, ltrim_spaces: false, cut_crlf: false }
    }

    /// The first line of the answer from `offset` (`%[res.payload(<offset>,0),cut_crlf]`).
    pub const fn line(offset: usize) -> Self {
        Payload { offset, len: 0, ltrim_spaces: false, cut_crlf: true }
    }
}

/// What an expect step looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpectKind {
    /// `string <text>`: the bytes appear in what was received.
    String(Vec<u8>),
    /// `rstring <regex>`.
    Regex(String),
    /// `binary <hex>`.
    Binary(Vec<u8>),
    /// `rbinary <regex>` over the hex dump of what was received.
    BinaryRegex(String),
    /// `status <codes>`: HTTP status in one of the ranges.
    Status(Vec<(u16, u16)>),
    /// `rstatus <regex>`.
    StatusRegex(String),
    /// HTTP `hdr name <pattern> [value <pattern>]` / `fhdr`.
    Header(HeaderExpect),
    /// HTTP `string <text>`: the body contains the text.
    Body(Vec<u8>),
    /// HTTP `rstring <regex>` on the body.
    BodyRegex(String),
    /// A protocol check's own analysis of the answer.
    Custom(CustomExpect),
}

/// `http-check expect hdr name [-m <meth>] <name> [value [-m <meth>] <value>]`, `fhdr` for the
/// full line value (not split on commas).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderExpect {
    pub name: String,
    pub name_match: HeaderMatch,
    pub value: Option<String>,
    pub value_match: HeaderMatch,
    /// `fhdr`: values are whole lines, not split on commas.
    pub full: bool,
    /// `name-lf <fmt>` / `value-lf <fmt>`: the name or value is a log-format string rendered
    /// at each check (`name` / `value` then hold it as written).
    pub name_lf: Option<LogFormat>,
    pub value_lf: Option<LogFormat>,
}

/// `-m str|beg|end|sub|reg` of an HTTP header expect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeaderMatch {
    #[default]
    Str,
    Beg,
    End,
    Sub,
    Reg,
}

/// Answer analyses written for one protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomExpect {
    /// MySQL's initial handshake packet, not an error packet (`option mysql-check`).
    MysqlHandshake,
    /// The packet after the handshake, not an error packet (`option mysql-check user`).
    MysqlOk,
    /// An LDAPv3 bind response with result code 0 (`option ldap-check`).
    LdapBind,
    /// An SPOE agent's HELLO (or DISCONNECT) answering the check's (`option spop-check`).
    SpopHello,
    /// An agent's answer (state words, weight percentage, maxconn).
    Agent,
}

/// HAProxy's check status codes (`HCHK_STATUS_*`), as the stats page and logs show them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckStatus {
    /// `UNK`: unknown.
    Unknown,
    /// `INI`: initializing (no check finished yet).
    Init,
    /// `CHECKED`: no status change (an agent answer without a health word).
    Checked,
    /// `SOCKERR`: socket error.
    SockErr,
    /// `L4OK`: layer 4 check passed.
    L4Ok,
    /// `L4TOUT`: layer 4 timeout.
    L4Timeout,
    /// `L4CON`: layer 4 connection problem.
    L4Con,
    /// `L6OK`: layer 6 check passed (TLS).
    L6Ok,
    /// `L6TOUT`: layer 6 timeout.
    L6Timeout,
    /// `L6RSP`: layer 6 invalid response.
    L6Rsp,
    /// `L7TOUT`: layer 7 timeout.
    L7Timeout,
    /// `L7RSP`: layer 7 invalid response.
    L7Rsp,
    /// `L7OK`: layer 7 check passed.
    L7Ok,
    /// `L7OKC`: layer 7 check conditionally passed (404 with `disable-on-404`).
    L7OkCond,
    /// `L7STS`: layer 7 wrong status.
    L7Sts,
    /// `HANA`: health analyze (observed errors).
    Hana,
    /// `PROCERR`: an external check's program failed (non-zero exit, or a signal).
    ProcErr,
    /// `PROCTOUT`: an external check's program did not end in time.
    ProcTimeout,
    /// `PROCOK`: an external check's program exited with 0.
    ProcOk,
}

impl CheckStatus {
    /// The short name (`L4OK`, `L7STS`...).
    pub fn info(self) -> &'static str {
        use CheckStatus::*;
        match self {
            Unknown => "UNK",
            Init => "INI",
            Checked => "CHECKED",
            SockErr => "SOCKERR",
            L4Ok => "L4OK",
            L4Timeout => "L4TOUT",
            L4Con => "L4CON",
            L6Ok => "L6OK",
            L6Timeout => "L6TOUT",
            L6Rsp => "L6RSP",
            L7Timeout => "L7TOUT",
            L7Rsp => "L7RSP",
            L7Ok => "L7OK",
            L7OkCond => "L7OKC",
            L7Sts => "L7STS",
            Hana => "HANA",
            ProcErr => "PROCERR",
            ProcTimeout => "PROCTOUT",
            ProcOk => "PROCOK",
        }
    }

    /// The description logs use (`Layer4 connection problem`...).
    pub fn description(self) -> &'static str {
        use CheckStatus::*;
        match self {
            Unknown => "Unknown",
            Init => "Initializing",
            Checked => "No status change",
            SockErr => "Socket error",
            L4Ok => "Layer4 check passed",
            L4Timeout => "Layer4 timeout",
            L4Con => "Layer4 connection problem",
            L6Ok => "Layer6 check passed",
            L6Timeout => "Layer6 timeout",
            L6Rsp => "Layer6 invalid response",
            L7Timeout => "Layer7 timeout",
            L7Rsp => "Layer7 invalid response",
            L7Ok => "Layer7 check passed",
            L7OkCond => "Layer7 check conditionally passed",
            L7Sts => "Layer7 wrong status",
            Hana => "Health analyze",
            ProcErr => "External check error",
            ProcTimeout => "External check timeout",
            ProcOk => "External check passed",
        }
    }

    /// A layer 5-7 or external status (HAProxy's past `HCHK_STATUS_L57DATA`): logs add the
    /// response code or exit status (`code: 200`).
    pub fn has_code(self) -> bool {
        use CheckStatus::*;
        matches!(self, L7Ok | L7OkCond | L7Sts | ProcErr | ProcTimeout | ProcOk)
    }

    /// Parses the names `ok-status`/`error-status`/`tout-status` accept.
    pub fn parse(name: &str) -> Option<Self> {
        use CheckStatus::*;
        Some(match name {
            "L7OK" => L7Ok,
            "L7OKC" => L7OkCond,
            "L6OK" => L6Ok,
            "L4OK" => L4Ok,
            "L7RSP" => L7Rsp,
            "L7STS" => L7Sts,
            "L6RSP" => L6Rsp,
            "L4CON" => L4Con,
            "L7TOUT" => L7Timeout,
            "L6TOUT" => L6Timeout,
            "L4TOUT" => L4Timeout,
            _ => return None,
        })
    }
}
