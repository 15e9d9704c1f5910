//! `ring` and `log-forward` sections (HAProxy manual §3.10 and §3.11): a ring is a buffer of
//! log messages that `log ring@<name>` targets write and that its `server` lines receive over
//! TCP; a `log-forward` section receives syslog messages (`bind` over TCP, `dgram-bind` over
//! UDP) and sends them on to its `log` targets.

use std::net::SocketAddr;
use std::time::Duration;

use crate::args::Diags;
use crate::lexer::Line;
use crate::model::{LogEntry, Span, SyslogFormat};

/// A `ring <name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    pub name: String,
    pub span: Span,
    /// `format`: the header messages are stored with (HAProxy's default: raw).
    pub format: SyslogFormat,
    /// `maxlen`: the longest message kept (longer ones are cut).
    pub maxlen: u32,
    /// `size`: bytes of messages the buffer holds; the oldest go when it is full.
    pub size: u64,
    pub timeout_connect: Option<Duration>,
    pub timeout_server: Option<Duration>,
    pub servers: Vec<RingServer>,
}

/// A ring's `server <name> <addr>`: messages are sent to it over TCP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingServer {
    pub name: String,
    pub addr: SocketAddr,
    /// `log-proto octet-count` (RFC 6587 octet counting); the default `legacy` ends each
    /// message with a line feed.
    pub octet_count: bool,
}

/// A `log-forward <name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogForward {
    pub name: String,
    pub span: Span,
    /// `bind`: TCP listeners (messages framed by octet counting or line feeds).
    pub binds: Vec<SocketAddr>,
    /// `dgram-bind`: UDP listeners, one message per datagram.
    pub dgram_binds: Vec<SocketAddr>,
    pub logs: Vec<LogEntry>,
    pub maxconn: Option<u32>,
    pub timeout_client: Option<Duration>,
}

fn addr(line: &Line, text: &str) -> Result<SocketAddr, String> {
    let t = text.strip_prefix("ipv4@").or_else(|| text.strip_prefix("ipv6@")).unwrap_or(text);
    let t = t.strip_prefix("tcp@").or_else(|| t.strip_prefix("udp@")).unwrap_or(t);
    let t = if t.starts_with(':') { format!("0.0.0.0{t}") } else { t.to_string() };
    t.parse().map_err(|_| {
        format!("'{}' : invalid address '{text}' (an IP address and a port; host names are not supported yet).", line.arg(0))
    })
}

fn time(line: &Line, text: &str) -> Result<Duration, String> {
    crate::duration::parse_time(text)
        .map_err(|e| crate::duration::time_error_message(line.arg(0), text, &e))
}

/// One line of a `ring` section.
pub fn ring_line(r: &mut Ring, line: &Line, diags: &mut Diags) {
    let res: Result<(), String> = (|| {
        match line.arg(0) {
            "description" => {}
            "format" => {
                r.format = match line.arg(1) {
                    "local" => SyslogFormat::Local,
                    "rfc3164" => SyslogFormat::Rfc3164,
                    "rfc5424" => SyslogFormat::Rfc5424,
                    "priority" => SyslogFormat::Priority,
                    "short" => SyslogFormat::Short,
                    "timed" => SyslogFormat::Timed,
                    "iso" => SyslogFormat::Iso,
                    "raw" => SyslogFormat::Raw,
                    other => return Err(format!("unknown format '{other}'.")),
                }
            }
            "maxlen" => match line.arg(1).parse::<u32>() {
                Ok(n) if n > 0 => r.maxlen = n,
                _ => return Err(format!("invalid size '{}' for new sink buffer.", line.arg(1))),
            },
            "size" => match line.arg(1).parse::<u64>() {
                Ok(n) if n > 0 => r.size = n,
                _ => return Err(format!("invalid size '{}' for new sink buffer.", line.arg(1))),
            },
            "timeout" => {
                let d = time(line, line.arg(2))?;
                match line.arg(1) {
                    "connect" => r.timeout_connect = Some(d),
                    "server" => r.timeout_server = Some(d),
                    o => return Err(format!("unknown timeout '{o}'.")),
                }
            }
            "server" => {
                let mut s = RingServer {
                    name: line.arg(1).to_string(),
                    addr: addr(line, line.arg(2))?,
                    octet_count: false,
                };
                let mut i = 3;
                while i < line.words.len() {
                    match line.arg(i) {
                        "log-proto" => {
                            s.octet_count = match line.arg(i + 1) {
                                "octet-count" => true,
                                "legacy" => false,
                                v => return Err(format!("unsupported log protocol '{v}'")),
                            };
                            i += 1;
                        }
                        // Check and TLS settings of ring servers: not yet.
                        o => {
                            return Err(format!(
                                "'server {}' : '{o}' is not supported yet in a ring",
                                s.name
                            ))
                        }
                    }
                    i += 1;
                }
                r.servers.push(s);
            }
            kw => return Err(format!("unknown statement '{kw}'.")),
        }
        Ok(())
    })();
    if let Err(e) = res {
        diags.alert(line, e);
    }
}

/// One line of a `log-forward` section.
pub fn forward_line(f: &mut LogForward, line: &Line, diags: &mut Diags) {
    let res: Result<(), String> = (|| {
        match line.arg(0) {
            "bind" => {
                for a in line.arg(1).split(',') {
                    f.binds.push(addr(line, a)?);
                }
            }
            "dgram-bind" => {
                for a in line.arg(1).split(',') {
                    f.dgram_binds.push(addr(line, a)?);
                }
            }
            "log" => crate::logtargets::log_line(line, false, false, &mut f.logs, diags),
            "maxconn" => match line.arg(1).parse::<u32>() {
                Ok(n) => f.maxconn = Some(n),
                Err(_) => return Err(format!("'maxconn' : invalid value '{}'", line.arg(1))),
            },
            "backlog" => {}
            "timeout" if line.arg(1) == "client" => {
                f.timeout_client = Some(time(line, line.arg(2))?);
            }
            kw => return Err(format!("unknown keyword '{kw}' in log-forward section.")),
        }
        Ok(())
    })();
    if let Err(e) = res {
        diags.alert(line, e);
    }
}

impl Ring {
    pub fn new(name: &str, span: Span) -> Self {
        Ring {
            name: name.to_string(),
            span,
            format: SyslogFormat::Raw,
            maxlen: 1024,
            size: 16384,
            timeout_connect: None,
            timeout_server: None,
            servers: Vec::new(),
        }
    }
}

impl LogForward {
    pub fn new(name: &str, span: Span) -> Self {
        LogForward {
            name: name.to_string(),
            span,
            binds: Vec::new(),
            dgram_binds: Vec::new(),
            logs: Vec::new(),
            maxconn: None,
            timeout_client: None,
        }
    }
}
