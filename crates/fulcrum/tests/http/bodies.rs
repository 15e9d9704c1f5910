//! Message bodies: Content-Length and chunked both ways, streamed without buffering, trailers,
//! `Expect: 100-continue`, bodiless answers, interim answers, WebSocket and CONNECT tunnels.

use std::io::Write;
use std::time::{Duration, Instant};

use fulcrum_testserver::http::{fnv1a, BODY_LINE, FNV_OFFSET};

use crate::px::*;

fn one(srv: &Running, lines: &str) -> String {
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

/// `n` bytes of a pattern that is not the server's.
fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

fn sum(data: &[u8]) -> String {
    format!("{:016x}", fnv1a(FNV_OFFSET, data))
}

fn is_filler(body: &[u8]) -> bool {
    body.iter().enumerate().all(|(i, &b)| b == BODY_LINE[i % 64])
}

/// Peak resident memory of a process, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("kB value")
}

#[test]
fn content_length_request_body_reaches_the_server_intact() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let body = payload(100_000);
        let mut req = format!(
            "POST /?bodyinfo=1&echo=head HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(&body);
        let r = px.send(&req);
        assert_eq!(r.header("x-body-len"), Some("100000"));
        assert_eq!(r.header("x-body-sum"), Some(sum(&body).as_str()));
        assert_eq!(r.echoed().header("content-length"), Some("100000"));
        assert!(!r.echoed().has("transfer-encoding"));
    });
}

#[test]
fn chunked_request_body_reaches_the_server_chunked() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let body = payload(50_000);
        let mut cl = px.client();
        cl.send(
            b"PUT /?bodyinfo=1&echo=head HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        for part in body.chunks(7000) {
            cl.send(format!("{:x}\r\n", part.len()).as_bytes());
            cl.send(part);
            cl.send(b"\r\n");
        }
        cl.send(b"0\r\n\r\n");
        let r = cl.read();
        assert_eq!(r.header("x-body-len"), Some("50000"));
        assert_eq!(r.header("x-body-sum"), Some(sum(&body).as_str()));
        let head = r.echoed();
        assert_eq!(head.header("transfer-encoding"), Some("chunked"));
        assert!(!head.has("content-length"));
    });
}

#[test]
fn a_10_mb_upload_streams_to_the_server_before_it_is_complete() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let body = payload(10 << 20);
        let mut cl = px.client();
        cl.send(
            format!(
                "POST /?bodyinfo=1 HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        cl.send(&body[..1 << 20]);
        // The first megabyte reaches the server while 9 are still to be sent.
        assert!(
            eventually(Duration::from_secs(3), || srv.counts().bytes >= 1 << 20),
            "server got only {} bytes: the proxy holds the body back",
            srv.counts().bytes
        );
        cl.send(&body[1 << 20..]);
        let r = cl.read();
        assert_eq!(r.header("x-body-len"), Some((10u64 << 20).to_string().as_str()));
        assert_eq!(r.header("x-body-sum"), Some(sum(&body).as_str()));
    });
}

#[test]
fn a_10_mb_chunked_answer_arrives_intact_and_the_connection_stays_usable() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"GET /?s=10m&chunked=1 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
        assert_eq!(r.body.len(), 10 << 20);
        assert!(is_filler(&r.body));
        let r = cl.request(b"GET /?s=10m HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.header("content-length"), Some((10u64 << 20).to_string().as_str()));
        assert!(is_filler(&r.body));
    });
}

#[test]
fn a_body_that_pauses_reaches_the_client_up_to_the_pause() {
    // The server sends the head and 40,000 body bytes (more than a buffer), then pauses: what
    // it sent must reach the client at once, not be held back for the rest.
    each(|t| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().expect("accept");
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = std::io::Read::read(&mut c, &mut buf).expect("read request");
                assert!(n > 0, "request cut");
                got.extend_from_slice(&buf[..n]);
            }
            let mut first = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec();
            first.extend(std::iter::repeat_n(b'a', 40_000));
            c.write_all(&first).expect("first part");
            std::thread::sleep(Duration::from_millis(1500));
            let _ = c.write_all(&[b'b'; 60_000]);
            std::thread::sleep(Duration::from_millis(200));
        });
        let px = t.start(&listen(&format!(" server s1 {addr}\n")));
        let mut cl = px.client();
        cl.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        let start = Instant::now();
        let head = cl.read_one(true).expect("answer head");
        assert_eq!(head.status, 200);
        let first = cl.read_exact(40_000).expect("first part of the body");
        assert!(first.iter().all(|&b| b == b'a'));
        // Held back by `MSG_MORE`, it would leave after about 200 ms (the kernel's probe timer).
        assert!(
            start.elapsed() < Duration::from_millis(150),
            "the first part waited {:?}",
            start.elapsed()
        );
        let rest = cl.read_exact(60_000).expect("rest of the body");
        assert!(rest.iter().all(|&b| b == b'b'));
        server.join().expect("server thread");
    });
}

#[test]
fn large_bodies_both_ways_pass_within_bounded_memory() {
    // 64 MB each way; HAProxy peaks at about 16 MB resident. A proxy holding whole bodies would
    // exceed 64.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"GET /?s=64m HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.body.len(), 64 << 20);
        let up = vec![b'u'; 64 << 20];
        cl.send(
            format!(
                "POST /?bodyinfo=1 HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                up.len()
            )
            .as_bytes(),
        );
        cl.send(&up);
        assert_eq!(cl.read().header("x-body-len"), Some((64u64 << 20).to_string().as_str()));
        let peak = peak_rss_kb(px.proc.pid());
        assert!(peak < 40 << 10, "peak resident memory {peak} kB");
    });
}

#[test]
fn response_trailers_are_forwarded() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let r = px.client().request(b"GET /?s=10000&trailers=1 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
        assert_eq!(r.header("trailer"), Some("X-Trailer"));
        assert_eq!(r.body.len(), 10_000);
        assert_eq!(r.trailers.len(), 1);
        assert!(r.trailers[0].0.eq_ignore_ascii_case("x-trailer") && r.trailers[0].1 == "done");
    });
}

#[test]
fn request_trailers_are_forwarded() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let r = px.send(
            b"POST /?echo=all HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
        );
        let text = r.text().to_ascii_lowercase();
        assert!(text.ends_with("\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n"), "{text:?}");
    });
}

#[test]
fn a_close_delimited_answer_is_forwarded_and_the_client_connection_closed() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"GET /?s=3000&cl=none HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.body.len(), 3000);
        assert!(is_filler(&r.body));
        assert_eq!(r.header("connection"), Some("close"));
        assert!(!r.has("content-length") && !r.has("transfer-encoding"));
        assert!(cl.closed_within(Duration::from_secs(2)));
    });
}

#[test]
fn expect_100_continue_is_forwarded_and_the_servers_100_relayed() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        cl.send(b"POST /?echo=all HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
        let interim = cl.read_one(false).expect("interim answer");
        assert_eq!(interim.status, 100);
        cl.send(b"abc");
        let r = cl.read();
        assert_eq!(r.status, 200);
        assert_eq!(r.echoed().header("expect"), Some("100-continue"));
        assert!(r.text().ends_with("\r\n\r\nabc"));
    });
}

#[test]
fn with_http_buffer_request_the_proxy_answers_100_continue_itself() {
    // HAProxy sends 100 Continue before connecting, then removes `Expect` from the request.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " option http-buffer-request\n"));
        let mut cl = px.client();
        cl.send(b"POST /?echo=all&continue=0 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
        let interim = cl.read_one(false).expect("interim answer");
        assert_eq!(interim.status, 100);
        assert_eq!(srv.counts().conns, 0);
        cl.send(b"abc");
        let r = cl.read();
        assert!(!r.echoed().has("expect"));
        assert!(r.text().ends_with("\r\n\r\nabc"));
    });
}

#[test]
fn head_204_and_304_answers_have_no_body_and_keep_the_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"HEAD /?s=10 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((r.status, r.header("content-length")), (200, Some("10")));
        for code in [204, 304] {
            let r =
                cl.request(format!("GET /?c={code}&s=10 HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            assert_eq!(r.status, code);
            assert!(!r.has("content-length") && !r.has("transfer-encoding"));
        }
        // Had any body byte been sent, it would precede this answer.
        let r = cl.request(b"GET /?s=4 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((r.status, r.body.len()), (200, 4));
        assert_eq!(srv.counts().conns, 1);
    });
}

#[test]
fn interim_103_answers_are_forwarded() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let r = px.client().request(b"GET /?info=103&s=1 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.status, 200);
        assert_eq!(r.interim.len(), 1);
        assert_eq!(r.interim[0].status, 103);
        assert_eq!(r.interim[0].header("link"), Some("</style.css>; rel=preload"));
    });
}

const WS: &[u8] = b"GET /chat HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

#[test]
fn websocket_upgrade_becomes_a_tunnel_closed_by_timeout_tunnel() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout tunnel 400ms\n"));
        let mut cl = px.client();
        cl.send(WS);
        let r = cl.read_one(true).expect("101");
        assert_eq!(r.status, 101);
        assert_eq!(r.header("upgrade"), Some("websocket"));
        assert_eq!(r.header("sec-websocket-accept"), Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        for i in 0..3 {
            let msg = format!("\x00binary frame {i}\u{00ff}");
            cl.send(msg.as_bytes());
            assert_eq!(cl.read_exact(msg.len()).expect("echo"), msg.as_bytes());
        }
        // Idle: `timeout tunnel` (not `timeout client`, 5 s) ends it.
        let start = Instant::now();
        assert!(cl.closed_within(Duration::from_secs(3)));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(300), "closed after {took:?}");
    });
}

#[test]
fn websocket_upgrade_without_a_key_is_rejected() {
    // HAProxy 2.6 checks the handshake: no Sec-WebSocket-Key, 400.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let r = px.send(
            b"GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        );
        assert_eq!(r.status, 400);
        assert_eq!(srv.counts().conns, 0);
    });
}

#[test]
fn connect_is_forwarded_and_becomes_a_tunnel() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        cl.send(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
        let r = cl.read_one(true).expect("answer");
        assert_eq!((r.status, r.server()), (200, "s1"));
        let data = payload(100_000);
        let writer = {
            let mut s = cl.s.try_clone().expect("clone");
            let data = data.clone();
            std::thread::spawn(move || s.write_all(&data))
        };
        assert_eq!(cl.read_exact(data.len()).expect("echo"), data);
        writer.join().expect("writer").expect("write");
    });
}

#[test]
fn wait_for_body_answers_408_when_the_body_does_not_come_in_time() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&listen(&format!(
            " http-request wait-for-body time 100ms if {{ path /a }}\n\
             http-request wait-for-body time 100ms at-least 10 if {{ path /b }}\n server s1 {}\n",
            srv.addr()
        )));
        let mut seen = Vec::new();
        for (path, body) in [("/a", "x".repeat(20)), ("/b", "y".repeat(20))] {
            let mut cl = px.client();
            // 20 bytes of the 21 announced: `/a` waits for all of it, `/b` for 10 bytes only.
            let head =
                format!("POST {path}?echo=body HTTP/1.1\r\nHost: t\r\nContent-Length: 21\r\n\r\n");
            cl.send(head.as_bytes());
            cl.send(body.as_bytes());
            if path == "/b" {
                // Enough for `at-least`: the request goes on, and its last byte follows.
                cl.send(b"z");
            }
            let st = cl.read_one(false).map(|r| r.status).unwrap_or(0);
            seen.push((path, st));
        }
        seen
    });
}

#[test]
fn a_stalled_chunked_upload_gets_504_when_timeout_server_ends_it() {
    let srv = server("s1");
    // `timeout client` is longer: as HAProxy, the server's timer ends the stalled upload.
    let cfg = format!(
        "defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 600ms\n\
         frontend fe\n bind {{fe0}}\n default_backend be\n backend be\n server s1 {}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let mut cl = px.client();
        cl.send(b"POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
        let started = Instant::now();
        let status = cl.read_final(false).map(|r| r.status).unwrap_or(0);
        let waited = started.elapsed();
        (status, waited >= Duration::from_millis(500) && waited < Duration::from_millis(2500))
    });
}

#[test]
fn a_get_rewritten_to_put_keeps_its_body_and_the_server_connection_carries_on() {
    // `http-request set-method PUT` on a GET: the client gets the server's body (the method
    // the server got says it has one), and nothing more is read from the server for it: the
    // next request goes on the same server connection at once.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "global\n nbthread 1\n{}",
            one(&srv, " http-request set-method PUT if METH_GET\n")
        ));
        let mut c = px.client();
        let first = c.request(b"GET /?s=3000 HTTP/1.1\r\nHost: t\r\n\r\n");
        let second = c.request(b"GET /?s=5 HTTP/1.1\r\nHost: t\r\n\r\n");
        let conns = srv.counts().conns;
        assert_eq!((first.status, first.body.len()), (200, 3000));
        assert_eq!((second.status, second.body.len()), (200, 5));
        assert_eq!(conns, 1, "{}: one server connection", t.name());
        (first.body.len(), second.body.len(), conns)
    });
}

#[test]
fn a_head_rewritten_to_get_gets_no_body_and_the_server_connection_carries_on() {
    // `http-request set-method GET` on a HEAD: the server sends a body (sized, then chunked),
    // the client gets none, and the server's connection carries the next requests cleanly
    // (the body is read and dropped, not left in the connection for the next answer).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "global\n nbthread 1\n{}",
            one(&srv, " http-request set-method GET if METH_HEAD\n")
        ));
        let mut c = px.client();
        let sized = c.request(b"HEAD /?s=3000 HTTP/1.1\r\nHost: t\r\n\r\n");
        let chunked = c.request(b"HEAD /?s=70000&chunked=1 HTTP/1.1\r\nHost: t\r\n\r\n");
        let after = c.request(b"GET /?s=5 HTTP/1.1\r\nHost: t\r\n\r\n");
        let conns = srv.counts().conns;
        let again = px.client().request(b"GET /?s=7 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((sized.status, sized.body.len()), (200, 0));
        assert_eq!((chunked.status, chunked.body.len()), (200, 0));
        assert_eq!((after.status, after.body.len()), (200, 5));
        assert_eq!((again.status, again.body.len()), (200, 7));
        // The client's requests went on one server connection.
        assert_eq!(conns, 1);
        (sized.status, chunked.status, after.body.len(), again.body.len())
    });
}

#[test]
fn response_rules_read_the_response_body_they_waited_for() {
    // `res.body`, `res.body_len`, `res.body_size` after `http-response wait-for-body`: a
    // sized answer and a chunked one (read decoded), a deny on its content, and the size
    // announced by a body the rules did not wait for (as HAProxy counts what it has not read
    // yet).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&listen(&format!(
            " http-request set-var(txn.w) bool(1) if {{ path_beg /w }}\n\
             http-response wait-for-body time 1s if {{ var(txn.w) -m bool }}\n\
             http-response deny if {{ res.body -m sub secret }}\n\
             http-response set-header x-body \"%[res.body]\" if {{ var(txn.w) -m bool }}\n\
             http-response set-header x-len \"%[res.body_len]/%[res.body_size]\" if {{ var(txn.w) -m bool }}\n\
             http-response set-header x-size \"%[res.body_size]\"\n\
             server s1 {}\n",
            srv.addr()
        )));
        let mut seen = Vec::new();
        for (path, body) in [
            ("/w?echo=body", "hello body"),
            ("/w?echo=body&chunked=1", "hello chunks"),
            ("/w?echo=body", "a secret here"),
            ("/w?echo=body&chunked=1", "a secret here"),
        ] {
            let req = format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let r = px.send(req.as_bytes());
            let h = |n: &str| r.header(n).unwrap_or("-").to_string();
            let got = String::from_utf8_lossy(&r.body).into_owned();
            seen.push((path, r.status, h("x-body"), h("x-len"), got));
        }
        let r = px.get("/n?s=100000");
        let size = r.header("x-size").unwrap_or("-").to_string();
        seen.push(("/n", r.status, String::new(), size, r.body.len().to_string()));
        let got: Vec<(u16, &str, &str)> =
            seen.iter().map(|s| (s.1, s.2.as_str(), s.3.as_str())).collect();
        assert_eq!(
            got,
            [
                (200, "hello body", "10/10"),
                (200, "hello chunks", "12/12"),
                (502, "-", "-"),
                (502, "-", "-"),
                (200, "", "100000")
            ]
        );
        seen
    });
}
