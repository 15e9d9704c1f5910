//! Cookie fetches: request cookies (`cook`, `cook_cnt`, `cook_val`) and the cookies a response
//! sets (`res.cook`, `res.cook_cnt`), with HAProxy 2.6's answers.
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
            one(v.map(|v| Value::Int(super::strl2ic(v))), f)
        }
        ResCook { name } => {
            let Some(r) = ctx.resp else { return false };
            for v in set_cookie_values(r) {
                let mut found = set_cookies(v, name.as_bytes());
                if let Some(c) = found.next() {
                    // (No name: HAProxy gives the first cookie only.)
                    if f(b(c)) || name.is_empty() {
                        return true;
                    }
                    for c in found {
                        if f(b(c)) {
                            return true;
                        }
                    }
                }
            }
            false
        }
        ResCookCnt { name } => {
            let n = ctx.resp.map_or(0, |r| {
                set_cookie_values(r).map(|v| set_cookies(v, name.as_bytes()).count()).sum()
            });
            f(Value::Int(n as i64))
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

/// The values of the response's `Set-Cookie` headers, split at commas as HAProxy splits them.
fn set_cookie_values(r: &fulcrum_http::Head) -> impl Iterator<Item = &[u8]> {
    r.headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"set-cookie"))
        .flat_map(|(_, v)| fulcrum_http::comma_values(v))
}

/// The values of cookie `name` (any name when empty) in one `Set-Cookie` value, as HAProxy
/// 2.6's `http_extract_cookie_value` finds them there: its attributes in order, skipping
/// those starting with `$` or without `=`, each one that matches found, and the search ends at
/// the first that does not (a `Set-Cookie` names its cookie first).
fn set_cookies<'v, 'n>(
    v: &'v [u8],
    name: &'n [u8],
) -> impl Iterator<Item = &'v [u8]> + use<'v, 'n> {
    v.split(|&c| c == b';')
        .map(|a| a.trim_ascii())
        .filter(|a| !a.starts_with(b"$"))
        .filter_map(|a| {
            let eq = a.iter().position(|&c| c == b'=')?;
            Some((a[..eq].trim_ascii(), a[eq + 1..].trim_ascii()))
        })
        .map_while(move |(n, val)| (name.is_empty() || n == name).then_some(val))
}
