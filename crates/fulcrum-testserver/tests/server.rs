//! Black-box checks of the running server with raw blocking `TcpStream` clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use fulcrum_testserver::{http::BODY_LINE, spawn, Counts, Mode, Options, Running};

const TIMEOUT: Duration = Duration::from_secs(5);

fn server(mode: Mode, threads: usize) -> Running {
    let opts = Options {
        listen: vec!["127.0.0.1:0".parse().expect("addr")],
        name: "srv1".into(),
        threads,
        mode,
        quiet: true,
    };
    spawn(opts).expect("spawn")
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    s.set_write_timeout(Some(TIMEOUT)).expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

#[derive(Debug)]
struct Response {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads one response; `head_only` for answers to HEAD.
fn read_response(r: &mut BufReader<TcpStream>, head_only: bool) -> Response {
    let mut line = String::new();
    r.read_line(&mut line).expect("status line");
    let mut parts = line.split(' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {line:?}");
    let code = parts.next().expect("code").parse().expect("numeric code");
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("header line");
        let l = line.trim_end_matches("\r\n");
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(": ").expect("header format");
        headers.push((n.to_string(), v.to_string()));
    }
    let mut resp = Response { code, headers, body: Vec::new() };
    if head_only || code < 200 || code == 204 || code == 304 {
        return resp;
    }
    if resp.header("Transfer-Encoding") == Some("chunked") {
        loop {
            line.clear();
            r.read_line(&mut line).expect("chunk size");
            let size = usize::from_str_radix(line.trim_end(), 16).expect("hex size");
            if size == 0 {
                loop {
                    line.clear();
                    r.read_line(&mut line).expect("trailer");
                    if line == "\r\n" {
                        return resp;
                    }
                    let (n, v) = line.trim_end().split_once(": ").expect("trailer format");
                    resp.headers.push((format!("trailer:{n}"), v.to_string()));
                }
            }
            let at = resp.body.len();
            resp.body.resize(at + size + 2, 0);
            r.read_exact(&mut resp.body[at..]).expect("chunk");
            assert_eq!(&resp.body[at + size..], b"\r\n");
            resp.body.truncate(at + size);
        }
    }
    match resp.header("Content-Length") {
        Some(v) => {
            resp.body.resize(v.parse().expect("length"), 0);
            r.read_exact(&mut resp.body).expect("body");
        }
        None => {
            r.read_to_end(&mut resp.body).expect("close-delimited body");
        }
    }
    resp
}

/// Asserts that the peer closes the connection (EOF) with nothing more to read.
fn assert_closed(r: &mut BufReader<TcpStream>) {
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).expect("read to EOF");
    assert!(rest.is_empty(), "unexpected bytes after close: {rest:?}");
}

fn get(addr: SocketAddr, target: &str) -> Response {
    let s = connect(addr);
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let req = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    (&s).write_all(req.as_bytes()).expect("write");
    let resp = read_response(&mut r, false);
    assert_closed(&mut r);
    resp
}

#[test]
fn status_size_and_name() {
    let srv = server(Mode::Http, 1);
    let resp = get(srv.addr(), "/");
    assert_eq!(resp.code, 200);
    assert_eq!(resp.header("X-Server"), Some("srv1"));
    assert_eq!(resp.header("Content-Type"), Some("text/plain"));
    assert_eq!(resp.header("Content-Length"), Some("0"));
    assert_eq!(resp.header("Connection"), Some("close"));

    let resp = get(srv.addr(), "/x?s=1k&c=404");
    assert_eq!(resp.code, 404);
    assert_eq!(resp.body.len(), 1024);
    assert!(resp.body.iter().enumerate().all(|(i, &b)| b == BODY_LINE[i % 64]));

    // Larger than the write batch: head + inline part, then streamed from the filler.
    let resp = get(srv.addr(), "/?s=300001");
    assert_eq!(resp.body.len(), 300_001);
    assert!(resp.body.iter().enumerate().all(|(i, &b)| b == BODY_LINE[i % 64]));

    assert_eq!(get(srv.addr(), "/?c=503").code, 503);
    assert_eq!(get(srv.addr(), "/?c=204").header("Content-Length"), None);
    assert_eq!(get(srv.addr(), "/?s=bogus").code, 400);
    srv.stop();
}

#[test]
fn keep_alive_100_requests() {
    let srv = server(Mode::Http, 2);
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    for i in 0..100 {
        let req = format!("GET /?s={i} HTTP/1.1\r\nHost: x\r\n\r\n");
        (&s).write_all(req.as_bytes()).expect("write");
        let resp = read_response(&mut r, false);
        assert_eq!(resp.code, 200);
        assert_eq!(resp.body.len(), i);
        assert_eq!(resp.header("Connection"), None);
    }
    // HEAD: same headers, no body, connection still usable.
    (&s).write_all(b"HEAD /?s=77 HTTP/1.1\r\n\r\nGET /?s=3 HTTP/1.1\r\n\r\n").expect("write");
    let head = read_response(&mut r, true);
    assert_eq!(head.header("Content-Length"), Some("77"));
    assert_eq!(read_response(&mut r, false).body.len(), 3);
}

#[test]
fn pipelining_10_in_one_write() {
    let srv = server(Mode::Http, 1);
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut batch = String::new();
    for i in 0..10 {
        if i == 4 {
            // A request body in the middle of the pipeline must be skipped, not parsed.
            batch.push_str("POST /?c=201 HTTP/1.1\r\nContent-Length: 4\r\n\r\nGET ");
        } else if i == 6 {
            batch.push_str(
                "POST /?c=202 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
            );
        } else {
            batch.push_str(&format!("GET /?s={i}&c={} HTTP/1.1\r\nHost: x\r\n\r\n", 200 + i));
        }
    }
    (&s).write_all(batch.as_bytes()).expect("write");
    for i in 0..10 {
        let resp = read_response(&mut r, false);
        match i {
            4 => assert_eq!(resp.code, 201),
            6 => assert_eq!(resp.code, 202),
            _ => {
                assert_eq!(resp.code, 200 + i as u16);
                assert_eq!(resp.body.len(), i);
            }
        }
    }
}

#[test]
fn connection_close_and_k0() {
    let srv = server(Mode::Http, 1);
    for req in [
        "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
        "GET /?k=0 HTTP/1.1\r\n\r\n",
        // Anything after a closing request is ignored.
        "GET /?k=0 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    ] {
        let s = connect(srv.addr());
        let mut r = BufReader::new(s.try_clone().expect("clone"));
        (&s).write_all(req.as_bytes()).expect("write");
        let resp = read_response(&mut r, false);
        assert_eq!(resp.header("Connection"), Some("close"), "{req:?}");
        assert_closed(&mut r);
    }
}

#[test]
fn http10() {
    let srv = server(Mode::Http, 1);
    // Without keep-alive: closed after the answer.
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    (&s).write_all(b"GET /?s=5 HTTP/1.0\r\n\r\n").expect("write");
    let resp = read_response(&mut r, false);
    assert_eq!((resp.code, resp.body.len()), (200, 5));
    assert_eq!(resp.header("Connection"), Some("close"));
    assert_closed(&mut r);

    // With keep-alive: stays open and says so.
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    for _ in 0..3 {
        (&s).write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").expect("write");
        let resp = read_response(&mut r, false);
        assert_eq!(resp.header("Connection"), Some("keep-alive"));
    }
}

#[test]
fn garbage_gets_400_and_close() {
    let srv = server(Mode::Http, 1);
    for req in [&b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"[..], b"HELLO\r\n\r\n"] {
        let s = connect(srv.addr());
        let mut r = BufReader::new(s.try_clone().expect("clone"));
        (&s).write_all(req).expect("write");
        let resp = read_response(&mut r, false);
        assert_eq!(resp.code, 400);
        assert_eq!(resp.header("Connection"), Some("close"));
        assert_closed(&mut r);
    }
    // An oversized head.
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut req = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
    req.resize(20_000, b'a');
    (&s).write_all(&req).expect("write");
    assert_eq!(read_response(&mut r, false).code, 431);
    assert_closed(&mut r);
}

#[test]
fn delay() {
    let srv = server(Mode::Http, 1);
    let t0 = Instant::now();
    assert_eq!(get(srv.addr(), "/?t=200").code, 200);
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(3), "{took:?}");
    let t0 = Instant::now();
    get(srv.addr(), "/?t=100000us");
    assert!(t0.elapsed() >= Duration::from_millis(100));
}

#[test]
fn echo_with_half_close() {
    let srv = server(Mode::Echo, 2);
    let s = connect(srv.addr());
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    // Write from another thread so a full socket buffer cannot deadlock the test.
    let writer = {
        let s = s.try_clone().expect("clone");
        let data = data.clone();
        std::thread::spawn(move || {
            (&s).write_all(&data).expect("write");
            s.shutdown(Shutdown::Write).expect("half-close");
        })
    };
    let mut got = Vec::new();
    (&s).read_to_end(&mut got).expect("read echo until EOF");
    writer.join().expect("writer");
    assert_eq!(got.len(), data.len());
    assert!(got == data);
}

#[test]
fn sink_never_writes() {
    let srv = server(Mode::Sink, 1);
    let s = connect(srv.addr());
    (&s).write_all(&[b'x'; 100_000]).expect("write");
    s.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    let mut buf = [0u8; 16];
    let e = (&s).read(&mut buf).expect_err("sink must not answer");
    assert!(matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
    // On our EOF the sink closes its side.
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    s.shutdown(Shutdown::Write).expect("half-close");
    assert_eq!((&s).read(&mut buf).expect("EOF"), 0);
}

#[test]
fn threads_share_port_and_stop_closes() {
    let srv = server(Mode::Http, 3);
    let addr = srv.addr();
    assert_ne!(addr.port(), 0);
    for _ in 0..20 {
        assert_eq!(get(addr, "/").code, 200);
    }
    let idle = connect(addr);
    srv.stop();
    // After stop, existing connections are closed and the port refuses new ones.
    let mut buf = [0u8; 1];
    assert!(matches!((&idle).read(&mut buf), Ok(0) | Err(_)));
    assert!(TcpStream::connect(addr).is_err());
}

/// Sends `req` on a new connection and reads one answer.
fn exchange(addr: SocketAddr, req: &[u8]) -> (Response, BufReader<TcpStream>) {
    let s = connect(addr);
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    (&s).write_all(req).expect("write");
    (read_response(&mut r, false), r)
}

fn raw_answer(addr: SocketAddr, req: &[u8]) -> Vec<u8> {
    let mut s = connect(addr);
    s.write_all(req).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn echo_head_all_and_body() {
    let srv = server(Mode::Http, 1);
    let head = b"GET /echo HTTP/1.1\r\nHost: x\r\nX-Odd:  spaced \r\n\r\n";
    let (resp, _) = exchange(srv.addr(), head);
    assert_eq!(resp.body, head);
    let req: &[u8] = b"POST /?echo=all HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
        3\r\nabc\r\n0\r\nT: 1\r\n\r\n";
    assert_eq!(exchange(srv.addr(), req).0.body, req);
    let req: &[u8] = b"POST /?echo=body&bodyinfo=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
        3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let (resp, _) = exchange(srv.addr(), req);
    assert_eq!(resp.body, b"abcde");
    assert_eq!(resp.header("X-Body-Len"), Some("5"));
    let req = b"PUT /?bodyinfo=1 HTTP/1.1\r\nContent-Length: 1\r\n\r\na";
    assert_eq!(exchange(srv.addr(), req).0.header("X-Body-Sum"), Some("af63dc4c8601ec8c"));
}

#[test]
fn chunked_trailers_close_delimited_and_extra_headers() {
    let srv = server(Mode::Http, 1);
    let (resp, _) = exchange(srv.addr(), b"GET /?s=10000&chunked=1 HTTP/1.1\r\n\r\n");
    assert_eq!(resp.header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(resp.header("Content-Length"), None);
    assert_eq!(resp.body.len(), 10_000);
    assert!(resp.body.iter().enumerate().all(|(i, &b)| b == BODY_LINE[i % 64]));
    let (resp, _) = exchange(srv.addr(), b"GET /?s=5&trailers=1 HTTP/1.1\r\n\r\n");
    assert_eq!(resp.header("Trailer"), Some("X-Trailer"));
    assert_eq!(resp.header("trailer:X-Trailer"), Some("done"));
    // Close-delimited: no length, no chunks, the connection ends the body.
    let (resp, _) = exchange(srv.addr(), b"GET /?s=3000&cl=none HTTP/1.1\r\n\r\n");
    assert_eq!((resp.header("Content-Length"), resp.body.len()), (None, 3000));
    assert_eq!(resp.header("Connection"), Some("close"));
    let (resp, _) =
        exchange(srv.addr(), b"GET /?hdr=X-A:%201&setcookie=S=1&setcookie=T=2 HTTP/1.1\r\n\r\n");
    assert_eq!(resp.header("X-A"), Some("1"));
    let cookies: Vec<_> = resp.headers.iter().filter(|(n, _)| n == "Set-Cookie").collect();
    assert_eq!(cookies.len(), 2);
}

#[test]
fn interim_answers_and_100_continue() {
    let srv = server(Mode::Http, 1);
    let s = connect(srv.addr());
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    (&s).write_all(b"GET /?info=103&s=2 HTTP/1.1\r\n\r\n").expect("write");
    let early = read_response(&mut r, false);
    assert_eq!((early.code, early.header("Link")), (103, Some("</style.css>; rel=preload")));
    assert_eq!(read_response(&mut r, false).body.len(), 2);
    // 100 Continue comes after the head, before the body is sent.
    (&s).write_all(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        .expect("write");
    assert_eq!(read_response(&mut r, false).code, 100);
    (&s).write_all(b"ok").expect("write");
    assert_eq!(read_response(&mut r, false).code, 200);
    // continue=0: the server waits for the body without inviting it.
    (&s).write_all(
        b"POST /?continue=0 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
    )
    .expect("write");
    assert_eq!(read_response(&mut r, false).code, 200);
}

#[test]
fn drop_closes_silently() {
    let srv = server(Mode::Http, 1);
    let (resp, mut r) = exchange(srv.addr(), b"GET /?drop=1 HTTP/1.1\r\n\r\n");
    assert_eq!((resp.code, resp.header("Connection")), (200, None));
    assert_closed(&mut r);
    let (resp, mut r) = exchange(srv.addr(), b"GET /?drop=next HTTP/1.1\r\n\r\n");
    assert_eq!(resp.code, 200);
    r.get_ref().write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
    assert_closed(&mut r);
}

#[test]
fn bad_answers() {
    let srv = server(Mode::Http, 1);
    let get = |kind: &str| {
        raw_answer(srv.addr(), format!("GET /?bad={kind} HTTP/1.1\r\n\r\n").as_bytes())
    };
    assert_eq!(get("status"), b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(get("truncated"), b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
    assert_eq!(get("empty"), b"");
    assert_eq!(get("partial"), b"HTTP/1.1 200 OK\r\nContent-Le");
    // reset: an RST, seen as a reset or an empty read.
    let mut s = connect(srv.addr());
    s.write_all(b"GET /?bad=reset HTTP/1.1\r\n\r\n").expect("write");
    let mut buf = [0u8; 16];
    assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)));
}

#[test]
fn websocket_and_connect_become_echo_tunnels() {
    let srv = server(Mode::Http, 1);
    for req in [
        &b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
           Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nearly"[..],
        b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nearly",
    ] {
        let s = connect(srv.addr());
        let mut r = BufReader::new(s.try_clone().expect("clone"));
        (&s).write_all(req).expect("write");
        // A 2xx answer to CONNECT has no body: read the head only.
        let resp = read_response(&mut r, true);
        let expect = if req.starts_with(b"GET") { 101 } else { 200 };
        assert_eq!(resp.code, expect);
        if expect == 101 {
            assert_eq!(resp.header("Sec-WebSocket-Accept"), Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        }
        let mut back = [0u8; 5];
        r.read_exact(&mut back).expect("early bytes echoed");
        assert_eq!(&back, b"early");
        r.get_ref().write_all(b"\x00binary\xff").expect("write");
        let mut back = [0u8; 8];
        r.read_exact(&mut back).expect("echo");
        assert_eq!(&back, b"\x00binary\xff");
        r.get_ref().shutdown(Shutdown::Write).expect("half-close");
        assert_closed(&mut r);
    }
}

#[test]
fn counters_count_what_arrived_but_not_the_stats_connection() {
    let srv = server(Mode::Http, 2);
    assert_eq!(srv.counts(), Counts::default());
    let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let (_, mut r) = exchange(srv.addr(), req);
    read_response(&mut r, false);
    let idle = connect(srv.addr());
    (&idle).write_all(b"GET /x").expect("write");
    let deadline = Instant::now() + TIMEOUT;
    while srv.counts().bytes < req.len() as u64 + 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        srv.counts(),
        Counts { conns: 2, closed: 0, requests: 2, bytes: req.len() as u64 + 6 }
    );
    drop(r);
    let deadline = Instant::now() + TIMEOUT;
    while srv.counts().closed < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(srv.counts().open(), 1);
    let (resp, _) = exchange(srv.addr(), b"GET /__stats HTTP/1.1\r\nConnection: close\r\n\r\n");
    let expected = format!("conns 2\nclosed 1\nrequests 2\nbytes {}\n", req.len() + 6);
    assert_eq!(String::from_utf8_lossy(&resp.body), expected);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        (srv.counts().conns, srv.counts().closed),
        (2, 1),
        "the stats connection is not counted"
    );
    // Sink mode counts bytes too.
    let sink = server(Mode::Sink, 1);
    let s = connect(sink.addr());
    (&s).write_all(&[b'x'; 1000]).expect("write");
    let deadline = Instant::now() + TIMEOUT;
    while sink.counts().bytes < 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sink.counts(), Counts { conns: 1, closed: 0, requests: 0, bytes: 1000 });
}
