//! The `global` section: `daemon`, `nbthread`, `maxconn`, `pidfile`, `cpu-map`, `ulimit-n`,
//! `user`/`uid`, `group`/`gid`, `tune.bufsize`, `tune.http.maxhdr`, `tune.maxaccept`,
//! `tune.rcvbuf.client|server`, `tune.sndbuf.client|server`, plus
//! [`cpus_for_thread`], which resolves the `cpu-map` lines to the CPUs one worker thread is
//! pinned to.

use std::path::PathBuf;

use crate::args::{atol, int_arg, no_extra, parse_u32, parse_u64, Diags};
use crate::keywords::{self, Status};
use crate::lexer::Line;
use crate::model::{CpuMap, Global, UserSpec, DEFAULT_MAXACCEPT};

/// Largest thread count, as HAProxy's MAX_THREADS on 64-bit builds.
pub const MAX_THREADS: u32 = 64;
/// `tune.bufsize` must stay below this (HAProxy: 256 MB when HTTP is in use).
pub const MAX_BUFSIZE: u64 = 256 << 20;
/// Largest CPU number + 1 that `cpu-map` accepts (HAProxy: 0 to 1023).
pub const MAX_CPUS: u32 = 1024;

const CPU_MAP_USAGE: &str = "cpu-map expects a process number  ('all', 'odd', 'even', a number from 1 to 64 or a range),  followed by a list of CPU ranges with numbers from 0 to 63.";

/// Parses one line of a `global` section into `g`.
pub fn parse_line(line: &Line, g: &mut Global, diags: &mut Diags) {
    let kw = line.arg(0);
    if kw == "no" && line.arg(1) == "log" {
        return crate::logtargets::log_line(line, true, true, &mut g.logs, diags);
    }
    if kw == "no" || kw == "default" {
        // HAProxy shifts the words and reads the keyword with its modifier; one that takes
        // none is refused, then read all the same.
        let Some(shifted) = crate::args::shifted(line) else {
            return diags.alert_tight(line, crate::args::NO_NEGATION);
        };
        if !crate::tune::negatable(shifted.arg(0)) {
            diags.alert_tight(line, crate::args::NO_NEGATION);
            return parse_line(&shifted, g, diags);
        }
        return negated(&shifted, kw == "no", g, diags);
    }
    // `stats` is a family: `stats socket`, `stats timeout`...
    let stats_kw;
    let kw = if kw == "stats" {
        stats_kw = format!("stats {}", line.arg(1));
        stats_kw.as_str()
    } else {
        kw
    };
    let Some(entry) = keywords::find(keywords::GLOBAL, kw) else {
        let msg = match kw.strip_prefix("stats ") {
            Some(sub) => format!("'stats' only supports 'socket', 'maxconn', 'bind-process' and 'timeout' (got '{sub}')"),
            None => match crate::suggest::best_match(kw, crate::suggest::Place::Global) {
                Some(best) => format!(
                    "unknown keyword '{kw}' in 'global' section; did you mean '{best}' maybe ?"
                ),
                None => format!("unknown keyword '{kw}' in 'global' section"),
            },
        };
        diags.alert(line, msg);
        return;
    };
    match entry.status {
        Status::NotYet => return diags.alert(line, format!("'{kw}' is not supported yet")),
        Status::Obsolete(why) => return diags.alert(line, why),
        Status::Supported | Status::Partial(_) => {}
    }
    if crate::tls::is_global(kw) {
        return crate::tls::global_line(kw, line, &mut g.tls, diags);
    }
    if kw == "h1-case-adjust" || kw == "h1-case-adjust-file" {
        return crate::h1_case::line(kw, line, &mut g.h1_case, diags);
    }
    if crate::lua::handles(kw) {
        return crate::lua::line(kw, line, &mut g.lua, diags);
    }
    if crate::tune::handles(kw) {
        return crate::tune::line(kw, line, &mut g.tune, false, diags);
    }
    match kw {
        "daemon" => {
            if no_extra(line, 1, kw, diags) {
                g.daemon = true;
            }
        }
        "quiet" => {
            if no_extra(line, 1, kw, diags) {
                g.quiet = true;
            }
        }
        "zero-warning" => {
            if no_extra(line, 1, kw, diags) {
                g.zero_warning = true;
            }
        }
        "nbthread" => nbthread(line, g, diags),
        // One group of threads, as HAProxy 2.6 builds it.
        "thread-groups" => match parse_u32(line.arg(1)) {
            None => diags.alert(
                line,
                format!("'{kw}' passed a missing or unparsable integer value in '{}'", line.arg(1)),
            ),
            Some(1) => {
                no_extra(line, 2, kw, diags);
            }
            Some(n) => diags.alert(line, format!("'{kw}' value must be between 1 and 1 (was {n})")),
        },
        "tune.idle-pool.shared" => match line.arg(1) {
            "on" | "off" => {
                no_extra(line, 2, kw, diags);
            }
            other => diags.alert(line, format!("'{kw}' expects either 'on' or 'off' but got '{other}'.")),
        },
        "set-var" | "set-var-fmt" => set_var(line, kw, g, diags),
        "expose-experimental-directives" => {
            no_extra(line, 1, kw, diags);
            g.tune.experimental = true;
        }
        "tune.h2.header-table-size"
        | "tune.h2.initial-window-size"
        | "tune.h2.max-concurrent-streams"
        | "tune.h2.max-frame-size" => {
            // HAProxy reads the value with atoi(): a word that is not a number is 0.
            let v = c_atoi(line.arg(1));
            let h2 = &mut g.tune_h2;
            let (slot, ok, msg) = match kw {
                "tune.h2.header-table-size" => (
                    &mut h2.header_table_size,
                    (4096..=65536).contains(&v),
                    "expects a numeric value between 4096 and 65536.",
                ),
                "tune.h2.max-frame-size" => (
                    &mut h2.max_frame_size,
                    (16384..=16_777_215).contains(&v),
                    "expects a numeric value between 16384 and 16777215.",
                ),
                "tune.h2.initial-window-size" => {
                    (&mut h2.initial_window_size, v >= 0, "expects a positive numeric value.")
                }
                _ => (&mut h2.max_concurrent_streams, v >= 0, "expects a positive numeric value."),
            };
            if no_extra(line, 2, kw, diags) {
                if ok {
                    *slot = v as u32;
                } else {
                    diags.alert(line, format!("'{kw}' {msg}"));
                }
            }
        }
        "tune.comp.maxlevel" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            let v = line.arg(1);
            match (!v.is_empty()).then(|| atol(v)).filter(|v| (1..=9).contains(v)) {
                Some(v) => g.tune_comp_maxlevel = v as u32,
                None => diags.alert(line, format!("'{kw}' expects a numeric value between 1 and 9")),
            }
        }
        "tune.pool-low-fd-ratio" | "tune.pool-high-fd-ratio" => {
            // As HAProxy reads it (`atoi`: text that is not a number is 0); none refused.
            let arg = line.arg(1);
            let v = (!arg.is_empty()).then(|| atol(arg));
            match v.filter(|v| (0..=100).contains(v)) {
                Some(v) if no_extra(line, 2, kw, diags) => {
                    let slot = match kw.as_bytes()[10] {
                        b'h' => &mut g.tune_pool_high_fd_ratio,
                        _ => &mut g.tune_pool_low_fd_ratio,
                    };
                    *slot = v as u32;
                }
                Some(_) => {}
                None => diags.alert(
                    line,
                    format!("'{kw}' expects an integer argument between 0 and 100."),
                ),
            }
        }
        "tune.maxrewrite" => match (line.arg(1), parse_u64(line.arg(1))) {
            ("", _) | (_, None) => diags.alert(line, format!("'{kw}' expects an integer argument.")),
            (_, Some(v)) => {
                if no_extra(line, 2, kw, diags) {
                    g.tune_maxrewrite = usize::try_from(v).unwrap_or(usize::MAX);
                }
            }
        },
        "maxconn" => {
            if let Some(v) = int_arg(line, 1, kw, diags) {
                g.maxconn = Some(v);
            }
            no_extra(line, 2, kw, diags);
        }
        "maxcomprate" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            match line.arg(1) {
                "" => diags.alert(line, format!("'{kw}' expects an integer argument in kb/s.")),
                // HAProxy's `atoi`: text that is not a number is 0 (no limit).
                v => g.maxcomprate = Some(atol(v).clamp(0, i64::from(u32::MAX)) as u32),
            }
        }
        "maxcompcpuusage" => {
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            let msg = format!("'{kw}' expects an integer argument between 0 and 100.");
            match line.arg(1) {
                "" => diags.alert(line, msg),
                v => {
                    // HAProxy's `100 - atoi()` in an unsigned: under 0 or over 100 wraps past 100.
                    let min_idle = 100 - atol(v).clamp(-(1 << 31), (1 << 31) - 1);
                    if !(0..=100).contains(&min_idle) {
                        return diags.alert(line, msg);
                    }
                    g.comp_min_idle = min_idle;
                }
            }
        }
        "maxconnrate" | "maxsessrate" | "maxsslrate" => {
            let limit = match kw {
                "maxconnrate" => &mut g.maxconnrate,
                "maxsessrate" => &mut g.maxsessrate,
                _ => &mut g.maxsslrate,
            };
            // (As HAProxy: a second line after a non-zero limit is ignored.)
            if !no_extra(line, 2, kw, diags) {
                return;
            }
            if limit.is_some_and(|v| v != 0) {
                return diags.alert_continue(line, format!("'{kw}' already specified. Continuing."));
            }
            if let Some(v) = int_arg(line, 1, kw, diags) {
                *limit = Some(v);
            }
        }
        "ulimit-n" => match parse_u64(line.arg(1)) {
            Some(v) if no_extra(line, 2, kw, diags) => g.ulimit_n = Some(v),
            Some(_) => {}
            None => diags.alert(line, format!("'{kw}' expects an integer argument.")),
        },
        "pidfile" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'pidfile' expects a file name as an argument.");
            } else if no_extra(line, 2, kw, diags) {
                g.pidfile = Some(PathBuf::from(line.arg(1)));
            }
        }
        "user" | "group" | "uid" | "gid" => user_group(line, g, diags),
        "tune.bufsize" => match (line.arg(1), parse_u64(line.arg(1))) {
            ("", _) => diags.alert(line, format!("'{kw}' expects an integer argument.")),
            (_, Some(v)) if v > 0 && v < MAX_BUFSIZE => {
                if no_extra(line, 2, kw, diags) {
                    g.tune_bufsize = v as usize;
                }
            }
            (_, Some(v)) if v > 0 => diags.alert(
                line,
                format!("global.tune.bufsize must be below 256 MB when HTTP is in use (current value = {v})."),
            ),
            _ => diags.alert(line, format!("'{kw}' expects a positive integer argument.")),
        },
        "tune.http.logurilen" => match parse_u32(line.arg(1)) {
            Some(v) if v > 0 => {
                if no_extra(line, 2, kw, diags) {
                    g.tune_http_logurilen = v.saturating_add(1);
                }
            }
            _ => diags.alert(line, format!("'{kw}' expects an integer argument.")),
        },
        "tune.http.maxhdr" => match (line.arg(1), parse_u32(line.arg(1))) {
            ("", _) => diags.alert(line, format!("'{kw}' expects an integer argument.")),
            (_, Some(v)) if (1..=32767).contains(&v) => {
                if no_extra(line, 2, kw, diags) {
                    g.tune_http_maxhdr = v;
                }
            }
            _ => diags.alert(line, format!("'{kw}' expects a numeric value between 1 and 32767")),
        },
        "tune.maxaccept" => {
            if line.arg(1).is_empty() {
                diags.alert(line, format!("'{kw}' expects an integer argument."));
            } else if no_extra(line, 2, kw, diags) {
                g.tune_maxaccept = maxaccept(line.arg(1));
            }
        }
        "tune.rcvbuf.client" | "tune.rcvbuf.server" | "tune.sndbuf.client" | "tune.sndbuf.server" => {
            socket_buffer(line, kw, g, diags)
        }
        "cpu-map" => {
            if let Some(m) = parse_cpu_map(line, diags) {
                g.cpu_map.push(m);
            }
        }
        "spread-checks" => spread_checks(line, g, diags),
        "log" => crate::logtargets::log_line(line, false, true, &mut g.logs, diags),
        "log-tag" => crate::logtargets::log_tag(line, &mut g.log_tag, diags),
        "log-send-hostname" => {
            if g.log_send_hostname.is_some() {
                diags.alert_continue(line, "'log-send-hostname' already specified. Continuing.");
            } else {
                let name = line.arg(1);
                g.log_send_hostname = Some((!name.is_empty()).then(|| name.to_string()));
            }
        }
        "node" => node(line, g, diags),
        "description" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'description' expects a string argument.");
            } else {
                g.description = Some(line.words[1..].join(" "));
            }
        }
        "max-spread-checks" => max_spread_checks(line, g, diags),
        "hard-stop-after" | "grace" => process_time(line, g, diags),
        // One process that reloads itself: the master-worker mode's behaviour without a master.
        "master-worker" => {
            let arg = line.arg(1);
            if !arg.is_empty() && arg != "no-exit-on-failure" {
                diags.alert(line, "'master-worker' only supports 'no-exit-on-failure' option");
            }
        }
        "mworker-max-reloads" => {
            let _ = int_arg(line, 1, kw, diags);
        }
        "set-dumpable" => {
            if no_extra(line, 1, kw, diags) {
                g.set_dumpable = true;
            }
        }
        "insecure-fork-wanted" => {
            if no_extra(line, 1, kw, diags) {
                g.insecure_fork_wanted = true;
            }
        }
        "external-check" => {
            if no_extra(line, 1, kw, diags) {
                g.external_check = true;
            }
        }
        "localpeer" => {
            if line.arg(1).is_empty() {
                diags.alert(line, "'localpeer' expects a name as an argument.");
            } else if no_extra(line, 2, kw, diags) {
                g.localpeer = Some(line.arg(1).to_string());
            }
        }
        // HAProxy 2.6 accepts it and does nothing with it (one process).
        "stats bind-process" => {}
        "server-state-base" | "server-state-file" => {
            // HAProxy's two messages differ by one letter.
            let (slot, what) = if kw == "server-state-base" {
                (&mut g.server_state_base, "expects one argument: a directory path.")
            } else {
                (&mut g.server_state_file, "expect one argument: a file path.")
            };
            if line.arg(1).is_empty() {
                diags.alert(line, format!("'{kw}' {what}"));
            } else if slot.is_some() {
                diags.alert_continue(line, format!("'{kw}' already specified. Continuing."));
            } else if no_extra(line, 2, kw, diags) {
                *slot = Some(PathBuf::from(line.arg(1)));
            }
        }
        "stats socket" => {
            if line.arg(2).is_empty() {
                return diags.alert(
                    line,
                    "'stats socket' in global section expects an address or a path to a UNIX socket",
                );
            }
            if let Some(bind) = crate::bind::parse_bind_at(line, 2, "global", diags) {
                g.stats_sockets.push(crate::model::StatsSocket { span: line.span.clone(), bind });
            }
        }
        "stats timeout" => match crate::duration::read_time(line.arg(2)) {
            Ok(t) if !t.value.is_zero() => g.stats_timeout = t.value,
            Err(crate::duration::TimeError::BadChar(c)) => {
                diags.alert(line, format!("'stats timeout' : unexpected character '{c}'"))
            }
            Err(crate::duration::TimeError::Missing) => {
                diags.alert(line, "'stats timeout' : unexpected character ''")
            }
            _ => diags.alert(line, "'stats timeout' expects a positive value"),
        },
        "stats maxconn" => match parse_u32(line.arg(2)) {
            Some(n) if n > 0 => g.stats_maxconn = n,
            _ => diags.alert(line, "'stats maxconn' expects a positive value"),
        },
        "unix-bind" => crate::unix_bind::parse(g, line, diags),
        _ if crate::env_set::is_env_keyword(kw) => crate::env_set::check(line, diags),
        "chroot" => {
            if !no_extra(line, 2, kw, diags) {
            } else if g.chroot.is_some() {
                diags.alert_continue(line, "'chroot' already specified. Continuing.");
            } else if line.arg(1).is_empty() {
                diags.alert(line, "'chroot' expects a directory as an argument.");
            } else {
                g.chroot = Some(PathBuf::from(line.arg(1)));
            }
        }
        // Fulcrum never splices (no pipes), and Linux has no kqueue nor event ports: read as
        // HAProxy reads them, no effect.
        "nosplice" | "nokqueue" | "noevports" => {
            no_extra(line, 1, kw, diags);
        }
        "maxpipes" | "tune.pipesize" => {
            if no_extra(line, 2, kw, diags) && line.arg(1).is_empty() {
                diags.alert(line, format!("'{kw}' expects an integer argument."));
            }
        }
        _ => diags.alert(line, format!("'{kw}' is not supported yet")),
    }
}

/// `no <kw>` / `default <kw>` for the keywords HAProxy lets them precede (`line` without the
/// modifier): `default` sets as the plain keyword does.
fn negated(line: &Line, no: bool, g: &mut Global, diags: &mut Diags) {
    let kw = line.arg(0);
    match kw {
        "set-dumpable" | "insecure-fork-wanted" => {
            if no_extra(line, 1, kw, diags) {
                let slot = match kw {
                    "set-dumpable" => &mut g.set_dumpable,
                    _ => &mut g.insecure_fork_wanted,
                };
                *slot = !no;
            }
        }
        _ => crate::tune::line(kw, line, &mut g.tune, no, diags),
    }
}

/// `hard-stop-after <time>`, `grace <time>` (milliseconds by default), with HAProxy's
/// messages.
fn process_time(line: &Line, g: &mut Global, diags: &mut Diags) {
    let (kw, value) = (line.arg(0), line.arg(1));
    if value.is_empty() {
        return diags.alert(line, format!("'{kw}' expects <time> as argument."));
    }
    match crate::duration::read_time(value) {
        Ok(t) if kw == "grace" => g.grace = Some(t.value),
        Ok(t) => g.hard_stop_after = Some(t.value),
        Err(crate::duration::TimeError::Overflow) => diags.alert(
            line,
            format!("timer overflow in argument '{value}' to '{kw}' (maximum value is 2147483647 ms or ~24.8 days)"),
        ),
        Err(crate::duration::TimeError::BadChar(c)) => {
            diags.alert(line, format!("unexpected character '{c}' in argument to <{kw}>."))
        }
        Err(crate::duration::TimeError::Missing) => {
            diags.alert(line, format!("'{kw}' expects <time> as argument."))
        }
    }
}

/// `node <name>`: letters, digits, `.`, `-`, `_`.
fn node(line: &Line, g: &mut Global, diags: &mut Diags) {
    if !no_extra(line, 2, "node", diags) {
        return;
    }
    let name = line.arg(1);
    let ok = !name.is_empty()
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
    if !ok {
        return diags.alert(line, "'node' requires valid node name - non-empty string with digits(0-9), letters(A-Z, a-z), dot(.), hyphen(-) or underscode(_).");
    }
    g.node = Some(name.to_string());
}

/// `spread-checks <0..50>`: a second line is a non-fatal alert and the first value stays.
fn spread_checks(line: &Line, g: &mut Global, diags: &mut Diags) {
    if !no_extra(line, 2, "spread-checks", diags) {
        return;
    }
    if g.spread_checks != 0 {
        return diags.alert_continue(line, "spread-checks already specified. Continuing.");
    }
    if line.arg(1).is_empty() {
        return diags.alert(line, "'spread-checks' expects an integer argument (0..50).");
    }
    // HAProxy keeps the value even when it refuses it (a later line is "already specified").
    let v = crate::args::atol(line.arg(1));
    g.spread_checks = u32::try_from(v).unwrap_or(u32::MAX);
    if !(0..=50).contains(&v) {
        diags.alert(line, "'spread-checks' needs a positive value in range 0..50.");
    }
}

/// `max-spread-checks <time>`.
fn max_spread_checks(line: &Line, g: &mut Global, diags: &mut Diags) {
    let (kw, v) = ("max-spread-checks", line.arg(1));
    if !no_extra(line, 2, kw, diags) {
        return;
    }
    if v.is_empty() {
        return diags.alert(line, format!("'{kw}' expects an integer argument (0..50)."));
    }
    match crate::duration::read_time(v) {
        Ok(t) => {
            if let Some(w) = t.warning {
                diags.warning(line, w);
            }
            g.max_spread_checks = (!t.value.is_zero()).then_some(t.value);
        }
        Err(crate::duration::TimeError::Overflow) => diags.alert(line, format!("timer overflow in argument <{v}> to <{kw}>, maximum value is 2147483647 ms (~24.8 days).")),
        Err(crate::duration::TimeError::BadChar(c)) => diags.alert(line, format!("unsupported character '{c}' in '{kw}' (wants an integer delay).")),
        Err(crate::duration::TimeError::Missing) => diags.alert(line, format!("'{kw}' expects an integer argument (0..50).")),
    }
}

/// HAProxy reads `tune.maxaccept` with `atol()` (text that is not a number counts as 0): a
/// negative value lifts the limit, 0 keeps the default (64).
fn maxaccept(arg: &str) -> Option<u32> {
    match atol(arg) {
        0 => Some(DEFAULT_MAXACCEPT),
        v if v < 0 => None,
        v => Some(u32::try_from(v).unwrap_or(u32::MAX)),
    }
}

/// `tune.rcvbuf.client|server`, `tune.sndbuf.client|server`: read with `atol()` into a C
/// `int`, 0 meaning "leave it to the kernel"; the first non-zero value stays (HAProxy alerts
/// on a second one and goes on).
fn socket_buffer(line: &Line, kw: &str, g: &mut Global, diags: &mut Diags) {
    if !no_extra(line, 2, kw, diags) {
        return;
    }
    let bufs = if kw.ends_with(".client") { &mut g.client_bufs } else { &mut g.server_bufs };
    let slot = if kw.starts_with("tune.rcvbuf") { &mut bufs.rcv } else { &mut bufs.snd };
    if slot.is_some() {
        return diags.alert_continue(line, format!("'{kw}' already specified. Continuing."));
    }
    if line.arg(1).is_empty() {
        return diags.alert(line, format!("'{kw}' expects an integer argument."));
    }
    // C's long-to-int conversion keeps the low 32 bits.
    let v = atol(line.arg(1)) as i32;
    *slot = (v != 0).then_some(v);
}

fn nbthread(line: &Line, g: &mut Global, diags: &mut Diags) {
    let arg = line.arg(1);
    match parse_u32(arg) {
        None => diags.alert(
            line,
            format!("'nbthread' passed a missing or unparsable integer value in '{arg}'"),
        ),
        Some(n) if !(1..=MAX_THREADS).contains(&n) => diags
            .alert(line, format!("'nbthread' value must be between 1 and {MAX_THREADS} (was {n})")),
        Some(n) => {
            if no_extra(line, 2, "nbthread", diags) {
                g.nbthread = Some(n);
            }
        }
    }
}

fn user_group(line: &Line, g: &mut Global, diags: &mut Diags) {
    let kw = line.arg(0);
    let arg = line.arg(1);
    if arg.is_empty() {
        return diags.alert(line, format!("'{kw}' expects an argument."));
    }
    if !no_extra(line, 2, kw, diags) {
        return;
    }
    let spec = match kw {
        "user" | "group" => UserSpec::Name(arg.to_string()),
        _ => match parse_u32(arg) {
            Some(id) => UserSpec::Id(id),
            None => {
                let named = if kw == "uid" { "user" } else { "group" };
                return diags.alert(
                    line,
                    format!("{kw}: string '{arg}' is not a number. You might want to use the '{named}' parameter to use a system {named} name."),
                );
            }
        },
    };
    let (slot, at) = match kw == "user" || kw == "uid" {
        true => (&mut g.user, &mut g.user_at),
        false => (&mut g.group, &mut g.group_at),
    };
    if slot.is_some() {
        diags.warning(line, format!("'{kw}' already specified, the last one is used."));
    }
    *slot = Some(spec);
    *at = Some(line.span.clone());
}

/// A `cpu-map` process or thread set within 1..=64 (no comma lists in HAProxy 2.6).
fn parse_set(text: &str) -> Result<Vec<u32>, String> {
    crate::args::process_set(text, MAX_THREADS).map_err(|m| format!("cpu-map : {m}"))
}

/// One `N` or `N-M` range (reversed bounds are swapped) within `lo..=hi`.
fn parse_range(text: &str, lo: u32, hi: u32) -> Option<Vec<u32>> {
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (parse_u32(a)?, parse_u32(b)?),
        None => (parse_u32(text)?, parse_u32(text)?),
    };
    let (a, b) = (a.min(b), a.max(b));
    (a >= lo && b <= hi).then(|| (a..=b).collect())
}

/// Parses `cpu-map [auto:]<process-set>[/<thread-set>] <cpu-set>...`. Returns `None` when the
/// line was refused (reported) or does not apply to process 1 (reported as a warning).
pub fn parse_cpu_map(line: &Line, diags: &mut Diags) -> Option<CpuMap> {
    let spec = line.arg(1);
    let (auto, spec) = match spec.strip_prefix("auto:") {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let (proc_text, thread_text) = match spec.split_once('/') {
        Some((p, t)) => (p, Some(t)),
        None => (spec, None),
    };
    if line.words.len() < 3 {
        diags.alert(line, CPU_MAP_USAGE);
        return None;
    }
    let procs = parse_set(proc_text);
    let threads = thread_text.map(parse_set).transpose();
    let (procs, threads) = match (procs, threads) {
        (Ok(p), Ok(t)) => (p, t),
        (Err(e), _) | (_, Err(e)) => {
            diags.alert(line, e);
            return None;
        }
    };
    let cpus = cpu_sets(line, diags)?;
    let unit_count = threads.as_ref().map_or(procs.len(), Vec::len);
    if auto && unit_count != cpus.len() {
        diags.alert(
            line,
            "cpu-map : PROC/THREAD range and CPU sets must have the same size to be automatically bound",
        );
        return None;
    }
    if !procs.contains(&1) {
        diags.warning(line, format!("cpu-map : process set '{proc_text}' does not include process 1, the only process (nbproc is gone); line ignored."));
        return None;
    }
    let (auto, cpus) = match (&threads, auto) {
        // A process-level `auto:` mapping gives process 1 the first CPU of the set.
        (None, true) => (false, vec![cpus[0]]),
        _ => (auto, cpus),
    };
    let threads = if !auto && thread_text == Some("all") { None } else { threads };
    Some(CpuMap { span: line.span.clone(), auto, threads, cpus })
}

fn cpu_sets(line: &Line, diags: &mut Diags) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for word in &line.words[2..] {
        let set: Option<Vec<Vec<u32>>> =
            word.split(',').map(|r| parse_range(r, 0, u32::MAX)).collect();
        match set.map(|s| s.concat()) {
            None => {
                diags.alert(line, format!("cpu-map : '{word}' is not a CPU range."));
                return None;
            }
            Some(set) if set.last().is_some_and(|&c| c >= MAX_CPUS) => {
                let max = MAX_CPUS - 1;
                diags.alert(line, format!("cpu-map : supports CPU numbers from 0 to {max}."));
                return None;
            }
            Some(set) => cpus.extend(set),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// The CPUs worker thread `thread` (1-based) of `nbthread` is pinned to, or `None` when no
/// `cpu-map` line applies to it. Later lines override earlier ones; an `auto:` line maps its
/// threads to its CPUs one to one, in ascending order; a line without a thread set applies to
/// every thread.
pub fn cpus_for_thread(cpu_map: &[CpuMap], thread: u32, nbthread: u32) -> Option<Vec<u32>> {
    if thread == 0 || thread > nbthread {
        return None;
    }
    let mut result = None;
    for m in cpu_map {
        match (&m.threads, m.auto) {
            (None, false) => result = Some(m.cpus.clone()),
            (None, true) => result = m.cpus.first().map(|&c| vec![c]),
            (Some(ts), false) if ts.contains(&thread) => result = Some(m.cpus.clone()),
            (Some(ts), true) => {
                if let Some(pos) = ts.iter().position(|&t| t == thread) {
                    result = m.cpus.get(pos).map(|&c| vec![c]);
                }
            }
            _ => {}
        }
    }
    result
}

/// `set-var <proc.name> <expr>`, `set-var-fmt <proc.name> <format>`: evaluated in order once
/// the configuration is loaded.
fn set_var(line: &Line, kw: &str, g: &mut Global, diags: &mut Diags) {
    let what = if kw == "set-var" { "a sample expression" } else { "a format string" };
    let (name, text) = (line.arg(1), line.arg(2));
    if name.is_empty() || text.is_empty() {
        let msg =
            format!("'{kw}' requires a process-wide variable name ('proc.<name>') and {what}.");
        return diags.alert(line, msg);
    }
    let var = match crate::sample::parse_var_name(name) {
        Ok((crate::model::VarScope::Proc, n)) => n,
        Ok(_) => {
            let msg = format!("'{kw}': cannot set variable '{name}', only scope 'proc' is permitted in the global section.");
            return diags.alert(line, msg);
        }
        Err(m) => return diags.alert(line, format!("'{kw}': {m}.")),
    };
    let value = if kw == "set-var" {
        match crate::sample::parse(text, crate::sample::End::Input) {
            Ok((p, _)) => crate::model::GlobalVarValue::Expr(p.expr),
            Err(e) => return diags.alert(line, format!("'{kw}': {}.", e.plain())),
        }
    } else {
        match crate::logformat::parse(text, crate::sample::Ctx::Monitor) {
            Ok(f) => crate::model::GlobalVarValue::Fmt(f),
            Err(m) => return diags.alert(line, format!("'{kw}': {m}")),
        }
    };
    g.set_vars.push(crate::model::GlobalVar { span: line.span.clone(), name: var, value });
}

/// C's `atoi()` as HAProxy's parsers use it: leading blanks, a sign, digits; anything else
/// ends the number (none: 0), kept within `i32`.
fn c_atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i64::from(b - b'0')).min(i64::from(u32::MAX));
    }
    let v = if neg { -v } else { v };
    i64::from(v as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn parse_diags(text: &str) -> (Global, Diags) {
        let (lines, _) = lex_source("g.cfg", text, &|_| None);
        let mut g = Global::default();
        let mut d = Diags::default();
        for l in &lines {
            parse_line(l, &mut g, &mut d);
        }
        (g, d)
    }

    fn parse(text: &str) -> (Global, Vec<String>) {
        let (g, d) = parse_diags(text);
        (g, d.list.iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn socket_buffers_read_like_haproxy() {
        use crate::model::SocketBuffers;
        let (g, d) = parse(
            "tune.rcvbuf.client 65536\ntune.sndbuf.client 12abc\ntune.rcvbuf.server -5\n\
             tune.sndbuf.server 0\ntune.sndbuf.server 4096\ntune.rcvbuf.client 1000\n",
        );
        assert_eq!(g.client_bufs, SocketBuffers { rcv: Some(65536), snd: Some(12) });
        // 0 leaves the slot to the kernel, so a later line still sets it.
        assert_eq!(g.server_bufs, SocketBuffers { rcv: Some(-5), snd: Some(4096) });
        assert_eq!(d, ["'tune.rcvbuf.client' already specified. Continuing."]);
        assert_eq!(Global::default().client_bufs, SocketBuffers::default());
        let (g, d) = parse("tune.sndbuf.client abc\ntune.rcvbuf.server\ntune.rcvbuf.server 1 2\n");
        assert_eq!((g.client_bufs, g.server_bufs), Default::default());
        assert_eq!(
            d,
            [
                "'tune.rcvbuf.server' expects an integer argument.",
                "'tune.rcvbuf.server' cannot handle unexpected argument '2'."
            ]
        );
    }

    #[test]
    fn socket_buffer_second_value_is_a_continuing_alert() {
        let (g, d) = parse_diags("tune.sndbuf.server 1\ntune.sndbuf.server 2\n");
        assert_eq!(d.list.len(), 1);
        assert_eq!(d.list[0].severity, crate::diag::Severity::AlertContinue);
        assert!(!d.has_errors(), "HAProxy accepts the configuration");
        assert_eq!(g.server_bufs.snd, Some(1));
    }

    #[test]
    fn maxaccept_reads_like_atol() {
        let v = |t: &str| parse(&format!("tune.maxaccept {t}\n")).0.tune_maxaccept;
        assert_eq!(v("8"), Some(8));
        assert_eq!(v("-1"), None);
        assert_eq!(v("0"), Some(64));
        assert_eq!(v("abc"), Some(64));
        assert_eq!(v("12abc"), Some(12));
        assert_eq!(Global::default().tune_maxaccept, Some(64));
        let (_, d) = parse("tune.maxaccept\ntune.maxaccept 5 6\n");
        assert_eq!(
            d,
            [
                "'tune.maxaccept' expects an integer argument.",
                "'tune.maxaccept' cannot handle unexpected argument '6'."
            ]
        );
    }

    fn map(text: &str) -> Vec<CpuMap> {
        let (g, d) = parse(text);
        assert!(d.is_empty(), "{d:?}");
        g.cpu_map
    }

    #[test]
    fn cpu_map_forms() {
        let m = map("cpu-map 1 0");
        assert_eq!((m[0].auto, m[0].threads.clone(), m[0].cpus.clone()), (false, None, vec![0]));
        let m = map("cpu-map auto:1/1-4 0-3");
        assert_eq!((m[0].auto, m[0].threads.clone()), (true, Some(vec![1, 2, 3, 4])));
        assert_eq!(m[0].cpus, [0, 1, 2, 3]);
        let m = map("cpu-map 1/3-4 0 2 4-5");
        assert_eq!(m[0].threads, Some(vec![3, 4]));
        assert_eq!(m[0].cpus, [0, 2, 4, 5]);
        let m = map("cpu-map all/all 3-1");
        assert_eq!((m[0].threads.clone(), m[0].cpus.clone()), (None, vec![1, 2, 3]));
        assert_eq!(map("cpu-map odd/2 1")[0].threads, Some(vec![2]));
    }

    #[test]
    fn cpu_map_errors() {
        let (g, d) = parse("cpu-map auto:1/1-4 0-2\ncpu-map 1\ncpu-map 1 x\ncpu-map 1/1 5000\ncpu-map 1/65 0\ncpu-map 2 0\ncpu-map 1/1,3 0");
        assert!(g.cpu_map.is_empty());
        assert!(
            d[0].starts_with("cpu-map : PROC/THREAD range and CPU sets must have the same size")
        );
        assert_eq!(d[1], CPU_MAP_USAGE);
        assert_eq!(d[2], "cpu-map : 'x' is not a CPU range.");
        assert_eq!(d[3], "cpu-map : supports CPU numbers from 0 to 1023.");
        assert_eq!(
            d[4],
            "cpu-map : '65' is not a valid number/range. It supports numbers from 1 to 64."
        );
        assert!(d[5].contains("does not include process 1"), "{}", d[5]);
        assert_eq!(d[6], "cpu-map : '1,3' is not a valid number/range.");
        assert_eq!(d.len(), 7, "CPU sets take comma lists: {d:?}");
        let (g, _) = parse("cpu-map 1 0,2 4-5,7");
        assert_eq!(g.cpu_map[0].cpus, [0, 2, 4, 5, 7]);
        let (_, d) = parse("cpu-map 1/x 0");
        assert_eq!(d, ["cpu-map : 'x' is not a valid number/range."]);
    }

    #[test]
    fn thread_pinning() {
        let m = map("cpu-map 1 0-7\ncpu-map auto:1/1-4 4-7\ncpu-map 1/2 9");
        assert_eq!(cpus_for_thread(&m, 1, 8), Some(vec![4]));
        assert_eq!(cpus_for_thread(&m, 2, 8), Some(vec![9]), "later line wins");
        assert_eq!(cpus_for_thread(&m, 4, 8), Some(vec![7]));
        assert_eq!(cpus_for_thread(&m, 5, 8), Some((0..8).collect()));
        assert_eq!(cpus_for_thread(&m, 9, 8), None, "beyond nbthread");
        assert_eq!(cpus_for_thread(&m, 0, 8), None);
        assert_eq!(cpus_for_thread(&[], 1, 8), None);
        let m = map("cpu-map 1/1-2 3");
        assert_eq!(cpus_for_thread(&m, 3, 4), None);
        let m = map("cpu-map auto:1 5");
        assert_eq!(cpus_for_thread(&m, 3, 4), Some(vec![5]));
    }

    #[test]
    fn scalar_keywords() {
        let (g, d) = parse("daemon\nnbthread 4\nmaxconn 5000\npidfile /run/f.pid\nulimit-n 100000\nuser haproxy\ngid 99");
        assert!(d.is_empty(), "{d:?}");
        assert!(g.daemon);
        assert_eq!((g.nbthread, g.maxconn, g.ulimit_n), (Some(4), Some(5000), Some(100000)));
        assert_eq!(g.pidfile, Some(PathBuf::from("/run/f.pid")));
        assert_eq!(g.user, Some(UserSpec::Name("haproxy".into())));
        assert_eq!(g.group, Some(UserSpec::Id(99)));
    }

    #[test]
    fn scalar_errors() {
        let (_, d) =
            parse("nbthread 0\nnbthread x\nmaxconn\ndaemon x\nuid x\nnbproc 2\nfoo\nlua-load x");
        assert_eq!(d[0], "'nbthread' value must be between 1 and 64 (was 0)");
        assert_eq!(d[1], "'nbthread' passed a missing or unparsable integer value in 'x'");
        assert_eq!(d[2], "'maxconn' expects an integer argument.");
        assert_eq!(d[3], "'daemon' cannot handle unexpected argument 'x'.");
        assert!(d[4].starts_with("uid: string 'x' is not a number."));
        assert!(d[5].starts_with("nbproc is not supported any more since HAProxy 2.5."));
        assert_eq!(d[6], "unknown keyword 'foo' in 'global' section");
        assert_eq!(d[7], "'lua-load' is not supported yet");
    }
}
