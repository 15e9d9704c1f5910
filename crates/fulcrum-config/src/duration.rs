//! Time values (`timeout connect 5s`): HAProxy's `<number>[us|ms|s|m|h|d]` syntax, default unit
//! milliseconds, capped like HAProxy's timers at 2147483647 ms (~24.8 days).

use std::time::Duration;

/// HAProxy's largest timer, in milliseconds (`TIMER_LOOK_BACK` limit, 2^31 - 1).
pub const MAX_TIMER_MS: u64 = 2_147_483_647;

/// Why a time value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    /// Empty value or no leading digit.
    Missing,
    /// A character that is neither a digit nor a known unit.
    BadChar(char),
    /// More than [`MAX_TIMER_MS`].
    Overflow,
}

/// Parses a HAProxy time value. `0` is a valid value (callers treat it as "not set").
pub fn parse_time(text: &str) -> Result<Duration, TimeError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if text.is_empty() {
        return Err(TimeError::Missing);
    }
    if digits == 0 {
        let c = text.chars().next().unwrap_or(' ');
        return Err(TimeError::BadChar(c));
    }
    let value: u64 = text[..digits].parse().map_err(|_| TimeError::Overflow)?;
    let unit = &text[digits..];
    let micros_per: u64 = match unit {
        "us" => 1,
        "" | "ms" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => {
            let bad = bad_unit_char(unit);
            return Err(TimeError::BadChar(bad));
        }
    };
    let micros = value.checked_mul(micros_per).ok_or(TimeError::Overflow)?;
    if micros.div_ceil(1000) > MAX_TIMER_MS {
        return Err(TimeError::Overflow);
    }
    Ok(Duration::from_micros(micros))
}

/// The first character of a unit suffix that cannot start or continue a known unit.
fn bad_unit_char(unit: &str) -> char {
    let mut chars = unit.chars();
    let first = chars.next().unwrap_or(' ');
    match first {
        'u' | 'm' => match chars.next() {
            Some('s') => chars.next().unwrap_or(' '),
            Some(c) => c,
            None => first,
        },
        's' | 'h' | 'd' => chars.next().unwrap_or(first),
        _ => first,
    }
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

    #[test]
    fn units() {
        assert_eq!(parse_time("10"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_time("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_time("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_time("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_time("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("3h"), Ok(Duration::from_secs(3 * 3600)));
        assert_eq!(parse_time("24d"), Ok(Duration::from_secs(24 * 86400)));
        assert_eq!(parse_time("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn errors() {
        assert_eq!(parse_time(""), Err(TimeError::Missing));
        assert_eq!(parse_time("x"), Err(TimeError::BadChar('x')));
        assert_eq!(parse_time("-1"), Err(TimeError::BadChar('-')));
        assert_eq!(parse_time("5x"), Err(TimeError::BadChar('x')));
        assert_eq!(parse_time("5sec"), Err(TimeError::BadChar('e')));
        assert_eq!(parse_time("5mss"), Err(TimeError::BadChar('s')));
        assert_eq!(parse_time("25d"), Err(TimeError::Overflow));
        assert_eq!(parse_time("2147483648"), Err(TimeError::Overflow));
        assert_eq!(parse_time("2147483647"), Ok(Duration::from_millis(MAX_TIMER_MS)));
        assert_eq!(parse_time("99999999999999999999999"), Err(TimeError::Overflow));
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
