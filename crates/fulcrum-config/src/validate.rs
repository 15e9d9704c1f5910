//! Checks on the whole parsed configuration, as HAProxy's post-parsing checks: backend
//! references, mode compatibility, duplicate server names, conflicting binds, proxies without
//! `bind`, missing timeouts, and a configuration with no listener at all.

use std::collections::HashMap;

use crate::diag::Diagnostic;
use crate::model::{BackendTarget, BindAddr, Config, Mode, Proxy, Span};
use crate::proxy::type_word;

/// Runs every check, appending diagnostics in a stable order. After parse errors
/// (`parse_failed`), only the error checks run: the warnings and the "no listener" error would
/// mostly echo lines that were already refused.
pub fn validate(config: &Config, parse_failed: bool, out: &mut Vec<Diagnostic>) {
    for p in &config.proxies {
        backend_refs(config, p, out);
        duplicate_servers(p, out);
        if !parse_failed {
            missing_bind(p, out);
            missing_timeouts(p, out);
        }
    }
    conflicting_binds(config, out);
    if !parse_failed && !config.frontends().any(|p| !p.binds.is_empty()) {
        out.push(Diagnostic::alert(
            None,
            "no listener: the configuration has no 'frontend' or 'listen' section with a 'bind' line, nothing would be started.",
        ));
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
    if be.mode != p.mode {
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
