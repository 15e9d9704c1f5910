//! Small helpers shared by the keyword parsers: strict integer and size parsing, the
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
    pub fn notice(&mut self, line: &Line, msg: impl Into<String>) {
        self.list.push(Diagnostic::notice(Some(line.span.clone()), msg));
    }
    /// An alert written as HAProxy writes some: `parsing [file:line]: ...` (no space before
    /// the colon).
    pub fn alert_tight(&mut self, line: &Line, msg: impl std::fmt::Display) {
        let text = format!("parsing [{}]: {msg}", line.span);
        self.list.push(Diagnostic::alert(None, text));
    }
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(Diagnostic::is_error)
    }
}

/// HAProxy's `parse_process_number()`: a process or thread set within `1..=max`, `all`,
/// `odd`, `even`, `N`, `N-M` (reversed bounds swapped) or `N-` (up to `max`); its message
/// otherwise.
pub fn process_set(arg: &str, max: u32) -> Result<Vec<u32>, String> {
    let keep: fn(u32) -> bool = match arg {
        "all" => |_| true,
        "odd" => |n| n % 2 == 1,
        "even" => |n| n % 2 == 0,
        _ => {
            let bad = format!("'{arg}' is not a valid number/range.");
            let (low, high) = arg.split_once('-').unwrap_or((arg, arg));
            if !low.bytes().chain(high.bytes()).all(|b| b.is_ascii_digit()) {
                return Err(bad);
            }
            // (HAProxy's `str2uic()`: an empty number is 0.)
            let num = |s: &str| s.parse::<u64>().unwrap_or(if s.is_empty() { 0 } else { u64::MAX });
            let high = if arg.ends_with('-') { u64::from(max) } else { num(high) };
            let (low, high) = (num(low).min(high), num(low).max(high));
            if low < 1 || high > u64::from(max) {
                return Err(format!("{bad} It supports numbers from 1 to {max}."));
            }
            return Ok((low as u32..=high as u32).collect());
        }
    };
    Ok((1..=max).filter(|&n| keep(n)).collect())
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

/// A size as HAProxy's `parse_size_err()` reads it: digits and an optional `k`, `m` or `g`
/// (either case, powers of 1024), within 32 bits. `Err` holds the character where reading
/// stopped (a digit when the number itself is too large).
pub fn parse_size(text: &str) -> Result<u32, char> {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Err(text.chars().next().unwrap_or(' '));
    }
    let mut v: u32 = 0;
    for &d in &bytes[..digits] {
        v = v.checked_mul(10).and_then(|v| v.checked_add(u32::from(d - b'0'))).ok_or(d as char)?;
    }
    let shift = match bytes.get(digits) {
        None => return Ok(v),
        Some(b'k' | b'K') => 10,
        Some(b'm' | b'M') => 20,
        Some(b'g' | b'G') => 30,
        Some(_) => return Err(text[digits..].chars().next().unwrap_or(' ')),
    };
    if v > u32::MAX >> shift {
        return Err(bytes[digits] as char);
    }
    match text[digits + 1..].chars().next() {
        Some(c) => Err(c),
        None => Ok(v << shift),
    }
}

/// HAProxy's negation/default message for a keyword that takes neither.
pub const NO_NEGATION: &str = "negation/default currently supported only for options, log, busy-polling, set-dumpable, strict-limits, insecure-fork-wanted and numa-cpu-mapping.";

/// The line as HAProxy reads it after `no`/`default`: the words shifted left, the last one
/// emptied after `no` and kept (so doubled) after `default`; `None` when that would start
/// with a modifier again.
pub fn shifted(line: &Line) -> Option<Line> {
    let mut words = line.words.get(1..)?.to_vec();
    if line.arg(0) == "default" {
        words.extend(line.words.last().cloned());
    }
    let again = matches!(words.first().map(String::as_str), None | Some("no" | "default"));
    (!again).then(|| Line { span: line.span.clone(), words })
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

/// HAProxy's `invalid_char`: the first character a section, proxy, ACL or user name may not
/// hold (letters, digits and `-_.:` only).
pub fn invalid_char(name: &str) -> Option<char> {
    name.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_.:".contains(*c)))
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

    #[test]
    fn process_sets_are_read_as_haproxy_reads_them() {
        assert_eq!(process_set("odd", 4), Ok(vec![1, 3]));
        assert_eq!(process_set("3-2", 4), Ok(vec![2, 3]));
        assert_eq!(process_set("3-", 4), Ok(vec![3, 4]));
        assert_eq!(process_set("1", 1), Ok(vec![1]));
        let range = "'2' is not a valid number/range. It supports numbers from 1 to 1.";
        assert_eq!(process_set("2", 1), Err(range.to_string()));
        assert_eq!(process_set("1/1", 1), Err("'1/1' is not a valid number/range.".into()));
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("10"), Ok(10));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1x"), Err('x'));
        assert_eq!(parse_size("3G"), Ok(3 << 30));
    }

    #[test]
    fn sizes_stop_where_haproxys_parse_size_err_stops() {
        // The character after a unit is the one named; sizes are 32-bit.
        assert_eq!(parse_size("10kb"), Err('b'));
        assert_eq!(parse_size("4g"), Err('g'));
        assert_eq!(parse_size("4294967295"), Ok(u32::MAX));
        assert_eq!(parse_size("5000000000"), Err('0'));
        assert_eq!(parse_size("k"), Err('k'));
    }
}
