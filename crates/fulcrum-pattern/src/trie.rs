//! A compact byte trie for `beg` (walked forwards) and `end` (built over reversed patterns
//! and walked backwards), optionally ASCII case-insensitive.
//!
//! Owns: the node layout (edges of all nodes in one array, sorted per node) and the walk.
//! Every node on the walk that ends a pattern is reported, shortest first; callers pick the
//! rule (any, longest, lowest entry index). A node ending several equal patterns keeps the
//! first one's index.
//! Must not touch: which entry wins (decided by the pattern sets).

const NONE: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) struct Trie {
    fold: bool,
    reverse: bool,
    /// Edges of node `n` are `edge_byte[edge_start[n]..edge_start[n + 1]]`, sorted.
    edge_start: Vec<u32>,
    edge_byte: Vec<u8>,
    edge_to: Vec<u32>,
    /// Entry index ending at each node, or `NONE`.
    terminal: Vec<u32>,
}

impl Trie {
    /// `reverse` builds the trie of suffixes (for `end`).
    pub fn build<'a>(
        patterns: impl IntoIterator<Item = (u32, &'a [u8])>,
        fold: bool,
        reverse: bool,
    ) -> Trie {
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut terminal = vec![NONE];
        for (id, pattern) in patterns {
            let mut node = 0usize;
            let mut step = |b: u8| {
                let b = if fold { b.to_ascii_lowercase() } else { b };
                node = match children[node].iter().find(|(c, _)| *c == b) {
                    Some(&(_, next)) => next as usize,
                    None => {
                        let next = children.len();
                        children[node].push((b, next as u32));
                        children.push(Vec::new());
                        terminal.push(NONE);
                        next
                    }
                };
            };
            if reverse {
                pattern.iter().rev().for_each(|&b| step(b));
            } else {
                pattern.iter().for_each(|&b| step(b));
            }
            if terminal[node] == NONE {
                terminal[node] = id;
            }
        }
        let mut edge_start = Vec::with_capacity(children.len() + 1);
        let mut edge_byte = Vec::new();
        let mut edge_to = Vec::new();
        for mut edges in children {
            edges.sort_unstable_by_key(|e| e.0);
            edge_start.push(edge_byte.len() as u32);
            for (b, to) in edges {
                edge_byte.push(b);
                edge_to.push(to);
            }
        }
        edge_start.push(edge_byte.len() as u32);
        Trie { fold, reverse, edge_start, edge_byte, edge_to, terminal }
    }

    fn child(&self, node: usize, b: u8) -> Option<usize> {
        let (lo, hi) = (self.edge_start[node] as usize, self.edge_start[node + 1] as usize);
        let bytes = &self.edge_byte[lo..hi];
        let pos = if bytes.len() <= 8 {
            bytes.iter().position(|&c| c == b)?
        } else {
            bytes.binary_search(&b).ok()?
        };
        Some(self.edge_to[lo + pos] as usize)
    }

    /// Calls `visit` with the entry index of every pattern that is a prefix (or, for a
    /// reversed trie, a suffix) of `input`, shortest first, until `visit` returns `true`.
    pub fn walk(&self, input: &[u8], mut visit: impl FnMut(u32) -> bool) {
        let mut node = 0usize;
        if self.terminal[0] != NONE && visit(self.terminal[0]) {
            return;
        }
        let mut step = |b: u8| -> bool {
            let b = if self.fold { b.to_ascii_lowercase() } else { b };
            match self.child(node, b) {
                Some(next) => {
                    node = next;
                    let t = self.terminal[next];
                    t != NONE && visit(t)
                }
                None => true,
            }
        };
        if self.reverse {
            for &b in input.iter().rev() {
                if step(b) {
                    return;
                }
            }
        } else {
            for &b in input {
                if step(b) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(t: &Trie, input: &[u8]) -> Vec<u32> {
        let mut v = Vec::new();
        t.walk(input, |i| {
            v.push(i);
            false
        });
        v
    }

    #[test]
    fn a_forward_trie_reports_every_prefix_shortest_first() {
        let t = Trie::build(
            [(0, &b"/a"[..]), (1, b"/ab"), (2, b"/a"), (3, b"/abc"), (4, b"x")],
            false,
            false,
        );
        assert_eq!(hits(&t, b"/abd"), vec![0, 1]);
        assert_eq!(hits(&t, b"/abc/"), vec![0, 1, 3]);
        assert_eq!(hits(&t, b"/"), Vec::<u32>::new());
        assert_eq!(hits(&t, b"xyz"), vec![4]);
    }

    #[test]
    fn a_reversed_trie_reports_every_suffix() {
        let t = Trie::build([(0, &b"b"[..]), (1, b"ab"), (2, b".COM")], true, true);
        assert_eq!(hits(&t, b"xab"), vec![0, 1]);
        assert_eq!(hits(&t, b"example.com"), vec![2]);
        assert_eq!(hits(&t, b"ba"), Vec::<u32>::new());
    }

    #[test]
    fn the_walk_stops_when_asked() {
        let t = Trie::build([(0, &b"a"[..]), (1, b"ab")], false, false);
        let mut seen = Vec::new();
        t.walk(b"abc", |i| {
            seen.push(i);
            true
        });
        assert_eq!(seen, vec![0]);
    }

    #[test]
    fn nodes_with_many_edges_are_binary_searched() {
        let words: Vec<Vec<u8>> = (0u8..200).map(|b| vec![b, b'!']).collect();
        let t =
            Trie::build(words.iter().enumerate().map(|(i, w)| (i as u32, &w[..])), false, false);
        assert_eq!(hits(&t, &[150, b'!', 3]), vec![150]);
        assert_eq!(hits(&t, &[250, b'!']), Vec::<u32>::new());
    }
}
