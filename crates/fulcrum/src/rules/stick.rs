//! Rules and samples over stick tables: the `track-sc*`, `sc-inc-gpc*` and `sc-set-gpt*`
//! actions, the `sc_*` / `src_*` / `table_avl` / `table_cnt` fetches and the `in_table` /
//! `table_*` converters, with HAProxy 2.6's answers (an untracked counter gives no sample, a
//! client without entry gives 0, a type the table does not store gives no sample).
//!
//! It also runs the `stick` rules: `stick match` before balancing, after a persistence cookie;
//! stores are committed once the server is known ([`commit`]). [`key_of`] makes a sample a key
//! as HAProxy's `smp_to_stkey` does; [`parse_key`] reads a key typed on the runtime API.
//!
//! Must not touch: tables' insides (`crate::stick` owns them), sockets.

use std::net::IpAddr;
use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_config::{DataType as D, ScRead, ScSource, TableConv, TableKey};

use super::sample::{Ctx, Expr, Value, Vars};
use crate::stick::{freq, now, tick, Entry, Key, Table};

/// A compiled stick-counter action.
#[derive(Debug)]
pub enum StickAct {
    Track { slot: u8, key: Expr, table: Arc<Table> },
    IncGpc { slot: u8, idx: u32, array: bool },
    SetGpt { slot: u8, idx: u32, array: bool, value: GptSource },
}

#[derive(Debug)]
pub enum GptSource {
    Int(i64),
    Expr(Expr),
}

/// Where a rule list runs: tracking there lasts for the session or for the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `tcp-request connection|session`.
    Session,
    /// `tcp-request content`.
    Stream,
    /// `http-request`, `http-response`: tracking also counts the request, as HAProxy does.
    Http,
}

/// The type a `gpc0`/`gpc1` (`gpt0`) action or fetch uses: the legacy type when the table
/// stores it, else element 0/1 of the `gpc` (`gpt`) array, as HAProxy 2.6 falls back.
fn gpc_target(t: &Table, idx: u32, array: bool, rate: bool) -> (D, u16) {
    let (legacy, arr) = match (idx, rate) {
        (0, false) => (D::Gpc0, D::Gpc),
        (1, false) => (D::Gpc1, D::Gpc),
        (0, true) => (D::Gpc0Rate, D::GpcRate),
        (_, true) => (D::Gpc1Rate, D::GpcRate),
        _ => (D::Gpc, D::Gpc),
    };
    if !array && t.layout.has(legacy) {
        (legacy, 0)
    } else {
        (arr, idx as u16)
    }
}

fn gpt_target(t: &Table, idx: u32, array: bool) -> (D, u16) {
    if !array && t.layout.has(D::Gpt0) {
        (D::Gpt0, 0)
    } else {
        (D::Gpt, idx as u16)
    }
}

/// Increments a general purpose counter (and its rate), returns the new count.
fn inc_gpc(t: &Table, e: &Entry, idx: u32, array: bool) -> Option<u64> {
    let (c, ci) = gpc_target(t, idx, array, false);
    let (r, ri) = gpc_target(t, idx, array, true);
    let now = now();
    let v = {
        let mut w = e.data();
        freq::add(&t.layout, &mut w, r, ri, 1, tick(now));
        freq::add(&t.layout, &mut w, c, ci, 1, tick(now));
        // The new count; with only the rate stored, its current period's count; else 0.
        freq::read(&t.layout, &w, c, ci, tick(now))
            .or_else(|| freq::current(&t.layout, &w, r, ri))
            .unwrap_or(0)
    };
    e.touch(now);
    Some(v)
}

/// Runs a stick-counter action. `eval` evaluates an expression on the rule's context.
pub fn apply(
    a: &StickAct,
    vars: &mut Vars,
    level: Level,
    eval: &dyn Fn(&Expr, &Vars) -> Option<Value<'static>>,
) {
    match a {
        StickAct::Track { slot, key, table } => {
            if vars.sc.as_ref().is_some_and(|sc| sc.slot(*slot).is_some()) {
                return; // the first tracking of a slot wins
            }
            let Some(k) = eval(key, vars).and_then(|v| key_of(table.key, &v)) else {
                return;
            };
            let Some(entry) = table.get_or_create(k, now()) else { return };
            let sc = vars.sc.get_or_insert_with(Default::default);
            if sc.track(*slot, table, entry, level == Level::Session) && level == Level::Http {
                sc.http_request_on(*slot);
            }
        }
        StickAct::IncGpc { slot, idx, array } => {
            if let Some(t) = vars.sc.as_ref().and_then(|sc| sc.slot(*slot)) {
                inc_gpc(&t.table, &t.entry, *idx, *array);
            }
        }
        StickAct::SetGpt { slot, idx, array, value } => {
            let v = match value {
                GptSource::Int(i) => *i,
                GptSource::Expr(e) => match eval(e, vars).and_then(|v| v.as_int()) {
                    Some(i) => i,
                    None => return,
                },
            };
            if let Some(t) = vars.sc.as_ref().and_then(|sc| sc.slot(*slot)) {
                let (ty, i) = gpt_target(&t.table, *idx, *array);
                freq::set(&t.table.layout, &mut t.entry.data(), ty, i, v as u32 as u64);
                t.entry.touch(now());
            }
        }
    }
}

/// What a data-reading fetch or converter gives for an entry: `None` when the table does not
/// store the type.
fn read(t: &Table, e: &Entry, r: ScRead) -> Option<i64> {
    let now = now();
    let get = |ty: D, idx: u16| freq::read(&t.layout, &e.data(), ty, idx, tick(now));
    let v = match r {
        ScRead::Data(D::Gpc0) => get_gpc(t, e, 0, false, false),
        ScRead::Data(D::Gpc1) => get_gpc(t, e, 1, false, false),
        ScRead::Data(D::Gpc0Rate) => get_gpc(t, e, 0, false, true),
        ScRead::Data(D::Gpc1Rate) => get_gpc(t, e, 1, false, true),
        ScRead::Data(D::Gpt0) => {
            let (ty, i) = gpt_target(t, 0, false);
            get(ty, i)
        }
        ScRead::Data(ty) => get(ty, 0),
        ScRead::Elem(ty, idx) => get(ty, idx as u16),
        ScRead::KBytes { out } => {
            get(if out { D::BytesOutCnt } else { D::BytesInCnt }, 0).map(|b| b >> 10)
        }
        ScRead::IncGpc(idx, array) => inc_gpc(t, e, idx, array),
        ScRead::ClrGpc(idx, array) => {
            let (ty, i) = gpc_target(t, idx, array, false);
            let mut w = e.data();
            let old = freq::read(&t.layout, &w, ty, i, tick(now));
            freq::set(&t.layout, &mut w, ty, i, 0);
            old
        }
        ScRead::Trackers => Some(u64::from(e.trackers.load(std::sync::atomic::Ordering::Relaxed))),
        ScRead::UpdtConnCnt => {
            t.add(e, &[(D::ConnCnt, 1)]);
            get(D::ConnCnt, 0)
        }
        ScRead::Tracked => Some(1),
    };
    v.map(|v| v as i64)
}

fn get_gpc(t: &Table, e: &Entry, idx: u32, array: bool, rate: bool) -> Option<u64> {
    let (ty, i) = gpc_target(t, idx, array, rate);
    freq::read(&t.layout, &e.data(), ty, i, tick(now()))
}

/// Fetches creating the client's entry when it has none (`src_inc_gpc0`, `src_clr_gpc0`,
/// `src_updt_conn_cnt`), as HAProxy's `smp_create_src_stkctr`.
fn creates(r: ScRead) -> bool {
    matches!(r, ScRead::IncGpc(..) | ScRead::ClrGpc(..) | ScRead::UpdtConnCnt)
}

/// Evaluates a stick-counter fetch (`table`: the one resolved at compile time, if any).
pub fn fetch<'a>(f: &cfg::Fetch, table: Option<&Arc<Table>>, ctx: &Ctx<'_>) -> Option<Value<'a>> {
    match f {
        cfg::Fetch::TableSize { used, .. } => {
            let t = table?;
            let n = t.used();
            Some(Value::Int(if *used { n.into() } else { i64::from(t.size.saturating_sub(n)) }))
        }
        cfg::Fetch::Sc(sc) => match &sc.src {
            ScSource::Src { .. } => {
                let t = table?;
                let src = ctx.src?;
                let key = key_of(t.key, &Value::Ip(super::sample::canonical(src.ip())))?;
                let entry = if creates(sc.read) {
                    t.get_or_create(key, now())
                } else {
                    t.lookup(&key, now())
                };
                match (entry, sc.read) {
                    (_, ScRead::Tracked) => None,
                    (Some(e), r) => read(t, &e, r).map(Value::Int),
                    // No entry: 0, whatever is asked.
                    (None, _) => Some(Value::Int(0)),
                }
            }
            ScSource::Slot { slot, .. } => {
                let tracked = ctx.vars.sc.as_ref().and_then(|s| s.slot(*slot));
                if sc.read == ScRead::Tracked {
                    return Some(Value::Bool(tracked.is_some()));
                }
                let tracked = tracked?;
                match table {
                    // Another table: the same key there.
                    Some(t) => match t.lookup(&tracked.entry.key, now()) {
                        Some(e) => read(t, &e, sc.read).map(Value::Int),
                        None => Some(Value::Int(0)),
                    },
                    None => read(&tracked.table, &tracked.entry, sc.read).map(Value::Int),
                }
            }
        },
        _ => None,
    }
}

/// Evaluates a table converter on a sample.
pub fn convert<'a>(what: TableConv, t: &Table, v: &Value<'_>) -> Option<Value<'a>> {
    let key = key_of(t.key, v)?;
    let now = now();
    let e = t.lookup(&key, now);
    let read_of = |r: ScRead| -> Option<Value<'a>> {
        match &e {
            Some(e) => read(t, e, r).map(Value::Int),
            None => Some(Value::Int(0)),
        }
    };
    match what {
        TableConv::In => Some(Value::Bool(e.is_some())),
        TableConv::Data(ty) => read_of(ScRead::Data(ty)),
        TableConv::Elem(ty, i) => read_of(ScRead::Elem(ty, i)),
        TableConv::KBytes { out } => read_of(ScRead::KBytes { out }),
        // HAProxy counts its own lookup among the trackers.
        TableConv::Trackers => read_of(ScRead::Trackers)
            .map(|v| Value::Int(v.as_int().unwrap_or(0) + i64::from(e.is_some()))),
        TableConv::Expire => {
            let e = e?;
            t.expires_in(&e, now).map(|ms| Value::Int(ms as i64))
        }
        TableConv::Idle => e.map(|e| Value::Int((now.saturating_sub(e.touched()) / 1000) as i64)),
    }
}

/// A compiled `stick on|match|store-request|store-response` rule.
#[derive(Debug)]
pub struct StickRule {
    pub kind: cfg::StickKind,
    pub key: Expr,
    pub table: Arc<Table>,
    pub cond: Option<super::Cond>,
}

/// Keys waiting for the server a stream ends up on (`stick store-*`): one per table.
pub type Stores = Vec<(Arc<Table>, Key)>;

fn pending(stores: &Stores, t: &Arc<Table>) -> bool {
    stores.iter().any(|(s, _)| Arc::ptr_eq(s, t))
}

/// The request side of stick rules: touches every entry a `stick on|match` rule finds and
/// returns the server the first one names when it is up (drained ones too), unless a server
/// is `assigned` already (a persistence cookie); notes the keys `stick on|store-request`
/// will store.
pub fn on_request(
    rules: &[StickRule],
    acls: &super::Acls,
    ctx: &Ctx<'_>,
    be: &dyn super::view::BackendView,
    (assigned, down_ok): (bool, bool),
    stores: &mut Stores,
) -> Option<usize> {
    let mut chosen = None;
    for r in rules.iter().filter(|r| r.kind != cfg::StickKind::StoreResponse) {
        let store = matches!(r.kind, cfg::StickKind::On | cfg::StickKind::StoreRequest);
        let matching = matches!(r.kind, cfg::StickKind::On | cfg::StickKind::Match);
        if store && !matching && pending(stores, &r.table) {
            continue; // one store per table, its condition not even evaluated
        }
        if !super::holds(&r.cond, acls, ctx) {
            continue;
        }
        let Some(key) = r.key.eval(ctx).and_then(|v| key_of(r.table.key, &v)) else {
            continue;
        };
        if matching {
            if let Some(e) = r.table.lookup(&key, now()) {
                e.touch(now());
                if chosen.is_none() && !assigned {
                    chosen = server_of(&r.table, &e, be, down_ok);
                }
            }
        }
        if store && !pending(stores, &r.table) {
            stores.push((r.table.clone(), key));
        }
    }
    chosen
}

/// The server an entry names in `be`: by name (`server_key`) when stored, else by id.
fn server_of(
    t: &Table,
    e: &Entry,
    be: &dyn super::view::BackendView,
    down_ok: bool,
) -> Option<usize> {
    let servers = be.servers();
    let w = e.data();
    let by_name = freq::read(&t.layout, &w, D::ServerKey, 0, 0)
        .filter(|k| *k != 0)
        .and_then(crate::stick::dict::name)
        .and_then(|n| servers.iter().position(|s| *s.name == *n));
    let idx = by_name.or_else(|| {
        let id = freq::read(&t.layout, &w, D::ServerId, 0, 0)? as u32;
        servers.iter().position(|s| s.id == id)
    })?;
    (down_ok || servers[idx].is_up()).then_some(idx)
}

/// The response side: keys of `stick store-response` rules (one per table among them).
pub fn on_response(rules: &[StickRule], acls: &super::Acls, ctx: &Ctx<'_>, stores: &mut Stores) {
    let mut seen: Vec<&Arc<Table>> = Vec::new();
    for r in rules.iter().filter(|r| r.kind == cfg::StickKind::StoreResponse) {
        if seen.iter().any(|t| Arc::ptr_eq(t, &r.table)) || !super::holds(&r.cond, acls, ctx) {
            continue;
        }
        if let Some(key) = r.key.eval(ctx).and_then(|v| key_of(r.table.key, &v)) {
            seen.push(&r.table);
            stores.push((r.table.clone(), key));
        }
    }
}

/// Stores the pending keys with the server the stream went to (its id and name).
pub fn commit(stores: &mut Stores, server: &crate::server::Server) {
    if server.non_stick {
        return stores.clear(); // (`non-stick`: nothing is stored for its streams)
    }
    for (t, key) in stores.drain(..) {
        let now = now();
        let Some(e) = t.get_or_create(key, now) else { continue };
        {
            let mut w = e.data();
            freq::set(&t.layout, &mut w, D::ServerId, 0, u64::from(server.id));
            freq::set(&t.layout, &mut w, D::ServerKey, 0, crate::stick::dict::intern(&server.name));
        }
        e.touch(now);
    }
}

/// Converts a sample to a key of type `t`, as HAProxy's `smp_to_stkey` does; `None` when
/// it does not convert (an IPv6 address into an `ip` table, text into an `integer` one).
pub fn key_of(t: TableKey, v: &Value<'_>) -> Option<Key> {
    Some(match t {
        TableKey::Ip => match v.as_ip()? {
            IpAddr::V4(a) => Key::V4(a.octets()),
            IpAddr::V6(a) => Key::V4(a.to_ipv4_mapped()?.octets()),
        },
        TableKey::Ipv6 => match v.as_ip()? {
            IpAddr::V4(a) => Key::V6(a.to_ipv6_mapped().octets()),
            IpAddr::V6(a) => Key::V6(a.octets()),
        },
        TableKey::Integer => match v {
            Value::Ip(_) => return None,
            v => Key::Int(v.as_int()? as i32),
        },
        TableKey::String { len } => {
            let b = v.as_bytes();
            Key::Bytes(b[..b.len().min(len)].into())
        }
        TableKey::Binary { len } => {
            let b = match v {
                Value::Int(i) => std::borrow::Cow::Owned(i.to_be_bytes().to_vec()),
                Value::Ip(IpAddr::V4(a)) => std::borrow::Cow::Owned(a.octets().to_vec()),
                Value::Ip(IpAddr::V6(a)) => std::borrow::Cow::Owned(a.octets().to_vec()),
                v => v.as_bytes(),
            };
            let mut k = vec![0u8; len];
            let n = b.len().min(len);
            k[..n].copy_from_slice(&b[..n]);
            Key::Bytes(k.into())
        }
    })
}

/// Parses a key typed on the runtime API (`show table t key <k>`).
pub fn parse_key(t: TableKey, text: &str) -> Option<Key> {
    let v = match t {
        TableKey::Ip | TableKey::Ipv6 => Value::Ip(text.parse().ok()?),
        TableKey::Integer => Value::Int(text.parse::<i32>().ok()?.into()),
        TableKey::String { .. } => Value::Str(text.as_bytes().into()),
        TableKey::Binary { .. } => Value::Str(hex(text)?.into()),
    };
    key_of(t, &v)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_convert_as_haproxy_converts_samples() {
        let v6: Value = Value::Ip("::ffff:1.2.3.4".parse().expect("address"));
        assert_eq!(key_of(TableKey::Ip, &v6), Some(Key::V4([1, 2, 3, 4])));
        let pure6: Value = Value::Ip("2001:db8::1".parse().expect("address"));
        assert_eq!(key_of(TableKey::Ip, &pure6), None);
        let v4: Value = Value::Ip("1.2.3.4".parse().expect("address"));
        assert_eq!(parse_key(TableKey::Ipv6, "1.2.3.4"), key_of(TableKey::Ipv6, &v4));
        let long: Value = Value::Str(b"abcdef".as_slice().into());
        assert_eq!(
            key_of(TableKey::String { len: 3 }, &long),
            Some(Key::Bytes(b"abc".as_slice().into()))
        );
        assert_eq!(
            key_of(TableKey::Binary { len: 8 }, &long),
            Some(Key::Bytes(b"abcdef\0\0".as_slice().into()))
        );
        assert_eq!(key_of(TableKey::Integer, &long), None);
        assert_eq!(key_of(TableKey::Integer, &Value::Int(-7)), Some(Key::Int(-7)));
    }
}
