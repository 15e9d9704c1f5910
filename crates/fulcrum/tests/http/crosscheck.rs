//! The harnesses' cross-check of `fulcrum explain` against a live Fulcrum (issue 36 §2:
//! explain shares the analysers' code, so it must say what the live proxy did). Shared by the
//! `http` and `e2e` test targets (`e2e/main.rs` includes this file).
//!
//! Owns: which requests are checked ([`Checker`]: the skip rule below), running `explain` on
//! them (same configuration file, `--frontend` the section binding the harness frontend,
//! `--src` the client's real address, `--dst` the frontend's), reading what it printed
//! ([`Said`]), finding the live proxy's `-d` log line for the same stream ([`Logged`]: by
//! client address and frontend; both harnesses run Fulcrum with `-d`, its stderr in a file)
//! and comparing. A request is recorded as the live proxy answers it ([`Checker::check`],
//! [`sent`], [`sent_h2`]: the answer's status and, when a test server made it, the head it
//! echoed, [`Live`]); the recorded requests are explained and compared by
//! [`Checker::finish`] as the proxy's test ends (its handle dropped, the proxy still up): no
//! `explain` run adds to what a test times. A mismatch panics with both sides. Who records:
//! - `http` (`px.rs`): the helpers `Px::send`, `get`, `get_with`, `Client::request` /
//!   `try_request` call [`Checker::check`] (the first request of a connection or a later
//!   one); `Px`'s drop calls [`Checker::finish`];
//! - `e2e` (`harness.rs`): the helpers that send one whole HTTP/1 request on a new connection
//!   and read the answer (`get_with`, `http_get`, `servers_of`, `exchange`) call [`sent`],
//!   which finds the proxy by the frontend address ([`Checker::start`]: a Fulcrum started by
//!   `fulcrum` or `start_proxy`); the proxy's `Proc` runs the checks as it is dropped;
//! - both: `h2client::h2c` calls [`sent_h2`] for each HTTP/2 request it sent in clear text
//!   (prior knowledge), which gives `explain` its HTTP/1.1 equivalent ([`h1_of_h2`]: what the
//!   analysers see of it live).
//!
//! Compared, for what both can know:
//! - explain answers (deny, redirect, return, tarpit, a parser refusal, no backend, an invalid
//!   chunked body): the status, and the termination state's two letters from the log line;
//! - explain forwards: the log line's backend; its server, exactly when explain's pick
//!   follows from the request (hash, persistence, cookies), else only that it is one of the
//!   usable servers explain lists (roundrobin, leastconn, first, random: "the pick from a
//!   fresh start"); that the live proxy did not end the request itself before a server (a
//!   termination state of cause P/R/I/L in phase R or T); and, when the test server echoed
//!   the request head (`/echo`, `echo=head|all|1`), its request line and fields;
//! - over HTTP/2 the same, but of the echoed head only the fields: the request line differs
//!   by design (the analysers, and so explain, see the absolute URI `:scheme://:authority
//!   :path`; the server gets the origin form). The stream's log line is the one of its
//!   connection's lines that shows its request line (`"GET http://... HTTP/2.0"`).
//!
//! The skip rule. A request is checked only while the proxy's live state can still be the one
//! its configuration gives, and only when the request is one explain takes as it stands:
//! 1. The proxy is Fulcrum (HAProxy has no `explain`); `FULCRUM_TEST_EXPLAIN` is not `off`.
//! 2. Nothing in the configuration changes live state on its own, lets the test change it, or
//!    decides by chance ([`ruled_out`]): a runtime API (`stats socket`: servers, maps, ACLs,
//!    tables, variables), the stats page's admin form (`stats admin`), agent checks (they set
//!    weights without a word on stderr), servers' states loaded from a file at start
//!    (`load-server-state-from-file`), `rand` in a condition, a SPOE agent (`filter spoe`:
//!    its answers are the agent's). No request of such a proxy is
//!    checked. Where health checks or observed errors move the servers' states (`check`,
//!    `track`, `observe` on a server line, [`checked`]), only the requests answered before the
//!    first change, which the proxy says on stderr ([`changes_state`]: `Server be/s1 is
//!    DOWN`...): until then the states are the configuration's, as explain's. (A server a test
//!    stopped needs no rule: the log line still names the server tried, and a failed
//!    connection is not the analysers' decision.)
//! 3. Where decisions read state that requests accumulate ([`first_only`]: caches, stick tables and
//!    their counters, `proc.` variables, the proxies' and servers' counters, rates and
//!    queues), only the proxy's first request through the harness: until then they are as
//!    empty as explain's.
//! 4. Only the first request of each connection: later ones may read `sess.` variables and
//!    the connection's counters, which explain starts empty. Over HTTP/2, whose streams run
//!    side by side, any stream of a connection when the configuration reads no `sess.`
//!    variable and no `http_first_req` ([`no_streams`]), else only a connection's only
//!    stream; and only a stream whose request line no other stream of its connection repeats
//!    (else its log line cannot be told).
//! 5. The bytes are exactly one complete HTTP/1.x request (the head and the body its framing
//!    announces: no HTTP/2 preface, nothing pipelined, nothing missing) and not a tunnel
//!    (`CONNECT`, `Upgrade`: the log line comes only when the tunnel ends). An HTTP/2 request
//!    is checked as its HTTP/1.1 equivalent when it has one here ([`h1_of_h2`]: not with a
//!    `host` field, nor with trailers after a body of known length), when the configuration
//!    does not read the HTTP version ([`no_h2`]: `req.ver` is `2.0` live, `1.1` in explain),
//!    and when its head has fewer fields than an HTTP/1 head takes (`tune.http.maxhdr`: an
//!    HTTP/2 head takes twice as many, explain parses HTTP/1).
//! 6. At most [`PER_PROXY`] distinct requests per proxy (`FULCRUM_TEST_EXPLAIN=all`: all of
//!    them); a table test sends hundreds through one proxy.
//! 7. The configuration file still holds what the proxy started with (a test that rewrites it
//!    and reloads: explain would read the new text).
//!
//! Parts of a check are left out where the live side cannot be read or differs by design:
//! - the log line ([`no_log`]) under the configuration's own `log-format` (or
//!   `error-log-format`, `option httplog clf`, `option tcplog`: the line is not httplog's)
//!   when the request's frontend used it (a line of httplog's shape is still looked for),
//!   and where several streams logged the client address the rules set
//!   (`set-src-port int(4242)`); the connection's own address has one line per request, the
//!   first the first request's;
//! - the head ([`no_head`]) when a server speaks HTTP/2 (its echo is not an HTTP/1 head) or a
//!   field is made from time or chance (`date`, `rand`, `uuid`, `unique-id`, `%t`...);
//!   `http-send-name-header`'s field when the live server is not explain's fresh pick; the
//!   request line of an HTTP/2 request (above);
//! - the server when the live request waited in the queue (phase `Q`: other requests held
//!   the servers, which explain never sees), or explain finds none free or usable;
//! - everything for a `mode tcp` frontend (explain runs the HTTP analysers only) and for the
//!   statistics page (its status depends on more than the analysers).
//!
//! `FULCRUM_TEST_EXPLAIN_LOG=FILE` appends, per request recorded, the configuration's path
//! and what became of it: `checked: ` and what was compared (`checked (HTTP/2): ` over
//! HTTP/2), or why it was left out.
#![allow(dead_code)] // Shared by the `http` and `e2e` targets; not all of it is used by both.

use std::collections::HashSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::h2client::{H2Req, H2Resp};
use crate::harness::{eventually, Head};

/// Requests checked per proxy by default (the distinct ones among the first eligible).
pub const PER_PROXY: usize = 8;

/// The live answer to a request, as far as a check reads it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Live<'a> {
    /// The final answer's status.
    pub status: u16,
    /// Its body when a test server made the answer (it says `X-Server`): the request head it
    /// echoed, for a target that asks for one.
    pub served: Option<&'a [u8]>,
}

/// How a request reached the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// HTTP/1: the first request of its connection, or a later one.
    H1 { first: bool },
    /// HTTP/2: one of `streams` streams of its connection, whose request line no other
    /// stream of it repeats (`unique`) or not.
    H2 { streams: usize, unique: bool },
}

/// What `explain` printed, in the terms a live run can be compared with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Said {
    /// `answer: ...`: the proxy answers itself.
    pub answer: Option<Answer>,
    /// `backend: NAME`.
    pub backend: Option<String>,
    /// `server: NAME (...)`.
    pub server: Option<String>,
    /// The server is "the pick from a fresh start": any of `usable` may be the live one.
    pub fresh_pick: bool,
    /// `usable: a b c` after the server.
    pub usable: Vec<String>,
    /// `server: none ...`: no server free or usable now.
    pub no_server: Option<String>,
    /// `addresses: src A ...`: the client's address as the rules left it (`set-src`).
    pub src: Option<SocketAddr>,
    /// The request for the server: its request line, then its fields (names lower-cased).
    pub request_line: Option<String>,
    pub head: Option<Vec<(String, String)>>,
}

/// An `answer:` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// `None`: no answer, the connection closes (or a page without a fixed status).
    pub status: Option<u16>,
    /// The termination state, four letters (`PR--`).
    pub state: Option<String>,
    /// The whole line, for what has no status (`the statistics page`, `monitor-uri`).
    pub text: String,
}

impl Said {
    /// Reads `explain`'s report.
    pub fn parse(out: &str) -> Said {
        let after = |p: &str| out.lines().find_map(|l| l.strip_prefix(p)).map(str::to_string);
        let answer = after("answer: ").map(|text| {
            let status = text.split(' ').next().and_then(|s| s.parse().ok());
            let state = text
                .split("termination ")
                .nth(1)
                .and_then(|s| s.split(')').next())
                .map(str::to_string);
            Answer { status, state, text }
        });
        let src = after("addresses: src ").and_then(|a| a.split(' ').next()?.parse().ok());
        let mut said = Said { answer, backend: after("backend: "), src, ..Said::default() };
        if let Some(srv) = after("server: ") {
            if srv.starts_with("none ") {
                said.no_server = Some(srv);
            } else {
                said.server = srv.split(' ').next().map(str::to_string);
                said.fresh_pick = srv.contains("the pick from a fresh start");
                said.usable = srv
                    .split("usable: ")
                    .nth(1)
                    .map(|u| u.trim_end_matches(')').split(' ').map(str::to_string).collect())
                    .unwrap_or_default();
            }
        }
        if let Some(rest) = out.split("request as it goes to the server:\n").nth(1) {
            let mut lines = rest.lines().map(|l| l.strip_prefix("  ").unwrap_or(l));
            said.request_line = lines.next().map(str::to_string);
            said.head = Some(
                lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
                    .collect(),
            );
        }
        said
    }

    /// The termination state of an answer.
    pub fn state(&self) -> Option<&str> {
        self.answer.as_ref()?.state.as_deref()
    }

    /// The status a client gets: the answer's, else the test server's 200.
    pub fn status(&self) -> u16 {
        match &self.answer {
            Some(a) => a.status.unwrap_or(0),
            None => 200,
        }
    }
}

/// The live proxy's `-d` log line for one stream, in HAProxy's `httplog` shape:
/// `ip:port [date] fe be/srv Tq/Tw/Tc/Tr/Ta status bytes cc cs tsc ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub line: String,
    pub backend: String,
    pub server: String,
    pub status: i32,
    pub state: String,
}

impl Logged {
    /// The lines of the streams from client `src` at frontend `fe` that have the `httplog`
    /// shape.
    pub fn find(log: &str, src: SocketAddr, fe: &str) -> Vec<Logged> {
        let who = src.to_string();
        let line = |l: &str| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 10 || w[0] != who || !w[1].starts_with('[') {
                return None;
            }
            if w[2].trim_end_matches('~') != fe {
                return None;
            }
            let (backend, server) = w[3].split_once('/')?;
            let timers = w[4].split('/').count() == 5;
            let (status, state) = (w[5].parse().ok()?, w[9]);
            (timers && state.len() == 4).then(|| Logged {
                line: l.to_string(),
                backend: backend.to_string(),
                server: server.to_string(),
                status,
                state: state.to_string(),
            })
        };
        log.lines().filter_map(line).collect()
    }
}

/// One Fulcrum proxy's cross-check: what the skip rule decided from its configuration, and
/// what was checked so far.
pub struct Checker {
    cfg: PathBuf,
    /// The configuration as the proxy was started with it (rule 7).
    text: String,
    log: Option<PathBuf>,
    /// Frontend `i` of the harness (`{fe<i>}`): the section that binds it, and that
    /// frontend's address (for `--dst`).
    frontends: Vec<(Option<String>, SocketAddr)>,
    /// Why no request of this proxy is checked (rule 2), if so.
    off: Option<&'static str>,
    /// Why only the proxy's first request is checked (rule 3), if so.
    first_only: Option<&'static str>,
    /// Servers' states follow health checks or observed errors (rule 2): requests are checked
    /// until the first change.
    checks: bool,
    /// Why the log line may not be httplog's (then a missing one is no mismatch), if so.
    no_log: Option<&'static str>,
    /// Why the head at the server is not compared, if so.
    no_head: Option<&'static str>,
    /// `http-send-name-header`'s field (lower-cased): it names the server that was tried.
    name_header: Option<String>,
    /// Why a request over HTTP/2 is not checked, if so.
    no_h2: Option<&'static str>,
    /// Why one of several HTTP/2 streams of a connection is not checked, if so.
    no_streams: Option<&'static str>,
    /// `tune.http.maxhdr`: an HTTP/1 head takes one field less, an HTTP/2 one twice as many.
    maxhdr: usize,
    /// Every request: `FULCRUM_TEST_EXPLAIN=all`.
    all: bool,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// Requests sent through the harness, checked or not.
    requests: usize,
    /// The (frontend, request) pairs checked.
    checked: HashSet<(usize, Vec<u8>)>,
    /// Requests whose comparison passed.
    agreed: usize,
    /// Requests to check (see [`Checker::finish`]).
    pending: Vec<Pending>,
}

/// A request to check: the frontend, the client's and the frontend's addresses, the bytes,
/// the live answer's status and the request head a test server echoed, if it did.
struct Pending {
    frontend: String,
    src: SocketAddr,
    dst: SocketAddr,
    raw: Vec<u8>,
    /// It came over HTTP/2 (`raw` is its HTTP/1.1 equivalent, [`h1_of_h2`]): its request line
    /// as the log shows it, which tells its log line from its connection's other streams'.
    h2: Option<String>,
    status: u16,
    echoed: Option<Head>,
}

/// Why a check failed: the reason and the live log line, if it was found.
type Mismatch = Box<(String, Option<Logged>)>;

impl Checker {
    /// The check for a Fulcrum proxy started from `text` (written at `cfg`) with the harness's
    /// frontends at `addrs` (`{fe<i>}` became `fd@<3+i>`), logging into `log`; `None` when
    /// `FULCRUM_TEST_EXPLAIN=off`.
    pub fn new(
        cfg: &Path,
        text: &str,
        addrs: &[SocketAddr],
        log: Option<PathBuf>,
    ) -> Option<Checker> {
        let mode = std::env::var("FULCRUM_TEST_EXPLAIN").unwrap_or_default();
        (mode != "off").then(|| Checker::with(cfg, text, addrs, log, mode == "all"))
    }

    /// The check of a proxy whatever `FULCRUM_TEST_EXPLAIN` says (`all`: every eligible
    /// request), for the tests that are about it.
    pub fn with(
        cfg: &Path,
        text: &str,
        addrs: &[SocketAddr],
        log: Option<PathBuf>,
        all: bool,
    ) -> Checker {
        let lines: Vec<Vec<&str>> = words(text);
        let frontends = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| (binding(&lines, &format!("fd@{}", 3 + i)), *a))
            .collect();
        let name_header = lines
            .iter()
            .find(|w| w[0] == "http-send-name-header")
            .map(|w| w.get(1).unwrap_or(&"x-server-name").to_ascii_lowercase());
        Checker {
            cfg: cfg.to_path_buf(),
            text: text.to_string(),
            log,
            frontends,
            off: ruled_out(&lines),
            first_only: first_only(text),
            checks: checked(&lines),
            no_log: no_log(&lines),
            no_head: no_head(text, &lines),
            name_header,
            no_h2: no_h2(text),
            no_streams: no_streams(text),
            maxhdr: lines
                .iter()
                .find(|w| w[0] == "tune.http.maxhdr")
                .and_then(|w| w.get(1)?.parse().ok())
                .unwrap_or(101),
            all,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Cross-checks one answered request: `raw` sent to harness frontend `fe` from `src`,
    /// as the first request of its connection or not (`first`); `live` the live answer.
    pub fn check(&self, fe: usize, src: SocketAddr, raw: &[u8], first: bool, live: Live<'_>) {
        self.take(fe, src, Some(raw), Via::H1 { first }, live);
    }

    /// Records a request for [`Checker::finish`] unless the skip rule leaves it out: `raw`, or
    /// for an HTTP/2 request its HTTP/1.1 equivalent if it has one.
    fn take(&self, fe: usize, src: SocketAddr, raw: Option<&[u8]>, via: Via, live: Live<'_>) {
        let Some((Some(frontend), dst)) = self.frontends.get(fe).cloned() else {
            return self.note("no frontend section binds the harness's socket");
        };
        let raw = match self.skip(fe, raw, via) {
            Err(why) => return self.note(why),
            Ok(raw) => raw.to_vec(),
        };
        let echoed = live.served.and_then(Head::parse);
        let h2 = matches!(via, Via::H2 { .. }).then(|| {
            let line = raw.split(|&b| b == b'\r').next().unwrap_or_default();
            let line = String::from_utf8_lossy(line);
            format!("\"{} HTTP/2.0\"", line.trim_end_matches(" HTTP/1.1"))
        });
        let p = Pending { frontend, src, dst, raw, h2, status: live.status, echoed };
        self.seen().pending.push(p);
    }

    /// Runs the checks recorded so far, panicking at the first mismatch. The harnesses run
    /// them as the proxy's test ends (the proxy's handle dropped, the proxy still up), so that
    /// no `explain` run adds to what a test times.
    pub fn finish(&self) {
        let pending = std::mem::take(&mut self.seen().pending);
        let rewritten = self.rewritten();
        for p in pending {
            match rewritten {
                Some(why) => self.note(why),
                None => self.run(&p),
            }
        }
    }

    /// Lets [`sent`] and [`sent_h2`] find this check by its frontends' addresses, until
    /// [`Checker::stop`] or its last `Arc` is gone.
    pub fn start(self: &Arc<Self>) {
        let mut running = running();
        running.retain(|c| c.strong_count() > 0);
        running.push(Arc::downgrade(self));
    }

    /// [`sent`] and [`sent_h2`] no longer find this check (its proxy is going away).
    pub fn stop(self: &Arc<Self>) {
        running().retain(|c| c.strong_count() > 0 && !std::ptr::eq(c.as_ptr(), Arc::as_ptr(self)));
    }

    /// Rule 7: the configuration file holds another text than the proxy started with (one
    /// that cannot be read is left to `explain` to report).
    fn rewritten(&self) -> Option<&'static str> {
        let now = std::fs::read_to_string(&self.cfg).ok()?;
        (now != self.text).then_some("the configuration file was rewritten (a reload)")
    }

    /// Rule 2: a server's state changed since the proxy started, as its stderr says (or that
    /// cannot be read).
    fn state_changed(&self) -> bool {
        let Some(text) = self.log.as_ref().and_then(|l| std::fs::read_to_string(l).ok()) else {
            return true;
        };
        text.lines().any(changes_state)
    }

    /// Appends what became of a request to `FULCRUM_TEST_EXPLAIN_LOG`'s file, when set.
    fn note(&self, what: &str) {
        if let Ok(path) = std::env::var("FULCRUM_TEST_EXPLAIN_LOG") {
            let line = format!("{} {what}\n", self.cfg.display());
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
            let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }

    /// How many requests were compared and agreed (the recorded ones run first).
    pub fn agreed(&self) -> usize {
        self.finish();
        self.seen().agreed
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `explain` on a recorded request and compares.
    fn run(&self, p: &Pending) {
        let (code, out, err) = self.explain(&p.frontend, p.src, p.dst, &p.raw);
        let said = (code == 0).then(|| Said::parse(&out));
        let compared = match &said {
            Some(said) => self.compare(said, p).map(|what| {
                format!("checked{}: {what}", if p.h2.is_some() { " (HTTP/2)" } else { "" })
            }),
            None if err.contains("is not in mode http") => {
                Ok("a mode tcp frontend: explain runs the HTTP analysers only".to_string())
            }
            None => Err(Box::new(("explain failed".to_string(), None))),
        };
        let what = compared.unwrap_or_else(|mismatch| {
            let (why, logged) = *mismatch;
            panic!(
                "explain disagrees with the live proxy: {why}\nrequest: {}\nconfiguration: {}\n\
                 --- explain (exit {code}):\n{out}{err}--- live: status {}, log line: {}\n",
                p.raw.escape_ascii(),
                self.cfg.display(),
                p.status,
                logged.as_ref().map_or("(none)", |l| l.line.as_str())
            )
        });
        self.note(&what);
        self.seen().agreed += 1;
    }

    /// The request to give `explain`, or why the skip rule leaves it out (see the module
    /// doc); counts it.
    fn skip<'r>(&self, fe: usize, raw: Option<&'r [u8]>, via: Via) -> Result<&'r [u8], &str> {
        let mut seen = self.seen();
        let earlier = seen.requests;
        seen.requests += 1;
        if let Some(why) = self.off.or_else(|| self.rewritten()) {
            return Err(why);
        }
        if self.checks && self.state_changed() {
            return Err("a server's state changed (health checks, observed errors) before it");
        }
        if let Some(why) = self.first_only.filter(|_| earlier > 0) {
            return Err(why);
        }
        match via {
            Via::H1 { first: false } => return Err("not the first request of its connection"),
            Via::H2 { .. } if self.no_h2.is_some() => return Err(self.no_h2.unwrap_or_default()),
            Via::H2 { streams: 2.., unique: false } => {
                return Err("an HTTP/2 stream whose request line another of its connection repeats")
            }
            Via::H2 { streams: 2.., .. } if self.no_streams.is_some() => {
                return Err(self.no_streams.unwrap_or_default())
            }
            _ => {}
        }
        let Some(raw) = raw else {
            return Err("an HTTP/2 request without an HTTP/1.1 equivalent here (a host field, \
                        trailers after a length, a tunnel)");
        };
        if !eligible(raw) {
            return Err("not one complete HTTP/1 request, or a tunnel");
        }
        let fields = || raw.split(|&b| b == b'\n').take_while(|l| *l != b"\r").count() - 1;
        if matches!(via, Via::H2 { .. }) && fields() >= self.maxhdr {
            return Err("an HTTP/2 head of more fields than an HTTP/1 one takes (explain parses \
                        HTTP/1)");
        }
        if !self.all && seen.checked.len() >= PER_PROXY {
            return Err("enough requests checked on this proxy");
        }
        if !seen.checked.insert((fe, raw.to_vec())) {
            return Err("the same request was checked");
        }
        Ok(raw)
    }

    /// What `explain` said beside the live answer and log line; what was compared.
    fn compare(&self, said: &Said, p: &Pending) -> Result<&'static str, Mismatch> {
        let (fe, status) = (p.frontend.as_str(), p.status);
        let echoed = p.echoed.as_ref().map(|e| (e, p.h2.is_some()));
        let fail =
            |why: &str, logged: Option<&Logged>| Err(Box::new((why.to_string(), logged.cloned())));
        if let Some(a) = &said.answer {
            // Pages whose status depends on more than the analysers (authentication).
            if a.text.contains("statistics page") || a.text.contains("mode tcp backend") {
                return Ok("nothing (a page or a mode tcp backend)");
            }
            if a.status != Some(status) {
                return fail("not the same status", None);
            }
            if a.text.contains("not logged") {
                return Ok("the status");
            }
        }
        let logged = match self.logged(said.src.ok_or(p.src), fe, p.h2.as_deref()) {
            Line::Found(l) => l,
            Line::Missing => return fail("no log line for the request", None),
            Line::Unread if said.answer.is_some() => return Ok("the status (no log line read)"),
            Line::Unread => {
                return match self.same_head(said, None, echoed) {
                    Ok(true) => Ok("the head at the server (no log line read)"),
                    Ok(false) => Ok("nothing (no log line read, no head echoed)"),
                    Err(why) => fail(&why, None),
                }
            }
        };
        let l = Some(&logged);
        if let Some(a) = &said.answer {
            let state = a.state.as_deref().unwrap_or("").get(..2);
            if state != logged.state.get(..2) {
                return fail("not the same termination state", l);
            }
            return Ok("the status, the termination state");
        }
        if said.backend.as_deref() != Some(logged.backend.as_str()) {
            return fail("not the same backend", l);
        }
        // The analysers let the request through: the live proxy must not have ended it
        // itself before a server was asked.
        let phase = &logged.state[1..2];
        if logged.state.starts_with(['P', 'R', 'I', 'L']) && matches!(phase, "R" | "T") {
            return fail("the live proxy ended the request before the server", l);
        }
        // No server is free or usable from a fresh start; or live, the request waited in the
        // queue (phase `Q`) for servers other requests held, which explain never sees.
        if said.no_server.is_some() || phase == "Q" {
            return Ok("the backend");
        }
        let server = said.server.as_deref().unwrap_or("");
        let same = if said.fresh_pick {
            said.usable.contains(&logged.server)
        } else {
            logged.server == server
        };
        if !same {
            return fail("not the same server", l);
        }
        match self.same_head(said, Some(&logged), echoed) {
            Ok(true) => Ok("the backend, the server, the head at the server"),
            Ok(false) => Ok("the backend, the server"),
            Err(why) => fail(&why, l),
        }
    }

    /// Runs `explain` for a request from `src` to `dst` at `frontend` (the request on its
    /// standard input: it may hold any byte, and be long).
    fn explain(
        &self,
        frontend: &str,
        src: SocketAddr,
        dst: SocketAddr,
        raw: &[u8],
    ) -> (i32, String, String) {
        let (src, dst) = (src.to_string(), dst.to_string());
        let cfg = self.cfg.to_string_lossy();
        let args =
            ["explain", "-f", &cfg, "--frontend", frontend, "--src", &src, "--dst", &dst, "-"];
        let mut child = Command::new(crate::harness::BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run fulcrum explain");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(raw).expect("request to explain");
        drop(stdin);
        let out = child.wait_with_output().expect("explain's output");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The live log line of the stream from `src` at `fe` (it comes as the stream ends, just
    /// after the answer was read): `Err`, the connection's address, whose first stream is the
    /// request's (its later ones log after it); `Ok`, an address the rules set. `h2`: the
    /// request line an HTTP/2 stream's line shows (its connection's streams end in any order).
    fn logged(&self, src: Result<SocketAddr, SocketAddr>, fe: &str, h2: Option<&str>) -> Line {
        let Some(path) = &self.log else { return Line::Unread };
        // Under formats of the configuration's own, a frontend may still log httplog's lines:
        // looked for once (the checks run as the test ends), and none is no mismatch.
        let wait = if self.no_log.is_some() { 0 } else { 3000 };
        let (Ok(addr) | Err(addr)) = src;
        let mut found = Vec::new();
        eventually(Duration::from_millis(wait), || {
            found = Logged::find(&std::fs::read_to_string(path).unwrap_or_default(), addr, fe);
            found.retain(|l| h2.is_none_or(|r| l.line.ends_with(r)));
            !found.is_empty()
        });
        match found.len() {
            0 if self.no_log.is_some() => Line::Unread,
            0 => Line::Missing,
            1 => Line::Found(found.remove(0)),
            // Rules gave several streams the same address (`set-src-port int(4242)`).
            _ if src.is_ok() => Line::Unread,
            _ => Line::Found(found.remove(0)),
        }
    }

    /// When the test server echoed the request head: the same request line and fields
    /// (whether they were compared). `echoed`: that head, and whether the request came over
    /// HTTP/2 (its request line then differs by design: explain's keeps the absolute URI the
    /// analysers saw, the server gets the origin form). `logged`: the live line, naming the
    /// server that was tried last.
    fn same_head(
        &self,
        said: &Said,
        logged: Option<&Logged>,
        echoed: Option<(&Head, bool)>,
    ) -> Result<bool, String> {
        let (Some(line), Some(fields)) = (&said.request_line, &said.head) else {
            return Ok(false);
        };
        let target = line.split(' ').nth(1).unwrap_or("");
        let Some((live, h2)) = echoed.filter(|_| self.no_head.is_none() && echoes(target)) else {
            return Ok(false);
        };
        let live_line = format!("{} {} {}", live.method, live.target, live.version);
        if *line != live_line && !h2 {
            return Err(format!("not the same request line: {line:?} / {live_line:?}"));
        }
        // `http-send-name-header` names the server tried: explain's is the pick from a fresh
        // start, the live one may be another (another pick, a retry): that field is left out.
        let mut fields = fields.clone();
        let mut live_fields = live.headers.clone();
        let tried = logged.map(|l| l.server.as_str());
        if let Some(name) = self.name_header.as_ref().filter(|_| said.server.as_deref() != tried) {
            fields.retain(|(n, _)| n != name);
            live_fields.retain(|(n, _)| n != name);
        }
        if fields != live_fields {
            return Err(format!(
                "not the same head at the server:\n  explain: {fields:?}\n  \
                 live:    {live_fields:?}",
            ));
        }
        Ok(true)
    }
}

/// The checks of the proxies running now, for [`sent`] and [`sent_h2`] (one that is gone,
/// its proxy's handle dropped, no longer counts).
fn running() -> std::sync::MutexGuard<'static, Vec<Weak<Checker>>> {
    static RUNNING: Mutex<Vec<Weak<Checker>>> = Mutex::new(Vec::new());
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request a harness helper sent alone on a new connection from `src` to `dst`, and the
/// live answer: checked when `dst` is a harness frontend of a running proxy whose check
/// started ([`Checker::start`]), else nothing.
pub fn sent(dst: SocketAddr, src: SocketAddr, raw: &[u8], live: Live<'_>) {
    if let Some((check, fe)) = listening(dst) {
        check.check(fe, src, raw, true, live);
    }
}

/// The running proxy's check whose harness frontend `fe` is `dst`: (check, fe).
fn listening(dst: SocketAddr) -> Option<(Arc<Checker>, usize)> {
    running().iter().find_map(|c| {
        let check = c.upgrade()?;
        let fe = check.frontends.iter().position(|(_, a)| *a == dst)?;
        Some((check, fe))
    })
}

/// A request the harness's HTTP/2 client sent from `src` to `dst`, one of `streams` on its
/// connection, whose request line no other of them repeats (`unique`) or not, and the live
/// answer: checked as its HTTP/1.1 equivalent ([`h1_of_h2`]) when `dst` is a harness
/// frontend of a running proxy whose check started.
pub fn sent_h2(
    dst: SocketAddr,
    src: SocketAddr,
    req: &H2Req,
    (streams, unique): (usize, bool),
    resp: &H2Resp,
) {
    let Some((check, fe)) = listening(dst) else { return };
    let raw = h1_of_h2(req, &dst.to_string());
    let served = resp.header("x-server").is_some().then_some(&resp.body[..]);
    let live = Live { status: resp.status, served };
    check.take(fe, src, raw.as_deref(), Via::H2 { streams, unique }, live);
}

/// The HTTP/1.1 request Fulcrum's analysers see for an HTTP/2 one (`RequestHead::write` in
/// `src/http/h2/view.rs`, as HAProxy makes it): the absolute URI of `:scheme`, `:authority`
/// (the scheme's default port dropped) and `:path`; `:authority` as `host`, first; the fields
/// as the client sent them (the `http` crate's order: by name, in the order each name came
/// first), the cookies joined last; `transfer-encoding: chunked` for a body without
/// `content-length`; then the body, and in its last chunk the trailers. `None` where it
/// cannot be said here: a `host` field, trailers after a body of a known length, a tunnel
/// (`CONNECT`).
pub fn h1_of_h2(req: &H2Req, authority: &str) -> Option<Vec<u8>> {
    if req.method == "CONNECT" {
        return None;
    }
    let uri = req.uri(authority);
    let (scheme, rest) = uri.split_once("://")?;
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(at);
    let bare = match scheme {
        "http" => authority.strip_suffix(":80"),
        "https" => authority.strip_suffix(":443"),
        _ => None,
    };
    let authority = bare.unwrap_or(authority);
    let path = if path.is_empty() { "/" } else { path };
    let mut names: Vec<String> = Vec::new();
    for (n, _) in &req.headers {
        let n = n.to_ascii_lowercase();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    if names.iter().any(|n| n == "host") {
        return None;
    }
    let values = |name: &str| {
        let same = |n: &&(&str, String)| n.0.eq_ignore_ascii_case(name);
        req.headers.iter().filter(same).map(|(_, v)| v.clone()).collect::<Vec<_>>()
    };
    let mut head =
        format!("{} {scheme}://{authority}{path} HTTP/1.1\r\nhost: {authority}\r\n", req.method);
    for n in names.iter().filter(|n| *n != "cookie") {
        for v in values(n) {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
    }
    let cookies = values("cookie");
    if !cookies.is_empty() {
        head.push_str(&format!("cookie: {}\r\n", cookies.join("; ")));
    }
    let chunked = req.body.is_some() && !names.iter().any(|n| n == "content-length");
    if !chunked && !req.trailers.is_empty() {
        return None;
    }
    if chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    match &req.body {
        Some(b) if chunked => {
            if !b.is_empty() {
                raw.extend_from_slice(format!("{:x}\r\n", b.len()).as_bytes());
                raw.extend_from_slice(b);
                raw.extend_from_slice(b"\r\n");
            }
            raw.extend_from_slice(b"0\r\n");
            for (n, v) in &req.trailers {
                raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
            }
            raw.extend_from_slice(b"\r\n");
        }
        Some(b) => raw.extend_from_slice(b),
        None => {}
    }
    Some(raw)
}

/// The live log line of a request.
enum Line {
    Found(Logged),
    /// None came.
    Missing,
    /// Not to be read: no log file, a format of the configuration's own, several lines for
    /// an address the rules set.
    Unread,
}

/// The test server echoes the request head for this target.
fn echoes(target: &str) -> bool {
    use fulcrum_testserver::http::{parse_query, Echo};
    parse_query(target.as_bytes()).is_some_and(|a| matches!(a.echo, Echo::Head | Echo::All))
}

/// The configuration's lines as words, comments and blank lines left out.
fn words(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").split_whitespace().collect::<Vec<_>>())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The frontend (or `listen`) whose `bind` line names `addr`.
fn binding(lines: &[Vec<&str>], addr: &str) -> Option<String> {
    let mut section = None;
    for w in lines {
        match w[0] {
            "frontend" | "listen" => section = w.get(1).map(|s| s.to_string()),
            "global" | "defaults" | "backend" | "peers" | "resolvers" | "userlist" | "cache"
            | "program" | "http-errors" | "ring" | "log-forward" | "mailers" => section = None,
            "bind" if w.get(1) == Some(&addr) => return section,
            _ => {}
        }
    }
    None
}

/// Rule 2: what in a configuration lets live state drift from it; the reason.
pub fn ruled_out(lines: &[Vec<&str>]) -> Option<&'static str> {
    for w in lines {
        match (w[0], w.get(1).copied()) {
            ("stats", Some("socket")) => {
                return Some("a runtime API can change servers, maps, ACLs, tables, variables")
            }
            ("stats", Some("admin")) => return Some("the stats page's admin form changes servers"),
            ("load-server-state-from-file", _) => {
                return Some("the servers' states at start come from a saved file")
            }
            ("filter", Some("spoe")) => {
                return Some("a SPOE agent's answers set variables explain cannot know offline")
            }
            ("server" | "default-server", _) if w.contains(&"agent-check") => {
                return Some("agent checks change the servers' weights and states")
            }
            _ if w.iter().any(|x| x.contains("rand"))
                && (w[0] == "acl" || w.iter().any(|x| matches!(*x, "if" | "unless"))) =>
            {
                return Some("a condition drawn by chance (rand)")
            }
            _ => {}
        }
    }
    None
}

/// Rule 2: servers whose states follow health checks or observed errors (`check`, `track`,
/// `observe`): each change is a line on the proxy's stderr ([`changes_state`]).
pub fn checked(lines: &[Vec<&str>]) -> bool {
    lines.iter().any(|w| {
        matches!(w[0], "server" | "default-server")
            && w.iter().any(|x| matches!(*x, "check" | "track" | "observe"))
    })
}

/// A line of the proxy's stderr that says a server changed state: `[WARNING]  (pid) : Server
/// be/s1 is DOWN, reason: ...`, `Backup Server be/b is UP`, `Server be/s1 was DOWN and now
/// enters maintenance`... (not a check's report, `Health check for server be/s1 failed`).
pub fn changes_state(line: &str) -> bool {
    line.split("Server ").skip(1).any(|rest| {
        let (name, after) = rest.split_once(' ').unwrap_or((rest, ""));
        name.contains('/') && ["is ", "enters ", "was "].iter().any(|p| after.starts_with(p))
    })
}

/// Rule 3: what makes decisions read state that requests accumulate; the reason.
pub fn first_only(text: &str) -> Option<&'static str> {
    const TABLES: &[&str] = &[
        "stick-table",
        "stick ",
        "track-sc",
        "sc-",
        "sc_",
        "sc0_",
        "sc1_",
        "sc2_",
        "table_",
        "src_conn",
        "src_sess",
        "src_http",
        "src_bytes",
        "src_kbytes",
        "src_gp",
        "src_get_gp",
        "src_inc_gp",
        "src_clr_gp",
    ];
    const COUNTERS: &[&str] = &[
        "_rate",
        "_cur",
        "conn_cnt",
        "sess_cnt",
        "req_cnt",
        "err_cnt",
        "fe_conn",
        "be_conn",
        "srv_conn",
        "connslots",
        "queue(",
    ];
    let text: String = text.lines().map(|l| l.split('#').next().unwrap_or("")).collect();
    if TABLES.iter().any(|w| text.contains(w)) {
        Some("stick tables fill as requests pass")
    } else if COUNTERS.iter().any(|w| text.contains(w)) {
        Some("counters and rates grow as requests pass")
    } else if text.contains("proc.") {
        Some("proc. variables outlive requests")
    } else if text.contains("cache-use") {
        Some("a cache fills as responses pass (explain sees it empty)")
    } else {
        None
    }
}

/// What may give the live log line another shape than httplog's; the reason.
pub fn no_log(lines: &[Vec<&str>]) -> Option<&'static str> {
    if lines.iter().any(|w| w[0] == "log-format" || w[0] == "error-log-format") {
        return Some("the configuration's own log format: the line is not httplog's");
    }
    if lines.iter().any(|w| w[..] == ["option", "httplog", "clf"] || w[..] == ["option", "tcplog"])
    {
        return Some("option httplog clf or option tcplog: the line is not httplog's");
    }
    None
}

/// What makes the head at the server differ from run to run, or unreadable; the reason.
pub fn no_head(text: &str, lines: &[Vec<&str>]) -> Option<&'static str> {
    const UNSTABLE: &[&str] = &[
        "rand",
        "uuid",
        "date",
        "unique-id",
        "%t",
        "%T",
        "%pid",
        "%rt",
        "fc_rtt",
        "fc_unacked",
        "fc_sacked",
        "fc_lost",
        "fc_retrans",
        "fc_fackets",
        "fc_reordering",
    ];
    if lines.iter().any(|w| matches!(w[0], "server" | "default-server") && w.contains(&"h2")) {
        Some("an HTTP/2 server: its echo is not the HTTP/1 head explain prints")
    } else if UNSTABLE.iter().any(|u| text.contains(u)) {
        Some("fields made from time, randomness or the live socket's TCP_INFO")
    } else {
        None
    }
}

/// What makes a request over HTTP/2 decide otherwise than its HTTP/1.1 equivalent; the reason.
pub fn no_h2(text: &str) -> Option<&'static str> {
    const VERSION: &[&str] = &["req.ver", "req_ver", "http_major", "%HV", "%r"];
    VERSION
        .iter()
        .any(|v| text.contains(v))
        .then_some("the configuration reads the HTTP version: 2.0 live, 1.1 in explain")
}

/// Rule 4: what makes a stream of an HTTP/2 connection decide otherwise beside others than
/// alone; the reason.
pub fn no_streams(text: &str) -> Option<&'static str> {
    (text.contains("sess.") || text.contains("http_first_req"))
        .then_some("one of several HTTP/2 streams, which share their connection's sess. variables")
}

/// Rule 5: `raw` is exactly one complete HTTP/1.x request, neither `CONNECT` nor an upgrade.
pub fn eligible(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let Ok(head) = std::str::from_utf8(&raw[..end]) else { return false };
    let mut lines = head.split("\r\n");
    let line: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    if line.len() != 3 || !line[2].starts_with("HTTP/1.") || line[0] == "CONNECT" {
        return false;
    }
    let (mut length, mut chunked) = (None, false);
    for l in lines {
        let Some((n, v)) = l.split_once(':') else { return false };
        let v = v.trim();
        match n.to_ascii_lowercase().as_str() {
            "content-length" => length = v.parse::<usize>().ok(),
            "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
            "upgrade" => return false,
            _ => {}
        }
    }
    let body = &raw[end + 4..];
    match (chunked, length) {
        (true, _) => chunked_len(body) == Some(body.len()),
        (false, Some(n)) => body.len() == n,
        (false, None) => body.is_empty(),
    }
}

/// The length of a complete chunked body at the start of `b` (trailers included).
fn chunked_len(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let eol = at + b[at..].windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&b[at..eol]).ok()?.split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        at = eol + 2;
        if size == 0 {
            // Trailer fields, then the empty line.
            loop {
                let eol = at + b[at..].windows(2).position(|w| w == b"\r\n")?;
                let empty = eol == at;
                at = eol + 2;
                if empty {
                    return Some(at);
                }
            }
        }
        at += size;
        if b.get(at..at + 2)? != b"\r\n" {
            return None;
        }
        at += 2;
    }
}

#[test]
fn the_skip_rule_reads_configurations_and_requests() {
    let lines = |t: &'static str| words(t);
    assert!(ruled_out(&lines("global\n stats socket /x level admin\n")).is_some());
    assert!(ruled_out(&lines("backend b\n server s1 1.2.3.4:80 agent-check\n")).is_some());
    assert!(checked(&lines("backend b\n server s1 1.2.3.4:80 check inter 1s\n")));
    assert!(!checked(&lines("backend b\n server s1 1.2.3.4:80 # check\n")));
    let down = "[WARNING]  (7) : Server be/s1 is DOWN, reason: Layer4 connection problem";
    assert!(changes_state(down) && changes_state("[WARNING]  (7) : Backup Server be/b is UP"));
    assert!(!changes_state("[WARNING]  (7) : Health check for server be/s1 failed, reason: x"));
    assert!(first_only("backend b\n stick-table type ip size 1\n").is_some());
    assert!(first_only("frontend f\n acl a fe_req_rate gt 3\n").is_some());
    assert!(first_only("frontend f\n acl a path /x\n").is_none());
    assert!(first_only("backend b\n http-request cache-use c\n").is_some());
    assert!(ruled_out(&lines("defaults\n load-server-state-from-file global\n")).is_some());
    assert!(no_log(&lines("defaults\n option httplog clf\n")).is_some());
    assert!(no_log(&lines("defaults\n option httplog\n")).is_none());
    assert!(no_h2("frontend f\n http-request deny if { req.ver 2.0 }\n").is_some());
    assert!(no_streams("frontend f\n http-request set-var(sess.a) path\n").is_some());
    let fe = lines("frontend a\n bind fd@3\nlisten b\n bind fd@4\nbackend c\n");
    assert_eq!(binding(&fe, "fd@4").as_deref(), Some("b"));
    assert_eq!(binding(&fe, "fd@5"), None);
    assert!(eligible(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    assert!(!eligible(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\n\r\n"));
    assert!(eligible(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"));
    assert!(!eligible(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\na"));
    assert!(eligible(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"));
    assert!(!eligible(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n"));
    assert!(!eligible(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    assert!(!eligible(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"));
    let log = "127.0.0.1:5 [29/Nov/2026:01:26:24.264] fe b/s1 0/0/0/0/0 200 172 - - ---- \
               1/1/0/0/0 0/0 \"GET / HTTP/1.1\"\n";
    let found = Logged::find(log, "127.0.0.1:5".parse().expect("addr"), "fe");
    let l = &found[0];
    assert_eq!((l.backend.as_str(), l.server.as_str(), l.status), ("b", "s1", 200));
    assert!(Logged::find(log, "127.0.0.1:6".parse().expect("addr"), "fe").is_empty());
    assert!(Logged::find(log, "127.0.0.1:5".parse().expect("addr"), "other").is_empty());
}

#[test]
fn an_http2_request_is_explained_as_the_http1_request_its_analysers_see() {
    let req = H2Req::post("/p?q", b"hi")
        .header("cookie", "a=1")
        .header("x-b", "1")
        .header("cookie", "b=2")
        .header("X-B", "2");
    let raw = h1_of_h2(&req, "127.0.0.1:80").expect("an equivalent");
    let want = "POST http://127.0.0.1/p?q HTTP/1.1\r\nhost: 127.0.0.1\r\nx-b: 1\r\nx-b: 2\r\n\
                cookie: a=1; b=2\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
    assert_eq!(raw.escape_ascii().to_string(), want.as_bytes().escape_ascii().to_string());
    let sized = H2Req::post("/", b"hi").header("content-length", "2").origin("https://a:443");
    let raw = h1_of_h2(&sized, "127.0.0.1:81").expect("an equivalent");
    let want = "POST https://a/ HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\nhi";
    assert_eq!(raw, want.as_bytes());
    let trailers = H2Req::post("/", b"").trailer("x-t", "1");
    let raw = h1_of_h2(&trailers, "127.0.0.1:81").expect("an equivalent");
    assert!(raw.ends_with(b"transfer-encoding: chunked\r\n\r\n0\r\nx-t: 1\r\n\r\n"));
    assert!(eligible(&raw));
    assert_eq!(h1_of_h2(&sized.trailer("x-t", "1"), "127.0.0.1:81"), None);
    assert_eq!(h1_of_h2(&H2Req::get("/").header("host", "h"), "127.0.0.1:81"), None);
}

#[test]
fn a_difference_between_explain_and_the_live_proxy_is_a_mismatch() {
    let dir = crate::harness::scratch("crosscheck-mismatch");
    let log = dir.join("log");
    let line = "127.0.0.1:5 [29/Nov/2026:01:26:24.264] fe b/s2 0/0/0/0/0 200 172 - - ---- \
                1/1/0/0/0 0/0 \"GET / HTTP/1.1\"\n";
    std::fs::write(&log, line).expect("write the log");
    let addr = "127.0.0.1:80".parse().expect("addr");
    let c = Checker::with(&dir.join("cfg"), "frontend fe\n bind fd@3\n", &[addr], Some(log), true);
    let src = "127.0.0.1:5".parse().expect("addr");
    let live = |src: SocketAddr, status: u16| Pending {
        frontend: "fe".into(),
        src,
        dst: addr,
        raw: Vec::new(),
        h2: None,
        status,
        echoed: None,
    };
    let forwards = |server: &str, why: &str| {
        Said::parse(&format!("backend: b\nserver: {server} ({why}; usable: s1 s2)\n"))
    };
    let (hash, fresh) = ("balance uri, from the request", "the pick from a fresh start");
    assert!(c.compare(&forwards("s2", hash), &live(src, 200)).is_ok());
    let (why, logged) = *c.compare(&forwards("s1", hash), &live(src, 200)).expect_err("s1 / s2");
    assert_eq!(
        (why.as_str(), logged.map(|l| l.server)),
        ("not the same server", Some("s2".into()))
    );
    assert!(c.compare(&forwards("s1", fresh), &live(src, 200)).is_ok());
    let other = Said::parse("backend: c\nserver: s2 (balance uri, from the request; usable: s2)\n");
    assert!(c.compare(&other, &live(src, 200)).is_err());
    let denied = Said::parse("answer: 403 Forbidden (termination PR--)\n");
    assert!(c.compare(&denied, &live(src, 200)).is_err(), "not the same status");
    assert!(c.compare(&denied, &live(src, 403)).is_err(), "---- is not PR--");
    // A recorded request is checked at `finish`: here explain cannot read the configuration.
    c.check(0, src, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", true, Live { status: 200, served: None });
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.finish()));
    assert!(finished.is_err(), "explain failed: a mismatch");
    // No log line for another client: a mismatch too (once the wait for it is over).
    let elsewhere = "127.0.0.1:6".parse().expect("addr");
    assert!(c.compare(&forwards("s2", hash), &live(elsewhere, 200)).is_err());
}
