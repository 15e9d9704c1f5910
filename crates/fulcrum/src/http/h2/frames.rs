//! What Fulcrum's two sides of HTTP/2 (`backconn` to servers, `frontconn` from clients) share
//! of frames beyond their wire format (which is `fulcrum_h2::frame`, re-exported here): the
//! limits they hold peers to, stream ids' hash, a head's `content-length`.
//!
//! Owns: those limits. Must not touch: streams, connections.

use std::hash::Hasher;

use fulcrum_h2::RawHead;

pub use fulcrum_h2::frame::*;

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
