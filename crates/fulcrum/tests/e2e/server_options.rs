//! Server options that change how connections to a server are made and kept, or what a
//! stream served by it leaves behind: `max-reuse` (HTTP/1 and HTTP/2 connections carry at
//! most that many requests after their first), `tfo` (the request goes in the SYN once the
//! server gave a cookie) and `non-stick` (nothing stored in stick tables). Beside HAProxy 2.6
//! where it does the same.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::harness::{fulcrum, start_proxy, testserver};

/// Sends `n` requests one after the other on one keep-alive connection to `addr`; the value
/// of header `name` in each answer.
fn keep_alive(addr: SocketAddr, n: usize, name: &str) -> Vec<String> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut seen = Vec::new();
    let mut buf = Vec::new();
    for i in 0..n {
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
        // Each answer has a Content-Length: read until its body is whole.
        let (head, rest) = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_string();
                break (head, end + 4);
            }
            let mut chunk = [0u8; 4096];
            let k = s.read(&mut chunk).unwrap_or(0);
            assert!(k > 0, "request {i}: the connection ended");
            buf.extend_from_slice(&chunk[..k]);
        };
        let field = |n: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(n).then(|| v.trim().to_string())
            })
        };
        let len: usize = field("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while buf.len() < rest + len {
            let mut chunk = [0u8; 4096];
            let k = s.read(&mut chunk).unwrap_or(0);
            assert!(k > 0, "request {i}: the body ended early");
            buf.extend_from_slice(&chunk[..k]);
        }
        buf.drain(..rest + len);
        seen.push(field(name).unwrap_or_else(|| format!("<none> {head}")));
    }
    seen
}

/// Numbers the distinct values in order of appearance: `[p, p, q]` becomes `[0, 0, 1]`.
fn groups(v: &[String]) -> Vec<usize> {
    let mut order: Vec<&String> = Vec::new();
    v.iter()
        .map(|x| match order.iter().position(|o| *o == x) {
            Some(i) => i,
            None => {
                order.push(x);
                order.len() - 1
            }
        })
        .collect()
}

#[test]
fn max_reuse_bounds_the_requests_a_server_connection_carries() {
    let ts = testserver("http", "a");
    // The HTTP/2 server: a Fulcrum frontend speaking clear-text HTTP/2.
    let h2 = fulcrum(
        "max-reuse-h2",
        &format!(
            "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}} proto h2\n default_backend be\n\
             backend be\n server s1 {}\n",
            ts.addr
        ),
    );
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         http-reuse always\n\
         frontend h1\n bind {{fe0}}\n default_backend h1\n\
         frontend h2\n bind {{fe1}}\n default_backend h2\n\
         backend h1\n http-response set-header x-conn %[bc_src_port]\n\
         server s1 {} max-reuse 2\n\
         backend h2\n http-response set-header x-conn %[bc_src_port]\n\
         server s1 {} proto h2 max-reuse 2\n",
        ts.addr,
        h2.addr()
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "max-reuse", &cfg) else { continue };
        let h1 = groups(&keep_alive(addrs[0], 7, "x-conn"));
        let h2 = groups(&keep_alive(addrs[1], 7, "x-conn"));
        seen.push((which, h1, h2));
    }
    // Three requests per connection: its first and two more.
    let three = vec![0, 0, 0, 1, 1, 1, 2];
    assert_eq!(seen[0].1, three, "HTTP/1 connections");
    assert_eq!(seen[0].2, three, "HTTP/2 connections");
    if let Some((_, h1, h2)) = seen.get(1) {
        assert_eq!(h2, &three, "HAProxy 2.6 bounds its HTTP/2 connections the same way");
        // (HAProxy 2.6's HTTP/1 connections ignore max-reuse.)
        assert_eq!(h1, &vec![0; 7], "HAProxy 2.6 keeps its HTTP/1 connection");
    }
}

/// `tfo_server.py`: a server with TCP Fast Open answering whether each SYN carried data.
const TFO_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/tfo_server.py");

/// The TFO server, killed (by PID) when dropped.
struct TfoServer(std::process::Child, SocketAddr);

impl TfoServer {
    fn start() -> TfoServer {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new("python3")
            .arg(TFO_SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start tfo_server.py");
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let port: u16 = line.trim().parse().expect("the TFO server's port");
        TfoServer(child, SocketAddr::from(([127, 0, 0, 1], port)))
    }
}

impl Drop for TfoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(no_tfo_server, ignore = "net.ipv4.tcp_fastopen lacks server support (bit 2)")]
fn tfo_sends_the_request_in_the_syn_once_the_server_gave_a_cookie() {
    let server = TfoServer::start();
    let srv = server.1;
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         http-reuse never\n\
         frontend fe\n bind {{fe0}}\n use_backend plain if {{ path_beg /plain }}\n\
         default_backend tfo\n\
         backend tfo\n server s1 {srv} tfo\n\
         backend plain\n server s1 {srv} no-tfo\n"
    );
    let (_p, addrs, _) = start_proxy("fulcrum", "tfo", &cfg).expect("fulcrum");
    let syn = |path: &str| {
        let (status, head, _) = crate::harness::get_with(addrs[0], path, "");
        assert_eq!(status, 200, "{head}");
        crate::tls::header(&head, "x-syn-data").unwrap_or("<none>").to_string()
    };
    // The first connection may ask for the cookie; those after it carry the request.
    let with: Vec<String> = (0..4).map(|_| syn("/")).collect();
    assert!(with[1..].iter().all(|s| s == "1"), "with tfo: {with:?}");
    let without: Vec<String> = (0..3).map(|_| syn("/plain")).collect();
    assert!(without.iter().all(|s| s == "0"), "with no-tfo: {without:?}");
}

#[test]
fn a_non_stick_server_is_never_stored_in_a_stick_table() {
    let (s1, s2) = (testserver("http", "s1"), testserver("http", "s2"));
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n use_backend plain if {{ path_beg /plain }}\n\
         default_backend be\n\
         backend be\n balance roundrobin\n stick-table type ip size 10\n stick on src\n\
         server s1 {a} non-stick\n server s2 {b}\n\
         backend plain\n balance roundrobin\n stick-table type ip size 10\n stick on src\n\
         default-server non-stick\n server s1 {a} stick\n server s2 {b}\n",
        a = s1.addr,
        b = s2.addr
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "non-stick", &cfg) else { continue };
        let served = |path: &str| -> Vec<String> {
            (0..4)
                .map(|_| {
                    let (_, head, _) = crate::harness::get_with(addrs[0], path, "");
                    crate::tls::header(&head, "x-server").unwrap_or("<none>").to_string()
                })
                .collect()
        };
        seen.push((served("/"), served("/plain")));
    }
    // `s1` serves the first request but is not stored: the second goes to `s2`, stored, and
    // the client sticks to it. With `stick` on `s1`, the first request sticks.
    assert_eq!(seen[0].0, ["s1", "s2", "s2", "s2"]);
    assert_eq!(seen[0].1, ["s1", "s1", "s1", "s1"]);
    if let Some(theirs) = seen.get(1) {
        assert_eq!(&seen[0], theirs, "as HAProxy 2.6");
    }
}

/// A server that answers each HTTP request on its own connection with the address the
/// connection came from, then closes.
fn peer_echo() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in l.incoming().take(16) {
            let Ok(mut c) = conn else { return };
            let peer = c.peer_addr().map(|p| p.ip().to_string()).unwrap_or_default();
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{peer}",
                peer.len()
            );
            let _ = c.write_all(answer.as_bytes());
        }
    });
    addr
}

/// `source 0.0.0.0 usesrc hdr_ip(<name>[,<occ>])`: the connection to the server comes from
/// the IPv4 address in that occurrence of the request's header (loopback addresses here, so
/// no routing is needed); without it, HAProxy's internal error (a 500, `IC`). Beside HAProxy
/// 2.6.
#[test]
#[cfg_attr(
    not_root,
    ignore = "binding a transparent source needs root (see crates/fulcrum/build.rs)"
)]
fn usesrc_hdr_ip_connects_from_the_address_a_header_gives() {
    let server = peer_echo();
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n use_backend first if {{ path /first }}\n default_backend last\n\
         backend last\n source 0.0.0.0 usesrc hdr_ip(x-client)\n server s1 {server}\n\
         backend first\n server s1 {server} source 0.0.0.0 usesrc hdr_ip(x-client,1)\n"
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "usesrc-hdr-ip", &cfg) else { continue };
        let ask = |path: &str, extra: &str| {
            let (status, _, body) = crate::harness::get_with(addrs[0], path, extra);
            format!("{status} {body}")
        };
        let got = vec![
            ask("/", "x-client: 127.0.0.7, 127.0.0.9\r\n"),
            ask("/first", "x-client: 127.0.0.7, 127.0.0.9\r\n"),
            ask("/", "x-client: 127.0.0.5:1234\r\n"),
            ask("/", ""),
        ];
        assert_eq!(got[..3], ["200 127.0.0.9", "200 127.0.0.7", "200 127.0.0.5"], "{which}");
        assert!(got[3].starts_with("500 "), "{which}: {got:?}");
        seen.push(got);
    }
    if let Some(theirs) = seen.get(1) {
        assert_eq!(seen[0][..3], theirs[..3], "as HAProxy 2.6");
    }
}
