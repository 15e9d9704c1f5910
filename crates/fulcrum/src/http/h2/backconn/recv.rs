//! Frames from the server: each checked as RFC 9113 says, then given to its stream (heads,
//! data, resets) or to the connection (SETTINGS, PING, GOAWAY, windows: [`super::conn`]).
//! A response is checked for `:status`, no request pseudo-field, the field rules and
//! `content-length` against DATA; a PUSH_PROMISE is a connection error.
//!
//! Owns: the meaning of each frame received. Must not touch: the socket, the views.

use fulcrum_h2::{Pseudo, RawHead};

use super::conn::Frame;
use super::*;

impl Inner<Back> {
    /// Handles the complete frames read.
    pub(super) fn on_frames(&mut self) -> Result<(), ConnError> {
        while let Some(f) = self.next_frame()? {
            match f.kind {
                DATA => self.on_data(&f)?,
                HEADERS => self.on_headers(&f)?,
                CONTINUATION => {
                    if let Some((id, end_stream)) =
                        self.continuation(&f, MAX_BLOCK, PROTOCOL_ERROR)?
                    {
                        self.on_block(id, end_stream)?;
                    }
                }
                _ => {
                    if self.on_connection_frame(&f)? {
                        if f.kind == SETTINGS && f.flags & ACK == 0 {
                            self.side.known = true;
                        }
                    } else {
                        self.on_control(&f)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn on_data(&mut self, f: &Frame) -> Result<(), ConnError> {
        let (from, to) = self.data_payload(f)?;
        let id = f.id;
        let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
        if st.closed() {
            return Ok(());
        }
        if !st.part.got_final || st.recv_end {
            self.wire.rst(st, if st.recv_end { STREAM_CLOSED } else { PROTOCOL_ERROR });
            return Ok(());
        }
        if !self.stream_data(id, f, from, to) {
            return Ok(());
        }
        let Some(st) = self.streams.get_mut(&id) else { return Ok(()) };
        if f.flags & END_STREAM != 0 {
            st.end_recv(&mut self.wire);
        }
        if let Some(waker) = st.reader.take() {
            waker.wake();
        }
        Ok(())
    }

    /// A frame for a stream not in the map: one that ended (ignored), or one never opened
    /// (a connection error: a server opens none).
    fn unknown_stream(&self, id: u32) -> Result<(), ConnError> {
        if id % 2 == 1 && id < self.side.next_id {
            Ok(())
        } else {
            Err(ConnError(PROTOCOL_ERROR))
        }
    }

    fn on_headers(&mut self, f: &Frame) -> Result<(), ConnError> {
        if f.id == 0 || f.id.is_multiple_of(2) {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let (from, to, _) = self.headers_payload(f)?;
        match self.begin_block(f, from, to) {
            Some(end_stream) => self.on_block(f.id, end_stream),
            None => Ok(()),
        }
    }

    /// A whole header block (in `block_buf`): decoded (the table must follow every block),
    /// then given to its stream as an interim head, the final head or trailers.
    fn on_block(&mut self, id: u32, end_stream: bool) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        let loaded =
            fulcrum_h2::hpack::load(&mut self.decoder, src, &mut raw, MAX_LIST, MAX_BLOCK * 4)
                .map_err(|_| ConnError(COMPRESSION_ERROR))?;
        if !src.is_empty() {
            return Err(ConnError(COMPRESSION_ERROR)); // a field cut short
        }
        let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
        if st.closed() {
            return Ok(());
        }
        let w = &mut self.wire;
        if st.recv_end {
            w.rst(st, STREAM_CLOSED);
            return Ok(());
        }
        let request_pseudo =
            [Pseudo::Method, Pseudo::Scheme, Pseudo::Authority, Pseudo::Path, Pseudo::Protocol]
                .iter()
                .any(|p| raw.pseudo(*p).is_some());
        let malformed =
            loaded.malformed || loaded.over_size || loaded.way_too_large || request_pseudo;
        if st.part.got_final {
            // Trailers: they end the stream, and carry no pseudo-field.
            if malformed || !end_stream || raw.pseudo(Pseudo::Status).is_some() {
                w.rst(st, PROTOCOL_ERROR);
                return Ok(());
            }
            st.trailers = Some(raw);
            st.end_recv(w);
            st.wake();
            return Ok(());
        }
        let status = match raw.status() {
            Some(s) if !malformed => s,
            _ => {
                w.rst(st, PROTOCOL_ERROR);
                return Ok(());
            }
        };
        if status < 200 {
            // An interim head neither ends the stream nor switches protocols (RFC 9113 8.1).
            if end_stream || status == 101 {
                w.rst(st, PROTOCOL_ERROR);
                return Ok(());
            }
            st.part.interim.push_back(raw);
            st.wake();
            return Ok(());
        }
        let Ok(cl) = content_length(&raw) else {
            w.rst(st, PROTOCOL_ERROR);
            return Ok(());
        };
        let p = &mut st.part;
        p.bodiless |= status == 204 || status == 304;
        st.cl_left = if p.bodiless { None } else { cl };
        p.got_final = true;
        p.response = Some(raw);
        if end_stream {
            st.end_recv(w);
        }
        st.wake();
        Ok(())
    }

    /// The frames the connection does not handle for both sides ([`Inner::on_connection_frame`]).
    fn on_control(&mut self, f: &Frame) -> Result<(), ConnError> {
        let id = f.id;
        match f.kind {
            RST_STREAM => {
                if f.len != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id == 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                let code = self.word(f);
                let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
                if st.reset.is_none() {
                    st.reset_by_peer(code);
                }
            }
            GOAWAY => {
                let last = self.word(f) & MAX_ID;
                self.side.closing = true;
                // Streams above the last the server took were not processed: refused (the
                // transaction may go again on another connection, see `exchange`).
                for st in self.streams.values_mut().filter(|s| s.id > last && !s.closed()) {
                    st.reset_by_peer(REFUSED_STREAM);
                }
            }
            WINDOW_UPDATE => {
                let inc = i64::from(self.word(f) & MAX_ID);
                match self.streams.get(&id) {
                    None => return self.unknown_stream(id),
                    Some(st) if st.closed() => {}
                    Some(_) => self.stream_window(id, inc),
                }
            }
            // Pushes were refused in our SETTINGS (ENABLE_PUSH 0).
            PUSH_PROMISE => return Err(ConnError(PROTOCOL_ERROR)),
            // PRIORITY and unknown frames are ignored.
            _ => {}
        }
        Ok(())
    }
}
