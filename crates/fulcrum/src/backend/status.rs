//! The one entry point through which a server's state changes (HAProxy's
//! `srv_set_admin_flag()` / `srv_update_status()`): health and agent checks, observed errors,
//! warm-up steps, the runtime API, the stats page and server-state files call
//! [`Backend::change_server`]; an in-process reload hands a new backend its predecessor's state
//! with [`Backend::carry_from`] before the new plan serves anything.
//!
//! It updates the record under the server's lock, publishes what the request path reads,
//! tells the balancers (a generation bump: a DOWN server leaves round robin, leastconn and the
//! hash ring, and comes back with its weight), redistributes or grabs queued sessions, ends
//! sessions when `on-marked-down`/`on-marked-up` say so, then logs the transition with
//! HAProxy's wording and counts it. Must not touch: sockets other than those it is told to
//! shut, check scheduling.
//!
//! Also here, for the callers above: [`set_state`] (`ready`/`drain`/`maint`, from the runtime
//! API and the stats page's admin form) and what an agent's answer asks for ([`AgentReply`]).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fulcrum_config::{CheckStatus, OnError};

use super::Backend;
use crate::log::syslog::{ALERT, EMERG, NOTICE};
use crate::server::state::{Admin, CheckResult, Reason, Transition, Verdict};
use crate::server::Server;

/// A change to a server's state. The administrative ones come from the runtime API (and the
/// stats page next); checks use the rest.
#[derive(Clone, Debug)]
pub enum Change {
    /// A health check (or, with `agent`, an agent check) finished.
    Check {
        agent: bool,
        result: CheckResult,
    },
    /// An agent answered (`None`: it closed without ending its line).
    Agent {
        reply: Option<AgentReply>,
        duration: Duration,
    },
    /// Sets an administrative flag (`Admin::FMAINT`...), with the cause shown in logs.
    SetAdmin {
        flag: u8,
        cause: String,
    },
    ClearAdmin {
        flag: u8,
    },
    /// A new user weight, in configuration units.
    Weight(u32),
    /// Forces the health (or agent) check's verdict (`set server ... health|agent`): up
    /// (`Running`), `Stopping` or down (`Stopped`), "changed from CLI".
    Force {
        agent: bool,
        oper: crate::server::state::Oper,
    },
    /// Turns the health (or agent) check on or off (`enable|disable health|agent`).
    CheckEnabled {
        agent: bool,
        on: bool,
    },
    /// A new `maxconn` (`set maxconn server`).
    Maxconn(u32),
    /// State read back from a server-state file at start-up: DOWN as it was (its health
    /// check's counter as saved), and the time of its last change.
    Restore {
        down: bool,
        health: u32,
        since: Duration,
    },
    /// One slow-start step.
    Warmup,
    /// Live traffic reached `error-limit` consecutive errors (`observe`); `what` names the
    /// last one.
    Observed {
        what: &'static str,
    },
    /// The server it tracks (`track`) changed: its state now, and whether it is in
    /// maintenance or drains (inherited here as HAProxy's `IMAINT` / `IDRAIN`).
    Follow {
        oper: crate::server::state::Oper,
        maint: bool,
        drain: bool,
    },
}

/// What one agent line asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentReply {
    /// The health word and whether it means up.
    pub health: Option<(String, bool)>,
    pub admin: Option<AgentAdmin>,
    /// `75%` as written.
    pub weight: Option<String>,
    /// The value after `maxconn:`.
    pub maxconn: Option<String>,
    /// The first word not understood.
    pub error: Option<String>,
    /// The text after `#`.
    pub desc: String,
}

/// The administrative word of an agent's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentAdmin {
    Ready,
    Drain,
    Maint,
}

impl Backend {
    /// Takes over the live state of the backend of the same name in the plan before an
    /// in-process reload, while this one is not shared yet: its counters, its up/down history,
    /// and for each server of the same name its counters, connection count and state record
    /// (see `Record::carry`).
    pub fn carry_from(&mut self, old: &Backend) {
        let now = Instant::now();
        self.counters = std::sync::Arc::clone(&old.counters);
        self.down_transitions
            .store(old.down_transitions.load(Ordering::Relaxed), Ordering::Relaxed);
        *self.updown.get_mut().unwrap_or_else(|e| e.into_inner()) =
            *old.updown.lock().unwrap_or_else(|e| e.into_inner());
        let dynamic = self.dynamic_weights();
        let log_checks = self.log_health_checks;
        for srv in self.servers.iter_mut() {
            let Some(o) = old.server_index(&srv.name).map(|i| &old.servers[i]) else { continue };
            srv.adopt_live(o);
            let saved = o.state().clone();
            let mut r = srv.state();
            r.dynamic_weights = dynamic;
            r.log_checks = log_checks;
            r.carry(&saved, now);
            srv.publish(&r, now);
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// A server added at run time starts as HAProxy's dynamic servers do: in forced
    /// maintenance, its checks configured but off (until `enable health|agent`). Its plan is
    /// not current yet: nothing is reported.
    pub fn start_dynamic(&self, idx: usize) {
        let srv = &self.servers[idx];
        let mut r = srv.state();
        r.start_dynamic();
        srv.publish(&r, Instant::now());
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Applies `change` to server `idx` and carries out what follows from it.
    pub fn change_server(&self, idx: usize, change: Change) {
        let now = Instant::now();
        let srv = &self.servers[idx];
        // Stops at the first usable server: O(1) in the usual case, with 1,000 servers too.
        let had_servers = self.servers.iter().any(|s| s.lb_usable());
        let transitions = {
            let mut r = srv.state();
            r.log_checks = self.log_health_checks;
            r.dynamic_weights = self.dynamic_weights();
            let t = match change {
                Change::Check { agent, result } => {
                    if !agent && crate::server::state::verdict(result.status) != Verdict::Failed {
                        srv.clear_observed();
                    }
                    r.check_result(agent, &result, now)
                }
                Change::Agent { reply, duration } => agent_answer(&mut r, reply, duration, now),
                Change::SetAdmin { flag, cause } => r.set_admin(flag, &cause, now),
                Change::ClearAdmin { flag } => r.clear_admin(flag, now),
                Change::Weight(w) => r.set_weight(w, now),
                Change::Force { agent, oper } => r.force(agent, oper, now),
                Change::CheckEnabled { agent, on } => {
                    let c = if agent { r.agent.as_mut() } else { r.check.as_mut() };
                    if let Some(c) = c {
                        c.enabled = on;
                    }
                    Vec::new()
                }
                Change::Restore { down, health, since } => r.restore(down, health, since, now),
                Change::Maxconn(m) => {
                    r.maxconn = m;
                    vec![Transition::Reweighted]
                }
                Change::Warmup => r.warmup(now),
                Change::Follow { oper, maint, drain } => follow(&mut r, oper, maint, drain, now),
                Change::Observed { what } => {
                    r.failed_observed += 1;
                    // Every `on-error` mode brings the next health check forward to `fastinter`.
                    srv.check_soon.notify_one();
                    self.observed(srv, &mut r, what, now)
                }
            };
            srv.publish(&r, now);
            t
        };
        if transitions.is_empty() {
            return;
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
        for t in transitions {
            self.carry_out(idx, t, had_servers);
        }
        self.tell_trackers(idx);
        let has_servers = self.servers.iter().any(|s| s.lb_usable());
        if has_servers != had_servers {
            let mut u = self.updown.lock().unwrap_or_else(|e| e.into_inner());
            u.last_change = now;
            if !has_servers {
                u.down_since = Some(now);
            } else if let Some(since) = u.down_since.take() {
                u.down_time += now.saturating_duration_since(since);
            }
        }
    }

    /// The servers tracking server `idx` follow its new state (HAProxy propagates each change
    /// to `srv->trackers`, down their own trackers).
    fn tell_trackers(&self, idx: usize) {
        let srv = &self.servers[idx];
        let Some(trackers) = self.trackers.get().and_then(|t| t.get(&idx)) else { return };
        let (oper, maint, drain) = {
            let r = srv.state();
            (r.oper, r.admin.maint(), r.admin.drain())
        };
        for (be, i) in trackers {
            if let Some(be) = be.upgrade() {
                be.change_server(*i, Change::Follow { oper, maint, drain });
            }
        }
    }

    /// `observe`: `error-limit` consecutive live errors do what `on-error` says.
    fn observed(
        &self,
        srv: &Server,
        r: &mut crate::server::Record,
        what: &str,
        now: Instant,
    ) -> Vec<Transition> {
        let limit = srv.policy.error_limit.max(1);
        let desc = format!("Detected {limit} consecutive errors, last one was: {what}");
        let result = CheckResult::new(CheckStatus::Hana, desc);
        match srv.policy.on_error {
            // Every mode forces `fastinter`, which the check task reads from the counter.
            OnError::Fastinter => Vec::new(),
            OnError::SuddenDeath => {
                r.sudden_death();
                r.check_result(false, &result, now)
            }
            OnError::FailCheck => r.check_result(false, &result, now),
            OnError::MarkDown => {
                r.edge_of_down();
                r.check_result(false, &result, now)
            }
        }
    }

    /// Does what a transition asks of the balancers' surroundings, then logs it.
    fn carry_out(&self, idx: usize, t: Transition, had_servers: bool) {
        let srv = &self.servers[idx];
        let who =
            format!("{}Server {}/{}", if srv.backup { "Backup " } else { "" }, self.name, srv.name);
        let was_any = had_servers;
        match t {
            Transition::CheckReport { agent, result, reason, counter, state } => {
                let mut msg = format!(
                    "{} check for {}server {}/{} {}{}",
                    if agent { "Agent" } else { "Health" },
                    if srv.backup { "backup " } else { "" },
                    self.name,
                    srv.name,
                    if result == Verdict::CondPassed { "conditionally " } else { "" },
                    if result == Verdict::Failed { "failed" } else { "succeeded" },
                );
                append_reason(&mut msg, &reason);
                let _ = write!(msg, ", status: {}/{} {state}", counter.0, counter.1);
                self.event(NOTICE, &msg);
            }
            Transition::Down { reason, was_stopping } => {
                if srv.policy.shutdown_on_down {
                    crate::server::kill::shutdown(srv, crate::outcome::Cause::Down);
                }
                let moved = self.redistribute(idx);
                let mut msg = format!("{who} is DOWN");
                append_reason_or_via(&mut msg, &reason, srv);
                self.append_left(&mut msg, srv, moved);
                // No alert for a server that was already taking no new traffic.
                let level = if was_stopping { NOTICE } else { ALERT };
                self.event(level, &msg);
                self.mail(level, &msg);
                self.check_backend_down(was_any);
            }
            Transition::Stopping { reason } => {
                let moved = self.redistribute(idx);
                let mut msg = format!("{who} is stopping");
                append_reason_or_via(&mut msg, &reason, srv);
                self.append_left(&mut msg, srv, moved);
                self.event(NOTICE, &msg);
                self.check_backend_down(was_any);
            }
            Transition::Up { reason } => {
                self.after_up(srv);
                let grabbed = self.grab_queued();
                let mut msg = format!("{who} is UP");
                append_reason_or_via(&mut msg, &reason, srv);
                self.append_online(&mut msg, grabbed);
                self.event(NOTICE, &msg);
                self.mail(NOTICE, &msg);
            }
            Transition::Reweighted => {
                self.grab_queued();
            }
            Transition::MaintWhileDown { cause, .. } => {
                let msg = format!("{who} was DOWN and now enters maintenance{}", paren(&cause));
                self.event(NOTICE, &msg);
            }
            Transition::MaintFromUp { cause, was_stopping, .. } => {
                if srv.policy.shutdown_on_down {
                    crate::server::kill::shutdown(srv, crate::outcome::Cause::Down);
                }
                let moved = self.redistribute(idx);
                let mut msg = format!("{who} is going DOWN for maintenance{}", paren(&cause));
                self.append_left(&mut msg, srv, moved);
                self.event(if was_stopping { NOTICE } else { ALERT }, &msg);
                self.check_backend_down(was_any);
            }
            Transition::LeftMaint { which, up, drain } => {
                let state = format!(
                    "{}/{}",
                    if up { "UP" } else { "DOWN" },
                    if drain { "DRAIN" } else { "READY" }
                );
                let why = if which & Admin::FMAINT != 0 {
                    "leaving forced maintenance"
                } else if which & Admin::RMAINT != 0 {
                    "resolves again"
                } else {
                    "leaving maintenance"
                };
                if up {
                    self.after_up(srv);
                }
                self.grab_queued();
                self.event(NOTICE, &format!("{who} is {state} ({why})"));
            }
            Transition::Drain { cause, .. } => {
                let moved = self.redistribute(idx);
                let mut msg = format!("{who} enters drain state{}", paren(&cause));
                self.append_left(&mut msg, srv, moved);
                self.event(NOTICE, &msg);
                self.mail(NOTICE, &msg);
                self.check_backend_down(was_any);
            }
            Transition::LeftDrain { forced, up } => {
                self.grab_queued();
                let why = if forced { "leaving forced drain" } else { "leaving drain" };
                self.event(NOTICE, &format!("{who} is {} ({why})", if up { "UP" } else { "DOWN" }));
            }
        }
    }

    /// `on-marked-up shutdown-backup-sessions`: an active server taking traffic again ends the
    /// backup servers' sessions.
    fn after_up(&self, srv: &Server) {
        if srv.policy.shutdown_backups_on_up && !srv.backup && srv.weight() > 0 {
            for b in self.servers.iter().filter(|s| s.backup) {
                crate::server::kill::shutdown(b, crate::outcome::Cause::Up);
            }
        }
    }

    /// Sessions waiting for server `idx` go back to the balancer with `option redispatch`.
    fn redistribute(&self, idx: usize) -> u32 {
        if !self.redispatch {
            return 0;
        }
        self.queue.redistribute(idx)
    }

    /// `. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in
    /// queue`.
    fn append_left(&self, msg: &mut String, srv: &Server, moved: u32) {
        let (act, bck) = self.usable_counts();
        let idx = self.servers.iter().position(|s| std::ptr::eq(s, srv)).unwrap_or(0);
        let _ = write!(
            msg,
            ". {act} active and {bck} backup servers left.{} {} sessions active, {moved} requeued, {} remaining in queue",
            if bck > 0 && act == 0 { " Running on backup." } else { "" },
            srv.cur_conns(),
            self.server_queued(idx)
        );
    }

    /// `. 2 active and 0 backup servers online. 0 sessions requeued, 0 total in queue`.
    fn append_online(&self, msg: &mut String, grabbed: u32) {
        let (act, bck) = self.usable_counts();
        let _ = write!(
            msg,
            ". {act} active and {bck} backup servers online.{} {grabbed} sessions requeued, {} total in queue",
            if bck > 0 && act == 0 { " Running on backup." } else { "" },
            self.queued()
        );
    }

    /// `backend 'app' has no server available!` when the last usable server is gone.
    fn check_backend_down(&self, had_servers: bool) {
        if had_servers && self.usable_counts() == (0, 0) {
            self.down_transitions.fetch_add(1, Ordering::Relaxed);
            // HAProxy names a `listen` section a "proxy"; the name is quoted on stderr only.
            let kind = if self.is_listen { "proxy" } else { "backend" };
            crate::log::alert(&format!("{kind} '{}' has no server available!", self.name));
            if let Some(l) = &self.logger {
                l.send(EMERG, &format!("{kind} {} has no server available!", self.name));
            }
        }
    }
}

/// Applies an agent's answer in HAProxy's order: administrative word, weight, maxconn, then
/// the health word (which sets the agent's counter outright) with its message.
fn agent_answer(
    r: &mut crate::server::Record,
    reply: Option<AgentReply>,
    duration: Duration,
    now: Instant,
) -> Vec<Transition> {
    let Some(a) = reply else {
        let status = r.agent.as_ref().map_or(CheckStatus::Init, |c| c.status);
        let result = CheckResult {
            status,
            code: None,
            desc: "Ignoring incomplete line from agent".into(),
            duration: Some(duration),
        };
        return r.check_result(true, &result, now);
    };
    let mut t = match a.admin {
        Some(AgentAdmin::Drain) => r.set_admin(Admin::FDRAIN, "", now),
        Some(AgentAdmin::Maint) => r.set_admin(Admin::FMAINT, "", now),
        Some(AgentAdmin::Ready) => {
            let mut t = r.clear_admin(Admin::FMAINT, now);
            t.extend(r.clear_admin(Admin::FDRAIN, now));
            t
        }
        None => Vec::new(),
    };
    let mut warning = None;
    if let Some(w) = &a.weight {
        match parse_weight(w, r.iweight, r.dynamic_weights) {
            Ok(w) => t.extend(r.set_weight(w, now)),
            Err(e) => warning = Some(e.trim_end().to_string()),
        }
    }
    if let Some(m) = &a.maxconn {
        match m.parse::<u32>() {
            Ok(m) => {
                r.maxconn = m;
                t.push(Transition::Reweighted);
            }
            Err(_) => {
                warning.get_or_insert_with(|| "Require <maxconn>".to_string());
            }
        }
    }
    let (status, desc) = match &a.health {
        Some((word, up)) => {
            r.set_agent_health(*up);
            let status = if *up { CheckStatus::L7Ok } else { CheckStatus::L7Sts };
            let mut msg = a.desc.clone();
            if msg.is_empty() || *up {
                if let Some(e) = a.error.clone().or(warning.clone()) {
                    msg = e;
                }
            }
            let desc = if msg.is_empty() {
                format!("via agent : {word}")
            } else {
                format!("via agent : {word} ({msg})")
            };
            (status, desc)
        }
        None => match (&a.error, &warning) {
            (Some(e), _) => (CheckStatus::Checked, format!("agent reports an error : {e}")),
            (None, Some(w)) => (CheckStatus::Checked, format!("agent warns : {w}")),
            (None, None) => (CheckStatus::Checked, String::new()),
        },
    };
    let result = CheckResult { status, code: None, desc, duration: Some(duration) };
    t.extend(r.check_result(true, &result, now));
    t
}

impl Backend {
    /// `email-alert`: the DOWN, UP and drain messages are mailed at their level (HAProxy's
    /// `send_email_alert`).
    fn mail(&self, level: u8, msg: &str) {
        if let Some(m) = &self.mail {
            m.send(level, msg);
        }
    }

    /// A state change's message: on stderr as HAProxy's `ha_warning()`, and to the backend's
    /// log targets at `level`.
    fn event(&self, level: u8, msg: &str) {
        crate::log::warning(msg);
        if let Some(l) = &self.logger {
            l.send(level, &format!("{msg}."));
        }
    }
}

/// ` (cause)` or nothing.
fn paren(cause: &str) -> String {
    if cause.is_empty() {
        String::new()
    } else {
        format!(" ({cause})")
    }
}

/// HAProxy's `srv_append_status` reason part: `, reason: Layer4 timeout, info: "...", check
/// duration: 2001ms`, or `, <text>`.
/// A tracking server takes its tracked server's maintenance and drain as inherited flags, and
/// its state.
fn follow(
    r: &mut crate::server::Record,
    oper: crate::server::state::Oper,
    maint: bool,
    drain: bool,
    now: Instant,
) -> Vec<Transition> {
    use crate::server::state::Oper;
    let mut t =
        if maint { r.set_admin(Admin::IMAINT, "", now) } else { r.clear_admin(Admin::IMAINT, now) };
    t.extend(if drain {
        r.set_admin(Admin::IDRAIN, "", now)
    } else {
        r.clear_admin(Admin::IDRAIN, now)
    });
    if !maint {
        t.extend(match oper {
            Oper::Stopped => r.set_stopped(Reason::default(), now),
            Oper::Stopping => r.set_stopping(Reason::default(), now),
            Oper::Running | Oper::Starting => r.set_running(Reason::default(), now),
        });
    }
    t
}

/// The reason of a state change in HAProxy's words; a tracking server's own changes say which
/// server they follow.
fn append_reason_or_via(msg: &mut String, r: &Reason, srv: &Server) {
    match &srv.track {
        Some(via) if r.status.is_none() && r.desc.is_empty() => {
            let _ = write!(msg, " via {via}");
        }
        _ => append_reason(msg, r),
    }
}

fn append_reason(msg: &mut String, r: &Reason) {
    match r.status {
        Some(st) => {
            let _ = write!(msg, ", reason: {}", st.description());
            if st.has_code() {
                let _ = write!(msg, ", code: {}", r.code.unwrap_or(0));
            }
            if !r.desc.is_empty() {
                let _ = write!(msg, ", info: \"{}\"", ascii_encode(&r.desc));
            }
            if let Some(d) = r.duration {
                let _ = write!(msg, ", check duration: {}ms", d.as_millis());
            }
        }
        None if !r.desc.is_empty() => {
            let _ = write!(msg, ", {}", r.desc);
        }
        None => {}
    }
}

/// HAProxy's `chunk_asciiencode`: bytes that are not printable ASCII, `<`, `>` and `"` as
/// `<HH>`.
fn ascii_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'<' | b'>') {
            out.push(b as char);
        } else {
            let _ = write!(out, "<{b:02X}>");
        }
    }
    out
}

/// `75%` or `12`: a weight change request, as HAProxy's `server_parse_weight_change_request`.
pub fn parse_weight(text: &str, iweight: u32, dynamic: bool) -> Result<u32, String> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("Empty weight string empty or preceded by garbage".into());
    }
    let w: u64 = text[..digits].parse().unwrap_or(u64::MAX);
    let rest = &text[digits..];
    let w = if rest == "%" {
        (u64::from(iweight) * w.min(25600) / 100).min(256)
    } else if w > 256 {
        return Err("Absolute weight can only be between 0 and 256 inclusive.\n".into());
    } else if !rest.is_empty() {
        return Err("Trailing garbage in weight string".into());
    } else {
        w
    };
    if w != 0 && w != u64::from(iweight) && !dynamic {
        return Err(
            "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.\n"
                .into(),
        );
    }
    Ok(w as u32)
}

/// `ready`, `drain` or `maint` (the runtime API's `set server ... state`, the stats page's
/// admin form).
pub fn set_state(be: &Backend, idx: usize, state: &str) {
    let set = |flag| be.change_server(idx, Change::SetAdmin { flag, cause: String::new() });
    let clear = |flag| be.change_server(idx, Change::ClearAdmin { flag });
    match state {
        "ready" => {
            clear(Admin::FDRAIN);
            clear(Admin::FMAINT);
        }
        "drain" => {
            set(Admin::FDRAIN);
            clear(Admin::FMAINT);
        }
        _ => {
            clear(Admin::FDRAIN);
            set(Admin::FMAINT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_texts_are_encoded_as_haproxy_logs_them() {
        assert_eq!(ascii_encode("-ERR <bad> \"x\"\u{1}"), "-ERR <3C>bad<3E> <22>x<22><01>");
        assert_eq!(ascii_encode("caf\u{e9}"), "caf<C3><A9>");
    }
}
