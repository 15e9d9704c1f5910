//! FastCGI (`fcgi-app`, `use-fcgi-app`, `proto fcgi`) against a real PHP-FPM (Debian's
//! `php-fpm`, started here on 127.0.0.1 and on a UNIX socket) serving small PHP scripts: the
//! CGI parameters PHP sees (path-info, query, the hidden `Authorization`), a 3 MB upload,
//! `Status:` and `Location:` answers, `HEAD`, `Expect: 100-continue` answered by the proxy,
//! chunked uploads (awaited whole for their `CONTENT_LENGTH`; 400 beyond a buffer), and
//! PHP-FPM stopped (503, the server DOWN); and multiplexed connections against flup, a FastCGI
//! server that multiplexes. Each scenario runs under HAProxy 2.6 too when it is installed, and
//! both must answer alike.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::{eventually, haproxy_bin, scratch, start_proxy};

/// Debian's PHP-FPM binary, whatever its PHP version.
fn php_fpm() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("php-fpm"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// A PHP-FPM master with a TCP pool and a UNIX-socket pool; killed (by PID) when dropped.
struct Fpm {
    child: Child,
    tcp: SocketAddr,
    sock: PathBuf,
}

impl Fpm {
    fn start(dir: &Path) -> Fpm {
        let bin = php_fpm().expect("php-fpm");
        let port =
            TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let tcp: SocketAddr = ([127, 0, 0, 1], port).into();
        let sock = dir.join("php.sock");
        let root = is_root();
        let user = if root { "user = nobody\ngroup = nogroup\n" } else { "" };
        let conf = format!(
            "[global]\nerror_log = {d}/fpm-error.log\ndaemonize = no\n\
             [tcp]\n{user}listen = {tcp}\npm = static\npm.max_children = 3\n\
             [unix]\n{user}listen = {s}\nlisten.mode = 0666\npm = static\npm.max_children = 2\n",
            d = dir.display(),
            s = sock.display()
        );
        let path = dir.join("fpm.conf");
        std::fs::write(&path, conf).expect("fpm.conf");
        let mut cmd = Command::new(bin);
        cmd.arg("-F").arg("-n").arg("-y").arg(&path).stdout(Stdio::null()).stderr(Stdio::null());
        if root {
            cmd.arg("-R");
        }
        let child = cmd.spawn().expect("start php-fpm");
        let up = eventually(Duration::from_secs(10), || {
            TcpStream::connect(tcp).is_ok()
                && std::os::unix::net::UnixStream::connect(&sock).is_ok()
        });
        assert!(
            up,
            "php-fpm did not start: {}",
            std::fs::read_to_string(dir.join("fpm-error.log")).unwrap_or_default()
        );
        Fpm { child, tcp, sock }
    }

    /// SIGTERM: the master stops its workers too (a SIGKILL would leave them listening).
    fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
            let ended =
                eventually(Duration::from_secs(5), || !matches!(self.child.try_wait(), Ok(None)));
            if !ended {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

impl Drop for Fpm {
    fn drop(&mut self) {
        self.stop();
    }
}

const SCRIPTS: [(&str, &str); 5] = [
    ("index.php", "<?php\nheader('X-Script: index');\necho 'hello from ', $_SERVER['SCRIPT_NAME'], ' qs=', $_SERVER['QUERY_STRING'] ?? '', \"\\n\";\n"),
    ("info.php", "<?php\nheader('Content-Type: text/plain');\nforeach (['SCRIPT_NAME','SCRIPT_FILENAME','PATH_INFO','REQUEST_URI','QUERY_STRING','REQUEST_METHOD','CONTENT_LENGTH','HTTP_X_TEST','HTTP_AUTHORIZATION','GATEWAY_INTERFACE','REDIRECT_STATUS','HOST_SEEN','REMOTE_USER','AUTH_TYPE'] as $k) echo \"$k=\", $_SERVER[$k] ?? '-', \"\\n\";\n"),
    ("post.php", "<?php\n$b = file_get_contents('php://input');\necho 'len=', strlen($b), ' md5=', md5($b), \"\\n\";\n"),
    ("fail.php", "<?php\nhttp_response_code(503);\nthrow new Exception('boom');\n"),
    ("redirect.php", "<?php\nheader('Location: /elsewhere');\n"),
];

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output();
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Sends `raw` on a new connection and reads the whole answer (the connection closes after).
/// A `\0PAUSE<ms>\0` marker in `raw` is a pause in the sending, not bytes.
fn ask(addr: SocketAddr, raw: &[u8]) -> String {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut raw = raw;
    // (Writes may fail once the proxy answered early and closed: the answer tells.)
    while let Some(at) = raw.windows(6).position(|w| w == b"\0PAUSE") {
        let _ = c.write_all(&raw[..at]);
        let rest = &raw[at + 6..];
        let end = rest.iter().position(|b| *b == 0).expect("marker end");
        let ms: u64 = std::str::from_utf8(&rest[..end]).expect("ms").parse().expect("ms");
        std::thread::sleep(Duration::from_millis(ms));
        raw = &rest[end + 1..];
    }
    let _ = c.write_all(raw);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n").into_bytes()
}

/// A chunked POST to `/post.php` (chunks of at most 4,000 bytes) on a new connection; with
/// `pause_ms`, the last chunk and the body's end follow after that pause.
fn chunked_post(data: &[u8], pause_ms: u64) -> Vec<u8> {
    let mut body = Vec::new();
    for c in data.chunks(4000) {
        body.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        body.extend_from_slice(c);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let mut req = b"POST /post.php HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    if pause_ms == 0 {
        req.extend_from_slice(&body);
        return req;
    }
    // (Sent by `ask` as a marker: the bytes after it go after the pause.)
    req.extend_from_slice(&body[..body.len() - 12]);
    req.extend_from_slice(format!("\0PAUSE{pause_ms}\0").as_bytes());
    req.extend_from_slice(&body[body.len() - 12..]);
    req
}

/// The status line, and the body of an answer.
fn parts(answer: &str) -> (String, String) {
    let status = answer.lines().next().unwrap_or_default().to_string();
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn targets() -> Vec<&'static str> {
    if haproxy_bin().is_some() {
        vec!["haproxy", "fulcrum"]
    } else {
        vec!["fulcrum"]
    }
}

#[test]
#[cfg_attr(no_php_fpm, ignore = "php-fpm is not installed (see crates/fulcrum/build.rs)")]
fn php_scripts_through_php_fpm_answer_as_under_haproxy() {
    let dir = scratch("fcgi-fpm");
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("www");
    for (name, text) in SCRIPTS {
        std::fs::write(www.join(name), text).expect("script");
    }
    let mut fpm = Fpm::start(&dir);
    let cfg = format!(
        "defaults\n mode http\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n\
         fcgi-app php\n docroot {www}\n index index.php\n path-info ^(/.+\\.php)(/.*)?$\n set-param REDIRECT_STATUS 200\n set-param HOST_SEEN %[req.hdr(host)]-seen\n\
         fcgi-app php-auth\n docroot {www}\n pass-header Authorization\n\
         frontend fe\n bind {{fe0}}\n use_backend unix if {{ path_beg /u/ }}\n use_backend auth if {{ path_beg /auth/ }}\n default_backend php\n\
         backend php\n option log-health-checks\n use-fcgi-app php\n server fpm {tcp} proto fcgi check inter 200ms fall 1 rise 1\n\
         backend unix\n use-fcgi-app php\n http-request set-path %[path,regsub(^/u,)]\n server fpm unix@{sock} proto fcgi\n\
         backend auth\n use-fcgi-app php-auth\n http-request set-path %[path,regsub(^/auth,)]\n server fpm {tcp} proto fcgi\n",
        www = www.display(),
        tcp = fpm.tcp,
        sock = fpm.sock.display()
    );
    let big: Vec<u8> =
        (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut post = format!(
        "POST /post.php HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        big.len()
    )
    .into_bytes();
    post.extend_from_slice(&big);
    let mut seen: Vec<Vec<(String, String)>> = Vec::new();
    for target in targets() {
        let Some((p, addrs, _)) = start_proxy(target, "fcgi", &cfg) else { continue };
        let a = addrs[0];
        let auth = "Authorization: Basic Zm9vOmJhcg==\r\nX-Test: yes\r\n";
        let answers = [
            ask(a, &get("/", "")),
            ask(a, &get("/info.php/extra/path?x=1&y=2", auth)),
            ask(a, &get("/auth/info.php", auth)),
            ask(a, &post),
            ask(a, &get("/nope.php", "")),
            ask(a, &get("/fail.php", "")),
            ask(a, &get("/redirect.php", "")),
            ask(a, &get("/u/index.php?from=unix", "")),
            ask(a, b"HEAD /index.php HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
            // A header name with `_` would become the CGI parameter of `X-Test`: deleted.
            ask(a, &get("/info.php", "X_Test: smuggled\r\n")),
            // A chunked body: awaited whole (HAProxy's FastCGI filter), its length the
            // script's `CONTENT_LENGTH`, even when its end comes later; one that does not end
            // within a buffer gets 400.
            ask(a, &chunked_post(b"hello world", 0)),
            ask(a, &chunked_post(b"hello world", 200)),
            ask(a, &chunked_post(&big[..100_000], 0)),
        ];
        let got: Vec<(String, String)> = answers.iter().map(|x| parts(x)).collect();
        let info = &got[1].1;
        for line in [
            "SCRIPT_NAME=/info.php\n",
            &format!("SCRIPT_FILENAME={}/info.php\n", www.display()),
            "PATH_INFO=/extra/path\n",
            "REQUEST_URI=/info.php/extra/path?x=1&y=2\n",
            "QUERY_STRING=x=1&y=2\n",
            "REQUEST_METHOD=GET\n",
            "HTTP_X_TEST=yes\n",
            "HTTP_AUTHORIZATION=-\n",
            "GATEWAY_INTERFACE=CGI/1.1\n",
            "REDIRECT_STATUS=200\n",
            "HOST_SEEN=t-seen\n",
            "REMOTE_USER=foo\n",
            "AUTH_TYPE=Basic\n",
        ] {
            assert!(info.contains(line), "{target}: no {line:?} in:\n{info}");
        }
        assert!(
            got[2].1.contains("HTTP_AUTHORIZATION=Basic Zm9vOmJhcg==\n"),
            "{target}: pass-header: {}",
            got[2].1
        );
        let md5 = format!("len=3000000 md5={:032x}", md5_of(&big));
        assert_eq!(got[3], ("HTTP/1.1 200 OK".into(), format!("{md5}\n")), "{target}");
        assert_eq!(
            got[4],
            ("HTTP/1.1 404 Not Found".into(), "File not found.\n".into()),
            "{target}"
        );
        assert_eq!(got[5].0, "HTTP/1.1 503 Service Unavailable", "{target}");
        assert_eq!(got[6].0, "HTTP/1.1 302 Moved Temporarily", "{target}");
        assert!(
            answers[6].to_ascii_lowercase().contains("\r\nlocation: /elsewhere\r\n"),
            "{target}"
        );
        assert!(
            !answers[4].to_ascii_lowercase().contains("\r\nstatus:"),
            "{target}: Status is removed"
        );
        assert!(answers[0].to_ascii_lowercase().contains("\r\ndate: "), "{target}: Date is added");
        assert_eq!(
            got[7],
            ("HTTP/1.1 200 OK".into(), "hello from /index.php qs=from=unix\n".into()),
            "{target}"
        );
        assert_eq!(
            (got[8].0.as_str(), got[8].1.as_str()),
            ("HTTP/1.1 200 OK", ""),
            "{target}: HEAD"
        );
        let eleven = format!("len=11 md5={:032x}\n", md5_of(b"hello world"));
        assert_eq!(got[10], ("HTTP/1.1 200 OK".into(), eleven.clone()), "{target}: chunked");
        assert_eq!(got[11], ("HTTP/1.1 200 OK".into(), eleven), "{target}: chunked, late end");
        assert_eq!(got[12].0, "HTTP/1.1 400 Bad request", "{target}: chunked, too large");
        // `Expect: 100-continue`: the proxy says it, then the body goes.
        let mut c = TcpStream::connect(a).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        c.write_all(b"POST /post.php HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n").expect("write");
        let mut first = [0u8; 25];
        c.read_exact(&mut first).expect("100 Continue");
        assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n", "{target}");
        c.write_all(b"hello").expect("body");
        let mut rest = String::new();
        let _ = c.read_to_string(&mut rest);
        assert!(
            rest.ends_with(&format!("len=5 md5={:032x}\n", md5_of(b"hello"))),
            "{target}: {rest}"
        );
        seen.push(got);
        drop(p);
    }
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1], "HAProxy 2.6 (left) and Fulcrum (right) answer alike");
    }
    // PHP-FPM stopped: the check takes the server down, requests get 503.
    let Some((p, addrs, _)) = start_proxy("fulcrum", "fcgi-down", &cfg) else { return };
    assert!(parts(&ask(addrs[0], &get("/", ""))).0.ends_with("200 OK"));
    fpm.stop();
    let down =
        eventually(Duration::from_secs(5), || p.log_text().contains("Server php/fpm is DOWN"));
    assert!(down, "{}", p.log_text());
    assert_eq!(parts(&ask(addrs[0], &get("/", ""))).0, "HTTP/1.1 503 Service Unavailable");
}

/// MD5, for comparing with PHP's `md5()` (RFC 1321, written out: the suite has no MD5 crate).
fn md5_of(data: &[u8]) -> u128 {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> =
        (0..64).map(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32).collect();
    let (mut a0, mut b0, mut c0, mut d0) =
        (0x6745_2301u32, 0xefcd_ab89u32, 0x98ba_dcfeu32, 0x1032_5476u32);
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_le_bytes());
    for chunk in msg.chunks(64) {
        let m: Vec<u32> =
            chunk.chunks(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f = f.wrapping_add(a).wrapping_add(k[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f.rotate_left(S[i]));
        }
        a0 = a0.wrapping_add(a);
        b0 = b0.wrapping_add(b);
        c0 = c0.wrapping_add(c);
        d0 = d0.wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, v) in [a0, b0, c0, d0].iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    u128::from_be_bytes(out)
}

#[test]
fn md5_matches_rfc_1321() {
    assert_eq!(format!("{:032x}", md5_of(b"")), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(format!("{:032x}", md5_of(b"hello")), "5d41402abc4b2a76b9719d911017c592");
}

/// `acl`, `set-param` and `pass-header` under conditions over the section's own ACLs, and
/// `log-stderr`: PHP's `error_log()` messages (one of two lines) arrive as syslog lines tagged
/// with the application's name, at level `err`; both proxies alike.
#[test]
#[cfg_attr(no_php_fpm, ignore = "php-fpm is not installed (see crates/fulcrum/build.rs)")]
fn conditional_params_and_stderr_lines_as_under_haproxy() {
    let dir = scratch("fcgi-cond");
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("www");
    for (name, text) in SCRIPTS {
        std::fs::write(www.join(name), text).expect("script");
    }
    std::fs::write(
        www.join("params.php"),
        "<?php\nforeach (['ZONE','TIER','DST','HTTP_AUTHORIZATION'] as $k) echo \"$k=\", $_SERVER[$k] ?? '-', \"\\n\";\n",
    )
    .expect("script");
    std::fs::write(
        www.join("warn.php"),
        "<?php\nerror_log('boom from php');\nerror_log(\"two\\nlines\");\necho \"ok\\n\";\n",
    )
    .expect("script");
    let fpm = Fpm::start(&dir);
    let mut seen: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for target in targets() {
        let sink = crate::logging::Sink::new();
        let cfg = format!(
            "defaults\n mode http\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n\
             fcgi-app php\n docroot {www}\n acl inner req.hdr(x-zone) -m str in\n acl tok req.hdr(x-token) -m found\n\
             \x20set-param ZONE outer\n set-param ZONE inner if inner\n set-param TIER gold unless {{ req.hdr(x-tier) -m str basic }}\n set-param DST %[dst]\n\
             \x20pass-header Authorization if tok\n log-stderr {sink} local0\n\
             frontend fe\n bind {{fe0}}\n default_backend php\n\
             backend php\n use-fcgi-app php\n server fpm {tcp} proto fcgi\n",
            www = www.display(),
            tcp = fpm.tcp,
            sink = sink.addr(),
        );
        let Some((p, addrs, _)) = start_proxy(target, "fcgi-cond", &cfg) else { continue };
        let a = addrs[0];
        let auth = "Authorization: Basic Zm9vOmJhcg==\r\n";
        let bodies: Vec<String> = [
            get("/params.php", auth),
            get("/params.php", &format!("X-Zone: in\r\nX-Token: 1\r\nX-Tier: basic\r\n{auth}")),
            get("/warn.php", ""),
        ]
        .iter()
        .map(|r| parts(&ask(a, r)).1)
        .collect();
        // (`%[dst]`: the application's rules need the connection's local address.)
        let dst = "DST=127.0.0.1\n";
        assert_eq!(
            bodies[0],
            format!("ZONE=outer\nTIER=gold\n{dst}HTTP_AUTHORIZATION=-\n"),
            "{target}"
        );
        assert_eq!(
            bodies[1],
            format!("ZONE=inner\nTIER=-\n{dst}HTTP_AUTHORIZATION=Basic Zm9vOmJhcg==\n"),
            "{target}"
        );
        assert_eq!(bodies[2], "ok\n", "{target}");
        // Datagrams: the date and pid masked.
        sink.wait_for(1);
        let lines: Vec<String> = sink
            .got
            .borrow()
            .iter()
            .map(|l| {
                let (head, msg) = l.split_once("]: ").unwrap_or((l, ""));
                let pri = head.split('>').next().unwrap_or_default();
                let tag = head.rsplit(' ').next().unwrap_or_default().split('[').next();
                format!("{pri}> {} {msg}", tag.unwrap_or_default())
            })
            .collect();
        // PHP-FPM sends the request's messages in one record: one line, inner newline kept.
        let want = "<131> php PHP message: boom from php; PHP message: two\nlines\n";
        assert_eq!(lines, [want], "{target}");
        seen.push((bodies, lines));
        drop(p);
    }
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1], "HAProxy 2.6 (left) and Fulcrum (right) alike");
    }
}

const FLUP_APP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/fcgi_mux.py");

/// A FastCGI application served by flup (`fcgi_mux.py`): killed (by PID) when dropped.
struct Flup {
    child: Child,
    port: u16,
}

impl Flup {
    fn start(mode: &str) -> Flup {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .args([FLUP_APP, mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fcgi_mux.py");
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let port = line.trim().strip_prefix("ready ").and_then(|p| p.parse().ok());
        Flup { child, port: port.expect("fcgi_mux.py's port") }
    }
}

impl Drop for Flup {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` requests for `path` at once, each on its own client connection: their bodies, sorted.
fn at_once(a: SocketAddr, path: &str, n: usize) -> Vec<String> {
    let req = get(path, "");
    let mut got: Vec<String> = std::thread::scope(|s| {
        let all: Vec<_> = (0..n).map(|_| s.spawn(|| parts(&ask(a, &req)).1)).collect();
        all.into_iter().map(|t| t.join().expect("client")).collect()
    });
    got.sort();
    got
}

/// `option mpxs-conns`, `max-reqs` and `get-values` against flup, a FastCGI server that
/// multiplexes (and one that does not). Each application counts the connections it accepted;
/// `/wait?n=3` answers once three requests are served at once, so three such requests need
/// connections that carry them together. As under HAProxy 2.6 (measured, and compared here
/// when it is installed), with `http-reuse always`: `max-reqs 2` puts two of three on one
/// connection; with `get-values` a connection takes as many as the application's
/// `FCGI_MAX_REQS` once it said it multiplexes, and one at a time when it says it does not;
/// under `http-reuse safe` every request of a new client has a connection of its own.
#[test]
#[cfg_attr(no_flup, ignore = "flup is not installed (see crates/fulcrum/build.rs)")]
fn multiplexed_connections_as_under_haproxy() {
    let mut seen: Vec<Vec<Vec<String>>> = Vec::new();
    for target in targets() {
        let apps =
            [Flup::start("mux"), Flup::start("mux"), Flup::start("single"), Flup::start("mux")];
        let port = |i: usize| apps[i].port;
        let cfg = format!(
            "global\n nbthread 1\n\
             defaults\n mode http\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n\
             fcgi-app mux\n docroot /srv\n option mpxs-conns\n option max-reqs 2\n\
             fcgi-app gv\n docroot /srv\n option get-values\n option mpxs-conns\n\
             frontend fe\n bind {{fe0}}\n use_backend %[path,field(2,/)]\n\
             backend mux\n http-reuse always\n use-fcgi-app mux\n server s 127.0.0.1:{} proto fcgi\n\
             backend gv\n http-reuse always\n use-fcgi-app gv\n server s 127.0.0.1:{} proto fcgi\n\
             backend gvs\n http-reuse always\n use-fcgi-app gv\n server s 127.0.0.1:{} proto fcgi\n\
             backend safe\n use-fcgi-app mux\n server s 127.0.0.1:{} proto fcgi\n",
            port(0),
            port(1),
            port(2),
            port(3)
        );
        let Some((p, addrs, _)) = start_proxy(target, "fcgi-mux", &cfg) else { continue };
        let a = addrs[0];
        let together = |n: u32| vec![format!("conns={n} together=yes\n"); 3];
        let mut got = Vec::new();
        // Three at once on a fresh proxy: one connection takes two.
        got.push(at_once(a, "/mux/wait?n=3&tag=a", 3));
        assert_eq!(got[0], together(2), "{target}: max-reqs 2");
        // After one request (the GET_VALUES answer known), three at once share its connection.
        got.push(vec![parts(&ask(a, &get("/gv/conns", ""))).1]);
        got.push(at_once(a, "/gv/wait?n=3&tag=a", 3));
        assert_eq!(got[1..], [vec!["conns=1\n".to_string()], together(1)], "{target}: get-values");
        // The application says it does not multiplex: one request per connection.
        got.push(vec![parts(&ask(a, &get("/gvs/conns", ""))).1]);
        got.push(at_once(a, "/gvs/wait?n=3&tag=a", 3));
        assert_eq!(got[4], together(3), "{target}: FCGI_MPXS_CONNS 0");
        // `http-reuse safe`: each new client's request on a connection of its own.
        got.push(at_once(a, "/safe/wait?n=3&tag=a", 3));
        assert_eq!(got[5], together(3), "{target}: http-reuse safe");
        seen.push(got);
        drop(p);
    }
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1], "HAProxy 2.6 (left) and Fulcrum (right) alike");
    }
}

/// An HTTP/2 upload without a length (curl sending its standard input) to PHP-FPM: awaited
/// whole, its length the script's `CONTENT_LENGTH`; one that does not end within a buffer is
/// refused with 400, as HAProxy refuses it (HAProxy 2.6 then resets the stream, `CANCEL`,
/// where Fulcrum answers the 400 on it: Fulcrum alone here).
#[test]
#[cfg_attr(no_php_fpm, ignore = "php-fpm is not installed (see crates/fulcrum/build.rs)")]
#[cfg_attr(no_curl, ignore = "curl is not installed (see crates/fulcrum/build.rs)")]
fn http2_uploads_without_a_length_reach_php_whole_or_get_400() {
    let dir = scratch("fcgi-h2");
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("www");
    for (name, text) in SCRIPTS {
        std::fs::write(www.join(name), text).expect("script");
    }
    let fpm = Fpm::start(&dir);
    let cfg = format!(
        "defaults\n mode http\n timeout connect 1s\n timeout client 10s\n timeout server 10s\n\
         fcgi-app php\n docroot {www}\n\
         frontend fe\n bind {{fe0}} proto h2\n default_backend php\n\
         backend php\n use-fcgi-app php\n server fpm {tcp} proto fcgi\n",
        www = www.display(),
        tcp = fpm.tcp,
    );
    let Some((p, addrs, _)) = start_proxy("fulcrum", "fcgi-h2", &cfg) else { return };
    let upload = |data: &[u8]| -> String {
        let mut c = Command::new("curl")
            .args(["-s", "-m", "10", "--http2-prior-knowledge", "-X", "POST", "-T", "-"])
            .args(["-w", "\n%{http_code}"])
            .arg(format!("http://{}/post.php", addrs[0]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("curl");
        if let Some(mut input) = c.stdin.take() {
            let _ = input.write_all(data);
        }
        let out = c.wait_with_output().expect("curl's answer");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let small = vec![7u8; 1000];
    let want = format!("len=1000 md5={:032x}\n\n200", md5_of(&small));
    assert_eq!(upload(&small), want);
    let got = upload(&vec![7u8; 100_000]);
    assert!(got.ends_with("\n400"), "{got}");
    drop(p);
}
