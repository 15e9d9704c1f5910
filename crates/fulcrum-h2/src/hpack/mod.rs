//! HPACK decoding (RFC 7541) of a header block into one buffer of bytes: a [`RawHead`].
//!
//! Each field's name and value are copied, or Huffman-decoded, once into the head's buffer,
//! the pseudo-fields found by offset; nothing is made per field (no name or value type, no
//! map). The dynamic table keeps its entries as bytes with the verdict of the field checks
//! made when each was decoded, so a field referred to by index is not checked again.
//! [`load`] adds the checks RFC 9113 8.2 and 8.3 make on any head. Decoded heads' buffers
//! go back to a per-thread pool when dropped (heads are made by a connection's task and
//! dropped by its streams' tasks, a hundred at a time).
//!
//! Owns: header blocks in, the decoder's table. Must not touch: frames, streams, I/O.

use crate::huffman;

mod head;

pub use head::{parse_status, All, Fields, Pseudo, RawHead};
use head::{seen_of, ENTRY_HEAD};

use bytes::{Buf, BytesMut};
use std::collections::VecDeque;
use std::ops::ControlFlow;

/// A header block that cannot be decoded (RFC 7541 decoding errors: a connection error of
/// type COMPRESSION_ERROR in HTTP/2), or a block cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecoderError {
    /// Index 0, or past the tables' ends.
    InvalidTableIndex,
    /// A Huffman string with EOS or bad padding.
    InvalidHuffmanCode,
    /// A table size update after a field, or above the size the peer was told.
    InvalidMaxDynamicSize,
    /// An integer of more than 5 bytes.
    IntegerOverflow,
    /// The block ends in the middle of a representation.
    NeedMore(NeedMore),
}

/// Where a block was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedMore {
    /// In a string's length prefix.
    UnexpectedEndOfStream,
    /// In an integer.
    IntegerUnderflow,
    /// In a string.
    StringUnderflow,
}

/// What [`load`] found in a header block besides its fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    /// A field broke a rule of RFC 9113 8.2 or 8.3 (dropped): the message is malformed.
    pub malformed: bool,
    /// The list reached `max_list` (the fields beyond it dropped).
    pub over_size: bool,
    /// The list went past `abuse` (decoding stopped): the peer is abusive.
    pub way_too_large: bool,
}

/// Decodes a header block (or the part of it `src` holds) into `raw` with the checks of RFC
/// 9113 8.2 and 8.3 that hold for any head: pseudo-fields first, each once, known ones (a
/// token `:method`, a three-digit `:status`, UTF-8 `:scheme` and `:protocol`; `:authority`
/// and `:path` are left to the user); regular names as the decoder checks them; no
/// connection-specific field; `te` only `trailers`. A field that breaks one is dropped and
/// the block reported malformed. Which pseudo-fields a request or a response may carry is
/// the caller's to check.
pub fn load(
    decoder: &mut RawDecoder,
    src: &mut BytesMut,
    raw: &mut RawHead,
    max_list: usize,
    abuse: usize,
) -> Result<Loaded, DecoderError> {
    let mut loaded = Loaded::default();
    // Whether a regular field came (pseudo-fields must come before).
    let mut reg = raw.fields().next().is_some();
    let mut over_size = raw.size >= max_list;
    decoder.decode(src, raw, |raw, at, valid| {
        let (name, value) = raw.entry(at);
        let size = name.len() + value.len() + 32;
        let mut pseudo = None;
        // (`valid`: the name's and value's bytes, checked by the decoder.)
        let keep = valid
            && match name.first() {
                None => false,
                Some(b':') => {
                    pseudo = Pseudo::from_name(name);
                    !reg && match pseudo {
                        Some(p) if raw.has_pseudo(p) => false,
                        Some(Pseudo::Method) => is_token(value),
                        Some(Pseudo::Status) => parse_status(value).is_some(),
                        Some(Pseudo::Authority | Pseudo::Path) => true,
                        Some(_) => std::str::from_utf8(value).is_ok(),
                        None => false,
                    }
                }
                Some(_) => {
                    reg = true;
                    !matches!(
                        name,
                        b"connection"
                            | b"transfer-encoding"
                            | b"upgrade"
                            | b"keep-alive"
                            | b"proxy-connection"
                    ) && (name != b"te" || value == b"trailers")
                }
            };
        let seen = if keep && pseudo.is_none() { seen_of(name) } else { 0 };
        if !keep {
            loaded.malformed = true;
            raw.buf.truncate(at);
            return ControlFlow::Continue(());
        }
        let total = raw.add_size(size);
        if total > abuse {
            loaded.way_too_large = true;
            raw.buf.truncate(at);
            return ControlFlow::Break(());
        }
        if total >= max_list {
            over_size = true;
        }
        if over_size {
            raw.buf.truncate(at);
        } else if let Some(p) = pseudo {
            raw.set_pseudo(p, at);
        } else {
            raw.add_seen(seen);
        }
        ControlFlow::Continue(())
    })?;
    loaded.over_size = over_size;
    Ok(loaded)
}

/// HPACK's static table (RFC 7541 Appendix A).
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// One dynamic table entry: name then value, in one allocation.
#[derive(Debug)]
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
    /// Its name and value pass `name_ok` and `value_ok` (found when it was decoded).
    name_ok: bool,
    value_ok: bool,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    /// Its size as RFC 7541 4.1 counts it.
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

/// A table entry's name and value, and whether each passed the field checks.
type Found<'a> = (&'a [u8], &'a [u8], bool, bool);

/// An HPACK decoder whose fields go into a [`RawHead`]'s buffer.
#[derive(Debug)]
pub struct RawDecoder {
    /// Newest first.
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// The table size the peer was told, to take effect at the next block.
    max_size_update: Option<usize>,
    /// The largest table size the peer may ask for.
    last_max_update: usize,
}

impl RawDecoder {
    /// A decoder whose table holds `size` bytes (RFC 7541 4.2).
    pub fn new(size: usize) -> RawDecoder {
        RawDecoder {
            entries: VecDeque::new(),
            size: 0,
            max_size: size,
            max_size_update: None,
            last_max_update: size,
        }
    }

    /// The table size sent in SETTINGS_HEADER_TABLE_SIZE (as `Decoder::queue_size_update`).
    pub fn queue_size_update(&mut self, size: usize) {
        let size = match self.max_size_update {
            Some(v) => v.max(size),
            None => size,
        };
        self.max_size_update = Some(size);
    }

    /// Decodes the fields of `src` into `out`'s buffer, each as an entry of its own, and calls
    /// `f(out, start of the entry, valid)` after each (which may drop it by truncating the
    /// buffer back to that start); `valid`: its name is a pseudo-field's or a token without
    /// upper case, its value has no control byte but tab (found once per table entry, not at
    /// each use of it). A field cut short stays in `src` (`NeedMore`) for the next call,
    /// with the rest of the block; the fields before it are consumed.
    pub fn decode<F>(
        &mut self,
        src: &mut BytesMut,
        out: &mut RawHead,
        mut f: F,
    ) -> Result<(), DecoderError>
    where
        F: FnMut(&mut RawHead, usize, bool) -> ControlFlow<()>,
    {
        if let Some(size) = self.max_size_update.take() {
            self.last_max_update = size;
        }
        let mut can_resize = true;
        let mut pos = 0;
        // Room for the block as it comes (Huffman codes decode to at most 8/5 of their size)
        // and the entries' lengths: one allocation for most blocks.
        out.buf.reserve(src.len() * 2 + 64);
        let res = loop {
            if pos >= src.len() {
                break Ok(());
            }
            let mut p = pos;
            let start = out.buf.len();
            match self.one(src, &mut p, &mut out.buf, &mut can_resize) {
                Ok(Some(valid)) => {
                    pos = p;
                    if f(out, start, valid).is_break() {
                        break Ok(());
                    }
                }
                Ok(None) => pos = p,
                Err(e) => {
                    out.buf.truncate(start);
                    break Err(e);
                }
            }
        };
        src.advance(pos);
        res
    }

    /// Decodes one representation at `p`: `Some(valid)` when it was a field (its entry added
    /// to `out`, see `decode`), `None` for a table size update.
    fn one(
        &mut self,
        src: &[u8],
        p: &mut usize,
        out: &mut Vec<u8>,
        can_resize: &mut bool,
    ) -> Result<Option<bool>, DecoderError> {
        let b = src[*p];
        if b & 0x80 != 0 {
            // Indexed (RFC 7541 6.1)
            *can_resize = false;
            let idx = decode_int(src, p, 7)?;
            let (name, value, name_ok, value_ok) = self.get(idx)?;
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(value);
            return Ok(Some(name_ok && value_ok));
        }
        if b & 0xc0 == 0 && b & 0xe0 == 0x20 {
            // Dynamic table size update (6.3)
            if !*can_resize {
                return Err(DecoderError::InvalidMaxDynamicSize);
            }
            let size = decode_int(src, p, 5)?;
            if size > self.last_max_update {
                return Err(DecoderError::InvalidMaxDynamicSize);
            }
            self.max_size = size;
            self.evict(0);
            return Ok(None);
        }
        // Literal, with incremental indexing (6.2.1), without (6.2.2) or never indexed (6.2.3)
        *can_resize = false;
        let index = b & 0x40 != 0;
        let idx = decode_int(src, p, if index { 6 } else { 4 })?;
        let start = out.len();
        out.extend_from_slice(&[0; ENTRY_HEAD]);
        let (name_len, name_ok) = if idx == 0 {
            match string(src, p, out) {
                Ok(n) => (n, name_ok(&out[out.len() - n..])),
                Err(e) => {
                    out.truncate(start);
                    return Err(e);
                }
            }
        } else {
            match self.get(idx) {
                Ok((name, _, ok, _)) => {
                    out.extend_from_slice(name);
                    (name.len(), ok)
                }
                Err(e) => {
                    out.truncate(start);
                    return Err(e);
                }
            }
        };
        let value_len = match string(src, p, out) {
            Ok(n) => n,
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        };
        out[start..start + 4].copy_from_slice(&(name_len as u32).to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&(value_len as u32).to_le_bytes());
        let value_ok = value_ok(&out[out.len() - value_len..]);
        if index {
            self.insert(&out[start + ENTRY_HEAD..], name_len, name_ok, value_ok);
        }
        Ok(Some(name_ok && value_ok))
    }

    /// The entry at a table index (static then dynamic, RFC 7541 2.3.3), and whether its name
    /// and value are valid (see `decode`).
    fn get(&self, idx: usize) -> Result<Found<'_>, DecoderError> {
        match idx {
            0 => Err(DecoderError::InvalidTableIndex),
            1..=61 => Ok((STATIC[idx - 1].0, STATIC[idx - 1].1, true, true)),
            _ => match self.entries.get(idx - 62) {
                Some(e) => Ok((e.name(), e.value(), e.name_ok, e.value_ok)),
                None => Err(DecoderError::InvalidTableIndex),
            },
        }
    }

    /// Inserts a field (name then value). A peer that indexes the same field in every head
    /// (a `content-length` of the same size, say) evicts an entry of its size each time: its
    /// memory is reused rather than freed and allocated again.
    fn insert(&mut self, field: &[u8], name_len: usize, name_ok: bool, value_ok: bool) {
        let len = field.len() + 32;
        let mut spare = None;
        while self.size + len > self.max_size {
            match self.entries.pop_back() {
                Some(last) => {
                    self.size -= last.size();
                    spare = Some(last.bytes);
                }
                None => break,
            }
        }
        if self.size + len <= self.max_size {
            let bytes = match spare {
                Some(mut b) if b.len() == field.len() => {
                    b.copy_from_slice(field);
                    b
                }
                _ => field.into(),
            };
            self.size += len;
            self.entries.push_front(Entry { bytes, name_len, name_ok, value_ok });
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit (all of them if it cannot).
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.entries.pop_back() {
                Some(last) => self.size -= last.size(),
                None => return,
            }
        }
    }

    /// The dynamic table's entries, newest first (for tests).
    pub fn table(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.entries.iter().map(|e| (e.name(), e.value()))
    }

    /// The dynamic table's size (RFC 7541 4.1).
    pub fn table_size(&self) -> usize {
        self.size
    }
}

/// A field name a head may carry: a pseudo-field's (checked by name where the head is read),
/// or a token without upper case (RFC 9113 8.2.1).
fn name_ok(name: &[u8]) -> bool {
    match name.first() {
        Some(b':') => true,
        Some(_) => name.iter().all(|&b| fulcrum_http::is_tchar(b) && !b.is_ascii_uppercase()),
        None => false,
    }
}

/// A field value as `http::HeaderValue` takes it: no control byte but tab.
fn value_ok(value: &[u8]) -> bool {
    value.iter().all(|&b| (b >= 32 && b != 127) || b == b'\t')
}

/// Whether `v` is a token (RFC 9110 5.6.2), as a method is.
pub fn is_token(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(|&b| fulcrum_http::is_tchar(b))
}

/// A string literal (RFC 7541 5.2) appended to `out`: its decoded length.
fn string(src: &[u8], p: &mut usize, out: &mut Vec<u8>) -> Result<usize, DecoderError> {
    let Some(&first) = src.get(*p) else {
        return Err(DecoderError::NeedMore(NeedMore::UnexpectedEndOfStream));
    };
    let len = decode_int(src, p, 7)?;
    if len > src.len() - *p {
        return Err(DecoderError::NeedMore(NeedMore::StringUnderflow));
    }
    let s = &src[*p..*p + len];
    *p += len;
    if first & 0x80 != 0 {
        huffman::decode_append(s, out).map_err(|_| DecoderError::InvalidHuffmanCode)
    } else {
        out.extend_from_slice(s);
        Ok(len)
    }
}

/// Appends an integer with an `n`-bit prefix (RFC 7541 5.1), the first byte's other bits
/// `flags`.
#[inline]
pub fn write_int(mut v: usize, n: u32, flags: u8, dst: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if v < max {
        dst.push(flags | v as u8);
        return;
    }
    dst.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        dst.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a string literal (RFC 7541 5.2) as it is, not Huffman-coded.
#[inline]
pub fn write_string(s: &[u8], dst: &mut Vec<u8>) {
    write_int(s.len(), 7, 0x00, dst);
    dst.extend_from_slice(s);
}

/// Appends a string literal Huffman-coded.
pub fn write_string_huffman(s: &[u8], dst: &mut Vec<u8>) {
    write_int(huffman::encoded_len(s), 7, 0x80, dst);
    huffman::encode_append(s, dst);
}

/// An integer with an N-bit prefix (RFC 7541 5.1): at most 5 bytes.
fn decode_int(src: &[u8], p: &mut usize, prefix: u8) -> Result<usize, DecoderError> {
    const MAX_BYTES: usize = 5;
    let Some(&first) = src.get(*p) else {
        return Err(DecoderError::NeedMore(NeedMore::IntegerUnderflow));
    };
    *p += 1;
    let mask = ((1u16 << prefix) - 1) as u8;
    let mut ret = (first & mask) as usize;
    if ret < mask as usize {
        return Ok(ret);
    }
    let mut bytes = 1;
    let mut shift = 0;
    while let Some(&b) = src.get(*p) {
        *p += 1;
        bytes += 1;
        ret += ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(ret);
        }
        if bytes == MAX_BYTES {
            return Err(DecoderError::IntegerOverflow);
        }
    }
    Err(DecoderError::NeedMore(NeedMore::IntegerUnderflow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn unhex(s: &str) -> Vec<u8> {
        let s: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        s.chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).expect("ascii"), 16).expect("hex"))
            .collect()
    }

    fn decode(d: &mut RawDecoder, hex: &str) -> Result<Vec<String>, String> {
        let mut src = BytesMut::from(&unhex(hex)[..]);
        let mut head = RawHead::new();
        d.decode(&mut src, &mut head, |_, _, _| std::ops::ControlFlow::Continue(()))
            .map_err(|e| format!("{e:?}"))?;
        assert!(src.is_empty(), "the whole block is consumed");
        Ok(head
            .all()
            .map(|(n, v)| format!("{}: {}", String::from_utf8_lossy(n), String::from_utf8_lossy(v)))
            .collect())
    }

    fn table(d: &RawDecoder) -> Vec<String> {
        d.table()
            .map(|(n, v)| format!("{}: {}", String::from_utf8_lossy(n), String::from_utf8_lossy(v)))
            .collect()
    }

    #[test]
    fn peers_requests_decode_as_rfc_7541_c3_and_c4_show() {
        // C.3 (literals as they are) and C.4 (the same requests Huffman-coded) leave the same
        // fields and the same dynamic table.
        let blocks = [
            [
                "828684410f7777772e6578616d706c652e636f6d",
                "828684be58086e6f2d6361636865",
                "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
            ],
            [
                "828684418cf1e3c2e5f23a6ba0ab90f4ff",
                "828684be5886a8eb10649cbf",
                "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
            ],
        ];
        for (i, [one, two, three]) in blocks.iter().enumerate() {
            let mut d = RawDecoder::new(4096);
            let base = [":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com"];
            assert_eq!(decode(&mut d, one), Ok(base.map(String::from).to_vec()), "C.{}.1", i + 3);
            assert_eq!(table(&d), [":authority: www.example.com"]);
            assert_eq!(d.table_size(), 57);
            let mut want = base.map(String::from).to_vec();
            want.push("cache-control: no-cache".into());
            assert_eq!(decode(&mut d, two), Ok(want), "C.{}.2", i + 3);
            assert_eq!(d.table_size(), 110);
            assert_eq!(
                decode(&mut d, three),
                Ok(vec![
                    ":method: GET".to_string(),
                    ":scheme: https".into(),
                    ":path: /index.html".into(),
                    ":authority: www.example.com".into(),
                    "custom-key: custom-value".into(),
                ]),
                "C.{}.3",
                i + 3
            );
            assert_eq!(
                table(&d),
                [
                    "custom-key: custom-value",
                    "cache-control: no-cache",
                    ":authority: www.example.com"
                ]
            );
            assert_eq!(d.table_size(), 164);
        }
    }

    #[test]
    fn the_oldest_entries_are_evicted_as_rfc_7541_c5_shows() {
        // A 256-byte table: the second response's `:status: 307` evicts `:status: 302`.
        let mut d = RawDecoder::new(256);
        let first =
            "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a\
                     323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d";
        let fields = |status: &str| {
            vec![
                format!(":status: {status}"),
                "cache-control: private".into(),
                "date: Mon, 21 Oct 2013 20:13:21 GMT".into(),
                "location: https://www.example.com".into(),
            ]
        };
        assert_eq!(decode(&mut d, first), Ok(fields("302")));
        assert_eq!(d.table_size(), 222);
        assert_eq!(decode(&mut d, "4803333037c1c0bf"), Ok(fields("307")));
        assert_eq!(
            table(&d),
            [
                ":status: 307",
                "location: https://www.example.com",
                "date: Mon, 21 Oct 2013 20:13:21 GMT",
                "cache-control: private"
            ]
        );
        assert_eq!(d.table_size(), 222);
    }

    #[test]
    fn bad_blocks_are_refused_and_a_cut_field_waits_for_the_rest() {
        let mut d = RawDecoder::new(4096);
        // Index 70 is past the static table and an empty dynamic one; index 0 is none.
        assert_eq!(decode(&mut d, "c6"), Err("InvalidTableIndex".into()));
        assert_eq!(decode(&mut d, "80"), Err("InvalidTableIndex".into()));
        // A size update above what SETTINGS allowed, or after a field.
        assert_eq!(decode(&mut d, "3fe21f"), Err("InvalidMaxDynamicSize".into()));
        assert_eq!(decode(&mut d, "8220"), Err("InvalidMaxDynamicSize".into()));
        // An integer of more than five bytes.
        assert_eq!(decode(&mut d, "ffffffffffff7f"), Err("IntegerOverflow".into()));
        // A Huffman string padded with more than 7 bits, or with a code not all ones.
        assert!(decode(&mut d, "0001618100").is_err());
        // A block cut inside a literal: the fields before it are decoded, the cut one stays
        // in the buffer until the rest comes (a CONTINUATION frame).
        let whole = unhex("82400a637573746f6d2d6b65790c637573746f6d2d76616c7565");
        let mut src = BytesMut::from(&whole[..9]);
        let mut head = RawHead::new();
        let more = d.decode(&mut src, &mut head, |_, _, _| std::ops::ControlFlow::Continue(()));
        assert!(matches!(more, Err(DecoderError::NeedMore(_))), "{more:?}");
        assert_eq!(head.all().count(), 1);
        assert_eq!(&src[..], &whole[1..9]);
        src.extend_from_slice(&whole[9..]);
        d.decode(&mut src, &mut head, |_, _, _| std::ops::ControlFlow::Continue(())).expect("rest");
        let all: Vec<_> = head.all().collect();
        assert_eq!(all, [(&b":method"[..], &b"GET"[..]), (b"custom-key", b"custom-value")]);
    }

    #[test]
    fn a_field_s_validity_is_found_once_and_kept_with_its_table_entry() {
        // An upper-case name (invalid in HTTP/2), indexed: invalid when it comes, and again
        // when a later block refers to its table entry; a control byte in a value likewise.
        let mut d = RawDecoder::new(4096);
        let valid = |d: &mut RawDecoder, hex: &str| {
            let mut src = BytesMut::from(&unhex(hex)[..]);
            let mut head = RawHead::new();
            let mut seen = Vec::new();
            d.decode(&mut src, &mut head, |_, _, ok| {
                seen.push(ok);
                std::ops::ControlFlow::Continue(())
            })
            .expect("decodes");
            seen
        };
        assert_eq!(valid(&mut d, "4003582d410162"), [false]);
        assert_eq!(valid(&mut d, "be82"), [false, true]);
        assert_eq!(valid(&mut d, "4003782d6101080003782d610162"), [false, true]);
        assert_eq!(valid(&mut d, "bebf"), [false, false]);
    }
}
