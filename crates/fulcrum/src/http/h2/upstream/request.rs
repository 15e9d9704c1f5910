//! A request head as an HTTP/2 header block, the slow way: through `http::Request` (its
//! checks of the target and authority), for what the fast encoding of a parsed head does not
//! take (CONNECT, WebSocket upgrades, heads parsed from the bytes written).
//!
//! Owns: that translation. Must not touch: streams, bodies.

use std::io;

use fulcrum_http::Head;

use super::super::body::connection_specific;

/// A request for `send_head`: as a header map, or as a header block encoded already.
pub(super) enum Request {
    Map(http::Request<()>),
    Encoded(Vec<u8>),
}

/// The header block of a request made as an `http::Request` (see [`request`]); a WebSocket
/// upgrade as an extended CONNECT (`:protocol websocket`, without `sec-websocket-key`), a
/// CONNECT with only its `:authority`.
pub(super) fn map_block(req: &http::Request<()>, ws: bool) -> Vec<u8> {
    let uri = req.uri();
    let mut fields: Vec<(&[u8], &[u8])> = Vec::with_capacity(req.headers().len() + 5);
    let connect = req.method() == http::Method::CONNECT;
    if ws {
        fields.push((b":method", b"CONNECT"));
        fields.push((b":protocol", b"websocket"));
    } else {
        fields.push((b":method", req.method().as_str().as_bytes()));
    }
    if !connect || ws {
        let scheme = uri.scheme_str().unwrap_or("http");
        fields.push((b":scheme", scheme.as_bytes()));
    }
    if let Some(a) = uri.authority() {
        fields.push((b":authority", a.as_str().as_bytes()));
    }
    if !connect || ws {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        fields.push((b":path", path.as_bytes()));
    }
    for (name, value) in req.headers() {
        if ws && name == "sec-websocket-key" {
            continue;
        }
        fields.push((name.as_str().as_bytes(), value.as_bytes()));
    }
    super::super::hpack::block_of(fields)
}

/// The HTTP/2 request for an HTTP/1.1 head: `:authority` from Host (or an absolute target),
/// `:scheme` from the connection, connection-specific fields dropped (RFC 9113 8.2.2). Without
/// a Host, the authority is the server's address (`server`): HTTP/2 wants a `:scheme` on every
/// request but CONNECT, which the `h2` crate sends only with an authority (HAProxy sends
/// none; a server would refuse the request without `:scheme`).
pub(super) fn request(
    head: &Head,
    tls: bool,
    origin_form: bool,
    server: impl FnOnce() -> Option<String>,
) -> io::Result<http::Request<()>> {
    let bad = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let method = http::Method::from_bytes(head.method_bytes()).map_err(|e| bad(&e))?;
    // The origin form the session would write for an absolute-form target (see
    // `Head::write_origin_form_to`): what follows the authority, `/` if nothing.
    let target = match head.target() {
        t if origin_form
            && method != http::Method::CONNECT
            && !t.starts_with(b"/")
            && t != b"*" =>
        {
            match head.origin_form_target() {
                b"" => b"/".as_slice(),
                o => o,
            }
        }
        t => t,
    };
    let uri: http::Uri = if method == http::Method::CONNECT {
        http::Uri::try_from(target).map_err(|e| bad(&e))?
    } else if target.starts_with(b"/") || target == b"*" {
        // Origin form, or the asterisk form of `OPTIONS *` (its `:path` is `*`).
        let authority = match head.header(b"host").filter(|h| !h.is_empty()) {
            Some(h) => http::uri::Authority::try_from(h).map_err(|e| bad(&e))?,
            None => {
                let a = server().ok_or_else(|| bad(&"no authority for the request"))?;
                http::uri::Authority::try_from(a).map_err(|e| bad(&e))?
            }
        };
        http::Uri::builder()
            .scheme(if tls { "https" } else { "http" })
            .authority(authority)
            .path_and_query(target)
            .build()
            .map_err(|e| bad(&e))?
    } else {
        // Absolute form.
        http::Uri::try_from(target).map_err(|e| bad(&e))?
    };
    let mut req = http::Request::new(());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    let headers = req.headers_mut();
    let skip = |name: &[u8]| {
        connection_specific(name)
            || name.eq_ignore_ascii_case(b"host")
            || name.eq_ignore_ascii_case(b"te")
    };
    super::super::append_fields(head, skip, headers);
    // `te` only as `trailers` (RFC 9113 8.2.2), written as h2 wants it (lower case).
    if head.header(b"te").is_some_and(|v| v.eq_ignore_ascii_case(b"trailers")) {
        headers.append(http::header::TE, http::HeaderValue::from_static("trailers"));
    }
    Ok(req)
}
