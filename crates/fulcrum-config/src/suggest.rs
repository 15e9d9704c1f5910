//! HAProxy 2.6's guess at a mistyped keyword ("did you mean 'timeout' maybe ?"): every word
//! gets a fingerprint of the letter pairs it is made of (letters, digits and other bytes as 28
//! classes, with its start and end), and the known word whose fingerprint differs least is
//! offered, unless the difference is more than twice either word's length (`cfg_find_best_match`,
//! `make_word_fingerprint`, `word_fingerprint_distance` in HAProxy's sources). Ties go to the
//! first candidate, as HAProxy's lists go in their order.
//!
//! Owns: the guess and the lists of words guessed from. Must not touch: the messages' wording
//! (each parser writes its own, as HAProxy's do).

use crate::keywords::{Keyword, Status, BIND_OPTIONS, GLOBAL, PROXY, SERVER_OPTIONS};

/// Where a word was found unknown: the words known there.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// A keyword of the `global` section.
    Global,
    /// A keyword of a proxy section (`defaults`, `frontend`, `listen`, `backend`).
    Proxy,
    /// The name after `option`.
    Option,
    /// A `server` / `default-server` option.
    Server,
    /// A `bind` option.
    Bind,
}

/// The known word closest to `word` in `place`, if one is close enough.
pub fn best_match(word: &str, place: Place) -> Option<&'static str> {
    // Keywords HAProxy 2.6 removed are refused by name, never offered.
    let live = |k: &&Keyword| !matches!(k.status, Status::Obsolete(_));
    let first = |k: &Keyword| k.name.split(' ').next().unwrap_or(k.name);
    let sections: &[&'static str] = &["global", "defaults", "listen", "frontend", "backend"];
    let words: Vec<&'static str> = match place {
        Place::Global => {
            GLOBAL.iter().filter(live).map(first).chain(sections.iter().copied()).collect()
        }
        Place::Proxy => {
            PROXY.iter().filter(live).map(first).chain(sections[1..].iter().copied()).collect()
        }
        Place::Option => {
            PROXY.iter().filter(live).filter_map(|k| k.name.strip_prefix("option ")).collect()
        }
        Place::Server => SERVER_OPTIONS.iter().filter(live).map(|k| k.name).collect(),
        Place::Bind => BIND_OPTIONS.iter().filter(live).map(|k| k.name).collect(),
    };
    closest(word, words)
}

/// HAProxy's choice among `candidates` (in order).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let sig = fingerprint(word);
    let mut best: Option<(&str, usize)> = None;
    for c in candidates {
        let d = distance(&sig, &fingerprint(c));
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((c, d));
        }
    }
    let (found, d) = best?;
    (d <= 2 * word.len() && d <= 2 * found.len()).then_some(found)
}

/// Class of a byte: letters 1..=26 (either case), digits 27, anything else 28 (also the
/// word's start and end).
fn class(b: u8) -> usize {
    match b.to_ascii_lowercase() {
        c @ b'a'..=b'z' => usize::from(c - b'a') + 1,
        b'0'..=b'9' => 27,
        _ => 28,
    }
}

fn fingerprint(word: &str) -> [u8; 1024] {
    let mut fp = [0u8; 1024];
    let mut from = 28;
    for &b in word.as_bytes() {
        let to = class(b);
        fp[to] = 1;
        fp[32 * from + to] = fp[32 * from + to].wrapping_add(1);
        from = to;
    }
    fp[32 * from + 28] = fp[32 * from + 28].wrapping_add(1);
    fp
}

fn distance(a: &[u8; 1024], b: &[u8; 1024]) -> usize {
    a.iter().zip(b).map(|(&x, &y)| usize::from(x.abs_diff(y))).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HAProxy 2.6's own answers to these typos (checked with `haproxy -c`).
    #[test]
    fn haproxys_guesses() {
        assert_eq!(best_match("timout", Place::Proxy), Some("timeout"));
        assert_eq!(best_match("default_backnd", Place::Proxy), Some("default_backend"));
        assert_eq!(best_match("htplog", Place::Option), Some("httplog"));
        assert_eq!(best_match("chek", Place::Server), Some("check"));
        assert_eq!(best_match("maxcon", Place::Global), Some("maxconn"));
        assert_eq!(best_match("backnd", Place::Proxy), Some("backend"));
        // Nothing close enough: no guess.
        assert_eq!(best_match("zzzzzzzzzzzz", Place::Proxy), None);
    }

    #[test]
    fn the_distance_counts_pairs_and_classes() {
        assert_eq!(distance(&fingerprint("check"), &fingerprint("check")), 0);
        assert_eq!(distance(&fingerprint("Check"), &fingerprint("check")), 0);
        // A digit is a digit: only the class matters.
        assert_eq!(distance(&fingerprint("a1"), &fingerprint("a7")), 0);
        assert!(distance(&fingerprint("chek"), &fingerprint("check")) > 0);
    }
}
