//! The invariants the fuzz targets check (`fuzz/fuzz_targets/fcgi_*.rs`), also run by the test
//! suite over the committed corpus (`fuzz/corpus/fcgi_*`). Each takes any bytes and panics only
//! when an invariant breaks.

use crate::head;
use crate::{decode_pairs, pair, Record};

/// Records read one after another from `data`: each lies within what was read, and a record
/// without padding (nor a reserved byte set) is its header and content again when written back.
pub fn check_records(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some(r)) = Record::parse(rest) {
        assert!(r.len >= crate::HEADER_LEN && r.len <= rest.len());
        assert!(r.content.len() <= crate::MAX_CONTENT);
        if rest[6] == 0 && rest[7] == 0 {
            let mut again = Vec::new();
            crate::header(&mut again, r.kind, r.id, r.content.len());
            again.extend_from_slice(r.content);
            assert_eq!(&again[..], &rest[..r.len]);
        }
        // A record is never whole before all its bytes are there.
        assert_eq!(Record::parse(&rest[..r.len - 1]), Ok(None));
        rest = &rest[r.len..];
    }
}

/// Name-value pairs that decode are decoded the same once written back.
pub fn check_pairs(data: &[u8]) {
    let Ok(pairs) = decode_pairs(data) else { return };
    let mut again = Vec::new();
    for (n, v) in &pairs {
        pair(&mut again, n, v);
    }
    assert_eq!(decode_pairs(&again).expect("written back"), pairs);
}

/// A head that parses ends with its blank line, is not whole one byte earlier, and has a
/// status a response can carry or HAProxy's default.
pub fn check_head(data: &[u8]) {
    match head::parse(data) {
        Ok(Some(h)) => {
            assert!(h.len <= data.len() && data[h.len - 1] == b'\n');
            assert_eq!(head::parse(&data[..h.len - 1]), Ok(None));
            for (n, v) in &h.fields {
                assert!(!n.is_empty() && !v.contains(&b'\n') && !v.contains(&b'\r'));
            }
        }
        Ok(None) => {
            let blank = data.starts_with(b"\n")
                || data.starts_with(b"\r\n")
                || data.windows(2).any(|w| w == b"\n\n")
                || data.windows(3).any(|w| w == b"\n\r\n");
            assert!(!blank, "a blank line was there");
        }
        Err(_) => {}
    }
}

/// Parameters made from any target and header bytes are pairs that decode.
pub fn check_cgi(data: &[u8]) {
    let mid = data.len() / 2;
    let (target, value) = data.split_at(mid);
    let headers: [(&[u8], &[u8]); 2] = [(b"Host", value), (b"X-Any", value)];
    let req = crate::cgi::Request {
        method: b"GET",
        target,
        version: b"HTTP/1.1",
        headers: &headers,
        client: None,
        local: None,
        https: false,
        body_len: 0,
    };
    let app =
        crate::cgi::App { docroot: b"/r", index: Some(b"i.php"), path_info: None, software: b"f" };
    let mut out = Vec::new();
    if crate::cgi::params(&req, &app, &[], &mut out).is_ok() {
        let pairs = decode_pairs(&out).expect("our own pairs decode");
        assert!(pairs.iter().any(|(n, _)| *n == b"SCRIPT_NAME"));
    }
}
