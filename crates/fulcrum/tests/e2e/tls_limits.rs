//! The process's TLS limits beside HAProxy 2.6 on the same configuration: `maxsslconn`
//! (connections with a TLS layer at once, clients' and servers' together: a client past it
//! gets no handshake, a request needing a TLS server connection a 500 with `IC`) and
//! `maxsslrate` (connections accepted on TLS binds per second), with `show info` and
//! `set rate-limit ... global`.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::harness::{api, eventually, fulcrum, get_with, scratch, start_proxy, testserver};
use crate::tls::{client_config, get, write, Ca};

/// A `show info` field.
fn info(sock: &Path, key: &str) -> Option<String> {
    let text = api(sock, "show info");
    text.lines().find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
}

/// A TLS handshake with `addr` that gives up after `within` (`Err` when refused or silent).
fn handshake(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    within: Duration,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(within))?;
    let name = rustls::pki_types::ServerName::try_from("a.test").expect("name");
    let conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// The proxy's log lines that start with `LOG ` (Fulcrum's `-d` repeats them: once each).
fn logged(text: &str) -> Vec<String> {
    let mut v: Vec<String> =
        text.lines().filter(|l| l.starts_with("LOG ")).map(str::to_string).collect();
    v.dedup();
    v
}

#[test]
fn maxsslconn_counts_both_sides_and_refuses_past_it() {
    let ts = testserver("http", "a");
    let dir = scratch("tls-maxsslconn-certs");
    let ca = Ca::new("Test CA");
    let pem = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    // The TLS server the second frontend's backend speaks to: another Fulcrum.
    let term = fulcrum(
        "tls-maxsslconn-term",
        &format!(
            "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}} ssl crt {}\n default_backend be\n\
             backend be\n server s1 {}\n",
            pem.display(),
            ts.addr
        ),
    );
    let cfg = format!(
        "global\n maxsslconn 2\n stats socket {{dir}}/api.sock level admin\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 10s\n timeout server 5s\n\
         frontend tls\n bind {{fe0}} ssl crt {}\n default_backend plain\n\
         frontend clear\n bind {{fe1}}\n log stderr format raw local0\n\
         log-format \"LOG %ST %tsc %Tc\"\n default_backend tls\n\
         backend plain\n server s1 {}\n\
         backend tls\n http-reuse never\n server s1 {} ssl verify none\n",
        pem.display(),
        ts.addr,
        term.addr()
    );
    let config = client_config(&ca, &[]);
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((p, addrs, pdir)) = start_proxy(which, "tls-maxsslconn", &cfg) else { continue };
        let sock = pdir.join("api.sock");
        let up = || std::os::unix::net::UnixStream::connect(&sock).is_ok();
        assert!(eventually(Duration::from_secs(5), up), "{which}: the API socket answers");
        assert_eq!(info(&sock, "MaxSslConns").as_deref(), Some("2"), "{which}");
        // Under the limit, both sides have their TLS.
        let mut s = handshake(addrs[0], Arc::clone(&config), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{which}: handshake under the limit: {e}"));
        assert_eq!(get(&mut s, "/").0, 200, "{which}");
        drop(s);
        assert_eq!(get_with(addrs[1], "/", "").0, 200, "{which}: TLS to the server");
        // Two clients that never send a byte hold both TLS layers.
        let held: Vec<TcpStream> =
            (0..2).map(|_| TcpStream::connect(addrs[0]).expect("connect")).collect();
        let count = |n: &str| info(&sock, "CurrSslConns").as_deref() == Some(n);
        assert!(eventually(Duration::from_secs(5), || count("2")), "{which}: two held");
        // A third client gets no handshake.
        let refused = handshake(addrs[0], Arc::clone(&config), Duration::from_secs(2));
        assert!(refused.is_err(), "{which}: a TLS client past maxsslconn");
        // A request that needs a TLS connection to its server: 500, an internal error while
        // connecting (no connection was tried).
        let (status, head, _) = get_with(addrs[1], "/", "");
        assert_eq!(status, 500, "{which}: {head}");
        // Once the held clients leave, both sides work again.
        drop(held);
        assert!(eventually(Duration::from_secs(5), || count("0")), "{which}: released");
        let mut s = handshake(addrs[0], Arc::clone(&config), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{which}: handshake after: {e}"));
        assert_eq!(get(&mut s, "/").0, 200, "{which}");
        drop(s);
        assert_eq!(get_with(addrs[1], "/", "").0, 200, "{which}");
        let has3 = |t: &str| logged(t).len() >= 3;
        assert!(eventually(Duration::from_secs(5), || has3(&p.log_text())), "{which}");
        let lines = logged(&p.log_text());
        // (The times: only whether the connection was made.)
        let cut: Vec<String> = lines
            .iter()
            .map(|l| match l.rsplit_once(' ') {
                Some((a, "-1")) => format!("{a} -1"),
                Some((a, _)) => format!("{a} made"),
                None => l.clone(),
            })
            .collect();
        seen.push((which, cut));
    }
    let ours = &seen[0].1;
    assert_eq!(ours, &["LOG 200 ---- made", "LOG 500 IC-- -1", "LOG 200 ---- made"]);
    if let Some((_, theirs)) = seen.get(1) {
        assert_eq!(ours, theirs, "log lines as HAProxy 2.6's");
    }
}

#[test]
fn maxsslrate_paces_tls_binds_and_changes_at_run_time() {
    let ts = testserver("http", "a");
    let dir = scratch("tls-maxsslrate-certs");
    let ca = Ca::new("Test CA");
    let pem = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let cfg = format!(
        "global\n maxsslrate 1\n stats socket {{dir}}/api.sock level admin\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 10s\n timeout server 5s\n\
         frontend tls\n bind {{fe0}} ssl crt {}\n default_backend plain\n\
         backend plain\n server s1 {}\n",
        pem.display(),
        ts.addr
    );
    let config = client_config(&ca, &[]);
    let commands = [
        "set rate-limit ssl-sessions global",
        "set rate-limit ssl-sessions global -1",
        "set rate-limit ssl-sessions local 5",
        "set rate-limit ssl-sessions global 7",
        "show info",
        "set rate-limit connections global 9",
        "set rate-limit http-compression global 3",
        "show info",
    ];
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, pdir)) = start_proxy(which, "tls-maxsslrate", &cfg) else { continue };
        let sock = pdir.join("api.sock");
        let up = || std::os::unix::net::UnixStream::connect(&sock).is_ok();
        assert!(eventually(Duration::from_secs(5), up), "{which}: the API socket answers");
        assert_eq!(info(&sock, "SslRateLimit").as_deref(), Some("1"), "{which}");
        // Three handshakes at one per second: the second and the third wait for the next
        // seconds, in the kernel's backlog.
        let t0 = Instant::now();
        for _ in 0..3 {
            let mut s = handshake(addrs[0], Arc::clone(&config), Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("{which}: handshake: {e}"));
            assert_eq!(get(&mut s, "/").0, 200, "{which}");
        }
        assert!(t0.elapsed() >= Duration::from_secs(1), "{which}: {:?}", t0.elapsed());
        let answers: Vec<String> = commands
            .iter()
            .map(|c| match c.strip_prefix("show ") {
                Some(_) => ["SslRateLimit", "ConnRateLimit", "CompressBpsRateLim"]
                    .map(|k| format!("{k}={}", info(&sock, k).unwrap_or_default()))
                    .join(" "),
                None => api(&sock, c),
            })
            .collect();
        seen.push(answers);
    }
    let ours = &seen[0];
    assert_eq!(ours[0], "Expects an integer value.\n\n");
    assert_eq!(ours[1], "Value out of range.\n\n");
    assert!(ours[2].contains("'ssl-sessions global' to set"), "{}", ours[2]);
    assert_eq!(ours[4], "SslRateLimit=7 ConnRateLimit=0 CompressBpsRateLim=0");
    assert_eq!(ours[7], "SslRateLimit=7 ConnRateLimit=9 CompressBpsRateLim=3072");
    if let Some(theirs) = seen.get(1) {
        assert_eq!(ours, theirs, "the runtime API as HAProxy 2.6's");
    }
}
