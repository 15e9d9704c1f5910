//! Every `timeout` of `mode tcp` firing, and half-closes passing through.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::harness::*;

fn cfg(timeouts: &str, server: std::net::SocketAddr) -> String {
    format!("defaults\n mode tcp\n{timeouts}\nlisten px\n bind {{fe0}}\n server s {server}\n")
}

fn closed_after(px: &Fulcrum, send: &[u8], min: Duration, max: Duration) {
    let mut s = connect(px.addr());
    if !send.is_empty() {
        std::io::Write::write_all(&mut s, send).expect("write");
    }
    let start = Instant::now();
    assert!(closed_within(&mut s, max), "not closed within {max:?}");
    let took = start.elapsed();
    assert!(took >= min, "closed after {took:?}, before {min:?}");
}

#[test]
fn timeout_client_closes_an_idle_client() {
    let echo = testserver("echo", "e");
    let px = fulcrum(
        "t-client",
        &cfg(" timeout connect 1s\n timeout client 200ms\n timeout server 10s", echo.addr),
    );
    closed_after(&px, b"", Duration::from_millis(150), Duration::from_secs(3));
}

#[test]
fn timeout_server_closes_when_the_server_stays_silent() {
    let sink = testserver("sink", "k");
    let px = fulcrum(
        "t-server",
        &cfg(" timeout connect 1s\n timeout client 10s\n timeout server 200ms", sink.addr),
    );
    closed_after(&px, b"hello", Duration::from_millis(150), Duration::from_secs(3));
}

#[test]
fn timeout_connect_gives_up_on_a_server_that_never_answers() {
    // A listener whose backlog is full drops new SYNs: the connect never completes.
    let l =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    l.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().expect("addr").into()).expect("bind");
    l.listen(0).expect("listen");
    let addr = l.local_addr().expect("addr").as_socket().expect("inet");
    let _fill: Vec<_> = (0..4)
        .filter_map(|_| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).ok()
        })
        .collect();
    let px = fulcrum(
        "t-connect",
        &cfg(" timeout connect 200ms\n timeout client 10s\n timeout server 10s\n retries 0", addr),
    );
    closed_after(&px, b"x", Duration::from_millis(150), Duration::from_secs(3));
}

#[test]
fn timeout_tunnel_replaces_client_and_server_timeouts() {
    let echo = testserver("echo", "e");
    let px = fulcrum(
        "t-tunnel",
        &cfg(
            " timeout connect 1s\n timeout client 100ms\n timeout server 100ms\n timeout tunnel 2s",
            echo.addr,
        ),
    );
    let mut s = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut s, b"one"), b"one");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(echo_roundtrip(&mut s, b"two"), b"two", "closed by client/server timeout");
    closed_after(&px, b"", Duration::from_millis(1500), Duration::from_secs(5));
}

#[test]
fn fin_timeouts_close_a_half_closed_session() {
    // A server that accepts and then ignores everything, FIN included.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = silent.local_addr().expect("addr");
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(8));
        drop(held);
    });
    let px = fulcrum(
        "t-fin",
        &cfg(
            " timeout connect 1s\n timeout client 10s\n timeout server 10s\n timeout client-fin 200ms\n timeout server-fin 200ms",
            addr,
        ),
    );
    let mut s = connect(px.addr());
    std::io::Write::write_all(&mut s, b"data").expect("write");
    half_close(&s);
    let start = Instant::now();
    assert!(closed_within(&mut s, Duration::from_secs(3)), "half-closed session kept open");
    assert!(start.elapsed() >= Duration::from_millis(150), "closed before the fin timeout");
}

#[test]
fn half_close_is_passed_on_and_the_reply_still_arrives() {
    let echo = testserver("echo", "e");
    let px = fulcrum(
        "half-close",
        &cfg(" timeout connect 1s\n timeout client 5s\n timeout server 5s", echo.addr),
    );
    let mut s = connect(px.addr());
    let payload = vec![b'z'; 200_000];
    std::io::Write::write_all(&mut s, &payload).expect("write");
    half_close(&s);
    let mut back = Vec::new();
    s.read_to_end(&mut back).expect("read to EOF");
    assert_eq!(back.len(), payload.len());
    assert!(back == payload);
}

/// `rate-limit sessions`: a frontend takes at most that many new sessions per second (the others
/// wait in the kernel's backlog), as HAProxy's; 12 sessions at 5 per second span two second
/// boundaries at least, whoever serves them.
#[test]
fn rate_limit_sessions_spreads_new_sessions_over_seconds() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n rate-limit sessions 5\n default_backend be\n\
         backend be\n server s1 {}\n",
        ts.addr
    );
    let which: Vec<&str> =
        if haproxy_bin().is_some() { vec!["haproxy", "fulcrum"] } else { vec!["fulcrum"] };
    for w in which {
        let (proc, addrs, _) = start_proxy(w, "rate-limit", &cfg).expect("starts");
        let start = Instant::now();
        for i in 0..12 {
            let got = http_get(addrs[0], "/");
            assert_eq!(got.map(|g| g.0), Some(200), "{w}: request {i}");
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(1000), "{w}: 12 sessions in {took:?}");
        drop(proc);
    }
}

/// `option nolinger`: the proxy's close of a client connection leaves nothing behind on its side
/// (the close resets), as HAProxy's; without it, the proxy's side, which closed first, waits
/// for the client's end (FIN_WAIT2, then TIME_WAIT). The client keeps its socket open while
/// the proxy's side is looked at, so that only the proxy's close decides.
#[test]
#[cfg_attr(no_ss, ignore = "ss (iproute2) is not installed")]
fn option_nolinger_leaves_no_time_wait() {
    let echo = testserver("echo", "e");
    let which: Vec<&str> =
        if haproxy_bin().is_some() { vec!["haproxy", "fulcrum"] } else { vec!["fulcrum"] };
    for w in which {
        for (opt, lingers) in [("\n option nolinger", false), ("", true)] {
            let cfg = cfg(
                &format!(" timeout connect 1s\n timeout client 200ms\n timeout server 10s{opt}"),
                echo.addr,
            );
            let (proc, addrs, _) = start_proxy(w, "nolinger", &cfg).expect("starts");
            let mut s = connect(addrs[0]);
            let mut buf = [0u8; 16];
            // The client timeout closes it: an end, or a reset.
            let _ = s.read(&mut buf);
            let client = s.local_addr().expect("local").port();
            // (This connection's only: other tests' may have used the port before.)
            let port = format!("( sport = :{} and dport = :{client} )", addrs[0].port());
            let closing = || {
                let out = std::process::Command::new("ss")
                    .args(["-tan", "state", "fin-wait-1", "state", "fin-wait-2"])
                    .args(["state", "time-wait", &port])
                    .output()
                    .expect("ss");
                String::from_utf8_lossy(&out.stdout).lines().skip(1).count()
            };
            // The proxy's side ends at once after a reset, and waits for the client otherwise
            // (the proxy may take a moment to close after its end of the stream).
            let settled = eventually(Duration::from_secs(2), || (closing() > 0) == lingers);
            assert!(settled, "{w}{opt}: {} closing on the proxy's side", closing());
            drop(s);
            drop(proc);
        }
    }
}

/// A server that sends a byte every 150 ms, 16 times, then closes, reading what comes; its
/// address, and when (from its accept) it read the end of what the client sent.
fn dripping_server() -> (std::net::SocketAddr, std::sync::mpsc::Receiver<Duration>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut c, _)) = l.accept() else { return };
        let start = Instant::now();
        let mut r = c.try_clone().expect("clone");
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink);
            let _ = tx.send(start.elapsed());
        });
        for _ in 0..16 {
            if std::io::Write::write_all(&mut c, b"x").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        let _ = c.shutdown(std::net::Shutdown::Write);
    });
    (addr, rx)
}

/// A download through a tunnel whose client sends nothing: by default what reaches the
/// client keeps its `timeout client` from firing. With `option independent-streams` only
/// what the client sends does: the timeout ends the client's direction (the server reads
/// its end at once) while the download goes on, and the log says `cD`. As HAProxy 2.6 does.
#[test]
fn independent_streams_times_a_side_by_what_it_sends() {
    for indep in [false, true] {
        for which in ["fulcrum", "haproxy"] {
            let (server, fin) = dripping_server();
            let option = if indep { " option independent-streams\n" } else { "" };
            let cfg = format!(
                "global\n log stderr format raw local0\n\
                 defaults\n mode tcp\n log global\n option tcplog\n timeout connect 1s\n\
                 timeout client 600ms\n timeout server 10s\n{option}\
                 listen px\n bind {{fe0}}\n server s {server}\n"
            );
            let Some((p, addrs, _)) = start_proxy(which, "indep-streams", &cfg) else {
                continue;
            };
            let mut s = connect(addrs[0]);
            s.set_read_timeout(Some(Duration::from_secs(8))).expect("timeout");
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            assert_eq!(got.len(), 16, "{which}");
            drop(s);
            let fin = fin.recv_timeout(Duration::from_secs(5)).expect("the server read an end");
            let code = if indep { " cD " } else { " -- " };
            let logged = eventually(Duration::from_secs(3), || p.log_text().contains(code));
            assert!(logged, "{which}: {}", p.log_text());
            if indep {
                assert!(fin < Duration::from_millis(1500), "{which}: {fin:?}");
            } else {
                assert!(fin >= Duration::from_millis(2000), "{which}: {fin:?}");
            }
        }
    }
}
