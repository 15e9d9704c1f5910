//! Log formats, black box, beside HAProxy 2.6 (where it is installed): a custom `log-format`
//! with flags, captures and unique ids; `option httplog clf`; `dontlognull`, `dontlog-normal`,
//! `log-separate-errors`; `error-log-format`. Same traffic, same sink, lines compared with
//! only what differs from run to run masked.

use std::time::Duration;

use crate::harness::*;
use crate::logging::{both_with_sink, Sink, HTTP_LOG};

/// Sends `raw` on a new connection, reads the answer, then waits until the sink holds `n`
/// lines in all.
fn step(addr: std::net::SocketAddr, sink: &Sink, raw: &[u8], n: usize) {
    exchange(addr, raw);
    assert_eq!(sink.wait_for(n), n, "lines so far: {:#?}", sink.got.borrow());
}

#[test]
fn a_custom_log_format_with_flags_captures_and_unique_ids_is_rendered_as_haproxy_renders_it() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend custom\n bind {{fe0}}\n\
         capture request header Host len 10\n capture response header X-Server len 5\n\
         capture cookie SID len 20\n\
         http-request capture req.hdr(user-agent) len 8\n\
         http-request capture req.hdr(x-e) len 20\n\
         declare capture response len 6\n http-response capture res.hdr(x-server) id 1\n\
         unique-id-format %f-%rt\n unique-id-header X-Req-ID\n\
         log-format \"%{{+Q}}o %ci %ft %b %s %ST %B %U %tsc %ac:%fc:%bc:%sc:%rc %sq:%bq %hr %hs \
         %CC %CS %ID %HM %HP %HQ %HU %HV %[capture.req.hdr(1)] %[capture.res.hdr(1)] %{{-Q}}r \
         %{{+E}}[capture.req.hdr(2)] %[unique-id] %lc %{{+X}}rt %{{+Q,+X}}ci \
         %{{-Q}}[capture.req.hdr(0),lower] %{{-Q}}bi:%bp %{{-Q}}si:%sp\"\n\
         default_backend be\nbackend be\n server s1 {ts}\n",
        ts = ts.addr,
    );
    let runs = both_with_sink("log-custom", &cfg, 4, |p, sink| {
        let a = p.addrs[0];
        step(
            a,
            sink,
            b"GET /p/q?x=1&y=%41 HTTP/1.1\r\nHost: Example.COM:8080\r\n\
              User-Agent: agent-with-a-long-name\r\nCookie: other=1; SID=abc123\r\n\
              X-E: a\"b]c\\d\r\nConnection: close\r\n\r\n",
            1,
        );
        step(a, sink, b"POST / HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", 2);
        step(a, sink, b"GET /?c=404&s=5 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 3);
        step(a, sink, b"GET /a b c HTTP/1.1\r\nHost: h\r\n\r\n", 4);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: \"127.0.0.1\" \"custom\" \"be\" \"s1\" 200 81 133 ---- 1:1:0:0:0 0:0 \"{Example.CO|agent-wi|a#22b]c\\d}\" \"{s1|s1}\" \"SID=abc123\" \"\" \"custom-0\" \"GET\" \"/p/q\" \"?x=1&y=%41\" \"/p/q?x=1&y=%41\" \"HTTP/1.1\" \"agent-wi\" \"s1\" GET /p/q?x=1&y=%41 HTTP/1.1 \"a\\\"b\\]c\\\\d\" \"custom-0\" 0 0000 7F000001 example.co 127.0.0.1:P 127.0.0.1:P\n",
            "<134>TIME t[PID]: \"127.0.0.1\" \"custom\" \"be\" \"s1\" 200 81 52 ---- 1:1:0:0:0 0:0 \"{||}\" \"{s1|s1}\" \"\" \"\" \"custom-1\" \"POST\" \"/\" \"\" \"/\" \"HTTP/1.0\" \"\" \"s1\" POST / HTTP/1.0 \"\" \"custom-1\" 1 0001 7F000001 - 127.0.0.1:P 127.0.0.1:P\n",
            "<134>TIME t[PID]: \"127.0.0.1\" \"custom\" \"be\" \"s1\" 404 93 48 ---- 1:1:0:0:0 0:0 \"{h||}\" \"{s1|s1}\" \"\" \"\" \"custom-2\" \"GET\" \"/\" \"?c=404&s=5\" \"/?c=404&s=5\" \"HTTP/1.1\" \"\" \"s1\" GET /?c=404&s=5 HTTP/1.1 \"\" \"custom-2\" 2 0002 7F000001 h 127.0.0.1:P 127.0.0.1:P\n",
            "<134>TIME t[PID]: \"127.0.0.1\" \"custom\" \"custom\" \"<NOSRV>\" 400 0 0 PR-- 1:1:0:0:0 0:0 \"\" \"\" \"\" \"<BADREQ>\" \"<BADREQ>\" \"<BADREQ>\" \"<BADREQ>\" \"<BADREQ>\" \"\" \"\" <BADREQ> \"\" \"\" 3 0003 7F000001 - -:\"\" -:\"\"\n",
        ]
    );
}

#[test]
fn clf_dontlognull_dontlog_normal_separate_errors_and_error_log_format_as_haproxy() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend clf\n bind {{fe0}}\n option httplog clf\n default_backend be\n\
         frontend quiet\n bind {{fe1}}\n option dontlognull\n option dontlog-normal\n\
         option log-separate-errors\n default_backend be\n\
         frontend errs\n bind {{fe2}}\n error-log-format \"E %ci %ST %tsc %{{+Q}}r %ft %lc\"\n\
         default_backend be\n\
         backend be\n server s1 {ts}\n",
        ts = ts.addr,
    );
    let runs = both_with_sink("log-options", &cfg, 6, |p, sink| {
        let (clf, quiet, errs) = (p.addrs[0], p.addrs[1], p.addrs[2]);
        step(clf, sink, b"GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        // Not logged: connections without a byte (closed, or timed out: 408 all the same),
        // and a normal transaction. (The lines that follow would come after theirs.)
        drop(connect(quiet));
        exchange(quiet, b"");
        exchange(quiet, b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        // Logged at err level: a 5xx and a bad request.
        step(quiet, sink, b"GET /?c=503 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 2);
        step(quiet, sink, b"GET /a b c HTTP/1.1\r\nHost: h\r\n\r\n", 3);
        // The error format for a request refused before it was complete, not for the rest.
        step(errs, sink, b"GET /a b c HTTP/1.1\r\nHost: h\r\n\r\n", 4);
        step(errs, sink, b"GET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 5);
        // A request cut short by the client is not null.
        step(quiet, sink, b"GET /partial HTTP/1.1\r\nHo", 6);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1 - - [DATE] \"GET /a HTTP/1.1\" 200 81 \"\" \"\" N N \"clf\" \"be\" \"s1\" T T T T T ---- 1 1 0 0 0 0 0 \"\" \"\" \n",
            "<131>TIME t[PID]: 127.0.0.1:P [DATE] quiet be/s1 T/T/T/T/T 503 98 - - ---- 1/1/0/0/0 0/0 \"GET /?c=503 HTTP/1.1\"\n",
            "<131>TIME t[PID]: 127.0.0.1:P [DATE] quiet quiet/<NOSRV> -1/-1/-1/-1/T 400 0 - - PR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
            "<134>TIME t[PID]: E 127.0.0.1 400 PR-- \"<BADREQ>\" errs 0\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] errs be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 \"GET /ok HTTP/1.1\"\n",
            "<131>TIME t[PID]: 127.0.0.1:P [DATE] quiet quiet/<NOSRV> -1/-1/-1/-1/T 408 0 - - cR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
        ]
    );
}

#[test]
fn the_persistence_cookie_flags_of_tsc_are_haproxys() {
    let (s1, s2) = (testserver("http", "s1"), testserver("http", "s2"));
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST %tsc\"\n default_backend be\n\
         backend be\n cookie SRV insert indirect nocache\n\
         server s1 {} cookie a\n server s2 {} cookie b disabled\n",
        s1.addr, s2.addr
    );
    let runs = both_with_sink("log-cookies", &cfg, 4, |p, sink| {
        let a = p.addrs[0];
        let req = |cookie: &str| {
            format!("GET / HTTP/1.1\r\nHost: h\r\n{cookie}Connection: close\r\n\r\n").into_bytes()
        };
        // None, valid, naming no server, naming a server in maintenance.
        step(a, sink, &req(""), 1);
        step(a, sink, &req("Cookie: SRV=a\r\n"), 2);
        step(a, sink, &req("Cookie: x=1; SRV=zz\r\n"), 3);
        step(a, sink, &req("Cookie: SRV=b\r\n"), 4);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: s1 200 --NI\n",
            "<134>TIME t[PID]: s1 200 --VN\n",
            "<134>TIME t[PID]: s1 200 --II\n",
            "<134>TIME t[PID]: s1 200 --DI\n",
        ]
    );
}

/// `ignore-persist`: where it applies, the request's persistence cookie chooses no server
/// (`U`, round robin instead) and no cookie is inserted in the response; elsewhere the
/// cookie persists as before.
#[test]
fn ignore_persist_leaves_the_cookie_unused_and_inserts_none() {
    let (s1, s2) = (testserver("http", "s1"), testserver("http", "s2"));
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST %tsc\"\n default_backend be\n\
         backend be\n balance roundrobin\n cookie SRV insert indirect nocache\n\
         ignore-persist if {{ path_beg /static }}\n\
         server s1 {} cookie a\n server s2 {} cookie b\n",
        s1.addr, s2.addr
    );
    let runs = both_with_sink("log-ignore-persist", &cfg, 6, |p, sink| {
        let a = p.addrs[0];
        let req = |path: &str, cookie: &str| {
            format!("GET {path} HTTP/1.1\r\nHost: h\r\n{cookie}Connection: close\r\n\r\n")
                .into_bytes()
        };
        let sets = |raw: &[u8]| {
            let answer = exchange(a, raw);
            String::from_utf8_lossy(&answer).to_ascii_lowercase().contains("set-cookie: srv=")
        };
        for (i, (path, cookie)) in [
            ("/a", "Cookie: SRV=a\r\n"),
            ("/static/x", "Cookie: SRV=a\r\n"),
            ("/static/x", "Cookie: SRV=a\r\n"),
            ("/static/x", "Cookie: SRV=a\r\n"),
        ]
        .into_iter()
        .enumerate()
        {
            assert!(!sets(&req(path, cookie)), "{path}: no cookie inserted");
            assert_eq!(sink.wait_for(i + 1), i + 1);
        }
        assert!(!sets(&req("/static/y", "")), "ignore-persist: none inserted");
        assert_eq!(sink.wait_for(5), 5);
        assert!(sets(&req("/b", "")), "elsewhere: inserted");
        assert_eq!(sink.wait_for(6), 6);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: s1 200 --VN\n",
            "<134>TIME t[PID]: s1 200 --UN\n",
            "<134>TIME t[PID]: s2 200 --UN\n",
            "<134>TIME t[PID]: s1 200 --UN\n",
            "<134>TIME t[PID]: s2 200 --NN\n",
            "<134>TIME t[PID]: s1 200 --NI\n",
        ]
    );
}

/// `use-server`: the first rule that holds names the server (one of weight 0 included), before
/// the persistence cookie (read all the same) and the balancer; a rule naming a server in
/// maintenance is passed over; a log-format name picks the server per request, and one that
/// names no server ends the rules. The servers and cookie flags logged are HAProxy's.
#[test]
fn use_server_rules_assign_the_server_before_cookies_and_the_balancer() {
    let s: Vec<_> = ["s1", "s2", "s3", "s4"].iter().map(|n| testserver("http", n)).collect();
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST %tsc\"\n default_backend be\n\
         backend be\n balance roundrobin\n cookie SRV insert indirect nocache\n\
         use-server s3 if {{ path_beg /three }}\n\
         use-server s4 if {{ path_beg /four }}\n\
         use-server %[req.hdr(x-srv)] if {{ req.hdr(x-srv) -m found }}\n\
         server s1 {} cookie a\n server s2 {} cookie b\n server s3 {} cookie c weight 0\n\
         server s4 {} cookie d disabled\n",
        s[0].addr, s[1].addr, s[2].addr, s[3].addr
    );
    let runs = both_with_sink("log-use-server", &cfg, 6, |p, sink| {
        let a = p.addrs[0];
        let req = |path: &str, extra: &str| {
            format!("GET {path} HTTP/1.1\r\nHost: h\r\n{extra}Connection: close\r\n\r\n")
                .into_bytes()
        };
        for (i, (path, extra)) in [
            ("/three", ""),
            ("/three", "Cookie: SRV=a\r\n"),
            ("/four", ""),
            ("/x", "X-Srv: s2\r\n"),
            ("/x", "X-Srv: nosuch\r\n"),
            ("/x", "Cookie: SRV=b\r\n"),
        ]
        .into_iter()
        .enumerate()
        {
            let _ = exchange(a, &req(path, extra));
            assert_eq!(sink.wait_for(i + 1), i + 1);
        }
    });
    let servers: Vec<&str> = runs[0]
        .iter()
        .map(|l| l.split(": ").nth(1).unwrap_or("").split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(servers[..2], ["s3", "s3"], "{:#?}", runs[0]);
    assert!(servers[2] != "s4" && servers[4] != "s4", "{:#?}", runs[0]);
    assert_eq!((servers[3], servers[5]), ("s2", "s2"), "{:#?}", runs[0]);
}

/// Reads one request head from a server-side connection the test holds.
fn read_head(s: &mut std::net::TcpStream) {
    use std::io::Read;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// The queue and retry ends: queue timeouts (`sQ`, with the queue position) behind a server
/// held by the test, also for a client that half-closed after its request (HAProxy's
/// `abortonclose` keeps such a request queued), and retries that go to another server at
/// once (`+1`: round robin, no cookie, another server up).
#[test]
fn queue_timeouts_aborts_while_queued_and_retries_are_logged_as_haproxy_logs_them() {
    use std::io::Write;
    let ts = testserver("http", "s2");
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n use_backend r if {{ path /r }}\n\
         default_backend q\n\
         backend q\n option abortonclose\n timeout queue 300ms\n timeout server 5s\n\
         server s1 {held} maxconn 1\n\
         backend r\n retries 2\n option redispatch\n timeout connect 100ms\n\
         server s1 {dead}\n server s2 {ts}\n",
        held = held.local_addr().expect("addr"),
        dead = dead_addr(),
        ts = ts.addr,
    );
    let runs = both_with_sink("log-queue", &cfg, 4, |p, sink| {
        let a = p.addrs[0];
        let first = std::thread::spawn(move || {
            exchange(a, b"GET /held HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        });
        // The first request holds the server's only slot until the test answers it.
        held.set_nonblocking(false).expect("blocking");
        let (mut srv, _) = held.accept().expect("the proxy connects");
        read_head(&mut srv);
        // Queued behind it: one waits past `timeout queue`, one leaves.
        step(a, sink, b"GET /late HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        let mut c = connect(a);
        c.write_all(b"GET /gone HTTP/1.1\r\nHost: h\r\n\r\n").expect("write");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
        assert_eq!(sink.wait_for(2), 2, "lines so far: {:#?}", sink.got.borrow());
        srv.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .expect("answer");
        drop(srv);
        assert!(first.join().expect("first").starts_with(b"HTTP/1.1 200"));
        assert_eq!(sink.wait_for(3), 3, "lines so far: {:#?}", sink.got.borrow());
        step(a, sink, b"GET /r HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 4);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe q/<NOSRV> T/T/-1/-1/T 503 217 - - sQ-- \
             2/2/1/0/0 0/1 \"GET /late HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe q/<NOSRV> T/T/-1/-1/T 503 217 - - sQ-- \
             2/2/1/0/0 0/1 \"GET /gone HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe q/s1 T/T/T/T/T 200 51 - - ---- \
             1/1/0/0/0 0/0 \"GET /held HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe r/s2 T/T/T/T/T 200 81 - - ---- \
             1/1/0/0/+1 0/0 \"GET /r HTTP/1.1\"\n",
        ]
    );
}

/// Data-phase ends: a tunnel whose client (`cD`) or server (`sD`) stays silent past its
/// timeout, and an HTTP client that leaves while its server has not answered yet (without
/// `abortonclose` neither proxy notices before the answer: a normal line).
#[test]
fn data_phase_timeouts_and_client_aborts_are_logged_as_haproxy_logs_them() {
    use std::io::Write;
    let echo = testserver("echo", "e");
    let sink_srv = testserver("sink", "k");
    let web = testserver("http", "s1");
    let cfg = format!(
        "global\n nbthread 1\n log {{sink}} local0\n log-tag t\n\
         defaults\n log global\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         listen ct\n mode tcp\n option tcplog\n timeout client 300ms\n bind {{fe0}}\n\
         server e {}\n\
         listen st\n mode tcp\n option tcplog\n timeout server 300ms\n bind {{fe1}}\n\
         server k {}\n\
         listen h\n mode http\n option httplog\n bind {{fe2}}\n server s1 {}\n",
        echo.addr, sink_srv.addr, web.addr
    );
    let runs = both_with_sink("log-data", &cfg, 3, |p, sink| {
        let mut c = connect(p.addrs[0]);
        assert_eq!(echo_roundtrip(&mut c, b"hi"), b"hi");
        assert!(closed_within(&mut c, Duration::from_secs(5)));
        assert_eq!(sink.wait_for(1), 1);
        let mut s = connect(p.addrs[1]);
        s.write_all(b"data nobody answers").expect("write");
        assert!(closed_within(&mut s, Duration::from_secs(5)));
        assert_eq!(sink.wait_for(2), 2);
        let mut h = connect(p.addrs[2]);
        h.write_all(b"GET /?t=400 HTTP/1.1\r\nHost: h\r\n\r\n").expect("write");
        drop(h);
        assert_eq!(sink.wait_for(3), 3, "lines so far: {:#?}", sink.got.borrow());
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] ct ct/e T/T/T 2 cD 1/1/0/0/0 0/0\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] st st/k T/T/T 0 sD 1/1/0/0/0 0/0\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] h h/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 \
             0/0 \"GET /?t=400 HTTP/1.1\"\n",
        ]
    );
}

/// `log ... sample 1:2`: every other line, from the first. (The format counts bytes: HAProxy
/// 2.6 logs a line twice, once at the response head, when its format has nothing that needs
/// the end of the transaction, and sampling shows it.)
#[test]
fn a_sampled_target_gets_the_lines_whose_turn_is_in_its_ranges() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "global\n nbthread 1\n log-tag t\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n log {{sink}} sample 1:2 local0\n log-format \"%HP %B\"\n bind {{fe0}}\n\
         default_backend be\nbackend be\n server s1 {}\n",
        ts.addr
    );
    let runs = both_with_sink("log-sample", &cfg, 3, |p, sink| {
        for i in 1..=5 {
            let req = format!("GET /{i} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
            exchange(p.addrs[0], req.as_bytes());
        }
        assert_eq!(sink.wait_for(3), 3);
    });
    assert_eq!(
        runs[0],
        ["<134>TIME t[PID]: /1 81\n", "<134>TIME t[PID]: /3 81\n", "<134>TIME t[PID]: /5 81\n"]
    );
}

/// A line longer than the target's `len` is cut as HAProxy cuts it: a header and its message
/// take `len` bytes before the LF, a message without header (`format raw`, used here so the
/// cut does not depend on the pid's digits) one less.
#[test]
fn a_line_longer_than_len_is_cut_as_haproxy_cuts_it() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "global\n nbthread 1\n log-tag t\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n log {{sink}} len 80 format raw local0\n log-format \"%HP %B\"\n bind {{fe0}}\n\
         default_backend be\nbackend be\n server s1 {}\n",
        ts.addr
    );
    let long = "a".repeat(100);
    let runs = both_with_sink("log-len", &cfg, 1, |p, sink| {
        let req = format!("GET /{long} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        step(p.addrs[0], sink, req.as_bytes(), 1);
    });
    assert_eq!(runs[0], [format!("/{}\n", &long[..78])]);
}

/// The request line in the logs is cut as HAProxy cuts it (its version then lost): at 1,023
/// bytes by default, at `tune.http.logurilen` bytes when set.
#[test]
fn a_long_request_line_is_logged_as_far_as_tune_http_logurilen_leaves_room() {
    let ts = testserver("http", "s1");
    for (tune, keep) in [("", 1023), (" tune.http.logurilen 64\n", 64)] {
        let cfg = format!(
            "global\n nbthread 1\n{tune}\
             defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n log {{sink}} len 8192 format raw local0\n log-format \"%r\"\n\
             bind {{fe0}}\n default_backend be\nbackend be\n server s1 {}\n",
            ts.addr
        );
        let path = format!("/{}", "a".repeat(2000));
        let runs = both_with_sink("log-urilen", &cfg, 1, |p, sink| {
            let req = format!("GET {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
            step(p.addrs[0], sink, req.as_bytes(), 1);
        });
        let line = format!("GET {path} HTTP/1.1");
        assert_eq!(runs[0], [format!("{}\n", &line[..keep])], "{tune}");
    }
}

/// `option httpslog` on a clear-text connection (its TLS fields as HAProxy prints them then),
/// `log-format-sd` on an RFC 5424 target, and the `hex` converter.
#[test]
fn httpslog_structured_data_and_hex_are_rendered_as_haproxy_renders_them() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend tls\n option httpslog\n bind {{fe0}}\n default_backend be\n\
         frontend sd\n no log\n log {{sink}} format rfc5424 local0\n\
         log-format \"%[str(ab),hex] %[int(258),hex] %[fc_err]\"\n\
         log-format-sd \"[exampleSDID@1234 fe=\\\"%f\\\" st=\\\"%ST\\\"]\"\n bind {{fe1}}\n\
         default_backend be\n\
         backend be\n server s1 {ts}\n",
        ts = ts.addr,
    );
    let runs = both_with_sink("log-sd", &cfg, 2, |p, sink| {
        step(p.addrs[0], sink, b"GET /s HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(p.addrs[1], sink, b"GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 2);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] tls be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 \
             0/0 \"GET /s HTTP/1.1\" 0/-/-/-/0 -/-/-\n",
            "<134>1 TIME - t PID - [exampleSDID@1234 fe=\"sd\" st=\"200\"] 6162 \
             0000000000000102 0\n",
        ]
    );
}

/// A session its server's state change ends (`on-marked-down shutdown-sessions`) ends at once,
/// both ways, and says `D-` (HAProxy shuts it without an error on either side), not that the
/// server closed.
#[test]
fn a_session_ended_by_its_server_going_down_says_d() {
    let echo = testserver("echo", "e");
    let check = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let check_port = check.local_addr().expect("addr").port();
    let cfg = format!(
        "global\n nbthread 1\n log-tag t\n\
         defaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend f\n log {{sink}} local0\n option tcplog\n bind {{fe0}}\n default_backend b\n\
         backend b\n server e {} check port {check_port} inter 100ms fall 1 rise 1 \
         on-marked-down shutdown-sessions\n",
        echo.addr
    );
    let check = std::cell::RefCell::new(Some(check));
    let runs = both_with_sink("log-down", &cfg, 1, |p, sink| {
        if check.borrow().is_none() {
            let again = std::net::TcpListener::bind(("127.0.0.1", check_port));
            *check.borrow_mut() = Some(again.expect("the check port again"));
        }
        let mut c = connect(p.addrs[0]);
        assert_eq!(echo_roundtrip(&mut c, b"hi"), b"hi");
        // The check port closes: the next check fails and the server goes down.
        drop(check.borrow_mut().take());
        assert!(closed_within(&mut c, Duration::from_secs(5)));
        assert_eq!(sink.wait_for(1), 1);
    });
    assert_eq!(runs[0], ["<134>TIME t[PID]: 127.0.0.1:P [DATE] f b/e T/T/T 2 D- 1/1/0/0/0 0/0\n"]);
}

/// A server that never completes the handshake (its listen queue is full: the kernel drops
/// the SYNs) gives a connect timeout, `sC`, after the retries.
#[test]
fn a_connect_timeout_is_logged_sc() {
    let full =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    full.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().expect("addr").into()).expect("bind");
    full.listen(0).expect("listen");
    let addr = full.local_addr().expect("addr").as_socket().expect("inet");
    // Fill the queue: these are never accepted.
    let _held: Vec<_> = (0..2)
        .filter_map(|_| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
            s.set_nonblocking(true).ok()?;
            let _ = s.connect(&addr.into());
            Some(s)
        })
        .collect();
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n default_backend be\n\
         backend be\n timeout connect 200ms\n retries 1\n server s1 {addr}\n"
    );
    let runs = both_with_sink("log-sc", &cfg, 1, |p, sink| {
        step(p.addrs[0], sink, b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
    });
    assert_eq!(
        runs[0],
        ["<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/-1/-1/T 503 217 - - sC-- 1/1/0/0/1 \
             0/0 \"GET / HTTP/1.1\"\n"]
    );
}

/// A keep-alive connection idle between two requests (long enough to rest, see
/// `http::session`): the second request's `Ti` counts that idle time, from the end of the
/// first transaction, as HAProxy counts it.
#[test]
fn ti_counts_the_idle_time_before_a_keep_alive_request() {
    use std::io::{Read, Write};
    let ts = testserver("http", "s1");
    let sink = Sink::new();
    let cfg = format!(
        "global\n nbthread 1\n log {} local0\n log-tag t\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n log global\n log-format \"%HP %Ti %B\"\n bind {{fe0}}\n\
         default_backend be\nbackend be\n server s1 {}\n",
        sink.addr(),
        ts.addr
    );
    let p = crate::logging::Proxy::start("fulcrum", "log-ti", &cfg).expect("fulcrum");
    let mut c = connect(p.addrs[0]);
    let mut buf = [0u8; 4096];
    c.write_all(b"GET /first HTTP/1.1\r\nHost: h\r\n\r\n").expect("write");
    assert!(c.read(&mut buf).expect("answer") > 0);
    assert_eq!(sink.wait_for(1), 1);
    // The client thinks for 300 ms (its idle time is what the line must show).
    std::thread::sleep(Duration::from_millis(300));
    c.write_all(b"GET /second HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").expect("write");
    let _ = c.read(&mut buf);
    assert_eq!(sink.wait_for(2), 2);
    let line = sink.got.borrow()[1].clone();
    let ti: i64 = line
        .split("/second ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Ti in {line:?}"));
    assert!((290..2000).contains(&ti), "Ti {ti} in {line:?}");
}

/// `on-marked-up shutdown-backup-sessions`: an active server coming back ends the sessions of
/// the backup servers, `U`.
#[test]
fn backup_sessions_ended_by_an_active_server_coming_back_say_u() {
    use std::io::Read;
    let s1 = testserver("http", "s1");
    let backup = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let check_port = free_addr().port();
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n default_backend b\n\
         backend b\n no log\n timeout server 10s\n\
         server s1 {} check port {check_port} inter 100ms fall 1 rise 1 \
         on-marked-up shutdown-backup-sessions\n server s2 {} backup\n",
        s1.addr,
        backup.local_addr().expect("addr")
    );
    let runs = both_with_sink("log-up", &cfg, 1, |p, sink| {
        // s1's check port is closed: the proxy says it is DOWN (on stderr).
        assert!(
            eventually(Duration::from_secs(5), || p.proc.log_text().contains("b/s1 is DOWN")),
            "s1 never went down"
        );
        let fe = p.addrs[0];
        let client = std::thread::spawn(move || {
            exchange(fe, b"GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        });
        // The request reaches the backup, which does not answer.
        let (mut at_backup, _) = backup.accept().expect("the proxy connects to the backup");
        read_head(&mut at_backup);
        // s1 comes back: the backup's session is ended.
        let check = std::net::TcpListener::bind(("127.0.0.1", check_port)).expect("check port");
        let mut rest = Vec::new();
        let _ = at_backup.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = at_backup.read_to_end(&mut rest);
        assert_eq!(sink.wait_for(1), 1, "lines so far: {:#?}", sink.got.borrow());
        drop(check);
        let _ = client.join();
    });
    assert_eq!(
        runs[0],
        ["<134>TIME t[PID]: 127.0.0.1:P [DATE] fe b/s2 T/T/T/-1/T 502 209 - - UH-- 1/1/0/0/0 \
             0/0 \"GET /slow HTTP/1.1\"\n"]
    );
}

/// `option logasap`: the line goes as soon as the server answered (HTTP: its response's head,
/// `%B` then the head's size; TCP: the connection), marked `+` where the stream goes on,
/// while the body is still on its way; no line at the end.
#[test]
fn logasap_logs_once_the_server_answered_while_the_body_is_still_coming() {
    use std::io::{Read, Write};
    // An origin whose answers' bodies come a second after their heads.
    let origin = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let at = origin.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in origin.incoming().take(4) {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut b = [0u8; 1024];
                let _ = c.read(&mut b);
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n");
                std::thread::sleep(Duration::from_millis(1000));
                let _ = c.write_all(b"abc");
            });
        }
    });
    let cfg = format!(
        "{HTTP_LOG}frontend fh\n bind {{fe0}}\n option logasap\n default_backend be\n\
         backend be\n timeout server 5s\n server s {at}\n\
         listen ft\n mode tcp\n option tcplog\n option logasap\n timeout server 5s\n\
         bind {{fe1}}\n server s {at}\n"
    );
    let runs = both_with_sink("log-asap", &cfg, 2, |p, sink| {
        for (i, a) in p.addrs.iter().enumerate() {
            let start = std::time::Instant::now();
            let mut c = connect(*a);
            c.write_all(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").expect("write");
            assert_eq!(sink.wait_for(i + 1), i + 1, "lines so far: {:#?}", sink.got.borrow());
            let logged = start.elapsed();
            let mut all = Vec::new();
            let _ = c.read_to_end(&mut all);
            assert!(all.ends_with(b"abc"), "{}", String::from_utf8_lossy(&all));
            assert!(logged < start.elapsed() - Duration::from_millis(500), "logged at {logged:?}");
        }
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fh be/s T/T/T/T/+T 200 +49 - - ---- 1/1/1/1/0 \
             0/0 \"GET / HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] ft ft/s T/T/+T +0 -- 1/1/1/1/0 0/0\n",
        ]
    );
}
