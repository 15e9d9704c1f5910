//! `first`: the first server in config order with a free slot (`load < maxconn`, `maxconn`
//! 0 = unlimited), so that servers fill up one after the other (HAProxy's `lb_fas`, which
//! orders by server id = config order by default). When every candidate is full the result
//! is `None`: the caller queues the connection, as HAProxy does.

use crate::candidates::Candidates;
use crate::ServerSet;

#[derive(Debug)]
pub(crate) struct First;

fn has_room(set: &dyn ServerSet, i: usize) -> bool {
    let max = set.maxconn(i);
    max == 0 || set.load(i) < max
}

impl First {
    pub fn pick(&self, set: &dyn ServerSet, cand: &Candidates) -> Option<usize> {
        let mut avoided = None;
        for i in 0..set.len() {
            if !cand.allows_ignoring_exclude(set, i) || !has_room(set, i) {
                continue;
            }
            if cand.exclude == Some(i) {
                // Only if no other server has room.
                avoided = Some(i);
                continue;
            }
            return Some(i);
        }
        avoided
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::TestSet;
    use crate::{Algorithm, Balancer, HashConfig, Pick, Rng};

    #[test]
    fn servers_fill_in_config_order_up_to_their_maxconn() {
        let mut set = TestSet::weighted(&[1, 5, 1]);
        set.servers[0].maxconn = 2;
        set.servers[1].maxconn = 3;
        set.servers[2].maxconn = 0; // unlimited
        let mut b = Balancer::new(Algorithm::First, HashConfig::default());
        let mut rng = Rng::new(1);
        let mut picks = Vec::new();
        for _ in 0..8 {
            let i = b.pick(&set, &mut Pick::new(&mut rng)).expect("a server");
            set.servers[i].load += 1;
            picks.push(i);
        }
        assert_eq!(picks, [0, 0, 1, 1, 1, 2, 2, 2]);
        // A connection on the first server ends: it is the first choice again.
        set.servers[0].load -= 1;
        assert_eq!(b.pick(&set, &mut Pick::new(&mut rng)), Some(0));
    }

    #[test]
    fn when_every_server_is_full_nothing_is_returned_so_the_caller_queues() {
        let mut set = TestSet::weighted(&[1, 1]);
        for s in &mut set.servers {
            s.maxconn = 1;
            s.load = 1;
        }
        let mut b = Balancer::new(Algorithm::First, HashConfig::default());
        assert_eq!(b.pick(&set, &mut Pick::new(&mut Rng::new(1))), None);
    }

    #[test]
    fn the_excluded_server_is_used_only_if_it_is_the_only_one_with_room() {
        let mut set = TestSet::weighted(&[1, 1]);
        set.servers[1].maxconn = 1;
        let mut b = Balancer::new(Algorithm::First, HashConfig::default());
        let mut rng = Rng::new(1);
        assert_eq!(b.pick(&set, &mut Pick::new(&mut rng).excluding(0)), Some(1));
        set.servers[1].load = 1;
        assert_eq!(b.pick(&set, &mut Pick::new(&mut rng).excluding(0)), Some(0));
    }
}
