//! `dom` and `dir` matching (HAProxy's `match_word`): a pattern matches when it appears in the
//! input starting at the beginning or right after a delimiter and ending at the end or right
//! before a delimiter. `dom` delimiters are `/`, `?`, `.` and `:`; `dir` delimiters are `/`
//! and `?`. Delimiters at both ends of a pattern are ignored; the ones inside it must appear
//! verbatim in the input.
//!
//! Owns: the delimiter sets, pattern stripping, and the indexed lookup: patterns, stripped,
//! go into a hash table; the input is cut into its candidate runs (start at the beginning or
//! after a delimiter, on a non-delimiter; end at the end or before a delimiter, after a
//! non-delimiter; no longer than the longest pattern), each looked up once. With `k`
//! candidate starts and at most `m` candidate ends within the longest pattern's length `L`
//! after each start, a lookup costs `k * m` hashes of at most `L` bytes; for a host name
//! with 4 labels it is 10 hashes.
//!
//! A pattern made only of delimiters is empty once stripped; HAProxy then compares against
//! the byte following the sample, which is never a match for samples taken from a request
//! (checked with HAProxy 2.6), so such patterns never match here.
//!
//! Must not touch: which entry wins (the caller gets every candidate through a visitor).

use crate::table::BytesTable;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delims {
    Dom,
    Dir,
}

impl Delims {
    pub fn has(self, b: u8) -> bool {
        match self {
            Delims::Dom => matches!(b, b'/' | b'?' | b'.' | b':'),
            Delims::Dir => matches!(b, b'/' | b'?'),
        }
    }

    /// The pattern without its leading and trailing delimiters.
    pub fn strip(self, p: &[u8]) -> &[u8] {
        let start = p.iter().position(|&b| !self.has(b)).unwrap_or(p.len());
        let end = p.iter().rposition(|&b| !self.has(b)).map_or(start, |e| e + 1);
        &p[start..end]
    }
}

/// Reference semantics of one pattern (a port of `match_word`), for tests.
#[cfg(test)]
pub(crate) fn matches_one(d: Delims, pattern: &[u8], input: &[u8], fold: bool) -> bool {
    let p = d.strip(pattern);
    if p.is_empty() || p.len() > input.len() {
        return false;
    }
    let mut may_match = true;
    for c in 0..=input.len() - p.len() {
        if d.has(input[c]) {
            may_match = true;
            continue;
        }
        if !may_match {
            continue;
        }
        let w = &input[c..c + p.len()];
        let same = if fold { w.eq_ignore_ascii_case(p) } else { w == p };
        if same && (c + p.len() == input.len() || d.has(input[c + p.len()])) {
            return true;
        }
        may_match = false;
    }
    false
}

#[derive(Debug)]
pub(crate) struct WordIndex {
    delims: Delims,
    table: BytesTable,
}

impl WordIndex {
    pub fn build<'a>(
        delims: Delims,
        patterns: impl IntoIterator<Item = (u32, &'a [u8])>,
        fold: bool,
    ) -> WordIndex {
        let stripped =
            patterns.into_iter().map(|(i, p)| (i, delims.strip(p))).filter(|(_, p)| !p.is_empty());
        WordIndex { delims, table: BytesTable::build(stripped, fold) }
    }

    /// Calls `visit` with the entry of every pattern found in `input` until it returns
    /// `true`.
    pub fn visit(&self, input: &[u8], mut visit: impl FnMut(u32) -> bool) {
        let max = self.table.max_len();
        if self.table.len() == 0 {
            return;
        }
        let d = self.delims;
        for start in 0..input.len() {
            if d.has(input[start]) || (start > 0 && !d.has(input[start - 1])) {
                continue;
            }
            let limit = input.len().min(start + max);
            for end in start + 1..=limit {
                if d.has(input[end - 1]) || (end < input.len() && !d.has(input[end])) {
                    continue;
                }
                if let Some(i) = self.table.get(&input[start..end]) {
                    if visit(i) {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dom(patterns: &[&str], input: &str) -> bool {
        let idx = WordIndex::build(
            Delims::Dom,
            patterns.iter().enumerate().map(|(i, p)| (i as u32, p.as_bytes())),
            false,
        );
        let mut found = false;
        idx.visit(input.as_bytes(), |_| {
            found = true;
            true
        });
        assert_eq!(
            found,
            patterns.iter().any(|p| matches_one(
                Delims::Dom,
                p.as_bytes(),
                input.as_bytes(),
                false
            ))
        );
        found
    }

    #[test]
    fn the_manual_domain_examples_hold() {
        let url = "http://www1.dc-eu.example.com:80/blah";
        for p in [
            "http",
            "www1",
            ".www1",
            "dc-eu",
            "example",
            "com",
            "80",
            "dc-eu.example",
            "blah",
            ":www1:",
            "example.com:80",
        ] {
            assert!(dom(&[p], url), "{p} should match");
        }
        // The manual also lists "dc-eu.example:80", which is not in the string: HAProxy 2.6
        // does not match it either.
        for p in ["eu", "dc", "example.com:8", "ww1", "dc-eu.example:80"] {
            assert!(!dom(&[p], url), "{p} should not match");
        }
    }

    #[test]
    fn the_manual_directory_examples_hold() {
        let path = b"/images/png/logo/32x32.png";
        // The manual says "png" does not match; HAProxy 2.6 matches it (it is a whole
        // segment), and so do we.
        for p in [
            "/images",
            "/images/png",
            "images/png",
            "/png/logo",
            "logo/32x32.png",
            "32x32.png",
            "png",
        ] {
            assert!(matches_one(Delims::Dir, p.as_bytes(), path, false), "{p}");
        }
        for p in ["32x32", "ages", "png/lo"] {
            assert!(!matches_one(Delims::Dir, p.as_bytes(), path, false), "{p}");
        }
        assert!(matches_one(Delims::Dir, b"a?b", b"x/a?b/c", false));
        assert!(!matches_one(Delims::Dir, b"a?b", b"xa?b", false));
    }

    #[test]
    fn patterns_made_of_delimiters_never_match() {
        assert!(!dom(&["."], "x."));
        assert!(!dom(&["/", "::"], "/"));
    }
}
