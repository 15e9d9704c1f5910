//! Fuzz target: FastCGI pairs. The invariants live in `fulcrum_fcgi::fuzzing::check_pairs`, which
//! the test suite also runs over `fuzz/corpus/fcgi_pairs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_fcgi::fuzzing::check_pairs(data));
