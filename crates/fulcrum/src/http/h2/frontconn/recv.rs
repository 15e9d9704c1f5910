//! Frames from the client: each checked as RFC 9113 says (stream states, identifiers, sizes,
//! windows, the fields of a request), then given to its stream (a request, data, trailers, a
//! reset) or to the connection (SETTINGS, PING, GOAWAY, windows: [`super::conn`]).
//!
//! Owns: the meaning of each frame received. Must not touch: the socket, the views.

use fulcrum_h2::{Pseudo, RawHead};

use super::conn::Frame;
use super::*;

impl Inner<Front> {
    /// Handles the complete frames read (the client preface first). A stream opened and reset
    /// in the same read is never handed over.
    pub(super) fn on_frames(&mut self) -> Result<(), ConnError> {
        let preface = self.side.preface;
        if preface < PREFACE.len() {
            let n = (PREFACE.len() - preface).min(self.rend - self.rpos);
            if self.rbuf[self.rpos..self.rpos + n] != PREFACE[preface..preface + n] {
                // Not HTTP/2: the connection ends without a word.
                self.dead = true;
                return Ok(());
            }
            self.side.preface += n;
            self.rpos += n;
        }
        while let Some(f) = self.next_frame()? {
            match f.kind {
                DATA => self.on_data(&f)?,
                HEADERS => self.on_headers(&f)?,
                CONTINUATION => {
                    // A header block that never ends (a CONTINUATION flood) ends the
                    // connection once it passes what any head may take.
                    let limit = 4 * self.side.max_list + 16_384;
                    if let Some((id, end_stream)) =
                        self.continuation(&f, limit, ENHANCE_YOUR_CALM)?
                    {
                        self.on_block(id, end_stream)?;
                    }
                }
                _ => {
                    if !self.on_connection_frame(&f)? {
                        self.on_control(&f)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A frame for a stream not in the map: an idle one (never opened: a connection error),
    /// one this side reset lately (ignored), or one closed (`closed_code`).
    fn unknown_stream(&self, id: u32, closed_code: Option<u32>) -> Result<(), ConnError> {
        if id > self.side.last_id {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        if self.side.reset_ids.contains(&id) {
            return Ok(());
        }
        match closed_code {
            Some(code) => Err(ConnError(code)),
            None => Ok(()),
        }
    }

    fn on_data(&mut self, f: &Frame) -> Result<(), ConnError> {
        let (from, to) = self.data_payload(f)?;
        let id = f.id;
        let Some(st) = self.streams.get_mut(&id) else {
            return self.unknown_stream(id, Some(STREAM_CLOSED));
        };
        if st.recv_end {
            if st.reset.is_none() {
                self.wire.rst(st, STREAM_CLOSED);
                self.side.reset_sent(id);
            }
            return Ok(());
        }
        if st.reset.is_some() {
            return if st.part.peer_reset { Err(ConnError(STREAM_CLOSED)) } else { Ok(()) };
        }
        if !self.stream_data(id, f, from, to) {
            return Ok(());
        }
        if f.flags & END_STREAM != 0 {
            self.end_of_request(id);
        }
        if let Some(st) = self.streams.get_mut(&id) {
            if let Some(waker) = st.reader.take() {
                waker.wake();
            }
        }
        Ok(())
    }

    /// The client ended its side: the body must have the size `content-length` gave. A
    /// detached stream then closes.
    fn end_of_request(&mut self, id: u32) {
        let Some(st) = self.streams.get_mut(&id) else { return };
        if !st.end_recv(&mut self.wire) {
            self.side.reset_sent(id);
        } else if st.detached && st.closed() {
            self.streams.forget(&id);
        }
    }

    fn on_headers(&mut self, f: &Frame) -> Result<(), ConnError> {
        let id = f.id;
        if id == 0 || id.is_multiple_of(2) {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let (from, to, dep) = self.headers_payload(f)?;
        if dep == Some(id) {
            // A stream that depends on itself (RFC 9113 5.3.1): a stream error, the block
            // still decoded (the table must follow it).
            self.block_buf.clear();
            self.block_buf.extend_from_slice(&self.rbuf[from..to]);
            return self.self_dependent(id);
        }
        match self.begin_block(f, from, to) {
            Some(end_stream) => self.on_block(id, end_stream),
            None => Ok(()),
        }
    }

    /// HEADERS whose priority names its own stream: reset (PROTOCOL_ERROR).
    fn self_dependent(&mut self, id: u32) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        let max_list = self.side.max_list;
        fulcrum_h2::hpack::load(&mut self.decoder, src, &mut raw, max_list, 4 * max_list)
            .map_err(|_| ConnError(COMPRESSION_ERROR))?;
        self.side.last_id = self.side.last_id.max(id);
        self.wire.rst_frame(id, PROTOCOL_ERROR);
        self.side.reset_sent(id);
        Ok(())
    }

    /// A whole header block (in `block_buf`): decoded (the table must follow every block),
    /// then a new stream's request, or trailers.
    fn on_block(&mut self, id: u32, end_stream: bool) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        let max_list = self.side.max_list;
        let loaded =
            fulcrum_h2::hpack::load(&mut self.decoder, src, &mut raw, max_list, 4 * max_list)
                .map_err(|_| ConnError(COMPRESSION_ERROR))?;
        if !src.is_empty() {
            return Err(ConnError(COMPRESSION_ERROR)); // a field cut short
        }
        if loaded.way_too_large {
            return Err(ConnError(ENHANCE_YOUR_CALM));
        }
        if id <= self.side.last_id {
            // Trailers of an open stream; or a closed one's.
            let Some(st) = self.streams.get_mut(&id) else {
                return self.unknown_stream(id, Some(STREAM_CLOSED));
            };
            if st.reset.is_some() {
                return if st.part.peer_reset { Err(ConnError(STREAM_CLOSED)) } else { Ok(()) };
            }
            if st.recv_end {
                self.wire.rst(st, STREAM_CLOSED);
                self.side.reset_sent(id);
                return Ok(());
            }
            // Trailers end the stream and carry no pseudo-field.
            let pseudo = raw.all().next().is_some_and(|(n, _)| n.first() == Some(&b':'));
            if loaded.malformed || loaded.over_size || !end_stream || pseudo {
                self.wire.rst(st, PROTOCOL_ERROR);
                self.side.reset_sent(id);
                return Ok(());
            }
            if !st.detached {
                st.trailers = Some(raw);
            }
            self.end_of_request(id);
            if let Some(st) = self.streams.get_mut(&id) {
                st.wake();
            }
            return Ok(());
        }
        // A new stream: its id above every earlier one.
        self.side.last_id = id;
        if self.side.goaway.is_some_and(|last| id > last) {
            return Ok(()); // after our GOAWAY: ignored
        }
        let refuse = if self.streams.len() >= self.side.max_streams {
            Some(REFUSED_STREAM)
        } else if loaded.malformed || !request_ok(&raw) {
            Some(PROTOCOL_ERROR)
        } else {
            None
        };
        let cl = content_length(&raw);
        if let Some(code) = refuse.or(cl.is_err().then_some(PROTOCOL_ERROR)) {
            self.wire.rst_frame(id, code);
            self.side.reset_sent(id);
            return Ok(());
        }
        if loaded.over_size {
            // Fields beyond `max_header_list_size`: 431, as the `h2` crate answered.
            self.wire.head(id, &[0x08, 0x03, b'4', b'3', b'1'], true);
            if !end_stream {
                self.wire.rst_frame(id, NO_ERROR);
            }
            self.side.reset_sent(id);
            return Ok(());
        }
        if !self.window_opened {
            // HAProxy's order: the connection's window opens wide with the first stream,
            // after the SETTINGS exchange.
            self.open_window();
        }
        let cl_left = cl.ok().flatten();
        if end_stream && cl_left.is_some_and(|l| l > 0) {
            self.wire.rst_frame(id, PROTOCOL_ERROR);
            self.side.reset_sent(id);
            return Ok(());
        }
        let st = self.new_stream(id);
        st.part.request = Some(raw);
        st.cl_left = cl_left;
        st.recv_end = end_stream;
        self.side.opened.push(id);
        Ok(())
    }

    /// The frames the connection does not handle for both sides ([`Inner::on_connection_frame`]).
    fn on_control(&mut self, f: &Frame) -> Result<(), ConnError> {
        let id = f.id;
        match f.kind {
            PRIORITY_FRAME => {
                if id == 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if f.len != 5 {
                    self.stream_error(id, FRAME_SIZE_ERROR);
                } else if self.word(f) & MAX_ID == id {
                    self.stream_error(id, PROTOCOL_ERROR);
                }
            }
            RST_STREAM => {
                if f.len != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id == 0 || id > self.side.last_id {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                let code = self.word(f);
                let Some(st) = self.streams.get_mut(&id) else { return Ok(()) };
                if st.reset.is_none() {
                    if !st.part.answered {
                        self.side.early_resets += 1;
                    }
                    st.part.peer_reset = true;
                    st.reset_by_peer(code);
                }
                if st.detached || self.side.opened.contains(&id) {
                    self.streams.forget(&id);
                    self.side.opened.retain(|&o| o != id);
                }
                let s = &self.side;
                if s.early_resets > EARLY_RESETS && s.early_resets > 2 * s.answered {
                    return Err(ConnError(ENHANCE_YOUR_CALM));
                }
            }
            WINDOW_UPDATE => {
                let inc = i64::from(self.word(f) & MAX_ID);
                match self.streams.get(&id) {
                    None => return self.unknown_stream(id, None),
                    Some(st) if st.reset.is_some() => {}
                    Some(_) => self.stream_window(id, inc),
                }
            }
            // A client never pushes.
            PUSH_PROMISE => return Err(ConnError(PROTOCOL_ERROR)),
            // GOAWAY (checked) and unknown frames are ignored.
            _ => {}
        }
        Ok(())
    }

    /// A stream error on a stream that may not be open (a PRIORITY frame's).
    fn stream_error(&mut self, id: u32, code: u32) {
        match self.streams.get_mut(&id) {
            Some(st) if st.reset.is_none() => self.wire.rst(st, code),
            Some(_) => return,
            None => self.wire.rst_frame(id, code),
        }
        self.side.reset_sent(id);
    }
}

/// The pseudo-fields of a request as RFC 9113 8.3.1 and RFC 8441 4 want them: `:method`;
/// `:scheme` and a non-empty `:path` unless a CONNECT without `:protocol`, which has neither;
/// `:protocol` only on CONNECT; no `:status`.
fn request_ok(raw: &RawHead) -> bool {
    let Some(method) = raw.method() else { return false };
    let connect = method == b"CONNECT";
    let protocol = raw.protocol().is_some();
    if (protocol && !connect) || raw.pseudo(Pseudo::Status).is_some() {
        return false;
    }
    let plain_connect = connect && !protocol;
    let scheme_ok = match raw.scheme() {
        Some(s) => !plain_connect && valid_scheme(s),
        None => plain_connect,
    };
    let path_ok = match raw.path() {
        Some(p) => !plain_connect && !p.is_empty(),
        None => plain_connect,
    };
    scheme_ok && path_ok
}

/// A URI scheme as `http::uri::Scheme` takes it: letters, digits, `+`, `-`, `.`, `~`; at
/// most 64 bytes (and not empty).
fn valid_scheme(s: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'~'))
}
