//! Fuzz target: FastCGI records. The invariants live in `fulcrum_fcgi::fuzzing::check_records`, which
//! the test suite also runs over `fuzz/corpus/fcgi_records`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_fcgi::fuzzing::check_records(data));
