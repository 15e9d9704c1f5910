//! What `tune.ssl.capture-buffer-size` keeps of a client's ClientHello, as HAProxy 2.6's
//! `ssl_sock_parse_clienthello` keeps it (its bounds and its quirks included), and the
//! `ssl_fc_cipherlist_*`, `ssl_fc_extlist_bin`, `ssl_fc_eclist_bin`, `ssl_fc_ecformats_bin`
//! and `ssl_fc_protocol_hello_id` fetches' values: what JA3 fingerprints are made of.
//!
//! Must not touch: the handshake (`connection::tls` hands it the bytes its acceptor read, once).

use std::ops::Range;

/// The lists of one ClientHello, each cut to what the capture's size leaves.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// The hello's (legacy) version: `0x0303` for TLS 1.2 and 1.3.
    pub version: u16,
    /// XXH64 of the whole cipher list (seed 0), whatever the capture's size.
    pub xxh64: u64,
    data: Vec<u8>,
    ciphers: Range<usize>,
    exts: Range<usize>,
    groups: Range<usize>,
    formats: Range<usize>,
}

impl Capture {
    pub fn ciphers(&self) -> &[u8] {
        &self.data[self.ciphers.clone()]
    }
    pub fn exts(&self) -> &[u8] {
        &self.data[self.exts.clone()]
    }
    pub fn groups(&self) -> &[u8] {
        &self.data[self.groups.clone()]
    }
    pub fn formats(&self) -> &[u8] {
        &self.data[self.formats.clone()]
    }
}

/// The first handshake message of `records` (TLS records as the client sent them), whole, or
/// `None` while it is not.
pub fn first_message(records: &[u8]) -> Option<Vec<u8>> {
    let mut msg = Vec::new();
    let mut i = 0;
    while let Some(head) = records.get(i..i + 5) {
        if head[0] != 22 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([head[3], head[4]]));
        msg.extend_from_slice(records.get(i + 5..i + 5 + len)?);
        i += 5 + len;
        if let Some(h) = msg.get(..4) {
            let want = 4 + (usize::from(h[1]) << 16 | usize::from(h[2]) << 8 | usize::from(h[3]));
            if msg.len() >= want {
                msg.truncate(want);
                return Some(msg);
            }
        }
    }
    None
}

/// Reads a whole ClientHello handshake message (`msg`, its 4-byte header included) as HAProxy
/// does, keeping at most `size` bytes of its lists. `None` where HAProxy keeps nothing (not a
/// ClientHello, or one cut before the end of its cipher list).
pub fn capture(msg: &[u8], size: usize) -> Option<Capture> {
    if msg.len() < 4 || msg[0] != 1 {
        return None;
    }
    let len = usize::from(msg[1]) << 16 | usize::from(msg[2]) << 8 | usize::from(msg[3]);
    let b = msg.get(4..4 + len)?;
    let end = b.len();
    let byte = |i: usize| b.get(i).copied().unwrap_or(0);
    let u16_at = |i: usize| u16::from_be_bytes([byte(i), byte(i + 1)]);
    if end < 2 {
        return None;
    }
    let version = u16_at(0);
    let mut i = 2 + 32; // the random
    if i > end {
        return None;
    }
    i += 1 + usize::from(byte(i)); // the session id
    if i + 2 > end {
        return None;
    }
    let n = usize::from(u16_at(i));
    i += 2;
    if i + n > end {
        return None;
    }
    let list = &b[i..i + n];
    let mut c =
        Capture { version, xxh64: xxhash_rust::xxh64::xxh64(list, 0), ..Capture::default() };
    let kept = n.min(size);
    c.data.extend_from_slice(&list[..kept]);
    c.ciphers = 0..kept;
    c.exts = kept..kept;
    c.groups = 0..0;
    c.formats = 0..0;
    i += n;
    extensions(b, i, size, &mut c);
    Some(c)
}

/// The extensions' part of [`capture`]: their types while the capture has room, then the
/// supported groups and point formats (only when the walk ended without an error, as HAProxy's
/// `goto store_capture` skips them).
fn extensions(b: &[u8], mut i: usize, size: usize, c: &mut Capture) {
    let end = b.len();
    let byte = |i: usize| b.get(i).copied().unwrap_or(0);
    let u16_at = |i: usize| usize::from(u16::from_be_bytes([byte(i), byte(i + 1)]));
    i += 1 + usize::from(byte(i)); // the compression methods
    if i + 2 > end {
        return;
    }
    let n = u16_at(i);
    i += 2;
    if i + n > end {
        return;
    }
    let exts_end = i + n;
    let start = c.data.len();
    c.exts = start..start;
    let (mut groups, mut formats) = (None, None);
    while i + 4 < exts_end {
        if size < c.data.len() + 2 {
            break;
        }
        c.data.extend_from_slice(&b[i..i + 2]);
        c.exts.end += 2;
        let (kind, mut len) = (u16_at(i), u16_at(i + 2));
        i += 4;
        if i + len > exts_end {
            return;
        }
        if kind == 0x000a || kind == 0x000b {
            let list_end = i + len;
            let head = if kind == 0x000a { 2 } else { 1 };
            if i + head > list_end {
                return;
            }
            len = if kind == 0x000a { u16_at(i) } else { usize::from(byte(i)) };
            i += head;
            if i + len > list_end {
                return;
            }
            *(if kind == 0x000a { &mut groups } else { &mut formats }) = Some(i..i + len);
        }
        i += len;
    }
    for (found, slot) in [(groups, &mut c.groups), (formats, &mut c.formats)] {
        if let Some(r) = found {
            let at = c.data.len();
            let kept = r.len().min(size.saturating_sub(at));
            c.data.extend_from_slice(&b[r.start..r.start + kept]);
            *slot = at..at + kept;
        }
    }
}

/// `list` without its GREASE values (RFC 8701: `0x?A?A` pairs), as HAProxy's
/// `exclude_tls_grease` leaves it (an odd last byte kept).
pub fn without_grease(list: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len());
    let mut pairs = list.chunks_exact(2);
    for p in pairs.by_ref() {
        if p[0] != p[1] || p[0] & 0x0f != 0x0a {
            out.extend_from_slice(p);
        }
    }
    out.extend_from_slice(pairs.remainder());
    out
}

/// OpenSSL 3.0's name of a cipher suite (what `ssl_fc_cipherlist_str` prints; `None`:
/// HAProxy's `UNKNOWN(xxxx)`).
pub fn suite_name(id: u16) -> Option<&'static str> {
    NAMES.binary_search_by_key(&id, |&(i, _)| i).ok().map(|i| NAMES[i].1)
}

/// The suites OpenSSL 3.0 knows, by number (`openssl ciphers -V`, with the TLS 1.3 CCM suites
/// and the two signalling values).
const NAMES: &[(u16, &str)] = &[
    (0x0001, "NULL-MD5"),
    (0x0002, "NULL-SHA"),
    (0x002C, "PSK-NULL-SHA"),
    (0x002D, "DHE-PSK-NULL-SHA"),
    (0x002E, "RSA-PSK-NULL-SHA"),
    (0x002F, "AES128-SHA"),
    (0x0032, "DHE-DSS-AES128-SHA"),
    (0x0033, "DHE-RSA-AES128-SHA"),
    (0x0034, "ADH-AES128-SHA"),
    (0x0035, "AES256-SHA"),
    (0x0038, "DHE-DSS-AES256-SHA"),
    (0x0039, "DHE-RSA-AES256-SHA"),
    (0x003A, "ADH-AES256-SHA"),
    (0x003B, "NULL-SHA256"),
    (0x003C, "AES128-SHA256"),
    (0x003D, "AES256-SHA256"),
    (0x0040, "DHE-DSS-AES128-SHA256"),
    (0x0041, "CAMELLIA128-SHA"),
    (0x0044, "DHE-DSS-CAMELLIA128-SHA"),
    (0x0045, "DHE-RSA-CAMELLIA128-SHA"),
    (0x0046, "ADH-CAMELLIA128-SHA"),
    (0x0067, "DHE-RSA-AES128-SHA256"),
    (0x006A, "DHE-DSS-AES256-SHA256"),
    (0x006B, "DHE-RSA-AES256-SHA256"),
    (0x006C, "ADH-AES128-SHA256"),
    (0x006D, "ADH-AES256-SHA256"),
    (0x0084, "CAMELLIA256-SHA"),
    (0x0087, "DHE-DSS-CAMELLIA256-SHA"),
    (0x0088, "DHE-RSA-CAMELLIA256-SHA"),
    (0x0089, "ADH-CAMELLIA256-SHA"),
    (0x008C, "PSK-AES128-CBC-SHA"),
    (0x008D, "PSK-AES256-CBC-SHA"),
    (0x0090, "DHE-PSK-AES128-CBC-SHA"),
    (0x0091, "DHE-PSK-AES256-CBC-SHA"),
    (0x0094, "RSA-PSK-AES128-CBC-SHA"),
    (0x0095, "RSA-PSK-AES256-CBC-SHA"),
    (0x009C, "AES128-GCM-SHA256"),
    (0x009D, "AES256-GCM-SHA384"),
    (0x009E, "DHE-RSA-AES128-GCM-SHA256"),
    (0x009F, "DHE-RSA-AES256-GCM-SHA384"),
    (0x00A2, "DHE-DSS-AES128-GCM-SHA256"),
    (0x00A3, "DHE-DSS-AES256-GCM-SHA384"),
    (0x00A6, "ADH-AES128-GCM-SHA256"),
    (0x00A7, "ADH-AES256-GCM-SHA384"),
    (0x00A8, "PSK-AES128-GCM-SHA256"),
    (0x00A9, "PSK-AES256-GCM-SHA384"),
    (0x00AA, "DHE-PSK-AES128-GCM-SHA256"),
    (0x00AB, "DHE-PSK-AES256-GCM-SHA384"),
    (0x00AC, "RSA-PSK-AES128-GCM-SHA256"),
    (0x00AD, "RSA-PSK-AES256-GCM-SHA384"),
    (0x00AE, "PSK-AES128-CBC-SHA256"),
    (0x00AF, "PSK-AES256-CBC-SHA384"),
    (0x00B0, "PSK-NULL-SHA256"),
    (0x00B1, "PSK-NULL-SHA384"),
    (0x00B2, "DHE-PSK-AES128-CBC-SHA256"),
    (0x00B3, "DHE-PSK-AES256-CBC-SHA384"),
    (0x00B4, "DHE-PSK-NULL-SHA256"),
    (0x00B5, "DHE-PSK-NULL-SHA384"),
    (0x00B6, "RSA-PSK-AES128-CBC-SHA256"),
    (0x00B7, "RSA-PSK-AES256-CBC-SHA384"),
    (0x00B8, "RSA-PSK-NULL-SHA256"),
    (0x00B9, "RSA-PSK-NULL-SHA384"),
    (0x00BA, "CAMELLIA128-SHA256"),
    (0x00BD, "DHE-DSS-CAMELLIA128-SHA256"),
    (0x00BE, "DHE-RSA-CAMELLIA128-SHA256"),
    (0x00BF, "ADH-CAMELLIA128-SHA256"),
    (0x00C0, "CAMELLIA256-SHA256"),
    (0x00C3, "DHE-DSS-CAMELLIA256-SHA256"),
    (0x00C4, "DHE-RSA-CAMELLIA256-SHA256"),
    (0x00C5, "ADH-CAMELLIA256-SHA256"),
    (0x00FF, "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"),
    (0x1301, "TLS_AES_128_GCM_SHA256"),
    (0x1302, "TLS_AES_256_GCM_SHA384"),
    (0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
    (0x1304, "TLS_AES_128_CCM_SHA256"),
    (0x1305, "TLS_AES_128_CCM_8_SHA256"),
    (0x5600, "TLS_FALLBACK_SCSV"),
    (0xC006, "ECDHE-ECDSA-NULL-SHA"),
    (0xC009, "ECDHE-ECDSA-AES128-SHA"),
    (0xC00A, "ECDHE-ECDSA-AES256-SHA"),
    (0xC010, "ECDHE-RSA-NULL-SHA"),
    (0xC013, "ECDHE-RSA-AES128-SHA"),
    (0xC014, "ECDHE-RSA-AES256-SHA"),
    (0xC015, "AECDH-NULL-SHA"),
    (0xC018, "AECDH-AES128-SHA"),
    (0xC019, "AECDH-AES256-SHA"),
    (0xC01D, "SRP-AES-128-CBC-SHA"),
    (0xC01E, "SRP-RSA-AES-128-CBC-SHA"),
    (0xC01F, "SRP-DSS-AES-128-CBC-SHA"),
    (0xC020, "SRP-AES-256-CBC-SHA"),
    (0xC021, "SRP-RSA-AES-256-CBC-SHA"),
    (0xC022, "SRP-DSS-AES-256-CBC-SHA"),
    (0xC023, "ECDHE-ECDSA-AES128-SHA256"),
    (0xC024, "ECDHE-ECDSA-AES256-SHA384"),
    (0xC027, "ECDHE-RSA-AES128-SHA256"),
    (0xC028, "ECDHE-RSA-AES256-SHA384"),
    (0xC02B, "ECDHE-ECDSA-AES128-GCM-SHA256"),
    (0xC02C, "ECDHE-ECDSA-AES256-GCM-SHA384"),
    (0xC02F, "ECDHE-RSA-AES128-GCM-SHA256"),
    (0xC030, "ECDHE-RSA-AES256-GCM-SHA384"),
    (0xC035, "ECDHE-PSK-AES128-CBC-SHA"),
    (0xC036, "ECDHE-PSK-AES256-CBC-SHA"),
    (0xC037, "ECDHE-PSK-AES128-CBC-SHA256"),
    (0xC038, "ECDHE-PSK-AES256-CBC-SHA384"),
    (0xC039, "ECDHE-PSK-NULL-SHA"),
    (0xC03A, "ECDHE-PSK-NULL-SHA256"),
    (0xC03B, "ECDHE-PSK-NULL-SHA384"),
    (0xC050, "ARIA128-GCM-SHA256"),
    (0xC051, "ARIA256-GCM-SHA384"),
    (0xC052, "DHE-RSA-ARIA128-GCM-SHA256"),
    (0xC053, "DHE-RSA-ARIA256-GCM-SHA384"),
    (0xC056, "DHE-DSS-ARIA128-GCM-SHA256"),
    (0xC057, "DHE-DSS-ARIA256-GCM-SHA384"),
    (0xC05C, "ECDHE-ECDSA-ARIA128-GCM-SHA256"),
    (0xC05D, "ECDHE-ECDSA-ARIA256-GCM-SHA384"),
    (0xC060, "ECDHE-ARIA128-GCM-SHA256"),
    (0xC061, "ECDHE-ARIA256-GCM-SHA384"),
    (0xC06A, "PSK-ARIA128-GCM-SHA256"),
    (0xC06B, "PSK-ARIA256-GCM-SHA384"),
    (0xC06C, "DHE-PSK-ARIA128-GCM-SHA256"),
    (0xC06D, "DHE-PSK-ARIA256-GCM-SHA384"),
    (0xC06E, "RSA-PSK-ARIA128-GCM-SHA256"),
    (0xC06F, "RSA-PSK-ARIA256-GCM-SHA384"),
    (0xC072, "ECDHE-ECDSA-CAMELLIA128-SHA256"),
    (0xC073, "ECDHE-ECDSA-CAMELLIA256-SHA384"),
    (0xC076, "ECDHE-RSA-CAMELLIA128-SHA256"),
    (0xC077, "ECDHE-RSA-CAMELLIA256-SHA384"),
    (0xC094, "PSK-CAMELLIA128-SHA256"),
    (0xC095, "PSK-CAMELLIA256-SHA384"),
    (0xC096, "DHE-PSK-CAMELLIA128-SHA256"),
    (0xC097, "DHE-PSK-CAMELLIA256-SHA384"),
    (0xC098, "RSA-PSK-CAMELLIA128-SHA256"),
    (0xC099, "RSA-PSK-CAMELLIA256-SHA384"),
    (0xC09A, "ECDHE-PSK-CAMELLIA128-SHA256"),
    (0xC09B, "ECDHE-PSK-CAMELLIA256-SHA384"),
    (0xC09C, "AES128-CCM"),
    (0xC09D, "AES256-CCM"),
    (0xC09E, "DHE-RSA-AES128-CCM"),
    (0xC09F, "DHE-RSA-AES256-CCM"),
    (0xC0A0, "AES128-CCM8"),
    (0xC0A1, "AES256-CCM8"),
    (0xC0A2, "DHE-RSA-AES128-CCM8"),
    (0xC0A3, "DHE-RSA-AES256-CCM8"),
    (0xC0A4, "PSK-AES128-CCM"),
    (0xC0A5, "PSK-AES256-CCM"),
    (0xC0A6, "DHE-PSK-AES128-CCM"),
    (0xC0A7, "DHE-PSK-AES256-CCM"),
    (0xC0A8, "PSK-AES128-CCM8"),
    (0xC0A9, "PSK-AES256-CCM8"),
    (0xC0AA, "DHE-PSK-AES128-CCM8"),
    (0xC0AB, "DHE-PSK-AES256-CCM8"),
    (0xC0AC, "ECDHE-ECDSA-AES128-CCM"),
    (0xC0AD, "ECDHE-ECDSA-AES256-CCM"),
    (0xC0AE, "ECDHE-ECDSA-AES128-CCM8"),
    (0xC0AF, "ECDHE-ECDSA-AES256-CCM8"),
    (0xCCA8, "ECDHE-RSA-CHACHA20-POLY1305"),
    (0xCCA9, "ECDHE-ECDSA-CHACHA20-POLY1305"),
    (0xCCAA, "DHE-RSA-CHACHA20-POLY1305"),
    (0xCCAB, "PSK-CHACHA20-POLY1305"),
    (0xCCAC, "ECDHE-PSK-CHACHA20-POLY1305"),
    (0xCCAD, "DHE-PSK-CHACHA20-POLY1305"),
    (0xCCAE, "RSA-PSK-CHACHA20-POLY1305"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello handshake message: `ciphers`, then `exts` (type, body) in order.
    fn hello(ciphers: &[u16], exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend_from_slice(&[7; 32]);
        b.extend_from_slice(&[2, 0xaa, 0xbb]); // a session id of 2 bytes
        b.extend_from_slice(&((ciphers.len() * 2) as u16).to_be_bytes());
        for c in ciphers {
            b.extend_from_slice(&c.to_be_bytes());
        }
        b.extend_from_slice(&[1, 0]);
        let mut e = Vec::new();
        for (kind, body) in exts {
            e.extend_from_slice(&kind.to_be_bytes());
            e.extend_from_slice(&(body.len() as u16).to_be_bytes());
            e.extend_from_slice(body);
        }
        b.extend_from_slice(&(e.len() as u16).to_be_bytes());
        b.extend_from_slice(&e);
        let mut m = vec![1, 0, (b.len() >> 8) as u8, b.len() as u8];
        m.extend_from_slice(&b);
        m
    }

    fn groups(g: &[u16]) -> Vec<u8> {
        let mut v = ((g.len() * 2) as u16).to_be_bytes().to_vec();
        g.iter().for_each(|x| v.extend_from_slice(&x.to_be_bytes()));
        v
    }

    #[test]
    fn a_hello_with_grease_gives_its_lists_and_its_grease_free_lists() {
        let m = hello(
            &[0x0a0a, 0x1301, 0xc02f],
            &[
                (0x1a1a, vec![]),
                (0x0000, vec![0; 5]),
                (0x000a, groups(&[0x2a2a, 0x001d, 0x0017])),
                (0x000b, vec![1, 0]),
                (0x0010, vec![0, 3, 2, b'h', b'2']),
            ],
        );
        let c = capture(&m, 256).expect("captured");
        assert_eq!(c.version, 0x0303);
        assert_eq!(c.ciphers(), [0x0a, 0x0a, 0x13, 0x01, 0xc0, 0x2f]);
        assert_eq!(without_grease(c.ciphers()), [0x13, 0x01, 0xc0, 0x2f]);
        assert_eq!(c.exts(), [0x1a, 0x1a, 0, 0, 0, 0x0a, 0, 0x0b, 0, 0x10]);
        assert_eq!(without_grease(c.exts()), [0, 0, 0, 0x0a, 0, 0x0b, 0, 0x10]);
        assert_eq!(without_grease(c.groups()), [0, 0x1d, 0, 0x17]);
        assert_eq!(c.formats(), [0]);
        assert_eq!(c.xxh64, xxhash_rust::xxh64::xxh64(&[0x0a, 0x0a, 0x13, 0x01, 0xc0, 0x2f], 0));
        // (An odd last byte stays, as HAProxy's filter leaves it.)
        assert_eq!(without_grease(&[0x3a, 0x3a, 0x00, 0x2f, 0x5a]), [0x00, 0x2f, 0x5a]);
        assert_eq!(suite_name(0x1301), Some("TLS_AES_128_GCM_SHA256"));
        assert_eq!(suite_name(0x00ff), Some("TLS_EMPTY_RENEGOTIATION_INFO_SCSV"));
        assert_eq!(suite_name(0x0a0a), None);
    }

    #[test]
    fn a_small_capture_keeps_what_fits_in_haproxys_order() {
        let m = hello(
            &[0x1301, 0x1302, 0x1303],
            &[(0x000a, groups(&[0x001d, 0x0017, 0x0018])), (0x002b, vec![2, 3, 4])],
        );
        // 4 bytes: two suites, nothing else.
        let c = capture(&m, 4).expect("captured");
        assert_eq!((c.ciphers().len(), c.exts().len(), c.groups().len()), (4, 0, 0));
        // 9 bytes: all suites, one extension type, one byte of groups.
        let c = capture(&m, 9).expect("captured");
        assert_eq!((c.ciphers().len(), c.exts(), c.groups()), (6, &[0u8, 0x0a][..], &[0u8][..]));
        // The whole list is hashed whatever is kept.
        assert_eq!(c.xxh64, capture(&m, 4).expect("captured").xxh64);
    }

    #[test]
    fn haproxys_quirks_are_kept() {
        // A last extension with an empty body ends the walk before it is read.
        let m = hello(&[0x1301], &[(0x0017, vec![]), (0x0023, vec![])]);
        assert_eq!(capture(&m, 64).expect("captured").exts(), [0, 0x17]);
        // A broken extension keeps the types read, and no groups.
        let mut m = hello(&[0x1301], &[(0x000a, groups(&[0x001d])), (0x0005, vec![1, 2, 3])]);
        let at = m.len() - 4;
        m[at] = 0x40; // the last extension's length now overruns
        let c = capture(&m, 64).expect("captured");
        assert_eq!((c.exts(), c.groups()), (&[0u8, 0x0a, 0, 5][..], &[][..]));
        // Not a ClientHello, or cut inside its cipher list: nothing.
        assert_eq!(capture(&[2, 0, 0, 0], 64), None);
        let m = hello(&[0x1301, 0x1302], &[]);
        assert_eq!(capture(&m[..4 + 2 + 32 + 3 + 2 + 1], 64), None);
    }

    #[test]
    fn records_give_their_first_handshake_message_whole() {
        let m = hello(&[0x1301], &[(0x0000, vec![0; 40])]);
        let mut records = Vec::new();
        for part in m.chunks(20) {
            records.extend_from_slice(&[22, 3, 1, 0, part.len() as u8]);
            records.extend_from_slice(part);
        }
        records.extend_from_slice(&[23, 3, 3, 0, 1, 9]);
        assert_eq!(first_message(&records).as_deref(), Some(&m[..]));
        assert_eq!(first_message(&records[..records.len() - 30]), None);
        assert_eq!(first_message(&[23, 3, 3, 0, 0]), None);
        // Any cut of any byte never reads out of bounds.
        for cut in 0..m.len() {
            let _ = capture(&m[..cut], 64);
            let mut bad = m.clone();
            bad[cut] ^= 0xff;
            let _ = capture(&bad, 64);
        }
    }
}
