//! A value the runtime API may replace while workers read it (a map's index, an ACL's pattern
//! set): the value the configuration built, used while it never changed (one relaxed load per
//! read), then the current one, which each worker caches with its generation number and takes
//! from the shared lock only when the generation moved.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::worker::{Id, Slot};

static SLOTS: AtomicU64 = AtomicU64::new(0);

type Cached = Option<(u64, Arc<dyn Any + Send + Sync>)>;

/// Per worker: the current value of each changed `Live`.
static CACHE: Slot<RefCell<Vec<Cached>>> = Slot::new(Id::RulesLive, || RefCell::new(Vec::new()));

#[derive(Debug)]
pub struct Live<T> {
    slot: usize,
    initial: T,
    /// 0 until the first change; then bumped at each.
    generation: AtomicU64,
    current: RwLock<Option<Arc<T>>>,
}

impl<T: Send + Sync + 'static> Live<T> {
    pub fn new(initial: T) -> Self {
        Live {
            slot: SLOTS.fetch_add(1, Ordering::Relaxed) as usize,
            initial,
            generation: AtomicU64::new(0),
            current: RwLock::new(None),
        }
    }

    /// Runs `f` on the value as it is now.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let generation = self.generation.load(Ordering::Acquire);
        if generation == 0 {
            return f(&self.initial);
        }
        let value = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() <= self.slot {
                c.resize(self.slot + 1, None);
            }
            let cached = match &c[self.slot] {
                Some((g, v)) if *g == generation => Arc::clone(v).downcast::<T>().ok(),
                _ => None,
            };
            cached.or_else(|| {
                let v = self.current.read().unwrap_or_else(|e| e.into_inner()).clone()?;
                c[self.slot] = Some((generation, Arc::clone(&v) as Arc<dyn Any + Send + Sync>));
                Some(v)
            })
        });
        match value {
            Some(v) => f(&v),
            None => f(&self.initial),
        }
    }

    /// Makes `v` the value readers get from now on.
    pub fn publish(&self, v: Arc<T>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(v);
        self.generation.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_see_the_initial_value_then_each_published_one() {
        let l = Live::new(1u32);
        assert_eq!(l.with(|v| *v), 1);
        l.publish(Arc::new(2));
        assert_eq!(l.with(|v| *v), 2);
        assert_eq!(l.with(|v| *v), 2, "from the worker's cache");
        l.publish(Arc::new(3));
        assert_eq!(l.with(|v| *v), 3);
    }
}
