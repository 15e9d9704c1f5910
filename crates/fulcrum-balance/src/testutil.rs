//! A plain in-memory [`ServerSet`] for tests (also included by `tests/properties.rs`).
#![allow(dead_code)]

use super::ServerSet;

#[derive(Clone, Debug)]
pub struct Srv {
    pub weight: u32,
    pub usable: bool,
    pub backup: bool,
    pub load: u32,
    pub maxconn: u32,
    pub id: u32,
}

#[derive(Clone, Debug, Default)]
pub struct TestSet {
    pub servers: Vec<Srv>,
    pub gen: u64,
}

impl TestSet {
    /// Active, usable servers with these weights; ids 1, 2, ...
    pub fn weighted(weights: &[u32]) -> Self {
        let mut set = TestSet::default();
        for &w in weights {
            set.push(w, false);
        }
        set
    }

    pub fn push(&mut self, weight: u32, backup: bool) -> usize {
        let id = self.servers.iter().map(|s| s.id).max().unwrap_or(0) + 1;
        self.servers.push(Srv { weight, usable: true, backup, load: 0, maxconn: 0, id });
        self.gen += 1;
        self.servers.len() - 1
    }

    pub fn remove(&mut self, i: usize) {
        self.servers.remove(i);
        self.gen += 1;
    }

    pub fn set_weight(&mut self, i: usize, w: u32) {
        self.servers[i].weight = w;
        self.gen += 1;
    }

    pub fn set_usable(&mut self, i: usize, usable: bool) {
        self.servers[i].usable = usable;
        self.gen += 1;
    }
}

impl ServerSet for TestSet {
    fn len(&self) -> usize {
        self.servers.len()
    }
    /// Weights are given in configuration units and shown in sixteenths, as the engine does.
    fn weight(&self, i: usize) -> u32 {
        self.servers[i].weight * 16
    }
    fn usable(&self, i: usize) -> bool {
        self.servers[i].usable
    }
    fn backup(&self, i: usize) -> bool {
        self.servers[i].backup
    }
    fn load(&self, i: usize) -> u32 {
        self.servers[i].load
    }
    fn maxconn(&self, i: usize) -> u32 {
        self.servers[i].maxconn
    }
    fn generation(&self) -> u64 {
        self.gen
    }
    fn id(&self, i: usize) -> u32 {
        self.servers[i].id
    }
}
