//! `static-rr`: weighted round robin over HAProxy's static server map. Weights are the ones
//! first seen for each server; later changes are ignored except 0 (drain, no traffic) and back
//! (HAProxy only accepts `set weight` 0% / 100% for static algorithms). Servers going up or
//! down rebuild the map at the next generation.

use crate::candidates::Candidates;
use crate::map::{ServerMap, StaticWeights};
use crate::ServerSet;

#[derive(Debug, Default)]
pub(crate) struct StaticRr {
    weights: StaticWeights,
    active: ServerMap,
    backup: ServerMap,
}

impl StaticRr {
    pub fn rebuild(&mut self, set: &dyn ServerSet) {
        self.weights.refresh(set);
        self.active.rebuild(set, &self.weights, false);
        self.backup.rebuild(set, &self.weights, true);
    }

    pub fn pick(&mut self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        if cand.backup {
            self.backup.next_rr(set, cand)
        } else {
            self.active.next_rr(set, cand)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::TestSet;
    use crate::{Algorithm, Balancer, HashConfig, Pick, Rng};

    fn run(b: &mut Balancer, set: &TestSet, n: usize) -> Vec<usize> {
        let mut rng = Rng::new(1);
        (0..n).map(|_| b.pick(set, &mut Pick::new(&mut rng)).expect("a server")).collect()
    }

    fn share(picks: &[usize], s: usize) -> f64 {
        picks.iter().filter(|&&p| p == s).count() as f64 / picks.len() as f64
    }

    #[test]
    fn weights_1_2_3_give_shares_within_1_percent_over_60000_picks() {
        let set = TestSet::weighted(&[1, 2, 3]);
        let picks =
            run(&mut Balancer::new(Algorithm::StaticRr, HashConfig::default()), &set, 60_000);
        for (i, w) in [1.0, 2.0, 3.0].iter().enumerate() {
            assert!((share(&picks, i) - w / 6.0).abs() < 0.01, "server {i}");
        }
    }

    #[test]
    fn run_time_weight_changes_are_ignored_but_zero_drains_the_server() {
        let mut set = TestSet::weighted(&[1, 1]);
        let mut b = Balancer::new(Algorithm::StaticRr, HashConfig::default());
        run(&mut b, &set, 10);
        set.set_weight(1, 9);
        let picks = run(&mut b, &set, 1_000);
        assert_eq!(share(&picks, 1), 0.5);
        set.set_weight(1, 0);
        assert!(!run(&mut b, &set, 100).contains(&1));
    }

    #[test]
    fn a_server_going_down_is_skipped_and_the_others_keep_their_ratio() {
        let mut set = TestSet::weighted(&[1, 3, 2]);
        let mut b = Balancer::new(Algorithm::StaticRr, HashConfig::default());
        set.set_usable(2, false);
        let picks = run(&mut b, &set, 4_000);
        assert_eq!(share(&picks, 2), 0.0);
        assert!((share(&picks, 1) - 0.75).abs() < 0.01);
    }
}
