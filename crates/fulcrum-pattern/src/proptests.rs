//! Property tests: for every method, indexed lookups agree with a naive scan of the pattern
//! list that follows HAProxy's C code (list semantics, or tree semantics where HAProxy uses
//! a tree), over deterministic pseudo-random pattern lists and inputs; `first_match_*` agree
//! with "the first pattern in insertion order that matches" and with `match_*`. Plus a
//! 10,000-pattern smoke test per method.
//!
//! Owns: the reference implementations and the generators. Must not touch: library code.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::rx::Rx as Regex;

use crate::int::{parse_range, IntRange};
use crate::ip::{parse_ip, v6_to_v4, IpPattern};
use crate::word::{matches_one, Delims};
use crate::{rx, Map, Method, PatternSet};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn string(&mut self, alphabet: &[u8], max_len: usize) -> String {
        let len = self.below(max_len + 1);
        (0..len).map(|_| alphabet[self.below(alphabet.len())] as char).collect()
    }
}

/// Counts both outcomes, so a generator that never (or always) matches is noticed.
#[derive(Default)]
struct Outcomes {
    hits: usize,
    misses: usize,
}

impl Outcomes {
    fn record(&mut self, hit: bool) {
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    fn assert_both_common(&self) {
        let total = self.hits + self.misses;
        assert!(
            self.hits * 10 > total && self.misses * 10 > total,
            "hits {} misses {}",
            self.hits,
            self.misses
        );
    }
}

fn eq(a: &[u8], b: &[u8], fold: bool) -> bool {
    if fold {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// Whether pattern `p` matches input `s` for a string method, one pattern at a time.
fn naive_one(method: Method, p: &str, s: &[u8], fold: bool) -> bool {
    let p = p.as_bytes();
    match method {
        Method::Str => eq(p, s, fold),
        Method::Beg => p.len() <= s.len() && eq(p, &s[..p.len()], fold),
        Method::End => p.len() <= s.len() && eq(p, &s[s.len() - p.len()..], fold),
        Method::Sub => p.len() <= s.len() && s.windows(p.len()).any(|w| eq(w, p, fold)),
        Method::Dom => matches_one(Delims::Dom, p, s, fold),
        Method::Dir => matches_one(Delims::Dir, p, s, fold),
        _ => false,
    }
}

/// HAProxy's map winner for a string method.
fn naive_winner(method: Method, patterns: &[String], s: &[u8]) -> Option<usize> {
    let hits = patterns.iter().enumerate().filter(|(_, p)| naive_one(method, p, s, false));
    match method {
        // Tree lookups: exact, or longest prefix; the first of equal keys.
        Method::Beg => {
            hits.max_by(|(i, a), (j, b)| a.len().cmp(&b.len()).then(j.cmp(i))).map(|h| h.0)
        }
        _ => hits.map(|h| h.0).next(),
    }
}

const STRING_METHODS: [Method; 6] =
    [Method::Str, Method::Beg, Method::End, Method::Sub, Method::Dom, Method::Dir];

#[test]
fn string_methods_agree_with_a_linear_scan() {
    let mut rng = Rng(1);
    let mut outcomes = Outcomes::default();
    for round in 0..300 {
        let method = STRING_METHODS[round % STRING_METHODS.len()];
        let fold = round % 4 >= 2;
        let alphabet: &[u8] =
            if matches!(method, Method::Dom | Method::Dir) { b"aAb./?:" } else { b"aAbB" };
        let patterns: Vec<String> =
            (0..rng.below(30)).map(|_| rng.string(alphabet, 5)).filter(|p| !p.is_empty()).collect();
        let mut b = PatternSet::builder(method, fold);
        for p in &patterns {
            b.add(p).expect("string patterns are always valid");
        }
        let set = b.build();
        for _ in 0..100 {
            let input = rng.string(alphabet, 12);
            let expected = patterns.iter().any(|p| naive_one(method, p, input.as_bytes(), fold));
            assert_eq!(
                set.match_str(input.as_bytes()),
                expected,
                "{method} -i={fold} {patterns:?} on {input:?}"
            );
            outcomes.record(expected);
        }
    }
    outcomes.assert_both_common();
}

#[test]
fn string_maps_pick_the_same_entry_as_haproxy_would() {
    let mut rng = Rng(2);
    let mut outcomes = Outcomes::default();
    for round in 0..300 {
        let method = STRING_METHODS[round % STRING_METHODS.len()];
        let alphabet: &[u8] =
            if matches!(method, Method::Dom | Method::Dir) { b"ab./?:" } else { b"abc" };
        let keys: Vec<String> =
            (0..rng.below(30)).map(|_| rng.string(alphabet, 4)).filter(|p| !p.is_empty()).collect();
        let text: String = keys.iter().enumerate().map(|(i, k)| format!("{k} v{i}\n")).collect();
        let map = Map::parse(method, &text).expect("string keys are always valid");
        assert_eq!(map.len(), keys.len());
        for _ in 0..100 {
            let input = rng.string(alphabet, 10);
            let expected = naive_winner(method, &keys, input.as_bytes()).map(|i| format!("v{i}"));
            assert_eq!(
                map.lookup(input.as_bytes()),
                expected.as_deref(),
                "{method} {keys:?} on {input:?}"
            );
            outcomes.record(expected.is_some());
        }
    }
    outcomes.assert_both_common();
}

#[test]
fn regex_sets_agree_with_trying_each_regex_in_order() {
    let mut rng = Rng(3);
    let mut outcomes = Outcomes::default();
    for round in 0..200 {
        let fold = round % 2 == 1;
        let candidates: Vec<String> =
            (0..rng.below(20)).map(|_| rng.string(b"aAb.*^$|", 5)).collect();
        let mut b = PatternSet::builder(Method::Reg, fold);
        let mut kept = Vec::new();
        for c in candidates {
            if b.add(&c).is_ok() && !c.is_empty() {
                let re = regex::bytes::RegexBuilder::new(&c)
                    .unicode(false)
                    .case_insensitive(fold)
                    .build()
                    .expect("accepted by the builder");
                kept.push((c, re));
            }
        }
        let set = b.build();
        let text: String =
            kept.iter().enumerate().map(|(i, (k, _))| format!("{k} v{i}\n")).collect();
        let map = (!fold).then(|| Map::parse(Method::Reg, &text).expect("already validated"));
        for _ in 0..50 {
            let input = rng.string(b"aAb", 8);
            let first = kept.iter().position(|(_, re)| re.is_match(input.as_bytes()));
            assert_eq!(set.match_str(input.as_bytes()), first.is_some());
            outcomes.record(first.is_some());
            if let Some(map) = &map {
                let keys: Vec<&String> = kept.iter().map(|k| &k.0).collect();
                assert_eq!(
                    map.lookup(input.as_bytes()),
                    first.map(|i| format!("v{i}")).as_deref(),
                    "{keys:?} on {input:?}"
                );
            }
        }
    }
    outcomes.assert_both_common();
}

fn random_range_text(rng: &mut Rng) -> String {
    let mut n = || match rng.below(10) {
        0 => i64::MAX.to_string(),
        1 => "-7".to_string(),
        _ => (rng.below(40) as i64 - 5).to_string().replace('-', ""),
    };
    let (a, b) = (n(), n());
    let text = match rng.below(5) {
        0 => a,
        1 => format!("{a}:{b}"),
        2 => format!(":{b}"),
        3 => format!("{a}:"),
        _ => format!(":-{b}"),
    };
    text
}

#[test]
fn integer_and_length_sets_agree_with_a_linear_scan() {
    let mut rng = Rng(4);
    let mut outcomes = Outcomes::default();
    for round in 0..300 {
        let method = if round % 2 == 0 { Method::Int } else { Method::Len };
        let mut ranges: Vec<IntRange> = Vec::new();
        let mut texts = Vec::new();
        let mut b = PatternSet::builder(method, false);
        for _ in 0..rng.below(12) {
            let t = random_range_text(&mut rng);
            if let Ok(r) = parse_range(&t) {
                b.add(&t).expect("parsed above");
                ranges.push(r);
                texts.push(t);
            }
        }
        let set = b.build();
        let text: String = texts.iter().enumerate().map(|(i, k)| format!("{k} v{i}\n")).collect();
        let map = Map::parse(Method::Int, &text).expect("already validated");
        for _ in 0..100 {
            let v = match rng.below(8) {
                0 => i64::MAX,
                1 => i64::MIN,
                _ => rng.below(50) as i64 - 10,
            };
            if method == Method::Int {
                let first = ranges.iter().position(|r| r.contains(v));
                assert_eq!(set.match_int(v), first.is_some(), "{texts:?} on {v}");
                assert_eq!(map.lookup_int(v), first.map(|i| format!("v{i}")).as_deref());
                outcomes.record(first.is_some());
            } else {
                let len = v.unsigned_abs() % 40;
                let expected = ranges.iter().any(|r| {
                    let (lo, hi) = r.as_len_bounds();
                    lo <= len && len <= hi
                });
                let input = vec![b'x'; len as usize];
                assert_eq!(set.match_str(&input), expected, "{texts:?} on length {len}");
                assert_eq!(set.match_int(len as i64), expected);
                outcomes.record(expected);
            }
        }
    }
    outcomes.assert_both_common();
}

fn random_ip_pattern(rng: &mut Rng) -> String {
    let x = rng.below(3);
    let y = rng.below(4);
    match rng.below(6) {
        0 => format!("10.0.{x}.{y}"),
        1 => format!("10.0.{x}.{y}/{}", 20 + rng.below(13)),
        2 => format!(
            "10.0.{x}.0/255.255.{}.{}",
            [0, 255, 3][rng.below(3)],
            [0, 255, 252, 3][rng.below(4)]
        ),
        3 => format!("::ffff:10.0.{x}.{y}/{}", 110 + rng.below(19)),
        4 => format!("2001:db8::{x}:{y}/{}", 100 + rng.below(29)),
        _ => format!("{}/{}", ["0.0.0.0", "10.0.0.0", "::", "2002::"][rng.below(4)], rng.below(17)),
    }
}

fn random_ip(rng: &mut Rng) -> IpAddr {
    let (x, y) = (rng.below(3) as u8, rng.below(4) as u8);
    let v4 = Ipv4Addr::new(10, 0, x, y);
    match rng.below(6) {
        0 | 1 => IpAddr::V4(v4),
        2 => IpAddr::V6(v4.to_ipv6_mapped()),
        3 => IpAddr::V6(Ipv6Addr::from(u128::from(u32::from(v4)))),
        4 => IpAddr::V6(Ipv6Addr::from(0x2002_u128 << 112 | u128::from(u32::from(v4)) << 80)),
        _ => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, u16::from(x), u16::from(y))),
    }
}

/// `pat_match_ip` written as plain scans.
fn naive_ip_winner(patterns: &[IpPattern], ip: IpAddr) -> Option<usize> {
    let longest = |want_v4: bool, addr: IpAddr| {
        patterns
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match (*p, want_v4) {
                (IpPattern::V4 { mask, .. }, true)
                    if mask.leading_ones() + mask.trailing_zeros() >= 32 =>
                {
                    p.matches(addr).then_some((mask.leading_ones() as u8, i))
                }
                (IpPattern::V6 { prefix, .. }, false) => p.matches(addr).then_some((prefix, i)),
                _ => None,
            })
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|h| h.1)
    };
    let list = |addr: IpAddr| {
        patterns.iter().position(|p| {
            matches!(p, IpPattern::V4 { mask, .. } if mask.leading_ones() + mask.trailing_zeros() < 32)
                && p.matches(addr)
        })
    };
    match ip {
        IpAddr::V4(a) => longest(true, ip)
            .or_else(|| longest(false, IpAddr::V6(a.to_ipv6_mapped())))
            .or_else(|| list(ip)),
        IpAddr::V6(a) => longest(false, ip).or_else(|| {
            let v4 = IpAddr::V4(Ipv4Addr::from(v6_to_v4(u128::from(a))?));
            longest(true, v4).or_else(|| list(v4))
        }),
    }
}

#[test]
fn ip_sets_and_maps_agree_with_haproxy_lookup_order() {
    let mut rng = Rng(5);
    let mut outcomes = Outcomes::default();
    let mut by_tree_order = 0;
    for _ in 0..300 {
        let texts: Vec<String> = (0..rng.below(15)).map(|_| random_ip_pattern(&mut rng)).collect();
        let patterns: Vec<IpPattern> = texts
            .iter()
            .map(|t| parse_ip(t, false).expect("generated patterns are valid"))
            .collect();
        let mut b = PatternSet::builder(Method::Ip, false);
        for t in &texts {
            b.add(t).expect("valid");
        }
        let set = b.build();
        let text: String = texts.iter().enumerate().map(|(i, k)| format!("{k} v{i}\n")).collect();
        let map = Map::parse(Method::Ip, &text).expect("valid");
        for _ in 0..60 {
            let ip = random_ip(&mut rng);
            let expected = naive_ip_winner(&patterns, ip);
            assert_eq!(set.match_ip(ip), expected.is_some(), "{texts:?} on {ip}");
            assert_eq!(
                map.lookup_ip(ip),
                expected.map(|i| format!("v{i}")).as_deref(),
                "{texts:?} on {ip}"
            );
            outcomes.record(expected.is_some());
            let first_in_file = patterns.iter().position(|p| p.matches(ip));
            by_tree_order += usize::from(expected != first_in_file);
        }
    }
    outcomes.assert_both_common();
    assert!(by_tree_order > 100, "the tree order rarely differs from file order: {by_tree_order}");
}

#[test]
fn ten_thousand_patterns_build_and_match_for_every_method() {
    let n = 10_000;
    let word = |i: usize| format!("w{i:05}x");
    let build = |method: Method, values: &mut dyn Iterator<Item = String>| {
        let text: String = values.map(|v| v + "\n").collect();
        let mut b = PatternSet::builder(method, false);
        b.add_file(&text).expect("valid patterns");
        let set = b.build();
        assert_eq!(set.len(), n);
        set
    };
    let str_set = build(Method::Str, &mut (0..n).map(word));
    assert!(str_set.match_str(b"w04242x"));
    assert_eq!(str_set.first_match_str(b"w04242x"), Some(4242));
    assert!(!str_set.match_str(b"w04242"));
    let beg = build(Method::Beg, &mut (0..n).map(|i| format!("/{}/", word(i))));
    assert!(beg.match_str(b"/w09999x/index.html"));
    assert_eq!(beg.first_match_str(b"/w09999x/index.html"), Some(9999));
    assert!(!beg.match_str(b"/w10000x/"));
    let end = build(Method::End, &mut (0..n).map(|i| format!(".{}", word(i))));
    assert!(end.match_str(b"host.w00001x"));
    assert_eq!(end.first_match_str(b"host.w00001x"), Some(1));
    let sub = build(Method::Sub, &mut (0..n).map(word));
    assert!(sub.match_str(b"...w05000x..."));
    assert_eq!(sub.first_match_str(b"w07000x.w05000x"), Some(5000));
    assert!(!sub.match_str(b"...w5000x..."));
    let dom = build(Method::Dom, &mut (0..n).map(|i| format!("{}.com", word(i))));
    assert!(dom.match_str(b"www.w00777x.com:443"));
    assert_eq!(dom.first_match_str(b"www.w00777x.com:443"), Some(777));
    assert!(!dom.match_str(b"www.w00777x.co"));
    let dir = build(Method::Dir, &mut (0..n).map(word));
    assert!(dir.match_str(b"/a/w01234x/b"));
    assert_eq!(dir.first_match_str(b"/w04321x/w01234x/b"), Some(1234));
    let reg = build(Method::Reg, &mut (0..n).map(|i| format!("^/{}/[0-9]+$", word(i))));
    assert!(reg.match_str(b"/w00042x/123"));
    assert_eq!(reg.first_match_str(b"/w00042x/123"), Some(42));
    assert!(!reg.match_str(b"/w00042x/abc"));
    let int = build(Method::Int, &mut (0..n).map(|i| format!("{}:{}", i * 10, i * 10 + 3)));
    assert!(int.match_int(99_992));
    assert_eq!(int.first_match_int(99_992), Some(9999));
    assert!(!int.match_int(99_995));
    let ip = build(Method::Ip, &mut (0..n).map(|i| format!("10.{}.{}.0/24", i / 256, i % 256)));
    assert!(ip.match_ip(IpAddr::V4(Ipv4Addr::new(10, 39, 15, 200))));
    assert_eq!(ip.first_match_ip(IpAddr::V4(Ipv4Addr::new(10, 39, 15, 200))), Some(39 * 256 + 15));
    assert!(!ip.match_ip(IpAddr::V4(Ipv4Addr::new(10, 39, 16, 1))));
    let text: String = (0..n).map(|i| format!("{} backend{i}\n", word(i))).collect();
    let map = Map::parse(Method::Str, &text).expect("valid");
    assert_eq!(map.lookup(b"w09876x"), Some("backend9876"));
}

/// One pattern of a random set, as the naive reference reads it.
enum Reference {
    Text(String),
    Regex(Regex),
    Range(IntRange),
    Ip(IpPattern),
    Ignored,
}

/// A random pattern set and its patterns in insertion order.
struct Case {
    method: Method,
    fold: bool,
    texts: Vec<String>,
    refs: Vec<Reference>,
    set: PatternSet,
}

const ALL_METHODS: [Method; 12] = [
    Method::Str,
    Method::Beg,
    Method::End,
    Method::Sub,
    Method::Dom,
    Method::Dir,
    Method::Reg,
    Method::Len,
    Method::Int,
    Method::Ip,
    Method::Found,
    Method::Bool,
];

fn alphabet(method: Method) -> &'static [u8] {
    match method {
        Method::Dom | Method::Dir => b"aAb./?:",
        Method::Reg => b"aAb.*^$|",
        _ => b"aAbB",
    }
}

/// Up to `max` valid patterns of `method` with their references.
fn random_patterns(
    rng: &mut Rng,
    method: Method,
    fold: bool,
    max: usize,
) -> Vec<(String, Reference)> {
    let mut out = Vec::new();
    for _ in 0..rng.below(max + 1) {
        let text = match method {
            Method::Int | Method::Len => random_range_text(rng),
            Method::Ip => random_ip_pattern(rng),
            m => rng.string(alphabet(m), 5),
        };
        if text.is_empty() {
            continue;
        }
        let reference = match method {
            Method::Reg => match rx::compile(&text, fold) {
                Ok(re) => Reference::Regex(re),
                Err(_) => continue,
            },
            Method::Int | Method::Len => match parse_range(&text) {
                Ok(r) => Reference::Range(r),
                Err(_) => continue,
            },
            Method::Ip => {
                Reference::Ip(parse_ip(&text, true).expect("generated patterns are valid"))
            }
            Method::Found | Method::Bool => Reference::Ignored,
            _ => Reference::Text(text.clone()),
        };
        out.push((text, reference));
    }
    out
}

/// Builds a set from random patterns, added through a random mix of `add`, `add_words` and
/// `add_file`, checking that every pattern takes the next index.
fn random_case(rng: &mut Rng, method: Method, fold: bool, max: usize) -> Case {
    let (texts, refs): (Vec<String>, Vec<Reference>) =
        random_patterns(rng, method, fold, max).into_iter().unzip();
    let mut b = PatternSet::builder(method, fold);
    let mut added = 0;
    while added < texts.len() {
        let chunk = &texts[added..texts.len().min(added + 1 + rng.below(4))];
        match rng.below(3) {
            0 => chunk.iter().for_each(|t| b.add(t).expect("valid")),
            1 => b.add_words(&chunk.iter().map(String::as_str).collect::<Vec<_>>()).expect("valid"),
            _ => b.add_file(&chunk.join("\n")).expect("valid"),
        }
        added += chunk.len();
        assert_eq!(b.len(), added, "{method} {chunk:?}");
    }
    Case { method, fold, texts, refs, set: b.build() }
}

fn in_len_bounds(r: &IntRange, len: u64) -> bool {
    let (lo, hi) = r.as_len_bounds();
    lo <= len && len <= hi
}

/// Which patterns match a string sample, in insertion order.
fn naive_str(case: &Case, s: &[u8]) -> Vec<usize> {
    let hit = |r: &Reference| match r {
        Reference::Text(p) => naive_one(case.method, p, s, case.fold),
        Reference::Regex(re) => re.is_match(s),
        Reference::Range(r) => case.method == Method::Len && in_len_bounds(r, s.len() as u64),
        Reference::Ip(_) | Reference::Ignored => false,
    };
    case.refs.iter().enumerate().filter(|(_, r)| hit(r)).map(|(i, _)| i).collect()
}

fn naive_int(case: &Case, v: i64) -> Vec<usize> {
    let hit = |r: &Reference| match r {
        Reference::Range(r) if case.method == Method::Int => r.contains(v),
        Reference::Range(r) => in_len_bounds(r, v as u64),
        _ => false,
    };
    case.refs.iter().enumerate().filter(|(_, r)| hit(r)).map(|(i, _)| i).collect()
}

fn naive_ip(case: &Case, ip: IpAddr) -> Vec<usize> {
    let hit = |r: &Reference| matches!(r, Reference::Ip(p) if p.matches(ip));
    case.refs.iter().enumerate().filter(|(_, r)| hit(r)).map(|(i, _)| i).collect()
}

fn random_str_input(rng: &mut Rng, case: &Case) -> Vec<u8> {
    match case.method {
        // Exact strings rarely match a random input: pick a pattern, in a random case.
        Method::Str if !case.texts.is_empty() && rng.below(2) == 0 => {
            let t = case.texts[rng.below(case.texts.len())].as_bytes();
            t.iter().map(|&c| if rng.below(2) == 0 { c.to_ascii_uppercase() } else { c }).collect()
        }
        Method::Len => vec![b'x'; rng.below(40)],
        Method::Reg => rng.string(b"aAb", 8).into_bytes(),
        m => rng.string(alphabet(m), 12).into_bytes(),
    }
}

fn random_int(rng: &mut Rng) -> i64 {
    match rng.below(8) {
        0 => i64::MAX,
        1 => i64::MIN,
        _ => rng.below(50) as i64 - 10,
    }
}

/// Per method: inputs matching no pattern, one pattern, several patterns.
#[derive(Default, Debug)]
struct Spread {
    none: usize,
    one: usize,
    several: usize,
}

impl Spread {
    fn record(&mut self, hits: usize) {
        match hits {
            0 => self.none += 1,
            1 => self.one += 1,
            _ => self.several += 1,
        }
    }
}

#[test]
fn first_match_is_the_first_pattern_in_insertion_order_that_matches() {
    let mut rng = Rng(6);
    let mut spread: HashMap<Method, Spread> = HashMap::new();
    for round in 0..1200 {
        let method = ALL_METHODS[round % ALL_METHODS.len()];
        let fold = (round / ALL_METHODS.len()) % 2 == 1;
        // Most random regexes and ranges match most inputs: fewer of them keep misses common.
        let max = match method {
            Method::Reg => 6,
            Method::Int | Method::Len => 8,
            _ => 25,
        };
        let case = random_case(&mut rng, method, fold, max);
        let what = |input: &dyn std::fmt::Debug| {
            format!("{method} -i={fold} {:?} on {input:?}", case.texts)
        };
        for _ in 0..60 {
            let s = random_str_input(&mut rng, &case);
            let hits = naive_str(&case, &s);
            let ctx = || what(&String::from_utf8_lossy(&s));
            assert_eq!(case.set.first_match_str(&s), hits.first().copied(), "{}", ctx());
            if !matches!(method, Method::Int | Method::Ip) {
                spread.entry(method).or_default().record(hits.len());
            }

            let v = if method == Method::Len { rng.below(40) as i64 } else { random_int(&mut rng) };
            let hits = naive_int(&case, v);
            assert_eq!(case.set.first_match_int(v), hits.first().copied(), "{}", what(&v));
            if method == Method::Int {
                spread.entry(method).or_default().record(hits.len());
            }

            let ip = random_ip(&mut rng);
            let hits = naive_ip(&case, ip);
            assert_eq!(case.set.first_match_ip(ip), hits.first().copied(), "{}", what(&ip));
            if method == Method::Ip {
                spread.entry(method).or_default().record(hits.len());
            }
        }
    }
    for method in ALL_METHODS {
        let s = &spread[&method];
        if matches!(method, Method::Found | Method::Bool) {
            assert_eq!((s.one, s.several), (0, 0), "{method}");
            continue;
        }
        let total = s.none + s.one + s.several;
        assert!(
            s.none * 10 > total && s.one * 20 > total && s.several * 20 > total,
            "{method}: {s:?}"
        );
    }
}

#[test]
fn match_is_whether_first_match_finds_a_pattern() {
    let mut rng = Rng(7);
    let mut outcomes = Outcomes::default();
    for round in 0..600 {
        let method = ALL_METHODS[round % ALL_METHODS.len()];
        let fold = (round / ALL_METHODS.len()) % 2 == 1;
        let case = random_case(&mut rng, method, fold, 150);
        for _ in 0..100 {
            let s = random_str_input(&mut rng, &case);
            let first = case.set.first_match_str(&s);
            assert_eq!(case.set.match_str(&s), first.is_some(), "{method} {:?}", case.texts);
            if !matches!(method, Method::Found | Method::Bool | Method::Int | Method::Ip) {
                outcomes.record(first.is_some());
            }
            let v = random_int(&mut rng);
            assert_eq!(case.set.match_int(v), case.set.first_match_int(v).is_some());
            let ip = random_ip(&mut rng);
            assert_eq!(case.set.match_ip(ip), case.set.first_match_ip(ip).is_some());
        }
    }
    outcomes.assert_both_common();
}
