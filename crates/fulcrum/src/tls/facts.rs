//! What a TLS connection says about itself, in HAProxy's words: what the `ssl_fc*`, `ssl_c_*`
//! and `ssl_bc*` fetches read (`rules::sample::tls` makes them values), the `%sslv`/`%sslc` log fields, and the PROXY protocol v2 TLVs a server
//! connection carries (`send-proxy-v2-ssl`, `proxy-v2-options`).
//!
//! Must not touch: the connection's I/O.

use std::net::SocketAddr;

use fulcrum_config::SendProxy;
use rustls::{CipherSuite, Connection, HandshakeKind, ProtocolVersion};

use crate::connection::proxy;
use crate::connection::Stream;

/// `TLSv1.3`, `TLSv1.2`.
pub fn protocol_name(v: ProtocolVersion) -> &'static str {
    match v {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        ProtocolVersion::TLSv1_1 => "TLSv1.1",
        ProtocolVersion::TLSv1_0 => "TLSv1",
        _ => "unknown",
    }
}

/// OpenSSL's name of a suite (what HAProxy logs), and its key size in bits.
pub fn cipher_name(s: CipherSuite) -> (&'static str, i64) {
    match u16::from(s) {
        0x1301 => ("TLS_AES_128_GCM_SHA256", 128),
        0x1302 => ("TLS_AES_256_GCM_SHA384", 256),
        0x1303 => ("TLS_CHACHA20_POLY1305_SHA256", 256),
        0xc02b => ("ECDHE-ECDSA-AES128-GCM-SHA256", 128),
        0xc02c => ("ECDHE-ECDSA-AES256-GCM-SHA384", 256),
        0xc02f => ("ECDHE-RSA-AES128-GCM-SHA256", 128),
        0xc030 => ("ECDHE-RSA-AES256-GCM-SHA384", 256),
        0xcca8 => ("ECDHE-RSA-CHACHA20-POLY1305", 256),
        0xcca9 => ("ECDHE-ECDSA-CHACHA20-POLY1305", 256),
        _ => ("unknown", 0),
    }
}

/// The log fields `%sslv` and `%sslc` of a client connection (`-` on clear text).
pub fn log_fields(client: &Stream) -> Option<(&'static str, &'static str)> {
    client.tls()?.with_conn(|c| {
        let v = c.protocol_version().map(protocol_name)?;
        let s = c.negotiated_cipher_suite().map(|s| cipher_name(s.suite()).0)?;
        Some((v, s))
    })
}

/// The server name a client asked for (`ssl_fc_sni`).
pub fn client_sni(client: &Stream) -> Option<String> {
    client.tls()?.with_conn(|c| match c {
        Connection::Server(s) => s.server_name().map(str::to_string),
        Connection::Client(_) => None,
    })
}

/// What the `ssl_bc*` fetches read of a server connection, kept by a stream of an HTTP/2
/// connection to a server (the TLS layer is the connection's, shared by its streams).
#[derive(Debug)]
pub struct Snapshot {
    pub protocol: Option<&'static str>,
    pub cipher: Option<(&'static str, i64)>,
    pub alpn: Option<Vec<u8>>,
    pub resumed: bool,
    pub session_id: Option<Vec<u8>>,
    /// The server's certificate (`ssl_s_*`).
    pub cert: Option<rustls::pki_types::CertificateDer<'static>>,
}

impl Snapshot {
    pub fn of(tls: &crate::connection::tls::TlsStream) -> Snapshot {
        let session_id = tls.session_id();
        tls.with_conn(|c| Snapshot {
            protocol: c.protocol_version().map(protocol_name),
            cipher: c.negotiated_cipher_suite().map(|x| cipher_name(x.suite())),
            alpn: c.alpn_protocol().map(<[u8]>::to_vec),
            resumed: c.handshake_kind() == Some(HandshakeKind::Resumed),
            session_id,
            cert: c.peer_certificates().and_then(|p| p.first()).map(|d| d.clone().into_owned()),
        })
    }
}

/// The server side of a transaction as the `ssl_bc*`, `ssl_s_*` and `bc_*` fetches see it:
/// its byte stream; for an HTTP/2 stream or a shared FastCGI connection, the facts of the
/// connection it runs on (taken when the connection was made; no TLS facts on clear text) and
/// its socket; in a log line, the addresses the stream noted.
#[derive(Clone, Copy)]
pub enum ServerSide<'a> {
    Stream(&'a Stream),
    Facts { tls: Option<&'a Snapshot>, fd: Option<std::os::fd::BorrowedFd<'a>>, h2: bool },
    Logged(SocketAddr, SocketAddr),
}

impl ServerSide<'_> {
    /// What a log line's `bc_*` fetches read: the server connection's addresses the stream
    /// noted (when a format prints them).
    pub fn logged(o: &crate::outcome::Outcome) -> Option<ServerSide<'static>> {
        o.server_conn.map(|(local, peer)| ServerSide::Logged(local, peer))
    }

    /// The connection's local and remote addresses (`bc_src`, `bc_dst`): two system calls,
    /// made only when a fetch asks.
    pub fn addrs(&self) -> Option<(SocketAddr, SocketAddr)> {
        use std::os::fd::AsFd;
        let fd = match self {
            ServerSide::Stream(s) => s.as_fd(),
            ServerSide::Facts { fd: Some(fd), .. } => *fd,
            ServerSide::Facts { fd: None, .. } => return None,
            ServerSide::Logged(local, peer) => return Some((*local, *peer)),
        };
        let s = socket2::SockRef::from(&fd);
        Some((s.local_addr().ok()?.as_socket()?, s.peer_addr().ok()?.as_socket()?))
    }

    /// `bc_http_major`: 2 over HTTP/2, else 1 (`None` in a log line, which does not know).
    pub fn http_major(&self) -> Option<i64> {
        match self {
            ServerSide::Stream(_) => Some(1),
            ServerSide::Facts { h2, .. } => Some(if *h2 { 2 } else { 1 }),
            ServerSide::Logged(..) => None,
        }
    }
}

/// A client connection's TLS as `fulcrum explain` is told it, without one: TLS, with this
/// server name if any; no certificate, no cipher.
#[derive(Clone, Copy, Debug)]
pub struct Told<'a> {
    pub sni: Option<&'a str>,
}

/// The PROXY protocol header opening a connection to a server, from the client's side.
pub fn proxy_header(
    sp: &SendProxy,
    open: &crate::connection::Opening<'_>,
    dst: Option<SocketAddr>,
) -> Vec<u8> {
    if sp.version == 1 {
        return proxy::v1(open.src, dst);
    }
    let has = |o: &str| sp.options.iter().any(|x| x == o);
    let client = open.client;
    let sni = client.and_then(client_sni);
    let ssl =
        (sp.ssl || has("ssl") || has("ssl-cipher") || has("cert-cn") || sp.ssl_cn).then(|| {
            ssl_tlv(
                client,
                sp.ssl_cn || has("cert-cn"),
                has("ssl-cipher"),
                has("cert-sig"),
                has("cert-key"),
            )
        });
    let alpn = client
        .and_then(Stream::tls)
        .and_then(|t| t.with_conn(|c| c.alpn_protocol().map(<[u8]>::to_vec)));
    let extras = proxy::Extras {
        alpn: alpn.as_deref(),
        authority: if has("authority") { sni.as_deref() } else { None },
        // HAProxy sends the TLV even when the stream has no unique id (empty).
        unique_id: if has("unique-id") { Some(open.unique_id.unwrap_or("")) } else { None },
        ssl,
        crc32c: has("crc32c"),
    };
    proxy::v2(open.src, dst, &extras)
}

/// PP2_TYPE_SSL: client flags, verify result, and the sub-TLVs asked for.
fn ssl_tlv(client: Option<&Stream>, cn: bool, cipher: bool, sig: bool, key: bool) -> proxy::SslTlv {
    let Some(tls) = client.and_then(Stream::tls) else {
        return (0, 0, Vec::new());
    };
    tls.with_conn(|c| {
        let mut subs = Vec::new();
        let mut flags = 0x01; // PP2_CLIENT_SSL
        if let Some(v) = c.protocol_version() {
            subs.push((proxy::PP2_SUBTYPE_SSL_VERSION, protocol_name(v).as_bytes().to_vec()));
        }
        let cert =
            c.peer_certificates().and_then(|p| p.first()).and_then(|d| super::x509::Info::parse(d));
        if cert.is_some() {
            flags |= 0x02 | 0x04; // PP2_CLIENT_CERT_CONN | PP2_CLIENT_CERT_SESS
        }
        if cn {
            if let Some(v) =
                cert.as_ref().and_then(|i| super::x509::Info::dn_field(&i.subject, "CN", 1))
            {
                subs.push((proxy::PP2_SUBTYPE_SSL_CN, v.into_bytes()));
            }
        }
        if let Some(i) = &cert {
            if key {
                subs.push((proxy::PP2_SUBTYPE_SSL_KEY_ALG, i.key_alg.clone().into_bytes()));
            }
            if sig {
                subs.push((proxy::PP2_SUBTYPE_SSL_SIG_ALG, i.sig_alg.clone().into_bytes()));
            }
        }
        if cipher {
            if let Some(s) = c.negotiated_cipher_suite() {
                subs.push((
                    proxy::PP2_SUBTYPE_SSL_CIPHER,
                    cipher_name(s.suite()).0.as_bytes().to_vec(),
                ));
            }
        }
        (flags, 0, subs)
    })
}
