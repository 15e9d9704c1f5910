//! HAProxy's `process_server_rules()`: the `force-persist` / `ignore-persist` rules (the first
//! whose condition holds decides), then the `use-server` rules: the first rule whose condition
//! holds names the server, unless that server is down (the next rules are then tried; `option
//! persist` or `force-persist` take it all the same); a log-format name that names no server
//! ends the rules. Asked by the HTTP analysers before persistence and by `mode tcp` sessions
//! before stick tables.

use super::Backend;
use crate::rules::sample::Ctx;
use crate::rules::UseServer;

/// What the `force-persist` / `ignore-persist` rules decided for a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Persist {
    /// No rule applied.
    #[default]
    Normal,
    /// `ignore-persist`: the persistence cookie chooses nothing.
    Ignore,
    /// `force-persist`: persistence may choose a server that is down or in maintenance.
    Force,
}

impl Persist {
    /// A server that is down may still be chosen by persistence (`use-server`, a cookie, a
    /// stick table): `force-persist` applied, or the backend has `option persist`.
    pub fn down_ok(self, be: &Backend) -> bool {
        self == Persist::Force || be.persist
    }
}

impl Backend {
    /// The first `force-persist` / `ignore-persist` rule whose condition holds for `ctx`.
    pub fn persist_rules(&self, ctx: &Ctx<'_>) -> Persist {
        let r = &self.rules;
        for (force, cond) in &r.persist_rules {
            if cond.eval(&r.acls, ctx) {
                return if *force { Persist::Force } else { Persist::Ignore };
            }
        }
        Persist::Normal
    }

    /// The server the `use-server` rules assign for `ctx`, if any (`down_ok`: see
    /// [`Persist::down_ok`]).
    pub fn use_server(&self, ctx: &Ctx<'_>, down_ok: bool) -> Option<usize> {
        let r = &self.rules;
        for (target, cond) in &r.use_servers {
            if !cond.eval(&r.acls, ctx) {
                continue;
            }
            let idx = match target {
                UseServer::Fixed(i) => *i,
                UseServer::Dynamic(f) => {
                    let name = f.render_vec(ctx);
                    self.servers.iter().position(|s| s.name.as_bytes() == name)?
                }
            };
            if self.servers.get(idx).is_some_and(|s| down_ok || s.is_up()) {
                return Some(idx);
            }
        }
        None
    }
}
