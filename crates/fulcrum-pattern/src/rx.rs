//! Regular expressions: compiling HAProxy regexes with `regex::bytes`, the `reg` index (one
//! `RegexSet`), the `regsub` converter and the regex replacement of the `replace-*` rules.
//!
//! Owns: regex flags (byte-oriented, no Unicode classes, like PCRE without UTF: `.` is any
//! byte but `\n`, `\w \d \s` are ASCII, `-i` folds ASCII), HAProxy's replacement syntax
//! (`exp_replace`), and the substitution loop of `regsub`.
//! Must not touch: log-format evaluation of replacement strings (the caller evaluates
//! `<replace-fmt>` and hands the result to [`Replace::replace`]).
//!
//! A regex the `regex` crate refuses (back-references, look-around, atomic groups, possessive
//! quantifiers...) is compiled with PCRE2, HAProxy's own engine (no UTF, JIT when available):
//! every regex HAProxy accepts is accepted. The others stay on `regex` (a DFA, and one
//! `RegexSet` for a whole `reg` list), whose differences from PCRE are: `$` does not match
//! before a final newline, and when `regsub` looks for the next match it searches the rest
//! of the input in place, so `^` does not match there (as with HAProxy's `REG_NOTBOL`) but
//! `\b` sees the byte before (PCRE, given the rest as a new subject, does not).
//!
//! Replacement syntax (`exp_replace`): `\0`..`\9` insert a capture group (`\0` is the whole
//! match; a group that did not take part, or does not exist, inserts nothing); `\xHH`
//! inserts a byte (HAProxy converts the two characters without checking them, and so does
//! this code); a backslash before any other character inserts that character; a lone
//! trailing backslash makes the replacement invalid.

use std::cell::RefCell;

use regex::bytes::{CaptureLocations, Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use crate::PatternError;

/// A compiled regex: on the `regex` crate, or on PCRE2 when only PCRE accepts it.
#[derive(Debug, Clone)]
pub enum Rx {
    Fast(Regex),
    Pcre(pcre2::bytes::Regex),
}

/// Capture group positions of a match (see [`Rx::captures_read_at`]).
pub enum Locs {
    Fast(CaptureLocations),
    Pcre(pcre2::bytes::CaptureLocations),
}

impl Locs {
    /// Group `n`'s start and end, if it took part in the match.
    pub fn get(&self, n: usize) -> Option<(usize, usize)> {
        match self {
            Locs::Fast(l) => l.get(n),
            Locs::Pcre(l) => l.get(n),
        }
    }
}

impl Rx {
    pub fn is_match(&self, input: &[u8]) -> bool {
        match self {
            Rx::Fast(r) => r.is_match(input),
            // A PCRE error at match time (a resource limit) counts as no match, as HAProxy's.
            Rx::Pcre(r) => r.is_match(input).unwrap_or(false),
        }
    }

    pub fn capture_locations(&self) -> Locs {
        match self {
            Rx::Fast(r) => Locs::Fast(r.capture_locations()),
            Rx::Pcre(r) => Locs::Pcre(r.capture_locations()),
        }
    }

    /// The groups of the first match in `input`, if any.
    pub fn captures(&self, input: &[u8]) -> Option<Locs> {
        let mut locs = self.capture_locations();
        self.captures_read_at(&mut locs, input, 0).then_some(locs)
    }

    /// Searches `input` from `start`; true when it matched (groups in `locs`).
    pub fn captures_read_at(&self, locs: &mut Locs, input: &[u8], start: usize) -> bool {
        match (self, locs) {
            (Rx::Fast(r), Locs::Fast(l)) => r.captures_read_at(l, input, start).is_some(),
            (Rx::Pcre(r), Locs::Pcre(l)) => {
                matches!(r.captures_read_at(l, input, start), Ok(Some(_)))
            }
            _ => false,
        }
    }
}

/// Compiles `pattern` as HAProxy would compile it with PCRE.
pub fn compile(pattern: &str, ignore_case: bool) -> Result<Rx, PatternError> {
    match RegexBuilder::new(pattern).unicode(false).case_insensitive(ignore_case).build() {
        Ok(r) => Ok(Rx::Fast(r)),
        Err(e) => pcre2::bytes::RegexBuilder::new()
            .caseless(ignore_case)
            .jit_if_available(true)
            .build(pattern)
            .map(Rx::Pcre)
            .map_err(|_| invalid(pattern, &e)),
    }
}

fn invalid(pattern: &str, e: &regex::Error) -> PatternError {
    let detail = match e {
        regex::Error::Syntax(s) => s.lines().last().unwrap_or("syntax error").trim().to_string(),
        other => other.to_string(),
    };
    PatternError::new(format!("regex '{pattern}' is invalid: {detail}"))
}

/// The `reg` method: all regexes in one `RegexSet`, searched in one pass. If the set is too
/// large to compile, the regexes are kept one by one and tried in order.
#[derive(Debug)]
pub(crate) enum RegexIndex {
    Set(RegexSet),
    List(Vec<Rx>),
}

thread_local! {
    static SET_HITS: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
}

impl RegexIndex {
    /// `compiled` are the regexes already validated one by one, in order.
    pub fn build(patterns: &[String], compiled: Vec<Rx>, ignore_case: bool) -> RegexIndex {
        let set = RegexSetBuilder::new(patterns)
            .unicode(false)
            .case_insensitive(ignore_case)
            .size_limit(256 << 20)
            .build();
        match set {
            Ok(set) => RegexIndex::Set(set),
            Err(_) => RegexIndex::List(compiled),
        }
    }

    pub fn any(&self, input: &[u8]) -> bool {
        match self {
            RegexIndex::Set(set) => set.is_match(input),
            RegexIndex::List(list) => list.iter().any(|r| r.is_match(input)),
        }
    }

    /// The first regex in order that matches `input`.
    pub fn first(&self, input: &[u8]) -> Option<u32> {
        match self {
            RegexIndex::Set(set) => SET_HITS.with(|hits| {
                let mut hits = hits.borrow_mut();
                hits.clear();
                hits.resize(set.len(), false);
                if !set.matches_read_at(&mut hits, input, 0) {
                    return None;
                }
                hits.iter().position(|&h| h).map(|i| i as u32)
            }),
            RegexIndex::List(list) => list.iter().position(|r| r.is_match(input)).map(|i| i as u32),
        }
    }
}

/// Whether `subst` is a complete replacement: no lone trailing backslash, and two
/// characters after every `\x`.
fn replacement_is_complete(subst: &[u8]) -> bool {
    let mut i = 0;
    while i < subst.len() {
        if subst[i] != b'\\' {
            i += 1;
            continue;
        }
        match subst.get(i + 1) {
            None => return false,
            Some(b'x') if i + 4 > subst.len() => return false,
            Some(b'x') => i += 4,
            Some(_) => i += 2,
        }
    }
    true
}

/// HAProxy's hexadecimal digit conversion in `exp_replace`, unchecked as it is there.
fn hex_value(c: u8) -> u8 {
    let d = c.to_ascii_uppercase().wrapping_sub(b'0');
    if d > 9 {
        d.wrapping_sub(b'A' - b'9' - 1)
    } else {
        d
    }
}

/// The `regsub(<regex>,<subst>[,<flags>])` converter.
#[derive(Debug)]
pub struct Regsub {
    regex: Rx,
    subst: Vec<u8>,
    global: bool,
}

impl Regsub {
    /// `flags` may contain `g` (replace every occurrence) and `i` (ignore case). A
    /// replacement ending in a lone backslash (or an incomplete `\x`) is refused here;
    /// HAProxy accepts it and then produces garbage at run time.
    pub fn new(regex: &str, subst: &str, flags: &str) -> Result<Regsub, PatternError> {
        let mut global = false;
        let mut icase = false;
        for c in flags.chars() {
            match c {
                'g' => global = true,
                'i' => icase = true,
                other => {
                    return Err(PatternError::new(format!(
                        "invalid regex flag '{other}', only 'i' and 'g' are supported"
                    )))
                }
            }
        }
        if !replacement_is_complete(subst.as_bytes()) {
            return Err(PatternError::new(format!(
                "replacement '{subst}' ends with an incomplete escape sequence"
            )));
        }
        Ok(Regsub { regex: compile(regex, icase)?, subst: subst.as_bytes().to_vec(), global })
    }

    /// Writes the substituted `input` into `out` (which is cleared first).
    ///
    /// The loop is HAProxy's: after a match the search restarts at its end, and `^` no
    /// longer matches there; an empty match copies the next byte and moves past it; without
    /// `g` only the first match is replaced. So `regsub('a*','-','g')` turns `baaac` into
    /// `-b--c-`.
    pub fn apply(&self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let mut locs = self.regex.capture_locations();
        let mut start = 0;
        let mut first = true;
        loop {
            let found = if self.global || first {
                self.regex.captures_read_at(&mut locs, input, start)
            } else {
                false
            };
            let Some((so, eo)) = found.then(|| locs.get(0)).flatten() else {
                out.extend_from_slice(&input[start..]);
                break;
            };
            out.extend_from_slice(&input[start..so]);
            self.expand_locs(input, &locs, out);
            if start >= input.len() {
                break;
            }
            let mut next = eo;
            if eo == start {
                out.push(input[start]);
                next += 1;
            }
            start = next;
            first = false;
        }
    }

    fn expand_locs(&self, input: &[u8], locs: &Locs, out: &mut Vec<u8>) {
        expand_with(&self.subst, |n| locs.get(n).map(|(s, e)| &input[s..e]), out);
    }
}

/// `exp_replace` over a capture accessor; returns `false` if `subst` is invalid.
fn expand_with<'h>(
    subst: &[u8],
    group: impl Fn(usize) -> Option<&'h [u8]>,
    out: &mut Vec<u8>,
) -> bool {
    let mut i = 0;
    while i < subst.len() {
        let c = subst[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&n) = subst.get(i + 1) else {
            return false;
        };
        if n.is_ascii_digit() {
            if let Some(m) = group(usize::from(n - b'0')) {
                out.extend_from_slice(m);
            }
            i += 2;
        } else if n == b'x' {
            let (Some(&h1), Some(&h2)) = (subst.get(i + 2), subst.get(i + 3)) else {
                return false;
            };
            out.push((hex_value(h1) << 4).wrapping_add(hex_value(h2)));
            i += 4;
        } else {
            out.push(n);
            i += 2;
        }
    }
    true
}

/// The regex of the `replace-header`, `replace-value`, `replace-uri`, `replace-path` and
/// `replace-pathq` rules.
///
/// HAProxy searches the regex anywhere in the value (it is not anchored) and, when it
/// matches, replaces the *whole* value with the expanded replacement: `replace-header
/// User-Agent curl foo` turns `curl/7.47.0` into `foo`. Without a match the value is left
/// alone. Matching is case-sensitive.
#[derive(Debug)]
pub struct Replace {
    regex: Rx,
}

impl Replace {
    pub fn new(regex: &str) -> Result<Replace, PatternError> {
        Ok(Replace { regex: compile(regex, false)? })
    }

    /// If the regex matches `input`, writes the expansion of `with` (the evaluated
    /// `<replace-fmt>`) into `out` (cleared first) and returns `true`; otherwise leaves `out`
    /// empty and returns `false`. A lone trailing backslash or an incomplete `\x` in `with`
    /// is dropped; use [`Replace::try_replace`] to fail the rule as HAProxy does.
    pub fn replace(&self, input: &[u8], with: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self.regex.captures(input) {
            Some(locs) => {
                expand_with(with, |n| locs.get(n).map(|(s, e)| &input[s..e]), out);
                true
            }
            None => false,
        }
    }

    /// Like [`Replace::replace`], but an invalid replacement is an error, as HAProxy makes
    /// the rule fail in that case.
    pub fn try_replace(
        &self,
        input: &[u8],
        with: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, PatternError> {
        out.clear();
        match self.regex.captures(input) {
            Some(locs) => {
                if expand_with(with, |n| locs.get(n).map(|(s, e)| &input[s..e]), out) {
                    Ok(true)
                } else {
                    out.clear();
                    Err(PatternError::new(format!(
                        "replacement '{}' ends with an incomplete escape sequence",
                        String::from_utf8_lossy(with)
                    )))
                }
            }
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(re: &str, subst: &str, flags: &str, input: &str) -> String {
        let r = Regsub::new(re, subst, flags).expect("valid regsub");
        let mut out = b"stale".to_vec();
        r.apply(input.as_bytes(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn regsub_matches_haproxy_on_empty_and_repeated_matches() {
        // Each expectation below was observed with HAProxy 2.6.12.
        assert_eq!(sub("a*", "-", "g", "baaac"), "-b--c-");
        assert_eq!(sub("a*", "-", "", "baaac"), "-baaac");
        assert_eq!(sub("x*", "-", "g", "baaac"), "-b-a-a-a-c-");
        assert_eq!(sub("a*", "-", "g", "abc"), "--b-c-");
        assert_eq!(sub("x*", "-", "g", "xbyz"), "--b-y-z-");
        assert_eq!(sub("(a)(b)?", "<\\2\\1\\0>", "g", "abc"), "<baab>c");
        assert_eq!(sub("(a)(b)?", "<\\2\\1\\0>", "g", "baaac"), "b<aa><aa><aa>c");
        assert_eq!(sub("A", "_", "gi", "baaac"), "b___c");
        assert_eq!(sub("^a", "_", "g", "aaa"), "_aa");
        assert_eq!(sub("/+", "/", "g", "/////a///b/c/xzxyz/"), "/a/b/c/xzxyz/");
        assert_eq!(sub("x*", "-", "g", ""), "-");
        assert_eq!(sub("q", "-", "g", "abc"), "abc");
    }

    #[test]
    fn replacement_escapes_follow_exp_replace() {
        assert_eq!(sub("b(.)", "[\\1\\x41\\\\q\\5]", "", "abc"), "a[cA\\q]");
        assert_eq!(sub("b", "\\xZZ", "", "b"), "S");
    }

    #[test]
    fn regsub_refuses_bad_flags_and_incomplete_escapes() {
        let e = Regsub::new("a", "b", "gx").err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("invalid regex flag 'x', only 'i' and 'g' are supported"));
        assert!(Regsub::new("a", "b\\", "").is_err());
        assert!(Regsub::new("a", "\\x4", "").is_err());
        assert!(Regsub::new("a(", "b", "").is_err());
    }

    #[test]
    fn replace_rewrites_the_whole_value_when_the_regex_is_found_anywhere() {
        let r = Replace::new("curl").expect("valid");
        let mut out = Vec::new();
        assert!(r.replace(b"curl/7.47.0", b"foo", &mut out));
        assert_eq!(out, b"foo");
        assert!(!r.replace(b"wget", b"foo", &mut out));
        assert!(out.is_empty());
        let r = Replace::new("foo=([^;]*);(.*)").expect("valid");
        assert!(r.replace(b"foo=foobar; expires=x", b"foo=\\1;ip=1.2.3.4;\\2", &mut out));
        assert_eq!(out, b"foo=foobar;ip=1.2.3.4; expires=x");
        let r = Replace::new("b(.)").expect("valid");
        assert!(r.replace(b"xbyz", b"[\\1\\x41\\\\q]", &mut out));
        assert_eq!(out, b"[yA\\q]");
    }

    #[test]
    fn replace_is_case_sensitive_and_reports_incomplete_replacements() {
        let r = Replace::new("CURL").expect("valid");
        let mut out = Vec::new();
        assert!(!r.replace(b"curl", b"x", &mut out));
        let r = Replace::new("(.*)").expect("valid");
        assert!(r.try_replace(b"/p", b"/foo\\1", &mut out).is_ok_and(|m| m));
        assert_eq!(out, b"/foo/p");
        assert!(r.try_replace(b"/p", b"bad\\", &mut out).is_err());
        assert!(r.replace(b"/p", b"bad\\", &mut out));
        assert_eq!(out, b"bad");
    }

    #[test]
    fn what_only_pcre_accepts_goes_to_pcre() {
        // Back-reference, look-ahead, look-behind, atomic group: HAProxy's PCRE2 takes them.
        let r = compile(r"^(\w+)-\1$", false).expect("valid");
        assert!(matches!(r, Rx::Pcre(_)));
        assert!(r.is_match(b"ab-ab") && !r.is_match(b"ab-ba"));
        assert!(compile("^/api(?!/v1)", false).is_ok_and(|r| r.is_match(b"/api/v2")));
        assert!(compile("(?<=id=)[0-9]+", true).is_ok_and(|r| r.is_match(b"ID=42")));
        assert!(compile("(?>a+)b", false).is_ok_and(|r| r.is_match(b"aab")));
        assert_eq!(sub("(?<=a)b", "X", "g", "abab cb"), "aXaX cb");
        assert!(matches!(compile("a+b", false), Ok(Rx::Fast(_))));
        assert!(compile("a(", false).is_err());
    }

    #[test]
    fn regexes_work_on_bytes_like_pcre_without_utf() {
        let r = compile("^a.c$", false).expect("valid");
        assert!(r.is_match(b"a\xffc"));
        assert!(compile("\\w+\\d", false).is_ok_and(|r| r.is_match(b"ab1")));
        assert!(compile("caf\u{e9}", false).is_ok_and(|r| r.is_match("café".as_bytes())));
    }
}
