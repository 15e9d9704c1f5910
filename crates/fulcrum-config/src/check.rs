//! Health-check lines of a proxy: `option httpchk`, `option tcp-check`, `http-check ...`,
//! `tcp-check ...`, and turning them into the backend's [`HealthCheck`] when the section ends.
//!
//! As in HAProxy, `tcp-check` and `http-check` lines each fill a list of steps of their own; the
//! last check option decides which list is used. A proxy's first `tcp-check` (or `http-check`)
//! line starts a new list instead of adding to the one inherited from `defaults`.

use crate::args::{atol, no_extra, Diags};
use crate::lexer::Line;
use crate::model::*;
use crate::proxy::ProxyBuild;

/// The check lists being built for one section (kept apart from the model until the end).
#[derive(Clone, Debug, Default)]
pub struct CheckLists {
    pub tcp: Vec<CheckStep>,
    pub http: Vec<CheckStep>,
    /// The steps of the last protocol check option (`option redis-check`...), built whole by
    /// `check_protocols`.
    pub protocol: Vec<CheckStep>,
    /// This section started its own list (a `defaults` list is replaced, not extended).
    pub own_tcp: bool,
    pub own_http: bool,
}

impl CheckLists {
    /// What a proxy inherits: the lists, not the fact of having written them.
    pub fn inherited(&self) -> Self {
        CheckLists { own_tcp: false, own_http: false, ..self.clone() }
    }

    fn tcp_list(&mut self) -> &mut Vec<CheckStep> {
        if !self.own_tcp {
            self.tcp.clear();
            self.own_tcp = true;
        }
        &mut self.tcp
    }

    fn http_list(&mut self) -> &mut Vec<CheckStep> {
        if !self.own_http {
            self.http.clear();
            self.own_http = true;
        }
        &mut self.http
    }
}

/// HAProxy's refusal of `no option <check>` / `default option <check>`; true when refused.
pub fn negated(line: &Line, diags: &mut Diags) -> bool {
    if line.arg(0) != "no" && line.arg(0) != "default" {
        return false;
    }
    diags.alert(line, format!("negation/default is not supported for option '{}'.", line.arg(2)));
    true
}

/// `option httpchk [<uri>]`, `option httpchk <method> <uri> [<version>]`.
pub fn option_httpchk(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 5, "option httpchk", diags) {
        return;
    }
    let (a, u, v) = (line.arg(2), line.arg(3), line.arg(4));
    let mut send = HttpSend { from_option: true, ..Default::default() };
    match (a.is_empty(), u.is_empty()) {
        (false, true) => send.uri = Some(a.to_string()),
        (false, false) => {
            send.method = Some(a.to_string());
            send.uri = Some(u.to_string());
        }
        _ => {}
    }
    if !v.is_empty() {
        let (version, hidden) = split_hidden(v);
        if hidden.is_some() {
            diags.warning(line, "'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead.");
        }
        send.version = Some(version.to_string());
        if let Some((headers, body)) = hidden {
            send.headers = headers;
            send.body = body;
        }
    }
    b.proxy.health_check.kind = CheckKind::Http;
    add_http_send(b.checks.http_list(), send);
}

/// The headers and body an old-style version string hides after `\r\n`.
#[allow(clippy::type_complexity)]
fn split_hidden(v: &str) -> (&str, Option<(Vec<(String, String)>, Option<String>)>) {
    let Some(at) = v.find("\r\n") else { return (v, None) };
    let (version, rest) = (&v[..at], &v[at..]);
    let (head, body) = match rest.find("\r\n\r\n") {
        Some(b) => (&rest[..b], Some(rest[b + 4..].to_string())),
        None => (rest, None),
    };
    let headers = head
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    (version, Some((headers, body.filter(|b| !b.is_empty()))))
}

/// `option tcp-check`.
pub fn option_tcp_check(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if !negated(line, diags) && no_extra(line, 2, "option tcp-check", diags) {
        b.proxy.health_check.kind = CheckKind::Tcp;
    }
}

/// `http-check <disable-on-404|send-state|connect|send|expect|comment> ...`.
pub fn http_check(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let sub = line.arg(1);
    let step = match sub {
        "disable-on-404" | "send-state" => {
            if no_extra(line, 2, &format!("http-check {sub}"), diags) {
                let h = &mut b.proxy.health_check;
                if sub == "send-state" {
                    h.send_state = true;
                } else {
                    h.disable_on_404 = true;
                }
            }
            return;
        }
        "connect" => connect(line),
        "send" => http_send(line).map(|s| CheckStep::Send(SendStep::Http(s))),
        "expect" => expect(line, true),
        "comment" => comment(line),
        _ if is_var_action(sub) => var_step(line),
        _ => Err(format!("'http-check' only supports 'disable-on-404', 'send-state', 'comment', 'connect', 'send', 'expect'. but got '{sub}'")),
    };
    let step = match step {
        Ok(s) => s,
        Err(e) => return diags.alert(line, message("http-check", sub, e)),
    };
    let list = b.checks.http_list();
    if let Err(e) = order_ok(list, &step) {
        return diags.alert(line, message("http-check", sub, e));
    }
    match step {
        CheckStep::Send(SendStep::Http(s)) => add_http_send(list, s),
        other => list.push(other),
    }
}

/// `tcp-check <connect|send|send-binary|expect|comment> ...`.
pub fn tcp_check(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let sub = line.arg(1);
    let step = match sub {
        "connect" => connect(line),
        "send" | "send-binary" => tcp_send(line, sub == "send-binary"),
        "expect" => expect(line, false),
        "comment" => comment(line),
        _ if is_var_action(sub) => var_step(line),
        "send-lf" | "send-binary-lf" => tcp_send_lf(line, sub == "send-binary-lf"),
        _ => Err(format!("'tcp-check' only supports 'comment', 'connect', 'send', 'send-binary', 'expect'. but got '{sub}'")),
    };
    match step {
        Ok(CheckStep::Connect(c)) if !first_connect_ok(&b.checks.tcp_list()[..]) => {
            let _ = c;
            diags.alert(line, message("tcp-check", sub, "first step MUST also be a 'connect', optionally preceded by a 'set-var', an 'unset-var' or a 'comment', when there is a 'connect' step in the tcp-check ruleset".into()));
        }
        Ok(step) => b.checks.tcp_list().push(step),
        Err(e) => diags.alert(line, message("tcp-check", sub, e)),
    }
}

fn is_var_action(sub: &str) -> bool {
    sub.starts_with("set-var(")
        || sub.starts_with("unset-var(")
        || sub == "set-var"
        || sub == "unset-var"
}

/// `set-var(<name>[,<cond>...]) <expr>` / `unset-var(<name>)` in a check's steps.
fn var_step(line: &Line) -> Result<CheckStep, String> {
    let sub = line.arg(1);
    let unset = sub.starts_with("unset-var");
    let base = if unset { "unset-var" } else { "set-var" };
    // HAProxy names the action before each reason.
    let said = |m: String| format!("'{base}' : {m}");
    let inner = sub
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            said(format!("invalid or incomplete action '{base}'. Expects '{base}(<var-name>)'."))
        })?;
    let (var, conds) = match inner.split_once(',') {
        Some((v, c)) if !unset => (v, VarConds::parse(c).map_err(|m| said(format!("{m}.")))?),
        Some(_) => return Err(said("unset-var does not expect parameters after the variable name. Only \"set-var\" and \"set-var-fmt\" manage conditions.".into())),
        None => (inner, 0),
    };
    let (scope, name) = crate::sample::parse_var_name(var).map_err(|m| said(format!("{m}.")))?;
    if unset {
        return Ok(CheckStep::UnsetVar { scope, name });
    }
    let (mut parsed, _) = crate::sample::parse(line.arg(2), crate::sample::End::Input)
        .map_err(|e| said(format!("{}.", e.plain())))?;
    // A check reads its server's response: `hdr()` there is the response's.
    crate::acl::response_side(&mut parsed.expr);
    Ok(CheckStep::SetVar { scope, name, expr: parsed.expr, conds })
}

/// HAProxy's `'<kw> <sub>' : <reason>.` (messages that already name the keyword stay as is).
fn message(kw: &str, sub: &str, e: String) -> String {
    if e.starts_with(&format!("'{kw}")) {
        e
    } else if e.ends_with('.') {
        format!("'{kw} {sub}' : {e}")
    } else {
        format!("'{kw} {sub}' : {e}.")
    }
}

/// A `connect` step after others is allowed only when the list already starts with one.
fn first_connect_ok(list: &[CheckStep]) -> bool {
    match list.iter().find(|s| !matches!(s, CheckStep::Comment(_))) {
        None => true,
        Some(CheckStep::Connect(_)) => true,
        Some(_) => false,
    }
}

/// HAProxy's ordering rules for explicit `http-check` steps.
fn order_ok(list: &[CheckStep], step: &CheckStep) -> Result<(), String> {
    let index = list.iter().filter(|s| !from_option(s)).count() + 1;
    let last = list.iter().rev().find(|s| {
        !matches!(s, CheckStep::Comment(_) | CheckStep::SetVar { .. } | CheckStep::UnsetVar { .. })
    });
    let last_is_option_send = last.is_some_and(from_option);
    match (last, step) {
        (None, _) => Ok(()),
        _ if last_is_option_send => Ok(()),
        (Some(l), CheckStep::Send(_)) if !matches!(l, CheckStep::Connect(_)) => Err(format!(
            "unable to add http-check send rule at step {index} (missing connect rule)"
        )),
        (Some(l), CheckStep::Expect(_))
            if !matches!(l, CheckStep::Send(_) | CheckStep::Expect(_)) =>
        {
            Err(format!("unable to add http-check expect rule at step {index} (missing send rule)"))
        }
        (Some(l), CheckStep::Connect(_)) if !matches!(l, CheckStep::Expect(_)) => Err(format!(
            "unable to add http-check connect rule at step {index} (missing expect rule)"
        )),
        _ => Ok(()),
    }
}

fn from_option(s: &CheckStep) -> bool {
    matches!(s, CheckStep::Send(SendStep::Http(h)) if h.from_option)
}

/// Adds an HTTP send step, merging it with the one `option httpchk` gave, as HAProxy does.
fn add_http_send(list: &mut Vec<CheckStep>, new: HttpSend) {
    // The first send (after a first connect, if any) may be merged with.
    let first = list.iter().position(|s| !matches!(s, CheckStep::Comment(_))).map(|i| {
        if matches!(list[i], CheckStep::Connect(_)) {
            i + 1
        } else {
            i
        }
    });
    let existing = first.filter(|&i| i < list.len()).and_then(|i| match &mut list[i] {
        CheckStep::Send(SendStep::Http(h)) => Some(h),
        _ => None,
    });
    match existing {
        // A new `option httpchk` replaces the previous option's request.
        Some(old) if new.from_option && old.from_option => *old = new,
        // The option completes an explicit `http-check send` where it stands.
        Some(old) if new.from_option => overwrite(old, new),
        // An explicit `http-check send` completes the option's request, which then moves to
        // the end of the list, as HAProxy 2.6 moves it: the steps written before the send
        // (`set-var`...) run before it.
        Some(old) if old.from_option => {
            overwrite(old, new);
            old.from_option = false;
            if let Some(i) = first {
                let merged = list.remove(i);
                list.push(merged);
            }
        }
        _ if new.from_option => list.insert(0, CheckStep::Send(SendStep::Http(new))),
        _ => list.push(CheckStep::Send(SendStep::Http(new))),
    }
}

/// HAProxy's `tcpcheck_overwrite_send_http_rule`: what `new` sets replaces `old`'s; the header
/// list is always replaced.
fn overwrite(old: &mut HttpSend, new: HttpSend) {
    if new.method.is_some() {
        old.method = new.method;
    }
    if new.uri.is_some() || new.uri_lf.is_some() {
        (old.uri, old.uri_lf) = (new.uri, new.uri_lf);
    }
    if new.version.is_some() {
        old.version = new.version;
    }
    (old.headers, old.header_lf) = (new.headers, new.header_lf);
    if new.body.is_some() || new.body_lf.is_some() {
        (old.body, old.body_lf) = (new.body, new.body_lf);
    }
    if new.comment.is_some() {
        old.comment = new.comment;
    }
}

/// A `uri-lf` / `body-lf` log-format string, with HAProxy's message.
fn check_lf(text: &str) -> Result<LogFormat, String> {
    crate::logformat::parse(text, crate::sample::Ctx::HttpResponse).map_err(|e| {
        let e = e.strip_suffix('.').unwrap_or(&e);
        format!("'{text}' invalid log-format string ({e}).\n")
    })
}

/// `connect [default] [port <n>] [addr <ip>] [send-proxy] [linger] [comment <c>] ...`.
fn connect(line: &Line) -> Result<CheckStep, String> {
    let mut c = ConnectStep::default();
    let mut i = 2;
    while i < line.words.len() {
        let (opt, val) = (line.arg(i), line.arg(i + 1));
        let has_val = i + 1 < line.words.len();
        match opt {
            "default" => c.default = true,
            "ssl" => c.ssl = true,
            "via-socks4" => c.via_socks4 = true,
            "sni" | "alpn" if !has_val => {
                return Err(format!("'{opt}' expects a string as argument.."))
            }
            "sni" => {
                c.sni = Some(val.to_string());
                i += 1;
            }
            "alpn" => {
                c.alpn = Some(val.split(',').map(str::to_string).collect());
                i += 1;
            }
            "send-proxy" => c.send_proxy = true,
            "linger" => c.linger = true,
            "port" if !has_val => {
                return Err(format!(
                    "'{opt}' expects a port number or a sample expression as argument"
                ))
            }
            "port" => {
                match val.parse::<u32>() {
                    Ok(p @ 1..=65535) => c.port = Some(p as u16),
                    Ok(_) => return Err(format!("expects a valid TCP port (from range 1 to 65535) or a sample expression, got {val}")),
                    Err(_) => return Err(format!("'port' : a sample expression is not supported yet (got '{val}')")),
                }
                i += 1;
            }
            "addr" if !has_val => return Err(format!("'{opt}' expects <ipv4|ipv6> as argument")),
            "addr" => {
                c.addr = Some(val.to_string());
                i += 1;
            }
            "comment" if !has_val => return Err(format!("'{opt}' expects a string as argument")),
            "comment" => {
                c.comment = Some(val.to_string());
                i += 1;
            }
            "proto" => return Err(format!("'{opt}' is not supported yet")),
            _ => return Err(format!("expects 'comment', 'port', 'addr', 'send-proxy', 'ssl', 'sni', 'alpn' or 'via-socks4', 'linger', 'default' but got '{opt}' as argument")),
        }
        i += 1;
    }
    Ok(CheckStep::Connect(c))
}

/// `send-lf <fmt> [comment <c>]` / `send-binary-lf <fmt> [comment <c>]`.
fn tcp_send_lf(line: &Line, binary: bool) -> Result<CheckStep, String> {
    let data = line.arg(2);
    if line.words.len() < 3 {
        return Err(format!("'string' expects a {} as argument", line.arg(1)));
    }
    let comment = trailing_comment(line, 3)?;
    let fmt = crate::logformat::parse(data, crate::sample::Ctx::HttpResponse).map_err(|e| {
        let e = e.strip_suffix('.').unwrap_or(&e);
        format!("'{data}' invalid log-format string ({e}).\n")
    })?;
    Ok(CheckStep::Send(SendStep::Lf { fmt, binary, comment }))
}

/// `send <string> [comment <c>]` / `send-binary <hex> [comment <c>]`.
fn tcp_send(line: &Line, binary: bool) -> Result<CheckStep, String> {
    let data = line.arg(2);
    if line.words.len() < 3 {
        // (HAProxy's words, in its order.)
        let what = if binary { "binary string" } else { "string" };
        return Err(format!("'{what}' expects a {} as argument", line.arg(1)));
    }
    let comment = trailing_comment(line, 3)?;
    let data = if binary {
        hex(data).map_err(|e| format!("'{data}' invalid binary string ({e})"))?
    } else {
        data.as_bytes().to_vec()
    };
    Ok(CheckStep::Send(SendStep::Bytes { data, comment }))
}

/// `[comment <c>]` at the end of a send line.
fn trailing_comment(line: &Line, from: usize) -> Result<Option<String>, String> {
    let mut comment = None;
    let mut i = from;
    while i < line.words.len() {
        match line.arg(i) {
            "comment" if i + 1 < line.words.len() => {
                comment = Some(line.arg(i + 1).to_string());
                i += 2;
            }
            "comment" => return Err("'comment' expects a string as argument".into()),
            other => return Err(format!("expects 'comment' but got '{other}' as argument")),
        }
    }
    Ok(comment)
}

/// Decodes an even-length hexadecimal string, with HAProxy's `parse_binary` messages.
pub fn hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err("an even number of hex digit is expected".into());
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("an hex digit is expected (found '{c}')"));
    }
    Ok((0..s.len()).step_by(2).filter_map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect())
}

/// `http-check send [meth <m>] [uri <u>] [ver <v>] [hdr <n> <v>]* [body <b>] [comment <c>]`.
fn http_send(line: &Line) -> Result<HttpSend, String> {
    let mut s = HttpSend::default();
    let mut i = 2;
    while i < line.words.len() {
        let opt = line.arg(i);
        let need = |n: usize| {
            if (1..=n).any(|k| line.arg(i + k).is_empty()) {
                Err(if opt == "hdr" {
                    format!("'{opt}' expects <name> and <value> as arguments")
                } else {
                    format!("'{opt}' expects a string as argument")
                })
            } else {
                Ok(())
            }
        };
        match opt {
            "meth" | "uri" | "ver" | "body" | "comment" | "uri-lf" | "body-lf" => {
                need(1)?;
                let v = Some(line.arg(i + 1).to_string());
                match opt {
                    "meth" => s.method = v,
                    "uri" => (s.uri, s.uri_lf) = (v, None),
                    "uri-lf" => (s.uri, s.uri_lf) = (None, Some(check_lf(line.arg(i + 1))?)),
                    "ver" => s.version = v,
                    "body" => (s.body, s.body_lf) = (v, None),
                    "body-lf" => (s.body, s.body_lf) = (None, Some(check_lf(line.arg(i + 1))?)),
                    _ => s.comment = v,
                }
                i += 2;
            }
            "hdr" => {
                need(2)?;
                let (n, v) = (line.arg(i + 1), line.arg(i + 2));
                if n.eq_ignore_ascii_case("host") {
                    if let Some((_, prev)) =
                        s.headers.iter().find(|(h, _)| h.eq_ignore_ascii_case("host"))
                    {
                        return Err(format!("'{n}' header already defined (previous value is '{prev}')"));
                    }
                }
                // The value is a log-format string (HAProxy's message as it is).
                let fmt = crate::logformat::parse(v, crate::sample::Ctx::HttpResponse)?;
                // HAProxy computes these itself and drops configured ones.
                if !n.eq_ignore_ascii_case("content-length")
                    && !n.eq_ignore_ascii_case("transfer-encoding")
                {
                    if v.contains('%') {
                        s.header_lf.push((s.headers.len(), fmt));
                    }
                    s.headers.push((n.to_string(), v.to_string()));
                }
                i += 3;
            }
            _ => return Err(format!("expects 'comment', 'meth', 'uri', 'uri-lf', 'ver', 'hdr', 'body' or 'body-lf' but got '{opt}' as argument")),
        }
    }
    Ok(s)
}

/// `comment <text>`.
fn comment(line: &Line) -> Result<CheckStep, String> {
    if line.arg(2).is_empty() {
        return Err("expects a string as first argument".into());
    }
    if let Some(extra) = line.words.get(3) {
        return Err(format!("'comment' cannot handle unexpected argument '{extra}'"));
    }
    Ok(CheckStep::Comment(line.arg(2).to_string()))
}

/// `expect [min-recv <n>] [ok-status <st>] [error-status <st>] [tout-status <st>]
/// [on-success <fmt>] [on-error <fmt>] [comment <c>] [!] <match> <pattern>`.
fn expect(line: &Line, http: bool) -> Result<CheckStep, String> {
    if line.words.len() < 3 {
        return Err("expects at least a matching pattern as arguments".into());
    }
    let mut kind: Option<ExpectKind> = None;
    let mut e = ExpectStep::new(ExpectKind::Custom(CustomExpect::Agent));
    let mut i = 2;
    while i < line.words.len() {
        let mut word = line.arg(i);
        let mut in_pattern = false;
        while let Some(rest) = word.strip_prefix('!') {
            e.inverse = !e.inverse;
            in_pattern = true;
            word = rest;
            if word.is_empty() {
                i += 1;
                word = line.arg(i);
            }
        }
        let val = line.arg(i + 1);
        let has_val = i + 1 < line.words.len() && !val.is_empty();
        let settings = matches!(
            word,
            "min-recv"
                | "comment"
                | "on-success"
                | "on-error"
                | "ok-status"
                | "error-status"
                | "tout-status"
                | "status-code"
        );
        if settings && in_pattern {
            return Err(format!("[!] not supported with '{word}'"));
        }
        if settings && !has_val {
            return Err(match word {
                "min-recv" => format!("'{word}' expects a integer as argument"),
                _ => format!("'{word}' expects a string as argument"),
            });
        }
        let is_pattern = matches!(
            word,
            "string"
                | "rstring"
                | "binary"
                | "rbinary"
                | "status"
                | "rstatus"
                | "hdr"
                | "fhdr"
                | "string-lf"
                | "binary-lf"
                | "custom"
        );
        if is_pattern && kind.is_some() {
            return Err("only on pattern expected".into());
        }
        match word {
            "min-recv" => {
                let n = atol(val);
                if !(-1..=i64::from(i32::MAX)).contains(&n) {
                    return Err("'min-recv' expects -1 or an integer from 0 to INT_MAX".into());
                }
                e.min_recv = n;
                i += 1;
            }
            "comment" => {
                e.comment = Some(val.to_string());
                i += 1;
            }
            "on-success" => {
                e.on_success = Some(CheckMessage::Text(val.to_string()));
                i += 1;
            }
            "on-error" => {
                e.on_error = Some(CheckMessage::Text(val.to_string()));
                i += 1;
            }
            "ok-status" | "error-status" | "tout-status" => {
                let st = status_word(word, val)?;
                match word {
                    "ok-status" => e.ok_status = Some(st),
                    "error-status" => e.error_status = Some(st),
                    _ => e.tout_status = Some(st),
                }
                i += 1;
            }
            "status-code" => return Err("'status-code' is not supported yet".into()),
            "string-lf" | "binary-lf" => return Err(format!("'{word}' is not supported yet")),
            "custom" => return Err("'custom' is only used by HAProxy's protocol checks".into()),
            "string" | "rstring" | "binary" | "rbinary" | "status" | "rstatus" => {
                let tcp_only = matches!(word, "binary" | "rbinary");
                let http_only = matches!(word, "status" | "rstatus");
                if (http && tcp_only) || (!http && http_only) {
                    return Err(bad_word(http, word));
                }
                if !has_val {
                    return Err(format!("'{word}' expects a <pattern> as argument"));
                }
                kind = Some(pattern(word, val, http)?);
                i += 1;
            }
            "hdr" | "fhdr" if http => {
                let (h, used) = header_expect(line, i)?;
                kind = Some(ExpectKind::Header(h));
                i += used;
            }
            _ => return Err(bad_word(http, word)),
        }
        i += 1;
    }
    e.kind = kind.ok_or("expects at least a matching pattern as arguments")?;
    Ok(CheckStep::Expect(e))
}

fn bad_word(http: bool, word: &str) -> String {
    if http {
        format!("'only supports min-recv, [!]string', '[!]rstring', '[!]string-lf', '[!]status', '[!]rstatus', [!]hdr, [!]fhdr or comment but got '{word}' as argument")
    } else {
        format!("'only supports min-recv, '[!]binary', '[!]string', '[!]rstring', '[!]string-lf''[!]rbinary', '[!]binary-lf' or comment but got '{word}' as argument")
    }
}

fn status_word(word: &str, val: &str) -> Result<CheckStatus, String> {
    let allowed: &[&str] = match word {
        "ok-status" => &["L7OK", "L7OKC", "L6OK", "L4OK"],
        "error-status" => &["L7RSP", "L7STS", "L7OKC", "L6RSP", "L4CON"],
        _ => &["L7TOUT", "L6TOUT", "L4TOUT"],
    };
    let up = val.to_ascii_uppercase();
    match CheckStatus::parse(&up) {
        Some(st) if allowed.contains(&up.as_str()) => Ok(st),
        _ => Err(match word {
            "ok-status" => format!(
                "'{word}' only supports 'L4OK', 'L6OK', 'L7OK' or 'L7OKC' status (got '{val}')."
            ),
            "error-status" => format!(
                "'{word}' only supports 'L4CON', 'L6RSP', 'L7RSP' or 'L7STS' status (got '{val}')."
            ),
            _ => format!(
                "'{word}' only supports 'L4TOUT', 'L6TOUT' or 'L7TOUT' status (got '{val}')."
            ),
        }),
    }
}

/// The pattern of a `string`/`rstring`/`binary`/`rbinary`/`status`/`rstatus` expect.
fn pattern(word: &str, val: &str, http: bool) -> Result<ExpectKind, String> {
    let regex = |v: &str| -> Result<String, String> {
        crate::regex_check::check(v).map_err(|e| format!("'{word}' : {e}"))?;
        Ok(v.to_string())
    };
    Ok(match word {
        "string" if http => ExpectKind::Body(val.as_bytes().to_vec()),
        "string" => ExpectKind::String(val.as_bytes().to_vec()),
        "rstring" if http => ExpectKind::BodyRegex(regex(val)?),
        "rstring" => ExpectKind::Regex(regex(val)?),
        "binary" => ExpectKind::Binary(
            hex(val).map_err(|e| format!("'{val}' invalid binary string ({e})"))?,
        ),
        "rbinary" => ExpectKind::BinaryRegex(regex(val)?),
        "rstatus" => ExpectKind::StatusRegex(regex(val)?),
        _ => ExpectKind::Status(status_ranges(val)?),
    })
}

/// `200`, `200-399`, `200,301-302`: HAProxy's status code list.
fn status_ranges(val: &str) -> Result<Vec<(u16, u16)>, String> {
    val.split(',')
        .map(|r| {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            let lo = a.parse::<u16>().map_err(|_| format!("invalid status code '{r}'"))?;
            let hi = b.parse::<u16>().map_err(|_| format!("invalid status code '{r}'"))?;
            Ok((lo, hi))
        })
        .collect()
}

/// `hdr name [-m <meth>] <name> [value [-m <meth>] <value>]`; returns the words used after
/// `hdr` itself.
fn header_expect(line: &Line, at: usize) -> Result<(HeaderExpect, usize), String> {
    let kw = line.arg(at);
    let mut i = at + 1;
    let name_lf = line.arg(i) == "name-lf";
    if !(line.arg(i) == "name" || name_lf) || line.arg(i + 1).is_empty() {
        return Err(format!(
            "'{kw}' expects at the name keyword as first argument followed by a pattern"
        ));
    }
    i += 1;
    let method = |i: &mut usize| -> Result<HeaderMatch, String> {
        if line.arg(*i) != "-m" {
            return Ok(HeaderMatch::Str);
        }
        let m = line.arg(*i + 1);
        let r = match m {
            "str" => HeaderMatch::Str,
            "beg" => HeaderMatch::Beg,
            "end" => HeaderMatch::End,
            "sub" => HeaderMatch::Sub,
            "reg" => HeaderMatch::Reg,
            "" => {
                return Err(format!(
                "'{kw}' : '-m' expects at a matching pattern ('str', 'beg', 'end', 'sub' or 'reg')"
            ))
            }
            _ => {
                return Err(format!(
                    "'{kw}' : '-m' only supports 'str', 'beg', 'end', 'sub' or 'reg' (got '{m}')"
                ))
            }
        };
        *i += 2;
        Ok(r)
    };
    let name_match = method(&mut i)?;
    let name = line.arg(i).to_string();
    let lf = |text: &str| {
        crate::logformat::parse(text, crate::sample::Ctx::HttpResponse)
            .map_err(|e| format!("'{kw}' : {e}"))
    };
    let mut h = HeaderExpect {
        name_lf: if name_lf { Some(lf(&name)?) } else { None },
        name,
        name_match,
        value: None,
        value_match: HeaderMatch::Str,
        full: kw == "fhdr",
        value_lf: None,
    };
    if matches!(line.arg(i + 1), "value" | "value-lf") {
        let value_lf = line.arg(i + 1) == "value-lf";
        i += 2;
        h.value_match = method(&mut i)?;
        if line.arg(i).is_empty() {
            return Err(format!("'{kw}' expect a pattern with the value keyword"));
        }
        h.value = Some(line.arg(i).to_string());
        if value_lf {
            h.value_lf = Some(lf(line.arg(i))?);
        }
    }
    for (m, p) in [(h.name_match, Some(&h.name)), (h.value_match, h.value.as_ref())] {
        if let (HeaderMatch::Reg, Some(p)) = (m, p) {
            crate::regex_check::check(p).map_err(|e| format!("'{kw}' : {e}"))?;
        }
    }
    Ok((h, i - at))
}

/// Fills the proxy's [`HealthCheck`] steps from the list its check option uses.
pub fn finish(b: &mut ProxyBuild) {
    let h = &mut b.proxy.health_check;
    h.steps = match h.kind {
        CheckKind::Connect | CheckKind::External => Vec::new(),
        CheckKind::Tcp => b.checks.tcp.clone(),
        CheckKind::Http => b.checks.http.clone(),
        CheckKind::Redis
        | CheckKind::Mysql
        | CheckKind::Pgsql
        | CheckKind::Smtp
        | CheckKind::Ldap
        | CheckKind::Spop
        | CheckKind::SslHello => b.checks.protocol.clone(),
    };
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lexer::lex_source;
    use crate::model::{ProxyKind, Span};

    /// A backend section of `text`, finished, and its diagnostics.
    pub(crate) fn build(text: &str) -> (ProxyBuild, Vec<String>) {
        let (lines, _) = lex_source("c.cfg", text, &|_| None);
        let span = Span { file: "c.cfg".into(), line: 1 };
        let d = ProxyBuild::new_defaults("", span.clone());
        let mut b = ProxyBuild::from_defaults(&d, ProxyKind::Backend, "be", span);
        let mut diags = Diags::default();
        for l in &lines {
            crate::proxy::parse_line(&mut b, l, &mut diags);
        }
        finish(&mut b);
        (b, diags.list.iter().map(|d| d.message.clone()).collect())
    }

    fn send(s: &CheckStep) -> &HttpSend {
        match s {
            CheckStep::Send(SendStep::Http(h)) => h,
            other => panic!("not an http send: {other:?}"),
        }
    }

    #[test]
    fn option_httpchk_forms() {
        let (b, d) = build("option httpchk /health");
        assert!(d.is_empty(), "{d:?}");
        let h = &b.proxy.health_check;
        assert_eq!(h.kind, CheckKind::Http);
        let s = send(&h.steps[0]);
        assert_eq!((s.method.as_deref(), s.uri.as_deref()), (None, Some("/health")));
        let (b, _) = build("option httpchk HEAD /x HTTP/1.1");
        let s = send(&b.proxy.health_check.steps[0]);
        assert_eq!(
            (s.method.as_deref(), s.uri.as_deref(), s.version.as_deref()),
            (Some("HEAD"), Some("/x"), Some("HTTP/1.1"))
        );
    }

    #[test]
    fn hidden_headers_in_the_version_are_split_with_a_warning() {
        let (b, d) = build("option httpchk POST /x HTTP/1.1\\r\\nHost:\\ foo");
        assert_eq!(d.len(), 1, "{d:?}");
        let s = send(&b.proxy.health_check.steps[0]);
        assert_eq!(s.version.as_deref(), Some("HTTP/1.1"));
        assert_eq!(s.headers, [("Host".to_string(), "foo".to_string())]);
    }

    #[test]
    fn http_check_send_completes_the_option_request() {
        let (b, d) = build("option httpchk GET /a\nhttp-check send hdr Host x.example\nhttp-check expect status 200");
        assert!(d.is_empty(), "{d:?}");
        let steps = &b.proxy.health_check.steps;
        assert_eq!(steps.len(), 2);
        let s = send(&steps[0]);
        assert_eq!((s.method.as_deref(), s.uri.as_deref()), (Some("GET"), Some("/a")));
        assert_eq!(s.headers.len(), 1);
        assert!(
            matches!(&steps[1], CheckStep::Expect(e) if e.kind == ExpectKind::Status(vec![(200, 200)]))
        );
    }

    #[test]
    fn the_merged_request_moves_after_the_steps_written_before_the_send() {
        let (b, d) = build(
            "option httpchk GET /a\nhttp-check set-var(check.p) str(/b)\n\
             http-check send uri-lf %[var(check.p)] hdr X-A %[var(check.p)] hdr X-B plain body x",
        );
        assert!(d.is_empty(), "{d:?}");
        let steps = &b.proxy.health_check.steps;
        assert!(matches!(steps[0], CheckStep::SetVar { .. }), "{steps:?}");
        let s = send(&steps[1]);
        assert!(!s.from_option && s.uri.is_none() && s.uri_lf.is_some() && s.has_lf());
        assert_eq!(s.header_lf.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0]);
        assert_eq!((s.body.as_deref(), s.body_lf.is_none()), (Some("x"), true));
        // A later `uri` replaces an earlier `uri-lf`.
        let (b, _) = build("option httpchk\nhttp-check send uri-lf %[int(1)] uri /s");
        let s = send(&b.proxy.health_check.steps[0]);
        assert_eq!((s.uri.as_deref(), s.uri_lf.is_none()), (Some("/s"), true));
    }

    #[test]
    fn tcp_check_lines_and_errors() {
        let (b, d) = build("option tcp-check\ntcp-check send PING\\r\\n\ntcp-check expect string +PONG\ntcp-check send-binary 0a0b\ntcp-check expect ! rbinary ^00");
        assert!(d.is_empty(), "{d:?}");
        let steps = &b.proxy.health_check.steps;
        assert_eq!(steps.len(), 4);
        assert!(
            matches!(&steps[0], CheckStep::Send(SendStep::Bytes { data, .. }) if data == b"PING\r\n")
        );
        assert!(
            matches!(&steps[2], CheckStep::Send(SendStep::Bytes { data, .. }) if data == &[10, 11])
        );
        assert!(matches!(&steps[3], CheckStep::Expect(e) if e.inverse));
        let (_, d) = build("tcp-check expect status 200");
        assert_eq!(d.len(), 1);
        assert!(d[0].starts_with("'tcp-check expect' : 'only supports"), "{d:?}");
        let (_, d) = build("tcp-check send x\ntcp-check connect port 80");
        assert_eq!(d.len(), 1, "{d:?}");
        let (_, d) = build("tcp-check expect");
        assert_eq!(d, ["'tcp-check expect' : expects at least a matching pattern as arguments."]);
    }

    #[test]
    fn http_expect_status_ranges_and_headers() {
        let (b, d) = build("option httpchk\nhttp-check expect status 200-299,301\nhttp-check expect hdr name -m beg x-st value ok");
        assert!(d.is_empty(), "{d:?}");
        let steps = &b.proxy.health_check.steps;
        assert!(
            matches!(&steps[1], CheckStep::Expect(e) if e.kind == ExpectKind::Status(vec![(200, 299), (301, 301)]))
        );
        match &steps[2] {
            CheckStep::Expect(ExpectStep { kind: ExpectKind::Header(h), .. }) => {
                assert_eq!(
                    (h.name.as_str(), h.name_match, h.value.as_deref()),
                    ("x-st", HeaderMatch::Beg, Some("ok"))
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
