//! Pattern sets (the values of one ACL expression) and maps: turning values as written into
//! the per-method index, and the lookups.
//!
//! Owns: which value syntax each method takes, the "which entry wins" rule of maps, and the
//! dispatch from a sample kind (string, integer, address) to the index.
//! Must not touch: the index structures themselves (in `table`, `trie`, `word`, `rx`, `int`,
//! `ip`) and file line splitting (in `text`).
//!
//! Which map entry wins when several keys match (HAProxy 2.6, checked against the binary):
//! - `str`: the exact key; with duplicate keys the first line wins.
//! - `beg`: the longest matching prefix; with duplicates the first line wins.
//! - `ip`: see the `ip` module (longest prefix within IPv4 and IPv6 trees, then the
//!   non-contiguous masks in order); with duplicates the first line wins.
//! - `end`, `sub`, `dom`, `dir`, `reg`, `int`: HAProxy keeps these in a list, so the first
//!   matching line wins, whatever the length of the match.
//!
//! Which pattern of a set matches first ([`PatternSet::first_match_str`] and friends): the
//! lowest index among all matching patterns, for every method (so for `beg` and `ip` it is
//! not the map winner). Indexes are the insertion order of the values, duplicates included.
//!
//! Empty values: HAProxy cannot hold an empty pattern (an empty word ends the ACL's value
//! list, empty file lines are skipped), so an empty value is ignored here.

use std::net::IpAddr;

use aho_corasick::AhoCorasick;

use crate::int::{self, IntRange, RangeIndex};
use crate::ip::{self, IpIndex, IpPattern};
use crate::rx::{self, RegexIndex, Rx};
use crate::table::BytesTable;
use crate::text;
use crate::trie::Trie;
use crate::word::{Delims, WordIndex};
use crate::{Method, PatternError};

/// Values parsed but not indexed yet.
#[derive(Debug, Default)]
struct Values {
    strings: Vec<String>,
    regexes: Vec<Rx>,
    ranges: Vec<IntRange>,
    ips: Vec<IpPattern>,
    /// `bin` patterns, decoded.
    bins: Vec<Vec<u8>>,
    ignored: usize,
}

/// A `bin` pattern: hexadecimal digits, two per byte (HAProxy's words when it is not).
fn parse_hex(value: &str) -> Result<Vec<u8>, PatternError> {
    if !value.len().is_multiple_of(2) {
        return Err(PatternError::new("an even number of hex digit is expected"));
    }
    let digit = |c: u8| {
        (c as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
            PatternError::new(format!("an hex digit is expected (found '{}')", c as char))
        })
    };
    value.as_bytes().chunks(2).map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

impl Values {
    fn push(
        &mut self,
        method: Method,
        value: &str,
        ignore_case: bool,
        resolve: bool,
    ) -> Result<(), PatternError> {
        match method {
            Method::Int | Method::Len => self.ranges.push(int::parse_range(value)?),
            Method::Ip => self.ips.push(ip::parse_ip(value, resolve)?),
            Method::Reg => {
                self.regexes.push(rx::compile(value, ignore_case)?);
                self.strings.push(value.to_string());
            }
            Method::Str | Method::Beg | Method::End | Method::Sub | Method::Dom | Method::Dir => {
                self.strings.push(value.to_string())
            }
            Method::Bin => {
                self.bins.push(parse_hex(value)?);
                self.strings.push(value.to_string());
            }
            Method::Found | Method::Bool => self.ignored += 1,
        }
        Ok(())
    }

    fn len(&self, method: Method) -> usize {
        match method {
            Method::Int | Method::Len => self.ranges.len(),
            Method::Ip => self.ips.len(),
            Method::Found | Method::Bool => self.ignored,
            _ => self.strings.len(),
        }
    }

    fn index(self, method: Method, ignore_case: bool) -> Index {
        let strings = || self.strings.iter().enumerate().map(|(i, s)| (i as u32, s.as_bytes()));
        match method {
            Method::Str => Index::Str(BytesTable::build(strings(), ignore_case)),
            Method::Beg => Index::Beg(Trie::build(strings(), ignore_case, false)),
            Method::End => Index::End(Trie::build(strings(), ignore_case, true)),
            Method::Sub => Index::Sub(SubIndex::build(&self.strings, ignore_case)),
            Method::Dom => Index::Word(WordIndex::build(Delims::Dom, strings(), ignore_case)),
            Method::Dir => Index::Word(WordIndex::build(Delims::Dir, strings(), ignore_case)),
            Method::Reg => Index::Reg(RegexIndex::build(&self.strings, self.regexes, ignore_case)),
            Method::Int => {
                let bounds: Vec<(i64, i64)> = self
                    .ranges
                    .iter()
                    .map(|r| (r.min.unwrap_or(i64::MIN), r.max.unwrap_or(i64::MAX)))
                    .collect();
                Index::Int(RangeIndex::build(&bounds))
            }
            Method::Len => {
                let bounds: Vec<(u64, u64)> =
                    self.ranges.iter().map(IntRange::as_len_bounds).collect();
                Index::Len(RangeIndex::build(&bounds))
            }
            Method::Ip => Index::Ip(IpIndex::build(&self.ips)),
            Method::Bin => Index::Str(BytesTable::build(
                self.bins.iter().enumerate().map(|(i, b)| (i as u32, b.as_slice())),
                false,
            )),
            Method::Found | Method::Bool => Index::Nothing,
        }
    }
}

/// `sub`: an Aho-Corasick automaton, or the plain list if the automaton cannot be built.
#[derive(Debug)]
enum SubIndex {
    Automaton(AhoCorasick),
    List(Vec<Vec<u8>>, bool),
}

impl SubIndex {
    fn build(patterns: &[String], fold: bool) -> SubIndex {
        match AhoCorasick::builder().ascii_case_insensitive(fold).build(patterns) {
            Ok(ac) => SubIndex::Automaton(ac),
            Err(_) => {
                SubIndex::List(patterns.iter().map(|p| p.as_bytes().to_vec()).collect(), fold)
            }
        }
    }

    fn contains(hay: &[u8], needle: &[u8], fold: bool) -> bool {
        needle.is_empty()
            || hay.windows(needle.len()).any(|w| {
                if fold {
                    w.eq_ignore_ascii_case(needle)
                } else {
                    w == needle
                }
            })
    }

    fn any(&self, input: &[u8]) -> bool {
        match self {
            SubIndex::Automaton(ac) => ac.is_match(input),
            SubIndex::List(list, fold) => list.iter().any(|p| Self::contains(input, p, *fold)),
        }
    }

    /// The lowest index among the patterns found anywhere in `input`. The automaton's
    /// leftmost match is not necessarily the lowest index, so every (overlapping) match is
    /// looked at.
    fn first(&self, input: &[u8]) -> Option<u32> {
        match self {
            SubIndex::Automaton(ac) => {
                let mut best: Option<u32> = None;
                for m in ac.find_overlapping_iter(input) {
                    let id = m.pattern().as_u32();
                    if best.is_none_or_greater(id) {
                        best = Some(id);
                        if id == 0 {
                            break;
                        }
                    }
                }
                best
            }
            SubIndex::List(list, fold) => {
                list.iter().position(|p| Self::contains(input, p, *fold)).map(|i| i as u32)
            }
        }
    }
}

trait MinSlot {
    fn is_none_or_greater(&self, v: u32) -> bool;
}

impl MinSlot for Option<u32> {
    fn is_none_or_greater(&self, v: u32) -> bool {
        match self {
            Some(b) => *b > v,
            None => true,
        }
    }
}

#[derive(Debug)]
enum Index {
    Nothing,
    Str(BytesTable),
    Beg(Trie),
    End(Trie),
    Sub(SubIndex),
    Word(WordIndex),
    Reg(RegexIndex),
    Int(RangeIndex<i64>),
    Len(RangeIndex<u64>),
    Ip(IpIndex),
}

impl Index {
    /// Whether any pattern matches the string sample.
    fn any_str(&self, s: &[u8]) -> bool {
        match self {
            Index::Str(t) => t.get(s).is_some(),
            Index::Beg(t) | Index::End(t) => {
                let mut hit = false;
                t.walk(s, |_| {
                    hit = true;
                    true
                });
                hit
            }
            Index::Sub(sub) => sub.any(s),
            Index::Word(w) => {
                let mut hit = false;
                w.visit(s, |_| {
                    hit = true;
                    true
                });
                hit
            }
            Index::Reg(r) => r.any(s),
            Index::Len(r) => r.find(s.len() as u64).is_some(),
            Index::Nothing | Index::Int(_) | Index::Ip(_) => false,
        }
    }

    /// The winning entry for a string sample, by HAProxy's map rules: the longest prefix
    /// for `beg`, the lowest index for the others.
    fn first_str(&self, s: &[u8]) -> Option<u32> {
        match self {
            Index::Beg(t) => {
                let mut longest = None;
                t.walk(s, |i| {
                    longest = Some(i);
                    false
                });
                longest
            }
            _ => self.lowest_str(s),
        }
    }

    /// The lowest entry index among the patterns matching a string sample.
    fn lowest_str(&self, s: &[u8]) -> Option<u32> {
        match self {
            Index::Str(t) => t.get(s),
            Index::Beg(t) | Index::End(t) => {
                let mut first: Option<u32> = None;
                t.walk(s, |i| {
                    if first.is_none_or_greater(i) {
                        first = Some(i);
                    }
                    i == 0
                });
                first
            }
            Index::Sub(sub) => sub.first(s),
            Index::Word(w) => {
                let mut first: Option<u32> = None;
                w.visit(s, |i| {
                    if first.is_none_or_greater(i) {
                        first = Some(i);
                    }
                    i == 0
                });
                first
            }
            Index::Reg(r) => r.first(s),
            Index::Len(r) => r.find(s.len() as u64),
            Index::Nothing | Index::Int(_) | Index::Ip(_) => None,
        }
    }

    /// The lowest entry index among the ranges containing `v` (which is also the map
    /// winner).
    fn first_int(&self, v: i64) -> Option<u32> {
        match self {
            Index::Int(r) => r.find(v),
            Index::Len(r) => r.find(v as u64),
            _ => None,
        }
    }

    /// The winning entry for an address, by HAProxy's map rules.
    fn first_ip(&self, addr: IpAddr) -> Option<u32> {
        match self {
            Index::Ip(i) => i.find(addr),
            _ => None,
        }
    }

    /// The lowest entry index among the patterns matching an address.
    fn lowest_ip(&self, addr: IpAddr) -> Option<u32> {
        match self {
            Index::Ip(i) => i.lowest(addr),
            _ => None,
        }
    }
}

/// The values of one ACL expression, indexed for one matching method.
#[derive(Debug)]
pub struct PatternSet {
    method: Method,
    ignore_case: bool,
    len: usize,
    index: Index,
}

/// Collects the values of a [`PatternSet`]; each value is checked as it is added, so errors
/// point at the value (and file line) that HAProxy would refuse.
#[derive(Debug)]
pub struct PatternSetBuilder {
    method: Method,
    ignore_case: bool,
    resolve: bool,
    values: Values,
}

impl PatternSet {
    /// `ignore_case` is the ACL's `-i`: ASCII case-insensitive matching for the string
    /// methods and `reg`; other methods ignore it.
    pub fn builder(method: Method, ignore_case: bool) -> PatternSetBuilder {
        PatternSetBuilder { method, ignore_case, resolve: true, values: Values::default() }
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn ignore_case(&self) -> bool {
        self.ignore_case
    }

    /// Number of values added (duplicates included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// No value was added: such an ACL never matches (except `found` and `bool`, which the
    /// caller decides without patterns).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Matches a string (or binary) sample: `str`, `beg`, `end`, `sub`, `reg`, `dom`, `dir`,
    /// and `len` on the sample's length. Other methods answer `false`.
    pub fn match_str(&self, s: &[u8]) -> bool {
        self.index.any_str(s)
    }

    /// Matches an integer sample: `int`, and `len` when the caller already has the length.
    /// Other methods answer `false`.
    pub fn match_int(&self, v: i64) -> bool {
        self.index.first_int(v).is_some()
    }

    /// Matches an address sample (`ip`), mapping between IPv4 and IPv6 as HAProxy does.
    /// Other methods answer `false`.
    pub fn match_ip(&self, ip: IpAddr) -> bool {
        self.index.first_ip(ip).is_some()
    }

    /// The lowest index (insertion order, see [`PatternSetBuilder::len`]) among the
    /// patterns matching a string sample: `str`, `beg`, `end`, `sub`, `reg`, `dom`, `dir`,
    /// and `len` on the sample's length; `None` when none matches or for other methods.
    ///
    /// This is "which rule matches first" when the set holds the patterns of consecutive
    /// rules in order, not a map lookup: with `beg` patterns `/a` (0) and `/api` (1),
    /// `/api/x` gives 0. `Some` exactly when [`PatternSet::match_str`] is `true`.
    pub fn first_match_str(&self, s: &[u8]) -> Option<usize> {
        self.index.lowest_str(s).map(|i| i as usize)
    }

    /// The lowest index among the patterns matching an integer sample (`int`, and `len` on
    /// a length the caller already has); `None` when none matches or for other methods.
    /// `Some` exactly when [`PatternSet::match_int`] is `true`.
    pub fn first_match_int(&self, v: i64) -> Option<usize> {
        self.index.first_int(v).map(|i| i as usize)
    }

    /// The lowest index among the patterns matching an address sample (`ip`), with the
    /// IPv4/IPv6 mapping of [`PatternSet::match_ip`], whatever the prefix lengths (this is
    /// not HAProxy's longest-prefix map winner); `None` when none matches or for other
    /// methods. `Some` exactly when [`PatternSet::match_ip`] is `true`.
    pub fn first_match_ip(&self, ip: IpAddr) -> Option<usize> {
        self.index.lowest_ip(ip).map(|i| i as usize)
    }

    /// The first pattern matching a sample given as text, cast as the method wants (an
    /// address for `ip`, a number for `int`, a length for `len`): the runtime API's `get acl`.
    pub fn first_match_text(&self, sample: &str) -> Option<usize> {
        match self.method() {
            Method::Ip => self.first_match_ip(sample.parse().ok()?),
            Method::Int => self.first_match_int(sample.parse().ok()?),
            Method::Len => self.first_match_int(sample.len() as i64),
            _ => self.first_match_str(sample.as_bytes()),
        }
    }
}

impl PatternSetBuilder {
    /// HAProxy's `-n`: refuse IP patterns that would need a name resolution. Without it,
    /// the abbreviated IPv4 forms (`127.1`, `10.12/8`) are accepted as `gethostbyname` reads
    /// them; real host names are always refused (this library does no DNS).
    pub fn forbid_dns(&mut self, forbid: bool) -> &mut Self {
        self.resolve = !forbid;
        self
    }

    /// Number of patterns added so far, duplicates included. The next pattern added gets
    /// this number as its index in the `first_match_*` answers: indexes are `0..` in
    /// insertion order across [`add`](Self::add), [`add_words`](Self::add_words) (one per
    /// value word, operator words excluded) and [`add_file`](Self::add_file) (one per
    /// pattern line). Empty values and values refused with an error take no index.
    pub fn len(&self) -> usize {
        self.values.len(self.method)
    }

    /// No pattern was added yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds one value as written in the configuration (for `int`/`len`: `10`, `10:20`,
    /// `:20`, `10:`, `10-20`). An empty value is ignored.
    pub fn add(&mut self, pattern: &str) -> Result<(), PatternError> {
        if pattern.is_empty() {
            return Ok(());
        }
        self.values.push(self.method, pattern, self.ignore_case, self.resolve)
    }

    /// Adds the value words of an ACL line, in order. For `int` and `len` the operator
    /// words `eq ge gt le lt` (and `ne`, which HAProxy accepts and treats like `eq`) apply
    /// to the values that follow, as in `gt 5 7 eq 9`; see the `int` module for the exact
    /// rewriting. As in HAProxy, an empty word ends the list.
    pub fn add_words(&mut self, words: &[&str]) -> Result<(), PatternError> {
        let mut op = int::Operator::Eq;
        for &w in words {
            if w.is_empty() {
                break;
            }
            if self.method.takes_integers() {
                if let Some(o) = int::operator(w) {
                    op = o;
                    continue;
                }
                let value = int::apply_operator(op, w)?;
                self.add(&value)?;
            } else {
                self.add(w)?;
            }
        }
        Ok(())
    }

    /// Adds the values of a `-f` file (see the `text` module for the line rules: `#` in the
    /// first column starts a comment, leading blanks are stripped, trailing blanks are part
    /// of the value). The error carries the 1-based line number.
    pub fn add_file(&mut self, text: &str) -> Result<(), (usize, PatternError)> {
        for (line, value) in text::pattern_lines(text) {
            self.add(value).map_err(|e| (line, e))?;
        }
        Ok(())
    }

    pub fn build(self) -> PatternSet {
        let len = self.len();
        PatternSet {
            method: self.method,
            ignore_case: self.ignore_case,
            len,
            index: self.values.index(self.method, self.ignore_case),
        }
    }
}

/// A map file (`map_<match>` converters and `-M` ACLs): keys indexed for one method, each
/// with its value as text. Maps are case-sensitive, as in HAProxy.
#[derive(Debug)]
pub struct Map {
    method: Method,
    index: Index,
    values: Vec<String>,
    /// A `reg` map's regexes one by one (`map_regm` needs the matching one's groups).
    regs: Vec<Rx>,
}

impl Map {
    /// Parses map file contents (see the `text` module for the line rules). `method` is
    /// one of `str`, `beg`, `end`, `sub`, `dom`, `dir`, `reg`, `ip`, `int`. Errors carry the
    /// 1-based line number, or 0 for an unusable method.
    pub fn parse(method: Method, text: &str) -> Result<Map, (usize, PatternError)> {
        if matches!(method, Method::Len | Method::Found | Method::Bool) {
            return Err((
                0,
                PatternError::new(format!("match method '{method}' cannot be used with a map")),
            ));
        }
        let mut keys = Values::default();
        let mut values = Vec::new();
        for (line, key, value) in text::map_lines(text) {
            keys.push(method, key, false, false).map_err(|e| (line, e))?;
            values.push(value.to_string());
        }
        let regs = if method == Method::Reg { keys.regexes.clone() } else { Vec::new() };
        Ok(Map { method, index: keys.index(method, false), values, regs })
    }

    pub fn method(&self) -> Method {
        self.method
    }

    /// Looks up a string sample (`str`, `beg`, `end`, `sub`, `dom`, `dir`, `reg` maps). On
    /// `ip` and `int` maps this answers `None`: cast the sample and use
    /// [`Map::lookup_ip`] / [`Map::lookup_int`].
    pub fn lookup(&self, key: &[u8]) -> Option<&str> {
        self.index.first_str(key).map(|i| self.values[i as usize].as_str())
    }

    /// `map_regm`: the value of the first regex that matches, its `\1`..`\9` replaced by
    /// the groups the regex captured (HAProxy's `exp_replace`: `\xHH` is a byte, any other
    /// escaped character stands for itself).
    pub fn lookup_regm(&self, key: &[u8]) -> Option<Vec<u8>> {
        let i = self.index.first_str(key)? as usize;
        let value = self.values[i].as_bytes();
        let caps = self.regs.get(i).and_then(|r| r.captures(key));
        let mut out = Vec::with_capacity(value.len() + key.len());
        let mut j = 0;
        while j < value.len() {
            let c = value[j];
            let next = value.get(j + 1).copied();
            match (c, next) {
                (b'\\', Some(d @ b'0'..=b'9')) => {
                    let g = caps.as_ref().and_then(|c| c.get(usize::from(d - b'0')));
                    out.extend_from_slice(g.map_or(&b""[..], |(s, e)| &key[s..e]));
                    j += 2;
                }
                (b'\\', Some(b'x')) if value.len() >= j + 4 => {
                    let hex = std::str::from_utf8(&value[j + 2..j + 4]).ok();
                    match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        Some(b) => out.push(b),
                        None => out.extend_from_slice(&value[j..j + 4]),
                    }
                    j += 4;
                }
                (b'\\', Some(o)) => {
                    out.push(o);
                    j += 2;
                }
                _ => {
                    out.push(c);
                    j += 1;
                }
            }
        }
        Some(out)
    }

    pub fn lookup_ip(&self, ip: IpAddr) -> Option<&str> {
        self.index.first_ip(ip).map(|i| self.values[i as usize].as_str())
    }

    pub fn lookup_int(&self, v: i64) -> Option<&str> {
        self.index.first_int(v).map(|i| self.values[i as usize].as_str())
    }

    /// The entry a sample given as text finds, cast as the method wants: the runtime API's
    /// `get map`.
    pub fn find_text(&self, sample: &str) -> Option<usize> {
        let i = match self.method {
            Method::Ip => self.index.first_ip(sample.parse().ok()?),
            Method::Int => self.index.first_int(sample.parse().ok()?),
            _ => self.index.first_str(sample.as_bytes()),
        };
        i.map(|i| i as usize)
    }

    /// Number of entries (duplicates included).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn set(method: Method, icase: bool, words: &[&str]) -> PatternSet {
        let mut b = PatternSet::builder(method, icase);
        b.add_words(words).expect("valid words");
        b.build()
    }

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    #[test]
    fn pattern_sets_and_maps_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<PatternSet>();
        shared::<Map>();
        shared::<crate::Regsub>();
        shared::<crate::Replace>();
    }

    #[test]
    fn operators_apply_to_the_values_that_follow_them() {
        let s = set(Method::Int, false, &["gt", "5", "7", "eq", "9"]);
        assert!(!s.match_int(5));
        assert!(s.match_int(6));
        assert!(s.match_int(1000));
        let s = set(Method::Int, false, &["lt", "0"]);
        assert!(s.match_int(-1) && !s.match_int(0));
    }

    #[test]
    fn haproxy_operator_quirks_are_kept() {
        // "ne" is accepted and means equality; "lt -5" is the range ":5"; "gt 5:6" is 5..6.
        let ne = set(Method::Int, false, &["ne", "5"]);
        assert!(ne.match_int(5) && !ne.match_int(4));
        let lt = set(Method::Int, false, &["lt", "-5"]);
        assert!(lt.match_int(5) && lt.match_int(-3) && !lt.match_int(6));
        let gt = set(Method::Int, false, &["gt", "5:6"]);
        assert!(gt.match_int(5) && gt.match_int(6) && !gt.match_int(7));
    }

    #[test]
    fn an_empty_word_ends_the_value_list_and_empty_values_are_ignored() {
        let s = set(Method::Str, false, &["a", "", "b"]);
        assert!(s.match_str(b"a") && !s.match_str(b"b") && !s.match_str(b""));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn len_lt_0_matches_every_length_like_haproxy() {
        let s = set(Method::Len, false, &["lt", "0"]);
        assert!(s.match_str(b"") && s.match_str(b"abc"));
        let s = set(Method::Len, false, &["3:4"]);
        assert!(s.match_str(b"abc") && s.match_str(b"abcd") && !s.match_str(b"ab"));
    }

    #[test]
    fn ignore_case_folds_ascii_for_every_string_method_and_regexes() {
        assert!(set(Method::Str, true, &["ABC"]).match_str(b"aBc"));
        assert!(!set(Method::Str, false, &["ABC"]).match_str(b"aBc"));
        assert!(set(Method::Beg, true, &["/API"]).match_str(b"/api/v1"));
        assert!(set(Method::End, true, &[".PNG"]).match_str(b"x.png"));
        assert!(set(Method::Sub, true, &["CURL"]).match_str(b"my curl/7"));
        assert!(set(Method::Dom, true, &["WWW."]).match_str(b"x.www.y"));
        assert!(set(Method::Dir, true, &["IMG"]).match_str(b"/a/img/b"));
        assert!(set(Method::Reg, true, &["^A.C$"]).match_str(b"abc"));
        assert!(!set(Method::Reg, false, &["^A.C$"]).match_str(b"abc"));
    }

    #[test]
    fn regexes_search_anywhere_in_the_sample() {
        let s = set(Method::Reg, false, &["b+"]);
        assert!(s.match_str(b"abbbc") && !s.match_str(b"ac"));
    }

    #[test]
    fn values_haproxy_refuses_are_reported_with_its_messages() {
        let err = |m: Method, v: &str| {
            let mut b = PatternSet::builder(m, false);
            b.add(v).err().map(|e| e.to_string())
        };
        assert_eq!(
            err(Method::Ip, "1.2.3.4/40").as_deref(),
            Some("'1.2.3.4/40' is not a valid IPv4 or IPv6 address")
        );
        assert_eq!(err(Method::Int, "1.5").as_deref(), Some("'1.5' is not a number"));
        assert!(err(Method::Reg, "a(").is_some_and(|e| e.starts_with("regex 'a(' is invalid")));
        assert_eq!(err(Method::Found, "anything"), None);
        let mut b = PatternSet::builder(Method::Int, false);
        let e = b.add_words(&["gt", &i64::MAX.to_string()]).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("'-9223372036854775808:' is not a valid number range"));
    }

    #[test]
    fn pattern_files_report_the_line_of_a_bad_value() {
        let mut b = PatternSet::builder(Method::Ip, false);
        let e = b.add_file("# list\n10.0.0.0/8\n\n  192.168.0.0/16\n10.0.0.1 \n");
        assert_eq!(
            e.map_err(|(line, e)| (line, e.to_string())),
            Err((5, "'10.0.0.1 ' is not a valid IPv4 or IPv6 address".into()))
        );
    }

    #[test]
    fn acl_ip_values_accept_abbreviated_forms_unless_dns_is_forbidden() {
        // As observed with HAProxy 2.6: "10/8" is 0.0.0.10/8, not 10.0.0.0/8.
        let s = set(Method::Ip, false, &["127.1", "10.12/8"]);
        assert!(s.match_ip(v4(127, 0, 0, 1)));
        assert!(s.match_ip(v4(10, 200, 0, 1)));
        let s = set(Method::Ip, false, &["10/8"]);
        assert!(s.match_ip(v4(0, 1, 2, 3)));
        assert!(!s.match_ip(v4(10, 9, 9, 9)));
        let mut b = PatternSet::builder(Method::Ip, false);
        b.forbid_dns(true);
        assert!(b.add("127.1").is_err());
    }

    #[test]
    fn an_ipv4_sample_matches_an_ipv4_mapped_ipv6_pattern() {
        let s = set(Method::Ip, false, &["::ffff:10.0.0.0/104"]);
        assert!(s.match_ip(v4(10, 2, 3, 4)));
        assert!(!s.match_ip(v4(11, 0, 0, 1)));
        let s = set(Method::Ip, false, &["10.0.0.0/8"]);
        assert!(s.match_ip(IpAddr::V6(Ipv6Addr::new(0x2002, 0x0a01, 0x0203, 0, 0, 0, 0, 0))));
        assert!(!s.match_ip(IpAddr::V6(Ipv6Addr::new(0x2001, 0x0a01, 0x0203, 0, 0, 0, 0, 0))));
    }

    #[test]
    fn found_and_bool_sets_take_values_but_never_match_themselves() {
        let s = set(Method::Found, false, &["x"]);
        assert!(!s.match_str(b"x") && !s.match_int(1));
        assert_eq!(s.method(), Method::Found);
    }

    #[test]
    fn first_match_is_the_lowest_index_not_the_longest_or_leftmost_match() {
        let beg = set(Method::Beg, false, &["/a", "/api"]);
        assert_eq!(beg.first_match_str(b"/api/x"), Some(0));
        assert_eq!(beg.first_match_str(b"/b"), None);
        let beg = set(Method::Beg, false, &["/api", "/a"]);
        assert_eq!(beg.first_match_str(b"/api/x"), Some(0));
        assert_eq!(beg.first_match_str(b"/ab"), Some(1));
        let end = set(Method::End, true, &[".PNG", "G"]);
        assert_eq!(end.first_match_str(b"x.png"), Some(0));
        assert_eq!(end.first_match_str(b"xg"), Some(1));
        let sub = set(Method::Sub, false, &["zz", "a", "ab"]);
        assert_eq!(sub.first_match_str(b"abzz"), Some(0));
        assert_eq!(sub.first_match_str(b"xab"), Some(1));
        let dom = set(Method::Dom, false, &["example.com", "com", "www"]);
        assert_eq!(dom.first_match_str(b"www.example.com"), Some(0));
        assert_eq!(dom.first_match_str(b"www.x.com"), Some(1));
        assert_eq!(dom.first_match_str(b"www.y"), Some(2));
        let dir = set(Method::Dir, true, &["B/C", "a"]);
        assert_eq!(dir.first_match_str(b"/a/b/c"), Some(0));
        assert_eq!(dir.first_match_str(b"/a/b"), Some(1));
        let reg = set(Method::Reg, false, &["b$", "^a"]);
        assert_eq!(reg.first_match_str(b"ab"), Some(0));
        assert_eq!(reg.first_match_str(b"ax"), Some(1));
        let exact = set(Method::Str, true, &["B", "a", "A"]);
        assert_eq!(exact.first_match_str(b"A"), Some(1));
        assert_eq!(exact.first_match_str(b"b"), Some(0));
        let len = set(Method::Len, false, &["5:", "3"]);
        assert_eq!(len.first_match_str(b"abc"), Some(1));
        assert_eq!(len.first_match_str(b"abcdef"), Some(0));
        assert_eq!(len.first_match_int(3), Some(1));
        assert_eq!(len.first_match_str(b"ab"), None);
        let int = set(Method::Int, false, &["7", "gt", "5", "eq", "9"]);
        assert_eq!(int.first_match_int(7), Some(0));
        assert_eq!(int.first_match_int(9), Some(1));
        assert_eq!(int.first_match_int(6), Some(1));
        assert_eq!(int.first_match_int(5), None);
        // HAProxy's map would pick the /32 (longest prefix); the first rule is the /8.
        let ip = set(Method::Ip, false, &["10.0.0.0/8", "10.1.2.3", "::ffff:10.1.2.0/120"]);
        assert_eq!(ip.first_match_ip(v4(10, 1, 2, 3)), Some(0));
        assert_eq!(
            ip.first_match_ip(IpAddr::V6(Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped())),
            Some(0)
        );
        assert_eq!(ip.first_match_ip(v4(11, 1, 2, 3)), None);
        // Other sample kinds never match.
        assert_eq!(ip.first_match_str(b"10.1.2.3"), None);
        assert_eq!(int.first_match_ip(v4(0, 0, 0, 7)), None);
        assert_eq!(beg.first_match_int(1), None);
    }

    #[test]
    fn indexes_follow_insertion_order_across_add_words_and_files() {
        let mut b = PatternSet::builder(Method::Int, false);
        assert!(b.is_empty());
        b.add_words(&["gt", "5", "7"]).expect("valid");
        assert_eq!(b.len(), 2);
        b.add("3").expect("valid");
        b.add("").expect("ignored");
        assert_eq!(b.len(), 3);
        b.add_file("# comment\n\n  100\n3\n").expect("valid");
        assert_eq!(b.len(), 5);
        assert!(b.add("x").is_err());
        assert_eq!(b.len(), 5);
        let s = b.build();
        assert_eq!(s.len(), 5);
        assert_eq!(s.first_match_int(3), Some(2));
        assert_eq!(s.first_match_int(7), Some(0));
        assert_eq!(s.first_match_int(4), None);

        let mut b = PatternSet::builder(Method::Str, false);
        b.add_file("dup\nother\n").expect("valid");
        b.add_words(&["x", "dup", "", "ignored"]).expect("valid");
        assert_eq!(b.len(), 4);
        let s = b.build();
        assert_eq!(s.first_match_str(b"dup"), Some(0));
        assert_eq!(s.first_match_str(b"x"), Some(2));
        assert_eq!(s.first_match_str(b"ignored"), None);

        let mut b = PatternSet::builder(Method::Found, false);
        b.add_words(&["a", "b"]).expect("valid");
        assert_eq!(b.len(), 2);
        assert_eq!(b.build().first_match_str(b"a"), None);
    }

    #[test]
    fn a_thousand_prefix_rules_resolve_to_the_first_rule_that_matches() {
        let mut b = PatternSet::builder(Method::Beg, false);
        for i in 0..1000 {
            b.add(&format!("/p{i}")).expect("valid");
        }
        let s = b.build();
        assert_eq!(s.first_match_str(b"/p17/x"), Some(1));
        assert_eq!(s.first_match_str(b"/p0"), Some(0));
        assert_eq!(s.first_match_str(b"/p999"), Some(9));
        assert_eq!(s.first_match_str(b"/q"), None);
        let mut b = PatternSet::builder(Method::Beg, false);
        for i in 0..1000 {
            b.add(&format!("/p{i}/")).expect("valid");
        }
        let s = b.build();
        assert_eq!(s.first_match_str(b"/p17/x"), Some(17));
        assert_eq!(s.first_match_str(b"/p999/"), Some(999));
        assert_eq!(s.first_match_str(b"/p1000/"), None);
    }

    #[test]
    fn maps_pick_entries_as_haproxy_2_6_does() {
        // Each expectation below was observed with HAProxy 2.6.12.
        let str_map = Map::parse(Method::Str, "a first\na second\nab third\n").expect("valid");
        assert_eq!(str_map.lookup(b"a"), Some("first"));
        assert_eq!(str_map.lookup(b"ab"), Some("third"));
        let beg = Map::parse(Method::Beg, "/a a1\n/ab ab\n/a a2\n/abc abc\n").expect("valid");
        assert_eq!(beg.lookup(b"/a"), Some("a1"));
        assert_eq!(beg.lookup(b"/abd"), Some("ab"));
        assert_eq!(beg.lookup(b"/abc"), Some("abc"));
        let end = Map::parse(Method::End, "b first\nab second\n").expect("valid");
        assert_eq!(end.lookup(b"xab"), Some("first"));
        let dom = Map::parse(Method::Dom, "com first\nexample.com second\n").expect("valid");
        assert_eq!(dom.lookup(b"www.example.com:80/x"), Some("first"));
        let reg = Map::parse(Method::Reg, "b.* first\na.* second\n").expect("valid");
        assert_eq!(reg.lookup(b"ab"), Some("first"));
        assert_eq!(reg.lookup(b"a"), Some("second"));
        let int = Map::parse(Method::Int, "10:20 range\n15 exact\n30- open\n").expect("valid");
        assert_eq!(int.lookup_int(15), Some("range"));
        assert_eq!(int.lookup_int(31), Some("open"));
        assert_eq!(int.lookup_int(-5), None);
        assert_eq!(int.lookup(b"15"), None);
        let ip = Map::parse(
            Method::Ip,
            "10.0.0.0/8 eight\n10.1.0.0/16 sixteen\n10.1.0.0/16 dup\n10.1.2.3 host\n::ffff:10.1.2.0/120 mapped\n",
        )
        .expect("valid");
        assert_eq!(ip.lookup_ip(v4(10, 1, 2, 3)), Some("host"));
        assert_eq!(ip.lookup_ip(v4(10, 1, 9, 9)), Some("sixteen"));
        assert_eq!(
            ip.lookup_ip(IpAddr::V6(Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped())),
            Some("mapped")
        );
    }

    #[test]
    fn map_regm_replaces_the_groups_of_the_matching_regex() {
        let m = Map::parse(Method::Reg, "^(.*)\\.(.*)$ \\1_AND_\\2\n^x(y)$ [\\x41\\1\\\\]\n")
            .expect("valid");
        assert_eq!(m.lookup_regm(b"www.example.org").as_deref(), Some(&b"www.example_AND_org"[..]));
        assert_eq!(m.lookup_regm(b"xy").as_deref(), Some(&b"[Ay\\]"[..]));
        assert_eq!(m.lookup_regm(b"nothing"), None);
    }

    #[test]
    fn map_values_are_the_rest_of_the_line_and_may_be_empty() {
        let m =
            Map::parse(Method::Str, "  spaced   value with  spaces  \t\nkeyonly\n").expect("valid");
        assert_eq!(m.lookup(b"spaced"), Some("value with  spaces"));
        assert_eq!(m.lookup(b"keyonly"), Some(""));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn maps_refuse_abbreviated_addresses_and_report_the_line() {
        let e = Map::parse(Method::Ip, "10.0.0.0/8 a\n127.1 b\n").err();
        assert_eq!(
            e.map(|(l, e)| (l, e.to_string())),
            Some((2, "'127.1' is not a valid IPv4 or IPv6 address".into()))
        );
        assert!(Map::parse(Method::Len, "1 a").is_err_and(|(l, _)| l == 0));
    }
}
