//! HTTP/2 to servers over TLS (issue 16): `server ... ssl alpn h2,http/1.1` speaks HTTP/2
//! when the server's ALPN chooses `h2`, to HTTP/1 and HTTP/2 clients alike, beside HAProxy
//! 2.6 doing the same. Clear-text HTTP/2 to servers (`proto h2`): `http/h2up.rs`.

use std::sync::Arc;

use crate::h2client::{h2c, H2Req};
use crate::h2server::h2_tls_server;
use crate::harness::{scratch, start_proxy};
use crate::tls::{provider, write, Ca};

/// A TLS server configuration offering only `h2`.
fn h2_only(ca: &Ca) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    let (bundle, key) = ca.leaf(&["origin.test"], false, false);
    let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(bundle.as_bytes())
        .map(|c| c.expect("cert"))
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key");
    let mut c = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    c.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(c)
}

#[test]
fn alpn_h2_to_a_tls_server_carries_http1_and_http2_clients() {
    let dir = scratch("h2-servers-tls");
    let ca = Ca::new("Test CA");
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let srv = h2_tls_server(h2_only(&ca));
    let cfg = format!(
        "global\n nbthread 1\n\
         defaults\n mode http\n timeout connect 2s\n timeout client 5s\n timeout server 5s\n\
         listen px\n bind {{fe0}}\n\
         http-response set-header x-bc \"%[ssl_bc_alpn] %[ssl_bc_protocol] %[ssl_bc]\"\n\
         server s1 {} ssl verify required ca-file {} sni str(origin.test) alpn h2,http/1.1\n",
        srv.addr,
        ca_file.display()
    );
    let mut seen = Vec::new();
    for which in ["haproxy", "fulcrum"] {
        let Some((_proc, addrs, _)) = start_proxy(which, "h2-servers-tls", &cfg) else { continue };
        let before = srv.connections();
        // An HTTP/1 client, then an HTTP/2 one with a body and trailers.
        let h1 = raw_get(addrs[0], "/one?x=1");
        let h2 = h2c(addrs[0], &[H2Req::post("/two?trailers=1", b"abc").trailer("x-t", "1")])
            .expect("HTTP/2 exchange");
        let text = h2[0].text();
        assert!(h1.starts_with("HTTP/1.1 200"), "{which}: {h1}");
        assert!(h1.contains("GET /one?x=1\n"), "{which}: {h1}");
        assert!(h1.contains("\nauthority: "), "{which}: {h1}");
        // The server connection's TLS facts, as seen by a transaction on one of its streams.
        assert!(h1.to_ascii_lowercase().contains("x-bc: h2 tlsv1.3 1\r\n"), "{which}: {h1}");
        assert_eq!(h2[0].status, 200, "{which}");
        assert!(text.contains("POST /two?trailers=1\n"), "{which}: {text}");
        assert!(
            text.contains("body: abc\n") && text.contains("trailer x-t: 1\n"),
            "{which}: {text}"
        );
        assert!(h2[0].trailers.iter().any(|(n, v)| n == "grpc-status" && v == "0"), "{which}");
        seen.push((which, srv.connections() - before));
    }
    // Fulcrum's two transactions shared one connection.
    assert!(seen.contains(&("fulcrum", 1)), "{seen:?}");
}

/// One HTTP/1.1 request with `Connection: close`: the whole answer as text.
fn raw_get(addr: std::net::SocketAddr, path: &str) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    String::from_utf8_lossy(&crate::harness::exchange(addr, req.as_bytes())).into_owned()
}
