//! The wait queues of a backend: one FIFO for sessions that may go to any server, one per server
//! for sessions bound to a server (hash algorithms). Touched only when servers are full.
//!
//! A slot given back by a finished session goes straight to the oldest waiter that can use it,
//! without passing through the free state, so a waiter never loses its turn to a newcomer.
//! Lost wake-ups are ruled out by announcing a waiter (`len`) before re-checking for a free slot,
//! while a releaser frees its slot before looking at `len`. When a server goes down, the
//! sessions waiting for it in particular are sent back to the balancer (`redistribute`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;

/// What a waiter is woken with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A slot on this server was taken for it; the second number is its queue position as
    /// HAProxy logs it (`%sq` / `%bq`): 1 plus the waiters served before it while it waited.
    Slot(usize, u32),
    /// Its server went down: choose again.
    Redispatch,
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    /// Its line's `served` count when it joined.
    served: u64,
    tx: oneshot::Sender<Wake>,
}

#[derive(Debug, Default)]
struct Lines {
    seq: u64,
    any: VecDeque<Entry>,
    per_server: Vec<VecDeque<Entry>>,
    /// Waiters served from each line so far (`any`, then one per server).
    served: Vec<u64>,
}

impl Lines {
    fn line(&mut self, server: Option<usize>) -> &mut VecDeque<Entry> {
        match server {
            Some(i) => &mut self.per_server[i],
            None => &mut self.any,
        }
    }
    fn served(&mut self, server: Option<usize>) -> &mut u64 {
        &mut self.served[server.map_or(0, |i| i + 1)]
    }
}

#[derive(Debug)]
pub struct Queue {
    lines: Mutex<Lines>,
    len: AtomicU32,
}

pub enum Enqueued {
    /// A slot was free after all.
    Served(usize),
    Waiting(Ticket),
}

/// A place in a queue.
pub struct Ticket {
    seq: u64,
    server: Option<usize>,
    rx: oneshot::Receiver<Wake>,
}

impl Queue {
    pub fn new(servers: usize) -> Self {
        let lines = Lines {
            per_server: (0..servers).map(|_| VecDeque::new()).collect(),
            served: vec![0; servers + 1],
            ..Default::default()
        };
        Self { lines: Mutex::new(lines), len: AtomicU32::new(0) }
    }

    /// Sessions waiting now.
    pub fn len(&self) -> u32 {
        self.len.load(Ordering::Relaxed)
    }

    /// Sessions waiting in one line (takes the lock: for logs and stats, not the data path).
    pub fn line_len(&self, server: Option<usize>) -> u32 {
        self.lock().line(server).len() as u32
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lines> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Joins the queue for `server` (or any server), unless `limit` (0: none) waiters are
    /// already there. `take` tries to take a free slot for that line.
    pub fn enqueue(
        &self,
        server: Option<usize>,
        limit: u32,
        take: impl Fn(Option<usize>) -> Option<usize>,
    ) -> Result<Enqueued, ()> {
        let mut lines = self.lock();
        if limit > 0 && lines.line(server).len() >= limit as usize {
            return Err(());
        }
        self.len.fetch_add(1, Ordering::SeqCst);
        if let Some(idx) = take(server) {
            self.len.fetch_sub(1, Ordering::SeqCst);
            return Ok(Enqueued::Served(idx));
        }
        lines.seq += 1;
        let seq = lines.seq;
        let served = *lines.served(server);
        let (tx, rx) = oneshot::channel();
        lines.line(server).push_back(Entry { seq, served, tx });
        Ok(Enqueued::Waiting(Ticket { seq, server, rx }))
    }

    /// Called after a slot was given back or a server came up: serves the oldest waiters that
    /// can now be served, and says how many. `take` takes a slot for a line; `give_back` undoes
    /// it when the waiter has gone.
    pub fn on_release(
        &self,
        take: impl Fn(Option<usize>) -> Option<usize>,
        give_back: impl Fn(usize),
    ) -> u32 {
        let mut served = 0;
        if self.len.load(Ordering::SeqCst) == 0 {
            return served;
        }
        let mut lines = self.lock();
        loop {
            // The oldest waiter at the head of any line that has a free slot now.
            let mut order: Vec<(u64, Option<usize>)> = Vec::new();
            if let Some(e) = lines.any.front() {
                order.push((e.seq, None));
            }
            for (i, l) in lines.per_server.iter().enumerate() {
                if let Some(e) = l.front() {
                    order.push((e.seq, Some(i)));
                }
            }
            order.sort_unstable();
            let Some((line, idx)) = order.iter().find_map(|&(_, l)| take(l).map(|i| (l, i))) else {
                return served;
            };
            let Some(entry) = lines.line(line).pop_front() else { return served };
            self.len.fetch_sub(1, Ordering::SeqCst);
            let count = lines.served(line);
            let pos = (*count - entry.served + 1).min(u64::from(u32::MAX)) as u32;
            if entry.tx.send(Wake::Slot(idx, pos)).is_err() {
                give_back(idx); // the waiter went away; try the next one
            } else {
                // Only a waiter that took its slot moves the others' positions (HAProxy).
                *lines.served(line) += 1;
                served += 1;
            }
        }
    }

    /// Sends every session waiting for server `server` back to the balancer (its server went
    /// down and `option redispatch` is set); returns how many were moved.
    pub fn redistribute(&self, server: usize) -> u32 {
        let mut lines = self.lock();
        let mut moved = 0;
        while let Some(entry) = lines.line(Some(server)).pop_front() {
            self.len.fetch_sub(1, Ordering::SeqCst);
            if entry.tx.send(Wake::Redispatch).is_ok() {
                moved += 1;
            }
        }
        moved
    }
}

impl Ticket {
    /// Waits for a slot, at most `timeout` (none: forever). `Err(position)` when it expired:
    /// its position as HAProxy logs it, 1 plus the waiters served before it meanwhile.
    pub async fn wait(mut self, timeout: Option<Duration>, queue: &Queue) -> Result<Wake, u32> {
        let got = match timeout {
            Some(d) => tokio::time::timeout(d, &mut self.rx).await.ok(),
            None => Some((&mut self.rx).await),
        };
        if let Some(Ok(idx)) = got {
            return Ok(idx);
        }
        // Expired: leave the queue, unless a slot was handed over meanwhile.
        let mut lines = queue.lock();
        let served = *lines.served(self.server);
        let line = lines.line(self.server);
        if let Some(i) = line.iter().position(|e| e.seq == self.seq) {
            let joined = line.remove(i).map_or(served, |e| e.served);
            queue.len.fetch_sub(1, Ordering::SeqCst);
            return Err((served - joined + 1).min(u64::from(u32::MAX)) as u32);
        }
        drop(lines);
        self.rx.try_recv().map_err(|_| 1)
    }
}
