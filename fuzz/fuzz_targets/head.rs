//! Fuzz target: request and response heads (parse in one go and in pieces, write, reparse,
//! edits). The invariants live in `fulcrum_http::fuzzing::check_head`, which the test suite
//! also runs over `fuzz/corpus/head`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_http::fuzzing::check_head(data));
