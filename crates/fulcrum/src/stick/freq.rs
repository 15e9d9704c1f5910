//! A stick-table entry's data: where each stored type lives in the entry's words (`Layout`),
//! and HAProxy's period frequency counters (`freq_ctr` with `update_freq_ctr_period` and
//! `read_freq_ctr_period`), computed as HAProxy computes them so rates read the same.
//!
//! Must not touch: tables, locks (the caller holds the entry's).

use fulcrum_config::{DataType, Stored};

/// Where a stored data type sits in an entry's words.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// First word.
    pub at: u16,
    /// Array elements (1 for plain types).
    pub elems: u16,
    /// The period of a rate type, in milliseconds (0 otherwise).
    pub period: u32,
}

/// The data types a table stores, as offsets into each entry's words.
#[derive(Debug, Default)]
pub struct Layout {
    slots: [Option<Slot>; DataType::ALL.len()],
    /// Words per entry.
    pub words: usize,
    /// The stored types, in HAProxy's order (for `show table`).
    pub stored: Vec<Stored>,
}

/// Words a data type takes per element: a rate keeps the current period's start and count in
/// one word and the previous period's count in another.
fn width(ty: DataType) -> usize {
    if ty.is_rate() {
        2
    } else {
        1
    }
}

impl Layout {
    pub fn new(stored: &[Stored]) -> Self {
        let mut l = Layout { stored: stored.to_vec(), ..Layout::default() };
        l.stored.sort_by_key(|s| s.ty);
        for s in &l.stored {
            let period = s.period.map_or(0, |p| p.as_millis().min(u32::MAX as u128) as u32);
            let slot = Slot { at: l.words as u16, elems: s.elems as u16, period };
            l.slots[s.ty as usize] = Some(slot);
            l.words += width(s.ty) * s.elems as usize;
        }
        l
    }

    pub fn slot(&self, ty: DataType) -> Option<Slot> {
        self.slots[ty as usize]
    }

    pub fn has(&self, ty: DataType) -> bool {
        self.slots[ty as usize].is_some()
    }
}

/// The words of element `idx` of a slot.
fn at(slot: Slot, ty: DataType, idx: u16) -> usize {
    slot.at as usize + width(ty) * idx as usize
}

/// Adds `n` to a counter (or element `idx` of an array); nothing when not stored.
pub fn add(l: &Layout, w: &mut [u64], ty: DataType, idx: u16, n: u64, now: u32) {
    let Some(s) = l.slot(ty).filter(|s| idx < s.elems) else { return };
    let i = at(s, ty, idx);
    if ty.is_rate() {
        update_rate(&mut w[i..i + 2], s.period, n as u32, now);
    } else {
        w[i] = w[i].wrapping_add(n);
        if !matches!(ty, DataType::BytesInCnt | DataType::BytesOutCnt) {
            w[i] &= u64::from(u32::MAX); // HAProxy's counters are 32-bit unsigned
        }
    }
}

/// Takes one from a counter, not below zero (`conn_cur`).
pub fn sub_one(l: &Layout, w: &mut [u64], ty: DataType) {
    if let Some(s) = l.slot(ty) {
        w[s.at as usize] = w[s.at as usize].saturating_sub(1);
    }
}

/// Sets a counter's value (`sc-set-gpt`, `set table`); rates are not settable this way.
pub fn set(l: &Layout, w: &mut [u64], ty: DataType, idx: u16, v: u64) {
    let Some(s) = l.slot(ty).filter(|s| idx < s.elems) else { return };
    let i = at(s, ty, idx);
    if ty.is_rate() {
        // `set table ... data.http_req_rate <v>`: a period starting now with that count.
        pack(&mut w[i..i + 2], now_tick() & !1, v as u32, 0);
    } else {
        w[i] = v;
    }
}

/// A value as fetches and `show table` read it: a rate over its period, a counter as is.
/// `None` when the type is not stored.
pub fn read(l: &Layout, w: &[u64], ty: DataType, idx: u16, now: u32) -> Option<u64> {
    let s = l.slot(ty).filter(|s| idx < s.elems)?;
    let i = at(s, ty, idx);
    Some(if ty.is_rate() { u64::from(read_rate(&w[i..i + 2], s.period, now)) } else { w[i] })
}

fn now_tick() -> u32 {
    super::tick(super::now())
}

/// The period of a rate type (for `show table`'s `http_req_rate(10000)`).
pub fn period(l: &Layout, ty: DataType) -> u32 {
    l.slot(ty).map_or(0, |s| s.period)
}

// A rate's two words: [curr_tick << 32 | curr_ctr, prev_ctr].

fn unpack(w: &[u64]) -> (u32, u32, u32) {
    ((w[0] >> 32) as u32, w[0] as u32, w[1] as u32)
}

fn pack(w: &mut [u64], tick: u32, curr: u32, prev: u32) {
    w[0] = (u64::from(tick) << 32) | u64::from(curr);
    w[1] = u64::from(prev);
}

/// HAProxy's `update_freq_ctr_period()`.
fn update_rate(w: &mut [u64], period: u32, inc: u32, now: u32) {
    let (mut tick, curr, mut prev) = unpack(w);
    if now.wrapping_sub(tick) < period {
        return pack(w, tick, curr.wrapping_add(inc), prev);
    }
    prev = curr;
    tick = tick.wrapping_add(period);
    if now.wrapping_sub(tick) >= period {
        // at least two periods went by
        prev = 0;
        tick = now;
    }
    pack(w, tick & !1, inc, prev);
}

/// HAProxy's `read_freq_ctr_period()`: the current period's count plus the share of the
/// previous one that still falls within a period from now.
fn read_rate(w: &[u64], period: u32, now: u32) -> u32 {
    let (tick, mut curr, mut past) = unpack(w);
    if period == 0 {
        return curr;
    }
    let mut remain = tick.wrapping_add(period).wrapping_sub(now) as i32;
    if remain < 0 {
        // past the current period: it became the previous one, or is too old
        remain += period as i32;
        past = if remain >= 0 { curr } else { 0 };
        curr = 0;
    }
    if curr == 0 && past <= 1 {
        return past; // HAProxy's "flapping correction" for very low rates
    }
    let p = u64::from(period);
    ((u64::from(past) * remain.max(0) as u64 + u64::from(curr) * p) / p) as u32
}

/// HAProxy 2.7's `bwlim_apply_limit()` on a rate's two words `w` (a stream's own counter, or
/// a shared entry's `bytes_in_rate`/`bytes_out_rate`): how many of `len` bytes may go now at
/// `limit` bytes per `period` ms shared by `users` streams, forwarding at least `min_size` at
/// a time unless `eoi` (the message is all received); and, when not all may go, the
/// milliseconds to wait before asking again. The bytes allowed are counted.
#[allow(clippy::too_many_arguments)]
pub fn bwlim(
    w: &mut [u64],
    period: u32,
    limit: u32,
    min_size: u32,
    users: u32,
    len: u32,
    eoi: bool,
    now: u32,
) -> (u32, Option<u32>) {
    let (period, limit, users) = (period.max(1), limit.max(1), users.max(1));
    let scale = |n: u64| n.saturating_mul(u64::from(period)).saturating_mul(u64::from(users));
    // The current rate is past the limit: nothing goes (no initial burst either).
    let overshoot = overshoot(w, period, limit, now);
    if overshoot > 0 {
        let wait = scale(u64::from(min_size) + overshoot as u64) / u64::from(limit);
        return (0, Some(clamp_ms(wait).max(1)));
    }
    let remain = remain_period(w, period, limit, now);
    let tokens = u64::from(remain).div_ceil(u64::from(users));
    let mut ret = len;
    let mut wait = 0u64;
    if tokens < u64::from(len) {
        ret = tokens as u32;
        if ret < min_size {
            ret = if eoi { len.min(min_size) } else { min_size };
            if ret <= remain {
                wait = scale(u64::from(ret) - tokens).div_ceil(u64::from(limit));
            } else {
                ret = if limit < ret { remain } else { 0 };
            }
        }
    }
    update_rate(w, period, ret, now);
    if ret < len {
        let pend = (len - ret).min(min_size.saturating_mul(users));
        wait += u64::from(next_event_delay(w, period, limit, pend, now));
        return (ret, Some(clamp_ms(wait).max(1)));
    }
    (ret, None)
}

fn clamp_ms(ms: u64) -> u32 {
    ms.min(u64::from(u32::MAX)) as u32
}

/// HAProxy's `freq_ctr_overshoot_period()`: the events of the current period beyond what
/// `freq` per `period` allows at this point of it (0 for a counter in the future).
fn overshoot(w: &[u64], period: u32, freq: u32, now: u32) -> i64 {
    let (tick, curr, _) = unpack(w);
    let elapsed = now.wrapping_sub(tick) as i32;
    if elapsed < 0 {
        return 0;
    }
    i64::from(curr) - (elapsed as u64 * u64::from(freq) / u64::from(period)) as i64
}

/// HAProxy's `freq_ctr_total()` with `pend` events to come: the events over the current and
/// last periods, weighted (divided by the period, a rate).
fn total(w: &[u64], period: u32, pend: u32, now: u32) -> u64 {
    let (tick, mut curr, mut past) = unpack(w);
    let mut remain = tick.wrapping_add(period).wrapping_sub(now) as i32;
    if remain < 0 {
        remain += period as i32;
        past = if remain >= 0 { curr } else { 0 };
        curr = 0;
    }
    let remain = remain.max(0) as u64;
    u64::from(past) * remain + (u64::from(curr) + u64::from(pend)) * u64::from(period)
}

/// HAProxy's `freq_ctr_remain_period()`: the events still allowed within the rate.
fn remain_period(w: &[u64], period: u32, freq: u32, now: u32) -> u32 {
    let avg = (total(w, period, 0, now) / u64::from(period)).min(u64::from(freq)) as u32;
    freq - avg
}

/// HAProxy's `next_event_delay_period()`: milliseconds until `pend` more events fit.
fn next_event_delay(w: &[u64], period: u32, freq: u32, pend: u32, now: u32) -> u32 {
    let total = total(w, period, pend, now);
    let limit = u64::from(freq) * u64::from(period);
    if total < limit {
        return 0;
    }
    clamp_ms((total - limit) / u64::from(freq.max(1))).max(1)
}

/// The raw count of a rate's current period (what `inc_gpc0` returns when only the rate is
/// stored).
pub fn current(l: &Layout, w: &[u64], ty: DataType, idx: u16) -> Option<u64> {
    let s = l.slot(ty).filter(|s| idx < s.elems)?;
    Some(u64::from(unpack(&w[at(s, ty, idx)..]).1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn layout() -> Layout {
        Layout::new(&[
            Stored { ty: DataType::HttpReqRate, period: Some(Duration::from_secs(10)), elems: 1 },
            Stored { ty: DataType::ConnCnt, period: None, elems: 1 },
            Stored { ty: DataType::Gpc, period: None, elems: 3 },
        ])
    }

    #[test]
    fn types_are_laid_out_in_haproxy_s_order_whatever_the_store_order() {
        let l = layout();
        assert_eq!(l.words, 1 + 2 + 3);
        assert_eq!(
            l.stored.iter().map(|s| s.ty).collect::<Vec<_>>(),
            [DataType::ConnCnt, DataType::HttpReqRate, DataType::Gpc]
        );
        assert!(l.has(DataType::Gpc) && !l.has(DataType::Gpc0));
    }

    #[test]
    fn a_rate_counts_within_its_period_then_carries_a_shrinking_share_of_it() {
        let l = layout();
        let mut w = vec![0u64; l.words];
        let t0 = 0x8000_0000u32;
        for _ in 0..10 {
            add(&l, &mut w, DataType::HttpReqRate, 0, 1, t0);
        }
        assert_eq!(read(&l, &w, DataType::HttpReqRate, 0, t0), Some(10));
        assert_eq!(read(&l, &w, DataType::HttpReqRate, 0, t0 + 9_999), Some(10));
        // Half-way through the next period, half of the last one still counts.
        assert_eq!(read(&l, &w, DataType::HttpReqRate, 0, t0 + 15_000), Some(5));
        add(&l, &mut w, DataType::HttpReqRate, 0, 1, t0 + 15_000);
        assert_eq!(read(&l, &w, DataType::HttpReqRate, 0, t0 + 15_000), Some(6));
        // Two periods later nothing is left.
        assert_eq!(read(&l, &w, DataType::HttpReqRate, 0, t0 + 40_000), Some(0));
    }

    #[test]
    fn counters_and_array_elements_are_kept_apart() {
        let l = layout();
        let mut w = vec![0u64; l.words];
        add(&l, &mut w, DataType::ConnCnt, 0, 2, 0);
        add(&l, &mut w, DataType::Gpc, 2, 5, 0);
        add(&l, &mut w, DataType::Gpc, 3, 5, 0); // no element 3: ignored
        assert_eq!(read(&l, &w, DataType::ConnCnt, 0, 0), Some(2));
        assert_eq!(read(&l, &w, DataType::Gpc, 1, 0), Some(0));
        assert_eq!(read(&l, &w, DataType::Gpc, 2, 0), Some(5));
        assert_eq!(read(&l, &w, DataType::Gpc0, 0, 0), None);
        sub_one(&l, &mut w, DataType::ConnCnt);
        sub_one(&l, &mut w, DataType::ConnCnt);
        sub_one(&l, &mut w, DataType::ConnCnt);
        assert_eq!(read(&l, &w, DataType::ConnCnt, 0, 0), Some(0));
    }
}
