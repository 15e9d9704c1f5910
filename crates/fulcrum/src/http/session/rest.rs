//! A keep-alive connection between requests when its session has dissolved: what it keeps
//! (`Resting`, a few hundred bytes), the session dissolving into it (`Session::rest`), and the
//! hand-written wait for its next request; and the other way an HTTP/1 session hands its
//! connection on, to HTTP/2 (`Session::into_h2`). A connection whose request head stopped
//! coming half-way (a slow client) rests too, keeping the bytes so far (`Pending`): a slow
//! client then costs its few bytes and this state, not a session and a receive buffer.
//! Must not touch: requests (the session resumes for those).

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::{Peer, Served, ServerConn, Session};
use crate::connection::Stream;
use crate::rules::sample::Vars;
use crate::tcp::Accepted;

/// What a keep-alive connection keeps while it rests between requests. It lives in the
/// connection's task (see `runtime::accept`), so every byte here is a byte per idle connection:
/// what most connections do not have (variables, a private server connection, a local address
/// for the rules) is boxed apart and absent when empty.
pub struct Resting {
    pub(super) client: Stream,
    pub(super) peer: Option<SocketAddr>,
    /// When `timeout http-keep-alive` ends the rest.
    pub(super) deadline: Option<Instant>,
    pub(super) more: Option<Box<RestingMore>>,
    pub(super) requests: u32,
    pub(super) dst_port: u16,
    pub(super) bind_no: u16,
}

/// The rarer parts of a resting connection.
pub(super) struct RestingMore {
    pub(super) local: Option<SocketAddr>,
    pub(super) pp: Option<Box<crate::connection::proxy::Header>>,
    /// When the previous transaction ended (only when logging): the next one's `Ti` and
    /// date count from there, as in HAProxy.
    pub(super) idle_since: Option<Instant>,
    /// `sess.` variables.
    pub(super) vars: Vars,
    pub(super) own: Option<ServerConn>,
    /// A request head begun and not complete.
    pub(super) pending: Option<Box<Pending>>,
}

/// A request whose head had begun when its connection rested: its bytes so far, when they
/// began (for the log), and when `timeout http-request` ends it.
pub(super) struct Pending {
    pub(super) bytes: Box<[u8]>,
    pub(super) began: Option<Instant>,
    pub(super) deadline: Option<Instant>,
}

impl Session<'_> {
    /// Dissolves the session of an idle HTTP/1 connection into its small [`Resting`] state.
    pub(super) fn rest(mut self, deadline: Option<Instant>) -> Served {
        let pending = (!self.cbuf.is_empty()).then(|| {
            let began = self.t.o.marks.request_begin;
            Box::new(Pending { bytes: self.cbuf.data().into(), began, deadline })
        });
        self.cbuf.clear();
        self.park();
        let idle_since = self.t.o.marks.start.filter(|_| self.logs);
        let more = (self.local.is_some()
            || self.pp.is_some()
            || !self.t.vars.is_empty()
            || self.own.is_some()
            || idle_since.is_some()
            || pending.is_some())
        .then(|| {
            Box::new(RestingMore {
                local: self.local,
                pp: self.pp,
                vars: self.t.vars,
                own: self.own,
                idle_since,
                pending,
            })
        });
        // (Only an HTTP/1 connection's session rests: the caller checks.)
        let Peer::Bytes(client) = self.client else { return Served::Closed };
        Served::Rest(Resting {
            client,
            peer: self.peer,
            deadline,
            more,
            requests: self.requests,
            dst_port: self.dst_port,
            bind_no: self.bind_no,
        })
    }

    /// Hands an HTTP/1 connection that opened with HTTP/2's preface on, with the bytes read.
    pub(super) fn into_h2(mut self) -> Served {
        let prefix = self.cbuf.data().to_vec();
        self.cbuf.clear();
        let vars = (!self.t.vars.is_empty()).then(|| Box::new(std::mem::take(&mut self.t.vars)));
        // (Only an HTTP/1 connection's session turns into HTTP/2: the caller checks.)
        let Peer::Bytes(client) = self.client else { return Served::Closed };
        let conn = Accepted {
            client,
            peer: self.peer,
            proxied: self.pp,
            prepared: true,
            expect_proxy: false,
            expect_cip: false,
            dst_port: self.dst_port,
            bind_no: self.bind_no,
            vars,
        };
        Served::H2(conn, prefix)
    }
}

impl Resting {
    /// Waits until the client sends its next request (`true`: resume the session), or closes,
    /// or the keep-alive timeout or a soft stop ends the rest (`false`: close the connection).
    /// A request half-received is resumed by its `timeout http-request` too (the session
    /// answers 408), and waits through a soft stop as a session would; so does every rest
    /// when `through_stop` (`option idle-close-on-response`).
    pub fn wait(&self, through_stop: bool) -> RestingWait<'_> {
        let pending = self.more.as_ref().is_some_and(|m| m.pending.is_some());
        let through_stop = through_stop || pending;
        let fd = self.client.as_fd().as_raw_fd();
        RestingWait {
            client: &self.client,
            timer: self.deadline.map(tokio::time::sleep_until),
            _watched: (!through_stop).then(|| crate::lifecycle::StopWatch::new(fd)),
            pending,
            through_stop,
        }
    }
}

pin_project_lite::pin_project! {
    /// See [`Resting::wait`]. Written by hand rather than as an `async` block: its size is
    /// part of the memory of every idle connection, and a generator keeps room for each of its
    /// sub-futures apart. A soft stop wakes it by shutting the socket's read side (the
    /// `StopWatch`), which costs no waiter here.
    pub struct RestingWait<'a> {
        client: &'a Stream,
        #[pin]
        timer: Option<Sleep>,
        _watched: Option<crate::lifecycle::StopWatch>,
        pending: bool,
        through_stop: bool,
    }
}

impl Future for RestingWait<'_> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.project();
        if !*this.through_stop && crate::lifecycle::stopping() {
            return Poll::Ready(false);
        }
        // Readable also means closed or in error: the session finds out which.
        if this.client.poll_read_ready(cx).is_ready() {
            return Poll::Ready(true);
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(*this.pending),
            _ => Poll::Pending,
        }
    }
}
