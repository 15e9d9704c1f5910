//! `option socket-stats`: a statistics row and counters for each bind line, beside HAProxy
//! 2.6 on the same configuration and traffic; and which counter each stage of `tcp-request`
//! refusal raises (`dcon`, `dses`, `dreq`), on the frontend and on its listener.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::harness::{api, eventually, http_get, start_proxy};
use crate::runtime_api::{csv_rows, field};

const CFG: &str = "
global
    stats socket {dir}/api.sock level admin
defaults
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    mode http
    option socket-stats
    bind {fe0} name web
    bind {fe1} maxconn 50
    http-request return status 200 content-type text/plain string ok
frontend fc
    mode tcp
    option socket-stats
    bind {fe2}
    tcp-request content reject
    default_backend none
frontend fs
    mode tcp
    option socket-stats
    bind {fe3}
    tcp-request session reject
    default_backend none
backend none
    mode tcp
    server s 127.0.0.1:1
";

/// Connects, sends a byte, and waits for the proxy to close.
fn refused(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let _ = s.write_all(b"x");
    let _ = s.read_to_end(&mut Vec::new());
}

/// The fields a listener's row and a frontend's are compared on. (Not `smax`: how soon a
/// proxy sees a client's close decides whether the next connection overlaps it; not a
/// frontend's `slim`, which follows the file descriptor limit.)
const FIELDS: [&str; 18] = [
    "svname",
    "scur",
    "slim",
    "stot",
    "dreq",
    "dresp",
    "ereq",
    "status",
    "pid",
    "sid",
    "type",
    "mode",
    "dcon",
    "dses",
    "wrew",
    "eint",
    "ssl_sess",
    "ssl_failed_handshake",
];

#[test]
fn socket_stats_gives_each_bind_line_a_row_as_haproxy_does() {
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, dir)) = start_proxy(which, "socket-stats", CFG) else { continue };
        let sock = dir.join("api.sock");
        assert!(eventually(Duration::from_secs(5), || sock.exists()), "{which}: no API socket");
        for a in [addrs[0], addrs[0], addrs[1]] {
            assert_eq!(http_get(a, "/").map(|r| r.0), Some(200), "{which}");
        }
        refused(addrs[2]);
        refused(addrs[3]);
        let counted = eventually(Duration::from_secs(5), || {
            let (_, rows) = csv_rows(&api(&sock, "show stat"));
            rows.iter().any(|r| field(r, "pxname") == Some("fs") && field(r, "dses") == Some("1"))
        });
        assert!(counted, "{which}: {}", api(&sock, "show stat"));
        let (_, rows) = csv_rows(&api(&sock, "show stat"));
        // Rows of the frontends and their listeners, in order, with the fields compared.
        let picked: Vec<Vec<String>> = rows
            .iter()
            .filter(|r| matches!(field(r, "type"), Some("0" | "3")))
            .map(|r| {
                let addr = field(r, "addr").is_some();
                let frontend = field(r, "type") == Some("0");
                let mut v: Vec<String> = FIELDS
                    .iter()
                    .filter(|f| !(frontend && **f == "slim"))
                    .map(|f| format!("{f}={}", field(r, f).unwrap_or("")))
                    .collect();
                let smax = field(r, "smax").and_then(|v| v.parse::<u32>().ok());
                v.push(format!("served={}", smax.is_some_and(|m| m >= 1)));
                v.push(format!("{}:addr={addr}", field(r, "pxname").unwrap_or("")));
                v
            })
            .collect();
        // Listener rows only: type 8 in the filter.
        let (_, only) = csv_rows(&api(&sock, "show stat -1 8 -1"));
        assert_eq!(only.len(), 4, "{which}: {only:?}");
        assert!(only.iter().all(|r| field(r, "type") == Some("3")), "{which}: {only:?}");
        // The bytes of the listeners add up to their frontend's.
        let sum = |px: &str, f: &str, t: &str| -> u64 {
            rows.iter()
                .filter(|r| field(r, "pxname") == Some(px) && field(r, "type") == Some(t))
                .map(|r| field(r, f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
                .sum()
        };
        for f in ["bin", "bout"] {
            assert!(sum("fe", f, "3") > 0, "{which}: {f}");
            assert_eq!(sum("fe", f, "3"), sum("fe", f, "0"), "{which}: {f}");
        }
        seen.push(picked);
    }
    let ours = &seen[0];
    let names: Vec<&str> = ours.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "svname=FRONTEND",
            "svname=web",
            "svname=sock-2",
            "svname=FRONTEND",
            "svname=sock-1",
            "svname=FRONTEND",
            "svname=sock-1"
        ]
    );
    if let Some(theirs) = seen.get(1) {
        assert_eq!(ours.len(), theirs.len());
        for (o, t) in ours.iter().zip(theirs) {
            assert_eq!(o, t, "as HAProxy 2.6");
        }
    }
}
