//! `http-request`, `http-response` and `http-after-response` rules, `option forwardfor` and
//! `originalto`, legacy `redirect`, `monitor-uri`, `tcp-request` rules, hashing balance
//! algorithms and cookie persistence.

use std::time::Duration;

use crate::px::*;

fn one(srv: &Running, lines: &str) -> String {
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

pub const PAGE_403: &str = "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n";

#[test]
fn http_request_deny_answers_403_and_allow_stops_the_rules() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request allow if { path /open }\n\
             http-request deny deny_status 429 if { path /slow-down }\n\
             http-request deny if { path_beg /admin } || { path /open }\n",
        ));
        let r = px.get("/admin/x");
        assert_eq!((r.status, r.reason.as_str()), (403, "Forbidden"));
        assert_eq!(r.text(), PAGE_403);
        assert_eq!(px.get("/slow-down").status, 429);
        assert_eq!(px.get("/open").server(), "s1", "allow ends the http-request rules");
        assert_eq!(px.get("/x").server(), "s1");
        assert_eq!(srv.counts().requests, 2, "denied requests never reach the server");
        r.summary(&["content-type", "content-length", "cache-control", "connection"])
    });
}

#[test]
fn http_request_return_answers_from_the_proxy() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request return status 200 content-type text/plain string \"pong\" hdr X-A 1 if { path /ping }\n\
             http-request return status 404 content-type text/plain lf-string \"no %[path]\" if { path_beg /missing }\n\
             http-request return status 204 if { path /empty }\n",
        ));
        let r = px.get("/ping");
        assert_eq!((r.status, r.text().as_str()), (200, "pong"));
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.header("x-a"), Some("1"));
        assert_eq!(r.header("content-length"), Some("4"));
        let r = px.get("/missing/a");
        assert_eq!((r.status, r.text().as_str()), (404, "no /missing/a"));
        assert_eq!(px.get("/empty").status, 204);
        assert_eq!(srv.counts().requests, 0);
    });
}

#[test]
fn http_request_redirect_location_prefix_and_scheme() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request redirect location /new if { path /old }\n\
             http-request redirect location /moved code 301 if { path /perm }\n\
             http-request redirect prefix /v2 if { path_beg /v1 }\n\
             http-request redirect prefix /v3 drop-query if { path_beg /q }\n\
             http-request redirect scheme https code 308 if { path_beg /secure }\n",
        ));
        let r = px.get("/old?x=1");
        assert_eq!((r.status, r.header("location")), (302, Some("/new")));
        let r = px.get("/perm");
        assert_eq!((r.status, r.header("location")), (301, Some("/moved")));
        let r = px.get("/v1/a?b=1");
        assert_eq!((r.status, r.header("location")), (302, Some("/v2/v1/a?b=1")));
        let r = px.get("/q/a?b=1");
        assert_eq!(r.header("location"), Some("/v3/q/a"));
        let r = px.get_with("/secure/a?b=1", &[]);
        assert_eq!((r.status, r.header("location")), (308, Some("https://t/secure/a?b=1")));
        assert_eq!(srv.counts().requests, 0);
        r.summary(&["location", "content-length", "cache-control", "connection"])
    });
}

#[test]
fn legacy_redirect_keyword_still_works() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " redirect location /there code 303 if { path /here }\n"));
        let r = px.get("/here");
        assert_eq!((r.status, r.header("location")), (303, Some("/there")));
        assert_eq!(px.get("/x").server(), "s1");
    });
}

/// Log-format flags in header values, as HAProxy 2.6 renders them there: a sample's value is
/// %-encoded where a header needs it and never quoted (`+Q` is for log lines), `+E` escapes;
/// a variable such as `%ci` keeps its quotes.
#[test]
fn log_format_flags_in_header_values_are_haproxys() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-header X-Q %{+Q}[req.hdr(x-dn)]\n\
             http-request set-header X-E %{+E}[req.hdr(x-dn)]\n\
             http-request set-header X-QE %{+Q,+E}[req.hdr(x-dn)]\n\
             http-request set-header X-None %{+Q}[req.hdr(x-missing)]-\n\
             http-request set-header X-Ci %{+Q}ci\n\
             http-request set-header X-Plain %[req.hdr(x-dn)]\n",
        ));
        let r = px.send(
            b"GET /echo HTTP/1.1\r\nHost: t\r\nX-DN: /CN=a b\"c\\d/O=x\r\nConnection: close\r\n\r\n",
        );
        let h = r.echoed();
        ["x-q", "x-e", "x-qe", "x-none", "x-ci", "x-plain"]
            .iter()
            .map(|n| (n.to_string(), h.header(n).unwrap_or("(none)").to_string()))
            .collect::<Vec<_>>()
    });
}

#[test]
fn http_request_header_actions_change_what_the_server_receives() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-header X-Set new\n\
             http-request add-header X-Add two\n\
             http-request del-header X-Del\n\
             http-request replace-header X-Rep (.*)-(.*) \\2-\\1\n\
             http-request replace-value X-Val ^a$ z\n\
             http-request set-header X-From %[req.hdr(x-src)]-%[path]\n",
        ));
        let r = px.send(
            b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Set: old\r\nX-Add: one\r\nX-Del: 1\r\nX-Del: 2\r\n\
              X-Rep: left-right\r\nX-Val: a, b, a\r\nX-Src: s\r\nConnection: close\r\n\r\n",
        );
        let h = r.echoed();
        assert_eq!(h.all("x-set"), ["new"]);
        assert_eq!(h.all("x-add"), ["one", "two"]);
        assert!(!h.has("x-del"));
        assert_eq!(h.header("x-rep"), Some("right-left"));
        // Surprise: HAProxy rebuilds the list with the last separator's space lost; Fulcrum
        // replaces the values in place and keeps the separators as they were (same meaning).
        let want = if t.is_haproxy() { "z, b,z" } else { "z, b, z" };
        assert_eq!(h.header("x-val"), Some(want));
        assert_eq!(h.header("x-from"), Some("s-/echo"));
        // Compared across targets: everything but the one value that differs on purpose.
        h.names()
            .iter()
            .map(|n| (n.to_string(), h.all(n).join("|")))
            .filter(|(n, _)| n != "x-val")
            .collect::<Vec<_>>()
    });
}

#[test]
fn http_request_uri_and_method_actions_rewrite_the_request_line() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-path /echo if { path /p }\n\
             http-request set-query echo=1&q=2 if { path /q }\n\
             http-request set-uri /echo?u=1 if { path /u }\n\
             http-request replace-path /api/(.*) /echo?api=\\1 if { path_beg /api/ }\n\
             http-request replace-uri ^/r/(.*) /echo?r=\\1 if { path_beg /r/ }\n\
             http-request set-method PUT if { path /echo } { method GET }\n",
        ));
        let line = |target: &str| {
            let h = px.get(target).echoed();
            format!("{} {}", h.method, h.target)
        };
        assert_eq!(line("/p?x=1"), "PUT /echo?x=1");
        assert_eq!(line("/echo?q"), "PUT /echo?q");
        assert_eq!(px.get("/q?old").echoed().target, "/q?echo=1&q=2");
        assert_eq!(line("/u?z"), "PUT /echo?u=1");
        // replace-path leaves the query alone (and escapes nothing).
        assert_eq!(line("/api/v1?k=1"), "PUT /echo?api=v1?k=1");
        assert_eq!(line("/r/x?y"), "PUT /echo?r=x?y");
    });
}

#[test]
fn http_request_set_var_and_unset_var() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-var(txn.who) req.hdr(x-user),lower\n\
             http-request unset-var(txn.who) if { req.hdr(x-user) -m str Nobody }\n\
             http-request set-var(req.n) int(42)\n\
             http-request set-header X-Who %[var(txn.who)]\n\
             http-request set-header X-N %[var(req.n)]\n\
             http-request set-header X-Known yes if { var(txn.who) -m found }\n",
        ));
        let h = px.get_with("/echo", &["X-User: ALICE"]).echoed();
        assert_eq!(
            (h.header("x-who"), h.header("x-n"), h.header("x-known")),
            (Some("alice"), Some("42"), Some("yes"))
        );
        let h = px.get_with("/echo", &["X-User: Nobody"]).echoed();
        assert_eq!((h.header("x-who"), h.header("x-known")), (Some(""), None));
    });
}

#[test]
fn option_http_buffer_request_and_wait_for_body_hold_the_request_until_the_body_is_in() {
    for lines in [" option http-buffer-request\n", " http-request wait-for-body time 2s\n"] {
        each(|t| {
            let srv = server("s1");
            let px = t.start(&one(
                &srv,
                &format!("{lines} http-request deny if {{ req.body -m sub secret }}\n"),
            ));
            let mut cl = px.client();
            cl.send(b"POST /?echo=body HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
            // Nothing can be observed until the body ends: a short, bounded pause.
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(srv.counts().conns, 0, "{lines}: the proxy waits for the body");
            cl.send(b"world");
            assert_eq!(cl.read().text(), "helloworld");
            // The body is available to rules.
            let r = px.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\na secret!");
            assert_eq!(r.status, 403, "{lines}");
        });
    }
}

/// A backend's `option http-buffer-request` waits too, once the backend is chosen, for the
/// backend's `timeout http-request` (then 408): its rules see the body, the server gets
/// nothing before it is in.
#[test]
fn a_backends_http_buffer_request_holds_the_request_until_the_body_is_in() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\n\
             backend be\n option http-buffer-request\n timeout http-request 300ms\n\
             http-request deny if {{ req.body -m sub secret }}\n server s1 {}\n",
            srv.addr()
        ));
        let mut cl = px.client();
        cl.send(b"POST /?echo=body HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
        // Nothing can be observed until the body ends: a short, bounded pause.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(srv.counts().conns, 0, "the proxy waits for the body");
        cl.send(b"world");
        assert_eq!(cl.read().text(), "helloworld");
        let mut cl = px.client();
        cl.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\na sec");
        std::thread::sleep(Duration::from_millis(100));
        cl.send(b"ret!");
        assert_eq!(cl.read().status, 403);
        // A body that does not come within the backend's `timeout http-request`: 408.
        let mut cl = px.client();
        cl.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\nabc");
        assert_eq!(cl.read().status, 408);
        assert_eq!(srv.counts().conns, 1, "only the first request reached the server");
    });
}

#[test]
fn http_response_rules_rewrite_the_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-response set-header X-Set 1\n\
             http-response add-header X-Server also\n\
             http-response del-header Content-Type\n\
             http-response replace-header Set-Cookie (.*)=(.*) \\1=changed\n\
             http-response replace-value X-List ^b$ B\n\
             http-response set-status 299 reason Fine if { status 201 }\n\
             http-response set-header X-Was-404 yes if { status 404 }\n\
             http-response set-header X-From-S1 yes if { res.hdr(x-server) -m str s1 }\n\
             http-response deny if { res.hdr(x-secret) -m found }\n",
        ));
        let r = px.get("/?setcookie=a=b&hdr=X-List:a,b,c");
        assert_eq!(r.header("x-set"), Some("1"));
        assert_eq!(r.all("x-server"), ["s1", "also"]);
        assert!(!r.has("content-type"));
        assert_eq!(r.header("set-cookie"), Some("a=changed"));
        assert_eq!(r.header("x-list"), Some("a,B,c"));
        assert_eq!(r.header("x-from-s1"), Some("yes"));
        let r = px.get("/?c=201");
        assert_eq!((r.status, r.reason.as_str()), (299, "Fine"));
        assert_eq!(px.get("/?c=404").header("x-was-404"), Some("yes"));
        assert_eq!(px.get("/?c=200").header("x-was-404"), None);
        // http-response deny: 502 to the client (the answer was already accepted from the server).
        let r = px.get("/?hdr=X-Secret:1");
        assert_eq!(r.status, 502);
        assert!(!r.has("x-secret"));
    });
}

#[test]
fn http_after_response_also_applies_to_the_proxys_own_answers() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             http-request deny if {{ path /deny }}\n\
             http-response set-header X-Resp 1\n\
             http-after-response set-header X-After 1\n\
             http-after-response set-status 418 if {{ status 503 }}\n\
             use_backend be if {{ path /ok }}\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        let r = px.get("/ok");
        assert_eq!(
            (r.status, r.header("x-resp"), r.header("x-after")),
            (200, Some("1"), Some("1"))
        );
        // The proxy's 403 and 503: http-response rules do not run, http-after-response ones do.
        let r = px.get("/deny");
        assert_eq!((r.status, r.header("x-resp"), r.header("x-after")), (403, None, Some("1")));
        let r = px.get("/none");
        assert_eq!((r.status, r.header("x-resp"), r.header("x-after")), (418, None, Some("1")));
    });
}

#[test]
fn option_forwardfor_adds_the_client_address() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend a\n bind {{fe0}}\n option forwardfor\n default_backend be\n\
             frontend b\n bind {{fe1}}\n option forwardfor header X-Client if-none\n default_backend be\n\
             frontend c\n bind {{fe2}}\n option forwardfor except 127.0.0.0/8\n default_backend be\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        let via = |fe: usize, extra: &str| {
            px.client_to(fe).request(get_with("/echo", &[extra]).as_bytes()).echoed()
        };
        // A new header line is appended; an existing one is left as it is.
        let h = via(0, "X-Forwarded-For: 10.0.0.1");
        assert_eq!(h.all("x-forwarded-for"), ["10.0.0.1", "127.0.0.1"]);
        assert_eq!(h.names().last(), Some(&"x-forwarded-for"));
        let h = via(1, "X-Other: 1");
        assert_eq!(h.header("x-client"), Some("127.0.0.1"));
        assert!(!h.has("x-forwarded-for"));
        let h = via(1, "X-Client: 10.9.9.9");
        assert_eq!(h.all("x-client"), ["10.9.9.9"], "if-none");
        assert!(!via(2, "X-Other: 1").has("x-forwarded-for"), "except");
    });
}

#[test]
fn option_originalto_adds_the_destination_address() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " option originalto\n"));
        let h = px.get("/echo").echoed();
        assert_eq!(h.header("x-original-to"), Some("127.0.0.1"));
    });
}

pub const PAGE_MONITOR: &str = "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n";

#[test]
fn monitor_uri_answers_200_and_monitor_fail_503() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n monitor-uri /health\n\
             monitor fail if {{ nbsrv(be) eq 0 }}\n default_backend be\n\
             backend be\n server s1 {}\n\
             frontend down\n bind {{fe1}}\n monitor-uri /health\n monitor fail if {{ nbsrv(gone) eq 0 }}\n\
             backend gone\n server g {} disabled\n",
            srv.addr(),
            srv.addr()
        ));
        let r = px.get("/health");
        assert_eq!((r.status, r.text().as_str()), (200, PAGE_MONITOR));
        // The whole URI is compared: with a query it is an ordinary request.
        assert_eq!(px.get("/health?x").server(), "s1");
        let r = px.client_to(1).request(get("/health").as_bytes());
        assert_eq!(r.status, 503);
        assert_eq!(srv.counts().requests, 1);
        // A monitor URI written as a path matches an absolute-form request's path.
        let abs = b"GET http://t/health HTTP/1.1\r\nHost: t\r\n\r\n";
        let r = px.send(abs);
        assert_eq!((r.status, r.text().as_str()), (200, PAGE_MONITOR));
    });
}

#[test]
fn an_absolute_monitor_uri_matches_only_the_whole_target() {
    each(|t| {
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n monitor-uri http://www.example.org/health\n"
        ));
        let abs = b"GET http://www.example.org/health HTTP/1.1\r\nHost: www.example.org\r\n\r\n";
        (px.send(abs).status, px.get("/health").status)
    });
}

#[test]
fn tcp_request_connection_reject_closes_before_any_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend open\n bind {{fe0}}\n tcp-request connection accept if {{ src 127.0.0.1 }}\n\
             tcp-request connection reject\n default_backend be\n\
             frontend closed\n bind {{fe1}}\n tcp-request connection reject if {{ src 127.0.0.0/8 }}\n default_backend be\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        assert_eq!(px.get("/").status, 200);
        let mut cl = px.client_to(1);
        cl.send_lossy(get("/").as_bytes());
        assert!(cl.read_final(false).is_err());
        assert!(cl.closed_within(Duration::from_secs(2)));
        assert_eq!(srv.counts().requests, 1);
    });
}

#[test]
fn tcp_request_content_reject_with_a_src_blacklist() {
    each(|t| {
        let srv = server("s1");
        let px = t.start_with(
            &format!(
                "{DEFAULTS}frontend fe\n bind {{fe0}}\n tcp-request inspect-delay 2s\n\
                 tcp-request content reject if {{ src -f {{dir}}/blacklist.lst }} {{ req.hdr(x-test) -m found }}\n\
                 tcp-request content accept if HTTP\n default_backend be\n\
                 backend be\n server s1 {}\n",
                srv.addr()
            ),
            &[("blacklist.lst", "192.0.2.0/24\n127.0.0.1\n")],
        );
        assert_eq!(px.get("/").status, 200);
        let mut cl = px.client();
        cl.send_lossy(get_with("/", &["X-Test: 1"]).as_bytes());
        assert!(cl.read_final(false).is_err(), "rejected without an answer");
        assert!(cl.closed_within(Duration::from_secs(2)));
        assert_eq!(srv.counts().requests, 1);
    });
}

fn three() -> [Running; 3] {
    [server("s1"), server("s2"), server("s3")]
}

fn balanced(srvs: &[Running], balance: &str) -> String {
    let mut s = format!("{DEFAULTS}listen px\n bind {{fe0}}\n balance {balance}\n");
    for (i, srv) in srvs.iter().enumerate() {
        s.push_str(&format!(" server s{} {}\n", i + 1, srv.addr()));
    }
    s
}

/// Sends `n` requests per key; returns the set of servers seen per key.
fn servers_per_key(px: &Px, keys: &[String], req: impl Fn(&str) -> String) -> Vec<Vec<String>> {
    keys.iter()
        .map(|k| {
            let mut seen: Vec<String> =
                (0..4).map(|_| px.send(req(k).as_bytes()).server().to_string()).collect();
            seen.sort();
            seen.dedup();
            seen
        })
        .collect()
}

fn check_sticky(per_key: &[Vec<String>]) {
    assert!(per_key.iter().all(|s| s.len() == 1 && !s[0].is_empty()), "a key moved: {per_key:?}");
    let mut all: Vec<&String> = per_key.iter().map(|s| &s[0]).collect();
    all.sort();
    all.dedup();
    assert!(all.len() >= 2, "20 keys all on one server: {per_key:?}");
}

#[test]
fn balance_uri_url_param_and_hdr_keep_a_key_on_one_server() {
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    each(|t| {
        let srvs = three();
        let px = t.start(&balanced(&srvs, "uri"));
        check_sticky(&servers_per_key(&px, &keys, |k| get(&format!("/{k}"))));
        let px = t.start(&balanced(&srvs, "url_param user"));
        check_sticky(&servers_per_key(&px, &keys, |k| get(&format!("/x?a=1&user={k}"))));
        let px = t.start(&balanced(&srvs, "hdr(X-User)"));
        check_sticky(&servers_per_key(&px, &keys, |k| get_with("/", &[&format!("X-User: {k}")])));
    });
}

#[test]
fn balance_hdr_use_domain_only_sends_the_hosts_of_one_domain_to_one_server() {
    let domains: Vec<String> = (0..8).map(|i| format!("site{i}")).collect();
    each(|t| {
        let srvs = three();
        let px = t.start(&balanced(&srvs, "hdr(Host) use_domain_only"));
        let per_domain: Vec<Vec<String>> = domains
            .iter()
            .map(|d| {
                let hosts =
                    [format!("www.{d}.com"), format!("{d}.com"), format!("img.cdn.{d}.org:8080")];
                let mut seen: Vec<String> = hosts
                    .iter()
                    .map(|h| {
                        let req =
                            format!("GET / HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n");
                        px.send(req.as_bytes()).server().to_string()
                    })
                    .collect();
                seen.dedup();
                seen
            })
            .collect();
        check_sticky(&per_domain);
        // Which server each domain lands on: the same hash and server map as HAProxy's.
        per_domain
    });
}

#[test]
fn cookie_insert_indirect_nocache_persists_on_the_named_server() {
    each(|t| {
        let (s1, s2) = (server("s1"), server("s2"));
        let px = t.start(&format!(
            "{DEFAULTS}listen px\n bind {{fe0}}\n balance roundrobin\n cookie SRV insert indirect nocache\n\
             server s1 {} cookie c1\n server s2 {} cookie c2\n",
            s1.addr(),
            s2.addr()
        ));
        let r = px.get("/");
        let first = r.server().to_string();
        let cookie = r.header("set-cookie").expect("inserted cookie").to_string();
        let want = if first == "s1" { "SRV=c1; path=/" } else { "SRV=c2; path=/" };
        assert_eq!(cookie, want);
        // nocache marks only cacheable answers private (this one has no freshness information).
        assert_eq!(r.header("cache-control"), None);
        let r = px.get("/?hdr=Cache-Control:max-age=60");
        assert_eq!(r.all("cache-control"), ["max-age=60", "private"], "nocache");
        for _ in 0..4 {
            let r = px.get_with("/echo", &["Cookie: SRV=c2; other=1"]);
            assert_eq!(r.server(), "s2");
            assert!(!r.has("set-cookie"), "indirect: the cookie is not sent again");
            assert_eq!(
                r.echoed().header("cookie"),
                Some("other=1"),
                "indirect: removed from the request"
            );
        }
        // An unknown value: balanced, a new cookie is set, and the stale one is not sent on.
        let r = px.get_with("/", &["Cookie: SRV=zz"]);
        assert!(r.header("set-cookie").is_some_and(|c| c.starts_with("SRV=c")));
        let r = px.get_with("/echo", &["Cookie: SRV=zz; other=2"]);
        assert_eq!(r.echoed().header("cookie"), Some("other=2"), "indirect: an unknown one too");
    });
}

#[test]
fn cookie_rewrite_and_prefix_modes() {
    each(|t| {
        let s1 = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}listen rw\n bind {{fe0}}\n cookie SRV rewrite\n server s1 {} cookie c1\n\
             listen pf\n bind {{fe1}}\n cookie JSESSIONID prefix\n server s1 {} cookie c1\n",
            s1.addr(),
            s1.addr()
        ));
        let r = px.get("/?setcookie=SRV=anything;%20path=/");
        assert_eq!(r.header("set-cookie"), Some("SRV=c1; path=/"));
        let r = px.client_to(1).request(get("/?setcookie=JSESSIONID=abc").as_bytes());
        assert_eq!(r.header("set-cookie"), Some("JSESSIONID=c1~abc"));
        let r =
            px.client_to(1).request(get_with("/echo", &["Cookie: JSESSIONID=c1~abc"]).as_bytes());
        assert_eq!(r.echoed().header("cookie"), Some("JSESSIONID=abc"));
    });
}

#[test]
fn a_backend_named_as_its_frontend_runs_its_own_rules() {
    // Not a `listen`: two sections that share a name, as many configurations have them.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend web\n bind {{fe0}}\n http-response set-header X-Front 1\n\
             default_backend web\n\
             backend web\n http-request set-header X-Seen-By-Backend yes\n\
             http-response set-header X-Back 1\n server s1 {}\n",
            srv.addr()
        ));
        let r = px.get("/");
        assert_eq!(r.status, 200);
        (r.header("x-front").map(str::to_string), r.header("x-back").map(str::to_string))
    });
}

#[test]
fn rules_of_a_named_defaults_section_run_before_the_proxys_own() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "defaults common\n mode http\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
             defaults front from common\n http-request set-var(txn.order) str(defaults)\n\
             http-request allow if {{ path /early }}\n\
             http-response set-header X-Defaults %[var(txn.order)]\n\
             frontend fe from front\n bind {{fe0}}\n\
             http-request set-var(txn.order) str(defaults-then-frontend) if {{ var(txn.order) -m str defaults }}\n\
             http-request deny\n default_backend be\n\
             backend be from common\n server s1 {}\n",
            srv.addr()
        ));
        // `allow` in the defaults' rules ends them all: the frontend's deny does not run.
        let early = px.get("/early");
        let late = px.get("/late");
        (early.status, early.header("x-defaults").map(str::to_string), late.status)
    });
}
