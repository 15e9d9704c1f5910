//! Cookie fetches: request cookies (`cook`, `cook_cnt`, `cook_val`) and the cookies a response
//! sets (`res.cook`), with HAProxy 2.6's answers.
//!
//! Must not touch: the heads (read only), cookie persistence (`http::session::cookies`).

use fulcrum_config as cfg;

use super::{borrowed as b, one, Ctx, Each, Value};

/// The cookie fetches (`fetch_each` sends no other here).
pub(super) fn fetch<'a>(fetch: &cfg::Fetch, ctx: &Ctx<'a>, f: &mut Each<'_, 'a>) -> bool {
    use cfg::Fetch::*;
    let req = ctx.req;
    match fetch {
        Cook { name } => {
            let Some(r) = req else { return false };
            for (n, v) in r.headers() {
                if n.eq_ignore_ascii_case(b"cookie") {
                    // HAProxy 2.6 quirk: a header holding only `name=` yields no cookie, while an
                    // empty value next to other cookies is found.
                    let found = fulcrum_http::cookie_value(v, name.as_bytes());
                    let alone = v.trim_ascii().len() == name.len() + 1;
                    if let Some(c) = found.filter(|c| !(c.is_empty() && alone)) {
                        if f(b(c)) {
                            return true;
                        }
                    }
                }
            }
            false
        }
        CookCnt { name } => {
            let n = req.map_or(0, |r| {
                r.headers()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
                    .map(|(_, v)| count_cookies(v, name.as_bytes()))
                    .sum::<usize>()
            });
            f(Value::Int(n as i64))
        }
        CookVal { name } => {
            let v = req.and_then(|r| {
                r.headers()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
                    .filter_map(|(_, v)| fulcrum_http::cookie_value(v, name.as_bytes()))
                    .last()
            });
            one(v.and_then(|v| std::str::from_utf8(v).ok()?.trim().parse().ok()).map(Value::Int), f)
        }
        ResCook { name } => {
            let Some(r) = ctx.resp else { return false };
            for (n, v) in r.headers() {
                if n.eq_ignore_ascii_case(b"set-cookie") {
                    let nv = v.split(|&c| c == b';').next().unwrap_or(v).trim_ascii();
                    if nv.len() > name.len()
                        && nv[..name.len()] == *name.as_bytes()
                        && nv[name.len()] == b'='
                        && f(b(&nv[name.len() + 1..]))
                    {
                        return true;
                    }
                }
            }
            false
        }
        _ => false, // another family's
    }
}

/// How many times cookie `name` appears in one Cookie header value.
fn count_cookies(v: &[u8], name: &[u8]) -> usize {
    v.split(|&c| c == b';')
        .filter(|p| {
            let p = p.trim_ascii();
            p.len() > name.len() && p[..name.len()] == *name && p[name.len()] == b'='
        })
        .count()
}
