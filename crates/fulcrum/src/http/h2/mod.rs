//! HTTP/2 (HAProxy's `mux_h2`), on both sides, without the `h2` crate's connection machinery:
//! [`frontconn`] serves clients (frames, stream states, flow control, the limits against
//! abusive clients), [`backconn`] speaks to servers; header blocks are decoded by Fulcrum's own
//! HPACK decoder (`fulcrum_h2::hpack`, fuzzed) and encoded by [`hpack`]. Each client stream runs as a
//! task of its own ([`tasks`]) through the same transaction code as an HTTP/1.1 request
//! ([`view`]); a transaction's stream to a server is an [`upstream::UpView`].
//!
//! A connection speaks HTTP/2 when TLS negotiated `h2` (`alpn h2,http/1.1` on the bind), or
//! when a clear-text connection opens with HTTP/2's preface (prior knowledge, as HAProxy
//! switches to HTTP/2 on seeing `PRI * HTTP/2.0`).
//!
//! Owns: the client connection's task, its idle timeout and GOAWAY, its streams' tasks. Must
//! not touch: transactions (the session runs them), accept and limits (runtime).

pub mod backconn;
pub mod body;
pub mod conn;
pub mod frames;
pub mod frontconn;
pub mod hpack;
pub mod tasks;
pub mod upstream;
pub mod view;

use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::connection::Stream;
use crate::frontend::Frontend;
use crate::http::peer::Peer;
use crate::shared::Shared;
use crate::tcp::Accepted;
use crate::worker::{Id, Slot};

/// The client preface of HTTP/2 (RFC 9113 3.4), as its first line reads.
pub const PREFACE_LINE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// A connection's socket as `AsyncRead`/`AsyncWrite` for its task, with any bytes read from it
/// before first.
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
    let mut io = Io { s: Rc::clone(&client), prefix: Vec::new(), pos: 0 };
    let h2 = frontconn::Conn::new(&shared.h2, fe_bufsize(&fe), &prefix, Arc::clone(&fe.counters));
    drop(prefix);
    let client_timeout = fe.timeouts.client;
    let idle = fe.timeouts.http_keep_alive.or(client_timeout);
    let stop = crate::lifecycle::stop_notify();
    // Made once: a soft stop wakes it (a waiter per connection, not per stream).
    let stopped = stop.notified();
    tokio::pin!(stopped);
    stopped.as_mut().enable();
    let tick = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(tick);
    let mut idle_since = tokio::time::Instant::now();
    // Once GOAWAY went out: when the connection ends, streams in flight or not.
    let mut deadline: Option<tokio::time::Instant> = None;
    let mut opened = Vec::new();
    loop {
        // A soft stop or a reload that replaced this frontend: GOAWAY, the streams in flight
        // finish. Without a stream, `timeout http-keep-alive` (else `timeout client`) ends the
        // connection the same way; with streams, their own timeouts run. The flags are looked
        // at when a stream comes and at least once a second.
        let busy = h2.has_streams();
        let now = tokio::time::Instant::now();
        if busy {
            idle_since = now;
        }
        let idle_over = !busy && idle.is_some_and(|d| now.duration_since(idle_since) >= d);
        if deadline.is_none() && (fe.retiring() || idle_over) {
            h2.goaway();
            deadline = Some(now + client_timeout.unwrap_or(Duration::from_secs(30)));
        }
        if deadline.is_some_and(|d| now >= d) {
            h2.unregister();
            return;
        }
        let event = tokio::select! {
            biased;
            e = std::future::poll_fn(|cx| h2.poll_drive(cx, &mut io, &mut opened)) => e,
            _ = &mut stopped, if !crate::lifecycle::stopping() => continue,
            _ = &mut tick => {
                if !busy {
                    h2.trim();
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
        if let frontconn::Event::Ended = event {
            return;
        }
        for id in opened.drain(..) {
            // (A body that came whole with the head is still to be read.)
            let taken = h2.stream(id, |st| {
                let ended = st.recv_end && st.data.is_empty() && st.trailers.is_none();
                (st.part.request.take(), ended)
            });
            let Some((Some(raw), ended)) = taken else {
                continue;
            };
            let view = view::H1View::new(h2.key(), id, raw, ended, Arc::clone(&fd));
            let acc = Accepted {
                client: Peer::H2(Box::new(view)),
                peer,
                proxied: proxied.clone(),
                prepared: true,
                expect_proxy: false,
                expect_cip: false,
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
}

/// The head each worker's views parse an HTTP/1 head into on its way to HTTP/2 frames.
static PARSE_HEAD: Slot<std::cell::RefCell<fulcrum_http::Head>> =
    Slot::new(Id::H2Head, || std::cell::RefCell::new(fulcrum_http::Head::new()));

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
        PARSE_HEAD.with(|p| *p.borrow_mut() = h);
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

fn fe_bufsize(fe: &Frontend) -> usize {
    fe.http.as_ref().or(fe.upgrade.as_ref()).map_or(16_384, |h| h.bufsize)
}
