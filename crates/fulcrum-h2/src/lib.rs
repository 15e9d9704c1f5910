//! HTTP/2's wire format and HPACK for Fulcrum, sans-I/O: frame headers and payloads
//! ([`frame`]), HPACK decoding of header blocks into bytes ([`hpack`]), Huffman coding
//! ([`huffman`]); with the invariants its fuzz targets check ([`fuzzing`]). `cargo test`
//! replays the fuzz corpora `fuzz/corpus/{hpack,frames}` through those checks.
//!
//! Why its own crate and not the `h2` crate: a proxy wants a head as the bytes it will match
//! rules on and write again, not an `http::HeaderMap` of owned names and values, and wants a
//! connection's state where its worker can reach it without locks or counted handles. Fulcrum
//! used a patched copy of `h2` for a while (idle memory, heads as bytes); by then only its
//! HPACK decoder was in use, and a fork is a maintenance debt. What Fulcrum needs is small:
//! this crate, with fuzz targets for the frame parser and the decoder. The connections
//! themselves (streams, flow control, SETTINGS, GOAWAY) are the proxy's
//! (`fulcrum::http::h2::conn`), since they hand streams to its transactions. The `h2` crate,
//! unmodified, is only the test suites' HTTP/2 client and server.
//!
//! Owns: bytes in and out. Must not touch: sockets, time, the proxy.

pub mod frame;
pub mod fuzzing;
pub mod hpack;
pub mod huffman;

pub use hpack::{DecoderError, NeedMore, Pseudo, RawDecoder, RawHead};
