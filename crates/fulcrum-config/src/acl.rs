//! ACLs and conditions (HAProxy manual §7.1, §7.2, §7.4): the `acl <name> <criterion> [flags]
//! [operator] <value>...` line, anonymous `{ ... }` ACLs, `if`/`unless` conditions with `!`,
//! `||`/`or` and implicit AND, the predefined ACLs, the syntax of integer and address patterns,
//! and HAProxy's warnings for ACLs that can never match where they are used.

use std::net::IpAddr;

use crate::model::{
    Acl, AclRef, CondTerm, Condition, Fetch, MatchMethod, NamedAcl, ProxyKind, SampleExpr, Span,
};
use crate::regex_check;
use crate::sample::{self, Avail, Ctx, End, SmpType};

/// An ACL keyword (`path_beg`...): the fetch it reads and the match it implies.
fn acl_keyword(kw: &str) -> Option<(&'static str, MatchMethod)> {
    const BASES: &[(&str, &str)] = &[
        ("path", "path"),
        ("url", "url"),
        ("urlp", "urlp"),
        ("hdr", "hdr"),
        ("cook", "cook"),
        ("shdr", "shdr"),
        ("scook", "scook"),
        ("base", "base"),
    ];
    match kw {
        "method" => return Some(("method", MatchMethod::Str)),
        "req_ver" => return Some(("req_ver", MatchMethod::Str)),
        "resp_ver" => return Some(("resp_ver", MatchMethod::Str)),
        _ => {}
    }
    for (base, fetch) in BASES {
        let Some(rest) = kw.strip_prefix(base) else { continue };
        let method = match rest {
            "" => MatchMethod::Str,
            "_beg" => MatchMethod::Beg,
            "_end" => MatchMethod::End,
            "_sub" => MatchMethod::Sub,
            "_reg" => MatchMethod::Reg,
            "_dom" => MatchMethod::Dom,
            "_dir" => MatchMethod::Dir,
            "_len" => MatchMethod::Len,
            _ => continue,
        };
        return Some((fetch, method));
    }
    None
}

fn default_method(out: SmpType, kw: &str) -> Result<MatchMethod, String> {
    Ok(match out {
        SmpType::Bool => MatchMethod::Bool,
        SmpType::Int => MatchMethod::Int,
        SmpType::Ip => MatchMethod::Ip,
        SmpType::Str | SmpType::Meth => MatchMethod::Str,
        SmpType::Any | SmpType::Bin => {
            return Err(format!("matching method must be specified first (using '-m') when using a sample fetch of this type ('{kw}')."))
        }
    })
}

/// Where an ACL's fetch may be used. In ACLs every header fetch reads the request, as HAProxy's
/// ACL keywords do (only the `hdr()` sample fetch of log-format strings follows the message).
pub fn avail_of(expr: &SampleExpr) -> Avail {
    fetch_avail(&expr.fetch)
}

/// Where a fetch may be used, as [`avail_of`] says of an ACL's.
pub fn fetch_avail(fetch: &Fetch) -> Avail {
    match fetch {
        Fetch::IntOf(inner) => fetch_avail(inner),
        Fetch::Method => Avail::Method,
        Fetch::BaseQ
        | Fetch::HostPathHash { .. }
        | Fetch::UrlAddr { .. }
        | Fetch::HdrNames { response: false, .. }
        | Fetch::HdrsBin { response: false }
        | Fetch::ProtoHttp
        | Fetch::AuthBearer { .. } => Avail::Request,
        Fetch::HdrNames { response: true, .. }
        | Fetch::HdrsBin { response: true }
        | Fetch::ResHdrCnt { .. }
        | Fetch::ResHdrIp { .. }
        | Fetch::ResFhdrCnt { .. }
        | Fetch::ResHdrs
        | Fetch::ResCookCnt { .. } => Avail::Response,
        Fetch::ResLineVersion => Avail::Captured { response: true },
        Fetch::Meth(_)
        | Fetch::Env(_)
        | Fetch::Hostname
        | Fetch::Thread
        | Fetch::Stopping
        | Fetch::DateIn { .. }
        | Fetch::DateUs
        | Fetch::Fe(_)
        | Fetch::Be { what: crate::model::BeFact::ConnFree, .. }
        | Fetch::Srv { .. }
        | Fetch::IsLocal { .. }
        | Fetch::TcpInfo { .. } => Avail::Always,
        Fetch::Be { .. } => Avail::Backend,
        Fetch::FcHttpMajor | Fetch::FcRcvdProxy => Avail::Session,
        Fetch::Path
        | Fetch::Url
        | Fetch::Query
        | Fetch::ReqVer
        | Fetch::UrlParam { .. }
        | Fetch::Hdr { .. }
        | Fetch::HdrCnt { .. }
        | Fetch::HdrIp { .. }
        | Fetch::Cook { .. }
        | Fetch::Fhdr { .. }
        | Fetch::FhdrCnt { .. }
        | Fetch::ReqBody
        | Fetch::ReqBodyLen
        | Fetch::ReqBodySize
        | Fetch::ReqBodyParam { .. }
        | Fetch::ReqHdrs
        | Fetch::Base
        | Fetch::CookCnt { .. }
        | Fetch::CookVal { .. }
        | Fetch::PathQ
        | Fetch::HttpAuth { .. }
        | Fetch::HttpAuthGroup { .. }
        | Fetch::AuthPart(_) => Avail::Request,
        Fetch::Status
        | Fetch::ResHdr { .. }
        | Fetch::ResFhdr { .. }
        | Fetch::ResCook { .. }
        | Fetch::ResVer
        | Fetch::ResComp
        | Fetch::ResCompAlgo
        | Fetch::ResBody
        | Fetch::ResBodyLen
        | Fetch::ResBodySize => Avail::Response,
        Fetch::ResCacheHit | Fetch::ResCacheName => Avail::Captured { response: true },
        Fetch::Tls(crate::model::TlsFetch::ServerCert(_)) => Avail::Session,
        Fetch::Tls(t) if t.is_back() => Avail::ServerConn,
        Fetch::Tls(_) | Fetch::TlsOnly | Fetch::Payload(_) | Fetch::Pp(_) => Avail::Session,
        Fetch::FcErr | Fetch::FcErrStr => Avail::Always,
        Fetch::Bc(_) => Avail::ServerAddr,
        Fetch::BeName => Avail::Backend,
        Fetch::SrvName | Fetch::SrvId => Avail::Server,
        Fetch::Captured { response, .. } => Avail::Captured { response: *response },
        Fetch::ReqLine(_) => Avail::Captured { response: false },
        Fetch::Sc(_) | Fetch::TableSize { .. } | Fetch::Fc(_) | Fetch::IpConst(_) => Avail::Always,
        Fetch::Src
        | Fetch::SrcPort
        | Fetch::Dst
        | Fetch::DstPort
        | Fetch::NbSrv { .. }
        | Fetch::BeConn { .. }
        | Fetch::BeSessRate { .. }
        | Fetch::ConnSlots { .. }
        | Fetch::Queue { .. }
        | Fetch::AvgQueue { .. }
        | Fetch::SrvIsUp { .. }
        | Fetch::SrvConn { .. }
        | Fetch::AlwaysTrue
        | Fetch::WaitEnd
        | Fetch::Bool(_)
        | Fetch::FeConn
        | Fetch::SoName
        | Fetch::LastRule { .. }
        | Fetch::AlwaysFalse
        | Fetch::Var { .. }
        | Fetch::Str(_)
        | Fetch::Bin(_)
        | Fetch::HttpFirstReq
        | Fetch::Uuid
        | Fetch::Int(_)
        | Fetch::Date { .. }
        | Fetch::Rand { .. }
        | Fetch::FeName
        | Fetch::UniqueId => Avail::Always,
    }
}

/// The criterion keyword as written (`path_beg`, `req.hdr`), as HAProxy names it in warnings.
fn fetch_keyword(expr: &SampleExpr) -> String {
    expr.text.chars().take_while(|c| !matches!(c, '(' | ',')).collect()
}

/// Checks one integer pattern word; `seen_op` tells whether an operator came before.
fn check_int_pattern(p: &str, seen_op: &mut bool) -> Result<(), String> {
    let int = |s: &str| {
        let d = s.strip_prefix('-').unwrap_or(s);
        !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && s.parse::<i64>().is_ok()
    };
    if matches!(p, "eq" | "ge" | "gt" | "le" | "lt") {
        *seen_op = true;
        return Ok(());
    }
    if int(p) {
        return Ok(());
    }
    if let Some((a, b)) = p.split_once(':') {
        let lo = (a.is_empty() || int(a)).then(|| a.parse::<i64>().unwrap_or(i64::MIN));
        let hi = (b.is_empty() || int(b)).then(|| b.parse::<i64>().unwrap_or(i64::MAX));
        return match (lo, hi) {
            (Some(lo), Some(hi)) if lo <= hi => Ok(()),
            _ => Err(format!("'{p}' is not a valid number range.")),
        };
    }
    if *seen_op {
        Err(format!("'{p}' is neither a number nor a supported operator."))
    } else {
        Err(format!("'{p}' is not a number."))
    }
}

/// Parses `addr[/len]` or `addr/dotted-mask`: an address and its prefix length.
pub fn parse_net(p: &str) -> Option<(IpAddr, u8)> {
    let (addr, mask) = match p.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (p, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match mask {
        None => max,
        Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u8 = m.parse().ok()?;
            (n <= max).then_some(n)?
        }
        Some(m) if ip.is_ipv4() => {
            let bits = u32::from(m.parse::<std::net::Ipv4Addr>().ok()?);
            let ones = bits.leading_ones();
            (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)?
        }
        Some(_) => return None,
    };
    Some((ip, len))
}

fn check_pattern(method: MatchMethod, p: &str, seen_op: &mut bool) -> Result<(), String> {
    match method {
        MatchMethod::Int | MatchMethod::Len => check_int_pattern(p, seen_op),
        MatchMethod::Ip if parse_net(p).is_none() => {
            Err(format!("'{p}' is not a valid IPv4 or IPv6 address."))
        }
        MatchMethod::Reg => regex_check::check(p).map_err(|e| format!("{e}.")),
        MatchMethod::Bin => {
            let mut b = fulcrum_pattern::PatternSet::builder(MatchMethod::Bin, false);
            b.add(p).map_err(|e| format!("{e}."))
        }
        _ => Ok(()),
    }
}

/// A parsed ACL with the warnings its line deserves.
pub struct ParsedAcl {
    pub acl: Acl,
    pub warnings: Vec<String>,
}

/// Parses an ACL criterion with its flags and patterns (`words` = everything after the ACL
/// name, or between the braces of an anonymous ACL). Errors are HAProxy's inner messages.
pub fn parse_acl(words: &[String], span: &Span) -> Result<ParsedAcl, String> {
    // As HAProxy, an empty word ends the arguments of a line.
    let words = &words[..words.iter().position(String::is_empty).unwrap_or(words.len())];
    let text = words.first().map(String::as_str).unwrap_or("");
    let kw_len = text.find(['(', ',']).unwrap_or(text.len());
    let kw = &text[..kw_len];
    let acl_kw = acl_keyword(kw);
    let result = match acl_kw {
        Some((fetch, _)) => sample::parse_as(text, End::Input, kw_len, fetch),
        None => sample::parse(text, End::Input),
    };
    let (parsed, _) = match result {
        Ok(p) => p,
        Err(sample::SmpError::MissingFetch) => {
            return Err(format!("missing fetch method in ACL expression '{text}'."))
        }
        Err(e) => return Err(e.in_acl(text, acl_kw.map(|_| kw))),
    };
    // An ACL keyword's implied match holds only without converters.
    let implied = acl_kw.filter(|_| parsed.expr.converters.is_empty()).map(|(_, m)| m);
    let mut method: Option<MatchMethod> = None;
    let mut ignore_case = false;
    let mut files = Vec::new();
    let mut patterns = Vec::new();
    let mut i = 1;
    let mut ended_flags = false;
    let mut warnings = Vec::new();
    while let Some(w) = words.get(i) {
        if !w.starts_with('-') || w == "-" {
            break;
        }
        match w.as_str() {
            "-i" => {
                if !files.is_empty() {
                    return Err("'-i' after '-f' (case-insensitive matching for only the later patterns) is not supported yet.".into());
                }
                ignore_case = true;
            }
            "-f" => {
                let f = words.get(i + 1).map(String::as_str).unwrap_or("");
                if f.is_empty() {
                    return Err("failed to open pattern file <>.".into());
                }
                files.push(f.into());
                i += 1;
            }
            "-m" => {
                if !files.is_empty() {
                    return Err("'-m' must only be specified before patterns and files in parsing ACL expression.".into());
                }
                let m = words.get(i + 1).map(String::as_str).unwrap_or("");
                method = Some(match (m, MatchMethod::from_name(m)) {
                    (_, Some(m)) => m,
                    _ => {
                        return Err(format!(
                            "unknown matching method '{m}' when parsing ACL expression."
                        ))
                    }
                });
                i += 1;
            }
            "-M" => return Err("flag '-M' (pattern files read as maps) is not supported yet.".into()),
            "-n" => {}
            "-u" => i += 1,
            "--" => {
                ended_flags = true;
                i += 1;
                break;
            }
            _ => {
                return Err(format!("'{w}' is not a valid ACL option. Please use '--' before any pattern beginning with a '-'."))
            }
        }
        i += 1;
    }
    let method = match method.or(implied) {
        Some(m) => m,
        None => default_method(parsed.out, &parsed.kw)?,
    };
    let mut seen_op = false;
    for p in &words[i.min(words.len())..] {
        if !matches!(method, MatchMethod::Found | MatchMethod::Bool) {
            check_pattern(method, p, &mut seen_op)?;
        }
        patterns.push(p.clone());
    }
    if matches!(method, MatchMethod::Found | MatchMethod::Bool) && !patterns.is_empty() {
        let which = if method == MatchMethod::Found { "found" } else { "bool" };
        warnings.push(format!(
            "acl keyword '{kw}' : '-m {which}' takes no pattern, '{}' and the following ones are ignored.",
            patterns[0]
        ));
        patterns.clear();
    }
    let needs_patterns = !matches!(method, MatchMethod::Found | MatchMethod::Bool);
    if needs_patterns && patterns.is_empty() && files.is_empty() && !ended_flags {
        warnings.push(format!("parsing acl keyword '{kw}' :\n  no pattern to match against were provided, so this ACL will never match.\n  If this is what you intended, please add '--' to get rid of this warning.\n  If you intended to match only for existence, please use '-m found'.\n  If you wanted to force an int to match as a bool, please use '-m bool'."));
    }
    let keyword = kw.to_string();
    let acl = Acl {
        span: span.clone(),
        keyword,
        expr: parsed.expr,
        method,
        ignore_case,
        patterns,
        files,
    };
    Ok(ParsedAcl { acl, warnings })
}

/// Checks an ACL name as HAProxy does (`acl <name>` lines).
pub fn check_acl_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("'acl' expects an ACL name and a criterion.".into());
    }
    if let Some(c) = crate::args::invalid_char(name) {
        return Err(format!("character '{c}' is not permitted in acl name '{name}'."));
    }
    if name.eq_ignore_ascii_case("or") {
        return Err(format!("acl name '{name}' will never match. 'or' is used to express a logical disjunction within a condition."));
    }
    Ok(())
}

fn anon(span: &Span, fetch: Fetch, text: &str, method: MatchMethod, patterns: &[&str]) -> Acl {
    Acl {
        span: span.clone(),
        keyword: text.split('(').next().unwrap_or(text).to_string(),
        expr: SampleExpr { fetch, converters: Vec::new(), text: text.to_string() },
        method,
        ignore_case: false,
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
        files: Vec::new(),
    }
}

/// The predefined ACLs (§7.4) Fulcrum can express, as anonymous ACLs.
pub fn predefined(name: &str, span: &Span) -> Result<Option<Acl>, String> {
    use MatchMethod::*;
    let hdr = |n: &str| Fetch::Hdr { name: n.into(), occ: None };
    let meth = |p: &[&str]| anon(span, Fetch::Method, "method", Str, p);
    let ver = |p: &str| anon(span, Fetch::ReqVer, "req.ver", Str, &[p]);
    Ok(Some(match name {
        "TRUE" => anon(span, Fetch::AlwaysTrue, "always_true", Bool, &[]),
        "FALSE" => anon(span, Fetch::AlwaysFalse, "always_false", Bool, &[]),
        "HTTP" => anon(span, Fetch::ProtoHttp, "req.proto_http", Bool, &[]),
        "HTTP_1.0" => ver("1.0"),
        "HTTP_1.1" => ver("1.1"),
        "HTTP_2.0" => ver("2.0"),
        "HTTP_CONTENT" => {
            anon(span, hdr("content-length"), "req.hdr_val(content-length)", Int, &["gt", "0"])
        }
        "HTTP_URL_ABS" => anon(span, Fetch::Url, "url", Reg, &["^[^/:]*://"]),
        "HTTP_URL_SLASH" => anon(span, Fetch::Url, "url", Beg, &["/"]),
        "HTTP_URL_STAR" => anon(span, Fetch::Url, "url", Str, &["*"]),
        "LOCALHOST" => anon(span, Fetch::Src, "src", Ip, &["127.0.0.1/8", "::1"]),
        "METH_CONNECT" => meth(&["CONNECT"]),
        "METH_DELETE" => meth(&["DELETE"]),
        "METH_GET" => meth(&["GET", "HEAD"]),
        "METH_HEAD" => meth(&["HEAD"]),
        "METH_OPTIONS" => meth(&["OPTIONS"]),
        "METH_POST" => meth(&["POST"]),
        "METH_PUT" => meth(&["PUT"]),
        "METH_TRACE" => meth(&["TRACE"]),
        "WAIT_END" => anon(span, Fetch::WaitEnd, "wait_end", Bool, &[]),
        "REQ_CONTENT" => anon(
            span,
            Fetch::Payload(crate::model::PayloadFetch::Len),
            "req.len",
            Int,
            &["gt", "0"],
        ),
        "RDP_COOKIE" => anon(
            span,
            Fetch::Payload(crate::model::PayloadFetch::RdpCookieCnt { name: String::new() }),
            "req.rdp_cookie_cnt",
            Int,
            &["gt", "0"],
        ),
        _ => return Ok(None),
    }))
}

/// What a condition is parsed against: the proxy's ACLs so far and the rule kind.
pub struct CondEnv<'a> {
    pub acls: &'a [NamedAcl],
    pub ctx: Ctx,
    pub kind: ProxyKind,
}

impl CondEnv<'_> {
    /// HAProxy's name for the rule context in "will never match" warnings.
    fn ctx_name(&self) -> String {
        let fe = if self.kind.is_frontend() { "frontend" } else { "backend" };
        let be = if self.kind.is_backend() { "backend" } else { "frontend" };
        match self.ctx {
            Ctx::TcpConnection => "frontend tcp-request connection rule".into(),
            Ctx::TcpSession => "frontend tcp-request session rule".into(),
            Ctx::TcpContent => format!("{fe} tcp-request content rule"),
            Ctx::HttpRequest | Ctx::Monitor => format!("{fe} http-request header rule"),
            Ctx::HttpResponse => format!("{be} http-response header rule"),
            Ctx::TcpResponse => "backend tcp-response content rule".into(),
            Ctx::Switching => "frontend use-backend rule".into(),
            Ctx::Log => "frontend log".into(),
        }
    }
    fn usable(&self, acl: &Acl) -> bool {
        avail_of(&acl.expr).usable_in_proxy(self.ctx, self.kind.is_backend())
    }
    /// The ACL's fetch fails at run time here as HAProxy's does: the request's line and
    /// headers read from a response rule (the request has left the buffer by then). Captures
    /// and the method stay readable there whatever the warning says.
    fn fails_here(&self, acl: &Acl) -> bool {
        self.ctx == Ctx::HttpResponse
            && !self.usable(acl)
            && matches!(avail_of(&acl.expr), Avail::Request | Avail::Message)
    }
    fn ctx_in(&self) -> &'static str {
        match self.ctx {
            Ctx::TcpConnection => " in 'tcp-request connection'",
            Ctx::TcpSession => " in 'tcp-request session'",
            Ctx::TcpContent => " in 'tcp-request content'",
            _ => "",
        }
    }
}

/// A parsed condition with its warnings.
pub struct ParsedCond {
    pub cond: Condition,
    pub warnings: Vec<String>,
}

/// Parses `if|unless <terms>` (`words[0]` is `if` or `unless`) as HAProxy's
/// `parse_acl_cond()` does: `or` (any case) and `||` start a new AND-group, leading `!`s
/// toggle the next term's negation, and what names no term is ignored (a lone `!`, a `!` just
/// before `or`, an `or` with no term on one side). A condition without any term never applies
/// (`if`), or always does (`unless`).
pub fn parse_condition(
    words: &[String],
    span: &Span,
    env: &CondEnv<'_>,
) -> Result<ParsedCond, String> {
    // As HAProxy, an empty word ends the arguments of a line.
    let words = &words[..words.iter().position(String::is_empty).unwrap_or(words.len())];
    let unless = words.first().map(String::as_str) == Some("unless");
    let mut groups: Vec<Vec<CondTerm>> = vec![Vec::new()];
    let mut warnings = Vec::new();
    let mut conflicts = Conflicts::default();
    let mut negate = false;
    let mut i = 1;
    while i < words.len() {
        let mut w = words[i].as_str();
        while let Some(rest) = w.strip_prefix('!') {
            negate = !negate;
            w = rest;
        }
        if w.is_empty() {
            i += 1;
            continue;
        }
        if w == "||" || w.eq_ignore_ascii_case("or") {
            if groups.last().is_some_and(|g| !g.is_empty()) {
                groups.push(Vec::new());
            }
            negate = false;
            i += 1;
            continue;
        }
        let acl = if w == "{" {
            let close = words[i + 1..].iter().position(|x| x == "}");
            let Some(close) = close.map(|c| c + i + 1) else {
                return Err("missing closing '}' in condition.".into());
            };
            let parsed = parse_acl(&words[i + 1..close], span)?;
            warnings.extend(parsed.warnings);
            i = close + 1;
            anonymous(parsed.acl, env, &mut conflicts)
        } else {
            i += 1;
            named(w, span, env, &mut conflicts)?
        };
        if let Some(g) = groups.last_mut() {
            let (acl, never) = acl;
            g.push(CondTerm { negate, acl, never });
        }
        negate = false;
    }
    groups.retain(|g| !g.is_empty());
    warnings.extend(conflicts.into_warning());
    Ok(ParsedCond { cond: Condition { unless, terms: groups }, warnings })
}

/// An anonymous ACL in a condition, checked against the rule context.
/// The first ACL of a condition that can never match where it is used (`full`), and the first
/// named ACL of which only some lines can (`partial`). As HAProxy, a condition gets at most
/// one warning: the first `full` one, else the first `partial` one.
#[derive(Default)]
struct Conflicts {
    full: Option<String>,
    partial: Option<String>,
}

impl Conflicts {
    fn into_warning(self) -> Option<String> {
        self.full.or(self.partial)
    }
}

fn anonymous(acl: Acl, env: &CondEnv<'_>, conflicts: &mut Conflicts) -> (AclRef, bool) {
    let never = env.fails_here(&acl);
    if !env.usable(&acl) && conflicts.full.is_none() {
        conflicts.full = Some(format!(
            "anonymous acl will never match{} because it uses keyword '{}' which is incompatible with '{}'",
            env.ctx_in(),
            fetch_keyword(&acl.expr),
            env.ctx_name()
        ));
    }
    (AclRef::Anonymous(Box::new(acl)), never)
}

/// The `hdr()` sample fetch of a response rule's log-format or `set-var` reads the response.
pub fn response_side(expr: &mut SampleExpr) {
    if let Fetch::Hdr { name, occ } = &expr.fetch {
        expr.fetch = Fetch::ResHdr { name: name.clone(), occ: *occ };
    }
}

fn named(
    name: &str,
    span: &Span,
    env: &CondEnv<'_>,
    conflicts: &mut Conflicts,
) -> Result<(AclRef, bool), String> {
    let lines: Vec<&Acl> = env.acls.iter().filter(|a| a.name == name).map(|a| &a.acl).collect();
    if lines.is_empty() {
        return match predefined(name, span)? {
            Some(acl) => Ok(anonymous(acl, env, conflicts)),
            None => Err(format!("no such ACL : '{name}'.")),
        };
    }
    let bad: Vec<&Acl> = lines.iter().copied().filter(|a| !env.usable(a)).collect();
    // Some lines only: those fail at run time as the rest matches (not modelled: the ACL is
    // evaluated whole).
    let never = lines.iter().all(|a| env.fails_here(a));
    if bad.len() == lines.len() {
        conflicts.full.get_or_insert(format!(
            "acl '{name}' will never match{} because it only involves keywords that are incompatible with '{}'",
            env.ctx_in(),
            env.ctx_name()
        ));
    } else if let Some(a) = bad.first() {
        conflicts.partial.get_or_insert(format!(
            "acl '{name}' involves keywords '{}' which is incompatible with '{}'",
            fetch_keyword(&a.expr),
            env.ctx_name()
        ));
    }
    Ok((AclRef::Named(name.to_string()), never))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn span() -> Span {
        Span { file: Arc::from("t.cfg"), line: 1 }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn acl(s: &str) -> Acl {
        parse_acl(&words(s), &span()).unwrap_or_else(|e| panic!("{s}: {e}")).acl
    }

    fn acl_err(s: &str) -> String {
        parse_acl(&words(s), &span()).err().unwrap_or_else(|| panic!("{s} parsed"))
    }

    #[test]
    fn acl_keywords_imply_their_match_method() {
        let a = acl("path_beg -i /api /static");
        assert_eq!(a.expr.fetch, Fetch::Path);
        assert_eq!((a.method, a.ignore_case), (MatchMethod::Beg, true));
        assert_eq!(a.patterns, ["/api", "/static"]);
        assert_eq!(acl("hdr_dom(host) example.com").method, MatchMethod::Dom);
        assert_eq!(acl("hdr_len(host) gt 3").method, MatchMethod::Len);
        assert_eq!(acl("hdr_cnt(host) 1").method, MatchMethod::Int);
        assert_eq!(acl("src 10.0.0.0/8").method, MatchMethod::Ip);
        assert_eq!(acl("always_true").method, MatchMethod::Bool);
        assert_eq!(acl("urlp_sub(q) x").expr.fetch, Fetch::UrlParam { name: "q".into() });
    }

    #[test]
    fn base_scook_and_resp_ver_acl_keywords_imply_their_match() {
        let a = acl("base_end /favicon.ico");
        assert_eq!((a.expr.fetch, a.method), (Fetch::Base, MatchMethod::End));
        let a = acl("scook_beg(SID) tmp");
        assert_eq!(
            (a.expr.fetch, a.method),
            (Fetch::ResCook { name: "SID".into() }, MatchMethod::Beg)
        );
        let a = acl("resp_ver 1.1");
        assert_eq!((a.expr.fetch, a.method), (Fetch::ResVer, MatchMethod::Str));
        assert_eq!(acl("req.cook_cnt(a) gt 1").method, MatchMethod::Int);
        assert_eq!(acl("ssl_fc").method, MatchMethod::Bool);
        assert_eq!(acl("date gt 0").method, MatchMethod::Int);
        assert_eq!(acl("fe_name web").method, MatchMethod::Str);
    }

    #[test]
    fn binary_samples_need_an_explicit_match_method() {
        for text in ["req.body x", "req.body_param(u) x", "req.hdrs x"] {
            let kw = text.split(['(', ' ']).next().unwrap_or_default().to_string();
            assert_eq!(
                acl_err(text),
                format!("matching method must be specified first (using '-m') when using a sample fetch of this type ('{kw}').")
            );
        }
        assert_eq!(acl("req.body -m sub password").method, MatchMethod::Sub);
        assert_eq!(acl("req.body,lower password").method, MatchMethod::Str);
    }

    #[test]
    fn a_converter_after_an_acl_keyword_drops_the_implied_match() {
        let a = acl("path_beg,lower /x");
        assert_eq!((a.method, a.expr.converters.len()), (MatchMethod::Str, 1));
    }

    #[test]
    fn flags_come_before_patterns() {
        let a = acl("path -m beg -f /etc/a.lst -f /etc/b.lst /x -i");
        assert_eq!(a.method, MatchMethod::Beg);
        assert_eq!(a.files, [std::path::PathBuf::from("/etc/a.lst"), "/etc/b.lst".into()]);
        assert_eq!(a.patterns, ["/x", "-i"]);
        assert_eq!(acl("path -- -i").patterns, ["-i"]);
        assert_eq!(acl("path -n -u 7 x").patterns, ["x"]);
    }

    #[test]
    fn found_and_bool_take_no_patterns() {
        let p = parse_acl(&words("req.cook(sid) -m found x"), &span()).expect("parses");
        assert!(p.acl.patterns.is_empty());
        assert_eq!(p.warnings.len(), 1);
        assert!(parse_acl(&words("req.cook(sid) -m found"), &span())
            .expect("ok")
            .warnings
            .is_empty());
    }

    #[test]
    fn an_acl_without_patterns_warns_unless_flags_end_with_dashes() {
        assert_eq!(parse_acl(&words("path"), &span()).expect("ok").warnings.len(), 1);
        assert!(parse_acl(&words("path --"), &span()).expect("ok").warnings.is_empty());
    }

    #[test]
    fn integer_patterns_accept_operators_and_ranges() {
        acl("hdr_cnt(host) gt 2");
        acl("dst_port 1024: :1023 80:90");
        acl("dst_port -- -1");
        assert_eq!(acl_err("hdr_cnt(host) abc"), "'abc' is not a number.");
        assert_eq!(
            acl_err("hdr_cnt(host) lt abc"),
            "'abc' is neither a number nor a supported operator."
        );
        assert_eq!(acl_err("hdr_cnt(host) 5:1"), "'5:1' is not a valid number range.");
        assert_eq!(acl_err("path_len 1.5"), "'1.5' is not a number.");
    }

    #[test]
    fn address_patterns_are_checked() {
        acl("src 10.0.0.0/8 ::1 2001:db8::/32 192.168.0.0/255.255.0.0 1.2.3.4");
        assert_eq!(acl_err("src 1.2.3.4/40"), "'1.2.3.4/40' is not a valid IPv4 or IPv6 address.");
        assert_eq!(acl_err("src 1.2.3.400"), "'1.2.3.400' is not a valid IPv4 or IPv6 address.");
        assert_eq!(
            acl_err("src 2001:db8::/129"),
            "'2001:db8::/129' is not a valid IPv4 or IPv6 address."
        );
        assert_eq!(parse_net("10.1.0.0/255.255.0.0"), Some(("10.1.0.0".parse().expect("ip"), 16)));
        assert_eq!(parse_net("10.1.0.0/255.0.255.0"), None);
    }

    #[test]
    fn acl_errors_use_haproxy_wording() {
        assert_eq!(acl_err(""), "missing fetch method in ACL expression ''.");
        assert_eq!(acl_err("bogus x"), "unknown fetch method 'bogus' in ACL expression 'bogus'.");
        assert_eq!(acl_err("hdr(host,1,2) x"), "ACL keyword 'hdr' : expected ')' before ',2)'.");
        assert_eq!(
            acl_err("path -m bogus x"),
            "unknown matching method 'bogus' when parsing ACL expression."
        );
        assert_eq!(acl_err("path -x foo"), "'-x' is not a valid ACL option. Please use '--' before any pattern beginning with a '-'.");
        assert_eq!(
            acl_err("path -f /a -m beg"),
            "'-m' must only be specified before patterns and files in parsing ACL expression."
        );
        assert_eq!(acl_err("var(txn.x) y"), "matching method must be specified first (using '-m') when using a sample fetch of this type ('var').");
        assert_eq!(
            acl_err("path_reg ^(x"),
            "regex '^(x' is invalid (error=missing closing parenthesis, erroffset=3)."
        );
    }

    fn env(acls: &[NamedAcl], ctx: Ctx) -> CondEnv<'_> {
        CondEnv { acls, ctx, kind: ProxyKind::Frontend }
    }

    fn cond(s: &str, acls: &[NamedAcl]) -> Result<ParsedCond, String> {
        parse_condition(&words(s), &span(), &env(acls, Ctx::HttpRequest))
    }

    fn named_acl(name: &str, crit: &str) -> NamedAcl {
        NamedAcl { name: name.into(), acl: acl(crit) }
    }

    #[test]
    fn conditions_are_an_or_of_and_groups() {
        let acls = [named_acl("a", "path /a"), named_acl("b", "path /b")];
        let c = cond("if a !b || { src 10.0.0.0/8 } or !a", &acls).expect("parses").cond;
        assert!(!c.unless);
        assert_eq!(c.terms.len(), 3);
        assert_eq!(c.terms[0].len(), 2);
        assert!(!c.terms[0][0].negate && c.terms[0][1].negate);
        assert_eq!(c.terms[0][1].acl, AclRef::Named("b".into()));
        assert!(matches!(c.terms[1][0].acl, AclRef::Anonymous(_)));
        assert!(c.terms[2][0].negate);
        assert!(cond("unless a", &acls).expect("parses").cond.unless);
        assert!(!cond("if !!a", &acls).expect("parses").cond.terms[0][0].negate);
        assert!(cond("if !{ src 1.2.3.4 }", &acls).expect("parses").cond.terms[0][0].negate);
    }

    #[test]
    fn predefined_acls_expand_unless_the_proxy_defines_the_name() {
        let c = cond("if METH_GET", &[]).expect("parses").cond;
        let AclRef::Anonymous(a) = &c.terms[0][0].acl else { panic!("not expanded") };
        assert_eq!(
            (&a.expr.fetch, a.patterns.as_slice()),
            (&Fetch::Method, &["GET".to_string(), "HEAD".into()][..])
        );
        let acls = [named_acl("TRUE", "path /x")];
        assert_eq!(
            cond("if TRUE", &acls).expect("parses").cond.terms[0][0].acl,
            AclRef::Named("TRUE".into())
        );
        let c = cond("if RDP_COOKIE", &[]).expect("parses");
        let AclRef::Anonymous(a) = &c.cond.terms[0][0].acl else { panic!("anonymous") };
        let cnt = crate::model::PayloadFetch::RdpCookieCnt { name: String::new() };
        assert_eq!(
            (&a.expr.fetch, &a.patterns[..]),
            (&Fetch::Payload(cnt), &["gt".to_string(), "0".into()][..])
        );
    }

    #[test]
    fn condition_errors() {
        assert_eq!(cond("if nope", &[]).err(), Some("no such ACL : 'nope'.".into()));
        assert_eq!(
            cond("if { path_beg /x", &[]).err(),
            Some("missing closing '}' in condition.".into())
        );
        assert_eq!(
            cond("if { }", &[]).err(),
            Some("missing fetch method in ACL expression ''.".into())
        );
    }

    #[test]
    fn or_is_any_case_and_dangling_operators_are_ignored_as_in_haproxy() {
        let acls = [named_acl("a", "path /a"), named_acl("b", "path /b")];
        let shape = |s: &str| {
            let c = cond(s, &acls).unwrap_or_else(|e| panic!("{s}: {e}")).cond;
            c.terms.iter().map(|g| g.iter().map(|t| t.negate).collect()).collect::<Vec<Vec<_>>>()
        };
        for s in ["if a OR b", "if a Or b", "if a or b", "if a || b", "unless a OR b"] {
            assert_eq!(shape(s), [[false], [false]], "{s}");
        }
        assert_eq!(shape("if || a"), [[false]]);
        assert_eq!(shape("if a ||"), [[false]]);
        assert_eq!(shape("if a or OR b"), [[false], [false]]);
        // A `!` before `or` is dropped; one at the end names nothing.
        assert_eq!(shape("if a ! OR b"), [[false], [false]]);
        assert_eq!(shape("if a !OR b"), [[false], [false]]);
        assert_eq!(shape("if a !"), [[false]]);
        assert_eq!(shape("if"), Vec::<Vec<bool>>::new());
        assert_eq!(shape("if !"), Vec::<Vec<bool>>::new());
        assert!(cond("unless", &acls).expect("parses").cond.unless);
        // `||` is exact: `|| ` glued to a name is a name.
        assert_eq!(cond("if a ||b", &acls).err(), Some("no such ACL : '||b'.".into()));
    }

    #[test]
    fn acls_unusable_in_the_rule_context_warn() {
        let acls =
            [named_acl("s", "status 200"), named_acl("m", "status 200"), named_acl("m", "path /x")];
        let w = cond("if s", &acls).expect("parses").warnings;
        assert_eq!(w, ["acl 's' will never match because it only involves keywords that are incompatible with 'frontend http-request header rule'"]);
        let w = cond("if m", &acls).expect("parses").warnings;
        assert_eq!(w, ["acl 'm' involves keywords 'status' which is incompatible with 'frontend http-request header rule'"]);
        let w = parse_condition(&words("if { path /x }"), &span(), &env(&[], Ctx::TcpConnection))
            .expect("parses")
            .warnings;
        assert_eq!(w, ["anonymous acl will never match in 'tcp-request connection' because it uses keyword 'path' which is incompatible with 'frontend tcp-request connection rule'"]);
    }

    #[test]
    fn a_condition_gets_one_never_match_warning_the_first_full_conflict_first() {
        let acls = [named_acl("m", "status 200"), named_acl("m", "path /x")];
        let w = cond("if m || { status 200 } { res.ver 1.1 }", &acls).expect("parses").warnings;
        assert_eq!(w, ["anonymous acl will never match because it uses keyword 'status' which is incompatible with 'frontend http-request header rule'"]);
        let w = cond("if m !m", &acls).expect("parses").warnings;
        assert_eq!(w, ["acl 'm' involves keywords 'status' which is incompatible with 'frontend http-request header rule'"]);
    }

    #[test]
    fn be_name_matches_in_request_rules_only_with_backend_capability() {
        let words = words("if { be_name app }");
        let fe = CondEnv { acls: &[], ctx: Ctx::HttpRequest, kind: ProxyKind::Frontend };
        let w = parse_condition(&words, &span(), &fe).expect("parses").warnings;
        assert_eq!(w, ["anonymous acl will never match because it uses keyword 'be_name' which is incompatible with 'frontend http-request header rule'"]);
        for kind in [ProxyKind::Backend, ProxyKind::Listen] {
            let env = CondEnv { acls: &[], ctx: Ctx::HttpRequest, kind };
            assert!(parse_condition(&words, &span(), &env).expect("parses").warnings.is_empty());
        }
        let fe_res = CondEnv { acls: &[], ctx: Ctx::HttpResponse, kind: ProxyKind::Frontend };
        assert!(parse_condition(&words, &span(), &fe_res).expect("parses").warnings.is_empty());
    }

    #[test]
    fn header_acls_in_a_response_rule_never_match() {
        let p = parse_condition(
            &words("if { hdr(X-A) -m found }"),
            &span(),
            &env(&[], Ctx::HttpResponse),
        )
        .expect("parses");
        assert_eq!(p.warnings, ["anonymous acl will never match because it uses keyword 'hdr' which is incompatible with 'frontend http-response header rule'"]);
    }
}
