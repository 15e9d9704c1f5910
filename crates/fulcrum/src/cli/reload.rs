//! Building a generation: the shared state and each worker's share of a plan, at start-up and
//! for an in-process reload (SIGUSR2, the runtime API's `reload`).
//!
//! A reload reads the configuration files again and builds a new plan that takes over the
//! running one's live state by proxy and server names (`plan::Previous`). Nothing is touched
//! until everything is ready: an invalid configuration, or a new address that cannot be bound,
//! is reported and the running plan goes on. The listening sockets that stay are this
//! process's own, duplicated (`Inherited::from_self`), so no connection waiting in their queues
//! is refused. Under `chroot` in master-worker mode, the master reads the files outside the
//! jail and hands them over (`link::files_for_reload`, see `master`); without a master they
//! are read inside the jail. What only a restart can change (threads, privileges, `chroot`, the stats
//! sockets, the process `maxconn`) is kept, with a warning naming it.
//!
//! Must not touch: the workers (the runtime hands them the generation) or server state beyond
//! what `plan::build` carries over.

use std::sync::Arc;

use fulcrum_config as cfg;

use super::args::Args;
use super::servers;
use super::{alert_line, notice_line, warning_line};
use crate::frontend::limit::Limit;
use crate::frontend::rate::RateLimit;
use crate::listener::Inherited;
use crate::plan::{self, Plan};
use crate::runtime::{Edit, NewPlan, Reloader, WorkerGen, WorkerSocket};
use crate::shared::Shared;

/// What stays from one generation to the next.
pub struct Context {
    pub nbthread: usize,
    /// The process `maxconn` in force.
    pub maxconn: u32,
    pub debug: bool,
    pub global_limit: Arc<Limit>,
    pub conn_rate: Arc<RateLimit>,
    pub comp_rate: Arc<crate::frontend::rate::CompRate>,
    pub sess_rate: Arc<RateLimit>,
    pub ssl_rate: Arc<RateLimit>,
    pub started: std::time::SystemTime,
    pub started_at: std::time::Instant,
    /// The `global` section the process started with (what only a restart changes).
    pub global: cfg::Global,
}

impl Context {
    /// The state every worker of a generation shares.
    pub fn shared(&self, plan: &Plan) -> Shared {
        let g = &plan.global;
        // The backends' `fullconn` as `minconn` servers read it (HAProxy's default needs the
        // process `maxconn`).
        let scope = crate::stats::rows::Scope {
            global_maxconn: self.maxconn,
            frontends: &plan.proxies.frontends,
            legends: false,
        };
        for be in plan.proxies.backends.iter() {
            let full = crate::stats::rows::fullconn(be, &scope);
            be.fullconn_now.store(full, std::sync::atomic::Ordering::Relaxed);
        }
        Shared {
            global_limit: Arc::clone(&self.global_limit),
            debug: self.debug,
            // HAProxy's counts (`pool_low_count`, `pool_high_count`): the ratios of its
            // `maxsock`, about two descriptors per connection.
            pool_fds: {
                let maxsock = self.maxconn as usize * 2;
                let share = |ratio: u32| (maxsock * ratio as usize).div_ceil(100);
                (share(g.tune_pool_low_fd_ratio), share(g.tune_pool_high_fd_ratio))
            },
            h2: fulcrum_config::TuneH2 { no_websocket: g.tune.h2_no_websocket, ..g.tune_h2 },
            max_accept: g.tune_maxaccept.map_or(usize::MAX, |n| n as usize),
            bufsize: g.tune_bufsize,
            proxies: Arc::clone(&plan.proxies),
            hard_stop_after: g.hard_stop_after,
            grace: g.grace,
            stopping: Default::default(),
            conn_rate: Arc::clone(&self.conn_rate),
            comp_rate: Arc::clone(&self.comp_rate),
            sess_rate: Arc::clone(&self.sess_rate),
            ssl_rate: Arc::clone(&self.ssl_rate),
            process: crate::shared::Process {
                started: self.started,
                started_at: self.started_at,
                nbthread: self.nbthread,
                hard_maxconn: self.maxconn,
                ulimit_n: crate::sys::nofile_limit().map_or(0, |l| l.0),
                node: g.node.clone().unwrap_or_else(|| crate::sys::hostname().to_string()),
                description: g.description.clone(),
                listeners: plan
                    .proxies
                    .frontends
                    .iter()
                    .flat_map(|f| &f.binds)
                    .map(|b| b.addrs.len())
                    .sum(),
            },
        }
    }

    /// `maxconnrate`, `maxsessrate`, `maxsslrate`, `maxcomprate` and `maxsslconn` as the
    /// configuration says (start-up, a reload).
    pub fn apply_rates(&self, g: &cfg::Global) {
        self.conn_rate.set_max(g.maxconnrate.unwrap_or(0));
        self.comp_rate.set(g.maxcomprate.unwrap_or(0), g.comp_min_idle.clamp(0, 100) as u8);
        self.sess_rate.set_max(g.maxsessrate.unwrap_or(0));
        self.ssl_rate.set_max(g.maxsslrate.unwrap_or(0));
        let max_tls = u64::from(g.tls.max_conns);
        crate::counters::tls().max.store(max_tls, std::sync::atomic::Ordering::Relaxed);
    }

    /// Global settings a reload cannot apply, named in warnings.
    fn restart_only(&self, g: &cfg::Global) -> Vec<&'static str> {
        let old = &self.global;
        let differs =
            |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") != format!("{b:?}");
        let checks: [(&'static str, bool); 10] = [
            ("nbthread", differs(&old.nbthread, &g.nbthread)),
            ("cpu-map", differs(&old.cpu_map, &g.cpu_map)),
            ("maxconn", differs(&old.maxconn, &g.maxconn)),
            ("ulimit-n", differs(&old.ulimit_n, &g.ulimit_n)),
            ("user", differs(&old.user, &g.user)),
            ("group", differs(&old.group, &g.group)),
            ("chroot", differs(&old.chroot, &g.chroot)),
            ("daemon", old.daemon != g.daemon),
            ("pidfile", differs(&old.pidfile, &g.pidfile)),
            ("stats socket", differs(&old.stats_sockets, &g.stats_sockets)),
        ];
        checks.into_iter().filter(|c| c.1).map(|c| c.0).collect()
    }
}

/// Each worker's generation: its listening sockets and, in turn, the health-check tasks (as
/// HAProxy spreads check tasks over threads).
pub fn generations(
    plan: &Plan,
    per_worker: Vec<Vec<WorkerSocket>>,
    shared: &Arc<Shared>,
) -> Vec<WorkerGen> {
    let n = per_worker.len().max(1);
    let mut checks: Vec<Vec<crate::health::Job>> = (0..n).map(|_| Vec::new()).collect();
    for (i, job) in
        crate::health::jobs(&plan.proxies.backends, &plan.global).into_iter().enumerate()
    {
        checks[i % n].push(job);
    }
    per_worker
        .into_iter()
        .zip(checks)
        .map(|(sockets, jobs)| WorkerGen { sockets, jobs, shared: Arc::clone(shared) })
        .collect()
}

/// The reload the runtime calls: the configuration texts in force are kept, so that a server
/// added or deleted at run time rebuilds from them (and a reload from the files forgets such
/// changes, as with HAProxy).
pub fn reloader(args: Args, ctx: Context, sources: Vec<cfg::Source>) -> Reloader {
    let mut sources = sources;
    Box::new(move |current, edit| {
        let (next, texts) = match edit {
            Edit::Files => reload(&args, &ctx, current)?,
            Edit::AddServer { backend, name, words } => {
                let texts = servers::add(current, &sources, backend, name, words)?;
                let mut next = rebuild(&args, &ctx, current, &texts)?;
                servers::start_added(&next, backend, name);
                next.messages = vec!["New server registered.\n".into()];
                (next, texts)
            }
            Edit::DelServer { backend, name } => {
                let texts = servers::delete(current, &sources, backend, name)?;
                let mut next = rebuild(&args, &ctx, current, &texts)?;
                next.messages = vec!["Server deleted.".into()];
                (next, texts)
            }
        };
        sources = texts;
        Ok(next)
    })
}

/// A new generation from configuration texts in memory (a server edit): references keep
/// their run-time entries; errors are the configuration's, without their place.
fn rebuild(
    args: &Args,
    ctx: &Context,
    current: &Arc<Shared>,
    texts: &[cfg::Source],
) -> Result<NewPlan, Vec<String>> {
    let mut out = Vec::new();
    let strip = |out: Vec<String>| -> Vec<String> {
        let errors = out.iter().filter(|l| l.starts_with("[ALERT]"));
        let first = errors.map(|l| l.rsplit_once(" : ").map_or(l.as_str(), |x| x.1)).next();
        vec![format!("{}\n", first.unwrap_or("Failed to add the server."))]
    };
    let Some(config) = super::load_sources(texts, (args.quiet, args.zero_warning), &mut out) else {
        return Err(strip(out));
    };
    let prev = plan::Previous {
        frontends: &current.proxies.frontends,
        backends: &current.proxies.backends,
        tables: Some(&current.proxies.tables),
    };
    crate::rules::refs::begin_reload(true);
    let result = build(ctx, &config, prev, &mut out);
    crate::rules::refs::end_reload(result.is_some());
    match result {
        Some((plan, per_worker)) => Ok(commit(ctx, current, plan, per_worker, Vec::new())),
        None => Err(strip(out)),
    }
}

fn reload(
    args: &Args,
    ctx: &Context,
    current: &Arc<Shared>,
) -> Result<(NewPlan, Vec<cfg::Source>), Vec<String>> {
    let failed = |mut out: Vec<String>| {
        out.push(alert_line("Reload failed: nothing was changed."));
        out
    };
    let mut out = Vec::new();
    match crate::link::files_for_reload() {
        // The master found the configuration invalid (its lines), or could not be asked.
        Some(Err(lines)) => {
            let master = |l: String| if l.starts_with('[') { l } else { alert_line(l) };
            return Err(failed(lines.into_iter().map(master).collect()));
        }
        Some(Ok(files)) => crate::files::serve(files),
        None => {}
    }
    let Some((config, texts)) = super::load_config(args, &mut out) else {
        return Err(failed(jailed(ctx, out)));
    };
    if !config.has_listener() {
        // The new worker would not start (HAProxy's new worker exits with these words).
        out.push(alert_line(super::NO_LISTENER));
        return Err(failed(out));
    }
    let prev = plan::Previous {
        frontends: &current.proxies.frontends,
        backends: &current.proxies.backends,
        tables: Some(&current.proxies.tables),
    };
    // Map and ACL files are read again; the runtime API sees the new ones once the reload commits.
    crate::rules::refs::begin_reload(false);
    let result = build(ctx, &config, prev, &mut out);
    crate::rules::refs::end_reload(result.is_some());
    match result {
        Some((plan, per_worker)) => Ok((commit(ctx, current, plan, per_worker, out), texts)),
        None => Err(failed(jailed(ctx, out))),
    }
}

/// A failed reload's lines, with a hint when the files were read inside a jail for want of a
/// master outside it.
fn jailed(ctx: &Context, mut out: Vec<String>) -> Vec<String> {
    if let (Some(dir), false) = (&ctx.global.chroot, crate::link::has_master()) {
        out.push(notice_line(format!(
            "files were read inside the chroot '{}': in master-worker mode (-W, -Ws) the \
             master reads them outside it.",
            dir.display()
        )));
    }
    out
}

/// The new plan and its listening sockets, or `None` (the reasons are in `out`).
fn build(
    ctx: &Context,
    config: &cfg::Config,
    prev: plan::Previous<'_>,
    out: &mut Vec<String>,
) -> Option<(Plan, Vec<Vec<WorkerSocket>>)> {
    let plan = super::build_plan(config, prev, Vec::new(), out)?;
    for what in ctx.restart_only(&plan.global) {
        out.push(warning_line(format!(
            "reload: the '{what}' setting changed; it takes effect at the next restart."
        )));
    }
    let mut inherited = match Inherited::from_self() {
        Ok(i) => i,
        Err(e) => {
            out.push(alert_line(format!("Reload: cannot find the listening sockets: {e}")));
            return None;
        }
    };
    let per_worker = match super::open_listeners(&plan, ctx.nbthread, &mut inherited) {
        Ok(s) => s,
        Err(lines) => {
            out.extend(lines.into_iter().map(alert_line));
            return None;
        }
    };
    drop(inherited); // duplicates of sockets no longer listened on
    crate::listener::remember(per_worker.iter().flatten().map(|ws| &ws.socket.socket));
    Some((plan, per_worker))
}

/// Everything is ready: the new plan's limits apply and its generation is made.
fn commit(
    ctx: &Context,
    current: &Arc<Shared>,
    plan: Plan,
    per_worker: Vec<Vec<WorkerSocket>>,
    mut out: Vec<String>,
) -> NewPlan {
    // Committed: the new limits apply to the counts carried over.
    for fe in &plan.proxies.frontends {
        fe.apply_maxconn();
    }
    ctx.apply_rates(&plan.global);
    let shared = ctx.shared(&plan);
    let shared = Arc::new(shared);
    let kept = plan
        .proxies
        .backends
        .iter()
        .flat_map(|b| {
            let old = current.proxies.backend(&b.name);
            b.servers
                .iter()
                .filter(move |s| old.is_some_and(|o| o.servers.iter().any(|x| x.name == s.name)))
        })
        .count();
    out.push(notice_line(format!(
        "Reloaded: {} frontends, {} backends; {kept} servers kept their state.",
        plan.proxies.frontends.len(),
        plan.proxies.backends.len()
    )));
    NewPlan { workers: generations(&plan, per_worker, &shared), shared, messages: out }
}
