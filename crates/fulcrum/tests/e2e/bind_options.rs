//! Bind options that choose who accepts and how a listener is known: `thread` (only the
//! workers of those threads accept on the line; threads beyond `nbthread` are left out, a set
//! of none of them refused) and `id` (`so_id`, the others numbered as HAProxy numbers them).
//! Beside HAProxy 2.6 on the same configuration.

use crate::harness::{get_with, start_proxy};

#[test]
fn thread_and_id_choose_the_accepting_workers_and_the_listener_ids() {
    let cfg = "global\n nbthread 2\n\
               defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind {fe0} thread 2\n bind {fe1} thread 1 id 1\n\
               bind {fe2} thread 1-5\n bind {fe3}\n\
               http-request return status 200 content-type text/plain lf-string \"%[thread] %[so_id]\"\n";
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "bind-thread-id", cfg) else { continue };
        // Each request on a new connection: every one is accepted by a worker of the line.
        let answers: Vec<Vec<String>> = addrs
            .iter()
            .map(|&a| {
                let mut v: Vec<String> = (0..8)
                    .map(|_| {
                        let (status, head, body) = get_with(a, "/", "");
                        assert_eq!(status, 200, "{which}: {head}");
                        body
                    })
                    .collect();
                v.sort();
                v.dedup();
                v
            })
            .collect();
        seen.push(answers);
    }
    // Threads from 0 in the fetch; `thread 1-5` with two threads is both. Ids: the line with `id 1` has it, the others take the free ones in turn,
    // the counter moving on past every listener.
    assert_eq!(seen[0][0], ["1 2"]);
    assert_eq!(seen[0][1], ["0 1"]);
    // (Lines on both workers: either one accepts.)
    for (i, id) in [(2, "4"), (3, "5")] {
        let either = |a: &String| *a == format!("0 {id}") || *a == format!("1 {id}");
        assert!(seen[0][i].iter().all(either), "{:?}", seen[0][i]);
    }
    if let Some(theirs) = seen.get(1) {
        assert_eq!(seen[0][..2], theirs[..2], "as HAProxy 2.6");
        for i in [2, 3] {
            let ids = |v: &[String]| v.iter().map(|a| a[2..].to_string()).collect::<Vec<_>>();
            assert_eq!(ids(&seen[0][i])[..1], ids(&theirs[i])[..1], "so_id as HAProxy 2.6");
        }
    }
}

#[test]
fn a_thread_set_naming_no_thread_of_the_process_is_refused() {
    let cfg = "global\n nbthread 2\n\
               defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind 127.0.0.1:1 thread 3-4\n\
               http-request return status 200\n";
    let (code, _, err) = crate::harness::check("bind-thread-none", cfg);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Proxy 'fe': 'thread' directive contains threads that belong to no group in 'bind 127.0.0.1:1' at ["),
        "{err}"
    );
}

/// Whether a socket listens on `addr` (an IPv4 address), from `/proc/net/tcp`.
fn listening_on(addr: std::net::SocketAddrV4) -> bool {
    let ip = u32::from_le_bytes(addr.ip().octets());
    let local = format!("{ip:08X}:{:04X}", addr.port());
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&local.as_str()) && f.get(3) == Some(&"0A")
    })
}

#[test]
fn transparent_binds_an_address_this_host_does_not_have() {
    // 198.51.100.0/24 is TEST-NET-2: configured on no interface here.
    let port = crate::harness::free_addr().port();
    let foreign = std::net::SocketAddrV4::new([198, 51, 100, 7].into(), port);
    for which in ["fulcrum", "haproxy"] {
        let cfg = format!(
            "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}}\n bind {foreign} transparent\n\
             http-request return status 200\n"
        );
        let Some((mut p, addrs, _)) = start_proxy(which, "bind-transparent", &cfg) else {
            continue;
        };
        let (status, head, _) = get_with(addrs[0], "/", "");
        assert_eq!(status, 200, "{which}: {head}");
        assert!(p.is_running(), "{which}");
        assert!(listening_on(foreign), "{which}: nothing listens on {foreign}");
        drop(p);
        // Without it, binding the address fails and the proxy does not start.
        let refused = cfg.replace(" transparent", "");
        let (mut p, _, _) = start_proxy(which, "bind-not-transparent", &refused).expect("started");
        let st = p.wait_exit(std::time::Duration::from_secs(10)).expect("exits");
        assert!(!st.success(), "{which}: {}", p.log_text());
    }
}

/// A NetScaler Client IP header (HAProxy's doc/netscaler-client-ip-insertion-protocol.txt)
/// for a TCP connection `src` -> `dst`: standard (`magic | CIP length | CIP type 1 | header
/// length | IP and TCP headers`) or legacy (`magic | header length | IP and TCP headers`).
fn cip_header(
    magic: u32,
    src: std::net::SocketAddr,
    dst: std::net::SocketAddr,
    legacy: bool,
) -> Vec<u8> {
    use std::net::IpAddr;
    let mut tcp = Vec::new();
    tcp.extend_from_slice(&src.port().to_be_bytes());
    tcp.extend_from_slice(&dst.port().to_be_bytes());
    tcp.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0xFF, 0xFF, 0, 0, 0, 0]);
    let ip = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut ip = vec![0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0];
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            ip
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut ip = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            ip
        }
        _ => panic!("one family"),
    };
    let body: Vec<u8> = ip.into_iter().chain(tcp).collect();
    let mut h = magic.to_be_bytes().to_vec();
    if legacy {
        h.extend_from_slice(&(body.len() as u32).to_be_bytes());
    } else {
        h.extend_from_slice(&(12 + body.len() as u32).to_be_bytes());
        h.extend_from_slice(&[0, 1]);
        h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    }
    h.extend(body);
    h
}

/// Sends `prefix` then a request on a new connection to `addr`: the answer's body, or what
/// the log says when the connection was refused.
fn after_cip(addr: std::net::SocketAddr, prefix: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    let mut out = prefix.to_vec();
    out.extend_from_slice(b"GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n");
    let _ = s.write_all(&out);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).into_owned();
    text.split_once("\r\n\r\n").map_or("refused".into(), |(_, body)| body.to_string())
}

#[test]
fn netscaler_client_ip_headers_give_the_session_its_addresses() {
    let cfg = "global\n log stderr format raw local0\n\
               defaults\n mode http\n log global\n option httplog\n timeout connect 5s\n\
               timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind {fe0} accept-netscaler-cip 1234\n\
               http-request return status 200 content-type text/plain lf-string \"%[src]:%[src_port] %[dst]:%[dst_port]\"\n\
               frontend fe2\n bind {fe1}\n tcp-request connection expect-netscaler-cip layer4\n\
               http-request return status 200 content-type text/plain lf-string \"%[src]:%[src_port] %[dst]:%[dst_port]\"\n";
    let v4 = ("192.0.2.10:4321".parse().expect("addr"), "198.51.100.20:80".parse().expect("addr"));
    let v6 =
        ("[2001:db8::10]:4321".parse().expect("addr"), "[2001:db8::20]:80".parse().expect("addr"));
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((p, addrs, _)) = start_proxy(which, "netscaler-cip", cfg) else { continue };
        let answers = [
            after_cip(addrs[0], &cip_header(1234, v4.0, v4.1, false)),
            after_cip(addrs[0], &cip_header(1234, v4.0, v4.1, true)),
            after_cip(addrs[0], &cip_header(1234, v6.0, v6.1, false)),
            after_cip(addrs[0], &cip_header(4321, v4.0, v4.1, false)),
            after_cip(addrs[0], b""),
            // `expect-netscaler-cip` without `accept-netscaler-cip`: the magic number is 0.
            after_cip(addrs[1], &cip_header(0, v4.0, v4.1, false)),
        ];
        assert_eq!(answers[0], "192.0.2.10:4321 198.51.100.20:80", "{which}");
        assert_eq!(answers[1], answers[0], "{which}");
        assert_eq!(answers[2], "2001:db8::10:4321 2001:db8::20:80", "{which}");
        assert_eq!(answers[3], "refused", "{which}");
        assert_eq!(answers[4], "refused", "{which}");
        assert_eq!(answers[5], answers[0], "{which}");
        let bad = "fe/1: Received an invalid NetScaler Client IP magic number";
        let logged = crate::harness::eventually(std::time::Duration::from_secs(3), || {
            p.log_text().matches(bad).count() == 2
        });
        assert!(logged, "{which}: {}", p.log_text());
        assert!(p.log_text().contains("192.0.2.10:4321 ["), "{which}: {}", p.log_text());
        seen.push(answers);
    }
    if let Some(theirs) = seen.get(1) {
        assert_eq!(seen[0], *theirs, "as HAProxy 2.6");
    }
}
