//! Stick-counter fetches (`sc_*`, `sc0_*`..`sc2_*`, `src_*`, `table_avl`, `table_cnt`) and the
//! `in_table` / `table_*` converters: their argument lists and what they read.

use super::{Arg, ArgT, SmpError, SmpType};
use crate::model::{Converter, DataType, Fetch, ScFetch, ScRead, ScSource, TableConv};

/// HAProxy's `tune.stick-counters` default (`MAX_SESS_STKCTR`): slots 0, 1 and 2.
pub const SLOTS: u8 = 3;

const S: &[ArgT] = &[ArgT::Str];
const IS: &[ArgT] = &[ArgT::Int, ArgT::Str];
const IIS: &[ArgT] = &[ArgT::Int, ArgT::Int, ArgT::Str];

/// What the part of a fetch name after `sc_`, `sc0_` or `src_` reads, and whether it takes an
/// array index first.
fn read_of(what: &str) -> Option<(ScRead, bool)> {
    use DataType as D;
    let data = |t| Some((ScRead::Data(t), false));
    match what {
        "bytes_in_rate" => data(D::BytesInRate),
        "bytes_out_rate" => data(D::BytesOutRate),
        "conn_cnt" => data(D::ConnCnt),
        "conn_cur" => data(D::ConnCur),
        "conn_rate" => data(D::ConnRate),
        "sess_cnt" => data(D::SessCnt),
        "sess_rate" => data(D::SessRate),
        "http_req_cnt" => data(D::HttpReqCnt),
        "http_req_rate" => data(D::HttpReqRate),
        "http_err_cnt" => data(D::HttpErrCnt),
        "http_err_rate" => data(D::HttpErrRate),
        "http_fail_cnt" => data(D::HttpFailCnt),
        "http_fail_rate" => data(D::HttpFailRate),
        "gpc0_rate" => data(D::Gpc0Rate),
        "gpc1_rate" => data(D::Gpc1Rate),
        "get_gpc0" => data(D::Gpc0),
        "get_gpc1" => data(D::Gpc1),
        "get_gpt0" => data(D::Gpt0),
        "kbytes_in" => Some((ScRead::KBytes { out: false }, false)),
        "kbytes_out" => Some((ScRead::KBytes { out: true }, false)),
        "inc_gpc0" => Some((ScRead::IncGpc(0, false), false)),
        "inc_gpc1" => Some((ScRead::IncGpc(1, false), false)),
        "clr_gpc0" => Some((ScRead::ClrGpc(0, false), false)),
        "clr_gpc1" => Some((ScRead::ClrGpc(1, false), false)),
        "trackers" => Some((ScRead::Trackers, false)),
        "get_gpc" => Some((ScRead::Elem(D::Gpc, 0), true)),
        "get_gpt" => Some((ScRead::Elem(D::Gpt, 0), true)),
        "gpc_rate" => Some((ScRead::Elem(D::GpcRate, 0), true)),
        "inc_gpc" => Some((ScRead::IncGpc(0, true), true)),
        "clr_gpc" => Some((ScRead::ClrGpc(0, true), true)),
        _ => None,
    }
}

/// Splits a stick-counter fetch name: (slot given in the name, the read, takes an index).
/// `None` for the slot means `sc_` (slot as argument) or `src_` (see `src`).
enum Family {
    Sc(Option<u8>),
    Src,
}

fn split(name: &str) -> Option<(Family, &str)> {
    if let Some(rest) = name.strip_prefix("sc_") {
        return Some((Family::Sc(None), rest));
    }
    if let Some(rest) = name.strip_prefix("src_") {
        return Some((Family::Src, rest));
    }
    let rest = name.strip_prefix("sc")?;
    let slot = rest.bytes().next().filter(u8::is_ascii_digit)? - b'0';
    let rest = rest[1..].strip_prefix('_')?;
    (slot < SLOTS).then_some((Family::Sc(Some(slot)), rest))
}

/// The argument list and output type of a stick-counter fetch.
pub(super) fn def(name: &str) -> Option<(&'static [ArgT], usize, SmpType)> {
    if name == "table_avl" || name == "table_cnt" {
        return Some((S, 0, SmpType::Int));
    }
    let (family, what) = split(name)?;
    if what == "tracked" {
        return match family {
            Family::Sc(None) => Some((IS, 1, SmpType::Bool)),
            Family::Sc(Some(_)) => Some((S, 0, SmpType::Bool)),
            Family::Src => None,
        };
    }
    if what == "updt_conn_cnt" {
        return matches!(family, Family::Src).then_some((S, 0, SmpType::Int));
    }
    let (_, indexed) = read_of(what)?;
    Some(match (family, indexed) {
        (Family::Sc(None), false) => (IS, 1, SmpType::Int),
        (Family::Sc(None), true) => (IIS, 2, SmpType::Int),
        (Family::Sc(Some(_)), false) | (Family::Src, false) => (S, 0, SmpType::Int),
        (Family::Sc(Some(_)), true) | (Family::Src, true) => (IS, 1, SmpType::Int),
    })
}

fn table_arg(args: &[Arg], i: usize) -> Option<String> {
    args.get(i).map(Arg::str).filter(|s| !s.is_empty())
}

fn index(name: &str, v: i64) -> Result<u32, SmpError> {
    u32::try_from(v).map_err(|_| SmpError::ArgCheck(name.into(), format!("invalid index '{v}'")))
}

/// Builds a stick-counter fetch from its checked arguments.
pub(super) fn build(name: &str, args: &[Arg]) -> Result<Fetch, SmpError> {
    if name == "table_avl" || name == "table_cnt" {
        return Ok(Fetch::TableSize { table: table_arg(args, 0), used: name == "table_cnt" });
    }
    let Some((family, what)) = split(name) else {
        return Err(SmpError::UnknownFetch(name.into()));
    };
    let (read, indexed) = match what {
        "tracked" => (ScRead::Tracked, false),
        "updt_conn_cnt" => (ScRead::UpdtConnCnt, false),
        w => read_of(w).ok_or_else(|| SmpError::UnknownFetch(name.into()))?,
    };
    let mut at = 0;
    let read = if indexed {
        let idx = index(name, args.first().map_or(0, Arg::int))?;
        at = 1;
        match read {
            ScRead::Elem(t, _) => ScRead::Elem(t, idx),
            ScRead::IncGpc(_, a) => ScRead::IncGpc(idx, a),
            ScRead::ClrGpc(_, a) => ScRead::ClrGpc(idx, a),
            r => r,
        }
    } else {
        read
    };
    let src = match family {
        Family::Src => ScSource::Src { table: table_arg(args, at) },
        Family::Sc(Some(slot)) => ScSource::Slot { slot, table: table_arg(args, at) },
        Family::Sc(None) => {
            let slot = args.get(at).map_or(0, Arg::int);
            let slot = u8::try_from(slot).ok().filter(|s| *s < SLOTS).ok_or_else(|| {
                let msg = format!("invalid stick counter '{slot}' (must be 0..{})", SLOTS - 1);
                SmpError::ArgCheck(name.into(), msg)
            })?;
            ScSource::Slot { slot, table: table_arg(args, at + 1) }
        }
    };
    Ok(Fetch::Sc(ScFetch { src, read }))
}

/// The argument list of a table converter (`in_table`, `table_*`).
pub(super) fn conv_def(name: &str) -> Option<(&'static [ArgT], usize)> {
    let what = conv_what(name)?;
    Some(match what {
        (_, true) => (IS, 2),
        (_, false) => (S, 1),
    })
}

fn conv_what(name: &str) -> Option<(TableConv, bool)> {
    if name == "in_table" {
        return Some((TableConv::In, false));
    }
    let what = name.strip_prefix("table_")?;
    Some(match what {
        "trackers" => (TableConv::Trackers, false),
        "expire" => (TableConv::Expire, false),
        "idle" => (TableConv::Idle, false),
        "kbytes_in" => (TableConv::KBytes { out: false }, false),
        "kbytes_out" => (TableConv::KBytes { out: true }, false),
        "gpc" => (TableConv::Elem(DataType::Gpc, 0), true),
        "gpt" => (TableConv::Elem(DataType::Gpt, 0), true),
        "gpc_rate" => (TableConv::Elem(DataType::GpcRate, 0), true),
        "server_id" => (TableConv::Data(DataType::ServerId), false),
        "gpc0" => (TableConv::Data(DataType::Gpc0), false),
        "gpc1" => (TableConv::Data(DataType::Gpc1), false),
        "gpt0" => (TableConv::Data(DataType::Gpt0), false),
        w => match read_of(w) {
            Some((ScRead::Data(t), false)) => (TableConv::Data(t), false),
            _ => return None,
        },
    })
}

/// Builds a table converter from its checked arguments.
pub(super) fn build_conv(name: &str, args: &[Arg]) -> Result<Converter, String> {
    let (what, indexed) = conv_what(name).ok_or_else(|| format!("unknown converter '{name}'"))?;
    let (what, at) = match (what, indexed) {
        (TableConv::Elem(t, _), true) => {
            let v = args.first().map_or(0, Arg::int);
            let idx = u32::try_from(v).map_err(|_| format!("invalid index '{v}'"))?;
            (TableConv::Elem(t, idx), 1)
        }
        (w, _) => (w, 0),
    };
    Ok(Converter::Table { what, table: args.get(at).map(Arg::str).unwrap_or_default() })
}

/// The output type of a table converter.
pub(super) fn conv_out(what: &TableConv) -> SmpType {
    match what {
        TableConv::In => SmpType::Bool,
        _ => SmpType::Int,
    }
}
