//! Forwarding bytes both ways between a client and a server until both directions are done.
//!
//! One future per session polls both directions and one timer: no extra tasks, no channels.
//! A direction borrows a pool buffer only while it holds data. End-of-stream on one side is
//! passed on as a half-close (FIN) to the other side. Inactivity is tracked per side (reading
//! from it or writing to it counts as activity, reading only with `option
//! independent-streams`); the timer is re-armed lazily, only when it
//! fires early, so busy connections cost no timer operations.

use std::future::{poll_fn, Future};
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::bwlim::{self, Active, Limit, Part};
use crate::connection::{Buf, Pipe};

/// Inactivity timeouts of each side, already resolved (`timeout tunnel` applied by the caller).
#[derive(Clone, Copy, Debug, Default)]
pub struct TunnelTimeouts {
    pub client: Option<Duration>,
    pub server: Option<Duration>,
    /// Replace `client`/`server` once one direction is shut (`timeout client-fin`/`server-fin`).
    pub client_fin: Option<Duration>,
    pub server_fin: Option<Duration>,
    /// `option independent-streams` (the frontend's, the backend's): only reading from the
    /// side counts as its activity, not writing to it (HAProxy's `SC_FL_INDEP_STR`).
    pub client_reads_only: bool,
    pub server_reads_only: bool,
}

/// How the tunnel ended; maps onto HAProxy's termination codes (first letter C or S).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelEnd {
    /// Both directions finished cleanly.
    Done,
    ClientTimeout,
    ServerTimeout,
    ClientError,
    ServerError,
}

impl std::fmt::Display for TunnelEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TunnelEnd::Done => "the tunnel ended",
            TunnelEnd::ClientTimeout => "timeout client expired in the tunnel",
            TunnelEnd::ServerTimeout => "timeout server expired in the tunnel",
            TunnelEnd::ClientError => "the client's side of the tunnel failed",
            TunnelEnd::ServerError => "the server's side of the tunnel failed",
        })
    }
}

/// Bytes moved, for counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Moved {
    pub client_to_server: u64,
    pub server_to_client: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// One direction: bytes read from `from` wait in `buf[start..end]` to be written to `to`.
#[derive(Default)]
struct Flow {
    /// Bandwidth limits on this direction (`set-bandwidth-limit`), in the filters' order.
    limits: Vec<Limit>,
    /// Wakes the direction when its limits let more go.
    held: Option<std::pin::Pin<Box<Sleep>>>,
    buf: Option<Buf>,
    start: usize,
    end: usize,
    eof: bool,
    shut: bool,
    moved: u64,
    /// `to` is TLS and holds records its socket has not taken yet.
    unflushed: bool,
}

/// What one call to `Flow::pump` observed.
#[derive(Default)]
struct Activity {
    read: bool,
    wrote: bool,
}

impl Flow {
    fn done(&self) -> bool {
        self.shut
    }

    /// Moves as much as possible without blocking. `Err` carries the side that failed.
    fn pump<F: Pipe, T: Pipe>(
        &mut self,
        from: &F,
        to: &T,
        from_side: Side,
        cx: &mut Context<'_>,
        act: &mut Activity,
    ) -> Result<(), Side> {
        let to_side = if from_side == Side::Client { Side::Server } else { Side::Client };
        loop {
            if self.unflushed {
                match to.poll_write_ready(cx) {
                    Poll::Pending => return Ok(()),
                    Poll::Ready(Err(_)) => return Err(to_side),
                    Poll::Ready(Ok(())) => {}
                }
                match to.try_flush() {
                    Ok(()) => self.unflushed = false,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => return Err(to_side),
                }
            } else if self.start < self.end {
                match to.poll_write_ready(cx) {
                    Poll::Pending => return Ok(()),
                    Poll::Ready(Err(_)) => return Err(to_side),
                    Poll::Ready(Ok(())) => {}
                }
                let mut len = self.end - self.start;
                if !self.limits.is_empty() {
                    let (limits, held) = (&mut self.limits, &mut self.held);
                    match bwlim::poll_take(limits, Part::All, len, false, held, cx) {
                        Poll::Ready(n) => len = n,
                        Poll::Pending => return Ok(()),
                    }
                }
                let Some(buf) = self.buf.as_ref() else { return Ok(()) };
                match to.try_write(&buf[self.start..self.start + len]) {
                    Ok(n) => {
                        if !self.limits.is_empty() {
                            bwlim::passed(&mut self.limits, Part::All, n);
                        }
                        self.start += n;
                        self.moved += n as u64;
                        act.wrote = true;
                        if self.start == self.end {
                            self.start = 0;
                            self.end = 0;
                            self.buf = None; // back to the pool while idle
                                             // TLS: records the socket did not take yet go before more is read.
                            match to.try_flush() {
                                Ok(()) => {}
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                                    self.unflushed = true
                                }
                                Err(_) => return Err(to_side),
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => return Err(to_side),
                }
            } else if self.eof {
                if !self.shut {
                    self.shut = true;
                    if to.shutdown_write().is_err() {
                        return Err(to_side);
                    }
                }
                return Ok(());
            } else {
                match from.poll_read_ready(cx) {
                    Poll::Pending => return Ok(()),
                    Poll::Ready(Err(_)) => return Err(from_side),
                    Poll::Ready(Ok(())) => {}
                }
                let buf = self.buf.get_or_insert_with(Buf::take);
                match from.try_read(buf) {
                    Ok(0) => {
                        self.eof = true;
                        self.buf = None;
                    }
                    Ok(n) => {
                        self.end = n;
                        act.read = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.buf = None;
                        continue;
                    }
                    Err(_) => return Err(from_side),
                }
            }
        }
    }
}

fn err_end(side: Side) -> TunnelEnd {
    match side {
        Side::Client => TunnelEnd::ClientError,
        Side::Server => TunnelEnd::ServerError,
    }
}

/// Forwards until both directions are shut, a side fails, or a side stays inactive too long.
///
/// `killed` says whether a server state change ended the session (it shuts the server
/// socket): once the server side has ended, the tunnel then ends at once, both ways.
/// `limits`: the stream's bandwidth limits (`bwlim-in` on what the client sends, `bwlim-out`
/// on what the server sends).
pub async fn run<C: Pipe, S: Pipe>(
    client: &C,
    server: &S,
    mut t: TunnelTimeouts,
    killed: &dyn Fn() -> bool,
    limits: Option<Box<Active>>,
) -> (TunnelEnd, Moved) {
    let mut c2s = Flow::default();
    let mut s2c = Flow::default();
    if let Some(l) = limits {
        let Active { up, down } = *l;
        (c2s.limits, s2c.limits) = (up, down);
    }
    let start = Instant::now();
    let mut client_seen = start;
    let mut server_seen = start;
    let far = start + Duration::from_secs(86400 * 365);
    let sleep = tokio::time::sleep_until(far);
    tokio::pin!(sleep);
    // A side's read timeout under `independent-streams`, which ended its direction only.
    let mut timed_out = None;

    let end = poll_fn(|cx| {
        let mut a = Activity::default();
        if let Err(side) = c2s.pump(client, server, Side::Client, cx, &mut a) {
            return Poll::Ready(err_end(side));
        }
        let client_read = a.read;
        let server_wrote = a.wrote;
        let mut b = Activity::default();
        if let Err(side) = s2c.pump(server, client, Side::Server, cx, &mut b) {
            return Poll::Ready(err_end(side));
        }
        if (c2s.done() && s2c.done()) || (s2c.eof && killed()) {
            return Poll::Ready(timed_out.unwrap_or(TunnelEnd::Done));
        }
        if client_read || server_wrote || b.read || b.wrote {
            let now = Instant::now();
            if client_read || (b.wrote && !t.client_reads_only) {
                client_seen = now;
            }
            if b.read || (server_wrote && !t.server_reads_only) {
                server_seen = now;
            }
        }
        let half_closed = c2s.eof || s2c.eof;
        let (tc, ts) = if half_closed {
            (t.client_fin.or(t.client), t.server_fin.or(t.server))
        } else {
            (t.client, t.server)
        };
        let end = poll_deadline(cx, sleep.as_mut(), client_seen, tc, server_seen, ts);
        // HAProxy's read timeout of an independent side shuts that side's reading only: its
        // direction ends as on a FIN and the other goes on; the side then times out as any.
        let (flow, seen, reads_only) = match end {
            Poll::Ready(TunnelEnd::ClientTimeout) if t.client_reads_only && !c2s.eof => {
                (&mut c2s, &mut client_seen, &mut t.client_reads_only)
            }
            Poll::Ready(TunnelEnd::ServerTimeout) if t.server_reads_only && !s2c.eof => {
                (&mut s2c, &mut server_seen, &mut t.server_reads_only)
            }
            _ => return end,
        };
        if let (None, Poll::Ready(e)) = (timed_out, end) {
            timed_out = Some(e);
        }
        (flow.eof, *seen, *reads_only) = (true, Instant::now(), false);
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
    let moved = Moved { client_to_server: c2s.moved, server_to_client: s2c.moved };
    (end, moved)
}

/// Arms the timer for the earliest side deadline; reports the side whose deadline has passed.
fn poll_deadline(
    cx: &mut Context<'_>,
    mut sleep: std::pin::Pin<&mut Sleep>,
    client_seen: Instant,
    tc: Option<Duration>,
    server_seen: Instant,
    ts: Option<Duration>,
) -> Poll<TunnelEnd> {
    let dc = tc.map(|d| client_seen + d);
    let ds = ts.map(|d| server_seen + d);
    let next = match (dc, ds) {
        (None, None) => return Poll::Pending,
        (Some(c), None) => c,
        (None, Some(s)) => s,
        (Some(c), Some(s)) => c.min(s),
    };
    loop {
        if next < sleep.deadline() {
            sleep.as_mut().reset(next);
        }
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let now = Instant::now();
        if dc.is_some_and(|d| d <= now) {
            return Poll::Ready(TunnelEnd::ClientTimeout);
        }
        if ds.is_some_and(|d| d <= now) {
            return Poll::Ready(TunnelEnd::ServerTimeout);
        }
        // Fired early: activity moved the deadline on since the timer was armed.
        sleep.as_mut().reset(next);
    }
}
