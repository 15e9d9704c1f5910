//! Black-box scenarios: the real `fulcrum` binary against real test servers on 127.0.0.1.

mod accept_invalid;
mod balance;
mod bind_options;
mod config_errors;
#[path = "../http/crosscheck.rs"]
mod crosscheck;
mod external_checks;
mod failures;
mod fastcgi;
mod grpc;
mod h2_servers;
#[path = "../http/h2client.rs"]
mod h2client;
#[path = "../http/h2server.rs"]
mod h2server;
mod h2spec;
mod harness;
mod health;
mod lifecycle;
mod logging;
mod logging_formats;
mod lua;
mod mail_alerts;
mod package;
mod persistence;
mod prometheus;
mod protocol_checks;
mod reload;
mod runtime_api;
mod server_options;
mod server_state;
mod socket_buffers;
mod socket_stats;
mod spoe;
mod stats_page;
mod timeouts;
mod tls;
mod tls_checks;
mod tls_facts;
mod tls_limits;
mod tuning;
