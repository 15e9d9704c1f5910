//! The process's life: flags, signals, soft stop, `-sf` takeover, daemon and pid file, limits,
//! privileges and CPU pinning.
#![allow(unsafe_code)] // kill(2) on the daemon this file starts.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::harness::*;

const ECHO_CFG: &str =
    "defaults\n mode tcp\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n";

fn echo_cfg(global: &str, echo: SocketAddr) -> String {
    format!("global\n{global}\n{ECHO_CFG}listen px\n bind {{fe0}}\n server e {echo}\n")
}

#[test]
fn version_flags_name_the_haproxy_version_followed() {
    let (code, out, _) = run(&["-v"]);
    assert_eq!(code, 0);
    assert!(out.contains("Fulcrum version") && out.contains("HAProxy 2.6"), "{out}");
    let (code, out, _) = run(&["-vv"]);
    assert_eq!(code, 0);
    assert!(out.contains("Feature list") && out.contains("+REUSEPORT"), "{out}");
}

#[test]
fn sigterm_stops_at_once_with_status_0() {
    let echo = testserver("echo", "e");
    let mut px = fulcrum("sigterm", &echo_cfg(" nbthread 2", echo.addr));
    let mut s = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut s, b"hi"), b"hi");
    px.proc.signal(libc::SIGTERM);
    let st = px.proc.wait_exit(Duration::from_secs(3)).expect("exited");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn soft_stop_closes_listeners_and_lets_live_sessions_finish() {
    let echo = testserver("echo", "e");
    let mut px = fulcrum("soft-stop", &echo_cfg(" nbthread 2", echo.addr));
    let mut live = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut live, b"before"), b"before");
    px.proc.signal(libc::SIGUSR1);
    // New connections are refused once the listener is closed.
    assert!(
        eventually(Duration::from_secs(3), || std::net::TcpStream::connect(px.addr()).is_err()),
        "still accepting after SIGUSR1"
    );
    assert!(px.proc.is_running(), "exited with a live session");
    assert_eq!(echo_roundtrip(&mut live, b"after"), b"after");
    drop(live);
    let st = px.proc.wait_exit(Duration::from_secs(3)).expect("exits when the last session ends");
    assert_eq!(st.code(), Some(0));
}

/// `hard-stop-after`: a soft stop that live sessions keep going ends when it runs out, and
/// their connections close; nothing is cut before.
#[test]
fn hard_stop_after_cuts_a_soft_stop_that_lasts_too_long() {
    let echo = testserver("echo", "e");
    let mut px = fulcrum("hard-stop", &echo_cfg(" nbthread 2\n hard-stop-after 500ms", echo.addr));
    let mut live = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut live, b"before"), b"before");
    let stopped = std::time::Instant::now();
    px.proc.signal(libc::SIGUSR1);
    assert_eq!(echo_roundtrip(&mut live, b"during"), b"during");
    let st = px.proc.wait_exit(Duration::from_secs(5)).expect("exits after hard-stop-after");
    assert_eq!(st.code(), Some(0));
    assert!(stopped.elapsed() >= Duration::from_millis(500), "cut before hard-stop-after");
    assert!(closed_within(&mut live, Duration::from_secs(2)), "the live session was closed");
    let log = px.proc.log_text();
    assert!(log.contains("soft-stop running for too long, performing a hard-stop."), "{log}");
    assert!(log.contains("Proxy px hard-stopped (1 remaining conns will be closed)."), "{log}");
}

/// `grace`: after SIGUSR1 the listeners keep accepting for the grace time, then the soft stop
/// proceeds as usual.
#[test]
fn grace_keeps_accepting_for_a_while_after_a_soft_stop_is_asked_for() {
    let echo = testserver("echo", "e");
    let mut px = fulcrum("grace", &echo_cfg(" nbthread 2\n grace 600ms", echo.addr));
    let mut first = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut first, b"hi"), b"hi");
    let asked = std::time::Instant::now();
    px.proc.signal(libc::SIGUSR1);
    // Still served during the grace time (well within it).
    let mut during = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut during, b"still"), b"still");
    assert!(asked.elapsed() < Duration::from_millis(600), "too slow to tell");
    assert!(
        eventually(Duration::from_secs(5), || std::net::TcpStream::connect(px.addr()).is_err()),
        "still accepting long after the grace time"
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(600),
        "stopped accepting before the grace time"
    );
    drop((first, during));
    let st = px.proc.wait_exit(Duration::from_secs(3)).expect("exits when its sessions end");
    assert_eq!(st.code(), Some(0));
}

/// `set-dumpable`: a process that changed user stays dumpable; the kernel then gives its
/// /proc files to that user instead of root.
#[test]
#[cfg_attr(not_root, ignore = "changing user needs root (see crates/fulcrum/build.rs)")]
fn set_dumpable_keeps_a_process_that_changed_user_dumpable() {
    use std::os::unix::fs::MetadataExt;
    let echo = testserver("echo", "e");
    let owner = |extra: &str, name: &str| {
        let px = fulcrum(name, &echo_cfg(&format!(" user nobody\n{extra}"), echo.addr));
        let mut s = connect(px.addr());
        assert_eq!(echo_roundtrip(&mut s, b"hi"), b"hi");
        let meta = std::fs::metadata(format!("/proc/{}/environ", px.proc.child.id()));
        meta.expect("proc file").uid()
    };
    let nobody = owner(" set-dumpable", "dumpable");
    assert_ne!(nobody, 0, "set-dumpable: the proc files belong to the new user");
    assert_eq!(owner("", "not-dumpable"), 0, "without it they stay root's");
}

/// `chroot` in master-worker mode (`-W`), as HAProxy runs it: the master stays outside the
/// jail, the worker inside proxies and checks its servers (addresses resolved before) and keeps
/// no directory outside open; on SIGUSR2 to the master the worker reloads with the error files
/// and maps the master read outside the jail (not under the configuration's directory); a file
/// that cannot be read fails the reload with its name and reason; SIGTERM ends both, 0.
#[test]
#[cfg_attr(not_root, ignore = "entering a chroot needs root (see crates/fulcrum/build.rs)")]
fn under_chroot_the_master_stays_outside_and_reads_the_files_of_each_reload() {
    let srv = testserver("http", "s");
    let jail = scratch("chroot-jail");
    let etc = scratch("chroot-etc");
    let (errors, map) = (etc.join("503.http"), etc.join("tags.map"));
    let answer = |body: &str| format!("HTTP/1.0 503 Service Unavailable\r\n\r\n{body}\n");
    std::fs::write(&errors, answer("first")).expect("errorfile");
    std::fs::write(&map, "/ one\n").expect("map");
    let cfg = format!(
        "global\n chroot {}\ndefaults\n mode http\n timeout connect 1s\n timeout client 10s\n \
         timeout server 10s\n errorfile 503 {}\nlisten px\n bind {{fe0}}\n \
         http-response set-header X-Tag %[str(/),map({},none)]\n \
         use_backend dead if {{ path /dead }}\n server s {} check inter 100ms\n\
         backend dead\n server d {}\n",
        jail.display(),
        errors.display(),
        map.display(),
        srv.addr,
        dead_addr()
    );
    let mut px = fulcrum_with("chroot", &cfg, &["-W"]);
    let tag = |px: &Fulcrum| get_with(px.addr(), "/", "").1.to_ascii_lowercase();
    assert!(
        eventually(Duration::from_secs(5), || tag(&px).contains("x-tag: one")),
        "no answer from the chrooted worker: {}",
        px.proc.log_text()
    );
    let master = px.proc.pid();
    let worker = child_of(master).expect("the master has a worker");
    let root = |pid: u32| std::fs::read_link(format!("/proc/{pid}/root")).expect("root");
    assert_eq!(root(worker), jail.canonicalize().expect("jail"));
    assert_eq!(root(master), std::path::PathBuf::from("/"), "the master stays outside");
    let dirs: Vec<String> = std::fs::read_dir(format!("/proc/{worker}/fd"))
        .expect("fds")
        .flatten()
        .filter(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.is_dir()))
        .map(|fd| format!("{:?}", std::fs::read_link(fd.path())))
        .collect();
    assert!(dirs.is_empty(), "the worker holds directories open: {dirs:?}");
    assert_eq!(get_with(px.addr(), "/dead", "").2, "first\n");
    // A reload reads the files again, outside the jail.
    std::fs::write(&errors, answer("second")).expect("errorfile");
    std::fs::write(&map, "/ two\n").expect("map");
    px.proc.signal(libc::SIGUSR2);
    let reloaded = eventually(Duration::from_secs(5), || tag(&px).contains("x-tag: two"));
    assert!(reloaded, "the worker reloaded: {}", px.proc.log_text());
    assert_eq!(get_with(px.addr(), "/dead", "").2, "second\n");
    assert_eq!(child_of(master), Some(worker), "the same worker reloaded in place");
    // A file gone: the reload fails with its name and why, and nothing changes.
    std::fs::remove_file(&errors).expect("rm");
    px.proc.signal(libc::SIGUSR2);
    let said = format!("error opening file '{}' : No such file or directory.", errors.display());
    assert!(
        eventually(Duration::from_secs(5), || px.proc.log_text().contains("Reload failed")),
        "{}",
        px.proc.log_text()
    );
    assert!(px.proc.log_text().contains(&said), "{}", px.proc.log_text());
    assert_eq!(get_with(px.addr(), "/dead", "").2, "second\n");
    // (Back for the `explain` cross-check, which reads the configuration when the test ends.)
    std::fs::write(&errors, answer("second")).expect("errorfile");
    px.proc.signal(libc::SIGTERM);
    let st = px.proc.wait_exit(Duration::from_secs(5)).expect("the master exits");
    assert_eq!(st.code(), Some(0));
    assert!(!std::path::Path::new(&format!("/proc/{worker}")).exists(), "the worker ended too");
}

/// Without a master, a chrooted process reads its files inside the jail when it reloads: a
/// configuration outside it fails the reload, which says why and what to do.
#[test]
#[cfg_attr(not_root, ignore = "entering a chroot needs root (see crates/fulcrum/build.rs)")]
fn under_chroot_without_a_master_a_reload_says_the_files_were_read_in_the_jail() {
    let echo = testserver("echo", "e");
    let jail = scratch("chroot-alone");
    let px = fulcrum("chroot-alone", &echo_cfg(&format!(" chroot {}", jail.display()), echo.addr));
    let mut s = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut s, b"hi"), b"hi");
    px.proc.signal(libc::SIGUSR2);
    let hint = format!("files were read inside the chroot '{}'", jail.display());
    assert!(
        eventually(Duration::from_secs(5), || px.proc.log_text().contains(&hint)),
        "{}",
        px.proc.log_text()
    );
    assert!(px.proc.log_text().contains("Reload failed: nothing was changed."));
    assert_eq!(echo_roundtrip(&mut s, b"still"), b"still");
}

/// A `chroot` directory the process cannot enter stops the start with HAProxy's message.
#[test]
fn a_chroot_that_cannot_be_entered_stops_the_start() {
    let dir = scratch("chroot-missing");
    let path = dir.join("px.cfg");
    std::fs::write(
        &path,
        format!("global\n chroot /nonexistent-jail\n{ECHO_CFG}listen px\n bind {}\n", free_addr()),
    )
    .expect("cfg");
    let (code, _, err) = run(&["-db", "-f", path.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("main()] Cannot chroot(/nonexistent-jail)."), "{err}");
}

#[test]
fn sf_takeover_refuses_no_connection() {
    let srv = testserver("http", "s");
    let port = free_addr().port();
    let dir = scratch("sf");
    let cfg = dir.join("px.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n nbthread 2\n{ECHO_CFG}listen px\n bind 127.0.0.1:{port}\n server s {}\n",
            srv.addr
        ),
    )
    .expect("cfg");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut old = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    assert!(
        eventually(Duration::from_secs(5), || http_get(addr, "/").is_some()),
        "old never served"
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let client = std::thread::spawn(move || {
        let (mut ok, mut failed) = (0u32, 0u32);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
            match http_get(addr, "/") {
                Some((200, _, _)) => ok += 1,
                _ => failed += 1,
            }
        }
        (ok, failed)
    });
    std::thread::sleep(Duration::from_millis(200));
    let old_pid = old.pid().to_string();
    let mut new = spawn_fulcrum(&dir, &cfg, &["-sf", &old_pid], vec![]);
    let st = old.wait_exit(Duration::from_secs(5)).expect("old process leaves");
    assert_eq!(st.code(), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = client.join().expect("client");
    assert!(new.is_running());
    assert_eq!(failed, 0, "{failed} of {} requests failed during takeover", ok + failed);
    assert!(ok > 20, "only {ok} requests made");
}

#[test]
fn daemon_mode_writes_the_pid_file_and_serves() {
    let echo = testserver("echo", "e");
    let port = free_addr().port();
    let dir = scratch("daemon");
    let cfg = dir.join("d.cfg");
    let pidfile = dir.join("fulcrum.pid");
    // A `log-forward` section is served by the daemon (its threads start after the fork).
    let syslog = std::net::UdpSocket::bind("127.0.0.1:0").expect("syslog");
    syslog.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let fwd = std::net::UdpSocket::bind("127.0.0.1:0").expect("port");
    let fwd_addr = fwd.local_addr().expect("addr");
    drop(fwd);
    std::fs::write(
        &cfg,
        format!(
            "global\n daemon\n pidfile {}\n{ECHO_CFG}listen px\n bind 127.0.0.1:{port}\n server e {}\n\
             log-forward lf\n dgram-bind {fwd_addr}\n log {} local0\n",
            pidfile.display(),
            echo.addr,
            syslog.local_addr().expect("addr")
        ),
    )
    .expect("cfg");
    let start = Instant::now();
    let (code, _, err) = run(&["-f", cfg.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{err}");
    assert!(start.elapsed() < Duration::from_secs(3), "parent did not return");
    let pid: i32 =
        std::fs::read_to_string(&pidfile).expect("pid file").trim().parse().expect("pid");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut s = connect(addr);
    assert_eq!(echo_roundtrip(&mut s, b"d"), b"d");
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
    let msg = b"<134>Nov 29 10:00:00 host app[1]: through the daemon";
    sender.send_to(msg, fwd_addr).expect("send");
    let mut buf = [0u8; 512];
    let n = syslog.recv(&mut buf).expect("the daemon forwarded the line");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("app[1]: through the daemon"));
    // SAFETY: kill(2) on the daemon this test started (pid read from its pid file).
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(eventually(Duration::from_secs(3), || !std::path::Path::new(&format!("/proc/{pid}"))
        .exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)));
}

#[test]
fn global_maxconn_leaves_extra_connections_in_the_backlog() {
    let echo = testserver("echo", "e");
    let px = fulcrum("maxconn", &echo_cfg(" nbthread 1\n maxconn 1", echo.addr));
    let mut a = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut a, b"a"), b"a");
    held_back_until_freed(a, px.addr(), b'b', Duration::from_millis(300));
}

/// Opens a connection while `held` occupies the only `maxconn` slot: it must not be served
/// within `wait`; once `held` closes it must be served. Returns the new connection.
fn held_back_until_freed(held: TcpStream, addr: SocketAddr, byte: u8, wait: Duration) -> TcpStream {
    let mut next = connect(addr); // completes in the kernel, not accepted yet
    std::io::Write::write_all(&mut next, &[byte]).expect("write");
    next.set_read_timeout(Some(wait)).expect("timeout");
    let mut one = [0u8; 1];
    assert!(
        std::io::Read::read(&mut next, &mut one).is_err(),
        "connection {byte}: served beyond maxconn"
    );
    drop(held);
    next.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    std::io::Read::read_exact(&mut next, &mut one)
        .unwrap_or_else(|e| panic!("connection {byte}: not served after a slot freed: {e}"));
    assert_eq!(one, [byte]);
    next
}

#[test]
fn frontend_maxconn_pauses_accepting() {
    let echo = testserver("echo", "e");
    let text = format!(
        "global\n nbthread 1\n{ECHO_CFG}listen px\n bind {{fe0}}\n maxconn 1\n server e {}\n",
        echo.addr
    );
    let px = fulcrum("fe-maxconn", &text);
    let mut a = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut a, b"a"), b"a");
    held_back_until_freed(a, px.addr(), b'b', Duration::from_millis(300));
}

fn thread_names(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks").flatten() {
        let name =
            std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim().to_string();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_string();
        out.push((name, cpus));
    }
    out
}

#[test]
fn nbthread_starts_that_many_workers_and_cpu_map_pins_them() {
    let echo = testserver("echo", "e");
    let px = fulcrum("cpu-map", &echo_cfg(" nbthread 2\n cpu-map auto:1/1-2 0-1", echo.addr));
    let mut s = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut s, b"x"), b"x");
    let want = vec![
        ("fulcrum-w1".to_string(), "0".to_string()),
        ("fulcrum-w2".to_string(), "1".to_string()),
    ];
    let mut workers = Vec::new();
    // Threads name and pin themselves as they start: give them a moment.
    let pinned = eventually(Duration::from_secs(3), || {
        workers = thread_names(px.proc.pid())
            .into_iter()
            .filter(|(n, _)| n.starts_with("fulcrum-w"))
            .collect();
        workers.sort();
        workers == want
    });
    assert!(pinned, "{workers:?}");
}

#[test]
fn ulimit_n_and_user_are_applied() {
    let echo = testserver("echo", "e");
    let px = fulcrum(
        "ulimit",
        &echo_cfg(" nbthread 1\n ulimit-n 4096\n user nobody\n group nogroup", echo.addr),
    );
    let mut s = connect(px.addr());
    assert_eq!(echo_roundtrip(&mut s, b"x"), b"x");
    let limits =
        std::fs::read_to_string(format!("/proc/{}/limits", px.proc.pid())).expect("limits");
    let line = limits.lines().find(|l| l.starts_with("Max open files")).expect("line").to_string();
    assert!(line.split_whitespace().any(|w| w == "4096"), "{line}");
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", px.proc.pid())).expect("status");
    let uid = status.lines().find(|l| l.starts_with("Uid:")).expect("uid").to_string();
    if nix_is_root() {
        assert!(uid.split_whitespace().nth(1) == Some("65534"), "{uid}");
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn unix_socket_bind_accepts_connections() {
    let echo = testserver("echo", "e");
    let dir = scratch("unix");
    let path = dir.join("fe.sock");
    let text =
        format!("{ECHO_CFG}listen px\n bind unix@{}\n server e {}\n", path.display(), echo.addr);
    let cfg = dir.join("u.cfg");
    std::fs::write(&cfg, text).expect("cfg");
    let _px = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    assert!(eventually(Duration::from_secs(5), || path.exists()));
    let mut s = None;
    assert!(eventually(Duration::from_secs(3), || {
        s = std::os::unix::net::UnixStream::connect(&path).ok();
        s.is_some()
    }));
    let mut s = s.expect("connected");
    std::io::Write::write_all(&mut s, b"unix").expect("write");
    let mut back = [0u8; 4];
    s.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    std::io::Read::read_exact(&mut s, &mut back).expect("echo");
    assert_eq!(&back, b"unix");
}

/// `unix-bind`: a proxy's UNIX bind takes its prefix, and its mode where the bind sets none
/// (a bind's own `mode` wins), as HAProxy 2.6 makes them.
#[test]
fn unix_bind_prefixes_the_paths_and_sets_the_modes() {
    use std::os::unix::fs::PermissionsExt;
    let echo = testserver("echo", "e");
    let dir = scratch("unix-bind");
    let prefix = format!("{}/", dir.display());
    let text = format!(
        "global\n unix-bind prefix {prefix} mode 640\n{ECHO_CFG}listen px\n bind unix@a.sock\n\
         bind unix@b.sock mode 600\n server e {}\n",
        echo.addr
    );
    let cfg = dir.join("u.cfg");
    std::fs::write(&cfg, text).expect("cfg");
    let _px = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    let (a, b) = (dir.join("a.sock"), dir.join("b.sock"));
    assert!(eventually(Duration::from_secs(5), || a.exists() && b.exists()));
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p).expect("socket file").permissions().mode() & 0o7777
    };
    assert_eq!((mode(&a), mode(&b)), (0o640, 0o600));
    let mut s = None;
    assert!(eventually(Duration::from_secs(3), || {
        s = std::os::unix::net::UnixStream::connect(&a).ok();
        s.is_some()
    }));
}

/// `presetenv`, `setenv`: the lines after them read the variables (an unquoted address, a
/// quoted string), and the process's environment has them (`show env`), as HAProxy's.
#[test]
fn setenv_and_presetenv_are_seen_by_later_lines_and_the_process() {
    let dir = scratch("setenv");
    let port = free_addr().port();
    let sock = dir.join("api.sock");
    let text = format!(
        "global\n presetenv FE_PORT {port}\n presetenv HOME /elsewhere\n setenv GREETING hello\n\
         stats socket {} level admin\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind 127.0.0.1:${{FE_PORT}}\n\
         http-request return status 200 content-type text/plain string \"${{GREETING}}\"\n",
        sock.display()
    );
    let cfg = dir.join("e.cfg");
    std::fs::write(&cfg, text).expect("cfg");
    let _px = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut got = None;
    assert!(eventually(Duration::from_secs(5), || {
        got = http_get(addr, "/");
        got.is_some()
    }));
    let (status, _, len) = got.expect("answer");
    assert_eq!((status, len), (200, "hello".len()));
    assert_eq!(api(&sock, "show env GREETING"), "GREETING=hello\n\n");
    // `presetenv` leaves a variable that was set.
    let home = std::env::var("HOME").unwrap_or_default();
    if !home.is_empty() {
        assert_eq!(api(&sock, "show env HOME"), format!("HOME={home}\n\n"));
    }
}

#[test]
fn a_bind_on_a_host_name_listens_on_its_address() {
    let echo = testserver("echo", "e");
    let port = free_addr().port();
    let dir = scratch("bind-host-name");
    let cfg = dir.join("h.cfg");
    let text =
        format!("{ECHO_CFG}listen px\n bind ipv4@localhost:{port}\n server e {}\n", echo.addr);
    std::fs::write(&cfg, text).expect("cfg");
    let _px = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut s = None;
    assert!(eventually(Duration::from_secs(5), || {
        s = std::net::TcpStream::connect(addr).ok();
        s.is_some()
    }));
    let mut s = s.expect("connected");
    assert_eq!(echo_roundtrip(&mut s, b"by name"), b"by name");
}

#[test]
fn global_maxconn_holds_across_workers_with_reuseport_sockets() {
    let echo = testserver("echo", "e");
    let port = free_addr().port();
    let dir = scratch("maxconn-workers");
    let cfg = dir.join("m.cfg");
    let text = format!("global\n nbthread 2\n maxconn 1\n{ECHO_CFG}listen px\n bind 127.0.0.1:{port}\n server e {}\n", echo.addr);
    std::fs::write(&cfg, text).expect("cfg");
    let _px = spawn_fulcrum(&dir, &cfg, &[], vec![]);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    assert!(eventually(Duration::from_secs(5), || std::net::TcpStream::connect(addr).is_ok()));
    // Several rounds, so that connections land on both workers' sockets.
    let mut held = connect(addr);
    assert_eq!(echo_roundtrip(&mut held, b"0"), b"0");
    for round in 1..=6u8 {
        held = held_back_until_freed(held, addr, round, Duration::from_millis(200));
    }
}

#[test]
fn a_soft_stop_ends_http2_connections_with_goaway_once_their_streams_are_done() {
    let ts = testserver("http", "s1");
    let px = fulcrum(
        "soft-stop-h2",
        &format!(
            "defaults\n mode http\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n\
             frontend fe\n bind {{fe0}} proto h2\n default_backend be\nbackend be\n server s1 {}\n",
            ts.addr
        ),
    );
    let addr = px.addr();
    let got = crate::h2client::run(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let (client, conn) = h2::client::handshake(tcp).await.map_err(|e| e.to_string())?;
        let driver = tokio::spawn(conn);
        let mut c = client.ready().await.map_err(|e| e.to_string())?;
        let req =
            http::Request::get(format!("http://{addr}/?t=300ms&s=10")).body(()).expect("request");
        let (resp, _) = c.send_request(req, true).map_err(|e| e.to_string())?;
        // The stream is in flight (the server waits 300 ms): soft stop now.
        tokio::time::sleep(Duration::from_millis(50)).await;
        px.proc.signal(libc::SIGUSR1);
        let resp = resp.await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut len = 0;
        while let Some(chunk) = body.data().await {
            len += chunk.map_err(|e| e.to_string())?.len();
        }
        drop(c);
        // The proxy sent GOAWAY and closes: the connection ends without an error.
        let ended = tokio::time::timeout(Duration::from_secs(5), driver).await;
        let clean = matches!(ended, Ok(Ok(Ok(()))));
        Ok::<_, String>((status, len, clean))
    });
    assert_eq!(got, Ok((200, 10, true)));
    let mut px = px;
    let st = px.proc.wait_exit(Duration::from_secs(5)).expect("exits once the connection ended");
    assert_eq!(st.code(), Some(0));
}

/// Reads one answer of `content-length` bytes (no more) from `s`: its head, lower-cased.
fn read_answer(s: &mut TcpStream) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).expect("read"), 1, "closed early: {buf:?}");
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len: usize = head
        .split("\r\n")
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("body");
    head
}

/// A soft stop closes idle keep-alive connections at once; with `option
/// idle-close-on-response` they stay for one more request, answered with `connection:
/// close`, then close, and the process leaves. Beside HAProxy 2.6.
#[test]
fn idle_close_on_response_keeps_idle_connections_for_one_more_request() {
    use std::io::Write;
    for option in [false, true] {
        for which in ["fulcrum", "haproxy"] {
            let opt = if option { " option idle-close-on-response\n" } else { "" };
            let cfg = format!(
                "defaults\n mode http\n timeout connect 5s\n timeout client 10s\n\
                 timeout server 5s\n{opt}frontend fe\n bind {{fe0}}\n\
                 http-request return status 200 content-type text/plain string ok\n"
            );
            let Some((mut p, addrs, _)) = start_proxy(which, "idle-close-on-response", &cfg) else {
                continue;
            };
            let mut s = connect(addrs[0]);
            let req = b"GET / HTTP/1.1\r\nhost: a\r\n\r\n";
            s.write_all(req).expect("write");
            let head = read_answer(&mut s);
            assert!(head.starts_with("http/1.1 200"), "{which}: {head}");
            assert!(!head.contains("connection: close"), "{which}: {head}");
            p.signal(libc::SIGUSR1);
            if !option {
                assert!(closed_within(&mut s, Duration::from_secs(3)), "{which}: still open");
            } else {
                assert!(!closed_within(&mut s, Duration::from_millis(500)), "{which}: closed");
                s.write_all(req).expect("write");
                let head = read_answer(&mut s);
                assert!(head.starts_with("http/1.1 200"), "{which}: {head}");
                assert!(head.contains("connection: close"), "{which}: {head}");
                assert!(closed_within(&mut s, Duration::from_secs(3)), "{which}: still open");
            }
            drop(s);
            assert!(p.wait_exit(Duration::from_secs(5)).is_some(), "{which}: still running");
        }
    }
}
