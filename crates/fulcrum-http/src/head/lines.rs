//! The lines of a head checked byte by byte as they arrive: the request line, the status
//! line's version, header field lines, Content-Length values. Pure functions over slices,
//! left to right so that a partial line fails exactly where the complete one would. Must not
//! touch: the head's store (the parent module stores what these accept).

use super::*;

/// Checks `HTTP/1.x` left to right. On a partial line only the bytes present are checked.
pub(super) fn check_version(v: &[u8], complete: bool) -> Result<Option<Version>, HeadError> {
    for (k, &b) in v.iter().enumerate() {
        let ok = match k {
            0..=4 => b == b"HTTP/"[k],
            5 => b == b'1',
            6 => b == b'.',
            7 => b.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return Err(byte_error(b, HeadError::BadVersion));
        }
    }
    if !complete {
        return Ok(None);
    }
    match v {
        [_, _, _, _, _, _, _, b'0'] => Ok(Some(Version::Http10)),
        [_, _, _, _, _, _, _, _] => Ok(Some(Version::Http11)),
        _ => Err(HeadError::BadVersion),
    }
}

/// A request line's parts (offsets into the line).
pub(crate) struct RequestLine {
    pub(super) m_end: usize,
    pub(super) t_start: usize,
    pub(super) t_end: usize,
    pub(super) method: Method,
    pub(super) form: Form,
    pub(super) version: Version,
}

/// The end of a request line's method, which one SP must follow (`None`: a partial line).
fn method_end(line: &[u8], complete: bool) -> Result<Option<usize>, HeadError> {
    let m_end = line.iter().take_while(|&&b| is_tchar(b)).count();
    let Some(&b) = line.get(m_end) else {
        return if complete { Err(HeadError::BadTarget) } else { Ok(None) };
    };
    if b != b' ' || m_end == 0 {
        return Err(byte_error(b, HeadError::BadMethod));
    }
    Ok(Some(m_end))
}

/// Checks a request line (line end removed), left to right so that a partial line fails
/// exactly where the complete one would: `Ok(None)` for a partial line without a fault yet.
#[inline(always)]
pub(super) fn check_request_line(
    line: &[u8],
    complete: bool,
) -> Result<Option<RequestLine>, HeadError> {
    let m_end = line.iter().take_while(|&&b| is_tchar(b)).count();
    let Some(&b) = line.get(m_end) else {
        return if complete { Err(HeadError::BadTarget) } else { Ok(None) };
    };
    if b != b' ' || m_end == 0 {
        return Err(byte_error(b, HeadError::BadMethod));
    }
    let t_start = m_end + 1;
    let t_end = t_start + line[t_start..].iter().take_while(|&&b| is_target(b)).count();
    let Some(&b) = line.get(t_end) else {
        let e = if t_end == t_start { HeadError::BadTarget } else { HeadError::BadVersion };
        return if complete { Err(e) } else { Ok(None) };
    };
    if b != b' ' || t_end == t_start {
        return Err(byte_error(b, HeadError::BadTarget));
    }
    let method = Method::from_bytes(&line[..m_end]);
    let form = target::form(&line[t_start..t_end]);
    if !target::form_fits(method, form) {
        return Err(HeadError::BadTarget);
    }
    let Some(version) = check_version(&line[t_end + 1..], complete)? else {
        return Ok(None);
    };
    Ok(Some(RequestLine { m_end, t_start, t_end, method, form, version }))
}

/// The longest field name taken.
pub(crate) const MAX_NAME: usize = 255;

/// Checks one header or trailer line (line end removed), left to right so that a partial line
/// fails exactly where the complete one would. Complete: returns the name length and the
/// bounds of the value trimmed of OWS.
pub(crate) fn check_field_line(
    line: &[u8],
    complete: bool,
) -> Result<Option<(usize, Range<usize>)>, HeadError> {
    match line.first() {
        None if complete => return Err(HeadError::BadHeaderName),
        None => return Ok(None),
        Some(b' ' | b'\t') => return Err(HeadError::ObsFold),
        Some(_) => {}
    }
    let n = line.iter().take_while(|&&b| is_tchar(b)).count();
    // As HAProxy (its internal message keeps a name's length in a byte): longer names are
    // refused, 400 for a request, 502 for a response.
    if n > MAX_NAME {
        return Err(HeadError::BadHeaderName);
    }
    let Some(&b) = line.get(n) else {
        return if complete { Err(HeadError::BadHeaderName) } else { Ok(None) };
    };
    if b != b':' {
        return Err(match b {
            b' ' | b'\t' => HeadError::SpaceBeforeColon,
            b'\r' => HeadError::BareCr,
            _ => HeadError::BadHeaderName,
        });
    }
    if n == 0 {
        return Err(HeadError::BadHeaderName);
    }
    if let Some(&b) = line[n + 1..].iter().find(|&&b| !is_value(b)) {
        return Err(byte_error(b, HeadError::BadHeaderValue));
    }
    if !complete {
        return Ok(None);
    }
    let lead = line[n + 1..].iter().take_while(|&&b| is_ows(b)).count();
    let start = n + 1 + lead;
    let trail = line[start..].iter().rev().take_while(|&&b| is_ows(b)).count();
    Ok(Some((n, start..line.len() - trail)))
}

/// What the scan of a header line at the start of the unread bytes found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FieldScan {
    /// A whole line: its bytes are `..end` (line end excluded), the next line starts at `next`,
    /// the name is `..name` and the value, trimmed of OWS, `value`.
    Line { end: usize, next: usize, name: usize, value: Range<usize> },
    /// Not a whole line yet, and nothing wrong so far.
    Partial,
}

/// Checks one header line at the start of `w` and finds its end in the same pass (the value
/// scan stops at CR or LF, which are not value bytes). `w` does not start with the empty line
/// that ends the head. Gives what [`find_lf`] then [`check_field_line`] give (those stay for
/// trailers; a test compares the two ways).
pub(super) fn scan_field_line(w: &[u8]) -> Result<FieldScan, HeadError> {
    match w.first() {
        None => return Ok(FieldScan::Partial),
        Some(b' ' | b'\t') => return Err(HeadError::ObsFold),
        Some(_) => {}
    }
    let n = w.iter().take_while(|&&b| is_tchar(b)).count();
    if n > MAX_NAME {
        return Err(HeadError::BadHeaderName);
    }
    match w.get(n) {
        None => return Ok(FieldScan::Partial),
        Some(b':') if n > 0 => {}
        Some(b' ' | b'\t') => return Err(HeadError::SpaceBeforeColon),
        Some(b'\r') => {
            return match w.get(n + 1) {
                None => Ok(FieldScan::Partial),
                Some(b'\n') => Err(HeadError::BadHeaderName), // a line without a colon
                Some(_) => Err(HeadError::BareCr),
            };
        }
        Some(_) => return Err(HeadError::BadHeaderName),
    }
    let v = n + 1;
    let m = v + value_run(&w[v..]);
    let next = match w.get(m) {
        None => return Ok(FieldScan::Partial),
        Some(b'\n') => m + 1,
        Some(b'\r') => match w.get(m + 1) {
            None => return Ok(FieldScan::Partial),
            Some(b'\n') => m + 2,
            Some(_) => return Err(HeadError::BareCr),
        },
        Some(_) => return Err(HeadError::BadHeaderValue),
    };
    let lead = w[v..m].iter().take_while(|&&b| is_ows(b)).count();
    let start = v + lead;
    let trail = w[start..m].iter().rev().take_while(|&&b| is_ows(b)).count();
    Ok(FieldScan::Line { end: m, next, name: n, value: start..m - trail })
}

/// The faults of a field line that a lenient parse looks past: bytes in the name that are
/// not `tchar`s (HAProxy's `accept-invalid-http-*` takes any byte but LF before the colon).
pub(super) fn lenient_name(e: HeadError) -> bool {
    matches!(e, HeadError::BadHeaderName | HeadError::SpaceBeforeColon | HeadError::BareCr)
}

/// [`scan_field_line`] for a lenient parse: the name is every byte up to the first colon
/// (none may be LF, and it may not be empty or longer than [`MAX_NAME`]); the value is
/// checked as usual.
pub(super) fn scan_field_line_lenient(w: &[u8]) -> Result<FieldScan, HeadError> {
    let Some(n) = w.iter().position(|&b| b == b':' || b == b'\n') else {
        return if w.len() > MAX_NAME {
            Err(HeadError::BadHeaderName)
        } else {
            Ok(FieldScan::Partial)
        };
    };
    if w[n] == b'\n' || n == 0 || n > MAX_NAME {
        return Err(HeadError::BadHeaderName);
    }
    scan_value(w, n)
}

/// A byte of a version as a lenient parse takes it (HAProxy's `HTTP_IS_VER_TOKEN`).
pub(super) fn is_version_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'/'
}

/// HAProxy's reading of a version it did not check: HTTP/1.1 when 8 bytes long with
/// `x.y` at least 1.1 (`HTTP/2.0` too), else HTTP/1.0.
pub(super) fn version_of(v: &[u8]) -> Version {
    match v {
        [_, _, _, _, _, major, _, minor] if *major > b'1' || (*major == b'1' && *minor >= b'1') => {
            Version::Http11
        }
        _ => Version::Http10,
    }
}

/// [`check_request_line`] for a lenient parse: a target byte above 0x7F is taken, the version
/// may be anything [`is_version_char`] allows, or missing for an HTTP/0.9 `GET <target>`
/// (then HTTP/1.0, as HAProxy converts it).
pub(super) fn check_request_line_lenient(
    line: &[u8],
    complete: bool,
) -> Result<Option<RequestLine>, HeadError> {
    let Some(m_end) = method_end(line, complete)? else { return Ok(None) };
    let t_start = m_end + 1;
    let is_byte = |b: u8| is_target(b) || b >= 0x80;
    let t_end = t_start + line[t_start..].iter().take_while(|&&b| is_byte(b)).count();
    let method = Method::from_bytes(&line[..m_end]);
    let version = match line.get(t_end) {
        None if !complete => return Ok(None),
        // HTTP/0.9: GET and a target only.
        None if t_end > t_start && method == Method::Get => Version::Http10,
        None => return Err(HeadError::BadVersion),
        Some(b' ') if t_end > t_start => {
            let v = &line[t_end + 1..];
            if let Some(&b) = v.iter().find(|&&b| !is_version_char(b)) {
                return Err(byte_error(b, HeadError::BadVersion));
            }
            if !complete {
                return Ok(None);
            }
            if v.is_empty() {
                return Err(HeadError::BadVersion);
            }
            version_of(v)
        }
        Some(&b) => return Err(byte_error(b, HeadError::BadTarget)),
    };
    let form = target::form(&line[t_start..t_end]);
    if !target::form_fits(method, form) {
        return Err(HeadError::BadTarget);
    }
    Ok(Some(RequestLine { m_end, t_start, t_end, method, form, version }))
}

/// The value of the field line at the start of `w` whose name is `w[..n]` (a colon at `n`):
/// checked, its line end found, trimmed of OWS. (The lenient scan's; the strict one keeps its
/// own copy of these lines, fused with its name scan: sharing them cost the hot path ~40
/// instructions a request, measured.)
fn scan_value(w: &[u8], n: usize) -> Result<FieldScan, HeadError> {
    let v = n + 1;
    let m = v + value_run(&w[v..]);
    let next = match w.get(m) {
        None => return Ok(FieldScan::Partial),
        Some(b'\n') => m + 1,
        Some(b'\r') => match w.get(m + 1) {
            None => return Ok(FieldScan::Partial),
            Some(b'\n') => m + 2,
            Some(_) => return Err(HeadError::BareCr),
        },
        Some(_) => return Err(HeadError::BadHeaderValue),
    };
    let lead = w[v..m].iter().take_while(|&&b| is_ows(b)).count();
    let start = v + lead;
    let trail = w[start..m].iter().rev().take_while(|&&b| is_ows(b)).count();
    Ok(FieldScan::Line { end: m, next, name: n, value: start..m - trail })
}

/// Parses a received Content-Length value as HAProxy: a comma list of digit strings that must
/// all be equal, each at most 2^63-1. Returns the value and the bounds of the first element.
pub(super) fn parse_content_length(v: &[u8]) -> Result<(u64, Range<usize>), HeadError> {
    let mut value = None;
    let mut first = 0..0;
    let mut offset = 0;
    for elem in v.split(|&b| b == b',') {
        let lead = elem.iter().take_while(|&&b| is_ows(b)).count();
        let digits = trim_ows(elem);
        let n = parse_decimal(digits).ok_or(HeadError::BadContentLength)?;
        match value {
            None => {
                value = Some(n);
                first = offset + lead..offset + lead + digits.len();
            }
            Some(prev) if prev != n => return Err(HeadError::ConflictingContentLength),
            Some(_) => {}
        }
        offset += elem.len() + 1;
    }
    value.map(|n| (n, first)).ok_or(HeadError::BadContentLength)
}

/// 1 or more ASCII digits, at most `i64::MAX` (HAProxy's limit).
pub(super) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        if n > i64::MAX as u64 {
            return None;
        }
    }
    Some(n)
}
