//! Protocol checks (`option redis-check`, `mysql-check`, `pgsql-check`, `smtpchk`, `ldap-check`,
//! `ssl-hello-chk`) against fake servers on 127.0.0.1 that answer right and wrong: the bytes each
//! check sends, and the check and state-change lines on stderr (`option log-health-checks`).
//!
//! Each scenario runs against Fulcrum, and against HAProxy too when it is installed, as a second
//! opinion that the expected lines are HAProxy's (`FULCRUM_TEST_TARGET=fulcrum|haproxy|both`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::harness::{eventually, fulcrum, scratch, spawn_with_listeners, Proc};

/// One move of a fake server's conversation.
#[derive(Clone)]
enum Move {
    /// Read exactly this many bytes (what the check sends), kept for the test to look at.
    Read(usize),
    Write(Vec<u8>),
    /// Close at once (after the writes before it).
    Close,
}
use Move::*;

/// A fake server: runs the conversation its script gives for the n-th connection (from 0).
struct Fake {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
}

impl Fake {
    fn start(script: impl Fn(usize) -> Vec<Move> + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2, script) = (Arc::clone(&seen), Arc::clone(&stop), Arc::new(script));
        std::thread::spawn(move || {
            let n = AtomicUsize::new(0);
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let moves = script(n.fetch_add(1, Ordering::Relaxed));
                        let seen = Arc::clone(&seen2);
                        std::thread::spawn(move || converse(conn, &moves, &seen));
                    }
                    // Nothing to accept: look again shortly (the thread ends with the test).
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Fake { addr, seen, stop }
    }

    /// What checks sent so far, one entry per `Read`.
    fn seen(&self) -> Vec<Vec<u8>> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn converse(mut conn: TcpStream, moves: &[Move], seen: &Mutex<Vec<Vec<u8>>>) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    for m in moves {
        match m {
            Read(n) => {
                let mut buf = vec![0; *n];
                if conn.read_exact(&mut buf).is_err() {
                    return;
                }
                if let Ok(mut s) = seen.lock() {
                    s.push(buf);
                }
            }
            Write(b) => {
                if conn.write_all(b).is_err() {
                    return;
                }
            }
            Close => return,
        }
    }
    // Said everything: wait for the check to close.
    let mut rest = [0; 512];
    while matches!(conn.read(&mut rest), Ok(n) if n > 0) {}
}

/// The proxies to run a scenario against.
fn targets() -> Vec<&'static str> {
    let haproxy = std::path::Path::new("/usr/sbin/haproxy").exists();
    match std::env::var("FULCRUM_TEST_TARGET").unwrap_or_default().as_str() {
        "fulcrum" => vec!["fulcrum"],
        "haproxy" => vec!["haproxy"],
        _ if haproxy => vec!["haproxy", "fulcrum"],
        _ => vec!["fulcrum"],
    }
}

/// Starts `target` with a backend `be` checked by `option`, one server per fake.
fn proxy(target: &str, test: &str, option: &str, servers: &[(&str, &Fake)]) -> Proc {
    let mut cfg = format!(
        "defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n    timeout check 1s\n\
         frontend fe\n    bind {{fe0}}\n    default_backend be\n\
         backend be\n    option log-health-checks\n    {option}\n"
    );
    for (name, fake) in servers {
        cfg.push_str(&format!("    server {name} {} check inter 100ms rise 2 fall 2\n", fake.addr));
    }
    if target == "fulcrum" {
        return fulcrum(test, &cfg).proc;
    }
    let dir = scratch(&format!("{test}-haproxy"));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind frontend");
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, cfg.replace("{fe0}", "fd@3")).expect("write cfg");
    let mut cmd = Command::new("/usr/sbin/haproxy");
    cmd.arg("-db").arg("-f").arg(&path);
    spawn_with_listeners(cmd, &dir, vec![listener])
}

/// Waits until a stderr line contains every part, in order; returns that line.
fn line_with(p: &Proc, parts: &[&str]) -> String {
    let find = || {
        p.log_text()
            .lines()
            .find(|l| {
                let mut at = 0;
                parts.iter().all(|part| match l[at..].find(part) {
                    Some(i) => {
                        at += i + part.len();
                        true
                    }
                    None => false,
                })
            })
            .map(str::to_string)
    };
    let found = eventually(Duration::from_secs(5), || find().is_some());
    assert!(found, "no line with {parts:?} in:\n{}", p.log_text());
    find().unwrap_or_default()
}

const HEALTH: &str = "Health check for server be/";

#[test]
fn redis_check_pings_and_takes_down_a_server_that_does_not_pong() {
    for target in targets() {
        let good = Fake::start(|_| vec![Read(14), Write(b"+PONG\r\n".to_vec())]);
        let bad = Fake::start(|_| {
            vec![Read(14), Write(b"-NOAUTH Authentication required.\r\n".to_vec()), Close]
        });
        let p =
            proxy(target, "redis-check", "option redis-check", &[("good", &good), ("bad", &bad)]);
        line_with(&p, &[HEALTH, "good succeeded, reason: Layer7 check passed, code: 0, info: \"Redis server is ok\""]);
        line_with(&p, &[HEALTH, "bad failed, reason: Layer7 wrong status, code: 0, info: \"-NOAUTH Authentication required.\""]);
        line_with(&p, &["Server be/bad is DOWN."]);
        assert_eq!(good.seen()[0], b"*1\r\n$4\r\nPING\r\n", "{target}");
    }
}

/// A MySQL 5.7 initial handshake.
fn mysql_handshake() -> Vec<u8> {
    let mut payload =
        b"\x0a5.7.44-log\x00\x07\x00\x00\x00abcdefgh\x00\xff\xf7\x21\x02\x00\xff\x81\x15".to_vec();
    payload.extend_from_slice(&[0; 10]);
    payload.extend_from_slice(b"ijklmnopqrst\x00mysql_native_password\x00");
    mysql_packet(0, &payload)
}

fn mysql_packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

#[test]
fn mysql_check_logs_in_and_one_success_counts_twice_as_in_haproxy() {
    for target in targets() {
        // Refused once (the server goes down), then accepted.
        let db = Fake::start(|n| {
            let answer = if n == 0 {
                mysql_packet(2, b"\xff\x15\x04#28000Access denied for user 'bob'@'localhost' (using password: NO)")
            } else {
                mysql_packet(2, b"\x00\x00\x00\x02\x00\x00\x00")
            };
            vec![Write(mysql_handshake()), Read(46), Write(answer)]
        });
        let p = proxy(target, "mysql-check", "option mysql-check user bob", &[("db", &db)]);
        line_with(&p, &[HEALTH, "db failed, reason: Layer7 wrong status, code: 1045, info: \"#28000Access denied for user 'bob'@'localhost' (using password: NO)\""]);
        line_with(&p, &["Server be/db is DOWN."]);
        // One check: the analysis reports the version, then the run reports again.
        line_with(
            &p,
            &[
                HEALTH,
                "db succeeded, reason: Layer7 check passed, code: 0, info: \"5.7.44-log\"",
                "status: 1/2 DOWN.",
            ],
        );
        let up = line_with(
            &p,
            &[
                HEALTH,
                "db succeeded, reason: Layer7 check passed, code: 0, check duration: ",
                "status: 2/2 UP.",
            ],
        );
        let log = p.log_text();
        let first = log.find("info: \"5.7.44-log\"").unwrap_or(usize::MAX);
        assert!(first < log.find(&up).unwrap_or(0), "{target}: {log}");
        line_with(&p, &["Server be/db is UP."]);
        let mut login = b"\x25\x00\x00\x01\x00\x82\x00\x00\x00\x80\x00\x01\x21".to_vec();
        login.extend_from_slice(&[0; 23]);
        login.extend_from_slice(b"bob\x00\x00\x01\x00\x00\x00\x01");
        assert_eq!(db.seen()[0], login, "{target}");
    }
}

#[test]
fn pgsql_check_sends_a_startup_message_and_reports_the_error_severity() {
    for target in targets() {
        let good =
            Fake::start(|_| vec![Read(18), Write(b"R\x00\x00\x00\x08\x00\x00\x00\x00".to_vec())]);
        let bad = Fake::start(|_| {
            let mut e =
                b"E\x00\x00\x00\x33SFATAL\x00VFATAL\x00C28000\x00Mno pg_hba.conf entry\x00\x00"
                    .to_vec();
            e[4] = (e.len() - 1) as u8;
            vec![Read(18), Write(e), Close]
        });
        let p = proxy(
            target,
            "pgsql-check",
            "option pgsql-check user bob",
            &[("good", &good), ("bad", &bad)],
        );
        line_with(&p, &[HEALTH, "good succeeded, reason: Layer7 check passed, code: 0, info: \"PostgreSQL server is ok\""]);
        line_with(&p, &[HEALTH, "bad failed, reason: Layer7 invalid response, info: \"FATAL\""]);
        assert_eq!(
            good.seen()[0],
            b"\x00\x00\x00\x12\x00\x03\x00\x00user\x00bob\x00\x00",
            "{target}"
        );
    }
}

#[test]
fn smtp_check_greets_says_ehlo_and_quits() {
    for target in targets() {
        let greeting = b"220 mx.example ESMTP\r\n".to_vec();
        let g = greeting.clone();
        let good = Fake::start(move |_| {
            vec![
                Write(g.clone()),
                Read(17),
                Write(b"250-mx.example\r\n250 SIZE 1000\r\n".to_vec()),
                Read(6),
                Write(b"221 2.0.0 Bye\r\n".to_vec()),
                Close,
            ]
        });
        let bad = Fake::start(move |_| {
            vec![
                Write(greeting.clone()),
                Read(17),
                Write(b"554 5.7.1 <mx.example>: Relay denied\r\n".to_vec()),
                Close,
            ]
        });
        let option = "option smtpchk EHLO mx.example";
        let p = proxy(target, "smtpchk", option, &[("good", &good), ("bad", &bad)]);
        line_with(
            &p,
            &[
                HEALTH,
                "good succeeded, reason: Layer7 check passed, code: 221, info: \"2.0.0 Bye\"",
            ],
        );
        line_with(&p, &[HEALTH, "bad failed, reason: Layer7 wrong status, code: 554, info: \"5.7.1 <3C>mx.example<3E>: Relay denied\""]);
        let seen = good.seen();
        assert_eq!(
            (&seen[0][..], &seen[1][..]),
            (&b"EHLO mx.example\r\n"[..], &b"QUIT\r\n"[..]),
            "{target}"
        );
    }
}

#[test]
fn ldap_check_binds_anonymously_and_reports_the_result_code() {
    const BIND: &[u8] = b"\x30\x0c\x02\x01\x01\x61\x07\x0a\x01\x00\x04\x00\x04\x00";
    for target in targets() {
        let good = Fake::start(|_| vec![Read(14), Write(BIND.to_vec())]);
        let bad = Fake::start(|_| {
            let mut denied = BIND.to_vec();
            denied[9] = 49;
            vec![Read(14), Write(denied)]
        });
        let p = proxy(target, "ldap-check", "option ldap-check", &[("good", &good), ("bad", &bad)]);
        line_with(
            &p,
            &[HEALTH, "good succeeded, reason: Layer7 check passed, code: 0, info: \"Success\""],
        );
        line_with(&p, &[HEALTH, "bad failed, reason: Layer7 wrong status, code: 49, info: \"See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9\""]);
        assert_eq!(
            good.seen()[0],
            b"\x30\x0c\x02\x01\x01\x60\x07\x02\x01\x03\x04\x00\x80\x00",
            "{target}"
        );
    }
}

#[test]
fn ssl_hello_check_sends_haproxys_dated_client_hello() {
    for target in targets() {
        // An alert record is an SSL answer too.
        let good =
            Fake::start(|_| vec![Read(126), Write(b"\x15\x03\x00\x00\x02\x02\x28".to_vec())]);
        let bad =
            Fake::start(|_| vec![Read(126), Write(b"HTTP/1.0 400 Bad request\r\n\r\n".to_vec())]);
        let p = proxy(
            target,
            "ssl-hello-chk",
            "option ssl-hello-chk",
            &[("good", &good), ("bad", &bad)],
        );
        line_with(&p, &[HEALTH, "good succeeded, reason: Layer6 check passed, check duration: "]);
        line_with(&p, &[HEALTH, "bad failed, reason: Layer6 invalid response, check duration: "]);
        let hello = good.seen()[0].clone();
        assert_eq!(&hello[..11], b"\x16\x03\x00\x00\x79\x01\x00\x00\x75\x03\x00", "{target}");
        let sent = u32::from_be_bytes([hello[11], hello[12], hello[13], hello[14]]);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        assert!(now.abs_diff(u64::from(sent)) < 60, "{target}: time {sent} vs {now}");
        assert_eq!(&hello[15..46], b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n\x00\x00\x4e", "{target}");
        assert_eq!(&hello[120..], b"\x00\x39\x00\x3a\x01\x00", "{target}");
    }
}
