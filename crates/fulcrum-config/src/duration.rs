//! Time values (`timeout connect 5s`): HAProxy's `<number>[us|ms|s|m|h|d]` syntax read as its
//! `parse_time_err()` reads it. A caller's unit (milliseconds for timeouts, seconds for cookie
//! lifetimes) is the default and the precision: a value is rounded up to it, and must stay below
//! 2^31 of it (2147483647 ms is ~24.8 days). Characters after a unit (`15min`, `5sec`) are
//! ignored with HAProxy 2.6's warning; anything else is an error.

use std::time::Duration;

/// HAProxy's largest timer, in milliseconds (`TIMER_LOOK_BACK` limit, 2^31 - 1).
pub const MAX_TIMER_MS: u64 = 2_147_483_647;

/// Why a time value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    /// Empty value.
    Missing,
    /// The character where reading stopped: not a digit first, or not a unit after the digits.
    BadChar(char),
    /// 2^31 or more of the caller's unit.
    Overflow,
}

/// The unit a keyword counts in: the default when a value has none, and its precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Ms,
    S,
}

/// A time value that was read: its duration (a whole number of the caller's unit) and, when
/// characters followed the unit, HAProxy's warning about them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Time {
    pub value: Duration,
    pub warning: Option<String>,
}

/// Parses a time value in milliseconds, refusing characters after the unit (HAProxy only warns
/// about them: keywords read as HAProxy reads them use [`read_time`]). `0` is a valid value.
pub fn parse_time(text: &str) -> Result<Duration, TimeError> {
    let t = parse_time_in(text, TimeUnit::Ms)?;
    match t.warning {
        Some(_) => {
            let after = text.trim_start_matches(|c: char| c.is_ascii_digit());
            let unit_len = if after.starts_with("us") || after.starts_with("ms") { 2 } else { 1 };
            Err(TimeError::BadChar(after[unit_len..].chars().next().unwrap_or(' ')))
        }
        None => Ok(t.value),
    }
}

/// Parses a time value in milliseconds as HAProxy does (with its warning when characters follow
/// the unit). `0` is a valid value (callers treat it as "not set").
pub fn read_time(text: &str) -> Result<Time, TimeError> {
    parse_time_in(text, TimeUnit::Ms)
}

/// Parses a time value counted in `unit`, as HAProxy's `parse_time_err()`.
pub fn parse_time_in(text: &str, unit: TimeUnit) -> Result<Time, TimeError> {
    let first = text.chars().next().ok_or(TimeError::Missing)?;
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(TimeError::BadChar(first));
    }
    // Larger than any valid value: reported as an overflow, whatever follows.
    let value: u128 = text[..digits].parse().map_err(|_| TimeError::Overflow)?;
    let rest = &text[digits..];
    // The value's length in microseconds per unit written, and the unit's length in text.
    let (micros_per, unit_len): (u128, usize) = match rest.as_bytes() {
        [] => (if unit == TimeUnit::Ms { 1_000 } else { 1_000_000 }, 0),
        [b'u', b's', ..] => (1, 2),
        [b'm', b's', ..] => (1_000, 2),
        [b's', ..] => (1_000_000, 1),
        [b'm', ..] => (60_000_000, 1),
        [b'h', ..] => (3_600_000_000, 1),
        [b'd', ..] => (86_400_000_000, 1),
        _ => return Err(TimeError::BadChar(rest.chars().next().unwrap_or(' '))),
    };
    let per_unit: u128 = if unit == TimeUnit::Ms { 1_000 } else { 1_000_000 };
    let result = value.checked_mul(micros_per).ok_or(TimeError::Overflow)?.div_ceil(per_unit);
    if result > u128::from(MAX_TIMER_MS) {
        return Err(TimeError::Overflow);
    }
    let result = result as u64;
    let value = match unit {
        TimeUnit::Ms => Duration::from_millis(result),
        TimeUnit::S => Duration::from_secs(result),
    };
    let warning = rest[unit_len..].chars().next().map(|c| {
        format!(
            "unexpected character '{c}' after the timer value '{text}', only \
             (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. \
             This will be reported as an error in next versions."
        )
    });
    Ok(Time { value, warning })
}

/// Formats a timeout error as HAProxy does, for keyword `kw` (e.g. `timeout connect`).
pub fn time_error_message(kw: &str, value: &str, err: &TimeError) -> String {
    match err {
        TimeError::Missing => format!("'{kw}' expects an integer value (in milliseconds)"),
        TimeError::BadChar(c) => format!("unexpected character '{c}' in '{kw}'"),
        TimeError::Overflow => format!(
            "timer overflow in argument '{value}' to '{kw}' (maximum value is {MAX_TIMER_MS} ms or ~24.8 days)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> Result<Duration, TimeError> {
        read_time(text).map(|t| t.value)
    }

    fn warned(text: &str) -> Option<char> {
        let w = read_time(text).expect("parses").warning?;
        w.strip_prefix("unexpected character '")?.chars().next()
    }

    #[test]
    fn units() {
        assert_eq!(ms("10"), Ok(Duration::from_millis(10)));
        assert_eq!(ms("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(ms("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(ms("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(ms("3h"), Ok(Duration::from_secs(3 * 3600)));
        assert_eq!(ms("24d"), Ok(Duration::from_secs(24 * 86400)));
        assert_eq!(ms("0"), Ok(Duration::ZERO));
        assert_eq!(ms("0us"), Ok(Duration::ZERO));
    }

    #[test]
    fn values_are_rounded_up_to_the_callers_unit() {
        assert_eq!(ms("250us"), Ok(Duration::from_millis(1)));
        assert_eq!(ms("1001us"), Ok(Duration::from_millis(2)));
        let s = |t: &str| parse_time_in(t, TimeUnit::S).map(|t| t.value);
        assert_eq!(s("10"), Ok(Duration::from_secs(10)));
        assert_eq!(s("1500ms"), Ok(Duration::from_secs(2)));
        assert_eq!(s("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(s("2147483647"), Ok(Duration::from_secs(MAX_TIMER_MS)));
        assert_eq!(s("2147483648"), Err(TimeError::Overflow));
    }

    #[test]
    fn characters_after_a_unit_are_ignored_with_haproxys_warning() {
        assert_eq!(ms("15min"), Ok(Duration::from_secs(15 * 60)));
        assert_eq!(warned("15min"), Some('i'));
        assert_eq!(ms("5sec"), Ok(Duration::from_secs(5)));
        assert_eq!(warned("5sec"), Some('e'));
        assert_eq!(ms("5mss"), Ok(Duration::from_millis(5)));
        assert_eq!(warned("5mss"), Some('s'));
        assert_eq!(ms("2hours"), Ok(Duration::from_secs(7200)));
        assert_eq!(warned("10s"), None);
        assert_eq!(
            read_time("1sec").expect("parses").warning.as_deref(),
            Some("unexpected character 'e' after the timer value '1sec', only (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. This will be reported as an error in next versions.")
        );
    }

    #[test]
    fn the_strict_reading_refuses_characters_after_the_unit() {
        assert_eq!(parse_time("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_time("5sec"), Err(TimeError::BadChar('e')));
        assert_eq!(parse_time("5mss"), Err(TimeError::BadChar('s')));
        assert_eq!(parse_time("5usx"), Err(TimeError::BadChar('x')));
        assert_eq!(parse_time("5x"), Err(TimeError::BadChar('x')));
    }

    #[test]
    fn errors() {
        assert_eq!(ms(""), Err(TimeError::Missing));
        assert_eq!(ms("x"), Err(TimeError::BadChar('x')));
        assert_eq!(ms("-1"), Err(TimeError::BadChar('-')));
        assert_eq!(ms("5x"), Err(TimeError::BadChar('x')));
        // `u` must be followed by `s`: HAProxy stops at the `u`.
        assert_eq!(ms("5ux"), Err(TimeError::BadChar('u')));
        assert_eq!(ms("5u"), Err(TimeError::BadChar('u')));
        assert_eq!(ms("25d"), Err(TimeError::Overflow));
        assert_eq!(ms("25days"), Err(TimeError::Overflow));
        assert_eq!(ms("2147483648"), Err(TimeError::Overflow));
        assert_eq!(ms("2147483647"), Ok(Duration::from_millis(MAX_TIMER_MS)));
        assert_eq!(ms("99999999999999999999999"), Err(TimeError::Overflow));
        assert_eq!(ms("999999999999999999999999999999999999999999"), Err(TimeError::Overflow));
        assert_eq!(ms("99999999999999999999999999999999999d"), Err(TimeError::Overflow));
    }

    #[test]
    fn messages_match_haproxy() {
        let m = time_error_message("timeout connect", "x", &TimeError::BadChar('x'));
        assert_eq!(m, "unexpected character 'x' in 'timeout connect'");
        let m = time_error_message("timeout connect", "25d", &TimeError::Overflow);
        assert_eq!(
            m,
            "timer overflow in argument '25d' to 'timeout connect' (maximum value is 2147483647 ms or ~24.8 days)"
        );
    }
}
