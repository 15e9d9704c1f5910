//! Server names stored in stick tables (`server_key`), interned as HAProxy's dictionary
//! does: an entry holds a number, the name is kept once for the process.
//!
//! Must not touch: tables.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Dict {
    ids: HashMap<Arc<str>, u64>,
    names: Vec<Arc<str>>,
}

static DICT: Mutex<Option<Dict>> = Mutex::new(None);

/// The number of a name (from 1; 0 means none).
pub fn intern(name: &str) -> u64 {
    let mut g = DICT.lock().unwrap_or_else(|e| e.into_inner());
    let d = g.get_or_insert_with(Dict::default);
    if let Some(&id) = d.ids.get(name) {
        return id;
    }
    let name: Arc<str> = name.into();
    d.names.push(name.clone());
    let id = d.names.len() as u64;
    d.ids.insert(name, id);
    id
}

/// The name of a number given by [`intern`].
pub fn name(id: u64) -> Option<Arc<str>> {
    let g = DICT.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref()?.names.get(usize::try_from(id).ok()?.checked_sub(1)?).cloned()
}
