//! Header fetches: values of request and response headers, split at commas (`hdr`, `res.hdr`,
//! `hdr_cnt`, `hdr_ip` and their `res.` forms) or whole (`req.fhdr`, `res.fhdr`,
//! `*.fhdr_cnt`), all of them (`req.hdrs`, `res.hdrs`, `*.hdrs_bin`, `*.hdr_names`), and the
//! parts of the `Authorization` header (`http_auth_type`, `http_auth_user`, `http_auth_pass`,
//! `http_auth_bearer`); which occurrence a fetch gives (`occ`).
//!
//! Must not touch: the heads (read only), cookies (`cookies`).

use std::borrow::Cow;
use std::net::IpAddr;

use fulcrum_config as cfg;
use fulcrum_http::Head;

use super::{borrowed as b, Ctx, Each, Value};

/// The header fetches (`fetch_each` sends no other here). `last_only`: the last occurrence
/// only.
pub(super) fn fetch<'a>(
    fetch: &cfg::Fetch,
    ctx: &Ctx<'a>,
    last_only: bool,
    f: &mut Each<'_, 'a>,
) -> bool {
    use cfg::Fetch::*;
    let req = ctx.req;
    match fetch {
        Hdr { name, occ } => header_values(req, name, *occ, last_only, &mut |v| f(b(v))),
        ResHdr { name, occ } => header_values(ctx.resp, name, *occ, last_only, &mut |v| f(b(v))),
        HdrCnt { name } | ResHdrCnt { name } => {
            let head = side(ctx, !matches!(fetch, HdrCnt { .. }));
            let mut n = 0i64;
            header_values(head, name, None, false, &mut |_| {
                n += 1;
                false
            });
            f(Value::Int(n))
        }
        HdrIp { name, occ } | ResHdrIp { name, occ } => {
            let head = side(ctx, !matches!(fetch, HdrIp { .. }));
            header_values(head, name, *occ, last_only, &mut |v| match std::str::from_utf8(v)
                .ok()
                .and_then(|t| parse_ip_loose(t.trim()))
            {
                Some(ip) => f(Value::Ip(ip)),
                None => false,
            })
        }
        HdrNames { response, delim } => {
            let Some(head) = side(ctx, *response) else { return false };
            let mut all = Vec::new();
            for (i, (n, _)) in head.headers().enumerate() {
                if i > 0 {
                    all.push(*delim);
                }
                all.extend(n.iter().map(u8::to_ascii_lowercase));
            }
            f(Value::Str(Cow::Owned(all)))
        }
        HdrsBin { response } => {
            let Some(head) = side(ctx, *response) else { return false };
            let mut all = Vec::new();
            for (n, v) in head.headers() {
                fulcrum_spop::put_varint(&mut all, n.len() as u64);
                all.extend(n.iter().map(u8::to_ascii_lowercase));
                fulcrum_spop::put_varint(&mut all, v.len() as u64);
                all.extend_from_slice(v);
            }
            all.extend_from_slice(&[0, 0]);
            f(Value::Str(Cow::Owned(all)))
        }
        AuthBearer { header } => {
            let name = header.as_deref().unwrap_or("authorization");
            let Some(h) = req.and_then(|r| r.header(name.as_bytes())) else { return false };
            // The scheme, at least one space, the token (HAProxy 2.6's `http_auth_bearer`).
            let (scheme, rest) = match h.iter().position(|&c| c == b' ') {
                Some(i) => (&h[..i], &h[i + 1..]),
                None => (h, &b""[..]),
            };
            let token = &rest[rest.iter().take_while(|&&c| c == b' ').count()..];
            if scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty() {
                f(b(token))
            } else {
                false
            }
        }
        Fhdr { name, occ } => full_values(req, name, *occ, last_only, &mut |v| f(b(v))),
        ResFhdr { name, occ } => full_values(ctx.resp, name, *occ, last_only, &mut |v| f(b(v))),
        FhdrCnt { name } | ResFhdrCnt { name } => {
            let head = side(ctx, !matches!(fetch, FhdrCnt { .. }));
            let n = head.map_or(0, |r| {
                r.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).count()
            });
            f(Value::Int(n as i64))
        }
        ReqHdrs | ResHdrs => {
            let head = side(ctx, !matches!(fetch, ReqHdrs));
            let Some(r) = head else { return false };
            let mut all = Vec::new();
            r.write_fields(&mut all);
            f(Value::Str(Cow::Owned(all)))
        }
        AuthPart(part) => {
            let Some(h) = req.and_then(|r| r.header(b"authorization")) else { return false };
            let h = h.trim_ascii();
            match part {
                cfg::AuthPart::Type => {
                    let t = h.split(|&c| c == b' ').next().unwrap_or(b"");
                    f(b(t))
                }
                cfg::AuthPart::User | cfg::AuthPart::Pass => match crate::auth::basic(h) {
                    Some((u, p)) => {
                        let v = if *part == cfg::AuthPart::User { u } else { p };
                        f(Value::Str(Cow::Owned(v)))
                    }
                    None => false,
                },
            }
        }
        _ => false, // another family's
    }
}

/// The response's head (`response`) or the request's.
fn side<'a>(ctx: &Ctx<'a>, response: bool) -> Option<&'a Head> {
    if response {
        ctx.resp
    } else {
        ctx.req
    }
}

/// Whole field values of header `name` (no splitting at commas): `req.fhdr` / `res.fhdr`.
/// Without `occ`: every one for ACLs, the last one for samples.
fn full_values<'a>(
    head: Option<&'a Head>,
    name: &str,
    occ: Option<i32>,
    last_only: bool,
    f: &mut dyn FnMut(&'a [u8]) -> bool,
) -> bool {
    let Some(head) = head else { return false };
    let all = || {
        head.headers().filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    };
    pick_occurrence(all, occ, last_only, f)
}

/// Calls `f` on the occurrence(s) `occ` selects among `values()`: every one until `f` says
/// true (ACLs, no `occ`), the last one (samples, no `occ`), the n-th (1-based) or the n-th
/// from the end (negative).
fn pick_occurrence<'a, I: Iterator<Item = &'a [u8]>>(
    values: impl Fn() -> I,
    occ: Option<i32>,
    last_only: bool,
    f: &mut dyn FnMut(&'a [u8]) -> bool,
) -> bool {
    if !last_only && matches!(occ, None | Some(0)) {
        return values().any(f);
    }
    let v = match occ {
        None | Some(0) => values().last(),
        Some(n) if n > 0 => values().nth(n as usize - 1),
        Some(n) => {
            let count = values().count();
            count.checked_sub(n.unsigned_abs() as usize).and_then(|i| values().nth(i))
        }
    };
    v.is_some_and(f)
}

/// `hdr_ip` accepts `addr` and `addr:port` (IPv4) forms.
fn parse_ip_loose(t: &str) -> Option<IpAddr> {
    t.parse().ok().or_else(|| t.rsplit_once(':').and_then(|(a, _)| a.parse().ok()))
}

/// Occurrence `occ` (not 0) of header `name`'s values in `head`, as `hdr(<name>,<occ>)` picks
/// it (`usesrc hdr_ip()` reads its address there).
pub(crate) fn value_at<'a>(head: &'a Head, name: &str, occ: i32) -> Option<&'a [u8]> {
    let mut found = None;
    header_values(Some(head), name, Some(occ), true, &mut |v| {
        found = Some(v);
        true
    });
    found
}

/// The values of header `name` (comma-separated values are separate occurrences, as HAProxy's
/// `hdr()` does); an empty name means every header. `occ`: 1-based position, negative from the
/// end. Calls `f` until it returns true.
fn header_values<'a>(
    head: Option<&'a Head>,
    name: &str,
    occ: Option<i32>,
    last_only: bool,
    f: &mut dyn FnMut(&'a [u8]) -> bool,
) -> bool {
    let Some(head) = head else { return false };
    let matching = move || {
        head.headers()
            .filter(move |(n, _)| name.is_empty() || n.eq_ignore_ascii_case(name.as_bytes()))
            .flat_map(|(_, v)| fulcrum_http::comma_values(v))
    };
    pick_occurrence(matching, occ, last_only, f)
}
