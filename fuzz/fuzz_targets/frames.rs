//! Fuzz target: HTTP/2 frame headers and payloads read one after the other. The invariants
//! live in `fulcrum_h2::fuzzing::check_frames`, which the test suite also runs over
//! `fuzz/corpus/frames`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_h2::fuzzing::check_frames(data));
