//! The `global` keywords that tune how the process runs rather than what it proxies: file
//! descriptor limits (`strict-limits`, `fd-hard-limit`), listening sockets (`noreuseport`),
//! privileges (`insecure-setuid-wanted`), HTTP/2's WebSocket setting
//! (`h2-workaround-bogus-websocket-clients`), capture and compression sizes
//! (`tune.http.cookielen`, `tune.zlib.*`, `maxzlibmem`), the PROXY header of checks
//! (`pp2-never-send-local`), `profiling.tasks`, and HAProxy's scheduler and poller knobs, which
//! Fulcrum's event loop has no use for but which real files carry.
//!
//! Each line is read with HAProxy 2.6's parser and messages (`cfgparse-global.c`, and the
//! keyword parsers of `activity.c`, `task.c`, `fd.c`, `vars.c`, `pool.c`, `compression.c`,
//! `connection.c`, `cfgparse-ssl.c`), so a file HAProxy refuses is refused with the same words.
//! Must not touch: the run time (the values are read by the binary's start-up and plan).

use crate::args::{atol, no_extra, Diags};
use crate::lexer::Line;

/// What the tuning lines set (defaults as HAProxy 2.6's).
#[derive(Clone, Debug, PartialEq)]
pub struct Tune {
    /// `noreuseport`: listeners without SO_REUSEPORT (one socket shared by the workers).
    pub noreuseport: bool,
    /// `strict-limits` (HAProxy 2.6's default) or `no strict-limits`: a file descriptor limit
    /// that cannot be raised stops the start-up.
    pub strict_limits: bool,
    /// `fd-hard-limit <n>`: a ceiling on the descriptors the process asks for.
    pub fd_hard_limit: Option<u64>,
    /// `insecure-setuid-wanted`: the workers keep the right to gain privileges through
    /// setuid programs (otherwise `PR_SET_NO_NEW_PRIVS`, inherited by external checks).
    pub insecure_setuid_wanted: bool,
    /// `h2-workaround-bogus-websocket-clients`: no SETTINGS_ENABLE_CONNECT_PROTOCOL sent.
    pub h2_no_websocket: bool,
    /// `tune.http.cookielen` + 1 (HAProxy's `cookie_len`): captured cookies are shorter.
    pub cookie_len: u32,
    /// `pp2-never-send-local`: checks send a PROXY v2 `PROXY` command, never `LOCAL`.
    pub pp2_never_send_local: bool,
    /// `h1-accept-payload-with-any-method`: HTTP/1.0 GET, HEAD and DELETE requests may have a
    /// body (otherwise 413).
    pub h1_any_method_payload: bool,
    /// `profiling.tasks on|auto|off`.
    pub profiling_tasks: Option<&'static str>,
    /// `tune.zlib.windowsize` (8 to 15; zlib's default 15) and `tune.zlib.memlevel` (1 to 9).
    pub zlib_windowsize: u8,
    pub zlib_memlevel: u8,
    /// `maxzlibmem <MB>` in bytes (0: no limit).
    pub maxzlibmem: u64,
    /// `cluster-secret`.
    pub cluster_secret: Option<String>,
    /// `expose-experimental-directives` was read.
    pub experimental: bool,
    /// Values only checked (HAProxy's "already specified" needs the previous one).
    runqueue_depth: i64,
    maxpollevents: i64,
    fd_hard_set: i64,
}

/// HAProxy's `CAPTURE_LEN`: `tune.http.cookielen`'s default (63 bytes kept).
pub const DEFAULT_COOKIE_LEN: u32 = 64;

impl Default for Tune {
    fn default() -> Self {
        Tune {
            noreuseport: false,
            strict_limits: true,
            fd_hard_limit: None,
            insecure_setuid_wanted: false,
            h2_no_websocket: false,
            cookie_len: DEFAULT_COOKIE_LEN,
            pp2_never_send_local: false,
            h1_any_method_payload: false,
            profiling_tasks: None,
            zlib_windowsize: 15,
            zlib_memlevel: 8,
            maxzlibmem: 0,
            cluster_secret: None,
            experimental: false,
            runqueue_depth: 0,
            maxpollevents: 0,
            fd_hard_set: 0,
        }
    }
}

/// The keywords without arguments.
const FLAGS: &[&str] = &[
    "busy-polling",
    "noepoll",
    "nopoll",
    "nogetaddrinfo",
    "noreuseport",
    "insecure-setuid-wanted",
    "h2-workaround-bogus-websocket-clients",
    "no-memory-trimming",
    "pp2-never-send-local",
    "strict-limits",
    "h1-accept-payload-with-any-method",
];

/// The keywords with arguments.
const VALUED: &[&str] = &[
    "numa-cpu-mapping",
    "tune.runqueue-depth",
    "tune.maxpollevents",
    "tune.recv_enough",
    "tune.buffers.limit",
    "tune.buffers.reserve",
    "tune.idletimer",
    "tune.http.cookielen",
    "tune.pattern.cache-size",
    "cluster-secret",
    "maxzlibmem",
    "fd-hard-limit",
    "profiling.tasks",
    "tune.sched.low-latency",
    "tune.fd.edge-triggered",
    "tune.fail-alloc",
    "tune.peers.max-updates-at-once",
    "tune.zlib.memlevel",
    "tune.zlib.windowsize",
    "ssl-mode-async",
];

/// The keywords this module reads.
pub fn handles(kw: &str) -> bool {
    FLAGS.contains(&kw) || VALUED.contains(&kw) || kw.starts_with("tune.vars.")
}

/// The keywords HAProxy 2.6 lets `no` (and `default`) precede, besides `option` and `log`.
pub fn negatable(kw: &str) -> bool {
    matches!(
        kw,
        "busy-polling"
            | "set-dumpable"
            | "strict-limits"
            | "insecure-fork-wanted"
            | "numa-cpu-mapping"
    )
}

/// Reads one line of a keyword [`handles`] accepts; `negated` for `no <kw>`.
pub fn line(kw: &str, line: &Line, t: &mut Tune, negated: bool, diags: &mut Diags) {
    match kw {
        // Flags without arguments.
        _ if FLAGS.contains(&kw) => {
            if !no_extra(line, 1, kw, diags) {
                return;
            }
            match kw {
                "noreuseport" => t.noreuseport = true,
                "insecure-setuid-wanted" => t.insecure_setuid_wanted = true,
                "h2-workaround-bogus-websocket-clients" => t.h2_no_websocket = true,
                "pp2-never-send-local" => t.pp2_never_send_local = true,
                "h1-accept-payload-with-any-method" => t.h1_any_method_payload = true,
                // As 2.6: only the negation changes anything (strict is the default).
                "strict-limits" if negated => t.strict_limits = false,
                _ => {}
            }
        }
        // HAProxy reads no argument count for it.
        "numa-cpu-mapping" => {}
        "tune.runqueue-depth" | "tune.maxpollevents" | "fd-hard-limit" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            let prev = match kw {
                "tune.runqueue-depth" => &mut t.runqueue_depth,
                "tune.maxpollevents" => &mut t.maxpollevents,
                _ => &mut t.fd_hard_set,
            };
            if *prev != 0 {
                return diags
                    .alert_continue(line, format!("'{kw}' already specified. Continuing."));
            }
            let Some(v) = integer(line, kw, diags) else { return };
            *prev = v;
            if kw == "fd-hard-limit" {
                t.fd_hard_limit = u64::try_from(v).ok().filter(|v| *v > 0);
            }
        }
        "tune.recv_enough" | "tune.buffers.limit" | "tune.buffers.reserve" => {
            if no_extra(line, 2, kw, diags) {
                integer(line, kw, diags);
            }
        }
        "tune.http.cookielen" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            if let Some(v) = integer(line, kw, diags) {
                t.cookie_len = (v.clamp(0, i64::from(i32::MAX) - 1) + 1) as u32;
            }
        }
        "maxzlibmem" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            if let Some(v) = integer(line, kw, diags) {
                t.maxzlibmem = (v.max(0) as u64).saturating_mul(1 << 20);
            }
        }
        "tune.idletimer" => idletimer(line, kw, diags),
        "tune.pattern.cache-size" => {
            // No argument count here either; `atoi`.
            if line.arg(1).is_empty() || atol(line.arg(1)) as i32 <= -1 {
                diags.alert(line, format!("'{kw}' expects a positive numeric value"));
            }
        }
        "cluster-secret" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            if line.arg(1).is_empty() {
                diags.alert(line, "expects an ASCII string argument.");
            } else if t.cluster_secret.is_some() {
                diags.alert_continue(line, format!("'{kw}' already specified. Continuing."));
            } else {
                t.cluster_secret = Some(line.arg(1).to_string());
            }
        }
        "profiling.tasks" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            match ["on", "auto", "off"].into_iter().find(|m| *m == line.arg(1)) {
                Some(m) => t.profiling_tasks = Some(m),
                None => diags.alert(
                    line,
                    format!(
                        "'{kw}' expects either 'on', 'auto', or 'off' but got '{}'.",
                        line.arg(1)
                    ),
                ),
            }
        }
        "tune.sched.low-latency" | "tune.fd.edge-triggered" => {
            if kw == "tune.fd.edge-triggered" && !t.experimental {
                return diags.alert(line, format!("'{kw}' directive is experimental, must be allowed via a global 'expose-experimental-directives'"));
            }
            if no_extra(line, 2, kw, diags) && !matches!(line.arg(1), "on" | "off") {
                diags.alert(
                    line,
                    format!("'{kw}' expects either 'on' or 'off' but got '{}'.", line.arg(1)),
                );
            }
        }
        "tune.fail-alloc" => {
            if no_extra(line, 2, kw, diags) && !(0..=100).contains(&(atol(line.arg(1)) as i32)) {
                diags.alert(line, format!("'{kw}' expects a numeric value between 0 and 100."));
            }
        }
        "tune.peers.max-updates-at-once" => {
            if no_extra(line, 2, kw, diags) && atol(line.arg(1)) as i32 <= 0 {
                diags.alert(line, format!("'{kw}' expects an integer argument greater than 0."));
            }
        }
        "tune.zlib.memlevel" | "tune.zlib.windowsize" => zlib(line, kw, t, diags),
        // HAProxy 2.6 built with OpenSSL 3 takes it without arguments checked.
        "ssl-mode-async" => {}
        _ => vars_max_size(line, kw, diags),
    }
}

/// `'<kw>' expects an integer argument.` for an empty word, else HAProxy's `atol`.
fn integer(line: &Line, kw: &str, diags: &mut Diags) -> Option<i64> {
    if line.arg(1).is_empty() {
        diags.alert(line, format!("'{kw}' expects an integer argument."));
        return None;
    }
    Some(atol(line.arg(1)))
}

/// `tune.idletimer <time>`: 0 to 65535 ms.
fn idletimer(line: &Line, kw: &str, diags: &mut Diags) {
    use crate::duration::{parse_time_in, TimeError, TimeUnit};
    if !no_extra(line, 2, kw, diags) {
        return;
    }
    let range = format!("'{kw}' expects a timer value between 0 and 65535 ms.");
    let v = line.arg(1);
    if v.is_empty() {
        return diags.alert(line, range);
    }
    match parse_time_in(v, TimeUnit::Ms) {
        Ok(t) if t.value.as_millis() > 65535 => diags.alert(line, range),
        Ok(_) => {}
        // (These two without a space before the colon, as HAProxy writes them.)
        Err(TimeError::Overflow) => diags.alert_tight(
            line,
            format!("timer overflow in argument <{v}> to <{kw}>, maximum value is 65535 ms."),
        ),
        Err(TimeError::BadChar(c)) => {
            diags.alert_tight(line, format!("unexpected character '{c}' in argument to <{kw}>."))
        }
        Err(TimeError::Missing) => diags.alert(line, range),
    }
}

/// `tune.zlib.memlevel <1..9>`, `tune.zlib.windowsize <8..15>` (HAProxy built with zlib).
fn zlib(line: &Line, kw: &str, t: &mut Tune, diags: &mut Diags) {
    if !no_extra(line, 2, kw, diags) {
        return;
    }
    let (lo, hi) = if kw == "tune.zlib.memlevel" { (1, 9) } else { (8, 15) };
    let v = atol(line.arg(1)) as i32;
    if line.arg(1).is_empty() || !(lo..=hi).contains(&v) {
        return diags.alert(line, format!("'{kw}' expects a numeric value between {lo} and {hi}."));
    }
    if kw == "tune.zlib.memlevel" {
        t.zlib_memlevel = v as u8;
    } else {
        t.zlib_windowsize = v as u8;
    }
}

/// `tune.vars.<scope>-max-size <n>`: HAProxy's `strtol` must read the whole word.
fn vars_max_size(line: &Line, kw: &str, diags: &mut Diags) {
    let v = line.arg(1);
    let body = v.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let body = body.strip_prefix(['+', '-']).unwrap_or(body);
    if !body.is_empty() && !body.bytes().all(|b| b.is_ascii_digit()) {
        diags.alert(line, format!("{kw}: '{v}' is an invalid size"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(words: &[&str]) -> (Tune, Vec<String>) {
        let mut t = Tune::default();
        let mut d = Diags::default();
        let (negated, words) = match words {
            ["no", rest @ ..] => (true, rest),
            _ => (false, words),
        };
        let l = Line {
            span: crate::model::Span { file: "t.cfg".into(), line: 1 },
            words: words.iter().map(|w| w.to_string()).collect(),
        };
        line(words[0], &l, &mut t, negated, &mut d);
        (t, d.list.into_iter().map(|x| x.message).collect())
    }

    #[test]
    fn values_and_messages_are_haproxys() {
        assert!(!run(&["no", "strict-limits"]).0.strict_limits);
        assert!(run(&["strict-limits"]).0.strict_limits);
        assert_eq!(run(&["tune.http.cookielen", "100"]).0.cookie_len, 101);
        assert_eq!(run(&["fd-hard-limit", "5000"]).0.fd_hard_limit, Some(5000));
        assert_eq!(run(&["maxzlibmem", "2"]).0.maxzlibmem, 2 << 20);
        assert_eq!(run(&["tune.zlib.windowsize", "12"]).0.zlib_windowsize, 12);
        assert_eq!(run(&["profiling.tasks", "on"]).0.profiling_tasks, Some("on"));
        assert_eq!(
            run(&["tune.idletimer", "70000"]).1,
            ["'tune.idletimer' expects a timer value between 0 and 65535 ms."]
        );
        assert_eq!(run(&["tune.idletimer", "1s"]).1, Vec::<String>::new());
        assert_eq!(
            run(&["tune.vars.txn-max-size", "10k"]).1,
            ["tune.vars.txn-max-size: '10k' is an invalid size"]
        );
        assert_eq!(run(&["tune.vars.txn-max-size"]).1, Vec::<String>::new());
        assert_eq!(
            run(&["noreuseport", "x"]).1,
            ["'noreuseport' cannot handle unexpected argument 'x'."]
        );
        assert_eq!(
            run(&["tune.fd.edge-triggered", "on"]).1,
            ["'tune.fd.edge-triggered' directive is experimental, must be allowed via a global 'expose-experimental-directives'"]
        );
        assert_eq!(
            run(&["tune.pattern.cache-size", "-1"]).1,
            ["'tune.pattern.cache-size' expects a positive numeric value"]
        );
    }
}
