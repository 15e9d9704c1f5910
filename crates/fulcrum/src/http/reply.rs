//! Responses Fulcrum builds itself from rules: `return`, `deny` with reply options, redirects,
//! `http-error` messages. Serialises them the way HAProxy does (`content-length`, and
//! `content-type` when there is a payload).
//!
//! Must not touch: sockets, rule evaluation.

/// A complete raw response: status line, `extra` headers, `content-type`/`content-length`.
pub fn raw(
    status: u16,
    content_type: Option<&str>,
    extra: &[(&[u8], &[u8])],
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + body.len());
    write_head(&mut out, status, content_type, extra, body.len());
    out.extend_from_slice(body);
    out
}

/// Appends the head of a built response (without payload).
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    extra: &[(&[u8], &[u8])],
    body_len: usize,
) {
    use std::io::Write as _;
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    for (n, v) in extra {
        out.extend_from_slice(n);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(ct) = content_type {
        if body_len > 0 {
            let _ = write!(out, "content-type: {ct}\r\n");
        }
    }
    let _ = write!(out, "content-length: {body_len}\r\n\r\n");
}

/// The standard reason phrase of a status (HAProxy's table).
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        410 => "Gone",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        421 => "Misdirected Request",
        425 => "Too Early",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_reply_has_its_length_and_type() {
        let r = raw(200, Some("text/plain"), &[(b"x-a", b"1")], b"hello");
        assert_eq!(
            r,
            b"HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello"
        );
        let r = raw(302, Some("text/plain"), &[(b"location", b"/x")], b"");
        assert_eq!(r, b"HTTP/1.1 302 Found\r\nlocation: /x\r\ncontent-length: 0\r\n\r\n");
    }
}
