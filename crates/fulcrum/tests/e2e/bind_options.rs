//! Bind options that choose who accepts and how a listener is known: `thread` (only the
//! workers of those threads accept on the line; threads beyond `nbthread` are left out, a set
//! of none of them refused) and `id` (`so_id`, the others numbered as HAProxy numbers them).
//! Beside HAProxy 2.6 on the same configuration.

use crate::harness::{get_with, start_proxy};

#[test]
fn thread_and_id_choose_the_accepting_workers_and_the_listener_ids() {
    let cfg = "global\n nbthread 2\n\
               defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind {fe0} thread 2\n bind {fe1} thread 1 id 1\n\
               bind {fe2} thread 1-5\n bind {fe3}\n\
               http-request return status 200 content-type text/plain lf-string \"%[thread] %[so_id]\"\n";
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "bind-thread-id", cfg) else { continue };
        // Each request on a new connection: every one is accepted by a worker of the line.
        let answers: Vec<Vec<String>> = addrs
            .iter()
            .map(|&a| {
                let mut v: Vec<String> = (0..8)
                    .map(|_| {
                        let (status, head, body) = get_with(a, "/", "");
                        assert_eq!(status, 200, "{which}: {head}");
                        body
                    })
                    .collect();
                v.sort();
                v.dedup();
                v
            })
            .collect();
        seen.push(answers);
    }
    // Threads from 0 in the fetch; `thread 1-5` with two threads is both. Ids: the line with `id 1` has it, the others take the free ones in turn,
    // the counter moving on past every listener.
    assert_eq!(seen[0][0], ["1 2"]);
    assert_eq!(seen[0][1], ["0 1"]);
    // (Lines on both workers: either one accepts.)
    for (i, id) in [(2, "4"), (3, "5")] {
        let either = |a: &String| *a == format!("0 {id}") || *a == format!("1 {id}");
        assert!(seen[0][i].iter().all(either), "{:?}", seen[0][i]);
    }
    if let Some(theirs) = seen.get(1) {
        assert_eq!(seen[0][..2], theirs[..2], "as HAProxy 2.6");
        for i in [2, 3] {
            let ids = |v: &[String]| v.iter().map(|a| a[2..].to_string()).collect::<Vec<_>>();
            assert_eq!(ids(&seen[0][i])[..1], ids(&theirs[i])[..1], "so_id as HAProxy 2.6");
        }
    }
}

#[test]
fn a_thread_set_naming_no_thread_of_the_process_is_refused() {
    let cfg = "global\n nbthread 2\n\
               defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind 127.0.0.1:1 thread 3-4\n\
               http-request return status 200\n";
    let (code, _, err) = crate::harness::check("bind-thread-none", cfg);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Proxy 'fe': 'thread' directive contains threads that belong to no group in 'bind 127.0.0.1:1' at ["),
        "{err}"
    );
}

/// Whether a socket listens on `addr` (an IPv4 address), from `/proc/net/tcp`.
fn listening_on(addr: std::net::SocketAddrV4) -> bool {
    let ip = u32::from_le_bytes(addr.ip().octets());
    let local = format!("{ip:08X}:{:04X}", addr.port());
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&local.as_str()) && f.get(3) == Some(&"0A")
    })
}

#[test]
fn transparent_binds_an_address_this_host_does_not_have() {
    // 198.51.100.0/24 is TEST-NET-2: configured on no interface here.
    let port = crate::harness::free_addr().port();
    let foreign = std::net::SocketAddrV4::new([198, 51, 100, 7].into(), port);
    for which in ["fulcrum", "haproxy"] {
        let cfg = format!(
            "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}}\n bind {foreign} transparent\n\
             http-request return status 200\n"
        );
        let Some((mut p, addrs, _)) = start_proxy(which, "bind-transparent", &cfg) else {
            continue;
        };
        let (status, head, _) = get_with(addrs[0], "/", "");
        assert_eq!(status, 200, "{which}: {head}");
        assert!(p.is_running(), "{which}");
        assert!(listening_on(foreign), "{which}: nothing listens on {foreign}");
        drop(p);
        // Without it, binding the address fails and the proxy does not start.
        let refused = cfg.replace(" transparent", "");
        let (mut p, _, _) = start_proxy(which, "bind-not-transparent", &refused).expect("started");
        let st = p.wait_exit(std::time::Duration::from_secs(10)).expect("exits");
        assert!(!st.success(), "{which}: {}", p.log_text());
    }
}
