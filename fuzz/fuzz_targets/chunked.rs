//! Fuzz target: chunked bodies (one call versus pieces). The invariants live in
//! `fulcrum_http::fuzzing::check_chunked`, which the test suite also runs over
//! `fuzz/corpus/chunked`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_http::fuzzing::check_chunked(data));
