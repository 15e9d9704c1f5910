//! `stick-table`, `stick on|match|store-request|store-response`, and the stick-counter actions
//! of rules (`track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`), with HAProxy 2.6's syntax and messages.

use crate::args::{parse_size, Diags};
use crate::duration::{read_time, TimeError};
use crate::lexer::Line;
use crate::model::*;
use crate::proxy::ProxyBuild;
use crate::sample::{self, Avail, Ctx, End, STICK_COUNTERS};

/// HAProxy's `STKTABLE_MAX_DT_ARRAY_SIZE`.
const MAX_ARRAY: u32 = 100;

/// `stick-table type <t> [len <n>] size <n> [expire <t>] [nopurge] [peers <p>] [srvkey <k>]
/// [store <types>]`.
pub fn stick_table(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let p = &mut b.proxy;
    if p.stick_table.is_some() {
        // HAProxy finds its own earlier table by the proxy's name.
        let msg = format!(
            "stick-table name '{}' conflicts with table declared in {} '{}' at {}:{}.",
            p.name,
            crate::proxy::type_word(p.kind),
            p.name,
            p.stick_table.as_ref().map_or("", |t| &*t.span.file),
            p.stick_table.as_ref().map_or(0, |t| t.span.line),
        );
        return diags.alert(line, msg);
    }
    match parse_table(line, diags) {
        Ok(t) => p.stick_table = Some(t),
        Err(msg) => diags.alert(line, format!("stick-table: {msg}")),
    }
}

fn parse_table(line: &Line, diags: &mut Diags) -> Result<StickTable, String> {
    let w = |i: usize| line.arg(i);
    let mut t = StickTable {
        span: line.span.clone(),
        key: TableKey::Ip,
        size: 0,
        expire: None,
        nopurge: false,
        store: Vec::new(),
        peers: None,
    };
    let mut typed = false;
    let mut i = 1;
    let missing = |i: usize| format!("missing argument after '{}'.", w(i - 1));
    while i < line.words.len() {
        match w(i) {
            "size" => {
                i += 1;
                if w(i).is_empty() {
                    return Err(missing(i));
                }
                t.size = parse_size(w(i)).map_err(|c| {
                    format!("unexpected character '{c}' in argument of '{}'.", w(i - 1))
                })?;
                i += 1;
            }
            "peers" => {
                i += 1;
                if w(i).is_empty() {
                    return Err(missing(i));
                }
                t.peers = Some(w(i).to_string());
                i += 1;
            }
            "expire" => {
                i += 1;
                if w(i).is_empty() {
                    return Err(missing(i));
                }
                let v = w(i);
                t.expire = Some(match read_time(v) {
                    Ok(d) => d.value,
                    Err(TimeError::Overflow) => {
                        return Err(format!("timer overflow in argument <{v}> to <expire>, maximum value is 2147483647 ms (~24.8 days)."))
                    }
                    Err(TimeError::BadChar(c)) => {
                        return Err(format!("unexpected character '{c}' in argument of 'expire'."))
                    }
                    Err(TimeError::Missing) => return Err(missing(i)),
                })
                .filter(|d| !d.is_zero());
                i += 1;
            }
            "nopurge" => {
                t.nopurge = true;
                i += 1;
            }
            "type" => {
                i += 1;
                let default = |len: usize| len;
                t.key = match w(i) {
                    "ip" => TableKey::Ip,
                    "ipv6" => TableKey::Ipv6,
                    "integer" => TableKey::Integer,
                    // 32 bytes with the NUL: 31 characters.
                    "string" => TableKey::String { len: default(31) },
                    "binary" => TableKey::Binary { len: default(32) },
                    other => return Err(format!("unknown type '{other}'.")),
                };
                i += 1;
                if matches!(t.key, TableKey::String { .. } | TableKey::Binary { .. })
                    && w(i) == "len"
                {
                    i += 1;
                    let n: usize = w(i).parse().unwrap_or(0);
                    if n == 0 {
                        return Err(format!("unknown type '{}'.", w(i)));
                    }
                    t.key = match t.key {
                        TableKey::String { .. } => TableKey::String { len: n },
                        _ => TableKey::Binary { len: n },
                    };
                    i += 1;
                }
                typed = true;
            }
            "store" => {
                i += 1;
                store_list(&mut t, w(i), line, diags)?;
                i += 1;
            }
            "srvkey" => {
                i += 1;
                match w(i) {
                    "name" | "addr" => {}
                    k => return Err(format!("unknown server key type '{k}'.")),
                }
                i += 1;
            }
            other => return Err(format!("unknown argument '{other}'.")),
        }
    }
    if t.size == 0 {
        return Err("missing size.".into());
    }
    if !typed {
        return Err("missing type.".into());
    }
    t.store.sort_by_key(|s| s.ty);
    Ok(t)
}

/// The comma-separated `store` list.
fn store_list(
    t: &mut StickTable,
    list: &str,
    line: &Line,
    diags: &mut Diags,
) -> Result<(), String> {
    let mut rest = list;
    while !rest.is_empty() {
        // An item ends at the first comma outside parentheses.
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth == 0 => return true,
                    _ => {}
                }
                false
            })
            .map_or(rest.len(), |(i, _)| i);
        let item = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        let (name, args) = match item.split_once('(') {
            Some((n, a)) => {
                let Some(a) = a.strip_suffix(')') else {
                    return Err(format!("missing closing parenthesis after store option '{n}'."));
                };
                (n, Some(a))
            }
            None => (item, None),
        };
        let Some(ty) = DataType::from_name(name) else {
            return Err(format!("unknown store option '{name}'."));
        };
        if t.stored(ty).is_some() {
            diags.warning(
                line,
                format!("stick-table: store option '{name}' already enabled, ignored."),
            );
            continue;
        }
        let mut args = args.map(|a| a.split(',').collect::<Vec<_>>()).unwrap_or_default();
        let mut elems = 1;
        if ty.is_array() {
            let Some(first) = args.first().copied() else {
                return Err(format!("missing argument to store option '{name}'."));
            };
            elems = atoi(first);
            if elems == 0 || elems > MAX_ARRAY {
                return Err(format!(
                    "array size is out of allowed range (1-{MAX_ARRAY}) for store option '{name}'."
                ));
            }
            args.remove(0);
        }
        let mut period = None;
        if ty.is_rate() {
            let Some(p) = args.first().copied().filter(|p| !p.is_empty()) else {
                return Err(format!("missing argument to store option '{name}'."));
            };
            period = Some(match read_time(p) {
                Ok(d) => d.value,
                Err(_) => return Err(format!("error when processing store option '{name}'.")),
            });
        } else if !args.is_empty() {
            return Err(format!("unexpected argument to store option '{name}'."));
        }
        t.store.push(Stored { ty, period, elems });
    }
    let has = |ty| t.stored(ty).is_some();
    if has(DataType::Gpt) && has(DataType::Gpt0) {
        return Err("simultaneous usage of 'gpt' and 'gpt0' in a same table is not permitted as 'gpt' overrides 'gpt0'.".into());
    }
    if has(DataType::Gpc) && (has(DataType::Gpc0) || has(DataType::Gpc1)) {
        return Err("simultaneous usage of 'gpc' and 'gpc[0/1]' in a same table is not permitted as 'gpc' overrides 'gpc[0/1]'.".into());
    }
    if has(DataType::GpcRate) && (has(DataType::Gpc0Rate) || has(DataType::Gpc1Rate)) {
        return Err("simultaneous usage of 'gpc_rate' and 'gpc[0/1]_rate' in a same table is not permitted as 'gpc_rate' overrides 'gpc[0/1]_rate'.".into());
    }
    Ok(())
}

/// C's `atoi` on an unsigned count.
fn atoi(s: &str) -> u32 {
    let digits: String = s.trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(u32::MAX)
}

/// `stick on|match|store-request|store-response <pattern> [table <t>] [if|unless <cond>]`.
pub fn stick_rule(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let kind = match line.arg(1) {
        "on" => StickKind::On,
        "match" => StickKind::Match,
        "store" | "store-request" => StickKind::StoreRequest,
        "store-response" => StickKind::StoreResponse,
        _ => return diags.alert(line, "'stick' expects 'on', 'match', or 'store'."),
    };
    if line.arg(2).is_empty() {
        return diags.alert(line, "'stick' expects a fetch method.");
    }
    let parsed = match sample::parse(line.arg(2), End::Input) {
        Ok((p, _)) => p,
        Err(e) => return diags.alert(line, format!("'stick': {}", e.plain())),
    };
    let response = kind == StickKind::StoreResponse;
    let ok = if response {
        parsed.avail.usable_in_proxy(Ctx::HttpResponse, true)
    } else {
        parsed.avail.usable_in_proxy(Ctx::HttpRequest, true)
            && !matches!(parsed.avail, Avail::Server | Avail::ServerAddr | Avail::ServerConn)
    };
    if !ok {
        let when = if response { "for 'store-response'" } else { "during request" };
        let msg = format!(
            "'stick': fetch method '{}' extracts information from '{}', none of which is available {when}.",
            parsed.kw,
            parsed.avail.needs()
        );
        return diags.alert(line, msg);
    }
    let mut at = 3;
    let mut table = None;
    if line.arg(at) == "table" {
        table = Some(line.arg(at + 1).to_string());
        at += 2;
    }
    let cond = match line.arg(at) {
        "" => None,
        "if" | "unless" => {
            let ctx = if response { Ctx::HttpResponse } else { Ctx::HttpRequest };
            let wrap =
                |m: &str| format!("'stick': error detected while parsing sticking condition : {m}");
            let unexpected = |w: &str| format!("'stick': unknown keyword '{w}'.");
            match crate::rules::condition(&b.proxy, line, at, ctx, &wrap, &unexpected, diags) {
                Ok(c) => c,
                Err(()) => return,
            }
        }
        w => return diags.alert(line, format!("'stick': unknown keyword '{w}'.")),
    };
    let (key, key_type) = (parsed.expr, parsed.out);
    let span = line.span.clone();
    b.proxy.stick_rules.push(StickRule { span, kind, key, key_type, table, cond });
}

/// Reads the slot number after `prefix` in an action name (`sc-inc-gpc0(1)`): `None` when
/// there is none (slot 0), `Err` for anything but `(<n>)`.
fn paren_slot(rest: &str) -> Result<Option<i64>, ()> {
    if rest.is_empty() {
        return Ok(None);
    }
    let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or(())?;
    inner.parse().map(Some).map_err(|_| ())
}

/// A stick-counter action at word 1 of `line` (`http-request`) or 2 (`tcp-request ...`):
/// returns it and the index of the word after it.
pub fn action(
    line: &Line,
    at: usize,
    ctx: Ctx,
    be_cap: bool,
) -> Result<(StickAction, usize), String> {
    let name = line.arg(at);
    let max = STICK_COUNTERS - 1;
    if let Some(n) = name.strip_prefix("track-sc") {
        let slot: u8 = match n.parse::<u64>() {
            Ok(v) if v < u64::from(STICK_COUNTERS) => v as u8,
            Ok(v) => {
                return Err(format!(
                    "{v} track-sc number exceeding {max} (MAX_SESS_STKCTR-1) value"
                ))
            }
            Err(_) => return Err(format!("Wrong track-sc number '{n}'")),
        };
        let text = line.arg(at + 1);
        let (parsed, _) = sample::parse(text, End::Input).map_err(|e| e.plain())?;
        if !parsed.avail.usable_in_proxy(ctx, be_cap) {
            return Err(format!(
                "fetch method '{text}' extracts information from '{}', none of which is available here",
                parsed.avail.needs()
            ));
        }
        let mut next = at + 2;
        let mut table = None;
        if line.arg(next) == "table" {
            if line.arg(next + 1).is_empty() {
                return Err("missing table name".into());
            }
            table = Some(line.arg(next + 1).to_string());
            next += 2;
        }
        let key_type = parsed.out;
        return Ok((StickAction::Track { slot, key: parsed.expr, key_type, table }, next));
    }
    let slot_of = |v: i64, msg: &dyn Fn() -> String| -> Result<u8, String> {
        u8::try_from(v).ok().filter(|s| *s < STICK_COUNTERS).ok_or_else(msg)
    };
    if let Some(rest) = name.strip_prefix("sc-inc-gpc") {
        if let Some(args) = rest.strip_prefix('(') {
            let (idx, sc) = two_ints(args).map_err(|bad_idx| {
                if bad_idx {
                    format!("Missing gpc ID '{name}'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)")
                } else {
                    format!("invalid stick table track ID '{name}'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)")
                }
            })?;
            let slot = slot_of(sc, &|| {
                format!("invalid stick table track ID '{name}'. The max allowed ID is {max}")
            })?;
            return Ok((StickAction::IncGpc { slot, idx, array: true }, at + 1));
        }
        let (c, rest) = match rest.as_bytes().first() {
            Some(b'0') => (0, &rest[1..]),
            Some(b'1') => (1, &rest[1..]),
            _ => {
                return Err(format!(
                    "invalid gpc ID '{name}'. Expects sc-set-gpc(<GPC ID>,<Track ID>)"
                ))
            }
        };
        let bad = || format!("invalid stick table track ID. Expects {name}(<Track ID>)");
        let sc = paren_slot(rest).map_err(|()| bad())?.unwrap_or(0);
        let slot =
            slot_of(sc, &|| format!("invalid stick table track ID. The max allowed ID is {max}"))?;
        return Ok((StickAction::IncGpc { slot, idx: c, array: false }, at + 1));
    }
    if let Some(rest) = name.strip_prefix("sc-set-gpt") {
        let (slot, idx, array) = if let Some(args) = rest.strip_prefix('(') {
            let (idx, sc) = two_ints(args).map_err(|bad_idx| {
                if bad_idx {
                    format!("Missing gpt ID '{name}'. Expects sc-set-gpt(<GPT ID>,<Track ID>)")
                } else {
                    format!("invalid stick table track ID '{name}'. Expects sc-set-gpt(<GPT ID>,<Track ID>)")
                }
            })?;
            let slot = slot_of(sc, &|| {
                format!("invalid stick table track ID '{name}'. The max allowed ID is {max}")
            })?;
            (slot, idx, true)
        } else if let Some(rest) = rest.strip_prefix('0') {
            let bad = || {
                format!("invalid stick table track ID '{name}'. Expects sc-set-gpt0(<Track ID>)")
            };
            let sc = paren_slot(rest).map_err(|()| bad())?.unwrap_or(0);
            let slot = slot_of(sc, &|| {
                format!("invalid stick table track ID '{name}'. The max allowed ID is {max}")
            })?;
            (slot, 0, false)
        } else {
            return Err(format!(
                "invalid gpt ID '{name}'. Expects sc-set-gpt(<GPT ID>,<Track ID>)"
            ));
        };
        let text = line.arg(at + 1);
        let value = match text.parse::<i64>() {
            Ok(v) => GptValue::Int(v),
            Err(_) => {
                let (parsed, _) = sample::parse(text, End::Input).map_err(|e| e.plain())?;
                if !parsed.avail.usable_in_proxy(ctx, be_cap) {
                    return Err(format!(
                        "fetch method '{text}' extracts information from '{}', none of which is available here",
                        parsed.avail.needs()
                    ));
                }
                GptValue::Expr(parsed.expr)
            }
        };
        return Ok((StickAction::SetGpt { slot, idx, array, value }, at + 2));
    }
    Err(format!("'{name}' is not supported yet"))
}

/// `<idx>,<sc>)`: `Err(true)` when the index is not followed by a comma, `Err(false)` when the
/// slot is not followed by `)`.
fn two_ints(args: &str) -> Result<(u32, i64), bool> {
    let (idx, rest) = args.split_once(',').ok_or(true)?;
    let idx: u32 = idx.parse().map_err(|_| true)?;
    let sc = rest.strip_suffix(')').ok_or(false)?;
    let sc: i64 = sc.parse().map_err(|_| false)?;
    Ok((idx, sc))
}

/// Whether an action name is a stick-counter action.
pub fn is_stick_action(base: &str) -> bool {
    base.starts_with("track-sc") || base.starts_with("sc-inc-gpc") || base.starts_with("sc-set-gpt")
}

/// HAProxy's key type checks (`check_trk_action()`, `check_config_validity()`'s sticking
/// rules): a `track-sc*` or `stick` key must convert to its table's key type. A table that
/// cannot be found is reported where the rules are compiled.
pub(crate) fn check_key_types(config: &Config, p: &Proxy, out: &mut Vec<crate::diag::Diagnostic>) {
    use crate::diag::Diagnostic;
    let table_of = |name: &Option<String>| -> Option<(String, TableKey)> {
        let n = name.as_deref().unwrap_or(&p.name);
        config.proxy(n).and_then(|t| t.stick_table.as_ref()).map(|t| (n.to_string(), t.key))
    };
    let tcp = p.tcp_request_connection.iter().chain(&p.tcp_request_session);
    let tcp = tcp.chain(&p.tcp_request_content).chain(&p.tcp_response_content);
    let tcp_actions = tcp.filter_map(|r| match &r.action {
        TcpAction::Do(a) => Some(a),
        _ => None,
    });
    let http = p.http_request.iter().chain(&p.http_response).chain(&p.http_after_response);
    for a in tcp_actions.chain(http.map(|r| &r.action)) {
        let HttpAction::Stick(StickAction::Track { slot, key_type, table, .. }) = a else {
            continue;
        };
        if let Some((n, _)) = table_of(table).filter(|(_, k)| !k.takes(*key_type)) {
            let msg = format!(
                "Proxy '{}': stick-table '{n}' uses a type incompatible with the 'track-sc{slot}' rule.",
                p.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
    for r in &p.stick_rules {
        if let Some((n, _)) = table_of(&r.table).filter(|(_, k)| !k.takes(r.key_type)) {
            let msg = format!(
                "Proxy '{}': type of fetch not usable with type of stick-table '{n}'.",
                p.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
}
