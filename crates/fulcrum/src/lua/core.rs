//! HAProxy's `core` class (`doc/lua-api`): the registrations (`register_action`,
//! `register_fetches`, `register_converters`, `register_service`), the log functions,
//! `now`, `msleep`/`sleep`/`yield` (a yield the action's runner turns into a wait), and the
//! `act` return codes.
//!
//! Must not touch: transactions (`txn`), the worker's state (`lua`).

use std::cell::RefCell;
use std::rc::Rc;

use fulcrum_config::lua::Env;
use mlua::{Function, Lua, Value};

use super::Registry;

/// What `core.msleep` and its kin yield: the marker, then the milliseconds.
pub const SLEEP: &str = "\0fulcrum:sleep";

/// HAProxy's syslog level names, by number.
const LEVELS: [&str; 8] = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

pub fn install(lua: &Lua, registry: &Rc<RefCell<Registry>>) -> mlua::Result<()> {
    let core = lua.create_table()?;
    for (i, name) in LEVELS.iter().enumerate() {
        core.set(*name, i as i64)?;
    }
    let r = Rc::clone(registry);
    core.set(
        "register_action",
        lua.create_function(move |lua, (name, envs, f, nargs): (String, Value, Value, Option<i64>)| {
            let Value::Table(envs) = envs else {
                return Err(err("register_action: second argument must be a table of strings"));
            };
            let Value::Function(f) = f else {
                return Err(err(&format!("bad argument #3 to 'register_action' (function expected, got {})", type_name(&f))));
            };
            let mut list = Vec::new();
            for v in envs.sequence_values::<Value>() {
                let Value::String(s) = v? else {
                    return Err(err("register_action: second argument must be a table of strings"));
                };
                list.push(match &*s.to_str()? {
                    "tcp-req" => Env::TcpReq,
                    "tcp-res" => Env::TcpRes,
                    "http-req" => Env::HttpReq,
                    "http-res" => Env::HttpRes,
                    other => {
                        return Err(err(&format!("Lua action environment '{other}' is unknown. 'tcp-req', 'tcp-res', 'http-req' or 'http-res' are expected.")))
                    }
                });
            }
            let key = lua.create_registry_value(f)?;
            let mut reg = r.borrow_mut();
            reg.actions.retain(|(n, _, _, _)| *n != name);
            reg.actions.push((name, list, nargs.unwrap_or(0).max(0) as usize, key));
            Ok(())
        })?,
    )?;
    let r = Rc::clone(registry);
    core.set(
        "register_fetches",
        lua.create_function(move |lua, (name, f): (String, Function)| {
            let key = lua.create_registry_value(f)?;
            r.borrow_mut().fetches.push((name, key));
            Ok(())
        })?,
    )?;
    let r = Rc::clone(registry);
    core.set(
        "register_converters",
        lua.create_function(move |lua, (name, f): (String, Function)| {
            let key = lua.create_registry_value(f)?;
            r.borrow_mut().converters.push((name, key));
            Ok(())
        })?,
    )?;
    let r = Rc::clone(registry);
    core.set(
        "register_service",
        lua.create_function(move |lua, (name, mode, f): (String, String, Function)| {
            let http = match mode.as_str() {
                "http" => true,
                "tcp" => false,
                _ => {
                    return Err(err(&format!(
                    "Lua service environment '{mode}' is unknown. 'tcp' or 'http' are expected."
                )))
                }
            };
            let key = lua.create_registry_value(f)?;
            r.borrow_mut().services.push((name, http, key));
            Ok(())
        })?,
    )?;
    // (Run once the scripts are loaded, in HAProxy; not yet here: accepted, not run.)
    for name in ["register_init", "register_task", "register_cli"] {
        core.set(name, lua.create_function(|_, _: mlua::MultiValue| Ok(()))?)?;
    }
    core.set(
        "log",
        lua.create_function(|_, (level, msg): (i64, String)| {
            log(level, &msg);
            Ok(())
        })?,
    )?;
    for (name, level) in [("Debug", 7), ("Info", 6), ("Warning", 4), ("Alert", 1)] {
        core.set(
            name,
            lua.create_function(move |_, msg: String| {
                log(level, &msg);
                Ok(())
            })?,
        )?;
    }
    core.set(
        "now",
        lua.create_function(|lua, ()| {
            let d = crate::clock::wall().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let t = lua.create_table()?;
            t.set("sec", d.as_secs())?;
            t.set("usec", d.subsec_micros())?;
            Ok(t)
        })?,
    )?;
    lua.globals().set("core", core)?;
    let act = lua.create_table()?;
    let codes = [
        ("CONTINUE", 0),
        ("STOP", 1),
        ("YIELD", 2),
        ("ERROR", 3),
        ("DONE", 4),
        ("DENY", 5),
        ("ABORT", 6),
        ("INVALID", 7),
    ];
    for (name, v) in codes {
        act.set(name, v)?;
    }
    lua.globals().set("act", act)?;
    // The waits: yields the action's runner turns into timers.
    lua.load(format!(
        "local y, m = coroutine.yield, {SLEEP:?}\n\
         core.msleep = function(ms) y(m, tonumber(ms) or 0) end\n\
         core.sleep = function(s) y(m, (tonumber(s) or 0) * 1000) end\n\
         core.yield = function() y(m, 0) end"
    ))
    .set_name("=core")
    .exec()
}

fn err(msg: &str) -> mlua::Error {
    mlua::Error::RuntimeError(msg.to_string())
}

fn type_name(v: &Value) -> &'static str {
    v.type_name()
}

/// A script's log line (`core.log`, `core.Info`...): on stderr as HAProxy 2.6 prints it
/// (`[info] 334/101112 (pid) : msg`); a debug line only under `-d`.
fn log(level: i64, msg: &str) {
    let Some(name) = usize::try_from(level).ok().and_then(|l| LEVELS.get(l)) else { return };
    if level == 7 && !crate::log::debug_mode() {
        return;
    }
    let t = crate::log::dates::local(crate::clock::wall());
    let leap = (t.year % 4 == 0 && t.year % 100 != 0) || t.year % 400 == 0;
    const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let month = t.month.min(11) as usize;
    let yday = BEFORE[month] + t.day - 1 + u32::from(leap && month > 1);
    let (h, m, s, pid) = (t.hour, t.min, t.sec, std::process::id());
    eprintln!("[{name}] {yday:03}/{h:02}{m:02}{s:02} ({pid}) : {msg}");
}
