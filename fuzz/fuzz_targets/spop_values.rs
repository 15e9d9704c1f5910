//! Fuzz target: SPOP values. The invariants live in `fulcrum_spop::fuzzing::check_values`, which the
//! test suite also runs over `fuzz/corpus/spop_values`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_spop::fuzzing::check_values(data));
