//! A header block as decoded: [`RawHead`], its fields' bytes in one buffer, the pseudo-fields
//! found by offset, what a user looks for first noted as it is decoded; the buffers of dropped
//! heads kept per thread for the next ones.
//!
//! Owns: a decoded head's layout. Must not touch: decoding (the parent module's).

use std::fmt;

/// The fields of a header block as decoded: names and values as bytes, in the order they came.
///
/// Each entry of `buf` is the name's length and the value's length (4 bytes each, little
/// endian), then the name, then the value. A head's buffer goes back to its thread's pool when
/// it is dropped, for the next head decoded there (heads are made by a connection's task and
/// dropped by its streams' tasks, a hundred at a time: the allocator's per-thread cache keeps
/// seven blocks of a size, so most allocations went the slow way, 400 instructions each).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RawHead {
    pub(super) buf: Vec<u8>,
    /// Where each pseudo-field's entry starts in `buf`, plus one (0: absent), in the order
    /// of `Pseudo`.
    pseudo: [u32; 6],
    /// The block's size as RFC 7541 4.1 counts it, as far as it was decoded.
    pub(super) size: usize,
    /// Which of the fields a user looks for first are here (`SEEN_*`): no search for them.
    seen: u8,
}

/// What a regular field's name means to `RawHead::contains`.
#[inline]
pub(crate) fn seen_of(name: &[u8]) -> u8 {
    match name {
        b"content-length" => SEEN_CONTENT_LENGTH,
        b"host" => SEEN_HOST,
        b"cookie" => SEEN_COOKIE,
        _ => 0,
    }
}

const SEEN_CONTENT_LENGTH: u8 = 1;
const SEEN_HOST: u8 = 2;
const SEEN_COOKIE: u8 = 4;

/// The pseudo-fields a head may carry (RFC 9113 8.3, RFC 8441 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pseudo {
    /// `:method`
    Method = 0,
    /// `:scheme`
    Scheme = 1,
    /// `:authority`
    Authority = 2,
    /// `:path`
    Path = 3,
    /// `:protocol`
    Protocol = 4,
    /// `:status`
    Status = 5,
}

impl Pseudo {
    /// The pseudo-field a name (with its colon) is, if any.
    #[inline]
    pub fn from_name(name: &[u8]) -> Option<Pseudo> {
        let p = match (name.len(), name.get(1), name.get(2)) {
            (7, Some(b'm'), _) => Pseudo::Method,
            (7, Some(b's'), Some(b'c')) => Pseudo::Scheme,
            (7, Some(b's'), _) => Pseudo::Status,
            (10, Some(b'a'), _) => Pseudo::Authority,
            (5, Some(b'p'), _) => Pseudo::Path,
            (9, Some(b'p'), _) => Pseudo::Protocol,
            _ => return None,
        };
        (name == p.name().as_bytes()).then_some(p)
    }

    /// The name, with its colon.
    pub fn name(self) -> &'static str {
        match self {
            Pseudo::Method => ":method",
            Pseudo::Scheme => ":scheme",
            Pseudo::Authority => ":authority",
            Pseudo::Path => ":path",
            Pseudo::Protocol => ":protocol",
            Pseudo::Status => ":status",
        }
    }
}

/// The bytes before each entry's name: its name's and value's lengths.
pub(super) const ENTRY_HEAD: usize = 8;

#[inline(always)]
fn entry_at(buf: &[u8], at: usize) -> (&[u8], &[u8], usize) {
    let Some(head) = buf.get(at..at + ENTRY_HEAD) else {
        return (&[], &[], buf.len());
    };
    let name_len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let value_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let name_at = at + ENTRY_HEAD;
    let end = name_at + name_len + value_len;
    match buf.get(name_at..end) {
        Some(both) => {
            let (name, value) = both.split_at(name_len);
            (name, value, end)
        }
        None => (&[], &[], buf.len()),
    }
}

/// Room a head is decoded into at first: most heads fit.
const HEAD_ROOM: usize = 512;
/// Buffers a thread keeps for heads to come: a burst of a thousand streams (ten connections
/// of a hundred) decodes its heads before their tasks take them (with 256, half of the heads
/// found none and were allocated); at most half a megabyte.
const POOL_MAX: usize = 1024;

thread_local! {
    static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for RawHead {
    fn drop(&mut self) {
        let cap = self.buf.capacity();
        if (HEAD_ROOM..=4 * HEAD_ROOM).contains(&cap) {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            let _ = POOL.try_with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < POOL_MAX {
                    p.push(buf);
                }
            });
        }
    }
}

impl RawHead {
    /// An empty head.
    pub fn new() -> RawHead {
        RawHead::default()
    }

    /// An empty head with room for a usual one, from the thread's pool when it has one.
    pub fn with_room() -> RawHead {
        let buf = POOL
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Vec::with_capacity(HEAD_ROOM));
        RawHead { buf, pseudo: [0; 6], size: 0, seen: 0 }
    }

    /// A pseudo-field's value.
    #[inline]
    pub fn pseudo(&self, which: Pseudo) -> Option<&[u8]> {
        match self.pseudo[which as usize] {
            0 => None,
            at => Some(entry_at(&self.buf, at as usize - 1).1),
        }
    }

    /// `:method`
    pub fn method(&self) -> Option<&[u8]> {
        self.pseudo(Pseudo::Method)
    }

    /// `:scheme`
    pub fn scheme(&self) -> Option<&[u8]> {
        self.pseudo(Pseudo::Scheme)
    }

    /// `:authority`
    pub fn authority(&self) -> Option<&[u8]> {
        self.pseudo(Pseudo::Authority)
    }

    /// `:path`
    pub fn path(&self) -> Option<&[u8]> {
        self.pseudo(Pseudo::Path)
    }

    /// `:protocol` (extended CONNECT, RFC 8441)
    pub fn protocol(&self) -> Option<&[u8]> {
        self.pseudo(Pseudo::Protocol)
    }

    /// `:status`, when it is three digits.
    pub fn status(&self) -> Option<u16> {
        self.pseudo(Pseudo::Status).and_then(parse_status)
    }

    /// The fields that are not pseudo-fields, in order.
    pub fn fields(&self) -> Fields<'_> {
        Fields { buf: &self.buf, at: 0 }
    }

    /// Every field, pseudo-fields included, in the order they came.
    pub fn all(&self) -> All<'_> {
        All { buf: &self.buf, at: 0 }
    }

    /// The first field of this name (lower case).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Whether a field of this name (lower case) is here.
    pub fn contains(&self, name: &[u8]) -> bool {
        match name {
            b"content-length" => self.has_content_length(),
            b"host" => self.seen & SEEN_HOST != 0,
            b"cookie" => self.seen & SEEN_COOKIE != 0,
            _ => self.get(name).is_some(),
        }
    }

    /// Whether a `content-length` field is here (without a search).
    #[inline]
    pub fn has_content_length(&self) -> bool {
        self.seen & SEEN_CONTENT_LENGTH != 0
    }

    /// Notes a regular field kept, for `contains`.
    #[inline]
    pub(crate) fn note(&mut self, name: &[u8]) {
        self.seen |= seen_of(name);
    }

    /// Notes what `seen_of` gave for a field kept.
    #[inline]
    pub(crate) fn add_seen(&mut self, seen: u8) {
        self.seen |= seen;
    }

    /// The block's decoded size (RFC 7541 4.1: each field's name and value, plus 32).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Adds a field (or a pseudo-field, which must come first) as decoded.
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        let at = self.buf.len();
        self.buf.extend_from_slice(&(name.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(name);
        self.buf.extend_from_slice(value);
        self.size += name.len() + value.len() + 32;
        match Pseudo::from_name(name) {
            Some(p) => self.pseudo[p as usize] = at as u32 + 1,
            None => self.note(name),
        }
    }

    pub(crate) fn entry(&self, at: usize) -> (&[u8], &[u8]) {
        let (n, v, _) = entry_at(&self.buf, at);
        (n, v)
    }

    pub(crate) fn set_pseudo(&mut self, which: Pseudo, at: usize) -> bool {
        let slot = &mut self.pseudo[which as usize];
        if *slot != 0 {
            return false;
        }
        *slot = at as u32 + 1;
        true
    }

    pub(crate) fn has_pseudo(&self, which: Pseudo) -> bool {
        self.pseudo[which as usize] != 0
    }

    pub(crate) fn add_size(&mut self, n: usize) -> usize {
        self.size += n;
        self.size
    }
}

impl fmt::Debug for RawHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_map();
        let mut at = 0;
        while at < self.buf.len() {
            let (n, v, end) = entry_at(&self.buf, at);
            d.entry(&String::from_utf8_lossy(n), &String::from_utf8_lossy(v));
            at = end;
        }
        d.finish()
    }
}

/// The fields of a [`RawHead`] that are not pseudo-fields: `(name, value)`.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.at < self.buf.len() {
            let (n, v, end) = entry_at(self.buf, self.at);
            self.at = end;
            if n.first() != Some(&b':') {
                return Some((n, v));
            }
        }
        None
    }
}

/// Every field of a [`RawHead`], pseudo-fields included: `(name, value)`.
#[derive(Debug, Clone)]
pub struct All<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for All<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        let (n, v, end) = entry_at(self.buf, self.at);
        self.at = end;
        Some((n, v))
    }
}

/// A status of three digits, 100 to 999 (as `http::StatusCode::from_bytes`).
pub fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some((a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16)
        }
        _ => None,
    }
}
