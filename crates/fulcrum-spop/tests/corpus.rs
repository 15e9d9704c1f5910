//! Replays the committed fuzz corpora (`fuzz/corpus/spop_*`) through the fuzz targets'
//! invariants, with 5,000 deterministic mutations of each (`fuzz/replay.rs`).

#[path = "../../../fuzz/replay.rs"]
mod replay;

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

#[test]
fn frames_corpus() {
    replay::replay("spop_frames", 5, SEED, fulcrum_spop::fuzzing::check_frames);
}

#[test]
fn actions_corpus() {
    replay::replay("spop_actions", 5, SEED, fulcrum_spop::fuzzing::check_actions);
}

#[test]
fn values_corpus() {
    replay::replay("spop_values", 5, SEED, fulcrum_spop::fuzzing::check_values);
}
