//! Host names on `bind` lines (`bind localhost:5000`), resolved through the system resolver
//! before anything else uses the configuration, as HAProxy resolves them while reading it: the
//! first address `getaddrinfo` gives (of the family an `ipv4@`/`ipv6@` prefix asks for). An
//! unresolvable name is HAProxy's `'bind' : invalid address` error, with its file and line.
//!
//! Must not touch: sockets (the listener opens them afterwards).

use std::net::{SocketAddr, ToSocketAddrs};

use fulcrum_config::{BindAddr, Config, Diagnostic, Family};

/// Replaces every host name of every `bind` line by its address; returns one error per name
/// that does not resolve (all of them, in configuration order).
pub fn resolve_binds(config: &mut Config) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for p in config.proxies.iter_mut().filter(|p| p.kind.is_frontend()) {
        for bind in &mut p.binds {
            let mut reported = Vec::new();
            for addr in &mut bind.addrs {
                let BindAddr::Host { name, port, family, text } = addr else { continue };
                match resolve(name, *port, *family) {
                    Some(sa) => *addr = BindAddr::Inet(sa),
                    // A port range gives one address per port: one error for the name.
                    None if reported.contains(text) => {}
                    None => {
                        let msg = format!("'bind' : invalid address: '{name}' in '{text}'");
                        errors.push(Diagnostic::alert(Some(bind.span.clone()), msg));
                        reported.push(text.clone());
                    }
                }
            }
        }
    }
    errors
}

/// The first address the resolver gives for `name` in `family`, with `port`.
fn resolve(name: &str, port: u16, family: Family) -> Option<SocketAddr> {
    let wanted = |a: &SocketAddr| match family {
        Family::Any => true,
        Family::V4 => a.is_ipv4(),
        Family::V6 => a.is_ipv6(),
    };
    (name, port).to_socket_addrs().ok()?.find(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(binds: &str) -> Config {
        let text = format!(
            "defaults\n timeout client 1s\n timeout server 1s\n timeout connect 1s\n\
             listen l\n{binds} server s 127.0.0.1:1\n"
        );
        let src = fulcrum_config::Source { name: "r.cfg".into(), text };
        fulcrum_config::load(&[src], &|_| None).expect("loads").config
    }

    #[test]
    fn localhost_resolves_to_the_loopback_address() {
        let mut c = config(" bind localhost:5000\n bind ipv4@localhost:5001-5002\n");
        assert!(resolve_binds(&mut c).is_empty());
        let addrs: Vec<&BindAddr> = c.proxies[0].binds.iter().flat_map(|b| &b.addrs).collect();
        let v4 = |s: &str| BindAddr::Inet(s.parse().expect("addr"));
        assert!(matches!(addrs[0], BindAddr::Inet(a) if a.ip().is_loopback() && a.port() == 5000));
        assert_eq!(addrs[1..], [&v4("127.0.0.1:5001"), &v4("127.0.0.1:5002")]);
    }

    #[test]
    fn names_that_do_not_resolve_get_haproxys_error_once_per_address() {
        let mut c = config(
            " bind nosuchhost.invalid:80-82\n bind 1.18446744073709551616.0.2:80\n bind 127.0.0.1:9\n",
        );
        let errors: Vec<String> = resolve_binds(&mut c).iter().map(|d| d.to_string()).collect();
        assert_eq!(
            errors,
            [
                "parsing [r.cfg:6] : 'bind' : invalid address: 'nosuchhost.invalid' in 'nosuchhost.invalid:80-82'",
                "parsing [r.cfg:7] : 'bind' : invalid address: '1.18446744073709551616.0.2' in '1.18446744073709551616.0.2:80'",
            ]
        );
    }
}
