//! The runtime API's map and ACL commands: `show map|acl`, `add map|acl`, `set map`,
//! `del map|acl`, `clear map|acl`, with HAProxy 2.6's outputs and messages. Changes go
//! through `rules::refs`, which rebuilds the indexes the request path reads.

use std::fmt::Write as _;

use crate::rules::refs::{self, Entry, Kind};

/// The reference `show map|acl` prints for an entry (and `#<ref>` names).
fn reference(e: &Entry) -> String {
    format!("0x{:012x}", 0x5500_0000_0000u64 + e.id * 0x50)
}

fn matches(e: &Entry, key: &str) -> bool {
    match key.strip_prefix('#') {
        Some(r) => reference(e) == r,
        None => e.key == key,
    }
}

/// `verb` is `show`, `add`, `set`, `del` or `clear`; `args` the whole command.
pub fn run(kind: Kind, verb: &str, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    let what = if kind == Kind::Map { "map" } else { "acl" };
    if verb == "show" && a(2).is_empty() {
        out.push_str("# id (file) description\n");
        for r in refs::list(kind) {
            let used = r.used_at();
            let entries = r.entries().len() * r.users().max(1);
            let _ = match &r.path {
                Some(p) => {
                    let users: Vec<String> =
                        used.iter().map(|u| format!("by {what} at {u}")).collect();
                    writeln!(
                        out,
                        "{} ({}) pattern loaded from file '{}' used {}. curr_ver=0 next_ver=0 entry_cnt={entries}",
                        r.id(),
                        p.display(),
                        p.display(),
                        users.join(", "),
                    )
                }
                None => writeln!(
                    out,
                    "{} () {}. curr_ver=0 next_ver=0 entry_cnt={}",
                    r.id(),
                    r.desc,
                    r.entries().len()
                ),
            };
        }
        return;
    }
    let needs = match (kind, verb) {
        (Kind::Map, "add") => (a(2).is_empty() || a(3).is_empty() || a(4).is_empty()).then_some(
            "'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n",
        ),
        (Kind::Acl, "add") => (a(2).is_empty() || a(3).is_empty())
            .then_some("'add acl' expects two parameters: ACL identifier and pattern.\n"),
        _ => None,
    };
    if let Some(msg) = needs {
        out.push_str(msg);
        return;
    }
    let Some(r) = refs::find(kind, a(2)) else {
        let _ = writeln!(
            out,
            "Unknown {} identifier. Please use #<id> or <file>.",
            if kind == Kind::Map { "map" } else { "ACL" }
        );
        return;
    };
    let result = match verb {
        "show" => {
            for e in r.entries() {
                let _ = match kind {
                    Kind::Map => writeln!(out, "{} {} {}", reference(&e), e.key, e.value),
                    Kind::Acl => writeln!(out, "{} {}", reference(&e), e.key),
                };
            }
            return;
        }
        "add" => {
            let (key, value) = match kind {
                Kind::Map => (a(3).to_string(), args[4..].join(" ")),
                Kind::Acl => (a(3).to_string(), String::new()),
            };
            r.change(|entries, next| {
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
            r.change(|entries, _| {
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
                let _ = writeln!(
                    out,
                    "This command expects two parameters: {} identifier and key.",
                    if kind == Kind::Map { "map" } else { "ACL" }
                );
                return;
            }
            let key = a(3);
            r.change(|entries, _| {
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
        _ => r.change(|entries, _| {
            entries.clear();
            true
        }),
    };
    if let Err(e) = result {
        match kind {
            Kind::Map => {
                let _ = writeln!(out, "Failed to update an entry: {e}");
            }
            // HAProxy says why a pattern is refused, in its words.
            Kind::Acl => {
                let _ = writeln!(out, "{}{}", e, if e.ends_with('.') { "" } else { "." });
            }
        }
    }
}
