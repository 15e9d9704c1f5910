//! Lua scripts (`lua-load`, `core.register_action`, `http-request lua.<name>`,
//! `http-response lua.<name>`) beside HAProxy 2.6: a script written for these tests edits the
//! request and response headers, sets and reads variables, waits (`core.msleep`) and fails
//! (its error logged as HAProxy logs it, the request going on); scripts that do not load give
//! HAProxy's messages.

use std::time::{Duration, Instant};

use crate::harness::{
    eventually, exchange, haproxy_bin, run, scratch, start_proxy, testserver, Head,
};

const SCRIPT: &str = r#"
core.register_action("hello", {"http-req"}, function(txn, who)
  txn.http:req_set_header("x-hello", "world " .. who)
  txn:set_var("txn.greeted", "yes")
  local h = txn.http:req_get_headers()
  txn:set_var("txn.ua", h["user-agent"][0])
  txn:set_var("txn.n", #(h["x-many"] or {}) + 1)
  core.msleep(200)
  txn.http:req_add_header("x-after", "sleep")
  txn.http:req_del_header("x-many")
  return act.CONTINUE
end, 1)
core.register_action("tag", {"http-res"}, function(txn)
  txn.http:res_set_header("x-lua", txn:get_var("txn.greeted") or "none")
  txn.http:res_set_status(202)
end)
core.register_action("boom", {"http-req"}, function(txn)
  error("kaboom")
end)
"#;

fn targets() -> Vec<&'static str> {
    match haproxy_bin() {
        Some(_) => vec!["haproxy", "fulcrum"],
        None => vec!["fulcrum"],
    }
}

fn body_of(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    text.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.trim().to_string())
}

#[test]
fn a_script_s_actions_edit_the_request_and_response_and_wait_as_in_haproxy() {
    let app = testserver("http", "app");
    let script = scratch("lua-actions-script").join("t.lua");
    std::fs::write(&script, SCRIPT).expect("script");
    let cfg = format!(
        "global\n    lua-load {}\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind {{fe0}}\n\
         \x20   http-request lua.boom if {{ path /boom }}\n\
         \x20   http-request lua.hello alice\n\
         \x20   http-request return status 200 content-type text/plain lf-string \
         \"%[req.hdr(x-hello)] %[var(txn.greeted)] %[var(txn.ua)] %[var(txn.n)] %[req.hdr(x-after)] %[req.hdr_cnt(x-many)]\" if {{ path /ret }}\n\
         \x20   default_backend be\n\
         backend be\n    http-response lua.tag\n    server s {}\n",
        script.display(),
        app.addr
    );
    let mut runs = Vec::new();
    for which in targets() {
        let (proc, addrs, _) = start_proxy(which, "lua-actions", &cfg).expect("proxy starts");
        let fe = addrs[0];
        let start = Instant::now();
        let ret = exchange(
            fe,
            b"GET /ret HTTP/1.1\r\nHost: t\r\nUser-Agent: ua1\r\nX-Many: 1\r\nX-Many: 2\r\nConnection: close\r\n\r\n",
        );
        let took = start.elapsed();
        let served = exchange(
            fe,
            b"GET / HTTP/1.1\r\nHost: t\r\nUser-Agent: ua2\r\nConnection: close\r\n\r\n",
        );
        let head = Head::parse(&served).expect("an answer");
        let boom = exchange(
            fe,
            b"GET /boom HTTP/1.1\r\nHost: t\r\nUser-Agent: u\r\nConnection: close\r\n\r\n",
        );
        let boom_status = Head::parse(&boom).map(|h| h.target.clone()).unwrap_or_default();
        let alert = "Lua function 'boom': [state-id 0] runtime error: ";
        let logged = eventually(Duration::from_secs(3), || proc.log_text().contains(alert));
        let got = vec![
            body_of(&ret),
            head.target.clone(),
            head.header("x-lua").unwrap_or("-").to_string(),
            boom_status,
        ];
        eprintln!("{which}: {got:?} in {took:?}");
        assert_eq!(got[0], "world alice yes ua1 2 sleep 0", "{which}");
        assert!(took >= Duration::from_millis(200), "{which}: core.msleep(200) waited: {took:?}");
        assert_eq!(got[1..3], ["202", "yes"], "{which}");
        // The failing action is logged; the request goes on (to the server: 202 by `tag`).
        assert_eq!(got[3], "202", "{which}");
        assert!(logged, "{which}: {}", proc.log_text());
        let line = proc
            .log_text()
            .lines()
            .find(|l| l.contains(alert))
            .map(|l| l.split_once(") : ").map_or(l.to_string(), |(_, m)| m.to_string()));
        drop(proc);
        runs.push((got, line));
    }
    if runs.len() == 2 {
        assert_eq!(runs[0], runs[1], "HAProxy, then Fulcrum");
    }
}

/// `-c` of `cfg` under `which`: its `[ALERT]` messages about the Lua lines, without their
/// prefix.
fn alerts(which: &str, test: &str, cfg: &str) -> Vec<String> {
    let path = scratch(&format!("{test}-{which}")).join(format!("{which}.cfg"));
    std::fs::write(&path, cfg).expect("cfg");
    let p = path.to_string_lossy().into_owned();
    let err = if which == "haproxy" {
        let bin = haproxy_bin().expect("haproxy");
        let out =
            std::process::Command::new(bin).args(["-c", "-f", &p]).output().expect("haproxy -c");
        String::from_utf8_lossy(&out.stderr).into_owned()
    } else {
        run(&["-c", "-f", &p]).2
    };
    err.lines()
        .filter_map(|l| l.split_once("parsing [").map(|(_, m)| m.to_string()))
        .map(|m| m.split_once(".cfg:").map_or(m.clone(), |(_, rest)| rest.to_string()))
        .map(|m| m.replace("]: ", "] : "))
        .collect()
}

#[test]
fn scripts_that_do_not_load_and_unknown_actions_get_haproxy_s_messages() {
    let dir = scratch("lua-errors");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("script");
        p.display().to_string()
    };
    let ok = write("ok.lua", "core.register_action('hello', {'http-req'}, function(txn) end)\n");
    let syntax = write("syntax.lua", "local x = = 1\n");
    let runtime = write("runtime.lua", "error('boom')\n");
    let missing = dir.join("missing.lua").display().to_string();
    let cfg = format!(
        "global\n    lua-load {ok}\n    lua-load {syntax}\n    lua-load {runtime}\n    lua-load {missing}\n\
         \x20   lua-prepend-path /x/?.lua bad\n    tune.lua.maxmem 12x\n    tune.lua.session-timeout 3q\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind 127.0.0.1:28777\n    http-request lua.hello\n    http-request lua.nope\n"
    );
    let mut runs = Vec::new();
    for which in targets() {
        let got = alerts(which, "lua-errors", &cfg);
        eprintln!("{which}: {got:#?}");
        assert_eq!(got.len(), 7, "{which}: {got:#?}");
        assert!(got[0].ends_with("syntax.lua:1: unexpected symbol near '='"), "{which}: {got:#?}");
        assert!(got[1].ends_with("runtime.lua:1: boom"), "{which}: {got:#?}");
        assert!(got[2].contains("cannot open"), "{which}: {got:#?}");
        assert!(
            got[6].ends_with("'lua.hello', but got 'lua.nope'. Did you mean 'lua.hello' maybe ?"),
            "{which}: {got:#?}"
        );
        runs.push(got);
    }
    if runs.len() == 2 {
        assert_eq!(runs[0], runs[1], "HAProxy, then Fulcrum");
    }
}
