//! Small helpers shared by the keyword parsers: strict integer parsing, the
//! "cannot handle unexpected argument" check, and pushing diagnostics for a line.

use crate::diag::Diagnostic;
use crate::lexer::Line;

/// Collects the diagnostics of one load.
#[derive(Default)]
pub struct Diags {
    pub list: Vec<Diagnostic>,
}

impl Diags {
    pub fn alert(&mut self, line: &Line, msg: impl Into<String>) {
        self.list.push(Diagnostic::alert(Some(line.span.clone()), msg));
    }
    /// HAProxy's non-fatal `[ALERT]`: printed, the configuration still accepted.
    pub fn alert_continue(&mut self, line: &Line, msg: impl Into<String>) {
        self.list.push(Diagnostic {
            severity: crate::diag::Severity::AlertContinue,
            span: Some(line.span.clone()),
            message: msg.into(),
        });
    }
    pub fn warning(&mut self, line: &Line, msg: impl Into<String>) {
        self.list.push(Diagnostic::warning(Some(line.span.clone()), msg));
    }
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(Diagnostic::is_error)
    }
}

/// A plain unsigned decimal integer (no sign, no blanks), as a `u64`.
pub fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// C's `atol()`: an optional sign then the leading digits; no digits reads as 0 (HAProxy reads
/// several `tune.*` values so, without complaint). Saturates instead of overflowing.
pub fn atol(s: &str) -> i64 {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = rest
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |v, d| v.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    if negative {
        -v
    } else {
        v
    }
}

/// A plain unsigned decimal integer that fits a `u32`.
pub fn parse_u32(s: &str) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// Reports the first argument past `max` words (keyword included) as HAProxy does:
/// `'<kw>' cannot handle unexpected argument '<arg>'.` Returns false when there was one.
pub fn no_extra(line: &Line, max: usize, kw: &str, diags: &mut Diags) -> bool {
    match line.words.get(max) {
        Some(extra) => {
            diags.alert(line, format!("'{kw}' cannot handle unexpected argument '{extra}'."));
            false
        }
        None => true,
    }
}

/// Parses `line.arg(i)` as a u32, reporting `'<kw>' expects an integer argument.` otherwise.
pub fn int_arg(line: &Line, i: usize, kw: &str, diags: &mut Diags) -> Option<u32> {
    let v = parse_u32(line.arg(i));
    if v.is_none() {
        diags.alert(line, format!("'{kw}' expects an integer argument."));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_u32("42"), Some(42));
        assert_eq!(parse_u32("4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32("4294967296"), None);
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(parse_u32("1k"), None);
        assert_eq!(parse_u32(""), None);
    }
}
