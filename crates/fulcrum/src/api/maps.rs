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

/// How HAProxy names a match method's index (`idx=`).
fn index_kind(m: fulcrum_pattern::Method) -> &'static str {
    use fulcrum_pattern::Method::*;
    match m {
        Str | Beg | Ip => "tree",
        _ => "list",
    }
}

/// `get map|acl <ref> <value>`: for each index built from the reference, what the value finds.
fn get(kind: Kind, r: &refs::PatRef, value: &str, out: &mut String) {
    let entries = r.entries();
    if kind == Kind::Map {
        let maps = r.maps.lock().unwrap_or_else(|e| e.into_inner());
        let mut maps: Vec<_> = maps.iter().filter_map(|w| w.upgrade()).collect();
        maps.sort_by_key(|m| m.order);
        for m in maps {
            let (method, found) = m.with(|map| (map.method(), map.find_text(value)));
            let _ = write!(out, "type={}, case=sensitive, found=", method.name());
            match found.and_then(|i| entries.get(i)) {
                Some(e) => {
                    let idx = index_kind(method);
                    let _ = writeln!(
                        out,
                        "yes, idx={idx}, key=\"{}\", value=\"{}\", type=\"str\"",
                        e.key, e.value
                    );
                }
                None => out.push_str("no\n"),
            }
        }
        return;
    }
    let sets = r.sets.lock().unwrap_or_else(|e| e.into_inner());
    let mut sets: Vec<_> = sets.iter().filter_map(|w| w.upgrade()).collect();
    // In configuration order: each set's own (inline) reference is made where its ACL is.
    sets.sort_by_key(|s| s.refs.first().map(|r| r.order()));
    for s in sets {
        // The set's patterns, in the order it was built: each reference's entries in turn.
        let all: Vec<String> =
            s.refs.iter().flat_map(|r| r.entries().into_iter().map(|e| e.key)).collect();
        let (method, icase, found) =
            s.with(|set| (set.method(), set.ignore_case(), set.first_match_text(value)));
        let case = if icase { "insensitive" } else { "sensitive" };
        let _ = write!(out, "type={}, case={case}, match=", method.name());
        match found.and_then(|i| all.get(i)) {
            Some(p) => {
                let _ = writeln!(out, "yes, idx={}, pattern=\"{p}\"", index_kind(method));
            }
            None => out.push_str("no\n"),
        }
    }
}

/// `verb` is `show`, `add`, `set`, `del`, `clear`, `get`, `prepare` or `commit`; `args` the
/// whole command; `payload` the lines after a command ending with `<<`.
pub fn run(kind: Kind, verb: &str, args: &[String], payload: Option<&str>, out: &mut String) {
    let what = if kind == Kind::Map { "map" } else { "acl" };
    let who = if kind == Kind::Map { "map" } else { "ACL" };
    // `@<ver>` before the reference names a version (`add`, `show`, `clear`, `commit`).
    let ver_word = args.get(2).and_then(|w| w.strip_prefix('@'));
    let ver = ver_word.map(|v| v.parse::<u32>().unwrap_or(0));
    let args: Vec<String> = if ver.is_some() {
        args.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, w)| w.clone()).collect()
    } else {
        args.to_vec()
    };
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    if verb == "get" && (a(2).is_empty() || a(3).is_empty()) {
        let _ = writeln!(out, "Missing {who} identifier and/or key.");
        return;
    }
    if verb == "commit" && ver.is_none() {
        out.push_str("Missing version number.\n");
        return;
    }
    if matches!(verb, "commit" | "prepare") && a(2).is_empty() {
        let _ = writeln!(out, "Missing {who} identifier.");
        return;
    }
    if verb == "show" && a(2).is_empty() {
        return show_refs(kind, out);
    }
    let needs = match (kind, verb) {
        (Kind::Map, "add")
            if (payload.is_none() && (a(2).is_empty() || a(3).is_empty() || a(4).is_empty()))
                || a(2).is_empty() =>
        {
            Some("'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n")
        }
        (Kind::Acl, "add") if a(2).is_empty() || a(3).is_empty() => {
            Some("'add acl' expects two parameters: ACL identifier and pattern.\n")
        }
        _ => None,
    };
    if let Some(msg) = needs {
        out.push_str(msg);
        return;
    }
    let Some(r) = refs::find(kind, a(2)) else {
        let _ = writeln!(out, "Unknown {who} identifier. Please use #<id> or <file>.");
        return;
    };
    let (curr, next) = r.versions();
    if verb == "add" && ver.is_some_and(|v| v.wrapping_sub(next) as i32 > 0) {
        let _ = writeln!(out, "Version number in the future, please use 'prepare {what}' before.");
        return;
    }
    let ver = ver.unwrap_or(curr);
    let result = match verb {
        "get" => return get(kind, &r, a(3), out),
        "prepare" => {
            let _ = writeln!(out, "New version created: {}", r.prepare());
            return;
        }
        "commit" => return commit(&r, ver, out),
        "show" => return show(kind, &r, ver, out),
        "add" => add(kind, &r, ver, &args, payload, out),
        "set" => set(&r, &args, out),
        "del" => del(&r, who, &args, out),
        _ => r.change_version(ver, |entries, _| {
            entries.clear();
            true
        }),
    };
    match result {
        Ok(_) | Err(None) => {}
        Err(Some(e)) => match kind {
            Kind::Map => {
                let _ = writeln!(out, "Failed to update an entry: {e}");
            }
            // HAProxy says why a pattern is refused, in its words.
            Kind::Acl => {
                let _ = writeln!(out, "{}{}", e, if e.ends_with('.') { "" } else { "." });
            }
        },
    }
}

/// `show map|acl` without a reference: every reference of the kind, with its users.
fn show_refs(kind: Kind, out: &mut String) {
    let what = if kind == Kind::Map { "map" } else { "acl" };
    out.push_str("# id (file) description\n");
    for r in refs::list(kind) {
        let used = r.used_at();
        let entries = r.entries().len() * r.users().max(1);
        let (curr, next) = r.versions();
        let _ = match &r.path {
            Some(p) => {
                let users: Vec<String> = used.iter().map(|u| format!("by {what} at {u}")).collect();
                writeln!(
                    out,
                    "{} ({}) pattern loaded from file '{}' used {}. curr_ver={curr} next_ver={next} entry_cnt={entries}",
                    r.id(),
                    p.display(),
                    p.display(),
                    users.join(", "),
                )
            }
            None => writeln!(
                out,
                "{} () {}. curr_ver={curr} next_ver={next} entry_cnt={}",
                r.id(),
                r.desc,
                r.entries().len()
            ),
        };
    }
}

/// `commit map|acl @<ver> <ref>`.
fn commit(r: &refs::PatRef, ver: u32, out: &mut String) {
    match r.commit(ver) {
        Ok(()) => {}
        Err(None) => out.push_str("Version number out of range.\n"),
        Err(Some(e)) => {
            let _ = writeln!(out, "{e}.");
        }
    }
}

/// `show map|acl [@<ver>] <ref>`: the version's entries.
fn show(kind: Kind, r: &refs::PatRef, ver: u32, out: &mut String) {
    for e in r.version_entries(ver).unwrap_or_default() {
        let _ = match kind {
            Kind::Map => writeln!(out, "{} {} {}", reference(&e), e.key, e.value),
            Kind::Acl => writeln!(out, "{} {}", reference(&e), e.key),
        };
    }
}

/// `add map|acl [@<ver>] <ref> ...`: the line's entry or the payload's (`Ok(false)`: refused).
fn add(
    kind: Kind,
    r: &refs::PatRef,
    ver: u32,
    args: &[String],
    payload: Option<&str>,
    out: &mut String,
) -> Result<bool, Option<String>> {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    // One entry from the line, or one per payload line (`key value`).
    let mut pairs: Vec<(String, String)> = Vec::new();
    match payload {
        Some(p) if kind == Kind::Map => {
            for line in p.lines().filter(|l| !l.is_empty()) {
                let (k, v) = line.split_once([' ', '\t']).unwrap_or((line, ""));
                if v.trim().is_empty() {
                    let _ = writeln!(out, "Missing value for key '{k}'.");
                    return Ok(false);
                }
                pairs.push((k.to_string(), v.trim_start().to_string()));
            }
        }
        _ => match kind {
            Kind::Map => pairs.push((a(3).to_string(), args[4..].join(" "))),
            Kind::Acl => pairs.push((a(3).to_string(), String::new())),
        },
    }
    r.change_version(ver, |entries, next| {
        for (key, value) in pairs {
            entries.push(Entry { id: *next, key, value });
            *next += 1;
        }
        true
    })
}

/// `set map <ref> [<key>|#<ref>] <value>` (`Ok(false)`: refused, its message written).
fn set(r: &refs::PatRef, args: &[String], out: &mut String) -> Result<bool, Option<String>> {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    if a(3).is_empty() || a(4).is_empty() {
        out.push_str("'set map' expects three parameters: map identifier, key and value.\n");
        return Ok(false);
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
    .map_err(Some)
    .map(|found| {
        if !found {
            out.push_str("entry not found.\n");
        }
        true
    })
}

/// `del map|acl <ref> [<key>|#<ref>]` (`Ok(false)`: refused, its message written).
fn del(
    r: &refs::PatRef,
    who: &str,
    args: &[String],
    out: &mut String,
) -> Result<bool, Option<String>> {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    if a(3).is_empty() {
        let _ = writeln!(out, "This command expects two parameters: {who} identifier and key.");
        return Ok(false);
    }
    let key = a(3);
    r.change(|entries, _| {
        let before = entries.len();
        entries.retain(|e| !matches(e, key));
        before != entries.len()
    })
    .map_err(Some)
    .map(|found| {
        if !found {
            out.push_str("Key not found.\n");
        }
        true
    })
}
