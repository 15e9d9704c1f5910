//! `tune.rcvbuf.client|server` and `tune.sndbuf.client|server`: the kernel buffer sizes of the
//! proxy's own sockets, read back from the kernel with `ss -tm` (iproute2) while a connection
//! is open through the proxy.

use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use crate::harness::*;

/// `(local, peer, rb, tb)` of every established TCP socket (`ss -tmnH`).
fn sockets() -> Vec<(SocketAddr, SocketAddr, u64, u64)> {
    let out = Command::new("ss").args(["-tmnH", "state", "established"]).output().expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    let mut addrs: Option<(SocketAddr, SocketAddr)> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(mem) = words.iter().find_map(|w| w.strip_prefix("skmem:(")) {
            let field = |tag: &str| {
                mem.trim_end_matches(')')
                    .split(',')
                    .find_map(|f| f.strip_prefix(tag).and_then(|v| v.parse::<u64>().ok()))
            };
            if let (Some((l, p)), Some(rb), Some(tb)) = (addrs.take(), field("rb"), field("tb")) {
                found.push((l, p, rb, tb));
            }
        } else if words.len() >= 4 {
            addrs = words[2].parse().ok().zip(words[3].parse().ok());
        }
    }
    found
}

/// Starts Fulcrum with `cfg` (listening on `fe`), and echoes through it on a connection kept
/// open: the proxy, that connection, and its local address.
fn echo_through(name: &str, cfg: &str, fe: SocketAddr) -> (Fulcrum, TcpStream, SocketAddr) {
    let f = fulcrum(name, cfg);
    let mut client = None;
    assert!(
        eventually(Duration::from_secs(5), || {
            client = TcpStream::connect(fe).ok();
            client.is_some()
        }),
        "fulcrum did not listen on {fe}"
    );
    let mut client = client.expect("connected");
    assert_eq!(echo_roundtrip(&mut client, b"ping"), b"ping", "echo through the proxy");
    let me = client.local_addr().expect("local address");
    (f, client, me)
}

#[test]
#[cfg_attr(no_ss, ignore = "ss (iproute2) is not installed (see crates/fulcrum/build.rs)")]
fn tune_socket_buffers_reach_client_and_server_sockets() {
    let echo = testserver("echo", "e1");
    // The client side is set on listening sockets Fulcrum opens itself (not on fd@ ones).
    let fe = free_addr();
    let cfg = format!(
        "global\n nbthread 1\n tune.rcvbuf.client 16384\n tune.sndbuf.client 24576\n\
         tune.rcvbuf.server 32768\n tune.sndbuf.server 40960\n\
         defaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {fe}\n default_backend be\nbackend be\n server e1 {}\n",
        echo.addr
    );
    let (_f, _client, me) = echo_through("socket_buffers", &cfg, fe);

    let all = sockets();
    // Linux doubles SO_RCVBUF/SO_SNDBUF values for its own bookkeeping.
    let accepted = all.iter().find(|s| s.0 == fe && s.1 == me);
    assert_eq!(
        accepted.map(|s| (s.2, s.3)),
        Some((2 * 16384, 2 * 24576)),
        "the client connection's buffers ({all:?})"
    );
    let to_server = all.iter().find(|s| s.1 == echo.addr && s.0.ip() == echo.addr.ip());
    assert_eq!(
        to_server.map(|s| (s.2, s.3)),
        Some((2 * 32768, 2 * 40960)),
        "the server connection's buffers ({all:?})"
    );
    // Our own end of the client connection was left to the kernel: the check can tell.
    let ours = all.iter().find(|s| s.0 == me).map(|s| (s.2, s.3));
    assert_ne!(ours, Some((2 * 16384, 2 * 24576)));
}

/// `(local, peer, timer)` of every established TCP socket (`ss -tnoH`), the timer as `ss`
/// prints it (`keepalive,1min16sec,0`), empty without one.
fn timers() -> Vec<(SocketAddr, SocketAddr, String)> {
    let out = Command::new("ss").args(["-tnoH", "state", "established"]).output().expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 4 {
            continue;
        }
        let (Ok(l), Ok(p)) = (words[2].parse(), words[3].parse()) else { continue };
        let timer = words
            .iter()
            .find_map(|w| w.strip_prefix("timer:(").map(|t| t.trim_end_matches(')').to_string()))
            .unwrap_or_default();
        found.push((l, p, timer));
    }
    found
}

#[test]
#[cfg_attr(no_ss, ignore = "ss (iproute2) is not installed (see crates/fulcrum/build.rs)")]
fn tcp_keepalive_probes_are_armed_on_client_and_server_connections() {
    let echo = testserver("echo", "e1");
    let fe = free_addr();
    // Idle times of 77 s and 88 s: the system default is two hours.
    let cfg = format!(
        "global\n nbthread 1\n\
         defaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n option clitcpka\n clitcpka-idle 77\n clitcpka-intvl 5s\n\
         clitcpka-cnt 3\n bind {fe}\n default_backend be\n\
         backend be\n option srvtcpka\n srvtcpka-idle 88s\n server e1 {}\n",
        echo.addr
    );
    let (_f, _client, me) = echo_through("tcp_keepalive", &cfg, fe);
    let all = timers();
    let accepted = all.iter().find(|s| s.0 == fe && s.1 == me).map(|s| s.2.as_str());
    assert!(
        accepted.is_some_and(|t| t.starts_with("keepalive,1min")),
        "the client connection's keep-alive ({all:?})"
    );
    let to_server = all.iter().find(|s| s.1 == echo.addr && s.0.ip() == echo.addr.ip());
    assert!(
        to_server.is_some_and(|s| s.2.starts_with("keepalive,1min")),
        "the server connection's keep-alive ({all:?})"
    );
    // Our own end has none: the check can tell.
    let ours = all.iter().find(|s| s.0 == me).map(|s| s.2.as_str());
    assert!(!ours.is_some_and(|t| t.starts_with("keepalive")), "{all:?}");
}
