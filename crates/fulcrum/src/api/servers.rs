//! The runtime API's server commands: weights, states, checks, `maxconn`, shutting sessions,
//! and `show servers state|conn`. Every change goes through `Backend::change_server`.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use super::View;
use crate::backend::status::{parse_weight, set_state, Change};
use crate::backend::Backend;
use crate::server::state::{Admin, Oper};

/// Finds `<backend>/<server>` with HAProxy's messages.
fn lookup<'a>(api: &'a View, arg: &str) -> Result<(&'a Arc<Backend>, usize), &'static str> {
    let Some((b, s)) = arg.split_once('/') else { return Err("Require 'backend/server'.\n") };
    let Some(be) = api.shared.proxies.backend(b) else {
        return Err("No such backend.\n");
    };
    let Some(idx) = be.server_index(s) else {
        return Err("No such server.\n");
    };
    Ok((be, idx))
}

pub fn run(api: &View, words: &[&str], args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    match words {
        ["show", "servers", "state"] => return show_state(api, a(3), out),
        ["show", "servers", "conn"] => return show_conn(api, a(3), out),
        _ => {}
    }
    let target = match words {
        ["set", "maxconn", "server"] => a(3),
        ["shutdown", "sessions", "server"] => a(3),
        _ => a(2),
    };
    let (be, idx) = match lookup(api, target) {
        Ok(x) => x,
        Err(msg) => return out.push_str(msg),
    };
    let srv = &be.servers[idx];
    match words {
        ["get", "weight"] => {
            let r = srv.state();
            let _ = writeln!(out, "{} (initial {})", r.uweight, r.iweight);
        }
        ["set", "weight"] => set_weight(be, idx, a(3), out),
        ["disable", "server"] => {
            be.change_server(idx, Change::SetAdmin { flag: Admin::FMAINT, cause: String::new() })
        }
        ["enable", "server"] => be.change_server(idx, Change::ClearAdmin { flag: Admin::FMAINT }),
        ["enable" | "disable", "health" | "agent"] => {
            let agent = words[1] == "agent";
            let on = words[0] == "enable";
            let configured = {
                let r = srv.state();
                if agent {
                    r.agent.is_some()
                } else {
                    r.check.is_some()
                }
            };
            if !configured && on {
                out.push_str(if agent {
                    "Agent was not configured on this server, cannot enable.\n"
                } else {
                    "Health check was not configured on this server, cannot enable.\n"
                });
                return;
            }
            be.change_server(idx, Change::CheckEnabled { agent, on });
        }
        ["set", "maxconn", "server"] => match a(4).parse::<u32>() {
            Ok(v) => be.change_server(idx, Change::Maxconn(v)),
            Err(_) => out.push_str("'set maxconn server' expects an integer parameter.\n"),
        },
        ["shutdown", "sessions", "server"] => {
            // Sessions registered by the server's own policy end as if it went down (and log
            // so); otherwise every session using the server ends.
            if srv.sessions.is_some() {
                crate::server::kill::shutdown(srv, crate::outcome::Cause::Down);
            } else {
                crate::runtime::sessions::abort_on_server(be.id, idx);
            }
        }
        ["set", "server"] => set_server(be, idx, &args[3..], out),
        _ => out.push_str("Unknown command.\n"),
    }
}

fn set_weight(be: &Backend, idx: usize, text: &str, out: &mut String) {
    let iweight = be.servers[idx].state().iweight;
    match parse_weight(text, iweight, be.dynamic_weights()) {
        Ok(w) => be.change_server(idx, Change::Weight(w)),
        Err(msg) => {
            out.push_str(&msg);
            if !msg.ends_with('\n') {
                out.push('\n');
            }
        }
    }
}

fn set_server(be: &Backend, idx: usize, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    match a(0) {
        "weight" => set_weight(be, idx, a(1), out),
        "state" => match a(1) {
            s @ ("ready" | "drain" | "maint") => set_state(be, idx, s),
            _ => out.push_str("'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n"),
        },
        "health" => {
            let oper = match a(1) {
                "up" => Oper::Running,
                "stopping" => Oper::Stopping,
                "down" => Oper::Stopped,
                _ => {
                    out.push_str("'set server <srv> health' expects 'up', 'stopping', or 'down'.\n");
                    return;
                }
            };
            be.change_server(idx, Change::Force { agent: false, oper });
        }
        "agent" => {
            if be.servers[idx].state().agent.is_none() {
                out.push_str("agent checks are not enabled on this server.\n");
                return;
            }
            let oper = match a(1) {
                "up" => Oper::Running,
                "down" => Oper::Stopped,
                _ => {
                    out.push_str("'set server <srv> agent' expects 'up' or 'down'.\n");
                    return;
                }
            };
            be.change_server(idx, Change::Force { agent: true, oper });
        }
        "addr" => set_addr(be, idx, &args[1..], out),
        "agent-addr" | "agent-port" | "check-addr" | "check-port" => {
            check_target(&be.servers[idx], a(0), &args[1..], out)
        }
        "agent-send" => {
            let srv = &be.servers[idx];
            if srv.state().agent.as_ref().is_none_or(|c| !c.enabled) {
                out.push_str("agent checks are not enabled on this server.\n");
            } else {
                let text = a(1).to_string();
                srv.set_check_target(|t| t.agent_send = Some(text));
            }
        }
        "fqdn" => {
            // No `resolvers` section: as HAProxy says then.
            out.push_str("set server <b>/<s> fqdn failed because no resolution is configured.\n");
        }
        "ssl" => {
            let _ = writeln!(out, "'set server <srv> {}' is not supported by Fulcrum yet.", a(0));
        }
        _ => out.push_str("usage: set server <backend>/<server> addr | agent | agent-addr | agent-port | agent-send | check-addr | check-port | fqdn | health | ssl | state | weight\n"),
    }
}

/// `set server <b>/<s> check-addr|agent-addr <ip> [port <p>]`, `check-port|agent-port <p>`:
/// HAProxy's validation, its messages (a warning line), nothing applied on an error.
fn check_target(srv: &crate::server::Server, what: &str, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    let agent = what.starts_with("agent");
    let (addr, port) = if what.ends_with("-addr") {
        if a(0).is_empty() {
            let _ = writeln!(
                out,
                "set server <b>/<s> {what} requires an address and optionally a port."
            );
            return;
        }
        (Some(a(0)), (a(1) == "port").then(|| a(2)))
    } else {
        if a(0).is_empty() {
            let _ = writeln!(out, "set server <b>/<s> {what} requires a port.");
            return;
        }
        (None, Some(a(0)))
    };
    let enabled = {
        let r = srv.state();
        let c = if agent { r.agent.as_ref() } else { r.check.as_ref() };
        c.is_some_and(|c| c.enabled)
    };
    // A warning: one line, no empty line after it (HAProxy's `cli_msg`).
    let warn = |out: &mut String, msg: &str| out.push_str(msg);
    if !enabled {
        let which = if agent { "agent" } else { "health" };
        return warn(out, &format!("{which} checks are not enabled on this server"));
    }
    let ip = match addr.map(str::parse::<IpAddr>) {
        Some(Ok(ip)) => Some(ip),
        Some(Err(_)) => return warn(out, &format!("invalid addr '{}'", addr.unwrap_or(""))),
        None => None,
    };
    let port = match port.map(str::parse::<i64>) {
        Some(Ok(p)) if (0..=65535).contains(&p) => Some(p as u16),
        Some(Ok(_)) => return warn(out, "provided port is invalid"),
        Some(Err(_)) => return warn(out, "provided port is not an integer"),
        None => None,
    };
    srv.set_check_target(|t| {
        let (a, p) = if agent {
            (&mut t.agent_addr, &mut t.agent_port)
        } else {
            (&mut t.check_addr, &mut t.check_port)
        };
        if ip.is_some() {
            *a = ip;
        }
        if port.is_some() {
            *p = port;
        }
    });
}

/// `set server <b>/<s> addr <ip> [port <port>]`, with HAProxy's report of what changed.
fn set_addr(be: &Backend, idx: usize, args: &[String], out: &mut String) {
    use crate::server::Target;
    let srv = &be.servers[idx];
    let Some(text) = args.first() else {
        out.push_str("set server <b>/<s> addr requires an address and optionally a port.\n");
        return;
    };
    let Ok(ip) = text.parse::<std::net::IpAddr>() else {
        let _ = writeln!(out, "Invalid addr '{text}' by 'stats socket command'");
        return;
    };
    let (old_ip, old_port) = match srv.target() {
        Target::Inet(a) => (Some(a.ip()), a.port()),
        Target::InetRelative { ip, .. } => (Some(ip), 0),
        _ => (None, 0),
    };
    let mut msg = match old_ip {
        Some(o) if o == ip => "no need to change the addr".to_string(),
        Some(o) => format!("IP changed from '{o}' to '{ip}'"),
        None => format!("IP changed from '-' to '{ip}'"),
    };
    let mut port = old_port;
    if args.get(1).map(String::as_str) == Some("port") {
        let p = args.get(2).map_or("", String::as_str);
        match p.parse::<u16>() {
            Ok(p) if p == old_port => msg.push_str(", no need to change the port"),
            Ok(p) => {
                let _ = write!(msg, ", port changed from '{old_port}' to '{p}'");
                port = p;
            }
            Err(_) => {
                let _ = write!(msg, ", problem converting port '{p}' to an int");
            }
        }
    }
    let _ = writeln!(out, "{msg} by 'stats socket command'");
    let new = std::net::SocketAddr::new(ip, port);
    if old_ip != Some(ip) || port != old_port {
        srv.set_target(Target::Inet(new));
        // A server that had no address leaves the maintenance it was put in for that.
        be.change_server(idx, Change::ClearAdmin { flag: Admin::RMAINT });
    }
}

/// HAProxy's numbers for `show servers state` (`srv_op_state`, check state bits).
fn oper_number(o: Oper) -> u8 {
    match o {
        Oper::Stopped => 0,
        Oper::Starting => 1,
        Oper::Running => 2,
        Oper::Stopping => 3,
    }
}

/// `HCHK_STATUS_*` numbers.
fn check_status_number(s: fulcrum_config::CheckStatus) -> u8 {
    use fulcrum_config::CheckStatus::*;
    match s {
        Unknown => 0,
        Init => 1,
        Checked => 3,
        Hana => 4,
        SockErr => 5,
        L4Ok => 6,
        L4Timeout => 7,
        L4Con => 8,
        L6Ok => 9,
        L6Timeout => 10,
        L6Rsp => 11,
        L7Timeout => 12,
        L7Rsp => 13,
        L7Ok => 15,
        L7OkCond => 16,
        L7Sts => 17,
        ProcErr => 18,
        ProcTimeout => 19,
        ProcOk => 20,
    }
}

/// A check's state bits as HAProxy saves them (`CHK_ST_CONFIGURED` 0x4, `ENABLED` 0x2,
/// `PAUSED` 0x8... : a configured and enabled check shows 6).
fn check_state(c: Option<&crate::server::state::Check>) -> u8 {
    match c {
        None => 0,
        // HAProxy's CHK_ST_CONFIGURED (0x2), CHK_ST_ENABLED (0x4), CHK_ST_PAUSED (0x8).
        Some(c) => 0x2 | if c.enabled { 0x4 } else { 0 } | if c.paused { 0x8 } else { 0 },
    }
}

fn show_state(api: &View, only: &str, out: &mut String) {
    let bes: Vec<&Arc<Backend>> = if only.is_empty() {
        api.shared.proxies.backends.iter().collect()
    } else {
        match api.shared.proxies.backend(only) {
            Some(b) => vec![b],
            None => return out.push_str("Can't find backend.\n"),
        }
    };
    out.push_str("1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n");
    let now = Instant::now();
    for be in bes {
        for srv in &be.servers {
            let r = srv.state().clone();
            let (addr, port) = match &srv.target() {
                crate::server::Target::Inet(a) => (a.ip().to_string(), a.port()),
                crate::server::Target::InetRelative { ip, .. } => (ip.to_string(), 0),
                _ => ("-".to_string(), 0),
            };
            let check = r.check.as_ref();
            let (status, result, health) = match check {
                Some(c) => (
                    check_status_number(c.status),
                    match crate::server::state::verdict(c.status) {
                        _ if c.status == fulcrum_config::CheckStatus::Init => 0,
                        crate::server::state::Verdict::Neutral => 1,
                        crate::server::state::Verdict::Failed => 2,
                        crate::server::state::Verdict::Passed => 3,
                        crate::server::state::Verdict::CondPassed => 4,
                    },
                    c.health,
                ),
                // Without a check, HAProxy's counter sits at the configured `rise` while up.
                None => {
                    let up = if r.is_up() { srv.policy.rise } else { 0 };
                    (1, 0, r.unchecked_health.unwrap_or(up))
                }
            };
            let live = srv.check_target();
            let p = &srv.policy;
            let check_port = live.check_port.or(p.check.as_ref().and_then(|c| c.port)).unwrap_or(0);
            let agent_port = live.agent_port.or(p.agent.as_ref().and_then(|a| a.port)).unwrap_or(0);
            let shown = |a: Option<IpAddr>| a.map_or("-".to_string(), |a| a.to_string());
            let check_addr = shown(live.check_addr.or(p.check_addr));
            let agent_addr = shown(live.agent_addr.or(p.agent_addr));
            let _ = writeln!(
                out,
                "{} {} {} {} {addr} {} {} {} {} {} {status} {result} {health} {} {} 0 0 - {port} - 0 {check_port} {check_addr} {agent_addr} {agent_port}",
                be.id,
                be.name,
                srv.id,
                srv.name,
                oper_number(r.oper),
                r.admin.0,
                r.uweight,
                r.iweight,
                now.saturating_duration_since(r.last_change).as_secs(),
                check_state(check),
                check_state(r.agent.as_ref()),
            );
        }
    }
}

fn show_conn(api: &View, only: &str, out: &mut String) {
    let bes: Vec<&Arc<Backend>> = if only.is_empty() {
        api.shared.proxies.backends.iter().collect()
    } else {
        match api.shared.proxies.backend(only) {
            Some(b) => vec![b],
            None => return out.push_str("Can't find backend.\n"),
        }
    };
    let threads = api.shared.process.nbthread;
    let _ = writeln!(out, "# bkname/svname bkid/svid addr port - purge_delay used_cur used_max need_est unsafe_nb safe_nb idle_lim idle_cur idle_per_thr[{threads}]");
    for be in bes {
        for srv in &be.servers {
            let (addr, port) = match &srv.target() {
                crate::server::Target::Inet(a) => (a.ip().to_string(), a.port()),
                _ => ("-".to_string(), 0),
            };
            let idle = srv.idle_conns.load(std::sync::atomic::Ordering::Relaxed);
            let used = srv.cur_conns();
            let max = crate::counters::Counters::get(&srv.counters.max_sessions);
            let _ = write!(
                out,
                "{}/{} {}/{} {addr} {port} - 5000 {used} {max} {used} 0 {idle} {} {idle}",
                be.name, srv.name, be.id, srv.id, srv.pool_max_conn
            );
            for _ in 0..threads {
                out.push_str(" 0");
            }
            out.push('\n');
        }
    }
}
