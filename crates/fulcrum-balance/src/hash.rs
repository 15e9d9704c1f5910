//! Hash-based algorithms (`source`, `uri`, `hdr`, ... ) with HAProxy's two `hash-type`s.
//!
//! - **map-based** (default): HAProxy's static server map ([`crate::map`]), slot
//!   `hash % total`. Smooth and cheap, but the table is rebuilt from the eligible servers, so
//!   when one of N servers goes away almost every key moves (typically well over half of
//!   them): fine for stateless spreading, bad for caches.
//! - **consistent**: a ring holding `16 * weight` points per server (HAProxy's
//!   `BE_WEIGHT_SCALE`), point `j` of server `id` at `full_hash(id * 4096 + j)` exactly as
//!   `lb_chash.c` places them. A key goes to the closest point (before or after it, as
//!   HAProxy's `chash_get_server_hash`), then walks forward past servers that may not be
//!   returned (down, full, excluded). Removing one of N servers moves only that server's keys,
//!   about 1/N of them. Weights are dynamic: a weight change re-points that server only.
//!   Every server with a non-zero weight is on the ring, usable or not, so a server that is
//!   briefly unusable (e.g. full) keeps its keys when it comes back.
//!
//! Without a key (no address, no such header) HAProxy falls back to round robin over the
//! map or the ring, and so does this.

use crate::candidates::Candidates;
use crate::hashfn::{full_hash, hash_key, source_hash};
use crate::map::{ServerMap, StaticWeights};
use crate::{HashConfig, ServerSet};

/// HAProxy's `BE_WEIGHT_SCALE`: ring points per weight unit.
const POINTS_PER_WEIGHT: u32 = 16;
/// HAProxy's maximum weight; the ring caps weights there.
const MAX_WEIGHT: u32 = 256;
/// HAProxy's `SRV_EWGHT_RANGE` (= 256 * 16): point keys of one server are
/// `id * 4096 + 0..4096`, so no two servers share a point key.
const EWGHT_RANGE: u32 = MAX_WEIGHT * POINTS_PER_WEIGHT;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// `balance source`: XOR-folded address.
    Source,
    /// Other hash algorithms: the `hash-type` function.
    Bytes,
}

#[derive(Debug, Default)]
struct Ring {
    /// `(point, server)`, sorted.
    points: Vec<(u32, u32)>,
    /// Round-robin position when there is no key.
    cursor: usize,
}

impl Ring {
    fn rebuild(&mut self, set: &dyn ServerSet, backup: bool) {
        self.points.clear();
        for i in 0..set.len() {
            if set.backup(i) != backup {
                continue;
            }
            let id = set.id(i).wrapping_mul(EWGHT_RANGE);
            // Weights come in sixteenths: one ring point each, as HAProxy's `eweight`.
            let n = set.weight(i).min(EWGHT_RANGE);
            self.points.extend((0..n).map(|j| (full_hash(id.wrapping_add(j)), i as u32)));
        }
        self.points.sort_unstable();
        if self.cursor >= self.points.len() {
            self.cursor = 0;
        }
    }

    fn lookup(&self, set: &dyn ServerSet, cand: &Candidates, hash: u32) -> Option<usize> {
        let len = self.points.len();
        if len == 0 {
            return cand.first_from(set, 0);
        }
        let after = self.points.partition_point(|&(p, _)| p < hash);
        let next = if after == len { 0 } else { after };
        let prev = if next == 0 { len - 1 } else { next - 1 };
        let dp = hash.wrapping_sub(self.points[prev].0);
        let dn = self.points[next].0.wrapping_sub(hash);
        let start = if dp <= dn { prev } else { next };
        self.walk(set, cand, start).map(|(_, s)| s).or_else(|| cand.first_from(set, 0))
    }

    fn next_rr(&mut self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        match self.walk(set, cand, self.cursor) {
            Some((pos, server)) => {
                self.cursor = if pos + 1 == self.points.len() { 0 } else { pos + 1 };
                Some(server)
            }
            None => cand.first_from(set, 0),
        }
    }

    fn walk(&self, set: &dyn ServerSet, cand: &Candidates, start: usize) -> Option<(usize, usize)> {
        let len = self.points.len();
        let start = if start >= len { 0 } else { start };
        (start..len)
            .chain(0..start)
            .map(|pos| (pos, self.points[pos].1 as usize))
            .find(|&(_, s)| s < set.len() && cand.allows(set, s))
    }
}

#[derive(Debug)]
pub(crate) struct Hashing {
    kind: KeyKind,
    config: HashConfig,
    weights: StaticWeights,
    maps: [ServerMap; 2],
    rings: [Ring; 2],
}

impl Hashing {
    pub fn new(kind: KeyKind, config: HashConfig) -> Self {
        Hashing {
            kind,
            config,
            weights: StaticWeights::default(),
            maps: Default::default(),
            rings: Default::default(),
        }
    }

    pub fn rebuild(&mut self, set: &dyn ServerSet) {
        if !self.config.consistent {
            self.weights.refresh(set);
        }
        for (group, backup) in [(0, false), (1, true)] {
            if self.config.consistent {
                self.rings[group].rebuild(set, backup);
            } else {
                self.maps[group].rebuild(set, &self.weights, backup);
            }
        }
    }

    /// The 32-bit hash HAProxy computes for `key` with this configuration.
    pub fn hash(&self, key: &[u8]) -> u32 {
        match self.kind {
            KeyKind::Source => source_hash(self.config.avalanche, key),
            KeyKind::Bytes => hash_key(self.config.function, self.config.avalanche, key),
        }
    }

    pub fn pick(
        &mut self,
        set: &dyn ServerSet,
        cand: &Candidates,
        key: Option<&[u8]>,
    ) -> Option<usize> {
        if let Some(only) = cand.only {
            return Some(only);
        }
        let group = usize::from(cand.backup);
        let hash = key.map(|k| self.hash(k));
        match (self.config.consistent, hash) {
            (true, Some(h)) => self.rings[group].lookup(set, cand, h),
            (true, None) => self.rings[group].next_rr(set, cand),
            (false, Some(h)) => self.maps[group].lookup(set, cand, h),
            (false, None) => self.maps[group].next_rr(set, cand),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::TestSet;
    use crate::{Algorithm, Balancer, HashConfig, HashFunction, Pick, Rng};

    const CONSISTENT: HashConfig =
        HashConfig { consistent: true, function: HashFunction::Sdbm, avalanche: true };
    const MAP: HashConfig =
        HashConfig { consistent: false, function: HashFunction::Sdbm, avalanche: false };

    fn keys() -> Vec<Vec<u8>> {
        (0..10_000).map(|k| format!("/object/{k}").into_bytes()).collect()
    }

    fn assign(b: &mut Balancer, set: &TestSet, keys: &[Vec<u8>]) -> Vec<usize> {
        let mut rng = Rng::new(1);
        keys.iter()
            .map(|k| b.pick(set, &mut Pick::new(&mut rng).with_key(k)).expect("a server"))
            .collect()
    }

    #[test]
    fn the_same_key_maps_to_the_same_server_while_the_set_does_not_change() {
        for config in [CONSISTENT, MAP] {
            for algo in [Algorithm::Hash, Algorithm::Source] {
                let set = TestSet::weighted(&[1, 2, 3, 1, 1]);
                let mut b = Balancer::new(algo, config);
                let keys = keys();
                let first = assign(&mut b, &set, &keys);
                let again = assign(&mut b, &set, &keys);
                assert_eq!(first, again, "{config:?}");
                // And a fresh balancer agrees (no hidden state).
                let fresh = assign(&mut Balancer::new(algo, config), &set, &keys);
                assert_eq!(first, fresh, "{config:?}");
                // Every server gets some keys.
                assert!((0..5).all(|s| first.contains(&s)), "{config:?}");
            }
        }
    }

    fn moved_on_removal(
        config: HashConfig,
        weight: u32,
        n: usize,
        victim: usize,
        remove: bool,
    ) -> (usize, bool) {
        let mut set = TestSet::weighted(&vec![weight; n]);
        let keys = keys();
        let mut b = Balancer::new(Algorithm::Hash, config);
        let before = assign(&mut b, &set, &keys);
        if remove {
            set.remove(victim);
        } else {
            set.set_usable(victim, false);
        }
        let after = assign(&mut b, &set, &keys);
        // Compare server identities (indices shift on removal).
        let id_before = |s: usize| s + 1;
        let id_after = |s: usize| if remove && s >= victim { s + 2 } else { s + 1 };
        let mut moved = 0;
        let mut only_victims = true;
        for (b, a) in before.iter().zip(&after) {
            if id_before(*b) != id_after(*a) {
                moved += 1;
                only_victims &= *b == victim;
            }
        }
        (moved, only_victims)
    }

    #[test]
    fn removing_one_of_n_servers_under_consistent_hashing_moves_only_its_own_keys() {
        // Weight 10 = 160 ring points per server, enough for shares close to 1/N. With weight
        // 1 (16 points, as in HAProxy) only-the-victim's-keys still holds, but one server's
        // share can reach ~1.4/N.
        for n in 4..=10 {
            for victim in 0..n {
                let (moved, only_victims) = moved_on_removal(CONSISTENT, 1, n, victim, true);
                assert!(only_victims && moved > 0, "n={n} victim={victim}");
            }
            for victim in 0..n {
                for remove in [false, true] {
                    let (moved, only_victims) = moved_on_removal(CONSISTENT, 10, n, victim, remove);
                    assert!(only_victims, "n={n} victim={victim} remove={remove}");
                    let bound = 1.3 / n as f64 * 10_000.0;
                    assert!(
                        (moved as f64) <= bound,
                        "n={n} victim={victim} remove={remove}: {moved} > {bound}"
                    );
                    assert!(moved > 0);
                }
            }
        }
    }

    #[test]
    fn removing_one_of_n_servers_under_map_based_hashing_moves_most_keys() {
        // The contrast with consistent hashing: the map is re-laid out over N-1 servers.
        for n in 4..=10 {
            let (moved, only_victims) = moved_on_removal(MAP, 1, n, n / 2, false);
            assert!(!only_victims);
            assert!(moved > 10_000 / 2, "n={n}: only {moved} moved");
        }
    }

    #[test]
    fn a_key_whose_server_is_unusable_moves_to_the_next_one_and_comes_back() {
        let mut set = TestSet::weighted(&[1, 1, 1, 1]);
        let keys = keys();
        let mut b = Balancer::new(Algorithm::Hash, CONSISTENT);
        let before = assign(&mut b, &set, &keys);
        // "Full" without a generation change: the ring is not rebuilt, keys walk on.
        set.servers[2].usable = false;
        let during = assign(&mut b, &set, &keys);
        assert!(!during.contains(&2));
        for (b, d) in before.iter().zip(&during) {
            assert!(*b == 2 || b == d);
        }
        set.servers[2].usable = true;
        assert_eq!(assign(&mut b, &set, &keys), before);
    }

    #[test]
    fn consistent_shares_follow_weights_and_follow_weight_changes() {
        let mut set = TestSet::weighted(&[10, 10, 20]);
        let keys = keys();
        let mut b = Balancer::new(Algorithm::Hash, CONSISTENT);
        let share = |v: &[usize], s| v.iter().filter(|&&x| x == s).count() as f64 / 1e4;
        let before = assign(&mut b, &set, &keys);
        assert!((share(&before, 2) - 0.5).abs() < 0.05, "{}", share(&before, 2));
        set.set_weight(2, 10);
        let after = assign(&mut b, &set, &keys);
        assert!((share(&after, 2) - 1.0 / 3.0).abs() < 0.05, "{}", share(&after, 2));
        // Lowering a weight only moves keys away from that server.
        for (b, a) in before.iter().zip(&after) {
            assert!(b == a || *b == 2);
        }
    }

    #[test]
    fn map_based_shares_follow_the_static_weights() {
        let set = TestSet::weighted(&[1, 2, 3]);
        let v = assign(&mut Balancer::new(Algorithm::Hash, MAP), &set, &keys());
        for (s, w) in [(0, 1.0), (1, 2.0), (2, 3.0)] {
            let share = v.iter().filter(|&&x| x == s).count() as f64 / 1e4;
            assert!((share - w / 6.0).abs() < 0.02, "server {s}: {share}");
        }
    }

    #[test]
    fn without_a_key_hashing_falls_back_to_round_robin() {
        for config in [CONSISTENT, MAP] {
            let set = TestSet::weighted(&[1, 1, 1]);
            let mut b = Balancer::new(Algorithm::Source, config);
            let mut rng = Rng::new(1);
            let mut counts = [0; 3];
            for _ in 0..3_000 {
                counts[b.pick(&set, &mut Pick::new(&mut rng)).expect("a server")] += 1;
            }
            assert!(counts.iter().all(|&c| c > 700), "{config:?}: {counts:?}");
        }
    }

    #[test]
    fn the_excluded_server_is_skipped_for_a_key_that_maps_to_it() {
        for config in [CONSISTENT, MAP] {
            let set = TestSet::weighted(&[1, 1, 1]);
            let mut b = Balancer::new(Algorithm::Hash, config);
            let mut rng = Rng::new(1);
            for k in keys().iter().take(500) {
                let home = b.pick(&set, &mut Pick::new(&mut rng).with_key(k)).expect("a server");
                let other = b.pick(&set, &mut Pick::new(&mut rng).with_key(k).excluding(home));
                assert!(other.is_some() && other != Some(home));
            }
        }
    }

    #[test]
    fn a_consistent_key_goes_to_the_closest_point_before_or_after_it() {
        use super::Ring;
        use crate::candidates::Candidates;
        let set = TestSet::weighted(&[1, 1, 1]);
        let mut ring = Ring::default();
        ring.rebuild(&set, false);
        let cand = Candidates::compute(&set, false, None).expect("candidates");
        let pts = &ring.points;
        let k = (1..pts.len())
            .find(|&k| pts[k].1 != pts[k - 1].1 && pts[k].0 - pts[k - 1].0 > 4)
            .expect("two neighbouring points of different servers");
        let ((p, a), (q, b)) = (pts[k - 1], pts[k]);
        assert_eq!(ring.lookup(&set, &cand, p + 1), Some(a as usize));
        assert_eq!(ring.lookup(&set, &cand, q - 1), Some(b as usize));
        // Points sit where HAProxy puts them: full_hash(id * 4096 + j), 16 per weight unit.
        assert_eq!(pts.len(), 48);
        assert!(pts.contains(&(crate::full_hash(2 * 4096 + 15), 1)));
    }
}
