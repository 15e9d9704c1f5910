//! A backend's servers for the plan: addresses found as `init-addr` says, stable ids as HAProxy
//! assigns them, the check policy, and each server's initial state record (checks armed,
//! `disabled` or unresolved servers in maintenance, `slowstart`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use fulcrum_config as cfg;

use crate::backend::Backend;
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
        // HAProxy's `minconn` and `maxconn`: a `minconn` above `maxconn` (or alone) is the
        // limit; equal to it, the limit is static.
        let limits = match (s.minconn.unwrap_or(0), s.maxconn.unwrap_or(0)) {
            (min, max) if min > max => (0, min),
            (min, max) if min == max => (0, max),
            limits => limits,
        };
        let mut srv =
            Server::with_minconn(s.name.clone(), target, s.weight, limits, s.maxqueue.unwrap_or(0));
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
        srv.tcp_ut = s.tcp_ut;
        (srv.tfo, srv.non_stick) = (s.tfo, s.non_stick);
        srv.max_reuse = s.max_reuse.unwrap_or(u32::MAX);
        srv.redir = s.redir.clone();
        srv.source = s.source.clone().map(|c| Arc::new(crate::server::source::SourceBind::new(c)));
        srv.track = s.track.as_ref().map(|t| match t.contains('/') {
            true => t.clone(),
            false => format!("{}/{t}", p.name),
        });
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

/// `track`: each tracked server learns which servers follow it, and a tracked server that
/// starts in maintenance puts its trackers in (inherited) maintenance, as HAProxy's
/// `srv_propagate_admin_state()` at start-up.
pub fn link_trackers(config: &cfg::Config, backends: &HashMap<String, Arc<Backend>>) {
    type Followers = Vec<(std::sync::Weak<Backend>, usize)>;
    let mut links: HashMap<(String, usize), Followers> = HashMap::new();
    for p in config.backends().filter(|p| !p.disabled) {
        let Some(be) = backends.get(&p.name) else { continue };
        for (i, s) in p.servers.iter().enumerate() {
            let Some(text) = &s.track else { continue };
            let Ok((px, idx)) = cfg::track::resolve(config, p, text) else { continue };
            let name = config.proxies[px].name.clone();
            links.entry((name, idx)).or_default().push((Arc::downgrade(be), i));
        }
    }
    let mut by_backend: HashMap<String, crate::backend::Trackers> = HashMap::new();
    for ((name, idx), trackers) in links {
        let Some(srv) = backends.get(&name).and_then(|b| b.servers.get(idx)) else { continue };
        let maint = srv.state().admin.maint();
        for (be, i) in &trackers {
            if let Some(be) = be.upgrade().filter(|_| maint) {
                let t = &be.servers[*i];
                let mut r = t.state();
                let _ = r.set_admin(crate::server::state::Admin::IMAINT, "", Instant::now());
                t.publish(&r, Instant::now());
            }
        }
        by_backend.entry(name).or_default().insert(idx, trackers);
    }
    for (name, t) in by_backend {
        if let Some(be) = backends.get(&name) {
            let _ = be.trackers.set(t);
        }
    }
}
