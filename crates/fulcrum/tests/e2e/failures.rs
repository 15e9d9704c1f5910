//! Dead servers, retries, redispatch, `maxconn` queueing and `timeout queue`.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::harness::*;

const DEFAULTS: &str = "defaults\n mode tcp\n timeout client 5s\n timeout server 5s\n";

#[test]
fn redispatch_sends_the_last_retry_to_a_live_server() {
    let live = testserver("http", "live");
    let dead = dead_addr();
    let px = fulcrum(
        "redispatch",
        &format!(
            "global\n nbthread 1\n{DEFAULTS} timeout connect 200ms\n retries 1\n option redispatch\n\
             listen px\n bind {{fe0}}\n balance roundrobin\n server dead {dead}\n server live {}\n",
            live.addr
        ),
    );
    for i in 0..10 {
        let r = http_get(px.addr(), "/").unwrap_or_else(|| panic!("request {i} failed"));
        assert_eq!((r.0, r.1.as_str()), (200, "live"));
    }
}

#[test]
fn without_redispatch_a_dead_server_is_retried_then_the_session_closes() {
    let dead = dead_addr();
    let px = fulcrum(
        "no-redispatch",
        &format!(
            "{DEFAULTS} timeout connect 100ms\n retries 2\n\
             listen px\n bind {{fe0}}\n server dead {dead}\n"
        ),
    );
    let start = Instant::now();
    assert!(http_get(px.addr(), "/").is_none(), "no answer from a dead server");
    let took = start.elapsed();
    // Two retries, each after HAProxy's turn-around of min(timeout connect, 1s) = 100ms.
    assert!(took >= Duration::from_millis(190), "retried too fast: {took:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn all_servers_down_closes_the_session_at_once() {
    let dead = dead_addr();
    let px = fulcrum(
        "all-down",
        &format!("{DEFAULTS} timeout connect 100ms\nlisten px\n bind {{fe0}}\n server s {dead} disabled\n"),
    );
    let mut s = connect(px.addr());
    assert!(closed_within(&mut s, Duration::from_secs(1)));
}

#[test]
fn server_maxconn_queues_the_second_session_until_the_first_ends() {
    let srv = testserver("http", "slow");
    let px = fulcrum(
        "queue",
        &format!(
            "{DEFAULTS} timeout connect 1s\n timeout queue 5s\n\
             listen px\n bind {{fe0}}\n server slow {} maxconn 1\n",
            srv.addr
        ),
    );
    let addr = px.addr();
    let start = Instant::now();
    let a = std::thread::spawn(move || http_get(addr, "/?t=300"));
    std::thread::sleep(Duration::from_millis(50));
    let b = std::thread::spawn(move || http_get(addr, "/?t=300"));
    let (ra, rb) = (a.join().expect("a"), b.join().expect("b"));
    assert_eq!(ra.map(|r| r.0), Some(200));
    assert_eq!(rb.map(|r| r.0), Some(200));
    assert!(start.elapsed() >= Duration::from_millis(580), "not serialised: {:?}", start.elapsed());
}

#[test]
fn queue_timeout_closes_a_waiting_session() {
    let srv = testserver("http", "slow");
    let px = fulcrum(
        "queue-timeout",
        &format!(
            "{DEFAULTS} timeout connect 1s\n timeout queue 150ms\n\
             listen px\n bind {{fe0}}\n server slow {} maxconn 1\n",
            srv.addr
        ),
    );
    let addr = px.addr();
    let first = std::thread::spawn(move || http_get(addr, "/?t=1500"));
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").expect("write");
    assert!(closed_within(&mut s, Duration::from_secs(1)), "queued session not closed");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(120), "closed before timeout queue: {took:?}");
    assert_eq!(first.join().expect("first").map(|r| r.0), Some(200));
}

#[test]
fn abortonclose_drops_a_queued_session_whose_client_left() {
    let srv = testserver("http", "slow");
    let px = fulcrum(
        "abortonclose",
        &format!(
            "{DEFAULTS} timeout connect 1s\n timeout queue 5s\n option abortonclose\n\
             listen px\n bind {{fe0}}\n server slow {} maxconn 1\n",
            srv.addr
        ),
    );
    let addr = px.addr();
    let first = std::thread::spawn(move || http_get(addr, "/?t=1500"));
    std::thread::sleep(Duration::from_millis(100));
    let quitter = connect(addr);
    std::thread::sleep(Duration::from_millis(100));
    drop(quitter); // leaves while queued behind the slow request
    let logged = eventually(Duration::from_millis(800), || {
        px.proc.log_text().lines().any(|l| l.contains(" px/<NOSRV> ") || l.contains(" CQ "))
    });
    assert!(logged, "queued session not aborted: {}", px.proc.log_text());
    // As HAProxy 2.6 logs it: the client (C) left while queued (Q), first in line.
    assert!(px.proc.log_text().lines().any(|l| l.contains(" 0 CQ ") && l.ends_with(" 0/1")));
    assert_eq!(first.join().expect("first").map(|r| r.0), Some(200));
}
