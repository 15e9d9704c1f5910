//! `source` (backends, `default-server` and `server` lines): the local address a proxy's
//! connections to its servers are bound to, its optional `usesrc` (HAProxy's transparent
//! proxying: the client's address, its IP, or a fixed foreign one) and `interface`, read as
//! HAProxy 2.6 reads them (`srv_parse_source()`, `cfg_parse_listen()`), with its messages.
//! Only the words: the engine binds the sockets.

use std::net::{IpAddr, SocketAddr};

/// A `source` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The address bound before connecting; port 0 lets the system choose.
    pub addr: SocketAddr,
    /// The last port of a `<port>-<port>` range (servers only), `None` without one.
    pub port_high: Option<u16>,
    /// `usesrc`: the address the server sees (needs the right to bind foreign addresses).
    pub usesrc: Option<UseSrc>,
    /// `interface <name>`: the connections leave through this interface only.
    pub interface: Option<String>,
}

/// What `usesrc` binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UseSrc {
    /// `usesrc <addr>[:<port>]`.
    Addr(SocketAddr),
    /// `usesrc client`: the client's address and port.
    Client,
    /// `usesrc clientip`: the client's address, any port.
    ClientIp,
    /// `usesrc hdr_ip(<name>[,<occ>])`: the IPv4 address in the request's header `name`, its
    /// value number `occ` (HAProxy's header occurrences: from 1, or from the last with a
    /// negative number; -1 when not given; 0 fails every connection, as in HAProxy).
    HdrIp { name: String, occ: i32 },
}

/// The deepest negative occurrence `hdr_ip` takes (HAProxy's `MAX_HDR_HISTORY`).
const MAX_HDR_HISTORY: i32 = 10;

/// `hdr_ip(<name>[,<occ>])`, read as HAProxy reads it: the name up to a space, a comma or
/// `)`, then an optional occurrence (`strl2ic` of a sign and digits).
fn hdr_ip(w: &str) -> Result<UseSrc, String> {
    let rest = w["hdr_ip(".len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    let end = rest.find(|c: char| c.is_ascii_whitespace() || c == ',' || c == ')');
    let (name, after) = rest.split_at(end.unwrap_or(rest.len()));
    let after = after.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let occ = match after.strip_prefix(',') {
        None => -1,
        // (Only a `-` and digits: `atol` would take a `+` too.)
        Some(n) if n.starts_with('+') => 0,
        Some(n) => crate::args::atol(n).clamp(i32::MIN.into(), i32::MAX.into()) as i32,
    };
    if occ < -MAX_HDR_HISTORY {
        return Err(format!(
            "usesrc hdr_ip(name,num) does not support negative occurrences values smaller than {MAX_HDR_HISTORY}."
        ));
    }
    Ok(UseSrc::HdrIp { name: name.to_ascii_lowercase(), occ })
}

/// Where a `source` is written: its messages differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Proxy,
    Server,
}

/// Reads `source <addr>[:<port>] [usesrc <what>] [interface <name>]` from `words[at]` (the
/// word `source`); the setting and the number of words taken, or HAProxy's message.
pub fn parse(words: &[String], at: usize, place: At) -> Result<(Source, usize), String> {
    let arg = |i: usize| words.get(i).map_or("", String::as_str);
    let value = arg(at + 1);
    if value.is_empty() {
        return Err(match place {
            At::Proxy => "'source' expects <addr>[:<port>], and optionally 'usesrc' <addr>, and 'interface' <name>.".into(),
            At::Server => "'source' expects <addr>[:<port>[-<port>]], and optionally 'usesrc' <addr>, and 'interface' <name> as argument.".into(),
        });
    }
    let (addr, port_high) =
        address(value, place == At::Server).map_err(|e| format!("'source {value}' : {e}"))?;
    let mut src = Source { addr, port_high, usesrc: None, interface: None };
    let mut i = at + 2;
    loop {
        match arg(i) {
            "usesrc" => {
                let what = arg(i + 1);
                src.usesrc = Some(match what {
                    "" => {
                        return Err(match place {
                            At::Proxy => "'usesrc' expects <addr>[:<port>], 'client', or 'clientip' as argument.".into(),
                            At::Server => "'usesrc' expects <addr>[:<port>], 'client', 'clientip', or 'hdr_ip(name,#)' as argument.".into(),
                        })
                    }
                    "client" => UseSrc::Client,
                    "clientip" => UseSrc::ClientIp,
                    w if w.starts_with("hdr_ip(") => hdr_ip(w)?,
                    w => UseSrc::Addr(
                        address(w, false).map_err(|e| format!("'usesrc {w}' : {e}"))?.0,
                    ),
                });
                i += 2;
            }
            "interface" => {
                let name = arg(i + 1);
                if name.is_empty() {
                    return Err("'source' : missing interface name.".into());
                }
                src.interface = Some(name.to_string());
                i += 2;
            }
            "" => break,
            _ if place == At::Proxy => {
                return Err(
                    "'source' only supports optional keywords 'interface' and 'usesrc'.".into()
                )
            }
            // On a server line, the next word is the next server option.
            _ => break,
        }
    }
    Ok((src, i - at))
}

/// `<ip>[:<port>]` (a range `<port>-<port>` where `range`), in `str2sa_range()`'s words.
fn address(text: &str, range: bool) -> Result<(SocketAddr, Option<u16>), String> {
    let bare = text.strip_prefix("ipv4@").or_else(|| text.strip_prefix("ipv6@")).unwrap_or(text);
    let (host, port) = match crate::bind::split_host_port(bare) {
        Some((h, p)) => (h.trim_start_matches('[').trim_end_matches(']'), p),
        None => (bare.trim_start_matches('[').trim_end_matches(']'), ""),
    };
    let ip: IpAddr = match host {
        "" | "*" => IpAddr::from([0, 0, 0, 0]),
        h => h.parse().map_err(|_| {
            // (A name HAProxy would resolve, which Fulcrum does not yet; else its message.)
            let name = h.bytes().any(|b| b.is_ascii_alphabetic())
                && h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            match name {
                true => format!("host names are not supported yet in '{text}'"),
                false => format!("invalid address: '{h}' in '{text}'"),
            }
        })?,
    };
    let (low, high) = match port.split_once('-') {
        Some(_) if !range => return Err(format!("port range not permitted here in '{text}'")),
        Some((a, b)) => (a, Some(b)),
        None => (port, None),
    };
    let number = |p: &str| -> Result<u16, String> {
        if p.is_empty() {
            return Ok(0);
        }
        if let Some(c) = p.chars().find(|c| !c.is_ascii_digit()) {
            return Err(format!("invalid character '{c}' in port number '{p}' in '{text}'"));
        }
        p.parse::<u16>().map_err(|_| format!("invalid port '{p}'"))
    };
    let low = number(low)?;
    let high = match high {
        Some(h) => {
            let h = number(h)?;
            if low == 0 || h < low {
                return Err(format!("invalid port range '{port}' in '{text}'"));
            }
            Some(h)
        }
        None => None,
    };
    Ok((SocketAddr::new(ip, low), high))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn reads_the_address_usesrc_and_interface() {
        let w = words("source 10.0.0.1:2000 usesrc clientip interface eth1 check");
        let (s, n) = parse(&w, 0, At::Server).expect("valid");
        assert_eq!(n, 6);
        assert_eq!(s.addr, "10.0.0.1:2000".parse().expect("addr"));
        assert_eq!(s.usesrc, Some(UseSrc::ClientIp));
        assert_eq!(s.interface.as_deref(), Some("eth1"));
        let w = words("source 0.0.0.0 usesrc 192.168.1.1:80");
        let (s, _) = parse(&w, 0, At::Proxy).expect("valid");
        assert_eq!(s.addr.port(), 0);
        assert_eq!(s.usesrc, Some(UseSrc::Addr("192.168.1.1:80".parse().expect("addr"))));
    }

    #[test]
    fn port_ranges_only_on_servers_with_haproxys_messages() {
        let w = words("source 1.2.3.4:80-90");
        let (s, _) = parse(&w, 0, At::Server).expect("valid");
        assert_eq!((s.addr.port(), s.port_high), (80, Some(90)));
        assert_eq!(
            parse(&w, 0, At::Proxy).expect_err("no range"),
            "'source 1.2.3.4:80-90' : port range not permitted here in '1.2.3.4:80-90'"
        );
        let w = words("source ::");
        assert_eq!(
            parse(&w, 0, At::Proxy).expect_err("bad address"),
            "'source ::' : invalid address: ':' in '::'"
        );
        let w = words("source ipv6@[::]:0");
        assert_eq!(parse(&w, 0, At::Proxy).expect("valid").0.addr, "[::]:0".parse().expect("v6"));
        let w = words("source 1.2.3.4:abc");
        assert_eq!(
            parse(&w, 0, At::Proxy).expect_err("bad port"),
            "'source 1.2.3.4:abc' : invalid character 'a' in port number 'abc' in '1.2.3.4:abc'"
        );
        let w = words("source 1.2.3.4 bogus");
        assert_eq!(
            parse(&w, 0, At::Proxy).expect_err("bogus"),
            "'source' only supports optional keywords 'interface' and 'usesrc'."
        );
        assert_eq!(parse(&w, 0, At::Server).expect("next option").1, 2);
        let w = words("source 1.2.3.4 interface");
        assert_eq!(
            parse(&w, 0, At::Proxy).expect_err("no name"),
            "'source' : missing interface name."
        );
    }
}
