//! Cookie persistence (`cookie` in a backend): which server a request's cookie names, and the
//! cookie the response carries back. Must not touch: server choice beyond naming the server.

use super::*;
use crate::outcome::{CookieIn, CookieOut};

impl Session<'_> {
    /// Persistence cookie: the server the request's cookie names, if the backend uses cookies.
    /// With `indirect` (or `prefix`), the cookie is taken out of the request sent on.
    pub(super) fn persistence(&mut self, be: &Arc<Backend>, be_http: &HttpProxy) -> Option<usize> {
        let chosen = self.cookie_server(be, be_http);
        if !be_http.cookie.as_ref().is_some_and(logs_flags) {
            self.o.cookie_in = CookieIn::NotApplicable;
        }
        chosen
    }

    fn cookie_server(&mut self, be: &Arc<Backend>, be_http: &HttpProxy) -> Option<usize> {
        let ck = be_http.cookie.as_ref()?;
        // HAProxy's flags start at "no cookie" / "no set-cookie" once persistence applies.
        self.o.cookie_in = CookieIn::None;
        self.o.cookie_out = CookieOut::None;
        let mut found: Option<(usize, Vec<u8>)> = None;
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
                if let Some(idx) = be
                    .servers
                    .iter()
                    .position(|s| s.cookie.as_deref().map(str::as_bytes) == Some(id))
                {
                    found = Some((idx, rest));
                } else {
                    self.o.cookie_in = CookieIn::Invalid;
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
        let srv = &be.servers[idx];
        if srv.is_up() {
            self.o.cookie_in = CookieIn::Valid;
            Some(idx)
        } else {
            self.o.cookie_in = CookieIn::Down;
            None
        }
    }

    /// Replaces (or removes, with `None`) cookie `name` in the request's Cookie headers.
    pub(super) fn rewrite_request_cookie(&mut self, name: &str, value: Option<&[u8]>) {
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

    /// Cookie persistence on the response: insert, rewrite or prefix the server's cookie.
    pub(super) fn cookie_response(
        &mut self,
        be_http: &HttpProxy,
        slot: &ServerSlot,
        persisted: Option<usize>,
    ) {
        let Some(ck) = be_http.cookie.as_ref() else { return };
        let direct = persisted == Some(slot.index());
        let name = ck.name.as_bytes();
        let ours = |n: &[u8], v: &[u8]| {
            n.eq_ignore_ascii_case(b"set-cookie")
                && v.len() > name.len()
                && v.starts_with(name)
                && v[name.len()] == b'='
        };
        let served = self.resp.headers().any(|(n, v)| ours(n, v));
        if served {
            self.o.cookie_out = CookieOut::Provided;
        }
        // The server's own cookie goes when the proxy inserts its own, and with `indirect`
        // when the client came straight to its server (HAProxy's "Set-cookie Deleted").
        if served && (ck.mode == cfg::CookieMode::Insert || (direct && ck.indirect)) {
            self.resp.retain_headers(|n, v| !ours(n, v));
            self.o.cookie_out = CookieOut::Deleted;
        }
        if !logs_flags(ck) {
            self.o.cookie_out = CookieOut::NotApplicable;
        }
        let Some(value) = slot.server().cookie.as_deref() else { return };
        match ck.mode {
            cfg::CookieMode::Insert => {
                // A client already holding its server's cookie gets none.
                if direct {
                    return;
                }
                self.o.cookie_out = CookieOut::Inserted;
                let mut c = format!("{}={value}; path=/", ck.name);
                for d in &ck.domain {
                    c.push_str("; domain=");
                    c.push_str(d);
                }
                if ck.httponly {
                    c.push_str("; HttpOnly");
                }
                if ck.secure {
                    c.push_str("; Secure");
                }
                let _ = self.resp.add_header(b"Set-Cookie", c.as_bytes());
                if ck.nocache && cacheable(&self.resp) {
                    let _ = self.resp.add_header(b"Cache-control", b"private");
                }
            }
            cfg::CookieMode::Rewrite | cfg::CookieMode::Prefix => {
                let prefix = ck.mode == cfg::CookieMode::Prefix;
                let mut edits = Vec::new();
                for (i, (n, v)) in self.resp.headers().enumerate() {
                    if !n.eq_ignore_ascii_case(b"set-cookie") {
                        continue;
                    }
                    let name = ck.name.as_bytes();
                    if v.len() > name.len() && v.starts_with(name) && v[name.len()] == b'=' {
                        let rest = &v[name.len() + 1..];
                        let (old, attrs) = match rest.iter().position(|&c| c == b';') {
                            Some(p) => (&rest[..p], &rest[p..]),
                            None => (rest, &b""[..]),
                        };
                        let mut nv = name.to_vec();
                        nv.push(b'=');
                        nv.extend_from_slice(value.as_bytes());
                        if prefix {
                            nv.push(b'~');
                            nv.extend_from_slice(old);
                        }
                        nv.extend_from_slice(attrs);
                        edits.push((i, nv));
                    }
                }
                if !edits.is_empty() {
                    self.o.cookie_out = CookieOut::Rewritten;
                }
                for (i, v) in edits {
                    let _ = self.resp.set_header_value_at(i, &v);
                }
            }
            cfg::CookieMode::Passive => {}
        }
    }
}

/// Whether the log's cookie flags apply: HAProxy prints them for a cookie that is inserted,
/// rewritten, prefixed or `indirect`, and `--` for a passive one.
fn logs_flags(ck: &cfg::CookieCfg) -> bool {
    ck.mode != cfg::CookieMode::Passive || ck.indirect
}

/// Whether a response carries freshness information a cache could use (`nocache` then marks
/// it `private`): `Expires`, or `Cache-Control` with `max-age`, `s-maxage` or `public`.
pub(super) fn cacheable(resp: &Head) -> bool {
    resp.headers().any(|(n, v)| {
        n.eq_ignore_ascii_case(b"expires")
            || (n.eq_ignore_ascii_case(b"cache-control")
                && fulcrum_http::comma_values(v).any(|d| {
                    let d = d.split(|&c| c == b'=').next().unwrap_or(d);
                    d.eq_ignore_ascii_case(b"max-age")
                        || d.eq_ignore_ascii_case(b"s-maxage")
                        || d.eq_ignore_ascii_case(b"public")
                }))
    })
}
