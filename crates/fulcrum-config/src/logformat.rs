//! Log-format strings (HAProxy manual §8.2.4): a proxy's log line, and header values, redirect
//! targets, `lf-string` replies and dynamic `use_backend` names. Literal text, `%%`, spaces
//! (field separators in log lines), `%<var>` variables, `%[<expr>]` sample expressions, and
//! `%{+Q,-M...}` flags, read as HAProxy 2.6 reads them, with its messages.

use crate::acl::response_side;
use crate::model::{LogFlags, LogFormat, LogPart, LogVar};
use crate::sample::{self, Avail, Ctx, End};

/// How a format is read: the options HAProxy's `parse_logformat_string` gets.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    /// Spaces separate fields (log lines, unique ids): runs of them print as one.
    pub merge_spaces: bool,
    /// The flags every variable starts with.
    pub flags: LogFlags,
    /// The proxy is in `mode http` (HTTP-only variables are refused otherwise).
    pub http_mode: bool,
    /// The proxy has backend capability (`be_name` in request rules).
    pub be_cap: bool,
}

impl Opts {
    /// A format that builds part of an HTTP message (header value, redirect, reply body).
    pub const HTTP: Opts = Opts {
        merge_spaces: false,
        flags: LogFlags(LogFlags::HTTP),
        http_mode: true,
        be_cap: true,
    };

    /// A log line (`log-format`, `option httplog`...) of a proxy in `mode http` or not.
    pub fn log_line(http_mode: bool) -> Opts {
        Opts { merge_spaces: true, flags: LogFlags(LogFlags::MANDATORY), http_mode, be_cap: true }
    }

    /// `unique-id-format`.
    pub fn unique_id(http_mode: bool) -> Opts {
        Opts { merge_spaces: true, flags: LogFlags(LogFlags::HTTP), http_mode, be_cap: true }
    }
}

/// HAProxy's built-in log formats.
pub const HTTPLOG: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r";
pub const HTTPSLOG: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r %[fc_err]/%[ssl_fc_err,hex]/%[ssl_c_err]/%[ssl_c_ca_err]/%[ssl_fc_is_resumed] %[ssl_fc_sni]/%sslv/%sslc";
pub const CLFLOG: &str = "%{+Q}o %{-Q}ci - - [%trg] %r %ST %B \"\" \"\" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc %bc %sc %rc %sq %bq %CC %CS %hrl %hsl";
pub const TCPLOG: &str = "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq";

fn push_lit(parts: &mut Vec<LogPart>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(LogPart::Lit(prev)) = parts.last_mut() {
        prev.push_str(text);
    } else {
        parts.push(LogPart::Lit(text.to_string()));
    }
}

/// Parses `text` for a rule of context `ctx` (an HTTP message format). Errors are HAProxy's
/// messages (without the rule prefix).
pub fn parse(text: &str, ctx: Ctx) -> Result<LogFormat, String> {
    parse_with(text, ctx, Opts::HTTP)
}

/// Like [`parse`], in a proxy that has backend capability (`be_cap`) or not: `be_name` is
/// refused in the request rules of a frontend, as HAProxy.
pub fn parse_in(text: &str, ctx: Ctx, be_cap: bool) -> Result<LogFormat, String> {
    parse_with(text, ctx, Opts { be_cap, ..Opts::HTTP })
}

/// `%{+Q,-M}`: each item is a sign and a flag letter; unknown letters are ignored, and only
/// the last sign seen counts (as HAProxy reads them).
fn apply_flags(args: &str, mut flags: LogFlags) -> LogFlags {
    for item in args.split(',') {
        let Some(i) = item.rfind(['+', '-']) else { continue };
        let bit = match &item[i + 1..] {
            "M" => LogFlags::MANDATORY,
            "Q" => LogFlags::QUOTE,
            "X" => LogFlags::HEXA,
            "E" => LogFlags::ESCAPE,
            _ => continue,
        };
        if item.as_bytes()[i] == b'+' {
            flags.0 |= bit;
        } else {
            flags.0 &= !bit;
        }
    }
    flags
}

/// Parses a log-format string as HAProxy 2.6 does: literal text, `%%`, spaces (separators
/// when `opts.merge_spaces`), `%var`, `%{flags}var`, `%[expr]`, `%{flags}[expr]`; `%o`
/// sets the flags of every later field. A `%` before any other character is dropped.
pub fn parse_with(text: &str, ctx: Ctx, opts: Opts) -> Result<LogFormat, String> {
    let mut parts = Vec::new();
    let mut defaults = opts.flags;
    let b = text.as_bytes();
    let mut i = 0;
    let mut lit_start = 0;
    let flush = |parts: &mut Vec<LogPart>, from: usize, to: usize| push_lit(parts, &text[from..to]);
    while i < b.len() {
        match b[i] {
            b' ' if opts.merge_spaces => {
                flush(&mut parts, lit_start, i);
                parts.push(LogPart::Sep);
                i += 1;
                lit_start = i;
            }
            b'%' => {
                flush(&mut parts, lit_start, i);
                i += 1;
                let mut args = None;
                match b.get(i) {
                    None => return Err("truncated line after '%'.".into()),
                    Some(b'%') => {
                        parts.push(LogPart::Lit("%".into()));
                        merge_lits(&mut parts);
                        i += 1;
                        lit_start = i;
                        continue;
                    }
                    Some(b'{') => {
                        let start = i + 1;
                        let Some(end) = text[start..].find('}') else {
                            return Err(format!("truncated line after '{}'.", &text[start..]));
                        };
                        args = Some(&text[start..start + end]);
                        i = start + end + 1;
                        match b.get(i) {
                            Some(b'[') => {}
                            Some(c) if c.is_ascii_alphanumeric() => {}
                            _ => {
                                return Err(format!(
                                    "parse argument modifier without variable name near '%{{{}}}'.",
                                    &text[start..start + end]
                                ))
                            }
                        }
                    }
                    Some(c) if c.is_ascii_digit() || *c == b' ' || *c == b'\t' => {
                        return Err(format!("unexpected variable name near '{}' at position {i} line : '{text}'. Maybe you want to write a single '%', use the syntax '%%'.", char::from(*c)));
                    }
                    Some(b'[') => {}
                    Some(c) if c.is_ascii_alphabetic() => {}
                    // Any other character: the '%' is dropped, the character is text.
                    Some(_) => {
                        lit_start = i;
                        continue;
                    }
                }
                let flags = args.map_or(defaults, |a| apply_flags(a, defaults));
                if b[i] == b'[' {
                    let expr = &text[i + 1..];
                    let (part, used) = sample_part(expr, ctx, opts.be_cap, flags)?;
                    parts.push(part);
                    i += 1 + used + 1;
                } else {
                    let len = text[i..]
                        .find(|c: char| !c.is_ascii_alphanumeric())
                        .unwrap_or(text.len() - i);
                    let name = &text[i..i + len];
                    i += len;
                    if name == "o" {
                        defaults = flags;
                    } else {
                        parts.push(LogPart::Var(log_var(name, opts.http_mode)?, flags));
                    }
                }
                lit_start = i;
            }
            _ => i += 1,
        }
    }
    flush(&mut parts, lit_start, b.len());
    Ok(LogFormat { text: text.to_string(), parts })
}

fn merge_lits(parts: &mut Vec<LogPart>) {
    let n = parts.len();
    if n >= 2 {
        if let (LogPart::Lit(a), LogPart::Lit(_)) = (&parts[n - 2], &parts[n - 1]) {
            let mut a = a.clone();
            if let Some(LogPart::Lit(b)) = parts.pop() {
                a.push_str(&b);
            }
            parts[n - 2] = LogPart::Lit(a);
        }
    }
}

fn log_var(name: &str, http_mode: bool) -> Result<LogVar, String> {
    match LogVar::ALL.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, true)) if !http_mode => {
            Err(format!("format variable '{name}' is reserved for HTTP mode."))
        }
        Some((_, v, _)) => Ok(*v),
        None => Err(format!("no such format variable '{name}'. If you wanted to emit the '%' character verbatim, you need to use '%%'.")),
    }
}

/// Parses the expression of a `%[...]` block (`s` starts after the `[`). Returns the part and
/// the offset of the closing `]` in `s`.
fn sample_part(
    s: &str,
    ctx: Ctx,
    be_cap: bool,
    flags: LogFlags,
) -> Result<(LogPart, usize), String> {
    let (mut parsed, end) = sample::parse(s, End::Bracket)
        .map_err(|e| format!("failed to parse sample expression <{s}> : {}.", e.plain()))?;
    let text = &s[..end];
    match s[end..].chars().next() {
        Some(']') => {}
        Some(c) => return Err(format!("expected ']' after '{text}', but found '{c}'.")),
        None => return Err(format!("missing ']' after '{text}'.")),
    }
    let avail = parsed.avail;
    if avail == Avail::Message && ctx == Ctx::HttpResponse {
        response_side(&mut parsed.expr);
    } else if ctx == Ctx::Log && parsed.kw == "status" {
        // Accepted in a log line by HAProxy 2.6, where it finds nothing (`%ST` has it).
    } else if !avail.usable_in_proxy(ctx, be_cap) {
        let needs = if parsed.kw == "status" { "HTTP response" } else { avail.needs() };
        return Err(format!("sample fetch <{s}> may not be reliably used here because it needs '{needs}' which is not available here."));
    }
    Ok((LogPart::Sample(parsed.expr, flags), end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fetch;

    fn lf(s: &str) -> Vec<LogPart> {
        parse(s, Ctx::HttpRequest).unwrap_or_else(|e| panic!("{s}: {e}")).parts
    }

    fn lf_err(s: &str) -> String {
        parse(s, Ctx::HttpRequest).expect_err(s)
    }

    #[test]
    fn plain_text_is_one_literal() {
        assert_eq!(lf("hello world"), [LogPart::Lit("hello world".into())]);
        assert!(lf("").is_empty());
    }

    #[test]
    fn double_percent_is_a_literal_percent_merged_with_its_neighbours() {
        assert_eq!(lf("100%% sure"), [LogPart::Lit("100% sure".into())]);
    }

    #[test]
    fn samples_and_variables_become_parts() {
        let parts = lf("https://%[req.hdr(host),lower]%[path]?from=%ci:%cp/%b");
        assert_eq!(parts.len(), 9);
        assert_eq!(parts[0], LogPart::Lit("https://".into()));
        let LogPart::Sample(e, _) = &parts[1] else { panic!("sample") };
        assert_eq!(e.text, "req.hdr(host),lower");
        assert_eq!(parts[4], LogPart::Var(LogVar::ClientIp, LogFlags(LogFlags::HTTP)));
        assert_eq!(parts[8], LogPart::Var(LogVar::Backend, LogFlags(LogFlags::HTTP)));
        assert_eq!(lf("%pid%f%fi%fp%s%r").len(), 6);
    }

    #[test]
    fn log_format_errors_use_haproxy_wording() {
        assert_eq!(lf_err("%"), "truncated line after '%'.");
        assert_eq!(lf_err("%zz"), "no such format variable 'zz'. If you wanted to emit the '%' character verbatim, you need to use '%%'.");
        assert_eq!(lf_err("%[path"), "missing ']' after 'path'.");
        assert_eq!(lf_err("%[path)x]"), "expected ']' after 'path', but found ')'.");
        assert_eq!(
            lf_err("%[bogus]"),
            "failed to parse sample expression <bogus]> : unknown fetch method 'bogus'."
        );
        assert_eq!(lf_err("%[status]"), "sample fetch <status]> may not be reliably used here because it needs 'HTTP response' which is not available here.");
    }

    #[test]
    fn the_cache_fetches_are_read_in_response_rules_and_log_lines() {
        let parts = line("%[res.cache_hit] %[res.cache_name]", true).expect("a log line");
        assert_eq!(parts.len(), 3);
        assert!(parse("%[res.cache_name]", Ctx::HttpResponse).is_ok());
        assert!(parse("%[res.cache_hit]", Ctx::HttpRequest).is_err());
    }

    #[test]
    fn hdr_in_a_response_rule_reads_the_response() {
        let parts = parse("%[hdr(X-A)]", Ctx::HttpResponse).expect("parses").parts;
        let LogPart::Sample(e, _) = &parts[0] else { panic!("sample") };
        assert_eq!(e.fetch, Fetch::ResHdr { name: "x-a".into(), occ: None });
        let e = parse("%[path]", Ctx::HttpResponse).expect_err("request fetch");
        assert!(e.contains("needs 'HTTP request headers'"), "{e}");
    }

    fn line(s: &str, http: bool) -> Result<Vec<LogPart>, String> {
        parse_with(s, Ctx::Log, Opts::log_line(http)).map(|f| f.parts)
    }

    #[test]
    fn log_lines_separate_fields_by_spaces_and_flags_stack_as_haproxy_reads_them() {
        let m = LogFlags(LogFlags::MANDATORY);
        let mq = LogFlags(LogFlags::MANDATORY | LogFlags::QUOTE);
        let p = line("  %ci  x%-y %{+Q}r", true).expect("parses");
        assert_eq!(
            p,
            [
                LogPart::Sep,
                LogPart::Sep,
                LogPart::Var(LogVar::ClientIp, m),
                LogPart::Sep,
                LogPart::Sep,
                LogPart::Lit("x-y".into()),
                LogPart::Sep,
                LogPart::Var(LogVar::Request, mq),
            ]
        );
        // `%{+Q}o` sets every later field; `%{-Q}` undoes it for one; only the last sign counts.
        let p = line("%{+Q}o %{-Q}ci %b %{+Q+X}pid %{Q}s", true).expect("parses");
        let flags: Vec<LogFlags> = p
            .iter()
            .filter_map(|x| match x {
                LogPart::Var(_, f) => Some(*f),
                _ => None,
            })
            .collect();
        let mqx = LogFlags(mq.0 | LogFlags::HEXA);
        assert_eq!(flags, [m, mq, mqx, mq]);
        // Every built-in format parses in its mode.
        for f in [HTTPLOG, CLFLOG, TCPLOG] {
            line(f, true).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
        line(TCPLOG, false).expect("tcplog in mode tcp");
        let names: Vec<&str> = LogVar::ALL.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(names.len(), 63);
    }

    #[test]
    fn log_line_errors_are_haproxys() {
        let e = |s: &str, http| line(s, http).expect_err(s);
        assert_eq!(e("%r", false), "format variable 'r' is reserved for HTTP mode.");
        assert_eq!(e("%Tt1", true), "no such format variable 'Tt1'. If you wanted to emit the '%' character verbatim, you need to use '%%'.");
        assert_eq!(e("a %5", true), "unexpected variable name near '5' at position 3 line : 'a %5'. Maybe you want to write a single '%', use the syntax '%%'.");
        assert_eq!(e("%{+Q}", true), "parse argument modifier without variable name near '%{+Q}'.");
        assert_eq!(
            e("%{+Q}-", true),
            "parse argument modifier without variable name near '%{+Q}'."
        );
        assert_eq!(e("%{+Q", true), "truncated line after '+Q'.");
        assert_eq!(e("x %", true), "truncated line after '%'.");
        assert_eq!(e("%{+Q}5", true), "no such format variable '5'. If you wanted to emit the '%' character verbatim, you need to use '%%'.");
        assert_eq!(e("%[path]", true), "sample fetch <path]> may not be reliably used here because it needs 'HTTP request headers' which is not available here.");
        assert!(line("%[status] %[src] %[be_name]", true).is_ok(), "accepted at log time");
    }
}
