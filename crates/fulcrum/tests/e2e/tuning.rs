//! The global process knobs with an effect one can see from outside: `noreuseport` (no other
//! socket may share the address), `insecure-setuid-wanted` (an external check's program may
//! gain privileges only with it), `h2-workaround-bogus-websocket-clients` (no
//! SETTINGS_ENABLE_CONNECT_PROTOCOL), the PROXY header of health checks (the server's own
//! `send-proxy`/`send-proxy-v2`, v2's LOCAL command unless `pp2-never-send-local`),
//! `profiling.tasks`, `fd-hard-limit` with `strict-limits`.
//!
//! Each scenario runs under HAProxy 2.6 too when it is installed, with the same expectations.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::harness::{api, eventually, free_addr, haproxy_bin, scratch, start_proxy};

fn targets() -> Vec<&'static str> {
    if haproxy_bin().is_some() {
        vec!["haproxy", "fulcrum"]
    } else {
        vec!["fulcrum"]
    }
}

const DEFAULTS: &str =
    "defaults\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n";

/// (HAProxy will not run without a listener.)
const FRONTEND: &str = "frontend fe\n    mode tcp\n    bind {fe0}\n    default_backend be\n";

/// Waits until something listens at `addr`.
fn listening(addr: SocketAddr) -> bool {
    eventually(Duration::from_secs(5), || TcpStream::connect(addr).is_ok())
}

/// Binds `addr` with SO_REUSEPORT, as a second process sharing it would.
fn bind_shared(addr: SocketAddr) -> std::io::Result<()> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())
}

#[test]
fn noreuseport_keeps_the_address_to_the_process() {
    for target in targets() {
        for noreuseport in [true, false] {
            let fe = free_addr();
            let knob = if noreuseport { "    noreuseport\n" } else { "" };
            let cfg = format!(
                "global\n{knob}{DEFAULTS}frontend fe\n    mode tcp\n    bind {fe}\n    default_backend be\n\
                 backend be\n    mode tcp\n    server s 127.0.0.1:1\n"
            );
            let Some((_p, _, _)) = start_proxy(target, "noreuseport", &cfg) else { continue };
            assert!(listening(fe), "{target}: not listening on {fe}");
            let shared = bind_shared(fe);
            if noreuseport {
                let e = shared.expect_err("the address is the proxy's alone");
                assert_eq!(e.raw_os_error(), Some(libc::EADDRINUSE), "{target}: {e}");
            } else {
                assert!(shared.is_ok(), "{target}: SO_REUSEPORT shares it: {shared:?}");
            }
        }
    }
}

#[test]
fn an_external_checks_program_gains_no_privileges_unless_insecure_setuid_wanted() {
    for target in targets() {
        for wanted in [false, true] {
            let dir = scratch(&format!("nonewprivs-{target}-{wanted}"));
            let out = dir.join("status");
            let script = dir.join("check.sh");
            let text = format!(
                "#!/bin/sh\ngrep NoNewPrivs /proc/self/status > {}\nexit 0\n",
                out.display()
            );
            std::fs::write(&script, text).expect("script");
            std::process::Command::new("chmod").arg("+x").arg(&script).status().expect("chmod");
            let knob = if wanted { "    insecure-setuid-wanted\n" } else { "" };
            let cfg = format!(
                "global\n    external-check\n    insecure-fork-wanted\n{knob}{DEFAULTS}{FRONTEND}\
                 backend be\n    mode tcp\n    option external-check\n    external-check command {}\n\
                 \x20   external-check path \"/usr/bin:/bin\"\n\
                 \x20   server s 127.0.0.1:1 check inter 200ms\n",
                script.display()
            );
            let Some((_p, _, _)) = start_proxy(target, "nonewprivs", &cfg) else { continue };
            let seen = eventually(Duration::from_secs(5), || {
                std::fs::read_to_string(&out).is_ok_and(|s| s.ends_with('\n'))
            });
            assert!(seen, "{target}: the check's program did not run");
            let status = std::fs::read_to_string(&out).unwrap_or_default();
            let expect = if wanted { "0" } else { "1" };
            assert_eq!(
                status.split_whitespace().nth(1),
                Some(expect),
                "{target} {wanted}: {status}"
            );
        }
    }
}

/// The SETTINGS an HTTP/2 server sends a new client: (identifier, value) pairs.
fn server_settings(addr: SocketAddr) -> Vec<(u16, u32)> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").expect("preface");
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let mut head = [0u8; 9];
        s.read_exact(&mut head).expect("a frame");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).expect("its payload");
        // SETTINGS, not its ACK.
        if head[3] == 4 && head[4] & 1 == 0 {
            return body
                .chunks(6)
                .map(|c| {
                    (u16::from_be_bytes([c[0], c[1]]), u32::from_be_bytes([c[2], c[3], c[4], c[5]]))
                })
                .collect();
        }
    }
    panic!("no SETTINGS from {addr}");
}

#[test]
fn the_websocket_workaround_withdraws_enable_connect_protocol() {
    for target in targets() {
        for workaround in [false, true] {
            let knob = if workaround { "    h2-workaround-bogus-websocket-clients\n" } else { "" };
            let cfg = format!(
                "global\n{knob}{DEFAULTS}frontend fe\n    mode http\n    bind {{fe0}} proto h2\n\
                 \x20   http-request return status 200\n"
            );
            let Some((_p, addrs, _)) = start_proxy(target, "h2ws", &cfg) else { continue };
            let settings = server_settings(addrs[0]);
            let announced = settings.contains(&(8, 1));
            assert_eq!(announced, !workaround, "{target}: {settings:?}");
        }
    }
}

/// The first bytes of each connection the proxy's checks open to `l`, for `within`.
fn check_bytes(l: &TcpListener, within: Duration) -> Vec<u8> {
    l.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok((mut c, _)) = l.accept() {
            c.set_nonblocking(false).expect("blocking");
            c.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
            let mut got = Vec::new();
            let mut buf = [0u8; 256];
            while let Ok(n @ 1..) = c.read(&mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
            return got;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Vec::new()
}

const V2_SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

#[test]
fn checks_send_the_servers_proxy_header_as_haproxy_does() {
    for target in targets() {
        // (server options, global line, what the check's connection begins with)
        for (opts, global, expect) in [
            ("send-proxy", "", "v1"),
            ("send-proxy port {port}", "", "none"),
            ("check-send-proxy", "", "v1"),
            ("send-proxy-v2", "", "local"),
            ("send-proxy-v2", "    pp2-never-send-local\n", "proxy"),
        ] {
            let l = TcpListener::bind("127.0.0.1:0").expect("server");
            let at = l.local_addr().expect("addr");
            let opts = opts.replace("{port}", &at.port().to_string());
            let cfg = format!(
                "global\n{global}{DEFAULTS}{FRONTEND}backend be\n    mode tcp\n\
                 \x20   server s {at} check inter 300ms {opts}\n"
            );
            let Some((_p, _, _)) = start_proxy(target, "checkproxy", &cfg) else { continue };
            let got = check_bytes(&l, Duration::from_secs(5));
            let what = format!("{target} '{opts}' {global:?}: {got:?}");
            match expect {
                "v1" => {
                    let text = String::from_utf8_lossy(&got);
                    assert!(text.starts_with("PROXY TCP4 127.0.0.1 127.0.0.1 "), "{what}");
                    assert!(text.ends_with(&format!(" {}\r\n", at.port())), "{what}");
                }
                "none" => assert!(got.is_empty(), "{what}"),
                "local" => assert_eq!(got, [V2_SIG, &[0x20, 0, 0, 0]].concat(), "{what}"),
                _ => {
                    assert!(got.starts_with(&[V2_SIG, &[0x21, 0x11, 0, 12]].concat()), "{what}");
                    assert_eq!(&got[16..20], [127, 0, 0, 1], "{what}");
                    assert_eq!(u16::from_be_bytes([got[26], got[27]]), at.port(), "{what}");
                }
            }
        }
    }
}

#[test]
fn profiling_tasks_sets_the_profilers_start() {
    for target in targets() {
        let cfg = format!(
            "global\n    profiling.tasks on\n    stats socket {{dir}}/api.sock level admin\n{DEFAULTS}\
             frontend fe\n    mode http\n    bind {{fe0}}\n    http-request return status 200\n"
        );
        let Some((_p, _, dir)) = start_proxy(target, "proftasks", &cfg) else { continue };
        let sock = dir.join("api.sock");
        assert!(eventually(Duration::from_secs(5), || sock.exists()), "{target}: no socket");
        let out = api(&sock, "show profiling");
        let line = out.lines().find(|l| l.starts_with("Per-task CPU profiling")).unwrap_or("");
        assert_eq!(line.split_whitespace().nth(4), Some("on"), "{target}: {out}");
    }
}

#[test]
fn fd_hard_limit_caps_the_limit_and_strict_limits_refuses_more() {
    for target in targets() {
        for strict in [true, false] {
            let knob = if strict { "" } else { "    no strict-limits\n" };
            let cfg = format!(
                "global\n    ulimit-n 60000\n    fd-hard-limit 3000\n{knob}{DEFAULTS}\
                 frontend fe\n    mode http\n    bind {{fe0}}\n    http-request return status 200\n"
            );
            let Some((mut p, addrs, _)) = start_proxy(target, "fdhard", &cfg) else { continue };
            let said = "Cannot raise FD limit to 60000, limit is ";
            assert!(
                eventually(Duration::from_secs(5), || p.log_text().contains(said)),
                "{target}: {}",
                p.log_text()
            );
            if strict {
                let st = p.wait_exit(Duration::from_secs(5));
                assert!(st.is_some_and(|s| !s.success()), "{target}: must stop: {st:?}");
                assert!(p.log_text().contains("[ALERT]"), "{target}: {}", p.log_text());
            } else {
                assert!(p.log_text().contains("[WARNING]"), "{target}: {}", p.log_text());
                assert!(crate::harness::http_get(addrs[0], "/").is_some_and(|r| r.0 == 200));
                // At most fd-hard-limit, as HAProxy 2.6.0's code and manual say (Debian's
                // 2.6.12 takes the hard limit here).
                if target == "fulcrum" {
                    let limits = std::fs::read_to_string(format!("/proc/{}/limits", p.pid()))
                        .unwrap_or_default();
                    let open =
                        limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or("");
                    assert_eq!(open.split_whitespace().nth(3), Some("3000"), "{open}");
                }
            }
        }
    }
}

#[test]
fn tcp_check_send_lf_renders_its_format_at_each_run() {
    for target in targets() {
        let l = TcpListener::bind("127.0.0.1:0").expect("server");
        let at = l.local_addr().expect("addr");
        let cfg = format!(
            "global\n{DEFAULTS}{FRONTEND}backend be\n    mode tcp\n    option tcp-check\n\
             \x20   tcp-check connect\n\
             \x20   tcp-check set-var(check.x) str(abc)\n\
             \x20   tcp-check set-var(check.h) str(41420a)\n\
             \x20   tcp-check send-lf \"x=%[var(check.x)]\\r\\n\"\n\
             \x20   tcp-check send-binary-lf \"%[var(check.h)]\"\n\
             \x20   server s {at} check inter 300ms\n"
        );
        let Some((_p, _, _)) = start_proxy(target, "sendlf", &cfg) else { continue };
        let got = check_bytes(&l, Duration::from_secs(5));
        assert_eq!(String::from_utf8_lossy(&got), "x=abc\r\nAB\n", "{target}");
    }
}

#[test]
fn http_check_send_renders_uri_lf_body_lf_and_header_formats() {
    for target in targets() {
        let l = TcpListener::bind("127.0.0.1:0").expect("server");
        let at = l.local_addr().expect("addr");
        let cfg = format!(
            "global\n{DEFAULTS}{FRONTEND}backend be\n    mode http\n    option httpchk\n\
             \x20   http-check set-var(check.p) str(/health)\n\
             \x20   http-check send meth POST uri-lf %[var(check.p)]?n=%[int(7)] ver HTTP/1.1 \
             hdr X-P %[var(check.p)] hdr X-Gone %[var(check.none)] hdr X-Lit 100%% \
             body-lf b=%[var(check.p)]\n\
             \x20   http-check expect status 200\n\
             \x20   server s {at} check inter 300ms\n"
        );
        let Some((_p, _, _)) = start_proxy(target, "sendhttplf", &cfg) else { continue };
        let got = check_bytes(&l, Duration::from_secs(5));
        // A header that renders empty is left out, as HAProxy 2.6 leaves it.
        let want = "POST /health?n=7 HTTP/1.1\r\nx-p: /health\r\nx-lit: 100%\r\n\
                    content-length: 9\r\nconnection: close\r\n\r\nb=/health";
        assert_eq!(String::from_utf8_lossy(&got), want, "{target}");
    }
}
