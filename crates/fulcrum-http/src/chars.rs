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
pub fn is_tchar(b: u8) -> bool {
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

/// How many bytes at the start of `s` are field-value bytes ([`is_value`]). Eight bytes at a
/// time while none is a control byte or DEL (the usual value: printable ASCII), then byte by
/// byte: this scan also finds the line's end (CR and LF are not value bytes).
#[inline]
pub(crate) fn value_run(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(word) = s.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte below 0x20 (bytes >= 0x80 are excluded by `!x`), or a byte equal to 0x7F.
        let ctl = x.wrapping_sub(0x20 * ONES) & !x;
        let y = x ^ (0x7f * ONES);
        let del = y.wrapping_sub(ONES) & !y;
        if (ctl | del) & HIGH != 0 {
            break;
        }
        i += 8;
    }
    i + s[i..].iter().take_while(|&&b| is_value(b)).count()
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
    fn value_run_stops_at_the_first_byte_that_is_not_a_value_byte() {
        // Every byte value at every position of a 20-byte run of value bytes.
        for stop in 0u8..=255 {
            for at in 0..20 {
                let mut s = vec![b'a'; 20];
                s[at] = stop;
                let want = if is_value(stop) { 20 } else { at };
                assert_eq!(value_run(&s), want, "byte {stop:#x} at {at}");
            }
        }
        assert_eq!(value_run(b""), 0);
        let obs = b"\x80\xff text\tmore and more\xfe";
        assert_eq!(value_run(obs), obs.len());
    }

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
