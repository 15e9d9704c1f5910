//! `http-request use-service prometheus-exporter`: the same metric families (names, types,
//! help texts) and label sets as HAProxy 2.6's exporter on the same configuration, output a
//! real exposition-format parser (Python's `prometheus_client`, when installed) reads, values
//! that follow live state, and the `scope` / `no-maint` parameters.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use super::harness::*;

fn get_body(addr: SocketAddr, path: &str) -> String {
    get_with(addr, path, "").2
}

/// The HELP/TYPE lines, and each sample's name and labels (values masked).
fn shape(text: &str) -> (Vec<String>, Vec<String>) {
    let meta = text.lines().filter(|l| l.starts_with('#')).map(str::to_string).collect();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k))
        .filter(|k| !k.starts_with("haproxy_process_build_info"))
        .map(str::to_string)
        .collect();
    (meta, samples)
}

fn value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ').map(str::to_string))
}

/// A Python with `prometheus_client`, if there is one.
fn python_with_client() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        std::process::Command::new(py)
            .args(["-c", "import prometheus_client.parser"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Parses `text` with `prometheus_client`: each family's name and type, one per line.
fn parse_with_client(py: &str, text: &str) -> Vec<String> {
    let script =
        "import sys\nfrom prometheus_client.parser import text_string_to_metric_families as p\n\
                  for f in p(sys.stdin.read()):\n    print(f.name, f.type, len(f.samples))\n";
    let mut child = std::process::Command::new(py)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("feed");
    let out = child.wait_with_output().expect("parse");
    assert!(out.status.success(), "prometheus_client parses the output");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// Proxies with live, DOWN, backup and disabled servers, a TCP listener and the exporter on
/// `{fe2}`.
fn config(live: SocketAddr) -> String {
    format!(
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
    server live {live} check inter 200ms
    server dead {dead} check inter 200ms
    server spare {live} backup
    server off {live} disabled
listen raw
    mode tcp
    option socket-stats
    bind {{fe1}} name rawl
    server t1 {live}
frontend metrics
    bind {{fe2}}
    http-request use-service prometheus-exporter if {{ path /metrics }}
",
        live = live,
        dead = dead_addr()
    )
}

/// Waits until the dead server shows DOWN in the exporter's output at `at`.
fn settle(which: &str, at: SocketAddr) {
    let settled = eventually(Duration::from_secs(5), || {
        let m = get_body(at, "/metrics");
        value(&m, "haproxy_server_status{proxy=\"be\",server=\"dead\",state=\"DOWN\"}").as_deref()
            == Some("1")
    });
    assert!(settled, "{which}: the dead server is DOWN in the metrics");
}

#[test]
fn the_exporter_serves_haproxy_2_6_s_families_and_labels_with_live_values() {
    let live = testserver("http", "live");
    let cfg = config(live.addr);
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "prometheus", &cfg) else { continue };
        settle(which, addrs[2]);
        for _ in 0..3 {
            assert_eq!(http_get(addrs[0], "/").map(|r| r.0), Some(200));
        }
        // (HAProxy counts a response once its stream ended, which may follow the client's
        // read of it by a moment: the scrape is taken again until the third is counted.)
        let responses = "haproxy_backend_http_responses_total{proxy=\"be\",code=\"2xx\"}";
        let mut text = get_body(addrs[2], "/metrics");
        eventually(std::time::Duration::from_secs(5), || {
            text = get_body(addrs[2], "/metrics");
            value(&text, responses).as_deref() == Some("3")
        });
        let v = |k: &str| value(&text, k);
        assert_eq!(
            v("haproxy_server_status{proxy=\"be\",server=\"live\",state=\"UP\"}").as_deref(),
            Some("1"),
            "{which}"
        );
        assert_eq!(
            v("haproxy_server_status{proxy=\"be\",server=\"off\",state=\"MAINT\"}").as_deref(),
            Some("1"),
            "{which}"
        );
        assert_eq!(
            v("haproxy_backend_http_responses_total{proxy=\"be\",code=\"2xx\"}").as_deref(),
            Some("3"),
            "{which}"
        );
        assert_eq!(
            v("haproxy_backend_active_servers{proxy=\"be\"}").as_deref(),
            Some("1"),
            "{which}"
        );
        // `option socket-stats`: the listener's families.
        assert_eq!(
            v("haproxy_listener_status{proxy=\"raw\",listener=\"rawl\",state=\"OPEN\"}").as_deref(),
            Some("1"),
            "{which}"
        );
        // Only the servers, without those in maintenance.
        let servers = get_body(addrs[2], "/metrics?scope=server&no-maint");
        assert!(servers
            .lines()
            .filter(|l| !l.starts_with('#'))
            .all(|l| l.starts_with("haproxy_server_")));
        assert!(
            servers.contains("server=\"live\"") && !servers.contains("server=\"off\""),
            "{which}"
        );
        seen.push(shape(&text));
    }
    let f = &seen[0];
    assert_eq!(
        f.0.iter().filter(|l| l.starts_with("# TYPE")).count(),
        187 + 14,
        "HAProxy 2.6's families, 14 of them for listeners"
    );
    if let Some(h) = seen.get(1) {
        super::runtime_api::same(&f.0, &h.0, "HELP and TYPE lines");
        super::runtime_api::same(&f.1, &h.1, "samples and their labels");
    }
}

#[test]
#[cfg_attr(
    no_prometheus_client,
    ignore = "Python's prometheus_client is not installed (see crates/fulcrum/build.rs)"
)]
fn a_real_exposition_format_parser_reads_every_family() {
    let py = python_with_client().expect("a Python with prometheus_client");
    let live = testserver("http", "live");
    let cfg = config(live.addr);
    let mut parsed = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "prometheus-parser", &cfg) else { continue };
        settle(which, addrs[2]);
        parsed.push(parse_with_client(py, &get_body(addrs[2], "/metrics")));
    }
    let fams = &parsed[0];
    assert_eq!(fams.len(), 187 + 14, "the parser reads every family: {fams:?}");
    if let Some(hfams) = parsed.get(1) {
        assert_eq!(fams, hfams, "the parser sees the same families, types and sample counts");
    }
}
