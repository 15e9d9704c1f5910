//! The response analysers without a socket: a request taken to its backend by
//! [`Txn::request`], a server's response parsed from text, and what
//! [`Txn::response_rules`], [`Txn::after_response`] and [`Txn::store_sticks`] make of it.

use fulcrum_http::{Head, Limits};

use super::tests::plan;
use super::*;
use crate::plan::Plan;

/// A transaction through the plan's first frontend taken to its backend, with `response`
/// (a server's head, HTTP/1.1 text) as its response: its parts and where it goes.
fn to_backend(p: &Plan, request: &str, response: &str) -> (Transaction, Arc<Backend>, ToServer) {
    let fe = &p.proxies.frontends[0];
    let http = fe.http.as_ref().expect("an HTTP frontend");
    let mut req = Head::new();
    req.parse_request(request.as_bytes(), &Limits::default()).expect("parses").expect("whole");
    let mut parts = Transaction::new(req);
    parts.resp.parse_response(response.as_bytes(), &Limits::default()).expect("parses");
    let addrs =
        (Some("192.0.2.7:4000".parse().expect("a")), Some("127.0.0.1:80".parse().expect("a")));
    let mut txn = parts.txn(fe, http, addrs, &[]);
    let mut at = Progress::default();
    let to = loop {
        match txn.request(&mut at) {
            Stop::Backend(to) => break to,
            Stop::BufferBody | Stop::WaitForBody { .. } | Stop::Stats => continue,
            other => panic!("the request stopped: {other:?}"),
        }
    };
    (parts, at.be.expect("a backend"), to)
}

/// Runs the `http-response` rules to their end, answering each wait as the session does once
/// the body is there; the stops seen, then the last.
fn respond(p: &Plan, parts: &mut Transaction, be: &Arc<Backend>) -> Vec<String> {
    let fe = &p.proxies.frontends[0];
    let http = fe.http.as_ref().expect("an HTTP frontend");
    let mut txn = parts.txn(fe, http, (None, None), &[]);
    let mut at = RespProgress::default();
    let mut stops = Vec::new();
    loop {
        let stop = txn.response_rules(be, Some("s1"), None, Default::default(), &mut at);
        let wait = matches!(stop, RespStop::WaitForBody { .. });
        stops.push(format!("{stop:?}"));
        if !wait {
            return stops;
        }
    }
}

fn values(h: &Head, name: &[u8]) -> Vec<String> {
    h.headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect()
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Sess: abc\r\n\r\n";

#[test]
fn the_backends_response_rules_run_before_the_frontends() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-response add-header x-order fe\n \
         http-response set-header x-last fe\n default_backend b\n\
         backend b\n http-response add-header x-order be\n http-response set-header x-last be\n \
         server s1 127.0.0.1:2\n",
    );
    let (mut parts, be, _) = to_backend(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", OK);
    assert_eq!(respond(&p, &mut parts, &be), vec!["Pass"]);
    assert_eq!(values(&parts.resp, b"x-order"), vec!["be", "fe"]);
    assert_eq!(values(&parts.resp, b"x-last"), vec!["fe"]);
}

#[test]
fn a_response_deny_answers_502_or_its_status_and_a_redirect_skips_after_response_rules() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n \
         http-response deny if { status 500 }\n \
         http-response deny deny_status 503 if { res.hdr(x-legal) -m found }\n \
         http-response redirect location /moved code 302 if { status 404 }\n \
         default_backend b\nbackend b\n server s1 127.0.0.1:2\n",
    );
    let get = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    let (mut parts, be, _) = to_backend(&p, get, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(respond(&p, &mut parts, &be), vec!["Answer { built: Status(502), after: true }"]);
    let legal = "HTTP/1.1 200 OK\r\nX-Legal: 1\r\nContent-Length: 0\r\n\r\n";
    let (mut parts, be, _) = to_backend(&p, get, legal);
    assert_eq!(respond(&p, &mut parts, &be), vec!["Answer { built: Status(503), after: true }"]);
    let (mut parts, be, _) = to_backend(&p, get, "HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n");
    let stops = respond(&p, &mut parts, &be);
    assert!(stops[0].starts_with("Answer { built: Bytes(") && stops[0].ends_with("after: false }"));
    let (mut parts, be, _) = to_backend(&p, get, OK);
    assert_eq!(respond(&p, &mut parts, &be), vec!["Pass"]);
}

#[test]
fn response_wait_for_body_stops_then_resumes_at_the_next_rule() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-response add-header x-before 1\n \
         http-response wait-for-body time 2s at-least 10\n http-response add-header x-after 1\n \
         default_backend b\nbackend b\n server s1 127.0.0.1:2\n",
    );
    let (mut parts, be, _) = to_backend(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", OK);
    let stops = respond(&p, &mut parts, &be);
    assert_eq!(
        stops,
        vec!["WaitForBody { time: 2s, at_least: Some(10) }".to_string(), "Pass".to_string()]
    );
    // The rule before the wait ran once, the one after it once.
    assert_eq!(values(&parts.resp, b"x-before"), vec!["1"]);
    assert_eq!(values(&parts.resp, b"x-after"), vec!["1"]);
}

#[test]
fn after_response_rules_run_for_the_backend_then_the_frontend_and_once_in_a_listen() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n http-after-response add-header x-after fe\n \
         default_backend b\nbackend b\n http-after-response add-header x-after be\n \
         server s1 127.0.0.1:2\n\
         listen px\n bind 127.0.0.1:3\n http-after-response add-header x-after px\n \
         server s1 127.0.0.1:2\n",
    );
    let (mut parts, be, _) = to_backend(&p, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", OK);
    let fe = &p.proxies.frontends[0];
    let http = fe.http.as_ref().expect("http");
    let mut txn = parts.txn(fe, http, (None, None), &[]);
    assert!(has_after_response(fe, Some(&be)));
    txn.after_response(Some(&be), Some("s1"));
    assert_eq!(values(&parts.resp, b"x-after"), vec!["be", "fe"]);
    // A listen section is its own backend: its rules run once.
    let px = &p.proxies.frontends[1];
    let own = p.proxies.backend("px").expect("px");
    let mut txn = parts.txn(px, px.http.as_ref().expect("http"), (None, None), &[]);
    txn.resp.parse_response(OK.as_bytes(), &Limits::default()).expect("parses");
    txn.after_response(Some(own), None);
    assert_eq!(values(&parts.resp, b"x-after"), vec!["px"]);
}

#[test]
fn stick_entries_stored_with_the_server_send_the_next_request_to_it() {
    let p = plan(
        "frontend fe\n bind 127.0.0.1:1\n default_backend b\n\
         backend b\n balance roundrobin\n stick-table type string len 32 size 10\n \
         stick on req.hdr(x-user)\n stick store-response res.hdr(x-sess)\n \
         stick match req.cook(sess)\n \
         server s1 127.0.0.1:2\n server s2 127.0.0.1:3\n server s3 127.0.0.1:4\n",
    );
    let fe = &p.proxies.frontends[0];
    let http = fe.http.as_ref().expect("http");
    let alice = "GET / HTTP/1.1\r\nHost: h\r\nX-User: alice\r\n\r\n";
    let (mut parts, be, mut to) = to_backend(&p, alice, OK);
    assert_eq!((to.persist, to.stores.len()), (None, 1), "a first request: no entry yet");
    // The server the balancer would not pick first takes it: the entries name it.
    parts.txn(fe, http, (None, None), &[]).store_sticks(&be, &mut to.stores, &be.servers[2]);
    assert!(to.stores.is_empty());
    let (_, _, again) = to_backend(&p, alice, OK);
    assert_eq!(again.persist, Some(2));
    // `stick store-response` stored the response's X-Sess value too.
    let by_cookie = "GET / HTTP/1.1\r\nHost: h\r\nCookie: sess=abc\r\n\r\n";
    assert_eq!(to_backend(&p, by_cookie, OK).2.persist, Some(2));
    let bob = "GET / HTTP/1.1\r\nHost: h\r\nX-User: bob\r\n\r\n";
    assert_eq!(to_backend(&p, bob, OK).2.persist, None);
}
