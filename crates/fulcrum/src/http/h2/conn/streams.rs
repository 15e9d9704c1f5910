//! A connection's streams by id: the streams sit in a slab of slots that the connection's
//! next streams reuse in place, and a small map finds a stream's slot by its id.
//!
//! A map holding the streams themselves (a few hundred bytes each) moved each one in when it
//! opened and out when it closed, and rehashed the whole table every dozen streams or so (its
//! removed entries leave tombstones that only a rehash clears): with a hundred streams in
//! flight, 360 instructions per stream and the memory of every stream copied anew each time.
//! Here a stream stays where it was made, and a rehash moves 8-byte entries.
//!
//! It also keeps a few emptied body buffers ([`StreamMap::give_buf`]): a stream's first DATA
//! frame takes one instead of allocating (a gRPC call's two bodies cost two allocations and
//! frees, 800 instructions, without them). They are kept up to 64 KiB a connection.
//!
//! Owns: where a connection's streams are, and its spare body buffers. Must not touch: what
//! the streams hold.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::super::frames::IdHash;
use super::Strm;

/// The streams of one connection, by id. A free slot holds a default stream (id 0, which no
/// stream has).
pub struct StreamMap<P> {
    slots: Vec<Strm<P>>,
    free: Vec<u32>,
    index: HashMap<u32, u32, BuildHasherDefault<IdHash>>,
    /// Emptied body buffers, for streams' next DATA frames, and their capacity in all.
    bufs: Vec<Vec<u8>>,
    buf_bytes: usize,
    /// The proxy's counters (its `h2` statistics module): a stream counts as open from its
    /// insertion until it is forgotten or the map ends.
    pub counters: Option<std::sync::Arc<crate::counters::Counters>>,
}

impl<P> Drop for StreamMap<P> {
    fn drop(&mut self) {
        // (The streams still here end with their connection.)
        if let Some(c) = &self.counters {
            let open = self.index.len() as u64;
            c.h2.open_streams.fetch_sub(open, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl<P> Default for StreamMap<P> {
    fn default() -> Self {
        StreamMap {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
            counters: None,
            bufs: Vec::new(),
            buf_bytes: 0,
        }
    }
}

/// The spare body buffers' capacity kept per connection in all (dropped when it idles with
/// few streams, or with its store once idle a while: see [`StreamMap::drop_bufs`]), and the
/// largest buffer kept. A hundred streams in flight with
/// small bodies (gRPC's) each find one.
const SPARE_BYTES: usize = 64 * 1024;
const SPARE_BUF_MAX: usize = 16 * 1024;

impl<P: Default> StreamMap<P> {
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The memory it keeps, in streams.
    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    pub fn get(&self, id: &u32) -> Option<&Strm<P>> {
        self.index.get(id).map(|&s| &self.slots[s as usize])
    }

    pub fn get_mut(&mut self, id: &u32) -> Option<&mut Strm<P>> {
        self.index.get(id).map(|&s| &mut self.slots[s as usize])
    }

    /// Adds stream `st` (under its id), in a free slot if there is one (a stream already
    /// there with that id is replaced); made in place when inlined.
    #[inline]
    pub fn insert(&mut self, st: Strm<P>) -> &mut Strm<P> {
        debug_assert!(st.id != 0, "stream 0 is the connection");
        let slot = match self.index.get(&st.id) {
            Some(&s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => s,
                    None => {
                        self.slots.push(Strm::default());
                        (self.slots.len() - 1) as u32
                    }
                };
                self.index.insert(st.id, s);
                if let Some(c) = &self.counters {
                    c.h2.total_streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    c.h2.open_streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                s
            }
        };
        let at = &mut self.slots[slot as usize];
        *at = st;
        at
    }

    /// Drops stream `id` where it is; its slot is free for another (its body buffer kept
    /// for another stream).
    pub fn forget(&mut self, id: &u32) {
        if let Some(s) = self.index.remove(id) {
            if let Some(c) = &self.counters {
                c.h2.open_streams.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
            self.free.push(s);
            let at = &mut self.slots[s as usize];
            let data = std::mem::take(&mut at.data);
            *at = Strm::default();
            self.give_buf(data);
        }
    }

    /// Stream `id`, with room for body bytes: a spare buffer if it had none.
    #[inline]
    pub fn get_for_data(&mut self, id: &u32) -> Option<&mut Strm<P>> {
        let st = &mut self.slots[*self.index.get(id)? as usize];
        if st.data.capacity() == 0 {
            if let Some(b) = self.bufs.pop() {
                self.buf_bytes -= b.capacity();
                st.data = b;
            }
        }
        Some(st)
    }

    /// Keeps an emptied body buffer for a stream's next DATA frames (unless enough are kept,
    /// or it is large).
    #[inline]
    pub fn give_buf(&mut self, mut b: Vec<u8>) {
        let cap = b.capacity();
        if cap > 0 && cap <= SPARE_BUF_MAX && self.buf_bytes + cap <= SPARE_BYTES {
            b.clear();
            self.buf_bytes += cap;
            self.bufs.push(b);
        }
    }

    /// Frees the spare body buffers (the connection idles).
    pub fn drop_bufs(&mut self) {
        self.bufs = Vec::new();
        self.buf_bytes = 0;
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Strm<P>> {
        self.slots.iter_mut().filter(|s| s.id != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strm(id: u32) -> Strm<u8> {
        Strm { id, part: id as u8, ..Strm::default() }
    }

    #[test]
    fn a_forgotten_streams_body_buffer_serves_the_next_streams_data() {
        let mut m = StreamMap::<u8>::default();
        m.insert(strm(1));
        let st = m.get_for_data(&1).expect("stream 1");
        assert_eq!(st.data.capacity(), 0, "no spare yet");
        st.data.extend_from_slice(b"hello");
        let at = st.data.as_ptr();
        m.forget(&1);
        m.insert(strm(3));
        let st = m.get_for_data(&3).expect("stream 3");
        assert!(st.data.is_empty());
        assert_eq!(st.data.as_ptr(), at, "stream 1's buffer, emptied");
        // A large buffer is not kept, nor more than a few.
        m.give_buf(Vec::with_capacity(SPARE_BUF_MAX + 1));
        assert!(m.bufs.is_empty());
        for _ in 0..5 {
            m.give_buf(Vec::with_capacity(SPARE_BYTES / 4));
        }
        assert_eq!(m.bufs.len(), 4);
        assert_eq!(m.buf_bytes, SPARE_BYTES);
        m.drop_bufs();
        assert!(m.bufs.is_empty());
    }

    #[test]
    fn streams_are_found_by_id_and_their_slots_reused() {
        let mut m = StreamMap::<u8>::default();
        for id in [1, 3, 5] {
            m.insert(strm(id));
        }
        assert_eq!(m.len(), 3);
        assert_eq!(m.get(&3).map(|s| s.part), Some(3));
        m.forget(&3);
        assert!(m.get(&3).is_none());
        assert_eq!(m.len(), 2);
        m.insert(strm(7));
        // Stream 7 took stream 3's slot.
        assert_eq!(m.slots.len(), 3);
        assert_eq!(m.get_mut(&7).map(|s| s.part), Some(7));
        let mut ids: Vec<u32> = m.values_mut().map(|s| s.id).collect();
        ids.sort();
        assert_eq!(ids, [1, 5, 7]);
        m.forget(&1);
        assert!(m.get(&1).is_none());
        m.forget(&1);
        assert_eq!(m.len(), 2);
        let mut ids: Vec<u32> = m.values_mut().map(|s| s.id).collect();
        ids.sort();
        assert_eq!(ids, [5, 7]);
        m.insert(strm(9));
        m.insert(strm(11));
        assert_eq!(m.slots.len(), 4);
        // Inserting an id again replaces the stream.
        m.insert(Strm { id: 9, part: 42, ..Strm::default() });
        assert_eq!(m.len(), 4);
        assert_eq!(m.get(&9).map(|s| s.part), Some(42));
    }
}
