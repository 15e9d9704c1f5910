//! The command line and the start-up sequence, in HAProxy's order: read and check the
//! configuration (bind host names resolved, then the plan built: `-c` stops there), raise the
//! file-descriptor limit, bind every listener (taking over those of `-sf`/`-st` processes),
//! daemonise, write the pid file, drop privileges, tell old processes to leave, then start the
//! workers.
//!
//! Owns: the process's exit status and the messages printed before workers start.

pub mod args;
mod explain;
mod limits;
mod master;
mod reload;
mod servers;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fulcrum_config::{self as cfg, Diagnostic, Severity, Source};

use crate::frontend::limit::Limit;
use crate::listener::{self, BindOptions, Inherited};
use crate::plan::{self, Plan};
use crate::runtime::{self, WorkerSocket};
use args::Args;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn pid() -> u32 {
    std::process::id()
}

fn alert(msg: impl std::fmt::Display) {
    eprintln!("{}", alert_line(msg));
}

fn alert_line(msg: impl std::fmt::Display) -> String {
    format!("[ALERT]    ({}) : {msg}", pid())
}

fn warning(msg: impl std::fmt::Display) {
    eprintln!("{}", warning_line(msg));
}

fn warning_line(msg: impl std::fmt::Display) -> String {
    format!("[WARNING]  ({}) : {msg}", pid())
}

fn notice_line(msg: impl std::fmt::Display) -> String {
    format!("[NOTICE]   ({}) : {msg}", pid())
}

/// Prints messages gathered while loading (start-up prints them as they come).
fn print_all(lines: &[String]) {
    for l in lines {
        eprintln!("{l}");
    }
}

fn notice(msg: impl std::fmt::Display) {
    eprintln!("[NOTICE]   ({}) : {msg}", pid());
}

/// HAProxy 2.6's words when a configuration has nothing to listen on.
pub(crate) const NO_LISTENER: &str =
    "[haproxy.main()] No enabled listener found (check for 'bind' directives) ! Exiting.";

/// Runs the `fulcrum` command; returns the exit status.
pub fn main(argv: &[String]) -> i32 {
    // (The parser runs `lua-load` scripts as it reads their lines.)
    fulcrum_config::lua::set_host(Box::new(crate::lua::Host));
    match argv.first().map(String::as_str) {
        Some("testserver") => return fulcrum_testserver::main(&argv[1..]),
        Some("demo") => return crate::demo::main(&argv[1..]),
        Some("explain") => {
            crate::sys::sigpipe_default();
            return explain::main(&argv[1..]);
        }
        _ => {}
    }
    let args = match args::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            alert(e);
            eprint!("{}", args::USAGE);
            return 1;
        }
    };
    if args.version > 0 || args.check || args.help {
        crate::sys::sigpipe_default();
    }
    if args.help {
        print!("{}", args::USAGE);
        return 0;
    }
    if args.version > 0 {
        args::print_version(args.version);
        return 0;
    }
    if let Some(cond) = &args.eval {
        return match cfg::eval_condition(cond, &|k| std::env::var(k).ok()) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                alert(format!("Failed to evaluate condition: {e}"));
                2
            }
        };
    }
    if args.configs.is_empty() {
        eprint!("{}", args::USAGE);
        return 1;
    }
    // In master-worker mode the files read at start are kept: a jailed worker is answered
    // from them (see `master`).
    let recording = args.master_worker.then(crate::files::Recording::start);
    let mut out = Vec::new();
    let loaded = load_config(&args, &mut out);
    print_all(&out);
    let Some((config, sources)) = loaded else { return 1 };
    // `-c` builds the plan too: errorfiles, ACL pattern files and maps are read and server
    // addresses resolved there, so a check reports what a start would (no socket is opened).
    let mut out = Vec::new();
    let owner = owner_errors(&config.global);
    let plan = build_plan(&config, plan::Previous::default(), owner, &mut out);
    print_all(&out);
    let Some(plan) = plan else { return 1 };
    // As HAProxy 2.6: valid, but nothing would accept a connection.
    match (config.has_listener(), args.check) {
        (false, true) => {
            // (`-q`: the status says it, as HAProxy's.)
            if !args.quiet && !config.global.quiet {
                println!(
                    "Configuration file has no error but will not start (no listener) => exit(2)."
                );
            }
            return 2;
        }
        (false, false) => {
            alert(NO_LISTENER);
            return 1;
        }
        (true, true) => {
            if !args.quiet && !config.global.quiet {
                println!("Configuration file is valid");
            }
            return 0;
        }
        (true, false) => {}
    }
    // Saved server states (`load-server-state-from-file`), before any traffic.
    for w in crate::state_file::load(&config.global, &config.proxies, &plan.proxies.backends) {
        warning(w);
    }
    start(&args, plan, sources, recording.map(crate::files::Recording::finish))
}

/// Builds the run-time plan, reporting its errors, with `extra` ones found beside it, into
/// `out` as HAProxy prints configuration errors: each once (a `listen` is compiled as a
/// frontend and as a backend), in the order of the lines they name.
fn build_plan(
    config: &cfg::Config,
    prev: plan::Previous<'_>,
    extra: Vec<String>,
    out: &mut Vec<String>,
) -> Option<Plan> {
    let mut errors = extra;
    match plan::build(config, prev) {
        Ok(p) if errors.is_empty() => {
            for w in &p.warnings {
                out.push(warning_line(format!("config : {w}")));
            }
            return Some(p);
        }
        Ok(_) => {}
        Err(e) => errors.extend(e),
    }
    // A backend that failed to build is "unknown" to the frontends using it; loading checked
    // that every backend named exists, so such an error only echoes the backend's own.
    let echo = |e: &str| {
        let name = e.rsplit_once(": unknown backend '").and_then(|(_, n)| n.strip_suffix('\''));
        name.is_some_and(|n| config.backends().any(|b| b.name == n))
    };
    let mut shown: Vec<&str> = Vec::new();
    for e in &errors {
        if !shown.contains(&e.as_str()) && !echo(e) {
            shown.push(e);
        }
    }
    // In the order of the lines they name, as HAProxy finds them while parsing (files in the
    // order their first error came).
    let mut files: Vec<&str> = Vec::new();
    let mut at = (0, 0);
    let mut keyed: Vec<((usize, u32), &str)> = Vec::new();
    for e in &shown {
        if let Some((file, line)) = position(e) {
            let n = files.iter().position(|f| *f == file).unwrap_or_else(|| {
                files.push(file);
                files.len() - 1
            });
            at = (n, line);
        }
        keyed.push((at, e));
    }
    keyed.sort_by_key(|(at, _)| *at);
    for (_, e) in &keyed {
        out.push(alert_line(format!("config : {e}")));
    }
    for f in files {
        out.push(alert_line(format!("config : Error(s) found in configuration file : {f}")));
    }
    out.push(alert_line("config : Fatal errors found in configuration."));
    None
}

/// The file an error names in its `parsing [<file>:<line>]` or `[<file>:<line>]` prefix.
fn error_file(e: &str) -> Option<&str> {
    position(e).map(|(file, _)| file)
}

/// The file and line an error names in its `parsing [<file>:<line>]` or `[<file>:<line>]`
/// prefix.
fn position(e: &str) -> Option<(&str, u32)> {
    let rest = e.strip_prefix("parsing ").unwrap_or(e).strip_prefix('[')?;
    let place = &rest[..rest.find(']')?];
    let (file, line) = place.rsplit_once(':')?;
    Some((file, line.parse().ok()?))
}

/// Where a place is in the order the sources were read: (file, line).
fn key(sources: &[Source], (file, line): (&str, u32)) -> (usize, u32) {
    (sources.iter().position(|s| s.name == file).unwrap_or(usize::MAX), line)
}

/// The errors a plan built from `config` (a configuration with errors: the lines in error are
/// missing from it) finds in the files it draws on: error files, certificates, CA and CRL
/// files, ACL pattern files and maps. Its other errors may be echoes of the lines missing.
fn file_errors(config: &cfg::Config) -> Vec<String> {
    const FILE_ERRORS: [&str; 7] = [
        "error opening file",
        "failed to open pattern file",
        "unable to stat SSL certificate",
        "unable to load",
        "unable to open crt-list file",
        "unable to parse the certificate",
        "map file <",
    ];
    let mut found: Vec<String> = Vec::new();
    for e in plan::build(config, plan::Previous::default()).err().unwrap_or_default() {
        // (Each once: a `listen` is compiled as a frontend and as a backend.)
        if FILE_ERRORS.iter().any(|f| e.contains(f)) && !found.contains(&e) {
            found.push(e);
        }
    }
    found
}

/// Reads the `-f` files (a directory contributes its `*.cfg` in lexical order) and loads them.
fn read_sources(paths: &[PathBuf]) -> Result<Vec<Source>, String> {
    let mut sources = Vec::new();
    for path in paths {
        // Through `files`: a jailed worker's reload reads what its master read.
        let files = if crate::files::is_dir(path) {
            let mut files: Vec<PathBuf> = crate::files::list(path)
                .map_err(|e| open_error(path, &e))?
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "cfg"))
                .collect();
            files.sort();
            files
        } else {
            vec![path.clone()]
        };
        for f in files {
            let text = crate::files::read_string(&f).map_err(|e| open_error(&f, &e))?;
            sources.push(Source { name: f.display().to_string(), text });
        }
    }
    Ok(sources)
}

fn open_error(path: &Path, e: &std::io::Error) -> String {
    let reason = match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        _ => e.to_string(),
    };
    format!("Cannot open configuration file/directory {} : {reason}", path.display())
}

fn print_diag(d: &Diagnostic, quiet: bool, out: &mut Vec<String>) {
    if quiet && d.severity < Severity::AlertContinue {
        return;
    }
    if d.severity == Severity::Diag {
        return;
    }
    let text = d.to_string();
    let mut lines = text.lines();
    if let Some(first) = lines.next() {
        out.push(format!("{}({}) : config : {first}", d.severity.tag(), pid()));
    }
    for more in lines {
        out.push(more.to_string());
    }
}

/// The `user` and `group` names that name no one on this system, in HAProxy 2.6's words (it
/// looks them up while parsing). Checked by `-c` and at start, not on a reload: inside a
/// chroot the system's user database may be out of reach, and the workers keep the ids.
fn owner_errors(g: &cfg::Global) -> Vec<String> {
    let mut errors = Vec::new();
    let at = |span: &Option<cfg::Span>| span.as_ref().map_or(String::new(), |s| s.to_string());
    if let Some(cfg::UserSpec::Name(name)) = &g.user {
        if crate::sys::lookup_user(name).is_err() {
            let at = at(&g.user_at);
            errors.push(format!("parsing [{at}] : cannot find user id for '{name}' (0:Success)"));
        }
    }
    if let Some(cfg::UserSpec::Name(name)) = &g.group {
        if crate::sys::lookup_group(name).is_err() {
            let at = at(&g.group_at);
            errors.push(format!("parsing [{at}] : cannot find group id for '{name}' (0:Success)"));
        }
    }
    errors
}

/// After messages saying that something is "not supported yet", one line saying where the
/// list of what Fulcrum supports is (a person switching from HAProxy looks there next).
fn compat_hint(diags: &[Diagnostic], quiet: bool, out: &mut Vec<String>) {
    let count = diags.iter().filter(|d| d.message.contains("not supported yet")).count();
    if count == 0 || quiet {
        return;
    }
    let what = if count == 1 { "a keyword" } else { "keywords" };
    out.push(format!(
        "{}({}) : config : {what} that HAProxy 2.6 knows but Fulcrum does not support yet: \
         see docs/compat.md in Fulcrum's sources, which lists every keyword of HAProxy 2.6 \
         as supported, partly (how), or not yet.",
        Severity::Notice.tag(),
        pid()
    ));
}

/// Reads and loads the configuration; its messages go to `out`.
fn load_config(args: &Args, out: &mut Vec<String>) -> Option<(cfg::Config, Vec<Source>)> {
    let sources = match read_sources(&args.configs) {
        Ok(s) => s,
        Err(e) => {
            out.push(alert_line(e));
            return None;
        }
    };
    let config = load_sources(&sources, (args.quiet, args.zero_warning), out)?;
    Some((config, sources))
}

/// Loads configuration texts already read; messages go to `out`.
fn load_sources(
    sources: &[Source],
    (quiet, zero_warning): (bool, bool),
    out: &mut Vec<String>,
) -> Option<cfg::Config> {
    let (mut config, mut diags, parsed) = cfg::load_partial(sources, &|k| std::env::var(k).ok());
    // `setenv` and its kin: the process's environment as HAProxy leaves its own (`show env`,
    // what the SPOE files read next).
    let env = &config.global.env_changes;
    crate::sys::apply_env(env.keep_only.as_deref(), &env.set);
    // Global `quiet`: as `-q` (HAProxy's MODE_QUIET, which then silences every warning).
    let quiet = quiet || config.global.quiet;
    // The SPOE filters' files, read as HAProxy reads them while it parses their lines.
    if !diags.iter().any(Diagnostic::is_error) {
        let read =
            |f: &str| crate::files::read_string(Path::new(f)).map_err(|e| crate::sys::os_words(&e));
        diags.extend(cfg::spoe::load_files(&mut config, &read, &|k| std::env::var(k).ok()));
    }
    // As HAProxy, `bind` host names are resolved while the configuration is read: a name that
    // does not resolve is a configuration error.
    if !diags.iter().any(Diagnostic::is_error) {
        diags.extend(listener::resolve_binds(&mut config));
    }
    if !diags.iter().any(Diagnostic::is_error) {
        for d in &diags {
            print_diag(d, quiet, out);
        }
        compat_hint(&diags, quiet, out);
        // `zero-warning` / `-dW`: HAProxy 2.6 then refuses a configuration that warned.
        let warned = diags.iter().any(|d| d.severity == Severity::Warning);
        if warned && (zero_warning || config.global.zero_warning) {
            out.push(alert_line(
                "config : Some warnings were found and 'zero-warning' is set. Aborting.",
            ));
            return None;
        }
        return Some(config);
    }
    // The files the other lines draw on are opened still: HAProxy reports a missing one among
    // the errors of the parse, in line order (before the later checks').
    let mut missing: Vec<((usize, u32), String)> = file_errors(&config)
        .into_iter()
        .map(|e| (position(&e).map_or((usize::MAX, 0), |p| key(sources, p)), e))
        .collect();
    missing.sort_by_key(|(at, _)| *at);
    let mut missing = missing.into_iter().peekable();
    for (i, d) in diags.iter().enumerate() {
        let place = d.span.as_ref().map(|s| (&*s.file, s.line));
        let at = place.or_else(|| position(&d.message)).map(|p| key(sources, p));
        while let Some((_, e)) =
            missing.next_if(|(f, _)| i >= parsed || at.is_some_and(|at| *f < at))
        {
            out.push(alert_line(format!("config : {e}")));
        }
        print_diag(d, quiet, out);
    }
    for (_, e) in missing {
        out.push(alert_line(format!("config : {e}")));
    }
    compat_hint(&diags, quiet, out);
    let mut files: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        // (A message in HAProxy's own shape names its file in its text.)
        .filter_map(|d| d.span.as_ref().map(|s| &*s.file).or(error_file(&d.message)))
        .collect();
    files.dedup();
    for f in files {
        out.push(alert_line(format!("config : Error(s) found in configuration file : {f}")));
    }
    out.push(alert_line("config : Fatal errors found in configuration."));
    None
}

fn start(
    args: &Args,
    plan: Plan,
    sources: Vec<Source>,
    files: Option<crate::files::Bundle>,
) -> i32 {
    crate::log::set_debug(args.debug);
    if args.debug {
        for flag in &args.ignored {
            notice(format!("option '{flag}' changes nothing in Fulcrum; ignored"));
        }
    }
    let nbthread = plan::binds::nbthread(&plan.global);
    let listener_fds: usize =
        plan.proxies.frontends.iter().flat_map(|f| &f.binds).map(|b| b.addrs.len()).sum::<usize>()
            * nbthread;
    let Some(maxconn) = limits::raise_fd_limit(&plan, args.maxconn, listener_fds) else { return 1 };

    let mut notes = Vec::new();
    let old: Vec<u32> = args.finish_pids.iter().chain(&args.terminate_pids).copied().collect();
    let mut inherited = Inherited::from_processes(&old, &mut notes);
    if args.debug {
        notes.iter().for_each(notice);
    }
    // Bound now, served once the process is the one that stays (threads do not survive a fork).
    let forwards = match crate::log::forward::bind(&plan.log_forwards) {
        Ok(f) => f,
        Err(e) => {
            alert(e);
            return 1;
        }
    };
    let per_worker = match open_listeners(&plan, nbthread, &mut inherited) {
        Ok(s) => {
            listener::remember(s.iter().flatten().map(|ws| &ws.socket.socket));
            s
        }
        Err(lines) => {
            lines.into_iter().for_each(alert);
            return 1;
        }
    };
    // The runtime API's sockets, opened while the process may still create files anywhere.
    let api_sockets = match open_api_sockets(&plan.global).and_then(|mut s| {
        open_master_sockets(&args.master_sockets).map(|m| {
            s.extend(m);
            s
        })
    }) {
        Ok(s) => s,
        Err(e) => {
            alert(e);
            return 1;
        }
    };
    drop(inherited); // sockets of old processes we do not listen on any more

    // Under systemd (`-Ws`) the process stays in the foreground, as HAProxy's master does.
    let daemon =
        (args.daemon || plan.global.daemon) && !args.debug && !args.foreground && !args.systemd;
    let pidfile = args.pidfile.as_ref().or(plan.global.pidfile.as_ref());
    // As in HAProxy, the pid file is written before the launching process returns (by the parent
    // with the child's pid in daemon mode), so whoever started us can read it at once.
    let write_pidfile = |pid: u32| match pidfile {
        Some(path) => std::fs::write(path, format!("{pid}\n")).map_err(|e| {
            alert(format!("Cannot create pidfile {} : {e}", path.display()));
        }),
        None => Ok(()),
    };
    if daemon {
        match crate::sys::fork() {
            Ok(crate::sys::Forked::Parent(child)) => {
                if write_pidfile(child).is_err() {
                    let _ = crate::sys::kill(child, libc::SIGTERM);
                    return 1;
                }
                return 0;
            }
            Ok(crate::sys::Forked::Child) => {
                if let Err(e) = crate::sys::detach() {
                    alert(format!("cannot detach: {e}"));
                    return 1;
                }
            }
            Err(e) => {
                alert(format!("cannot fork: {e}"));
                return 1;
            }
        }
    } else if write_pidfile(pid()).is_err() {
        return 1;
    }
    // Under chroot in master-worker mode, the master stays outside the jail (see `master`).
    if args.master_worker && plan.global.chroot.is_some() {
        match master::fork() {
            Err(e) => {
                alert(e);
                return 1;
            }
            Ok(master::Role::Master { link, worker }) => {
                drop((per_worker, api_sockets, plan, forwards));
                return master::run(args, link, worker);
            }
            Ok(master::Role::Worker) => crate::files::serve(files.unwrap_or_default()),
        }
    }
    forwards.run();
    if let Err(e) = drop_privileges(&plan.global) {
        alert(e);
        return 1;
    }
    for &p in &args.finish_pids {
        let _ = crate::sys::kill(p, libc::SIGUSR1);
    }
    for &p in &args.terminate_pids {
        let _ = crate::sys::kill(p, libc::SIGTERM);
    }
    let cpus = (1..=nbthread as u32)
        .map(|t| cfg::cpus_for_thread(&plan.global.cpu_map, t, nbthread as u32))
        .collect();
    let global_limit = Arc::new(Limit::new(maxconn));
    let ctx = reload::Context {
        nbthread,
        maxconn,
        debug: args.debug,
        global_limit,
        conn_rate: Default::default(),
        comp_rate: Default::default(),
        sess_rate: Default::default(),
        ssl_rate: Default::default(),
        started: std::time::SystemTime::now(),
        started_at: std::time::Instant::now(),
        global: plan.global.clone(),
    };
    ctx.apply_rates(&plan.global);
    let shared = Arc::new(ctx.shared(&plan));
    let api = (!api_sockets.is_empty()).then(|| {
        let api = crate::api::Api {
            timeout: plan.global.stats_timeout,
            maxconn: plan.global.stats_maxconn,
        };
        let api = Arc::new(api);
        // The runtime API runs on the main thread's event loop, away from the workers.
        Box::new(move || crate::api::start(api, api_sockets)) as runtime::OnStart
    });
    crate::log::set_quiet(args.quiet || plan.global.quiet);
    if let Some(mode) = plan.global.tune.profiling_tasks {
        crate::runtime::profiling::set("tasks", mode);
    }
    // (Inside the chroot: what the workers will see.)
    if let Some(l) = &plan.proxies.global_logger {
        l.probe();
    }
    let first = reload::generations(&plan, per_worker, &shared);
    let reloader = reload::reloader(args.clone(), ctx, sources);
    runtime::run(first, cpus, shared, api, reloader)
}

/// Opens the `-S <bind>[,<option> <value>]*` sockets (HAProxy's master CLI): a UNIX path or
/// `ipv4@`/`ipv6@` address, with `mode`, `uid`, `gid`, `user`, `group` for a UNIX socket's file
/// and `level` (admin by default); other options are ignored.
fn open_master_sockets(specs: &[String]) -> Result<Vec<crate::api::ApiSocket>, String> {
    let mut out = Vec::new();
    for spec in specs {
        let mut words = spec.split(',');
        let addr = words.next().unwrap_or_default();
        let mut perms = cfg::UnixPerms::default();
        let mut level = cfg::CliLevel::Admin;
        while let Some(opt) = words.next() {
            let value = words.next().unwrap_or_default();
            let id = |v: &str| cfg::UserSpec::Id(v.parse().unwrap_or(0));
            match opt {
                "mode" => perms.mode = u32::from_str_radix(value, 8).ok(),
                "uid" => perms.owner = Some(id(value)),
                "gid" => perms.group = Some(id(value)),
                "user" => perms.owner = Some(cfg::UserSpec::Name(value.to_string())),
                "group" => perms.group = Some(cfg::UserSpec::Name(value.to_string())),
                "level" => {
                    level = match value {
                        "user" => cfg::CliLevel::User,
                        "operator" => cfg::CliLevel::Operator,
                        _ => cfg::CliLevel::Admin,
                    }
                }
                _ => {}
            }
        }
        let inet = addr.strip_prefix("ipv4@").or_else(|| addr.strip_prefix("ipv6@"));
        let bind = match inet.map(str::parse::<std::net::SocketAddr>) {
            Some(Ok(a)) => cfg::BindAddr::Inet(a),
            Some(Err(_)) => return Err(format!("-S: cannot parse address '{addr}'")),
            None => cfg::BindAddr::Unix(addr.strip_prefix("unix@").unwrap_or(addr).into()),
        };
        let opts = BindOptions {
            backlog: None,
            only_v6: None,
            sockopts: &Default::default(),
            bufs: Default::default(),
            keepalive: Default::default(),
            unix: listener::UnixOwner::resolve(&perms)?,
            reuseport: true,
        };
        let sockets = listener::open(&bind, opts, 1, &mut Inherited::default())
            .map_err(|e| format!("Cannot create master CLI socket {addr}: {e}"))?;
        for o in sockets {
            out.push(crate::api::ApiSocket { socket: o.socket, level, unix: o.unix, master: true });
        }
    }
    Ok(out)
}

/// Opens every `stats socket` (UNIX paths with their mode and owner, TCP addresses, `fd@`).
fn open_api_sockets(g: &cfg::Global) -> Result<Vec<crate::api::ApiSocket>, String> {
    let mut out = Vec::new();
    for s in &g.stats_sockets {
        let unix = listener::UnixOwner::resolve(&s.bind.unix)?;
        let opts = BindOptions {
            backlog: s.bind.backlog,
            only_v6: s.bind.only_v6(),
            sockopts: &s.bind.sockopts,
            bufs: Default::default(),
            keepalive: Default::default(),
            unix,
            reuseport: !g.tune.noreuseport,
        };
        for addr in &s.bind.addrs {
            let mut none = Inherited::default();
            let sockets = listener::open(addr, opts, 1, &mut none).map_err(|e| {
                format!("Starting frontend GLOBAL: cannot bind socket ({e}) for {}", show(addr))
            })?;
            for o in sockets {
                out.push(crate::api::ApiSocket {
                    socket: o.socket,
                    level: s.bind.level,
                    unix: o.unix,
                    master: false,
                });
            }
        }
    }
    Ok(out)
}

fn open_listeners(
    plan: &Plan,
    nbthread: usize,
    inherited: &mut Inherited,
) -> Result<Vec<Vec<WorkerSocket>>, Vec<String>> {
    let mut per_worker: Vec<Vec<WorkerSocket>> = (0..nbthread).map(|_| Vec::new()).collect();
    // As HAProxy, every listener is tried and each failure said, then the start fails.
    let mut failed = Vec::new();
    for fe in &plan.proxies.frontends {
        for bind in &fe.binds {
            let unix = match listener::UnixOwner::resolve(&bind.unix) {
                Ok(u) => u,
                Err(e) => {
                    failed.push(format!("{}: {e}", bind.origin));
                    continue;
                }
            };
            let opts = BindOptions {
                backlog: bind.backlog,
                only_v6: bind.only_v6,
                sockopts: &bind.sockopts,
                bufs: plan.global.client_bufs,
                keepalive: fe.client_tcpka,
                unix,
                reuseport: !plan.global.tune.noreuseport,
            };
            let workers = bind_workers(bind, nbthread);
            for addr in &bind.addrs {
                let sockets = match listener::open(addr, opts, workers.len(), inherited) {
                    Ok(s) => s,
                    Err(e) => {
                        let (why, at) = (crate::sys::os_words(&e), show(addr));
                        failed
                            .push(format!("{}: cannot bind socket ({why}) for {at}", bind.origin));
                        continue;
                    }
                };
                for (i, s) in sockets.into_iter().enumerate() {
                    let dst_port = listener::local_port(&s.socket);
                    let _ = bind.bound.set(listener::stats_addr(&s.socket));
                    per_worker[workers[i % workers.len()]].push(WorkerSocket {
                        frontend: Arc::clone(fe),
                        bind: Arc::clone(bind),
                        socket: s,
                        dst_port,
                    });
                }
            }
        }
    }
    if !failed.is_empty() {
        failed.push(
            "[haproxy.main()] Some protocols failed to start their listeners! Exiting.".into(),
        );
        return Err(failed);
    }
    Ok(per_worker)
}

/// The workers (from 0) that accept on `bind`: those of its `thread` set that exist (the plan
/// refused a set naming none), every one without.
fn bind_workers(bind: &crate::frontend::Bind, nbthread: usize) -> Vec<usize> {
    let mut w: Vec<usize> =
        bind.threads.iter().filter(|&&t| t as usize <= nbthread).map(|&t| t as usize - 1).collect();
    if w.is_empty() {
        return (0..nbthread).collect();
    }
    // (`thread` options may name a thread twice.)
    w.sort_unstable();
    w.dedup();
    w
}

fn show(addr: &cfg::BindAddr) -> String {
    match addr {
        cfg::BindAddr::Inet(a) => format!("[{a}]"),
        cfg::BindAddr::Host { text, .. } => format!("[{text}]"),
        cfg::BindAddr::Unix(p) => format!("[unix@{}]", p.display()),
        cfg::BindAddr::Fd(n) => format!("[fd@{n}]"),
    }
}

fn drop_privileges(g: &cfg::Global) -> Result<(), String> {
    let mut uid = None;
    let mut gid = None;
    if let Some(user) = &g.user {
        match user {
            cfg::UserSpec::Id(n) => uid = Some(*n),
            cfg::UserSpec::Name(name) => {
                let (u, primary) = crate::sys::lookup_user(name)
                    .map_err(|e| format!("Cannot switch to user '{name}': {e}"))?;
                uid = Some(u);
                gid = Some(primary);
            }
        }
    }
    if let Some(group) = &g.group {
        gid = Some(match group {
            cfg::UserSpec::Id(n) => *n,
            cfg::UserSpec::Name(name) => crate::sys::lookup_group(name)
                .map_err(|e| format!("Cannot switch to group '{name}': {e}"))?,
        });
    }
    // As HAProxy: into the chroot once names are resolved, before giving up root.
    if let Some(dir) = &g.chroot {
        // Local time's zone is read before the files it comes from are out of reach (as
        // HAProxy's tzset() at start-up).
        let _ = crate::sys::local_time(std::time::SystemTime::now());
        let program = std::env::args()
            .next()
            .and_then(|a| a.rsplit('/').next().map(str::to_string))
            .unwrap_or_else(|| "fulcrum".into());
        crate::sys::chroot(dir)
            .map_err(|_| format!("[{program}.main()] Cannot chroot({}).", dir.display()))?;
    }
    crate::sys::drop_privileges(uid, gid).map_err(|e| format!("Cannot drop privileges: {e}"))?;
    if g.set_dumpable {
        crate::sys::set_dumpable().map_err(|e| format!("set-dumpable: {e}"))?;
    }
    // As HAProxy's workers: no privileges gained through setuid programs (an external check's),
    // unless `insecure-setuid-wanted`; the worker threads started next inherit it.
    if !g.tune.insecure_setuid_wanted && crate::sys::no_new_privs().is_err() {
        warning("Failed to disable setuid, please report to developers with detailed information about your operating system. You can silence this warning by adding 'insecure-setuid-wanted' in the 'global' section.");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::error_file;

    #[test]
    fn the_file_of_a_plan_error_is_read_from_its_place() {
        assert_eq!(error_file("parsing [a/b.cfg:12] : errorfile : x"), Some("a/b.cfg"));
        assert_eq!(error_file("[b.cfg:3] : proxy 'l': unknown backend 'x'"), Some("b.cfg"));
        assert_eq!(error_file("no place"), None);
    }
}
