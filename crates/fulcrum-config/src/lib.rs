//! Fulcrum's configuration compiler: HAProxy configuration text in, typed [`Config`] out.
//!
//! Pipeline: text -> lines of words (quoting, escapes, `${VAR}` expansion, with file:line spans)
//! -> conditional blocks (`.if`/`.elif`/`.else`/`.endif`) -> sections -> keyword parsers filling
//! the typed model, `defaults` applied -> validation. No I/O and no async: the caller reads the
//! files and passes the environment in, so every stage is testable on strings.
//!
//! ACL match methods are `fulcrum_pattern::Method` (`model::MatchMethod`) and `hash-type`'s
//! functions `fulcrum_balance::HashFunction`: one enum each for the model and the engine.

pub mod acl;
mod addr_env;
mod args;
mod balance;
pub mod bind;
pub mod cache;
mod check;
/// Hexadecimal digits decoded (`send-binary`), with HAProxy's messages.
pub use check::hex as parse_hex;
mod check_protocols;
pub mod compression;
pub mod cond;
pub mod diag;
pub mod duration;
pub mod env_set;
mod extcheck;
pub mod fcgi_app;
pub mod filters;
pub mod global;
pub mod h1_case;
mod http_opts;
pub mod keywords;
pub mod lexer;
pub mod logformat;
pub mod logfwd;
pub mod logopts;
mod logtargets;
pub mod lua;
pub mod mailers;
pub mod model;
mod proxy;
mod regex_check;
mod replies;
mod rules;
pub mod sample;
mod sample_names;
pub mod sections;
pub mod server;
pub mod source;
pub mod spoe;
mod stats_page;
mod stick;
pub mod suggest;
mod tcp_rules;
mod tcpka;
pub mod tls;
pub mod track;
pub mod tune;
pub mod unix_bind;
mod userlist;
mod validate;

pub use cond::FEATURES;
pub use diag::{Diagnostic, Severity};
pub use global::cpus_for_thread;
use lexer::Line;
pub use model::*;

/// The HAProxy version whose configuration language and feature set Fulcrum follows.
/// `version_atleast()` / `version_before()` in `.if` blocks are answered from it.
pub const HAPROXY_COMPAT_VERSION: &str = "2.6";

/// One configuration file's text and the name diagnostics use for it.
#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// Looks up an environment variable (the CLI passes `std::env::var`; tests pass a map).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A configuration that loaded, with the warnings and notices found on the way.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses and validates the given files, in order, as one configuration.
///
/// On failure returns every diagnostic found (all errors of all files, not just the first),
/// warnings included, in the order they were found.
pub fn load(sources: &[Source], env: EnvLookup<'_>) -> Result<Loaded, Vec<Diagnostic>> {
    addr_env::prepare(sources.iter().map(|s| s.text.as_str()), env);
    let result = load_prepared(sources, env);
    addr_env::clear();
    result
}

/// Like [`load`], but the configuration comes back even when some lines have errors: what
/// they would have set is missing from it. For `-c` to go on and open the files the other
/// lines draw on, as HAProxy opens each one while it parses its line. The diagnostics are in
/// the order [`load`] gives them: the first `.2` found line by line, then those of the checks
/// that follow the parse (as HAProxy's come after its parse).
pub fn load_partial(sources: &[Source], env: EnvLookup<'_>) -> (Config, Vec<Diagnostic>, usize) {
    addr_env::prepare(sources.iter().map(|s| s.text.as_str()), env);
    let result = parse(sources, env);
    addr_env::clear();
    result
}

fn load_prepared(sources: &[Source], env: EnvLookup<'_>) -> Result<Loaded, Vec<Diagnostic>> {
    let (config, diags, _) = parse(sources, env);
    if diags.iter().any(Diagnostic::is_error) {
        Err(diags)
    } else {
        Ok(Loaded { config, diagnostics: diags })
    }
}

/// The configuration the sources give and every diagnostic, errors included (the first `.2`
/// of them found line by line).
fn parse(sources: &[Source], env: EnvLookup<'_>) -> (Config, Vec<Diagnostic>, usize) {
    lua::begin();
    let mut builder = sections::Builder::new();
    // `setenv` and its kin change what the lines after them read, as HAProxy reads its
    // files: a line at a time, its `.if` blocks kept or skipped first.
    let overlay = std::cell::RefCell::new(env_set::Overlay::default());
    let lookup = |name: &str| overlay.borrow().lookup(name, env);
    let mut in_global = false;
    for source in sources {
        let file: std::sync::Arc<str> = std::sync::Arc::from(source.name.as_str());
        let (mut lines, mut errors, mut cond_diags) = (Vec::new(), Vec::new(), Vec::new());
        let mut filter = cond::Filter::default();
        for (i, raw) in source.text.lines().enumerate() {
            let span = Span { file: file.clone(), line: i as u32 + 1 };
            let words = match lexer::split_words(raw, &lookup) {
                Ok(w) if w.is_empty() => continue,
                Ok(w) => w,
                Err(msg) => {
                    errors.push(Diagnostic::alert(Some(span), msg));
                    continue;
                }
            };
            let Some(line) = filter.push(Line { span, words }, &lookup, &mut cond_diags) else {
                continue;
            };
            let kw = line.arg(0);
            if sections::starts_section(kw) {
                in_global = kw == "global";
            } else if in_global && env_set::is_env_keyword(kw) {
                overlay.borrow_mut().apply(&line.words, env);
            }
            lines.push(line);
        }
        filter.finish(&mut cond_diags);
        builder.diags.list.extend(errors);
        if let Some(msg) = lexer::missing_lf(&source.name, &source.text) {
            builder.diags.list.push(Diagnostic::alert(None, msg));
        }
        builder.diags.list.extend(cond_diags);
        builder.feed_file(&lines);
    }
    let (mut config, mut diags) = builder.finish();
    config.global.env_changes = overlay.borrow().changes();
    unix_bind::apply(&mut config);
    let parsed = diags.list.len();
    let parse_failed = diags.has_errors();
    if !parse_failed {
        validate::truncate_cookie_captures(&mut config, &mut diags.list);
        validate::drop_http_only(&mut config, &mut diags.list);
        logopts::compile(&mut config, &mut diags.list);
    }
    validate::validate(&config, parse_failed, &mut diags.list);
    (config, diags.list, parsed)
}

/// Evaluates one `.if` condition, as `haproxy -cc '<cond>'` does.
pub fn eval_condition(expr: &str, env: EnvLookup<'_>) -> Result<bool, String> {
    let words = lexer::split_words(expr, env)?;
    cond::eval(&words.join(" "), env)
}
