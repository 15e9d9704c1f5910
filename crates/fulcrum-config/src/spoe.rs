//! SPOE, HAProxy's Stream Processing Offload Engine: `filter spoe [engine <name>] config
//! <file>`, the SPOE configuration file it names (`spoe-agent`, `spoe-message`, `spoe-group`
//! sections, `[engine]` scopes), and HAProxy 2.6's checks of both (`parse_spoe_flt()`,
//! `spoe_check()`, `check_send_spoe_group()` in `flt_spoe.c`), with its messages.
//!
//! The configuration crate does no I/O: the `filter` line keeps the file's name, and
//! [`load_files`] (which the caller runs once the configuration loaded, with a reader) parses
//! each file for its filter as HAProxy does while it parses the line. The engine speaks SPOP
//! to the agents with what is read here (`fulcrum::spoe`).
//!
//! Must not touch: sockets, the wire format (`fulcrum-spop`).

use crate::args::Diags;
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::model::{
    Condition, Config, HttpAction, Mode, NamedAcl, Proxy, ProxyKind, SampleExpr, Span, TcpAction,
};
use crate::sample::{self, Avail, Ctx};

/// `filter spoe [engine <name>] config <file>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoeFilter {
    /// `engine <name>`: the scope read in the file (`[name]`); without it, the lines outside
    /// any scope.
    pub engine: Option<String>,
    pub file: String,
    pub span: Span,
    /// The agent the file declares, once [`load_files`] read it.
    pub agent: Option<Box<SpoeAgent>>,
}

impl SpoeFilter {
    /// The engine's id, as `send-spoe-group` names it: `engine`, else the agent's name.
    pub fn id(&self) -> &str {
        match (&self.engine, &self.agent) {
            (Some(e), _) => e,
            (None, Some(a)) => &a.name,
            (None, None) => "",
        }
    }
}

/// The events a message may be sent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpoeEvent {
    ClientSession,
    FrontendTcpRequest,
    BackendTcpRequest,
    TcpResponse,
    ServerSession,
    FrontendHttpRequest,
    BackendHttpRequest,
    HttpResponse,
}

impl SpoeEvent {
    const ALL: [(&'static str, SpoeEvent); 8] = [
        ("on-client-session", SpoeEvent::ClientSession),
        ("on-server-session", SpoeEvent::ServerSession),
        ("on-frontend-tcp-request", SpoeEvent::FrontendTcpRequest),
        ("on-backend-tcp-request", SpoeEvent::BackendTcpRequest),
        ("on-tcp-response", SpoeEvent::TcpResponse),
        ("on-frontend-http-request", SpoeEvent::FrontendHttpRequest),
        ("on-backend-http-request", SpoeEvent::BackendHttpRequest),
        ("on-http-response", SpoeEvent::HttpResponse),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, e)| *e == self).map_or("", |(n, _)| n)
    }

    /// Where its arguments are read, as a rule context.
    fn ctx(self) -> Ctx {
        match self {
            // (HAProxy's `SMP_VAL_FE_CON_ACC`.)
            SpoeEvent::ClientSession => Ctx::TcpConnection,
            SpoeEvent::FrontendTcpRequest | SpoeEvent::BackendTcpRequest => Ctx::TcpContent,
            SpoeEvent::TcpResponse | SpoeEvent::ServerSession => Ctx::TcpResponse,
            SpoeEvent::FrontendHttpRequest | SpoeEvent::BackendHttpRequest => Ctx::HttpRequest,
            SpoeEvent::HttpResponse => Ctx::HttpResponse,
        }
    }
}

/// One argument of a message: `[name=]<sample>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoeArg {
    /// Empty for none.
    pub name: String,
    pub expr: SampleExpr,
    pub avail: Avail,
    pub kw: String,
    /// The sample's type (a binary one is sent as SPOP binary data).
    pub out: sample::SmpType,
}

/// A `spoe-message` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoeMessage {
    pub name: String,
    pub span: Span,
    pub args: Vec<SpoeArg>,
    pub acls: Vec<NamedAcl>,
    pub event: Option<SpoeEvent>,
    pub cond: Option<Condition>,
}

/// A `spoe-group` section: messages sent together by `send-spoe-group`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoeGroup {
    pub name: String,
    pub span: Span,
    /// Indexes in [`SpoeAgent::messages`].
    pub messages: Vec<usize>,
}

/// The `spoe-agent` section of a file, with the messages and groups it uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoeAgent {
    pub name: String,
    pub span: Span,
    pub backend: String,
    /// Every message of the file's scope (those sent on an event are in `on_event`).
    pub messages: Vec<SpoeMessage>,
    /// The messages sent on events (`messages` lines with an event), in order.
    pub on_event: Vec<usize>,
    pub groups: Vec<SpoeGroup>,
    /// `option var-prefix` (the agent's name by default).
    pub var_prefix: String,
    pub on_error: Option<String>,
    pub process_time: Option<String>,
    pub total_time: Option<String>,
    pub pipelining: bool,
    pub async_: bool,
    /// `option send-frag-payload` (on by default): a question over the frame size goes in
    /// fragments to an agent that can take them.
    pub send_frag: bool,
    pub continue_on_error: bool,
    pub force_set_var: bool,
    pub dontlog_normal: bool,
    /// Milliseconds; `None`: never (HAProxy warns).
    pub timeout_hello: Option<u32>,
    pub timeout_idle: Option<u32>,
    pub timeout_processing: Option<u32>,
    /// `maxconnrate`, `maxerrrate` (per second; 0: no limit).
    pub max_conn_rate: u32,
    pub max_err_rate: u32,
    pub max_frame_size: u32,
    pub max_waiting_frames: u32,
    /// `register-var-names`.
    pub var_names: Vec<String>,
    /// `log` lines: where the agent's `SPOE: [...]` lines go (`log global` stands for
    /// `global`'s targets).
    pub logs: Vec<crate::model::LogEntry>,
}

/// `filter spoe ...` on a proxy's line: HAProxy's word checks (the file is read later).
pub fn filter(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let (mut engine, mut file) = (None, None);
    let mut i = 2;
    while !line.arg(i).is_empty() {
        let (kw, v) = (line.arg(i), line.arg(i + 1));
        match kw {
            "config" | "engine" if v.is_empty() => {
                let m = format!("'filter' : ''spoe' : '{kw}' option without value'");
                return diags.alert(line, m);
            }
            "config" => file = Some(v.to_string()),
            "engine" => engine = Some(v.to_string()),
            _ => return diags.alert(line, format!("'filter' : 'unknown keyword '{kw}''")),
        }
        i += 2;
    }
    let Some(file) = file else {
        return diags.alert(line, "'filter' : ''spoe' : missing config file'");
    };
    let f = SpoeFilter { engine, file, span: line.span.clone(), agent: None };
    p.filters.push(crate::cache::Filter::Spoe(f));
}

/// `send-spoe-group <engine-id> <group-id>` at word `at` (the action's); the engine and
/// group are found once the files are read.
pub fn action_words(line: &Line, at: usize) -> Result<(HttpAction, usize), String> {
    let (e, g, after) = (line.arg(at + 1), line.arg(at + 2), line.arg(at + 3));
    if e.is_empty() || g.is_empty() || !(after.is_empty() || after == "if" || after == "unless") {
        return Err("expects 2 arguments: <engine-id> <group-id>".into());
    }
    Ok((HttpAction::SendSpoeGroup { engine: e.to_string(), group: g.to_string() }, at + 3))
}

/// Reads every SPOE filter's file with `read` (a file's text, or the system's error text),
/// and checks them as HAProxy 2.6 does; the diagnostics say what went wrong.
pub fn load_files(
    config: &mut Config,
    read: &dyn Fn(&str) -> Result<String, String>,
    env: crate::EnvLookup<'_>,
) -> Vec<Diagnostic> {
    let mut diags = Diags { list: Vec::new() };
    let tcp_backends: Vec<(String, bool)> = config
        .proxies
        .iter()
        .filter(|p| p.kind.is_backend())
        .map(|p| (p.name.clone(), p.mode == Mode::Tcp))
        .collect();
    for p in &mut config.proxies {
        let (kind, name) = (p.kind, p.name.clone());
        for f in &mut p.filters {
            let crate::cache::Filter::Spoe(f) = f else { continue };
            let line = Line { span: f.span.clone(), words: Vec::new() };
            match read(&f.file) {
                Err(e) => {
                    let m =
                        format!("'filter' : 'Could not open configuration file {} : {e}'", f.file);
                    diags.alert(&line, m);
                }
                Ok(text) => {
                    let (agent, more) = parse_file(
                        &f.file,
                        &text,
                        (f.engine.as_deref(), &f.span),
                        (kind, &name),
                        env,
                    );
                    diags.list.extend(more);
                    f.agent = agent.map(Box::new);
                }
            }
        }
        check_proxy(p, &tcp_backends, &mut diags);
    }
    diags.list
}

/// `spoe_check()` and `check_send_spoe_group()` for one proxy.
fn check_proxy(p: &Proxy, backends: &[(String, bool)], diags: &mut Diags) {
    let spoes: Vec<&SpoeFilter> = p
        .filters
        .iter()
        .filter_map(|f| match f {
            crate::cache::Filter::Spoe(s) => Some(s),
            _ => None,
        })
        .collect();
    for (i, f) in spoes.iter().enumerate() {
        let Some(agent) = &f.agent else { continue };
        let line = Line { span: f.span.clone(), words: Vec::new() };
        if spoes[..i].iter().any(|o| o.agent.is_some() && o.id() == f.id()) {
            let m = format!("Proxy {} : duplicated name for SPOE engine '{}'.", p.name, f.id());
            diags.alert(&line, m);
            continue;
        }
        match backends.iter().find(|(n, _)| *n == agent.backend) {
            None => diags.alert(
                &line,
                format!(
                    "Proxy {} : unknown backend '{}' used by SPOE agent '{}' declared at {}.",
                    p.name, agent.backend, agent.name, agent.span
                ),
            ),
            Some((_, false)) => diags.alert(
                &line,
                format!(
                    "Proxy {} : backend '{}' used by SPOE agent '{}' declared at {} does not support HTTP mode.",
                    p.name, agent.backend, agent.name, agent.span
                ),
            ),
            Some(_) => {}
        }
    }
    let rules = p.http_request.iter().map(|r| (&r.action, &r.span, Ctx::HttpRequest));
    let rules =
        rules.chain(p.http_response.iter().map(|r| (&r.action, &r.span, Ctx::HttpResponse)));
    let tcp_req = p.tcp_request_content.iter().filter_map(|r| tcp_do(r, Ctx::TcpContent));
    let tcp_res = p.tcp_response_content.iter().filter_map(|r| tcp_do(r, Ctx::TcpResponse));
    for (action, span, ctx) in rules.chain(tcp_req).chain(tcp_res) {
        let HttpAction::SendSpoeGroup { engine, group } = action else { continue };
        let line = Line { span: span.clone(), words: Vec::new() };
        let Some(agent) = spoes.iter().find(|f| f.id() == engine).and_then(|f| f.agent.as_ref())
        else {
            let m = format!(
                "unable to find SPOE engine '{engine}' used by the send-spoe-group '{group}'"
            );
            diags.alert(&line, m);
            continue;
        };
        let Some(g) = agent.groups.iter().find(|g| g.name == *group) else {
            let m = format!(
                "unable to find SPOE group '{group}' into SPOE engine '{engine}' configuration"
            );
            diags.alert(&line, m);
            continue;
        };
        for &m in &g.messages {
            let msg = &agent.messages[m];
            if let Some(a) =
                msg.args.iter().find(|a| !a.avail.usable_in_proxy(ctx, p.kind.is_backend()))
            {
                let m = format!(
                    "Invalid SPOE message '{}' used by SPOE group '{}' at {}: some args extract information from '{}',none of which is available here",
                    msg.name, g.name, msg.span, a.kw
                );
                diags.alert(&line, m);
            }
        }
    }
}

fn tcp_do(r: &crate::model::TcpRule, ctx: Ctx) -> Option<(&HttpAction, &Span, Ctx)> {
    match &r.action {
        TcpAction::Do(a) => Some((a, &r.span, ctx)),
        _ => None,
    }
}

mod file;
pub use file::parse_file;

#[cfg(test)]
mod tests;
