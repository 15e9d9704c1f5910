//! Frames from the client: each checked as RFC 9113 says (stream states, identifiers, sizes,
//! windows, the fields of a request), then given to its stream (a request, data, trailers, a
//! reset) or to the connection (SETTINGS, PING, GOAWAY, windows).
//!
//! Owns: the meaning of each frame received. Must not touch: the socket, the views.

use h2::raw::{Pseudo, RawHead};

use super::*;

impl Inner {
    /// Handles the complete frames read (the client preface first). A stream opened and reset
    /// in the same read is never handed over.
    pub(super) fn on_frames(&mut self) -> Result<(), ConnError> {
        if self.preface < PREFACE.len() {
            let n = (PREFACE.len() - self.preface).min(self.rend - self.rpos);
            if self.rbuf[self.rpos..self.rpos + n] != PREFACE[self.preface..self.preface + n] {
                // Not HTTP/2: the connection ends without a word.
                self.dead = true;
                return Ok(());
            }
            self.preface += n;
            self.rpos += n;
        }
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
                    // A header block that never ends (a CONTINUATION flood) ends the
                    // connection once it passes what any head may take.
                    if self.block_buf.len() + len > 4 * self.max_list + 16_384 {
                        return Err(ConnError(ENHANCE_YOUR_CALM));
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

    /// A frame for a stream not in the map: an idle one (never opened: a connection error),
    /// one this side reset lately (ignored), or one closed (`closed_code`).
    fn unknown_stream(&self, id: u32, closed_code: Option<u32>) -> Result<(), ConnError> {
        if id > self.last_id {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        if self.reset_ids.contains(&id) {
            return Ok(());
        }
        match closed_code {
            Some(code) => Err(ConnError(code)),
            None => Ok(()),
        }
    }

    fn on_data(&mut self, id: u32, flags: u8, at: usize, len: usize) -> Result<(), ConnError> {
        if id == 0 {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let (from, to) = unpad(flags, &self.rbuf[at..at + len]).map_err(ConnError)?;
        let (from, to) = (at + from, at + to);
        self.conn_recv_window -= len as i64;
        if self.conn_recv_window < 0 {
            return Err(ConnError(FLOW_CONTROL_ERROR));
        }
        // The connection's window opens again as bytes come (once it was opened wide).
        self.conn_unacked += len as i64;
        if self.window_opened && self.conn_unacked * 2 >= MAX_WINDOW {
            let n = std::mem::take(&mut self.conn_unacked);
            self.conn_recv_window += n;
            frame_head(&mut self.wire.out, 4, WINDOW_UPDATE, 0, 0);
            self.wire.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        let Some(st) = self.streams.get_mut(&id) else {
            return self.unknown_stream(id, Some(STREAM_CLOSED));
        };
        let w = &mut self.wire;
        if st.recv_end {
            if st.reset.is_none() {
                w.rst(st, STREAM_CLOSED);
                remember_reset(&mut self.reset_ids, id);
            }
            return Ok(());
        }
        if st.reset.is_some() {
            return if st.peer_reset { Err(ConnError(STREAM_CLOSED)) } else { Ok(()) };
        }
        st.recv_window -= len as i64;
        if st.recv_window < 0 {
            w.rst(st, FLOW_CONTROL_ERROR);
            remember_reset(&mut self.reset_ids, id);
            return Ok(());
        }
        let data = &self.rbuf[from..to];
        if let Some(left) = st.cl_left.as_mut() {
            match left.checked_sub(data.len() as u64) {
                Some(l) => *left = l,
                None => {
                    w.rst(st, PROTOCOL_ERROR);
                    remember_reset(&mut self.reset_ids, id);
                    return Ok(());
                }
            }
        }
        if st.detached {
            // Read to its end and dropped: the window opens again at once.
            st.unacked += len as u32;
        } else {
            // Padding counts against the window but is never read: given back with the next.
            st.unacked += (len - data.len()) as u32;
            st.data.extend_from_slice(data);
        }
        if flags & END_STREAM != 0 {
            self.end_of_request(id);
        } else if st.detached && i64::from(st.unacked) * 2 >= self.our_window {
            let n = std::mem::take(&mut st.unacked);
            st.recv_window += i64::from(n);
            frame_head(&mut w.out, 4, WINDOW_UPDATE, 0, id);
            w.out.extend_from_slice(&n.to_be_bytes());
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
        if st.cl_left.is_some_and(|l| l > 0) {
            self.wire.rst(st, PROTOCOL_ERROR);
            remember_reset(&mut self.reset_ids, id);
            return;
        }
        st.recv_end = true;
        if st.detached && st.closed() {
            self.streams.remove(&id);
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
            let dep = p.get(..5).ok_or(ConnError(FRAME_SIZE_ERROR))?;
            if be32(dep) & MAX_ID == id {
                // A stream that depends on itself (RFC 9113 5.3.1): a stream error, the block
                // still decoded (the table must follow it).
                self.block_buf.clear();
                self.block_buf.extend_from_slice(&p[5..]);
                return self.self_dependent(id);
            }
            p = &p[5..];
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

    /// HEADERS whose priority names its own stream: reset (PROTOCOL_ERROR).
    fn self_dependent(&mut self, id: u32) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        h2::raw::load(&mut self.decoder, src, &mut raw, self.max_list, 4 * self.max_list)
            .map_err(|_| ConnError(COMPRESSION_ERROR))?;
        self.last_id = self.last_id.max(id);
        frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
        self.wire.out.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
        remember_reset(&mut self.reset_ids, id);
        Ok(())
    }

    /// A whole header block (in `block_buf`): decoded (the table must follow every block),
    /// then a new stream's request, or trailers.
    fn on_block(&mut self, id: u32, end_stream: bool) -> Result<(), ConnError> {
        let mut raw = RawHead::with_room();
        let src = &mut self.block_buf;
        let loaded =
            h2::raw::load(&mut self.decoder, src, &mut raw, self.max_list, 4 * self.max_list)
                .map_err(|_| ConnError(COMPRESSION_ERROR))?;
        if !src.is_empty() {
            return Err(ConnError(COMPRESSION_ERROR)); // a field cut short
        }
        if loaded.way_too_large {
            return Err(ConnError(ENHANCE_YOUR_CALM));
        }
        if id <= self.last_id {
            // Trailers of an open stream; or a closed one's.
            let Some(st) = self.streams.get_mut(&id) else {
                return self.unknown_stream(id, Some(STREAM_CLOSED));
            };
            if st.reset.is_some() {
                return if st.peer_reset { Err(ConnError(STREAM_CLOSED)) } else { Ok(()) };
            }
            if st.recv_end {
                self.wire.rst(st, STREAM_CLOSED);
                remember_reset(&mut self.reset_ids, id);
                return Ok(());
            }
            // Trailers end the stream and carry no pseudo-field.
            let pseudo = raw.all().next().is_some_and(|(n, _)| n.first() == Some(&b':'));
            if loaded.malformed || loaded.over_size || !end_stream || pseudo {
                self.wire.rst(st, PROTOCOL_ERROR);
                remember_reset(&mut self.reset_ids, id);
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
        self.last_id = id;
        if self.goaway.is_some_and(|last| id > last) {
            return Ok(()); // after our GOAWAY: ignored
        }
        if self.streams.len() >= self.max_streams {
            frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
            self.wire.out.extend_from_slice(&REFUSED_STREAM.to_be_bytes());
            remember_reset(&mut self.reset_ids, id);
            return Ok(());
        }
        let malformed = loaded.malformed || !request_ok(&raw);
        let cl = content_length(&raw);
        if malformed || cl.is_err() {
            frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
            self.wire.out.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
            remember_reset(&mut self.reset_ids, id);
            return Ok(());
        }
        if loaded.over_size {
            // Fields beyond `max_header_list_size`: 431, as the `h2` crate answered.
            let block = [0x08, 0x03, b'4', b'3', b'1'];
            frame_head(&mut self.wire.out, block.len(), HEADERS, END_STREAM | END_HEADERS, id);
            self.wire.out.extend_from_slice(&block);
            if !end_stream {
                frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
                self.wire.out.extend_from_slice(&NO_ERROR.to_be_bytes());
            }
            remember_reset(&mut self.reset_ids, id);
            return Ok(());
        }
        if !self.window_opened {
            // HAProxy's order: the connection's window opens wide with the first stream,
            // after the SETTINGS exchange.
            self.window_opened = true;
            let n = MAX_WINDOW - 65_535;
            self.conn_recv_window += n;
            frame_head(&mut self.wire.out, 4, WINDOW_UPDATE, 0, 0);
            self.wire.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        let recv_window = if self.acked { self.our_window } else { self.our_window.max(65_535) };
        let cl_left = cl.ok().flatten();
        let mut st = Strm {
            id,
            request: Some(raw),
            recv_window,
            send_window: self.wire.peer.window,
            cl_left,
            ..Strm::default()
        };
        if end_stream {
            if cl_left.is_some_and(|l| l > 0) {
                frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
                self.wire.out.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
                remember_reset(&mut self.reset_ids, id);
                return Ok(());
            }
            st.recv_end = true;
        }
        self.streams.insert(id, st);
        self.opened.push(id);
        Ok(())
    }

    fn on_control(&mut self, kind: u8, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        match kind {
            PRIORITY_FRAME => {
                if id == 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if p.len() != 5 {
                    self.stream_error(id, FRAME_SIZE_ERROR);
                } else if be32(p) & MAX_ID == id {
                    self.stream_error(id, PROTOCOL_ERROR);
                }
            }
            RST_STREAM => {
                if p.len() != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if id == 0 || id > self.last_id {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                let Some(st) = self.streams.get_mut(&id) else { return Ok(()) };
                if st.reset.is_none() {
                    if !st.answered {
                        self.early_resets += 1;
                    }
                    st.reset = Some(be32(p));
                    st.peer_reset = true;
                    st.local_end = true;
                    st.pending = Vec::new();
                    st.wake();
                }
                let detached = st.detached;
                if detached || self.opened.contains(&id) {
                    self.streams.remove(&id);
                    self.opened.retain(|&o| o != id);
                }
                if self.early_resets > EARLY_RESETS && self.early_resets > 2 * self.answered {
                    return Err(ConnError(ENHANCE_YOUR_CALM));
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
                let Some(st) = self.streams.get_mut(&id) else {
                    return self.unknown_stream(id, None);
                };
                if st.reset.is_some() {
                    return Ok(());
                }
                if inc == 0 {
                    self.wire.rst(st, PROTOCOL_ERROR);
                    remember_reset(&mut self.reset_ids, id);
                    return Ok(());
                }
                st.send_window += inc;
                if st.send_window > MAX_WINDOW {
                    self.wire.rst(st, FLOW_CONTROL_ERROR);
                    remember_reset(&mut self.reset_ids, id);
                    return Ok(());
                }
                self.wire.flush_stream(st);
                if st.detached && st.closed() {
                    self.streams.remove(&id);
                }
            }
            // A client never pushes.
            PUSH_PROMISE => return Err(ConnError(PROTOCOL_ERROR)),
            // Unknown frames are ignored.
            _ => {}
        }
        Ok(())
    }

    /// A stream error on a stream that may not be open (a PRIORITY frame's).
    fn stream_error(&mut self, id: u32, code: u32) {
        match self.streams.get_mut(&id) {
            Some(st) if st.reset.is_none() => self.wire.rst(st, code),
            Some(_) => return,
            None => {
                frame_head(&mut self.wire.out, 4, RST_STREAM, 0, id);
                self.wire.out.extend_from_slice(&code.to_be_bytes());
            }
        }
        remember_reset(&mut self.reset_ids, id);
    }

    fn flush_blocked(&mut self) {
        while self.wire.send_window > 0 {
            let Some(id) = self.wire.blocked.pop_front() else { return };
            if let Some(st) = self.streams.get_mut(&id) {
                st.blocked = false;
                if st.reset.is_none() {
                    self.wire.flush_stream(st);
                }
                if st.detached && st.closed() {
                    self.streams.remove(&id);
                }
            }
        }
    }

    fn setting(&mut self, key: u16, v: u32) -> Result<(), ConnError> {
        let w = &mut self.wire;
        match key {
            1 => w.owe_table_update |= v < 4096,
            2 if v > 1 => return Err(ConnError(PROTOCOL_ERROR)),
            4 => {
                let v = i64::from(v);
                if v > MAX_WINDOW {
                    return Err(ConnError(FLOW_CONTROL_ERROR));
                }
                let delta = v - w.peer.window;
                w.peer.window = v;
                for st in self.streams.values_mut().filter(|s| s.reset.is_none()) {
                    st.send_window += delta;
                    if st.send_window > MAX_WINDOW {
                        return Err(ConnError(FLOW_CONTROL_ERROR));
                    }
                    if delta > 0 && !st.pending.is_empty() {
                        w.flush_stream(st);
                    }
                }
            }
            5 if !(16_384..=16_777_215).contains(&v) => return Err(ConnError(PROTOCOL_ERROR)),
            5 => w.peer.max_frame = v as usize,
            _ => {}
        }
        Ok(())
    }
}

/// A PRIORITY frame's type (RFC 9113 6.3).
const PRIORITY_FRAME: u8 = 2;

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
