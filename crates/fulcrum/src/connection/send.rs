//! Writing a whole message to a [`Pipe`] (a [`Stream`] or an HTTP/2 stream's view) and closing an idle connection with a reset:
//! `write_all`, `write_all_within` and `send_within` try the syscall first and wait for
//! readiness only after `EAGAIN` (a socket that takes everything costs one `send` and no clock
//! read), within an inactivity limit the caller gives; `discard` drops a connection with
//! nothing in flight without leaving a TIME_WAIT entry. Used by both kinds of sessions (`tcp`,
//! `http`; `http::io` and `http::pool` re-export them).
//!
//! Must not touch: what is written (HTTP or PROXY framing), timeouts policy (callers give the
//! limit).

use std::future::poll_fn;
use std::io;
use std::task::Poll;
use std::time::Duration;

use super::{Pipe, Stream};

/// Writes all of `data`, within `limit` of inactivity. The first attempt is made at once and
/// no timer is armed unless the socket cannot take everything now (the common case costs one
/// `send` and no clock read).
pub async fn write_all_within<P: Pipe + ?Sized>(
    s: &P,
    data: &[u8],
    limit: Option<std::time::Duration>,
) -> io::Result<()> {
    send_within(s, &[], data, limit, false).await
}

/// Writes all of `data`.
pub async fn write_all<P: Pipe + ?Sized>(s: &P, data: &[u8]) -> io::Result<()> {
    send_within(s, &[], data, None, false).await
}

/// Writes all of `head` then all of `data`, within `limit` of inactivity: one `sendmsg` when
/// the socket takes both (a response head and the first bytes of its body leave together).
/// `more`: more of this message follows at once (see [`Stream::try_send`]). The first attempt
/// is made at once and no timer is armed unless the socket cannot take everything now.
pub async fn send_within<P: Pipe + ?Sized>(
    s: &P,
    mut head: &[u8],
    mut data: &[u8],
    limit: Option<std::time::Duration>,
    more: bool,
) -> io::Result<()> {
    // Sends until everything went or the socket is full (`WouldBlock`).
    let send = |head: &mut &[u8], data: &mut &[u8]| -> io::Result<()> {
        while !head.is_empty() || !data.is_empty() {
            let n = s.try_send(head, data, more)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            let h = n.min(head.len());
            *head = &head[h..];
            *data = &data[n - h..];
        }
        // TLS: the last records may still wait for the socket.
        s.try_flush()
    };
    match send(&mut head, &mut data) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let rest = poll_fn(|cx| loop {
        match send(&mut head, &mut data) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            r => return Poll::Ready(r),
        }
        match s.poll_write_ready(cx) {
            Poll::Ready(Ok(())) => continue,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
    });
    match limit {
        Some(d) => tokio::time::timeout(d, rest)
            .await
            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
        None => rest.await,
    }
}

/// Closes an idle connection with a reset instead of a FIN: nothing is in flight, and the
/// proxy's side then keeps no TIME_WAIT entry (a busy proxy closing thousands of idle server
/// connections a second would otherwise run out of local ports; HAProxy's `nolinger`).
pub fn discard(stream: Stream) {
    abort(&stream);
}

/// Sets a TCP connection to close with a reset (`SO_LINGER` 0) when it is dropped.
pub fn abort(stream: &Stream) {
    if let Stream::Tcp(_) = stream {
        let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
    }
}
