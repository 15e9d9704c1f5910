//! Features that landed without black-box tests: `tarpit`, `reject` and `silent-drop`, early
//! hints, `strict-mode`, `set-var-fmt` and variables across the transaction, more fetches (body,
//! cookies, names, date, rand...), `option http-ignore-probes`, `retry-on`, `return` and
//! `redirect` in `http-response`, `http-after-response` on the proxy's own answers and
//! `errorloc303`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::px::*;

fn one(srv: &Running, lines: &str) -> String {
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

pub const PAGE_500: &str = "<html><body><h1>500 Internal Server Error</h1>\nAn internal server error occurred.\n</body></html>\n";

/// Sends `raw` and expects no answer: the proxy closes (or goes silent) without a byte.
fn no_answer(px: &Px, raw: &[u8]) {
    let mut cl = px.client();
    cl.send_lossy(raw);
    let got = cl.read_for(Duration::from_secs(1));
    assert!(got.is_empty(), "{}: got {:?}", show(raw), show(&got));
}

#[test]
fn http_request_tarpit_answers_only_after_timeout_tarpit() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " timeout tarpit 400ms\n\
             http-request tarpit deny_status 429 if { path /slow-down }\n\
             http-request tarpit if { path_beg /trap }\n",
        ));
        let timed = |path: &str| {
            let start = Instant::now();
            let r = px.get(path);
            let took = start.elapsed();
            assert!(took >= Duration::from_millis(350), "{path}: answered after {took:?}");
            r
        };
        let r = timed("/trap/x");
        assert_eq!((r.status, r.text().as_str()), (500, PAGE_500));
        let slow = timed("/slow-down");
        assert_eq!(slow.status, 429);
        assert_eq!(px.get("/x").server(), "s1");
        assert_eq!(srv.counts().requests, 1, "tarpitted requests never reach the server");
        (
            r.summary(&["content-type", "content-length", "cache-control", "connection"]),
            slow.summary(&["content-type", "content-length", "connection"]),
        )
    });
}

#[test]
fn tarpit_without_timeout_tarpit_waits_timeout_connect() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "defaults\n mode http\n timeout connect 600ms\n timeout client 5s\n timeout server 5s\n\
             listen px\n bind {{fe0}}\n http-request tarpit\n server s1 {}\n",
            srv.addr()
        ));
        let start = Instant::now();
        let r = px.get("/");
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(550), "answered after {took:?}");
        assert_eq!(r.status, 500);
        assert_eq!(srv.counts().conns, 0);
    });
}

#[test]
fn http_request_reject_closes_without_an_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " http-request reject if { path /reject }\n"));
        let mut cl = px.client();
        cl.send_lossy(get("/reject").as_bytes());
        assert!(cl.read_final(false).is_err(), "no answer");
        assert!(cl.closed_within(Duration::from_secs(2)));
        assert!(cl.pending().is_empty(), "closed silently: {}", show(cl.pending()));
        assert_eq!(px.get("/").server(), "s1");
        assert_eq!(srv.counts().requests, 1, "nothing of the rejected request reached the server");
    });
}

#[test]
fn silent_drop_gives_no_answer_to_requests_and_responses() {
    // HAProxy tries to keep even the reset from leaving (TCP_REPAIR when privileged, else a
    // TTL of 1): the client may see silence rather than a close, hence "no byte within a
    // while" rather than "closed".
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request silent-drop if { path /drop }\n\
             http-response silent-drop if { status 404 }\n",
        ));
        no_answer(&px, get("/drop").as_bytes());
        assert_eq!(srv.counts().requests, 0, "the dropped request never reached the server");
        no_answer(&px, get("/?c=404").as_bytes());
        assert_eq!(srv.counts().requests, 1, "the server answered, the client got nothing");
        assert_eq!(px.get("/?c=200").status, 200);
    });
}

#[test]
fn consecutive_early_hint_rules_send_one_103_before_the_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             http-request early-hint Link \"</style.css>; rel=preload\"\n\
             http-request early-hint Link \"<%[path].js>; rel=preload\"\n\
             default_backend be\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        let r = px.get("/page");
        assert_eq!(r.status, 200);
        assert_eq!(r.interim.len(), 1, "one 103 for both rules: {:?}", r.interim);
        let hint = &r.interim[0];
        assert_eq!((hint.status, hint.reason.as_str()), (103, "Early Hints"));
        assert_eq!(hint.all("link"), ["</style.css>; rel=preload", "</page.js>; rel=preload"]);
        assert!(!r.has("link"), "the hints are not repeated in the final answer");
        assert_eq!(srv.counts().requests, 1);
        hint.headers.iter().map(|(n, v)| (n.to_lowercase(), v.clone())).collect::<Vec<_>>()
    });
}

#[test]
fn a_conditional_early_hint_rule_starts_a_new_103() {
    // Surprise: HAProxy merges an early-hint rule into the 103 started by the previous one only
    // when the rule has no condition; a conditional one ends the 103 before it and sends its
    // own. Without a match, no 103 at all.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request early-hint Link \"</a.css>; rel=preload\" if { path_beg /page }\n\
             http-request early-hint Link \"</b.js>; rel=preload\" if { path_beg /page }\n",
        ));
        let r = px.get("/page");
        assert_eq!(r.status, 200);
        let hints: Vec<(u16, Vec<&str>)> =
            r.interim.iter().map(|h| (h.status, h.all("link"))).collect();
        assert_eq!(
            hints,
            [(103, vec!["</a.css>; rel=preload"]), (103, vec!["</b.js>; rel=preload"])]
        );
        assert!(px.get("/other").interim.is_empty());
    });
}

#[test]
fn strict_mode_decides_whether_a_failed_rewrite_fails_the_request() {
    // An absolute URI with an empty authority is refused by HAProxy's `set-uri` (it cannot
    // update the Host header from it; RFC 9110 4.2.1: an http URI with an empty host is
    // invalid).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request strict-mode off if { req.hdr(x-lax) -m found }\n\
             http-request set-uri http:///echo if { req.hdr(x-rw) -m found }\n\
             http-request set-header X-Later 1\n",
        ));
        let strict = px.get_with("/echo?old", &["X-Rw: 1"]);
        assert_eq!((strict.status, strict.text().as_str()), (500, PAGE_500));
        assert_eq!(srv.counts().requests, 0);
        // strict-mode off: the transaction goes on. Surprise: HAProxy detects the failure after
        // the request line was replaced, so the new URI stays (only the Host update is lost).
        // Deliberate difference: Fulcrum's refused rewrite changes nothing at all.
        let lax = px.get_with("/echo?old", &["X-Rw: 1", "X-Lax: 1"]).echoed();
        let want = if t.is_haproxy() { "http:///echo" } else { "/echo?old" };
        assert_eq!(lax.target, want);
        assert_eq!(lax.header("host"), Some("t"));
        assert_eq!(lax.header("x-later"), Some("1"), "the following rules still run");
        strict.summary(&["content-type", "content-length", "cache-control", "connection"])
    });
}

#[test]
fn a_rewrite_overflowing_the_buffer_fails_unless_strict_mode_is_off() {
    // HAProxy's documented cause of rewrite failures: no room left in the buffer
    // (`tune.bufsize`, 16 kB). Three copies of a 5000-byte header do not fit. Surprise: a
    // failed response rewrite also gets 500 (not 502).
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request strict-mode off if { req.hdr(x-lax) -m found }\n\
             http-request set-header X-Big \"%[req.hdr(x-a)]%[req.hdr(x-a)]%[req.hdr(x-a)]\" if { req.hdr(x-a) -m found }\n\
             http-request set-header X-Later 1\n\
             http-response strict-mode off if { res.hdr(x-lax) -m found }\n\
             http-response set-header X-Big \"%[res.hdr(x-a)]%[res.hdr(x-a)]%[res.hdr(x-a)]\" if { res.hdr(x-a) -m found }\n\
             http-response set-header X-Later 1\n",
        ));
        let big = "a".repeat(5000);
        let a = format!("X-A: {big}");
        let r = px.get_with("/echo", &[&a]);
        assert_eq!((r.status, r.text().as_str()), (500, PAGE_500), "request rewrite");
        assert_eq!(srv.counts().requests, 0);
        let h = px.get_with("/echo", &[&a, "X-Lax: 1"]).echoed();
        assert_eq!((h.has("x-big"), h.header("x-later")), (false, Some("1")));
        let r = px.get(&format!("/?hdr=X-A:{big}"));
        assert_eq!((r.status, r.text().as_str()), (500, PAGE_500), "response rewrite");
        let r = px.get(&format!("/?hdr=X-A:{big}&hdr=X-Lax:1"));
        assert_eq!((r.status, r.has("x-big"), r.header("x-later")), (200, false, Some("1")));
    });
}

#[test]
fn tune_maxrewrite_is_kept_free_in_the_buffer_for_rewrites() {
    // A request head must fit in `tune.bufsize` minus `tune.maxrewrite` (at most half of it).
    each(|t| {
        let srv = server("s1");
        let mut seen = Vec::new();
        for reserve in ["1024", "6000", "12000"] {
            let px = t.start(&format!("global\n tune.maxrewrite {reserve}\n{}", one(&srv, "")));
            for size in [7000, 9000, 11000] {
                let h = format!("X-A: {}", "a".repeat(size));
                seen.push((reserve, size, px.get_with("/", &[&h]).status));
            }
        }
        seen
    });
}

#[test]
fn a_body_filling_the_buffer_leaves_tune_maxrewrite_for_header_rewrites() {
    // HAProxy reads a body until `tune.maxrewrite` bytes are left in the buffer: a message
    // whose body filled it has that much room for its rewrites, and no more (500 under
    // `strict-mode`, the default; silently skipped with `strict-mode off`).
    let v = "1".repeat(60);
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "global\n tune.bufsize 2048\n tune.maxrewrite 128\n{}",
            one(
                &srv,
                &format!(
                    " option http-buffer-request\n\
                     http-request set-header x-hdr1 {v}\n\
                     http-request set-header x-hdr2 {v} if {{ path /two }}\n\
                     http-request strict-mode off if {{ path /lax }}\n\
                     http-request set-header x-hdr3 {v} if {{ path /lax }}\n\
                     http-request set-var(txn.p) path\n\
                     http-response set-header x-res1 {v} if {{ var(txn.p) -m beg /r }}\n\
                     http-response set-header x-res2 {v} if {{ var(txn.p) -m beg /r2 }}\n"
                )
            )
        ));
        let body = "b".repeat(2000);
        let post = |path: &str| {
            let raw = format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\nConnection: close\r\n\r\n{body}");
            px.send(raw.as_bytes())
        };
        let one_fits = post("/echo");
        let lax = post("/lax?echo=head");
        let big = |path: &str| px.get(&format!("{path}?s=2000")).status;
        (
            (one_fits.status, post("/two").status),
            (lax.status, lax.echoed().has("x-hdr1"), lax.echoed().has("x-hdr3")),
            // Small bodies leave room: both fit.
            px.get_with("/two", &[]).status,
            (big("/r1"), big("/r2")),
        )
    });
}

#[test]
fn set_var_fmt_and_variables_live_across_request_and_response() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-var-fmt(txn.x) \"%[path]-%[method]\"\n\
             http-request set-header X-V %[var(txn.x)]\n\
             http-request set-var(txn.keep) str(kept)\n\
             http-request set-var(txn.gone) str(gone)\n\
             http-request unset-var(txn.gone)\n\
             http-response set-header X-V %[var(txn.x)]\n\
             http-response set-header X-Keep %[var(txn.keep)]\n\
             http-response set-header X-Gone yes if { var(txn.gone) -m found }\n\
             http-response set-var(txn.st) status\n\
             http-response unset-var(txn.keep) if { status 201 }\n\
             http-after-response set-header X-St %[var(txn.st)]\n\
             http-after-response set-header X-Kept yes if { var(txn.keep) -m found }\n",
        ));
        let r = px.get("/echo");
        assert_eq!(r.echoed().header("x-v"), Some("/echo-GET"));
        assert_eq!(
            (r.header("x-v"), r.header("x-keep"), r.header("x-gone")),
            (Some("/echo-GET"), Some("kept"), None)
        );
        assert_eq!((r.header("x-st"), r.header("x-kept")), (Some("200"), Some("yes")));
        let r = px.send(b"HEAD /?c=201 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        assert_eq!((r.status, r.header("x-v")), (201, Some("/-HEAD")));
        assert_eq!((r.header("x-st"), r.header("x-kept")), (Some("201"), None));
    });
}

#[test]
fn body_cookie_header_and_name_fetches() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n option http-buffer-request\n\
             http-request set-header X-Body %[req.body]\n\
             http-request set-header X-Body-Len %[req.body_len]\n\
             http-request set-header X-Body-Size %[req.body_size]\n\
             http-request set-header X-Param %[req.body_param(b)]\n\
             http-request set-header X-Base %[base]\n\
             http-request set-header X-Cook-Cnt %[req.cook_cnt(a)]\n\
             http-request set-header X-Cook-Val %[req.cook_val(a)]\n\
             http-request set-header X-Fhdr-Cnt %[req.fhdr_cnt(x-l)]\n\
             http-request set-header X-Hdr-Cnt %[req.hdr_cnt(x-l)]\n\
             http-request set-header X-Ssl %[ssl_fc]\n\
             http-request set-header X-Date %[date]\n\
             http-request set-header X-Rand %[rand(10)]\n\
             default_backend be\n\
             backend be\n\
             http-request set-header X-Names %[fe_name]/%[be_name]\n\
             http-response set-header X-Res-Cook %[res.cook(s)]\n\
             http-response set-header X-Res-Ver %[res.ver]\n\
             http-response set-header X-Srv %[srv_name]\n\
             http-response set-header X-Res-Fhdr %[res.fhdr(x-list)]\n\
             http-response set-header X-Res-Hdr %[res.hdr(x-list)]\n\
             server s1 {}\n",
            srv.addr()
        ));
        let body = "a=1&b=two&c=3";
        let raw = format!(
            "POST /form?echo=1&setcookie=s=abc;%20path=/&hdr=X-List:a,b HTTP/1.1\r\nHost: t\r\n\
             Cookie: a=5; b=x\r\nX-L: a,b\r\nCookie: a=7\r\nX-L: c\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let r = px.send(raw.as_bytes());
        assert_eq!(r.status, 200);
        let h = r.echoed();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
        let date: u64 = h.header("x-date").and_then(|d| d.parse().ok()).expect("date is a number");
        assert!(date.abs_diff(now) <= 60, "date {date}, now {now}");
        let rand: u64 = h.header("x-rand").and_then(|d| d.parse().ok()).expect("rand is a number");
        assert!(rand < 10, "rand(10) gave {rand}");
        let wanted = [
            ("x-body", body),
            ("x-body-len", "13"),
            ("x-body-size", "13"),
            ("x-param", "two"),
            ("x-base", "t/form"),
            ("x-cook-cnt", "2"),
            ("x-fhdr-cnt", "2"),
            ("x-hdr-cnt", "3"),
            ("x-names", "fe/be"),
            ("x-ssl", "0"),
        ];
        for (name, value) in wanted {
            assert_eq!(h.header(name), Some(value), "{name}");
        }
        let res = [
            ("x-res-cook", "abc"),
            ("x-res-ver", "1.1"),
            ("x-srv", "s1"),
            ("x-res-fhdr", "a,b"),
            ("x-res-hdr", "b"),
        ];
        for (name, value) in res {
            assert_eq!(r.header(name), Some(value), "{name}");
        }
        // Compared across targets: which occurrence cook_val takes.
        h.header("x-cook-val").map(String::from)
    });
}

/// A request whose header block, as HAProxy rebuilds it for `req.hdrs` (names in lower case,
/// one space after the colon), is 79 bytes long.
const HDRS_REQ: &[u8] = b"POST /echo HTTP/1.1\r\nHost: t\r\nCookie: a=5; b=x\r\nX-L: a,b\r\n\
    Cookie: a=7\r\nX-L: c\r\nContent-Length: 3\r\n\r\nabc";

#[test]
fn req_hdrs_is_the_whole_header_block_with_its_final_empty_line() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-var(txn.len) str(len) if { req.hdrs -m len 79 }\n\
             http-request set-var(txn.reg) str(reg) if { req.hdrs -i -m reg \"x-l: c\\r\\ncontent-length: 3\\r\\n\\r\\n\" }\n\
             http-request set-var(txn.sub) str(sub) if { req.hdrs -i -m sub \"x-l: a,b\\r\\n\" }\n\
             http-request set-header X-Acls %[var(txn.len)]/%[var(txn.reg)]/%[var(txn.sub)]\n",
        ));
        let h = px.send(HDRS_REQ).echoed();
        assert_eq!(h.header("x-acls"), Some("len/reg/sub"));
    });
}

#[test]
fn log_format_output_escapes_control_characters() {
    // A `%[...]` sample holding CR LF (here the header block) is written with the control
    // characters as `%0D%0A`: the set-header neither fails nor splits the header.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " http-request set-header X-Hdrs %[req.hdrs]\n"));
        let r = px.send(HDRS_REQ);
        assert_eq!(r.status, 200);
        let h = r.echoed();
        let got = h.header("x-hdrs").map(str::to_lowercase);
        let want = "host: t%0d%0acookie: a=5; b=x%0d%0ax-l: a,b%0d%0acookie: a=7%0d%0ax-l: c%0d%0a\
                    content-length: 3%0d%0a%0d%0a";
        assert_eq!(got.as_deref(), Some(want));
    });
}

#[test]
fn option_http_ignore_probes_closes_an_empty_connection_without_408() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend probes\n bind {{fe0}}\n option http-ignore-probes\n\
             timeout http-request 300ms\n default_backend be\n\
             frontend plain\n bind {{fe1}}\n timeout http-request 300ms\n default_backend be\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        let mut cl = px.client_to(0);
        assert!(cl.closed_within(Duration::from_secs(3)), "the empty connection is closed");
        assert!(cl.pending().is_empty(), "without a 408: {}", show(cl.pending()));
        // A started request still gets its 408.
        let mut cl = px.client_to(0);
        cl.send(b"GET / HT");
        assert_eq!(cl.read().status, 408);
        // Without the option: 408 to the empty connection.
        assert_eq!(px.client_to(1).read().status, 408);
        assert_eq!(srv.counts().conns, 0);
    });
}

/// `retries 2` and `retry-on <what>` on one server.
fn retrying(srv: &Running, on: &str, extra: &str) -> String {
    one(srv, &format!(" retries 2\n retry-on {on}\n{extra}"))
}

#[test]
fn retry_on_503_resends_the_request_until_the_server_answers_or_the_retries_run_out() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&retrying(&srv, "503", ""));
        // fail=n: only the first n requests with this target get the 503.
        let r = px.get("/?c=503&fail=2&id=a");
        assert_eq!((r.status, r.server()), (200, "s1"));
        assert_eq!(srv.counts().requests, 3, "two retries");
        let r = px.get("/?c=503&fail=5&id=b");
        assert_eq!(r.status, 503, "the server's last answer once the retries are spent");
        assert_eq!(srv.counts().requests, 6, "1 + 2 retries");
        let r = px.get("/?c=500&fail=1&id=c");
        assert_eq!(r.status, 500, "other statuses are not retried");
        assert_eq!(srv.counts().requests, 7);
        (r.status, srv.counts().requests)
    });
}

#[test]
fn retry_on_response_timeout_resends_after_timeout_server() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&retrying(&srv, "response-timeout", " timeout server 300ms\n"));
        let r = px.get("/?t=1500&fail=1&id=a");
        assert_eq!((r.status, r.server()), (200, "s1"));
        assert_eq!(srv.counts().requests, 2);
    });
}

#[test]
fn retry_on_junk_response_resends_after_an_invalid_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}listen retry\n bind {{fe0}}\n retries 2\n retry-on junk-response\n server s1 {}\n\
             listen plain\n bind {{fe1}}\n retries 2\n server s1 {}\n",
            srv.addr(),
            srv.addr()
        ));
        let r = px.get("/?bad=garbage&fail=1&id=a");
        assert_eq!((r.status, r.server()), (200, "s1"));
        assert_eq!(srv.counts().requests, 2);
        // Without retry-on, the invalid answer makes a 502 at once.
        let r = px.client_to(1).request(get("/?bad=garbage&fail=1&id=b").as_bytes());
        assert_eq!(r.status, 502);
        assert_eq!(srv.counts().requests, 3);
    });
}

#[test]
fn http_response_return_and_redirect_replace_the_servers_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-response return status 299 content-type text/plain string ok if { status 404 }\n\
             http-response redirect location /moved if { status 410 }\n",
        ));
        let r = px.get("/?c=404&hdr=X-From:server");
        assert_eq!((r.status, r.text().as_str()), (299, "ok"));
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert!(!r.has("x-from"), "nothing of the server's answer is kept");
        let moved = px.get("/?c=410");
        assert_eq!((moved.status, moved.header("location")), (302, Some("/moved")));
        assert_eq!(moved.header("cache-control"), Some("no-cache"), "as http-request redirect");
        assert_eq!(px.get("/?c=200").status, 200);
        assert_eq!(srv.counts().requests, 3);
        (
            r.summary(&["content-type", "content-length", "connection"]),
            moved.summary(&["location", "content-length", "cache-control", "connection"]),
        )
    });
}

#[test]
fn http_after_response_applies_to_every_kind_of_answer() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             http-request deny if {{ path /deny }}\n\
             http-request redirect location /new if {{ path /old }}\n\
             http-request return status 200 content-type text/plain string hi if {{ path /ret }}\n\
             http-after-response set-header X-After 1\n\
             use_backend be if {{ path /ok }}\n\
             backend be\n server s1 {}\n",
            srv.addr()
        ));
        let mut seen = Vec::new();
        for (path, status) in
            [("/ok", 200), ("/deny", 403), ("/none", 503), ("/old", 302), ("/ret", 200)]
        {
            let r = px.get(path);
            assert_eq!((r.status, r.header("x-after")), (status, Some("1")), "{path}");
            seen.push(r.summary(&["x-after", "content-length", "connection"]));
        }
        seen
    });
}

#[test]
fn errorloc303_answers_303_with_the_location() {
    each(|t| {
        let px = t.start(&listen(
            " errorloc303 503 http://x/y\n http-after-response set-header X-After 1\n",
        ));
        let r = px.get("/");
        assert_eq!((r.status, r.header("location")), (303, Some("http://x/y")));
        assert_eq!(r.header("x-after"), Some("1"));
        r.summary(&["location", "content-length", "cache-control", "connection"])
    });
}

#[test]
fn sess_variables_live_across_a_connections_requests_and_proc_ones_across_connections() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-var(sess.first) path if !{ var(sess.first) -m found }\n\
             http-request set-var(proc.last) path if { path_beg /set }\n\
             http-response set-header X-First %[var(sess.first)]\n\
             http-response set-header X-Proc %[var(proc.last)]\n",
        ));
        let mut cl = px.client();
        let a = cl.request(b"GET /set/one HTTP/1.1\r\nHost: t\r\n\r\n");
        let b = cl.request(b"GET /two HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            (a.header("x-first"), b.header("x-first")),
            (Some("/set/one"), Some("/set/one"))
        );
        // Another connection: its own session variables, the process ones shared.
        let c = px.get("/three");
        assert_eq!((c.header("x-first"), c.header("x-proc")), (Some("/three"), Some("/set/one")));
    });
}

#[test]
fn converters_hash_encode_slice_and_count_as_haproxy_does() {
    each(|t| {
        let srv = server("s1");
        let convs = [
            "str(hello),length",
            "str(hello),bytes(1,3)",
            "str(hello),bytes(9)",
            "str(hello),base64",
            "str(aGVsbG8=),b64dec",
            "bin(fbff00),ub64enc",
            "str(-_8),ub64dec,hex",
            "str(a%20b+c),url_dec",
            "str(a%20b+c),url_dec(1)",
            "str(hello),sha1,hex",
            "str(hello),sha2(384),hex",
            "str(hello),crc32",
            "str(hello),crc32(1)",
            "str(hello),crc32c",
            "str(hello),djb2(1)",
            "str(hello),sdbm",
            "str(hello),wt6(1)",
            "str(hello),xxh32(5)",
            "str(hello),xxh64",
            "str(hello),xxh3(1)",
            "int(7),add(5),mul(3),sub(4),div(2),mod(7)",
            "int(12),and(10),or(1),xor(3)",
            "int(7),div(0)",
            "int(5),neg",
            "int(5),cpl",
            "int(3),odd",
            "int(0),bool",
            "int(0),not",
            "str(1f),hex2i",
            "var(txn.pq)",
            "srv_id",
            "http_first_req",
        ];
        let mut lines = String::from(" http-request set-var(txn.pq) pathq\n");
        for (i, c) in convs.iter().enumerate() {
            lines.push_str(&format!(" http-response set-header X-C{i} \"%[{c}]\"\n"));
        }
        let px = t.start(&one(&srv, &lines));
        let r = px.get("/p/a?q=1");
        convs
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = {}", r.header(&format!("x-c{i}")).unwrap_or("<none>")))
            .collect::<Vec<_>>()
    });
}

#[test]
fn set_pathq_and_replace_pathq_rewrite_path_and_query_together() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request set-pathq /echo?new=1 if { path_beg /set }\n\
             http-request replace-pathq ^/rep(.*)\\?(.*)$ /echo?p=\\1&\\2 if { path_beg /rep }\n\
             http-request set-header X-PathQ %[pathq]\n",
        ));
        let mut seen = Vec::new();
        for raw in [
            "GET /set/a?b=2 HTTP/1.1\r\nHost: t\r\n\r\n",
            "GET http://t/set/a?b=2 HTTP/1.1\r\nHost: t\r\n\r\n",
            "GET /rep/z?y=3 HTTP/1.1\r\nHost: t\r\n\r\n",
            "GET http://t/rep/z?y=3 HTTP/1.1\r\nHost: t\r\n\r\n",
        ] {
            let h = px.send(raw.as_bytes()).echoed();
            seen.push((h.target.clone(), h.header("x-pathq").map(str::to_string)));
        }
        seen
    });
}

#[test]
fn te_reaches_the_server_as_trailers_or_not_at_all() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, ""));
        ["trailers, gzip", "gzip", "trailers;q=0.5", "TRAILERS"]
            .iter()
            .map(|te| {
                let h = px.get_with("/echo", &[&format!("TE: {te}")]).echoed();
                h.header("te").map(str::to_string)
            })
            .collect::<Vec<_>>()
    });
}

#[test]
fn uuid_gives_a_fresh_version_4_id_and_unique_id_keeps_one_per_request() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " unique-id-format ID-%[uuid]\n http-response set-header X-U %[uuid]\n\
             http-response set-header X-A %[unique-id]\n http-response set-header X-B %[unique-id]\n",
        ));
        let (r1, r2) = (px.get("/"), px.get("/"));
        let shape = |u: &str| {
            let parts: Vec<usize> = u.split('-').map(str::len).collect();
            let hex =
                u.bytes().all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            (parts, hex, u.as_bytes().get(14).copied().map(char::from))
        };
        let u1 = r1.header("x-u").unwrap_or_default().to_string();
        assert_ne!(Some(u1.as_str()), r2.header("x-u"), "a new one each time");
        assert_eq!(r1.header("x-a"), r1.header("x-b"), "one unique id per request");
        assert_ne!(r1.header("x-a"), r2.header("x-a"));
        shape(&u1)
    });
}

#[test]
fn del_header_matches_names_by_string_prefix_suffix_substring_or_regex() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " http-request del-header x-str1\n http-request del-header X-STR2 -m str\n\
             http-request del-header x-beg -m beg\n http-request del-header end1 -m end\n\
             http-request del-header sub -m sub\n http-request del-header ^x.reg.$ -m reg\n",
        ));
        let sent = [
            "X-Always: 1",
            "X-Str1: 1",
            "x-str2: 1",
            "X-Beg1: 1",
            "x-begx: 1",
            "X-End1: 1",
            "X-End2: 1",
            "X-Sub1: 1",
            "Y-SUB2: 1",
            "X-Reg1: 1",
            "X-Reg12: 1",
        ];
        let h = px.get_with("/echo", &sent).echoed();
        let mut kept: Vec<String> = h.headers.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        kept.sort();
        kept
    });
}

#[test]
fn global_set_var_variable_arguments_and_defaults_and_set_var_on_the_cli() {
    let cfg = format!(
        "global\n stats socket {{dir}}/api.sock level admin\n\
         set-var proc.a int(12)\n set-var proc.b var(proc.none,60),div(proc.a)\n\
         set-var-fmt proc.s \"x-%[var(proc.a)]-%[str(y)]\"\n\
         {DEFAULTS}frontend fe\n bind {{fe0}}\n\
         http-request set-var(txn.n) int(30),sub(proc.b),mul(proc.a)\n\
         http-request return status 200 hdr x \"%[var(proc.a)] %[var(proc.b)] %[var(proc.s)] %[var(txn.n)] %[var(txn.none,dflt)] %[int(1),add(txn.none)]\"\n"
    );
    each(|t| {
        let px = t.start(&cfg);
        let sock = px.dir.join("api.sock");
        assert!(eventually(Duration::from_secs(5), || {
            std::os::unix::net::UnixStream::connect(&sock).is_ok()
        }));
        let first = px.get("/").header("x").map(String::from);
        assert_eq!(first.as_deref(), Some("12 5 x-12-y 300 dflt"));
        let refused = crate::harness::api(&sock, "set var proc.a int(3)");
        let set = crate::harness::api(
            &sock,
            "experimental-mode on; set var proc.a int(3); set var proc.s fmt %[var(proc.s),upper]",
        );
        let then = px.get("/").header("x").map(String::from);
        let got = crate::harness::api(&sock, "get var proc.a");
        (first, refused, set, then, got)
    });
}

#[test]
fn http_restrict_req_hdr_names_deletes_or_refuses_odd_header_names() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         use_backend del if {{ path_beg /del }}\n use_backend rej if {{ path_beg /rej }}\n\
         default_backend keep\n\
         backend keep\n server s1 {a}\n\
         backend del\n option http-restrict-req-hdr-names delete\n server s1 {a}\n\
         backend rej\n option http-restrict-req-hdr-names reject\n server s1 {a}\n",
        a = srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let hdrs = ["X-my_hdr: 1", "X.dot: 2", "X-fine-9: 3"];
        let names = |path: &str| {
            let r = px.get_with(path, &hdrs);
            let seen: Vec<String> = if r.status == 200 {
                r.echoed()
                    .names()
                    .into_iter()
                    .filter(|n| n.starts_with('x'))
                    .map(str::to_string)
                    .collect()
            } else {
                Vec::new()
            };
            (r.status, seen)
        };
        [names("/?echo=head"), names("/del?echo=head"), names("/rej?echo=head"), {
            // Names made only of letters, digits and '-' pass even in reject mode.
            let r = px.get_with("/rej?echo=head", &["X-fine-9: 3"]);
            (r.status, Vec::new())
        }]
    });
}

#[test]
fn stats_page_scope_in_the_url_keeps_the_proxies_whose_name_contains_it() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n stats enable\n stats uri /stats\n default_backend app1\n\
         backend app1\n server s1 {a}\n backend App2\n server s1 {a}\n backend other\n server s1 {a}\n",
        a = srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let rows = |q: &str| {
            let r = px.get(&format!("/stats;csv{q}"));
            let mut seen: Vec<String> = r
                .text()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
                .collect();
            seen.sort();
            (r.status, seen)
        };
        [rows(""), rows(";scope=app"), rows("&scope=OTHER"), rows(";scope=bad<char")]
    });
}

#[test]
fn so_name_is_the_name_of_the_bind_line_that_accepted_the_connection() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}} name first\n bind {{fe1}}\n\
         http-request return status 200 hdr so-name \"<%[so_name]>\"\n\
         default_backend be\n backend be\n server s1 {}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let named = px.get("/");
        let mut cl = px.client_to(1);
        let unnamed = cl.request(get("/").as_bytes());
        (named.header("so-name").map(str::to_string), unnamed.header("so-name").map(str::to_string))
    });
}

#[test]
fn abortonclose_drops_a_request_whose_client_left_while_waiting_for_the_answer() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\n\
             backend be\n option abortonclose\n server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        let mut cl = px.client();
        // A keep-alive request (HAProxy 2.6 watches only such a client while it waits).
        cl.send(b"GET /?t=2000 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(eventually(Duration::from_secs(2), || srv.counts().conns >= 1));
        drop(cl);
        // The server connection is closed long before the server would have answered.
        eventually(Duration::from_millis(1500), || srv.counts().closed >= 1)
    });
}

#[test]
fn last_rule_line_names_the_final_rule_and_a_replaced_response_keeps_the_connection() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         tcp-request content accept if {{ path /tcp }}\n\
         http-request set-var(txn.p) path\n\
         http-request allow if {{ path /allow }}\n\
         http-request deny if {{ path /deny }}\n\
         http-response deny if {{ var(txn.p) -m str /rdeny }}\n\
         http-response redirect location /x if {{ var(txn.p) -m str /rred }}\n\
         http-after-response set-header x-lr \"%[last_rule_line]\"\n\
         default_backend be\n backend be\n server s1 {}\n",
        srv.addr()
    );
    let base = cfg.lines().position(|l| l.starts_with("tcp-request")).expect("line") as i64 + 1;
    each(|t| {
        let px = t.start(&cfg);
        let mut cl = px.client();
        ["/tcp", "/none", "/allow", "/deny", "/rdeny", "/rred", "/none"].map(|p| {
            let r = cl.request(format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            // Relative to the first rule, so that both proxies' files compare.
            let lr = r.header("x-lr").and_then(|v| v.parse::<i64>().ok()).map(|n| n - base);
            (r.status, lr)
        })
    });
}

#[test]
fn map_regm_puts_the_regex_groups_in_the_value() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         http-request return status 200 hdr x-m \"%[req.hdr(x-host),map_regm({{dir}}/hosts.map,none)]\"\n\
         default_backend be\n backend be\n server s1 {}\n",
        srv.addr()
    );
    let map = "^([a-z]+)\\.example\\.(org|net)$ \\2-\\1\n^www\\.(.*)$ www:\\1:\\3:\n";
    each(|t| {
        let px = t.start_with(&cfg, &[("hosts.map", map)]);
        let got = ["shop.example.org", "www.example.com", "other"].map(|h| {
            px.get_with("/", &[&format!("X-Host: {h}")]).header("x-m").map(str::to_string)
        });
        assert_eq!(got[0].as_deref(), Some("org-shop"));
        got
    });
}

/// A one-thread SOCKS4 proxy that answers HTTP itself once a CONNECT is granted: the body
/// says which destination and user id it was asked for. Serves `n` connections.
fn socks4_answering(n: usize) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let t = std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
            let mut req = [0u8; 16];
            if s.read_exact(&mut req).is_err() {
                continue;
            }
            let _ = s.write_all(b"\x00\x5a\x00\x00\x00\x00\x00\x00");
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                head.push(b[0]);
            }
            let port = u16::from_be_bytes([req[2], req[3]]);
            let ip = std::net::Ipv4Addr::new(req[4], req[5], req[6], req[7]);
            let body =
                format!("{}:{}:{}:{}", req[0], ip, port, String::from_utf8_lossy(&req[8..15]));
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    (addr, t)
}

#[test]
fn socks4_servers_are_reached_through_their_proxy() {
    each(|t| {
        let (proxy, thread) = socks4_answering(1);
        let cfg = format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\n\
             backend be\n server s1 192.0.2.9:8081 socks4 {proxy}\n"
        );
        let px = t.start(&cfg);
        let r = px.get("/");
        let _ = thread.join();
        assert_eq!(r.text(), "4:192.0.2.9:8081:HAProxy");
        (r.status, r.text())
    });
}

/// A one-thread server that answers each of `n` connections with a head announcing 10 body
/// bytes, then sends `first` of them at once and the rest after `pause` (never, when `None`).
fn slow_body(n: usize, first: usize, pause: Option<Duration>) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut b = [0u8; 4096];
            let _ = s.read(&mut b);
            let body = b"0123456789";
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
            let _ = s.write_all(&body[..first]);
            match pause {
                Some(p) => {
                    std::thread::sleep(p);
                    let _ = s.write_all(&body[first..]);
                }
                None => std::thread::sleep(Duration::from_secs(2)),
            }
        }
    });
    addr
}

#[test]
fn http_response_wait_for_body_waits_or_answers_504() {
    each(|t| {
        let stalled = slow_body(1, 5, None);
        let late = slow_body(1, 5, Some(Duration::from_millis(100)));
        let cfg = format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n use_backend late if {{ path /late }}\n\
             default_backend stalled\n\
             backend stalled\n http-response wait-for-body time 300ms\n server s1 {stalled}\n\
             backend late\n http-response wait-for-body time 2s\n\
             http-response set-header x-len \"%[res.hdr(content-length)]\"\n server s1 {late}\n"
        );
        let px = t.start(&cfg);
        let started = Instant::now();
        let r = px.get("/");
        let timed_out = (r.status, started.elapsed() >= Duration::from_millis(250));
        let r = px.get("/late");
        (timed_out, r.status, r.text(), r.header("x-len").map(str::to_string))
    });
}

#[test]
fn pcre_only_regexes_ignore_empty_redirects_and_host_converters() {
    // Look-ahead, look-behind and back-references run as HAProxy's PCRE2 runs them; `\d` in a
    // converter's argument reaches the regex; `ignore-empty` skips a redirect to nothing;
    // `host_only` / `port_only` split a Host value.
    let srv = server("s1");
    let px_cfg = one(
        &srv,
        " acl old path_reg ^/api(?!/v2)\n\
         http-request deny deny_status 410 if old\n\
         http-request return status 200 hdr x-twin %[req.hdr(x-pair),regsub(\\\"^(\\\\w+)-\\\\1$\\\",twin)] \
         if { path_beg /twin }\n\
         http-request redirect location %[path,map_str({dir}/moved.map)] code 301 ignore-empty\n\
         http-request set-var(txn.lb) str(yes) if { path_reg (?<=/s)how }\n\
         http-request return status 200 hdr x-host %[req.hdr(host),host_only] \
         hdr x-port %[req.hdr(host),port_only] hdr x-nodigits %[req.hdr(host),regsub(:\\d+$,,)] \
         hdr x-lb %[var(txn.lb)] if { path_beg /show }\n",
    );
    each(|t| {
        let px = t.start_with(&px_cfg, &[("moved.map", "/old /new\n")]);
        let show = px.send(
            b"GET /show/p/p HTTP/1.1\r\nHost: WWW.Example.com:8080\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(
            [
                show.header("x-host"),
                show.header("x-port"),
                show.header("x-nodigits"),
                show.header("x-lb")
            ],
            [Some("www.example.com"), Some("8080"), Some("WWW.Example.com"), Some("yes")]
        );
        assert_eq!((px.get("/api/v1").status, px.get("/api/v2").status), (410, 200));
        assert_eq!(px.get_with("/twin", &["X-Pair: cd-cd"]).header("x-twin"), Some("twin"));
        assert_eq!(px.get("/old").header("location"), Some("/new"));
        (
            (px.get("/api/v1/x").status, px.get("/api/v2/x").status),
            (
                px.get_with("/twin", &["X-Pair: ab-ab"]).header("x-twin").map(str::to_string),
                px.get_with("/twin", &["X-Pair: ab-ba"]).header("x-twin").map(str::to_string),
            ),
            (px.get("/old").status, px.get("/old").header("location").map(str::to_string)),
            (
                show.header("x-host").map(str::to_string),
                show.header("x-port").map(str::to_string),
                show.header("x-nodigits").map(str::to_string),
                show.header("x-lb").map(str::to_string),
            ),
        )
    });
}
