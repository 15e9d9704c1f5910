//! What a session tracks (HAProxy's stick counters, `stkctr`): up to three entries, each
//! tracked at the session level (`tcp-request connection|session`, kept for the whole
//! connection) or the stream level (`tcp-request content`, `http-request`, `http-response`,
//! released as the stream ends). A slot the session tracks is the stream's too (HAProxy copies
//! the session's counters into each new stream), so a stream cannot track it again.
//!
//! Events counted here, as HAProxy counts them: a tracked connection (`conn_cnt`, `conn_cur`,
//! `conn_rate`), a new session (`sess_cnt`, `sess_rate`), each HTTP request (`http_req_*`),
//! HTTP errors (`http_err_*`: 4xx from the server, denied requests, bad requests) and failures
//! (`http_fail_*`: 5xx but 501 and 505), bytes each way (`bytes_in_*`, `bytes_out_*`).
//!
//! Must not touch: rules (they decide what to track), sockets.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fulcrum_config::DataType as D;

use super::{now, Entry, Table};

/// One tracked entry.
#[derive(Debug)]
pub struct Tracked {
    pub table: Arc<Table>,
    pub entry: Arc<Entry>,
    /// Tracked by the session (kept across streams).
    session: bool,
    /// An HTTP/2 stream's share of what its connection tracks: the connection counts it and
    /// lets it go; the share only keeps the entry alive.
    borrowed: bool,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.borrowed {
            if self.entry.trackers.fetch_sub(1, Ordering::Relaxed) == 1 && self.table.expire != 0 {
                self.table.kill_if_expired(&self.entry, now());
            }
            return;
        }
        // HAProxy's `stream_store_counters`: one connection less, the entry touched so it
        // lives `expire` from now.
        if self.table.layout.has(D::ConnCur) {
            super::freq::sub_one(&self.table.layout, &mut self.entry.data(), D::ConnCur);
            self.entry.touch(now());
        }
        if self.entry.trackers.fetch_sub(1, Ordering::Relaxed) == 1 && self.table.expire != 0 {
            self.table.kill_if_expired(&self.entry, now());
        }
    }
}

/// A session's stick counters.
#[derive(Debug, Default)]
pub struct Counters {
    slots: [Option<Tracked>; 3],
}

impl Counters {
    /// What slot `i` tracks.
    pub fn slot(&self, i: u8) -> Option<&Tracked> {
        self.slots.get(usize::from(i))?.as_ref()
    }

    /// Nothing is tracked.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    /// Tracks `entry` in slot `i` unless the slot already tracks something (the first wins),
    /// counting a connection on it. True when tracked.
    pub fn track(&mut self, i: u8, table: &Arc<Table>, entry: Arc<Entry>, session: bool) -> bool {
        let Some(slot) = self.slots.get_mut(usize::from(i)) else { return false };
        if slot.is_some() {
            return false;
        }
        entry.trackers.fetch_add(1, Ordering::Relaxed);
        table.add(&entry, &[(D::ConnCur, 1), (D::ConnCnt, 1), (D::ConnRate, 1)]);
        *slot = Some(Tracked { table: table.clone(), entry, session, borrowed: false });
        true
    }

    /// What an HTTP/2 stream sees of its connection's counters: the entries the session
    /// tracks, counted on by the stream's requests, errors and bytes, released by the
    /// connection only.
    pub fn share(&self) -> Counters {
        let mut c = Counters::default();
        for (i, t) in self.slots.iter().enumerate() {
            if let Some(t) = t.as_ref().filter(|t| t.session) {
                t.entry.trackers.fetch_add(1, Ordering::Relaxed);
                c.slots[i] = Some(Tracked {
                    table: t.table.clone(),
                    entry: t.entry.clone(),
                    session: true,
                    borrowed: true,
                });
            }
        }
        c
    }

    /// Adds to the same data types of every tracked entry.
    fn add_all(&self, adds: &[(D, u64)]) {
        for t in self.slots.iter().flatten() {
            t.table.add(&t.entry, adds);
        }
    }

    /// A session begins (after `tcp-request session` rules): `sess_cnt`, `sess_rate`.
    pub fn session_started(&self) {
        self.add_all(&[(D::SessCnt, 1), (D::SessRate, 1)]);
    }

    /// An HTTP request arrived (valid or not): `http_req_cnt`, `http_req_rate`.
    pub fn http_request(&self) {
        self.add_all(&[(D::HttpReqCnt, 1), (D::HttpReqRate, 1)]);
    }

    /// Counts an HTTP request on slot `i` alone (a stream that just tracked it, as HAProxy's
    /// `track-sc` in `http-request` rules does).
    pub fn http_request_on(&self, i: u8) {
        if let Some(t) = self.slot(i) {
            t.table.add(&t.entry, &[(D::HttpReqCnt, 1), (D::HttpReqRate, 1)]);
        }
    }

    /// An HTTP error on the client's side (`http_err_*`).
    pub fn http_error(&self) {
        self.add_all(&[(D::HttpErrCnt, 1), (D::HttpErrRate, 1)]);
    }

    /// An HTTP failure on the server's side (`http_fail_*`).
    pub fn http_failure(&self) {
        self.add_all(&[(D::HttpFailCnt, 1), (D::HttpFailRate, 1)]);
    }

    /// Bytes received from the client (`in`) and sent to it (`out`).
    pub fn bytes(&self, bytes_in: u64, bytes_out: u64) {
        if bytes_in == 0 && bytes_out == 0 {
            return;
        }
        self.add_all(&[
            (D::BytesInCnt, bytes_in),
            (D::BytesInRate, bytes_in),
            (D::BytesOutCnt, bytes_out),
            (D::BytesOutRate, bytes_out),
        ]);
    }

    /// An HTTP stream ends: its bytes, and its error or failure, are counted on what it
    /// tracks, then what it tracked alone is released. `refused`: a bad request.
    pub fn end_http_stream(&mut self, o: &crate::outcome::Outcome, refused: bool) {
        use crate::outcome::{Cause, Phase};
        self.bytes(o.bytes_in, o.bytes_out);
        // (Denied requests were counted as the rules denied them.)
        // Past the connection: the status came from the server, or HAProxy's 502/504 for a
        // server that failed (its own 503 for no server or a refused connection is not one).
        let served =
            !matches!(o.phase, Phase::Request | Phase::Queue | Phase::Connect | Phase::Tarpit);
        match o.status {
            Some(400) if refused || o.cause == Cause::Proxy => self.http_error(),
            Some(400..=499) if served => self.http_error(),
            Some(s @ 500..=599) if served && s != 501 && s != 505 => self.http_failure(),
            _ => {}
        }
        self.end_stream();
    }

    /// A stream ends: the entries it tracked alone are released.
    pub fn end_stream(&mut self) {
        for s in &mut self.slots {
            if s.as_ref().is_some_and(|t| !t.session) {
                *s = None;
            }
        }
    }
}
