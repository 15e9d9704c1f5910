//! What a transaction's analysers did, step by step, when someone asks (`fulcrum explain`):
//! each rule judged (its place, whether its condition held, each ACL its condition evaluated)
//! and the other decisions (backend,
//! server, persistence) as words. Off on live traffic: a transaction's [`Vars::trace`] is
//! `None` and each rule then costs one test of it.
//!
//! [`Vars::trace`]: super::vars::Vars::trace
//!
//! Must not touch: what the rules do (it only records).

/// One step of a transaction's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A rule judged: its place (`origin`), and whether its condition held (without one,
    /// it holds).
    Rule { at: u32, held: bool },
    /// A `use_backend` rule judged (its index in the frontend's list; those rules carry no
    /// place): whether its condition held, and the backend it chose (`None`: it held but
    /// named no backend that exists, or did not hold).
    UseBackend { rule: usize, held: bool, chose: Option<String> },
    /// An ACL evaluated for the condition of the rule before it: its label (a name, or an
    /// anonymous ACL's criterion and patterns), the place of its line that matched (else of
    /// its first), whether the term was negated (`!`) and whether the ACL matched.
    Acl { at: u32, label: Box<str>, named: bool, negate: bool, matched: bool },
    /// Any other decision, in words (the analyser's name first).
    Note(String),
}

/// The steps of one transaction, in order.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub steps: Vec<Step>,
}

impl Trace {
    pub fn rule(&mut self, at: u32, held: bool) {
        self.steps.push(Step::Rule { at, held });
    }

    pub fn note(&mut self, what: impl Into<String>) {
        self.steps.push(Step::Note(what.into()));
    }
}
