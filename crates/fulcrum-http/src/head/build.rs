//! A head built from parts already split (an HTTP/2 HEADERS frame's method, target and
//! fields), with the checks and framing analysis of a parse: the head is the one a parse of
//! its HTTP/1.1 text would give (`Head::write_to` writes that text), without the text being
//! written and scanned again. A part a parse would refuse is refused with the parse's error.
//!
//! Owns: building a head in order (start line, fields, end). Must not touch: where the parts
//! come from (the HTTP/2 views).

use super::{check_request_line, Field, Head, HeadError, Kind, Limits, Phase, Span, Version};
use crate::chars::{is_ows, is_tchar, value_run};

impl Head {
    /// Starts a request head `method target HTTP/1.1`, the target given in pieces written one
    /// after the other (`scheme`, `://`, `authority`, `path`), forgetting what the head held.
    /// Fields follow ([`Head::build_field`]), then [`Head::end_head`].
    pub fn begin_request(&mut self, method: &[u8], target: &[&[u8]]) -> Result<(), HeadError> {
        self.clear();
        self.kind = Kind::Request;
        self.store.extend_from_slice(method);
        self.store.push(b' ');
        for piece in target {
            self.store.extend_from_slice(piece);
        }
        self.store.extend_from_slice(b" HTTP/1.1");
        let l = check_request_line(&self.store, true)?.ok_or(HeadError::BadVersion)?;
        self.set_request_line(0, &l);
        Ok(())
    }

    /// Starts a response head `HTTP/1.1 status reason`, forgetting what the head held.
    pub fn begin_response(&mut self, status: u16, reason: &[u8]) -> Result<(), HeadError> {
        if !(100..=999).contains(&status) || value_run(reason) != reason.len() {
            return Err(HeadError::BadStatus);
        }
        self.clear();
        self.kind = Kind::Response;
        self.store.extend_from_slice(b"HTTP/1.1 ");
        self.store.extend_from_slice(&[
            b'0' + (status / 100) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ]);
        // The space stays before an empty reason, as `write_to` writes it.
        self.store.push(b' ');
        let at = self.store.len();
        self.store.extend_from_slice(reason);
        self.version = Version::Http11;
        self.status = status;
        self.reason_span = Span::at(at, reason.len());
        Ok(())
    }

    /// Adds a field `name: value` (the value trimmed of surrounding white space, as a parse
    /// trims it), with a parse's checks: a name of token bytes, a value without control bytes,
    /// Content-Length, Transfer-Encoding and Host as they are checked in a parse.
    pub fn build_field(
        &mut self,
        name: &[u8],
        value: &[u8],
        limits: &Limits,
    ) -> Result<(), HeadError> {
        if name.is_empty()
            || name.len() > super::lines::MAX_NAME
            || !name.iter().all(|&b| is_tchar(b))
        {
            return Err(HeadError::BadHeaderName);
        }
        if value_run(value) != value.len() {
            return Err(HeadError::BadHeaderValue);
        }
        let lead = value.iter().take_while(|&&b| is_ows(b)).count();
        let trail = value[lead..].iter().rev().take_while(|&&b| is_ows(b)).count();
        let value = &value[lead..value.len() - trail];
        let Some((special, kept)) = self.check_field(name, value, limits)? else {
            return Ok(());
        };
        let base = self.store.len();
        self.store.extend_from_slice(name);
        self.store.extend_from_slice(b": ");
        self.store.extend_from_slice(value);
        let at = base + name.len() + 2;
        self.fields.push(Field::new(
            Span::at(base, name.len()),
            Span::at(at + kept.start, kept.len()),
            special,
        ));
        Ok(())
    }

    /// Ends the head: the framing analysis of a complete parse. Returns the size of its
    /// HTTP/1.1 text (line ends and the empty line included), which must be within
    /// `limits.max_head` as a parsed head's.
    pub fn end_head(&mut self, limits: &Limits) -> Result<usize, HeadError> {
        // Each stored line gets its CRLF, then the empty line.
        let size = self.store.len() + 2 * (self.fields.len() + 1) + 2;
        if size > limits.max_head {
            return Err(HeadError::HeadTooLarge);
        }
        self.finish()?;
        self.phase = Phase::Idle;
        self.consumed = 0;
        Ok(size)
    }
}
