//! Connection management: keep-alive and its timeouts, pipelining, HTTP/1.0, `Connection`
//! handling, the close options, and server-side connection reuse.

use std::time::{Duration, Instant};

use crate::px::*;

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";
const ECHO: &[u8] = b"GET /?echo=1 HTTP/1.1\r\nHost: t\r\n\r\n";

fn one(srv: &Running, lines: &str) -> String {
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

/// HAProxy's 408 page (sent as it is stored, header names capitalised).
const PAGE_408: &str = "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n";

#[test]
fn keep_alive_serves_five_requests_on_one_client_and_one_server_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        for i in 0..5 {
            let r = cl.request(format!("GET /?s={i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            assert_eq!((r.status, r.body.len()), (200, i));
            assert_eq!(r.header("connection"), None);
        }
        let c = srv.counts();
        assert_eq!((c.conns, c.requests), (1, 5));
        c.requests
    });
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let mut batch = Vec::new();
        for i in 0..4 {
            batch.extend_from_slice(
                format!("GET /?s={i}&c={} HTTP/1.1\r\nHost: t\r\n\r\n", 200 + i).as_bytes(),
            );
        }
        batch.extend_from_slice(
            b"POST /?c=201&echo=body HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        );
        batch.extend_from_slice(b"HEAD /?s=7 HTTP/1.1\r\nHost: t\r\n\r\n");
        batch.extend_from_slice(b"GET /?s=9 HTTP/1.1\r\nHost: t\r\n\r\n");
        cl.send(&batch);
        let mut got = Vec::new();
        for i in 0..4 {
            let r = cl.read();
            assert_eq!((r.status, r.body.len()), (200 + i as u16, i));
            got.push(r.status);
        }
        let r = cl.read();
        assert_eq!((r.status, r.text().as_str()), (201, "hello"));
        let r = cl.read_final(true).expect("HEAD answer");
        assert_eq!((r.status, r.header("content-length")), (200, Some("7")));
        let r = cl.read();
        assert_eq!(r.body.len(), 9);
        got
    });
}

#[test]
fn timeout_http_keep_alive_closes_an_idle_client_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-keep-alive 300ms\n"));
        let mut cl = px.client();
        assert_eq!(cl.request(GET).status, 200);
        let start = Instant::now();
        assert!(cl.closed_within(Duration::from_secs(3)), "idle connection not closed");
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(250), "closed after {took:?}");
        assert!(cl.pending().is_empty(), "closed silently: {}", show(cl.pending()));
    });
}

#[test]
fn timeout_http_request_answers_408_to_an_incomplete_head() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-request 300ms\n timeout http-keep-alive 1s\n"));
        let mut cl = px.client();
        let start = Instant::now();
        cl.send(b"GET / HTTP/1.1\r\nHo");
        let r = cl.read();
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "{took:?}");
        assert_eq!((r.status, r.reason.as_str()), (408, "Request Time-out"));
        assert_eq!(r.text(), PAGE_408);
        assert_eq!(r.header("connection"), Some("close"));
        assert!(cl.closed_within(Duration::from_secs(2)));
        assert_eq!(srv.counts().conns, 0);
        r.summary(&["content-length", "cache-control", "connection", "content-type"])
    });
}

#[test]
fn timeout_http_request_answers_408_to_a_connection_that_sends_nothing() {
    // Surprise: HAProxy 2.6 answers 408 even when not one byte arrived (no `http-ignore-probes`).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-request 200ms\n"));
        let mut cl = px.client();
        let r = cl.read();
        assert_eq!(r.status, 408);
        assert!(cl.closed_within(Duration::from_secs(2)));
    });
}

#[test]
fn timeout_http_request_also_bounds_a_second_request_on_a_kept_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-request 300ms\n timeout http-keep-alive 2s\n"));
        let mut cl = px.client();
        assert_eq!(cl.request(GET).status, 200);
        std::thread::sleep(Duration::from_millis(100));
        let start = Instant::now();
        cl.send(b"GET / HT");
        let r = cl.read();
        assert_eq!(r.status, 408);
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(2), "{took:?}");
    });
}

/// A slow client: a head in pieces with pauses longer than a session waits before it rests
/// (its bytes so far are kept while it rests), served whole; then a second head that stops
/// half-way gets its 408 when `timeout http-request` has run from its first byte, not from
/// its last piece.
#[test]
fn a_head_sent_in_slow_pieces_is_served_and_timed_from_its_first_byte() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-request 600ms\n timeout http-keep-alive 2s\n"));
        let mut cl = px.client();
        let pieces: [&[u8]; 4] =
            [b"GET /?s=3 HT", b"TP/1.1\r\nHo", b"st: t\r\nX-A: 1\r\n", b"\r\n"];
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            cl.send(piece);
        }
        let r = cl.read();
        assert_eq!((r.status, r.body.len()), (200, 3));
        let start = Instant::now();
        cl.send(b"GET / HTTP/1.1\r\n");
        std::thread::sleep(Duration::from_millis(300));
        cl.send(b"Host: t\r\n");
        let r = cl.read();
        let took = start.elapsed();
        assert_eq!(r.status, 408);
        assert!(
            took >= Duration::from_millis(550) && took < Duration::from_millis(850),
            "{took:?}"
        );
        assert_eq!(srv.counts().requests, 1);
        (r.status, srv.counts().requests)
    });
}

#[test]
fn http10_without_keep_alive_is_answered_with_close_but_the_server_side_stays_keep_alive() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"GET /?echo=1 HTTP/1.0\r\n\r\n");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(cl.closed_within(Duration::from_secs(2)));
        // HAProxy asks the server for keep-alive, in HTTP/1.0 terms.
        let head = r.echoed();
        assert_eq!(head.version, "HTTP/1.0");
        assert_eq!(head.header("connection"), Some("keep-alive"));
        head
    });
}

#[test]
fn http10_with_keep_alive_stays_open() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        for _ in 0..3 {
            let r = cl.request(b"GET /?echo=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
            assert_eq!(r.status, 200);
            assert_eq!(r.header("connection"), Some("keep-alive"));
            assert_eq!(r.echoed().header("connection"), Some("keep-alive"));
        }
        assert_eq!(srv.counts().conns, 1);
    });
}

#[test]
fn connection_close_from_the_client_closes_after_the_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        let r = cl.request(b"GET /?echo=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(cl.closed_within(Duration::from_secs(2)));
        // The close token is consumed: the server connection may stay alive.
        assert_eq!(r.echoed().header("connection"), None);
        r.echoed()
    });
}

#[test]
fn hop_by_hop_headers_are_removed_where_haproxy_passes_them() {
    // Deliberate difference (issue 3: "hop-by-hop headers are removed"): Fulcrum removes
    // `Connection`, the headers it names, `Keep-Alive`, `Proxy-Connection`, `TE` and a `Upgrade`
    // that is not an upgrade. HAProxy 2.6 only removes the `keep-alive`/`close` tokens of
    // `Connection` and passes everything else on.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let r = px.send(
            b"GET /?echo=1 HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\n\
              Keep-Alive: 300\r\nProxy-Connection: x\r\nTE: trailers\r\nUpgrade: foo\r\n\r\n",
        );
        let head = r.echoed();
        let want: &[(&str, &str)] = if t.is_haproxy() {
            &[
                ("host", "t"),
                ("connection", "X-A"),
                ("x-a", "1"),
                ("keep-alive", "300"),
                ("proxy-connection", "x"),
                ("te", "trailers"),
                ("upgrade", "foo"),
            ]
        } else {
            // TE's `trailers` token is passed on, as HAProxy does.
            &[("host", "t"), ("te", "trailers")]
        };
        let want: Vec<(String, String)> =
            want.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(head.headers, want);
        r.status
    });
}

#[test]
fn option_http_server_close_uses_a_new_server_connection_per_request() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " option http-server-close\n"));
        let mut cl = px.client();
        for _ in 0..3 {
            let r = cl.request(ECHO);
            assert_eq!(r.header("connection"), None, "the client side stays keep-alive");
            assert_eq!(r.echoed().header("connection"), Some("close"));
        }
        assert!(!cl.closed_within(Duration::from_millis(100)));
        assert_eq!(srv.counts().conns, 3);
    });
}

#[test]
fn option_httpclose_closes_both_sides() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " option httpclose\n"));
        let mut cl = px.client();
        let r = cl.request(ECHO);
        assert_eq!(r.header("connection"), Some("close"));
        assert_eq!(r.echoed().header("connection"), Some("close"));
        assert!(cl.closed_within(Duration::from_secs(2)));
        assert!(eventually(Duration::from_secs(2), || srv.counts().open() == 0));
    });
}

/// One thread: which idle connections a request may take is then decided by the reuse mode
/// alone (with more threads, a thread also takes idle connections over from the others' pools).
fn one_thread(srv: &Running, lines: &str) -> String {
    format!("global\n nbthread 1\n{}", one(srv, lines))
}

/// Client A sends one request and leaves; then client B sends one. Returns the server's counts.
fn two_clients(px: &Px, srv: &Running) -> Counts {
    let mut a = px.client();
    assert_eq!(a.request(GET).status, 200);
    drop(a);
    // A's server connection becomes idle (or is closed) once the proxy has seen A leave, which
    // nothing observable from here tells: a short pause.
    std::thread::sleep(Duration::from_millis(100));
    let mut b = px.client();
    assert_eq!(b.request(GET).status, 200);
    let c = srv.counts();
    drop(b);
    c
}

#[test]
fn http_reuse_safe_opens_a_new_connection_for_a_first_request() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one_thread(&srv, " http-reuse safe\n"));
        let c = two_clients(&px, &srv);
        assert_eq!(c.conns, 2, "{c:?}");
    });
}

#[test]
fn http_reuse_always_sends_a_first_request_on_an_idle_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one_thread(&srv, " http-reuse always\n"));
        let c = two_clients(&px, &srv);
        assert_eq!(c.conns, 1, "{c:?}");
    });
}

#[test]
fn http_reuse_never_keeps_server_connections_private_to_their_client() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one_thread(&srv, " http-reuse never\n"));
        let mut a = px.client();
        for _ in 0..3 {
            assert_eq!(a.request(GET).status, 200);
        }
        assert_eq!(srv.counts().conns, 1, "one server connection for the client's requests");
        drop(a);
        // Private: it goes away with its client instead of waiting in an idle pool.
        assert!(eventually(Duration::from_secs(2), || srv.counts().open() == 0));
        let c = two_clients(&px, &srv);
        assert_eq!(c.conns, 3, "{c:?}");
    });
}

#[test]
fn pool_max_conn_0_keeps_no_idle_server_connection() {
    // Surprise: with no idle pool, even one client's successive requests each get a new server
    // connection.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&listen(&format!(" server s1 {} pool-max-conn 0\n", srv.addr())));
        let mut cl = px.client();
        for _ in 0..3 {
            let r = cl.request(ECHO);
            assert_eq!(r.echoed().header("connection"), None);
        }
        assert_eq!(srv.counts().conns, 3);
        assert!(eventually(Duration::from_secs(2), || srv.counts().open() == 0));
    });
}

#[test]
fn a_server_closing_an_idle_connection_is_not_reused() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        assert_eq!(cl.request(b"GET /?drop=1 HTTP/1.1\r\nHost: t\r\n\r\n").status, 200);
        // The server closed its side silently; wait until the proxy saw it.
        assert!(eventually(Duration::from_secs(2), || srv.counts().open() == 0));
        assert_eq!(cl.request(GET).status, 200);
        assert_eq!(srv.counts().conns, 2);
    });
}

#[test]
fn a_reused_connection_closed_by_the_server_is_retried_on_a_fresh_one() {
    // Deliberate difference (issue 3: "a request that fails on a reused connection before any
    // response byte is retried on a fresh one"): Fulcrum sends the request again on a new
    // connection. HAProxy 2.6 closes the client connection without a word (unless `retry-on
    // empty-response`).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        let mut cl = px.client();
        assert_eq!(cl.request(b"GET /?drop=next HTTP/1.1\r\nHost: t\r\n\r\n").status, 200);
        cl.send(GET);
        if t.is_haproxy() {
            assert!(cl.read_final(false).is_err(), "no answer");
            assert!(cl.closed_within(Duration::from_secs(2)));
            assert_eq!(srv.counts().conns, 1, "no retry");
        } else {
            let r = cl.read_final(false).expect("answer after the retry");
            assert_eq!(r.status, 200);
            assert_eq!(srv.counts().conns, 2, "one retry on a new connection");
        }
    });
}

#[test]
fn retry_on_empty_response_retries_on_a_new_connection() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " retries 1\n retry-on empty-response\n"));
        let mut cl = px.client();
        assert_eq!(cl.request(b"GET /?drop=next HTTP/1.1\r\nHost: t\r\n\r\n").status, 200);
        let r = cl.request(GET);
        assert_eq!((r.status, r.server()), (200, "s1"));
        assert_eq!(srv.counts().conns, 2);
    });
}

#[test]
fn idle_server_connections_are_capped_by_a_share_of_maxconn() {
    // Each client's first request gets a new server connection (`http-reuse safe`), which then
    // idles in the pool. Fulcrum keeps at most maxconn / 2 / nbthread of them (HAProxy bounds
    // them by `tune.pool-high-fd-ratio`, a share of its descriptors); the rest are closed.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "global\n maxconn 8\n nbthread 1\n{DEFAULTS}listen px\n bind {{fe0}}\n server s1 {}\n",
            srv.addr()
        ));
        for _ in 0..8 {
            let r = px.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            assert_eq!(r.status, 200);
        }
        assert_eq!(srv.counts().conns, 8, "a new server connection per first request");
        if !t.is_haproxy() {
            assert!(
                eventually(Duration::from_secs(2), || srv.counts().open() <= 4),
                "{:?}",
                srv.counts()
            );
        }
    });
}

#[test]
fn a_connection_idle_for_a_while_is_served_again_with_its_session_state() {
    // Fulcrum dissolves a session idle for more than 20 ms into a small resting state and
    // rebuilds it on the next request: nothing observable may change (server connection,
    // `sess.` variables, keep-alive timeout).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " timeout http-keep-alive 1500ms\n\
             http-request set-var(sess.first) path if !{ var(sess.first) -m found }\n\
             http-response set-header X-First %[var(sess.first)]\n",
        ));
        let mut cl = px.client();
        assert_eq!(
            cl.request(b"GET /one HTTP/1.1\r\nHost: t\r\n\r\n").header("x-first"),
            Some("/one")
        );
        std::thread::sleep(Duration::from_millis(500));
        let r = cl.request(b"GET /two HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((r.status, r.header("x-first")), (200, Some("/one")));
        assert_eq!(srv.counts().conns, 1, "the same server connection");
        // Resting does not extend `timeout http-keep-alive`.
        assert!(cl.closed_within(Duration::from_secs(3)));
    });
}

#[test]
fn a_soft_stop_closes_idle_keep_alive_connections() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " timeout http-keep-alive 30s\n"));
        // One idle for long (in Fulcrum: resting), one just answered.
        let mut long = px.client();
        assert_eq!(long.request(GET).status, 200);
        std::thread::sleep(Duration::from_millis(300));
        let mut idle = px.client();
        assert_eq!(idle.request(GET).status, 200);
        px.proc.signal(libc::SIGUSR1);
        assert!(idle.closed_within(Duration::from_secs(3)), "the idle connection is closed");
        assert!(long.closed_within(Duration::from_secs(3)), "the long idle one too");
    });
}

#[test]
fn answers_made_by_the_proxy_keep_the_connection_when_the_request_was_read_whole() {
    // As HAProxy 2.6: deny, return, redirect, tarpit and 503 answers leave the connection
    // usable when the request (body included) is all there and the client did not ask to
    // close; a redirect of a request with a body, a body still on its way, `Connection:
    // close` and a plain HTTP/1.0 request close it.
    each(|t| {
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             http-request return status 200 content-type text/plain string hi if {{ path /ret }}\n\
             http-request deny if {{ path /deny }}\n\
             http-request redirect location /x if {{ path /redir }}\n\
             http-request tarpit if {{ path /tarpit }}\n\
             default_backend nosrv\nbackend nosrv\n"
        ));
        let mut seen = Vec::new();
        for path in ["/ret", "/deny", "/redir", "/tarpit", "/nosrv"] {
            for req in [
                format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"),
                format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"),
                format!(
                    "POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                     3\r\nabc\r\n0\r\n\r\n"
                ),
                format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"),
                format!("GET {path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
                format!("GET {path} HTTP/1.0\r\n\r\n"),
                format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
            ] {
                let mut cl = px.client();
                let r = cl.request(req.as_bytes());
                // Still open: the next request is answered on the same connection.
                cl.send_lossy(b"GET /ret HTTP/1.1\r\nHost: t\r\n\r\n");
                let open = cl.read_final(false).is_ok_and(|r| r.status == 200);
                let conn = r.header("connection").map(str::to_ascii_lowercase);
                seen.push((show(req.as_bytes()), r.status, conn, open));
            }
        }
        seen
    });
}

#[test]
fn http_reuse_aggressive_gives_a_first_request_only_a_proven_connection() {
    // The receiver tells whether a request is the first of its (server) connection.
    each(|t| {
        let px = t.start(&format!(
            "global\n nbthread 1\n{DEFAULTS}listen sender\n bind {{fe0}}\n http-reuse aggressive\n server s 127.0.0.1:{{port1}}\n\
             listen receiver\n bind {{fe1}}\n http-request return status 200\n\
             http-after-response set-header X-First %[http_first_req]\n"
        ));
        let first = |cl: &mut Client| {
            cl.request(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                .header("x-first")
                .unwrap_or("")
                .to_string()
        };
        let mut seen = Vec::new();
        let mut a = px.client();
        seen.push(first(&mut a));
        drop(a);
        // Its connection carried one request only: not proven, a new one is opened.
        let mut b = px.client();
        seen.push(first(&mut b));
        seen.push(first(&mut b));
        drop(b);
        // That one carried two: the next client's first request may take it.
        let mut c = px.client();
        seen.push(first(&mut c));
        seen
    });
}

#[test]
fn an_idle_connection_is_taken_over_from_another_thread() {
    // Two threads, one idle connection allowed (`pool-max-conn 1`): whichever thread accepts a
    // client, its second request (`http-reuse safe`) finds the idle connection, in the other
    // thread's pool when it is there (HAProxy's takeover). The receiver tells whether a request
    // is the first of its connection. (Which connection stays idle may change: a client's
    // first connection can be put back before the previous client's returns.)
    each(|t| {
        let px = t.start(&format!(
            "global\n nbthread 2\n{DEFAULTS}listen sender\n bind {{fe0}}\n http-reuse safe\n\
             server s 127.0.0.1:{{port1}} pool-max-conn 1\n\
             listen receiver\n bind {{fe1}}\n http-request return status 200\n\
             http-after-response set-header X-First %[http_first_req]\n"
        ));
        let ask = |cl: &mut Client| {
            let r = cl.request(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
            r.header("x-first").unwrap_or("").to_string()
        };
        let mut a = px.client();
        ask(&mut a);
        drop(a);
        let mut seen = Vec::new();
        for _ in 0..8 {
            let mut cl = px.client();
            // A first request opens a connection of its own.
            let first = ask(&mut cl);
            let again = ask(&mut cl);
            seen.push((first, again));
        }
        let expected = ("1".to_string(), "0".to_string());
        assert!(seen.iter().all(|s| *s == expected), "{seen:?}");
        seen
    });
}

#[test]
fn a_server_connection_opened_with_a_proxy_header_is_not_shared_with_another_client() {
    // The receiver answers with the client address the PROXY header gave it and the unique
    // id TLV; the sender tells which client port it served.
    each(|t| {
        let px = t.start(&format!(
            "global\n nbthread 1\n{DEFAULTS}\
             listen sender\n bind {{fe0}}\n server r 127.0.0.1:{{port1}} send-proxy-v2\n\
             http-after-response set-header X-Client %[src_port]\n\
             listen tagged\n bind {{fe2}}\n unique-id-format ID-%[req.hdr(in)]\n\
             server r 127.0.0.1:{{port1}} send-proxy-v2 proxy-v2-options unique-id\n\
             listen receiver\n bind {{fe1}} accept-proxy\n http-request return status 200\n\
             http-after-response set-header X-Seen %[src_port]\n\
             http-after-response set-header X-Id %[fc_pp_unique_id]\n"
        ));
        let mut same = Vec::new();
        for _ in 0..2 {
            let mut cl = px.client();
            for _ in 0..2 {
                let r = cl.request(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
                same.push(r.header("x-client") == r.header("x-seen"));
            }
        }
        let mut cl = px.client_to(2);
        let ids: Vec<Option<String>> = ["a", "b"]
            .iter()
            .map(|v| {
                let raw = format!("GET / HTTP/1.1\r\nHost: t\r\nin: {v}\r\n\r\n");
                cl.request(raw.as_bytes()).header("x-id").map(str::to_string)
            })
            .collect();
        (same, ids)
    });
}

#[test]
fn idle_server_connections_stay_within_what_was_needed_at_once() {
    // 80 requests at once (each waits 300 ms at the server), then 250 clients one after the
    // other, one request each: every first request opens a server connection (`http-reuse
    // safe`), and the idle pool keeps about as many as were in use at once (80), as HAProxy's
    // `srv_add_to_idle_list` does; not the 250 the clients opened (nor twice the peak).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one_thread(&srv, ""));
        let mut wave: Vec<Client> = (0..80).map(|_| px.client()).collect();
        for c in &mut wave {
            c.send(b"GET /?t=300 HTTP/1.1\r\nHost: t\r\n\r\n");
        }
        for c in &mut wave {
            assert_eq!(c.read().status, 200);
        }
        drop(wave);
        for _ in 0..250 {
            let mut c = px.client();
            assert_eq!(c.request(GET).status, 200);
        }
        let open = srv.counts().open();
        assert!((40..=100).contains(&open), "{open} server connections open");
        open / 20
    });
}

/// HAProxy's HTTP/1 parser takes `close` and `keep-alive` out of Connection fields as it reads
/// them (a field left empty goes): rules see only the other tokens, on the request and on the
/// response; the connection still closes or stays as they said.
#[test]
fn rules_see_connection_fields_without_close_and_keep_alive() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-var(txn.c) req.fhdr(connection)\n\
             http-request set-var(txn.n) req.fhdr_cnt(connection)\n\
             http-response set-header X-Req-Conn \"%[var(txn.c)]|%[var(txn.n)]\"\n\
             http-response set-header X-Res-Conn \"%[res.fhdr(connection)]|%[res.fhdr_cnt(connection)]\"\n",
        ));
        for (sent, seen) in [
            ("close", "|0"),
            ("keep-alive", "|0"),
            ("Keep-Alive, CLOSE", "|0"),
            ("close, X-Foo", "X-Foo|1"),
            ("x-a, x-b, keep-alive, x-c", "x-a, x-b,x-c|1"),
            ("x-foo", "x-foo|1"),
        ] {
            let mut cl = px.client();
            let r = cl.request(
                format!("GET /?hdr=Connection:keep-alive HTTP/1.1\r\nHost: t\r\nConnection: {sent}\r\n\r\n")
                    .as_bytes(),
            );
            assert_eq!(r.status, 200, "{sent}");
            assert_eq!(r.header("x-req-conn"), Some(seen), "{sent}");
            assert_eq!(r.header("x-res-conn"), Some("|0"), "{sent}: the server's");
            if sent.to_ascii_lowercase().contains("close") {
                assert!(cl.closed_within(Duration::from_secs(3)), "{sent}: closes");
            }
        }
    });
}
