//! JSON and JSON Web Tokens for the converters `json_query`, `jwt_header_query`,
//! `jwt_payload_query` and `jwt_verify`, as HAProxy 2.6 reads them: a path of `.key` and
//! `[index]` steps from `$` (its mjson subset), strings unescaped, numbers as `%g` (or
//! integers with `int`), booleans; a token's parts split at dots and base64url-decoded; its
//! signature checked with HMAC, RSA PKCS#1 v1.5 or ECDSA (the raw `r||s` of RFC 7518) against
//! a secret or a public key file read when the configuration is loaded.
//!
//! Must not touch: fetches, variables (the caller reads them), the request.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use base64::Engine as _;

/// What a JSON path found.
#[derive(Debug, PartialEq)]
pub enum Found<'a> {
    Str(Vec<u8>),
    /// A number's text.
    Num(&'a [u8]),
    Bool(bool),
}

/// The value at `path` in `json` (strings, numbers and booleans only, as HAProxy).
pub fn query<'a>(json: &'a [u8], path: &str) -> Option<Found<'a>> {
    let mut rest = path.strip_prefix('$')?.as_bytes();
    let mut at = skip_ws(json, 0);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(b".") {
            let n = r.iter().position(|&b| b == b'.' || b == b'[').unwrap_or(r.len());
            at = member(json, at, &r[..n])?;
            rest = &r[n..];
        } else if let Some(r) = rest.strip_prefix(b"[") {
            let n = r.iter().position(|&b| b == b']')?;
            let idx: usize = std::str::from_utf8(&r[..n]).ok()?.parse().ok()?;
            at = element(json, at, idx)?;
            rest = &r[n + 1..];
        } else {
            return None;
        }
    }
    let end = value_end(json, at, 0)?;
    let tok = &json[at..end];
    Some(match tok.first()? {
        b'"' => Found::Str(unescape(&tok[1..tok.len() - 1])?),
        b't' => Found::Bool(true),
        b'f' => Found::Bool(false),
        b'-' | b'0'..=b'9' => Found::Num(tok),
        _ => return None,
    })
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// Where the value starting at `i` ends (`None`: not valid JSON).
fn value_end(s: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    match *s.get(i)? {
        b'"' => {
            let mut j = i + 1;
            loop {
                match *s.get(j)? {
                    b'\\' => j += 2,
                    b'"' => return Some(j + 1),
                    c if c < 0x20 => return None,
                    _ => j += 1,
                }
            }
        }
        open @ (b'{' | b'[') => {
            let close = if open == b'{' { b'}' } else { b']' };
            let mut j = skip_ws(s, i + 1);
            if s.get(j) == Some(&close) {
                return Some(j + 1);
            }
            loop {
                if open == b'{' {
                    j = value_end(s, j, depth + 1).filter(|_| s[j] == b'"')?;
                    j = skip_ws(s, j);
                    (s.get(j) == Some(&b':')).then_some(())?;
                    j = skip_ws(s, j + 1);
                }
                j = skip_ws(s, value_end(s, j, depth + 1)?);
                match *s.get(j)? {
                    b',' => j = skip_ws(s, j + 1),
                    c if c == close => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b't' => s[i..].starts_with(b"true").then_some(i + 4),
        b'f' => s[i..].starts_with(b"false").then_some(i + 5),
        b'n' => s[i..].starts_with(b"null").then_some(i + 4),
        b'-' | b'0'..=b'9' => {
            let n = s[i..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(s.len() - i);
            Some(i + n)
        }
        _ => None,
    }
}

/// The value of member `key` of the object at `i`.
fn member(s: &[u8], i: usize, key: &[u8]) -> Option<usize> {
    (s.get(i) == Some(&b'{')).then_some(())?;
    let mut j = skip_ws(s, i + 1);
    while s.get(j) == Some(&b'"') {
        let kend = value_end(s, j, 1)?;
        let k = &s[j + 1..kend - 1];
        j = skip_ws(s, kend);
        (s.get(j) == Some(&b':')).then_some(())?;
        j = skip_ws(s, j + 1);
        if k == key {
            return Some(j);
        }
        j = skip_ws(s, value_end(s, j, 1)?);
        if s.get(j) == Some(&b',') {
            j = skip_ws(s, j + 1);
        }
    }
    None
}

/// Element `idx` of the array at `i`.
fn element(s: &[u8], i: usize, idx: usize) -> Option<usize> {
    (s.get(i) == Some(&b'[')).then_some(())?;
    let mut j = skip_ws(s, i + 1);
    for _ in 0..idx {
        j = skip_ws(s, value_end(s, j, 1)?);
        (s.get(j) == Some(&b',')).then_some(())?;
        j = skip_ws(s, j + 1);
    }
    (s.get(j).is_some_and(|&b| b != b']')).then_some(j)
}

/// A JSON string's contents unescaped as mjson does: `\u00XX` as the byte XX, any other
/// `\u` escape or an unknown one gives nothing.
fn unescape(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let c = *s.get(i + 1)?;
        i += 2;
        out.push(match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'b' => 8,
            b'f' => 12,
            b'\\' | b'"' | b'/' => c,
            b'u' => {
                let hex = s.get(i..i + 4)?;
                if &hex[..2] != b"00" {
                    return None;
                }
                i += 4;
                u8::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()?
            }
            _ => return None,
        });
    }
    Some(out)
}

/// C's `printf("%g")` of `x`: six significant digits, trailing zeros dropped, an exponent
/// below 1e-4 or from 1e6.
pub fn fmt_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let e = format!("{x:.5e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant.to_string()), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    }
}

/// A JWT's dot-separated parts (at most three; `None` for a fourth).
fn parts(token: &[u8]) -> Option<Vec<&[u8]>> {
    let p: Vec<&[u8]> = token.split(|&b| b == b'.').collect();
    (p.len() <= 3).then_some(p)
}

/// base64url, padded or not (HAProxy's `base64urldec`).
pub fn b64url(s: &[u8]) -> Option<Vec<u8>> {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    engine.decode(s).ok()
}

/// The decoded JOSE header (`payload`: the claims) of `token`.
pub fn member_of(token: &[u8], payload: bool) -> Option<Vec<u8>> {
    let p = parts(token)?;
    b64url(p.get(usize::from(payload))?)
}

/// Public keys read from `jwt_verify`'s literal key files when the configuration was loaded
/// (HAProxy's `jwt_cert_tree`), by path: a variable naming one of them finds it.
fn keys() -> &'static RwLock<HashMap<String, Arc<Vec<u8>>>> {
    static KEYS: OnceLock<RwLock<HashMap<String, Arc<Vec<u8>>>>> = OnceLock::new();
    KEYS.get_or_init(Default::default)
}

/// Reads the PEM public key (`-----BEGIN PUBLIC KEY-----`) at `path` for `jwt_verify`; a file
/// that cannot be read leaves the key unknown (HAProxy does not refuse the configuration).
pub fn load_key(path: &str) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let mut b64 = String::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("-----BEGIN ") {
            inside = line.contains("PUBLIC KEY");
        } else if line.starts_with("-----END ") {
            if inside {
                break;
            }
        } else if inside {
            b64.push_str(line);
        }
    }
    let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) else { return };
    if let Ok(mut k) = keys().write() {
        k.insert(path.to_string(), Arc::new(der));
    }
}

/// HAProxy's `jwt_verify()` result for `token` signed with `alg` and `key` (an HMAC secret, or
/// the path of a public key loaded by [`load_key`]): 1 valid, 0 not, -1 unknown algorithm,
/// -2 unmanaged one, -3 invalid token, -5 unknown key.
pub fn verify(token: &[u8], alg: &[u8], key: &[u8]) -> i64 {
    use aws_lc_rs::{hmac, signature as sig};
    let known = [
        "none", "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512",
        "PS256", "PS384", "PS512",
    ];
    let Some(alg) = std::str::from_utf8(alg).ok().filter(|a| known.contains(a)) else {
        return -1;
    };
    let Some(p) = parts(token) else { return -3 };
    if p.len() != 3 && !(alg == "none" && p.len() == 2) {
        return -3;
    }
    if alg == "none" {
        return i64::from(p.get(2).is_none_or(|s| s.is_empty()));
    }
    if p[2].is_empty() {
        return -3;
    }
    let Some(signature) = b64url(p[2]) else { return -3 };
    let signed = &token[..p[0].len() + 1 + p[1].len()];
    let hmac_alg = match alg {
        "HS256" => Some(hmac::HMAC_SHA256),
        "HS384" => Some(hmac::HMAC_SHA384),
        "HS512" => Some(hmac::HMAC_SHA512),
        _ => None,
    };
    if let Some(h) = hmac_alg {
        let k = hmac::Key::new(h, key);
        return i64::from(hmac::verify(&k, signed, &signature).is_ok());
    }
    let v: &'static dyn sig::VerificationAlgorithm = match alg {
        "RS256" => &sig::RSA_PKCS1_2048_8192_SHA256,
        "RS384" => &sig::RSA_PKCS1_2048_8192_SHA384,
        "RS512" => &sig::RSA_PKCS1_2048_8192_SHA512,
        "ES256" => &sig::ECDSA_P256_SHA256_FIXED,
        "ES384" => &sig::ECDSA_P384_SHA384_FIXED,
        "ES512" => &sig::ECDSA_P521_SHA512_FIXED,
        _ => return -2,
    };
    let path = String::from_utf8_lossy(key);
    let Some(der) = keys().read().ok().and_then(|k| k.get(path.as_ref()).cloned()) else {
        return -5;
    };
    i64::from(sig::UnparsedPublicKey::new(v, der.as_slice()).verify(signed, &signature).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_find_what_mjson_finds() {
        let j =
            br#"{"a": {"b": [1, "x\"y\u0041", true, "\u20ac"]}, "n": 1.5, "big": 1e20, "s": "t"}"#;
        assert_eq!(query(j, "$.a.b[0]"), Some(Found::Num(b"1")));
        assert_eq!(query(j, "$.a.b[1]"), Some(Found::Str(b"x\"yA".to_vec())));
        assert_eq!(query(j, "$.a.b[3]"), None, "mjson gives up beyond \\u00XX");
        assert_eq!(query(j, "$.a.b[2]"), Some(Found::Bool(true)));
        assert_eq!(query(j, "$.a.b[4]"), None);
        assert_eq!(query(j, "$.a"), None);
        assert_eq!(query(j, "$.s"), Some(Found::Str(b"t".to_vec())));
        assert_eq!(query(j, "$.nope"), None);
        assert_eq!(fmt_g(1.5), "1.5");
        assert_eq!(fmt_g(1e20), "1e+20");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.0001), "0.0001");
        assert_eq!(fmt_g(100.0), "100");
    }

    #[test]
    fn hmac_tokens_verify_as_haproxy_says() {
        // RFC 7515's HS256 example (A.1), its key as bytes.
        let key = b64url(b"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow").expect("key");
        let token = b"eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(verify(token, b"HS256", &key), 1);
        assert_eq!(verify(token, b"HS256", b"other"), 0);
        assert_eq!(verify(token, b"XX256", &key), -1);
        assert_eq!(verify(token, b"PS256", &key), -2);
        assert_eq!(verify(b"a.b", b"HS256", &key), -3);
        assert_eq!(verify(token, b"RS256", b"/nowhere.pem"), -5);
        let claims = member_of(token, true).expect("claims");
        assert_eq!(query(&claims, "$.iss"), Some(Found::Str(b"joe".to_vec())));
        assert_eq!(query(&claims, "$.exp"), Some(Found::Num(b"1300819380")));
    }
}
