//! Lines of `defaults`, `frontend`, `backend` and `listen` sections: keyword lookup in the
//! §4.1 matrix (section placement, "not supported yet", "unknown keyword"), then the parsers
//! for `mode`, `maxconn`, `timeout`, `balance`, `hash-type`, `default_backend`, `use_backend`,
//! `retries`, `option redispatch|abortonclose` and the legacy `contimeout`-style timeouts.

use crate::args::{int_arg, no_extra, parse_u32, Diags};
use crate::bind::parse_bind;
use crate::duration::{parse_time, time_error_message};
use crate::keywords::{self, Keyword, Status, B, D, F, L};
use crate::lexer::Line;
use crate::model::*;
use crate::server::{parse_default_server, parse_server, ServerOpts};

/// What kind of section is being filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Defaults,
    Proxy(ProxyKind),
}

impl Section {
    pub fn keyword(self) -> &'static str {
        match self {
            Section::Defaults => "defaults",
            Section::Proxy(k) => k.keyword(),
        }
    }
    fn bit(self) -> u8 {
        match self {
            Section::Defaults => D,
            Section::Proxy(ProxyKind::Frontend) => F,
            Section::Proxy(ProxyKind::Listen) => L,
            Section::Proxy(ProxyKind::Backend) => B,
        }
    }
}

/// HAProxy's name for a proxy type in messages: `frontend`, `backend` or `proxy` (listen).
pub fn type_word(kind: ProxyKind) -> &'static str {
    match kind {
        ProxyKind::Frontend => "frontend",
        ProxyKind::Backend => "backend",
        ProxyKind::Listen => "proxy",
    }
}

/// A section being parsed: the proxy settings so far plus what only parsing needs.
#[derive(Clone, Debug)]
pub struct ProxyBuild {
    pub proxy: Proxy,
    pub section: Section,
    pub default_server: ServerOpts,
}

impl ProxyBuild {
    /// A fresh `defaults` section with HAProxy's built-in settings.
    pub fn new_defaults(name: &str, span: Span) -> Self {
        let proxy = Proxy {
            name: name.to_string(),
            span,
            kind: ProxyKind::Listen,
            mode: Mode::Tcp,
            binds: Vec::new(),
            maxconn: None,
            timeouts: Timeouts::default(),
            balance: Balance::default(),
            hash_type: HashType::default(),
            servers: Vec::new(),
            default_backend: None,
            use_backends: Vec::new(),
            retries: 3,
            redispatch: false,
            abortonclose: false,
            acls: Vec::new(),
            http_request: Vec::new(),
            http_response: Vec::new(),
            http_after_response: Vec::new(),
            redirects: Vec::new(),
            tcp_request_connection: Vec::new(),
            tcp_request_content: Vec::new(),
            inspect_delay: None,
            monitor_uri: None,
            monitor_fail: Vec::new(),
            errors: Default::default(),
            forwardfor: None,
            originalto: None,
            http_conn_mode: HttpConnMode::default(),
            http_buffer_request: false,
            http_reuse: HttpReuse::default(),
            cookie: None,
            httplog: false,
            dontlognull: false,
        };
        ProxyBuild { proxy, section: Section::Defaults, default_server: ServerOpts::default() }
    }

    /// A proxy starting as a copy of the `defaults` it inherits from.
    pub fn from_defaults(defaults: &ProxyBuild, kind: ProxyKind, name: &str, span: Span) -> Self {
        let mut b = defaults.clone();
        b.proxy.name = name.to_string();
        b.proxy.span = span;
        b.proxy.kind = kind;
        b.section = Section::Proxy(kind);
        b
    }
}

/// Parses one line of a proxy or defaults section into `b`.
pub fn parse_line(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let negated = line.arg(0) == "no";
    let words =
        if negated || line.arg(0) == "default" { &line.words[1..] } else { &line.words[..] };
    let first = words.first().map(String::as_str).unwrap_or("");
    if (negated || line.arg(0) == "default") && first != "option" && first != "log" {
        return diags.alert(line, "negation/default currently supported only for options, log, busy-polling, set-dumpable, strict-limits, insecure-fork-wanted and numa-cpu-mapping.");
    }
    if first == "option" && words.len() < 2 {
        return diags.alert(line, "'option' expects an option name.");
    }
    let Some(kw) = keywords::find_proxy(words) else {
        return unknown(b, line, words, diags);
    };
    if !placement_ok(b, line, kw, diags) {
        return;
    }
    match kw.status {
        Status::NotYet => return diags.alert(line, format!("'{}' is not supported yet", kw.name)),
        Status::Obsolete(why) => return diags.alert(line, why),
        Status::Supported | Status::Partial(_) => {}
    }
    dispatch(b, line, kw.name, negated, diags);
}

fn unknown(b: &ProxyBuild, line: &Line, words: &[String], diags: &mut Diags) {
    let first = words[0].as_str();
    let second = words.get(1).map(String::as_str).unwrap_or("");
    let msg = match first {
        "option" => format!("unknown option '{second}'."),
        "timeout" => format!("'timeout' supports 'client', 'server', 'connect', 'check', 'queue', 'http-keep-alive', 'http-request', 'tunnel', 'tarpit', 'client-fin' and 'server-fin' (got '{second}')"),
        _ if keywords::is_proxy_family(first) => format!("'{first}' is not supported yet"),
        _ => format!("unknown keyword '{first}' in '{}' section", b.section.keyword()),
    };
    diags.alert(line, msg);
}

/// Checks the §4.1 matrix. HAProxy refuses misplaced keywords in `defaults` and misplaced
/// `server`/`default-server`, and ignores other misplaced keywords with a warning.
fn placement_ok(b: &ProxyBuild, line: &Line, kw: &Keyword, diags: &mut Diags) -> bool {
    if kw.sections & b.section.bit() != 0 {
        return true;
    }
    let Section::Proxy(kind) = b.section else {
        diags.alert(line, format!("'{}' not allowed in 'defaults' section.", kw.name));
        return false;
    };
    let missing = if kind == ProxyKind::Frontend { "backend" } else { "frontend" };
    let who = format!("{} '{}' has no {missing} capability", kind.keyword(), b.proxy.name);
    let name = kw.name.strip_prefix("option ").unwrap_or(kw.name);
    if name == "server" || name == "default-server" {
        diags.alert(line, format!("'{name}' not allowed because {who}."));
    } else if name.starts_with("timeout ") {
        diags.warning(line, format!("'{name}' will be ignored because {who}"));
    } else if name == "maxconn" {
        diags.warning(
            line,
            format!("'{name}' ignored because {who}. Maybe you want 'fullconn' instead ?"),
        );
    } else {
        diags.warning(line, format!("'{name}' ignored because {who}."));
    }
    false
}

fn dispatch(b: &mut ProxyBuild, line: &Line, name: &str, negated: bool, diags: &mut Diags) {
    let p = &mut b.proxy;
    match name {
        "mode" => mode(p, line, diags),
        "bind" => {
            if let Some(bind) = parse_bind(line, b.section.keyword(), diags) {
                p.binds.push(bind);
            }
        }
        "maxconn" => {
            if let Some(v) = int_arg(line, 1, "maxconn", diags) {
                p.maxconn = Some(v);
            }
            no_extra(line, 2, "maxconn", diags);
        }
        "balance" => balance(p, line, diags),
        "hash-type" => hash_type(p, line, diags),
        "server" => {
            if let Some(s) = parse_server(line, &p.name, &b.default_server, diags) {
                p.servers.push(s);
            }
        }
        "default-server" => parse_default_server(line, &mut b.default_server, diags),
        "default_backend" => default_backend(p, line, diags),
        "use_backend" => use_backend(p, line, diags),
        "retries" => match parse_u32(line.arg(1)) {
            Some(n) if no_extra(line, 2, "retries", diags) => p.retries = n,
            Some(_) => {}
            None => diags
                .alert(line, "'retries' expects an integer argument (dispatch counts for one)."),
        },
        "option redispatch" => redispatch(p, line, negated, diags),
        "option abortonclose" => {
            if no_extra(line, 2 + usize::from(negated), "option abortonclose", diags) {
                p.abortonclose = !negated;
            }
        }
        "contimeout" | "clitimeout" | "srvtimeout" => legacy_timeout(p, line, diags),
        _ => match name.strip_prefix("timeout ") {
            Some(which) => {
                timeout(p, line, which, 2, diags);
            }
            None => diags.alert(line, format!("'{name}' is not supported yet")),
        },
    }
}

fn mode(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let m = line.arg(1);
    match m {
        "tcp" => p.mode = Mode::Tcp,
        "http" => {
            diags.alert(line, "'mode http' is not supported yet");
            p.mode = Mode::Http;
        }
        "health" => diags.alert(line, "'mode health' doesn't exist anymore. Please use 'http-request return status 200' instead."),
        _ => return diags.alert(line, format!("unknown proxy mode '{m}'.")),
    }
    no_extra(line, 2, "mode", diags);
}

/// `timeout <which> <time>`, the value at word `at`; 0 means "not set".
fn timeout(p: &mut Proxy, line: &Line, which: &str, at: usize, diags: &mut Diags) -> Option<()> {
    let kw = format!("timeout {which}");
    let value = line.arg(at);
    let d = match parse_time(value) {
        Ok(d) => d,
        Err(e) => {
            diags.alert(line, time_error_message(&kw, value, &e));
            return None;
        }
    };
    if let Some(extra) = line.words.get(at + 1) {
        diags.alert(
            line,
            format!("'{kw}' : unexpected extra argument '{extra}' after value '{value}'."),
        );
        return None;
    }
    let d = (!d.is_zero()).then_some(d);
    let t = &mut p.timeouts;
    let slot = match which {
        "connect" => &mut t.connect,
        "client" => &mut t.client,
        "server" => &mut t.server,
        "queue" => &mut t.queue,
        "tunnel" => &mut t.tunnel,
        "client-fin" => &mut t.client_fin,
        "server-fin" => &mut t.server_fin,
        _ => return None,
    };
    *slot = d;
    Some(())
}

fn legacy_timeout(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let kw = line.arg(0);
    let which = match kw {
        "contimeout" => "connect",
        "clitimeout" => "client",
        _ => "server",
    };
    if timeout(p, line, which, 1, diags).is_some() {
        let msg = format!(
            "'{kw}' was removed in HAProxy 2.1; accepted as 'timeout {which} {}', please use that instead.",
            line.arg(1)
        );
        diags.warning(line, msg);
    }
}

fn balance(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let algo = line.arg(1);
    let simple = match algo {
        "roundrobin" => Some(Balance::RoundRobin),
        "static-rr" => Some(Balance::StaticRr),
        "leastconn" => Some(Balance::LeastConn),
        "first" => Some(Balance::First),
        "source" => Some(Balance::Source),
        _ => None,
    };
    let parsed = match (simple, algo.strip_prefix("random")) {
        (Some(b), _) => Some(b),
        (None, Some(rest)) => {
            random_draws(rest, line, diags).map(|draws| Balance::Random { draws })
        }
        (None, None) => {
            let base = algo.split('(').next().unwrap_or("");
            if matches!(base, "uri" | "url_param" | "hdr" | "rdp-cookie" | "hash") {
                diags.alert(line, format!("'balance {algo}' is not supported yet"));
            } else {
                diags.alert(line, "balance only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)' and 'rdp-cookie(name)' options.");
            }
            None
        }
    };
    if let Some(b) = parsed {
        if no_extra(line, 2, &format!("balance {algo}"), diags) {
            p.balance = b;
        }
    }
}

/// The `(<draws>)` after `random`; 2 when absent.
fn random_draws(rest: &str, line: &Line, diags: &mut Diags) -> Option<u32> {
    if rest.is_empty() {
        return Some(2);
    }
    let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')'));
    match inner.map(|i| (i, parse_u32(i))) {
        Some((_, Some(0))) => diags.alert(line, "balance random : number of draws must be at least 1."),
        Some((_, Some(n))) => return Some(n),
        Some((i, None)) => {
            let c = i.chars().find(|c| !c.is_ascii_digit()).unwrap_or(')');
            diags.alert(line, format!("balance random : unexpected character '{c}' after argument."));
        }
        None => diags.alert(line, "balance only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)' and 'rdp-cookie(name)' options."),
    }
    None
}

fn hash_type(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let method = match line.arg(1) {
        "map-based" => HashMethod::MapBased,
        "consistent" => HashMethod::Consistent,
        _ => return diags.alert(line, "'hash-type' only supports 'consistent' and 'map-based'."),
    };
    let function = match line.arg(2) {
        "" | "sdbm" => HashFunction::Sdbm,
        "djb2" => HashFunction::Djb2,
        "wt6" => HashFunction::Wt6,
        "crc32" => HashFunction::Crc32,
        _ => {
            return diags.alert(
                line,
                "'hash-type' only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions.",
            )
        }
    };
    let avalanche = match line.arg(3) {
        "" => false,
        "avalanche" => true,
        _ => {
            return diags.alert(
                line,
                "'hash-type' only supports 'avalanche' as a modifier for hash functions.",
            )
        }
    };
    if no_extra(line, 4, "hash-type", diags) {
        p.hash_type = HashType { method, function, avalanche };
    }
}

fn default_backend(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    if line.arg(1).is_empty() {
        return diags.alert(line, "'default_backend' expects a backend name.");
    }
    if no_extra(line, 2, "default_backend", diags) {
        p.default_backend =
            Some(BackendRef { name: line.arg(1).to_string(), span: line.span.clone() });
    }
}

fn use_backend(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "'use_backend' expects a backend name.");
    }
    if name.contains("%[") {
        return diags.alert(line, "dynamic backend names in 'use_backend' are not supported yet");
    }
    match line.arg(2) {
        "" => p.use_backends.push(UseBackend {
            span: line.span.clone(),
            target: BackendTarget::Name(name.to_string()),
            cond: None,
        }),
        "if" | "unless" => diags.alert(
            line,
            "conditions on 'use_backend' are not supported yet (ACLs come with mode http)",
        ),
        other => diags.alert(
            line,
            format!(
                "'use_backend' expects 'if' or 'unless' after the backend name (got '{other}')."
            ),
        ),
    }
}

fn redispatch(p: &mut Proxy, line: &Line, negated: bool, diags: &mut Diags) {
    let at = 2 + usize::from(negated);
    let interval = line.arg(at);
    if !interval.is_empty() && (negated || interval.parse::<i32>().is_err()) {
        let msg =
            format!("'option redispatch' expects an optional integer interval (got '{interval}').");
        return diags.alert(line, msg);
    }
    if no_extra(line, at + 1, "option redispatch", diags) {
        p.redispatch = !negated && interval != "0";
    }
}
