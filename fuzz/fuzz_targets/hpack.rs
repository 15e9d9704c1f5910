//! Fuzz target: HPACK header blocks and Huffman strings (decode, checks, encode again). The
//! invariants live in `fulcrum_h2::fuzzing::check_hpack`, which the test suite also runs over
//! `fuzz/corpus/hpack`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fulcrum_h2::fuzzing::check_hpack(data));
