//! The lenient side of the head parser (HAProxy's `option accept-invalid-http-*`), the rules
//! that run only after a strict check (the 413 of an HTTP/1.0 GET with a body, a second Host):
//! cold functions reached from a strict failure, so the strict path costs the same with or
//! without them. Must not touch: the strict checks (the parent module and `lines`).

use super::*;

impl Head {
    /// HAProxy's rule for HTTP/1.0: a GET, HEAD or DELETE request without a body.
    #[inline(never)]
    pub(super) fn payload_with_method(&self, info: &Info) -> Result<(), HeadError> {
        let body = matches!(info.body, Body::Chunked | Body::Length(1..));
        let bodiless = matches!(self.method, Method::Get | Method::Head | Method::Delete);
        if body && bodiless {
            return Err(HeadError::PayloadWithMethod);
        }
        Ok(())
    }

    /// A second Host field: refused (Fulcrum holds requests to one Host, issue 16), except
    /// that a lenient parse merges the same host again into the first, as HAProxy always does.
    #[cold]
    #[inline(never)]
    pub(super) fn second_host(
        &mut self,
        value: &[u8],
    ) -> Result<Option<(Special, Range<usize>)>, HeadError> {
        let first = self.fields.iter().find(|f| f.special == Special::Host);
        let same = first.is_some_and(|f| self.bytes(f.value).eq_ignore_ascii_case(value));
        if !(same && self.lenient) {
            return Err(HeadError::DuplicateHost);
        }
        self.tolerate(HeadError::DuplicateHost);
        Ok(None)
    }

    /// A Host the strict check refused: a lenient parse takes one that names another host
    /// than an absolute target, if the value itself is a host.
    #[cold]
    #[inline(never)]
    pub(super) fn lenient_host(&mut self, value: &[u8]) -> Result<(), HeadError> {
        if !self.lenient || !target::valid_host(value) {
            return Err(HeadError::BadHost);
        }
        self.tolerate(HeadError::BadHost);
        Ok(())
    }

    /// A field line the strict scan refused (`e`): refused, or scanned again leniently.
    #[cold]
    #[inline(never)]
    pub(super) fn lenient_field(
        &mut self,
        window: &[u8],
        e: HeadError,
    ) -> Result<FieldScan, HeadError> {
        if !self.lenient || !lenient_name(e) {
            return Err(e);
        }
        let scan = scan_field_line_lenient(window)?;
        if scan != FieldScan::Partial {
            self.tolerate(e);
        }
        Ok(scan)
    }

    /// A request line the strict check refused (`e`): refused, or checked again leniently and
    /// stored.
    #[cold]
    #[inline(never)]
    pub(super) fn lenient_request_line(
        &mut self,
        line: &[u8],
        complete: bool,
        e: HeadError,
    ) -> Result<(), HeadError> {
        if !self.lenient {
            return Err(e);
        }
        let Some(l) = check_request_line_lenient(line, complete)? else { return Ok(()) };
        self.tolerate(e);
        let base = self.store.len();
        self.store.extend_from_slice(line);
        self.set_request_line(base, &l);
        Ok(())
    }

    /// A status line whose version the strict check refused (`e`): refused, or read with any
    /// version of letters, digits, `.` and `/` up to the first SP.
    #[cold]
    #[inline(never)]
    pub(super) fn lenient_status_line(
        &mut self,
        line: &[u8],
        complete: bool,
        e: HeadError,
    ) -> Result<(), HeadError> {
        if !self.lenient || e == HeadError::BadStatus {
            return Err(e);
        }
        let v = line.iter().take_while(|&&b| is_version_char(b)).count();
        match line.get(v) {
            None if !complete => return Ok(()),
            Some(b' ') if v > 0 => {}
            None => return Err(HeadError::BadVersion),
            Some(&b) => return Err(byte_error(b, HeadError::BadVersion)),
        }
        self.status_after(line, v, complete)?;
        if complete {
            self.tolerate(e);
        }
        Ok(())
    }

    /// The rest of a status line whose version (`line[..v]`) and SP were checked (the lenient
    /// way's; the strict one keeps its own copy with constant offsets).
    pub(super) fn status_after(
        &mut self,
        line: &[u8],
        v: usize,
        complete: bool,
    ) -> Result<(), HeadError> {
        // The status code after the version's SP, then an optional reason.
        let mut code: u16 = 0;
        for k in v + 1..v + 4 {
            match line.get(k) {
                None if complete => return Err(HeadError::BadStatus),
                None => return Ok(()),
                Some(&d) if d.is_ascii_digit() && (k > v + 1 || d != b'0') => {
                    code = code * 10 + u16::from(d - b'0');
                }
                Some(&b) => return Err(byte_error(b, HeadError::BadStatus)),
            }
        }
        // HAProxy also takes a status line without the SP before an empty reason.
        let reason = match line.get(v + 4) {
            None => v + 4..v + 4,
            Some(b' ') => v + 5..line.len(),
            Some(&b) => return Err(byte_error(b, HeadError::BadStatus)),
        };
        if let Some(&b) = line[reason.clone()].iter().find(|&&b| !is_value(b)) {
            return Err(byte_error(b, HeadError::BadStatus));
        }
        if !complete {
            return Ok(());
        }
        let base = self.store.len();
        self.store.extend_from_slice(line);
        self.version = version_of(&line[..v]);
        self.status = code;
        self.reason_span = Span::at(base + reason.start, reason.len());
        Ok(())
    }
}
