//! Start-line and body fetches: the request line and the parts of its target (`path`, `url`,
//! `query`, `url_param`, `pathq`, `base`, `method`, `req.ver`), the response's status line
//! (`status`, `res.ver`) and the request body (`req.body*`).
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
        Base => {
            let Some(r) = req else { return false };
            let Some(host) = r.header(b"host") else { return false };
            let mut v = host.to_vec();
            v.extend_from_slice(r.path());
            f(Value::Str(Cow::Owned(v)))
        }
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

/// The entry that answers the transaction, if a cache does (`res.cache_hit`,
/// `res.cache_name`).
fn cache_hit<'c>(ctx: &Ctx<'c>) -> Option<&'c crate::cache::Entry> {
    ctx.vars.cache.as_ref()?.hit.as_ref().map(|h| &*h.entry)
}
