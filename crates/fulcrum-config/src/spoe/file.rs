//! The SPOE file itself (HAProxy's `cfg_parse_spoe_agent|group|message()` and the end of
//! `parse_spoe_flt()`): its scopes, sections and keywords with HAProxy 2.6's messages, and the
//! agent's checks once it is read. [`super::load_files`] calls [`parse_file`] for each filter.

use super::*;
use crate::acl::{self, CondEnv};
use crate::args::invalid_char;
use crate::duration::{parse_time, TimeError};
use crate::sample::{self, End};

/// What is read of a file before the agent's post-parse checks.
#[derive(Default)]
struct Reading {
    agent: Option<SpoeAgent>,
    /// `messages` and `groups` of the agent, by name, with their lines.
    msg_refs: Vec<String>,
    grp_refs: Vec<String>,
    messages: Vec<SpoeMessage>,
    /// Groups with the names of their messages.
    groups: Vec<(SpoeGroup, Vec<String>)>,
    section: Sect,
}

#[derive(Default, PartialEq, Eq, Clone, Copy)]
enum Sect {
    #[default]
    None,
    Agent,
    Group,
    Message,
    /// A section refused: its lines are skipped.
    Skipped,
}

/// Parses a SPOE file for a filter (`engine`: the scope read; `at`: its line) of a proxy of
/// kind `kind`: the agent when the file is fine, and every diagnostic.
pub fn parse_file(
    name: &str,
    text: &str,
    (engine, at): (Option<&str>, &Span),
    (kind, proxy): (ProxyKind, &str),
    env: crate::EnvLookup<'_>,
) -> (Option<SpoeAgent>, Vec<Diagnostic>) {
    let mut diags = Diags { list: Vec::new() };
    let (lines, errors) = crate::lexer::lex_source(name, text, env);
    for (span, msg) in errors {
        diags.list.push(Diagnostic::alert(Some(span), msg));
    }
    let mut r = Reading::default();
    let mut scope: Option<String> = None;
    for line in &lines {
        let w0 = line.arg(0);
        if w0.starts_with('[') {
            // HAProxy's `cfg_parse_scope()`.
            let text = line.words.join(" ");
            let body = &text[1..];
            match body.find(']') {
                None | Some(0) => diags.alert(line, "empty scope name is forbidden."),
                Some(end) => {
                    let (name, after) = (&body[..end], body[end + 1..].trim_start());
                    if let Some(c) = invalid_char(name) {
                        let m = format!("character '{c}' is not permitted in a scope name.");
                        diags.alert(line, m);
                    } else if let Some(c) = after.chars().next() {
                        let m =
                            format!("character '{c}' is not permitted after scope declaration.");
                        diags.alert(line, m);
                    } else {
                        scope = Some(name.to_string());
                    }
                }
            }
            continue;
        }
        if scope.as_deref() != engine {
            continue;
        }
        read_line(&mut r, line, kind, &mut diags);
    }
    if diags.has_errors() {
        let m = format!("'filter' : 'Error(s) found in configuration file {name}'");
        diags.list.push(Diagnostic::alert(Some(at.clone()), m));
        return (None, diags.list);
    }
    match finish(r, name, kind, proxy, &mut diags) {
        Ok(a) => (Some(a), diags.list),
        Err(m) => {
            diags.list.push(Diagnostic::alert(Some(at.clone()), m));
            (None, diags.list)
        }
    }
}

fn read_line(r: &mut Reading, line: &Line, kind: ProxyKind, diags: &mut Diags) {
    let w0 = line.arg(0);
    let kw = if w0 == "no" { line.arg(1) } else { w0 };
    match kw {
        "spoe-agent" | "spoe-group" | "spoe-message" => return start_section(r, line, kw, diags),
        _ => {}
    }
    match r.section {
        Sect::Skipped => {}
        Sect::None => diags.alert(line, format!("unknown keyword '{w0}' out of section.")),
        Sect::Agent => {
            if let Some(a) = r.agent.as_mut() {
                agent_line(a, &mut r.msg_refs, &mut r.grp_refs, line, diags);
            }
        }
        Sect::Group => {
            let Some((_, names)) = r.groups.last_mut() else { return };
            match w0 {
                "messages" => {
                    for m in &line.words[1..] {
                        if names.contains(m) {
                            diags.alert(line, format!("spoe-message '{m}' already used."));
                            return;
                        }
                        names.push(m.clone());
                    }
                }
                _ => diags.alert(line, format!("unknown keyword '{w0}' in spoe-group section.")),
            }
        }
        Sect::Message => {
            let Some(m) = r.messages.last_mut() else { return };
            message_line(m, line, kind, diags);
        }
    }
}

fn start_section(r: &mut Reading, line: &Line, kw: &str, diags: &mut Diags) {
    let name = line.arg(1);
    r.section = Sect::Skipped;
    if name.is_empty() {
        let what = kw.trim_start_matches("spoe-");
        return diags.alert(line, format!("missing name for spoe-{what} section."));
    }
    if line.words.len() > 2 {
        return diags
            .alert(line, format!("'{kw}' cannot handle unexpected argument '{}'.", line.arg(2)));
    }
    if let Some(c) = invalid_char(name) {
        return diags
            .alert(line, format!("character '{c}' is not permitted in '{kw}' name '{name}'."));
    }
    let span = line.span.clone();
    match kw {
        "spoe-agent" => {
            if r.agent.is_some() {
                return diags.alert(line, "another spoe-agent section previously defined.");
            }
            r.agent = Some(new_agent(name, span));
            r.section = Sect::Agent;
        }
        "spoe-group" => {
            if let Some((g, _)) = r.groups.iter().find(|(g, _)| g.name == name) {
                let m = format!(
                    "spoe-group section '{name}' has the same name as another one declared at {}.",
                    g.span
                );
                return diags.alert(line, m);
            }
            r.groups
                .push((SpoeGroup { name: name.into(), span, messages: Vec::new() }, Vec::new()));
            r.section = Sect::Group;
        }
        _ => {
            if let Some(m) = r.messages.iter().find(|m| m.name == name) {
                let m = format!("spoe-message section '{name}' has the same name as another one declared at {}.", m.span);
                return diags.alert(line, m);
            }
            let m = SpoeMessage {
                name: name.into(),
                span,
                args: Vec::new(),
                acls: Vec::new(),
                event: None,
                cond: None,
            };
            r.messages.push(m);
            r.section = Sect::Message;
        }
    }
}

fn new_agent(name: &str, span: Span) -> SpoeAgent {
    SpoeAgent {
        name: name.into(),
        span,
        backend: String::new(),
        messages: Vec::new(),
        on_event: Vec::new(),
        groups: Vec::new(),
        var_prefix: String::new(),
        on_error: None,
        process_time: None,
        total_time: None,
        pipelining: true,
        async_: true,
        send_frag: true,
        continue_on_error: false,
        force_set_var: false,
        dontlog_normal: false,
        timeout_hello: None,
        timeout_idle: None,
        timeout_processing: None,
        max_conn_rate: 0,
        max_err_rate: 0,
        max_frame_size: 16380,
        max_waiting_frames: 20,
        var_names: Vec::new(),
        logs: Vec::new(),
    }
}

fn too_many(line: &Line, max: usize, diags: &mut Diags) -> bool {
    let words = if line.arg(0) == "no" { &line.words[1..] } else { &line.words[..] };
    if words.len() > max + 1 {
        let kw = words[..max.min(words.len())].join(" ");
        diags
            .alert(line, format!("'{kw}' cannot handle unexpected argument '{}'.", words[max + 1]));
        return true;
    }
    false
}

fn agent_line(
    a: &mut SpoeAgent,
    msgs: &mut Vec<String>,
    grps: &mut Vec<String>,
    line: &Line,
    diags: &mut Diags,
) {
    let w0 = line.arg(0);
    let int = |line: &Line, diags: &mut Diags| -> Option<u32> {
        if line.arg(1).is_empty() {
            diags.alert(line, format!("'{}' expects an integer argument.", line.arg(0)));
            return None;
        }
        if too_many(line, 1, diags) {
            return None;
        }
        // (HAProxy's atol: the leading digits.)
        let digits: String = line.arg(1).chars().take_while(char::is_ascii_digit).collect();
        Some(digits.parse::<u64>().map_or(0, |v| v.min(u64::from(u32::MAX)) as u32))
    };
    match w0 {
        "use-backend" => {
            if line.arg(1).is_empty() {
                return diags.alert(line, "'use-backend' expects a backend name.");
            }
            if !too_many(line, 1, diags) {
                a.backend = line.arg(1).to_string();
            }
        }
        "messages" | "groups" => {
            let (list, what) =
                if w0 == "messages" { (msgs, "spoe-message") } else { (grps, "spoe-group") };
            for m in &line.words[1..] {
                if list.contains(m) {
                    return diags.alert(line, format!("{what} '{m}' already used."));
                }
                list.push(m.clone());
            }
        }
        "timeout" => timeout_line(a, line, diags),
        "option" | "no" => option_line(a, line, diags),
        "maxconnrate" => a.max_conn_rate = int(line, diags).unwrap_or(a.max_conn_rate),
        "maxerrrate" => a.max_err_rate = int(line, diags).unwrap_or(a.max_err_rate),
        "max-frame-size" => {
            let Some(v) = int(line, diags) else { return };
            if !(256..=16380).contains(&v) {
                return diags.alert(line, "'max-frame-size' expects a positive integer argument in the range [256, 16380].");
            }
            a.max_frame_size = v;
        }
        "max-waiting-frames" => {
            let Some(v) = int(line, diags) else { return };
            if v < 1 {
                return diags
                    .alert(line, "'max-waiting-frames' expects a positive integer argument.");
            }
            a.max_waiting_frames = v;
        }
        "register-var-names" => {
            if line.arg(1).is_empty() {
                return diags
                    .alert(line, "'register-var-names' expects one or more variable names.");
            }
            a.var_names.extend(line.words[1..].iter().cloned());
        }
        "log" => crate::logtargets::log_line(line, false, false, &mut a.logs, diags),
        _ => diags.alert(line, format!("unknown keyword '{w0}' in spoe-agent section.")),
    }
}

fn timeout_line(a: &mut SpoeAgent, line: &Line, diags: &mut Diags) {
    let which = line.arg(1);
    if which.is_empty() {
        return diags.alert(line, "'timeout' expects 'hello', 'idle' and 'processing'.");
    }
    if too_many(line, 2, diags) {
        return;
    }
    let slot = match which {
        "hello" => &mut a.timeout_hello,
        "idle" => &mut a.timeout_idle,
        "processing" => &mut a.timeout_processing,
        _ => {
            let m = format!("'timeout' supports 'hello', 'idle' or 'processing' (got {which}).");
            return diags.alert(line, m);
        }
    };
    let v = line.arg(2);
    if v.is_empty() {
        return diags
            .alert(line, format!("'timeout {which}' expects an integer value (in milliseconds)."));
    }
    match parse_time(v) {
        // As HAProxy: 0 is no timeout (it warns below), less than a millisecond is one.
        Ok(d) if d.is_zero() => *slot = None,
        Ok(d) => {
            let ms = d.as_micros().div_ceil(1000);
            *slot = Some(ms.min(u128::from(i32::MAX as u32)) as u32)
        }
        Err(TimeError::Overflow) => diags.alert(
            line,
            format!("timer overflow in argument <{v}> to <timeout {which}>, maximum value is 2147483647 ms (~24.8 days)."),
        ),
        Err(TimeError::BadChar(c)) => {
            diags.alert(line, format!("unexpected character '{c}' in 'timeout {which}'."))
        }
        Err(TimeError::Missing) => {}
    }
}

fn option_line(a: &mut SpoeAgent, line: &Line, diags: &mut Diags) {
    let no = line.arg(0) == "no";
    let words = if no { &line.words[1..] } else { &line.words[..] };
    if words.first().map(String::as_str) != Some("option") {
        return diags
            .alert(line, format!("unknown keyword '{}' in spoe-agent section.", line.arg(0)));
    }
    let (name, value) =
        (words.get(1).map_or("", |s| s.as_str()), words.get(2).map_or("", |s| s.as_str()));
    if name.is_empty() {
        return diags.alert(line, "'option' expects an option name.");
    }
    let flag = match name {
        "pipelining" => &mut a.pipelining,
        "async" => &mut a.async_,
        "send-frag-payload" => &mut a.send_frag,
        "dontlog-normal" => &mut a.dontlog_normal,
        _ => {
            if no {
                return diags
                    .alert(line, format!("negation is not supported for option '{name}'."));
            }
            return value_option(a, line, name, value, words.len(), diags);
        }
    };
    if too_many(line, 1, diags) {
        return;
    }
    *flag = !no;
}

fn value_option(
    a: &mut SpoeAgent,
    line: &Line,
    name: &str,
    value: &str,
    n: usize,
    diags: &mut Diags,
) {
    let slot = match name {
        "var-prefix" => None,
        "set-on-error" => Some(&mut a.on_error),
        "set-process-time" => Some(&mut a.process_time),
        "set-total-time" => Some(&mut a.total_time),
        "force-set-var" | "continue-on-error" => {
            if !too_many(line, 1, diags) {
                if name == "force-set-var" {
                    a.force_set_var = true;
                } else {
                    a.continue_on_error = true;
                }
            }
            return;
        }
        _ => return diags.alert(line, format!("option '{name}' is not supported.")),
    };
    if value.is_empty() {
        return diags.alert(line, format!("'option {name}' expects a value."));
    }
    if n > 3 {
        return diags.alert(
            line,
            format!("'option {name}' cannot handle unexpected argument '{}'.", line.arg(3)),
        );
    }
    if !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
        return diags.alert(line, format!("'option {name}' only supports [a-zA-Z0-9_.] chars."));
    }
    match slot {
        Some(s) => *s = Some(value.to_string()),
        None => a.var_prefix = value.to_string(),
    }
}

fn message_line(m: &mut SpoeMessage, line: &Line, kind: ProxyKind, diags: &mut Diags) {
    match line.arg(0) {
        "args" => {
            for w in &line.words[1..] {
                let (name, text) = match w.split_once('=') {
                    Some((n, t)) => (n.to_string(), t),
                    None => (String::new(), w.as_str()),
                };
                match sample::parse(text, End::Input) {
                    Ok((p, _)) => m.args.push(SpoeArg { name, expr: p.expr, avail: p.avail, kw: p.kw, out: p.out }),
                    Err(e) => return diags.alert(line, format!("'args': {}.", e.plain())),
                }
            }
        }
        "acl" => {
            let name = line.arg(1);
            if let Some(c) = invalid_char(name) {
                return diags.alert(line, format!("character '{c}' is not permitted in acl name '{name}'."));
            }
            if name.eq_ignore_ascii_case("or") {
                return diags.alert(line, format!("acl name '{name}' will never match. 'or' is used to express a logical disjunction within a condition."));
            }
            match acl::parse_acl(line.words.get(2..).unwrap_or(&[]), &line.span) {
                Ok(p) => {
                    p.warnings.into_iter().for_each(|w| diags.warning(line, w));
                    m.acls.push(NamedAcl { name: name.to_string(), acl: p.acl });
                }
                Err(e) => diags.alert(line, format!("error detected while parsing ACL '{name}' : {}.", e.trim_end_matches('.'))),
            }
        }
        "event" => {
            let ev = line.arg(1);
            if ev.is_empty() {
                return diags.alert(line, "missing event name.");
            }
            let Some(&(_, e)) = SpoeEvent::ALL.iter().find(|(n, _)| *n == ev) else {
                return diags.alert(line, format!("unknown event '{ev}'."));
            };
            m.event = Some(e);
            match line.arg(2) {
                "" => {}
                "if" | "unless" => {
                    let env = CondEnv { acls: &m.acls, ctx: e.ctx(), kind };
                    match acl::parse_condition(&line.words[2..], &line.span, &env) {
                        Ok(c) => {
                            c.warnings.into_iter().for_each(|w| diags.warning(line, w));
                            m.cond = Some(c.cond);
                        }
                        Err(err) => diags.alert(
                            line,
                            format!("error detected while parsing an 'event {ev}' condition : {}.", err.trim_end_matches('.')),
                        ),
                    }
                }
                other => diags.alert(
                    line,
                    format!("'event {ev}' expects either 'if' or 'unless' followed by a condition but found '{other}'."),
                ),
            }
        }
        // HAProxy 2.6 skips any other word in a spoe-message section without a word: say so.
        w => diags.warning(line, format!("unknown keyword '{w}' in spoe-message section (ignored, as HAProxy 2.6 ignores it).")),
    }
}

/// `parse_spoe_flt()`'s checks once the file is read: the agent, its backend, its prefix, its
/// messages' events and groups.
fn finish(
    r: Reading,
    file: &str,
    kind: ProxyKind,
    proxy: &str,
    diags: &mut Diags,
) -> Result<SpoeAgent, String> {
    let Some(mut a) = r.agent else {
        return Err(format!("'filter' : 'No SPOE agent found in file {file}'"));
    };
    let at = format!("{}", a.span);
    if a.backend.is_empty() {
        return Err(format!(
            "'filter' : 'No backend declared for SPOE agent '{}' declared at {at}'",
            a.name
        ));
    }
    let w = |diags: &mut Diags, m: String| diags.list.push(Diagnostic::warning(None, m));
    if a.timeout_hello.is_none() || a.timeout_idle.is_none() || a.timeout_processing.is_none() {
        w(diags, format!(
            "Proxy '{proxy}': missing timeouts for SPOE agent '{}' declare at {at}.\n   | While not properly invalid, you will certainly encounter various problems\n   | with such a configuration. To fix this, please ensure that all following\n   | timeouts are set to a non-zero value: 'hello', 'idle', 'processing'.",
            a.name
        ));
    }
    if a.var_prefix.is_empty() {
        if !a.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(format!(
                "'filter' : 'Invalid variable prefix '{0}' for SPOE agent '{0}' declared at {at}. Use 'option var-prefix' to set it. Only [a-zA-Z0-9_.] chars are supported.\n'",
                a.name
            ));
        }
        a.var_prefix = a.name.clone();
    }
    a.messages = r.messages;
    if r.msg_refs.is_empty() && r.grp_refs.is_empty() {
        w(
            diags,
            format!(
                "Proxy '{proxy}': No message/group used by SPOE agent '{}' declared at {at}.",
                a.name
            ),
        );
        return Ok(a);
    }
    for name in &r.msg_refs {
        let Some(i) = a.messages.iter().position(|m| m.name == *name) else {
            return Err(format!(
                "'filter' : 'SPOE agent '{}' try to use undefined SPOE message '{name}' at {at}'",
                a.name
            ));
        };
        let m = &mut a.messages[i];
        if kind == ProxyKind::Listen {
            m.event = m.event.map(|e| match e {
                SpoeEvent::BackendTcpRequest => SpoeEvent::FrontendTcpRequest,
                SpoeEvent::BackendHttpRequest => SpoeEvent::FrontendHttpRequest,
                e => e,
            });
        }
        let Some(ev) = m.event else {
            w(
                diags,
                format!(
                    "Proxy '{proxy}': Ignore SPOE message '{name}' without event at {}.",
                    m.span
                ),
            );
            continue;
        };
        let fe_event = matches!(
            ev,
            SpoeEvent::ClientSession
                | SpoeEvent::FrontendTcpRequest
                | SpoeEvent::FrontendHttpRequest
        );
        if !kind.is_frontend() && fe_event {
            w(
                diags,
                format!("Proxy '{proxy}': frontend event used on a backend proxy at {}.", m.span),
            );
            continue;
        }
        if let Some(arg) =
            m.args.iter().find(|a| !a.avail.usable_in_proxy(ev.ctx(), kind.is_backend()))
        {
            return Err(format!(
                "'filter' : 'Ignore SPOE message '{name}' at {}: some args extract information from '{}', none of which is available here ('{}')'",
                m.span, arg.avail.needs(), ev.name()
            ));
        }
        a.on_event.push(i);
    }
    for name in &r.grp_refs {
        let Some((g, names)) = r.groups.iter().find(|(g, _)| g.name == *name) else {
            return Err(format!(
                "'filter' : 'SPOE agent '{}' try to use undefined SPOE group '{name}' at {at}'",
                a.name
            ));
        };
        let mut g = g.clone();
        for mname in names {
            let Some(i) = a.messages.iter().position(|m| m.name == *mname) else {
                return Err(format!("'filter' : 'SPOE group '{}' try to use undefined SPOE message '{mname}' at {at}'", g.name));
            };
            if let Some(other) = a.groups.iter().find(|o| o.messages.contains(&i)) {
                return Err(format!(
                    "'filter' : 'SPOE message '{mname}' already belongs to the SPOE group '{}' declare at {}'",
                    other.name, other.span
                ));
            }
            g.messages.push(i);
        }
        a.groups.push(g);
    }
    Ok(a)
}
