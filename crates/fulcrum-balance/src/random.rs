//! `random(<draws>)`: `draws` weighted random choices, keeping the one with the lowest
//! `load / weight` (HAProxy's `get_server_rnd`; draws = 2 is "power of two choices", which keeps
//! the load spread tight without the herd effect of pure least-connections).

use crate::candidates::Candidates;
use crate::{Rng, ServerSet};

#[derive(Debug)]
pub(crate) struct Random {
    draws: u32,
}

impl Random {
    pub fn new(draws: u32) -> Self {
        Random { draws: draws.max(1) }
    }

    pub fn pick(&self, set: &dyn ServerSet, cand: &Candidates, rng: &mut Rng) -> Option<usize> {
        if let Some(only) = cand.only {
            return Some(only);
        }
        let n = set.len();
        let total: u64 =
            (0..n).filter(|&i| cand.allows(set, i)).map(|i| u64::from(set.weight(i))).sum();
        if total == 0 {
            return None;
        }
        let mut best: Option<usize> = None;
        for _ in 0..self.draws {
            let mut r = rng.below(total);
            let mut drawn = None;
            for i in (0..n).filter(|&i| cand.allows(set, i)) {
                let w = u64::from(set.weight(i));
                if r < w {
                    drawn = Some(i);
                    break;
                }
                r -= w;
            }
            let Some(cur) = drawn else { continue };
            best = match best {
                // Keep the previous choice only when the new one is strictly busier per
                // weight unit.
                Some(prev)
                    if u64::from(set.load(cur)) * u64::from(set.weight(prev))
                        > u64::from(set.load(prev)) * u64::from(set.weight(cur)) =>
                {
                    Some(prev)
                }
                _ => Some(cur),
            };
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::TestSet;
    use crate::{Algorithm, Balancer, HashConfig, Pick, Rng};

    #[test]
    fn one_draw_follows_the_weights_1_2_3_within_1_percent() {
        let set = TestSet::weighted(&[1, 2, 3]);
        let mut b = Balancer::new(Algorithm::Random { draws: 1 }, HashConfig::default());
        let mut rng = Rng::new(42);
        let mut counts = [0usize; 3];
        for _ in 0..60_000 {
            counts[b.pick(&set, &mut Pick::new(&mut rng)).expect("a server")] += 1;
        }
        for (i, w) in [1.0, 2.0, 3.0].iter().enumerate() {
            let share = counts[i] as f64 / 60_000.0;
            assert!((share - w / 6.0).abs() < 0.01, "server {i}: {share}");
        }
    }

    #[test]
    fn two_draws_keep_the_less_loaded_of_the_two() {
        // With two servers and two draws, the busy one is chosen only when both draws hit it.
        let mut set = TestSet::weighted(&[1, 1]);
        set.servers[0].load = 10;
        let mut b = Balancer::new(Algorithm::Random { draws: 2 }, HashConfig::default());
        let mut rng = Rng::new(3);
        let busy = (0..40_000).filter(|_| b.pick(&set, &mut Pick::new(&mut rng)) == Some(0)).count()
            as f64
            / 40_000.0;
        assert!((busy - 0.25).abs() < 0.01, "{busy}");
    }

    #[test]
    fn zero_draws_count_as_one() {
        let set = TestSet::weighted(&[1]);
        let mut b = Balancer::new(Algorithm::Random { draws: 0 }, HashConfig::default());
        assert_eq!(b.pick(&set, &mut Pick::new(&mut Rng::new(1))), Some(0));
    }
}
