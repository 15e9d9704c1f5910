//! Health checks, black box: the real binary in front of servers written here, which die,
//! hang, answer the wrong status, and recover; what stderr says and where requests go. Where
//! HAProxy is installed, the state lines are compared with what HAProxy 2.6 prints for the same
//! configuration and the same server behaviour.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::*;

/// A controllable HTTP server: its answer status, a hang switch, and whether it listens at all.
/// Checks ask `/health`; traffic asks anything else and is counted.
struct Backend {
    name: &'static str,
    addr: SocketAddr,
    /// Status for `/health` (checks).
    check_status: Arc<AtomicU16>,
    /// Status for other paths (traffic).
    traffic_status: Arc<AtomicU16>,
    hang: Arc<AtomicBool>,
    served: Arc<AtomicUsize>,
    listener: Arc<Mutex<Option<TcpListener>>>,
    stop: Arc<AtomicBool>,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Other",
    }
}

impl Backend {
    fn start(name: &'static str) -> Backend {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind backend");
        let addr = l.local_addr().expect("addr");
        let b = Backend {
            name,
            addr,
            check_status: Arc::new(AtomicU16::new(200)),
            traffic_status: Arc::new(AtomicU16::new(200)),
            hang: Arc::new(AtomicBool::new(false)),
            served: Arc::new(AtomicUsize::new(0)),
            listener: Arc::new(Mutex::new(None)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        b.serve(l);
        b
    }

    fn serve(&self, l: TcpListener) {
        l.set_nonblocking(true).expect("nonblocking");
        *self.listener.lock().expect("lock") = Some(l.try_clone().expect("clone"));
        let (cs, ts, hang, served, stop, name) = (
            Arc::clone(&self.check_status),
            Arc::clone(&self.traffic_status),
            Arc::clone(&self.hang),
            Arc::clone(&self.served),
            Arc::clone(&self.stop),
            self.name,
        );
        let slot = Arc::clone(&self.listener);
        std::thread::spawn(move || loop {
            if stop.load(Ordering::Relaxed) || slot.lock().map(|s| s.is_none()).unwrap_or(true) {
                return;
            }
            match l.accept() {
                Ok((s, _)) => {
                    let (cs, ts, hang, served) =
                        (Arc::clone(&cs), Arc::clone(&ts), Arc::clone(&hang), Arc::clone(&served));
                    std::thread::spawn(move || answer(s, name, &cs, &ts, &hang, &served));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        });
    }

    /// Stops listening: connections are refused.
    fn die(&self) {
        *self.listener.lock().expect("lock") = None;
        // The accept thread owns a clone: wait until it has let go of the port.
        assert!(eventually(Duration::from_secs(2), || TcpStream::connect(self.addr).is_err()));
    }

    /// Listens again on the same port.
    fn recover(&self) {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        sock.set_reuse_address(true).expect("reuseaddr");
        sock.bind(&self.addr.into()).expect("rebind backend");
        sock.listen(128).expect("listen");
        self.serve(sock.into());
    }

    fn served(&self) -> usize {
        self.served.load(Ordering::Relaxed)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers one request (closing afterwards), unless told to hang.
fn answer(
    mut s: TcpStream,
    name: &str,
    cs: &AtomicU16,
    ts: &AtomicU16,
    hang: &AtomicBool,
    served: &AtomicUsize,
) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    if hang.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(3));
        return;
    }
    let check = buf.starts_with(b"GET /health ") || buf.starts_with(b"OPTIONS ");
    let status = if check { cs.load(Ordering::Relaxed) } else { ts.load(Ordering::Relaxed) };
    if !check {
        served.fetch_add(1, Ordering::Relaxed);
    }
    let resp = format!(
        "HTTP/1.1 {status} {}\r\nX-Server: {name}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        reason(status)
    );
    let _ = s.write_all(resp.as_bytes());
}

/// The proxy under test: Fulcrum, or HAProxy for the comparisons.
struct Proxy {
    proc: Proc,
    addr: SocketAddr,
}

impl Proxy {
    fn fulcrum(test: &str, cfg: &str) -> Proxy {
        let f = fulcrum(test, cfg);
        Proxy { addr: f.addr(), proc: f.proc }
    }

    fn haproxy(test: &str, cfg: &str) -> Option<Proxy> {
        let bin = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())?;
        let dir = scratch(&format!("{test}-haproxy"));
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, cfg.replace("{fe0}", "fd@3")).expect("write cfg");
        let mut cmd = std::process::Command::new(bin);
        cmd.arg("-db").arg("-f").arg(&path);
        Some(Proxy { proc: spawn_with_listeners(cmd, &dir, vec![l]), addr })
    }

    /// The state lines printed so far, without the pid and the check durations.
    fn lines(&self) -> Vec<String> {
        self.proc
            .log_text()
            .lines()
            .filter(|l| l.starts_with("[WARNING]") || l.starts_with("[ALERT]"))
            .filter(|l| !l.contains(" : config : "))
            .map(normalize)
            .collect()
    }

    /// Waits (at most `within`) until a state line contains `text`; returns when it appeared.
    fn wait_line(&self, text: &str, within: Duration) -> Duration {
        let t0 = Instant::now();
        let seen = eventually(within, || self.lines().iter().any(|l| l.contains(text)));
        assert!(seen, "no line with {text:?} within {within:?}; got {:#?}", self.lines());
        t0.elapsed()
    }
}

/// `[WARNING]  (123) : Server be/s1 ..., check duration: 3ms. ...` -> `WARNING Server be/s1 ....`
fn normalize(l: &str) -> String {
    let tag = if l.starts_with("[ALERT]") { "ALERT" } else { "WARNING" };
    let msg = l.split_once(") : ").map_or(l, |(_, m)| m);
    let mut out = String::new();
    let mut rest = msg;
    while let Some(i) = rest.find("check duration: ") {
        out.push_str(&rest[..i + "check duration: ".len()]);
        rest = &rest[i + "check duration: ".len()..];
        let end = rest.find("ms").map_or(0, |e| e + 2);
        out.push('N');
        rest = &rest[end..];
    }
    out.push_str(rest);
    format!("{tag} {out}")
}

const DEFAULTS: &str =
    "defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n";

/// Which backend answered each of `n` requests.
fn answers(addr: SocketAddr, n: usize) -> Vec<String> {
    servers_of(addr, n)
}

#[test]
fn a_dead_server_leaves_rotation_within_fall_checks_and_returns_within_rise() {
    let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n option httpchk GET /health\n \
         default-server check inter 100ms fall 3 rise 2\n server s1 {}\n server s2 {}\n",
        s1.addr, s2.addr
    );
    let p = Proxy::fulcrum("health-dead", &cfg);
    assert!(eventually(Duration::from_secs(5), || {
        let a = answers(p.addr, 4);
        count(&a, "s1") == 2 && count(&a, "s2") == 2
    }));
    s2.die();
    let took = p.wait_line("Server be/s2 is DOWN", Duration::from_secs(3));
    // fall 3 x inter 100 ms, give or take a check in flight and the machine's load.
    assert!(took < Duration::from_millis(1500), "DOWN after {took:?}");
    let before = s2.served();
    let a = answers(p.addr, 20);
    assert_eq!(count(&a, "s1"), 20, "every request to s1 once s2 is DOWN: {a:?}");
    assert_eq!(s2.served(), before, "no request reached the DOWN server");
    let l = p.lines();
    let down = l.iter().find(|l| l.contains("s2 is DOWN")).expect("down line");
    assert!(
        down.contains("reason: Layer4 connection problem, info: \"Connection refused\", check duration: N. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."),
        "{down}"
    );
    s2.recover();
    let took = p.wait_line("Server be/s2 is UP", Duration::from_secs(3));
    assert!(took < Duration::from_millis(1500), "UP after {took:?}");
    let a = answers(p.addr, 10);
    assert_eq!(count(&a, "s2"), 5, "shared again: {a:?}");
}

#[test]
fn wrong_status_and_hanging_servers_are_reported_with_haproxy_reasons() {
    let scenario = |target: &str, p: Proxy, s1: &Backend, s2: &Backend| -> Vec<String> {
        p.wait_line("Server be/s1 is DOWN", Duration::from_secs(3));
        p.wait_line("Server be/s2 is DOWN", Duration::from_secs(3));
        p.wait_line("backend 'be' has no server available!", Duration::from_secs(3));
        let _ = (target, s1, s2);
        let mut l = p.lines();
        l.sort();
        l
    };
    let mut results = Vec::new();
    for target in ["fulcrum", "haproxy"] {
        let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
        s1.check_status.store(503, Ordering::Relaxed);
        s2.hang.store(true, Ordering::Relaxed);
        let cfg = format!(
            "{DEFAULTS} timeout check 200ms\nfrontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n \
             option httpchk GET /health\n default-server check inter 100ms fall 1 rise 1\n server s1 {}\n server s2 {}\n",
            s1.addr, s2.addr
        );
        let p = match target {
            "fulcrum" => Proxy::fulcrum("health-status", &cfg),
            _ => match Proxy::haproxy("health-status", &cfg) {
                Some(p) => p,
                None => continue,
            },
        };
        let lines = scenario(target, p, &s1, &s2);
        // The addresses differ between runs: compare without them.
        results.push((target, lines));
    }
    let fulcrum = &results[0].1;
    assert!(
        fulcrum.iter().any(|l| l.contains("Server be/s1 is DOWN, reason: Layer7 wrong status, code: 503, info: \"Service Unavailable\", check duration: N.")),
        "{fulcrum:#?}"
    );
    assert!(
        fulcrum.iter().any(|l| l.contains("Server be/s2 is DOWN, reason: Layer7 timeout, check duration: N.")),
        "{fulcrum:#?}"
    );
    assert!(fulcrum.contains(&"ALERT backend 'be' has no server available!".to_string()));
    if let Some((_, haproxy)) = results.get(1) {
        // The lines differ only in how many servers were left when each went down (the order
        // of the two checks), so compare each server's reason.
        for who in ["s1 is DOWN, reason", "s2 is DOWN, reason"] {
            let pick = |v: &Vec<String>| {
                v.iter()
                    .find(|l| l.contains(who))
                    .map(|l| l.split(". ").next().unwrap_or("").to_string())
            };
            assert_eq!(pick(fulcrum), pick(haproxy), "{who}");
        }
    }
}

#[test]
fn a_backup_server_takes_over_and_gives_back() {
    let (a1, b1, b2) = (Backend::start("a1"), Backend::start("b1"), Backend::start("b2"));
    let cfg = |allbackups: bool| {
        format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n{} option httpchk GET /health\n \
             default-server check inter 100ms fall 1 rise 1\n server a1 {}\n server b1 {} backup\n server b2 {} backup\n",
            if allbackups { " option allbackups\n" } else { "" },
            a1.addr, b1.addr, b2.addr
        )
    };
    let p = Proxy::fulcrum("health-backup", &cfg(false));
    assert!(eventually(Duration::from_secs(5), || count(&answers(p.addr, 3), "a1") == 3));
    a1.die();
    p.wait_line("Server be/a1 is DOWN", Duration::from_secs(3));
    let l = p.lines();
    assert!(
        l.iter().any(|l| l.contains("0 active and 2 backup servers left. Running on backup.")),
        "{l:#?}"
    );
    let a = answers(p.addr, 6);
    assert_eq!(count(&a, "b1"), 6, "only the first backup without allbackups: {a:?}");
    a1.recover();
    p.wait_line("Server be/a1 is UP", Duration::from_secs(3));
    assert_eq!(count(&answers(p.addr, 4), "a1"), 4, "traffic given back");
    drop(p);
    let p = Proxy::fulcrum("health-allbackups", &cfg(true));
    a1.die();
    p.wait_line("Server be/a1 is DOWN", Duration::from_secs(3));
    let a = answers(p.addr, 6);
    assert_eq!((count(&a, "b1"), count(&a, "b2")), (3, 3), "every backup with allbackups: {a:?}");
}

/// A TCP agent answering `reply` to every connection.
fn agent(reply: Arc<Mutex<String>>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind agent");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let text = reply.lock().map(|r| r.clone()).unwrap_or_default();
            let mut s = s;
            let _ = s.write_all(text.as_bytes());
        }
    });
    addr
}

#[test]
fn agent_answers_change_state_and_weight() {
    let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
    let reply = Arc::new(Mutex::new("up\n".to_string()));
    let ag = agent(Arc::clone(&reply));
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n \
         server s1 {}\n server s2 {} weight 100 agent-check agent-port {} agent-inter 100ms\n",
        s1.addr,
        s2.addr,
        ag.port()
    );
    let p = Proxy::fulcrum("health-agent", &cfg);
    let set = |r: &str| *reply.lock().expect("lock") = r.to_string();
    set("drain\n");
    p.wait_line("Server be/s2 enters drain state", Duration::from_secs(3));
    assert_eq!(count(&answers(p.addr, 6), "s1"), 6, "a drained server takes no new traffic");
    set("ready 50%\n");
    p.wait_line("Server be/s2 is UP (leaving forced drain)", Duration::from_secs(3));
    // Weight 100 at 50% is 50 against s1's 1: s2 takes most requests.
    assert!(eventually(Duration::from_secs(3), || count(&answers(p.addr, 10), "s2") >= 9));
    set("down # disk full\n");
    let t = p.wait_line(
        // HAProxy 2.6 prints `code: 0` for an agent too (checked).
        "Server be/s2 is DOWN, reason: Layer7 wrong status, code: 0, info: \"via agent : down (disk full)\"",
        Duration::from_secs(3),
    );
    assert!(t < Duration::from_secs(3));
    assert_eq!(count(&answers(p.addr, 4), "s1"), 4);
    set("up\n");
    p.wait_line(
        "Server be/s2 is UP, reason: Layer7 check passed, code: 0, info: \"via agent : up\"",
        Duration::from_secs(3),
    );
}

#[test]
fn observed_layer7_errors_mark_a_server_down() {
    let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
    s2.traffic_status.store(500, Ordering::Relaxed);
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n option httpchk GET /health\n \
         option log-health-checks\n \
         server s1 {}\n server s2 {} check inter 2s observe layer7 error-limit 3 on-error mark-down\n",
        s1.addr, s2.addr
    );
    let p = Proxy::fulcrum("health-observe", &cfg);
    // A passing check clears the count of observed errors: let the first one pass first.
    p.wait_line("Health check for server be/s2 succeeded", Duration::from_secs(3));
    // Round robin: every other request meets s2's 500s until the third one marks it down.
    for _ in 0..6 {
        let _ = http_get(p.addr, "/");
    }
    // Under `option log-health-checks` the reason goes with the check line (no duration for an
    // observed result), and the DOWN line has none, as in HAProxy.
    p.wait_line(
        "Health check for server be/s2 failed, reason: Health analyze, info: \"Detected 3 consecutive errors, last one was: Wrong http response\", status: 0/2 DOWN",
        Duration::from_secs(3),
    );
    p.wait_line("Server be/s2 is DOWN. 1 active", Duration::from_secs(1));
    assert_eq!(count(&answers(p.addr, 4), "s1"), 4);
}

#[test]
fn nbsrv_routes_to_a_sorry_backend_when_all_servers_are_down() {
    let s1 = Backend::start("s1");
    let sorry = Backend::start("sorry");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n acl dead nbsrv(app) lt 1\n acl s1_up srv_is_up(app/s1)\n \
         http-request set-header X-S1 %[srv_is_up(app/s1)]\n use_backend sorry if dead\n default_backend app\n\
         backend app\n option httpchk GET /health\n server s1 {} check inter 100ms fall 1 rise 1\n\
         backend sorry\n server s {}\n",
        s1.addr, sorry.addr
    );
    let p = Proxy::fulcrum("health-nbsrv", &cfg);
    assert!(eventually(Duration::from_secs(3), || count(&answers(p.addr, 2), "s1") == 2));
    s1.die();
    p.wait_line("Server app/s1 is DOWN", Duration::from_secs(3));
    assert_eq!(
        count(&answers(p.addr, 3), "sorry"),
        3,
        "nbsrv(app) is 0: the sorry backend answers"
    );
}

#[test]
fn disabled_and_unresolvable_servers_start_in_maintenance() {
    let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n \
         server s1 {}\n server s2 {} disabled\n server s3 no-such-host.invalid:80 init-addr last,libc,none\n",
        s1.addr, s2.addr
    );
    let p = Proxy::fulcrum("health-maint", &cfg);
    assert_eq!(count(&answers(p.addr, 6), "s1"), 6);
    assert_eq!(s2.served(), 0);
    let log = p.proc.log_text();
    assert!(
        log.contains(
            "'server be/s3' : could not resolve address 'no-such-host.invalid', disabling server."
        ),
        "{log}"
    );
}

#[test]
fn slowstart_ramps_a_recovered_server_up() {
    let (s1, s2) = (Backend::start("s1"), Backend::start("s2"));
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n option httpchk GET /health\n \
         default-server check inter 100ms fall 1 rise 1 slowstart 3s\n server s1 {}\n server s2 {}\n",
        s1.addr, s2.addr
    );
    let p = Proxy::fulcrum("health-slowstart", &cfg);
    s2.die();
    p.wait_line("Server be/s2 is DOWN", Duration::from_secs(3));
    s2.recover();
    p.wait_line("Server be/s2 is UP", Duration::from_secs(3));
    // Just up: weight 1/16 of s1's, so s2 takes a small share of 34 requests.
    let early = count(&answers(p.addr, 34), "s2");
    assert!(early <= 6, "s2 took {early} of 34 right after coming up");
    // The ramp ends within slowstart (+ a warm-up step) with an even share.
    p.wait_line("Server be/s2 is UP. 2 active", Duration::from_secs(6));
    let a = answers(p.addr, 20);
    assert_eq!(count(&a, "s2"), 10, "even once warmed up: {a:?}");
}

/// A TCP server answering each line with `reply`; `die` closes the listener but keeps the
/// connections it has (they echo what they get).
struct TcpBackend {
    addr: SocketAddr,
    reply: Arc<Mutex<Vec<u8>>>,
    listening: Arc<AtomicBool>,
    /// Connections accepted so far (checks included).
    accepted: Arc<AtomicUsize>,
}

impl TcpBackend {
    fn start(reply: &[u8]) -> TcpBackend {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).expect("nonblocking");
        let b = TcpBackend {
            addr: l.local_addr().expect("addr"),
            reply: Arc::new(Mutex::new(reply.to_vec())),
            listening: Arc::new(AtomicBool::new(true)),
            accepted: Arc::new(AtomicUsize::new(0)),
        };
        let (reply, listening) = (Arc::clone(&b.reply), Arc::clone(&b.listening));
        let accepted = Arc::clone(&b.accepted);
        std::thread::spawn(move || {
            while listening.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        let reply = Arc::clone(&reply);
                        std::thread::spawn(move || tcp_answer(s, &reply));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        b
    }

    fn die(&self) {
        self.listening.store(false, Ordering::Relaxed);
        assert!(eventually(Duration::from_secs(2), || TcpStream::connect(self.addr).is_err()));
    }
}

/// Answers `PING`-style lines with the configured reply, anything else with an echo.
fn tcp_answer(mut s: TcpStream, reply: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 1024];
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let out = if buf[..n].starts_with(b"PING") {
            reply.lock().map(|r| r.clone()).unwrap_or_default()
        } else {
            buf[..n].to_vec()
        };
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

const TCP_DEFAULTS: &str =
    "defaults\n mode tcp\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n";

#[test]
fn tcp_check_rules_send_and_expect_in_order() {
    let good = TcpBackend::start(b"+PONG\r\n");
    let bad = TcpBackend::start(b"-ERR unknown\r\n");
    let cfg = format!(
        "{TCP_DEFAULTS}listen li\n bind {{fe0}}\n option tcp-check\n tcp-check send PING\\r\\n\n \
         tcp-check expect string +PONG\n default-server check inter 100ms fall 1 rise 1\n \
         server good {}\n server bad {}\n",
        good.addr, bad.addr
    );
    let p = Proxy::fulcrum("health-tcpcheck", &cfg);
    // The server keeps the connection open: the expect waits for more until the check times
    // out, and HAProxy 2.6 words it exactly so (checked), with the leading space.
    p.wait_line(
        "Server li/bad is DOWN, reason: Layer7 timeout, info: \" at step 2 of tcp-check (expect string '+PONG')\"",
        Duration::from_secs(3),
    );
    let l = p.lines();
    assert!(!l.iter().any(|l| l.contains("li/good")), "the good server stays up: {l:#?}");
    *bad.reply.lock().expect("lock") = b"+PONG\r\n".to_vec();
    p.wait_line(
        "Server li/bad is UP, reason: Layer7 check passed, code: 0, info: \"(tcp-check)\"",
        Duration::from_secs(3),
    );
}

#[test]
fn on_marked_down_shutdown_sessions_ends_the_live_sessions_of_a_dead_server() {
    for shutdown in [true, false] {
        let b = TcpBackend::start(b"");
        let cfg = format!(
            "{TCP_DEFAULTS}listen li\n bind {{fe0}}\n server s1 {} check inter 100ms fall 1 rise 1{}\n",
            b.addr,
            if shutdown { " on-marked-down shutdown-sessions" } else { "" }
        );
        let p = Proxy::fulcrum(&format!("health-shutdown-{shutdown}"), &cfg);
        let mut c = connect(p.addr);
        assert_eq!(echo_roundtrip(&mut c, b"hello"), b"hello");
        b.die();
        p.wait_line("Server li/s1 is DOWN", Duration::from_secs(3));
        if shutdown {
            assert!(closed_within(&mut c, Duration::from_secs(2)), "the session was ended");
        } else {
            // Without the option the session lives on with its server.
            assert_eq!(echo_roundtrip(&mut c, b"still"), b"still");
        }
    }
}

#[test]
fn sessions_queued_for_a_server_that_goes_down_are_redispatched() {
    let (a, b) = (TcpBackend::start(b""), TcpBackend::start(b""));
    // `balance source` sends every client of 127.0.0.1 to one server, whose single slot is
    // held: the next client waits in that server's own queue.
    let cfg = format!(
        "{TCP_DEFAULTS} timeout queue 10s\nlisten li\n bind {{fe0}}\n balance source\n option redispatch\n \
         default-server check inter 100ms fall 1 rise 1 maxconn 1\n server a {}\n server b {}\n\
         frontend queue\n mode http\n bind {{fe1}}\n \
         http-request return status 200 content-type text/plain lf-string \"%[queue(li)]\"\n",
        a.addr, b.addr
    );
    let f = fulcrum("health-redispatch", &cfg);
    let queue_addr = f.addrs[1];
    let p = Proxy { addr: f.addr(), proc: f.proc };
    // `queue(li)` as an HTTP answer: the sessions waiting in the backend's queues.
    let queued = || {
        let mut s = connect(queue_addr);
        s.write_all(b"GET / HTTP/1.1\r\nHost: q\r\nConnection: close\r\n\r\n").expect("write");
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        r.rsplit("\r\n\r\n").next().unwrap_or("").trim().to_string()
    };
    let (a0, b0) = (a.accepted.load(Ordering::Relaxed), b.accepted.load(Ordering::Relaxed));
    let mut first = connect(p.addr);
    assert_eq!(echo_roundtrip(&mut first, b"one"), b"one");
    // Checks connect too: the chosen server is the one that accepted one more than checks.
    let chosen =
        if a.accepted.load(Ordering::Relaxed) - a0 > b.accepted.load(Ordering::Relaxed) - b0 {
            &a
        } else {
            &b
        };
    let name = if std::ptr::eq(chosen, &a) { "a" } else { "b" };
    let mut second = connect(p.addr);
    second.write_all(b"two").expect("write");
    assert!(
        eventually(Duration::from_secs(3), || queued() == "1"),
        "the second client waits in the queue"
    );
    chosen.die();
    p.wait_line(&format!("Server li/{name} is DOWN"), Duration::from_secs(3));
    let mut back = [0u8; 3];
    second.read_exact(&mut back).expect("the queued session was served by the other server");
    assert_eq!(&back, b"two");
    let l = p.lines();
    let down = l.iter().find(|l| l.contains(" is DOWN")).expect("down line");
    assert!(down.contains("1 sessions active, 1 requeued, 0 remaining in queue."), "{down}");
}

/// A server answering every check with the same response, then closing.
fn fixed_answer(response: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(response);
        }
    });
    addr
}

#[test]
fn http_check_set_var_and_log_format_header_expects_as_in_haproxy() {
    let srv = fixed_answer(
        b"HTTP/1.1 202 OK\r\nx-test1: true, next value\r\nx-reg-test1: 1\r\n\
          x-hdr-name: x-test1\r\ncontent-length: 0\r\n\r\n",
    );
    for which in ["fulcrum", "haproxy"] {
        let cfg = format!(
            "defaults\n mode http\n timeout client 5s\n timeout server 5s\n timeout connect 5s\n\
             option log-health-checks\n\
             frontend fe\n bind {{fe0}}\n\
             backend good\n option httpchk\n http-check expect status 202\n\
             http-check expect hdr name -m reg \"^[a-z]+-Reg-[a-z]+[0-9]\\$\"\n\
             http-check set-var(check.name) res.fhdr(x-hdr-name)\n\
             http-check expect hdr name-lf -m str \"%[var(check.name)]\"\n\
             http-check set-var(check.value) res.fhdr(x-test1)\n\
             http-check expect fhdr name x-test1 value-lf \"%[var(check.value)]\"\n\
             server s {srv} check inter 100ms rise 1 fall 1\n\
             backend bad\n option httpchk\n http-check expect status 202\n\
             http-check expect hdr name-lf \"%[var(check.unset)]x-test1\" value-lf \"%[res.fhdr(x-hdr-name)]\"\n\
             server s {srv} check inter 100ms rise 1 fall 1\n"
        );
        let Some((p, _, _)) = start_proxy(which, "check-vars", &cfg) else { continue };
        let seen = || {
            let log = p.log_text();
            log.contains("Health check for server good/s succeeded")
                && log.contains("Health check for server bad/s failed")
        };
        assert!(eventually(Duration::from_secs(5), seen), "{which}: {}", p.log_text());
        assert!(!p.log_text().contains("server good/s failed"), "{which}: {}", p.log_text());
    }
}
