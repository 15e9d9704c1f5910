//! Where each compiled rule was written (file and line), for `last_rule_file` and
//! `last_rule_line`: rules carry a small number, this process-wide table turns it back into
//! the place. A place is registered once, whatever the number of reloads. Read only when a
//! log line or a rule asks for the last rule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Default)]
struct Table {
    places: Vec<(Arc<str>, u32)>,
    index: HashMap<(Arc<str>, u32), u32>,
}

fn table() -> &'static Mutex<Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// The number of `file:line` (from 1; 0 means no rule).
pub fn register(file: &Arc<str>, line: u32) -> u32 {
    let Ok(mut t) = table().lock() else { return 0 };
    if let Some(&n) = t.index.get(&(Arc::clone(file), line)) {
        return n;
    }
    t.places.push((Arc::clone(file), line));
    let n = t.places.len() as u32;
    t.index.insert((Arc::clone(file), line), n);
    n
}

/// The place a rule number stands for.
pub fn place(n: u32) -> Option<(Arc<str>, u32)> {
    let t = table().lock().ok()?;
    t.places.get(n.checked_sub(1)? as usize).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_numbered_once_and_found_again() {
        let f: Arc<str> = Arc::from("/etc/x.cfg");
        let a = register(&f, 12);
        let b = register(&f, 13);
        assert_ne!(a, b);
        assert_eq!(register(&f, 12), a);
        assert_eq!(place(a), Some((Arc::clone(&f), 12)));
        assert_eq!(place(0), None);
    }
}
