//! `fulcrum -c`: a table of configurations and the exact diagnostics and exit status they get.

use crate::harness::*;

const T: &str = " timeout connect 1s\n timeout client 1s\n timeout server 1s\n";

/// Runs `-c` and returns (exit code, stdout, stderr with the pid and scratch path removed).
fn check_clean(name: &str, cfg: &str) -> (i32, String, Vec<String>) {
    let (code, out, err) = check(name, cfg);
    let lines = err
        .lines()
        .map(|l| {
            let l = match (l.find(" ("), l.find(") : ")) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &l[..a], &l[b + 1..]),
                _ => l.to_string(),
            };
            let dir = scratch_path(name);
            l.replace(&dir, "")
        })
        .collect();
    (code, out, lines)
}

fn scratch_path(name: &str) -> String {
    format!(
        "{}/",
        std::env::temp_dir().join(format!("fulcrum-e2e-{}-{name}", std::process::id())).display()
    )
}

#[test]
fn bad_configurations_get_exact_diagnostics_and_status_1() {
    let cases: &[(&str, String, &[&str])] = &[
        (
            "unknown-global",
            "global\n foo bar\n".into(),
            &["[ALERT] : config : parsing [check.cfg:2] : unknown keyword 'foo' in 'global' section"],
        ),
        (
            "unsupported-and-unknown-backend",
            format!("defaults\n{T}listen fe\n bind 127.0.0.1:1\n option transparent\n default_backend nope\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:7] : 'option transparent' is not supported yet",
                "[ALERT] : config : parsing [check.cfg:8] : Proxy 'fe': unable to find required default_backend: 'nope'.",
                // Where to look next, once after the messages.
                "[NOTICE] : config : a keyword that HAProxy 2.6 knows but Fulcrum does not support yet: see docs/compat.md in Fulcrum's sources, which lists every keyword of HAProxy 2.6 as supported, partly (how), or not yet.",
            ],
        ),
        (
            "server-namespace",
            format!("defaults\n{T}listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2 check namespace n\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:7] : 'server x/a' : 'namespace' is not supported yet",
                "[NOTICE] : config : a keyword that HAProxy 2.6 knows but Fulcrum does not support yet: see docs/compat.md in Fulcrum's sources, which lists every keyword of HAProxy 2.6 as supported, partly (how), or not yet.",
            ],
        ),
        (
            "every-error-of-a-file",
            "listen x\n bind 127.0.0.1:1\n bind 127.0.0.1:1\n timeout client 1x\n balance roundrobin foo\n server a 127.0.0.1:2 weight 300\n".into(),
            &[
                "[ALERT] : config : parsing [check.cfg:4] : unexpected character 'x' in 'timeout client'",
                "[ALERT] : config : parsing [check.cfg:5] : 'balance roundrobin' cannot handle unexpected argument 'foo'.",
                "[ALERT] : config : parsing [check.cfg:6] : 'server x/a' : weight of server a is not within 0 and 256 (300).",
                "[ALERT] : config : parsing [check.cfg:3] : 'bind' : address '127.0.0.1:1' is already bound by proxy 'x' at check.cfg:2.",
            ],
        ),
        (
            // Checked beside HAProxy 2.6: its words, its position (after the last byte).
            "missing-lf",
            format!("defaults\n{T}listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2"),
            &["[ALERT] : config : parsing [check.cfg:7]: Missing LF on last line, file might have been truncated at position 22."],
        ),
        (
            // HAProxy 2.6's guesses, word for word (its fingerprint distance, see `suggest`).
            "typos",
            format!("global\n maxcon 10\ndefaults\n{T} timout queue 1s\n option htplog\nlisten x\n bind 127.0.0.1:1 alpnn h2\n server a 127.0.0.1:2 chek\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:2] : unknown keyword 'maxcon' in 'global' section; did you mean 'maxconn' maybe ?",
                "[ALERT] : config : parsing [check.cfg:7] : unknown keyword 'timout' in 'defaults' section; did you mean 'timeout' maybe ?",
                "[ALERT] : config : parsing [check.cfg:8] : unknown option 'htplog'; did you mean 'httplog' maybe ?",
                "[ALERT] : config : parsing [check.cfg:10] : 'bind 127.0.0.1:1' in section 'listen': unknown keyword 'alpnn'; did you mean 'alpn' maybe ?",
                "[ALERT] : config : parsing [check.cfg:11] : 'server x/a' : unknown keyword 'chek'; did you mean 'check' maybe ?",
            ],
        ),
        (
            // HAProxy reads a mode tcp proxy's error files too, and refuses a missing one.
            "tcp-errorfile",
            format!("defaults\n{T}listen t\n mode tcp\n bind 127.0.0.1:1\n errorfile 503 /nonexistent/503.http\n server s 127.0.0.1:2\n"),
            &["[ALERT] : config : parsing [check.cfg:8] : errorfile : error opening file '/nonexistent/503.http' : No such file or directory."],
        ),
        (
            // The files other lines draw on are opened despite a syntax error, and every
            // error comes in line order, as HAProxy 2.6 reports them.
            "files-and-syntax",
            format!("defaults\n{T}listen x\n bind 127.0.0.1:1\n bind 127.0.0.1:2 ssl crt /nonexistent/c.pem\n timeout client 1x\n errorfile 503 /nonexistent/503.http\n acl a path -f /nonexistent/a.lst\n http-request deny if a\n server s 127.0.0.1:2\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:7] : 'bind 127.0.0.1:2' in section 'listen' : unable to stat SSL certificate from file '/nonexistent/c.pem' : No such file or directory.",
                "[ALERT] : config : parsing [check.cfg:8] : unexpected character 'x' in 'timeout client'",
                "[ALERT] : config : parsing [check.cfg:9] : errorfile : error opening file '/nonexistent/503.http' : No such file or directory.",
                "[ALERT] : config : parsing [check.cfg:10] : error detected while parsing ACL 'a' : failed to open pattern file </nonexistent/a.lst> : No such file or directory.",
            ],
        ),
        (
            // As HAProxy 2.6, a user or group name that names no one is an error of its line.
            "unknown-user",
            format!("global\n user nosuchuser-fulcrum\n group nosuchgroup-fulcrum\ndefaults\n{T}listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:2] : cannot find user id for 'nosuchuser-fulcrum' (0:Success)",
                "[ALERT] : config : parsing [check.cfg:3] : cannot find group id for 'nosuchgroup-fulcrum' (0:Success)",
            ],
        ),
        (
            // HAProxy 2.6's reading: `atoi`, so letters are 0; nothing, or above 100, refused.
            "pool-fd-ratios",
            format!("global\n tune.pool-low-fd-ratio 101\n tune.pool-high-fd-ratio\n tune.pool-high-fd-ratio abc\ndefaults\n{T}listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2\n"),
            &[
                "[ALERT] : config : parsing [check.cfg:2] : 'tune.pool-low-fd-ratio' expects an integer argument between 0 and 100.",
                "[ALERT] : config : parsing [check.cfg:3] : 'tune.pool-high-fd-ratio' expects an integer argument between 0 and 100.",
            ],
        ),
        (
            "unclosed-bracket",
            format!("defaults\n{T}listen x\n bind 127.0.0.1:1\n server s9 [::1:80\n"),
            &["[ALERT] : config : parsing [check.cfg:7] : 'server x/s9' : could not resolve address '[::1'"],
        ),
    ];
    for (name, cfg, expected) in cases {
        let (code, out, lines) = check_clean(name, cfg);
        assert_eq!(code, 1, "{name}: exit status");
        assert!(!out.contains("valid"), "{name}: said valid");
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        want.push("[ALERT] : config : Error(s) found in configuration file : check.cfg".into());
        want.push("[ALERT] : config : Fatal errors found in configuration.".into());
        let got: Vec<String> =
            lines.iter().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        let want: Vec<String> =
            want.iter().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn legacy_forms_are_accepted_with_the_modern_spelling() {
    let (code, out, lines) = check_clean(
        "legacy",
        "listen x 127.0.0.1:8001\n contimeout 1s\n clitimeout 2s\n srvtimeout 3s\n server a 127.0.0.1:2\n",
    );
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(out.trim(), "Configuration file is valid");
    let text = lines.join("\n");
    for modern in [
        "'bind 127.0.0.1:8001'",
        "'timeout connect 1s'",
        "'timeout client 2s'",
        "'timeout server 3s'",
    ] {
        assert!(text.contains(modern), "no hint {modern} in {text}");
    }
    assert!(lines.iter().all(|l| l.starts_with("[WARNING]")), "{lines:?}");
}

#[test]
fn a_valid_configuration_checks_clean_with_a_missing_timeout_warning() {
    let (code, out, lines) =
        check_clean("valid", "listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2\n");
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "Configuration file is valid");
    // As HAProxy's warning, plus the line of the proxy it is about.
    let first = lines.first().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "));
    assert_eq!(
        first.as_deref(),
        Some("[WARNING] : config : parsing [check.cfg:1] : missing timeouts for proxy 'x'.")
    );
}

#[test]
fn a_directory_of_configs_loads_in_lexical_order() {
    let dir = scratch("cfg-dir");
    std::fs::write(dir.join("20-be.cfg"), "backend be\n server a 127.0.0.1:2\n").expect("write");
    std::fs::write(
        dir.join("10-fe.cfg"),
        format!("defaults\n{T}frontend fe\n bind 127.0.0.1:1\n default_backend be\n"),
    )
    .expect("write");
    std::fs::write(dir.join("ignored.txt"), "garbage\n").expect("write");
    let (code, out, err) = run(&["-c", "-f", dir.to_str().expect("utf8")]);
    assert_eq!((code, out.trim()), (0, "Configuration file is valid"), "{err}");
}

#[test]
fn missing_file_is_reported_with_its_name() {
    let (code, _, err) = run(&["-c", "-f", "/nonexistent/haproxy.cfg"]);
    assert_eq!(code, 1);
    assert!(err.contains("Cannot open configuration file/directory /nonexistent/haproxy.cfg : No such file or directory"), "{err}");
}

#[test]
fn cc_evaluates_a_condition_like_haproxy() {
    assert_eq!(run(&["-cc", "version_atleast(2.4)"]).0, 0);
    assert_eq!(run(&["-cc", "version_atleast(2.7)"]).0, 1);
    assert_eq!(run(&["-cc", "feature(REUSEPORT) && !feature(NOPE)"]).0, 0);
    assert_eq!(run(&["-cc", "streq(a,b)"]).0, 1);
}

#[test]
fn bind_host_names_are_resolved_by_the_check_and_the_unresolvable_ones_refused() {
    let (code, out, lines) = check_clean(
        "bind-names",
        &format!(
            "defaults\n{T}listen x\n bind localhost:8001\n bind nosuchhost.invalid:80\n\
             bind 1.18446744073709551616.0.2:80\n server a 127.0.0.1:2\n"
        ),
    );
    assert_eq!(code, 1, "{lines:?}");
    assert!(!out.contains("valid"));
    let got: Vec<String> =
        lines.iter().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(
        got,
        [
            "[ALERT] : config : parsing [check.cfg:7] : 'bind' : invalid address: 'nosuchhost.invalid' in 'nosuchhost.invalid:80'",
            "[ALERT] : config : parsing [check.cfg:8] : 'bind' : invalid address: '1.18446744073709551616.0.2' in '1.18446744073709551616.0.2:80'",
            "[ALERT] : config : Error(s) found in configuration file : check.cfg",
            "[ALERT] : config : Fatal errors found in configuration.",
        ]
    );
    let (code, out, lines) = check_clean(
        "bind-localhost",
        &format!("defaults\n{T}listen x\n bind localhost:8001\n server a 127.0.0.1:2\n"),
    );
    assert_eq!((code, out.trim()), (0, "Configuration file is valid"), "{lines:?}");
}

#[test]
fn the_check_opens_every_file_a_start_reads_and_reports_each_missing_one_once() {
    let name = "check-files";
    let dir = scratch_path(name);
    // `{dir}` files that exist; `/nonexistent/...` ones that do not.
    let ok = scratch(name);
    std::fs::write(ok.join("ok.lst"), "/a\n").expect("write");
    std::fs::write(ok.join("ok.map"), "a b\n").expect("write");
    std::fs::write(ok.join("503.http"), "HTTP/1.0 503 x\r\n\r\n").expect("write");
    let cfg = format!(
        "defaults\n mode http\n{T}listen l\n bind 127.0.0.1:1\n\
         errorfile 503 {dir}503.http\n errorfile 504 /nonexistent/504.http\n\
         acl good path -f {dir}ok.lst\n acl bad path -f /nonexistent/paths.lst\n\
         http-request set-header X-A %[path,map({dir}ok.map)]\n\
         http-request set-header X-M %[req.hdr(host),map(/nonexistent/hosts.map,def)]\n\
         http-request deny if bad || good\n\
         http-request return status 200 content-type text/plain file /nonexistent/x.txt if {{ path /x }}\n\
         http-error status 502 content-type text/plain file /nonexistent/502.txt\n\
         server s 127.0.0.1:2\n"
    );
    let path = ok.join("check.cfg");
    std::fs::write(&path, cfg).expect("write cfg");
    let (code, out, err) = run(&["-c", "-f", path.to_str().expect("utf8")]);
    let lines: Vec<String> = err
        .lines()
        .map(|l| {
            let l = l.replace(&dir, "");
            let l = match (l.find(" ("), l.find(") : ")) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &l[..a], &l[b + 1..]),
                _ => l,
            };
            l.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect();
    assert_eq!(code, 1, "{lines:?}");
    assert!(!out.contains("valid"));
    assert_eq!(
        lines,
        [
            // In line order, as HAProxy 2.6 (the plan's order was its own).
            "[ALERT] : config : parsing [check.cfg:9] : errorfile : error opening file '/nonexistent/504.http' : No such file or directory.",
            "[ALERT] : config : parsing [check.cfg:11] : error detected while parsing ACL 'bad' : failed to open pattern file </nonexistent/paths.lst> : No such file or directory.",
            "[ALERT] : config : parsing [check.cfg:13] : failed to open pattern file </nonexistent/hosts.map> : No such file or directory.",
            "[ALERT] : config : parsing [check.cfg:15] : error opening file '/nonexistent/x.txt' : No such file or directory.",
            "[ALERT] : config : parsing [check.cfg:16] : http-error : error opening file '/nonexistent/502.txt' : No such file or directory.",
            "[ALERT] : config : Error(s) found in configuration file : check.cfg",
            "[ALERT] : config : Fatal errors found in configuration.",
        ]
    );
}

/// A port already taken: every listener that failed is named by its file and line, in
/// HAProxy 2.6's words (checked beside it: `Binding [f:7] for proxy li: cannot bind socket
/// (Address already in use) for [...]`, "frontend" for a frontend), then the start fails with
/// status 1 and HAProxy's last line.
#[test]
fn ports_in_use_are_each_named_by_file_and_line_then_the_start_fails() {
    let taken: Vec<std::net::TcpListener> =
        (0..2).map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind")).collect();
    let port = |i: usize| taken[i].local_addr().expect("addr").port();
    let dir = scratch("ports-in-use");
    let path = dir.join("in-use.cfg");
    let text = format!(
        "defaults\n mode http\n{T}listen li\n bind 127.0.0.1:{}\n server s 127.0.0.1:1\n\
         frontend fe\n bind 127.0.0.1:{}\n default_backend li\n",
        port(0),
        port(1)
    );
    std::fs::write(&path, text).expect("write");
    let file = path.display().to_string();
    let (code, _, err) = run(&["-f", &file]);
    assert_eq!(code, 1, "{err}");
    let alerts: Vec<&str> = err.lines().filter_map(|l| l.split_once(") : ").map(|p| p.1)).collect();
    let expected = [
        format!(
            "Binding [{file}:7] for proxy li: cannot bind socket (Address already in use) for \
             [127.0.0.1:{}]",
            port(0)
        ),
        format!(
            "Binding [{file}:10] for frontend fe: cannot bind socket (Address already in use) \
             for [127.0.0.1:{}]",
            port(1)
        ),
        "[haproxy.main()] Some protocols failed to start their listeners! Exiting.".to_string(),
    ];
    assert_eq!(alerts, expected, "{err}");
}

/// Valid but with nothing to listen on: `-c` says it will not start and exits 2, a start
/// fails with HAProxy 2.6's alert and status 1 (both checked beside HAProxy 2.6). A stats
/// socket is a listener.
#[test]
fn a_file_without_a_listener_checks_with_status_2_and_does_not_start() {
    let backend_only = format!("defaults\n mode http\n{T}backend b\n server s 127.0.0.1:1\n");
    for text in [backend_only.as_str(), "", "global\n maxconn 10\n"] {
        let (code, out, err) = check("no-listener", text);
        assert_eq!(code, 2, "{text:?}: {out}{err}");
        assert_eq!(
            out.trim_end(),
            "Configuration file has no error but will not start (no listener) => exit(2).",
            "{text:?}"
        );
        let dir = scratch("no-listener-start");
        let path = dir.join("start.cfg");
        std::fs::write(&path, text).expect("write");
        let (code, _, err) = run(&["-f", &path.display().to_string()]);
        assert_eq!(code, 1, "{text:?}: {err}");
        assert!(
            err.trim_end().ends_with(
                ": [haproxy.main()] No enabled listener found (check for 'bind' directives) ! \
                 Exiting."
            ),
            "{text:?}: {err}"
        );
    }
    let dir = scratch("stats-socket-only");
    let sock = dir.join("api.sock");
    let text = format!("global\n stats socket {}\n", sock.display());
    let (code, out, err) = check("stats-socket-only", &text);
    assert_eq!((code, out.trim_end()), (0, "Configuration file is valid"), "{err}");
}

/// A command that only prints dies quietly of SIGPIPE when its reader is gone (HAProxy 2.6:
/// status 141 in a shell), never with a panic.
#[test]
fn version_into_a_closed_pipe_ends_by_sigpipe_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    // The reader is gone before the command starts.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(BIN)
        .arg("-vv")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.signal(), Some(13), "SIGPIPE: {:?} {err}", out.status);
}

/// `-h` (a Fulcrum extension: HAProxy answers "unknown option") prints the usage and exits 0.
#[test]
fn help_prints_the_usage() {
    for flag in ["-h", "--help"] {
        let (code, out, err) = run(&[flag]);
        assert_eq!(code, 0, "{flag}: {err}");
        assert!(out.starts_with("Usage : fulcrum [-f <cfgfile|cfgdir>]*"), "{flag}: {out}");
        assert!(out.contains("fulcrum explain -f <cfgfile>"), "{flag}: {out}");
        assert!(err.is_empty(), "{flag}: {err}");
    }
}

#[test]
fn a_quiet_check_says_nothing_and_answers_with_its_status() {
    // `-c -q`, as `systemctl reload` runs it: HAProxy 2.6 prints nothing, the status speaks.
    for (name, cfg, status) in [
        (
            "quiet-valid",
            format!("defaults\n{T}listen x\n bind 127.0.0.1:1\n server a 127.0.0.1:2\n"),
            0,
        ),
        ("quiet-no-listener", format!("defaults\n{T}backend b\n server a 127.0.0.1:2\n"), 2),
    ] {
        let dir = scratch_path(name);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = format!("{dir}check.cfg");
        std::fs::write(&path, cfg).expect("cfg");
        let (code, out, err) = run(&["-c", "-q", "-f", &path]);
        assert_eq!((code, out.as_str(), err.as_str()), (status, "", ""), "{name}");
    }
}

#[test]
fn global_quiet_is_dash_q() {
    // HAProxy 2.6 with `quiet` in `global` (here after the sections): no warning, no "valid"
    // line, the status alone; an error still printed.
    let quiet = "defaults\n mode http\nfrontend f\n bind 127.0.0.1:1\n http-request return status 200\nglobal\n quiet\n";
    let dir = scratch_path("global-quiet");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = format!("{dir}check.cfg");
    std::fs::write(&path, quiet).expect("cfg");
    let (code, out, err) = run(&["-c", "-f", &path]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    if let Some(h) = crate::harness::haproxy_bin() {
        let o = std::process::Command::new(h).args(["-c", "-f", &path]).output().expect("haproxy");
        assert_eq!((o.status.code(), o.stdout.len(), o.stderr.len()), (Some(0), 0, 0));
    }
    std::fs::write(&path, format!("{quiet} bogus-keyword\n")).expect("cfg");
    let (code, _, err) = run(&["-c", "-f", &path]);
    assert_eq!(code, 1);
    assert!(err.contains("bogus-keyword"), "{err}");
}

#[test]
fn zero_warning_refuses_a_configuration_that_warned() {
    // Global `zero-warning` (or `-dW`): HAProxy 2.6's alert after the warnings, status 1; a
    // configuration without a warning still checks clean.
    let warns = "global\n zero-warning\ndefaults\n mode http\nfrontend f\n bind 127.0.0.1:1\n http-request return status 200\n";
    let dir = scratch_path("zero-warning");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = format!("{dir}check.cfg");
    std::fs::write(&path, warns).expect("cfg");
    let (code, _, err) = run(&["-c", "-f", &path]);
    assert_eq!(code, 1, "{err}");
    let last = err.lines().last().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
    let pid = last.split(' ').nth(1).unwrap_or("").to_string();
    assert_eq!(
        last.replace(&pid, "(PID)"),
        "[ALERT] (PID) : config : Some warnings were found and 'zero-warning' is set. Aborting."
    );
    std::fs::write(&path, warns.replace(" zero-warning\n", "")).expect("cfg");
    assert_eq!(run(&["-c", "-dW", "-f", &path]).0, 1);
    let clean = warns.replace("frontend f", &format!("{T}frontend f"));
    std::fs::write(&path, clean).expect("cfg");
    let (code, out, err) = run(&["-c", "-f", &path]);
    assert_eq!((code, out.trim()), (0, "Configuration file is valid"), "{err}");
}
