//! HTTP dates (RFC 9110 5.6.7) read as HAProxy's `parse_http_date` reads them: the preferred
//! IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
//! (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`). Must not
//! touch: clocks (callers compare the seconds with theirs).

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];
const DAYS: [&[u8; 3]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];

/// Seconds since the Unix epoch of an HTTP date, or `None` when it is none of the three forms.
pub fn parse(v: &[u8]) -> Option<i64> {
    let v = v.trim_ascii();
    let day = v.get(..3)?;
    DAYS.iter().position(|d| day == &d[..])?;
    match v.get(3)? {
        b',' => imf_fixdate(v.get(4..)?),
        b' ' => asctime(v.get(4..)?),
        _ => rfc850(v),
    }
}

/// ` 06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(v: &[u8]) -> Option<i64> {
    let v = v.strip_prefix(b" ")?;
    if v.len() != 24 || v[2] != b' ' || v[6] != b' ' || v[11] != b' ' || &v[20..] != b" GMT" {
        return None;
    }
    let d = num(&v[..2])?;
    let m = month(&v[3..6])?;
    let y = num(&v[7..11])?;
    let (h, mi, s) = clock(&v[12..20])?;
    epoch(y, m, d, h, mi, s)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn rfc850(v: &[u8]) -> Option<i64> {
    let comma = v.iter().position(|&b| b == b',')?;
    let v = v.get(comma + 1..)?.strip_prefix(b" ")?;
    if v.len() != 22 || v[2] != b'-' || v[6] != b'-' || v[9] != b' ' || &v[18..] != b" GMT" {
        return None;
    }
    let d = num(&v[..2])?;
    let m = month(&v[3..6])?;
    let yy = num(&v[7..9])?;
    // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
    let y = if yy < 70 { 2000 + yy } else { 1900 + yy };
    let (h, mi, s) = clock(&v[10..18])?;
    epoch(y, m, d, h, mi, s)
}

/// `Nov  6 08:49:37 1994`
fn asctime(v: &[u8]) -> Option<i64> {
    if v.len() != 20 || v[3] != b' ' || v[6] != b' ' || v[15] != b' ' {
        return None;
    }
    let m = month(&v[..3])?;
    let d = match v[4] {
        b' ' => num(&v[5..6])?,
        _ => num(&v[4..6])?,
    };
    let (h, mi, s) = clock(&v[7..15])?;
    let y = num(&v[16..20])?;
    epoch(y, m, d, h, mi, s)
}

fn num(d: &[u8]) -> Option<i64> {
    d.iter().try_fold(0i64, |n, &b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
}

fn month(m: &[u8]) -> Option<i64> {
    MONTHS.iter().position(|x| m == &x[..]).map(|i| i as i64 + 1)
}

/// `08:49:37`
fn clock(t: &[u8]) -> Option<(i64, i64, i64)> {
    if t[2] != b':' || t[5] != b':' {
        return None;
    }
    Some((num(&t[..2])?, num(&t[3..5])?, num(&t[6..8])?))
}

fn epoch(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    if !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_three_forms_of_one_date_agree() {
        let t = Some(784_111_777);
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), t);
        assert_eq!(parse(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse(b"Sat, 28 Nov 2026 10:00:00 GMT"), Some(1_795_860_000));
    }

    #[test]
    fn malformed_dates_are_none() {
        for bad in [
            &b""[..],
            b"yesterday",
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Foo 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1994 25:49:37 GMT",
            b"Xyz, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
