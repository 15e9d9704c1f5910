//! A head serialised again as HTTP/1.1 text (to a server, to a client, or to be read back).
//! Must not touch: the head's contents.

use super::*;

impl Head {
    /// Appends the serialised head: start line, fields, empty line; CRLF line ends, single SP
    /// separators, `HTTP/1.0` or `HTTP/1.1`, names as received, values without surrounding
    /// OWS. Nothing for an empty head.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let version = self.version.as_bytes();
        if self.kind == Kind::Empty {
            return;
        }
        out.reserve(self.text_len(false));
        match self.kind {
            Kind::Request => {
                out.extend_from_slice(self.method_bytes());
                out.push(b' ');
                out.extend_from_slice(self.target());
                out.push(b' ');
                out.extend_from_slice(version);
            }
            _ => {
                out.extend_from_slice(version);
                out.push(b' ');
                let s = self.status;
                out.extend_from_slice(&[
                    b'0' + (s / 100 % 10) as u8,
                    b'0' + (s / 10 % 10) as u8,
                    b'0' + (s % 10) as u8,
                    b' ',
                ]);
                out.extend_from_slice(self.reason());
            }
        }
        out.extend_from_slice(b"\r\n");
        self.write_fields(out);
    }

    /// The length of the text [`Head::write_to`] writes (with `origin_form`, of what
    /// [`Head::write_origin_form_to`] writes), without writing it: what a peer that takes the
    /// head as parsed (HTTP/2) is measured by against a buffer.
    pub fn text_len(&self, origin_form: bool) -> usize {
        let fields = 2 + self
            .fields
            .iter()
            .map(|f| f.name.len as usize + f.value.len as usize + 4)
            .sum::<usize>();
        match self.kind {
            Kind::Empty => 0,
            Kind::Request if origin_form && matches!(self.form, target::Form::Absolute { .. }) => {
                let rest = self.origin_form_target();
                let slash = usize::from(rest.first() != Some(&b'/'));
                fields + self.method_span.len as usize + rest.len() + slash + 12
            }
            Kind::Request => {
                fields + self.method_span.len as usize + self.target_span.len as usize + 12
            }
            Kind::Response => fields + self.reason_span.len as usize + 15,
        }
    }

    /// Whether a request without Host is refused (the default; RFC 9112 3.2). A request that
    /// came over HTTP/2, whose `:authority` is optional (RFC 9113 8.3.1), is parsed with it off.
    pub fn set_host_required(&mut self, required: bool) {
        self.host_optional = !required;
    }

    /// Like [`Head::write_to`], with an absolute-form request target written in origin form
    /// (`/path?query`): how a request that came over HTTP/2 (whose target is the absolute URI
    /// HAProxy builds from `:scheme`, `:authority` and `:path`) goes to an HTTP/1 server.
    pub fn write_origin_form_to(&self, out: &mut Vec<u8>) {
        if self.kind != Kind::Request || !matches!(self.form, target::Form::Absolute { .. }) {
            return self.write_to(out);
        }
        // What follows the authority: the path (`/` when empty), then any query.
        let rest = self.origin_form_target();
        out.extend_from_slice(self.method_bytes());
        out.push(b' ');
        if rest.first() != Some(&b'/') {
            out.push(b'/');
        }
        out.extend_from_slice(rest);
        out.push(b' ');
        out.extend_from_slice(self.version.as_bytes());
        out.extend_from_slice(b"\r\n");
        self.write_fields(out);
    }

    /// Appends the header block: every field as `name: value` CRLF, then the empty line.
    pub fn write_fields(&self, out: &mut Vec<u8>) {
        for (name, value) in self.headers() {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Capacity of the byte store and of the field index (for allocation tests).
    #[doc(hidden)]
    pub fn capacities(&self) -> (usize, usize) {
        (self.store.capacity(), self.fields.capacity())
    }
}
