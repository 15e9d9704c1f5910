//! `show info`: the process's figures, with HAProxy 2.6's names, positions and tags, so the
//! scripts and exporters that read them by name find them.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::render::InfoLine;
use super::Val;
use crate::counters::Counters;
use crate::shared::{Process, Shared};

fn u32v(v: impl TryInto<u32>) -> Val {
    Val::U32(v.try_into().unwrap_or(u32::MAX))
}

/// The lines of `show info`, in HAProxy's order.
pub fn lines(p: &Process, shared: &Shared) -> Vec<InfoLine> {
    let up = p.started_at.elapsed().as_secs();
    let (d, h, m, s) = (up / 86400, up / 3600 % 24, up / 60 % 60, up % 60);
    let sum = |f: fn(&crate::counters::Counters) -> u64| -> u64 {
        shared.proxies.frontends.iter().map(|fe| f(&fe.counters)).sum()
    };
    let conns = sum(|c| Counters::get(&c.conns));
    let reqs = sum(|c| Counters::get(&c.requests));
    let bytes_out = sum(|c| Counters::get(&c.bytes_out));
    let conn_rate: u64 = shared
        .proxies
        .frontends
        .iter()
        .map(|f| f.counters.conn_rate.read(Counters::get(&f.counters.conns)))
        .sum();
    let sess_rate: u64 = shared
        .proxies
        .frontends
        .iter()
        .map(|f| f.counters.sess_rate.read(Counters::get(&f.counters.sessions)))
        .sum();
    let max_conn_rate = sum(|c| Counters::get(&c.max_conn_rate));
    let max_sess_rate = sum(|c| Counters::get(&c.max_sess_rate));
    let version = env!("CARGO_PKG_VERSION");
    // TLS: as HAProxy, the share of client handshakes that resumed a session over the last
    // second is 100 less the new keys' share of the connections accepted on TLS binds.
    let tls = crate::counters::tls();
    let get = Counters::get;
    let ssl_rate = tls.rate.read(get(&tls.fe_accepts));
    let fe_key_rate = tls.fe_key_rate.read(get(&tls.fe_keys));
    let be_key_rate = tls.be_key_rate.read(get(&tls.be_keys));
    let ssl_reuse = match fe_key_rate < ssl_rate {
        true => 100 - 100 * fe_key_rate / ssl_rate,
        false => 0,
    };
    let stopping = shared.stopping.load(Ordering::Relaxed);
    let (comp_in, comp_out) = shared.comp_rate.rates(crate::clock::now().into_std());
    let mut v = vec![
        (0, "Name", "POS", Val::Str("Fulcrum".into())),
        (1, "Version", "POS", Val::Str(version.into())),
        (2, "Release_date", "POS", Val::Str(String::new())),
        (3, "Nbthread", "CGS", u32v(p.nbthread)),
        (4, "Nbproc", "CGS", Val::U32(1)),
        (5, "Process_num", "KGP", Val::U32(1)),
        (6, "Pid", "SGP", Val::U32(std::process::id())),
        (7, "Uptime", "MDP", Val::Str(format!("{d}d {h}h{m:02}m{s:02}s"))),
        (8, "Uptime_sec", "MDP", u32v(up)),
        (9, "Memmax_MB", "CLP", Val::U32(0)),
        (10, "PoolAlloc_MB", "MGP", Val::U32(0)),
        (11, "PoolUsed_MB", "MGP", Val::U32(0)),
        (12, "PoolFailed", "MCP", Val::U32(0)),
        (13, "Ulimit-n", "CLP", u32v(p.ulimit_n)),
        (14, "Maxsock", "CLP", u32v(p.ulimit_n)),
        (15, "Maxconn", "CLP", u32v(shared.global_limit.max())),
        (16, "Hard_maxconn", "CLP", u32v(p.hard_maxconn)),
        (17, "CurrConns", "MGP", u32v(shared.global_limit.current())),
        (18, "CumConns", "MCP", u32v(conns)),
        (19, "CumReq", "MCP", u32v(reqs)),
        (20, "MaxSslConns", "MMP", u32v(get(&tls.max))),
        (21, "CurrSslConns", "MGP", u32v(get(&tls.cur))),
        (22, "CumSslConns", "MCP", u32v(get(&tls.cum))),
        (23, "Maxpipes", "CLP", Val::U32(0)),
        (24, "PipesUsed", "MGP", Val::U32(0)),
        (25, "PipesFree", "MGP", Val::U32(0)),
        (26, "ConnRate", "MRP", u32v(conn_rate)),
        (27, "ConnRateLimit", "CLP", u32v(shared.conn_rate.max())),
        (28, "MaxConnRate", "MMP", u32v(max_conn_rate)),
        (29, "SessRate", "MRP", u32v(sess_rate)),
        (30, "SessRateLimit", "CLP", u32v(shared.sess_rate.max())),
        (31, "MaxSessRate", "MRP", u32v(max_sess_rate)),
        (32, "SslRate", "MRP", u32v(ssl_rate)),
        (33, "SslRateLimit", "CLP", u32v(shared.ssl_rate.max())),
        (34, "MaxSslRate", "MMP", u32v(get(&tls.max_rate).max(ssl_rate))),
        (35, "SslFrontendKeyRate", "MGP", u32v(fe_key_rate)),
        (36, "SslFrontendMaxKeyRate", "MMP", u32v(get(&tls.max_fe_key_rate).max(fe_key_rate))),
        (37, "SslFrontendSessionReuse_pct", "MGP", u32v(ssl_reuse)),
        (38, "SslBackendKeyRate", "MRP", u32v(be_key_rate)),
        (39, "SslBackendMaxKeyRate", "MMP", u32v(get(&tls.max_be_key_rate).max(be_key_rate))),
        (40, "SslCacheLookups", "MCP", Val::U32(0)),
        (41, "SslCacheMisses", "MCP", Val::U32(0)),
        (42, "CompressBpsIn", "MRP", u32v(comp_in)),
        (43, "CompressBpsOut", "MRP", u32v(comp_out)),
        (44, "CompressBpsRateLim", "CLP", u32v(shared.comp_rate.max())),
        (47, "Tasks", "MGP", u32v(shared.global_limit.current())),
        (48, "Run_queue", "MGP", Val::U32(0)),
        (49, "Idle_pct", "MaP", Val::U32(crate::clock::process_idle_pct())),
        (50, "node", "COS", Val::Str(p.node.clone())),
    ];
    if let Some(desc) = &p.description {
        v.push((51, "description", "COS", Val::Str(desc.clone())));
    }
    v.extend([
        (52, "Stopping", "MGP", Val::U32(u32::from(stopping))),
        (53, "Jobs", "MGP", u32v(shared.global_limit.current() as usize + p.listeners)),
        (54, "Unstoppable Jobs", "MGP", Val::U32(0)),
        (55, "Listeners", "MGP", u32v(p.listeners)),
        (56, "ActivePeers", "MGP", Val::U32(0)),
        (57, "ConnectedPeers", "MGP", Val::U32(0)),
        (58, "DroppedLogs", "MGP", u32v(crate::log::syslog::dropped())),
        (59, "BusyPolling", "MGP", Val::U32(0)),
        (60, "FailedResolutions", "MGP", Val::U32(0)),
        (61, "TotalBytesOut", "MGP", Val::U64(bytes_out)),
        (62, "TotalSplicdedBytesOut", "MGP", Val::U64(0)),
        (63, "BytesOutRate", "MRP", Val::U64(0)),
        (64, "DebugCommandsIssued", "MGP", Val::U32(0)),
        (65, "CumRecvLogs", "MCP", Val::U32(0)),
        (66, "Build info", "POS", Val::Str(version.into())),
        (67, "Memmax_bytes", "CLP", Val::U32(0)),
        (68, "PoolAlloc_bytes", "MGP", Val::U64(0)),
        (69, "PoolUsed_bytes", "MGP", Val::U64(0)),
        (
            70,
            "Start_time_sec",
            "MDP",
            u32v(p.started.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())),
        ),
        (71, "Tainted", "SGP", Val::Str("0".into())),
    ]);
    v.into_iter().map(|(pos, name, tags, val)| InfoLine { pos, name, tags, val }).collect()
}
