//! Diagnostics: errors, warnings and notices with the config line they refer to.
//!
//! `Display` gives HAProxy's wording after the severity prefix, e.g.
//! `parsing [t.cfg:3] : unknown keyword 'foo' in 'global' section`; the CLI adds the
//! `[ALERT]    (pid) : config : ` prefix.

use std::fmt;

use crate::model::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// `.diag` lines, only shown with `-dD`.
    Diag,
    Notice,
    Warning,
    /// HAProxy prints `[ALERT]` but keeps going: the configuration is still accepted (e.g. a
    /// `tune.rcvbuf.client` given twice: the first value stays).
    AlertContinue,
    /// An error: the configuration is refused.
    Alert,
}

impl Severity {
    /// HAProxy's tag, padded as HAProxy pads it (`[ALERT]    `).
    pub fn tag(self) -> &'static str {
        match self {
            Severity::Diag => "[DIAG]     ",
            Severity::Notice => "[NOTICE]   ",
            Severity::Warning => "[WARNING]  ",
            Severity::AlertContinue | Severity::Alert => "[ALERT]    ",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Option<Span>,
    pub message: String,
}

impl Diagnostic {
    pub fn alert(span: Option<Span>, message: impl Into<String>) -> Self {
        Self { severity: Severity::Alert, span, message: message.into() }
    }
    pub fn warning(span: Option<Span>, message: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, span, message: message.into() }
    }
    pub fn notice(span: Option<Span>, message: impl Into<String>) -> Self {
        Self { severity: Severity::Notice, span, message: message.into() }
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Alert
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.span {
            Some(span) => write!(f, "parsing [{span}] : {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
