//! Content inspection compared with HAProxy 2.6: `tcp-request content` rules that wait under
//! `tcp-request inspect-delay` for the bytes they test (`req.len`, `req.payload`,
//! `req.payload_lv`, `-m bin`, `WAIT_END`), a backend's own `tcp-request content` rules, and
//! `tcp-response content` rules in mode http.

use std::net::Shutdown;
use std::time::{Duration, Instant};

use crate::px::*;
use fulcrum_testserver::Mode;

/// What a client of an echo service behind the proxy gets for `parts`, sent one after the
/// other (the proxy must hold the first ones until the rules decide); `shut` half-closes after.
fn echo_through(px: &Px, parts: &[&[u8]], shut: bool) -> (Vec<u8>, bool) {
    let mut cl = px.client();
    for (i, p) in parts.iter().enumerate() {
        cl.send_lossy(p);
        if i + 1 < parts.len() {
            // Nothing may come back while the rules still wait for bytes.
            let early = cl.read_for(Duration::from_millis(300));
            assert!(early.is_empty(), "answered before the rules could decide: {}", show(&early));
        }
    }
    if shut {
        let _ = cl.s.shutdown(Shutdown::Write);
    }
    let want: usize = parts.iter().map(|p| p.len()).sum();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while got.len() < want && Instant::now() < deadline {
        let more = cl.read_for(Duration::from_millis(200));
        got.extend_from_slice(&more);
        if more.is_empty() && cl.closed_within(Duration::ZERO) {
            break;
        }
    }
    let closed = cl.closed_within(Duration::from_secs(2));
    (got, closed)
}

#[test]
fn content_rules_wait_for_the_payload_they_test() {
    let echo = server_mode("e1", Mode::Echo);
    let cfg = format!(
        "{DEFAULTS}listen px\n mode tcp\n bind {{fe0}}\n tcp-request inspect-delay 3s\n\
         tcp-request content accept if {{ req.len ge 4 }} {{ req.payload(0,4) -m bin 50494e47 }}\n\
         tcp-request content accept if {{ req.payload_lv(0,1) -m str hello }}\n\
         tcp-request content reject\n server e1 {}\n",
        echo.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        vec![
            // "PI" cannot decide `req.len ge 4`: held until "NG" comes.
            echo_through(&px, &[b"PI", b"NG\n"], false).0,
            // A length-prefixed block, sent in two parts.
            echo_through(&px, &[b"\x05hel", b"lo"], false).0,
            // Decided at once: neither rule can match "PONG" whatever follows.
            echo_through(&px, &[b"PONG"], false).0,
            // The client's end of stream makes the short payload final: rejected.
            echo_through(&px, &[b"PI"], true).0,
        ]
    });
}

#[test]
fn wait_end_holds_the_connection_for_the_whole_delay() {
    let echo = server_mode("e1", Mode::Echo);
    let cfg = format!(
        "{DEFAULTS}listen px\n mode tcp\n bind {{fe0}}\n tcp-request inspect-delay 400ms\n\
         tcp-request content reject unless WAIT_END\n\
         tcp-request content accept if REQ_CONTENT\n tcp-request content reject\n\
         server e1 {}\n",
        echo.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let start = Instant::now();
        let (got, _) = echo_through(&px, &[b"hello"], false);
        let waited = start.elapsed() >= Duration::from_millis(350);
        // With nothing sent, REQ_CONTENT is false once the delay is over.
        let mut cl = px.client();
        let silent_closed = cl.closed_within(Duration::from_secs(2));
        (got, waited, silent_closed)
    });
}

#[test]
fn backend_content_rules_and_tcp_response_rules_in_mode_http() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             tcp-request content set-var(txn.fe) str(front)\n default_backend be\n\
             backend be\n tcp-request content set-var(txn.be) str(back)\n\
             tcp-request content reject if {{ path /be-reject }}\n\
             http-request set-var(txn.path) path\n\
             tcp-response inspect-delay 200ms\n\
             tcp-response content reject if {{ var(txn.path) -m str /res-reject }}\n\
             tcp-response content set-var(txn.res) str(seen)\n\
             http-response set-header x-vars \"%[var(txn.fe)] %[var(txn.be)] %[var(txn.res)]\"\n\
             server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        let ok = px.get("/");
        let mut out = vec![format!("{} {:?}", ok.status, ok.header("x-vars"))];
        for path in ["/be-reject", "/res-reject"] {
            let before = srv.counts().requests;
            let mut cl = px.client();
            cl.send_lossy(get(path).as_bytes());
            let answered = cl.read_final(false).ok().map(|r| r.status);
            let closed = cl.closed_within(Duration::from_secs(2));
            // The server counts a request once it has answered it.
            let reached = eventually(Duration::from_secs(1), || srv.counts().requests > before);
            out.push(format!("{path}: {answered:?} closed={closed} reached={reached}"));
        }
        out
    });
}
