//! Edits of a parsed head (HAProxy's `set-*`, `add-header`, `del-header`, `replace-*`
//! actions and the proxy's own changes): new bytes appended to the store, spans moved, the
//! framing facts kept in step. Must not touch: parsing (the parent module), output (`write`).

use super::*;

fn check_name(name: &[u8]) -> Result<(), EditError> {
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(EditError::BadName);
    }
    Ok(())
}

/// Trims OWS (as the parser would) and checks the bytes.
fn check_value(value: &[u8]) -> Result<&[u8], EditError> {
    let value = trim_ows(value);
    if !value.iter().all(|&b| is_value(b)) {
        return Err(EditError::BadValue);
    }
    Ok(value)
}

impl Head {
    /// HAProxy's `h1-case-adjust`: every field whose name `case` knows (it answers with the
    /// same name in another case) is renamed in place; the framing facts do not change.
    pub fn adjust_name_case<'a>(&mut self, case: impl Fn(&[u8]) -> Option<&'a [u8]>) {
        for f in &self.fields {
            let name = &mut self.store[f.name.range()];
            if let Some(to) = case(name).filter(|to| to.eq_ignore_ascii_case(name)) {
                name.copy_from_slice(to);
            }
        }
    }

    fn require(&self, kind: Kind) -> Result<(), EditError> {
        if self.kind == kind && self.phase == Phase::Idle {
            Ok(())
        } else {
            Err(EditError::WrongKind)
        }
    }

    fn require_any(&self) -> Result<(), EditError> {
        if self.kind != Kind::Empty && self.phase == Phase::Idle {
            Ok(())
        } else {
            Err(EditError::WrongKind)
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<Span, EditError> {
        let start = self.store.len();
        if start + bytes.len() > MAX_STORE {
            return Err(EditError::TooLarge);
        }
        self.store.extend_from_slice(bytes);
        Ok(Span::at(start, bytes.len()))
    }

    /// Appends `target[..cut]` + `middle` + `target[resume..]` to the store, checks that the new
    /// target suits the method and installs it; on refusal the store is left as it was.
    fn rebuild_target(
        &mut self,
        cut: usize,
        middle: &[&[u8]],
        resume: usize,
    ) -> Result<(), EditError> {
        let old = self.target_span.range();
        let start = self.store.len();
        let len = cut + middle.iter().map(|m| m.len()).sum::<usize>() + (old.len() - resume);
        if start + len > MAX_STORE {
            return Err(EditError::TooLarge);
        }
        self.store.extend_from_within(old.start..old.start + cut);
        for m in middle {
            self.store.extend_from_slice(m);
        }
        self.store.extend_from_within(old.start + resume..old.end);
        let new = &self.store[start..];
        let form = target::form(new);
        if !target::form_fits(self.method, form) {
            self.store.truncate(start);
            return Err(EditError::BadTarget);
        }
        self.target_span = Span::at(start, len);
        self.form = form;
        Ok(())
    }

    /// Becomes a copy of `src` in this head's buffers (no allocation once they are large
    /// enough), as a stored head is replayed for each reader.
    pub fn copy_from(&mut self, src: &Head) {
        self.store.clone_from(&src.store);
        self.fields.clone_from(&src.fields);
        self.kind = src.kind;
        self.method = src.method;
        self.method_span = src.method_span;
        self.target_span = src.target_span;
        self.form = src.form;
        self.reason_span = src.reason_span;
        self.version = src.version;
        self.status = src.status;
        self.info = src.info;
        self.phase = src.phase;
        self.consumed = src.consumed;
        self.seen_cl = src.seen_cl;
        self.seen_te = src.seen_te;
        self.seen_host = src.seen_host;
        self.host_optional = src.host_optional;
    }

    /// Replaces the method. Refused if it is not a token or does not suit the target's form
    /// (CONNECT needs `host:port`, other methods refuse it).
    pub fn set_method(&mut self, m: &[u8]) -> Result<(), EditError> {
        self.require(Kind::Request)?;
        if m.is_empty() || !m.iter().all(|&b| is_tchar(b)) {
            return Err(EditError::BadMethod);
        }
        let method = Method::from_bytes(m);
        if !target::form_fits(method, self.form) {
            return Err(EditError::BadMethod);
        }
        self.method_span = self.push(m)?;
        self.method = method;
        Ok(())
    }

    /// Replaces the whole target. Like HAProxy's `set-uri`, an absolute-form or authority-form
    /// target also rewrites the Host header (when there is one) to its authority.
    pub fn set_target(&mut self, t: &[u8]) -> Result<(), EditError> {
        self.require(Kind::Request)?;
        if t.is_empty() || !t.iter().all(|&b| is_target(b)) {
            return Err(EditError::BadTarget);
        }
        let form = target::form(t);
        if !target::form_fits(self.method, form) {
            return Err(EditError::BadTarget);
        }
        // A request may arrive as `http:///x`, but HAProxy's set-uri refuses an empty authority.
        if matches!(form, target::Form::Absolute { auth_start, auth_end } if auth_start == auth_end)
        {
            return Err(EditError::BadTarget);
        }
        let host_update = match target::authority(t) {
            Some(auth) => self
                .fields
                .iter()
                .position(|f| f.special == Special::Host)
                .filter(|&i| !target::host_matches_in(t, form, self.bytes(self.fields[i].value)))
                .map(|i| (i, auth)),
            None => None,
        };
        analyze(&self.ctx(Some((t, form)), None), self.view(None, host_update, None), true)?;
        let span = self.push(t)?;
        if let Some((i, auth)) = host_update {
            self.fields[i].value = self.push(auth)?;
        }
        self.target_span = span;
        self.form = form;
        Ok(())
    }

    /// Replaces the path (see [`Head::path`]), keeping any scheme, authority and query. The
    /// path must start with `/` and hold valid target bytes but `?`. A `*` target becomes the
    /// path; a CONNECT target has no path and refuses.
    pub fn set_path(&mut self, p: &[u8]) -> Result<(), EditError> {
        self.require(Kind::Request)?;
        if p.first() != Some(&b'/') || !p.iter().all(|&b| is_target(b) && b != b'?') {
            return Err(EditError::BadTarget);
        }
        let t = self.target();
        let (cut, resume) = match self.form {
            Form::Asterisk => (0, 1),
            f => target::path_bounds_in(t, f).ok_or(EditError::BadTarget)?,
        };
        self.rebuild_target(cut, &[p], resume)
    }

    /// Replaces the query: `Some(q)` gives `?q` (`Some(b"")` a bare `?`), `None` removes the `?`
    /// and what follows. Only for origin-form and absolute-form targets (`http://h` gets a `/`
    /// before the `?`).
    pub fn set_query(&mut self, q: Option<&[u8]>) -> Result<(), EditError> {
        self.require(Kind::Request)?;
        if q.is_some_and(|q| !q.iter().all(|&b| is_target(b))) {
            return Err(EditError::BadTarget);
        }
        let t = self.target();
        let (path_start, cut) = match self.form {
            f @ (Form::Origin | Form::Absolute { .. }) => {
                target::path_bounds_in(t, f).ok_or(EditError::BadTarget)?
            }
            _ => return Err(EditError::BadTarget),
        };
        let len = t.len();
        let slash: &[u8] = if path_start == cut && q.is_some() { b"/" } else { b"" };
        match q {
            Some(q) => self.rebuild_target(cut, &[slash, b"?", q], len),
            None => self.rebuild_target(cut, &[], len),
        }
    }

    /// Replaces the status code (100..=999) and the reason (`None`: the usual phrase for the
    /// code, or an empty one).
    pub fn set_status(&mut self, code: u16, reason: Option<&[u8]>) -> Result<(), EditError> {
        self.require(Kind::Response)?;
        if !(100..=999).contains(&code) {
            return Err(EditError::BadStatus);
        }
        let reason = reason.unwrap_or_else(|| default_reason(code));
        if !reason.iter().all(|&b| is_value(b)) {
            return Err(EditError::BadReason);
        }
        analyze(&self.ctx(None, Some(code)), self.view(None, None, None), true)?;
        self.reason_span = self.push(reason)?;
        self.status = code;
        Ok(())
    }

    /// A Host edit on an absolute-form request also makes `value` the target's authority, as
    /// HAProxy's `http_update_authority` does (a request that came over HTTP/2 has such a
    /// target): the new target, `None` for other edits. Refused if the result is no target.
    fn target_for_host(
        &self,
        name: &[u8],
        value: &[u8],
    ) -> Result<Option<(Vec<u8>, Form)>, EditError> {
        let Form::Absolute { auth_start, auth_end } = self.form else { return Ok(None) };
        if self.kind != Kind::Request || !name.eq_ignore_ascii_case(b"host") {
            return Ok(None);
        }
        let t = self.target();
        let mut new = Vec::with_capacity(t.len() + value.len());
        new.extend_from_slice(&t[..auth_start]);
        new.extend_from_slice(value);
        new.extend_from_slice(&t[auth_end..]);
        let form = target::form(&new);
        if !new.iter().all(|&b| is_target(b)) || !matches!(form, Form::Absolute { .. }) {
            return Err(EditError::BadTarget);
        }
        Ok(Some((new, form)))
    }

    /// Installs a target made by [`Head::target_for_host`].
    fn retarget(&mut self, new: Option<(Vec<u8>, Form)>) -> Result<(), EditError> {
        if let Some((t, form)) = new {
            self.target_span = self.push(&t)?;
            self.form = form;
        }
        Ok(())
    }

    /// Appends a field. The value is trimmed of OWS; refused with CR, LF, NUL or another
    /// control byte but HTAB, or when the head would no longer parse (a second Content-Length,
    /// Content-Length beside Transfer-Encoding, a second Host, ...). A Host added to an
    /// absolute-form request becomes the target's authority too.
    pub fn add_header(&mut self, name: &[u8], value: &[u8]) -> Result<(), EditError> {
        self.require_any()?;
        check_name(name)?;
        let value = check_value(value)?;
        let special = special(name);
        if special == Special::Other {
            // The framing analysis reads only the special fields: a field of another name
            // changes nothing it found (a cache hit's `Age`, `add-header` rules).
            let name = self.push(name)?;
            let value = self.push(value)?;
            self.fields.push(Field::new(name, value, special));
            return Ok(());
        }
        let new = self.target_for_host(name, value)?;
        let ctx = match &new {
            Some((t, f)) => self.ctx(Some((t, *f)), None),
            None => self.ctx(None, None),
        };
        let info = analyze(&ctx, self.view(None, None, Some((name, value))), true)?;
        let name = self.push(name)?;
        let value = self.push(value)?;
        self.fields.push(Field::new(name, value, special));
        self.info.body = info.body;
        self.retarget(new)
    }

    /// Removes every field named `name`, then appends one (HAProxy's `set-header`; a Host set
    /// on an absolute-form request becomes the target's authority too).
    pub fn set_header(&mut self, name: &[u8], value: &[u8]) -> Result<(), EditError> {
        self.require_any()?;
        check_name(name)?;
        let value = check_value(value)?;
        let new = self.target_for_host(name, value)?;
        let ctx = match &new {
            Some((t, f)) => self.ctx(Some((t, *f)), None),
            None => self.ctx(None, None),
        };
        let info = analyze(&ctx, self.view(Some(name), None, Some((name, value))), true)?;
        let name_span = self.push(name)?;
        let value_span = self.push(value)?;
        let store = &self.store;
        self.fields.retain(|f| !store[f.name.range()].eq_ignore_ascii_case(name));
        self.fields.push(Field::new(name_span, value_span, special(name)));
        self.info.body = info.body;
        self.retarget(new)
    }

    /// Removes every field named `name` (case-insensitive); returns how many. Removing a
    /// framing header updates `info().body`. Never refused: removing `Sec-WebSocket-Key` from
    /// a WebSocket upgrade is the caller's business.
    pub fn remove_header(&mut self, name: &[u8]) -> usize {
        let before = self.fields.len();
        let store = &self.store;
        self.fields.retain(|f| !store[f.name.range()].eq_ignore_ascii_case(name));
        let removed = before - self.fields.len();
        if removed > 0 {
            self.refresh_body();
        }
        removed
    }

    /// Keeps only the fields for which `f(name, value)` is true.
    pub fn retain_headers(&mut self, mut f: impl FnMut(&[u8], &[u8]) -> bool) {
        let before = self.fields.len();
        let store = &self.store;
        self.fields.retain(|fl| f(&store[fl.name.range()], &store[fl.value.range()]));
        if self.fields.len() != before {
            self.refresh_body();
        }
    }

    /// Replaces the value of the field at `index` in [`Head::headers`] order.
    pub fn set_header_value_at(&mut self, index: usize, value: &[u8]) -> Result<(), EditError> {
        self.require_any()?;
        if index >= self.fields.len() {
            return Err(EditError::NoSuchHeader);
        }
        let value = check_value(value)?;
        let new = self.target_for_host(self.bytes(self.fields[index].name), value)?;
        let ctx = match &new {
            Some((t, f)) => self.ctx(Some((t, *f)), None),
            None => self.ctx(None, None),
        };
        let info = analyze(&ctx, self.view(None, Some((index, value)), None), true)?;
        self.fields[index].value = self.push(value)?;
        self.info.body = info.body;
        self.retarget(new)
    }

    /// The fields in order with what each name means to the codec: (meaning, name, value).
    pub(crate) fn tagged_headers(&self) -> impl Iterator<Item = (Special, &[u8], &[u8])> + '_ {
        self.fields.iter().map(|f| (f.special, self.bytes(f.name), self.bytes(f.value)))
    }

    /// Marks fields for [`Head::sweep`] (used by `strip_hop_by_hop`): `f(head, meaning, name)`.
    pub(crate) fn mark_fields(&mut self, mut f: impl FnMut(&Head, Special, &[u8]) -> bool) {
        for i in 0..self.fields.len() {
            let field = self.fields[i];
            let drop = f(self, field.special, self.bytes(field.name));
            self.fields[i].drop = drop;
        }
    }

    /// Removes the marked fields.
    pub(crate) fn sweep(&mut self) {
        let before = self.fields.len();
        self.fields.retain(|f| !f.drop);
        if self.fields.len() != before {
            self.refresh_body();
        }
    }

    /// Appends a field without the framing check (callers know it cannot break framing).
    pub(crate) fn push_field(&mut self, name: &[u8], value: &[u8]) -> Result<(), EditError> {
        let special = special(name);
        let name = self.push(name)?;
        let value = self.push(value)?;
        self.fields.push(Field::new(name, value, special));
        Ok(())
    }

    fn refresh_body(&mut self) {
        if let Ok(info) = analyze(&self.ctx(None, None), self.view(None, None, None), false) {
            self.info.body = info.body;
        }
    }
}
