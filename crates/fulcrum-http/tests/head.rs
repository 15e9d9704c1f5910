//! Request and response heads through the public API: the malformed-message tables (each with
//! the HAProxy 2.6 answer it stands for), valid edge cases, edits, writing, allocation.

use fulcrum_http::{Body, EditError, Head, HeadError, Limits, Method, Version};

const L: Limits = Limits { max_head: 16384 - 1024, max_headers: 101 };

fn req(raw: &[u8]) -> Head {
    let mut h = Head::new();
    let r = h.parse_request(raw, &L);
    assert_eq!(r, Ok(Some(raw.len())), "{}", String::from_utf8_lossy(raw));
    h
}

fn resp(raw: &[u8]) -> Head {
    let mut h = Head::new();
    let r = h.parse_response(raw, &L);
    assert_eq!(r, Ok(Some(raw.len())), "{}", String::from_utf8_lossy(raw));
    h
}

fn written(h: &Head) -> String {
    let mut out = Vec::new();
    h.write_to(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn malformed_requests_are_rejected_with_the_right_reason() {
    use HeadError::*;
    let cases: &[(&str, &[u8], HeadError)] = &[
        ("bad method byte", b"GE(T / HTTP/1.1\r\n\r\n", BadMethod),
        ("method with @", b"GE@T / HTTP/1.1\r\n\r\n", BadMethod),
        ("empty method", b" / HTTP/1.1\r\n\r\n", BadMethod),
        ("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", BadMethod),
        ("method then CR", b"GET\r / HTTP/1.1\r\n\r\n", BareCr),
        ("two spaces after method", b"GET  / HTTP/1.1\r\n\r\n", BadTarget),
        ("two spaces after target", b"GET /  HTTP/1.1\r\n\r\n", BadVersion),
        ("tab separator", b"GET\t/ HTTP/1.1\r\n\r\n", BadMethod),
        ("trailing space", b"GET / HTTP/1.1 \r\n\r\n", BadVersion),
        ("HTTP/0.9 line", b"GET /\r\n\r\n", BadVersion),
        ("method alone", b"GET\r\n\r\n", BadTarget),
        ("target with 0x80", b"GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("target with #", b"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("target with DEL", b"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("target with CTL", b"GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("target with NUL", b"GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("relative target", b"GET abc HTTP/1.1\r\n\r\n", BadTarget),
        ("query-only target", b"GET ?x HTTP/1.1\r\n\r\n", BadTarget),
        ("absolute with query after authority", b"GET http://a?x HTTP/1.1\r\n\r\n", BadTarget),
        ("scheme starting with a digit", b"GET 1a://a/ HTTP/1.1\r\n\r\n", BadTarget),
        ("authority-form for GET", b"GET a:443 HTTP/1.1\r\n\r\n", BadTarget),
        ("CONNECT without port", b"CONNECT a HTTP/1.1\r\n\r\n", BadTarget),
        ("CONNECT with a path", b"CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        ("CONNECT with a bad port", b"CONNECT a:b HTTP/1.1\r\n\r\n", BadTarget),
        ("lowercase version", b"GET / http/1.1\r\n\r\n", BadVersion),
        ("HTTP/2.0", b"GET / HTTP/2.0\r\n\r\n", BadVersion),
        ("HTTP/0.9 version", b"GET / HTTP/0.9\r\n\r\n", BadVersion),
        ("HTTP/1.10", b"GET / HTTP/1.10\r\n\r\n", BadVersion),
        ("HTTP/1", b"GET / HTTP/1\r\n\r\n", BadVersion),
        ("HTTP/1.x", b"GET / HTTP/1.x\r\n\r\n", BadVersion),
        ("HTTQ", b"GET / HTTQ/1.1\r\n\r\n", BadVersion),
        ("bare CR ending the request line", b"GET / HTTP/1.1\rHost: a\r\n\r\n", BareCr),
        ("bare CR in a value", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", BareCr),
        ("CR CR LF", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\r\n\r\n", BareCr),
        ("bare CR as the last line", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\r\r\n", BareCr),
        ("space before colon", b"GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n", SpaceBeforeColon),
        ("tab before colon", b"GET / HTTP/1.1\r\nHost: a\r\nX-A\t: b\r\n\r\n", SpaceBeforeColon),
        ("bad name byte", b"GET / HTTP/1.1\r\nHost: a\r\nX(A: b\r\n\r\n", BadHeaderName),
        ("name with 0x80", b"GET / HTTP/1.1\r\nHost: a\r\nX\x80: b\r\n\r\n", BadHeaderName),
        ("empty name", b"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", BadHeaderName),
        ("no colon", b"GET / HTTP/1.1\r\nHost: a\r\nXA\r\n\r\n", BadHeaderName),
        ("obs-fold", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", ObsFold),
        ("obs-fold with tab", b"GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", ObsFold),
        ("space before the first field", b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", ObsFold),
        ("NUL in a value", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", BadHeaderValue),
        ("CTL in a value", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", BadHeaderValue),
        ("DEL in a value", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n", BadHeaderValue),
        (
            "CL list differs",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\n",
            ConflictingContentLength,
        ),
        (
            "CL headers differ",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            ConflictingContentLength,
        ),
        ("CL with plus", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n", BadContentLength),
        ("CL negative", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -3\r\n\r\n", BadContentLength),
        ("CL hex", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\n", BadContentLength),
        ("CL empty", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", BadContentLength),
        ("CL empty element", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3,,3\r\n\r\n", BadContentLength),
        ("CL trailing comma", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3,\r\n\r\n", BadContentLength),
        ("CL space inside", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3 3\r\n\r\n", BadContentLength),
        (
            "CL 2^63",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n",
            BadContentLength,
        ),
        (
            "CL overflow",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            BadContentLength,
        ),
        ("TE gzip", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", BadTransferEncoding),
        (
            "TE chunked not final",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "TE chunked twice",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "TE chunked in two headers",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            BadTransferEncoding,
        ),
        ("TE empty", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", BadTransferEncoding),
        (
            "TE empty field beside chunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\nTransfer-Encoding: chunked\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "TE chunked with a parameter",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked ;\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "TE gzip in HTTP/1.0",
            b"POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "TE gzip then chunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            UnsupportedTransferCoding,
        ),
        (
            "TE gzip and chunked headers",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
            UnsupportedTransferCoding,
        ),
        (
            "bad CL beside TE",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            BadContentLength,
        ),
        ("two different hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", DuplicateHost),
        ("two identical hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", DuplicateHost),
        (
            "host differs from absolute target",
            b"GET http://b/x HTTP/1.1\r\nHost: a\r\n\r\n",
            BadHost,
        ),
        ("host port differs", b"GET http://a:8080/ HTTP/1.1\r\nHost: a\r\n\r\n", BadHost),
        ("host differs from CONNECT", b"CONNECT a:8443 HTTP/1.1\r\nHost: b:8443\r\n\r\n", BadHost),
        (
            "websocket without key",
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            BadWebSocketHandshake,
        ),
        (
            "websocket in a list without key",
            b"GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: foo, WebSocket\r\n\r\n",
            BadWebSocketHandshake,
        ),
    ];
    assert!(cases.len() >= 40);
    for (what, raw, expected) in cases {
        let mut h = Head::new();
        assert_eq!(h.parse_request(raw, &L), Err(*expected), "{what}");
        // The same answer when the bytes come one at a time.
        let mut h = Head::new();
        let mut got = Ok(None);
        for n in 1..=raw.len() {
            got = h.parse_request(&raw[..n], &L);
            if got != Ok(None) {
                break;
            }
        }
        assert_eq!(got, Err(*expected), "{what}, byte by byte");
    }
}

#[test]
fn haproxy_answers_422_only_to_an_unsupported_transfer_coding() {
    assert_eq!(HeadError::UnsupportedTransferCoding.request_status(), 422);
    assert_eq!(HeadError::UriTooLong.request_status(), 400);
    assert_eq!(HeadError::HeadTooLarge.request_status(), 400);
    assert_eq!(HeadError::TooManyHeaders.request_status(), 400);
    assert_eq!(HeadError::ObsFold.to_string(), "obsolete line folding");
}

#[test]
fn malformed_responses_are_rejected_with_the_right_reason() {
    use HeadError::*;
    let cases: &[(&str, &[u8], HeadError)] = &[
        ("two-digit status", b"HTTP/1.1 20 OK\r\n\r\n", BadStatus),
        ("four-digit status", b"HTTP/1.1 2000 OK\r\n\r\n", BadStatus),
        ("status below 100", b"HTTP/1.1 099 OK\r\n\r\n", BadStatus),
        ("letters in status", b"HTTP/1.1 2a0 OK\r\n\r\n", BadStatus),
        ("no status", b"HTTP/1.1\r\n\r\n", BadStatus),
        ("CTL in reason", b"HTTP/1.1 200 O\x01K\r\n\r\n", BadStatus),
        ("two spaces after version", b"HTTP/1.1  200 OK\r\n\r\n", BadStatus),
        ("lowercase version", b"http/1.1 200 OK\r\n\r\n", BadVersion),
        ("HTTP/2.0", b"HTTP/2.0 200 OK\r\n\r\n", BadVersion),
        ("short version", b"HTTP/1 200 OK\r\n\r\n", BadVersion),
        ("bare CR", b"HTTP/1.1 200 OK\rX: y\r\n\r\n", BareCr),
        (
            "CL differs",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
            ConflictingContentLength,
        ),
        ("space before colon", b"HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", SpaceBeforeColon),
        ("obs-fold", b"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n", ObsFold),
        ("NUL in a value", b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n", BadHeaderValue),
        ("TE gzip", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", BadTransferEncoding),
        (
            "TE gzip then chunked",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            UnsupportedTransferCoding,
        ),
        (
            "TE chunked twice",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            BadTransferEncoding,
        ),
        (
            "websocket 101 without accept",
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            BadWebSocketHandshake,
        ),
    ];
    for (what, raw, expected) in cases {
        let mut h = Head::new();
        assert_eq!(h.parse_response(raw, &L), Err(*expected), "{what}");
    }
}

#[test]
fn an_ordinary_request_is_parsed_into_its_parts() {
    let h = req(b"POST /a/b?c=d&e HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\
        X-Empty:\r\nX-Spaces: \t v w \t\r\nExpect: 100-Continue\r\n\r\n");
    assert!(h.is_request());
    assert_eq!(h.method(), Method::Post);
    assert_eq!(h.method_bytes(), b"POST");
    assert_eq!(h.target(), b"/a/b?c=d&e");
    assert_eq!(h.path(), b"/a/b");
    assert_eq!(h.query(), Some(&b"c=d&e"[..]));
    assert_eq!(h.version(), Version::Http11);
    assert_eq!(h.header(b"HOST"), Some(&b"example.com"[..]));
    assert_eq!(h.header(b"x-empty"), Some(&b""[..]));
    assert_eq!(h.header(b"x-spaces"), Some(&b"v w"[..]));
    assert_eq!(h.header(b"nope"), None);
    assert_eq!(h.header_count(b"content-length"), 1);
    assert_eq!(h.info().body, Body::Length(5));
    assert!(h.info().expect_continue);
}

#[test]
fn valid_targets_of_every_form_are_accepted() {
    let h = req(b"GET http://u@example.com:80/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert_eq!(h.path(), b"/x");
    assert_eq!(h.query(), Some(&b"y"[..]));
    let h = req(b"GET http://a HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.path(), b"");
    let h = req(b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n");
    assert_eq!(h.method(), Method::Connect);
    assert_eq!(h.target(), b"[::1]:443");
    assert_eq!(h.path(), b"");
    let h = req(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.target(), b"*");
    req(b"GET * HTTP/1.1\r\nHost: a\r\n\r\n");
    req(b"GET /{|}^`\\\"<> HTTP/1.1\r\nHost: a\r\n\r\n");
    req(b"GET //a/b HTTP/1.1\r\nHost: a\r\n\r\n");
    req(b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n");
    let h = req(b"get / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.method(), Method::Other);
    let h = req(b"FOO-BAR / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.method_bytes(), b"FOO-BAR");
}

#[test]
fn versions_one_point_two_to_nine_are_read_as_one_point_one() {
    assert_eq!(req(b"GET / HTTP/1.0\r\n\r\n").version(), Version::Http10);
    let h = req(b"GET / HTTP/1.2\r\nHost: a\r\n\r\n");
    assert_eq!(h.version(), Version::Http11);
    assert_eq!(written(&h), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
}

#[test]
fn lf_only_lines_and_leading_empty_lines_are_accepted() {
    let h = req(b"\r\n\nGET / HTTP/1.1\nHost: a\nX: b\r\n\n");
    assert_eq!(h.header(b"x"), Some(&b"b"[..]));
    let h = resp(b"HTTP/1.1 200 OK\nContent-Length: 2\n\n");
    assert_eq!(h.info().body, Body::Length(2));
}

#[test]
fn obs_text_and_tabs_are_allowed_in_values() {
    let h = req(b"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\tau lait\r\n\r\n");
    assert_eq!(h.header(b"x"), Some(&b"caf\xc3\xa9\tau lait"[..]));
}

#[test]
fn responses_keep_status_and_reason() {
    let h = resp(b"HTTP/1.1 404 Not Found\r\n\r\n");
    assert!(!h.is_request());
    assert_eq!((h.status(), h.reason()), (404, &b"Not Found"[..]));
    assert_eq!(h.info().body, Body::UntilClose);
    let h = resp(b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n");
    assert_eq!(h.reason(), b"");
    let h = resp(b"HTTP/1.0 200\r\n\r\n");
    assert_eq!((h.version(), h.reason()), (Version::Http10, &b""[..]));
    assert_eq!(written(&h), "HTTP/1.0 200 \r\n\r\n");
    let h = resp(b"HTTP/1.1 999 Odd  reason\xff\r\n\r\n");
    assert_eq!(h.reason(), b"Odd  reason\xff");
    resp(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\
        Sec-WebSocket-Accept: x\r\n\r\n",
    );
    let h = resp(b"HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\n\r\n");
    assert_eq!(h.header_count(b"host"), 2, "Host rules are for requests only");
}

#[test]
fn identical_content_lengths_are_merged_into_one() {
    let h =
        req(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\nContent-Length: 03\r\n\r\n");
    assert_eq!(h.header_count(b"content-length"), 1);
    assert_eq!(h.header(b"content-length"), Some(&b"3"[..]));
    assert_eq!(h.info().body, Body::Length(3));
    let h = req(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775807\r\n\r\n");
    assert_eq!(h.info().body, Body::Length(i64::MAX as u64));
}

#[test]
fn chunked_beats_content_length_which_is_removed() {
    for raw in [
        &b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
    ] {
        let h = req(raw);
        assert_eq!(h.info().body, Body::Chunked);
        assert!(h.info().te_and_cl);
        assert_eq!(h.header(b"content-length"), None);
    }
    let h = resp(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!((h.info().body, h.info().te_and_cl), (Body::Chunked, true));
}

#[test]
fn transfer_encoding_spellings_haproxy_takes_are_chunked() {
    for te in [&b"Chunked"[..], b"\tchunked\t", b"chunked,", b", chunked"] {
        let mut raw = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ".to_vec();
        raw.extend_from_slice(te);
        raw.extend_from_slice(b"\r\n\r\n");
        assert_eq!(req(&raw).info().body, Body::Chunked);
    }
    let h = req(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.info().body, Body::Chunked, "HTTP/1.0 with chunked, as HAProxy");
}

#[test]
fn an_http_1_1_request_names_its_host() {
    let mut h = Head::new();
    for (raw, expected) in [
        (&b"GET / HTTP/1.1\r\n\r\n"[..], Err(HeadError::MissingHost)),
        (b"OPTIONS * HTTP/1.1\r\n\r\n", Err(HeadError::MissingHost)),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", Err(HeadError::BadHost)),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", Err(HeadError::BadHost)),
        (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", Err(HeadError::BadHost)),
        (b"GET / HTTP/1.1\r\nHost: \r\n\r\n", Ok(Some(26))),
        (b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", Ok(Some(34))),
        (b"GET / HTTP/1.0\r\n\r\n", Ok(Some(18))),
        // The target names it.
        (b"GET http://a/ HTTP/1.1\r\n\r\n", Ok(Some(26))),
        (b"CONNECT a:443 HTTP/1.1\r\n\r\n", Ok(Some(26))),
    ] {
        assert_eq!(h.parse_request(raw, &L), expected, "{}", String::from_utf8_lossy(raw));
    }
}

#[test]
fn connection_tokens_upgrade_and_expect_are_reported() {
    let h = req(
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, X\r\nConnection: CLOSE, upgrade\r\n\
        Upgrade: h2c\r\n\r\n",
    );
    let i = h.info();
    assert!(i.conn_close && i.conn_keep_alive && i.conn_upgrade && i.upgrade);
    assert!(!i.expect_continue);
    let h = req(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
    assert!(!h.info().expect_continue, "ignored in HTTP/1.0");
    let h = req(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\
        Sec-WebSocket-Key: k\r\n\r\n");
    assert!(h.info().conn_upgrade);
}

#[test]
fn a_host_matching_the_absolute_target_is_accepted() {
    req(b"GET http://a:80/x HTTP/1.1\r\nHost: a\r\n\r\n");
    req(b"GET http://A/x HTTP/1.1\r\nHost: a:80\r\n\r\n");
    req(b"GET https://a:443/x HTTP/1.1\r\nHost: a\r\n\r\n");
    req(b"CONNECT a:8443 HTTP/1.1\r\nHost: A:8443\r\n\r\n");
    req(b"GET / HTTP/1.1\r\nHost: whatever\r\n\r\n");
}

#[test]
fn header_count_limit_follows_tune_http_maxhdr() {
    let build = |n: usize| {
        let mut raw = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 1..n {
            raw.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        raw
    };
    let mut h = Head::new();
    assert_eq!(h.parse_request(&build(100), &L), Ok(Some(build(100).len())));
    assert_eq!(h.header_len(), 100);
    assert_eq!(h.parse_request(&build(101), &L), Err(HeadError::TooManyHeaders));
    let merged =
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\nX: y\r\n\r\n";
    let three = Limits { max_headers: 4, ..L };
    assert!(matches!(h.parse_request(merged, &three), Ok(Some(_))), "merged ones do not count");
}

#[test]
fn size_limits_tell_a_long_request_line_from_a_long_head() {
    let small = Limits { max_head: 64, max_headers: 101 };
    let mut h = Head::new();
    let long_uri = [&b"GET /"[..], &[b'a'; 100], b" HTTP/1.1\r\n\r\n"].concat();
    assert_eq!(h.parse_request(&long_uri, &small), Err(HeadError::UriTooLong));
    assert_eq!(h.parse_request(&long_uri[..64], &small), Err(HeadError::UriTooLong));
    assert_eq!(h.parse_request(&long_uri[..63], &small), Ok(None));
    let long_head = [&b"GET / HTTP/1.1\r\nHost: a\r\nX: "[..], &[b'a'; 100], b"\r\n\r\n"].concat();
    assert_eq!(h.parse_request(&long_head, &small), Err(HeadError::HeadTooLarge));
    let mut resp = Head::new();
    let long_status = [&b"HTTP/1.1 200 "[..], &[b'a'; 100], b"\r\n\r\n"].concat();
    assert_eq!(resp.parse_response(&long_status, &small), Err(HeadError::HeadTooLarge));
    let exact = b"GET / HTTP/1.1\r\nHost: a\r\nX: 0123456789012345678901234567890123456789\r\n\r\n";
    let fits = Limits { max_head: exact.len(), max_headers: 101 };
    assert_eq!(h.parse_request(exact, &fits), Ok(Some(exact.len())));
    let tight = Limits { max_head: exact.len() - 1, max_headers: 101 };
    assert_eq!(h.parse_request(exact, &tight), Err(HeadError::HeadTooLarge));
}

#[test]
fn a_head_arriving_in_pieces_gives_the_same_head_and_length() {
    let raw =
        b"\r\nPUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nX-Long: abcdefghij\r\n\r\nbody...";
    let head_len = raw.len() - 7;
    for cut in 0..raw.len() {
        let mut h = Head::new();
        let first = h.parse_request(&raw[..cut], &L);
        if cut < head_len {
            assert_eq!(first, Ok(None), "cut {cut}");
        }
        assert_eq!(h.parse_request(raw, &L), Ok(Some(head_len)), "cut {cut}");
        assert_eq!(h.header(b"x-long"), Some(&b"abcdefghij"[..]));
        assert_eq!(h.info().body, Body::Length(7));
    }
}

#[test]
fn a_new_parse_forgets_the_previous_head() {
    let mut h = Head::new();
    h.parse_request(
        b"GET /a HTTP/1.1\r\nHost: a\r\nX: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        &L,
    )
    .expect("valid request");
    h.parse_request(b"GET /b HTTP/1.0\r\n\r\n", &L).expect("valid request");
    assert_eq!((h.target(), h.header_len(), h.info().body), (&b"/b"[..], 0, Body::None));
    h.parse_request(b"GET /c HTTP/1.1\r\nHost: a\r\nX: ", &L).expect("incomplete is fine");
    h.clear();
    assert_eq!(h.parse_response(b"HTTP/1.1 204 No Content\r\n\r\n", &L), Ok(Some(27)));
    assert_eq!(h.status(), 204);
}

#[test]
fn parsing_the_same_request_a_thousand_times_does_not_grow_the_head() {
    let raw = b"GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\n\
        Accept: */*\r\nCookie: a=1; b=2\r\nContent-Length: 0\r\n\r\n";
    let mut h = Head::new();
    let mut out = Vec::new();
    h.parse_request(raw, &L).expect("valid request");
    h.set_header(b"X-Forwarded-For", b"10.0.0.1").expect("valid edit");
    h.write_to(&mut out);
    let warm = h.capacities();
    let out_cap = out.capacity();
    for _ in 0..1000 {
        assert_eq!(h.parse_request(raw, &L), Ok(Some(raw.len())));
        h.set_header(b"X-Forwarded-For", b"10.0.0.1").expect("valid edit");
        out.clear();
        h.write_to(&mut out);
        assert_eq!(h.capacities(), warm);
        assert_eq!(out.capacity(), out_cap);
    }
}

#[test]
fn edits_are_written_back_with_crlf_and_single_spaces() {
    let mut h = req(b"GET /old?q=1 HTTP/1.1\nHost:   a  \nX-Drop: 1\nX-Keep: 2\nx-drop: 3\n\n");
    h.set_method(b"PUT").expect("valid method");
    h.set_path(b"/new/path").expect("valid path");
    assert_eq!(h.target(), b"/new/path?q=1");
    h.set_query(Some(b"a=b&c")).expect("valid query");
    assert_eq!(h.remove_header(b"X-DROP"), 2);
    h.add_header(b"X-Added", b"  v  ").expect("valid header");
    h.set_header(b"x-keep", b"two").expect("valid header");
    h.set_header_value_at(0, b"b").expect("valid value");
    assert_eq!(
        written(&h),
        "PUT /new/path?a=b&c HTTP/1.1\r\nHost: b\r\nX-Added: v\r\nx-keep: two\r\n\r\n"
    );
    h.set_query(None).expect("removing the query");
    assert_eq!(h.query(), None);
    h.retain_headers(|n, _| n.eq_ignore_ascii_case(b"host"));
    assert_eq!(written(&h), "PUT /new/path HTTP/1.1\r\nHost: b\r\n\r\n");
    // Round trip: what is written parses back to the same thing.
    let again = req(written(&h).as_bytes());
    assert_eq!(written(&again), written(&h));
}

#[test]
fn target_edits_keep_each_form_valid() {
    let mut h = req(b"GET http://a:80/x?y HTTP/1.1\r\nHost: a\r\n\r\n");
    h.set_path(b"/z").expect("valid path");
    assert_eq!(h.target(), b"http://a:80/z?y");
    let mut h = req(b"GET http://a HTTP/1.1\r\n\r\n");
    h.set_query(Some(b"k=v")).expect("valid query");
    assert_eq!(h.target(), b"http://a/?k=v");
    let mut h = req(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
    h.set_path(b"/p").expect("valid path");
    assert_eq!(h.target(), b"/p");
    let mut h = req(b"CONNECT a:443 HTTP/1.1\r\n\r\n");
    assert_eq!(h.set_path(b"/p"), Err(EditError::BadTarget));
    assert_eq!(h.set_query(Some(b"x")), Err(EditError::BadTarget));
    assert_eq!(h.set_method(b"GET"), Err(EditError::BadMethod));
    let mut h = req(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.set_path(b"x"), Err(EditError::BadTarget));
    assert_eq!(h.set_path(b"/a?b"), Err(EditError::BadTarget));
    assert_eq!(h.set_path(b"/a b"), Err(EditError::BadTarget));
    assert_eq!(h.set_query(Some(b"a#b")), Err(EditError::BadTarget));
    assert_eq!(h.set_target(b"a:443"), Err(EditError::BadTarget));
    assert_eq!(h.set_method(b"CONNECT"), Err(EditError::BadMethod));
    assert_eq!(h.set_method(b"G T"), Err(EditError::BadMethod));
    assert_eq!(written(&h), "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", "refused edits change nothing");
    h.set_target(b"http://b:8080/y").expect("valid target");
    assert_eq!(h.header(b"host"), Some(&b"b:8080"[..]), "set-uri rewrites Host, as HAProxy");
}

#[test]
fn header_edits_refuse_invalid_bytes_and_broken_framing() {
    let mut h = req(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(h.add_header(b"X", b"a\r\nb"), Err(EditError::BadValue));
    assert_eq!(h.add_header(b"X", b"a\x00b"), Err(EditError::BadValue));
    assert_eq!(h.add_header(b"X Y", b"a"), Err(EditError::BadName));
    assert_eq!(h.add_header(b"", b"a"), Err(EditError::BadName));
    assert_eq!(
        h.add_header(b"Content-Length", b"3"),
        Err(EditError::Invalid(HeadError::ConflictingContentLength))
    );
    assert_eq!(
        h.add_header(b"Transfer-Encoding", b"chunked"),
        Err(EditError::ContentLengthWithTransferEncoding)
    );
    assert_eq!(
        h.set_header(b"Content-Length", b"3, 3"),
        Err(EditError::Invalid(HeadError::BadContentLength))
    );
    assert_eq!(h.add_header(b"Host", b"a"), Err(EditError::Invalid(HeadError::DuplicateHost)));
    assert_eq!(h.set_header_value_at(9, b"x"), Err(EditError::NoSuchHeader));
    h.set_header(b"content-length", b"7").expect("valid length");
    assert_eq!(h.info().body, Body::Length(7));
    h.remove_header(b"Content-Length");
    assert_eq!(h.info().body, Body::None);
    h.add_header(b"Transfer-Encoding", b"chunked").expect("valid framing");
    assert_eq!(h.info().body, Body::Chunked);
    assert_eq!(
        h.set_header(b"Transfer-Encoding", b"gzip, chunked"),
        Err(EditError::Invalid(HeadError::UnsupportedTransferCoding))
    );
    // A Host given to an absolute-form request becomes its authority (HAProxy's
    // `http_update_authority`); one that would change the target's parts is refused.
    let mut abs = req(b"GET http://a/x?y HTTP/1.1\r\n\r\n");
    abs.add_header(b"Host", b"b:8080").expect("host");
    assert_eq!(abs.target(), b"http://b:8080/x?y");
    abs.set_header(b"Host", b"c").expect("host");
    assert_eq!(
        (abs.target(), abs.path(), abs.header(b"host")),
        (&b"http://c/x?y"[..], &b"/x"[..], Some(&b"c"[..]))
    );
    abs.set_header_value_at(0, b"d").expect("host");
    assert_eq!(abs.target(), b"http://d/x?y");
    assert_eq!(abs.set_header(b"Host", b"e/f"), Err(EditError::Invalid(HeadError::BadHost)));
    assert_eq!(abs.set_header(b"Host", b"e f"), Err(EditError::BadTarget));
    assert_eq!(abs.target(), b"http://d/x?y");
    let mut ws = req(b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n");
    assert_eq!(
        ws.add_header(b"Connection", b"upgrade"),
        Err(EditError::Invalid(HeadError::BadWebSocketHandshake))
    );
}

#[test]
fn status_edits_use_the_usual_reason_or_the_given_one() {
    let mut h = resp(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
    h.set_status(503, None).expect("valid status");
    assert_eq!(written(&h), "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\n");
    h.set_status(299, None).expect("valid status");
    assert_eq!(h.reason(), b"");
    h.set_status(200, Some(b"Fine")).expect("valid status");
    assert_eq!(written(&h), "HTTP/1.1 200 Fine\r\nContent-Length: 2\r\n\r\n");
    assert_eq!(h.set_status(99, None), Err(EditError::BadStatus));
    assert_eq!(h.set_status(1000, None), Err(EditError::BadStatus));
    assert_eq!(h.set_status(200, Some(b"a\nb")), Err(EditError::BadReason));
    assert_eq!(h.set_method(b"GET"), Err(EditError::WrongKind));
    let mut empty = Head::new();
    assert_eq!(empty.add_header(b"X", b"y"), Err(EditError::WrongKind));
    let mut out = Vec::new();
    empty.write_to(&mut out);
    assert!(out.is_empty());
}

#[test]
fn swapping_buffers_leaves_an_empty_head_that_parses_the_next_request() {
    let mut warm = req(b"GET /a HTTP/1.1\r\nHost: a\r\nX-Long: 0123456789abcdef\r\n\r\n");
    let mut parked = Head::new();
    // The session parks: its head gives its buffers away and is empty.
    warm.swap_buffers(&mut parked);
    assert_eq!((warm.target(), warm.headers().count()), (&b""[..], 0));
    let mut out = Vec::new();
    warm.write_to(&mut out);
    assert!(out.is_empty());
    // The parked buffers come back into a head that parses anew whatever they held.
    let mut next = Head::new();
    next.swap_buffers(&mut parked);
    let raw = b"POST /b HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(next.parse_request(raw, &Limits::default()), Ok(Some(raw.len())));
    assert_eq!(
        (next.method(), next.target(), next.header(b"host")),
        (Method::Post, &b"/b"[..], Some(&b"b"[..]))
    );
    assert_eq!(written(&next), String::from_utf8_lossy(raw));
}

#[test]
fn text_len_is_the_length_of_the_text_written() {
    let heads = [
        req(b"GET /a?b HTTP/1.1\r\nHost: a\r\nX-Y:  z \r\n\r\n"),
        req(b"GET http://h:8/p?q HTTP/1.1\r\nHost: h:8\r\n\r\n"),
        req(b"GET http://h HTTP/1.0\r\n\r\n"),
        req(b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"),
        resp(b"HTTP/1.1 404 Not Here\r\nContent-Length: 0\r\n\r\n"),
        resp(b"HTTP/1.0 200\r\n\r\n"),
        Head::new(),
    ];
    for h in &heads {
        let (mut plain, mut origin) = (Vec::new(), Vec::new());
        h.write_to(&mut plain);
        h.write_origin_form_to(&mut origin);
        assert_eq!(h.text_len(false), plain.len(), "{}", String::from_utf8_lossy(&plain));
        assert_eq!(h.text_len(true), origin.len(), "{}", String::from_utf8_lossy(&origin));
    }
}

/// As HAProxy 2.6 (checked beside it): a field name of 255 bytes is taken, 256 refused, in a
/// parse (whole or in parts) and in a head built from HTTP/2 fields.
#[test]
fn field_names_longer_than_255_bytes_are_refused() {
    let limits = Limits::default();
    for (len, ok) in [(255, true), (256, false)] {
        let text = format!("GET / HTTP/1.1\r\nHost: t\r\n{}: 1\r\n\r\n", "n".repeat(len));
        let mut h = Head::new();
        let whole = h.parse_request(text.as_bytes(), &limits);
        assert_eq!(whole.is_ok(), ok, "{len}: {whole:?}");
        // The first part only, the name not yet ended: refused as soon as it is too long.
        let mut h = Head::new();
        let part = h.parse_request(&text.as_bytes()[..26 + len], &limits);
        assert_eq!(part.is_ok(), ok, "{len} in parts: {part:?}");
        let mut h = Head::new();
        h.begin_request(b"GET", &[b"/"]).expect("begin");
        let name = "n".repeat(len);
        assert_eq!(h.build_field(name.as_bytes(), b"1", &limits).is_ok(), ok, "{len} built");
    }
}

/// A head parsed with `set_lenient` (HAProxy's `option accept-invalid-http-request|response`),
/// with the fault it let pass.
fn lenient(raw: &[u8], request: bool) -> (Result<Option<usize>, HeadError>, Head) {
    let mut h = Head::new();
    h.set_lenient(true);
    let r = if request { h.parse_request(raw, &L) } else { h.parse_response(raw, &L) };
    (r, h)
}

#[test]
fn a_lenient_parse_takes_what_haproxys_accept_invalid_options_take() {
    use HeadError::*;
    // (request, raw, the fault let pass)
    let taken: &[(bool, &[u8], HeadError)] = &[
        (true, b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n", SpaceBeforeColon),
        (true, b"GET / HTTP/1.1\r\nHost: a\r\nx(y): v\r\n\r\n", BadHeaderName),
        (true, b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        (true, b"GET / HTTP/1.12\r\nHost: a\r\n\r\n", BadVersion),
        (true, b"GET / RTSP/1.0\r\n\r\n", BadVersion),
        (true, b"GET /x\r\n\r\n", BadVersion),
        (true, b"GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n", BadHost),
        (false, b"HTTP/1.12 200 OK\r\nContent-Length: 0\r\n\r\n", BadVersion),
        (false, b"HTTP/1.1 200 OK\r\nBad Name: v\r\nContent-Length: 0\r\n\r\n", SpaceBeforeColon),
    ];
    for &(request, raw, fault) in taken {
        let what = String::from_utf8_lossy(raw);
        let mut strict = Head::new();
        let refused =
            if request { strict.parse_request(raw, &L) } else { strict.parse_response(raw, &L) };
        assert_eq!(refused, Err(fault), "strict: {what}");
        let (r, h) = lenient(raw, request);
        assert_eq!(r, Ok(Some(raw.len())), "lenient: {what}");
        assert_eq!(h.tolerated(), Some(fault), "{what}");
    }
    // What is read from them.
    let (_, h) = lenient(b"GET /x\r\n\r\n", true);
    assert_eq!((h.method(), h.target(), h.version()), (Method::Get, &b"/x"[..], Version::Http10));
    assert_eq!(written(&h), "GET /x HTTP/1.0\r\n\r\n");
    let (_, h) = lenient(b"GET / HTTP/1.12\r\nHost: a\r\n\r\n", true);
    assert_eq!(h.version(), Version::Http10, "9 bytes: not HTTP/1.1 (HAProxy's VER_11 rule)");
    let (_, h) = lenient(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", true);
    assert_eq!(h.version(), Version::Http11);
    let (_, h) = lenient(b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n", true);
    assert_eq!(h.header(b"Bad Name"), Some(&b"v"[..]));
    let (_, h) = lenient(b"HTTP/1.12 404 Nope\r\nContent-Length: 0\r\n\r\n", false);
    assert_eq!((h.status(), h.reason(), h.version()), (404, &b"Nope"[..], Version::Http10));
    // A valid head tolerates nothing; some faults stay faults.
    let (r, h) = lenient(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true);
    assert_eq!((r, h.tolerated()), (Ok(Some(27)), None));
    let refused: &[(bool, &[u8], HeadError)] = &[
        (true, b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", BadHeaderName),
        (true, b"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", BadTarget),
        (true, b"POST /x\r\n\r\n", BadVersion),
        (true, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", DuplicateHost),
        (true, b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", BadHeaderValue),
        (false, b"HTTP/1.1 2x0 OK\r\n\r\n", BadStatus),
    ];
    for &(request, raw, fault) in refused {
        assert_eq!(lenient(raw, request).0, Err(fault), "{}", String::from_utf8_lossy(raw));
    }
}

#[test]
fn the_same_host_twice_is_one_host_in_a_lenient_parse() {
    let raw = b"GET / HTTP/1.1\r\nHost: a.example\r\nHost: A.example\r\n\r\n";
    let (r, h) = lenient(raw, true);
    assert_eq!(r, Ok(Some(raw.len())));
    assert_eq!(h.tolerated(), Some(HeadError::DuplicateHost));
    assert_eq!(h.header_count(b"host"), 1);
    assert_eq!(written(&h), "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n");
}

#[test]
fn an_http10_get_head_or_delete_with_a_body_is_413_unless_any_method_may_have_one() {
    let refused: &[&[u8]] = &[
        b"GET / HTTP/1.0\r\nContent-Length: 2\r\n\r\n",
        b"HEAD / HTTP/1.0\r\nContent-Length: 1\r\n\r\n",
        b"DELETE / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    ];
    for raw in refused {
        let mut h = Head::new();
        assert_eq!(h.parse_request(raw, &L), Err(HeadError::PayloadWithMethod));
        assert_eq!(HeadError::PayloadWithMethod.request_status(), 413);
        h.clear();
        h.set_any_method_payload(true);
        assert_eq!(h.parse_request(raw, &L), Ok(Some(raw.len())));
    }
    for raw in [
        &b"GET / HTTP/1.0\r\nContent-Length: 0\r\n\r\n"[..],
        b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n",
    ] {
        req(raw);
    }
}

#[test]
fn names_take_the_case_h1_case_adjust_gives_them() {
    let mut h = req(b"GET / HTTP/1.1\r\nhost: a\r\nx-custom: 1\r\nX-OTHER: 2\r\n\r\n");
    h.adjust_name_case(|n| match n.to_ascii_lowercase().as_slice() {
        b"x-custom" => Some(&b"X-Custom"[..]),
        b"host" => Some(&b"Host"[..]),
        // Not the same name: left as it is.
        b"x-other" => Some(&b"X-Another"[..]),
        _ => None,
    });
    assert_eq!(written(&h), "GET / HTTP/1.1\r\nHost: a\r\nX-Custom: 1\r\nX-OTHER: 2\r\n\r\n");
    assert_eq!(h.header(b"x-custom"), Some(&b"1"[..]));
}
