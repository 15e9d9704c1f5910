//! External checks (`option external-check`): a program's exit status as the check's result
//! (HAProxy's `extcheck.c`). The program gets HAProxy's arguments (`<proxy_address>
//! <proxy_port> <server_address> <server_port>`) and an environment that is only HAProxy's
//! variables (`PATH` from `external-check path`, `HAPROXY_PROXY_NAME`, `HAPROXY_SERVER_ADDR`...);
//! it runs inside the process's `chroot` and as its user, since the workers are already there.
//!
//! The check task waits for the program without blocking its worker (tokio's child reaper).
//! Its time is bounded as HAProxy bounds it (`inter`, or `timeout connect` when shorter and
//! `timeout check` is set); one that overruns is sent SIGTERM and reaped once it ends, so no
//! zombie is left. Without `insecure-fork-wanted` the program is not started unless the process
//! runs as root, as HAProxy's limit on processes (`RLIMIT_NPROC` 0) stops it.
//!
//! Must not touch: server state (the result goes to the status entry point), sockets.

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::CheckStatus;

use crate::backend::{Backend, ExternalCheck};
use crate::server::state::CheckResult;
use crate::server::Target;

/// The `RLIMIT_NOFILE` the process started with, restored in the program (as HAProxy does).
pub static BOOT_NOFILE: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();

/// HAProxy's `NOT_USED`: shown as is in arguments, empty in the environment.
pub const NOT_USED: &str = "NOT_USED";

/// Runs the program once for server `idx` and waits at most `limit` for it.
pub async fn run(x: &ExternalCheck, be: &Arc<Backend>, idx: usize, limit: Duration) -> CheckResult {
    let start = tokio::time::Instant::now();
    let done = |status, code, desc: String| CheckResult {
        status,
        code,
        desc,
        duration: Some(start.elapsed()),
    };
    // HAProxy's limit on processes (RLIMIT_NPROC 0) does not hold root back.
    if !x.may_fork && !crate::sys::is_root() {
        let e = crate::sys::os_words(&std::io::Error::from_raw_os_error(libc::EAGAIN));
        crate::log::alert_as_is(&format!("Failed to fork process for external health check (likely caused by missing 'insecure-fork-wanted'): {e}. Aborting."));
        return done(CheckStatus::SockErr, None, e);
    }
    let mut cmd = command(x, be, idx);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            // HAProxy's child exits with -1 (255) when exec fails, after saying why.
            let e = crate::sys::os_words(&e);
            crate::log::alert_as_is(&format!(
                "Failed to exec process for external health check: {e}. Aborting."
            ));
            return done(CheckStatus::ProcErr, Some(255), String::new());
        }
    };
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(st)) => {
            use std::os::unix::process::ExitStatusExt;
            let code = st.code().unwrap_or(-1);
            let ok = st.code() == Some(0) && st.signal().is_none();
            let status = if ok { CheckStatus::ProcOk } else { CheckStatus::ProcErr };
            done(status, Some(code), String::new())
        }
        Ok(Err(e)) => done(CheckStatus::SockErr, None, crate::sys::os_words(&e)),
        Err(_) => {
            if let Some(pid) = child.id() {
                crate::log::warning_as_is(&format!("kill {pid}"));
                // Not reaped yet (tokio reaps it only through `wait`, which the task below
                // does), so the pid is still our child's.
                crate::sys::terminate(pid);
            }
            // Reaped when it ends, off the check's path.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            done(CheckStatus::ProcTimeout, None, String::new())
        }
    }
}

/// The program, its arguments and environment, as HAProxy's `connect_proc_chk` prepares them.
fn command(x: &ExternalCheck, be: &Backend, idx: usize) -> tokio::process::Command {
    let s = &be.servers[idx];
    let (addr, port) = match s.target() {
        Target::Inet(a) => (a.ip().to_string(), a.port().to_string()),
        Target::InetRelative { ip, offset } => (ip.to_string(), (offset as u16).to_string()),
        Target::Unix(p) => (p.display().to_string(), NOT_USED.to_string()),
        Target::Unresolved => (String::new(), String::new()),
    };
    let env = |v: &str| if v == NOT_USED { String::new() } else { v.to_string() };
    let proto = if x.tcp {
        "tcp"
    } else {
        match s.proto {
            Some(fulcrum_config::MuxProto::H2) => "h2",
            _ => "h1",
        }
    };
    let maxconn = s.state().maxconn;
    let mut cmd = tokio::process::Command::new(&x.command);
    cmd.args([&x.proxy_addr, &x.proxy_port, &addr, &port])
        .env_clear()
        .env("PATH", &x.path)
        .env("HAPROXY_PROXY_NAME", &be.name)
        .env("HAPROXY_PROXY_ID", be.id.to_string())
        .env("HAPROXY_PROXY_ADDR", env(&x.proxy_addr))
        .env("HAPROXY_PROXY_PORT", env(&x.proxy_port))
        .env("HAPROXY_SERVER_NAME", &s.name)
        .env("HAPROXY_SERVER_ID", s.id.to_string())
        .env("HAPROXY_SERVER_ADDR", env(&addr))
        .env("HAPROXY_SERVER_PORT", env(&port))
        .env("HAPROXY_SERVER_MAXCONN", maxconn.to_string())
        .env("HAPROXY_SERVER_CURCONN", s.cur_conns().to_string())
        .env("HAPROXY_SERVER_SSL", if s.traffic_tls().is_some() { "1" } else { "0" })
        .env("HAPROXY_SERVER_PROTO", proto)
        // The standard streams are inherited as HAProxy's are (opening /dev/null could fail
        // inside a jail without one).
        .kill_on_drop(false);
    if let Some(&limits) = BOOT_NOFILE.get() {
        crate::sys::nofile_in_child(cmd.as_std_mut(), limits);
    }
    cmd
}

/// How long a run may last: `inter`, or `timeout connect` when shorter and `timeout check`
/// is set (HAProxy's `process_chk_proc`).
pub fn limit(
    inter: Duration,
    timeout_check: Option<Duration>,
    connect: Option<Duration>,
) -> Duration {
    match (timeout_check, connect) {
        (Some(_), Some(c)) => inter.min(c),
        _ => inter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_limit_is_haproxys() {
        let s = Duration::from_secs;
        assert_eq!(limit(s(2), None, Some(s(1))), s(2));
        assert_eq!(limit(s(2), Some(s(5)), Some(s(1))), s(1));
        assert_eq!(limit(s(2), Some(s(5)), Some(s(3))), s(2));
        assert_eq!(limit(s(2), Some(s(5)), None), s(2));
    }
}
