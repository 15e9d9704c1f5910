//! Renders statistics (the page, the CSV, the metrics) away from the workers: on one thread of
//! its own, started on first use, in the idle scheduling class. A worker hands it a job
//! and waits for the bytes without blocking: the keep-alive requests it serves meanwhile do
//! not wait behind a 4 MB metrics page, and the kernel gives the CPU to the workers first
//! when both want it.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

fn queue() -> Option<Sender<Job>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new().name("fulcrum-stats".into()).spawn(move || {
            let _ = crate::sys::lower_thread_priority();
            while let Ok(job) = rx.recv() {
                job();
            }
        });
        spawned.ok().map(|_| Mutex::new(tx))
    });
    q.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// Runs `job` on the renderer thread and returns what it made (on the caller's thread when
/// the renderer cannot be had).
pub async fn render(job: impl FnOnce() -> Vec<u8> + Send + 'static) -> Vec<u8> {
    let Some(q) = queue() else { return job() };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sent = q.send(Box::new(move || {
        let _ = tx.send(job());
    }));
    if sent.is_err() {
        return Vec::new();
    }
    rx.await.unwrap_or_default()
}
