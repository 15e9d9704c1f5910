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
mod check_protocols;
pub mod compression;
pub mod cond;
pub mod diag;
pub mod duration;
mod extcheck;
pub mod fcgi_app;
pub mod filters;
pub mod global;
mod http_opts;
pub mod keywords;
pub mod lexer;
pub mod logformat;
pub mod logfwd;
pub mod logopts;
mod logtargets;
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
pub mod unix_bind;
mod userlist;
mod validate;

pub use cond::FEATURES;
pub use diag::{Diagnostic, Severity};
pub use global::cpus_for_thread;
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
    let mut builder = sections::Builder::new();
    for source in sources {
        let (lines, errors) = lexer::lex_source(&source.name, &source.text, env);
        for (span, msg) in errors {
            builder.diags.list.push(Diagnostic::alert(Some(span), msg));
        }
        if let Some(msg) = lexer::missing_lf(&source.name, &source.text) {
            builder.diags.list.push(Diagnostic::alert(None, msg));
        }
        let lines = cond::filter(lines, env, &mut builder.diags.list);
        builder.feed_file(&lines);
    }
    let (mut config, mut diags) = builder.finish();
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
