//! Per-task CPU profiling (the runtime API's `set profiling tasks on|off` and `show
//! profiling`, as HAProxy's): while it is on, each poll of a worker's tasks is timed by kind
//! (HTTP session, TCP session, health check) with the thread's CPU clock, and its latency is
//! measured as the time since the worker's current turn began (the tasks a turn runs were
//! woken by what that turn's poll found). Off (the default), a poll costs one relaxed load.
//!
//! Also the worker loop counters of `show activity`. Must not touch: what tasks do.

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::task::{Context, Poll};

/// What is timed.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    HttpSession = 0,
    TcpSession = 1,
    HealthCheck = 2,
}

const NAMES: [&str; 3] = ["http_session", "tcp_session", "health_check"];

#[derive(Default)]
struct Stat {
    calls: AtomicU64,
    cpu_ns: AtomicU64,
    lat_ns: AtomicU64,
}

static STATS: [Stat; 3] = [
    Stat { calls: AtomicU64::new(0), cpu_ns: AtomicU64::new(0), lat_ns: AtomicU64::new(0) },
    Stat { calls: AtomicU64::new(0), cpu_ns: AtomicU64::new(0), lat_ns: AtomicU64::new(0) },
    Stat { calls: AtomicU64::new(0), cpu_ns: AtomicU64::new(0), lat_ns: AtomicU64::new(0) },
];

/// 0: auto-off (HAProxy's default), 1: on, 2: off.
static MODE: AtomicU8 = AtomicU8::new(0);

fn on() -> bool {
    MODE.load(Ordering::Relaxed) == 1
}

pin_project_lite::pin_project! {
    /// A task timed by kind while profiling is on.
    pub struct Profiled<F> {
        kind: Kind,
        // The session's place in the worker's table (`u32::MAX`: none), made current while
        // its task is polled (see `sessions::enter`).
        stream: u32,
        #[pin]
        inner: F,
    }
}

impl<F> Profiled<F> {
    pub fn new(kind: Kind, stream: u32, inner: F) -> Self {
        Profiled { kind, stream, inner }
    }
}

impl<F: Future> Future for Profiled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        crate::server::users::enter(*this.stream);
        if !on() {
            let r = this.inner.poll(cx);
            crate::server::users::enter(u32::MAX);
            return r;
        }
        let lat = tokio::time::Instant::now().saturating_duration_since(crate::clock::now());
        let t0 = crate::sys::thread_cpu_ns();
        let r = this.inner.poll(cx);
        let cpu = crate::sys::thread_cpu_ns().saturating_sub(t0);
        crate::server::users::enter(u32::MAX);
        let s = &STATS[*this.kind as usize];
        s.calls.fetch_add(1, Ordering::Relaxed);
        s.cpu_ns.fetch_add(cpu, Ordering::Relaxed);
        s.lat_ns.fetch_add(lat.as_nanos() as u64, Ordering::Relaxed);
        r
    }
}

/// `set profiling <what> <how>`: the answer (empty when done).
pub fn set(what: &str, how: &str) -> &'static str {
    match (what, how) {
        ("memory", _) => "Memory profiling not compiled in.\n",
        ("tasks", "on") => {
            // Turned on: counting starts over, as HAProxy's does.
            for s in &STATS {
                s.calls.store(0, Ordering::Relaxed);
                s.cpu_ns.store(0, Ordering::Relaxed);
                s.lat_ns.store(0, Ordering::Relaxed);
            }
            MODE.store(1, Ordering::Relaxed);
            ""
        }
        // Fulcrum never turns it on by itself: `auto` stays off until asked.
        ("tasks", "auto") => {
            MODE.store(0, Ordering::Relaxed);
            ""
        }
        ("tasks", "off") => {
            MODE.store(2, Ordering::Relaxed);
            ""
        }
        ("tasks", _) => "Expects 'on', 'auto', or 'off'.\n",
        _ => "Expects either 'tasks' or 'memory'.\n",
    }
}

/// HAProxy's `print_time_short`: seven characters, `-` for zero.
fn short_time(out: &mut String, ns: u64) {
    out.push_str("   ");
    if ns == 0 {
        out.push_str("   -   ");
        return;
    }
    let mut val = ns as f64;
    let unit = 'unit: {
        for (unit, step, limit) in [
            ("ns", 1.0, 1000.0),
            ("us", 1000.0, 1000.0),
            ("ms", 1000.0, 1000.0),
            ("s ", 1000.0, 60.0),
            ("m ", 60.0, 60.0),
        ] {
            val /= step;
            if val < limit {
                break 'unit unit;
            }
        }
        val /= 60.0;
        "h "
    };
    let _ = if val < 10.0 {
        write!(out, "{val:1.3}{unit}")
    } else if val < 100.0 {
        write!(out, "{val:2.2}{unit}")
    } else {
        write!(out, "{val:3.1}{unit}")
    };
}

/// `show profiling`.
pub fn show(out: &mut String) {
    let mode = match MODE.load(Ordering::Relaxed) {
        1 => "on",
        2 => "off",
        _ => "auto-off",
    };
    let _ = writeln!(
        out,
        "Per-task CPU profiling              : {mode:<8}      # set profiling tasks {{on|auto|off}}"
    );
    out.push_str(
        "Memory usage profiling              : off           # set profiling memory {on|off}\n",
    );
    out.push_str("Tasks activity:\n  function                      calls   cpu_tot   cpu_avg   lat_tot   lat_avg\n");
    let mut rows: Vec<(usize, u64)> =
        (0..STATS.len()).map(|i| (i, STATS[i].calls.load(Ordering::Relaxed))).collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (i, calls) in rows.into_iter().filter(|r| r.1 > 0) {
        let name = NAMES[i];
        let width = 35usize.saturating_sub(name.len()).max(1);
        let _ = write!(out, "  {name}{calls:>width$}");
        let cpu = STATS[i].cpu_ns.load(Ordering::Relaxed);
        let lat = STATS[i].lat_ns.load(Ordering::Relaxed);
        short_time(out, cpu);
        short_time(out, cpu / calls);
        short_time(out, lat);
        short_time(out, lat / calls);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::short_time;

    #[test]
    fn times_are_printed_as_haproxy_prints_them() {
        let t = |ns| {
            let mut s = String::new();
            short_time(&mut s, ns);
            s
        };
        assert_eq!(t(0), "      -   ");
        assert_eq!(t(512), "   512.0ns");
        assert_eq!(t(1_500), "   1.500us");
        assert_eq!(t(25_000_000), "   25.00ms");
        assert_eq!(t(2_000_000_000), "   2.000s ");
    }
}
