//! Heads built from parts (`begin_request`/`begin_response`, `build_field`, `end_head`: how
//! HTTP/2 heads reach the transaction) against the parse of the same head's HTTP/1.1 text:
//! the same head, or the same error.

use fulcrum_http::{Body, Head, HeadError, Limits};

/// A request: method, target, fields.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>);

const L: Limits = Limits { max_head: 16384 - 1024, max_headers: 101 };

/// What a transaction sees of a head.
fn seen(h: &Head) -> String {
    let mut out = Vec::new();
    h.write_to(&mut out);
    format!(
        "{}|{:?}|{:?}|{}|{:?}|{:?}|{:?}|{}",
        String::from_utf8_lossy(&out),
        h.method(),
        h.version(),
        String::from_utf8_lossy(h.path()),
        h.query().map(|q| String::from_utf8_lossy(q).into_owned()),
        h.info(),
        h.header_len(),
        String::from_utf8_lossy(h.origin_form_target()),
    )
}

fn text(method: &str, target: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut t = format!("{method} {target} HTTP/1.1\r\n");
    for (n, v) in fields {
        t.push_str(&format!("{n}: {v}\r\n"));
    }
    t.push_str("\r\n");
    t.into_bytes()
}

fn build(method: &str, target: &str, fields: &[(&str, &str)], h2: bool) -> Result<Head, HeadError> {
    let mut h = Head::new();
    h.set_host_required(!h2);
    h.begin_request(method.as_bytes(), &[target.as_bytes()])?;
    for (n, v) in fields {
        h.build_field(n.as_bytes(), v.as_bytes(), &L)?;
    }
    h.end_head(&L)?;
    Ok(h)
}

fn parse(method: &str, target: &str, fields: &[(&str, &str)], h2: bool) -> Result<Head, HeadError> {
    let raw = text(method, target, fields);
    let mut h = Head::new();
    h.set_host_required(!h2);
    match h.parse_request(&raw, &L)? {
        Some(n) => {
            assert_eq!(n, raw.len());
            Ok(h)
        }
        None => panic!("incomplete: {}", String::from_utf8_lossy(&raw)),
    }
}

fn same(method: &str, target: &str, fields: &[(&str, &str)], h2: bool) {
    let b = build(method, target, fields, h2);
    let p = parse(method, target, fields, h2);
    match (&b, &p) {
        (Ok(b), Ok(p)) => assert_eq!(seen(b), seen(p), "{method} {target} {fields:?}"),
        (Err(b), Err(p)) => assert_eq!(b, p, "{method} {target} {fields:?}"),
        _ => panic!("{method} {target} {fields:?}: built {b:?}, parsed {p:?}"),
    }
}

#[test]
fn a_built_request_is_the_parse_of_its_text() {
    let h2load =
        [("host", "127.0.0.1:24501"), ("user-agent", "h2load nghttp2/1.52.0"), ("accept", "*/*")];
    let cases: Vec<Case> = vec![
        ("GET", "http://127.0.0.1:24501/?s=64", h2load.to_vec()),
        ("GET", "https://example.com/a/b?x=1&y", vec![("host", "example.com")]),
        ("POST", "http://a/up", vec![("host", "a"), ("content-length", "12")]),
        ("POST", "http://a/up", vec![("host", "a"), ("content-length", "12, 12")]),
        ("POST", "http://a/up", vec![("host", "a"), ("transfer-encoding", "chunked")]),
        (
            "POST",
            "http://a/up",
            vec![("host", "a"), ("content-length", "3"), ("transfer-encoding", "chunked")],
        ),
        ("GET", "http://a/", vec![("host", "a"), ("connection", "close")]),
        ("GET", "http://a/", vec![("host", "a"), ("expect", "100-continue")]),
        ("GET", "http://a/", vec![("host", "a"), ("connection", "upgrade"), ("upgrade", "ws")]),
        ("GET", "http://a/", vec![("host", "a"), ("x-spaced", "  padded\tvalue \t")]),
        ("GET", "http://a/", vec![("host", "a"), ("x-obs", "caf\u{e9}")]),
        ("GET", "/origin", vec![("host", "a")]),
        ("GET", "/origin", vec![]),
        ("CONNECT", "a:443", vec![("host", "a:443")]),
        ("OPTIONS", "*", vec![("host", "a")]),
        ("GET", "http://a/", vec![("cookie", "a=1; b=2"), ("host", "a")]),
    ];
    for h2 in [true, false] {
        for (m, t, f) in &cases {
            same(m, t, f, h2);
        }
    }
}

#[test]
fn a_part_a_parse_refuses_is_refused_with_the_same_error() {
    let cases: Vec<Case> = vec![
        ("GET", "http://a/", vec![("host", "b")]),
        ("GET", "http://a/", vec![("host", "a"), ("host", "a")]),
        ("GET", "http://a/", vec![("host", "a b")]),
        (
            "POST",
            "http://a/",
            vec![("host", "a"), ("content-length", "1"), ("content-length", "2")],
        ),
        ("POST", "http://a/", vec![("host", "a"), ("content-length", "x")]),
        ("POST", "http://a/", vec![("host", "a"), ("content-length", "-1")]),
        ("POST", "http://a/", vec![("host", "a"), ("transfer-encoding", "gzip")]),
        ("GET", "http://a/ b", vec![("host", "a")]),
        ("G(T", "http://a/", vec![("host", "a")]),
        ("CONNECT", "/path", vec![("host", "a")]),
        ("GET", "http://a/", vec![("x-ctl", "a\u{1}b"), ("host", "a")]),
        ("GET", "http://a/", vec![("x-del", "a\u{7f}b"), ("host", "a")]),
        ("GET", "/no-host", vec![]),
    ];
    for h2 in [true, false] {
        for (m, t, f) in &cases {
            same(m, t, f, h2);
        }
    }
    // Control bytes a text could not even carry as one line: refused all the same.
    for v in ["a\rb", "a\nb", "a\0b"] {
        assert_eq!(
            build("GET", "http://a/", &[("host", "a"), ("x", v)], true).err(),
            Some(HeadError::BadHeaderValue)
        );
    }
    for name in ["", "bad name", "a:b"] {
        let built = build("GET", "http://a/", &[(name, "v")], true);
        assert_eq!(built.err(), Some(HeadError::BadHeaderName), "{name:?}");
    }
}

#[test]
fn limits_hold_as_in_a_parse() {
    let many: Vec<(String, String)> = (0..101).map(|i| (format!("x-{i}"), "v".into())).collect();
    let fields: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(build("GET", "/", &fields, true).err(), Some(HeadError::TooManyHeaders));
    assert!(build("GET", "/", &fields[..100], true).is_ok());
    assert_eq!(parse("GET", "/", &fields, true).err(), Some(HeadError::TooManyHeaders));
    let big = "v".repeat(L.max_head);
    assert_eq!(build("GET", "/", &[("x", &big)], true).err(), Some(HeadError::HeadTooLarge));
    // The size returned is the text's.
    let mut h = Head::new();
    h.begin_request(b"GET", &[b"http://", b"a", b"/p"]).expect("valid part");
    h.build_field(b"host", b"a", &L).expect("valid part");
    let n = h.end_head(&L).expect("valid part");
    assert_eq!(n, text("GET", "http://a/p", &[("host", "a")]).len());
    assert_eq!(h.target(), b"http://a/p");
}

#[test]
fn a_built_response_is_the_parse_of_its_text() {
    for (status, fields) in [
        (200, vec![("content-type", "text/plain"), ("content-length", "64")]),
        (204, vec![]),
        (304, vec![("etag", "\"x\"")]),
        (101, vec![("connection", "upgrade"), ("upgrade", "h2c")]),
        (599, vec![("transfer-encoding", "chunked")]),
    ] {
        let mut b = Head::new();
        b.begin_response(status, fulcrum_http::default_reason(status)).expect("valid part");
        for (n, v) in &fields {
            b.build_field(n.as_bytes(), v.as_bytes(), &L).expect("valid part");
        }
        let n = b.end_head(&L).expect("valid part");
        let mut raw = Vec::new();
        b.write_to(&mut raw);
        assert_eq!(n, raw.len());
        let mut p = Head::new();
        assert_eq!(p.parse_response(&raw, &L), Ok(Some(raw.len())));
        assert_eq!(seen(&b), seen(&p));
        assert_eq!(b.status(), status);
    }
    let mut b = Head::new();
    b.begin_response(200, b"OK").expect("valid part");
    b.build_field(b"content-length", b"5", &L).expect("valid part");
    b.end_head(&L).expect("valid part");
    assert_eq!(b.info().body, Body::Length(5));
    assert_eq!(b.reason(), b"OK");
    assert_eq!(Head::new().begin_response(99, b""), Err(HeadError::BadStatus));
    assert_eq!(Head::new().begin_response(1000, b""), Err(HeadError::BadStatus));
    assert_eq!(Head::new().begin_response(200, b"O\rK"), Err(HeadError::BadStatus));
}

#[test]
fn a_built_head_reuses_its_memory() {
    let mut h = Head::new();
    for _ in 0..3 {
        h.set_host_required(false);
        h.begin_request(b"GET", &[b"http://a/x"]).expect("valid part");
        h.build_field(b"host", b"a", &L).expect("valid part");
        h.build_field(b"accept", b"*/*", &L).expect("valid part");
        h.end_head(&L).expect("valid part");
    }
    let caps = h.capacities();
    h.begin_request(b"GET", &[b"http://a/x"]).expect("valid part");
    h.build_field(b"host", b"a", &L).expect("valid part");
    h.build_field(b"accept", b"*/*", &L).expect("valid part");
    h.end_head(&L).expect("valid part");
    assert_eq!(h.capacities(), caps);
}
