//! Frames from the server: each checked as RFC 9113 says, then given to its stream (heads,
//! data, resets) or to the connection (SETTINGS, PING, GOAWAY, windows).
//!
//! Owns: the meaning of each frame received. Must not touch: the socket, the views.

use h2::raw::{Pseudo, RawHead};

use super::*;

impl Inner {
    /// Handles the complete frames read.
    pub(super) fn on_frames(&mut self) -> Result<(), ConnError> {
        while self.rend - self.rpos >= 9 {
            let h = &self.rbuf[self.rpos..self.rpos + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            let id = be32(&h[5..9]) & MAX_ID;
            if len > self.our_max_frame {
                return Err(ConnError(FRAME_SIZE_ERROR));
            }
            if self.rend - self.rpos < 9 + len {
                return Ok(());
            }
            let at = self.rpos + 9;
            self.rpos = at + len;
            if let Some(b) = &self.block {
                if kind != CONTINUATION || id != b.id {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
            }
            match kind {
                DATA => self.on_data(id, flags, at, len)?,
                HEADERS => self.on_headers(id, flags, at, len)?,
                CONTINUATION => {
                    let Some(b) = self.block.as_ref() else {
                        return Err(ConnError(PROTOCOL_ERROR));
                    };
                    if self.block_buf.len() + len > MAX_BLOCK {
                        return Err(ConnError(PROTOCOL_ERROR));
                    }
                    let (id, end_stream) = (b.id, b.end_stream);
                    self.block_buf.extend_from_slice(&self.rbuf[at..at + len]);
                    if flags & END_HEADERS != 0 {
                        self.block = None;
                        self.on_block(id, end_stream)?;
                    }
                }
                _ => {
                    let p = std::mem::take(&mut self.rbuf);
                    let r = self.on_control(kind, flags, id, &p[at..at + len]);
                    self.rbuf = p;
                    r?;
                }
            }
        }
        Ok(())
    }

    fn on_data(&mut self, id: u32, flags: u8, at: usize, len: usize) -> Result<(), ConnError> {
        if id == 0 {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let (from, to) = unpad(flags, &self.rbuf[at..at + len]).map_err(ConnError)?;
        let (from, to) = (at + from, at + to);
        // The connection's window: opened again as bytes come (see `Conn::new`).
        self.conn_unacked += len as i64;
        if self.conn_unacked * 2 >= MAX_WINDOW {
            let n = std::mem::take(&mut self.conn_unacked);
            frame_head(&mut self.wire.out, 4, WINDOW_UPDATE, 0, 0);
            self.wire.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
        if st.closed() {
            return Ok(());
        }
        let w = &mut self.wire;
        if !st.got_final || st.recv_end {
            w.rst(st, if st.recv_end { STREAM_CLOSED } else { PROTOCOL_ERROR });
            return Ok(());
        }
        st.recv_window -= len as i64;
        if st.recv_window < 0 {
            w.rst(st, FLOW_CONTROL_ERROR);
            return Ok(());
        }
        let data = &self.rbuf[from..to];
        // Padding counts against the window but is never read: given back with the next.
        st.unacked += (len - data.len()) as u32;
        if let Some(left) = st.cl_left.as_mut() {
            match left.checked_sub(data.len() as u64) {
                Some(l) => *left = l,
                None => {
                    w.rst(st, PROTOCOL_ERROR);
                    return Ok(());
                }
            }
        }
        st.data.extend_from_slice(data);
        if flags & END_STREAM != 0 {
            end_of_stream(w, st);
        }
        if let Some(waker) = st.reader.take() {
            waker.wake();
        }
        Ok(())
    }

    /// A frame for a stream not in the map: one that ended (ignored), or one never opened
    /// (a connection error: a server opens none).
    fn unknown_stream(&self, id: u32) -> Result<(), ConnError> {
        if id % 2 == 1 && id < self.next_id {
            Ok(())
        } else {
            Err(ConnError(PROTOCOL_ERROR))
        }
    }

    fn on_headers(&mut self, id: u32, flags: u8, at: usize, len: usize) -> Result<(), ConnError> {
        if id == 0 || id.is_multiple_of(2) {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let mut p = &self.rbuf[at..at + len];
        let mut pad = 0;
        if flags & PADDED != 0 {
            let (&n, rest) = p.split_first().ok_or(ConnError(FRAME_SIZE_ERROR))?;
            pad = usize::from(n);
            p = rest;
        }
        if flags & PRIORITY != 0 {
            p = p.get(5..).ok_or(ConnError(FRAME_SIZE_ERROR))?;
        }
        if pad > p.len() {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let p = &p[..p.len() - pad];
        self.block_buf.clear();
        self.block_buf.extend_from_slice(p);
        let end_stream = flags & END_STREAM != 0;
        if flags & END_HEADERS == 0 {
            self.block = Some(Block { id, end_stream });
            return Ok(());
        }
        self.on_block(id, end_stream)
    }

    /// A whole header block (in `block_buf`): decoded (the table must follow every block),
    /// then given to its stream as an interim head, the final head or trailers.
    fn on_block(&mut self, id: u32, end_stream: bool) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        let loaded = h2::raw::load(&mut self.decoder, src, &mut raw, MAX_LIST, MAX_BLOCK * 4)
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
        if st.got_final {
            // Trailers: they end the stream, and carry no pseudo-field.
            if malformed || !end_stream || raw.pseudo(Pseudo::Status).is_some() {
                w.rst(st, PROTOCOL_ERROR);
                return Ok(());
            }
            st.trailers = Some(raw);
            end_of_stream(w, st);
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
            st.interim.push_back(raw);
            st.wake();
            return Ok(());
        }
        let Ok(cl) = content_length(&raw) else {
            w.rst(st, PROTOCOL_ERROR);
            return Ok(());
        };
        st.bodiless |= status == 204 || status == 304;
        st.cl_left = if st.bodiless { None } else { cl };
        st.got_final = true;
        st.response = Some(raw);
        if end_stream {
            end_of_stream(w, st);
        }
        st.wake();
        Ok(())
    }

    fn on_control(&mut self, kind: u8, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        match kind {
            RST_STREAM => {
                if p.len() != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id == 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
                if st.reset.is_none() {
                    st.reset = Some(be32(p));
                    st.local_end = true;
                    st.pending = Vec::new();
                    st.wake();
                }
            }
            SETTINGS => {
                if id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if flags & ACK != 0 {
                    if !p.is_empty() {
                        return Err(ConnError(FRAME_SIZE_ERROR));
                    }
                    self.acked = true;
                    return Ok(());
                }
                if !p.len().is_multiple_of(6) {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                for kv in p.chunks_exact(6) {
                    self.setting(u16::from_be_bytes([kv[0], kv[1]]), be32(&kv[2..]))?;
                }
                self.wire.peer.known = true;
                frame_head(&mut self.wire.out, 0, SETTINGS, ACK, 0);
            }
            PING => {
                if p.len() != 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if flags & ACK == 0 {
                    frame_head(&mut self.wire.out, 8, PING, ACK, 0);
                    self.wire.out.extend_from_slice(p);
                }
            }
            GOAWAY => {
                if p.len() < 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                let last = be32(p) & MAX_ID;
                self.closing = true;
                // Streams above the last the server took were not processed: refused (the
                // transaction may go again on another connection, see `exchange`).
                for st in self.streams.values_mut().filter(|s| s.id > last && !s.closed()) {
                    st.reset = Some(REFUSED_STREAM);
                    st.local_end = true;
                    st.pending = Vec::new();
                    st.wake();
                }
            }
            WINDOW_UPDATE => {
                if p.len() != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                let inc = i64::from(be32(p) & MAX_ID);
                if id == 0 {
                    if inc == 0 {
                        return Err(ConnError(PROTOCOL_ERROR));
                    }
                    self.wire.send_window += inc;
                    if self.wire.send_window > MAX_WINDOW {
                        return Err(ConnError(FLOW_CONTROL_ERROR));
                    }
                    self.flush_blocked();
                    return Ok(());
                }
                let Some(st) = self.streams.get_mut(&id) else { return self.unknown_stream(id) };
                if st.closed() {
                    return Ok(());
                }
                st.send_window += inc;
                if inc == 0 || st.send_window > MAX_WINDOW {
                    let code = if inc == 0 { PROTOCOL_ERROR } else { FLOW_CONTROL_ERROR };
                    self.wire.rst(st, code);
                    return Ok(());
                }
                self.wire.flush_stream(st);
            }
            // Pushes were refused in our SETTINGS (ENABLE_PUSH 0).
            PUSH_PROMISE => return Err(ConnError(PROTOCOL_ERROR)),
            // PRIORITY and unknown frames are ignored.
            _ => {}
        }
        Ok(())
    }

    /// Streams waiting for the connection's window, once it opened.
    fn flush_blocked(&mut self) {
        while self.wire.send_window > 0 {
            let Some(id) = self.wire.blocked.pop_front() else { return };
            if let Some(st) = self.streams.get_mut(&id) {
                st.blocked = false;
                if !st.closed() {
                    self.wire.flush_stream(st);
                }
            }
        }
    }

    fn setting(&mut self, key: u16, v: u32) -> Result<(), ConnError> {
        let peer = &mut self.wire.peer;
        match key {
            1 => self.owe_table_update |= v < 4096,
            2 if v > 1 => return Err(ConnError(PROTOCOL_ERROR)),
            3 => peer.max_streams = v,
            4 => {
                let v = i64::from(v);
                if v > MAX_WINDOW {
                    return Err(ConnError(FLOW_CONTROL_ERROR));
                }
                let delta = v - peer.window;
                peer.window = v;
                for st in self.streams.values_mut().filter(|s| !s.closed()) {
                    st.send_window += delta;
                    if st.send_window > MAX_WINDOW {
                        return Err(ConnError(FLOW_CONTROL_ERROR));
                    }
                    if delta > 0 && !st.pending.is_empty() {
                        self.wire.flush_stream(st);
                    }
                }
            }
            5 if !(16_384..=16_777_215).contains(&v) => return Err(ConnError(PROTOCOL_ERROR)),
            5 => peer.max_frame = v as usize,
            8 if v > 1 => return Err(ConnError(PROTOCOL_ERROR)),
            8 => peer.connect_protocol = v == 1,
            _ => {}
        }
        Ok(())
    }
}

/// The server ended its side: the body must have the size `content-length` gave.
fn end_of_stream(w: &mut Wire, st: &mut Strm) {
    if st.cl_left.is_some_and(|l| l > 0) {
        w.rst(st, PROTOCOL_ERROR);
        return;
    }
    st.recv_end = true;
}
