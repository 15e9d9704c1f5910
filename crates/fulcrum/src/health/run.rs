//! Running one check: its steps in order over a connection (HAProxy's `tcpcheck_main`), within
//! HAProxy's time limits, ending in a [`CheckResult`] with HAProxy's status and message.
//!
//! Time limits: the connection must open within `inter` (or `timeout connect` when
//! `timeout check` is set, if shorter); once it is open, the rest must finish within
//! `timeout check`, or within what is left of `inter` without it. A check connection is closed
//! with a reset unless its connect step says `linger` (as HAProxy: no TIME_WAIT per check).
//!
//! Connections are the proxy's own lazily registered [`Stream`]s: on loopback a connect check
//! is `socket`, `connect`, `getpeername`, `close` and nothing else (no event-loop
//! registration), and a check waits for readiness only when a read would block.

use std::io;
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::time::Duration;

use fulcrum_config::{CheckKind, CheckStatus, CheckStep, ConnectStep, SendStep};
use tokio::net::UnixStream;
use tokio::time::Instant;

use super::agent::AgentReply;
use super::expect::{self, Eval, Expect, Wording};
use super::http;
use crate::connection::{Pipe, Stream};
use crate::http::peer::Peer;
use crate::rules::check;
use crate::server::state::CheckResult;

/// A check's PROXY v2 header: HAProxy's `LOCAL` command (the connection is the proxy's own),
/// or with `pp2-never-send-local` a `PROXY` one with the check connection's addresses; a
/// CRC32C when the server's header has one.
#[derive(Clone, Copy, Debug)]
pub struct ProxyV2 {
    pub local: bool,
    pub crc32c: bool,
}

/// Where and how to check, prepared once per check task.
#[derive(Debug)]
pub struct Plan {
    pub kind: CheckKind,
    pub steps: Vec<Step>,
    /// Default destination: the server's (or `addr`'s) address with the check port.
    pub dest: Dest,
    pub inter: Duration,
    pub timeout_check: Option<Duration>,
    pub timeout_connect: Option<Duration>,
    /// The default connect sends a PROXY header: `check-send-proxy`, or the server's
    /// `send-proxy`/`send-proxy-v2` when the check goes to its address and port (HAProxy's
    /// `init_srv_check`); health checks only.
    pub send_proxy: bool,
    /// The server's `send-proxy-v2`: the header a check sends is version 2 (else 1).
    pub proxy_v2: Option<ProxyV2>,
    /// `check-via-socks4`: the server's SOCKS4 proxy, which default connects go through.
    pub socks4: Option<std::net::SocketAddr>,
    /// The server's `socks4` proxy, for a `tcp-check connect via-socks4`.
    pub socks4_proxy: Option<std::net::SocketAddr>,
    /// `source` (the server's, else its backend's): how the check's socket is bound.
    pub source: Option<std::sync::Arc<crate::server::source::SourceBind>>,
    /// `check-ssl` (or the server's `ssl`): default connects run over TLS, sending this SNI.
    pub tls: Option<CheckTls>,
    pub disable_on_404: bool,
    /// HTTP checks speak HTTP/2 (`check-proto h2`): the request and answer go through one
    /// stream of a connection of the check's own (`http::h2::upstream`).
    pub h2: bool,
    pub bufsize: usize,
    /// What the HTTP expect steps read besides the status.
    pub needs: http::Needs,
    /// The configured steps' samples (`set-var`, `name-lf`, `value-lf`), by [`Step::at`].
    pub samples: std::sync::Arc<Vec<crate::rules::check::StepSamples>>,
}

impl Plan {
    /// What the expect steps of `steps` read from an HTTP answer.
    pub fn needs(steps: &[Step]) -> http::Needs {
        let mut n = http::Needs::default();
        for s in steps {
            if let Action::Expect(x) = &s.action {
                match x.step.kind {
                    fulcrum_config::ExpectKind::Header(_) => n.headers = true,
                    fulcrum_config::ExpectKind::Body(_)
                    | fulcrum_config::ExpectKind::BodyRegex(_) => n.body = true,
                    _ => {}
                }
            }
        }
        n
    }
}

/// A TLS client configuration for checks, and the SNI to send.
pub type CheckTls = (std::sync::Arc<rustls::ClientConfig>, Option<String>);

/// Where a check connects.
#[derive(Clone, Debug)]
pub enum Dest {
    Inet(SocketAddr),
    Unix(std::path::PathBuf),
}

/// A step ready to run; `id` is HAProxy's step number in messages (0: the implicit connect).
#[derive(Debug)]
pub struct Step {
    pub id: u32,
    pub comment: Option<String>,
    pub action: Action,
    /// The configured step it comes from (`usize::MAX`: one HAProxy adds).
    pub at: usize,
}

#[derive(Debug)]
pub enum Action {
    Connect {
        step: ConnectStep,
        implicit: bool,
        /// For a `connect ssl` step: its configuration (the server's check settings with the
        /// step's `alpn`) and `sni`, set when the task's plan is made.
        tls: Option<CheckTls>,
    },
    /// The bytes are built once when they never change (no `send-state`).
    Send(SendStep, Option<Vec<u8>>),
    Expect(Box<Expect>),
    /// `set-var(<name>[,<cond>...]) <expr>` (the expression in [`Plan::samples`]).
    SetVar {
        scope: fulcrum_config::VarScope,
        name: Box<str>,
        conds: u8,
    },
    UnsetVar {
        scope: fulcrum_config::VarScope,
        name: Box<str>,
    },
}

impl Plan {
    /// The steps of a configured check with HAProxy's implicit ones added: a first `connect`
    /// when none starts the list, and for HTTP a last `expect status 200-399` after a send.
    pub fn steps(kind: CheckKind, configured: &[CheckStep], send_state: bool) -> Vec<Step> {
        let mut out = Vec::new();
        // HAProxy gives a comment to the steps after it while they are of one kind; a connect
        // takes it for itself.
        let mut comment: Option<String> = None;
        let mut prev: Option<std::mem::Discriminant<CheckStep>> = None;
        let comment_kind = std::mem::discriminant(&CheckStep::Comment(String::new()));
        for (i, s) in configured.iter().enumerate() {
            let id = i as u32 + 1;
            let kind = std::mem::discriminant(s);
            if prev.is_some_and(|p| p != kind && p != comment_kind) {
                comment = None;
            }
            prev = Some(kind);
            match s {
                CheckStep::Comment(c) => comment = Some(c.clone()),
                CheckStep::Connect(c) => {
                    let own = c.comment.clone().or(comment.take());
                    let action = Action::Connect { step: c.clone(), implicit: false, tls: None };
                    out.push(Step { id, comment: own, action, at: i });
                }
                CheckStep::SetVar { scope, name, conds, .. } => {
                    let action =
                        Action::SetVar { scope: *scope, name: name.as_str().into(), conds: *conds };
                    out.push(Step { id, comment: None, action, at: i });
                }
                CheckStep::UnsetVar { scope, name } => {
                    let action = Action::UnsetVar { scope: *scope, name: name.as_str().into() };
                    out.push(Step { id, comment: None, action, at: i });
                }
                CheckStep::Send(snd) => {
                    let own = match snd {
                        SendStep::Bytes { comment: Some(c), .. } => Some(c.clone()),
                        SendStep::Http(h) if h.comment.is_some() => h.comment.clone(),
                        SendStep::Lf { comment: Some(c), .. } => Some(c.clone()),
                        _ => comment.clone(),
                    };
                    let bytes = match snd {
                        SendStep::Bytes { data, .. } => Some(data.clone()),
                        SendStep::Http(h) if !(send_state || h.has_lf()) => {
                            Some(http::request(h, None))
                        }
                        // Built at each send: it carries the time, the server's state, or
                        // the samples of the run.
                        SendStep::Http(_) | SendStep::Dated { .. } | SendStep::Lf { .. } => None,
                    };
                    let action = Action::Send(snd.clone(), bytes);
                    out.push(Step { id, comment: own, action, at: i });
                }
                CheckStep::Expect(e) => {
                    let mut e = e.clone();
                    if e.comment.is_none() {
                        e.comment = comment.clone();
                    }
                    let own = e.comment.clone();
                    let action = Action::Expect(Box::new(Expect::new(e)));
                    out.push(Step { id, comment: own, action, at: i });
                }
            }
        }
        if kind == CheckKind::Http
            && matches!(out.last().map(|s| &s.action), Some(Action::Send(..)))
        {
            let e = fulcrum_config::ExpectStep::new(fulcrum_config::ExpectKind::Status(vec![(
                200, 399,
            )]));
            let id = out.last().map_or(1, |s| s.id + 1);
            let action = Action::Expect(Box::new(Expect::new(e)));
            out.push(Step { id, comment: None, action, at: usize::MAX });
        }
        let first = out
            .iter()
            .find(|s| !matches!(s.action, Action::SetVar { .. } | Action::UnsetVar { .. }));
        if !matches!(first.map(|s| &s.action), Some(Action::Connect { .. })) {
            let step = ConnectStep::default();
            out.insert(
                0,
                Step {
                    id: 0,
                    comment: None,
                    action: Action::Connect { step, implicit: true, tls: None },
                    at: usize::MAX,
                },
            );
        }
        out
    }
}

/// Buffers a check task keeps from one run to the next: what was received, and a read area
/// initialised once (a read does not zero memory each time). It also holds the run's
/// connection until the result is applied ([`Scratch::close`]): whoever sees the connection
/// end (an agent that closes after its line) then finds the result already in the server's
/// state, as with HAProxy.
#[derive(Default)]
pub struct Scratch {
    buf: Vec<u8>,
    chunk: Vec<u8>,
    conn: Option<Conn>,
}

impl Scratch {
    /// Closes the last run's connection (once its result is applied).
    pub fn close(&mut self) {
        self.conn = None;
    }
}

/// A check connection.
struct Conn(Peer);

impl Conn {
    /// Reads what is there (waiting for it if nothing is) onto the end of `buf`, at most up to
    /// `max` bytes in all; `chunk` is the read area.
    async fn read(
        &mut self,
        buf: &mut Vec<u8>,
        chunk: &mut Vec<u8>,
        max: usize,
    ) -> io::Result<usize> {
        let room = max.saturating_sub(buf.len()).clamp(1, 16384);
        if chunk.len() < room {
            chunk.resize(room, 0);
        }
        let r = loop {
            match self.0.try_read(&mut chunk[..room]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = std::future::poll_fn(|cx| self.0.poll_read_ready(cx)).await {
                        break Err(e);
                    }
                }
                r => break r,
            }
        };
        if let Ok(n) = r {
            buf.extend_from_slice(&chunk[..n]);
        }
        r
    }

    async fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        while !b.is_empty() {
            match self.0.try_write(b) {
                Ok(n) => b = &b[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::future::poll_fn(|cx| self.0.poll_write_ready(cx)).await?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Where the check stands when it ends: before a connection opened, or after.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Connected,
}

/// The state of the server a check reports in `http-check send-state`.
pub type SendState<'a> = &'a dyn Fn() -> String;

/// What one run found.
#[derive(Debug)]
pub enum Outcome {
    Done(CheckResult),
    /// An analysis reported the check passed before the run ended (HAProxy's MySQL and LDAP
    /// checks), then the run reported as it ended: two results, counted twice as in HAProxy.
    Twice(CheckResult, CheckResult),
    /// An agent answered this line (`None`: it closed without ending a line).
    Agent {
        reply: Option<AgentReply>,
        duration: Duration,
    },
}

/// Runs the check once; `scratch` is a buffer kept from one run to the next; `server_up`: the
/// server is up now (`disable-on-404` applies only then).
pub async fn run(
    plan: &Plan,
    send_state: Option<SendState<'_>>,
    scratch: &mut Scratch,
    server_up: bool,
) -> Outcome {
    let start = Instant::now();
    let mut buf = std::mem::take(&mut scratch.buf);
    buf.clear();
    let chunk = std::mem::take(&mut scratch.chunk);
    let mut r = Runner {
        plan,
        start,
        deadline: start + plan.inter,
        conn: None,
        buf,
        closed: false,
        early: None,
        code: None,
        server_up,
        chunk,
        vars: None,
    };
    let outcome = r.steps(send_state).await;
    scratch.buf = std::mem::take(&mut r.buf);
    scratch.chunk = std::mem::take(&mut r.chunk);
    scratch.conn = r.conn.take();
    let duration = start.elapsed();
    let done = |mut result: CheckResult| {
        result.duration = Some(duration);
        truncate(&mut result.desc);
        result
    };
    match (outcome, r.early.take()) {
        (Ok(result), None) => Outcome::Done(done(result)),
        (Ok(result), Some(early)) => Outcome::Twice(done(early), done(result)),
        (Err(reply), _) => Outcome::Agent { reply, duration },
    }
}

/// HAProxy keeps 127 bytes of a check's text (`HCHK_DESC_LEN`).
fn truncate(desc: &mut String) {
    let mut end = desc.len().min(127);
    while !desc.is_char_boundary(end) {
        end -= 1;
    }
    desc.truncate(end);
}

struct Runner<'a> {
    plan: &'a Plan,
    start: Instant,
    deadline: Instant,
    conn: Option<Conn>,
    /// Bytes received since the last send.
    buf: Vec<u8>,
    /// The server closed its side.
    closed: bool,
    /// A result an analysis reported before the run ended ([`Eval::Passed`]).
    early: Option<CheckResult>,
    /// The status code of the HTTP answer read last.
    code: Option<u16>,
    /// The server is up: `disable-on-404` applies only then.
    server_up: bool,
    /// The read area ([`Scratch`]).
    chunk: Vec<u8>,
    /// The run's `check.` variables, once a step sets one.
    vars: Option<Box<crate::rules::sample::Vars>>,
}

impl Runner<'_> {
    /// `Err` carries an agent's answer (the agent's expect step ends the run).
    async fn steps(
        &mut self,
        send_state: Option<SendState<'_>>,
    ) -> Result<CheckResult, Option<AgentReply>> {
        let tcp_check = self.plan.kind == CheckKind::Tcp;
        let mut must_read = true;
        let mut last: Option<&Step> = None;
        for (i, step) in self.plan.steps.iter().enumerate() {
            last = Some(step);
            match &step.action {
                Action::Connect { step: c, implicit, tls } => {
                    if let Err(r) = self.connect(c, *implicit, tls.as_ref(), step).await {
                        return Ok(r);
                    }
                    must_read = true;
                }
                Action::Send(s, prebuilt) => {
                    self.buf.clear();
                    must_read = true;
                    if let Err(r) = self.send_step(s, prebuilt.as_deref(), send_state, step).await {
                        return Ok(r);
                    }
                }
                Action::SetVar { scope, name, conds } => {
                    let vars = self.vars.get_or_insert_with(Default::default);
                    let expr = self.plan.samples.get(step.at).and_then(|s| s.expr.as_ref());
                    let scope_of = crate::rules::check::Scope { vars, buf: &self.buf };
                    if let Some(v) = expr.and_then(|e| scope_of.eval(e)) {
                        vars.flush();
                        vars.set_if(*scope, name, v, *conds);
                    }
                }
                Action::UnsetVar { scope, name } => {
                    if let Some(v) = self.vars.as_mut() {
                        v.unset(*scope, name);
                    }
                }
                Action::Expect(x) => {
                    let last_step = i + 1 == self.plan.steps.len();
                    let w = Wording { tcp_check, step_id: step.id, last_step };
                    if let ControlFlow::Break(end) =
                        self.expect_step(x, step, w, &mut must_read).await
                    {
                        return end;
                    }
                }
            }
        }
        Ok(self.success(last))
    }

    /// An `expect` step: reads until the answer is known and judges it (`Break`: the run's end).
    async fn expect_step(
        &mut self,
        x: &Expect,
        step: &Step,
        w: Wording,
        must_read: &mut bool,
    ) -> ControlFlow<Result<CheckResult, Option<AgentReply>>> {
        loop {
            if *must_read && !self.closed {
                if let Err(r) = self.read_more(step, x).await {
                    return ControlFlow::Break(Ok(r));
                }
            }
            *must_read = false;
            let full = self.buf.len() >= self.plan.bufsize;
            let last_read = self.closed || full;
            if x.step.kind
                == fulcrum_config::ExpectKind::Custom(fulcrum_config::CustomExpect::Agent)
            {
                match super::agent::parse(&self.buf) {
                    Some(reply) => return ControlFlow::Break(Err(Some(reply))),
                    None if last_read => return ControlFlow::Break(Err(None)),
                    None => {
                        *must_read = true;
                        continue;
                    }
                }
            }
            let ev = if self.plan.kind == CheckKind::Http {
                match http::parse(&self.buf, self.closed, self.plan.bufsize, self.plan.needs) {
                    Err(_) => Eval::Fail {
                        status: CheckStatus::L7Rsp,
                        code: None,
                        desc: comment_only(&x.step.comment),
                    },
                    Ok(resp) => {
                        self.code = resp.as_ref().map(|r| r.status);
                        if let Some(code) = self.code {
                            // A 404 stops an up server's traffic instead of failing.
                            if self.plan.disable_on_404 && self.server_up && code == 404 {
                                return ControlFlow::Break(Ok(CheckResult {
                                    status: CheckStatus::L7OkCond,
                                    code: Some(404),
                                    desc: String::new(),
                                    duration: None,
                                }));
                            }
                        }
                        let code = resp.as_ref().map(|r| r.status);
                        let rendered = self.rendered_header(x, step);
                        let ev = expect::http_with(
                            x,
                            rendered.as_ref(),
                            resp.as_ref(),
                            last_read,
                            false,
                        );
                        if let Eval::Fail { status, desc, .. } = ev {
                            return ControlFlow::Break(Ok(CheckResult {
                                status,
                                code: code.map(i32::from),
                                desc,
                                duration: None,
                            }));
                        }
                        ev
                    }
                }
            } else {
                expect::tcp(x, &self.buf, last_read, w)
            };
            match ev {
                Eval::Continue => break,
                Eval::Passed { status, code, desc } => {
                    let code = code.map(i32::from);
                    self.early = Some(CheckResult { status, code, desc, duration: None });
                    break;
                }
                Eval::Wait if last_read => {
                    let desc = format!("TCPCHK got an empty response at step {}", step.id);
                    return ControlFlow::Break(Ok(CheckResult::new(
                        x.step.error_status.unwrap_or(CheckStatus::L7Rsp),
                        desc,
                    )));
                }
                Eval::Wait => *must_read = true,
                Eval::Fail { status, code, desc } => {
                    return ControlFlow::Break(Ok(CheckResult {
                        status,
                        code: code.map(i32::from),
                        desc,
                        duration: None,
                    }))
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// A `send` step: its bytes, built now unless they were built with the plan, sent.
    async fn send_step(
        &mut self,
        s: &SendStep,
        prebuilt: Option<&[u8]>,
        send_state: Option<SendState<'_>>,
        step: &Step,
    ) -> Result<(), CheckResult> {
        let built;
        let bytes = match (prebuilt, s) {
            (Some(b), _) => b,
            (None, SendStep::Http(h)) => {
                let state = send_state.as_ref().map(|f| f());
                let samples = self.plan.samples.get(step.at).filter(|_| h.has_lf());
                let (vars, buf) = (self.vars.as_deref(), &self.buf[..]);
                let rendered =
                    samples.map(|s| check::in_scope(vars, buf, |c| check::http_send(h, s, c)));
                built = http::request(rendered.as_ref().unwrap_or(h), state.as_deref());
                &built[..]
            }
            (None, SendStep::Bytes { data, .. }) => &data[..],
            (None, SendStep::Dated { data, time_at }) => {
                built = dated(data, *time_at);
                &built[..]
            }
            (None, SendStep::Lf { binary, .. }) => {
                built = self.rendered_send(*binary, step)?;
                // HAProxy sends nothing for an empty string, and goes on.
                if built.is_empty() {
                    return Ok(());
                }
                &built[..]
            }
        };
        self.send(bytes, step).await
    }

    /// A `send-lf` / `send-binary-lf` step's bytes for this run (hexadecimal digits decoded
    /// for a binary one, HAProxy's message when they are not).
    fn rendered_send(&self, binary: bool, step: &Step) -> Result<Vec<u8>, CheckResult> {
        let Some(fmt) = self.plan.samples.get(step.at).and_then(|s| s.send.as_ref()) else {
            return Ok(Vec::new());
        };
        let text = check::in_scope(self.vars.as_deref(), &self.buf, |scope| scope.render(fmt));
        if !binary {
            return Ok(text.into_bytes());
        }
        fulcrum_config::parse_hex(&text).map_err(|_| {
            let desc =
                format!("tcp-check send : failed to build log-format string at step {}", step.id);
            CheckResult::new(CheckStatus::L7Rsp, desc)
        })
    }

    /// The result once every step passed.
    fn success(&self, last: Option<&Step>) -> CheckResult {
        match last.map(|s| &s.action) {
            Some(Action::Expect(x)) => {
                let status = x.step.ok_status.unwrap_or(CheckStatus::L7Ok);
                let mut desc = match &x.step.on_success {
                    Some(m) if self.plan.kind == CheckKind::Http => expect::message(m, b""),
                    Some(m) => expect::message(m, &self.buf),
                    None => String::new(),
                };
                if desc.is_empty() && self.plan.kind == CheckKind::Tcp {
                    desc = "(tcp-check)".into();
                }
                let code = match self.plan.kind {
                    CheckKind::Http => self.code,
                    // HAProxy's SPOP check leaves its code at 0, which its stats show.
                    CheckKind::Spop => Some(0),
                    _ => expect::status_code(&x.step, &self.buf),
                };
                CheckResult { status, code: code.map(i32::from), desc, duration: None }
            }
            // Over TLS, HAProxy reports a handshake that went through as layer 6.
            Some(Action::Connect { implicit, .. }) => {
                let tls = matches!(&self.conn, Some(Conn(Peer::Bytes(Stream::Tls(_)))));
                let status = if tls { CheckStatus::L6Ok } else { CheckStatus::L4Ok };
                CheckResult::new(status, if *implicit { "" } else { "(tcp-check)" })
            }
            _ => CheckResult::new(CheckStatus::L7Ok, "(tcp-check)"),
        }
    }

    /// An `expect hdr` step's `name-lf` / `value-lf` rendered for this run.
    fn rendered_header(&self, x: &Expect, step: &Step) -> Option<fulcrum_config::HeaderExpect> {
        let fulcrum_config::ExpectKind::Header(h) = &x.step.kind else { return None };
        let s = self.plan.samples.get(step.at)?;
        if s.name.is_none() && s.value.is_none() {
            return None;
        }
        let empty = crate::rules::sample::Vars::default();
        let vars = self.vars.as_deref().unwrap_or(&empty);
        Some(crate::rules::check::header(
            h,
            s,
            &crate::rules::check::Scope { vars, buf: &self.buf },
        ))
    }

    /// The `tcp-check` context HAProxy appends to connection errors.
    fn where_(&self, step: &Step) -> String {
        if self.plan.kind != CheckKind::Tcp {
            return String::new();
        }
        let mut s = if step.id == 0 {
            " at initial connection step of tcp-check".to_string()
        } else {
            format!(" at step {} of tcp-check", step.id)
        };
        match &step.action {
            Action::Connect { step: c, implicit: false, .. } => match c.port {
                Some(p) => s.push_str(&format!(" (connect port {p})")),
                None => s.push_str(" (connect)"),
            },
            Action::Expect(x) => s.push_str(&match &x.step.kind {
                fulcrum_config::ExpectKind::String(p) => {
                    format!(" (expect string '{}')", String::from_utf8_lossy(p))
                }
                fulcrum_config::ExpectKind::Binary(p) => {
                    format!(" (expect binary '{}')", hex(p))
                }
                fulcrum_config::ExpectKind::Regex(_) => " (expect regex)".into(),
                fulcrum_config::ExpectKind::BinaryRegex(_) => " (expect binary regex)".into(),
                _ => " (expect custom function)".into(),
            }),
            Action::Send(..) => s.push_str(" (send)"),
            _ => {}
        }
        if step.id != 0 {
            if let Some(c) = &step.comment {
                s.push_str(&format!(" comment: '{c}'"));
            }
        }
        s
    }

    /// A connection problem, as HAProxy's `chk_report_conn_err` words it.
    fn conn_error(
        &self,
        phase: Phase,
        err: Option<&io::Error>,
        timed_out: bool,
        step: &Step,
    ) -> CheckResult {
        let mut desc = err.map(crate::sys::os_words).unwrap_or_default();
        desc.push_str(&self.where_(step));
        let status = match (phase, timed_out) {
            (Phase::Connecting, true) => CheckStatus::L4Timeout,
            (Phase::Connecting, false) => CheckStatus::L4Con,
            (Phase::Connected, false) => CheckStatus::SockErr,
            (Phase::Connected, true) => match &step.action {
                Action::Expect(x) => x.step.tout_status.unwrap_or(CheckStatus::L7Timeout),
                _ => CheckStatus::L7Timeout,
            },
        };
        CheckResult::new(status, desc)
    }

    async fn connect(
        &mut self,
        c: &ConnectStep,
        implicit: bool,
        own_tls: Option<&CheckTls>,
        step: &Step,
    ) -> Result<(), CheckResult> {
        // HAProxy: the server's check settings apply to its implicit connect and to a
        // `connect default`; a step's own `ssl` / `send-proxy` / `via-socks4` always do.
        let dflt = implicit || c.default;
        // A second connect closes the first connection.
        self.conn = None;
        self.buf.clear();
        self.closed = false;
        let mut dest = self.plan.dest.clone();
        if let Dest::Inet(a) = &mut dest {
            if let Some(ip) = c.addr.as_deref().and_then(|h| h.parse::<std::net::IpAddr>().ok()) {
                a.set_ip(ip);
            }
            if let Some(p) = c.port {
                a.set_port(p);
            }
        }
        let mut limit = self.start + self.plan.inter;
        if let (Some(_), Some(tc)) = (self.plan.timeout_check, self.plan.timeout_connect) {
            limit = limit.min(Instant::now() + tc);
        }
        let linger = c.linger;
        let socks4 = match (c.via_socks4, dflt) {
            (true, _) => self.plan.socks4_proxy,
            (false, true) => self.plan.socks4,
            (false, false) => None,
        };
        // Nothing to send first: the handshake's last ACK can wait (HAProxy's
        // `CONNECT_DELACK_ALWAYS`, for steps not followed by an expect).
        let next = self.plan.steps.iter().skip_while(|s| !std::ptr::eq(*s, step)).nth(1);
        let delay_ack = !matches!(next.map(|s| &s.action), Some(Action::Expect(_)));
        let attempt = async {
            match &dest {
                Dest::Inet(addr) => {
                    let s = match socks4 {
                        Some(proxy) => {
                            let s = Stream::connect_check(proxy, false).await?;
                            crate::tcp::socks4::handshake(&s, *addr).await?;
                            s
                        }
                        None => match &self.plan.source {
                            Some(src) => {
                                let bind = |s: &socket2::Socket| src.bind_check(s);
                                Stream::connect_check_bound(*addr, delay_ack, bind).await?
                            }
                            None => Stream::connect_check(*addr, delay_ack).await?,
                        },
                    };
                    if linger {
                        // `linger`: a clean close for servers that dislike resets.
                        socket2::SockRef::from(&s).set_linger(None)?;
                    }
                    Ok(Conn(Peer::Bytes(s)))
                }
                Dest::Unix(p) => Ok(Conn(Peer::Bytes(Stream::Unix(UnixStream::connect(p).await?)))),
            }
        };
        let conn = match tokio::time::timeout_at(limit, attempt).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(self.conn_error(Phase::Connecting, Some(&e), false, step)),
            Err(_) => return Err(self.conn_error(Phase::Connecting, None, true, step)),
        };
        self.conn = Some(conn);
        if let Some(tc) = self.plan.timeout_check {
            self.deadline = Instant::now() + tc;
        }
        let proxy = c.send_proxy || (dflt && self.plan.send_proxy);
        if proxy {
            let line = self.proxy_line();
            self.send(&line, step).await?;
        }
        let tls = match (own_tls, dflt) {
            (Some(t), _) => Some(t),
            (None, true) => self.plan.tls.as_ref(),
            (None, false) => None,
        };
        if let Some((config, sni)) = tls {
            let Some(Conn(Peer::Bytes(plain))) = self.conn.take() else { return Ok(()) };
            let ip = match &dest {
                Dest::Inet(a) => a.ip(),
                Dest::Unix(_) => std::net::IpAddr::from([127, 0, 0, 1]),
            };
            let name = crate::tls::server_name(sni.as_deref(), ip);
            let tls = crate::connection::tls::TlsStream::client(
                plain,
                std::sync::Arc::clone(config),
                name,
            )
            .map_err(|e| CheckResult::new(CheckStatus::L6Rsp, crate::sys::os_words(&e)))?;
            match tokio::time::timeout_at(limit, tls.handshake()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    // HAProxy's words (its log readers match them), without the library's.
                    let closed = matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::BrokenPipe
                    );
                    let mut desc = if closed {
                        "Connection closed during SSL handshake".to_string()
                    } else {
                        "SSL handshake failure".to_string()
                    };
                    desc.push_str(&self.where_(step));
                    return Err(CheckResult::new(CheckStatus::L6Rsp, desc));
                }
                Err(_) => {
                    let mut desc = "SSL handshake timeout".to_string();
                    desc.push_str(&self.where_(step));
                    return Err(CheckResult::new(CheckStatus::L6Timeout, desc));
                }
            }
            self.conn = Some(Conn(Peer::Bytes(Stream::Tls(Box::new(tls)))));
        }
        if self.plan.h2 {
            let Some(Conn(Peer::Bytes(s))) = self.conn.take() else { return Ok(()) };
            let tune = fulcrum_config::TuneH2::default();
            match crate::http::h2::upstream::start(s, tune, None, None).await {
                Ok(s) => self.conn = Some(Conn(s)),
                Err(e) => return Err(self.conn_error(Phase::Connected, Some(&e), false, step)),
            }
        }
        Ok(())
    }

    /// PROXY v1 line of the check connection itself (HAProxy sends its own addresses).
    fn proxy_line(&self) -> Vec<u8> {
        let mut addrs = (None, None);
        if let Some(Conn(Peer::Bytes(s @ Stream::Tcp(_)))) = &self.conn {
            let sock = socket2::SockRef::from(s);
            addrs = (
                sock.local_addr().ok().and_then(|a| a.as_socket()),
                sock.peer_addr().ok().and_then(|a| a.as_socket()),
            );
        }
        match self.plan.proxy_v2 {
            None => crate::connection::proxy::v1(addrs.0, addrs.1),
            Some(v2) => {
                let extras =
                    crate::connection::proxy::Extras { crc32c: v2.crc32c, ..Default::default() };
                let (src, dst) = if v2.local { (None, None) } else { addrs };
                crate::connection::proxy::v2(src, dst, &extras)
            }
        }
    }

    async fn send(&mut self, bytes: &[u8], step: &Step) -> Result<(), CheckResult> {
        if bytes.len() >= self.plan.bufsize {
            let desc = format!(
                "tcp-check send : string too large ({}) for buffer size ({}) at step {}",
                bytes.len(),
                self.plan.bufsize,
                step.id
            );
            return Err(CheckResult::new(CheckStatus::L7Rsp, desc));
        }
        let deadline = self.deadline;
        let Some(conn) = self.conn.as_mut() else {
            return Err(CheckResult::new(CheckStatus::SockErr, String::new()));
        };
        match tokio::time::timeout_at(deadline, conn.write_all(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.conn_error(Phase::Connected, Some(&e), false, step)),
            Err(_) => Err(self.conn_error(Phase::Connected, None, true, step)),
        }
    }

    /// Reads what the server sends next (or learns it closed).
    async fn read_more(&mut self, step: &Step, x: &Expect) -> Result<(), CheckResult> {
        let deadline = self.deadline;
        let max = self.plan.bufsize;
        let Some(conn) = self.conn.as_mut() else {
            return Err(CheckResult::new(CheckStatus::SockErr, String::new()));
        };
        match tokio::time::timeout_at(deadline, conn.read(&mut self.buf, &mut self.chunk, max))
            .await
        {
            Ok(Ok(0)) => {
                self.closed = true;
                if self.buf.is_empty() && self.plan.kind != CheckKind::Http {
                    let mut desc = format!("TCPCHK got an empty response at step {}", step.id);
                    if let Some(c) = &step.comment {
                        desc.push_str(&format!(" comment: '{c}'"));
                    }
                    return Err(CheckResult::new(
                        x.step.error_status.unwrap_or(CheckStatus::L7Rsp),
                        desc,
                    ));
                }
                Ok(())
            }
            Ok(Ok(_)) => Ok(()),
            // Network errors count only when nothing was received: an RST right after the last
            // data is common.
            Ok(Err(_)) if !self.buf.is_empty() => {
                self.closed = true;
                Ok(())
            }
            Ok(Err(e)) => Err(self.conn_error(Phase::Connected, Some(&e), false, step)),
            Err(_) => Err(self.conn_error(Phase::Connected, None, true, step)),
        }
    }
}

/// `data` with the current Unix time written at `at` (4 bytes, big-endian).
fn dated(data: &[u8], at: usize) -> Vec<u8> {
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut out = data.to_vec();
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&(now.as_secs() as u32).to_be_bytes());
    }
    out
}

fn comment_only(c: &Option<String>) -> String {
    c.as_ref().map(|c| format!(" comment: {c}")).unwrap_or_default()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_texts_keep_haproxys_127_bytes_on_a_char_boundary() {
        let mut long = "x".repeat(200);
        truncate(&mut long);
        assert_eq!(long.len(), 127);
        let mut accented = format!("{}é", "x".repeat(126));
        truncate(&mut accented);
        assert_eq!(accented.len(), 126);
    }

    #[test]
    fn a_dated_send_carries_the_unix_time_big_endian() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(0);
        let out = dated(&[0xaa; 16], 11);
        let t = u32::from_be_bytes([out[11], out[12], out[13], out[14]]);
        assert!(t >= before && t - before < 5, "{t} vs {before}");
        assert_eq!((&out[..11], out[15]), (&[0xaa; 11][..], 0xaa));
        // A slot past the end is left alone.
        assert_eq!(dated(&[1, 2], 11), [1, 2]);
    }
}
