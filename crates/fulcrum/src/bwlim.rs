//! Bandwidth limitation (HAProxy 2.7's `filter bwlim-in|bwlim-out`, enabled per stream by
//! `set-bandwidth-limit` rules): the filters of the running configuration ([`Filter`]), the
//! limits a stream has enabled ([`Active`]), and how many bytes of a body may go now
//! ([`allow`], [`take`]), computed by HAProxy's `bwlim_apply_limit()` (`stick::freq::bwlim`)
//! on the stream's own rate counter or on a stick-table entry's `bytes_in_rate` /
//! `bytes_out_rate` shared by every stream with the same key. Only message payload counts,
//! never heads, as in HAProxy.
//!
//! Must not touch: sessions, sockets, rules (they call in: the rules enable, the body
//! transfers ask).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use fulcrum_config::DataType;

use crate::stick::{self, Entry, Table};

/// One `filter bwlim-in|bwlim-out` of a proxy.
#[derive(Debug)]
pub struct Filter {
    pub name: Box<str>,
    /// `bwlim-in`: the request's payload; `bwlim-out`: the response's.
    pub upload: bool,
    /// Its place among the stream's filters (frontend's first, then the backend's, each in
    /// declaration order): stacked limits apply in this order.
    pub order: u32,
    /// Bytes per period (`default-limit` or `limit`).
    pub limit: u32,
    /// Milliseconds (`default-period`; a shared filter's is its table's rate period).
    pub period: u32,
    pub min_size: u32,
    /// A shared filter's table.
    pub table: Option<Arc<Table>>,
}

impl Filter {
    /// The filter of configuration `f`, `order`-th of the stream's; `table` for a shared one.
    pub fn new(
        f: &fulcrum_config::filters::BwlimFilter,
        order: u32,
        table: Option<Arc<Table>>,
    ) -> Filter {
        use fulcrum_config::filters::BwlimKind;
        let (limit, mut period) = match &f.kind {
            BwlimKind::PerStream { limit, period_ms } => (*limit, *period_ms),
            BwlimKind::Shared { limit, .. } => (*limit, 0),
        };
        if let Some(t) = &table {
            period = stick::freq::period(&t.layout, rate_type(f.upload));
        }
        Filter {
            name: f.name.as_str().into(),
            upload: f.upload,
            order,
            limit,
            period,
            min_size: f.min_size,
            table,
        }
    }
}

fn rate_type(upload: bool) -> DataType {
    if upload {
        DataType::BytesInRate
    } else {
        DataType::BytesOutRate
    }
}

/// One limit enabled on a stream.
#[derive(Debug)]
pub struct Limit {
    pub filter: Arc<Filter>,
    state: State,
    /// Bytes this limit let go that a later limit of the chain held back (offered again).
    ahead: u32,
    /// Asked again before this, it lets nothing go (HAProxy's `st->exp`).
    exp: Option<Instant>,
}

#[derive(Debug)]
enum State {
    /// A per-stream filter: the stream's own counter and its limit and period (a rule's, or
    /// the filter's defaults).
    Own { words: [u64; 2], limit: u32, period: u32 },
    /// A shared filter: the table entry whose rate is shared (held: counted in its users).
    Shared(Arc<Entry>),
}

impl Drop for State {
    /// A shared entry's user leaves (the limit ends, or a later rule replaced it).
    fn drop(&mut self) {
        if let State::Shared(e) = self {
            e.trackers.fetch_sub(1, Ordering::Relaxed);
            e.touch(stick::now());
        }
    }
}

impl Limit {
    /// How many of `len` bytes may go now (counted), and when to ask again if not all.
    fn apply(&mut self, len: u32, eoi: bool, now: Instant) -> (u32, Option<Instant>) {
        if len == 0 || self.exp.is_some_and(|e| e > now) {
            return (0, self.exp);
        }
        self.exp = None;
        let f = &self.filter;
        let tick = stick::tick(stick::now());
        let (ret, wait) = match &mut self.state {
            State::Own { words, limit, period } => {
                stick::freq::bwlim(words, *period, *limit, f.min_size, 1, len, eoi, tick)
            }
            State::Shared(e) => {
                let Some(t) = &f.table else { return (len, None) };
                let Some(slot) = t.layout.slot(rate_type(f.upload)) else { return (len, None) };
                let users = e.trackers.load(Ordering::Relaxed);
                let mut w = e.data();
                let at = usize::from(slot.at);
                let words = &mut w[at..at + 2];
                stick::freq::bwlim(words, f.period, f.limit, f.min_size, users, len, eoi, tick)
            }
        };
        self.exp = wait.map(|ms| now + Duration::from_millis(u64::from(ms)));
        (ret, self.exp)
    }
}

/// The limits a stream enabled: on its request's payload (`up`) and its response's (`down`),
/// each in the filters' order.
#[derive(Debug, Default)]
pub struct Active {
    pub up: Vec<Limit>,
    pub down: Vec<Limit>,
}

impl Active {
    /// `set-bandwidth-limit` on filter `f`: its state starts again (a second rule for the same
    /// filter replaces the first's). `entry`: a shared filter's entry for the stream's key;
    /// `limit` and `period`: a per-stream filter's own, when the rule gave them (and > 0).
    pub fn enable(
        &mut self,
        f: &Arc<Filter>,
        entry: Option<Arc<Entry>>,
        limit: Option<u32>,
        period: Option<u32>,
    ) {
        let mut state = match entry {
            Some(e) => {
                e.trackers.fetch_add(1, Ordering::Relaxed);
                State::Shared(e)
            }
            None if f.table.is_some() => return, // no key for this stream: no limit
            None => State::Own {
                words: [0; 2],
                limit: limit.filter(|&l| l > 0).unwrap_or(f.limit),
                period: period.filter(|&p| p > 0).unwrap_or(f.period),
            },
        };
        let list = if f.upload { &mut self.up } else { &mut self.down };
        if let Some(l) = list.iter_mut().find(|l| Arc::ptr_eq(&l.filter, f)) {
            // Enabled again: its settings start over, not its count (HAProxy keeps the
            // stream's `bytes_rate`, so a second rule gives no new burst).
            if let (State::Own { words, .. }, State::Own { words: w, .. }) = (&l.state, &mut state)
            {
                *w = *words;
            }
            (l.state, l.exp) = (state, None);
            return;
        }
        let at = list.partition_point(|l| l.filter.order < f.order);
        list.insert(at, Limit { filter: Arc::clone(f), state, ahead: 0, exp: None });
    }
}

/// Which limits of a chain apply: those before the stream's compression filter (to the plain
/// payload), those after it (to the compressed one), or all (no compression). The place is
/// the compressing filter's [`Filter::order`]: the frontend's when it has one (its filters
/// come first, and the first compression filter compresses), else the backend's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Part {
    BeforeComp(u32),
    AfterComp(u32),
    All,
}

impl Part {
    fn has(self, l: &Limit) -> bool {
        match self {
            Part::All => true,
            Part::BeforeComp(at) => l.filter.order < at,
            Part::AfterComp(at) => l.filter.order > at,
        }
    }
}

/// How many of `len` bytes may go now through the chain's limits of `part` (each in turn
/// offered what the one before let go), and, when not all, the earliest moment one of them
/// lets more go. The caller forwards that many, then calls [`passed`].
pub fn allow(
    chain: &mut [Limit],
    part: Part,
    len: usize,
    eoi: bool,
    now: Instant,
) -> (usize, Option<Instant>) {
    let mut avail = len.min(u32::MAX as usize) as u32;
    let mut next: Option<Instant> = None;
    for l in chain.iter_mut().filter(|l| part.has(l)) {
        let new = avail.saturating_sub(l.ahead);
        let (got, exp) = l.apply(new, eoi, now);
        l.ahead += got;
        avail = avail.min(l.ahead);
        if let Some(e) = exp {
            next = Some(next.map_or(e, |n| n.min(e)));
        }
    }
    (avail as usize, next)
}

/// `n` bytes went: the limits of `part` had let them go.
pub fn passed(chain: &mut [Limit], part: Part, n: usize) {
    let n = n.min(u32::MAX as usize) as u32;
    for l in chain.iter_mut().filter(|l| part.has(l)) {
        l.ahead = l.ahead.saturating_sub(n);
    }
}

/// Waits until the chain's limits of `part` let some of `len` bytes go (at once when they
/// do), and says how many; the caller forwards them, then calls [`passed`].
pub async fn take(chain: &mut [Limit], part: Part, len: usize, eoi: bool) -> usize {
    let mut timer = None;
    std::future::poll_fn(|cx| poll_take(chain, part, len, eoi, &mut timer, cx)).await
}

/// [`take`] as a poll (a tunnel's directions poll it): `timer` holds the wait for when the
/// limits let more go, from one poll to the next.
pub fn poll_take(
    chain: &mut [Limit],
    part: Part,
    len: usize,
    eoi: bool,
    timer: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    cx: &mut Context<'_>,
) -> Poll<usize> {
    loop {
        let now = Instant::now();
        let (n, next) = allow(chain, part, len, eoi, now);
        if n > 0 || len == 0 {
            return Poll::Ready(n);
        }
        let until = tokio::time::Instant::from_std(next.unwrap_or(now + Duration::from_millis(1)));
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
        t.as_mut().reset(until);
        if t.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
    }
}

#[cfg(test)]
mod tests;
