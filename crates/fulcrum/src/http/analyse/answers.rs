//! Answers the request analysers make themselves: `return` and `deny` replies, redirects,
//! `auth`'s 401, and the proxy's message for a status (an `http-error` reply, an
//! `errorfile`, or HAProxy's built-in one).
//!
//! Must not touch: sockets (the session sends what these build).

use std::sync::Arc;

use fulcrum_config as cfg;

use super::Txn;
use crate::backend::Backend;
use crate::rules;

/// `http-request early-hint`: the 103 answers for the fields the rules gathered (`groups`:
/// one answer's field lines each, separated by a zero byte).
pub fn early_hints(groups: &[u8]) -> Vec<u8> {
    let mut hints = Vec::new();
    for group in groups.split(|&b| b == 0).filter(|g| !g.is_empty()) {
        hints.extend_from_slice(b"HTTP/1.1 103 Early Hints\r\n");
        hints.extend_from_slice(group);
        hints.extend_from_slice(b"\r\n");
    }
    hints
}

impl<'s> Txn<'s> {
    /// A `return` / `deny` reply, rendered.
    pub fn build_reply(&mut self, rp: &rules::ReplySpec, be: Option<&Arc<Backend>>) -> Vec<u8> {
        let base = self.base(be.map(|b| &**b));
        let ctx = base.ctx(self.req, None, self.vars);
        let body: std::borrow::Cow<'_, [u8]> = match &rp.body {
            rules::ReplyBody::None => (&b""[..]).into(),
            rules::ReplyBody::Bytes(b) => (&b[..]).into(),
            rules::ReplyBody::Format(f) => f.render_vec(&ctx).into(),
            rules::ReplyBody::ErrorMessage => return self.error_message(rp.status, be),
            rules::ReplyBody::Message(m) => return m.to_vec(),
        };
        // As HAProxy: a header whose value comes out empty is not added.
        let hdrs: Vec<(Vec<u8>, Vec<u8>)> = rp
            .headers
            .iter()
            .map(|(n, f)| (n.as_bytes().to_vec(), f.render_vec(&ctx)))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let refs: Vec<(&[u8], &[u8])> = hdrs.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        fulcrum_http::reply::raw(rp.status, rp.content_type.as_deref(), &refs, &body)
    }

    /// The FastCGI application's `set-param` values for this request (the last matching rule
    /// of a name wins, a value that renders empty is left out) and the hidden headers its
    /// `pass-header` rules pass, as HAProxy's FastCGI filter decides them.
    #[cold]
    #[inline(never)]
    pub fn fcgi_rules<'b>(&mut self, be: &'b Backend) -> (Vec<(&'b str, Vec<u8>)>, Vec<&'b str>) {
        let base = self.base(Some(be));
        let ctx = base.ctx(self.req, None, self.vars);
        (be.rules.fcgi.params(&ctx), be.rules.fcgi.passed(&ctx))
    }

    /// A redirect response.
    pub fn build_redirect(
        &mut self,
        rd: &rules::RedirectSpec,
        be: Option<&Arc<Backend>>,
    ) -> Vec<u8> {
        let base = self.base(be.map(|b| &**b));
        let ctx = base.ctx(self.req, None, self.vars);
        let value = rd.value.render_vec(&ctx);
        let mut loc = Vec::with_capacity(value.len() + self.req.target().len() + 16);
        match rd.kind {
            cfg::RedirectKind::Location => loc.extend_from_slice(&value),
            cfg::RedirectKind::Prefix | cfg::RedirectKind::Scheme => {
                if rd.kind == cfg::RedirectKind::Scheme {
                    loc.extend_from_slice(&value);
                    loc.extend_from_slice(b"://");
                    loc.extend_from_slice(self.req.header(b"host").unwrap_or(b""));
                } else if value != b"/" {
                    loc.extend_from_slice(&value);
                }
                let path = self.req.path();
                loc.extend_from_slice(if path.is_empty() { b"/" } else { path });
                if rd.append_slash && !loc.ends_with(b"/") {
                    loc.push(b'/');
                }
                if !rd.drop_query {
                    if let Some(q) = self.req.query() {
                        loc.push(b'?');
                        loc.extend_from_slice(q);
                    }
                }
            }
        }
        if rd.kind == cfg::RedirectKind::Location && rd.append_slash && !loc.ends_with(b"/") {
            loc.push(b'/');
        }
        // As HAProxy's `http_apply_redirect_rule`: length, location, and no caching of the
        // temporary ones.
        let mut out = Vec::with_capacity(loc.len() + 96);
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(rd.code.to_string().as_bytes());
        out.push(b' ');
        out.extend_from_slice(fulcrum_http::default_reason(rd.code));
        out.extend_from_slice(b"\r\ncontent-length: 0\r\nlocation: ");
        out.extend_from_slice(&loc);
        out.extend_from_slice(b"\r\n");
        if matches!(rd.code, 302 | 303 | 307) {
            out.extend_from_slice(b"cache-control: no-cache\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// `http-request auth`: the proxy's 401 message with its `WWW-Authenticate` header for
    /// `realm` (any the message had replaced), as HAProxy builds it.
    pub fn auth_reply(&self, realm: &str, be: Option<&Arc<Backend>>) -> Vec<u8> {
        let msg = self.messages(be).get(401);
        let Some(end) = msg.windows(4).position(|w| w == b"\r\n\r\n") else {
            return msg.to_vec();
        };
        let mut out = Vec::with_capacity(msg.len() + realm.len() + 40);
        for line in msg[..end].split(|&c| c == b'\n') {
            let name = line.split(|&c| c == b':').next().unwrap_or(b"");
            if name.trim_ascii().eq_ignore_ascii_case(b"www-authenticate") {
                continue;
            }
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out.truncate(out.len().saturating_sub(1));
        out.extend_from_slice(b"\r\nwww-authenticate: Basic realm=\"");
        out.extend_from_slice(realm.as_bytes());
        out.extend_from_slice(b"\"");
        out.extend_from_slice(&msg[end..]);
        out
    }

    /// The proxy's answer for `status`: an `http-error` reply rendered for this request when
    /// it has log-format parts, else the message loaded at start-up.
    pub fn error_message(&mut self, status: u16, be: Option<&Arc<Backend>>) -> Vec<u8> {
        let rules = match be {
            Some(b) if b.http.as_deref().is_some_and(|h| !h.messages.is_empty()) => &b.rules,
            _ => &self.fe.rules,
        };
        let dynamic = rules
            .error_replies
            .iter()
            .find(|(s, rp)| *s == status && !matches!(rp.body, rules::ReplyBody::ErrorMessage));
        match dynamic {
            Some((_, rp)) => self.build_reply(rp, be),
            None => self.messages(be).get(status).to_vec(),
        }
    }

    pub fn messages<'m>(
        &self,
        be: Option<&'m Arc<Backend>>,
    ) -> &'m crate::http_settings::messages::Messages
    where
        's: 'm,
    {
        match be.and_then(|b| b.http.as_deref()) {
            Some(h) if !h.messages.is_empty() => &h.messages,
            _ => &self.http.messages,
        }
    }
}
