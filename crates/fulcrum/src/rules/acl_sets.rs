//! ACL pattern sets that change at run time (the runtime API's `add|del|clear acl`): an ACL's
//! patterns come from pattern references (`rules::refs`: its inline patterns, then each `-f`
//! file); a change to any of them rebuilds the set and publishes it with a generation number.
//!
//! As for maps, the request path pays one relaxed load while a set never changed; once it did,
//! each worker keeps the current set in a thread-local cache. Must not touch: sample fetching.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fulcrum_pattern::{Method, PatternSet};

use super::refs::{lock, Entry, PatRef};

/// One ACL's patterns, indexed for its match method.
#[derive(Debug)]
pub struct LiveSet {
    slot: usize,
    method: Method,
    ignore_case: bool,
    /// Where its patterns come from, in order.
    pub refs: Vec<Arc<PatRef>>,
    initial: PatternSet,
    generation: AtomicU64,
    current: RwLock<Arc<PatternSet>>,
}

static SLOTS: AtomicU64 = AtomicU64::new(0);

type Cached = Option<(u64, Arc<PatternSet>)>;

thread_local! {
    static CACHE: RefCell<Vec<Cached>> = const { RefCell::new(Vec::new()) };
}

impl LiveSet {
    /// A set built from `refs` (already checked by the configuration's loading).
    pub fn new(
        method: Method,
        ignore_case: bool,
        refs: Vec<Arc<PatRef>>,
    ) -> Result<Arc<LiveSet>, String> {
        let initial = build(method, ignore_case, &refs, None)?;
        let set = Arc::new(LiveSet {
            slot: SLOTS.fetch_add(1, Ordering::Relaxed) as usize,
            method,
            ignore_case,
            refs,
            initial,
            generation: AtomicU64::new(0),
            current: RwLock::new(Arc::new(PatternSet::builder(method, ignore_case).build())),
        });
        for r in &set.refs {
            lock(&r.sets).push(Arc::downgrade(&set));
        }
        Ok(set)
    }

    /// Runs `f` on the set as it is now.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&PatternSet) -> R) -> R {
        let generation = self.generation.load(Ordering::Acquire);
        if generation == 0 {
            return f(&self.initial);
        }
        let set = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() <= self.slot {
                c.resize(self.slot + 1, None);
            }
            match &c[self.slot] {
                Some((g, s)) if *g == generation => Arc::clone(s),
                _ => {
                    let s = Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()));
                    c[self.slot] = Some((generation, Arc::clone(&s)));
                    s
                }
            }
        });
        f(&set)
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
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = set;
        self.generation.fetch_add(1, Ordering::Release);
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
