//! Replays the committed fuzz corpora (`fuzz/corpus/fcgi_*`) through the fuzz targets'
//! invariants, with 5,000 deterministic mutations of each (`fuzz/replay.rs`).

#[path = "../../../fuzz/replay.rs"]
mod replay;

const SEED: u64 = 0x2545_f491_4f6c_dd1d;

#[test]
fn records_corpus() {
    replay::replay("fcgi_records", 5, SEED, fulcrum_fcgi::fuzzing::check_records);
}

#[test]
fn pairs_corpus() {
    replay::replay("fcgi_pairs", 5, SEED, fulcrum_fcgi::fuzzing::check_pairs);
}

#[test]
fn head_corpus() {
    replay::replay("fcgi_head", 5, SEED, fulcrum_fcgi::fuzzing::check_head);
}

#[test]
fn cgi_corpus() {
    replay::replay("fcgi_cgi", 5, SEED, fulcrum_fcgi::fuzzing::check_cgi);
}
