//! Checks on the whole parsed configuration, as HAProxy's post-parsing checks: backend
//! references (`default_backend`, `use_backend`, `nbsrv()`/`be_conn()` arguments), mode
//! compatibility (an http frontend cannot use a tcp backend; a tcp frontend may use an http
//! one, its streams are upgraded), cookie captures longer than HAProxy keeps (truncated),
//! HTTP-only settings of TCP proxies (dropped with HAProxy's warnings), duplicate server names,
//! conflicting binds, proxies without `bind`, missing timeouts, a configuration with no
//! listener at all, and the proxies' filters (`crate::cache::check`).

use std::collections::HashMap;

use crate::diag::Diagnostic;
use crate::model::{
    AclRef, BackendTarget, Balance, BindAddr, CaptureKind, Condition, Config, Fetch, HttpAction,
    HttpRule, LogFormat, LogPart, Mode, MuxProto, Proxy, ReplyBody, SampleExpr, Span,
};
use crate::proxy::type_word;

/// Runs every check, appending diagnostics in a stable order. After parse errors
/// (`parse_failed`), only the error checks run: the warnings would mostly echo lines that were
/// already refused. A configuration without a listener is valid, as in HAProxy (see
/// [`Config::has_listener`]: the program says it will not start).
pub fn validate(config: &Config, parse_failed: bool, out: &mut Vec<Diagnostic>) {
    for p in &config.proxies {
        // HAProxy's `check_config_validity()` passes disabled proxies over.
        if p.disabled {
            duplicate_servers(p, out);
            continue;
        }
        backend_refs(config, p, out);
        fetch_backend_refs(config, p, out);
        duplicate_servers(p, out);
        use_server_targets(p, out);
        stats_auth_and_rules(p, out);
        tcp_response_reads(p, out);
        mux_protos(p, out);
        crate::cache::check(config, p, out);
        crate::filters::check(config, p, out);
        crate::stick::check_key_types(config, p, out);
        let start = out.len();
        crate::extcheck::check(config, p, out);
        crate::mailers::check(config, p, out);
        crate::fcgi_app::check(config, p, out);
        if parse_failed {
            let errors: Vec<_> = out.drain(start..).filter(Diagnostic::is_error).collect();
            out.extend(errors);
        }
        if !parse_failed {
            missing_bind(p, out);
            missing_timeouts(p, out);
        }
    }
    conflicting_binds(config, out);
    duplicate_proxy_ids(config, out);
    crate::track::check(config, out);
    if !parse_failed {
        crate::mailers::unused(config, out);
    }
}

/// `use-server` rules name servers of their backend (`check_config_validity()`'s message).
fn use_server_targets(p: &Proxy, out: &mut Vec<Diagnostic>) {
    for u in &p.use_servers {
        let crate::model::ServerTarget::Name(name) = &u.target else { continue };
        if !p.servers.iter().any(|s| s.name == *name) {
            let msg = format!(
                "{} '{}' : unable to find server '{name}' referenced in a 'use-server' rule.",
                crate::proxy::type_word(p.kind),
                p.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
}

/// HAProxy refuses `stats auth`/`stats realm` beside `stats http-request` (the rules then
/// decide alone: credentials would be a false sense of protection).
fn stats_auth_and_rules(p: &Proxy, out: &mut Vec<Diagnostic>) {
    let Some(st) = &p.stats else { return };
    if (!st.auth.is_empty() || st.realm.is_some()) && !st.http_request.is_empty() {
        let msg = format!(
            "proxy '{}': stats 'auth'/'realm' and 'http-request' can't be used at the same time.",
            p.name
        );
        out.push(Diagnostic::alert(at(&p.span), msg));
    }
}

/// `proto h1|h2` on a bind or server of a `mode tcp` proxy: both are HTTP multiplexers.
fn mux_protos(p: &Proxy, out: &mut Vec<Diagnostic>) {
    if p.mode != Mode::Tcp {
        return;
    }
    let word = |m: MuxProto| match m {
        MuxProto::H1 => "h1",
        MuxProto::H2 => "h2",
        MuxProto::Fcgi => "fcgi",
    };
    for b in &p.binds {
        let Some(m) = b.proto else { continue };
        let addrs: Vec<String> = b.addrs.iter().map(addr_text).collect();
        let msg = format!(
            "{} '{}' : MUX protocol '{}' is not usable for 'bind {}' at [{}].",
            type_word(p.kind),
            p.name,
            word(m),
            addrs.join(","),
            b.span
        );
        out.push(Diagnostic::alert(at(&b.span), msg));
    }
    for s in &p.servers {
        let Some(m) = s.proto else { continue };
        let msg = format!(
            "{} '{}' : MUX protocol '{}' is not usable for server '{}' at [{}].",
            type_word(p.kind),
            p.name,
            word(m),
            s.name,
            s.span
        );
        out.push(Diagnostic::alert(at(&s.span), msg));
    }
}

fn at(span: &Span) -> Option<Span> {
    Some(span.clone())
}

fn mode_word(m: Mode) -> &'static str {
    match m {
        Mode::Tcp => "tcp",
        Mode::Http => "http",
    }
}

fn backend_refs(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    if !p.kind.is_frontend() {
        return;
    }
    let refs =
        p.default_backend.iter().map(|r| (r.name.as_str(), &r.span, "default_backend")).chain(
            p.use_backends.iter().filter_map(|u| match &u.target {
                BackendTarget::Name(name) => Some((name.as_str(), &u.span, "use_backend")),
                BackendTarget::Dynamic(_) => None,
            }),
        );
    for (name, span, kw) in refs {
        check_ref(config, p, name, span, kw, out);
    }
}

fn check_ref(
    config: &Config,
    p: &Proxy,
    name: &str,
    span: &Span,
    kw: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some(be) = config.backends().find(|b| b.name == name) else {
        let msg = format!("Proxy '{}': unable to find required {kw}: '{name}'.", p.name);
        return out.push(Diagnostic::alert(at(span), msg));
    };
    if be.name == p.name && be.kind == p.kind {
        let msg = format!("Proxy '{}': loop detected for {kw}: '{name}'.", p.name);
        return out.push(Diagnostic::alert(at(span), msg));
    }
    // A `mode tcp` frontend may hand its streams to a `mode http` backend: HAProxy upgrades
    // them to HTTP (no warning). The other way round is refused.
    if be.mode != p.mode && !(p.mode == Mode::Tcp && be.mode == Mode::Http) {
        let usage = if kw == "default_backend" {
            "as its default backend"
        } else {
            "in a 'use_backend' rule"
        };
        let msg = format!(
            "{} {} '{}' ({}) tries to use incompatible {} {} '{}' ({}) {usage} (see 'mode').",
            mode_word(p.mode),
            type_word(p.kind),
            p.name,
            p.span,
            mode_word(be.mode),
            type_word(be.kind),
            be.name,
            be.span
        );
        out.push(Diagnostic::alert(at(span), msg));
    }
}

fn duplicate_servers(p: &Proxy, out: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<&str, &Span> = HashMap::new();
    for s in &p.servers {
        if let Some(first) = seen.get(s.name.as_str()) {
            let msg = format!(
                "{} '{}', another server named '{}' was already defined at line {}, please use distinct names.",
                type_word(p.kind),
                p.name,
                s.name,
                first.line
            );
            out.push(Diagnostic::alert(at(&s.span), msg));
        } else {
            seen.insert(&s.name, &s.span);
        }
    }
    let mut ids: HashMap<u32, (&str, &Span)> = HashMap::new();
    for s in &p.servers {
        let Some(id) = s.id else { continue };
        if let Some((name, span)) = ids.get(&id) {
            let msg = format!(
                "'server {}/{}' : 'id' : custom id {id} already used at {span} ('server {name}').",
                p.name, s.name
            );
            out.push(Diagnostic::alert(at(&s.span), msg));
        } else {
            ids.insert(id, (&s.name, &s.span));
        }
    }
}

/// Proxy `id`s are unique across every proxy, as HAProxy's `used_proxy_id` tree.
fn duplicate_proxy_ids(config: &Config, out: &mut Vec<Diagnostic>) {
    let mut ids: HashMap<u32, &Proxy> = HashMap::new();
    for p in &config.proxies {
        let Some(id) = p.id else { continue };
        if let Some(first) = ids.get(&id) {
            let msg = format!(
                "{} {} reuses same custom id as {} {} (declared at {}).",
                type_word(p.kind),
                p.name,
                type_word(first.kind),
                first.name,
                first.span
            );
            out.push(Diagnostic::alert(at(&p.span), msg));
        } else {
            ids.insert(id, p);
        }
    }
}

fn missing_bind(p: &Proxy, out: &mut Vec<Diagnostic>) {
    if p.kind.is_frontend() && p.binds.is_empty() {
        let msg = format!(
            "{} '{}' has no 'bind' directive. Please declare it as a backend if this was intended.",
            type_word(p.kind),
            p.name
        );
        out.push(Diagnostic::warning(at(&p.span), msg));
    }
}

/// HAProxy's rule: a frontend needs `timeout client`; a backend with servers needs
/// `timeout connect` and `timeout server` (in TCP mode `timeout tunnel` covers the latter).
fn missing_timeouts(p: &Proxy, out: &mut Vec<Diagnostic>) {
    let t = &p.timeouts;
    let fe_missing = p.kind.is_frontend() && t.client.is_none();
    let server_covered = t.server.is_some() || (p.mode == Mode::Tcp && t.tunnel.is_some());
    let be_missing =
        p.kind.is_backend() && !p.servers.is_empty() && (t.connect.is_none() || !server_covered);
    if fe_missing || be_missing {
        let msg = format!(
            "missing timeouts for {} '{}'.\n   | While not properly invalid, you will certainly encounter various problems\n   | with such a configuration. To fix this, please ensure that all following\n   | timeouts are set to a non-zero value: 'client', 'connect', 'server'.",
            type_word(p.kind),
            p.name
        );
        out.push(Diagnostic::warning(at(&p.span), msg));
    }
}

fn addr_text(a: &BindAddr) -> String {
    match a {
        BindAddr::Inet(sa) => sa.to_string(),
        BindAddr::Host { name, port, .. } => format!("{name}:{port}"),
        BindAddr::Unix(path) => format!("unix@{}", path.display()),
        BindAddr::Fd(fd) => format!("fd@{fd}"),
    }
}

/// The same address, unix path or fd bound twice is an error. Overlaps between a wildcard
/// and a specific address on the same port are left to the engine.
fn conflicting_binds(config: &Config, out: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<&BindAddr, (&Proxy, &Span)> = HashMap::new();
    for p in config.frontends() {
        for b in &p.binds {
            for a in &b.addrs {
                if let Some((other, span)) = seen.get(a) {
                    let msg = format!(
                        "'bind' : address '{}' is already bound by {} '{}' at {}.",
                        addr_text(a),
                        type_word(other.kind),
                        other.name,
                        span
                    );
                    out.push(Diagnostic::alert(at(&b.span), msg));
                } else {
                    seen.insert(a, (p, &b.span));
                }
            }
        }
    }
}

/// Truncates cookie captures longer than HAProxy allows (`tune.http.cookielen`, 63 bytes by
/// default), with its warning.
pub fn truncate_cookie_captures(config: &mut Config, out: &mut Vec<Diagnostic>) {
    let max = config.global.tune.cookie_len.saturating_sub(1);
    for p in &mut config.proxies {
        for c in p.captures.iter_mut().filter(|c| c.kind == CaptureKind::Cookie) {
            // HAProxy's `capture_len >= cookie_len`.
            if c.len > max {
                c.len = max;
                let msg = format!(
                    "truncating capture length to {max} bytes for {} '{}'.",
                    type_word(p.kind),
                    p.name
                );
                out.push(Diagnostic::warning(None, msg));
            }
        }
    }
}

/// Drops what a `mode tcp` proxy cannot use, with HAProxy's warnings: the cookie capture,
/// HTTP rules, the forwarding options, the HTTP options with behaviour, cookie persistence,
/// the monitor URI and layer 7 balancing.
pub fn drop_http_only(config: &mut Config, out: &mut Vec<Diagnostic>) {
    for p in config.proxies.iter_mut().filter(|p| p.mode == Mode::Tcp) {
        let who = format!("{} '{}'", type_word(p.kind), p.name);
        let span = p.span.clone();
        let mut warn = |msg: String| out.push(Diagnostic::warning(at(&span), msg));
        if p.captures.iter().any(|c| c.kind == CaptureKind::Cookie) {
            // HAProxy drops the cookie capture only; header captures stay (and do nothing).
            warn(format!("'capture' statement ignored for {who} as it requires HTTP mode."));
            p.captures.retain(|c| c.kind != CaptureKind::Cookie);
        }
        for (kw, rules) in [
            ("http-request", &mut p.http_request),
            ("http-response", &mut p.http_response),
            ("http-after-response", &mut p.http_after_response),
            ("redirect", &mut p.redirects),
        ] {
            if !rules.is_empty() {
                warn(format!("'{kw}' rules ignored for {who} as they require HTTP mode."));
                rules.clear();
            }
        }
        for (opt, slot) in [("forwardfor", &mut p.forwardfor), ("originalto", &mut p.originalto)] {
            if slot.take().is_some() {
                warn(format!("'option {opt}' ignored for {who} as it requires HTTP mode."));
            }
        }
        for (opt, slot) in [
            ("checkcache", &mut p.checkcache),
            ("http-ignore-probes", &mut p.http_ignore_probes),
            ("http-use-proxy-header", &mut p.http_use_proxy_header),
            ("http-pretend-keepalive", &mut p.http_pretend_keepalive),
            ("accept-invalid-http-request", &mut p.accept_invalid_req),
            ("accept-invalid-http-response", &mut p.accept_invalid_resp),
            ("h1-case-adjust-bogus-client", &mut p.h1_case_client),
            ("h1-case-adjust-bogus-server", &mut p.h1_case_server),
            ("disable-h2-upgrade", &mut p.disable_h2_upgrade),
        ] {
            if std::mem::take(slot) {
                warn(format!("'option {opt}' ignored for {who} as it requires HTTP mode."));
            }
        }
        if p.cookie.take().is_some() && p.kind.is_backend() {
            warn(format!("cookie will be ignored for {who} (needs 'mode http')."));
        }
        if p.monitor_uri.take().is_some() {
            warn(format!("monitor-uri will be ignored for {who} (needs 'mode http')."));
        }
        if matches!(p.balance, Balance::Uri { .. } | Balance::UrlParam { .. } | Balance::Hdr { .. })
        {
            warn(format!(
                "Layer 7 hash not possible for {who} (needs 'mode http'). Falling back to round robin."
            ));
            p.balance = Balance::RoundRobin;
        }
        for s in &mut p.servers {
            if s.cookie.take().is_some() {
                warn(format!(
                    "{} '{}' : ignoring cookie for server '{}' as HTTP mode is disabled.",
                    type_word(p.kind),
                    p.name,
                    s.name
                ));
            }
        }
    }
}

/// Where a sample expression was written, as HAProxy names it in argument errors.
fn where_text(acl: bool, kw: &str, fetch: &str) -> String {
    if acl {
        format!("ACL keyword '{fetch}'")
    } else {
        format!("sample fetch keyword '{fetch}' in {kw} expression")
    }
}

/// `tcp-response content` rules that read the response's bytes (`res.len`, `res.payload*`,
/// `WAIT_END`) in a `mode tcp` backend: not supported yet (the tunnel cannot hold the
/// response back while client bytes flow).
fn tcp_response_reads(p: &Proxy, out: &mut Vec<Diagnostic>) {
    if p.mode != Mode::Tcp {
        return;
    }
    for r in &p.tcp_response_content {
        let Some(c) = &r.cond else { continue };
        let reads = c.terms.iter().flatten().any(|t| {
            let exprs: Vec<&SampleExpr> = match &t.acl {
                AclRef::Anonymous(a) => vec![&a.expr],
                AclRef::Named(n) => {
                    p.acls.iter().filter(|a| &a.name == n).map(|a| &a.acl.expr).collect()
                }
            };
            exprs.iter().any(|e| matches!(e.fetch, Fetch::Payload(_) | Fetch::WaitEnd))
        });
        if reads {
            out.push(Diagnostic::alert(
                at(&r.span),
                format!(
                    "'tcp-response content' rules that read the response (res.len, res.payload, WAIT_END) are not supported yet in mode tcp, in {} '{}'",
                    type_word(p.kind),
                    p.name
                ),
            ));
        }
    }
}

fn cond_exprs<'a>(c: &'a Condition, out: &mut Vec<(&'a SampleExpr, bool)>) {
    for t in c.terms.iter().flatten() {
        if let AclRef::Anonymous(a) = &t.acl {
            out.push((&a.expr, true));
        }
    }
}

fn lf_exprs<'a>(f: &'a LogFormat, out: &mut Vec<(&'a SampleExpr, bool)>) {
    for part in &f.parts {
        if let LogPart::Sample(e, _) = part {
            out.push((e, false));
        }
    }
}

fn rule_exprs<'a>(r: &'a HttpRule, out: &mut Vec<(&'a SampleExpr, bool)>) {
    if let Some(c) = &r.cond {
        cond_exprs(c, out);
    }
    let reply = match &r.action {
        HttpAction::Return(reply) | HttpAction::Deny { reply: Some(reply), .. } => Some(reply),
        _ => None,
    };
    if let Some(reply) = reply {
        if let ReplyBody::LfString(f) = &reply.body {
            lf_exprs(f, out);
        }
        for (_, f) in &reply.headers {
            lf_exprs(f, out);
        }
    }
    match &r.action {
        HttpAction::SetHeader { value: f, .. }
        | HttpAction::AddHeader { value: f, .. }
        | HttpAction::ReplaceHeader { replace: f, .. }
        | HttpAction::ReplaceValue { replace: f, .. }
        | HttpAction::ReplaceUri { replace: f, .. }
        | HttpAction::ReplacePath { replace: f, .. }
        | HttpAction::SetPath(f)
        | HttpAction::SetQuery(f)
        | HttpAction::SetUri(f)
        | HttpAction::SetMethod(f)
        | HttpAction::SetVarFmt { fmt: f, .. }
        | HttpAction::EarlyHint { value: f, .. } => lf_exprs(f, out),
        HttpAction::Redirect(rd) => lf_exprs(&rd.value, out),
        HttpAction::SetVar { expr, .. } => out.push((expr, false)),
        _ => {}
    }
}

/// Rules of a named `defaults` section (checked when it ends): a server fetch must name its
/// backend and a `track-sc*` its table, as nothing else can resolve them (HAProxy's words).
pub fn defaults_rule_refs(p: &Proxy, out: &mut Vec<Diagnostic>) {
    for (e, acl, span, kw) in proxy_exprs(p) {
        let fetch = match &e.fetch {
            Fetch::SrvIsUp { backend: None, .. } => "srv_is_up",
            Fetch::SrvConn { backend: None, .. } => "srv_conn",
            _ => continue,
        };
        let place = where_text(acl, kw, fetch);
        let msg = format!("backend name must be set in arg 1 of {place} in proxy '{}'.", p.name);
        out.push(Diagnostic::alert(at(span), msg));
    }
    let tcp = p.tcp_request_connection.iter().chain(&p.tcp_request_session);
    let tcp = tcp.chain(&p.tcp_request_content).chain(&p.tcp_response_content);
    let tcp_actions = tcp.filter_map(|r| match &r.action {
        crate::model::TcpAction::Do(a) => Some(a),
        _ => None,
    });
    let http = p.http_request.iter().chain(&p.http_response).chain(&p.http_after_response);
    for a in tcp_actions.chain(http.map(|r| &r.action)) {
        if let HttpAction::Stick(crate::model::StickAction::Track { slot, table: None, .. }) = a {
            let msg = format!(
                "Proxy '{}': unable to find table '{}' referenced by track-sc{slot}.",
                p.name, p.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
}

/// Every sample expression of the proxy's ACLs and rules, with where it is.
fn proxy_exprs(p: &Proxy) -> Vec<(&SampleExpr, bool, &Span, &'static str)> {
    let mut found: Vec<(&SampleExpr, bool, &Span, &str)> = Vec::new();
    for a in &p.acls {
        found.push((&a.acl.expr, true, &a.acl.span, "acl"));
    }
    let lists: [(&str, &Vec<HttpRule>); 4] = [
        ("http-request", &p.http_request),
        ("http-response", &p.http_response),
        ("http-after-response", &p.http_after_response),
        ("redirect", &p.redirects),
    ];
    for (kw, rules) in lists {
        for r in rules {
            let mut v = Vec::new();
            rule_exprs(r, &mut v);
            found.extend(v.into_iter().map(|(e, acl)| (e, acl, &r.span, kw)));
        }
    }
    for u in &p.use_backends {
        let mut v = Vec::new();
        if let Some(c) = &u.cond {
            cond_exprs(c, &mut v);
        }
        if let BackendTarget::Dynamic(f) = &u.target {
            lf_exprs(f, &mut v);
        }
        found.extend(v.into_iter().map(|(e, acl)| (e, acl, &u.span, "use_backend")));
    }
    for r in p.tcp_request_connection.iter().chain(&p.tcp_request_content) {
        let mut v = Vec::new();
        if let Some(c) = &r.cond {
            cond_exprs(c, &mut v);
        }
        found.extend(v.into_iter().map(|(e, acl)| (e, acl, &r.span, "tcp-request")));
    }
    found
}

/// `nbsrv()` and `be_conn()` name a backend (the proxy itself without argument).
fn fetch_backend_refs(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    for (e, acl, span, kw) in proxy_exprs(p) {
        let (fetch, backend, server) = match &e.fetch {
            Fetch::NbSrv { backend } => ("nbsrv", backend, None),
            Fetch::BeConn { backend } => ("be_conn", backend, None),
            Fetch::BeSessRate { backend } => ("be_sess_rate", backend, None),
            Fetch::ConnSlots { backend } => ("connslots", backend, None),
            Fetch::Queue { backend } => ("queue", backend, None),
            Fetch::AvgQueue { backend } => ("avg_queue", backend, None),
            Fetch::SrvIsUp { backend, server } => ("srv_is_up", backend, Some(server)),
            Fetch::SrvConn { backend, server } => ("srv_conn", backend, Some(server)),
            Fetch::Be { backend, what: crate::model::BeFact::ConnFree } => {
                ("be_conn_free", backend, None)
            }
            Fetch::Srv { backend, server, .. } => {
                (e.text.split(['(', ',']).next().unwrap_or(""), backend, Some(server))
            }
            _ => continue,
        };
        if server.is_some_and(|s| s.is_empty()) {
            let place = where_text(acl, kw, fetch);
            let msg = format!("missing server name in arg 1 of {place} in proxy '{}'.", p.name);
            out.push(Diagnostic::alert(at(span), msg));
            continue;
        }
        if let Some(server) = server {
            // The server must exist in the named backend (or in this proxy).
            let be_name = backend.as_deref().unwrap_or(&p.name);
            if backend.is_none() && !p.kind.is_backend() {
                let place = where_text(acl, kw, fetch);
                let msg = format!(
                    "unable to find server '{server}' in proxy '{be_name}', referenced in arg 1 of {place} in proxy '{be_name}'."
                );
                out.push(Diagnostic::alert(at(span), msg));
                continue;
            }
            if let Some(be) = config.backends().find(|b| b.name == be_name) {
                if !be.servers.iter().any(|s| &s.name == server) {
                    let place = where_text(acl, kw, fetch);
                    let msg = format!(
                        "unable to find server '{server}' in proxy '{be_name}', referenced in arg 1 of {place} in proxy '{}'.",
                        p.name
                    );
                    out.push(Diagnostic::alert(at(span), msg));
                    continue;
                }
            }
        }
        let place = where_text(acl, kw, fetch);
        let msg = match backend {
            None if !p.kind.is_backend() => format!(
                "proxy '{}', referenced in arg 1 of {place} in proxy '{}', has not backend capability.",
                p.name, p.name
            ),
            None => continue,
            Some(name) => {
                if config.backends().any(|b| &b.name == name) {
                    continue;
                }
                // A server argument names a proxy, a backend argument a backend.
                let what = if server.is_some() { "proxy" } else { "backend" };
                format!(
                    "unable to find {what} '{name}' referenced in arg 1 of {place} in proxy '{}'.",
                    p.name
                )
            }
        };
        out.push(Diagnostic::alert(at(span), msg));
    }
}
