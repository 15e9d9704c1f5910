//! HTTP/2's frames as bytes (RFC 9113 4, 6): their types, flags and error codes, a frame
//! header written, a padded payload read; shared by Fulcrum's two sides of HTTP/2
//! (`backconn` to servers, `frontconn` from clients).
//!
//! Owns: the wire format. Must not touch: streams, connections.

use std::hash::Hasher;

use h2::raw::RawHead;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

/// Error codes (RFC 9113 7).
pub const NO_ERROR: u32 = 0;
pub const PROTOCOL_ERROR: u32 = 1;
pub const FLOW_CONTROL_ERROR: u32 = 3;
pub const STREAM_CLOSED: u32 = 5;
pub const FRAME_SIZE_ERROR: u32 = 6;
pub const REFUSED_STREAM: u32 = 7;
pub const CANCEL: u32 = 8;
pub const COMPRESSION_ERROR: u32 = 9;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const MAX_WINDOW: i64 = 0x7fff_ffff;
/// The largest stream id.
pub const MAX_ID: u32 = 0x7fff_ffff;
/// Bytes queued for the socket beyond which a body's writer waits, and beyond four times which
/// nothing more is read (a server flooding PINGs or SETTINGS gets no answer it does not read).
pub const OUT_HIGH: usize = 64 * 1024;
/// The most bytes a header block may take, all its frames together (HAProxy holds a head in
/// one 16 kB buffer); the fields decoded from it, at most `MAX_LIST`.
pub const MAX_BLOCK: usize = 256 * 1024;
pub const MAX_LIST: usize = 256 * 1024;
/// Streams a server takes until its SETTINGS say (RFC 9113 advises at least 100).
pub const INITIAL_STREAMS: u32 = 100;

/// Stream ids are small odd numbers: hashed by one multiplication.
#[derive(Default)]
pub struct IdHash(u64);

impl Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("stream ids hash as u32")
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let [_, a, b, c] = (len as u32).to_be_bytes();
    let [d, e, f, g] = id.to_be_bytes();
    out.extend_from_slice(&[a, b, c, kind, flags, d, e, f, g]);
}

pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Where a DATA frame's data is in its payload, without the padding.
pub fn unpad(flags: u8, payload: &[u8]) -> Result<(usize, usize), u32> {
    if flags & PADDED == 0 {
        return Ok((0, payload.len()));
    }
    let pad = usize::from(*payload.first().ok_or(FRAME_SIZE_ERROR)?);
    if pad >= payload.len() {
        return Err(PROTOCOL_ERROR);
    }
    Ok((1, payload.len() - pad))
}

/// The `content-length` a head gives: `Err` for one that is not a number, or two that differ.
pub fn content_length(raw: &RawHead) -> Result<Option<u64>, ()> {
    if !raw.has_content_length() {
        return Ok(None);
    }
    let mut found = None;
    for (_, v) in raw.fields().filter(|(n, _)| *n == b"content-length") {
        let n = decimal(v).ok_or(())?;
        if found.is_some_and(|f| f != n) {
            return Err(());
        }
        found = Some(n);
    }
    Ok(found)
}

/// A decimal number of digits only (what `content-length` holds).
fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')))
}
