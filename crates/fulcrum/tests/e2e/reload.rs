//! In-process reloads (the runtime API's `reload`, SIGUSR2): the configuration is read again
//! and applied while clients keep sending requests. No request fails, counters go on, server
//! states decided at run time (maintenance, a weight, a server found DOWN) stay, an idle server
//! connection is reused across the reload, listeners come and go with the configuration, and an
//! invalid configuration changes nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::harness::*;

/// One CSV field of `show stat` for `px`/`sv`.
fn stat(sock: &Path, px: &str, sv: &str, field: &str) -> String {
    let text = api(sock, "show stat");
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").trim_start_matches("# ").split(',').collect();
    let col = head.iter().position(|h| *h == field).expect("field");
    for l in lines {
        let w: Vec<&str> = l.split(',').collect();
        if w.len() > col && w[0] == px && w[1] == sv {
            return w[col].to_string();
        }
    }
    panic!("no row {px}/{sv} in {text}");
}

fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// Keep-alive clients sending requests until told to stop: a response must be a 200; a
/// connection may close only after a response that said `connection: close`. Returns (requests
/// answered, failures).
fn clients(
    addr: SocketAddr,
    n: usize,
    stop: Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<(u64, Vec<String>)>> {
    (0..n)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                let (mut done, mut failures) = (0u64, Vec::new());
                'conn: while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    let s = TcpStream::connect(addr).expect("connect");
                    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
                    let mut w = s.try_clone().expect("clone");
                    let mut r = BufReader::new(s);
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        if let Err(e) = w.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n") {
                            failures.push(format!("write: {e}"));
                            continue 'conn;
                        }
                        let mut status = String::new();
                        if r.read_line(&mut status).unwrap_or(0) == 0 {
                            failures.push("connection closed without a response".into());
                            continue 'conn;
                        }
                        let (mut len, mut close) = (0usize, false);
                        loop {
                            let mut h = String::new();
                            if r.read_line(&mut h).unwrap_or(0) == 0 {
                                failures.push("truncated head".into());
                                continue 'conn;
                            }
                            let l = h.to_ascii_lowercase();
                            if l == "\r\n" {
                                break;
                            }
                            if let Some(v) = l.strip_prefix("content-length:") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                            close |= l.starts_with("connection:") && l.contains("close");
                        }
                        let mut body = vec![0; len];
                        if r.read_exact(&mut body).is_err() {
                            failures.push("truncated body".into());
                            continue 'conn;
                        }
                        if !status.contains(" 200 ") {
                            failures.push(format!("status: {status}"));
                        }
                        done += 1;
                        if close {
                            continue 'conn;
                        }
                    }
                    break;
                }
                (done, failures)
            })
        })
        .collect()
}

const CFG: &str = "
global
    nbthread 1
    stats socket {dir}/api.sock level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe0}
    default_backend be
backend be
    http-reuse always
    server a A check inter 200
    server b B check inter 200
    server c C check inter 200
";

#[test]
fn a_reload_under_load_keeps_states_counters_and_every_request() {
    let a = testserver("http", "a");
    let b = testserver("http", "b");
    let dead = dead_addr();
    let cfg = CFG
        .replace(" A ", &format!(" {} ", a.addr))
        .replace(" B ", &format!(" {} ", b.addr))
        .replace(" C ", &format!(" {dead} "));
    let (p, addrs, dir) = start_proxy("fulcrum", "reload-load", &cfg).expect("fulcrum starts");
    let sock = dir.join("api.sock");
    let path = dir.join("proxy.cfg");
    let written = std::fs::read_to_string(&path).expect("cfg");
    assert!(eventually(Duration::from_secs(5), || UnixStream::connect(&sock).is_ok()));
    // Run-time decisions: b in maintenance, a's weight, c found DOWN by its check.
    api(&sock, "set server be/b state maint");
    api(&sock, "set weight be/a 7");
    assert!(eventually(Duration::from_secs(5), || stat(&sock, "be", "c", "status") == "DOWN"));
    assert_eq!(count(&servers_of(addrs[0], 3), "a"), 3, "only a serves");

    let stop = Arc::new(AtomicBool::new(false));
    let load = clients(addrs[0], 8, Arc::clone(&stop));
    let wait_for_requests = |n: u64| {
        let seen = AtomicU64::new(0);
        eventually(Duration::from_secs(10), || {
            let v: u64 = stat(&sock, "fe", "FRONTEND", "req_tot").parse().unwrap_or(0);
            seen.store(v, Ordering::Relaxed);
            v >= n
        })
    };
    assert!(wait_for_requests(500), "the load runs");
    // A second frontend appears with the reload (on a new address), and a server option changes.
    let extra = free_port();
    let second = format!(
        "{written}frontend fe2\n    bind {extra}\n    default_backend be\n    timeout client 6s\n"
    );
    std::fs::write(&path, &second).expect("cfg");
    for i in 0..10 {
        let before: u64 = stat(&sock, "fe", "FRONTEND", "req_tot").parse().unwrap_or(0);
        let report = api(&sock, "reload");
        assert!(report.starts_with("Success=1\n--\n"), "reload {i}: {report}");
        assert!(wait_for_requests(before + 200), "traffic goes on after reload {i}");
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for h in load {
        let (done, failures) = h.join().expect("client");
        assert!(failures.is_empty(), "no request may fail across reloads: {failures:?}");
        total += done;
    }
    assert!(total > 2000, "{total} requests");
    // Counters went on across the ten plans.
    let req_tot: u64 = stat(&sock, "fe", "FRONTEND", "req_tot").parse().expect("req_tot");
    assert!(req_tot > total, "frontend counted every request: {req_tot} vs {total}");
    // States decided at run time stayed.
    assert_eq!(stat(&sock, "be", "b", "status"), "MAINT");
    assert_eq!(stat(&sock, "be", "c", "status"), "DOWN");
    assert_eq!(stat(&sock, "be", "a", "weight"), "7");
    assert_eq!(stat(&sock, "be", "b", "stot"), "0", "b in maintenance got nothing");
    // The new frontend serves.
    let (code, _, _) = get_with(extra, "/", "");
    assert_eq!(code, 200);

    // An idle server connection made before a reload carries the first request after it.
    let (code, _, _) = get_with(addrs[0], "/", "");
    assert_eq!(code, 200);
    let connects = stat(&sock, "be", "a", "connect");
    let reuses: u64 = stat(&sock, "be", "a", "reuse").parse().expect("reuse");
    assert!(api(&sock, "reload").starts_with("Success=1"));
    let (code, _, _) = get_with(addrs[0], "/", "");
    assert_eq!(code, 200);
    assert_eq!(stat(&sock, "be", "a", "connect"), connects, "no new server connection");
    assert_eq!(stat(&sock, "be", "a", "reuse").parse::<u64>().expect("reuse"), reuses + 1);

    // An invalid configuration changes nothing, and says where it is wrong.
    std::fs::write(&path, format!("{second}    bogus-keyword here\n")).expect("cfg");
    let report = api(&sock, "reload");
    assert!(report.starts_with("Success=0\n--\n"), "{report}");
    assert!(report.contains("proxy.cfg:") && report.contains("bogus-keyword"), "{report}");
    assert!(report.contains("nothing was changed"), "{report}");
    assert_eq!(get_with(extra, "/", "").0, 200, "fe2 still serves");

    // SIGUSR2 reloads too: without fe2, its address stops accepting.
    std::fs::write(&path, &written).expect("cfg");
    p.signal(libc::SIGUSR2);
    assert!(
        eventually(Duration::from_secs(5), || TcpStream::connect(extra).is_err()),
        "fe2's listener closed"
    );
    assert_eq!(get_with(addrs[0], "/", "").0, 200);
    assert_eq!(stat(&sock, "be", "b", "status"), "MAINT");
    let log = p.log_text();
    assert!(
        log.contains("Reloaded: 1 frontends, 1 backends; 3 servers kept their state."),
        "{log}"
    );
}

#[test]
fn master_worker_flags_and_the_master_socket_reload() {
    let a = testserver("http", "a");
    let dir = scratch("reload-master");
    let cfg = format!(
        "
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server a {}
",
        a.addr
    );
    let cfg = cfg.replace("{fe0}", "fd@3");
    let path = dir.join("proxy.cfg");
    std::fs::write(&path, cfg).expect("cfg");
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    // systemd's side of `Type=notify`: a datagram socket named by NOTIFY_SOCKET.
    let notify_path = dir.join("notify.sock");
    let notify = crate::harness::Notify::bind(&notify_path);
    let recv = || notify.next();
    let master = dir.join("master.sock");
    let spec = format!("{},mode,600", master.display());
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fulcrum"));
    cmd.args(["-Ws", "-f"]).arg(&path).args(["-S", &spec]).env("NOTIFY_SOCKET", &notify_path);
    let _p = spawn_with_listeners(cmd, &dir, vec![l]);
    assert_eq!(recv(), "READY=1", "ready once the workers run");
    assert!(eventually(Duration::from_secs(5), || UnixStream::connect(&master).is_ok()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&master).expect("socket").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // HAProxy's master CLI addresses a worker with `@<n>`: this one process answers.
    let out = api(&master, "@1 show info");
    assert!(out.contains("Name: "), "{out}");
    let out = api(&master, "reload");
    assert!(out.starts_with("Success=1\n--\n"), "{out}");
    let reloading = recv();
    assert!(reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="), "{reloading}");
    assert_eq!(recv(), "READY=1", "ready again after the reload");
    assert_eq!(get_with(addr, "/", "").0, 200);
}

#[test]
fn a_reload_reads_map_files_again() {
    let a = testserver("http", "a");
    let data = scratch("reload-maps-data");
    let cfg = format!(
        "
global
    stats socket {{dir}}/api.sock level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    http-request set-header X-Route %[path,map_beg({}/routes.map,none)]
    default_backend be
backend be
    server a {}
",
        data.display(),
        a.addr
    );
    let map = data.join("routes.map");
    std::fs::write(&map, "/a one\n").expect("map");
    let (_p, addrs, dir) = start_proxy("fulcrum", "reload-maps", &cfg).expect("starts");
    let sock = dir.join("api.sock");
    assert!(eventually(Duration::from_secs(5), || UnixStream::connect(&sock).is_ok()));
    let name = map.display().to_string();
    assert!(api(&sock, &format!("add map {name} /b two")).trim().is_empty());
    assert_eq!(api(&sock, &format!("show map {name}")).lines().count(), 3, "two entries + end");
    std::fs::write(&map, "/c three\n").expect("map");
    assert!(api(&sock, "reload").starts_with("Success=1"));
    let listed = api(&sock, "show map");
    let lines = listed.lines().filter(|l| l.contains(&name)).count();
    assert_eq!(lines, 1, "the file is listed once: {listed}");
    let entries = api(&sock, &format!("show map {name}"));
    assert!(entries.contains("/c three") && !entries.contains("/b"), "{entries}");
    assert_eq!(get_with(addrs[0], "/c", "").0, 200);
}
