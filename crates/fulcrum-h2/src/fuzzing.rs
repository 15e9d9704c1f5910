//! Invariant checks behind the fuzz targets (`fuzz/fuzz_targets/{hpack,frames}.rs`) and the
//! corpus replay test (`tests/corpus.rs`): each takes arbitrary bytes and panics when the
//! crate breaks a promise. Uses the public API only.
//!
//! - [`check_hpack`]: a header block decodes or fails without panicking; a decoded head's
//!   size is what RFC 7541 4.1 counts and its table within its size; the fields decoded,
//!   encoded again (literals, Huffman-coded or not) decode to the same fields; any bytes
//!   Huffman-encoded decode back to themselves, and bytes that decode re-encode to a code
//!   that decodes to the same text.
//! - [`check_frames`]: frames read one after the other from the bytes; each header written
//!   back gives the same bytes (less the reserved bit); payload ranges found for DATA and
//!   HEADERS lie inside the payload.

use bytes::BytesMut;

use crate::frame::{self, Header};
use crate::hpack::{self, RawDecoder, RawHead};
use crate::huffman;

/// See the module's doc. The first byte sets the table's size (in 32-byte steps), the
/// second the limits given to `load`; the rest is the block.
pub fn check_hpack(data: &[u8]) {
    let [size, limit, block @ ..] = data else { return };
    let max_list = 64 + usize::from(*limit) * 64;
    let mut decoder = RawDecoder::new(usize::from(*size) * 32);
    let mut src = BytesMut::from(block);
    let mut raw = RawHead::with_room();
    let res = hpack::load(&mut decoder, &mut src, &mut raw, max_list, 4 * max_list);
    assert!(decoder.table_size() <= usize::from(*size) * 32);
    let table: usize = decoder.table().map(|(n, v)| n.len() + v.len() + 32).sum();
    assert_eq!(table, decoder.table_size());
    let fields: Vec<(Vec<u8>, Vec<u8>)> =
        raw.all().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
    if res.is_ok() {
        // Fields after the list's limit are dropped, not counted: the size covers those kept
        // at least.
        let kept: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert!(raw.size() >= kept, "{} < {kept}", raw.size());
        for (n, _) in raw.fields() {
            assert!(!n.starts_with(b":"), "a pseudo-field among the regular ones");
            assert!(raw.contains(n), "a field kept is found");
        }
        // Encoded again as literals without indexing, they decode to the same fields.
        let mut again = Vec::new();
        for (i, (n, v)) in fields.iter().enumerate() {
            again.push(0x00);
            for (s, huffman) in [(n, i % 2 == 0), (v, i % 3 == 0)] {
                match huffman {
                    true => hpack::write_string_huffman(s, &mut again),
                    false => hpack::write_string(s, &mut again),
                }
            }
        }
        let mut d2 = RawDecoder::new(0);
        let mut src2 = BytesMut::from(&again[..]);
        let mut raw2 = RawHead::new();
        d2.decode(&mut src2, &mut raw2, |_, _, _| std::ops::ControlFlow::Continue(()))
            .expect("fields encoded again decode");
        assert!(src2.is_empty());
        let fields2: Vec<(Vec<u8>, Vec<u8>)> =
            raw2.all().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
        assert_eq!(fields, fields2);
    }
    // Huffman both ways.
    let mut enc = Vec::new();
    huffman::encode_append(block, &mut enc);
    assert_eq!(enc.len(), huffman::encoded_len(block));
    let mut dec = Vec::new();
    assert_eq!(huffman::decode_append(&enc, &mut dec), Ok(block.len()));
    assert_eq!(dec, block);
    let mut text = Vec::new();
    if huffman::decode_append(block, &mut text).is_ok() {
        let mut code = Vec::new();
        huffman::encode_append(&text, &mut code);
        let mut back = Vec::new();
        assert_eq!(huffman::decode_append(&code, &mut back), Ok(text.len()));
        assert_eq!(back, text);
        assert!(code.len() <= block.len(), "the shortest padding, never longer");
    } else {
        assert!(text.is_empty(), "a failed decode appends nothing");
    }
}

/// See the module's doc.
pub fn check_frames(data: &[u8]) {
    let mut at = 0;
    while let Some(h) = Header::parse(&data[at..]) {
        let mut out = Vec::new();
        frame::frame_head(&mut out, h.len, h.kind, h.flags, h.id);
        let mut orig = data[at..at + frame::HEAD_LEN].to_vec();
        orig[5] &= 0x7f;
        assert_eq!(out, orig);
        at += frame::HEAD_LEN;
        let Some(payload) = data.get(at..at + h.len) else { return };
        at += h.len;
        match h.kind {
            frame::DATA => {
                if let Ok((from, to)) = frame::unpad(h.flags, payload) {
                    assert!(from <= to && to <= payload.len());
                }
            }
            frame::HEADERS => {
                if let Ok((from, to, dep)) = frame::headers_payload(h.flags, payload) {
                    assert!(from <= to && to <= payload.len());
                    assert_eq!(dep.is_some(), h.flags & frame::PRIORITY != 0);
                    assert!(dep.unwrap_or(0) <= frame::MAX_ID);
                }
            }
            _ => {}
        }
    }
}
