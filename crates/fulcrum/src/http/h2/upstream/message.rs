//! A stream's messages as HTTP/1 bytes: the response read from the stream (its head as
//! text or built, its body in its HTTP/1 framing, trailers included) and the request's body
//! sent in DATA frames.
//!
//! Owns: the HTTP/1 framing of bodies to and from a server's stream. Must not touch: frames
//! (the connection's, `backconn`), the request head.

use fulcrum_http::{Head, Limits, Method};

pub(super) use super::super::body::write_fields;
use super::super::body::Received;

/// A response's HTTP/1 bytes: its head's text (unless taken built), then its body.
pub(super) type Msg = Received;

/// A response's head as received, and the field its body's HTTP/1 framing adds.
pub(super) struct ResponseHead {
    /// The HEADERS frame's fields as decoded (checked as for any head).
    raw: fulcrum_h2::RawHead,
    status: u16,
    framing: Option<(&'static [u8], &'static [u8])>,
}

impl ResponseHead {
    /// The head built from its fields (see [`UpView::take_response_head`]).
    pub(super) fn build(
        &self,
        head: &mut Head,
        limits: &Limits,
    ) -> Result<usize, fulcrum_http::HeadError> {
        head.begin_response(self.status, reason(self.status).as_bytes())?;
        for (name, value) in self.raw.fields() {
            head.build_field(name, value, limits)?;
        }
        if let Some((name, value)) = self.framing {
            head.build_field(name, value, limits)?;
        }
        head.end_head(limits)
    }

    /// The head as HTTP/1.1 text.
    pub(super) fn text(&self) -> Vec<u8> {
        let mut head = Vec::with_capacity(256);
        write_status(&mut head, self.status);
        write_fields(&mut head, self.raw.fields().chain(self.framing));
        head.extend_from_slice(b"\r\n");
        head
    }
}

/// The head of a response, and its body framed for HTTP/1: as sized by the server, else in
/// chunks (where its trailers fit). `ended`: the stream ended with the head.
pub(super) fn response_head(
    raw: fulcrum_h2::RawHead,
    status: u16,
    ended: bool,
    method: Method,
) -> (ResponseHead, Msg) {
    let bodiless = method == Method::Head || status == 204 || status == 304;
    let tunnel = method == Method::Connect && (200..300).contains(&status);
    let sized = raw.has_content_length();
    let (more, chunked, framing) = if bodiless {
        (false, false, None)
    } else if tunnel || sized {
        (true, false, None)
    } else if ended {
        (false, false, Some((b"content-length".as_slice(), b"0".as_slice())))
    } else {
        (true, true, Some((b"transfer-encoding".as_slice(), b"chunked".as_slice())))
    };
    (ResponseHead { raw, status, framing }, Msg::new(Vec::new(), more, chunked))
}

/// The 101 an HTTP/1.1 WebSocket client expects, for an extended CONNECT's 2xx, with the
/// `Sec-WebSocket-Accept` its key asks for (RFC 6455 4.2.2); then the stream is the tunnel.
pub(super) fn websocket_head(raw: &fulcrum_h2::RawHead, key: &[u8]) -> Msg {
    use base64::Engine;
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(
        b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n",
    );
    if !key.is_empty() {
        let mut input = key.to_vec();
        input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
        let sha = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
        head.extend_from_slice(b"sec-websocket-accept: ");
        head.extend_from_slice(
            base64::engine::general_purpose::STANDARD.encode(sha.as_ref()).as_bytes(),
        );
        head.extend_from_slice(b"\r\n");
    }
    let rest =
        raw.fields().filter(|(n, _)| *n != b"content-length" && *n != b"sec-websocket-accept");
    write_fields(&mut head, rest);
    head.extend_from_slice(b"\r\n");
    Msg::new(head, true, false)
}

/// A status's reason phrase (HTTP/2 carries none).
pub(super) fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown")
}

pub(super) fn write_status(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(&[
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]);
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}
