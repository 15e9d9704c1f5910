//! `use_backend` switching: the first rule whose condition holds names the backend (a fixed
//! one, or a log-format rendered to a backend name), else the frontend's `default_backend`.
//! Runs per request in an HTTP session, once per connection in `mode tcp` (on what is known
//! before any payload: addresses, variables, backends' state).
//!
//! Must not touch: sockets, server choice (the backend picks the server).

use std::sync::Arc;

use super::Frontend;
use crate::backend::Backend;
use crate::rules::sample::Ctx;
use crate::rules::{holds, Cond, Format, Segment};

/// Where a `use_backend` rule sends a transaction.
#[derive(Debug)]
pub enum UseTarget {
    Fixed(Arc<Backend>),
    /// A log-format rendered to a backend's name.
    Dynamic(Format),
}

/// A frontend's `use_backend` rules, with their conditions.
pub type UseBackends = Vec<(UseTarget, Option<Cond>)>;

/// The backend a transaction goes to, judged on `ctx`.
#[inline]
pub fn choose(fe: &Frontend, ctx: &Ctx<'_>) -> Option<Arc<Backend>> {
    choose_why(fe, ctx).0
}

/// [`choose`], with the index of the `use_backend` rule that chose (`None`: the default).
pub fn choose_why(fe: &Frontend, ctx: &Ctx<'_>) -> (Option<Arc<Backend>>, Option<usize>) {
    let r = &fe.rules;
    let use_backends = &fe.use_backends;
    if use_backends.is_empty() {
        return (fe.backend.clone(), None);
    }
    let linear = [Segment::Linear(0..use_backends.len())];
    let segments = if r.switching.is_empty() { &linear[..] } else { &r.switching[..] };
    // Rules matching in order; an indexed segment yields its first match with one lookup.
    let matching = segments.iter().flat_map(|seg| {
        let (range, first) = match seg {
            Segment::Linear(range) => (range.clone(), None),
            Segment::Indexed { rules, .. } => (rules.clone(), Some(seg.first_indexed(ctx))),
        };
        range.filter(move |&i| match first {
            Some(first) => first == Some(i),
            None => holds(&use_backends[i].1, &r.acls, ctx),
        })
    });
    for i in matching {
        match &use_backends[i].0 {
            UseTarget::Fixed(be) => return (Some(Arc::clone(be)), Some(i)),
            UseTarget::Dynamic(f) => {
                let name = f.render_vec(ctx);
                let found = std::str::from_utf8(&name).ok().and_then(|n| fe.backends.get(n));
                if let Some(be) = found {
                    return (Some(Arc::clone(be)), Some(i));
                }
                // HAProxy: an unknown dynamic name falls through to the next rules.
            }
        }
    }
    (fe.backend.clone(), None)
}
