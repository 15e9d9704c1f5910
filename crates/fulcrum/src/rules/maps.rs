//! Maps that change at run time (the runtime API's `add|set|del|clear map`): every map file
//! is one pattern reference (`rules::refs`), shared by the converters that use it with any
//! match method (each a [`LiveMap`], indexed for its method). A change rebuilds each index and
//! publishes it with a generation number.
//!
//! The request path pays nothing for this while a map never changed (one relaxed load, see
//! `rules::live`). Must not touch: sockets, rule evaluation.

use std::path::Path;
use std::sync::Arc;

use fulcrum_pattern::{Map, Method};

use super::live::Live;
use super::refs::{self, lock, Kind, PatRef};

/// A map file indexed for one match method.
#[derive(Debug)]
pub struct LiveMap {
    method: Method,
    /// Where in the configuration it is used (`get map` lists indexes in that order).
    pub order: (usize, u32),
    pub file: Arc<PatRef>,
    index: Live<Map>,
}

impl LiveMap {
    /// Loads `path`'s text as a map for `method`, sharing the file's entries with its other
    /// users; `used_at` says where (for `show map`).
    pub fn load(
        path: &Path,
        method: Method,
        text: &str,
        used_at: String,
        order: (usize, u32),
    ) -> Result<Arc<LiveMap>, (usize, fulcrum_pattern::PatternError)> {
        Map::parse(method, text)?; // the file's own errors, with their line numbers
        let file = refs::file(Kind::Map, path, text, order);
        // The reference's entries: the file's, or those a run-time change left (a rebuild
        // for a server edit carries them).
        let current: String =
            file.entries().iter().map(|e| format!("{}\t{}\n", e.key, e.value)).collect();
        let initial = Map::parse(method, &current)?;
        file.note_use(order, used_at);
        let index = Live::new(initial);
        let live = Arc::new(LiveMap { method, order, file: Arc::clone(&file), index });
        lock(&file.maps).push(Arc::downgrade(&live));
        Ok(live)
    }

    /// Builds this map's index from a changed reference's text.
    pub(super) fn build(&self, text: &str) -> Result<Arc<Map>, String> {
        Map::parse(self.method, text).map(Arc::new).map_err(|(_, e)| e.to_string())
    }

    /// Makes a built index the one requests use.
    pub(super) fn publish(&self, m: Arc<Map>) {
        self.index.publish(m);
    }

    /// Runs `f` on the map as it is now.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&Map) -> R) -> R {
        self.index.with(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reaches_every_index_of_the_file_and_a_bad_one_changes_nothing() {
        let path = Path::new("/test/maps-live-1.map");
        let text = "a.example x\nb.example y\n";
        let exact = LiveMap::load(path, Method::Str, text, "t line 1".into(), (0, 1)).expect("str");
        let beg = LiveMap::load(path, Method::Beg, text, "t line 2".into(), (0, 2)).expect("beg");
        assert!(Arc::ptr_eq(&exact.file, &beg.file), "one file, two indexes");
        assert_eq!(exact.with(|m| m.lookup(b"a.example").map(str::to_string)), Some("x".into()));
        exact
            .file
            .change(|e, next| {
                e.push(refs::Entry { id: *next, key: "c.example".into(), value: "z".into() });
                *next += 1;
            })
            .expect("change");
        assert_eq!(exact.with(|m| m.lookup(b"c.example").map(str::to_string)), Some("z".into()));
        assert_eq!(beg.with(|m| m.lookup(b"c.example.org").map(str::to_string)), Some("z".into()));
        let found = refs::find(Kind::Map, path.to_str().expect("utf8"));
        assert!(found.is_some_and(|f| Arc::ptr_eq(&f, &exact.file)));
        // An IP map refuses a key that is not an address, and keeps its entries.
        let ip_path = Path::new("/test/maps-live-ip.map");
        let ip =
            LiveMap::load(ip_path, Method::Ip, "10.0.0.0/8 lan\n", "t".into(), (0, 3)).expect("ip");
        let r = ip.file.change(|e, next| {
            e.push(refs::Entry { id: *next, key: "not-an-ip".into(), value: "x".into() });
        });
        assert!(r.is_err());
        assert_eq!(ip.file.entries().len(), 1);
    }
}
