//! The chunked scanner through the public API: valid bodies in one go and split at every byte,
//! extensions, trailers, and every kind of rejection.

use fulcrum_http::{ChunkError, ChunkedScanner, Scan, MAX_CHUNK_LINE, MAX_TRAILERS};

/// What a scan accepted and whether the body ended (whether it is canonical is tested apart).
fn ad(s: Scan) -> (usize, bool) {
    (s.accepted, s.done)
}

/// Scans `body` in one call.
fn once(body: &[u8]) -> Result<((usize, bool), u64), ChunkError> {
    let mut s = ChunkedScanner::new();
    s.scan(body).map(|r| (ad(r), s.payload()))
}

/// Scans `body` given as two pieces cut at `cut`, the caller keeping what was not accepted.
fn split(body: &[u8], cut: usize) -> Result<((usize, bool), u64), ChunkError> {
    let mut s = ChunkedScanner::new();
    let first = s.scan(&body[..cut])?;
    if first.done {
        return Ok((ad(first), s.payload()));
    }
    let second = s.scan(&body[first.accepted..])?;
    Ok(((first.accepted + second.accepted, second.done), s.payload()))
}

const VALID: &[(&str, &[u8], u64)] = &[
    ("one chunk", b"3\r\nabc\r\n0\r\n\r\n", 3),
    ("empty body", b"0\r\n\r\n", 0),
    ("two chunks, upper-case hex", b"A\r\n0123456789\r\n1\r\nx\r\n0\r\n\r\n", 11),
    ("leading zeros", b"0000000000000000000003\r\nabc\r\n0\r\n\r\n", 3),
    ("extensions", b"3;a=b;c\r\nabc\r\n0;x=\"q \\\" r\"\r\n\r\n", 3),
    ("extensions with spaces", b"3 ; a = b ;c\r\nabc\r\n0\r\n\r\n", 3),
    ("spaces after the size", b"3  \r\nabc\r\n0\t\r\n\r\n", 3),
    ("trailers", b"3\r\nabc\r\n0\r\nX-T: 1\r\nY:\r\n\r\n", 3),
    ("LF-only lines", b"3\nabc\n0\nX: 1\n\n", 3),
    ("CRLF inside data", b"4\r\n\r\n\r\n\r\n0\r\n\r\n", 4),
];

#[test]
fn valid_bodies_are_accepted_whole() {
    for (what, body, payload) in VALID {
        assert_eq!(once(body), Ok(((body.len(), true), *payload)), "{what}");
    }
}

#[test]
fn valid_bodies_split_at_every_byte_give_the_same_result() {
    for (what, body, _) in VALID {
        let expected = once(body);
        for cut in 0..=body.len() {
            assert_eq!(split(body, cut), expected, "{what} cut at {cut}");
        }
        // And one byte at a time, keeping the unaccepted bytes.
        let mut s = ChunkedScanner::new();
        let mut pending = Vec::new();
        let mut total = 0;
        for &b in body.iter() {
            pending.push(b);
            let r = s.scan(&pending).expect("valid body");
            total += r.accepted;
            pending.drain(..r.accepted);
        }
        assert_eq!(total, body.len(), "{what} byte by byte");
        assert!(s.is_done());
    }
}

#[test]
fn bytes_after_the_body_are_left_for_the_next_message() {
    let r = once(b"1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1\r\n");
    assert_eq!(r, Ok(((11, true), 1)));
    let mut s = ChunkedScanner::new();
    s.scan(b"0\r\n\r\n").expect("valid body");
    assert_eq!(s.scan(b"more").map(ad), Ok((0, true)));
    s.reset();
    assert_eq!(s.scan(b"0\r\n\r\n").map(ad), Ok((5, true)));
}

#[test]
fn partial_lines_are_not_accepted_but_data_is() {
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"1").map(ad), Ok((0, false)));
    assert_eq!(s.scan(b"10\r").map(ad), Ok((0, false)));
    assert_eq!(s.scan(b"10\r\nabcd").map(ad), Ok((8, false)));
    assert_eq!(s.payload(), 4);
    assert_eq!(s.scan(b"efghijklmnop\r").map(ad), Ok((12, false)));
    assert_eq!(s.scan(b"\r\n0\r\nX: ").map(ad), Ok((5, false)));
    assert_eq!(s.scan(b"X: y\r\n\r").map(ad), Ok((6, false)));
    assert_eq!(s.scan(b"\r\n").map(ad), Ok((2, true)));
    assert_eq!(s.payload(), 16);
}

/// As HAProxy 2.6 (checked beside it: 14 sevens answer 400 at once): sizes up to 2^52 - 1,
/// the most 13 hex digits give, however many leading zeros.
#[test]
fn sizes_up_to_two_to_the_fifty_two_minus_one_are_accepted() {
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"fffffffffffff\r\nab").map(ad), Ok((17, false)));
    assert_eq!(s.payload(), 2);
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"00000000000000001\r\na").map(ad), Ok((20, false)));
    for too_large in [&b"10000000000000\r\n"[..], b"77777777777777\r\n", b"7fffffffffffffff\r\n"] {
        let mut s = ChunkedScanner::new();
        assert_eq!(s.scan(too_large).map(ad), Err(ChunkError::SizeOverflow));
    }
}

#[test]
fn invalid_bodies_are_rejected_with_the_right_reason() {
    use ChunkError::*;
    let long_size = [&[b'0'; MAX_CHUNK_LINE][..], b"1\r\n"].concat();
    let long_ext = [&b"1;a="[..], &[b'b'; MAX_CHUNK_LINE + 10]].concat();
    let long_trailer = [&b"0\r\nX: "[..], &[b'b'; MAX_CHUNK_LINE], b"\r\n\r\n"].concat();
    let many_trailers = [
        &b"0\r\n"[..],
        &b"X-Trailer: 0123456789012345678901234567890\r\n".repeat(MAX_TRAILERS / 40),
    ]
    .concat();
    let cases: &[(&str, &[u8], ChunkError)] = &[
        ("non-hex size", b"zz\r\n", BadSize),
        ("0x prefix", b"0x3\r\nabc\r\n", BadSize),
        ("empty size", b"\r\nabc\r\n", BadSize),
        ("space before size", b" 3\r\nabc\r\n", BadSize),
        ("negative size", b"-3\r\n", BadSize),
        ("size overflow", b"8000000000000000\r\n", SizeOverflow),
        ("size way over", b"10000000000000000\r\n", SizeOverflow),
        ("junk after size", b"3 x\r\nabc\r\n", BadExtension),
        ("semicolon alone", b"3;\r\nabc\r\n", BadExtension),
        ("extension without name", b"3;=b\r\nabc\r\n", BadExtension),
        ("extension with empty value", b"3;a=\r\nabc\r\n", BadExtension),
        ("unterminated quote", b"3;a=\"b\r\nabc\r\n", BadExtension),
        ("control in extension", b"3;a=\x01\r\n", BadExtension),
        ("two names", b"3;a b\r\n", BadExtension),
        ("data too long", b"3\r\nabcX\r\n0\r\n\r\n", MissingCrlf),
        ("data without line end", b"3\r\nabc0\r\n\r\n", MissingCrlf),
        ("CR then junk after data", b"3\r\nabc\rX0\r\n\r\n", BareCr),
        ("bare CR in size line", b"3\r\r\nabc\r\n", BareCr),
        ("bare CR in trailer", b"0\r\nX: a\rb\r\n\r\n", BareCr),
        ("bad trailer name", b"0\r\nX T: 1\r\n\r\n", BadTrailer),
        ("trailer without colon", b"0\r\nXT\r\n\r\n", BadTrailer),
        ("folded trailer", b"0\r\nX: 1\r\n 2\r\n\r\n", BadTrailer),
        ("NUL in trailer", b"0\r\nX: \x00\r\n\r\n", BadTrailer),
        ("size line too long", &long_size, LineTooLong),
        ("unfinished size line too long", &long_ext, LineTooLong),
        ("trailer line too long", &long_trailer, LineTooLong),
        ("too many trailers", &many_trailers, TrailersTooLarge),
    ];
    for (what, body, expected) in cases {
        assert_eq!(once(body).map(|r| r.0), Err(*expected), "{what}");
        for cut in 0..=body.len().min(200) {
            assert_eq!(split(body, cut).map(|r| r.0), Err(*expected), "{what} cut at {cut}");
        }
    }
}

#[test]
fn an_error_sticks() {
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"g\r\n"), Err(ChunkError::BadSize));
    assert_eq!(s.scan(b"0\r\n\r\n"), Err(ChunkError::BadSize));
}

#[test]
fn invalid_bytes_are_reported_before_the_line_ends() {
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"3g"), Err(ChunkError::BadSize));
    let mut s = ChunkedScanner::new();
    assert_eq!(s.scan(b"0\r\nX T"), Err(ChunkError::BadTrailer));
}

/// Scans `body` in pieces cut at `cut`, forwarding as the engine does: accepted bytes as they
/// are when canonical, else what `render` writes for them.
fn forwarded(body: &[u8], cut: usize) -> Vec<u8> {
    let mut s = ChunkedScanner::new();
    let mut out = Vec::new();
    let mut start = 0;
    for end in [cut, body.len()] {
        let end = end.max(start);
        let before = s.clone();
        let r = s.scan(&body[start..end]).expect("valid body");
        let accepted = &body[start..start + r.accepted];
        if r.canonical {
            out.extend_from_slice(accepted);
        } else {
            before.clone().render(accepted, &mut out);
        }
        start += r.accepted;
        if r.done {
            break;
        }
    }
    out
}

#[test]
fn canonical_bodies_pass_as_they_are_and_others_are_written_again() {
    let cases: &[(&str, &[u8], &[u8])] = &[
        ("canonical", b"3\r\nabc\r\n0\r\n\r\n", b"3\r\nabc\r\n0\r\n\r\n"),
        ("upper-case hex", b"A\r\n0123456789\r\n0\r\n\r\n", b"A\r\n0123456789\r\n0\r\n\r\n"),
        ("trailers", b"1\r\nx\r\n0\r\nX-T: 1\r\n\r\n", b"1\r\nx\r\n0\r\nX-T: 1\r\n\r\n"),
        ("leading zeros", b"0003\r\nabc\r\n00\r\n\r\n", b"3\r\nabc\r\n0\r\n\r\n"),
        ("extensions", b"3;a=b\r\nabc\r\n0;x=\"y\"\r\n\r\n", b"3\r\nabc\r\n0\r\n\r\n"),
        ("spaces after the size", b"3 \r\nabc\r\n0\t\r\n\r\n", b"3\r\nabc\r\n0\r\n\r\n"),
        ("LF-only lines", b"3\nabc\n0\nX: 1\n\n", b"3\r\nabc\r\n0\r\nX: 1\r\n\r\n"),
        ("a large size", b"0010\r\n0123456789abcdef\r\n0\r\n\r\n", b"10\r\n0123456789abcdef\r\n0\r\n\r\n"),
        (
            "framing fields in trailers",
            b"1\r\nx\r\n0\r\nContent-Length: 5\r\nX: 1\r\ntransfer-encoding: chunked\r\nHOST: a\r\n\r\n",
            b"1\r\nx\r\n0\r\nX: 1\r\n\r\n",
        ),
    ];
    for (what, body, expected) in cases {
        let whole = once(body).expect("valid body");
        assert_eq!(whole.0, (body.len(), true), "{what}");
        let mut s = ChunkedScanner::new();
        let canonical = s.scan(body).map(|r| r.canonical).expect("valid body");
        assert_eq!(canonical, body == expected, "{what}: canonical");
        for cut in 0..=body.len() {
            assert_eq!(show(&forwarded(body, cut)), show(expected), "{what} cut at {cut}");
        }
    }
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn decoding_keeps_the_data_only_in_any_cut() {
    let body = b"0003;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\nNEXT";
    for cut in 0..=body.len() {
        let mut s = ChunkedScanner::new();
        let (mut data, mut trailers) = (Vec::new(), Vec::new());
        let first = s.decode(&body[..cut], &mut data, &mut trailers).expect("valid body");
        let second =
            s.decode(&body[first.accepted..], &mut data, &mut trailers).expect("valid body");
        assert!(second.done, "cut at {cut}");
        assert_eq!(first.accepted + second.accepted, body.len() - 4, "cut at {cut}");
        assert_eq!(data, b"abcde", "cut at {cut}");
        assert_eq!(trailers, b"X-T: 1\r\n", "cut at {cut}");
    }
}
