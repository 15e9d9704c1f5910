//! Room for rewrites as HAProxy counts it: a message lives in one buffer of `tune.bufsize`
//! bytes in HAProxy's internal HTX form (a 48-byte header, then blocks of 8 bytes plus their
//! payload: the start line with a 20-byte descriptor, each header field as name and value, the
//! end of headers, body data). Reading stops `tune.maxrewrite` bytes short of full; a header
//! rewrite must fit in the whole buffer. So a message whose body filled the buffer has exactly
//! `maxrewrite` bytes left for rewrites (HAProxy's 500 under `strict-mode` past them), and a
//! message without body has almost the whole buffer. Fulcrum buffers differently; this module
//! only counts as HAProxy would. Pure.
//!
//! Must not touch: the message itself.

use fulcrum_http::Head;

/// The buffer's own header (`struct htx`).
pub const HTX_HEADER: usize = 48;
/// A block's descriptor (`struct htx_blk`).
const BLOCK: usize = 8;
/// A start line's descriptor (`struct htx_sl`).
const START_LINE: usize = 20;

/// The bytes `head` takes in HTX form.
pub fn head_len(head: &Head) -> usize {
    let start = if head.is_request() {
        head.method_bytes().len() + head.target().len() + 8
    } else {
        8 + 3 + head.reason().len()
    };
    let fields: usize = head.headers().map(|(n, v)| BLOCK + n.len() + v.len()).sum();
    BLOCK + START_LINE + start + fields + BLOCK
}

/// The bytes a header field adds in HTX form.
pub fn field_len(name: &[u8], value: &[u8]) -> usize {
    BLOCK + name.len() + value.len()
}

/// The bytes `body` bytes of data take in the buffer after `head`, as far as HAProxy reads
/// them: up to `max_input` (`tune.bufsize` less `tune.maxrewrite`) for the whole buffer.
pub fn data_len(head: &Head, body: usize, max_input: usize) -> usize {
    if body == 0 {
        return 0;
    }
    let room = max_input.saturating_sub(HTX_HEADER + head_len(head) + BLOCK);
    BLOCK + body.min(room)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(raw: &[u8]) -> Head {
        let mut h = Head::new();
        // (These heads are HTTP/1.0 GETs with a body, which a client would see refused.)
        h.set_any_method_payload(true);
        let limits = fulcrum_http::Limits::default();
        h.parse_request(raw, &limits).expect("parses").expect("complete");
        h
    }

    #[test]
    fn a_body_filling_the_buffer_leaves_maxrewrite_for_rewrites() {
        let h = req(b"GET /req1 HTTP/1.0\r\ncontent-length: 2000\r\n\r\n");
        // HAProxy: start line 8+20+16, one field 8+14+4, end of headers 8.
        assert_eq!(head_len(&h), 78);
        let (bufsize, maxrewrite) = (2048, 128);
        let data = data_len(&h, 2000, bufsize - maxrewrite);
        assert_eq!(bufsize - HTX_HEADER - head_len(&h) - data, maxrewrite);
        // A small body leaves the rest of the buffer.
        assert_eq!(data_len(&h, 10, bufsize - maxrewrite), 18);
        assert_eq!(data_len(&h, 0, bufsize - maxrewrite), 0);
        assert_eq!(field_len(b"x-hdr1", &[b'1'; 60]), 74);
    }
}
