//! `server` and `default-server` lines: server address forms (`host:port`, `[v6]:port`,
//! `ipv4@`/`ipv6@`, no port, `:+N`/`:-N` offsets, `unix@`/absolute paths) and the options
//! Fulcrum supports: load (`weight`, `maxconn`, `maxqueue`, `backup`, `cookie`, pools), state
//! (`disabled`, `id`, `init-addr`, `slowstart`), health checks (`check`, `inter`, `rise`,
//! `fall`, `port`, `addr`, `agent-*`...) and what live errors do (`observe`, `on-error`...).
//! Every bad option of a line is reported, not only the first.

use std::path::PathBuf;
use std::time::Duration;

use crate::args::{atol, parse_u32, Diags};
use crate::bind::{split_host_port, strip_family, Family};
use crate::duration::{read_time, TimeError};
use crate::keywords::{self, Status};
use crate::lexer::Line;
use crate::model::{
    AgentCheck, InitAddr, Mode, MuxProto, Observe, OnError, SendProxy, Server, ServerAddr,
    ServerCheck, ServerPort, ServerTls,
};

/// Server settings a `default-server` line sets for the `server` lines after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOpts {
    pub weight: Option<u32>,
    pub maxconn: Option<u32>,
    pub maxqueue: Option<u32>,
    pub backup: bool,
    pub disabled: bool,
    pub cookie: Option<String>,
    pub pool_max_conn: Option<i32>,
    pub pool_low_conn: Option<i32>,
    pub pool_purge_delay: Option<Duration>,
    pub id: Option<u32>,
    pub check: ServerCheck,
    pub agent: AgentCheck,
    pub slowstart: Option<Duration>,
    pub observe: Option<Observe>,
    pub on_error: OnError,
    pub error_limit: u32,
    pub shutdown_on_down: bool,
    pub shutdown_backups_on_up: bool,
    pub init_addr: Vec<InitAddr>,
    pub tls: ServerTls,
    pub send_proxy: SendProxy,
    /// `socks4 <addr>:<port>`: connections to the server go through this SOCKS4 proxy.
    pub socks4: Option<std::net::SocketAddr>,
    /// `tcp-ut <time>`: `TCP_USER_TIMEOUT` on connections to the server (milliseconds).
    pub tcp_ut: Option<u32>,
    /// `tfo` (`no-tfo`): TCP Fast Open on connections to the server.
    pub tfo: bool,
    /// `non-stick` (`stick`): streams served by the server are not stored in stick tables.
    pub non_stick: bool,
    /// `max-reuse <n>` as HAProxy reads it (`atoi`; negative: no limit).
    pub max_reuse: i32,
    /// `proto h1|h2`: the protocol spoken to the server whatever ALPN says.
    pub proto: Option<MuxProto>,
    /// `check-proto h1|h2`: the protocol of HTTP health checks (the server's by default).
    pub check_proto: Option<MuxProto>,
    /// `ws h1|h2` (`None`: `auto`).
    pub ws: Option<MuxProto>,
    pub minconn: Option<u32>,
    pub redir: Option<String>,
    pub track: Option<String>,
    pub source: Option<crate::source::Source>,
}

impl Default for ServerOpts {
    fn default() -> Self {
        ServerOpts {
            weight: None,
            maxconn: None,
            maxqueue: None,
            backup: false,
            disabled: false,
            cookie: None,
            pool_max_conn: None,
            pool_low_conn: None,
            pool_purge_delay: None,
            id: None,
            check: ServerCheck::default(),
            agent: AgentCheck::default(),
            slowstart: None,
            observe: None,
            on_error: OnError::default(),
            error_limit: 10,
            shutdown_on_down: false,
            shutdown_backups_on_up: false,
            init_addr: vec![InitAddr::Last, InitAddr::Libc],
            tls: ServerTls::default(),
            send_proxy: SendProxy::default(),
            socks4: None,
            tcp_ut: None,
            tfo: false,
            non_stick: false,
            max_reuse: -1,
            proto: None,
            check_proto: None,
            ws: None,
            minconn: None,
            redir: None,
            track: None,
            source: None,
        }
    }
}

/// The proxy a `server` line belongs to, as its options need it.
#[derive(Clone, Copy, Debug)]
pub struct ServerContext<'a> {
    pub proxy: &'a str,
    pub mode: Mode,
}

/// Parses a `default-server` line into `opts`.
pub fn parse_default_server(line: &Line, mode: Mode, opts: &mut ServerOpts, diags: &mut Diags) {
    let mut new = opts.clone();
    let cx = Parse {
        line,
        who: "'default-server'".into(),
        name: "",
        mode,
        default: true,
        warnings: Default::default(),
    };
    if cx.apply_all(1, &mut new, diags) {
        *opts = new;
    }
}

/// Parses a `server` line of proxy `cx.proxy` with the current `default-server` settings.
pub fn parse_server(
    line: &Line,
    cx: ServerContext<'_>,
    defaults: &ServerOpts,
    diags: &mut Diags,
) -> Option<Server> {
    let (name, addr_text) = (line.arg(1), line.arg(2));
    if name.is_empty() || addr_text.is_empty() {
        diags.alert(line, "'server' expects <name> and <addr>[:<port>] as arguments.");
        return None;
    }
    let who = format!("'server {}/{name}'", cx.proxy);
    if keywords::find(keywords::SERVER_OPTIONS, addr_text).is_some() {
        let msg = format!("{who} : missing address ('{addr_text}' is a server option); expects <name> <addr>[:<port>] [options].");
        diags.alert(line, msg);
        return None;
    }
    let addr = match parse_server_addr(addr_text) {
        Ok(a) => a,
        Err(msg) => {
            diags.alert(line, format!("{who} : {msg}"));
            return None;
        }
    };
    let mut o = defaults.clone();
    // `id` is never inherited from `default-server` (HAProxy refuses it there).
    o.id = None;
    let p = Parse { line, who, name, mode: cx.mode, default: false, warnings: Default::default() };
    if !p.apply_all(3, &mut o, diags) {
        return None;
    }
    // HAProxy: without `agent-port`, the agent is asked on the check `port`.
    if o.agent.port.is_none() {
        o.agent.port = o.check.port;
    }
    if o.check.port.is_none() {
        o.check.port = o.check.addr_port;
    }
    if o.check.enabled && o.track.is_some() {
        diags.alert(
            line,
            format!("{} : unable to enable checks and tracking at the same time!", p.who),
        );
        return None;
    }
    if o.agent.enabled && o.agent.port.is_none() {
        let msg = format!("server {name} does not have agent port. Agent check has been disabled.");
        diags.alert(line, msg);
        return None;
    }
    Some(Server {
        name: name.to_string(),
        span: line.span.clone(),
        addr,
        weight: o.weight.unwrap_or(1),
        maxconn: o.maxconn,
        maxqueue: o.maxqueue,
        backup: o.backup,
        disabled: o.disabled,
        cookie: o.cookie,
        pool_max_conn: o.pool_max_conn,
        pool_low_conn: o.pool_low_conn,
        pool_purge_delay: o.pool_purge_delay,
        id: o.id,
        check: o.check,
        agent: o.agent,
        slowstart: o.slowstart,
        observe: o.observe,
        on_error: o.on_error,
        error_limit: o.error_limit,
        shutdown_on_down: o.shutdown_on_down,
        shutdown_backups_on_up: o.shutdown_backups_on_up,
        init_addr: o.init_addr,
        tls: o.tls,
        send_proxy: o.send_proxy,
        socks4: o.socks4,
        tcp_ut: o.tcp_ut,
        tfo: o.tfo,
        non_stick: o.non_stick,
        max_reuse: u32::try_from(o.max_reuse).ok(),
        proto: o.proto,
        check_proto: o.check_proto.or(o.proto),
        ws: o.ws,
        minconn: o.minconn,
        redir: o.redir,
        track: o.track,
        source: o.source,
    })
}

/// One line's options being applied.
struct Parse<'a> {
    line: &'a Line,
    /// `'server be/s'` or `'default-server'`, the prefix of every message.
    who: String,
    /// The server's name (empty on `default-server`), for HAProxy's "of server %s" messages.
    name: &'a str,
    mode: Mode,
    default: bool,
    /// HAProxy's warnings about time values (`15min`), reported with the line.
    warnings: std::cell::RefCell<Vec<String>>,
}

/// How many words an option took, or why it was refused.
type Applied = Result<usize, String>;

impl Parse<'_> {
    /// Applies the options from word `start` on, reporting every bad one; false if any was.
    fn apply_all(&self, start: usize, o: &mut ServerOpts, diags: &mut Diags) -> bool {
        let mut ok = true;
        let mut i = start;
        while i < self.line.words.len() {
            match self.apply(i, o) {
                Ok(n) => i += n,
                Err(msg) => {
                    diags.alert(self.line, format!("{} : {msg}", self.who));
                    ok = false;
                    // Skip the value of an option known to take one (and a `source`'s
                    // `usesrc` and `interface`, which belong to it).
                    let opt = self.line.arg(i);
                    i += 1 + usize::from(takes_value(opt));
                    while matches!(opt, "source" | "usesrc")
                        && matches!(self.line.arg(i), "usesrc" | "interface")
                    {
                        i += 2;
                    }
                }
            }
        }
        for w in self.warnings.take() {
            diags.warning(self.line, w);
        }
        ok
    }

    /// Reads a time value as HAProxy does, keeping its warning about trailing characters.
    fn time(&self, val: &str) -> Result<Duration, TimeError> {
        let t = read_time(val)?;
        if let Some(w) = t.warning {
            self.warnings.borrow_mut().push(w);
        }
        Ok(t.value)
    }

    fn apply(&self, i: usize, o: &mut ServerOpts) -> Applied {
        let opt = self.line.arg(i);
        let val = self.line.arg(i + 1);
        let has_val = i + 1 < self.line.words.len();
        if takes_value(opt) && !has_val {
            return Err(missing_value(opt));
        }
        match opt {
            "weight" => {
                let w = int(opt, val)?;
                if w > 256 {
                    return Err(format!(
                        "weight of server {} is not within 0 and 256 ({w}).",
                        self.name
                    ));
                }
                o.weight = Some(w);
            }
            "maxconn" => o.maxconn = Some(int(opt, val)?),
            "maxqueue" => o.maxqueue = Some(int(opt, val)?),
            "cookie" => o.cookie = Some(val.to_string()),
            "pool-max-conn" => match val.parse::<i32>() {
                Ok(v) if v >= -1 => o.pool_max_conn = Some(v),
                Ok(_) => return Err("'pool-max-conn' must be >= -1.".into()),
                Err(_) => {
                    return Err(format!(
                        "'pool-max-conn' expects an integer argument, got '{val}'."
                    ))
                }
            },
            // As HAProxy reads it (`atoi`): a sign and leading digits, else 0.
            "pool-low-conn" => o.pool_low_conn = Some(atoi(val)),
            "pool-purge-delay" => match self.time(val) {
                Ok(d) => o.pool_purge_delay = Some(d),
                Err(TimeError::BadChar(c)) => {
                    return Err(format!(
                        "unexpected character '{c}' in argument to <pool-purge-delay>.."
                    ))
                }
                Err(_) => return Err(format!("invalid value '{val}' for 'pool-purge-delay'.")),
            },
            "id" => o.id = Some(self.id(val)?),
            "port" => o.check.port = Some(port(opt, val)?),
            "addr" => {
                // HAProxy takes `<ip>:<port>` too: the port is the checks' when `port` is not.
                let (host, port) = match check_host_text(opt, val) {
                    Ok(h) => (h, None),
                    Err(e) => match crate::bind::split_host_port(val) {
                        Some((h, p)) if !p.is_empty() => {
                            let host = check_host_text(opt, h).map_err(|_| e)?;
                            if let Some(c) = p.chars().find(|c| !c.is_ascii_digit()) {
                                return Err(format!("'{opt}' : invalid character '{c}' in port number '{p}' in '{val}'."));
                            }
                            (host, Some(port(opt, p)?))
                        }
                        _ => return Err(e),
                    },
                };
                o.check.addr = Some(host);
                o.check.addr_port = port;
            }
            // Websocket to servers: over HTTP/1.1, the only protocol spoken to them today.
            "ws" => {
                o.ws = match val {
                    "auto" => None,
                    "h1" => Some(MuxProto::H1),
                    "h2" => Some(MuxProto::H2),
                    _ => return Err(format!("'{opt}' has to be 'auto', 'h1' or 'h2'")),
                }
            }
            "proto" | "check-proto" => {
                let p = match val {
                    "h1" => MuxProto::H1,
                    "h2" => MuxProto::H2,
                    "fcgi" if opt == "proto" => MuxProto::Fcgi,
                    "fcgi" | "none" | "quic" => {
                        return Err(format!("'{opt} {val}' is not supported yet"))
                    }
                    _ => return Err(format!("'{opt}' :  unknown MUX protocol '{val}'")),
                };
                if opt == "proto" {
                    o.proto = Some(p);
                } else {
                    o.check_proto = Some(p);
                }
            }
            "socks4" => match val.parse::<std::net::SocketAddr>() {
                Ok(a) => o.socks4 = Some(a),
                Err(_) if !val.contains(':') => {
                    return Err(format!("'socks4 {val}' : missing port specification in '{val}'."))
                }
                Err(_) => {
                    let m = format!("'socks4 {val}' : invalid address (an IP address and its port; host names are not supported yet).");
                    return Err(m);
                }
            },
            "inter" => o.check.inter = self.delay(opt, val)?,
            "tcp-ut" => o.tcp_ut = Some(crate::bind::user_timeout(opt, val)?),
            "max-reuse" => o.max_reuse = atoi(val),
            // Read by rings' servers only (`logfwd`); checked here as HAProxy checks it.
            "log-proto" if !matches!(val, "legacy" | "octet-count") => {
                return Err(format!(
                    "'{opt}' expects one of 'legacy' or 'octet-count' but got '{val}'."
                ))
            }
            "log-proto" => {}
            "fastinter" => o.check.fastinter = Some(self.delay(opt, val)?),
            "downinter" => o.check.downinter = Some(self.delay(opt, val)?),
            "rise" | "fall" => {
                let n = positive(opt, val)?;
                if opt == "rise" {
                    o.check.rise = n;
                } else {
                    o.check.fall = n;
                }
            }
            "agent-port" => o.agent.port = Some(port(opt, val)?),
            "agent-addr" => o.agent.addr = Some(check_host_text(opt, val)?),
            "agent-inter" => o.agent.inter = self.delay(opt, val)?,
            "agent-send" => o.agent.send = Some(val.to_string()),
            "slowstart" => o.slowstart = self.slowstart(val)?,
            "observe" => o.observe = self.observe(val)?,
            "on-error" => o.on_error = on_error(val)?,
            "error-limit" => o.error_limit = error_limit(val)?,
            "on-marked-down" => match val {
                "shutdown-sessions" => o.shutdown_on_down = true,
                _ => return Err(format!("'{opt}' expects 'shutdown-sessions' but got '{val}'")),
            },
            "on-marked-up" => match val {
                "shutdown-backup-sessions" => o.shutdown_backups_on_up = true,
                _ => {
                    return Err(format!(
                        "'{opt}' expects 'shutdown-backup-sessions' but got '{val}'"
                    ))
                }
            },
            "init-addr" => o.init_addr = init_addr(val)?,
            // As HAProxy reads it (`atol`).
            "minconn" => o.minconn = Some(u32::try_from(atol(val)).unwrap_or(0)),
            "redir" => o.redir = Some(val.to_string()),
            "track" => o.track = Some(val.to_string()),
            "source" => {
                let (src, n) =
                    crate::source::parse(&self.line.words, i, crate::source::At::Server)?;
                o.source = Some(src);
                return Ok(n);
            }
            "usesrc" => return Err("'usesrc' only allowed after a 'source' statement.".into()),
            _ if crate::tls::is_server_option(opt) => {
                let r = crate::tls::server_option(opt, val, &mut o.tls, &mut o.send_proxy);
                return r.unwrap_or(Ok(1));
            }
            _ => {
                flag(opt, o)?;
                return Ok(1);
            }
        }
        Ok(2)
    }

    /// `id <n>`: HAProxy's `'id' : custom id has to be > 0`.
    fn id(&self, val: &str) -> Result<u32, String> {
        if self.default {
            return Err("'id' option is not accepted in default-server sections".into());
        }
        match u32::try_from(atol(val)) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err("'id' : custom id has to be > 0".into()),
        }
    }

    /// `inter`-like delays, with HAProxy's messages (which name 'agent-inter' for all of them).
    fn delay(&self, opt: &str, val: &str) -> Result<Duration, String> {
        let name = self.name;
        match self.time(val) {
            Ok(d) if d.is_zero() => Err(format!("invalid value 0 for argument '{opt}' of server {name}.")),
            Ok(d) if d < Duration::from_millis(1) => Err(format!("timer underflow in argument <{val}> to <{opt}> of server {name}, minimum non-null value is 1 ms.")),
            Ok(d) => Ok(d),
            Err(TimeError::Overflow) => Err(format!("timer overflow in argument <{val}> to <{opt}> of server {name}, maximum value is 2147483647 ms (~24.8 days).")),
            Err(TimeError::BadChar(c)) => Err(format!("unexpected character '{c}' in 'agent-inter' argument of server {name}.")),
            Err(TimeError::Missing) => Err(format!("'{opt}' expects a delay as argument.")),
        }
    }

    /// `slowstart <time>`: kept in whole seconds, rounded up, as HAProxy keeps it (0: none).
    fn slowstart(&self, val: &str) -> Result<Option<Duration>, String> {
        let name = self.name;
        let d = match self.time(val) {
            Ok(d) => d,
            Err(TimeError::Overflow) => return Err(format!("overflow in argument <{val}> to <slowstart> of server {name}, maximum value is 2147483647 ms (~24.8 days).")),
            Err(TimeError::BadChar(c)) => return Err(format!("unexpected character '{c}' in 'slowstart' argument of server {name}.")),
            Err(TimeError::Missing) => return Err(format!("unexpected character '\\0' in 'slowstart' argument of server {name}.")),
        };
        let secs = d.as_millis().div_ceil(1000) as u64;
        Ok((secs > 0).then(|| Duration::from_secs(secs)))
    }

    fn observe(&self, val: &str) -> Result<Option<Observe>, String> {
        match val {
            "none" => Ok(None),
            "layer4" => Ok(Some(Observe::Layer4)),
            "layer7" if self.mode != Mode::Http => {
                Err("'layer7' can only be used in http proxies.".into())
            }
            "layer7" => Ok(Some(Observe::Layer7)),
            _ => {
                Err(format!("'observe' expects one of 'none', 'layer4', 'layer7' but got '{val}'"))
            }
        }
    }
}

/// Options followed by a value.
/// C's `atoi`: [`crate::args::atol`] into an `int` (saturating).
fn atoi(s: &str) -> i32 {
    crate::args::atol(s).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

fn takes_value(opt: &str) -> bool {
    matches!(
        opt,
        "weight"
            | "maxconn"
            | "maxqueue"
            | "cookie"
            | "pool-max-conn"
            | "pool-low-conn"
            | "pool-purge-delay"
            | "id"
            | "port"
            | "addr"
            | "inter"
            | "fastinter"
            | "downinter"
            | "rise"
            | "fall"
            | "agent-port"
            | "agent-addr"
            | "agent-inter"
            | "agent-send"
            | "slowstart"
            | "observe"
            | "on-error"
            | "error-limit"
            | "on-marked-down"
            | "on-marked-up"
            | "init-addr"
            | "socks4"
            | "ws"
            | "proto"
            | "check-proto"
            | "redir"
            | "track"
            | "source"
            | "usesrc"
            | "tcp-ut"
            | "max-reuse"
            | "log-proto"
    ) || NOT_YET_WITH_VALUE.contains(&opt)
        || crate::tls::SERVER_WITH_VALUE.contains(&opt)
}

/// Server options Fulcrum does not support yet that take a value (HAProxy skips it too).
const NOT_YET_WITH_VALUE: &[&str] = &[
    "alpn",
    "ca-file",
    "check-alpn",
    "check-sni",
    "ciphers",
    "ciphersuites",
    "crl-file",
    "crt",
    "curves",
    "namespace",
    "npn",
    "proxy-v2-options",
    "resolve-net",
    "resolve-opts",
    "resolve-prefer",
    "resolvers",
    "sigalgs",
    "sni",
    "ssl-max-ver",
    "ssl-min-ver",
    "verify",
    "verifyhost",
];

/// HAProxy's message for an option whose value is missing.
fn missing_value(opt: &str) -> String {
    match opt {
        "inter" | "fastinter" | "downinter" | "agent-inter" => {
            format!("'{opt}' expects a delay as argument.")
        }
        "port" | "agent-port" => format!("'{opt}' expects a port number as argument."),
        "agent-send" => format!("'{opt}' expects a string as argument."),
        "log-proto" => format!("'{opt}' expects one of 'legacy' or 'octet-count' but got ''."),
        "observe" => format!("'{opt}' expects <mode> as argument."),
        "rise" | "fall" | "error-limit" | "weight" | "maxconn" | "maxqueue" => {
            format!("'{opt}' expects an integer argument.")
        }
        "id" => format!("'{opt}' : expects an integer argument"),
        "ws" => format!("'{opt}' has to be 'auto', 'h1' or 'h2'"),
        "proto" | "check-proto" => format!("'{opt}' : missing value"),
        "tcp-ut" => format!("'{opt}' : missing TCP User Timeout value"),
        "redir" => "'redir' expects <prefix> as argument..".into(),
        "track" => "'track' expects [<proxy>/]<server> as argument..".into(),
        "source" => "'source' expects <addr>[:<port>[-<port>]], and optionally 'usesrc' <addr>, and 'interface' <name> as argument..".into(),
        _ => format!("'{opt}' expects <value> as argument.."),
    }
}

fn int(opt: &str, val: &str) -> Result<u32, String> {
    parse_u32(val).ok_or_else(|| format!("'{opt}' expects an integer argument, got '{val}'."))
}

/// `rise`/`fall`: HAProxy reads them with `atol` and wants them above 0.
fn positive(opt: &str, val: &str) -> Result<u32, String> {
    match u32::try_from(atol(val)) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{opt}' has to be > 0.")),
    }
}

fn port(opt: &str, val: &str) -> Result<u16, String> {
    match val.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("invalid port '{val}' for '{opt}' (expects 1-65535).")),
    }
}

/// `addr`/`agent-addr`: an IP address or host name, resolved by the engine.
fn check_host_text(opt: &str, val: &str) -> Result<String, String> {
    let (family, host) = strip_family(val)
        .map_err(|p| format!("address family '{p}' is not supported yet in '{val}'"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match check_host(host, family) {
        Some(()) if !host.is_empty() => Ok(host.to_string()),
        _ => Err(format!("'{opt}' : invalid address '{val}'.")),
    }
}

fn on_error(val: &str) -> Result<OnError, String> {
    Ok(match val {
        "fastinter" => OnError::Fastinter,
        "fail-check" => OnError::FailCheck,
        "sudden-death" => OnError::SuddenDeath,
        "mark-down" => OnError::MarkDown,
        _ => {
            return Err(format!(
            "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got '{val}'"
        ))
        }
    })
}

fn error_limit(val: &str) -> Result<u32, String> {
    match u32::try_from(atol(val)) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("error-limit has to be > 0.".into()),
    }
}

/// `init-addr <method>[,<method>...]`.
fn init_addr(val: &str) -> Result<Vec<InitAddr>, String> {
    let mut list = Vec::new();
    for p in val.split(',') {
        let m = match p {
            "libc" => InitAddr::Libc,
            "last" => InitAddr::Last,
            "none" => InitAddr::None,
            _ => match p.parse::<std::net::IpAddr>() {
                Ok(ip) if list.iter().any(|m| matches!(m, InitAddr::Ip(_))) => {
                    let _ = ip;
                    return Err(format!(
                        "'init-addr' : initial address already specified, cannot add '{p}'."
                    ));
                }
                Ok(ip) => InitAddr::Ip(ip),
                Err(_) => {
                    return Err(format!("'init-addr' : unknown init-addr method '{p}', supported methods are 'libc', 'last', 'none'."))
                }
            },
        };
        if list.contains(&m) || list.len() >= 4 {
            return Err(format!(
                "'init-addr' : too many init-addr methods when trying to add '{p}'"
            ));
        }
        list.push(m);
    }
    Ok(list)
}

/// Flag options (no value); reports unknown and not-yet options.
fn flag(opt: &str, o: &mut ServerOpts) -> Result<(), String> {
    match opt {
        "backup" => o.backup = true,
        "no-backup" => o.backup = false,
        "disabled" => o.disabled = true,
        "enabled" => o.disabled = false,
        "check" => o.check.enabled = true,
        "no-check" => o.check.enabled = false,
        "check-send-proxy" => o.check.send_proxy = true,
        "check-via-socks4" => o.check.via_socks4 = true,
        "no-check-send-proxy" => o.check.send_proxy = false,
        "tfo" => o.tfo = true,
        "no-tfo" => o.tfo = false,
        "non-stick" => o.non_stick = true,
        "stick" => o.non_stick = false,
        "agent-check" => o.agent.enabled = true,
        "no-agent-check" => o.agent = AgentCheck::default(),
        _ => {
            return Err(match keywords::find(keywords::SERVER_OPTIONS, opt).map(|k| k.status) {
                Some(Status::NotYet | Status::Obsolete(_)) => {
                    format!("'{opt}' is not supported yet")
                }
                _ => match crate::suggest::best_match(opt, crate::suggest::Place::Server) {
                    Some(best) => format!("unknown keyword '{opt}'; did you mean '{best}' maybe ?"),
                    None => format!("unknown keyword '{opt}'."),
                },
            })
        }
    }
    Ok(())
}

/// Parses a server address as written; host names are kept for the engine to resolve.
pub fn parse_server_addr(text: &str) -> Result<ServerAddr, String> {
    let expanded = crate::addr_env::expand(text);
    let text: &str = &expanded;
    if text.starts_with("fd@") || text.starts_with("sockpair@") {
        return Err(format!("a file descriptor is not acceptable here in '{text}'"));
    }
    if let Some(path) = text.strip_prefix("unix@").or(text.starts_with('/').then_some(text)) {
        if path.is_empty() {
            return Err(format!("missing path in '{text}'"));
        }
        return Ok(ServerAddr::Unix(PathBuf::from(path)));
    }
    let (family, rest) = strip_family(text)
        .map_err(|p| format!("address family '{p}' is not supported yet in '{text}'"))?;
    // As HAProxy: without brackets the last colon always starts the port (`::1:80`).
    let (host, port_text) = match split_host_port(rest) {
        Some(hp) => hp,
        // An opening bracket never closed (`[::1:80`): HAProxy takes the last colon as the
        // port's and cannot resolve the rest.
        None if rest.starts_with('[') && !rest.contains(']') => {
            let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
            return Err(format!("could not resolve address '{host}'"));
        }
        None if rest.starts_with('[') => (rest.trim_start_matches('[').trim_end_matches(']'), ""),
        None => (rest, ""),
    };
    if host.is_empty() {
        return Err(format!("missing address in '{text}'"));
    }
    check_host(host, family).ok_or_else(|| format!("invalid address '{host}' in '{text}'"))?;
    let port = parse_port(port_text, text)?;
    Ok(ServerAddr::Inet { host: host.to_string(), port })
}

fn check_host(host: &str, family: Family) -> Option<()> {
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if family == Family::V4 && !ip.is_ipv4() => None,
        Ok(ip) if family == Family::V6 && !ip.is_ipv6() => None,
        Ok(_) => Some(()),
        Err(_) => {
            let ok =
                host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
            ok.then_some(())
        }
    }
}

fn parse_port(p: &str, text: &str) -> Result<ServerPort, String> {
    if p.is_empty() {
        return Ok(ServerPort::Same);
    }
    if p.trim_start_matches(['+', '-']).contains('-') {
        return Err(format!("port range not permitted here in '{text}'"));
    }
    let (sign, digits) = match p.as_bytes()[0] {
        b'+' => (1, &p[1..]),
        b'-' => (-1, &p[1..]),
        _ => (0, p),
    };
    if let Some(bad) = digits.chars().find(|c| !c.is_ascii_digit()) {
        return Err(format!("invalid character '{bad}' in port number '{p}' in '{text}'"));
    }
    let value: u32 = digits.parse().map_err(|_| format!("invalid port '{p}'"))?;
    if value > 65535 {
        return Err(format!("invalid port '{p}'"));
    }
    Ok(match sign {
        0 if value == 0 => ServerPort::Same,
        0 => ServerPort::Fixed(value as u16),
        s => ServerPort::Offset(s * value as i32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn inet(host: &str, port: ServerPort) -> ServerAddr {
        ServerAddr::Inet { host: host.into(), port }
    }

    fn addr(s: &str) -> ServerAddr {
        parse_server_addr(s).expect(s)
    }

    #[test]
    fn atoi_reads_as_c_does() {
        for (s, n) in [("4", 4), ("7x", 7), ("abc", 0), ("-3", -3), ("+2", 2), ("", 0)] {
            assert_eq!(atoi(s), n, "{s:?}");
        }
        assert_eq!(atoi("99999999999"), i32::MAX);
    }

    #[test]
    fn address_forms() {
        assert_eq!(addr("10.0.0.1:80"), inet("10.0.0.1", ServerPort::Fixed(80)));
        assert_eq!(addr("app.example:8080"), inet("app.example", ServerPort::Fixed(8080)));
        assert_eq!(addr("[::1]:80"), inet("::1", ServerPort::Fixed(80)));
        assert_eq!(addr("[::1]"), inet("::1", ServerPort::Same));
        assert!(parse_server_addr("::1").is_err(), "last colon is the port: use [::1]");
        assert_eq!(addr("ipv6@::1:80"), inet("::1", ServerPort::Fixed(80)));
        assert_eq!(addr("ipv4@10.0.0.1"), inet("10.0.0.1", ServerPort::Same));
        assert_eq!(addr("10.0.0.1"), inet("10.0.0.1", ServerPort::Same));
        assert_eq!(addr("10.0.0.1:+1000"), inet("10.0.0.1", ServerPort::Offset(1000)));
        assert_eq!(addr("10.0.0.1:-10"), inet("10.0.0.1", ServerPort::Offset(-10)));
        assert_eq!(addr("unix@/run/app.sock"), ServerAddr::Unix("/run/app.sock".into()));
        assert_eq!(addr("/run/app.sock"), ServerAddr::Unix("/run/app.sock".into()));
    }

    #[test]
    fn address_errors() {
        let e = |s: &str| parse_server_addr(s).expect_err(s);
        assert_eq!(e("1.2.3.4:x"), "invalid character 'x' in port number 'x' in '1.2.3.4:x'");
        assert_eq!(e("1.2.3.4:70000"), "invalid port '70000'");
        assert_eq!(e("1.2.3.4:80-90"), "port range not permitted here in '1.2.3.4:80-90'");
        assert_eq!(e("fd@3"), "a file descriptor is not acceptable here in 'fd@3'");
        assert_eq!(e(":80"), "missing address in ':80'");
        assert_eq!(e("ipv4@::1:80"), "invalid address '::1' in 'ipv4@::1:80'");
        assert_eq!(e("a/b:80"), "invalid address 'a/b' in 'a/b:80'");
    }

    fn server(text: &str, defaults: &ServerOpts) -> (Option<Server>, Vec<String>) {
        let (lines, _) = lex_source("s.cfg", text, &|_| None);
        let mut d = Diags::default();
        let cx = ServerContext { proxy: "be", mode: Mode::Http };
        let s = parse_server(&lines[0], cx, defaults, &mut d);
        (s, d.list.iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn options_and_defaults() {
        let (lines, _) =
            lex_source("s.cfg", "default-server weight 5 maxconn 10 backup", &|_| None);
        let mut opts = ServerOpts::default();
        let mut d = Diags::default();
        parse_default_server(&lines[0], Mode::Http, &mut opts, &mut d);
        assert!(d.list.is_empty());
        let (s, d) = server("server a 1.2.3.4:80 maxqueue 7 port 9000 no-backup disabled", &opts);
        assert!(d.is_empty(), "{d:?}");
        let s = s.expect("server");
        assert_eq!((s.weight, s.maxconn, s.maxqueue), (5, Some(10), Some(7)));
        assert_eq!((s.backup, s.disabled, s.check.port), (false, true, Some(9000)));
        let s = server("server b 1.2.3.4:80 enabled", &opts).0.expect("server");
        assert_eq!((s.weight, s.backup, s.disabled), (5, true, false));
        let s = server("server c 1.2.3.4:80", &ServerOpts::default()).0.expect("server");
        assert_eq!(s.weight, 1);
        let line =
            "server d 1.2.3.4:80 minconn 3 source 10.0.0.1:1000-1009 usesrc client track b2/x";
        let (s, d) = server(line, &opts);
        assert!(d.is_empty(), "{d:?}");
        let s = s.expect("server");
        assert_eq!((s.minconn, s.track.as_deref()), (Some(3), Some("b2/x")));
        let src = s.source.expect("source");
        assert_eq!((src.addr.port(), src.port_high), (1000, Some(1009)));
        assert_eq!(src.usesrc, Some(crate::source::UseSrc::Client));
        let e = server("server e 1.2.3.4:80 redir http://img.example.com", &opts).0;
        assert_eq!(e.expect("server").redir.as_deref(), Some("http://img.example.com"));
    }

    #[test]
    fn option_errors() {
        let none = ServerOpts::default();
        assert_eq!(
            server("server s 1.2.3.4:80 namespace n", &none).1,
            ["'server be/s' : 'namespace' is not supported yet"]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 track", &none).1,
            ["'server be/s' : 'track' expects [<proxy>/]<server> as argument.."]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 track x check", &none).1,
            ["'server be/s' : unable to enable checks and tracking at the same time!"]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 usesrc client", &none).1,
            ["'server be/s' : 'usesrc' only allowed after a 'source' statement."]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 bogus", &none).1,
            ["'server be/s' : unknown keyword 'bogus'."]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 weight 257", &none).1,
            ["'server be/s' : weight of server s is not within 0 and 256 (257)."]
        );
        assert_eq!(
            server("server s", &none).1,
            ["'server' expects <name> and <addr>[:<port>] as arguments."]
        );
        assert_eq!(server("server s 1.2.3.4 weight x", &none).1.len(), 1);
    }
}
