//! The CGI response head a script writes at the start of `STDOUT`: header lines, a blank line,
//! then the body. There is no status line: as HAProxy 2.6 reads it (`h1_postparse_res_hdrs`
//! for FastCGI), a `Status: 404 Not Found` field gives the status, a `Location` field makes it
//! `302 Moved Temporarily` (the later of the two wins), and without either it is `200 OK`.
//! The fields are kept as written, `Status` included.

/// Why a head cannot be an HTTP response head (the engine answers 502).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// A field name is empty or has a byte that is not a token character, at this offset.
    Name(usize),
    /// A line has no colon, at this offset.
    NoColon(usize),
    /// A field value has a control byte (NUL, a bare CR...) or a folded line, at this offset.
    Value(usize),
}

/// A parsed head: the status, its reason, the fields, and the head's length in the buffer
/// (the blank line included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head<'a> {
    pub status: u16,
    pub reason: &'a [u8],
    pub fields: Vec<(&'a [u8], &'a [u8])>,
    pub len: usize,
}

/// Parses the head at the front of `buf`: `Ok(None)` until its blank line has arrived.
pub fn parse(buf: &[u8]) -> Result<Option<Head<'_>>, HeadError> {
    let mut fields = Vec::new();
    let mut at = 0;
    let (mut status, mut reason): (u16, &[u8]) = (0, b"");
    loop {
        let Some(nl) = buf[at..].iter().position(|&b| b == b'\n') else { return Ok(None) };
        let end = at + nl;
        let line = &buf[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let next = end + 1;
        if line.is_empty() {
            if status == 0 {
                (status, reason) = (200, b"OK");
            }
            return Ok(Some(Head { status, reason, fields, len: next }));
        }
        if matches!(line[0], b' ' | b'\t') {
            return Err(HeadError::Value(at));
        }
        let colon = line.iter().position(|&b| b == b':').ok_or(HeadError::NoColon(at))?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| fulcrum_http::is_tchar(b)) {
            return Err(HeadError::Name(at));
        }
        let raw = &line[colon + 1..];
        if let Some(bad) = raw.iter().position(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(HeadError::Value(at + colon + 1 + bad));
        }
        let value = trim(raw);
        if name.eq_ignore_ascii_case(b"status") {
            (status, reason) = status_value(value);
        } else if name.eq_ignore_ascii_case(b"location") {
            (status, reason) = (302, b"Moved Temporarily");
        }
        fields.push((name, value));
        at = next;
    }
}

/// HAProxy's `http_parse_status_val`: the digits before the first blank (`strl2ui`: a
/// non-digit ends them, none gives 0, and 0 means `200 OK` in the end), then the reason.
fn status_value(v: &[u8]) -> (u16, &[u8]) {
    let word = v.iter().position(|&b| b == b' ' || b == b'\t').unwrap_or(v.len());
    let mut code: u32 = 0;
    for &b in v[..word].iter().take_while(|b| b.is_ascii_digit()) {
        code = code.saturating_mul(10).saturating_add(u32::from(b - b'0'));
    }
    let reason = trim(&v[word..]);
    (u16::try_from(code).unwrap_or(0), reason)
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_location_and_the_default() {
        let h = parse(b"Content-type: text/html\r\nX-Powered-By: PHP\r\n\r\nbody")
            .expect("ok")
            .expect("whole");
        assert_eq!((h.status, h.reason, h.fields.len(), h.len), (200, &b"OK"[..], 2, 46));
        let h = parse(b"Status: 404 Not Found\nContent-Type: text/plain\n\n")
            .expect("ok")
            .expect("whole");
        assert_eq!((h.status, h.reason), (404, &b"Not Found"[..]));
        assert_eq!(h.fields[0], (&b"Status"[..], &b"404 Not Found"[..]));
        let h = parse(b"Location: /next\r\n\r\n").expect("ok").expect("whole");
        assert_eq!((h.status, h.reason), (302, &b"Moved Temporarily"[..]));
        // The later field wins, as in HAProxy's loop.
        let h = parse(b"Location: /x\r\nStatus: 301\r\n\r\n").expect("ok").expect("whole");
        assert_eq!((h.status, h.reason), (301, &b""[..]));
        let h = parse(b"Status: bogus\r\n\r\n").expect("ok").expect("whole");
        assert_eq!(h.status, 200);
    }

    #[test]
    fn incomplete_and_invalid_heads() {
        assert_eq!(parse(b"Content-Type: text/html\r\n"), Ok(None));
        assert_eq!(parse(b""), Ok(None));
        assert_eq!(parse(b"no colon here\r\n\r\n"), Err(HeadError::NoColon(0)));
        assert_eq!(parse(b"Bad Name: x\r\n\r\n"), Err(HeadError::Name(0)));
        assert_eq!(parse(b"A: b\r\n folded\r\n\r\n"), Err(HeadError::Value(6)));
        assert_eq!(parse(b"A: b\0c\r\n\r\n"), Err(HeadError::Value(4)));
    }
}
