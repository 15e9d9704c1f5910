//! `fulcrum-http`: a pure, strict HTTP/1.1 codec for the proxy. It parses request and response
//! heads from the engine's bytes, edits them, writes them back, and validates chunked bodies
//! as they stream through. No I/O, no async, no dependencies; once warmed up it does not
//! allocate (a [`Head`] reuses one byte store and one field index per connection).
//!
//! Owns: the wire format of HTTP/1.x heads and chunked bodies and HAProxy 2.6's rejections.
//! Must not touch: sockets, buffers, timeouts, routing: the engine does those and calls in.
//!
//! # Why not httparse
//! A proxy needs more than a tokenizer: RFC 9112 strictness with HAProxy's rejections of the
//! request-smuggling shapes (Content-Length lists that disagree, Transfer-Encoding that does not
//! end in chunked, both headers at once, bare CR, obs-fold, whitespace before the colon),
//! header editing and re-serialisation that keep the framing consistent, and a validating
//! chunked scanner that passes the body through verbatim. Those are most of the code here.
//!
//! # Where it follows HAProxy 2.6 rather than the RFC's strictest reading
//! Checked against HAProxy 2.6.12 (`/usr/sbin/haproxy`) with raw requests and responses:
//! - Bare LF line ends are accepted everywhere (head, chunk lines, trailers); a CR must be
//!   followed by LF. Empty lines before the start line are skipped.
//! - Target bytes: 0x21..=0x7E except `#` (HAProxy takes `"<>{}|\^\``, rejects CTL, SP, `#`,
//!   bytes >= 0x80). `*` is taken with any method. `http:///x` (empty authority) is taken;
//!   `http://a?x` (query right after the authority) is not.
//! - `HTTP/1.2`..`HTTP/1.9` are read as HTTP/1.1 (also RFC 9110 2.5). Lowercase `http/1.1`,
//!   `HTTP/1.10`, `HTTP/1` are rejected.
//! - Identical Content-Length values (one list or several headers) are merged into the first
//!   (HAProxy keeps the last; same number); the bound is 2^63-1; empty elements, signs, spaces
//!   inside are rejected.
//! - Transfer-Encoding must be exactly `chunked` (empty list elements ignored): not final, or
//!   twice -> 400; another coding before it (`gzip, chunked`) -> 422 for a request (HAProxy's
//!   answer) and 502 for a response. HAProxy also rejects a response whose Transfer-Encoding does
//!   not end in chunked, where RFC 9112 6.3 would read it until close; we do the same.
//! - Transfer-Encoding with Content-Length: chunked wins, Content-Length is removed,
//!   `Info::te_and_cl` is set (HAProxy then closes the server connection).
//! - Host differing from an absolute-form target's authority (default ports ignored) or from a
//!   CONNECT target -> 400 (RFC 9112 3.2.2 would just replace Host).
//! - `Connection: upgrade` + `Upgrade: websocket` needs `Sec-WebSocket-Key` (request) /
//!   `Sec-WebSocket-Accept` (101 response), else 400 / 502.
//! - A request head too long, too many fields: 400, not 414/431 (see [`HeadError`]);
//!   `max_headers` counts as `tune.http.maxhdr` does (101 -> 100 fields).
//! - A status line may lack the SP before an empty reason.
//! - Transfer-Encoding in an HTTP/1.0 request is honoured like in HTTP/1.1 and the engine
//!   closes the connection after it (RFC 9112 6.1: faulty framing, "close the connection after
//!   processing the message"; HAProxy does the same).
//! - Chunk sizes: hex digits, leading zeros allowed, at most 2^63-1; SP/HTAB may follow the
//!   size (the engine forwards them rewritten in canonical form, as HAProxy writes its own).
//!
//! # Where it is stricter than HAProxy 2.6 (HAProxy accepts these; RFC 9112 allows rejecting)
//! - Request and status lines take exactly one SP between parts (HAProxy takes runs of SP/HTAB).
//! - obs-fold is rejected (HAProxy unfolds it into spaces; RFC 9112 5.2 allows either).
//! - Control bytes in header values and reasons (NUL, 0x01.., DEL) are rejected (HAProxy
//!   forwards all of them, even NUL; RFC 9110 5.5 requires rejecting CR, LF, NUL).
//! - A second Host is rejected even when identical (HAProxy merges identical ones; RFC 9112
//!   3.2 requires 400).
//! - DEL in the target (HAProxy's word-at-a-time scan lets it through in some positions).
//! - CONNECT takes only authority-form `host:port` (HAProxy also takes absolute-form), and
//!   authority-form is refused for other methods (HAProxy takes `GET a:443`).
//! - Status codes must be 3 digits in 100..=999 (HAProxy forwards `20`, `2000`, `099`).
//! - A Transfer-Encoding field without any coding is rejected even when another field says
//!   `chunked` (HAProxy takes that pair).
//! - Chunk extensions must follow RFC 9112 7.1.1 (HAProxy skips them unchecked); trailer fields
//!   follow the header rules (so obs-fold in trailers is rejected too); `Content-Length`,
//!   `Transfer-Encoding` and `Host` in trailers are never forwarded.
//! - An HTTP/1.1 request without Host, or with a Host holding a blank, a control byte or a
//!   delimiter of another URI part (`a b`, `a/b`, `a@b`), gets 400 (RFC 9112 3.2; HAProxy
//!   forwards both).
//!
//! # Not done here
//! Hop-by-hop removal ([`strip_hop_by_hop`]) goes further than HAProxy 2.6, which forwards
//! Keep-Alive, TE, Upgrade and the fields Connection names: the engine decides.

#![forbid(unsafe_code)]

mod chars;
mod chunked;
pub mod date;
mod error;
pub mod fuzzing;
mod head;
mod hop;
mod locate;
pub mod reply;
mod target;
mod values;

pub use chars::is_tchar;
pub use chunked::{
    write_size as write_chunk_size, ChunkedScanner, Scan, MAX_CHUNK_LINE, MAX_TRAILERS,
};
pub use error::{ChunkError, EditError, HeadError};
pub use head::{default_reason, Body, Head, Info, Limits, Method, Version};
pub use hop::{clean_connection, response_body, strip_hop_by_hop};
pub use locate::error_position;
pub use values::{comma_values, cookie_value, url_param, CommaValues};
