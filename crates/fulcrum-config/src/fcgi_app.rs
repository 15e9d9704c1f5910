//! FastCGI applications: `fcgi-app <name>` sections (`docroot`, `index`, `path-info`, `acl`,
//! `set-param` and `pass-header` with their conditions, `log-stderr`, `option
//! keep-conn|get-values|mpxs-conns|max-reqs`), a backend's
//! `use-fcgi-app`, and HAProxy 2.6's checks of them once every section is read
//! (`cfg_fcgi_apps_postparser`). HAProxy 2.6 compiles `unset-param` and `hide-header` out: they
//! are unknown keywords here too. The engine speaks FastCGI to `proto fcgi` servers with them
//! (`fulcrum::http::fcgi`).

use crate::acl::{self, CondEnv};
use crate::args::{invalid_char, Diags};
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::model::{
    Condition, Config, LogEntry, LogFormat, Mode, MuxProto, NamedAcl, Proxy, ProxyKind, Span,
};
use crate::sample::Ctx;

/// A `set-param <name> <log-format> [if|unless <cond>]` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetParam {
    pub name: String,
    pub value: LogFormat,
    /// Over the section's own ACLs.
    pub cond: Option<Condition>,
}

/// A `pass-header <name> [if|unless <cond>]` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassHeader {
    /// Lower case.
    pub name: String,
    /// Over the section's own ACLs.
    pub cond: Option<Condition>,
}

/// An `fcgi-app <name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcgiApp {
    pub name: String,
    pub span: Span,
    pub docroot: Option<String>,
    pub index: Option<String>,
    /// `path-info <regex>`: its first capture is the script name, its second the path info.
    pub path_info: Option<String>,
    /// The section's named ACLs: its conditions name these only (and the predefined ones).
    pub acls: Vec<NamedAcl>,
    pub set_params: Vec<SetParam>,
    /// Request headers passed although hidden by default (`Authorization`, hop-by-hop ones).
    pub pass_headers: Vec<PassHeader>,
    /// `log-stderr`: where the application's `STDERR` records go (`log global` stands for
    /// `global`'s targets).
    pub log_stderr: Vec<LogEntry>,
    /// `option keep-conn` (HAProxy's default: on): the application keeps the connection.
    pub keep_conn: bool,
    pub get_values: bool,
    pub mpxs_conns: bool,
    /// `option max-reqs` (1 without multiplexing).
    pub max_reqs: u32,
}

/// Request headers HAProxy 2.6 never passes to an application unless `pass-header` names
/// them.
pub const HIDDEN_HEADERS: [&str; 10] = [
    "connection",
    "keep-alive",
    "authorization",
    "proxy",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
];

/// `fcgi-app <name>`: a new section, or `None` when refused (its lines are then skipped).
pub fn start(line: &Line, apps: &[FcgiApp], diags: &mut Diags) -> Option<FcgiApp> {
    let name = line.arg(1);
    if name.is_empty() {
        diags.alert(line, "'fcgi-app' expects <name> as argument.");
        return None;
    }
    if let Some(c) = invalid_char(name) {
        diags.alert(line, format!("character '{c}' is not permitted in 'fcgi-app' name '{name}'."));
        return None;
    }
    if let Some(other) = apps.iter().find(|a| a.name == name) {
        let msg = format!(
            "fcgi-app section '{name}' has the same name as another one declared at {}.",
            other.span
        );
        diags.alert(line, msg);
    }
    Some(FcgiApp {
        name: name.to_string(),
        span: line.span.clone(),
        docroot: None,
        index: None,
        path_info: None,
        acls: Vec::new(),
        set_params: Vec::new(),
        pass_headers: Vec::new(),
        log_stderr: Vec::new(),
        keep_conn: true,
        get_values: false,
        mpxs_conns: false,
        max_reqs: 1,
    })
}

/// One line of an `fcgi-app` section.
pub fn line(app: &mut FcgiApp, line: &Line, diags: &mut Diags) {
    let negated = line.arg(0) == "no";
    let words = if negated { &line.words[1..] } else { &line.words[..] };
    let kw = words.first().map(String::as_str).unwrap_or("");
    let arg = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    if negated && kw != "option" {
        // HAProxy's reader refuses `no` before any other keyword of any section.
        return diags.alert(line, crate::args::NO_NEGATION);
    }
    match kw {
        "docroot" | "index" | "path-info" if arg(1).is_empty() => {
            let what = match kw {
                "docroot" => "<path>",
                "index" => "<filename>",
                _ => "<regex>",
            };
            diags.alert(line, format!("'{kw}' expects {what} as argument."));
        }
        "docroot" => app.docroot = Some(arg(1).to_string()),
        "index" => app.index = Some(arg(1).to_string()),
        "path-info" => match crate::regex_check::check(arg(1)) {
            Ok(()) => app.path_info = Some(arg(1).to_string()),
            Err(e) => diags.alert(line, format!("'{kw}' : {e}.")),
        },
        "set-param" if arg(1).is_empty() || arg(2).is_empty() => {
            diags.alert(line, "'set-param' expects <name> and <value> as arguments.")
        }
        "set-param" => match crate::logformat::parse(arg(2), Ctx::HttpRequest) {
            Ok(value) => {
                let Some(cond) = condition(app, line, 3, diags) else { return };
                app.set_params.push(SetParam { name: arg(1).to_string(), value, cond })
            }
            Err(e) => diags.alert(line, format!("'{}' : {e}.", arg(1))),
        },
        "pass-header" if arg(1).is_empty() => {
            diags.alert(line, "'pass-header' expects <name> as arguments.")
        }
        "pass-header" => {
            let Some(cond) = condition(app, line, 2, diags) else { return };
            app.pass_headers.push(PassHeader { name: arg(1).to_ascii_lowercase(), cond })
        }
        "acl" => named_acl(app, line, diags),
        "log-stderr" => {
            let list = &mut app.log_stderr;
            crate::logtargets::log_line_as("log-stderr", line, false, false, list, diags)
        }
        "option" => option(app, line, negated, arg(1), arg(2), arg(3), diags),
        _ => diags.alert(line, format!("unknown keyword '{kw}' in 'fcgi-app' section")),
    }
}

/// The `if|unless` condition from word `at` of a `set-param` or `pass-header` line, over the
/// section's ACLs: `Some(None)` without one, `None` when refused (said with HAProxy's words).
fn condition(
    app: &FcgiApp,
    line: &Line,
    at: usize,
    diags: &mut Diags,
) -> Option<Option<Condition>> {
    let words = &line.words[at.min(line.words.len())..];
    let name = line.arg(1);
    match words.first().map(String::as_str) {
        None | Some("") => Some(None),
        Some("if" | "unless") => {
            let env = CondEnv { acls: &app.acls, ctx: Ctx::HttpRequest, kind: ProxyKind::Backend };
            match acl::parse_condition(words, &line.span, &env) {
                Ok(c) => Some(Some(c.cond)),
                Err(e) => {
                    diags.alert(line, format!("'{name}' : {}.", e.trim_end_matches('.')));
                    None
                }
            }
        }
        // HAProxy says "(null)" here.
        Some(other) => {
            let msg = format!("'{name}' : '{other}' found where 'if' or 'unless' was expected.");
            diags.alert(line, msg);
            None
        }
    }
}

/// `acl <name> <criterion> [flags] [operator] <value> ...`: one of the section's ACLs.
fn named_acl(app: &mut FcgiApp, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if let Some(c) = invalid_char(name) {
        return diags
            .alert(line, format!("character '{c}' is not permitted in acl name '{name}'."));
    }
    if name.eq_ignore_ascii_case("or") {
        return diags.alert(line, format!("acl name '{name}' will never match. 'or' is used to express a logical disjunction within a condition."));
    }
    match acl::parse_acl(line.words.get(2..).unwrap_or(&[]), &line.span) {
        Ok(p) => app.acls.push(NamedAcl { name: name.to_string(), acl: p.acl }),
        Err(e) => {
            let msg =
                format!("error detected while parsing ACL '{name}' : {}.", e.trim_end_matches('.'));
            diags.alert(line, msg)
        }
    }
}

fn option(
    app: &mut FcgiApp,
    line: &Line,
    negated: bool,
    name: &str,
    value: &str,
    extra: &str,
    diags: &mut Diags,
) {
    let flag = match name {
        "" => return diags.alert(line, "'option' expects an option name."),
        "keep-conn" => &mut app.keep_conn,
        "get-values" => &mut app.get_values,
        "mpxs-conns" => &mut app.mpxs_conns,
        "max-reqs" => {
            if negated {
                let msg = format!("negation/default is not supported for option '{name}'.");
                return diags.alert(line, msg);
            }
            if value.is_empty() {
                return diags.alert(line, format!("option '{name}' expects an integer argument."));
            }
            if !extra.is_empty() {
                let msg = format!("'option {name}' cannot handle unexpected argument '{extra}'.");
                return diags.alert(line, msg);
            }
            let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<u32>() {
                Ok(n) if n > 0 => app.max_reqs = n,
                _ => diags.alert(
                    line,
                    format!("option '{name}' expects a strictly positive integer argument."),
                ),
            }
            return;
        }
        other => return diags.alert(line, format!("unknown option '{other}'.")),
    };
    if !value.is_empty() {
        let msg = format!("'option {name}' cannot handle unexpected argument '{value}'.");
        return diags.alert(line, msg);
    }
    *flag = !negated;
}

/// HAProxy's `fcgi-app '<name>': no docroot configured.` and its `max-reqs` warning, once the
/// section ends.
pub fn finish(app: &mut FcgiApp, out: &mut Vec<Diagnostic>) {
    if app.docroot.is_none() {
        let msg = format!("fcgi-app '{}': no docroot configured.", app.name);
        out.push(Diagnostic::alert(None, msg));
    }
    if !app.mpxs_conns && !app.get_values {
        if app.max_reqs > 1 {
            let msg = format!(
                "fcgi-app '{}': multiplexing not supported, ignore the option 'max-reqs'.",
                app.name
            );
            out.push(Diagnostic::warning(None, msg));
        }
        app.max_reqs = 1;
    }
}

/// A backend's `use-fcgi-app <name>`.
pub fn use_fcgi_app(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    let name = line.arg(1);
    if name.is_empty() {
        return diags.alert(line, "'use-fcgi-app' expects <name> as argument");
    }
    match &p.use_fcgi_app {
        Some((other, _)) if other != name => {
            diags.alert(line, "'use-fcgi-app' : only one fcgi-app supported per backend")
        }
        _ => p.use_fcgi_app = Some((name.to_string(), line.span.clone())),
    }
}

/// HAProxy 2.6's checks of a proxy's application and FastCGI servers.
pub fn check(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    let fcgi_servers: Vec<&str> = p
        .servers
        .iter()
        .filter(|s| s.proto == Some(MuxProto::Fcgi))
        .map(|s| s.name.as_str())
        .collect();
    let name = &p.name;
    let Some((app, _)) = &p.use_fcgi_app else {
        if let Some(s) = fcgi_servers.first() {
            let msg = format!("proxy '{name}': FCGI server '{s}' has no FCGI app configured.");
            out.push(Diagnostic::alert(None, msg));
        }
        return;
    };
    if !config.fcgi_apps.iter().any(|a| &a.name == app) {
        let msg = format!("proxy '{name}' : fcgi-app '{app}' not found.");
        return out.push(Diagnostic::alert(None, msg));
    }
    if p.mode == Mode::Tcp {
        let msg = format!("proxy '{name}': FCGI application cannot be used in non-HTTP mode.");
        return out.push(Diagnostic::alert(None, msg));
    }
    if fcgi_servers.is_empty() {
        let msg = format!("proxy '{name}': FCGI app configured but no FCGI server found.");
        out.push(Diagnostic::alert(None, msg));
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Severity;

    fn load(text: &str) -> (crate::Config, Vec<(Severity, String)>) {
        let src = crate::Source { name: "t.cfg".into(), text: text.into() };
        let (c, d, _) = crate::load_partial(&[src], &|_| None);
        (c, d.iter().map(|d| (d.severity, d.message.clone())).collect())
    }

    const BASE: &str =
        "defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n";

    #[test]
    fn an_application_and_its_backend() {
        let (c, d) = load(&format!("{BASE}fcgi-app php\n docroot /var/www/html\n index index.php\n path-info ^(/.+\\.php)(/.*)?$\n set-param REDIRECT_STATUS 200\n set-param HOST_SEEN %[req.hdr(host)]\n pass-header Authorization\n option max-reqs 10\n no option keep-conn\nbackend php\n use-fcgi-app php\n server fpm 127.0.0.1:9000 proto fcgi\n"));
        let warned = "fcgi-app 'php': multiplexing not supported, ignore the option 'max-reqs'.";
        assert_eq!(d, [(Severity::Warning, warned.to_string())]);
        let a = &c.fcgi_apps[0];
        assert_eq!(
            (a.docroot.as_deref(), a.index.as_deref()),
            (Some("/var/www/html"), Some("index.php"))
        );
        let passed: Vec<&str> = a.pass_headers.iter().map(|p| p.name.as_str()).collect();
        assert_eq!((a.set_params.len(), passed.as_slice()), (2, &["authorization"][..]));
        assert_eq!((a.keep_conn, a.max_reqs), (false, 1), "max-reqs needs multiplexing");
        assert_eq!(c.proxies[0].use_fcgi_app.as_ref().map(|u| u.0.as_str()), Some("php"));
    }

    #[test]
    fn conditions_name_the_sections_own_acls() {
        let (c, d) = load(&format!("{BASE}fcgi-app php\n docroot /r\n acl api path_beg /api\n set-param A 1 if api\n set-param B 2 unless {{ src 10.0.0.0/8 }}\n pass-header Authorization if api || TRUE\n log-stderr global\n log-stderr 127.0.0.1:514 local0 err\nbackend php\n acl other path /\n use-fcgi-app php\n server fpm 127.0.0.1:9000 proto fcgi\n"));
        assert_eq!(d, []);
        let a = &c.fcgi_apps[0];
        assert_eq!(a.acls.len(), 1);
        assert!(a.set_params.iter().all(|p| p.cond.is_some()));
        assert!(a.pass_headers[0].cond.as_ref().is_some_and(|c| c.terms.len() == 2));
        assert_eq!(a.log_stderr.len(), 2);
        // The backend's ACLs are not the section's.
        let (_, d) = load(&format!("{BASE}fcgi-app php\n docroot /r\n set-param A 1 if other\nbackend php\n acl other path /\n use-fcgi-app php\n server fpm 127.0.0.1:9000 proto fcgi\n"));
        assert!(d.iter().any(|x| x.1.ends_with("'A' : no such ACL : 'other'.")), "{d:?}");
    }

    #[test]
    fn haproxys_messages() {
        let has = |d: &[(Severity, String)], m: &str| d.iter().any(|x| x.1.ends_with(m));
        let (_, d) = load(&format!("{BASE}fcgi-app php\n option max-reqs 10\nbackend b\n server s 127.0.0.1:9000 proto fcgi\nbackend c\n use-fcgi-app nope\n server s 127.0.0.1:9000\n"));
        assert!(has(&d, "fcgi-app 'php': no docroot configured."), "{d:?}");
        assert!(
            has(&d, "fcgi-app 'php': multiplexing not supported, ignore the option 'max-reqs'."),
            "{d:?}"
        );
        assert!(has(&d, "proxy 'b': FCGI server 's' has no FCGI app configured."), "{d:?}");
        assert!(has(&d, "proxy 'c' : fcgi-app 'nope' not found."), "{d:?}");
        let (_, d) = load(&format!("{BASE}fcgi-app php\n docroot /r\nbackend b\n use-fcgi-app php\n server s 127.0.0.1:9000\n"));
        assert!(has(&d, "proxy 'b': FCGI app configured but no FCGI server found."), "{d:?}");
        for (text, msg) in [
            ("fcgi-app\n", "'fcgi-app' expects <name> as argument."),
            ("fcgi-app a/b\n", "character '/' is not permitted in 'fcgi-app' name 'a/b'."),
            ("fcgi-app a\n docroot\n", "'docroot' expects <path> as argument."),
            ("fcgi-app a\n path-info (\n", "'path-info' : "),
            ("fcgi-app a\n set-param X\n", "'set-param' expects <name> and <value> as arguments."),
            (
                "fcgi-app a\n option max-reqs 0\n",
                "option 'max-reqs' expects a strictly positive integer argument.",
            ),
            ("fcgi-app a\n option bogus\n", "unknown option 'bogus'."),
            ("fcgi-app a\n unset-param X\n", "unknown keyword 'unset-param' in 'fcgi-app' section"),
            ("fcgi-app a\n hide-header X\n", "unknown keyword 'hide-header' in 'fcgi-app' section"),
            ("fcgi-app a\n set-param X 1 if nosuch\n", "'X' : no such ACL : 'nosuch'."),
            ("fcgi-app a\n acl\n", "error detected while parsing ACL '' : "),
            ("fcgi-app a\n acl a/b path /\n", "character '/' is not permitted in acl name 'a/b'."),
            ("fcgi-app a\n acl x nosuchfetch\n", "error detected while parsing ACL 'x' : unknown fetch method 'nosuchfetch' in ACL expression 'nosuchfetch'."),
            ("fcgi-app a\n log-stderr\n", "log-stderr : expects <address> and <facility> or global as arguments"),
            ("fcgi-app a\n log-stderr 127.0.0.1:1 bogus\n", "log-stderr : unknown log facility 'bogus'"),
            ("fcgi-app a\n no log-stderr\n", crate::args::NO_NEGATION),
            ("fcgi-app a\n no docroot\n", crate::args::NO_NEGATION),
        ] {
            let (_, d) = load(&format!("{BASE}{text}"));
            assert!(
                d.iter().any(|(s, m)| *s == Severity::Alert && m.contains(msg)),
                "{text}: {d:?}"
            );
        }
    }
}
