//! Fuzz target: FastCGI cgi. The invariants live in `fulcrum_fcgi::fuzzing::check_cgi`, which
//! the test suite also runs over `fuzz/corpus/fcgi_cgi`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_fcgi::fuzzing::check_cgi(data));
