//! The known HTTP/2 denial-of-service shapes not covered in `h2.rs` (rapid reset, CONTINUATION
//! and PING floods are there), each mounted on raw frames against the proxy beside HAProxy:
//! the proxy stays up, its memory bounded, and the next client is answered.
//!
//! - SETTINGS flood (CVE-2019-9515): SETTINGS frames sent without reading their ACKs;
//! - zero-window stall (CVE-2019-9517 style): a window of 0 and a large answer asked for, the
//!   window never opened: the stream stays stalled, bounded, until `timeout client`;
//! - stream-id exhaustion: the last stream id (2^31 - 1) used at once, then an id going back;
//! - idle connections: what each holds once its request is answered (buffers given back).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::h2client::{h2c, H2Req};
use crate::px::*;

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The preface and an empty SETTINGS frame, then `rest`.
fn open(px: &Px, rest: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(px.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(0x4, 0, 0, &[]));
    out.extend_from_slice(rest);
    let _ = s.write_all(&out);
    s
}

/// A GET of `path` on `stream` (HPACK: :method GET, :scheme http, a literal :path, END_HEADERS
/// and END_STREAM).
fn get(stream: u32, path: &str) -> Vec<u8> {
    let mut block = vec![0x82, 0x86, 0x04, path.len() as u8];
    block.extend_from_slice(path.as_bytes());
    frame(0x1, 0x5, stream, &block)
}

/// Frames read until the connection ends (or `within` passes): (type, length, stream) each.
fn frames_until_closed(s: &mut TcpStream, within: Duration) -> (Vec<(u8, usize, u32)>, bool) {
    let end = Instant::now() + within;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut closed = false;
    while Instant::now() < end {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => {
                closed = true;
                break;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i + 9 <= buf.len() {
        let len = (buf[i] as usize) << 16 | (buf[i + 1] as usize) << 8 | buf[i + 2] as usize;
        let id = u32::from_be_bytes([buf[i + 5], buf[i + 6], buf[i + 7], buf[i + 8]]) & 0x7fff_ffff;
        out.push((buf[i + 3], len, id));
        i += 9 + len;
    }
    (out, closed)
}

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("kB value")
}

#[test]
fn a_settings_flood_is_bounded_and_the_proxy_serves_on() {
    each(|t| {
        let px = t.start(&listen(" http-request return status 200\n"));
        // 100,000 SETTINGS frames (each asks for an ACK), none of the ACKs read.
        let mut flood = Vec::new();
        for _ in 0..100_000 {
            flood.extend(frame(0x4, 0, 0, &[0x00, 0x03, 0x00, 0x00, 0x00, 0x64]));
        }
        let mut s = open(&px, &[]);
        s.set_write_timeout(Some(Duration::from_secs(5))).expect("timeout");
        // The proxy may stop reading, or close, before all of it is written.
        let _ = s.write_all(&flood);
        let after = h2c(px.addr(), &[H2Req::get("/")]).map(|r| r[0].status);
        assert_eq!(after, Ok(200));
        if !t.is_haproxy() {
            let peak = peak_rss_kb(px.proc.pid());
            assert!(peak < 64 << 10, "peak resident memory {peak} kB");
        }
        after
    });
}

#[test]
fn a_zero_window_stalls_only_its_own_stream_until_timeout_client() {
    // The client announces a window of 0 and asks for 1 MB: nothing of the body can be sent.
    // Other clients are served meanwhile; the proxy holds at most a window's worth and what
    // one read brings (not the megabyte), and `timeout client` ends the stalled connection.
    each(|t| {
        let srv = server("s1");
        let px = t.start(&format!(
            "defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 5s\n\
             listen px\n bind {{fe0}}\n server s1 {}\n",
            srv.addr()
        ));
        // SETTINGS_INITIAL_WINDOW_SIZE = 0.
        let zero = frame(0x4, 0, 0, &[0x00, 0x04, 0x00, 0x00, 0x00, 0x00]);
        let mut s = open(&px, &[zero, get(1, "/?s=1m")].concat());
        let others = h2c(px.addr(), &[H2Req::get("/?s=10"), H2Req::get("/?s=20")])
            .map(|r| r.iter().map(|r| (r.status, r.body.len())).collect::<Vec<_>>());
        let started = Instant::now();
        let (frames, closed) = frames_until_closed(&mut s, Duration::from_secs(8));
        let waited = started.elapsed();
        // The answer's HEADERS went, no data (the window is 0; HAProxy ends the stream with an
        // empty DATA frame), then the connection ended.
        let headers = frames.iter().any(|&(ty, _, id)| ty == 0x1 && id == 1);
        let data = frames.iter().any(|&(ty, len, id)| ty == 0x0 && id == 1 && len > 0);
        assert_eq!(others, Ok(vec![(200, 10), (200, 20)]));
        assert!(headers && !data, "{frames:?}");
        assert!(closed && waited < Duration::from_secs(6), "closed {closed} after {waited:?}");
        if !t.is_haproxy() {
            let peak = peak_rss_kb(px.proc.pid());
            assert!(peak < 40 << 10, "peak resident memory {peak} kB");
        }
        (others, headers, data, closed)
    });
}

#[test]
fn the_last_stream_id_is_served_and_an_id_going_back_ends_the_connection() {
    each(|t| {
        let px = t.start(&listen(" http-request return status 200\n"));
        // Stream 2^31 - 1 at once (ids only have to grow), then stream 3: a protocol error.
        let last = 0x7fff_ffff;
        let mut s = open(&px, &get(last, "/"));
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut chunk = [0u8; 4096];
        // Until the answer's HEADERS on the last stream id.
        let answered = loop {
            if Instant::now() > deadline {
                break false;
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => break false,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
            let mut i = 0;
            let mut found = false;
            while i + 9 <= got.len() {
                let len =
                    (got[i] as usize) << 16 | (got[i + 1] as usize) << 8 | got[i + 2] as usize;
                let id = u32::from_be_bytes([got[i + 5], got[i + 6], got[i + 7], got[i + 8]]);
                found |= got[i + 3] == 0x1 && id == last;
                i += 9 + len;
            }
            if found {
                break true;
            }
        };
        let _ = s.write_all(&get(3, "/"));
        let (frames, closed) = frames_until_closed(&mut s, Duration::from_secs(5));
        let goaway = frames.iter().any(|&(ty, _, _)| ty == 0x7);
        let after = h2c(px.addr(), &[H2Req::get("/")]).map(|r| r[0].status);
        assert!(answered);
        assert!(goaway && closed, "{frames:?} closed {closed}");
        assert_eq!(after, Ok(200));
        (answered, goaway, after)
    });
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("kB value")
}

/// A connection that made one request (`GET /` on stream 1) and read its whole answer.
fn after_one_request(px: &Px) -> TcpStream {
    let mut s = open(px, &get(1, "/"));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut i = 0;
        while i + 9 <= buf.len() {
            let len = (buf[i] as usize) << 16 | (buf[i + 1] as usize) << 8 | buf[i + 2] as usize;
            let id = u32::from_be_bytes([buf[i + 5], buf[i + 6], buf[i + 7], buf[i + 8]]);
            // HEADERS or DATA ending stream 1.
            if id == 1 && buf[i + 3] <= 0x1 && buf[i + 4] & 0x1 != 0 {
                return s;
            }
            i += 9 + len;
        }
        match s.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            r => panic!("no answer: {r:?}"),
        }
    }
}

#[test]
fn idle_connections_give_their_buffers_back() {
    // Browsers keep their HTTP/2 connections open between pages: an idle connection must not
    // keep the buffers its frames went through. The h2 crate as published kept 16 kB (write),
    // 8 kB (read) and 4 kB (HPACK) per connection for good: about 24 kB resident each here
    // after a request, HAProxy 6 kB (it frees its buffers when empty), Fulcrum now 4.5 kB.
    each(|t| {
        let px = t.start(&listen(" http-request return status 200\n"));
        let warm: Vec<_> = (0..100).map(|_| after_one_request(&px)).collect();
        let before = rss_kb(px.proc.pid());
        let n = 300;
        let conns: Vec<_> = (0..n).map(|_| after_one_request(&px)).collect();
        // The memory goes back as each connection waits: checked until it is, or 5 s.
        let deadline = Instant::now() + Duration::from_secs(5);
        let per_conn = loop {
            let per_conn = rss_kb(px.proc.pid()).saturating_sub(before) / n;
            if per_conn < 12 || Instant::now() > deadline {
                break per_conn;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(per_conn < 12, "{per_conn} kB resident per idle connection");
        let after = h2c(px.addr(), &[H2Req::get("/")]).map(|r| r[0].status);
        drop((warm, conns));
        (per_conn < 12, after)
    });
}

/// Frames read until one ends `stream` (END_STREAM) or the connection ends, within 5 s:
/// (type, flags, stream, payload) each.
fn frames_until_end_of(s: &mut TcpStream, stream: u32) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let end = Instant::now() + Duration::from_secs(5);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 16384];
    while Instant::now() < end {
        while buf.len() >= 9 {
            let len = (buf[0] as usize) << 16 | (buf[1] as usize) << 8 | buf[2] as usize;
            if buf.len() < 9 + len {
                break;
            }
            let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let (ty, flags) = (buf[3], buf[4]);
            out.push((ty, flags, id, buf[9..9 + len].to_vec()));
            buf.drain(..9 + len);
            if id == stream && flags & 0x1 != 0 && (ty == 0x0 || ty == 0x1) {
                return out;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    out
}

#[test]
fn a_path_or_authority_a_parse_refuses_is_answered_400_and_the_connection_serves_on() {
    // HTTP/2 takes any bytes but NUL, CR and LF in `:path` and `:authority`; Fulcrum checks
    // them as the HTTP/1.1 request line and Host they become, so a space in either is
    // answered 400 (logged as any refused request) instead of reaching a server, and the
    // connection's other streams are served.
    let srv = server("s1");
    let px = Target::Fulcrum.start(&listen(&format!(" server s1 {}\n", srv.addr())));
    let block = |path: &str, authority: &str| {
        let mut b = vec![0x82, 0x86, 0x04, path.len() as u8];
        b.extend_from_slice(path.as_bytes());
        b.extend_from_slice(&[0x01, authority.len() as u8]);
        b.extend_from_slice(authority.as_bytes());
        b
    };
    let mut out = frame(0x1, 0x5, 1, &block("/a b", "example.com"));
    out.extend(frame(0x1, 0x5, 3, &block("/", "exa mple.com")));
    out.extend(frame(0x1, 0x5, 5, &block("/?echo=head", "example.com")));
    let mut s = open(&px, &out);
    let frames = frames_until_end_of(&mut s, 5);
    let heads: Vec<(u32, Vec<u8>)> =
        frames.into_iter().filter(|f| f.0 == 0x1).map(|f| (f.2, f.3)).collect();
    let status = |id: u32| {
        let (_, b) = heads.iter().find(|h| h.0 == id).expect("a HEADERS frame on the stream");
        // Fulcrum's `:status`: indexed when the static table has it, else a literal after
        // name index 8.
        const STATIC: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
        match b.first() {
            Some(&i @ 0x88..=0x8e) => STATIC[usize::from(i - 0x88)],
            _ => {
                assert_eq!(&b[..2], b"\x08\x03", "{b:?}");
                std::str::from_utf8(&b[2..5]).expect("digits").parse::<u16>().expect("status")
            }
        }
    };
    assert_eq!((status(1), status(3), status(5)), (400, 400, 200));
}
