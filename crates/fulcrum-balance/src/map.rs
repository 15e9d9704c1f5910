//! HAProxy's server map (`lb_map.c`), shared by `static-rr` and map-based hashing: a table of
//! `sum(eweight)` slots where each eligible server of a group appears `eweight` times, spread
//! smoothly, with `eweight = 16 * weight / gcd(all weights)` as HAProxy computes it. Weights
//! are static: captured when a server is first seen (see [`StaticWeights`]).

use crate::candidates::{eligible, Candidates};
use crate::ServerSet;

/// HAProxy's `BE_WEIGHT_SCALE`.
const WEIGHT_SCALE: u64 = 16;
/// Building costs `slots * servers` steps; above this, drop the x16 scale (the shares are the
/// same, only the exact slot layout, hence HAProxy's key-to-server mapping, differs).
const BUILD_BUDGET: u64 = 1 << 26;

/// Static weights: HAProxy's map-based algorithms ignore run-time weight changes, except that
/// weight 0 (drain) stops traffic and restoring a non-zero weight restores the initial one.
#[derive(Debug, Default)]
pub(crate) struct StaticWeights {
    weights: Vec<u32>,
}

impl StaticWeights {
    pub fn refresh(&mut self, set: &dyn ServerSet) {
        if self.weights.len() != set.len() {
            self.weights.clear();
            self.weights.extend((0..set.len()).map(|i| set.weight(i)));
        } else {
            for (i, w) in self.weights.iter_mut().enumerate() {
                if *w == 0 {
                    *w = set.weight(i);
                }
            }
        }
    }

    /// The captured weight, or 0 while the server's current weight is 0.
    pub fn get(&self, set: &dyn ServerSet, i: usize) -> u32 {
        if set.weight(i) == 0 {
            0
        } else {
            self.weights.get(i).copied().unwrap_or(0)
        }
    }

    fn gcd(&self) -> u64 {
        fn gcd(a: u64, b: u64) -> u64 {
            if b == 0 {
                a
            } else {
                gcd(b, a % b)
            }
        }
        self.weights.iter().filter(|&&w| w > 0).fold(0, |g, &w| gcd(u64::from(w), g)).max(1)
    }
}

#[derive(Debug, Default)]
pub(crate) struct ServerMap {
    table: Vec<u32>,
    cursor: usize,
    score: Vec<i64>,
}

impl ServerMap {
    /// Rebuilds the map of one group (`backup`) from the servers eligible now.
    pub fn rebuild(&mut self, set: &dyn ServerSet, weights: &StaticWeights, backup: bool) {
        self.table.clear();
        self.score.clear();
        let n = set.len();
        let gcd = weights.gcd();
        let member = |i: usize| set.backup(i) == backup && eligible(set, i);
        let members = (0..n).filter(|&i| member(i)).count() as u64;
        let raw: u64 = (0..n).filter(|&i| member(i)).map(|i| u64::from(weights.get(set, i))).sum();
        let mut scale = WEIGHT_SCALE;
        if raw / gcd * WEIGHT_SCALE * members > BUILD_BUDGET {
            scale = 1;
        }
        let eweight = |i: usize| {
            if member(i) {
                (u64::from(weights.get(set, i)) * scale / gcd) as i64
            } else {
                0
            }
        };
        let tot: i64 = (0..n).map(eweight).sum();
        if tot == 0 {
            return;
        }
        self.score.resize(n, 0);
        self.table.reserve(tot as usize);
        // recalc_server_map(): each slot goes to the first server with the highest
        // `(score + tot) / tot` after every score grew by its eweight; the winner pays `tot`.
        for _ in 0..tot {
            let mut best: Option<(usize, i64)> = None;
            for (i, score) in self.score.iter_mut().enumerate() {
                let w = eweight(i);
                if w == 0 {
                    continue;
                }
                *score += w;
                let v = (*score + tot) / tot;
                let better = match best {
                    None => true,
                    Some((_, max)) => v > max,
                };
                if better {
                    best = Some((i, v));
                }
            }
            let Some((b, _)) = best else { break };
            self.score[b] -= tot;
            self.table.push(b as u32);
        }
        if self.cursor >= self.table.len() {
            self.cursor = 0;
        }
    }

    /// `map_get_server_hash()`: slot `hash % len`, moving on to the next slots while that
    /// server may not be returned.
    pub fn lookup(&self, set: &dyn ServerSet, cand: &Candidates, hash: u32) -> Option<usize> {
        if let Some(only) = cand.only {
            return Some(only);
        }
        let len = self.table.len();
        if len == 0 {
            return cand.first_from(set, 0);
        }
        let start = hash as usize % len;
        self.walk(set, cand, start).map(|(_, s)| s).or_else(|| cand.first_from(set, 0))
    }

    /// `map_get_server_rr()`: the next slot after the previous pick.
    pub fn next_rr(&mut self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        if let Some(only) = cand.only {
            return Some(only);
        }
        match self.walk(set, cand, self.cursor) {
            Some((slot, server)) => {
                self.cursor = if slot + 1 == self.table.len() { 0 } else { slot + 1 };
                Some(server)
            }
            None => cand.first_from(set, 0),
        }
    }

    fn walk(&self, set: &dyn ServerSet, cand: &Candidates, start: usize) -> Option<(usize, usize)> {
        let len = self.table.len();
        let start = if start >= len { 0 } else { start };
        (start..len)
            .chain(0..start)
            .map(|slot| (slot, self.table[slot] as usize))
            .find(|&(_, s)| s < set.len() && cand.allows(set, s))
    }
}

#[cfg(test)]
mod tests {
    use super::{ServerMap, StaticWeights};
    use crate::testutil::TestSet;

    fn map_of(set: &TestSet) -> Vec<u32> {
        let mut w = StaticWeights::default();
        w.refresh(set);
        let mut m = ServerMap::default();
        m.rebuild(set, &w, false);
        m.table
    }

    #[test]
    fn the_map_holds_each_server_16_times_its_reduced_weight_spread_smoothly() {
        let table = map_of(&TestSet::weighted(&[2, 4, 6]));
        // gcd 2 -> eweights 16, 32, 48.
        assert_eq!(table.len(), 96);
        for (s, n) in [(0, 16), (1, 32), (2, 48)] {
            assert_eq!(table.iter().filter(|&&x| x == s).count(), n);
        }
        // recalc_server_map() by hand: the first declared server always gets slot 0 (every
        // `(score + tot) / tot` is 1 on the first round), then the heavier ones interleave.
        assert_eq!(&table[..8], &[0, 2, 1, 2, 1, 2, 0, 2]);
    }

    #[test]
    fn a_weight_change_is_ignored_but_weight_zero_drains() {
        let mut set = TestSet::weighted(&[1, 3]);
        let mut w = StaticWeights::default();
        w.refresh(&set);
        set.set_weight(1, 1);
        w.refresh(&set);
        assert_eq!(w.get(&set, 1), 3 * 16, "the first weight seen, in sixteenths");
        set.set_weight(1, 0);
        w.refresh(&set);
        assert_eq!(w.get(&set, 1), 0);
        set.set_weight(1, 2);
        w.refresh(&set);
        assert_eq!(w.get(&set, 1), 3 * 16);
    }
}
