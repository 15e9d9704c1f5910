//! HTTP/2 to servers (issue 16): `server ... proto h2` (prior knowledge), HTTP/1 and HTTP/2
//! clients translated for an HTTP/2 server and its answers translated back, bodies with and
//! without length, trailers both ways, interim answers, a connection shared by the
//! transactions of a worker, a stream reset by the server. Over TLS with `alpn h2`:
//! `e2e/tls.rs`.

use crate::h2client::{h2c, H2Req};
use crate::h2server::h2_server;
use crate::px::*;

/// One thread, so that every transaction may share one connection to the server.
fn config(addr: std::net::SocketAddr, extra: &str) -> String {
    format!(
        "global\n nbthread 1\n{DEFAULTS}listen px\n bind {{fe0}}\n{extra} server s1 {addr} proto h2\n"
    )
}

/// What the server described, without the connection number.
fn described(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.split_once(' ') {
            Some((c, rest)) if c.starts_with("conn=") => rest.to_string(),
            _ => l.to_string(),
        })
        .collect()
}

#[test]
fn http1_requests_reach_an_http2_server_and_its_answers_come_back_as_http1() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        let get = c.request(b"GET /a?x=1 HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\nConnection: keep-alive\r\nTE: trailers\r\n\r\n");
        let sized =
            c.request(b"POST /p HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello");
        let chunked = c.request(
            b"POST /c?trailers=1 HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\nx-check: 7\r\n\r\n",
        );
        let head = c.request(b"HEAD /h HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let empty = c.request(b"GET /e?s=0 HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let status = c.request(b"GET /e?status=404&sized=1 HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!(get.status, 200);
        assert!(get.text().contains("authority: example.com\n"), "{}", get.text());
        assert!(get.text().contains("x-a: 1\n") && get.text().contains("te: trailers\n"));
        assert!(!get.text().contains("connection"), "{}", get.text());
        assert!(sized.text().contains("body: hello\n"), "{}", sized.text());
        assert!(chunked.text().contains("body: hello\n"), "{}", chunked.text());
        assert!(chunked.text().contains("trailer x-check: 7\n"), "{}", chunked.text());
        // The server's trailers reach the HTTP/1 client after a chunked body.
        assert_eq!(chunked.header("transfer-encoding"), Some("chunked"));
        assert!(chunked.trailers.iter().any(|(n, v)| n == "grpc-status" && v == "0"));
        // (A HEADERS frame that ends the stream: Fulcrum says `content-length: 0`, HAProxy
        // 2.6 sends an empty chunked body.)
        assert!(empty.body.is_empty(), "{empty:?}");
        if !t.is_haproxy() {
            assert_eq!(empty.header("content-length"), Some("0"));
        }
        assert_eq!(
            (status.status, status.header("content-length")),
            (404, Some(status.body.len().to_string().as_str()))
        );
        // Every request went on the one connection.
        assert_eq!(srv.connections(), 1);
        (
            described(&get.text()),
            described(&sized.text()),
            described(&chunked.text()),
            chunked.trailers.clone(),
            (head.status, head.body.len()),
            (empty.status, status.status),
        )
    });
}

#[test]
fn http2_clients_reach_an_http2_server_on_one_shared_connection() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let reqs: Vec<H2Req> = (0..30)
            .map(|i| match i % 3 {
                0 => H2Req::get(&format!("/g{i}")),
                1 => H2Req::post(&format!("/p{i}"), b"data").header("content-length", "4"),
                _ => H2Req::post(&format!("/c{i}?trailers=1"), b"chunks").trailer("x-t", "1"),
            })
            .collect();
        let got = h2c(px.addr(), &reqs).expect("HTTP/2 exchange");
        let ok = got
            .iter()
            .enumerate()
            .filter(|(i, r)| {
                let text = r.text();
                let first = text.lines().next().unwrap_or("").to_string();
                let path_ok = first.contains(&format!("/{}{i}", ["g", "p", "c"][i % 3]));
                let body_ok = match i % 3 {
                    0 => text.contains("body: \n"),
                    1 => text.contains("body: data\n"),
                    _ => text.contains("body: chunks\n") && text.contains("trailer x-t: 1\n"),
                };
                let trailers_ok = i % 3 != 2 || r.trailers.iter().any(|(n, _)| n == "x-sum");
                r.status == 200 && path_ok && body_ok && trailers_ok
            })
            .count();
        let statuses: Vec<u16> = got.iter().map(|r| r.status).collect();
        assert_eq!(ok, 30, "{statuses:?}");
        // Fulcrum's streams share one connection (HAProxy 2.6 opens one per stream that
        // arrives before its first connection is up: 30 here).
        if !t.is_haproxy() {
            let again = h2c(px.addr(), &[H2Req::get("/again")]).expect("exchange");
            assert_eq!(again[0].header("x-conn"), Some("1"));
            assert_eq!(srv.connections(), 1);
        }
        ok
    });
}

#[test]
fn an_answer_a_rule_waits_for_comes_whole_from_an_http2_server() {
    // `http-response wait-for-body`: the server's stream keeps its data until it is forwarded
    // (its window closed meanwhile), for HTTP/1 and HTTP/2 clients, sized or not, trailers too.
    each(|t| {
        let srv = h2_server();
        let rules = " http-response wait-for-body time 2s\n http-response set-header x-after 1\n";
        let px = t.start(&config(srv.addr, rules));
        let h1 =
            px.client().request(b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\ndata");
        let h1 = (
            h1.status,
            h1.header("x-after").map(str::to_string),
            h1.text().contains("body: data\n"),
        );
        let reqs = [
            H2Req::post("/b", b"data").header("content-length", "4"),
            H2Req::post("/c?trailers=1", b"chunks").trailer("x-t", "1"),
        ];
        let got = h2c(px.addr(), &reqs).expect("HTTP/2 exchange");
        let mut all = vec![(h1, true)];
        for (r, want) in got.iter().zip(["body: data\n", "body: chunks\n"]) {
            let trailers = r.trailers.iter().any(|(n, _)| n == "x-sum") == want.contains("chunks");
            let h = (r.status, r.header("x-after").map(str::to_string), r.text().contains(want));
            all.push((h, trailers));
        }
        assert_eq!(all[0], ((200, Some("1".to_string()), true), true));
        all
    });
}

#[test]
fn an_interim_answer_and_a_reset_stream_come_back_to_an_http1_client() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        let cont =
            c.request(b"POST /x?continue=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok");
        let interim: Vec<u16> = cont.interim.iter().map(|r| r.status).collect();
        // A stream the server resets: 502, and the connection serves the next request.
        let reset = px.client().request(b"GET /r?reset=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        let after = px.client().request(b"GET /after HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(cont.status, 200);
        assert_eq!(reset.status, 502);
        assert_eq!(after.status, 200);
        // Fulcrum keeps the connection (the reset was the stream's); HAProxy 2.6 opens another.
        if !t.is_haproxy() {
            assert_eq!(after.header("x-conn"), Some("1"));
        }
        (cont.status, interim, reset.status, after.status)
    });
}

#[test]
fn a_server_that_sends_goaway_gets_a_new_connection() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        // The server answers, then says GOAWAY: the next request opens a new connection.
        let first = px.client().request(b"GET /1?goaway=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        let mut statuses = Vec::new();
        let moved = eventually(std::time::Duration::from_secs(3), || {
            let r = px.client().request(b"GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
            statuses.push(r.status);
            r.header("x-conn") == Some("2")
        });
        assert_eq!(first.header("x-conn"), Some("1"));
        assert!(moved);
        // No request is lost meanwhile.
        assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
        (first.status, moved)
    });
}

#[test]
fn http_health_checks_speak_http2_to_a_proto_h2_server() {
    // `proto h2` makes the checks speak HTTP/2 too (HAProxy: `check-proto` defaults to the
    // server's protocol); `check-proto h1` keeps them in HTTP/1.1, which an HTTP/2-only server
    // cannot answer: that server goes down at its first check.
    each(|t| {
        let srv = h2_server();
        let a = srv.addr;
        let px = t.start(&format!(
            "global\n nbthread 1\n{DEFAULTS}frontend fe\n bind {{fe0}}\n bind {{fe1}}\n\
             use_backend h1chk if {{ dst_port {{port1}} }}\n default_backend h2chk\n\
             backend h2chk\n option httpchk GET /health\n http-check expect status 200\n\
             server s1 {a} proto h2 check inter 100ms fall 1 rise 1\n\
             backend h1chk\n option httpchk GET /health\n\
             server s1 {a} proto h2 check-proto h1 check inter 100ms fall 1 rise 1\n"
        ));
        let checked = eventually(std::time::Duration::from_secs(5), || srv.health_checks() >= 3);
        let down = eventually(std::time::Duration::from_secs(5), || {
            px.client_to(1).request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n").status == 503
        });
        let up = px.client().request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(checked, "{} checks over HTTP/2", srv.health_checks());
        assert!(down);
        assert_eq!(up.status, 200);
        (checked, down, up.status)
    });
}

#[test]
fn a_websocket_upgrade_to_a_proto_h2_server_goes_over_http1() {
    // `ws h1`: the upgrade opens an HTTP/1.1 connection to the server (here an HTTP/1-only
    // one, so that only that path can answer), whatever its `proto h2`.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}listen px\n bind {{fe0}}\n server s1 {} proto h2 ws h1\n",
            srv.addr()
        ));
        let mut c = px.client();
        c.send(b"GET /chat HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
        let r = c.read_one(false).expect("101");
        c.send(b"echo me");
        let back = c.read_exact(7);
        assert_eq!(r.status, 101);
        assert_eq!(back.as_deref(), Ok(&b"echo me"[..]));
        (r.status, back)
    });
}

#[test]
fn an_upload_that_pauses_does_not_hold_back_the_others_on_the_shared_connection() {
    // One request's body stops half-way (a streaming client between messages) while another
    // sends 200 kB, more than the connection's 64 kB window: the second goes through (a
    // waiting stream must not keep the connection's window for itself).
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let mut paused = px.client();
        paused.send(
            b"POST /paused HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        );
        // The paused request is on the server's connection before the big one starts.
        assert!(eventually(std::time::Duration::from_secs(3), || srv.requests() >= 1));
        let body = vec![b'x'; 200_000];
        let mut req = b"POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n".to_vec();
        req.extend_from_slice(&body);
        let big = px.client().request(&req);
        let text = big.text();
        assert_eq!(big.status, 200, "{}", &text[..text.len().min(200)]);
        assert!(text.contains(&format!("body: {}\n", "x".repeat(200_000))));
        big.status
    });
}

#[test]
fn a_websocket_upgrade_goes_as_an_extended_connect_to_an_http2_server() {
    // `ws auto` with `proto h2` (and `ws h2`): the HTTP/1.1 upgrade becomes an extended
    // CONNECT (RFC 8441) on the shared connection; its 200 comes back as the 101 the client
    // expects, with the accept value its key asks for; then the stream carries the bytes.
    each(|t| {
        let srv = h2_server();
        let a = srv.addr;
        let px = t.start(&format!(
            "global\n nbthread 1\n{DEFAULTS}listen auto\n bind {{fe0}}\n server s1 {a} proto h2\n\
             listen h2\n bind {{fe1}}\n server s1 {a} proto h2 ws h2\n"
        ));
        let mut got = Vec::new();
        for i in 0..2 {
            let mut c = px.client_to(i);
            c.send(b"GET /chat HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
            let r = c.read_one(false).expect("101");
            c.send(b"frames");
            let back = c.read_exact(6);
            assert_eq!(r.status, 101);
            assert_eq!(r.header("sec-websocket-accept"), Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
            assert_eq!(r.header("x-protocol"), Some("websocket"));
            assert_eq!(back.as_deref(), Ok(&b"frames"[..]));
            got.push((r.status, back));
        }
        got
    });
}

#[test]
fn http_reuse_never_gives_each_client_its_own_http2_connection() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, " http-reuse never\n"));
        let conns: Vec<Option<String>> = (0..3)
            .map(|i| {
                let r =
                    px.client().request(format!("GET /{i} HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes());
                assert_eq!(r.status, 200);
                r.header("x-conn").map(str::to_string)
            })
            .collect();
        assert_eq!(conns, vec![Some("1".into()), Some("2".into()), Some("3".into())]);
        conns
    });
}

#[test]
fn an_early_answer_during_a_large_upload_reaches_the_client() {
    // The server answers 413 before reading the body, then resets the stream with NO_ERROR
    // (RFC 9113 8.1): the answer is the client's, not a 502 for the upload it interrupted.
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        let len = 4_000_000;
        c.send(
            format!("POST /up?early=1 HTTP/1.1\r\nHost: h\r\nContent-Length: {len}\r\n\r\n")
                .as_bytes(),
        );
        let writer = {
            let mut s = c.s.try_clone().expect("clone");
            std::thread::spawn(move || {
                let chunk = vec![b'u'; 64 * 1024];
                let mut sent = 0;
                while sent < len {
                    if std::io::Write::write_all(&mut s, &chunk).is_err() {
                        break;
                    }
                    sent += chunk.len();
                }
            })
        };
        let r = c.read_final(false).expect("an answer");
        drop(c);
        writer.join().expect("writer");
        assert_eq!((r.status, r.text()), (413, "early\n".to_string()));
        // The shared connection still carries the next request.
        let next = px.client().request(b"GET /after HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(next.status, 200);
        (r.status, r.text(), next.status)
    });
}

#[test]
fn options_asterisk_and_a_request_without_host_get_a_scheme_and_an_authority() {
    // HTTP/2 wants `:scheme` on these (RFC 9113 8.3.1): `OPTIONS *` keeps its Host as
    // `:authority` and `*` as `:path`; an HTTP/1.0 request without Host gets one.
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let star = px.client().request(b"OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let old = px.client().request(b"GET /old HTTP/1.0\r\n\r\n");
        assert_eq!(star.status, 200, "{}", star.text());
        assert!(star.text().contains("OPTIONS *\n"), "{}", star.text());
        assert!(star.text().contains("authority: example.com\n"), "{}", star.text());
        assert_eq!(old.status, 200, "{}", old.text());
        assert!(old.text().contains("GET /old\n"), "{}", old.text());
        (star.status, old.status)
    });
}

#[test]
fn targets_and_authorities_reach_an_http2_server_as_from_the_parsed_head() {
    // The request goes to an HTTP/2 server from the head the transaction parsed (not from its
    // HTTP/1 bytes parsed again): the path and query, the authority, a Host rewritten by a
    // rule, and an HTTP/1 client's absolute-form target all arrive as HAProxy sends them.
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(
            srv.addr,
            " http-request set-header host other.example if { path /rewritten }\n",
        ));
        let h2 =
            h2c(px.addr(), &[H2Req::get("/q?a=1&b"), H2Req::get("/rewritten"), H2Req::get("/?x")])
                .expect("HTTP/2 exchange");
        let abs = px
            .client()
            .request(b"GET http://example.com/abs?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let bare =
            px.client().request(b"GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n");
        let moved = px
            .client()
            .request(b"GET http://example.com/rewritten?k HTTP/1.1\r\nHost: example.com\r\n\r\n");
        // The proxy's own address (the HTTP/2 client's `:authority`) differs between runs.
        let me = px.addr().to_string();
        let lines = |text: &str| -> Vec<String> {
            described(text)
                .into_iter()
                .filter(|l| !l.contains(':') || l.starts_with("authority:"))
                .map(|l| l.replace(&me, "PROXY"))
                .collect()
        };
        let got: Vec<(u16, Vec<String>)> = h2
            .iter()
            .map(|r| (r.status, lines(&r.text())))
            .chain([&abs, &bare, &moved].iter().map(|r| (r.status, lines(&r.text()))))
            .collect();
        for (status, l) in &got {
            assert_eq!(*status, 200, "{l:?}");
        }
        assert!(got[0].1.iter().any(|l| l.ends_with(" /q?a=1&b")), "{got:?}");
        assert!(got[3].1.iter().any(|l| l.ends_with(" /abs?x=1")), "{got:?}");
        assert!(got[3].1.contains(&"authority: example.com".to_string()), "{got:?}");
        // `set-header host` on a request whose target names its authority: the authority
        // follows (HAProxy's `http_update_authority`).
        assert!(got[1].1.contains(&"authority: other.example".to_string()), "{got:?}");
        assert!(got[5].1.contains(&"authority: other.example".to_string()), "{got:?}");
        got
    });
}

/// A one-shot HTTP/2 server written frame by frame: it takes one connection, waits for the
/// request's HEADERS, answers `200` with `body`, says GOAWAY and closes at once (without
/// reading what the proxy sends after, so the proxy may see a reset).
fn answer_then_close(body: &'static [u8]) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let frame = |kind: u8, flags: u8, id: u32, payload: &[u8]| {
            let n = payload.len();
            let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(payload);
            f
        };
        // Its SETTINGS; then the proxy's preface (24 bytes) and frames until a HEADERS one.
        if s.write_all(&frame(4, 0, 0, &[])).is_err() {
            return;
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let has_headers = |b: &[u8]| {
            let mut p = 24;
            while p + 9 <= b.len() {
                let len = (b[p] as usize) << 16 | (b[p + 1] as usize) << 8 | b[p + 2] as usize;
                if b[p + 3] == 1 {
                    return true;
                }
                p += 9 + len;
            }
            false
        };
        while !has_headers(&got) {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let mut out = frame(4, 1, 0, &[]);
        out.extend(frame(1, 4, 1, &[0x88])); // :status 200 (static table entry 8)
        out.extend(frame(0, 1, 1, body));
        out.extend(frame(7, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
        let _ = s.write_all(&out);
    });
    addr
}

#[test]
fn a_response_the_server_sent_just_before_closing_reaches_the_client() {
    // The whole response, GOAWAY and the close may arrive in one read, before the transaction
    // looked at its stream: the response is still the client's.
    each(|t| {
        let mut got = Vec::new();
        for _ in 0..3 {
            let px = t.start(&config(answer_then_close(b"all of it"), ""));
            let r = px.client().request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
            got.push((r.status, r.text()));
        }
        assert!(got.iter().all(|(s, b)| *s == 200 && b == "all of it"), "{got:?}");
        got
    });
}

/// Between two HTTP/2 peers a body moves as data and trailers (no HTTP/1 chunks on the way):
/// bodies many windows long go both ways whole, in order, at the pace of each side's window,
/// with their trailers; a sized one ends at its length.
#[test]
fn large_bodies_and_their_trailers_go_whole_between_http2_peers() {
    each(|t| {
        let srv = h2_server();
        let px = t.start(&config(srv.addr, ""));
        let big: Vec<u8> = (0..700_000u32).map(|i| b'a' + (i % 23) as u8).collect();
        let reqs = [
            H2Req::post("/up?trailers=1", &big).trailer("x-end", "up"),
            H2Req::post("/sized", &big[..300_000]).header("content-length", "300000"),
            H2Req::get("/down?s=900000&trailers=1"),
            H2Req::get("/down-sized?s=500000&sized=1"),
        ];
        let got = h2c(px.addr(), &reqs).expect("HTTP/2 exchange");
        let up = got[0].text();
        let echoed = up.split_once("body: ").map(|(_, b)| b).unwrap_or("");
        assert!(echoed.as_bytes().starts_with(&big), "{}", &up[..200]);
        assert!(up.contains("\ntrailer x-end: up\n"), "{}", &up[up.len() - 200..]);
        assert!(got[0].trailers.iter().any(|(n, v)| n == "grpc-status" && v == "0"));
        let sized = got[1].text();
        let echoed = sized.split_once("body: ").map(|(_, b)| b).unwrap_or("");
        assert_eq!(echoed.trim_end().len(), 300_000);
        let want: Vec<u8> = (0..900_000usize).map(|i| b'a' + (i % 26) as u8).collect();
        assert!(got[2].body == want, "{} bytes", got[2].body.len());
        assert!(got[2].trailers.iter().any(|(n, v)| n == "x-sum" && v == "42"));
        assert_eq!((got[3].body.len(), got[3].header("content-length")), (500_000, Some("500000")));
        got.iter().map(|r| (r.status, r.body.len(), r.trailers.clone())).collect::<Vec<_>>()
    });
}
