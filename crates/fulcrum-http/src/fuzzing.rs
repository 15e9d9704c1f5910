//! Invariant checks behind the fuzz targets (`fuzz/fuzz_targets/*.rs`) and the corpus replay
//! test (`tests/corpus.rs`): each takes arbitrary bytes and panics when the codec breaks a
//! promise. Must not touch the codec's internals: it uses the public API only, so what it
//! checks is what the engine gets.
//!
//! - [`check_head`]: a request and a response parse, in one go and split at several points
//!   (resumed), must give the same result; a parsed head written out must parse back to the
//!   same head; an edit is either refused and changes nothing, or gives a head that parses
//!   back to itself.
//! - [`check_chunked`]: a body scanned in one go and in pieces (each call given the bytes left
//!   over plus a new piece) must give the same accepted count, end and error.

use crate::{
    strip_hop_by_hop, Body, ChunkError, ChunkedScanner, EditError, Head, HeadError, Info, Limits,
    Scan,
};

/// A small deterministic generator seeded from the input, so a corpus file always replays the
/// same way.
struct Rng(u64);

impl Rng {
    fn new(data: &[u8]) -> Rng {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Response,
}

fn parse(
    h: &mut Head,
    kind: Kind,
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<usize>, HeadError> {
    match kind {
        Kind::Request => h.parse_request(buf, limits),
        Kind::Response => h.parse_response(buf, limits),
    }
}

/// Everything observable about a head, to compare two of them.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    method: Vec<u8>,
    target: Vec<u8>,
    version: crate::Version,
    status: u16,
    reason: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    info: Info,
}

fn snapshot(h: &Head, full_info: bool) -> Snapshot {
    let info = if full_info {
        Info { te_and_cl: false, ..*h.info() }
    } else {
        Info { body: h.info().body, ..Info::default() }
    };
    Snapshot {
        method: h.method_bytes().to_vec(),
        target: h.target().to_vec(),
        version: h.version(),
        status: h.status(),
        reason: h.reason().to_vec(),
        headers: h.headers().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
        info,
    }
}

fn written(h: &Head) -> Vec<u8> {
    let mut out = Vec::new();
    h.write_to(&mut out);
    out
}

const ROOMY: Limits = Limits { max_head: usize::MAX, max_headers: usize::MAX };

/// Writes `h`, parses it back and checks it is the same head.
fn assert_round_trip(h: &Head, kind: Kind, full_info: bool, what: &str) {
    let out = written(h);
    let mut back = Head::new();
    let r = parse(&mut back, kind, &out, &ROOMY);
    // What only a client is refused for: an edit may remove the Host of an HTTP/1.1 request
    // (`del-header host`), and the proxy sends it on.
    // And an edit may give an HTTP/1.0 GET a body (`set-header Content-Length`).
    if matches!(r, Err(HeadError::MissingHost | HeadError::PayloadWithMethod)) {
        return;
    }
    assert_eq!(r, Ok(Some(out.len())), "{what}: written head does not parse back: {out:?}");
    assert_eq!(snapshot(&back, full_info), snapshot(h, full_info), "{what}: head changed: {out:?}");
    assert_eq!(written(&back), out, "{what}: writing is not stable");
}

/// Checks the head parser, writer and editor on `data` (see the module doc).
pub fn check_head(data: &[u8]) {
    let mut rng = Rng::new(data);
    let small = Limits { max_head: 16 + rng.below(400), max_headers: rng.below(12) };
    for kind in [Kind::Request, Kind::Response] {
        for limits in [Limits::default(), small] {
            let mut one = Head::new();
            let expected = parse(&mut one, kind, data, &limits);
            if let Ok(Some(n)) = expected {
                assert!(n <= data.len() && n <= limits.max_head, "consumed {n} bytes");
                assert!(one.header_len() < limits.max_headers.max(1));
            }
            check_split(data, kind, &limits, &expected, &mut rng);
            if let Ok(Some(_)) = expected {
                assert_round_trip(&one, kind, true, "parse");
                check_edits(&mut one, kind, data, &mut rng);
            }
        }
        check_lenient(data, kind, &mut rng);
    }
}

/// The lenient parse (`option accept-invalid-http-*`) takes all the strict one takes, the same
/// way and tolerating nothing; in pieces it gives what it gives at once; and what it takes
/// besides is written out and parsed back (leniently) to the same head.
fn check_lenient(data: &[u8], kind: Kind, rng: &mut Rng) {
    let limits = Limits::default();
    let mut strict = Head::new();
    let s = parse(&mut strict, kind, data, &limits);
    let mut lax = Head::new();
    lax.set_lenient(true);
    let l = parse(&mut lax, kind, data, &limits);
    if let Ok(Some(n)) = s {
        assert_eq!(l, Ok(Some(n)), "the lenient parse refuses what the strict one takes");
        assert_eq!(lax.tolerated(), None);
        assert_eq!(snapshot(&lax, true), snapshot(&strict, true));
    }
    let mut cuts = [rng.below(data.len() + 1), data.len()];
    cuts.sort_unstable();
    let mut split = Head::new();
    split.set_lenient(true);
    for cut in cuts {
        let r = parse(&mut split, kind, &data[..cut], &limits);
        if r != Ok(None) || cut == data.len() {
            assert_eq!(r, l, "lenient, split at {cut} of {}", data.len());
            break;
        }
    }
    if let Ok(Some(_)) = l {
        let out = written(&lax);
        let mut back = Head::new();
        back.set_lenient(true);
        let r = parse(&mut back, kind, &out, &ROOMY);
        if !matches!(r, Err(HeadError::MissingHost | HeadError::PayloadWithMethod)) {
            assert_eq!(r, Ok(Some(out.len())), "lenient head does not parse back: {out:?}");
            assert_eq!(
                snapshot(&back, true),
                snapshot(&lax, true),
                "lenient head changed: {out:?}"
            );
        }
    }
}

/// Parsing the input in pieces, resuming, gives what parsing it at once gave.
fn check_split(
    data: &[u8],
    kind: Kind,
    limits: &Limits,
    expected: &Result<Option<usize>, HeadError>,
    rng: &mut Rng,
) {
    let mut cuts = [rng.below(data.len() + 1), rng.below(data.len() + 1), data.len()];
    cuts.sort_unstable();
    let mut h = Head::new();
    // A stale parse of other bytes must not leak in: clear() starts over.
    let _ = parse(&mut h, kind, b"GET / HTTP/1.1\r\nX: y\r\n", limits);
    h.clear();
    for cut in cuts {
        let r = parse(&mut h, kind, &data[..cut], limits);
        if r != Ok(None) || cut == data.len() {
            assert_eq!(&r, expected, "split at {cut} of {}", data.len());
            return;
        }
    }
}

/// Names the edits use: framing and connection names on purpose, to hit the checks.
const NAMES: [&[u8]; 9] = [
    b"X-Fuzz",
    b"Content-Length",
    b"Transfer-Encoding",
    b"Host",
    b"Connection",
    b"Upgrade",
    b"Expect",
    b"x-fuzz",
    b"Bad Name",
];

const VALUES: [&[u8]; 10] = [
    b"1",
    b"chunked",
    b"gzip, chunked",
    b"close",
    b"upgrade",
    b"websocket",
    b"example.com",
    b"",
    b" padded\t",
    b"a\r\nb",
];

fn pick<'a>(rng: &mut Rng, data: &'a [u8], fixed: &[&'a [u8]]) -> &'a [u8] {
    if rng.below(3) == 0 && !data.is_empty() {
        let a = rng.below(data.len());
        let b = a + rng.below((data.len() - a).min(40) + 1);
        &data[a..b]
    } else {
        fixed[rng.below(fixed.len())]
    }
}

/// Applies a few edits; each must be refused without a trace or give a head that round-trips.
fn check_edits(h: &mut Head, kind: Kind, data: &[u8], rng: &mut Rng) {
    for _ in 0..6 {
        let before = written(h);
        let body_before = h.info().body;
        let name = pick(rng, data, &NAMES);
        let value = pick(rng, data, &VALUES);
        let op = rng.below(12);
        let result: Result<(), EditError> = match op {
            0 => h.add_header(name, value),
            1 => h.set_header(name, value),
            2 => {
                // Keep the WebSocket keys: removing them is allowed but makes the head invalid.
                if !name.to_ascii_lowercase().starts_with(b"sec-websocket-") {
                    h.remove_header(name);
                }
                Ok(())
            }
            3 => h.set_header_value_at(rng.below(h.header_len() + 1), value),
            4 => h.set_path(pick(rng, data, &[b"/", b"/a/b", b"x", b"/q?x"])),
            5 => h.set_query(if rng.below(4) == 0 { None } else { Some(value) }),
            6 => h.set_method(pick(rng, data, &[b"GET", b"CONNECT", b"HEAD", b"OPTIONS", b"G T"])),
            7 => {
                h.set_target(pick(rng, data, &[b"/", b"*", b"http://example.com:80/x?y", b"a:443"]))
            }
            8 => h.set_status(
                rng.below(1100) as u16,
                if rng.below(2) == 0 { None } else { Some(value) },
            ),
            9 => {
                strip_hop_by_hop(h, rng.below(2) == 0);
                Ok(())
            }
            10 => {
                let mut i = 0;
                h.retain_headers(|n, _| {
                    i += 1;
                    i % 2 == 0 || n.to_ascii_lowercase().starts_with(b"sec-websocket-")
                });
                Ok(())
            }
            _ => h.add_header(b"X-Fuzz", value),
        };
        match result {
            Err(e) => {
                assert_eq!(written(h), before, "refused edit {op} ({e}) changed the head");
                assert_eq!(h.info().body, body_before, "refused edit {op} changed the body");
            }
            Ok(()) => assert_round_trip(h, kind, false, "edit"),
        }
    }
    if h.info().body == Body::Chunked {
        assert!(h.header_count(b"transfer-encoding") > 0, "chunked without Transfer-Encoding");
    }
}

fn scan_all(data: &[u8]) -> (Result<Scan, ChunkError>, u64) {
    let mut s = ChunkedScanner::new();
    let r = s.scan(data);
    (r, s.payload())
}

/// Scans `data` fed in the given pieces, as the engine does; returns what was accepted in all.
fn scan_pieces(data: &[u8], cuts: &[usize]) -> (Result<Scan, ChunkError>, u64) {
    let mut s = ChunkedScanner::new();
    let mut start = 0; // first byte not accepted yet
    let mut total = 0;
    let mut canonical = true;
    for &cut in cuts.iter().chain(std::iter::once(&data.len())) {
        let cut = cut.max(start);
        match s.scan(&data[start..cut]) {
            Err(e) => return (Err(e), s.payload()),
            Ok(scan) => {
                assert!(scan.accepted <= cut - start);
                start += scan.accepted;
                total += scan.accepted;
                canonical &= scan.canonical;
                if scan.done {
                    return (Ok(Scan { accepted: total, done: true, canonical }), s.payload());
                }
            }
        }
    }
    (Ok(Scan { accepted: total, done: false, canonical }), s.payload())
}

/// Checks the chunked scanner on `data` (see the module doc).
pub fn check_chunked(data: &[u8]) {
    let mut rng = Rng::new(data);
    let (expected, payload) = scan_all(data);
    if let Ok(scan) = expected {
        assert!(scan.accepted <= data.len());
        assert!(payload <= scan.accepted as u64);
    }
    let mut cuts: Vec<usize> = (0..1 + rng.below(8)).map(|_| rng.below(data.len() + 1)).collect();
    cuts.sort_unstable();
    assert_eq!(scan_pieces(data, &cuts), (expected, payload), "pieces cut at {cuts:?}");
    if data.len() <= 300 {
        let every: Vec<usize> = (0..data.len()).collect();
        assert_eq!(scan_pieces(data, &every), (expected, payload), "byte by byte");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checks_pass_on_ordinary_messages() {
        check_head(b"GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc");
        check_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        check_chunked(b"3\r\nabc\r\n0\r\nX: y\r\n\r\n");
    }

    #[test]
    fn the_checks_pass_on_garbage() {
        check_head(b"\x00\xff\r\r\n\n");
        check_head(b"");
        check_chunked(b"zz\r\n");
        check_chunked(b"");
    }
}
