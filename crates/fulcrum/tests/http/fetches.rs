//! Sample fetches HAProxy 2.6 has that real configurations use, beside HAProxy on the same
//! requests: the hashes of Host and path (`base32`, `url32` and their `+src` forms), `baseq`,
//! `url_ip`/`url_port`, the `*_val` integer forms, header names and binary header lists,
//! response header and cookie counts, `http_auth_bearer`, `capture.res.ver`, and
//! `req.proto_http` (the `HTTP` ACL) in a `mode tcp` proxy, where HAProxy reads the first bytes
//! as an HTTP request for every request fetch.

use std::time::Duration;

use crate::px::*;

/// The request's values of the request fetches, as headers of the echoed request.
const REQ_FETCHES: &[(&str, &str)] = &[
    ("x-baseq", "baseq"),
    ("x-base32", "base32"),
    ("x-base32src", "base32+src,hex"),
    ("x-url32", "url32"),
    ("x-url32src", "url32+src,hex"),
    ("x-urlip", "url_ip"),
    ("x-urlport", "url_port"),
    ("x-hdrval", "hdr_val(x-v)"),
    ("x-hdrval1", "req.hdr_val(x-v,1)"),
    ("x-urlpval", "urlp_val(n)"),
    ("x-names", "req.hdr_names(;)"),
    ("x-bin", "req.hdrs_bin,hex"),
    ("x-proto", "req.proto_http"),
    ("x-bearer", "http_auth_bearer"),
    ("x-bearer2", "http_auth_bearer(x-tok)"),
    ("x-meth", "meth(GET)"),
];

/// Response fetches, as headers of the response.
const RES_FETCHES: &[(&str, &str)] = &[
    ("r-cnt", "res.hdr_cnt(set-cookie)"),
    ("r-val", "res.hdr_val(x-n)"),
    ("r-ip", "res.hdr_ip(x-ip)"),
    ("r-fcnt", "res.fhdr_cnt(set-cookie)"),
    ("r-ccnt", "res.cook_cnt(a)"),
    ("r-ccnt0", "res.cook_cnt"),
    ("r-cval", "res.cook_val(b)"),
    ("r-scook", "scook(a)"),
    ("r-names", "res.hdr_names"),
    ("r-ver", "capture.res.ver"),
    ("r-shdr", "shdr_cnt(x-ip)"),
    ("r-sval", "shdr_val(x-n)"),
    ("r-scval", "scook_val(a)"),
];

fn config(srv: &Running) -> String {
    let mut lines = String::new();
    for (h, f) in REQ_FETCHES {
        lines.push_str(&format!(" http-request set-header {h} %[{f}]\n"));
    }
    lines.push_str(" http-request set-header x-http yes if HTTP\n");
    for (h, f) in RES_FETCHES {
        lines.push_str(&format!(" http-response set-header {h} %[{f}]\n"));
    }
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

#[test]
fn request_and_response_fetches_give_what_haproxy_gives() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv));
        // The response sets two cookies in one header (split at the comma, as HAProxy splits
        // `Set-Cookie`) and one in another, whose attribute `path` counts as a cookie for a
        // nameless `res.cook_cnt`, as in HAProxy.
        let raw = "GET /p?echo=1&n=-12x&z=1&setcookie=a=5;%20path=/&setcookie=b=7x,%20a=9\
                   &hdr=X-N:42abc&hdr=X-Ip:10.1.2.3 HTTP/1.0\r\nHost: Example.com:80\r\n\
                   X-V: 77, 5\r\nAuthorization: Bearer   tok123\r\nX-Tok: bearer abc\r\n\r\n";
        let r = px.send(raw.as_bytes());
        assert_eq!(r.status, 200);
        let h = r.echoed();
        let req: Vec<(String, Option<String>)> = REQ_FETCHES
            .iter()
            .map(|(n, _)| n)
            .chain(&["x-http"])
            .map(|n| (n.to_string(), h.header(n).map(str::to_string)))
            .collect();
        let res: Vec<(String, Option<String>)> = RES_FETCHES
            .iter()
            .map(|(n, _)| (n.to_string(), r.header(n).map(str::to_string)))
            .collect();
        // Values measured on HAProxy 2.6 for this request (the hashes: sdbm of the Host and
        // the path, then HAProxy's avalanche; the client is 127.0.0.1).
        let want = [
            ("x-baseq", "Example.com:80/p?echo=1&n=-12x&z=1&setcookie=a=5;%20path=/&setcookie=b=7x,%20a=9&hdr=X-N:42abc&hdr=X-Ip:10.1.2.3"),
            ("x-hdrval", "5"),
            ("x-hdrval1", "77"),
            ("x-urlpval", "-12"),
            ("x-proto", "1"),
            ("x-bearer", "tok123"),
            ("x-bearer2", "abc"),
            ("x-meth", "GET"),
            ("x-http", "yes"),
            ("x-urlip", ""),
            ("x-urlport", ""),
        ];
        for (n, v) in want {
            assert_eq!(h.header(n), Some(v), "{n}");
        }
        let base32: u32 = h.header("x-base32").and_then(|v| v.parse().ok()).expect("base32");
        let src = h.header("x-base32src").expect("base32+src");
        assert_eq!(src, format!("{base32:08X}7F000001"), "the hash, then the address");
        let names = h.header("x-names").expect("names");
        assert!(names.starts_with("host;x-v;authorization;x-tok;x-baseq;"), "{names}");
        let want = [
            ("r-cnt", "3"),
            ("r-val", "42"),
            ("r-ip", "10.1.2.3"),
            ("r-fcnt", "2"),
            ("r-ccnt", "2"),
            ("r-ccnt0", "4"),
            ("r-cval", "7"),
            ("r-scook", "9"),
            ("r-ver", "HTTP/1.1"),
            ("r-shdr", "1"),
            ("r-sval", "42"),
            ("r-scval", "9"),
        ];
        for (n, v) in want {
            assert_eq!(r.header(n), Some(v), "{n}");
        }
        (req, res)
    });
}

#[test]
fn url_ip_and_url_port_read_an_absolute_target_written_with_an_address() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv));
        let h = px
            .send(b"GET http://192.0.2.7:8081/echo?x HTTP/1.1\r\nHost: 192.0.2.7:8081\r\nConnection: close\r\n\r\n")
            .echoed();
        assert_eq!((h.header("x-urlip"), h.header("x-urlport")), (Some("192.0.2.7"), Some("8081")));
        let h = px
            .send(b"GET https://192.0.2.7/echo HTTP/1.1\r\nHost: 192.0.2.7\r\nConnection: close\r\n\r\n")
            .echoed();
        assert_eq!(h.header("x-urlport"), Some("443"), "https's default port");
        // Without a Host, `baseq` is the path and query alone.
        let h = px.send(b"GET /echo?q HTTP/1.0\r\n\r\n").echoed();
        assert_eq!(h.header("x-baseq"), Some("/echo?q"));
        (h.header("x-base32").map(str::to_string), h.header("x-url32").map(str::to_string))
    });
}

/// A `mode tcp` frontend that sends HTTP to a web backend and anything else elsewhere, the
/// classic HAProxy port-sharing configuration: `req.proto_http` (the `HTTP` ACL) and `hdr()`
/// read the first bytes as an HTTP request, waiting for a whole head under the inspection
/// delay.
#[test]
fn a_tcp_proxy_tells_http_from_other_bytes_and_routes_by_host() {
    each(|t| {
        let (web, two) = (server("web"), server("two"));
        let px = t.start(&format!(
            "defaults\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
             frontend ft\n mode tcp\n bind {{fe0}}\n tcp-request inspect-delay 3s\n\
             tcp-request content accept if HTTP\n tcp-request content accept if {{ req.len gt 3 }}\n\
             use_backend two if {{ hdr(host) -i two.example }}\n use_backend web if HTTP\n\
             default_backend none\n\
             backend web\n mode tcp\n server web {}\n\
             backend two\n mode tcp\n server two {}\n\
             backend none\n mode tcp\n server dead {DEAD}\n",
            web.addr(),
            two.addr()
        ));
        let served = |parts: &[&[u8]]| {
            let mut cl = px.client();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(300));
                }
                cl.send(p);
            }
            cl.read_final(false).map(|r| r.server().to_string()).unwrap_or_default()
        };
        // A request head split in two: the rules wait for the whole head.
        let split =
            served(&[b"GET / HTTP/1.1\r\n", b"Host: two.example\r\nConnection: close\r\n\r\n"]);
        let plain = served(&[b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]);
        let other = served(&[b"SSH-2.0-OpenSSH_9.2\r\n"]);
        assert_eq!((split.as_str(), plain.as_str(), other.as_str()), ("two", "web", ""));
        assert_eq!(web.counts().conns + two.counts().conns, 2, "nothing else reached them");
    });
}

/// What the process, the proxies and the servers say of themselves (`env`, `hostname`, `proc`,
/// `fe_*`, `so_id`, `dst_conn`, `*_is_local`, `fc_http_major`, `srv_*`, `be_*`, `cur_*`
/// timeouts, `date` in milliseconds), on a first request, beside HAProxy.
#[test]
fn process_proxy_and_server_facts_as_haproxy() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "global\n setenv FULCRUM_T bar\n\
             defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 7s\n\
             frontend fe\n bind {{fe0}}\n\
             http-request set-header X-Proc %[env(FULCRUM_T)]/%[proc]/%[stopping]/%[hostname]\n\
             http-request set-header X-Fe %[fe_id]/%[fe_defbe]/%[fe_client_timeout]/%[so_id]/%[dst_conn]/%[fe_req_rate]/%[fe_sess_rate]\n\
             http-request set-header X-Local %[src_is_local]/%[dst_is_local]/%[fc_src_is_local]/%[fc_dst_is_local]\n\
             http-request set-header X-Conn %[fc_http_major]/%[fc_rcvd_proxy]/%[prio_class]/%[prio_offset]\n\
             http-request set-header X-Srv %[srv_queue(be/s1)]/%[srv_sess_rate(be/s1)]/%[srv_weight(be/s1)]/%[srv_iweight(be/s1)]/%[srv_uweight(be/s1)]/%[srv_conn_free(be/s1)]/%[srv_conn_free(be/s2)]\n\
             http-request set-header X-Free %[be_conn_free(be)]/%[be_conn_free(other)]\n\
             http-request set-header X-Time %[date(0,ms)]/%[date_us]/%[thread]\n\
             default_backend be\n\
             backend be\n timeout tunnel 3s\n\
             http-request set-header X-Be %[be_id]/%[be_server_timeout]/%[be_tunnel_timeout]/%[cur_server_timeout]/%[cur_tunnel_timeout]/%[be_conn_free]\n\
             http-response set-header X-Cur %[cur_server_timeout]/%[cur_tunnel_timeout]\n\
             server s1 {0} weight 10 maxconn 20\n server s2 {0} weight 3\n\
             backend other\n server b1 {0} maxconn 5 backup\n server b2 {0} maxconn 7\n",
            srv.addr()
        ));
        let before = std::time::SystemTime::now();
        let r = px.get("/echo");
        let h = r.echoed();
        let ms = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as u64
        };
        let time = h.header("x-time").expect("x-time").to_string();
        let parts: Vec<u64> = time.split('/').map(|p| p.parse().expect("numbers")).collect();
        assert!(parts[0] >= ms(before) && parts[0] <= ms(std::time::SystemTime::now()), "{time}");
        assert!(parts[1] < 1_000_000 && parts[2] < 64, "{time}");
        let host = h.header("x-proc").and_then(|p| p.rsplit('/').next()).unwrap_or("");
        assert!(!host.is_empty(), "hostname");
        let want = [
            ("x-fe", "1/be/5000/1/1/1/1"),
            ("x-local", "1/1/1/1"),
            ("x-conn", "1/0/0/0"),
            ("x-srv", "0/0/10/10/10/20/-1"),
            ("x-free", "-1/7"),
            ("x-be", "2/7000/3000/0/0/-1"),
        ];
        for (n, v) in want {
            assert_eq!(h.header(n), Some(v), "{n}");
        }
        assert_eq!(r.header("x-cur"), Some("7000/3000"), "set once the server is connected");
        h.header("x-proc").map(str::to_string)
    });
}

/// An RDP connection request (TPKT and X.224 headers, 11 bytes) carrying `cookie`.
fn rdp_request(cookie: &str) -> Vec<u8> {
    let body = format!("Cookie: {cookie}\r\n");
    let len = 11 + body.len();
    let mut v = vec![3, 0, (len >> 8) as u8, len as u8, (len - 5) as u8, 0xe0, 0, 0, 0, 0, 0];
    v.extend_from_slice(body.as_bytes());
    v
}

/// Remote desktop farms, HAProxy's classic `mode tcp` configuration: `RDP_COOKIE` waits for
/// the connection request, `balance rdp-cookie` hashes the user's `mstshash` cookie (the same
/// user, the same server; which server each user gets is compared with HAProxy's),
/// `persist rdp-cookie` sends a client whose `msts` cookie names a server (its IPv4 address and
/// port as Microsoft encodes them) there, and `rdp_cookie()` reads the cookie in a rule.
#[test]
fn rdp_cookie_balance_persistence_and_rules_as_haproxy() {
    each(|t| {
        let srvs: Vec<Running> = (1..=3).map(|i| server(&format!("s{i}"))).collect();
        let px = t.start(&format!(
            "defaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
             frontend ft\n bind {{fe0}}\n tcp-request inspect-delay 3s\n\
             tcp-request content accept if RDP_COOKIE\n\
             use_backend solo if {{ rdp_cookie(mstshash) -m str admin }}\n\
             default_backend farm\n\
             backend farm\n balance rdp-cookie\n persist rdp-cookie\n\
             server s1 {}\n server s2 {}\n\
             backend solo\n server s3 {}\n",
            srvs[0].addr(),
            srvs[1].addr(),
            srvs[2].addr()
        ));
        let served = |parts: &[Vec<u8>]| -> usize {
            let before: Vec<u64> = srvs.iter().map(|s| s.counts().conns).collect();
            let mut cl = px.client();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(300));
                }
                cl.send(p);
            }
            let _ = cl.read_for(Duration::from_millis(500));
            let mut which = 0;
            assert!(
                eventually(Duration::from_secs(3), || {
                    let now: Vec<u64> = srvs.iter().map(|s| s.counts().conns).collect();
                    which = (0..3).find(|&i| now[i] > before[i]).map_or(0, |i| i + 1);
                    which != 0
                }),
                "no server got the connection"
            );
            which
        };
        // The request in two parts: the rules wait for the whole cookie line.
        let req = rdp_request("mstshash=alice");
        let split = served(&[req[..14].to_vec(), req[14..].to_vec()]);
        let users: Vec<usize> = ["alice", "bob", "carol", "dave", "erin", "frank"]
            .iter()
            .map(|u| served(&[rdp_request(&format!("mstshash={u}"))]))
            .collect();
        assert_eq!(split, users[0], "the same user, the same server");
        assert!(users.iter().all(|&s| s == 1 || s == 2), "{users:?}");
        assert_eq!(served(&[rdp_request("mstshash=admin")]), 3, "rdp_cookie() in a rule");
        // s2's address and port in Microsoft's encoding.
        let a = srvs[1].addr();
        let std::net::IpAddr::V4(ip) = a.ip() else { panic!("IPv4 test server") };
        let msts = format!(
            "msts={}.{}.0000",
            u32::from_le_bytes(ip.octets()),
            u16::from_le_bytes(a.port().to_be_bytes())
        );
        for _ in 0..3 {
            assert_eq!(served(&[rdp_request(&msts)]), 2, "persist rdp-cookie");
        }
        users
    });
}

/// The client connection's `TCP_INFO` fetches beside HAProxy: on a quiet loopback connection
/// no segment is lost, retransmitted, unacknowledged or selectively acknowledged, the
/// reordering metric is the kernel's initial one, and the round-trip time is short (in
/// milliseconds by default, or in microseconds).
#[test]
fn tcp_info_fetches_read_the_client_connection_as_haproxy_does() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&listen(&format!(
            " http-request set-header X-Tcp %[fc_unacked]/%[fc_sacked]/%[fc_lost]/%[fc_retrans]/%[fc_fackets]/%[fc_reordering]\n\
             http-request set-header X-Rtt %[fc_rtt]/%[fc_rttvar(ms)]\n\
             http-request set-header X-Rtt-Us %[fc_rtt(us)]\n\
             server s1 {}\n",
            srv.addr()
        )));
        let h = px.get("/echo").echoed();
        let us: u64 = h.header("x-rtt-us").and_then(|v| v.parse().ok()).expect("fc_rtt(us)");
        assert!(us > 0 && us < 1_000_000, "{us} µs");
        let reordering = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_reordering")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "3".into());
        assert_eq!(h.header("x-tcp"), Some(format!("0/0/0/0/0/{reordering}").as_str()));
        let ms: Vec<u64> =
            h.header("x-rtt").expect("x-rtt").split('/').map(|v| v.parse().expect("ms")).collect();
        assert!(ms.len() == 2 && ms[0] < 1000 && ms[1] < 1000, "{ms:?}");
        h.header("x-tcp").map(str::to_string)
    });
}
