use std::time::Duration;

use super::*;

fn table(size: u32, expire: Option<u64>, nopurge: bool) -> Arc<Table> {
    let t = cfg::StickTable {
        span: cfg::Span { file: "t.cfg".into(), line: 1 },
        key: TableKey::Ip,
        size,
        expire: expire.map(Duration::from_millis),
        nopurge,
        store: vec![cfg::Stored { ty: DataType::ConnCur, period: None, elems: 1 }],
        peers: None,
    };
    Arc::new(Table::new("t", 0, &t))
}

fn ip(n: u8) -> Key {
    Key::V4([10, 0, 0, n])
}

#[test]
fn a_full_table_evicts_the_least_recently_touched_untracked_entry() {
    let t = table(3, None, false);
    for n in 1..=3 {
        t.get_or_create(ip(n), 100 + u64::from(n)).expect("room");
    }
    // 1 is touched again, 2 is tracked: 3 is the one to go.
    t.get_or_create(ip(1), 200).expect("found");
    let two = t.lookup(&ip(2), 200).expect("two");
    two.trackers.fetch_add(1, Ordering::Relaxed);
    t.get_or_create(ip(4), 300).expect("room made");
    assert_eq!(t.used(), 3);
    assert!(t.lookup(&ip(3), 300).is_none());
    for n in [1, 2, 4] {
        assert!(t.lookup(&ip(n), 300).is_some(), "{n} stays");
    }
}

#[test]
fn nopurge_refuses_new_entries_when_full() {
    let t = table(2, None, true);
    assert!(t.get_or_create(ip(1), 1).is_some());
    assert!(t.get_or_create(ip(2), 2).is_some());
    assert!(t.get_or_create(ip(3), 3).is_none());
    assert!(t.get_or_create(ip(1), 4).is_some(), "an existing key is still found");
}

#[test]
fn entries_expire_after_their_last_touch_unless_tracked() {
    // Times in microseconds; the table expires entries after 1000 ms.
    let ms = |m: u64| m * 1000;
    let t = table(10, Some(1000), false);
    let a = t.get_or_create(ip(1), 0).expect("a");
    t.get_or_create(ip(2), 0).expect("b");
    a.touch(ms(800));
    assert!(t.lookup(&ip(2), ms(1000)).is_none(), "b expired at 1000");
    assert!(t.lookup(&ip(1), ms(1000)).is_some(), "a was touched at 800");
    assert_eq!(t.expires_in(&a, ms(1000)), Some(800));
    t.purge(ms(1000));
    assert_eq!(t.used(), 1);
    a.trackers.fetch_add(1, Ordering::Relaxed);
    t.purge(ms(5000));
    assert_eq!(t.used(), 1, "a tracked entry stays");
    a.trackers.fetch_sub(1, Ordering::Relaxed);
    a.touch(ms(5000));
    t.purge(ms(5999));
    assert_eq!(t.used(), 1);
    t.purge(ms(6000));
    assert_eq!(t.used(), 0);
    assert!(!t.remove(&ip(1)));
}

#[test]
fn clear_keeps_tracked_entries() {
    let t = table(10, None, false);
    let a = t.get_or_create(ip(1), 0).expect("a");
    t.get_or_create(ip(2), 0).expect("b");
    a.trackers.fetch_add(1, Ordering::Relaxed);
    assert!(!t.remove(&ip(1)));
    assert!(t.remove(&ip(2)));
    assert_eq!(t.used(), 1);
}
