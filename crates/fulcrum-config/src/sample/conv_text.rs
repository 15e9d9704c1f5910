//! The converters of `TextConv` and `VarConv` (address masks, dates, `iif`, trimming, JSON and
//! URL encoding, big-endian renderings; `strcmp`, `secure_memcmp`, `add_item`, `unset-var`,
//! `capture-req`, `capture-res`):
//! their arguments checked with HAProxy 2.6's messages.
//!
//! Must not touch: fetches, the other converters (`conv`).

use std::net::{Ipv4Addr, Ipv6Addr};

use super::*;
use crate::model::{JsonInput, LitOrVar, TextConv, VarConv};

/// Argument lists of these converters.
const SI_: &[ArgT] = &[ArgT::Str, ArgT::Int];
const SII: &[ArgT] = &[ArgT::Str, ArgT::Int, ArgT::Int];

/// The converter `name` if it is one of this module's: `None` otherwise.
pub(super) fn build(
    s: &str,
    name: &str,
    raw: Option<&RawArgs>,
) -> Option<Result<(Converter, SmpType, SmpType), SmpError>> {
    let arg_err = move |(n, m): (usize, String)| {
        SmpError::Conv(format!("invalid arg {} in converter '{name}' : {m}", n.max(1)))
    };
    let invalid =
        move |m: &str| SmpError::Conv(format!("invalid args in converter '{name}' : {m}"));
    let args =
        |spec: &[ArgT], mandatory: usize| check_args(s, raw, spec, mandatory).map_err(arg_err);
    let text = |c: TextConv, input: SmpType, out: SmpType| Ok((Converter::Text(c), input, out));
    let var = |c: VarConv, input: SmpType, out: SmpType| Ok((Converter::Var(c), input, out));
    use SmpType::*;
    Some((|| match name {
        "ipmask" => {
            let a = args(SS, 1)?;
            let v4 = mask4(&a[0].str()).map_err(|m| arg_err((1, m)))?;
            let v6 = match a.get(1).map(Arg::str) {
                Some(m) => Some(mask6(&m).map_err(|m| arg_err((2, m)))?),
                None => None,
            };
            text(TextConv::Ipmask { v4, v6 }, Ip, Ip)
        }
        "ltime" | "utime" => {
            let a = args(SI_, 1)?;
            let c = TextConv::Time {
                utc: name == "utime",
                format: a[0].str(),
                offset: a.get(1).map_or(0, Arg::int),
            };
            text(c, Int, Str)
        }
        "iif" => {
            let a = args(SS, 2)?;
            text(TextConv::Iif { yes: a[0].str(), no: a[1].str() }, Bool, Str)
        }
        "ltrim" | "rtrim" => {
            let a = args(S, 1)?;
            text(TextConv::Trim { left: name == "ltrim", chars: a[0].str() }, Str, Str)
        }
        "cut_crlf" => {
            args(NONE, 0)?;
            text(TextConv::CutCrlf, Str, Str)
        }
        "htonl" => {
            args(NONE, 0)?;
            text(TextConv::Htonl, Int, Bin)
        }
        "json" => {
            let a = args(S, 0)?;
            let mode = match a.first().map(Arg::str).as_deref() {
                None | Some("") | Some("ascii") => JsonInput::Ascii,
                Some("utf8") => JsonInput::Utf8,
                Some("utf8s") => JsonInput::Utf8S,
                Some("utf8p") => JsonInput::Utf8P,
                Some("utf8ps") => JsonInput::Utf8PS,
                Some(_) => {
                    return Err(invalid(
                        "Unexpected input code type. Allowed value are 'ascii', 'utf8', 'utf8s', 'utf8p' and 'utf8ps'",
                    ))
                }
            };
            text(TextConv::Json(mode), Str, Str)
        }
        "url_enc" => {
            let a = args(S, 0)?;
            if !matches!(a.first().map(Arg::str).as_deref(), None | Some("") | Some("query")) {
                return Err(invalid("Unexpected encode type. Allowed value is 'query'"));
            }
            text(TextConv::UrlEnc, Str, Str)
        }
        "be2dec" => {
            let a = args(SII, 1)?;
            let chunk = a.get(1).map_or(0, Arg::int);
            if !(1..=8).contains(&chunk) {
                return Err(invalid(&format!("chunk_size out of [1..8] range ({chunk})")));
            }
            let truncate = truncate(&a, &invalid)?;
            text(TextConv::Be2Dec { sep: a[0].str(), chunk: chunk as u8, truncate }, Bin, Str)
        }
        "be2hex" => {
            let a = args(SII, 0)?;
            let sep = a.first().map(Arg::str).unwrap_or_default();
            let chunk = a.get(1).map_or(0, Arg::int);
            let truncate = truncate(&a, &invalid)?;
            if chunk <= 0 && (!sep.is_empty() || truncate) {
                return Err(invalid(&format!("chunk_size needs to be positive ({chunk})")));
            }
            text(TextConv::Be2Hex { sep, chunk, truncate }, Bin, Str)
        }
        "json_query" => {
            let a = args(SS, 1)?;
            let path = a[0].str();
            if path.is_empty() {
                return Err(invalid("json_path must not be empty"));
            }
            text(TextConv::JsonQuery { path, int: output_int(&a, &invalid)? }, Str, Any)
        }
        "jwt_header_query" | "jwt_payload_query" => {
            let a = args(SS, 0)?;
            let int = output_int(&a, &invalid)?;
            let path = a.first().map(Arg::str).filter(|p| !p.is_empty());
            let payload = name == "jwt_payload_query";
            text(TextConv::JwtQuery { payload, path, int }, Bin, Any)
        }
        "jwt_verify" => {
            let a = args(SS, 2)?;
            let lit_or_var = |t: String| match parse_var_name(&t) {
                Ok((scope, n)) => LitOrVar::Var(scope, n),
                Err(_) => LitOrVar::Lit(t),
            };
            let (alg, key) = (lit_or_var(a[0].str()), lit_or_var(a[1].str()));
            if let LitOrVar::Lit(alg) = &alg {
                match alg.as_str() {
                    "PS256" | "PS384" | "PS512" => {
                        return Err(invalid("RSASSA-PSS JWS signing not managed yet"))
                    }
                    "none" | "HS256" | "HS384" | "HS512" | "RS256" | "RS384" | "RS512"
                    | "ES256" | "ES384" | "ES512" => {}
                    _ => return Err(invalid(&format!("unknown JWT algorithm: {alg}"))),
                }
            }
            var(VarConv::JwtVerify { alg, key }, Bin, Int)
        }
        "digest" | "hmac" => {
            let a = args(SS, if name == "hmac" { 2 } else { 1 })?;
            let Some(alg) = crate::model::DigestAlg::by_name(&a[0].str()) else {
                return Err(invalid("algorithm must be a valid OpenSSL message digest name."));
            };
            if name == "digest" {
                return text(TextConv::Digest(alg), Bin, Bin);
            }
            let k = a[1].str();
            let key = match parse_var_name(&k) {
                Ok((scope, n)) => LitOrVar::Var(scope, n),
                Err(_) if base64_ok(&k) => LitOrVar::Lit(k),
                Err(_) => return Err(invalid("failed to parse key : argument needs to be base64 encoded, and can either be a string or a variable")),
            };
            var(VarConv::Hmac { alg, key }, Bin, Bin)
        }
        "nbsrv" | "srv_queue" => {
            args(NONE, 0)?;
            let c = if name == "nbsrv" { VarConv::Nbsrv } else { VarConv::SrvQueue };
            var(c, Str, Int)
        }
        "strcmp" | "secure_memcmp" => {
            let a = args(S, 1)?;
            let v = a[0].str();
            if v.is_empty() {
                return Err(invalid("missing variable name"));
            }
            let (scope, name_) = parse_var_name(&v)
                .map_err(|_| invalid(&format!("failed to register variable name '{v}'")))?;
            match name {
                "strcmp" => var(VarConv::Strcmp { scope, name: name_ }, Str, Int),
                _ => var(VarConv::SecureMemcmp { scope, name: name_ }, Bin, Bool),
            }
        }
        "add_item" => {
            let a = args(SSS, 2)?;
            let v = a.get(1).map(Arg::str).unwrap_or_default();
            let suffix = a.get(2).map(Arg::str).unwrap_or_default();
            if v.is_empty() && suffix.is_empty() {
                return Err(invalid("one of the optional arguments has to be nonempty"));
            }
            // (A name without a scope is taken and never found, as 2.6 takes it.)
            let var_ = parse_var_name(&v).ok();
            var(VarConv::AddItem { delim: a[0].str(), var: var_, suffix }, Str, Str)
        }
        "capture-req" | "capture-res" => {
            let a = args(I, 1)?;
            var(VarConv::Capture { response: name == "capture-res", id: a[0].int() }, Str, Str)
        }
                "unset-var" => {
            let a = args(S, 1)?;
            let v = a[0].str();
            if v.is_empty() {
                return Err(invalid("Empty variable name cannot be accepted"));
            }
            let (scope, name_) = parse_var_name(&v).map_err(|e| invalid(&e))?;
            var(VarConv::UnsetVar { scope, name: name_ }, Any, Any)
        }
        _ => Err(SmpError::Other(String::new())),
    })())
    .filter(|r| !matches!(r, Err(SmpError::Other(m)) if m.is_empty()))
}

/// Whether `s` is standard base64 (its length a multiple of 4, `=` padding at the end only).
fn base64_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    !b.is_empty()
        && b.len().is_multiple_of(4)
        && pad <= 2
        && b[..b.len() - pad].iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/'))
}

/// `json_query`'s and the JWT queries' output type: `int` or nothing.
fn output_int(a: &[Arg], invalid: &dyn Fn(&str) -> SmpError) -> Result<bool, SmpError> {
    match a.get(1).map(Arg::str).as_deref() {
        None | Some("") => Ok(false),
        Some("int") => Ok(true),
        Some(_) => Err(invalid("output_type only supports \"int\" as argument")),
    }
}

/// `be2dec`'s and `be2hex`'s third argument: 0 or 1.
fn truncate(a: &[Arg], invalid: &dyn Fn(&str) -> SmpError) -> Result<bool, SmpError> {
    match a.get(2).map_or(0, Arg::int) {
        0 => Ok(false),
        1 => Ok(true),
        t => Err(invalid(&format!("Unsupported truncate value ({t})"))),
    }
}

/// HAProxy's `str2mask`: a dotted mask, or a length up to 32.
fn mask4(text: &str) -> Result<Ipv4Addr, String> {
    mask(text, ("IPv4", 1, '.', 32), |n| Ipv4Addr::from(u32::MAX.checked_shl(32 - n).unwrap_or(0)))
}

/// HAProxy's `str2mask6`: an IPv6 mask, or a length up to 128.
fn mask6(text: &str) -> Result<Ipv6Addr, String> {
    mask(text, ("IPv6", 2, ':', 128), |n| {
        Ipv6Addr::from(u128::MAX.checked_shl(128 - n).unwrap_or(0))
    })
}

/// A mask written as an address (it holds `sep`) or as a length up to `bits`, argument `pos`.
fn mask<T: std::str::FromStr>(
    text: &str,
    (family, pos, sep, bits): (&str, usize, char, u32),
    of_len: impl Fn(u32) -> T,
) -> Result<T, String> {
    if text.is_empty() {
        return Err(format!("expected type '{family} mask' at position {pos}, but got nothing"));
    }
    let bad = || format!("failed to parse '{text}' as type '{family} mask' at position {pos}");
    if text.contains(sep) {
        return text.parse().map_err(|_| bad());
    }
    match text.parse::<u32>() {
        Ok(n) if n <= bits => Ok(of_len(n)),
        _ => Err(bad()),
    }
}
