//! Section structure: splits the (already filtered) lines of every file into `global`,
//! `defaults`, `frontend`, `backend`, `listen`, `http-errors`, `userlist`, `ring`,
//! `log-forward`, `fcgi-app`, `cache` and `mailers` sections, resolves which
//! `defaults` a section starts from (the last one above it, or `from <name>`), refuses the
//! sections Fulcrum does not support yet, checks proxy names, and at the end applies each
//! proxy's error messages (`errorfiles` may name an `http-errors` section declared later).

use crate::args::Diags;
use crate::bind::parse_bind;
use crate::global;
use crate::http_opts;
use crate::keywords::OTHER_SECTIONS;
use crate::lexer::Line;
use crate::model::{Config, Global, HttpErrorsSection, ProxyKind, Span, Userlist};
use crate::proxy::{self, type_word, ProxyBuild, Section};

enum Current {
    None,
    Global,
    Build(Box<ProxyBuild>),
    HttpErrors(HttpErrorsSection),
    Userlist(Userlist),
    /// An `fcgi-app` section.
    FcgiApp(Box<crate::fcgi_app::FcgiApp>),
    Ring(crate::logfwd::Ring),
    LogForward(crate::logfwd::LogForward),
    /// A `cache` section, and whether one of its lines stopped HAProxy (its end checks are then
    /// not made).
    Cache(crate::cache::CacheSection, bool),
    Mailers(crate::mailers::MailersSection),
    Skip,
}

/// Whether `kw` opens a section (one Fulcrum reads, or one HAProxy knows).
pub fn starts_section(kw: &str) -> bool {
    matches!(
        kw,
        "global"
            | "defaults"
            | "frontend"
            | "backend"
            | "listen"
            | "http-errors"
            | "userlist"
            | "cache"
            | "mailers"
            | "fcgi-app"
            | "ring"
            | "log-forward"
    ) || OTHER_SECTIONS.contains(&kw)
}

/// Accumulates sections over all files.
pub struct Builder {
    pub diags: Diags,
    global: Global,
    proxies: Vec<ProxyBuild>,
    named_defaults: Vec<ProxyBuild>,
    last_defaults: Option<ProxyBuild>,
    /// Defaults sections with rules: used by a frontend, by a backend.
    rule_defaults: std::collections::HashMap<String, (bool, bool)>,
    http_errors: Vec<HttpErrorsSection>,
    userlists: Vec<Userlist>,
    rings: Vec<crate::logfwd::Ring>,
    log_forwards: Vec<crate::logfwd::LogForward>,
    caches: Vec<crate::cache::CacheSection>,
    mailers: Vec<crate::mailers::MailersSection>,
    fcgi_apps: Vec<crate::fcgi_app::FcgiApp>,
    current: Current,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            diags: Diags::default(),
            global: Global::default(),
            proxies: Vec::new(),
            named_defaults: Vec::new(),
            last_defaults: None,
            rule_defaults: std::collections::HashMap::new(),
            http_errors: Vec::new(),
            userlists: Vec::new(),
            rings: Vec::new(),
            log_forwards: Vec::new(),
            caches: Vec::new(),
            mailers: Vec::new(),
            fcgi_apps: Vec::new(),
            current: Current::None,
        }
    }

    /// Feeds one file's lines; a file always starts outside any section.
    pub fn feed_file(&mut self, lines: &[Line]) {
        for line in lines {
            self.line(line);
        }
        self.finish_section();
    }

    /// The parsed configuration, before validation.
    pub fn finish(mut self) -> (Config, Diags) {
        self.finish_section();
        let mut proxies = Vec::new();
        for mut b in self.proxies {
            http_opts::resolve_errors(&mut b.proxy, &b.errors, &self.http_errors, &mut self.diags);
            crate::check::finish(&mut b);
            proxies.push(b.proxy);
        }
        let config = Config {
            global: self.global,
            proxies,
            http_errors: self.http_errors,
            userlists: self.userlists,
            rings: self.rings,
            log_forwards: self.log_forwards,
            caches: self.caches,
            mailers: self.mailers,
            fcgi_apps: self.fcgi_apps,
        };
        (config, self.diags)
    }

    fn line(&mut self, line: &Line) {
        let kw = line.arg(0);
        match kw {
            "global" => {
                self.finish_section();
                crate::args::no_extra(line, 1, "global", &mut self.diags);
                self.current = Current::Global;
            }
            "defaults" => self.start(line, Section::Defaults),
            "frontend" => self.start(line, Section::Proxy(ProxyKind::Frontend)),
            "backend" => self.start(line, Section::Proxy(ProxyKind::Backend)),
            "listen" => self.start(line, Section::Proxy(ProxyKind::Listen)),
            "http-errors" => self.start_http_errors(line),
            "userlist" => self.start_userlist(line),
            "cache" => {
                self.finish_section();
                self.current = match crate::cache::start(line, &self.caches, &mut self.diags) {
                    Some((c, aborted)) => Current::Cache(c, aborted),
                    None => Current::Skip,
                };
            }
            "mailers" => {
                self.finish_section();
                self.current = match crate::mailers::start(line, &self.mailers, &mut self.diags) {
                    Some(m) => Current::Mailers(m),
                    None => Current::Skip,
                };
            }
            "fcgi-app" => {
                self.finish_section();
                self.current = match crate::fcgi_app::start(line, &self.fcgi_apps, &mut self.diags)
                {
                    Some(a) => Current::FcgiApp(Box::new(a)),
                    None => Current::Skip,
                };
            }
            "ring" | "log-forward" => {
                self.finish_section();
                self.current = Current::Skip;
                let name = line.arg(1);
                if name.is_empty() {
                    return self.diags.alert(line, format!("missing name for {kw} section."));
                }
                let taken = self.rings.iter().any(|r| r.name == name)
                    || self.log_forwards.iter().any(|f| f.name == name);
                if taken {
                    return self
                        .diags
                        .alert(line, format!("sink or log-forward '{name}' already exists."));
                }
                self.current = if kw == "ring" {
                    Current::Ring(crate::logfwd::Ring::new(name, line.span.clone()))
                } else {
                    Current::LogForward(crate::logfwd::LogForward::new(name, line.span.clone()))
                };
            }
            _ if OTHER_SECTIONS.contains(&kw) => {
                self.finish_section();
                self.diags.alert(line, format!("section '{kw}' is not supported yet"));
                self.current = Current::Skip;
            }
            _ => match &mut self.current {
                Current::None => {
                    self.diags.alert(line, format!("unknown keyword '{kw}' out of section."))
                }
                Current::Global => global::parse_line(line, &mut self.global, &mut self.diags),
                Current::Build(b) => proxy::parse_line(b, line, &mut self.diags),
                Current::HttpErrors(s) => http_errors_line(s, line, &mut self.diags),
                Current::Userlist(u) => crate::userlist::line(u, line, &mut self.diags),
                Current::FcgiApp(a) => crate::fcgi_app::line(a, line, &mut self.diags),
                Current::Ring(r) => crate::logfwd::ring_line(r, line, &mut self.diags),
                Current::LogForward(f) => crate::logfwd::forward_line(f, line, &mut self.diags),
                Current::Cache(c, aborted) => {
                    *aborted |= crate::cache::line(c, line, &mut self.diags);
                }
                Current::Mailers(m) => crate::mailers::line(m, line, &mut self.diags),
                Current::Skip => {}
            },
        }
    }

    fn finish_section(&mut self) {
        match std::mem::replace(&mut self.current, Current::None) {
            Current::Build(b) if b.section == Section::Defaults => {
                if !b.proxy.name.is_empty() {
                    if b.defaults_rules & crate::proxy::DEFAULTS_RULES != 0 {
                        crate::validate::defaults_rule_refs(&b.proxy, &mut self.diags.list);
                    }
                    self.named_defaults.retain(|d| d.proxy.name != b.proxy.name);
                    self.named_defaults.push((*b).clone());
                }
                self.last_defaults = Some(*b);
            }
            Current::Build(b) => self.proxies.push(*b),
            Current::HttpErrors(s) => self.http_errors.push(s),
            Current::Userlist(u) => self.userlists.push(u),
            Current::Ring(r) => self.rings.push(r),
            Current::LogForward(f) => self.log_forwards.push(f),
            Current::Mailers(m) => self.mailers.push(m),
            Current::Cache(mut c, aborted) => {
                crate::cache::finish(&mut c, !aborted, &mut self.diags);
                // Kept even when refused: the rules naming it then get no second error.
                self.caches.push(c);
            }
            Current::FcgiApp(mut a) => {
                crate::fcgi_app::finish(&mut a, &mut self.diags.list);
                self.fcgi_apps.push(*a);
            }
            _ => {}
        }
    }

    fn start(&mut self, line: &Line, section: Section) {
        self.finish_section();
        let kw = section.keyword();
        // `defaults from <name>`: an anonymous defaults section starting from a named one.
        let anonymous_from = section == Section::Defaults && line.arg(1) == "from";
        let name = if anonymous_from { "" } else { line.arg(1) };
        let skip = if anonymous_from { 1 } else { 2 };
        let mut rest = line.words.iter().skip(skip).map(String::as_str).peekable();
        let mut legacy_addr = None;
        if section == Section::Proxy(ProxyKind::Listen) && rest.peek().is_some_and(|w| *w != "from")
        {
            legacy_addr = rest.next();
        }
        let from = match (rest.next(), rest.next()) {
            (None, _) => None,
            (Some("from"), Some(d)) => Some(d),
            (Some("from"), None) => {
                self.diags
                    .alert(line, format!("'{kw}' expects a defaults section name after 'from'."));
                None
            }
            (Some(other), _) => {
                self.diags
                    .alert(line, format!("'{kw}' cannot handle unexpected argument '{other}'."));
                None
            }
        };
        if let Some(extra) = rest.next() {
            self.diags.alert(line, format!("'{kw}' cannot handle unexpected argument '{extra}'."));
        }
        if !self.check_name(line, section, name) {
            // Nameless proxy: refused; its lines are skipped.
            self.current = Current::Skip;
            return;
        }
        let base = self.base_defaults(line, section, name, from);
        self.rule_defaults_users(line, section, &base);
        let mut b = match section {
            Section::Defaults => {
                let mut d = base.clone();
                d.proxy.name = name.to_string();
                d.proxy.span = line.span.clone();
                d
            }
            Section::Proxy(kind) => ProxyBuild::from_defaults(&base, kind, name, line.span.clone()),
        };
        if let Some(addr) = legacy_addr {
            self.legacy_listen_addr(line, addr, &mut b);
        }
        self.current = Current::Build(Box::new(b));
    }

    /// `userlist <name>`.
    fn start_userlist(&mut self, line: &Line) {
        self.finish_section();
        self.current = Current::Skip;
        let name = line.arg(1);
        if name.is_empty() {
            return self.diags.alert(line, "'userlist' expects <name> as arguments.");
        }
        if let Some(c) = crate::args::invalid_char(name) {
            let msg = format!("character '{c}' is not permitted in 'userlist' name '{name}'.");
            return self.diags.alert(line, msg);
        }
        if self.userlists.iter().any(|u| u.name == name) {
            return self.diags.warning(line, format!("ignoring duplicated userlist '{name}'."));
        }
        self.current = Current::Userlist(Userlist {
            name: name.to_string(),
            span: line.span.clone(),
            groups: Vec::new(),
            users: Vec::new(),
        });
    }

    /// `http-errors <name>`.
    fn start_http_errors(&mut self, line: &Line) {
        self.finish_section();
        self.current = Current::Skip;
        let name = line.arg(1);
        if name.is_empty() {
            return self.diags.alert(line, "missing name for http-errors section.");
        }
        if let Some(c) = crate::args::invalid_char(name) {
            let msg = format!("character '{c}' is not permitted in 'http-errors' name '{name}'.");
            return self.diags.alert(line, msg);
        }
        if let Some(other) = self.http_errors.iter().find(|s| s.name == name) {
            let msg = format!(
                "http-errors section '{name}' already exists (declared at {}).",
                span_text(&other.span)
            );
            return self.diags.alert(line, msg);
        }
        crate::args::no_extra(line, 2, "http-errors", &mut self.diags);
        self.current = Current::HttpErrors(HttpErrorsSection {
            name: name.to_string(),
            span: line.span.clone(),
            errors: Default::default(),
        });
    }

    /// A defaults section with rules serves only frontends or only backends, never another
    /// defaults section or a `listen` (HAProxy's restrictions, with its words).
    fn rule_defaults_users(&mut self, line: &Line, section: Section, base: &ProxyBuild) {
        use crate::proxy::{DEFAULTS_CONN_RULES, DEFAULTS_RES_RULES, DEFAULTS_RULES};
        if base.defaults_rules & DEFAULTS_RULES == 0 {
            return;
        }
        let at = span_text(&base.proxy.span);
        let err = match section {
            Section::Defaults => Some(format!("a defaults section cannot inherit from a defaults section defining TCP/HTTP rules (defaults section at {at}).")),
            Section::Proxy(ProxyKind::Listen) => {
                Some("a listen section cannot inherit from a defaults section defining TCP/HTTP rules.".to_string())
            }
            Section::Proxy(kind) => {
                let backend = kind == ProxyKind::Backend;
                let users = self.rule_defaults.entry(base.proxy.name.clone()).or_default();
                if backend {
                    users.1 = true;
                } else {
                    users.0 = true;
                }
                if users.0 && users.1 {
                    Some(format!("frontends and backends cannot inherit from the same defaults section if it defines TCP/HTTP rules (defaults section at {at})."))
                } else if !backend && base.defaults_rules & DEFAULTS_RES_RULES != 0 {
                    Some(format!("a frontend section cannot inherit from a defaults section defining 'tcp-response content' rules (defaults section at {at})."))
                } else if backend && base.defaults_rules & DEFAULTS_CONN_RULES != 0 {
                    Some(format!("a backend section cannot inherit from a defaults section defining 'tcp-request connection' or 'tcp-request session' rules (defaults section at {at})."))
                } else {
                    None
                }
            }
        };
        if let Some(msg) = err {
            self.diags.list.push(crate::diag::Diagnostic::alert(Some(line.span.clone()), msg));
        }
    }

    /// The defaults a new section starts from: `from <name>`, else the last `defaults`.
    fn base_defaults(
        &mut self,
        line: &Line,
        section: Section,
        name: &str,
        from: Option<&str>,
    ) -> ProxyBuild {
        let fresh = || ProxyBuild::new_defaults("", line.span.clone());
        let Some(from) = from else {
            // A new `defaults` section resets everything; a proxy uses the last one.
            if section == Section::Defaults {
                return fresh();
            }
            return self.last_defaults.clone().unwrap_or_else(fresh);
        };
        match self.named_defaults.iter().find(|d| d.proxy.name == from) {
            Some(d) => d.clone(),
            None => {
                let msg = format!(
                    "defaults section '{from}' not found for {} '{name}'.",
                    section.keyword()
                );
                self.diags.alert(line, msg);
                fresh()
            }
        }
    }

    /// `listen <name> <addr>`: the pre-1.5 form, accepted as a `bind` line with a warning.
    fn legacy_listen_addr(&mut self, line: &Line, addr: &str, b: &mut ProxyBuild) {
        let bind_line = Line { span: line.span.clone(), words: vec!["bind".into(), addr.into()] };
        if let Some(bind) = parse_bind(&bind_line, "listen", &mut self.diags) {
            b.proxy.binds.push(bind);
            let msg = format!("an address on the 'listen' line is a legacy form HAProxy 2.6 refuses; accepted as 'bind {addr}', please use a 'bind' line.");
            self.diags.warning(line, msg);
        }
    }

    /// Reports bad or duplicate names; false when the section has no name but needs one.
    fn check_name(&mut self, line: &Line, section: Section, name: &str) -> bool {
        let kw = section.keyword();
        if name.is_empty() {
            if section != Section::Defaults {
                self.diags.alert(line, format!("'{kw}' expects an <id> argument"));
                return false;
            }
            return true;
        }
        if let Some(c) = crate::args::invalid_char(name) {
            self.diags
                .alert(line, format!("character '{c}' is not permitted in '{kw}' name '{name}'."));
        }
        let Section::Proxy(kind) = section else { return true };
        let clash =
            self.proxies.iter().find(|p| p.proxy.name == name && overlaps(p.proxy.kind, kind));
        if let Some(other) = clash {
            let msg = format!(
                "{} '{name}' has the same name as {} '{name}' declared at {}.",
                type_word(kind),
                type_word(other.proxy.kind),
                span_text(&other.proxy.span)
            );
            self.diags.alert(line, msg);
        }
        true
    }
}

fn span_text(s: &Span) -> String {
    format!("{}:{}", s.file, s.line)
}

/// HAProxy lets a frontend and a backend share a name, not two proxies with a common side.
fn overlaps(a: ProxyKind, b: ProxyKind) -> bool {
    (a.is_frontend() && b.is_frontend()) || (a.is_backend() && b.is_backend())
}

/// One line of an `http-errors` section: only `errorfile <code> <file>`.
fn http_errors_line(s: &mut HttpErrorsSection, line: &Line, diags: &mut Diags) {
    if line.arg(0) != "errorfile" {
        return diags
            .alert(line, format!("unknown keyword '{}' in 'http-errors' section", line.arg(0)));
    }
    if let Some((code, src)) = http_opts::errorfile(line, true, diags) {
        s.errors.insert(code, src);
    }
}
