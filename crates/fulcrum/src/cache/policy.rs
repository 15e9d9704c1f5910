//! What HAProxy 2.6's cache decides from heads alone (`cache.c`, `http_ana.c`): whether a
//! request may be looked up and its response stored, the key, the secondary key of `Vary`,
//! an entry's lifetime, and whether a hit is answered `304 Not Modified`. Pure functions of
//! heads and times, unit-tested here. Must not touch: the store, sessions.

use fulcrum_http::{Head, Method, Version};

/// `Vary` on `accept-encoding` (HAProxy's `VARY_ACCEPT_ENCODING`).
pub const VARY_ENCODING: u8 = 1;
/// `Vary` on `referer`.
pub const VARY_REFERER: u8 = 2;

/// Content codings as HAProxy's `parse_encoding_value` knows them (bits of its bitmap).
const CODINGS: &[(&[u8], u32)] = &[
    (b"aes128gcm", 0x10),
    (b"br", 0x4),
    (b"compress", 0x8),
    (b"deflate", 0x2),
    (b"exi", 0x20),
    (b"gzip", 0x1),
    (b"identity", IDENTITY),
    (b"pack200-gzip", 0x40),
    (b"x-gzip", 0x1),
    (b"x-compress", 0x8),
    (b"zstd", 0x80),
    (b"*", STAR),
];
const IDENTITY: u32 = 0x100;
const STAR: u32 = 0x200;
const OTHER: u32 = 0x400;

/// What the request allows (HAProxy's `TX_CACHE_IGNORE` and `TX_CACHEABLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// No lookup, no store (HTTP/1.0, a method other than GET/HEAD, `Authorization`,
    /// `Cache-Control: no-cache|max-age|max-stale|min-fresh`, `Pragma: no-cache`).
    pub ignore: bool,
    /// `Cache-Control: no-store` clears it (a `public` response sets it again).
    pub cacheable: bool,
}

/// HAProxy's `http_action_req_cache_use` first steps and
/// `http_check_request_for_cacheability`.
pub fn asked(req: &Head) -> Asked {
    let method = req.method();
    let mut a = Asked { ignore: false, cacheable: true };
    if req.version() == Version::Http10 || !matches!(method, Method::Get | Method::Head) {
        a.ignore = true;
        return a;
    }
    // One pass over the fields (every request a `cache-use` rule sees comes here).
    let (mut has_cc, mut pragma) = (false, None);
    for (n, v) in req.headers() {
        let is = |name: &[u8]| n.eq_ignore_ascii_case(name);
        match n.len() {
            13 if is(b"cache-control") => {
                has_cc = true;
                let elements = v.split(|&b| b == b',').map(<[u8]>::trim_ascii);
                for v in elements.filter(|v| !v.is_empty()) {
                    let lc = |p: &[u8]| v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p);
                    if lc(b"max-age") || lc(b"no-cache") || lc(b"max-stale") || lc(b"min-fresh") {
                        a.ignore = true;
                    } else if lc(b"no-store") {
                        a.cacheable = false;
                    }
                }
            }
            13 if is(b"authorization") => {
                a.cacheable = false;
                a.ignore = true;
            }
            6 if is(b"pragma") => {
                pragma.get_or_insert(v); // (the first field's value, as `header` gives it)
            }
            _ => {}
        }
    }
    if !has_cc && pragma.is_some_and(|v| v.eq_ignore_ascii_case(b"no-cache")) {
        a.ignore = true;
    }
    a
}

/// The primary key (HAProxy's `sha1_hosturi` input, the method not in it): the target when it
/// carries an authority (absolute form, HTTP/2), else `https://` + the Host's first value +
/// the target; `None` without a Host or a target.
pub fn key(req: &Head, out: &mut Vec<u8>) -> bool {
    out.clear();
    let target = req.target();
    if target.is_empty() {
        return false;
    }
    if req.scheme_and_authority().is_none() {
        let Some(host) = req.header(b"host") else { return false };
        let host = host.split(|&b| b == b',').next().unwrap_or(b"").trim_ascii();
        out.extend_from_slice(b"https://");
        out.extend_from_slice(host);
    }
    out.extend_from_slice(target);
    true
}

/// The comma-separated elements of every `name` field, trimmed, empty ones skipped.
pub fn elements<'h>(h: &'h Head, name: &'h [u8]) -> impl Iterator<Item = &'h [u8]> + 'h {
    h.headers()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|v| !v.is_empty())
}

/// The `Vary` signature of a response (bits [`VARY_ENCODING`], [`VARY_REFERER`]): `None`
/// when it varies on anything else (`*` included), which is never stored.
pub fn vary(resp: &Head) -> Option<u8> {
    let mut sig = 0;
    for (n, v) in resp.headers() {
        if !n.eq_ignore_ascii_case(b"vary") {
            continue;
        }
        for e in v.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if e.eq_ignore_ascii_case(b"accept-encoding") {
                sig |= VARY_ENCODING;
            } else if e.eq_ignore_ascii_case(b"referer") {
                sig |= VARY_REFERER;
            } else {
                return None;
            }
        }
    }
    Some(sig)
}

/// One coding of `Accept-Encoding` or `Content-Encoding` (HAProxy's `parse_encoding_value`):
/// its bit (`OTHER` for an unknown one), and whether its weight is `q=0`; `None`: malformed.
fn coding(v: &[u8]) -> Option<(u32, bool)> {
    let (name, params) = match v.iter().position(|&b| b == b';') {
        Some(i) => (v[..i].trim_ascii(), Some(&v[i + 1..])),
        None => (v.trim_ascii(), None),
    };
    if name.iter().any(|&b| b == b' ' || b == b'\t') {
        return None;
    }
    let bit =
        CODINGS.iter().find(|(n, _)| name.eq_ignore_ascii_case(n)).map_or(OTHER, |&(_, bit)| bit);
    let zero = params.is_some_and(|p| p.trim_ascii() == b"q=0");
    Some((bit, zero))
}

/// The request's `Accept-Encoding` as HAProxy's `accept_encoding_normalizer` makes it a
/// bitmap: identity always, each listed coding, all with `*` or without the field, minus the
/// codings weighted `q=0`. `None` past 16 values (such a request neither hits nor stores an
/// entry that varies on it).
pub fn accepted_codings(req: &Head) -> Option<u32> {
    let mut fields = req.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"accept-encoding"));
    let mut first = fields.next()?;
    let (mut bits, mut refused, mut count) = (IDENTITY, 0u32, 0);
    loop {
        for v in first.1.split(|&b| b == b',') {
            count += 1;
            if count >= 16 {
                return None;
            }
            if v.trim_ascii().is_empty() {
                continue;
            }
            let Some((bit, zero)) = coding(v) else { continue };
            match zero {
                true if bit != OTHER => refused |= bit,
                true => {}
                false => bits |= bit,
            }
        }
        match fields.next() {
            Some(f) => first = f,
            None => break,
        }
    }
    if bits & STAR != 0 {
        bits = !0;
    }
    Some(bits & !refused)
}

/// A response's `Content-Encoding` as a bitmap (identity when absent); `None` for a coding
/// HAProxy does not know (never stored when it varies on `accept-encoding`).
pub fn content_codings(resp: &Head) -> Option<u32> {
    let mut bits = 0;
    for v in elements(resp, b"content-encoding") {
        match coding(v)? {
            (OTHER, _) => return None,
            (bit, _) => bits |= bit,
        }
    }
    Some(if bits == 0 { IDENTITY } else { bits })
}

/// Whether an entry stored with the codings `stored` may answer a client accepting
/// `accepted` (HAProxy's `accept_encoding_bitmap_cmp`).
pub fn codings_match(stored: u32, accepted: u32) -> bool {
    stored & OTHER == 0 && stored & accepted == stored
}

/// The secondary key a request has for the signature `sig`: its accepted codings and the
/// CRC-32 of its `Referer` (zero for a part the signature does not name, or no Referer).
/// `None`: the codings could not be read (past 16).
pub fn secondary(req: &Head, sig: u8) -> Option<[u32; 2]> {
    let enc = match sig & VARY_ENCODING {
        0 => 0,
        _ => accepted_or_all(req)?,
    };
    let referer = match (sig & VARY_REFERER, req.header(b"referer")) {
        (0, _) | (_, None) => 0,
        (_, Some(r)) => {
            let mut c = flate2::Crc::new();
            c.update(r);
            c.sum()
        }
    };
    Some([enc, referer])
}

/// All codings when the request has no `Accept-Encoding`; its normalised set otherwise,
/// `None` past 16 values.
fn accepted_or_all(req: &Head) -> Option<u32> {
    match req.header(b"accept-encoding") {
        None => Some(!0),
        Some(_) => accepted_codings(req),
    }
}

/// What a response's head allows (HAProxy's `http_check_response_for_cacheability` with the
/// statuses `http_wait_for_response` accepts): `Some(true)` storable, `Some(false)` not.
pub fn storable(resp: &Head, asked_cacheable: bool) -> bool {
    let status = resp.status();
    if !matches!(status, 200 | 203 | 204 | 206 | 300 | 301 | 404 | 405 | 410 | 414 | 501) {
        return false;
    }
    if resp.header(b"pragma").is_some_and(|v| v.eq_ignore_ascii_case(b"no-cache")) {
        return false;
    }
    let (mut cacheable, mut fresh) = (asked_cacheable, false);
    for v in elements(resp, b"cache-control") {
        let is = |w: &[u8]| v.eq_ignore_ascii_case(w);
        let starts = |p: &[u8]| v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p);
        if is(b"public") {
            cacheable = true;
        } else if is(b"private")
            || is(b"no-cache")
            || is(b"no-store")
            || is(b"max-age=0")
            || is(b"s-maxage=0")
            || starts(b"no-cache=\"set-cookie")
        {
            return false;
        } else if starts(b"s-maxage") || starts(b"max-age") {
            fresh = true;
        }
    }
    if !fresh && resp.header(b"expires").is_none() {
        let validator = resp.header(b"etag").is_some() || resp.header(b"last-modified").is_some();
        if !validator {
            return false;
        }
    }
    cacheable
}

/// A `Cache-Control` directive's number (`s-maxage=10`, `max-age="10"`): the last one
/// present; `Err(())` when it is present but negative or not a number.
fn directive(resp: &Head, name: &[u8]) -> Option<Result<i64, ()>> {
    let mut found = None;
    for v in elements(resp, b"cache-control") {
        if v.len() <= name.len() + 1
            || !v[..name.len()].eq_ignore_ascii_case(name)
            || v[name.len()] != b'='
        {
            continue;
        }
        let n = v[name.len() + 1..].strip_prefix(b"\"").unwrap_or(&v[name.len() + 1..]);
        let digits = n.iter().take_while(|b| b.is_ascii_digit()).count();
        found = Some(match std::str::from_utf8(&n[..digits]).ok().and_then(|d| d.parse().ok()) {
            Some(x) => Ok(x),
            None => Err(()),
        });
    }
    found
}

/// HAProxy's `http_calc_maxage`: the lifetime in seconds (`s-maxage`, else `max-age`, else
/// `Expires` against `now`, each at most the cache's `max_age`; else `max_age`) and the
/// response's own freshness (0 without one), against which an `Age` is checked.
pub fn lifetime(resp: &Head, max_age: u32, now: i64) -> (i64, i64) {
    let cap = i64::from(max_age);
    let mut seen = false;
    for name in [&b"s-maxage"[..], b"max-age"] {
        match directive(resp, name) {
            Some(Ok(v)) if v > 0 => return (v.min(cap), v),
            Some(Err(())) => return (-1, 0),
            found => seen |= found.is_some(),
        }
    }
    if !seen {
        if let Some(v) = resp.header(b"expires") {
            let left = fulcrum_http::date::parse(v).map_or(0, |t| (t - now).max(0));
            return (left.min(cap), left);
        }
    }
    (cap, 0)
}

/// The `Last-Modified` a stored response answers conditional requests with (HAProxy's
/// `get_last_modified_time`): its own, else its `Date`, else when it was stored.
pub fn last_modified(resp: &Head, stored: i64) -> i64 {
    let date = |n: &[u8]| resp.header(n).and_then(fulcrum_http::date::parse);
    date(b"last-modified").or_else(|| date(b"date")).unwrap_or(stored)
}

/// The stored `ETag` (the last one).
pub fn etag(resp: &Head) -> Option<Box<[u8]>> {
    resp.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"etag")).last().map(|(_, v)| v.into())
}

/// A valid entity tag without its weak prefix (HAProxy's `http_compare_etags` sides).
fn opaque(t: &[u8]) -> Option<&[u8]> {
    let t = t.strip_prefix(b"W/").unwrap_or(t);
    (t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"').then_some(t)
}

/// Whether a hit is answered `304 Not Modified` (HAProxy's `should_send_notmodified_response`):
/// an `If-None-Match` value `*` or weakly equal to the entry's ETag; without any
/// `If-None-Match`, an `If-Modified-Since` no earlier than its last modification.
pub fn not_modified(req: &Head, etag: Option<&[u8]>, last_modified: i64) -> bool {
    if req.header(b"if-none-match").is_some() {
        for v in elements(req, b"if-none-match") {
            if v == b"*" {
                return true;
            }
            let Some(stored) = etag.and_then(opaque) else { return false };
            if opaque(v) == Some(stored) {
                return true;
            }
        }
        return false;
    }
    req.header(b"if-modified-since")
        .and_then(fulcrum_http::date::parse)
        .is_some_and(|ims| last_modified <= ims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(text: &str) -> Head {
        let mut h = Head::new();
        let limits = fulcrum_http::Limits { max_head: 8192, max_headers: 100 };
        h.parse_request(text.replace('|', "\r\n").as_bytes(), &limits)
            .expect("valid")
            .expect("valid");
        h
    }

    fn resp(fields: &str) -> Head {
        let mut h = Head::new();
        let limits = fulcrum_http::Limits { max_head: 8192, max_headers: 100 };
        let text = format!("HTTP/1.1 200 OK\r\n{}\r\n\r\n", fields.replace('|', "\r\n"));
        let text = text.replace("\r\n\r\n\r\n", "\r\n\r\n");
        h.parse_response(text.as_bytes(), &limits).expect("valid").expect("valid");
        h
    }

    #[test]
    fn requests_are_looked_up_as_haproxy_decides() {
        let a = |t: &str| asked(&req(t));
        assert!(!a("GET / HTTP/1.1|Host: a||").ignore);
        assert!(!a("HEAD / HTTP/1.1|Host: a||").ignore);
        assert!(a("POST / HTTP/1.1|Host: a|Content-Length: 0||").ignore);
        assert!(a("GET / HTTP/1.0||").ignore);
        assert!(a("GET / HTTP/1.1|Host: a|Authorization: Basic eDp5||").ignore);
        assert!(a("GET / HTTP/1.1|Host: a|Pragma: no-cache||").ignore);
        assert!(!a("GET / HTTP/1.1|Host: a|Pragma: no-cache|Cache-Control: public||").ignore);
        assert!(a("GET / HTTP/1.1|Host: a|Cache-Control: max-age=0||").ignore);
        let no_store = a("GET / HTTP/1.1|Host: a|Cache-Control: no-store||");
        assert_eq!(no_store, Asked { ignore: false, cacheable: false });
    }

    #[test]
    fn the_key_is_the_host_and_target_without_the_method() {
        let mut k = Vec::new();
        assert!(key(&req("GET /a?b HTTP/1.1|Host: h||"), &mut k));
        assert_eq!(k, b"https://h/a?b");
        assert!(key(&req("HEAD https://h/a?b HTTP/1.1|Host: h||"), &mut k));
        assert_eq!(k, b"https://h/a?b");
        assert!(key(&req("GET http://h/a HTTP/1.1|Host: h||"), &mut k));
        assert_eq!(k, b"http://h/a");
    }

    #[test]
    fn responses_are_stored_as_haproxy_decides() {
        assert!(storable(&resp("Cache-Control: max-age=10"), true));
        assert!(storable(&resp("ETag: \"x\""), true));
        assert!(storable(&resp("Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT"), true));
        assert!(storable(&resp("Expires: Sun, 06 Nov 1994 08:49:37 GMT"), true));
        assert!(storable(&resp("Set-Cookie: a=b|Cache-Control: max-age=10"), true));
        assert!(!storable(&resp("Content-Type: text/plain"), true));
        assert!(!storable(&resp("Cache-Control: private, max-age=10"), true));
        assert!(!storable(&resp("Cache-Control: no-store"), true));
        assert!(!storable(&resp("Cache-Control: max-age=10|Pragma: no-cache"), true));
        assert!(!storable(&resp("Cache-Control: max-age=10, no-cache=\"set-cookie\""), true));
        assert!(!storable(&resp("Cache-Control: max-age=10"), false));
        assert!(storable(&resp("Cache-Control: max-age=10, public"), false));
    }

    #[test]
    fn the_lifetime_is_the_first_directive_capped_by_the_cache() {
        let now = 1_000_000_000;
        assert_eq!(lifetime(&resp("Cache-Control: max-age=10, s-maxage=30"), 60, now), (30, 30));
        assert_eq!(lifetime(&resp("Cache-Control: max-age=100"), 60, now), (60, 100));
        assert_eq!(lifetime(&resp("ETag: \"x\""), 60, now), (60, 0));
        let exp = resp("Expires: Sun, 09 Sep 2001 01:51:00 GMT");
        assert_eq!(lifetime(&exp, 600, now), (260, 260));
        assert_eq!(lifetime(&resp("Cache-Control: max-age=abc"), 60, now), (-1, 0));
    }

    #[test]
    fn conditional_requests_compare_weak_etags_then_dates() {
        let et = Some(&b"\"v1\""[..]);
        let lm = 784_111_777;
        let c = |t: &str, etag| not_modified(&req(t), etag, lm);
        assert!(c("GET / HTTP/1.1|Host: a|If-None-Match: *||", None));
        assert!(c("GET / HTTP/1.1|Host: a|If-None-Match: W/\"v1\"||", et));
        assert!(c("GET / HTTP/1.1|Host: a|If-None-Match: \"x\", \"v1\"||", et));
        assert!(!c("GET / HTTP/1.1|Host: a|If-None-Match: \"x\"||", et));
        let ims = "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT";
        assert!(c(&format!("GET / HTTP/1.1|Host: a|{ims}||"), et));
        // If-None-Match wins over If-Modified-Since.
        assert!(!c(&format!("GET / HTTP/1.1|Host: a|If-None-Match: \"x\"|{ims}||"), et));
        let early = "If-Modified-Since: Sat, 05 Nov 1994 08:49:37 GMT";
        assert!(!c(&format!("GET / HTTP/1.1|Host: a|{early}||"), et));
    }

    #[test]
    fn vary_and_codings_follow_haproxys_bitmaps() {
        assert_eq!(vary(&resp("Vary: Accept-Encoding")), Some(VARY_ENCODING));
        assert_eq!(vary(&resp("Vary: referer, accept-encoding")), Some(3));
        assert_eq!(vary(&resp("Vary: User-Agent")), None);
        assert_eq!(vary(&resp("Vary: *")), None);
        let gz = content_codings(&resp("Content-Encoding: gzip")).expect("valid");
        let plain = content_codings(&resp("Content-Type: a/b")).expect("valid");
        assert_eq!(content_codings(&resp("Content-Encoding: foo")), None);
        let accepts = |ae: &str| secondary(&req(&format!("GET / HTTP/1.1|Host: a|{ae}||")), 1);
        let br = accepts("Accept-Encoding: br").expect("valid")[0];
        let gzip = accepts("Accept-Encoding: GZIP;q=0.5, br").expect("valid")[0];
        let none = secondary(&req("GET / HTTP/1.1|Host: a||"), 1).expect("valid")[0];
        let refused = accepts("Accept-Encoding: *, gzip;q=0").expect("valid")[0];
        assert!(!codings_match(gz, br) && codings_match(gz, gzip) && codings_match(gz, none));
        assert!(codings_match(plain, br) && !codings_match(gz, refused));
        let many = (0..16).map(|i| format!("x{i}")).collect::<Vec<_>>().join(",");
        assert_eq!(accepts(&format!("Accept-Encoding: {many}")), None);
    }
}
