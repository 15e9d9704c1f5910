//! The corpus replay the fuzzed crates' `tests/corpus.rs` share (each includes this file by
//! path): the committed corpus of a target (`fuzz/corpus/<name>`) and 5,000 deterministic
//! mutations of it, each input through the target's invariant check. What the fuzzer found
//! once stays checked on every `cargo test`.

use std::path::PathBuf;

/// The committed inputs of a target, in file name order.
pub fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).expect("read")).collect()
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Mutations of the corpus' inputs: bits flipped, cut, doubled, random bytes added.
pub fn mutants(inputs: &[Vec<u8>], n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for i in 0..n {
        let mut v = inputs[i % inputs.len()].clone();
        match rng.next() % 4 {
            0 if !v.is_empty() => {
                let at = rng.next() as usize % v.len();
                v[at] ^= 1 << (rng.next() % 8);
            }
            1 if !v.is_empty() => v.truncate(rng.next() as usize % v.len()),
            2 => {
                let tail = v.get(2..).unwrap_or(&[]).to_vec();
                v.extend_from_slice(&tail);
            }
            _ => v.extend((0..rng.next() % 16).map(|_| rng.next() as u8)),
        }
        out.push(v);
    }
    out
}

/// The corpus of `name` (at least `min` inputs committed) and 5,000 mutations through `check`.
pub fn replay(name: &str, min: usize, seed: u64, check: fn(&[u8])) {
    let inputs = corpus(name);
    assert!(inputs.len() >= min, "the {name} corpus is committed");
    for input in inputs.iter().chain(&mutants(&inputs, 5000, seed)) {
        check(input);
    }
}
