//! Lua scripts (HAProxy's `hlua.c`): Lua 5.3 states with HAProxy's `core` API, the scripts of
//! `lua-load` and `lua-load-per-thread` run in them, and the actions they register run on a
//! transaction's request or response ([`action`]).
//!
//! The configuration's parser runs each script as it reads its line, as HAProxy does, through
//! [`Host`] (states of its own, for the check); the plan keeps the scripts' text
//! ([`install`]), and each worker runs them once in its own state, at its first use. A
//! script's action runs as a Lua coroutine: it may wait (`core.msleep`, `core.yield`) while
//! the worker serves others.
//!
//! Must not touch: the transaction's analysers (they hand an action what it may see, see
//! `http::analyse::lua`), sockets.

pub mod action;
mod core;
mod txn;

/// What an action reaches of its transaction during one step.
pub mod txn_access {
    pub use super::txn::Access;
}

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use fulcrum_config::lua::{Env, LuaGlobal, Registered};
use mlua::{Lua, RegistryKey};

use crate::worker::{Id, Slot};

/// What the scripts registered in one state, with their functions.
#[derive(Default)]
pub struct Registry {
    /// Each action: name, where it may be used, argument count, function.
    pub actions: Vec<(String, Vec<Env>, usize, RegistryKey)>,
    pub fetches: Vec<(String, RegistryKey)>,
    pub converters: Vec<(String, RegistryKey)>,
    pub services: Vec<(String, bool, RegistryKey)>,
}

impl Registry {
    fn names(&self) -> Registered {
        Registered {
            actions: self.actions.iter().map(|(n, e, a, _)| (n.clone(), e.clone(), *a)).collect(),
            fetches: self.fetches.iter().map(|(n, _)| n.clone()).collect(),
            converters: self.converters.iter().map(|(n, _)| n.clone()).collect(),
            services: self.services.iter().map(|(n, h, _)| (n.clone(), *h)).collect(),
        }
    }
}

/// One Lua state and what its scripts registered.
pub struct State {
    pub lua: Lua,
    pub registry: Rc<RefCell<Registry>>,
}

impl State {
    /// A new state: Lua's standard libraries, `package.path`/`cpath` with the
    /// `lua-prepend-path` lines before them, HAProxy's `core` and `act` classes.
    pub fn new(prepend: &[(String, String)]) -> Result<State, String> {
        let lua = Lua::new();
        let registry = Rc::new(RefCell::new(Registry::default()));
        let setup = || -> mlua::Result<()> {
            let package: mlua::Table = lua.globals().get("package")?;
            for (path, kind) in prepend {
                let old: String = package.get(kind.as_str())?;
                package.set(kind.as_str(), format!("{path};{old}"))?;
            }
            core::install(&lua, &registry)?;
            txn::install(&lua)
        };
        setup().map_err(|e| format!("Lua state: {e}"))?;
        Ok(State { lua, registry })
    }

    /// Runs a script's text (`name` in its messages) as HAProxy's `hlua_load_state` does.
    pub fn run(&self, name: &str, text: &[u8]) -> Result<(), String> {
        let chunk = self.lua.load(text).set_name(format!("@{name}"));
        let f = match chunk.into_function() {
            Ok(f) => f,
            Err(e) => return Err(format!("error in Lua file '{name}': {}", message(&e))),
        };
        match f.call::<()>(()) {
            Ok(()) => Ok(()),
            Err(mlua::Error::MemoryError(_)) => Err("Lua out of memory error".into()),
            Err(e) => {
                let m = message(&e);
                let m = m.split("\nstack traceback:").next().unwrap_or("");
                Err(format!("Lua runtime error: {m}"))
            }
        }
    }
}

/// A Lua error's own message (without mlua's traceback and wrapping).
pub fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::WithContext { cause, .. } => message(cause),
        other => other.to_string(),
    }
}

/// The scripts of the running plan: their text (read once, so a worker in a `chroot` never
/// looks for them) and the states' settings.
#[derive(Default)]
pub struct Scripts {
    pub files: Vec<(String, Vec<u8>)>,
    pub settings: LuaGlobal,
}

static SCRIPTS: Mutex<Option<Arc<Scripts>>> = Mutex::new(None);

/// Makes `g`'s scripts those of the plan being built (`Err`: one could not be read).
pub fn install(g: &LuaGlobal) -> Result<(), String> {
    let mut files = Vec::new();
    for (path, _) in &g.loads {
        let text = crate::files::read(std::path::Path::new(path))
            .map_err(|e| format!("error in Lua file '{path}': cannot open {path}: {e}"))?;
        files.push((path.clone(), text));
    }
    let scripts = (!files.is_empty()).then(|| Arc::new(Scripts { files, settings: g.clone() }));
    *SCRIPTS.lock().unwrap_or_else(|e| e.into_inner()) = scripts;
    Ok(())
}

fn scripts() -> Option<Arc<Scripts>> {
    SCRIPTS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// This worker's state and the scripts it ran.
type Mine = Option<(Arc<Scripts>, Rc<State>)>;

static WORKER: Slot<RefCell<Mine>> = Slot::new(Id::Lua, || RefCell::new(None));

/// This worker's state for the running plan's scripts, made (and the scripts run) at its first
/// use; `None` without scripts, or when one fails now (said once, as an alert).
pub fn worker_state() -> Option<Rc<State>> {
    let scripts = scripts()?;
    if let Some(s) = WORKER.with(|w| {
        w.borrow().as_ref().filter(|(k, _)| Arc::ptr_eq(k, &scripts)).map(|(_, s)| Rc::clone(s))
    }) {
        return Some(s);
    }
    let state = Rc::new(fresh(&scripts)?);
    WORKER.with(|w| *w.borrow_mut() = Some((scripts, Rc::clone(&state))));
    Some(state)
}

#[cold]
#[inline(never)]
fn fresh(scripts: &Scripts) -> Option<State> {
    let state = match State::new(&scripts.settings.prepend) {
        Ok(s) => s,
        Err(e) => {
            crate::log::alert(&e);
            return None;
        }
    };
    for (name, text) in &scripts.files {
        if let Err(e) = state.run(name, text) {
            crate::log::alert(&e);
        }
    }
    Some(state)
}

/// The configuration parser's script host: a shared and a per-thread state for each
/// configuration read, as HAProxy's states 0 and 1 at parse time.
pub struct Host;

/// The shared and per-thread states of the configuration being read.
static CHECK: Slot<RefCell<Option<(State, State)>>> =
    Slot::new(Id::LuaCheck, || RefCell::new(None));

impl fulcrum_config::lua::Host for Host {
    fn begin(&self) {
        CHECK.with(|c| *c.borrow_mut() = None);
    }

    fn load(
        &self,
        path: &str,
        per_thread: bool,
        prepend: &[(String, String)],
    ) -> Result<Registered, String> {
        let text = crate::files::read(std::path::Path::new(path)).map_err(|e| {
            format!("error in Lua file '{path}': cannot open {path}: {}", no_os_error(&e))
        })?;
        CHECK.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some((State::new(prepend)?, State::new(prepend)?));
            }
            let (shared, per) = c.as_ref().expect("made");
            let state = if per_thread { per } else { shared };
            let before = state.registry.borrow().names();
            state.run(path, &text)?;
            let mut now = state.registry.borrow().names();
            // (What this script added.)
            now.actions.retain(|a| !before.actions.contains(a));
            now.fetches.retain(|a| !before.fetches.contains(a));
            now.converters.retain(|a| !before.converters.contains(a));
            now.services.retain(|a| !before.services.contains(a));
            Ok(now)
        })
    }
}

/// An I/O error's text without Rust's " (os error N)".
fn no_os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
