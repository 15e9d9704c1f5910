//! Replays the committed fuzz corpora (`fuzz/corpus/fcgi_*`) through the fuzz targets'
//! invariants, and 5,000 deterministic mutations of each besides: what the fuzzer found once
//! stays checked on every `cargo test`.

use std::path::PathBuf;

fn corpus(name: &str) -> Vec<Vec<u8>> {
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
fn mutants(inputs: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
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

fn replay(name: &str, check: fn(&[u8])) {
    let inputs = corpus(name);
    assert!(inputs.len() >= 5, "the {name} corpus is committed");
    for input in inputs.iter().chain(&mutants(&inputs, 5000)) {
        check(input);
    }
}

#[test]
fn records_corpus() {
    replay("fcgi_records", fulcrum_fcgi::fuzzing::check_records);
}

#[test]
fn pairs_corpus() {
    replay("fcgi_pairs", fulcrum_fcgi::fuzzing::check_pairs);
}

#[test]
fn head_corpus() {
    replay("fcgi_head", fulcrum_fcgi::fuzzing::check_head);
}

#[test]
fn cgi_corpus() {
    replay("fcgi_cgi", fulcrum_fcgi::fuzzing::check_cgi);
}
