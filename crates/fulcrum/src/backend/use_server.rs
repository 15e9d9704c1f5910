//! `use-server` rules (HAProxy's `process_server_rules()`): the first rule whose condition
//! holds names the server, unless that server is down (the next rules are then tried); a
//! log-format name that names no server ends the rules. Asked by the HTTP analysers before
//! persistence and by `mode tcp` sessions before stick tables.

use super::Backend;
use crate::rules::sample::Ctx;
use crate::rules::UseServer;

impl Backend {
    /// The server the `use-server` rules assign for `ctx`, if any.
    pub fn use_server(&self, ctx: &Ctx<'_>) -> Option<usize> {
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
            if self.servers.get(idx).is_some_and(|s| s.is_up()) {
                return Some(idx);
            }
        }
        None
    }
}
