//! A frontend's log lines: a stream's line in the frontend's format (or HAProxy's built-in one
//! under `-d`) to its targets, and the stream's unique id. It picks a stream's format and
//! applies `dontlognull`, `dontlog-normal` and `log-separate-errors`.
//!
//! Must not touch: how formats render (`rules::format`), where lines go (`log::syslog`).

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use fulcrum_config as cfg;

use super::Frontend;
use crate::log::{is_error, syslog};
use crate::rules::format::{Format, Part, Stream};
use crate::rules::sample::Ctx;
use crate::worker::{Id, Slot};

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

/// The line and structured data being built (reused).
static LINE: Slot<RefCell<(Vec<u8>, Vec<u8>)>> =
    Slot::new(Id::LogLine, || RefCell::new((Vec::new(), Vec::new())));

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
