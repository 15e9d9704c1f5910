//! Waiting for a message body before rules go on: `wait-for-body` on requests and responses
//! and `option http-buffer-request`, until the body is whole, `at-least` of it is there, the
//! buffer is full, or the time given runs out. An HTTP/1 side's bytes are read into its
//! receive buffer (never consumed here), where forwarding takes them; an HTTP/2 stream keeps
//! its data (forwarded from there as pieces, its window closed meanwhile). The rules see the
//! body's data without framing: chunks decoded, an HTTP/2 stream's data copied
//! (`Transaction::held`), as HAProxy's rules see only data blocks.

use std::future::poll_fn;

use super::*;

/// Waits until an HTTP/2 stream `from` holds `want` bytes of its body (or all of it, or as
/// much as a buffer or its window takes), copying its data into `out` (at most a buffer's
/// worth, as an HTTP/1 side's buffer holds): `None` when `deadline` came first, else whether
/// the body's end came within the wait.
async fn hold(
    out: &mut Vec<u8>,
    from: &Peer,
    timer: Pin<&mut Timer>,
    want: u64,
    deadline: Instant,
) -> Option<bool> {
    let mut timer = timer;
    loop {
        let have = out.len();
        let got = poll_fn(|cx| from.poll_held(cx, have, out));
        match timer::until(timer.as_mut(), deadline, got).await {
            Err(_) => return None,
            // The stream failed: what follows finds out.
            Ok(Err(_)) => return Some(false),
            Ok(Ok(h)) => {
                let len = out.len();
                if len as u64 >= want || h.ended || h.full || len >= crate::connection::BUFSIZE {
                    out.truncate(crate::connection::BUFSIZE);
                    return Some(h.ended);
                }
            }
        }
    }
}

/// Fills `buf` from `from` until `want` bytes (or a whole chunked body) are there, the buffer
/// is full, or `deadline`: false when the time ran out first.
async fn fill_until(
    buf: &mut RecvBuf,
    from: &Peer,
    timer: Pin<&mut Timer>,
    body: Body,
    want: u64,
    deadline: Instant,
) -> bool {
    let mut timer = timer;
    while (buf.len() as u64) < want && !buf.is_full() {
        if body == Body::Chunked {
            let mut scan = ChunkedScanner::new();
            if scan.scan(buf.data()).map(|s| s.done).unwrap_or(true) {
                return true;
            }
        }
        match timer::until(timer.as_mut(), deadline, buf.fill(from)).await {
            Ok(Ok(n)) if n > 0 => {}
            Err(_) => return false,
            // The peer closed or failed: what follows finds out.
            _ => return true,
        }
    }
    true
}

/// How many body bytes to wait for: all of a known length (`at_least` of it when smaller),
/// or until the end for chunked and close-delimited bodies; `None`: no body.
fn wanted(body: Body, at_least: Option<u64>) -> Option<u64> {
    let all = match body {
        Body::Length(n) => n,
        Body::Chunked | Body::UntilClose => u64::MAX,
        _ => return None,
    };
    Some(at_least.map_or(all, |a| a.min(all)))
}

impl Session<'_> {
    /// `wait-for-body` / `option http-buffer-request` on the request, into the client buffer.
    /// `false` when the time ran out first (HAProxy then answers 408).
    pub(super) async fn wait_for_body(
        &mut self,
        info: &fulcrum_http::Info,
        time: Duration,
        at_least: Option<u64>,
    ) -> bool {
        let body = if info.body == Body::UntilClose { Body::None } else { info.body };
        let Some(want) = wanted(body, at_least) else { return true };
        let deadline = Instant::now() + time;
        // The client waits for leave to send its body: the proxy gives it, and the server will
        // not see the expectation any more.
        if info.expect_continue && self.t.req.header(b"expect").is_some() {
            self.t.req.remove_header(b"expect");
            let go = answer::send_text(&self.client, b"HTTP/1.1 100 Continue\r\n\r\n", None);
            if timer::within_io(self.ctimer.as_mut(), self.fe.timeouts.client, go).await.is_err() {
                return true;
            }
        }
        self.t.data_htx = None;
        if self.client.gives_pieces() {
            let mut data = self.t.held.as_mut().and_then(|h| h.req.take()).unwrap_or_default();
            let got = hold(&mut data, &self.client, self.ctimer.as_mut(), want, deadline).await;
            let held = self.t.held.get_or_insert_with(Box::default);
            (held.req, held.req_ended) = (Some(data), got == Some(true));
            return got.is_some();
        }
        let ok =
            fill_until(&mut self.cbuf, &self.client, self.ctimer.as_mut(), body, want, deadline)
                .await;
        if body == Body::Chunked {
            self.t.held.get_or_insert_with(Box::default).req = analyse::dechunked(self.cbuf.data());
        }
        ok
    }

    /// The analysers' wait for the request body: `wait-for-body`, or `option
    /// http-buffer-request` (an `fcgi-app` backend too), awaited for the `timeout
    /// http-request` of the proxy that waits (HAProxy's `s->be`: the backend once chosen; else
    /// `timeout client`), after which the request counts as received (`Tq`), as HAProxy's
    /// `http_wait_for_request_body` says. False when the time ran out (HAProxy's 408).
    pub(super) async fn body_stop(
        &mut self,
        stop: &analyse::Stop,
        info: &fulcrum_http::Info,
        be: Option<&Arc<Backend>>,
    ) -> bool {
        if let analyse::Stop::WaitForBody { time, at_least } = *stop {
            return self.wait_for_body(info, time, at_least).await;
        }
        let tm = &self.fe.timeouts;
        let t = be.and_then(|b| b.timeouts.http_request).or(tm.http_request).or(tm.client);
        let t = t.unwrap_or(Duration::MAX).min(Duration::from_secs(3600));
        let ok = self.wait_for_body(info, t, None).await;
        self.t.o.marks.request = Some(crate::clock::now());
        ok
    }

    /// `http-response wait-for-body`, into the server connection's buffer; false when the time
    /// ran out (HAProxy then answers 504).
    pub(super) async fn wait_for_response_body(
        &mut self,
        sc: &mut ServerConn,
        time: Duration,
        at_least: Option<u64>,
    ) -> bool {
        let body = self.t.resp.info().body;
        let Some(want) = wanted(body, at_least) else { return true };
        let deadline = Instant::now() + time;
        // The body read now is counted after the head as it is now.
        self.t.resp_data_htx = None;
        if sc.stream.gives_pieces() {
            let mut data = Vec::new();
            let got = hold(&mut data, &sc.stream, self.stimer.as_mut(), want, deadline).await;
            self.t.held.get_or_insert_with(Box::default).resp = Some(data);
            return got.is_some();
        }
        let ok =
            fill_until(&mut sc.buf, &sc.stream, self.stimer.as_mut(), body, want, deadline).await;
        if body == Body::Chunked {
            self.t.held.get_or_insert_with(Box::default).resp = analyse::dechunked(sc.buf.data());
        }
        ok
    }
}
