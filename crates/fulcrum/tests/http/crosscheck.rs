//! The harness's cross-check of `fulcrum explain` against a live Fulcrum (issue 36 §2: explain
//! shares the analysers' code, so it must say what the live proxy did).
//!
//! Owns: which requests are checked ([`Checker`]: the skip rule below), running `explain` on
//! them (same configuration file, `--frontend` the section binding the harness frontend,
//! `--src` the client's real address, `--dst` the frontend's), reading what it printed
//! ([`Said`]), finding the live proxy's `-d` log line for the same stream ([`Logged`]: by
//! client address and frontend) and comparing. `px.rs` calls [`Checker::check`] after a
//! Fulcrum proxy answered a request sent through its helpers (`Px::send`, `get`, `get_with`,
//! `Client::request`/`try_request`), which records it, and [`Checker::finish`] as the proxy's
//! test ends (its `Px` dropped, the proxy still up), which runs `explain` on what was recorded
//! and compares: no `explain` run adds to what a test times. A mismatch panics with both
//! sides.
//!
//! Compared, for what both can know:
//! - explain answers (deny, redirect, return, tarpit, a parser refusal, no backend, an invalid
//!   chunked body): the status, and the termination state's two letters from the log line;
//! - explain forwards: the log line's backend; its server, exactly when explain's pick
//!   follows from the request (hash, persistence, cookies), else only that it is one of the
//!   usable servers explain lists (roundrobin, leastconn, first, random: "the pick from a
//!   fresh start"); that the live proxy did not end the request itself before a server (a
//!   termination state of cause P/R/I/L in phase R or T); and, when the test server echoed
//!   the request head (`/echo`, `echo=head|all|1`), its request line and fields.
//!
//! The skip rule. A request is checked only while the proxy's live state can still be the one
//! its configuration gives, and only when the request is one explain takes as it stands:
//! 1. The proxy is Fulcrum (HAProxy has no `explain`); `FULCRUM_TEST_EXPLAIN` is not `off`.
//! 2. Nothing in the configuration changes live state on its own, lets the test change it, or
//!    decides by chance ([`ruled_out`]): a runtime API (`stats socket`: servers, maps, ACLs,
//!    tables, variables), the stats page's admin form (`stats admin`), health or agent checks
//!    and observed errors (`check`, `agent-check`, `track`, `observe` on a server line: the
//!    servers' states then follow timing), `rand` in a condition. No request of such a proxy
//!    is checked. (A server a test stopped needs no rule: the log line still names the
//!    server tried, and a failed connection is not the analysers' decision.)
//! 3. Where decisions read state that requests accumulate ([`first_only`]: stick tables and
//!    their counters, `proc.` variables, the proxies' and servers' counters, rates and
//!    queues), only the proxy's first request through the harness: until then they are as
//!    empty as explain's.
//! 4. Only the first request of each connection: later ones may read `sess.` variables and
//!    the connection's counters, which explain starts empty.
//! 5. The bytes are exactly one complete HTTP/1.x request (the head and the body its framing
//!    announces: no HTTP/2 preface, nothing pipelined, nothing missing) and not a tunnel
//!    (`CONNECT`, `Upgrade`: the log line comes only when the tunnel ends).
//! 6. At most [`PER_PROXY`] distinct requests per proxy (`FULCRUM_TEST_EXPLAIN=all`: all of
//!    them); a table test sends hundreds through one proxy.
//!
//! Parts of a check are left out where the live side cannot be read or differs by design:
//! - the log line ([`no_log`]) under the configuration's own `log-format`, where several
//!   streams logged the client address the rules set (`set-src-port int(4242)`);
//! - the head ([`no_head`]) when a server speaks HTTP/2 (its echo is not an HTTP/1 head) or a
//!   field is made from time or chance (`date`, `rand`, `uuid`, `unique-id`, `%t`...);
//!   `http-send-name-header`'s field when the live server is not explain's fresh pick;
//! - the server when the live request waited in the queue (phase `Q`: other requests held
//!   the servers, which explain never sees), or explain finds none free or usable.
//!
//! `FULCRUM_TEST_EXPLAIN_LOG=FILE` appends, per request sent through the helpers, the
//! configuration's path and `checked` or why not.

use std::collections::HashSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::px::{eventually, show, Head, Resp};

/// Requests checked per proxy by default (the distinct ones among the first eligible).
pub const PER_PROXY: usize = 8;

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
    log: Option<PathBuf>,
    /// Frontend `i` of the harness (`{fe<i>}`): the section that binds it, and that
    /// frontend's address (for `--dst`).
    frontends: Vec<(Option<String>, SocketAddr)>,
    /// Why no request of this proxy is checked (rule 2), if so.
    off: Option<&'static str>,
    /// Why only the proxy's first request is checked (rule 3), if so.
    first_only: Option<&'static str>,
    /// Why the log line is not compared, if so.
    no_log: Option<&'static str>,
    /// Why the head at the server is not compared, if so.
    no_head: Option<&'static str>,
    /// `http-send-name-header`'s field (lower-cased): it names the server that was tried.
    name_header: Option<String>,
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
/// the live answer.
struct Pending {
    frontend: String,
    src: SocketAddr,
    dst: SocketAddr,
    raw: Vec<u8>,
    resp: Resp,
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
            log,
            frontends,
            off: ruled_out(&lines),
            first_only: first_only(text),
            no_log: no_log(&lines),
            no_head: no_head(text, &lines),
            name_header,
            all,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Cross-checks one answered request: `raw` sent to harness frontend `fe` from `src`,
    /// as the first request of its connection or not (`first`); `resp` the live answer.
    pub fn check(&self, fe: usize, src: SocketAddr, raw: &[u8], first: bool, resp: &Resp) {
        let Some((Some(frontend), dst)) = self.frontends.get(fe).cloned() else { return };
        let skipped = self.skip(fe, raw, first);
        if let Ok(path) = std::env::var("FULCRUM_TEST_EXPLAIN_LOG") {
            let what = skipped.unwrap_or("checked");
            let line = format!("{} {what}\n", self.cfg.display());
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
            let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
        }
        if skipped.is_none() {
            let p = Pending { frontend, src, dst, raw: raw.to_vec(), resp: resp.clone() };
            self.seen().pending.push(p);
        }
    }

    /// Runs the checks recorded so far, panicking at the first mismatch. The harness runs
    /// them as the proxy's test ends (`Px`'s drop, the proxy still up), so that no `explain`
    /// run adds to what a test times.
    pub fn finish(&self) {
        let pending = std::mem::take(&mut self.seen().pending);
        for p in pending {
            self.run(&p);
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
            Some(said) => self.compare(said, &p.frontend, p.src, &p.resp),
            None if err.contains("is not in mode http") => Ok(()),
            None => Err(Box::new(("explain failed".to_string(), None))),
        };
        if let Err(mismatch) = compared {
            let (why, logged) = *mismatch;
            panic!(
                "explain disagrees with the live proxy: {why}\nrequest: {}\nconfiguration: {}\n\
                 --- explain (exit {code}):\n{out}{err}--- live: status {}, log line: {}\n",
                show(&p.raw),
                self.cfg.display(),
                p.resp.status,
                logged.as_ref().map_or("(none)", |l| l.line.as_str())
            );
        }
        self.seen().agreed += 1;
    }

    /// Why the skip rule leaves this request out (see the module doc), if it does; counts it.
    fn skip(&self, fe: usize, raw: &[u8], first: bool) -> Option<&'static str> {
        let mut seen = self.seen();
        let earlier = seen.requests;
        seen.requests += 1;
        if let Some(why) = self.off {
            return Some(why);
        }
        if let Some(why) = self.first_only.filter(|_| earlier > 0) {
            return Some(why);
        }
        if !first {
            return Some("not the first request of its connection");
        }
        if !eligible(raw) {
            return Some("not one complete HTTP/1 request, or a tunnel");
        }
        if !self.all && seen.checked.len() >= PER_PROXY {
            return Some("enough requests checked on this proxy");
        }
        if !seen.checked.insert((fe, raw.to_vec())) {
            return Some("the same request was checked");
        }
        None
    }

    /// What `explain` said beside the live answer and log line.
    fn compare(&self, said: &Said, fe: &str, src: SocketAddr, resp: &Resp) -> Result<(), Mismatch> {
        let fail =
            |why: &str, logged: Option<&Logged>| Err(Box::new((why.to_string(), logged.cloned())));
        if let Some(a) = &said.answer {
            // Pages whose status depends on more than the analysers (authentication).
            if a.text.contains("statistics page") || a.text.contains("mode tcp backend") {
                return Ok(());
            }
            if a.status != Some(resp.status) {
                return fail("not the same status", None);
            }
            if a.text.contains("not logged") {
                return Ok(());
            }
        }
        let logged = match self.logged(said.src.unwrap_or(src), fe) {
            Line::Found(l) => l,
            Line::Missing => return fail("no log line for the request", None),
            Line::Unread => return self.same_head(said, None, resp).or_else(|w| fail(&w, None)),
        };
        let l = Some(&logged);
        if let Some(a) = &said.answer {
            let state = a.state.as_deref().unwrap_or("").get(..2);
            if state != logged.state.get(..2) {
                return fail("not the same termination state", l);
            }
            return Ok(());
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
            return Ok(());
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
        self.same_head(said, Some(&logged), resp).or_else(|why| fail(&why, l))
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
    /// after the answer was read).
    fn logged(&self, src: SocketAddr, fe: &str) -> Line {
        let Some(path) = self.log.as_ref().filter(|_| self.no_log.is_none()) else {
            return Line::Unread;
        };
        let mut found = Vec::new();
        eventually(Duration::from_secs(3), || {
            found = Logged::find(&std::fs::read_to_string(path).unwrap_or_default(), src, fe);
            !found.is_empty()
        });
        match found.len() {
            0 => Line::Missing,
            1 => Line::Found(found.remove(0)),
            // Rules gave several streams the same address (`set-src-port int(4242)`).
            _ => Line::Unread,
        }
    }

    /// When the test server echoed the request head: the same request line and fields.
    /// `logged`: the live line, naming the server that was tried last.
    fn same_head(&self, said: &Said, logged: Option<&Logged>, resp: &Resp) -> Result<(), String> {
        let (Some(line), Some(fields)) = (&said.request_line, &said.head) else {
            return Ok(());
        };
        let target = line.split(' ').nth(1).unwrap_or("");
        if self.no_head.is_some() || !echoes(target) || !resp.has("x-server") {
            return Ok(());
        }
        let Some(live) = Head::parse(&resp.body) else { return Ok(()) };
        let live_line = format!("{} {} {}", live.method, live.target, live.version);
        if *line != live_line {
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
        Ok(())
    }
}

/// The live log line of a request.
enum Line {
    Found(Logged),
    /// None came.
    Missing,
    /// Not to be read: no log file, a format of the configuration's own, several lines for
    /// the request's address.
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
            ("server" | "default-server", _)
                if w.iter()
                    .any(|x| matches!(*x, "check" | "agent-check" | "track" | "observe")) =>
            {
                return Some("health checks and observed errors change the servers' states")
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
    } else {
        None
    }
}

/// What keeps the live log line from being found and read; the reason.
pub fn no_log(lines: &[Vec<&str>]) -> Option<&'static str> {
    if lines.iter().any(|w| w[0] == "log-format" || w[0] == "error-log-format") {
        return Some("the configuration's own log format: the line is not httplog's");
    }
    None
}

/// What makes the head at the server differ from run to run, or unreadable; the reason.
pub fn no_head(text: &str, lines: &[Vec<&str>]) -> Option<&'static str> {
    const UNSTABLE: &[&str] = &["rand", "uuid", "date", "unique-id", "%t", "%T", "%pid", "%rt"];
    if lines.iter().any(|w| matches!(w[0], "server" | "default-server") && w.contains(&"h2")) {
        Some("an HTTP/2 server: its echo is not the HTTP/1 head explain prints")
    } else if UNSTABLE.iter().any(|u| text.contains(u)) {
        Some("fields made from time or randomness")
    } else {
        None
    }
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
    assert!(ruled_out(&lines("backend b\n server s1 1.2.3.4:80 check inter 1s\n")).is_some());
    assert!(ruled_out(&lines("backend b\n server s1 1.2.3.4:80 # check\n")).is_none());
    assert!(first_only("backend b\n stick-table type ip size 1\n").is_some());
    assert!(first_only("frontend f\n acl a fe_req_rate gt 3\n").is_some());
    assert!(first_only("frontend f\n acl a path /x\n").is_none());
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
fn a_difference_between_explain_and_the_live_proxy_is_a_mismatch() {
    let dir = crate::harness::scratch("crosscheck-mismatch");
    let log = dir.join("log");
    let line = "127.0.0.1:5 [29/Nov/2026:01:26:24.264] fe b/s2 0/0/0/0/0 200 172 - - ---- \
                1/1/0/0/0 0/0 \"GET / HTTP/1.1\"\n";
    std::fs::write(&log, line).expect("write the log");
    let addr = "127.0.0.1:80".parse().expect("addr");
    let c = Checker::with(&dir.join("cfg"), "frontend fe\n bind fd@3\n", &[addr], Some(log), true);
    let src = "127.0.0.1:5".parse().expect("addr");
    let ok = Resp { status: 200, ..Resp::default() };
    let forwards = |server: &str, why: &str| {
        Said::parse(&format!("backend: b\nserver: {server} ({why}; usable: s1 s2)\n"))
    };
    let (hash, fresh) = ("balance uri, from the request", "the pick from a fresh start");
    assert!(c.compare(&forwards("s2", hash), "fe", src, &ok).is_ok());
    let (why, logged) = *c.compare(&forwards("s1", hash), "fe", src, &ok).expect_err("s1 / s2");
    assert_eq!(
        (why.as_str(), logged.map(|l| l.server)),
        ("not the same server", Some("s2".into()))
    );
    assert!(c.compare(&forwards("s1", fresh), "fe", src, &ok).is_ok());
    let other = Said::parse("backend: c\nserver: s2 (balance uri, from the request; usable: s2)\n");
    assert!(c.compare(&other, "fe", src, &ok).is_err());
    let denied = Said::parse("answer: 403 Forbidden (termination PR--)\n");
    assert!(c.compare(&denied, "fe", src, &ok).is_err(), "not the same status");
    let live_403 = Resp { status: 403, ..Resp::default() };
    assert!(c.compare(&denied, "fe", src, &live_403).is_err(), "---- is not PR--");
    // A recorded request is checked at `finish`: here explain cannot read the configuration.
    c.check(0, src, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", true, &ok);
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.finish()));
    assert!(finished.is_err(), "explain failed: a mismatch");
    // No log line for another client: a mismatch too (once the wait for it is over).
    let elsewhere = "127.0.0.1:6".parse().expect("addr");
    assert!(c.compare(&forwards("s2", hash), "fe", elsewhere, &ok).is_err());
}
