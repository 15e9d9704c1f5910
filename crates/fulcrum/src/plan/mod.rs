//! The validated runtime plan: the typed config turned into shared, immutable run-time objects
//! (frontends, backends, servers with their atomics), with names resolved to `Arc`s and server
//! host names resolved to addresses.
//!
//! Built once at start-up on the main thread; workers only read it. Must not touch sockets.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use fulcrum_balance::{Algorithm, Balancer, HashConfig, HashFunction};
use fulcrum_config as cfg;

use crate::backend::{Backend, BackendTimeouts};
use crate::frontend::limit::Limit;
use crate::frontend::{Bind, Frontend, FrontendTimeouts};
use crate::server::{Server, Target};

#[derive(Debug)]
pub struct Plan {
    pub global: cfg::Global,
    pub frontends: Vec<Arc<Frontend>>,
}

/// Builds the plan; errors name the config line they come from.
pub fn build(config: &cfg::Config) -> Result<Plan, Vec<String>> {
    let mut errors = Vec::new();
    let mut by_name: HashMap<&str, Arc<Backend>> = HashMap::new();
    for p in config.backends() {
        match backend(p) {
            Ok(be) => {
                let be = Arc::new(be);
                by_name.insert(&p.name, be);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    let mut frontends = Vec::new();
    for p in config.frontends() {
        let first_use = p.use_backends.first().and_then(|u| match &u.target {
            cfg::BackendTarget::Name(n) if u.cond.is_none() => Some(n.as_str()),
            _ => None,
        });
        let target = first_use
            .or(p.default_backend.as_ref().map(|r| r.name.as_str()))
            .or((p.kind == cfg::ProxyKind::Listen).then_some(p.name.as_str()));
        let backend = match target {
            Some(name) => match by_name.get(name) {
                Some(be) => Some(Arc::clone(be)),
                None => {
                    errors.push(format!(
                        "[{}] : proxy '{}': unknown backend '{name}'",
                        p.span, p.name
                    ));
                    None
                }
            },
            None => None,
        };
        frontends.push(Arc::new(frontend(p, backend)));
    }
    if errors.is_empty() {
        Ok(Plan { global: config.global.clone(), frontends })
    } else {
        Err(errors)
    }
}

fn frontend(p: &cfg::Proxy, backend: Option<Arc<Backend>>) -> Frontend {
    let binds = p
        .binds
        .iter()
        .map(|b| {
            Arc::new(Bind {
                addrs: b.addrs.clone(),
                backlog: b.backlog,
                v4v6: b.v4v6,
                limit: Limit::new(b.maxconn.unwrap_or(0)),
            })
        })
        .collect();
    Frontend {
        name: p.name.clone(),
        binds,
        limit: Limit::new(p.maxconn.unwrap_or(0)),
        timeouts: FrontendTimeouts { client: p.timeouts.client, client_fin: p.timeouts.client_fin },
        backend,
        counters: Default::default(),
    }
}

fn backend(p: &cfg::Proxy) -> Result<Backend, Vec<String>> {
    let mut errors = Vec::new();
    let mut servers = Vec::new();
    for s in &p.servers {
        match target(&s.addr) {
            Ok(t) => {
                let mut srv = Server::new(
                    s.name.clone(),
                    t,
                    s.weight,
                    s.maxconn.unwrap_or(0),
                    s.maxqueue.unwrap_or(0),
                );
                srv.backup = s.backup;
                srv.set_maintenance_raw(s.disabled);
                servers.push(srv);
            }
            Err(e) => {
                errors.push(format!("[{}] : proxy '{}': server '{}': {e}", s.span, p.name, s.name))
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (algorithm, deterministic) = match p.balance {
        cfg::Balance::RoundRobin => (Algorithm::RoundRobin, false),
        cfg::Balance::StaticRr => (Algorithm::StaticRr, false),
        cfg::Balance::LeastConn => (Algorithm::LeastConn, false),
        cfg::Balance::First => (Algorithm::First, false),
        cfg::Balance::Source => (Algorithm::Source, true),
        cfg::Balance::Random { draws } => (Algorithm::Random { draws }, false),
        // The session computes the key (URI, parameter or header); without one, round robin.
        cfg::Balance::Uri { .. } | cfg::Balance::UrlParam { .. } | cfg::Balance::Hdr { .. } => {
            (Algorithm::Hash, true)
        }
    };
    let hash = HashConfig {
        consistent: p.hash_type.method == cfg::HashMethod::Consistent,
        function: match p.hash_type.function {
            cfg::HashFunction::Sdbm => HashFunction::Sdbm,
            cfg::HashFunction::Djb2 => HashFunction::Djb2,
            cfg::HashFunction::Wt6 => HashFunction::Wt6,
            cfg::HashFunction::Crc32 => HashFunction::Crc32,
        },
        avalanche: p.hash_type.avalanche,
    };
    let t = &p.timeouts;
    Ok(Backend::new(
        p.name.clone(),
        servers,
        Balancer::new(algorithm, hash),
        deterministic,
        p.retries,
        p.redispatch,
        p.abortonclose,
        BackendTimeouts {
            connect: t.connect,
            server: t.server,
            queue: t.queue,
            tunnel: t.tunnel,
            server_fin: t.server_fin,
        },
    ))
}

/// Resolves a server address (host names through the system resolver, first answer).
fn target(addr: &cfg::ServerAddr) -> Result<Target, String> {
    match addr {
        cfg::ServerAddr::Unix(path) => Ok(Target::Unix(path.clone())),
        cfg::ServerAddr::Inet { host, port } => {
            let ip = resolve(host)?;
            Ok(match port {
                cfg::ServerPort::Fixed(p) => Target::Inet(SocketAddr::new(ip, *p)),
                cfg::ServerPort::Same => Target::InetRelative { ip, offset: 0 },
                cfg::ServerPort::Offset(o) => Target::InetRelative { ip, offset: *o },
            })
        }
    }
}

fn resolve(host: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(ip);
    }
    let mut addrs = (host, 0)
        .to_socket_addrs()
        .map_err(|e| format!("could not resolve address '{host}': {e}"))?;
    addrs.next().map(|a| a.ip()).ok_or_else(|| format!("no address found for '{host}'"))
}
