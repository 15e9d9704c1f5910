//! The runtime API's map commands: `show map`, `add map`, `set map`, `del map`, `clear map`,
//! with HAProxy 2.6's outputs and messages. Changes go through `rules::maps`, which rebuilds
//! the indexes the request path reads.

use std::fmt::Write as _;

use crate::rules::maps::{self, Entry};

const UNKNOWN: &str = "Unknown map identifier. Please use #<id> or <file>.\n";

/// The reference `show map` prints for an entry (and `#<ref>` names).
fn reference(e: &Entry) -> String {
    format!("0x{:012x}", 0x5500_0000_0000u64 + e.id * 0x50)
}

fn matches(e: &Entry, key: &str) -> bool {
    match key.strip_prefix('#') {
        Some(r) => reference(e) == r,
        None => e.key == key,
    }
}

pub fn run(verb: &str, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    if verb == "show" && a(2).is_empty() {
        out.push_str("# id (file) description\n");
        for f in maps::files() {
            let used = f.used_at.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let users: Vec<String> = used.iter().map(|u| format!("by map at {u}")).collect();
            let _ = writeln!(
                out,
                "{} ({}) pattern loaded from file '{}' used {}. curr_ver=0 next_ver=0 entry_cnt={}",
                f.id,
                f.path.display(),
                f.path.display(),
                users.join(", "),
                f.entries().len() * f.users().max(1)
            );
        }
        return;
    }
    if verb == "add" && (a(2).is_empty() || a(3).is_empty() || a(4).is_empty()) {
        out.push_str("'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n");
        return;
    }
    let Some(file) = maps::find(a(2)) else {
        out.push_str(UNKNOWN);
        return;
    };
    let result = match verb {
        "show" => {
            for e in file.entries() {
                let _ = writeln!(out, "{} {} {}", reference(&e), e.key, e.value);
            }
            return;
        }
        "add" => {
            let (key, value) = (a(3).to_string(), args[4..].join(" "));
            file.change(|entries, next| {
                entries.push(Entry { id: *next, key, value });
                *next += 1;
                true
            })
        }
        "set" => {
            if a(3).is_empty() || a(4).is_empty() {
                out.push_str(
                    "'set map' expects three parameters: map identifier, key and value.\n",
                );
                return;
            }
            let value = args[4..].join(" ");
            let key = a(3);
            file.change(|entries, _| {
                let mut found = false;
                for e in entries.iter_mut().filter(|e| matches(e, key)) {
                    e.value = value.clone();
                    found = true;
                }
                found
            })
            .map(|found| {
                if !found {
                    out.push_str("entry not found.\n");
                }
                true
            })
        }
        "del" => {
            if a(3).is_empty() {
                out.push_str("This command expects two parameters: map identifier and key.\n");
                return;
            }
            let key = a(3);
            file.change(|entries, _| {
                let before = entries.len();
                entries.retain(|e| !matches(e, key));
                before != entries.len()
            })
            .map(|found| {
                if !found {
                    out.push_str("Key not found.\n");
                }
                true
            })
        }
        _ => file.change(|entries, _| {
            entries.clear();
            true
        }),
    };
    if let Err(e) = result {
        let _ = writeln!(out, "Failed to update an entry: {e}");
    }
}
