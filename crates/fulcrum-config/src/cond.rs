//! Conditional blocks (HAProxy §2.4): `.if` / `.elif` / `.else` / `.endif` nesting, the
//! condition expression language (`!`, `&&`, `||`, parentheses, integers and the predicates
//! `defined`, `feature`, `streq`, `strneq`, `version_atleast`, `version_before`, `ssllib_name_startswith`), and the
//! `.notice` / `.warning` / `.alert` / `.diag` directives.

use crate::diag::{Diagnostic, Severity};
use crate::lexer::Line;
use crate::model::Span;
use crate::{EnvLookup, HAPROXY_COMPAT_VERSION};

/// Build features `feature(<name>)` answers true for: only what Fulcrum's engine really does
/// (worker threads, CPU pinning, `SO_REUSEPORT` listeners, epoll through the runtime, and
/// `OPENSSL`: configurations guard their `ssl` keywords with it, and those work here, through
/// rustls — OpenSSL-only keywords such as `ssl-engine` still say "not supported yet"), and
/// `PCRE2`/`PCRE2_JIT`: a regex the `regex` crate refuses is compiled with PCRE2 itself.
/// (`ZLIB`: compression, by zlib-rs, a zlib in Rust; HAProxy's reg-tests ask for it or `SLZ`.)
pub const FEATURES: &[&str] =
    &["CPU_AFFINITY", "EPOLL", "OPENSSL", "PCRE2", "PCRE2_JIT", "REUSEPORT", "THREAD", "ZLIB"];

/// The TLS library `ssllib_name_startswith(<prefix>)` compares with (case aside, as HAProxy).
pub const SSLLIB_NAME: &str = "rustls";

/// Evaluates a condition text (the words after `.if`, joined by single spaces).
/// An empty condition is false.
pub fn eval(text: &str, env: EnvLookup<'_>) -> Result<bool, String> {
    if text.is_empty() {
        return Ok(false);
    }
    let mut p = Parser { s: text.as_bytes(), pos: 0, env, full: text };
    let v = p.expr()?;
    p.skip_ws();
    if let Some(&c) = p.s.get(p.pos) {
        return Err(format!(
            "unexpected character '{}' at the end of conditional expression '{}'",
            c as char, text
        ));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    env: EnvLookup<'a>,
    full: &'a str,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while matches!(self.s.get(self.pos), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn rest(&self) -> String {
        String::from_utf8_lossy(&self.s[self.pos..]).into_owned()
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.skip_ws();
        if self.s[self.pos..].starts_with(tok.as_bytes()) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    /// expr := and ('||' and)* ; the whole expression is parsed before it is evaluated.
    fn expr(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.eat("||") {
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.term()?;
        while self.eat("&&") {
            let r = self.term()?;
            v = v && r;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<bool, String> {
        self.skip_ws();
        match self.s.get(self.pos) {
            Some(b'!') => {
                self.pos += 1;
                Ok(!self.term()?)
            }
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if !self.eat(")") {
                    return Err(format!(
                        "expected ')' after conditional expression '{}'",
                        self.full
                    ));
                }
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => Ok(self.integer()),
            Some(c) if c.is_ascii_alphabetic() => self.predicate(),
            _ => Err(format!("unparsable conditional expression '{}'", self.rest())),
        }
    }

    /// An integer as `strtol(.., 0)` reads it: true when not zero.
    fn integer(&mut self) -> bool {
        if self.s[self.pos] == b'-' {
            self.pos += 1;
        }
        let hex = self.s[self.pos..].starts_with(b"0x") || self.s[self.pos..].starts_with(b"0X");
        if hex {
            self.pos += 2;
        }
        let mut nonzero = false;
        while let Some(&c) = self.s.get(self.pos) {
            let ok = if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() };
            if !ok {
                break;
            }
            nonzero |= c != b'0';
            self.pos += 1;
        }
        nonzero
    }

    fn predicate(&mut self) -> Result<bool, String> {
        let start = self.pos;
        while matches!(self.s.get(self.pos), Some(c) if c.is_ascii_alphanumeric() || *c == b'_') {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        let nargs = match name.as_str() {
            "defined"
            | "feature"
            | "version_atleast"
            | "version_before"
            | "ssllib_name_startswith" => 1,
            "streq" | "strneq" => 2,
            _ => {
                self.pos = start;
                return Err(format!("unparsable conditional expression '{}'", self.rest()));
            }
        };
        let args = self.args(&name)?;
        if args.len() < nargs {
            return Err(format!(
                "missing arguments (got {}/{nargs}), type 'string' expected in argument {} of predicate '{name}' used in conditional expression",
                args.len(),
                args.len().max(1)
            ));
        }
        if args.len() > nargs {
            return Err(format!(
                "too many arguments for predicate '{name}' used in conditional expression"
            ));
        }
        Ok(match name.as_str() {
            "defined" => !args[0].is_empty() && (self.env)(&args[0]).is_some(),
            "feature" => FEATURES.contains(&args[0].as_str()),
            "ssllib_name_startswith" => {
                SSLLIB_NAME.get(..args[0].len()).is_some_and(|p| p.eq_ignore_ascii_case(&args[0]))
            }
            "streq" => args[0] == args[1],
            "strneq" => args[0] != args[1],
            "version_atleast" => version_key(HAPROXY_COMPAT_VERSION) >= version_key(&args[0]),
            _ => version_key(HAPROXY_COMPAT_VERSION) < version_key(&args[0]),
        })
    }

    /// `(a,b)` arguments, taken literally (no trimming, as HAProxy does); none without `(`.
    fn args(&mut self, name: &str) -> Result<Vec<String>, String> {
        if self.s.get(self.pos) != Some(&b'(') {
            return Ok(Vec::new());
        }
        self.pos += 1;
        let close = self.s[self.pos..]
            .iter()
            .position(|&c| c == b')')
            .ok_or_else(|| format!("missing closing ')' after arguments to predicate '{name}'"))?;
        let inner = String::from_utf8_lossy(&self.s[self.pos..self.pos + close]).into_owned();
        self.pos += close + 1;
        if inner.is_empty() {
            return Ok(vec![String::new()]);
        }
        Ok(inner.split(',').map(str::to_string).collect())
    }
}

/// Sort key of a version string: numeric components (missing ones are 0), then release after
/// `-dev<N>` pre-releases.
pub fn version_key(v: &str) -> (Vec<u64>, u8, u64) {
    let (nums, suffix) = match v.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&v[..i], &v[i..]),
        None => (v, ""),
    };
    let mut comps: Vec<u64> = nums.split('.').map(|c| c.parse().unwrap_or(0)).collect();
    comps.resize(4, 0);
    match suffix.strip_prefix("-dev") {
        Some(n) => (comps, 0, n.parse().unwrap_or(0)),
        None => (comps, 1, 0),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// This branch is being taken.
    Taking,
    /// No branch taken yet; a later `.elif`/`.else` may be.
    Waiting,
    /// A branch was already taken, or the enclosing block is skipped.
    Done,
}

struct Frame {
    span: Span,
    state: State,
    seen_else: bool,
}

/// Applies the conditional directives of one file's lines: returns the lines that stay, and
/// pushes the directives' diagnostics (and block errors) to `diags`.
pub fn filter(lines: Vec<Line>, env: EnvLookup<'_>, diags: &mut Vec<Diagnostic>) -> Vec<Line> {
    let mut f = Filter::default();
    let out = lines.into_iter().filter_map(|l| f.push(l, env, diags)).collect();
    f.finish(diags);
    out
}

/// [`filter`] one line at a time (for lines whose reading depends on the lines kept before
/// them: `setenv`).
#[derive(Default)]
pub struct Filter {
    stack: Vec<Frame>,
}

impl Filter {
    /// The line if it stays (a directive never does).
    pub fn push(
        &mut self,
        line: Line,
        env: EnvLookup<'_>,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<Line> {
        let active = self.stack.iter().all(|f| f.state == State::Taking);
        let kw = line.arg(0);
        if !kw.starts_with('.') {
            return active.then_some(line);
        }
        match kw {
            ".if" | ".elif" | ".else" | ".endif" => block(&line, &mut self.stack, env, diags),
            _ if !active => {}
            ".notice" | ".warning" | ".alert" | ".diag" => message(&line, diags),
            _ => diags.push(Diagnostic::alert(
                Some(line.span.clone()),
                format!("unknown directive '{kw}'."),
            )),
        }
        None
    }

    /// The end of a file: a block left open is an error.
    pub fn finish(&self, diags: &mut Vec<Diagnostic>) {
        if let Some(f) = self.stack.last() {
            diags.push(Diagnostic::alert(Some(f.span.clone()), "non-terminated '.if' block."));
        }
    }
}

fn condition(line: &Line, env: EnvLookup<'_>, diags: &mut Vec<Diagnostic>) -> State {
    let text = line.words[1..].join(" ");
    match eval(&text, env) {
        Ok(true) => State::Taking,
        Ok(false) => State::Waiting,
        Err(e) => {
            let msg = format!("{e} in '{}'", line.arg(0));
            diags.push(Diagnostic::alert(Some(line.span.clone()), msg));
            State::Waiting
        }
    }
}

fn block(line: &Line, stack: &mut Vec<Frame>, env: EnvLookup<'_>, diags: &mut Vec<Diagnostic>) {
    let kw = line.arg(0);
    let span = Some(line.span.clone());
    if kw == ".if" {
        let parent_active = stack.iter().all(|f| f.state == State::Taking);
        let state = if parent_active { condition(line, env, diags) } else { State::Done };
        stack.push(Frame { span: line.span.clone(), state, seen_else: false });
        return;
    }
    if kw == ".endif" {
        if stack.pop().is_none() {
            diags.push(Diagnostic::alert(span, "lone '.endif' with no matching '.if'."));
        }
        return;
    }
    let Some(top) = stack.last() else {
        diags.push(Diagnostic::alert(span, format!("lone '{kw}' with no matching '.if'.")));
        return;
    };
    if top.seen_else {
        diags.push(Diagnostic::alert(span, format!("'{kw}' after '.else' is not permitted.")));
        return;
    }
    let new_state = match top.state {
        State::Taking | State::Done => State::Done,
        State::Waiting if kw == ".else" => State::Taking,
        State::Waiting => condition(line, env, diags),
    };
    if let Some(top) = stack.last_mut() {
        top.state = new_state;
        top.seen_else = kw == ".else";
    }
}

fn message(line: &Line, diags: &mut Vec<Diagnostic>) {
    let kw = line.arg(0);
    if line.words.len() > 2 {
        let msg = format!(
            "Unexpected argument '{}' for '{kw}'. Use quotes if the message should contain spaces.",
            line.arg(2)
        );
        diags.push(Diagnostic::alert(Some(line.span.clone()), msg));
        return;
    }
    let severity = match kw {
        ".notice" => Severity::Notice,
        ".warning" => Severity::Warning,
        ".alert" => Severity::Alert,
        _ => Severity::Diag,
    };
    let message = format!("'{}'.", line.arg(1));
    diags.push(Diagnostic { severity, span: Some(line.span.clone()), message });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex_source;

    fn env(name: &str) -> Option<String> {
        match name {
            "FOO" => Some("foo".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn ev(s: &str) -> Result<bool, String> {
        eval(s, &env)
    }

    #[test]
    fn literals_and_operators() {
        assert_eq!(ev(""), Ok(false));
        assert_eq!(ev("1"), Ok(true));
        assert_eq!(ev("0"), Ok(false));
        assert_eq!(ev("00"), Ok(false));
        assert_eq!(ev("0x1"), Ok(true));
        assert_eq!(ev("-1"), Ok(true));
        assert_eq!(ev("!0"), Ok(true));
        assert_eq!(ev("0 || 1"), Ok(true));
        assert_eq!(ev("1 && 0"), Ok(false));
        assert_eq!(ev("!(0||0)"), Ok(true));
        assert_eq!(ev("1 || 0 && 0"), Ok(true));
        assert_eq!(ev("!1 || 1"), Ok(true));
        assert_eq!(ev("(0 || 1) && !0"), Ok(true));
    }

    #[test]
    fn predicates() {
        assert_eq!(ev("defined(FOO)"), Ok(true));
        assert_eq!(ev("defined(EMPTY)"), Ok(true));
        assert_eq!(ev("defined(NOPE)"), Ok(false));
        assert_eq!(ev("defined()"), Ok(false));
        assert_eq!(ev("feature(THREAD)"), Ok(true));
        assert_eq!(ev("feature(OPENSSL)"), Ok(true));
        assert_eq!(ev("feature(PCRE)"), Ok(false));
        assert_eq!(ev("feature(PCRE) || feature(PCRE2)"), Ok(true));
        assert_eq!(ev("ssllib_name_startswith(RusTLS)"), Ok(true));
        assert_eq!(ev("ssllib_name_startswith(OpenSSL)"), Ok(false));
        assert_eq!(ev("!ssllib_name_startswith(AWS-LC)"), Ok(true));
        assert_eq!(ev("streq(a,a)"), Ok(true));
        assert_eq!(ev("streq(a, a)"), Ok(false));
        assert_eq!(ev("strneq(a,b)"), Ok(true));
        assert_eq!(ev("streq(a b,a b)"), Ok(true));
    }

    #[test]
    fn versions_compare_numerically_against_2_6() {
        assert_eq!(ev("version_atleast(2.6)"), Ok(true));
        assert_eq!(ev("version_atleast(2.6.0)"), Ok(true));
        assert_eq!(ev("version_atleast(2.5.14)"), Ok(true));
        assert_eq!(ev("version_atleast(2.10)"), Ok(false));
        assert_eq!(ev("version_atleast(2.7)"), Ok(false));
        assert_eq!(ev("version_atleast(2.6-dev19)"), Ok(true));
        assert_eq!(ev("version_before(2.6)"), Ok(false));
        assert_eq!(ev("version_before(2.6.1)"), Ok(true));
        assert_eq!(ev("version_before(3)"), Ok(true));
        assert_eq!(ev("version_before(2.5)"), Ok(false));
    }

    #[test]
    fn errors() {
        let e = ev("foo").expect_err("bare word");
        assert_eq!(e, "unparsable conditional expression 'foo'");
        let e = ev("(1").expect_err("paren");
        assert_eq!(e, "expected ')' after conditional expression '(1'");
        let e = ev("1 1").expect_err("garbage");
        assert_eq!(e, "unexpected character '1' at the end of conditional expression '1 1'");
        assert!(ev("1 || bogus(").is_err(), "whole expression is parsed first");
        assert!(ev("streq(a)").expect_err("args").starts_with("missing arguments (got 1/2)"));
        assert!(ev("1 &&").is_err());
    }

    fn run(text: &str) -> (Vec<String>, Vec<String>) {
        let (lines, _) = lex_source("c.cfg", text, &env);
        let mut diags = Vec::new();
        let kept = filter(lines, &env, &mut diags);
        let kept = kept.iter().map(|l| l.words.join(" ")).collect();
        let diags = diags.iter().map(|d| format!("{:?} {d}", d.severity)).collect();
        (kept, diags)
    }

    #[test]
    fn nested_blocks() {
        let text =
            ".if 0\na\n.elif 1\nb\n.if 0\nc\n.else\nd\n.endif\n.elif 1\ne\n.else\nf\n.endif\ng";
        let (kept, diags) = run(text);
        assert_eq!(kept, ["b", "d", "g"]);
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn skipped_blocks_are_not_evaluated() {
        let (kept, diags) = run(".if 0\n.if bogus(\n.alert \"no\"\n.endif\n.endif\nx");
        assert_eq!(kept, ["x"]);
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn block_errors() {
        let (_, d) =
            run(".endif\n.else\n.elif 1\n.if 1\n.else\n.else\n.elif 1\n.endif\n.if 1\n.if 0");
        assert_eq!(
            d,
            [
                "Alert parsing [c.cfg:1] : lone '.endif' with no matching '.if'.",
                "Alert parsing [c.cfg:2] : lone '.else' with no matching '.if'.",
                "Alert parsing [c.cfg:3] : lone '.elif' with no matching '.if'.",
                "Alert parsing [c.cfg:6] : '.else' after '.else' is not permitted.",
                "Alert parsing [c.cfg:7] : '.elif' after '.else' is not permitted.",
                "Alert parsing [c.cfg:10] : non-terminated '.if' block.",
            ]
        );
    }

    #[test]
    fn messages() {
        let (_, d) =
            run(".notice \"n ${FOO}\"\n.warning w\n.alert a\n.diag d\n.notice p q\n.bogus");
        assert_eq!(
            d,
            [
                "Notice parsing [c.cfg:1] : 'n foo'.",
                "Warning parsing [c.cfg:2] : 'w'.",
                "Alert parsing [c.cfg:3] : 'a'.",
                "Diag parsing [c.cfg:4] : 'd'.",
                "Alert parsing [c.cfg:5] : Unexpected argument 'q' for '.notice'. Use quotes if the message should contain spaces.",
                "Alert parsing [c.cfg:6] : unknown directive '.bogus'.",
            ]
        );
    }
}
