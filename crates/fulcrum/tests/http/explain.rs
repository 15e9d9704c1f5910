//! `fulcrum explain` (issue 36 §2) beside a live Fulcrum: the same configuration, the same
//! requests; what `explain` says (status, server, termination state, the head the server
//! gets) must be what the live proxy did, since both run the same analysers.

use crate::harness::run;
use crate::px::*;

/// What `explain` printed for one request, in the live run's terms.
#[derive(Debug, PartialEq, Eq)]
struct Said {
    status: u16,
    server: Option<String>,
    /// The request head for the server, its lines lower-cased by name (`None`: answered).
    head: Option<Vec<(String, String)>>,
    state: Option<String>,
}

/// Writes `text` to `dir/name`; its path.
fn write_in(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.to_string_lossy().into_owned()
}

fn explain(cfg: &std::path::Path, extra: &[&str], request: &str) -> Said {
    let mut args = vec!["explain", "-f", cfg.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    args.push(request);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "explain failed: {out}{err}");
    let after = |p: &str| out.lines().find_map(|l| l.strip_prefix(p)).map(str::to_string);
    let server = after("server: ").map(|s| s.split(' ').next().unwrap_or("").to_string());
    let answer = after("answer: ");
    let status = match &answer {
        Some(a) => a.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0),
        None => 200, // the test server answers 200
    };
    let state = answer.as_deref().and_then(|a| {
        let s = a.split("(termination ").nth(1)?;
        Some(s.trim_end_matches(')').to_string())
    });
    let head = out.split("request as it goes to the server:\n").nth(1).map(|h| {
        h.lines()
            .skip(1)
            .filter_map(|l| l.trim().split_once(": "))
            .map(|(n, v)| (n.to_lowercase(), v.to_string()))
            .collect()
    });
    Said { status, server, head, state }
}

#[test]
fn explain_says_what_the_live_proxy_does() {
    let (a1, a2, w1) = (server("a1"), server("a2"), server("w1"));
    let cfg = format!(
        "global\n nbthread 1\n{DEFAULTS}frontend fe\n bind {{fe0}}\n option forwardfor\n \
         acl api path_beg /api\n http-request deny if {{ path_beg /admin }}\n \
         http-request set-var(txn.k) str(api) if api\n \
         http-request set-header X-Kind %[var(txn.k)] if api\n \
         http-request redirect location /new code 301 if {{ path /old }}\n \
         http-request return status 202 content-type text/plain string ok if {{ path /ret }}\n \
         use_backend api if api\n default_backend web\n\
         backend api\n balance uri\n cookie SRV insert indirect nocache\n \
         server a1 {} cookie one\n server a2 {} cookie two\n\
         backend web\n http-request del-header x-drop\n server w1 {}\n",
        a1.addrs()[0],
        a2.addrs()[0],
        w1.addrs()[0]
    );
    let px = Target::Fulcrum.start(&cfg);
    let path = px.dir.join("proxy.cfg");
    let requests = [
        "GET /api/users?id=1&echo=head HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET /api/other?echo=head HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET /api/x?echo=head HTTP/1.1\r\nHost: t\r\nCookie: z=1; SRV=one\r\nConnection: close\r\n\r\n",
        "GET /api/x?echo=head HTTP/1.1\r\nHost: t\r\nCookie: SRV=two\r\nConnection: close\r\n\r\n",
        "GET /page?echo=head HTTP/1.1\r\nHost: t\r\nX-Drop: 1\r\nConnection: close\r\n\r\n",
        "GET /admin?echo=head HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET /old HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET /ret HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    ];
    for (i, req) in requests.iter().enumerate() {
        let said = explain(&path, &["--src", "127.0.0.1:40000"], req);
        let got = px.send(req.as_bytes());
        assert_eq!(said.status, got.status, "request {i}: {req:?}");
        match &said.head {
            Some(head) => {
                assert_eq!(said.server.as_deref(), Some(got.server()), "request {i}");
                let echoed = got.echoed();
                let live: Vec<(String, String)> = echoed.headers.clone();
                assert_eq!(head, &live, "request {i}: the head the server got");
            }
            None => {
                // An answer made here: the live log line has the same termination state.
                let state = said.state.clone().expect("a termination state");
                let logged = eventually(std::time::Duration::from_secs(5), || {
                    px.log().lines().any(|l| {
                        l.contains(&format!(" {state} "))
                            && l.contains(req.split(' ').nth(1).unwrap_or("-"))
                    })
                });
                assert!(logged, "request {i}: {state} not in the log:\n{}", px.log());
            }
        }
    }
    // Asked for help, it says how to call it, on stdout, and succeeds.
    let (code, out, _) = run(&["explain", "--help"]);
    assert!(code == 0 && out.starts_with("Usage: fulcrum explain"), "{code} {out}");
    // `--down`: a server in maintenance is not chosen, and its cookie no longer holds.
    let said = explain(&path, &["--down", "a1"], requests[2]);
    assert_eq!(said.server.as_deref(), Some("a2"));
}

/// Live state given to `explain` in the runtime API's formats: a map's and an ACL's contents as
/// `show map|acl` prints them, and servers' states as `show servers state` writes them.
#[test]
fn explain_takes_live_maps_acls_and_server_states() {
    let dir = crate::harness::scratch("explain-live");
    let file = |name: &str, text: &str| write_in(&dir, name, text);
    let map = file("paths.map", "/api api\n");
    let acl = file("blocked.acl", "10.9.9.9\n");
    let cfg = file(
        "h.cfg",
        &format!(
            "{DEFAULTS}frontend fe\n bind 127.0.0.1:1\n acl blocked src -f {acl}\n \
             http-request deny if blocked\n use_backend %[path,map_beg({map},web)]\n\
             backend api\n server a1 127.0.0.1:2\n server a2 127.0.0.1:3\n\
             backend web\n server w1 127.0.0.1:4\n"
        ),
    );
    let live_map = file("live.map", "0x55d0c0ffee /v2 api\n");
    let live_acl = file("live.acl", "0x55d0c0ffee 127.0.0.1\n");
    let state = file(
        "state",
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight \
         srv_iweight srv_time_since_last_change srv_check_status srv_check_result \
         srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id \
         srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr \
         srv_agent_addr srv_agent_port\n\
         2 api 1 a1 127.0.0.1 2 1 1 1 100 1 0 3 7 0 0 0 - 2 - 0 0 - - 0\n",
    );
    let req = "GET /v2/x HTTP/1.1\r\nHost: t\r\n\r\n";
    let path = std::path::Path::new(&cfg);
    let (map_arg, acl_arg) = (format!("{map}={live_map}"), format!("{acl}={live_acl}"));
    let with = |extra: &[&str]| {
        let args: Vec<&str> = ["--src", "127.0.0.1:5"].iter().chain(extra).copied().collect();
        explain(path, &args, req)
    };
    assert_eq!(with(&[]).server.as_deref(), Some("w1"));
    assert_eq!(with(&["--map", &map_arg]).server.as_deref(), Some("a1"));
    // a1 was in maintenance (admin state 1) when the state was saved.
    let saved = with(&["--map", &map_arg, "--state-file", &state]);
    assert_eq!(saved.server.as_deref(), Some("a2"));
    let denied = with(&["--acl", &acl_arg]);
    assert_eq!((denied.status, denied.state.as_deref()), (403, Some("PR--")));
    let (code, _, err) = run(&["explain", "-f", &cfg, "--acl", &format!("/nope={live_acl}"), req]);
    assert_eq!(code, 1);
    assert!(err.contains("Unknown ACL identifier"), "{err}");
}

/// `--table NAME=FILE`: a stick table's entries as `show table` prints them decide
/// `stick on|match` as the live table would (the server's name first, then its id).
#[test]
fn explain_takes_stick_table_entries() {
    let dir = crate::harness::scratch("explain-table");
    let file = |name: &str, text: &str| write_in(&dir, name, text);
    let cfg = file(
        "t.cfg",
        &format!(
            "{DEFAULTS}frontend fe\n bind 127.0.0.1:1\n default_backend b\n\
             backend b\n balance roundrobin\n stick-table type string len 32 size 10\n \
             stick on req.hdr(x-user)\n server s1 127.0.0.1:2\n server s2 127.0.0.1:3\n \
             server s3 127.0.0.1:4\n"
        ),
    );
    let by_id = file("id.txt", "# table: b, type: string, size:10, used:1\n0x55d0c0ffee: key=alice use=0 exp=0 server_id=3\n");
    let by_name =
        file("name.txt", "0x55d0c0ffee: key=alice use=0 exp=0 server_id=3 server_key=s2\n");
    let path = std::path::Path::new(&cfg);
    let req = "GET / HTTP/1.1\r\nHost: t\r\nX-User: alice\r\n\r\n";
    // A fresh table: the balancer's first pick.
    assert_eq!(explain(path, &[], req).server.as_deref(), Some("s1"));
    let table = |f: &str| format!("b={f}");
    assert_eq!(explain(path, &["--table", &table(&by_id)], req).server.as_deref(), Some("s3"));
    assert_eq!(explain(path, &["--table", &table(&by_name)], req).server.as_deref(), Some("s2"));
    // Another key is not in the table.
    let bob = "GET / HTTP/1.1\r\nHost: t\r\nX-User: bob\r\n\r\n";
    assert_eq!(explain(path, &["--table", &table(&by_id)], bob).server.as_deref(), Some("s1"));
    let (code, _, err) = run(&["explain", "-f", &cfg, "--table", &format!("nope={by_id}"), req]);
    assert_eq!(code, 1);
    assert!(err.contains("no stick table 'nope'"), "{err}");
}

/// `--tls` and `--tls-sni`: what the client's TLS would say, for the rules that read it
/// (`ssl_fc`, `ssl_fc_sni`); without them the request came in clear.
#[test]
fn explain_is_told_the_clients_tls() {
    let dir = crate::harness::scratch("explain-tls");
    let cfg = dir.join("h.cfg");
    let text = format!(
        "{DEFAULTS}frontend fe\n bind 127.0.0.1:1\n \
         http-request redirect scheme https code 301 if !{{ ssl_fc }}\n \
         use_backend shop if {{ ssl_fc_sni shop.example.com }}\n default_backend web\n\
         backend shop\n server s1 127.0.0.1:2\nbackend web\n server w1 127.0.0.1:3\n"
    );
    std::fs::write(&cfg, text).expect("write");
    let req = "GET /x HTTP/1.1\r\nHost: shop.example.com\r\n\r\n";
    let clear = explain(&cfg, &[], req);
    assert_eq!((clear.status, clear.state.as_deref()), (301, Some("LR--")));
    assert_eq!(
        explain(&cfg, &["--tls-sni", "shop.example.com"], req).server.as_deref(),
        Some("s1")
    );
    assert_eq!(explain(&cfg, &["--tls"], req).server.as_deref(), Some("w1"));
    // The trace names each rule judged, with its line, the `use_backend` ones too.
    let path = cfg.to_str().expect("utf-8 path");
    let (_, out, _) = run(&["explain", "-f", path, "--tls", req]);
    let line = |n: u32, verdict: &str| format!("{path}:{n}: ") + verdict;
    assert!(
        out.contains(&line(
            8,
            "http-request redirect scheme https code 301 if !{ ssl_fc }  -> does not apply"
        )),
        "{out}"
    );
    assert!(
        out.contains(&line(
            9,
            "use_backend shop if { ssl_fc_sni shop.example.com }  -> does not apply"
        )),
        "{out}"
    );
    assert!(out.contains("default_backend web"), "{out}");
}

/// The demo's own call (`fulcrum demo` runs it and prints it): on `examples/demo.cfg`, from the
/// repository's root as the demo runs, `/admin` is denied by line 61 and `/api/` goes to
/// backend `api`, as the demo tells its user to try with curl.
#[test]
fn explain_answers_the_demos_questions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let explain = |request: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fulcrum"))
            .current_dir(&root)
            .args(["explain", "-f", "examples/demo.cfg", request])
            .output()
            .expect("run fulcrum explain");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let admin = explain("GET /admin HTTP/1.1\nHost: demo\n\n");
    assert!(
        admin.contains("examples/demo.cfg:61: http-request deny if is_admin  -> applies"),
        "{admin}"
    );
    assert!(admin.contains("answer: 403 Forbidden (termination PR--)"), "{admin}");
    let api = explain("GET /api/?s=64 HTTP/1.1\nHost: demo\n\n");
    assert!(api.lines().any(|l| l == "backend: api"), "{api}");
}

/// A stick table's entries read from a live proxy's runtime API (`show table`, HAProxy 2.6's
/// own output too when it is installed) and given to `explain`: it names, for each key, the
/// server the live proxy stuck it to, where a fresh start would name the balancer's first pick.
#[test]
fn explain_reads_a_live_proxys_show_table() {
    let (s1, s2, s3) = (server("s1"), server("s2"), server("s3"));
    let cfg = format!(
        "global\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}frontend fe\n \
         bind {{fe0}}\n default_backend b\n\
         backend b\n balance roundrobin\n stick-table type string len 32 size 10\n \
         stick on req.hdr(x-user)\n server s1 {}\n server s2 {}\n server s3 {}\n",
        s1.addrs()[0],
        s2.addrs()[0],
        s3.addrs()[0]
    );
    let req = |user: &str| format!("GET / HTTP/1.1\r\nHost: t\r\nX-User: {user}\r\n\r\n");
    for t in targets() {
        let px = t.start(&cfg);
        // Each user's first request picks a server in turn; the table keeps it.
        let live: Vec<String> = ["u1", "u2", "u3"]
            .iter()
            .map(|u| px.send(req(u).as_bytes()).server().to_string())
            .collect();
        let sock = px.dir.join("api.sock");
        let table = crate::harness::api(&sock, "show table b");
        assert!(table.contains("key=u3"), "{}: {table}", t.name());
        let file = write_in(&px.dir, "table.txt", &table);
        let path = px.dir.join("proxy.cfg");
        for (u, srv) in ["u1", "u2", "u3"].iter().zip(&live) {
            let said = explain(&path, &["--table", &format!("b={file}")], &req(u));
            assert_eq!(said.server.as_deref(), Some(srv.as_str()), "{} {u}: {table}", t.name());
        }
        // Without the table every user is new: the balancer's first pick.
        assert_eq!(explain(&path, &[], &req("u3")).server.as_deref(), Some("s1"));
    }
}
