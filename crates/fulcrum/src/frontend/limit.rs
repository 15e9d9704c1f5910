//! A connection limit shared by all worker threads (`maxconn` of the process, a frontend or a
//! bind): an atomic counter plus a wake-up for accept loops paused at the limit.
//!
//! Accept loops reserve a slot *before* calling `accept`, so the limit is exact across threads;
//! while no slot is free they stop accepting and connections wait in the kernel's backlog.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::Notify;

#[derive(Debug)]
pub struct Limit {
    cur: AtomicU32,
    /// 0 means unlimited; changed at run time by `set maxconn`.
    max: AtomicU32,
    freed: Notify,
}

impl Limit {
    pub fn new(max: u32) -> Self {
        Self { cur: AtomicU32::new(0), max: AtomicU32::new(max), freed: Notify::new() }
    }

    pub fn current(&self) -> u32 {
        self.cur.load(Ordering::Relaxed)
    }

    /// The limit (0: none).
    pub fn max(&self) -> u32 {
        self.max.load(Ordering::Relaxed)
    }

    /// Changes the limit (the runtime API's `set maxconn`); a raised limit wakes paused
    /// accept loops.
    pub fn set_max(&self, max: u32) {
        self.max.store(max, Ordering::Relaxed);
        self.freed.notify_waiters();
    }

    /// Takes a slot if one is free.
    pub fn try_acquire(&self) -> bool {
        let max = self.max();
        if max == 0 {
            self.cur.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        self.cur
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| (c < max).then_some(c + 1))
            .is_ok()
    }

    /// Gives a slot back, waking paused accept loops when the limit was reached.
    pub fn release(&self) {
        let prev = self.cur.fetch_sub(1, Ordering::AcqRel);
        let max = self.max();
        if max != 0 && prev >= max {
            self.freed.notify_waiters();
        }
    }

    /// Waits until a slot is taken. While slots are free this costs one atomic operation: the
    /// waiter (a lock on the shared `Notify`) is set up only when the limit is reached.
    pub async fn acquire(&self) {
        while !self.try_acquire() {
            let notified = self.freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.try_acquire() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_refuses_past_max_and_accepts_after_release() {
        let l = Limit::new(2);
        assert!(l.try_acquire());
        assert!(l.try_acquire());
        assert!(!l.try_acquire());
        l.release();
        assert!(l.try_acquire());
        assert_eq!(l.current(), 2);
    }

    #[test]
    fn zero_means_unlimited() {
        let l = Limit::new(0);
        for _ in 0..1000 {
            assert!(l.try_acquire());
        }
        assert_eq!(l.current(), 1000);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn paused_acquire_wakes_on_release() {
        let l = std::sync::Arc::new(Limit::new(1));
        assert!(l.try_acquire());
        let l2 = l.clone();
        let waiter = tokio::spawn(async move { l2.acquire().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        l.release();
        tokio::time::timeout(std::time::Duration::from_secs(2), waiter)
            .await
            .expect("woken")
            .expect("joined");
        assert_eq!(l.current(), 1);
    }
}
