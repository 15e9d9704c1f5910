//! The rise/fall machine against an independent model, over every pass/fail sequence; the
//! administrative transitions; slow start.

use super::*;

fn ok() -> CheckResult {
    CheckResult {
        status: CheckStatus::L4Ok,
        code: None,
        desc: String::new(),
        duration: Some(Duration::ZERO),
    }
}

fn ko() -> CheckResult {
    CheckResult::new(CheckStatus::L4Con, "Connection refused")
}

fn record(rise: u32, fall: u32) -> Record {
    let now = Instant::now();
    let mut r = Record::new(1, 0, now);
    r.check = Some(Check::new(false, rise, fall, Duration::from_secs(2)));
    r
}

/// The counter as the manual describes it: `fall` consecutive failures take an up server down
/// (one only at start-up), `rise` consecutive successes bring a down server up.
struct Model {
    up: bool,
    left: u32,
    rise: u32,
    fall: u32,
}

impl Model {
    fn new(rise: u32, fall: u32) -> Self {
        Model { up: true, left: 1, rise, fall }
    }
    fn step(&mut self, pass: bool) -> Option<bool> {
        match (self.up, pass) {
            (true, true) => self.left = self.fall,
            (true, false) => {
                self.left -= 1;
                if self.left == 0 {
                    self.up = false;
                    self.left = self.rise;
                    return Some(false);
                }
            }
            (false, true) => {
                self.left -= 1;
                if self.left == 0 {
                    self.up = true;
                    self.left = self.fall;
                    return Some(true);
                }
            }
            (false, false) => self.left = self.rise,
        }
        None
    }
}

#[test]
fn rise_and_fall_follow_the_model_for_every_sequence_up_to_10_checks() {
    let t0 = Instant::now();
    for rise in 1..=4 {
        for fall in 1..=4 {
            for seq in 0u32..(1 << 10) {
                let mut r = record(rise, fall);
                let mut m = Model::new(rise, fall);
                for i in 0..10 {
                    let pass = seq & (1 << i) != 0;
                    let now = t0 + Duration::from_secs(i);
                    let result = if pass { ok() } else { ko() };
                    let got = r.check_result(false, &result, now);
                    let moved = got.iter().find_map(|t| match t {
                        Transition::Down { .. } => Some(false),
                        Transition::Up { .. } => Some(true),
                        _ => None,
                    });
                    assert_eq!(moved, m.step(pass), "rise {rise} fall {fall} seq {seq:b} step {i}");
                    assert_eq!(r.is_up(), m.up);
                    assert_eq!(r.lb_usable(), m.up);
                }
            }
        }
    }
}

#[test]
fn intervals_follow_inter_fastinter_and_downinter() {
    let now = Instant::now();
    let mut r = record(2, 3);
    let c = r.check.as_mut().expect("check");
    c.fastinter = Some(Duration::from_millis(500));
    c.downinter = Some(Duration::from_secs(10));
    // Start-up: at the edge, not fully up: fastinter.
    assert_eq!(r.check.as_ref().map(|c| c.interval(false)), Some(Duration::from_millis(500)));
    r.check_result(false, &ok(), now);
    assert_eq!(r.check.as_ref().map(|c| c.interval(false)), Some(Duration::from_secs(2)));
    r.check_result(false, &ko(), now);
    assert_eq!(r.check.as_ref().map(|c| c.interval(false)), Some(Duration::from_millis(500)));
    r.check_result(false, &ko(), now);
    r.check_result(false, &ko(), now);
    assert!(!r.is_up());
    assert_eq!(r.check.as_ref().map(|c| c.interval(true)), Some(Duration::from_secs(10)));
    r.check_result(false, &ok(), now);
    assert_eq!(r.check.as_ref().map(|c| c.interval(true)), Some(Duration::from_millis(500)));
}

#[test]
fn the_down_reason_is_the_check_result_unless_checks_are_logged() {
    let now = Instant::now();
    let mut r = record(2, 3);
    let t = r.check_result(false, &ko(), now);
    match &t[..] {
        [Transition::Down { reason, was_stopping: false }] => {
            assert_eq!(reason.status, Some(CheckStatus::L4Con));
            assert_eq!(reason.desc, "Connection refused");
        }
        other => panic!("{other:?}"),
    }
    let mut r = record(2, 3);
    r.log_checks = true;
    let t = r.check_result(false, &ko(), now);
    assert!(
        matches!(&t[0], Transition::CheckReport { counter: (0, 2), state: "DOWN", .. }),
        "{t:?}"
    );
    assert!(matches!(&t[1], Transition::Down { reason, .. } if reason.status.is_none()), "{t:?}");
}

#[test]
fn maintenance_takes_a_server_down_and_back_up() {
    let now = Instant::now();
    let mut r = record(2, 3);
    let t = r.set_admin(Admin::FMAINT, "by admin", now);
    assert!(matches!(&t[..], [Transition::MaintFromUp { forced: true, .. }]), "{t:?}");
    assert!(!r.is_up() && !r.lb_usable());
    assert!(r.check.as_ref().is_some_and(|c| c.paused));
    // Checks do not bring it back while in maintenance.
    assert!(r.check_result(false, &ok(), now).is_empty());
    let t = r.clear_admin(Admin::FMAINT, now);
    assert!(
        matches!(&t[..], [Transition::LeftMaint { which: Admin::FMAINT, up: true, drain: false }]),
        "{t:?}"
    );
    assert!(r.lb_usable());
    // A server down before maintenance stays down after it if its checks say so.
    let mut r = record(2, 3);
    r.check_result(false, &ko(), now);
    let t = r.set_admin(Admin::FMAINT, "", now);
    assert!(matches!(&t[..], [Transition::MaintWhileDown { .. }]), "{t:?}");
}

#[test]
fn drain_keeps_the_server_up_but_out_of_the_balancers() {
    let now = Instant::now();
    let mut r = record(2, 3);
    let t = r.set_admin(Admin::FDRAIN, "", now);
    assert!(matches!(&t[..], [Transition::Drain { forced: true, .. }]), "{t:?}");
    assert!(r.is_up() && !r.lb_usable());
    let t = r.clear_admin(Admin::FDRAIN, now);
    assert!(matches!(&t[..], [Transition::LeftDrain { forced: true, up: true }]), "{t:?}");
    assert!(r.lb_usable());
}

#[test]
fn slowstart_ramps_the_weight_and_maxconn_then_ends() {
    let t0 = Instant::now();
    let mut r = record(1, 1);
    r.maxconn = 100;
    r.slowstart = Some(Duration::from_secs(10));
    r.check_result(false, &ko(), t0);
    let t = r.check_result(false, &ok(), t0);
    assert!(matches!(&t[..], [Transition::Up { .. }]));
    assert_eq!(r.oper, Oper::Starting);
    assert_eq!(r.eweight, 1, "1/16 of weight 1 at the start");
    assert_eq!(r.effective_maxconn(t0), 1);
    let t5 = t0 + Duration::from_secs(5);
    assert_eq!(r.warmup(t5), [Transition::Reweighted]);
    assert_eq!(r.eweight, (16 * 5 + 10) / 10);
    assert_eq!(r.effective_maxconn(t5), 50);
    assert_eq!(r.throttle(t5), Some(50));
    let t10 = t0 + Duration::from_secs(10);
    let t = r.warmup(t10);
    assert!(matches!(&t[..], [Transition::Up { .. }]), "{t:?}");
    assert_eq!((r.oper, r.eweight), (Oper::Running, 16));
    assert_eq!(r.effective_maxconn(t10), 100);
    assert_eq!(r.warmup_step(), None);
}

#[test]
fn disable_on_404_puts_an_up_server_in_the_stopping_state() {
    let now = Instant::now();
    let mut r = record(2, 3);
    let cond = CheckResult {
        status: CheckStatus::L7OkCond,
        code: Some(404),
        desc: String::new(),
        duration: None,
    };
    let t = r.check_result(false, &cond, now);
    assert!(matches!(&t[..], [Transition::Stopping { .. }]), "{t:?}");
    assert!(r.is_up() && !r.lb_usable());
    let t = r.check_result(false, &ok(), now);
    assert!(matches!(&t[..], [Transition::Up { .. }]), "{t:?}");
}

#[test]
fn an_unreachable_agent_never_takes_the_server_down() {
    let now = Instant::now();
    let mut r = Record::new(1, 0, now);
    r.agent = Some(Check::new(true, 1, 1, Duration::from_secs(2)));
    for _ in 0..5 {
        assert!(r.check_result(true, &ko(), now).is_empty());
    }
    assert!(r.is_up());
    let down = CheckResult {
        status: CheckStatus::L7Sts,
        code: None,
        desc: "via agent : down".into(),
        duration: None,
    };
    let t = r.check_result(true, &down, now);
    assert!(matches!(&t[..], [Transition::Down { .. }]), "{t:?}");
}

#[test]
fn downtime_accumulates_across_down_periods() {
    let t0 = Instant::now();
    let mut r = record(1, 1);
    r.check_result(false, &ko(), t0);
    r.check_result(false, &ok(), t0 + Duration::from_secs(3));
    assert_eq!(r.downtime(t0 + Duration::from_secs(4)), Duration::from_secs(3));
    r.check_result(false, &ko(), t0 + Duration::from_secs(5));
    assert_eq!(r.downtime(t0 + Duration::from_secs(7)), Duration::from_secs(5));
}

#[test]
fn a_reload_carries_what_was_decided_at_run_time() {
    let now = Instant::now();
    let mut old = record(2, 3);
    old.iweight = 4;
    old.set_weight(7, now);
    old.set_admin(Admin::FDRAIN, "", now);
    for _ in 0..3 {
        old.check_result(false, &ko(), now);
    }
    assert_eq!(old.oper, Oper::Stopped);
    old.check_result(false, &ok(), now);
    assert_eq!(old.check.as_ref().map(|c| c.health), Some(1), "one success toward rise 2");

    // Same configured weight, checks with another rise/fall: still DOWN, one step toward rise.
    let mut new = record(3, 2);
    new.iweight = 4;
    new.carry(&old, now);
    assert_eq!((new.oper, new.admin.drain(), new.uweight), (Oper::Stopped, true, 7));
    assert_eq!(new.check.as_ref().map(|c| (c.health, c.status)), Some((1, CheckStatus::L4Ok)));
    assert_eq!(new.down_transitions, old.down_transitions);
    assert!(!new.lb_usable());
    // One more success is not enough at rise 3; two are.
    new.check_result(false, &ok(), now);
    assert_eq!(new.oper, Oper::Stopped);
    new.check_result(false, &ok(), now);
    assert_eq!(new.oper, Oper::Running);

    // A new configured weight wins over the runtime one; without a check, DOWN cannot last.
    let mut unchecked = Record::new(9, 0, now);
    unchecked.carry(&old, now);
    assert_eq!((unchecked.oper, unchecked.uweight), (Oper::Running, 9));
    assert!(unchecked.admin.drain(), "forced drain stays");

    // Forced maintenance stays, and `disabled` in the new configuration applies.
    let mut maint = record(2, 3);
    maint.set_admin(Admin::FMAINT, "", now);
    let mut next = record(2, 3);
    next.carry(&maint, now);
    assert!(next.admin.has(Admin::FMAINT) && next.oper == Oper::Stopped);
    let mut disabled = record(2, 3);
    disabled.start_in_maint(Admin::FMAINT | Admin::CMAINT);
    disabled.carry(&record(2, 3), now);
    assert!(disabled.admin.has(Admin::CMAINT) && !disabled.lb_usable());
    // And a server `disabled` before, enabled in the new configuration, leaves maintenance.
    let mut enabled = record(2, 3);
    let mut was_disabled = record(2, 3);
    was_disabled.start_in_maint(Admin::FMAINT | Admin::CMAINT);
    enabled.carry(&was_disabled, now);
    assert!(!enabled.admin.maint() && enabled.lb_usable());
}
