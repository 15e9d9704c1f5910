//! `option accept-invalid-http-request` and `option accept-invalid-http-response`: the HTTP/1
//! heads HAProxy 2.6 refuses by default and lets through with them (a header name with a
//! space or a parenthesis, a target byte above 0x7F, `HTTP/1.12`, an HTTP/0.9 request, a Host
//! naming another host than an absolute target; a server's `HTTP/1.12` status line and odd
//! header name), each kept for `show errors`; the same Host twice, merged with the option;
//! `h1-case-adjust` towards bogus peers; HTTP/1.0 GET with a body (413) and
//! `h1-accept-payload-with-any-method`; `option disable-h2-upgrade`.
//!
//! Every request runs under HAProxy 2.6 too when it is installed, with the same expectations.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use crate::harness::{api, eventually, exchange, haproxy_bin, parse_response, start_proxy};

fn targets() -> Vec<&'static str> {
    if haproxy_bin().is_some() {
        vec!["haproxy", "fulcrum"]
    } else {
        vec!["fulcrum"]
    }
}

/// (request, status without the option, status with it; 0: not compared)
const REQUESTS: &[(&[u8], u16, u16)] = &[
    (b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\nConnection: close\r\n\r\n", 400, 200),
    (b"GET / HTTP/1.1\r\nHost: a\r\nx(y): v\r\nConnection: close\r\n\r\n", 400, 200),
    (b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 400, 200),
    (b"GET / HTTP/1.12\r\nHost: a\r\nConnection: close\r\n\r\n", 400, 200),
    (b"GET /x\r\n\r\n", 400, 200),
    (b"GET / RTSP/1.0\r\n\r\n", 400, 200),
    (b"GET / HTTP/1.1\r\nHost: a\r\nx\x01y: v\r\nConnection: close\r\n\r\n", 400, 200),
    (b"POST /x\r\n\r\n", 400, 400),
    (b"GET http://a/ HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n", 400, 200),
    // (Without the option HAProxy takes it and Fulcrum refuses it on purpose, issue 16: 0.)
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\nConnection: close\r\n\r\n", 0, 200),
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n", 400, 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\nConnection: close\r\n\r\n", 400, 400),
];

#[test]
fn accept_invalid_http_request_lets_through_what_haproxy_does() {
    // A server that takes anything (a strict one would refuse what the proxy lets through).
    let srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    for target in targets() {
        for lenient in [false, true] {
            let opt = if lenient { "    option accept-invalid-http-request\n" } else { "" };
            let cfg = format!(
                "global\n    stats socket {{dir}}/api.sock level admin\n\
                 defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
                 frontend fe\n    bind {{fe0}}\n{opt}    default_backend be\n\
                 backend be\n    server s1 {srv}\n"
            );
            let Some((_p, addrs, dir)) = start_proxy(target, "acceptinvalid", &cfg) else {
                continue;
            };
            for &(raw, strict, lax) in REQUESTS {
                let want = if lenient { lax } else { strict };
                if want == 0 {
                    continue;
                }
                let got = parse_response(&exchange(addrs[0], raw)).map(|r| r.0);
                let what = String::from_utf8_lossy(raw);
                assert_eq!(got, Some(want), "{target} lenient={lenient}: {what:?}");
            }
            // What was let through, or refused, is kept for `show errors`.
            let sock = dir.join("api.sock");
            assert!(eventually(Duration::from_secs(5), || sock.exists()));
            let errors = api(&sock, "show errors");
            assert!(errors.contains("frontend fe (#"), "{target}: {errors}");
            assert!(errors.contains("invalid request"), "{target}: {errors}");
        }
    }
}

/// A server that answers every connection with `answer`, then closes it.
fn raw_server(answer: &'static [u8]) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("server");
    let at = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten().take(200) {
            c.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(answer);
        }
    });
    at
}

#[test]
fn accept_invalid_http_response_lets_through_what_haproxy_does() {
    let answers: [(&'static [u8], u16, u16); 3] = [
        (b"HTTP/1.12 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", 502, 200),
        (
            b"HTTP/1.1 200 OK\r\nBad Name: v\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
            502,
            200,
        ),
        (b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", 502, 502),
    ];
    for (answer, strict, lax) in answers {
        let server = raw_server(answer);
        for target in targets() {
            for lenient in [false, true] {
                let opt = if lenient { "    option accept-invalid-http-response\n" } else { "" };
                let cfg = format!(
                    "defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
                     frontend fe\n    bind {{fe0}}\n    default_backend be\n\
                     backend be\n{opt}    server s1 {server}\n"
                );
                let Some((_p, addrs, _)) = start_proxy(target, "acceptinvalidresp", &cfg) else {
                    continue;
                };
                let raw = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
                let got = parse_response(&exchange(addrs[0], raw)).map(|r| r.0);
                let want = if lenient { lax } else { strict };
                let what = String::from_utf8_lossy(answer);
                assert_eq!(got, Some(want), "{target} lenient={lenient}: {what:?}");
            }
        }
    }
}

/// A server that keeps what each connection sent (on `seen`) and answers `answer`.
fn capturing_server(
    answer: &'static [u8],
) -> (std::net::SocketAddr, std::sync::mpsc::Receiver<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("server");
    let at = l.local_addr().expect("addr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten().take(50) {
            c.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(n @ 1..) => got.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            let _ = tx.send(got);
            let _ = c.write_all(answer);
        }
    });
    (at, rx)
}

#[test]
fn h1_case_adjust_gives_names_their_case_towards_bogus_peers() {
    let answer = b"HTTP/1.1 200 OK\r\nx-custom-header: 1\r\nx-from-file: 2\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let (server, seen) = capturing_server(answer);
    for target in targets() {
        for adjust in [false, true] {
            let (cli, srv) = match adjust {
                true => (
                    "    option h1-case-adjust-bogus-client\n",
                    "    option h1-case-adjust-bogus-server\n",
                ),
                false => ("", ""),
            };
            let cfg = format!(
                "global\n    h1-case-adjust x-custom-header X-Custom-Header\n    h1-case-adjust-file {{dir}}/names\n\
                 defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
                 frontend fe\n    bind {{fe0}}\n{cli}    default_backend be\n\
                 backend be\n{srv}    server s1 {server}\n"
            );
            let dir = crate::harness::scratch(&format!("h1case-names-{target}"));
            std::fs::write(dir.join("names"), "# names\nx-from-file X-From-File\n").expect("file");
            let cfg = cfg.replace("{dir}", &dir.display().to_string());
            let Some((_p, addrs, _)) = start_proxy(target, "h1case", &cfg) else { continue };
            let raw =
                b"GET / HTTP/1.1\r\nHost: a\r\nx-custom-header: v\r\nConnection: close\r\n\r\n";
            let got = String::from_utf8_lossy(&exchange(addrs[0], raw)).into_owned();
            let sent = String::from_utf8_lossy(
                &seen.recv_timeout(Duration::from_secs(5)).expect("a request"),
            )
            .into_owned();
            let (to_client, to_server) = match adjust {
                true => (
                    ["\r\nX-Custom-Header: 1\r\n", "\r\nX-From-File: 2\r\n"],
                    "\r\nX-Custom-Header: v\r\n",
                ),
                false => (
                    ["\r\nx-custom-header: 1\r\n", "\r\nx-from-file: 2\r\n"],
                    "\r\nx-custom-header: v\r\n",
                ),
            };
            for line in to_client {
                assert!(got.contains(line), "{target} adjust={adjust}: {line:?} in {got:?}");
            }
            assert!(
                sent.contains(to_server),
                "{target} adjust={adjust}: {to_server:?} in {sent:?}"
            );
        }
    }
}

#[test]
fn an_http10_get_with_a_body_is_413_unless_h1_accept_payload_with_any_method() {
    for target in targets() {
        for any in [false, true] {
            let knob = if any { "global\n    h1-accept-payload-with-any-method\n" } else { "" };
            let cfg = format!(
                "{knob}defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
                 frontend fe\n    bind {{fe0}}\n    http-request return status 200\n"
            );
            let Some((_p, addrs, _)) = start_proxy(target, "anymethod", &cfg) else { continue };
            for (raw, refused) in [
                (&b"GET / HTTP/1.0\r\nContent-Length: 2\r\n\r\nab"[..], true),
                (b"DELETE / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true),
                (b"GET / HTTP/1.0\r\nContent-Length: 0\r\n\r\n", false),
                (b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nab", false),
            ] {
                let want = if refused && !any { 413 } else { 200 };
                let got = parse_response(&exchange(addrs[0], raw)).map(|r| r.0);
                assert_eq!(
                    got,
                    Some(want),
                    "{target} any={any}: {:?}",
                    String::from_utf8_lossy(raw)
                );
            }
        }
    }
}

#[test]
fn disable_h2_upgrade_refuses_the_preface_on_an_http1_connection() {
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    for target in targets() {
        for disabled in [false, true] {
            let opt = if disabled { "    option disable-h2-upgrade\n" } else { "" };
            let cfg = format!(
                "defaults\n    mode http\n    timeout connect 1s\n    timeout client 2s\n    timeout server 2s\n\
                 frontend fe\n    bind {{fe0}}\n{opt}    http-request return status 200\n"
            );
            let Some((_p, addrs, _)) = start_proxy(target, "h2upgrade", &cfg) else { continue };
            let mut s = crate::harness::connect(addrs[0]);
            s.write_all(preface).expect("preface");
            let mut head = [0u8; 9];
            s.read_exact(&mut head).expect("an answer");
            if disabled {
                assert_eq!(&head, b"HTTP/1.1 ", "{target}: refused as HTTP/1");
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
                assert!(
                    rest.starts_with(b"400 "),
                    "{target}: {:?}",
                    String::from_utf8_lossy(&rest)
                );
            } else {
                // The server's SETTINGS frame.
                assert_eq!(head[3], 4, "{target}: HTTP/2 answered: {head:?}");
            }
        }
    }
}
