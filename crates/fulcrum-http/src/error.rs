//! The codec's error types: why a head was rejected (`HeadError`, with HAProxy 2.6's status for
//! a request), why an edit was refused (`EditError`), why a chunked body is invalid
//! (`ChunkError`). Owns no parsing logic.

use std::fmt;

/// Why a message head was rejected.
///
/// For a request the engine answers [`HeadError::request_status`] (checked against HAProxy 2.6:
/// 400 for everything but [`HeadError::UnsupportedTransferCoding`]); for a response it answers
/// 502 Bad Gateway, as HAProxy does for every invalid response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeadError {
    /// The request line did not end within `Limits::max_head` bytes. HAProxy 2.6 answers
    /// **400**, not 414 (verified: a 16.5 kB URI, with or without its line end, gets 400).
    UriTooLong,
    /// The head did not end within `Limits::max_head` bytes. HAProxy 2.6 answers **400**, not
    /// 431 (verified: one 16.5 kB header or 500 small ones get 400).
    HeadTooLarge,
    /// More than `Limits::max_headers - 1` header fields. HAProxy 2.6 answers **400**: with
    /// `tune.http.maxhdr 101` it takes 100 fields and rejects 101, since one slot of its header
    /// table holds the end-of-headers marker.
    TooManyHeaders,
    /// The method is empty or has a byte that is not a `tchar`, or is not followed by one SP.
    BadMethod,
    /// The request-target is empty, has a byte outside 0x21..=0x7E or a `#`, or its form does not
    /// suit the method (CONNECT takes only authority-form `host:port`; other methods take
    /// origin-form, absolute-form or `*`).
    BadTarget,
    /// The version is not `HTTP/1.0` or `HTTP/1.x` (x >= 1, taken as HTTP/1.1), or is missing
    /// (HTTP/0.9 request line).
    BadVersion,
    /// A header line has an empty name, a byte that is not a `tchar` in its name, or no colon.
    BadHeaderName,
    /// A header value holds a control byte other than HTAB (NUL, DEL, ...).
    BadHeaderValue,
    /// A CR not followed by LF.
    BareCr,
    /// A header line (or the first line after the start line) begins with SP or HTAB.
    ObsFold,
    /// Whitespace between a header name and its colon.
    SpaceBeforeColon,
    /// A Content-Length value that is not a list of digits, or above 2^63-1.
    BadContentLength,
    /// Content-Length values (in one list or several headers) that differ.
    ConflictingContentLength,
    /// Transfer-Encoding is empty, names `chunked` twice, or does not end with `chunked`.
    BadTransferEncoding,
    /// Transfer-Encoding ends with `chunked` but names another coding too (`gzip, chunked`).
    /// HAProxy 2.6 answers **422 Unprocessable Content** to such a request (verified) and 502
    /// to such a response.
    UnsupportedTransferCoding,
    /// An HTTP/1.0 GET, HEAD or DELETE request announces a body (a Content-Length above 0, or
    /// chunked). HAProxy 2.6 answers **413** unless `h1-accept-payload-with-any-method` is set
    /// (see [`crate::Head::set_any_method_payload`]).
    PayloadWithMethod,
    /// A request has more than one Host header (HAProxy 2.6 merges the same host again; Fulcrum
    /// does so only with `option accept-invalid-http-request`).
    DuplicateHost,
    /// The Host header holds a blank, a control byte or a delimiter of another URI part, or
    /// differs from the authority of an absolute-form or authority-form target.
    BadHost,
    /// An HTTP/1.1 request without Host (RFC 9112 3.2: 400; HAProxy 2.6 forwards it).
    MissingHost,
    /// `Connection: upgrade` with `Upgrade: websocket` but no `Sec-WebSocket-Key` (request) or
    /// a 101 response without `Sec-WebSocket-Accept`.
    BadWebSocketHandshake,
    /// The status line is not `HTTP-version SP 3DIGIT [SP reason]` with a code in 100..=999, or
    /// its reason holds a control byte.
    BadStatus,
}

impl HeadError {
    /// The status HAProxy 2.6 answers to a request rejected for this reason.
    pub fn request_status(self) -> u16 {
        match self {
            HeadError::UnsupportedTransferCoding => 422,
            HeadError::PayloadWithMethod => 413,
            _ => 400,
        }
    }
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            HeadError::UriTooLong => "request line too long",
            HeadError::HeadTooLarge => "message head too large",
            HeadError::TooManyHeaders => "too many header fields",
            HeadError::BadMethod => "invalid method",
            HeadError::BadTarget => "invalid request target",
            HeadError::BadVersion => "invalid or unsupported HTTP version",
            HeadError::BadHeaderName => "invalid header field name",
            HeadError::BadHeaderValue => "invalid byte in header field value",
            HeadError::BareCr => "CR not followed by LF",
            HeadError::ObsFold => "obsolete line folding",
            HeadError::SpaceBeforeColon => "whitespace between header field name and colon",
            HeadError::BadContentLength => "invalid Content-Length",
            HeadError::ConflictingContentLength => "conflicting Content-Length values",
            HeadError::BadTransferEncoding => "invalid Transfer-Encoding",
            HeadError::UnsupportedTransferCoding => "unsupported transfer coding",
            HeadError::PayloadWithMethod => "HTTP/1.0 GET, HEAD or DELETE request with a body",
            HeadError::DuplicateHost => "several Host headers",
            HeadError::BadHost => "invalid Host, or Host differs from the target's authority",
            HeadError::MissingHost => "HTTP/1.1 request without Host",
            HeadError::BadWebSocketHandshake => "WebSocket upgrade without its key",
            HeadError::BadStatus => "invalid status line",
        };
        f.write_str(text)
    }
}

impl std::error::Error for HeadError {}

/// Why an edit of a [`crate::Head`] was refused. A refused edit leaves the head unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EditError {
    /// A request edit on a response head, or the reverse, or an edit of an empty head.
    WrongKind,
    /// A header name that is empty or not a token.
    BadName,
    /// A header value with CR, LF, NUL or another control byte but HTAB.
    BadValue,
    /// A method that is empty, not a token, or unfit for the current target's form.
    BadMethod,
    /// A target, path or query with a forbidden byte, or of a form unfit for the method.
    BadTarget,
    /// A status code outside 100..=999.
    BadStatus,
    /// A reason phrase with a control byte.
    BadReason,
    /// `set_header_value_at` with an index past the last header.
    NoSuchHeader,
    /// The edit would give both Content-Length and Transfer-Encoding.
    ContentLengthWithTransferEncoding,
    /// The head after the edit would be rejected by the parser for this reason.
    Invalid(HeadError),
    /// The head's byte store would exceed 4 GiB.
    TooLarge,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::WrongKind => f.write_str("edit does not apply to this kind of message"),
            EditError::BadName => f.write_str("invalid header field name"),
            EditError::BadValue => f.write_str("invalid header field value"),
            EditError::BadMethod => f.write_str("invalid method"),
            EditError::BadTarget => f.write_str("invalid request target"),
            EditError::BadStatus => f.write_str("invalid status code"),
            EditError::BadReason => f.write_str("invalid reason phrase"),
            EditError::NoSuchHeader => f.write_str("no header at this index"),
            EditError::ContentLengthWithTransferEncoding => {
                f.write_str("both Content-Length and Transfer-Encoding")
            }
            EditError::Invalid(e) => write!(f, "edit would make the head invalid: {e}"),
            EditError::TooLarge => f.write_str("head too large"),
        }
    }
}

impl std::error::Error for EditError {}

/// Why a chunked body was rejected (request: 400, response: 502, as HAProxy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkError {
    /// A chunk-size that is empty or has a byte that is not a hex digit.
    BadSize,
    /// A chunk-size above 2^63-1 (HAProxy's limit).
    SizeOverflow,
    /// Bytes after the chunk-size that are not `*( BWS ";" BWS name [ BWS "=" BWS value ] )`.
    BadExtension,
    /// Chunk data not followed by CRLF (or LF).
    MissingCrlf,
    /// A CR not followed by LF.
    BareCr,
    /// A trailer line that is not a valid header field.
    BadTrailer,
    /// A chunk-size line or trailer line longer than [`crate::MAX_CHUNK_LINE`].
    LineTooLong,
    /// Trailer fields longer than [`crate::MAX_TRAILERS`] in all.
    TrailersTooLarge,
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            ChunkError::BadSize => "invalid chunk size",
            ChunkError::SizeOverflow => "chunk size too large",
            ChunkError::BadExtension => "invalid chunk extension",
            ChunkError::MissingCrlf => "chunk data not followed by CRLF",
            ChunkError::BareCr => "CR not followed by LF",
            ChunkError::BadTrailer => "invalid trailer field",
            ChunkError::LineTooLong => "chunk size or trailer line too long",
            ChunkError::TrailersTooLarge => "trailers too large",
        };
        f.write_str(text)
    }
}

impl std::error::Error for ChunkError {}
