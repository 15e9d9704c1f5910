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

pub(crate) const TCP_RESPONSE_ACTIONS: &str = "'accept', 'close', 'reject', 'ot-group', 'set-log-level', 'set-nice', 'sc-inc-gpc(*)', 'sc-inc-gpc0(*)', 'sc-inc-gpc1(*)', 'sc-set-gpt(*)', 'sc-set-gpt0(*)', 'send-spoe-group', 'set-var-fmt(*)', 'set-var(*)', 'unset-var(*)', 'set-mark', 'set-tos', 'silent-drop'";

/// `tcp-response content|inspect-delay ...`: only where a backend is (HAProxy's words).
pub fn tcp_response(b: &mut ProxyBuild, line: &Line, which: &str, diags: &mut Diags) {
    let anonymous = b.section == Section::Defaults && b.proxy.name.is_empty();
    if anonymous || b.section == Section::Proxy(ProxyKind::Frontend) {
        let msg = format!(
            "tcp-response {which} is only allowed in 'backend' sections or 'defaults' section with a name"
        );
        return diags.alert(line, msg);
    }
    tcp_rule(b, line, "tcp-response", which, diags)
}

/// `tcp-request connection|content|inspect-delay ...` (the keyword table resolved `which`).
pub fn tcp_request(b: &mut ProxyBuild, line: &Line, which: &str, diags: &mut Diags) {
    tcp_rule(b, line, "tcp-request", which, diags)
}

fn tcp_rule(b: &mut ProxyBuild, line: &Line, kw: &str, which: &str, diags: &mut Diags) {
    let response = kw == "tcp-response";
    if b.section == Section::Defaults {
        if b.proxy.name.is_empty() {
            return diags.alert(
                line,
                format!("{kw} {which} is not allowed in anonymous 'defaults' sections"),
            );
        }
        b.defaults_rules |= crate::proxy::DEFAULTS_RULES;
        if response && which == "content" {
            b.defaults_rules |= crate::proxy::DEFAULTS_RES_RULES;
        }
        if matches!(which, "connection" | "session") && !response {
            b.defaults_rules |= crate::proxy::DEFAULTS_CONN_RULES;
        }
    }
    let p = &b.proxy;
    if which == "inspect-delay" {
        let v = line.arg(2);
        let base =
            format!("'{kw} inspect-delay' expects a positive delay in milliseconds, in {}", who(p));
        return match read_time(v) {
            Ok(t) => {
                if let Some(w) = t.warning {
                    diags.warning(line, w);
                }
                let delay = (!t.value.is_zero()).then_some(t.value);
                if response {
                    b.proxy.response_inspect_delay = delay;
                } else {
                    b.proxy.inspect_delay = delay;
                }
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
        _ if response => (TCP_RESPONSE_ACTIONS, Ctx::TcpResponse, Order::TcpResponse),
        "connection" => (TCP_CONNECTION_ACTIONS, Ctx::TcpConnection, Order::TcpConnection),
        "session" => (TCP_SESSION_ACTIONS, Ctx::TcpSession, Order::TcpSession),
        _ => (TCP_CONTENT_ACTIONS, Ctx::TcpContent, Order::TcpContent),
    };
    let action = line.arg(2);
    let expect = which == "connection" && matches!(action, "expect-proxy" | "expect-netscaler-cip");
    let cip = action == "expect-netscaler-cip";
    if expect && line.arg(3) != "layer4" {
        let (who, got) = (who(p), line.arg(3));
        let msg = match cip {
            true => {
                format!("'{kw} {which} {action}' only supports 'layer4' in {who} (got '{got}')")
            }
            false => format!("'{kw} {which} {action}' expects 'layer4', in {who} (got '{got}')."),
        };
        return diags.alert(line, msg);
    }
    let (base, _) = action_base(action);
    let be_cap = p.kind.is_backend();
    let (act, next) = match base {
        _ if expect => (None, 4),
        "accept" => (Some(TcpAction::Accept), 3),
        "reject" => (Some(TcpAction::Reject), 3),
        "silent-drop" => (Some(TcpAction::SilentDrop), 3),
        "close" if response => (Some(TcpAction::Close), 3),
        _ if crate::stick::is_stick_action(base) => {
            match crate::stick::action(line, 2, ctx, be_cap) {
                Ok((a, next)) => (Some(TcpAction::Do(HttpAction::Stick(a))), next),
                Err(m) if m.starts_with("fetch method") => {
                    return diags.alert(line, format!("'{kw} {which} {action}' : {m}"));
                }
                Err(m) => return diags.alert(line, m),
            }
        }
        "set-src" | "set-src-port" | "set-dst" | "set-dst-port" if !response => {
            match crate::rules::addr_action(line, 2, base, ctx, be_cap) {
                Ok((a, next)) => (Some(TcpAction::Do(a)), next),
                Err(m) => {
                    let msg = format!(
                        "error detected in {} while parsing '{kw} {which} {action}' rule : {m}",
                        who(p)
                    );
                    return diags.alert(line, msg);
                }
            }
        }
        // HAProxy 2.7's (2.6 refuses it): the `-c` notice says so.
        "set-bandwidth-limit" if which == "content" => match crate::filters::rule(line, 3) {
            Ok((a, next)) => {
                let what = format!("{kw} {which} {action}");
                diags.notice(line, crate::filters::later_keyword(&what));
                (Some(TcpAction::Do(a)), next)
            }
            Err(m) => {
                let msg = format!(
                    "error detected in {} while parsing '{kw} {which} {action}' rule : {m}",
                    who(p)
                );
                return diags.alert(line, msg);
            }
        },
        "send-spoe-group" if which == "content" => match crate::spoe::action_words(line, 2) {
            Ok((a, next)) => (Some(TcpAction::Do(a)), next),
            Err(m) => {
                let msg = format!(
                    "error detected in {} while parsing '{kw} {which} {action}' rule : {m}.",
                    who(p)
                );
                return diags.alert(line, msg);
            }
        },
        "set-var" | "set-var-fmt" | "unset-var" => {
            let shifted = Line { words: line.words[1..].to_vec(), ..line.clone() };
            match var_action(&shifted, base, At { ctx, be_cap }) {
                Ok((a, next)) => (Some(TcpAction::Do(a)), next + 1),
                Err(m) => {
                    let m = m.unwrap_or_default();
                    let msg = format!(
                        "error detected in {} while parsing '{kw} {which} {action}' rule : {m}",
                        who(p)
                    );
                    return diags.alert(line, msg);
                }
            }
        }
        _ => {
            let msg = if tcp_action_known(list, action) {
                format!("'{kw} {which} {action}' is not supported yet")
            } else {
                format!("'{kw} {which}' expects {list} in {} (got '{action}').", who(p))
            };
            return diags.alert(line, msg);
        }
    };
    let wrap = |m: &str| {
        format!(
            "'{kw} {which} {action}' : error detected in {} while parsing '{}' condition : {}",
            who(p),
            line.arg(3),
            m.strip_suffix('.').unwrap_or(m)
        )
    };
    let unexpected = |w: &str| {
        format!("'{kw} {which} {action}' only accepts 'if' or 'unless', in {} (got '{w}')", who(p))
    };
    let Ok(cond) = condition(p, line, next, ctx, &wrap, &unexpected, diags) else {
        return;
    };
    placed(b, line, order, diags);
    let Some(action) = act else {
        match cip {
            true => b.proxy.expect_cip.push(cond),
            false => b.proxy.expect_proxy.push(cond),
        }
        return;
    };
    let rule = TcpRule { span: line.span.clone(), action, cond };
    match which {
        _ if response => b.proxy.tcp_response_content.push(rule),
        "connection" => b.proxy.tcp_request_connection.push(rule),
        "session" => b.proxy.tcp_request_session.push(rule),
        _ => b.proxy.tcp_request_content.push(rule),
    }
}
