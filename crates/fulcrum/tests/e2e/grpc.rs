//! gRPC through the proxy end to end (issue 16): a real gRPC client and server (Python's
//! `grpcio`, `grpc_peer.py` beside this file) on both sides of the proxy, HTTP/2 with prior
//! knowledge on the client side and `server ... proto h2` on the server side: unary, server
//! streaming, client streaming, bidirectional (all at once, then ping-pong: each message waits
//! for the answer to the one before), a status with its message in the trailers, trailing
//! metadata, `grpc-timeout` reaching the server untouched, 50 calls at once. The same run
//! through HAProxy 2.6 (when installed) must give the same answers.
//!
//! Without `grpcio` (CI installs it), the test says so and passes: it cannot run.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::harness::start_proxy;

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/grpc_peer.py");

/// What the client reports when every call went as it should through the proxy.
const EXPECTED: &str = r#"{"bidi": ["X", "YY", "ZZZ"], "client_stream": "a+b+c", "deadline": "30", "fail": ["NOT_FOUND", "nope: q"], "many": 50, "ping_pong": ["P0", "P1", "P2"], "server_stream": ["m0", "m1", "m2", "m3", "m4"], "trailing": [["x-trail", "t1"]], "unary": "olleh"}"#;

fn has_grpcio() -> bool {
    Command::new("python3")
        .args(["-c", "import grpc"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The gRPC server: it runs until its stdin closes (when this is dropped).
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new("python3")
            .args([PEER, "server"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out).read_line(&mut line).expect("port line");
        let port =
            line.trim().parse().unwrap_or_else(|_| panic!("no port from the server: {line:?}"));
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the client through `addr`; its report, or what went wrong.
fn client(addr: std::net::SocketAddr) -> String {
    let out = Command::new("timeout")
        .args(["60", "python3", PEER, "client", &addr.to_string()])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() {
        return String::from_utf8_lossy(&out.stderr).into_owned();
    }
    text
}

#[test]
#[cfg_attr(no_grpcio, ignore = "Python's grpcio is not installed (see crates/fulcrum/build.rs)")]
fn grpc_calls_of_every_kind_go_through_both_ways() {
    assert!(has_grpcio(), "python3 cannot import grpc");
    let srv = Server::start();
    let cfg = format!(
        "defaults\n mode http\n timeout connect 2s\n timeout client 30s\n timeout server 30s\n\
         frontend fe\n bind {{fe0}}\n default_backend grpc\n\
         backend grpc\n server s1 127.0.0.1:{} proto h2\n",
        srv.port
    );
    let mut ran = Vec::new();
    for which in ["haproxy", "fulcrum"] {
        let Some((_proc, addrs, _)) = start_proxy(which, "grpc", &cfg) else { continue };
        ran.push((which, client(addrs[0])));
    }
    for (which, got) in &ran {
        assert_eq!(got, EXPECTED, "{which}");
    }
    assert!(ran.iter().any(|(w, _)| *w == "fulcrum"));
}

/// The same calls through filters that see both bodies of every call, while they flow at
/// once (a bidirectional call's answer begins before its request ends): bandwidth limits
/// each way (HAProxy 2.7's keywords: Fulcrum alone) and a trace filter, whose payload lines
/// tell both channels of the ping-pong call.
#[test]
#[cfg_attr(no_grpcio, ignore = "Python's grpcio is not installed (see crates/fulcrum/build.rs)")]
fn grpc_calls_go_through_filters_on_both_bodies_at_once() {
    assert!(has_grpcio(), "python3 cannot import grpc");
    let srv = Server::start();
    let cfg = format!(
        "defaults\n mode http\n timeout connect 2s\n timeout client 30s\n timeout server 30s\n\
         frontend fe\n bind {{fe0}}\n filter trace name T\n\
         filter bwlim-in ul default-limit 1m default-period 1s\n\
         filter bwlim-out dl default-limit 1m default-period 1s\n\
         http-request set-bandwidth-limit ul\n http-request set-bandwidth-limit dl\n\
         default_backend grpc\n\
         backend grpc\n server s1 127.0.0.1:{} proto h2\n",
        srv.port
    );
    let (proc, addrs, _) = start_proxy("fulcrum", "grpc-filters", &cfg).expect("fulcrum starts");
    assert_eq!(client(addrs[0]), EXPECTED);
    let log = proc.log_text();
    // A stream whose request payload was seen after its response's began: both bodies went
    // through the filters at once (the ping-pong and bidirectional calls).
    let mut answering = std::collections::HashSet::new();
    let mut both = 0;
    for l in log.lines().filter(|l| l.contains("trace_http_payload")) {
        let Some(strm) = l.split("[strm ").nth(1).and_then(|r| r.split(']').next()) else {
            continue;
        };
        if l.contains("channel=RESPONSE") {
            answering.insert(strm.to_string());
        } else if answering.contains(strm) {
            both += 1;
        }
    }
    assert!(both >= 2, "no request payload traced beside its response's:\n{log}");
}
