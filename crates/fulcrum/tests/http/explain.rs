//! `fulcrum explain` (issue 36 §2) beside a live Fulcrum: the same configuration, the same
//! requests; what `explain` says (status, server, termination state, the head the server
//! gets) must be what the live proxy did, since both run the same analysers. The harness
//! checks this on every test's proxy (`crosscheck.rs`); here are explain's own options, and
//! the golden configuration cases of `fulcrum-config` (`golden_*`).

use std::net::SocketAddr;

use crate::crosscheck::{Checker, Said};
use crate::harness::run;
use crate::px::*;

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
    Said::parse(&out)
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
        assert_eq!(said.status(), got.status, "request {i}: {req:?}");
        match &said.head {
            Some(head) => {
                assert_eq!(said.server.as_deref(), Some(got.server()), "request {i}");
                let echoed = got.echoed();
                let live: Vec<(String, String)> = echoed.headers.clone();
                assert_eq!(head, &live, "request {i}: the head the server got");
            }
            None => {
                // An answer made here: the live log line has the same termination state.
                let state = said.state().expect("a termination state");
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
    assert_eq!((denied.status(), denied.state()), (403, Some("PR--")));
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
    assert_eq!((clear.status(), clear.state()), (301, Some("LR--")));
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

/// What a connection passes before its requests, and what the client gets after the
/// analysers, explained as the live session does them: `tcp-request connection|session` rules
/// (a refusal, addresses they set), the frontend's head size limit, `http-after-response` on
/// the proxy's own answers, and a chunked body that is not valid.
#[test]
fn explain_covers_the_connection_rules_the_limits_and_the_answers_last_rules() {
    let dir = crate::harness::scratch("explain-connection");
    let cfg = write_in(
        &dir,
        "c.cfg",
        &format!(
            "global\n tune.bufsize 2048\n{DEFAULTS}frontend fe\n bind 127.0.0.1:1\n \
             tcp-request connection reject if {{ src 10.9.9.9 }}\n \
             tcp-request session set-src ipv4(10.1.0.1)\n \
             http-request return status 200 hdr x-a \"%[src]\" if {{ path /src }}\n \
             http-after-response set-status 418 if {{ status 503 }}\n \
             use_backend b if {{ path /b }}\n\
             backend b\n server s1 127.0.0.1:2\n"
        ),
    );
    let said = |src: &str, req: &str| {
        let (code, out, err) = run(&["explain", "-f", &cfg, "--src", src, req]);
        assert_eq!(code, 0, "{out}{err}");
        out
    };
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    let refused = said("10.9.9.9:5", &get("/src"));
    assert!(
        refused.contains("answer: none, tcp-request connection|session rules refuse"),
        "{refused}"
    );
    let moved = said("127.0.0.1:5", &get("/src"));
    assert!(moved.contains("addresses: src 10.1.0.1:5 "), "{moved}");
    assert!(moved.contains("  x-a: 10.1.0.1\n"), "{moved}");
    // No backend: 503, made 418 by `http-after-response`.
    let none = Said::parse(&said("127.0.0.1:5", &get("/none")));
    assert_eq!((none.status(), none.state()), (418, Some("PR--")));
    // A head over `tune.bufsize` less `maxrewrite`: refused by the parser, as live.
    let big = format!("GET / HTTP/1.1\r\nHost: t\r\nX-A: {}\r\n\r\n", "a".repeat(1500));
    let refused = Said::parse(&said("127.0.0.1:5", &big));
    assert_eq!((refused.status(), refused.state()), (400, Some("PR--")));
    let chunked = "POST /b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    let bad = Said::parse(&said("127.0.0.1:5", chunked));
    assert_eq!((bad.status(), bad.state()), (400, Some("PR--")));
}

/// The demo's own call (`fulcrum demo` runs it and prints it): on `examples/demo.cfg`, from the
/// repository's root as the demo runs, `/admin` is denied by its deny rule's line and `/api/` goes to
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
    let text = std::fs::read_to_string(root.join("examples/demo.cfg")).expect("demo.cfg");
    let rule = "http-request deny if is_admin";
    let at = 1 + text.lines().position(|l| l.trim() == rule).expect("the demo's deny rule");
    let admin = explain("GET /admin HTTP/1.1\nHost: demo\n\n");
    assert!(admin.contains(&format!("examples/demo.cfg:{at}: {rule}  -> applies")), "{admin}");
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

/// The golden cases' environment (`fulcrum-config`'s `tests/golden.rs`).
const GOLDEN_ENV: &[(&str, &str)] =
    &[("FRONT_PORT", "8080"), ("BACKEND_HOST", "10.0.0.5"), ("EMPTY", ""), ("NBTHREAD", "4")];

/// Requests any HTTP configuration can be asked about (the test server echoes their head).
const GENERIC: &[&str] = &[
    "GET /?echo=head HTTP/1.1\r\nHost: t\r\n\r\n",
    "GET /index.html?q=1&echo=head HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: curl/8.5\r\n\
     Accept: */*\r\nCookie: SRV=s1\r\n\r\n",
    "POST /api/v1/items?echo=head HTTP/1.1\r\nHost: api.example.com\r\n\
     Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    "GET /?echo=head HTTP/1.0\r\n\r\n",
];

/// A golden case: its files (the case, then its `.partN.cfg`), and its `mode http` frontends
/// when it loads without an ALERT (`None`: it does not).
struct Golden {
    name: String,
    files: Vec<std::path::PathBuf>,
    http: Option<Vec<String>>,
}

/// The golden cases, loaded as `fulcrum-config`'s golden test loads them.
fn golden_cases() -> Vec<Golden> {
    use fulcrum_config::{load, Mode, Severity, Source};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fulcrum-config/tests/cases");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("the golden cases")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "cfg") && !p.to_string_lossy().contains(".part")
        })
        .collect();
    cases.sort();
    let env = |name: &str| GOLDEN_ENV.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
    cases
        .into_iter()
        .map(|case| {
            let stem = case.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
            let mut files = vec![case.clone()];
            files.extend(
                (2..10).map(|n| dir.join(format!("{stem}.part{n}.cfg"))).filter(|p| p.exists()),
            );
            let sources: Vec<Source> = files
                .iter()
                .map(|p| Source {
                    name: p.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string(),
                    text: std::fs::read_to_string(p).expect("read a case"),
                })
                .collect();
            let http = load(&sources, &env)
                .ok()
                .filter(|l| !l.diagnostics.iter().any(|d| d.severity == Severity::Alert));
            let http = http.map(|l| {
                let fes = l.config.frontends().filter(|p| p.mode == Mode::Http);
                fes.map(|p| p.name.clone()).collect()
            });
            Golden { name: stem, files, http }
        })
        .collect()
}

/// `fulcrum <args> -f <the case's files>...` in the golden cases' environment, the request (if
/// any) on its standard input.
fn golden_run(case: &Golden, args: &[&str], request: Option<&str>) -> (i32, String, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(crate::harness::BIN);
    cmd.args(args);
    for f in &case.files {
        cmd.arg("-f").arg(f);
    }
    if request.is_some() {
        cmd.arg("-");
    }
    cmd.env_clear().envs(GOLDEN_ENV.iter().copied());
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run fulcrum");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(request.unwrap_or("").as_bytes()).expect("write the request");
    drop(stdin);
    let out = child.wait_with_output().expect("fulcrum's output");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Every golden case that loads without an ALERT and has a `mode http` frontend: `explain`
/// answers generic requests at each such frontend (exit 0, a backend decision or an answer;
/// never a panic). A case whose files or host names the CLI cannot read or resolve here
/// (`fulcrum -c` fails: `/etc/...` pattern files, `errorfile`s, DNS names) cannot be
/// explained, as it cannot be run: it is listed, not failed.
#[test]
fn explain_answers_for_every_golden_http_configuration() {
    let (mut explained, mut unloadable, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for case in golden_cases() {
        let Some(http) = case.http.as_ref().filter(|h| !h.is_empty()) else { continue };
        let (code, _, err) = golden_run(&case, &["-c"], None);
        if code != 0 {
            let why = err.lines().find(|l| l.contains("ALERT")).unwrap_or("").to_string();
            unloadable.push(format!("{}: {why}", case.name));
            continue;
        }
        for fe in http {
            for req in GENERIC {
                let (code, out, err) = golden_run(&case, &["explain", "--frontend", fe], Some(req));
                let decided =
                    out.lines().any(|l| l.starts_with("backend: ") || l.starts_with("answer: "));
                if code != 0 || !decided {
                    failures.push(format!("{} {fe} {req:?}: exit {code}\n{out}{err}", case.name));
                }
            }
        }
        explained.push(case.name.clone());
    }
    eprintln!(
        "explained: {}\nnot loadable here:\n  {}",
        explained.join(" "),
        unloadable.join("\n  ")
    );
    assert!(failures.is_empty(), "explain failed on golden cases:\n{}", failures.join("\n"));
    assert!(explained.len() >= 10, "only {} golden cases explained", explained.len());
}

/// A golden case's configuration made runnable here, or why it cannot be: each `bind` on a
/// harness frontend (`{fe<i>}`, returned with the section that binds it), each server at
/// `srv`. A live run is possible only where nothing else binds, resolves, reads or waits on
/// this machine: a single file, no `${VAR}`, no `.if`, a `global` section of `tune.*`,
/// `maxconn` and `nbthread` only, `bind` lines without options, `server` lines whose options
/// change no connection (cookie, weight, id, maxconn, maxqueue, pool sizes), no `tarpit`
/// (each request would wait `timeout tarpit`), at most 8 `bind` lines.
fn live_config(case: &Golden, srv: SocketAddr) -> Result<(String, Vec<String>), String> {
    const SERVER_OPTS: &[&str] =
        &["cookie", "weight", "id", "maxconn", "maxqueue", "pool-max-conn", "pool-purge-delay"];
    if case.files.len() > 1 {
        return Err("several files".into());
    }
    let text = std::fs::read_to_string(&case.files[0]).expect("read a case");
    let (mut out, mut binds, mut section, mut name) = (String::new(), Vec::new(), "", "");
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or("");
        let w: Vec<&str> = code.split_whitespace().collect();
        let Some(&first) = w.first() else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if code.contains("${") || first.starts_with(".if") {
            return Err(format!("{first}: environment or conditions"));
        }
        let sections = ["global", "defaults", "frontend", "backend", "listen", "userlist"];
        if sections.contains(&first) || first == "http-errors" {
            (section, name) = (first, w.get(1).copied().unwrap_or(""));
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        match first {
            "bind" if w.len() > 2 => return Err(format!("bind options: {code}")),
            "bind" if binds.len() == 8 => return Err("more than 8 bind lines".into()),
            "bind" => {
                out.push_str(&format!("{indent}bind {{fe{}}}\n", binds.len()));
                binds.push(name.to_string());
                continue;
            }
            "server" if w.len() < 3 => return Err(format!("a server without address: {code}")),
            "server" => {
                let mut opts = w[3..].iter();
                while let Some(o) = opts.next() {
                    if !SERVER_OPTS.contains(o) {
                        return Err(format!("server option '{o}'"));
                    }
                    opts.next();
                }
                out.push_str(&format!("{indent}server {} {srv} {}\n", w[1], w[3..].join(" ")));
                continue;
            }
            "server-template" => return Err("server-template".into()),
            _ if section == "global"
                && first != "global"
                && !(first.starts_with("tune.") || matches!(first, "maxconn" | "nbthread")) =>
            {
                return Err(format!("global '{first}'"))
            }
            _ if w.iter().any(|x| x.starts_with("tarpit")) => {
                return Err("tarpit: each request waits `timeout tarpit`".into())
            }
            _ => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok((out, binds))
}

/// The golden cases a live run is possible for (see [`live_config`]), run on a live Fulcrum
/// through the harness: its `explain` cross-check compares each generic request at each
/// `mode http` frontend (status, termination state, backend, server, the head the server
/// got); a request the live proxy answers with a close must be one `explain` says closes.
#[test]
fn golden_http_configurations_live_say_what_explain_says() {
    let srv = server("golden");
    let (mut ran, mut agreed, mut not_live) = (Vec::new(), 0, Vec::new());
    for case in golden_cases() {
        let Some(http) = case.http.as_ref().filter(|h| !h.is_empty()) else { continue };
        if golden_run(&case, &["-c"], None).0 != 0 {
            continue; // not loadable here: see the test above
        }
        let (text, binds) = match live_config(&case, srv.addr()) {
            Ok(c) => c,
            Err(why) => {
                not_live.push(format!("{}: {why}", case.name));
                continue;
            }
        };
        let mut px = Target::Fulcrum.start(&text);
        let cfg = px.dir.join("proxy.cfg");
        // This test is the cross-check: on even under `FULCRUM_TEST_EXPLAIN=off`.
        let written = std::fs::read_to_string(&cfg).expect("the configuration");
        let check = Checker::with(&cfg, &written, &px.addrs, px.proc.log.clone(), true);
        px.explain = Some(std::sync::Arc::new(check));
        for (i, fe) in binds.iter().enumerate().filter(|(_, fe)| http.contains(fe)) {
            for req in GENERIC {
                if px.client_to(i).try_request(req.as_bytes()).is_ok() {
                    continue;
                }
                let cfg = cfg.to_str().expect("utf-8 path");
                let (code, out, err) = run(&["explain", "-f", cfg, "--frontend", fe, req]);
                let closes = out.lines().any(|l| l.starts_with("answer: none"));
                assert!(
                    code == 0 && closes,
                    "{}: no live answer to {req:?}:\n{out}{err}",
                    case.name
                );
            }
        }
        let n = px.explain.as_ref().map_or(0, |c| c.agreed());
        agreed += n;
        ran.push(format!("{} ({n} compared)", case.name));
    }
    eprintln!("live: {}\nnot live:\n  {}", ran.join(", "), not_live.join("\n  "));
    assert!(ran.len() >= 5 && agreed >= 10, "only {agreed} requests compared on {ran:?}");
}
