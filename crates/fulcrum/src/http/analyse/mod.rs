//! One transaction's analysers, in HAProxy 2.6's order and named after its own
//! (`include/haproxy/channel-t.h`): `AN_REQ_INSPECT_FE` (`tcp-request content`), the monitor
//! URI, `AN_REQ_HTTP_PROCESS_FE` (`http-request` rules, legacy `redirect` rules, the stats
//! page), `AN_REQ_SWITCHING_RULES` (`use_backend`), `AN_REQ_INSPECT_BE`,
//! `AN_REQ_HTTP_PROCESS_BE`; then, once the request goes on, its edits for the server
//! (`http_process_request`), cookie persistence, `AN_REQ_STICKING_RULES` and the key a
//! hash-based balance uses ([`Txn::for_server`]). The response's analysers are in `response`.
//!
//! They run on the message alone: a [`Txn`] is the request, its variables, what is known of
//! its connection, and no socket. Where an analyser needs what only the session can do (wait
//! for the body, hold a tarpit, send an answer), [`Txn::request`] stops with a [`Stop`] and
//! resumes where it stopped on the next call ([`Progress`]), as HAProxy's analysers give the
//! stream back until their data is there. The session runs them on every request
//! (`session::txn`); `fulcrum explain` runs them offline, with a trace
//! (`rules::trace`). A chunked body received so far is checked before any server
//! ([`Stop::BadBody`]), and [`Txn::name_server`] writes `http-send-name-header` on each try.
//!
//! Must not touch: sockets, timers, the server side.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fulcrum_http::{Body, Head};

use crate::backend::Backend;
use crate::connection::Stream;
use crate::counters::Counters;
use crate::frontend::Frontend;
use crate::http_settings::HttpProxy;
use crate::outcome::{Cause, Outcome, Phase};
use crate::rules::sample::Vars;
use crate::rules::trace::Step;
use crate::rules::{self, Base, ProxyRules, Verdict};

mod answers;
pub mod compress;

mod decide;
pub mod lua;
mod response;
mod server;
pub mod spoe;

pub use answers::early_hints;
pub use decide::{answered, client_keeps, retry, Answered, KeepFacts, Tries, TryEnd};
pub use response::{has_after_response, has_response_rules, RespProgress, RespStop};
pub use server::{logs_flags, KeyKind, ToServer};

/// The data of a chunked body's bytes as far as they go (chunks decoded, trailers left out);
/// `None` for bad chunks, which the analysers answer (`Stop::BadBody`) from the bytes.
pub fn dechunked(bytes: &[u8]) -> Option<Vec<u8>> {
    let (mut data, mut trailers) = (Vec::with_capacity(bytes.len()), Vec::new());
    fulcrum_http::ChunkedScanner::new().decode(bytes, &mut data, &mut trailers).ok()?;
    Some(data)
}

/// A chunked body's bytes so far are valid chunks (the rest may come later).
fn chunks_valid(bytes: &[u8]) -> bool {
    fulcrum_http::ChunkedScanner::new().scan(bytes).is_ok()
}

/// The bodies of a transaction that rules waited for (`wait-for-body`, `option
/// http-buffer-request`), as the rules see them: their data without framing (chunks decoded,
/// an HTTP/2 stream's data copied: it stays in the stream). `None`: what the side's receive
/// buffer holds, a sized body's bytes as they came.
#[derive(Default, Debug)]
pub struct Held {
    pub req: Option<Vec<u8>>,
    pub resp: Option<Vec<u8>>,
    /// An HTTP/2 stream's request body held whole (its end came within the wait).
    pub req_ended: bool,
}

/// One transaction seen by its analysers: the request and what goes with it, borrowed from
/// the session (or from `fulcrum explain`) for one call.
pub struct Txn<'s> {
    pub fe: &'s Frontend,
    pub http: &'s HttpProxy,
    /// The connection's addresses (as `set-src`/`set-dst` left them).
    pub peer: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    /// The client's connection, for the fetches that read its socket or TLS layer (`None`
    /// offline).
    pub client: Option<&'s Stream>,
    /// Offline, the client connection's TLS as `fulcrum explain` is told it.
    pub told_tls: Option<&'s crate::tls::facts::Told<'s>>,
    /// The request came over HTTP/2.
    pub h2: bool,
    pub pp: Option<&'s crate::connection::proxy::Header>,
    pub bind_no: u16,
    /// Connections the process holds now (`%ac` in a unique id).
    pub actconn: u32,
    /// What of the request's body was received, as the rules see it: its data once decoded
    /// (`decoded`, see `Transaction::held`), else its bytes as they came.
    pub body: &'s [u8],
    pub decoded: bool,
    pub req: &'s mut Head,
    /// The response head, once there is one (a server's, or an answer made here).
    pub resp: &'s mut Head,
    pub vars: &'s mut Vars,
    pub scratch: &'s mut Vec<u8>,
    pub o: &'s mut Outcome,
    /// What the request's body data takes in a buffer, once counted (`rules::room`).
    pub data_htx: &'s mut Option<usize>,
    /// The same for the response's.
    pub resp_data_htx: &'s mut Option<usize>,
    /// The transaction's number (`%rt`), once taken.
    pub stream_no: &'s mut Option<u64>,
    /// The backend the transaction went to (for its log line and counters).
    pub backend: &'s mut Option<Arc<Backend>>,
    /// Where the balance key's bytes go ([`KeyKind::Bytes`]).
    pub key: &'s mut Vec<u8>,
    /// The response's compression, once decided.
    pub comp: Option<fulcrum_config::compression::CompAlgo>,
}

/// A transaction's own state: its request and response, variables (the session's too),
/// outcome, the room its bodies take, its number, backend and balance key. The session holds
/// one for the transactions of its connection (`Session::t`); `fulcrum explain` and the tests
/// hold one without a session (a trace kept).
#[derive(Default)]
pub struct Transaction {
    pub req: Head,
    pub resp: Head,
    pub vars: Vars,
    pub scratch: Vec<u8>,
    pub o: Outcome,
    pub data_htx: Option<usize>,
    pub resp_data_htx: Option<usize>,
    /// The bodies rules waited for, as they see them (see [`Held`]); boxed, as rare.
    pub held: Option<Box<Held>>,
    pub stream_no: Option<u64>,
    pub backend: Option<Arc<Backend>>,
    pub key: Vec<u8>,
    /// The compression algorithm the request accepts, then (once the response head is in)
    /// the one its response is compressed with (see `compress`).
    pub comp: Option<fulcrum_config::compression::CompAlgo>,
    /// The stream's trace filters (`filter trace`), when it has any.
    pub trace: Option<Box<crate::http::trace::Traces>>,
}

impl Transaction {
    /// A connection's first transaction, over the session's variables (built in place in
    /// the session: inlined, a copy per connection otherwise).
    #[inline(always)]
    pub fn with_vars(vars: Vars) -> Transaction {
        Transaction {
            req: Head::new(),
            resp: Head::new(),
            vars,
            scratch: Vec::new(),
            o: Outcome::default(),
            data_htx: None,
            resp_data_htx: None,
            held: None,
            stream_no: None,
            backend: None,
            key: Vec::new(),
            comp: None,
            trace: None,
        }
    }

    /// The state of a first request whose head is `req`, its analysers traced.
    pub fn new(req: Head) -> Transaction {
        let mut p = Transaction { req, ..Transaction::default() };
        p.vars.first_req = true;
        p.vars.trace = Some(Box::default());
        p
    }

    /// The analysers' view, for a request received by `fe` from `peer` on `local` (no socket:
    /// connection fetches see none), with `body` received (as the client sent it: a chunked
    /// one's data is decoded for the rules, as a session does once it waited for it).
    pub fn txn<'s>(
        &'s mut self,
        fe: &'s Frontend,
        http: &'s HttpProxy,
        (peer, local): (Option<SocketAddr>, Option<SocketAddr>),
        body: &'s [u8],
    ) -> Txn<'s> {
        let data = (self.req.info().body == Body::Chunked).then(|| dechunked(body)).flatten();
        self.held = data.map(|d| Box::new(Held { req: Some(d), resp: None, req_ended: true }));
        let (body, decoded) = match self.held.as_ref().and_then(|h| h.req.as_deref()) {
            Some(data) => (data, true),
            None => (body, false),
        };
        Txn {
            fe,
            http,
            peer,
            local,
            client: None,
            told_tls: None,
            h2: false,
            pp: None,
            bind_no: 1,
            actconn: 1,
            body,
            decoded,
            req: &mut self.req,
            resp: &mut self.resp,
            vars: &mut self.vars,
            scratch: &mut self.scratch,
            o: &mut self.o,
            data_htx: &mut self.data_htx,
            resp_data_htx: &mut self.resp_data_htx,
            stream_no: &mut self.stream_no,
            backend: &mut self.backend,
            key: &mut self.key,
            comp: self.comp,
        }
    }
}

/// Where the request analysers are: the next one to run (and the rule to resume from) and
/// the backend once chosen.
#[derive(Default)]
pub struct Progress {
    at: At,
    /// The rule a `wait-for-body` resumes from (in the list `at` names), or the SPOE engine.
    from: usize,
    /// `InspectFe`/`InspectBe`: the SPOE engines' `on-*-tcp-request` were asked (`from` then
    /// counts the `tcp-request content` rules).
    engines_done: bool,
    /// The backend's wait for the body (`Txn::request`'s `InspectBe`) is behind.
    be_waited: bool,
    pub be: Option<Arc<Backend>>,
}

/// The analysers in their order (a stop resumes at one).
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum At {
    #[default]
    InspectFe,
    /// After `option http-buffer-request`'s wait.
    Buffered,
    /// `on-frontend-http-request`: the frontend's SPOE engines (from `Progress::from`).
    SpoeFe,
    /// The frontend's `http-request` rules (from `Progress::from`).
    ProcessFe,
    Switching,
    /// The backend's `tcp-request content` rules, after the SPOE engines'
    /// `on-backend-tcp-request`.
    InspectBe,
    /// `on-backend-http-request`: the SPOE engines (from `Progress::from`).
    SpoeBe,
    ProcessBe,
    Done,
}

/// Why [`Txn::request`] stopped: each asks the session for something, then (unless it ends
/// the transaction) to call again.
#[derive(Debug)]
pub enum Stop {
    /// `tcp-request content reject`: the connection closes without an answer.
    Reject,
    /// The monitor URI: 200, or 503 when a `monitor fail` condition holds; not logged.
    Monitor { failing: bool },
    /// `option http-buffer-request`: the body (up to a buffer) is awaited, then call again.
    BufferBody,
    /// `wait-for-body`: the body is awaited for `time`; 408 when it does not come, else call
    /// again.
    WaitForBody { time: Duration, at_least: Option<u64> },
    /// A rule ended the transaction (see [`Ruled`]).
    Ruled(Ruled),
    /// An event or a `send-spoe-group` rule asks a SPOE agent: the session sends
    /// [`Txn::spoe_payload`], hands the answer to [`Txn::spoe_answer`], then calls again.
    Spoe(spoe::SpoeAsk),
    /// A `lua.<name>` rule: the session runs the action ([`Txn::lua_step`]), then calls again.
    Lua(lua::LuaAsk),
    /// The request may be for a statistics page (the frontend's, or the backend's once
    /// chosen): the session serves it, or calls again.
    Stats,
    /// No backend (503).
    NoBackend,
    /// A `mode tcp` backend for an HTTP request: the connection closes.
    TcpBackend,
    /// The part of a chunked request body received so far is invalid: 400, and the
    /// connection closes (nothing reached a server).
    BadBody,
    /// The request goes to `Progress::be`, edited for it, with what choosing its server needs.
    Backend(ToServer),
}

/// How a rule ended a transaction.
#[derive(Debug)]
pub enum Ruled {
    /// An answer made here: a status (the proxy's message for it) or a whole message;
    /// `closes`: the connection closes after it whatever the request's body (a redirect of a
    /// request with a body, as HAProxy).
    Answer { built: Built, cause: Cause, phase: Phase, closes: bool },
    /// `tarpit`: held for `timeout tarpit`, then answered `status`.
    Tarpit(u16),
    /// `use-service prometheus-exporter`.
    Prometheus,
}

/// An answer rules built (request or response rules).
#[derive(Debug)]
pub enum Built {
    Status(u16),
    Bytes(Vec<u8>),
    /// Close without an answer (`reject`, `silent-drop`).
    Drop,
}

impl<'s> Txn<'s> {
    /// The fixed parts of a fetch context (borrowing none of the transaction's own parts).
    pub fn base<'b>(&self, be: Option<&'b Backend>) -> Base<'b>
    where
        's: 'b,
    {
        let (fe, pp) = (self.fe, self.pp);
        let conn = (self.client, self.h2, pp, self.bind_no);
        let mut base = base(fe, self.http, (self.peer, self.local), (be, None), self.body, conn);
        base.told_tls = self.told_tls;
        base
    }

    /// Notes a step of the trace, when one is kept.
    #[inline]
    pub fn note(&mut self, what: impl FnOnce() -> String) {
        if let Some(t) = self.vars.trace.as_deref_mut() {
            t.note(what());
        }
    }

    /// Runs the request analysers from where `p` says, up to the next [`Stop`]. Written
    /// straight through (each stop that the transaction survives says where to resume), so
    /// a request no analyser stops costs no more than the steps themselves.
    // (Not inlined into the session's transaction: measured, that costs more.)
    pub fn request(&mut self, p: &mut Progress) -> Stop {
        let fe = self.fe;
        if p.at == At::InspectFe {
            if !fe.rules.tcp_content.is_empty() || !fe.rules.spoe.is_empty() {
                match self.inspect(None, &mut p.engines_done, &mut p.from) {
                    spoe::Inspect::Accept => {}
                    spoe::Inspect::Ask(ask) => return Stop::Spoe(ask),
                    spoe::Inspect::Reject => {
                        self.note(|| "tcp-request content: rejected".into());
                        return Stop::Reject;
                    }
                }
            }
            // Each tracked entry counts the request once (an `http-request` rule tracking one
            // later counts it then).
            if let Some(sc) = &self.vars.sc {
                sc.http_request();
            }
            if let Some(failing) = self.monitor() {
                return Stop::Monitor { failing };
            }
            if self.http.waits_body && self.req.info().body != Body::None {
                p.at = At::Buffered;
                return Stop::BufferBody;
            }
        }
        if p.at <= At::Buffered {
            self.make_unique_id(None, false);
            p.from = 0;
        }
        if p.at <= At::SpoeFe && !fe.rules.spoe.is_empty() {
            p.at = At::SpoeFe;
            let ev = fulcrum_config::spoe::SpoeEvent::FrontendHttpRequest;
            if let Some(ask) =
                spoe::next_event(&fe.rules.spoe, spoe::Side::Frontend, ev, &mut p.from)
            {
                return Stop::Spoe(ask);
            }
        }
        if p.at <= At::ProcessFe {
            let from = if p.at == At::ProcessFe { p.from } else { 0 };
            if any_request_rules(&fe.rules) {
                if let Some(stop) = self.http_request(&fe.rules, None, from, &mut p.from) {
                    p.at = At::ProcessFe;
                    return stop;
                }
            }
            if fe.rules.stats.is_some() {
                p.at = At::Switching;
                return Stop::Stats;
            }
        }
        if p.at <= At::Switching {
            let Some(chosen) = self.choose_backend() else {
                self.note(|| "use_backend: no backend".into());
                return Stop::NoBackend;
            };
            Counters::inc(&chosen.counters.sessions);
            *self.backend = Some(Arc::clone(&chosen));
            let own = self.is_own_backend(&chosen);
            let http = chosen.http.is_some();
            p.be = Some(chosen);
            // Only a `mode tcp` frontend upgraded to HTTP can pick a tcp backend.
            if !http {
                return Stop::TcpBackend;
            }
            // A `listen` proxy is its own backend: its rules ran above already.
            if !own {
                (p.at, p.from, p.engines_done) = (At::InspectBe, 0, false);
            }
        }
        let be = p.be.as_ref().expect("chosen");
        if p.at == At::InspectBe {
            // HAProxy's FastCGI filter, and a backend's `option http-buffer-request`, wait for
            // the body (up to a buffer) once the backend is chosen.
            if be.http.as_deref().is_some_and(|h| h.waits_body) && !p.be_waited {
                p.be_waited = true;
                if !self.http.waits_body && self.req.info().body != Body::None {
                    return Stop::BufferBody;
                }
            }
            if !be.rules.tcp_content.is_empty()
                || !be.rules.spoe.is_empty()
                || !fe.rules.spoe.is_empty()
            {
                match self.inspect(Some(be), &mut p.engines_done, &mut p.from) {
                    spoe::Inspect::Accept => {}
                    spoe::Inspect::Ask(ask) => return Stop::Spoe(ask),
                    spoe::Inspect::Reject => {
                        self.note(|| "tcp-request content (backend): rejected".into());
                        Counters::inc(&be.counters.denied_req);
                        fe.count(self.bind_no, |c| &c.denied_req);
                        return Stop::Reject;
                    }
                }
            }
            (p.at, p.from) = (At::SpoeBe, 0);
        }
        if p.at == At::SpoeBe {
            if !fe.rules.spoe.is_empty() || !be.rules.spoe.is_empty() {
                let ev = fulcrum_config::spoe::SpoeEvent::BackendHttpRequest;
                if let Some(ask) = spoe::next_of_both(fe, be, false, ev, &mut p.from) {
                    return Stop::Spoe(ask);
                }
            }
            p.at = At::ProcessBe;
            p.from = 0;
        }
        if p.at == At::ProcessBe {
            if any_request_rules(&be.rules) {
                if let Some(stop) = self.http_request(&be.rules, Some(be), p.from, &mut p.from) {
                    return stop;
                }
            }
            if be.rules.stats.is_some() {
                p.at = At::Done;
                return Stop::Stats;
            }
        }
        self.make_unique_id(Some(be), true);
        // A chunked body already received must be valid before anything reaches a server.
        // (Decoded chunks were valid.)
        let chunked = self.req.info().body == Body::Chunked && !self.decoded;
        if chunked && !self.body.is_empty() && !chunks_valid(self.body) {
            self.note(|| "the chunked body received is invalid".into());
            return Stop::BadBody;
        }
        let be_http = be.http.as_deref().expect("an HTTP backend");
        Stop::Backend(self.for_server(be, be_http))
    }

    /// `http-send-name-header`: the server a try goes to, named in the request as the backend
    /// says (HAProxy sets it at the last moment, for each try); whether the head changed.
    pub fn name_server(&mut self, be: &Backend, idx: usize) -> bool {
        let Some(name) = be.http.as_deref().and_then(|h| h.send_name_header.as_deref()) else {
            return false;
        };
        let _ = self.req.set_header(name.as_bytes(), be.servers[idx].name.as_bytes());
        true
    }

    /// The rules of the stats page's proxy, when [`Stop::Stats`] stopped the analysers.
    pub fn stats_rules<'p>(fe: &'p Frontend, p: &'p Progress) -> &'p ProxyRules {
        match (&p.be, p.at) {
            (Some(be), At::Done) => &be.rules,
            _ => &fe.rules,
        }
    }

    /// `monitor-uri`: `Some(failing)` when the request is for it.
    fn monitor(&mut self) -> Option<bool> {
        let uri = self.http.monitor_uri.as_ref()?;
        // A monitor URI written as a path matches the path (and query) of an absolute-form
        // target too; an absolute one matches the whole target.
        let target = if uri.starts_with('/') {
            crate::rules::sample::pathq(self.req)
        } else {
            self.req.target()
        };
        if target != uri.as_bytes() {
            return None;
        }
        let rules = &self.fe.rules;
        let failing = {
            let base = self.base(None);
            let ctx = base.ctx(self.req, None, self.vars);
            rules.monitor_fail.iter().any(|c| c.eval(&rules.acls, &ctx))
        };
        self.note(|| format!("monitor-uri {uri}: {}", if failing { 503 } else { 200 }));
        Some(failing)
    }

    /// `set-src`/`set-dst` changed the addresses: what follows sees the new ones.
    pub fn sync_addrs(&mut self) {
        if let Some(a) = &self.vars.addrs {
            self.peer = a.src;
            self.local = a.dst;
        }
    }

    /// A proxy's `http-request` rules from rule `from`, then its legacy `redirect` rules:
    /// `None` when the request goes on; at `wait-for-body`, `resume` says where to resume.
    fn http_request(
        &mut self,
        r: &ProxyRules,
        be: Option<&Arc<Backend>>,
        from: usize,
        resume: &mut usize,
    ) -> Option<Stop> {
        let verdict = self.request_verdict(r, be.map(|b| &**b), from);
        let (cause, phase) = match &verdict {
            Verdict::Return(_) | Verdict::Redirect(_) | Verdict::Prometheus | Verdict::Auth(_) => {
                (Cause::Local, Phase::Request)
            }
            Verdict::RewriteFailed => (Cause::Internal, Phase::Request),
            Verdict::Tarpit(_) => (Cause::Proxy, Phase::Tarpit),
            _ => (Cause::Proxy, Phase::Request),
        };
        // A denied or tarpitted request is an HTTP error for what the session tracks.
        if matches!(verdict, Verdict::Deny(..) | Verdict::Tarpit(_) | Verdict::Auth(_)) {
            if let Some(sc) = &self.vars.sc {
                sc.http_error();
            }
        }
        let mut closes = false;
        let built = match verdict {
            Verdict::Continue => return None,
            Verdict::WaitForBody { time, at_least, resume: next } => {
                *resume = next;
                return Some(Stop::WaitForBody { time, at_least });
            }
            Verdict::Spoe { engine, group, resume: next } => {
                *resume = next;
                let side = if be.is_some() { spoe::Side::Backend } else { spoe::Side::Frontend };
                return Some(Stop::Spoe(spoe::SpoeAsk {
                    side,
                    engine,
                    what: spoe::What::Group(group),
                }));
            }
            Verdict::Lua { name, args, resume: next } => {
                *resume = next;
                return Some(Stop::Lua(lua::LuaAsk { name: name.into(), args: args.into() }));
            }
            Verdict::Deny(status, reply) => match reply {
                Some(rp) => Built::Bytes(self.build_reply(rp, be)),
                None => Built::Status(status),
            },
            Verdict::Return(rp) => Built::Bytes(self.build_reply(rp, be)),
            Verdict::Auth(realm) => Built::Bytes(self.auth_reply(realm, be)),
            Verdict::Prometheus => return Some(Stop::Ruled(Ruled::Prometheus)),
            Verdict::Redirect(rd) => {
                // HAProxy closes after a redirect of a request that has a body.
                closes = !matches!(self.req.info().body, Body::None | Body::Length(0));
                Built::Bytes(self.build_redirect(rd, be))
            }
            Verdict::RewriteFailed => {
                self.fe.count(self.bind_no, |c| &c.failed_rewrites);
                if let Some(b) = be {
                    Counters::inc(&b.counters.failed_rewrites);
                }
                Built::Status(500)
            }
            Verdict::Drop => Built::Drop,
            Verdict::Tarpit(status) => return Some(Stop::Ruled(Ruled::Tarpit(status))),
        };
        Some(Stop::Ruled(Ruled::Answer { built, cause, phase, closes }))
    }

    /// The verdict of `r`'s `http-request` rules from `from`, then of its `redirect` rules
    /// (and `option http-restrict-req-hdr-names`).
    fn request_verdict<'r>(
        &mut self,
        r: &'r ProxyRules,
        be: Option<&Backend>,
        from: usize,
    ) -> Verdict<'r> {
        let max_input = self.http.limits.max_head;
        let (req, body) = (&*self.req, self.body);
        let data_htx =
            *self.data_htx.get_or_insert_with(|| rules::room::data_len(req, body.len(), max_input));
        let verdict = {
            let mut base = self.base(be);
            base.data_htx = data_htx;
            let v = rules::run(
                &r.http_request,
                from,
                &r.acls,
                &base,
                self.req,
                None,
                self.vars,
                self.scratch,
            );
            match v {
                Verdict::Continue
                    if r.restrict_hdr_names != 0
                        && !restrict_header_names(self.req, r.restrict_hdr_names) =>
                {
                    Verdict::Deny(403, None)
                }
                Verdict::Continue => {
                    // Legacy redirect rules come after http-request rules.
                    let redirect = r.redirects.iter().find(|rule| {
                        let ctx = base.ctx(self.req, None, self.vars);
                        let held = rules::holds(&rule.cond, &r.acls, &ctx)
                            && !matches!(&rule.action, rules::Action::Redirect(rd) if rd.skipped(&ctx));
                        if let Some(t) = self.vars.trace.as_deref_mut() {
                            t.rule(rule.at, held);
                        }
                        held
                    });
                    match redirect.map(|rule| &rule.action) {
                        Some(rules::Action::Redirect(rd)) => Verdict::Redirect(rd),
                        _ => Verdict::Continue,
                    }
                }
                v => v,
            }
        };
        self.sync_addrs();
        verdict
    }

    /// `use_backend`: the first rule whose condition holds, else the default backend.
    pub fn choose_backend(&mut self) -> Option<Arc<Backend>> {
        if self.fe.use_backends.is_empty() && self.vars.trace.is_none() {
            return self.fe.backend.clone();
        }
        let (be, rule) = {
            let base = self.base(None);
            let ctx = base.ctx(self.req, None, self.vars);
            crate::frontend::switching::choose_why(self.fe, &ctx)
        };
        if self.vars.trace.is_some() {
            self.trace_use_backends(rule, be.as_deref());
        }
        be
    }

    fn is_own_backend(&self, be: &Arc<Backend>) -> bool {
        is_own_backend(self.fe, be)
    }

    /// For a trace: the `use_backend` rules up to the one that chose (all of them when none
    /// did), judged again one by one (the live choice may have used an index), then the default
    /// backend when it was that.
    #[cold]
    fn trace_use_backends(&mut self, chose: Option<usize>, be: Option<&Backend>) {
        let r = &self.fe.rules;
        let judged = chose.map_or(self.fe.use_backends.len(), |i| i + 1);
        // Each rule's condition again, its ACLs noted (the live choice may have used an index).
        let held: Vec<(bool, Vec<Step>)> = {
            let base = self.base(None);
            let ctx = base.ctx(self.req, None, self.vars);
            let rules = &self.fe.use_backends[..judged];
            let one = |c: &Option<rules::Cond>| {
                let mut acls = Vec::new();
                let h = c.as_ref().is_none_or(|c| c.eval_traced(&r.acls, &ctx, &mut acls));
                (h, acls)
            };
            rules.iter().map(|(_, c)| one(c)).collect()
        };
        let Some(t) = self.vars.trace.as_deref_mut() else { return };
        let name = be.map(|b| b.name.clone());
        for (rule, (held, mut acls)) in held.into_iter().enumerate() {
            let chose = if Some(rule) == chose { name.clone() } else { None };
            t.steps.push(Step::UseBackend { rule, held, chose });
            t.steps.append(&mut acls);
        }
        match (chose, name) {
            (Some(_), _) => {}
            (None, Some(n)) => t.note(format!("use_backend: none applies: default_backend {n}")),
            (None, None) => t.note("use_backend: none applies, no default_backend"),
        }
    }

    /// `unique-id-format`: the request's id, made once as the request rules begin (so the
    /// `unique-id` fetch has it), and sent to the server in `unique-id-header` once the
    /// backend's rules have run (`header`).
    #[inline(always)]
    fn make_unique_id(&mut self, be: Option<&Backend>, header: bool) {
        if self.fe.log.unique_id.is_some() {
            self.make_unique_id_now(be, header);
        }
    }

    #[inline(never)]
    fn make_unique_id_now(&mut self, be: Option<&Backend>, header: bool) {
        let Some(f) = &self.fe.log.unique_id else { return };
        if self.vars.unique_id.is_none() {
            let no = *self.stream_no.get_or_insert_with(crate::log::next_stream_number);
            let mut base = self.base(be);
            base.body = &[];
            let ctx = base.ctx(self.req, None, self.vars);
            let stream = crate::rules::format::Stream {
                fe: self.fe,
                be: be.map(|b| b as _),
                outcome: self.o,
                now: crate::clock::now(),
                wall: crate::clock::wall(),
                request_line: None,
                captures: None,
                unique_id: None,
                actconn: self.actconn,
                request_counter: no,
                log_count: self.fe.log.count.load(std::sync::atomic::Ordering::Relaxed),
                server_conn: None,
                http: true,
                asap: self.fe.log.logasap,
            };
            let mut id = Vec::with_capacity(64);
            f.render(&ctx, Some(&stream), &mut id);
            id.truncate(127);
            self.vars.unique_id = Some(id);
        }
        if let (true, Some(h), Some(id)) =
            (header, &self.fe.log.unique_id_header, &self.vars.unique_id)
        {
            let _ = self.req.add_header(h.as_bytes(), id);
        }
    }
}

/// The fixed parts of a fetch context for rules: where the connection comes from and goes to
/// (`addrs`), the proxies and server (`at`), what of the request body has arrived, and the
/// client connection's facts (`conn`: its stream, HTTP/2, PROXY header, `bind` line).
pub fn base<'b>(
    fe: &'b Frontend,
    http: &HttpProxy,
    (src, dst): (Option<SocketAddr>, Option<SocketAddr>),
    (backend, server): (Option<&'b Backend>, Option<&'b str>),
    body: &'b [u8],
    (client, h2, pp, bind_no): ConnFacts<'b>,
) -> Base<'b> {
    Base {
        src,
        dst,
        proc_vars: &fe.proc_vars,
        frontend: &fe.name,
        fe: Some(fe),
        bind_no,
        backend: backend.map(|b| b as _),
        server,
        backends: &*fe.backends,
        body,
        body_chunked: false,
        max_head: http.bufsize,
        data_htx: 0,
        client,
        told_tls: None,
        h2,
        pp,
        server_stream: None,
        comp: None,
    }
}

/// What fetches read of the client connection: its stream, whether it speaks HTTP/2, its PROXY
/// header, its `bind` line's number.
pub type ConnFacts<'b> =
    (Option<&'b Stream>, bool, Option<&'b crate::connection::proxy::Header>, u16);

/// The connection mode of a transaction: the stricter of the frontend's and the backend's.
#[inline]
pub fn conn_mode(fe: &HttpProxy, be: &HttpProxy) -> crate::http_settings::ConnMode {
    fe.conn_mode.max(be.conn_mode)
}

/// Whether `be` is the frontend itself (a `listen` section), whose rules already ran.
pub fn is_own_backend(fe: &Frontend, be: &Arc<Backend>) -> bool {
    fe.is_own_backend(be)
}

/// Whether a proxy has `http-request` work (rules, legacy redirects,
/// `option http-restrict-req-hdr-names`): without any, its analyser does nothing.
fn any_request_rules(r: &ProxyRules) -> bool {
    !r.http_request.is_empty() || !r.redirects.is_empty() || r.restrict_hdr_names != 0
}

/// `option http-restrict-req-hdr-names delete|reject` (`mode` 1 or 2): header names with a
/// character other than a letter, a digit or `-` are removed, or (false) refuse the request.
fn restrict_header_names(req: &mut Head, mode: u8) -> bool {
    let bad = |n: &[u8]| n.iter().any(|&c| !c.is_ascii_alphanumeric() && c != b'-');
    if !req.headers().any(|(n, _)| bad(n)) {
        return true;
    }
    if mode == 2 {
        return false;
    }
    req.retain_headers(|n, _| !bad(n));
    true
}

#[cfg(test)]
mod response_tests;
#[cfg(test)]
mod tests;
