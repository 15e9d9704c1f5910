//! `set-src`, `set-dst` and their ports at every rule level, and what sees the new addresses:
//! later rules, `option forwardfor`/`originalto`, the `fc_*` fetches (the connection's own
//! addresses), compared with HAProxy 2.6.

use crate::px::*;

#[test]
fn http_request_set_src_from_a_header_lasts_one_request_and_feeds_forwardfor() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         http-request set-src hdr(x-real-ip) if {{ req.hdr(x-real-ip) -m found }}\n\
         http-request set-dst ipv4(10.9.9.9) if {{ path /echo }}\n\
         http-request set-dst-port int(8443) if {{ path /echo }}\n\
         http-after-response set-header x-seen \"%[src] %[fc_src] %[dst] %[dst_port] %[fc_dst]\"\n\
         option forwardfor\n option originalto\n default_backend be\n\
         backend be\n server s1 {}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let mut cl = px.client();
        let mut got = Vec::new();
        for (path, hdr) in [
            ("/echo", "x-real-ip: 203.0.113.7\r\n"),
            ("/echo", ""),
            ("/", "x-real-ip: 2001:db8::5\r\n"),
        ] {
            let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{hdr}\r\n");
            let r = cl.request(req.as_bytes());
            let seen = r.header("x-seen").map(|v| {
                // The client's own port differs per run.
                v.split(' ')
                    .map(|w| if w.parse::<u16>().is_ok() && w != "8443" { "P" } else { w })
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            let fwd = (path == "/echo").then(|| {
                let e = r.echoed();
                (
                    e.header("x-forwarded-for").map(String::from),
                    e.header("x-original-to").map(String::from),
                )
            });
            got.push((r.status, seen, fwd));
        }
        let first = got[0].2.clone().expect("echoed");
        assert_eq!(first, (Some("203.0.113.7".into()), Some("10.9.9.9".into())));
        let second = got[1].2.clone().expect("echoed");
        assert_eq!(second.0.as_deref(), Some("127.0.0.1"), "the next request has its own src");
        got
    });
}

#[test]
fn connection_and_session_rules_change_the_connection_s_and_the_session_s_addresses() {
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         tcp-request connection set-src ipv4(10.0.0.1)\n\
         tcp-request connection set-dst ipv4(10.0.0.2)\n\
         tcp-request session set-src ipv4(10.1.0.1)\n\
         tcp-request session set-src-port int(4242)\n\
         tcp-request content set-dst ipv4(10.2.0.2) if {{ path /content }}\n\
         http-request return status 200 hdr x-a \"%[fc_src] %[src] %[src_port] %[fc_dst] %[dst]\"\n"
    );
    each(|t| {
        let px = t.start(&cfg);
        let mut cl = px.client();
        let got = ["/", "/content", "/"]
            .iter()
            .map(|p| {
                let req = format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n");
                cl.request(req.as_bytes()).header("x-a").map(String::from)
            })
            .collect::<Vec<_>>();
        assert_eq!(got[0].as_deref(), Some("10.0.0.1 10.1.0.1 4242 10.0.0.2 10.0.0.2"));
        assert_eq!(got[1].as_deref(), Some("10.0.0.1 10.1.0.1 4242 10.0.0.2 10.2.0.2"));
        got
    });
}

#[test]
fn http_send_name_header_names_the_server_each_try_reaches() {
    // The first server refuses connections (a closed port): with `option redispatch` the retry
    // goes to the other one, and the header names it, in place of the client's own.
    let srv = server("s2");
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let cfg = format!(
        "{DEFAULTS}listen px\n bind {{fe0}}\n timeout connect 200ms\n retries 1\n\
         option redispatch\n balance roundrobin\n http-send-name-header X-Srv\n\
         server dead {dead}\n server live {}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let mut got = Vec::new();
        for _ in 0..4 {
            let r = px.client().request(b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Srv: spoofed\r\n\r\n");
            assert_eq!(r.status, 200);
            let e = r.echoed();
            got.push(e.all("x-srv").iter().map(|v| v.to_string()).collect::<Vec<_>>());
        }
        assert!(got.iter().all(|v| v == &["live"]), "{got:?}");
        got
    });
}
