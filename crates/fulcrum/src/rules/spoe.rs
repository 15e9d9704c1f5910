//! A proxy's SPOE engines as the plan compiles them (`filter spoe`, HAProxy's
//! `flt_spoe.c`): each agent's settings, its messages with their arguments and conditions
//! compiled, the messages of each event and group; what a transaction sends (a NOTIFY frame's
//! messages, [`Engine::payload`]) and what it does with the answer (an ACK's variables, the
//! error and timing variables, [`Engine::apply`], [`Engine::failed`]).
//!
//! Must not touch: sockets and the agents' connections (`crate::spoe`), the wire format's
//! details (`fulcrum-spop`).

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config as cfg;
use fulcrum_config::spoe::SpoeEvent;
use fulcrum_spop as spop;

use super::cond::{Acls, Cond};
use super::sample::{Ctx, Expr, ProcVars, Value, Vars};
use super::Compiler;

/// One `spoe-message`, compiled.
#[derive(Debug)]
pub struct Message {
    pub name: String,
    /// Each argument's name, sample, and whether the sample is binary (`req.body`).
    pub args: Vec<(String, Expr, bool)>,
    pub cond: Option<Cond>,
    /// The message's own ACLs (its condition's).
    pub acls: Acls,
}

/// One SPOE engine (a `filter spoe` line and its agent).
#[derive(Debug)]
pub struct Engine {
    /// `engine <name>`, else the agent's name: what `send-spoe-group` names.
    pub id: String,
    pub agent: String,
    /// The agent's backend (a `mode tcp` one), found by name in the running plan.
    pub backend: String,
    pub var_prefix: String,
    pub on_error: Option<String>,
    pub process_time: Option<String>,
    pub total_time: Option<String>,
    /// What HAProxy offers in its HELLO (`option pipelining|async`; never fragmentation:
    /// HAProxy 2.6 cannot read fragmented frames).
    pub caps: spop::Caps,
    /// `option send-frag-payload`: a question over the agent's frame size goes in fragments
    /// when the agent can read them (else HAProxy's "too big", error 3).
    pub send_frag: bool,
    pub continue_on_error: bool,
    /// `option force-set-var`: `proc` variables the agent names are created.
    pub force_set_var: bool,
    pub hello: Option<Duration>,
    pub idle: Option<Duration>,
    pub processing: Option<Duration>,
    pub max_conn_rate: u32,
    pub max_err_rate: u32,
    pub max_frame_size: u32,
    pub max_waiting_frames: u32,
    pub messages: Vec<Message>,
    /// The agent's `log` targets: its `SPOE: [...]` lines (`None`: none).
    pub logger: Option<Arc<crate::log::syslog::Logger>>,
    /// `option dontlog-normal`: only the lines of processings that failed.
    pub dontlog_normal: bool,
    /// Processings started and those that failed, by every worker (HAProxy's
    /// `nb_processed` and `nb_errors`, for the log lines; only SPOE processings touch them).
    pub processed: std::sync::atomic::AtomicU64,
    pub failed: std::sync::atomic::AtomicU64,
    /// The messages sent on each event, in `messages` order.
    events: Vec<(SpoeEvent, Vec<usize>)>,
    pub groups: Vec<(String, Vec<usize>)>,
}

/// What an exchange with an agent gave.
#[derive(Debug)]
pub enum Answer {
    /// The ACK's actions.
    Ack(Vec<u8>),
    /// HAProxy's error code for `set-on-error`: 1 a timeout, 3 a frame too big, 256 + the
    /// SPOP status of a connection that failed.
    Failed(u32),
    /// Nothing sent: the agent errs more often than `maxerrrate` allows.
    Skipped,
}

impl Engine {
    /// The messages sent on `ev` (none: the event sends nothing).
    pub fn on(&self, ev: SpoeEvent) -> &[usize] {
        self.events.iter().find(|(e, _)| *e == ev).map_or(&[], |(_, m)| m)
    }

    /// What the log lines name for the messages `which` of this engine: `EVENT:<name>` or
    /// `GROUP:<name>`.
    pub fn label(&self, which: &[usize]) -> String {
        if let Some((ev, _)) = self.events.iter().find(|(_, m)| std::ptr::eq(m.as_slice(), which)) {
            return format!("EVENT:{}", ev.name());
        }
        match self.groups.iter().find(|(_, m)| std::ptr::eq(m.as_slice(), which)) {
            Some((g, _)) => format!("GROUP:{g}"),
            None => "GROUP:?".into(),
        }
    }

    /// The messages of the group at `group`.
    pub fn group(&self, group: usize) -> &[usize] {
        self.groups.get(group).map_or(&[], |(_, m)| m)
    }

    /// A NOTIFY frame's messages for `which` as the transaction `ctx` is now (a message whose
    /// condition fails is left out): `Ok(None)` when none is left, `Err(3)` when they do not
    /// fit a frame and may not go in fragments (HAProxy's "too big"; without `no option
    /// send-frag-payload` the connection decides, once it knows the agent's frame size).
    pub fn payload(&self, which: &[usize], ctx: &Ctx<'_>) -> Result<Option<Vec<u8>>, u32> {
        let mut out = Vec::with_capacity(256);
        for &i in which {
            let m = &self.messages[i];
            if !super::cond::holds(&m.cond, &m.acls, ctx) {
                continue;
            }
            spop::put_message(&mut out, &m.name, m.args.len() as u8);
            for (name, expr, bin) in &m.args {
                let v = expr.eval(ctx);
                spop::put_arg(&mut out, name, &to_spop(v.as_ref(), *bin));
            }
        }
        if out.is_empty() {
            return Ok(None);
        }
        let room = self.max_frame_size.saturating_sub(spop::FRAME_HDR_SIZE);
        if !self.send_frag && out.len() as u32 > room {
            return Err(3);
        }
        Ok(Some(out))
    }

    /// Applies an ACK's actions: each variable named `<scope>.<prefix>.<name>`, a `proc` one
    /// only when it exists already (as HAProxy 2.6), a `Null` value unsetting it.
    pub fn apply(&self, actions: &[u8], vars: &mut Vars, proc_vars: &ProcVars) {
        for a in spop::actions(actions) {
            let (scope, name, value) = match a {
                spop::Action::SetVar { scope, name, value } => (scope, name, Some(value)),
                spop::Action::UnsetVar { scope, name } => (scope, name, None),
            };
            let name = format!("{}.{}", self.var_prefix, String::from_utf8_lossy(name));
            let scope = match scope {
                spop::Scope::Proc => cfg::VarScope::Proc,
                spop::Scope::Sess => cfg::VarScope::Sess,
                spop::Scope::Txn => cfg::VarScope::Txn,
                spop::Scope::Req => cfg::VarScope::Req,
                spop::Scope::Res => cfg::VarScope::Res,
            };
            match value.and_then(from_spop) {
                Some(v) if scope == cfg::VarScope::Proc => {
                    if self.force_set_var || proc_vars.get(&name).is_some() {
                        proc_vars.set(&name, v);
                    }
                }
                Some(v) => vars.set_if(scope, &name, v, 0),
                None if scope == cfg::VarScope::Proc => proc_vars.unset(&name),
                None => vars.unset(scope, &name),
            }
        }
    }

    /// What the agent answered (`took`: this exchange's time): its variables, or the error's
    /// (after which, without `option continue-on-error`, the engine asks no more in this
    /// transaction, as HAProxy's); the timing variables either way (`spoe_update_stats()`).
    pub fn answer(&self, answer: Answer, took: Duration, vars: &mut Vars, proc_vars: &ProcVars) {
        match answer {
            Answer::Ack(actions) => self.apply(&actions, vars, proc_vars),
            Answer::Failed(code) => {
                self.failed(code, vars);
                if !self.continue_on_error {
                    vars.spoe_stop(self);
                }
            }
            Answer::Skipped => return,
        }
        let total = vars.spoe_total(self, took);
        self.timed(took, total, vars);
    }

    /// `option set-on-error`: the error's code in `txn.<prefix>.<name>`.
    pub fn failed(&self, code: u32, vars: &mut Vars) {
        if let Some(n) = &self.on_error {
            let name = format!("{}.{n}", self.var_prefix);
            vars.set_if(cfg::VarScope::Txn, &name, Value::Int(i64::from(code)), 0);
        }
    }

    /// `option set-process-time` and `set-total-time`: milliseconds, this exchange's and the
    /// transaction's with this agent so far.
    pub fn timed(&self, process: Duration, total: Duration, vars: &mut Vars) {
        for (var, d) in [(&self.process_time, process), (&self.total_time, total)] {
            if let Some(n) = var {
                let name = format!("{}.{n}", self.var_prefix);
                vars.set_if(cfg::VarScope::Txn, &name, Value::Int(d.as_millis() as i64), 0);
            }
        }
    }
}

/// Whether `tcp-request content` asks an agent in this proxy: an engine sends messages on
/// `on-frontend-tcp-request` or `on-backend-tcp-request`, or a rule is `send-spoe-group`.
pub fn asks_on_content(r: &super::ProxyRules) -> bool {
    let events = [SpoeEvent::FrontendTcpRequest, SpoeEvent::BackendTcpRequest];
    r.spoe.iter().any(|e| events.iter().any(|ev| !e.on(*ev).is_empty()))
        || r.tcp_content
            .iter()
            .any(|t| matches!(t.act, super::TcpAct::Do(super::Action::SendSpoeGroup { .. })))
}

/// A sample as SPOP typed data: text, binary, integers, addresses, booleans; nothing (a
/// fetch that failed) as `Null`.
fn to_spop<'v>(v: Option<&'v Value<'_>>, bin: bool) -> spop::Value<'v> {
    match v {
        None => spop::Value::Null,
        Some(Value::Str(s)) if bin => spop::Value::Bin(s),
        Some(Value::Str(s)) => spop::Value::Str(s),
        Some(Value::Int(i)) => spop::Value::Int64(*i),
        Some(Value::Bool(b)) => spop::Value::Bool(*b),
        Some(Value::Ip(std::net::IpAddr::V4(a))) => spop::Value::Ipv4(a.octets()),
        Some(Value::Ip(std::net::IpAddr::V6(a))) => spop::Value::Ipv6(a.octets()),
    }
}

/// An ACK's value as a variable's (`None`: unset it).
fn from_spop(v: spop::Value<'_>) -> Option<Value<'static>> {
    Some(match v {
        spop::Value::Null => return None,
        spop::Value::Bool(b) => Value::Bool(b),
        spop::Value::Str(s) | spop::Value::Bin(s) => Value::Str(s.to_vec().into()),
        spop::Value::Ipv4(a) => Value::Ip(std::net::IpAddr::from(a)),
        spop::Value::Ipv6(a) => Value::Ip(std::net::IpAddr::from(a)),
        other => Value::Int(other.as_int().unwrap_or(0)),
    })
}

impl Compiler<'_> {
    /// The proxy's SPOE engines, in `filter` order (those whose file was read).
    pub fn spoe_engines(&mut self) -> Vec<Arc<Engine>> {
        let proxy = self.proxy();
        let mut out = Vec::new();
        for f in &proxy.filters {
            let cfg::cache::Filter::Spoe(f) = f else { continue };
            let Some(a) = f.agent.as_deref() else { continue };
            let mut messages = Vec::with_capacity(a.messages.len());
            for m in &a.messages {
                // A message's condition names its own ACLs: compiled as a proxy of its own.
                let mut own = proxy.clone();
                own.acls = m.acls.clone();
                let mut c = self.nested(&own);
                let mut args = Vec::new();
                for arg in &m.args {
                    match c.expr(&arg.expr) {
                        Ok(e) => {
                            args.push((arg.name.clone(), e, arg.out == cfg::sample::SmpType::Bin))
                        }
                        Err(e) => c.errors.push(format!("parsing [{}] : 'args': {e}", m.span)),
                    }
                }
                let cond = c.cond(&m.cond, &m.span);
                let (acls, found) = c.finish_nested();
                self.merge(found);
                messages.push(Message { name: m.name.clone(), args, cond, acls });
            }
            let mut events: Vec<(SpoeEvent, Vec<usize>)> = Vec::new();
            for &i in &a.on_event {
                let Some(ev) = a.messages[i].event else { continue };
                match events.iter_mut().find(|(e, _)| *e == ev) {
                    Some((_, list)) => list.push(i),
                    None => events.push((ev, vec![i])),
                }
            }
            let ms = |v: Option<u32>| v.map(|ms| Duration::from_millis(u64::from(ms)));
            let logger =
                match self.logs.map(|c| crate::log::syslog::Logger::build(&a.logs, None, c)) {
                    Some(Ok(l)) => l.map(Arc::new),
                    Some(Err(e)) => {
                        self.errors.push(format!("spoe-agent '{}' : log : {e}", a.name));
                        None
                    }
                    None => None,
                };
            out.push(Arc::new(Engine {
                id: f.id().to_string(),
                agent: a.name.clone(),
                backend: a.backend.clone(),
                var_prefix: a.var_prefix.clone(),
                on_error: a.on_error.clone(),
                process_time: a.process_time.clone(),
                total_time: a.total_time.clone(),
                caps: spop::Caps {
                    pipelining: a.pipelining,
                    async_: a.async_,
                    fragmentation: false,
                },
                send_frag: a.send_frag,
                continue_on_error: a.continue_on_error,
                force_set_var: a.force_set_var,
                hello: ms(a.timeout_hello),
                idle: ms(a.timeout_idle),
                processing: ms(a.timeout_processing),
                max_conn_rate: a.max_conn_rate,
                max_err_rate: a.max_err_rate,
                max_frame_size: a.max_frame_size,
                max_waiting_frames: a.max_waiting_frames,
                messages,
                logger,
                dontlog_normal: a.dontlog_normal,
                processed: Default::default(),
                failed: Default::default(),
                events,
                groups: a.groups.iter().map(|g| (g.name.clone(), g.messages.clone())).collect(),
            }));
        }
        out
    }

    /// `send-spoe-group <engine> <group>`: the engine's place among the proxy's and the
    /// group's in it (the configuration checked both exist).
    pub fn spoe_group(&self, engine: &str, group: &str) -> Option<(usize, usize)> {
        let mut n = 0;
        for f in &self.proxy().filters {
            let cfg::cache::Filter::Spoe(f) = f else { continue };
            let Some(a) = f.agent.as_deref() else { continue };
            if f.id() == engine {
                return a.groups.iter().position(|g| g.name == group).map(|g| (n, g));
            }
            n += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_as_typed_data() {
        let s = Value::Str(b"GET"[..].into());
        assert_eq!(to_spop(Some(&s), false), spop::Value::Str(b"GET"));
        let b = Value::Str(vec![0xff, 0].into());
        assert_eq!(to_spop(Some(&b), true), spop::Value::Bin(&[0xff, 0]));
        let ip = Value::Ip("::1".parse().expect("ip"));
        assert!(matches!(to_spop(Some(&ip), false), spop::Value::Ipv6(_)));
        assert_eq!(to_spop(None, false), spop::Value::Null);
        assert_eq!(from_spop(spop::Value::Uint32(7)), Some(Value::Int(7)));
        assert_eq!(from_spop(spop::Value::Null), None);
    }
}
