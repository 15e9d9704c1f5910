//! Deadline-bounded waits on timers that last a whole session.
//!
//! A Tokio `timeout` per wait files a timer in the worker's timer wheel when the wait blocks and
//! takes it out again when the wait ends: a lock and two wheel operations per wait, and a
//! keep-alive request waits two or three times. A session instead keeps one timer per side (the
//! client's, the server's) and moves it from wait to wait. Moving a timer to a later instant
//! only records that instant (Tokio's `Sleep::reset` extends a filed timer with one atomic
//! operation; the wheel re-files the entry itself when the old instant comes, without waking
//! anyone), so a run of waits whose deadlines only move forward, as a keep-alive
//! connection's do, costs no wheel operation. A timer is armed only when its wait blocks, and
//! the clock is read only then.
//!
//! Must not touch: which timeout bounds which wait (the session decides).

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// A session's timer: absent until a wait first blocks on it.
pub type Timer = Option<Sleep>;

/// The wait passed its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// Runs `f` until it completes, or until `deadline` passes. `timer` is armed for the deadline
/// only if `f` does not complete at once.
pub async fn until<F: Future>(
    timer: Pin<&mut Timer>,
    deadline: Instant,
    f: F,
) -> Result<F::Output, Elapsed> {
    bounded(timer, f, move || deadline).await
}

/// Runs `f` until it completes, or until `limit` (if any) has passed since it first blocked.
/// The clock is read only if `f` blocks.
pub async fn within<F: Future>(
    timer: Pin<&mut Timer>,
    limit: Option<Duration>,
    f: F,
) -> Result<F::Output, Elapsed> {
    match limit {
        Some(d) => bounded(timer, f, move || Instant::now() + d).await,
        None => Ok(f.await),
    }
}

/// Like [`within`] for I/O: an elapsed limit becomes `TimedOut`.
pub async fn within_io<T>(
    timer: Pin<&mut Timer>,
    limit: Option<Duration>,
    f: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    within(timer, limit, f).await.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

async fn bounded<F: Future>(
    mut timer: Pin<&mut Timer>,
    f: F,
    deadline: impl FnOnce() -> Instant,
) -> Result<F::Output, Elapsed> {
    let mut f = pin!(f);
    let mut deadline = Some(deadline);
    poll_fn(move |cx| {
        if let Poll::Ready(v) = f.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        if let Some(deadline) = deadline.take() {
            let at = deadline();
            match timer.as_mut().as_pin_mut() {
                Some(sleep) => sleep.reset(at),
                None => timer.set(Some(tokio::time::sleep_until(at))),
            }
        }
        match timer.as_mut().as_pin_mut().map(|sleep| sleep.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(Elapsed)),
            _ => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime")
    }

    #[test]
    fn a_wait_past_its_deadline_ends_and_a_ready_one_never_arms_the_timer() {
        rt().block_on(async {
            let mut timer = pin!(None::<Sleep>);
            let r = within(timer.as_mut(), Some(Duration::from_secs(1)), async { 7 }).await;
            assert_eq!(r, Ok(7));
            assert!(timer.is_none(), "a wait that did not block armed the timer");
            let start = Instant::now();
            let r =
                within(timer.as_mut(), Some(Duration::from_secs(1)), std::future::pending::<()>())
                    .await;
            assert_eq!(r, Err(Elapsed));
            assert_eq!(start.elapsed(), Duration::from_secs(1));
        });
    }

    #[test]
    fn one_timer_serves_later_and_earlier_deadlines_in_turn() {
        rt().block_on(async {
            let mut timer = pin!(None::<Sleep>);
            let start = Instant::now();
            // Completes before its (late) deadline; the timer stays filed for 10 s.
            let quick = tokio::time::sleep(Duration::from_millis(5));
            let r = until(timer.as_mut(), start + Duration::from_secs(10), quick).await;
            assert_eq!(r, Ok(()));
            // An earlier deadline must still end the next wait on time.
            let r = until(
                timer.as_mut(),
                start + Duration::from_millis(50),
                std::future::pending::<()>(),
            )
            .await;
            assert_eq!(r, Err(Elapsed));
            assert_eq!(start.elapsed(), Duration::from_millis(50));
            // Then a later one, after the timer fired: re-armed, not elapsed at once.
            let r = within(
                timer.as_mut(),
                Some(Duration::from_millis(30)),
                std::future::pending::<()>(),
            )
            .await;
            assert_eq!(r, Err(Elapsed));
            assert_eq!(start.elapsed(), Duration::from_millis(80));
            // No limit: no timeout at all.
            let r =
                within(timer.as_mut(), None, tokio::time::sleep(Duration::from_secs(3600))).await;
            assert_eq!(r, Ok(()));
        });
    }

    #[test]
    fn an_io_wait_past_its_limit_is_timed_out() {
        rt().block_on(async {
            let mut timer = pin!(None::<Sleep>);
            let r = within_io(
                timer.as_mut(),
                Some(Duration::from_millis(10)),
                std::future::pending::<std::io::Result<()>>(),
            )
            .await;
            assert_eq!(r.expect_err("past its limit").kind(), std::io::ErrorKind::TimedOut);
        });
    }
}
