//! The PROXY protocol (haproxy.org's proxy-protocol.txt), versions 1 and 2: reading the header
//! a client's connection opens with (`accept-proxy`, `tcp-request connection expect-proxy`)
//! and writing one to a server (`send-proxy`, `send-proxy-v2`, with TLVs).
//!
//! The header is read with `MSG_PEEK` until complete, then exactly its bytes are consumed: what
//! follows (a TLS ClientHello, a request) stays in the socket for the layer above.
//! Must not touch: what the addresses are used for (the session's `src`/`dst`).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Stream;

const V2_SIG: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest v1 line (proxy-protocol.txt: 107 bytes with CRLF).
const V1_MAX: usize = 107;

pub const PP2_TYPE_ALPN: u8 = 0x01;
pub const PP2_TYPE_AUTHORITY: u8 = 0x02;
pub const PP2_TYPE_CRC32C: u8 = 0x03;
pub const PP2_TYPE_UNIQUE_ID: u8 = 0x05;
pub const PP2_TYPE_SSL: u8 = 0x20;
pub const PP2_SUBTYPE_SSL_VERSION: u8 = 0x21;
pub const PP2_SUBTYPE_SSL_CN: u8 = 0x22;
pub const PP2_SUBTYPE_SSL_CIPHER: u8 = 0x23;
pub const PP2_SUBTYPE_SSL_SIG_ALG: u8 = 0x24;
pub const PP2_SUBTYPE_SSL_KEY_ALG: u8 = 0x25;

/// What a received header said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The client's and the original destination's addresses (`None`: `UNKNOWN`/`LOCAL`, the
    /// connection's own addresses stand).
    pub addrs: Option<(SocketAddr, SocketAddr)>,
    /// Version 2 TLVs, as received.
    pub tlvs: Vec<(u8, Vec<u8>)>,
}

impl Header {
    pub fn tlv(&self, kind: u8) -> Option<&[u8]> {
        self.tlvs.iter().find(|(k, _)| *k == kind).map(|(_, v)| v.as_slice())
    }
}

/// Why a header was refused, in HAProxy's words (they end up in the log line).
#[derive(Debug, PartialEq, Eq)]
pub enum Bad {
    NotProxy,
    Invalid,
    /// The connection closed in the middle of the header.
    Truncated,
    /// The connection closed before any byte.
    Empty,
}

impl Bad {
    pub fn message(&self) -> &'static str {
        match self {
            Bad::NotProxy => "Received something which does not look like a PROXY protocol header",
            Bad::Invalid => "Received an invalid PROXY protocol header",
            Bad::Truncated => "Truncated PROXY protocol header received",
            Bad::Empty => "Connection closed while waiting for PROXY protocol header",
        }
    }
}

/// Parses a header at the start of `buf`: `Ok(Some((header, length)))`, `Ok(None)` when more
/// bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<(Header, usize)>, Bad> {
    if buf.is_empty() {
        return Ok(None);
    }
    if buf[0] == b'P' {
        return parse_v1(buf);
    }
    if buf[0] == b'\r' {
        let n = buf.len().min(12);
        if buf[..n] != V2_SIG[..n] {
            return Err(Bad::NotProxy);
        }
        return parse_v2(buf);
    }
    Err(Bad::NotProxy)
}

fn parse_v1(buf: &[u8]) -> Result<Option<(Header, usize)>, Bad> {
    let n = buf.len().min(6);
    if buf[..n] != b"PROXY "[..n] {
        return Err(Bad::NotProxy);
    }
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return if buf.len() >= V1_MAX { Err(Bad::Invalid) } else { Ok(None) };
    };
    if end + 2 > V1_MAX {
        return Err(Bad::Invalid);
    }
    let line = std::str::from_utf8(&buf[6..end]).map_err(|_| Bad::Invalid)?;
    let words: Vec<&str> = line.split(' ').collect();
    let header = match words.as_slice() {
        ["UNKNOWN", ..] => Header::default(),
        [fam @ ("TCP4" | "TCP6"), src, dst, sport, dport] => {
            let ip = |s: &str| -> Result<IpAddr, Bad> {
                let ip: IpAddr = s.parse().map_err(|_| Bad::Invalid)?;
                match (*fam, ip) {
                    ("TCP4", IpAddr::V4(_)) | ("TCP6", IpAddr::V6(_)) => Ok(ip),
                    _ => Err(Bad::Invalid),
                }
            };
            let port = |s: &str| -> Result<u16, Bad> {
                if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Bad::Invalid);
                }
                s.parse().map_err(|_| Bad::Invalid)
            };
            let src = SocketAddr::new(ip(src)?, port(sport)?);
            let dst = SocketAddr::new(ip(dst)?, port(dport)?);
            Header { addrs: Some((src, dst)), tlvs: Vec::new() }
        }
        _ => return Err(Bad::Invalid),
    };
    Ok(Some((header, end + 2)))
}

fn parse_v2(buf: &[u8]) -> Result<Option<(Header, usize)>, Bad> {
    if buf.len() < 16 {
        return Ok(None);
    }
    let (ver_cmd, fam) = (buf[12], buf[13]);
    let len = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if ver_cmd >> 4 != 2 {
        return Err(Bad::Invalid);
    }
    if buf.len() < 16 + len {
        return Ok(None);
    }
    let body = &buf[16..16 + len];
    let (addrs, used) = match (ver_cmd & 0xf, fam) {
        (0, _) => (None, body.len()), // LOCAL: the connection's own addresses
        (1, 0x11) if body.len() >= 12 => {
            let a = |i: usize| {
                IpAddr::V4(Ipv4Addr::new(body[i], body[i + 1], body[i + 2], body[i + 3]))
            };
            let p = |i: usize| u16::from_be_bytes([body[i], body[i + 1]]);
            (Some((SocketAddr::new(a(0), p(8)), SocketAddr::new(a(4), p(10)))), 12)
        }
        (1, 0x21) if body.len() >= 36 => {
            let a = |i: usize| {
                let mut o = [0u8; 16];
                o.copy_from_slice(&body[i..i + 16]);
                IpAddr::V6(Ipv6Addr::from(o))
            };
            let p = |i: usize| u16::from_be_bytes([body[i], body[i + 1]]);
            (Some((SocketAddr::new(a(0), p(32)), SocketAddr::new(a(16), p(34)))), 36)
        }
        // UNSPEC or UNIX sockets: no usable addresses; the rest is skipped.
        (1, 0x00 | 0x31 | 0x32) => (None, if fam == 0 { 0 } else { body.len().min(216) }),
        (1, 0x11 | 0x21) => return Err(Bad::Invalid),
        _ => return Err(Bad::Invalid),
    };
    let mut tlvs = Vec::new();
    if ver_cmd & 0xf == 1 {
        let mut rest = &body[used.min(body.len())..];
        while !rest.is_empty() {
            if rest.len() < 3 {
                return Err(Bad::Invalid);
            }
            let l = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
            if rest.len() < 3 + l {
                return Err(Bad::Invalid);
            }
            tlvs.push((rest[0], rest[3..3 + l].to_vec()));
            rest = &rest[3 + l..];
        }
    }
    Ok(Some((Header { addrs, tlvs }, 16 + len)))
}

/// Reads a header from `s` (the caller bounds the wait in time). `Err(Ok(bad))` for a header
/// that is not one; `Err(Err(e))` for a socket error or an end of stream.
pub async fn read(s: &Stream) -> Result<Header, Result<Bad, io::Error>> {
    let mut buf = [0u8; 16 + 1024];
    let mut want = V1_MAX.min(buf.len());
    let mut seen = 0;
    loop {
        std::future::poll_fn(|cx| s.poll_read_ready(cx)).await.map_err(Err)?;
        let n = match s.try_peek(&mut buf[..want]) {
            Ok(0) if seen == 0 => return Err(Ok(Bad::Empty)),
            Ok(0) => return Err(Ok(Bad::Truncated)),
            Ok(n) if n == seen => {
                // Nothing new: the peer may have closed after a partial header.
                use std::os::fd::{AsFd, AsRawFd};
                if crate::sys::peer_shut_write(s.as_fd().as_raw_fd()) {
                    return Err(Ok(Bad::Truncated));
                }
                s.clear_read_ready();
                continue;
            }
            Ok(n) => {
                seen = n;
                n
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(Err(e)),
        };
        match parse(&buf[..n]) {
            Ok(Some((h, len))) => {
                // Consume exactly the header.
                let mut sink = [0u8; 16 + 1024];
                let mut left = len;
                while left > 0 {
                    let k = s.try_read(&mut sink[..left]).map_err(Err)?;
                    if k == 0 {
                        return Err(Err(io::ErrorKind::UnexpectedEof.into()));
                    }
                    left -= k;
                }
                return Ok(h);
            }
            Ok(None) => {
                // A v2 header says its length: peek that much (up to the buffer).
                if n >= 16 && buf[0] == b'\r' {
                    let len = 16 + usize::from(u16::from_be_bytes([buf[14], buf[15]]));
                    if len > buf.len() {
                        return Err(Ok(Bad::Invalid));
                    }
                    want = len;
                }
                if n < want {
                    s.clear_read_ready(); // wait for more bytes
                }
            }
            Err(b) => return Err(Ok(b)),
        }
    }
}

/// PP2_TYPE_SSL's content: client flags, verify result, sub-TLVs.
pub type SslTlv = (u8, u32, Vec<(u8, Vec<u8>)>);

/// What a server connection's header carries beyond addresses.
#[derive(Default)]
pub struct Extras<'a> {
    /// The client connection's ALPN (HAProxy always passes it on).
    pub alpn: Option<&'a [u8]>,
    pub authority: Option<&'a str>,
    pub unique_id: Option<&'a str>,
    /// PP2_TYPE_SSL: (client flags, verify result, sub-TLVs).
    pub ssl: Option<SslTlv>,
    pub crc32c: bool,
}

/// A v1 header for a connection from `src` to `dst` (`UNKNOWN` when not both are IP of one
/// family).
pub fn v1(src: Option<SocketAddr>, dst: Option<SocketAddr>) -> Vec<u8> {
    match (src, dst) {
        (Some(s), Some(d)) if s.is_ipv4() == d.is_ipv4() => {
            let fam = if s.is_ipv4() { "TCP4" } else { "TCP6" };
            format!("PROXY {fam} {} {} {} {}\r\n", s.ip(), d.ip(), s.port(), d.port()).into_bytes()
        }
        _ => b"PROXY UNKNOWN\r\n".to_vec(),
    }
}

/// A v2 header, with TLVs: `PROXY` with both addresses, `LOCAL` without.
pub fn v2(src: Option<SocketAddr>, dst: Option<SocketAddr>, extras: &Extras<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(V2_SIG);
    // Mixed families: both as IPv6 (v4-mapped), as HAProxy does.
    let pair = match (src, dst) {
        (Some(SocketAddr::V4(s)), Some(SocketAddr::V4(d))) => {
            Some((0x11, s.ip().octets().to_vec(), d.ip().octets().to_vec(), s.port(), d.port()))
        }
        (Some(s), Some(d)) => {
            let v6 = |a: SocketAddr| match a.ip() {
                IpAddr::V4(v4) => v4.to_ipv6_mapped().octets().to_vec(),
                IpAddr::V6(v6) => v6.octets().to_vec(),
            };
            Some((0x21, v6(s), v6(d), s.port(), d.port()))
        }
        _ => None,
    };
    let mut body = Vec::new();
    let used_by_addrs = match &pair {
        Some((_, s, ..)) => 2 * s.len() + 4,
        None => 0,
    };
    match pair {
        Some((fam, s, d, sp, dp)) => {
            out.push(0x21);
            out.push(fam);
            body.extend_from_slice(&s);
            body.extend_from_slice(&d);
            body.extend_from_slice(&sp.to_be_bytes());
            body.extend_from_slice(&dp.to_be_bytes());
        }
        // HAProxy's LOCAL command when an address is not IP (a UNIX client, a check).
        None => {
            out.push(0x20);
            out.push(0x00);
        }
    }
    let mut tlv = |kind: u8, value: &[u8]| {
        body.push(kind);
        body.extend_from_slice(&(value.len() as u16).to_be_bytes());
        body.extend_from_slice(value);
    };
    // HAProxy's order: CRC32C (its value filled last), ALPN, AUTHORITY, UNIQUE_ID, SSL.
    if extras.crc32c {
        tlv(PP2_TYPE_CRC32C, &[0; 4]);
    }
    if let Some(a) = extras.alpn {
        tlv(PP2_TYPE_ALPN, a);
    }
    if let Some(a) = extras.authority {
        tlv(PP2_TYPE_AUTHORITY, a.as_bytes());
    }
    if let Some(u) = extras.unique_id {
        tlv(PP2_TYPE_UNIQUE_ID, u.as_bytes());
    }
    if let Some((client, verify, subs)) = &extras.ssl {
        let mut v = vec![*client];
        v.extend_from_slice(&verify.to_be_bytes());
        for (k, s) in subs {
            v.push(*k);
            v.extend_from_slice(&(s.len() as u16).to_be_bytes());
            v.extend_from_slice(s);
        }
        tlv(PP2_TYPE_SSL, &v);
    }
    let crc_at = extras.crc32c.then_some(used_by_addrs + 3);
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    let body_at = out.len();
    out.extend_from_slice(&body);
    if let Some(at) = crc_at {
        let crc = crc32c(&out);
        out[body_at + at..body_at + at + 4].copy_from_slice(&crc.to_be_bytes());
    }
    out
}

/// CRC-32C (Castagnoli), as PP2_TYPE_CRC32C wants it.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().expect("addr")
    }

    #[test]
    fn v1_lines() {
        let (h, n) =
            parse(b"PROXY TCP4 1.2.3.4 5.6.7.8 1000 80\r\nGET").expect("ok").expect("complete");
        assert_eq!(n, 36);
        assert_eq!(h.addrs, Some((sa("1.2.3.4:1000"), sa("5.6.7.8:80"))));
        assert_eq!(parse(b"PROXY TCP4 1.2.3.4"), Ok(None));
        assert_eq!(parse(b"PROXY UNKNOWN\r\n").expect("ok").expect("c").0.addrs, None);
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Err(Bad::NotProxy));
        assert_eq!(parse(b"PROXY TCP4 ::1 ::1 1 2\r\n"), Err(Bad::Invalid));
        assert_eq!(parse(b"PROXY TCP4 1.2.3.4 5.6.7.8 +1 80\r\n"), Err(Bad::Invalid));
        assert_eq!(parse(&[b'P'; 200]), Err(Bad::NotProxy));
        let mut long = b"PROXY TCP4 ".to_vec();
        long.extend([b'1'; 120]);
        assert_eq!(parse(&long), Err(Bad::Invalid));
    }

    #[test]
    fn v2_round_trip_with_tlvs() {
        let extras = Extras {
            alpn: Some(b"h2"),
            authority: Some("example.com"),
            unique_id: Some("abc"),
            ssl: Some((1, 0, vec![(PP2_SUBTYPE_SSL_VERSION, b"TLSv1.3".to_vec())])),
            crc32c: true,
        };
        let h = v2(Some(sa("10.0.0.1:1234")), Some(sa("10.0.0.2:443")), &extras);
        let (got, n) = parse(&h).expect("ok").expect("complete");
        assert_eq!(n, h.len());
        assert_eq!(got.addrs, Some((sa("10.0.0.1:1234"), sa("10.0.0.2:443"))));
        assert_eq!(got.tlv(PP2_TYPE_AUTHORITY), Some(&b"example.com"[..]));
        assert_eq!(got.tlv(PP2_TYPE_UNIQUE_ID), Some(&b"abc"[..]));
        // The checksum covers the header with its own field zeroed.
        assert_eq!(got.tlvs[0].0, PP2_TYPE_CRC32C, "the checksum comes first, as in HAProxy");
        assert_eq!(got.tlv(PP2_TYPE_ALPN), Some(&b"h2"[..]));
        let mut zeroed = h.clone();
        let crc = got.tlv(PP2_TYPE_CRC32C).expect("crc").to_vec();
        let at = 16 + 12 + 3;
        zeroed[at..at + 4].copy_from_slice(&[0; 4]);
        assert_eq!(crc32c(&zeroed).to_be_bytes().to_vec(), crc);
        // Mixed families go as IPv6.
        let h6 = v2(Some(sa("10.0.0.1:1")), Some(sa("[::1]:2")), &Extras::default());
        let (got, _) = parse(&h6).expect("ok").expect("complete");
        assert!(got.addrs.expect("addrs").0.is_ipv6());
        assert_eq!(parse(&h[..20]), Ok(None));
    }

    #[test]
    fn crc32c_known_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
