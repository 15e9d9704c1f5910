//! `fulcrum`: a TCP/HTTP load balancer that reads HAProxy's configuration language.
//!
//! Boxes, in request order: `cli` (start-up) -> `plan` (validated runtime plan) -> `runtime`
//! (workers, accept) -> `listener` -> `tcp` (sessions, tunnel) -> `backend` (selection, queue,
//! retries) -> `server`; `health` checks servers and changes their state through
//! `backend::status`; `connection` holds socket and buffer types, `sys` the OS calls, `memory`
//! the allocator.

mod api;
mod auth;
mod backend;
mod bwlim;
mod cache;
mod cli;
mod clock;
mod connection;
mod counters;
mod demo;
mod files;
mod frontend;
mod health;
mod http;
mod http_settings;
mod lifecycle;
mod link;
mod listener;
mod log;
mod lua;
mod mail;
mod memory;
mod outcome;
mod plan;
mod random;
mod rules;
mod runtime;
mod server;
mod shared;
mod spoe;
mod state_file;
mod stats;
mod stick;
mod sys;
mod tcp;
mod tls;
mod worker;

#[global_allocator]
static ALLOCATOR: memory::Allocator = memory::Allocator;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(cli::main(&argv));
}
