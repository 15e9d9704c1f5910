//! Reading a TLS ClientHello that is not terminated here (`mode tcp` passthrough): what
//! `req.ssl_sni`, `req.ssl_alpn`, `req.ssl_hello_type` and `req.ssl_ver` return, from the bytes
//! waiting in the socket. A bounded, copy-free walk over the first record; anything malformed
//! or incomplete gives no value (the caller waits for more bytes while `tcp-request
//! inspect-delay` allows).

/// What the first bytes of a connection say, as far as they go.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Hello<'a> {
    /// The record is complete (or the bytes are not TLS at all): waiting longer changes nothing.
    pub settled: bool,
    /// Handshake message type of the first record (1: ClientHello).
    pub hello_type: Option<u8>,
    /// `major << 16 | minor` of the record (`req.ssl_ver`).
    pub version: Option<i64>,
    pub sni: Option<&'a [u8]>,
    /// The first ALPN protocol offered (`req.ssl_alpn`).
    pub alpn: Option<&'a [u8]>,
}

fn u16_at(b: &[u8], i: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])))
}

/// Reads the start of `data`.
pub fn parse(data: &[u8]) -> Hello<'_> {
    let mut h = Hello::default();
    if data.len() < 5 {
        // Not TLS (a handshake record starts with 0x16): no need to wait for more.
        h.settled = !data.is_empty() && data[0] != 0x16;
        return h;
    }
    if data[0] != 0x16 || data[1] != 3 {
        h.settled = true;
        return h;
    }
    h.version = Some(i64::from(data[1]) << 16 | i64::from(data[2]));
    let Some(len) = u16_at(data, 3) else { return h };
    if data.len() < 5 + len {
        h.hello_type = data.get(5).copied();
        return h;
    }
    h.settled = true;
    let rec = &data[5..5 + len];
    h.hello_type = rec.first().copied();
    if h.hello_type != Some(1) {
        return h;
    }
    let _ = extensions(rec, &mut h);
    h
}

/// Walks the ClientHello's extensions for the server name and ALPN.
fn extensions<'a>(rec: &'a [u8], h: &mut Hello<'a>) -> Option<()> {
    // type(1) length(3) version(2) random(32)
    let mut i = 4 + 2 + 32;
    i += 1 + usize::from(*rec.get(i)?); // session id
    i += 2 + u16_at(rec, i)?; // cipher suites
    i += 1 + usize::from(*rec.get(i)?); // compression methods
    let end = (i + 2 + u16_at(rec, i)?).min(rec.len());
    i += 2;
    while i + 4 <= end {
        let (kind, len) = (u16_at(rec, i)?, u16_at(rec, i + 2)?);
        let body = rec.get(i + 4..i + 4 + len)?;
        match kind {
            // server_name: list length(2), then type(1)=0 host_name, length(2), name
            0 if body.len() >= 5 && body[2] == 0 => {
                let n = u16_at(body, 3)?;
                h.sni = body.get(5..5 + n);
            }
            16 => {
                // ALPN: list length(2), then length(1)-prefixed names
                let n = usize::from(*body.get(2)?);
                h.alpn = body.get(3..3 + n);
            }
            _ => {}
        }
        i += 4 + len;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello as rustls writes it, for `sni` and ALPN `h2`.
    fn client_hello(sni: &str) -> Vec<u8> {
        let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        let mut config = config;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let name = rustls::pki_types::ServerName::try_from(sni.to_string()).expect("name");
        let mut c = rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("conn");
        let mut out = Vec::new();
        c.write_tls(&mut out).expect("hello");
        out
    }

    #[test]
    fn a_real_client_hello_gives_its_name_alpn_and_version() {
        let hello = client_hello("api.example.com");
        let h = parse(&hello);
        assert!(h.settled);
        assert_eq!(h.hello_type, Some(1));
        assert_eq!(h.sni, Some(&b"api.example.com"[..]));
        assert_eq!(h.alpn, Some(&b"h2"[..]));
        assert_eq!(h.version, Some(3 << 16 | 1), "TLS 1.3 hellos say 3.1 in the record");
        // Partial: not settled, no name yet.
        let p = parse(&hello[..40]);
        assert!(!p.settled && p.sni.is_none());
        assert_eq!(p.hello_type, Some(1));
        // Clear text settles at once.
        assert!(parse(b"GET / HTTP/1.1\r\n").settled);
        assert!(!parse(b"").settled);
        // Garbage lengths never read out of bounds.
        let mut bad = hello.clone();
        bad[43] = 0xff;
        let _ = parse(&bad);
        for cut in 0..hello.len() {
            let _ = parse(&hello[..cut]);
        }
    }
}
