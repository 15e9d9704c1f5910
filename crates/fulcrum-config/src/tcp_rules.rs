//! `tcp-request connection|session|content|inspect-delay` lines: accept, reject, silent-drop,
//! variables and stick counters, with HAProxy 2.6's action lists and messages.

use crate::args::Diags;
use crate::duration::{read_time, TimeError};
use crate::lexer::Line;
use crate::model::*;
use crate::proxy::{ProxyBuild, Section};
use crate::rules::{action_base, condition, matches_action, placed, var_action, who, At, Order};
use crate::sample::Ctx;

pub(crate) const TCP_CONNECTION_ACTIONS: &str = "'accept', 'reject', 'capture', 'expect-proxy', 'expect-netscaler-cip', 'track-sc0' ... 'track-sc2', 'sc-inc-gpc(*)', 'sc-inc-gpc0(*)', 'sc-inc-gpc1(*)', 'sc-set-gpt(*)', 'sc-set-gpt0(*)', 'set-var-fmt(*)', 'set-var(*)', 'unset-var(*)', 'set-dst', 'set-dst-port', 'set-mark', 'set-src', 'set-src-port', 'set-tos', 'silent-drop'";
pub(crate) const TCP_SESSION_ACTIONS: &str = "'accept', 'reject', 'track-sc0' ... 'track-sc2', 'sc-inc-gpc(*)', 'sc-inc-gpc0(*)', 'sc-inc-gpc1(*)', 'sc-set-gpt(*)', 'sc-set-gpt0(*)', 'set-var-fmt(*)', 'set-var(*)', 'unset-var(*)', 'set-dst', 'set-dst-port', 'set-mark', 'set-src', 'set-src-port', 'set-tos', 'silent-drop'";
pub(crate) const TCP_CONTENT_ACTIONS: &str = "'accept', 'reject', 'capture', 'expect-proxy', 'expect-netscaler-cip', 'track-sc0' ... 'track-sc2', 'ot-group', 'set-log-level', 'set-nice', 'switch-mode', 'use-service', 'sc-inc-gpc(*)', 'sc-inc-gpc0(*)', 'sc-inc-gpc1(*)', 'sc-set-gpt(*)', 'sc-set-gpt0(*)', 'send-spoe-group', 'do-resolve(*)', 'set-var-fmt(*)', 'set-var(*)', 'unset-var(*)', 'set-src', 'set-src-port', 'set-dst', 'set-dst-port', 'set-mark', 'set-tos', 'silent-drop', 'set-priority-class', 'set-priority-offset'";

pub(crate) fn tcp_action_known(list: &str, action: &str) -> bool {
    // HAProxy lists `track-sc0` ... `track-sc2` but registers the `track-sc` prefix.
    action.starts_with("track-sc")
        || list.split(", ").any(|k| matches_action(k.trim_matches('\''), action))
}

/// `tcp-request connection|content|inspect-delay ...` (the keyword table resolved `which`).
pub fn tcp_request(b: &mut ProxyBuild, line: &Line, which: &str, diags: &mut Diags) {
    if b.section == Section::Defaults {
        if b.proxy.name.is_empty() {
            return diags.alert(
                line,
                format!("tcp-request {which} is not allowed in anonymous 'defaults' sections"),
            );
        }
        b.defaults_rules |= crate::proxy::DEFAULTS_RULES;
        if matches!(which, "connection" | "session") {
            b.defaults_rules |= crate::proxy::DEFAULTS_CONN_RULES;
        }
    }
    let p = &b.proxy;
    if which == "inspect-delay" {
        let v = line.arg(2);
        let base = format!(
            "'tcp-request inspect-delay' expects a positive delay in milliseconds, in {}",
            who(p)
        );
        return match read_time(v) {
            Ok(t) => {
                if let Some(w) = t.warning {
                    diags.warning(line, w);
                }
                b.proxy.inspect_delay = (!t.value.is_zero()).then_some(t.value);
            }
            Err(TimeError::Missing) => diags.alert(line, base),
            Err(TimeError::BadChar(c)) => {
                diags.alert(line, format!("{base} (unexpected character '{c}')"))
            }
            Err(TimeError::Overflow) => diags.alert(
                line,
                format!("{base} (timer overflow in '{v}', maximum value is 2147483647 ms or ~24.8 days)"),
            ),
        };
    }
    let (list, ctx, order) = match which {
        "connection" => (TCP_CONNECTION_ACTIONS, Ctx::TcpConnection, Order::TcpConnection),
        "session" => (TCP_SESSION_ACTIONS, Ctx::TcpSession, Order::TcpSession),
        _ => (TCP_CONTENT_ACTIONS, Ctx::TcpContent, Order::TcpContent),
    };
    let action = line.arg(2);
    let expect = which == "connection" && action == "expect-proxy";
    if expect && line.arg(3) != "layer4" {
        let msg = format!(
            "'tcp-request {which} expect-proxy' expects 'layer4', in {} (got '{}').",
            who(p),
            line.arg(3)
        );
        return diags.alert(line, msg);
    }
    let (base, _) = action_base(action);
    let be_cap = p.kind.is_backend();
    let (act, next) = match base {
        _ if expect => (None, 4),
        "accept" => (Some(TcpAction::Accept), 3),
        "reject" => (Some(TcpAction::Reject), 3),
        "silent-drop" => (Some(TcpAction::SilentDrop), 3),
        _ if crate::stick::is_stick_action(base) => {
            match crate::stick::action(line, 2, ctx, be_cap) {
                Ok((a, next)) => (Some(TcpAction::Do(HttpAction::Stick(a))), next),
                Err(m) if m.starts_with("fetch method") => {
                    return diags.alert(line, format!("'tcp-request {which} {action}' : {m}"));
                }
                Err(m) => return diags.alert(line, m),
            }
        }
        "set-src" | "set-src-port" | "set-dst" | "set-dst-port" => {
            match crate::rules::addr_action(line, 2, base, ctx, be_cap) {
                Ok((a, next)) => (Some(TcpAction::Do(a)), next),
                Err(m) => {
                    let msg = format!(
                        "error detected in {} while parsing 'tcp-request {which} {action}' rule : {m}",
                        who(p)
                    );
                    return diags.alert(line, msg);
                }
            }
        }
        "set-var" | "set-var-fmt" | "unset-var" => {
            let shifted = Line { words: line.words[1..].to_vec(), ..line.clone() };
            match var_action(&shifted, base, At { ctx, be_cap }) {
                Ok((a, next)) => (Some(TcpAction::Do(a)), next + 1),
                Err(m) => {
                    let m = m.unwrap_or_default();
                    let msg = format!(
                        "error detected in {} while parsing 'tcp-request {which} {action}' rule : {m}",
                        who(p)
                    );
                    return diags.alert(line, msg);
                }
            }
        }
        _ => {
            let msg = if tcp_action_known(list, action) {
                format!("'tcp-request {which} {action}' is not supported yet")
            } else {
                format!("'tcp-request {which}' expects {list} in {} (got '{action}').", who(p))
            };
            return diags.alert(line, msg);
        }
    };
    let wrap = |m: &str| {
        format!(
            "'tcp-request {which} {action}' : error detected in {} while parsing '{}' condition : {}",
            who(p),
            line.arg(3),
            m.strip_suffix('.').unwrap_or(m)
        )
    };
    let unexpected = |w: &str| {
        format!(
            "'tcp-request {which} {action}' only accepts 'if' or 'unless', in {} (got '{w}')",
            who(p)
        )
    };
    let Ok(cond) = condition(p, line, next, ctx, &wrap, &unexpected, diags) else {
        return;
    };
    placed(b, line, order, diags);
    let Some(action) = act else {
        b.proxy.expect_proxy.push(cond);
        return;
    };
    let rule = TcpRule { span: line.span.clone(), action, cond };
    match which {
        "connection" => b.proxy.tcp_request_connection.push(rule),
        "session" => b.proxy.tcp_request_session.push(rule),
        _ => b.proxy.tcp_request_content.push(rule),
    }
}
