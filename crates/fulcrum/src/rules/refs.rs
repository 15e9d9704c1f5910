//! Pattern references (HAProxy's `pat_ref`): every map file, every ACL pattern file and the
//! inline patterns of every ACL is one reference with its entries, numbered as HAProxy numbers
//! them (in configuration order, maps and ACLs together), so `show map`/`show acl` ids and
//! `#<id>` arguments mean what they mean with HAProxy. A change (`add|set|del|clear map|acl`)
//! rebuilds every index built from the reference (`rules::maps::LiveMap` for maps,
//! `rules::acl_sets::LiveSet` for ACLs) before publishing any: a bad pattern changes nothing.
//!
//! The registry belongs to the current plan; a reload registers the new plan's references
//! apart and makes them current when it commits. Must not touch: sockets, rule evaluation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::acl_sets::LiveSet;
use super::maps::LiveMap;

/// One entry, with the reference number `show map|acl` prints and `#<ref>` names. ACL
/// entries have no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub key: String,
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Map,
    Acl,
}

/// A pattern reference.
#[derive(Debug)]
pub struct PatRef {
    id: AtomicUsize,
    pub kind: Kind,
    /// The file it was loaded from; `None` for an ACL's inline patterns.
    pub path: Option<PathBuf>,
    /// For inline patterns: `acl 'path_beg' file 'x.cfg' line 10`.
    pub desc: String,
    /// Where it is used (`file 'x.cfg' line N`), for `show map|acl`, with the place's order.
    used_at: Mutex<Vec<(Order, String)>>,
    /// Configuration order of its first use: the file's rank, the line, then creation order.
    order: Mutex<Order>,
    entries: Mutex<(Vec<Entry>, u64)>,
    pub maps: Mutex<Vec<Weak<LiveMap>>>,
    pub sets: Mutex<Vec<Weak<LiveSet>>>,
    /// Compiled into a `use_backend` index, which is built once: it cannot change.
    frozen: AtomicBool,
    /// `prepare|commit map|acl`: versions being filled before they replace the entries.
    versions: Mutex<Versions>,
}

/// HAProxy's generations of a reference: the current one, the last prepared, and the entries
/// of the prepared ones not committed yet.
#[derive(Debug, Default)]
struct Versions {
    curr: u32,
    next: u32,
    pending: std::collections::BTreeMap<u32, (Vec<Entry>, u64)>,
}

type Order = (usize, u32, usize);

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The references of the current plan.
static REFS: Mutex<Vec<Arc<PatRef>>> = Mutex::new(Vec::new());
/// The references of a plan being built for a reload (files are read again), made current
/// when the reload commits; with `true`, a reference the current plan has takes its entries
/// from it (a server added or deleted at run time keeps what the runtime API changed).
static BUILDING: Mutex<Option<(Vec<Arc<PatRef>>, bool)>> = Mutex::new(None);
static CREATED: AtomicUsize = AtomicUsize::new(0);

/// Starts registering the references of a new plan apart from the current ones; `carry`: they
/// keep the current entries of the references they replace.
pub fn begin_reload(carry: bool) {
    *lock(&BUILDING) = Some((Vec::new(), carry));
}

/// The entries the current reference matching `same` has, when a rebuild carries them.
fn carried(same: impl Fn(&PatRef) -> bool) -> Option<(Vec<Entry>, u64)> {
    let building = lock(&BUILDING);
    if !building.as_ref().is_some_and(|b| b.1) {
        return None;
    }
    let current = lock(&REFS);
    let r = current.iter().find(|r| same(r))?;
    let e = lock(&r.entries);
    Some((e.0.clone(), e.1))
}

/// Makes the references registered since [`begin_reload`] the current ones (`commit`), or
/// forgets them (the reload failed).
pub fn end_reload(commit: bool) {
    if let Some((refs, _)) = lock(&BUILDING).take() {
        if commit {
            *lock(&REFS) = refs;
        }
    }
}

fn with_registry<R>(f: impl FnOnce(&mut Vec<Arc<PatRef>>) -> R) -> R {
    let mut building = lock(&BUILDING);
    match building.as_mut() {
        Some(b) => f(&mut b.0),
        None => f(&mut lock(&REFS)),
    }
}

fn entries_of(pairs: Vec<(String, String)>) -> (Vec<Entry>, u64) {
    let entries: Vec<Entry> = pairs
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| Entry { id: i as u64, key, value })
        .collect();
    let next = entries.len() as u64;
    (entries, next)
}

fn new_ref(
    kind: Kind,
    path: Option<PathBuf>,
    desc: String,
    order: (usize, u32),
    entries: (Vec<Entry>, u64),
) -> PatRef {
    PatRef {
        id: AtomicUsize::new(0),
        kind,
        path,
        desc,
        used_at: Mutex::new(Vec::new()),
        order: Mutex::new((order.0, order.1, CREATED.fetch_add(1, Ordering::Relaxed))),
        entries: Mutex::new(entries),
        maps: Mutex::new(Vec::new()),
        sets: Mutex::new(Vec::new()),
        frozen: AtomicBool::new(false),
        versions: Mutex::default(),
    }
}

/// The reference of a map or ACL file (one per file and kind, shared by its users); `text`
/// is read only the first time. `order`: the configuration place of its first use.
pub fn file(kind: Kind, path: &Path, text: &str, order: (usize, u32)) -> Arc<PatRef> {
    let kept = carried(|r| r.kind == kind && r.path.as_deref() == Some(path));
    with_registry(|refs| {
        if let Some(r) = refs.iter().find(|r| r.kind == kind && r.path.as_deref() == Some(path)) {
            // Numbered where the configuration first uses it, whatever compiled first.
            let here = (order.0, order.1, CREATED.fetch_add(1, Ordering::Relaxed));
            let mut o = lock(&r.order);
            *o = (*o).min(here);
            return Arc::clone(r);
        }
        let pairs = match kind {
            Kind::Map => fulcrum_pattern::map_entries(text),
            Kind::Acl => acl_lines(text).map(|l| (l.to_string(), String::new())).collect(),
        };
        let entries = kept.unwrap_or_else(|| entries_of(pairs));
        let r = Arc::new(new_ref(kind, Some(path.to_path_buf()), String::new(), order, entries));
        refs.push(Arc::clone(&r));
        r
    })
}

/// The patterns of an ACL file: one per line, blank lines and `#` comments skipped.
pub fn acl_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// A new reference for an ACL's inline patterns.
pub fn inline(desc: String, patterns: &[String], order: (usize, u32)) -> Arc<PatRef> {
    let pairs = patterns.iter().map(|p| (p.clone(), String::new())).collect();
    let kept = carried(|r| r.path.is_none() && r.desc == desc);
    let entries = kept.unwrap_or_else(|| entries_of(pairs));
    let r = Arc::new(new_ref(Kind::Acl, None, desc, order, entries));
    with_registry(|refs| refs.push(Arc::clone(&r)));
    r
}

/// The configuration files in their order (set by the plan before it compiles rules).
static FILE_ORDER: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Sets the order of the configuration files (references are numbered in it).
pub fn set_file_order(files: Vec<String>) {
    *lock(&FILE_ORDER) = files;
}

/// The rank of a configuration file in [`set_file_order`]'s list.
pub fn rank(file: &str) -> usize {
    lock(&FILE_ORDER).iter().position(|f| f == file).unwrap_or(usize::MAX)
}

/// Numbers the references as HAProxy does (configuration order); called once a plan's
/// references are all registered.
pub fn number() {
    with_registry(|refs| {
        refs.sort_by_key(|r| *lock(&r.order));
        for (i, r) in refs.iter().enumerate() {
            r.id.store(i, Ordering::Relaxed);
        }
    });
}

/// Marks the inline reference described by `desc` as compiled into a `use_backend` index.
pub fn freeze(desc: &str) {
    with_registry(|refs| {
        for r in refs.iter().filter(|r| r.path.is_none() && r.desc == desc) {
            r.frozen.store(true, Ordering::Relaxed);
        }
    });
}

/// The current references of a kind, in id order.
pub fn list(kind: Kind) -> Vec<Arc<PatRef>> {
    lock(&REFS).iter().filter(|r| r.kind == kind).cloned().collect()
}

/// Finds a current reference by `#<id>` or file name.
pub fn find(kind: Kind, name: &str) -> Option<Arc<PatRef>> {
    let refs = lock(&REFS);
    let mut of_kind = refs.iter().filter(|r| r.kind == kind);
    match name.strip_prefix('#') {
        Some(id) => {
            let id = id.parse::<usize>().ok()?;
            of_kind.find(|r| r.id() == id)
        }
        None => of_kind.find(|r| r.path.as_deref() == Some(Path::new(name))),
    }
    .cloned()
}

impl PatRef {
    pub fn id(&self) -> usize {
        self.id.load(Ordering::Relaxed)
    }

    /// Notes a place that uses it (`file 'x.cfg' line N`) at configuration place `order`.
    pub fn note_use(&self, order: (usize, u32), at: String) {
        let seq = CREATED.fetch_add(1, Ordering::Relaxed);
        lock(&self.used_at).push(((order.0, order.1, seq), at));
    }

    /// `curr_ver` and `next_ver` of `show map|acl`.
    pub fn versions(&self) -> (u32, u32) {
        let v = lock(&self.versions);
        (v.curr, v.next)
    }

    /// `prepare map|acl`: a new, empty version; its number.
    pub fn prepare(&self) -> u32 {
        let mut v = lock(&self.versions);
        v.next = v.next.wrapping_add(1);
        let n = v.next;
        v.pending.insert(n, (Vec::new(), 0));
        n
    }

    /// Edits version `ver`'s entries: the current ones (through [`PatRef::change`]) or a
    /// prepared version's. `Err(None)`: no such version.
    pub fn change_version<R>(
        &self,
        ver: u32,
        edit: impl FnOnce(&mut Vec<Entry>, &mut u64) -> R,
    ) -> Result<R, Option<String>> {
        let mut v = lock(&self.versions);
        if ver == v.curr {
            drop(v);
            return self.change(edit).map_err(Some);
        }
        let Some((entries, next)) = v.pending.get_mut(&ver) else { return Err(None) };
        Ok(edit(entries, next))
    }

    /// Version `ver`'s entries (`show map|acl @<ver>`).
    pub fn version_entries(&self, ver: u32) -> Option<Vec<Entry>> {
        let v = lock(&self.versions);
        if ver == v.curr {
            drop(v);
            return Some(self.entries());
        }
        v.pending.get(&ver).map(|p| p.0.clone())
    }

    /// `commit map|acl @<ver>`: version `ver` replaces the entries (rebuilding every index),
    /// older prepared versions are dropped. `Err(None)`: out of range.
    pub fn commit(&self, ver: u32) -> Result<(), Option<String>> {
        let mut v = lock(&self.versions);
        let in_range = ver.wrapping_sub(v.curr.wrapping_add(1)) < v.next.wrapping_sub(v.curr);
        if !in_range {
            return Err(None);
        }
        let (entries, next) = v.pending.remove(&ver).unwrap_or_default();
        self.change(|e, n| {
            *e = entries;
            *n = (*n).max(next);
        })
        .map_err(Some)?;
        v.curr = ver;
        v.pending.retain(|&k, _| k.wrapping_sub(ver) as i32 > 0);
        Ok(())
    }

    /// Its place in the configuration (file rank, line, creation order).
    pub fn order(&self) -> (usize, u32, usize) {
        *lock(&self.order)
    }

    /// The places that use it, in configuration order.
    pub fn used_at(&self) -> Vec<String> {
        let mut used = lock(&self.used_at).clone();
        used.sort();
        used.into_iter().map(|(_, at)| at).collect()
    }

    /// The entries, in order.
    pub fn entries(&self) -> Vec<Entry> {
        lock(&self.entries).0.clone()
    }

    /// How many indexes use it (`entry_cnt` counts its entries once per index).
    pub fn users(&self) -> usize {
        let maps = lock(&self.maps).iter().filter(|u| u.strong_count() > 0).count();
        maps + lock(&self.sets).iter().filter(|u| u.strong_count() > 0).count()
    }

    /// Changes the entries with `edit` and republishes every index built from them; the
    /// edit's result.
    pub fn change<R>(
        &self,
        edit: impl FnOnce(&mut Vec<Entry>, &mut u64) -> R,
    ) -> Result<R, String> {
        if self.frozen.load(Ordering::Relaxed) {
            return Err("these patterns are compiled into a use_backend index in Fulcrum and cannot change at run time".into());
        }
        let mut guard = lock(&self.entries);
        let (entries, next) = &mut *guard;
        let mut trial = entries.clone();
        let mut trial_next = *next;
        let out = edit(&mut trial, &mut trial_next);
        let maps: Vec<Arc<LiveMap>> = lock(&self.maps).iter().filter_map(Weak::upgrade).collect();
        let sets: Vec<Arc<LiveSet>> = lock(&self.sets).iter().filter_map(Weak::upgrade).collect();
        // Every index is built before any is published.
        let text: String = trial.iter().map(|e| format!("{}\t{}\n", e.key, e.value)).collect();
        let mut built_maps = Vec::with_capacity(maps.len());
        for m in &maps {
            built_maps.push(m.build(&text)?);
        }
        let mut built_sets = Vec::with_capacity(sets.len());
        for s in &sets {
            built_sets.push(s.build(self, &trial)?);
        }
        maps.iter().zip(built_maps).for_each(|(m, b)| m.publish(b));
        sets.iter().zip(built_sets).for_each(|(s, b)| s.publish(b));
        *entries = trial;
        *next = trial_next;
        Ok(out)
    }
}
