//! Maps that change at run time (the runtime API's `add|set|del|clear map`): every map file
//! is one [`MapFile`] with its entries, shared by the converters that use it with any match
//! method (each a [`LiveMap`], indexed for its method). A change rebuilds each index and
//! publishes it with a generation number.
//!
//! The request path pays nothing for this while a map never changed (one relaxed load); once
//! it did, each worker keeps the current index in a thread-local cache and takes the shared
//! lock only when the generation moved. Must not touch: sockets, rule evaluation.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use fulcrum_pattern::{Map, Method};

/// One entry, with the reference number `show map` prints and `del map #<ref>` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub key: String,
    pub value: String,
}

/// A map file: its entries and the indexes built from them.
#[derive(Debug)]
pub struct MapFile {
    /// HAProxy's `show map` number (0, 1, ... in load order).
    pub id: usize,
    pub path: PathBuf,
    /// Where it is used (`file line N`), for `show map`.
    pub used_at: Mutex<Vec<String>>,
    entries: Mutex<(Vec<Entry>, u64)>,
    users: Mutex<Vec<Weak<LiveMap>>>,
}

/// A map file indexed for one match method.
#[derive(Debug)]
pub struct LiveMap {
    slot: usize,
    method: Method,
    pub file: Arc<MapFile>,
    /// The index the configuration loaded (in use until the first change).
    initial: Map,
    /// 0 until the map changes; then bumped at each change.
    generation: AtomicU64,
    current: RwLock<Arc<Map>>,
}

/// The map files of the current plan (what the runtime API finds).
static FILES: Mutex<Vec<Arc<MapFile>>> = Mutex::new(Vec::new());
/// The map files of a plan being built for a reload (files are read again), made current
/// when the reload commits.
static BUILDING: Mutex<Option<Vec<Arc<MapFile>>>> = Mutex::new(None);
static SLOTS: AtomicU64 = AtomicU64::new(0);

/// A worker's copy of a changed map's index, with the generation it belongs to.
type Cached = Option<(u64, Arc<Map>)>;

thread_local! {
    /// Per worker: the index of each changed map.
    static CACHE: RefCell<Vec<Cached>> = const { RefCell::new(Vec::new()) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts registering the map files of a new plan apart from the current ones.
pub fn begin_reload() {
    *lock(&BUILDING) = Some(Vec::new());
}

/// Makes the map files registered since [`begin_reload`] the current ones (`commit`), or
/// forgets them (the reload failed).
pub fn end_reload(commit: bool) {
    if let Some(files) = lock(&BUILDING).take() {
        if commit {
            *lock(&FILES) = files;
        }
    }
}

/// The map file at `path` (registered on first use).
fn file(path: &Path, text: &str) -> Arc<MapFile> {
    let mut building = lock(&BUILDING);
    let mut current = lock(&FILES);
    let files = match building.as_mut() {
        Some(b) => b,
        None => &mut *current,
    };
    if let Some(f) = files.iter().find(|f| f.path == path) {
        return Arc::clone(f);
    }
    let entries: Vec<Entry> = fulcrum_pattern::map_entries(text)
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| Entry { id: i as u64, key, value })
        .collect();
    let next = entries.len() as u64;
    let f = Arc::new(MapFile {
        id: files.len(),
        path: path.to_path_buf(),
        used_at: Mutex::new(Vec::new()),
        entries: Mutex::new((entries, next)),
        users: Mutex::new(Vec::new()),
    });
    files.push(Arc::clone(&f));
    f
}

/// Notes another place that uses a map file (`show map`).
pub fn note_use(file: &MapFile, at: &str) {
    lock(&file.used_at).push(at.to_string());
}

/// Every map file, in load order (`show map`).
pub fn files() -> Vec<Arc<MapFile>> {
    lock(&FILES).clone()
}

/// Finds a map file by `#<id>` or path.
pub fn find(name: &str) -> Option<Arc<MapFile>> {
    let files = lock(&FILES);
    match name.strip_prefix('#') {
        Some(id) => id.parse::<usize>().ok().and_then(|id| files.iter().find(|f| f.id == id)),
        None => files.iter().find(|f| f.path == Path::new(name)),
    }
    .cloned()
}

impl LiveMap {
    /// Loads `path`'s text as a map for `method`, sharing the file's entries with its other
    /// users; `used_at` says where (for `show map`).
    pub fn load(
        path: &Path,
        method: Method,
        text: &str,
        used_at: String,
    ) -> Result<Arc<LiveMap>, (usize, fulcrum_pattern::PatternError)> {
        let initial = Map::parse(method, text)?;
        let file = file(path, text);
        lock(&file.used_at).push(used_at);
        let slot = SLOTS.fetch_add(1, Ordering::Relaxed) as usize;
        let live = Arc::new(LiveMap {
            slot,
            method,
            file: Arc::clone(&file),
            initial,
            generation: AtomicU64::new(0),
            current: RwLock::new(Arc::new(Map::parse(method, "")?)),
        });
        lock(&file.users).push(Arc::downgrade(&live));
        Ok(live)
    }

    /// Runs `f` on the map as it is now.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&Map) -> R) -> R {
        let generation = self.generation.load(Ordering::Acquire);
        if generation == 0 {
            return f(&self.initial);
        }
        let map = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() <= self.slot {
                c.resize(self.slot + 1, None);
            }
            match &c[self.slot] {
                Some((g, m)) if *g == generation => Arc::clone(m),
                _ => {
                    let m = Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()));
                    c[self.slot] = Some((generation, Arc::clone(&m)));
                    m
                }
            }
        });
        f(&map)
    }
}

impl MapFile {
    /// The entries, in order.
    pub fn entries(&self) -> Vec<Entry> {
        lock(&self.entries).0.clone()
    }

    /// How many indexes use it.
    pub fn users(&self) -> usize {
        lock(&self.users).iter().filter(|u| u.strong_count() > 0).count()
    }

    /// Changes the entries with `edit` and republishes every index; the edit's result.
    pub fn change<R>(
        &self,
        edit: impl FnOnce(&mut Vec<Entry>, &mut u64) -> R,
    ) -> Result<R, String> {
        let mut guard = lock(&self.entries);
        let (entries, next) = &mut *guard;
        let mut trial = entries.clone();
        let mut trial_next = *next;
        let out = edit(&mut trial, &mut trial_next);
        let text: String = trial.iter().map(|e| format!("{}\t{}\n", e.key, e.value)).collect();
        let users: Vec<Arc<LiveMap>> = lock(&self.users).iter().filter_map(Weak::upgrade).collect();
        // Every index is built before any is published: a bad pattern changes nothing.
        let mut built = Vec::with_capacity(users.len());
        for u in &users {
            let m = Map::parse(u.method, &text).map_err(|(_, e)| e.to_string())?;
            built.push(Arc::new(m));
        }
        for (u, m) in users.iter().zip(built) {
            *u.current.write().unwrap_or_else(|e| e.into_inner()) = m;
            u.generation.fetch_add(1, Ordering::Release);
        }
        *entries = trial;
        *next = trial_next;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reaches_every_index_of_the_file_and_a_bad_one_changes_nothing() {
        let path = Path::new("/test/maps-live-1.map");
        let text = "a.example x\nb.example y\n";
        let exact = LiveMap::load(path, Method::Str, text, "t line 1".into()).expect("str");
        let beg = LiveMap::load(path, Method::Beg, text, "t line 2".into()).expect("beg");
        assert!(Arc::ptr_eq(&exact.file, &beg.file), "one file, two indexes");
        assert_eq!(exact.with(|m| m.lookup(b"a.example").map(str::to_string)), Some("x".into()));
        exact
            .file
            .change(|e, next| {
                e.push(Entry { id: *next, key: "c.example".into(), value: "z".into() });
                *next += 1;
            })
            .expect("change");
        assert_eq!(exact.with(|m| m.lookup(b"c.example").map(str::to_string)), Some("z".into()));
        assert_eq!(beg.with(|m| m.lookup(b"c.example.org").map(str::to_string)), Some("z".into()));
        assert!(find(path.to_str().expect("utf8")).is_some_and(|f| Arc::ptr_eq(&f, &exact.file)));
        // An IP map refuses a key that is not an address, and keeps its entries.
        let ip_path = Path::new("/test/maps-live-ip.map");
        let ip = LiveMap::load(ip_path, Method::Ip, "10.0.0.0/8 lan\n", "t".into()).expect("ip");
        let r = ip.file.change(|e, next| {
            e.push(Entry { id: *next, key: "not-an-ip".into(), value: "x".into() });
        });
        assert!(r.is_err());
        assert_eq!(ip.file.entries().len(), 1);
    }
}
