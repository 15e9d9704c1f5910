//! The request as it goes to a server, once the analysers chose its backend: HAProxy's
//! `http_process_request` edits (hop-by-hop fields, `Connection`, the target's default port,
//! framing, `option forwardfor`/`originalto`), cookie persistence, `stick match|on`, and the
//! key a hash-based `balance` hashes. [`Txn::for_server`] runs them in that order.
//!
//! Must not touch: sockets, the choice of a server itself (the backend's balancer makes it
//! from what these give).

use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_http::{Body, Head, Version};

use super::Txn;
use crate::backend::Backend;
use crate::http_settings::{ConnMode, HashKey, HttpProxy};
use crate::outcome::{CookieIn, CookieOut};
use crate::rules;

/// What a hash-based balance uses for one request.
#[derive(Debug)]
pub enum KeyKind {
    None,
    Ip(std::net::IpAddr),
    /// The bytes in the key buffer.
    Bytes,
}

impl KeyKind {
    /// The key the balance algorithm takes, `bytes` being the key buffer's.
    pub fn pick(self, bytes: &[u8]) -> Option<crate::backend::PickKey<'_>> {
        match self {
            KeyKind::None => None,
            KeyKind::Ip(ip) => Some(crate::backend::PickKey::Ip(ip)),
            KeyKind::Bytes => Some(crate::backend::PickKey::Bytes(bytes)),
        }
    }
}

/// What the request's way to a server needs, from [`Txn::for_server`].
pub struct ToServer {
    /// The request asks for an upgrade (WebSocket).
    pub upgrade: bool,
    /// The server persistence (a cookie, a stick table) names, if any.
    pub persist: Option<usize>,
    /// `stick store-request` keys, stored once the server is known.
    pub stores: rules::stick::Stores,
    /// The balance key (its bytes in [`Txn::key`]).
    pub key: KeyKind,
    /// The transaction's connection mode (the stricter of the proxies').
    pub conn_mode: ConnMode,
}

impl std::fmt::Debug for ToServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToServer")
            .field("upgrade", &self.upgrade)
            .field("persist", &self.persist)
            .field("stores", &self.stores.len())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<'s> Txn<'s> {
    /// The analysers after backend choice: the request's edits for the server, persistence,
    /// stick matching, the balance key (its bytes in [`Txn::key`]).
    pub fn for_server(&mut self, be: &Arc<Backend>, be_http: &HttpProxy) -> ToServer {
        let info = *self.req.info();
        let conn_mode = super::conn_mode(self.http, be_http);
        let version = self.req.version();
        let upgrade = self.edit_request_for_server(&info, version, conn_mode, be_http);
        // `use-server` first: a server it assigns is not replaced by a cookie's (which is
        // still read, and stripped as configured) nor by a stick table's.
        // `force-persist` / `ignore-persist` first, as HAProxy's `process_server_rules()`.
        let rules = if be.rules.persist_rules.is_empty() {
            crate::backend::Persist::Normal
        } else {
            let base = self.base(Some(be));
            be.persist_rules(&base.ctx(self.req, None, self.vars))
        };
        self.o.persist_ignored = rules == crate::backend::Persist::Ignore;
        let down_ok = rules.down_ok(be);
        let assigned = if be.rules.use_servers.is_empty() {
            None
        } else {
            let base = self.base(Some(be));
            be.use_server(&base.ctx(self.req, None, self.vars), down_ok)
        };
        if let Some(i) = assigned {
            self.note(|| format!("use-server: server {}", be.servers[i].name));
        }
        let cookie = self.persistence(be, be_http, down_ok);
        // (A cookie that would have chosen is "unused", as HAProxy logs it.)
        if assigned.is_some() && self.o.cookie_in == CookieIn::Valid {
            self.o.cookie_in = CookieIn::Unused;
        }
        let persist = assigned.or(cookie);
        if let Some(ck) = &be_http.cookie {
            let seen = self.o.cookie_in;
            self.note(|| format!("cookie {}: {}", ck.name, cookie_words(seen)));
        }
        // `stick match|on` after a persistence cookie; `stick store-*` keys wait for the
        // server.
        let mut stores = rules::stick::Stores::new();
        let persist = self.stick_match(be, persist, &mut stores, down_ok);
        if let Some(i) = persist {
            self.note(|| format!("persistence: server {}", be.servers[i].name));
        }
        self.key.clear();
        let kind = pick_key(self.req, self.peer, &be_http.hash_key, self.key);
        ToServer { upgrade, persist, stores, key: kind, conn_mode }
    }

    /// The request as it goes to the server (HAProxy's `http_process_request`'s edits):
    /// hop-by-hop fields gone, `Connection` as the connection modes say, the target's default
    /// port dropped, the framing and the address headers set. Whether it asks for an upgrade.
    #[inline]
    pub fn edit_request_for_server(
        &mut self,
        info: &fulcrum_http::Info,
        version: Version,
        conn_mode: ConnMode,
        be_http: &HttpProxy,
    ) -> bool {
        let upgrade = info.upgrade && info.conn_upgrade;
        fulcrum_http::strip_hop_by_hop(self.req, upgrade);
        if upgrade {
            let _ = self.req.set_header(b"Connection", b"upgrade");
        } else if conn_mode != ConnMode::KeepAlive {
            let _ = self.req.set_header(b"Connection", b"close");
        } else if version == Version::Http10 && info.body != Body::Chunked {
            // HTTP/1.0 asks for keep-alive explicitly (HAProxy does not for a chunked 1.0
            // request, after which the connection closes).
            let _ = self.req.set_header(b"Connection", b"keep-alive");
        }
        // An absolute-form target loses the scheme's default port, as HAProxy normalises it.
        drop_default_port(self.req);
        if info.body == Body::Chunked {
            let _ = self.req.set_header(b"Transfer-Encoding", b"chunked");
        }
        self.add_addr_headers(be_http);
        upgrade
    }

    /// `stick match|on` (after a persistence cookie): the server a stick table names, else
    /// `persist`; `stick store-*` keys go into `stores` until the server is known.
    #[inline]
    pub fn stick_match(
        &self,
        be: &Arc<Backend>,
        persist: Option<usize>,
        stores: &mut rules::stick::Stores,
        down_ok: bool,
    ) -> Option<usize> {
        if be.rules.stick.is_empty() {
            return persist;
        }
        let base = self.base(Some(be));
        let ctx = base.ctx(self.req, None, self.vars);
        let r = &be.rules;
        let assigned = persist.is_some();
        rules::stick::on_request(&r.stick, &r.acls, &ctx, &**be, (assigned, down_ok), stores)
            .or(persist)
    }

    /// `option forwardfor` / `option originalto` (the backend's settings win).
    pub fn add_addr_headers(&mut self, be_http: &HttpProxy) {
        let none = |h: &HttpProxy| h.forwardfor.is_none() && h.originalto.is_none();
        if none(self.http) && none(be_http) {
            return;
        }
        let Some(peer) = self.peer else { return };
        // As HAProxy: either proxy's `option forwardfor` adds the header (named by the
        // backend's when it has one); `if-none` holds only when neither says otherwise, and
        // either proxy's `except` network keeps it out.
        let (fe_ff, be_ff) = (self.http.forwardfor.as_ref(), be_http.forwardfor.as_ref());
        if let Some(ff) = be_ff.or(fe_ff) {
            let always = [fe_ff, be_ff].iter().flatten().any(|f| !f.if_none);
            let present = self.req.header(ff.header.as_bytes()).is_some();
            let excepted = [fe_ff, be_ff].iter().flatten().any(|f| f.excepted(peer.ip()));
            if !(excepted || (!always && present)) {
                let v = peer.ip().to_string();
                let _ = self.req.add_header(ff.header.as_bytes(), v.as_bytes());
            }
        }
        let (fe_ot, be_ot) = (self.http.originalto.as_ref(), be_http.originalto.as_ref());
        if let Some(ot) = be_ot.or(fe_ot) {
            let local = self.local.or_else(|| {
                let c = self.client?;
                socket2::SockRef::from(c).local_addr().ok().and_then(|a| a.as_socket())
            });
            {
                if let Some(ip) = local.map(|a| a.ip()) {
                    if ![fe_ot, be_ot].iter().flatten().any(|o| o.excepted(ip)) {
                        let v = ip.to_string();
                        let _ = self.req.add_header(ot.header.as_bytes(), v.as_bytes());
                    }
                }
            }
        }
    }

    /// Persistence cookie: the server the request's cookie names, if the backend uses cookies
    /// (one that is down only where `down_ok`). With `indirect` (or `prefix`), the cookie is
    /// taken out of the request sent on.
    pub fn persistence(
        &mut self,
        be: &Arc<Backend>,
        be_http: &HttpProxy,
        down_ok: bool,
    ) -> Option<usize> {
        let chosen = self.cookie_server(be, be_http, down_ok);
        if !be_http.cookie.as_ref().is_some_and(logs_flags) {
            self.o.cookie_in = CookieIn::NotApplicable;
        }
        chosen
    }

    fn cookie_server(
        &mut self,
        be: &Arc<Backend>,
        be_http: &HttpProxy,
        down_ok: bool,
    ) -> Option<usize> {
        let ck = be_http.cookie.as_ref()?;
        // HAProxy's flags start at "no cookie" / "no set-cookie" once persistence applies.
        self.o.cookie_in = CookieIn::None;
        self.o.cookie_out = CookieOut::None;
        let mut found: Option<(Option<usize>, Vec<u8>)> = None;
        for (n, v) in self.req.headers() {
            if !n.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            if let Some(val) = fulcrum_http::cookie_value(v, ck.name.as_bytes()) {
                let (id, rest) = match ck.mode {
                    cfg::CookieMode::Prefix => match val.iter().position(|&c| c == b'~') {
                        Some(i) => (&val[..i], val[i + 1..].to_vec()),
                        None => (val, Vec::new()),
                    },
                    _ => (val, Vec::new()),
                };
                let named = be
                    .servers
                    .iter()
                    .position(|s| s.cookie.as_deref().map(str::as_bytes) == Some(id));
                match named {
                    // (Not used to choose, but taken out of the request all the same.)
                    _ if self.o.persist_ignored => {
                        self.o.cookie_in = CookieIn::Unused;
                        found = Some((None, rest));
                    }
                    Some(idx) => found = Some((Some(idx), rest)),
                    None => self.o.cookie_in = CookieIn::Invalid,
                }
                break;
            }
        }
        if found.is_none() && self.o.cookie_in == CookieIn::Invalid {
            // `insert indirect`: a cookie naming no server is taken out too, as HAProxy does.
            if ck.indirect && ck.mode == cfg::CookieMode::Insert {
                self.rewrite_request_cookie(&ck.name, None);
            }
            return None;
        }
        let (idx, rest) = found?;
        if ck.mode == cfg::CookieMode::Prefix {
            self.rewrite_request_cookie(&ck.name, Some(&rest));
        } else if ck.indirect && ck.mode == cfg::CookieMode::Insert {
            self.rewrite_request_cookie(&ck.name, None);
        }
        let idx = idx?; // (none for an ignored cookie)
        let srv = &be.servers[idx];
        if srv.is_up() {
            self.o.cookie_in = CookieIn::Valid;
            Some(idx)
        } else {
            // (Logged `D` even where `option persist` or `force-persist` take it, as HAProxy.)
            self.o.cookie_in = CookieIn::Down;
            down_ok.then_some(idx)
        }
    }

    /// Replaces (or removes, with `None`) cookie `name` in the request's Cookie headers.
    pub fn rewrite_request_cookie(&mut self, name: &str, value: Option<&[u8]>) {
        let mut edits = Vec::new();
        for (i, (n, v)) in self.req.headers().enumerate() {
            if !n.eq_ignore_ascii_case(b"cookie") {
                continue;
            }
            let mut out: Vec<u8> = Vec::new();
            let mut changed = false;
            for part in v.split(|&c| c == b';') {
                let t = part.trim_ascii();
                if t.is_empty() {
                    continue;
                }
                let is_ours = t.len() > name.len()
                    && t[..name.len()] == *name.as_bytes()
                    && t[name.len()] == b'=';
                let piece: Vec<u8> = if is_ours {
                    changed = true;
                    match value {
                        Some(v) => [name.as_bytes(), b"=", v].concat(),
                        None => continue,
                    }
                } else {
                    t.to_vec()
                };
                if !out.is_empty() {
                    out.extend_from_slice(b"; ");
                }
                out.extend_from_slice(&piece);
            }
            if changed {
                edits.push((i, out));
            }
        }
        for (i, v) in edits.into_iter().rev() {
            if v.is_empty() {
                let mut k = 0;
                self.req.retain_headers(|_, _| {
                    let keep = k != i;
                    k += 1;
                    keep
                });
            } else {
                let _ = self.req.set_header_value_at(i, &v);
            }
        }
    }
}

/// What the request's persistence cookie came to, in words.
fn cookie_words(c: CookieIn) -> &'static str {
    match c {
        CookieIn::Valid => "names a usable server",
        CookieIn::Down => "names a server that is down: a new one is chosen",
        CookieIn::Invalid => "names no server of the backend",
        CookieIn::Unused => "is not used: ignore-persist applies",
        _ => "none in the request",
    }
}

/// Whether the log's cookie flags apply: HAProxy prints them for a cookie that is inserted,
/// rewritten, prefixed or `indirect`, and `--` for a passive one.
pub fn logs_flags(ck: &cfg::CookieCfg) -> bool {
    ck.mode != cfg::CookieMode::Passive || ck.indirect
}

/// `http://host:80/...` becomes `http://host/...` (and `https://host:443/...` likewise).
pub fn drop_default_port(req: &mut Head) {
    // An origin-form target (most) has no authority.
    if req.target().first() == Some(&b'/') {
        return;
    }
    // (The target's form, found when it was parsed, says where the authority is.)
    let Some((scheme, _)) = req.scheme_and_authority() else { return };
    let port: &[u8] = if scheme.eq_ignore_ascii_case(b"http") {
        b":80"
    } else if scheme.eq_ignore_ascii_case(b"https") {
        b":443"
    } else {
        return;
    };
    let t = req.target();
    let scheme_len = scheme.len() + 3;
    let auth_end = t.len() - req.origin_form_target().len() - scheme_len;
    let auth = &t[scheme_len..scheme_len + auth_end];
    if auth.len() > port.len() && auth.ends_with(port) {
        let cut = scheme_len + auth_end - port.len();
        let mut new = Vec::with_capacity(t.len());
        new.extend_from_slice(&t[..cut]);
        new.extend_from_slice(&t[scheme_len + auth_end..]);
        let _ = req.set_target(&new);
    }
}

/// What a hash-based `balance` hashes: the client's address for `source`, else bytes appended
/// to `key` (`KeyKind::Bytes`); `None` without any (round robin then).
fn pick_key(
    req: &Head,
    peer: Option<std::net::SocketAddr>,
    k: &HashKey,
    key: &mut Vec<u8>,
) -> KeyKind {
    match k {
        HashKey::Source => return peer.map_or(KeyKind::None, |p| KeyKind::Ip(p.ip())),
        HashKey::Nothing => return KeyKind::None,
        HashKey::Uri { depth, len, whole, path_only } => {
            let t = if *path_only { req.path() } else { req.target() };
            let mut t = if *whole { t } else { t.split(|&c| c == b'?').next().unwrap_or(t) };
            if let Some(d) = depth {
                let mut slashes = 0;
                if let Some(end) = t.iter().position(|&c| {
                    if c == b'/' {
                        slashes += 1;
                    }
                    slashes > *d
                }) {
                    t = &t[..end];
                }
            }
            if let Some(l) = len {
                t = &t[..t.len().min(*l as usize)];
            }
            key.extend_from_slice(t);
        }
        HashKey::UrlParam(name) => {
            let v = req.query().and_then(|q| fulcrum_http::url_param(q, name.as_bytes()));
            let Some(v) = v else { return KeyKind::None };
            key.extend_from_slice(v);
        }
        HashKey::Hdr { name, domain_only } => {
            let v = req.header(name.as_bytes());
            let Some(v) = v.and_then(|v| crate::http_settings::hdr_hash_key(v, *domain_only))
            else {
                return KeyKind::None;
            };
            key.extend_from_slice(v);
        }
    }
    KeyKind::Bytes
}
