//! Variables: a session's and its transaction's (`sess.`, `txn.`, `req.`, `res.`) with what
//! else lives as long (stick counters, addresses changed by `set-src`/`set-dst`, captures),
//! and the process's (`proc.`).
//!
//! Must not touch: fetching, rules.

use std::collections::HashMap;
use std::net::SocketAddr;

use fulcrum_config as cfg;

use super::sample::Value;

/// A queued store: scope, name, value, conditions.
pub type Store = (cfg::VarScope, Box<str>, Value<'static>, u8);

/// A queued [`Store`] whose conditions are this value unsets its variable (the `unset-var()`
/// converter); no `set-var` condition set is all ones.
pub const UNSET: u8 = u8::MAX;
/// A queued [`Store`] with this value is a capture (`capture-req()`, `capture-res()`): its
/// name is the slot's number, its value the captured sample. (As conditions, `ifexists` with
/// `ifnotexists` never store: the converter queues no such set.)
pub const CAPTURE_REQ: u8 = 3;
pub const CAPTURE_RES: u8 = 7;

/// Variables of a session and of its current transaction (`sess.`, `txn.`, `req.`, `res.`).
/// `proc.` variables live in the plan, shared by all sessions.
#[derive(Default, Debug)]
pub struct Vars {
    /// `None`: the variable exists without a value (created by a `set-var` whose condition
    /// failed), as HAProxy's `SMP_T_ANY`.
    vars: Vec<(cfg::VarScope, Box<str>, Option<Value<'static>>)>,
    /// Stores the `set-var()` converter asked for while `&Vars` was shared (conditions and
    /// fetches run on an immutable context); [`Vars::flush`] applies them in order.
    pub pending: std::cell::RefCell<Vec<Store>>,
    /// `http-request strict-mode off` for this transaction: failed rewrites are ignored.
    pub strict_off: bool,
    /// Header lines `early-hint` rules gathered for a `103 Early Hints` answer.
    pub early_hints: Vec<u8>,
    /// The transaction's captures (`capture request header`, `http-request capture`...).
    pub caps: crate::rules::format::Captures,
    /// The request's `unique-id-format` id, once made (the `unique-id` fetch, the log line).
    pub unique_id: Option<Vec<u8>>,
    /// The transaction is the first of its connection (`http_first_req`).
    pub first_req: bool,
    /// What the session and its stream track in stick tables.
    pub sc: Option<Box<crate::stick::track::Counters>>,
    /// The session's addresses once `set-src`/`set-dst` changed them.
    pub addrs: Option<Box<Addrs>>,
    /// The stream's last final rule (`accept`, `deny`, `allow`...), by its place
    /// (`rules::origin`; 0: none yet): `last_rule_file`, `last_rule_line`.
    pub last_rule: u32,
    /// What the analysers did, when asked (`fulcrum explain`); `None` on live traffic.
    pub trace: Option<Box<super::trace::Trace>>,
    /// The transaction's cache lookups, hit and store (`cache-use`, `cache-store`).
    pub cache: Option<Box<crate::cache::Txn>>,
    /// What each SPOE engine asked in this transaction (see [`SpoeState`]).
    pub spoe_times: Vec<SpoeState>,
    /// The bandwidth limits the transaction enabled (`set-bandwidth-limit`); the session
    /// drops them as the transaction ends (its log line).
    pub bwlim: Option<Box<crate::bwlim::Active>>,
    /// The stream's SPOE engines were asked `on-server-session` (once per stream).
    pub spoe_srv_asked: bool,
}

/// What one SPOE engine asked in a transaction: its processing time so far
/// (`set-total-time`), the frames sent (their ids), and whether an error stopped it for the
/// rest of the transaction (no `continue-on-error`).
#[derive(Default, Debug)]
pub struct SpoeState {
    /// The engine's address (its identity while its plan runs).
    key: usize,
    total: std::time::Duration,
    frames: u64,
    stopped: bool,
}

/// A session's addresses after `set-src`/`set-dst`: the connection's own (`fc_src`, `fc_dst`),
/// the session's (changed by `tcp-request session` rules), and the current stream's (changed
/// by later rules, back to the session's when the stream ends).
#[derive(Debug, Clone, Copy)]
pub struct Addrs {
    pub fc_src: Option<SocketAddr>,
    pub fc_dst: Option<SocketAddr>,
    pub sess_src: Option<SocketAddr>,
    pub sess_dst: Option<SocketAddr>,
    pub src: Option<SocketAddr>,
    pub dst: Option<SocketAddr>,
}

impl Vars {
    /// Changes the stream's (`session`: and the session's) source or destination address or
    /// port, as `set-src` and its siblings do: an address keeps the port when the family
    /// stays, else takes port 0.
    pub fn set_addr(
        &mut self,
        part: cfg::AddrPart,
        v: &Value<'_>,
        (src, dst): (Option<SocketAddr>, Option<SocketAddr>),
        session: bool,
    ) {
        use cfg::AddrPart as P;
        let a = self.addrs.get_or_insert_with(|| {
            Box::new(Addrs { fc_src: src, fc_dst: dst, sess_src: src, sess_dst: dst, src, dst })
        });
        let slot = match part {
            P::Src | P::SrcPort => &mut a.src,
            P::Dst | P::DstPort => &mut a.dst,
        };
        match part {
            P::Src | P::Dst => {
                let Some(ip) = v.as_ip() else { return };
                let port = slot.filter(|o| o.is_ipv4() == ip.is_ipv4()).map_or(0, |o| o.port());
                *slot = Some(SocketAddr::new(ip, port));
            }
            P::SrcPort | P::DstPort => {
                let Some(port) = v.as_int().and_then(|p| u16::try_from(p).ok()) else { return };
                if let Some(o) = slot.as_mut() {
                    o.set_port(port);
                }
            }
        }
        if session {
            (a.sess_src, a.sess_dst) = (a.src, a.dst);
        }
    }
}

impl Vars {
    pub fn get(&self, scope: cfg::VarScope, name: &str) -> Option<&Value<'static>> {
        self.vars
            .iter()
            .find(|(s, n, _)| *s == scope && &**n == name)
            .and_then(|(_, _, v)| v.as_ref())
    }
    /// Whether the variable exists, and its value if it has one.
    pub fn lookup(&self, scope: cfg::VarScope, name: &str) -> (bool, Option<&Value<'static>>) {
        match self.vars.iter().find(|(s, n, _)| *s == scope && &**n == name) {
            Some((_, _, v)) => (true, v.as_ref()),
            None => (false, None),
        }
    }
    /// `set-var(<name>,<conditions>)`: stores `v` unless a condition says no (see [`decide`]).
    pub fn set_if(&mut self, scope: cfg::VarScope, name: &str, v: Value<'static>, conds: u8) {
        let i = self.vars.iter().position(|(s, n, _)| *s == scope && &**n == name);
        let cur = i.and_then(|i| self.vars[i].2.as_ref());
        let (create, store) = decide(i.is_some(), cur, &v, conds);
        let slot = match i {
            Some(i) => &mut self.vars[i].2,
            None if create => {
                self.vars.push((scope, name.into(), None));
                &mut self.vars.last_mut().expect("pushed").2
            }
            None => return,
        };
        if store {
            *slot = Some(v);
        }
    }
    /// Applies the stores the `set-var()` converter queued.
    pub fn flush(&mut self) {
        let queued = std::mem::take(self.pending.get_mut());
        for (scope, name, v, conds) in queued {
            match conds {
                UNSET => self.unset(scope, &name),
                CAPTURE_REQ | CAPTURE_RES => {
                    if let Ok(id) = name.parse::<u32>() {
                        self.caps.store(conds == CAPTURE_RES, id, &v.as_bytes());
                    }
                }
                _ => self.set_if(scope, &name, v, conds),
            }
        }
    }
    pub fn unset(&mut self, scope: cfg::VarScope, name: &str) {
        self.vars.retain(|(s, n, _)| !(*s == scope && &**n == name));
    }
    /// No variable is set. (The per-transaction flags do not count: the next transaction resets
    /// them anyway.)
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
            && self.sc.as_ref().is_none_or(|sc| sc.is_empty())
            && self.addrs.is_none()
            && self.bwlim.is_none()
            && self.spoe_times.is_empty()
    }
    /// What an HTTP/2 stream starts with: the session's variables, addresses and tracked
    /// entries (shared with the connection, see `stick::track::Counters::share`).
    pub fn for_stream(&self) -> Vars {
        let vars =
            self.vars.iter().filter(|(s, _, _)| *s == cfg::VarScope::Sess).cloned().collect();
        Vars {
            vars,
            sc: self.sc.as_ref().map(|c| Box::new(c.share())).filter(|c| !c.is_empty()),
            addrs: self.addrs.clone(),
            ..Vars::default()
        }
    }

    /// Forgets transaction-scoped variables (a new request starts).
    /// Every variable of the session and transaction with its value (`None`: set without
    /// one), in the order they were made.
    pub fn all(&self) -> impl Iterator<Item = (cfg::VarScope, &str, Option<&Value<'static>>)> {
        self.vars.iter().map(|(s, n, v)| (*s, &**n, v.as_ref()))
    }

    fn spoe_state(&mut self, engine: &super::spoe::Engine) -> &mut SpoeState {
        let key = std::ptr::from_ref(engine) as usize;
        match self.spoe_times.iter().position(|e| e.key == key) {
            Some(i) => &mut self.spoe_times[i],
            None => {
                self.spoe_times.push(SpoeState { key, ..SpoeState::default() });
                self.spoe_times.last_mut().expect("pushed")
            }
        }
    }

    /// Adds `took` to `engine`'s processing time in this transaction: the total.
    pub fn spoe_total(
        &mut self,
        engine: &super::spoe::Engine,
        took: std::time::Duration,
    ) -> std::time::Duration {
        let e = self.spoe_state(engine);
        e.total += took;
        e.total
    }

    /// The frame id of `engine`'s next question in this transaction (from 1, as HAProxy's).
    pub fn spoe_frame(&mut self, engine: &super::spoe::Engine) -> u64 {
        let e = self.spoe_state(engine);
        e.frames += 1;
        e.frames
    }

    /// An error stopped `engine` for the rest of the transaction.
    pub fn spoe_stop(&mut self, engine: &super::spoe::Engine) {
        self.spoe_state(engine).stopped = true;
    }

    /// Whether an error stopped `engine` earlier in the transaction.
    pub fn spoe_stopped(&self, engine: &super::spoe::Engine) -> bool {
        let key = std::ptr::from_ref(engine) as usize;
        self.spoe_times.iter().any(|e| e.key == key && e.stopped)
    }

    pub fn end_transaction(&mut self) {
        self.vars.retain(|(s, _, _)| *s == cfg::VarScope::Sess);
        if let Some(a) = self.addrs.as_mut() {
            (a.src, a.dst) = (a.sess_src, a.sess_dst);
        }
        self.strict_off = false;
        self.spoe_srv_asked = false;
        self.last_rule = 0;
        self.early_hints.clear();
        self.unique_id = None;
        self.spoe_times.clear();
        if let Some(c) = self.cache.as_deref_mut() {
            c.reset(); // (kept with its key's room for the connection's next requests)
        }
    }
}

/// What a `set-var` with `conds` does to a variable that exists or not, with the value `cur`:
/// whether it creates the variable (without a value) and whether it stores `new`. HAProxy's
/// `var_set()`: `ifempty`/`ifnotempty` test the new value, `ifgt`/`iflt` compare integers
/// only (`ifgt`: the variable is greater than the new value).
pub fn decide(exists: bool, cur: Option<&Value<'_>>, new: &Value<'_>, conds: u8) -> (bool, bool) {
    use cfg::VarConds as C;
    if conds == 0 {
        return (true, true);
    }
    if exists && conds & C::IFNOTEXISTS != 0 || !exists && conds & C::IFEXISTS != 0 {
        return (false, false);
    }
    let create = !exists;
    let cur = if exists { cur } else { None };
    if conds & C::IFSET != 0 && cur.is_none() || conds & C::IFNOTSET != 0 && cur.is_some() {
        return (create, false);
    }
    let store = match new {
        Value::Str(s) => {
            !(conds & C::IFNOTEMPTY != 0 && s.is_empty()
                || conds & C::IFEMPTY != 0 && !s.is_empty())
        }
        _ if conds & C::IFEMPTY != 0 => false, // a scalar is never empty
        Value::Int(n) => match cur {
            Some(Value::Int(c)) => {
                !(conds & C::IFGT != 0 && c <= n || conds & C::IFLT != 0 && c >= n)
            }
            _ => true,
        },
        _ => true,
    };
    (create, store)
}

/// Process-wide (`proc.`) variables: read-mostly, behind a lock taken only by rules that use
/// them. Every one a configuration names exists from the start (HAProxy creates them while
/// parsing), so a name without a value here exists, unset.
#[derive(Default, Debug)]
pub struct ProcVars(std::sync::RwLock<HashMap<String, Value<'static>>>);

impl ProcVars {
    pub fn set(&self, name: &str, v: Value<'static>) {
        self.set_if(name, v, 0);
    }
    /// `set-var(proc.<name>,<conditions>)`: false when a condition refused the store.
    pub fn set_if(&self, name: &str, v: Value<'static>, conds: u8) -> bool {
        let Ok(mut m) = self.0.write() else { return false };
        let store = decide(true, m.get(name), &v, conds).1;
        if store {
            m.insert(name.to_string(), v);
        }
        store
    }
    pub fn unset(&self, name: &str) {
        if let Ok(mut m) = self.0.write() {
            m.remove(name);
        }
    }
    /// A variable's value (the runtime API's `get var`).
    pub fn get(&self, name: &str) -> Option<Value<'static>> {
        self.0.read().ok()?.get(name).cloned()
    }
}
