//! The converters of `cfg::TextConv` (address masks, `ltime`/`utime`, `iif`, trimming, `json`,
//! `url_enc`, `htonl`, `be2dec`/`be2hex`), each on the sample as HAProxy 2.6 casts it for
//! its input type, giving `None` where HAProxy gives no sample; and the variable converters'
//! comparisons (`strcmp`, `secure_memcmp`, `add_item`), given the variable's value.
//!
//! Must not touch: fetches, the request, the variables themselves (the caller reads and
//! queues them).

use std::borrow::Cow;
use std::net::IpAddr;

use fulcrum_config as cfg;

use super::sample::{Ctx, Value};

/// The input as text (binary data ends at its first NUL byte, HAProxy's cast to string).
fn text_of(v: Value<'_>) -> Cow<'_, [u8]> {
    super::convert::bytes_of(v, false)
}

/// The input as bytes (an integer as its 8 big-endian bytes, HAProxy's cast to binary).
fn bin_of<'a>(v: Value<'a>) -> Cow<'a, [u8]> {
    match v {
        Value::Str(s) => s,
        Value::Int(i) => Cow::Owned(i.to_be_bytes().to_vec()),
        Value::Ip(IpAddr::V4(a)) => Cow::Owned(a.octets().to_vec()),
        Value::Ip(IpAddr::V6(a)) => Cow::Owned(a.octets().to_vec()),
        Value::Bool(b) => Cow::Owned(vec![u8::from(b)]),
    }
}

/// Applies a text converter.
pub fn text<'a>(c: &cfg::TextConv, v: Value<'a>) -> Option<Value<'a>> {
    use cfg::TextConv as T;
    let owned = |b: Vec<u8>| Value::Str(Cow::Owned(b));
    Some(match c {
        T::Ipmask { v4, v6 } => {
            let ip = match v {
                Value::Ip(ip) => ip,
                other => std::str::from_utf8(&text_of(other)).ok()?.parse().ok()?,
            };
            // (An IPv4-mapped IPv6 address is masked as IPv4, as `c_ipv62ip` converts it.)
            let ip = match ip {
                IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                v4 => v4,
            };
            match ip {
                IpAddr::V4(a) => Value::Ip(IpAddr::V4((u32::from(a) & u32::from(*v4)).into())),
                IpAddr::V6(a) => Value::Ip(IpAddr::V6((u128::from(a) & u128::from((*v6)?)).into())),
            }
        }
        T::Time { utc, format, offset } => {
            let secs = (v.as_int()? & 0x007f_ffff_ffff_ffff).wrapping_add(*offset);
            owned(crate::sys::strftime(format, secs, *utc))
        }
        T::Iif { yes, no } => {
            let b = match v {
                Value::Bool(b) => b,
                other => other.as_int()? != 0,
            };
            owned(if b { yes } else { no }.as_bytes().to_vec())
        }
        T::Trim { left, chars } => {
            let s = text_of(v);
            let set = chars.as_bytes();
            let keep = |b: &u8| !set.contains(b);
            let (start, end) = if *left {
                (s.iter().position(keep).unwrap_or(s.len()), s.len())
            } else {
                (0, s.iter().rposition(keep).map_or(0, |i| i + 1))
            };
            slice(s, start, end)
        }
        T::CutCrlf => {
            let s = text_of(v);
            let end = s.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(s.len());
            slice(s, 0, end)
        }
        T::Htonl => owned((v.as_int()? as u32).to_be_bytes().to_vec()),
        T::Json(mode) => owned(json(&text_of(v), *mode)?),
        T::UrlEnc => {
            let s = text_of(v);
            let mut out = Vec::with_capacity(s.len());
            for &b in s.iter() {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    out.push(b);
                } else {
                    out.extend_from_slice(&[
                        b'%',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]);
                }
            }
            owned(out)
        }
        T::JsonQuery { path, int } => json_value(&text_of(v), path, *int)?,
        T::Digest(alg) => owned(super::digest::digest(*alg, &bin_of(v))),
        T::JwtQuery { payload, path, int } => {
            let decoded = super::jwt::member_of(&bin_of(v), *payload)?;
            match path {
                Some(p) => json_value(&decoded, p, *int)?,
                None => owned(decoded),
            }
        }
        T::Be2Dec { sep, chunk, truncate } => owned(be2dec(&bin_of(v), sep, *chunk, *truncate)),
        T::Be2Hex { sep, chunk, truncate } => owned(be2hex(&bin_of(v), sep, *chunk, *truncate)),
    })
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// `json_query(<path>[,int])` on `json`: a string unescaped, a number as `%g` (or as an
/// integer within JSON's safe range with `int`), a boolean; nothing else.
fn json_value(json: &[u8], path: &str, int: bool) -> Option<Value<'static>> {
    use super::jwt::Found;
    Some(match super::jwt::query(json, path)? {
        Found::Str(s) => Value::Str(Cow::Owned(s)),
        Found::Bool(b) => Value::Bool(b),
        Found::Num(n) if int => {
            // C's `strtoll(token, NULL, 0)`: the leading integer.
            let t = std::str::from_utf8(n).ok()?;
            let digits = t.trim_start_matches('-');
            let k = digits.bytes().take_while(u8::is_ascii_digit).count();
            let i: i64 = digits[..k].parse().unwrap_or(0);
            let i = if t.starts_with('-') { -i } else { i };
            const SAFE: i64 = (1 << 53) - 1;
            (-SAFE..=SAFE).contains(&i).then_some(Value::Int(i))?
        }
        Found::Num(n) => {
            let x: f64 = std::str::from_utf8(n).ok()?.parse().ok()?;
            Value::Str(Cow::Owned(super::jwt::fmt_g(x).into_bytes()))
        }
    })
}

/// `s[start..end]`, borrowed when it was.
fn slice(s: Cow<'_, [u8]>, start: usize, end: usize) -> Value<'_> {
    let end = end.max(start);
    Value::Str(match s {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..end]),
        Cow::Owned(mut o) => {
            o.truncate(end);
            o.drain(..start);
            Cow::Owned(o)
        }
    })
}

/// HAProxy's `json` converter: quotes, backslashes, slashes and control characters escaped,
/// others outside printable ASCII as `\uXXXX`; `None` where the mode refuses the input.
fn json(s: &[u8], mode: cfg::JsonInput) -> Option<Vec<u8>> {
    use cfg::JsonInput as J;
    let mut out = Vec::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < s.len() {
        let c = if mode == J::Ascii {
            i += 1;
            u32::from(s[i - 1])
        } else {
            let (c, len, ok) = utf8_next(&s[i..]);
            i += len;
            match (ok, mode) {
                (Utf8::Ok, _) => {}
                (_, J::Utf8) => return None,
                (_, J::Utf8S) => continue,
                (Utf8::Bad | Utf8::InvRange, J::Utf8P) => return None,
                (Utf8::Bad | Utf8::InvRange, J::Utf8PS) => continue,
                _ => {}
            }
            if c > 0xffff {
                if matches!(mode, J::Utf8 | J::Utf8P) {
                    return None;
                }
                continue;
            }
            c
        };
        match c {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5c => out.extend_from_slice(b"\\\\"),
            0x2f => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x20..=0x7e => out.push(c as u8),
            _ => out.extend_from_slice(format!("\\u{:04x}", c as u16).as_bytes()),
        }
    }
    Some(out)
}

/// What HAProxy's `utf8_next` says of a sequence: well formed, overlong
/// (`UTF8_CODE_OVERLONG`), a surrogate or over U+10FFFF (`UTF8_CODE_INVRANGE`), or bad.
#[derive(PartialEq, Eq)]
enum Utf8 {
    Ok,
    Overlong,
    InvRange,
    Bad,
}

/// The next code point of `s`, the bytes it takes, and how well formed it is.
fn utf8_next(s: &[u8]) -> (u32, usize, Utf8) {
    let b = s[0];
    let (len, init) = match b {
        0x00..=0x7f => return (u32::from(b), 1, Utf8::Ok),
        0xc0..=0xdf => (2, u32::from(b & 0x1f)),
        0xe0..=0xef => (3, u32::from(b & 0x0f)),
        0xf0..=0xf7 => (4, u32::from(b & 0x07)),
        _ => return (u32::from(b), 1, Utf8::Bad),
    };
    let mut c = init;
    for k in 1..len {
        match s.get(k) {
            Some(&n) if n & 0xc0 == 0x80 => c = (c << 6) | u32::from(n & 0x3f),
            _ => return (u32::from(b), k, Utf8::Bad),
        }
    }
    let min = [0, 0, 0x80, 0x800, 0x10000][len];
    let how = if (0xd800..=0xdfff).contains(&c) || c > 0x10ffff {
        Utf8::InvRange
    } else if c < min {
        Utf8::Overlong
    } else {
        Utf8::Ok
    };
    (c, len, how)
}

/// HAProxy's `be2dec`: each `chunk` bytes as a big-endian unsigned number, `sep` between;
/// `truncate`: a last partial chunk is left out.
fn be2dec(s: &[u8], sep: &str, chunk: u8, truncate: bool) -> Vec<u8> {
    let chunk = usize::from(chunk);
    let last = if truncate { (s.len() + 1).saturating_sub(chunk) } else { s.len() };
    let mut out = Vec::new();
    let mut at = 0;
    while at < last {
        if at > 0 {
            out.extend_from_slice(sep.as_bytes());
        }
        let end = (at + chunk).min(s.len());
        let n = s[at..end].iter().fold(0u64, |n, &b| (n << 8) | u64::from(b));
        out.extend_from_slice(n.to_string().as_bytes());
        at = end;
    }
    out
}

/// HAProxy's `be2hex`: upper-case hexadecimal, `sep` between chunks of `chunk` bytes (the
/// whole input is one chunk without a separator or truncation).
fn be2hex(s: &[u8], sep: &str, chunk: i64, truncate: bool) -> Vec<u8> {
    let chunk = if sep.is_empty() && !truncate { s.len() } else { chunk.max(1) as usize };
    let last = if truncate { (s.len() + 1).saturating_sub(chunk) } else { s.len() };
    let mut out = Vec::with_capacity(s.len() * 2);
    let mut at = 0;
    while at < last {
        if at > 0 {
            out.extend_from_slice(sep.as_bytes());
        }
        let end = (at + chunk.max(1)).min(s.len());
        for &b in &s[at..end] {
            out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
        at = end;
    }
    out
}

/// `strcmp(<var>)`: HAProxy's `strncmp` over the shorter length, then the lengths.
pub fn strcmp(a: &[u8], b: &[u8]) -> i64 {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]).then(a.len().cmp(&b.len())) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

/// `secure_memcmp(<var>)`: equal lengths and bytes, compared without an early exit.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `add_item(<delim>,<var>,<suffix>)`: the delimiter when the input is not empty and the
/// variable's text or the suffix is not, then the variable's text, then the suffix.
pub fn add_item(input: &[u8], delim: &str, var: Option<&[u8]>, suffix: &str) -> Vec<u8> {
    let mut out = input.to_vec();
    if !input.is_empty() && (var.is_some_and(|v| !v.is_empty()) || !suffix.is_empty()) {
        out.extend_from_slice(delim.as_bytes());
    }
    out.extend_from_slice(var.unwrap_or_default());
    out.extend_from_slice(suffix.as_bytes());
    out
}

/// The converters that read or change a variable (`strcmp`, `secure_memcmp`, `add_item`,
/// `unset-var`; an unset is queued as the `set-var()` converter's stores are) or read the
/// run-time state (`nbsrv`, `srv_queue`). Out of line and cold: inlined into the converter
/// loop, it changed how the worker's event loop was compiled (+85 Ir per keep-alive request,
/// Tokio's clock no longer inlined; BENCHMARKS.md, session 42).
#[cold]
#[inline(never)]
pub fn var_conv<'a>(c: &cfg::VarConv, v: Value<'a>, ctx: &Ctx<'_>) -> Option<Value<'a>> {
    use cfg::VarConv as V;
    Some(match c {
        V::Strcmp { scope, name } => {
            let other = super::sample::var_value(ctx, *scope, name)?;
            Value::Int(strcmp(&v.as_bytes(), &other.as_bytes()))
        }
        V::SecureMemcmp { scope, name } => {
            let other = super::sample::var_value(ctx, *scope, name)?;
            Value::Bool(same_bytes(&v.as_bytes(), &other.as_bytes()))
        }
        V::AddItem { delim, var, suffix } => {
            let x = var.as_ref().and_then(|(sc, n)| super::sample::var_value(ctx, *sc, n));
            let x = x.as_ref().map(|x| x.as_bytes());
            Value::Str(Cow::Owned(add_item(&v.as_bytes(), delim, x.as_deref(), suffix)))
        }
        V::JwtVerify { alg, key } => {
            let arg = |a: &cfg::LitOrVar| match a {
                cfg::LitOrVar::Lit(t) => Some(Cow::Owned(t.as_bytes().to_vec())),
                cfg::LitOrVar::Var(sc, n) => super::sample::var_value(ctx, *sc, n)
                    .map(|x| Cow::Owned(x.as_bytes().into_owned())),
            };
            let (alg, key): (Cow<'_, [u8]>, Cow<'_, [u8]>) = (arg(alg)?, arg(key)?);
            Value::Int(super::jwt::verify(&v.as_bytes(), &alg, &key))
        }
        V::Hmac { alg, key } => {
            use base64::Engine as _;
            let text: Vec<u8> = match key {
                cfg::LitOrVar::Lit(t) => t.as_bytes().to_vec(),
                cfg::LitOrVar::Var(sc, n) => {
                    super::sample::var_value(ctx, *sc, n)?.as_bytes().into_owned()
                }
            };
            let key = base64::engine::general_purpose::STANDARD.decode(&text).ok()?;
            Value::Str(Cow::Owned(super::digest::hmac(*alg, &key, &v.as_bytes())))
        }
        V::Nbsrv => {
            let be = ctx.backends.named(std::str::from_utf8(&v.as_bytes()).ok()?)?;
            Value::Int(be.usable_servers() as i64)
        }
        V::SrvQueue => {
            let text = v.as_bytes();
            let text = std::str::from_utf8(&text).ok()?;
            // Without a backend, the server is the current one's (HAProxy's proxy).
            let (be, s) = match text.split_once('/') {
                Some((b, s)) => (ctx.backends.named(b)?, s),
                None => (ctx.backend.or_else(|| ctx.backends.named(ctx.frontend))?, text),
            };
            let idx = be.servers().iter().position(|x| x.name == s)?;
            Value::Int(be.server_fact(idx, cfg::SrvFact::Queue))
        }
        V::Capture { response, id } => {
            // HAProxy's `smp_conv_req_capture`: the frontend's slot, or no sample.
            let slots = if *response { &ctx.vars.caps.res } else { &ctx.vars.caps.req };
            let id = usize::try_from(*id).ok().filter(|i| *i < slots.len())?;
            let mut q = ctx.vars.pending.try_borrow_mut().ok()?;
            let flag = if *response { super::vars::CAPTURE_RES } else { super::vars::CAPTURE_REQ };
            q.push((cfg::VarScope::Txn, id.to_string().into(), v.clone().into_owned(), flag));
            v
        }
        V::UnsetVar { scope, name } => {
            if *scope == cfg::VarScope::Proc {
                ctx.proc_vars.unset(name);
            } else {
                let mut q = ctx.vars.pending.try_borrow_mut().ok()?;
                q.push((*scope, name.as_str().into(), Value::Bool(false), super::vars::UNSET));
            }
            v
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfg::TextConv as T;

    fn s(v: Option<Value<'_>>) -> String {
        String::from_utf8_lossy(&v.expect("a sample").as_bytes()).into_owned()
    }

    #[test]
    fn masks_trims_and_encodings_as_haproxy() {
        let ip = |t: &str| Value::Ip(t.parse().expect("ip"));
        let m = T::Ipmask { v4: "255.255.255.0".parse().expect("m"), v6: None };
        assert_eq!(s(text(&m, ip("10.1.2.3"))), "10.1.2.0");
        assert_eq!(s(text(&m, ip("::ffff:10.1.2.3"))), "10.1.2.0");
        assert!(text(&m, ip("2001:db8::1")).is_none());
        let m6 = T::Ipmask {
            v4: "255.0.0.0".parse().expect("m"),
            v6: Some("ffff::".parse().expect("m")),
        };
        assert_eq!(s(text(&m6, ip("2001:db8::1"))), "2001::");
        let trim = |left, chars: &str, t: &'static str| {
            s(text(&T::Trim { left, chars: chars.into() }, Value::Str(Cow::Borrowed(t.as_bytes()))))
        };
        assert_eq!(trim(true, " ,", " , a b "), "a b ");
        assert_eq!(trim(false, " ,", " , a b ,"), " , a b");
        assert_eq!(trim(false, "x", "xxx"), "");
        let st = |t: &'static str| Value::Str(Cow::Borrowed(t.as_bytes()));
        assert_eq!(s(text(&T::CutCrlf, st("ab\r\ncd"))), "ab");
        assert_eq!(s(text(&T::UrlEnc, st("a b/é~"))), "a%20b%2F%C3%A9~");
        assert_eq!(
            s(text(&T::Json(cfg::JsonInput::Ascii), st("a\"/\\\n\x01"))),
            "a\\\"\\/\\\\\\n\\u0001"
        );
        assert_eq!(s(text(&T::Json(cfg::JsonInput::Utf8), st("é"))), "\\u00e9");
        assert!(text(&T::Json(cfg::JsonInput::Utf8), Value::Str(Cow::Borrowed(b"\xff"))).is_none());
        assert_eq!(
            s(text(&T::Json(cfg::JsonInput::Utf8S), Value::Str(Cow::Borrowed(b"a\xffb")))),
            "ab"
        );
        assert_eq!(
            text(&T::Htonl, Value::Int(0x0102_0304)).expect("s").as_bytes().as_ref(),
            [1, 2, 3, 4]
        );
        assert_eq!(be2dec(&[0, 1, 2, 3, 4], ":", 2, false), b"1:515:4");
        assert_eq!(be2dec(&[0, 1, 2, 3, 4], ":", 2, true), b"1:515");
        assert_eq!(be2hex(&[0xab, 1, 2], ":", 1, false), b"AB:01:02");
        assert_eq!(be2hex(&[0xab, 1, 2], "", 0, false), b"AB0102");
        assert_eq!(strcmp(b"abc", b"abd"), -1);
        assert_eq!(strcmp(b"abc", b"ab"), 1);
        assert!(same_bytes(b"k", b"k") && !same_bytes(b"k", b"kk"));
        assert_eq!(add_item(b"a", ",", Some(b"b"), ""), b"a,b");
        assert_eq!(add_item(b"", ",", Some(b"b"), ";"), b"b;");
        assert_eq!(add_item(b"a", ",", None, ""), b"a");
    }

    #[test]
    fn utime_formats_the_date_in_utc() {
        let c = T::Time { utc: true, format: "%Y-%m-%d %H:%M:%S".into(), offset: 3600 };
        assert_eq!(s(text(&c, Value::Int(0))), "1970-01-01 01:00:00");
        let iif = T::Iif { yes: "y".into(), no: "n".into() };
        assert_eq!(s(text(&iif, Value::Bool(true))), "y");
        assert_eq!(s(text(&iif, Value::Int(0))), "n");
    }
}
