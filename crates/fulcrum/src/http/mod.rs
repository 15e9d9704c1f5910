//! `mode http`: one client connection from accept to close, as a sequence of transactions
//! (request, server exchange, response), HAProxy's HTTP/1.1 proxying.
//!
//! Per transaction: read and strictly parse the request head (`fulcrum-http`), run the
//! frontend's rules, pick the backend (`use_backend`), run the backend's rules, get a server
//! connection (the session's own, an idle one from the worker's pool as `http-reuse` allows,
//! or a new one with retries), send the head and stream the body, read the response head (1xx
//! forwarded), run response rules, stream the response body, then decide whether each side stays
//! open. `Upgrade` (101) and `CONNECT` (2xx) turn the connection into a tunnel.
//!
//! Bodies are never buffered whole: they move through one pool buffer per direction, chunked
//! bodies validated on the fly and passed through verbatim when in canonical form (else their
//! chunk-size lines are written again). HTTP/2 clients (`h2`) run the same sessions, one per
//! stream, through an HTTP/1.1 view of the stream. Errors become HAProxy's answers
//! (`http_settings::messages`). Must not touch: accept/limits (runtime), server choice (backend/balancer),
//! config parsing.

pub mod analyse;
pub mod encoder;
pub mod fcgi;
pub mod h2;
pub mod io;
pub mod peer;
pub mod pool;
pub(crate) mod session;
mod timer;
pub mod trace;

pub use session::{serve, Served, Start};
