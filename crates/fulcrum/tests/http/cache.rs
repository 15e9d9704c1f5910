//! The HTTP cache (issue 38 §3) beside HAProxy 2.6: which requests are looked up, which
//! responses are stored, what a hit answers (`Age`, `304`, HEAD), what invalidates an entry,
//! `Vary` with `process-vary`, `max-object-size` and `total-max-size`, the fetches, the log's
//! `<CACHE>`, `show cache` and the counters, HTTP/2 clients, compression of hits, and the
//! configuration errors.
//!
//! A request *reached the server* when the test server's request count moved: a hit leaves it
//! alone. A store completes as the response's last bytes pass, which the client may see first:
//! before a request that must hit, the tests wait (bounded) until `show cache` lists the
//! entries stored so far, through the runtime API socket every configuration here has. (That
//! socket also keeps the `explain` cross-check off these proxies: `explain` knows no cache.)
//!
//! Where Fulcrum deliberately differs: a hit on a response the server sent chunked comes with
//! a `content-length` (only bodies are compared then); `show cache`'s addresses, hashes and
//! `available blocks` (HAProxy counts the blocks of entries nobody reads as available) are
//! compared by shape only.

use std::time::Duration;

use crate::compression::inflate;
use crate::harness::{api, scratch, BIN};
use crate::px::*;

/// The cache section's size line most tests use.
const SIZE: &str = " total-max-size 4\n";

/// A response the cache stores (with `?s=` and a path of the test's).
const FRESH: &str = "hdr=Cache-Control:max-age=30";

/// A proxy `px` with the cache `c` (`cache`: its lines) used and stored by `px`, `lines`
/// before its server `s1`; a runtime API socket at `{dir}/api.sock`.
fn config(srv: &Running, cache: &str, lines: &str) -> String {
    format!(
        "global\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}cache c\n{cache}\
         listen px\n bind {{fe0}}\n http-request cache-use c\n http-response cache-store c\n\
         {lines} server s1 {}\n",
        srv.addr()
    )
}

/// Sends `raw` on a new connection: the answer, and whether the request reached the server.
fn via(px: &Px, srv: &Running, raw: &str) -> (Resp, bool) {
    let before = srv.counts().requests;
    let r = px.send(raw.as_bytes());
    (r, srv.counts().requests != before)
}

/// `GET path` on a new connection: the answer, and whether it reached the server.
fn fetch(px: &Px, srv: &Running, path: &str, headers: &[&str]) -> (Resp, bool) {
    via(px, srv, &get_with(path, headers))
}

/// What `show cache` says.
#[derive(Debug)]
struct Shown {
    text: String,
    /// The cache line's `available blocks`.
    available: i64,
    /// Each entry's `size` and `blocks`.
    entries: Vec<(u64, u64)>,
}

/// The number after `key` in `line`, up to the first character that is not part of it.
fn number_after(line: &str, key: &str) -> Option<i64> {
    let rest = &line[line.find(key)? + key.len()..];
    let end = rest.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// `show cache` on the proxy's runtime API socket, read.
fn show_cache(px: &Px) -> Shown {
    let text = api(&px.dir.join("api.sock"), "show cache");
    let mut shown = Shown { text: text.clone(), available: i64::MIN, entries: Vec::new() };
    for line in text.lines() {
        if line.contains("(shctx:") {
            shown.available = number_after(line, "available blocks:").unwrap_or(i64::MIN);
        } else if line.contains(" hash:") {
            let size = number_after(line, "size:").expect("an entry's size") as u64;
            let blocks = number_after(line, "(").expect("an entry's blocks") as u64;
            shown.entries.push((size, blocks));
        }
    }
    shown
}

/// Waits (at most 5 s) until `show cache` lists at least `n` entries; how many it lists.
fn stored(px: &Px, n: usize) -> usize {
    eventually(Duration::from_secs(5), || show_cache(px).entries.len() >= n);
    show_cache(px).entries.len()
}

/// `line` with every number (decimal, or hexadecimal after `0x`) made `N`: the shape of a
/// `show cache` line, whose addresses and hashes differ from run to run.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                chars.next();
            }
            out.push_str("0xN");
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

/// The test server's own answer to `GET path` (no proxy between).
fn direct(srv: &Running, path: &str) -> Resp {
    Client::connect(srv.addr()).request(get(path).as_bytes())
}

/// What the cache stores and what not: each response fetched twice; stored ones come back from
/// the cache with `Age`, the same body and the same fields.
#[test]
fn storable_responses_are_stored_and_hits_come_with_age() {
    let lm = "hdr=Last-Modified:Sun,%2006%20Nov%201994%2008:49:37%20GMT";
    let future = "hdr=Expires:Fri,%2001%20Jan%202100%2000:00:00%20GMT";
    let past = "hdr=Expires:Sun,%2006%20Nov%201994%2008:49:37%20GMT";
    let cases: &[(&str, String, bool)] = &[
        ("max-age", FRESH.into(), true),
        ("s-maxage", "hdr=Cache-Control:s-maxage=30".into(), true),
        ("expires ahead", future.into(), true),
        ("etag only", "hdr=ETag:%22v1%22".into(), true),
        ("last-modified only", lm.into(), true),
        ("age below max-age", format!("{FRESH}&hdr=Age:10"), true),
        ("nothing", String::new(), false),
        ("expired", past.into(), false),
        ("private", "hdr=Cache-Control:private,%20max-age=30".into(), false),
        ("no-store", "hdr=Cache-Control:no-store,%20max-age=30".into(), false),
        ("no-cache", "hdr=Cache-Control:no-cache,%20max-age=30".into(), false),
        ("404", format!("c=404&{FRESH}"), false),
        ("age above max-age", format!("{FRESH}&hdr=Age:100"), false),
        ("set-cookie", format!("{FRESH}&hdr=Set-Cookie:a=b"), true),
        ("pragma: no-cache", format!("{FRESH}&hdr=Pragma:no-cache"), false),
    ];
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let path = |i: usize| format!("/{i}?s=100&{}", cases[i].1);
        let mut first = Vec::new();
        for (i, (name, ..)) in cases.iter().enumerate() {
            let (r, reached) = fetch(&px, &srv, &path(i), &[]);
            assert!(reached, "{name}: the first request reaches the server");
            assert_eq!(r.body.len(), 100, "{name}");
            first.push(r);
        }
        let want = cases.iter().filter(|c| c.2).count();
        assert_eq!(stored(&px, want), want, "entries stored:\n{}", show_cache(&px).text);
        let mut seen = Vec::new();
        for (i, (name, _, storable)) in cases.iter().enumerate() {
            let (r, reached) = fetch(&px, &srv, &path(i), &[]);
            assert_eq!(!reached, *storable, "{name}: a hit (the server not reached)");
            assert_eq!(r.status, first[i].status, "{name}");
            assert_eq!(r.body, first[i].body, "{name}: the same body");
            let age: Option<i64> = r.header("age").map(|a| a.parse().expect("a number"));
            if *storable {
                let at_least = if name.starts_with("age") { 10 } else { 0 };
                assert!(
                    age.is_some_and(|a| (at_least..at_least + 3).contains(&a)),
                    "{name}: age {age:?}"
                );
            } else {
                let sent = first[i].header("age").map(|a| a.parse().expect("a number"));
                assert_eq!(age, sent, "{name}: a miss has the server's Age, if any");
            }
            let names: Vec<String> = r.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
            seen.push((name.to_string(), !reached, names));
        }
        seen
    });
}

/// HTTP/1.0, `Authorization`, `Cache-Control: no-cache|max-age=0` and `Pragma: no-cache` in
/// the request, and methods other than GET and HEAD are not looked up: they reach the server
/// though the entry is there (and still is for the next GET).
#[test]
fn requests_the_cache_ignores_reach_the_server() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!("/r?s=100&{FRESH}");
        assert!(fetch(&px, &srv, &p, &[]).1, "the first request reaches the server");
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        assert!(!fetch(&px, &srv, &p, &[]).1, "then a hit");
        let cases = [
            ("http/1.0", format!("GET {p} HTTP/1.0\r\nHost: t\r\n\r\n")),
            ("authorization", get_with(&p, &["Authorization: Basic eDp5"])),
            ("cache-control: no-cache", get_with(&p, &["Cache-Control: no-cache"])),
            ("cache-control: max-age=0", get_with(&p, &["Cache-Control: max-age=0"])),
            ("pragma: no-cache", get_with(&p, &["Pragma: no-cache"])),
            ("options", format!("OPTIONS {p} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")),
        ];
        let mut seen = Vec::new();
        for (name, raw) in &cases {
            let (r, reached) = via(&px, &srv, raw);
            assert!(reached, "{name}: not looked up");
            assert_eq!(r.status, 200, "{name}");
            assert_eq!(r.header("age"), None, "{name}");
            seen.push((name.to_string(), reached));
        }
        let (hit, reached) = fetch(&px, &srv, &p, &[]);
        assert!(!reached, "the entry is still there");
        assert!(hit.has("age"));
        // (A POST reaches the server too; it also invalidates the entry, see below.)
        let post = format!(
            "POST {p} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let (r, reached) = via(&px, &srv, &post);
        assert!(reached && r.status == 200, "POST: {reached} {}", r.status);
        seen.push(("post".into(), reached));
        seen
    });
}

/// A hit to a conditional request: `304 Not Modified`, without a body, for an `If-None-Match`
/// weakly equal to the entry's ETag or `*`, or an `If-Modified-Since` no earlier than its
/// `Last-Modified`; the entry otherwise.
#[test]
fn conditional_requests_on_a_hit_get_304_or_the_entry() {
    let lm = "Sun, 06 Nov 1994 08:49:37 GMT";
    let cases = [
        ("etag", "If-None-Match: \"v1\"", 304),
        ("weak etag", "If-None-Match: W/\"v1\"", 304),
        ("star", "If-None-Match: *", 304),
        ("one of two", "If-None-Match: \"x\", \"v1\"", 304),
        ("another etag", "If-None-Match: \"v2\"", 200),
        ("same date", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT", 304),
        ("later date", "If-Modified-Since: Mon, 07 Nov 1994 08:49:37 GMT", 304),
        ("earlier date", "If-Modified-Since: Sat, 05 Nov 1994 08:49:37 GMT", 200),
        (
            "etag wins over the date",
            "If-None-Match: \"v2\"\r\nIf-Modified-Since: Mon, 07 Nov 1994 08:49:37 GMT",
            200,
        ),
    ];
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!(
            "/c?s=100&{FRESH}&hdr=ETag:%22v1%22&hdr=Last-Modified:{}",
            lm.replace(' ', "%20")
        );
        let (stored_resp, reached) = fetch(&px, &srv, &p, &[]);
        assert!(reached);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let mut seen = Vec::new();
        for (name, header, status) in cases {
            let before = srv.counts().requests;
            let mut c = px.client();
            let r = c.request(get_with(&p, &[header]).as_bytes());
            // (`Connection: close`: whatever else comes is read until the proxy closes.)
            let more = c.read_for(Duration::from_secs(2));
            assert_eq!(srv.counts().requests, before, "{name}: a hit");
            assert_eq!(r.status, status, "{name}");
            assert!(r.has("age"), "{name}: from the cache");
            match status {
                304 => assert!(r.body.is_empty() && more.is_empty(), "{name}: no body"),
                _ => assert_eq!(r.body, stored_resp.body, "{name}"),
            }
            let names: Vec<String> = r.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
            seen.push((name, r.summary(&["etag", "last-modified", "cache-control"]), names));
        }
        seen
    });
}

/// A HEAD request is answered from the entry a GET stored: its fields, no body.
#[test]
fn head_is_answered_from_an_entry_a_get_stored() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!("/h?s=1000&{FRESH}");
        let (full, reached) = fetch(&px, &srv, &p, &[]);
        assert!(reached);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let before = srv.counts().requests;
        let mut c = px.client();
        let r = c.request(
            format!("HEAD {p} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let more = c.read_for(Duration::from_secs(2));
        assert_eq!(srv.counts().requests, before, "a hit");
        assert_eq!(r.status, 200);
        assert!(r.has("age"));
        assert_eq!(r.header("content-length"), Some("1000"));
        assert_eq!(r.header("cache-control"), full.header("cache-control"));
        assert!(more.is_empty(), "no body: {:?}", show(&more));
        let names: Vec<String> = r.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
        (r.summary(&["content-length", "content-type", "cache-control", "x-server"]), names)
    });
}

/// A successful unsafe request (POST) to a stored resource invalidates it: the next GET reaches
/// the server (and is stored again). A POST elsewhere leaves it.
#[test]
fn a_successful_post_invalidates_the_entry() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!("/p?s=100&{FRESH}");
        let post = |target: &str| {
            format!(
                "POST {target} HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1"
            )
        };
        assert!(fetch(&px, &srv, &p, &[]).1);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        assert!(!fetch(&px, &srv, &p, &[]).1, "a hit");
        let (r, reached) = via(&px, &srv, &post("/elsewhere?s=10"));
        assert!(reached && r.status == 200);
        let elsewhere = !fetch(&px, &srv, &p, &[]).1;
        assert!(elsewhere, "a POST to another resource leaves the entry");
        let (r, reached) = via(&px, &srv, &post(&p));
        assert!(reached && r.status == 200);
        let (r, after_post) = fetch(&px, &srv, &p, &[]);
        assert!(after_post, "the POST invalidated the entry");
        assert!(!r.has("age"));
        assert_eq!(stored(&px, 1), 1, "stored again: {}", show_cache(&px).text);
        let again = !fetch(&px, &srv, &p, &[]).1;
        assert!(again, "a hit again");
        (elsewhere, after_post, again)
    });
}

/// `process-vary on`: a response varying on `Accept-Encoding` is stored under its
/// `Content-Encoding`, and answers the clients that accept that coding (or say nothing) only.
#[test]
fn process_vary_matches_the_stored_encoding_with_accept_encoding() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, &format!("{SIZE} process-vary on\n"), ""));
        let p = format!("/v?s=100&{FRESH}&hdr=Vary:Accept-Encoding&hdr=Content-Encoding:gzip");
        let (first, reached) = fetch(&px, &srv, &p, &["Accept-Encoding: gzip"]);
        assert!(reached);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let cases = [
            ("gzip", vec!["Accept-Encoding: gzip"], true),
            ("br and gzip", vec!["Accept-Encoding: br, gzip"], true),
            ("no accept-encoding", vec![], true),
            ("br only", vec!["Accept-Encoding: br"], false),
            ("gzip refused", vec!["Accept-Encoding: *, gzip;q=0"], false),
        ];
        let mut seen = Vec::new();
        for (name, headers, hit) in &cases {
            let (r, reached) = fetch(&px, &srv, &p, headers);
            assert_eq!(!reached, *hit, "{name}: a hit");
            assert_eq!(r.header("content-encoding"), Some("gzip"), "{name}");
            assert_eq!(r.body, first.body, "{name}");
            assert_eq!(r.has("age"), *hit, "{name}");
            seen.push((name.to_string(), !reached));
        }
        seen
    });
}

/// Responses never stored although fresh: each fetched, then a storable one after it (stored:
/// the stores before it are done), then fetched again; whether the second reached the server.
fn never_stored(t: Target, cache: &str, query: &str) -> bool {
    let srv = server("s1");
    let px = t.start(&config(&srv, cache, ""));
    let p = format!("/n?s=100&{query}");
    assert!(fetch(&px, &srv, &p, &[]).1);
    assert!(fetch(&px, &srv, &format!("/sentinel?s=10&{FRESH}"), &[]).1);
    assert_eq!(stored(&px, 1), 1, "only the sentinel: {}", show_cache(&px).text);
    let (r, reached) = fetch(&px, &srv, &p, &[]);
    assert!(!r.has("age"));
    reached
}

/// Without `process-vary` (off by default) a response with `Vary` is never stored; with it, one
/// varying on anything but `Accept-Encoding` and `Referer` is not either.
#[test]
fn responses_with_vary_are_not_stored_without_process_vary() {
    each(|t| {
        let ae = format!("{FRESH}&hdr=Vary:Accept-Encoding");
        let ua = format!("{FRESH}&hdr=Vary:User-Agent");
        let star = format!("{FRESH}&hdr=Vary:*");
        let seen = [
            ("accept-encoding, process-vary off", never_stored(t, SIZE, &ae)),
            (
                "user-agent, process-vary on",
                never_stored(t, &format!("{SIZE} process-vary on\n"), &ua),
            ),
            ("*, process-vary on", never_stored(t, &format!("{SIZE} process-vary on\n"), &star)),
        ];
        for (name, reached) in &seen {
            assert!(reached, "{name}: not stored");
        }
        seen
    });
}

/// A body past `max-object-size` passes unchanged (sized or chunked) and is not stored; a
/// chunked body within it is (its hit has the same body).
#[test]
fn objects_past_max_object_size_pass_unchanged_and_are_not_stored() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, &format!("{SIZE} max-object-size 10000\n"), ""));
        let big = format!("/big?s=20000&{FRESH}");
        let big_chunked = format!("/bigc?s=20000&chunked=1&{FRESH}");
        let small_chunked = format!("/smallc?s=2000&chunked=1&{FRESH}");
        let plain = direct(&srv, &big).body;
        let (r, _) = fetch(&px, &srv, &big, &[]);
        assert_eq!(r.header("content-length"), Some("20000"));
        assert_eq!(r.body, plain, "unchanged");
        let (rc, _) = fetch(&px, &srv, &big_chunked, &[]);
        assert_eq!(rc.header("transfer-encoding"), Some("chunked"));
        assert_eq!(rc.body, plain, "unchanged");
        let (small, _) = fetch(&px, &srv, &small_chunked, &[]);
        assert_eq!(small.body.len(), 2000);
        assert_eq!(stored(&px, 1), 1, "only the small one: {}", show_cache(&px).text);
        let big_again = fetch(&px, &srv, &big, &[]);
        let chunked_again = fetch(&px, &srv, &big_chunked, &[]);
        let small_again = fetch(&px, &srv, &small_chunked, &[]);
        assert!(big_again.1 && big_again.0.body == plain, "not stored");
        assert!(chunked_again.1 && chunked_again.0.body == plain, "not stored");
        assert!(!small_again.1, "the small chunked one is a hit");
        assert_eq!(small_again.0.body, small.body);
        assert!(small_again.0.has("age"));
        (big_again.1, chunked_again.1, small_again.1)
    });
}

/// `res.cache_hit` and `res.cache_name` in the response rules after `cache-store`, and the
/// log line of a hit naming the server `<CACHE>`.
#[test]
fn cache_fetches_and_the_log_tell_a_hit() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "global\n stats socket {{dir}}/api.sock level admin\n log stderr format raw local0\n\
             {DEFAULTS} log global\n option httplog\ncache c\n{SIZE}listen px\n bind {{fe0}}\n\
             http-request cache-use c\n http-response cache-store c\n\
             http-response set-header X-Hit %[res.cache_hit]\n\
             http-response set-header X-Cache %[res.cache_name]\n server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        let p = format!("/log?s=100&{FRESH}");
        let (miss, reached) = fetch(&px, &srv, &p, &[]);
        assert!(reached);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let (hit, reached) = fetch(&px, &srv, &p, &[]);
        assert!(!reached);
        let tell =
            |r: &Resp| (r.header("x-hit").map(String::from), r.header("x-cache").map(String::from));
        assert_eq!(tell(&miss), (Some("0".into()), Some(String::new())));
        assert_eq!(tell(&hit), (Some("1".into()), Some("c".into())));
        // The status and termination state logged for the request served by `name`.
        let logged = |name: &str| {
            let px_srv = format!("px/{name}");
            px.log().lines().find_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let i = w.iter().position(|x| *x == px_srv)?;
                if !l.contains("GET /log?") {
                    return None;
                }
                Some((w.get(i + 2)?.to_string(), w.get(i + 6)?.to_string()))
            })
        };
        let found = eventually(Duration::from_secs(5), || {
            logged("<CACHE>").is_some() && logged("s1").is_some()
        });
        assert!(found, "a line for px/s1 and one for px/<CACHE>:\n{}", px.log());
        let (cache_line, server_line) = (logged("<CACHE>"), logged("s1"));
        assert_eq!(cache_line.as_ref().map(|l| l.0.as_str()), Some("200"));
        (tell(&miss), tell(&hit), cache_line, server_line)
    });
}

/// `show cache` after a store: the cache's line and one entry's, shapes compared (addresses and
/// hashes differ); then the frontend's `cache_lookups` and `cache_hits` for a miss and a hit.
#[test]
fn show_cache_and_the_lookup_and_hit_counters() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!("/s?s=100&{FRESH}");
        assert!(fetch(&px, &srv, &p, &[]).1);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        assert!(!fetch(&px, &srv, &p, &[]).1);
        let shown = show_cache(&px);
        let lines: Vec<&str> = shown.text.lines().filter(|l| !l.is_empty()).collect();
        let shapes: Vec<String> = lines.iter().map(|l| shape(l)).collect();
        assert_eq!(
            shapes,
            [
                "0xN: c (shctx:0xN, available blocks:N)",
                "0xN hash:N vary:0xN size:N (N blocks), refcount:N, expire:N"
            ],
            "{}",
            shown.text
        );
        assert_eq!(shown.entries.len(), 1);
        let (size, blocks) = shown.entries[0];
        assert!(size > 100 && size < 1024 && blocks == 1, "{size} bytes, {blocks} blocks");
        let expire = number_after(lines[1], "expire:").expect("expire");
        assert!((1..=30).contains(&expire), "expire {expire} (max-age=30)");
        assert!((4094..=4096).contains(&shown.available), "{}", shown.text);
        let counters = || cache_counters(&px);
        let counted = eventually(Duration::from_secs(5), || {
            counted(&counters(), "px", "FRONTEND") == Some(("2".into(), "1".into()))
        });
        assert!(counted, "2 lookups, 1 hit on the frontend: {:?}", counters());
        (shapes, counters())
    });
}

/// `show stat`'s `cache_lookups` and `cache_hits`, per line: (proxy, line, lookups, hits).
fn cache_counters(px: &Px) -> Vec<(String, String, String, String)> {
    let stat = api(&px.dir.join("api.sock"), "show stat");
    let mut rows = stat.lines();
    let names: Vec<&str> =
        rows.next().expect("a header").trim_start_matches("# ").split(',').collect();
    let col = |n: &str| names.iter().position(|x| *x == n).expect(n);
    let (lookups, hits) = (col("cache_lookups"), col("cache_hits"));
    rows.filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .map(|r| (r[0].clone(), r[1].clone(), r[lookups].clone(), r[hits].clone()))
        .collect()
}

/// A line's (lookups, hits) among `cache_counters`.
fn counted(
    c: &[(String, String, String, String)],
    proxy: &str,
    line: &str,
) -> Option<(String, String)> {
    c.iter().find(|r| r.0 == proxy && r.1 == line).map(|r| (r.2.clone(), r.3.clone()))
}

/// A miss then a hit through a frontend and a backend, the lookup rule in one of them: whose
/// counters count them.
#[test]
fn the_lookups_count_on_the_proxy_whose_rule_looked_up() {
    each(|t| {
        let srv = server("s1");
        let mut seen = Vec::new();
        for (fe_rule, be_rule, proxy, line) in [
            (" http-request cache-use c\n", "", "fe", "FRONTEND"),
            ("", " http-request cache-use c\n", "be", "BACKEND"),
        ] {
            let cfg = format!(
                "global\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}cache c\n{SIZE}\
                 frontend fe\n bind {{fe0}}\n{fe_rule} default_backend be\n\
                 backend be\n{be_rule} http-response cache-store c\n server s1 {}\n",
                srv.addr()
            );
            let px = t.start(&cfg);
            let p = format!("/k?s=100&{FRESH}");
            assert!(fetch(&px, &srv, &p, &[]).1);
            assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
            assert!(!fetch(&px, &srv, &p, &[]).1, "a hit");
            let ok = eventually(Duration::from_secs(5), || {
                counted(&cache_counters(&px), proxy, line) == Some(("2".into(), "1".into()))
            });
            assert!(ok, "2 lookups, 1 hit on {proxy}/{line}: {:?}", cache_counters(&px));
            seen.push(cache_counters(&px));
        }
        seen
    });
}

/// A request with `Cache-Control: no-store` is looked up (it hits an entry) but its own
/// response is not stored.
#[test]
fn a_request_with_no_store_is_answered_but_not_stored() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let ns = "Cache-Control: no-store";
        let (p, q) = (format!("/a?s=100&{FRESH}"), format!("/b?s=100&{FRESH}"));
        assert!(fetch(&px, &srv, &p, &[]).1);
        assert!(fetch(&px, &srv, &q, &[ns]).1);
        assert_eq!(stored(&px, 1), 1, "only /a: {}", show_cache(&px).text);
        let hit = !fetch(&px, &srv, &p, &[ns]).1;
        let not_stored = fetch(&px, &srv, &q, &[]).1;
        assert!(hit, "a no-store request is answered from the cache");
        assert!(not_stored, "the response to a no-store request was not stored");
        (hit, not_stored)
    });
}

/// An entry lives as long as the response's `max-age`, at most the cache's `max-age`; once
/// expired, the request reaches the server again.
#[test]
fn entries_expire_after_their_max_age_capped_by_the_cache() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, &format!("{SIZE} max-age 5\n"), ""));
        let long = format!("/long?s=100&{FRESH}");
        // (Two seconds: at least one whole second left after it is stored.)
        let short = "/short?s=100&hdr=Cache-Control:max-age=2";
        assert!(fetch(&px, &srv, &long, &[]).1);
        assert!(fetch(&px, &srv, short, &[]).1);
        assert_eq!(stored(&px, 2), 2, "{}", show_cache(&px).text);
        let shown = show_cache(&px);
        let mut expires: Vec<i64> = shown
            .text
            .lines()
            .filter(|l| l.contains(" hash:"))
            .filter_map(|l| number_after(l, "expire:"))
            .collect();
        expires.sort();
        assert!(
            expires.len() == 2 && (1..=2).contains(&expires[0]) && (4..=5).contains(&expires[1]),
            "expire 2 and 5 (not 30): {}",
            shown.text
        );
        assert!(!fetch(&px, &srv, short, &[]).1, "a hit while fresh");
        // HEAD: looked up, never stored; it reaches the server once the entry expired.
        let head = format!("HEAD {short} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let expired = eventually(Duration::from_secs(4), || via(&px, &srv, &head).1);
        assert!(expired, "expired within 3 s");
        let (r, reached) = fetch(&px, &srv, short, &[]);
        assert!(reached && !r.has("age"), "a miss once expired");
        assert!(!fetch(&px, &srv, &long, &[]).1, "the other entry lives on");
        (expired, reached)
    });
}

/// `total-max-size 1` (1024 blocks) with objects of 60 kB: the store evicts older entries, so
/// the blocks in use never exceed the size and `available blocks` never goes below 0; the last
/// object stored is a hit.
#[test]
fn the_store_stays_within_total_max_size() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, " total-max-size 1\n max-object-size 100000\n", ""));
        // Each object 200 bytes larger than the one before: the newest entry is the largest
        // (HAProxy's sizes count a few bytes more or less as the body came in pieces).
        let size = |i: u64| 60_000 + 200 * i;
        let path = |i: u64| format!("/m{i}?s={}&{FRESH}", size(i));
        let mut largest = 0;
        let mut most = 0;
        for i in 0..40 {
            let (r, reached) = fetch(&px, &srv, &path(i), &[]);
            assert!(reached && r.body.len() as u64 == size(i), "object {i}");
            let mut shown = show_cache(&px);
            let new = eventually(Duration::from_secs(5), || {
                shown = show_cache(&px);
                shown.entries.iter().any(|e| e.0 > largest)
            });
            assert!(new, "object {i} stored:\n{}", shown.text);
            largest = shown.entries.iter().map(|e| e.0).max().unwrap_or(0);
            let used: u64 = shown.entries.iter().map(|e| e.1).sum();
            assert!(used <= 1024, "object {i}: {used} blocks in use:\n{}", shown.text);
            assert!(shown.available >= 0, "object {i}:\n{}", shown.text);
            most = most.max(shown.entries.len());
        }
        // (2.4 MB through 1 MB: older entries went, and not more than needed.)
        assert!((10..40).contains(&most), "{most} entries at most");
        let (r, reached) = fetch(&px, &srv, &path(39), &[]);
        assert!(!reached, "the newest is a hit");
        assert_eq!(r.body.len() as u64, size(39));
        !reached
    });
}

/// An HTTP/2 client gets, with `Age`, the entry an HTTP/1 client stored (the key is the
/// absolute URI an HTTP/2 request has, which an HTTP/1 request in absolute form has too).
#[test]
fn an_http2_client_gets_a_hit_an_http1_client_stored() {
    use crate::h2client::{h2c, H2Req};
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, ""));
        let p = format!("/two?s=5000&{FRESH}");
        let a = px.addr();
        let raw = format!("GET http://{a}{p} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n");
        let (first, reached) = via(&px, &srv, &raw);
        assert!(reached);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let before = srv.counts().requests;
        let got = h2c(a, &[H2Req::get(&p)]).expect("HTTP/2 exchange");
        assert_eq!(srv.counts().requests, before, "a hit");
        assert_eq!(got[0].status, 200);
        assert_eq!(got[0].body, first.body);
        assert!(got[0].header("age").is_some(), "{:?}", got[0].headers);
        assert_eq!(got[0].header("cache-control"), Some("max-age=30"));
        // The other way: an HTTP/2 request's entry answers an HTTP/1 one in absolute form.
        let q = format!("/three?s=3000&{FRESH}");
        let got = h2c(a, &[H2Req::get(&q)]).expect("HTTP/2 exchange");
        assert_eq!(got[0].header("age"), None);
        assert_eq!(stored(&px, 2), 2, "{}", show_cache(&px).text);
        let raw = format!("GET http://{a}{q} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n");
        let (r, reached) = via(&px, &srv, &raw);
        assert!(!reached && r.body == got[0].body && r.has("age"));
        (got[0].status, reached)
    });
}

/// Compression and the cache in one proxy: the entry holds the plain body (stored as it came
/// from the server, though that client got it compressed), and each hit from it is compressed
/// for a client that accepts gzip and not for one that does not.
#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn compression_applies_to_hits_from_one_plain_entry() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&config(&srv, SIZE, " compression algo gzip\n"));
        // (Within the default `max-object-size`, a 256th of `total-max-size`.)
        let p = format!("/z?s=10000&{FRESH}");
        let plain = direct(&srv, &p).body;
        let gz = "Accept-Encoding: gzip";
        let (first, reached) = fetch(&px, &srv, &p, &[gz]);
        assert!(reached);
        assert_eq!(first.header("content-encoding"), Some("gzip"), "compressed from the server");
        assert_eq!(inflate(&first.body, 31), plain);
        assert_eq!(stored(&px, 1), 1, "{}", show_cache(&px).text);
        let (hit_plain, reached) = fetch(&px, &srv, &p, &[]);
        assert!(!reached, "a hit");
        assert_eq!(hit_plain.header("content-encoding"), None);
        assert_eq!(hit_plain.body, plain, "the entry holds the plain body");
        let (hit_gz, reached) = fetch(&px, &srv, &p, &[gz]);
        assert!(!reached, "a hit from the same entry");
        assert_eq!(hit_gz.header("content-encoding"), Some("gzip"));
        assert!(hit_gz.body.len() < plain.len() / 4, "{} bytes", hit_gz.body.len());
        assert_eq!(inflate(&hit_gz.body, 31), plain);
        assert!(hit_gz.has("age") && hit_plain.has("age"));
        assert_eq!(show_cache(&px).entries.len(), 1, "one entry");
        (
            hit_gz.summary(&["content-encoding", "content-length", "vary"]),
            hit_plain.summary(&["content-encoding", "content-length", "vary"]),
        )
    });
}

/// `-c` on `cfg`: whether the target refuses it, and what it said.
fn refuses(t: Target, name: &str, cfg: &str) -> (bool, String) {
    let dir = scratch(&format!("cache-check-{name}-{}", t.name()));
    let path = dir.join("check.cfg");
    std::fs::write(&path, cfg).expect("write cfg");
    let bin = match t {
        Target::Fulcrum => BIN.to_string(),
        Target::Haproxy => haproxy_bin().expect("haproxy"),
    };
    let out =
        std::process::Command::new(bin).arg("-c").arg("-f").arg(&path).output().expect("run -c");
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (!out.status.success(), said)
}

/// Configuration errors both refuse: a `cache-use` naming no cache section, a cache section
/// without `total-max-size`; the same configuration with them right passes.
#[test]
fn cache_configuration_errors_are_refused() {
    let proxy = |cache: &str, used: &str| {
        format!(
            "{DEFAULTS}cache c\n{cache}listen px\n bind 127.0.0.1:8080\n http-request cache-use {used}\n\
             http-response cache-store c\n server s1 127.0.0.1:1\n"
        )
    };
    let cases = [
        ("valid", proxy(SIZE, "c"), false),
        ("unknown cache", proxy(SIZE, "nope"), true),
        ("no total-max-size", proxy(" max-age 10\n", "c"), true),
    ];
    each(|t| {
        let mut seen = Vec::new();
        for (name, cfg, refused) in &cases {
            let (got, said) = refuses(t, name, cfg);
            assert_eq!(got, *refused, "{name}: refused? it said:\n{said}");
            seen.push((name.to_string(), got));
        }
        seen
    });
}
