//! TLS termination and origination, and the PROXY protocol, with real clients: rustls here
//! (certificate choice, ALPN, resumption, mutual TLS), `curl` and `openssl s_client` when
//! installed, and HAProxy 2.6 on the other end of PROXY protocol connections when installed.
//! Certificates are made per test (rcgen): a CA, servers, clients, an expired one.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::h2client::H2Req;
use crate::harness::{eventually, fulcrum, haproxy_bin, scratch, start_proxy, testserver};

/// A test CA and what it signs.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub(crate) fn new(cn: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().expect("key");
        Ca { issuer: CertifiedIssuer::self_signed(p, key).expect("ca") }
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf for `names` (first one is the CN), ECDSA P-256 or RSA-2048; returns the PEM
    /// bundle (chain + key) and the key alone.
    pub(crate) fn leaf(&self, names: &[&str], rsa: bool, expired: bool) -> (String, String) {
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("params");
        p.distinguished_name.push(DnType::CommonName, names[0]);
        p.distinguished_name.push(DnType::OrganizationName, "Fulcrum Tests");
        if expired {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = if rsa {
            KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256).expect("rsa key")
        } else {
            KeyPair::generate().expect("key")
        };
        let cert = p.signed_by(&key, &self.issuer).expect("sign");
        let key_pem = key.serialize_pem();
        (format!("{}{}", cert.pem(), key_pem), key_pem)
    }
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn roots(ca: &Ca) -> Arc<rustls::RootCertStore> {
    let mut r = rustls::RootCertStore::empty();
    r.add(ca.der()).expect("root");
    Arc::new(r)
}

pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

pub(crate) fn client_config(ca: &Ca, alpn: &[&str]) -> Arc<rustls::ClientConfig> {
    let mut c = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots(ca))
        .with_no_client_auth();
    c.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    Arc::new(c)
}

/// A TLS connection to `addr` naming `sni`; `Err` when the handshake fails.
pub(crate) fn tls_connect(
    addr: SocketAddr,
    sni: &str,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let name = ServerName::try_from(sni.to_string()).expect("name");
    let conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// Sends `reqs` over HTTP/2 on a TLS connection to `addr` naming `sni` (ALPN must pick h2).
fn h2_over_tls(
    addr: SocketAddr,
    sni: &str,
    config: Arc<rustls::ClientConfig>,
    reqs: &[H2Req],
) -> Result<Vec<crate::h2client::H2Resp>, String> {
    let name = ServerName::try_from(sni.to_string()).map_err(|e| e.to_string())?;
    crate::h2client::run(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err("ALPN did not pick h2".into());
        }
        crate::h2client::exchange(tls, sni, reqs).await
    })
}

/// The CN of the certificate the server presented.
fn peer_cn(s: &rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> String {
    let der = &s.conn.peer_certificates().expect("certs")[0];
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("parse");
    let cn = cert.subject().iter_common_name().next().expect("cn");
    cn.as_str().expect("str").to_string()
}

/// Sends a GET over `s` and returns status and head.
pub(crate) fn get<S: Read + Write>(s: &mut S, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if body.len() >= len {
                let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
                return (code, head.to_string());
            }
        }
    }
    (0, String::from_utf8_lossy(&buf).into_owned())
}

pub(crate) fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn sni_wildcards_default_ecdsa_rsa_and_alpn() {
    let dir = scratch("tls-sni-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let a_rsa = write(&dir, "a-rsa.pem", &ca.leaf(&["a.test"], true, false).0);
    let b = write(&dir, "b.pem", &ca.leaf(&["b.test", "*.wild.test"], false, false).0);
    let ts = testserver("http", "s1");
    let echo = testserver("echo", "e");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {} crt {} crt {} alpn h2,http/1.1\n\
         http-response set-header X-Sni %[ssl_fc_sni]\n http-response set-header X-Proto %[ssl_fc_protocol]\n\
         http-response set-header X-Alpn %[ssl_fc_alpn]\n http-response set-header X-Tls %[ssl_fc]\n\
         default_backend be\n\
         frontend raw\n mode tcp\n bind {{fe1}} ssl crt {} alpn h2,http/1.1\n\
         tcp-request content reject if {{ ssl_fc_protocol TLSv1.2 }}\n\
         use_backend echo if {{ ssl_fc_sni a.test }} {{ ssl_fc_alpn h2 }}\n\
         backend be\n server s1 {}\n backend echo\n mode tcp\n server e {}\n",
        a.display(), a_rsa.display(), b.display(), a.display(), ts.addr, echo.addr
    );
    let f = fulcrum("tls-sni", &cfg);
    let cfg_h = client_config(&ca, &["h2", "http/1.1"]);
    let cfg_h1 = client_config(&ca, &["http/1.1"]);
    // Exact name, wildcard, and no match (the default: the first certificate).
    let mut s = tls_connect(f.addr(), "a.test", Arc::clone(&cfg_h1)).expect("handshake a.test");
    assert_eq!(peer_cn(&s), "a.test");
    assert_eq!(s.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (code, head) = get(&mut s, "/");
    assert_eq!(code, 200, "{head}");
    assert_eq!(header(&head, "x-sni"), Some("a.test"));
    assert_eq!(header(&head, "x-proto"), Some("TLSv1.3"));
    assert_eq!(header(&head, "x-alpn"), Some("http/1.1"));
    assert_eq!(header(&head, "x-tls"), Some("1"));
    // Keep-alive over TLS.
    let (code, _) = get(&mut s, "/again");
    assert_eq!(code, 200);
    // A client offering h2 gets HTTP/2, with the same facts.
    let got =
        h2_over_tls(f.addr(), "a.test", Arc::clone(&cfg_h), &[H2Req::get("/"), H2Req::get("/b")])
            .expect("HTTP/2 over TLS");
    for r in &got {
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("x-alpn"), Some("h2"));
        assert_eq!(r.header("x-sni"), Some("a.test"));
        assert_eq!(r.header("x-tls"), Some("1"));
    }
    let s = tls_connect(f.addr(), "x.wild.test", Arc::clone(&cfg_h)).expect("wildcard");
    assert_eq!(peer_cn(&s), "b.test");
    let s = tls_connect(f.addr(), "unknown.test", Arc::clone(&cfg_h));
    // The default certificate does not carry the name: the client refuses it.
    assert!(s.is_err(), "a client that verifies names refuses the default certificate");
    // A client that only takes RSA signatures gets the RSA certificate of the same name.
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    p.cipher_suites.retain(|cs| {
        cs.version() == &rustls::version::TLS12 && format!("{:?}", cs.suite()).contains("ECDHE_RSA")
    });
    let rsa_only = rustls::ClientConfig::builder_with_provider(Arc::new(p))
        .with_protocol_versions(&[&rustls::version::TLS12])
        .expect("v")
        .with_root_certificates(roots(&ca))
        .with_no_client_auth();
    let s = tls_connect(f.addr(), "a.test", Arc::new(rsa_only)).expect("rsa handshake");
    let der = &s.conn.peer_certificates().expect("certs")[0];
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("parse");
    assert_eq!(
        cert.public_key().algorithm.algorithm.to_id_string(),
        "1.2.840.113549.1.1.1",
        "RSA key"
    );
    // mode tcp: TLS offload to a clear-text echo service; ALPN as configured (h2 included).
    let mut s = tls_connect(f.addrs[1], "a.test", cfg_h).expect("tcp handshake");
    assert_eq!(s.conn.alpn_protocol(), Some(&b"h2"[..]));
    s.write_all(b"hello over tls").expect("write");
    let mut got = [0u8; 14];
    s.read_exact(&mut got).expect("echo");
    assert_eq!(&got, b"hello over tls");
    // mode tcp rules see the handshake's facts: without h2 no use_backend matches (and there
    // is no default), and a content rule refuses TLS 1.2.
    let tls12 = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("v")
            .with_root_certificates(roots(&ca))
            .with_no_client_auth(),
    );
    let mut h2_12 = (*tls12).clone();
    h2_12.alpn_protocols = vec![b"h2".to_vec()];
    for (what, config) in
        [("http/1.1", client_config(&ca, &["http/1.1"])), ("TLS 1.2", Arc::new(h2_12))]
    {
        let mut s = tls_connect(f.addrs[1], "a.test", config).expect("the handshake succeeds");
        let _ = s.write_all(b"x");
        let mut rest = Vec::new();
        assert!(s.read_to_end(&mut rest).map_or(true, |_| rest.is_empty()), "{what}: closed");
    }
}

#[test]
fn strict_sni_resumption_and_redirect_to_https() {
    let dir = scratch("tls-strict-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {} strict-sni\n bind {{fe1}}\n\
         http-request redirect scheme https unless {{ ssl_fc }}\n\
         http-response set-header X-Resumed %[ssl_fc_is_resumed]\n\
         http-response set-header X-Sid %[ssl_fc_session_id,hex]\n default_backend be\n\
         backend be\n server s1 {}\n",
        a.display(),
        ts.addr
    );
    let f = fulcrum("tls-strict", &cfg);
    let cfg_c = client_config(&ca, &[]);
    assert!(
        tls_connect(f.addr(), "other.test", Arc::clone(&cfg_c)).is_err(),
        "strict-sni refuses an unknown name"
    );
    // Resumption: the second connection of the same client resumes (TLS 1.3 tickets).
    // ssl_fc_session_id as OpenSSL keeps it: 32 bytes, the same for every request of a
    // connection; in TLS 1.3 a new one per session, in TLS 1.2 the id a resumption reuses.
    let sid = |head: &str| {
        let v = header(head, "x-sid").unwrap_or_default().to_string();
        assert!(v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()), "{head}");
        v
    };
    let mut s = tls_connect(f.addr(), "a.test", Arc::clone(&cfg_c)).expect("first");
    let (_, head) = get(&mut s, "/");
    assert_eq!(header(&head, "x-resumed"), Some("0"));
    let first = sid(&head);
    assert_eq!(sid(&get(&mut s, "/").1), first, "one id per connection");
    drop(s);
    let mut s = tls_connect(f.addr(), "a.test", Arc::clone(&cfg_c)).expect("second");
    assert_eq!(s.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
    let (_, head) = get(&mut s, "/");
    assert_eq!(header(&head, "x-resumed"), Some("1"));
    assert_ne!(sid(&head), first, "a TLS 1.3 resumption is a new session");
    // TLS 1.2 resumes too, by ticket and by session id.
    for by_id in [false, true] {
        let mut c12 = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("v")
            .with_root_certificates(roots(&ca))
            .with_no_client_auth();
        if by_id {
            c12.resumption = rustls::client::Resumption::in_memory_sessions(8)
                .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly);
        }
        let c12 = Arc::new(c12);
        let mut s = tls_connect(f.addr(), "a.test", Arc::clone(&c12)).expect("tls12 first");
        let first = sid(&get(&mut s, "/").1);
        drop(s);
        let mut s = tls_connect(f.addr(), "a.test", c12).expect("tls12 second");
        assert_eq!(s.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        let again = sid(&get(&mut s, "/").1);
        if by_id {
            assert_eq!(again, first, "resumed by id: the same session");
        }
    }
    // Clear text is redirected, TLS is served.
    let (code, head, _) = crate::harness::get_with(f.addrs[1], "/x", "");
    assert_eq!(code, 302, "{head}");
    assert!(head.to_ascii_lowercase().contains("location: https://t/x"), "{head}");
}

#[test]
fn mutual_tls_accepts_rejects_and_shows_the_client_certificate() {
    let dir = scratch("tls-mtls-certs");
    let ca = Ca::new("Test CA");
    let other = Ca::new("Other CA");
    let srv = write(&dir, "srv.pem", &ca.leaf(&["a.test"], false, false).0);
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend req\n bind {{fe0}} ssl crt {srv} verify required ca-file {ca}\n\
         http-response set-header X-Cn %[ssl_c_s_dn(CN)]\n http-response set-header X-Issuer %[ssl_c_i_dn]\n\
         http-response set-header X-Used %[ssl_c_used]\n http-response set-header X-Verify %[ssl_c_verify]\n\
         default_backend be\n\
         frontend opt\n bind {{fe1}} ssl crt {srv} verify optional ca-file {ca}\n\
         http-response set-header X-Used %[ssl_c_used]\n default_backend be\n\
         backend be\n server s1 {ts}\n",
        srv = srv.display(),
        ca = ca_file.display(),
        ts = ts.addr
    );
    let f = fulcrum("tls-mtls", &cfg);
    let with_cert = |issuer: &Ca, cn: &str| {
        let (bundle, key) = issuer.leaf(&[cn], false, false);
        let chain: Vec<CertificateDer<'static>> =
            rustls::pki_types::pem::PemObject::pem_slice_iter(bundle.as_bytes())
                .collect::<Result<_, _>>()
                .expect("chain");
        let key: PrivateKeyDer<'static> =
            rustls::pki_types::pem::PemObject::from_pem_slice(key.as_bytes()).expect("key");
        let c = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("v")
            .with_root_certificates(roots(&ca))
            .with_client_auth_cert(chain, key)
            .expect("client cert");
        Arc::new(c)
    };
    // No certificate: refused by `verify required` (TLS 1.3 refuses after the handshake, at
    // the first read).
    let refused = tls_connect(f.addr(), "a.test", client_config(&ca, &[]))
        .map(|mut s| get(&mut s, "/").0)
        .unwrap_or(0);
    assert_eq!(refused, 0, "no client certificate: no response");
    // A certificate from another CA: refused.
    let refused = tls_connect(f.addr(), "a.test", with_cert(&other, "mallory"))
        .map(|mut s| get(&mut s, "/").0)
        .unwrap_or(0);
    assert_eq!(refused, 0, "a certificate from an unknown CA: no response");
    // The right one: served, and visible to rules.
    let mut s = tls_connect(f.addr(), "a.test", with_cert(&ca, "alice")).expect("handshake");
    let (code, head) = get(&mut s, "/");
    assert_eq!(code, 200, "{head}");
    assert_eq!(header(&head, "x-cn"), Some("alice"));
    assert_eq!(header(&head, "x-issuer"), Some("/CN=Test CA"));
    assert_eq!(header(&head, "x-used"), Some("1"));
    assert_eq!(header(&head, "x-verify"), Some("0"));
    // `verify optional`: no certificate is fine.
    let mut s = tls_connect(f.addrs[1], "a.test", client_config(&ca, &[])).expect("optional");
    let (code, head) = get(&mut s, "/");
    assert_eq!((code, header(&head, "x-used")), (200, Some("0")), "{head}");
}

#[test]
fn servers_over_tls_verify_their_certificates_and_names() {
    let dir = scratch("tls-origin-certs");
    let ca = Ca::new("Test CA");
    let other = Ca::new("Other CA");
    let inner = write(&dir, "inner.pem", &ca.leaf(&["inner.test"], false, false).0);
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let other_file = write(&dir, "other.pem", &other.pem());
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend inner\n bind INNER ssl crt {inner}\n\
         http-response set-header X-Inner-Sni %[ssl_fc_sni]\n default_backend app\n\
         frontend good\n bind {{fe0}}\n default_backend good\n\
         frontend badca\n bind {{fe1}}\n default_backend badca\n\
         frontend badname\n bind {{fe2}}\n default_backend badname\n\
         frontend byheader\n bind {{fe3}}\n default_backend byheader\n\
         backend app\n server s1 {ts}\n\
         backend good\n http-response set-header X-Bc %[ssl_bc]/%[ssl_bc_protocol]/%[ssl_bc_cipher]\n\
         server i INNER ssl verify required ca-file {ca} sni str(inner.test)\n\
         backend badca\n server i INNER ssl verify required ca-file {other}\n\
         backend badname\n server i INNER ssl verify required ca-file {ca} verifyhost wrong.test\n\
         backend byheader\n server i INNER ssl verify required ca-file {ca} sni req.hdr(x-target),lower\n",
        inner = inner.display(),
        ca = ca_file.display(),
        other = other_file.display(),
        ts = ts.addr
    );
    // The inner frontend's address is only known once bound: a fixed local port is avoided by
    // binding it first here.
    let probe = TcpListener::bind("127.0.0.1:0").expect("bind");
    let inner_addr = probe.local_addr().expect("addr");
    drop(probe);
    let cfg = cfg.replace("INNER", &inner_addr.to_string());
    let f = fulcrum("tls-origin", &cfg);
    assert!(eventually(Duration::from_secs(5), || TcpStream::connect(inner_addr).is_ok()));
    let (code, head, _) = crate::harness::get_with(f.addrs[0], "/", "");
    assert_eq!(code, 200, "{head}");
    assert_eq!(header(&head, "x-inner-sni"), Some("inner.test"), "the SNI sent");
    assert_eq!(
        header(&head, "x-bc"),
        Some("1/TLSv1.3/TLS_AES_128_GCM_SHA256"),
        "ssl_bc* facts: {head}"
    );
    let (code, _, _) = crate::harness::get_with(f.addrs[1], "/", "");
    assert_eq!(code, 503, "a server certificate from another CA is refused");
    let (code, _, _) = crate::harness::get_with(f.addrs[2], "/", "");
    assert_eq!(code, 503, "verifyhost checks the name");
    // Any expression for `sni` (here a header and a converter); the name is then verified.
    let (code, head, _) = crate::harness::get_with(f.addrs[3], "/", "X-Target: Inner.Test\r\n");
    assert_eq!((code, header(&head, "x-inner-sni")), (200, Some("inner.test")), "{head}");
    let (code, _, _) = crate::harness::get_with(f.addrs[3], "/", "X-Target: other.test\r\n");
    assert_eq!(code, 503, "the SNI sent is the name verified");
}

#[test]
fn configuration_errors_name_the_file_and_line() {
    let dir = scratch("tls-errors-certs");
    let ca = Ca::new("Test CA");
    let (bundle, _) = ca.leaf(&["a.test"], false, false);
    let (_, other_key) = ca.leaf(&["b.test"], false, false);
    let cert_only: String =
        bundle.split("-----BEGIN PRIVATE KEY-----").next().unwrap_or("").to_string();
    let mismatch = write(&dir, "mismatch.pem", &format!("{cert_only}{other_key}"));
    let expired = write(&dir, "expired.pem", &ca.leaf(&["old.test"], false, true).0);
    let garbage = write(
        &dir,
        "garbage.pem",
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    );
    let cfg = format!(
        "global\n ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
         frontend f1\n bind 127.0.0.1:1 ssl crt {dir}/missing.pem\n\
         frontend f2\n bind 127.0.0.1:2 ssl crt {mismatch}\n\
         frontend f3\n bind 127.0.0.1:3 ssl crt {garbage}\n\
         frontend f4\n bind 127.0.0.1:4 ssl crt {expired}\n\
         backend b\n server s 127.0.0.1:1 ssl verify required\n",
        dir = dir.display(),
        mismatch = mismatch.display(),
        garbage = garbage.display(),
        expired = expired.display()
    );
    let (code, _, err) = crate::harness::check("tls-errors", &cfg);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains(
            "check.cfg:9] : 'bind 127.0.0.1:1' in section 'frontend' : unable to stat SSL \
             certificate from file"
        ),
        "{err}"
    );
    assert!(
        err.contains("check.cfg:11]")
            && err.contains("inconsistencies between private key and certificate"),
        "{err}"
    );
    assert!(
        err.contains("check.cfg:13]")
            && err.contains("unable to load SSL certificate from PEM file"),
        "{err}"
    );
    assert!(err.contains("'server b/s'") && err.contains("no CA file specified"), "{err}");
    // Warnings: the configuration loads.
    let cfg = format!(
        "global\n ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256\n\
         defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
         frontend f4\n bind 127.0.0.1:4 ssl crt {expired} npn http/1.1\n",
        expired = expired.display()
    );
    let (code, _, err) = crate::harness::check("tls-warnings", &cfg);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("expired.pem' expired on"), "an expired certificate is a warning: {err}");
    assert!(
        err.contains("DHE-RSA-AES128-GCM-SHA256 not available"),
        "dropped ciphers are named: {err}"
    );
    assert!(err.contains("'npn' is ignored"), "{err}");
}

#[test]
#[cfg_attr(
    all(no_curl, no_openssl),
    ignore = "neither curl nor openssl is installed (see crates/fulcrum/build.rs)"
)]
fn curl_and_openssl_clients_talk_to_tls_frontends() {
    let curl = std::process::Command::new("curl").arg("--version").output().is_ok();
    let openssl = std::process::Command::new("openssl").arg("version").output().is_ok();
    assert!(curl || openssl, "curl or openssl runs");
    let dir = scratch("tls-clients-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let ts = testserver("http", "s1");
    let f = fulcrum("tls-clients", &terminating(&a, ts.addr));
    let port = f.addr().port();
    if curl {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "--cacert"])
            .arg(&ca_file)
            .args(["--resolve", &format!("a.test:{port}:127.0.0.1")])
            .arg(format!("https://a.test:{port}/?s=1000000"))
            .output()
            .expect("curl");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "200 1000000", "{out:?}");
    }
    if openssl {
        for (v, want) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
            let mut child = std::process::Command::new("openssl")
                .args([
                    "s_client",
                    "-connect",
                    &format!("127.0.0.1:{port}"),
                    "-servername",
                    "a.test",
                    v,
                    "-CAfile",
                ])
                .arg(&ca_file)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("openssl");
            drop(child.stdin.take());
            let out = child.wait_with_output().expect("wait");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(&format!("Protocol  : {want}"))
                    || text.contains(&format!(", {want},")),
                "{text}"
            );
            assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
        }
        // TLS 1.1 is refused.
        let out = std::process::Command::new("openssl")
            .args(["s_client", "-connect", &format!("127.0.0.1:{port}"), "-tls1_1"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("openssl");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Cipher is (NONE)") || text.contains("no peer certificate"),
            "TLS 1.1 refused: {text}"
        );
    }
}

/// Reads a PROXY header (v1 line or v2 block) the way a server would: everything the
/// connection sent within a short time.
/// A frontend terminating TLS with `pem` in front of `server`.
fn terminating(pem: &Path, server: SocketAddr) -> String {
    format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n default_backend be\n backend be\n server s1 {server}\n",
        pem.display()
    )
}

fn read_header(listener: &TcpListener) -> Vec<u8> {
    let (mut c, _) = listener.accept().expect("accept");
    c.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.windows(4).any(|w| w == b"\r\n\r\n") && got.starts_with(b"PROXY") {
            break;
        }
    }
    got
}

#[test]
fn proxy_protocol_in_and_out_as_haproxy_speaks_it() {
    let ts = testserver("http", "s1");
    // Fulcrum accepting v1 and v2 headers; a bad header closes the connection with a log line.
    let cfg = format!(
        "defaults\n mode http\n log stderr format raw local0\n option httplog\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} accept-proxy\n http-response set-header X-Src %[src]:%[src_port]\n\
         http-response set-header X-Dst %[dst]:%[dst_port]\n\
         http-response set-header X-Authority %[fc_pp_authority]\n\
         http-response set-header X-Uid %[fc_pp_unique_id]\n\
         http-response set-header X-Tlv %[fc_pp_tlv(0xE0)]\n default_backend be\n\
         frontend rule\n bind {{fe1}}\n tcp-request connection expect-proxy layer4 if {{ src 127.0.0.1 }}\n\
         http-response set-header X-Src %[src]\n default_backend be\n\
         backend be\n server s1 {}\n",
        ts.addr
    );
    let f = fulcrum("pp-in", &cfg);
    let mut s = TcpStream::connect(f.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("t");
    s.write_all(b"PROXY TCP4 192.0.2.1 198.51.100.2 5000 443\r\n").expect("w");
    let (code, head) = get(&mut s, "/");
    assert_eq!(code, 200, "{head}");
    assert_eq!(header(&head, "x-src"), Some("192.0.2.1:5000"));
    assert_eq!(header(&head, "x-dst"), Some("198.51.100.2:443"));
    // `tcp-request connection expect-proxy layer4` on a plain bind.
    let mut s = TcpStream::connect(f.addrs[1]).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("t");
    s.write_all(b"PROXY TCP6 2001:db8::1 2001:db8::2 4000 80\r\n").expect("w");
    let (code, head) = get(&mut s, "/");
    assert_eq!((code, header(&head, "x-src")), (200, Some("2001:db8::1")), "{head}");
    // v2 with TLVs: authority, unique id, and a custom type, read by fc_pp_* (and kept
    // while the connection idles between requests).
    let mut v2 = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
    let mut body = vec![192, 0, 2, 9, 198, 51, 100, 7, 0x13, 0x88, 0x01, 0xbb];
    for (t, v) in [(0x02u8, &b"api.test"[..]), (0x05, b"req-42"), (0xE0, b"custom")] {
        body.push(t);
        body.extend_from_slice(&(v.len() as u16).to_be_bytes());
        body.extend_from_slice(v);
    }
    v2.extend_from_slice(&(body.len() as u16).to_be_bytes());
    v2.extend_from_slice(&body);
    let mut s = TcpStream::connect(f.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("t");
    s.write_all(&v2).expect("w");
    for _ in 0..2 {
        let (code, head) = get(&mut s, "/");
        assert_eq!(code, 200, "{head}");
        assert_eq!(header(&head, "x-src"), Some("192.0.2.9:5000"));
        assert_eq!(header(&head, "x-dst"), Some("198.51.100.7:443"));
        assert_eq!(header(&head, "x-authority"), Some("api.test"));
        assert_eq!(header(&head, "x-uid"), Some("req-42"));
        assert_eq!(header(&head, "x-tlv"), Some("custom"));
    }
    let mut s = TcpStream::connect(f.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("t");
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").expect("w");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a connection without a PROXY header is closed without an answer");
    assert!(
        eventually(Duration::from_secs(5), || f
            .proc
            .log_text()
            .contains("fe/1: Received something which does not look like a PROXY protocol header")),
        "{}",
        f.proc.log_text()
    );
    // HAProxy sending v2 (and v1) to Fulcrum: the client's address comes through.
    if let Some(_hap) = haproxy_bin() {
        for opt in ["send-proxy-v2", "send-proxy"] {
            let hcfg = format!(
                "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
                 frontend fe\n bind {{fe0}}\n default_backend be\n backend be\n server f {} {opt}\n",
                f.addr()
            );
            let (_p, addrs, _) =
                start_proxy("haproxy", &format!("pp-hap-{opt}"), &hcfg).expect("haproxy");
            let mut got = None;
            eventually(Duration::from_secs(5), || {
                let (code, head, _) = crate::harness::get_with(addrs[0], "/", "");
                got = Some((code, head));
                code == 200
            });
            let (code, head) = got.expect("answer");
            assert_eq!(code, 200, "{opt}: {head}");
            assert!(
                header(&head, "x-src").is_some_and(|v| v.starts_with("127.0.0.1:")),
                "{opt}: {head}"
            );
        }
    }
    // Fulcrum sending v1 and v2 to a server: the bytes HAProxy sends for the same settings.
    let send = |which: &str, opt: &str| -> Vec<u8> {
        let sink = TcpListener::bind("127.0.0.1:0").expect("bind");
        let cfg = format!(
            "defaults\n mode tcp\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}}\n default_backend be\n backend be\n server s {} {opt}\n",
            sink.local_addr().expect("addr")
        );
        let (_p, addrs, _) =
            start_proxy(which, &format!("pp-out-{which}-{}", opt.replace(' ', "_")), &cfg)
                .expect("proxy");
        let mut c = None;
        eventually(Duration::from_secs(5), || {
            c = TcpStream::connect(addrs[0]).ok();
            c.is_some()
        });
        let mut c = c.expect("client");
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("w");
        let got = read_header(&sink);
        // Addresses and ports differ between runs: keep the header's shape.
        let client_port = c.local_addr().expect("addr").port();
        let fe_port = addrs[0].port();
        let text = String::from_utf8_lossy(&got)
            .replace(&client_port.to_string(), "CPORT")
            .replace(&fe_port.to_string(), "FPORT");
        let mut bytes = text.into_bytes();
        if got.starts_with(b"\r\n") {
            bytes = got.clone();
            // v2: ports are the last four bytes of the address block (IPv4: offset 16+8).
            bytes[24..28].fill(0);
        }
        bytes
    };
    let v1 = send("fulcrum", "send-proxy");
    assert!(
        v1.starts_with(b"PROXY TCP4 127.0.0.1 127.0.0.1 CPORT FPORT\r\nGET / HTTP/1.1"),
        "{}",
        String::from_utf8_lossy(&v1)
    );
    if haproxy_bin().is_some() {
        for opt in
            ["send-proxy", "send-proxy-v2", "send-proxy-v2 proxy-v2-options crc32c,unique-id"]
        {
            let ours = send("fulcrum", opt);
            let theirs = send("haproxy", opt);
            if opt.contains("crc32c") {
                // The checksum covers the ports: compare lengths and TLV types only.
                assert_eq!(ours.len(), theirs.len(), "{opt}");
            } else {
                assert_eq!(
                    ours, theirs,
                    "{opt}: Fulcrum (left) and HAProxy 2.6 (right) send the same header"
                );
            }
        }
    }
}

#[test]
fn tls_passthrough_routes_by_the_client_hello_name() {
    let dir = scratch("tls-pass-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let b = write(&dir, "b.pem", &ca.leaf(&["b.test"], false, false).0);
    let ts = testserver("http", "s1");
    // Two TLS services behind a passthrough frontend that reads the ClientHello's name.
    let svc = |name: &str, pem: &Path| {
        format!(
            "frontend {name}\n mode http\n bind INNER_{name} ssl crt {}\n\
             http-response set-header X-Service {name}\n default_backend app\n",
            pem.display()
        )
    };
    let mut cfg = format!(
        "defaults\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend pass\n mode tcp\n bind {{fe0}}\n tcp-request inspect-delay 5s\n\
         tcp-request content reject if !{{ req.ssl_hello_type 1 }}\n\
         use_backend to_a if {{ req.ssl_sni -i a.test }}\n\
         use_backend to_b if {{ req_ssl_sni -m end .b.test }} || {{ req_ssl_sni b.test }}\n\
         backend to_a\n mode tcp\n server a INNER_svc_a\n\
         backend to_b\n mode tcp\n server b INNER_svc_b\n\
         frontend pass2\n mode tcp\n bind {{fe1}}\n tcp-request inspect-delay 5s\n\
         tcp-request content accept if {{ req.ssl_hello_type 1 }}\n default_backend by_name\n\
         backend by_name\n mode tcp\n\
         use-server a if {{ req.ssl_sni -i a.test }}\n server a INNER_svc_a weight 0\n\
         use-server b if {{ req.ssl_sni -i b.test }}\n server b INNER_svc_b weight 0\n\
         server rest INNER_svc_a\n\
         backend app\n mode http\n server s1 {}\n",
        ts.addr
    );
    cfg.push_str(&svc("svc_a", &a));
    cfg.push_str(&svc("svc_b", &b));
    for name in ["svc_a", "svc_b"] {
        let probe = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = probe.local_addr().expect("addr").to_string();
        drop(probe);
        cfg = cfg.replace(&format!("INNER_{name}"), &addr);
    }
    let f = fulcrum("tls-pass", &cfg);
    let client = client_config(&ca, &[]);
    for (sni, service) in [("a.test", "svc_a"), ("b.test", "svc_b")] {
        let mut s = None;
        eventually(Duration::from_secs(5), || {
            s = tls_connect(f.addr(), sni, Arc::clone(&client)).ok();
            s.is_some()
        });
        let mut s = s.expect("handshake through the passthrough");
        assert_eq!(peer_cn(&s), sni, "the service's own certificate");
        let (code, head) = get(&mut s, "/");
        assert_eq!((code, header(&head, "x-service")), (200, Some(service)), "{head}");
    }
    // The same by `use-server` (HAProxy's example): the servers of weight 0 take only the
    // names their rules name.
    for (sni, service) in [("a.test", "svc_a"), ("b.test", "svc_b")] {
        let mut s = None;
        eventually(Duration::from_secs(5), || {
            s = tls_connect(f.addrs[1], sni, Arc::clone(&client)).ok();
            s.is_some()
        });
        let mut s = s.expect("handshake through use-server");
        let (code, head) = get(&mut s, "/");
        assert_eq!((code, header(&head, "x-service")), (200, Some(service)), "{head}");
    }
    // Not a ClientHello: refused by the content rule once the bytes settle.
    let mut c = TcpStream::connect(f.addr()).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).expect("t");
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").expect("w");
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    assert!(rest.is_empty(), "clear text is rejected");
    // An unknown name: no backend (no default): closed.
    assert!(tls_connect(f.addr(), "c.test", client).is_err());
}

#[test]
fn shared_ticket_keys_resume_across_processes_and_checks_run_over_tls() {
    let dir = scratch("tls-keys-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    // Three keys of 48 bytes, base64, as `openssl rand 48 | openssl base64 -A` writes them.
    let keys = write(
        &dir,
        "tickets.key",
        "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB\n\
         AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC\n\
         AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMD\n",
    );
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {} tls-ticket-keys {}\n default_backend be\n\
         backend be\n server s1 {}\n",
        a.display(),
        keys.display(),
        ts.addr
    );
    let one = fulcrum("tls-keys-1", &cfg);
    let two = fulcrum("tls-keys-2", &cfg);
    let client = client_config(&ca, &[]);
    let mut s = tls_connect(one.addr(), "a.test", Arc::clone(&client)).expect("first process");
    assert_eq!(get(&mut s, "/").0, 200);
    drop(s);
    let s = tls_connect(two.addr(), "a.test", client).expect("second process");
    assert_eq!(
        s.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed),
        "a ticket from one process resumes on another with the same keys"
    );
    // A server checked over TLS (`check-ssl` implied by `ssl`): UP; a clear-text port with
    // `check-ssl` fails its handshake: DOWN, with HAProxy's layer 6 status.
    let cfg = format!(
        "defaults\n mode http\n timeout connect 2s\n timeout client 5s\n timeout server 5s\n\
         timeout check 2s\n option log-health-checks\n\
         frontend fe\n bind {{fe0}} ssl crt {a}\n default_backend app\n\
         backend app\n server s1 {ts}\n\
         backend checked\n server good {tls} ssl verify none check inter 200ms\n\
         server bad {ts} check-ssl verify none check inter 200ms rise 1 fall 1\n",
        a = a.display(),
        ts = ts.addr,
        tls = one.addr()
    );
    let f = fulcrum("tls-checks", &cfg);
    assert!(
        eventually(Duration::from_secs(5), || {
            let log = f.proc.log_text();
            log.contains("Server checked/bad is DOWN") && log.contains("Layer6")
        }),
        "{}",
        f.proc.log_text()
    );
    assert!(!f.proc.log_text().contains("Server checked/good is DOWN"), "{}", f.proc.log_text());
    assert!(
        f.proc.log_text().contains("server checked/good succeeded, reason: Layer6 check passed"),
        "{}",
        f.proc.log_text()
    );
}

#[test]
fn httpslog_lines_carry_the_tls_fields_as_haproxy_writes_them() {
    let dir = scratch("tls-log-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n log stderr format raw local0\n option httpslog\n\
         timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n bind {{fe1}}\n default_backend be\n\
         backend be\n server s1 {}\n",
        a.display(),
        ts.addr
    );
    let f = fulcrum("tls-log", &cfg);
    let mut s = tls_connect(f.addr(), "a.test", client_config(&ca, &[])).expect("handshake");
    assert_eq!(get(&mut s, "/tls").0, 200);
    drop(s);
    assert_eq!(crate::harness::get_with(f.addrs[1], "/clear", "").0, 200);
    // HAProxy 2.6's httpslog: `fe~` for a TLS connection, then
    // fc_err/ssl_fc_err,hex/ssl_c_err/ssl_c_ca_err/ssl_fc_is_resumed and sni/version/cipher.
    let tls_line =
        |log: &str| log.lines().find(|l| l.contains("\"GET /tls HTTP/1.1\"")).map(str::to_string);
    assert!(eventually(Duration::from_secs(5), || tls_line(&f.proc.log_text()).is_some()));
    let line = tls_line(&f.proc.log_text()).unwrap_or_default();
    assert!(line.contains(" fe~ be/s1 "), "{line}");
    assert!(
        line.ends_with(
            "\"GET /tls HTTP/1.1\" 0/0000000000000000/0/0/0 a.test/TLSv1.3/TLS_AES_128_GCM_SHA256"
        ) || line.ends_with(
            "\"GET /tls HTTP/1.1\" 0/0000000000000000/0/0/0 a.test/TLSv1.3/TLS_AES_256_GCM_SHA384"
        ),
        "{line}"
    );
    assert!(
        eventually(Duration::from_secs(5), || f
            .proc
            .log_text()
            .lines()
            .any(|l| l.contains(" fe be/s1 ")
                && l.ends_with("\"GET /clear HTTP/1.1\" 0/-/-/-/0 -/-/-"))),
        "{}",
        f.proc.log_text()
    );
}

#[test]
fn crt_list_lines_bring_their_own_options_and_filters() {
    let dir = scratch("tls-crtlist-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let b = write(&dir, "b.pem", &ca.leaf(&["b.test", "*.b.test"], false, false).0);
    let c = write(&dir, "c.pem", &ca.leaf(&["c.test", "alias.test"], false, false).0);
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    // a: the bind's options (ALPN http/1.1); b: its own ALPN and client certificates required;
    // c (c.test, alias.test): served only as "alias.test" (a filter replaces the names).
    let list = write(
        &dir,
        "list.txt",
        &format!(
            "# comment\n{}\n{} [alpn x-b verify required ca-file {}] b.test *.b.test\n{} alias.test\n",
            a.display(),
            b.display(),
            ca_file.display(),
            c.display()
        ),
    );
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode tcp\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt-list {} alpn http/1.1\n default_backend echo\n\
         backend echo\n server e {}\n",
        list.display(),
        ts.addr
    );
    let f = fulcrum("tls-crtlist", &cfg);
    let alpn = client_config(&ca, &["x-b", "http/1.1"]);
    let s = tls_connect(f.addr(), "a.test", Arc::clone(&alpn)).expect("a.test");
    assert_eq!((peer_cn(&s).as_str(), s.conn.alpn_protocol()), ("a.test", Some(&b"http/1.1"[..])));
    let s = tls_connect(f.addr(), "alias.test", Arc::clone(&alpn)).expect("alias");
    assert_eq!(peer_cn(&s), "c.test", "the filter's name");
    assert!(
        tls_connect(f.addr(), "c.test", Arc::clone(&alpn)).is_err(),
        "a name of the certificate left out by the line's filter gets the default certificate"
    );
    // b.test: its own ALPN, and no response without a client certificate.
    let mut s = tls_connect(f.addr(), "x.b.test", alpn).expect("b: the handshake's first part");
    assert_eq!((peer_cn(&s).as_str(), s.conn.alpn_protocol()), ("b.test", Some(&b"x-b"[..])));
    let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: b\r\n\r\n");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(got.is_empty(), "verify required on the b.test line: refused without a certificate");
}

/// Accepts the server's certificate and keeps the OCSP response it stapled.
#[derive(Debug)]
struct KeepOcsp(std::sync::Mutex<Vec<u8>>, Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for KeepOcsp {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        ocsp: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.0.lock().expect("lock") = ocsp.to_vec();
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.1.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.1.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.1.signature_verification_algorithms.supported_schemes()
    }
}

/// An OCSP response for `leaf` (a PEM file) signed by the CA, made by `openssl ocsp` as an
/// administrator makes one; `None` without openssl.
fn ocsp_response(dir: &Path, ca: &Path, ca_key: &Path, leaf: &Path) -> Option<Vec<u8>> {
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    let leaf = leaf.to_str()?;
    let serial = run(&["x509", "-in", leaf, "-noout", "-serial"])?;
    let serial =
        String::from_utf8_lossy(&serial.stdout).trim().trim_start_matches("serial=").to_string();
    std::fs::write(
        dir.join("index.txt"),
        format!("V\t391231235959Z\t\t{serial}\tunknown\t/CN=x\n"),
    )
    .ok()?;
    run(&["ocsp", "-issuer", ca.to_str()?, "-cert", leaf, "-no_nonce", "-reqout", "req.der"])?;
    let (ca, key) = (ca.to_str()?, ca_key.to_str()?);
    run(&[
        "ocsp",
        "-index",
        "index.txt",
        "-rsigner",
        ca,
        "-rkey",
        key,
        "-CA",
        ca,
        "-reqin",
        "req.der",
        "-respout",
        "resp.der",
        "-ndays",
        "7",
    ])?;
    std::fs::read(dir.join("resp.der")).ok()
}

#[test]
#[cfg_attr(no_openssl, ignore = "openssl is not installed (see crates/fulcrum/build.rs)")]
fn an_ocsp_file_beside_the_certificate_is_checked_then_stapled() {
    let dir = scratch("tls-ocsp-certs");
    let key = KeyPair::generate().expect("key");
    let ca_key = write(&dir, "ca.key", &key.serialize_pem());
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, "OCSP CA");
    let ca = Ca { issuer: CertifiedIssuer::self_signed(p, key).expect("ca") };
    let ca_pem = write(&dir, "ca.pem", &ca.pem());
    // a.test: its issuer in the chain; b.test: in `b.pem.issuer`; c.test: a's response.
    let a = write(&dir, "a.pem", &format!("{}{}", ca.leaf(&["a.test"], false, false).0, ca.pem()));
    let b = write(&dir, "b.pem", &ca.leaf(&["b.test"], false, false).0);
    write(&dir, "b.pem.issuer", &ca.pem());
    let c = write(&dir, "c.pem", &format!("{}{}", ca.leaf(&["c.test"], false, false).0, ca.pem()));
    let resp_a = ocsp_response(&dir, &ca_pem, &ca_key, &a).expect("a's response (openssl)");
    let resp_b = ocsp_response(&dir, &ca_pem, &ca_key, &b).expect("b's response");
    std::fs::write(dir.join("a.pem.ocsp"), &resp_a).expect("ocsp");
    std::fs::write(dir.join("b.pem.ocsp"), &resp_b).expect("ocsp");
    std::fs::write(dir.join("c.pem.ocsp"), &resp_a).expect("ocsp");
    let ts = testserver("http", "s1");
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {} crt {} crt {}\n default_backend be\n\
         backend be\n server s1 {}\n",
        a.display(),
        b.display(),
        c.display(),
        ts.addr
    );
    let (code, _, err) =
        crate::harness::check("tls-ocsp-check", &cfg.replace("{fe0}", "127.0.0.1:1"));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("c.pem.ocsp': OCSP single response: Certificate ID does not match"),
        "a response for another certificate is not stapled: {err}"
    );
    let f = fulcrum("tls-ocsp", &cfg);
    let stapled = |name: &str| {
        let keep = Arc::new(KeepOcsp(std::sync::Mutex::new(Vec::new()), provider()));
        let c = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("v")
            .dangerous()
            .with_custom_certificate_verifier(
                Arc::clone(&keep) as Arc<dyn rustls::client::danger::ServerCertVerifier>
            )
            .with_no_client_auth();
        tls_connect(f.addr(), name, Arc::new(c)).expect("handshake");
        let got = keep.0.lock().expect("lock").clone();
        got
    };
    assert_eq!(stapled("a.test"), resp_a, "issuer from the chain");
    assert_eq!(stapled("b.test"), resp_b, "issuer from b.pem.issuer");
    assert!(stapled("c.test").is_empty(), "not stapled");
    // Without an issuer the certificate id cannot be computed: an error, as in HAProxy.
    let lone = write(&dir, "lone.pem", &ca.leaf(&["lone.test"], false, false).0);
    std::fs::write(dir.join("lone.pem.ocsp"), &resp_a).expect("ocsp");
    let cfg = format!(
        "defaults\n mode http\n timeout client 1s\n frontend fe\n bind 127.0.0.1:1 ssl crt {}\n",
        lone.display()
    );
    let (code, _, err) = crate::harness::check("tls-ocsp-lone", &cfg);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("lone.pem.ocsp' is present and activates OCSP"), "{err}");
}

#[test]
#[cfg_attr(no_openssl, ignore = "openssl is not installed (see crates/fulcrum/build.rs)")]
fn an_x509_v1_certificate_made_by_openssl_is_served() {
    // `openssl x509 -req` without extensions signs version 1 certificates; HAProxy serves them.
    let dir = scratch("tls-v1-certs");
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    let made = run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "k.pem",
        "-out",
        "r.csr",
        "-subj",
        "/CN=v1.test",
    ])
    .and_then(|_| {
        run(&["x509", "-req", "-in", "r.csr", "-signkey", "k.pem", "-out", "c.pem", "-days", "5"])
    });
    assert!(made.is_some(), "openssl makes a version 1 certificate");
    let text = run(&["x509", "-in", "c.pem", "-noout", "-text"]).expect("text");
    assert!(String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"));
    let bundle = format!(
        "{}{}",
        std::fs::read_to_string(dir.join("c.pem")).expect("cert"),
        std::fs::read_to_string(dir.join("k.pem")).expect("key")
    );
    let pem = write(&dir, "v1.pem", &bundle);
    let ts = testserver("http", "s1");
    let f = fulcrum("tls-v1", &terminating(&pem, ts.addr));
    let out = std::process::Command::new("openssl")
        .args(["s_client", "-connect", &f.addr().to_string(), "-servername", "v1.test"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("s_client");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("CN = v1.test"), "{text}");
}

/// What a client sees of a TLS frontend, for comparing Fulcrum with HAProxy 2.6.
#[derive(Debug, PartialEq)]
struct Seen {
    strict_unknown_refused: bool,
    cn_for_a: String,
    no_cert_refused: bool,
    with_cert: (u16, Vec<Option<String>>),
    optional_used: Option<String>,
    tls12: Vec<Option<String>>,
    resumed: bool,
}

fn observe(which: &str, ca: &Ca, dir: &Path, backend: SocketAddr) -> Option<Seen> {
    let a = dir.join("a.pem");
    let ca_file = dir.join("ca.pem");
    let headers = "http-response set-header X-Cn %[ssl_c_s_dn(CN)]\n\
         http-response set-header X-Dn %[ssl_c_s_dn]\n http-response set-header X-Idn %[ssl_c_i_dn]\n\
         http-response set-header X-Serial %[ssl_c_serial,hex]\n http-response set-header X-Sha1 %[ssl_c_sha1,hex]\n\
         http-response set-header X-Na %[ssl_c_notafter]\n http-response set-header X-Ver %[ssl_c_version]\n\
         http-response set-header X-Used %[ssl_c_used]\n http-response set-header X-Proto %[ssl_fc_protocol]\n\
         http-response set-header X-Cipher %[ssl_fc_cipher]\n http-response set-header X-Bits %[ssl_fc_use_keysize]\n\
         http-response set-header X-Sni %[ssl_fc_sni]\n http-response set-header X-Fdn %[ssl_f_s_dn]\n\
         http-response set-header X-Fidn %[ssl_f_i_dn(CN)]\n http-response set-header X-Fver %[ssl_f_version]\n";
    let cfg = format!(
        "global\n tune.ssl.default-dh-param 2048\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend strict\n bind {{fe0}} ssl crt {a} strict-sni\n {headers} default_backend be\n\
         frontend req\n bind {{fe1}} ssl crt {a} verify required ca-file {ca}\n {headers} default_backend be\n\
         frontend opt\n bind {{fe2}} ssl crt {a} verify optional ca-file {ca}\n {headers} default_backend be\n\
         backend be\n server s1 {backend}\n",
        a = a.display(),
        ca = ca_file.display(),
    );
    let (_p, addrs, _) = start_proxy(which, &format!("tls-both-{which}"), &cfg)?;
    let plain = client_config(ca, &[]);
    assert!(eventually(Duration::from_secs(5), || tls_connect(
        addrs[0],
        "a.test",
        Arc::clone(&plain)
    )
    .is_ok()));
    let strict_unknown_refused = tls_connect(addrs[0], "zzz.test", Arc::clone(&plain)).is_err();
    let cn_for_a = peer_cn(&tls_connect(addrs[0], "a.test", Arc::clone(&plain)).expect("a"));
    let no_cert_refused = tls_connect(addrs[1], "a.test", Arc::clone(&plain))
        .map(|mut s| get(&mut s, "/").0)
        .unwrap_or(0)
        == 0;
    let (bundle, key) = ca.leaf(&["alice"], false, false);
    let chain: Vec<CertificateDer<'static>> =
        rustls::pki_types::pem::PemObject::pem_slice_iter(bundle.as_bytes())
            .collect::<Result<_, _>>()
            .expect("chain");
    let key: PrivateKeyDer<'static> =
        rustls::pki_types::pem::PemObject::from_pem_slice(key.as_bytes()).expect("key");
    let mtls = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("v")
        .with_root_certificates(roots(ca))
        .with_client_auth_cert(chain, key)
        .expect("client cert");
    let mut s = tls_connect(addrs[1], "a.test", Arc::new(mtls)).expect("mtls");
    let (code, head) = get(&mut s, "/");
    let names = [
        "x-cn", "x-dn", "x-idn", "x-used", "x-ver", "x-proto", "x-sni", "x-na", "x-fdn", "x-fidn",
        "x-fver",
    ];
    let with_cert = (code, names.iter().map(|n| header(&head, n).map(str::to_string)).collect());
    // The certificate's serial and SHA-1 differ per run: only their shape is checked. Its end
    // date (rcgen's default, year 4096) gives no `ssl_c_notafter` value in HAProxy.
    let serial_ok = header(&head, "x-serial")
        .is_some_and(|v| v.len() >= 2 && v.chars().all(|c| c.is_ascii_hexdigit()));
    let sha1_ok = header(&head, "x-sha1").is_some_and(|v| v.len() == 40);
    assert!(serial_ok && sha1_ok, "{which}: {head}");
    let mut s = tls_connect(addrs[2], "a.test", Arc::clone(&plain)).expect("optional");
    let optional_used = header(&get(&mut s, "/").1, "x-used").map(str::to_string);
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    p.cipher_suites
        .retain(|cs| format!("{:?}", cs.suite()) == "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256");
    let c12 = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(p))
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("v")
            .with_root_certificates(roots(ca))
            .with_no_client_auth(),
    );
    let mut s = tls_connect(addrs[2], "a.test", Arc::clone(&c12)).expect("tls12");
    let head = get(&mut s, "/").1;
    let tls12 = ["x-proto", "x-cipher", "x-bits"]
        .iter()
        .map(|n| header(&head, n).map(str::to_string))
        .collect();
    drop(s);
    let resumed = tls_connect(addrs[2], "a.test", c12).expect("again").conn.handshake_kind()
        == Some(rustls::HandshakeKind::Resumed);
    Some(Seen {
        strict_unknown_refused,
        cn_for_a,
        no_cert_refused,
        with_cert,
        optional_used,
        tls12,
        resumed,
    })
}

#[test]
fn tls_frontends_behave_as_haproxy_2_6_does() {
    let dir = scratch("tls-both-certs");
    let ca = Ca::new("Test CA");
    write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    write(&dir, "ca.pem", &ca.pem());
    let ts = testserver("http", "s1");
    let ours = observe("fulcrum", &ca, &dir, ts.addr).expect("fulcrum");
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        ours,
        Seen {
            strict_unknown_refused: true,
            cn_for_a: "a.test".into(),
            no_cert_refused: true,
            with_cert: (
                200,
                vec![
                    s("alice"),
                    s("/CN=alice/O=Fulcrum Tests"),
                    s("/CN=Test CA"),
                    s("1"),
                    s("3"),
                    s("TLSv1.3"),
                    s("a.test"),
                    s(""),
                    s("/CN=a.test/O=Fulcrum Tests"),
                    s("Test CA"),
                    s("3")
                ]
            ),
            optional_used: s("0"),
            tls12: vec![s("TLSv1.2"), s("ECDHE-ECDSA-AES128-GCM-SHA256"), s("128")],
            resumed: true,
        }
    );
    if let Some(theirs) = observe("haproxy", &ca, &dir, ts.addr) {
        assert_eq!(ours, theirs, "Fulcrum (left) and HAProxy 2.6 (right)");
    }
}

/// The field `name` of `show stat`'s row `px`/`sv`.
fn stat_field(csv: &str, px: &str, sv: &str, name: &str) -> Option<String> {
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
    let at = head.iter().position(|h| *h == name)?;
    let row = lines.map(|l| l.split(',').collect::<Vec<_>>()).find(|r| r[0] == px && r[1] == sv)?;
    row.get(at).map(|v| v.to_string())
}

#[test]
fn tls_counters_count_handshakes_as_haproxy_2_6_does() {
    // Two TLS 1.3 connections of one client (the second resumes with a ticket) and a clear
    // text request to the TLS port (a failed handshake): the frontend's TLS module counters
    // and `show info`'s, as HAProxy 2.6 counts them.
    let dir = scratch("tls-counters-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let cfg = format!(
        "global\n stats socket {{dir}}/api.sock level admin\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n http-request return status 200\n",
        a.display()
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, pdir)) = start_proxy(which, "tls-counters", &cfg) else { continue };
        let client = client_config(&ca, &[]);
        for n in 0..2 {
            let mut s = tls_connect(addrs[0], "a.test", Arc::clone(&client)).expect("tls");
            assert_eq!(get(&mut s, "/").0, 200, "{which}");
            let resumed = s.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            assert_eq!(resumed, n == 1, "{which}: the second connection resumes");
        }
        let mut plain = TcpStream::connect(addrs[0]).expect("connect");
        plain.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        plain.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").expect("write");
        let _ = plain.read(&mut [0u8; 64]);
        let sock = pdir.join("api.sock");
        let fields = ["ssl_sess", "ssl_reused_sess", "ssl_failed_handshake"];
        let counted = eventually(Duration::from_secs(5), || {
            let csv = crate::harness::api(&sock, "show stat");
            stat_field(&csv, "fe", "FRONTEND", "ssl_failed_handshake").as_deref() == Some("1")
        });
        assert!(counted, "{which}: the failed handshake is counted");
        let csv = crate::harness::api(&sock, "show stat");
        let module: Vec<String> = fields
            .iter()
            .map(|f| stat_field(&csv, "fe", "FRONTEND", f).unwrap_or_default())
            .collect();
        let info_of = |info: &str, k: &str| {
            info.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix(": ")).map(str::to_string)
        };
        // The clients closed: a loaded machine may see the proxy count the last close a moment
        // later (bounded wait).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let process = loop {
            let info = crate::harness::api(&sock, "show info");
            let p = (info_of(&info, "CumSslConns"), info_of(&info, "CurrSslConns"));
            if p.1.as_deref() == Some("0") || std::time::Instant::now() > deadline {
                break p;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // (`ssl_sess` counts new sessions only, as HAProxy's.)
        assert_eq!(module, ["1", "1", "1"], "{which}: {csv}");
        seen.push((which, module, process));
    }
    assert_eq!(seen[0].2, (Some("3".into()), Some("0".into())), "{seen:?}");
    if let Some(h) = seen.get(1) {
        assert_eq!(seen[0].2, h.2, "the process counters as HAProxy's");
    }
}
