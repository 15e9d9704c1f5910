//! ACLs and conditions: an ACL is a sample expression plus an indexed pattern set
//! (`fulcrum-pattern`), a condition an OR of AND-groups of (negated) ACLs, evaluated as HAProxy
//! does (short-circuited, three-valued while content inspection may still wait), and, for a
//! trace, with each ACL evaluated noted.
//!
//! Must not touch: rule actions, the proxies.

use std::sync::Arc;

use fulcrum_config as cfg;

use super::sample::{Ctx, Expr};
use super::{acl_sets, trace};

/// One compiled ACL criterion.
#[derive(Debug)]
pub struct Acl {
    pub(super) expr: Expr,
    pub(super) method: cfg::MatchMethod,
    pub(super) set: Arc<acl_sets::LiveSet>,
}

impl Acl {
    pub(super) fn matches(&self, ctx: &Ctx<'_>) -> bool {
        use cfg::MatchMethod as M;
        match self.method {
            M::Found => self.expr.any(ctx, &mut |_| true),
            M::Bool => self.expr.any(ctx, &mut |v| v.is_true()),
            M::Int => self.set.with(|set| {
                self.expr.any(ctx, &mut |v| v.as_int().is_some_and(|i| set.match_int(i)))
            }),
            M::Len => self
                .set
                .with(|set| self.expr.any(ctx, &mut |v| set.match_int(v.as_bytes().len() as i64))),
            M::Ip => self.set.with(|set| {
                self.expr.any(ctx, &mut |v| v.as_ip().is_some_and(|ip| set.match_ip(ip)))
            }),
            _ => self.set.with(|set| self.expr.any(ctx, &mut |v| set.match_str(&v.as_bytes()))),
        }
    }
}

/// A condition: OR of AND-groups of (negated?) ACL references.
#[derive(Debug)]
pub struct Cond {
    pub(super) unless: bool,
    pub(super) terms: Vec<Vec<(bool, AclId)>>,
}

/// Index into [`Acls`].
pub type AclId = usize;

/// All ACLs of a proxy: each entry is one name's lines (ORed), or one anonymous ACL; and
/// what a trace says of each (`info`, same index).
#[derive(Debug, Default)]
pub struct Acls {
    pub(super) entries: Vec<Vec<Acl>>,
    pub(super) info: Vec<AclInfo>,
}

/// How a trace names an ACL: its name (an anonymous one: its criterion and patterns as
/// written) and where each of its lines is (`origin`).
#[derive(Debug, Default)]
pub struct AclInfo {
    pub label: Box<str>,
    pub named: bool,
    pub lines: Vec<u32>,
}

impl Acls {
    /// Adds an ACL of these lines; its id.
    pub(super) fn push(&mut self, lines: Vec<Acl>, info: AclInfo) -> AclId {
        self.entries.push(lines);
        self.info.push(info);
        self.entries.len() - 1
    }
}

impl Cond {
    pub fn eval(&self, acls: &Acls, ctx: &Ctx<'_>) -> bool {
        let r = self.terms.iter().any(|group| {
            group.iter().all(|(negate, id)| {
                let m = acls.entries[*id].iter().any(|a| a.matches(ctx));
                m != *negate
            })
        });
        r != self.unless
    }
}

impl Cond {
    /// [`Cond::eval`], noting each ACL it evaluates in `trace` (in order, as it
    /// short-circuits): its label, the line that matched (else its first), negated or not, and
    /// whether the term held.
    pub fn eval_traced(&self, acls: &Acls, ctx: &Ctx<'_>, trace: &mut Vec<trace::Step>) -> bool {
        let r = self.terms.iter().any(|group| {
            group.iter().all(|(negate, id)| {
                let hit = acls.entries[*id].iter().position(|a| a.matches(ctx));
                let info = acls.info.get(*id);
                let line = info.and_then(|i| i.lines.get(hit.unwrap_or(0)).copied());
                trace.push(trace::Step::Acl {
                    at: line.unwrap_or(0),
                    label: info.map_or_else(|| "?".into(), |i| i.label.clone()),
                    named: info.is_some_and(|i| i.named),
                    negate: *negate,
                    matched: hit.is_some(),
                });
                hit.is_some() != *negate
            })
        });
        r != self.unless
    }

    /// HAProxy's three-valued evaluation while data may still arrive (`ctx.more` set): `None`
    /// when the answer is not known yet (a term that did not match on a sample more bytes
    /// could change). A match is final; `!` and `unless` keep an unknown unknown.
    pub fn eval3(&self, acls: &Acls, ctx: &Ctx<'_>) -> Option<bool> {
        let Some(more) = ctx.more else { return Some(self.eval(acls, ctx)) };
        // 0: fails, 1: unknown, 3: passes (HAProxy's ACL_TEST_* values), so & and | work.
        let mut any = 0u8;
        for group in &self.terms {
            let mut all = 3u8;
            for (negate, id) in group {
                more.set(false);
                let m = acls.entries[*id].iter().any(|a| a.matches(ctx));
                let mut r = if m {
                    3
                } else if more.get() {
                    1
                } else {
                    0
                };
                if *negate {
                    r = if r == 1 { 1 } else { 3 - r };
                }
                all &= r;
                if all == 0 {
                    break;
                }
            }
            any |= all;
            if any == 3 {
                break;
            }
        }
        more.set(false);
        match any {
            1 => None,
            r => Some((r == 3) != self.unless),
        }
    }
}

/// Evaluates an optional condition (absent: true).
pub fn holds(cond: &Option<Cond>, acls: &Acls, ctx: &Ctx<'_>) -> bool {
    cond.as_ref().is_none_or(|c| c.eval(acls, ctx))
}
