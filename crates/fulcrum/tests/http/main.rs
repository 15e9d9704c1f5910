//! Black-box acceptance tests of `mode http` (issue 3): every scenario runs the same
//! configuration under Fulcrum and, when it is installed, under HAProxy 2.6, sends the same bytes
//! and expects the same answers (see `px.rs`). The expectations are HAProxy's real behaviour;
//! where it surprised, the test says so in a comment.
//!
//! ```text
//! cargo test -p fulcrum --test http                             # HAProxy (if installed), then Fulcrum
//! FULCRUM_TEST_TARGET=haproxy cargo test -p fulcrum --test http # prove the expectations
//! FULCRUM_TEST_TARGET=fulcrum cargo test -p fulcrum --test http # Fulcrum alone
//! ```
//!
//! Where Fulcrum deliberately differs from HAProxy, a test branches on `Target` and says why.

#[path = "../e2e/harness.rs"]
mod harness;

mod acl;
mod addrs;
mod auth;
mod bodies;
mod cache;
mod compression;
mod converters;
mod crosscheck;
mod errors;
mod explain;
mod extra;
mod fetches;
mod filters;
mod h2;
mod h2attacks;
mod h2client;
mod h2server;
mod h2up;
mod h2upframes;
mod inspect;
mod keepalive;
mod malformed;
mod px;
mod rules;
mod stick;
mod switching;
mod upgrade;
mod vars;
