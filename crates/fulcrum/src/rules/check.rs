//! Samples in health checks: `http-check|tcp-check set-var(<name>) <expr>` and the `name-lf` /
//! `value-lf` log-format strings of `http-check expect hdr|fhdr`, `send-lf`, and the
//! `uri-lf`, `body-lf` and `hdr` formats of `http-check send`. They are compiled with the
//! backend's rules (same fetches, converters, maps), and read what a check has: its `check.`
//! variables, constants, and the server's response received so far (`res.hdr`, `res.fhdr`,
//! `res.payload`...). Process variables and other proxies are not visible here.
//!
//! Compiled with the plan, held by the backend, run by `health::run`.
//!
//! Must not touch: the check's connection and result (the runner), server state.

use fulcrum_config as cfg;
use fulcrum_http::{Head, Limits};

use super::format::Format;
use super::sample::{Ctx, Expr, ProcVars, Vars};
use super::view::NoBackends;

/// One configured step's compiled samples (none for most steps).
#[derive(Debug, Default)]
pub struct StepSamples {
    /// `set-var`'s expression.
    pub expr: Option<Expr>,
    /// `name-lf` and `value-lf`.
    pub name: Option<Format>,
    pub value: Option<Format>,
    /// `send-lf` / `send-binary-lf`.
    pub send: Option<Format>,
    /// `http-check send`'s `uri-lf`, `body-lf` and `hdr` values with variables (by index).
    pub uri: Option<Format>,
    pub body: Option<Format>,
    pub headers: Vec<(usize, Format)>,
}

/// Compiles the samples of a backend's check steps, one entry per configured step.
pub fn compile(
    c: &mut super::Compiler<'_>,
    steps: &[cfg::CheckStep],
    span: &cfg::Span,
) -> Result<Vec<StepSamples>, String> {
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        let mut one = StepSamples::default();
        match s {
            cfg::CheckStep::SetVar { expr, .. } => one.expr = Some(c.expr(expr)?),
            cfg::CheckStep::Send(cfg::SendStep::Lf { fmt, .. }) => {
                one.send = Some(c.format(fmt, span));
            }
            cfg::CheckStep::Send(cfg::SendStep::Http(h)) => {
                one.uri = h.uri_lf.as_ref().map(|f| c.format(f, span));
                one.body = h.body_lf.as_ref().map(|f| c.format(f, span));
                one.headers = h.header_lf.iter().map(|(i, f)| (*i, c.format(f, span))).collect();
            }
            cfg::CheckStep::Expect(cfg::ExpectStep {
                kind: cfg::ExpectKind::Header(h), ..
            }) => {
                one.name = h.name_lf.as_ref().map(|f| c.format(f, span));
                one.value = h.value_lf.as_ref().map(|f| c.format(f, span));
            }
            _ => {}
        }
        out.push(one);
    }
    Ok(out)
}

/// What samples of one check run see: its variables and the response bytes received.
pub struct Scope<'a> {
    pub vars: &'a Vars,
    pub buf: &'a [u8],
}

impl Scope<'_> {
    /// Runs `f` with a fetch context over the response head in `buf` (none while it is
    /// incomplete or not HTTP).
    fn with_ctx<R>(&self, f: impl FnOnce(&Ctx<'_>) -> R) -> R {
        // Checks see no process variables (an empty map costs no allocation).
        let none = ProcVars::default();
        let mut head = Head::new();
        let limits = Limits { max_head: self.buf.len().max(1024), max_headers: 1000 };
        let parsed = matches!(head.parse_response(self.buf, &limits), Ok(Some(_)));
        let mut ctx = Ctx::process(&none, &NoBackends, self.vars);
        if parsed {
            ctx.resp = Some(&head);
        }
        ctx.payload = self.buf;
        f(&ctx)
    }

    /// The value of a `set-var` expression, if it has one.
    pub fn eval(&self, e: &Expr) -> Option<super::sample::Value<'static>> {
        self.with_ctx(|ctx| e.eval(ctx).map(|v| v.into_owned()))
    }

    /// A log-format string rendered.
    pub fn render(&self, f: &Format) -> String {
        let mut out = Vec::new();
        self.with_ctx(|ctx| f.render(ctx, None, &mut out));
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Runs `f` over what a check run's samples see: its variables (none yet: `None`) and the
/// bytes received.
pub fn in_scope<R>(vars: Option<&Vars>, buf: &[u8], f: impl FnOnce(&Scope<'_>) -> R) -> R {
    let empty = Vars::default();
    f(&Scope { vars: vars.unwrap_or(&empty), buf })
}

/// An `http-check send` request with its `uri-lf`, `body-lf` and `hdr` formats rendered for
/// this run, as HAProxy 2.6 builds it: `/` for a URI that renders empty, a header that renders
/// empty left out.
pub fn http_send(h: &cfg::HttpSend, s: &StepSamples, scope: &Scope<'_>) -> cfg::HttpSend {
    let mut out = cfg::HttpSend { uri_lf: None, body_lf: None, header_lf: Vec::new(), ..h.clone() };
    if let Some(f) = &s.uri {
        let uri = scope.render(f);
        out.uri = Some(if uri.is_empty() { "/".into() } else { uri });
    }
    if let Some(f) = &s.body {
        out.body = Some(scope.render(f));
    }
    for (i, f) in &s.headers {
        if let Some(h) = out.headers.get_mut(*i) {
            h.1 = scope.render(f);
        }
    }
    // (A configured value is never empty: only a rendered one can be.)
    out.headers.retain(|(_, v)| !v.is_empty());
    out
}

/// `expect hdr` with its `name-lf` / `value-lf` rendered for this run.
pub fn header(h: &cfg::HeaderExpect, s: &StepSamples, scope: &Scope<'_>) -> cfg::HeaderExpect {
    let mut h = h.clone();
    if let Some(f) = &s.name {
        h.name = scope.render(f);
    }
    if let Some(f) = &s.value {
        h.value = Some(scope.render(f));
    }
    h
}
