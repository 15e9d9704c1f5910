//! A connection's prelude before its session starts: the NetScaler Client IP header
//! (`accept-netscaler-cip`, `expect-netscaler-cip`), the PROXY protocol header (`accept-proxy`,
//! `expect-proxy`) and the TLS handshake (`ssl`), each within `timeout client`, then the
//! `tcp-request session` rules; a failure gets HAProxy's log line for a connection that never
//! became a stream. Must not touch: the session (the accept loop starts it after).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::{session_rules_on, Slots};
use crate::connection::Stream;
use crate::counters::Counters;
use crate::frontend::{Bind, Frontend};
use crate::tcp::Accepted;

/// `f`, bounded by `limit` when there is one (`None`: it timed out).
async fn within<F: std::future::Future>(limit: Option<Duration>, f: F) -> Option<F::Output> {
    match limit {
        Some(d) => tokio::time::timeout(d, f).await.ok(),
        None => Some(f.await),
    }
}

/// A PROXY protocol header to read or a TLS handshake to run before the session starts.
pub(super) fn needs_prelude(bind: &Bind, conn: &Accepted) -> bool {
    let headed = bind.accept_proxy || conn.expect_proxy || bind.netscaler_cip.is_some();
    (bind.tls.is_some() || headed || conn.expect_cip) && !conn.prepared
}

/// Reads a NetScaler Client IP header (of the bind line's magic number, 0 without one, as
/// HAProxy compares it) within `timeout client`: its addresses become the session's. A
/// failure closes the connection (a reset for a header that is not one) with HAProxy's log
/// line.
async fn netscaler(slots: &Slots, conn: &mut Accepted) -> bool {
    use crate::connection::netscaler::{self, Bad};
    let magic = slots.bind.netscaler_cip.unwrap_or(0);
    let r = within(slots.frontend.timeouts.client, netscaler::read(&conn.client, magic)).await;
    let (why, reset) = match r {
        Some(Ok(h)) => {
            conn.peer = Some(h.src);
            if let Some(a) = conn.vars.as_mut().and_then(|v| v.addrs.as_mut()) {
                (a.src, a.sess_src, a.dst, a.sess_dst) =
                    (Some(h.src), Some(h.src), Some(h.dst), Some(h.dst));
            }
            let addrs = Some((h.src, h.dst));
            conn.proxied = Some(Box::new(crate::connection::proxy::Header { addrs, tlvs: vec![] }));
            return true;
        }
        Some(Err((bad, src))) => {
            conn.peer = src.or(conn.peer);
            let reset = matches!(bad, Bad::Truncated | Bad::Magic | Bad::Protocol);
            (bad.message(), reset)
        }
        None => (netscaler::TIMEOUT, false),
    };
    embryonic_log(slots, conn.peer, why);
    if reset {
        let _ = socket2::SockRef::from(&conn.client).set_linger(Some(Duration::ZERO));
    }
    false
}

/// Reads the PROXY protocol header (`accept-proxy`) and runs the TLS handshake (`ssl`), within
/// `timeout client`. A failure closes the connection with HAProxy's log line for connections
/// that never became a stream (`fe/bind: <reason>`).
pub(super) async fn prelude(slots: &Slots, mut conn: Accepted) -> Option<Accepted> {
    let (fe, bind) = (&*slots.frontend, &*slots.bind);
    let limit = fe.timeouts.client;
    conn.prepared = true;
    // A NetScaler Client IP header comes before a PROXY one, as in HAProxy.
    if (bind.netscaler_cip.is_some() || conn.expect_cip) && !netscaler(slots, &mut conn).await {
        return None;
    }
    if bind.accept_proxy || conn.expect_proxy {
        let r = within(limit, crate::connection::proxy::read(&conn.client)).await;
        let why = match r {
            Some(Ok(h)) => {
                if let Some((src, dst)) = h.addrs {
                    conn.peer = Some(src);
                    // Addresses a `tcp-request connection set-src|dst` gave stay the
                    // connection's own (`fc_src`); the header's are the session's.
                    if let Some(a) = conn.vars.as_mut().and_then(|v| v.addrs.as_mut()) {
                        (a.src, a.sess_src, a.dst, a.sess_dst) =
                            (Some(src), Some(src), Some(dst), Some(dst));
                    }
                }
                if h.addrs.is_some() || !h.tlvs.is_empty() {
                    conn.proxied = Some(Box::new(h));
                }
                None
            }
            Some(Err(Ok(bad))) => Some(bad.message()),
            Some(Err(Err(_))) => Some("Connection error while waiting for PROXY protocol header"),
            None => Some("Timeout while waiting for PROXY protocol header"),
        };
        if let Some(why) = why {
            embryonic_log(slots, conn.peer, why);
            // As HAProxy: the connection is reset.
            let _ = socket2::SockRef::from(&conn.client).set_linger(Some(Duration::ZERO));
            return None;
        }
    }
    if let Some(config) = &bind.tls {
        Counters::inc(&crate::counters::tls().fe_accepts);
        // `maxsslconn` reached: as HAProxy, the connection closes before any byte is read,
        // and no log line (no session began).
        if !crate::counters::tls_room() {
            return None;
        }
        // The client goes into the TLS layer; the rest waits for it.
        // Counted on the frontend, and on the bind line with `option socket-stats`.
        let handshake_done = |ok, resumed| match slots.bind.counters.as_deref() {
            Some(l) => crate::counters::handshake_done(&[&fe.counters, l], ok, resumed, true),
            None => crate::counters::handshake_done(&[&fe.counters], ok, resumed, true),
        };
        let mut plain = None;
        let rest = conn.map_client(|c| plain = Some(c));
        let (Some(client), peer) = (plain, rest.peer) else { return None };
        let (tls, r) = if config.routed() {
            // The ClientHello first: a crt-list line's own options for the name asked, or a
            // capture of its lists.
            let pick = |name: Option<&str>| config.pick(name);
            let accept =
                crate::connection::tls::TlsStream::accept_routed(client, &pick, config.capture);
            match within(limit, accept).await {
                Some(Ok(s)) => (s, Some(Ok(()))),
                Some(Err(e)) => {
                    handshake_done(false, false);
                    embryonic_log(slots, peer, handshake_failure(&e));
                    return None;
                }
                None => {
                    handshake_done(false, false);
                    embryonic_log(slots, peer, "Timeout during SSL handshake");
                    return None;
                }
            }
        } else {
            let tls = crate::connection::tls::TlsStream::server(client, Arc::clone(&config.config))
                .ok()?;
            let r = within(limit, tls.handshake()).await;
            (tls, r)
        };
        let why = match r {
            Some(Ok(())) => None,
            Some(Err(e)) => Some(handshake_failure(&e)),
            None => Some("Timeout during SSL handshake"),
        };
        let resumed = why.is_none() && tls.resumed();
        handshake_done(why.is_none(), resumed);
        conn = rest.map_client(|()| Stream::Tls(Box::new(tls)));
        if let Some(why) = why {
            embryonic_log(slots, conn.peer, why);
            return None;
        }
    }
    // `tcp-request session` rules, now that the PROXY header and the handshake are over.
    if !session_rules(fe, &mut conn) {
        conn.vars = None;
        fe.count(conn.bind_no, |c| &c.denied_sess);
        return None;
    }
    Some(conn)
}

/// Runs `tcp-request session` rules on a connection (its variables and trackers kept in it),
/// then counts the session on what it tracks. False when they reject it.
pub(super) fn session_rules(fe: &Frontend, conn: &mut Accepted) -> bool {
    let r = &fe.rules;
    if r.tcp_session.is_empty() && conn.vars.is_none() {
        return true;
    }
    let mut vars = conn.vars.take().map(|b| *b).unwrap_or_default();
    let dst = conn.local().or_else(|| {
        socket2::SockRef::from(&conn.client).local_addr().ok().and_then(|a| a.as_socket())
    });
    let src = conn.proxied.as_ref().and_then(|h| h.addrs).map(|a| a.0).or(conn.peer);
    let empty = crate::rules::sample::Vars::default();
    let mut mk = crate::frontend::Frontend::ctx(fe, src, dst, &empty);
    mk.client = Some(&conn.client);
    mk.pp = conn.proxied.as_deref();
    let ok = session_rules_on(fe, &mk, &mut vars);
    if let Some(a) = &vars.addrs {
        conn.peer = a.src;
    }
    if !vars.is_empty() {
        conn.vars = Some(Box::new(vars));
    }
    ok
}

/// HAProxy's words for a failed handshake.
fn handshake_failure(e: &io::Error) -> &'static str {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        "Connection closed during SSL handshake"
    } else {
        "SSL handshake failure"
    }
}

/// HAProxy's line for a connection that ended before it became a stream (a bad PROXY header,
/// a failed TLS handshake): `client:port [date] frontend/bind: reason`, when the frontend logs.
fn embryonic_log(slots: &Slots, peer: Option<std::net::SocketAddr>, why: &str) {
    let fe = &*slots.frontend;
    if slots.shared.debug {
        eprintln!("{}: {why}", fe.name);
    }
    let Some(logger) = &fe.logger else { return };
    if fe.log.line.is_none() {
        return;
    }
    let mut date = Vec::new();
    crate::log::dates::log_date(&mut date, crate::clock::wall());
    let (ip, port) = match peer {
        Some(p) => (p.ip().to_string(), p.port()),
        None => ("unix".to_string(), 0),
    };
    let bind = slots.bind.name.clone().unwrap_or_else(|| slots.bind.number.to_string());
    let line =
        format!("{ip}:{port} [{}] {}/{bind}: {why}", String::from_utf8_lossy(&date), fe.name);
    logger.send(crate::log::syslog::INFO, &line);
}
