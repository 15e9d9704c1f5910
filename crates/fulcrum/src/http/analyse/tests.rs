//! The request analysers without a socket: a configuration's plan, a request parsed from
//! text, and what [`Txn::request`] and [`Txn::for_server`] decide.

use std::sync::Arc;

use fulcrum_http::{Head, Limits};

use super::*;
use crate::outcome::CookieIn;
use crate::plan::Plan;
use crate::rules::trace::{Step, Trace};

const DEFAULTS: &str = "defaults\n mode http\n timeout client 1s\n timeout server 1s\n \
                        timeout connect 1s\n";

pub(super) fn plan(proxies: &str) -> Plan {
    let text = format!("{DEFAULTS}{proxies}");
    let src = fulcrum_config::Source { name: "t.cfg".into(), text };
    let loaded = fulcrum_config::load(&[src], &|_| None).expect("config loads");
    crate::plan::build(&loaded.config, Default::default()).expect("plan builds")
}

/// What the analysers made of one request.
struct Seen {
    stops: Vec<String>,
    backend: Option<String>,
    head: Head,
    to: Option<ToServer>,
    o: Outcome,
    trace: Trace,
}

/// The plan's first frontend and its HTTP settings.
fn first_frontend(plan: &Plan) -> (&crate::frontend::Frontend, &crate::http_settings::HttpProxy) {
    let fe = &plan.proxies.frontends[0];
    (fe, fe.http.as_ref().expect("an HTTP frontend"))
}

/// A transaction for `request` (HTTP/1.1 text), and where its head ends.
fn parsed(request: &str) -> (Transaction, usize) {
    let mut req = Head::new();
    let n = req.parse_request(request.as_bytes(), &Limits::default()).expect("parses");
    (Transaction::new(req), n.expect("whole"))
}

/// The client's and the frontend's addresses the tests' requests come with.
fn addrs() -> (Option<std::net::SocketAddr>, Option<std::net::SocketAddr>) {
    (Some("192.0.2.7:4000".parse().expect("addr")), Some("127.0.0.1:80".parse().expect("addr")))
}

/// Runs the analysers on `request` (HTTP/1.1 text) through the plan's first frontend, as
/// the session would with the whole body there: each stop that lets the transaction go on
/// (a body awaited, a stats page not asked for) is answered by calling again.
fn run(plan: &Plan, request: &str) -> Seen {
    let (fe, http) = first_frontend(plan);
    let (mut parts, n) = parsed(request);
    let mut txn = parts.txn(fe, http, addrs(), &request.as_bytes()[n..]);
    let mut p = Progress::default();
    let mut stops = Vec::new();
    let mut to = None;
    loop {
        let stop = txn.request(&mut p);
        stops.push(match &stop {
            Stop::Backend(_) => "Backend".to_string(),
            other => format!("{other:?}"),
        });
        match stop {
            Stop::BufferBody | Stop::WaitForBody { .. } | Stop::Stats => continue,
            Stop::Backend(t) => to = Some(t),
            _ => {}
        }
        break;
    }
    let trace = txn.vars.trace.take().map(|t| *t).unwrap_or_default();
    let backend = parts.backend.map(|b| b.name.clone());
    Seen { stops, backend, head: parts.req, to, o: parts.o, trace }
}

fn rules_held(t: &Trace) -> Vec<(u32, bool)> {
    let line = |at: u32| crate::rules::origin::place(at).map_or(0, |(_, l)| l);
    t.steps
        .iter()
        .filter_map(|s| match s {
            Step::Rule { at, held } => Some((line(*at), *held)),
            Step::Note(_) | Step::UseBackend { .. } | Step::Acl { .. } => None,
        })
        .collect()
}

#[test]
fn use_backend_picks_the_first_rule_that_holds_else_the_default() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n use_backend api if { path_beg /api }\n \
         use_backend img if { path_end .png }\n default_backend web\n\
         backend api\n server a 127.0.0.1:2\nbackend img\n server i 127.0.0.1:3\n\
         backend web\n server w 127.0.0.1:4\n",
    );
    let api = run(&p, "GET /api/x.png HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(
        (api.stops.last().map(String::as_str), api.backend.as_deref()),
        (Some("Backend"), Some("api"))
    );
    assert_eq!(run(&p, "GET /a.png HTTP/1.1\r\nHost: h\r\n\r\n").backend.as_deref(), Some("img"));
    let web = run(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(web.backend.as_deref(), Some("web"));
    assert!(web
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, Step::Note(n) if n.contains("default_backend web"))));
}

#[test]
fn deny_return_and_redirect_end_the_transaction_with_haproxy_termination_states() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-request deny if { path /d }\n \
         http-request return status 201 content-type text/plain string ok if { path /r }\n \
         http-request redirect location /n code 301 if { path /o }\n default_backend b\n\
         backend b\n server s 127.0.0.1:2\n",
    );
    let d = run(&p, "GET /d HTTP/1.1\r\nHost: h\r\n\r\n");
    let last = d.stops.last().expect("a stop");
    assert!(last.contains("Status(403)"), "{last}");
    let r = run(&p, "GET /r HTTP/1.1\r\nHost: h\r\n\r\n");
    let last = r.stops.last().expect("a stop");
    assert!(last.contains("Bytes") && last.contains("Local"), "{last}");
    let o = run(&p, "POST /o HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab");
    let last = o.stops.last().expect("a stop");
    // A redirect of a request with a body closes the connection, as HAProxy.
    assert!(last.contains("closes: true") && last.contains("Local"), "{last}");
    // The rules ran in order up to the one that answered (lines 8, 9, 10 of the file).
    assert_eq!(rules_held(&o.trace), vec![(8, false), (9, false), (10, true)]);
    // None of them reached a backend.
    assert_eq!((d.backend, r.backend, o.backend), (None, None, None));
}

#[test]
fn wait_for_body_stops_then_resumes_at_the_next_rule() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-request set-var(txn.a) str(1)\n \
         http-request wait-for-body time 1s\n http-request deny if { req.body -m sub secret }\n \
         default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let s = run(&p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nsecret");
    assert!(s.stops[0].starts_with("WaitForBody"), "{:?}", s.stops);
    assert!(s.stops[1].contains("Status(403)"), "{:?}", s.stops);
    // The rule before the wait ran once.
    assert_eq!(rules_held(&s.trace), vec![(8, true), (9, true), (10, true)]);
    let ok = run(&p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(ok.backend.as_deref(), Some("b"));
}

#[test]
fn the_rules_see_a_chunked_body_as_its_data() {
    // As HAProxy's rules see only data blocks: no chunk sizes, no trailers.
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-request wait-for-body time 1s\n \
         http-request set-header x-seen %[req.body_len]:%[req.body]\n \
         default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    let s = run(&p, &format!("{chunked}5\r\nhello\r\n6\r\n world\r\n0\r\nx-t: 1\r\n\r\n"));
    assert_eq!(s.head.header(b"x-seen"), Some(&b"11:hello world"[..]));
    assert_eq!(s.stops.last().map(String::as_str), Some("Backend"));
    // Part of it: the data so far.
    let s = run(&p, &format!("{chunked}5\r\nhello\r\n6\r\n wo"));
    assert_eq!(s.head.header(b"x-seen"), Some(&b"8:hello wo"[..]));
}

#[test]
fn a_persistence_cookie_names_the_server_and_indirect_takes_it_out() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n default_backend b\n\
         backend b\n cookie SRV insert indirect nocache\n server s1 127.0.0.1:2 cookie one\n \
         server s2 127.0.0.1:3 cookie two\n",
    );
    let s = run(&p, "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1; SRV=two\r\n\r\n");
    let to = s.to.as_ref().expect("to a server");
    assert_eq!(to.persist, Some(1));
    assert_eq!(s.o.cookie_in, CookieIn::Valid);
    assert_eq!(s.head.header(b"cookie"), Some(&b"a=1"[..]));
    let none = run(&p, "GET / HTTP/1.1\r\nHost: h\r\nCookie: SRV=zzz\r\n\r\n");
    assert_eq!(
        (none.to.expect("to a server").persist, none.o.cookie_in),
        (None, CookieIn::Invalid)
    );
}

#[test]
fn the_request_for_the_server_loses_hop_by_hop_fields_and_gains_forwardfor() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n option forwardfor\n default_backend b\n\
         backend b\n balance url_param id\n server s1 127.0.0.1:2\n server s2 127.0.0.1:3\n",
    );
    let s = run(
        &p,
        "GET http://h:80/p?id=42 HTTP/1.1\r\nHost: h\r\nConnection: x-hop\r\nX-Hop: 1\r\n\r\n",
    );
    assert_eq!(s.head.header(b"x-forwarded-for"), Some(&b"192.0.2.7"[..]));
    assert_eq!(s.head.header(b"x-hop"), None);
    assert_eq!(s.head.target(), b"http://h/p?id=42");
    let to = s.to.expect("to a server");
    assert!(matches!(to.key, KeyKind::Bytes));
}

#[test]
fn tcp_request_content_reject_and_the_monitor_uri_come_first() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n monitor-uri /alive\n \
         tcp-request content reject if { src 192.0.2.0/24 } { path /no }\n \
         http-request deny\n default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let no = run(&p, "GET /no HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(no.stops, vec!["Reject"]);
    // Traced, the rule's two anonymous ACLs are noted, both matching.
    let seen: Vec<(&str, bool)> = no
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Acl { label, matched, .. } => Some((&**label, *matched)),
            _ => None,
        })
        .collect();
    assert_eq!(seen, vec![("{ src 192.0.2.0/24 }", true), ("{ path /no }", true)]);
    let m = run(&p, "GET /alive HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(m.stops, vec!["Monitor { failing: false }"]);
}

#[test]
fn a_listen_section_runs_its_rules_once() {
    let p = plan(
        "listen px\n bind 127.0.0.1:1\n http-request set-header x-n %[req.hdr_cnt(x-n)]\n \
         server s 127.0.0.1:2\n",
    );
    let s = run(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(s.backend.as_deref(), Some("px"));
    assert_eq!(s.head.header(b"x-n"), Some(&b"0"[..]));
    assert_eq!(rules_held(&s.trace).len(), 1);
    let _ = Arc::clone(&p.proxies.frontends[0]);
}

#[test]
fn the_trace_names_each_acl_a_condition_evaluated_in_order_and_short_circuited() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n acl a path_beg /a\n acl b hdr(x) -m found\n \
         acl b path_end .b\n http-request set-header x-hit 1 if a !b || { method PUT }\n \
         default_backend be\nbackend be\n server s 127.0.0.1:2\n",
    );
    let acls = |t: &Trace| -> Vec<(String, u32, bool, bool)> {
        let line = |at: u32| crate::rules::origin::place(at).map_or(0, |(_, l)| l);
        t.steps
            .iter()
            .filter_map(|s| match s {
                Step::Acl { at, label, negate, matched, .. } => {
                    Some((label.to_string(), line(*at), *negate, *matched))
                }
                _ => None,
            })
            .collect()
    };
    // `a` matches, `b` matches on its second line (so `!b` fails), then the anonymous ACL.
    let s = run(&p, "GET /a.b HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(
        acls(&s.trace),
        vec![
            ("a".to_string(), 8, false, true),
            ("b".to_string(), 10, true, true),
            ("{ method PUT }".to_string(), 11, false, false),
        ]
    );
    assert_eq!(rules_held(&s.trace), vec![(11, false)]);
    // `a` does not match: its group stops there.
    let s = run(&p, "PUT /z HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(
        acls(&s.trace),
        vec![("a".to_string(), 8, false, false), ("{ method PUT }".to_string(), 11, false, true)]
    );
    assert_eq!(s.head.header(b"x-hit"), Some(&b"1"[..]));
}

/// A chunked body received with the head is checked before anything reaches a server: an
/// invalid one stops the analysers (400); `http-send-name-header` names the try's server.
#[test]
fn an_invalid_chunked_body_stops_before_a_server_and_the_server_is_named() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n default_backend b\n\
         backend b\n http-send-name-header X-Srv\n server s 127.0.0.1:2\n",
    );
    let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    let bad = run(&p, &format!("{chunked}zz\r\nab\r\n"));
    assert_eq!(bad.stops.last().map(String::as_str), Some("BadBody"));
    let good = run(&p, &format!("{chunked}2\r\nab\r\n0\r\n\r\n"));
    assert_eq!(good.stops.last().map(String::as_str), Some("Backend"));
    // (Part of a valid body is fine too: the rest comes later.)
    let part = run(&p, &format!("{chunked}5\r\nab"));
    assert_eq!(part.stops.last().map(String::as_str), Some("Backend"));
    let plan_be = &p.proxies.backends[0];
    let fe = &p.proxies.frontends[0];
    let mut t = Transaction::new(Head::new());
    let text = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    t.req.parse_request(text, &Limits::default()).expect("parses");
    let addrs = (None, None);
    let mut txn = t.txn(fe, fe.http.as_ref().expect("http"), addrs, &[]);
    assert!(txn.name_server(plan_be, 0));
    assert_eq!(t.req.header(b"x-srv"), Some(&b"s"[..]));
}

/// Runs `f` on the transaction of `request` through the plan's first frontend, once its
/// request analysers stopped.
fn with_txn<R>(plan: &Plan, request: &str, f: impl FnOnce(&mut Txn<'_>, Stop) -> R) -> R {
    let (fe, http) = first_frontend(plan);
    let (mut parts, n) = parsed(request);
    let mut txn = parts.txn(fe, http, addrs(), &request.as_bytes()[n..]);
    let stop = txn.request(&mut Progress::default());
    f(&mut txn, stop)
}

#[test]
fn an_error_answer_is_the_http_error_reply_rendered_for_the_request_else_haproxys() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n \
         http-error status 429 content-type text/plain lf-string \"slow down on %[path]\"\n \
         http-request deny deny_status 429 if { path_beg /api }\n \
         http-request deny if { path /d }\n default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let text = with_txn(&p, "GET /api/x HTTP/1.1\r\nHost: h\r\n\r\n", |txn, stop| {
        assert!(format!("{stop:?}").contains("Status(429)"), "{stop:?}");
        String::from_utf8(txn.error_message(429, None)).expect("utf-8")
    });
    assert!(text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nslow down on /api/x"), "{text}");
    assert!(text.to_ascii_lowercase().contains("content-type: text/plain\r\n"), "{text}");
    // A status without a reply of its own: HAProxy's built-in message.
    let text = with_txn(&p, "GET /d HTTP/1.1\r\nHost: h\r\n\r\n", |txn, _| {
        String::from_utf8(txn.error_message(403, None)).expect("utf-8")
    });
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    assert!(text.contains("<h1>403 Forbidden</h1>"), "{text}");
}

#[test]
fn early_hint_rules_gather_their_fields_into_a_103_before_the_request_goes_on() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n \
         http-request early-hint link \"</style.css>; rel=preload\"\n \
         http-request early-hint link \"</%[path,regsub(^/,)].js>; rel=preload\"\n \
         default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let hints = with_txn(&p, "GET /app HTTP/1.1\r\nHost: h\r\n\r\n", |txn, stop| {
        assert!(matches!(stop, Stop::Backend(_)), "{stop:?}");
        early_hints(&txn.vars.early_hints)
    });
    assert_eq!(
        String::from_utf8(hints).expect("utf-8"),
        "HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\
         link: </app.js>; rel=preload\r\n\r\n"
    );
    // No rule, no 103.
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n default_backend b\nbackend b\n server s 127.0.0.1:2\n",
    );
    let hints = with_txn(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", |txn, _| {
        early_hints(&txn.vars.early_hints)
    });
    assert!(hints.is_empty());
}
