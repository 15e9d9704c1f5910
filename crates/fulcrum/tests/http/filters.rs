//! The filters besides compression and cache (issue 38 §1, §4). `filter trace`, beside
//! HAProxy 2.6. Bandwidth limits: `filter bwlim-in|bwlim-out` and `set-bandwidth-limit`,
//! HAProxy 2.7's keywords (2.6 refuses them, so these run on Fulcrum alone). Each scenario
//! measures the rate a client gets: a body of N bytes under a limit of L bytes per second
//! takes about N / L seconds (HAProxy's algorithm lets no burst through at the start), and a
//! stream no rule limited goes at once. Bodies are small and limits low, so each scenario
//! lasts about two seconds.

use std::thread;
use std::time::{Duration, Instant};

use crate::harness::api;
use crate::px::*;

/// Runs `f` and says how long it took.
fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let start = Instant::now();
    let r = f();
    (r, start.elapsed())
}

/// `took` is about `want` seconds: not shorter than 80 % of it (the limit held), not longer
/// than three times it (a loaded machine's slack; a stuck transfer fails).
fn about(what: &str, took: Duration, want: f64) {
    let s = took.as_secs_f64();
    assert!(s >= want * 0.8 && s <= want * 3.0 + 0.5, "{what}: {s:.2} s, about {want} s expected");
}

fn config(srv: &Running, extra: &str) -> String {
    format!(
        "global\n stats socket {{dir}}/api.sock level admin\n{DEFAULTS}\
         frontend fe\n bind {{fe0}}\n bind {{fe1}} proto h2\n\
         filter bwlim-out dl default-limit 100k default-period 1s\n\
         filter bwlim-in ul default-limit 50k default-period 1s\n\
         filter bwlim-out shared limit 200k key src table st\n{extra}\
         http-request set-bandwidth-limit dl if {{ path_beg /dl }}\n\
         http-request set-bandwidth-limit dl limit 400k period 1s if {{ path_beg /fast }}\n\
         http-request wait-for-body time 3s at-least 60k if {{ path_beg /ulw }}\n\
         http-request set-bandwidth-limit ul if {{ path_beg /ul }}\n\
         http-request set-var(txn.shared) int(1) if {{ path_beg /shared }}\n\
         http-response set-bandwidth-limit shared if {{ var(txn.shared) -m found }}\n\
         default_backend be\n\
         backend st\n stick-table type ip size 1k expire 60s store bytes_out_rate(1s)\n\
         backend be\n server s1 {}\n",
        srv.addr()
    )
}

#[test]
fn downloads_and_uploads_go_at_the_limit_their_rule_enabled() {
    use crate::h2client::{h2c, H2Req};
    let srv = server("s1");
    let px = Target::Fulcrum.start(&config(&srv, ""));
    let (a0, a1) = (px.addr(), px.addrs[1]);
    let h1 = |path: &'static str| {
        move || {
            let (r, t) = timed(|| {
                Client::connect(a0)
                    .request(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            });
            assert_eq!((r.status, r.body.len()), (200, path_size(path)), "{path}");
            t
        }
    };
    let runs = vec![
        thread::spawn(h1("/dl/?s=200000")),
        thread::spawn(h1("/fast/?s=400000")),
        thread::spawn(h1("/free/?s=400000")),
        thread::spawn(move || {
            let (r, t) = timed(|| h2c(a1, &[H2Req::get("/dl/?s=200000")]).expect("HTTP/2"));
            assert_eq!(r[0].body.len(), 200_000);
            t
        }),
        thread::spawn(move || {
            let body = vec![b'u'; 100_000];
            let head =
                format!("POST /ul/ HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", body.len());
            let (r, t) = timed(|| Client::connect(a0).request(&[head.as_bytes(), &body].concat()));
            assert_eq!(r.status, 200);
            t
        }),
        // An HTTP/2 upload a `wait-for-body` rule held in part first: the part held goes at
        // the limit too, then the rest.
        thread::spawn(move || {
            let body = vec![b'w'; 100_000];
            let (r, t) = timed(|| h2c(a1, &[H2Req::post("/ulw/?s=1", &body)]).expect("HTTP/2"));
            assert_eq!(r[0].status, 200);
            t
        }),
    ];
    let took: Vec<Duration> = runs.into_iter().map(|h| h.join().expect("client")).collect();
    about("HTTP/1 download at 100k/s", took[0], 200_000.0 / 102_400.0);
    about("the rule's own limit, 400k/s", took[1], 400_000.0 / 409_600.0);
    assert!(took[2] < Duration::from_millis(800), "no limit enabled: {:?}", took[2]);
    about("HTTP/2 download at 100k/s", took[3], 200_000.0 / 102_400.0);
    about("upload at 50k/s", took[4], 100_000.0 / 51_200.0);
    about("HTTP/2 upload held in part, at 50k/s", took[5], 100_000.0 / 51_200.0);
}

/// `mode tcp`: `tcp-request content` and `tcp-response content set-bandwidth-limit` limit the
/// tunnel's bytes (every byte counts there: the HTTP exchanged through it is opaque).
#[test]
fn tcp_content_rules_limit_a_tcp_stream() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}\
         frontend fe\n mode tcp\n bind {{fe0}}\n bind {{fe1}}\n\
         filter bwlim-out dl default-limit 100k default-period 1s\n\
         filter bwlim-in ul default-limit 50k default-period 1s\n\
         tcp-request content set-bandwidth-limit dl if {{ dst_port {{port0}} }}\n\
         tcp-request content set-bandwidth-limit ul if {{ dst_port {{port0}} }}\n\
         use_backend limited if {{ dst_port {{port1}} }}\n\
         default_backend be\n\
         backend be\n mode tcp\n server s1 {a}\n\
         backend limited\n mode tcp\n filter bwlim-out bdl default-limit 200k default-period 1s\n\
         tcp-response content set-bandwidth-limit bdl\n server s1 {a}\n",
        a = srv.addr()
    );
    let px = Target::Fulcrum.start(&cfg);
    let (a0, a1) = (px.addr(), px.addrs[1]);
    let get = |a, size: usize| {
        move || {
            let head = format!("GET /?s={size} HTTP/1.1\r\nHost: x\r\n\r\n");
            let (r, t) = timed(|| Client::connect(a).request(head.as_bytes()));
            assert_eq!((r.status, r.body.len()), (200, size));
            t
        }
    };
    let runs = [thread::spawn(get(a0, 200_000)), thread::spawn(get(a1, 400_000))];
    let up = thread::spawn(move || {
        let body = vec![b'u'; 100_000];
        let head = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", body.len());
        let (r, t) = timed(|| Client::connect(a0).request(&[head.as_bytes(), &body].concat()));
        assert_eq!(r.status, 200);
        t
    });
    let [dl, bdl] = runs.map(|h| h.join().expect("client"));
    // The head's bytes count too here: a little over the body's time.
    about("tcp-request content: download at 100k/s", dl, 200_000.0 / 102_400.0);
    about("tcp-response content: download at 200k/s", bdl, 400_000.0 / 204_800.0);
    about("tcp-request content: upload at 50k/s", up.join().expect("upload"), 100_000.0 / 51_200.0);
}

/// The size a test server answer asks for (`?s=N`).
fn path_size(path: &str) -> usize {
    path.rsplit("s=").next().and_then(|n| n.parse().ok()).expect("s=N")
}

#[test]
fn streams_with_the_same_key_share_one_limit_counted_in_the_table() {
    let srv = server("s1");
    let px = Target::Fulcrum.start(&config(&srv, ""));
    let addr = px.addr();
    let one = move || {
        timed(|| {
            Client::connect(addr).request(b"GET /shared/?s=200000 HTTP/1.1\r\nHost: x\r\n\r\n")
        })
    };
    // Alone: 200 kB at 200 kB/s.
    let (r, alone) = one();
    assert_eq!(r.body.len(), 200_000);
    about("one client alone", alone, 200_000.0 / 204_800.0);
    // Two at once from the same address: 400 kB at 200 kB/s together.
    let (a, b) = (thread::spawn(one), thread::spawn(one));
    let (ta, tb) = (a.join().expect("a").1, b.join().expect("b").1);
    about("two clients sharing", ta.max(tb), 400_000.0 / 204_800.0);
    let shown = api(&px.dir.join("api.sock"), "show table st");
    let line =
        shown.lines().find(|l| l.contains("key=127.0.0.1")).unwrap_or_else(|| panic!("{shown}"));
    let rate: u64 = line
        .rsplit("bytes_out_rate(1000)=")
        .next()
        .and_then(|v| v.trim().parse().ok())
        .expect("rate");
    assert!(rate > 0 && rate <= 2 * 204_800, "{line}");
}

/// Compression before the limit: the compressed bytes are limited (a compressible body's
/// few bytes take their time at a low limit); the limit before compression (`filter
/// compression` after it): the plain ones; a backend's limit after a frontend's compression:
/// the compressed ones.
#[test]
fn a_limit_counts_compressed_or_plain_bytes_as_its_place_among_the_filters_says() {
    let srv = server("s1");
    let gz = ["Accept-Encoding: gzip"];
    let cfg = |filters: &str| {
        format!(
            "{DEFAULTS}listen px\n bind {{fe0}}\n compression algo gzip\n{filters}\
             http-request set-bandwidth-limit dl\n server s1 {}\n",
            srv.addr()
        )
    };
    let px = Target::Fulcrum.start(&cfg(
        " filter compression\n filter bwlim-out dl default-limit 1k default-period 1s\n",
    ));
    let (r, t) = timed(|| px.get_with("/?s=100000", &gz));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(r.body.len() > 1024 && r.body.len() < 4096, "{} bytes compressed", r.body.len());
    about("compressed bytes limited after compression", t, r.body.len() as f64 / 1024.0);
    let px = Target::Fulcrum.start(&cfg(
        " filter bwlim-out dl default-limit 100k default-period 1s\n filter compression\n",
    ));
    let (r, t) = timed(|| px.get_with("/?s=200000", &gz));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    about("plain bytes limited before compression", t, 200_000.0 / 102_400.0);
    // A backend's limit comes after the frontend's (implicit) compression filter: the
    // stream's filters are the frontend's, then the backend's.
    let px = Target::Fulcrum.start(&format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n compression algo gzip\n default_backend be\n\
         backend be\n filter bwlim-out dl default-limit 1k default-period 1s\n\
         http-request set-bandwidth-limit dl\n server s1 {}\n",
        srv.addr()
    ));
    let (r, t) = timed(|| px.get_with("/?s=100000", &gz));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(r.body.len() > 1024 && r.body.len() < 4096, "{} bytes compressed", r.body.len());
    about("a backend's limit after the frontend's compression", t, r.body.len() as f64 / 1024.0);
}

/// `filter trace` beside HAProxy 2.6: the same events in the same order for a request with
/// no body, one with a body, one with an empty body, one a rule denies (the frontend's filter
/// and the backend's, with its hex dump), and one through a frontend without a trace filter
/// to that backend. Times, stream pointers and buffer offsets left out.
#[test]
fn trace_filters_tell_the_same_events_as_haproxy() {
    each(|t| {
        let srv = server("s1");
        let cfg = format!(
            "global\n nbthread 1\n{DEFAULTS}frontend fe\n bind {{fe0}}\n filter trace name F\n\
             http-request deny if {{ path_beg /deny }}\n default_backend be\n\
             frontend plain\n bind {{fe1}}\n default_backend be\n\
             backend be\n filter trace hexdump\n server s1 {}\n",
            srv.addr()
        );
        let px = t.start(&cfg);
        assert_eq!(px.get("/?s=20").status, 200);
        let post =
            "POST /up?s=5 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
        assert_eq!(px.send(post.as_bytes()).status, 200);
        let empty =
            "POST /empty?s=0 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        assert_eq!(px.send(empty.as_bytes()).status, 200);
        assert_eq!(px.get("/deny").status, 403);
        // A frontend without a trace filter, to the backend with one.
        assert_eq!(px.client_to(1).request(get("/?s=3").as_bytes()).status, 200);
        let detached = |log: &str| log.matches("trace_detach").count();
        assert!(eventually(Duration::from_secs(5), || detached(&px.log()) >= 8), "{}", px.log());
        trace_lines(&px.log())
    });
}

/// The trace lines of a log, without their time, stream or offsets, the analysers' events
/// (Fulcrum has no analyser bits to show) and the header lines of the test's own fields.
fn trace_lines(log: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in log.lines() {
        if line.starts_with("\t0x") {
            out.push(line.to_string());
            continue;
        }
        let Some((_, rest)) = line.split_once(" [") else { continue };
        let Some((name, rest)) = rest.split_once("] [strm ") else { continue };
        let Some((_, event)) = rest.split_once("] ") else { continue };
        if event.contains("_analyze") || event.starts_with("\tuser-agent") {
            continue;
        }
        let event = match event.find("offset=") {
            Some(i) => {
                format!("{}{}", &event[..i], &event[i..].split_once(" - ").map_or("", |x| x.1))
            }
            None => event.to_string(),
        };
        out.push(format!("[{name}] {}", event.trim_end()));
    }
    out
}

/// A cache hit to an HTTP/1 client goes at the limit too (the stored body through the filters).
#[test]
fn a_cache_hit_goes_at_the_limit() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}cache c\n total-max-size 4\n max-object-size 300000\nlisten px\n bind {{fe0}}\n\
         filter cache c\n filter bwlim-out dl default-limit 100k default-period 1s\n\
         http-request cache-use c\n http-response cache-store c\n\
         http-request set-bandwidth-limit dl\n server s1 {}\n",
        srv.addr()
    );
    let px = Target::Fulcrum.start(&cfg);
    let path = "/hit?s=200000&hdr=Cache-Control:max-age%3D60";
    let (first, t1) = timed(|| px.get(path));
    assert_eq!((first.status, first.body.len()), (200, 200_000));
    about("the stored answer", t1, 200_000.0 / 102_400.0);
    let (hit, t2) = timed(|| px.get(path));
    assert_eq!((hit.status, hit.body.len()), (200, 200_000));
    assert!(hit.has("age"), "a hit has an Age");
    assert!(hit.body == first.body, "the stored body");
    about("the hit", t2, 200_000.0 / 102_400.0);
}
