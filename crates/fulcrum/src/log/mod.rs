//! Logging's lower half: syslog targets and their sends (`syslog`, `batch`, `ring`), `log-forward`
//! (`forward`), cached dates, `Connect from` lines, stream numbers, HAProxy's "error" stream
//! test; the process's warnings and alerts on stderr. A stream's line is rendered by
//! `rules::format` and sent by `frontend::log`. Reads a stream's [`Outcome`]; changes nothing.

pub mod batch;
pub mod dates;
pub mod forward;
pub mod ring;
pub mod syslog;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::outcome::{Cause, Outcome};

/// `-q`: no warnings or alerts on stderr once started.
static QUIET: AtomicBool = AtomicBool::new(false);

static DEBUG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-d`: debug lines (a Lua script's `core.Debug`) are printed too.
pub fn set_debug(on: bool) {
    DEBUG.store(on, Ordering::Relaxed);
}

pub fn debug_mode() -> bool {
    DEBUG.load(Ordering::Relaxed)
}

/// Silences [`warning`] and [`alert`] (`-q`).
pub fn set_quiet(on: bool) {
    QUIET.store(on, Ordering::Relaxed);
}

/// A run-time event as HAProxy's `ha_warning()` prints it: `[WARNING]  (pid) : <msg>.` on
/// stderr (server state changes, check results). The logging issue routes them to syslog too.
pub fn warning(msg: &str) {
    emit("[WARNING]  ", msg);
}

/// As HAProxy's `ha_alert()` (`backend 'app' has no server available!`).
pub fn alert(msg: &str) {
    emit("[ALERT]    ", msg);
}

/// An alert whose words are HAProxy's to the letter, without the full stop [`alert`] adds.
pub fn alert_as_is(msg: &str) {
    print("[ALERT]    ", msg, "");
}

/// A warning whose words are HAProxy's to the letter, without the full stop [`warning`] adds.
pub fn warning_as_is(msg: &str) {
    print("[WARNING]  ", msg, "");
}

fn emit(tag: &str, msg: &str) {
    print(tag, msg, if msg.ends_with('!') { "" } else { "." });
}

fn print(tag: &str, msg: &str, end: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{tag}({}) : {msg}{end}", std::process::id());
    }
}

/// The line HAProxy logs at each stream's start when no log format is set:
/// `Connect from 10.0.0.1:51000 to 10.0.0.2:80 (fe/HTTP)`.
pub fn connect_line(
    client: Option<SocketAddr>,
    dst: Option<SocketAddr>,
    fe: &str,
    http: bool,
) -> String {
    let mode = if http { "HTTP" } else { "TCP" };
    match (client, dst) {
        (Some(c), Some(d)) => {
            format!("Connect from {}:{} to {}:{} ({fe}/{mode})", c.ip(), c.port(), d.ip(), d.port())
        }
        (Some(c), None) => {
            format!("Connect from {}:{} to undetermined address:0 ({fe}/{mode})", c.ip(), c.port())
        }
        // A UNIX socket: only the listener is known.
        (None, _) => format!("Connect to unix:1 ({fe}/{mode})"),
    }
}

/// Streams numbered so far (`%rt`, HAProxy's global request counter).
static STREAMS: AtomicU64 = AtomicU64::new(0);

/// The next stream number (only streams that log or need a unique id take one).
pub fn next_stream_number() -> u64 {
    STREAMS.fetch_add(1, Ordering::Relaxed)
}

/// HAProxy's test for an "error" stream (`dontlog-normal`, `log-separate-errors`): it was
/// redispatched, ended otherwise than normally or locally, was retried, or (mode http)
/// answered 500 or more.
pub fn is_error(o: &Outcome, http: bool) -> bool {
    o.redispatched
        || !matches!(o.cause, Cause::Normal | Cause::Local)
        || (o.cause == Cause::Normal && o.retries > 0)
        || (http && o.status.is_some_and(|s| s >= 500))
}
