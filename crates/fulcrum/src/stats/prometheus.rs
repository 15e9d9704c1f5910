//! `http-request use-service prometheus-exporter`: the metrics of HAProxy 2.6's exporter (names,
//! labels, types and help texts from `prometheus_metrics`) in the text exposition format, so
//! dashboards and alerts made for HAProxy work unchanged. Values come from the same rows as
//! `show stat` and `show info`; query parameters
//! `scope=global|frontend|listener|backend|server|*` (repeatable) and `no-maint` select what is
//! shown. Listeners are the bind lines of frontends with `option socket-stats`.

use std::fmt::Write as _;

use super::prometheus_metrics::METRICS;
use super::{fields, rows, ObjType, Row, Val};
use crate::shared::Shared;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The process (`show info`).
    P,
    F,
    /// Listeners: the frontend families HAProxy's exporter also gives per listener.
    L,
    B,
    S,
}

/// The frontend families HAProxy 2.6's exporter gives for listeners too, in its order.
const LISTENER_FAMILIES: [&str; 14] = [
    "current_sessions",
    "max_sessions",
    "limit_sessions",
    "sessions_total",
    "bytes_in_total",
    "bytes_out_total",
    "requests_denied_total",
    "responses_denied_total",
    "request_errors_total",
    "status",
    "denied_connections_total",
    "denied_sessions_total",
    "failed_header_rewriting_total",
    "internal_errors_total",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    G,
    C,
}

/// One metric family.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub scope: Scope,
    pub name: &'static str,
    pub kind: Kind,
    pub source: &'static str,
    pub help: &'static str,
}

/// The check statuses HAProxy's exporter labels (`state="L4OK"`...), in its order.
const CHECK_STATES: [&str; 16] = [
    "HANA", "SOCKERR", "L4OK", "L4TOUT", "L4CON", "L6OK", "L6TOUT", "L6RSP", "L7TOUT", "L7RSP",
    "L7OK", "L7OKC", "L7STS", "PROCERR", "PROCTOUT", "PROCOK",
];
const SERVER_STATES: [&str; 5] = ["DOWN", "UP", "MAINT", "DRAIN", "NOLB"];
const CODES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];
const HRSP: [&str; 6] = ["hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other"];

/// The fields HAProxy's exporter shows for HTTP proxies only.
const HTTP_ONLY: [&str; 9] = [
    "req_rate_max",
    "req_tot",
    "intercepted",
    "cache_lookups",
    "cache_hits",
    "comp_in",
    "comp_out",
    "comp_byp",
    "comp_rsp",
];

/// What the query asked for.
struct Query {
    process: bool,
    frontend: bool,
    listener: bool,
    backend: bool,
    server: bool,
    no_maint: bool,
}

fn query(target: &[u8]) -> Query {
    let q = target.iter().position(|&c| c == b'?').map_or(&[][..], |i| &target[i + 1..]);
    let q = String::from_utf8_lossy(q);
    let mut scopes = Vec::new();
    let mut no_maint = false;
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "scope" => scopes.push(v.to_string()),
            "no-maint" => no_maint = true,
            _ => {}
        }
    }
    let all = scopes.is_empty() || scopes.iter().any(|s| s == "*");
    let has = |s: &str| all || scopes.iter().any(|x| x == s);
    Query {
        process: has("global"),
        frontend: has("frontend"),
        listener: has("listener"),
        backend: has("backend"),
        server: has("server"),
        no_maint,
    }
}

/// A value as the exposition format writes it: integers as they are, empty fields `NaN`.
fn number(out: &mut String, v: Option<&Val>, millis_to_secs: bool) {
    match v {
        None => out.push_str("NaN"),
        Some(Val::Str(s)) => out.push_str(if s.parse::<f64>().is_ok() { s } else { "NaN" }),
        Some(v) if millis_to_secs => {
            let ms = match v {
                Val::U32(n) => f64::from(*n),
                Val::S32(n) => f64::from(*n),
                Val::U64(n) => *n as f64,
                Val::Str(_) => 0.0,
            };
            let _ = write!(out, "{:.6}", ms / 1000.0);
        }
        Some(v) => {
            let _ = write!(out, "{v}");
        }
    }
}

/// A row's labels (`proxy="be",server="s1"`), escaped as the format wants; made once per row.
fn labels(r: &Row) -> String {
    let name = |f: &str| match r.get(f) {
        Some(Val::Str(s)) => s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"),
        _ => String::new(),
    };
    let mut out = format!("proxy=\"{}\"", name("pxname"));
    match r.obj {
        ObjType::Server => {
            let _ = write!(out, ",server=\"{}\"", name("svname"));
        }
        ObjType::Listener => {
            let _ = write!(out, ",listener=\"{}\"", name("svname"));
        }
        _ => {}
    }
    out
}

fn str_of<'a>(r: &'a Row, f: &str) -> &'a str {
    match r.get(f) {
        Some(Val::Str(s)) => s,
        _ => "",
    }
}

/// A server's state label (HAProxy's exporter folds the stats' words into five).
fn server_state(status: &str) -> &'static str {
    if status.starts_with("MAINT") {
        "MAINT"
    } else if status.starts_with("DRAIN") {
        "DRAIN"
    } else if status.starts_with("NOLB") {
        "NOLB"
    } else if status.starts_with("UP") || status == "no check" {
        "UP"
    } else {
        "DOWN"
    }
}

/// A row with its labels.
type Labelled<'a> = (&'a Row, String);

/// One proxy-level family over `rows`.
fn family(
    out: &mut String,
    m: &Metric,
    rows: &[Labelled<'_>],
    http: &dyn Fn(&Row) -> bool,
    servers: &[Labelled<'_>],
) {
    let prefix = match m.scope {
        Scope::F => "frontend_",
        Scope::L => "listener_",
        Scope::B => "backend_",
        _ => "server_",
    };
    let full = |out: &mut String, l: &str| {
        out.push_str("haproxy_");
        out.push_str(prefix);
        out.push_str(m.name);
        out.push('{');
        out.push_str(l);
    };
    let field = if m.source.starts_with('!') { None } else { fields::position(m.source) };
    let secs = m.name.ends_with("_seconds")
        && matches!(m.source, "qtime" | "ctime" | "rtime" | "ttime" | "check_duration")
        || m.source.ends_with("time_max");
    if m.source == "!hrsp" {
        // Code by code, each for every proxy (HAProxy's order).
        for (code, f) in CODES.iter().zip(HRSP) {
            for (r, l) in rows.iter().filter(|(r, _)| http(r)) {
                full(out, l);
                let _ = write!(out, ",code=\"{code}\"}} ");
                number(out, r.get(f), false);
                out.push('\n');
            }
        }
        return;
    }
    for (r, l) in rows {
        let r: &Row = r;
        match m.source {
            "!status" => {
                let states: &[&str] = match r.obj {
                    ObjType::Server => &SERVER_STATES,
                    ObjType::Listener => &["WAITING", "OPEN", "FULL"],
                    _ => &["DOWN", "UP"],
                };
                let cur = match r.obj {
                    ObjType::Listener => str_of(r, "status"),
                    ObjType::Server => server_state(str_of(r, "status")),
                    ObjType::Frontend if str_of(r, "status") == "STOP" => "DOWN",
                    ObjType::Backend if str_of(r, "status") == "DOWN" => "DOWN",
                    _ => "UP",
                };
                for s in states {
                    full(out, l);
                    let _ = writeln!(out, ",state=\"{s}\"}} {}", u8::from(*s == cur));
                }
            }
            "!check_status" => {
                let Some(cur) = r.get("check_status").map(|_| str_of(r, "check_status")) else {
                    continue;
                };
                for s in CHECK_STATES {
                    full(out, l);
                    let _ = writeln!(out, ",state=\"{s}\"}} {}", u8::from(s == cur));
                }
            }
            "!agg_server_status" | "!agg_server_check_status" => {
                let mine: Vec<&str> = servers
                    .iter()
                    .filter(|(s, _)| s.iid == r.iid)
                    .map(|(s, _)| server_state(str_of(s, "status")))
                    .collect();
                for s in SERVER_STATES {
                    full(out, l);
                    let _ = writeln!(
                        out,
                        ",state=\"{s}\"}} {}",
                        mine.iter().filter(|m| **m == s).count()
                    );
                }
            }
            "!agg_check_status" => {
                let mine: Vec<&str> = servers
                    .iter()
                    .filter(|(s, _)| s.iid == r.iid && s.get("check_status").is_some())
                    .map(|(s, _)| str_of(s, "check_status"))
                    .collect();
                for s in CHECK_STATES {
                    full(out, l);
                    let _ = writeln!(
                        out,
                        ",state=\"{s}\"}} {}",
                        mine.iter().filter(|m| **m == s).count()
                    );
                }
            }
            "check_code" | "check_duration" => {
                // Only for servers whose health check runs.
                if r.get("check_status").is_none() {
                    continue;
                }
                full(out, l);
                out.push_str("} ");
                match r.get(m.source) {
                    Some(v) => number(out, Some(v), secs),
                    None => out.push('0'),
                }
                out.push('\n');
            }
            f => {
                if HTTP_ONLY.contains(&f) && !http(r) {
                    continue;
                }
                full(out, l);
                out.push_str("} ");
                number(out, field.and_then(|i| r.fields[i].as_ref()).map(|x| &x.val), secs);
                out.push('\n');
            }
        }
    }
}

fn header(out: &mut String, m: &Metric, prefix: &str) {
    let kind = if m.kind == Kind::C { "counter" } else { "gauge" };
    let _ = writeln!(out, "# HELP haproxy_{prefix}_{} {}", m.name, m.help);
    let _ = writeln!(out, "# TYPE haproxy_{prefix}_{} {kind}", m.name);
}

/// The metrics page.
pub fn render(shared: &Shared, target: &[u8], out: &mut String) {
    let q = query(target);
    if q.process {
        let info = super::info::lines(&shared.process, shared);
        for m in METRICS.iter().filter(|m| m.scope == Scope::P) {
            header(out, m, "process");
            let _ = write!(out, "haproxy_process_{}", m.name);
            match m.source {
                "!build_info" => {
                    let _ = writeln!(out, "{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
                }
                src => {
                    out.push(' ');
                    let v = info.iter().find(|l| l.name == src).map(|l| &l.val);
                    match v {
                        Some(v) => number(out, Some(v), false),
                        None => out.push('0'),
                    }
                    out.push('\n');
                }
            }
        }
    }
    let scope = rows::Scope {
        global_maxconn: shared.global_limit.max(),
        frontends: &shared.proxies.frontends,
        legends: true,
    };
    let all = rows::all(&scope, &shared.proxies.backends, |_, _| true);
    let http_fe: std::collections::HashMap<u32, bool> =
        shared.proxies.frontends.iter().map(|f| (f.id, f.http.is_some())).collect();
    let http_be: std::collections::HashMap<u32, bool> =
        shared.proxies.backends.iter().map(|b| (b.id, b.http.is_some())).collect();
    let pick = |t: ObjType| -> Vec<Labelled<'_>> {
        all.iter().filter(|r| r.obj == t).map(|r| (r, labels(r))).collect()
    };
    let (fes, bes) = (pick(ObjType::Frontend), pick(ObjType::Backend));
    let lis = pick(ObjType::Listener);
    let mut svs = pick(ObjType::Server);
    if q.no_maint {
        svs.retain(|(r, _)| server_state(str_of(r, "status")) != "MAINT");
    }
    let is_fe_http = |r: &Row| http_fe.get(&r.iid).copied().unwrap_or(false);
    let is_be_http = |r: &Row| http_be.get(&r.iid).copied().unwrap_or(false);
    for (on, sc, rows, prefix) in [
        (q.frontend, Scope::F, &fes, "frontend"),
        (q.listener, Scope::L, &lis, "listener"),
        (q.backend, Scope::B, &bes, "backend"),
        (q.server, Scope::S, &svs, "server"),
    ] {
        // (HAProxy's exporter writes a family's header with its first sample: none without.)
        if !on || rows.is_empty() {
            continue;
        }
        let http: &dyn Fn(&Row) -> bool = if sc == Scope::F { &is_fe_http } else { &is_be_http };
        let listener = |m: &&Metric| m.scope == Scope::F && LISTENER_FAMILIES.contains(&m.name);
        let families: Vec<Metric> = match sc {
            Scope::L => {
                METRICS.iter().filter(listener).map(|m| Metric { scope: sc, ..*m }).collect()
            }
            _ => METRICS.iter().filter(|m| m.scope == sc).copied().collect(),
        };
        for m in &families {
            header(out, m, prefix);
            family(out, m, rows, http, &svs);
        }
    }
}

/// The answer, rendered by the statistics thread (`offload`) so the worker keeps serving.
pub async fn offloaded(target: &[u8]) -> Vec<u8> {
    let target = target.to_vec();
    super::offload::render(move || match crate::shared::shared() {
        Some(shared) => answer(&shared, &target),
        None => fulcrum_http::reply::raw(503, None, &[], b""),
    })
    .await
}

/// The whole HTTP answer.
pub fn answer(shared: &Shared, target: &[u8]) -> Vec<u8> {
    let mut body = String::with_capacity(64 * 1024);
    render(shared, target, &mut body);
    fulcrum_http::reply::raw(
        200,
        Some("text/plain; version=0.0.4"),
        &[(b"Cache-Control", b"no-cache")],
        body.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_selects_scopes() {
        let q = query(b"/metrics");
        assert!(q.process && q.frontend && q.backend && q.server && !q.no_maint);
        let q = query(b"/metrics?scope=backend&scope=server&no-maint");
        assert!(!q.process && !q.frontend && q.backend && q.server && q.no_maint);
        let q = query(b"/metrics?scope=*");
        assert!(q.process && q.server);
        let q = query(b"/metrics?scope=");
        assert!(!q.process && !q.frontend && !q.backend && !q.server);
    }

    #[test]
    fn the_table_has_haproxy_2_6_s_187_families_with_unique_names() {
        assert_eq!(METRICS.len(), 187);
        let mut names: Vec<_> = METRICS.iter().map(|m| (m.scope as u8, m.name)).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 187);
    }

    #[test]
    fn server_states_fold_into_five() {
        assert_eq!(server_state("UP 1/3"), "UP");
        assert_eq!(server_state("no check"), "UP");
        assert_eq!(server_state("MAINT (resolution)"), "MAINT");
        assert_eq!(server_state("DOWN 1/2"), "DOWN");
        assert_eq!(server_state("NOLB"), "NOLB");
    }
}
