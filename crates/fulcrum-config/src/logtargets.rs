//! `log` lines (in `global`, `defaults` and proxies): where log messages go, in which syslog
//! format, with which facility and levels; `log global`, `no log`; and the global
//! `log-send-hostname`, `log-tag`, `node`, `description`. Host names are kept as written; the
//! engine resolves them.

use std::path::PathBuf;

use crate::args::{no_extra, Diags};
use crate::lexer::Line;
use crate::model::{LogAddr, LogEntry, LogSample, LogTarget, SyslogFormat};

/// HAProxy's syslog facilities, in their numeric order.
pub const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2",
    "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

/// Syslog levels, in their numeric order.
pub const LEVELS: [&str; 8] =
    ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

/// Parses `log ...` / `no log` into `list`; `global`: this is the global section.
pub fn log_line(
    line: &Line,
    negated: bool,
    global: bool,
    list: &mut Vec<LogEntry>,
    diags: &mut Diags,
) {
    log_line_as("log", line, negated, global, list, diags)
}

/// [`log_line`] for another keyword of the same arguments (an `fcgi-app`'s `log-stderr`),
/// whose messages it names.
pub fn log_line_as(
    kw: &str,
    line: &Line,
    negated: bool,
    global: bool,
    list: &mut Vec<LogEntry>,
    diags: &mut Diags,
) {
    // The words after `no` (if any).
    let args: Vec<&str> =
        line.words.iter().skip(usize::from(negated)).map(String::as_str).collect();
    match parse(&args, negated, global, line) {
        Ok(Parsed::Clear) => list.clear(),
        Ok(Parsed::Global) => {
            if !list.contains(&LogEntry::Global) {
                list.push(LogEntry::Global);
            }
        }
        Ok(Parsed::Target(t)) => list.push(LogEntry::Target(t)),
        Err(e) => diags.alert(line, format!("{kw} : {e}")),
    }
}

enum Parsed {
    Clear,
    Global,
    Target(LogTarget),
}

fn parse(args: &[&str], negated: bool, global: bool, line: &Line) -> Result<Parsed, String> {
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    if negated {
        if !arg(1).is_empty() {
            return Err("'no log' does not expect arguments".into());
        }
        return Ok(Parsed::Clear);
    }
    if arg(1) == "global" && arg(2).is_empty() {
        if global {
            return Err("'global' is not supported for a global syslog server".into());
        }
        return Ok(Parsed::Global);
    }
    if arg(1).is_empty() || arg(2).is_empty() {
        let or_global = if global { "" } else { "or global" };
        return Err(format!("expects <address> and <facility> {or_global} as arguments"));
    }
    let mut i = 2;
    let mut maxlen = 1024;
    if arg(i) == "len" {
        let n = crate::args::atol(arg(i + 1));
        if !(80..=65535).contains(&n) {
            return Err(format!(
                "invalid log length '{}', must be between 80 and 65535",
                arg(i + 1)
            ));
        }
        maxlen = n as u32;
        i += 2;
    }
    let mut format = SyslogFormat::Unspecified;
    if arg(i) == "format" {
        format = match arg(i + 1) {
            "local" => SyslogFormat::Local,
            "rfc3164" => SyslogFormat::Rfc3164,
            "rfc5424" => SyslogFormat::Rfc5424,
            "priority" => SyslogFormat::Priority,
            "short" => SyslogFormat::Short,
            "timed" => SyslogFormat::Timed,
            "iso" => SyslogFormat::Iso,
            "raw" => SyslogFormat::Raw,
            other => return Err(format!("unknown log format '{other}'")),
        };
        i += 2;
    }
    let mut sample = None;
    if arg(i) == "sample" {
        sample = Some(parse_sample(arg(i + 1))?);
        i += 2;
    }
    let facility = FACILITIES
        .iter()
        .position(|f| *f == arg(i))
        .ok_or_else(|| format!("unknown log facility '{}'", arg(i)))?;
    i += 1;
    let level = |i: usize, what: &str| -> Result<u8, String> {
        LEVELS
            .iter()
            .position(|l| *l == arg(i))
            .map(|l| l as u8)
            .ok_or_else(|| format!("unknown optional {what}log level '{}'", arg(i)))
    };
    let mut max = 7;
    if !arg(i).is_empty() {
        max = level(i, "")?;
        i += 1;
    }
    let mut min = 0;
    if !arg(i).is_empty() {
        min = level(i, "minimum ")?;
        i += 1;
    }
    if !arg(i).is_empty() {
        return Err(format!("cannot handle unexpected argument '{}'", arg(i)));
    }
    let addr = address(arg(1))?;
    Ok(Parsed::Target(LogTarget {
        span: line.span.clone(),
        addr,
        written: arg(1).to_string(),
        maxlen,
        format,
        facility: facility as u8,
        level: max,
        minlevel: min,
        sample,
    }))
}

/// HAProxy's `read_uint`: the leading digits of `s` (0 without any), and the rest.
fn read_uint(s: &str) -> (u64, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..end].bytes().fold(0u64, |n, d| n.saturating_mul(10) + u64::from(d - b'0'));
    (n.min(u64::from(u32::MAX)), &s[end..])
}

/// `sample <ranges>:<size>` with HAProxy's checks and messages: ranges `<low>[-<high>]`
/// separated by commas, from 1, not overlapping, within `<size>`.
fn parse_sample(text: &str) -> Result<LogSample, String> {
    let Some((list, size_text)) = text.split_once(':') else {
        return Err("Missing sample size".into());
    };
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut rest = list;
    let mut max_high = 0;
    while !rest.is_empty() {
        let (item, next) = match rest.find(',') {
            Some(c) => (&rest[..c], &rest[c + 1..]),
            None => (rest, ""),
        };
        let wrong = || format!("wrong sample range '{rest}'");
        let (low, after) = read_uint(item);
        let high = match after.strip_prefix('-') {
            _ if low == 0 => return Err(wrong()),
            None if after.is_empty() => low,
            None => return Err(wrong()),
            Some(h) => match read_uint(h) {
                (high, "") if high > low => high,
                _ => return Err(wrong()),
            },
        };
        let (low, high) = (low as u32, high as u32);
        let inside = |v: u32| ranges.iter().any(|&(l, h)| v >= l && v <= h);
        if inside(low) || inside(high) {
            return Err("ranges are overlapping".into());
        }
        ranges.push((low, high));
        max_high = max_high.max(high);
        rest = next;
    }
    if ranges.is_empty() {
        return Err("no sampling ranges given".into());
    }
    let size = match read_uint(size_text) {
        (n, "") if n > 0 => n as u32,
        _ => return Err(format!("wrong sample size '{size_text}' for sample range '{list}'")),
    };
    if size < max_high {
        return Err(format!(
            "sample size {size} should be greater or equal to {max_high} the maximum of the high ranges limits"
        ));
    }
    ranges.sort_unstable();
    Ok(LogSample { ranges, size })
}

/// A log target's address: `stdout`/`stderr`/`fd@<n>`, `unix@<path>` or a path, or
/// `[ipv4@|ipv6@|udp@...]<host>[:<port>]` (port 514 by default).
fn address(text: &str) -> Result<LogAddr, String> {
    let expanded = crate::addr_env::expand(text);
    let text: &str = &expanded;
    match text {
        "stdout" => return Ok(LogAddr::Fd(1)),
        "stderr" => return Ok(LogAddr::Fd(2)),
        _ => {}
    }
    if let Some(n) = text.strip_prefix("fd@") {
        return n
            .parse::<i32>()
            .map(LogAddr::Fd)
            .map_err(|_| format!("invalid file descriptor in '{text}'"));
    }
    if let Some(name) = text.strip_prefix("ring@") {
        return Ok(LogAddr::Ring(name.to_string()));
    }
    if text.starts_with("tcp@") || text.starts_with("tcp4@") || text.starts_with("tcp6@") {
        return Err(format!("log target '{text}' is not supported yet"));
    }
    if let Some(path) = text.strip_prefix("unix@").or(text.starts_with('/').then_some(text)) {
        return Ok(LogAddr::Unix(PathBuf::from(path)));
    }
    let rest = match text.split_once('@') {
        Some(("ipv4" | "ipv6" | "udp" | "udp4" | "udp6", r)) => r,
        Some((p, _)) => {
            return Err(format!("address family '{p}@' is not supported yet in '{text}'"))
        }
        None => text,
    };
    // As HAProxy: the last ':' not inside brackets separates the port.
    let (host, port) = match rest.rfind([':', ']']) {
        Some(i) if rest.as_bytes()[i] == b':' => {
            let p = &rest[i + 1..];
            let port = match p.bytes().next() {
                None => 0,
                Some(c) if c.is_ascii_digit() => {
                    // atoi(): what follows the digits is ignored, as HAProxy does.
                    let digits = p.bytes().take_while(u8::is_ascii_digit).count();
                    match p[..digits].parse::<u32>() {
                        Ok(n) if n <= 65535 && !p[digits..].starts_with('-') => n as u16,
                        _ if p[digits..].starts_with('-') => {
                            return Err(format!("port range not permitted here in '{text}'"))
                        }
                        _ => return Err(format!("invalid port '{p}'")),
                    }
                }
                Some(b'-' | b'+') => {
                    return Err(format!("port offset not permitted here in '{text}'"))
                }
                Some(_) => {
                    let c = p.chars().next().unwrap_or(' ');
                    return Err(format!(
                        "invalid character '{c}' in port number '{p}' in '{text}'"
                    ));
                }
            };
            (&rest[..i], port)
        }
        _ => (rest, 0),
    };
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    // No host before the port is any address, as in HAProxy (`log :514`, or `log ${H}:${P}`
    // with both unset).
    let bare = if bare.is_empty() && rest.starts_with(':') { "0.0.0.0" } else { bare };
    // An address that is not an IP is a host name, resolved when the plan is built; one with a
    // ':' left in it is neither.
    if bare.is_empty() || (bare.contains(':') && bare.parse::<std::net::Ipv6Addr>().is_err()) {
        return Err(format!("invalid address: '{host}' in '{text}'"));
    }
    let host = bare;
    let port = if port == 0 { 514 } else { port };
    Ok(LogAddr::Inet { host: host.to_string(), port })
}

/// `log-tag <tag>` (global or proxy).
pub fn log_tag(line: &Line, slot: &mut Option<String>, diags: &mut Diags) {
    if !no_extra(line, 2, "log-tag", diags) {
        return;
    }
    if line.arg(1).is_empty() {
        return diags.alert(line, "'log-tag' expects a tag for use in syslog.");
    }
    *slot = Some(line.arg(1).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn one(text: &str, global: bool) -> (Vec<LogEntry>, Vec<String>) {
        let (lines, _) = lex_source("l.cfg", text, &|_| None);
        let mut list = Vec::new();
        let mut d = Diags::default();
        for l in &lines {
            let negated = l.arg(0) == "no";
            log_line(l, negated, global, &mut list, &mut d);
        }
        (list, d.list.iter().map(|d| d.message.clone()).collect())
    }

    fn target(e: &LogEntry) -> &LogTarget {
        match e {
            LogEntry::Target(t) => t,
            LogEntry::Global => panic!("not a target"),
        }
    }

    #[test]
    fn sample_ranges_and_sizes_are_checked_with_haproxys_messages() {
        let (l, d) = one("log 127.0.0.1 sample 5-6,1,3:10 local0", true);
        assert!(d.is_empty(), "{d:?}");
        let want = LogSample { ranges: vec![(1, 1), (3, 3), (5, 6)], size: 10 };
        assert_eq!(target(&l[0]).sample, Some(want));
        for (text, msg) in [
            ("1", "Missing sample size"),
            ("0:2", "wrong sample range '0'"),
            ("1,3-2:4", "wrong sample range '3-2'"),
            ("1x:4", "wrong sample range '1x'"),
            ("1-3,2:4", "ranges are overlapping"),
            (":4", "no sampling ranges given"),
            ("1:0", "wrong sample size '0' for sample range '1'"),
            ("1-4:3", "sample size 3 should be greater or equal to 4 the maximum of the high ranges limits"),
        ] {
            let (_, d) = one(&format!("log 127.0.0.1 sample {text} local0"), true);
            assert!(d.len() == 1 && d[0].contains(msg), "{text}: {d:?}");
        }
    }

    #[test]
    fn targets_lengths_formats_facilities_and_levels() {
        let (l, d) = one(
            "log 10.0.0.1 local0\nlog 127.0.0.1:5140 len 200 format rfc5424 local1 notice err\n\
             log /dev/log daemon\nlog stdout format raw local7\nlog ipv6@[::1]:514 user",
            true,
        );
        assert!(d.is_empty(), "{d:?}");
        let t = target(&l[0]);
        assert_eq!(
            (&t.addr, t.maxlen, t.format, t.facility, t.level, t.minlevel),
            (
                &LogAddr::Inet { host: "10.0.0.1".into(), port: 514 },
                1024,
                SyslogFormat::Unspecified,
                16,
                7,
                0
            )
        );
        let t = target(&l[1]);
        assert_eq!(
            (t.maxlen, t.format, t.facility, t.level, t.minlevel),
            (200, SyslogFormat::Rfc5424, 17, 5, 3)
        );
        assert_eq!(target(&l[2]).addr, LogAddr::Unix("/dev/log".into()));
        assert_eq!(target(&l[3]).addr, LogAddr::Fd(1));
        assert_eq!(target(&l[4]).addr, LogAddr::Inet { host: "::1".into(), port: 514 });
    }

    #[test]
    fn global_no_and_errors_with_haproxy_messages() {
        let (l, d) = one("log global\nlog global\nlog 1.2.3.4 local0\nno log\nlog global", false);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(l, [LogEntry::Global]);
        let (_, d) = one("log global", true);
        assert_eq!(d, ["log : 'global' is not supported for a global syslog server"]);
        let (_, d) = one("log 1.2.3.4\nlog 1.2.3.4 local9\nlog 1.2.3.4 len 10 local0\nlog 1.2.3.4 format xml local0\nlog 1.2.3.4 local0 loud\nlog 1.2.3.4 local0 info debug extra", false);
        assert_eq!(
            d,
            [
                "log : expects <address> and <facility> or global as arguments",
                "log : unknown log facility 'local9'",
                "log : invalid log length '10', must be between 80 and 65535",
                "log : unknown log format 'xml'",
                "log : unknown optional log level 'loud'",
                "log : cannot handle unexpected argument 'extra'",
            ]
        );
    }

    #[test]
    fn addresses_split_at_the_last_colon_as_haproxy_does() {
        let addr = |t: &str| address(t);
        let inet = |h: &str, port| Ok(LogAddr::Inet { host: h.into(), port });
        assert_eq!(addr("ipv6@::1:1514"), inet("::1", 1514));
        assert_eq!(addr("[::1]"), inet("::1", 514));
        assert_eq!(addr("log.example:0"), inet("log.example", 514));
        assert_eq!(addr("127.0.0.1:12x"), inet("127.0.0.1", 12), "atoi, as HAProxy");
        assert_eq!(addr("unix@/run/log"), Ok(LogAddr::Unix("/run/log".into())));
        assert_eq!(addr("fd@2"), Ok(LogAddr::Fd(2)));
        assert_eq!(addr("::1"), Err("invalid address: ':' in '::1'".into()));
        assert_eq!(addr("127.0.0.1:99999"), Err("invalid port '99999'".into()));
        assert_eq!(
            addr("127.0.0.1:x"),
            Err("invalid character 'x' in port number 'x' in '127.0.0.1:x'".into())
        );
        assert_eq!(
            addr("127.0.0.1:1-2"),
            Err("port range not permitted here in '127.0.0.1:1-2'".into())
        );
        assert_eq!(addr("ring@buf"), Ok(LogAddr::Ring("buf".into())));
    }
}
