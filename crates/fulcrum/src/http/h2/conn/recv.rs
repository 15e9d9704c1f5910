//! Frames received, as both sides take them: each frame's header and size, header blocks
//! and their CONTINUATION frames, DATA against the windows, SETTINGS, PING, GOAWAY's checks
//! and WINDOW_UPDATE. What a frame means for a stream (a request, a response, a reset) is
//! each side's (`frontconn::recv`, `backconn::recv`).
//!
//! Owns: the frame mechanics both sides share. Must not touch: the socket, the views.

use super::*;

/// A frame's header, its payload at `rbuf[at..at + len]`.
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub id: u32,
    pub at: usize,
    pub len: usize,
}

impl<S: Side> Inner<S> {
    /// A frame payload's first four bytes (its size was checked), as a number.
    pub fn word(&self, f: &Frame) -> u32 {
        be32(&self.rbuf[f.at..f.at + 4])
    }

    /// The next whole frame read, if any: its size checked, and that it continues a header
    /// block still arriving.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ConnError> {
        let Some(Header { len, kind, flags, id }) = Header::parse(&self.rbuf[self.rpos..self.rend])
        else {
            return Ok(None);
        };
        if len > self.our_max_frame {
            return Err(ConnError(FRAME_SIZE_ERROR));
        }
        if self.rend - self.rpos < 9 + len {
            return Ok(None);
        }
        let at = self.rpos + 9;
        self.rpos = at + len;
        if self.block.as_ref().is_some_and(|b| kind != CONTINUATION || id != b.id) {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        match kind {
            HEADERS => self.wire.count(|c| &c.headers_rcvd),
            DATA => self.wire.count(|c| &c.data_rcvd),
            SETTINGS => self.wire.count(|c| &c.settings_rcvd),
            RST_STREAM => self.wire.count(|c| &c.rst_stream_rcvd),
            GOAWAY => self.wire.count(|c| &c.goaway_rcvd),
            _ => {}
        }
        Ok(Some(Frame { kind, flags, id, at, len }))
    }

    /// A HEADERS frame's payload past its padding and priority: the block's first fragment
    /// (at `rbuf[from..to]`), and the stream it depends on if it says.
    pub fn headers_payload(&self, f: &Frame) -> Result<(usize, usize, Option<u32>), ConnError> {
        let (from, to, dep) =
            headers_payload(f.flags, &self.rbuf[f.at..f.at + f.len]).map_err(ConnError)?;
        Ok((f.at + from, f.at + to, dep))
    }

    /// A header block's first fragment (`rbuf[from..to]`): `Some(end_stream)` if the block is
    /// whole (in `block_buf`), `None` if CONTINUATION frames are to come.
    pub fn begin_block(&mut self, f: &Frame, from: usize, to: usize) -> Option<bool> {
        self.block_buf.clear();
        self.block_buf.extend_from_slice(&self.rbuf[from..to]);
        let end_stream = f.flags & END_STREAM != 0;
        if f.flags & END_HEADERS == 0 {
            self.block = Some(Block { id: f.id, end_stream });
            return None;
        }
        Some(end_stream)
    }

    /// A CONTINUATION frame: `Some((id, end_stream))` once the block is whole. A block past
    /// `limit` bytes is a connection error with `code`.
    pub fn continuation(
        &mut self,
        f: &Frame,
        limit: usize,
        code: u32,
    ) -> Result<Option<(u32, bool)>, ConnError> {
        let Some(b) = self.block.as_ref() else { return Err(ConnError(PROTOCOL_ERROR)) };
        if self.block_buf.len() + f.len > limit {
            return Err(ConnError(code));
        }
        let (id, end_stream) = (b.id, b.end_stream);
        self.block_buf.extend_from_slice(&self.rbuf[f.at..f.at + f.len]);
        if f.flags & END_HEADERS == 0 {
            return Ok(None);
        }
        self.block = None;
        Ok(Some((id, end_stream)))
    }

    /// A DATA frame's payload past its padding (`rbuf[from..to]`), counted against the
    /// connection's window, which opens again once half of it was used (once it was opened
    /// wide: [`Inner::open_window`]).
    pub fn data_payload(&mut self, f: &Frame) -> Result<(usize, usize), ConnError> {
        if f.id == 0 {
            return Err(ConnError(PROTOCOL_ERROR));
        }
        let (from, to) = unpad(f.flags, &self.rbuf[f.at..f.at + f.len]).map_err(ConnError)?;
        self.conn_recv_window -= f.len as i64;
        if self.conn_recv_window < 0 {
            return Err(ConnError(FLOW_CONTROL_ERROR));
        }
        self.conn_unacked += f.len as i64;
        if self.window_opened && self.conn_unacked * 2 >= MAX_WINDOW {
            let n = std::mem::take(&mut self.conn_unacked);
            self.conn_recv_window += n;
            self.wire.window_update(0, n as u32);
        }
        Ok((f.at + from, f.at + to))
    }

    /// Opens the connection's window as wide as it goes (HAProxy's choice): streams share it,
    /// and one whose peer reads slowly must not hold back the others.
    pub fn open_window(&mut self) {
        self.window_opened = true;
        let n = MAX_WINDOW - 65_535;
        self.conn_recv_window += n;
        self.wire.window_update(0, n as u32);
    }

    /// SETTINGS, PING, GOAWAY's checks and the connection's WINDOW_UPDATE: `Ok(true)` once
    /// handled; `Ok(false)` for other frames (the side's).
    pub fn on_connection_frame(&mut self, f: &Frame) -> Result<bool, ConnError> {
        let p = f.at..f.at + f.len;
        match f.kind {
            SETTINGS => {
                if f.id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if f.flags & ACK != 0 {
                    if f.len != 0 {
                        return Err(ConnError(FRAME_SIZE_ERROR));
                    }
                    self.acked = true;
                    return Ok(true);
                }
                if !f.len.is_multiple_of(6) {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                for at in p.step_by(6) {
                    let kv = &self.rbuf[at..at + 6];
                    self.setting(u16::from_be_bytes([kv[0], kv[1]]), be32(&kv[2..]))?;
                }
                frame_head(&mut self.wire.out, 0, SETTINGS, ACK, 0);
            }
            PING => {
                if f.len != 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if f.id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                if f.flags & ACK == 0 {
                    frame_head(&mut self.wire.out, 8, PING, ACK, 0);
                    self.wire.out.extend_from_slice(&self.rbuf[p]);
                }
            }
            GOAWAY => {
                if f.len < 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if f.id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                return Ok(false);
            }
            WINDOW_UPDATE => {
                if f.len != 4 {
                    return Err(ConnError(FRAME_SIZE_ERROR));
                }
                if f.id != 0 {
                    return Ok(false);
                }
                let inc = i64::from(be32(&self.rbuf[p]) & MAX_ID);
                if inc == 0 {
                    return Err(ConnError(PROTOCOL_ERROR));
                }
                self.wire.send_window += inc;
                if self.wire.send_window > MAX_WINDOW {
                    return Err(ConnError(FLOW_CONTROL_ERROR));
                }
                self.flush_blocked();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A stream's WINDOW_UPDATE (`inc`), for a stream in the map that was not reset.
    pub fn stream_window(&mut self, id: u32, inc: i64) {
        let Some(st) = self.streams.get_mut(&id) else { return };
        if inc == 0 {
            self.wire.rst(st, PROTOCOL_ERROR);
            self.side.reset_sent(id);
            return;
        }
        st.send_window += inc;
        if st.send_window > MAX_WINDOW {
            self.wire.rst(st, FLOW_CONTROL_ERROR);
            self.side.reset_sent(id);
            return;
        }
        self.wire.flush_stream(st);
        if st.detached && st.closed() {
            self.streams.forget(&id);
        }
    }

    /// Streams waiting for the connection's window, once it opened.
    fn flush_blocked(&mut self) {
        while self.wire.send_window > 0 {
            let Some(id) = self.wire.blocked.pop_front() else { return };
            if let Some(st) = self.streams.get_mut(&id) {
                st.blocked = false;
                if st.reset.is_none() {
                    self.wire.flush_stream(st);
                }
                if st.detached && st.closed() {
                    self.streams.forget(&id);
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
                let delta = v - w.peer_window;
                w.peer_window = v;
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
            5 => w.peer_max_frame = v as usize,
            _ => self.side.setting(key, v)?,
        }
        Ok(())
    }

    /// DATA for a stream: counted against its window and `content-length`, then kept for the
    /// view (or dropped if it detached). Padding counts against the window but is never read:
    /// given back with the next WINDOW_UPDATE. `false` if the stream was reset for it.
    pub fn stream_data(&mut self, id: u32, f: &Frame, from: usize, to: usize) -> bool {
        let Some(st) = self.streams.get_for_data(&id) else { return false };
        let w = &mut self.wire;
        st.recv_window -= f.len as i64;
        if st.recv_window < 0 {
            w.rst(st, FLOW_CONTROL_ERROR);
            self.side.reset_sent(id);
            return false;
        }
        let data = &self.rbuf[from..to];
        if let Some(left) = st.cl_left.as_mut() {
            match left.checked_sub(data.len() as u64) {
                Some(l) => *left = l,
                None => {
                    w.rst(st, PROTOCOL_ERROR);
                    self.side.reset_sent(id);
                    return false;
                }
            }
        }
        if st.detached {
            // Read to its end and dropped: the window opens again at once.
            st.unacked += f.len as u32;
            if f.flags & END_STREAM == 0 && i64::from(st.unacked) * 2 >= self.our_window {
                let n = std::mem::take(&mut st.unacked);
                st.recv_window += i64::from(n);
                w.window_update(id, n);
            }
        } else {
            st.unacked += (f.len - data.len()) as u32;
            st.data.extend_from_slice(data);
        }
        true
    }
}
