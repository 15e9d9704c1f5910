//! The session's side of a FastCGI request (`http::fcgi`): its head sent with the parameters
//! only the session knows (the addresses, TLS, the `set-param` values), and its connection kept
//! for the next request when the application allows it. Out of line: the HTTP/1 and HTTP/2
//! paths never enter here.
//!
//! Must not touch: FastCGI's framing (`http::fcgi`), the exchange's loop.

use super::*;

impl Session<'_> {
    /// A FastCGI request's head: `100 Continue` said by the proxy when the client expects it
    /// (the server cannot say it, as HAProxy says it), then `BEGIN_REQUEST` and the parameters.
    pub(super) async fn send_fcgi_head(
        &mut self,
        sc: &ServerConn,
        info: &fulcrum_http::Info,
        be: &Backend,
        ct: Option<Duration>,
    ) -> Result<(), Exchange> {
        let Peer::Fcgi(f) = &sc.stream else { return Ok(()) };
        if info.expect_continue && self.t.req.header(b"expect").is_some() {
            self.t.req.remove_header(b"expect");
            let go = answer::send_text(&self.client, b"HTTP/1.1 100 Continue\r\n\r\n", ct);
            if go.await.is_err() {
                return Err(Exchange::ClientGone);
            }
        }
        let (set, pass) = self.txn().fcgi_rules(be);
        let conn = conn_of(self.h2_conn, &self.client);
        // `SERVER_PORT` and `SERVER_NAME` need the address the client reached.
        let local = self
            .local
            .or_else(|| socket2::SockRef::from(conn).local_addr().ok().and_then(|a| a.as_socket()));
        let facts = crate::http::fcgi::Facts {
            client: self.peer,
            local,
            https: conn.tls().is_some(),
            set: &set,
            pass: &pass,
        };
        match f.send_request(&self.t.req, &facts, &self.http.limits) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                self.note(format_args!("no FastCGI parameters: {e}"));
                Err(Exchange::BadResponse)
            }
            Err(e) => {
                self.note(format_args!("request head not sent: {e}"));
                Err(Exchange::RetryFresh)
            }
        }
    }
}

/// A FastCGI connection as bytes again, when it may carry the next request (see
/// `FcgiView::into_reusable`).
#[inline(never)]
pub(super) fn fcgi_reusable(sc: ServerConn) -> Option<ServerConn> {
    let ServerConn { stream, be, idx, requests, buf, _in_use } = sc;
    let Peer::Fcgi(v) = stream else { return None };
    let stream = Peer::Bytes(v.into_reusable()?);
    Some(ServerConn { stream, be, idx, requests, buf, _in_use })
}
