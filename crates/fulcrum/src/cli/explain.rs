//! `fulcrum explain`: one request through the transaction's real analysers (`http::analyse`),
//! offline, with what they did printed in order: every rule judged (its file:line, its text,
//! whether its condition held, each ACL the condition evaluated), the backend chosen and why,
//! the server and why, variables set, addresses the rules changed, headers changed, the request
//! as it would reach the server, or the answer the proxy makes with HAProxy's status and
//! termination state. No socket is opened and no server is asked. Before the analysers, the
//! connection's `tcp-request connection|session` rules run as the accept loop runs them
//! (`runtime::connection_rules`, `session_rules_on`); an answer goes through the
//! `http-after-response` rules as the session sends it. The chunked body's check before a
//! server and `http-send-name-header` are the analysers' (`Stop::BadBody`, `Txn::name_server`),
//! the parser's limits the frontend's. The `http` and `e2e` tests run explain beside every
//! live Fulcrum they start (`tests/http/crosscheck.rs`), on HTTP/1 and HTTP/2 requests. The
//! harnesses give explain an HTTP/2 request as its HTTP/1.1 equivalent (`h1_of_h2`).
//!
//! ```text
//! fulcrum explain -f haproxy.cfg [--frontend NAME] [--src IP:PORT] [--dst IP:PORT]
//!                 [--tls-sni NAME] [--down s1,be/s2] [--state-file FILE] [--map REF=FILE]
//!                 [--acl REF=FILE] [--table NAME=FILE] REQUEST
//! ```
//! REQUEST is HTTP/1.1 text (a bare `\n` is taken as a line end), a file holding it, or `-`
//! for stdin; what follows its head is its body. Live state comes in the runtime API's own
//! formats and through its own code: a `show servers state` file (`state_file`), a map's or an
//! ACL's contents as `show map|acl` prints them or as `add map|acl` takes them (`api::maps`),
//! a stick table's entries as `show table` prints them (`api::tables::load_line`).
//!
//! Must not touch: the analysers' decisions (it drives them and prints what they did).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_http::{Head, Limits};

use crate::backend::status::Change;
use crate::backend::Backend;
use crate::frontend::Frontend;
use crate::http::analyse::{Built, KeyKind, Progress, Ruled, Stop, ToServer, Transaction, Txn};
use crate::outcome::{Cause, Outcome, Phase};
use crate::rules::refs::Kind;
use crate::rules::sample::Vars;
use crate::rules::trace::{Step, Trace};
use crate::tls::facts::Told;

const USAGE: &str = "\
Usage: fulcrum explain -f <cfgfile|cfgdir> [-f ...] [--frontend NAME] [--src IP:PORT]
                       [--dst IP:PORT] [--tls | --tls-sni NAME] [--down SERVER[,SERVER...]]
                       [--state-file FILE] [--map REF=FILE] [--acl REF=FILE]
                       [--table NAME=FILE] REQUEST
  REQUEST: HTTP/1.1 request text, a file holding it, or - for stdin
  --frontend: the frontend that receives it (default: the first HTTP frontend)
  --src: the client's address (default 127.0.0.1:40000)
  --dst: the address the client connected to (default: the frontend's first IP bind address;
    none for a frontend bound only to fd@, UNIX sockets or host names)
  --down: servers to take as in maintenance (NAME in every backend, or BACKEND/NAME)
  --tls, --tls-sni NAME: the request came over TLS (ssl_fc), with that SNI (ssl_fc_sni)
  --state-file: server states as `show servers state` writes them
  --map REF=FILE, --acl REF=FILE: a map's or an ACL's contents instead of its file's (REF as
    the configuration names the file, or #ID; FILE's lines as `show map|acl` prints them, or
    `key value` / `pattern`)
  --table NAME=FILE: a stick table's entries as `show table NAME` prints them (key=... and
    its stored data: server_id, server_key, counters)
";

#[derive(Default)]
struct Opts {
    configs: Vec<PathBuf>,
    frontend: Option<String>,
    src: Option<SocketAddr>,
    /// `--dst`: the frontend's address the client reached (`dst`, `option originalto`).
    dst: Option<SocketAddr>,
    down: Vec<String>,
    state_file: Option<PathBuf>,
    /// `--tls` / `--tls-sni`: the request came over TLS (with that server name).
    tls: Option<Option<String>>,
    /// `--map` / `--acl`: (kind, reference, file).
    patterns: Vec<(Kind, String, PathBuf)>,
    /// `--table`: (table, file).
    tables: Vec<(String, PathBuf)>,
    request: Option<String>,
}

fn parse(argv: &[String]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("'{a}' expects a value"));
        match a.as_str() {
            "-f" => o.configs.push(value()?.into()),
            "--frontend" => o.frontend = Some(value()?),
            "--src" => {
                let v = value()?;
                o.src = Some(v.parse().map_err(|_| format!("'--src' expects IP:PORT, got '{v}'"))?);
            }
            "--dst" => {
                let v = value()?;
                o.dst = Some(v.parse().map_err(|_| format!("'--dst' expects IP:PORT, got '{v}'"))?);
            }
            "--down" => o.down.extend(value()?.split(',').map(str::to_string)),
            "--state-file" => o.state_file = Some(value()?.into()),
            "--tls" => o.tls = Some(None),
            "--tls-sni" => o.tls = Some(Some(value()?)),
            "--map" | "--acl" => {
                let v = value()?;
                let Some((r, file)) = v.split_once('=') else {
                    return Err(format!("'{a}' expects REF=FILE, got '{v}'"));
                };
                let kind = if a == "--map" { Kind::Map } else { Kind::Acl };
                o.patterns.push((kind, r.to_string(), file.into()));
            }
            "--table" => {
                let v = value()?;
                let Some((t, file)) = v.split_once('=') else {
                    return Err(format!("'--table' expects NAME=FILE, got '{v}'"));
                };
                o.tables.push((t.to_string(), file.into()));
            }
            "-h" | "--help" => return Err(String::new()),
            _ if o.request.is_none() && (!a.starts_with('-') || a == "-") => {
                o.request = Some(a.clone())
            }
            _ => return Err(format!("unknown option '{a}'")),
        }
    }
    if o.configs.is_empty() || o.request.is_none() {
        return Err("a configuration (-f) and a request are needed".into());
    }
    Ok(o)
}

/// Runs `fulcrum explain` (the arguments after `explain`); returns the exit status: 0 when
/// the request was explained, 1 on a usage or configuration error.
pub fn main(argv: &[String]) -> i32 {
    let opts = match parse(argv) {
        Ok(o) => o,
        // `-h`, `--help`: the usage, on stdout.
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("[ALERT] explain: {e}");
            eprint!("{USAGE}");
            return 1;
        }
    };
    let text = match read_request(opts.request.as_deref().unwrap_or("-")) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("[ALERT] explain: {e}");
            return 1;
        }
    };
    let args = super::args::Args { configs: opts.configs.clone(), ..Default::default() };
    let mut out = Vec::new();
    let loaded = super::load_config(&args, &mut out);
    super::print_all(&out);
    let Some((config, _)) = loaded else { return 1 };
    let mut out = Vec::new();
    let plan = super::build_plan(&config, crate::plan::Previous::default(), Vec::new(), &mut out);
    super::print_all(&out);
    let Some(plan) = plan else { return 1 };
    let live = take_down(&plan.proxies.backends, &opts.down)
        .and_then(|()| load_states(&plan.proxies.backends, opts.state_file.as_deref()))
        .and_then(|()| opts.patterns.iter().try_for_each(|(k, r, f)| load_patterns(*k, r, f)))
        .and_then(|()| {
            opts.tables.iter().try_for_each(|(t, f)| load_table(&plan.proxies.tables, t, f))
        });
    if let Err(e) = live {
        eprintln!("[ALERT] explain: {e}");
        return 1;
    }
    let fe = match pick_frontend(&plan.proxies.frontends, opts.frontend.as_deref()) {
        Ok(fe) => fe,
        Err(e) => {
            eprintln!("[ALERT] explain: {e}");
            return 1;
        }
    };
    let src = opts.src.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 40000)));
    let told = opts.tls.as_ref().map(|sni| Told { sni: sni.as_deref() });
    let local = opts.dst.or_else(|| {
        fe.binds.iter().flat_map(|b| &b.addrs).find_map(|a| match a {
            cfg::BindAddr::Inet(a) => Some(*a),
            _ => None,
        })
    });
    match explain(&config, fe, (src, local, told.as_ref()), &text) {
        Ok(report) => {
            print!("{report}");
            0
        }
        Err(e) => {
            eprintln!("[ALERT] explain: {e}");
            1
        }
    }
}

/// The request's text: the argument itself when it holds a request line, else the file it
/// names (`-`: stdin). Bare `\n` line ends become CRLF.
fn read_request(arg: &str) -> Result<Vec<u8>, String> {
    let raw = if arg == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map_err(|e| e.to_string())?;
        v
    } else if arg.contains(" HTTP/") {
        arg.as_bytes().to_vec()
    } else {
        std::fs::read(arg).map_err(|e| format!("cannot read '{arg}': {e}"))?
    };
    Ok(crlf(&raw))
}

/// Bare LF line ends in the head become CRLF (the body is left as it is); the head gets its
/// final empty line when it lacks one.
fn crlf(raw: &[u8]) -> Vec<u8> {
    let (head, body) = match raw.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&raw[..i + 1], &raw[i + 2..]),
        None => match raw.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => (&raw[..i + 2], &raw[i + 4..]),
            None => (raw, &[][..]),
        },
    };
    let mut out = Vec::with_capacity(raw.len() + 32);
    for line in head.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// `--down`: servers in maintenance, through the backends' one entry point for state.
fn take_down(backends: &[Arc<Backend>], names: &[String]) -> Result<(), String> {
    for name in names.iter().filter(|n| !n.is_empty()) {
        let (be_name, srv) = match name.split_once('/') {
            Some((b, s)) => (Some(b), s),
            None => (None, name.as_str()),
        };
        let mut found = false;
        for be in backends.iter().filter(|b| be_name.is_none_or(|n| n == b.name)) {
            if let Some(idx) = be.server_index(srv) {
                let flag = crate::server::state::Admin::FMAINT;
                be.change_server(idx, Change::SetAdmin { flag, cause: "explain --down".into() });
                found = true;
            }
        }
        if !found {
            return Err(format!("--down: no server '{name}'"));
        }
    }
    Ok(())
}

/// `--state-file`: the servers' saved states, applied as at start-up (`state_file`).
fn load_states(backends: &[Arc<Backend>], path: Option<&std::path::Path>) -> Result<(), String> {
    let Some(path) = path else { return Ok(()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let (saved, _skipped) = crate::state_file::parse(&text);
    for be in backends {
        crate::state_file::apply(be, saved.iter().filter(|s| s.backend == be.name));
    }
    Ok(())
}

/// `--map` / `--acl`: the reference's entries replaced by the file's, through the runtime
/// API's `clear` and `add` (its messages are the errors).
fn load_patterns(kind: Kind, reference: &str, path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let what = if kind == Kind::Map { "map" } else { "acl" };
    // `show map|acl` lines start with the entry's id (`0x...`): dropped.
    let lines: Vec<&str> = text
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((id, rest)) if id.starts_with("0x") => rest,
            _ => l,
        })
        .filter(|l| !l.trim().is_empty())
        .collect();
    let words = |verb: &str, rest: &[&str]| -> Vec<String> {
        [verb, what, reference].iter().chain(rest).map(|w| w.to_string()).collect()
    };
    let mut out = String::new();
    crate::api::maps::run(kind, "clear", &words("clear", &[]), None, &mut out);
    if !out.trim().is_empty() {
        return Err(format!("--{what} {reference}: {}", out.trim()));
    }
    if kind == Kind::Map {
        let payload = lines.join("\n");
        crate::api::maps::run(kind, "add", &words("add", &[]), Some(&payload), &mut out);
    } else {
        for l in &lines {
            crate::api::maps::run(kind, "add", &words("add", &[l.trim()]), None, &mut out);
        }
    }
    match out.trim() {
        "" => Ok(()),
        msg => Err(format!("--{what} {reference}: {msg}")),
    }
}

/// `--table NAME=FILE`: the stick table's entries as `show table NAME` prints them (the
/// server an entry names decides `stick match|on`).
fn load_table(
    tables: &crate::stick::Tables,
    name: &str,
    path: &std::path::Path,
) -> Result<(), String> {
    let t = tables.get(name).ok_or_else(|| format!("--table: no stick table '{name}'"))?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    // The header line (`# table: ...`) and blank lines are skipped.
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        crate::api::tables::load_line(t, line).map_err(|e| format!("--table {name}: {e}"))?;
    }
    Ok(())
}

fn pick_frontend<'p>(
    frontends: &'p [Arc<Frontend>],
    name: Option<&str>,
) -> Result<&'p Arc<Frontend>, String> {
    match name {
        Some(n) => frontends
            .iter()
            .find(|f| f.name == n)
            .ok_or_else(|| format!("no frontend '{n}'"))
            .and_then(|f| match f.http {
                Some(_) => Ok(f),
                None => Err(format!("frontend '{n}' is not in mode http")),
            }),
        None => frontends
            .iter()
            .find(|f| f.http.is_some())
            .ok_or_else(|| "the configuration has no HTTP frontend".to_string()),
    }
}

/// Runs the analysers on the request and writes what they did.
fn explain(
    config: &cfg::Config,
    fe: &Arc<Frontend>,
    (src, local, told): (SocketAddr, Option<SocketAddr>, Option<&Told<'_>>),
    text: &[u8],
) -> Result<String, String> {
    let http = fe.http.as_ref().ok_or("not an HTTP frontend")?;
    let mut req = Head::new();
    req.set_lenient(http.accept_invalid_req);
    req.set_any_method_payload(http.any_method_payload);
    // The live session's limits: a head too large for its buffer is refused here too.
    let n = match req.parse_request(text, &http.limits) {
        Ok(Some(n)) => n,
        Ok(None) => return Err("the request's head is incomplete".into()),
        Err(e) => {
            let status = e.request_status();
            let reason = lossy(fulcrum_http::default_reason(status));
            return Ok(format!(
                "request refused by the parser: {e}\nanswer: {status} {reason} (termination PR--)\n"
            ));
        }
    };
    // Rules see Connection as HAProxy's parser leaves it, as in the live session.
    fulcrum_http::clean_connection(&mut req);
    let before = req.clone();
    let mut parts = Transaction::new(req);
    // The connection's own rules first, as a new connection passes them (`runtime::accept`):
    // traced, their variables the session's, their `set-src|dst` the connection's addresses.
    let connected = {
        let empty = Vars::default();
        let mk = fe.ctx(Some(src), local, &empty);
        crate::runtime::connection_rules(fe, &mk, &mut parts.vars)
            && crate::runtime::session_rules_on(fe, &mk, &mut parts.vars)
    };
    // The frontend's capture slots, as a session's transaction starts with them.
    let spec = &fe.log.captures;
    if !spec.is_empty() {
        parts.vars.caps.reset(spec);
        parts.vars.caps.take_from(spec, &parts.req, false);
    }
    let mut txn = parts.txn(fe, http, (Some(src), local), &text[n..]);
    txn.sync_addrs();
    txn.told_tls = told;
    let mut w = Report::new(config, fe, src, &before);
    let mut progress = Progress::default();
    let ended = loop {
        if !connected {
            txn.o.end(Cause::Proxy, Phase::Request);
            break Ok("answer: none, tcp-request connection|session rules refuse the connection"
                .to_string());
        }
        match txn.request(&mut progress) {
            Stop::BadBody => {
                txn.o.end(Cause::Proxy, Phase::Request);
                let msg = txn.error_message(400, progress.be.as_ref());
                break Ok(answer(&mut txn, msg, progress.be.as_ref(), Some("")));
            }
            Stop::Backend(to) => break Err(to),
            Stop::BufferBody | Stop::WaitForBody { .. } => {
                txn.note(|| "wait-for-body: the body given is all there is".into())
            }
            Stop::Spoe(ask) => {
                let be = progress.be.as_deref();
                let id = ask.engine(fe, be).map_or("?", |e| e.id.as_str()).to_string();
                txn.note(|| {
                    format!("SPOE engine '{id}': not asked offline (no variables from its agent)")
                })
            }
            Stop::Lua(ask) => {
                // Offline the script runs whole: its waits are not waited.
                use crate::lua::action::{Call, Step};
                if let Some(mut call) = Call::new(&ask.name, &ask.args) {
                    while let Step::Sleep(_) = txn.lua_step(&mut call, false) {}
                }
                txn.note(|| format!("Lua action 'lua.{}' ran", ask.name))
            }
            Stop::Stats => {
                let rules = Txn::stats_rules(fe, &progress);
                let asks = rules
                    .stats
                    .as_ref()
                    .is_some_and(|s| crate::stats::page::matches(&s.page, txn.req.target()));
                if asks {
                    break Ok("answer: the statistics page (stats uri)".to_string());
                }
            }
            Stop::Reject => {
                txn.o.end(Cause::Proxy, Phase::Request);
                break Ok(format!(
                    "answer: none, the connection closes (termination {})",
                    state(txn.o)
                ));
            }
            Stop::Monitor { failing } => {
                let msg = txn.error_message(if failing { 503 } else { 200 }, None);
                break Ok(answer(&mut txn, msg, None, None));
            }
            Stop::Ruled(r) => break Ok(ruled(&mut txn, r, progress.be.as_ref())),
            Stop::NoBackend => {
                txn.o.end(Cause::Proxy, Phase::Request);
                let msg = txn.error_message(503, None);
                break Ok(answer(&mut txn, msg, None, Some("")));
            }
            Stop::TcpBackend => {
                txn.o.end(Cause::Internal, Phase::Request);
                break Ok("answer: none, a mode tcp backend for an HTTP request".to_string());
            }
        }
    };
    let server_part = match &ended {
        Err(to) => {
            let be = progress.be.clone().ok_or("no backend chosen")?;
            let (part, picked) = server(config, &be, to, txn.key);
            // `http-send-name-header`: the server's name, as the session sets it for a try.
            if let Some(i) = picked {
                txn.name_server(&be, i);
            }
            part
        }
        Ok(_) => String::new(),
    };
    let trace = txn.vars.trace.take().map(|t| *t).unwrap_or_default();
    w.steps(&trace);
    w.vars(txn.vars);
    w.addrs(txn.vars);
    w.headers(&before, txn.req);
    match ended {
        Ok(answer) => w.line(&answer),
        Err(_) => {
            w.out.push_str(&server_part);
            w.line("request as it goes to the server:");
            let mut head = Vec::new();
            txn.req.write_to(&mut head);
            for l in String::from_utf8_lossy(&head).lines().filter(|l| !l.is_empty()) {
                w.line(&format!("  {l}"));
            }
        }
    }
    Ok(w.out)
}

/// What a rule's ending comes to, in words.
fn ruled(txn: &mut Txn<'_>, r: Ruled, be: Option<&Arc<Backend>>) -> String {
    match r {
        Ruled::Answer { built, cause, phase, .. } => {
            txn.o.end(cause, phase);
            let msg = match built {
                Built::Drop => {
                    return format!(
                        "answer: none, the connection closes (termination {})",
                        state(txn.o)
                    )
                }
                Built::Status(s) => txn.error_message(s, be),
                Built::Bytes(b) => b,
            };
            answer(txn, msg, be, Some(""))
        }
        Ruled::Tarpit(s) => {
            txn.o.end(Cause::Proxy, Phase::Tarpit);
            let msg = txn.error_message(s, be);
            answer(txn, msg, be, Some("after `timeout tarpit`"))
        }
        Ruled::Prometheus => {
            txn.o.end(Cause::Local, Phase::Request);
            let state = state(txn.o);
            format!("answer: 200 OK (the Prometheus exporter's page; termination {state})")
        }
    }
}

/// The answer the client gets for the message `msg` the proxy made: after the
/// `http-after-response` rules, as the session sends it (`http::session::answer`): its status
/// line, how it comes and the termination state (`how`: `None` for a request not logged),
/// then its head.
fn answer(
    txn: &mut Txn<'_>,
    mut msg: Vec<u8>,
    be: Option<&Arc<Backend>>,
    how: Option<&str>,
) -> String {
    if msg.is_empty() {
        return format!("answer: none, an empty message (termination {})", state(txn.o));
    }
    if crate::http::analyse::has_after_response(txn.fe, be) {
        let limits = Limits { max_head: msg.len().max(1024), max_headers: 1000 };
        if let Ok(Some(n)) = txn.resp.parse_response(&msg, &limits) {
            txn.after_response(be, None);
            let mut out = Vec::with_capacity(msg.len() + 64);
            txn.resp.write_to(&mut out);
            out.extend_from_slice(&msg[n..]);
            msg = out;
        }
    }
    let head = String::from_utf8_lossy(&msg);
    let head = head.split("\r\n\r\n").next().unwrap_or("");
    let mut status_line = head.lines().next().unwrap_or("").splitn(3, ' ').skip(1);
    let status: u16 = status_line.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let reason = status_line.next().unwrap_or("");
    let why = match how {
        None => "(monitor-uri; not logged)".to_string(),
        Some("") => format!("(termination {})", state(txn.o)),
        Some(how) => format!("({how}; termination {})", state(txn.o)),
    };
    let mut s = format!("answer: {status} {reason} {why}\n");
    for l in head.lines() {
        s.push_str(&format!("  {l}\n"));
    }
    s.trim_end().to_string()
}

/// `%tsc`-like four letters: the termination state, then `--` (no cookie yet).
fn state(o: &Outcome) -> String {
    let [a, b] = o.state();
    format!("{}{}--", a as char, b as char)
}

/// The server the backend's balancer picks, from a fresh start, and why; its index.
fn server(
    config: &cfg::Config,
    be: &Arc<Backend>,
    to: &ToServer,
    key: &[u8],
) -> (String, Option<usize>) {
    let balance = config
        .backends()
        .find(|p| p.name == be.name)
        .map(|p| balance_word(&p.balance))
        .unwrap_or_default();
    let pick_key = match &to.key {
        KeyKind::None => None,
        KeyKind::Ip(ip) => Some(crate::backend::PickKey::Ip(*ip)),
        KeyKind::Bytes => Some(crate::backend::PickKey::Bytes(key)),
    };
    let candidates: Vec<&str> =
        be.servers.iter().filter(|s| s.is_up()).map(|s| s.name.as_str()).collect();
    let mut s = format!("backend: {}\n", be.name);
    let mut picked = None;
    match be.try_acquire_persist(pick_key, to.persist, None) {
        Ok(Ok(slot)) => {
            picked = Some(slot.index());
            let name = &be.servers[slot.index()].name;
            let why = match (to.persist, be.maps_keys()) {
                (Some(_), _) => "persistence".to_string(),
                (None, true) => format!("balance {balance}, from the request"),
                (None, false) => format!("balance {balance}, the pick from a fresh start"),
            };
            s.push_str(&format!("server: {name} ({why}; usable: {})\n", candidates.join(" ")));
        }
        Ok(Err(_)) => s.push_str("server: none free now, the request would wait in the queue\n"),
        Err(_) => s.push_str("server: none usable: answer 503 (termination SC--)\n"),
    }
    (s, picked)
}

/// The `balance` line's words.
fn balance_word(b: &cfg::Balance) -> String {
    use cfg::Balance::*;
    match b {
        RoundRobin => "roundrobin".into(),
        StaticRr => "static-rr".into(),
        LeastConn => "leastconn".into(),
        First => "first".into(),
        Source => "source".into(),
        Random { draws } => format!("random({draws})"),
        Uri { .. } => "uri".into(),
        UrlParam { name } => format!("url_param {name}"),
        Hdr { name, .. } => format!("hdr({name})"),
        RdpCookie { name } => format!("rdp-cookie({name})"),
    }
}

/// The report, line by line.
struct Report<'c> {
    out: String,
    config: &'c cfg::Config,
    fe: &'c Frontend,
    /// The configuration files' lines, read once (for the rules' text).
    files: std::collections::HashMap<Arc<str>, Vec<String>>,
}

impl<'c> Report<'c> {
    fn new(config: &'c cfg::Config, fe: &'c Frontend, src: SocketAddr, req: &Head) -> Report<'c> {
        let mut r = Report { out: String::new(), config, fe, files: Default::default() };
        let line = format!(
            "{} {} HTTP/1.{}",
            String::from_utf8_lossy(req.method_bytes()),
            String::from_utf8_lossy(req.target()),
            u8::from(req.version() != fulcrum_http::Version::Http10)
        );
        r.line(&format!("request: {line} (frontend {}, from {src})", fe.name));
        r
    }

    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// The text of `file:line` in the configuration.
    fn text_at(&mut self, file: &Arc<str>, line: u32) -> String {
        let lines = self.files.entry(Arc::clone(file)).or_insert_with(|| {
            std::fs::read_to_string(&**file)
                .map(|t| t.lines().map(|l| l.trim().to_string()).collect())
                .unwrap_or_default()
        });
        lines.get(line as usize - 1).cloned().unwrap_or_default()
    }

    fn steps(&mut self, trace: &Trace) {
        for step in &trace.steps {
            match step {
                Step::Rule { at, held } => {
                    let Some((file, line)) = crate::rules::origin::place(*at) else { continue };
                    let text = self.text_at(&file, line);
                    let verdict = if *held { "applies" } else { "does not apply" };
                    self.line(&format!("  {file}:{line}: {text}  -> {verdict}"));
                }
                Step::UseBackend { rule, held, chose } => {
                    let l = self.use_backend(*rule, *held, chose.as_deref());
                    self.line(&format!("  {l}"));
                }
                Step::Acl { at, label, named, negate, matched } => {
                    let place = crate::rules::origin::place(*at)
                        .map(|(file, line)| format!(" ({file}:{line})"))
                        .unwrap_or_default();
                    let what = if *named { "acl " } else { "" };
                    let neg = if *negate { "!" } else { "" };
                    let verdict = if *matched { "matches" } else { "does not match" };
                    self.line(&format!("      {neg}{what}{label}{place} -> {verdict}"));
                }
                Step::Note(n) => self.line(&format!("  {n}")),
            }
        }
    }

    /// A `use_backend` rule judged, with its place and text from the configuration.
    fn use_backend(&mut self, rule: usize, held: bool, chose: Option<&str>) -> String {
        let fe = self.fe.name.clone();
        let span = self
            .config
            .frontends()
            .find(|p| p.name == fe)
            .and_then(|p| p.use_backends.get(rule))
            .map(|u| u.span.clone());
        let verdict = match (held, chose) {
            (true, Some(b)) => format!("applies: backend {b}"),
            (true, None) => "names no backend".to_string(),
            (false, _) => "does not apply".to_string(),
        };
        match span {
            Some(sp) => {
                let text = self.text_at(&sp.file, sp.line);
                format!("{}:{}: {text}  -> {verdict}", sp.file, sp.line)
            }
            None => format!("use_backend rule {}: {verdict}", rule + 1),
        }
    }

    fn vars(&mut self, vars: &Vars) {
        let all: Vec<String> = vars
            .all()
            .map(|(scope, name, v)| {
                let scope = format!("{scope:?}").to_lowercase();
                match v {
                    Some(v) => {
                        format!("{scope}.{name} = {:?}", String::from_utf8_lossy(&v.as_bytes()))
                    }
                    None => format!("{scope}.{name} (no value)"),
                }
            })
            .collect();
        if !all.is_empty() {
            self.line("variables:");
            for v in all {
                self.line(&format!("  {v}"));
            }
        }
    }

    /// The client's and the frontend's addresses when rules changed them (`set-src`...):
    /// the log line and the forwarded headers name these.
    fn addrs(&mut self, vars: &Vars) {
        let Some(a) = vars.addrs.as_deref() else { return };
        let show = |a: Option<SocketAddr>| a.map_or("none".to_string(), |a| a.to_string());
        self.line(&format!(
            "addresses: src {} dst {} (the connection's: src {} dst {})",
            show(a.src),
            show(a.dst),
            show(a.fc_src),
            show(a.fc_dst)
        ));
    }

    fn headers(&mut self, before: &Head, after: &Head) {
        let b: Vec<(Vec<u8>, Vec<u8>)> =
            before.headers().map(|(n, v)| (n.to_ascii_lowercase(), v.to_vec())).collect();
        let a: Vec<(Vec<u8>, Vec<u8>)> =
            after.headers().map(|(n, v)| (n.to_ascii_lowercase(), v.to_vec())).collect();
        let mut lines = Vec::new();
        for (n, v) in b.iter().filter(|f| !a.contains(f)) {
            lines.push(format!("  - {}: {}", lossy(n), lossy(v)));
        }
        for (n, v) in a.iter().filter(|f| !b.contains(f)) {
            lines.push(format!("  + {}: {}", lossy(n), lossy(v)));
        }
        if before.target() != after.target() || before.method_bytes() != after.method_bytes() {
            lines.push(format!(
                "  request line: {} {}",
                lossy(after.method_bytes()),
                lossy(after.target())
            ));
        }
        if !lines.is_empty() {
            self.line("headers changed:");
            for l in lines {
                self.line(&l);
            }
        }
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_line_feeds_become_crlf_in_the_head_only() {
        assert_eq!(
            crlf(b"GET / HTTP/1.1\nHost: a\n\nx\ny"),
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nx\ny"
        );
        assert_eq!(
            crlf(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        );
        assert_eq!(crlf(b"GET / HTTP/1.1\nHost: a"), b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    }

    #[test]
    fn arguments_name_the_files_the_frontend_and_the_request() {
        let a: Vec<String> = [
            "-f",
            "a.cfg",
            "--src",
            "10.0.0.1:5",
            "--dst",
            "10.0.0.2:80",
            "--down",
            "s1,b/s2",
            "req.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = parse(&a).expect("parsed");
        assert_eq!(o.configs, vec![PathBuf::from("a.cfg")]);
        assert_eq!(o.src, Some("10.0.0.1:5".parse().expect("addr")));
        assert_eq!(o.dst, Some("10.0.0.2:80".parse().expect("addr")));
        assert_eq!(o.down, vec!["s1", "b/s2"]);
        assert_eq!(o.request.as_deref(), Some("req.txt"));
        assert!(parse(&["-f".into(), "a.cfg".into()]).is_err());
        assert!(
            parse(&["--src".into(), "nope".into(), "-f".into(), "a".into(), "r".into()]).is_err()
        );
    }
}
