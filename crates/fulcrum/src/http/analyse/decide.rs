//! Three decisions of a transaction made on facts alone, as HAProxy 2.6 makes them: whether a
//! try at a server is made again (`retries`, `retry-on`: `do_l7_retry` in `http_ana.c`), what
//! a response head means for the rest of its transaction (its body, a tunnel, the server's
//! connection: `http_wait_for_response`), and whether the client's connection stays open after
//! the response, with the response's `Connection` and framing fields saying so
//! (`http_end_txn`, `h1_process_output`'s connection mode). The session gathers the facts from
//! its sockets and acts on the answers. The three are `retry`, `answered` (where the body a
//! HEAD rewritten by `set-method` brings is dropped) and `client_keeps`.
//!
//! Must not touch: sockets, timers, server choice.

use fulcrum_http::{Body, Head, Info, Method, Version};

use crate::http_settings::{ConnMode, RetryOn};

/// How a try at a server ended, as the retry decision sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryEnd {
    /// The connection closed before any byte of a response (`empty-response`).
    Empty,
    /// A response that could not be parsed, or the server left inside its head
    /// (`junk-response`).
    Junk,
    /// No response head within `timeout server` (`response-timeout`).
    Timeout,
    /// A response head with this status, the request sent whole (`retry-on <status>`).
    Status(u16),
    /// What is never retried (the client left, the request was refused, a response to a
    /// request whose body was still going).
    Other,
}

/// The try that ended and the ones before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tries {
    /// It ran on an idle connection taken from the pool.
    pub reused: bool,
    /// The request can be sent again (it has no body).
    pub retryable: bool,
    /// A retry already happened: tries go to new connections only.
    pub fresh_only: bool,
    /// The `retries` used so far.
    pub used: u32,
}

/// `Some(counts)` when the request is sent again, on a new connection (`counts`: it uses one of
/// the backend's `retries`); `None` when the try's end is the transaction's. A reused idle
/// connection that died before answering is tried again once for free, whatever `retry-on`
/// says (a keep-alive race, not a server's fault).
#[inline(always)]
pub fn retry(end: TryEnd, t: Tries, retries: u32, on: &RetryOn) -> Option<bool> {
    let may = t.retryable && t.used < retries;
    let again = match end {
        TryEnd::Empty if t.reused && t.retryable && !t.fresh_only => return Some(false),
        TryEnd::Empty => may && on.empty_response,
        TryEnd::Junk => may && on.junk_response,
        TryEnd::Timeout => may && on.response_timeout,
        TryEnd::Status(s) => may && on.status(s),
        TryEnd::Other => false,
    };
    again.then_some(true)
}

/// What a response head says for the rest of its transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    /// As the server answered it (before any rule).
    pub status: u16,
    /// The body the client gets.
    pub resp_body: Body,
    /// The connection turns into a tunnel (101 to an upgrade, 2xx to CONNECT).
    pub tunnel: bool,
    /// The body of a response to a method rewritten from HEAD: read and dropped.
    pub skipped: Option<Body>,
    /// The server's connection may carry another request.
    pub server_keep: bool,
}

/// What the response head `resp` to the request `req` (as it went to the server) says for the
/// rest of the transaction, its hop-by-hop fields dropped on the way. `method` is the client's
/// method (before `set-method`), `upgrade` that the request asked for one, `body_done` that its
/// body went whole, `info` its framing facts as the client sent it.
// Called once per transaction: inlined, as it was written in the session.
#[inline(always)]
pub fn answered(
    req: &Head,
    resp: &mut Head,
    method: Method,
    upgrade: bool,
    body_done: bool,
    conn_mode: ConnMode,
    info: &Info,
) -> Answered {
    let status = resp.status();
    let resp_info = *resp.info();
    // The body follows the method the server got (`http-request set-method` may have changed
    // it); a HEAD client gets none: what the server sends for another method is read and
    // dropped after the head went.
    let from_server = fulcrum_http::response_body(resp, req.method());
    let (resp_body, skipped) = match from_server {
        b @ (Body::Length(_) | Body::Chunked) if method == Method::Head => (Body::None, Some(b)),
        _ if method == Method::Head => (Body::None, None),
        b => (b, None),
    };
    let tunnel = (status == 101 && upgrade) || (method == Method::Connect && status / 100 == 2);
    fulcrum_http::strip_hop_by_hop(resp, status == 101);
    let server_keep = !tunnel
        && body_done
        && conn_mode == ConnMode::KeepAlive
        && !info.te_and_cl
        && from_server != Body::UntilClose
        && match resp.version() {
            Version::Http10 => resp_info.conn_keep_alive,
            _ => !resp_info.conn_close,
        };
    Answered { status, resp_body, tunnel, skipped, server_keep }
}

/// What decides whether the client's connection stays open after a response.
#[derive(Clone, Copy, Debug)]
pub struct KeepFacts<R: Fn() -> bool> {
    /// The response's status, and the request's version as it came.
    pub status: u16,
    pub version: Version,
    /// The response's body framing toward the client.
    pub resp_body: Body,
    /// The transaction becomes a tunnel (101, a 2xx to CONNECT).
    pub tunnel: bool,
    /// The request had both Transfer-Encoding and Content-Length.
    pub te_and_cl: bool,
    /// The request's body was received whole.
    pub body_done: bool,
    /// The client asked to close (`Connection: close`, HTTP/1.0 without keep-alive).
    pub client_close: bool,
    pub conn_mode: ConnMode,
    /// The frontend is retiring (a reload replaced it): asked last, only when all else keeps.
    pub retiring: R,
}

/// Whether the client's connection stays open after the response `resp`, whose `Connection`
/// and `Transfer-Encoding` fields are set to say so (`upgrade` for a 101, `close` when it
/// closes, `keep-alive` to an HTTP/1.0 client that stays).
#[inline(always)]
pub fn client_keeps<R: Fn() -> bool>(resp: &mut Head, f: &KeepFacts<R>) -> bool {
    // An HTTP/1.0 response framed by Transfer-Encoding is faulty framing (RFC 9112 6.1): the
    // client connection closes after it, as HAProxy closes it.
    let faulty = resp.version() == Version::Http10 && f.resp_body == Body::Chunked;
    let keep = !f.tunnel
        && !f.te_and_cl
        && !faulty
        && f.body_done
        && !f.client_close
        && f.conn_mode != ConnMode::Close
        && f.resp_body != Body::UntilClose
        && !(f.retiring)();
    if f.status == 101 {
        let _ = resp.set_header(b"Connection", b"upgrade");
    } else if !keep && !f.tunnel {
        let _ = resp.set_header(b"Connection", b"close");
    } else if keep && f.version == Version::Http10 {
        let _ = resp.set_header(b"Connection", b"keep-alive");
    }
    // (Set unless it says so already, as a chunked answer's head usually does: an edit checks
    // the whole head again, 1,300 instructions per gRPC call.)
    let chunked_said = |v: &[u8]| v.eq_ignore_ascii_case(b"chunked");
    if f.resp_body == Body::Chunked && !resp.header(b"transfer-encoding").is_some_and(chunked_said)
    {
        let _ = resp.set_header(b"Transfer-Encoding", b"chunked");
    }
    keep
}

#[cfg(test)]
mod tests {
    use fulcrum_http::Limits;

    use super::*;

    fn on(text: &str) -> RetryOn {
        let mut r = RetryOn::default();
        for w in text.split_whitespace() {
            match w {
                "empty-response" => r.empty_response = true,
                "junk-response" => r.junk_response = true,
                "response-timeout" => r.response_timeout = true,
                s => {
                    let code: u16 = s.parse().expect("a status");
                    let i = crate::http_settings::RETRY_STATUSES.iter().position(|&c| c == code);
                    r.statuses[i.expect("a retryable status")] = true;
                }
            }
        }
        r
    }

    #[test]
    fn retry_on_says_which_ends_are_tried_again_within_retries() {
        let first = Tries { retryable: true, ..Tries::default() };
        let ro = on("empty-response 503 response-timeout");
        assert_eq!(retry(TryEnd::Empty, first, 3, &ro), Some(true));
        assert_eq!(retry(TryEnd::Status(503), first, 3, &ro), Some(true));
        assert_eq!(retry(TryEnd::Status(502), first, 3, &ro), None);
        assert_eq!(retry(TryEnd::Timeout, first, 3, &ro), Some(true));
        assert_eq!(retry(TryEnd::Junk, first, 3, &ro), None);
        assert_eq!(retry(TryEnd::Other, first, 3, &ro), None);
        // `retries` used up, or a request with a body: never again.
        assert_eq!(retry(TryEnd::Status(503), Tries { used: 3, ..first }, 3, &ro), None);
        let body = Tries { retryable: false, ..first };
        assert_eq!(retry(TryEnd::Status(503), body, 3, &ro), None);
        // Without `retry-on` (HAProxy's default `conn-failure` only), a response is final.
        assert_eq!(retry(TryEnd::Status(503), first, 3, &RetryOn::default()), None);
    }

    #[test]
    fn a_reused_connection_that_died_before_answering_is_tried_again_once_for_free() {
        let reused = Tries { reused: true, retryable: true, ..Tries::default() };
        let none = RetryOn::default();
        assert_eq!(retry(TryEnd::Empty, reused, 0, &none), Some(false));
        // Once: the next try is on a new connection, and counts as any other.
        let again = Tries { fresh_only: true, ..reused };
        assert_eq!(retry(TryEnd::Empty, again, 0, &none), None);
        assert_eq!(retry(TryEnd::Empty, again, 1, &on("empty-response")), Some(true));
        // Not for a request that cannot be sent again.
        let body = Tries { retryable: false, ..reused };
        assert_eq!(retry(TryEnd::Empty, body, 3, &on("empty-response")), None);
    }

    fn response(text: &str) -> Head {
        let mut h = Head::new();
        h.parse_response(text.as_bytes(), &Limits::default()).expect("parses").expect("whole");
        h
    }

    type Facts = KeepFacts<fn() -> bool>;

    /// The value of `name` in the head's text as it goes to the client.
    fn field(h: &Head, name: &str) -> Option<String> {
        let mut out = Vec::new();
        h.write_to(&mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        text.lines().find_map(|l| {
            let (n, v) = l.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    }

    fn facts(status: u16, version: Version) -> Facts {
        KeepFacts {
            status,
            version,
            resp_body: Body::Length(2),
            tunnel: false,
            te_and_cl: false,
            body_done: true,
            client_close: false,
            conn_mode: ConnMode::KeepAlive,
            retiring: || false,
        }
    }

    #[test]
    fn keep_alive_is_decided_as_haproxy_decides_it() {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
        let mut r = response(ok);
        assert!(client_keeps(&mut r, &facts(200, Version::Http11)));
        assert_eq!(field(&r, "connection"), None);
        // An HTTP/1.0 client that stays is told so.
        let mut r = response(ok);
        assert!(client_keeps(&mut r, &facts(200, Version::Http10)));
        assert_eq!(field(&r, "connection").as_deref(), Some("keep-alive"));
        // What closes: `option httpclose`, the client's wish, a body not read whole, a request
        // with both framings, a body delimited by the close, a retiring frontend.
        let closing = [
            Facts { conn_mode: ConnMode::Close, ..facts(200, Version::Http11) },
            Facts { client_close: true, ..facts(200, Version::Http11) },
            Facts { body_done: false, ..facts(200, Version::Http11) },
            Facts { te_and_cl: true, ..facts(200, Version::Http11) },
            Facts { resp_body: Body::UntilClose, ..facts(200, Version::Http11) },
            Facts { retiring: || true, ..facts(200, Version::Http11) },
        ];
        for f in closing {
            let mut r = response(ok);
            assert!(!client_keeps(&mut r, &f), "{f:?}");
            assert_eq!(field(&r, "connection").as_deref(), Some("close"), "{f:?}");
        }
        // `http-server-close` keeps the client side.
        let mut r = response(ok);
        let f = Facts { conn_mode: ConnMode::ServerClose, ..facts(200, Version::Http11) };
        assert!(client_keeps(&mut r, &f));
        // An HTTP/1.0 response framed as chunked closes (RFC 9112 6.1).
        let mut r = response("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let f = Facts { resp_body: Body::Chunked, ..facts(200, Version::Http11) };
        assert!(!client_keeps(&mut r, &f));
        assert_eq!(field(&r, "transfer-encoding").as_deref(), Some("chunked"));
    }

    #[test]
    fn tunnels_are_not_kept_and_a_101_says_upgrade() {
        let mut r = response(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        );
        let f = Facts { tunnel: true, resp_body: Body::None, ..facts(101, Version::Http11) };
        assert!(!client_keeps(&mut r, &f));
        assert_eq!(field(&r, "connection").as_deref(), Some("upgrade"));
        // A 2xx to CONNECT: a tunnel, its head left without a Connection field.
        let mut r = response("HTTP/1.1 200 Connection established\r\n\r\n");
        let f = Facts { tunnel: true, resp_body: Body::None, ..facts(200, Version::Http11) };
        assert!(!client_keeps(&mut r, &f));
        assert_eq!(field(&r, "connection"), None);
    }

    fn request(text: &str) -> Head {
        let mut h = Head::new();
        h.parse_request(text.as_bytes(), &Limits::default()).expect("parses").expect("whole");
        h
    }

    /// `answered` for a response `resp` to `req` as the client sent it (keep-alive mode, the
    /// request's body gone whole), with the response's head after it.
    fn answer(req: &Head, resp: &str) -> (Answered, Head) {
        let mut r = response(resp);
        let a = answered(req, &mut r, req.method(), false, true, ConnMode::KeepAlive, req.info());
        (a, r)
    }

    #[test]
    fn a_response_head_says_its_body_and_whether_the_server_connection_carries_on() {
        let get = request("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let (a, _) = answer(&get, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        let sized = Answered {
            status: 200,
            resp_body: Body::Length(5),
            tunnel: false,
            skipped: None,
            server_keep: true,
        };
        assert_eq!(a, sized);
        let (a, _) = answer(&get, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!((a.resp_body, a.server_keep), (Body::Chunked, true));
        // A body until the server closes, a `Connection: close`, an HTTP/1.0 server without
        // keep-alive: the server's connection is not kept.
        let (a, _) = answer(&get, "HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((a.resp_body, a.server_keep), (Body::UntilClose, false));
        let (a, _) =
            answer(&get, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(!a.server_keep);
        let (a, _) = answer(&get, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(!a.server_keep);
        let (a, _) =
            answer(&get, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(a.server_keep);
        // Not in keep-alive mode, a request body not sent whole, a request with both
        // Transfer-Encoding and Content-Length: not kept either.
        let mut r = response("HTTP/1.1 204 No Content\r\n\r\n");
        let i = get.info();
        let a = answered(&get, &mut r, Method::Get, false, true, ConnMode::ServerClose, i);
        assert_eq!((a.resp_body, a.server_keep), (Body::None, false));
        let a = answered(&get, &mut r, Method::Get, false, false, ConnMode::KeepAlive, i);
        assert!(!a.server_keep);
        let both = request(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        );
        assert!(both.info().te_and_cl);
        let (a, _) = answer(&both, "HTTP/1.1 204 No Content\r\n\r\n");
        assert!(!a.server_keep);
    }

    #[test]
    fn a_head_client_gets_no_body_and_what_a_rewritten_method_brings_is_dropped() {
        let head = request("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
        let (a, _) = answer(&head, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        assert_eq!((a.resp_body, a.skipped, a.server_keep), (Body::None, None, true));
        // `http-request set-method GET` on a HEAD: the server sends a body, read and dropped.
        let mut got = head.clone();
        got.set_method(b"GET").expect("set");
        let mut r = response("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        let a = answered(&got, &mut r, Method::Head, false, true, ConnMode::KeepAlive, got.info());
        assert_eq!((a.resp_body, a.skipped), (Body::None, Some(Body::Length(5))));
        // The other way: a GET sent as HEAD gets no body from the server.
        let mut sent = request("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        sent.set_method(b"HEAD").expect("set");
        let mut r = response("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        let a = answered(&sent, &mut r, Method::Get, false, true, ConnMode::KeepAlive, sent.info());
        assert_eq!((a.resp_body, a.skipped, a.server_keep), (Body::None, None, true));
    }

    #[test]
    fn a_101_to_an_upgrade_and_a_2xx_to_connect_become_tunnels() {
        let ws = request(
            "GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        );
        let text = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
                    Upgrade: websocket\r\nKeep-Alive: timeout=5\r\n\
                    Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        let mut r = response(text);
        let a = answered(&ws, &mut r, Method::Get, true, true, ConnMode::KeepAlive, ws.info());
        assert_eq!((a.status, a.tunnel, a.server_keep), (101, true, false));
        // Its hop-by-hop fields go, but a 101 keeps its Upgrade.
        assert_eq!(field(&r, "upgrade").as_deref(), Some("websocket"));
        assert_eq!(field(&r, "keep-alive"), None);
        // A 101 the request did not ask for is no tunnel.
        let mut r = response(text);
        let a = answered(&ws, &mut r, Method::Get, false, true, ConnMode::KeepAlive, ws.info());
        assert!(!a.tunnel);
        let connect = request("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n");
        let (a, _) = answer(&connect, "HTTP/1.1 200 Connection established\r\n\r\n");
        assert_eq!((a.tunnel, a.server_keep), (true, false));
        let (a, _) = answer(
            &connect,
            "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
        );
        assert_eq!((a.tunnel, a.resp_body), (false, Body::Length(0)));
        // A response's other hop-by-hop fields go too.
        let get = request("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let (_, r) = answer(
            &get,
            "HTTP/1.1 200 OK\r\nConnection: x-drop\r\nX-Drop: 1\r\nKeep-Alive: 1\r\nContent-Length: 0\r\n\r\n",
        );
        assert_eq!((field(&r, "x-drop"), field(&r, "keep-alive")), (None, None));
    }
}
