//! Black-box acceptance tests of `mode http` (issue 3): every scenario runs the same
//! configuration under Fulcrum and, when it is installed, under HAProxy 2.6, and expects the same
//! answers. See `px.rs` for the harness and `FULCRUM_TEST_TARGET`.

#[path = "../e2e/harness.rs"]
mod harness;

mod acl;
mod bodies;
mod errors;
mod keepalive;
mod malformed;
mod px;
mod rules;
