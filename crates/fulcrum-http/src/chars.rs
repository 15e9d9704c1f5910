//! Byte classes of RFC 9110/9112 (tchar, request-target bytes, field-value bytes, hex digits) as
//! one lookup table. Owns nothing else: no parsing state, no HAProxy policy beyond which bytes a
//! class admits.

const TCHAR: u8 = 1;
const TARGET: u8 = 2;
const VALUE: u8 = 4;
const QDTEXT: u8 = 8;

const fn classify(b: u8) -> u8 {
    let mut f = 0;
    let tchar = b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        );
    if tchar {
        f |= TCHAR;
    }
    // HAProxy 2.6 takes 0x21..=0x7E in the target, minus '#' (a fragment is never sent).
    if b >= 0x21 && b <= 0x7e && b != b'#' {
        f |= TARGET;
    }
    // field-value bytes: VCHAR, obs-text, SP and HTAB. No other CTL, no DEL.
    if b == b'\t' || (b >= 0x20 && b != 0x7f) {
        f |= VALUE;
    }
    // qdtext of a quoted-string: HTAB, SP, %x21, %x23-5B, %x5D-7E, obs-text.
    if b == b'\t' || b == b' ' || b == 0x21 || (b >= 0x23 && b <= 0x5b) || (b >= 0x5d && b != 0x7f)
    {
        f |= QDTEXT;
    }
    f
}

const fn table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = classify(i as u8);
        i += 1;
    }
    t
}

static CLASS: [u8; 256] = table();

/// `tchar` of RFC 9110 section 5.6.2: the bytes of a token (method, field name).
#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    CLASS[b as usize] & TCHAR != 0
}

/// A byte HAProxy 2.6 accepts in a request-target: 0x21..=0x7E except `#`.
#[inline]
pub(crate) fn is_target(b: u8) -> bool {
    CLASS[b as usize] & TARGET != 0
}

/// A byte allowed in a field value or a reason phrase: VCHAR, obs-text, SP, HTAB.
#[inline]
pub(crate) fn is_value(b: u8) -> bool {
    CLASS[b as usize] & VALUE != 0
}

/// `qdtext` of a quoted-string.
#[inline]
pub(crate) fn is_qdtext(b: u8) -> bool {
    CLASS[b as usize] & QDTEXT != 0
}

/// Optional whitespace (OWS/BWS): SP or HTAB.
#[inline]
pub(crate) fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Removes leading and trailing SP/HTAB.
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_ows(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_ows(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Position of the first LF.
#[inline]
pub(crate) fn find_lf(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bytes_are_those_of_rfc_9110() {
        let all: Vec<u8> = (0u8..=255).filter(|&b| is_tchar(b)).collect();
        assert_eq!(all.len(), 26 * 2 + 10 + 15);
        assert!(!is_tchar(b'(') && !is_tchar(b':') && !is_tchar(b' ') && !is_tchar(0x80));
    }

    #[test]
    fn target_bytes_exclude_controls_space_hash_del_and_non_ascii() {
        for b in [0u8, 0x1f, b' ', b'#', 0x7f, 0x80, 0xff] {
            assert!(!is_target(b), "{b:#x}");
        }
        for b in [b'/', b'?', b'"', b'<', b'{', b'|', b'^', b'`', b'\\', b'~'] {
            assert!(is_target(b), "{b:#x}");
        }
    }

    #[test]
    fn value_bytes_allow_htab_and_obs_text_but_no_other_control() {
        assert!(is_value(b'\t') && is_value(b' ') && is_value(0x80) && is_value(0xff));
        assert!(!is_value(0) && !is_value(b'\r') && !is_value(b'\n') && !is_value(0x7f));
    }

    #[test]
    fn trimming_removes_only_spaces_and_tabs_at_both_ends() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
    }
}
