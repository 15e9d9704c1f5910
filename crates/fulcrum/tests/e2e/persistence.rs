//! Where a request goes when persistence, server tracking, dynamic limits or a disabled proxy
//! say so: `option persist`, `force-persist`, `disabled`, `track`, `minconn` with `fullconn`,
//! `source`. Each compared with HAProxy 2.6 on the same configuration (when installed) through
//! the log lines both send.

use crate::harness::*;
use crate::logging::{both_with_sink, HTTP_LOG};

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: h\r\n{extra}Connection: close\r\n\r\n").into_bytes()
}

/// A cookie naming a server in maintenance (`D`): passed over, unless `force-persist` holds
/// for the request or the backend has `option persist` (the server takes it all the same). A disabled
/// backend answers 503 without choosing a server (`SC`).
#[test]
fn persist_and_force_persist_send_to_a_server_in_maintenance() {
    let (s1, s2) = (testserver("http", "s1"), testserver("http", "s2"));
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%b %s %ST %tsc %ts\"\n\
         use_backend keep if {{ path_beg /keep }}\n use_backend off if {{ path_beg /off }}\n\
         default_backend be\n\
         backend be\n cookie SRV insert indirect nocache\n\
         force-persist if {{ path_beg /admin }}\n\
         server s1 {a} cookie a disabled\n server s2 {b} cookie b\n\
         backend keep\n option persist\n cookie SRV insert indirect nocache\n\
         server s1 {a} cookie a disabled\n server s2 {b} cookie b\n\
         backend off\n disabled\n server s1 {a}\n",
        a = s1.addr,
        b = s2.addr
    );
    let runs = both_with_sink("persist-force", &cfg, 5, |p, sink| {
        let a = p.addrs[0];
        for (i, (path, cookie)) in [
            ("/x", "Cookie: SRV=a\r\n"),
            ("/admin", "Cookie: SRV=a\r\n"),
            ("/admin", ""),
            ("/keep", "Cookie: SRV=a\r\n"),
            ("/off", ""),
        ]
        .into_iter()
        .enumerate()
        {
            let answer = String::from_utf8_lossy(&exchange(a, &get(path, cookie))).to_string();
            let want = if path == "/off" { " 503 " } else { " 200 " };
            assert!(answer.contains(want), "{path}: {answer}");
            assert_eq!(sink.wait_for(i + 1), i + 1);
        }
    });
    let ends: Vec<String> =
        runs[0].iter().map(|l| l.split(": ").nth(1).unwrap_or("").to_string()).collect();
    assert_eq!(
        ends,
        [
            "be s2 200 --DI --\n",
            "be s1 200 --DN --\n",
            "be s2 200 --NI --\n",
            "keep s1 200 --DN --\n",
            "off <NOSRV> 503 SC-- SC\n",
        ]
    );
}

/// `track`: a server follows the state of the server it tracks; when that one's checks fail,
/// the tracking server goes DOWN too ("via" in its message) and its backend has none left.
#[test]
fn a_tracking_server_goes_down_with_the_server_it_tracks() {
    let live = testserver("http", "live");
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_addr = dead.local_addr().expect("addr");
    drop(dead);
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%b %s %ST %ts\"\n default_backend b\n\
         backend a\n server a1 {dead_addr} check inter 100ms fall 1 rise 1\n\
         backend b\n server b1 {} track a/a1\n",
        live.addr
    );
    let runs = both_with_sink("track-down", &cfg, 5, |p, sink| {
        // The check's DOWN and its backend's, then the tracking server's and its backend's.
        assert_eq!(sink.wait_for(4), 4);
        let answer = String::from_utf8_lossy(&exchange(p.addrs[0], &get("/", ""))).to_string();
        assert!(answer.contains(" 503 "), "{answer}");
        assert_eq!(sink.wait_for(5), 5);
    });
    let lines = &runs[0];
    assert!(
        lines.iter().any(
            |l| l.contains("Server b/b1 is DOWN via a/a1. 0 active and 0 backup servers left.")
        ),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains("backend b has no server available!")), "{lines:#?}");
    assert!(lines.last().is_some_and(|l| l.ends_with("b <NOSRV> 503 SC\n")), "{lines:#?}");
}

/// `minconn` with `fullconn`: a server's limit grows with its backend's load (HAProxy's
/// dynamic maxconn). With `fullconn 100`, `minconn 1` and `maxconn 10`, two requests at once
/// make a load of 2, a limit of 1: one waits in the backend's queue, and `timeout queue`
/// ends it (`sQ`) while the other holds the slot. `source` binds the server connections to
/// the address it names.
#[test]
fn minconn_limits_a_server_by_its_backends_load() {
    let s1 = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST %ts\"\n default_backend be\n\
         backend be\n fullconn 100\n timeout queue 100ms\n source 127.0.0.1\n\
         server s1 {} minconn 1 maxconn 10\n",
        s1.addr
    );
    let runs = both_with_sink("minconn", &cfg, 2, |p, sink| {
        let a = p.addrs[0];
        let slow = move || exchange(a, &get("/?t=300ms", ""));
        let (one, two) = (std::thread::spawn(slow), std::thread::spawn(slow));
        let answers = [one.join().expect("one"), two.join().expect("two")];
        let text: Vec<String> =
            answers.iter().map(|a| String::from_utf8_lossy(a).to_string()).collect();
        assert!(text.iter().any(|t| t.contains(" 200 ")), "{text:?}");
        assert!(text.iter().any(|t| t.contains(" 503 ")), "{text:?}");
        assert_eq!(sink.wait_for(2), 2);
    });
    let mut ends: Vec<String> =
        runs[0].iter().map(|l| l.split(": ").nth(1).unwrap_or("").to_string()).collect();
    ends.sort();
    assert_eq!(ends, ["<NOSRV> 503 sQ\n", "s1 200 --\n"]);
}

/// `option prefer-last-server`: with connections private to their client (`http-reuse
/// never`), a client's next requests go to the server its connection kept, where round robin
/// alone would alternate.
#[test]
fn prefer_last_server_keeps_a_client_on_its_server() {
    use std::io::{Read, Write};
    let (s1, s2) = (testserver("http", "s1"), testserver("http", "s2"));
    for (prefer, want) in [(true, ["s1", "s1", "s1"]), (false, ["s1", "s2", "s1"])] {
        let option = if prefer { " option prefer-last-server\n" } else { "" };
        let cfg = format!(
            "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s\"\n default_backend be\n\
             backend be\n balance roundrobin\n http-reuse never\n{option}\
             server s1 {}\n server s2 {}\n",
            s1.addr, s2.addr
        );
        let runs = both_with_sink("prefer-last", &cfg, 3, |p, sink| {
            let mut c = connect(p.addrs[0]);
            for i in 0..3 {
                let close = if i == 2 { "Connection: close\r\n" } else { "" };
                let req = format!("GET /{i} HTTP/1.1\r\nHost: h\r\n{close}\r\n");
                c.write_all(req.as_bytes()).expect("write");
                assert_eq!(sink.wait_for(i + 1), i + 1);
            }
            let mut all = Vec::new();
            let _ = c.read_to_end(&mut all);
            assert_eq!(String::from_utf8_lossy(&all).matches(" 200 ").count(), 3);
        });
        let servers: Vec<String> =
            runs[0].iter().map(|l| l.split(": ").nth(1).unwrap_or("").trim().to_string()).collect();
        assert_eq!(servers, want, "prefer-last-server {prefer}");
    }
}

/// `redir`: a GET or HEAD request sent to a server with a redirection prefix is answered with
/// HAProxy's 302 to the prefix and the request's path (`LC` in the log, the server named); a
/// POST goes to the server. Byte for byte as HAProxy 2.6 answers.
#[test]
fn a_redir_server_answers_get_and_head_with_a_302() {
    let s1 = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST %ts\"\n default_backend be\n\
         backend be\n server s1 {} redir http://img.example.com\n",
        s1.addr
    );
    let answers = std::sync::Mutex::new(Vec::new());
    let runs = both_with_sink("redir", &cfg, 3, |p, sink| {
        let a = p.addrs[0];
        let mut got = Vec::new();
        for (i, req) in [
            "GET /a/b?c=1 HTTP/1.1\r\nHost: h\r\n\r\n",
            "HEAD / HTTP/1.0\r\n\r\n",
            "POST /form HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
        ]
        .into_iter()
        .enumerate()
        {
            got.push(String::from_utf8_lossy(&exchange(a, req.as_bytes())).to_string());
            assert_eq!(sink.wait_for(i + 1), i + 1);
        }
        answers.lock().expect("answers").push(got);
    });
    let answers = answers.into_inner().expect("answers");
    assert_eq!(
        answers[0][0],
        "HTTP/1.1 302 Found\r\ncache-control: no-cache\r\ncontent-length: 0\r\n\
         location: http://img.example.com/a/b?c=1\r\nconnection: close\r\n\r\n"
    );
    assert!(answers[0][1].contains("location: http://img.example.com/\r\n"), "{:?}", answers[0]);
    assert!(answers[0][2].contains(" 200 "), "{:?}", answers[0]);
    if answers.len() == 2 {
        assert_eq!(answers[0][..2], answers[1][..2], "Fulcrum (left) and HAProxy 2.6 (right)");
    }
    let ends: Vec<String> =
        runs[0].iter().map(|l| l.split(": ").nth(1).unwrap_or("").to_string()).collect();
    assert_eq!(ends, ["s1 302 LC\n", "s1 302 LC\n", "s1 200 --\n"]);
}

/// `source`: the connections to the server, health checks included, leave from the address it
/// names (here 127.0.0.2, a loopback address of its own), for Fulcrum as for HAProxy.
#[test]
fn source_binds_traffic_and_check_connections() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let (peers, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
    let (p2, s2) = (Arc::clone(&peers), Arc::clone(&stop));
    let server = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !s2.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            match listener.accept() {
                Ok((mut c, peer)) => {
                    p2.lock().expect("peers").push(peer.ip());
                    c.set_nonblocking(false).expect("blocking");
                    c.set_read_timeout(Some(std::time::Duration::from_millis(300))).ok();
                    let mut buf = [0u8; 4096];
                    if matches!(c.read(&mut buf), Ok(n) if n > 0) {
                        let ok =
                            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                        let _ = c.write_all(ok);
                    }
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    });
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n log-format \"%s %ST\"\n default_backend be\n\
         backend be\n source 127.0.0.2\n option httpchk GET /\n server s1 {addr} check inter 200ms\n"
    );
    let runs = both_with_sink("source", &cfg, 1, |p, sink| {
        let answer = exchange(p.addrs[0], &get("/", ""));
        assert!(String::from_utf8_lossy(&answer).contains(" 200 "));
        assert_eq!(sink.wait_for(1), 1);
        // At least one check besides the request.
        assert!(eventually(std::time::Duration::from_secs(5), || peers
            .lock()
            .expect("peers")
            .len()
            >= 2));
    });
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server");
    assert_eq!(runs[0], ["<134>TIME t[PID]: s1 200\n"]);
    let peers = peers.lock().expect("peers");
    assert!(peers.len() >= 2 * runs.len(), "{peers:?}");
    assert!(peers.iter().all(|ip| ip.to_string() == "127.0.0.2"), "{peers:?}");
}
