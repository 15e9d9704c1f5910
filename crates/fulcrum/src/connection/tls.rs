//! TLS over a [`Stream`], with the same non-blocking contract as a plain socket: `try_read`
//! gives plaintext or `WouldBlock`, `try_send` takes plaintext or says `WouldBlock`, readiness
//! is polled the same way. Sessions (`mode tcp`, `mode http`, checks) never know which they have.
//!
//! rustls does the protocol (see `crate::tls` for the choice of crypto); this module only moves
//! records: one `recv` of up to 16 kB per read into a pool buffer (rustls alone would read 4 kB
//! at a time), fed to rustls from memory; ciphertext leaves in one `sendmsg` per flush, with
//! `MSG_MORE` when the caller says more follows. Ciphertext that the socket did not take is
//! flushed by the next write, and by any wait for reading (`poll_read_ready`), so a response
//! never stays behind in rustls while the session waits for the next request.
//!
//! The certificate `tls::certs::Resolver` chose for a handshake step is handed over here
//! (`CHOSEN`, `take_chosen`): rustls does not say which it sent.
//!
//! Must not touch: certificates and configuration (`crate::tls`), proxy logic.

use std::cell::RefCell;
use std::io::{self, IoSlice, Read, Write};
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::sign::CertifiedKey;

use super::{Buf, Stream};
use crate::worker::{Id, Slot};

/// The most bytes kept while reading a ClientHello to capture it (the handshake message may
/// span records; OpenSSL refuses hellos over 128 kB).
const HELLO_MAX: usize = 131_396 + 1024;

/// Plaintext written at once up to this size is copied into one record with its head.
const COALESCE: usize = 16384;

/// A TLS connection over a plain stream.
pub struct TlsStream {
    inner: Stream,
    state: RefCell<State>,
    /// The SNI sent (server connections): an idle connection is reused only for the same.
    sni: Option<Box<str>>,
    counted: crate::counters::Up<'static>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream").field("inner", &self.inner).finish_non_exhaustive()
    }
}

struct State {
    conn: rustls::Connection,
    /// Ciphertext received and not yet given to rustls: `buf[start..end]`.
    inbuf: Option<Buf>,
    start: usize,
    end: usize,
    /// Plaintext rustls holds for us.
    plain: usize,
    /// The peer closed (close_notify or end of stream).
    closed: bool,
    /// The certificate this side presented (server side), for `ssl_f_*`.
    local_cert: Option<std::sync::Arc<rustls::sign::CertifiedKey>>,
    /// The session id (`ssl_fc_session_id`), read from the ServerHello.
    sid: SessionId,
    /// What `tune.ssl.capture-buffer-size` kept of the client's ClientHello.
    hello: Option<Box<crate::connection::capture::Capture>>,
    /// The handshake's secrets, under `tune.ssl.keylog on`.
    keys: Option<Box<super::keylog::Keys>>,
}

/// A TLS session id as OpenSSL keeps it: in TLS 1.2 the one the ServerHello carries (the same
/// on a resumption by id), in TLS 1.3 a random one per session (the ServerHello only echoes
/// the client's legacy id there).
#[derive(Default)]
struct SessionId {
    /// 0: not seen yet, 1: read from the ServerHello, 2: drawn for a TLS 1.3 session.
    from: u8,
    len: u8,
    bytes: [u8; 32],
    /// The ServerHello's random.
    random: [u8; 32],
}

impl SessionId {
    /// Reads the session id of a ServerHello at the start of `rec` (a handshake record).
    fn capture(&mut self, rec: &[u8]) {
        // record header (5), handshake header (4), version (2), random (32), id length.
        if self.from != 0 || rec.len() < 44 || rec[0] != 22 || rec[5] != 2 {
            return;
        }
        self.random.copy_from_slice(&rec[11..43]);
        let len = usize::from(rec[43]);
        if let Some(id) = rec.get(44..44 + len).filter(|_| len <= 32) {
            self.bytes[..len].copy_from_slice(id);
            self.len = len as u8;
            self.from = 1;
        }
    }
}

/// Writes ciphertext to the socket without waiting.
struct SockWriter<'a> {
    inner: &'a Stream,
    more: bool,
    /// While a server-side handshake has not sent its ServerHello: read its session id.
    sid: Option<&'a mut SessionId>,
}

impl Write for SockWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(sid) = self.sid.as_deref_mut() {
            sid.capture(buf);
        }
        self.inner.try_send(&[], buf, self.more)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if let (Some(sid), Some(first)) = (self.sid.as_deref_mut(), bufs.first()) {
            sid.capture(first);
        }
        self.inner.try_send_vectored(bufs, self.more)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Why a connection got no TLS layer: `maxsslconn` was reached (HAProxy's
/// `CO_ER_SSL_TOO_MANY`).
#[derive(Debug)]
pub struct TooMany;

impl std::fmt::Display for TooMany {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Too many SSL connections")
    }
}

impl std::error::Error for TooMany {}

/// `Ok` while `maxsslconn` allows one more TLS connection, else [`TooMany`].
pub fn room() -> io::Result<()> {
    match crate::counters::tls_room() {
        true => Ok(()),
        false => Err(io::Error::other(TooMany)),
    }
}

/// Whether `e` is [`room`]'s refusal.
pub fn is_too_many(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<TooMany>())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl State {
    fn pending_in(&self) -> bool {
        self.start < self.end
    }

    /// Sends queued ciphertext; `WouldBlock` if some remains.
    fn flush(&mut self, inner: &Stream, more: bool) -> io::Result<()> {
        while self.conn.wants_write() {
            let watch = self.sid.from == 0
                && self.conn.is_handshaking()
                && matches!(self.conn, rustls::Connection::Server(_));
            let sid = if watch { Some(&mut self.sid) } else { None };
            match self.conn.write_tls(&mut SockWriter { inner, more, sid }) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Gives buffered ciphertext to rustls and decrypts it, until plaintext is available or
    /// nothing is left. Errors are protocol errors (an alert is queued and flushed).
    fn feed(&mut self, inner: &Stream) -> io::Result<()> {
        while self.pending_in() && self.conn.wants_read() {
            let buf = self.inbuf.as_deref().unwrap_or(&[]);
            let mut slice = &buf[self.start..self.end];
            if self.sid.from == 0
                && self.conn.is_handshaking()
                && matches!(self.conn, rustls::Connection::Client(_))
            {
                self.sid.capture(slice);
            }
            let n = self.conn.read_tls(&mut slice)?;
            self.start += n;
            self.process(inner)?;
            if n == 0 {
                break;
            }
        }
        if !self.pending_in() {
            self.inbuf = None;
            self.start = 0;
            self.end = 0;
        }
        Ok(())
    }

    fn process(&mut self, inner: &Stream) -> io::Result<()> {
        match self.conn.process_new_packets() {
            Ok(st) => {
                self.plain = st.plaintext_bytes_to_read();
                self.closed |= st.peer_has_closed();
                Ok(())
            }
            Err(e) => {
                // The alert goes out if the socket takes it.
                let _ = self.flush(inner, false);
                Err(tls_error(e))
            }
        }
    }

    /// Reads ciphertext from the socket once (up to a pool buffer). `Ok(false)` at end of
    /// stream.
    fn recv(&mut self, inner: &Stream) -> io::Result<bool> {
        let buf = self.inbuf.get_or_insert_with(Buf::take);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let space = buf.len() - self.end;
        match inner.try_read(&mut buf[self.end..]) {
            Ok(0) => {
                // rustls learns of the end of stream.
                let _ = self.conn.read_tls(&mut &[][..]);
                self.closed = true;
                if !self.pending_in() {
                    self.inbuf = None;
                }
                Ok(false)
            }
            Ok(n) => {
                self.end += n;
                if n < space {
                    inner.clear_read_ready();
                }
                Ok(true)
            }
            Err(e) => {
                if !self.pending_in() {
                    self.inbuf = None;
                }
                Err(e)
            }
        }
    }

    /// Plaintext for `out`: `Ok(0)` at the end, `WouldBlock` when none is there yet.
    fn read_plain(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.conn.reader().read(out) {
            Ok(n) => {
                self.plain = self.plain.saturating_sub(n);
                Ok(n)
            }
            // The peer closed without close_notify: an end of stream like any other.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl TlsStream {
    /// The same TLS connection over `f(inner)`.
    pub fn map_inner(self, f: impl FnOnce(Stream) -> io::Result<Stream>) -> io::Result<Self> {
        let TlsStream { inner, state, sni, counted } = self;
        Ok(TlsStream { inner: f(inner)?, state, sni, counted })
    }

    /// A server-side TLS connection over `inner` (the handshake is run by [`Self::handshake`]).
    pub fn server(inner: Stream, config: std::sync::Arc<rustls::ServerConfig>) -> io::Result<Self> {
        let conn = rustls::ServerConnection::new(config).map_err(tls_error)?;
        Ok(Self::new(inner, conn.into(), crate::counters::tls_layer()))
    }

    /// A client-side TLS connection to a server.
    pub fn client(
        inner: Stream,
        config: std::sync::Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<Self> {
        room()?;
        let sni = match &name {
            rustls::pki_types::ServerName::DnsName(d) => Some(d.as_ref().into()),
            _ => None,
        };
        let conn = rustls::ClientConnection::new(config, name).map_err(tls_error)?;
        let mut s = Self::new(inner, conn.into(), crate::counters::tls_layer());
        s.sni = sni;
        Ok(s)
    }

    /// A server-side TLS connection whose configuration is chosen by the name the client asks
    /// for (`crt-list` lines with their own SSL options): the ClientHello is read first, then
    /// the handshake runs (the caller bounds the whole in time). With a `capture` size, the
    /// ClientHello's lists are kept for the `ssl_fc_cipherlist_*` fetches.
    pub async fn accept_routed(
        inner: Stream,
        pick: &dyn Fn(Option<&str>) -> std::sync::Arc<rustls::ServerConfig>,
        capture: usize,
    ) -> io::Result<Self> {
        // (Counted from the start, as HAProxy counts its layer from the accept.)
        let counted = crate::counters::tls_layer();
        let mut acceptor = rustls::server::Acceptor::default();
        let mut buf = Buf::take();
        // (The bytes read until the acceptor has the ClientHello: its records, whole.)
        let mut raw = Vec::new();
        loop {
            std::future::poll_fn(|cx| inner.poll_read_ready(cx)).await?;
            let n = match inner.try_read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            let mut slice = &buf[..n];
            if capture > 0 && raw.len() < HELLO_MAX {
                raw.extend_from_slice(slice);
            }
            while !slice.is_empty() {
                if acceptor.read_tls(&mut slice)? == 0 {
                    break;
                }
            }
            let refused = |e: rustls::Error, mut alert: rustls::server::AcceptedAlert| {
                let _ = alert.write_all(&mut SockWriter { inner: &inner, more: false, sid: None });
                tls_error(e)
            };
            match acceptor.accept() {
                Ok(None) => {
                    if n < buf.len() {
                        inner.clear_read_ready();
                    }
                }
                Ok(Some(accepted)) => {
                    let name = accepted.client_hello().server_name().map(str::to_string);
                    let config = pick(name.as_deref());
                    let _ = take_chosen();
                    let conn = accepted.into_connection(config).map_err(|(e, a)| {
                        super::keylog::take_into(&mut None);
                        refused(e, a)
                    })?;
                    drop(buf);
                    let s = Self::new(inner, conn.into(), counted);
                    s.state.borrow_mut().local_cert = take_chosen();
                    if super::keylog::pending() {
                        super::keylog::take_into(&mut s.state.borrow_mut().keys);
                    }
                    if capture > 0 {
                        s.state.borrow_mut().hello =
                            crate::connection::capture::first_message(&raw)
                                .and_then(|m| crate::connection::capture::capture(&m, capture))
                                .map(Box::new);
                    }
                    s.handshake().await?;
                    return Ok(s);
                }
                Err((e, alert)) => return Err(refused(e, alert)),
            }
        }
    }

    /// (`counted`: as HAProxy counts its SSL endpoints, from the layer's creation on.)
    fn new(inner: Stream, conn: rustls::Connection, counted: crate::counters::Up<'static>) -> Self {
        TlsStream {
            counted,
            inner,
            sni: None,
            state: RefCell::new(State {
                conn,
                inbuf: None,
                start: 0,
                end: 0,
                plain: 0,
                closed: false,
                local_cert: None,
                sid: SessionId::default(),
                hello: None,
                keys: None,
            }),
        }
    }

    pub fn inner(&self) -> &Stream {
        &self.inner
    }

    /// The SNI this (server) connection sent.
    pub fn sni(&self) -> Option<&str> {
        self.sni.as_deref()
    }

    /// Runs the handshake to its end (the caller bounds it in time).
    pub async fn handshake(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_handshake(cx)).await
    }

    fn poll_handshake(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.state.borrow_mut();
        loop {
            if st.conn.wants_write() {
                match st.flush(&self.inner, false) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::task::ready!(self.inner.poll_write_ready(cx))?;
                        continue;
                    }
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            if !st.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if st.pending_in() {
                let fed = st.feed(&self.inner);
                // (Taken even when the step failed: nothing stays for the next connection.)
                if super::keylog::pending() {
                    super::keylog::take_into(&mut st.keys);
                }
                fed?;
                if let Some(k) = take_chosen() {
                    st.local_cert = Some(k);
                }
                if st.conn.wants_write() || !st.conn.is_handshaking() {
                    continue;
                }
            }
            if st.closed {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
            std::task::ready!(self.inner.poll_read_ready(cx))?;
            match st.recv(&self.inner) {
                Ok(true) => {}
                Ok(false) => {
                    st.feed(&self.inner)?;
                    return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    pub fn try_read(&self, out: &mut [u8]) -> io::Result<usize> {
        let mut st = self.state.borrow_mut();
        loop {
            if st.plain > 0 || st.closed && !st.pending_in() {
                return st.read_plain(out);
            }
            if st.pending_in() {
                let before = st.end - st.start;
                st.feed(&self.inner)?;
                if st.plain > 0 || st.closed {
                    continue;
                }
                if st.pending_in() && st.end - st.start == before {
                    // rustls takes nothing more and gives nothing: never spin on it.
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "TLS input stalled"));
                }
                if st.conn.wants_write() {
                    // A key update or a ticket to answer: best effort, the rest later.
                    let _ = st.flush(&self.inner, false);
                }
                if st.pending_in() {
                    continue;
                }
            }
            if !st.recv(&self.inner)? {
                st.feed(&self.inner)?;
                return st.read_plain(out);
            }
        }
    }

    /// Ready to read when plaintext or ciphertext is buffered; otherwise when the socket is.
    /// Ciphertext still queued is pushed out first (and the wait also covers the socket
    /// becoming writable for it).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.state.borrow_mut();
        if st.conn.wants_write() {
            loop {
                match st.flush(&self.inner, false) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        match self.inner.poll_write_ready(cx) {
                            Poll::Ready(Ok(())) => continue,
                            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                            Poll::Pending => break,
                        }
                    }
                    Err(e) => return Poll::Ready(Err(e)),
                    Ok(()) => break,
                }
            }
        }
        if st.plain > 0 || st.pending_in() || st.closed {
            return Poll::Ready(Ok(()));
        }
        drop(st);
        self.inner.poll_read_ready(cx)
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_write_ready(cx)
    }

    /// Encrypts what fits of `head` then `data` and sends it; `WouldBlock` while earlier
    /// ciphertext is still queued.
    pub fn try_send(&self, head: &[u8], data: &[u8], more: bool) -> io::Result<usize> {
        let mut st = self.state.borrow_mut();
        st.flush(&self.inner, more)?;
        let total = head.len() + data.len();
        let n = if head.is_empty() {
            st.conn.writer().write(data)?
        } else if total <= COALESCE {
            SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                s.clear();
                s.extend_from_slice(head);
                s.extend_from_slice(data);
                st.conn.writer().write(&s)
            })?
        } else {
            let h = st.conn.writer().write(head)?;
            if h < head.len() {
                h
            } else {
                h + st.conn.writer().write(data)?
            }
        };
        match st.flush(&self.inner, more) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && n > 0 => {}
            Err(e) => return Err(e),
        }
        Ok(n)
    }

    /// Sends what is still queued; `WouldBlock` if the socket does not take all of it.
    pub fn try_flush(&self) -> io::Result<()> {
        self.state.borrow_mut().flush(&self.inner, false)
    }

    /// Sends close_notify, then a FIN.
    pub fn shutdown_write(&self) -> io::Result<()> {
        let mut st = self.state.borrow_mut();
        st.conn.send_close_notify();
        let _ = st.flush(&self.inner, false);
        drop(st);
        self.inner.shutdown_write()
    }

    /// Is plaintext already buffered (the peer sent something)?
    pub fn has_buffered(&self) -> bool {
        let st = self.state.borrow();
        st.plain > 0 || st.pending_in()
    }

    /// The leaf of the certificate this side presented (server side).
    pub fn local_cert(&self) -> Option<rustls::pki_types::CertificateDer<'static>> {
        self.state.borrow().local_cert.as_ref().map(|k| k.cert[0].clone())
    }

    /// Reads what the handshake logged under `tune.ssl.keylog on`.
    pub fn with_keys<R>(&self, f: impl FnOnce(&super::keylog::Keys) -> R) -> Option<R> {
        self.state.borrow().keys.as_deref().map(f)
    }

    /// The ServerHello's random, on a server-side connection (`ssl_fc_server_random`).
    pub fn server_random(&self) -> Option<[u8; 32]> {
        let st = self.state.borrow();
        (st.sid.from != 0 && matches!(st.conn, rustls::Connection::Server(_)))
            .then_some(st.sid.random)
    }

    /// Reads what was captured of the client's ClientHello (`None`: nothing captured).
    pub fn with_hello<R>(
        &self,
        f: impl FnOnce(&crate::connection::capture::Capture) -> R,
    ) -> Option<R> {
        self.state.borrow().hello.as_deref().map(f)
    }

    /// The session id as OpenSSL would give it (`ssl_fc_session_id`): `None` when empty.
    pub fn session_id(&self) -> Option<Vec<u8>> {
        let mut st = self.state.borrow_mut();
        if st.conn.is_handshaking() {
            return None;
        }
        if st.conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3) && st.sid.from != 2
        {
            let sid = &mut st.sid;
            aws_lc_rs::rand::fill(&mut sid.bytes).ok()?;
            (sid.len, sid.from) = (32, 2);
        }
        let sid = &st.sid;
        (sid.from != 0 && sid.len > 0).then(|| sid.bytes[..usize::from(sid.len)].to_vec())
    }

    /// Facts about the session for fetches and logs.
    /// The handshake resumed a session: no new keys were made.
    pub fn resumed(&self) -> bool {
        self.with_conn(|c| c.handshake_kind() == Some(rustls::HandshakeKind::Resumed))
    }

    pub fn with_conn<R>(&self, f: impl FnOnce(&rustls::Connection) -> R) -> R {
        f(&self.state.borrow().conn)
    }
}

static SCRATCH: Slot<RefCell<Vec<u8>>> = Slot::new(Id::TlsScratch, || RefCell::new(Vec::new()));

/// What the last handshake step on this thread did that rustls does not tell its connection:
/// the certificate it chose (`ssl_f_*`) and the secrets it logged (`tune.ssl.keylog`). The
/// connection that ran the step takes them at once.
#[derive(Default)]
pub struct Step {
    pub chosen: Option<Arc<CertifiedKey>>,
    pub keys: Vec<super::keylog::Entry>,
}

pub static CHOSEN: Slot<RefCell<Step>> = Slot::new(Id::TlsChosen, RefCell::default);

/// Takes the certificate `tls::certs::Resolver` chose on this thread since the last call.
pub fn take_chosen() -> Option<Arc<CertifiedKey>> {
    CHOSEN.with(|c| c.borrow_mut().chosen.take())
}
