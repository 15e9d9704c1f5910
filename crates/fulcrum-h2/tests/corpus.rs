//! Replays the committed fuzz corpora (`fuzz/corpus/hpack`, `fuzz/corpus/frames`) through
//! the fuzz targets' invariants, with 5,000 deterministic mutations of each
//! (`fuzz/replay.rs`).

#[path = "../../../fuzz/replay.rs"]
mod replay;

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

#[test]
fn hpack_corpus() {
    replay::replay("hpack", 5, SEED, fulcrum_h2::fuzzing::check_hpack);
}

#[test]
fn frames_corpus() {
    replay::replay("frames", 3, SEED, fulcrum_h2::fuzzing::check_frames);
}
