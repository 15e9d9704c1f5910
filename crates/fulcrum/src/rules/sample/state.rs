//! State fetches: what the process knows beside the transaction: frontends, backends and servers
//! (`fe_conn`, `nbsrv`, `be_conn`, `queue`, `srv_is_up`, names and ids, `fe_*`, `be_*`, `srv_*`),
//! the process (`env`, `hostname`, `thread`, `stopping`), variables, the last rule run, the unique
//! id and captured headers.
//!
//! Must not touch: the proxies' state (read only), the heads.

use std::borrow::Cow;

use fulcrum_config as cfg;

use super::super::view::BackendView;
use super::{borrowed as b, one, var_value, Ctx, Each, Value};

/// The state fetches (`fetch_each` sends no other here).
pub(super) fn fetch<'a>(fetch: &cfg::Fetch, ctx: &Ctx<'a>, f: &mut Each<'_, 'a>) -> bool {
    use cfg::Fetch::*;
    match fetch {
        NbSrv { backend } => {
            let be = named_or_current(ctx, backend.as_deref());
            one(be.map(|be| Value::Int(be.usable_servers() as i64)), f)
        }
        FeConn => one(ctx.fe.map(|fe| Value::Int(i64::from(fe.current_conns()))), f),
        LastRule { line } => match crate::rules::origin::place(ctx.vars.last_rule) {
            Some((_, n)) if *line => f(Value::Int(i64::from(n))),
            Some((file, _)) => f(Value::Str(Cow::Owned(file.as_bytes().to_vec()))),
            None => false,
        },
        BeConn { backend } => {
            let be = named_or_current(ctx, backend.as_deref());
            one(be.map(|be| Value::Int(i64::from(be.active_sessions()))), f)
        }
        BeSessRate { backend }
        | ConnSlots { backend }
        | Queue { backend }
        | AvgQueue { backend } => {
            let be = named_or_current(ctx, backend.as_deref());
            one(be.map(|be| Value::Int(be.figure(fetch))), f)
        }
        SrvIsUp { backend, server } | SrvConn { backend, server } => {
            let be = named_or_current(ctx, backend.as_deref());
            let srv = be.and_then(|be| be.servers().iter().find(|s| &s.name == server));
            let v = srv.map(|s| match fetch {
                SrvIsUp { .. } => Value::Bool(s.is_up()),
                _ => Value::Int(i64::from(s.cur_conns())),
            });
            one(v, f)
        }
        Var { scope, name, default } => {
            let v = var_value(ctx, *scope, name).or_else(|| {
                default.as_ref().map(|d| Value::Str(Cow::Owned(d.as_bytes().to_vec())))
            });
            one(v, f)
        }
        SrvId => one(
            ctx.server
                .zip(ctx.backend)
                .and_then(|(name, be)| be.servers().iter().find(|s| s.name == name))
                .map(|s| Value::Int(i64::from(s.id))),
            f,
        ),
        HttpFirstReq => f(Value::Bool(ctx.vars.first_req)),
        FeName => f(Value::Str(Cow::Owned(ctx.frontend.as_bytes().to_vec()))),
        BeName => {
            one(ctx.backend.map(|be| Value::Str(Cow::Owned(be.name().as_bytes().to_vec()))), f)
        }
        SrvName => one(ctx.server.map(|s| Value::Str(Cow::Owned(s.as_bytes().to_vec()))), f),
        UniqueId => one(ctx.vars.unique_id.as_deref().map(|u| Value::Str(Cow::Borrowed(u))), f),
        Captured { response, slot } => {
            let caps = &ctx.vars.caps;
            let slots = if *response { &caps.res } else { &caps.req };
            let v = slots.get(*slot as usize).and_then(|v| v.as_deref());
            one(v.map(|v| Value::Str(Cow::Borrowed(v))), f)
        }
        Fe(what) => {
            let Some(fe) = ctx.fe else { return false };
            match what {
                cfg::FeFact::DefBe => one(fe.default_backend().map(|n| b(n.as_bytes())), f),
                w => one(fe.fact(*w, ctx.bind_no).map(Value::Int), f),
            }
        }
        Be { what: cfg::BeFact::CurServerTimeout | cfg::BeFact::CurTunnelTimeout, .. }
            if ctx.server.is_none() =>
        {
            // (Set when the stream connects to a server, as HAProxy's.)
            one(ctx.backend.map(|_| Value::Int(0)), f)
        }
        Be { backend, what } => {
            let be = named_or_current(ctx, backend.as_deref());
            one(be.map(|be| Value::Int(be.fact(*what))), f)
        }
        Srv { backend, server, what } => {
            let be = named_or_current(ctx, backend.as_deref());
            let v = be.and_then(|be| {
                let idx = be.servers().iter().position(|s| &s.name == server)?;
                Some(Value::Int(be.server_fact(idx, *what)))
            });
            one(v, f)
        }
        Env(name) => match std::env::var_os(name) {
            Some(v) => f(Value::Str(Cow::Owned(v.into_encoded_bytes()))),
            None => false,
        },
        Hostname => f(b(crate::sys::hostname().as_bytes())),
        Thread => f(Value::Int(i64::from(crate::lifecycle::thread_no()))),
        Stopping => f(Value::Bool(crate::lifecycle::stopping())),
        _ => false, // another family's
    }
}

/// The backend a fetch names (`nbsrv(<name>)`, `be_conn(<name>)`), else the transaction's.
fn named_or_current<'a>(ctx: &Ctx<'a>, name: Option<&str>) -> Option<&'a dyn BackendView> {
    match name {
        Some(n) => ctx.backends.named(n),
        None => ctx.backend,
    }
}
