//! A proxy's log line settings: `option httplog [clf]`, `option httpslog`, `option tcplog`,
//! `log-format`, `log-format-sd`, `error-log-format`, `unique-id-format`, `unique-id-header`,
//! and their compilation once the proxy's mode is final (HAProxy compiles them at the end of
//! the configuration too, so an inherited format is checked against the proxy's own mode).

use crate::args::no_extra;
use crate::args::Diags;
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::logformat::{self, Opts, CLFLOG, HTTPLOG, HTTPSLOG, TCPLOG};
use crate::model::{
    Config, FormatText, HttpAction, LogEntry, LogFormatDecl, LogFormatKind, Mode, Proxy,
};
use crate::sample::Ctx;

/// Keywords HAProxy ignores in a backend with a warning of their own.
pub const BACKEND_IGNORED: &[&str] = &[
    "option httplog",
    "option httpslog",
    "option tcplog",
    "log-format",
    "log-format-sd",
    "error-log-format",
];

/// `option httplog [clf]`, `option httpslog`, `option tcplog`.
pub fn option_log(
    p: &mut Proxy,
    line: &Line,
    opt: &str,
    prefixed: bool,
    in_defaults: bool,
    diags: &mut Diags,
) {
    if prefixed {
        return diags.alert(line, format!("negation/default is not supported for option '{opt}'."));
    }
    let kind = match (opt, line.arg(2)) {
        ("httplog", "") => LogFormatKind::Http,
        ("httplog", "clf") => LogFormatKind::HttpClf,
        ("httplog", _) => {
            return diags.alert(line, "keyword 'httplog' only supports option 'clf'.")
        }
        ("httpslog", _) => LogFormatKind::Https,
        _ => LogFormatKind::Tcp,
    };
    let max = if kind == LogFormatKind::HttpClf { 3 } else { 2 };
    if no_extra(line, max, &format!("option {opt}"), diags) {
        set_format(p, line, kind, in_defaults, diags);
    }
}

fn set_format(
    p: &mut Proxy,
    line: &Line,
    kind: LogFormatKind,
    in_defaults: bool,
    diags: &mut Diags,
) {
    if in_defaults {
        if let Some(old) = &p.log_format {
            // HAProxy names a new `option httpslog` 'option httplog' here.
            let new = match &kind {
                LogFormatKind::Https => "option httplog",
                k => k.keyword(),
            };
            let msg = format!(
                "'{new}' overrides previous '{}' in 'defaults' section.",
                old.kind.keyword()
            );
            diags.warning(line, msg);
        }
    }
    p.log_format = Some(LogFormatDecl { kind, span: line.span.clone() });
}

/// `log-format`, `log-format-sd`, `error-log-format`, `unique-id-format` (one string each)
/// and `unique-id-header <name>`.
pub fn format_line(p: &mut Proxy, line: &Line, kw: &str, in_defaults: bool, diags: &mut Diags) {
    let arg = line.arg(1);
    if arg.is_empty() {
        return diags.alert(line, format!("{kw} expects an argument."));
    }
    if kw == "unique-id-header" {
        p.unique_id_header = Some(arg.to_string());
        return;
    }
    if line.words.len() > 2 {
        let msg = format!("{kw} expects only one argument, don't forget to escape spaces!");
        return diags.alert(line, msg);
    }
    let text = FormatText { text: arg.to_string(), span: line.span.clone() };
    match kw {
        "log-format" => {
            set_format(p, line, LogFormatKind::Custom(arg.to_string()), in_defaults, diags)
        }
        "log-format-sd" => p.log_format_sd = Some(text),
        "unique-id-format" => p.unique_id_format = Some(text),
        _ => {
            if in_defaults && p.error_log_format.is_some() {
                let msg = "'error-log-format' overrides previous 'error-log-format' in 'defaults' section.";
                diags.warning(line, msg);
            }
            p.error_log_format = Some(text);
        }
    }
}

/// Compiles every proxy's formats for its final mode, with HAProxy's messages: the fallback of
/// an HTTP format in a `mode tcp` proxy, parse errors (fatal), and the format of a frontend
/// that has nowhere to log.
pub fn compile(config: &mut Config, out: &mut Vec<Diagnostic>) {
    let global_logs = !config.global.logs.is_empty();
    for p in &mut config.proxies {
        if !p.kind.is_frontend() {
            p.log_format = None;
            p.log_format_sd = None;
            p.error_log_format = None;
            continue;
        }
        for (rules, slots, kw) in [
            (&p.http_request, p.capture_slots.req.len(), "http-request"),
            (&p.http_response, p.capture_slots.res.len(), "http-response"),
        ] {
            for r in rules {
                if let HttpAction::Capture { id, .. } = r.action {
                    if id as usize >= slots {
                        let msg = format!("Proxy '{}': unable to find capture id '{id}' referenced by {kw} capture rule.", p.name);
                        out.push(Diagnostic::alert(None, msg));
                    }
                }
            }
        }
        let http = p.mode == Mode::Http;
        let who = format!("{} '{}'", crate::proxy::type_word(p.kind), p.name);
        if let Some(decl) = &mut p.log_format {
            if !http
                && matches!(
                    decl.kind,
                    LogFormatKind::Http | LogFormatKind::HttpClf | LogFormatKind::Https
                )
            {
                let opt = if decl.kind == LogFormatKind::Https { "httpslog" } else { "httplog" };
                let msg = format!("'option {opt}' not usable with {who} (needs 'mode http'). Falling back to 'option tcplog'.");
                out.push(Diagnostic::warning(Some(decl.span.clone()), msg));
                decl.kind = LogFormatKind::Tcp;
            }
        }
        let mut compile_one =
            |text: &str, span: &crate::model::Span, what: &str, opts: Opts, ctx: Ctx| {
                match logformat::parse_with(text, ctx, opts) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        let msg = format!("Parsing [{span}]: failed to parse {what} : {e}");
                        out.push(Diagnostic::alert(None, msg));
                        None
                    }
                }
            };
        if let Some(decl) = &p.log_format {
            let text = match &decl.kind {
                LogFormatKind::Http => HTTPLOG,
                LogFormatKind::HttpClf => CLFLOG,
                LogFormatKind::Https => HTTPSLOG,
                LogFormatKind::Tcp => TCPLOG,
                LogFormatKind::Custom(t) => t.as_str(),
            };
            p.formats.line =
                compile_one(text, &decl.span, "log-format", Opts::log_line(http), Ctx::Log);
        }
        if let Some(f) = &p.log_format_sd {
            p.formats.sd =
                compile_one(&f.text, &f.span, "log-format-sd", Opts::log_line(http), Ctx::Log);
        }
        if let Some(f) = &p.error_log_format {
            p.formats.error =
                compile_one(&f.text, &f.span, "error-log-format", Opts::log_line(http), Ctx::Log);
        }
        if let Some(f) = &p.unique_id_format {
            let ctx = Ctx::HttpRequest;
            p.formats.unique_id =
                compile_one(&f.text, &f.span, "unique-id", Opts::unique_id(http), ctx);
        }
        let logs = p.logs.iter().any(|e| matches!(e, LogEntry::Target(_)) || global_logs);
        if p.log_format.is_some() && !logs {
            let msg = format!("log format ignored for {who} since it has no log address.");
            out.push(Diagnostic::warning(None, msg));
        }
    }
}
