//! Proxy-level head policy: the body of a response given its request (`response_body`), the
//! Connection fields as HAProxy's HTTP/1 parser leaves them (`clean_connection`) and the
//! removal of hop-by-hop fields before forwarding (`strip_hop_by_hop`). Must not touch parsing.

use crate::head::{Body, Head, Method, Special};
use crate::values::comma_values;

/// The body of a response, which depends on the request (RFC 9112 section 6.3): none for a
/// response to HEAD, for 1xx, 204 and 304, and for a 2xx to CONNECT (the connection becomes a
/// tunnel); otherwise what its headers say (`Chunked`, `Length`, or `UntilClose` without
/// either; `UntilClose` too for a Transfer-Encoding not ending in chunked, which only an edit
/// can produce since the parser rejects it as HAProxy does).
pub fn response_body(resp: &Head, req_method: Method) -> Body {
    let status = resp.status();
    if req_method == Method::Head
        || (100..200).contains(&status)
        || status == 204
        || status == 304
        || (req_method == Method::Connect && (200..300).contains(&status))
    {
        return Body::None;
    }
    resp.info().body
}

/// True if a Connection header of `head` names `name`.
fn named_by_connection(head: &Head, name: &[u8]) -> bool {
    head.tagged_headers()
        .filter(|&(s, _, _)| s == Special::Connection)
        .any(|(_, _, v)| comma_values(v).any(|t| t.eq_ignore_ascii_case(name)))
}

/// HAProxy's HTTP/1 parser (`H1_MF_CLEAN_CONN_HDR`) takes `close` and `keep-alive` out of the
/// Connection fields it reads, and a field left empty goes altogether: rules, captures and logs
/// never see them. [`Head::info`] keeps what they said. A field whose other tokens stay keeps
/// its text up to the first token taken out; later ones follow with a bare comma, as HAProxy
/// writes them.
#[inline]
pub fn clean_connection(head: &mut Head) {
    let i = head.info();
    if i.conn_close || i.conn_keep_alive {
        clean_connection_fields(head);
    }
}

#[inline(never)]
fn clean_connection_fields(head: &mut Head) {
    // Usually one field saying only `close` or `keep-alive`: it goes, without a copy.
    let only = {
        let mut fields = head.tagged_headers().filter(|&(s, _, _)| s == Special::Connection);
        match (fields.next(), fields.next()) {
            (Some((_, _, v)), None) => {
                v.eq_ignore_ascii_case(b"close") || v.eq_ignore_ascii_case(b"keep-alive")
            }
            _ => false,
        }
    };
    if only {
        head.retain_headers(|n, _| !n.eq_ignore_ascii_case(b"connection"));
        return;
    }
    let mut edits: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, (special, _, v)) in head.tagged_headers().enumerate() {
        if special == Special::Connection {
            if let Some(kept) = without_close_and_keep_alive(v) {
                edits.push((i, kept));
            }
        }
    }
    for (i, kept) in &edits {
        if !kept.is_empty() {
            // (The analysis of the other tokens does not change: only these two go.)
            let _ = head.set_header_value_at(*i, kept);
        }
    }
    let mut at = 0;
    head.retain_headers(|_, _| {
        let gone = edits.iter().any(|(i, kept)| *i == at && kept.is_empty());
        at += 1;
        !gone
    });
}

/// A Connection value without its `close` and `keep-alive` tokens (see [`clean_connection`]);
/// `None` when it has neither.
fn without_close_and_keep_alive(v: &[u8]) -> Option<Vec<u8>> {
    let lws = |b: &u8| *b == b' ' || *b == b'\t';
    let (mut out, mut changed, mut end) = (Vec::new(), false, 0);
    for part in v.split(|b| *b == b',') {
        let start = end;
        end = start + part.len();
        let first = part.iter().position(|b| !lws(b)).unwrap_or(part.len());
        let last = part.iter().rposition(|b| !lws(b)).map_or(first, |p| p + 1);
        let word = &part[first..last.max(first)];
        if word.eq_ignore_ascii_case(b"close") || word.eq_ignore_ascii_case(b"keep-alive") {
            changed = true;
        } else if !changed {
            out = v[..end].to_vec();
        } else {
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(word);
        }
        end += 1; // the comma
    }
    changed.then_some(out)
}

/// Removes hop-by-hop fields before forwarding (RFC 9110 section 7.6.1): Connection and every
/// field it names, Keep-Alive, Proxy-Connection, TE (but a `trailers` token is written back as
/// `te: trailers`, as HAProxy does), and Upgrade unless `keep_upgrade`.
///
/// - Transfer-Encoding is **kept**: after parsing it can only say `chunked` (anything else is
///   rejected), and the body is forwarded chunked as received, so the engine need not re-add
///   it. Trailer is not hop-by-hop and is kept.
/// - Content-Length, Transfer-Encoding and Host are never removed because Connection names
///   them (the `Connection: Content-Length` smuggling trick).
/// - With `keep_upgrade`, an Upgrade field and a `Connection: upgrade`, the Upgrade field and the
///   `Sec-WebSocket-*` fields stay and one `Connection: upgrade` is written back.
///
/// Note: HAProxy 2.6 itself forwards Keep-Alive, Proxy-Connection, TE, Upgrade and the fields
/// named by Connection, and only rewrites Connection (verified); the engine decides whether to
/// call this.
pub fn strip_hop_by_hop(head: &mut Head, keep_upgrade: bool) {
    // Without a Connection field no other field is named (the usual case: no search per field).
    // TE goes, but `trailers` (lower case, without parameters) is passed on as HAProxy does.
    let (mut connection, mut te_trailers, mut any) = (false, false, false);
    // Only `te: trailers` as it goes on (gRPC's requests): stripped and added again, the head
    // would be the same.
    let (mut only_trailers, mut other) = (true, false);
    for (special, _, v) in head.tagged_headers() {
        match special {
            Special::Connection => (connection, any, other) = (true, true, true),
            Special::Te => {
                any = true;
                te_trailers |= comma_values(v).any(|t| t == b"trailers");
                only_trailers &= v == b"trailers";
            }
            Special::KeepAlive | Special::ProxyConnection | Special::Upgrade => {
                (any, other) = (true, true)
            }
            _ => {}
        }
    }
    // No hop-by-hop field at all (most heads): nothing to strip or add.
    if !any || (!other && only_trailers) {
        return;
    }
    // The head as it is now decides (an edit may have removed Connection or Upgrade).
    let keep_upgrade =
        keep_upgrade && head.header(b"upgrade").is_some() && named_by_connection(head, b"upgrade");
    head.mark_fields(|h, special, name| match special {
        Special::Connection | Special::KeepAlive | Special::ProxyConnection | Special::Te => true,
        Special::Upgrade => !keep_upgrade,
        Special::ContentLength | Special::TransferEncoding | Special::Host => false,
        Special::WsKey | Special::WsAccept if keep_upgrade => false,
        _ if !connection => false,
        _ => {
            let websocket = name.len() > 14 && name[..14].eq_ignore_ascii_case(b"sec-websocket-");
            !(keep_upgrade && websocket) && named_by_connection(h, name)
        }
    });
    head.sweep();
    if te_trailers {
        let _ = head.push_field(b"te", b"trailers");
    }
    if keep_upgrade {
        // Cannot break framing; only fails if the store is full, then the upgrade is dropped.
        if head.push_field(b"Connection", b"upgrade").is_err() {
            head.remove_header(b"upgrade");
        }
    }
}

#[cfg(test)]
mod clean_tests {
    use super::*;

    #[test]
    fn close_and_keep_alive_leave_connection_values_as_haproxy_writes_them() {
        let w = |v: &str| {
            without_close_and_keep_alive(v.as_bytes()).map(|o| String::from_utf8(o).expect("text"))
        };
        assert_eq!(w("close"), Some(String::new()));
        assert_eq!(w("Keep-Alive , CLOSE"), Some(String::new()));
        assert_eq!(w("close, X-Foo"), Some("X-Foo".into()));
        assert_eq!(w("x-a, x-b, keep-alive, x-c"), Some("x-a, x-b,x-c".into()));
        assert_eq!(w("upgrade, close"), Some("upgrade".into()));
        assert_eq!(w("x-foo, upgrade"), None);
    }

    #[test]
    fn a_head_keeps_what_its_connection_fields_said() {
        let mut h = Head::default();
        let text = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-A: 1\r\nConnection: x-b, keep-alive\r\n\r\n";
        h.parse_request(text, &crate::Limits::default()).expect("parses").expect("whole");
        clean_connection(&mut h);
        let fields: Vec<(&[u8], &[u8])> = h.headers().collect();
        assert_eq!(fields, [(&b"Host"[..], &b"t"[..]), (b"X-A", b"1"), (b"Connection", b"x-b")]);
        assert!(h.info().conn_close && h.info().conn_keep_alive);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head::Limits;

    fn req(raw: &[u8]) -> Head {
        let mut h = Head::new();
        assert!(matches!(h.parse_request(raw, &Limits::default()), Ok(Some(_))), "{raw:?}");
        h
    }

    fn resp(raw: &[u8]) -> Head {
        let mut h = Head::new();
        assert!(matches!(h.parse_response(raw, &Limits::default()), Ok(Some(_))), "{raw:?}");
        h
    }

    fn names(h: &Head) -> Vec<String> {
        h.headers().map(|(n, _)| String::from_utf8_lossy(n).into_owned()).collect()
    }

    #[test]
    fn response_body_follows_method_status_and_framing() {
        let cl = resp(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(response_body(&cl, Method::Get), Body::Length(5));
        assert_eq!(response_body(&cl, Method::Head), Body::None);
        assert_eq!(response_body(&cl, Method::Connect), Body::None);
        let ch = resp(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(response_body(&ch, Method::Post), Body::Chunked);
        let none = resp(b"HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(response_body(&none, Method::Get), Body::UntilClose);
        for status in
            [&b"100 Continue"[..], b"101 Switching", b"204 No Content", b"304 Not Modified"]
        {
            let mut raw = b"HTTP/1.1 ".to_vec();
            raw.extend_from_slice(status);
            raw.extend_from_slice(b"\r\nContent-Length: 5\r\n\r\n");
            assert_eq!(response_body(&resp(&raw), Method::Get), Body::None);
        }
        let denied = resp(b"HTTP/1.1 407 Auth\r\nContent-Length: 3\r\n\r\n");
        assert_eq!(response_body(&denied, Method::Connect), Body::Length(3));
    }

    #[test]
    fn hop_by_hop_fields_and_those_connection_names_are_removed() {
        let mut h = req(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Foo, close\r\n\
            X-Foo: 1\r\nKeep-Alive: 5\r\nProxy-Connection: x\r\nTE: trailers\r\nUpgrade: h2c\r\n\
            Trailer: x\r\nX-Bar: 2\r\n\r\n");
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host", "Trailer", "X-Bar", "te"]);
        assert_eq!(h.header(b"te"), Some(&b"trailers"[..]), "TE keeps its trailers token");
        assert!(h.info().conn_close, "connection facts are those received");
        for te in ["gzip", "trailers;q=0.5", "gzip, deflate"] {
            let raw = format!("GET / HTTP/1.1\r\nHost: a\r\nTE: {te}\r\n\r\n");
            let mut h = req(raw.as_bytes());
            strip_hop_by_hop(&mut h, false);
            assert_eq!(names(&h), ["Host"], "TE: {te}");
        }
        let mut h = req(b"GET / HTTP/1.1\r\nHost: a\r\nTE: gzip, trailers\r\n\r\n");
        strip_hop_by_hop(&mut h, false);
        assert_eq!(h.header(b"te"), Some(&b"trailers"[..]));
        let mut h = req(b"GET / HTTP/1.1\r\nHost: a\r\nTE: Trailers\r\n\r\n");
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host"], "compared as HAProxy compares it");
        // Only `trailers` (gRPC's requests): the head stays as it is, field for field.
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\nte: trailers\r\nX-A: 1\r\n\r\n";
        let mut h = req(raw);
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host", "te", "X-A"]);
        assert_eq!(h.header(b"te"), Some(&b"trailers"[..]));
    }

    #[test]
    fn connection_cannot_remove_framing_headers_or_host() {
        let mut h = req(b"POST / HTTP/1.1\r\nHost: a\r\nConnection: Content-Length, Host, \
            Transfer-Encoding\r\nContent-Length: 3\r\n\r\n");
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host", "Content-Length"]);
        assert_eq!(h.info().body, Body::Length(3));
    }

    #[test]
    fn transfer_encoding_chunked_is_kept() {
        let mut h =
            req(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTE: x\r\n\r\n");
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host", "Transfer-Encoding"]);
        assert_eq!(h.info().body, Body::Chunked);
    }

    #[test]
    fn an_upgrade_can_be_kept() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, Sec-WebSocket-Key\r\n\
            Upgrade: websocket\r\nSec-WebSocket-Key: k\r\nKeep-Alive: 1\r\n\r\n";
        let mut h = req(raw);
        strip_hop_by_hop(&mut h, true);
        assert_eq!(names(&h), ["Host", "Upgrade", "Sec-WebSocket-Key", "Connection"]);
        assert_eq!(h.header(b"connection"), Some(&b"upgrade"[..]));
        let mut h = req(raw);
        strip_hop_by_hop(&mut h, false);
        assert_eq!(names(&h), ["Host"]);
    }

    #[test]
    fn keeping_an_upgrade_looks_at_the_head_as_edited() {
        let mut h = resp(b"HTTP/1.1 200 OK\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n");
        h.remove_header(b"connection");
        h.set_status(101, None).expect("no Connection: upgrade any more");
        strip_hop_by_hop(&mut h, true);
        assert_eq!(names(&h), Vec::<String>::new());
    }

    #[test]
    fn keeping_an_upgrade_needs_connection_upgrade() {
        let mut h = req(b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n\r\n");
        strip_hop_by_hop(&mut h, true);
        assert_eq!(names(&h), ["Host"]);
    }
}
