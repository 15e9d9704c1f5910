//! `balance` and `hash-type`: the balance algorithm of a proxy and how its hashing ones hash,
//! and `persist rdp-cookie`, with HAProxy 2.6's messages. The algorithms themselves run in
//! `fulcrum-balance`.

use crate::args::{no_extra, parse_u32, Diags};
use crate::lexer::Line;
use crate::model::*;

pub fn balance(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let algo = line.arg(1);
    let simple = match algo {
        "roundrobin" => Some(Balance::RoundRobin),
        "static-rr" => Some(Balance::StaticRr),
        "leastconn" => Some(Balance::LeastConn),
        "first" => Some(Balance::First),
        "source" => Some(Balance::Source),
        _ => None,
    };
    let parsed = match (simple, algo.strip_prefix("random")) {
        (Some(b), _) => Some(b),
        (None, Some(rest)) => {
            random_draws(rest, line, diags).map(|draws| Balance::Random { draws })
        }
        (None, None) if algo == "uri" => return balance_uri(p, line, diags),
        (None, None) if algo == "url_param" => return balance_url_param(p, line, diags),
        (None, None) if algo.starts_with("hdr(") && algo.ends_with(')') => {
            return balance_hdr(p, line, diags)
        }
        (None, None) if algo.starts_with("rdp-cookie") => {
            // HAProxy 2.6 reads no further word.
            match rdp_cookie_name(algo, "mstshash") {
                Some(name) => p.balance = Balance::RdpCookie { name },
                None => diags.alert(line, "balance rdp-cookie : missing cookie name."),
            }
            return;
        }
        (None, None) => {
            let base = algo.split('(').next().unwrap_or("");
            if base == "hash" {
                diags.alert(line, format!("'balance {algo}' is not supported yet"));
            } else {
                diags.alert(line, "balance only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)' and 'rdp-cookie(name)' options.");
            }
            None
        }
    };
    if let Some(b) = parsed {
        if no_extra(line, 2, &format!("balance {algo}"), diags) {
            p.balance = b;
        }
    }
}

/// The cookie name of `rdp-cookie` (`default` when bare) or `rdp-cookie(<name>)` as HAProxy
/// 2.6 reads it (up to the first `)`); `None` when there is no name.
pub fn rdp_cookie_name(word: &str, default: &str) -> Option<String> {
    let rest = word.strip_prefix("rdp-cookie")?;
    if rest.is_empty() {
        return Some(default.to_string());
    }
    let name = rest.strip_prefix('(')?.split(')').next().filter(|n| !n.is_empty())?;
    rest[1..].contains(')').then(|| name.to_string())
}

/// `persist rdp-cookie[(<name>)]`, HAProxy 2.6's only persistence method, with its messages.
pub fn persist(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let method = line.arg(1);
    if method.is_empty() {
        return diags.alert(line, "missing persist method.");
    }
    if !method.starts_with("rdp-cookie") {
        return diags.alert(line, "unknown persist method.");
    }
    if method.starts_with("rdp-cookie(") && line.words.len() > 2 {
        let msg = format!("'persist' cannot handle unexpected argument '{}'.", line.arg(2));
        return diags.alert(line, msg);
    }
    match rdp_cookie_name(method, "msts") {
        Some(name) => p.persist_rdp = Some(name),
        None => diags.alert(line, "persist rdp-cookie(name)' requires an rdp cookie name."),
    }
}

/// `balance uri [len <n>] [depth <n>] [whole] [path-only]`.
fn balance_uri(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let (mut depth, mut len, mut whole, mut path_only) = (None, None, false, false);
    let mut i = 2;
    while i < line.words.len() {
        match line.arg(i) {
            opt @ ("len" | "depth") => {
                let v = line.arg(i + 1);
                let Some(n) = parse_u32(v).filter(|n| *n > 0) else {
                    let msg =
                        format!("balance uri : '{opt}' expects a positive integer (got '{v}').");
                    return diags.alert(line, msg);
                };
                if opt == "len" {
                    len = Some(n);
                } else {
                    depth = Some(n);
                }
                i += 1;
            }
            "whole" => whole = true,
            "path-only" => path_only = true,
            other => {
                let msg = format!("balance uri only accepts parameters 'len', 'depth', 'path-only', and 'whole' (got '{other}').");
                return diags.alert(line, msg);
            }
        }
        i += 1;
    }
    p.balance = Balance::Uri { depth, len, whole, path_only };
}

/// `balance url_param <name> [check_post]`.
fn balance_url_param(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let name = line.arg(2);
    if name.is_empty() {
        return diags.alert(line, "balance url_param requires an URL parameter name.");
    }
    if line.arg(3) == "check_post" {
        return diags.alert(line, "'balance url_param ... check_post' is not supported yet");
    }
    if no_extra(line, 3, "balance url_param", diags) {
        p.balance = Balance::UrlParam { name: name.to_string() };
    }
}

/// `balance hdr(<name>) [use_domain_only]`.
fn balance_hdr(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let algo = line.arg(1);
    let name = &algo[4..algo.len() - 1];
    if name.is_empty() {
        return diags.alert(line, "balance hdr requires an http header field name.");
    }
    let use_domain_only = match line.arg(2) {
        "" => false,
        "use_domain_only" => true,
        other => {
            let msg =
                format!("balance {algo} only accepts 'use_domain_only' modifier (got '{other}').");
            return diags.alert(line, msg);
        }
    };
    if no_extra(line, 3, &format!("balance {algo}"), diags) {
        p.balance = Balance::Hdr { name: name.to_ascii_lowercase(), use_domain_only };
    }
}

/// The `(<draws>)` after `random`; 2 when absent.
fn random_draws(rest: &str, line: &Line, diags: &mut Diags) -> Option<u32> {
    if rest.is_empty() {
        return Some(2);
    }
    let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')'));
    match inner.map(|i| (i, parse_u32(i))) {
        Some((_, Some(0))) => diags.alert(line, "balance random : number of draws must be at least 1."),
        Some((_, Some(n))) => return Some(n),
        Some((i, None)) => {
            let c = i.chars().find(|c| !c.is_ascii_digit()).unwrap_or(')');
            diags.alert(line, format!("balance random : unexpected character '{c}' after argument."));
        }
        None => diags.alert(line, "balance only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)' and 'rdp-cookie(name)' options."),
    }
    None
}

pub fn hash_type(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let method = match line.arg(1) {
        "map-based" => HashMethod::MapBased,
        "consistent" => HashMethod::Consistent,
        _ => return diags.alert(line, "'hash-type' only supports 'consistent' and 'map-based'."),
    };
    let function = match line.arg(2) {
        "" | "sdbm" => HashFunction::Sdbm,
        "djb2" => HashFunction::Djb2,
        "wt6" => HashFunction::Wt6,
        "crc32" => HashFunction::Crc32,
        _ => {
            return diags.alert(
                line,
                "'hash-type' only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions.",
            )
        }
    };
    let avalanche = match line.arg(3) {
        "" => false,
        "avalanche" => true,
        _ => {
            return diags.alert(
                line,
                "'hash-type' only supports 'avalanche' as a modifier for hash functions.",
            )
        }
    };
    if no_extra(line, 4, "hash-type", diags) {
        p.hash_type = HashType { method, function, avalanche };
    }
}
