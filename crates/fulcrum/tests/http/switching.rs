//! `use_backend` switching with many rules: Fulcrum answers runs of rules that test one ACL of
//! the same sample with a single indexed lookup; the first matching rule must still win, as
//! HAProxy evaluates them one by one.

use crate::px::*;

/// A frontend with one `use_backend` rule per `(acl criterion, backend)` and a backend per
/// server name; `default` gets the rest.
fn switching(rules: &[(&str, &str)], servers: &[(&str, &fulcrum_testserver::Running)]) -> String {
    let mut cfg = format!("{DEFAULTS}frontend fe\n bind {{fe0}}\n");
    for (i, (criterion, be)) in rules.iter().enumerate() {
        cfg.push_str(&format!(" acl r{i} {criterion}\n use_backend {be} if r{i}\n"));
    }
    cfg.push_str(" default_backend default\n");
    for (name, srv) in servers {
        cfg.push_str(&format!("backend {name}\n server {name} {}\n", srv.addr()));
    }
    cfg
}

#[test]
fn the_first_matching_rule_wins_among_many_prefix_rules() {
    each(|t| {
        let names = ["b0", "b1", "b2", "b3", "b4", "default"];
        let srvs: Vec<_> = names.iter().map(|n| server(n)).collect();
        let servers: Vec<(&str, &fulcrum_testserver::Running)> =
            names.iter().copied().zip(srvs.iter()).collect();
        // Overlapping prefixes in an order where the longest is not the first: `/api/v2` goes
        // to b1 (`/api` comes before `/api/v2`). A header rule in the middle breaks the run.
        let rules = [
            ("path_beg /static", "b0"),
            ("path_beg /api", "b1"),
            ("path_beg /api/v2", "b2"),
            ("path_beg /a", "b3"),
            ("path_beg /x /y", "b4"),
            ("hdr(x-pick) b0", "b0"),
            ("path_beg /zz", "b2"),
            ("path_beg /z", "b3"),
            ("path_beg /q", "b4"),
            ("path_beg /qq", "b1"),
            ("path_beg /", "b2"),
        ];
        let px = t.start(&switching(&rules, &servers));
        let cases = [
            ("/static/x", &[][..], "b0"),
            ("/api/v2/x", &[], "b1"),
            ("/apple", &[], "b3"),
            ("/y/1", &[], "b4"),
            ("/zz/1", &[], "b2"),
            ("/z", &[], "b3"),
            ("/qq", &[], "b4"),
            ("/other", &[], "b2"),
            ("/other", &["X-Pick: b0"], "b0"),
            ("/static", &["X-Pick: b0"], "b0"),
        ];
        let mut seen = Vec::new();
        for (path, headers, want) in cases {
            let r = px.get_with(path, headers);
            assert_eq!((r.status, r.server()), (200, want), "{path} {headers:?}");
            seen.push(r.server().to_string());
        }
        seen
    });
}

#[test]
fn many_exact_host_rules_route_like_haproxy_with_case_folding() {
    each(|t| {
        let names = ["b0", "b1", "b2", "default"];
        let srvs: Vec<_> = names.iter().map(|n| server(n)).collect();
        let servers: Vec<(&str, &fulcrum_testserver::Running)> =
            names.iter().copied().zip(srvs.iter()).collect();
        let mut rules = Vec::new();
        let hosts: Vec<String> = (0..60).map(|i| format!("h{i}.example")).collect();
        for (i, h) in hosts.iter().enumerate() {
            rules.push((format!("hdr(host) -i {h}"), ["b0", "b1", "b2"][i % 3]));
        }
        let rules: Vec<(&str, &str)> = rules.iter().map(|(c, b)| (c.as_str(), *b)).collect();
        let px = t.start(&switching(&rules, &servers));
        let mut seen = Vec::new();
        for (i, host) in [(0, "h0.example"), (31, "H31.EXAMPLE"), (59, "h59.example")] {
            let r = px.send(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
            assert_eq!(r.server(), ["b0", "b1", "b2"][i % 3], "{host}");
            seen.push(r.server().to_string());
        }
        let r = px.send(b"GET / HTTP/1.1\r\nHost: h60.example\r\n\r\n");
        assert_eq!(r.server(), "default");
        seen
    });
}
