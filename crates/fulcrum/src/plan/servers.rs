//! A backend's servers for the plan: addresses found as `init-addr` says, stable ids as HAProxy
//! assigns them, the check policy, and each server's initial state record (checks armed,
//! `disabled` or unresolved servers in maintenance, `slowstart`).

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use fulcrum_config as cfg;

use crate::files::resolve;
use crate::server::state::{Admin, Check};
use crate::server::{kill, Policy, Server, Target};

/// The servers of backend `p`; errors and warnings name the line they come from.
pub fn build(
    p: &cfg::Proxy,
    g: &cfg::GlobalTls,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Vec<Server> {
    let now = Instant::now();
    let ids = super::auto_ids(p.servers.iter().map(|s| s.id));
    // A backup server's sessions may be ended by an active server coming back.
    let backups_killable = p.servers.iter().any(|s| s.shutdown_backups_on_up);
    let mut out = Vec::new();
    for (s, id) in p.servers.iter().zip(ids) {
        let who = format!("[{}] : 'server {}/{}'", s.span, p.name, s.name);
        let (target, unresolved) = match target(&s.addr, &s.init_addr) {
            Ok(t) => t,
            Err(e) => {
                errors.push(format!("{who} : {e}"));
                continue;
            }
        };
        if s.check.enabled && s.check.port.is_none() && !has_port(&target) && !connect_has_port(p) {
            let kind = if p.kind == cfg::ProxyKind::Listen { "proxy" } else { "backend" };
            errors.push(format!(
                "{kind} '{}': server '{}' has neither service port nor check port.",
                p.name, s.name
            ));
            continue;
        }
        if let Some(name) = &unresolved {
            warnings.push(format!("{who} : could not resolve address '{name}', disabling server."));
        }
        let mut srv = Server::new(
            s.name.clone(),
            target,
            s.weight,
            s.maxconn.unwrap_or(0),
            s.maxqueue.unwrap_or(0),
        );
        srv.id = id;
        srv.backup = s.backup;
        srv.cookie = s.cookie.clone();
        srv.pool_max_conn = s.pool_max_conn.unwrap_or(-1);
        srv.pool_low_conn = s.pool_low_conn.unwrap_or(0).max(0) as u32;
        srv.policy = policy(s, &who, errors);
        let check_elsewhere = s.check.port.is_some() || s.check.addr.is_some();
        let connect_ssl =
            p.health_check.steps.iter().any(|c| matches!(c, cfg::CheckStep::Connect(c) if c.ssl));
        match crate::tls::origin(
            &s.tls,
            g,
            check_elsewhere,
            connect_ssl,
            &who,
            warnings,
            &crate::rules::sample::sni_expr,
        ) {
            Ok(o) => srv.tls = o,
            Err(e) => {
                errors.push(e);
                continue;
            }
        }
        srv.socks4 = s.socks4;
        srv.proto = s.proto;
        let alpn_h2 = s.tls.ssl && s.tls.alpn.as_ref().is_some_and(|l| l.iter().any(|p| p == "h2"));
        srv.check_h2 = s.check_proto == Some(cfg::MuxProto::H2);
        let alpn_h2_only =
            s.tls.ssl && s.tls.alpn.as_ref().is_some_and(|l| l.len() == 1 && l[0] == "h2");
        srv.ws_h2 = match s.ws {
            Some(w) => w == cfg::MuxProto::H2,
            None => s.proto == Some(cfg::MuxProto::H2) || (s.proto.is_none() && alpn_h2_only),
        };
        srv.may_h2 = match s.proto {
            Some(p) => p == cfg::MuxProto::H2,
            None => alpn_h2,
        };
        if s.send_proxy.version > 0 {
            srv.send_proxy = Some(Box::new(s.send_proxy.clone()));
        }
        if s.shutdown_on_down || (s.backup && backups_killable) {
            srv.sessions = Some(kill::Sessions::default());
        }
        {
            let mut r = srv.state();
            r.slowstart = s.slowstart;
            if s.check.enabled {
                let c = &s.check;
                let mut check = Check::new(false, c.rise, c.fall, c.inter);
                check.fastinter = c.fastinter;
                check.downinter = c.downinter;
                r.check = Some(check);
            }
            if s.agent.enabled {
                let a = &s.agent;
                r.agent = Some(Check::new(true, 1, 1, a.inter));
            }
            let mut maint = 0;
            if s.disabled {
                maint |= Admin::FMAINT | Admin::CMAINT;
            }
            if unresolved.is_some() || matches!(srv.target(), Target::Unresolved) {
                maint |= Admin::RMAINT;
            }
            if maint != 0 {
                r.start_in_maint(maint);
            }
            srv.publish(&r, now);
        }
        out.push(srv);
    }
    out
}

/// The server's address names a port (checks can connect there).
fn has_port(t: &Target) -> bool {
    !matches!(t, Target::InetRelative { .. })
}

/// The proxy's check begins with a `connect` step that names a port.
fn connect_has_port(p: &cfg::Proxy) -> bool {
    let first = p.health_check.steps.iter().find(|s| !matches!(s, cfg::CheckStep::Comment(_)));
    matches!(first, Some(cfg::CheckStep::Connect(c)) if c.port.is_some())
}

/// The check and state-change settings of one server.
fn policy(s: &cfg::Server, who: &str, errors: &mut Vec<String>) -> Policy {
    let mut resolve_opt = |host: &Option<String>| {
        host.as_ref().and_then(|h| match resolve(h) {
            Ok(ip) => Some(ip),
            Err(e) => {
                errors.push(format!("{who} : {e}"));
                None
            }
        })
    };
    Policy {
        check_addr: resolve_opt(&s.check.addr),
        agent_addr: resolve_opt(&s.agent.addr),
        check: s.check.enabled.then(|| s.check.clone()),
        rise: s.check.rise,
        agent: s.agent.enabled.then(|| s.agent.clone()),
        observe: s.observe,
        on_error: s.on_error,
        error_limit: s.error_limit,
        shutdown_on_down: s.shutdown_on_down,
        shutdown_backups_on_up: s.shutdown_backups_on_up,
    }
}

/// Finds a server's address as its `init-addr` methods say. Returns the target and, when the
/// name did not resolve but `none` allowed starting anyway, that name.
fn target(
    addr: &cfg::ServerAddr,
    methods: &[cfg::InitAddr],
) -> Result<(Target, Option<String>), String> {
    let (host, port) = match addr {
        cfg::ServerAddr::Unix(path) => return Ok((Target::Unix(path.clone()), None)),
        cfg::ServerAddr::Inet { host, port } => (host, port),
    };
    let with = |ip: IpAddr| match port {
        cfg::ServerPort::Fixed(p) => Target::Inet(SocketAddr::new(ip, *p)),
        cfg::ServerPort::Same => Target::InetRelative { ip, offset: 0 },
        cfg::ServerPort::Offset(o) => Target::InetRelative { ip, offset: *o },
    };
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok((with(ip), None));
    }
    let mut failed = false;
    for m in methods {
        match m {
            // No server-state file yet: `last` never has an address to give.
            cfg::InitAddr::Last => {}
            cfg::InitAddr::Libc => match resolve(host) {
                Ok(ip) => return Ok((with(ip), None)),
                Err(_) => failed = true,
            },
            cfg::InitAddr::None => {
                return Ok((Target::Unresolved, failed.then(|| host.clone())));
            }
            cfg::InitAddr::Ip(ip) => return Ok((with(*ip), None)),
        }
    }
    if failed {
        Err(format!("could not resolve address '{host}'."))
    } else {
        Err(format!("no method found to resolve address '{host}'."))
    }
}
