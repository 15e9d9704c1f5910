//! The runtime matching engine behind ACLs, maps and string converters, with HAProxy 2.6
//! semantics.
//!
//! Owns: parsing pattern values (`-f` files, ACL words, map files) into indexed sets that are
//! compiled once at start-up, the lookups done on the request path (no allocation on the hot
//! path except where noted), and the converters `lower`, `upper`, `field`, `word`, `regsub`
//! plus the regex replacement used by `replace-header`, `replace-value`, `replace-uri` and
//! `replace-path`.
//!
//! Must not touch: I/O (callers pass file contents as text), async, sample fetching or casts
//! between sample types, and the ACL grammar itself (`-i`, `-f`, `-m`, `-n`, `--` are read by
//! the caller, which builds one [`PatternSet`] per flag combination, as HAProxy builds one
//! pattern expression per flag combination).
//!
//! `found` and `bool` are decided by the caller: `found` matches when the sample exists and
//! `bool` matches when the sample is a non-zero integer or a true boolean. A [`PatternSet`]
//! built with those methods ignores its patterns (as HAProxy does) and its `match_*`
//! functions always answer `false`.
//!
//! Indexing (all built once, in [`PatternSetBuilder::build`] or [`Map::parse`]):
//!
//! | method | structure | lookup cost |
//! |---|---|---|
//! | str | hash table (ASCII-folded with `-i`) | one hash of the input |
//! | beg | byte trie | one walk over the input |
//! | end | byte trie over reversed patterns | one walk over the input, backwards |
//! | sub | Aho-Corasick automaton | one pass over the input |
//! | reg | one `RegexSet` | one pass over the input |
//! | dom, dir | hash table of patterns stripped of edge delimiters | one hash per run of labels no longer than the longest pattern |
//! | ip | hash table per prefix length (or non-contiguous mask) that occurs | one probe per distinct prefix length |
//! | int, len | sorted disjoint segments | binary search |
//!
//! The same indexes answer "which pattern matches first" ([`PatternSet::first_match_str`],
//! [`PatternSet::first_match_int`], [`PatternSet::first_match_ip`]): the lowest insertion
//! index among the matching patterns, so that one set holding the patterns of consecutive
//! rules, in rule order, tells which rule wins. Each structure keeps the lowest index per
//! key; `beg`/`end` take the minimum over the terminals of the walk, `sub` over the
//! overlapping matches of the automaton, `reg` over the matches of the `RegexSet`, `dom`/`dir`
//! over the candidate runs, `ip` over the prefix tables (one probe per distinct prefix
//! length or non-contiguous mask), and each `int`/`len` segment is labelled with the lowest
//! index covering it.

mod conv;
mod int;
mod ip;
#[cfg(test)]
mod proptests;
mod rx;
mod set;
mod table;
mod text;
mod trie;
mod word;

use std::fmt;

pub use conv::{field, lower, upper, word};
pub use rx::{compile as compile_regex, Locs, Regsub, Replace, Rx};
pub use set::{Map, PatternSet, PatternSetBuilder};

/// The `(key, value)` entries of a map file's text, in order (comments and blank lines
/// skipped, as `Map::parse` reads them).
pub fn map_entries(text: &str) -> Vec<(String, String)> {
    text::map_lines(text).map(|(_, k, v)| (k.to_string(), v.to_string())).collect()
}

/// A pattern matching method, as named after `-m` in an ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Exact string match.
    Str,
    /// Prefix match.
    Beg,
    /// Suffix match.
    End,
    /// Substring match.
    Sub,
    /// Regular expression search (unanchored).
    Reg,
    /// Domain match: delimiters `/`, `?`, `.`, `:`.
    Dom,
    /// Sub-directory match: delimiters `/`, `?`.
    Dir,
    /// The sample's length matched as an integer.
    Len,
    /// Integer (ranges and operators).
    Int,
    /// IPv4 / IPv6 address with optional mask.
    Ip,
    /// Exact binary match; patterns are written in hexadecimal (`-m bin 0a0b`).
    Bin,
    /// Presence of the sample; decided by the caller.
    Found,
    /// Truth of the sample; decided by the caller.
    Bool,
}

impl Method {
    /// The method named `name` as written after `-m` (`"str"`, `"beg"`, ...).
    pub fn from_name(name: &str) -> Option<Method> {
        Some(match name {
            "str" => Method::Str,
            "beg" => Method::Beg,
            "end" => Method::End,
            "sub" => Method::Sub,
            "reg" => Method::Reg,
            "dom" => Method::Dom,
            "dir" => Method::Dir,
            "len" => Method::Len,
            "int" => Method::Int,
            "ip" => Method::Ip,
            "bin" => Method::Bin,
            "found" => Method::Found,
            "bool" => Method::Bool,
            _ => return None,
        })
    }

    /// The name written after `-m`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Str => "str",
            Method::Beg => "beg",
            Method::End => "end",
            Method::Sub => "sub",
            Method::Reg => "reg",
            Method::Dom => "dom",
            Method::Dir => "dir",
            Method::Len => "len",
            Method::Int => "int",
            Method::Ip => "ip",
            Method::Bin => "bin",
            Method::Found => "found",
            Method::Bool => "bool",
        }
    }

    /// Whether patterns of this method are integers or integer ranges (`int`, `len`), which
    /// is when the ACL operators `eq ge gt le lt` apply.
    pub fn takes_integers(self) -> bool {
        matches!(self, Method::Int | Method::Len)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A pattern that HAProxy would refuse; the message is worded like HAProxy's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError(String);

impl PatternError {
    pub(crate) fn new(message: impl Into<String>) -> PatternError {
        PatternError(message.into())
    }

    /// The message, e.g. `'1.2.3.4/40' is not a valid IPv4 or IPv6 address`.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PatternError {}
