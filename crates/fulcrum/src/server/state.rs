//! A server's run-time state record and its transitions, as HAProxy's `server.c` keeps them:
//! administrative flags (READY/DRAIN/MAINT and why), operational state (UP, DOWN, starting,
//! stopping), user weight and `maxconn`, the health and agent checks' counters and last results,
//! last change and downtime.
//!
//! Pure code: callers pass the time in; nothing here locks, logs or touches the balancers. A
//! change updates the `next` state and [`Record::commit`] compares it with the current one, as
//! HAProxy's `srv_update_status()` does, returning the [`Transition`]s the backend must carry
//! out and report (`backend::status` is the only caller).

use std::time::{Duration, Instant};

use fulcrum_config::CheckStatus;

/// HAProxy's `BE_WEIGHT_SCALE`: effective weights are kept in sixteenths of a weight unit so a
/// server ramping up (`slowstart`) or at an agent's percentage keeps a fine-grained share.
pub const WEIGHT_SCALE: u32 = 16;

/// Operational state (HAProxy's `SRV_ST_*`): only `Stopped` is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oper {
    Stopped,
    /// Up, weight and maxconn ramping up (`slowstart`).
    Starting,
    Running,
    /// Up, but takes no new load-balanced traffic (`disable-on-404`).
    Stopping,
}

/// Administrative flags (HAProxy's `SRV_ADMF_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Admin(pub u8);

impl Admin {
    /// Forced maintenance: the runtime API, the stats page, or `disabled`.
    pub const FMAINT: u8 = 0x01;
    /// Maintenance inherited from a tracked server.
    pub const IMAINT: u8 = 0x02;
    /// Maintenance because the configuration says `disabled`.
    pub const CMAINT: u8 = 0x04;
    /// Forced drain.
    pub const FDRAIN: u8 = 0x08;
    /// Drain inherited from a tracked server.
    pub const IDRAIN: u8 = 0x10;
    /// Maintenance because the address could not be resolved.
    pub const RMAINT: u8 = 0x20;
    pub const MAINT: u8 = Self::FMAINT | Self::IMAINT | Self::RMAINT;
    pub const DRAIN: u8 = Self::FDRAIN | Self::IDRAIN;

    pub fn has(self, f: u8) -> bool {
        self.0 & f != 0
    }
    pub fn maint(self) -> bool {
        self.has(Self::MAINT)
    }
    pub fn drain(self) -> bool {
        self.has(Self::DRAIN)
    }
}

/// What a finished check found (HAProxy's status, response code, info and duration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    pub status: CheckStatus,
    pub code: Option<i32>,
    pub desc: String,
    /// `None` for observed (HANA) results, which have no duration.
    pub duration: Option<Duration>,
}

impl CheckResult {
    pub fn new(status: CheckStatus, desc: impl Into<String>) -> Self {
        CheckResult { status, code: None, desc: desc.into(), duration: None }
    }
}

/// The result kind a status stands for (HAProxy's `CHK_RES_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Failed,
    Passed,
    /// Passed, but asks for the stopping state (404 with `disable-on-404`).
    CondPassed,
    /// No state change expected.
    Neutral,
}

pub fn verdict(status: CheckStatus) -> Verdict {
    use CheckStatus::*;
    match status {
        L4Ok | L6Ok | L7Ok | ProcOk => Verdict::Passed,
        L7OkCond => Verdict::CondPassed,
        Unknown | Init | Checked => Verdict::Neutral,
        SockErr | L4Timeout | L4Con | L6Timeout | L6Rsp | L7Timeout | L7Rsp | L7Sts | Hana
        | ProcErr | ProcTimeout => Verdict::Failed,
    }
}

/// One check of a server (the health check or the agent) and its rise/fall counter.
///
/// `health` runs from 0 (DOWN) to `rise + fall - 1` (fully UP): a server is UP while
/// `health >= rise`; a failure from UP drops it by one, and below `rise` straight to 0.
#[derive(Clone, Debug)]
pub struct Check {
    pub agent: bool,
    /// Configured and running (HAProxy's `CHK_ST_ENABLED`).
    pub enabled: bool,
    /// Suspended while the server is in maintenance (`CHK_ST_PAUSED`).
    pub paused: bool,
    pub rise: u32,
    pub fall: u32,
    pub health: u32,
    pub inter: Duration,
    pub fastinter: Option<Duration>,
    pub downinter: Option<Duration>,
    /// Last result; `Init` until the first check ends.
    pub status: CheckStatus,
    pub code: Option<i32>,
    pub desc: String,
    pub duration: Option<Duration>,
}

impl Check {
    pub fn new(agent: bool, rise: u32, fall: u32, inter: Duration) -> Self {
        Check {
            agent,
            enabled: true,
            paused: false,
            rise,
            fall,
            // Up, but one failure takes it down (HAProxy's start-up state).
            health: rise,
            inter,
            fastinter: None,
            downinter: None,
            status: CheckStatus::Init,
            code: None,
            desc: String::new(),
            duration: None,
        }
    }

    fn max(&self) -> u32 {
        self.rise + self.fall - 1
    }

    pub fn is_up(&self) -> bool {
        self.health >= self.rise
    }

    /// `UP 2/3`-style counters: successes toward rise while down, failures left while up.
    pub fn display(&self) -> (u32, u32) {
        if self.is_up() {
            (self.health - self.rise + 1, self.fall)
        } else {
            (self.health, self.rise)
        }
    }

    /// Records a result and moves the counter (HAProxy's `set_server_check_status`). Returns
    /// whether the counter moved (a "report") and whether a failure was counted.
    fn record(&mut self, r: &CheckResult) -> (bool, bool) {
        self.status = r.status;
        self.code = r.code;
        self.desc = r.desc.clone();
        // An observed (HANA) result has no duration: HAProxy prints none.
        self.duration = if r.status == CheckStatus::Hana { None } else { r.duration };
        match verdict(r.status) {
            // An agent that cannot be reached does not make the server fail.
            Verdict::Failed if (!self.agent || r.status.has_code()) && self.health > 0 => {
                self.health -= 1;
                if self.health < self.rise {
                    self.health = 0;
                }
                (true, true)
            }
            Verdict::Passed | Verdict::CondPassed if self.health < self.max() => {
                self.health += 1;
                if self.health >= self.rise {
                    self.health = self.max();
                }
                (true, false)
            }
            _ => (false, false),
        }
    }

    /// The delay before the next check (HAProxy's `srv_getinter`).
    pub fn interval(&self, server_down: bool) -> Duration {
        if self.health == self.max() {
            return self.inter;
        }
        if server_down && self.health == 0 {
            return self.downinter.unwrap_or(self.inter);
        }
        self.fastinter.unwrap_or(self.inter)
    }
}

/// Why the operational state changed (HAProxy's `op_st_chg`): a check's result, or a reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reason {
    pub status: Option<CheckStatus>,
    pub code: Option<i32>,
    pub desc: String,
    pub duration: Option<Duration>,
}

impl Reason {
    fn of(check: &Check) -> Self {
        Reason {
            status: Some(check.status),
            code: check.code,
            desc: check.desc.clone(),
            duration: check.duration,
        }
    }
}

/// A state change the backend must carry out, then log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// `Health check for server be/s succeeded, ...` (`option log-health-checks`).
    CheckReport {
        agent: bool,
        result: Verdict,
        reason: Reason,
        counter: (u32, u32),
        state: &'static str,
    },
    /// Went DOWN: leaves the balancers, queue redistributed.
    Down { reason: Reason, was_stopping: bool },
    /// Went into the stopping state (no new balanced traffic).
    Stopping { reason: Reason },
    /// Came UP (or starts warming up).
    Up { reason: Reason },
    /// Only the effective weight changed.
    Reweighted,
    /// Entered maintenance while already down.
    MaintWhileDown { cause: String, forced: bool },
    /// Entered maintenance while up: goes DOWN.
    MaintFromUp { cause: String, forced: bool, was_stopping: bool },
    /// Left maintenance (`is UP/READY (leaving forced maintenance)`).
    LeftMaint { which: u8, up: bool, drain: bool },
    /// Entered the drain state.
    Drain { cause: String, forced: bool },
    /// Left the drain state.
    LeftDrain { forced: bool, up: bool },
}

/// A server's whole run-time record.
#[derive(Clone, Debug)]
pub struct Record {
    pub admin: Admin,
    next_admin: Admin,
    pub oper: Oper,
    next_oper: Oper,
    /// Initial weight (configuration) and current user weight, in configuration units.
    pub iweight: u32,
    pub uweight: u32,
    /// Effective weight in sixteenths (see [`WEIGHT_SCALE`]).
    pub eweight: u32,
    /// The algorithm follows weight changes at run time (not `static-rr`/map-based hashing):
    /// only then does `slowstart` ramp the weight.
    pub dynamic_weights: bool,
    pub maxconn: u32,
    pub slowstart: Option<Duration>,
    pub last_change: Instant,
    /// Time spent DOWN before the current state.
    pub down_time: Duration,
    pub check: Option<Check>,
    pub agent: Option<Check>,
    /// `option log-health-checks`.
    pub log_checks: bool,
    pub down_transitions: u64,
    pub failed_checks: u64,
    pub failed_observed: u64,
    /// The check counter `show servers state` shows for a server without a check, once a
    /// server-state file set it.
    pub unchecked_health: Option<u32>,
    reason: Reason,
    cause: String,
}

impl Record {
    pub fn new(weight: u32, maxconn: u32, now: Instant) -> Self {
        Record {
            admin: Admin::default(),
            next_admin: Admin::default(),
            oper: Oper::Running,
            next_oper: Oper::Running,
            iweight: weight,
            uweight: weight,
            eweight: weight * WEIGHT_SCALE,
            dynamic_weights: true,
            maxconn,
            slowstart: None,
            last_change: now,
            down_time: Duration::ZERO,
            check: None,
            agent: None,
            log_checks: false,
            down_transitions: 0,
            failed_checks: 0,
            failed_observed: 0,
            unchecked_health: None,
            reason: Reason::default(),
            cause: String::new(),
        }
    }

    /// Starts in maintenance (`disabled`, or no address with `init-addr none`).
    pub fn start_in_maint(&mut self, flags: u8) {
        self.admin.0 |= flags;
        self.next_admin = self.admin;
        self.oper = Oper::Stopped;
        self.next_oper = Oper::Stopped;
        for c in [&mut self.check, &mut self.agent].into_iter().flatten() {
            if !c.agent {
                c.paused = true;
                c.health = 0;
            }
        }
    }

    /// A server added at run time: in forced maintenance, its checks off.
    pub fn start_dynamic(&mut self) {
        self.start_in_maint(Admin::FMAINT);
        for c in [&mut self.check, &mut self.agent].into_iter().flatten() {
            c.enabled = false;
            c.paused = false;
        }
    }

    /// Usable by the load balancers (HAProxy's `srv_currently_usable`).
    pub fn lb_usable(&self) -> bool {
        self.eweight > 0
            && !self.admin.maint()
            && !self.admin.drain()
            && matches!(self.oper, Oper::Running | Oper::Starting)
    }

    /// Up: persistence may still send it traffic (DRAIN and stopping included).
    pub fn is_up(&self) -> bool {
        self.oper != Oper::Stopped && !self.admin.maint()
    }

    /// The `maxconn` in force: during `slowstart`, a share growing with the elapsed time.
    pub fn effective_maxconn(&self, now: Instant) -> u32 {
        match (self.oper, self.slowstart) {
            (Oper::Starting, Some(ss)) if self.maxconn > 0 => {
                let elapsed = now.saturating_duration_since(self.last_change).as_secs();
                if elapsed >= ss.as_secs() {
                    return self.maxconn;
                }
                let ratio = 100 * elapsed / ss.as_secs().max(1);
                (u64::from(self.maxconn) * ratio / 100).max(1) as u32
            }
            _ => self.maxconn,
        }
    }

    /// Throttle percentage shown while warming up (`None` when not ramping).
    pub fn throttle(&self, now: Instant) -> Option<u32> {
        let ss = self.slowstart?.as_secs().max(1);
        let elapsed = now.saturating_duration_since(self.last_change).as_secs();
        (self.oper == Oper::Starting && elapsed < ss).then(|| (100 * elapsed / ss).max(1) as u32)
    }

    /// Recomputes the effective weight (HAProxy's `server_recalc_eweight`); ends the warm-up
    /// once `slowstart` has elapsed.
    fn recalc_eweight(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_change).as_secs();
        let ss = self.slowstart.map_or(0, |d| d.as_secs());
        if self.next_oper == Oper::Starting && elapsed >= ss {
            self.next_oper = Oper::Running;
        }
        let w = if self.next_oper == Oper::Starting && self.dynamic_weights && ss > 0 {
            (u64::from(WEIGHT_SCALE) * elapsed + ss) / ss
        } else {
            u64::from(WEIGHT_SCALE)
        };
        self.eweight = (u64::from(self.uweight) * w) as u32;
    }

    // ---- changes (each ends with `commit`) ----

    /// Records a check result and applies it (HAProxy's `set_server_check_status` followed by
    /// `check_notify_*`).
    pub fn check_result(&mut self, agent: bool, r: &CheckResult, now: Instant) -> Vec<Transition> {
        let backup_log = self.log_checks;
        let Some(check) = (if agent { self.agent.as_mut() } else { self.check.as_mut() }) else {
            return Vec::new();
        };
        let prev = check.status;
        let (report, failed) = check.record(r);
        if failed {
            self.failed_checks += 1;
        }
        let mut out = Vec::new();
        let check = if agent { self.agent.as_ref() } else { self.check.as_ref() };
        let Some(check) = check else { return out };
        if backup_log && (r.status != prev || report) {
            let state = if check.is_up() {
                if self.uweight > 0 {
                    "UP"
                } else {
                    "DRAIN"
                }
            } else {
                "DOWN"
            };
            out.push(Transition::CheckReport {
                agent,
                result: verdict(r.status),
                reason: Reason::of(check),
                counter: check.display(),
                state,
            });
        }
        let reason = (!self.log_checks).then(|| Reason::of(check));
        out.extend(match verdict(r.status) {
            Verdict::Failed => self.notify_failure(agent, reason, now),
            Verdict::CondPassed => self.notify_stopping(agent, reason, now),
            Verdict::Passed => self.notify_success(agent, reason, now),
            Verdict::Neutral => Vec::new(),
        });
        out
    }

    fn checks_up(&self) -> bool {
        let ok = |c: &Option<Check>| c.as_ref().is_none_or(|c| !c.enabled || c.is_up());
        ok(&self.check) && ok(&self.agent)
    }

    fn notify_failure(&mut self, agent: bool, r: Option<Reason>, now: Instant) -> Vec<Transition> {
        let c = if agent { &self.agent } else { &self.check };
        let Some(c) = c else { return Vec::new() };
        if (agent && c.status != CheckStatus::L7Sts) || c.health > 0 {
            return Vec::new();
        }
        self.set_stopped(r.unwrap_or_default(), now)
    }

    fn notify_success(&mut self, agent: bool, r: Option<Reason>, now: Instant) -> Vec<Transition> {
        if self.next_admin.maint() || !self.checks_up() {
            return Vec::new();
        }
        if agent && self.next_oper == Oper::Stopping {
            return Vec::new();
        }
        self.set_running(r.unwrap_or_default(), now)
    }

    fn notify_stopping(&mut self, agent: bool, r: Option<Reason>, now: Instant) -> Vec<Transition> {
        if self.next_admin.maint() || agent || !self.checks_up() {
            return Vec::new();
        }
        self.set_stopping(r.unwrap_or_default(), now)
    }

    /// Marks the server DOWN whatever its checks say (`srv_set_stopped`).
    pub fn set_stopped(&mut self, reason: Reason, now: Instant) -> Vec<Transition> {
        if self.admin.maint() || self.next_oper == Oper::Stopped {
            return Vec::new();
        }
        self.next_oper = Oper::Stopped;
        self.reason = reason;
        self.commit(now)
    }

    /// Marks the server UP unless in maintenance (`srv_set_running`).
    pub fn set_running(&mut self, reason: Reason, now: Instant) -> Vec<Transition> {
        if self.admin.maint() || matches!(self.next_oper, Oper::Starting | Oper::Running) {
            return Vec::new();
        }
        self.next_oper = if self.slowstart.is_some() { Oper::Starting } else { Oper::Running };
        self.reason = reason;
        self.commit(now)
    }

    /// Marks the server stopping unless in maintenance (`srv_set_stopping`).
    pub fn set_stopping(&mut self, reason: Reason, now: Instant) -> Vec<Transition> {
        if self.admin.maint() || self.next_oper == Oper::Stopping {
            return Vec::new();
        }
        self.next_oper = Oper::Stopping;
        self.reason = reason;
        self.commit(now)
    }

    /// Forces a check's counter and the state it implies (the runtime API's `set server
    /// <b>/<s> health|agent`), "changed from CLI".
    pub fn force(&mut self, agent: bool, oper: Oper, now: Instant) -> Vec<Transition> {
        let c = if agent { self.agent.as_mut() } else { self.check.as_mut() };
        if let Some(c) = c {
            c.health = if oper == Oper::Stopped { 0 } else { c.max() };
        }
        let reason = Reason { desc: "changed from CLI".into(), ..Reason::default() };
        match oper {
            Oper::Stopped => self.set_stopped(reason, now),
            Oper::Stopping => self.set_stopping(reason, now),
            Oper::Running | Oper::Starting => self.set_running(reason, now),
        }
    }

    /// Restores what a server-state file saved: a DOWN server stays DOWN (its check counter as
    /// saved) until its checks say otherwise; the last change keeps its time.
    pub fn restore(
        &mut self,
        down: bool,
        health: u32,
        since: Duration,
        now: Instant,
    ) -> Vec<Transition> {
        let mut out = Vec::new();
        match self.check.as_mut() {
            Some(c) if down => {
                c.health = health.min(c.rise.saturating_sub(1));
                let desc = "state restored from the server-state file".into();
                out = self.set_stopped(Reason { desc, ..Reason::default() }, now);
            }
            Some(_) => {}
            // Without a check, HAProxy's counter is set from the saved state (fully up with
            // the default rise and fall, or 0); only `show servers state` shows it.
            None => self.unchecked_health = Some(if down { 0 } else { 4 }),
        }
        self.last_change = now.checked_sub(since).unwrap_or(self.last_change);
        out
    }

    /// Takes over the state of the same server in the plan before an in-process reload: what
    /// an operator or the checks decided (forced maintenance and drain, a DOWN server, a
    /// runtime weight while the configured one is unchanged, checks turned off, check history,
    /// last change, downtime). What the new configuration says wins where it speaks: `disabled`,
    /// check settings (`rise`/`fall`/`inter`), `maxconn`, `slowstart`. No transition is
    /// reported: nothing changed for the server, only the plan around it.
    pub fn carry(&mut self, old: &Record, now: Instant) {
        self.down_transitions = old.down_transitions;
        self.failed_checks = old.failed_checks;
        self.failed_observed = old.failed_observed;
        // `disabled` is FMAINT + CMAINT. A server the old configuration disabled and the new
        // one does not starts as a new server would.
        if old.admin.has(Admin::CMAINT) && !self.admin.has(Admin::CMAINT) {
            return;
        }
        // With `disabled`, the configuration decides; otherwise a forced maintenance or drain
        // is the operator's.
        let mut runtime = old.admin.0 & Admin::FDRAIN;
        if !self.admin.has(Admin::CMAINT) {
            runtime |= old.admin.0 & Admin::FMAINT;
        }
        self.admin = Admin(self.admin.0 | runtime);
        self.next_admin = self.admin;
        if self.iweight == old.iweight {
            self.uweight = old.uweight;
        }
        for (new, old) in [(&mut self.check, &old.check), (&mut self.agent, &old.agent)] {
            let (Some(c), Some(o)) = (new.as_mut(), old.as_ref()) else { continue };
            c.enabled = o.enabled;
            c.status = o.status;
            c.code = o.code;
            c.desc = o.desc.clone();
            c.duration = o.duration;
            // The counter on the new rise/fall scale: fully up, or as far toward rise as it was.
            c.health = if o.is_up() { c.max() } else { o.health.min(c.rise.saturating_sub(1)) };
        }
        // A server found DOWN stays DOWN while a check can bring it back; without a check
        // nothing would, so it is up (as a new server is).
        let checked = self.check.as_ref().is_some_and(|c| c.enabled)
            || self.agent.as_ref().is_some_and(|c| c.enabled);
        self.oper = match old.oper {
            Oper::Stopped if !checked && !old.admin.maint() => Oper::Running,
            Oper::Starting if self.slowstart.is_none() => Oper::Running,
            o => o,
        };
        if self.admin.maint() {
            self.oper = Oper::Stopped;
        }
        for c in [&mut self.check, &mut self.agent].into_iter().flatten() {
            c.paused = !c.agent && self.admin.maint();
        }
        self.next_oper = self.oper;
        self.last_change = old.last_change;
        self.down_time = old.down_time;
        self.unchecked_health = old.unchecked_health;
        self.reason = old.reason.clone();
        self.cause = old.cause.clone();
        self.recalc_eweight(now);
        self.oper = self.next_oper;
    }

    /// Sets an administrative flag (`srv_set_admin_flag`).
    pub fn set_admin(&mut self, flag: u8, cause: &str, now: Instant) -> Vec<Transition> {
        if self.next_admin.has(flag) {
            return Vec::new();
        }
        self.next_admin.0 |= flag;
        self.cause = cause.to_string();
        self.commit(now)
    }

    /// Clears an administrative flag (`srv_clr_admin_flag`).
    pub fn clear_admin(&mut self, flag: u8, now: Instant) -> Vec<Transition> {
        if !self.next_admin.has(flag) {
            return Vec::new();
        }
        self.next_admin.0 &= !flag;
        self.commit(now)
    }

    /// Sets the user weight (configuration units) and applies it.
    pub fn set_weight(&mut self, w: u32, now: Instant) -> Vec<Transition> {
        self.uweight = w;
        self.commit_weight(now)
    }

    /// One warm-up step: the weight grows, and the warm-up ends once `slowstart` elapsed.
    pub fn warmup(&mut self, now: Instant) -> Vec<Transition> {
        if self.next_admin.maint() || self.next_oper != Oper::Starting {
            return Vec::new();
        }
        self.commit_weight(now)
    }

    fn commit_weight(&mut self, now: Instant) -> Vec<Transition> {
        let before = self.eweight;
        self.recalc_eweight(now);
        let mut out = self.commit(now);
        if out.is_empty() && self.eweight != before {
            out.push(Transition::Reweighted);
        }
        out
    }

    /// An agent's health word sets its counter outright (`up`: fully up, else down).
    pub fn set_agent_health(&mut self, up: bool) {
        if let Some(c) = self.agent.as_mut() {
            c.health = if up { c.max() } else { 0 };
        }
    }

    /// Makes the health check count one more failure before DOWN (`sudden-death`).
    pub fn sudden_death(&mut self) {
        if let Some(c) = self.check.as_mut() {
            if c.health > c.rise {
                c.health = c.rise + 1;
            }
        }
    }

    /// Puts the health check right at the edge, so the next failure is fatal (`mark-down`).
    pub fn edge_of_down(&mut self) {
        if let Some(c) = self.check.as_mut() {
            c.health = c.rise;
        }
    }

    /// Applies pending changes (HAProxy's `srv_update_status`).
    fn commit(&mut self, now: Instant) -> Vec<Transition> {
        let mut out = Vec::new();
        let was_stopping = self.oper == Oper::Stopping || self.admin.drain();
        if !self.admin.maint() {
            let next_admin = self.next_admin;
            self.next_admin = self.admin;
            let reason = std::mem::take(&mut self.reason);
            if self.oper != Oper::Stopped && self.next_oper == Oper::Stopped {
                self.last_change = now;
                self.eweight_for_state(now);
                out.push(Transition::Down { reason, was_stopping });
                self.down_transitions += 1;
            } else if self.oper != Oper::Stopping && self.next_oper == Oper::Stopping {
                self.last_change = now;
                out.push(Transition::Stopping { reason });
            } else if (self.oper != Oper::Running && self.next_oper == Oper::Running)
                || (self.oper != Oper::Starting && self.next_oper == Oper::Starting)
            {
                if self.oper == Oper::Stopped {
                    self.down_time += now.saturating_duration_since(self.last_change);
                }
                self.last_change = now;
                self.recalc_eweight(now);
                out.push(Transition::Up { reason });
            } else {
                let before = self.eweight;
                self.eweight_for_state(now);
                if before != self.eweight {
                    out.push(Transition::Reweighted);
                }
            }
            self.oper = self.next_oper;
            self.next_admin = next_admin;
        }
        self.reason = Reason::default();
        let cause = std::mem::take(&mut self.cause);
        self.commit_admin(cause, was_stopping, now, &mut out);
        out
    }

    /// The weight of the state now reached (0 when down).
    fn eweight_for_state(&mut self, now: Instant) {
        if self.next_oper == Oper::Stopped {
            return;
        }
        self.recalc_eweight(now);
    }

    fn commit_admin(
        &mut self,
        cause: String,
        was_stopping: bool,
        now: Instant,
        out: &mut Vec<Transition>,
    ) {
        let (cur, next) = (self.admin, self.next_admin);
        if !cur.maint() && next.maint() {
            if let Some(c) = self.check.as_mut() {
                if c.enabled {
                    c.paused = true;
                    c.health = 0;
                }
            }
            let forced = next.has(Admin::FMAINT);
            if self.oper == Oper::Stopped {
                out.push(Transition::MaintWhileDown { cause, forced });
            } else {
                self.last_change = now;
                self.oper = Oper::Stopped;
                self.next_oper = Oper::Stopped;
                self.down_transitions += 1;
                out.push(Transition::MaintFromUp { cause, forced, was_stopping });
            }
            self.admin = next;
            return;
        }
        if cur.maint() && !next.maint() {
            if let Some(c) = self.check.as_mut() {
                if c.enabled {
                    c.paused = false;
                    c.health = c.rise; // start OK but check at once
                }
            }
            if self.checks_up() {
                self.last_change = now;
                self.next_oper =
                    if self.slowstart.is_some() { Oper::Starting } else { Oper::Running };
            }
            self.oper = self.next_oper;
            self.admin = next;
            self.recalc_eweight(now);
            let which = cur.0 & !next.0 & Admin::MAINT;
            out.push(Transition::LeftMaint {
                which,
                up: self.oper != Oper::Stopped,
                drain: next.drain(),
            });
            return;
        }
        if next.maint() {
            self.admin = next;
            return;
        }
        if !cur.drain() && next.drain() {
            self.last_change = now;
            self.admin = next;
            out.push(Transition::Drain { cause, forced: next.has(Admin::FDRAIN) });
        } else if cur.drain() && !next.drain() {
            self.down_time += now.saturating_duration_since(self.last_change);
            self.last_change = now;
            self.admin = next;
            self.recalc_eweight(now);
            out.push(Transition::LeftDrain {
                forced: cur.has(Admin::FDRAIN),
                up: self.oper != Oper::Stopped,
            });
        } else {
            self.admin = next;
        }
    }

    /// Time spent DOWN in all, including the current downtime (HAProxy's `srv_downtime`).
    #[allow(dead_code)] // the stats page and `show servers state` read it; unit-tested
    pub fn downtime(&self, now: Instant) -> Duration {
        if self.oper != Oper::Stopped {
            return self.down_time;
        }
        self.down_time + now.saturating_duration_since(self.last_change)
    }

    /// The server is warming up: the backend ticks [`Record::warmup`] at this pace.
    pub fn warmup_step(&self) -> Option<Duration> {
        let ss = self.slowstart?;
        (self.oper == Oper::Starting).then(|| (ss / 20).max(Duration::from_secs(1)))
    }
}

#[cfg(test)]
mod tests;
