//! Lua in the configuration: `lua-load`, `lua-load-per-thread`, `lua-prepend-path`,
//! `tune.lua.*`, and the `lua.<name>` actions that the loaded scripts register. HAProxy runs
//! each script when it reads its `lua-load` line, and later lines may use what the script
//! registered; so does this parser, through the program's script host ([`set_host`]). Without
//! a host (this crate's own tests, `fulcrum-config` used alone) `lua-load` is refused.
//!
//! Must not touch: running scripts (the program's `lua` module owns the Lua states).

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Duration;

use crate::args::Diags;
use crate::lexer::Line;

/// Where a registered action may be used (`core.register_action`'s second argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Env {
    TcpReq,
    TcpRes,
    HttpReq,
    HttpRes,
}

/// What the scripts loaded so far registered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registered {
    /// Each action: its name (without `lua.`), where it may be used, and how many arguments
    /// its configuration line must give.
    pub actions: Vec<(String, Vec<Env>, usize)>,
    pub fetches: Vec<String>,
    pub converters: Vec<String>,
    /// Each service and whether it is an HTTP one (else TCP).
    pub services: Vec<(String, bool)>,
}

impl Registered {
    fn merge(&mut self, other: Registered) {
        for a in other.actions {
            self.actions.retain(|(n, _, _)| *n != a.0);
            self.actions.push(a);
        }
        self.fetches.extend(other.fetches);
        self.converters.extend(other.converters);
        self.services.extend(other.services);
    }

    /// The action `lua.<name>` registered for `env`, and its argument count.
    pub fn action(&self, name: &str, env: Env) -> Option<usize> {
        let found = self.actions.iter().find(|(n, e, _)| n == name && e.contains(&env));
        found.map(|(_, _, nargs)| *nargs)
    }

    /// The `lua.<name>` keywords of the actions registered for `env`, in registration order.
    pub fn action_keywords(&self, env: Env) -> Vec<String> {
        let of_env = self.actions.iter().filter(|(_, e, _)| e.contains(&env));
        of_env.map(|(n, _, _)| format!("lua.{n}")).collect()
    }
}

/// The program's script host: runs scripts as HAProxy's parser does.
pub trait Host: Send + Sync {
    /// A new configuration is read: the states of the last one are dropped.
    fn begin(&self);
    /// Runs the script at `path` in the shared state (`lua-load`) or the per-thread one
    /// (`lua-load-per-thread`), after the `lua-prepend-path` lines read so far: what it
    /// registered, or HAProxy's message ("error in Lua file ...", "Lua runtime error: ...").
    fn load(
        &self,
        path: &str,
        per_thread: bool,
        prepend: &[(String, String)],
    ) -> Result<Registered, String>;
}

static HOST: OnceLock<Box<dyn Host>> = OnceLock::new();

/// Installs the program's script host (once; later calls are ignored).
pub fn set_host(host: Box<dyn Host>) {
    let _ = HOST.set(host);
}

thread_local! {
    /// What the scripts of the configuration being read registered so far.
    static SEEN: RefCell<Registered> = RefCell::new(Registered::default());
}

/// Starts reading a configuration: nothing is registered yet.
pub(crate) fn begin() {
    SEEN.with(|s| *s.borrow_mut() = Registered::default());
    if let Some(h) = HOST.get() {
        h.begin();
    }
}

/// What the scripts read so far registered.
pub fn registered() -> Registered {
    SEEN.with(|s| s.borrow().clone())
}

/// Runs `f` on what the scripts read so far registered.
pub(crate) fn with_registered<R>(f: impl FnOnce(&Registered) -> R) -> R {
    SEEN.with(|s| f(&s.borrow()))
}

/// The global Lua settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LuaGlobal {
    /// `lua-load` and `lua-load-per-thread` lines, in order: the file and whether it is
    /// per-thread.
    pub loads: Vec<(String, bool)>,
    /// `lua-prepend-path <path> [path|cpath]`, in order.
    pub prepend: Vec<(String, String)>,
    /// `tune.lua.forced-yield` (instructions; HAProxy's default 10000).
    pub forced_yield: u64,
    /// `tune.lua.maxmem`, in bytes (0: no limit).
    pub maxmem: u64,
    pub session_timeout: Duration,
    pub task_timeout: Duration,
    pub service_timeout: Duration,
}

impl Default for LuaGlobal {
    fn default() -> Self {
        LuaGlobal {
            loads: Vec::new(),
            prepend: Vec::new(),
            forced_yield: 10000,
            maxmem: 0,
            session_timeout: Duration::from_secs(4),
            task_timeout: Duration::from_secs(4),
            service_timeout: Duration::from_secs(4),
        }
    }
}

/// Whether `kw` is a global Lua keyword.
pub(crate) fn handles(kw: &str) -> bool {
    matches!(kw, "lua-load" | "lua-load-per-thread" | "lua-prepend-path")
        || kw.starts_with("tune.lua.")
}

/// One global Lua line, read (and its script run) as HAProxy 2.6 does.
pub(crate) fn line(kw: &str, line: &Line, g: &mut LuaGlobal, diags: &mut Diags) {
    let arg = line.arg(1);
    match kw {
        "lua-load" | "lua-load-per-thread" => {
            if arg.is_empty() {
                let what = if kw == "lua-load" { "a file name" } else { "a file" };
                return diags.alert(line, format!("'{kw}' expects {what} as parameter."));
            }
            let Some(host) = HOST.get() else {
                return diags.alert(line, format!("'{kw}' is not supported yet"));
            };
            let per_thread = kw == "lua-load-per-thread";
            g.loads.push((arg.to_string(), per_thread));
            match host.load(arg, per_thread, &g.prepend) {
                Ok(r) => SEEN.with(|s| s.borrow_mut().merge(r)),
                Err(msg) => diags.alert(line, msg.trim_end().to_string()),
            }
        }
        "lua-prepend-path" => {
            if !line.arg(3).is_empty() {
                return diags.alert(
                    line,
                    format!("'{kw}' cannot handle unexpected argument '{}'.", line.arg(3)),
                );
            }
            if arg.is_empty() {
                return diags
                    .alert(line, format!("'{kw}' expects to receive a <path> as argument"));
            }
            let kind = match line.arg(2) {
                "" => "path",
                t @ ("path" | "cpath") => t,
                _ => {
                    let msg = format!("'{kw}' expects <type> to either be 'path' or 'cpath'");
                    return diags.alert(line, msg);
                }
            };
            g.prepend.push((arg.to_string(), kind.to_string()));
        }
        "tune.lua.forced-yield" => match arg.parse::<i64>() {
            Ok(n) => g.forced_yield = n.max(0) as u64,
            Err(_) if arg.is_empty() => g.forced_yield = 0,
            Err(_) => diags.alert(line, format!("{kw}: invalid number")),
        },
        "tune.lua.maxmem" => {
            if arg.is_empty() {
                let msg = format!("'{kw}' expects an integer argument (Lua memory size in MB).");
                return diags.alert(line, msg);
            }
            let digits = arg.trim_start_matches('-');
            let end =
                digits.find(|c: char| !c.is_ascii_digit()).map(|i| i + arg.len() - digits.len());
            match end {
                Some(i) => {
                    let c = arg[i..].chars().next().unwrap_or(' ');
                    diags.alert(line, format!("{kw}: invalid number {arg} (error at '{c}')"));
                }
                None => g.maxmem = arg.parse::<i64>().unwrap_or(0).max(0) as u64 * 1024 * 1024,
            }
        }
        "tune.lua.session-timeout" | "tune.lua.task-timeout" | "tune.lua.service-timeout" => {
            let t = match crate::duration::parse_time(arg) {
                Ok(t) => t,
                Err(crate::duration::TimeError::Overflow) => {
                    let msg = format!("timer overflow in argument <{arg}> to <{kw}> (maximum value is 2147483647 ms or ~24.8 days)");
                    return diags.alert(line, msg);
                }
                Err(_) => return diags.alert(line, format!("{kw}: invalid timeout")),
            };
            match kw {
                "tune.lua.session-timeout" => g.session_timeout = t,
                "tune.lua.task-timeout" => g.task_timeout = t,
                _ => g.service_timeout = t,
            }
        }
        _ => diags.alert(line, format!("'{kw}' is not supported yet")),
    }
}
