//! The converters that need nothing compiled (`cfg::PureConv`): lengths and slices, base64 and
//! URL decoding, digests, HAProxy's 32-bit hashes (`fulcrum_balance`'s) and xxHash, integer
//! arithmetic. Each takes
//! the sample as HAProxy casts it for the converter's input type and gives `None` where HAProxy
//! gives no sample (bad base64, a division by zero gives HAProxy's documented values instead).
//!
//! Must not touch: fetches, the request.

use std::borrow::Cow;

use base64::Engine as _;
use fulcrum_config as cfg;

use super::sample::Value;

/// The input as bytes (an integer as its 8 big-endian bytes when binary is wanted). As text,
/// binary data ends at its first NUL byte (HAProxy's cast of binary to string).
pub(super) fn bytes_of(v: Value<'_>, binary: bool) -> Cow<'_, [u8]> {
    match v {
        Value::Str(s) if binary => s,
        Value::Str(s) => match s.iter().position(|&b| b == 0) {
            None => s,
            Some(n) => match s {
                Cow::Borrowed(b) => Cow::Borrowed(&b[..n]),
                Cow::Owned(mut o) => {
                    o.truncate(n);
                    Cow::Owned(o)
                }
            },
        },
        Value::Int(i) if binary => Cow::Owned(i.to_be_bytes().to_vec()),
        other => Cow::Owned(other.as_bytes().into_owned()),
    }
}

/// The input as an integer, as HAProxy casts strings (leading sign and digits) and booleans.
fn int_of(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Str(s) => {
            let (neg, digits) = match s.first() {
                Some(b'-') => (true, &s[1..]),
                Some(b'+') => (false, &s[1..]),
                _ => (false, &s[..]),
            };
            let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            let mut acc: i64 = 0;
            for &d in &digits[..n] {
                acc = acc.saturating_mul(10).saturating_add(i64::from(d - b'0'));
            }
            Some(if neg { -acc } else { acc })
        }
        Value::Ip(std::net::IpAddr::V4(a)) => Some(i64::from(u32::from(*a))),
        Value::Ip(_) => None,
    }
}

/// `%XX` decoding; `form`: `+` is a space. Invalid escapes give no sample, as HAProxy.
fn url_dec(s: &[u8], form: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let hi = hex(*s.get(i + 1)?)?;
                let lo = hex(*s.get(i + 2)?)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
            b'+' if form => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

fn digest(alg: &'static aws_lc_rs::digest::Algorithm, data: &[u8]) -> Vec<u8> {
    aws_lc_rs::digest::digest(alg, data).as_ref().to_vec()
}

/// Applies a pure converter.
pub fn pure<'a>(c: &cfg::PureConv, v: Value<'a>) -> Option<Value<'a>> {
    use cfg::PureConv as P;
    let owned = |b: Vec<u8>| Value::Str(Cow::Owned(b));
    let int = |i: i64| Value::Int(i);
    Some(match *c {
        P::Length => int(bytes_of(v, false).len() as i64),
        P::Bytes { offset, len } => {
            let s = bytes_of(v, true);
            let start = usize::try_from(offset).ok()?;
            if start >= s.len() {
                return Some(Value::Str(Cow::Borrowed(&[])));
            }
            let rest = s.len() - start;
            let n = len.map_or(rest, |l| usize::try_from(l).unwrap_or(usize::MAX).min(rest));
            match s {
                Cow::Borrowed(b) => Value::Str(Cow::Borrowed(&b[start..start + n])),
                Cow::Owned(o) => owned(o[start..start + n].to_vec()),
            }
        }
        P::Base64 => {
            owned(base64::engine::general_purpose::STANDARD.encode(bytes_of(v, true)).into_bytes())
        }
        P::Ub64Enc => owned(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes_of(v, true)).into_bytes(),
        ),
        P::B64Dec => {
            owned(base64::engine::general_purpose::STANDARD.decode(bytes_of(v, false)).ok()?)
        }
        P::Ub64Dec => {
            let engine = base64::engine::GeneralPurpose::new(
                &base64::alphabet::URL_SAFE,
                base64::engine::GeneralPurposeConfig::new()
                    .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
            );
            owned(engine.decode(bytes_of(v, false)).ok()?)
        }
        P::UrlDec { form } => owned(url_dec(&bytes_of(v, false), form)?),
        P::Sha1 => owned(digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, &bytes_of(v, true))),
        P::Sha2 { bits } => {
            use aws_lc_rs::digest as d;
            let alg = match bits {
                224 => &d::SHA224,
                384 => &d::SHA384,
                512 => &d::SHA512,
                _ => &d::SHA256,
            };
            owned(digest(alg, &bytes_of(v, true)))
        }
        P::Hash32 { kind, avalanche } => {
            let s = bytes_of(v, true);
            use fulcrum_balance as hf;
            let h = match kind {
                cfg::Hash32::Crc32 => hf::hash_crc32(&s),
                cfg::Hash32::Crc32c => crate::connection::proxy::crc32c(&s),
                cfg::Hash32::Djb2 => hf::hash_djb2(&s),
                cfg::Hash32::Sdbm => hf::hash_sdbm(&s),
                cfg::Hash32::Wt6 => hf::hash_wt6(&s),
            };
            int(i64::from(if avalanche { hf::full_hash(h) } else { h }))
        }
        P::Xxh32(seed) => int(i64::from(xxhash_rust::xxh32::xxh32(&bytes_of(v, true), seed))),
        P::Xxh64(seed) => int(xxhash_rust::xxh64::xxh64(&bytes_of(v, true), seed) as i64),
        P::Xxh3(seed) => int(xxhash_rust::xxh3::xxh3_64_with_seed(&bytes_of(v, true), seed) as i64),
        P::Arith { op, value } => int(arith(op, int_of(&v)?, value)),
        P::Neg => int(int_of(&v)?.wrapping_neg()),
        P::Cpl => int(!int_of(&v)?),
        P::Bool => Value::Bool(int_of(&v)? != 0),
        P::Not => Value::Bool(int_of(&v)? == 0),
        P::Odd => Value::Bool(int_of(&v)? & 1 == 1),
        P::Even => Value::Bool(int_of(&v)? & 1 == 0),
        P::Hex2i => {
            let s = bytes_of(v, false);
            let (neg, digits) = match s.first() {
                Some(b'-') => (true, &s[1..]),
                _ => (false, &s[..]),
            };
            let mut acc: i64 = 0;
            for &b in digits {
                let Some(d) = (b as char).to_digit(16) else { break };
                acc = acc.wrapping_mul(16).wrapping_add(i64::from(d));
            }
            int(if neg { -acc } else { acc })
        }
        // HAProxy's: the last ':' not inside an IPv6 literal's brackets starts the port.
        P::HttpDate { offset } => {
            let mut out = Vec::with_capacity(29);
            crate::log::dates::http_date(&mut out, int_of(&v)?.saturating_add(offset));
            owned(out)
        }
        P::HostOnly | P::PortOnly => {
            let s = bytes_of(v, false);
            let colon = s.iter().rposition(|&c| c == b':' || c == b']').filter(|&i| s[i] == b':');
            if *c == P::PortOnly {
                let digits = colon.map_or(&[][..], |i| &s[i + 1..]);
                let n = digits
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .fold(0i64, |a, &d| a.wrapping_mul(10).wrapping_add(i64::from(d - b'0')));
                int(n)
            } else {
                let host = colon.map_or(&s[..], |i| &s[..i]);
                owned(host.to_ascii_lowercase())
            }
        }
    })
}

/// HAProxy's arithmetic converters on `a` and `value`.
pub fn arith(op: cfg::ArithOp, a: i64, value: i64) -> i64 {
    use cfg::ArithOp as O;
    match op {
        O::Add => a.saturating_add(value),
        O::Sub => a.saturating_sub(value),
        O::Mul => a.saturating_mul(value),
        // HAProxy: a division by zero gives the largest integer, a modulo by zero 0.
        O::Div if value == 0 => i64::MAX,
        O::Div => a.checked_div(value).unwrap_or(i64::MAX),
        O::Mod if value == 0 => 0,
        O::Mod => a.checked_rem(value).unwrap_or(0),
        O::And => a & value,
        O::Or => a | value,
        O::Xor => a ^ value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(c: cfg::PureConv, input: &str) -> Option<String> {
        pure(&c, Value::Str(Cow::Owned(input.as_bytes().to_vec()))).map(|v| match v {
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => b.to_string(),
            other => String::from_utf8_lossy(&other.as_bytes()).into_owned(),
        })
    }

    #[test]
    fn hashes_give_haproxys_values() {
        use cfg::{Hash32 as H, PureConv as P};
        // Reference values: the standard CRC-32 check value, and djb2/sdbm of "abc".
        let h = |kind, s| conv(P::Hash32 { kind, avalanche: false }, s);
        assert_eq!(h(H::Crc32, "123456789").as_deref(), Some("3421780262"));
        assert_eq!(h(H::Crc32c, "123456789").as_deref(), Some("3808858755"));
        assert_eq!(h(H::Djb2, "abc").as_deref(), Some("193485963"));
        assert_eq!(h(H::Sdbm, "abc").as_deref(), Some("807794786"));
        assert_eq!(conv(P::Xxh32(0), "").as_deref(), Some("46947589"));
    }

    #[test]
    fn encodings_and_slices() {
        use cfg::PureConv as P;
        assert_eq!(conv(P::Base64, "hello").as_deref(), Some("aGVsbG8="));
        assert_eq!(conv(P::B64Dec, "aGVsbG8=").as_deref(), Some("hello"));
        assert_eq!(conv(P::B64Dec, "aGVsbG8"), None, "padding is required");
        assert_eq!(conv(P::Ub64Enc, "\u{fb}\u{ff}").as_deref(), Some("w7vDvw"));
        assert_eq!(conv(P::Ub64Dec, "aGVsbG8").as_deref(), Some("hello"));
        assert_eq!(conv(P::Bytes { offset: 1, len: Some(3) }, "hello").as_deref(), Some("ell"));
        assert_eq!(conv(P::Bytes { offset: 9, len: None }, "hello").as_deref(), Some(""));
        assert_eq!(conv(P::UrlDec { form: true }, "a%20b+c").as_deref(), Some("a b c"));
        assert_eq!(conv(P::UrlDec { form: false }, "a%2"), None);
        assert_eq!(conv(P::Length, "hello").as_deref(), Some("5"));
        assert_eq!(conv(P::Length, "ab\0cd").as_deref(), Some("2"), "text ends at a NUL");
    }

    #[test]
    fn arithmetic_as_haproxy_defines_it() {
        use cfg::{ArithOp as O, PureConv as P};
        let a = |op, value, s| conv(P::Arith { op, value }, s);
        assert_eq!(a(O::Add, 3, "4").as_deref(), Some("7"));
        assert_eq!(a(O::Div, 0, "4").as_deref(), Some(&*i64::MAX.to_string()));
        assert_eq!(a(O::Mod, 0, "4").as_deref(), Some("0"));
        assert_eq!(conv(P::Hex2i, "ff").as_deref(), Some("255"));
        assert_eq!(conv(P::HostOnly, "WWW.Example.com:8080").as_deref(), Some("www.example.com"));
        assert_eq!(conv(P::HostOnly, "[::1]:80").as_deref(), Some("[::1]"));
        assert_eq!(conv(P::HostOnly, "[::1]").as_deref(), Some("[::1]"));
        assert_eq!(conv(P::PortOnly, "[::1]:8443").as_deref(), Some("8443"));
        assert_eq!(conv(P::PortOnly, "example.com").as_deref(), Some("0"));
        assert_eq!(conv(P::Odd, "3").as_deref(), Some("true"));
    }
}
