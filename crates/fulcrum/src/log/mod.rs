//! Logging: each stream's line in its frontend's format (`format`), to the frontend's targets
//! (`syslog`), with HAProxy's rules on what is logged and at which level (`dontlognull`,
//! `dontlog-normal`, `log-separate-errors`); the process's warnings and alerts on stderr.
//! Reads a stream's [`Outcome`] and the counters; changes nothing.

pub mod batch;
pub mod dates;
pub mod format;
pub mod forward;
pub mod ring;
pub mod syslog;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use fulcrum_config as cfg;

use crate::frontend::Frontend;
use crate::outcome::{Cause, Outcome};
use crate::rules::sample::Ctx;
use format::{Format, Part, Stream};

/// `-q`: no warnings or alerts on stderr once started.
static QUIET: AtomicBool = AtomicBool::new(false);

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

fn emit(tag: &str, msg: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    let end = if msg.ends_with('!') { "" } else { "." };
    eprintln!("{tag}({}) : {msg}{end}", std::process::id());
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

/// A frontend's logging, compiled: its line (`None`: `Connect from` lines), structured data,
/// error line, unique id, and HAProxy's options on what to log.
#[derive(Debug, Default)]
pub struct Settings {
    pub line: Option<Format>,
    pub sd: Option<Format>,
    pub error: Option<Format>,
    pub unique_id: Option<Format>,
    pub unique_id_header: Option<Box<str>>,
    /// What each transaction captures.
    pub captures: format::CaptureSpec,
    pub dontlognull: bool,
    pub dontlog_normal: bool,
    pub separate_errors: bool,
    /// A format prints the server connection's addresses (`%bi`, `%bp`, `%si`, `%sp`).
    pub server_addrs: bool,
    /// Lines sent so far (`%lc`).
    pub count: AtomicU64,
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

/// The built-in line of a format-less frontend under `-d` (`option httplog` / `tcplog`).
fn debug_format(http: bool) -> &'static Format {
    static HTTP: OnceLock<Format> = OnceLock::new();
    static TCP: OnceLock<Format> = OnceLock::new();
    let (cell, text) =
        if http { (&HTTP, cfg::logformat::HTTPLOG) } else { (&TCP, cfg::logformat::TCPLOG) };
    cell.get_or_init(|| {
        let opts = cfg::logformat::Opts::log_line(http);
        let parsed = cfg::logformat::parse_with(text, cfg::sample::Ctx::Log, opts);
        let parts = parsed.map(|f| f.parts).unwrap_or_default();
        Format::new(
            parts
                .into_iter()
                .filter_map(|p| match p {
                    cfg::LogPart::Lit(s) => Some(Part::Lit(s.into_bytes().into())),
                    cfg::LogPart::Sep => Some(Part::Sep),
                    cfg::LogPart::Var(v, f) => Some(Part::Var(v, f)),
                    cfg::LogPart::Sample(..) => None,
                })
                .collect(),
        )
    })
}

thread_local! {
    /// The line and structured data being built (reused).
    static LINE: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The stream's unique id (`unique-id-format`, at most 127 bytes), `None` without a format.
pub fn unique_id(fe: &Frontend, ctx: &Ctx<'_>, s: &Stream<'_>) -> Option<Vec<u8>> {
    let f = fe.log.unique_id.as_ref()?;
    let mut id = Vec::with_capacity(64);
    f.render(ctx, Some(s), &mut id);
    id.truncate(127);
    Some(id)
}

/// Logs a finished stream (or a request refused before it was complete: `refused`) in the
/// frontend's format to its targets, as HAProxy's `strm_log` / `sess_log`; under `-d`
/// (`debug`) on stderr too.
/// `refused` is `Some(sent_nothing)` for a request refused before it was complete.
pub fn stream_line(
    fe: &Frontend,
    ctx: &Ctx<'_>,
    s: &Stream<'_>,
    refused: Option<bool>,
    debug: bool,
) {
    let set = &fe.log;
    let logger = fe.logger.as_deref().filter(|_| set.line.is_some());
    if logger.is_none() && !debug {
        return;
    }
    let o = s.outcome;
    let error = is_error(o, s.http);
    // `option dontlognull`: nothing for a client that sent nothing.
    let null = set.dontlognull && refused.unwrap_or(o.bytes_in == 0);
    let refused = refused.is_some();
    let normal_skipped = !refused && set.dontlog_normal && !error;
    let level = if set.separate_errors && (error || refused) { syslog::ERR } else { syslog::INFO };
    let fmt = match (refused, &set.error, &set.line) {
        (true, Some(e), _) => e,
        (_, _, Some(l)) => l,
        _ => debug_format(fe.http.is_some()),
    };
    LINE.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else { return };
        let (line, sd) = &mut *b;
        line.clear();
        fmt.render(ctx, Some(s), line);
        if debug {
            eprintln!("{}", String::from_utf8_lossy(line));
        }
        let Some(logger) = logger else { return };
        if null || normal_skipped {
            return;
        }
        let sd = match &set.sd {
            Some(f) if logger.wants_sd() => {
                sd.clear();
                f.render(ctx, Some(s), sd);
                Some(&sd[..])
            }
            _ => None,
        };
        set.count.fetch_add(1, Ordering::Relaxed);
        logger.send_bytes(level, line, sd);
    });
}
