//! Statistics as HAProxy reports them: the rows of `show stat` and the stats page (one per
//! frontend, backend and server, HAProxy 2.6's fields in its order: `fields`, `rows`), their
//! renderings (CSV, typed, JSON: `render`), the process figures of `show info` (`info`), and
//! [`account`], which adds a finished stream's outcome to the counters. [`sample`] moves the
//! rates on once a second (the process's TLS rates too).
//!
//! Everything here reads the run-time objects (atomics, state records under their locks);
//! nothing changes a server's state. Must not touch: sockets, the request path's decisions.

pub mod fields;
pub mod html;
pub mod info;
pub mod offload;
pub mod page;
pub mod prometheus;
mod prometheus_metrics;
pub mod render;
pub mod rows;
pub mod snapshots;

use std::sync::atomic::Ordering;

use crate::backend::Backend;
use crate::counters::{Counters, CTIME, QTIME, RTIME, TTIME};
use crate::frontend::Frontend;
use crate::outcome::{Cause, Outcome, Phase};

/// What a row describes (HAProxy's `STATS_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjType {
    Frontend,
    Backend,
    Server,
    /// A bind line of a frontend with `option socket-stats` (HAProxy's listener).
    Listener,
}

impl ObjType {
    /// The letter of `show stat typed`.
    pub fn letter(self) -> char {
        match self {
            ObjType::Frontend => 'F',
            ObjType::Backend => 'B',
            ObjType::Server => 'S',
            ObjType::Listener => 'L',
        }
    }
    /// The word of `show stat json`.
    pub fn word(self) -> &'static str {
        match self {
            ObjType::Frontend => "Frontend",
            ObjType::Backend => "Backend",
            ObjType::Server => "Server",
            ObjType::Listener => "Listener",
        }
    }
}

/// A field's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Str(String),
    U32(u32),
    S32(i32),
    U64(u64),
}

impl Val {
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "str",
            Val::U32(_) => "u32",
            Val::S32(_) => "s32",
            Val::U64(_) => "u64",
        }
    }
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Str(s) => f.write_str(s),
            Val::U32(v) => write!(f, "{v}"),
            Val::S32(v) => write!(f, "{v}"),
            Val::U64(v) => write!(f, "{v}"),
        }
    }
}

/// A present field: its tags (origin, nature, scope letters, as `show stat typed` prints
/// them) and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub tags: [u8; 3],
    pub val: Val,
}

/// One row: which object, its proxy and server ids, and the fields present.
#[derive(Clone, Debug)]
pub struct Row {
    pub obj: ObjType,
    pub iid: u32,
    pub sid: u32,
    pub fields: Vec<Option<Field>>,
}

impl Row {
    pub fn new(obj: ObjType, iid: u32, sid: u32) -> Self {
        Row { obj, iid, sid, fields: vec![None; fields::NAMES.len()] }
    }
    /// Sets field `name` (one of [`fields::NAMES`]).
    pub fn set(&mut self, name: &str, tags: &str, val: Val) {
        let Some(i) = fields::position(name) else {
            debug_assert!(false, "unknown stats field {name}");
            return;
        };
        let t = tags.as_bytes();
        self.fields[i] = Some(Field { tags: [t[0], t[1], t[2]], val });
    }
    pub fn get(&self, name: &str) -> Option<&Val> {
        self.fields[fields::position(name)?].as_ref().map(|f| &f.val)
    }
}

/// The status class index of `hrsp_*` for a status (1xx..5xx, other).
fn status_class(status: u16) -> usize {
    match status {
        100..=599 => usize::from(status / 100) - 1,
        _ => 5,
    }
}

fn epoch_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What a frontend and its bind lines (`option socket-stats`: HAProxy's listener counters)
/// count alike of a finished stream: an HTTP transaction's bytes (a mode tcp session counts
/// its own as it moves them), denied requests, request errors (a request refused before it
/// was complete, or a client that left or went silent before then), internal errors.
#[inline(always)]
fn front_side(c: &Counters, o: &Outcome, http: bool, refused: bool) {
    if http {
        Counters::add(&c.bytes_in, o.bytes_in);
        Counters::add(&c.bytes_out, o.bytes_out);
    }
    let denied = o.cause == Cause::Proxy
        && matches!(o.phase, Phase::Request | Phase::Tarpit)
        && o.status != Some(400);
    if denied {
        Counters::inc(&c.denied_req);
    }
    let failed = http
        && (refused
            || o.phase == Phase::Request
                && matches!(o.cause, Cause::ClientAbort | Cause::ClientTimeout));
    if failed {
        Counters::inc(&c.failed_req);
    }
    if o.cause == Cause::Internal {
        Counters::inc(&c.internal_errors);
    }
}

/// [`front_side`] for a bind line with `option socket-stats` (rare: out of the way).
#[cold]
#[inline(never)]
fn listener(lc: &Counters, o: &Outcome, http: bool, refused: bool) {
    front_side(lc, o, http, refused);
}

/// Adds a finished stream to the counters of its frontend, backend and server (HAProxy
/// counts these as the stream goes; Fulcrum reads them off the one outcome, so the counters
/// and the log line never disagree). `refused`: an HTTP request refused before it was
/// complete. `http`: an HTTP transaction (else a `mode tcp` session). What the frontend counts
/// its bind line `bind_no` counts too, with `option socket-stats`.
pub fn account(
    fe: &Frontend,
    bind_no: u16,
    be: Option<&Backend>,
    o: &Outcome,
    http: bool,
    refused: bool,
) {
    let fc = &fe.counters;
    front_side(fc, o, http, refused);
    if let Some(lc) = fe.listener(bind_no) {
        listener(lc, o, http, refused);
    }
    let srv = be.zip(o.server).and_then(|(b, i)| b.servers.get(i));
    // Bytes of an HTTP transaction (a mode tcp session counts its own as it moves them).
    let bytes = |c: &Counters| {
        Counters::add(&c.bytes_in, o.bytes_in);
        Counters::add(&c.bytes_out, o.bytes_out);
    };
    // (The frontend counted the request as it arrived.)
    if let Some(status) = o.status.filter(|_| http) {
        Counters::inc(&fc.hrsp[status_class(status)]);
    }
    if o.cause == Cause::Local {
        Counters::inc(&fc.intercepted);
    }
    if o.cause == Cause::Internal {
        if let Some(be) = be {
            Counters::inc(&be.counters.internal_errors);
        }
    }
    let Some(be) = be else { return };
    let bc = &be.counters;
    if http {
        bytes(bc);
    }
    if http && !refused {
        Counters::inc(&bc.requests);
        if let Some(status) = o.status {
            Counters::inc(&bc.hrsp[status_class(status)]);
        }
        if o.cause == Cause::Local {
            Counters::inc(&bc.intercepted);
        }
    }
    let client_abort = matches!(o.cause, Cause::ClientAbort | Cause::ClientTimeout)
        && matches!(o.phase, Phase::Headers | Phase::Data);
    let server_abort =
        matches!(o.cause, Cause::ServerAbort | Cause::ServerTimeout) && o.phase == Phase::Data;
    if client_abort {
        Counters::inc(&bc.cli_abrt);
    }
    if server_abort {
        Counters::inc(&bc.srv_abrt);
    }
    let Some(srv) = srv else { return };
    let sc = &srv.counters;
    if http {
        bytes(sc);
    }
    if http && !refused {
        Counters::inc(&sc.requests);
        // The server's own answers: the stream got past the response head.
        if let Some(status) = o.status.filter(|_| matches!(o.phase, Phase::Done | Phase::Data)) {
            Counters::inc(&sc.hrsp[status_class(status)]);
        }
    }
    if client_abort {
        Counters::inc(&sc.cli_abrt);
    }
    if server_abort {
        Counters::inc(&sc.srv_abrt);
    }
    // The event loop's cached clock: no clock read per stream.
    let now = crate::clock::wall().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if sc.last_sess.load(Ordering::Relaxed) != now {
        sc.last_sess.store(now, Ordering::Relaxed);
        bc.last_sess.store(now, Ordering::Relaxed);
    }
    // Times, when the stream's marks were kept (frontends that log): HAProxy's averages
    // over the last 1,024 streams that reached a server.
    if o.marks.start.is_some() {
        let t = o.timers(crate::clock::now(), http);
        if t.tc >= 0 {
            let ms = |v: i64| v.max(0) as u64;
            for c in [sc, bc] {
                c.add_time(QTIME, ms(t.tw));
                c.add_time(CTIME, ms(t.tc));
                if http {
                    c.add_time(RTIME, ms(t.tresp));
                }
                c.add_time(TTIME, ms(t.tt));
            }
        }
    }
}

/// Once a second (first worker): the rates' windows move on and their peaks are kept.
pub fn sample(frontends: &[std::sync::Arc<Frontend>], backends: &[std::sync::Arc<Backend>]) {
    crate::counters::tls().sample();
    for fe in frontends {
        let c = &fe.counters;
        c.sess_rate.tick(&c.sessions, &c.max_sess_rate);
        c.conn_rate.tick(&c.conns, &c.max_conn_rate);
        c.req_rate.tick(&c.requests, &c.max_req_rate);
    }
    for be in backends {
        Counters::raise(&be.counters.max_sess_rate, be.session_rate());
        be.sample_rates();
        for s in &be.servers {
            let c = &s.counters;
            c.sess_rate.tick(&c.sessions, &c.max_sess_rate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes_are_haproxy_s() {
        assert_eq!(status_class(101), 0);
        assert_eq!(status_class(200), 1);
        assert_eq!(status_class(302), 2);
        assert_eq!(status_class(404), 3);
        assert_eq!(status_class(503), 4);
        assert_eq!(status_class(600), 5);
        assert_eq!(status_class(99), 5);
    }

    #[test]
    fn a_row_sets_fields_by_name() {
        let mut r = Row::new(ObjType::Server, 3, 1);
        r.set("qcur", "MGP", Val::U32(4));
        assert_eq!(r.get("qcur"), Some(&Val::U32(4)));
        assert_eq!(r.fields[2].as_ref().map(|f| f.tags), Some(*b"MGP"));
        assert!(r.get("qmax").is_none());
    }
}
