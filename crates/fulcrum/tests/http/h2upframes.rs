//! HTTP/2 to servers, frame by frame: a raw-frame server (hand-written frames on a std
//! `TcpListener`, one thread per connection, every read bounded) behind `server ... proto h2`,
//! scripted per scenario, to check how the proxy takes what a well-behaved `h2` server never
//! sends (`h2up.rs` has those) but RFC 9113 allows, and what it forbids:
//!
//! - allowed: a head in HEADERS + CONTINUATION frames, padding (HEADERS and DATA) and the
//!   PRIORITY flag, trailers, an interim 103, PING, small windows (stream and connection)
//!   that the request body must respect, RST_STREAM(REFUSED_STREAM), GOAWAY before answering;
//! - forbidden: a body shorter than its `content-length`, upper-case or connection-specific
//!   fields in a response, DATA before HEADERS, PUSH_PROMISE after ENABLE_PUSH 0.
//!
//! The server checks the proxy as it reads (every DATA frame within the windows it announced,
//! the stream's and the connection's) and notes what it saw for the test to compare.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::px::*;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

const PROTOCOL_ERROR: u32 = 1;
const REFUSED_STREAM: u32 = 7;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Every read of the server gives up after this (a connection idle that long ends).
const READ_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a test waits for something the server is to observe.
const WAIT: Duration = Duration::from_secs(5);

/// One thread, so that every transaction may share one connection to the server.
fn config(addr: SocketAddr, extra: &str) -> String {
    config_with(addr, "", extra)
}

/// The same with more `global` lines.
fn config_with(addr: SocketAddr, global: &str, extra: &str) -> String {
    format!(
        "global\n nbthread 1\n{global}{DEFAULTS}listen px\n bind {{fe0}}\n{extra} server s1 {addr} proto h2\n"
    )
}

// ---- Frames and header blocks ----

/// A frame: 24-bit length, type, flags, 31-bit stream id, payload.
fn frame(ty: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    assert!(len < 1 << 24);
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK string length (7-bit prefix, no Huffman), then the string.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    let mut n = s.len();
    if n < 127 {
        out.push(n as u8);
    } else {
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    out.extend_from_slice(s);
}

/// A field as a literal without indexing, new name.
fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    string(out, name.as_bytes());
    string(out, value.as_bytes());
}

/// A response's header block: `:status` (200 indexed, others as a literal with the static
/// table's name), then the fields.
fn head(status: u16, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = if status == 200 {
        vec![0x88]
    } else {
        let mut b = vec![0x08];
        string(&mut b, status.to_string().as_bytes());
        b
    };
    for (n, v) in fields {
        field(&mut b, n, v);
    }
    b
}

/// A trailers block (no pseudo-field).
fn fields(list: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in list {
        field(&mut b, n, v);
    }
    b
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[derive(Clone, Debug)]
struct Frame {
    ty: u8,
    flags: u8,
    id: u32,
    payload: Vec<u8>,
}

impl Frame {
    /// The error code of a RST_STREAM or GOAWAY.
    fn code(&self) -> Option<u32> {
        match self.ty {
            RST_STREAM if self.payload.len() == 4 => Some(be32(&self.payload)),
            GOAWAY if self.payload.len() >= 8 => Some(be32(&self.payload[4..8])),
            _ => None,
        }
    }
}

/// A request as the server got it: its stream, whether its HEADERS ended it, its header block
/// (not decoded: neither proxy Huffman-codes, so a path is found in it as is).
#[derive(Clone, Debug)]
struct Req {
    id: u32,
    end_stream: bool,
    block: Vec<u8>,
}

impl Req {
    fn has(&self, s: &str) -> bool {
        self.block.windows(s.len()).any(|w| w == s.as_bytes())
    }
}

// ---- The raw server ----

/// What the server saw, shared with the test.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    /// What the scripts noted, in order (`conn=<n> <what>`).
    notes: Mutex<Vec<String>>,
    /// Rules the proxy broke, and scripts that failed.
    errors: Mutex<Vec<String>>,
}

struct RawServer {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl RawServer {
    fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }
    fn notes(&self) -> Vec<String> {
        self.seen.notes.lock().expect("notes").clone()
    }
    /// The notes without their connection number.
    fn what(&self) -> Vec<String> {
        self.notes()
            .iter()
            .map(|n| n.split_once(' ').map_or(n.as_str(), |(_, w)| w).to_string())
            .collect()
    }
    /// Waits until some note contains `s`.
    fn wait_note(&self, s: &str) -> bool {
        eventually(WAIT, || self.notes().iter().any(|n| n.contains(s)))
    }
    /// No rule broken, no script failed.
    fn check(&self) {
        let e = self.seen.errors.lock().expect("errors").clone();
        assert!(e.is_empty(), "the raw server saw: {e:?}");
    }
}

/// Starts a server on 127.0.0.1 that runs `script` on each connection it accepts (each on its
/// own thread). A script's error is recorded (see [`RawServer::check`]).
fn raw_server(
    script: impl Fn(&mut Peer) -> Result<(), String> + Send + Sync + 'static,
) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let n = s.connections.fetch_add(1, Ordering::SeqCst) + 1;
            let (s, script) = (Arc::clone(&s), Arc::clone(&script));
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(READ_TIMEOUT));
                let _ = tcp.set_write_timeout(Some(READ_TIMEOUT));
                let _ = tcp.set_nodelay(true);
                let mut peer = Peer::new(tcp, n, Arc::clone(&s));
                if let Err(e) = script(&mut peer) {
                    s.errors.lock().expect("errors").push(format!("conn={n}: {e}"));
                }
            });
        }
    });
    RawServer { addr, seen }
}

/// A server that does the handshake (announcing `settings`), then runs `answer` on each
/// request until the proxy closes the connection or leaves it idle.
fn serving(
    settings: &'static [(u16, u32)],
    answer: impl Fn(&mut Peer, &Req) -> Result<(), String> + Send + Sync + 'static,
) -> RawServer {
    raw_server(move |c| {
        c.handshake(settings)?;
        while let Some(r) = c.request()? {
            answer(c, &r)?;
        }
        Ok(())
    })
}

/// How the server opens the windows of a body it reads.
#[derive(Clone, Copy, PartialEq)]
enum Updates {
    /// After each DATA frame, by its size (stream and connection).
    EachFrame,
    /// Only once a window is exhausted (back to its initial size).
    WhenExhausted,
}

/// One connection, as a script sees it.
struct Peer {
    s: TcpStream,
    buf: Vec<u8>,
    n: usize,
    seen: Arc<Seen>,
    /// The SETTINGS the proxy sent, in order.
    settings: Vec<(u16, u32)>,
    /// The stream window we announce, and whether the proxy acknowledged it (before, the
    /// default 65,535 rules).
    our_initial: i64,
    pending_initial: Option<i64>,
    acked: bool,
    /// Per stream: what our WINDOW_UPDATEs added, and what DATA took.
    windows: HashMap<u32, (i64, i64)>,
    /// What the proxy may still send on the connection.
    conn_window: i64,
    /// DATA frames received.
    data_frames: usize,
}

impl Peer {
    fn new(s: TcpStream, n: usize, seen: Arc<Seen>) -> Peer {
        Peer {
            s,
            buf: Vec::new(),
            n,
            seen,
            settings: Vec::new(),
            our_initial: 65_535,
            pending_initial: None,
            acked: false,
            windows: HashMap::new(),
            conn_window: 65_535,
            data_frames: 0,
        }
    }

    fn note(&self, what: impl Into<String>) {
        let what = what.into();
        self.seen.notes.lock().expect("notes").push(format!("conn={} {what}", self.n));
    }

    fn broken(&self, what: String) {
        self.seen.errors.lock().expect("errors").push(format!("conn={}: {what}", self.n));
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.s.write_all(bytes).map_err(|e| format!("write: {e}"))
    }

    /// Reads the client preface, then sends our SETTINGS (the proxy's are acknowledged as
    /// they come, see [`Peer::next`]).
    fn handshake(&mut self, settings: &[(u16, u32)]) -> Result<(), String> {
        let mut preface = [0u8; 24];
        self.s.read_exact(&mut preface).map_err(|e| format!("preface: {e}"))?;
        if preface != PREFACE {
            return Err(format!("bad preface {:?}", show(&preface)));
        }
        let mut p = Vec::new();
        for (k, v) in settings {
            p.extend_from_slice(&k.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
            if *k == 4 {
                // Until the proxy acknowledges, the default window rules (see `next`).
                self.pending_initial = Some(i64::from(*v));
            }
        }
        self.send(&frame(SETTINGS, 0, 0, &p))
    }

    /// The next frame as read: `Ok(None)` once the proxy closed; `Err` on a timeout.
    fn read_frame(&mut self) -> Result<Option<Frame>, std::io::Error> {
        loop {
            if self.buf.len() >= 9 {
                let b = &self.buf;
                let len = (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]);
                if b.len() >= 9 + len {
                    let f = Frame {
                        ty: b[3],
                        flags: b[4],
                        id: be32(&b[5..9]) & 0x7fff_ffff,
                        payload: b[9..9 + len].to_vec(),
                    };
                    self.buf.drain(..9 + len);
                    return Ok(Some(f));
                }
            }
            let mut tmp = [0u8; 65_536];
            match self.s.read(&mut tmp) {
                Ok(0) => return Ok(None),
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// The next frame, the connection's chores done: the proxy's SETTINGS acknowledged, its
    /// PINGs answered, its acknowledgement of ours applied to the windows, and every DATA
    /// frame checked against the windows (a frame beyond them is recorded as broken).
    fn next(&mut self) -> Result<Option<Frame>, std::io::Error> {
        let Some(f) = self.read_frame()? else { return Ok(None) };
        match f.ty {
            SETTINGS if f.flags & ACK == 0 => {
                for kv in f.payload.chunks_exact(6) {
                    self.settings.push((u16::from_be_bytes([kv[0], kv[1]]), be32(&kv[2..])));
                }
                let _ = self.s.write_all(&frame(SETTINGS, ACK, 0, &[]));
            }
            SETTINGS => {
                // RFC 9113 6.9.2: the new initial size applies to every stream's window.
                if let Some(v) = self.pending_initial.take() {
                    self.our_initial = v;
                }
                self.acked = true;
            }
            PING if f.flags & ACK == 0 => {
                let _ = self.s.write_all(&frame(PING, ACK, 0, &f.payload));
            }
            DATA => {
                self.data_frames += 1;
                let len = f.payload.len() as i64;
                self.conn_window -= len;
                let w = self.windows.entry(f.id).or_default();
                w.1 += len;
                let stream = self.window(f.id);
                if stream < 0 || self.conn_window < 0 {
                    let c = self.conn_window;
                    self.broken(format!(
                        "DATA of {len} bytes on stream {} beyond the windows (stream {}, connection {})",
                        f.id,
                        stream + len,
                        c + len
                    ));
                }
            }
            _ => {}
        }
        Ok(Some(f))
    }

    /// What the proxy may still send on stream `id`. Until it acknowledged our SETTINGS it may
    /// go by the initial size it had or by the one we announced (it applies ours when it
    /// reads them, and may send more DATA before its ACK): the larger counts.
    fn window(&self, id: u32) -> i64 {
        let initial = match self.pending_initial {
            Some(v) => v.max(self.our_initial),
            None => self.our_initial,
        };
        let (added, used) = self.windows.get(&id).copied().unwrap_or_default();
        initial + added - used
    }

    /// The next frame, which must come within the read timeout.
    fn expect(&mut self) -> Result<Frame, String> {
        match self.next() {
            Ok(Some(f)) => Ok(f),
            Ok(None) => Err("the proxy closed the connection".into()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Frames until one that `pred` takes (returned).
    fn until(&mut self, what: &str, pred: impl Fn(&Frame) -> bool) -> Result<Frame, String> {
        loop {
            let f = self.expect().map_err(|e| format!("waiting for {what}: {e}"))?;
            if pred(&f) {
                return Ok(f);
            }
        }
    }

    /// Reads (and drops) frames until the proxy closes the connection, for at most `within`:
    /// whether it closed.
    fn wait_closed(&mut self, within: Duration) -> bool {
        let _ = self.s.set_read_timeout(Some(within));
        let deadline = std::time::Instant::now() + within;
        let closed = loop {
            match self.next() {
                Ok(None) => break true,
                Ok(Some(_)) if std::time::Instant::now() < deadline => {}
                _ => break false,
            }
        };
        let _ = self.s.set_read_timeout(Some(READ_TIMEOUT));
        closed
    }

    /// Until the proxy acknowledged our SETTINGS.
    fn until_acked(&mut self) -> Result<(), String> {
        while !self.acked {
            self.expect().map_err(|e| format!("waiting for the SETTINGS ACK: {e}"))?;
        }
        Ok(())
    }

    /// The next request (its HEADERS and any CONTINUATION frames); `None` once the proxy
    /// closed the connection or left it idle for the read timeout.
    fn request(&mut self) -> Result<Option<Req>, String> {
        loop {
            let f = match self.next() {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(None),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(None)
                }
                Err(e) => return Err(format!("read: {e}")),
            };
            match f.ty {
                RST_STREAM => self.note(format!("RST_STREAM {:?}", f.code())),
                GOAWAY => self.note(format!("GOAWAY {:?}", f.code())),
                _ => {}
            }
            if f.ty != HEADERS || self.windows.contains_key(&f.id) {
                continue;
            }
            let mut block = f.payload.clone();
            let mut flags = f.flags;
            while flags & END_HEADERS == 0 {
                let c = self.expect()?;
                if c.ty != CONTINUATION || c.id != f.id {
                    return Err(format!("frame {} inside a header block", c.ty));
                }
                block.extend_from_slice(&c.payload);
                flags = c.flags;
            }
            self.windows.entry(f.id).or_default();
            return Ok(Some(Req { id: f.id, end_stream: f.flags & END_STREAM != 0, block }));
        }
    }

    /// A request's body, until END_STREAM, opening the windows as `updates` says.
    fn body(&mut self, id: u32, updates: Updates) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let f = self.until("DATA", |f| f.id == id && (f.ty == DATA || f.ty == RST_STREAM))?;
            if f.ty == RST_STREAM {
                return Err(format!("stream {id} reset ({:?})", f.code()));
            }
            body.extend_from_slice(&f.payload);
            let len = f.payload.len() as u32;
            let mut out = Vec::new();
            if f.flags & END_STREAM == 0 && len > 0 {
                let inc = match updates {
                    Updates::EachFrame => len,
                    Updates::WhenExhausted => {
                        let w = self.window(id);
                        if w <= 0 {
                            (self.our_initial - w) as u32
                        } else {
                            0
                        }
                    }
                };
                if inc > 0 {
                    out.extend(frame(WINDOW_UPDATE, 0, id, &inc.to_be_bytes()));
                    self.windows.entry(id).or_default().0 += i64::from(inc);
                }
            }
            if len > 0 {
                let inc = match updates {
                    Updates::EachFrame => len,
                    Updates::WhenExhausted if self.conn_window <= 0 => {
                        self.note("connection window exhausted");
                        (65_535 - self.conn_window) as u32
                    }
                    Updates::WhenExhausted => 0,
                };
                if inc > 0 {
                    out.extend(frame(WINDOW_UPDATE, 0, 0, &inc.to_be_bytes()));
                    self.conn_window += i64::from(inc);
                }
            }
            self.send(&out)?;
            if f.flags & END_STREAM != 0 {
                return Ok(body);
            }
        }
    }

    /// A whole response: HEADERS (ending the stream if `body` is empty), then DATA.
    fn respond(
        &mut self,
        id: u32,
        status: u16,
        f: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), String> {
        let end = if body.is_empty() { END_STREAM } else { 0 };
        let mut out = frame(HEADERS, END_HEADERS | end, id, &head(status, f));
        if !body.is_empty() {
            out.extend(frame(DATA, END_STREAM, id, body));
        }
        self.send(&out)
    }

    /// A plain `200 ok`.
    fn ok(&mut self, id: u32) -> Result<(), String> {
        self.respond(id, 200, &[("content-length", "2")], b"ok")
    }
}

/// Sends `raw` on `c` and reads the final answer: its status and body length, `(0, 0)` when
/// the proxy closed the connection before a whole answer came, `Err` when it left the
/// connection open without one (for the client's read timeout).
fn outcome(c: &mut Client, raw: &[u8]) -> Result<(u16, usize), String> {
    c.send_lossy(raw);
    match c.read_final(false) {
        Ok(r) => Ok((r.status, r.body.len())),
        Err(e) if e.contains("closed") || e.contains("reset") => Ok((0, 0)),
        Err(e) => Err(e),
    }
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: h\r\n\r\n").into_bytes()
}

/// A GOAWAY saying that no stream was processed.
fn goaway_none() -> Vec<u8> {
    frame(GOAWAY, 0, 0, &[0; 8])
}

// ---- Allowed, if unusual ----

#[test]
fn a_response_head_in_continuation_frames_reaches_the_client() {
    // 20 kB of one field's value, the block cut in three: HEADERS, CONTINUATION, CONTINUATION
    // with END_HEADERS. (With 64 kB buffers: a head must fit a buffer, in HAProxy as here.)
    each(|t| {
        let big = "v".repeat(20_000);
        let value = big.clone();
        let srv = serving(&[], move |c, r| {
            let block = head(200, &[("x-big", &value), ("content-length", "2")]);
            let third = block.len() / 3;
            let mut out = frame(HEADERS, 0, r.id, &block[..third]);
            out.extend(frame(CONTINUATION, 0, r.id, &block[third..2 * third]));
            out.extend(frame(CONTINUATION, END_HEADERS, r.id, &block[2 * third..]));
            out.extend(frame(DATA, END_STREAM, r.id, b"ok"));
            c.send(&out)
        });
        let px = t.start(&config_with(srv.addr, " tune.bufsize 65536\n", ""));
        let mut c = px.client();
        let r = c.request(&get("/big"));
        // The connection's decoder is still in step: the next answer comes too.
        let again = c.request(&get("/again"));
        srv.check();
        assert_eq!((r.status, r.text()), (200, "ok".to_string()));
        let got = r.header("x-big");
        assert!(got == Some(big.as_str()), "x-big of {:?} bytes", got.map(str::len));
        assert_eq!((again.status, again.header("x-big").map(str::len)), (200, Some(20_000)));
        (r.status, got.map(str::len), again.status)
    });
}

#[test]
fn padding_and_the_priority_flag_in_a_response_are_skipped() {
    // HEADERS with PADDED and PRIORITY (pad length, dependency and weight, block, padding),
    // a PRIORITY frame, DATA with a pad length of 0, the last DATA padded; then (`/middle`)
    // padding in a DATA frame that does not end the stream.
    each(|t| {
        let srv = serving(&[], |c, r| {
            let block = head(200, &[("content-length", "11")]);
            let mut out = Vec::new();
            if r.has("/middle") {
                out.extend(frame(HEADERS, END_HEADERS, r.id, &block));
                out.extend(frame(DATA, PADDED, r.id, b"\x05hello \0\0\0\0\0"));
                out.extend(frame(DATA, END_STREAM, r.id, b"world"));
                return c.send(&out);
            }
            let mut p = vec![10, 0, 0, 0, 0, 15];
            p.extend_from_slice(&block);
            p.extend_from_slice(&[0; 10]);
            out.extend(frame(0x2, 0, r.id, &[0, 0, 0, 0, 200]));
            out.extend(frame(HEADERS, END_HEADERS | PADDED | PRIORITY, r.id, &p));
            out.extend(frame(DATA, 0, r.id, b"hello"));
            out.extend(frame(DATA, PADDED, r.id, b"\x00 "));
            out.extend(frame(DATA, PADDED | END_STREAM, r.id, b"\x03world\0\0\0"));
            c.send(&out)
        });
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        let r = c.request(&get("/padded"));
        let again = outcome(&mut c, &get("/again"));
        let middle = outcome(&mut px.client(), &get("/middle"));
        srv.check();
        assert_eq!((r.status, r.text()), (200, "hello world".to_string()));
        if t.is_haproxy() {
            // HAProxy 2.6 mishandles padded DATA frames: after one that ends the stream it
            // sends GOAWAY(PROTOCOL_ERROR) (the answer went whole, the client's connection
            // ends with the server's); one that does not end the stream is refused at once
            // (GOAWAY, the client gets "hello " and a close), content-length or not.
            // RFC 9113 6.1 allows padding on every DATA frame: Fulcrum skips it.
            let goaway = format!("GOAWAY {:?}", Some(PROTOCOL_ERROR));
            let both = || srv.what().iter().filter(|n| **n == goaway).count() == 2;
            assert!(eventually(WAIT, both), "{:?}", srv.notes());
            assert_eq!(middle, Ok((0, 0)));
        } else {
            assert_eq!(again, Ok((200, 11)));
            assert_eq!(middle, Ok((200, 11)));
            assert!(srv.what().is_empty(), "{:?}", srv.notes());
        }
        (r.status, r.text())
    });
}

#[test]
fn trailers_from_the_server_end_a_chunked_body_for_an_http1_client() {
    // HEADERS, two DATA frames, trailing HEADERS with END_STREAM; no content-length.
    each(|t| {
        let srv = serving(&[], |c, r| {
            let mut out = frame(HEADERS, END_HEADERS, r.id, &head(200, &[("x-a", "1")]));
            out.extend(frame(DATA, 0, r.id, b"abc"));
            out.extend(frame(DATA, 0, r.id, b"def"));
            let trailers = fields(&[("x-trailer", "yes"), ("x-sum", "42")]);
            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, r.id, &trailers));
            c.send(&out)
        });
        let px = t.start(&config(srv.addr, ""));
        let r = px.client().request(b"GET /t HTTP/1.1\r\nHost: h\r\nTE: trailers\r\n\r\n");
        srv.check();
        assert_eq!((r.status, r.text()), (200, "abcdef".to_string()));
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
        assert_eq!(r.header("x-a"), Some("1"));
        let trailers: Vec<(String, String)> =
            r.trailers.iter().map(|(n, v)| (n.to_lowercase(), v.clone())).collect();
        assert_eq!(
            trailers,
            vec![("x-trailer".into(), "yes".into()), ("x-sum".into(), "42".into())]
        );
        (r.status, r.text(), trailers)
    });
}

#[test]
fn an_interim_103_comes_before_the_final_answer() {
    each(|t| {
        let srv = serving(&[], |c, r| {
            let early = head(103, &[("link", "</style.css>; rel=preload; as=style")]);
            let mut out = frame(HEADERS, END_HEADERS, r.id, &early);
            out.extend(frame(HEADERS, END_HEADERS, r.id, &head(200, &[("content-length", "2")])));
            out.extend(frame(DATA, END_STREAM, r.id, b"ok"));
            c.send(&out)
        });
        let px = t.start(&config(srv.addr, ""));
        let r = px.client().request(&get("/hints"));
        srv.check();
        let interim: Vec<(u16, Option<String>)> =
            r.interim.iter().map(|i| (i.status, i.header("link").map(String::from))).collect();
        assert_eq!(interim, vec![(103, Some("</style.css>; rel=preload; as=style".into()))]);
        assert_eq!((r.status, r.text()), (200, "ok".to_string()));
        (interim, r.status)
    });
}

#[test]
fn a_ping_from_the_server_is_answered_with_its_payload() {
    // An unasked PING ACK first (it must not be answered), then a PING: the proxy's first PING
    // back is the ACK of that one, with its 8 bytes (RFC 9113 6.7).
    each(|t| {
        let srv = serving(&[], |c, r| {
            let mut out = frame(PING, ACK, 0, b"unasked!");
            out.extend(frame(PING, 0, 0, b"pingpong"));
            c.send(&out)?;
            let pong = c.until("PING", |f| f.ty == PING)?;
            c.note(format!("PING flags={} {}", pong.flags, show(&pong.payload)));
            c.ok(r.id)
        });
        let px = t.start(&config(srv.addr, ""));
        let r = px.client().request(&get("/ping"));
        srv.check();
        assert_eq!(r.status, 200);
        assert_eq!(srv.what(), vec!["PING flags=1 pingpong".to_string()]);
        (r.status, srv.what())
    });
}

#[test]
fn a_request_body_keeps_within_a_small_stream_window() {
    // The server's SETTINGS_INITIAL_WINDOW_SIZE is 16: a 1000-byte body goes in DATA frames
    // of at most 16 bytes, each after the server's WINDOW_UPDATEs (stream and connection).
    // The body is sent once the proxy acknowledged the SETTINGS, so the 16 rules every frame
    // (the server checks each against the windows as it reads).
    each(|t| {
        let srv = serving(&[(4, 16)], |c, r| {
            if r.end_stream {
                return Err("a POST without its body".into());
            }
            c.until_acked()?;
            c.note("ready");
            let body = c.body(r.id, Updates::EachFrame)?;
            c.note(format!("body of {} in {} frames", body.len(), c.data_frames));
            let text = format!("got {}", body.iter().filter(|&&b| b == b'x').count());
            c.respond(r.id, 200, &[("content-length", &text.len().to_string())], text.as_bytes())
        });
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        c.send(b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n");
        assert!(srv.wait_note("ready"), "{:?}", srv.notes());
        c.send(&[b'x'; 1000]);
        let r = c.read();
        srv.check();
        assert_eq!((r.status, r.text()), (200, "got 1000".to_string()));
        let frames: usize = srv
            .what()
            .iter()
            .find_map(|n| n.strip_prefix("body of 1000 in ")?.strip_suffix(" frames")?.parse().ok())
            .unwrap_or(0);
        assert!(frames >= 1000 / 16, "{:?}", srv.notes());
        (r.status, r.text())
    });
}

#[test]
fn a_request_body_waits_for_the_connection_window() {
    // Streams of 1 MB but the connection's 65,535 bytes, opened again only once used up: a
    // 200 kB body stops at each exhausted window (three times) and goes on after the
    // WINDOW_UPDATE.
    each(|t| {
        let srv = serving(&[(4, 1 << 20)], |c, r| {
            let body = c.body(r.id, Updates::WhenExhausted)?;
            let text = format!("got {}", body.iter().filter(|&&b| b == b'y').count());
            c.respond(r.id, 200, &[("content-length", &text.len().to_string())], text.as_bytes())
        });
        let px = t.start(&config(srv.addr, ""));
        let mut req = b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n".to_vec();
        req.extend_from_slice(&[b'y'; 200_000]);
        let r = px.client().request(&req);
        srv.check();
        assert_eq!((r.status, r.text()), (200, "got 200000".to_string()));
        let exhausted = srv.what().iter().filter(|n| *n == "connection window exhausted").count();
        assert_eq!(exhausted, 3, "{:?}", srv.notes());
        (r.status, r.text(), exhausted)
    });
}

// ---- Refused streams, GOAWAY ----

/// A server that refuses the first stream asking for `/refused` (RST_STREAM(REFUSED_STREAM)
/// or, with `goaway`, GOAWAY with last-stream-id 0 then the connection closed once the proxy
/// did, or after a second), and answers every other one with `x-conn`.
fn refusing(goaway: bool) -> RawServer {
    let once = Arc::new(AtomicUsize::new(0));
    raw_server(move |c| {
        c.handshake(&[])?;
        while let Some(r) = c.request()? {
            if r.has("/refused") {
                c.note("/refused");
                if once.fetch_add(1, Ordering::SeqCst) == 0 {
                    if !goaway {
                        c.send(&frame(RST_STREAM, 0, r.id, &REFUSED_STREAM.to_be_bytes()))?;
                        continue;
                    }
                    // (Every stream is above the last one processed, 0: the server may close
                    // at once; it waits a little for the proxy to do so.)
                    c.send(&goaway_none())?;
                    let closed = c.wait_closed(Duration::from_secs(1));
                    c.note(if closed { "closed by the proxy" } else { "closed by the server" });
                    return Ok(());
                }
            }
            let n = c.n.to_string();
            c.respond(r.id, 200, &[("x-conn", &n), ("content-length", "2")], b"ok")?;
        }
        Ok(())
    })
}

#[test]
fn a_refused_stream_is_a_502_unless_retry_on_sends_it_again() {
    // RST_STREAM(REFUSED_STREAM) before any answer: the request was not processed (RFC 9113
    // 8.7) and may go again. As in HAProxy, `retry-on` decides (`empty-response`: nothing
    // came back); by default (`conn-failure`) it is a 502.
    each(|t| {
        let srv = refusing(false);
        let px = t.start(&config(srv.addr, ""));
        let refused = px.client().request(&get("/refused"));
        let next = px.client().request(&get("/next"));
        srv.check();
        assert_eq!((refused.status, next.status), (502, 200));

        let srv = refusing(false);
        let px = t.start(&config(srv.addr, " retry-on empty-response\n"));
        let retried = px.client().request(&get("/refused"));
        srv.check();
        assert_eq!((retried.status, retried.text()), (200, "ok".to_string()));
        assert_eq!(srv.what(), vec!["/refused", "/refused"]);
        (refused.status, next.status, retried.status, srv.what())
    });
}

#[test]
fn goaway_before_answering_sends_the_request_again_on_a_new_connection() {
    // GOAWAY with last-stream-id 0 right after the request's HEADERS: the stream was not
    // processed (RFC 9113 6.8), the request goes again on a new connection (`retry-on
    // empty-response`, as in HAProxy) and gets its answer.
    each(|t| {
        let srv = refusing(true);
        let px = t.start(&config(srv.addr, " retry-on empty-response\n"));
        let r = px.client().request(&get("/refused"));
        srv.check();
        assert_eq!((r.status, r.header("x-conn")), (200, Some("2")));
        assert_eq!(srv.connections(), 2);
        // Fulcrum ends the connection the server is leaving once its streams are gone;
        // HAProxy 2.6 leaves it open until the server closes it.
        let closed = if t.is_haproxy() { "closed by the server" } else { "closed by the proxy" };
        assert!(srv.wait_note(closed), "{:?}", srv.notes());

        // By default (`retry-on conn-failure`): a 502, in both.
        let srv = refusing(true);
        let px = t.start(&config(srv.addr, ""));
        let default = px.client().request(&get("/refused"));
        let next = px.client().request(&get("/next"));
        srv.check();
        assert_eq!((default.status, next.status), (502, 200));
        (r.status, srv.connections(), default.status, next.status)
    });
}

#[test]
fn a_refused_stream_on_a_shared_connection_goes_again_on_a_new_one() {
    // Fulcrum's streams of one worker share a connection (HAProxy 2.6, `http-reuse safe`, opens
    // one per client connection's first request: its refused stream is a fresh connection's,
    // a 502 as above). A stream of a connection already used that is refused (REFUSED_STREAM,
    // or above GOAWAY's last-stream-id) was not processed (RFC 9113 8.7): Fulcrum sends it
    // again on a new connection by default, as it does when a reused HTTP/1 connection dies
    // before answering.
    each(|t| {
        let mut got = Vec::new();
        for goaway in [false, true] {
            let srv = refusing(goaway);
            let px = t.start(&config(srv.addr, ""));
            let first = px.client().request(&get("/first"));
            let r = px.client().request(&get("/refused"));
            srv.check();
            assert_eq!(first.status, 200);
            if t.is_haproxy() {
                assert_eq!(r.status, 502);
            } else {
                assert_eq!((r.status, r.header("x-conn")), (200, Some("2")));
                assert_eq!(srv.what().iter().filter(|n| *n == "/refused").count(), 2);
            }
            got.push(first.status);
        }
        got
    });
}

// ---- Forbidden ----

#[test]
fn a_body_shorter_than_its_content_length_never_reaches_the_client_whole() {
    // `content-length: 10`, then 5 bytes with END_STREAM (malformed, RFC 9113 8.1.1): the
    // proxy resets the stream (PROTOCOL_ERROR); the client never gets 10 bytes.
    each(|t| {
        let srv = serving(&[], |c, r| {
            if r.has("/short") {
                let mut out =
                    frame(HEADERS, END_HEADERS, r.id, &head(200, &[("content-length", "10")]));
                out.extend(frame(DATA, END_STREAM, r.id, b"hello"));
                return c.send(&out);
            }
            c.ok(r.id)
        });
        let px = t.start(&config(srv.addr, ""));
        let mut c = px.client();
        // (HAProxy leaves the connection open: a second tells.)
        c.s.set_read_timeout(Some(Duration::from_secs(1))).expect("timeout");
        let got = outcome(&mut c, &get("/short"));
        assert!(
            srv.wait_note(&format!("RST_STREAM {:?}", Some(PROTOCOL_ERROR))),
            "{:?}",
            srv.notes()
        );
        let next = px.client().request(&get("/next"));
        srv.check();
        assert_ne!(got, Ok((200, 10)));
        if t.is_haproxy() {
            // HAProxy 2.6 forwards the head and the 5 bytes, then leaves the client
            // connection open (until a timeout), the answer never complete.
            assert!(got.is_err(), "{got:?}");
        } else {
            // Fulcrum closes the client connection after the 5 bytes: an HTTP/1 client knows
            // at once that the answer is cut (RFC 9112 8), and may retry.
            assert_eq!(got, Ok((0, 0)));
        }
        assert_eq!((next.status, next.text()), (200, "ok".to_string()));
        next.status
    });
}

#[test]
fn a_malformed_response_head_is_a_502() {
    // An upper-case field name, connection-specific fields (RFC 9113 8.2.1, 8.2.2): each a
    // malformed response, a 502; the next request is answered.
    each(|t| {
        let srv = serving(&[], |c, r| {
            let f: &[(&str, &str)] = if r.has("/upper") {
                &[("X-Bad", "1")]
            } else if r.has("/connection") {
                &[("connection", "close")]
            } else if r.has("/keepalive") {
                &[("keep-alive", "timeout=5")]
            } else if r.has("/te") {
                &[("transfer-encoding", "chunked")]
            } else {
                &[]
            };
            let mut f = f.to_vec();
            f.push(("content-length", "2"));
            c.respond(r.id, 200, &f, b"ok")
        });
        let px = t.start(&config(srv.addr, ""));
        let got: Vec<(&str, u16)> = ["/upper", "/connection", "/keepalive", "/te", "/next"]
            .into_iter()
            .map(|path| (path, px.client().request(&get(path)).status))
            .collect();
        srv.check();
        assert_eq!(
            got,
            vec![
                ("/upper", 502),
                ("/connection", 502),
                ("/keepalive", 502),
                ("/te", 502),
                ("/next", 200)
            ]
        );
        got
    });
}

#[test]
fn data_before_headers_is_a_protocol_error() {
    // DATA on a stream before its HEADERS (RFC 9113 8.1: a response starts with a header
    // section): a stream error (PROTOCOL_ERROR); the next request is answered.
    each(|t| {
        let srv = serving(&[], |c, r| {
            if r.has("/early") {
                let mut out = frame(DATA, 0, r.id, b"early");
                out.extend(frame(
                    HEADERS,
                    END_HEADERS,
                    r.id,
                    &head(200, &[("content-length", "2")]),
                ));
                out.extend(frame(DATA, END_STREAM, r.id, b"ok"));
                return c.send(&out);
            }
            c.ok(r.id)
        });
        let px = t.start(&config(srv.addr, ""));
        let got = outcome(&mut px.client(), &get("/early"));
        srv.check();
        if t.is_haproxy() {
            // HAProxy 2.6.12 aborts: `FATAL: bug condition "htx_get_first_type(htx) !=
            // HTX_BLK_RES_SL" matched at src/http_ana.c:1527`. The client gets no answer,
            // and nothing more can be asked of it.
            assert_eq!(got, Ok((0, 0)));
        } else {
            // Fulcrum resets the stream and answers 502, as for any invalid response, and
            // serves on (the connection too: the error was the stream's).
            assert_eq!(got.as_ref().map(|g| g.0), Ok(502));
            assert!(srv.wait_note(&format!("RST_STREAM {:?}", Some(PROTOCOL_ERROR))));
            let next = px.client().request(&get("/next"));
            assert_eq!((next.status, srv.connections()), (200, 1));
        }
        got.map(|g| g.0 == 200)
    });
}

#[test]
fn a_push_promise_is_a_connection_error() {
    // The proxy said SETTINGS_ENABLE_PUSH 0: a PUSH_PROMISE is a connection error of type
    // PROTOCOL_ERROR (RFC 9113 8.4): GOAWAY, a 502, and the next request on a new connection.
    each(|t| {
        let srv = serving(&[], |c, r| {
            if r.has("/push") {
                c.note(format!("ENABLE_PUSH {:?}", c.settings.iter().find(|s| s.0 == 2)));
                let mut p = 2u32.to_be_bytes().to_vec();
                // :method GET, :scheme http, :path /, :authority h.
                p.extend_from_slice(&[0x82, 0x86, 0x84, 0x01, 1, b'h']);
                let mut out = frame(PUSH_PROMISE, END_HEADERS, r.id, &p);
                out.extend(frame(
                    HEADERS,
                    END_HEADERS,
                    r.id,
                    &head(200, &[("content-length", "2")]),
                ));
                out.extend(frame(DATA, END_STREAM, r.id, b"ok"));
                c.send(&out)?;
                let g = c.until("GOAWAY", |f| f.ty == GOAWAY)?;
                c.note(format!("GOAWAY {:?}", g.code()));
                return Ok(());
            }
            c.ok(r.id)
        });
        let px = t.start(&config(srv.addr, ""));
        let r = px.client().request(&get("/push"));
        assert!(srv.wait_note("GOAWAY"), "{:?}", srv.notes());
        let next = px.client().request(&get("/next"));
        srv.check();
        assert_eq!((r.status, next.status), (502, 200));
        let goaway = format!("GOAWAY {:?}", Some(PROTOCOL_ERROR));
        assert_eq!(srv.what(), vec!["ENABLE_PUSH Some((2, 0))".to_string(), goaway]);
        assert_eq!(srv.connections(), 2);
        (r.status, next.status, srv.what(), srv.connections())
    });
}

#[test]
fn a_request_the_server_took_is_not_sent_again_when_its_stream_fails() {
    // A DELETE (no body) on a connection that already carried a request: the server resets
    // its stream with INTERNAL_ERROR, or answers a malformed head. The server may have acted
    // on it (RFC 9113 8.7: only REFUSED_STREAM or a stream above GOAWAY's last-stream-id says
    // otherwise), and the default `retry-on conn-failure` does not cover it: one 502, the
    // request at the server once.
    each(|t| {
        let srv = serving(&[], |c, r| {
            if r.has("/internal") {
                c.note("/internal");
                return c.send(&frame(RST_STREAM, 0, r.id, &2u32.to_be_bytes()));
            }
            if r.has("/malformed") {
                c.note("/malformed");
                return c.respond(r.id, 200, &[("X-Bad", "1"), ("content-length", "2")], b"ok");
            }
            c.ok(r.id)
        });
        let px = t.start(&config(srv.addr, ""));
        let first = px.client().request(&get("/first"));
        let internal = px.client().request(b"DELETE /internal HTTP/1.1\r\nHost: h\r\n\r\n");
        let malformed = px.client().request(b"DELETE /malformed HTTP/1.1\r\nHost: h\r\n\r\n");
        srv.check();
        assert_eq!((first.status, internal.status, malformed.status), (200, 502, 502));
        let reached: Vec<String> = srv.what().into_iter().filter(|n| n.starts_with('/')).collect();
        assert_eq!(reached, vec!["/internal", "/malformed"]);
        (internal.status, malformed.status, reached)
    });
}
