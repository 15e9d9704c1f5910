//! A small HTTP/2 origin server for the tests (the `h2` crate from the server's side), clear
//! text (prior knowledge) or TLS with ALPN `h2`. Each answer describes what arrived, so a test
//! can compare what a proxy sent on:
//!
//! ```text
//! conn=<n> POST /path?q
//! authority: <:authority, else the host field>
//! <name>: <value>            (every other field, in order)
//! body: <the body as text>
//! trailer <name>: <value>    (the request's trailers)
//! ```
//!
//! The query asks for an answer: `status=<code>`, `s=<n>` (a body of n bytes instead),
//! `sized=1` (with `content-length`), `trailers=1` (`grpc-status: 0` and `x-sum: 42` after
//! the body), `reset=1` (RST_STREAM instead of an answer), `continue=1` (a 100 first), `goaway=1`
//! (GOAWAY after this stream), `early=1` (413 with the body `early` at once, before the
//! request's body is read, then RST_STREAM(NO_ERROR) as RFC 9113 8.1 allows).
//! Shared by the `http` and `e2e` targets.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

/// What the server saw.
#[derive(Default)]
pub struct Seen {
    pub connections: AtomicUsize,
    pub requests: AtomicUsize,
    /// The most streams open at once on one connection.
    pub max_streams: AtomicUsize,
    /// Requests for `/health` (health checks).
    pub health: AtomicUsize,
}

/// A running server; it stops with the test process (its thread sleeps on the listener).
pub struct H2Server {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

impl H2Server {
    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }
    pub fn requests(&self) -> usize {
        self.seen.requests.load(Ordering::SeqCst)
    }
    pub fn health_checks(&self) -> usize {
        self.seen.health.load(Ordering::SeqCst)
    }
}

/// Starts a clear-text server (prior knowledge).
pub fn h2_server() -> H2Server {
    start(None)
}

/// Starts a TLS server offering `alpn` (and speaking HTTP/2 when `h2` is chosen; HTTP/1 is
/// not spoken at all).
pub fn h2_tls_server(config: Arc<rustls::ServerConfig>) -> H2Server {
    start(Some(tokio_rustls::TlsAcceptor::from(config)))
}

fn start(tls: Option<tokio_rustls::TlsAcceptor>) -> H2Server {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let n = s.connections.fetch_add(1, Ordering::SeqCst) + 1;
                let (s, tls) = (Arc::clone(&s), tls.clone());
                tokio::task::spawn_local(async move {
                    match tls {
                        None => serve(tcp, n, s).await,
                        Some(acceptor) => {
                            if let Ok(t) = acceptor.accept(tcp).await {
                                serve(t, n, s).await;
                            }
                        }
                    }
                });
            }
        });
    });
    H2Server { addr, seen }
}

async fn serve<T: AsyncRead + AsyncWrite + Unpin + 'static>(io: T, conn: usize, seen: Arc<Seen>) {
    let Ok(mut h2) = h2::server::Builder::new().enable_connect_protocol().handshake(io).await
    else {
        return;
    };
    let open = Arc::new(AtomicUsize::new(0));
    while let Some(Ok((req, respond))) = h2.accept().await {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        if req.uri().path() == "/health" {
            seen.health.fetch_add(1, Ordering::SeqCst);
        }
        if param(req.uri().query().unwrap_or(""), "goaway") == Some("1") {
            h2.graceful_shutdown();
        }
        let now = open.fetch_add(1, Ordering::SeqCst) + 1;
        seen.max_streams.fetch_max(now, Ordering::SeqCst);
        let open = Arc::clone(&open);
        tokio::task::spawn_local(async move {
            answer(req, respond, conn).await;
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    conn: usize,
) {
    let (parts, mut body) = req.into_parts();
    let query = parts.uri.query().unwrap_or("").to_string();
    if parts.method == http::Method::CONNECT {
        // A tunnel (extended CONNECT for `:protocol`): 200, then every byte echoed.
        let proto = parts.extensions.get::<h2::ext::Protocol>().map(|p| p.as_str().to_string());
        let resp = http::Response::builder()
            .status(200)
            .header("x-protocol", proto.unwrap_or_default())
            .body(())
            .expect("200");
        let Ok(mut stream) = respond.send_response(resp, false) else { return };
        while let Some(Ok(d)) = body.data().await {
            let _ = body.flow_control().release_capacity(d.len());
            if stream.send_data(d, false).is_err() {
                return;
            }
        }
        let _ = stream.send_data(Bytes::new(), true);
        return;
    }
    if param(&query, "reset") == Some("1") {
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
        return;
    }
    if param(&query, "early") == Some("1") {
        let resp = http::Response::builder()
            .status(413)
            .header("content-length", "6")
            .body(())
            .expect("413");
        if let Ok(mut s) = respond.send_response(resp, false) {
            let _ = s.send_data(Bytes::from_static(b"early\n"), true);
        }
        // The request body dropped unread: h2 resets the stream with NO_ERROR.
        drop(body);
        return;
    }
    if param(&query, "continue") == Some("1") {
        let interim = http::Response::builder().status(100).body(()).expect("100");
        let _ = respond.send_informational(interim);
    }
    let mut text = format!(
        "conn={conn} {} {}\n",
        parts.method,
        parts.uri.path_and_query().map_or("", |p| p.as_str())
    );
    let authority =
        parts.uri.authority().map(|a| a.to_string()).or_else(|| {
            parts.headers.get("host").and_then(|h| h.to_str().ok()).map(str::to_string)
        });
    text.push_str(&format!("authority: {}\n", authority.unwrap_or_default()));
    for (n, v) in &parts.headers {
        if n != "host" {
            text.push_str(&format!("{n}: {}\n", String::from_utf8_lossy(v.as_bytes())));
        }
    }
    let mut got = Vec::new();
    while let Some(Ok(d)) = body.data().await {
        let _ = body.flow_control().release_capacity(d.len());
        got.extend_from_slice(&d);
    }
    text.push_str(&format!("body: {}\n", String::from_utf8_lossy(&got)));
    if let Ok(Some(t)) = body.trailers().await {
        for (n, v) in &t {
            text.push_str(&format!("trailer {n}: {}\n", String::from_utf8_lossy(v.as_bytes())));
        }
    }
    let status: u16 = param(&query, "status").and_then(|s| s.parse().ok()).unwrap_or(200);
    let out: Vec<u8> = match param(&query, "s").and_then(|s| s.parse::<usize>().ok()) {
        Some(n) => (0..n).map(|i| b'a' + (i % 26) as u8).collect(),
        None => text.into_bytes(),
    };
    let mut resp = http::Response::builder().status(status).header("x-conn", conn.to_string());
    if param(&query, "sized") == Some("1") {
        resp = resp.header("content-length", out.len().to_string());
    }
    let trailers = param(&query, "trailers") == Some("1");
    let empty = out.is_empty() && !trailers;
    let Ok(mut stream) = respond.send_response(resp.body(()).expect("response"), empty) else {
        return;
    };
    if empty {
        return;
    }
    let mut rest = Bytes::from(out);
    while !rest.is_empty() {
        stream.reserve_capacity(rest.len());
        let cap = match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(c)) => c,
            _ => return,
        };
        let chunk = rest.split_to(cap.min(rest.len()));
        let last = rest.is_empty() && !trailers;
        if stream.send_data(chunk, last).is_err() {
            return;
        }
    }
    if trailers {
        let mut t = http::HeaderMap::new();
        t.insert("grpc-status", http::HeaderValue::from_static("0"));
        t.insert("x-sum", http::HeaderValue::from_static("42"));
        let _ = stream.send_trailers(t);
    }
}
