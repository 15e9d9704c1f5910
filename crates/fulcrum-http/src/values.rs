//! Pure helpers over field values and the query string that the engine's sample fetches need:
//! comma-separated occurrences (`hdr()`), `url_param`, `req.cook`. They only read slices: no
//! head state, no allocation.

use crate::chars::trim_ows;

/// The comma-separated elements of a field value, as HAProxy's `hdr()` and `hdr_cnt()` see them:
/// split on commas outside double-quoted strings (a backslash escapes the next byte inside
/// quotes), each trimmed of SP/HTAB. Empty elements are returned too, as HAProxy counts them; an
/// empty value has one empty element.
pub fn comma_values(value: &[u8]) -> CommaValues<'_> {
    CommaValues { rest: Some(value) }
}

/// Iterator returned by [`comma_values`].
#[derive(Debug, Clone)]
pub struct CommaValues<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for CommaValues<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let s = self.rest?;
        let mut i = 0;
        let mut quoted = false;
        while i < s.len() {
            match s[i] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => i += 1,
                b',' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        if i < s.len() {
            self.rest = Some(&s[i + 1..]);
            Some(trim_ows(&s[..i]))
        } else {
            self.rest = None;
            Some(trim_ows(s))
        }
    }
}

/// HAProxy's `url_param(<name>)` (alias `urlp`) over a query string (the part after the first
/// `?`): parameters are separated by `&`, `;` or `?` (HAProxy's manual: `urlp` "also uses '?'
/// and ';'"); the first one whose name is exactly `name` (case-sensitive) followed by `=` gives
/// its value, up to the next separator. No percent-decoding, as HAProxy.
pub fn url_param<'a>(query: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    if name.is_empty() {
        return None;
    }
    query.split(|&b| matches!(b, b'&' | b';' | b'?')).find_map(|param| {
        let rest = param.strip_prefix(name)?;
        rest.strip_prefix(b"=")
    })
}

/// HAProxy's `req.cook(<name>)` over one Cookie header value (`a=1; b=2`): the value of the
/// **last** cookie named `name` (case-sensitive), as HAProxy's manual says of `req.cook`.
/// Cookies are separated by `;`; spaces around names and values are skipped. The value is
/// returned as sent (quotes kept). A cookie without `=` has no value and never matches.
pub fn cookie_value<'a>(cookie_header_value: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    cookie_header_value.split(|&b| b == b';').rev().find_map(|pair| {
        let eq = pair.iter().position(|&b| b == b'=')?;
        let key = trim_ows(&pair[..eq]);
        (key == name).then(|| trim_ows(&pair[eq + 1..]))
    })
}

/// True if `list` (a comma-separated field value) has `token`, compared case-insensitively.
pub(crate) fn has_token(list: &[u8], token: &[u8]) -> bool {
    comma_values(list).any(|t| t.eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(v: &[u8]) -> Vec<&[u8]> {
        comma_values(v).collect()
    }

    #[test]
    fn comma_values_are_trimmed_and_keep_quoted_commas() {
        assert_eq!(all(b" a , b,\tc "), vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(all(b"x=\"1,2\", y"), vec![&b"x=\"1,2\""[..], b"y"]);
        assert_eq!(all(b"x=\"a\\\",b\", y"), vec![&b"x=\"a\\\",b\""[..], b"y"]);
    }

    #[test]
    fn comma_values_keep_empty_elements_like_hdr_cnt() {
        assert_eq!(all(b"a,,b"), vec![&b"a"[..], b"", b"b"]);
        assert_eq!(all(b""), vec![&b""[..]]);
        assert_eq!(all(b"a,"), vec![&b"a"[..], b""]);
    }

    #[test]
    fn url_param_returns_the_first_match_and_splits_on_ampersand_semicolon_and_question_mark() {
        assert_eq!(url_param(b"a=1&b=2&a=3", b"a"), Some(&b"1"[..]));
        assert_eq!(url_param(b"x=1;b=2", b"b"), Some(&b"2"[..]));
        assert_eq!(url_param(b"x=1?b=2", b"b"), Some(&b"2"[..]));
        assert_eq!(url_param(b"ab=1&b=", b"b"), Some(&b""[..]));
        assert_eq!(url_param(b"b&c=1", b"b"), None);
        assert_eq!(url_param(b"B=1", b"b"), None);
        assert_eq!(url_param(b"a=1", b""), None);
    }

    #[test]
    fn cookie_value_returns_the_last_occurrence_of_the_name() {
        assert_eq!(cookie_value(b"a=1; b=2", b"b"), Some(&b"2"[..]));
        assert_eq!(cookie_value(b"a=1; b=2; a=3", b"a"), Some(&b"3"[..]));
        assert_eq!(cookie_value(b" a = \"q\" ", b"a"), Some(&b"\"q\""[..]));
        assert_eq!(cookie_value(b"ab=1", b"a"), None);
        assert_eq!(cookie_value(b"a", b"a"), None);
        assert_eq!(cookie_value(b"a=", b"a"), Some(&b""[..]));
    }

    #[test]
    fn tokens_are_found_case_insensitively() {
        assert!(has_token(b"keep-alive, Upgrade", b"upgrade"));
        assert!(!has_token(b"upgraded", b"upgrade"));
    }
}
