//! `cache <name>` sections (HAProxy 2.6's `cfg_parse_cache`, `cfg_post_parse_section_cache`),
//! with its messages; the rules and filters that name a cache are checked against them.
//!
//! A proxy's filters ([`Filter`]) are kept in HAProxy's order: `filter compression` and
//! `filter cache <name>` lines, and the cache filters that `http-request cache-use` and
//! `http-response cache-store` rules declare implicitly. Once every section is read, [`check`]
//! gives HAProxy's `flt_check()` messages (an unknown cache, a compression filter before a
//! cache filter).

use crate::args::Diags;
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::model::{Config, Proxy, Span};
use crate::proxy::type_word;

/// One `cache <name>` section, its sizes resolved as HAProxy resolves them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSection {
    pub name: String,
    pub span: Span,
    /// `total-max-size <megabytes>`, in bytes (a multiple of 1 MiB, at most 4095 MiB).
    pub total_max_size: u64,
    /// `max-object-size <bytes>`; unset: a 256th of the total size.
    pub max_object_size: u32,
    /// `max-age <seconds>` (60 by default): an entry's lifetime is at most this.
    pub max_age: u32,
    /// `process-vary on|off` (off by default).
    pub process_vary: bool,
    /// `max-secondary-entries <n>` (10 by default).
    pub max_secondary_entries: u32,
}

impl CacheSection {
    /// A section as HAProxy starts one (its sizes still unset).
    pub fn new(name: &str, span: Span) -> CacheSection {
        CacheSection {
            name: name.to_string(),
            span,
            total_max_size: 0,
            max_object_size: 0,
            max_age: 60,
            process_vary: false,
            max_secondary_entries: 10,
        }
    }
}

/// One filter of a proxy, in the order HAProxy's list has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// `filter compression` (the line). A proxy with `compression` settings and no such line
    /// gets an implicit compression filter after every filter listed.
    Compression(Span),
    /// A cache filter, explicit or implicit.
    Cache(CacheFilter),
    /// `filter bwlim-in|bwlim-out` (see [`crate::filters`]).
    Bwlim(crate::filters::BwlimFilter),
    /// `filter trace`.
    Trace(crate::filters::TraceFilter),
    /// `filter spoe` (see [`crate::spoe`]).
    Spoe(crate::spoe::SpoeFilter),
}

/// A cache filter: the responses of the proxy are stored in the named cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheFilter {
    /// The cache's name as written: compared whole with the sections' (cut to 32 characters)
    /// names, so a longer name never finds its section, as in HAProxy.
    pub name: String,
    /// `filter cache <name>`; false: declared by the first `cache-use`/`cache-store` rule that
    /// names the cache (the filter then stands where that rule stands among the filters).
    pub explicit: bool,
    /// The `filter` line, or the rule that declared the filter.
    pub span: Span,
}

impl Proxy {
    /// The proxy's cache filters in order: the caches its responses may be stored in (by
    /// `http-response cache-store`) and answered from (by `http-request cache-use`).
    pub fn cache_filters(&self) -> impl Iterator<Item = &CacheFilter> {
        self.filters.iter().filter_map(|f| match f {
            Filter::Cache(c) => Some(c),
            _ => None,
        })
    }
}

impl Config {
    /// The `cache` section of that name.
    pub fn cache(&self, name: &str) -> Option<&CacheSection> {
        self.caches.iter().find(|c| c.name == name)
    }
}

/// HAProxy keeps 32 characters of a cache's name (`char id[33]`).
const NAME_MAX: usize = 32;

/// HAProxy's largest `total-max-size`, in megabytes (`UINT_MAX >> 20`).
const TOTAL_MAX_MB: u64 = (u32::MAX >> 20) as u64;

/// A message HAProxy words `parsing [<file>:<line>]: ...` (no blank before the colon, unlike
/// the prefix [`Diagnostic`]s of a line get): the place goes in the text.
fn tight(line: &Line, alert: bool, msg: &str) -> Diagnostic {
    let text = format!("parsing [{}]: {msg}", line.span);
    if alert {
        Diagnostic::alert(None, text)
    } else {
        Diagnostic::warning(None, text)
    }
}

/// `cache <name>`: the new section, and whether HAProxy would have stopped reading there (an
/// unexpected argument: the section's end checks are then skipped). `None`: no section (no
/// name, or a name already taken: its lines are skipped).
pub(crate) fn start(
    line: &Line,
    caches: &[CacheSection],
    diags: &mut Diags,
) -> Option<(CacheSection, bool)> {
    let name = line.arg(1);
    if name.is_empty() {
        diags.alert(line, "'cache' expects a <name> argument");
        return None;
    }
    let aborted = !crate::args::no_extra(line, 2, "cache", diags);
    let mut cut = name.len().min(NAME_MAX);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let id = &name[..cut];
    if id.len() < name.len() {
        let msg = format!("cache name is limited to 32 characters, truncate to '{id}'.");
        diags.list.push(tight(line, false, &msg));
    }
    if caches.iter().any(|c| c.name == id) {
        diags.list.push(tight(line, true, &format!("Duplicate cache name '{id}'.")));
        return None;
    }
    Some((CacheSection::new(id, line.span.clone()), aborted))
}

/// One line of a `cache` section. True when HAProxy would have stopped reading the
/// configuration there (`ERR_ABORT`: its "wrong value" warnings, errors here).
pub(crate) fn line(c: &mut CacheSection, line: &Line, diags: &mut Diags) -> bool {
    let kw = line.arg(0);
    let known = matches!(
        kw,
        "total-max-size" | "max-age" | "max-object-size" | "process-vary" | "max-secondary-entries"
    );
    if !known {
        diags.alert(line, format!("unknown keyword '{kw}' in 'cache' section"));
        return false;
    }
    if !crate::args::no_extra(line, 2, kw, diags) {
        return true;
    }
    let arg = line.arg(1);
    let mut warn = |msg: String| diags.list.push(tight(line, false, &msg));
    let wrong = |diags: &mut Diags| {
        diags.list.push(tight(line, true, &format!("{kw} wrong value '{arg}'")));
        true
    };
    match kw {
        "total-max-size" => match strtoul(arg) {
            Some((mb, false)) if mb > TOTAL_MAX_MB => {
                let msg =
                    format!("\"total-max-size\" ({arg}) must not be greater than {TOTAL_MAX_MB}");
                diags.list.push(tight(line, true, &msg));
                return true;
            }
            Some((mb, false)) => c.total_max_size = mb << 20,
            _ => return wrong(diags),
        },
        "max-age" => {
            if arg.is_empty() {
                warn(format!("'{kw}' expects an age parameter in seconds."));
            }
            // `atoi()` into an unsigned int.
            c.max_age = strtol(arg) as u32;
        }
        "max-object-size" => {
            if arg.is_empty() {
                warn(format!("'{kw}' expects a maximum file size parameter in bytes."));
            }
            match strtoul(arg) {
                // (An unsigned long kept in an unsigned int.)
                Some((v, false)) => c.max_object_size = v as u32,
                _ => return wrong(diags),
            }
        }
        "process-vary" => {
            let msg =
                format!("'{kw}' expects \"on\" or \"off\" (enable or disable vary processing).");
            if arg.is_empty() {
                // (HAProxy says it twice then.)
                warn(msg.clone());
            }
            match arg {
                "on" => c.process_vary = true,
                "off" => c.process_vary = false,
                _ => warn(msg),
            }
        }
        _ => {
            if arg.is_empty() {
                warn(format!("'{kw}' expects a strictly positive number."));
            }
            match strtoul(arg) {
                Some((v, false)) if v as u32 != 0 => c.max_secondary_entries = v as u32,
                _ => return wrong(diags),
            }
        }
    }
    false
}

/// The end of a `cache` section: the size must be set, `max-object-size` defaults to a 256th
/// of it and may be at most half of it. `report`: false when HAProxy would have stopped
/// before (the sizes are still resolved, the messages not given).
pub(crate) fn finish(c: &mut CacheSection, report: bool, diags: &mut Diags) {
    let total = c.total_max_size;
    if total == 0 {
        if report {
            let msg = format!("Size not specified for cache '{}'", c.name);
            diags.list.push(Diagnostic::alert(None, msg));
        }
        return;
    }
    // At most 4095 MiB: these fit HAProxy's unsigned ints.
    let half = (total / 2) as u32;
    if c.max_object_size == 0 {
        c.max_object_size = (total >> 8) as u32;
    } else if c.max_object_size > half && report {
        let msg =
            format!("\"max-object-size\" is limited to an half of \"total-max-size\" => {half}");
        diags.list.push(Diagnostic::alert(None, msg));
    }
}

/// A `cache-use`/`cache-store` rule naming `name`: the proxy's cache filter of that name, or a
/// new implicit one at the end of its filters (HAProxy's `parse_cache_rule`).
pub(crate) fn rule_filter(p: &mut Proxy, name: &str, span: &Span) {
    if p.cache_filters().any(|f| f.name == name) {
        return;
    }
    let f = CacheFilter { name: name.to_string(), explicit: false, span: span.clone() };
    p.filters.push(Filter::Cache(f));
}

/// `filter cache <name>` (HAProxy's `parse_cache_flt`): an implicit filter of that name gives
/// way to it (the filter then stands at this line).
pub(crate) fn filter(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let name = line.arg(2);
    if name.is_empty() {
        return diags.alert(line, "'filter' : 'cache : expects a <name> argument'");
    }
    let same = p.filters.iter().position(|f| matches!(f, Filter::Cache(c) if c.name == name));
    if let Some(Filter::Cache(c)) = same.map(|i| &p.filters[i]) {
        if c.explicit {
            let msg = format!(
                "'filter' : '{}: multiple explicit declarations of the cache filter '{name}''",
                p.name
            );
            return diags.alert(line, msg);
        }
    }
    if !line.arg(3).is_empty() {
        let msg = format!("'filter cache' : unknown keyword '{}'.", line.arg(3));
        return diags.alert(line, msg);
    }
    if let Some(i) = same {
        p.filters.remove(i);
    }
    let f = CacheFilter { name: name.to_string(), explicit: true, span: line.span.clone() };
    p.filters.push(Filter::Cache(f));
}

/// HAProxy's `flt_check()` for one proxy: the compression filter must come after every cache
/// filter, and every cache filter must name a `cache` section.
pub(crate) fn check(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    let who = format!("{} '{}'", type_word(p.kind), p.name);
    // `check_implicit_http_comp_flt()`: only for a proxy with `compression` settings.
    if p.compression.is_some() {
        let (mut comp, mut explicit) = (false, false);
        for f in &p.filters {
            match f {
                Filter::Compression(_) => comp = true,
                Filter::Cache(_) if comp => {
                    let msg = format!(
                        "config: {who}: unable to enable the compression filter before any cache filter."
                    );
                    out.push(Diagnostic::alert(None, msg));
                    comp = true;
                    explicit = false;
                    break;
                }
                Filter::Cache(_) => {}
                Filter::Bwlim(_) | Filter::Trace(_) | Filter::Spoe(_) => explicit = true,
            }
        }
        if !comp && explicit {
            // Other filters declared: the compression filter's place must be said.
            let msg = format!(
                "config: {who}: require an explicit filter declaration to use HTTP compression"
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
    // `cache_store_check()`, for each cache filter in turn.
    for (i, f) in p.filters.iter().enumerate() {
        let Filter::Cache(c) = f else { continue };
        let Some(cache) = config.cache(&c.name) else {
            let msg = format!(
                "config: {who}: unable to find the cache '{}' referenced by the filter 'cache'.",
                c.name
            );
            out.push(Diagnostic::alert(None, msg));
            continue;
        };
        if p.filters[..i].iter().any(|f| matches!(f, Filter::Compression(_))) {
            let msg = format!(
                "config: {who}: unable to enable the compression filter before the cache '{}'.",
                cache.name
            );
            out.push(Diagnostic::alert(None, msg));
        }
    }
}

/// C's blanks (`isspace()`), which `strtoul()` and `atoi()` skip first.
fn c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// C's `strtoul(s, &end, 10)` with a 64-bit `unsigned long`: blanks, a sign, digits. `None`
/// when no digit was read (`end == s`); else the value (`ULONG_MAX` past it; after a `-`, the
/// value negated modulo 2^64, as C does) and whether anything follows the digits.
fn strtoul(s: &str) -> Option<(u64, bool)> {
    let t = s.trim_start_matches(c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let v = t[..digits]
        .bytes()
        .try_fold(0u64, |v, d| v.checked_mul(10).and_then(|v| v.checked_add(u64::from(d - b'0'))));
    let v = match v {
        None => u64::MAX,
        Some(v) if negative => v.wrapping_neg(),
        Some(v) => v,
    };
    Some((v, digits < t.len()))
}

/// C's `strtol(s, NULL, 10)` (what glibc's `atoi()` is): blanks, a sign, digits, saturating at
/// the 64-bit bounds; 0 without digits.
fn strtol(s: &str) -> i64 {
    let t = s.trim_start_matches(c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    t.bytes().take_while(u8::is_ascii_digit).fold(0i64, |v, d| {
        let d = i64::from(d - b'0');
        if negative {
            v.saturating_mul(10).saturating_sub(d)
        } else {
            v.saturating_mul(10).saturating_add(d)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Severity, Source};

    /// Loads `text` (as `t.cfg`): the configuration when it loads, and every diagnostic as
    /// `SEVERITY message`.
    fn load(text: &str) -> (Option<Config>, Vec<String>) {
        let src = Source { name: "t.cfg".into(), text: text.into() };
        let (config, diags) = match crate::load(&[src], &|_| None) {
            Ok(l) => (Some(l.config), l.diagnostics),
            Err(d) => (None, d),
        };
        let text = diags
            .iter()
            .map(|d| {
                let sev = match d.severity {
                    Severity::Alert => "ALERT",
                    Severity::Warning => "WARNING",
                    _ => "OTHER",
                };
                format!("{sev} {d}")
            })
            .collect();
        (config, text)
    }

    /// A `cache c` section with these lines (after a minimal frontend).
    fn section(lines: &str) -> (Option<Config>, Vec<String>) {
        load(&format!("cache c\n{lines}"))
    }

    fn cache(lines: &str) -> CacheSection {
        let (config, diags) = section(lines);
        let config = config.unwrap_or_else(|| panic!("loads: {diags:?}"));
        config.caches[0].clone()
    }

    #[test]
    fn defaults_and_sizes() {
        let c = cache("    total-max-size 4\n");
        assert_eq!(c.name, "c");
        assert_eq!(c.total_max_size, 4 << 20);
        assert_eq!(c.max_object_size, (4 << 20) / 256);
        assert_eq!(c.max_age, 60);
        assert!(!c.process_vary);
        assert_eq!(c.max_secondary_entries, 10);
        let c = cache(
            "total-max-size 4095\nmax-object-size 10000\nmax-age 240\nprocess-vary on\nmax-secondary-entries 3\n",
        );
        assert_eq!(c.total_max_size, 4095 << 20);
        assert_eq!(c.max_object_size, 10000);
        assert_eq!(c.max_age, 240);
        assert!(c.process_vary);
        assert_eq!(c.max_secondary_entries, 3);
        // Exactly half the total size is allowed.
        assert_eq!(cache("total-max-size 2\nmax-object-size 1048576\n").max_object_size, 1 << 20);
        // atoi(): a sign, junk after the digits, none at all.
        assert_eq!(cache("total-max-size 1\nmax-age 12abc\n").max_age, 12);
        assert_eq!(cache("total-max-size 1\nmax-age abc\n").max_age, 0);
        assert_eq!(cache("total-max-size 1\nmax-age -1\n").max_age, u32::MAX);
        // strtoul() kept in an unsigned int: 2^32 is 0, the default.
        assert_eq!(cache("total-max-size 1\nmax-object-size 4294967296\n").max_object_size, 4096);
        assert!(!cache("total-max-size 1\nprocess-vary on\nprocess-vary off\n").process_vary);
    }

    #[test]
    fn the_section_line() {
        let (_, d) = load("cache\n");
        assert_eq!(d, ["ALERT parsing [t.cfg:1] : 'cache' expects a <name> argument"]);
        let (_, d) = load("cache a b\n total-max-size 1\n");
        assert_eq!(d, ["ALERT parsing [t.cfg:1] : 'cache' cannot handle unexpected argument 'b'."]);
        let long = "a".repeat(40);
        let (config, d) = load(&format!("cache {long}\n total-max-size 1\n"));
        let cut = "a".repeat(32);
        assert_eq!(
            d,
            [format!("WARNING parsing [t.cfg:1]: cache name is limited to 32 characters, truncate to '{cut}'.")]
        );
        assert_eq!(config.expect("loads").caches[0].name, cut);
        let (config, d) = load("cache a\n total-max-size 1\ncache a\n total-max-size 2\n");
        assert!(config.is_none());
        assert_eq!(d, ["ALERT parsing [t.cfg:3]: Duplicate cache name 'a'."]);
    }

    #[test]
    fn keyword_messages() {
        let cases: &[(&str, &[&str])] = &[
            ("total-max-size 1 2", &["ALERT parsing [t.cfg:2] : 'total-max-size' cannot handle unexpected argument '2'."]),
            ("total-max-size", &["ALERT parsing [t.cfg:2]: total-max-size wrong value ''"]),
            ("total-max-size 1m", &["ALERT parsing [t.cfg:2]: total-max-size wrong value '1m'"]),
            ("total-max-size 4096", &["ALERT parsing [t.cfg:2]: \"total-max-size\" (4096) must not be greater than 4095"]),
            ("total-max-size -1", &["ALERT parsing [t.cfg:2]: \"total-max-size\" (-1) must not be greater than 4095"]),
            ("max-age", &["WARNING parsing [t.cfg:2]: 'max-age' expects an age parameter in seconds."]),
            ("max-object-size", &[
                "WARNING parsing [t.cfg:2]: 'max-object-size' expects a maximum file size parameter in bytes.",
                "ALERT parsing [t.cfg:2]: max-object-size wrong value ''",
            ]),
            ("max-object-size 1k", &["ALERT parsing [t.cfg:2]: max-object-size wrong value '1k'"]),
            ("process-vary", &[
                "WARNING parsing [t.cfg:2]: 'process-vary' expects \"on\" or \"off\" (enable or disable vary processing).",
                "WARNING parsing [t.cfg:2]: 'process-vary' expects \"on\" or \"off\" (enable or disable vary processing).",
            ]),
            ("process-vary yes", &["WARNING parsing [t.cfg:2]: 'process-vary' expects \"on\" or \"off\" (enable or disable vary processing)."]),
            ("max-secondary-entries", &[
                "WARNING parsing [t.cfg:2]: 'max-secondary-entries' expects a strictly positive number.",
                "ALERT parsing [t.cfg:2]: max-secondary-entries wrong value ''",
            ]),
            ("max-secondary-entries 0", &["ALERT parsing [t.cfg:2]: max-secondary-entries wrong value '0'"]),
            ("max-secondary-entries 2x", &["ALERT parsing [t.cfg:2]: max-secondary-entries wrong value '2x'"]),
            ("max-age 1 2", &["ALERT parsing [t.cfg:2] : 'max-age' cannot handle unexpected argument '2'."]),
            ("frobnicate 1", &["ALERT parsing [t.cfg:2] : unknown keyword 'frobnicate' in 'cache' section"]),
        ];
        for (line, want) in cases {
            // A size line after the one tested, so that the end checks pass.
            let (_, d) = section(&format!("{line}\ntotal-max-size 1\n"));
            assert_eq!(&d, want, "{line}");
        }
    }

    #[test]
    fn end_of_section_checks() {
        let (config, d) = section("max-age 5\n");
        assert!(config.is_none());
        assert_eq!(d, ["ALERT Size not specified for cache 'c'"]);
        let (config, d) = section("total-max-size 1\nmax-object-size 524289\n");
        assert!(config.is_none());
        assert_eq!(
            d,
            ["ALERT \"max-object-size\" is limited to an half of \"total-max-size\" => 524288"]
        );
        // After a line HAProxy stops at, the end checks do not add to it.
        let (_, d) = section("total-max-size x\n");
        assert_eq!(d, ["ALERT parsing [t.cfg:2]: total-max-size wrong value 'x'"]);
        // The section ends with the file, or at the next section.
        let (_, d) = load("cache c\nfrontend f\n");
        assert_eq!(d.first().map(String::as_str), Some("ALERT Size not specified for cache 'c'"));
    }

    const PROXY: &str =
        "defaults\n mode http\n timeout client 1s\n timeout server 1s\n timeout connect 1s\n";

    #[test]
    fn rules_declare_implicit_filters() {
        let (config, d) = load(&format!(
            "{PROXY}frontend f\n bind :8080\n http-request cache-use c if TRUE\n http-response cache-store c\n http-request cache-use d\n filter cache d\n default_backend b\nbackend b\n server s 127.0.0.1:80\ncache c\n total-max-size 1\ncache d\n total-max-size 2\n"
        ));
        let config = config.unwrap_or_else(|| panic!("{d:?}"));
        let f = config.proxy("f").expect("f");
        let names: Vec<(&str, bool)> =
            f.cache_filters().map(|c| (c.name.as_str(), c.explicit)).collect();
        assert_eq!(names, [("c", false), ("d", true)]);
        assert_eq!(f.http_request[0].action, crate::HttpAction::CacheUse("c".into()));
        assert!(f.http_request[0].cond.is_some());
        assert_eq!(f.http_response[0].action, crate::HttpAction::CacheStore("c".into()));
        assert_eq!(config.cache("d").map(|c| c.total_max_size), Some(2 << 20));
        assert!(config.proxy("b").expect("b").filters.is_empty());
    }

    #[test]
    fn rule_and_filter_messages() {
        let (_, d) = load(&format!(
            "{PROXY}frontend f\n bind :8080\n http-request cache-use\n http-response cache-store if TRUE\n http-request cache-use c x\n filter cache\n filter cache c x\n filter cache c\n filter cache c\n"
        ));
        assert_eq!(
            d,
            [
                "ALERT parsing [t.cfg:8] : error detected in frontend 'f' while parsing 'http-request cache-use' rule : expects a cache name.",
                "ALERT parsing [t.cfg:9] : error detected in frontend 'f' while parsing 'http-response cache-store' rule : expects a cache name.",
                "ALERT parsing [t.cfg:10] : 'http-request cache-use' expects either 'if' or 'unless' followed by a condition but found 'x'.",
                "ALERT parsing [t.cfg:11] : 'filter' : 'cache : expects a <name> argument'",
                "ALERT parsing [t.cfg:12] : 'filter cache' : unknown keyword 'x'.",
                "ALERT parsing [t.cfg:14] : 'filter' : 'f: multiple explicit declarations of the cache filter 'c''",
                "ALERT config: frontend 'f': unable to find the cache 'c' referenced by the filter 'cache'.",
            ]
        );
        let (_, d) = load(&format!("{PROXY}filter cache c\n"));
        assert_eq!(
            d,
            ["ALERT parsing [t.cfg:6] : parsing [t.cfg:6] : filter is not allowed in a 'default' section."]
        );
    }

    #[test]
    fn filter_order_and_names() {
        let long = "a".repeat(33);
        let (_, d) = load(&format!(
            "{PROXY}listen l\n bind :8080\n compression algo gzip\n filter compression\n filter cache c\n http-request cache-use {long}\n server s 127.0.0.1:80\ncache c\n total-max-size 1\ncache {long}\n total-max-size 1\n"
        ));
        assert_eq!(
            d,
            [
                format!("WARNING parsing [t.cfg:15]: cache name is limited to 32 characters, truncate to '{}'.", &long[..32]),
                "ALERT config: proxy 'l': unable to enable the compression filter before any cache filter.".to_string(),
                "ALERT config: proxy 'l': unable to enable the compression filter before the cache 'c'.".to_string(),
                format!("ALERT config: proxy 'l': unable to find the cache '{long}' referenced by the filter 'cache'."),
            ]
        );
        // Without `compression` settings, only the cache's own check speaks.
        let (_, d) = load(&format!(
            "{PROXY}backend b\n filter compression\n filter cache c\n server s 127.0.0.1:80\ncache c\n total-max-size 1\n"
        ));
        assert_eq!(
            d,
            ["ALERT config: backend 'b': unable to enable the compression filter before the cache 'c'."]
        );
        // An explicit filter replaces the implicit one and takes its place.
        let (config, d) = load(&format!(
            "{PROXY}backend b\n compression algo gzip\n http-response cache-store c\n filter compression\n filter cache c\n server s 127.0.0.1:80\ncache c\n total-max-size 1\n"
        ));
        assert_eq!(
            d,
            [
                "ALERT config: backend 'b': unable to enable the compression filter before any cache filter.",
                "ALERT config: backend 'b': unable to enable the compression filter before the cache 'c'.",
            ]
        );
        assert!(config.is_none());
        // An implicit filter stands where its rule stands: after `filter compression` here.
        let (_, d) = load(&format!(
            "{PROXY}backend b\n filter compression\n http-response cache-store c\n server s 127.0.0.1:80\ncache c\n total-max-size 1\n"
        ));
        assert_eq!(
            d,
            ["ALERT config: backend 'b': unable to enable the compression filter before the cache 'c'."]
        );
        // The cache filter first: fine, the compression filter after it (explicit or not).
        for comp in ["filter compression", "compression algo gzip"] {
            let (config, d) = load(&format!(
                "{PROXY}backend b\n compression type text/html\n http-response cache-store c\n {comp}\n server s 127.0.0.1:80\ncache c\n total-max-size 1\n"
            ));
            assert!(d.iter().all(|d| !d.starts_with("ALERT")), "{d:?}");
            let config = config.expect("loads");
            let b = config.proxy("b").expect("b");
            let want = usize::from(comp.starts_with("filter")) + 1;
            assert_eq!(b.filters.len(), want);
            assert!(matches!(b.filters[0], Filter::Cache(_)));
        }
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(strtoul("12"), Some((12, false)));
        assert_eq!(strtoul(" +12x"), Some((12, true)));
        assert_eq!(strtoul("-1"), Some((u64::MAX, false)));
        assert_eq!(strtoul("99999999999999999999999"), Some((u64::MAX, false)));
        assert_eq!(strtoul(""), None);
        assert_eq!(strtoul("x1"), None);
        assert_eq!(strtol("-12"), -12);
        assert_eq!(strtol("99999999999999999999"), i64::MAX);
        assert_eq!(strtol("-99999999999999999999"), i64::MIN);
    }
}
