//! HAProxy 2.6's compression filter decisions (`flt_http_comp.c`) on the transaction's heads:
//! the algorithm a request accepts (`select_request`, before the request leaves, the backend
//! known), whether its response is compressed (`select_response`, once the response head is
//! in, before the response rules: `res.comp` sees it), and the response head's changes
//! (`rewrite_response`, after the rules). Pure functions of the heads; the body's encoding is
//! `http::encoder`'s.
//!
//! Must not touch: sockets, bodies.

use fulcrum_config::compression::{CompAlgo, Compression};
use fulcrum_http::{Body, Head, Method, Version};

/// The compression settings in force: the backend's first, the frontend's where the backend
/// says nothing (HAProxy looks at each list apart).
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    pub be: Option<&'a Compression>,
    pub fe: Option<&'a Compression>,
}

impl<'a> Settings<'a> {
    /// A backend's settings over its frontend's.
    pub fn of(
        be: &'a crate::http_settings::HttpProxy,
        fe: &'a crate::http_settings::HttpProxy,
    ) -> Self {
        Settings { be: be.compression.as_deref(), fe: fe.compression.as_deref() }
    }

    pub fn any(&self) -> bool {
        self.be.is_some() || self.fe.is_some()
    }

    fn algos(&self) -> &'a [CompAlgo] {
        let of = |c: Option<&'a Compression>| c.map(|c| &c.algos[..]).filter(|a| !a.is_empty());
        of(self.be).or(of(self.fe)).unwrap_or(&[])
    }

    fn types(&self) -> &'a [String] {
        let of = |c: Option<&'a Compression>| c.map(|c| &c.types[..]).filter(|t| !t.is_empty());
        of(self.be).or(of(self.fe)).unwrap_or(&[])
    }

    fn offload(&self) -> bool {
        self.be.is_some_and(|c| c.offload) || self.fe.is_some_and(|c| c.offload)
    }
}

/// The comma-separated elements of every `name` header, trimmed (HAProxy's
/// `http_find_header` without `full`).
fn elements<'h>(head: &'h Head, name: &'h [u8]) -> impl Iterator<Item = &'h [u8]> + 'h {
    head.headers()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(|e| e.trim_ascii())
        .filter(|e| !e.is_empty())
}

/// The first `name` header's whole value.
fn first<'h>(head: &'h Head, name: &[u8]) -> Option<&'h [u8]> {
    head.headers().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim_ascii())
}

/// HAProxy's `word_match`: `sample` is `word` (without case), blanks after it allowed.
fn word_match(sample: &[u8], word: &[u8]) -> bool {
    sample.len() >= word.len()
        && sample[..word.len()].eq_ignore_ascii_case(word)
        && sample[word.len()..].iter().all(|&b| b == b' ' || b == b'\t')
}

/// A `q=` value in thousandths (HAProxy's `http_parse_qvalue`: at most three decimals, 1000
/// when it cannot be read).
fn qvalue(v: &[u8]) -> u32 {
    let digit = |i: usize| v.get(i).filter(|b| b.is_ascii_digit()).map(|b| u32::from(b - b'0'));
    let Some(units) = digit(0) else { return 1000 };
    let mut q = units * 1000;
    if v.get(1) == Some(&b'.') {
        for (i, scale) in [(2, 100), (3, 10), (4, 1)] {
            match digit(i) {
                Some(d) => q += d * scale,
                None => break,
            }
        }
    }
    q.min(1000)
}

/// The `q` of one `Accept-Encoding` element after its token (1000 without one).
fn element_q(params: &[u8]) -> u32 {
    for p in params.split(|&b| b == b';').skip(1) {
        let p = p.trim_ascii_start();
        if let Some(v) = p.strip_prefix(b"q=") {
            return qvalue(v);
        }
    }
    1000
}

/// HAProxy's exclusion of old browsers announcing `Mozilla/4` (unless MSIE 6 SP2 or MSIE 7+).
fn old_browser(ua: &[u8]) -> bool {
    ua.len() >= 9
        && ua.starts_with(b"Mozilla/4")
        && (ua.len() < 31
            || &ua[25..30] != b"MSIE "
            || ua[30] < b'6'
            || (ua[30] == b'6' && (ua.len() < 54 || &ua[51..54] != b"SV1")))
}

/// The algorithm the request accepts, as HAProxy chooses it: the `Accept-Encoding` element of
/// the highest `q` (the first of equal ones), matched against the configured algorithms (`*`
/// takes the first of HAProxy's list); else `identity` when it is configured. With
/// `compression offload`, the request's `Accept-Encoding` headers are removed when one is
/// chosen (the server then sends its response plain).
pub fn select_request(req: &mut Head, s: Settings<'_>) -> Option<CompAlgo> {
    if first(req, b"user-agent").is_some_and(old_browser) {
        return None;
    }
    let algos = s.algos();
    // With Fulcrum's own algorithms (zstd, br) configured, equal q-values go to the one the
    // configuration lists first (HAProxy's rule, the client's first, always means gzip for
    // browsers); without them, HAProxy's rule exactly.
    let by_config = algos.iter().any(|a| a.is_extension());
    // (HAProxy's list has the last declared first: a higher index was declared earlier.)
    let rank = |a: CompAlgo| algos.iter().position(|x| *x == a).unwrap_or(0);
    let mut chosen: Option<CompAlgo> = None;
    let mut best_q = 0;
    for e in elements(req, b"accept-encoding") {
        let toklen = e.iter().position(|&b| !fulcrum_http::is_tchar(b)).unwrap_or(e.len());
        let q = element_q(&e[toklen..]);
        let tie = by_config && q == best_q && q > 0;
        if q < best_q || (q == best_q && !tie) {
            continue;
        }
        let token = &e[..toklen];
        if let Some(a) =
            algos.iter().find(|a| e.starts_with(b"*") || word_match(token, a.ua_name().as_bytes()))
        {
            if !tie || chosen.is_none_or(|c| rank(*a) > rank(c)) {
                chosen = Some(*a);
                best_q = q;
            }
        }
    }
    if chosen.is_some() {
        if s.offload() {
            req.remove_header(b"accept-encoding");
        }
        return chosen;
    }
    algos.iter().copied().find(|a| *a == CompAlgo::Identity)
}

/// What the response decision needs of the request.
#[derive(Clone, Copy)]
pub struct Asked {
    pub method: Method,
    pub version: Version,
}

/// Whether the response is compressed with `algo` (HAProxy's `select_compression_response_
/// header`): HTTP/1.1 or later both ways, not HEAD, status 200 to 203, a body of known length,
/// not encoded already, no `Cache-Control: no-transform`, at most one `ETag` and a valid
/// one, a content type listed (when types are), not `multipart`.
pub fn select_response(
    algo: CompAlgo,
    asked: Asked,
    resp: &Head,
    body: Body,
    s: Settings<'_>,
) -> Option<CompAlgo> {
    let old = |v: Version| v == Version::Http10;
    if old(asked.version) || old(resp.version()) || asked.method == Method::Head {
        return None;
    }
    if !(200..=203).contains(&resp.status()) || matches!(body, Body::None | Body::UntilClose) {
        return None;
    }
    if resp.header(b"content-encoding").is_some() {
        return None;
    }
    if elements(resp, b"cache-control").any(|e| word_match(e, b"no-transform")) {
        return None;
    }
    let mut etags = resp.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"etag"));
    if let Some((_, v)) = etags.next() {
        if etag_kind(v.trim_ascii()).is_none() || etags.next().is_some() {
            return None;
        }
    }
    let types = s.types();
    match first(resp, b"content-type") {
        Some(ct) => {
            if ct.len() >= 9 && ct[..9].eq_ignore_ascii_case(b"multipart") {
                return None;
            }
            let listed = |t: &String| {
                ct.len() >= t.len() && ct[..t.len()].eq_ignore_ascii_case(t.as_bytes())
            };
            if !types.is_empty() && !types.iter().any(listed) {
                return None;
            }
        }
        None if !types.is_empty() => return None,
        None => {}
    }
    Some(algo)
}

/// `Some(true)` for a strong ETag, `Some(false)` a weak one, `None` an invalid one.
fn etag_kind(v: &[u8]) -> Option<bool> {
    if v.len() < 2 || v[v.len() - 1] != b'"' {
        return None;
    }
    if v[0] == b'"' {
        return Some(true);
    }
    v.starts_with(b"W/\"").then_some(false)
}

/// The response head as it leaves compressed: `Content-Encoding` (not for identity),
/// `Content-Length` removed and `Transfer-Encoding: chunked` (for an HTTP/1 client), a strong
/// `ETag` made weak, `Vary: Accept-Encoding` added.
pub fn rewrite_response(resp: &mut Head, algo: CompAlgo) -> Result<(), fulcrum_http::EditError> {
    if algo != CompAlgo::Identity {
        resp.add_header(b"content-encoding", algo.ua_name().as_bytes())?;
    }
    resp.remove_header(b"content-length");
    if resp.info().body != Body::Chunked {
        resp.add_header(b"transfer-encoding", b"chunked")?;
    }
    let weakened = resp.headers().enumerate().find_map(|(i, (n, v))| {
        (n.eq_ignore_ascii_case(b"etag") && v.first() == Some(&b'"'))
            .then(|| (i, [b"W/", v].concat()))
    });
    if let Some((i, v)) = weakened {
        resp.set_header_value_at(i, &v)?;
    }
    resp.add_header(b"vary", b"Accept-Encoding")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fulcrum_http::Limits;

    fn comp(algos: &[CompAlgo], types: &[&str], offload: bool) -> Compression {
        // (As configured: HAProxy's list has the last declared first.)
        let algos = algos.iter().rev().copied().collect();
        let types = types.iter().map(|t| t.to_string()).collect();
        Compression { algos, types, offload }
    }

    fn head(text: &str, request: bool) -> Head {
        let mut h = Head::new();
        let limits = Limits { max_head: 16384, max_headers: 100 };
        let text = format!("{}\n", text.trim_end_matches('\n')).replace('\n', "\r\n") + "\r\n";
        let r = if request {
            h.parse_request(text.as_bytes(), &limits)
        } else {
            h.parse_response(text.as_bytes(), &limits)
        };
        assert!(matches!(r, Ok(Some(_))), "{text:?}: {r:?}");
        h
    }

    fn choose(c: &Compression, headers: &str) -> Option<CompAlgo> {
        let mut req = head(&format!("GET / HTTP/1.1\nHost: a\n{headers}"), true);
        select_request(&mut req, Settings { be: Some(c), fe: None })
    }

    #[test]
    fn the_highest_q_wins_and_ties_go_to_the_client_s_order() {
        use CompAlgo::*;
        let c = comp(&[Gzip, Deflate], &[], false);
        assert_eq!(choose(&c, "Accept-Encoding: gzip, deflate\n"), Some(Gzip));
        assert_eq!(choose(&c, "Accept-Encoding: deflate, gzip\n"), Some(Deflate));
        assert_eq!(choose(&c, "Accept-Encoding: gzip;q=0.5, deflate;q=0.8\n"), Some(Deflate));
        assert_eq!(choose(&c, "Accept-Encoding: br, GZIP ; q=1.0\n"), Some(Gzip));
        assert_eq!(choose(&c, "Accept-Encoding: gzip;q=0\n"), None);
        assert_eq!(choose(&c, "Accept-Encoding: br\n"), None);
        assert_eq!(choose(&c, ""), None);
        // `*`: HAProxy's first, the last declared.
        assert_eq!(choose(&c, "Accept-Encoding: *\n"), Some(Deflate));
        // identity configured: taken when nothing else matches.
        let c = comp(&[Identity, Gzip], &[], false);
        assert_eq!(choose(&c, "Accept-Encoding: br\n"), Some(Identity));
    }

    #[test]
    fn with_fulcrum_s_own_algorithms_ties_go_to_the_configuration_s_first() {
        use CompAlgo::*;
        let c = comp(&[Brotli, Zstd, Gzip], &[], false);
        assert_eq!(choose(&c, "Accept-Encoding: gzip, deflate, br, zstd\n"), Some(Brotli));
        assert_eq!(choose(&c, "Accept-Encoding: gzip, zstd\n"), Some(Zstd));
        assert_eq!(choose(&c, "Accept-Encoding: gzip;q=1, br;q=0.8\n"), Some(Gzip));
        assert_eq!(choose(&c, "Accept-Encoding: br;q=0\n"), None);
        // Without them, HAProxy's rule: the client's first of equal ones.
        let c = comp(&[Deflate, Gzip], &[], false);
        assert_eq!(choose(&c, "Accept-Encoding: gzip, deflate\n"), Some(Gzip));
    }

    #[test]
    fn old_mozilla_4_browsers_get_no_compression_unless_known_good() {
        let c = comp(&[CompAlgo::Gzip], &[], false);
        let ua = |ua: &str| choose(&c, &format!("User-Agent: {ua}\nAccept-Encoding: gzip\n"));
        assert_eq!(ua("Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)"), None);
        assert_eq!(ua("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)"), Some(CompAlgo::Gzip));
        assert_eq!(
            ua("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"),
            Some(CompAlgo::Gzip)
        );
        assert_eq!(ua("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"), None);
        assert_eq!(ua("Mozilla/5.0 (X11; Linux x86_64)"), Some(CompAlgo::Gzip));
    }

    #[test]
    fn offload_removes_accept_encoding_when_compressing() {
        let c = comp(&[CompAlgo::Gzip], &[], true);
        let mut req =
            head("GET / HTTP/1.1\nHost: a\nAccept-Encoding: gzip\nAccept-Encoding: br", true);
        let got = select_request(&mut req, Settings { be: None, fe: Some(&c) });
        assert_eq!(got, Some(CompAlgo::Gzip));
        assert_eq!(req.header(b"accept-encoding"), None);
    }

    fn decide(c: &Compression, method: Method, version: Version, resp: &str) -> bool {
        let resp = head(resp, false);
        let body = resp.info().body;
        let asked = Asked { method, version };
        let s = Settings { be: None, fe: Some(c) };
        select_response(CompAlgo::Gzip, asked, &resp, body, s).is_some()
    }

    #[test]
    fn responses_are_compressed_only_as_haproxy_2_6_compresses_them() {
        let c = comp(&[CompAlgo::Gzip], &["text/", "application/json"], false);
        let (get, v11) = (Method::Get, Version::Http11);
        let ok = "HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: 10\n";
        assert!(decide(&c, get, v11, ok));
        assert!(decide(
            &c,
            get,
            v11,
            "HTTP/1.1 203 X\nContent-Type: TEXT/plain\nContent-Length: 1\n"
        ));
        assert!(!decide(&c, Method::Head, v11, ok));
        assert!(!decide(&c, get, Version::Http10, ok));
        assert!(!decide(
            &c,
            get,
            v11,
            "HTTP/1.0 200 OK\nContent-Type: text/html\nContent-Length: 1\n"
        ));
        assert!(!decide(
            &c,
            get,
            v11,
            "HTTP/1.1 206 P\nContent-Type: text/html\nContent-Length: 1\n"
        ));
        assert!(!decide(&c, get, v11, "HTTP/1.1 200 OK\nContent-Type: text/html\n"), "until close");
        assert!(decide(
            &c,
            get,
            v11,
            "HTTP/1.1 200 OK\nContent-Type: text/html\nTransfer-Encoding: chunked\n"
        ));
        assert!(!decide(
            &c,
            get,
            v11,
            "HTTP/1.1 200 OK\nContent-Type: image/png\nContent-Length: 1\n"
        ));
        assert!(
            !decide(&c, get, v11, "HTTP/1.1 200 OK\nContent-Length: 1\n"),
            "a type is required"
        );
        let any = comp(&[CompAlgo::Gzip], &[], false);
        assert!(decide(&any, get, v11, "HTTP/1.1 200 OK\nContent-Length: 1\n"));
        assert!(!decide(
            &any,
            get,
            v11,
            "HTTP/1.1 200 OK\nContent-Type: multipart/mixed\nContent-Length: 1\n"
        ));
        let with = |h: &str| decide(&c, get, v11, &format!("{ok}{h}\n"));
        assert!(!with("Content-Encoding: br"));
        assert!(!with("Cache-Control: private, no-transform"));
        assert!(with("Cache-Control: no-transformed"));
        assert!(with("ETag: \"abc\""));
        assert!(with("ETag: W/\"abc\""));
        assert!(!with("ETag: abc"));
        assert!(!with("ETag: \"a\"\nETag: \"b\""));
    }

    #[test]
    fn the_compressed_head_says_so_and_weakens_its_etag() {
        let mut resp =
            head("HTTP/1.1 200 OK\nContent-Length: 10\nETag: \"v1\"\nVary: Cookie", false);
        rewrite_response(&mut resp, CompAlgo::RawDeflate).expect("rewritten");
        assert_eq!(resp.header(b"content-encoding"), Some(&b"deflate"[..]));
        assert_eq!(resp.header(b"content-length"), None);
        assert_eq!(resp.header(b"transfer-encoding"), Some(&b"chunked"[..]));
        assert_eq!(resp.header(b"etag"), Some(&b"W/\"v1\""[..]));
        assert_eq!(resp.header_count(b"vary"), 2);
        assert_eq!(resp.info().body, Body::Chunked);
        let mut resp = head("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nETag: W/\"v\"", false);
        rewrite_response(&mut resp, CompAlgo::Identity).expect("rewritten");
        assert_eq!(resp.header(b"content-encoding"), None);
        assert_eq!(resp.header_count(b"transfer-encoding"), 1);
        assert_eq!(resp.header(b"etag"), Some(&b"W/\"v\""[..]));
    }

    #[test]
    fn qvalues_read_as_haproxy_reads_them() {
        assert_eq!(qvalue(b"0.5"), 500);
        assert_eq!(qvalue(b"1"), 1000);
        assert_eq!(qvalue(b"0.123456"), 123);
        assert_eq!(qvalue(b"2.0"), 1000);
        assert_eq!(qvalue(b"x"), 1000);
        assert_eq!(element_q(b";level=1;q=0.2"), 200);
    }
}
