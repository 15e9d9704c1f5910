//! A body between two HTTP/2 peers, moved as pieces (data blocks, trailers as fields, the
//! end): DATA frames to DATA frames, with no HTTP/1 chunk written and scanned again on the way
//! (a gRPC call's messages and its `grpc-status` trailers). `pump` comes here when both sides
//! can (`Peer::gives_pieces`, `Peer::takes_pieces`) and returns what this returns.
//!
//! Must not touch: bytes (an HTTP/1 side goes `pump`'s way), rules.

use std::task::{Context, Waker};

use super::*;
use crate::http::peer::Piece;

/// Moves the body `from` gives to `to` piece by piece, as [`pump`] would move its bytes:
/// `sized`, the length its head gives (the body ends there, as its framing would end it),
/// else the source says where it ends. `watch`, the timeouts and `moved` as for [`pump`].
pub(super) async fn pump(
    from: &Peer,
    to: &Peer,
    sized: Option<u64>,
    (mut read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    mut watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
) -> Xfer {
    let mut remaining = sized.unwrap_or(u64::MAX);
    let mut buf = Vec::new();
    loop {
        // What came already is taken at once: no timer armed, no waker kept.
        let piece = match from.poll_piece(&mut Context::from_waker(Waker::noop()), &mut buf) {
            Poll::Ready(Ok(piece)) => piece,
            Poll::Ready(Err(_)) => return Xfer::ReadError,
            Poll::Pending => {
                match wait(from, &mut buf, &mut watch, (read_timer.as_mut(), read_timeout)).await {
                    Ok(piece) => piece,
                    Err(x) => return x,
                }
            }
        };
        let (data, short): (&[u8], bool) = match &piece {
            Piece::Data { end } => {
                let n = (buf.len() as u64).min(remaining) as usize;
                remaining -= n as u64;
                (&buf[..n], *end && sized.is_some() && remaining > 0)
            }
            _ => (&[], sized.is_some() && remaining > 0),
        };
        let end = match &piece {
            Piece::Data { end } => (*end && !short) || (sized.is_some() && remaining == 0),
            _ => !short,
        };
        if short && data.is_empty() {
            return Xfer::ReadEof; // the body ended before its length
        }
        if let Err(e) = writable(to, write_timeout).await {
            return match e.kind() {
                std::io::ErrorKind::TimedOut => Xfer::WriteTimeout,
                _ => Xfer::WriteError,
            };
        }
        let sent = match &piece {
            Piece::Trailers(fields) if end => to.send_trailers(fields),
            _ => to.send_data(data, end),
        };
        if sent.is_err() {
            return Xfer::WriteError;
        }
        *moved += data.len() as u64;
        if short {
            return Xfer::ReadEof;
        }
        if end {
            return Xfer::Done;
        }
    }
}

/// Waits for the next piece `from` gives, within `read_timeout` of inactivity; with `watch`,
/// stops as soon as the watched side has something to say (see `pump`).
async fn wait(
    from: &Peer,
    buf: &mut Vec<u8>,
    watch: &mut Option<(&Peer, &mut RecvBuf)>,
    (read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
) -> Result<Piece, Xfer> {
    let (mut watched, mut gone) = (false, false);
    let next = poll_fn(|cx| {
        if let Poll::Ready(r) = from.poll_piece(cx, buf) {
            return Poll::Ready(r.map(Some));
        }
        if let Some((other, obuf)) = watch.as_mut() {
            // The server answering during the upload (see `pump`); a head that came built is
            // left for `exchange` to take as it is.
            while other.poll_read_ready(cx).is_ready() {
                if other.has_response_head() {
                    watched = true;
                    return Poll::Ready(Ok(None));
                }
                match obuf.try_fill(*other) {
                    Ok(None) => continue, // spurious; readiness now cleared
                    Ok(Some(0)) | Err(_) => gone = true,
                    Ok(Some(_)) => watched = true,
                }
                return Poll::Ready(Ok(None));
            }
        }
        Poll::Pending
    });
    match timer::within_io(read_timer, read_timeout, next).await {
        Ok(Some(piece)) => Ok(piece),
        Ok(None) if watched => Err(Xfer::Interrupted),
        Ok(None) => {
            debug_assert!(gone);
            Err(Xfer::WriteError)
        }
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(Xfer::ReadTimeout),
        Err(_) => Err(Xfer::ReadError),
    }
}

/// Waits until `to` takes more of a body, within `limit` of inactivity (no timer unless it
/// must wait).
async fn writable(to: &Peer, limit: Option<Duration>) -> std::io::Result<()> {
    if let Poll::Ready(r) = to.poll_write_ready(&mut Context::from_waker(Waker::noop())) {
        return r;
    }
    let wait = poll_fn(|cx| to.poll_write_ready(cx));
    match limit {
        Some(d) => tokio::time::timeout(d, wait)
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
        None => wait.await,
    }
}
