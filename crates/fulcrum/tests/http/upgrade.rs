//! A `mode tcp` frontend whose backend is in `mode http`: HAProxy upgrades the connection to
//! HTTP, and the backend's HTTP rules and forwarding apply to the client's bytes.

use std::time::Duration;

use crate::px::*;

const TCP_DEFAULTS: &str =
    "defaults\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n";

fn web_backend(srv: &Running) -> String {
    format!(
        "backend web\n mode http\n option forwardfor\n\
         http-request set-header X-A 1\n http-response set-header X-R 2\n server s1 {}\n",
        srv.addr()
    )
}

#[test]
fn a_tcp_frontend_upgrades_its_connections_to_http_for_an_http_backend() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{TCP_DEFAULTS}frontend fe\n mode tcp\n bind {{fe0}}\n default_backend web\n{}",
            web_backend(&srv)
        ));
        // Two requests on one connection: both go through the backend's rules.
        let mut cl = px.client();
        let first = cl.request(b"GET /echo HTTP/1.1\r\nHost: a\r\n\r\n");
        let second = cl.request(get("/echo").as_bytes());
        let mut seen = Vec::new();
        for r in [&first, &second] {
            assert_eq!((r.status, r.header("x-r")), (200, Some("2")));
            let h = r.echoed();
            assert_eq!(h.header("x-a"), Some("1"));
            assert_eq!(h.header("x-forwarded-for"), Some("127.0.0.1"));
            seen.push((r.summary(&["x-r", "connection"]), h.headers));
        }
        assert_eq!(srv.counts().requests, 2);
        // Bytes that are not HTTP get HAProxy's 400.
        let bad = px.send(b"garbage\r\n\r\n");
        assert_eq!(bad.status, 400);
        (seen, bad.summary(&["content-type", "connection"]), bad.text())
    });
}

#[test]
fn a_tcp_frontend_switches_per_connection_between_tcp_and_http_backends() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{TCP_DEFAULTS}frontend fe\n mode tcp\n bind {{fe0}}\n bind {{fe1}}\n\
             use_backend raw if {{ dst_port {{port1}} }}\n default_backend web\n\
             backend raw\n mode tcp\n server s1 {}\n{}",
            srv.addr(),
            web_backend(&srv)
        ));
        // Through the tcp backend the bytes pass untouched; through the http one, rules apply.
        let raw = px.client_to(1).request(get("/echo").as_bytes());
        let web = px.client_to(0).request(get("/echo").as_bytes());
        assert_eq!((raw.header("x-r"), raw.echoed().header("x-a")), (None, None));
        assert_eq!((web.header("x-r"), web.echoed().header("x-a")), (Some("2"), Some("1")));
        (raw.echoed().headers, web.echoed().headers)
    });
}

#[test]
fn a_later_request_that_picks_a_tcp_backend_closes_the_upgraded_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{TCP_DEFAULTS}frontend fe\n mode tcp\n bind {{fe0}}\n\
             use_backend raw if {{ req.hdr(host) -m str b }}\n default_backend web\n\
             backend raw\n mode tcp\n server s1 {}\n{}",
            srv.addr(),
            web_backend(&srv)
        ));
        let mut cl = px.client();
        let first = cl.request(b"GET /echo HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!((first.status, first.header("x-r")), (200, Some("2")));
        // HAProxy fails the stream: no answer, the connection closes.
        cl.send_lossy(b"GET /echo HTTP/1.1\r\nHost: b\r\n\r\n");
        assert!(cl.closed_within(Duration::from_secs(2)), "connection left open");
        assert!(cl.pending().is_empty(), "answered: {}", show(cl.pending()));
        assert_eq!(srv.counts().requests, 1);
    });
}
