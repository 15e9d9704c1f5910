//! The `fulcrum` binary.
fn main() {}
