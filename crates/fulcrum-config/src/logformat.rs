//! Log-format strings (HAProxy manual §8.2.4) as used by header values, redirect targets,
//! `lf-string` replies and dynamic `use_backend` names: literal text, `%%`, `%[<expr>]` sample
//! expressions and the `%<var>` variables Fulcrum supports.

use crate::acl::response_side;
use crate::model::{LogFormat, LogPart, LogVar};
use crate::sample::{self, Avail, Ctx, End};

/// HAProxy 2.6's log-format variables (§8.2.4), to tell "not supported yet" from "no such".
const KNOWN_VARS: &[&str] = &[
    "o", "B", "CC", "CS", "H", "HM", "HP", "HPO", "HQ", "HU", "HV", "ID", "ST", "T", "Ta", "Tc",
    "Td", "Tl", "Th", "Ti", "Tq", "TR", "Tr", "Ts", "Tt", "Tu", "Tw", "U", "ac", "b", "bc", "bi",
    "bp", "bq", "ci", "cp", "f", "fc", "fi", "fp", "ft", "lc", "hr", "hrl", "hs", "hsl", "ms",
    "pid", "r", "rc", "rt", "s", "sc", "si", "sp", "sq", "sslc", "sslv", "t", "tr", "trg", "trl",
    "ts", "tsc",
];

fn log_var(name: &str) -> Option<LogVar> {
    Some(match name {
        "ci" => LogVar::ClientIp,
        "cp" => LogVar::ClientPort,
        "fi" => LogVar::FrontendIp,
        "fp" => LogVar::FrontendPort,
        "f" => LogVar::Frontend,
        "b" => LogVar::Backend,
        "s" => LogVar::Server,
        "r" => LogVar::HttpRequest,
        "pid" => LogVar::Pid,
        _ => return None,
    })
}

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

/// Parses `text` for a rule of context `ctx` in a proxy with backend capability. Errors are
/// HAProxy's messages (without the rule prefix).
pub fn parse(text: &str, ctx: Ctx) -> Result<LogFormat, String> {
    parse_in(text, ctx, true)
}

/// Like [`parse`], in a proxy that has backend capability (`be_cap`) or not: `be_name` is
/// refused in the request rules of a frontend, as HAProxy.
pub fn parse_in(text: &str, ctx: Ctx, be_cap: bool) -> Result<LogFormat, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(pct) = rest.find('%') {
        push_lit(&mut parts, &rest[..pct]);
        let after = &rest[pct + 1..];
        if after.is_empty() {
            return Err("truncated line after '%'.".into());
        }
        if let Some(r) = after.strip_prefix('%') {
            push_lit(&mut parts, "%");
            rest = r;
            continue;
        }
        if after.starts_with('{') {
            let flags: String = after.chars().take_while(|c| *c != '}').collect();
            return Err(format!("log-format flags '%{flags}}}' are not supported yet."));
        }
        if let Some(expr) = after.strip_prefix('[') {
            let (part, used) = sample_part(expr, ctx, be_cap)?;
            parts.push(part);
            rest = &expr[used + 1..];
            continue;
        }
        let len = after.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after.len());
        let name = &after[..len];
        match log_var(name) {
            Some(v) => parts.push(LogPart::Var(v)),
            None if KNOWN_VARS.contains(&name) => {
                return Err(format!("log-format variable '%{name}' is not supported yet."))
            }
            None => {
                return Err(format!("no such format variable '{name}'. If you wanted to emit the '%' character verbatim, you need to use '%%'."))
            }
        }
        rest = &after[len..];
    }
    push_lit(&mut parts, rest);
    Ok(LogFormat { text: text.to_string(), parts })
}

/// Parses the expression of a `%[...]` block (`s` starts after the `[`). Returns the part and
/// the offset of the closing `]` in `s`.
fn sample_part(s: &str, ctx: Ctx, be_cap: bool) -> Result<(LogPart, usize), String> {
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
    } else if !avail.usable_in_proxy(ctx, be_cap) {
        let needs = if parsed.kw == "status" { "HTTP response" } else { avail.needs() };
        return Err(format!("sample fetch <{s}> may not be reliably used here because it needs '{needs}' which is not available here."));
    }
    Ok((LogPart::Sample(parsed.expr), end))
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
        let LogPart::Sample(e) = &parts[1] else { panic!("sample") };
        assert_eq!(e.text, "req.hdr(host),lower");
        assert_eq!(parts[4], LogPart::Var(LogVar::ClientIp));
        assert_eq!(parts[8], LogPart::Var(LogVar::Backend));
        assert_eq!(lf("%pid%f%fi%fp%s%r").len(), 6);
    }

    #[test]
    fn log_format_errors_use_haproxy_wording() {
        assert_eq!(lf_err("%"), "truncated line after '%'.");
        assert_eq!(lf_err("%zz"), "no such format variable 'zz'. If you wanted to emit the '%' character verbatim, you need to use '%%'.");
        assert_eq!(lf_err("%Tr"), "log-format variable '%Tr' is not supported yet.");
        assert_eq!(lf_err("%[path"), "missing ']' after 'path'.");
        assert_eq!(lf_err("%[path)x]"), "expected ']' after 'path', but found ')'.");
        assert_eq!(
            lf_err("%[bogus]"),
            "failed to parse sample expression <bogus]> : unknown fetch method 'bogus'."
        );
        assert_eq!(lf_err("%[status]"), "sample fetch <status]> may not be reliably used here because it needs 'HTTP response' which is not available here.");
        assert!(lf_err("%{+Q}[src]").contains("not supported yet"));
    }

    #[test]
    fn hdr_in_a_response_rule_reads_the_response() {
        let parts = parse("%[hdr(X-A)]", Ctx::HttpResponse).expect("parses").parts;
        let LogPart::Sample(e) = &parts[0] else { panic!("sample") };
        assert_eq!(e.fetch, Fetch::ResHdr { name: "x-a".into(), occ: None });
        let e = parse("%[path]", Ctx::HttpResponse).expect_err("request fetch");
        assert!(e.contains("needs 'HTTP request headers'"), "{e}");
    }
}
