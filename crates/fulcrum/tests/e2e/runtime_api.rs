//! The runtime API on `stats socket`: the same commands against Fulcrum and HAProxy 2.6 (when
//! installed) answer with the same columns, fields and messages, and the changes they make
//! show in live traffic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use super::harness::*;

struct Api {
    _proc: Proc,
    sock: PathBuf,
    addrs: Vec<SocketAddr>,
}

/// Starts `which` ("fulcrum" or "haproxy") on `cfg`, whose API socket is `{dir}/api.sock`;
/// `None` when HAProxy is not installed.
fn start(which: &str, test: &str, cfg: &str) -> Option<Api> {
    let (proc, addrs, dir) = start_proxy(which, test, &cfg.replace("{sock}", "{dir}/api.sock"))?;
    let api = Api { _proc: proc, sock: dir.join("api.sock"), addrs };
    assert!(
        eventually(Duration::from_secs(5), || UnixStream::connect(&api.sock).is_ok()),
        "{which}: the API socket answers"
    );
    Some(api)
}

impl Api {
    /// Sends `input` and reads until the proxy closes.
    fn raw(&self, input: &str) -> String {
        let mut s = UnixStream::connect(&self.sock).expect("connect api");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(input.as_bytes()).expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
    fn cmd(&self, c: &str) -> String {
        self.raw(&format!("{c}\n"))
    }
}

/// Reads a CSV `show stat` into rows of (name -> value), non-empty values only.
pub(crate) fn csv_rows(text: &str) -> (String, Vec<Vec<(String, String)>>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_string();
    let names: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            names
                .iter()
                .zip(l.split(','))
                .filter(|(_, v)| !v.is_empty())
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        })
        .collect();
    (header, rows)
}

pub(crate) fn field<'a>(row: &'a [(String, String)], name: &str) -> Option<&'a str> {
    row.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

const STATS_CFG: &str = "
global
    stats socket {sock} mode 600 level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe0}
    default_backend be
backend be
    balance leastconn
    cookie SRV insert indirect
    server s1 DEAD check inter 200ms rise 2 fall 3 cookie a
    server s2 LIVE weight 5 maxconn 30 cookie b rise 1
listen tcpx
    mode tcp
    bind {fe1}
    server t1 LIVE
";

fn stats_cfg(dead: SocketAddr, live: SocketAddr) -> String {
    STATS_CFG.replace("DEAD", &dead.to_string()).replace("LIVE", &live.to_string())
}

/// Which fields each row has, and the values that do not depend on time or the machine.
pub(crate) fn shape(csv: &str) -> Vec<String> {
    let stable = [
        "pxname",
        "svname",
        "status",
        "weight",
        "act",
        "bck",
        // (`chkfail` is left out: HAProxy 2.6 once counted 3 failed checks before DOWN where
        // it usually counts 1, on a loaded machine; `chkdown` and the status say the same.)
        "chkdown",
        "iid",
        "sid",
        "type",
        "check_status",
        "check_desc",
        "last_chk",
        "check_rise",
        "check_fall",
        "check_health",
        "mode",
        "algo",
        "cookie",
        "slim",
        "uweight",
        "stot",
        "hrsp_2xx",
        "req_tot",
        "lbtot",
        "hrsp_5xx",
    ];
    let (_, rows) = csv_rows(csv);
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|(n, v)| {
                    // The frontends' limits follow each process's descriptor count.
                    if stable.contains(&n.as_str())
                        && !(n == "slim" && field(r, "svname").is_some_and(|s| s.ends_with("END")))
                    {
                        format!("{n}={v}")
                    } else {
                        n.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Compares Fulcrum's lines (left) with HAProxy's (right), naming the first that differs.
pub(crate) fn same(left: &[String], right: &[String], what: &str) {
    for (l, r) in left.iter().zip(right) {
        assert_eq!(l, r, "{what}: Fulcrum (left), HAProxy 2.6 (right)");
    }
    assert_eq!(left.len(), right.len(), "{what}: as many lines");
}

#[test]
fn show_stat_and_show_servers_state_match_haproxy_column_for_column() {
    let live = testserver("http", "live");
    let dead = dead_addr();
    let cfg = stats_cfg(dead, live.addr);
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-stat", &cfg) else { continue };
        // The checked server is seen DOWN (three failed checks).
        let down = eventually(Duration::from_secs(5), || {
            api.cmd("show stat").lines().any(|l| l.starts_with("be,s1,") && l.contains(",DOWN,"))
        });
        assert!(down, "{which}: s1 goes DOWN");
        for _ in 0..3 {
            assert_eq!(http_get(api.addrs[0], "/").map(|r| r.0), Some(200), "{which}");
        }
        // A response is counted as its stream ends, which may come just after the client has
        // it (HAProxy on a loaded machine): the counts are read once all three are in.
        let counted = eventually(Duration::from_secs(3), || {
            let (_, rows) = csv_rows(&api.cmd("show stat"));
            rows.iter().any(|r| {
                field(r, "svname") == Some("FRONTEND") && field(r, "hrsp_2xx") == Some("3")
            })
        });
        assert!(counted, "{which}: the three responses counted");
        let stat = api.cmd("show stat");
        let (header, _) = csv_rows(&stat);
        let state = api.cmd("show servers state");
        // Seconds since the last change vary: masked.
        let state: Vec<String> = state
            .lines()
            .map(|l| {
                let mut w: Vec<&str> = l.split(' ').collect();
                if w.len() > 9 && !l.starts_with('#') {
                    w[9] = "T";
                }
                w.join(" ")
            })
            .collect();
        let typed: Vec<String> = api
            .cmd("show stat typed")
            .lines()
            .filter(|l| l.starts_with("S.") || l.starts_with("B.") || l.starts_with("F."))
            .map(|l| l.splitn(3, ':').take(2).collect::<Vec<_>>().join(":"))
            .collect();
        seen.push((which, header, shape(&stat), state, typed));
    }
    let f = &seen[0];
    assert!(f.1.starts_with("# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,"));
    assert!(f.2.iter().any(|r| r.contains("svname=s2") && r.contains("hrsp_2xx=3")), "{:#?}", f.2);
    assert!(f.2.iter().any(|r| r.contains("svname=s1") && r.contains("status=DOWN")));
    if let Some(h) = seen.get(1) {
        assert_eq!(f.1, h.1, "the CSV header is HAProxy's");
        same(&f.2, &h.2, "each row has HAProxy's fields");
        same(&f.3, &h.3, "show servers state is HAProxy's");
        same(&f.4, &h.4, "show stat typed gives HAProxy's positions, tags and types");
    }
}

/// Commands and their answers, the same on Fulcrum and HAProxy (errors included).
#[test]
fn commands_answer_as_haproxy_s_and_change_live_traffic() {
    let a = testserver("http", "a");
    let b = testserver("http", "b");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server a {} weight 10
    server b {} weight 10
",
        a.addr, b.addr
    );
    let script = [
        "get weight be/a",
        "get weight be/zz",
        "get weight zz/a",
        "get weight be",
        "set weight be/a 300",
        "set server be/a state foo",
        "set server be/a health maybe",
        "set server be/a agent maybe",
        "enable agent be/a",
        "enable health be/a",
        "show servers state zz",
        "show backend",
        "show cli level",
        "set weight be/a 20",
        "get weight be/a",
        "set server be/a weight 50%",
        "get weight be/a",
        "set server be/b state maint",
        "set server be/b state drain",
        "set server be/b state ready",
        "disable server be/b",
        "enable server be/b",
        "set maxconn frontend zz 10",
        "set maxconn global x",
        "set timeout cli 5",
        "set timeout foo 5",
        "user;set weight be/a 1;show cli level;operator",
    ];
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-commands", &cfg) else { continue };
        let got: Vec<String> = script.iter().map(|c| format!("{c} => {}", api.cmd(c))).collect();
        // Maintenance takes b out of rotation; ready brings it back.
        api.cmd("set server be/b state maint");
        let names = servers_of(api.addrs[0], 6);
        assert_eq!(count(&names, "b"), 0, "{which}: b in maintenance gets nothing: {names:?}");
        api.cmd("set server be/b state ready");
        let names = servers_of(api.addrs[0], 6);
        assert!(count(&names, "b") >= 2, "{which}: b back: {names:?}");
        // A weight of 0 drains it from the balancer too.
        api.cmd("set weight be/a 0");
        let names = servers_of(api.addrs[0], 4);
        assert_eq!(count(&names, "a"), 0, "{which}: a at weight 0: {names:?}");
        // `disable frontend` stops accepting; `enable` resumes.
        answers.push(got);
    }
    let f = &answers[0];
    assert!(f.iter().any(|l| l == "get weight be/a => 10 (initial 10)\n\n"), "{f:#?}");
    assert!(f.iter().any(|l| l == "get weight be/zz => No such server.\n\n"));
    if let Some(h) = answers.get(1) {
        for (l, r) in f.iter().zip(h) {
            assert_eq!(l, r, "Fulcrum (left) answers as HAProxy 2.6 (right)");
        }
    }
}

#[test]
fn prompt_mode_and_several_commands_on_a_line_frame_answers_as_haproxy_does() {
    let a = testserver("http", "a");
    let cfg = format!(
        "
global
    stats socket {{sock}} level operator
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
listen app
    bind {{fe0}}
    server a {}
",
        a.addr
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-prompt", &cfg) else { continue };
        let one_line = api.raw("show backend;get weight app/a\n");
        let prompt = api.raw("prompt\nshow backend\nget weight app/a\nset weight app/a 5\nquit\n");
        let lines = api.raw("show cli level\nshow backend\n");
        seen.push((one_line, prompt, lines));
    }
    let f = &seen[0];
    assert_eq!(f.0, "# name\napp\n\n1 (initial 1)\n\n");
    assert_eq!(f.1, "\n> # name\napp\n\n> 1 (initial 1)\n\n> Permission denied\n\n> ");
    assert_eq!(f.2, "operator\n\n# name\napp\n\n");
    if let Some(h) = seen.get(1) {
        assert_eq!(f, h, "Fulcrum (left) frames answers as HAProxy 2.6 (right)");
    }
}

/// A frontend routing by `Host` through a map to `be1` or `be2`.
fn host_map_cfg(map: &std::path::Path, one: SocketAddr, two: SocketAddr) -> String {
    format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    use_backend %[req.hdr(host),lower,map({m},be1)]
backend be1
    server one {one}
backend be2
    server two {two}
",
        m = map.display()
    )
}

/// `show|add|set|del|clear map` answer as HAProxy's and change how live requests are routed.
#[test]
fn map_commands_answer_as_haproxy_s_and_reroute_live_requests() {
    let one = testserver("http", "one");
    let two = testserver("http", "two");
    let dir = scratch("api-maps-file");
    let map = dir.join("hosts.map");
    std::fs::write(&map, "a.example be1\n# comment\n\nb.example be2\n").expect("map file");
    let cfg = host_map_cfg(&map, one.addr, two.addr);
    let m = map.display().to_string();
    let script = [
        "show map".to_string(),
        format!("show map {m}"),
        "show map #7".into(),
        format!("get map {m} a.example"),
        format!("get map {m} nope"),
        format!("get map {m}"),
        "get map nope x".into(),
        format!("add map {m} c.example be2"),
        format!("set map {m} a.example be2"),
        format!("set map {m} nope be2"),
        format!("del map {m} nope"),
        format!("del map {m} b.example"),
        format!("show map {m}"),
        "add map".into(),
        format!("add map {m} onlykey"),
    ];
    let host = |addr: SocketAddr, h: &str| {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(format!("GET / HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n").as_bytes())
            .expect("write");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("x-server: ").map(str::to_string))
            .unwrap_or_default()
    };
    // Entry references are addresses in HAProxy, map ids count its internal lists too, and
    // each product's configuration is in its own directory.
    let ptr = regex::Regex::new(r"0x[0-9a-f]+ ").expect("regex");
    let id = regex::Regex::new(r"\n[0-9]+ \(").expect("regex");
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-maps", &cfg) else { continue };
        assert_eq!(host(api.addrs[0], "a.example"), "one", "{which}");
        assert_eq!(host(api.addrs[0], "b.example"), "two", "{which}");
        let got: Vec<String> = script
            .iter()
            .map(|c| {
                let a = api.cmd(c).replace(&format!("api-maps-{which}"), "api-maps-X");
                format!("{c} => {}", id.replace_all(&ptr.replace_all(&a, "REF "), "\nID ("))
            })
            .collect();
        // a.example now goes to be2, b.example (deleted) falls back to be1, c.example is new.
        assert_eq!(host(api.addrs[0], "a.example"), "two", "{which}: set map reroutes");
        assert_eq!(host(api.addrs[0], "b.example"), "one", "{which}: del map reroutes");
        assert_eq!(host(api.addrs[0], "c.example"), "two", "{which}: add map routes");
        api.cmd(&format!("clear map {m}"));
        assert_eq!(host(api.addrs[0], "a.example"), "one", "{which}: clear map");
        assert_eq!(api.cmd(&format!("show map {m}")), "\n", "{which}: empty after clear");
        answers.push(got);
    }
    let f = &answers[0];
    assert!(f[2].ends_with("Unknown map identifier. Please use #<id> or <file>.\n\n"), "{f:#?}");
    if let Some(h) = answers.get(1) {
        same(f, h, "map commands");
    }
}

/// Atomic map replacement (`prepare map`, `add map @<ver>`, `commit map @<ver>`) and `add map`
/// with a payload answer as HAProxy's, and requests see a committed version at once.
#[test]
fn map_versions_and_payloads_answer_as_haproxy_s() {
    let one = testserver("http", "one");
    let two = testserver("http", "two");
    let dir = scratch("api-map-versions-file");
    let map = dir.join("hosts.map");
    std::fs::write(&map, "a.example be1\n").expect("map file");
    let cfg = host_map_cfg(&map, one.addr, two.addr);
    let m = map.display().to_string();
    let script = [
        format!("add map {m} <<\nb.example be2\nc.example be1\n"),
        format!("add map {m} <<\nbroken\n"),
        format!("prepare map {m}"),
        format!("add map @1 {m} a.example be2"),
        format!("add map @5 {m} x.example be2"),
        format!("show map @1 {m}"),
        format!("commit map {m}"),
        format!("commit map @9 {m}"),
        format!("commit map @1 {m}"),
        "show map".to_string(),
    ];
    let mask = |text: &str| -> String {
        text.lines()
            .map(|l| {
                l.replace("versions-fulcrum/", "versions-P/")
                    .replace("versions-haproxy/", "versions-P/")
            })
            .map(|l| match l.split_once(' ') {
                Some((r, rest)) if r.starts_with("0x") => format!("REF {rest}"),
                // HAProxy numbers its own internal references (httpclient's) before a
                // dynamic use_backend's map: ids are compared in the other tests.
                Some((id, rest)) if id.parse::<u32>().is_ok() => format!("ID {rest}"),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-map-versions", &cfg) else { continue };
        let host = |h: &str| {
            let mut s = connect(api.addrs[0]);
            let req = format!("GET / HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n");
            s.write_all(req.as_bytes()).expect("write");
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            parse_response(&buf).map(|r| r.1).unwrap_or_default()
        };
        let mut got: Vec<String> =
            script.iter().map(|c| format!("{c} => {}", mask(&api.cmd(c)))).collect();
        got.push(format!("a.example -> {}", host("a.example")));
        got.push(format!("b.example -> {}", host("b.example")));
        got.push(format!("show map {m} => {}", mask(&api.cmd(&format!("show map {m}")))));
        answers.push(got);
    }
    let f = &answers[0];
    assert!(f.iter().any(|l| l == "a.example -> two"), "the committed version routes: {f:#?}");
    if let Some(h) = answers.get(1) {
        same(f, h, "map versions");
    }
}

/// A command line longer than a buffer is refused with a message that arrives (the rest of the
/// line, up to 1 MiB, is read and dropped; HAProxy 2.6 resets such a connection without a
/// word); the socket keeps serving.
#[test]
fn an_endless_line_is_refused_and_the_api_keeps_answering() {
    let a = testserver("http", "a");
    let cfg = format!(
        "global\n    stats socket {{sock}} level admin\n    stats timeout 2s\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\
         listen app\n    bind {{fe0}}\n    server a {}\n",
        a.addr
    );
    let api = start("fulcrum", "api-long-line", &cfg).expect("fulcrum starts");
    // Without a line break, and whole lines of 64 kB and more (they were answered with a
    // reset: the proxy closed with the rest of the line unread): written in the background.
    for line in [
        vec![b'x'; 40_000],
        [vec![b'x'; 70_000], vec![b'\n']].concat(),
        [vec![b'x'; 300_000], vec![b'\n']].concat(),
    ] {
        let mut s = UnixStream::connect(&api.sock).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut w = s.try_clone().expect("clone");
        let size = line.len();
        let writer = std::thread::spawn(move || {
            let _ = w.write_all(&line);
        });
        let mut out = String::new();
        let read = s.read_to_string(&mut out);
        let _ = writer.join();
        assert!(read.is_ok(), "{size} bytes: {read:?}");
        assert_eq!(out, "Command line too big.\n\n", "{size} bytes");
    }
    assert_eq!(api.cmd("show cli level"), "admin\n\n");
}

/// `get var`, `show env` and `shutdown frontend` answer as HAProxy's.
#[test]
fn variables_environment_and_frontend_shutdown_answer_as_haproxy_s() {
    let cfg = "
global
    stats socket {sock} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe0}
    http-request set-var(proc.hits) int(42)
    http-request set-var(proc.name) str(hello)
    http-request return status 200
";
    let script = [
        "get var proc.hits",
        "get var proc.name",
        "get var proc.nope",
        "get var txn.x",
        "get var",
        "show env FULCRUM_SURELY_UNSET_VAR",
        "shutdown frontend zz",
        "shutdown frontend fe",
        "shutdown frontend fe",
    ];
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-vars", cfg) else { continue };
        assert_eq!(http_get(api.addrs[0], "/").map(|r| r.0), Some(200), "{which}");
        let got: Vec<String> = script.iter().map(|c| format!("{c} => {}", api.cmd(c))).collect();
        answers.push(got);
    }
    assert_eq!(answers[0][0], "get var proc.hits => proc.hits: type=sint value=<42>\n");
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "get var, show env, shutdown frontend");
    }
}

/// `set server ... addr` answers as HAProxy's and moves live traffic (new connections, idle
/// ones made for the old address are not reused).
#[test]
fn set_server_addr_moves_traffic_and_reports_as_haproxy_does() {
    let a = testserver("http", "a");
    let b = testserver("http", "b");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
listen app
    bind {{fe0}}
    server s1 {}
",
        a.addr
    );
    let bp = b.addr.port();
    let script = [
        "set server app/s1 addr".to_string(),
        "set server app/s1 addr foo".into(),
        "set server app/s1 addr 127.0.0.1".into(),
        format!("set server app/s1 addr 127.0.0.1 port {bp}"),
        format!("set server app/s1 addr 127.0.0.1 port {bp}"),
    ];
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-addr", &cfg) else { continue };
        assert_eq!(servers_of(api.addrs[0], 2), ["a", "a"], "{which}");
        let got: Vec<String> = script.iter().map(|c| format!("{c} => {}", api.cmd(c))).collect();
        assert_eq!(servers_of(api.addrs[0], 3), ["b", "b", "b"], "{which}: traffic follows");
        let state = api.cmd("show servers state app");
        assert!(state.contains(&format!(" {bp} ")), "{which}: {state}");
        answers.push(got);
    }
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "set server addr");
    }
}

/// `set server ... check-addr|check-port|agent-*|fqdn` answer as HAProxy's, and the checks
/// go where they were sent: a check moved to a dead port takes the server DOWN, moved back
/// brings it UP; `show servers state` shows the check address and port.
#[test]
fn check_destinations_change_at_run_time_as_in_haproxy() {
    let a = testserver("http", "a");
    let dead = dead_addr();
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
listen app
    bind {{fe0}}
    option httpchk
    server s1 {} check inter 100 rise 1 fall 1
    server s2 {}
",
        a.addr, a.addr
    );
    let script = [
        "set server app/s2 agent-port 1".to_string(),
        "set server app/s2 check-port 1".into(),
        "set server app/s2 agent-send hello".into(),
        "set server app/s1 check-port 70000".into(),
        "set server app/s1 check-port abc".into(),
        "set server app/s1 check-port".into(),
        "set server app/s1 check-addr nope".into(),
        "set server app/s1 check-addr".into(),
        "set server app/s1 agent-addr 127.0.0.1".into(),
        "set server app/s1 fqdn foo".into(),
        format!("set server app/s1 check-addr {} port {}", dead.ip(), dead.port()),
    ];
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-checkport", &cfg) else { continue };
        let status = |api: &Api| {
            let (_, rows) = csv_rows(&api.cmd("show stat"));
            let row = rows.into_iter().find(|r| field(r, "svname") == Some("s1"));
            row.and_then(|r| field(&r, "status").map(str::to_string)).unwrap_or_default()
        };
        assert!(eventually(Duration::from_secs(5), || status(&api) == "UP"), "{which}");
        let mut got: Vec<String> =
            script.iter().map(|c| format!("{c} => {:?}", api.cmd(c))).collect();
        assert!(eventually(Duration::from_secs(5), || status(&api) == "DOWN"), "{which}");
        let state = api.cmd("show servers state app");
        let s1 = state.lines().find(|l| l.contains(" s1 ")).unwrap_or("").to_string();
        let w: Vec<&str> = s1.split(' ').collect();
        got.push(format!("check port and addr: {:?}", w.get(21..23)));
        api.cmd(&format!("set server app/s1 check-port {}", a.addr.port()));
        assert!(eventually(Duration::from_secs(5), || status(&api) == "UP"), "{which}: back");
        answers.push(got);
    }
    assert!(answers[0].last().is_some_and(|l| l.contains(&dead.port().to_string())));
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "set server check destinations");
    }
}

/// `maxsessrate` and `set rate-limit sessions global` hold: past the limit, new connections
/// wait for the next second (in the kernel's backlog); `show info` shows the limit.
#[test]
fn the_session_rate_limit_holds_and_changes_at_run_time() {
    let a = testserver("http", "a");
    let cfg = format!(
        "
global
    maxsessrate 10
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
listen app
    bind {{fe0}}
    server s1 {}
",
        a.addr
    );
    let api = start("fulcrum", "api-rate", &cfg).expect("fulcrum");
    let info = |api: &Api, key: &str| {
        let text = api.cmd("show info");
        text.lines().find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
    };
    assert_eq!(info(&api, "SessRateLimit").as_deref(), Some("10"));
    let t0 = std::time::Instant::now();
    for _ in 0..25 {
        assert_eq!(get_with(api.addrs[0], "/", "").0, 200);
    }
    // 10 in the first second (whatever was left of it), 10 in the next, 5 in the third.
    assert!(t0.elapsed() >= Duration::from_secs(1), "25 sessions at 10/s: {:?}", t0.elapsed());
    assert!(api.cmd("set rate-limit sessions global 0").trim().is_empty());
    assert_eq!(info(&api, "SessRateLimit").as_deref(), Some("0"));
    let answer = api.cmd("set rate-limit sessions global");
    assert_eq!(answer, "Expects an integer value.\n\n");
    // (Read by `atoi`, as HAProxy reads it: not a number is 0.)
    assert!(api.cmd("set rate-limit sessions global 12").trim().is_empty());
    assert!(api.cmd("set rate-limit sessions global x").trim().is_empty());
    assert_eq!(info(&api, "SessRateLimit").as_deref(), Some("0"));
}

/// `show errors` shows the last invalid request of a frontend and the last invalid response
/// of a backend as HAProxy 2.6 does: the same headers, positions and dump (HAProxy's lines
/// about its H1 multiplexer's internal flags aside); filters by proxy and direction.
#[test]
fn show_errors_captures_invalid_messages_as_haproxy_does() {
    // A server that answers every request with a header line without a colon.
    let bad = TcpListener::bind("127.0.0.1:0").expect("bind");
    let bad_addr = bad.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in bad.incoming().take(8) {
            let Ok(mut c) = c else { continue };
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Header\r\n\r\nok");
        }
    });
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server s1 {bad_addr}
"
    );
    // Dates and the client's port differ from run to run; HAProxy's H1 flag lines are its own.
    let mask = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with("H1 "))
            .map(|l| {
                let l = match (l.find('['), l.find(']')) {
                    (Some(a), Some(b)) if b > a => format!("{}[DATE]{}", &l[..a], &l[b + 1..]),
                    _ => l.to_string(),
                };
                match l.find(", src 127.0.0.1:") {
                    Some(i) => format!("{}, src 127.0.0.1:PORT", &l[..i]),
                    None => l,
                }
            })
            .collect()
    };
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-errors", &cfg) else { continue };
        let empty = api.cmd("show errors");
        let mut s = connect(api.addrs[0]);
        s.write_all(b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
        assert!(closed_within(&mut s, Duration::from_secs(5)), "{which}: 400 and close");
        assert_eq!(get_with(api.addrs[0], "/", "").0, 502, "{which}");
        let all = api.cmd("show errors");
        let answers = [
            mask(&empty),
            mask(&all),
            mask(&api.cmd("show errors fe request")),
            mask(&api.cmd("show errors be request")),
            mask(&api.cmd("show errors 3 response")),
            mask(&api.cmd("show errors 2 response")),
            mask(&api.cmd("show errors nope")),
        ];
        assert!(
            all.contains("error at position 39") && all.contains("Bad Header\\r\\n"),
            "{which}: {all}"
        );
        seen.push(answers);
    }
    if let Some(h) = seen.get(1) {
        for (f, h) in seen[0].iter().zip(h) {
            same(f, h, "show errors");
        }
    }
}

/// `show|add|del|clear acl` answer as HAProxy's, references are numbered as HAProxy numbers
/// them (maps and ACLs together, in configuration order), and a change to an ACL file's
/// patterns applies to live requests at once.
#[test]
fn acl_commands_answer_as_haproxy_s_and_change_live_decisions() {
    let one = testserver("http", "one");
    let dir = scratch("api-acl-files");
    let ips = dir.join("ips.lst");
    let map = dir.join("r.map");
    std::fs::write(&ips, "10.0.0.0/8\n# comment\n192.168.1.1\n").expect("acl file");
    std::fs::write(&map, "/a one\n").expect("map file");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    acl p path_beg /x /y
    acl blocked src -f {ips}
    http-request deny if blocked
    http-request set-header X-R %[path,map_beg({map},none)]
    http-request deny if {{ path_beg /z }}
    default_backend be
backend be
    acl b2 hdr(host) -f {ips}
    server one {one}
",
        ips = ips.display(),
        map = map.display(),
        one = one.addr
    );
    let f = ips.display().to_string();
    let script = [
        "show acl".to_string(),
        "show map".into(),
        format!("add acl {f} 127.0.0.1"),
        "LIVE".into(),
        format!("add acl {f}"),
        "add acl nope 1".into(),
        format!("del acl {f} 1.1.1.1"),
        format!("del acl {f} 127.0.0.1"),
        "LIVE".into(),
        "add acl #0 /w".into(),
        "show acl #0".into(),
        format!("get acl {f} 10.1.2.3"),
        format!("get acl {f} 1.1.1.1"),
        "get acl #0 /w/z".into(),
        "get acl #2 1.2.3.4".into(),
        "get acl #0".into(),
        format!("add acl {f} bad/ip"),
        format!("clear acl {f}"),
        format!("show acl {f}"),
        format!("del acl {f}"),
    ];
    // Entry references are addresses in HAProxy; its own `httpclient` ACLs are not ours.
    let mask = |text: &str| -> String {
        text.lines()
            .filter(|l| !l.contains("'httpclient'"))
            .map(|l| {
                l.replace("api-acls-fulcrum/", "api-acls-P/")
                    .replace("api-acls-haproxy/", "api-acls-P/")
            })
            .map(|l| match l.split_once(' ') {
                Some((r, rest)) if r.starts_with("0x") => format!("REF {rest}"),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-acls", &cfg) else { continue };
        let mut got = Vec::new();
        for c in &script {
            if c == "LIVE" {
                got.push(format!("GET / => {}", get_with(api.addrs[0], "/", "").0));
                continue;
            }
            got.push(format!("{c} => {}", mask(&api.cmd(c))));
        }
        answers.push(got);
    }
    assert!(answers[0][3].ends_with("403"), "127.0.0.1 added: denied: {:?}", answers[0]);
    assert!(answers[0][8].ends_with("200"), "127.0.0.1 deleted: allowed: {:?}", answers[0]);
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "acl commands");
    }
}

/// `show sess` lists live client sessions (HAProxy's leading fields) and `shutdown session`
/// ends one: its client sees the connection close before its answer; the errors are
/// HAProxy's.
#[test]
fn sessions_are_listed_and_one_can_be_shut() {
    let a = testserver("http", "a");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server s1 {}
",
        a.addr
    );
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-sess", &cfg) else { continue };
        // A request the server answers in 10 s: its stream is live meanwhile.
        let mut s = connect(api.addrs[0]);
        s.write_all(b"GET /?t=10s HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
        let me = s.local_addr().expect("addr").to_string();
        let mut list = String::new();
        // Listed from its accept; its server once its request went to one.
        let listed = eventually(Duration::from_secs(5), || {
            list = api.cmd("show sess");
            list.lines().any(|l| l.contains(&format!("src={me} ")) && l.contains(" srv=s1 "))
        });
        assert!(listed, "{which}: {list}");
        let line = list.lines().find(|l| l.contains(&format!("src={me} "))).unwrap_or("");
        assert!(
            line.contains(" fe=fe be=be srv=s1 ") && line.contains("proto=tcpv4"),
            "{which}: {list}"
        );
        let id = line.split(':').next().unwrap_or("").to_string();
        answers.push(vec![
            api.cmd("shutdown session"),
            api.cmd("shutdown session 0x1234"),
            api.cmd(&format!("shutdown session {id}")),
        ]);
        // Fulcrum closes the connection; HAProxy answers 502 (no response had begun).
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut got = [0u8; 64];
        let n = s.read(&mut got).unwrap_or(usize::MAX);
        assert!(n == 0 || got.starts_with(b"HTTP/1.1 502"), "{which}: the session ended ({n})");
        let gone = eventually(Duration::from_secs(5), || {
            !api.cmd("show sess").contains(&format!("src={me} "))
        });
        assert!(gone, "{which}: the session left the list");
        // `shutdown sessions server` ends every session using the server.
        let mut s2 = connect(api.addrs[0]);
        s2.write_all(b"GET /?t=10s HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
        let me2 = s2.local_addr().expect("addr").to_string();
        let using = eventually(Duration::from_secs(5), || {
            api.cmd("show sess")
                .lines()
                .any(|l| l.contains(&format!("src={me2} ")) && l.contains("srv=s1"))
        });
        assert!(using, "{which}: the second session uses s1");
        assert_eq!(api.cmd("shutdown sessions server be/s1"), "\n", "{which}");
        s2.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut got2 = [0u8; 64];
        let n2 = s2.read(&mut got2).unwrap_or(usize::MAX);
        assert!(n2 == 0 || got2.starts_with(b"HTTP/1.1 502"), "{which}: ended ({n2})");
    }
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "shutdown session");
    }
}

/// `set profiling` answers as HAProxy's; with tasks profiling on, `show profiling` counts the
/// HTTP sessions' polls and their CPU time; `show activity` counts each worker's accepted
/// connections; `show pools` reports the allocator.
#[test]
fn profiling_activity_and_pools_report_what_ran() {
    let a = testserver("http", "a");
    let cfg = format!(
        "
global
    nbthread 2
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server s1 {}
",
        a.addr
    );
    let script = ["set profiling foo on", "set profiling tasks maybe", "set profiling tasks on"];
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-prof", &cfg) else { continue };
        answers.push(script.iter().map(|c| api.cmd(c)).collect::<Vec<_>>());
        if which == "haproxy" {
            continue;
        }
        for _ in 0..10 {
            assert_eq!(get_with(api.addrs[0], "/", "").0, 200);
        }
        let prof = api.cmd("show profiling");
        assert!(prof.starts_with("Per-task CPU profiling              : on "), "{prof}");
        let row = prof.lines().find(|l| l.trim_start().starts_with("http_session")).unwrap_or("");
        let calls: u64 = row.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        assert!(calls >= 10, "each session polled at least once: {prof}");
        assert!(row.contains("us") || row.contains("ms"), "CPU time measured: {row}");
        let activity = api.cmd("show activity");
        let accepted = activity.lines().find_map(|l| l.strip_prefix("accepted: "));
        let total: u64 = accepted.and_then(|v| v.split(' ').next()?.parse().ok()).unwrap_or(0);
        assert!(total >= 10, "{activity}");
        assert!(
            accepted.is_some_and(|v| v.split_whitespace().count() == 5),
            "two workers: {activity}"
        );
        let pools = api.cmd("show pools");
        assert!(pools.starts_with("Dumping pools usage.") && pools.contains("bytes allocated"));
    }
    if let Some(h) = answers.get(1) {
        same(&answers[0], h, "set profiling");
    }
}

/// `add server` and `del server` answer as HAProxy 2.6's (dynamic servers start in
/// maintenance with their checks off), and traffic follows: an added server made ready takes
/// its share, a deleted one none; the other servers keep their counters.
#[test]
fn servers_are_added_and_deleted_at_run_time_as_in_haproxy() {
    let one = testserver("http", "one");
    let two = testserver("http", "two");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server s1 {one}
backend st
    balance static-rr
    server s1 {one}
",
        one = one.addr
    );
    let script = [
        format!("add server be/s2 {} check weight 5", two.addr),
        "show servers state be".to_string(),
        format!("add server be/s2 {}", two.addr),
        "add server st/x 127.0.0.1:1".into(),
        "add server nope/x 127.0.0.1:1".into(),
        "add server be".into(),
        "add server be/s4 127.0.0.1:1 cookie abc".into(),
        "set server be/s2 state ready".into(),
        "TRAFFIC".into(),
        "del server be/s2".into(),
        "set server be/s2 state maint".into(),
        "del server be/s2".into(),
        "del server be/nope".into(),
        "del server be".into(),
        "del server be/s1".into(),
        "TRAFFIC".into(),
        "show servers state be".into(),
    ];
    // Seconds since the last change differ from run to run.
    let mask = |text: &str| super::server_state::masked_state(text).join("\n");
    let mut answers = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-dyn-servers", &cfg) else { continue };
        assert_eq!(servers_of(api.addrs[0], 2), ["one", "one"], "{which}");
        let mut got = Vec::new();
        for c in &script {
            if c == "TRAFFIC" {
                let mut seen = servers_of(api.addrs[0], 12);
                seen.sort();
                seen.dedup();
                got.push(format!("servers: {seen:?}"));
                continue;
            }
            got.push(format!("{c} => {}", mask(&api.cmd(c))));
        }
        if which == "fulcrum" {
            let bad = api.cmd("add server be/s5 127.0.0.1:1 foo");
            assert!(bad.starts_with("unknown keyword 'foo'"), "{bad}");
            let stot = api.cmd("show stat");
            let (_, rows) = csv_rows(&stot);
            let s1 = rows
                .iter()
                .find(|r| field(r, "pxname") == Some("be") && field(r, "svname") == Some("s1"));
            let n: u64 = s1.and_then(|r| field(r, "stot")?.parse().ok()).unwrap_or(0);
            assert!(n >= 14, "s1's counters went on across the rebuilds: {n}");
        }
        answers.push(got);
    }
    let f = &answers[0];
    assert!(f[8].contains("\"two\""), "the added server serves once ready: {f:#?}");
    assert_eq!(f[15], "servers: [\"one\"]", "{f:#?}");
    if let Some(h) = answers.get(1) {
        same(f, h, "add/del server");
    }
}

/// Denied requests and request errors are counted where HAProxy counts them.
#[test]
fn denials_and_request_errors_show_in_the_counters_as_in_haproxy() {
    let a = testserver("http", "a");
    let cfg = format!(
        "
global
    stats socket {{sock}} level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    http-request deny if {{ path /no }}
    default_backend be
backend be
    server a {}
",
        a.addr
    );
    let fields = ["dreq", "dresp", "ereq", "hrsp_2xx", "hrsp_4xx", "hrsp_5xx", "req_tot", "stot"];
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-denials", &cfg) else { continue };
        for path in ["/", "/no", "/yes", "/no"] {
            let _ = http_get(api.addrs[0], path);
        }
        // A malformed request: a request error.
        let mut s = std::net::TcpStream::connect(api.addrs[0]).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n");
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        // A client that connects and leaves without a byte: HAProxy counts a request error.
        drop(std::net::TcpStream::connect(api.addrs[0]).expect("connect"));
        let counted = eventually(Duration::from_secs(5), || {
            api.cmd("show stat")
                .lines()
                .any(|l| l.starts_with("fe,FRONTEND,") && l.split(',').nth(12) == Some("2"))
        });
        assert!(counted, "{which}: ereq counts the silent client");
        let (_, rows) = csv_rows(&api.cmd("show stat"));
        let pick = |px: &str, sv: &str| -> Vec<String> {
            let r = rows
                .iter()
                .find(|r| field(r, "pxname") == Some(px) && field(r, "svname") == Some(sv))
                .expect("row");
            fields.iter().map(|f| format!("{f}={}", field(r, f).unwrap_or(""))).collect()
        };
        seen.push((pick("fe", "FRONTEND"), pick("be", "BACKEND")));
    }
    let (fe, be) = &seen[0];
    assert!(fe.contains(&"dreq=2".to_string()), "{fe:?}");
    assert!(fe.contains(&"ereq=2".to_string()), "{fe:?}");
    assert!(be.contains(&"hrsp_2xx=2".to_string()), "{be:?}");
    if let Some(h) = seen.get(1) {
        same(fe, &h.0, "frontend counters");
        same(be, &h.1, "backend counters");
    }
}

#[test]
fn a_stats_socket_alone_is_a_listener_and_checks_run_behind_it() {
    // No frontend at all: HAProxy runs the checks and answers on its socket.
    let live = testserver("http", "live");
    let cfg = format!(
        "global\n stats socket {{sock}} level admin\n\
         defaults\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
         backend be\n server s1 {} check inter 100ms rise 1\n",
        live.addr
    );
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-no-frontend", &cfg) else { continue };
        let passed = eventually(Duration::from_secs(5), || {
            api.cmd("show stat").lines().any(|l| l.starts_with("be,s1,") && l.contains(",L4OK,"))
        });
        assert!(passed, "{which}: the check ran: {}", api.cmd("show stat"));
    }
}

#[test]
fn a_backends_session_limit_is_its_fullconn_or_a_tenth_of_the_frontends_leading_to_it() {
    // `slim` of a BACKEND row: `fullconn` when set; else a tenth of the `maxconn` of every
    // frontend whose default backend it is or whose `use_backend` names it; 1 when none does.
    let live = testserver("http", "live");
    let cfg = format!(
        "global\n stats socket {{sock}} mode 600 level admin\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend a\n bind {{fe0}}\n maxconn 3000\n default_backend one\n\
         frontend b\n bind {{fe1}}\n maxconn 501\n use_backend one if {{ path /x }}\n\
         default_backend set\n\
         backend one\n server s {live}\n\
         backend none\n server s {live}\n\
         backend set\n fullconn 42\n server s {live}\n",
        live = live.addr
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-fullconn", &cfg) else { continue };
        let (_, rows) = csv_rows(&api.cmd("show stat"));
        let limits: Vec<(String, String)> = rows
            .iter()
            .filter(|r| field(r, "svname") == Some("BACKEND"))
            .map(|r| {
                (field(r, "pxname").unwrap_or("").into(), field(r, "slim").unwrap_or("").into())
            })
            .collect();
        seen.push(limits);
    }
    let want: Vec<(String, String)> = [("one", "351"), ("none", "1"), ("set", "42")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(seen[0], want, "Fulcrum");
    if let Some(h) = seen.get(1) {
        assert_eq!(h, &want, "HAProxy 2.6");
    }
}

#[test]
fn the_h2_and_h1_module_counters_count_as_haproxy_2_6_s() {
    // Two HTTP/2 connections (prior knowledge: each begins as HTTP/1, as in HAProxy) with
    // three streams, one with a body, and one HTTP/1 request: `show stat`'s `h2` and `h1`
    // module fields of the frontend.
    use crate::h2client::{h2c, H2Req};
    let cfg = "global\n stats socket {sock} level admin\n\
               defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
               frontend fe\n bind {fe0}\n http-request return status 200\n";
    let names = [
        "h2_headers_rcvd",
        "h2_data_rcvd",
        "h2_total_connections",
        "h2_backend_total_streams",
        "h2_open_connections",
        "h1_total_connections",
        "h1_total_streams",
        "h1_open_connections",
    ];
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-h2-modules", cfg) else { continue };
        let got = h2c(api.addrs[0], &[H2Req::get("/a"), H2Req::post("/b", b"xyz")]);
        assert!(got.is_ok_and(|r| r.iter().all(|r| r.status == 200)), "{which}");
        let got = h2c(api.addrs[0], &[H2Req::get("/c")]).expect("exchange");
        assert_eq!(got[0].status, 200, "{which}");
        assert_eq!(http_get(api.addrs[0], "/d").map(|r| r.0), Some(200), "{which}");
        let row = || {
            let (_, rows) = csv_rows(&api.cmd("show stat"));
            rows.into_iter().find(|r| field(r, "svname") == Some("FRONTEND")).unwrap_or_default()
        };
        // (The connections' ends are counted as their tasks end.)
        let closed = eventually(Duration::from_secs(5), || {
            let r = row();
            field(&r, "h2_open_connections") == Some("0")
                && field(&r, "h1_open_connections") == Some("0")
        });
        assert!(closed, "{which}: no connection left open");
        let r = row();
        let values: Vec<String> =
            names.iter().map(|n| field(&r, n).unwrap_or("-").to_string()).collect();
        let settings: u64 = field(&r, "h2_settings_rcvd").and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(settings >= 2, "{which}: the clients' SETTINGS ({settings})");
        seen.push(values);
    }
    assert_eq!(seen[0], ["3", "1", "2", "3", "0", "3", "1", "0"], "Fulcrum");
    if let Some(h) = seen.get(1) {
        assert_eq!(&seen[0], h, "Fulcrum (left), HAProxy 2.6 (right): {names:?}");
    }
}

#[test]
fn h1_open_streams_counts_the_http1_transactions_in_progress_as_haproxy_2_6() {
    // A request the server answers after 3 s: `h1_open_streams` is 1 while it waits (seen
    // within 2.5 s, a margin for a loaded machine), then 0 once it is answered (its
    // connection kept idle: the count may lag the answer's last byte by an instant), and
    // still 0 once the connection closes, as HAProxy 2.6 counts it.
    let srv = testserver("http", "s");
    let cfg = format!(
        "global\n stats socket {{sock}} level admin\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n default_backend be\nbackend be\n server s {}\n",
        srv.addr
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some(api) = start(which, "api-h1-streams", &cfg) else { continue };
        let open = || {
            let (_, rows) = csv_rows(&api.cmd("show stat"));
            let fe = rows.into_iter().find(|r| field(r, "svname") == Some("FRONTEND"));
            fe.and_then(|r| field(&r, "h1_open_streams").map(str::to_string)).unwrap_or_default()
        };
        let mut c = std::net::TcpStream::connect(api.addrs[0]).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(8))).expect("timeout");
        c.write_all(b"GET /?t=3s HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
        let during = eventually(Duration::from_millis(2500), || open() == "1");
        let mut buf = [0u8; 512];
        let n = c.read(&mut buf).expect("the answer");
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{which}");
        let idle = eventually(Duration::from_secs(2), || open() == "0");
        drop(c);
        let after = eventually(Duration::from_secs(5), || open() == "0");
        seen.push((during, idle, after));
    }
    assert_eq!(seen[0], (true, true, true), "Fulcrum");
    if let Some(h) = seen.get(1) {
        assert_eq!(&seen[0], h, "Fulcrum (left), HAProxy 2.6 (right)");
    }
}
