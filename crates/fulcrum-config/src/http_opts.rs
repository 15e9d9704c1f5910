//! HTTP settings of proxy sections: `option forwardfor|originalto`, the connection-mode options
//! (`http-keep-alive`, `http-server-close`, `httpclose`), `option http-buffer-request`,
//! `option httplog|dontlognull`, `cookie`, `http-reuse`, `retry-on`, `capture`, and the error
//! messages (`errorfile`, `errorfiles`, `errorloc*`, `http-error`) with the `http-errors`
//! sections they may reference.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::acl::parse_net;
use crate::args::{no_extra, Diags};
use crate::duration::{parse_time_in, TimeError, TimeUnit};
use crate::lexer::Line;
use crate::model::*;
use crate::proxy::ProxyBuild;
use crate::rules::{parse_reply, ReplyKind, ERROR_CODES};
use crate::sample::Ctx;

/// One error-message line of a proxy, kept in order until the `http-errors` sections are known.
#[derive(Clone, Debug)]
pub enum ErrorEntry {
    /// `errorfile` / `http-error`: one status.
    Direct(u16, ErrorSource),
    /// `errorfiles <name> [<code>...]` (all the section's codes when empty).
    Section { name: String, codes: Vec<u16>, span: Span },
}

/// `option forwardfor [except <net>] [header <name>] [if-none]` and `option originalto
/// [except <net>] [header <name>]`; `forwardfor` tells which.
pub fn forward_option(p: &mut Proxy, line: &Line, forwardfor: bool, diags: &mut Diags) {
    let opt = if forwardfor { "forwardfor" } else { "originalto" };
    let mut f = ForwardFor {
        except: None,
        header: if forwardfor { "X-Forwarded-For" } else { "X-Original-To" }.into(),
        if_none: false,
    };
    let mut i = 2;
    while i < line.words.len() {
        match line.arg(i) {
            "except" => match parse_net(line.arg(i + 1)) {
                Some(net) => f.except = Some(net),
                None => {
                    return diags.alert(
                        line,
                        format!("'option {opt} except' expects <address>[/mask] as argument."),
                    )
                }
            },
            "header" => {
                let h = line.arg(i + 1);
                if h.is_empty() {
                    return diags.alert(
                        line,
                        format!("'option {opt} header' expects <header_name> as argument."),
                    );
                }
                f.header = h.to_string();
            }
            "if-none" if forwardfor => {
                f.if_none = true;
                i += 1;
                continue;
            }
            _ => {
                let msg = if forwardfor {
                    "'option forwardfor' only supports optional values: 'except', 'header' and 'if-none'."
                } else {
                    "'option originalto' only supports optional values: 'except' and 'header'."
                };
                return diags.alert(line, msg);
            }
        }
        i += 2;
    }
    if forwardfor {
        p.forwardfor = Some(f);
    } else {
        p.originalto = Some(f);
    }
}

/// `[no] option http-keep-alive|http-server-close|httpclose`.
/// `prefixed` is `no`/`default` (back to keep-alive); as HAProxy, only `no` shifts the
/// argument check, so `default option httpclose` is refused like there.
pub fn conn_mode(p: &mut Proxy, line: &Line, name: &str, prefixed: bool, diags: &mut Diags) {
    let at = 2 + usize::from(line.arg(0) == "no");
    if !no_extra(line, at, &format!("option {name}"), diags) {
        return;
    }
    p.http_conn_mode = match (prefixed, name) {
        (true, _) | (false, "http-keep-alive") => HttpConnMode::KeepAlive,
        (false, "http-server-close") => HttpConnMode::ServerClose,
        _ => HttpConnMode::Close,
    };
}

/// `http-reuse never|safe|aggressive|always`.
pub fn http_reuse(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let mode = match line.arg(1) {
        "never" => HttpReuse::Never,
        "safe" => HttpReuse::Safe,
        "aggressive" => HttpReuse::Aggressive,
        "always" => HttpReuse::Always,
        _ => {
            return diags
                .alert(line, "'http-reuse' only supports 'never', 'safe', 'aggressive', 'always'.")
        }
    };
    if no_extra(line, 2, &format!("http-reuse {}", line.arg(1)), diags) {
        p.http_reuse = mode;
    }
}

/// `cookie <name> [rewrite|insert|prefix] [indirect] [nocache] [postonly] [preserve]
/// [httponly] [secure] [domain <d>]* [maxidle <t>] [maxlife <t>] [dynamic] [attr <v>]*`.
pub fn cookie(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "'cookie' expects <cookie_name> as argument.");
    }
    let mut c = CookieCfg {
        span: line.span.clone(),
        name: name.to_string(),
        mode: CookieMode::Passive,
        indirect: false,
        nocache: false,
        httponly: false,
        secure: false,
        preserve: false,
        domain: Vec::new(),
        maxidle: None,
        maxlife: None,
    };
    let mut modes = 0;
    let mut i = 2;
    while i < line.words.len() {
        let opt = line.arg(i);
        match opt {
            "rewrite" | "insert" | "prefix" => {
                modes += 1;
                c.mode = match opt {
                    "rewrite" => CookieMode::Rewrite,
                    "insert" => CookieMode::Insert,
                    _ => CookieMode::Prefix,
                };
            }
            "indirect" => c.indirect = true,
            "nocache" => c.nocache = true,
            "httponly" => c.httponly = true,
            "secure" => c.secure = true,
            "preserve" => c.preserve = true,
            "domain" => {
                let d = line.arg(i + 1);
                if d.is_empty() {
                    return diags.alert(line, "'domain' expects <domain> as argument.");
                }
                c.domain.push(d.to_string());
                i += 1;
            }
            "maxidle" | "maxlife" => {
                let v = line.arg(i + 1);
                let what = if opt == "maxidle" { "<idletime>" } else { "<lifetime>" };
                // Seconds by default, and rounded up to seconds, as HAProxy.
                let d = match parse_time_in(v, TimeUnit::S) {
                    Ok(t) => {
                        if let Some(w) = t.warning {
                            diags.warning(line, w);
                        }
                        t.value
                    }
                    Err(TimeError::Missing) => {
                        let msg = format!("'{opt}' expects {what} in seconds as argument.");
                        return diags.alert(line, msg);
                    }
                    Err(TimeError::BadChar(ch)) => {
                        let msg = format!("unexpected character '{ch}' in argument to <{opt}>.");
                        return diags.alert(line, msg);
                    }
                    Err(TimeError::Overflow) => {
                        let msg = format!("timer overflow in argument <{v}> to <{opt}>, maximum value is 2147483647 s (~68 years).");
                        return diags.alert(line, msg);
                    }
                };
                let d = (!d.is_zero()).then_some(d);
                if opt == "maxidle" {
                    c.maxidle = d;
                } else {
                    c.maxlife = d;
                }
                i += 1;
            }
            "postonly" | "dynamic" | "attr" => {
                return diags.alert(line, format!("'cookie' option '{opt}' is not supported yet"))
            }
            _ => {
                return diags.alert(line, "'cookie' supports 'rewrite', 'insert', 'prefix', 'indirect', 'nocache', 'postonly', 'domain', 'maxidle', 'dynamic', 'maxlife' and 'attr' options.")
            }
        }
        i += 1;
    }
    if modes > 1 {
        return diags
            .alert(line, "cookie 'rewrite', 'insert' and 'prefix' modes are incompatible.");
    }
    if c.mode == CookieMode::Rewrite && c.indirect {
        return diags.alert(line, "cookie 'rewrite' and 'indirect' modes are incompatible.");
    }
    if c.preserve && c.mode != CookieMode::Insert && !c.indirect {
        return diags.alert(line, "cookie 'preserve' requires at least 'insert' or 'indirect'.");
    }
    p.cookie = Some(c);
}

fn parse_code(text: &str) -> u16 {
    // HAProxy reads the code with atoi(): anything else counts as 0.
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// `errorfile <code> <file>` (in proxies and `http-errors` sections); `Some` when valid.
pub fn errorfile(line: &Line, in_section: bool, diags: &mut Diags) -> Option<(u16, ErrorSource)> {
    let (code, file) = (line.arg(1), line.arg(2));
    if code.is_empty() || file.is_empty() {
        let sep = if in_section { "errorfile:" } else { "errorfile :" };
        diags.alert(line, format!("{sep} expects <status_code> and <file> as arguments."));
        return None;
    }
    let status = parse_code(code);
    if !ERROR_CODES.contains(&status) {
        diags.alert(line, format!("errorfile : status code '{status}' not handled."));
        return None;
    }
    Some((status, ErrorSource::File { path: PathBuf::from(file), span: line.span.clone() }))
}

/// `errorloc <code> <url>`, `errorloc302 <code> <url>` (both a 302) and `errorloc303 <code>
/// <url>`; `Some` when valid. As HAProxy, words after the URL are ignored.
pub fn errorloc(line: &Line, diags: &mut Diags) -> Option<(u16, ErrorSource)> {
    let kw = line.arg(0);
    let (code, url) = (line.arg(1), line.arg(2));
    if code.is_empty() || url.is_empty() {
        diags.alert(line, format!("{kw} : expects <status_code> and <url> as arguments."));
        return None;
    }
    let status = parse_code(code);
    if !ERROR_CODES.contains(&status) {
        diags.alert(line, format!("{kw} : status code '{status}' not handled."));
        return None;
    }
    let redirect = if kw == "errorloc303" { 303 } else { 302 };
    let src =
        ErrorSource::Location { code: redirect, url: url.to_string(), span: line.span.clone() };
    Some((status, src))
}

/// `retry-on <keyword>...`: replaces any earlier setting (defaults included).
pub fn retry_on(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let words = &line.words[1..];
    if words.is_empty() {
        return diags.alert(line, "'retry-on' needs at least one keyword to specify when to retry");
    }
    let mut list = Vec::new();
    for w in words {
        let item = match w.as_str() {
            "none" if words.len() == 1 => RetryOn::None,
            "none" => return diags.alert(line, "'retry-on' 'none' keyworld only usable alone"),
            "conn-failure" => RetryOn::ConnFailure,
            "empty-response" => RetryOn::EmptyResponse,
            "junk-response" => RetryOn::JunkResponse,
            "response-timeout" => RetryOn::ResponseTimeout,
            "0rtt-rejected" => RetryOn::ZeroRttRejected,
            "all-retryable-errors" => RetryOn::AllRetryableErrors,
            "401" | "403" | "404" | "408" | "425" | "500" | "501" | "502" | "503" | "504" => {
                RetryOn::Status(w.parse().unwrap_or_default())
            }
            _ => return diags.alert(line, format!("'retry-on': unknown keyword '{w}'")),
        };
        if !list.contains(&item) {
            list.push(item);
        }
    }
    p.retry_on = list;
}

/// `capture cookie <name> len <n>`, `capture request header <name> len <n>` and `capture
/// response header <name> len <n>`. HAProxy reads `<n>` with `atol()` and does not check the
/// `len` word of a cookie capture; Fulcrum wants both as documented.
pub fn capture(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let cookie = line.arg(1) == "cookie";
    let (kind, name_at) = match line.arg(1) {
        "cookie" => (CaptureKind::Cookie, 2),
        "request" => (CaptureKind::ReqHeader, 3),
        _ => (CaptureKind::ResHeader, 3),
    };
    let kw = format!("capture {}", line.arg(1));
    if !no_extra(line, name_at + 3, &kw, diags) {
        return;
    }
    let (name, len_kw, len) = (line.arg(name_at), line.arg(name_at + 1), line.arg(name_at + 2));
    if name.is_empty() || len_kw != "len" || len.is_empty() {
        let msg = if cookie {
            "'capture' expects 'cookie' <cookie_name> 'len' <len>.".to_string()
        } else {
            format!("'{kw}' expects 'header' <header_name> 'len' <len>.")
        };
        return diags.alert(line, msg);
    }
    let Some(len) = crate::args::parse_u32(len) else {
        let msg = format!("'{kw}' : 'len' expects a non-negative integer (got '{len}').");
        return diags.alert(line, msg);
    };
    if cookie {
        // One cookie capture per proxy: the last line wins, as HAProxy.
        p.captures.retain(|c| c.kind != CaptureKind::Cookie);
    } else {
        let slot = crate::model::CaptureSlot { header: Some(name.to_string()), len };
        match kind {
            CaptureKind::ReqHeader => p.capture_slots.req.push(slot),
            _ => p.capture_slots.res.push(slot),
        }
    }
    p.captures.push(Capture { kind, name: name.to_string(), len, span: line.span.clone() });
}

/// `declare capture request|response len <n>`: an anonymous capture slot (for capture rules
/// with `id`).
pub fn declare_capture(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let dir = line.arg(2);
    if dir != "request" && dir != "response" {
        return diags
            .alert(line, "'declare capture' requires a direction ('request' or 'response')");
    }
    if line.arg(3) != "len" {
        return diags.alert(line, "'declare capture' requires a capture length ('len')");
    }
    if line.arg(4).is_empty() {
        let msg =
            "'declare capture': 'len' requires a numeric value that represents the capture length";
        return diags.alert(line, msg);
    }
    let Some(len) = crate::args::parse_u32(line.arg(4)) else {
        return diags.alert(line, "'declare capture': cannot parse the length 'len'.");
    };
    if len == 0 {
        return diags.alert(line, "length must be > 0");
    }
    if !no_extra(line, 5, "declare capture", diags) {
        return;
    }
    let slot = crate::model::CaptureSlot { header: None, len };
    if dir == "request" {
        p.capture_slots.req.push(slot);
    } else {
        p.capture_slots.res.push(slot);
    }
}

/// `errorfiles <name> [<code>...]`.
pub fn errorfiles(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "errorfiles : expects <name> as argument.");
    }
    let mut codes = Vec::new();
    for c in &line.words[2..] {
        let status = parse_code(c);
        if !ERROR_CODES.contains(&status) {
            return diags.alert(line, format!("errorfiles : status code '{status}' not handled."));
        }
        codes.push(status);
    }
    b.errors.push(ErrorEntry::Section { name: name.to_string(), codes, span: line.span.clone() });
}

/// `http-error status <code> [content-type <type>] [<payload>] [hdr <name> <fmt>]*`.
pub fn http_error(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if line.arg(1) != "status" || line.words.len() < 3 {
        return diags.alert(line, "http-error : expects at least a <status> as arguments.");
    }
    let status = line.arg(2);
    match status.parse::<u16>() {
        Ok(s) if ERROR_CODES.contains(&s) => {}
        Ok(s) if (200..=599).contains(&s) => {
            return diags.alert(line, format!("http-error: status code '{s}' not handled."))
        }
        _ => return diags.alert(line, format!("http-error : Unexpected status code '{status}'")),
    }
    let parsed = match parse_reply(line, 1, ReplyKind::HttpError, Ctx::Monitor, true) {
        Ok(p) => p,
        Err(m) => {
            let m = m.strip_suffix('.').unwrap_or(&m);
            return diags.alert(line, format!("http-error : {m}"));
        }
    };
    if parsed.next < line.words.len() {
        let msg = format!("http-error : unknown keyword '{}'.", line.arg(parsed.next));
        return diags.alert(line, msg);
    }
    for w in parsed.warnings {
        diags.warning(line, w);
    }
    let code = parsed.reply.status;
    let source = ErrorSource::Reply { reply: parsed.reply, span: line.span.clone() };
    b.errors.push(ErrorEntry::Direct(code, source));
}

/// Applies a proxy's error entries in order, now that every `http-errors` section is known.
pub fn resolve_errors(
    p: &mut Proxy,
    entries: &[ErrorEntry],
    sections: &[HttpErrorsSection],
    diags: &mut Diags,
) {
    let mut errors = BTreeMap::new();
    for e in entries {
        match e {
            ErrorEntry::Direct(code, src) => {
                errors.insert(*code, src.clone());
            }
            ErrorEntry::Section { name, codes, span } => {
                let Some(s) = sections.iter().find(|s| &s.name == name) else {
                    let msg = format!("proxy '{}': unknown http-errors section '{name}'.", p.name);
                    diags.list.push(crate::diag::Diagnostic::alert(Some(span.clone()), msg));
                    continue;
                };
                if codes.is_empty() {
                    errors.extend(s.errors.iter().map(|(c, src)| (*c, src.clone())));
                }
                for c in codes {
                    match s.errors.get(c) {
                        Some(src) => {
                            errors.insert(*c, src.clone());
                        }
                        None => {
                            let msg = format!(
                                "proxy '{}' : status '{c}' not declared in http-errors section '{name}'.",
                                p.name
                            );
                            diags
                                .list
                                .push(crate::diag::Diagnostic::warning(Some(span.clone()), msg));
                        }
                    }
                }
            }
        }
    }
    p.errors = errors;
}

/// `max-keep-alive-queue <n>`, read as HAProxy reads it (`strtol(.., 0)`; -1: unlimited).
pub fn max_ka_queue(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let v = line.arg(1);
    if v.is_empty() {
        let msg = "'max-keep-alive-queue' expects expects an integer value (or -1 to disable)";
        return diags.alert(line, msg);
    }
    let (neg, body) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) => (16, hex),
        None if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        None => (10, body),
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    if let Some(c) = digits[end..].chars().next() {
        let msg =
            format!("'max-keep-alive-queue' : unexpected character '{c}' in integer value '{v}'");
        return diags.alert(line, msg);
    }
    let n = i64::from_str_radix(digits, radix).unwrap_or(i64::MAX);
    p.max_ka_queue = match (neg, n) {
        (true, 1) => None,
        (true, _) => Some(u32::MAX),
        (false, n) => Some(n.min(i64::from(u32::MAX)) as u32),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn line(text: &str) -> Line {
        let (mut lines, _) = lex_source("h.cfg", text, &|_| None);
        lines.remove(0)
    }

    fn proxy() -> Proxy {
        let span = Span { file: "h.cfg".into(), line: 1 };
        crate::proxy::ProxyBuild::new_defaults("", span).proxy
    }

    /// Runs `f` on a fresh proxy; returns it and the messages reported.
    fn run(text: &str, f: fn(&mut Proxy, &Line, &mut Diags)) -> (Proxy, Vec<String>) {
        let mut p = proxy();
        let mut diags = Diags::default();
        f(&mut p, &line(text), &mut diags);
        (p, diags.list.into_iter().map(|d| d.message).collect())
    }

    #[test]
    fn errorloc_and_errorloc302_redirect_with_302_and_errorloc303_with_303() {
        let mut diags = Diags::default();
        let (code, src) = errorloc(&line("errorloc 503 https://x/"), &mut diags).expect("valid");
        assert_eq!(code, 503);
        assert!(
            matches!(src, ErrorSource::Location { code: 302, ref url, .. } if url == "https://x/")
        );
        let (_, src) = errorloc(&line("errorloc302 404 /a"), &mut diags).expect("valid");
        assert!(matches!(src, ErrorSource::Location { code: 302, .. }));
        let (_, src) = errorloc(&line("errorloc303 403 /b extra"), &mut diags).expect("valid");
        assert!(matches!(src, ErrorSource::Location { code: 303, .. }));
        assert!(diags.list.is_empty());
    }

    #[test]
    fn errorloc_refuses_what_errorfile_refuses() {
        let mut diags = Diags::default();
        assert!(errorloc(&line("errorloc 418 /x"), &mut diags).is_none());
        assert!(errorloc(&line("errorloc303 503"), &mut diags).is_none());
        assert!(errorloc(&line("errorloc302 abc /x"), &mut diags).is_none());
        let msgs: Vec<&str> = diags.list.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "errorloc : status code '418' not handled.",
                "errorloc303 : expects <status_code> and <url> as arguments.",
                "errorloc302 : status code '0' not handled.",
            ]
        );
    }

    #[test]
    fn retry_on_defaults_to_conn_failure_and_replaces_it() {
        assert_eq!(proxy().retry_on, [RetryOn::ConnFailure]);
        let (p, msgs) = run("retry-on 503 empty-response 503 0rtt-rejected", retry_on);
        assert!(msgs.is_empty());
        assert_eq!(
            p.retry_on,
            [RetryOn::Status(503), RetryOn::EmptyResponse, RetryOn::ZeroRttRejected]
        );
        assert_eq!(run("retry-on none", retry_on).0.retry_on, [RetryOn::None]);
        let (p, _) = run("retry-on all-retryable-errors 401 403", retry_on);
        assert_eq!(
            p.retry_on,
            [RetryOn::AllRetryableErrors, RetryOn::Status(401), RetryOn::Status(403)]
        );
    }

    #[test]
    fn retry_on_refuses_unknown_keywords_and_none_with_others() {
        for (text, msg) in [
            ("retry-on", "'retry-on' needs at least one keyword to specify when to retry"),
            ("retry-on 400", "'retry-on': unknown keyword '400'"),
            ("retry-on none 503", "'retry-on' 'none' keyworld only usable alone"),
            ("retry-on 503 none", "'retry-on' 'none' keyworld only usable alone"),
        ] {
            let (p, msgs) = run(text, retry_on);
            assert_eq!(msgs, [msg], "{text}");
            assert_eq!(p.retry_on, [RetryOn::ConnFailure], "{text}");
        }
    }

    #[test]
    fn all_retryable_errors_expands_to_haproxy_list() {
        let all = RetryOn::AllRetryableErrors.expand();
        assert_eq!(all.len(), 9);
        assert!(all.contains(&RetryOn::Status(502)) && !all.contains(&RetryOn::Status(501)));
        assert!(RetryOn::None.expand().is_empty());
        assert_eq!(RetryOn::Status(404).expand(), [RetryOn::Status(404)]);
    }

    #[test]
    fn captures_keep_their_order_and_one_cookie_capture_wins() {
        let mut p = proxy();
        let mut diags = Diags::default();
        for text in [
            "capture cookie A len 10",
            "capture request header Host len 64",
            "capture response header Location len 0",
            "capture cookie B= len 100",
        ] {
            capture(&mut p, &line(text), &mut diags);
        }
        assert!(diags.list.is_empty());
        let got: Vec<(CaptureKind, &str, u32)> =
            p.captures.iter().map(|c| (c.kind, c.name.as_str(), c.len)).collect();
        assert_eq!(
            got,
            [
                (CaptureKind::ReqHeader, "Host", 64),
                (CaptureKind::ResHeader, "Location", 0),
                (CaptureKind::Cookie, "B=", 100),
            ]
        );
    }

    #[test]
    fn capture_lines_need_a_name_and_an_integer_len() {
        for (text, msg) in [
            (
                "capture request header Host",
                "'capture request' expects 'header' <header_name> 'len' <len>.",
            ),
            (
                "capture response header Host size 1",
                "'capture response' expects 'header' <header_name> 'len' <len>.",
            ),
            (
                "capture request header Host len 1 x",
                "'capture request' cannot handle unexpected argument 'x'.",
            ),
            ("capture cookie SID", "'capture' expects 'cookie' <cookie_name> 'len' <len>."),
            ("capture cookie SID max 1", "'capture' expects 'cookie' <cookie_name> 'len' <len>."),
            (
                "capture cookie SID len 1 x",
                "'capture cookie' cannot handle unexpected argument 'x'.",
            ),
            (
                "capture request header Host len -1",
                "'capture request' : 'len' expects a non-negative integer (got '-1').",
            ),
        ] {
            let (p, msgs) = run(text, capture);
            assert_eq!(msgs, [msg], "{text}");
            assert!(p.captures.is_empty(), "{text}");
        }
    }
}
