//! What the TLS layers and the server connection say to rules and log lines, beside HAProxy
//! 2.6 on the same configuration: the ClientHello lists `tune.ssl.capture-buffer-size` keeps
//! (JA3 fingerprints: `ssl_fc_cipherlist_*`, `ssl_fc_extlist_bin`, `ssl_fc_eclist_bin`,
//! `ssl_fc_ecformats_bin`, `ssl_fc_protocol_hello_id`) from real clients (rustls, curl,
//! Python's OpenSSL), and the server connection's facts (`bc_*`, `ssl_bc_err*`, `ssl_s_*`) over
//! plain HTTP/1, TLS and HTTP/2 over TLS.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::harness::{eventually, fulcrum, scratch, start_proxy, testserver};
use crate::tls::{client_config, get, header, tls_connect, write, Ca};

/// The fingerprint parts, each in its own field of the answer, as HAProxy's manual builds JA3.
const JA3_FIELDS: &[(&str, &str)] = &[
    ("x-v", "%[ssl_fc_protocol_hello_id]"),
    ("x-c", "%[ssl_fc_cipherlist_bin(1),be2dec(-,2)]"),
    ("x-e", "%[ssl_fc_extlist_bin(1),be2dec(-,2)]"),
    ("x-g", "%[ssl_fc_eclist_bin(1),be2dec(-,2)]"),
    ("x-f", "%[ssl_fc_ecformats_bin,be2dec(-,1)]"),
    ("x-x", "%[ssl_fc_cipherlist_xxh]"),
    ("x-h", "%[ssl_fc_cipherlist_hex]"),
    ("x-s", "%[ssl_fc_cipherlist_str]"),
    ("x-r", "%[ssl_fc_cipherlist_bin,hex]"),
    ("x-o", "%[ssl_fc_has_early]/%[ssl_fc_err]/[%[ssl_fc_err_str]]/%[fc_err_str]"),
];

/// The fields of an answer, in [`JA3_FIELDS`]' order.
fn fields(head: &str) -> Vec<String> {
    JA3_FIELDS.iter().map(|(h, _)| header(head, h).unwrap_or("<none>").to_string()).collect()
}

/// `curl -k` over TLS `version` (`1.2` or `1.3`) to `addr`, its head (`None` without curl).
fn curl(addr: SocketAddr, version: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sk", "-D", "-", "-o", "/dev/null", "--max-time", "5", "--tls-max", version])
        .arg(format!("--tlsv{version}"))
        .arg(format!("https://{addr}/"))
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"))
}

/// Python's `ssl` (OpenSSL) offering every suite it has, its head (`None` without Python).
fn python(addr: SocketAddr) -> Option<String> {
    let script = format!(
        "import ssl,socket\n\
         c=ssl.create_default_context(); c.check_hostname=False; c.verify_mode=ssl.CERT_NONE\n\
         c.set_ciphers('ALL:COMPLEMENTOFALL:@SECLEVEL=0')\n\
         s=c.wrap_socket(socket.create_connection(('{}',{}), timeout=5))\n\
         s.sendall(b'GET / HTTP/1.1\\r\\nHost: t\\r\\nConnection: close\\r\\n\\r\\n')\n\
         d=b''\n\
         while b'\\r\\n\\r\\n' not in d:\n\
         \x20   b=s.recv(65536)\n\
         \x20   if not b: break\n\
         \x20   d+=b\n\
         print(d.split(b'\\r\\n\\r\\n')[0].decode())\n",
        addr.ip(),
        addr.port()
    );
    let out = Command::new("python3").arg("-c").arg(script).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"))
}

#[test]
fn client_hello_fingerprints_as_haproxy_2_6_keeps_them() {
    let dir = scratch("tls-ja3-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let hdrs: String = JA3_FIELDS.iter().map(|(h, f)| format!(" hdr {h} \"{f}\"")).collect();
    // 128 bytes: a long cipher list (Python's) fills it, and no extension is kept then.
    let cfg = format!(
        "global\n tune.ssl.capture-buffer-size 128\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n http-request return status 200{hdrs}\n",
        a.display()
    );
    let mut seen: Vec<(&str, Vec<Vec<String>>)> = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "tls-ja3", &cfg) else { continue };
        let mut answers = Vec::new();
        let mut s = tls_connect(addrs[0], "a.test", client_config(&ca, &[])).expect("tls");
        let (status, head) = get(&mut s, "/");
        assert_eq!(status, 200, "{which}: {head}");
        // (rustls shuffles its extensions for each connection, as browsers do: their set,
        // without the empty ones, which HAProxy's walk leaves out when they come last.)
        let mut rustls = fields(&head);
        let mut exts: Vec<&str> =
            rustls[2].split('-').filter(|e| !matches!(*e, "23" | "35")).collect();
        exts.sort_unstable();
        rustls[2] = exts.join("-");
        answers.push(rustls);
        for version in ["1.3", "1.2"] {
            if let Some(head) = curl(addrs[0], version) {
                answers.push(fields(&head));
            }
        }
        if let Some(head) = python(addrs[0]) {
            answers.push(fields(&head));
        }
        seen.push((which, answers));
    }
    // rustls: TLS 1.3 and 1.2 suites, a version of 0x0303, extensions and groups kept.
    let ours = &seen[0].1[0];
    assert_eq!(ours[0], "771", "{ours:?}");
    assert!(ours[1].starts_with("4866-4865-4867-") || ours[1].starts_with("4865-"), "{ours:?}");
    assert!(ours[2].split('-').any(|e| e == "43") && ours[3].contains("29"), "{ours:?}");
    assert_eq!(ours[9], "0/0/[]/Success", "{ours:?}");
    assert!(!ours.iter().any(|f| f == "<none>"), "{ours:?}");
    if let Some((_, theirs)) = seen.get(1) {
        assert_eq!(seen[0].1.len(), theirs.len());
        for (ours, theirs) in seen[0].1.iter().zip(theirs) {
            assert_eq!(ours, theirs, "each client's hello read as HAProxy 2.6 reads it");
        }
    }
}

#[test]
fn without_a_capture_size_the_hello_fetches_give_nothing() {
    let dir = scratch("tls-ja3-none-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n\
         http-request return status 200 hdr x-c \"[%[ssl_fc_cipherlist_bin,hex]]\" hdr x-v \"[%[ssl_fc_protocol_hello_id]]\"\n",
        a.display()
    );
    let f = fulcrum("tls-ja3-none", &cfg);
    let mut s = tls_connect(f.addr(), "a.test", client_config(&ca, &[])).expect("tls");
    let (status, head) = get(&mut s, "/");
    assert_eq!(status, 200, "{head}");
    assert_eq!(header(&head, "x-c"), Some("[]"), "{head}");
    assert_eq!(header(&head, "x-v"), Some("[]"), "{head}");
}

/// The server connection's facts, in a response rule and in the log line.
const BC: &str = "%[bc_src] %[bc_dst_port] %[bc_src_port,bool] %[bc_http_major] %[bc_err] \
                  %[bc_err_str] [%[ssl_bc_err]] [%[ssl_bc_err_str]]";
const SSL_S: &str = "%[ssl_s_s_dn(CN)] %[ssl_s_i_dn] %[ssl_s_version] %[ssl_s_sig_alg] \
                     %[ssl_s_key_alg] %[ssl_s_notafter] %[ssl_s_serial,hex] %[ssl_s_sha1,hex]";

#[test]
fn server_connection_facts_as_haproxy_2_6_gives_them() {
    let dir = scratch("tls-bc-certs");
    let ca = Ca::new("Test CA");
    let b = write(&dir, "b.pem", &ca.leaf(&["b.test"], false, false).0);
    let ts = testserver("http", "s1");
    // The TLS server: a Fulcrum frontend terminating TLS, HTTP/2 when ALPN asks for it.
    let term = fulcrum(
        "tls-bc-term",
        &format!(
            "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
             frontend fe\n bind {{fe0}} ssl crt {} alpn h2,http/1.1\n default_backend be\n\
             backend be\n server s1 {}\n",
            b.display(),
            ts.addr
        ),
    );
    let back = |name: &str, server: String| {
        format!(
            "backend {name}\n http-response set-header x-bc \"{BC}\"\n\
             http-response set-header x-s \"{SSL_S}\"\n server s1 {server}\n"
        )
    };
    let cfg = format!(
        "defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}}\n log stderr format raw local0\n\
         log-format \"LOG %HP {BC}\"\n\
         use_backend tls if {{ path_beg /tls }}\n use_backend h2 if {{ path_beg /h2 }}\n\
         default_backend plain\n{}{}{}",
        back("plain", ts.addr.to_string()),
        back("tls", format!("{} ssl verify none", term.addr())),
        back("h2", format!("{} ssl verify none alpn h2", term.addr())),
    );
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((p, addrs, _)) = start_proxy(which, "tls-bc", &cfg) else { continue };
        let mut answers = Vec::new();
        for path in ["/plain", "/tls", "/h2"] {
            let (status, head, _) = crate::harness::get_with(addrs[0], path, "");
            assert_eq!(status, 200, "{which} {path}: {head}");
            let x = |h| header(&head, h).unwrap_or("<none>").to_string();
            answers.push((x("x-bc"), x("x-s")));
        }
        let lines = |log: &str| log.lines().filter(|l| l.starts_with("LOG ")).count();
        assert!(eventually(Duration::from_secs(5), || lines(&p.log_text()) >= 3), "{which}");
        // (Fulcrum's `-d` repeats each line on stderr.)
        let mut logged: Vec<String> =
            p.log_text().lines().filter(|l| l.starts_with("LOG ")).map(str::to_string).collect();
        logged.sort();
        logged.dedup();
        seen.push((which, answers, logged));
    }
    let ours = &seen[0];
    let port = |a: SocketAddr| a.port().to_string();
    assert_eq!(ours.1[0].0, format!("127.0.0.1 {} 1 1 0 Success [] []", port(ts.addr)));
    assert_eq!(ours.1[1].0, format!("127.0.0.1 {} 1 1 0 Success [0] []", port(term.addr())));
    assert_eq!(ours.1[2].0, format!("127.0.0.1 {} 1 2 0 Success [0] []", port(term.addr())));
    assert!(ours.1[0].1.trim().is_empty(), "no server certificate in clear: {:?}", ours.1);
    for (_, s) in &ours.1[1..] {
        assert!(s.starts_with("b.test /CN=Test CA 3 ecdsa-with-SHA256 id-ecPublicKey "), "{s}");
    }
    // The log line knows the addresses and the error (not the server's HTTP version nor its
    // TLS: Fulcrum's line prints `-` for those).
    let cut = |l: &String| {
        let w: Vec<&str> = l.split(' ').collect();
        [&w[..5], &w[6..8]].concat().join(" ")
    };
    let plain = format!("LOG /plain 127.0.0.1 {} 1 0 Success", port(ts.addr));
    assert!(ours.2.iter().map(cut).any(|l| l == plain), "{:?}", ours.2);
    if let Some(theirs) = seen.get(1) {
        assert_eq!(ours.1, theirs.1, "response rules as HAProxy 2.6's");
        let ours: Vec<String> = ours.2.iter().map(cut).collect();
        let theirs: Vec<String> = theirs.2.iter().map(cut).collect();
        assert_eq!(ours, theirs, "log lines as HAProxy 2.6's");
    }
}

/// A Python (OpenSSL) client over TLS `version` to `addr`, writing its NSS key log: the
/// answer's body and the key log's lines (`None` without Python).
fn keylogged(addr: SocketAddr, version: &str, dir: &std::path::Path) -> Option<(String, String)> {
    let log = dir.join(format!("client-{}-{version}.keys", addr.port()));
    let script = format!(
        "import ssl,socket\n\
         c=ssl.create_default_context(); c.check_hostname=False; c.verify_mode=ssl.CERT_NONE\n\
         c.keylog_filename='{}'\n\
         c.maximum_version=ssl.TLSVersion.{version}\n\
         s=c.wrap_socket(socket.create_connection(('{}',{}), timeout=5))\n\
         s.sendall(b'GET / HTTP/1.1\\r\\nHost: t\\r\\nConnection: close\\r\\n\\r\\n')\n\
         d=b''\n\
         while True:\n\
         \x20   b=s.recv(65536)\n\
         \x20   if not b: break\n\
         \x20   d+=b\n\
         print(d.split(b'\\r\\n\\r\\n',1)[1].decode())\n",
        log.display(),
        addr.ip(),
        addr.port()
    );
    let out = Command::new("python3").arg("-c").arg(script).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let keys = std::fs::read_to_string(&log).ok()?;
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), keys))
}

#[test]
fn keylog_secrets_are_the_clients_own() {
    // `tune.ssl.keylog on`: the lines of an NSS key log file made from the fetches, as
    // HAProxy's manual builds them, must be the lines the client itself logged.
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("ignored: python3 is not installed");
        return;
    }
    let dir = scratch("tls-keylog-certs");
    let ca = Ca::new("Test CA");
    let a = write(&dir, "a.pem", &ca.leaf(&["a.test"], false, false).0);
    let lines = [
        "CLIENT_RANDOM %[ssl_fc_client_random,hex] %[ssl_fc_session_key,hex]",
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET %[ssl_fc_client_random,hex] %[ssl_fc_client_handshake_traffic_secret]",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET %[ssl_fc_client_random,hex] %[ssl_fc_server_handshake_traffic_secret]",
        "CLIENT_TRAFFIC_SECRET_0 %[ssl_fc_client_random,hex] %[ssl_fc_client_traffic_secret_0]",
        "SERVER_TRAFFIC_SECRET_0 %[ssl_fc_client_random,hex] %[ssl_fc_server_traffic_secret_0]",
        "EXPORTER_SECRET %[ssl_fc_client_random,hex] %[ssl_fc_exporter_secret]",
        "SERVER_RANDOM %[ssl_fc_server_random,hex]",
    ];
    let cfg = format!(
        "global\n tune.ssl.keylog on\n\
         defaults\n mode http\n timeout connect 5s\n timeout client 5s\n timeout server 5s\n\
         frontend fe\n bind {{fe0}} ssl crt {}\n\
         http-request return status 200 content-type text/plain lf-string \"{}\\n\"\n",
        a.display(),
        lines.join("\\n")
    );
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, pdir)) = start_proxy(which, "tls-keylog", &cfg) else { continue };
        for version in ["TLSv1_3", "TLSv1_2"] {
            let (body, keys) = keylogged(addrs[0], version, &pdir).expect("the python client");
            let made: Vec<String> = body.lines().map(str::to_ascii_lowercase).collect();
            let logged: Vec<&str> = keys.lines().filter(|l| !l.starts_with('#')).collect();
            assert!(!logged.is_empty(), "{which} {version}: the client logged its keys");
            for line in &logged {
                let line = line.to_ascii_lowercase();
                assert!(made.contains(&line), "{which} {version}: {line} in {made:?}");
            }
            // The server's random: 32 bytes, the TLS 1.2 ones ending with the downgrade mark
            // (RFC 8446: "DOWNGRD" and 1).
            let sr = made.iter().find_map(|m| m.strip_prefix("server_random ")).expect("random");
            assert_eq!(sr.len(), 64, "{which} {version}: {sr}");
            assert_eq!(sr.ends_with("444f574e47524401"), version == "TLSv1_2", "{which}: {sr}");
        }
    }
}
