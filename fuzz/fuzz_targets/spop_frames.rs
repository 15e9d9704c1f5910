//! Fuzz target: SPOP frames. The invariants live in `fulcrum_spop::fuzzing::check_frames`, which the
//! test suite also runs over `fuzz/corpus/spop_frames`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_spop::fuzzing::check_frames(data));
