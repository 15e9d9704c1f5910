//! `server-state-file` + `load-server-state-from-file`: the states saved with `show servers
//! state` before a restart come back in the new process (maintenance, weight, a server forced
//! DOWN), before traffic, as in HAProxy 2.6; the traffic follows them.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::harness::*;

/// `show servers state` without the seconds since the last change (they differ per run).
pub(crate) fn masked_state(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let mut w: Vec<&str> = l.split(' ').collect();
            if w.len() > 9 && !l.starts_with('#') {
                w[9] = "T";
            }
            w.join(" ")
        })
        .collect()
}

#[test]
fn saved_server_states_come_back_after_a_restart() {
    let a = testserver("http", "a");
    let b = testserver("http", "b");
    let c = testserver("http", "c");
    let cfg = format!(
        "
global
    stats socket {{dir}}/api.sock level admin
    server-state-base {{dir}}
    server-state-file saved.state
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    load-server-state-from-file global
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server a {} weight 10
    server b {} weight 10
    server c {} weight 10 check inter 1h
",
        a.addr, b.addr, c.addr
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((p, _, dir)) = start_proxy(which, "state-first", &cfg) else { continue };
        let sock = dir.join("api.sock");
        assert!(eventually(Duration::from_secs(5), || UnixStream::connect(&sock).is_ok()));
        api(&sock, "set server be/b state maint");
        api(&sock, "set weight be/a 5");
        api(&sock, "set server be/c health down");
        let saved = api(&sock, "show servers state");
        drop(p);
        // The next process reads what the first one saved (a configuration with {dir} in
        // another scratch directory: copy the file there).
        let cfg2 = cfg.clone();
        let dir2 = scratch(&format!("state-saved-{which}"));
        std::fs::write(dir2.join("saved.state"), &saved).expect("save state");
        let cfg2 = cfg2.replace("{dir}", &dir2.display().to_string());
        let Some((_p2, addrs, _)) = start_proxy(which, "state-second", &cfg2) else { continue };
        let sock2 = dir2.join("api.sock");
        assert!(eventually(Duration::from_secs(5), || UnixStream::connect(&sock2).is_ok()));
        // c's first check starts at once (HAProxy schedules the first server's check at
        // start-up): wait for it to end, so both processes are compared after it.
        let mut state = String::new();
        let settled = eventually(Duration::from_secs(5), || {
            state = api(&sock2, "show servers state");
            state.lines().any(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                w.len() > 13
                    && w[3] == "c"
                    && w[11] != "0"
                    && w[13].parse::<u32>().is_ok_and(|s| s & 1 == 0)
            })
        });
        assert!(settled, "{which}: c's first check never ended: {state}");
        let names = servers_of(addrs[0], 6);
        assert_eq!(
            count(&names, "a"),
            6,
            "{which}: b in maintenance and c DOWN get nothing: {names:?}"
        );
        seen.push(masked_state(&state));
    }
    let f = &seen[0];
    assert!(f.iter().any(|l| l.contains(" a ") && l.contains(" 5 10 ")), "a's weight: {f:#?}");
    assert!(f.iter().any(|l| l.contains(" b ") && l.contains(" 0 1 10 10 ")), "b in MAINT: {f:#?}");
    assert!(f.iter().any(|l| l.contains(" c ") && l.contains(" 0 0 10 10 ")), "c DOWN: {f:#?}");
    if let Some(h) = seen.get(1) {
        super::runtime_api::same(f, h, "show servers state after the restart");
    }
}
