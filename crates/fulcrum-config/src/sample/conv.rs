//! Converters: each one's arguments checked as HAProxy checks them, and the model's
//! [`Converter`] built; which input types a converter accepts (`castable`).
//!
//! Must not touch: fetches (the parent module).

use super::*;

/// A pure converter (see [`pure_converter`]) and its checked arguments.
fn build_pure(
    s: &str,
    name: &str,
    raw: Option<&RawArgs>,
) -> Result<(Converter, SmpType, SmpType), SmpError> {
    let arg_err = |(n, m): (usize, String)| {
        SmpError::Conv(format!("invalid arg {} in converter '{name}' : {m}", n.max(1)))
    };
    let invalid = |m: &str| SmpError::Conv(format!("invalid args in converter '{name}' : {m}"));
    let Some((spec, mandatory, input, output)) = pure_converter(name) else {
        return Err(SmpError::Conv(format!("unknown converter '{name}'")));
    };
    let a = check_args(s, raw, spec, mandatory).map_err(arg_err)?;
    let int = |i: usize| a.get(i).map(Arg::int);
    use crate::model::{ArithOp as O, Hash32 as H, PureConv as P};
    let hash = |kind| P::Hash32 { kind, avalanche: int(0).unwrap_or(0) != 0 };
    let arith = |op| -> Result<P, SmpError> {
        let text = a.first().map(Arg::str).unwrap_or_default();
        match parse_int(&text) {
            Some(value) => Ok(P::Arith { op, value }),
            // A variable's value: its own converter (it needs the transaction).
            None if text.contains('.') => Err(SmpError::Other(format!("\0var {text}"))),
            None => Err(invalid("expects an integer or a variable name")),
        }
    };
    let conv = match name {
        "length" => P::Length,
        "bytes" => {
            let num = |i: usize| -> Result<Option<i64>, SmpError> {
                let Some(t) = a.get(i).map(Arg::str) else { return Ok(None) };
                match parse_int(&t) {
                    Some(v) if v >= 0 => Ok(Some(v)),
                    _ if t.contains('.') => Err(SmpError::Conv(
                        "a variable as the argument of converter 'bytes' is not supported yet"
                            .into(),
                    )),
                    _ => Err(invalid(&format!("failed to parse '{t}' as a positive integer"))),
                }
            };
            P::Bytes { offset: num(0)?.unwrap_or(0), len: num(1)? }
        }
        "base64" => P::Base64,
        "b64dec" => P::B64Dec,
        "ub64enc" => P::Ub64Enc,
        "ub64dec" => P::Ub64Dec,
        "url_dec" => P::UrlDec { form: int(0).unwrap_or(0) != 0 },
        "sha1" => P::Sha1,
        "sha2" => match int(0).unwrap_or(256) {
            b @ (224 | 256 | 384 | 512) => P::Sha2 { bits: b as u16 },
            b => return Err(invalid(&format!("Unsupported number of bits: '{b}'."))),
        },
        "crc32" => hash(H::Crc32),
        "crc32c" => hash(H::Crc32c),
        "djb2" => hash(H::Djb2),
        "sdbm" => hash(H::Sdbm),
        "wt6" => hash(H::Wt6),
        "xxh32" => P::Xxh32(int(0).unwrap_or(0) as u32),
        "xxh64" => P::Xxh64(int(0).unwrap_or(0) as u64),
        "xxh3" => P::Xxh3(int(0).unwrap_or(0) as u64),
        "add" => arith(O::Add)?,
        "sub" => arith(O::Sub)?,
        "mul" => arith(O::Mul)?,
        "div" => arith(O::Div)?,
        "mod" => arith(O::Mod)?,
        "and" => arith(O::And)?,
        "or" => arith(O::Or)?,
        "xor" => arith(O::Xor)?,
        "neg" => P::Neg,
        "cpl" => P::Cpl,
        "bool" => P::Bool,
        "not" => P::Not,
        "odd" => P::Odd,
        "even" => P::Even,
        "host_only" => P::HostOnly,
        "port_only" => P::PortOnly,
        "http_date" => match a.get(1).map(Arg::str).as_deref() {
            None | Some("s") => P::HttpDate { offset: int(0).unwrap_or(0) },
            Some(u @ ("ms" | "us")) => {
                let m = format!("converter 'http_date' in unit '{u}' is not supported yet");
                return Err(SmpError::Conv(m));
            }
            Some(_) => return Err(invalid("unit must be s, ms or us")),
        },
        _ => P::Hex2i,
    };
    Ok((Converter::Pure(conv), input, output))
}

/// The pure converters: arguments (types, how many are mandatory), input and output types.
fn pure_converter(name: &str) -> Option<(&'static [ArgT], usize, SmpType, SmpType)> {
    use SmpType::*;
    Some(match name {
        "length" => (NONE, 0, Str, Int),
        "bytes" => (SS, 1, Bin, Bin),
        "base64" | "ub64enc" => (NONE, 0, Bin, Str),
        "b64dec" | "ub64dec" => (NONE, 0, Str, Bin),
        "url_dec" => (I, 0, Str, Str),
        "sha1" => (NONE, 0, Bin, Bin),
        "sha2" => (I, 0, Bin, Bin),
        "crc32" | "crc32c" | "djb2" | "sdbm" | "wt6" | "xxh32" | "xxh64" | "xxh3" => {
            (I, 0, Bin, Int)
        }
        "add" | "sub" | "mul" | "div" | "mod" | "and" | "or" | "xor" => (S, 1, Int, Int),
        "neg" | "cpl" => (NONE, 0, Int, Int),
        "bool" | "not" | "odd" | "even" => (NONE, 0, Int, Bool),
        "hex2i" => (NONE, 0, Str, Int),
        "host_only" => (NONE, 0, Str, Str),
        "port_only" => (NONE, 0, Str, Int),
        "http_date" => (IS, 0, Int, Str),
        _ => return None,
    })
}

/// True for the `map`, `map_<match>` and `map_<match>_<output>` converters.
fn is_map_family(name: &str) -> bool {
    const MATCHES: &[&str] =
        &["str", "beg", "sub", "dir", "dom", "end", "reg", "regm", "ip", "int"];
    let Some(rest) = name.strip_prefix("map_") else { return name == "map" };
    let (m, out) = rest.split_once('_').unwrap_or((rest, ""));
    MATCHES.contains(&m) && matches!(out, "" | "str" | "int" | "ip")
}

/// Whether HAProxy can cast a sample of type `from` to `to` for a converter's input.
pub(super) fn castable(from: SmpType, to: SmpType) -> bool {
    use SmpType::*;
    match (from, to) {
        (a, b) if a == b => true,
        (Any, _) | (_, Any) | (_, Str) => true,
        (Bool | Str | Ip, Int) => true,
        (Int | Str, Bool) => true,
        (Int | Str, Ip) => true,
        (Bool | Int | Str | Ip, Bin) => true,
        _ => false,
    }
}

/// Parses a converter and its arguments. Returns the converter, its input and output types.
pub(super) fn build_converter(
    s: &str,
    name: &str,
    raw: Option<&RawArgs>,
) -> Result<(Converter, SmpType, SmpType), SmpError> {
    let arg_err = |(n, m): (usize, String)| {
        if n == 0 {
            SmpError::Conv(format!("invalid arg 1 in converter '{name}' : {m}"))
        } else {
            SmpError::Conv(format!("invalid arg {n} in converter '{name}' : {m}"))
        }
    };
    let invalid = |m: &str| SmpError::Conv(format!("invalid args in converter '{name}' : {m}"));
    let str_conv = |c| Ok((c, SmpType::Str, SmpType::Str));
    match name {
        "hex" => {
            check_args(s, raw, NONE, 0).map_err(arg_err)?;
            Ok((Converter::Hex, SmpType::Bin, SmpType::Str))
        }
        "lower" | "upper" => {
            check_args(s, raw, NONE, 0).map_err(arg_err)?;
            str_conv(if name == "lower" { Converter::Lower } else { Converter::Upper })
        }
        "field" | "word" => {
            let a = check_args(s, raw, ISI, 2).map_err(arg_err)?;
            let index = a[0].int();
            if index == 0 {
                return Err(invalid("Unexpected value 0 for index"));
            }
            let delims = a[1].str();
            if delims.is_empty() {
                return Err(invalid("Empty separators list"));
            }
            let index = index.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
            let count = a.get(2).map(|c| c.int().clamp(i32::MIN as i64, i32::MAX as i64) as i32);
            str_conv(if name == "field" {
                Converter::Field { index, delims, count }
            } else {
                Converter::Word { index, delims, count }
            })
        }
        "regsub" => {
            let a = check_args(s, raw, SSS, 2).map_err(arg_err)?;
            let flags = a.get(2).map(Arg::str).unwrap_or_default();
            if let Some(c) = flags.chars().find(|c| !matches!(c, 'i' | 'g')) {
                return Err(invalid(&format!(
                    "invalid regex flag '{c}', only 'i' and 'g' are supported"
                )));
            }
            let regex = a[0].str();
            if let Err(e) = crate::regex_check::check(&regex) {
                return Err(SmpError::Conv(format!("invalid arg 1 in converter 'regsub' : {e}")));
            }
            str_conv(Converter::Regsub { regex, subst: a[1].str(), flags })
        }
        _ if is_map_family(name) => {
            let kind = match name {
                "map" | "map_str" => MapMatch::Str,
                "map_beg" => MapMatch::Beg,
                "map_end" => MapMatch::End,
                "map_sub" => MapMatch::Sub,
                "map_dom" => MapMatch::Dom,
                "map_reg" => MapMatch::Reg,
                "map_regm" => MapMatch::Regm,
                "map_ip" => MapMatch::Ip,
                "map_int" => MapMatch::Int,
                _ => {
                    return Err(SmpError::Conv(format!("converter '{name}' is not supported yet")))
                }
            };
            let a = check_args(s, raw, SS, 1).map_err(arg_err)?;
            let file = a[0].str();
            if file.is_empty() {
                return Err(invalid("failed to open pattern file <>"));
            }
            let input = match kind {
                MapMatch::Ip => SmpType::Ip,
                MapMatch::Int => SmpType::Int,
                _ => SmpType::Str,
            };
            let conv = Converter::Map { kind, file: file.into(), default: opt_str(&a, 1) };
            Ok((conv, input, SmpType::Str))
        }
        "concat" => {
            let a = check_args(s, raw, SSS, 1).map_err(arg_err)?;
            let var = match a.get(1).map(Arg::str).filter(|v| !v.is_empty()) {
                Some(v) => Some(parse_var_name(&v).map_err(|_| {
                    SmpError::Conv(format!(
                        "invalid args in converter '{name}' : failed to register variable name '{v}'"
                    ))
                })?),
                None => None,
            };
            let start = a.first().map(Arg::str).unwrap_or_default();
            let end = a.get(2).map(Arg::str).unwrap_or_default();
            Ok((Converter::Concat { start, var, end }, SmpType::Str, SmpType::Str))
        }
        "set-var" => {
            const S9: &[ArgT] = &[ArgT::Str; 9];
            let a = check_args(s, raw, S9, 1).map_err(arg_err)?;
            let (scope, var) = parse_var_name(&a[0].str()).map_err(|e| invalid(&e))?;
            let list: Vec<String> = a[1..].iter().map(Arg::str).collect();
            let conds = if list.is_empty() {
                0
            } else {
                crate::model::VarConds::parse(&list.join(",")).map_err(|e| invalid(&e))?
            };
            Ok((Converter::SetVar { scope, name: var, conds }, SmpType::Any, SmpType::Any))
        }
        _ if pure_converter(name).is_some() => match build_pure(s, name, raw) {
            // `add(<var>)` and its siblings: the variable's value at run time.
            Err(SmpError::Other(m)) if m.starts_with("\0var ") => {
                let text = &m["\0var ".len()..];
                let (scope, var) = parse_var_name(text).map_err(|e| invalid(&e))?;
                use crate::model::ArithOp as O;
                let op = match name {
                    "add" => O::Add,
                    "sub" => O::Sub,
                    "mul" => O::Mul,
                    "div" => O::Div,
                    "mod" => O::Mod,
                    "and" => O::And,
                    "or" => O::Or,
                    _ => O::Xor,
                };
                Ok((Converter::ArithVar { op, scope, name: var }, SmpType::Int, SmpType::Int))
            }
            r => r,
        },
        _ if super::stick::conv_def(name).is_some() => {
            let (spec, mandatory) = super::stick::conv_def(name).unwrap_or((NONE, 0));
            let a = check_args(s, raw, spec, mandatory).map_err(arg_err)?;
            let conv = super::stick::build_conv(name, &a).map_err(|m| invalid(&m))?;
            let out = match &conv {
                Converter::Table { what, .. } => super::stick::conv_out(what),
                _ => SmpType::Int,
            };
            Ok((conv, SmpType::Any, out))
        }
        _ if sample_names::CONVERTERS.contains(&name) => super::conv_text::build(s, name, raw)
            .unwrap_or_else(|| {
                Err(SmpError::Conv(format!("converter '{name}' is not supported yet")))
            }),
        _ => Err(SmpError::Conv(format!("unknown converter '{name}'"))),
    }
}
