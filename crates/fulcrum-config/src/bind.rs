//! `bind` lines: listening address forms (`:80`, `*:80`, `ip:port`, `[v6]:port`, `:::80`,
//! `host:port`, `ipv4@`/`ipv6@`, `unix@/path`, `/path`, `fd@<n>`, port ranges, comma lists)
//! and the bind options Fulcrum supports (`name`, `backlog`, `v4v6`, `v6only`, `maxconn`, the TCP socket options). Host names are
//! checked as HAProxy checks them before resolving, and kept: the engine resolves them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use crate::args::{parse_u32, Diags};
use crate::keywords::{self, Status};
use crate::lexer::Line;
use crate::model::{Bind, BindAddr};

pub use crate::model::Family;

/// Splits a `<family>@` prefix off an address. Returns `Err(prefix)` for families Fulcrum
/// does not support yet (`abns@`, `udp@`, `quic4@`, `sockpair@`...).
pub fn strip_family(addr: &str) -> Result<(Family, &str), String> {
    let Some((prefix, rest)) = addr.split_once('@') else {
        return Ok((Family::Any, addr));
    };
    match prefix {
        "ipv4" | "tcp4" => Ok((Family::V4, rest)),
        "ipv6" | "tcp6" => Ok((Family::V6, rest)),
        "tcp" => Ok((Family::Any, rest)),
        _ => Err(format!("{prefix}@")),
    }
}

/// Parses a `bind` line of proxy `section` (its keyword, for messages).
pub fn parse_bind(line: &Line, section: &str, diags: &mut Diags) -> Option<Bind> {
    parse_bind_at(line, 1, section, diags)
}

/// Parses a bind address list at word `at` and the options after it (`bind`, and the global
/// `stats socket`, whose address is its third word).
pub fn parse_bind_at(line: &Line, at: usize, section: &str, diags: &mut Diags) -> Option<Bind> {
    let spec = line.arg(at);
    if spec.is_empty() {
        diags.alert(
            line,
            "'bind' expects {<path>|[addr1]:port1[-end1]}{,[addr]:port[-end]}... as arguments.",
        );
        return None;
    }
    let mut addrs = Vec::new();
    for part in spec.split(',') {
        match parse_bind_addr(part) {
            Ok(list) => addrs.extend(list),
            Err(msg) => {
                diags.alert(line, format!("'bind' : {msg}"));
                return None;
            }
        }
    }
    let mut bind = Bind {
        span: line.span.clone(),
        written: spec.to_string(),
        addrs,
        name: None,
        backlog: None,
        v4v6: false,
        v6only: false,
        sockopts: Default::default(),
        maxconn: None,
        unix: Default::default(),
        level: Default::default(),
        expose_fd: false,
        tls: Default::default(),
        accept_proxy: false,
        netscaler_cip: None,
        proto: None,
        id: None,
        threads: Vec::new(),
        nice: 0,
    };
    bind_options(line, at, section, &mut bind, diags).map(|()| bind)
}

/// Reads the options after the address. Every option Fulcrum does not support yet is reported
/// (an option's value is skipped as HAProxy skips it); an unknown keyword ends the line, as in
/// HAProxy (what follows it cannot be read). `None` when anything was refused.
fn bind_options(
    line: &Line,
    at: usize,
    section: &str,
    bind: &mut Bind,
    diags: &mut Diags,
) -> Option<()> {
    let prefix = if at == 1 {
        format!("'bind {}' in section '{section}'", line.arg(1))
    } else {
        format!("'{} {}' in section '{section}'", line.words[..at].join(" "), line.arg(at))
    };
    let mut ok = true;
    // The thread group of the `thread` options read so far (0: none named).
    let mut tgroup = None;
    let mut i = at + 1;
    while i < line.words.len() {
        let opt = line.arg(i);
        let val = line.arg(i + 1);
        let Some(kw) = keywords::find(keywords::BIND_OPTIONS, opt) else {
            let msg = match crate::suggest::best_match(opt, crate::suggest::Place::Bind) {
                Some(best) => {
                    format!("{prefix}: unknown keyword '{opt}'; did you mean '{best}' maybe ?")
                }
                None => format!("{prefix}: unknown keyword '{opt}'."),
            };
            diags.alert(line, msg);
            return None;
        };
        let number = |diags: &mut Diags| {
            let v = parse_u32(val);
            if v.is_none() {
                let msg =
                    format!("{prefix} : '{opt}' : {opt} expects an integer argument, got '{val}'");
                diags.alert(line, msg);
            }
            v
        };
        match opt {
            _ if !matches!(kw.status, Status::Supported | Status::Partial(_)) => {
                diags.alert(line, format!("{prefix}: '{opt}' is not supported yet"));
                ok = false;
            }
            "v4v6" => bind.v4v6 = true,
            "v6only" => bind.v6only = true,
            "defer-accept" => bind.sockopts.defer_accept = true,
            "tfo" => bind.sockopts.tfo = true,
            "transparent" => bind.sockopts.transparent = true,
            "mss" if val.is_empty() => {
                diags.alert(line, format!("{prefix} : '{opt}' : missing MSS value"));
                ok = false;
            }
            "mss" => match crate::args::atol(val) {
                m if m != 0 && m.unsigned_abs() <= 65_535 => bind.sockopts.mss = Some(m as i32),
                _ => {
                    let msg = "expects an MSS with and absolute value between 1 and 65535";
                    diags.alert(line, format!("{prefix} : '{opt}' : {msg}"));
                    ok = false;
                }
            },
            "interface" if val.is_empty() => {
                diags.alert(line, format!("{prefix} : '{opt}' : missing interface name"));
                ok = false;
            }
            "interface" => bind.sockopts.interface = Some(val.to_string()),
            "tcp-ut" => match user_timeout(opt, val) {
                Ok(ms) => bind.sockopts.tcp_ut = Some(ms),
                Err(e) => {
                    diags.alert(line, format!("{prefix} : {e}"));
                    ok = false;
                }
            },
            "proto" if val.is_empty() => {
                diags.alert(line, format!("{prefix} : '{opt}' : missing value"));
                ok = false;
            }
            "proto" => match val {
                "h1" => bind.proto = Some(crate::model::MuxProto::H1),
                "h2" => bind.proto = Some(crate::model::MuxProto::H2),
                "fcgi" | "none" | "quic" => {
                    diags.alert(line, format!("{prefix} : 'proto {val}' is not supported yet"));
                    ok = false;
                }
                _ => {
                    diags
                        .alert(line, format!("{prefix} : '{opt}' :  unknown MUX protocol '{val}'"));
                    ok = false;
                }
            },
            "accept-proxy" => bind.accept_proxy = true,
            "accept-netscaler-cip" if val.is_empty() => {
                diags.alert(line, format!("{prefix} : '{opt}' : missing value"));
                ok = false;
            }
            // (HAProxy reads it with `atol` into 32 bits, and refuses only 0.)
            "accept-netscaler-cip" => match crate::args::atol(val) as u32 {
                0 => {
                    diags
                        .alert(line, format!("{prefix} : '{opt}' : invalid value 0, must be >= 0"));
                    ok = false;
                }
                magic => bind.netscaler_cip = Some(magic),
            },
            "id" | "thread" | "nice" => {
                let r = match opt {
                    "id" => listener_id(val, bind.addrs.len()).map(|id| bind.id = Some(id)),
                    "thread" => thread_set(val, &mut tgroup).map(|t| bind.threads.extend(t)),
                    _ => nice(val).map(|n| bind.nice = n),
                };
                if let Err(msg) = r {
                    diags.alert(line, format!("{prefix} : {msg}"));
                    ok = false;
                }
            }
            _ if crate::tls::is_bind_option(opt) => {
                if let Some(Err(msg)) = crate::tls::bind_option(opt, val, &mut bind.tls) {
                    diags.alert(line, format!("{prefix} : {msg}"));
                    ok = false;
                }
            }
            // HAProxy 2.6 runs one process: `process 1[/<threads>]` is a deprecated way to
            // say `thread` (Fulcrum's listeners are every worker's).
            "process" => {
                let (p, threads) = val.split_once('/').map_or((val, None), |(p, t)| (p, Some(t)));
                let set = crate::args::process_set(p, 1);
                let parsed = threads.map(|t| crate::args::process_set(t, 64)).transpose();
                match set.and(parsed) {
                    Err(msg) => {
                        diags.alert(line, format!("{prefix} : 'process' : {msg}"));
                        ok = false;
                    }
                    Ok(t) => {
                        bind.threads.extend(t.unwrap_or_default());
                        let hint = threads
                            .map(|t| format!(" Please use 'thread {t}' instead."))
                            .unwrap_or_default();
                        let msg = format!("{prefix} : 'process {val}' on 'bind' lines is deprecated and will be removed in 2.7.{hint}");
                        diags.warning(line, msg);
                    }
                }
            }
            "name" if val.is_empty() => {
                diags.alert(line, format!("{prefix} : 'name' : missing name"));
                ok = false;
            }
            "name" => bind.name = Some(val.to_string()),
            "backlog" | "maxconn" => {
                let v = number(diags);
                ok &= v.is_some();
                *if opt == "backlog" { &mut bind.backlog } else { &mut bind.maxconn } = v;
            }
            "mode" | "uid" | "gid" | "user" | "group" | "level" | "expose-fd" => {
                if let Err(msg) = unix_option(opt, val, bind) {
                    // HAProxy quotes the message of a `stats socket` line.
                    let text = if at == 1 {
                        format!("{prefix} : {msg}")
                    } else {
                        format!("'{}' : '{msg}'", line.words[..at].join(" "))
                    };
                    diags.alert(line, text);
                    ok = false;
                }
            }
            _ => {}
        }
        i += 1 + keywords::bind_option_args(opt);
    }
    ok.then_some(())
}

/// The options of UNIX sockets and runtime API sockets, with HAProxy's messages.
fn unix_option(opt: &str, val: &str, bind: &mut Bind) -> Result<(), String> {
    use crate::model::{CliLevel, UserSpec};
    match opt {
        "mode" => match u32::from_str_radix(val, 8) {
            Ok(m) if m <= 0o7777 => bind.unix.mode = Some(m),
            _ => {
                return Err(format!(
                    "'mode' : missing or invalid mode '{val}' (octal integer expected)"
                ))
            }
        },
        "uid" | "gid" | "user" | "group" if val.is_empty() => {
            return Err(format!("'{opt}' : missing value"));
        }
        "uid" | "gid" => {
            let Some(id) = parse_u32(val) else {
                return Err(format!("'{opt}' : '{val}' is not a number"));
            };
            *if opt == "uid" { &mut bind.unix.owner } else { &mut bind.unix.group } =
                Some(UserSpec::Id(id));
        }
        "user" => bind.unix.owner = Some(UserSpec::Name(val.to_string())),
        "group" => bind.unix.group = Some(UserSpec::Name(val.to_string())),
        "level" => {
            bind.level = match val {
                "user" => CliLevel::User,
                "operator" => CliLevel::Operator,
                "admin" => CliLevel::Admin,
                _ => {
                    return Err(format!(
                        "'level' only supports 'user', 'operator', and 'admin' (got '{val}')"
                    ));
                }
            }
        }
        "expose-fd" if val == "listeners" => bind.expose_fd = true,
        "expose-fd" => return Err(format!("'expose-fd' only supports 'listeners' (got '{val}')")),
        _ => {}
    }
    Ok(())
}

/// The ids of a proxy's listeners (one per address of each bind line, in order), as HAProxy
/// 2.6 numbers them: a line's `id`, else the first id not taken from a counter that moves on
/// by one after every listener, its own id or not.
pub fn listener_ids(binds: &[Bind]) -> Vec<Vec<u32>> {
    let mut used: std::collections::BTreeSet<u32> = binds.iter().filter_map(|b| b.id).collect();
    let mut next = 1u32;
    binds
        .iter()
        .map(|b| {
            (0..b.addrs.len().max(1))
                .map(|_| {
                    let id = b.id.unwrap_or_else(|| {
                        while used.contains(&next) {
                            next += 1;
                        }
                        used.insert(next);
                        next
                    });
                    next += 1;
                    id
                })
                .collect()
        })
        .collect()
}

/// `id <n>` as HAProxy 2.6's `bind_parse_id` reads it (its uniqueness is the proxy's
/// check), on a line of `listeners` addresses.
fn listener_id(val: &str, listeners: usize) -> Result<u32, String> {
    if listeners != 1 {
        return Err("'id' can only be used with a single socket".into());
    }
    if val.is_empty() {
        return Err("'id' : expects an integer argument".into());
    }
    // `strtol` into an `int`: leading blanks and a sign, then digits to the end.
    let t = val.trim_start();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'id' : expects an integer argument, found '{val}'"));
    }
    match crate::args::atol(t) as i32 {
        n if n > 0 => Ok(n as u32),
        _ => Err("'id' : custom id has to be > 0".into()),
    }
}

/// `thread [<group>/]<set>` as HAProxy 2.6 reads it (one thread group; numbers up to 64):
/// the threads named, `tgroup` keeping the group of the line's earlier `thread` options.
fn thread_set(val: &str, tgroup: &mut Option<u32>) -> Result<Vec<u32>, String> {
    // `strtol` then a slash: a thread group.
    let t = val.trim_start();
    let signed = t.strip_prefix(['-', '+']).unwrap_or(t);
    let digits = signed.bytes().take_while(u8::is_ascii_digit).count();
    let (group, set) = match signed[digits..].strip_prefix('/') {
        Some(set) => {
            let g = crate::args::atol(&t[..t.len() - set.len() - 1]);
            if g != 1 {
                return Err(format!(
                    "'{val}' thread-group number must be between 1 and 1 (was {g})"
                ));
            }
            (1, set)
        }
        None => (0, val),
    };
    if tgroup.is_some_and(|g| g != group) {
        return Err(format!("'{val}' multiple thread-groups are not supported"));
    }
    let threads = crate::args::process_set(set, 64).map_err(|m| format!("'{set}' : {m}"))?;
    *tgroup = Some(group);
    Ok(threads)
}

/// `nice <n>`: HAProxy 2.6's range check.
fn nice(val: &str) -> Result<i32, String> {
    if val.is_empty() {
        return Err("'nice' : missing value".into());
    }
    match crate::args::atol(val) as i32 {
        n if (-1024..=1024).contains(&n) => Ok(n),
        n => Err(format!("'nice' : invalid value {n}, allowed range is -1024..1024")),
    }
}

/// Parses one address of a bind list; a port range gives one address per port.
pub fn parse_bind_addr(text: &str) -> Result<Vec<BindAddr>, String> {
    let expanded = crate::addr_env::expand(text);
    let text: &str = &expanded;
    if let Some(fd) = text.strip_prefix("fd@") {
        return match fd.parse::<i32>() {
            Ok(n) if n >= 0 => Ok(vec![BindAddr::Fd(n)]),
            _ => Err(format!("file descriptor '{fd}' is not a valid integer in '{text}'")),
        };
    }
    if let Some(path) = text.strip_prefix("unix@").or(text.starts_with('/').then_some(text)) {
        if path.is_empty() {
            return Err(format!("missing path in '{text}'"));
        }
        return Ok(vec![BindAddr::Unix(PathBuf::from(path))]);
    }
    let (family, rest) = strip_family(text)
        .map_err(|p| format!("address family '{p}' is not supported yet in '{text}'"))?;
    let (host, port) =
        split_host_port(rest).ok_or_else(|| format!("missing port specification in '{text}'"))?;
    let invalid = || format!("invalid address: '{host}' in '{text}'");
    let ip = match host.parse::<IpAddr>() {
        Err(_) if !matches!(host, "" | "*") => None,
        _ => Some(bind_ip(host, family).ok_or_else(invalid)?),
    };
    if ip.is_none() && !is_host_name(host) {
        return Err(invalid());
    }
    let (lo, hi) = port_range(port)?;
    Ok((lo..=hi)
        .map(|p| match ip {
            Some(ip) => BindAddr::Inet(SocketAddr::new(ip, p)),
            None => BindAddr::Host { name: host.into(), port: p, family, text: text.into() },
        })
        .collect())
}

/// What HAProxy accepts to resolve (`resolv_hostname_validation()`): at most 255 characters,
/// labels of at most 63 letters, digits, `-` and `_`, separated by dots. Dotted numbers that
/// are not an IP address (`1.2.3`, `010.0.0.1`) qualify too: the resolver reads them.
fn is_host_name(host: &str) -> bool {
    let label_ok = |l: &str| {
        l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
    };
    !host.is_empty() && host.len() <= 255 && host.split('.').all(label_ok)
}

/// Splits `host:port` / `[v6]:port` at the last colon; `None` when there is no port part.
pub fn split_host_port(text: &str) -> Option<(&str, &str)> {
    if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        return Some((host, after.strip_prefix(':')?));
    }
    text.rsplit_once(':')
}

fn bind_ip(host: &str, family: Family) -> Option<IpAddr> {
    let ip = match host {
        "" | "*" if family == Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        "" | "*" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        _ => host.parse().ok()?,
    };
    match (family, ip) {
        (Family::V4, IpAddr::V6(_)) | (Family::V6, IpAddr::V4(_)) => None,
        _ => Some(ip),
    }
}

fn port_range(text: &str) -> Result<(u16, u16), String> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p > 0);
    match text.split_once('-') {
        None => port(text).map(|p| (p, p)).ok_or_else(|| format!("invalid port '{text}'")),
        Some((a, b)) => match (port(a), port(b)) {
            (Some(a), Some(b)) if a <= b => Ok((a, b)),
            _ => Err(format!("invalid port range '{text}'")),
        },
    }
}

/// `tcp-ut <time>` (bind and server lines): milliseconds by default, HAProxy 2.6's messages.
pub(crate) fn user_timeout(opt: &str, val: &str) -> Result<u32, String> {
    use crate::duration::{read_time, TimeError, MAX_TIMER_MS};
    if val.is_empty() {
        return Err(format!("'{opt}' : missing TCP User Timeout value"));
    }
    match read_time(val) {
        Ok(t) if t.warning.is_none() => Ok(t.value.as_millis() as u32),
        Err(TimeError::Overflow) => Err(format!(
            "timer overflow in argument '{val}' to '{opt}' (maximum value is {MAX_TIMER_MS} ms or ~24.8 days)"
        )),
        _ => Err(format!("'{opt}' : expects a positive delay in milliseconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn inet(s: &str) -> BindAddr {
        BindAddr::Inet(s.parse().expect("socket addr"))
    }

    fn addrs(s: &str) -> Vec<BindAddr> {
        parse_bind_addr(s).expect("parses")
    }

    #[test]
    fn address_forms() {
        assert_eq!(addrs(":80"), [inet("0.0.0.0:80")]);
        assert_eq!(addrs("*:80"), [inet("0.0.0.0:80")]);
        assert_eq!(addrs("10.0.0.1:8080"), [inet("10.0.0.1:8080")]);
        assert_eq!(addrs("[::1]:443"), [inet("[::1]:443")]);
        assert_eq!(addrs(":::80"), [inet("[::]:80")]);
        assert_eq!(addrs("ipv6@:80"), [inet("[::]:80")]);
        assert_eq!(addrs("ipv4@127.0.0.1:80"), [inet("127.0.0.1:80")]);
        assert_eq!(addrs("unix@/run/x.sock"), [BindAddr::Unix("/run/x.sock".into())]);
        assert_eq!(addrs("/run/y.sock"), [BindAddr::Unix("/run/y.sock".into())]);
        assert_eq!(addrs("fd@3"), [BindAddr::Fd(3)]);
        assert_eq!(
            addrs("127.0.0.1:8000-8002"),
            [inet("127.0.0.1:8000"), inet("127.0.0.1:8001"), inet("127.0.0.1:8002")]
        );
    }

    #[test]
    fn address_errors() {
        let e = |s: &str| parse_bind_addr(s).expect_err(s);
        assert_eq!(e("1.2.3.4"), "missing port specification in '1.2.3.4'");
        assert_eq!(e(":70000"), "invalid port '70000'");
        assert_eq!(e(":0"), "invalid port '0'");
        assert_eq!(e(":8000-7999"), "invalid port range '8000-7999'");
        assert_eq!(e("bo!gus:80"), "invalid address: 'bo!gus' in 'bo!gus:80'");
        assert_eq!(e("[::1:80"), "missing port specification in '[::1:80'");
        let long = format!("{}.example:80", "a".repeat(64));
        assert_eq!(e(&long), format!("invalid address: '{}' in '{long}'", &long[..long.len() - 3]));
        assert_eq!(e("ipv4@::1:80"), "invalid address: '::1' in 'ipv4@::1:80'");
        assert_eq!(e("fd@x"), "file descriptor 'x' is not a valid integer in 'fd@x'");
        assert_eq!(e("abns@foo"), "address family 'abns@' is not supported yet in 'abns@foo'");
    }

    #[test]
    fn host_names_are_kept_for_the_engine_to_resolve() {
        let host = |name: &str, port: u16, family: Family, text: &str| BindAddr::Host {
            name: name.into(),
            port,
            family,
            text: text.into(),
        };
        assert_eq!(
            addrs("localhost:5000"),
            [host("localhost", 5000, Family::Any, "localhost:5000")]
        );
        assert_eq!(
            addrs("ipv6@my-host_1.example:80-81"),
            [
                host("my-host_1.example", 80, Family::V6, "ipv6@my-host_1.example:80-81"),
                host("my-host_1.example", 81, Family::V6, "ipv6@my-host_1.example:80-81"),
            ]
        );
        assert_eq!(addrs("[localhost]:80"), [host("localhost", 80, Family::Any, "[localhost]:80")]);
        // Not IP addresses, but names the resolver may read (as HAProxy lets getaddrinfo do).
        assert_eq!(addrs("1.2.3:80"), [host("1.2.3", 80, Family::Any, "1.2.3:80")]);
        let odd = "1.18446744073709551616.0.2:80";
        assert_eq!(addrs(odd), [host("1.18446744073709551616.0.2", 80, Family::Any, odd)]);
    }

    fn bind(text: &str) -> (Option<Bind>, Vec<String>) {
        let (lines, _) = lex_source("b.cfg", text, &|_| None);
        let mut d = Diags::default();
        let b = parse_bind(&lines[0], "frontend", &mut d);
        (b, d.list.iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn lists_and_options() {
        let (b, d) = bind("bind :80,:81,10.0.0.1:82 name web backlog 100 v4v6 maxconn 50");
        assert!(d.is_empty(), "{d:?}");
        let b = b.expect("bind");
        assert_eq!(b.addrs, [inet("0.0.0.0:80"), inet("0.0.0.0:81"), inet("10.0.0.1:82")]);
        assert_eq!(
            (b.name.as_deref(), b.backlog, b.v4v6, b.maxconn),
            (Some("web"), Some(100), true, Some(50))
        );
    }

    #[test]
    fn v6only_wins_over_v4v6_and_neither_leaves_the_system_default() {
        let only = |t: &str| bind(t).0.expect("bind").only_v6();
        assert_eq!(only("bind :::80"), None);
        assert_eq!(only("bind :::80 v4v6"), Some(false));
        assert_eq!(only("bind :::80 v6only"), Some(true));
        assert_eq!(only("bind :::80 v4v6 v6only"), Some(true));
        assert_eq!(only("bind :::80 v6only v4v6"), Some(true));
    }

    #[test]
    fn tcp_socket_options_are_read_with_haproxys_messages() {
        let (b, d) = bind("bind :80 defer-accept tfo mss -40 interface lo");
        assert!(d.is_empty(), "{d:?}");
        let o = b.expect("bind").sockopts;
        assert!(o.defer_accept && o.tfo);
        assert_eq!((o.mss, o.interface.as_deref()), (Some(-40), Some("lo")));
        let (b, d) = bind("bind :80 mss 0 mss 70000 interface");
        assert!(b.is_none());
        let p = "'bind :80' in section 'frontend' : ";
        let range = "expects an MSS with and absolute value between 1 and 65535";
        assert_eq!(
            d,
            [
                format!("{p}'mss' : {range}"),
                format!("{p}'mss' : {range}"),
                format!("{p}'interface' : missing interface name"),
            ]
        );
    }

    #[test]
    fn every_unsupported_option_of_a_line_is_reported() {
        let (b, d) = bind(
            "bind :80 ssl crt /x.pem alpn h2,http/1.1 accept-proxy name web namespace x nice 10 severity-output string",
        );
        assert!(b.is_none());
        let p = "'bind :80' in section 'frontend': ";
        let want: Vec<String> = ["namespace", "severity-output"]
            .iter()
            .map(|o| format!("{p}'{o}' is not supported yet"))
            .collect();
        assert_eq!(d, want);
        // A bad value does not stop the reading either; an unknown keyword does.
        let (_, d) = bind("bind :80 backlog x namespace x bogus maxconn y");
        assert_eq!(
            d,
            [
                "'bind :80' in section 'frontend' : 'backlog' : backlog expects an integer argument, got 'x'".to_string(),
                format!("{p}'namespace' is not supported yet"),
                format!("{p}unknown keyword 'bogus'."),
            ]
        );
    }

    #[test]
    fn tls_and_proxy_options_are_read() {
        let (b, d) = bind("bind :443 ssl crt /x.pem crt-list /l alpn h2,http/1.1 accept-proxy strict-sni verify required ca-file /ca.pem ssl-min-ver TLSv1.3");
        assert!(d.is_empty(), "{d:?}");
        let b = b.expect("bind");
        assert!(b.tls.ssl && b.accept_proxy && b.tls.strict_sni);
        assert_eq!(b.tls.certs.len(), 2);
        assert_eq!(b.tls.ca_file.as_deref(), Some("/ca.pem"));
        assert_eq!(b.tls.versions.min, Some(crate::model::TlsVersion::Tls13));
        let (_, d) = bind("bind :443 ssl verify sometimes ssl-max-ver TLSv9");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("unknown verify method 'sometimes'"), "{d:?}");
        assert!(d[1].contains("unknown ssl/tls version string 'TLSv9'"), "{d:?}");
    }

    #[test]
    fn listeners_are_numbered_as_haproxy_numbers_them() {
        let binds: Vec<Bind> =
            ["bind :80", "bind :81 id 1", "bind :82,:83", "bind :84 id 6", "bind :85"]
                .iter()
                .map(|l| bind(l).0.expect("bind"))
                .collect();
        // The counter moves on past every listener, its own id or not.
        assert_eq!(listener_ids(&binds), [vec![2], vec![1], vec![4, 5], vec![6], vec![7]]);
    }

    #[test]
    fn option_errors() {
        assert_eq!(
            bind("bind :80 thread 1 namespace x").1,
            ["'bind :80' in section 'frontend': 'namespace' is not supported yet"]
        );
        let (b, d) = bind("bind :80 thread 3-4 thread 1/odd nice -7 id 9");
        assert_eq!(
            d,
            ["'bind :80' in section 'frontend' : '1/odd' multiple thread-groups are not supported"]
        );
        assert!(b.is_none());
        let (b, d) = bind("bind :80 thread 3-4 thread even nice -7 id 9");
        assert!(d.is_empty(), "{d:?}");
        let b = b.expect("bind");
        assert_eq!(
            (b.threads.len(), b.threads[..3].to_vec(), b.nice, b.id),
            (34, vec![3, 4, 2], -7, Some(9))
        );
        let (b, d) = bind("bind :80 tcp-ut 1s");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(b.expect("bind").sockopts.tcp_ut, Some(1000));
        assert_eq!(
            bind("bind :80 tcp-ut 25d tcp-ut 5x tcp-ut").1,
            [
                "'bind :80' in section 'frontend' : timer overflow in argument '25d' to 'tcp-ut' (maximum value is 2147483647 ms or ~24.8 days)",
                "'bind :80' in section 'frontend' : 'tcp-ut' : expects a positive delay in milliseconds",
                "'bind :80' in section 'frontend' : 'tcp-ut' : missing TCP User Timeout value",
            ]
        );
        assert_eq!(
            bind("bind :80 bogus").1,
            ["'bind :80' in section 'frontend': unknown keyword 'bogus'."]
        );
        assert_eq!(
            bind("bind :80 name").1,
            ["'bind :80' in section 'frontend' : 'name' : missing name"]
        );
        assert_eq!(bind("bind :80 backlog x").1.len(), 1);
        assert_eq!(bind("bind 1.2.3.4").1, ["'bind' : missing port specification in '1.2.3.4'"]);
        assert!(bind("bind").1[0].starts_with("'bind' expects {<path>"));
    }
}
