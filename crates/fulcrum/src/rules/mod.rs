//! ACLs, conditions, log-format strings and rules, compiled once at start-up from the config
//! model and evaluated per transaction.
//!
//! An ACL is a sample expression plus an indexed pattern set (`fulcrum-pattern`), so matching
//! a value against thousands of patterns costs one lookup, not one comparison per pattern.
//! Conditions refer to ACLs by index. Actions that only edit the request or response head are
//! applied here; actions that answer the client (deny, return, redirect) or wait for data are
//! handed back to the session as a [`Verdict`].
//!
//! The proxies hold their compiled rules, so the rules sit below them and read them only
//! through the traits of [`view`] (`fe_conn`, `nbsrv`, `be_name`, `%b`...).
//!
//! Must not touch: sockets, server choice, the proxies' types.

pub mod acl_sets;
mod base;
pub mod check;
mod compile;
mod cond;
pub mod convert;
pub mod convert_text;
pub mod digest;
pub mod fcgi;
pub mod format;
pub mod jwt;
mod live;
pub mod maps;
mod nested;
pub mod origin;
pub mod refs;
pub mod room;
pub mod sample;
pub mod spoe;
pub mod stick;
pub mod trace;
pub mod vars;
pub mod view;

use crate::cache;
use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_http::Head;
use fulcrum_pattern::{PatternSet, Replace};

use sample::{Ctx, Expr, Value, Vars};

pub use crate::rules::format::Format;
pub use base::Base;
pub use compile::Compiler;
pub use cond::{holds, Acl, AclId, AclInfo, Acls, Cond};

/// A reply the proxy builds itself (`return`, `deny`, `http-error`).
#[derive(Debug)]
pub struct ReplySpec {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: ReplyBody,
    pub headers: Vec<(String, Format)>,
}

#[derive(Debug)]
pub enum ReplyBody {
    None,
    Bytes(Arc<[u8]>),
    Format(Format),
    /// The proxy's error message for the status (a raw response, sent as is).
    ErrorMessage,
    /// A whole raw response (`errorfile`, `errorfiles` replies), sent as is.
    Message(Arc<[u8]>),
}

/// What a redirect produces.
#[derive(Debug)]
pub struct RedirectSpec {
    pub kind: cfg::RedirectKind,
    pub value: Format,
    pub code: u16,
    pub drop_query: bool,
    pub append_slash: bool,
    /// `ignore-empty`: skipped when `value` renders empty.
    pub ignore_empty: bool,
}

impl RedirectSpec {
    /// `ignore-empty` and the value renders empty: the rule does nothing.
    pub fn skipped(&self, ctx: &sample::Ctx<'_>) -> bool {
        self.ignore_empty && self.value.render_vec(ctx).is_empty()
    }
}

/// `set-bandwidth-limit`'s filter, and what the stream's limit comes from: a shared filter's
/// key (and its table's key type), a per-stream filter's own limit and period.
#[derive(Debug)]
pub struct SetBwlim {
    pub filter: std::sync::Arc<crate::bwlim::Filter>,
    pub key: Option<(Expr, cfg::TableKey)>,
    pub limit: Option<Amount>,
    pub period: Option<Amount>,
}

/// A number given as a constant or computed per stream.
#[derive(Debug)]
pub enum Amount {
    Const(u32),
    Expr(Expr),
}

/// A compiled rule action.
#[derive(Debug)]
pub enum Action {
    Allow,
    /// `use-service prometheus-exporter`.
    Prometheus,
    /// `http-request cache-use`: the request looked up in the cache (a hit is answered from
    /// it once the request analysers are done).
    CacheUse(std::sync::Arc<crate::cache::Cache>),
    /// `http-response cache-store`: the response stored as it passes, when it may be.
    CacheStore(std::sync::Arc<crate::cache::Cache>),
    /// `set-bandwidth-limit` (HAProxy 2.7): the filter limits this stream's payload from now
    /// on (see `crate::bwlim`).
    SetBandwidthLimit(Box<SetBwlim>),
    Deny {
        status: u16,
        reply: Option<ReplySpec>,
    },
    Return(ReplySpec),
    Redirect(RedirectSpec),
    SetHeader {
        name: Box<[u8]>,
        value: Format,
    },
    AddHeader {
        name: Box<[u8]>,
        value: Format,
    },
    DelHeader {
        name: Box<[u8]>,
        /// `-m beg|end|sub|reg`; `None`: the whole name.
        how: Option<DelMatch>,
    },
    ReplaceHeader {
        name: Box<[u8]>,
        re: Replace,
        with: Format,
    },
    ReplaceValue {
        name: Box<[u8]>,
        re: Replace,
        with: Format,
    },
    SetPath(Format),
    SetPathQ(Format),
    SetQuery(Format),
    SetUri(Format),
    SetMethod(Format),
    ReplaceUri {
        re: Replace,
        with: Format,
    },
    ReplacePath {
        re: Replace,
        with: Format,
    },
    ReplacePathQ {
        re: Replace,
        with: Format,
    },
    SetVar {
        scope: cfg::VarScope,
        name: Box<str>,
        expr: Expr,
        conds: u8,
    },
    UnsetVar {
        scope: cfg::VarScope,
        name: Box<str>,
    },
    WaitForBody {
        time: std::time::Duration,
        at_least: Option<u64>,
    },
    /// `send-spoe-group`: the proxy's engine at `engine`, its group at `group`.
    SendSpoeGroup {
        engine: usize,
        group: usize,
    },
    /// `lua.<name> [<arg>...]`: a script's action.
    Lua {
        name: Box<str>,
        args: Box<[String]>,
    },
    SetStatus {
        status: u16,
        reason: Option<Box<[u8]>>,
    },
    StrictMode(bool),
    SetVarFmt {
        scope: cfg::VarScope,
        name: Box<str>,
        fmt: Format,
        conds: u8,
    },
    Tarpit {
        status: u16,
    },
    /// `reject` and `silent-drop`: close without an answer.
    Drop,
    /// `http-request capture` / `http-response capture` into slot `id`.
    Capture {
        expr: Expr,
        id: u32,
    },
    EarlyHint {
        name: Box<[u8]>,
        value: Format,
    },
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`.
    Stick(stick::StickAct),
    /// `set-src`, `set-src-port`, `set-dst`, `set-dst-port`.
    SetAddr {
        part: cfg::AddrPart,
        expr: Expr,
    },
    /// `http-request auth`: the realm (the proxy's name by default).
    Auth {
        realm: Box<str>,
    },
}

#[derive(Debug)]
pub struct Rule {
    pub action: Action,
    pub cond: Option<Cond>,
    /// Where it was written ([`origin`]), for `last_rule_file|line`.
    pub at: u32,
}

/// How a rule list ended for the session.
#[derive(Debug)]
pub enum Verdict<'r> {
    /// All rules ran (or `allow` stopped them): go on.
    Continue,
    /// Answer the client with a status (the proxy's message for it), `deny`.
    Deny(u16, Option<&'r ReplySpec>),
    Return(&'r ReplySpec),
    Redirect(&'r RedirectSpec),
    /// A rewrite produced an invalid message.
    RewriteFailed,
    /// `tarpit`: hold the connection for `timeout tarpit`, then answer with the status.
    Tarpit(u16),
    /// `reject` / `silent-drop`: close the connection without an answer.
    Drop,
    /// `use-service prometheus-exporter`: answer with the metrics.
    Prometheus,
    /// `auth`: 401 asking for credentials in this realm.
    Auth(&'r str),
    /// `wait-for-body`: the session buffers the body then runs the rules again from `resume`.
    WaitForBody {
        time: std::time::Duration,
        at_least: Option<u64>,
        resume: usize,
    },
    /// `send-spoe-group`: the session sends the group's messages to the proxy's engine at
    /// `engine` (`ProxyRules::spoe`), then runs the rules again from `resume`.
    Spoe {
        engine: usize,
        group: usize,
        resume: usize,
    },
    /// `lua.<name>`: the session runs the script's action, then the rules again from `resume`.
    Lua {
        name: &'r str,
        args: &'r [String],
        resume: usize,
    },
}

/// A rule's condition judged for a trace: the rule, then each ACL evaluated.
#[cold]
fn traced(
    rule: &Rule,
    acls: &Acls,
    base: &Base<'_>,
    (head, req): (&Head, Option<&Head>),
    vars: &mut Vars,
) -> bool {
    let mut acl_steps = Vec::new();
    let ctx = base.ctx(head, req, vars);
    let hold = rule.cond.as_ref().is_none_or(|c| c.eval_traced(acls, &ctx, &mut acl_steps));
    if let Some(t) = vars.trace.as_deref_mut() {
        t.rule(rule.at, hold);
        t.steps.append(&mut acl_steps);
    }
    hold
}

/// Runs `rules[start..]`, editing `head` (the request, or the response when `req` is given)
/// in place; later rules see earlier edits.
#[allow(clippy::too_many_arguments)]
pub fn run<'r>(
    rules: &'r [Rule],
    start: usize,
    acls: &Acls,
    base: &Base<'_>,
    head: &mut Head,
    req: Option<&Head>,
    vars: &mut Vars,
    scratch: &mut Vec<u8>,
) -> Verdict<'r> {
    for (i, rule) in rules.iter().enumerate().skip(start) {
        let hold = match vars.trace.is_some() {
            false => holds(&rule.cond, acls, &base.ctx(head, req, vars)),
            true => traced(rule, acls, base, (head, req), vars),
        };
        if !vars.pending.get_mut().is_empty() {
            vars.flush(); // `set-var()` converters in the condition
        }
        if !hold {
            continue;
        }
        if rule.action.is_final() {
            vars.last_rule = rule.at;
        }
        match &rule.action {
            Action::Allow => return Verdict::Continue,
            Action::Prometheus => return Verdict::Prometheus,
            Action::Auth { realm } => return Verdict::Auth(realm),
            Action::Deny { status, reply } => return Verdict::Deny(*status, reply.as_ref()),
            Action::Return(r) => return Verdict::Return(r),
            Action::Redirect(r) if r.skipped(&base.ctx(head, req, vars)) => {}
            Action::Redirect(r) => return Verdict::Redirect(r),
            Action::WaitForBody { time, at_least } => {
                return Verdict::WaitForBody { time: *time, at_least: *at_least, resume: i + 1 }
            }
            Action::SendSpoeGroup { engine, group } => {
                return Verdict::Spoe { engine: *engine, group: *group, resume: i + 1 }
            }
            Action::Lua { name, args } => return Verdict::Lua { name, args, resume: i + 1 },
            Action::SetVar { scope, name, expr, conds } => {
                let v = expr.eval(&base.ctx(head, req, vars)).map(Value::into_owned);
                vars.flush();
                if let Some(v) = v {
                    set_var(base.proc_vars, vars, *scope, name, v, *conds);
                }
            }
            Action::UnsetVar { scope, name } => {
                if *scope == cfg::VarScope::Proc {
                    base.proc_vars.unset(name);
                } else {
                    vars.unset(*scope, name);
                }
            }
            Action::StrictMode(on) => vars.strict_off = !on,
            Action::SetVarFmt { scope, name, fmt, conds } => {
                scratch.clear();
                fmt.render(&base.ctx(head, req, vars), None, scratch);
                vars.flush();
                let v = Value::Str(std::borrow::Cow::Owned(scratch.clone()));
                set_var(base.proc_vars, vars, *scope, name, v, *conds);
            }
            Action::Tarpit { status } => return Verdict::Tarpit(*status),
            Action::Drop => return Verdict::Drop,
            Action::CacheUse(c) => {
                cache::use_cache(c, head, cache::txn(&mut vars.cache), base.backend.is_none())
            }
            Action::CacheStore(c) => cache::store_response(c, req, head, &mut vars.cache),
            Action::SetBandwidthLimit(b) => {
                let eval =
                    |e: &Expr, v: &Vars| e.eval(&base.ctx(head, req, v)).map(Value::into_owned);
                set_bandwidth_limit(b, vars, &eval);
            }
            Action::Capture { expr, id } => {
                let v = expr.eval(&base.ctx(head, req, vars)).map(|v| v.as_bytes().into_owned());
                if let Some(v) = v {
                    vars.caps.store(req.is_some(), *id, &v);
                }
            }
            Action::SetAddr { part, expr } => {
                let ctx = base.ctx(head, req, vars);
                let addrs = (ctx.src, ctx.dst);
                if let Some(v) = expr.eval(&ctx).map(Value::into_owned) {
                    vars.set_addr(*part, &v, addrs, false);
                }
            }
            Action::Stick(a) => {
                let eval =
                    |e: &Expr, v: &Vars| e.eval(&base.ctx(head, req, v)).map(Value::into_owned);
                stick::apply(a, vars, stick::Level::Http, &eval);
            }
            Action::EarlyHint { name, value } => {
                // HAProxy: a conditional early-hint rule starts a new 103; an unconditional
                // one joins the previous. Groups are separated by a NUL (never in a header).
                if rule.cond.is_some() && !vars.early_hints.is_empty() {
                    vars.early_hints.push(0);
                }
                scratch.clear();
                value.render(&base.ctx(head, req, vars), None, scratch);
                vars.early_hints.extend_from_slice(name);
                vars.early_hints.extend_from_slice(b": ");
                vars.early_hints.extend_from_slice(scratch);
                vars.early_hints.extend_from_slice(b"\r\n");
            }
            action => {
                scratch.clear();
                if edit(action, head, req, vars, base, scratch).is_err() && !vars.strict_off {
                    // HAProxy's `strict-mode` (on by default): a failed rewrite fails the
                    // transaction (500 on requests, 502 on responses).
                    return Verdict::RewriteFailed;
                }
            }
        }
    }
    Verdict::Continue
}

/// `set-bandwidth-limit`: the stream's limit of the filter starts again (HAProxy's
/// `bwlim_set_limit()`); a shared filter whose key gives nothing for this stream, nothing.
fn set_bandwidth_limit(
    b: &SetBwlim,
    vars: &mut Vars,
    eval: &dyn Fn(&Expr, &Vars) -> Option<Value<'static>>,
) {
    let amount = |a: &Option<Amount>| match a {
        Some(Amount::Const(n)) => Some(*n),
        Some(Amount::Expr(e)) => eval(e, vars)
            .and_then(|v| v.as_int())
            .filter(|&n| n > 0)
            .map(|n| n.min(i64::from(u32::MAX)) as u32),
        None => None,
    };
    let (limit, period) = (amount(&b.limit), amount(&b.period));
    let entry = match (&b.key, &b.filter.table) {
        (Some((key, kt)), Some(t)) => {
            let Some(k) = eval(key, vars).and_then(|v| stick::key_of(*kt, &v)) else { return };
            let Some(e) = t.get_or_create(k, crate::stick::now()) else { return };
            Some(e)
        }
        _ => None,
    };
    vars.bwlim.get_or_insert_with(Box::default).enable(&b.filter, entry, limit, period);
}

/// Applies a head-editing action.
fn edit(
    action: &Action,
    head: &mut Head,
    req: Option<&Head>,
    vars: &Vars,
    base: &Base<'_>,
    out: &mut Vec<u8>,
) -> Result<(), fulcrum_http::EditError> {
    let render = |f: &Format, head: &Head, out: &mut Vec<u8>| {
        f.render(&base.ctx(head, req, vars), None, out);
    };
    match action {
        Action::SetHeader { name, value } => {
            render(value, head, out);
            let removed: usize = head
                .headers()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(n, v)| room::field_len(n, v))
                .sum();
            if !fits(head, removed, room::field_len(name, out), base) {
                return Err(fulcrum_http::EditError::TooLarge);
            }
            head.set_header(name, out)?;
        }
        Action::AddHeader { name, value } => {
            render(value, head, out);
            if !fits(head, 0, room::field_len(name, out), base) {
                return Err(fulcrum_http::EditError::TooLarge);
            }
            head.add_header(name, out)?;
        }
        Action::DelHeader { name, how: None } => {
            head.remove_header(name);
        }
        Action::DelHeader { name, how: Some(how) } => {
            head.retain_headers(|n, _| !how.matches(name, n));
        }
        Action::ReplaceHeader { name, re, with } | Action::ReplaceValue { name, re, with } => {
            let per_value = matches!(action, Action::ReplaceValue { .. });
            render(with, head, out);
            let with = std::mem::take(out);
            let mut edits: Vec<(usize, Vec<u8>)> = Vec::new();
            for (i, (n, v)) in head.headers().enumerate() {
                if !n.eq_ignore_ascii_case(name) {
                    continue;
                }
                let mut new = Vec::new();
                let changed = if per_value {
                    // Each value is replaced in place; the separators between them are kept.
                    let mut any = false;
                    let mut copied = 0;
                    let base = v.as_ptr() as usize;
                    let mut one = Vec::new();
                    for part in fulcrum_http::comma_values(v) {
                        let at = (part.as_ptr() as usize).saturating_sub(base).min(v.len());
                        if re.replace(part, &with, &mut one) {
                            any = true;
                            new.extend_from_slice(&v[copied..at]);
                            new.extend_from_slice(&one);
                            copied = at + part.len();
                        }
                    }
                    new.extend_from_slice(&v[copied..]);
                    any
                } else {
                    re.replace(v, &with, &mut new)
                };
                if changed {
                    edits.push((i, new));
                }
            }
            for (i, v) in edits {
                head.set_header_value_at(i, &v)?;
            }
        }
        Action::SetPath(f) => {
            render(f, head, out);
            set_path_raw(head, out)?;
        }
        Action::SetPathQ(f) => {
            render(f, head, out);
            set_pathq(head, out)?;
        }
        Action::SetQuery(f) => {
            render(f, head, out);
            let q = out.strip_prefix(b"?").unwrap_or(out);
            head.set_query(if q.is_empty() && out.is_empty() { None } else { Some(q) })?;
        }
        Action::SetUri(f) => {
            render(f, head, out);
            head.set_target(out)?;
        }
        Action::SetMethod(f) => {
            render(f, head, out);
            head.set_method(out)?;
        }
        Action::ReplaceUri { re, with } => {
            render(with, head, out);
            let with = std::mem::take(out);
            let mut new = Vec::new();
            if re.replace(head.target(), &with, &mut new) {
                head.set_target(&new)?;
            }
        }
        Action::ReplacePath { re, with } => {
            render(with, head, out);
            let with = std::mem::take(out);
            let mut new = Vec::new();
            if re.replace(head.path(), &with, &mut new) {
                set_path_raw(head, &new)?;
            }
        }
        Action::ReplacePathQ { re, with } => {
            render(with, head, out);
            let with = std::mem::take(out);
            let mut new = Vec::new();
            if re.replace(sample::pathq(head), &with, &mut new) {
                set_pathq(head, &new)?;
            }
        }
        Action::SetStatus { status, reason } => head.set_status(*status, reason.as_deref())?,
        _ => {}
    }
    Ok(())
}

/// `proc.` variables are shared by the process; the other scopes live with the session.
fn set_var(
    proc_vars: &sample::ProcVars,
    vars: &mut Vars,
    scope: cfg::VarScope,
    name: &str,
    v: Value<'static>,
    conds: u8,
) {
    if scope == cfg::VarScope::Proc {
        proc_vars.set_if(name, v, conds);
    } else {
        vars.set_if(scope, name, v, conds);
    }
}

/// How `del-header -m` compares names (case-insensitively; a regex sees the name in lower
/// case, as HAProxy stores names).
#[derive(Debug)]
pub enum DelMatch {
    Beg,
    End,
    Sub,
    Reg(fulcrum_pattern::Rx),
}

impl DelMatch {
    fn matches(&self, pattern: &[u8], name: &[u8]) -> bool {
        let p = pattern.len();
        match self {
            DelMatch::Beg => name.len() >= p && name[..p].eq_ignore_ascii_case(pattern),
            DelMatch::End => {
                name.len() >= p && name[name.len() - p..].eq_ignore_ascii_case(pattern)
            }
            DelMatch::Sub => p == 0 || name.windows(p).any(|w| w.eq_ignore_ascii_case(pattern)),
            DelMatch::Reg(re) => re.is_match(&name.to_ascii_lowercase()),
        }
    }
}

/// The size of the head as it would be written.
/// Whether `head` less `removed` plus `added` bytes (HTX form) still fits in the buffer with
/// the body data there.
fn fits(head: &Head, removed: usize, added: usize, base: &Base<'_>) -> bool {
    let used = room::HTX_HEADER + room::head_len(head) - removed + added + base.data_htx;
    used <= base.max_head
}

/// A compiled `tcp-request` rule.
#[derive(Debug)]
pub struct TcpRule {
    pub act: TcpAct,
    pub cond: Option<Cond>,
    /// Where it was written ([`origin`]).
    pub at: u32,
}

impl Action {
    /// The action ends its rule list (HAProxy then notes the rule as the stream's last).
    fn is_final(&self) -> bool {
        matches!(
            self,
            Action::Allow
                | Action::Prometheus
                | Action::Auth { .. }
                | Action::Deny { .. }
                | Action::Return(_)
                | Action::Redirect(_)
                | Action::Tarpit { .. }
                | Action::Drop
        )
    }
}

#[derive(Debug)]
pub enum TcpAct {
    Accept,
    Reject,
    /// `set-var`, `set-var-fmt`, `unset-var`, stick-counter actions.
    Do(Action),
}

/// Runs a `tcp-request connection|session|content` rule list: false when it rejects.
/// `template` is what the rules see but for the variables (the session's, in `vars`).
pub fn tcp_run(
    list: &[TcpRule],
    acls: &Acls,
    template: &Ctx<'_>,
    vars: &mut Vars,
    level: stick::Level,
) -> bool {
    let final_ctx = Ctx { more: None, ..*template };
    tcp_eval(list, 0, acls, &final_ctx, vars, level) != TcpVerdict::Reject
}

/// Where a `tcp-request content` or `tcp-response content` list stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpVerdict {
    /// An `accept`, or the end of the list.
    Accept,
    Reject,
    /// The rule at this index cannot be decided before more data or the end of the delay
    /// (only when `template.more` is set); evaluation resumes there.
    Wait(usize),
    /// `send-spoe-group`: the proxy's engine at `engine` is asked about its group at `group`,
    /// then evaluation resumes at `resume`.
    Spoe {
        engine: usize,
        group: usize,
        resume: usize,
    },
}

/// Runs `list` from rule `from`; with `template.more` set, stops at the first rule whose
/// condition is not decided yet (see [`Cond::eval3`]).
pub fn tcp_eval(
    list: &[TcpRule],
    from: usize,
    acls: &Acls,
    template: &Ctx<'_>,
    vars: &mut Vars,
    level: stick::Level,
) -> TcpVerdict {
    for (i, r) in list.iter().enumerate().skip(from) {
        if let Some(c) = &r.cond {
            // Traced (offline, where nothing more can arrive): each ACL evaluated is noted.
            let mut acl_steps = Vec::new();
            let hold = match vars.trace.is_some() && template.more.is_none() {
                false => c.eval3(acls, &template.with_vars(vars)),
                true => Some(c.eval_traced(acls, &template.with_vars(vars), &mut acl_steps)),
            };
            vars.flush(); // `set-var()` converters in the condition
            if let (Some(t), Some(held)) = (vars.trace.as_deref_mut(), hold) {
                t.rule(r.at, held);
                t.steps.append(&mut acl_steps);
            }
            match hold {
                Some(true) => {}
                Some(false) => continue,
                None => return TcpVerdict::Wait(i),
            }
        } else if let Some(t) = vars.trace.as_deref_mut() {
            t.rule(r.at, true);
        }
        match &r.act {
            TcpAct::Accept | TcpAct::Reject if level == stick::Level::Stream => {
                vars.last_rule = r.at;
                return if matches!(r.act, TcpAct::Accept) {
                    TcpVerdict::Accept
                } else {
                    TcpVerdict::Reject
                };
            }
            TcpAct::Accept => return TcpVerdict::Accept,
            TcpAct::Reject => return TcpVerdict::Reject,
            TcpAct::Do(Action::SendSpoeGroup { engine, group }) => {
                return TcpVerdict::Spoe { engine: *engine, group: *group, resume: i + 1 }
            }
            TcpAct::Do(a) => tcp_action(a, template, vars, level),
        }
    }
    TcpVerdict::Accept
}

fn tcp_action(a: &Action, t: &Ctx<'_>, vars: &mut Vars, level: stick::Level) {
    match a {
        Action::SetVar { scope, name, expr, conds } => {
            let v = expr.eval(&t.with_vars(vars)).map(Value::into_owned);
            vars.flush();
            if let Some(v) = v {
                set_var(t.proc_vars, vars, *scope, name, v, *conds);
            }
        }
        Action::SetVarFmt { scope, name, fmt, conds } => {
            let mut out = Vec::new();
            fmt.render(&t.with_vars(vars), None, &mut out);
            vars.flush();
            let v = Value::Str(std::borrow::Cow::Owned(out));
            set_var(t.proc_vars, vars, *scope, name, v, *conds);
        }
        Action::UnsetVar { scope, name } => {
            if *scope == cfg::VarScope::Proc {
                t.proc_vars.unset(name);
            } else {
                vars.unset(*scope, name);
            }
        }
        Action::SetAddr { part, expr } => {
            let ctx = t.with_vars(vars);
            let addrs = (ctx.src, ctx.dst);
            if let Some(v) = expr.eval(&ctx).map(Value::into_owned) {
                vars.set_addr(*part, &v, addrs, level == stick::Level::Session);
            }
        }
        Action::Stick(s) => {
            let eval = |e: &Expr, v: &Vars| e.eval(&t.with_vars(v)).map(Value::into_owned);
            stick::apply(s, vars, level, &eval);
        }
        Action::SetBandwidthLimit(b) => {
            let eval = |e: &Expr, v: &Vars| e.eval(&t.with_vars(v)).map(Value::into_owned);
            set_bandwidth_limit(b, vars, &eval);
        }
        _ => {}
    }
}

/// Replaces the path, keeping the query string; the new path is taken as is (HAProxy escapes
/// nothing, so a `?` in it simply becomes part of the target).
/// Replaces the path and query of the target (keeping an absolute form's scheme and
/// authority).
fn set_pathq(head: &mut Head, pathq: &[u8]) -> Result<(), fulcrum_http::EditError> {
    let t = head.target();
    let keep = t.len() - sample::pathq(head).len();
    let mut target = Vec::with_capacity(keep + pathq.len());
    target.extend_from_slice(&t[..keep]);
    target.extend_from_slice(pathq);
    head.set_target(&target)
}

fn set_path_raw(head: &mut Head, path: &[u8]) -> Result<(), fulcrum_http::EditError> {
    let mut target = Vec::with_capacity(path.len() + 32);
    let t = head.target();
    let p = head.path();
    // Keep what precedes the path in an absolute-form target (scheme and authority).
    let p_at = (p.as_ptr() as usize).checked_sub(t.as_ptr() as usize);
    if let Some(at) = p_at.filter(|&at| at <= t.len() && !p.is_empty()) {
        target.extend_from_slice(&t[..at]);
    }
    target.extend_from_slice(path);
    if let Some(q) = head.query() {
        target.push(b'?');
        target.extend_from_slice(q);
    }
    head.set_target(&target)
}

/// Everything a proxy needs to evaluate its conditions and rules.
#[derive(Debug, Default)]
pub struct ProxyRules {
    pub acls: Acls,
    pub http_request: Vec<Rule>,
    pub http_response: Vec<Rule>,
    pub http_after_response: Vec<Rule>,
    pub redirects: Vec<Rule>,
    pub tcp_connection: Vec<TcpRule>,
    pub tcp_session: Vec<TcpRule>,
    /// `tcp-request connection expect-proxy layer4` conditions.
    pub expect_proxy: Vec<Option<Cond>>,
    /// `tcp-request connection expect-netscaler-cip layer4` conditions.
    pub expect_cip: Vec<Option<Cond>>,
    pub tcp_content: Vec<TcpRule>,
    /// `tcp-response content` rules (backends).
    pub tcp_response: Vec<TcpRule>,
    /// `mode tcp`: a rule reads the request (`req.proto_http`, the `HTTP` ACL, `hdr()`...), so
    /// content inspection reads the first bytes as an HTTP/1 request (`tcp::inspect::raw_http`).
    pub raw_http: bool,
    /// `option http-restrict-req-hdr-names`: 0 preserve, 1 delete, 2 reject.
    pub restrict_hdr_names: u8,
    /// `http-error status <code>` replies with log-format parts (`lf-string`, `lf-file`,
    /// `hdr <name> <fmt>`): rendered for each request that gets the status.
    pub error_replies: Vec<(u16, ReplySpec)>,
    pub monitor_fail: Vec<Cond>,
    /// `force-persist` (true) and `ignore-persist` rules (a backend's), in order.
    pub persist_rules: Vec<(bool, Cond)>,
    /// `use-server` rules (a backend's), in order.
    pub use_servers: Vec<(UseServer, Cond)>,
    /// The proxy's SPOE engines (`filter spoe`), in order.
    pub spoe: Vec<std::sync::Arc<spoe::Engine>>,
    /// `use-fcgi-app`: the application's `set-param` and `pass-header` rules.
    pub fcgi: fcgi::FcgiRules,
    /// `stick on|match|store-*` rules.
    pub stick: Vec<stick::StickRule>,
    /// The statistics page, when the proxy has one.
    pub stats: Option<Box<StatsRules>>,
    /// The frontend's `use_backend` rules (`Frontend::use_backends`) grouped for evaluation:
    /// runs of rules that each test one ACL of the same sample and match method are answered
    /// by one indexed lookup (see [`Segment`]).
    pub switching: Vec<Segment>,
}

/// The server a `use-server` rule names: by its place in the backend, or by a log-format
/// rendered per request.
#[derive(Debug)]
pub enum UseServer {
    Fixed(usize),
    Dynamic(Format),
}

/// The statistics page's settings and its compiled conditions.
#[derive(Debug)]
pub struct StatsRules {
    pub page: cfg::StatsPage,
    /// `stats admin` conditions: any that holds makes the request an administrator's.
    pub admin: Vec<Cond>,
    /// `stats http-request` rules, in order.
    pub http_request: Vec<(cfg::StatsAction, Option<Cond>)>,
}

/// A stretch of `use_backend` rules, in order.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once at start-up, a handful per frontend
pub enum Segment {
    /// Rules evaluated one by one.
    Linear(std::ops::Range<usize>),
    /// Rules that each say `if <one ACL>` over the same sample and match method: their
    /// patterns in one set, in rule order; the first matching pattern names the first
    /// matching rule (HAProxy's order), found with one lookup instead of one per rule.
    Indexed {
        rules: std::ops::Range<usize>,
        expr: Expr,
        method: cfg::MatchMethod,
        set: PatternSet,
        /// `ends[i]`: one past the last pattern id of rule `rules.start + i`.
        ends: Vec<usize>,
    },
}

impl Segment {
    /// The first rule of an indexed segment whose ACL matches, if any.
    pub fn first_indexed(&self, ctx: &Ctx<'_>) -> Option<usize> {
        let Segment::Indexed { rules, expr, method, set, ends } = self else { return None };
        use cfg::MatchMethod as M;
        let mut best: Option<usize> = None;
        let mut note = |id: Option<usize>| {
            if let Some(id) = id {
                best = Some(best.map_or(id, |b| b.min(id)));
            }
        };
        expr.any(ctx, &mut |v| {
            match method {
                M::Int => note(v.as_int().and_then(|i| set.first_match_int(i))),
                M::Len => note(set.first_match_int(v.as_bytes().len() as i64)),
                M::Ip => note(v.as_ip().and_then(|ip| set.first_match_ip(ip))),
                _ => note(set.first_match_str(&v.as_bytes())),
            }
            false // every occurrence may name an earlier rule
        });
        let id = best?;
        let i = ends.partition_point(|&end| end <= id);
        Some(rules.start + i)
    }
}

/// How many consecutive rules make indexing worth it.
const INDEX_MIN_RULES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn frontend_rules(text: &str) -> Vec<Segment> {
        let src = fulcrum_config::Source { name: "t.cfg".into(), text: text.into() };
        let loaded = fulcrum_config::load(&[src], &|_| None).expect("config loads");
        let plan = crate::plan::build(&loaded.config, Default::default()).expect("plan builds");
        let proxies = Arc::try_unwrap(plan.proxies).expect("sole owner");
        let fe = proxies.frontends.into_iter().next().expect("a frontend");
        let fe = Arc::try_unwrap(fe).expect("sole owner");
        fe.rules.switching
    }

    fn kinds(segments: &[Segment]) -> Vec<String> {
        segments
            .iter()
            .map(|s| match s {
                Segment::Linear(r) => format!("linear {}..{}", r.start, r.end),
                Segment::Indexed { rules, .. } => format!("indexed {}..{}", rules.start, rules.end),
            })
            .collect()
    }

    #[test]
    fn runs_of_one_acl_rules_on_the_same_sample_are_indexed_and_others_stay_linear() {
        let mut cfg = String::from(
            "defaults\n mode http\n timeout client 1s\n timeout server 1s\n timeout connect 1s\n\
             frontend fe\n bind 127.0.0.1:1\n",
        );
        for i in 0..5 {
            cfg.push_str(&format!(" use_backend b if {{ path_beg /p{i} }}\n"));
        }
        cfg.push_str(" use_backend b if { hdr(x) a } { path /x }\n");
        for i in 0..3 {
            cfg.push_str(&format!(" use_backend b if {{ path_beg /q{i} }}\n"));
        }
        for i in 0..4 {
            cfg.push_str(&format!(" acl h{i} hdr(host) -i h{i}\n use_backend b if h{i}\n"));
        }
        cfg.push_str(" use_backend b if !{ path /n }\nbackend b\n server s 127.0.0.1:2\n");
        assert_eq!(
            kinds(&frontend_rules(&cfg)),
            ["indexed 0..5", "linear 5..9", "indexed 9..13", "linear 13..14"]
        );
    }
}
