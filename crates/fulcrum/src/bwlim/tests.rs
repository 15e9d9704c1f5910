use super::*;
use crate::stick::freq;

/// Sends `total` bytes in pieces of `piece` through `bwlim` on the simulated clock, as fast
/// as it lets them go, each of `users` streams in turn on the same counter: the
/// milliseconds it took.
fn simulate(limit: u32, period: u32, min_size: u32, users: u32, total: u64, piece: u32) -> u64 {
    let mut w = [0u64; 2];
    let start = stick::tick(0) + 5_000;
    let mut now = start;
    let mut sent = vec![0u64; users as usize];
    let mut ready = vec![now; users as usize];
    while sent.iter().any(|&s| s < total) {
        // The stream that may ask first.
        let i = (0..users as usize)
            .filter(|&i| sent[i] < total)
            .min_by_key(|&i| ready[i])
            .expect("a stream left");
        now = now.max(ready[i]);
        let len = piece.min((total - sent[i]) as u32);
        let (n, wait) = freq::bwlim(&mut w, period, limit, min_size, users, len, false, now);
        sent[i] += u64::from(n);
        ready[i] = now + wait.unwrap_or(0);
        assert!(now - start < 1_000_000, "stuck");
    }
    u64::from(now - start)
}

#[test]
fn a_stream_alone_goes_at_its_limit() {
    // 1 MiB at 100 KiB per second: about ten seconds (no initial burst beyond one period).
    let ms = simulate(100 * 1024, 1000, 0, 1, 1 << 20, 16 * 1024);
    assert!((9_000..=10_500).contains(&ms), "{ms} ms");
    // The same with a 250 ms period and pieces smaller than a period's share.
    let ms = simulate(25 * 1024, 250, 0, 1, 1 << 20, 4096);
    assert!((9_000..=10_500).contains(&ms), "{ms} ms");
}

#[test]
fn streams_sharing_an_entry_share_its_limit() {
    // Four streams of 256 KiB each under one 100 KiB/s limit: together about ten seconds.
    let ms = simulate(100 * 1024, 1000, 0, 4, 256 * 1024, 16 * 1024);
    assert!((9_000..=10_500).contains(&ms), "{ms} ms");
}

#[test]
fn min_size_forwards_at_least_that_much_at_a_time_and_keeps_the_rate() {
    let mut w = [0u64; 2];
    let now = stick::tick(0) + 5_000;
    let (n, wait) = freq::bwlim(&mut w, 1000, 10_000, 2896, 1, 100_000, false, now);
    assert!(n >= 2896 && wait.is_some(), "{n} {wait:?}");
    // A minimum this close to the limit costs some pauses (HAProxy's manual says so): the
    // rate stays at most the limit, a little under it.
    let ms = simulate(10_000, 1000, 2896, 1, 100_000, 16 * 1024);
    assert!((9_500..=12_500).contains(&ms), "{ms} ms");
}

fn filter(upload: bool, order: u32) -> Arc<Filter> {
    Arc::new(Filter {
        name: "f".into(),
        upload,
        order,
        limit: 1000,
        period: 1000,
        min_size: 0,
        table: None,
    })
}

#[test]
fn a_second_rule_for_a_filter_replaces_the_first_and_order_is_kept() {
    let (a, b) = (filter(false, 2), filter(false, 1));
    let mut act = Active::default();
    act.enable(&a, None, Some(5), None);
    act.enable(&b, None, None, None);
    if let State::Own { words, .. } = &mut act.down[1].state {
        *words = [7, 3];
    }
    act.enable(&a, None, None, Some(10));
    assert_eq!(act.down.len(), 2);
    assert!(Arc::ptr_eq(&act.down[0].filter, &b) && Arc::ptr_eq(&act.down[1].filter, &a));
    let State::Own { limit, period, words } = act.down[1].state else { panic!("own state") };
    assert_eq!((limit, period), (1000, 10), "the second rule's settings");
    assert_eq!(words, [7, 3], "the count kept (no new burst)");
    act.enable(&filter(true, 0), None, None, None);
    assert_eq!((act.up.len(), act.down.len()), (1, 2));
}

#[test]
fn stacked_limits_let_go_what_the_strictest_allows_without_counting_twice() {
    let (loose, strict) = (filter(false, 0), filter(false, 1));
    let mut act = Active::default();
    act.enable(&loose, None, Some(100_000), None);
    act.enable(&strict, None, Some(1000), None);
    let now = Instant::now();
    let (n, next) = allow(&mut act.down, Part::All, 50_000, false, now);
    assert_eq!(n, 1000);
    assert!(next.is_some());
    passed(&mut act.down, Part::All, n);
    // The loose one let 50,000 go once; the strict one held back 49,000, offered again.
    assert_eq!(act.down[0].ahead, 49_000);
    let (n, _) = allow(&mut act.down, Part::All, 49_000, false, now);
    assert_eq!(n, 0, "the strict limit waits");
    let State::Own { words, .. } = &act.down[0].state else { panic!("own state") };
    assert_eq!(words[0] as u32, 50_000, "counted once");
}
