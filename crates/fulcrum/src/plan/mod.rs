//! The validated runtime plan: the typed config turned into shared, immutable run-time objects
//! (frontends, backends, servers with their atomics), with names resolved to `Arc`s and server
//! host names resolved to addresses.
//!
//! Built once at start-up on the main thread; workers only read it. It is also the registry
//! of proxies: each frontend and backend has a stable id (`id`, or assigned in configuration
//! order as HAProxy does) and is found by name or by id. Must not touch sockets.
//!
//! The frontends and backends sit in a `shared::Proxies` that the plan and the workers hold
//! once; `timeouts` applies HAProxy's defaults to a proxy's timeouts.

mod apps;
pub mod binds;
mod messages;
mod servers;

use messages::{error_files_readable, error_message, renders, reply_message};

use std::collections::HashMap;
use std::sync::Arc;

use fulcrum_balance::{Algorithm, Balancer, HashConfig};
use fulcrum_config as cfg;

use crate::backend::Backend;
use crate::frontend::limit::Limit;
use crate::frontend::{Bind, Frontend};
use crate::http_settings::case::CaseMap;
use crate::http_settings::messages::Messages;
use crate::http_settings::{AddrHeader, ConnMode, HashKey, HttpProxy, Reuse};
use crate::shared::Proxies;

#[derive(Debug)]
pub struct Plan {
    pub global: cfg::Global,
    /// The proxies, stick tables and global log targets: built here, held once, shared with
    /// the workers (`shared::Shared::proxies`).
    pub proxies: Arc<Proxies>,
    /// Non-fatal problems found while building (an unresolvable server put in maintenance).
    pub warnings: Vec<String>,
    /// `log-forward` sections and their targets (started with the process).
    pub log_forwards: Vec<(cfg::logfwd::LogForward, Arc<crate::log::syslog::Logger>)>,
}

/// Proxy ids as HAProxy gives them (`check_config_validity`): in configuration order, a
/// proxy without `id` takes the first unused number from a counter, and the counter moves past
/// every proxy, numbered or not. (HAProxy's `GLOBAL` proxy of a `stats socket` takes a step of
/// the counter too: the stats socket issue will add it.)
fn proxy_ids(config: &cfg::Config) -> HashMap<String, u32> {
    // With a `stats socket`, HAProxy's runtime API proxy (GLOBAL) is numbered first.
    let global = !config.global.stats_sockets.is_empty();
    let forced =
        std::iter::repeat_n(None, usize::from(global)).chain(config.proxies.iter().map(|p| p.id));
    let ids = auto_ids(forced).into_iter().skip(usize::from(global));
    config.proxies.iter().map(|p| p.name.clone()).zip(ids).collect()
}

/// HAProxy's numbering of proxies and of a proxy's servers: forced ids stay; the others take
/// the first free number at or after a counter that advances once per item.
pub(crate) fn auto_ids(forced: impl Iterator<Item = Option<u32>> + Clone) -> Vec<u32> {
    let used: std::collections::HashSet<u32> = forced.clone().flatten().collect();
    let mut taken = used.clone();
    let mut next = 1u32;
    forced
        .map(|f| {
            let id = f.unwrap_or_else(|| {
                while taken.contains(&next) {
                    next += 1;
                }
                taken.insert(next);
                next
            });
            next += 1;
            id
        })
        .collect()
}

/// The running plan's proxies, whose live state a reload takes over (matched by name).
#[derive(Clone, Copy, Default)]
pub struct Previous<'a> {
    pub frontends: &'a [Arc<Frontend>],
    pub backends: &'a [Arc<Backend>],
    /// Its stick tables: a table declared the same way keeps its entries.
    pub tables: Option<&'a crate::stick::Tables>,
}

/// Builds the plan; errors name the config line they come from. With `prev` (an in-process
/// reload), proxies and servers that keep their names keep their live state.
pub fn build(config: &cfg::Config, prev: Previous<'_>) -> Result<Plan, Vec<String>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut maps = HashMap::new();
    // Pattern references are numbered in configuration order, whatever order rules compile in.
    let mut files: Vec<String> = Vec::new();
    for p in &config.proxies {
        if !files.iter().any(|f| **f == *p.span.file) {
            files.push(p.span.file.to_string());
        }
    }
    crate::rules::refs::set_file_order(files);
    let ids = proxy_ids(config);
    let tables = Arc::new(stick_tables(config, prev.tables));
    let caches = Arc::new(crate::cache::Caches::build(config));
    let mut userlists = crate::auth::Userlists::new();
    for u in &config.userlists {
        match crate::auth::Userlist::build(u) {
            Ok(l) => {
                userlists.insert(u.name.clone(), Arc::new(l));
            }
            Err(e) => errors.push(e),
        }
    }
    crate::log::ring::install(&config.rings);
    if let Err(e) = crate::lua::install(&config.global.lua) {
        errors.push(e);
    }
    let common = crate::log::syslog::Common::new(&config.global, &mut errors);
    let mut log_forwards = Vec::new();
    for f in &config.log_forwards {
        match crate::log::syslog::Logger::build(&f.logs, None, &common) {
            Ok(Some(l)) => log_forwards.push((f.clone(), Arc::new(l))),
            Ok(None) => {
                errors.push(format!("[{}] : log-forward '{}' has no log target.", f.span, f.name))
            }
            Err(e) => errors.push(e),
        }
    }
    let logger = |p: &cfg::Proxy, errors: &mut Vec<String>| {
        crate::log::syslog::Logger::build(&p.logs, p.log_tag.as_deref(), &common)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten()
            .map(Arc::new)
    };
    let mut by_name: HashMap<String, Arc<Backend>> = HashMap::new();
    let mut all_backends = Vec::new();
    for p in config.backends() {
        match backend(p, config, &mut maps, (&tables, &userlists, &caches, &common), &mut warnings)
        {
            Ok(mut be) => {
                if let Some(old) = prev.backends.iter().find(|b| b.name == p.name) {
                    be.carry_from(old);
                }
                be.id = ids.get(&p.name).copied().unwrap_or(0);
                be.logger = logger(p, &mut errors);
                let be = Arc::new(be);
                all_backends.push(Arc::clone(&be));
                by_name.insert(p.name.clone(), be);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.iter().any(|e| e.contains("resolve address")) {
        errors.push("Failed to initialize server(s) addr.".to_string());
    }
    servers::link_trackers(config, &by_name);
    let backends = Arc::new(by_name);
    let proc_vars = Arc::new(crate::rules::sample::ProcVars::default());
    global_vars(config, &proc_vars, &backends, &mut errors);
    errors.extend(CaseMap::from_config(&config.global.h1_case).err());
    let mut frontends = Vec::new();
    // A disabled frontend is not started: no listener, no row in the statistics.
    for p in config.frontends().filter(|p| !p.disabled) {
        let backend = default_backend(p, &backends, &mut errors);
        let (rules, use_backends, log, needs_dst, needs_payload) = frontend_rules(
            p,
            config,
            &mut maps,
            (&tables, &userlists, &caches, &common),
            &backends,
            &mut errors,
        );
        let http = match p.mode {
            cfg::Mode::Http => match http_proxy(p, config, &common) {
                Ok(h) => Some(h),
                Err(mut e) => {
                    errors.append(&mut e);
                    None
                }
            },
            cfg::Mode::Tcp => {
                error_files_readable(p, config, &mut errors);
                None
            }
        };
        let mut fe = frontend(p, backend, &config.global.tls, &mut errors, &mut warnings);
        if let Some(old) = prev.frontends.iter().find(|f| f.name == p.name) {
            fe.carry_from(old);
        }
        fe.id = ids.get(&p.name).copied().unwrap_or(0);
        fe.logger = logger(p, &mut errors);
        fe.log = log;
        fe.http = http;
        if p.mode == cfg::Mode::Tcp && crate::frontend::may_upgrade(p, config) {
            match http_proxy(p, config, &common) {
                Ok(h) => fe.upgrade = Some(h),
                Err(mut e) => errors.append(&mut e),
            }
        }
        fe.rules = rules;
        fe.use_backends = use_backends;
        fe.backends = Arc::clone(&backends);
        fe.proc_vars = Arc::clone(&proc_vars);
        fe.needs_dst = needs_dst;
        // (SPOE engines asked on `tcp-request content` are asked where the first bytes are
        // awaited.)
        let spoe = crate::rules::spoe::asks_on_content(&fe.rules);
        fe.needs_payload = (needs_payload || spoe) && p.mode == cfg::Mode::Tcp;
        fe.inspect_delay = p.inspect_delay;
        frontends.push(Arc::new(fe));
    }
    errors.extend(binds::thread_errors(config));
    crate::rules::refs::number();
    if errors.is_empty() {
        let global_logger =
            crate::log::syslog::Logger::build(&[cfg::LogEntry::Global], None, &common)
                .ok()
                .flatten()
                .map(Arc::new);
        let proxies = Proxies { frontends, backends: all_backends, global_logger, tables, caches };
        Ok(Plan {
            global: config.global.clone(),
            proxies: Arc::new(proxies),
            warnings,
            log_forwards,
        })
    } else {
        Err(errors)
    }
}

/// A frontend's default backend (a listen's own), or an error when it names none defined.
fn default_backend(
    p: &cfg::Proxy,
    backends: &HashMap<String, Arc<Backend>>,
    errors: &mut Vec<String>,
) -> Option<Arc<Backend>> {
    let default = p
        .default_backend
        .as_ref()
        .map(|r| r.name.as_str())
        .or((p.kind == cfg::ProxyKind::Listen).then_some(p.name.as_str()));
    match default {
        Some(name) => match backends.get(name) {
            Some(be) => Some(Arc::clone(be)),
            None => {
                errors.push(format!("[{}] : proxy '{}': unknown backend '{name}'", p.span, p.name));
                None
            }
        },
        None => None,
    }
}

/// A frontend's compiled rules, `use_backend` rules and log settings, and whether they read
/// the address or payload.
type FrontendRules = (
    crate::rules::ProxyRules,
    crate::frontend::switching::UseBackends,
    crate::rules::format::Settings,
    bool,
    bool,
);

fn frontend_rules(
    p: &cfg::Proxy,
    config: &cfg::Config,
    maps: &mut HashMap<(std::path::PathBuf, u8), Arc<crate::rules::maps::LiveMap>>,
    (tables, userlists, caches, common): (
        &crate::stick::Tables,
        &crate::auth::Userlists,
        &crate::cache::Caches,
        &crate::log::syslog::Common,
    ),
    backends: &HashMap<String, Arc<Backend>>,
    errors: &mut Vec<String>,
) -> FrontendRules {
    let messages = |r: &cfg::Reply, at: &cfg::Span| reply_message(r, &config.http_errors, at);
    let mut c = crate::rules::Compiler::new(p, maps, &messages, tables, userlists);
    c.caches = Some(caches);
    c.logs = Some(common);
    let mut rules = proxy_rules(&mut c, p);
    let mut use_backends = Vec::new();
    for u in &p.use_backends {
        let cond = c.cond(&u.cond, &u.span);
        let target = match &u.target {
            cfg::BackendTarget::Name(n) => match backends.get(n) {
                Some(be) => crate::frontend::switching::UseTarget::Fixed(Arc::clone(be)),
                None => {
                    c.errors
                        .push(format!("[{}] : proxy '{}': unknown backend '{n}'", u.span, p.name));
                    continue;
                }
            },
            cfg::BackendTarget::Dynamic(f) => {
                crate::frontend::switching::UseTarget::Dynamic(c.format(f, &u.span))
            }
        };
        use_backends.push((target, cond));
    }
    if use_backends.len() == p.use_backends.len() {
        rules.switching = c.switching(&p.use_backends);
    }
    let log = log_settings(&mut c, p);
    errors.append(&mut c.errors);
    // The backends' rules may read it too (a listen's own rules were compiled above).
    let needs_dst = c.uses_dst || p.originalto.is_some() || backends.values().any(|b| b.uses_dst);
    let needs_payload = c.uses_payload || c.uses_http_req;
    rules.raw_http = c.uses_http_req && p.mode == cfg::Mode::Tcp;
    rules.acls = c.finish();
    (rules, use_backends, log, needs_dst, needs_payload)
}

/// Global `set-var` / `set-var-fmt` lines, evaluated in order: a process variable for each.
fn global_vars(
    config: &cfg::Config,
    proc_vars: &crate::rules::sample::ProcVars,
    backends: &HashMap<String, Arc<Backend>>,
    errors: &mut Vec<String>,
) {
    use crate::rules::sample::{compile, Value, Vars};
    let vars = Vars::default();
    let ctx = crate::rules::sample::Ctx::process(proc_vars, backends, &vars);
    let no_map =
        |_: &std::path::Path, _| Err("maps are not available in the global section".to_string());
    let no_table =
        |_: Option<&str>| Err("stick tables are not available in the global section".to_string());
    let no_list = |_: &str| Err("userlists are not available in the global section".to_string());
    let eval = |e: &cfg::SampleExpr| -> Result<Option<Value<'static>>, String> {
        let c = compile(e, &mut no_map.clone(), &no_table, &no_list)?;
        Ok(c.eval(&ctx).map(Value::into_owned))
    };
    for v in &config.global.set_vars {
        let value = match &v.value {
            cfg::GlobalVarValue::Expr(e) => eval(e),
            cfg::GlobalVarValue::Fmt(f) => {
                let mut out = Vec::new();
                let mut failed = None;
                for part in &f.parts {
                    match part {
                        cfg::LogPart::Lit(s) => out.extend_from_slice(s.as_bytes()),
                        cfg::LogPart::Sep => out.push(b' '),
                        cfg::LogPart::Sample(e, _) => match eval(e) {
                            Ok(Some(v)) => out.extend_from_slice(&v.as_bytes()),
                            Ok(None) => {}
                            Err(m) => failed = Some(m),
                        },
                        cfg::LogPart::Var(..) => {}
                    }
                }
                match failed {
                    Some(m) => Err(m),
                    None => Ok(Some(Value::Str(std::borrow::Cow::Owned(out)))),
                }
            }
        };
        match value {
            Ok(Some(val)) => proc_vars.set(&v.name, val),
            Ok(None) => {}
            Err(m) => errors.push(format!("parsing [{}] : {m}", v.span)),
        }
    }
}

/// The stick tables a configuration declares; one declared as in `prev` is kept, with its
/// entries.
fn stick_tables(config: &cfg::Config, prev: Option<&crate::stick::Tables>) -> crate::stick::Tables {
    let mut out = crate::stick::Tables::new();
    // Tables stick rules use keep the server (HAProxy adds the types itself).
    let mut for_servers: Vec<&str> = Vec::new();
    for p in config.proxies.iter().filter(|p| p.kind.is_backend()) {
        for r in &p.stick_rules {
            for_servers.push(r.table.as_deref().unwrap_or(&p.name));
        }
    }
    for (order, p) in config.proxies.iter().enumerate() {
        let Some(t) = &p.stick_table else { continue };
        let mut t = t.clone();
        if for_servers.contains(&p.name.as_str()) {
            for ty in [cfg::DataType::ServerId, cfg::DataType::ServerKey] {
                if t.stored(ty).is_none() {
                    t.store.push(cfg::Stored { ty, period: None, elems: 1 });
                }
            }
        }
        let t = &t;
        let kept = prev.and_then(|m| m.get(&p.name)).filter(|old| old.same_as(t));
        let table =
            kept.cloned().unwrap_or_else(|| Arc::new(crate::stick::Table::new(&p.name, order, t)));
        out.insert(p.name.clone(), table);
    }
    out
}

/// A frontend's log formats and options.
fn log_settings(
    c: &mut crate::rules::Compiler<'_>,
    p: &cfg::Proxy,
) -> crate::rules::format::Settings {
    let f = &p.formats;
    let mut compile = |f: &Option<cfg::LogFormat>| f.as_ref().map(|f| c.format(f, &p.span));
    let (line, sd, error) = (compile(&f.line), compile(&f.sd), compile(&f.error));
    use cfg::LogVar as V;
    let addrs = [V::BackendIp, V::BackendPort, V::ServerIp, V::ServerPort];
    // (`bc_src`, `bc_dst`... in a line read the same addresses.)
    let bc = |f: &cfg::Fetch| matches!(f, cfg::Fetch::Bc(cfg::BcFetch::Addr(_)));
    let server_addrs = [&line, &sd, &error]
        .iter()
        .any(|f| f.as_ref().is_some_and(|f| f.uses_any(&addrs) || f.uses_fetch(bc)));
    crate::rules::format::Settings {
        line,
        sd,
        error,
        server_addrs,
        unique_id: compile(&f.unique_id),
        unique_id_header: p.unique_id_header.as_deref().map(Box::from),
        captures: capture_spec(p),
        dontlognull: p.dontlognull,
        dontlog_normal: p.dontlog_normal,
        separate_errors: p.log_separate_errors,
        logasap: p.logasap,
        count: Default::default(),
    }
}

fn capture_spec(p: &cfg::Proxy) -> crate::rules::format::CaptureSpec {
    let slot = |s: &cfg::CaptureSlot| (s.header.as_deref().map(|h| h.as_bytes().into()), s.len);
    let cookie = p.captures.iter().find(|c| c.kind == cfg::CaptureKind::Cookie);
    crate::rules::format::CaptureSpec {
        req: p.capture_slots.req.iter().map(slot).collect(),
        res: p.capture_slots.res.iter().map(slot).collect(),
        cookie: cookie.map(|c| (c.name.as_bytes().into(), c.len)),
    }
}

/// Compiles the ACLs and rules every proxy kind has (use_backend rules are added by the caller).
fn proxy_rules(c: &mut crate::rules::Compiler<'_>, p: &cfg::Proxy) -> crate::rules::ProxyRules {
    crate::rules::ProxyRules {
        acls: Default::default(),
        http_request: c.rules(&p.http_request),
        http_response: c.rules(&p.http_response),
        http_after_response: c.rules(&p.http_after_response),
        redirects: c.rules(&p.redirects),
        tcp_connection: c.tcp_rules(&p.tcp_request_connection),
        tcp_session: c.tcp_rules(&p.tcp_request_session),
        expect_proxy: p.expect_proxy.iter().map(|cond| c.cond(cond, &p.span)).collect(),
        expect_cip: p.expect_cip.iter().map(|cond| c.cond(cond, &p.span)).collect(),
        tcp_content: c.tcp_rules(&p.tcp_request_content),
        // HAProxy 2.6 deletes odd header names for a FastCGI backend unless told otherwise (a
        // `X_Forwarded_For` would pass for `X-Forwarded-For` once made a CGI parameter).
        restrict_hdr_names: match p.restrict_req_hdr_names {
            0 if p.use_fcgi_app.is_some() => 1,
            3 => 0,
            v => v,
        },
        error_replies: p
            .errors
            .iter()
            .filter_map(|(status, src)| match src {
                cfg::ErrorSource::Reply { reply, span } if renders(reply) => {
                    Some((*status, c.reply(reply, span)))
                }
                _ => None,
            })
            .collect(),
        raw_http: false, // (set once every expression is compiled)
        tcp_response: if p.kind.is_backend() {
            c.tcp_rules(&p.tcp_response_content)
        } else {
            Vec::new()
        },
        stick: if p.kind.is_backend() { c.stick_rules(&p.stick_rules) } else { Vec::new() },
        monitor_fail: p
            .monitor_fail
            .iter()
            .filter_map(|m| c.cond(&Some(m.clone()), &p.span))
            .collect(),
        persist_rules: p
            .persist_rules
            .iter()
            .filter_map(|r| Some((r.force, c.cond(&Some(r.cond.clone()), &p.span)?)))
            .collect(),
        fcgi: Default::default(),
        spoe: c.spoe_engines(),
        use_servers: p
            .use_servers
            .iter()
            .filter_map(|u| {
                let target = match &u.target {
                    cfg::ServerTarget::Name(n) => {
                        crate::rules::UseServer::Fixed(p.servers.iter().position(|s| s.name == *n)?)
                    }
                    cfg::ServerTarget::Dynamic(f) => {
                        crate::rules::UseServer::Dynamic(c.format(f, &u.span))
                    }
                };
                Some((target, c.cond(&Some(u.cond.clone()), &u.span)?))
            })
            .collect(),
        switching: Vec::new(),
        stats: p.stats.as_ref().map(|page| {
            Box::new(crate::rules::StatsRules {
                page: page.clone(),
                admin: page
                    .admin
                    .iter()
                    .filter_map(|a| c.cond(&Some(a.clone()), &p.span))
                    .collect(),
                http_request: page
                    .http_request
                    .iter()
                    .map(|r| (r.action.clone(), c.cond(&r.cond, &p.span)))
                    .collect(),
            })
        }),
    }
}

/// Where the proxy's compression filter sits among a stream's filters, counted as
/// `bwlim::Filter::order` counts (a frontend's from 0, a backend's from 1 << 16): its explicit
/// `filter compression` line, or after its other filters when `compression` settings add it
/// implicitly (HAProxy's `check_implicit_http_comp_flt()`); none without either.
fn comp_filter(p: &cfg::Proxy) -> Option<u32> {
    let base = if p.kind.is_frontend() { 0 } else { 1 << 16 };
    let explicit = p.filters.iter().position(|f| matches!(f, cfg::cache::Filter::Compression(_)));
    let at = explicit.or(p.compression.is_some().then_some(p.filters.len()))?;
    Some(base + at as u32)
}

/// The HTTP settings of a `mode http` proxy; error message files are read here.
fn http_proxy(
    p: &cfg::Proxy,
    config: &cfg::Config,
    common: &crate::log::syslog::Common,
) -> Result<HttpProxy, Vec<String>> {
    let mut errors = Vec::new();
    let mut replaced = HashMap::new();
    for (status, src) in &p.errors {
        match error_message(src, &config.http_errors) {
            Ok(Some(b)) => {
                replaced.insert(*status, Arc::<[u8]>::from(b));
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    let addr = |f: &Option<cfg::ForwardFor>| {
        f.as_ref().map(|f| AddrHeader {
            header: f.header.clone(),
            except: f.except,
            if_none: f.if_none,
        })
    };
    let g = &config.global;
    // (Its file's faults are reported once, with the global section's: `global_vars`.)
    let case = CaseMap::from_config(&g.h1_case).ok().flatten().map(Arc::new);
    let h = HttpProxy {
        conn_mode: match p.http_conn_mode {
            cfg::HttpConnMode::KeepAlive => ConnMode::KeepAlive,
            cfg::HttpConnMode::ServerClose => ConnMode::ServerClose,
            cfg::HttpConnMode::Close => ConnMode::Close,
        },
        reuse: match p.http_reuse {
            cfg::HttpReuse::Never => Reuse::Never,
            cfg::HttpReuse::Safe => Reuse::Safe,
            cfg::HttpReuse::Aggressive => Reuse::Aggressive,
            cfg::HttpReuse::Always => Reuse::Always,
        },
        forwardfor: addr(&p.forwardfor),
        originalto: addr(&p.originalto),
        send_name_header: p.send_name_header.as_deref().map(Into::into),
        log_uri_max: g.tune_http_logurilen.saturating_sub(1) as usize,
        messages: Messages::new(replaced),
        limits: fulcrum_http::Limits {
            // HAProxy keeps `tune.maxrewrite` (1024, at most half the buffer) free for header
            // rewrites: a head must fit in the rest.
            max_head: g.tune_bufsize - (g.tune_bufsize / 2).min(g.tune_maxrewrite),
            max_headers: g.tune_http_maxhdr as usize,
        },
        bufsize: g.tune_bufsize,
        waits_body: p.http_buffer_request || p.use_fcgi_app.is_some(),
        monitor_uri: p.monitor_uri.clone(),
        cookie: p.cookie.clone(),
        hash_key: match &p.balance {
            cfg::Balance::Uri { depth, len, whole, path_only } => {
                HashKey::Uri { depth: *depth, len: *len, whole: *whole, path_only: *path_only }
            }
            cfg::Balance::UrlParam { name } => HashKey::UrlParam(name.clone()),
            cfg::Balance::Hdr { name, use_domain_only } => {
                HashKey::Hdr { name: name.clone(), domain_only: *use_domain_only }
            }
            cfg::Balance::RdpCookie { .. } => HashKey::Nothing,
            _ => HashKey::Source,
        },
        ignore_probes: p.http_ignore_probes,
        accept_invalid_req: p.accept_invalid_req,
        accept_invalid_resp: p.accept_invalid_resp,
        any_method_payload: g.tune.h1_any_method_payload,
        disable_h2_upgrade: p.disable_h2_upgrade,
        case_client: case.clone().filter(|_| p.h1_case_client),
        case_server: case.filter(|_| p.h1_case_server),
        retry_on: retry_on(&p.retry_on),
        compression: p.compression.clone().map(Arc::new),
        comp_filter: comp_filter(p),
        comp_level: g.tune_comp_maxlevel,
        comp_window: g.tune.zlib_windowsize,
        traces: p
            .filters
            .iter()
            .filter_map(|f| match f {
                cfg::cache::Filter::Trace(t) => Some(Arc::new(t.clone())),
                _ => None,
            })
            .collect(),
        fcgi: apps::fcgi_app(p, config, common, &mut errors),
    };
    if errors.is_empty() {
        Ok(h)
    } else {
        Err(errors)
    }
}

fn retry_on(list: &[cfg::RetryOn]) -> crate::http_settings::RetryOn {
    let mut r = crate::http_settings::RetryOn::default();
    let expanded: Vec<cfg::RetryOn> = list.iter().flat_map(|x| x.expand()).collect();
    for x in expanded {
        match x {
            cfg::RetryOn::ConnFailure => r.conn_failure = true,
            cfg::RetryOn::EmptyResponse => r.empty_response = true,
            cfg::RetryOn::JunkResponse => r.junk_response = true,
            cfg::RetryOn::ResponseTimeout => r.response_timeout = true,
            cfg::RetryOn::Status(code) => {
                if let Some(i) =
                    crate::http_settings::RETRY_STATUSES.iter().position(|&c| c == code)
                {
                    r.statuses[i] = true;
                }
            }
            _ => {}
        }
    }
    r
}

fn frontend(
    p: &cfg::Proxy,
    backend: Option<Arc<Backend>>,
    g: &cfg::GlobalTls,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Frontend {
    let ids = cfg::bind::listener_ids(&p.binds);
    let binds = p
        .binds
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let tls = if b.tls.ssl {
                // HAProxy's words: "'bind :443' in section 'frontend'".
                let who = format!(
                    "parsing [{}] : 'bind {}' in section '{}'",
                    b.span,
                    b.written,
                    p.kind.keyword()
                );
                crate::tls::server_config(&b.tls, g, &who, warnings)
                    .map_err(|mut e| errors.append(&mut e))
                    .ok()
            } else {
                None
            };
            Arc::new(Bind {
                tls,
                accept_proxy: b.accept_proxy,
                netscaler_cip: b.netscaler_cip,
                proto: b.proto,
                name: b.name.clone(),
                number: i as u32 + 1,
                so_id: ids[i].first().copied().unwrap_or(i as u32 + 1),
                threads: b.threads.clone(),
                counters: p.socket_stats.then(Arc::default),
                bound: Default::default(),
                origin: format!(
                    "Binding [{}] for {} {}",
                    b.span,
                    if p.kind == cfg::ProxyKind::Listen { "proxy" } else { "frontend" },
                    p.name
                ),
                addrs: b.addrs.clone(),
                backlog: b.backlog.or(p.backlog),
                only_v6: b.only_v6(),
                sockopts: b.sockopts.clone(),
                limit: Arc::new(Limit::new(b.maxconn.unwrap_or(0))),
                maxconn: b.maxconn.unwrap_or(0),
                unix: b.unix.clone(),
            })
        })
        .collect();
    Frontend {
        name: p.name.clone(),
        id: 0,
        binds,
        limit: Arc::new(Limit::new(p.maxconn.unwrap_or(0))),
        maxconn: p.maxconn.unwrap_or(0),
        timeouts: timeouts(p),
        backend,
        counters: Default::default(),
        http: None,
        upgrade: None,
        rules: Default::default(),
        use_backends: Vec::new(),
        backends: Default::default(),
        proc_vars: Default::default(),
        needs_dst: false,
        needs_payload: false,
        inspect_delay: None,
        client_tcpka: p.cli_tcpka,
        logger: None,
        log: Default::default(),
        disabled: Default::default(),
        sess_limit: crate::frontend::rate::RateLimit::new(p.rate_limit_sessions.unwrap_or(0)),
        nolinger: p.nolinger,
        independent_streams: p.independent_streams,
        idle_close_on_response: p.idle_close_on_response,
        enabled: Default::default(),
        retired: Default::default(),
        invalid_req: Default::default(),
    }
}

fn backend(
    p: &cfg::Proxy,
    config: &cfg::Config,
    maps: &mut HashMap<(std::path::PathBuf, u8), Arc<crate::rules::maps::LiveMap>>,
    (tables, userlists, caches, common): (
        &crate::stick::Tables,
        &crate::auth::Userlists,
        &crate::cache::Caches,
        &crate::log::syslog::Common,
    ),
    warnings: &mut Vec<String>,
) -> Result<Backend, Vec<String>> {
    let mut errors = Vec::new();
    let servers = servers::build(p, &config.global.tls, &mut errors, warnings);
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
        cfg::Balance::Uri { .. }
        | cfg::Balance::UrlParam { .. }
        | cfg::Balance::Hdr { .. }
        | cfg::Balance::RdpCookie { .. } => (Algorithm::Hash, true),
    };
    let hash = HashConfig {
        consistent: p.hash_type.method == cfg::HashMethod::Consistent,
        function: p.hash_type.function,
        avalanche: p.hash_type.avalanche,
    };
    let algo = match p.balance {
        cfg::Balance::RoundRobin => "roundrobin",
        cfg::Balance::StaticRr => "static-rr",
        cfg::Balance::LeastConn => "leastconn",
        cfg::Balance::First => "first",
        cfg::Balance::Source => "source",
        cfg::Balance::Random { .. } => "random",
        cfg::Balance::Uri { .. } => "uri",
        cfg::Balance::UrlParam { .. } => "url_param",
        cfg::Balance::Hdr { .. } => "hdr",
        cfg::Balance::RdpCookie { .. } => "rdp-cookie",
    };
    let mut balancer = Balancer::new(algorithm, hash);
    balancer.allbackups = p.allbackups;
    let mut be = Backend::new(
        p.name.clone(),
        servers,
        balancer,
        deterministic,
        p.retries,
        p.redispatch,
        p.abortonclose,
        timeouts(p),
    );
    let messages = |r: &cfg::Reply, at: &cfg::Span| reply_message(r, &config.http_errors, at);
    let mut c = crate::rules::Compiler::new(p, maps, &messages, tables, userlists);
    c.caches = Some(caches);
    c.logs = Some(common);
    let mut rules = proxy_rules(&mut c, p);
    rules.fcgi = c.fcgi_rules(config);
    errors.append(&mut c.errors);
    be.uses_dst = c.uses_dst || p.originalto.is_some();
    rules.raw_http = c.uses_http_req && p.mode == cfg::Mode::Tcp;
    be.algo = algo;
    be.cookie_name = p.cookie.as_ref().map(|c| c.name.clone());
    be.fullconn = p.fullconn;
    be.log_health_checks = p.log_health_checks;
    be.is_listen = p.kind == cfg::ProxyKind::Listen;
    be.health_check = Arc::new(p.health_check.clone());
    be.external_check = apps::external_check(p, &config.global);
    match apps::mail_alerts(p, config) {
        Ok(m) => be.mail = m,
        Err(e) => errors.push(e),
    }
    match crate::rules::check::compile(&mut c, &p.health_check.steps, &p.span) {
        Ok(s) => be.check_samples = Arc::new(s),
        Err(e) => errors.push(format!("[{}] : backend '{}' : health check : {e}", p.span, p.name)),
    }
    errors.append(&mut c.errors);
    be.server_bufs = config.global.server_bufs;
    be.server_tcpka = p.srv_tcpka;
    be.nolinger = p.nolinger;
    be.independent_streams = p.independent_streams;
    be.persist = p.persist;
    if let cfg::Balance::RdpCookie { name } = &p.balance {
        be.rdp_balance = Some(name.as_str().into());
    }
    be.rdp_persist = p.persist_rdp.as_deref().map(Into::into);
    be.prefer_last_server = p.prefer_last_server;
    be.max_ka_queue = p.max_ka_queue;
    be.source = p.source.clone().map(|c| Arc::new(crate::server::source::SourceBind::new(c)));
    be.disabled = p.disabled;
    be.inspect_delay = p.inspect_delay;
    // (0 waits for nothing, as none: HAProxy's `tcp-response` rules then decide at once.)
    be.response_inspect_delay = p.response_inspect_delay.filter(|d| !d.is_zero());
    rules.acls = c.finish();
    be.rules = rules;
    if p.mode == cfg::Mode::Http {
        match http_proxy(p, config, common) {
            Ok(h) => be.http = Some(Box::new(h)),
            Err(mut e) => errors.append(&mut e),
        }
    } else {
        error_files_readable(p, config, &mut errors);
    }
    if errors.is_empty() {
        Ok(be)
    } else {
        Err(errors)
    }
}

/// A proxy's timeouts as the run time reads them: the configuration's, with HAProxy's
/// defaults applied (`timeout tarpit` falls back on `timeout connect` in proxies that are
/// backends; a frontend answers its tarpit at once unless `timeout tarpit` is set).
fn timeouts(p: &cfg::Proxy) -> cfg::Timeouts {
    let mut t = p.timeouts.clone();
    if p.kind != cfg::ProxyKind::Frontend {
        t.tarpit = t.tarpit.or(t.connect);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_and_servers_get_haproxy_ids_and_are_found_by_name_and_id() {
        let text = "defaults\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
                    frontend fe\n bind 127.0.0.1:1\n default_backend b\n\
                    backend a\n id 2\n server s1 127.0.0.1:1\n\
                    backend b\n server s1 127.0.0.1:1 id 1\n server s2 127.0.0.1:2\n server s3 127.0.0.1:3 id 3\n";
        let src = cfg::Source { name: "t.cfg".into(), text: text.into() };
        let loaded = cfg::load(&[src], &|_| None).expect("loads");
        let plan = build(&loaded.config, Previous::default()).expect("plan builds");
        // As HAProxy 2.6 numbers them (checked with `show stat`): fe takes 1, a forces 2,
        // the counter is then at 3, so b takes 3.
        assert_eq!(plan.proxies.frontend("fe").map(|f| f.id), Some(1));
        assert_eq!(plan.proxies.backend("a").map(|b| b.id), Some(2));
        let b = plan.proxies.backend_by_id(3).expect("b by id");
        assert_eq!(b.name, "b");
        let ids: Vec<u32> = b.servers.iter().map(|s| s.id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert!(plan.proxies.frontend_by_id(1).is_some() && plan.proxies.backend("nope").is_none());
    }

    #[test]
    fn the_id_counter_moves_past_forced_ids_as_haproxy_s() {
        // HAProxy 2.6 with a GLOBAL proxy first (one step): fe 3, a forced 2, b 5.
        let ids = auto_ids([None, None, Some(2), None].into_iter());
        assert_eq!(ids, [1, 3, 2, 5]);
    }
}
