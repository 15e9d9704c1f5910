//! Fuzz target: FastCGI head. The invariants live in `fulcrum_fcgi::fuzzing::check_head`, which
//! the test suite also runs over `fuzz/corpus/fcgi_head`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_fcgi::fuzzing::check_head(data));
