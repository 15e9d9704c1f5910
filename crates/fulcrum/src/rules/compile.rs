//! Compiling a proxy's ACLs, conditions, rules, log formats and `use_backend` switching from
//! the configuration model: pattern files and maps are read here (through `sys`, so a reload
//! under `chroot` reads them too) and registered as pattern references; errors name the
//! configuration line. Must not touch: evaluation (the parent module), sockets.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_pattern::{Method as PMethod, PatternSet, Replace};

use super::*;

/// A reply's whole message, as `plan::messages::reply_message` reads it: `None` for replies that are not
/// one, `Some(None)` when the `http-errors` section has no message for the status.
pub(crate) type MessageReader<'a> =
    &'a dyn Fn(&cfg::Reply, &cfg::Span) -> Result<Option<Option<Arc<[u8]>>>, String>;

/// Compiles a proxy's ACLs, conditions and rules. Files (`-f`, maps, reply files) are read
/// here; errors name the config line.
pub struct Compiler<'a> {
    proxy: &'a cfg::Proxy,
    /// Reads a reply's whole message (`errorfile`, `errorfiles <name>` of the `http-errors`
    /// sections): the plan's reader, which knows HAProxy's messages.
    messages: MessageReader<'a>,
    acls: Acls,
    by_name: HashMap<String, AclId>,
    /// Named ACLs that failed to compile (already reported: conditions naming them are not).
    broken: Vec<String>,
    maps: &'a mut HashMap<(std::path::PathBuf, u8), Arc<maps::LiveMap>>,
    /// Where the rule being compiled is (maps record where they are used).
    at: Option<cfg::Span>,
    pub errors: Vec<String>,
    /// Some compiled expression reads the connection's local address (`dst`, `%fi`...).
    pub uses_dst: bool,
    /// A rule reads the connection's first bytes (`req.ssl_sni`...).
    pub uses_payload: bool,
    /// An expression reads the request (`hdr()`, `path`, `req.proto_http`...): in `mode tcp`,
    /// from the first bytes.
    pub uses_http_req: bool,
    /// The plan's stick tables.
    tables: &'a crate::stick::Tables,
    /// The plan's userlists.
    userlists: &'a crate::auth::Userlists,
    /// The plan's caches.
    pub caches: Option<&'a crate::cache::Caches>,
    /// What the plan's loggers share (`log global`): SPOE agents' `log` lines.
    pub logs: Option<&'a crate::log::syslog::Common>,
    /// The proxy's bandwidth limitation filters (made once: a stream's limit of a filter is
    /// found by the filter's identity).
    bwlims: Vec<Arc<crate::bwlim::Filter>>,
}

impl<'a> Compiler<'a> {
    pub fn new(
        proxy: &'a cfg::Proxy,
        maps: &'a mut HashMap<(std::path::PathBuf, u8), Arc<maps::LiveMap>>,
        messages: MessageReader<'a>,
        tables: &'a crate::stick::Tables,
        userlists: &'a crate::auth::Userlists,
    ) -> Self {
        let mut c = Compiler {
            tables,
            userlists,
            proxy,
            messages,
            acls: Acls::default(),
            by_name: HashMap::new(),
            broken: Vec::new(),
            maps,
            at: None,
            errors: Vec::new(),
            uses_dst: false,
            uses_payload: false,
            uses_http_req: false,
            caches: None,
            logs: None,
            bwlims: Vec::new(),
        };
        c.bwlims = bwlim_filters(proxy, tables);
        for named in &proxy.acls {
            match c.acl(&named.acl) {
                Ok(acl) => {
                    let at = super::origin::register(&named.acl.span.file, named.acl.span.line);
                    match c.by_name.get(&named.name) {
                        Some(&id) => {
                            c.acls.entries[id].push(acl);
                            c.acls.info[id].lines.push(at);
                        }
                        None => {
                            let label = named.name.as_str().into();
                            let info = AclInfo { label, named: true, lines: vec![at] };
                            let id = c.acls.push(vec![acl], info);
                            c.by_name.insert(named.name.clone(), id);
                        }
                    }
                }
                Err(e) => {
                    c.errors.push(format!(
                        "parsing [{}] : error detected while parsing ACL '{}' : {e}",
                        named.acl.span, named.name
                    ));
                    c.broken.push(named.name.clone());
                }
            }
        }
        c
    }

    pub fn finish(self) -> Acls {
        self.acls
    }

    /// The proxy being compiled.
    pub fn proxy(&self) -> &'a cfg::Proxy {
        self.proxy
    }

    /// A compiler for the same plan over another proxy (a SPOE message's own ACLs).
    pub fn nested<'b>(&'b mut self, proxy: &'b cfg::Proxy) -> Compiler<'b>
    where
        'a: 'b,
    {
        Compiler::new(proxy, self.maps, self.messages, self.tables, self.userlists)
    }

    fn acl(&mut self, a: &cfg::Acl) -> Result<Acl, String> {
        let expr = self.expr(&a.expr)?;
        let method = a.method;
        // Checked as the configuration is (errors name the file and line); the set requests
        // use is built from the pattern references below.
        let mut b = PatternSet::builder(method, a.ignore_case);
        let texts = add_patterns(&mut b, a)?;
        // As HAProxy creates them: each file's reference, then the line's own.
        let order = (refs::rank(&a.span.file), a.span.line);
        let used = format!("file '{}' line {}", a.span.file, a.span.line);
        let mut from_files = Vec::with_capacity(a.files.len());
        for (f, text) in a.files.iter().zip(&texts) {
            let r = refs::file(refs::Kind::Acl, f, text, order);
            r.note_use(order, used.clone());
            from_files.push(r);
        }
        let inline = refs::inline(inline_desc(a), &a.patterns, order);
        let all = std::iter::once(inline).chain(from_files).collect();
        let set = acl_sets::LiveSet::new(method, a.ignore_case, all)?;
        Ok(Acl { expr, method: a.method, set })
    }

    pub fn expr(&mut self, e: &cfg::SampleExpr) -> Result<Expr, String> {
        if matches!(
            e.fetch,
            cfg::Fetch::Dst | cfg::Fetch::DstPort | cfg::Fetch::IsLocal { dst: true, .. }
        ) {
            self.uses_dst = true;
        }
        if matches!(e.fetch, cfg::Fetch::Payload(_)) {
            self.uses_payload = true;
        }
        use cfg::sample::Avail;
        if matches!(
            cfg::acl::fetch_avail(&e.fetch),
            Avail::Request | Avail::Method | Avail::Message
        ) {
            self.uses_http_req = true;
        }
        let maps = &mut *self.maps;
        let at = self.at.as_ref().unwrap_or(&self.proxy.span);
        let used_at = format!("file '{}' line {}", at.file, at.line);
        let (tables, own) = (self.tables, self.proxy.name.as_str());
        let table = move |name: Option<&str>| find_table(tables, name, own);
        let lists = self.userlists;
        let userlist = move |name: &str| {
            lists.get(name).cloned().ok_or_else(|| {
                format!("unable to find userlist '{name}' referenced in proxy '{own}'.")
            })
        };
        sample::compile(
            e,
            &mut |path: &Path, kind| {
                let k = (path.to_path_buf(), kind as u8);
                if let Some(m) = maps.get(&k) {
                    m.file.note_use((refs::rank(&at.file), at.line), used_at.clone());
                    return Ok(Arc::clone(m));
                }
                // HAProxy's words, and why (HAProxy does not say).
                let text = crate::files::read_string(path).map_err(|e| {
                    let why = crate::sys::os_words(&e);
                    format!("failed to open pattern file <{}> : {why}.", path.display())
                })?;
                let order = (refs::rank(&at.file), at.line);
                let m = maps::LiveMap::load(path, map_method(kind), &text, used_at.clone(), order)
                    .map_err(|(line, err)| {
                        format!("map file <{}>, line {line} : {err}", path.display())
                    })?;
                maps.insert(k, Arc::clone(&m));
                Ok(m)
            },
            &table,
            &userlist,
        )
    }

    /// Compiles a condition; anonymous ACLs are added to the proxy's list.
    pub fn cond(&mut self, c: &Option<cfg::Condition>, span: &cfg::Span) -> Option<Cond> {
        let c = c.as_ref()?;
        let mut terms = Vec::with_capacity(c.terms.len());
        for group in &c.terms {
            let mut g = Vec::with_capacity(group.len());
            for t in group {
                let id = match &t.acl {
                    cfg::AclRef::Named(n) => match self.by_name.get(n) {
                        Some(&id) => id,
                        None if self.broken.contains(n) => continue,
                        None => {
                            self.errors.push(format!("parsing [{span}] : no such ACL : '{n}'"));
                            continue;
                        }
                    },
                    cfg::AclRef::Anonymous(a) => match self.acl(a) {
                        Ok(acl) => {
                            let at = super::origin::register(&a.span.file, a.span.line);
                            let mut label = format!("{{ {}", a.keyword);
                            for p in &a.patterns {
                                label.push(' ');
                                label.push_str(p);
                            }
                            label.push_str(" }");
                            let info =
                                AclInfo { label: label.into(), named: false, lines: vec![at] };
                            self.acls.push(vec![acl], info)
                        }
                        Err(e) => {
                            self.errors.push(format!("parsing [{}] : {e}", a.span));
                            continue;
                        }
                    },
                };
                if t.never {
                    // Never matches where it is used: an ACL of no lines.
                    let label = format!("{} (never matches here)", self.acls.info[id].label);
                    let info = AclInfo { label: label.into(), named: false, lines: Vec::new() };
                    g.push((t.negate, self.acls.push(Vec::new(), info)));
                    continue;
                }
                g.push((t.negate, id));
            }
            terms.push(g);
        }
        Some(Cond { unless: c.unless, terms })
    }

    pub fn format(&mut self, f: &cfg::LogFormat, span: &cfg::Span) -> Format {
        use crate::rules::format::Part;
        self.at = Some(span.clone());
        let mut parts = Vec::with_capacity(f.parts.len());
        for p in &f.parts {
            parts.push(match p {
                cfg::LogPart::Lit(s) => Part::Lit(s.as_bytes().into()),
                cfg::LogPart::Sep => Part::Sep,
                cfg::LogPart::Var(v, flags) => {
                    if matches!(v, cfg::LogVar::FrontendIp | cfg::LogVar::FrontendPort) {
                        self.uses_dst = true;
                    }
                    Part::Var(*v, *flags)
                }
                cfg::LogPart::Sample(e, flags) => match self.expr(e) {
                    Ok(e) => Part::Sample(e, *flags),
                    Err(err) => {
                        self.errors.push(format!("parsing [{span}] : {err}"));
                        continue;
                    }
                },
            });
        }
        Format::new(parts)
    }

    fn replace(&mut self, re: &str, span: &cfg::Span) -> Option<Replace> {
        match Replace::new(re) {
            Ok(r) => Some(r),
            Err(e) => {
                self.errors.push(format!("parsing [{span}] : invalid regex '{re}' : {e}"));
                None
            }
        }
    }

    pub fn reply(&mut self, r: &cfg::Reply, span: &cfg::Span) -> ReplySpec {
        let body = match &r.body {
            cfg::ReplyBody::None => ReplyBody::None,
            cfg::ReplyBody::String(s) => ReplyBody::Bytes(Arc::from(s.as_bytes())),
            cfg::ReplyBody::File(p) => match crate::files::read(p) {
                Ok(b) => ReplyBody::Bytes(Arc::from(b)),
                Err(e) => {
                    let (p, why) = (p.display(), crate::sys::os_words(&e));
                    self.errors
                        .push(format!("parsing [{span}] : error opening file '{p}' : {why}."));
                    ReplyBody::None
                }
            },
            cfg::ReplyBody::LfString(f) => ReplyBody::Format(self.format(f, span)),
            cfg::ReplyBody::LfFile { path, ctx, be_cap } => match lf_file(path, *ctx, *be_cap) {
                Ok(f) => ReplyBody::Format(self.format(&f, span)),
                Err(e) => {
                    self.errors.push(format!("parsing [{span}] : {e}"));
                    ReplyBody::None
                }
            },
            cfg::ReplyBody::ErrorFiles => ReplyBody::ErrorMessage,
            cfg::ReplyBody::ErrorFile(_) | cfg::ReplyBody::ErrorFilesOf(_) => {
                match (self.messages)(r, span) {
                    Ok(Some(Some(raw))) => ReplyBody::Message(raw),
                    // A status the section does not have: the status alone, as HAProxy.
                    Ok(_) => ReplyBody::None,
                    Err(e) => {
                        self.errors.push(e);
                        ReplyBody::None
                    }
                }
            }
        };
        let headers = r.headers.iter().map(|(n, f)| (n.clone(), self.format(f, span))).collect();
        ReplySpec { status: r.status, content_type: r.content_type.clone(), body, headers }
    }

    pub fn rules(&mut self, rules: &[cfg::HttpRule]) -> Vec<Rule> {
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            self.at = Some(r.span.clone());
            let cond = self.cond(&r.cond, &r.span);
            let Some(action) = self.action(&r.action, &r.span) else { continue };
            let at = super::origin::register(&r.span.file, r.span.line);
            out.push(Rule { action, cond, at });
        }
        out
    }

    /// Compiles one action (`None` once an error is recorded).
    fn action(&mut self, a: &cfg::HttpAction, span: &cfg::Span) -> Option<Action> {
        Some(match a {
            cfg::HttpAction::Allow => Action::Allow,
            cfg::HttpAction::PrometheusExporter => Action::Prometheus,
            cfg::HttpAction::Deny { status, reply } => Action::Deny {
                status: *status,
                reply: reply.as_ref().map(|rp| self.reply(rp, span)),
            },
            cfg::HttpAction::Return(rp) => Action::Return(self.reply(rp, span)),
            cfg::HttpAction::Redirect(rd) => Action::Redirect(RedirectSpec {
                kind: rd.kind,
                value: self.format(&rd.value, span),
                code: rd.code,
                drop_query: rd.drop_query,
                append_slash: rd.append_slash,
                ignore_empty: rd.ignore_empty,
            }),
            cfg::HttpAction::SetHeader { name, value } => {
                Action::SetHeader { name: name.as_bytes().into(), value: self.format(value, span) }
            }
            cfg::HttpAction::AddHeader { name, value } => {
                Action::AddHeader { name: name.as_bytes().into(), value: self.format(value, span) }
            }
            cfg::HttpAction::DelHeader { name, how } => {
                let how = match how {
                    cfg::NameMatch::Str => None,
                    cfg::NameMatch::Beg => Some(super::DelMatch::Beg),
                    cfg::NameMatch::End => Some(super::DelMatch::End),
                    cfg::NameMatch::Sub => Some(super::DelMatch::Sub),
                    cfg::NameMatch::Reg => match fulcrum_pattern::compile_regex(name, false) {
                        Ok(re) => Some(super::DelMatch::Reg(re)),
                        Err(e) => {
                            self.errors
                                .push(format!("parsing [{span}] : invalid regex '{name}' : {e}"));
                            return None;
                        }
                    },
                };
                Action::DelHeader { name: name.as_bytes().into(), how }
            }
            cfg::HttpAction::ReplaceHeader { name, regex, replace } => {
                let re = self.replace(regex, span)?;
                Action::ReplaceHeader {
                    name: name.as_bytes().into(),
                    re,
                    with: self.format(replace, span),
                }
            }
            cfg::HttpAction::ReplaceValue { name, regex, replace } => {
                let re = self.replace(regex, span)?;
                Action::ReplaceValue {
                    name: name.as_bytes().into(),
                    re,
                    with: self.format(replace, span),
                }
            }
            cfg::HttpAction::SetPath(f) => Action::SetPath(self.format(f, span)),
            cfg::HttpAction::SetPathQ(f) => Action::SetPathQ(self.format(f, span)),
            cfg::HttpAction::SetQuery(f) => Action::SetQuery(self.format(f, span)),
            cfg::HttpAction::SetUri(f) => Action::SetUri(self.format(f, span)),
            cfg::HttpAction::SetMethod(f) => Action::SetMethod(self.format(f, span)),
            cfg::HttpAction::ReplaceUri { regex, replace } => {
                let re = self.replace(regex, span)?;
                Action::ReplaceUri { re, with: self.format(replace, span) }
            }
            cfg::HttpAction::ReplacePath { regex, replace } => {
                let re = self.replace(regex, span)?;
                Action::ReplacePath { re, with: self.format(replace, span) }
            }
            cfg::HttpAction::ReplacePathQ { regex, replace } => {
                let re = self.replace(regex, span)?;
                Action::ReplacePathQ { re, with: self.format(replace, span) }
            }
            cfg::HttpAction::SetVar { scope, name, expr, conds } => match self.expr(expr) {
                Ok(e) => Action::SetVar {
                    scope: *scope,
                    name: name.as_str().into(),
                    expr: e,
                    conds: *conds,
                },
                Err(err) => {
                    self.errors.push(format!("parsing [{span}] : {err}"));
                    return None;
                }
            },
            cfg::HttpAction::UnsetVar { scope, name } => {
                Action::UnsetVar { scope: *scope, name: name.as_str().into() }
            }
            cfg::HttpAction::WaitForBody { time, at_least } => {
                Action::WaitForBody { time: *time, at_least: *at_least }
            }
            cfg::HttpAction::SendSpoeGroup { engine, group } => {
                let (engine, group) = self.spoe_group(engine, group)?;
                Action::SendSpoeGroup { engine, group }
            }
            cfg::HttpAction::Lua { name, args } => {
                Action::Lua { name: name.as_str().into(), args: args.clone().into() }
            }
            cfg::HttpAction::StrictMode(on) => Action::StrictMode(*on),
            cfg::HttpAction::SetVarFmt { scope, name, fmt, conds } => Action::SetVarFmt {
                scope: *scope,
                name: name.as_str().into(),
                fmt: self.format(fmt, span),
                conds: *conds,
            },
            cfg::HttpAction::Tarpit { status } => Action::Tarpit { status: *status },
            cfg::HttpAction::Reject | cfg::HttpAction::SilentDrop => Action::Drop,
            cfg::HttpAction::Capture { expr, id } => match self.expr(expr) {
                Ok(expr) => Action::Capture { expr, id: *id },
                Err(e) => {
                    self.errors.push(format!("parsing [{span}] : {e}"));
                    return None;
                }
            },
            cfg::HttpAction::EarlyHint { name, value } => {
                Action::EarlyHint { name: name.as_bytes().into(), value: self.format(value, span) }
            }
            cfg::HttpAction::Stick(a) => return self.stick(a, span),
            cfg::HttpAction::CacheUse(name) | cfg::HttpAction::CacheStore(name) => {
                let Some(c) = self.caches.and_then(|c| c.get(name)) else {
                    let msg = format!("parsing [{span}] : unable to find the cache '{name}'.");
                    self.errors.push(msg);
                    return None;
                };
                match a {
                    cfg::HttpAction::CacheUse(_) => Action::CacheUse(Arc::clone(c)),
                    _ => Action::CacheStore(Arc::clone(c)),
                }
            }
            cfg::HttpAction::SetBandwidthLimit(r) => return self.bwlim(r, span),
            cfg::HttpAction::Auth { realm } => {
                Action::Auth { realm: realm.as_deref().unwrap_or(&self.proxy.name).into() }
            }
            cfg::HttpAction::SetAddr { part, expr } => match self.expr(expr) {
                Ok(expr) => Action::SetAddr { part: *part, expr },
                Err(e) => {
                    self.errors.push(format!("parsing [{span}] : {e}"));
                    return None;
                }
            },
            cfg::HttpAction::SetStatus { status, reason } => Action::SetStatus {
                status: *status,
                reason: reason.as_deref().map(|r| r.as_bytes().into()),
            },
        })
    }

    /// Groups `use_backend` rules into [`Segment`]s: consecutive rules whose condition is one
    /// plain ACL (one line, no negation, `if`) over the same sample, match method and case
    /// rule are indexed together.
    pub fn switching(&mut self, rules: &[cfg::UseBackend]) -> Vec<Segment> {
        let mut segments = Vec::new();
        let mut i = 0;
        while i < rules.len() {
            let Some(first) = self.indexable(&rules[i]) else {
                push_linear(&mut segments, i);
                i += 1;
                continue;
            };
            let mut j = i + 1;
            while j < rules.len() && self.indexable(&rules[j]).is_some_and(|a| same_key(a, first)) {
                j += 1;
            }
            if j - i < INDEX_MIN_RULES {
                for k in i..j {
                    push_linear(&mut segments, k);
                }
                i = j;
                continue;
            }
            match self.index(&rules[i..j], first) {
                Ok((set, ends)) => match self.expr(&first.expr) {
                    Ok(expr) => segments.push(Segment::Indexed {
                        rules: i..j,
                        expr,
                        method: first.method,
                        set,
                        ends,
                    }),
                    Err(_) => (i..j).for_each(|k| push_linear(&mut segments, k)),
                },
                // The rules' own compilation reports the error; evaluate them one by one.
                Err(_) => (i..j).for_each(|k| push_linear(&mut segments, k)),
            }
            i = j;
        }
        segments
    }

    /// The single ACL a rule's condition tests, when the rule can join an index.
    fn indexable<'c>(&self, u: &'c cfg::UseBackend) -> Option<&'c cfg::Acl>
    where
        'a: 'c,
    {
        let c = u.cond.as_ref()?;
        if c.unless || c.terms.len() != 1 || c.terms[0].len() != 1 || c.terms[0][0].negate {
            return None;
        }
        let acl: &cfg::Acl = match &c.terms[0][0].acl {
            cfg::AclRef::Anonymous(a) => a,
            cfg::AclRef::Named(n) => {
                let mut lines = self.proxy.acls.iter().filter(|a| &a.name == n);
                let one = lines.next()?;
                if lines.next().is_some() {
                    return None;
                }
                &one.acl
            }
        };
        use cfg::MatchMethod as M;
        match acl.method {
            // Patterns from files are meant to change at run time (`add acl <file>`): such
            // rules stay out of indexes, which are built once.
            _ if !acl.files.is_empty() => None,
            M::Found | M::Bool => None,
            _ => Some(acl),
        }
    }

    fn index(
        &mut self,
        rules: &[cfg::UseBackend],
        first: &cfg::Acl,
    ) -> Result<(PatternSet, Vec<usize>), String> {
        let mut b = PatternSet::builder(first.method, first.ignore_case);
        let mut ends = Vec::with_capacity(rules.len());
        for u in rules {
            let acl = self.indexable(u).ok_or("not indexable")?;
            add_patterns(&mut b, acl)?;
            ends.push(b.len());
        }
        for u in rules {
            if let Some(acl) = self.indexable(u) {
                refs::freeze(&inline_desc(acl));
            }
        }
        Ok((b.build(), ends))
    }

    pub fn tcp_rules(&mut self, rules: &[cfg::TcpRule]) -> Vec<TcpRule> {
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            self.at = Some(r.span.clone());
            let cond = self.cond(&r.cond, &r.span);
            let act = match &r.action {
                cfg::TcpAction::Accept => TcpAct::Accept,
                cfg::TcpAction::Reject | cfg::TcpAction::SilentDrop | cfg::TcpAction::Close => {
                    TcpAct::Reject
                }
                cfg::TcpAction::Do(a) => match self.action(a, &r.span) {
                    Some(a) => TcpAct::Do(a),
                    None => continue,
                },
            };
            let at = super::origin::register(&r.span.file, r.span.line);
            out.push(TcpRule { act, cond, at });
        }
        out
    }

    /// Compiles `stick on|match|store-*` rules.
    pub fn stick_rules(&mut self, rules: &[cfg::StickRule]) -> Vec<stick::StickRule> {
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            self.at = Some(r.span.clone());
            let Ok(table) = find_table(self.tables, r.table.as_deref(), &self.proxy.name) else {
                let n = r.table.as_deref().unwrap_or(&self.proxy.name);
                let what = if r.kind == cfg::StickKind::StoreResponse {
                    "store table"
                } else {
                    "stick-table"
                };
                self.errors
                    .push(format!("Proxy '{}': unable to find {what} '{n}'.", self.proxy.name));
                continue;
            };
            let cond = self.cond(&r.cond, &r.span);
            match self.expr(&r.key) {
                Ok(key) => out.push(stick::StickRule { kind: r.kind, key, table, cond }),
                Err(e) => self.errors.push(format!("parsing [{}] : {e}", r.span)),
            }
        }
        out
    }

    /// Compiles a stick-counter action.
    /// `set-bandwidth-limit`: the proxy's filter of that name (the configuration checked it
    /// is there) with the rule's limit and period, or the filter's key.
    fn bwlim(&mut self, r: &cfg::filters::BwlimRule, span: &cfg::Span) -> Option<Action> {
        use super::{Amount, SetBwlim};
        let Some(filter) = self.bwlims.iter().find(|f| *f.name == *r.name).cloned() else {
            let msg = format!(
                "parsing [{span}] : unable to find bwlim filter '{}' referenced by set-bandwidth-limit rule.",
                r.name
            );
            self.errors.push(msg);
            return None;
        };
        let mut amount = |a: &Option<cfg::filters::Amount>| -> Result<Option<Amount>, String> {
            Ok(match a {
                None => None,
                Some(cfg::filters::Amount::Const(n)) => Some(Amount::Const(*n)),
                Some(cfg::filters::Amount::Expr(e, _)) => Some(Amount::Expr(self.expr(e)?)),
            })
        };
        let limit = amount(&r.limit);
        let period = amount(&r.period);
        let key = match (self.proxy.bwlim_filter(&r.name).map(|f| &f.kind), &filter.table) {
            (Some(cfg::filters::BwlimKind::Shared { key, .. }), Some(t)) => {
                Some(self.expr(key).map(|e| (e, t.key)))
            }
            _ => None,
        };
        match (limit, period, key.transpose()) {
            (Ok(limit), Ok(period), Ok(key)) => {
                Some(Action::SetBandwidthLimit(Box::new(SetBwlim { filter, key, limit, period })))
            }
            (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => {
                self.errors.push(format!("parsing [{span}] : {e}"));
                None
            }
        }
    }

    fn stick(&mut self, a: &cfg::StickAction, span: &cfg::Span) -> Option<Action> {
        let expr = |c: &mut Self, e: &cfg::SampleExpr| match c.expr(e) {
            Ok(e) => Some(e),
            Err(err) => {
                c.errors.push(format!("parsing [{span}] : {err}"));
                None
            }
        };
        Some(Action::Stick(match a {
            cfg::StickAction::Track { slot, key, table, .. } => {
                let t = match find_table(self.tables, table.as_deref(), &self.proxy.name) {
                    Ok(t) => t,
                    Err(_) => {
                        let n = table.as_deref().unwrap_or(&self.proxy.name);
                        self.errors.push(format!(
                            "Proxy '{}': unable to find table '{n}' referenced by track-sc{slot}.",
                            self.proxy.name
                        ));
                        return None;
                    }
                };
                stick::StickAct::Track { slot: *slot, key: expr(self, key)?, table: t }
            }
            cfg::StickAction::IncGpc { slot, idx, array } => {
                stick::StickAct::IncGpc { slot: *slot, idx: *idx, array: *array }
            }
            cfg::StickAction::SetGpt { slot, idx, array, value } => {
                let value = match value {
                    cfg::GptValue::Int(i) => stick::GptSource::Int(*i),
                    cfg::GptValue::Expr(e) => stick::GptSource::Expr(expr(self, e)?),
                };
                stick::StickAct::SetGpt { slot: *slot, idx: *idx, array: *array, value }
            }
        }))
    }
}

/// The proxy's bandwidth limitation filters, each knowing its place among a stream's filters
/// (a frontend's before a backend's; compared with the compression filter's place).
fn bwlim_filters(p: &cfg::Proxy, tables: &crate::stick::Tables) -> Vec<Arc<crate::bwlim::Filter>> {
    let base = if p.kind.is_frontend() { 0 } else { 1 << 16 };
    let mut out = Vec::new();
    for (i, f) in p.filters.iter().enumerate() {
        let cfg::cache::Filter::Bwlim(b) = f else { continue };
        let table = match &b.kind {
            cfg::filters::BwlimKind::Shared { table, .. } => {
                find_table(tables, table.as_deref(), &p.name).ok()
            }
            _ => None,
        };
        out.push(Arc::new(crate::bwlim::Filter::new(b, base + i as u32, table)));
    }
    out
}

/// The stick table `name` (`None`: proxy `own`'s), with HAProxy's message when there is none.
fn find_table(
    tables: &crate::stick::Tables,
    name: Option<&str>,
    own: &str,
) -> Result<Arc<crate::stick::Table>, String> {
    let n = name.unwrap_or(own);
    tables
        .get(n)
        .cloned()
        .ok_or_else(|| format!("unable to find table '{n}' referenced in proxy '{own}'."))
}

/// Adds an ACL's inline patterns, then its `-f` files (read here), to a pattern set; the
/// files' texts.
fn add_patterns(
    b: &mut fulcrum_pattern::PatternSetBuilder,
    a: &cfg::Acl,
) -> Result<Vec<String>, String> {
    let words: Vec<&str> = a.patterns.iter().map(String::as_str).collect();
    b.add_words(&words).map_err(|e| e.to_string())?;
    let mut texts = Vec::with_capacity(a.files.len());
    for f in &a.files {
        let text = crate::files::read_string(f).map_err(|e| {
            let why = crate::sys::os_words(&e);
            format!("failed to open pattern file <{}> : {why}.", f.display())
        })?;
        b.add_file(&text).map_err(|(line, e)| {
            format!("failed to add pattern at line {line} of file <{}> : {e}", f.display())
        })?;
        texts.push(text);
    }
    Ok(texts)
}

/// How `show acl` names an ACL's inline patterns (HAProxy's words).
fn inline_desc(a: &cfg::Acl) -> String {
    format!("acl '{}' file '{}' line {}", a.keyword, a.span.file, a.span.line)
}

fn push_linear(segments: &mut Vec<Segment>, rule: usize) {
    if let Some(Segment::Linear(r)) = segments.last_mut() {
        if r.end == rule {
            r.end += 1;
            return;
        }
    }
    segments.push(Segment::Linear(rule..rule + 1));
}

/// Whether two ACLs test the same sample the same way (only their patterns differ).
fn same_key(a: &cfg::Acl, b: &cfg::Acl) -> bool {
    a.expr.fetch == b.expr.fetch
        && a.expr.converters == b.expr.converters
        && a.method == b.method
        && a.ignore_case == b.ignore_case
}

fn map_method(kind: cfg::MapMatch) -> PMethod {
    match kind {
        cfg::MapMatch::Str => PMethod::Str,
        cfg::MapMatch::Beg => PMethod::Beg,
        cfg::MapMatch::End => PMethod::End,
        cfg::MapMatch::Sub => PMethod::Sub,
        cfg::MapMatch::Dom => PMethod::Dom,
        cfg::MapMatch::Reg | cfg::MapMatch::Regm => PMethod::Reg,
        cfg::MapMatch::Ip => PMethod::Ip,
        cfg::MapMatch::Int => PMethod::Int,
    }
}

/// An `lf-file` payload: the file read and parsed as a log-format string.
pub fn lf_file(
    path: &std::path::Path,
    ctx: fulcrum_config::sample::Ctx,
    be_cap: bool,
) -> Result<cfg::LogFormat, String> {
    let text = crate::files::read(path).map_err(|e| {
        let why = crate::sys::os_words(&e);
        format!("'lf-file' : error opening file '{}' : {why}.", path.display())
    })?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let mut f = fulcrum_config::logformat::parse_in(&text, ctx, be_cap)?;
    f.text = text;
    Ok(f)
}
