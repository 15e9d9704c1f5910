//! HTTP/2's frames as bytes (RFC 9113 4, 6): their types, flags and error codes, a frame
//! header read and written, a padded DATA payload and a HEADERS payload (padding and
//! priority) taken apart. (SETTINGS entries are read where they are applied, in the
//! proxy's `http::h2::conn`.)
//!
//! Owns: the wire format of frames. Must not touch: streams, connections, header blocks'
//! contents (`hpack`).

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY_FRAME: u8 = 2;
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
pub const INTERNAL_ERROR: u32 = 2;
pub const FLOW_CONTROL_ERROR: u32 = 3;
pub const STREAM_CLOSED: u32 = 5;
pub const FRAME_SIZE_ERROR: u32 = 6;
pub const REFUSED_STREAM: u32 = 7;
pub const CANCEL: u32 = 8;
pub const COMPRESSION_ERROR: u32 = 9;
pub const ENHANCE_YOUR_CALM: u32 = 11;

/// The client's connection preface (RFC 9113 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The largest flow-control window (RFC 9113 6.9.1).
pub const MAX_WINDOW: i64 = 0x7fff_ffff;
/// The largest stream id.
pub const MAX_ID: u32 = 0x7fff_ffff;
/// A frame header's size.
pub const HEAD_LEN: usize = 9;

/// A frame's header (RFC 9113 4.1), the reserved bit of its stream id cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The payload's length.
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub id: u32,
}

impl Header {
    /// The header at the start of `src`, if it holds 9 bytes.
    #[inline]
    pub fn parse(src: &[u8]) -> Option<Header> {
        let h = src.get(..HEAD_LEN)?;
        let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        Some(Header { len, kind: h[3], flags: h[4], id: be32(&h[5..9]) & MAX_ID })
    }
}

/// Writes a frame header.
#[inline]
pub fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let [_, a, b, c] = (len as u32).to_be_bytes();
    let [d, e, f, g] = id.to_be_bytes();
    out.extend_from_slice(&[a, b, c, kind, flags, d, e, f, g]);
}

/// The first four bytes of `b` (which must hold them) as a number.
#[inline]
pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Where a DATA frame's data is in its payload, without the padding: `(from, to)`, or the
/// error code.
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

/// A HEADERS frame's payload past its padding and priority: where the block's first
/// fragment is (`(from, to)` in `payload`), and the stream it depends on if it says; or the
/// error code.
pub fn headers_payload(flags: u8, payload: &[u8]) -> Result<(usize, usize, Option<u32>), u32> {
    let (mut from, end) = (0, payload.len());
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = usize::from(*payload.first().ok_or(FRAME_SIZE_ERROR)?);
        from += 1;
    }
    let mut dep = None;
    if flags & PRIORITY != 0 {
        if from + 5 > end {
            return Err(FRAME_SIZE_ERROR);
        }
        dep = Some(be32(&payload[from..from + 4]) & MAX_ID);
        from += 5;
    }
    if pad > end - from {
        return Err(PROTOCOL_ERROR);
    }
    Ok((from, end - pad, dep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips() {
        let mut out = Vec::new();
        frame_head(&mut out, 0x01_02_03, HEADERS, END_HEADERS | END_STREAM, 7);
        assert_eq!(out, [1, 2, 3, 1, 5, 0, 0, 0, 7]);
        let h = Header::parse(&out).expect("nine bytes");
        assert_eq!(h, Header { len: 0x01_02_03, kind: HEADERS, flags: 5, id: 7 });
        assert_eq!(Header::parse(&out[..8]), None);
        // The reserved bit is not part of the id.
        out[5] |= 0x80;
        assert_eq!(Header::parse(&out).map(|h| h.id), Some(7));
    }

    #[test]
    fn padding_and_priority() {
        assert_eq!(unpad(0, b"abc"), Ok((0, 3)));
        assert_eq!(unpad(PADDED, b"\x01ab"), Ok((1, 2)));
        assert_eq!(unpad(PADDED, b"\x03ab"), Err(PROTOCOL_ERROR));
        assert_eq!(unpad(PADDED, b""), Err(FRAME_SIZE_ERROR));
        let p = b"\x02\x80\x00\x00\x03\x10blockxx";
        assert_eq!(headers_payload(PADDED | PRIORITY, p), Ok((6, 11, Some(3))));
        assert_eq!(headers_payload(PRIORITY, b"\0\0\0"), Err(FRAME_SIZE_ERROR));
        assert_eq!(headers_payload(PADDED, b"\x05ab"), Err(PROTOCOL_ERROR));
        assert_eq!(headers_payload(0, b"ab"), Ok((0, 2, None)));
    }
}
