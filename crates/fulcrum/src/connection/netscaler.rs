//! The NetScaler Client IP insertion protocol (`accept-netscaler-cip <magic>`, `tcp-request
//! connection expect-netscaler-cip layer4`): a header carrying the client's original IP and
//! TCP headers ahead of the stream, read as HAProxy 2.6's `conn_recv_netscaler_cip` reads it.
//!
//! Two layouts, told apart by the byte after the magic number (all fields big-endian):
//! legacy (`magic:4 | header length:4 | IP header...`, that byte being an IP version nibble)
//! and standard (`magic:4 | CIP length:4 | CIP type:2 (first byte 0) | header length:2 | IP
//! header...`). The IP header (version 4 with its IHL, or 6 without extension headers) must
//! carry TCP; its addresses and the TCP header's ports become the connection's. One peek
//! decides, as in HAProxy: a header that has not fully arrived is refused at once (only a
//! connection with no byte at all waits, bounded by the caller). Then exactly the prefix
//! and the header length are consumed; what follows stays for the layer above.
//! Must not touch: what the addresses are used for.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Stream;

/// Why a header was refused, in HAProxy's words (they end up in the log line).
#[derive(Debug, PartialEq, Eq)]
pub enum Bad {
    /// The connection closed before any byte.
    Empty,
    /// Fewer bytes than the header needs.
    Truncated,
    Magic,
    /// Not TCP over IPv4 or IPv6, or an unknown layout.
    Protocol,
    /// A socket error, or fewer bytes than announced once the header was read.
    Abort,
}

impl Bad {
    pub fn message(&self) -> &'static str {
        match self {
            Bad::Empty => "Connection closed while waiting for NetScaler Client IP header",
            Bad::Truncated => "Truncated NetScaler Client IP header received",
            Bad::Magic => "Received an invalid NetScaler Client IP magic number",
            Bad::Protocol => "Received an unhandled protocol in the NetScaler Client IP header",
            Bad::Abort => "Connection error while waiting for NetScaler Client IP header",
        }
    }
}

/// The message of a connection that sent nothing within its time.
pub const TIMEOUT: &str = "Timeout while waiting for a NetScaler Client IP header";

/// What a header says: the client's address, the original destination, and how many bytes
/// the header takes (its prefix and its announced length).
#[derive(Debug, PartialEq, Eq)]
pub struct Header {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub len: usize,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn port(b: &[u8], at: usize) -> Result<u16, Bad> {
    match b.get(at..at + 2) {
        Some(p) => Ok(u16::from_be_bytes([p[0], p[1]])),
        None => Err(Bad::Truncated),
    }
}

/// Parses the header at the start of `buf` (all the bytes there were), with HAProxy's
/// checks in its order.
pub fn parse(buf: &[u8], magic: u32) -> Result<Header, Bad> {
    let n = buf.len();
    if n < 12 {
        return Err(Bad::Truncated);
    }
    if be32(buf, 0) != magic {
        return Err(Bad::Magic);
    }
    let (prefix, hdr_len) = match buf[8] {
        b if b & 0xD0 == 0x40 => (8, be32(buf, 4) as usize),
        0 => (12, usize::from(u16::from_be_bytes([buf[10], buf[11]]))),
        _ => return Err(Bad::Protocol),
    };
    if n < 20 {
        return Err(Bad::Truncated);
    }
    let ip = &buf[prefix..];
    let (src, dst, tcp) = match ip[0] >> 4 {
        4 => {
            if n < 40 || n < hdr_len {
                return Err(Bad::Truncated);
            }
            if ip[9] != 6 {
                return Err(Bad::Protocol);
            }
            let addr =
                |at: usize| IpAddr::V4(Ipv4Addr::new(ip[at], ip[at + 1], ip[at + 2], ip[at + 3]));
            (addr(12), addr(16), usize::from(ip[0] & 0x0F) * 4)
        }
        6 => {
            if n < 60 || n < hdr_len {
                return Err(Bad::Truncated);
            }
            if ip[6] != 6 {
                return Err(Bad::Protocol);
            }
            let addr = |at: usize| {
                let mut a = [0u8; 16];
                a.copy_from_slice(&ip[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(a))
            };
            (addr(8), addr(24), 40)
        }
        _ => return Err(Bad::Protocol),
    };
    let (sport, dport) = (port(ip, tcp)?, port(ip, tcp + 2)?);
    Ok(Header {
        src: SocketAddr::new(src, sport),
        dst: SocketAddr::new(dst, dport),
        len: prefix + hdr_len,
    })
}

/// Room for one peek: a header longer than this is truncated, as one longer than HAProxy's
/// buffer is there.
const PEEK: usize = 4096;

/// Reads a header from `s` (the caller bounds the wait for its first byte in time). On a
/// header whose announced length has not all arrived, the error comes with the addresses it
/// gave (HAProxy logs them).
pub async fn read(s: &Stream, magic: u32) -> Result<Header, (Bad, Option<SocketAddr>)> {
    let mut buf = vec![0u8; PEEK];
    let n = loop {
        std::future::poll_fn(|cx| s.poll_read_ready(cx)).await.map_err(|_| (Bad::Abort, None))?;
        match s.try_peek(&mut buf) {
            Ok(0) => return Err((Bad::Empty, None)),
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => s.clear_read_ready(),
            Err(_) => return Err((Bad::Abort, None)),
        }
    };
    let h = parse(&buf[..n], magic).map_err(|b| (b, None))?;
    // Consume exactly the header: what it announced must be there.
    let mut left = h.len;
    while left > 0 {
        let want = left.min(buf.len());
        match s.try_read(&mut buf[..want]) {
            Ok(k) if k > 0 => left -= k,
            _ => return Err((Bad::Abort, Some(h.src))),
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard header for 192.0.2.10:4321 -> 198.51.100.20:80, its IP header `ihl` words.
    fn standard_v4(magic: u32, ihl: u8) -> Vec<u8> {
        let opts = usize::from(ihl - 5) * 4;
        let mut ip = vec![0x40 | ihl, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0];
        ip.extend_from_slice(&[192, 0, 2, 10, 198, 51, 100, 20]);
        ip.extend(std::iter::repeat_n(1u8, opts));
        let mut tcp = vec![0x10, 0xE1, 0x00, 0x50];
        tcp.extend_from_slice(&[0; 16]);
        let body: Vec<u8> = ip.into_iter().chain(tcp).collect();
        let mut h = magic.to_be_bytes().to_vec();
        h.extend_from_slice(&(12 + body.len() as u32).to_be_bytes());
        h.extend_from_slice(&[0, 1]);
        h.extend_from_slice(&(body.len() as u16).to_be_bytes());
        h.extend(body);
        h
    }

    #[test]
    fn standard_and_legacy_headers_give_the_addresses_and_their_length() {
        let h = standard_v4(1234, 5);
        let got = parse(&h, 1234).expect("valid");
        assert_eq!(got.src, "192.0.2.10:4321".parse().expect("addr"));
        assert_eq!(got.dst, "198.51.100.20:80".parse().expect("addr"));
        assert_eq!(got.len, 52);
        // IP options: the TCP header follows the IHL.
        assert_eq!(parse(&standard_v4(1234, 6), 1234).expect("valid").src.port(), 4321);
        // Legacy: magic, length, then the IP header.
        let body = &h[12..];
        let mut legacy = 1234u32.to_be_bytes().to_vec();
        legacy.extend_from_slice(&(body.len() as u32).to_be_bytes());
        legacy.extend_from_slice(body);
        assert_eq!(parse(&legacy, 1234).expect("valid").len, 48);
    }

    #[test]
    fn ipv6_and_refusals_as_haproxy_orders_them() {
        let mut ip = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        let a: Ipv6Addr = "2001:db8::10".parse().expect("v6");
        let b: Ipv6Addr = "2001:db8::20".parse().expect("v6");
        ip.extend_from_slice(&a.octets());
        ip.extend_from_slice(&b.octets());
        ip.extend_from_slice(&[0x10, 0xE1, 0x00, 0x50]);
        ip.extend_from_slice(&[0; 16]);
        let mut h = 7u32.to_be_bytes().to_vec();
        h.extend_from_slice(&[0, 0, 0, 72, 0, 1]);
        h.extend_from_slice(&(ip.len() as u16).to_be_bytes());
        h.extend_from_slice(&ip);
        let got = parse(&h, 7).expect("valid");
        assert_eq!(got.src, SocketAddr::new(IpAddr::V6(a), 4321));
        assert_eq!(parse(&h, 8), Err(Bad::Magic));
        assert_eq!(parse(&h[..11], 7), Err(Bad::Truncated));
        assert_eq!(parse(&h[..45], 7), Err(Bad::Truncated));
        let mut udp = h.clone();
        udp[12 + 6] = 17;
        assert_eq!(parse(&udp, 7), Err(Bad::Protocol));
        let mut kind = h.clone();
        kind[8] = 1;
        assert_eq!(parse(&kind, 7), Err(Bad::Protocol));
        // A plain request is a bad magic number.
        assert_eq!(parse(b"GET / HTTP/1.1\r\nhost: a\r\n\r\n", 7), Err(Bad::Magic));
    }
}
