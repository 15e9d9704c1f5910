//! Lines of `defaults`, `frontend`, `backend` and `listen` sections: keyword lookup in the
//! §4.1 matrix (section placement, "not supported yet", "unknown keyword"), then the parsers
//! for `mode`, `maxconn`, `timeout`, `balance`, `hash-type`, `default_backend`, `retries`,
//! `option redispatch|abortonclose`, the HTTP options kept as flags (`http-ignore-probes`,
//! `checkcache`...), the performance and logging hints accepted without effect (`splice-*`,
//! `tcp-smart-*`...) and the legacy `contimeout`-style timeouts. Rules (`acl`, `http-request`,
//! `use_backend`...) live in `rules`, HTTP settings (`retry-on`, `capture`, `errorloc`...) in
//! `http_opts`.

use crate::args::{int_arg, no_extra, parse_u32, Diags};
use crate::bind::parse_bind;
use crate::check::{self, CheckLists};
use crate::check_protocols;
use crate::duration::{read_time, time_error_message};
use crate::http_opts::{self, ErrorEntry};
use crate::keywords::{self, Keyword, Status, B, D, F, L};
use crate::lexer::Line;
use crate::model::*;
use crate::rules::{self, HttpWhich};
use crate::server::{parse_default_server, parse_server, ServerContext, ServerOpts};

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
    /// `errorfile`, `errorfiles` and `http-error` lines in order, resolved once every
    /// `http-errors` section is known.
    pub errors: Vec<ErrorEntry>,
    /// Rule families seen so far (indexed by `rules::Order`), for "placed after" warnings.
    pub rules_seen: [bool; 8],
    /// The `tcp-check` and `http-check` step lists.
    pub checks: CheckLists,
    /// A named `defaults` section's own rules ([`DEFAULTS_RULES`] and the kinds below): the
    /// sections that may start from it are limited, as in HAProxy.
    pub defaults_rules: u8,
}

/// A `defaults` section has TCP/HTTP rules (which its proxies run before their own).
pub const DEFAULTS_RULES: u8 = 1;
/// ... among them `tcp-request connection` or `tcp-request session` rules (no backend may use it).
pub const DEFAULTS_CONN_RULES: u8 = 2;
/// ... among them `tcp-response content` rules (no frontend may use it).
pub const DEFAULTS_RES_RULES: u8 = 4;

impl ProxyBuild {
    /// A fresh `defaults` section with HAProxy's built-in settings.
    pub fn new_defaults(name: &str, span: Span) -> Self {
        let proxy = Proxy {
            name: name.to_string(),
            description: None,
            span,
            kind: ProxyKind::Listen,
            id: None,
            mode: Mode::Tcp,
            binds: Vec::new(),
            backlog: None,
            fullconn: None,
            maxconn: None,
            timeouts: Timeouts::default(),
            balance: Balance::default(),
            hash_type: HashType::default(),
            servers: Vec::new(),
            default_backend: None,
            use_backends: Vec::new(),
            use_servers: Vec::new(),
            rate_limit_sessions: None,
            retries: 3,
            retry_on: vec![RetryOn::ConnFailure],
            redispatch: false,
            abortonclose: false,
            nolinger: false,
            independent_streams: false,
            idle_close_on_response: false,
            socket_stats: false,
            cli_tcpka: Default::default(),
            srv_tcpka: Default::default(),
            acls: Vec::new(),
            http_request: Vec::new(),
            http_response: Vec::new(),
            http_after_response: Vec::new(),
            redirects: Vec::new(),
            tcp_request_connection: Vec::new(),
            tcp_request_session: Vec::new(),
            stick_table: None,
            stick_rules: Vec::new(),
            expect_proxy: Vec::new(),
            expect_cip: Vec::new(),
            tcp_request_content: Vec::new(),
            inspect_delay: None,
            tcp_response_content: Vec::new(),
            response_inspect_delay: None,
            monitor_uri: None,
            stats: None,
            monitor_fail: Vec::new(),
            persist_rules: Vec::new(),
            persist: false,
            persist_rdp: None,
            prefer_last_server: false,
            max_ka_queue: None,
            contstats: false,
            disabled: false,
            source: None,
            errors: Default::default(),
            forwardfor: None,
            originalto: None,
            send_name_header: None,
            http_conn_mode: HttpConnMode::default(),
            http_buffer_request: false,
            http_reuse: HttpReuse::default(),
            load_server_state: Default::default(),
            server_state_file_name: None,
            cookie: None,
            log_format: None,
            log_format_sd: None,
            error_log_format: None,
            unique_id_format: None,
            unique_id_header: None,
            dontlog_normal: false,
            logasap: false,
            log_separate_errors: false,
            formats: Default::default(),
            dontlognull: false,
            restrict_req_hdr_names: 0,
            http_ignore_probes: false,
            accept_invalid_req: false,
            accept_invalid_resp: false,
            h1_case_client: false,
            h1_case_server: false,
            disable_h2_upgrade: false,
            http_use_proxy_header: false,
            http_pretend_keepalive: false,
            checkcache: false,
            captures: Vec::new(),
            capture_slots: Default::default(),
            health_check: HealthCheck::default(),
            email_alert: Default::default(),
            use_fcgi_app: None,
            allbackups: false,
            log_health_checks: false,
            logs: Vec::new(),
            log_tag: None,
            compression: None,
            compression_filter: false,
            filters: Vec::new(),
        };
        ProxyBuild {
            proxy,
            section: Section::Defaults,
            default_server: ServerOpts::default(),
            errors: Vec::new(),
            rules_seen: [false; 8],
            checks: CheckLists::default(),
            defaults_rules: 0,
        }
    }

    /// A proxy starting as a copy of the `defaults` it inherits from.
    pub fn from_defaults(defaults: &ProxyBuild, kind: ProxyKind, name: &str, span: Span) -> Self {
        let mut b = defaults.clone();
        b.proxy.name = name.to_string();
        b.proxy.span = span;
        b.proxy.kind = kind;
        b.section = Section::Proxy(kind);
        b.checks = defaults.checks.inherited();
        b.proxy.compression = crate::compression::inherited(&defaults.proxy.compression);
        // (`filter` is refused in `defaults`: its only filters are the implicit cache filters of
        // a named section's rules, which come with the rules.)
        b.defaults_rules = 0;
        b.rules_seen = [false; 8];
        // Settings a `defaults` section only gives to the side that uses them.
        if !kind.is_backend() {
            b.proxy.cookie = None;
            b.proxy.retry_on = vec![RetryOn::ConnFailure];
            b.proxy.http_pretend_keepalive = false;
            b.proxy.checkcache = false;
            b.proxy.accept_invalid_resp = false;
            b.proxy.h1_case_server = false;
        }
        if !kind.is_frontend() {
            b.proxy.accept_invalid_req = false;
            b.proxy.h1_case_client = false;
            b.proxy.disable_h2_upgrade = false;
            b.proxy.monitor_uri = None;
            b.proxy.http_ignore_probes = false;
            b.proxy.http_use_proxy_header = false;
        }
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
        // Refused, then read all the same without the modifier (as HAProxy does).
        diags.alert_tight(line, crate::args::NO_NEGATION);
        if let Some(shifted) = crate::args::shifted(line) {
            parse_line(b, &shifted, diags);
        }
        return;
    }
    if first == "persist" {
        // (HAProxy 2.6 takes it in any section, and says nothing in a frontend.)
        return crate::balance::persist(&mut b.proxy, line, diags);
    }
    if first == "option" && words.len() < 2 {
        return diags.alert(line, "'option' expects an option name.");
    }
    if first == "stick" && keywords::find_proxy(words).is_none() {
        // `stick store` (an alias of `store-request`) or a wrong word: its own messages.
        if b.section == Section::Defaults {
            return diags.alert(line, "'stick' not allowed in 'defaults' section.");
        }
        return crate::stick::stick_rule(b, line, diags);
    }
    let Some(kw) = keywords::find_proxy(words) else {
        return unknown(b, line, words, diags);
    };
    if !placement_ok(b, line, kw, diags) {
        return;
    }
    match kw.status {
        Status::NotYet => return diags.alert(line, format!("'{}' is not supported yet", kw.name)),
        // HAProxy's message for `monitor-net` quotes the network given.
        Status::Obsolete(why) => return diags.alert(line, why.replace("<net>", line.arg(1))),
        Status::Supported | Status::Partial(_) => {}
    }
    dispatch(b, line, kw.name, negated, diags);
}

fn unknown(b: &ProxyBuild, line: &Line, words: &[String], diags: &mut Diags) {
    let first = words[0].as_str();
    let second = words.get(1).map(String::as_str).unwrap_or("");
    let msg = match first {
        "option" => match crate::suggest::best_match(second, crate::suggest::Place::Option) {
            Some(best) => format!("unknown option '{second}'; did you mean '{best}' maybe ?"),
            None => format!("unknown option '{second}'."),
        },
        "tcp-request" if second.is_empty() => {
            format!("missing argument for 'tcp-request' in {} '{}'", type_word(b.proxy.kind), b.proxy.name)
        }
        "tcp-request" => format!(
            "'tcp-request' expects 'inspect-delay', 'connection', or 'content' in {} '{}' (got '{second}')",
            type_word(b.proxy.kind),
            b.proxy.name
        ),
        "tcp-response" => format!(
            "'tcp-response' expects 'inspect-delay' or 'content' in {} '{}' (got '{second}')",
            type_word(b.proxy.kind),
            b.proxy.name
        ),
        "monitor" => "'monitor' only supports 'fail'.".to_string(),
        "external-check" => crate::extcheck::unknown(second),
        "email-alert" => crate::mailers::unknown(second),
        "http-check" => format!("'http-check' only supports 'disable-on-404', 'send-state', 'comment', 'connect', 'send', 'expect'. but got '{second}'"),
        "tcp-check" => format!("'tcp-check' only supports 'comment', 'connect', 'send', 'send-binary', 'expect'. but got '{second}'"),
        "capture" => "'capture' expects 'cookie' or 'request header' or 'response header'.".to_string(),
        "stats" => {
            let what = if second.is_empty() {
                "missing keyword in 'stats'".to_string()
            } else {
                format!("unknown stats parameter '{second}'")
            };
            format!("{what}, expects 'admin', 'uri', 'realm', 'auth', 'scope', 'enable', 'hide-version', 'show-node', 'show-desc' or 'show-legends'.")
        }
        "timeout" => format!("'timeout' supports 'client', 'server', 'connect', 'check', 'queue', 'http-keep-alive', 'http-request', 'tunnel', 'tarpit', 'client-fin' and 'server-fin' (got '{second}')"),
        _ if keywords::is_proxy_family(first) => format!("'{first}' is not supported yet"),
        _ => {
            let section = b.section.keyword();
            match crate::suggest::best_match(first, crate::suggest::Place::Proxy) {
                Some(best) => format!(
                    "unknown keyword '{first}' in '{section}' section; did you mean '{best}' maybe ?"
                ),
                None => format!("unknown keyword '{first}' in '{section}' section"),
            }
        }
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
        if kw.name == "filter" {
            // `parse_filter()`'s own message, which HAProxy prefixes with the place again.
            let msg =
                format!("parsing [{}] : filter is not allowed in a 'default' section.", line.span);
            diags.alert(line, msg);
            return false;
        }
        let name = match kw.name {
            "monitor fail" => "monitor",
            "capture request header" => "capture request",
            "capture response header" => "capture response",
            other => other,
        };
        diags.alert(line, format!("'{name}' not allowed in 'defaults' section."));
        return false;
    };
    if kw.name == "retry-on" {
        diags.alert(line, "'retry-on' only available in backend or listen section");
        return false;
    }
    if crate::logopts::BACKEND_IGNORED.contains(&kw.name) {
        let msg =
            format!("backend '{}' : '{}' directive is ignored in backends.", b.proxy.name, kw.name);
        diags.warning(line, msg);
        return false;
    }
    let missing = if kind == ProxyKind::Frontend { "backend" } else { "frontend" };
    let who = format!("{} '{}' has no {missing} capability", kind.keyword(), b.proxy.name);
    let name = kw.name.strip_prefix("option ").unwrap_or(kw.name);
    let name = if name.starts_with("capture ") { "capture" } else { name };
    if name == "server" || name == "default-server" {
        diags.alert(line, format!("'{name}' not allowed because {who}."));
    } else if name.starts_with("timeout ") {
        diags.warning(line, format!("'{name}' will be ignored because {who}"));
    } else if name == "fullconn" {
        diags.warning(
            line,
            format!("'{name}' ignored because {who}. Maybe you want 'maxconn' instead ?"),
        );
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
    // `no option x` and `default option x` both give an option its default (off) value.
    let prefixed = negated || line.arg(0) == "default";
    let in_defaults = matches!(b.section, Section::Defaults);
    let p = &mut b.proxy;
    match name {
        "mode" => mode(p, line, diags),
        "bind" => {
            if let Some(bind) = parse_bind(line, b.section.keyword(), diags) {
                // A listener id is the proxy's to give once.
                let taken = bind.id.and_then(|id| p.binds.iter().find(|o| o.id == Some(id)));
                match taken {
                    Some(o) => diags.alert(
                        line,
                        format!(
                            "'bind {}' in section '{}' : 'id' : custom id {} already used at {} ('bind {}')",
                            line.arg(1),
                            b.section.keyword(),
                            o.id.unwrap_or(0),
                            o.span,
                            o.written
                        ),
                    ),
                    None => p.binds.push(bind),
                }
            }
        }
        "maxconn" => {
            if let Some(v) = int_arg(line, 1, "maxconn", diags) {
                p.maxconn = Some(v);
            }
            no_extra(line, 2, "maxconn", diags);
        }
        "fullconn" => {
            if no_extra(line, 2, "fullconn", diags) {
                // HAProxy reads it with atol(): what is not a number is 0 (the default).
                p.fullconn = u32::try_from(crate::args::atol(line.arg(1))).ok().filter(|&n| n > 0);
            }
        }
        "rate-limit sessions" => {
            // HAProxy's `proxy_parse_rate_limit()`.
            let v = line.arg(2);
            if v.is_empty() {
                let m =
                    "'rate-limit sessions' expects expects an integer value (in sessions/second)";
                return diags.alert(line, m);
            }
            if let Some(c) = v.chars().find(|c| !c.is_ascii_digit()) {
                let m = format!(
                    "'rate-limit sessions' : unexpected character '{c}' in integer value '{v}'"
                );
                return diags.alert(line, m);
            }
            let n = v.parse::<u64>().map_or(u32::MAX, |n| n.min(u64::from(u32::MAX)) as u32);
            if !p.kind.is_frontend() && b.section != Section::Defaults {
                let m = format!(
                    "rate-limit sessions will be ignored because {} '{}' has no frontend capability",
                    type_word(p.kind),
                    p.name
                );
                diags.warning(line, m);
            }
            p.rate_limit_sessions = Some(n);
        }
        "backlog" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'backlog' expects an integer argument.");
            } else if let Some(v) = int_arg(line, 1, "backlog", diags) {
                p.backlog = Some(v);
            }
            no_extra(line, 2, "backlog", diags);
        }
        "balance" => crate::balance::balance(p, line, diags),
        "hash-type" => crate::balance::hash_type(p, line, diags),
        "server" => {
            let cx = ServerContext { proxy: &p.name, mode: p.mode };
            if let Some(s) = parse_server(line, cx, &b.default_server, diags) {
                p.servers.push(s);
            }
        }
        "default-server" => parse_default_server(line, p.mode, &mut b.default_server, diags),
        "id" => proxy_id(p, line, diags),
        "description" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'description' expects a string argument.");
            } else {
                p.description = Some(line.words[1..].join(" "));
            }
        }
        "log" => crate::logtargets::log_line(line, negated, false, &mut p.logs, diags),
        "log-tag" => crate::logtargets::log_tag(line, &mut p.log_tag, diags),
        "option tcplog" | "option httpslog" | "option httplog" => {
            let opt = &name["option ".len()..];
            crate::logopts::option_log(p, line, opt, prefixed, in_defaults, diags)
        }
        "log-format" | "log-format-sd" | "error-log-format" | "unique-id-format"
        | "unique-id-header" => crate::logopts::format_line(p, line, name, in_defaults, diags),
        "option httpchk" => check::option_httpchk(b, line, diags),
        "option tcp-check" => check::option_tcp_check(b, line, diags),
        "option redis-check" => check_protocols::redis(b, line, diags),
        "option mysql-check" => check_protocols::mysql(b, line, diags),
        "option pgsql-check" => check_protocols::pgsql(b, line, diags),
        "option smtpchk" => check_protocols::smtp(b, line, diags),
        "option ldap-check" => check_protocols::ldap(b, line, diags),
        "option spop-check" => check_protocols::spop(b, line, diags),
        "option ssl-hello-chk" => check_protocols::ssl_hello(b, line, diags),
        "option external-check" => crate::extcheck::option(b, line, diags),
        "use-fcgi-app" => crate::fcgi_app::use_fcgi_app(&mut b.proxy, line, diags),
        n if n.starts_with("email-alert ") => {
            crate::mailers::email_alert(&mut b.proxy.email_alert, line, diags)
        }
        "external-check command" | "external-check path" => crate::extcheck::line(b, line, diags),
        n if n.starts_with("http-check ") => check::http_check(b, line, diags),
        n if n.starts_with("tcp-check ") => check::tcp_check(b, line, diags),
        "option allbackups" | "option log-health-checks" => {
            if no_extra(line, 2 + usize::from(negated), name, diags) {
                let slot = if name == "option allbackups" {
                    &mut p.allbackups
                } else {
                    &mut p.log_health_checks
                };
                *slot = !prefixed;
            }
        }
        "default_backend" => default_backend(p, line, diags),
        "use_backend" => rules::use_backend(b, line, diags),
        "acl" => acl(b, line, diags),
        "http-request" => rules::http_rule(b, line, HttpWhich::Request, diags),
        "http-response" => rules::http_rule(b, line, HttpWhich::Response, diags),
        "http-after-response" => rules::http_rule(b, line, HttpWhich::After, diags),
        "redirect" => rules::redirect_line(b, line, diags),
        "tcp-request connection" => rules::tcp_request(b, line, "connection", diags),
        "tcp-request content" => rules::tcp_request(b, line, "content", diags),
        "tcp-request inspect-delay" => rules::tcp_request(b, line, "inspect-delay", diags),
        "tcp-request session" => rules::tcp_request(b, line, "session", diags),
        "tcp-response content" => rules::tcp_response(b, line, "content", diags),
        "tcp-response inspect-delay" => rules::tcp_response(b, line, "inspect-delay", diags),
        "stick-table" => crate::stick::stick_table(b, line, diags),
        "stick on" | "stick match" | "stick store-request" | "stick store-response" => {
            crate::stick::stick_rule(b, line, diags)
        }
        "monitor fail" => rules::monitor_fail(b, line, diags),
        "ignore-persist" | "force-persist" => {
            rules::persist_rule(b, line, name == "force-persist", diags)
        }
        "max-keep-alive-queue" => http_opts::max_ka_queue(p, line, diags),
        "disabled" | "enabled" => {
            if no_extra(line, 1, name, diags) {
                p.disabled = name == "disabled";
            }
        }
        "source" => match crate::source::parse(&line.words, 0, crate::source::At::Proxy) {
            Ok((src, _)) => p.source = Some(src),
            Err(msg) => diags.alert(line, msg),
        },
        "option persist" | "option prefer-last-server" | "option contstats" => {
            if no_extra(line, 2 + usize::from(negated), name, diags) {
                let slot = match name {
                    "option persist" => &mut p.persist,
                    "option prefer-last-server" => &mut p.prefer_last_server,
                    _ => &mut p.contstats,
                };
                *slot = !prefixed;
            }
        }
        "use-server" => rules::use_server(b, line, diags),
        "monitor-uri" => rules::monitor_uri(b, line, diags),
        "load-server-state-from-file" => {
            p.load_server_state = match line.arg(1) {
                "global" => crate::model::ServerStateLoad::Global,
                "local" => crate::model::ServerStateLoad::Local,
                "none" => crate::model::ServerStateLoad::None,
                other => {
                    return diags.alert(
                        line,
                        format!("'load-server-state-from-file' expects 'global', 'local' or 'none'. Got '{other}'"),
                    )
                }
            };
            no_extra(line, 2, name, diags);
        }
        "server-state-file-name" => {
            p.server_state_file_name = match line.arg(1) {
                "" | "use-backend-name" => None,
                f => Some(f.to_string()),
            };
            no_extra(line, 2, name, diags);
        }
        n if n.starts_with("stats ") => crate::stats_page::proxy_line(b, line, n, diags),
        "errorfile" => {
            if let Some((code, src)) = http_opts::errorfile(line, false, diags) {
                b.errors.push(ErrorEntry::Direct(code, src));
            }
        }
        "errorfiles" => http_opts::errorfiles(b, line, diags),
        "errorloc" | "errorloc302" | "errorloc303" => {
            if let Some((code, src)) = http_opts::errorloc(line, diags) {
                b.errors.push(ErrorEntry::Direct(code, src));
            }
        }
        "retry-on" => http_opts::retry_on(p, line, diags),
        "compression" => crate::compression::compression(p, in_defaults, line, diags),
        "filter" => crate::compression::filter(p, line, diags),
        "capture cookie" | "capture request header" | "capture response header" => {
            http_opts::capture(p, line, diags)
        }
        "declare capture" => http_opts::declare_capture(p, line, diags),
        "http-error" => http_opts::http_error(b, line, diags),
        "http-reuse" => http_opts::http_reuse(p, line, diags),
        "cookie" => http_opts::cookie(p, line, diags),
        "http-send-name-header" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'http-send-name-header' requires a header string.");
            } else {
                p.send_name_header = Some(line.arg(1).to_string());
            }
        }
        "option forwardfor" | "option originalto" => {
            if prefixed {
                let opt = &name["option ".len()..];
                return diags
                    .alert(line, format!("negation/default is not supported for option '{opt}'."));
            }
            http_opts::forward_option(p, line, name == "option forwardfor", diags)
        }
        "option http-restrict-req-hdr-names" => {
            let expects = "option 'http-restrict-req-hdr-names' expects 'preserve', 'reject' or 'delete' option.";
            if !no_extra(line, 3, "option", diags) {
                return;
            }
            p.restrict_req_hdr_names = match line.arg(2) {
                "" => return diags.alert(line, format!("missing parameter. {expects}")),
                "preserve" => 3,
                "delete" => 1,
                "reject" => 2,
                v => return diags.alert(line, format!("invalid parameter '{v}'. {expects}")),
            };
        }
        "option http-keep-alive" | "option http-server-close" | "option httpclose" => {
            http_opts::conn_mode(p, line, &name["option ".len()..], prefixed, diags)
        }
        "option http-buffer-request"
        | "option dontlognull"
        | "option http-ignore-probes"
        | "option http-use-proxy-header"
        | "option http-pretend-keepalive"
        | "option accept-invalid-http-request"
        | "option accept-invalid-http-response"
        | "option h1-case-adjust-bogus-client"
        | "option h1-case-adjust-bogus-server"
        | "option disable-h2-upgrade"
        | "option independent-streams"
        | "option idle-close-on-response"
        | "option socket-stats"
        | "option checkcache" => {
            if no_extra(line, 2 + usize::from(negated), name, diags) {
                let slot = match name {
                    "option disable-h2-upgrade" => &mut p.disable_h2_upgrade,
                    "option h1-case-adjust-bogus-client" => &mut p.h1_case_client,
                    "option h1-case-adjust-bogus-server" => &mut p.h1_case_server,
                    "option accept-invalid-http-request" => &mut p.accept_invalid_req,
                    "option accept-invalid-http-response" => &mut p.accept_invalid_resp,
                    "option dontlognull" => &mut p.dontlognull,
                    "option http-ignore-probes" => &mut p.http_ignore_probes,
                    "option http-use-proxy-header" => &mut p.http_use_proxy_header,
                    "option http-pretend-keepalive" => &mut p.http_pretend_keepalive,
                    "option checkcache" => &mut p.checkcache,
                    "option independent-streams" => &mut p.independent_streams,
                    "option idle-close-on-response" => &mut p.idle_close_on_response,
                    "option socket-stats" => &mut p.socket_stats,
                    _ => &mut p.http_buffer_request,
                };
                *slot = !prefixed;
            }
        }
        // Performance and logging hints: accepted, no effect.
        "option http-no-delay"
        | "option splice-auto"
        | "option splice-request"
        | "option splice-response"
        | "option tcp-smart-accept"
        | "option tcp-smart-connect" => {
            no_extra(line, 2 + usize::from(negated), name, diags);
        }
        "option log-separate-errors" | "option dontlog-normal" | "option logasap" => {
            if no_extra(line, 2 + usize::from(negated), name, diags) {
                let slot = match name {
                    "option dontlog-normal" => &mut p.dontlog_normal,
                    "option logasap" => &mut p.logasap,
                    _ => &mut p.log_separate_errors,
                };
                *slot = !prefixed;
            }
        }
        "retries" => match parse_u32(line.arg(1)) {
            Some(n) if no_extra(line, 2, "retries", diags) => p.retries = n,
            Some(_) => {}
            None => diags
                .alert(line, "'retries' expects an integer argument (dispatch counts for one)."),
        },
        "option redispatch" => redispatch(p, line, negated, diags),
        "option nolinger" => {
            if no_extra(line, 2 + usize::from(negated), "option nolinger", diags) {
                p.nolinger = !negated;
            }
        }
        "option abortonclose" => {
            if no_extra(line, 2 + usize::from(negated), "option abortonclose", diags) {
                p.abortonclose = !negated;
            }
        }
        "contimeout" | "clitimeout" | "srvtimeout" => legacy_timeout(p, line, diags),
        "bind-process" => bind_process(line, diags),
        _ if crate::tcpka::parse(p, line, name, negated, diags) => {}
        _ => match name.strip_prefix("timeout ") {
            Some(which) => {
                timeout(p, line, which, 2, diags);
            }
            None => diags.alert(line, format!("'{name}' is not supported yet")),
        },
    }
}

/// `bind-process [all | odd | even | <n>[-[<m>]]] ...`: HAProxy 2.6 runs one process, so
/// only 1 is valid; it has no effect, with HAProxy's warning.
fn bind_process(line: &Line, diags: &mut Diags) {
    for arg in line.words[1..].iter().map(String::as_str) {
        if arg == "all" {
            break;
        }
        if let Err(msg) = crate::args::process_set(arg, 1) {
            return diags.alert(line, format!("bind-process : {msg}"));
        }
    }
    let msg = format!(
        "parsing [{}]: 'bind-process' has no effect, is deprecated, and will be removed in version 2.7.",
        line.span
    );
    diags.list.push(crate::diag::Diagnostic::warning(None, msg));
}

/// `id <n>`: the proxy's number, above 0 (HAProxy's `puid`).
fn proxy_id(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let v = line.arg(1);
    if !no_extra(line, 2, "id", diags) {
        return;
    }
    if v.is_empty() {
        return diags.alert(line, "'id' expects an integer argument.");
    }
    match u32::try_from(crate::args::atol(v)) {
        Ok(n) if n > 0 => p.id = Some(n),
        _ => diags.alert(line, "custom id has to be > 0."),
    }
}

fn mode(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let m = line.arg(1);
    match m {
        "tcp" => p.mode = Mode::Tcp,
        "http" => p.mode = Mode::Http,
        "health" => diags.alert(line, "'mode health' doesn't exist anymore. Please use 'http-request return status 200' instead."),
        _ => return diags.alert(line, format!("unknown proxy mode '{m}'.")),
    }
    no_extra(line, 2, "mode", diags);
}

/// `timeout <which> <time>`, the value at word `at`; 0 means "not set".
fn timeout(p: &mut Proxy, line: &Line, which: &str, at: usize, diags: &mut Diags) -> Option<()> {
    let kw = format!("timeout {which}");
    let value = line.arg(at);
    let d = match read_time(value) {
        Ok(t) => {
            if let Some(w) = t.warning {
                diags.warning(line, w);
            }
            t.value
        }
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
        "http-request" => &mut t.http_request,
        "http-keep-alive" => &mut t.http_keep_alive,
        "tarpit" => &mut t.tarpit,
        "check" => &mut t.check,
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

fn default_backend(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    if line.arg(1).is_empty() {
        return diags.alert(line, "'default_backend' expects a backend name.");
    }
    if no_extra(line, 2, "default_backend", diags) {
        p.default_backend =
            Some(BackendRef { name: line.arg(1).to_string(), span: line.span.clone() });
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

/// `acl` lines: HAProxy refuses them in anonymous `defaults`; Fulcrum does not support them in
/// named ones yet (they would only be visible to the rules of that section).
fn acl(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if b.section == Section::Defaults {
        let msg = if b.proxy.name.is_empty() {
            "'acl' not allowed in anonymous 'defaults' section."
        } else {
            "'acl' in a 'defaults' section is not supported yet"
        };
        return diags.alert(line, msg);
    }
    rules::acl_line(b, line, diags);
}
