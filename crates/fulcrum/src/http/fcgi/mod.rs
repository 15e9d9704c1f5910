//! A request to a FastCGI server (`proto fcgi`, `use-fcgi-app`): one connection, one request
//! (HAProxy's `mux_fcgi` without multiplexing). The transaction hands it the parsed request
//! head, which goes out as `BEGIN_REQUEST` and the CGI parameters HAProxy 2.6 sends
//! (`fulcrum_fcgi::cgi`); the request body goes as `STDIN` records, as pieces. The answer's
//! `STDOUT` begins with a CGI head (`Status:`, `Location:`), built into the response head as
//! HAProxy's FastCGI filter leaves it (`Status` removed, `Date` added, chunked framing when
//! unsized); the rest is the body, given as pieces until `END_REQUEST`. `STDERR` records go to
//! the application's `log-stderr` targets, a line each at level `err` (dropped without them).
//!
//! With `option keep-conn` (HAProxy's default) the request asks the application to keep the
//! connection (`FCGI_KEEP_CONN`), and a connection whose request ended cleanly goes back to the
//! session or the worker's idle pool as any server connection; the next request on it is a new
//! `FcgiView`. With `option get-values`, a new connection first asks the application's
//! `FCGI_MAX_REQS` and `FCGI_MPXS_CONNS` (`GET_VALUES`), as HAProxy does. A request may instead
//! be one of several on a connection the worker shares ([`mux`]: `mpxs-conns`, `max-reqs`),
//! which reads the records and hands this view its own. Must not touch: rules, the session's
//! choices (it is only a [`Peer`]).
//!
//! [`Peer`]: super::peer::Peer

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use fulcrum_fcgi::{Kind, Record};
use fulcrum_http::{Head, Limits, Method};

use crate::connection::Stream;
use crate::http::peer::Piece;

pub mod mux;

/// The request id of the only request on a connection.
const ID: u16 = 1;

/// What `option get-values` asks a new connection's application, in HAProxy's order.
const ASKED_VALUES: [&str; 2] = ["FCGI_MAX_REQS", "FCGI_MPXS_CONNS"];

/// Syslog's `err` level: the application's `STDERR` lines.
const ERR_LEVEL: u8 = 3;

/// What the CGI parameters take from outside the request head.
pub struct Facts<'a> {
    pub client: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    pub https: bool,
    /// `set-param` values, rendered.
    pub set: &'a [(&'a str, Vec<u8>)],
    /// Hidden request headers passed all the same (`pass-header` rules that matched), lower
    /// case.
    pub pass: &'a [&'a str],
    /// The body data already received of a request without a length (chunked): its
    /// `CONTENT_LENGTH`, as HAProxy counts the data its buffer holds when the parameters go.
    pub buffered: u64,
}

/// One request's FastCGI connection (see the module's doc).
pub struct FcgiView {
    wire: Wire,
    app: std::sync::Arc<crate::http_settings::FcgiApp>,
    st: RefCell<State>,
}

/// Where the view's records go and come from.
enum Wire {
    /// A connection of its own (request id 1).
    Own(Stream),
    /// A request on a connection the worker shares.
    Shared(mux::Handle),
}

#[derive(Default)]
struct State {
    /// Records not written yet, from `written`.
    out: Vec<u8>,
    written: usize,
    /// Bytes read and not yet taken apart into records.
    inbuf: Vec<u8>,
    /// `STDOUT` before its head is complete.
    pre: Vec<u8>,
    /// The CGI head, parsed, waiting to be taken: status, reason, fields.
    head: Option<CgiHead>,
    head_taken: bool,
    /// Body bytes after the head, waiting to be given.
    body: Vec<u8>,
    /// `END_REQUEST` came.
    ended: bool,
    /// The request's `STDIN` is ended (or was never opened).
    sent_end: bool,
    /// The request's head went.
    sent_head: bool,
    method: Option<Method>,
    failed: Option<io::ErrorKind>,
    /// The largest head accepted.
    max_head: usize,
}

struct CgiHead {
    status: u16,
    reason: Vec<u8>,
    fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl FcgiView {
    /// A request on a connection of its own; `fresh`: just made (it then asks `GET_VALUES`
    /// first with `option get-values`).
    pub fn new(
        stream: Stream,
        app: std::sync::Arc<crate::http_settings::FcgiApp>,
        fresh: bool,
    ) -> Self {
        let mut st = State::default();
        if fresh && app.get_values {
            fulcrum_fcgi::get_values(&mut st.out, &ASKED_VALUES);
        }
        FcgiView { wire: Wire::Own(stream), app, st: RefCell::new(st) }
    }

    /// A request on a connection the worker shares.
    pub fn shared(h: mux::Handle, app: std::sync::Arc<crate::http_settings::FcgiApp>) -> Self {
        FcgiView { wire: Wire::Shared(h), app, st: RefCell::new(State::default()) }
    }

    fn id(&self) -> u16 {
        match &self.wire {
            Wire::Own(_) => ID,
            Wire::Shared(h) => h.id(),
        }
    }

    pub fn server_sni(&self) -> Option<&str> {
        match &self.wire {
            Wire::Own(s) => s.server_sni(),
            Wire::Shared(h) => h.sni(),
        }
    }

    pub fn tls_side(&self) -> crate::tls::facts::ServerSide<'_> {
        use crate::tls::facts::ServerSide;
        match &self.wire {
            Wire::Own(s) => ServerSide::Stream(s),
            Wire::Shared(h) => {
                ServerSide::Facts { tls: h.tls_facts(), fd: Some(h.as_fd()), h2: false }
            }
        }
    }

    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match &self.wire {
            Wire::Own(s) => s.as_fd(),
            Wire::Shared(h) => h.as_fd(),
        }
    }

    /// Sends `BEGIN_REQUEST` and the parameters made from `req` (and the end of `STDIN` when
    /// the request has no body). `InvalidInput` when no parameters can be made (a path that
    /// cannot name a script).
    pub fn send_request(&self, req: &Head, f: &Facts<'_>, limits: &Limits) -> io::Result<()> {
        let app = &self.app;
        let headers: Vec<(&[u8], &[u8])> = req
            .headers()
            .filter(|(n, _)| {
                let hidden = crate::http_settings::fcgi_hides(n);
                !hidden || f.pass.iter().any(|p| n.eq_ignore_ascii_case(p.as_bytes()))
            })
            .collect();
        let info = req.info();
        let body_len = match info.body {
            fulcrum_http::Body::Length(n) => n,
            fulcrum_http::Body::None => 0,
            _ => f.buffered,
        };
        let version: &[u8] = match req.version() {
            fulcrum_http::Version::Http10 => b"HTTP/1.0",
            _ => b"HTTP/1.1",
        };
        let split = |p: &[u8]| {
            let rx = app.path_info.as_ref()?;
            let locs = rx.captures(p)?;
            let (s0, s1) = locs.get(1)?;
            Some((s0..s1, locs.get(2).map(|(a, b)| a..b)))
        };
        let cgi_app = fulcrum_fcgi::cgi::App {
            docroot: app.docroot.as_bytes(),
            index: app.index.as_deref().map(str::as_bytes),
            path_info: app.path_info.is_some().then_some(&split as _),
            software: concat!("Fulcrum ", env!("CARGO_PKG_VERSION")).as_bytes(),
        };
        let cgi_req = fulcrum_fcgi::cgi::Request {
            method: req.method_bytes(),
            target: req.target(),
            version,
            headers: &headers,
            client: f.client,
            local: f.local,
            https: f.https,
            body_len,
        };
        let set: Vec<(&str, &[u8])> = f.set.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let mut params = Vec::with_capacity(1024);
        fulcrum_fcgi::cgi::params(&cgi_req, &cgi_app, &set, &mut params)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e:?}")))?;
        let mut st = self.st.borrow_mut();
        st.method = Some(req.method());
        st.max_head = limits.max_head;
        let id = self.id();
        fulcrum_fcgi::begin_request(&mut st.out, id, app.keep_conn);
        fulcrum_fcgi::stream(&mut st.out, Kind::Params, id, &params);
        fulcrum_fcgi::end_stream(&mut st.out, Kind::Params, id);
        st.sent_head = true;
        if matches!(info.body, fulcrum_http::Body::None | fulcrum_http::Body::Length(0)) {
            fulcrum_fcgi::end_stream(&mut st.out, Kind::Stdin, id);
            st.sent_end = true;
        }
        self.flush(&mut st).map(drop)
    }

    /// Writes what can be written now: `Ok(true)` once nothing waits (on a shared connection:
    /// the records are queued, and its queue has room).
    fn flush(&self, st: &mut State) -> io::Result<bool> {
        let stream = match &self.wire {
            Wire::Own(s) => s,
            Wire::Shared(h) => return h.queue(&mut st.out, st.sent_head),
        };
        while st.written < st.out.len() {
            match stream.try_write(&st.out[st.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => st.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        st.out.clear();
        st.written = 0;
        Ok(true)
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let drained = {
                let mut st = self.st.borrow_mut();
                self.flush(&mut st)
            };
            match drained {
                Ok(true) => return Poll::Ready(Ok(())),
                Ok(false) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            let ready = match &self.wire {
                Wire::Own(s) => s.poll_write_ready(cx),
                Wire::Shared(h) => h.poll_writable(cx),
            };
            match ready {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
        }
    }

    /// The request's body goes as pieces once its head went and until it ended.
    pub fn takes_pieces(&self) -> bool {
        let st = self.st.borrow();
        st.sent_head && !st.sent_end
    }

    pub fn send_data(&self, data: &[u8], end: bool) -> io::Result<()> {
        let mut st = self.st.borrow_mut();
        if st.sent_end {
            return Ok(());
        }
        let id = self.id();
        fulcrum_fcgi::stream(&mut st.out, Kind::Stdin, id, data);
        if end {
            fulcrum_fcgi::end_stream(&mut st.out, Kind::Stdin, id);
            st.sent_end = true;
            self.note_answered(&st);
        }
        self.flush(&mut st).map(drop)
    }

    /// On a shared connection: whether the request went whole and its answer's head was taken
    /// (leaving before `END_REQUEST` then aborts it only if more of the answer comes).
    fn note_answered(&self, st: &State) {
        if let Wire::Shared(h) = &self.wire {
            h.set_answered(st.sent_end && st.head_taken && st.failed.is_none());
        }
    }

    /// FastCGI has no trailers: the body ends.
    pub fn send_trailers(&self) -> io::Result<()> {
        self.send_data(&[], true)
    }

    /// Takes records apart; true when the caller's wait is over (a head, body data, the end,
    /// a failure).
    fn progress(&self, st: &mut State) -> bool {
        // (The input is taken out while its records are read: their content goes straight to
        // the head or the body, without a copy of its own.)
        let inbuf = std::mem::take(&mut st.inbuf);
        let mut at = 0;
        let id = self.id();
        loop {
            match Record::parse(&inbuf[at..]) {
                Ok(Some(r)) => {
                    at += r.len;
                    if r.id != id {
                        continue; // management records (GET_VALUES_RESULT...)
                    }
                    match r.kind {
                        Kind::Stdout if st.head.is_none() && !st.head_taken => {
                            st.pre.extend_from_slice(r.content);
                            take_head(st);
                        }
                        Kind::Stdout => st.body.extend_from_slice(r.content),
                        Kind::EndRequest => {
                            let end = fulcrum_fcgi::EndRequest::parse(r.content);
                            st.ended = true;
                            if end.map_or(true, |e| e.protocol_error().is_some())
                                || (st.head.is_none() && !st.head_taken)
                            {
                                st.failed.get_or_insert(io::ErrorKind::InvalidData);
                            }
                        }
                        // `log-stderr`: each record a line at level `err`, as HAProxy's
                        // `fcgi_strm_handle_stderr()` sends it; dropped without one.
                        Kind::Stderr if !r.content.is_empty() => self.log_stderr(r.content),
                        _ => {}
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    st.failed.get_or_insert(io::ErrorKind::InvalidData);
                    break;
                }
            }
        }
        st.inbuf = inbuf;
        st.inbuf.drain(..at);
        st.failed.is_some()
            || st.ended
            || (!st.head_taken && st.head.is_some())
            || (st.head_taken && !st.body.is_empty())
    }

    /// A `STDERR` record's content to the `log-stderr` targets.
    #[cold]
    #[inline(never)]
    fn log_stderr(&self, text: &[u8]) {
        if let Some(l) = &self.app.stderr {
            l.send_bytes(ERR_LEVEL, text, None);
        }
    }

    /// Reads and takes records apart until the wait is over.
    fn poll_progress(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = match &self.wire {
            Wire::Own(s) => s,
            Wire::Shared(h) => return self.poll_shared(h, cx),
        };
        loop {
            {
                let mut st = self.st.borrow_mut();
                if self.progress(&mut st) {
                    return Poll::Ready(Ok(()));
                }
                let mut chunk = [0u8; 16384];
                match stream.try_read(&mut chunk) {
                    Ok(0) => {
                        st.failed.get_or_insert(io::ErrorKind::UnexpectedEof);
                        return Poll::Ready(Ok(()));
                    }
                    Ok(n) => {
                        st.inbuf.extend_from_slice(&chunk[..n]);
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => {
                        st.failed.get_or_insert(e.kind());
                        return Poll::Ready(Ok(()));
                    }
                }
            }
            match stream.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => {
                    self.st.borrow_mut().failed.get_or_insert(e.kind());
                    return Poll::Ready(Ok(()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// [`FcgiView::poll_progress`] on a shared connection: its task hands over the records.
    fn poll_shared(&self, h: &mux::Handle, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.st.borrow_mut();
        loop {
            if self.progress(&mut st) {
                return Poll::Ready(Ok(()));
            }
            match h.poll_records(cx, &mut st.inbuf) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(k)) => {
                    st.failed.get_or_insert(k);
                    return Poll::Ready(Ok(()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_progress(cx)
    }

    /// Bytes of the answer as HTTP/1 text: none (the head is taken built, the body as
    /// pieces); a failure as its error.
    pub fn try_read(&self, _buf: &mut [u8]) -> io::Result<usize> {
        match self.st.borrow().failed {
            Some(k) => Err(k.into()),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    pub fn has_response_head(&self) -> bool {
        let st = self.st.borrow();
        st.head.is_some() && st.failed.is_none()
    }

    /// The response head built from the CGI head: `Status` left out, `Date` added when
    /// missing, chunked framing when the script gave no length (a whole short body gets its
    /// `Content-Length`, as HAProxy's filter gives it). `None` when there is none, or one a
    /// parse refuses (the answer then fails).
    pub fn take_response_head(&self, head: &mut Head, limits: &Limits) -> Option<usize> {
        let mut st = self.st.borrow_mut();
        let h = st.head.take()?;
        st.head_taken = true;
        let bodiless = st.method == Some(Method::Head) || matches!(h.status, 204 | 304);
        let reason: &[u8] =
            if h.reason.is_empty() { fulcrum_http::default_reason(h.status) } else { &h.reason };
        let built = (|| {
            head.begin_response(h.status, reason)?;
            let mut sized = false;
            let mut dated = false;
            for (n, v) in &h.fields {
                if n.eq_ignore_ascii_case(b"status") {
                    continue;
                }
                sized |= n.eq_ignore_ascii_case(b"content-length");
                dated |= n.eq_ignore_ascii_case(b"date");
                head.build_field(n, v, limits)?;
            }
            if !dated {
                let mut d = Vec::with_capacity(32);
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                crate::log::dates::http_date(&mut d, now.map_or(0, |d| d.as_secs() as i64));
                head.build_field(b"date", &d, limits)?;
            }
            if !sized && !bodiless {
                if st.ended {
                    let n = st.body.len().to_string();
                    head.build_field(b"content-length", n.as_bytes(), limits)?;
                } else {
                    head.build_field(b"transfer-encoding", b"chunked", limits)?;
                }
            }
            head.end_head(limits)
        })();
        match built {
            Ok(n) => {
                // As HAProxy's FastCGI multiplexer reads a CGI head (`H1_MF_CLEAN_CONN_HDR`).
                fulcrum_http::clean_connection(head);
                self.note_answered(&st);
                Some(n)
            }
            Err(_) => {
                head.clear();
                st.failed = Some(io::ErrorKind::InvalidData);
                None
            }
        }
    }

    pub fn gives_pieces(&self) -> bool {
        self.st.borrow().head_taken
    }

    /// The next piece of the answer's body; data is swapped into `buf`.
    pub fn poll_piece(&self, cx: &mut Context<'_>, buf: &mut Vec<u8>) -> Poll<io::Result<Piece>> {
        if self.poll_progress(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = self.st.borrow_mut();
        if !st.body.is_empty() {
            buf.clear();
            std::mem::swap(buf, &mut st.body);
            // More may still be buffered as records.
            let _ = self.progress(&mut st);
            let end = st.ended && st.body.is_empty() && st.failed.is_none();
            return Poll::Ready(Ok(Piece::Data { end }));
        }
        match (st.failed, st.ended) {
            (Some(k), _) => Poll::Ready(Err(io::Error::from(k))),
            (None, true) => Poll::Ready(Ok(Piece::End)),
            (None, false) => Poll::Pending,
        }
    }

    /// The connection, when it may carry another request (`option keep-conn`): its request
    /// ended cleanly, nothing of it waits to be read or written. (A shared connection stays
    /// the worker's.)
    pub fn into_reusable(self) -> Option<Stream> {
        if let Wire::Own(stream) = &self.wire {
            // An answer whose length was reached may have its `END_REQUEST` read already.
            let mut st = self.st.borrow_mut();
            let mut chunk = [0u8; 512];
            while !st.ended && st.failed.is_none() && st.body.is_empty() {
                match stream.try_read(&mut chunk) {
                    Ok(n) if n > 0 => st.inbuf.extend_from_slice(&chunk[..n]),
                    _ => break,
                }
                self.progress(&mut st);
            }
        }
        let Wire::Own(stream) = self.wire else { return None };
        let st = self.st.into_inner();
        let clean = st.ended
            && st.failed.is_none()
            && st.sent_end
            && st.inbuf.is_empty()
            && st.body.is_empty()
            && st.written == st.out.len();
        (clean && self.app.keep_conn).then_some(stream)
    }

    /// Waits until the server sent something or closed; `Ok(true)`: it closed (on a shared
    /// connection: records for this request came, or the connection failed).
    pub async fn peer_closed(&self) -> io::Result<bool> {
        match &self.wire {
            Wire::Own(s) => s.peer_closed().await,
            Wire::Shared(_) => {
                std::future::poll_fn(|cx| self.poll_progress(cx)).await?;
                Ok(self.st.borrow().failed.is_some())
            }
        }
    }
}

/// Parses the CGI head once `STDOUT` holds all of it; what follows is the body.
fn take_head(st: &mut State) {
    match fulcrum_fcgi::head::parse(&st.pre) {
        Ok(Some(h)) => {
            let head = CgiHead {
                status: h.status,
                reason: h.reason.to_vec(),
                fields: h.fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
            };
            let rest = st.pre.split_off(h.len);
            st.pre.clear();
            st.body = rest;
            st.head = Some(head);
        }
        Ok(None) if st.max_head > 0 && st.pre.len() > st.max_head => {
            st.failed = Some(io::ErrorKind::InvalidData);
        }
        Ok(None) => {}
        Err(_) => st.failed = Some(io::ErrorKind::InvalidData),
    }
}
