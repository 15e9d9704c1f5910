//! `leastconn`: HAProxy's `fwlc` key, `load == 0 ? 0 : (load + 1) / weight` (idle servers
//! first whatever their weight, then the lowest connections per weight unit). Servers with
//! the same key are taken in turn: the scan starts after the previous pick.

use crate::candidates::Candidates;
use crate::ServerSet;

#[derive(Debug, Default)]
pub(crate) struct LeastConn {
    /// Where the next scan starts (ties go to the first server at or after it).
    next: usize,
}

/// `a`'s key is strictly lower than `b`'s (each `(load, weight)`, weights non-zero);
/// compared exactly by cross-multiplication.
fn lower(a: (u32, u32), b: (u32, u32)) -> bool {
    let key = |(load, weight): (u32, u32)| {
        if load == 0 {
            (0u64, 1u64)
        } else {
            (u64::from(load) + 1, u64::from(weight))
        }
    };
    let ((na, da), (nb, db)) = (key(a), key(b));
    u128::from(na) * u128::from(db) < u128::from(nb) * u128::from(da)
}

impl LeastConn {
    pub fn rebuild(&mut self, set: &dyn ServerSet) {
        if self.next >= set.len() {
            self.next = 0;
        }
    }

    pub fn pick(&mut self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        let n = set.len();
        let start = if self.next >= n { 0 } else { self.next };
        let mut best: Option<(usize, (u32, u32))> = None;
        for i in (start..n).chain(0..start) {
            if !cand.allows(set, i) {
                continue;
            }
            let k = (set.load(i), set.weight(i));
            let better = match best {
                None => true,
                Some((_, bk)) => lower(k, bk),
            };
            if better {
                best = Some((i, k));
            }
        }
        let (i, _) = best?;
        self.next = if i + 1 >= n { 0 } else { i + 1 };
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::lower;
    use crate::testutil::TestSet;
    use crate::{Algorithm, Balancer, HashConfig, Pick, Rng};

    fn lc() -> Balancer {
        Balancer::new(Algorithm::LeastConn, HashConfig::default())
    }

    fn pick(b: &mut Balancer, set: &TestSet) -> Option<usize> {
        let mut rng = Rng::new(1);
        b.pick(set, &mut Pick::new(&mut rng))
    }

    #[test]
    fn an_idle_server_is_preferred_to_a_busier_one() {
        let mut set = TestSet::weighted(&[1, 1, 1, 1]);
        set.servers[0].load = 3;
        set.servers[1].load = 1;
        set.servers[2].load = 0;
        set.servers[3].load = 2;
        let mut b = lc();
        assert_eq!(pick(&mut b, &set), Some(2));
        // Feed the picks back: never a server busier than the least busy one.
        for _ in 0..100 {
            let min = set.servers.iter().map(|s| s.load).min().expect("servers");
            let i = pick(&mut b, &set).expect("a server");
            assert_eq!(set.servers[i].load, min);
            set.servers[i].load += 1;
        }
    }

    #[test]
    fn with_weights_the_pick_follows_load_plus_one_over_weight() {
        // (2+1)/3 = 1 < (1+1)/1 = 2: the heavier, busier server wins.
        let mut set = TestSet::weighted(&[1, 3]);
        set.servers[0].load = 1;
        set.servers[1].load = 2;
        assert_eq!(pick(&mut lc(), &set), Some(1));
        // (5+1)/3 = 2 == (1+1)/1: a tie, taken in turn; (6+1)/3 > 2: the light one wins.
        set.servers[1].load = 6;
        assert_eq!(pick(&mut lc(), &set), Some(0));
        // Feeding back, loads settle near the 1:3 weight ratio.
        let mut set = TestSet::weighted(&[1, 3]);
        let mut b = lc();
        for _ in 0..400 {
            let i = pick(&mut b, &set).expect("a server");
            set.servers[i].load += 1;
        }
        let (l0, l1) = (set.servers[0].load, set.servers[1].load);
        assert!((99..=101).contains(&l0) && l0 + l1 == 400, "{l0} {l1}");
    }

    #[test]
    fn ties_are_broken_round_robin() {
        let set = TestSet::weighted(&[1, 1, 1]);
        let mut b = lc();
        let picks: Vec<_> = (0..6).map(|_| pick(&mut b, &set).expect("a server")).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn keys_compare_exactly() {
        assert!(lower((0, 1), (1, 100)));
        assert!(!lower((0, 1), (0, 7)));
        assert!(lower((2, 3), (1, 1)));
        assert!(!lower((5, 3), (1, 1)));
        assert!(lower((u32::MAX, u32::MAX), (u32::MAX, 1)));
    }
}
