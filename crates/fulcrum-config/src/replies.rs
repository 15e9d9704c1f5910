//! HTTP replies built by rules (`return`, `deny`, `tarpit`, `http-error`: status, content
//! type, payloads, headers) and redirects (`redirect` lines and actions), with HAProxy 2.6's
//! options and messages.

use std::path::PathBuf;

use crate::args::Diags;
use crate::lexer::Line;
use crate::logformat;
use crate::model::*;
use crate::proxy::ProxyBuild;
use crate::rules::{condition, placed, who, ActionResult, Order, ERROR_CODES};
use crate::sample::Ctx;

// ---- replies ----

/// What kind of reply is being parsed, for its defaults and messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// `http-request deny` (status 403, default error message when no payload).
    Deny,
    /// `http-request return` (status 200, empty when no payload).
    Return,
    /// `http-request tarpit` (status 500, default error message when no payload).
    Tarpit,
    /// `http-error status <code> ...`.
    HttpError,
}

/// A parsed reply: the reply, whether any reply option was given, warnings, next word.
pub struct ParsedReply {
    pub reply: Reply,
    pub explicit: bool,
    pub warnings: Vec<String>,
    pub next: usize,
}

/// Parses reply options from word `start` to a condition or the end of the line.
pub fn parse_reply(
    line: &Line,
    start: usize,
    kind: ReplyKind,
    ctx: Ctx,
    be_cap: bool,
) -> Result<ParsedReply, String> {
    let deny_like = matches!(kind, ReplyKind::Deny | ReplyKind::Tarpit);
    let mut status: u16 = match kind {
        ReplyKind::Deny => 403,
        ReplyKind::Tarpit => 500,
        _ => 200,
    };
    let mut content_type: Option<String> = None;
    let mut body = ReplyBody::None;
    let mut body_kw: Option<&str> = None;
    let mut headers = Vec::new();
    let mut warnings = Vec::new();
    let mut explicit = false;
    let mut i = start;
    loop {
        let opt = line.arg(i);
        let val = line.arg(i + 1);
        let has_val = i + 1 < line.words.len();
        match opt {
            "status" | "deny_status" if opt == "status" || deny_like => {
                if !has_val {
                    return Err("'status' expects <status_code> as argument.".into());
                }
                status = match val.parse::<u16>() {
                    Ok(s) if (200..=599).contains(&s) => s,
                    _ => return Err(format!("Unexpected status code '{val}'.")),
                };
                i += 2;
                continue;
            }
            "content-type" => {
                if val.is_empty() {
                    return Err("'content-type' expects <type> as argument.".into());
                }
                content_type = Some(val.to_string());
                explicit = true;
                i += 2;
                continue;
            }
            "hdr" => {
                if !has_val || i + 2 >= line.words.len() {
                    return Err("'hdr' expects <name> and <value> as arguments.".into());
                }
                let name = val.to_string();
                let lower = name.to_ascii_lowercase();
                if matches!(lower.as_str(), "content-length" | "content-type" | "transfer-encoding")
                {
                    warnings.push(format!("header '{name}' always ignored by the http reply."));
                } else {
                    headers.push((name, logformat::parse_in(line.arg(i + 2), ctx, be_cap)?));
                }
                explicit = true;
                i += 3;
                continue;
            }
            "default-errorfiles" | "errorfile" | "errorfiles" | "file" | "lf-file" | "string"
            | "lf-string" => {}
            _ => break,
        }
        if let Some(prev) = body_kw {
            return Err(format!("unexpected '{opt}' argument, '{prev}' already defined."));
        }
        body_kw = Some(opt);
        explicit = true;
        let takes_value = opt != "default-errorfiles";
        if takes_value && val.is_empty() {
            let what = match opt {
                "string" => "<str>",
                "lf-string" => "<fmt>",
                "errorfiles" => "<name>",
                _ => "<file>",
            };
            return Err(format!("'{opt}' expects {what} as argument."));
        }
        body = match opt {
            "default-errorfiles" => ReplyBody::ErrorFiles,
            "file" => ReplyBody::File(PathBuf::from(val)),
            "string" => ReplyBody::String(val.to_string()),
            "lf-string" => ReplyBody::LfString(logformat::parse_in(val, ctx, be_cap)?),
            "lf-file" => ReplyBody::LfFile { path: PathBuf::from(val), ctx, be_cap },
            "errorfile" => ReplyBody::ErrorFile(PathBuf::from(val)),
            "errorfiles" => ReplyBody::ErrorFilesOf(val.to_string()),
            _ => return Err(format!("'{opt}' in an http reply is not supported yet.")),
        };
        i += if takes_value { 2 } else { 1 };
    }
    if deny_like && body_kw.is_none() {
        body = ReplyBody::ErrorFiles;
    }
    let from_errorfiles = body == ReplyBody::ErrorFiles;
    if from_errorfiles && !ERROR_CODES.contains(&status) {
        return Err(format!(
            "status code '{status}' not handled by default with 'default-errorfiles' argument.."
        ));
    }
    let has_payload = matches!(
        body,
        ReplyBody::String(_)
            | ReplyBody::LfString(_)
            | ReplyBody::File(_)
            | ReplyBody::LfFile { .. }
    );
    let from_errorfiles =
        from_errorfiles || matches!(body, ReplyBody::ErrorFile(_) | ReplyBody::ErrorFilesOf(_));
    if matches!(body, ReplyBody::String(_) | ReplyBody::LfString(_) | ReplyBody::LfFile { .. })
        && content_type.is_none()
    {
        return Err("a content type must be defined when non-empty payload is configured.".into());
    }
    if has_payload && (status == 204 || status == 304) {
        return Err(format!("No body expected for {status} responses."));
    }
    if !has_payload {
        if let Some(t) = content_type.take() {
            warnings.push(format!(
                "content-type '{t}' ignored by the http reply because neither errorfile nor payload defined."
            ));
        }
    }
    if from_errorfiles && !headers.is_empty() {
        warnings
            .push("hdr parameters ignored by the http reply when used with an erorrfile.".into());
        headers.clear();
    }
    Ok(ParsedReply {
        reply: Reply { status, content_type, body, headers },
        explicit,
        warnings,
        next: i,
    })
}

pub(crate) fn reply_action(
    line: &Line,
    base: &str,
    be_cap: bool,
    diags: &mut Diags,
) -> ActionResult {
    let kind = match base {
        "deny" => ReplyKind::Deny,
        "tarpit" => ReplyKind::Tarpit,
        _ => ReplyKind::Return,
    };
    let ctx = if line.arg(0) == "http-request" { Ctx::HttpRequest } else { Ctx::HttpResponse };
    let parsed = parse_reply(line, 2, kind, ctx, be_cap).map_err(Some)?;
    if kind == ReplyKind::Tarpit && parsed.explicit {
        return Err(Some(
            "reply options of 'tarpit' (content-type, payload, hdr) are not supported yet.".into(),
        ));
    }
    for w in parsed.warnings {
        diags.warning(line, w);
    }
    let action = match kind {
        ReplyKind::Tarpit => HttpAction::Tarpit { status: parsed.reply.status },
        ReplyKind::Deny => HttpAction::Deny {
            status: parsed.reply.status,
            reply: parsed.explicit.then_some(parsed.reply),
        },
        _ => HttpAction::Return(parsed.reply),
    };
    Ok((action, parsed.next))
}

// ---- redirects ----

/// Parses redirect options from word `start`; returns the redirect and the next word.
pub fn parse_redirect(
    line: &Line,
    start: usize,
    ctx: Ctx,
    be_cap: bool,
) -> Result<(Redirect, usize), String> {
    let mut target: Option<(RedirectKind, &str)> = None;
    let mut code = 302;
    let mut drop_query = false;
    let mut append_slash = false;
    let mut ignore_empty = false;
    let mut i = start;
    while i < line.words.len() {
        let w = line.arg(i);
        let has_val = i + 1 < line.words.len();
        match w {
            "location" | "prefix" | "scheme" | "code" if !has_val => {
                return Err(format!("missing argument for '{w}'."))
            }
            "location" => target = Some((RedirectKind::Location, line.arg(i + 1))),
            "prefix" => target = Some((RedirectKind::Prefix, line.arg(i + 1))),
            "scheme" => target = Some((RedirectKind::Scheme, line.arg(i + 1))),
            "code" => {
                let v = line.arg(i + 1);
                code = match v.parse::<u16>() {
                    Ok(c @ (301 | 302 | 303 | 307 | 308)) => c,
                    _ => return Err(format!("'code': unsupported HTTP code '{v}' (must be one of 301, 302, 303, 307 or 308).")),
                };
            }
            "drop-query" | "append-slash" | "ignore-empty" => {
                match w {
                    "drop-query" => drop_query = true,
                    "append-slash" => append_slash = true,
                    _ => ignore_empty = true,
                }
                i += 1;
                continue;
            }
            "set-cookie" | "clear-cookie" => {
                return Err(format!("redirect option '{w}' is not supported yet."))
            }
            "if" | "unless" => break,
            _ => return Err(format!("expects 'code', 'prefix', 'location', 'scheme', 'set-cookie', 'clear-cookie', 'drop-query', 'ignore-empty' or 'append-slash' (was '{w}').")),
        }
        i += 2;
    }
    let Some((kind, value)) = target else {
        return Err("redirection type expected ('prefix', 'location', or 'scheme').".into());
    };
    let value = logformat::parse_in(value, ctx, be_cap)?;
    Ok((Redirect { kind, value, code, drop_query, append_slash, ignore_empty }, i))
}

/// The legacy `redirect location|prefix|scheme ... [if|unless <cond>]` keyword.
pub fn redirect_line(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let p = &b.proxy;
    let rule_err =
        |m: &str| format!("error detected in {} while parsing redirect rule : {m}", who(p));
    let (redirect, next) = match parse_redirect(line, 1, Ctx::HttpRequest, p.kind.is_backend()) {
        Ok(v) => v,
        Err(m) => return diags.alert(line, rule_err(&m)),
    };
    let wrap = |m: &str| rule_err(&format!("error in condition: {m}"));
    let unexpected = |w: &str| rule_err(&format!("unexpected '{w}'."));
    let Ok(cond) = condition(p, line, next, Ctx::HttpRequest, &wrap, &unexpected, diags) else {
        return;
    };
    placed(b, line, Order::Redirect, diags);
    let rule = HttpRule { span: line.span.clone(), action: HttpAction::Redirect(redirect), cond };
    b.proxy.redirects.push(rule);
}
