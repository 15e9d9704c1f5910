//! `roundrobin`: smooth weighted round robin (nginx's "current/effective weight" scheme).
//!
//! Each pick adds every candidate's weight to its `current` credit and takes the candidate
//! with the largest credit, which then pays the total weight back. With fixed weights the
//! sequence has period `W = sum(weights)`, each server appears exactly `weight` times per
//! period, spread out rather than in bursts. Weights are read at every pick, so run-time
//! changes apply at once (HAProxy's `fwrr` is dynamic as well).

use crate::candidates::Candidates;
use crate::ServerSet;

#[derive(Debug, Default)]
pub(crate) struct RoundRobin {
    current: Vec<i64>,
}

impl RoundRobin {
    pub fn rebuild(&mut self, set: &dyn ServerSet) {
        if self.current.len() != set.len() {
            // Indices may now name other servers: start over.
            self.current.clear();
            self.current.resize(set.len(), 0);
        }
    }

    pub fn pick(&mut self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        let mut total: i64 = 0;
        let mut best: Option<usize> = None;
        for i in 0..set.len().min(self.current.len()) {
            if !cand.allows(set, i) {
                continue;
            }
            let w = i64::from(set.weight(i));
            self.current[i] += w;
            total += w;
            // Strictly greater credit wins, so ties go to the first in config order.
            let better = match best {
                None => true,
                Some(b) => self.current[i] > self.current[b],
            };
            if better {
                best = Some(i);
            }
        }
        let best = best?;
        self.current[best] -= total;
        Some(best)
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

    fn rr() -> Balancer {
        Balancer::new(Algorithm::RoundRobin, HashConfig::default())
    }

    #[test]
    fn weights_1_2_3_give_shares_within_1_percent_over_60000_picks() {
        let set = TestSet::weighted(&[1, 2, 3]);
        let picks = run(&mut rr(), &set, 60_000);
        for (i, w) in [1.0, 2.0, 3.0].iter().enumerate() {
            let share = picks.iter().filter(|&&p| p == i).count() as f64 / 60_000.0;
            assert!((share - w / 6.0).abs() < 0.01, "server {i}: {share}");
        }
    }

    #[test]
    fn every_period_of_total_weight_picks_holds_each_server_exactly_weight_times() {
        let set = TestSet::weighted(&[1, 2, 3]);
        let picks = run(&mut rr(), &set, 600);
        for window in picks.chunks(6) {
            let count = |s| window.iter().filter(|&&p| p == s).count();
            assert_eq!((count(0), count(1), count(2)), (1, 2, 3), "{window:?}");
        }
    }

    #[test]
    fn the_sequence_is_smooth_no_server_runs_longer_than_its_share_allows() {
        // weights 5:1:1 -> the heavy server may repeat, but never 5 times in a row.
        let set = TestSet::weighted(&[5, 1, 1]);
        let picks = run(&mut rr(), &set, 700);
        let mut longest = 0;
        let mut run_len = 0;
        for k in 0..picks.len() {
            run_len = if k > 0 && picks[k] == picks[k - 1] { run_len + 1 } else { 1 };
            longest = longest.max(run_len);
        }
        // Plain WRR would emit `a a a a a b c`; smooth WRR interleaves (`a a b a c a a`), so
        // even across period boundaries the heavy server never takes its 5 picks in a row.
        assert!(longest < 5, "longest run {longest}: {:?}", &picks[..14]);
        assert_eq!(&picks[..7], &[0, 0, 1, 0, 2, 0, 0]);
        let set = TestSet::weighted(&[1, 1, 1]);
        let picks = run(&mut rr(), &set, 30);
        assert!(picks.windows(2).all(|w| w[0] != w[1]), "{picks:?}");
    }

    #[test]
    fn changing_a_weight_at_run_time_changes_the_shares_accordingly() {
        let mut set = TestSet::weighted(&[1, 1, 1]);
        let mut b = rr();
        let before = run(&mut b, &set, 3_000);
        assert_eq!(before.iter().filter(|&&p| p == 2).count(), 1_000);
        set.set_weight(2, 4);
        let after = run(&mut b, &set, 6_000);
        let share = |s| after.iter().filter(|&&p| p == s).count() as f64 / 6_000.0;
        assert!((share(2) - 4.0 / 6.0).abs() < 0.01, "{}", share(2));
        assert!((share(0) - 1.0 / 6.0).abs() < 0.01, "{}", share(0));
        set.set_weight(0, 0);
        let drained = run(&mut b, &set, 500);
        assert!(!drained.contains(&0));
    }

    #[test]
    fn unusable_and_weight_zero_servers_are_never_picked() {
        let mut set = TestSet::weighted(&[3, 0, 2, 5]);
        set.set_usable(3, false);
        let picks = run(&mut rr(), &set, 1_000);
        assert!(picks.iter().all(|&p| p == 0 || p == 2));
    }
}
