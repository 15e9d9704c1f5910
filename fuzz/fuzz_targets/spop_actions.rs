//! Fuzz target: SPOP actions. The invariants live in `fulcrum_spop::fuzzing::check_actions`, which the
//! test suite also runs over `fuzz/corpus/spop_actions`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_spop::fuzzing::check_actions(data));
