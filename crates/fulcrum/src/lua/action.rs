//! A script's action on one transaction (`http-request lua.<name>`, `http-response
//! lua.<name>`): the registered function run as a coroutine of the worker's state, one
//! [`Call::step`] at a time. A step runs until the script ends or waits (`core.msleep`,
//! `core.yield`: [`Step::Sleep`], the caller's timer, then the next step); a script that runs
//! longer than `tune.lua.session-timeout` in all is stopped (HAProxy's "execution timeout").
//!
//! Must not touch: the transaction beyond [`super::txn::Access`].

use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{MultiValue, Thread, ThreadStatus, Value};

use super::txn::{self, Access};
use super::State;

/// What a step ended with.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The script ended: its `act` code (`act.CONTINUE` when it returned none).
    Done(i64),
    /// It waits this long before its next step.
    Sleep(Duration),
    /// It failed: HAProxy's log message (`Lua function 'name': <error>.`).
    Failed(String),
}

/// One action under way.
pub struct Call {
    state: Rc<State>,
    thread: Thread,
    name: String,
    /// The `txn` object and the configuration's arguments, until the first step.
    first: Option<MultiValue>,
    /// Time run so far (waits not counted), against `limit`.
    ran: Duration,
    limit: Duration,
}

impl Call {
    /// The action `name` of this worker's scripts with its configuration arguments (`None`:
    /// no script state, or no such action, which the configuration's check rules out).
    #[cold]
    #[inline(never)]
    pub fn new(name: &str, args: &[String]) -> Option<Call> {
        let state = super::worker_state()?;
        let f = {
            let reg = state.registry.borrow();
            let found = reg.actions.iter().find(|(n, _, _, _)| n == name)?;
            state.lua.registry_value::<mlua::Function>(&found.3).ok()?
        };
        let thread = state.lua.create_thread(f).ok()?;
        let new_txn: mlua::Function = state.lua.named_registry_value("fulcrum.new_txn").ok()?;
        let txn: Value = new_txn.call(()).ok()?;
        let mut first = vec![txn];
        for a in args {
            first.push(Value::String(state.lua.create_string(a).ok()?));
        }
        let limit = super::scripts().map_or(Duration::from_secs(4), |s| s.settings.session_timeout);
        Some(Call {
            state,
            thread,
            name: name.to_string(),
            first: Some(first.into_iter().collect()),
            ran: Duration::ZERO,
            limit,
        })
    }

    /// Runs the script until it ends or waits, reaching the transaction through `access`.
    #[cold]
    #[inline(never)]
    pub fn step(&mut self, mut access: Access<'_>) -> Step {
        let lua = &self.state.lua;
        let args = self.first.take().unwrap_or_default();
        let start = Instant::now();
        let left = self.limit.saturating_sub(self.ran);
        let thread = &self.thread;
        let hook = mlua::HookTriggers::new().every_nth_instruction(1000);
        let r = lua.scope(|scope| {
            let f = scope.create_function_mut(|lua, args: MultiValue| {
                txn::dispatch(lua, &mut access, args)
            })?;
            lua.set_named_registry_value(txn::ACCESS, f)?;
            thread.set_hook(hook, move |_, _| {
                if start.elapsed() > left {
                    return Err(mlua::Error::RuntimeError("execution timeout".into()));
                }
                Ok(mlua::VmState::Continue)
            })?;
            let r = thread.resume::<MultiValue>(args);
            thread.remove_hook();
            lua.unset_named_registry_value(txn::ACCESS)?;
            Ok(r)
        });
        self.ran += start.elapsed();
        let r = r.and_then(|r| r);
        match r {
            Err(e) => Step::Failed(format!("Lua function '{}': {}.", self.name, runtime_error(&e))),
            Ok(values) if thread.status() == ThreadStatus::Resumable => {
                let mut v = values.into_iter();
                match (v.next(), v.next()) {
                    (Some(Value::String(s)), ms)
                        if s.as_bytes() == super::core::SLEEP.as_bytes() =>
                    {
                        let ms = match ms {
                            Some(Value::Integer(n)) => n as f64,
                            Some(Value::Number(n)) => n,
                            _ => 0.0,
                        };
                        Step::Sleep(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
                    }
                    // (A yield of the script's own, outside a coroutine of its own.)
                    _ => Step::Sleep(Duration::ZERO),
                }
            }
            Ok(values) => match values.into_iter().next() {
                Some(Value::Integer(n)) => Step::Done(n),
                Some(Value::Number(n)) => Step::Done(n as i64),
                _ => Step::Done(0),
            },
        }
    }
}

/// A script's error as HAProxy 2.6 logs it: `[state-id 0] runtime error: <message> from
/// <where>, <where>` (its traceback on one line; a timeout is "execution timeout").
fn runtime_error(e: &mlua::Error) -> String {
    let (mut msg, mut trace) = (super::message(e), None);
    if let Some(i) = msg.find("\nstack traceback:") {
        trace = Some(msg[i + 17..].to_string());
        msg.truncate(i);
    }
    if msg.ends_with("execution timeout") {
        return "execution timeout".into();
    }
    let frames: Vec<String> = trace
        .iter()
        .flat_map(|t| t.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("[C]: in ?"))
        .map(|l| match l.rfind(": in function <") {
            Some(i) => {
                let line = l.trim_end_matches('>').rsplit(':').next().unwrap_or("");
                format!("{}: in function line {line}", &l[..i])
            }
            None => l.replace("in function '", "in global '"),
        })
        .collect();
    match frames.is_empty() {
        true => format!("[state-id 0] runtime error: {msg}"),
        false => format!("[state-id 0] runtime error: {msg} from {}", frames.join(", ")),
    }
}
