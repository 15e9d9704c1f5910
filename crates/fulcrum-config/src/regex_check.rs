//! A structural check of regular expressions, so that an obviously broken regex is reported
//! with its file:line at load time (HAProxy compiles them with PCRE while parsing). The engine
//! compiles the regex for real; this only catches unbalanced groups and classes, a trailing
//! backslash and a quantifier with nothing to repeat.

/// Checks `re`; the error is worded as HAProxy reports PCRE errors.
pub fn check(re: &str) -> Result<(), String> {
    find_error(re).map_or(Ok(()), |(msg, at)| {
        Err(format!("regex '{re}' is invalid (error={msg}, erroffset={at})"))
    })
}

fn find_error(re: &str) -> Option<(&'static str, usize)> {
    let b = re.as_bytes();
    let mut depth = 0usize;
    // Whether the previous item can take a quantifier.
    let mut repeatable = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                if i + 1 >= b.len() {
                    return Some(("\\ at end of pattern", b.len()));
                }
                i += 2;
                repeatable = true;
                continue;
            }
            b'[' => {
                match class_end(b, i) {
                    Some(end) => i = end,
                    None => return Some(("missing terminating ] for character class", b.len())),
                }
                repeatable = true;
                continue;
            }
            b'(' => {
                depth += 1;
                repeatable = false;
                // `(?:`, `(?i)`... : skip the `?` so it is not taken for a quantifier.
                if b.get(i + 1) == Some(&b'?') {
                    i += 1;
                }
            }
            b')' => {
                if depth == 0 {
                    return Some(("unmatched closing parenthesis", i));
                }
                depth -= 1;
                repeatable = true;
            }
            b'*' | b'+' | b'?' => {
                if !repeatable {
                    return Some(("quantifier does not follow a repeatable item", i));
                }
                // A possessive or lazy suffix (`*?`, `++`) is part of the quantifier.
                if matches!(b.get(i + 1), Some(b'?' | b'+')) {
                    i += 1;
                }
                repeatable = false;
            }
            b'|' | b'^' => repeatable = false,
            _ => repeatable = true,
        }
        i += 1;
    }
    if depth > 0 {
        return Some(("missing closing parenthesis", b.len()));
    }
    None
}

/// Index just after the character class opened at `open`, or `None` when it is not closed.
fn class_end(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if b.get(i) == Some(&b'^') {
        i += 1;
    }
    // A `]` right after `[` or `[^` is a literal.
    if b.get(i) == Some(&b']') {
        i += 1;
    }
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' if b.get(i + 1) == Some(&b':') => {
                // POSIX class `[:alpha:]`.
                match b[i + 2..].windows(2).position(|w| w == b":]") {
                    Some(p) => i += p + 4,
                    None => i += 1,
                }
            }
            b']' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_regexes_pass() {
        for re in [
            "^/api/",
            "^[^/:]*://",
            "a(b|c)*d+?",
            "(?i)abc",
            "(?:x)?",
            "[]a]",
            "[^]a]",
            r"\.(png|jpg)$",
            "[[:alpha:]]+",
            "a{2,3}",
        ] {
            assert_eq!(check(re), Ok(()), "{re}");
        }
    }

    #[test]
    fn broken_regexes_are_reported_like_pcre() {
        assert_eq!(
            check("^(x"),
            Err("regex '^(x' is invalid (error=missing closing parenthesis, erroffset=3)".into())
        );
        assert_eq!(
            check("["),
            Err("regex '[' is invalid (error=missing terminating ] for character class, erroffset=1)"
                .into())
        );
        assert!(check("a)").is_err());
        assert!(check("*a").is_err());
        assert!(check("a\\").is_err());
    }
}
