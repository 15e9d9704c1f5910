//! HTTP/2 from clients (HAProxy's `mux_h2` on the frontend side): the connection's frames and
//! HPACK are the `h2` crate's (a well-kept implementation with flow control and the known
//! denial-of-service limits), built from `vendor/h2` with one change: an idle connection gives
//! its buffers back (4 kB per idle connection instead of 20 to 24; `vendor/h2/FULCRUM.md`).
//! Each stream runs as a task of its own ([`tasks`]) through the same transaction code as an
//! HTTP/1.1 request ([`view`]).
//!
//! A connection speaks HTTP/2 when TLS negotiated `h2` (`alpn h2,http/1.1` on the bind), or
//! when a clear-text connection opens with HTTP/2's preface (prior knowledge, as HAProxy
//! switches to HTTP/2 on seeing `PRI * HTTP/2.0`).
//!
//! Owns: the connection's settings, its idle timeout and its streams' tasks. Must not touch:
//! transactions (the session runs them), accept and limits (runtime).

pub mod backconn;
pub mod body;
pub mod hpack;
pub mod tasks;
pub mod upstream;
pub mod view;

use std::future::Future;
use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::connection::Stream;
use crate::frontend::Frontend;
use crate::runtime::Shared;
use crate::tcp::Accepted;

/// The client preface of HTTP/2 (RFC 9113 3.4), as its first line reads.
pub const PREFACE_LINE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// The connection's socket for the `h2` crate, with the bytes already read from it first (the
/// preface seen by the HTTP/1 reader).
struct Io {
    s: Rc<Stream>,
    prefix: Vec<u8>,
    pos: usize,
}

impl AsyncRead for Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.pos < self.prefix.len() {
            let n = (self.prefix.len() - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            if self.pos == self.prefix.len() {
                self.prefix = Vec::new();
                self.pos = 0;
            }
            return Poll::Ready(Ok(()));
        }
        loop {
            std::task::ready!(self.s.poll_read_ready(cx))?;
            match self.s.try_read_buf(buf) {
                Ok(()) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.s.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return Poll::Ready(r),
            }
            std::task::ready!(self.s.poll_write_ready(cx))?;
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            match self.s.try_flush() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return Poll::Ready(r),
            }
            std::task::ready!(self.s.poll_write_ready(cx))?;
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.as_mut().poll_flush(cx))?;
        Poll::Ready(self.s.shutdown_write())
    }
}

/// Serves an HTTP/2 client connection until it closes, each stream in a task of its own.
/// `prefix`: bytes already read from it.
pub async fn serve(fe: Arc<Frontend>, shared: Arc<Shared>, conn: Accepted, prefix: Vec<u8>) {
    let Accepted { client, peer, proxied, dst_port, bind_no, vars, .. } = conn;
    // The streams' views reach the socket through a duplicate (`getsockname`, options): it
    // stays valid whatever the connection's task does.
    let Ok(fd) = client.as_fd().try_clone_to_owned() else { return };
    no_delay(&client);
    let fd = Arc::new(fd);
    let client = Rc::new(client);
    let io = Io { s: Rc::clone(&client), prefix, pos: 0 };
    let mut b = h2::server::Builder::new();
    let t = shared.h2;
    b.max_concurrent_streams(t.max_concurrent_streams)
        .initial_window_size(t.initial_window_size.min(0x7fff_ffff))
        .header_table_size(t.header_table_size)
        .max_frame_size(t.max_frame_size)
        .max_header_list_size(fe_bufsize(&fe) as u32)
        .enable_connect_protocol()
        // Heads as decoded bytes, built into the transaction's head (view.rs): no `http`
        // types made of them first.
        .raw_heads(true);
    let client_timeout = fe.timeouts.client;
    // Boxed: its state is half of this function's, which an idle connection would keep
    // resident for good (2.4 kB of the connection's memory).
    let handshake = Box::pin(b.handshake::<_, Bytes>(io));
    let mut h2 = match within(client_timeout, handshake).await {
        Some(Ok(c)) => c,
        _ => return close_quietly(&client),
    };
    // The connection's window is opened as large as it goes (HAProxy's choice: a slow reader's
    // stream must not hold the window all streams share) with the first stream, once the
    // client's SETTINGS were acknowledged: HAProxy's order, SETTINGS both ways, their ACK, then
    // the WINDOW_UPDATE, which clients written against it expect (set in the builder, h2 sent
    // it right after its own SETTINGS, before the ACK).
    let mut window_opened = false;
    let idle = fe
        .http
        .as_ref()
        .or(fe.upgrade.as_ref())
        .and_then(|h| h.timeouts.keep_alive)
        .or(client_timeout);
    let leftovers = view::Leftovers::default();
    let stop = crate::runtime::stop_notify();
    // Made once: a soft stop wakes it (a waiter per connection, not per stream).
    let stopped = stop.notified();
    tokio::pin!(stopped);
    stopped.as_mut().enable();
    let tick = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(tick);
    let mut idle_since = tokio::time::Instant::now();
    loop {
        // A soft stop or a reload that replaced this frontend: GOAWAY, the streams in flight
        // finish. Without a stream, `timeout http-keep-alive` (else `timeout client`) ends the
        // connection the same way; with streams, their own timeouts run. The flags are looked
        // at when a stream comes and at least once a second.
        let busy = h2.has_streams();
        if busy {
            idle_since = tokio::time::Instant::now();
        }
        let idle_over = !busy && idle.is_some_and(|d| idle_since.elapsed() >= d);
        if crate::runtime::retiring(&fe) || idle_over {
            h2.graceful_shutdown();
            let bound = client_timeout.unwrap_or(Duration::from_secs(30));
            let _ = within(Some(bound), drain(&mut h2)).await;
            return;
        }
        let next = tokio::select! {
            biased;
            n = h2.accept_raw() => n,
            _ = std::future::poll_fn(|cx| view::poll_leftovers(&leftovers, cx)) => continue,
            _ = &mut stopped, if !crate::runtime::stopping() => continue,
            _ = &mut tick => {
                // A connection without streams for a second gives back the memory of its
                // stream store and frame queues (HPACK's tables stay: the client indexes them).
                if !busy && idle_since.elapsed() >= Duration::from_secs(1) {
                    h2.release_idle_memory();
                }
                let wait = match idle {
                    Some(d) if !busy => d.saturating_sub(idle_since.elapsed()),
                    _ => Duration::from_secs(1),
                };
                let wait = wait.clamp(Duration::from_millis(1), Duration::from_secs(1));
                tick.as_mut().reset(tokio::time::Instant::now() + wait);
                continue;
            }
        };
        let (req, body, respond) = match next {
            Some(Ok(r)) => r,
            Some(Err(_)) | None => return,
        };
        if !window_opened {
            window_opened = true;
            h2.set_target_window_size(0x7fff_ffff);
        }
        let view = view::H1View::new(req, body, respond, Arc::clone(&fd), Arc::clone(&leftovers));
        let acc = Accepted {
            client: Stream::H2(Box::new(view)),
            peer,
            proxied: proxied.clone(),
            prepared: true,
            expect_proxy: false,
            dst_port,
            bind_no,
            // Each stream sees the session's variables and what it tracks.
            vars: vars.as_ref().map(|v| Box::new(v.for_stream())),
        };
        tasks::run(tasks::Job {
            fe: Arc::clone(&fe),
            shared: Arc::clone(&shared),
            stream: acc,
            conn: Rc::clone(&client),
        });
    }
}

thread_local! {
    /// The head each worker's views parse an HTTP/1 head into on its way to HTTP/2 frames.
    static PARSE_HEAD: std::cell::RefCell<fulcrum_http::Head> =
        std::cell::RefCell::new(fulcrum_http::Head::new());
}

/// The worker's head for parsing an HTTP/1 head the session wrote (warm, with its capacity:
/// no allocation per stream), given back when dropped. A second taker meanwhile gets a new one.
pub struct ParseHead(fulcrum_http::Head);

impl ParseHead {
    pub fn take() -> ParseHead {
        let mut h = PARSE_HEAD.with(|h| std::mem::take(&mut *h.borrow_mut()));
        h.start_over();
        ParseHead(h)
    }
}

impl std::ops::Deref for ParseHead {
    type Target = fulcrum_http::Head;
    fn deref(&self) -> &fulcrum_http::Head {
        &self.0
    }
}

impl std::ops::DerefMut for ParseHead {
    fn deref_mut(&mut self) -> &mut fulcrum_http::Head {
        &mut self.0
    }
}

impl Drop for ParseHead {
    fn drop(&mut self) {
        let h = std::mem::take(&mut self.0);
        let _ = PARSE_HEAD.try_with(|p| *p.borrow_mut() = h);
    }
}

/// Appends an HTTP/1 head's fields to an HTTP/2 header map, but those `skip` says to drop and
/// those HTTP/2 cannot carry; their values share one buffer (one allocation per head instead of
/// one per value).
pub fn append_fields(
    head: &fulcrum_http::Head,
    skip: impl Fn(&[u8]) -> bool,
    map: &mut http::HeaderMap,
) {
    let (mut total, mut count) = (0, 0);
    for (_, v) in head.headers().filter(|(n, _)| !skip(n)) {
        total += v.len();
        count += 1;
    }
    let mut all = bytes::BytesMut::with_capacity(total);
    for (_, v) in head.headers().filter(|(n, _)| !skip(n)) {
        all.extend_from_slice(v);
    }
    let all = all.freeze();
    map.reserve(count);
    let mut at = 0;
    for (name, value) in head.headers().filter(|(n, _)| !skip(n)) {
        let v = all.slice(at..at + value.len());
        at += value.len();
        if let (Ok(n), Ok(v)) =
            (http::HeaderName::from_bytes(name), http::HeaderValue::from_maybe_shared(v))
        {
            map.append(n, v);
        }
    }
}

/// A `Sec-WebSocket-Key` for an HTTP/1.1 upgrade made from an HTTP/2 extended CONNECT: 16
/// random bytes in base64 (RFC 6455 4.1).
pub fn websocket_key() -> String {
    use base64::Engine;
    let mut nonce = [0u8; 16];
    let _ = aws_lc_rs::rand::fill(&mut nonce);
    base64::engine::general_purpose::STANDARD.encode(nonce)
}

/// HTTP/2 writes frames as they come (a HEADERS frame after the SETTINGS, a WINDOW_UPDATE
/// alone): Nagle's algorithm would hold each small write until the previous one is
/// acknowledged, 40 ms with a delayed ACK. HAProxy sets `TCP_NODELAY` on every connection.
fn no_delay(s: &Stream) {
    if let t @ Stream::Tcp(_) = s.transport() {
        let _ = socket2::SockRef::from(t).set_tcp_nodelay(true);
    }
}

/// Closes a connection that did not speak HTTP/2 with a FIN, not a reset: what it sent is read
/// first (a socket closed with unread bytes resets the connection).
fn close_quietly(client: &Stream) {
    let mut buf = [0u8; 4096];
    for _ in 0..16 {
        match client.try_read(&mut buf) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let _ = client.shutdown_write();
}

/// Polls the connection until the client has closed it (after a GOAWAY).
async fn drain<T: AsyncRead + AsyncWrite + Unpin>(h2: &mut h2::server::Connection<T, Bytes>) {
    while let Some(Ok(_)) = h2.accept_raw().await {}
}

fn fe_bufsize(fe: &Frontend) -> usize {
    fe.http.as_ref().or(fe.upgrade.as_ref()).map_or(16_384, |h| h.bufsize)
}

/// `Some(output)` unless `limit` passed first.
async fn within<F: Future>(limit: Option<Duration>, f: F) -> Option<F::Output> {
    match limit {
        Some(d) => tokio::time::timeout(d, f).await.ok(),
        None => Some(f.await),
    }
}
