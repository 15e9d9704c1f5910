//! Response compression (issue 38 §2) beside HAProxy 2.6: which responses are compressed and
//! with which algorithm, what the head then says, and every compressed body decoded by an
//! independent decoder (Python's zlib) back to the plain body.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::px::*;

fn one(srv: &Running, lines: &str) -> String {
    listen(&format!("{lines} server s1 {}\n", srv.addr()))
}

/// `data` decoded by Python's zlib with `wbits` (31 gzip, 15 zlib, -15 raw deflate).
pub(crate) fn inflate(data: &[u8], wbits: i32) -> Vec<u8> {
    let code = format!(
        "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), {wbits}))"
    );
    let mut child = Command::new("python3")
        .args(["-c", &code])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().expect("stdin").write_all(data).expect("write");
    let out = child.wait_with_output().expect("python3 ran");
    assert!(out.status.success(), "not {wbits} data: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The response's headers that compression changes, names lower-cased.
fn comp_headers(r: &Resp) -> Vec<(String, String)> {
    ["content-encoding", "content-length", "transfer-encoding", "vary", "etag"]
        .iter()
        .filter_map(|n| r.header(n).map(|v| (n.to_string(), v.to_string())))
        .collect()
}

#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn gzip_deflate_and_raw_deflate_bodies_decode_to_the_plain_body() {
    each(|t| {
        let srv = server("s1");
        let mut seen = Vec::new();
        for (algo, accept, wbits) in
            [("gzip", "gzip", 31), ("deflate", "deflate", 15), ("raw-deflate", "deflate", -15)]
        {
            let px = t.start(&one(&srv, &format!(" compression algo {algo}\n")));
            // A sized body and a chunked one.
            for target in ["/?s=20000", "/?s=20000&chunked=1"] {
                let plain = px.get(target);
                assert_eq!(plain.header("content-encoding"), None);
                let r = px.get_with(target, &[&format!("Accept-Encoding: {accept}")]);
                assert_eq!(r.status, 200);
                assert_eq!(r.header("content-encoding"), Some(accept), "{algo} {target}");
                assert_eq!(r.header("content-length"), None);
                assert_eq!(r.header("transfer-encoding"), Some("chunked"));
                assert_eq!(r.header("vary"), Some("Accept-Encoding"));
                assert!(r.body.len() < plain.body.len() / 4, "{algo}: {} bytes", r.body.len());
                assert_eq!(inflate(&r.body, wbits), plain.body, "{algo} {target}");
                seen.push(comp_headers(&r));
            }
        }
        seen
    });
}

/// HAProxy 2.6's rules, case by case: `true` when the response came compressed.
#[test]
fn only_the_responses_haproxy_compresses_are_compressed() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " compression algo gzip deflate\n compression type text/\n"));
        let gz = "Accept-Encoding: gzip";
        let compressed = |req: &str| {
            let r = px.send(req.as_bytes());
            (r.status, r.header("content-encoding").map(str::to_string))
        };
        let get = |target: &str, extra: &[&str]| compressed(&get_with(target, extra));
        let cases = vec![
            ("plain", get("/?s=100", &[gz])),
            ("no accept-encoding", get("/?s=100", &[])),
            ("201", get("/?s=100&c=201", &[gz])),
            ("206", get("/?s=100&c=206", &[gz])),
            ("404", get("/?s=100&c=404", &[gz])),
            (
                "head",
                compressed(&format!(
                    "HEAD /?s=100 HTTP/1.1\r\nHost: t\r\n{gz}\r\nConnection: close\r\n\r\n"
                )),
            ),
            ("http/1.0", compressed(&format!("GET /?s=100 HTTP/1.0\r\n{gz}\r\n\r\n"))),
            ("until close", get("/?s=100&cl=none", &[gz])),
            ("encoded", get("/?s=100&hdr=Content-Encoding:br", &[gz])),
            ("no-transform", get("/?s=100&hdr=Cache-Control:%20private,%20no-transform", &[gz])),
            ("strong etag", get("/?s=100&hdr=ETag:%22v1%22", &[gz])),
            ("invalid etag", get("/?s=100&hdr=ETag:v1", &[gz])),
            ("two etags", get("/?s=100&hdr=ETag:%22a%22&hdr=ETag:%22b%22", &[gz])),
            ("q prefers deflate", get("/?s=100", &["Accept-Encoding: gzip;q=0.5, deflate"])),
            ("tie: client order", get("/?s=100", &["Accept-Encoding: deflate, gzip"])),
            ("q=0", get("/?s=100", &["Accept-Encoding: gzip;q=0"])),
            ("star", get("/?s=100", &["Accept-Encoding: *"])),
            ("unknown only", get("/?s=100", &["Accept-Encoding: br, zstd"])),
            (
                "old mozilla",
                get("/?s=100", &[gz, "User-Agent: Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)"]),
            ),
            (
                "msie 7",
                get(
                    "/?s=100",
                    &[gz, "User-Agent: Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)"],
                ),
            ),
        ];
        let want = |name: &str| match name {
            "plain" | "201" | "strong etag" | "msie 7" => Some("gzip"),
            "q prefers deflate" | "tie: client order" | "star" => Some("deflate"),
            // (The server's own encoding, left alone.)
            "encoded" => Some("br"),
            _ => None,
        };
        for (name, (_, got)) in &cases {
            assert_eq!(got.as_deref(), want(name), "{name}");
        }
        let r = px.get_with("/?s=100&hdr=ETag:%22v1%22", &[gz]);
        assert_eq!(r.header("etag"), Some("W/\"v1\""));
        cases
    });
}

/// `compression type` lists the types compressed (by prefix, without case); `offload` takes
/// `Accept-Encoding` away from the server.
#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn types_limit_what_is_compressed_and_offload_hides_accept_encoding_from_the_server() {
    each(|t| {
        let srv = server("s1");
        // (The server's answers are `text/plain`.)
        let px = t.start(&one(&srv, " compression algo gzip\n compression type text/html\n"));
        let gz = "Accept-Encoding: gzip";
        let plain_text = px.get_with("/?s=100", &[gz]);
        assert_eq!(plain_text.header("content-encoding"), None, "text/plain is not listed");
        let px = t.start(&one(&srv, " compression algo gzip\n compression type TEXT/PL\n"));
        let html = px.get_with("/?s=100", &[gz]);
        assert_eq!(html.header("content-encoding"), Some("gzip"), "a prefix, without case");
        let px = t.start(&one(&srv, " compression algo gzip\n compression offload\n"));
        let r = px.get_with("/echo", &[gz, "Accept-Encoding: br"]);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let at_server = |r: &Resp| Head::parse(&inflate(&r.body, 31)).expect("echoed head");
        assert_eq!(at_server(&r).all("accept-encoding"), Vec::<&str>::new(), "offloaded");
        let kept = t.start(&one(&srv, " compression algo gzip\n"));
        let r2 = kept.get_with("/echo", &[gz]);
        assert_eq!(at_server(&r2).all("accept-encoding"), ["gzip"]);
        comp_headers(&html)
    });
}

/// `show stat` through the runtime API socket `sock`.
fn show_stat(sock: &std::path::Path) -> String {
    use std::io::Read;
    let mut s = std::os::unix::net::UnixStream::connect(sock).expect("api socket");
    s.write_all(b"show stat\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

/// Field `name` of the (only) frontend's `show stat` row.
fn frontend_stat(sock: &std::path::Path, name: &str) -> String {
    let stat = show_stat(sock);
    let mut lines = stat.lines();
    let names: Vec<&str> =
        lines.next().expect("header").trim_start_matches("# ").split(',').collect();
    let fe: Vec<&str> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| r.get(1) == Some(&"FRONTEND"))
        .expect("frontend row");
    fe[names.iter().position(|x| *x == name).expect(name)].to_string()
}

/// The frontend's counters: responses compressed, bytes in and out.
#[test]
fn the_compression_counters_count() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "global\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             compression algo gzip\n default_backend be\nbackend be\n server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        for _ in 0..3 {
            let r = px.get_with("/?s=10000", &["Accept-Encoding: gzip"]);
            assert_eq!(r.header("content-encoding"), Some("gzip"));
        }
        let _ = px.get("/?s=10000");
        let sock = px.dir.join("api.sock");
        let at = |n: &str| frontend_stat(&sock, n);
        // (A response is counted once its last bytes went: its client may ask before.)
        let counted =
            crate::harness::eventually(std::time::Duration::from_secs(5), || at("comp_rsp") == "3");
        assert!(counted, "comp_rsp {}", at("comp_rsp"));
        assert_eq!(at("comp_rsp"), "3");
        assert_eq!(at("comp_in"), "30000");
        let out: u64 = at("comp_out").parse().expect("comp_out");
        assert!(out > 0 && out < 3000, "{out}");
        assert_eq!(at("comp_byp"), "0");
        (at("comp_rsp"), at("comp_in"), at("comp_byp"))
    });
}

/// HTTP/2 both ways: an HTTP/2 client's answer compressed into DATA frames, and an HTTP/2
/// server's answer (from its frames) compressed for an HTTP/1 client; each decoded back to
/// the plain answer.
#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn http2_clients_and_servers_get_and_give_compressed_bodies() {
    use crate::h2client::{h2c, H2Req};
    use crate::h2server::h2_server;
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(&srv, " compression algo gzip\n"));
        let reqs = [
            H2Req::get("/?s=20000"),
            H2Req::get("/?s=20000").header("accept-encoding", "gzip"),
            H2Req::get("/?s=20000&chunked=1").header("accept-encoding", "gzip"),
        ];
        let got = h2c(px.addr(), &reqs).expect("HTTP/2 exchange");
        assert_eq!(got[0].header("content-encoding"), None);
        for r in &got[1..] {
            assert_eq!(r.header("content-encoding"), Some("gzip"));
            assert_eq!(r.header("content-length"), None);
            assert_eq!(r.header("transfer-encoding"), None, "not on HTTP/2");
            assert_eq!(inflate(&r.body, 31), got[0].body);
        }
        let up = h2_server();
        let cfg = format!(
            "global\n nbthread 1\n{DEFAULTS}listen px\n bind {{fe0}}\n compression algo gzip\n\
             server s1 {} proto h2\n",
            up.addr
        );
        let px = t.start(&cfg);
        let plain = px.get("/x?s=5000");
        let r = px.get_with("/x?s=5000", &["Accept-Encoding: gzip"]);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(inflate(&r.body, 31), plain.body);
        (got.len(), r.header("content-encoding").map(str::to_string))
    });
}

/// `res.comp` and `res.comp_algo` in the response rules: decided before they run.
#[test]
fn res_comp_and_res_comp_algo_tell_the_response_rules() {
    each(|t| {
        let srv = server("s1");
        let px = t.start(&one(
            &srv,
            " compression algo raw-deflate gzip\n\
             http-response set-header X-Comp %[res.comp]\n\
             http-response set-header X-Algo %[res.comp_algo] if { res.comp }\n",
        ));
        let tell = |r: Resp| {
            (r.header("x-comp").map(str::to_string), r.header("x-algo").map(str::to_string))
        };
        let gz = tell(px.get_with("/?s=100", &["Accept-Encoding: gzip"]));
        let raw = tell(px.get_with("/?s=100", &["Accept-Encoding: deflate"]));
        let none = tell(px.get("/?s=100"));
        let head = tell(px.send(b"HEAD /?s=100 HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"));
        assert_eq!(gz, (Some("1".into()), Some("gzip".into())));
        assert_eq!(raw, (Some("1".into()), Some("raw-deflate".into())));
        assert_eq!(none, (Some("0".into()), None));
        assert_eq!(head, (Some("0".into()), None));
        (gz, raw, none, head)
    });
}

/// zstd and brotli, Fulcrum's own (HAProxy 2.6 refuses them): chosen by q-value, equal ones
/// going to the configuration's first (browsers list gzip first: HAProxy's rule would always
/// take it), and each answer decoded by curl (libzstd, libbrotli) back to the plain body.
#[test]
#[cfg_attr(no_curl, ignore = "curl is missing (see crates/fulcrum/build.rs)")]
fn zstd_and_brotli_are_chosen_by_q_then_configuration_order_and_decode() {
    let srv = server("s1");
    let px = Target::Fulcrum.start(&one(&srv, " compression algo zstd br gzip\n"));
    let target = "/?s=30000&chunked=1";
    let plain = px.get(target).body;
    let url = format!("http://{}{target}", px.addr());
    for (accept, want) in [
        ("gzip, deflate, br, zstd", "zstd"),
        ("gzip, deflate, br", "br"),
        ("gzip;q=1, zstd;q=0.5", "gzip"),
        ("br;q=0.9, gzip;q=0.9", "br"),
    ] {
        let r = px.get_with(target, &[&format!("Accept-Encoding: {accept}")]);
        assert_eq!(r.header("content-encoding"), Some(want), "{accept}");
        assert!(r.body.len() < plain.len() / 4, "{want}: {} bytes", r.body.len());
        let out = std::process::Command::new("curl")
            .args(["-s", "--compressed", "-H", &format!("Accept-Encoding: {want}"), &url])
            .output()
            .expect("curl");
        assert!(out.status.success(), "curl {want}");
        assert_eq!(out.stdout, plain, "{want} decodes to the plain body");
    }
}

/// `maxcomprate` (kB/s into the compressor, the process's): past it, a response begins plain.
#[test]
fn maxcomprate_leaves_responses_plain_once_the_rate_is_reached() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "global\n maxcomprate 50\n{DEFAULTS}listen px\n bind {{fe0}}\n compression algo gzip\n\
             server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        let gz = "Accept-Encoding: gzip";
        let first = px.get_with("/?s=200000", &[gz]);
        assert_eq!(first.header("content-encoding"), Some("gzip"), "below the rate");
        let second = px.get_with("/?s=1000", &[gz]);
        assert_eq!(second.header("content-encoding"), None, "200 kB in the last second");
        (first.header("content-encoding").map(str::to_string), second.status)
    });
}

/// `maxcomprate` on a response under way (HAProxy's `deflate_flush_or_finish()`): once the
/// compressors' output rate passes the limit, each block goes one level down, here to level 0
/// (stored blocks, counted as bypassed); the answer still decodes to the original.
#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn maxcomprate_lowers_the_level_of_a_response_under_way() {
    const SIZE: usize = 400_000;
    each(|t| {
        let body = noise(SIZE);
        let b = body.clone();
        let (at, server) = origin_once::<SIZE>(move |mut s| {
            for part in b.chunks(16 * 1024) {
                let _ = s.write_all(part);
            }
        });
        let cfg = format!(
            "global\n maxcomprate 50\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}\
             frontend fe\n bind {{fe0}}\n compression algo gzip\n default_backend be\n\
             backend be\n server s1 {at}\n"
        );
        let px = t.start(&cfg);
        let r = Client::connect(px.addr()).request(
            b"GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
        );
        server.join().expect("origin");
        assert_eq!(r.header("content-encoding"), Some("gzip"), "below the rate as it began");
        assert!(inflate(&r.body, 31) == body, "the answer decodes to the original");
        let sock = px.dir.join("api.sock");
        let at = |n: &str| -> u64 { frontend_stat(&sock, n).parse().expect(n) };
        let counted =
            crate::harness::eventually(std::time::Duration::from_secs(5), || at("comp_rsp") == 1);
        assert!(counted, "comp_rsp {}", at("comp_rsp"));
        let (comp_in, byp) = (at("comp_in"), at("comp_byp"));
        assert_eq!(comp_in + byp, SIZE as u64, "every byte counted once");
        assert!(comp_in > 0 && comp_in < SIZE as u64 / 2, "compressed until the limit: {comp_in}");
        let info = crate::harness::api(&sock, "show info");
        let lim = info.lines().find_map(|l| l.strip_prefix("CompressBpsRateLim: "));
        assert_eq!(lim.map(str::trim), Some("51200"), "{info}");
        (r.header("content-encoding").map(str::to_string), byp > 0)
    });
}

/// `maxcompcpuusage`: no compression begins while the worker's idle share of the last second
/// is under 100 minus the value. At 0 (any work at all is too much) compression stops once
/// the first second was measured, at 100 it never does; `show info` tells the idle share.
#[test]
fn maxcompcpuusage_stops_compression_when_the_worker_is_busier_than_it_allows() {
    each(|t| {
        let srv = server("s1");
        let cfg = |usage: u32| {
            format!(
                "global\n nbthread 1\n maxcompcpuusage {usage}\n stats socket {{dir}}/api.sock level admin\n\
                 {DEFAULTS}listen px\n bind {{fe0}}\n compression algo gzip\n server s1 {}\n",
                srv.addr()
            )
        };
        let gz = ["Accept-Encoding: gzip"];
        let zipped =
            |px: &Px| px.get_with("/?s=2000", &gz).header("content-encoding") == Some("gzip");
        let busy = t.start(&cfg(0));
        let stopped = eventually(std::time::Duration::from_secs(6), || !zipped(&busy));
        assert!(stopped, "maxcompcpuusage 0: compression stops once the idle share is measured");
        let info = crate::harness::api(&busy.dir.join("api.sock"), "show info");
        let idle: u32 = info
            .lines()
            .find_map(|l| l.strip_prefix("Idle_pct: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{info}"));
        assert!(idle <= 100, "{info}");
        let free = t.start(&cfg(100));
        let always = (0..5).all(|_| zipped(&free));
        assert!(always, "maxcompcpuusage 100: no limit");
        (stopped, always)
    });
}

/// `res.comp` and `res.comp_algo` in a log format: the response's compression as it was
/// decided (not what the request accepted: an answer the proxy made logs no compression).
#[test]
fn res_comp_and_res_comp_algo_in_the_log_line() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "global\n log stderr format raw local0\n{DEFAULTS} log global\n\
             log-format \"LOGGED %HU comp=%[res.comp] algo=%[res.comp_algo]\"\n\
             listen px\n bind {{fe0}}\n compression algo gzip\n\
             http-request deny deny_status 503 if {{ path_beg /denied }}\n server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        let gz = ["Accept-Encoding: gzip"];
        assert_eq!(px.get_with("/zipped?s=2000", &gz).header("content-encoding"), Some("gzip"));
        assert_eq!(px.get("/plain?s=2000").header("content-encoding"), None);
        assert_eq!(px.get_with("/denied", &gz).status, 503);
        // (Under `-d`, Fulcrum echoes each line on stderr besides its target: one of each.)
        let lines = || -> Vec<String> {
            let log = px.log();
            let mut v: Vec<String> =
                log.lines().filter_map(|l| l.find("LOGGED ").map(|i| l[i..].to_string())).collect();
            v.sort();
            v.dedup();
            v
        };
        let enough = eventually(std::time::Duration::from_secs(5), || lines().len() >= 3);
        assert!(enough, "{}", px.log());
        lines()
    });
}

/// `n` bytes no compressor can shrink (a xorshift stream), the same for the same `n`.
fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// An origin for one request: it reads the request's head, answers a plain-text head whose
/// `Content-Length` is the body's `SIZE`, then lets `body` write the body.
fn origin_once<const SIZE: usize>(
    body: impl FnOnce(std::net::TcpStream) + Send + 'static,
) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use std::io::Read;
    let origin = std::net::TcpListener::bind("127.0.0.1:0").expect("bind origin");
    let at = origin.local_addr().expect("origin address");
    let server = std::thread::spawn(move || {
        let (mut s, _) = origin.accept().expect("the proxy connects");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let h = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {SIZE}\r\n\r\n"
        );
        let _ = s.write_all(h.as_bytes());
        body(s);
    });
    (at, server)
}

/// A chunked body's data (the bytes after the head), its chunks joined.
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").expect("a chunk-size line");
        let size = std::str::from_utf8(&b[..eol]).expect("ascii");
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .expect("a chunk size");
        b = &b[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// A slow client of a large compressed answer (issue 38 §5): the proxy compresses as the
/// client reads, holding the server back meanwhile (it never reads the whole body first), and
/// every byte arrives. The body cannot be compressed, so what the client has not read is as
/// large as what the server could not write yet.
#[test]
#[cfg_attr(no_python_zlib, ignore = "Python's zlib is missing (see crates/fulcrum/build.rs)")]
fn a_slow_client_of_a_compressed_body_holds_the_server_back() {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    const SIZE: usize = 64 << 20;
    each(|t| {
        let body = Arc::new(noise(SIZE));
        let written = Arc::new(AtomicUsize::new(0));
        let (w, b) = (Arc::clone(&written), Arc::clone(&body));
        let (at, server) = origin_once::<SIZE>(move |mut s| {
            for part in b.chunks(64 * 1024) {
                if s.write_all(part).is_err() {
                    return;
                }
                w.fetch_add(part.len(), Ordering::Relaxed);
            }
        });
        let px = t.start(&listen(&format!(" compression algo gzip\n server s1 {at}\n")));
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        sock.set_recv_buffer_size(64 * 1024).expect("SO_RCVBUF");
        sock.connect(&px.addr().into()).expect("connect");
        let mut c: std::net::TcpStream = sock.into();
        c.write_all(
            b"GET /big HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
        )
        .expect("request");
        let mut got = vec![0u8; 16 * 1024];
        c.read_exact(&mut got).expect("the answer begins");
        // The client stalls: the server's writes stop once the buffers on the way are full.
        let mut last = usize::MAX;
        let settled = eventually(std::time::Duration::from_secs(20), || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let now = written.load(Ordering::Relaxed);
            std::mem::replace(&mut last, now) == now
        });
        let held = written.load(Ordering::Relaxed);
        eprintln!("the server wrote {held} of {SIZE} bytes while the client stalled");
        assert!(settled && held < SIZE / 4, "the server wrote {held} of {SIZE} bytes");
        c.read_to_end(&mut got).expect("the rest of the answer");
        server.join().expect("origin");
        let split = got.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
        let head = String::from_utf8_lossy(&got[..split]).to_ascii_lowercase();
        assert!(head.contains("content-encoding: gzip"), "{head}");
        let plain = inflate(&dechunk(&got[split..]), 31);
        assert!(plain == *body, "{} bytes decoded, not the body", plain.len());
        (held < SIZE / 4, plain.len())
    });
}
