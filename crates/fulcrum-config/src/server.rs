//! `server` and `default-server` lines: server address forms (`host:port`, `[v6]:port`,
//! `ipv4@`/`ipv6@`, no port, `:+N`/`:-N` offsets, `unix@`/absolute paths) and the options
//! Fulcrum supports (`weight`, `maxconn`, `maxqueue`, `backup`, `disabled`, `enabled`, `port`,
//! `cookie`, `pool-max-conn`, `pool-purge-delay`).

use std::path::PathBuf;
use std::time::Duration;

use crate::args::{parse_u32, Diags};
use crate::bind::{split_host_port, strip_family, Family};
use crate::duration::{parse_time, TimeError};
use crate::keywords::{self, Status};
use crate::lexer::Line;
use crate::model::{Server, ServerAddr, ServerPort};

/// Server settings a `default-server` line sets for the `server` lines after it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerOpts {
    pub weight: Option<u32>,
    pub maxconn: Option<u32>,
    pub maxqueue: Option<u32>,
    pub backup: bool,
    pub disabled: bool,
    pub port: Option<u16>,
    pub cookie: Option<String>,
    pub pool_max_conn: Option<i32>,
    pub pool_purge_delay: Option<Duration>,
}

/// Parses a `default-server` line into `opts`.
pub fn parse_default_server(line: &Line, opts: &mut ServerOpts, diags: &mut Diags) {
    let mut new = opts.clone();
    if apply_options(line, 1, "'default-server'", &mut new, diags) {
        *opts = new;
    }
}

/// Parses a `server` line of proxy `proxy` with the current `default-server` settings.
pub fn parse_server(
    line: &Line,
    proxy: &str,
    defaults: &ServerOpts,
    diags: &mut Diags,
) -> Option<Server> {
    let (name, addr_text) = (line.arg(1), line.arg(2));
    if name.is_empty() || addr_text.is_empty() {
        diags.alert(line, "'server' expects <name> and <addr>[:<port>] as arguments.");
        return None;
    }
    let who = format!("'server {proxy}/{name}'");
    if keywords::find(keywords::SERVER_OPTIONS, addr_text).is_some() {
        let msg = format!("{who} : missing address ('{addr_text}' is a server option); expects <name> <addr>[:<port>] [options].");
        diags.alert(line, msg);
        return None;
    }
    let addr = match parse_server_addr(addr_text) {
        Ok(a) => a,
        Err(msg) => {
            diags.alert(line, format!("{who} : {msg}"));
            return None;
        }
    };
    let mut opts = defaults.clone();
    if !apply_options(line, 3, &who, &mut opts, diags) {
        return None;
    }
    Some(Server {
        name: name.to_string(),
        span: line.span.clone(),
        addr,
        weight: opts.weight.unwrap_or(1),
        maxconn: opts.maxconn,
        maxqueue: opts.maxqueue,
        backup: opts.backup,
        disabled: opts.disabled,
        check_port: opts.port,
        cookie: opts.cookie,
        pool_max_conn: opts.pool_max_conn,
        pool_purge_delay: opts.pool_purge_delay,
    })
}

/// Applies the options from word `start` on; reports the first bad one and returns false.
fn apply_options(
    line: &Line,
    start: usize,
    who: &str,
    o: &mut ServerOpts,
    diags: &mut Diags,
) -> bool {
    let mut i = start;
    while i < line.words.len() {
        let opt = line.arg(i);
        let val = line.arg(i + 1);
        let int = |diags: &mut Diags| {
            let v = parse_u32(val);
            if v.is_none() {
                diags.alert(
                    line,
                    format!("{who} : '{opt}' expects an integer argument, got '{val}'."),
                );
            }
            v
        };
        let mut takes_value = true;
        match opt {
            "weight" => match int(diags) {
                Some(w) if w <= 256 => o.weight = Some(w),
                Some(w) => {
                    let name = line.arg(1);
                    let msg =
                        format!("{who} : weight of server {name} is not within 0 and 256 ({w}).");
                    diags.alert(line, msg);
                    return false;
                }
                None => return false,
            },
            "maxconn" => {
                o.maxconn = Some(match int(diags) {
                    Some(v) => v,
                    None => return false,
                })
            }
            "maxqueue" => {
                o.maxqueue = Some(match int(diags) {
                    Some(v) => v,
                    None => return false,
                })
            }
            "cookie" | "pool-purge-delay" if i + 1 >= line.words.len() => {
                diags.alert(line, format!("{who} : '{opt}' expects <value> as argument.."));
                return false;
            }
            "cookie" => o.cookie = Some(val.to_string()),
            "pool-max-conn" => match val.parse::<i32>() {
                Ok(v) if v >= -1 => o.pool_max_conn = Some(v),
                Ok(_) => {
                    diags.alert(line, format!("{who} : 'pool-max-conn' must be >= -1."));
                    return false;
                }
                Err(_) => {
                    let msg = format!(
                        "{who} : 'pool-max-conn' expects an integer argument, got '{val}'."
                    );
                    diags.alert(line, msg);
                    return false;
                }
            },
            "pool-purge-delay" => match parse_time(val) {
                Ok(d) => o.pool_purge_delay = Some(d),
                Err(e) => {
                    let msg = match e {
                        TimeError::BadChar(c) => format!(
                            "{who} : unexpected character '{c}' in argument to <pool-purge-delay>.."
                        ),
                        _ => format!("{who} : invalid value '{val}' for 'pool-purge-delay'."),
                    };
                    diags.alert(line, msg);
                    return false;
                }
            },
            "port" => match val.parse::<u16>() {
                Ok(p) if p > 0 => o.port = Some(p),
                _ => {
                    diags.alert(
                        line,
                        format!("{who} : invalid port '{val}' for 'port' (expects 1-65535)."),
                    );
                    return false;
                }
            },
            _ => {
                takes_value = false;
                if !flag(line, opt, who, o, diags) {
                    return false;
                }
            }
        }
        i += if takes_value { 2 } else { 1 };
    }
    true
}

/// Flag options (no value); reports unknown and not-yet options.
fn flag(line: &Line, opt: &str, who: &str, o: &mut ServerOpts, diags: &mut Diags) -> bool {
    match opt {
        "backup" => o.backup = true,
        "no-backup" => o.backup = false,
        "disabled" => o.disabled = true,
        "enabled" => o.disabled = false,
        _ => {
            let msg = match keywords::find(keywords::SERVER_OPTIONS, opt).map(|k| k.status) {
                Some(Status::NotYet | Status::Obsolete(_)) => {
                    format!("{who} : '{opt}' is not supported yet")
                }
                _ => format!("{who} : unknown keyword '{opt}'."),
            };
            diags.alert(line, msg);
            return false;
        }
    }
    true
}

/// Parses a server address as written; host names are kept for the engine to resolve.
pub fn parse_server_addr(text: &str) -> Result<ServerAddr, String> {
    if text.starts_with("fd@") || text.starts_with("sockpair@") {
        return Err(format!("a file descriptor is not acceptable here in '{text}'"));
    }
    if let Some(path) = text.strip_prefix("unix@").or(text.starts_with('/').then_some(text)) {
        if path.is_empty() {
            return Err(format!("missing path in '{text}'"));
        }
        return Ok(ServerAddr::Unix(PathBuf::from(path)));
    }
    let (family, rest) = strip_family(text)
        .map_err(|p| format!("address family '{p}' is not supported yet in '{text}'"))?;
    // As HAProxy: without brackets the last colon always starts the port (`::1:80`).
    let (host, port_text) = match split_host_port(rest) {
        Some(hp) => hp,
        None if rest.starts_with('[') => (rest.trim_start_matches('[').trim_end_matches(']'), ""),
        None => (rest, ""),
    };
    if host.is_empty() {
        return Err(format!("missing address in '{text}'"));
    }
    check_host(host, family).ok_or_else(|| format!("invalid address '{host}' in '{text}'"))?;
    let port = parse_port(port_text, text)?;
    Ok(ServerAddr::Inet { host: host.to_string(), port })
}

fn check_host(host: &str, family: Family) -> Option<()> {
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if family == Family::V4 && !ip.is_ipv4() => None,
        Ok(ip) if family == Family::V6 && !ip.is_ipv6() => None,
        Ok(_) => Some(()),
        Err(_) => {
            let ok =
                host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
            ok.then_some(())
        }
    }
}

fn parse_port(p: &str, text: &str) -> Result<ServerPort, String> {
    if p.is_empty() {
        return Ok(ServerPort::Same);
    }
    if p.trim_start_matches(['+', '-']).contains('-') {
        return Err(format!("port range not permitted here in '{text}'"));
    }
    let (sign, digits) = match p.as_bytes()[0] {
        b'+' => (1, &p[1..]),
        b'-' => (-1, &p[1..]),
        _ => (0, p),
    };
    if let Some(bad) = digits.chars().find(|c| !c.is_ascii_digit()) {
        return Err(format!("invalid character '{bad}' in port number '{p}' in '{text}'"));
    }
    let value: u32 = digits.parse().map_err(|_| format!("invalid port '{p}'"))?;
    if value > 65535 {
        return Err(format!("invalid port '{p}'"));
    }
    Ok(match sign {
        0 if value == 0 => ServerPort::Same,
        0 => ServerPort::Fixed(value as u16),
        s => ServerPort::Offset(s * value as i32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn inet(host: &str, port: ServerPort) -> ServerAddr {
        ServerAddr::Inet { host: host.into(), port }
    }

    fn addr(s: &str) -> ServerAddr {
        parse_server_addr(s).expect(s)
    }

    #[test]
    fn address_forms() {
        assert_eq!(addr("10.0.0.1:80"), inet("10.0.0.1", ServerPort::Fixed(80)));
        assert_eq!(addr("app.example:8080"), inet("app.example", ServerPort::Fixed(8080)));
        assert_eq!(addr("[::1]:80"), inet("::1", ServerPort::Fixed(80)));
        assert_eq!(addr("[::1]"), inet("::1", ServerPort::Same));
        assert!(parse_server_addr("::1").is_err(), "last colon is the port: use [::1]");
        assert_eq!(addr("ipv6@::1:80"), inet("::1", ServerPort::Fixed(80)));
        assert_eq!(addr("ipv4@10.0.0.1"), inet("10.0.0.1", ServerPort::Same));
        assert_eq!(addr("10.0.0.1"), inet("10.0.0.1", ServerPort::Same));
        assert_eq!(addr("10.0.0.1:+1000"), inet("10.0.0.1", ServerPort::Offset(1000)));
        assert_eq!(addr("10.0.0.1:-10"), inet("10.0.0.1", ServerPort::Offset(-10)));
        assert_eq!(addr("unix@/run/app.sock"), ServerAddr::Unix("/run/app.sock".into()));
        assert_eq!(addr("/run/app.sock"), ServerAddr::Unix("/run/app.sock".into()));
    }

    #[test]
    fn address_errors() {
        let e = |s: &str| parse_server_addr(s).expect_err(s);
        assert_eq!(e("1.2.3.4:x"), "invalid character 'x' in port number 'x' in '1.2.3.4:x'");
        assert_eq!(e("1.2.3.4:70000"), "invalid port '70000'");
        assert_eq!(e("1.2.3.4:80-90"), "port range not permitted here in '1.2.3.4:80-90'");
        assert_eq!(e("fd@3"), "a file descriptor is not acceptable here in 'fd@3'");
        assert_eq!(e(":80"), "missing address in ':80'");
        assert_eq!(e("ipv4@::1:80"), "invalid address '::1' in 'ipv4@::1:80'");
        assert_eq!(e("a/b:80"), "invalid address 'a/b' in 'a/b:80'");
    }

    fn server(text: &str, defaults: &ServerOpts) -> (Option<Server>, Vec<String>) {
        let (lines, _) = lex_source("s.cfg", text, &|_| None);
        let mut d = Diags::default();
        let s = parse_server(&lines[0], "be", defaults, &mut d);
        (s, d.list.iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn options_and_defaults() {
        let (lines, _) =
            lex_source("s.cfg", "default-server weight 5 maxconn 10 backup", &|_| None);
        let mut opts = ServerOpts::default();
        let mut d = Diags::default();
        parse_default_server(&lines[0], &mut opts, &mut d);
        assert!(d.list.is_empty());
        let (s, d) = server("server a 1.2.3.4:80 maxqueue 7 port 9000 no-backup disabled", &opts);
        assert!(d.is_empty(), "{d:?}");
        let s = s.expect("server");
        assert_eq!((s.weight, s.maxconn, s.maxqueue), (5, Some(10), Some(7)));
        assert_eq!((s.backup, s.disabled, s.check_port), (false, true, Some(9000)));
        let s = server("server b 1.2.3.4:80 enabled", &opts).0.expect("server");
        assert_eq!((s.weight, s.backup, s.disabled), (5, true, false));
        let s = server("server c 1.2.3.4:80", &ServerOpts::default()).0.expect("server");
        assert_eq!(s.weight, 1);
    }

    #[test]
    fn option_errors() {
        let none = ServerOpts::default();
        assert_eq!(
            server("server s 1.2.3.4:80 check", &none).1,
            ["'server be/s' : 'check' is not supported yet"]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 bogus", &none).1,
            ["'server be/s' : unknown keyword 'bogus'."]
        );
        assert_eq!(
            server("server s 1.2.3.4:80 weight 257", &none).1,
            ["'server be/s' : weight of server s is not within 0 and 256 (257)."]
        );
        assert_eq!(
            server("server s", &none).1,
            ["'server' expects <name> and <addr>[:<port>] as arguments."]
        );
        assert_eq!(server("server s 1.2.3.4 weight x", &none).1.len(), 1);
    }
}
