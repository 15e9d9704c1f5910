//! Rule keywords of proxy sections: `acl`, `http-request`, `http-response`,
//! `http-after-response`, `redirect`, `tcp-request connection|content|inspect-delay`,
//! `use_backend`, `monitor fail` and `monitor-uri`, with the HTTP replies (`return`, `deny`,
//! `http-error`) and redirects they build, and HAProxy's "rule placed after" warnings.

use crate::acl::{self, CondEnv};
use crate::args::{no_extra, parse_size, Diags};
use crate::duration::{read_time, TimeError};
use crate::lexer::Line;
use crate::logformat;
use crate::model::*;
use crate::proxy::{type_word, ProxyBuild, Section};
use crate::sample::{self, Avail, Ctx, End};

/// Status codes HAProxy has an error message for (`errorfile`, `default-errorfiles`).
pub const ERROR_CODES: &[u16] =
    &[200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 425, 429, 500, 501, 502, 503, 504];

/// Rule families in HAProxy's processing order, for the "placed after" warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Order {
    TcpConnection = 0,
    TcpSession = 1,
    TcpContent = 2,
    MonitorFail = 3,
    HttpRequest = 4,
    Redirect = 5,
    UseBackend = 6,
    /// `tcp-response content`: nothing is ever placed after it.
    TcpResponse = 7,
}

impl Order {
    const ALL: [Order; 7] = [
        Order::TcpConnection,
        Order::TcpSession,
        Order::TcpContent,
        Order::MonitorFail,
        Order::HttpRequest,
        Order::Redirect,
        Order::UseBackend,
    ];
    fn subject(self) -> &'static str {
        match self {
            Order::TcpConnection | Order::TcpSession | Order::TcpContent => "tcp-request",
            Order::MonitorFail => "monitor fail",
            Order::HttpRequest => "http-request",
            Order::Redirect => "redirect",
            Order::UseBackend => "use_backend",
            Order::TcpResponse => "tcp-response",
        }
    }
    fn with_article(self) -> &'static str {
        match self {
            Order::TcpConnection => "a 'tcp-request connection'",
            Order::TcpSession => "a 'tcp-request session'",
            Order::TcpContent => "a 'tcp-request content'",
            Order::MonitorFail => "a 'monitor fail'",
            Order::HttpRequest => "an 'http-request'",
            Order::Redirect => "a 'redirect'",
            Order::UseBackend => "a 'use_backend'",
            Order::TcpResponse => "a 'tcp-response content'",
        }
    }
}

/// Records a rule of family `o`, warning when a family processed later was already seen.
pub(crate) fn placed(b: &mut ProxyBuild, line: &Line, o: Order, diags: &mut Diags) {
    let later = Order::ALL.iter().find(|l| **l > o && b.rules_seen[**l as usize]);
    if let Some(l) = later {
        diags.warning(
            line,
            format!(
                "a '{}' rule placed after {} rule will still be processed before.",
                o.subject(),
                l.with_article()
            ),
        );
    }
    b.rules_seen[o as usize] = true;
}

pub(crate) fn words_from(line: &Line, i: usize) -> &[String] {
    &line.words[i.min(line.words.len())..]
}

pub(crate) fn who(p: &Proxy) -> String {
    format!("{} '{}'", type_word(p.kind), p.name)
}

/// Parses the optional `if|unless <cond>` at word `at`. `wrap` words a condition error;
/// `unexpected` words a word that is neither `if` nor `unless`. `Err(())` once reported.
pub(crate) fn condition(
    p: &Proxy,
    line: &Line,
    at: usize,
    ctx: Ctx,
    wrap: &dyn Fn(&str) -> String,
    unexpected: &dyn Fn(&str) -> String,
    diags: &mut Diags,
) -> Result<Option<Condition>, ()> {
    match line.arg(at) {
        "" if at >= line.words.len() => return Ok(None),
        "if" | "unless" => {}
        other => {
            diags.alert(line, unexpected(other));
            return Err(());
        }
    }
    let env = CondEnv { acls: &p.acls, ctx, kind: p.kind };
    match acl::parse_condition(words_from(line, at), &line.span, &env) {
        Ok(parsed) => {
            for w in parsed.warnings {
                diags.warning(line, w);
            }
            Ok(Some(parsed.cond))
        }
        Err(msg) => {
            diags.alert(line, wrap(&msg));
            Err(())
        }
    }
}

// ---- acl ----

pub fn acl_line(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if let Err(msg) = acl::check_acl_name(name) {
        return diags.alert(line, msg);
    }
    match acl::parse_acl(words_from(line, 2), &line.span) {
        Ok(parsed) => {
            for w in parsed.warnings {
                diags.warning(line, w);
            }
            b.proxy.acls.push(NamedAcl { name: name.to_string(), acl: parsed.acl });
        }
        Err(msg) => diags.alert(line, format!("error detected while parsing ACL '{name}' : {msg}")),
    }
}

// ---- http-request / http-response / http-after-response ----

/// Which HTTP rule list a line belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpWhich {
    Request,
    Response,
    After,
}

impl HttpWhich {
    fn keyword(self) -> &'static str {
        match self {
            HttpWhich::Request => "http-request",
            HttpWhich::Response => "http-response",
            HttpWhich::After => "http-after-response",
        }
    }
    fn ctx(self) -> Ctx {
        match self {
            HttpWhich::Request => Ctx::HttpRequest,
            _ => Ctx::HttpResponse,
        }
    }
    /// HAProxy 2.6's actions, in the order its error message lists them.
    fn known(self) -> &'static [&'static str] {
        match self {
            HttpWhich::Request => &[
                "wait-for-handshake",
                "ot-group",
                "set-log-level",
                "set-nice",
                "use-service",
                "sc-inc-gpc(*)",
                "sc-inc-gpc0(*)",
                "sc-inc-gpc1(*)",
                "sc-set-gpt(*)",
                "sc-set-gpt0(*)",
                "send-spoe-group",
                "do-resolve(*)",
                "cache-use",
                "add-acl(*)",
                "add-header",
                "allow",
                "auth",
                "capture",
                "del-acl(*)",
                "del-header",
                "del-map(*)",
                "deny",
                "disable-l7-retry",
                "early-hint",
                "normalize-uri",
                "redirect",
                "reject",
                "replace-header",
                "replace-path",
                "replace-pathq",
                "replace-uri",
                "replace-value",
                "return",
                "set-header",
                "set-map(*)",
                "set-method",
                "set-path",
                "set-pathq",
                "set-query",
                "set-uri",
                "strict-mode",
                "tarpit",
                "track-sc(*)",
                "set-timeout",
                "wait-for-body",
                "set-var-fmt(*)",
                "set-var(*)",
                "unset-var(*)",
                "set-dst",
                "set-dst-port",
                "set-mark",
                "set-src",
                "set-src-port",
                "set-tos",
                "silent-drop",
                "set-priority-class",
                "set-priority-offset",
            ],
            HttpWhich::Response => &[
                "ot-group",
                "set-log-level",
                "set-nice",
                "sc-inc-gpc(*)",
                "sc-inc-gpc0(*)",
                "sc-inc-gpc1(*)",
                "sc-set-gpt(*)",
                "sc-set-gpt0(*)",
                "send-spoe-group",
                "cache-store",
                "add-acl(*)",
                "add-header",
                "allow",
                "capture",
                "del-acl(*)",
                "del-header",
                "del-map(*)",
                "deny",
                "redirect",
                "replace-header",
                "replace-value",
                "return",
                "set-header",
                "set-map(*)",
                "set-status",
                "strict-mode",
                "track-sc(*)",
                "wait-for-body",
                "set-var-fmt(*)",
                "set-var(*)",
                "unset-var(*)",
                "set-mark",
                "set-tos",
                "silent-drop",
            ],
            HttpWhich::After => &[
                "ot-group",
                "add-header",
                "allow",
                "capture",
                "del-header",
                "replace-header",
                "replace-value",
                "set-header",
                "set-status",
                "strict-mode",
                "set-var-fmt(*)",
                "set-var(*)",
                "unset-var(*)",
            ],
        }
    }
    fn supported(self, action: &str) -> bool {
        const COMMON: &[&str] = &[
            "allow",
            "set-header",
            "add-header",
            "del-header",
            "replace-header",
            "replace-value",
            "set-var",
            "set-var-fmt",
            "unset-var",
            "strict-mode",
        ];
        COMMON.contains(&action)
            || (self != HttpWhich::After && crate::stick::is_stick_action(action))
            || (self == HttpWhich::Request
                && matches!(
                    action,
                    "set-src" | "set-src-port" | "set-dst" | "set-dst-port" | "auth"
                ))
            || (self != HttpWhich::After && action == "send-spoe-group")
            || match self {
                HttpWhich::Request => matches!(
                    action,
                    "deny"
                        | "use-service"
                        | "return"
                        | "redirect"
                        | "set-path"
                        | "set-pathq"
                        | "replace-pathq"
                        | "set-query"
                        | "set-uri"
                        | "set-method"
                        | "replace-uri"
                        | "replace-path"
                        | "wait-for-body"
                        | "tarpit"
                        | "reject"
                        | "silent-drop"
                        | "early-hint"
                        | "capture"
                        | "cache-use"
                        | "set-bandwidth-limit"
                ),
                HttpWhich::Response => {
                    matches!(
                        action,
                        "deny"
                            | "return"
                            | "redirect"
                            | "set-status"
                            | "wait-for-body"
                            | "silent-drop"
                            | "capture"
                            | "cache-store"
                            | "set-bandwidth-limit"
                    )
                }
                HttpWhich::After => action == "set-status",
            }
    }
}

/// The action keyword without its `(<args>)`, and whether HAProxy registers it with arguments.
pub(crate) fn action_base(action: &str) -> (&str, bool) {
    match action.find('(') {
        Some(i) => (&action[..i], true),
        None => (action, false),
    }
}

/// HAProxy's `action_lookup()`: a keyword its list shows as `name(*)` matches any action that
/// starts with `name` (`track-sc0`, `set-var(txn.x)`), the others match exactly.
pub(crate) fn matches_action(listed: &str, action: &str) -> bool {
    match listed.strip_suffix("(*)") {
        Some(prefix) => action.starts_with(prefix),
        None => listed == action,
    }
}

fn is_known_action(which: HttpWhich, action: &str) -> bool {
    // (HAProxy 2.7's, beyond 2.6's list.)
    (action == "set-bandwidth-limit" && which != HttpWhich::After)
        || which.known().iter().any(|k| matches_action(k, action))
}

/// Parses an `http-request`, `http-response` or `http-after-response` line.
pub fn http_rule(b: &mut ProxyBuild, line: &Line, which: HttpWhich, diags: &mut Diags) {
    let kw = which.keyword();
    if b.section == Section::Defaults {
        if b.proxy.name.is_empty() {
            return diags
                .alert(line, format!("'{kw}' not allowed in anonymous 'defaults' section."));
        }
        // A named defaults section's rules run before those of the proxies that use it.
        b.defaults_rules |= crate::proxy::DEFAULTS_RULES;
    }
    let action = line.arg(1);
    let env = match which {
        HttpWhich::Request => Some(crate::lua::Env::HttpReq),
        HttpWhich::Response => Some(crate::lua::Env::HttpRes),
        HttpWhich::After => None,
    };
    let lua = action.strip_prefix("lua.").zip(env).and_then(|(name, env)| {
        crate::lua::with_registered(|r| r.action(name, env)).map(|nargs| (name, nargs))
    });
    if lua.is_none() && !is_known_action(which, action) {
        let mut list: Vec<String> = which.known().iter().map(|k| k.to_string()).collect();
        if let Some(env) = env {
            list.extend(crate::lua::with_registered(|r| r.action_keywords(env)));
        }
        let got = if action.is_empty() {
            "'' (missing argument)".to_string()
        } else {
            format!("'{action}'")
        };
        let quoted = list.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ");
        let mut msg = format!("'{kw}' expects {quoted}, but got {got}.");
        // (HAProxy suggests a keyword once scripts registered some.)
        if action.starts_with("lua.") && list.iter().any(|k| k.starts_with("lua.")) {
            let bases = list.iter().map(|k| action_base(k).0);
            if let Some(best) = crate::suggest::closest(action, bases) {
                msg.push_str(&format!(" Did you mean '{best}' maybe ?"));
            }
        }
        return diags.alert(line, msg);
    }
    let (base, _) = action_base(action);
    if lua.is_none() && !which.supported(base) {
        return diags.alert(line, format!("'{kw} {action}' is not supported yet"));
    }
    let be_cap = b.proxy.kind.is_backend();
    let got = if let Some((name, nargs)) = lua {
        lua_action(line, name, nargs)
    } else if base == "capture" {
        capture_action(&mut b.proxy, line, which)
    } else {
        http_action(line, which, base, be_cap, diags)
    };
    let (act, next) = match got {
        Ok(v) => v,
        Err(Some(msg)) => {
            let who = who(&b.proxy);
            let msg = format!("error detected in {who} while parsing '{kw} {action}' rule : {msg}");
            return diags.alert(line, msg);
        }
        Err(None) => return,
    };
    if let HttpAction::SetBandwidthLimit(_) = &act {
        diags.notice(line, crate::filters::later_keyword(&format!("{kw} {action}")));
    }
    if let HttpAction::CacheUse(name) | HttpAction::CacheStore(name) = &act {
        // Declared by the action's parser, before the condition is read (as HAProxy's).
        crate::cache::rule_filter(&mut b.proxy, name, &line.span);
    }
    let p = &b.proxy;
    let wrap = |m: &str| format!("error detected while parsing an '{kw} {action}' condition : {m}");
    let unexpected = |w: &str| {
        format!("'{kw} {action}' expects either 'if' or 'unless' followed by a condition but found '{w}'.")
    };
    let Ok(cond) = condition(p, line, next, which.ctx(), &wrap, &unexpected, diags) else {
        return;
    };
    let rule = HttpRule { span: line.span.clone(), action: act, cond };
    if which == HttpWhich::Request {
        placed(b, line, Order::HttpRequest, diags);
    }
    let list = match which {
        HttpWhich::Request => &mut b.proxy.http_request,
        HttpWhich::Response => &mut b.proxy.http_response,
        HttpWhich::After => &mut b.proxy.http_after_response,
    };
    if list.last().is_some_and(|r| r.cond.is_none() && is_final(&r.action)) {
        diags.warning(
            line,
            format!("previous '{kw}' action is final and has no condition attached, further entries are NOOP."),
        );
    }
    list.push(rule);
}

/// Actions after which HAProxy warns that further rules are no-ops (`reject` and
/// `silent-drop` are final too, but HAProxy does not warn after them).
fn is_final(a: &HttpAction) -> bool {
    matches!(
        a,
        HttpAction::Allow
            | HttpAction::Deny { .. }
            | HttpAction::Return(_)
            | HttpAction::Tarpit { .. }
    ) || matches!(a, HttpAction::Redirect(r) if !r.ignore_empty)
}

pub(crate) type ActionResult = Result<(HttpAction, usize), Option<String>>;

/// `lua.<name>` and the `nargs` words its script asked for (HAProxy's `action_register_lua`).
fn lua_action(line: &Line, name: &str, nargs: usize) -> ActionResult {
    let args: Vec<String> = (0..nargs).map(|i| line.arg(2 + i).to_string()).collect();
    if args.iter().any(String::is_empty) {
        return Err(Some(format!("expect {nargs} arguments")));
    }
    Ok((HttpAction::Lua { name: name.to_string(), args }, 2 + nargs))
}

/// Where an action's log-format strings and samples are evaluated.
#[derive(Clone, Copy)]
pub(crate) struct At {
    pub(crate) ctx: Ctx,
    /// The proxy has backend capability (`be_name` is known in its request rules).
    pub(crate) be_cap: bool,
}

fn log_format(text: &str, at: At) -> Result<LogFormat, Option<String>> {
    logformat::parse_in(text, at.ctx, at.be_cap).map_err(Some)
}

/// Arguments up to the condition (or the end of the line), from word `from`.
fn args_until_cond(line: &Line, from: usize) -> Vec<&str> {
    words_from(line, from)
        .iter()
        .map(String::as_str)
        .take_while(|w| *w != "if" && *w != "unless")
        .collect()
}

fn http_action(
    line: &Line,
    which: HttpWhich,
    base: &str,
    be_cap: bool,
    diags: &mut Diags,
) -> ActionResult {
    let ctx = which.ctx();
    let at = At { ctx, be_cap };
    let a = args_until_cond(line, 2);
    let exactly = |n: usize, what: &str| -> Result<(), Option<String>> {
        if a.len() < n || a[..n].iter().any(|w| w.is_empty()) {
            return Err(Some(what.to_string()));
        }
        Ok(())
    };
    let action = match base {
        "allow" => return Ok((HttpAction::Allow, 2)),
        "use-service" if which == HttpWhich::Request => {
            return match a.first().copied().unwrap_or("") {
                "prometheus-exporter" => Ok((HttpAction::PrometheusExporter, 3)),
                "" => Err(Some("expects a service name.".into())),
                other => Err(Some(format!("unknown service '{other}'."))),
            };
        }
        "set-header" | "add-header" => {
            exactly(2, "expects exactly 2 arguments.")?;
            let name = a[0].to_string();
            let value = log_format(a[1], at)?;
            let act = if base == "set-header" {
                HttpAction::SetHeader { name, value }
            } else {
                HttpAction::AddHeader { name, value }
            };
            return Ok((act, 4));
        }
        "del-header" => {
            if a.is_empty() || a[0].is_empty() {
                return Err(Some("expects at least 1 argument.".into()));
            }
            if a.get(1) == Some(&"-m") {
                let how = match a.get(2).copied().unwrap_or("") {
                    "str" => NameMatch::Str,
                    "beg" => NameMatch::Beg,
                    "end" => NameMatch::End,
                    "sub" => NameMatch::Sub,
                    "reg" => {
                        crate::regex_check::check(a[0])
                            .map_err(|e| Some(format!("failed to parse the regex : {e}.")))?;
                        NameMatch::Reg
                    }
                    m => return Err(Some(format!("-m with unsupported matching method '{m}'."))),
                };
                return Ok((HttpAction::DelHeader { name: a[0].to_string(), how }, 5));
            }
            exactly(1, "expects at least 1 argument.")?;
            return Ok((HttpAction::DelHeader { name: a[0].to_string(), how: NameMatch::Str }, 3));
        }
        "replace-header" | "replace-value" => {
            exactly(3, "expects exactly 3 arguments.")?;
            crate::regex_check::check(a[1]).map_err(|e| Some(format!("{e}.")))?;
            let (name, regex) = (a[0].to_string(), a[1].to_string());
            let replace = log_format(a[2], at)?;
            let act = if base == "replace-header" {
                HttpAction::ReplaceHeader { name, regex, replace }
            } else {
                HttpAction::ReplaceValue { name, regex, replace }
            };
            return Ok((act, 5));
        }
        "set-path" | "set-pathq" | "set-query" | "set-uri" | "set-method" => {
            if a.len() != 1 || a[0].is_empty() {
                return Err(Some("expects exactly 1 argument <format>.".into()));
            }
            let f = log_format(a[0], at)?;
            let act = match base {
                "set-path" => HttpAction::SetPath(f),
                "set-pathq" => HttpAction::SetPathQ(f),
                "set-query" => HttpAction::SetQuery(f),
                "set-uri" => HttpAction::SetUri(f),
                _ => HttpAction::SetMethod(f),
            };
            return Ok((act, 3));
        }
        "replace-uri" | "replace-path" | "replace-pathq" => {
            if a.len() != 2 {
                return Err(Some(
                    "expects exactly 2 arguments <match-regex> and <replace-format>.".into(),
                ));
            }
            crate::regex_check::check(a[0])
                .map_err(|e| Some(format!("failed to parse the regex : {e}.")))?;
            let regex = a[0].to_string();
            let replace = log_format(a[1], at)?;
            let act = match base {
                "replace-uri" => HttpAction::ReplaceUri { regex, replace },
                "replace-pathq" => HttpAction::ReplacePathQ { regex, replace },
                _ => HttpAction::ReplacePath { regex, replace },
            };
            return Ok((act, 4));
        }
        "set-var" | "set-var-fmt" | "unset-var" => return var_action(line, base, at),
        "wait-for-body" => wait_for_body(&a, line, diags)?,
        "send-spoe-group" => return crate::spoe::action_words(line, 1).map_err(Some),
        "set-status" => set_status(&a)?,
        "strict-mode" => {
            exactly(1, "expects exactly 1 arguments.")?;
            let on = match a[0] {
                "on" => true,
                "off" => false,
                v => {
                    let msg = format!("Unexpected value '{v}'. Only 'on' and 'off' are supported.");
                    return Err(Some(msg));
                }
            };
            (HttpAction::StrictMode(on), 3)
        }
        "reject" => (HttpAction::Reject, 2),
        "silent-drop" => (HttpAction::SilentDrop, 2),
        "early-hint" => {
            exactly(2, "expects exactly 2 arguments.")?;
            let value = log_format(a[1], at)?;
            (HttpAction::EarlyHint { name: a[0].to_string(), value }, 4)
        }
        "redirect" => {
            let (r, next) = parse_redirect(line, 2, ctx, be_cap).map_err(Some)?;
            return Ok((HttpAction::Redirect(r), next));
        }
        "deny" | "return" | "tarpit" => return reply_action(line, base, be_cap, diags),
        "set-src" | "set-src-port" | "set-dst" | "set-dst-port" => {
            return addr_action(line, 1, base, ctx, be_cap).map_err(Some)
        }
        "set-bandwidth-limit" => return crate::filters::rule(line, 2).map_err(Some),
        "cache-use" | "cache-store" => {
            // (`if`/`unless` there: the name is missing.)
            let name = line.arg(2);
            if name.is_empty() || name == "if" || name == "unless" {
                return Err(Some("expects a cache name.".into()));
            }
            let act = if base == "cache-use" {
                HttpAction::CacheUse(name.to_string())
            } else {
                HttpAction::CacheStore(name.to_string())
            };
            (act, 3)
        }
        "auth" => {
            if a.first() == Some(&"realm") {
                match a.get(1).filter(|r| !r.is_empty()) {
                    Some(r) => return Ok((HttpAction::Auth { realm: Some(r.to_string()) }, 4)),
                    None => return Err(Some("missing realm value.\n".into())),
                }
            }
            (HttpAction::Auth { realm: None }, 2)
        }
        b if crate::stick::is_stick_action(b) => {
            let (a, next) =
                crate::stick::action(line, 1, ctx, be_cap).map_err(|m| Some(format!("{m}.")))?;
            return Ok((HttpAction::Stick(a), next));
        }
        _ => return Err(Some(format!("'{base}' is not supported yet"))),
    };
    Ok(action)
}

/// `set-src|set-src-port|set-dst|set-dst-port <expr>` at word `at` (the action's).
pub(crate) fn addr_action(
    line: &Line,
    at: usize,
    base: &str,
    ctx: Ctx,
    be_cap: bool,
) -> Result<(HttpAction, usize), String> {
    let text = line.arg(at + 1);
    let (parsed, _) = sample::parse(text, End::Input).map_err(|e| format!("{}.", e.plain()))?;
    if !parsed.avail.usable_in_proxy(ctx, be_cap) {
        return Err(format!(
            "fetch method '{text}' extracts information from '{}', none of which is available here.",
            parsed.avail.needs()
        ));
    }
    let part = match base {
        "set-src" => AddrPart::Src,
        "set-src-port" => AddrPart::SrcPort,
        "set-dst" => AddrPart::Dst,
        _ => AddrPart::DstPort,
    };
    Ok((HttpAction::SetAddr { part, expr: parsed.expr }, at + 2))
}

/// `http-request capture <expr> [len <n> | id <n>]`, `http-response capture <expr> id <n>`:
/// with `len`, a new request capture slot of this proxy.
fn capture_action(p: &mut crate::model::Proxy, line: &Line, which: HttpWhich) -> ActionResult {
    let ctx = which.ctx();
    let request = which == HttpWhich::Request;
    let usage = if request {
        "expects <expression> [ 'len' <length> | id <idx> ]"
    } else {
        "expects <expression> id <idx>"
    };
    let text = line.arg(2);
    if text.is_empty() {
        return Err(Some(usage.into()));
    }
    let (mut parsed, _) =
        sample::parse(text, End::Input).map_err(|e| Some(format!("{}.", e.plain())))?;
    let avail = parsed.avail;
    if avail == Avail::Message && ctx == Ctx::HttpResponse {
        acl::response_side(&mut parsed.expr);
    } else if !avail.usable_in_proxy(ctx, p.kind.is_backend()) {
        let needs = if parsed.kw == "status" { "HTTP response" } else { avail.needs() };
        return Err(Some(format!(
            "fetch method '{text}' extracts information from '{needs}', none of which is available here"
        )));
    }
    let (kw, val) = (line.arg(3), line.arg(4));
    let id = match kw {
        "" => return Err(Some(usage.into())),
        "len" if request => {
            if !p.kind.is_frontend() {
                return Err(Some(format!("proxy '{}' has no frontend capability", p.name)));
            }
            let len = crate::args::parse_u32(val).unwrap_or(0);
            if len == 0 {
                return Err(Some("length must be > 0".into()));
            }
            p.capture_slots.req.push(crate::model::CaptureSlot { header: None, len });
            p.capture_slots.req.len() as u32 - 1
        }
        "id" => {
            crate::args::parse_u32(val).ok_or_else(|| Some(format!("cannot parse id '{val}'")))?
        }
        k if request => return Err(Some(format!("expects 'len' or 'id', found '{k}'"))),
        k => return Err(Some(format!("expects 'id', found '{k}'"))),
    };
    Ok((HttpAction::Capture { expr: parsed.expr, id }, 5))
}

pub(crate) fn var_action(line: &Line, base: &str, at: At) -> ActionResult {
    let ctx = at.ctx;
    let action = line.arg(1);
    let incomplete = || {
        Some(format!("invalid or incomplete action '{base}'. Expects 'set-var(<var-name>)', 'set-var-fmt(<var-name>)' or 'unset-var(<var-name>)'."))
    };
    let inner = action
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(incomplete)?;
    let (var, conds) = match inner.split_once(',') {
        Some((v, c)) => (v, Some(c)),
        None => (inner, None),
    };
    if conds.is_some() && base == "unset-var" {
        return Err(Some("unset-var does not expect parameters after the variable name. Only \"set-var\" and \"set-var-fmt\" manage conditions.".into()));
    }
    let conds = match conds {
        Some(c) => crate::model::VarConds::parse(c).map_err(|m| Some(format!("{m}.")))?,
        None => 0,
    };
    let (scope, name) = sample::parse_var_name(var).map_err(|m| Some(format!("{m}.")))?;
    if base == "unset-var" {
        return Ok((HttpAction::UnsetVar { scope, name }, 2));
    }
    let text = line.arg(2);
    if base == "set-var-fmt" {
        // As HAProxy, a missing format is an empty one.
        let fmt = log_format(text, at)?;
        return Ok((HttpAction::SetVarFmt { scope, name, fmt, conds }, 3));
    }
    let (mut parsed, _) =
        sample::parse(text, End::Input).map_err(|e| Some(format!("{}.", e.plain())))?;
    let avail = parsed.avail;
    if avail == Avail::Message && ctx == Ctx::HttpResponse {
        acl::response_side(&mut parsed.expr);
    } else if !avail.usable_in_proxy(ctx, at.be_cap) {
        let needs = if parsed.kw == "status" { "HTTP response" } else { avail.needs() };
        return Err(Some(format!(
            "fetch method '{action}' extracts information from '{needs}', none of which is available here."
        )));
    }
    Ok((HttpAction::SetVar { scope, name, expr: parsed.expr, conds }, 3))
}

/// `wait-for-body time <time> [at-least <bytes>]`, the two options in any order (as HAProxy).
fn wait_for_body(
    a: &[&str],
    line: &Line,
    diags: &mut Diags,
) -> Result<(HttpAction, usize), Option<String>> {
    let (mut time, mut at_least, mut i) = (None, None, 0);
    while let Some(&opt) = a.get(i).filter(|o| **o == "time" || **o == "at-least") {
        let Some(v) = a.get(i + 1).filter(|v| !v.is_empty()) else {
            return Err(Some(format!("missing argument for '{opt}'.")));
        };
        if opt == "time" {
            time = Some(match read_time(v) {
                Ok(t) => {
                    if let Some(w) = t.warning {
                        diags.warning(line, w);
                    }
                    t.value
                }
                Err(TimeError::Overflow) => {
                    let msg = "time overflow (maximum value is 2147483647 ms or ~24.8 days).";
                    return Err(Some(msg.into()));
                }
                Err(TimeError::BadChar(c)) => {
                    return Err(Some(format!("unexpected character '{c}'.")))
                }
                Err(TimeError::Missing) => {
                    return Err(Some(format!("missing argument for '{opt}'.")))
                }
            });
        } else {
            let n = parse_size(v).map_err(|c| Some(format!("unexpected character '{c}'.")))?;
            at_least = Some(u64::from(n));
        }
        i += 2;
    }
    let Some(time) = time else {
        return Err(Some("expects time <time> [ at-least <bytes> ].".into()));
    };
    Ok((HttpAction::WaitForBody { time, at_least }, 2 + i))
}

fn set_status(a: &[&str]) -> Result<(HttpAction, usize), Option<String>> {
    let Some(code) = a.first() else {
        return Err(Some(
            "expects 1 argument: <status>; or 3 arguments: <status> reason <fmt>.".into(),
        ));
    };
    let status = match code.parse::<u16>() {
        Ok(s) if (100..=999).contains(&s) => s,
        _ => return Err(Some("expects an integer status code between 100 and 999.".into())),
    };
    if a.get(1) == Some(&"reason") && a.len() >= 3 {
        return Ok((HttpAction::SetStatus { status, reason: Some(a[2].to_string()) }, 5));
    }
    Ok((HttpAction::SetStatus { status, reason: None }, 3))
}

use crate::replies::reply_action;
pub use crate::replies::{parse_redirect, parse_reply, redirect_line, ReplyKind};
pub use crate::tcp_rules::{tcp_request, tcp_response};

// ---- use_backend, monitor ----

pub fn use_backend(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "'use_backend' expects a backend name.");
    }
    let wrap = |m: &str| format!("error detected while parsing switching rule : {m}");
    let target = if name.contains("%[") {
        match logformat::parse(name, Ctx::Switching) {
            Ok(f) => BackendTarget::Dynamic(f),
            Err(m) => {
                let m = m.strip_suffix('.').unwrap_or(&m);
                let msg = format!("failed to parse use_backend rule '{name}' : {m}.");
                return diags.alert(line, msg);
            }
        }
    } else {
        BackendTarget::Name(name.to_string())
    };
    let unexpected = |w: &str| {
        format!(
            "unexpected keyword '{w}' after switching rule, only 'if' and 'unless' are allowed."
        )
    };
    let Ok(cond) = condition(&b.proxy, line, 2, Ctx::Switching, &wrap, &unexpected, diags) else {
        return;
    };
    placed(b, line, Order::UseBackend, diags);
    b.proxy.use_backends.push(UseBackend { span: line.span.clone(), target, cond });
}

pub fn monitor_fail(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if !matches!(line.arg(2), "if" | "unless") {
        return diags.alert(
            line,
            "'monitor fail' requires either 'if' or 'unless' followed by a condition.",
        );
    }
    let wrap = |m: &str| format!("error detected while parsing a 'monitor fail' condition : {m}");
    let Ok(Some(cond)) =
        condition(&b.proxy, line, 2, Ctx::Monitor, &wrap, &|_| String::new(), diags)
    else {
        return;
    };
    placed(b, line, Order::MonitorFail, diags);
    b.proxy.monitor_fail.push(cond);
}

/// `force-persist` and `ignore-persist if|unless <cond>`, with HAProxy's messages (their
/// conditions read what a backend's request rules read).
pub fn persist_rule(b: &mut ProxyBuild, line: &Line, force: bool, diags: &mut Diags) {
    let kw = if force { "force-persist" } else { "ignore-persist" };
    if !matches!(line.arg(1), "if" | "unless") {
        let msg = format!("'{kw}' requires either 'if' or 'unless' followed by a condition.");
        return diags.alert(line, msg);
    }
    let wrap = |m: &str| {
        let m = m.strip_suffix('.').unwrap_or(m);
        format!("error detected while parsing a '{kw}' rule : {m}.")
    };
    let Ok(Some(cond)) =
        condition(&b.proxy, line, 1, Ctx::TcpContent, &wrap, &|_| String::new(), diags)
    else {
        return;
    };
    b.proxy.persist_rules.push(PersistRule { force, cond });
}

/// `use-server <server> if|unless <cond>`, with HAProxy's messages; the server is checked
/// once the section is read ([`crate::validate`]).
pub fn use_server(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "'use-server' expects a server name.");
    }
    if !matches!(line.arg(2), "if" | "unless") {
        return diags
            .alert(line, "'use-server' requires either 'if' or 'unless' followed by a condition.");
    }
    let wrap = |m: &str| {
        let m = m.strip_suffix('.').unwrap_or(m);
        format!("error detected while parsing switching rule : {m}.")
    };
    let Ok(Some(cond)) =
        condition(&b.proxy, line, 2, Ctx::TcpContent, &wrap, &|_| String::new(), diags)
    else {
        return;
    };
    // As HAProxy, a name with a sample or a variable is a log-format resolved per request.
    let target = if name.contains('%') {
        match logformat::parse(name, Ctx::HttpRequest) {
            Ok(f) => ServerTarget::Dynamic(f),
            Err(e) => {
                let e = e.strip_suffix('.').unwrap_or(&e);
                let msg = format!(
                    "Parsing [{}]; use-server rule failed to parse log-format '{name}' : {e}.",
                    line.span
                );
                return diags.alert(line, msg);
            }
        }
    } else {
        ServerTarget::Name(name.to_string())
    };
    b.proxy.use_servers.push(UseServer { span: line.span.clone(), target, cond });
}

pub fn monitor_uri(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let uri = line.arg(1);
    if uri.is_empty() {
        return diags.alert(line, "'monitor-uri' expects an URI.");
    }
    if no_extra(line, 2, "monitor-uri", diags) {
        b.proxy.monitor_uri = Some(uri.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;
    use crate::replies::ParsedReply;
    use crate::tcp_rules::{tcp_action_known, TCP_CONNECTION_ACTIONS, TCP_CONTENT_ACTIONS};

    fn line(text: &str) -> Line {
        let (mut lines, _) = lex_source("r.cfg", text, &|_| None);
        lines.remove(0)
    }

    fn reply(text: &str, kind: ReplyKind) -> Result<ParsedReply, String> {
        parse_reply(&line(text), 2, kind, Ctx::HttpRequest, true)
    }

    #[test]
    fn deny_without_payload_uses_the_error_message_of_its_status() {
        let p = reply("http-request deny deny_status 429", ReplyKind::Deny).expect("parses");
        assert!(!p.explicit);
        assert_eq!((p.reply.status, &p.reply.body), (429, &ReplyBody::ErrorFiles));
        let e = reply("http-request deny deny_status 418", ReplyKind::Deny).err();
        assert_eq!(
            e.as_deref(),
            Some("status code '418' not handled by default with 'default-errorfiles' argument..")
        );
    }

    #[test]
    fn return_without_payload_is_empty_and_drops_its_content_type() {
        let p = reply("http-request return status 404 content-type text/plain", ReplyKind::Return)
            .expect("parses");
        assert_eq!((p.reply.status, &p.reply.body), (404, &ReplyBody::None));
        assert_eq!(p.reply.content_type, None);
        assert_eq!(p.warnings.len(), 1);
    }

    #[test]
    fn a_string_payload_needs_a_content_type_and_a_status_with_a_body() {
        let p = reply(
            r#"http-request return content-type text/plain string ok hdr X-A "%[src]" if TRUE"#,
            ReplyKind::Return,
        )
        .expect("parses");
        assert_eq!(p.reply.body, ReplyBody::String("ok".into()));
        assert_eq!(p.reply.headers.len(), 1);
        assert_eq!(p.next, 9);
        assert!(reply("http-request return string ok", ReplyKind::Return).is_err());
        assert!(reply("http-request return status 304 content-type a string b", ReplyKind::Return)
            .is_err());
    }

    fn request_action(text: &str) -> Result<(HttpAction, usize), Option<String>> {
        let l = line(text);
        let base = action_base(l.arg(1)).0.to_string();
        http_action(&l, HttpWhich::Request, &base, false, &mut Diags::default())
    }

    #[test]
    fn tarpit_defaults_to_500_and_takes_deny_status_or_status() {
        assert_eq!(
            request_action("http-request tarpit").expect("parses"),
            (HttpAction::Tarpit { status: 500 }, 2)
        );
        assert_eq!(
            request_action("http-request tarpit deny_status 429 if TRUE").expect("parses"),
            (HttpAction::Tarpit { status: 429 }, 4)
        );
        assert_eq!(
            request_action("http-request tarpit status 503").expect("parses").0,
            HttpAction::Tarpit { status: 503 }
        );
        let e = request_action("http-request tarpit deny_status 418").expect_err("no message");
        assert_eq!(
            e.as_deref(),
            Some("status code '418' not handled by default with 'default-errorfiles' argument..")
        );
        let e = request_action("http-request tarpit content-type text/plain string hi");
        assert!(e.expect_err("refused").is_some_and(|m| m.contains("not supported yet")));
    }

    #[test]
    fn strict_mode_takes_on_or_off() {
        assert_eq!(
            request_action("http-request strict-mode off").expect("parses"),
            (HttpAction::StrictMode(false), 3)
        );
        assert_eq!(
            request_action("http-request strict-mode on").expect("parses").0,
            HttpAction::StrictMode(true)
        );
        assert_eq!(
            request_action("http-request strict-mode").expect_err("missing").as_deref(),
            Some("expects exactly 1 arguments.")
        );
        assert_eq!(
            request_action("http-request strict-mode yes").expect_err("bad").as_deref(),
            Some("Unexpected value 'yes'. Only 'on' and 'off' are supported.")
        );
    }

    #[test]
    fn set_var_fmt_stores_a_log_format_and_a_missing_one_is_empty() {
        let (act, next) =
            request_action("http-request set-var-fmt(txn.from) %[src]:%cp").expect("parses");
        let HttpAction::SetVarFmt { scope, name, fmt, .. } = act else { panic!("{act:?}") };
        assert_eq!((scope, name.as_str(), fmt.parts.len(), next), (VarScope::Txn, "from", 3, 3));
        let (act, _) = request_action("http-request set-var-fmt(req.x)").expect("parses");
        let HttpAction::SetVarFmt { fmt, .. } = act else { panic!("{act:?}") };
        assert_eq!((fmt.text.as_str(), fmt.parts.len()), ("", 0));
        assert!(request_action("http-request set-var-fmt(x) a").is_err());
        let e = request_action("http-request set-var-fmt(txn.x) %[be_name]").expect_err("fe");
        assert!(e.is_some_and(|m| m.contains("needs 'backend'")));
    }

    #[test]
    fn reject_silent_drop_and_early_hint_take_their_arguments() {
        assert_eq!(request_action("http-request reject").expect("ok"), (HttpAction::Reject, 2));
        assert_eq!(
            request_action("http-request silent-drop if TRUE").expect("ok"),
            (HttpAction::SilentDrop, 2)
        );
        let (act, next) = request_action("http-request early-hint Link </a.css>").expect("ok");
        let HttpAction::EarlyHint { name, value } = act else { panic!("{act:?}") };
        assert_eq!((name.as_str(), value.text.as_str(), next), ("Link", "</a.css>", 4));
        for bad in ["http-request early-hint Link", "http-request early-hint Link \"\""] {
            assert_eq!(
                request_action(bad).expect_err(bad).as_deref(),
                Some("expects exactly 2 arguments.")
            );
        }
    }

    #[test]
    fn only_tarpit_of_the_new_final_actions_warns_about_later_rules() {
        assert!(is_final(&HttpAction::Tarpit { status: 500 }));
        assert!(!is_final(&HttpAction::Reject));
        assert!(!is_final(&HttpAction::SilentDrop));
    }

    #[test]
    fn each_rule_list_has_its_own_set_of_new_actions() {
        for a in ["strict-mode", "set-var-fmt(txn.x)"] {
            for w in [HttpWhich::Request, HttpWhich::Response, HttpWhich::After] {
                assert!(is_known_action(w, a) && w.supported(action_base(a).0), "{a}");
            }
        }
        for a in ["tarpit", "reject", "early-hint"] {
            assert!(HttpWhich::Request.supported(a));
            assert!(!is_known_action(HttpWhich::Response, a), "{a}");
        }
        assert!(HttpWhich::Response.supported("silent-drop"));
        assert!(!is_known_action(HttpWhich::After, "silent-drop"));
    }

    #[test]
    fn an_action_listed_with_a_star_is_known_by_its_prefix_as_in_haproxy() {
        // Named in the list as `track-sc(*)`: never refused with a message listing it.
        for a in ["track-sc0", "track-sc1", "track-sc2", "sc-inc-gpc0(0)", "set-var(txn.x)"] {
            assert!(is_known_action(HttpWhich::Request, a), "{a}");
        }
        assert!(is_known_action(HttpWhich::Response, "track-sc1"));
        assert!(!is_known_action(HttpWhich::After, "track-sc0"));
        assert!(!is_known_action(HttpWhich::Request, "track"));
        for a in ["track-sc0", "track-sc2", "sc-set-gpt0(1)", "set-var(sess.x)"] {
            assert!(tcp_action_known(TCP_CONTENT_ACTIONS, a), "{a}");
            assert!(tcp_action_known(TCP_CONNECTION_ACTIONS, a), "{a}");
        }
        assert!(!tcp_action_known(TCP_CONNECTION_ACTIONS, "set-log-level"));
    }

    #[test]
    fn redirects_default_to_302_and_keep_their_options() {
        let (r, next) = parse_redirect(
            &line("redirect prefix /new code 301 drop-query if x"),
            1,
            Ctx::HttpRequest,
            true,
        )
        .expect("parses");
        assert_eq!(
            (r.kind, r.code, r.drop_query, r.append_slash),
            (RedirectKind::Prefix, 301, true, false)
        );
        assert_eq!(next, 6);
        let (r, _) = parse_redirect(&line("redirect scheme https"), 1, Ctx::HttpRequest, true)
            .expect("parses");
        assert_eq!((r.kind, r.code), (RedirectKind::Scheme, 302));
        assert!(parse_redirect(&line("redirect location /x code 305"), 1, Ctx::HttpRequest, true)
            .is_err());
    }
}
