//! Responses Fulcrum builds itself from rules: `return`, `deny` with reply options, redirects,
//! `http-error` messages. Serialises them the way HAProxy does (`content-length`, and
//! `content-type` when there is a payload). It also builds the statistics page's responses.
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
    let _ = write!(out, "HTTP/1.1 {status} ");
    out.extend_from_slice(crate::default_reason(status));
    out.extend_from_slice(b"\r\n");
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
