//! The dates of log lines, as HAProxy writes them: `%t` (local, milliseconds), `%T` (GMT),
//! `%Tl` (local with its offset), and the syslog headers' times. The broken-down time of the
//! current second is kept per worker (a `worker` slot), so a line costs no `localtime_r` call (nor its lock)
//! after the first of each second.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sys::LocalTime;
use crate::worker::{Id, Slot};

pub const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// The local broken-down time of the last second asked for.
static LAST: Slot<Cell<(u64, LocalTime)>> =
    Slot::new(Id::Dates, || Cell::new((u64::MAX, LocalTime::default())));

/// `t` in the machine's time zone (cached per second and thread).
pub fn local(t: SystemTime) -> LocalTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let mut lt = LAST.with(|l| {
        let (s, lt) = l.get();
        if s == secs {
            lt
        } else {
            let lt = crate::sys::local_time(t);
            l.set((secs, lt));
            lt
        }
    });
    lt.micros = d.subsec_micros();
    lt
}

/// `t` in UTC.
pub fn gmt(t: SystemTime) -> LocalTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    LocalTime {
        year: year as i32,
        month: (month - 1) as u32,
        day: day as u32,
        hour: (rem / 3600) as u32,
        min: (rem % 3600 / 60) as u32,
        sec: (rem % 60) as u32,
        micros: d.subsec_micros(),
        utc_offset_secs: 0,
    }
}

fn push_num(out: &mut Vec<u8>, n: u32, width: usize) {
    let mut buf = [b'0'; 10];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = buf.len() - i;
    for _ in digits..width {
        out.push(b'0');
    }
    out.extend_from_slice(&buf[i..]);
}

/// `dd/Mon/yyyy:HH:MM:SS`
fn day_time(out: &mut Vec<u8>, t: &LocalTime) {
    day_time_with(out, t, b'/', b':');
}

/// The day, month, year and time, the date's parts separated by `date`, the time by `time`.
fn day_time_with(out: &mut Vec<u8>, t: &LocalTime, date: u8, time: u8) {
    push_num(out, t.day, 2);
    out.push(date);
    out.extend_from_slice(MONTHS[(t.month as usize).min(11)].as_bytes());
    out.push(date);
    push_num(out, t.year.max(0) as u32, 4);
    out.push(time);
    push_num(out, t.hour, 2);
    out.push(b':');
    push_num(out, t.min, 2);
    out.push(b':');
    push_num(out, t.sec, 2);
}

/// `%t`, `%tr`: `21/Nov/2026:10:11:12.345`, local time.
pub fn log_date(out: &mut Vec<u8>, t: SystemTime) {
    let lt = local(t);
    day_time(out, &lt);
    out.push(b'.');
    push_num(out, lt.micros / 1000, 3);
}

/// `%T`, `%trg`: `21/Nov/2026:10:11:12 +0000`.
pub fn gmt_date(out: &mut Vec<u8>, t: SystemTime) {
    day_time(out, &gmt(t));
    out.extend_from_slice(b" +0000");
}

/// `%Tl`, `%trl`: `21/Nov/2026:10:11:12 +0100`, local time.
pub fn local_date(out: &mut Vec<u8>, t: SystemTime) {
    let lt = local(t);
    day_time(out, &lt);
    let off = lt.utc_offset_secs;
    out.push(b' ');
    out.push(if off < 0 { b'-' } else { b'+' });
    let off = off.unsigned_abs() as u32;
    push_num(out, off / 3600, 2);
    push_num(out, off % 3600 / 60, 2);
}

/// The `http_date` converter: `Sun, 06 Nov 1994 08:49:37 GMT` for `secs` since the epoch
/// (none before it).
pub fn http_date(out: &mut Vec<u8>, secs: i64) {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let secs = secs.max(0) as u64;
    let t = gmt(UNIX_EPOCH + std::time::Duration::from_secs(secs));
    out.extend_from_slice(DAYS[(secs / 86_400 % 7) as usize].as_bytes());
    out.extend_from_slice(b", ");
    day_time_with(out, &t, b' ', b' ');
    out.extend_from_slice(b" GMT");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn http_dates_are_imf_fixdates_that_read_back() {
        let mut out = Vec::new();
        http_date(&mut out, 784_111_777);
        assert_eq!(out, b"Sun, 06 Nov 1994 08:49:37 GMT");
        for t in [0, 951_782_400, 1_795_860_000, 4_102_444_799] {
            out.clear();
            http_date(&mut out, t);
            assert_eq!(
                fulcrum_http::date::parse(&out),
                Some(t),
                "{}",
                String::from_utf8_lossy(&out)
            );
        }
    }

    #[test]
    fn gmt_dates_are_written_as_haproxy_does() {
        let mut s = Vec::new();
        gmt_date(&mut s, UNIX_EPOCH + Duration::from_millis(1_795_259_472_345));
        assert_eq!(s, b"21/Nov/2026:11:11:12 +0000");
        let mut s = Vec::new();
        gmt_date(&mut s, UNIX_EPOCH + Duration::from_secs(951_782_400)); // 2000-02-29
        assert_eq!(s, b"29/Feb/2000:00:00:00 +0000");
    }

    #[test]
    fn local_dates_follow_the_cached_second_and_keep_milliseconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_259_472_345);
        let lt = crate::sys::local_time(t);
        let mut a = Vec::new();
        log_date(&mut a, t);
        let mut b = Vec::new();
        log_date(&mut b, t + Duration::from_millis(500));
        assert_eq!(&a[a.len() - 4..], b".345");
        assert_eq!(&b[b.len() - 4..], b".845");
        assert_eq!(a[..a.len() - 4], b[..b.len() - 4], "same second from the cache");
        let mut l = Vec::new();
        local_date(&mut l, t);
        let sign = if lt.utc_offset_secs < 0 { '-' } else { '+' };
        let off = lt.utc_offset_secs.unsigned_abs();
        let want = format!(" {sign}{:02}{:02}", off / 3600, off % 3600 / 60);
        assert!(String::from_utf8_lossy(&l).ends_with(&want), "{l:?}");
    }
}
