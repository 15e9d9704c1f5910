//! Every balance algorithm, observed from the outside: which server answers each connection.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use crate::harness::*;

fn three_http() -> [TestServer; 3] {
    [testserver("http", "s1"), testserver("http", "s2"), testserver("http", "s3")]
}

fn cfg(balance: &str, servers: &[TestServer], server_opts: &[&str]) -> String {
    let mut c = format!(
        "global\n nbthread 1\ndefaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n balance {balance}\n"
    );
    for (i, s) in servers.iter().enumerate() {
        c += &format!(" server {} {} {}\n", s.name, s.addr, server_opts.get(i).unwrap_or(&""));
    }
    c
}

/// Opens a keep-alive connection, makes one request and keeps the connection open.
fn held(addr: SocketAddr) -> (TcpStream, String) {
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed before a response");
        buf.extend_from_slice(&chunk[..n]);
    }
    let (_, server, _) = parse_response(&buf).expect("response");
    (s, server)
}

#[test]
fn roundrobin_follows_weights_1_2_3() {
    let s = three_http();
    let px = fulcrum("rr", &cfg("roundrobin", &s, &["weight 1", "weight 2", "weight 3"]));
    let names = servers_of(px.addr(), 60);
    assert_eq!(
        [count(&names, "s1"), count(&names, "s2"), count(&names, "s3")],
        [10, 20, 30],
        "{names:?}"
    );
}

#[test]
fn roundrobin_is_the_default_when_balance_is_omitted() {
    let s = three_http();
    let text = cfg("roundrobin", &s, &[]).replace(" balance roundrobin\n", "");
    let px = fulcrum("rr-default", &text);
    let names = servers_of(px.addr(), 30);
    assert_eq!([count(&names, "s1"), count(&names, "s2"), count(&names, "s3")], [10, 10, 10]);
}

#[test]
fn static_rr_follows_weights() {
    let s = three_http();
    let px = fulcrum("static-rr", &cfg("static-rr", &s, &["weight 3", "weight 1", "weight 2"]));
    let names = servers_of(px.addr(), 60);
    assert_eq!([count(&names, "s1"), count(&names, "s2"), count(&names, "s3")], [30, 10, 20]);
}

#[test]
fn leastconn_sends_new_sessions_to_the_idle_server() {
    let s = three_http();
    let px = fulcrum("leastconn", &cfg("leastconn", &s, &[]));
    let mut conns: Vec<(TcpStream, String)> = (0..3).map(|_| held(px.addr())).collect();
    let mut names: Vec<&str> = conns.iter().map(|c| c.1.as_str()).collect();
    names.sort();
    assert_eq!(names, ["s1", "s2", "s3"], "one session each");
    // Free s2: the next two sessions cannot both avoid it.
    let pos = conns.iter().position(|c| c.1 == "s2").expect("s2 held");
    drop(conns.remove(pos));
    assert!(eventually(std::time::Duration::from_secs(2), || {
        let (c, name) = held(px.addr());
        let ok = name == "s2";
        conns.push((c, name));
        ok
    }));
}

#[test]
fn first_fills_servers_in_order_up_to_maxconn() {
    let s = three_http();
    let px = fulcrum("first", &cfg("first", &s, &["maxconn 2", "maxconn 2", "maxconn 2"]));
    let conns: Vec<(TcpStream, String)> = (0..5).map(|_| held(px.addr())).collect();
    let names: Vec<&str> = conns.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(names, ["s1", "s1", "s2", "s2", "s3"]);
}

#[test]
fn source_keeps_each_client_address_on_one_server() {
    let s = three_http();
    let px = fulcrum("source", &cfg("source", &s, &[]));
    let mut seen = std::collections::HashSet::new();
    for last in 1..=12u8 {
        let local: SocketAddr = format!("127.0.0.{last}:0").parse().expect("addr");
        let names: Vec<String> = (0..4)
            .map(|_| {
                let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .expect("socket");
                sock.bind(&local.into()).expect("bind source");
                sock.connect(&px.addr().into()).expect("connect");
                let mut s: TcpStream = sock.into();
                s.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
                s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .expect("write");
                let mut buf = Vec::new();
                s.read_to_end(&mut buf).expect("read");
                parse_response(&buf).expect("response").1
            })
            .collect();
        assert!(names.iter().all(|n| *n == names[0]), "127.0.0.{last} moved: {names:?}");
        seen.insert(names[0].clone());
    }
    assert!(seen.len() >= 2, "12 client addresses all hashed to one server: {seen:?}");
}

#[test]
fn random_reaches_every_server() {
    let s = three_http();
    let px = fulcrum("random", &cfg("random", &s, &[]));
    let names = servers_of(px.addr(), 60);
    for n in ["s1", "s2", "s3"] {
        assert!(count(&names, n) >= 5, "{n} got {} of 60", count(&names, n));
    }
}

#[test]
fn backup_server_is_used_only_when_active_servers_are_down() {
    let s = three_http();
    let dead = dead_addr();
    let text = format!(
        "defaults\n mode tcp\n timeout connect 500ms\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n\
         server s1 {} \n server b1 {} backup\n server b2 {} backup\n",
        s[0].addr, s[1].addr, s[2].addr
    );
    let px = fulcrum("backup", &text);
    let names = servers_of(px.addr(), 6);
    assert_eq!(count(&names, "s1"), 6, "{names:?}");
    let text = format!(
        "defaults\n mode tcp\n timeout connect 500ms\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n\
         server s1 {dead} disabled\n server b1 {} backup\n server b2 {} backup\n",
        s[1].addr, s[2].addr
    );
    let px = fulcrum("backup2", &text);
    let names = servers_of(px.addr(), 6);
    assert_eq!(count(&names, "s2"), 6, "first backup only: {names:?}");
}
