//! The session's side of a FastCGI request (`http::fcgi`): its head sent with the parameters
//! only the session knows (the addresses, TLS, the `set-param` values), and its connection kept
//! for the next request when the application allows it. Out of line: the HTTP/1 and HTTP/2
//! paths never enter here.
//!
//! Must not touch: FastCGI's framing (`http::fcgi`), the exchange's loop.

use super::*;
use crate::http::fcgi::{mux, FcgiView};

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
        // A body without a length (chunked) was awaited as the backend was chosen (HAProxy's
        // FastCGI filter); its `CONTENT_LENGTH` is its data. As in HAProxy, one that did not end
        // within a buffer cannot go: 400 (`PH`).
        let held = self.t.held.as_deref();
        let (buffered, whole) = match info.body {
            Body::Length(_) | Body::None => (0, true),
            _ if self.client.gives_pieces() => (
                held.and_then(|h| h.req.as_ref()).map_or(0, |d| d.len() as u64),
                held.is_some_and(|h| h.req_ended),
            ),
            _ => {
                let data = self.cbuf.data();
                let whole = fulcrum_http::ChunkedScanner::new().scan(data).is_ok_and(|s| s.done);
                (analyse::dechunked(data).map_or(0, |d| d.len() as u64), whole)
            }
        };
        if !whole {
            self.note(format_args!(
                "FastCGI: the request's chunked body did not end within a buffer"
            ));
            self.t.o.end(Cause::Proxy, Phase::Headers);
            return Err(Exchange::BadRequest);
        }
        let facts = crate::http::fcgi::Facts {
            client: self.peer,
            local,
            https: conn.tls().is_some(),
            set: &set,
            pass: &pass,
            buffered,
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

/// A request on one of the worker's shared FastCGI connections to that server, when the
/// backend's application and `http-reuse` share them (see `fcgi::mux`).
#[cold]
#[inline(never)]
pub(super) fn shared_fcgi(be: &Arc<Backend>, idx: usize, reuse: Reuse) -> Option<(Peer, u32)> {
    let app = be.http.as_ref()?.fcgi.as_ref()?;
    mux::sharing(app, reuse)?;
    if be.servers[idx].send_proxy.is_some() {
        return None; // (a PROXY header speaks for one client)
    }
    let (h, before) = mux::take(be, idx)?;
    Some((Peer::Fcgi(Box::new(FcgiView::shared(h, Arc::clone(app)))), before))
}

/// The FastCGI side of a server connection: a shared connection's first request when the
/// application and `http-reuse` share them and the connection is new, else a connection of
/// the request's own (`requests`: how many it carried before).
#[cold]
#[inline(never)]
pub(super) fn fcgi_peer(
    stream: crate::connection::Stream,
    app: Arc<crate::http_settings::FcgiApp>,
    be: &Arc<Backend>,
    idx: usize,
    reuse: Reuse,
    requests: u32,
) -> std::io::Result<Peer> {
    let fresh = requests == 0;
    let share = mux::sharing(&app, reuse).filter(|_| fresh && be.servers[idx].send_proxy.is_none());
    Ok(Peer::Fcgi(Box::new(match share {
        Some(share) => FcgiView::shared(mux::start(stream, &app, be, idx, share)?, app),
        None => FcgiView::new(stream, app, fresh),
    })))
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
