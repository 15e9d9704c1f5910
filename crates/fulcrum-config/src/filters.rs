//! The filters besides compression and cache: `filter bwlim-in|bwlim-out` with the
//! `set-bandwidth-limit` rules that enable them (HAProxy 2.7's bandwidth limitation, which
//! 2.6 does not have: a later keyword Fulcrum accepts), and `filter trace` (HAProxy 2.6's
//! debugging filter). Parsed with HAProxy's messages (`flt_bwlim.c`, `flt_trace.c`); once
//! every section is read, [`check`] gives `bwlim_check()`'s and `check_bwlim_action()`'s.
//!
//! Must not touch: the compression and cache filters (`crate::compression`, `crate::cache`).

use crate::args::{parse_size, Diags};
use crate::diag::Diagnostic;
use crate::duration::parse_time;
use crate::lexer::Line;
use crate::model::{Config, DataType, HttpAction, Proxy, SampleExpr, Span};
use crate::sample::{self, Avail, Ctx, End};

/// A bandwidth limitation filter (`filter bwlim-in|bwlim-out <name> ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwlimFilter {
    pub name: String,
    /// `bwlim-in`: the request's payload (the client's upload); `bwlim-out`: the response's.
    pub upload: bool,
    pub kind: BwlimKind,
    /// `min-size`: the fewest bytes forwarded at a time (but the last ones), 0 by default.
    pub min_size: u32,
    pub span: Span,
}

/// Whose bandwidth a filter limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BwlimKind {
    /// `default-limit <size> default-period <time>`: each stream alone (a rule may give its
    /// own limit and period).
    PerStream { limit: u32, period_ms: u32 },
    /// `limit <size> key <expr> [table <table>]`: the streams whose key is the same share the
    /// limit, counted in the table's `bytes_in_rate`/`bytes_out_rate` (the table's period).
    Shared {
        limit: u32,
        key: SampleExpr,
        key_avail: Avail,
        /// The key expression's output type.
        key_type: crate::sample::SmpType,
        table: Option<String>,
    },
}

/// `filter trace [name <name>] [quiet] [random-parsing] [random-forwarding] [hexdump]`: each
/// stream's events (start, headers, payload, end) on the standard error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFilter {
    /// `<name>/<proxy>`, or `TRACE/<proxy>` without a name (as HAProxy's traces show it).
    pub name: String,
    pub quiet: bool,
    /// `random-forwarding`: payload forwarded in pieces of random sizes.
    pub random_forwarding: bool,
    pub hexdump: bool,
    pub span: Span,
}

/// `set-bandwidth-limit <name> [limit <size|expr>] [period <time|expr>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwlimRule {
    pub name: String,
    /// Bytes per period.
    pub limit: Option<Amount>,
    /// Milliseconds.
    pub period: Option<Amount>,
}

/// The notice `-c` gives for a keyword HAProxy 2.6 does not have.
pub(crate) fn later_keyword(kw: &str) -> String {
    format!("'{kw}' is a HAProxy 2.7 keyword Fulcrum accepts: HAProxy 2.6 does not know it (see docs/compat.md).")
}

fn millis(d: std::time::Duration) -> u32 {
    d.as_millis().min(u128::from(u32::MAX)) as u32
}

/// A value given as a constant or computed per stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Amount {
    Const(u32),
    Expr(SampleExpr, Avail),
}

/// `filter bwlim-in|bwlim-out ...` (HAProxy's `parse_bwlim_flt()`).
pub(crate) fn bwlim(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    match parse_bwlim(p, line) {
        Ok(Ok(f)) => {
            diags.notice(line, later_keyword(&format!("filter {}", line.arg(1))));
            p.filters.push(crate::cache::Filter::Bwlim(f))
        }
        Ok(Err(msg)) => diags.alert(line, msg),
        Err(msg) => diags.alert(line, format!("'filter' : '{msg}'")),
    }
}

/// The filter; `Err`: the filter's own message; `Ok(Err)`: a message whole (a word left over).
fn parse_bwlim(p: &Proxy, line: &Line) -> Result<Result<BwlimFilter, String>, String> {
    let kw = line.arg(1);
    let name = line.arg(2);
    if name.is_empty() {
        return Err(format!("'{kw}' : a name is expected as first argument "));
    }
    if p.bwlim_filter(name).is_some() {
        return Err(format!("bwlim filter '{name}' already declared for proxy '{}'", p.name));
    }
    let (mut shared, mut per_stream) = (false, false);
    let (mut limit, mut period, mut min_size) = (0u32, 0u32, 0u32);
    let (mut key, mut table) = (None, None);
    let mix = || format!("'{kw}' : cannot mix per-stream and shared parameter");
    let mut pos = 3;
    loop {
        let opt = line.arg(pos);
        let value = line.arg(pos + 1);
        let size = |v: &str| {
            parse_size(v).map_err(|c| {
                format!("'{kw}' : invalid value for option '{opt}' (unexpected character '{c}')")
            })
        };
        let missing = || format!("'{kw}' : the value is missing for '{opt}' option");
        match opt {
            "key" | "table" | "limit" if per_stream => return Err(mix()),
            "default-period" | "default-limit" if shared => return Err(mix()),
            "key" => {
                if value.is_empty() {
                    return Err(format!(
                        "'{kw}' : the sample expression is missing for '{opt}' option"
                    ));
                }
                let (parsed, _) = sample::parse(value, End::Input).map_err(|e| e.plain())?;
                key = Some((parsed.expr, parsed.avail, parsed.out));
            }
            "table" => {
                if value.is_empty() {
                    return Err(format!("'{kw}' : the table name is missing for '{opt}' option"));
                }
                table = Some(value.to_string());
            }
            "default-period" => {
                if value.is_empty() {
                    return Err(missing());
                }
                let t = parse_time(value).map_err(|e| {
                    let c = match e {
                        crate::duration::TimeError::BadChar(c) => c,
                        _ => ' ',
                    };
                    format!(
                        "'{kw}' : invalid value for option '{opt}' (unexpected character '{c}')"
                    )
                })?;
                period = millis(t);
            }
            "limit" | "default-limit" | "min-size" => {
                if value.is_empty() {
                    return Err(missing());
                }
                let v = size(value)?;
                match opt {
                    "min-size" => min_size = v,
                    _ => limit = v,
                }
            }
            _ => break,
        }
        match opt {
            "key" | "table" | "limit" => shared = true,
            "default-period" | "default-limit" => per_stream = true,
            _ => {}
        }
        pos += 2;
    }
    let rest = line.arg(pos);
    if !rest.is_empty() {
        return Ok(Err(format!("'filter {kw}' : unknown keyword '{rest}'.")));
    }
    let kind = if shared {
        let Some((key, key_avail, key_type)) = key else {
            return Err(format!("'{kw}' : <key> option is missing"));
        };
        if limit == 0 {
            return Err(format!("'{kw}' : <limit> option is missing"));
        }
        BwlimKind::Shared { limit, key, key_avail, key_type, table }
    } else {
        if period == 0 {
            return Err(format!("'{kw}' : <default-period> option is missing"));
        }
        if limit == 0 {
            return Err(format!("'{kw}' : <default-limit> option is missing"));
        }
        BwlimKind::PerStream { limit, period_ms: period }
    };
    let upload = kw == "bwlim-in";
    Ok(Ok(BwlimFilter { name: name.to_string(), upload, kind, min_size, span: line.span.clone() }))
}

/// `filter trace ...` (HAProxy's `parse_trace_flt()`).
pub(crate) fn trace(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let mut f = TraceFilter {
        name: format!("TRACE/{}", p.name),
        quiet: false,
        random_forwarding: false,
        hexdump: false,
        span: line.span.clone(),
    };
    let mut pos = 2;
    loop {
        match line.arg(pos) {
            "name" => {
                let v = line.arg(pos + 1);
                if v.is_empty() {
                    let msg = "'filter' : ''trace' : 'name' option without value'";
                    return diags.alert(line, msg);
                }
                f.name = format!("{v}/{}", p.name);
                pos += 1;
            }
            "quiet" => f.quiet = true,
            // (HAProxy 2.6 accepts it and changes nothing: its HTX payload is parsed whole.)
            "random-parsing" => {}
            "random-forwarding" => f.random_forwarding = true,
            "hexdump" => f.hexdump = true,
            "" => break,
            other => {
                let msg = format!("'filter trace' : unknown keyword '{other}'.");
                return diags.alert(line, msg);
            }
        }
        pos += 1;
    }
    p.filters.push(crate::cache::Filter::Trace(f));
}

/// `set-bandwidth-limit <name> [limit <size|expr>] [period <time|expr>]` from word `at` (the
/// filter's name): the action and the word after it.
pub(crate) fn rule(line: &Line, at: usize) -> Result<(HttpAction, usize), String> {
    let name = line.arg(at);
    if name.is_empty() {
        return Err("missing bwlim filter name".into());
    }
    let mut r = BwlimRule { name: name.to_string(), limit: None, period: None };
    let mut pos = at + 1;
    loop {
        let opt = line.arg(pos);
        let value = line.arg(pos + 1);
        let (what, slot) = match opt {
            "limit" => ("size", &mut r.limit),
            "period" => ("time", &mut r.period),
            _ => break,
        };
        if value.is_empty() {
            return Err(format!("missing {opt} value or expression"));
        }
        let constant = match opt {
            "limit" => parse_size(value).ok(),
            _ => parse_time(value).ok().map(millis),
        };
        *slot = Some(match constant {
            Some(v) => Amount::Const(v),
            None => {
                let (parsed, _) = sample::parse(value, End::Input).map_err(|_| {
                    format!("'{opt}': invalid {what} value or unknown fetch method '{value}'")
                })?;
                Amount::Expr(parsed.expr, parsed.avail)
            }
        });
        pos += 2;
    }
    Ok((HttpAction::SetBandwidthLimit(Box::new(r)), pos))
}

impl Proxy {
    /// The bandwidth limitation filter of this name.
    pub fn bwlim_filter(&self, name: &str) -> Option<&BwlimFilter> {
        self.filters.iter().find_map(|f| match f {
            crate::cache::Filter::Bwlim(b) if b.name == name => Some(b),
            _ => None,
        })
    }
}

/// HAProxy's `bwlim_check()` for each bandwidth filter and `check_bwlim_action()` for each
/// `set-bandwidth-limit` rule of the proxy.
pub(crate) fn check(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    for f in &p.filters {
        let crate::cache::Filter::Bwlim(b) = f else { continue };
        let BwlimKind::Shared { table, key_type, .. } = &b.kind else { continue };
        let tname = table.as_deref().unwrap_or(&p.name);
        let found = config.proxy(tname).and_then(|t| t.stick_table.as_ref());
        let Some(t) = found else {
            let msg = format!(
                "Proxy {} : unable to find table '{tname}' referenced by bwlim filter '{}'",
                p.name, b.name
            );
            out.push(Diagnostic::alert(None, msg));
            continue;
        };
        let (ty, word) = match b.upload {
            true => (DataType::BytesInRate, "bytes_in_rate"),
            false => (DataType::BytesOutRate, "bytes_out_rate"),
        };
        if t.stored(ty).is_none() {
            let msg = format!(
                "Proxy {} : stick-table '{tname}' uses a data type incompatible with bwlim filter '{}'. It must be '{word}'",
                p.name, b.name
            );
            out.push(Diagnostic::alert(None, msg));
        } else if !t.key.takes(*key_type) {
            let msg = format!(
                "Proxy {} : stick-table '{tname}' uses a key type incompatible with bwlim filter '{}'",
                p.name, b.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
    let be_cap = p.kind.is_backend();
    let http = [(&p.http_request, Ctx::HttpRequest), (&p.http_response, Ctx::HttpResponse)];
    let http = http.into_iter().flat_map(|(rules, ctx)| rules.iter().map(move |r| (r, ctx)));
    let http = http.map(|(r, ctx)| (&r.action, &r.span, ctx));
    let tcp =
        [(&p.tcp_request_content, Ctx::TcpContent), (&p.tcp_response_content, Ctx::TcpResponse)];
    let tcp = tcp.into_iter().flat_map(|(rules, ctx)| rules.iter().map(move |r| (r, ctx)));
    let tcp = tcp.filter_map(|(r, ctx)| match &r.action {
        crate::model::TcpAction::Do(a) => Some((a, &r.span, ctx)),
        _ => None,
    });
    for (action, span, ctx) in http.chain(tcp) {
        let HttpAction::SetBandwidthLimit(rule) = action else { continue };
        if let Err(msg) = check_rule(p, rule, ctx, be_cap) {
            out.push(Diagnostic::alert(Some(span.clone()), format!("Proxy '{}': {msg}.", p.name)));
        }
    }
}

fn check_rule(p: &Proxy, r: &BwlimRule, ctx: Ctx, be_cap: bool) -> Result<(), String> {
    let Some(f) = p.bwlim_filter(&r.name) else {
        return Err(format!(
            "unable to find bwlim filter '{}' referenced by set-bandwidth-limit rule",
            r.name
        ));
    };
    let shared = matches!(f.kind, BwlimKind::Shared { .. });
    if shared && r.limit.is_some() {
        return Err(
            "set-bandwidth-limit rule cannot define a limit for a shared bwlim filter".into()
        );
    }
    if let Some(Amount::Expr(_, avail)) = &r.limit {
        if !avail.usable_in_proxy(ctx, be_cap) {
            return Err(format!(
                "set-bandwidth-limit rule uses a limit extracting information from '{}', none of which is available here",
                avail.needs()
            ));
        }
    }
    if let BwlimKind::Shared { key_avail, .. } = &f.kind {
        if !key_avail.usable_in_proxy(ctx, be_cap) {
            return Err(format!(
                "bwlim filter '{} uses a key extracting information from '{}', none of which is available here",
                f.name,
                key_avail.needs()
            ));
        }
    }
    Ok(())
}
