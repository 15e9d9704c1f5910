//! Health checks, agent checks and slow-start steps: one task per check, spread over the
//! workers, each sleeping until its next run (HAProxy's `check.c`). A task runs its check
//! (`run`), hands the result to the backend's status entry point (`Backend::change_server`),
//! then waits `inter`, `fastinter` or `downinter` as the server's state says, with
//! `spread-checks` jitter. The first checks of all servers are spread over the smallest
//! interval as HAProxy spreads them.
//!
//! Must not touch: server state (only the status entry point changes it), the request path.

pub mod agent;
mod custom;
mod expect;
pub mod external;
mod http;
pub mod run;

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::{CheckKind, CustomExpect, ExpectKind, ExpectStep, Global, SendStep};

use crate::backend::status::Change;
use crate::backend::Backend;
use crate::server::Target;

/// HAProxy's `SRV_CHK_INTER_THRES`: checks more frequent than this do not set the spread.
const INTER_THRESHOLD: Duration = Duration::from_millis(1000);

/// What a task does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Health,
    Agent,
    /// Slow-start steps of a server that has `slowstart`.
    Warmup,
}

/// One task: a server's check (or warm-up), and when it first runs.
#[derive(Debug)]
pub struct Job {
    pub backend: Arc<Backend>,
    pub idx: usize,
    pub kind: Kind,
    pub first: Duration,
    /// `spread-checks` percentage.
    pub spread: u32,
    /// `pp2-never-send-local`.
    pub never_local: bool,
}

/// The tasks a plan needs (its backends, its `global` settings), in HAProxy's order (backends,
/// then servers; health before agent).
pub fn jobs(backends: &[Arc<Backend>], g: &Global) -> Vec<Job> {
    let mut checks = Vec::new();
    let mut warmups = Vec::new();
    // (A disabled backend's servers are not checked.)
    for be in backends.iter().filter(|b| !b.disabled) {
        for (idx, s) in be.servers.iter().enumerate() {
            let r = s.state();
            for (agent, c) in [(false, &r.check), (true, &r.agent)] {
                if let Some(c) = c {
                    checks.push((
                        Arc::clone(be),
                        idx,
                        agent,
                        c.interval(r.oper == crate::server::state::Oper::Stopped),
                    ));
                }
            }
            if r.slowstart.is_some() {
                warmups.push((Arc::clone(be), idx));
            }
        }
    }
    // HAProxy's `start_checks`: the smallest interval of at least 1 s spreads every first check.
    let n = checks.len().max(1) as u32;
    let min =
        checks.iter().map(|c| c.3).filter(|i| *i >= INTER_THRESHOLD).min().unwrap_or_default();
    let mut out = Vec::new();
    for (pos, (backend, idx, agent, inter)) in checks.into_iter().enumerate() {
        let mut span = min.max(inter);
        if let Some(max) = g.max_spread_checks {
            span = span.min(max);
        }
        let first = span * pos as u32 / n;
        let kind = if agent { Kind::Agent } else { Kind::Health };
        let (spread, never_local) = (g.spread_checks, g.tune.pp2_never_send_local);
        out.push(Job { backend, idx, kind, first, spread, never_local });
    }
    for (backend, idx) in warmups {
        let first = Duration::ZERO;
        out.push(Job { backend, idx, kind: Kind::Warmup, first, spread: 0, never_local: false });
    }
    out
}

/// A job's task: runs until the worker stops it.
pub async fn task(job: Job, bufsize: usize) {
    tokio::time::sleep(job.first).await;
    match job.kind {
        Kind::Warmup => warmup(&job).await,
        Kind::Health | Kind::Agent => checks(&job, bufsize).await,
    }
}

async fn checks(job: &Job, bufsize: usize) {
    let agent = job.kind == Kind::Agent;
    let be = &job.backend;
    let mut version = be.servers[job.idx].check_version();
    let Some(mut plan) = check_plan(be, job.idx, agent, (bufsize, job.never_local)) else { return };
    let mut rng = crate::random::u64() | 1;
    let mut scratch = run::Scratch::default();
    loop {
        // The server moved (`set server ... addr`), or its checks did (`check-port`...).
        if be.servers[job.idx].check_version() != version {
            version = be.servers[job.idx].check_version();
            let Some(p) = check_plan(be, job.idx, agent, (bufsize, job.never_local)) else {
                return;
            };
            plan = p;
        }
        let (paused, inter, up) = {
            let r = be.servers[job.idx].state();
            let c = if agent { r.agent.as_ref() } else { r.check.as_ref() };
            let Some(c) = c else { return };
            (c.paused || !c.enabled, c.interval(!r.is_up()), r.is_up())
        };
        if let (false, false, Some(x)) = (paused, agent, &be.external_check) {
            let limit = external::limit(inter, plan.timeout_check, plan.timeout_connect);
            let result = external::run(x, be, job.idx, limit).await;
            be.change_server(job.idx, Change::Check { agent, result });
        } else if !paused {
            let state = || send_state(be, job.idx);
            let send_state = plan.send_state.then_some(&state as _);
            let change = match run::run(&plan, send_state, &mut scratch, up).await {
                run::Outcome::Done(result) => Change::Check { agent, result },
                run::Outcome::Twice(first, result) => {
                    be.change_server(job.idx, Change::Check { agent, result: first });
                    Change::Check { agent, result }
                }
                run::Outcome::Agent { reply, duration } => Change::Agent { reply, duration },
            };
            be.change_server(job.idx, change);
            scratch.close();
        }
        let (next, fastinter) = {
            let r = be.servers[job.idx].state();
            let c = if agent { r.agent.as_ref() } else { r.check.as_ref() };
            (c.map(|c| c.interval(!r.is_up())).unwrap_or(inter), c.and_then(|c| c.fastinter))
        };
        let mut deadline = tokio::time::Instant::now() + jitter(next, job.spread, &mut rng);
        loop {
            let soon = be.servers[job.idx].check_soon.notified();
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                // Observed errors: the next check comes within `fastinter` (health check only).
                _ = soon, if !agent => {
                    if let Some(fi) = fastinter {
                        deadline = deadline.min(tokio::time::Instant::now() + fi);
                    }
                }
            }
        }
    }
}

/// `spread-checks`: ± `pct` % of the interval, at random.
fn jitter(inter: Duration, pct: u32, rng: &mut u64) -> Duration {
    if pct == 0 {
        return inter;
    }
    // xorshift: a cheap, good-enough source for jitter.
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let rv = inter.as_millis() as i64 * i64::from(pct) / 100;
    let frac = (*rng >> 11) as f64 / (1u64 << 53) as f64;
    let delta = rv - (2.0 * rv as f64 * frac) as i64;
    Duration::from_millis((inter.as_millis() as i64 + delta).max(1) as u64)
}

/// Slow start: a weight step every max(1 s, slowstart / 20) while the server warms up.
async fn warmup(job: &Job) {
    let be = &job.backend;
    loop {
        let step = be.servers[job.idx].state().warmup_step();
        match step {
            Some(d) => {
                tokio::time::sleep(d).await;
                be.change_server(job.idx, Change::Warmup);
            }
            None => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// What a check task needs to run its checks, prepared once.
struct CheckPlan {
    run: run::Plan,
    send_state: bool,
}

impl std::ops::Deref for CheckPlan {
    type Target = run::Plan;
    fn deref(&self) -> &run::Plan {
        &self.run
    }
}

fn check_plan(
    be: &Backend,
    idx: usize,
    agent: bool,
    (bufsize, never_local): (usize, bool),
) -> Option<CheckPlan> {
    let s = &be.servers[idx];
    let p = &s.policy;
    let hc = &be.health_check;
    let live = s.check_target();
    let (port, ip_override, inter, send_proxy) = if agent {
        let a = p.agent.as_ref()?;
        (live.agent_port.or(a.port), live.agent_addr.or(p.agent_addr), a.inter, false)
    } else {
        let c = p.check.as_ref()?;
        // HAProxy: the server's own header too when the check goes to its address and port.
        let own = s.send_proxy.is_some() && c.port.is_none() && p.check_addr.is_none();
        (live.check_port.or(c.port), live.check_addr.or(p.check_addr), c.inter, c.send_proxy || own)
    };
    let proxy_v2 = s.send_proxy.as_ref().filter(|sp| sp.version == 2).map(|sp| run::ProxyV2 {
        local: !never_local,
        crc32c: sp.options.iter().any(|o| o == "crc32c"),
    });
    let dest = match &s.target() {
        Target::Unix(path) if port.is_none() && ip_override.is_none() => {
            run::Dest::Unix(path.clone())
        }
        t => {
            let (ip, srv_port) = match t {
                Target::Inet(a) => (a.ip(), a.port()),
                Target::InetRelative { ip, .. } => (*ip, 0),
                _ => (std::net::IpAddr::from([0, 0, 0, 0]), 0),
            };
            let ip = ip_override.unwrap_or(ip);
            run::Dest::Inet(std::net::SocketAddr::new(ip, port.unwrap_or(srv_port)))
        }
    };
    let (kind, steps) = if agent {
        let mut steps = Vec::new();
        if let Some(text) = live.agent_send.clone().or_else(|| p.agent.as_ref()?.send.clone()) {
            steps.push(fulcrum_config::CheckStep::Send(SendStep::Bytes {
                data: text.into_bytes(),
                comment: None,
            }));
        }
        let e = ExpectStep::new(ExpectKind::Custom(CustomExpect::Agent));
        steps.push(fulcrum_config::CheckStep::Expect(e));
        (CheckKind::Tcp, run::Plan::steps(CheckKind::Tcp, &steps, false))
    } else {
        (hc.kind, run::Plan::steps(hc.kind, &hc.steps, hc.send_state))
    };
    let mut steps = steps;
    for st in &mut steps {
        if let run::Action::Connect { step, tls, .. } = &mut st.action {
            if let (true, Some(o)) = (step.ssl, s.tls.as_ref()) {
                // HAProxy: a step's `alpn` or none (not the server's), its `sni` or none.
                let mut c = (*o.check_config).clone();
                c.alpn_protocols =
                    step.alpn.iter().flatten().map(|p| p.clone().into_bytes()).collect();
                *tls = Some((Arc::new(c), step.sni.clone()));
            }
        }
    }
    let needs = run::Plan::needs(&steps);
    Some(CheckPlan {
        run: run::Plan {
            needs,
            kind: if agent { CheckKind::Connect } else { kind },
            steps,
            dest,
            inter,
            timeout_check: be.timeouts.check,
            timeout_connect: be.timeouts.connect,
            send_proxy,
            proxy_v2,
            socks4: s.socks4.filter(|_| !agent && p.check.as_ref().is_some_and(|c| c.via_socks4)),
            socks4_proxy: s.socks4.filter(|_| !agent),
            source: s.source.clone().or_else(|| be.source.clone()),
            tls: s
                .tls
                .as_ref()
                .filter(|o| !agent && o.check_ssl)
                .map(|o| (std::sync::Arc::clone(&o.check_config), o.check_sni.clone())),
            disable_on_404: !agent && hc.disable_on_404,
            h2: !agent && kind == CheckKind::Http && s.check_h2,
            samples: if agent { Default::default() } else { Arc::clone(&be.check_samples) },
            bufsize,
        },
        send_state: !agent && hc.send_state,
    })
}

/// HAProxy's `X-Haproxy-Server-State` value.
fn send_state(be: &Backend, idx: usize) -> String {
    let s = &be.servers[idx];
    let r = s.state();
    let text = match r.check.as_ref() {
        None => "no check".to_string(),
        Some(c) => {
            let (a, b) = c.display();
            let up = r.oper != crate::server::state::Oper::Stopped;
            let nolb = r.oper == crate::server::state::Oper::Stopping;
            let full = if up { c.health == c.rise + c.fall - 1 } else { c.health == 0 };
            match (up, nolb, full) {
                (true, false, true) => "UP".to_string(),
                (true, false, false) => format!("UP {a}/{b}"),
                (true, true, true) => "NOLB".to_string(),
                (true, true, false) => format!("NOLB {a}/{b}"),
                (false, _, true) => "DOWN".to_string(),
                (false, _, false) => format!("DOWN {a}/{b}"),
            }
        }
    };
    let (addr, port) = match &s.target() {
        Target::Inet(a) => (a.ip().to_string(), a.port().to_string()),
        Target::InetRelative { ip, .. } => (ip.to_string(), "0".to_string()),
        Target::Unix(p) => (p.display().to_string(), String::new()),
        Target::Unresolved => ("0.0.0.0".to_string(), String::new()),
    };
    let w = |e: u32| e.div_ceil(crate::server::state::WEIGHT_SCALE);
    let total: u32 = be
        .servers
        .iter()
        .filter(|x| x.lb_usable() && x.backup == s.backup)
        .map(|x| w(x.weight()))
        .sum();
    let active = be.active_sessions();
    let mut out = format!(
        "{text}; address={addr}; port={port}; name={}/{}; node={}; weight={}/{total}; scur={}/{}; qcur={}",
        be.name,
        s.name,
        crate::sys::hostname(),
        w(r.eweight),
        s.cur_conns(),
        active,
        be.server_queued(idx)
    );
    if let Some(t) = r.throttle(std::time::Instant::now()) {
        out.push_str(&format!("; throttle={t}%"));
    }
    out
}
