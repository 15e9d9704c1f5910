//! Start-line and body fetches: the request line and the parts of its target (`path`, `url`,
//! `query`, `url_param`, `pathq`, `base`, `baseq`, `base32`, `url32`, `url_ip`, `method`,
//! `req.ver`, `req.proto_http`), the response's status line (`status`, `res.ver`,
//! `capture.res.ver`) and the request body (`req.body*`).
//!
//! Must not touch: the heads (read only), headers and cookies (`headers`, `cookies`).

use std::borrow::Cow;

use fulcrum_config as cfg;
use fulcrum_http::Head;

use super::{borrowed as b, one, Ctx, Each, Value};

/// The start-line and body fetches (`fetch_each` sends no other here).
pub(super) fn fetch<'a>(fetch: &cfg::Fetch, ctx: &Ctx<'a>, f: &mut Each<'_, 'a>) -> bool {
    use cfg::Fetch::*;
    let req = ctx.req;
    match fetch {
        Path => one(req.map(|r| b(r.path())), f),
        Url => one(req.map(|r| b(r.target())), f),
        Query => one(req.and_then(|r| r.query()).map(b), f),
        Method => one(req.map(|r| b(r.method_bytes())), f),
        ReqVer => one(
            req.map(|r| {
                b(match r.version() {
                    _ if ctx.h2 => b"2.0",
                    fulcrum_http::Version::Http10 => b"1.0",
                    _ => b"1.1",
                })
            }),
            f,
        ),
        UrlParam { name } => one(
            req.and_then(|r| r.query())
                .and_then(|q| fulcrum_http::url_param(q, name.as_bytes()))
                .map(b),
            f,
        ),
        PathQ => one(req.map(|r| b(pathq(r))), f),
        ReqLine(part) => {
            let Some(r) = req else { return false };
            match part {
                cfg::ReqLinePart::Uri => f(b(r.target())),
                cfg::ReqLinePart::Method => f(b(r.method_bytes())),
                cfg::ReqLinePart::Version => f(b(r.version().as_bytes())),
            }
        }
        Base | BaseQ => {
            let Some(r) = req else { return false };
            let path = if matches!(fetch, BaseQ) { pathq(r) } else { r.path() };
            // Without a Host (or an empty one), HAProxy gives the path alone.
            let host = r.header(b"host").filter(|h| !h.is_empty());
            let Some(host) = host else { return f(b(path)) };
            let mut v = host.to_vec();
            if path.first() == Some(&b'/') {
                v.extend_from_slice(path);
            }
            f(Value::Str(Cow::Owned(v)))
        }
        HostPathHash { url, src } => {
            let Some(r) = req else { return false };
            let h = host_path_hash(r, *url);
            if !*src {
                return f(Value::Int(i64::from(h)));
            }
            let Some(addr) = ctx.src else { return false };
            let mut v = Vec::with_capacity(20);
            v.extend_from_slice(&h.to_be_bytes());
            match addr.ip() {
                std::net::IpAddr::V4(a) => v.extend_from_slice(&a.octets()),
                std::net::IpAddr::V6(a) => v.extend_from_slice(&a.octets()),
            }
            f(Value::Str(Cow::Owned(v)))
        }
        UrlAddr { port } => one(req.and_then(|r| url_addr(r, *port)), f),
        ResLineVersion => one(
            ctx.resp.map(|r| {
                b(match r.version() {
                    fulcrum_http::Version::Http10 => b"HTTP/1.0",
                    _ => b"HTTP/1.1",
                })
            }),
            f,
        ),
        ProtoHttp => one(req.map(|_| Value::Bool(true)), f),
        Status => one(ctx.resp.map(|r| Value::Int(i64::from(r.status()))), f),
        ResVer => one(
            ctx.resp.map(|r| {
                b(match r.version() {
                    fulcrum_http::Version::Http10 => b"1.0",
                    _ => b"1.1",
                })
            }),
            f,
        ),
        // (In a log format, the response is gone: the outcome's decision is in `comp`.)
        ResComp => one(Some(Value::Bool(ctx.comp.is_some())), f),
        ResCompAlgo => one(ctx.comp.map(|a| b(a.cfg_name().as_bytes())), f),
        ResCacheHit => one(Some(Value::Bool(cache_hit(ctx).is_some())), f),
        ResCacheName => one(cache_hit(ctx).map(|e| b(e.cache_name.as_bytes())), f),
        ReqBody => one(req.map(|_| b(ctx.body)), f),
        ReqBodyLen => one(req.map(|_| Value::Int(ctx.body.len() as i64)), f),
        ReqBodySize => one(
            req.map(|r| match r.info().body {
                fulcrum_http::Body::Length(n) => Value::Int(n as i64),
                _ => Value::Int(ctx.body.len() as i64),
            }),
            f,
        ),
        ResBody => one(ctx.resp.and(res_body(ctx)).map(Value::Str), f),
        ResBodyLen | ResBodySize => {
            let len = ctx.resp.and(res_body(ctx)).map(|d| d.len() as i64);
            one(
                len.map(|len| match ctx.resp.map(|r| r.info().body) {
                    Some(fulcrum_http::Body::Length(n)) if *fetch == ResBodySize => {
                        Value::Int(n as i64)
                    }
                    _ => Value::Int(len),
                }),
                f,
            )
        }
        ReqBodyParam { name } => one(fulcrum_http::url_param(ctx.body, name.as_bytes()).map(b), f),
        _ => false, // another family's
    }
}

/// The path and query of the request target: the target itself in origin form, what follows
/// the authority in absolute form.
pub fn pathq(r: &Head) -> &[u8] {
    let t = r.target();
    let p = r.path();
    let start = (p.as_ptr() as usize).wrapping_sub(t.as_ptr() as usize);
    if start <= t.len() && !p.is_empty() {
        &t[start..]
    } else {
        p
    }
}

/// `base32`, `url32` (`url`): HAProxy's sdbm over the first Host value (`url32`: the whole
/// first Host line) then the path if it starts with `/` (`url32`: with its query), followed by
/// its avalanche (`full_hash`).
fn host_path_hash(r: &Head, url: bool) -> u32 {
    let sdbm = |h: u32, bytes: &[u8]| {
        bytes.iter().fold(h, |h, &c| {
            u32::from(c).wrapping_add(h << 6).wrapping_add(h << 16).wrapping_sub(h)
        })
    };
    let host = r.header(b"host").map(|v| {
        if url {
            v
        } else {
            fulcrum_http::comma_values(v).next().unwrap_or(b"")
        }
    });
    let mut h = sdbm(0, host.unwrap_or(b""));
    let path = if url { pathq(r) } else { r.path() };
    if path.first() == Some(&b'/') {
        h = sdbm(h, path);
    }
    fulcrum_balance::full_hash(h)
}

/// `url_ip`, `url_port`: an `http://` or `https://` target written with an IPv4 address
/// (HAProxy 2.6's `url2sa` on the request line: an IPv6 or a name gives nothing).
fn url_addr(r: &Head, port: bool) -> Option<Value<'static>> {
    let (scheme, auth) = r.scheme_and_authority()?;
    let default = match scheme.to_ascii_lowercase().as_slice() {
        b"http" => 80u16,
        b"https" => 443,
        _ => return None,
    };
    let n = auth.iter().position(|c| !(c.is_ascii_digit() || *c == b'.')).unwrap_or(auth.len());
    let ip: std::net::Ipv4Addr = std::str::from_utf8(&auth[..n]).ok()?.parse().ok()?;
    if !port {
        return Some(Value::Ip(std::net::IpAddr::V4(ip)));
    }
    let p = match auth.get(n) {
        // (`read_uint` then `htons`: the digits there, truncated to 16 bits.)
        Some(b':') => auth[n + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .fold(0u32, |p, c| p.wrapping_mul(10).wrapping_add(u32::from(c - b'0')))
            as u16,
        _ => default,
    };
    Some(Value::Int(i64::from(p)))
}

/// The entry that answers the transaction, if a cache does (`res.cache_hit`,
/// `res.cache_name`).
fn cache_hit<'c>(ctx: &Ctx<'c>) -> Option<&'c crate::cache::Entry> {
    ctx.vars.cache.as_ref()?.hit.as_ref().map(|h| &*h.entry)
}

/// The response body in response rules (`res.body`), its chunks decoded.
fn res_body<'a>(ctx: &Ctx<'a>) -> Option<Cow<'a, [u8]>> {
    super::BodyBytes { data: ctx.body, chunked: ctx.body_chunked }.decoded()
}
