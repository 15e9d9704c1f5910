//! The TLS fetches (`ssl_fc*`, `ssl_c_*`, `ssl_bc*`) as values: what `tls::facts` and the
//! connections' TLS layers say, in HAProxy's words.
//!
//! Must not touch: the connections' I/O.

use std::borrow::Cow;

use fulcrum_config::{HelloPart, KeyPart, TlsFetch};
use rustls::{Connection, HandshakeKind};

use super::Value;
use crate::connection::capture::{suite_name, without_grease, Capture};
use crate::connection::Stream;
use crate::tls::facts::{cipher_name, protocol_name, ServerSide, Snapshot, Told};

/// Evaluates a TLS fetch on the client connection (`back`: on the server connection), or on
/// what explain was `told` of it; `None` without a value (a clear-text connection, as
/// HAProxy).
pub fn fetch(
    t: &TlsFetch,
    client: Option<&Stream>,
    told: Option<&Told<'_>>,
    server: Option<ServerSide<'_>>,
) -> Option<Value<'static>> {
    if let (None, Some(told), false) = (client, told, t.is_back()) {
        return self::told(told, t);
    }
    let server = match server {
        Some(ServerSide::Facts { tls: Some(snap), .. }) if t.is_back() => return snapshot(snap, t),
        Some(ServerSide::Stream(s)) => Some(s),
        _ => None,
    };
    let stream = if t.is_back() { server } else { client };
    let tls = stream.and_then(Stream::tls);
    match (t, tls) {
        (TlsFetch::Used { .. }, _) => return Some(Value::Bool(tls.is_some())),
        // HAProxy answers 0 on clear text for this one (httpslog shows it).
        (TlsFetch::IsResumed { .. }, None) => return Some(Value::Bool(false)),
        _ => {}
    }
    let tls = tls?;
    match t {
        TlsFetch::SessionId { .. } => return tls.session_id().map(|id| Value::Str(Cow::Owned(id))),
        TlsFetch::Hello { part, grease } => return tls.with_hello(|h| hello(h, *part, *grease))?,
        TlsFetch::Keylog(KeyPart::ServerRandom) => {
            return tls.server_random().map(|r| Value::Str(Cow::Owned(r.to_vec())))
        }
        TlsFetch::Keylog(part) => return tls.with_keys(|k| keylog(k, *part))?,
        _ => {}
    }
    let s = |v: &str| Value::Str(Cow::Owned(v.as_bytes().to_vec()));
    let bin = |v: &[u8]| Value::Str(Cow::Owned(v.to_vec()));
    tls.with_conn(|c| match t {
        TlsFetch::Used { .. } | TlsFetch::SessionId { .. } => None,
        TlsFetch::HasSni => {
            Some(Value::Bool(matches!(c, Connection::Server(s) if s.server_name().is_some())))
        }
        TlsFetch::Sni => match c {
            Connection::Server(sc) => sc.server_name().map(s),
            Connection::Client(_) => None,
        },
        TlsFetch::Protocol { .. } => c.protocol_version().map(|v| s(protocol_name(v))),
        TlsFetch::Cipher { .. } => c.negotiated_cipher_suite().map(|x| s(cipher_name(x.suite()).0)),
        TlsFetch::Keysize { .. } => {
            c.negotiated_cipher_suite().map(|x| Value::Int(cipher_name(x.suite()).1))
        }
        TlsFetch::Alpn { .. } => c.alpn_protocol().map(bin),
        TlsFetch::IsResumed { .. } => {
            Some(Value::Bool(c.handshake_kind() == Some(HandshakeKind::Resumed)))
        }
        // (Only established connections reach a rule: no error, no error text.)
        TlsFetch::Err { text, .. } => (!text).then_some(Value::Int(0)),
        TlsFetch::HasEarly => Some(Value::Bool(false)),
        TlsFetch::HasCrt => Some(Value::Bool(c.peer_certificates().is_some_and(|p| !p.is_empty()))),
        TlsFetch::Local(inner) => cert_fetch(inner, &tls.local_cert()?),
        TlsFetch::ServerCert(inner) => cert_fetch(inner, c.peer_certificates()?.first()?),
        _ => {
            let der = c.peer_certificates()?.first()?;
            cert_fetch(t, der)
        }
    })
}

/// `ssl_c_*` on the client's certificate.
fn cert_fetch(t: &TlsFetch, der: &[u8]) -> Option<Value<'static>> {
    let s = |v: String| Value::Str(Cow::Owned(v.into_bytes()));
    if let TlsFetch::Der = t {
        return Some(Value::Str(Cow::Owned(der.to_vec())));
    }
    if let TlsFetch::Sha1 = t {
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, der);
        return Some(Value::Str(Cow::Owned(d.as_ref().to_vec())));
    }
    let info = crate::tls::x509::Info::parse(der)?;
    Some(match t {
        TlsFetch::Dn { issuer, field, occ } => {
            let dn = if *issuer { &info.issuer } else { &info.subject };
            match field {
                Some(name) => s(crate::tls::x509::Info::dn_field(dn, name, *occ)?),
                None => s(dn.clone()),
            }
        }
        TlsFetch::Serial => Value::Str(Cow::Owned(info.serial)),
        TlsFetch::NotAfter => s(info.not_after_text?),
        TlsFetch::NotBefore => s(info.not_before_text?),
        TlsFetch::Version => Value::Int(i64::from(info.version)),
        TlsFetch::SigAlg => s(info.sig_alg),
        TlsFetch::KeyAlg => s(info.key_alg),
        _ => return None,
    })
}

/// `ssl_bc*` on what a stream of an HTTP/2 connection kept of the connection's TLS.
fn snapshot(snap: &Snapshot, t: &TlsFetch) -> Option<Value<'static>> {
    let s = |v: &str| Value::Str(Cow::Owned(v.as_bytes().to_vec()));
    match t {
        TlsFetch::Used { .. } => Some(Value::Bool(true)),
        TlsFetch::IsResumed { .. } => Some(Value::Bool(snap.resumed)),
        TlsFetch::SessionId { .. } => snap.session_id.clone().map(|v| Value::Str(Cow::Owned(v))),
        TlsFetch::Protocol { .. } => snap.protocol.map(s),
        TlsFetch::Cipher { .. } => snap.cipher.map(|c| s(c.0)),
        TlsFetch::Keysize { .. } => snap.cipher.map(|c| Value::Int(c.1)),
        TlsFetch::Alpn { .. } => snap.alpn.clone().map(|v| Value::Str(Cow::Owned(v))),
        TlsFetch::Err { text: false, .. } => Some(Value::Int(0)),
        TlsFetch::ServerCert(inner) => cert_fetch(inner, snap.cert.as_ref()?),
        _ => None,
    }
}

/// What `tune.ssl.keylog on` kept of the handshake, as HAProxy 2.6 gives it.
fn keylog(k: &crate::connection::keylog::Keys, part: KeyPart) -> Option<Value<'static>> {
    let bin = |v: &[u8]| Some(Value::Str(Cow::Owned(v.to_vec())));
    match part {
        KeyPart::ClientRandom => bin(&k.client_random?),
        KeyPart::SessionKey => bin(k.master.as_deref()?),
        KeyPart::Secret(label) => bin(k.secret(label)?.as_bytes()),
        KeyPart::ServerRandom => None,
    }
}

/// A part of the captured ClientHello (`ssl_fc_cipherlist_*`...), as HAProxy 2.6 gives it.
fn hello(h: &Capture, part: HelloPart, grease: bool) -> Option<Value<'static>> {
    let list = |l: &[u8]| if grease { without_grease(l) } else { l.to_vec() };
    let bin = |v: Vec<u8>| Some(Value::Str(Cow::Owned(v)));
    match part {
        HelloPart::Ciphers => bin(list(h.ciphers())),
        HelloPart::CiphersHex => bin(super::upper_hex(&list(h.ciphers()))),
        HelloPart::CiphersStr => {
            let mut out = String::new();
            for (i, p) in list(h.ciphers()).chunks_exact(2).enumerate() {
                let id = u16::from_be_bytes([p[0], p[1]]);
                out.push_str(if i == 0 { "" } else { "," });
                match suite_name(id) {
                    Some(n) => out.push_str(n),
                    None => out.push_str(&format!("UNKNOWN({id:04x})")),
                }
            }
            bin(out.into_bytes())
        }
        HelloPart::CiphersXxh => Some(Value::Int(h.xxh64 as i64)),
        HelloPart::Exts => bin(list(h.exts())),
        HelloPart::Groups => bin(list(h.groups())),
        HelloPart::EcFormats => bin(h.formats().to_vec()),
        HelloPart::Version => Some(Value::Int(i64::from(h.version))),
    }
}

/// What explain was told of the client's TLS.
fn told(told: &Told<'_>, t: &TlsFetch) -> Option<Value<'static>> {
    match t {
        TlsFetch::Used { .. } => Some(Value::Bool(true)),
        TlsFetch::HasSni => Some(Value::Bool(told.sni.is_some())),
        TlsFetch::Sni => told.sni.map(|s| Value::Str(Cow::Owned(s.as_bytes().to_vec()))),
        TlsFetch::IsResumed { .. } => Some(Value::Bool(false)),
        TlsFetch::HasCrt => Some(Value::Bool(false)),
        _ => None,
    }
}
