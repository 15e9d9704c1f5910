//! FastCGI's wire format, as HAProxy 2.6 speaks it to a responder (PHP-FPM...): record headers,
//! the records a request is made of (`BEGIN_REQUEST`, `PARAMS`, `STDIN`, `GET_VALUES`), the
//! records a response is read from (`STDOUT`, `STDERR`, `END_REQUEST`, `GET_VALUES_RESULT`),
//! name-value pairs, the CGI parameters HAProxy derives from a request ([`cgi`]), and the CGI
//! response head a script writes on `STDOUT` (`Status:`, `Location:`, [`head`]).
//!
//! Sans-I/O: bytes in, bytes out, no allocation per record read. Everything a server sends
//! goes through [`Record::parse`], [`decode_pairs`] or [`head::parse`], which the fuzz targets
//! (`fuzz/fuzz_targets/fcgi_*.rs`, invariants in [`fuzzing`]) hammer. Must not touch: sockets,
//! the transaction (the engine moves these bytes).

pub mod cgi;
pub mod fuzzing;
pub mod head;

/// The only protocol version (`FCGI_VERSION_1`).
pub const VERSION: u8 = 1;
/// A record header's size.
pub const HEADER_LEN: usize = 8;
/// The largest content one record carries.
pub const MAX_CONTENT: usize = 65535;
/// `FCGI_RESPONDER`: the role of every request HAProxy makes.
pub const ROLE_RESPONDER: u16 = 1;
/// `FCGI_KEEP_CONN`: the application keeps the connection open after the request.
pub const KEEP_CONN: u8 = 1;

/// Record types (FastCGI 1.0, section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    BeginRequest = 1,
    AbortRequest = 2,
    EndRequest = 3,
    Params = 4,
    Stdin = 5,
    Stdout = 6,
    Stderr = 7,
    Data = 8,
    GetValues = 9,
    GetValuesResult = 10,
    UnknownType = 11,
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            1 => BeginRequest,
            2 => AbortRequest,
            3 => EndRequest,
            4 => Params,
            5 => Stdin,
            6 => Stdout,
            7 => Stderr,
            8 => Data,
            9 => GetValues,
            10 => GetValuesResult,
            11 => UnknownType,
            _ => return None,
        })
    }
}

/// What a peer sent that is not FastCGI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A record header's version is not 1.
    Version(u8),
    /// A record type no version of the protocol has.
    Type(u8),
    /// A name-value pair runs past its record, or an `END_REQUEST` body is short.
    Truncated,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Version(v) => write!(f, "unsupported FCGI version {v}"),
            Error::Type(t) => write!(f, "unknown FCGI record type {t}"),
            Error::Truncated => f.write_str("truncated FCGI record content"),
        }
    }
}

impl std::error::Error for Error {}

/// One whole record read from the front of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub kind: Kind,
    /// The request it belongs to (0: the connection's management records).
    pub id: u16,
    pub content: &'a [u8],
    /// Its length in the buffer, header and padding included.
    pub len: usize,
}

impl<'a> Record<'a> {
    /// The record at the front of `buf`: `Ok(None)` until all of it (padding included) is
    /// there.
    pub fn parse(buf: &'a [u8]) -> Result<Option<Record<'a>>, Error> {
        let Some(h) = buf.get(..HEADER_LEN) else { return Ok(None) };
        if h[0] != VERSION {
            return Err(Error::Version(h[0]));
        }
        let kind = Kind::from_u8(h[1]).ok_or(Error::Type(h[1]))?;
        let id = u16::from_be_bytes([h[2], h[3]]);
        let clen = usize::from(u16::from_be_bytes([h[4], h[5]]));
        let len = HEADER_LEN + clen + usize::from(h[6]);
        if buf.len() < len {
            return Ok(None);
        }
        Ok(Some(Record { kind, id, content: &buf[HEADER_LEN..HEADER_LEN + clen], len }))
    }
}

/// Appends a record header (no padding).
pub fn header(out: &mut Vec<u8>, kind: Kind, id: u16, len: usize) {
    let len = u16::try_from(len).unwrap_or(u16::MAX);
    let [i1, i0] = id.to_be_bytes();
    let [l1, l0] = len.to_be_bytes();
    out.extend_from_slice(&[VERSION, kind as u8, i1, i0, l1, l0, 0, 0]);
}

/// Appends `BEGIN_REQUEST` for request `id` in the responder role.
pub fn begin_request(out: &mut Vec<u8>, id: u16, keep_conn: bool) {
    header(out, Kind::BeginRequest, id, 8);
    let [r1, r0] = ROLE_RESPONDER.to_be_bytes();
    out.extend_from_slice(&[r1, r0, if keep_conn { KEEP_CONN } else { 0 }, 0, 0, 0, 0, 0]);
}

/// Appends `data` as records of stream `kind` (`PARAMS`, `STDIN`), cut at [`MAX_CONTENT`].
/// Empty data appends nothing: [`end_stream`] closes a stream.
pub fn stream(out: &mut Vec<u8>, kind: Kind, id: u16, data: &[u8]) {
    for part in data.chunks(MAX_CONTENT) {
        header(out, kind, id, part.len());
        out.extend_from_slice(part);
    }
}

/// Appends the empty record that ends stream `kind`.
pub fn end_stream(out: &mut Vec<u8>, kind: Kind, id: u16) {
    header(out, kind, id, 0);
}

/// Appends a name-value pair's lengths (1 byte under 128, else 4 with the high bit set).
fn length(out: &mut Vec<u8>, n: usize) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        out.extend_from_slice(&(n as u32 | 0x8000_0000).to_be_bytes());
    }
}

/// Appends a name-value pair as written.
pub fn pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    length(out, name.len());
    length(out, value.len());
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

/// Appends a CGI parameter as HAProxy encodes one: its name upper-cased, every byte that is
/// not a letter or digit made `_` (`x-forwarded-for` becomes `X_FORWARDED_FOR`).
pub fn param(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    length(out, name.len());
    length(out, value.len());
    out.extend(name.iter().map(|&b| {
        if b.is_ascii_alphanumeric() {
            b.to_ascii_uppercase()
        } else {
            b'_'
        }
    }));
    out.extend_from_slice(value);
}

/// A name and its value, as a record carries them.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The name-value pairs of a record's content (`GET_VALUES_RESULT`, `PARAMS`).
pub fn decode_pairs(mut content: &[u8]) -> Result<Vec<Pair<'_>>, Error> {
    fn len(b: &mut &[u8]) -> Result<usize, Error> {
        let first = *b.first().ok_or(Error::Truncated)?;
        if first < 0x80 {
            *b = &b[1..];
            return Ok(usize::from(first));
        }
        let four = b.get(..4).ok_or(Error::Truncated)?;
        let n = u32::from_be_bytes([four[0] & 0x7f, four[1], four[2], four[3]]);
        *b = &b[4..];
        Ok(n as usize)
    }
    let mut out = Vec::new();
    while !content.is_empty() {
        let n = len(&mut content)?;
        let v = len(&mut content)?;
        let total = n.checked_add(v).ok_or(Error::Truncated)?;
        if content.len() < total {
            return Err(Error::Truncated);
        }
        out.push((&content[..n], &content[n..total]));
        content = &content[total..];
    }
    Ok(out)
}

/// Appends `GET_VALUES` asking for `names` (`FCGI_MPXS_CONNS`, `FCGI_MAX_REQS`...).
pub fn get_values(out: &mut Vec<u8>, names: &[&str]) {
    let mut body = Vec::new();
    for n in names {
        pair(&mut body, n.as_bytes(), b"");
    }
    header(out, Kind::GetValues, 0, body.len());
    out.extend_from_slice(&body);
}

/// Appends `ABORT_REQUEST` for request `id`.
pub fn abort_request(out: &mut Vec<u8>, id: u16) {
    header(out, Kind::AbortRequest, id, 0);
}

/// What a `GET_VALUES_RESULT` says of multiplexing: `FCGI_MPXS_CONNS` (`Some(true)` when
/// `"1"`, as HAProxy reads it) and `FCGI_MAX_REQS` (HAProxy's `strl2ui`: its leading digits),
/// each `None` when not named; `Err` when the pairs are malformed.
pub fn values_result(content: &[u8]) -> Result<(Option<bool>, Option<u32>), Error> {
    let (mut mpxs, mut max) = (None, None);
    for (n, v) in decode_pairs(content)? {
        if n.eq_ignore_ascii_case(b"FCGI_MPXS_CONNS") {
            mpxs = Some(v == b"1");
        } else if n.eq_ignore_ascii_case(b"FCGI_MAX_REQS") {
            let digits = v.iter().take_while(|b| b.is_ascii_digit());
            max = Some(
                digits.fold(0u32, |a, d| a.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))),
            );
        }
    }
    Ok((mpxs, max))
}

/// `FCGI_END_REQUEST`'s body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndRequest {
    /// The application's exit status.
    pub app_status: u32,
    /// 0: request complete; 1: cannot multiplex; 2: overloaded; 3: unknown role.
    pub protocol_status: u8,
}

impl EndRequest {
    pub fn parse(content: &[u8]) -> Result<EndRequest, Error> {
        let b = content.get(..5).ok_or(Error::Truncated)?;
        Ok(EndRequest {
            app_status: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            protocol_status: b[4],
        })
    }

    /// What a protocol status other than 0 means, as HAProxy names it.
    pub fn protocol_error(&self) -> Option<&'static str> {
        match self.protocol_status {
            0 => None,
            1 => Some("cannot multiplex connection"),
            2 => Some("overloaded"),
            3 => Some("unknown role"),
            _ => Some("unknown protocol status"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_begin_params_and_stdin_records() {
        let mut out = Vec::new();
        begin_request(&mut out, 1, true);
        let mut p = Vec::new();
        param(&mut p, b"request_method", b"GET");
        param(&mut p, b"x-forwarded-for", &[b'a'; 200]);
        stream(&mut out, Kind::Params, 1, &p);
        end_stream(&mut out, Kind::Params, 1);
        end_stream(&mut out, Kind::Stdin, 1);
        let r = Record::parse(&out).expect("ok").expect("whole");
        assert_eq!(
            (r.kind, r.id, r.content),
            (Kind::BeginRequest, 1, &[0, 1, 1, 0, 0, 0, 0, 0][..])
        );
        let rest = &out[r.len..];
        let r = Record::parse(rest).expect("ok").expect("whole");
        assert_eq!(r.kind, Kind::Params);
        let pairs = decode_pairs(r.content).expect("pairs");
        assert_eq!(pairs[0], (&b"REQUEST_METHOD"[..], &b"GET"[..]));
        assert_eq!((pairs[1].0, pairs[1].1.len()), (&b"X_FORWARDED_FOR"[..], 200));
        // 200 needs the four-byte length.
        assert_eq!(&r.content[19..24], &[15, 0x80, 0, 0, 200]);
        let rest = &rest[r.len..];
        assert_eq!(rest, [1, 4, 0, 1, 0, 0, 0, 0, 1, 5, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn long_streams_are_cut_at_the_record_limit() {
        let mut out = Vec::new();
        stream(&mut out, Kind::Stdin, 3, &vec![7u8; 70_000]);
        let a = Record::parse(&out).expect("ok").expect("whole");
        assert_eq!(a.content.len(), MAX_CONTENT);
        let b = Record::parse(&out[a.len..]).expect("ok").expect("whole");
        assert_eq!((b.content.len(), a.len + b.len), (70_000 - MAX_CONTENT, out.len()));
    }

    #[test]
    fn partial_records_wait_and_bad_ones_are_refused() {
        // STDOUT, id 1, 3 bytes of content and 5 of padding.
        let rec = [1, 6, 0, 1, 0, 3, 5, 0, b'a', b'b', b'c', 0, 0, 0, 0, 0];
        for cut in 0..rec.len() {
            assert_eq!(Record::parse(&rec[..cut]), Ok(None), "{cut}");
        }
        let r = Record::parse(&rec).expect("ok").expect("whole");
        assert_eq!((r.content, r.len), (&b"abc"[..], 16));
        assert_eq!(Record::parse(&[2, 6, 0, 1, 0, 0, 0, 0]), Err(Error::Version(2)));
        assert_eq!(Record::parse(&[1, 12, 0, 1, 0, 0, 0, 0]), Err(Error::Type(12)));
        assert_eq!(decode_pairs(&[3, 1, b'a']), Err(Error::Truncated));
        assert_eq!(decode_pairs(&[0x80, 0, 0]), Err(Error::Truncated));
    }

    #[test]
    fn values_result_as_haproxy_reads_it() {
        let mut c = Vec::new();
        pair(&mut c, b"FCGI_MAX_CONNS", b"7");
        pair(&mut c, b"fcgi_mpxs_conns", b"1");
        pair(&mut c, b"FCGI_MAX_REQS", b"50x");
        assert_eq!(values_result(&c), Ok((Some(true), Some(50))));
        let mut c = Vec::new();
        pair(&mut c, b"FCGI_MPXS_CONNS", b"yes");
        assert_eq!(values_result(&c), Ok((Some(false), None)));
        assert_eq!(values_result(&[]), Ok((None, None)));
        assert!(values_result(&[3, 1, b'a']).is_err());
        let mut out = Vec::new();
        abort_request(&mut out, 3);
        assert_eq!(out, [1, 2, 0, 3, 0, 0, 0, 0]);
    }

    #[test]
    fn end_request_and_get_values() {
        let e = EndRequest::parse(&[0, 0, 1, 0, 2, 0, 0, 0]).expect("end");
        assert_eq!((e.app_status, e.protocol_error()), (256, Some("overloaded")));
        let mut out = Vec::new();
        get_values(&mut out, &["FCGI_MPXS_CONNS", "FCGI_MAX_REQS"]);
        let r = Record::parse(&out).expect("ok").expect("whole");
        assert_eq!((r.kind, r.id), (Kind::GetValues, 0));
        let names: Vec<_> =
            decode_pairs(r.content).expect("pairs").into_iter().map(|p| p.0).collect();
        assert_eq!(names, [&b"FCGI_MPXS_CONNS"[..], &b"FCGI_MAX_REQS"[..]]);
    }
}
