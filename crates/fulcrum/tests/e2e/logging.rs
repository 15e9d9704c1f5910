//! Logging, black box: the real binary sends to a UDP syslog sink opened here; the datagrams
//! are compared, with times, dates, pids and client ports masked, with what HAProxy 2.6 sends
//! for the same configuration and the same traffic (where HAProxy is installed).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::harness::*;

/// A UDP syslog sink on a free loopback port; keeps every datagram it received.
pub(crate) struct Sink {
    sock: UdpSocket,
    pub(crate) got: std::cell::RefCell<Vec<String>>,
}

impl Sink {
    pub(crate) fn new() -> Sink {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind sink");
        Sink { sock, got: Default::default() }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("addr")
    }

    /// Waits (at most 5 s) until `n` datagrams arrived in all; returns how many did.
    pub(crate) fn wait_for(&self, n: usize) -> usize {
        self.wait_for_within(n, Duration::from_secs(5))
    }

    /// As [`Sink::wait_for`], at most `within`.
    pub(crate) fn wait_for_within(&self, n: usize, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        let mut buf = vec![0u8; 70_000];
        while self.got.borrow().len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.sock.set_read_timeout(Some(left)).expect("timeout");
            match self.sock.recv(&mut buf) {
                Ok(k) => {
                    self.got.borrow_mut().push(String::from_utf8_lossy(&buf[..k]).into_owned())
                }
                Err(_) => break,
            }
        }
        self.got.borrow().len()
    }

    /// The `n` datagrams expected in all (waits at most 5 s for them).
    fn take(&self, n: usize) -> Vec<String> {
        let got = self.wait_for(n);
        let all = self.got.borrow().clone();
        assert_eq!(got, n, "datagrams: {all:#?}");
        all
    }
}

/// Fulcrum or HAProxy, given the frontend sockets as `fd@3`, `fd@4`, ...
pub(crate) struct Proxy {
    pub(crate) proc: Proc,
    pub(crate) addrs: Vec<SocketAddr>,
}

impl Proxy {
    /// `which` is "fulcrum" or "haproxy"; `None` when HAProxy is not installed.
    pub(crate) fn start(which: &str, test: &str, cfg: &str) -> Option<Proxy> {
        let (proc, addrs, _) = start_proxy(which, test, cfg)?;
        Some(Proxy { proc, addrs })
    }
}

/// Runs `scenario` against Fulcrum, then HAProxy when installed, each with a fresh sink that
/// `cfg`'s `{sink}` names; returns each one's datagrams (`expect` of them), masked.
pub(crate) fn both(
    test: &str,
    cfg: &str,
    expect: usize,
    scenario: impl Fn(&Proxy),
) -> Vec<Vec<String>> {
    both_with_sink(test, cfg, expect, |p, _| scenario(p))
}

/// Like [`both`], the scenario seeing the sink (to wait for each line before the next step).
pub(crate) fn both_with_sink(
    test: &str,
    cfg: &str,
    expect: usize,
    scenario: impl Fn(&Proxy, &Sink),
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let sink = Sink::new();
        let cfg = cfg.replace("{sink}", &sink.addr().to_string());
        let Some(p) = Proxy::start(which, test, &cfg) else { continue };
        scenario(&p, &sink);
        let got = sink.take(expect);
        out.push(got.iter().map(|l| mask(l)).collect::<Vec<_>>());
        drop(p);
    }
    if out.len() == 2 {
        assert_eq!(out[0], out[1], "Fulcrum (left) and HAProxy 2.6 (right) log the same lines");
    }
    out
}

/// Masks what differs from run to run: syslog time and pid, the log date, client ports,
/// numbers in timer fields (kept: whether a timer is -1).
pub(crate) fn mask(line: &str) -> String {
    let re = |r: &str| regex::Regex::new(r).expect("regex");
    let s = re(r"^(<[0-9]+>)[A-Z][a-z]{2} [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] ")
        .replace(line, "${1}TIME ");
    let s = re(r"\[[0-9]+\]: ").replace(&s, "[PID]: ");
    // RFC 5424: `<PRI>1 TIMESTAMP HOST TAG PID - - `.
    let s =
        re(r"^(<[0-9]+>)1 [^ ]+ ([^ ]+) ([^ ]+) [0-9]+ - ").replace(&s, "${1}1 TIME $2 $3 PID - ");
    if re(r" - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [+-][0-9]{4}\] ").is_match(&s) {
        return mask_clf(&s);
    }
    let s = re(r"\[[0-9][0-9]/[A-Z][a-z]{2}/[0-9]{4}:[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{3}\]")
        .replace_all(&s, "[DATE]");
    let s = re(r"127\.0\.0\.1:[0-9]+").replace_all(&s, "127.0.0.1:P");
    // Timer groups: `0/0/1/0/1` or `0/-1/5`, followed by a space and a status or byte count
    // (`option logasap` marks the total `+`).
    let s = re(r" (-?[0-9]+)/(-?[0-9]+)/(\+?-?[0-9]+)(/(-?[0-9]+))?(/(\+?-?[0-9]+))? ").replace(
        &s,
        |c: &regex::Captures| {
            let t = |i: usize| {
                c.get(i).map(|m| match m.as_str() {
                    "-1" => "-1",
                    n if n.starts_with('+') => "+T",
                    _ => "T",
                })
            };
            let mut v = vec![t(1), t(2), t(3), t(5), t(7)];
            v.retain(Option::is_some);
            format!(" {} ", v.into_iter().flatten().collect::<Vec<_>>().join("/"))
        },
    );
    s.into_owned()
}

/// `option httplog clf` lines with the date, client port, milliseconds and timers masked.
fn mask_clf(line: &str) -> String {
    let re = |r: &str| regex::Regex::new(r).expect("regex");
    let s =
        re(r"\[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [+-][0-9]{4}\]").replace(line, "[DATE]");
    let mut f: Vec<String> = s.split(' ').map(str::to_string).collect();
    // After the request line's 3 words: status, bytes, 2 cookies, then client port, ms,
    // frontend, backend, server and the 5 timers.
    let q = f.iter().position(|w| w.starts_with("\"GET") || w == "\"<BADREQ>\"").unwrap_or(0);
    let words = if f[q] == "\"<BADREQ>\"" { 1 } else { 3 };
    let base = q + words + 4;
    for i in [base, base + 1] {
        if let Some(w) = f.get_mut(i) {
            *w = "N".into();
        }
    }
    for w in f.iter_mut().skip(base + 5).take(5) {
        if w != "-1" {
            *w = "T".into();
        }
    }
    f.join(" ")
}

/// One request on its own connection; the whole answer.
fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

const DEFAULTS: &str =
    "defaults\n log global\n timeout connect 1s\n timeout client 5s\n timeout server 5s\n";

#[test]
fn without_a_format_each_connection_is_logged_as_it_arrives() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "global\n log {{sink}} local0\n log-tag t\n{DEFAULTS}\
         frontend web\n mode http\n bind {{fe0}}\n default_backend be\n\
         listen raw\n mode tcp\n bind {{fe1}}\n server s1 {}\n\
         backend be\n mode http\n server s1 {}\n",
        ts.addr, ts.addr
    );
    let runs = both("log-connect", &cfg, 2, |p| {
        assert!(get(p.addrs[0], "/").starts_with(b"HTTP/1.1 200"));
        assert!(get(p.addrs[1], "/").starts_with(b"HTTP/1.1 200"));
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: Connect from 127.0.0.1:P to 127.0.0.1:P (web/HTTP)\n",
            "<134>TIME t[PID]: Connect from 127.0.0.1:P to 127.0.0.1:P (raw/TCP)\n",
        ]
    );
}

#[test]
fn tcplog_has_timers_bytes_state_and_counts_at_the_end_of_the_session() {
    let ts = testserver("echo", "s1");
    let cfg = format!(
        "global\n log {{sink}} len 200 format rfc5424 local1 info\n log-tag t\n{DEFAULTS}\
         listen raw\n mode tcp\n option tcplog\n bind {{fe0}}\n server s1 {}\n\
         listen dead\n mode tcp\n option tcplog\n retries 1\n bind {{fe1}}\n server s2 {}\n",
        ts.addr,
        dead_addr()
    );
    let runs = both_with_sink("log-tcplog", &cfg, 2, |p, sink| {
        let mut s = connect(p.addrs[0]);
        assert_eq!(echo_roundtrip(&mut s, b"hello"), b"hello");
        half_close(&s);
        assert!(closed_within(&mut s, Duration::from_secs(5)));
        // The first session is over (logged) before the next client comes: `%ac` counts 1.
        assert_eq!(sink.wait_for(1), 1);
        let mut d = connect(p.addrs[1]);
        assert!(closed_within(&mut d, Duration::from_secs(5)));
    });
    assert_eq!(
        runs[0],
        [
            "<142>1 TIME - t PID - - 127.0.0.1:P [DATE] raw raw/s1 T/T/T 5 -- 1/1/0/0/0 0/0\n",
            "<142>1 TIME - t PID - - 127.0.0.1:P [DATE] dead dead/s2 T/-1/T 0 SC 1/1/0/0/1 0/0\n",
        ]
    );
}

#[test]
fn a_soft_stop_says_each_proxy_stopped_to_its_own_targets_and_levels_filter() {
    let ts = testserver("http", "s1");
    // `web` logs to the sink; `quiet` has no target; `notice` takes only notice and worse.
    let cfg = format!(
        "global\n log-tag t\n{DEFAULTS}\
         frontend web\n mode http\n log {{sink}} local0\n bind {{fe0}}\n default_backend be\n\
         frontend quiet\n mode http\n bind {{fe1}}\n default_backend be\n\
         backend be\n mode http\n log {{sink}} local2 warning\n server s1 {}\n\
         backend other\n mode http\n log {{sink}} local3 err\n server s1 {}\n",
        ts.addr, ts.addr
    );
    let runs = both("log-stop", &cfg, 3, |p| {
        get(p.addrs[0], "/");
        get(p.addrs[1], "/");
        p.proc.signal(libc::SIGUSR1);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: Connect from 127.0.0.1:P to 127.0.0.1:P (web/HTTP)\n",
            "<132>TIME t[PID]: Proxy web stopped (cumulated conns: FE: 1, BE: 0).\n",
            "<148>TIME t[PID]: Proxy be stopped (cumulated conns: FE: 0, BE: 2).\n",
        ]
    );
}

pub(crate) const HTTP_LOG: &str = "global\n nbthread 1\n log {sink} local0\n log-tag t\n\
    defaults\n mode http\n log global\n option httplog\n timeout connect 1s\n timeout client 5s\n\
    timeout server 500ms\n timeout http-request 500ms\n timeout queue 3s\n retries 1\n";

/// Every way of ending a transaction this proxy has, in `option httplog`, against HAProxy:
/// the same termination state, status, bytes (as HAProxy counts them), counters, queue
/// positions, captures and request line, with only times, dates and ports masked.
#[test]
fn httplog_lines_say_how_each_transaction_ended_as_haproxy_does() {
    let ts = testserver("http", "s1");
    let cfg = format!(
        "{HTTP_LOG}frontend fe\n bind {{fe0}}\n capture request header Host len 5\n\
         capture response header X-Server len 10\n\
         http-request deny if {{ path /deny }}\n\
         http-request return status 200 content-type text/plain string hi if {{ path /ret }}\n\
         http-request redirect location /x if {{ path /redir }}\n\
         http-request tarpit if {{ path /tarpit }}\n timeout tarpit 100ms\n monitor-uri /mon\n\
         use_backend dead if {{ path_beg /dead }}\n use_backend none if {{ path_beg /none }}\n\
         use_backend q if {{ path_beg /q }}\n default_backend be\n\
         backend be\n server s1 {ts}\nbackend dead\n server s1 {dead}\n\
         backend none\n server s1 {ts} disabled\nbackend q\n server s1 {ts} maxconn 1\n",
        ts = ts.addr,
        dead = dead_addr(),
    );
    let runs = both_with_sink("log-httplog", &cfg, 19, |p, sink| {
        let a = p.addrs[0];
        let mut n = 0;
        let mut step = |raw: &[u8], lines: usize| {
            exchange(a, raw);
            n += lines;
            assert_eq!(sink.wait_for(n), n, "lines so far: {:#?}", sink.got.borrow());
        };
        step(b"GET /ok HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b?x=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 2);
        let mut post =
            b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 10000\r\nConnection: close\r\n\r\n"
                .to_vec();
        post.extend_from_slice(&[b'z'; 10_000]);
        step(&post, 1);
        step(b"GET /?c=404 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /?t=1500 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /dead HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /none HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /deny HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /ret HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /redir HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        // Not logged: the next line is the tarpit's.
        exchange(a, b"GET /mon HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        step(b"GET /tarpit HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /a b c HTTP/1.1\r\nHost: h\r\n\r\n", 1);
        step(b"GET /partial HTTP/1.1\r\nHost", 1);
        step(b"", 1);
        // The server answers, then closes: a normal end.
        step(b"GET /?drop=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /?bad=empty HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /?bad=truncated HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
        step(b"GET /?bad=garbage HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1);
    });
    assert_eq!(
        runs[0],
        [
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 {examp} {s1} \"GET /ok HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 {h} {s1} \"GET /a HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 {h} {s1} \"GET /b?x=1 HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 {h} {s1} \"POST /p HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 404 88 - - ---- 1/1/0/0/0 0/0 {h} {s1} \"GET /?c=404 HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/-1/T 504 198 - - sH-- 1/1/0/0/0 0/0 {h} {} \"GET /?t=1500 HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe dead/s1 T/T/-1/-1/T 503 217 - - SC-- 1/1/0/0/1 0/0 {h} {} \"GET /dead HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe none/<NOSRV> T/-1/-1/-1/T 503 217 - - SC-- 1/1/0/0/0 0/0 {h} {} \"GET /none HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> T/-1/-1/-1/T 403 192 - - PR-- 1/1/0/0/0 0/0 {h} {} \"GET /deny HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> T/-1/-1/-1/T 200 73 - - LR-- 1/1/0/0/0 0/0 {h} {} \"GET /ret HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> T/-1/-1/-1/T 302 83 - - LR-- 1/1/0/0/0 0/0 {h} {} \"GET /redir HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> -1/T/-1/-1/T 500 208 - - PT-- 1/1/0/0/0 0/0 {h} {} \"GET /tarpit HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> -1/-1/-1/-1/T 400 0 - - PR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> -1/-1/-1/-1/T 408 0 - - cR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe fe/<NOSRV> -1/-1/-1/-1/T 408 0 - - cR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 81 - - ---- 1/1/0/0/0 0/0 {h} {s1} \"GET /?drop=1 HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/-1/T 502 209 - - SH-- 1/1/0/0/0 0/0 {h} {} \"GET /?bad=empty HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/T/T 200 61 - - SD-- 1/1/0/0/0 0/0 {h} {} \"GET /?bad=truncated HTTP/1.1\"\n",
            "<134>TIME t[PID]: 127.0.0.1:P [DATE] fe be/s1 T/T/T/-1/T 502 209 - - PH-- 1/1/0/0/0 0/0 {h} {} \"GET /?bad=garbage HTTP/1.1\"\n",
        ]
    );
}

/// A free loopback port for TCP (UDP binds it as well on loopback in practice).
fn free_addr(udp: bool) -> SocketAddr {
    if udp {
        UdpSocket::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr")
    } else {
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr")
    }
}

#[test]
fn log_forward_relays_through_a_ring_keeping_tag_pid_and_level() {
    // The frontend logs over UDP to a log-forward section, which writes to a ring (RFC 5424),
    // whose server is a second log-forward section over TCP, which sends to the sink: the
    // line arrives with the proxy's tag, pid and level, as HAProxy relays it.
    let ts = testserver("http", "s1");
    for which in ["fulcrum", "haproxy"] {
        let sink = Sink::new();
        let (udp, tcp) = (free_addr(true), free_addr(false));
        let cfg = format!(
            "defaults\n mode http\n option httplog\n timeout connect 5s\n timeout client 5s\n\
             timeout server 5s\n\
             frontend fe\n bind {{fe0}}\n log {udp} local0\n default_backend be\n\
             backend be\n server s1 {ts}\n\
             ring buf\n description \"relay\"\n format rfc5424\n maxlen 1200\n size 32764\n\
             timeout connect 5s\n timeout server 10s\n server relay {tcp}\n\
             log-forward from_udp\n dgram-bind {udp}\n log ring@buf local0\n\
             log-forward from_tcp\n bind {tcp}\n log {sink} local0\n",
            ts = ts.addr,
            sink = sink.addr()
        );
        let Some((p, addrs, _)) = start_proxy(which, "log-forward", &cfg) else { continue };
        // The relay's TCP connection comes with the first message: send until one arrives.
        let mut got = 0;
        for i in 0..20 {
            let _ = get_with(addrs[0], &format!("/relayed-{i}"), "");
            got = sink.wait_for_within(1, Duration::from_millis(250));
            if got > 0 {
                break;
            }
        }
        assert!(got > 0, "{which}: nothing relayed; {}", p.log_text());
        let line = sink.got.borrow()[0].clone();
        // HAProxy 2.6 writes what it relays in its own way (RFC 5424 with the tag in the
        // host field); both keep the priority, the tag with the pid, and the message.
        let head = format!("[{}]: ", p.pid());
        assert!(line.starts_with("<134>"), "{which}: {line}");
        assert!(line.contains(&head) && line.contains("\"GET /relayed-"), "{which}: {line}");
    }
}

#[test]
fn a_log_socket_nobody_reads_gets_haproxy_s_alert_once() {
    // `/dev/log` missing (a chroot without it bound in): HAProxy 2.6 alerts at the first line
    // it cannot send, once in the process's life; Fulcrum in the same words, at start already.
    let cfg = "global\n log {dir}/no/dev/log local0\n\
               defaults\n mode http\n log global\n option httplog\n\
               timeout connect 1s\n timeout client 5s\n timeout server 5s\n\
               frontend f\n bind {fe0}\n http-request return status 200\n";
    let want = "sendmsg()/writev() failed in logger #1: No such file or directory (errno=2)";
    for which in ["fulcrum", "haproxy"] {
        let Some((p, addrs, _)) = start_proxy(which, "log-unreachable", cfg) else { continue };
        if which == "fulcrum" {
            let early = eventually(Duration::from_secs(5), || p.log_text().contains(want));
            assert!(early, "fulcrum: at start: {}", p.log_text());
        }
        for _ in 0..3 {
            assert_eq!(http_get(addrs[0], "/").map(|r| r.0), Some(200), "{which}");
        }
        let said = eventually(Duration::from_secs(5), || p.log_text().contains(want));
        assert!(said, "{which}: {}", p.log_text());
        assert_eq!(p.log_text().matches(want).count(), 1, "{which}: once");
    }
}
