//! Integer patterns for `int` and `len`: HAProxy's number and range syntax, the ACL
//! operators, and the segment index that answers "which range matches first".
//!
//! Owns: `pat_parse_int`, `strl2llrc` and the operator rewriting of `parse_acl_expr`, ported
//! with their quirks (verified against HAProxy 2.6):
//! - `:` and `-` are both range separators, so `-5` means `:5` (at most 5) and `10-20` is a
//!   range; negative bounds can only be written after a leading `:` (`:-5`);
//! - numbers are plain decimal digits with an optional leading `-`; `+3`, `1.5`, `0x10` are
//!   refused;
//! - an operator word applies to the following values until the next operator; a value
//!   containing `:` or `-` is taken as written whatever the operator (so `lt -5` is `:5`);
//!   `gt 5` is `6:`, `ge 5` is `5:`, `lt 5` is `:4`, `le 5` is `:5`; `ne` is accepted and
//!   behaves like `eq`; with an operator, anything after a `.` in the value is ignored.
//!
//! Must not touch: sample casts (turning a string sample into an integer is the caller's job).

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::PatternError;

/// An inclusive range; `None` is an open end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntRange {
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl IntRange {
    #[cfg(test)]
    pub fn contains(&self, v: i64) -> bool {
        let above_min = match self.min {
            Some(m) => m <= v,
            None => true,
        };
        let below_max = match self.max {
            Some(m) => v <= m,
            None => true,
        };
        above_min && below_max
    }

    /// The bounds as `len` compares them: HAProxy compares the signed bounds with the
    /// unsigned length, so a negative bound is read as a huge unsigned number (`len lt 0`
    /// matches every length).
    pub fn as_len_bounds(&self) -> (u64, u64) {
        (self.min.map_or(0, |m| m as u64), self.max.map_or(u64::MAX, |m| m as u64))
    }
}

/// HAProxy's `strl2llrc`: optional leading `-`, then decimal digits, with overflow checks.
/// An empty string is refused; a lone `-` reads as 0.
fn strl2llrc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (neg, digits) = if b[0] == b'-' { (true, &b[1..]) } else { (false, b) };
    let mut i: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        i = i.checked_mul(10)?;
        i = if neg { i.checked_sub(d)? } else { i.checked_add(d)? };
    }
    Some(i)
}

/// HAProxy's `pat_parse_int`.
pub(crate) fn parse_range(text: &str) -> Result<IntRange, PatternError> {
    let range_err = || PatternError::new(format!("'{text}' is not a valid number range"));
    if text.is_empty() {
        return Err(range_err());
    }
    let Some(sep) = text.find([':', '-']) else {
        let v = strl2llrc(text)
            .ok_or_else(|| PatternError::new(format!("'{text}' is not a number")))?;
        return Ok(IntRange { min: Some(v), max: Some(v) });
    };
    let (left, right) = (&text[..sep], &text[sep + 1..]);
    if sep == 0 && !right.is_empty() {
        let max = strl2llrc(right).ok_or_else(range_err)?;
        return Ok(IntRange { min: None, max: Some(max) });
    }
    if right.is_empty() {
        let min = strl2llrc(left).ok_or_else(range_err)?;
        return Ok(IntRange { min: Some(min), max: None });
    }
    let min = strl2llrc(left).ok_or_else(range_err)?;
    let max = strl2llrc(right).ok_or_else(range_err)?;
    if min > max {
        return Err(range_err());
    }
    Ok(IntRange { min: Some(min), max: Some(max) })
}

/// The ACL comparison operators (HAProxy's `get_std_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operator {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

pub(crate) fn operator(word: &str) -> Option<Operator> {
    Some(match word {
        "eq" => Operator::Eq,
        "ne" => Operator::Ne,
        "lt" => Operator::Lt,
        "le" => Operator::Le,
        "gt" => Operator::Gt,
        "ge" => Operator::Ge,
        _ => return None,
    })
}

/// Rewrites `value` under operator `op` into the range syntax, as `parse_acl_expr` does.
pub(crate) fn apply_operator(op: Operator, value: &str) -> Result<Cow<'_, str>, PatternError> {
    if op == Operator::Eq || value.contains([':', '-']) {
        return Ok(Cow::Borrowed(value));
    }
    let major = value.split('.').next().unwrap_or(value);
    let v = strl2llrc(major).ok_or_else(|| {
        PatternError::new(format!("'{value}' is neither a number nor a supported operator"))
    })?;
    Ok(match op {
        Operator::Eq | Operator::Ne => Cow::Borrowed(value),
        Operator::Gt => Cow::Owned(format!("{}:", v.wrapping_add(1))),
        Operator::Ge => Cow::Owned(format!("{v}:")),
        Operator::Lt => Cow::Owned(format!(":{}", v.wrapping_sub(1))),
        Operator::Le => Cow::Owned(format!(":{v}")),
    })
}

/// A totally ordered point type for [`RangeIndex`].
pub(crate) trait Point: Copy + Ord {
    const MIN: Self;
    fn succ(self) -> Option<Self>;
}

impl Point for i64 {
    const MIN: i64 = i64::MIN;
    fn succ(self) -> Option<i64> {
        self.checked_add(1)
    }
}

impl Point for u64 {
    const MIN: u64 = 0;
    fn succ(self) -> Option<u64> {
        self.checked_add(1)
    }
}

const NONE: u32 = u32::MAX;

/// The number line cut into segments, each labelled with the lowest index of the ranges
/// covering it: "first range in file order containing v" is one binary search.
#[derive(Debug)]
pub(crate) struct RangeIndex<T> {
    starts: Vec<T>,
    winners: Vec<u32>,
}

impl<T: Point> RangeIndex<T> {
    /// `ranges[i]` is the inclusive range of pattern `i`; empty ranges never match.
    pub fn build(ranges: &[(T, T)]) -> RangeIndex<T> {
        let mut bounds = vec![T::MIN];
        for &(lo, hi) in ranges.iter().filter(|(lo, hi)| lo <= hi) {
            bounds.push(lo);
            bounds.extend(hi.succ());
        }
        bounds.sort_unstable();
        bounds.dedup();

        let mut by_lo: Vec<usize> =
            (0..ranges.len()).filter(|&i| ranges[i].0 <= ranges[i].1).collect();
        by_lo.sort_by_key(|&i| ranges[i].0);
        let mut next = 0;
        let mut active: BinaryHeap<Reverse<(usize, T)>> = BinaryHeap::new();
        let mut starts = Vec::new();
        let mut winners: Vec<u32> = Vec::new();
        for &start in &bounds {
            while next < by_lo.len() && ranges[by_lo[next]].0 <= start {
                let i = by_lo[next];
                active.push(Reverse((i, ranges[i].1)));
                next += 1;
            }
            while active.peek().is_some_and(|Reverse((_, hi))| *hi < start) {
                active.pop();
            }
            let winner = active.peek().map_or(NONE, |Reverse((i, _))| *i as u32);
            if winners.last() != Some(&winner) {
                starts.push(start);
                winners.push(winner);
            }
        }
        RangeIndex { starts, winners }
    }

    /// The lowest index of a range containing `v`.
    pub fn find(&self, v: T) -> Option<u32> {
        let k = self.starts.partition_point(|&s| s <= v).checked_sub(1)?;
        let w = self.winners[k];
        (w != NONE).then_some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Result<(Option<i64>, Option<i64>), String> {
        parse_range(text).map(|r| (r.min, r.max)).map_err(|e| e.to_string())
    }

    #[test]
    fn ranges_accept_colon_or_dash_and_open_ends() {
        assert_eq!(r("10"), Ok((Some(10), Some(10))));
        assert_eq!(r("10:20"), Ok((Some(10), Some(20))));
        assert_eq!(r("10-20"), Ok((Some(10), Some(20))));
        assert_eq!(r(":20"), Ok((None, Some(20))));
        assert_eq!(r("10:"), Ok((Some(10), None)));
        assert_eq!(r("5-"), Ok((Some(5), None)));
        assert_eq!(r(":-1"), Ok((None, Some(-1))));
    }

    #[test]
    fn a_leading_dash_is_a_separator_not_a_sign() {
        assert_eq!(r("-5"), Ok((None, Some(5))));
    }

    #[test]
    fn malformed_numbers_are_refused_with_haproxy_messages() {
        assert_eq!(r("1.5"), Err("'1.5' is not a number".into()));
        assert_eq!(r("+3"), Err("'+3' is not a number".into()));
        assert_eq!(r("0x10"), Err("'0x10' is not a number".into()));
        assert_eq!(r("9223372036854775808"), Err("'9223372036854775808' is not a number".into()));
        assert_eq!(r(":"), Err("':' is not a valid number range".into()));
        assert_eq!(r("20:10"), Err("'20:10' is not a valid number range".into()));
        assert_eq!(r("-5:10"), Err("'-5:10' is not a valid number range".into()));
        assert_eq!(r("9223372036854775807"), Ok((Some(i64::MAX), Some(i64::MAX))));
    }

    #[test]
    fn operators_rewrite_values_like_haproxy() {
        let rw = |op, v| apply_operator(op, v).map(|c| c.into_owned()).map_err(|e| e.to_string());
        assert_eq!(rw(Operator::Gt, "5"), Ok("6:".into()));
        assert_eq!(rw(Operator::Ge, "5"), Ok("5:".into()));
        assert_eq!(rw(Operator::Lt, "0"), Ok(":-1".into()));
        assert_eq!(rw(Operator::Le, "5"), Ok(":5".into()));
        assert_eq!(rw(Operator::Ne, "5"), Ok("5".into()));
        assert_eq!(rw(Operator::Lt, "-5"), Ok("-5".into()));
        assert_eq!(rw(Operator::Gt, "5:6"), Ok("5:6".into()));
        assert_eq!(rw(Operator::Gt, "5.7"), Ok("6:".into()));
        assert_eq!(
            rw(Operator::Gt, "x"),
            Err("'x' is neither a number nor a supported operator".into())
        );
        assert_eq!(rw(Operator::Gt, &i64::MAX.to_string()), Ok("-9223372036854775808:".into()));
    }

    #[test]
    fn the_range_index_returns_the_first_range_in_order() {
        let idx =
            RangeIndex::build(&[(10i64, 20), (15, 15), (30, i64::MAX), (5, 4), (i64::MIN, 0)]);
        assert_eq!(idx.find(15), Some(0));
        assert_eq!(idx.find(21), None);
        assert_eq!(idx.find(30), Some(2));
        assert_eq!(idx.find(i64::MAX), Some(2));
        assert_eq!(idx.find(-7), Some(4));
        assert_eq!(idx.find(1), None);
        let later = RangeIndex::build(&[(15i64, 15), (10, 20)]);
        assert_eq!(later.find(15), Some(0));
        assert_eq!(later.find(16), Some(1));
    }
}
