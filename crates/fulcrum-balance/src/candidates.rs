//! Which servers a pick may return: eligibility, the active/backup rule and `exclude`.

use crate::ServerSet;

/// `usable` and a non-zero weight: HAProxy never sends traffic to a weight-0 server.
pub(crate) fn eligible(set: &dyn ServerSet, i: usize) -> bool {
    set.weight(i) > 0 && set.usable(i)
}

/// The candidate group of one pick, computed in one pass over the servers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidates {
    /// Candidates are backup servers (no active server is eligible).
    pub backup: bool,
    /// Only this server may be chosen (first eligible backup, without `allbackups`).
    pub only: Option<usize>,
    /// Never choose this one (another candidate exists).
    pub exclude: Option<usize>,
}

impl Candidates {
    /// `None` when no server is eligible at all.
    pub fn compute(
        set: &dyn ServerSet,
        allbackups: bool,
        exclude: Option<usize>,
    ) -> Option<Candidates> {
        let mut active = 0usize;
        let mut backups = 0usize;
        // First eligible backup, and first eligible backup other than `exclude`.
        let mut first_backup = None;
        let mut first_backup_not_excluded = None;
        let mut excluded_group = None;
        for i in 0..set.len() {
            if !eligible(set, i) {
                continue;
            }
            let is_backup = set.backup(i);
            if Some(i) == exclude {
                excluded_group = Some(is_backup);
            }
            if is_backup {
                backups += 1;
                first_backup.get_or_insert(i);
                if Some(i) != exclude {
                    first_backup_not_excluded.get_or_insert(i);
                }
            } else {
                active += 1;
            }
        }
        if active > 0 {
            let exclude = if excluded_group == Some(false) && active > 1 { exclude } else { None };
            return Some(Candidates { backup: false, only: None, exclude });
        }
        if backups == 0 {
            return None;
        }
        if allbackups {
            let exclude = if excluded_group == Some(true) && backups > 1 { exclude } else { None };
            return Some(Candidates { backup: true, only: None, exclude });
        }
        let only = first_backup_not_excluded.or(first_backup);
        Some(Candidates { backup: true, only, exclude: None })
    }

    /// May the pick return server `i`?
    #[inline]
    pub fn allows(&self, set: &dyn ServerSet, i: usize) -> bool {
        self.exclude != Some(i) && self.allows_ignoring_exclude(set, i)
    }

    /// Same, but without applying `exclude` (for algorithms that must know whether the
    /// excluded server is the only one with room, like `first`).
    #[inline]
    pub fn allows_ignoring_exclude(&self, set: &dyn ServerSet, i: usize) -> bool {
        match self.only {
            Some(only) => i == only,
            None => set.backup(i) == self.backup && eligible(set, i),
        }
    }

    /// Linear fallback: the first allowed server at or after `start` (cyclically).
    pub fn first_from(&self, set: &dyn ServerSet, start: usize) -> Option<usize> {
        let n = set.len();
        if let Some(only) = self.only {
            return (only < n).then_some(only);
        }
        let start = if start >= n { 0 } else { start };
        (start..n).chain(0..start).find(|&i| self.allows(set, i))
    }
}
