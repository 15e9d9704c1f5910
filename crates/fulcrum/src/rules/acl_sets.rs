//! ACL pattern sets that change at run time (the runtime API's `add|del|clear acl`): an ACL's
//! patterns come from pattern references (`rules::refs`: its inline patterns, then each `-f`
//! file); a change to any of them rebuilds the set and publishes it with a generation number.
//!
//! As for maps, the request path pays one relaxed load while a set never changed (see
//! `rules::live`). Must not touch: sample fetching.

use std::sync::Arc;

use fulcrum_pattern::{Method, PatternSet};

use super::live::Live;
use super::refs::{lock, Entry, PatRef};

/// One ACL's patterns, indexed for its match method.
#[derive(Debug)]
pub struct LiveSet {
    method: Method,
    ignore_case: bool,
    /// Where its patterns come from, in order.
    pub refs: Vec<Arc<PatRef>>,
    set: Live<PatternSet>,
}

impl LiveSet {
    /// A set built from `refs` (already checked by the configuration's loading).
    pub fn new(
        method: Method,
        ignore_case: bool,
        refs: Vec<Arc<PatRef>>,
    ) -> Result<Arc<LiveSet>, String> {
        let initial = build(method, ignore_case, &refs, None)?;
        let set = Arc::new(LiveSet { method, ignore_case, refs, set: Live::new(initial) });
        for r in &set.refs {
            lock(&r.sets).push(Arc::downgrade(&set));
        }
        Ok(set)
    }

    /// Runs `f` on the set as it is now.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&PatternSet) -> R) -> R {
        self.set.with(f)
    }

    /// The set with `changed`'s entries replaced by `trial`.
    pub(super) fn build(
        &self,
        changed: &PatRef,
        trial: &[Entry],
    ) -> Result<Arc<PatternSet>, String> {
        build(self.method, self.ignore_case, &self.refs, Some((changed, trial))).map(Arc::new)
    }

    pub(super) fn publish(&self, set: Arc<PatternSet>) {
        self.set.publish(set);
    }
}

fn build(
    method: Method,
    ignore_case: bool,
    refs: &[Arc<PatRef>],
    changed: Option<(&PatRef, &[Entry])>,
) -> Result<PatternSet, String> {
    let mut b = PatternSet::builder(method, ignore_case);
    for r in refs {
        let entries = match changed {
            Some((c, trial)) if std::ptr::eq(c, Arc::as_ptr(r)) => trial.to_vec(),
            _ => r.entries(),
        };
        let words: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        b.add_words(&words).map_err(|e| e.to_string())?;
    }
    Ok(b.build())
}
