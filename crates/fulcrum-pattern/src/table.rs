//! An open-addressing hash table from byte strings to entry indexes, optionally ASCII
//! case-insensitive, looked up with a borrowed slice and no allocation.
//!
//! Owns: hashing (SipHash with a per-table random key, so crafted inputs cannot aim at one
//! bucket), probing, and the "first inserted key wins" rule for duplicates.
//! Must not touch: what the keys mean (exact strings, dom/dir words are decided by callers).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

const EMPTY: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) struct BytesTable {
    fold: bool,
    state: RandomState,
    /// Slot -> position in `keys`, or `EMPTY`.
    slots: Vec<u32>,
    keys: Vec<Box<[u8]>>,
    hashes: Vec<u64>,
    ids: Vec<u32>,
    max_len: usize,
}

impl BytesTable {
    /// `keys[i]` belongs to entry `i`; for equal keys (after folding) the lowest `i` wins.
    pub fn build<'a>(keys: impl IntoIterator<Item = (u32, &'a [u8])>, fold: bool) -> BytesTable {
        let mut first: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut order: Vec<Vec<u8>> = Vec::new();
        for (id, key) in keys {
            let k = if fold { key.to_ascii_lowercase() } else { key.to_vec() };
            if let std::collections::hash_map::Entry::Vacant(e) = first.entry(k.clone()) {
                e.insert(id);
                order.push(k);
            }
        }
        let size = (order.len() * 2).next_power_of_two().max(8);
        let mut table = BytesTable {
            fold,
            state: RandomState::new(),
            slots: vec![EMPTY; size],
            keys: Vec::with_capacity(order.len()),
            hashes: Vec::with_capacity(order.len()),
            ids: Vec::with_capacity(order.len()),
            max_len: 0,
        };
        for k in order {
            let id = first[&k];
            let h = table.hash(&k);
            let mut slot = h as usize & (size - 1);
            while table.slots[slot] != EMPTY {
                slot = (slot + 1) & (size - 1);
            }
            table.slots[slot] = table.keys.len() as u32;
            table.max_len = table.max_len.max(k.len());
            table.keys.push(k.into_boxed_slice());
            table.hashes.push(h);
            table.ids.push(id);
        }
        table
    }

    fn hash(&self, key: &[u8]) -> u64 {
        let mut h = self.state.build_hasher();
        h.write_usize(key.len());
        if self.fold {
            let mut buf = [0u8; 64];
            for chunk in key.chunks(buf.len()) {
                let out = &mut buf[..chunk.len()];
                out.copy_from_slice(chunk);
                out.make_ascii_lowercase();
                h.write(out);
            }
        } else {
            h.write(key);
        }
        h.finish()
    }

    /// The longest key, to bound the candidate substrings of dom/dir lookups.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The entry whose key equals `key` (ASCII case-insensitively if folding).
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        if key.len() > self.max_len || self.keys.is_empty() {
            return None;
        }
        let h = self.hash(key);
        let mask = self.slots.len() - 1;
        let mut slot = h as usize & mask;
        loop {
            let pos = self.slots[slot];
            if pos == EMPTY {
                return None;
            }
            let pos = pos as usize;
            if self.hashes[pos] == h {
                let k = &self.keys[pos];
                let same = if self.fold { k.eq_ignore_ascii_case(key) } else { **k == *key };
                if same {
                    return Some(self.ids[pos]);
                }
            }
            slot = (slot + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_keep_the_first_entry() {
        let t = BytesTable::build([(0, &b"a"[..]), (1, b"b"), (2, b"a")], false);
        assert_eq!(t.get(b"a"), Some(0));
        assert_eq!(t.get(b"b"), Some(1));
        assert_eq!(t.get(b"c"), None);
        assert_eq!(t.get(b""), None);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn folding_tables_ignore_ascii_case_of_keys_and_inputs() {
        let long = [b'X'; 200];
        let t = BytesTable::build([(0, &b"HeLLo"[..]), (1, b"hello"), (2, &long[..])], true);
        assert_eq!(t.get(b"hello"), Some(0));
        assert_eq!(t.get(b"HELLO"), Some(0));
        assert_eq!(t.get(&[b'x'; 200]), Some(2));
        assert_eq!(t.get(b"hell"), None);
        let exact = BytesTable::build([(0, &b"HeLLo"[..])], false);
        assert_eq!(exact.get(b"hello"), None);
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let t = BytesTable::build(std::iter::empty(), false);
        assert_eq!(t.get(b""), None);
    }
}
