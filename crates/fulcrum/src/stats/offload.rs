//! Renders statistics (the page, the CSV, the metrics) away from the workers: on one thread of
//! its own, started on first use, in the idle scheduling class. A worker hands it a job
//! and waits for the bytes without blocking: the keep-alive requests it serves meanwhile do
//! not wait behind a 4 MB metrics page, and the kernel gives the CPU to the workers first
//! when both want it.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

/// Renderings waiting at most; more are refused (503) rather than piling up.
const QUEUE_LEN: usize = 64;

fn queue() -> Option<SyncSender<Job>> {
    static QUEUE: OnceLock<Option<Mutex<SyncSender<Job>>>> = OnceLock::new();
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = sync_channel::<Job>(QUEUE_LEN);
        let spawned = std::thread::Builder::new().name("fulcrum-stats".into()).spawn(move || {
            let _ = crate::sys::lower_thread_priority();
            while let Ok(job) = rx.recv() {
                // A job that panics loses its answer, not the renderer.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
        spawned.ok().map(|_| Mutex::new(tx))
    });
    q.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// Runs `job` on the renderer thread and returns what it made (on the caller's thread when
/// the renderer cannot be had); a 503 when too many renderings wait or one failed.
pub async fn render(job: impl FnOnce() -> Vec<u8> + Send + 'static) -> Vec<u8> {
    let Some(q) = queue() else { return job() };
    let (tx, rx) = tokio::sync::oneshot::channel::<Vec<u8>>();
    let sent = q.try_send(Box::new(move || {
        // Nobody waits any more (the client left): skip the work.
        if !tx.is_closed() {
            let _ = tx.send(job());
        }
    }));
    let unavailable = || fulcrum_http::reply::raw(503, Some("text/plain"), &[], b"busy\n");
    if sent.is_err() {
        return unavailable();
    }
    rx.await.unwrap_or_else(|_| unavailable())
}
