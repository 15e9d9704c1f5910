//! SOCKS4 (`server ... socks4 <addr>:<port>`, `check-via-socks4`): a connection to the proxy
//! becomes one to the server after a CONNECT request (user id `HAProxy`, as HAProxy sends) and
//! the proxy's 8-byte answer, granted with 0x5A. Owns only this exchange; the caller bounds it
//! with its connect timeout and then uses the stream as if connected to the server directly.

use std::io;
use std::net::SocketAddr;

use crate::connection::Stream;

/// The CONNECT request HAProxy sends for `target` (SOCKS4 carries IPv4 addresses only).
pub fn request(target: SocketAddr) -> io::Result<[u8; 16]> {
    let SocketAddr::V4(v4) = target else {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "SOCKS4 needs an IPv4 server"));
    };
    let mut r = [0u8; 16];
    r[0] = 4; // version
    r[1] = 1; // CONNECT
    r[2..4].copy_from_slice(&v4.port().to_be_bytes());
    r[4..8].copy_from_slice(&v4.ip().octets());
    r[8..16].copy_from_slice(b"HAProxy\0");
    Ok(r)
}

/// Asks the proxy `s` is connected to for `target`; `Ok` once it granted it.
pub async fn handshake(s: &Stream, target: SocketAddr) -> io::Result<()> {
    crate::connection::write_all(s, &request(target)?).await?;
    let mut answer = [0u8; 8];
    let mut got = 0;
    while got < answer.len() {
        std::future::poll_fn(|cx| s.poll_read_ready(cx)).await?;
        match s.try_read(&mut answer[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => s.clear_read_ready(),
            Err(e) => return Err(e),
        }
    }
    if answer[1] != 0x5A {
        let msg = format!("SOCKS4 proxy refused the connection (code 0x{:02X})", answer[1]);
        return Err(io::Error::new(io::ErrorKind::ConnectionRefused, msg));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_haproxys() {
        let r = request("192.0.2.7:8080".parse().expect("addr")).expect("v4");
        assert_eq!(r, *b"\x04\x01\x1f\x90\xc0\x00\x02\x07HAProxy\0");
        assert!(request("[::1]:80".parse().expect("addr")).is_err());
    }
}
