//! HPACK encoding of a head straight from its fields (RFC 7541), stateless as HAProxy's
//! encoder: a name of the static table by its index, every value as a literal without
//! indexing, no Huffman coding, nothing in the dynamic table. The `h2` crate's own encoder
//! takes an `http::HeaderMap` (a map allocated and hashed per head, with an `http::Uri` parsed
//! for a request) and indexes values in its dynamic table: about 4,000 instructions per head
//! against a few hundred here. Blocks go out in HEADERS frames written by Fulcrum's own
//! connections (`frontconn` to clients, `backconn` to servers), which put any table size
//! update owed to the peer first; as no field here refers to the dynamic table, the peer's
//! decoder state is never in question. A block is encoded into the worker's buffer
//! ([`scratch`]) and copied into its connection's output: no allocation per head.
//!
//! Owns: the bytes of a header block. Must not touch: frames, streams.

use fulcrum_h2::hpack::{write_int, write_string};
use fulcrum_http::Head;

use crate::worker::{Id, Slot};

/// A worker's buffer for the header blocks it encodes (see [`scratch`]).
static SCRATCH: Slot<std::cell::Cell<Vec<u8>>> =
    Slot::new(Id::H2Scratch, || std::cell::Cell::new(Vec::new()));

/// An empty buffer to encode a block into, the worker's own when it has it back (see
/// [`put_back`]): no allocation per head. A block goes into its connection's output by copy.
pub fn scratch() -> Vec<u8> {
    let mut v = SCRATCH.take();
    v.clear();
    v
}

/// Gives a buffer from [`scratch`] back to the worker (unless it grew large).
pub fn put_back(v: Vec<u8>) {
    if v.capacity() <= 64 * 1024 {
        SCRATCH.set(v);
    }
}

/// Bytes a block may take at most for `head` (without its dropped fields).
fn bound(head: &Head) -> usize {
    // Per field: two strings with up to 5-byte length prefixes, one index byte (4 with a
    // large index).
    8 + head.headers().map(|(n, v)| n.len() + v.len() + 14).sum::<usize>()
}

/// The header block of a response head: `:status`, then every field but those `skip` says
/// to drop (connection-specific ones), names in lower case as HTTP/2 wants them.
pub fn response_block(head: &Head, skip: impl Fn(&[u8]) -> bool, a: &mut Vec<u8>) {
    a.reserve(bound(head));
    write_status(head.status(), a);
    for (name, value) in head.headers().filter(|(n, _)| !skip(n)) {
        write_field(name, value, a);
    }
}

/// A request's pseudo-fields: `:method`, `:scheme` (`https` or `http`), `:authority`, `:path`.
pub struct Pseudo<'a> {
    pub method: &'a [u8],
    pub https: bool,
    pub authority: &'a [u8],
    pub path: &'a [u8],
}

/// The header block of a request to a server: its pseudo-fields (lower-case `http` or
/// `https`), then every field of `head` but those `skip` says to drop, then `extra`.
pub fn request_block(
    p: Pseudo<'_>,
    head: &Head,
    skip: impl Fn(&[u8]) -> bool,
    extra: Option<(&[u8], &[u8])>,
    a: &mut Vec<u8>,
) {
    let Pseudo { method, https, authority, path } = p;
    a.reserve(bound(head) + method.len() + authority.len() + path.len() + 24);
    match method {
        b"GET" => a.push(0x82),
        b"POST" => a.push(0x83),
        m => {
            a.push(0x02);
            write_string(m, a);
        }
    }
    a.push(if https { 0x87 } else { 0x86 });
    a.push(0x01);
    write_string(authority, a);
    match path {
        b"/" => a.push(0x84),
        p => {
            a.push(0x04);
            write_string(p, a);
        }
    }
    for (name, value) in head.headers().filter(|(n, _)| !skip(n)) {
        write_field(name, value, a);
    }
    if let Some((name, value)) = extra {
        write_field(name, value, a);
    }
}

/// A header block of any fields in order, pseudo-fields first (requests built the slow way,
/// trailers): each a literal without indexing, its name by index when the static table has
/// it, in lower case.
pub fn block_of<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut a = Vec::with_capacity(256);
    for (name, value) in fields {
        let pseudo = match name {
            b":authority" => Some(1),
            b":method" => Some(2),
            b":path" => Some(4),
            b":scheme" => Some(6),
            b":status" => Some(8),
            _ => None,
        };
        match pseudo {
            Some(i) => {
                write_int(i, 4, 0x00, &mut a);
                write_string(value, &mut a);
            }
            None => write_field(name, value, &mut a),
        }
    }
    a
}

/// `:status`: indexed when the static table has it, else a literal with the name indexed.
fn write_status(status: u16, dst: &mut Vec<u8>) {
    let index = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if index > 0 {
        dst.push(0x80 | index);
        return;
    }
    let digits = [
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ];
    // Literal without indexing, name index 8 (`:status`).
    dst.push(0x08);
    write_string(&digits, dst);
}

/// A field as a literal without indexing: its name by its static index when it has one.
fn write_field(name: &[u8], value: &[u8], dst: &mut Vec<u8>) {
    match static_index(name) {
        Some(i) => write_int(usize::from(i), 4, 0x00, dst),
        None => {
            dst.push(0x00);
            write_int(name.len(), 7, 0x00, dst);
            let at = dst.len();
            dst.extend_from_slice(name);
            dst[at..].make_ascii_lowercase();
        }
    }
    write_string(value, dst);
}

/// The index of `name` (any case) among the static table's names (RFC 7541 Appendix A),
/// `:status` and the other pseudo-fields left out.
fn static_index(name: &[u8]) -> Option<u8> {
    let mut lower = [0u8; 27];
    let l = lower.get_mut(..name.len())?;
    l.copy_from_slice(name);
    l.make_ascii_lowercase();
    Some(match &*l {
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;

    fn head(raw: &[u8]) -> Head {
        let mut h = Head::new();
        let limits = fulcrum_http::Limits { max_head: 8192, max_headers: 101 };
        assert_eq!(h.parse_response(raw, &limits), Ok(Some(raw.len())));
        h
    }

    #[test]
    fn integers_are_encoded_as_rfc_7541_shows() {
        // C.1.1 to C.1.3: 10 with a 5-bit prefix, 1337 with a 5-bit prefix, 42 with 8 bits.
        for (v, n, want) in [
            (10, 5, vec![0x0a]),
            (1337, 5, vec![0x1f, 0x9a, 0x0a]),
            (42, 8, vec![0x2a]),
            (15, 4, vec![0x0f, 0x00]),
            (127, 7, vec![0x7f, 0x00]),
        ] {
            let mut b = Vec::new();
            write_int(v, n, 0, &mut b);
            assert_eq!(&b[..], &want[..], "{v} on {n} bits");
        }
    }

    #[test]
    fn a_field_is_a_literal_without_indexing_as_rfc_7541_shows() {
        // C.2.2: `:path: /sample/path` (name index 4) is 040c 2f73 616d 706c 652f 7061 7468.
        let mut b = Vec::new();
        write_int(4, 4, 0x00, &mut b);
        write_string(b"/sample/path", &mut b);
        assert_eq!(&b[..], b"\x04\x0c/sample/path");
        // A name outside the static table: 0x00, the name (lower case), the value.
        let mut b = Vec::new();
        write_field(b"X-Custom", b"v", &mut b);
        assert_eq!(&b[..], b"\x00\x08x-custom\x01v");
        // A static name in any case, its index on four bits (then continued: 31 = 15 + 16).
        let mut b = Vec::new();
        write_field(b"Content-Type", b"text/plain", &mut b);
        assert_eq!(&b[..], b"\x0f\x10\x0atext/plain");
    }

    #[test]
    fn every_static_name_has_its_index() {
        let names = [
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "accept",
            "access-control-allow-origin",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "content-disposition",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-range",
            "content-type",
            "cookie",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "link",
            "location",
            "max-forwards",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "refresh",
            "retry-after",
            "server",
            "set-cookie",
            "strict-transport-security",
            "transfer-encoding",
            "user-agent",
            "vary",
            "via",
            "www-authenticate",
        ];
        for (i, n) in names.iter().enumerate() {
            assert_eq!(static_index(n.as_bytes()), Some(i as u8 + 15), "{n}");
            assert_eq!(static_index(n.to_uppercase().as_bytes()), Some(i as u8 + 15), "{n}");
        }
        assert_eq!(static_index(b"x-accept"), None);
        assert_eq!(static_index(b"a-name-longer-than-any-static-one"), None);
    }

    #[test]
    fn a_response_block_has_its_status_and_fields_but_those_skipped() {
        let h =
            head(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nX-A: b\r\n\r\n");
        let mut b = Vec::new();
        response_block(&h, |n| n.eq_ignore_ascii_case(b"connection"), &mut b);
        assert_eq!(&b[..], b"\x88\x0f\x0d\x012\x00\x03x-a\x01b");
        let h = head(b"HTTP/1.1 302 Found\r\nlocation: /x\r\n\r\n");
        let mut b = scratch();
        response_block(&h, |_| false, &mut b);
        assert_eq!(&b[..], b"\x08\x03302\x0f\x1f\x02/x");
        put_back(b);
        // The worker's buffer comes back empty.
        let r = head(b"HTTP/1.1 200 OK\r\n\r\n");
        let mut q = scratch();
        let p = Pseudo { method: b"GET", https: false, authority: b"a:81", path: b"/" };
        request_block(p, &r, |_| false, None, &mut q);
        assert_eq!(&q[..], b"\x82\x86\x01\x04a:81\x84");
        put_back(q);
        let mut q = scratch();
        let te = Some((&b"te"[..], &b"trailers"[..]));
        let p = Pseudo { method: b"PUT", https: true, authority: b"a", path: b"/x?y" };
        request_block(p, &r, |_| false, te, &mut q);
        assert_eq!(&q[..], b"\x02\x03PUT\x87\x01\x01a\x04\x04/x?y\x00\x02te\x08trailers");
    }

    #[test]
    fn this_encoders_blocks_decode_to_their_heads() {
        let h = head(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nX-Long: aaa\r\n\r\n");
        let mut b = Vec::new();
        response_block(&h, |_| false, &mut b);
        let mut d = fulcrum_h2::RawDecoder::new(4096);
        let mut src = BytesMut::from(&b[..]);
        let mut raw = fulcrum_h2::RawHead::new();
        d.decode(&mut src, &mut raw, |_, _, _| std::ops::ControlFlow::Continue(()))
            .expect("decodes");
        let all: Vec<_> = raw.all().collect();
        assert_eq!(
            all,
            [(&b":status"[..], &b"404"[..]), (b"content-type", b"text/plain"), (b"x-long", b"aaa")]
        );
        // Literals without indexing: the table stays empty.
        assert_eq!(d.table_size(), 0);
    }
}
