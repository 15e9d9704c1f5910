//! The rows of `show stat` and the stats page: one per frontend, backend and server, filled
//! as HAProxy 2.6's `stats_fill_fe_stats`, `stats_fill_be_stats` and `stats_fill_sv_stats`
//! fill them: a field an object does not have stays empty, so the CSV has the same holes.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{fields, ObjType, Row, Val};
use crate::backend::Backend;
use crate::counters::{Counters, CTIME, QTIME, RTIME, TTIME};
use crate::frontend::{Bind, Frontend};
use crate::server::state::Oper;
use crate::server::{Server, Target};

/// What rows need beyond the objects themselves.
pub struct Scope<'a> {
    /// The process `maxconn` (a frontend without its own shows it as its limit).
    pub global_maxconn: u32,
    /// Every frontend (a backend's `slim` is a tenth of those that lead to it).
    pub frontends: &'a [std::sync::Arc<Frontend>],
    /// Addresses and cookies shown (HAProxy's `STAT_SHLGNDS`: the runtime API from the
    /// operator level, the page with `stats show-legends`).
    pub legends: bool,
}

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    Counters::get(c)
}

fn u32v(v: impl TryInto<u32>) -> Val {
    Val::U32(v.try_into().unwrap_or(u32::MAX))
}

fn secs(d: std::time::Duration) -> Val {
    u32v(d.as_secs())
}

/// The modules' fields: TLS on every row (a frontend's handshakes with its clients, a
/// backend's and a server's with the servers), HTTP/2 and HTTP/1 on frontends and backends.
fn modules(r: &mut Row, c: &Counters, proxy: bool) {
    for (i, n) in fields::TLS.zip([&c.ssl_sess, &c.ssl_reused_sess, &c.ssl_failed_handshake]) {
        r.fields[i] = Some(super::Field { tags: *b"MCP", val: Val::U64(get(n)) });
    }
    if !proxy {
        return;
    }
    let h2 = &c.h2;
    for i in fields::H2_H1 {
        let name = fields::NAMES[i];
        let gauge = name.contains("open");
        let val = Val::U64(match name {
            "h2_headers_rcvd" => get(&h2.headers_rcvd),
            "h2_data_rcvd" => get(&h2.data_rcvd),
            "h2_settings_rcvd" => get(&h2.settings_rcvd),
            "h2_rst_stream_rcvd" => get(&h2.rst_stream_rcvd),
            "h2_goaway_rcvd" => get(&h2.goaway_rcvd),
            "h2_detected_conn_protocol_errors" => get(&h2.conn_proto_err),
            "h2_detected_strm_protocol_errors" => get(&h2.strm_proto_err),
            "h2_rst_stream_resp" => get(&h2.rst_stream_resp),
            "h2_goaway_resp" => get(&h2.goaway_resp),
            "h2_open_connections" => get(&h2.open_conns),
            "h2_backend_open_streams" => get(&h2.open_streams),
            "h2_total_connections" => get(&h2.total_conns),
            "h2_backend_total_streams" => get(&h2.total_streams),
            "h1_open_connections" => get(&c.h1_open_conns),
            "h1_total_connections" => get(&c.h1_total_conns),
            // The requests that were not HTTP/2 streams.
            "h1_total_streams" => get(&c.requests).saturating_sub(get(&h2.total_streams)),
            "h1_bytes_in" => get(&c.bytes_in),
            "h1_bytes_out" => get(&c.bytes_out),
            "h1_open_streams" => get(&c.h1_open_streams),
            // (Spliced bytes: Fulcrum never splices.)
            _ => 0,
        });
        r.fields[i] = Some(super::Field { tags: if gauge { *b"MGP" } else { *b"MCP" }, val });
    }
}

/// The cache counters (a mode http proxy's).
fn cache(r: &mut Row, c: &Counters) {
    r.set("cache_lookups", "MCP", Val::U64(get(&c.cache_lookups)));
    r.set("cache_hits", "MCP", Val::U64(get(&c.cache_hits)));
}

/// The compression counters.
fn comp(r: &mut Row, c: &Counters) {
    let fields = [
        ("comp_in", &c.comp_in),
        ("comp_out", &c.comp_out),
        ("comp_byp", &c.comp_byp),
        ("comp_rsp", &c.comp_rsp),
    ];
    for (name, v) in fields {
        r.set(name, "MCP", Val::U64(get(v)));
    }
}

fn hrsp(r: &mut Row, c: &Counters) {
    for (i, name) in ["hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other"]
        .into_iter()
        .enumerate()
    {
        r.set(name, "MCP", Val::U64(get(&c.hrsp[i])));
    }
}

fn times(r: &mut Row, c: &Counters, streams: u64) {
    for (name, i) in [("qtime", QTIME), ("ctime", CTIME), ("rtime", RTIME), ("ttime", TTIME)] {
        r.set(name, "MaP", u32v(c.time_avg(i, streams)));
    }
    for (name, i) in
        [("qtime_max", QTIME), ("ctime_max", CTIME), ("rtime_max", RTIME), ("ttime_max", TTIME)]
    {
        r.set(name, "MMP", u32v(get(&c.times_max[i])));
    }
}

fn lastsess(c: &Counters) -> Val {
    match get(&c.last_sess) {
        0 => Val::S32(-1),
        t => {
            let now = super::epoch_secs();
            Val::S32(now.saturating_sub(t).min(i32::MAX as u64) as i32)
        }
    }
}

/// The frontend's limit as the stats show it: its `maxconn`, else the process's.
pub fn frontend_limit(fe: &Frontend, scope: &Scope<'_>) -> u32 {
    match fe.limit.max() {
        0 => scope.global_maxconn,
        n => n,
    }
}

pub fn frontend(fe: &Frontend, scope: &Scope<'_>) -> Row {
    let c = &fe.counters;
    let mut r = Row::new(ObjType::Frontend, fe.id, 0);
    let http = fe.http.is_some();
    let limit = frontend_limit(fe, scope);
    let cur = fe.limit.current();
    r.set("pxname", "KNS", Val::Str(fe.name.clone()));
    r.set("svname", "KNS", Val::Str("FRONTEND".into()));
    r.set("scur", "MGP", u32v(cur));
    r.set("smax", "MMP", u32v(get(&c.max_sessions)));
    r.set("slim", "CLP", u32v(limit));
    r.set("stot", "MCP", Val::U64(get(&c.sessions)));
    r.set("bin", "MCP", Val::U64(get(&c.bytes_in)));
    r.set("bout", "MCP", Val::U64(get(&c.bytes_out)));
    r.set("dreq", "MCP", Val::U64(get(&c.denied_req)));
    r.set("dresp", "MCP", Val::U64(get(&c.denied_resp)));
    r.set("ereq", "MCP", Val::U64(get(&c.failed_req)));
    let status = if fe.disabled.load(Ordering::Relaxed) {
        "STOP"
    } else if cur >= limit && limit > 0 {
        "FULL"
    } else {
        "OPEN"
    };
    r.set("status", "SGP", Val::Str(status.into()));
    r.set("pid", "KGP", Val::U32(1));
    r.set("iid", "KGS", Val::U32(fe.id));
    r.set("sid", "KGS", Val::U32(0));
    r.set("type", "CGS", Val::U32(0));
    r.set("rate", "MRP", u32v(c.sess_rate.read(get(&c.sessions))));
    r.set("rate_lim", "CLP", Val::U32(fe.sess_limit.max()));
    r.set("rate_max", "MMP", u32v(get(&c.max_sess_rate)));
    if http {
        hrsp(&mut r, c);
    }
    r.set("req_rate", "MRP", u32v(c.req_rate.read(get(&c.requests))));
    r.set("req_rate_max", "MMP", u32v(get(&c.max_req_rate)));
    r.set("req_tot", "MCP", Val::U64(get(&c.requests)));
    comp(&mut r, c);
    r.set("mode", "CGS", Val::Str(if http { "http" } else { "tcp" }.into()));
    r.set("conn_rate", "MRP", u32v(c.conn_rate.read(get(&c.conns))));
    r.set("conn_rate_max", "MMP", u32v(get(&c.max_conn_rate)));
    r.set("conn_tot", "MCP", Val::U64(get(&c.conns)));
    if http {
        r.set("intercepted", "MCP", Val::U64(get(&c.intercepted)));
    }
    r.set("dcon", "MCP", Val::U64(get(&c.denied_conn)));
    r.set("dses", "MCP", Val::U64(get(&c.denied_sess)));
    r.set("wrew", "MCP", Val::U64(get(&c.failed_rewrites)));
    if http {
        cache(&mut r, c);
    }
    r.set("eint", "MCP", Val::U64(get(&c.internal_errors)));
    modules(&mut r, c, true);
    r
}

/// The row of bind line `bind` of `fe` with `option socket-stats` (its counters `lc`), as
/// HAProxy 2.6's `stats_fill_li_stats` fills a listener's: named by its `name`, else
/// `sock-<id>`.
pub fn listener(fe: &Frontend, bind: &Bind, lc: &Counters, legends: bool) -> Row {
    let mut r = Row::new(ObjType::Listener, fe.id, bind.so_id);
    let cur = bind.limit.current();
    let name = bind.name.clone().unwrap_or_else(|| format!("sock-{}", bind.so_id));
    r.set("pxname", "KNS", Val::Str(fe.name.clone()));
    r.set("svname", "KNS", Val::Str(name));
    r.set("scur", "MGP", u32v(cur));
    r.set("smax", "MMP", u32v(get(&lc.max_sessions)));
    r.set("slim", "CLP", Val::U32(bind.maxconn));
    // (A listener's total is of connections accepted, HAProxy's `cum_conn`.)
    r.set("stot", "MCP", Val::U64(get(&lc.conns)));
    r.set("bin", "MCP", Val::U64(get(&lc.bytes_in)));
    r.set("bout", "MCP", Val::U64(get(&lc.bytes_out)));
    r.set("dreq", "MCP", Val::U64(get(&lc.denied_req)));
    r.set("dresp", "MCP", Val::U64(get(&lc.denied_resp)));
    r.set("ereq", "MCP", Val::U64(get(&lc.failed_req)));
    // HAProxy's `li_status`: full at its own limit, waiting while its frontend cannot take
    // more (full or disabled).
    let fe_max = fe.limit.max();
    let status = if bind.maxconn > 0 && cur >= bind.maxconn {
        "FULL"
    } else if fe.disabled.load(Ordering::Relaxed) || fe_max > 0 && fe.limit.current() >= fe_max {
        "WAITING"
    } else {
        "OPEN"
    };
    r.set("status", "SGP", Val::Str(status.into()));
    r.set("pid", "KGP", Val::U32(1));
    r.set("iid", "KGS", Val::U32(fe.id));
    r.set("sid", "KGS", Val::U32(bind.so_id));
    r.set("type", "CGS", Val::U32(3));
    if let Some(addr) = bind.bound.get().filter(|_| legends) {
        r.set("addr", "CGS", Val::Str(addr.clone()));
    }
    let http = fe.http.is_some();
    r.set("mode", "CGS", Val::Str(if http { "http" } else { "tcp" }.into()));
    r.set("dcon", "MCP", Val::U64(get(&lc.denied_conn)));
    r.set("dses", "MCP", Val::U64(get(&lc.denied_sess)));
    r.set("wrew", "MCP", Val::U64(get(&lc.failed_rewrites)));
    r.set("eint", "MCP", Val::U64(get(&lc.internal_errors)));
    modules(&mut r, lc, false);
    r
}

/// A backend's `slim`: its `fullconn`, else HAProxy's default: a tenth of the limits of the
/// frontends that lead to it (their default backend, or a `use_backend` naming it), rounded
/// up; 1 when none does (HAProxy 2.6's figures, `show stat` on the same configuration).
pub fn fullconn(be: &Backend, scope: &Scope<'_>) -> u32 {
    use crate::frontend::switching::UseTarget;
    if let Some(n) = be.fullconn {
        return n;
    }
    let is_be = |b: &std::sync::Arc<Backend>| std::ptr::eq(&**b, be);
    let leads = |f: &&std::sync::Arc<Frontend>| {
        f.backend.as_ref().is_some_and(is_be)
            || f.use_backends.iter().any(|(t, _)| matches!(t, UseTarget::Fixed(b) if is_be(b)))
    };
    let sum: u64 =
        scope.frontends.iter().filter(leads).map(|f| u64::from(frontend_limit(f, scope))).sum();
    sum.div_ceil(10).clamp(1, u64::from(u32::MAX)) as u32
}

pub fn backend(be: &Backend, scope: &Scope<'_>) -> Row {
    let now = Instant::now();
    let c = &be.counters;
    let mut r = Row::new(ObjType::Backend, be.id, 0);
    let http = be.http.is_some();
    let updown = *be.updown.lock().unwrap_or_else(|e| e.into_inner());
    let (act, bck) = be.usable_counts();
    // The weights of the servers that take traffic: the active ones, else the backups.
    let use_backups = act == 0;
    let (mut eweight, mut uweight) = (0u64, 0u64);
    for s in be.servers.iter().filter(|s| s.lb_usable() && s.backup == use_backups) {
        eweight += u64::from(s.weight());
        uweight += u64::from(s.state().uweight);
    }
    let streams = get(&c.sessions);
    r.set("pxname", "KNS", Val::Str(be.name.clone()));
    r.set("svname", "KNS", Val::Str("BACKEND".into()));
    r.set("qcur", "MGP", u32v(be.queued()));
    r.set("qmax", "MMP", u32v(get(&c.max_queue)));
    r.set("scur", "MGP", u32v(be.active_sessions()));
    r.set("smax", "MMP", u32v(get(&c.max_sessions).max(u64::from(be.active_sessions()))));
    r.set("slim", "CLP", u32v(fullconn(be, scope)));
    r.set("stot", "MCP", Val::U64(streams));
    r.set("bin", "MCP", Val::U64(get(&c.bytes_in)));
    r.set("bout", "MCP", Val::U64(get(&c.bytes_out)));
    r.set("dreq", "MCP", Val::U64(get(&c.denied_req)));
    r.set("dresp", "MCP", Val::U64(get(&c.denied_resp)));
    r.set("econ", "MCP", Val::U64(get(&c.connect_errors)));
    r.set("eresp", "MCP", Val::U64(get(&c.failed_responses)));
    r.set("wretr", "MCP", Val::U64(get(&c.retries)));
    r.set("wredis", "MCP", Val::U64(get(&c.redispatches)));
    let up = act + bck > 0 || be.servers.is_empty();
    r.set("status", "SGP", Val::Str(if up { "UP" } else { "DOWN" }.into()));
    r.set("weight", "MaP", u32v(eweight.div_ceil(u64::from(crate::server::state::WEIGHT_SCALE))));
    r.set("act", "MGP", u32v(act));
    r.set("bck", "MGP", u32v(bck));
    r.set("chkdown", "MCP", Val::U64(be.down_transitions.load(Ordering::Relaxed)));
    r.set("lastchg", "MAP", secs(now.saturating_duration_since(updown.last_change)));
    if !be.servers.is_empty() {
        r.set("downtime", "MCP", secs(updown.downtime(now)));
    }
    r.set("pid", "KGP", Val::U32(1));
    r.set("iid", "KGS", Val::U32(be.id));
    r.set("sid", "KGS", Val::U32(0));
    let lbtot: u64 = be.servers.iter().map(|s| get(&s.counters.sessions)).sum();
    r.set("lbtot", "MCP", Val::U64(lbtot));
    r.set("type", "CGS", Val::U32(1));
    r.set("rate", "MGP", u32v(be.session_rate()));
    r.set("rate_max", "MGP", u32v(get(&c.max_sess_rate)));
    if http {
        hrsp(&mut r, c);
        r.set("req_tot", "MCP", Val::U64(get(&c.requests)));
    }
    r.set("cli_abrt", "MCP", Val::U64(get(&c.cli_abrt)));
    r.set("srv_abrt", "MCP", Val::U64(get(&c.srv_abrt)));
    comp(&mut r, c);
    r.set("lastsess", "MAP", lastsess(c));
    times(&mut r, c, lbtot);
    if let Some(name) = be.cookie_name.as_ref().filter(|_| scope.legends) {
        r.set("cookie", "CNS", Val::Str(name.clone()));
    }
    r.set("mode", "CGS", Val::Str(if http { "http" } else { "tcp" }.into()));
    if scope.legends {
        r.set("algo", "CGS", Val::Str(be.algo.into()));
    }
    r.set("wrew", "MCP", Val::U64(get(&c.failed_rewrites)));
    r.set("connect", "MCP", Val::U64(get(&c.connects)));
    r.set("reuse", "MCP", Val::U64(get(&c.reuses)));
    if http {
        cache(&mut r, c);
    }
    r.set("eint", "MCP", Val::U64(get(&c.internal_errors)));
    r.set("uweight", "MaP", u32v(uweight));
    // HAProxy 2.6's aggregated states: 0 (UP) while any server is usable.
    let agg = if up { 0 } else { 2 };
    r.set("agg_server_status", "MGP", Val::U32(agg));
    r.set("agg_server_check_status", "MGP", Val::U32(agg));
    r.set("agg_check_status", "MGP", Val::U32(agg));
    modules(&mut r, c, true);
    r
}

/// The `status` text of a server (HAProxy's `srv_hlt_st` and maintenance words).
pub fn server_status(srv: &Server, rec: &crate::server::Record) -> String {
    use crate::server::state::Admin;
    let a = rec.admin;
    if a.has(Admin::RMAINT) {
        return "MAINT (resolution)".into();
    }
    if a.maint() || a.has(Admin::CMAINT) {
        return "MAINT".into();
    }
    let check = rec.check.as_ref().filter(|c| c.enabled);
    let agent = rec.agent.as_ref().filter(|c| c.enabled);
    let counter = |c: &crate::server::state::Check| {
        let (n, d) = c.display();
        format!(" {n}/{d}")
    };
    let going_down = check.is_some_and(|c| c.health < c.rise + c.fall - 1);
    let _ = srv;
    match rec.oper {
        Oper::Running | Oper::Starting => {
            if a.drain() {
                if agent.is_some() {
                    "DRAIN (agent)".into()
                } else if going_down {
                    format!("DRAIN{}", counter(check.expect("checked")))
                } else {
                    "DRAIN".into()
                }
            } else if going_down {
                format!("UP{}", counter(check.expect("checked")))
            } else if check.is_none() {
                "no check".into()
            } else {
                "UP".into()
            }
        }
        Oper::Stopping => match check {
            Some(c) if c.health < c.rise + c.fall - 1 => format!("NOLB{}", counter(c)),
            _ => "NOLB".into(),
        },
        Oper::Stopped => {
            if agent.is_some_and(|a| a.health == 0) {
                "DOWN (agent)".into()
            } else if check.is_some_and(|c| c.health == 0) {
                "DOWN".into()
            } else if let Some(c) = check.or(agent) {
                format!("DOWN{}", counter(c))
            } else {
                "DOWN".into()
            }
        }
    }
}

/// A server's address as the stats show it (`addr`).
pub fn server_addr(srv: &Server) -> Option<String> {
    match &srv.target() {
        Target::Inet(a) => Some(a.to_string()),
        Target::InetRelative { ip, offset } => Some(match offset {
            0 => format!("{ip}:0"),
            o => format!("{ip}:{o:+}"),
        }),
        Target::Unix(p) => Some(format!("unix:{}", p.display())),
        Target::Unresolved => None,
    }
}

pub fn server(be: &Backend, idx: usize, legends: bool) -> Row {
    let now = Instant::now();
    let srv = &be.servers[idx];
    let c = &srv.counters;
    let rec = srv.state().clone();
    let http = be.http.is_some();
    let mut r = Row::new(ObjType::Server, be.id, srv.id);
    let streams = get(&c.sessions);
    r.set("pxname", "KNS", Val::Str(be.name.clone()));
    r.set("svname", "KNS", Val::Str(srv.name.clone()));
    r.set("qcur", "MGP", u32v(be.server_queued(idx)));
    r.set("qmax", "MMP", u32v(get(&c.max_queue)));
    r.set("scur", "MGP", u32v(srv.cur_conns()));
    r.set("smax", "MMP", u32v(get(&c.max_sessions)));
    if rec.maxconn > 0 {
        r.set("slim", "CLP", u32v(rec.maxconn));
    }
    r.set("stot", "MCP", Val::U64(streams));
    r.set("bin", "MCP", Val::U64(get(&c.bytes_in)));
    r.set("bout", "MCP", Val::U64(get(&c.bytes_out)));
    r.set("dresp", "MCP", Val::U64(get(&c.denied_resp)));
    r.set("econ", "MCP", Val::U64(get(&c.connect_errors)));
    r.set("eresp", "MCP", Val::U64(get(&c.failed_responses)));
    r.set("wretr", "MCP", Val::U64(get(&c.retries)));
    r.set("wredis", "MCP", Val::U64(get(&c.redispatches)));
    r.set("status", "SGP", Val::Str(server_status(srv, &rec)));
    if let Some(t) = &srv.track {
        r.set("tracked", "CNS", Val::Str(t.clone()));
    }
    let scale = crate::server::state::WEIGHT_SCALE;
    r.set("weight", "MaP", u32v(rec.eweight.div_ceil(scale)));
    r.set("act", "SGP", Val::U32(u32::from(!srv.backup)));
    r.set("bck", "SGP", Val::U32(u32::from(srv.backup)));
    let check = rec.check.as_ref().filter(|c| c.enabled);
    let agent = rec.agent.as_ref().filter(|c| c.enabled);
    if check.is_some() {
        r.set("chkfail", "MCP", Val::U64(rec.failed_checks));
        r.set("chkdown", "MCP", Val::U64(rec.down_transitions));
    }
    r.set("lastchg", "MAP", secs(now.saturating_duration_since(rec.last_change)));
    if check.is_some() {
        r.set("downtime", "MCP", secs(rec.downtime(now)));
    }
    if srv.maxqueue > 0 {
        r.set("qlimit", "CLP", u32v(srv.maxqueue));
    }
    r.set("pid", "KGP", Val::U32(1));
    r.set("iid", "KGS", Val::U32(be.id));
    r.set("sid", "KGS", Val::U32(srv.id));
    if let Some(t) = rec.throttle(now) {
        r.set("throttle", "MaP", u32v(t));
    }
    r.set("lbtot", "MCP", Val::U64(streams));
    r.set("type", "CGS", Val::U32(2));
    r.set("rate", "MRP", u32v(c.sess_rate.read(streams)));
    r.set("rate_max", "MMP", u32v(get(&c.max_sess_rate)));
    if let Some(k) = check {
        let status = k.status;
        r.set("check_status", "MOP", Val::Str(status.info().into()));
        if status.has_code() {
            if let Some(code) = k.code {
                r.set("check_code", "MOP", Val::U32(code as u32));
            }
        }
        if !matches!(
            status,
            fulcrum_config::CheckStatus::Unknown | fulcrum_config::CheckStatus::Init
        ) {
            let d = k.duration.map_or(0, |d| d.as_millis());
            r.set("check_duration", "MDP", Val::U64(d as u64));
        }
    }
    if http {
        hrsp(&mut r, c);
    }
    if srv.policy.observe.is_some() {
        r.set("hanafail", "MCP", Val::U64(rec.failed_observed));
    }
    if http {
        r.set("req_tot", "MCP", Val::U64(get(&c.requests)));
    }
    r.set("cli_abrt", "MCP", Val::U64(get(&c.cli_abrt)));
    r.set("srv_abrt", "MCP", Val::U64(get(&c.srv_abrt)));
    r.set("lastsess", "MAP", lastsess(c));
    if let Some(k) = check {
        r.set("last_chk", "MOP", Val::Str(k.desc.clone()));
    }
    if let Some(a) = agent {
        r.set("last_agt", "MOP", Val::Str(a.desc.clone()));
    }
    times(&mut r, c, streams);
    if let Some(a) = agent {
        r.set("agent_status", "MOP", Val::Str(a.status.info().into()));
        if a.status.has_code() {
            if let Some(code) = a.code {
                r.set("agent_code", "MOP", Val::U32(code as u32));
            }
        }
        if let Some(d) = a.duration {
            r.set("agent_duration", "MDP", Val::U64(d.as_millis() as u64));
        }
    }
    if let Some(k) = check {
        r.set("check_desc", "MOP", Val::Str(k.status.description().into()));
    }
    if let Some(a) = agent {
        r.set("agent_desc", "MOP", Val::Str(a.status.description().into()));
    }
    if let Some(k) = check {
        r.set("check_rise", "CGS", Val::U32(k.rise));
        r.set("check_fall", "CGS", Val::U32(k.fall));
        r.set("check_health", "CGS", Val::U32(k.health));
    }
    if let Some(a) = agent {
        r.set("agent_rise", "CGS", Val::U32(a.rise));
        r.set("agent_fall", "CGS", Val::U32(a.fall));
        r.set("agent_health", "CGS", Val::U32(a.health));
    }
    if let Some(a) = server_addr(srv).filter(|_| legends) {
        r.set("addr", "CGS", Val::Str(a));
    }
    if let Some(ck) = srv.cookie.as_ref().filter(|_| legends) {
        r.set("cookie", "CNS", Val::Str(ck.clone()));
    }
    r.set("mode", "CGS", Val::Str(if http { "http" } else { "tcp" }.into()));
    r.set("wrew", "MCP", Val::U64(get(&c.failed_rewrites)));
    r.set("connect", "MCP", Val::U64(get(&c.connects)));
    r.set("reuse", "MCP", Val::U64(get(&c.reuses)));
    let idle = srv.idle_conns.load(Ordering::Relaxed);
    r.set("srv_icur", "MGP", u32v(idle));
    if srv.pool_max_conn >= 0 {
        r.set("src_ilim", "MGP", u32v(srv.pool_max_conn));
    }
    r.set("eint", "MCP", Val::U64(get(&c.internal_errors)));
    r.set("idle_conn_cur", "MGP", u32v(idle));
    r.set("safe_conn_cur", "MGP", Val::U32(0));
    r.set("used_conn_cur", "MGP", u32v(srv.cur_conns()));
    r.set("need_conn_est", "MGP", u32v(srv.cur_conns()));
    r.set("uweight", "MaP", u32v(rec.uweight));
    modules(&mut r, c, false);
    r
}

/// Every row in HAProxy's order: each proxy in configuration order (its frontend, then its
/// servers, then its backend), `filter` choosing which proxies and object types.
pub fn all(
    scope: &Scope<'_>,
    backends: &[std::sync::Arc<Backend>],
    mut want: impl FnMut(u32, ObjType) -> bool,
) -> Vec<Row> {
    // Proxies in id order: a `listen` is a frontend and a backend with one id.
    let mut ids: Vec<u32> =
        scope.frontends.iter().map(|f| f.id).chain(backends.iter().map(|b| b.id)).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut rows = Vec::new();
    for id in ids {
        if let Some(fe) = scope.frontends.iter().find(|f| f.id == id) {
            if want(id, ObjType::Frontend) {
                rows.push(frontend(fe, scope));
            }
            if want(id, ObjType::Listener) {
                for b in &fe.binds {
                    if let Some(lc) = &b.counters {
                        rows.push(listener(fe, b, lc, scope.legends));
                    }
                }
            }
        }
        // (A disabled proxy has no row, as in HAProxy.)
        if let Some(be) = backends.iter().find(|b| b.id == id && !b.disabled) {
            if want(id, ObjType::Server) {
                for i in 0..be.servers.len() {
                    rows.push(server(be, i, scope.legends));
                }
            }
            if want(id, ObjType::Backend) {
                rows.push(backend(be, scope));
            }
        }
    }
    rows
}
