//! Cookie persistence (`cookie` in a backend): which server a request's cookie names, and the
//! cookie the response carries back. Must not touch: server choice beyond naming the server.

use super::*;
use crate::http::analyse::logs_flags;
use crate::outcome::CookieOut;

impl Session<'_> {
    /// Cookie persistence on the response: insert, rewrite or prefix the server's cookie.
    pub(super) fn cookie_response(
        &mut self,
        be_http: &HttpProxy,
        slot: &ServerSlot,
        persisted: Option<usize>,
    ) {
        let Some(ck) = be_http.cookie.as_ref() else { return };
        if self.t.o.persist_ignored {
            return; // `ignore-persist`: the server's cookie is not looked at, none is added
        }
        let direct = persisted == Some(slot.index());
        let name = ck.name.as_bytes();
        let ours = |n: &[u8], v: &[u8]| {
            n.eq_ignore_ascii_case(b"set-cookie")
                && v.len() > name.len()
                && v.starts_with(name)
                && v[name.len()] == b'='
        };
        let served = self.t.resp.headers().any(|(n, v)| ours(n, v));
        if served {
            self.t.o.cookie_out = CookieOut::Provided;
        }
        // The server's own cookie goes when the proxy inserts its own, and with `indirect`
        // when the client came straight to its server (HAProxy's "Set-cookie Deleted").
        if served && (ck.mode == cfg::CookieMode::Insert || (direct && ck.indirect)) {
            self.t.resp.retain_headers(|n, v| !ours(n, v));
            self.t.o.cookie_out = CookieOut::Deleted;
        }
        if !logs_flags(ck) {
            self.t.o.cookie_out = CookieOut::NotApplicable;
        }
        let Some(value) = slot.server().cookie.as_deref() else { return };
        match ck.mode {
            cfg::CookieMode::Insert => {
                // A client already holding its server's cookie gets none.
                if direct {
                    return;
                }
                self.t.o.cookie_out = CookieOut::Inserted;
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
                let _ = self.t.resp.add_header(b"Set-Cookie", c.as_bytes());
                if ck.nocache && cacheable(&self.t.resp) {
                    let _ = self.t.resp.add_header(b"Cache-control", b"private");
                }
            }
            cfg::CookieMode::Rewrite | cfg::CookieMode::Prefix => {
                let prefix = ck.mode == cfg::CookieMode::Prefix;
                let mut edits = Vec::new();
                for (i, (n, v)) in self.t.resp.headers().enumerate() {
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
                    self.t.o.cookie_out = CookieOut::Rewritten;
                }
                for (i, v) in edits {
                    let _ = self.t.resp.set_header_value_at(i, &v);
                }
            }
            cfg::CookieMode::Passive => {}
        }
    }
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
