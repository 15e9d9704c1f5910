//! Connection fetches: the client's and the local addresses (`src`, `dst`, `fc_*`), the `bind`
//! line's name, TLS facts, the PROXY protocol header (`fc_pp_*`) and the bytes waiting at the
//! start of the connection (`req.len`, `req.payload*`, `req.ssl_*`, `WAIT_END`).
//!
//! Must not touch: the connection itself (read only through `Ctx`), HTTP heads.

use std::borrow::Cow;
use std::net::IpAddr;

use fulcrum_config as cfg;

use super::{borrowed as b, one, Ctx, Each, Value};

/// The connection fetches (`fetch_each` sends no other here).
pub(super) fn fetch<'a>(fetch: &cfg::Fetch, ctx: &Ctx<'a>, f: &mut Each<'_, 'a>) -> bool {
    use cfg::Fetch::*;
    match fetch {
        Src => one(ctx.src.map(|a| Value::Ip(canonical(a.ip()))), f),
        SrcPort => one(ctx.src.map(|a| Value::Int(i64::from(a.port()))), f),
        Dst => one(ctx.dst.map(|a| Value::Ip(canonical(a.ip()))), f),
        DstPort => one(ctx.dst.map(|a| Value::Int(i64::from(a.port()))), f),
        Fc(part) => {
            let (src, dst) =
                ctx.vars.addrs.as_ref().map_or((ctx.src, ctx.dst), |a| (a.fc_src, a.fc_dst));
            one(
                match part {
                    cfg::AddrPart::Src => src.map(|a| Value::Ip(canonical(a.ip()))),
                    cfg::AddrPart::Dst => dst.map(|a| Value::Ip(canonical(a.ip()))),
                    cfg::AddrPart::SrcPort => src.map(|a| Value::Int(i64::from(a.port()))),
                    cfg::AddrPart::DstPort => dst.map(|a| Value::Int(i64::from(a.port()))),
                },
                f,
            )
        }
        SoName => {
            let name = ctx.fe.and_then(|fe| fe.bind_name(u32::from(ctx.bind_no)));
            one(name.map(|n| b(n.as_bytes())), f)
        }
        Tls(t) => one(super::tls::fetch(t, ctx.client, ctx.told_tls, ctx.server_stream), f),
        Pp(p) => {
            let kind = match p {
                cfg::PpFetch::Authority => crate::connection::proxy::PP2_TYPE_AUTHORITY,
                cfg::PpFetch::UniqueId => crate::connection::proxy::PP2_TYPE_UNIQUE_ID,
                cfg::PpFetch::Tlv(n) => *n,
            };
            one(ctx.pp.and_then(|h| h.tlv(kind)).map(b), f)
        }
        Payload(p) => one(payload(p, ctx), f),
        WaitEnd => match ctx.more {
            Some(more) => {
                more.set(true);
                false
            }
            None => f(Value::Bool(true)),
        },
        FcErr => f(Value::Int(0)),
        FcErrStr => f(b(b"Success")),
        Bc(what) => one(backend(what, ctx), f),
        IsLocal { dst, fc } => {
            let (src, dst_addr) = if *fc {
                ctx.vars.addrs.as_ref().map_or((ctx.src, ctx.dst), |a| (a.fc_src, a.fc_dst))
            } else {
                (ctx.src, ctx.dst)
            };
            let addr = if *dst { dst_addr } else { src };
            one(addr.and_then(|a| crate::sys::is_local_addr(a.ip())).map(Value::Bool), f)
        }
        FcHttpMajor => f(Value::Int(if ctx.h2 { 2 } else { 1 })),
        FcRcvdProxy => f(Value::Bool(ctx.pp.is_some())),
        TcpInfo { what, us } => {
            use std::os::fd::AsFd as _;
            let info = ctx.client.and_then(|c| crate::sys::tcp_info(c.as_fd()));
            let Some(i) = info else { return false };
            let v = i[*what as usize];
            // The times in milliseconds unless `us` was asked, rounded as HAProxy does.
            let v = match what {
                cfg::TcpInfoField::Rtt | cfg::TcpInfoField::RttVar if !us => (v + 500) / 1000,
                _ => v,
            };
            f(Value::Int(i64::from(v)))
        }
        TlsOnly => false,
        _ => false, // another family's
    }
}

/// The server connection's facts (`bc_*`): no sample before there is one.
fn backend(what: &cfg::BcFetch, ctx: &Ctx<'_>) -> Option<Value<'static>> {
    let side = ctx.server_stream?;
    match what {
        cfg::BcFetch::Addr(part) => {
            let (local, peer) = side.addrs()?;
            Some(match part {
                cfg::AddrPart::Src => Value::Ip(canonical(local.ip())),
                cfg::AddrPart::Dst => Value::Ip(canonical(peer.ip())),
                cfg::AddrPart::SrcPort => Value::Int(i64::from(local.port())),
                cfg::AddrPart::DstPort => Value::Int(i64::from(peer.port())),
            })
        }
        cfg::BcFetch::HttpMajor => side.http_major().map(Value::Int),
        cfg::BcFetch::Err { text: false } => Some(Value::Int(0)),
        cfg::BcFetch::Err { text: true } => Some(Value::Str(Cow::Borrowed(b"Success"))),
    }
}

/// `req.len`, `req.payload*`, `req.ssl_*` on the bytes waiting (HAProxy's `smp_fetch_payload*`):
/// when they may still grow, an answer that more bytes could change marks `ctx.more`.
fn payload<'a>(p: &cfg::PayloadFetch, ctx: &Ctx<'a>) -> Option<Value<'a>> {
    let data = ctx.payload;
    let may_change = || {
        if let Some(m) = ctx.more {
            m.set(true);
        }
    };
    let bytes = |at: usize, len: usize| -> Option<Value<'a>> {
        let end = at.checked_add(len)?;
        if end > crate::connection::BUFSIZE {
            return None; // never fits a buffer: will never match
        }
        if end > data.len() {
            may_change();
            return None;
        }
        Some(Value::Str(Cow::Borrowed(&data[at..end])))
    };
    match *p {
        cfg::PayloadFetch::Len => {
            may_change();
            Some(Value::Int(data.len() as i64))
        }
        cfg::PayloadFetch::Bytes { offset, length: 0 } => {
            let at = offset as usize;
            if at >= data.len() {
                may_change();
                return None;
            }
            may_change();
            Some(Value::Str(Cow::Borrowed(&data[at..])))
        }
        cfg::PayloadFetch::Bytes { offset, length } => bytes(offset as usize, length as usize),
        cfg::PayloadFetch::Lv { offset, length, at } => {
            let (o, l) = (offset as usize, length as usize);
            let Some(field) = data.get(o..o + l) else {
                may_change();
                return None;
            };
            let size = field.iter().fold(0usize, |n, &b| n << 8 | b as usize);
            let start = match at {
                None => (o + l) as i64,
                Some((n, true)) => (o + l) as i64 + n,
                Some((n, false)) => n,
            };
            if size == 0 || start < 0 {
                return None;
            }
            bytes(start as usize, size)
        }
        cfg::PayloadFetch::RdpCookie { ref name } => match rdp_cookie(data, name.as_bytes()) {
            Ok(v) => Some(Value::Str(Cow::Borrowed(v))),
            Err(short) => {
                if short {
                    may_change();
                }
                None
            }
        },
        cfg::PayloadFetch::RdpCookieCnt { ref name } => match rdp_cookie(data, name.as_bytes()) {
            Err(true) => {
                may_change();
                // (HAProxy: no sample while it may change, 0 once it cannot.)
                ctx.more.is_none().then_some(Value::Int(0))
            }
            found => Some(Value::Int(i64::from(found.is_ok()))),
        },
        _ => {
            let h = crate::tls::hello::parse(data);
            if !h.settled {
                may_change();
            }
            match p {
                cfg::PayloadFetch::SslSni => h.sni.map(|v| Value::Str(Cow::Borrowed(v))),
                cfg::PayloadFetch::SslAlpn => h.alpn.map(|v| Value::Str(Cow::Borrowed(v))),
                cfg::PayloadFetch::SslHelloType => h.hello_type.map(|t| Value::Int(i64::from(t))),
                _ => h.version.map(Value::Int),
            }
        }
    }
}

/// IPv4-mapped IPv6 addresses are shown and matched as IPv4, as HAProxy does.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// The value of the RDP cookie `name` (any name when empty) in an RDP connection request, as
/// HAProxy 2.6's `fetch_rdp_cookie_name` finds it: `Cookie:` (any case) after the request's 11
/// first bytes, spaces, `<name>=` (any case), the value up to a CRLF. `Err(true)`: the bytes
/// are too short to tell yet; `Err(false)`: no such cookie.
pub(crate) fn rdp_cookie<'a>(data: &'a [u8], name: &[u8]) -> Result<&'a [u8], bool> {
    let mut d = data.get(11..).filter(|d| d.len() > 7).ok_or(true)?;
    if !d[..7].eq_ignore_ascii_case(b"Cookie:") {
        return Err(false);
    }
    d = &d[7..];
    d = &d[d.iter().take_while(|&&c| c == b' ').count()..];
    if !name.is_empty() {
        if d.len() <= name.len() {
            return Err(true);
        }
        if d[name.len()] != b'=' || !d[..name.len()].eq_ignore_ascii_case(name) {
            return Err(false);
        }
        d = &d[name.len() + 1..];
    } else {
        let eq = d.iter().position(|&c| matches!(c, b'=' | b'\r' | b'\n')).ok_or(true)?;
        if d[eq] != b'=' {
            return Err(false);
        }
        d = &d[eq + 1..];
    }
    let end = d.iter().position(|&c| c == b'\r').ok_or(true)?;
    match d.get(end + 1) {
        None => Err(true),
        Some(b'\n') => Ok(&d[..end]),
        Some(_) => Err(false),
    }
}
