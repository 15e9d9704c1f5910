//! The statistics page over HTTP (`stats enable`, `stats uri`...): which requests it
//! answers, their options (`;csv`, `;json`, `;up`, `;no-maint`, `;norefresh`, `;st=`), its
//! Basic authentication (`stats auth`), and the admin form's POSTs (`stats admin`), which
//! change server states through `Backend::change_server` only.
//!
//! The session decides access with the proxy's rules (`stats http-request`, `stats admin`
//! conditions); this module builds the answer. Must not touch: sockets.

use std::sync::Arc;

use fulcrum_config::StatsPage;

use super::{html, render, rows, ObjType, Val};
use crate::backend::status::Change;
use crate::backend::Backend;
use crate::server::state::Oper;
use crate::shared::Shared;

/// The origin-form part of a request target (`/x?y` of `http://host/x?y`).
pub fn origin_form(target: &[u8]) -> &[u8] {
    let lower = |p: &[u8]| target.len() >= p.len() && target[..p.len()].eq_ignore_ascii_case(p);
    let rest = if lower(b"http://") {
        &target[7..]
    } else if lower(b"https://") {
        &target[8..]
    } else {
        return target;
    };
    rest.iter().position(|&c| c == b'/').map_or(b"/", |i| &rest[i..])
}

/// Whether `target` asks for the page at `uri` (a prefix of the path and query, as HAProxy
/// matches it, absolute-form requests included).
pub fn matches(page: &StatsPage, target: &[u8]) -> bool {
    origin_form(target).starts_with(page.uri.as_bytes())
}

/// The options after the page's URI.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub csv: bool,
    pub json: bool,
    pub up: bool,
    pub no_maint: bool,
    pub norefresh: bool,
    pub status: Option<String>,
    /// `scope=<text>`: only the proxies whose name contains it (any case).
    pub scope: Option<String>,
}

pub fn options(page: &StatsPage, target: &[u8]) -> Options {
    let target = origin_form(target);
    let rest = String::from_utf8_lossy(&target[page.uri.len().min(target.len())..]).into_owned();
    // As HAProxy, each option is found anywhere after the URI (`/stats?scope=a;csv`).
    Options {
        scope: url_scope(&rest),
        csv: rest.contains(";csv"),
        json: rest.contains(";json"),
        up: rest.contains(";up"),
        no_maint: rest.contains(";no-maint"),
        norefresh: rest.contains(";norefresh"),
        status: rest.find(";st=").map(|at| rest[at + 4..].chars().take(4).collect()),
    }
}

/// HAProxy's `scope=` anywhere after the URI: up to `;`, `&` or a space, at most 20
/// characters, dropped when one is not a letter, digit, `_`, `.`, `:` or `-`.
fn url_scope(rest: &str) -> Option<String> {
    let at = rest.find("scope=")? + "scope=".len();
    let text: String =
        rest[at..].chars().take_while(|c| !matches!(c, ';' | '&' | ' ')).take(20).collect();
    let valid =
        text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    (valid && !text.is_empty()).then_some(text)
}

/// Whether an `Authorization` header names one of the page's users.
pub fn authorized(page: &StatsPage, authorization: Option<&[u8]>) -> bool {
    let Some((user, pass)) = authorization.and_then(crate::auth::basic) else { return false };
    page.auth.iter().any(|(u, p)| u.as_bytes() == user && p.as_bytes() == pass)
}

/// The 401 asking for credentials, in the page's realm.
pub fn unauthorized(realm: Option<&str>) -> Vec<u8> {
    let realm = realm.unwrap_or("HAProxy Statistics");
    let body = b"<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n";
    let www = format!("Basic realm=\"{realm}\"");
    fulcrum_http::reply::raw(
        401,
        Some("text/html"),
        &[(b"Cache-Control", b"no-cache"), (b"WWW-Authenticate", www.as_bytes())],
        body,
    )
}

/// What the page needs to know of the proxy showing it.
pub struct Here<'a> {
    pub proxy: &'a str,
    pub page: &'a StatsPage,
    pub admin: bool,
}

/// The rows the page shows: the proxies in `stats scope` (all without one).
fn page_rows(shared: &Shared, here: &Here<'_>, o: &Options) -> Vec<super::Row> {
    let scope = rows::Scope {
        global_maxconn: shared.global_limit.max(),
        frontends: &shared.proxies.frontends,
        legends: here.page.show_legends,
    };
    let names: std::collections::HashMap<u32, &str> = shared
        .proxies
        .frontends
        .iter()
        .map(|f| (f.id, f.name.as_str()))
        .chain(shared.proxies.backends.iter().map(|b| (b.id, b.name.as_str())))
        .collect();
    let in_scope = |id: u32| {
        here.page.scope.is_empty()
            || here.page.scope.iter().any(|s| {
                let s = if s == "." { here.proxy } else { s.as_str() };
                names.get(&id).is_some_and(|n| *n == s)
            })
    };
    let wanted = o.scope.as_deref().map(str::to_ascii_lowercase);
    let in_url_scope = |id: u32| {
        wanted.as_ref().is_none_or(|w| {
            names.get(&id).is_some_and(|n| n.to_ascii_lowercase().contains(w.as_str()))
        })
    };
    let mut rows =
        rows::all(&scope, &shared.proxies.backends, |id, _| in_scope(id) && in_url_scope(id));
    if o.no_maint {
        rows.retain(|r| {
            r.obj != ObjType::Server
                || !matches!(r.get("status"), Some(Val::Str(s)) if s.starts_with("MAINT"))
        });
    }
    rows
}

/// [`get`], rendered by the statistics thread (`offload`) so the worker keeps serving.
pub async fn get_offloaded(page: &StatsPage, proxy: &str, admin: bool, target: &[u8]) -> Vec<u8> {
    let (page, proxy, target) = (page.clone(), proxy.to_string(), target.to_vec());
    super::offload::render(move || match crate::shared::shared() {
        Some(shared) => get(&shared, &Here { proxy: &proxy, page: &page, admin }, &target),
        None => fulcrum_http::reply::raw(503, None, &[], b""),
    })
    .await
}

/// Answers a GET (or HEAD) of the page: HTML, CSV or JSON.
pub fn get(shared: &Shared, here: &Here<'_>, target: &[u8]) -> Vec<u8> {
    let target = origin_form(target);
    let o = options(here.page, target);
    let rows = page_rows(shared, here, &o);
    let mut body = String::with_capacity(4096 + rows.len() * 600);
    let ctype;
    if o.csv {
        ctype = "text/plain";
        render::csv_header(&mut body);
        for r in rows.iter().filter(|r| !o.up || server_up(r)) {
            render::csv_row(&mut body, r);
        }
    } else if o.json {
        ctype = "application/json";
        let kept: Vec<_> = rows.into_iter().filter(|r| !o.up || server_up(r)).collect();
        render::json_rows(&mut body, &kept);
    } else {
        ctype = "text/html";
        let p = &shared.process;
        let node = here.page.show_node.as_ref().map(|n| n.as_deref().unwrap_or(&p.node));
        let desc =
            here.page.show_desc.as_ref().and_then(|d| d.as_deref().or(p.description.as_deref()));
        let uri = String::from_utf8_lossy(&target[..here.page.uri.len()]).into_owned();
        let info = html::PageInfo {
            uri: &uri,
            version: (!here.page.hide_version).then_some(env!("CARGO_PKG_VERSION")),
            pid: std::process::id(),
            uptime: p.started_at.elapsed(),
            node,
            description: desc,
            maxconn: shared.global_limit.max(),
            ulimit_n: p.ulimit_n,
            nbthread: p.nbthread,
            cur_conns: shared.global_limit.current(),
            refresh: here.page.refresh,
            admin: here.admin,
            show_legends: here.page.show_legends,
            up_only: o.up,
            norefresh: o.norefresh,
            status: o.status.as_deref(),
        };
        html::page(&mut body, &info, &rows);
    }
    let mut extra: Vec<(&[u8], &[u8])> = vec![(b"Cache-Control", b"no-cache")];
    let refresh;
    if let (Some(r), false, false, false) = (here.page.refresh, o.csv, o.json, o.norefresh) {
        refresh = r.as_secs().max(1).to_string();
        extra.push((b"Refresh", refresh.as_bytes()));
    }
    fulcrum_http::reply::raw(200, Some(ctype), &extra, body.as_bytes())
}

fn server_up(r: &super::Row) -> bool {
    r.obj != ObjType::Server
        || matches!(r.get("status"), Some(Val::Str(s)) if s.starts_with("UP") || s == "no check")
}

/// Decodes one `application/x-www-form-urlencoded` value.
fn form_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Applies an admin form's POST (`s=<server>&...&action=<act>&b=#<iid>`) and answers with
/// HAProxy's 303 to the page with the result (`;st=DONE`...).
pub fn post(shared: &Shared, here: &Here<'_>, target: &[u8], body: &[u8]) -> Vec<u8> {
    let target = origin_form(target);
    let uri = String::from_utf8_lossy(&target[..here.page.uri.len()]).into_owned();
    let st = if here.admin { apply(shared, body) } else { "DENY" };
    let location = format!("{uri};st={st}");
    fulcrum_http::reply::raw(
        303,
        Some("text/plain"),
        &[(b"Cache-Control", b"no-cache"), (b"Location", location.as_bytes())],
        b"",
    )
}

fn apply(shared: &Shared, body: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(body);
    let mut servers = Vec::new();
    let (mut action, mut backend) = (String::new(), String::new());
    for pair in text.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "s" => servers.push(form_decode(v)),
            "action" => action = form_decode(v),
            "b" => backend = form_decode(v),
            _ => {}
        }
    }
    let be: Option<&Arc<Backend>> = match backend.strip_prefix('#') {
        Some(id) => id.parse::<u32>().ok().and_then(|id| shared.proxies.backend_by_id(id)),
        None => shared.proxies.backend(&backend),
    };
    let Some(be) = be else { return "ERRP" };
    if action.is_empty() || servers.is_empty() {
        return "NONE";
    }
    let (mut done, mut failed) = (0, 0);
    for name in &servers {
        let Some(idx) = be.servers.iter().position(|s| &s.name == name) else {
            failed += 1;
            continue;
        };
        if action_on(be, idx, &action) {
            done += 1;
        } else {
            failed += 1;
        }
    }
    match (done, failed) {
        (0, 0) => "NONE",
        (0, _) => "ERRP",
        (_, 0) => "DONE",
        _ => "PART",
    }
}

/// One admin action on one server (HAProxy's form values).
fn action_on(be: &Backend, idx: usize, action: &str) -> bool {
    let srv = &be.servers[idx];
    let (has_check, has_agent) = {
        let r = srv.state();
        (r.check.is_some(), r.agent.is_some())
    };
    let change = |c: Change| be.change_server(idx, c);
    match action {
        "ready" | "drain" | "maint" => crate::backend::status::set_state(be, idx, action),
        "dhlth" | "ehlth" if has_check => {
            change(Change::CheckEnabled { agent: false, on: action == "ehlth" });
        }
        "dagent" | "eagent" if has_agent => {
            change(Change::CheckEnabled { agent: true, on: action == "eagent" });
        }
        "hrunn" | "hnolb" | "hdown" if has_check => {
            let oper = match action {
                "hrunn" => Oper::Running,
                "hnolb" => Oper::Stopping,
                _ => Oper::Stopped,
            };
            change(Change::Force { agent: false, oper });
        }
        "arunn" | "adown" if has_agent => {
            let oper = if action == "arunn" { Oper::Running } else { Oper::Stopped };
            change(Change::Force { agent: true, oper });
        }
        "shutdown" if srv.sessions.is_some() => {
            crate::server::kill::shutdown(srv, crate::outcome::Cause::Down);
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_follow_the_uri() {
        let page = StatsPage { uri: "/stats".into(), ..Default::default() };
        assert!(matches(&page, b"/stats;csv;norefresh"));
        assert!(!matches(&page, b"/stat"));
        let o = options(&page, b"/stats;csv;norefresh;up");
        assert!(o.csv && o.norefresh && o.up && !o.json);
        assert_eq!(options(&page, b"/stats;st=DONE").status.as_deref(), Some("DONE"));
        assert_eq!(options(&page, b"/stats?;csv;scope=b1").scope.as_deref(), Some("b1"));
        assert_eq!(options(&page, b"/stats?scope=be&x").scope.as_deref(), Some("be"));
        assert_eq!(options(&page, b"/stats?scope=b<1").scope, None);
        assert!(matches(&page, b"http://lb.example/stats;csv"));
        assert!(options(&page, b"HTTP://lb.example/stats;csv").csv);
        assert_eq!(origin_form(b"http://h"), b"/");
    }

    #[test]
    fn basic_credentials_are_checked_against_the_users() {
        let page = StatsPage {
            auth: vec![("admin".into(), "s3cret".into()), ("ops".into(), "x".into())],
            ..Default::default()
        };
        // base64("admin:s3cret"), base64("ops:x")
        assert!(authorized(&page, Some(b"Basic YWRtaW46czNjcmV0")));
        assert!(authorized(&page, Some(b"basic b3BzOng=")));
        assert!(!authorized(&page, Some(b"Basic YWRtaW46d3Jvbmc=")));
        assert!(!authorized(&page, Some(b"Bearer x")));
        assert!(!authorized(&page, None));
    }

    #[test]
    fn form_values_are_decoded() {
        assert_eq!(form_decode("a%20b+c"), "a b c");
        assert_eq!(form_decode("%23"), "#");
        assert_eq!(form_decode("100%"), "100%");
    }
}
