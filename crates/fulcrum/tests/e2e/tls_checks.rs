//! Health checks over TLS as HAProxy runs them, against a TLS server made here that records
//! each handshake's SNI and ALPN: `tcp-check connect ssl sni .. alpn ..`, `check-ssl` on a
//! server whose traffic stays clear (checks elsewhere, `addr <ip>:<port>`), and a mode tcp
//! frontend without a backend closing with a FIN. Each scenario runs under Fulcrum and, when
//! installed, HAProxy 2.6, with the same expectations.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::harness::{eventually, scratch, start_proxy, testserver};
use crate::tls::{provider, write, Ca};

/// What a handshake offered: SNI and ALPN protocols.
type Hello = (Option<String>, Vec<String>);

#[derive(Debug)]
struct Recorder {
    key: Arc<CertifiedKey>,
    seen: Arc<Mutex<Vec<Hello>>>,
}

impl ResolvesServerCert for Recorder {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let alpn = hello
            .alpn()
            .map(|l| l.map(|p| String::from_utf8_lossy(p).into_owned()).collect())
            .unwrap_or_default();
        self.seen.lock().expect("lock").push((hello.server_name().map(str::to_string), alpn));
        Some(Arc::clone(&self.key))
    }
}

/// A TLS server on 127.0.0.1 that completes handshakes and records them; it lives as long as
/// the test process (its thread only accepts and handshakes).
fn tls_server(ca: &Ca) -> (SocketAddr, Arc<Mutex<Vec<Hello>>>) {
    use rustls::pki_types::pem::PemObject;
    let (pem, _) = ca.leaf(&["server.test"], false, false);
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pem.as_bytes()).map(|c| c.expect("cert")).collect();
    let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).expect("key");
    let p = provider();
    let signer = p.key_provider.load_private_key(key).expect("signer");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resolver = Recorder { key: Arc::new(CertifiedKey::new(chain, signer)), seen: seen.clone() };
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(p)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver)),
    );
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                let mut t = rustls::StreamOwned::new(conn, s);
                while t.conn.is_handshaking() {
                    if t.conn.complete_io(&mut t.sock).is_err() {
                        return;
                    }
                }
                let mut sink = [0u8; 512];
                while matches!(t.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    (addr, seen)
}

#[test]
fn tls_checks_send_the_steps_sni_and_alpn_and_check_ssl_leaves_traffic_clear() {
    let ca = Ca::new("Test CA");
    let (tls, seen) = tls_server(&ca);
    let ts = testserver("http", "clear");
    let dir = scratch("tls-checks-certs");
    let crt = write(&dir, "client.pem", &ca.leaf(&["client.test"], false, false).0);
    for which in ["fulcrum", "haproxy"] {
        seen.lock().expect("lock").clear();
        let cfg = format!(
            "defaults\n mode http\n timeout connect 2s\n timeout client 5s\n timeout server 5s\n\
             option log-health-checks\n\
             backend by_step\n option tcp-check\n\
             tcp-check connect ssl sni step.test alpn x-one,x-two\n\
             server s {tls} check inter 200ms rise 1 fall 1 verify none\n\
             backend by_default\n option tcp-check\n tcp-check connect default\n\
             server s {tls} check check-ssl check-sni default.test inter 200ms rise 1 fall 1 verify none\n\
             frontend fe\n bind {{fe0}}\n default_backend split\n\
             backend split\n\
             server s {ts} check check-ssl check-sni split.test addr 127.0.0.1:{port} crt {crt} \
             inter 200ms rise 1 fall 1 verify none\n",
            ts = ts.addr,
            port = tls.port(),
            crt = crt.display(),
        );
        let Some((p, addrs, _)) = start_proxy(which, "tls-checks", &cfg) else { continue };
        let all_up = || {
            let log = p.log_text();
            ["by_step", "by_default", "split"].iter().all(|b| {
                log.contains(&format!(
                    "Health check for server {b}/s succeeded, reason: Layer6 check passed"
                ))
            })
        };
        assert!(eventually(Duration::from_secs(5), all_up), "{which}: {}", p.log_text());
        let hellos = seen.lock().expect("lock").clone();
        let has = |sni: &str, alpn: &[&str]| {
            hellos.iter().any(|(s, a)| s.as_deref() == Some(sni) && a == alpn)
        };
        assert!(has("step.test", &["x-one", "x-two"]), "{which}: {hellos:?}");
        assert!(has("default.test", &[]), "{which}: {hellos:?}");
        assert!(has("split.test", &[]), "{which}: {hellos:?}");
        // The server's traffic is clear text: `check-ssl` is for its checks only.
        let (code, _, body) = crate::harness::get_with(addrs[0], "/", "");
        assert_eq!(code, 200, "{which}: {body}");
    }
}

#[test]
fn a_tls_step_that_fails_its_handshake_is_reported_at_its_step() {
    for which in ["fulcrum", "haproxy"] {
        // A clear-text server: the handshake gets an HTTP answer or a close.
        let ts = testserver("http", "clear");
        let cfg = format!(
            "defaults\n mode tcp\n timeout connect 2s\n timeout client 5s\n timeout server 5s\n\
             timeout check 2s\n option log-health-checks\n\
             backend bad\n option tcp-check\n tcp-check connect ssl sni bad.test\n\
             server s {} check inter 200ms rise 1 fall 1 verify none\n\
             frontend unused\n bind {{fe0}}\n default_backend bad\n",
            ts.addr
        );
        let Some((p, _, _)) = start_proxy(which, "tls-check-bad", &cfg) else { continue };
        let failed = || {
            let log = p.log_text();
            log.contains("Health check for server bad/s failed, reason: Layer6 invalid response")
                && log.contains("at step 1 of tcp-check (connect)")
        };
        assert!(eventually(Duration::from_secs(5), failed), "{which}: {}", p.log_text());
    }
}

#[test]
fn a_tcp_frontend_without_backend_closes_with_a_fin_not_a_reset() {
    for which in ["fulcrum", "haproxy"] {
        let cfg =
            "defaults\n mode tcp\n timeout connect 2s\n timeout client 5s\n timeout server 5s\n\
                   frontend nobackend\n bind {fe0}\n";
        let Some((_p, addrs, _)) = start_proxy(which, "tcp-no-backend", cfg) else { continue };
        let mut c = TcpStream::connect(addrs[0]).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        c.write_all(b"\x16\x03\x01hello, anyone?").expect("write");
        let mut rest = Vec::new();
        // A reset would be an error here; a FIN is a clean end of stream.
        let r = c.read_to_end(&mut rest);
        assert!(matches!(r, Ok(0)), "{which}: {r:?}");
    }
}
