//! The process's file descriptor limit at start-up (`ulimit-n`, `fd-hard-limit`,
//! `strict-limits`), as HAProxy raises it. Must not touch: listeners, the plan.

use crate::plan::Plan;

use super::{alert, warning};

/// Raises `RLIMIT_NOFILE` as HAProxy does and returns the process `maxconn`: never above
/// `fd-hard-limit`; a limit that cannot be had stops the start with `strict-limits` (HAProxy
/// 2.6's default) when it follows from an explicit setting, otherwise the most that can be had
/// is taken with a warning.
pub(super) fn raise_fd_limit(
    plan: &Plan,
    cli_maxconn: Option<u32>,
    listener_fds: usize,
) -> Option<u32> {
    let (soft, hard) = crate::sys::nofile_limit().unwrap_or((1024, 1024));
    // External checks' programs get the limits the process started with, as in HAProxy.
    let _ = crate::health::external::BOOT_NOFILE.set((soft, hard));
    let tune = &plan.global.tune;
    let cap = tune.fd_hard_limit.unwrap_or(u64::MAX);
    let explicit = plan.global.ulimit_n;
    let maxconn = plan.global.maxconn.or(cli_maxconn).unwrap_or_else(|| {
        // As HAProxy: as many connections as the allowed descriptors permit (two per session).
        let fds = explicit.unwrap_or(hard.min(1 << 20).min(cap));
        (fds.saturating_sub(listener_fds as u64 + 64) / 2).clamp(100, u32::MAX as u64) as u32
    });
    let wanted = explicit.unwrap_or(u64::from(maxconn) * 2 + listener_fds as u64 + 64);
    // An explicit `ulimit-n` is applied as given, lower or higher; otherwise only raised.
    if wanted > soft || wanted > cap || explicit.is_some_and(|n| n != soft) {
        let set = match wanted > cap {
            true => Err(None),
            false => crate::sys::set_nofile_limit(wanted).map_err(Some),
        };
        if let Err(e) = set {
            let why = e.map(|e| format!(" ({e})")).unwrap_or_default();
            let msg = |limit: u64| {
                format!(
                    "[fulcrum.main()] Cannot raise FD limit to {wanted}, limit is {limit}{why}."
                )
            };
            // As HAProxy: fatal when the limit follows from an explicit setting.
            let asked = explicit.is_some() || plan.global.maxconn.or(cli_maxconn).is_some();
            if tune.strict_limits && (asked || wanted > cap) {
                alert(msg(soft.min(cap)));
                return None;
            }
            // `no strict-limits`: the most that can be had.
            let _ = crate::sys::set_nofile_limit(hard.min(cap));
            warning(msg(crate::sys::nofile_limit().map_or(soft, |l| l.0)));
        }
    }
    Some(maxconn)
}
