//! Answers the proxy makes itself (errors, deny, return, redirect) and the raw messages they
//! are built from. Answers and interim heads reach an HTTP/2 client as heads parsed once and
//! data (`send_text`), never as HTTP/1 text. Must not touch: the server side.

use super::*;

impl Session<'_> {
    /// The proxy's answer for `status` (see `analyse`).
    pub(super) fn error_message(&mut self, status: u16, be: Option<&Arc<Backend>>) -> Vec<u8> {
        self.txn().error_message(status, be)
    }

    /// Writes `self.out` (a response head) to the client; a failure ends the stream (`CD`).
    pub(super) async fn write_client_head(&mut self) -> std::io::Result<()> {
        // (An HTTP/1 client's written at once: this is every response's path.)
        let r = match &self.client {
            Peer::H2(_) => send_text(&self.client, &self.out, self.fe.timeouts.client).await,
            _ => write_all_within(&self.client, &self.out, self.fe.timeouts.client).await,
        };
        if let Err(e) = &r {
            self.note(format_args!("client write failed: {e}"));
            self.t.o.end(Cause::ClientAbort, Phase::Data);
        }
        r
    }

    /// Answers with the proxy's message for `status` (a replacement or HAProxy's built-in).
    /// Out of line (boxed, polled through a pointer): rare on a request's path, and made in
    /// place at each of the transaction's dozen places that answer, it took room in the
    /// transaction's future and spread its code, which every stream runs cold from the
    /// instruction cache.
    pub(super) fn answer<'s>(
        &'s mut self,
        status: u16,
        info: &'s fulcrum_http::Info,
        be: Option<&'s Arc<Backend>>,
    ) -> Cold<'s, Next> {
        cold(async move {
            let msg = self.error_message(status, be);
            self.answer_bytes(msg, info, be).await
        })
    }

    /// Sends a response Fulcrum built (after `http-after-response` rules). The connection stays
    /// open only when the message allows it and the request was read completely.
    pub(super) async fn answer_bytes(
        &mut self,
        mut msg: Vec<u8>,
        info: &fulcrum_http::Info,
        be: Option<&Arc<Backend>>,
    ) -> Next {
        if !std::mem::take(&mut self.skip_after) && analyse::has_after_response(self.fe, be) {
            let limits = fulcrum_http::Limits { max_head: msg.len().max(1024), max_headers: 1000 };
            if let Ok(Some(n)) = self.t.resp.parse_response(&msg, &limits) {
                self.txn().after_response(be, None);
                let mut out = Vec::with_capacity(msg.len() + 64);
                self.t.resp.write_to(&mut out);
                out.extend_from_slice(&msg[n..]);
                msg = out;
            }
        }
        // As HAProxy 2.6, the connection carries on after an answer made here when the
        // request was read whole (its body drained here, or never forwarded in part), the
        // client did not ask to close, and the message does not say it closes.
        let status = parse_status(&msg);
        let client_close =
            info.conn_close || self.t.req.version() == Version::Http10 && !info.conn_keep_alive;
        // An empty message (`errorfile <code> /dev/null`): nothing is sent, the connection
        // closes.
        let keep = !msg.is_empty()
            && !message_closes(&msg)
            && !client_close
            && self.drain_request_body(info.body)
            && !self.fe.retiring()
            && !crate::lifecycle::stopping();
        if !keep && !msg.is_empty() && !message_closes(&msg) {
            msg = with_connection_close(&msg);
        } else if keep && self.t.req.version() == Version::Http10 {
            msg = with_header_after_status(&msg, b"connection: keep-alive\r\n");
        }
        self.t.o.status = Some(status);
        self.t.backend = be.cloned();
        if self.logs {
            self.t.o.bytes_out += answer_size(&mut self.t.resp, &msg);
        } else {
            self.t.o.bytes_out += msg.len() as u64;
        }
        // The stream ends with this answer: what it tracked alone is counted and released
        // before the client can see the answer (and, say, ask `show table` at once).
        if let Some(sc) = self.t.vars.sc.as_deref_mut() {
            sc.end_http_stream(&self.t.o, false);
            self.sc_ended = true;
        }
        let sent = send_text(&self.client, &msg, self.fe.timeouts.client).await;
        if keep && sent.is_ok() {
            Next::KeepAlive
        } else {
            Next::Close
        }
    }

    /// Is the whole request read? A body of which nothing was forwarded yet is consumed here
    /// when all of it already arrived; otherwise (in part here, or partly forwarded) no.
    pub(super) fn drain_request_body(&mut self, body: Body) -> bool {
        let unread = std::mem::take(&mut self.body_unread);
        match body {
            Body::None => true,
            _ if !unread => false,
            Body::Length(n) => {
                let whole = self.cbuf.len() as u64 >= n;
                if whole {
                    self.cbuf.consume(n as usize);
                }
                whole
            }
            Body::Chunked => {
                let mut scan = ChunkedScanner::new();
                match scan.scan(self.cbuf.data()) {
                    Ok(s) if s.done => {
                        self.cbuf.consume(s.accepted);
                        true
                    }
                    _ => false,
                }
            }
            Body::UntilClose => false,
        }
    }

    /// Answers a request that could not even be parsed (the connection then closes).
    /// HAProxy answers these with its built-in message even when `errorfile` replaced it.
    pub(super) async fn answer_raw(&mut self, status: u16) {
        let msg = crate::http_settings::messages::builtin_or_generic(status);
        let _ = send_text(&self.client, msg, self.fe.timeouts.client).await;
    }
}

/// Sends what the proxy has as HTTP/1 text for the client (an answer it made, interim heads,
/// a head it wrote): an HTTP/2 client's stream takes each head as fields, parsed here once,
/// and the body after the final one as data, as its head frames it; no HTTP/1 text reaches
/// the stream (but for text that does not parse as a response, which it refuses so).
pub(super) async fn send_text(
    client: &Peer,
    mut msg: &[u8],
    limit: Option<Duration>,
) -> std::io::Result<()> {
    if let Peer::H2(v) = client {
        let mut head = Head::new();
        let limits = fulcrum_http::Limits { max_head: msg.len().max(1024), max_headers: 10_000 };
        while let Ok(Some(n)) = head.parse_response(msg, &limits) {
            let sent = match head.status() {
                100..=199 if head.status() != 101 => v.send_interim(&head)?,
                200.. => v.send_head(&head)?,
                _ => false,
            };
            if !sent {
                break;
            }
            msg = &msg[n..];
            if head.status() >= 200 || msg.is_empty() {
                break;
            }
        }
    }
    write_all_within(client, msg, limit).await
}

/// What HAProxy counts for an answer it makes (see [`crate::outcome::head_size`]); `resp` is
/// scratch space.
fn answer_size(resp: &mut Head, msg: &[u8]) -> u64 {
    let limits = fulcrum_http::Limits { max_head: msg.len().max(1024), max_headers: 1000 };
    match resp.parse_response(msg, &limits) {
        Ok(Some(n)) => crate::outcome::head_size(resp) + (msg.len() - n) as u64,
        _ => msg.len() as u64,
    }
}

/// The raw response with a `connection: close` header added after the status line.
pub(super) fn with_connection_close(msg: &[u8]) -> Vec<u8> {
    with_header_after_status(msg, b"connection: close\r\n")
}

/// The raw response with `line` (a header line with its CRLF) inserted after the status line.
pub(super) fn with_header_after_status(msg: &[u8], line: &[u8]) -> Vec<u8> {
    let line_end = msg.windows(2).position(|w| w == b"\r\n").map_or(msg.len(), |p| p + 2);
    let mut out = Vec::with_capacity(msg.len() + line.len());
    out.extend_from_slice(&msg[..line_end]);
    out.extend_from_slice(line);
    out.extend_from_slice(&msg[line_end..]);
    out
}

/// The status code of a raw response (0 if unreadable).
pub(super) fn parse_status(msg: &[u8]) -> u16 {
    msg.get(9..12)
        .and_then(|d| std::str::from_utf8(d).ok())
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// Whether a raw message says `Connection: close`.
pub(super) fn message_closes(msg: &[u8]) -> bool {
    let head_end = msg.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(msg.len());
    msg[..head_end].split(|&b| b == b'\n').any(|l| {
        l.len() > 11 && l[..11].eq_ignore_ascii_case(b"connection:") && {
            let v = &l[11..];
            v.windows(5).any(|w| w.eq_ignore_ascii_case(b"close"))
        }
    })
}
