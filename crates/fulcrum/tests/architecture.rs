//! Architecture rules of `crates/fulcrum/src`, checked on the source text (std only):
//!
//! - the top-level modules keep to the layers of ARCHITECTURE.md's `## Layers (enforced)`
//!   section: a module uses modules of its own layer or of lower ones (peers of a layer never in
//!   a circle), `deny:` and `allow:` lines making exceptions;
//! - no file is over [`MAX_LINES`] lines of code (blank lines, comment-only lines and
//!   `#[cfg(test)]` items not counted);
//! - no function is over [`MAX_FN_LINES`] lines of code, counted the same way from its `fn` line
//!   through its closing brace: closures and inner fns count toward it (an inner fn is checked on
//!   its own too), methods of `impl` and `trait` blocks are named `Type::name`, and a second
//!   function of a file by one name is `name#2`.
//!
//! A reference is a `use` (grouped and multi-line ones too, each imported name a site), a
//! `crate::x::...` path written in code, or a `super::...` path that climbs out of a top-level
//! module (from `http/session/txn.rs`, `super::super::super::rules` is top-level `rules`).
//! Comments, string literals and `#[cfg(test)]` items (and files declared by `#[cfg(test)] mod x;`)
//! are skipped; `main.rs` is the root and may use anything.
//!
//! What broke the rules when this test was written is listed, counted, in
//! `tests/architecture_debt.txt`: the test fails on anything new or grown, and also when a
//! listed count shrank or went (lower or delete the line), so the file stays exact and only
//! shrinks.
//!
//! ```text
//! cargo test -p fulcrum --test architecture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines of code a source file may have.
const MAX_LINES: usize = 800;
/// The most lines of code a function may have, from its `fn` line through its closing brace.
const MAX_FN_LINES: usize = 150;

const LAYERS_HEADING: &str = "## Layers (enforced)";
const DEBT_FILE: &str = "tests/architecture_debt.txt";
const DEBT_LAYERS: &str = "[layers]";
const DEBT_SIZES: &str = "[file sizes]";
const DEBT_FNS: &str = "[function sizes]";

// ---------------------------------------------------------------------------------------------
// Reading Rust source

/// `src` with comments (and, with `strings`, the insides of string and character literals)
/// replaced by spaces; newlines stay, so line numbers do.
fn blank(src: &str, strings: bool) -> String {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let at = |k: usize| c.get(k).copied();
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(src.len());
    let put = |out: &mut String, s: &[char], hide: bool| {
        for &ch in s {
            out.push(if hide && ch != '\n' { ' ' } else { ch });
        }
    };
    let mut i = 0;
    while i < n {
        if c[i] == '/' && at(i + 1) == Some('/') {
            let mut j = i;
            while j < n && c[j] != '\n' {
                j += 1;
            }
            put(&mut out, &c[i..j], true);
            i = j;
        } else if c[i] == '/' && at(i + 1) == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < n && depth > 0 {
                if c[j] == '/' && at(j + 1) == Some('*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && at(j + 1) == Some('/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            put(&mut out, &c[i..j], true);
            i = j;
        } else if let Some(open) = raw_string_open(&c, i, ident_char) {
            // r"...", r#"..."#, br"...": ends at a quote followed by as many hashes.
            let hashes = open - i - if c[i] == 'b' { 3 } else { 2 };
            let closes = |j: usize| c[j] == '"' && (1..=hashes).all(|h| at(j + h) == Some('#'));
            let mut j = open;
            while j < n && !closes(j) {
                j += 1;
            }
            put(&mut out, &c[i..open], false);
            put(&mut out, &c[open..j], strings);
            let end = (j + 1 + hashes).min(n);
            put(&mut out, &c[j.min(n)..end], false);
            i = end;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < n && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let j = j.min(n);
            out.push('"');
            put(&mut out, &c[i + 1..j], strings);
            if j < n {
                out.push('"');
            }
            i = j + 1;
        } else if c[i] == '\'' && at(i + 1) == Some('\\') {
            // An escaped character: '\n', '\'', '\u{1F600}'.
            let mut j = (i + 3).min(n);
            while j < n && c[j] != '\'' {
                j += 1;
            }
            out.push('\'');
            put(&mut out, &c[i + 1..j], strings);
            if j < n {
                out.push('\'');
            }
            i = j + 1;
        } else if c[i] == '\'' && at(i + 2) == Some('\'') {
            out.push('\'');
            put(&mut out, &c[i + 1..i + 2], strings);
            out.push('\'');
            i += 3;
        } else {
            // Anything else, a lifetime's quote included.
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Where the text of a raw string starting at `i` begins (after its opening quote), if one does.
fn raw_string_open(c: &[char], i: usize, ident_char: impl Fn(char) -> bool) -> Option<usize> {
    if i > 0 && ident_char(c[i - 1]) {
        return None;
    }
    let mut j = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => i + 1,
        (Some('b'), Some('r')) => i + 2,
        _ => return None,
    };
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(j + 1)
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Tok {
    text: String,
    line: usize,
}

/// Identifiers (`r#` dropped), `::`, and every other non-blank character alone.
fn tokens(text: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    for (k, line) in text.split('\n').enumerate() {
        let c: Vec<char> = line.chars().collect();
        let start_ident = |ch: char| ch.is_ascii_alphabetic() || ch == '_';
        let mut i = 0;
        while i < c.len() {
            let raw_ident = c[i] == 'r' && c.get(i + 1) == Some(&'#');
            if raw_ident && c.get(i + 2).is_some_and(|&x| start_ident(x)) {
                i += 2;
            }
            let text = if start_ident(c[i]) {
                let s = i;
                while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                c[s..i].iter().collect()
            } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
                i += 2;
                "::".to_string()
            } else if c[i].is_whitespace() {
                i += 1;
                continue;
            } else {
                i += 1;
                c[i - 1].to_string()
            };
            toks.push(Tok { text, line: k + 1 });
        }
    }
    toks
}

fn is_ident(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// A file's tokens without its `#[cfg(test)]` items.
#[derive(Debug, Default)]
struct Stripped {
    toks: Vec<Tok>,
    /// Modules declared `#[cfg(test)] mod x;` (their files are tests).
    test_mods: Vec<String>,
    /// `#![cfg(test)]`: the whole file is a test.
    whole: bool,
    /// The lines of each item skipped (first, last).
    ranges: Vec<(usize, usize)>,
}

fn strip_cfg_test(toks: Vec<Tok>) -> Stripped {
    let is = |k: usize, want: &[&str]| {
        want.iter().enumerate().all(|(d, w)| toks.get(k + d).is_some_and(|t| t.text == *w))
    };
    let mut s = Stripped::default();
    let n = toks.len();
    let mut i = 0;
    while i < n {
        if is(i, &["#", "!", "[", "cfg", "(", "test", ")", "]"]) {
            s.whole = true;
            i += 8;
            continue;
        }
        if !is(i, &["#", "[", "cfg", "(", "test", ")", "]"]) {
            s.toks.push(toks[i].clone());
            i += 1;
            continue;
        }
        let mut j = i + 7;
        // Further attributes of the same item.
        while is(j, &["#", "["]) {
            let mut depth = 0;
            j += 1;
            while j < n {
                match toks[j].text.as_str() {
                    "[" => depth += 1,
                    "]" => {
                        depth -= 1;
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        // The item: up to its `;` or through its `{ ... }`, whichever comes first outside
        // parentheses and brackets.
        let item = j;
        let mut depth = 0i32;
        while j < n {
            match toks[j].text.as_str() {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                ";" if depth == 0 => {
                    let words: Vec<&str> = toks[item..j].iter().map(|t| t.text.as_str()).collect();
                    if let Some(k) = words.iter().position(|w| *w == "mod") {
                        if let Some(name) = words.get(k + 1) {
                            s.test_mods.push((*name).to_string());
                        }
                    }
                    j += 1;
                    break;
                }
                "{" if depth == 0 => {
                    let mut braces = 0;
                    while j < n {
                        match toks[j].text.as_str() {
                            "{" => braces += 1,
                            "}" => {
                                braces -= 1;
                                if braces == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        s.ranges.push((toks[i].line, toks[j.min(n) - 1].line));
        i = j;
    }
    s
}

/// Parses the use tree at `toks[i]` under `prefix`, adding each leaf's path; returns the index
/// after the tree.
fn use_tree<'a>(
    toks: &'a [Tok],
    mut i: usize,
    prefix: &[&'a Tok],
    leaves: &mut Vec<Vec<&'a Tok>>,
) -> usize {
    let mut segs = prefix.to_vec();
    if toks.get(i).is_some_and(|t| t.text == "::") {
        i += 1;
    }
    while let Some(t) = toks.get(i) {
        if t.text == "{" {
            i += 1;
            while toks.get(i).is_some_and(|t| t.text != "}") {
                let before = i;
                i = use_tree(toks, i, &segs, leaves);
                if toks.get(i).is_some_and(|t| t.text == ",") {
                    i += 1;
                } else if i == before {
                    i += 1; // not a tree: step over it
                }
            }
            return i + 1;
        }
        if t.text == "*" {
            segs.push(t);
            leaves.push(segs);
            return i + 1;
        }
        if !is_ident(&t.text) {
            return i;
        }
        segs.push(t);
        i += 1;
        if toks.get(i).is_some_and(|t| t.text == "::") {
            i += 1;
            continue;
        }
        if toks.get(i).is_some_and(|t| t.text == "as") {
            i += 2;
        }
        leaves.push(segs);
        return i;
    }
    i
}

/// The module path of a file of `src/` (`http/session/txn.rs` -> `http::session::txn`).
fn file_module(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> =
        rel.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["main"] {
        parts.clear();
    }
    parts
}

/// The top-level module a path names, and the line of the segment naming it.
fn resolve(segs: &[&Tok], module: &[String], tops: &BTreeSet<String>) -> Option<(String, usize)> {
    let top =
        |k: usize| segs.get(k).filter(|t| tops.contains(&t.text)).map(|t| (t.text.clone(), t.line));
    match segs.first()?.text.as_str() {
        "crate" => top(1),
        "super" => {
            let ups = segs.iter().take_while(|t| t.text == "super").count();
            if ups > module.len() {
                return None;
            }
            match module[..module.len() - ups].first() {
                Some(own) => Some((own.clone(), segs.get(ups).unwrap_or(&segs[ups - 1]).line)),
                None => top(ups),
            }
        }
        _ => None,
    }
}

/// One path of a file that names a top-level module.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ref {
    line: usize,
    to: String,
    path: String,
}

/// The references of one file (module path `module`) to top-level modules, its own included;
/// and the modules it declares under `#[cfg(test)] mod x;`.
fn references(src: &str, module: &[String], tops: &BTreeSet<String>) -> (Vec<Ref>, Vec<String>) {
    let s = strip_cfg_test(tokens(&blank(src, true)));
    if s.whole {
        return (Vec::new(), s.test_mods);
    }
    let toks = &s.toks;
    let text = |k: usize| toks.get(k).map_or("", |t| t.text.as_str());
    let joined =
        |segs: &[&Tok]| segs.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join("::");
    let mut refs = Vec::new();
    // Inline modules (`mod x { ... }`): name, brace depth inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match text(i) {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|m| m.1 == depth + 1) {
                    inline.pop();
                }
            }
            "mod" if is_ident(text(i + 1)) && text(i + 2) == "{" => {
                depth += 1;
                inline.push((text(i + 1).to_string(), depth));
                i += 3;
                continue;
            }
            _ => {}
        }
        let here = || -> Vec<String> {
            module.iter().cloned().chain(inline.iter().map(|m| m.0.clone())).collect()
        };
        let after_colons = i > 0 && text(i - 1) == "::";
        if text(i) == "use" && !after_colons {
            let mut leaves = Vec::new();
            let mut j = use_tree(toks, i + 1, &[], &mut leaves);
            while j < toks.len() && text(j) != ";" {
                j += 1;
            }
            let here = here();
            for leaf in &leaves {
                if let Some((to, line)) = resolve(leaf, &here, tops) {
                    refs.push(Ref { line, to, path: joined(leaf) });
                }
            }
            i = j + 1;
            continue;
        }
        if matches!(text(i), "crate" | "super") && !after_colons && text(i + 1) == "::" {
            let mut segs = vec![&toks[i]];
            let mut j = i + 1;
            while text(j) == "::" && is_ident(text(j + 1)) {
                segs.push(&toks[j + 1]);
                j += 2;
            }
            if let Some((to, line)) = resolve(&segs, &here(), tops) {
                refs.push(Ref { line, to, path: joined(&segs) });
            }
            i = j;
            continue;
        }
        i += 1;
    }
    (refs, s.test_mods)
}

/// Lines of code: not blank, not only comments, not in a `#[cfg(test)]` item.
fn code_lines(src: &str) -> usize {
    let s = strip_cfg_test(tokens(&blank(src, true)));
    if s.whole {
        return 0;
    }
    let in_test = |ln: usize| s.ranges.iter().any(|&(a, b)| a <= ln && ln <= b);
    blank(src, false)
        .split('\n')
        .enumerate()
        .filter(|&(k, line)| !line.trim().is_empty() && !in_test(k + 1))
        .count()
}

/// One function of a file (an `fn` with a body, methods and inner fns included) outside
/// `#[cfg(test)]` items.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Func {
    /// `name`, or `Type::name` for a method of an `impl` or `trait` block; the second function
    /// of a file by that name is `name#2`, the third `name#3`.
    name: String,
    /// The line of its `fn`.
    line: usize,
    /// Lines of code from its `fn` line through its closing brace, closures and inner fns
    /// included (blank lines, comment-only lines and `#[cfg(test)]` items not counted).
    lines: usize,
}

/// The functions of a file, in the order they start.
fn functions(src: &str) -> Vec<Func> {
    let s = strip_cfg_test(tokens(&blank(src, true)));
    if s.whole {
        return Vec::new();
    }
    let in_test = |ln: usize| s.ranges.iter().any(|&(a, b)| a <= ln && ln <= b);
    let code: Vec<bool> = blank(src, false)
        .split('\n')
        .enumerate()
        .map(|(k, line)| !line.trim().is_empty() && !in_test(k + 1))
        .collect();
    let toks = &s.toks;
    let text = |k: usize| toks.get(k).map_or("", |t| t.text.as_str());
    // The `}` closing each `{`.
    let mut close = BTreeMap::new();
    let mut open = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "{" => open.push(k),
            "}" => {
                if let Some(o) = open.pop() {
                    close.insert(o, k);
                }
            }
            _ => {}
        }
    }
    // The `{` opening the body of the item whose header goes on at `from`: the first one outside
    // parentheses and brackets, unless a `;` comes first (no body).
    let body = |from: usize| {
        let mut depth = 0i32;
        for k in from..toks.len() {
            match text(k) {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                "{" if depth == 0 => return Some(k),
                ";" if depth == 0 => return None,
                _ => {}
            }
        }
        None
    };
    // `{` of an `impl` or `trait` block -> the type its functions are methods of.
    let mut owner: BTreeMap<usize, String> = BTreeMap::new();
    // For each open `{`, the type when it is an `impl` or `trait` block.
    let mut blocks: Vec<Option<String>> = Vec::new();
    let mut found: Vec<Func> = Vec::new();
    // An `impl` item, not `impl Trait` in a type.
    let impl_item =
        |k: usize| k == 0 || matches!(text(k - 1), ";" | "{" | "}" | "]" | "unsafe" | "default");
    for k in 0..toks.len() {
        match text(k) {
            "{" => blocks.push(owner.get(&k).cloned()),
            "}" => {
                blocks.pop();
            }
            "impl" if impl_item(k) => {
                if let Some(b) = body(k + 1) {
                    if let Some(ty) = impl_type(&toks[k + 1..b]) {
                        owner.insert(b, ty);
                    }
                }
            }
            "trait" if is_ident(text(k + 1)) => {
                if let Some(b) = body(k + 2) {
                    owner.insert(b, text(k + 1).to_string());
                }
            }
            "fn" if is_ident(text(k + 1)) => {
                let Some(end) = body(k + 2).and_then(|b| close.get(&b)) else { continue };
                let name = match blocks.last() {
                    Some(Some(ty)) => format!("{ty}::{}", text(k + 1)),
                    _ => text(k + 1).to_string(),
                };
                let (first, last) = (toks[k].line, toks[*end].line);
                let lines = (first..=last).filter(|&ln| code.get(ln - 1) == Some(&true)).count();
                found.push(Func { name, line: first, lines });
            }
            _ => {}
        }
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for f in &mut found {
        let n = seen.entry(f.name.clone()).or_default();
        *n += 1;
        if *n > 1 {
            f.name = format!("{}#{n}", f.name);
        }
    }
    found
}

/// The type an `impl` block is for, from the tokens between `impl` and its `{`: the last name
/// of the path after `for` (or after the generics), `Session` for
/// `impl<'a> fmt::Display for &'a mut crate::x::Session<'a>`.
fn impl_type(header: &[Tok]) -> Option<String> {
    let text = |k: usize| header.get(k).map_or("", |t| t.text.as_str());
    // Angle brackets, `->` not one of them.
    let step = |k: usize, angle: &mut i32| match text(k) {
        "<" => *angle += 1,
        ">" if k == 0 || text(k - 1) != "-" => *angle -= 1,
        _ => {}
    };
    let (mut angle, mut k) = (0, 0);
    // The generics of `impl<...>`.
    if text(0) == "<" {
        step(0, &mut angle);
        while angle > 0 && k + 1 < header.len() {
            k += 1;
            step(k, &mut angle);
        }
        k += 1;
    }
    let mut start = k;
    while k < header.len() {
        match text(k) {
            "for" if angle == 0 => start = k + 1,
            "where" if angle == 0 => break,
            _ => step(k, &mut angle),
        }
        k += 1;
    }
    let mut k = start;
    // References, lifetimes, `mut`, `dyn`: to the path.
    while matches!(text(k), "&" | "'" | "mut" | "dyn" | "(" | "[" | "*" | "const")
        || (k > 0 && text(k - 1) == "'")
    {
        k += 1;
    }
    let mut name = None;
    while is_ident(text(k)) {
        name = Some(text(k).to_string());
        if text(k + 1) != "::" {
            break;
        }
        k += 2;
    }
    name
}

/// The modules `main.rs` declares.
fn top_modules(main_rs: &str) -> BTreeSet<String> {
    let toks = strip_cfg_test(tokens(&blank(main_rs, true))).toks;
    let mut tops = BTreeSet::new();
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "mod" if depth == 0 && toks.get(k + 2).is_some_and(|t| t.text == ";") => {
                tops.insert(toks[k + 1].text.clone());
            }
            _ => {}
        }
    }
    tops
}

// ---------------------------------------------------------------------------------------------
// The whole source

/// One reference from a top-level module to another.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Site {
    file: String,
    line: usize,
    from: String,
    to: String,
    path: String,
}

#[derive(Debug, Default)]
struct Analysis {
    tops: BTreeSet<String>,
    sites: Vec<Site>,
    /// Lines of code per file (test files left out).
    sizes: BTreeMap<String, usize>,
    /// Lines of code per function, `file:name` (test files left out).
    fns: BTreeMap<String, usize>,
}

fn rust_files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, base, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(base).expect("under src");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Reads every `.rs` file of `src` (a map file -> text, for the tests below).
fn read_sources(src: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    rust_files(src, src, &mut files);
    files
        .into_iter()
        .map(|rel| {
            let text = fs::read_to_string(src.join(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text)
        })
        .collect()
}

fn analyse(files: &BTreeMap<String, String>) -> Analysis {
    let main = files.get("main.rs").expect("src/main.rs");
    let tops = top_modules(main);
    let mut test_files = Vec::new();
    let mut refs = BTreeMap::new();
    for (rel, text) in files {
        assert!(
            !text.contains("#[path"),
            "{rel}: `#[path]` attributes are not followed by tests/architecture.rs; teach it first"
        );
        let (r, test_mods) = references(text, &file_module(rel), &tops);
        // A module's children live in `x/` beside `x.rs`, or in the directory of `mod.rs`.
        let dir = match rel.strip_suffix("mod.rs") {
            Some(d) => d.to_string(),
            None if rel == "main.rs" => String::new(),
            None => format!("{}/", rel.trim_end_matches(".rs")),
        };
        test_files.extend(test_mods.iter().map(|m| format!("{dir}{m}")));
        refs.insert(rel.clone(), r);
    }
    let is_test = |rel: &str| {
        test_files.iter().any(|t| rel == format!("{t}.rs") || rel.starts_with(&format!("{t}/")))
    };
    let mut a = Analysis { tops, ..Analysis::default() };
    for (rel, text) in files {
        if is_test(rel) {
            continue;
        }
        a.sizes.insert(rel.clone(), code_lines(text));
        for f in functions(text) {
            a.fns.insert(format!("{rel}:{}", f.name), f.lines);
        }
        let Some(from) = file_module(rel).into_iter().next() else { continue }; // main.rs
        for r in &refs[rel] {
            if r.to != from {
                a.sites.push(Site {
                    file: rel.clone(),
                    line: r.line,
                    from: from.clone(),
                    to: r.to.clone(),
                    path: r.path.clone(),
                });
            }
        }
    }
    a
}

// ---------------------------------------------------------------------------------------------
// The layers of ARCHITECTURE.md

#[derive(Debug, Default)]
struct Layers {
    /// Module -> its layer.
    level: BTreeMap<String, usize>,
    deny: BTreeSet<(String, String)>,
    allow: BTreeSet<(String, String)>,
}

impl Layers {
    /// Why `from` may not use `to`, if it may not.
    fn breaks(&self, from: &str, to: &str) -> Option<String> {
        let pair = (from.to_string(), to.to_string());
        if self.allow.contains(&pair) {
            return None;
        }
        if self.deny.contains(&pair) {
            return Some("denied".to_string());
        }
        let (a, b) = (self.level.get(from)?, self.level.get(to)?);
        (b > a).then(|| format!("up from layer {a} to {b}"))
    }
}

/// Parses the first fenced block after the `## Layers (enforced)` heading: `N: module ...`
/// lines, lowest layer first and numbered from 0; `deny: a -> b c` and `allow: a -> b c` lines;
/// `#` starts a comment.
fn parse_layers(md: &str) -> Result<Layers, String> {
    let mut lines = md.lines().enumerate().skip_while(|(_, l)| l.trim() != LAYERS_HEADING);
    if lines.next().is_none() {
        return Err(format!("no `{LAYERS_HEADING}` section"));
    }
    let mut lines = lines.skip_while(|(_, l)| !l.trim_start().starts_with("```"));
    if lines.next().is_none() {
        return Err(format!("no fenced block in `{LAYERS_HEADING}`"));
    }
    let mut layers = Layers::default();
    let mut count = 0;
    let mut closed = false;
    for (k, raw) in lines {
        let at = format!("ARCHITECTURE.md:{}", k + 1);
        if raw.trim_start().starts_with("```") {
            closed = true;
            break;
        }
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((head, rest)) = line.split_once(':') else {
            return Err(format!("{at}: expected `N: modules`, `deny: a -> b` or `allow: a -> b`"));
        };
        match head.trim() {
            kind @ ("deny" | "allow") => {
                let Some((from, tos)) = rest.split_once("->") else {
                    return Err(format!("{at}: expected `{kind}: a -> b c`"));
                };
                let from = from.trim();
                if from.split_whitespace().count() != 1 || tos.split_whitespace().count() == 0 {
                    return Err(format!("{at}: expected `{kind}: a -> b c`"));
                }
                for to in tos.split_whitespace() {
                    let pair = (from.to_string(), to.to_string());
                    let (this, other) = if kind == "deny" {
                        (&mut layers.deny, &layers.allow)
                    } else {
                        (&mut layers.allow, &layers.deny)
                    };
                    if other.contains(&pair) || !this.insert(pair) {
                        return Err(format!("{at}: `{from} -> {to}` is listed twice"));
                    }
                }
            }
            number => {
                if number.parse::<usize>().ok() != Some(count) {
                    return Err(format!("{at}: expected layer {count} next, found `{number}`"));
                }
                if rest.split_whitespace().count() == 0 {
                    return Err(format!("{at}: layer {count} names no module"));
                }
                for m in rest.split_whitespace() {
                    if layers.level.insert(m.to_string(), count).is_some() {
                        return Err(format!("{at}: `{m}` is in two layers"));
                    }
                }
                count += 1;
            }
        }
    }
    if !closed {
        return Err(format!("the fenced block of `{LAYERS_HEADING}` is not closed"));
    }
    Ok(layers)
}

/// Modules the layers miss, and names they list that are no module.
fn check_modules(layers: &Layers, tops: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for m in tops.iter().filter(|m| !layers.level.contains_key(*m)) {
        problems.push(format!(
            "module `{m}` is in no layer: add it to `{LAYERS_HEADING}` in ARCHITECTURE.md"
        ));
    }
    let named = layers
        .level
        .keys()
        .chain(layers.deny.iter().chain(&layers.allow).flat_map(|(a, b)| [a, b]));
    let unknown: BTreeSet<&String> = named.filter(|m| !tops.contains(*m)).collect();
    for m in unknown {
        problems.push(format!(
            "`{LAYERS_HEADING}` names `{m}`, which is not a module of main.rs: remove or rename it"
        ));
    }
    problems
}

/// Peers of one layer that use each other in a circle.
fn check_peer_circles(layers: &Layers, sites: &[Site]) -> Vec<String> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in sites {
        let same = layers.level.get(&s.from).is_some_and(|a| layers.level.get(&s.to) == Some(a));
        if same && layers.breaks(&s.from, &s.to).is_none() {
            edges.entry(&s.from).or_default().insert(&s.to);
        }
    }
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for &next in edges.get(m).into_iter().flatten() {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let mut circles: BTreeSet<Vec<&str>> = BTreeSet::new();
    for &m in edges.keys() {
        let r = reach(m);
        if r.contains(m) {
            circles.insert(r.into_iter().filter(|&o| reach(o).contains(m)).collect());
        }
    }
    circles
        .into_iter()
        .map(|c| {
            let inside = |m: &String| c.contains(&m.as_str());
            let here: Vec<&Site> =
                sites.iter().filter(|s| inside(&s.from) && inside(&s.to)).collect();
            format!(
                "modules {} of layer {} use each other in a circle (peers may not): move one to \
                 another layer, or drop the uses:{}",
                c.join(", "),
                layers.level[c[0]],
                site_list(&here)
            )
        })
        .collect()
}

/// Sites, one per line, to follow a message.
fn site_list(sites: &[&Site]) -> String {
    sites.iter().fold(String::new(), |mut out, s| {
        let _ = write!(out, "\n    {}:{}  {} -> {}  {}", s.file, s.line, s.from, s.to, s.path);
        out
    })
}

// ---------------------------------------------------------------------------------------------
// The debt file

#[derive(Debug, Default)]
struct Debt {
    /// (from, to) -> sites.
    edges: BTreeMap<(String, String), usize>,
    /// File under src -> lines of code.
    sizes: BTreeMap<String, usize>,
    /// `file:name` of a function -> lines of code.
    fns: BTreeMap<String, usize>,
}

/// A debt line without its comment, which starts at a `#` opening the line or following a blank
/// (`f#2` is a name).
fn uncomment(line: &str) -> &str {
    let comment = line
        .char_indices()
        .find(|&(k, c)| c == '#' && (k == 0 || line[..k].ends_with(char::is_whitespace)));
    &line[..comment.map_or(line.len(), |(k, _)| k)]
}

/// `[layers]` lines `from -> to  N  # why`, `[file sizes]` lines `path  N  # why`,
/// `[function sizes]` lines `path  name  N  # why`.
fn parse_debt(text: &str) -> Result<Debt, String> {
    let mut debt = Debt::default();
    let mut section = "";
    for (k, raw) in text.lines().enumerate() {
        let at = format!("{DEBT_FILE}:{}", k + 1);
        let line = uncomment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(s) = [DEBT_LAYERS, DEBT_SIZES, DEBT_FNS].into_iter().find(|s| *s == line) {
            section = s;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let count = words.last().and_then(|w| w.parse::<usize>().ok());
        match (section, words.as_slice(), count) {
            (DEBT_LAYERS, [from, "->", to, _], Some(n)) => {
                let key = (from.to_string(), to.to_string());
                if debt.edges.insert(key, n).is_some() {
                    return Err(format!("{at}: `{from} -> {to}` is listed twice"));
                }
            }
            (DEBT_SIZES, [file, _], Some(n)) => {
                if debt.sizes.insert(file.to_string(), n).is_some() {
                    return Err(format!("{at}: `{file}` is listed twice"));
                }
            }
            (DEBT_FNS, [file, name, _], Some(n)) => {
                if debt.fns.insert(format!("{file}:{name}"), n).is_some() {
                    return Err(format!("{at}: `{file}  {name}` is listed twice"));
                }
            }
            (DEBT_LAYERS, ..) => return Err(format!("{at}: expected `from -> to  N  # why`")),
            (DEBT_SIZES, ..) => return Err(format!("{at}: expected `path  N  # why`")),
            (DEBT_FNS, ..) => return Err(format!("{at}: expected `path  name  N  # why`")),
            _ => {
                return Err(format!(
                    "{at}: a line before `{DEBT_LAYERS}`, `{DEBT_SIZES}` or `{DEBT_FNS}`"
                ))
            }
        }
    }
    Ok(debt)
}

/// Every reference against the layers that the debt file does not cover exactly.
fn check_edges(layers: &Layers, sites: &[Site], debt: &Debt) -> Vec<String> {
    let mut broken: BTreeMap<(String, String), (String, Vec<&Site>)> = BTreeMap::new();
    for s in sites {
        if let Some(why) = layers.breaks(&s.from, &s.to) {
            broken.entry((s.from.clone(), s.to.clone())).or_insert((why, Vec::new())).1.push(s);
        }
    }
    let mut problems = Vec::new();
    for ((from, to), (why, here)) in &broken {
        let n = here.len();
        match debt.edges.get(&(from.clone(), to.clone())) {
            None => problems.push(format!(
                "`{from}` uses `{to}` ({why}), {n} site(s): move what it needs down (or fix the \
                 layers in ARCHITECTURE.md if they are wrong):{}",
                site_list(here)
            )),
            Some(&known) if n > known => problems.push(format!(
                "`{from} -> {to}` ({why}) grew from {known} to {n} site(s) ({DEBT_FILE} may only \
                 shrink):{}",
                site_list(here)
            )),
            Some(&known) if n < known => problems.push(format!(
                "`{from} -> {to}` has {n} site(s) now, {DEBT_FILE} says {known}: lower its count \
                 to {n}"
            )),
            Some(_) => {}
        }
    }
    for ((from, to), known) in &debt.edges {
        if !broken.contains_key(&(from.clone(), to.clone())) {
            problems.push(format!(
                "`{from} -> {to}` ({known} site(s) in {DEBT_FILE}) breaks no rule any more: \
                 delete its line"
            ));
        }
    }
    problems
}

/// Files over [`MAX_LINES`] that the debt file does not cover exactly.
fn check_sizes(sizes: &BTreeMap<String, usize>, debt: &Debt) -> Vec<String> {
    check_counts(MAX_LINES, sizes, &debt.sizes)
}

/// Functions over [`MAX_FN_LINES`] that the debt file does not cover exactly.
fn check_fns(fns: &BTreeMap<String, usize>, debt: &Debt) -> Vec<String> {
    check_counts(MAX_FN_LINES, fns, &debt.fns)
}

/// Lines of code per file (or `file:function`) over `max` that `known` does not list exactly.
fn check_counts(
    max: usize,
    counts: &BTreeMap<String, usize>,
    known: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (what, &n) in counts {
        match known.get(what) {
            None if n > max => {
                problems.push(format!("src/{what} has {n} lines of code, over {max}: split it"))
            }
            Some(&was) if n > was => problems.push(format!(
                "src/{what} grew from {was} to {n} lines of code ({DEBT_FILE} may only shrink): \
                 split it"
            )),
            Some(_) if n <= max => problems.push(format!(
                "src/{what} has {n} lines of code, within {max}: delete its line in {DEBT_FILE}"
            )),
            Some(&was) if n < was => problems.push(format!(
                "src/{what} has {n} lines of code now, {DEBT_FILE} says {was}: lower its count \
                 to {n}"
            )),
            _ => {}
        }
    }
    for what in known.keys().filter(|w| !counts.contains_key(*w)) {
        problems.push(format!("src/{what} (in {DEBT_FILE}) is gone: delete its line"));
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// The checks

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn debt() -> Debt {
    parse_debt(&read(&crate_dir().join(DEBT_FILE))).unwrap_or_else(|e| panic!("{e}"))
}

fn fail_on(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} problem(s)\n\n{}\n",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn modules_keep_to_their_layers() {
    let dir = crate_dir();
    let md_path = dir.join("../../ARCHITECTURE.md");
    let layers = parse_layers(&read(&md_path)).unwrap_or_else(|e| panic!("{e}"));
    let a = analyse(&read_sources(&dir.join("src")));
    let mut problems = check_modules(&layers, &a.tops);
    problems.extend(check_peer_circles(&layers, &a.sites));
    problems.extend(check_edges(&layers, &a.sites, &debt()));
    fail_on("layers of ARCHITECTURE.md (`## Layers (enforced)`)", &problems);
}

#[test]
fn files_stay_small() {
    let a = analyse(&read_sources(&crate_dir().join("src")));
    fail_on("file sizes", &check_sizes(&a.sizes, &debt()));
}

#[test]
fn functions_stay_small() {
    let a = analyse(&read_sources(&crate_dir().join("src")));
    fail_on("function sizes", &check_fns(&a.fns, &debt()));
}

/// Files that may declare `thread_local!`s: the allocator's caches (it cannot allocate a worker
/// slot) and the worker slots themselves. Every other per-worker state is a `worker::Slot`.
const THREAD_LOCALS_ALLOWED: [&str; 2] = ["memory.rs", "worker.rs"];

/// `file:line` of each `thread_local!` outside test items and the allowed files.
fn thread_locals(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, src) in files {
        let test_file = rel.ends_with("/tests.rs") || rel.contains("/tests/");
        if THREAD_LOCALS_ALLOWED.contains(&rel.as_str()) || test_file {
            continue;
        }
        let s = strip_cfg_test(tokens(&blank(src, true)));
        if s.whole {
            continue;
        }
        for w in s.toks.windows(2) {
            if w[0].text == "thread_local" && w[1].text == "!" {
                found.push(format!(
                    "{rel}:{}: a `thread_local!`; per-worker state is a `worker::Slot` (see \
                     `worker::Id`)",
                    w[0].line
                ));
            }
        }
    }
    found
}

#[test]
fn per_worker_state_lives_in_worker_slots() {
    let files = read_sources(&crate_dir().join("src"));
    fail_on("per-worker state", &thread_locals(&files));
}

// ---------------------------------------------------------------------------------------------
// The checker's own tests

#[test]
fn a_thread_local_is_found_outside_tests_only() {
    let files: BTreeMap<String, String> = [
        ("a.rs", "thread_local! { static X: u8 = 0; }\n"),
        ("b.rs", "// thread_local! in a comment\n#[cfg(test)]\nmod t { thread_local! {} }\n"),
        ("memory.rs", "thread_local! { static F: u8 = 0; }\n"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let found = thread_locals(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("a.rs:1:"));
}

fn tops(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn refs_of(src: &str, file: &str) -> Vec<(usize, String, String)> {
    let (r, _) = references(src, &file_module(file), &tops(&["a", "b", "c", "rules", "http"]));
    r.into_iter().map(|r| (r.line, r.to, r.path)).collect()
}

fn r(line: usize, to: &str, path: &str) -> (usize, String, String) {
    (line, to.to_string(), path.to_string())
}

#[test]
fn a_grouped_use_names_each_module() {
    assert_eq!(
        refs_of("use crate::{a, b::c::{D, E as F}, self};\n", "c/x.rs"),
        [r(1, "a", "crate::a"), r(1, "b", "crate::b::c::D"), r(1, "b", "crate::b::c::E")]
    );
}

#[test]
fn a_multi_line_use_gives_each_name_its_line() {
    let src = "\
pub(crate) use crate::{
    a::X,
    // b::Y,
    b::{
        Z,
    },
};
use std::fmt;
";
    assert_eq!(refs_of(src, "c/mod.rs"), [r(2, "a", "crate::a::X"), r(4, "b", "crate::b::Z")]);
}

#[test]
fn paths_in_code_count() {
    let src = "\
fn f<'a>(x: &'a str) -> crate::a::T<'a> {
    let c = '\"';
    crate::b::g(crate::c::K)
}
";
    assert_eq!(
        refs_of(src, "a.rs"),
        [r(1, "a", "crate::a::T"), r(3, "b", "crate::b::g"), r(3, "c", "crate::c::K")]
    );
}

#[test]
fn super_paths_count_once_they_leave_the_top_level_module() {
    let src = "\
use super::super::super::rules::Verdict;
use super::super::pool;
fn f() { super::super::super::a::g(); super::h(); }
";
    assert_eq!(
        refs_of(src, "http/session/txn.rs"),
        [
            r(1, "rules", "super::super::super::rules::Verdict"),
            r(2, "http", "super::super::pool"),
            r(3, "a", "super::super::super::a::g"),
            r(3, "http", "super::h"),
        ]
    );
    // From a top-level file, one `super` is the root; inside an inline module, one more.
    let src =
        "use super::{a, b::X};\nmod inner {\n    use super::super::c;\n    use super::Y;\n}\n";
    assert_eq!(
        refs_of(src, "rules.rs"),
        [
            r(1, "a", "super::a"),
            r(1, "b", "super::b::X"),
            r(3, "c", "super::super::c"),
            r(4, "rules", "super::Y")
        ]
    );
}

#[test]
fn test_items_comments_and_strings_are_skipped() {
    let src = "\
//! See crate::a::x.
/// [`crate::b::y`]
/* crate::c::z /* nested crate::a */ */
const S: &str = \"crate::a::s\";
const R: &str = r#\"crate::b::\"r\"#;
const Q: char = '\\'';
#[cfg(test)]
use crate::c::only_in_tests;
#[cfg(test)]
#[allow(dead_code)]
fn helper(x: [u8; 2]) { crate::a::f(); }
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests2 {
    use crate::b::Z;
    fn f() { if true { crate::c::g() } }
}
fn real() { crate::rules::h() }
";
    assert_eq!(refs_of(src, "a/x.rs"), [r(19, "rules", "crate::rules::h")]);
    let (_, test_mods) = references(src, &file_module("a/x.rs"), &tops(&["a"]));
    assert_eq!(test_mods, ["tests"]);
    assert_eq!(code_lines(src), 4); // S, R, Q, real
}

#[test]
fn lines_of_code_leave_out_blanks_comments_and_tests() {
    let src = "\
//! doc

use std::fmt;
// a comment
fn f() {
    /* a */ let x = 1;

}
const S: &str = \"a

b\";
#[cfg(test)]
mod tests {
    fn t() {}
}
";
    // use, fn, let, }, and the two lines of S that are not blank
    assert_eq!(code_lines(src), 6);
}

#[test]
fn files_declared_as_test_modules_are_left_out() {
    let files: BTreeMap<String, String> = [
        ("main.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod s;\n#[cfg(test)]\nmod tests;\n"),
        ("a/s.rs", "#[cfg(test)]\nmod tests;\nuse crate::b::X;\n"),
        ("a/tests.rs", "use crate::b::T;\n"),
        ("a/s/tests.rs", "use crate::b::U;\n"),
        ("b.rs", "pub struct X;\nfn f() { super::a::g() }\n"),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    let a = analyse(&files);
    assert_eq!(a.tops, tops(&["a", "b"]));
    let sites: Vec<(&str, usize, &str, &str)> =
        a.sites.iter().map(|s| (s.file.as_str(), s.line, s.from.as_str(), s.to.as_str())).collect();
    assert_eq!(sites, [("a/s.rs", 3, "a", "b"), ("b.rs", 2, "b", "a")]);
    assert_eq!(a.sizes.keys().collect::<Vec<_>>(), ["a/mod.rs", "a/s.rs", "b.rs", "main.rs"]);
    assert_eq!(a.fns.keys().collect::<Vec<_>>(), ["b.rs:f"]);
}

fn fns_of(src: &str) -> Vec<(String, usize, usize)> {
    functions(src).into_iter().map(|f| (f.name, f.line, f.lines)).collect()
}

fn func(name: &str, line: usize, lines: usize) -> (String, usize, usize) {
    (name.to_string(), line, lines)
}

#[test]
fn methods_are_named_by_their_type() {
    let src = "\
struct S;
impl<'a, T: Fn() -> u8> fmt::Display for &'a mut crate::x::Wrap<T> where T: Copy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Ok(())
    }
}
impl S {
    pub(crate) async fn new() -> impl Fn(u8) -> u8 {
        |x| x
    }
    const fn size() -> [u8; 2] { [0; 2] }
}
pub(crate) trait T {
    fn needed(&self);
    fn given(&self) -> u8 {
        1
    }
}
fn free(f: fn(u8) -> u8, g: impl Fn(u8)) {}
impl S { fn new() {} }
";
    assert_eq!(
        fns_of(src),
        [
            func("Wrap::fmt", 3, 3),
            func("S::new", 8, 3),
            func("S::size", 11, 1),
            func("T::given", 15, 3),
            func("free", 19, 1),
            func("S::new#2", 20, 1),
        ]
    );
}

#[test]
fn closures_and_inner_fns_count_toward_the_outer_fn() {
    let src = "\
fn outer() {
    let c = |x: u8| {
        x + 1
    };

    // a comment
    fn inner() -> u8 {
        2
    }
}
fn inner() {}
";
    // outer: all but the blank line and the comment; the inner fn on its own too.
    assert_eq!(fns_of(src), [func("outer", 1, 8), func("inner", 7, 3), func("inner#2", 11, 1)]);
}

#[test]
fn braces_in_strings_chars_and_comments_are_not_matched() {
    let src = r##"
fn f() -> String {
    let a = "}";
    let b = '}';
    let c = r#"}"
    "#;
    // }
    /* } */
    format!("{{{a}{b}{c}")
}
fn g() {}
"##;
    assert_eq!(fns_of(src), [func("f", 2, 7), func("g", 11, 1)]);
}

#[test]
fn test_items_have_no_functions() {
    let src = "\
fn kept() {
    #[cfg(test)]
    let x = 1;
}
#[cfg(test)]
mod tests {
    fn t() {}
    impl super::S {
        fn m() {}
    }
}
#[cfg(test)]
fn helper() {}
";
    assert_eq!(fns_of(src), [func("kept", 1, 2)]);
    assert!(fns_of("#![cfg(test)]\nfn t() {}\n").is_empty());
}

const SAMPLE_LAYERS: &str = "\
# Title

## Layers (enforced)

Text.

```text
0: low other   # a comment
1: mid
2: high
deny: other -> low
allow: mid -> high
```

## Next
";

fn site(from: &str, to: &str, line: usize) -> Site {
    Site {
        file: format!("{from}.rs"),
        line,
        from: from.to_string(),
        to: to.to_string(),
        path: format!("crate::{to}::X"),
    }
}

#[test]
fn layers_parse_and_judge() {
    let l = parse_layers(SAMPLE_LAYERS).expect("parses");
    assert_eq!(l.level.get("other"), Some(&0));
    assert_eq!(l.level.get("high"), Some(&2));
    assert_eq!(l.breaks("high", "low"), None);
    assert_eq!(l.breaks("low", "other"), None);
    assert_eq!(l.breaks("other", "low"), Some("denied".to_string()));
    assert_eq!(l.breaks("low", "mid"), Some("up from layer 0 to 1".to_string()));
    assert_eq!(l.breaks("mid", "high"), None);
    assert_eq!(check_modules(&l, &tops(&["low", "other", "mid", "high"])), Vec::<String>::new());
    let p = check_modules(&l, &tops(&["low", "other", "mid", "new"]));
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].contains("`new` is in no layer") && p[1].contains("names `high`"), "{p:?}");

    for (bad, why) in [
        ("```text\n0: a\n2: b\n```", "expected layer 1 next"),
        ("```text\n0: a\n1: a\n```", "in two layers"),
        ("```text\n0: a\nb c\n```", "expected `N: modules`"),
        ("```text\n0: a b\ndeny: a -> b\nallow: a -> b\n```", "listed twice"),
        ("```text\n0: a\n", "not closed"),
    ] {
        let err = parse_layers(&format!("## Layers (enforced)\n{bad}")).expect_err(bad);
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn peers_may_not_circle() {
    let l = parse_layers(SAMPLE_LAYERS).expect("parses");
    assert!(check_peer_circles(&l, &[site("low", "other", 1)]).is_empty());
    let p = check_peer_circles(
        &l,
        &[site("low", "other", 1), site("mid", "low", 2), site("other", "low", 3)],
    );
    // `other -> low` is denied: reported as a broken rule, not as a circle.
    assert!(p.is_empty(), "{p:?}");
    let l = parse_layers("## Layers (enforced)\n```\n0: a b c\n```\n").expect("parses");
    let p = check_peer_circles(
        &l,
        &[site("a", "b", 1), site("b", "c", 2), site("c", "a", 3), site("a", "c", 4)],
    );
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("modules a, b, c of layer 0") && p[0].contains("c.rs:3  c -> a"),
        "{p:?}"
    );
}

#[test]
fn the_debt_ratchet_only_shrinks() {
    let l = parse_layers(SAMPLE_LAYERS).expect("parses");
    let sites = [
        site("low", "mid", 1),
        site("low", "mid", 2),
        site("other", "low", 3),
        site("high", "low", 4),
    ];
    let debt = |text: &str| parse_debt(text).expect("parses");
    // Exactly what is there: nothing to say.
    let exact = debt("[layers]\nlow -> mid  2  # why\nother -> low 1\n");
    assert_eq!(check_edges(&l, &sites, &exact), Vec::<String>::new());
    // A new edge, a grown one, a shrunk one, one gone.
    let p = check_edges(&l, &sites, &debt("[layers]\nlow -> mid  1\n"));
    assert!(
        p.len() == 2 && p[0].contains("grew from 1 to 2") && p[0].contains("low.rs:2"),
        "{p:?}"
    );
    assert!(p[1].contains("`other` uses `low` (denied)") && p[1].contains("other.rs:3"), "{p:?}");
    let p = check_edges(&l, &sites[..1], &exact);
    assert!(p[0].contains("lower its count to 1") && p[1].contains("delete its line"), "{p:?}");
    // Malformed debt lines.
    assert!(parse_debt("low -> mid 1\n").is_err());
    assert!(parse_debt("[layers]\nlow -> mid\n").is_err());
    assert!(parse_debt("[layers]\nlow -> mid 1\nlow -> mid 2\n").is_err());
}

#[test]
fn the_size_ratchet_only_shrinks() {
    let sizes: BTreeMap<String, usize> =
        [("big.rs", MAX_LINES + 10), ("new.rs", MAX_LINES + 1), ("ok.rs", MAX_LINES)]
            .into_iter()
            .map(|(f, n)| (f.to_string(), n))
            .collect();
    let debt = |text: &str| parse_debt(text).expect("parses");
    let known = format!("[file sizes]\nbig.rs {}\nnew.rs {}\n", MAX_LINES + 10, MAX_LINES + 1);
    assert_eq!(check_sizes(&sizes, &debt(&known)), Vec::<String>::new());
    let p = check_sizes(&sizes, &debt(&format!("[file sizes]\nbig.rs {}\n", MAX_LINES + 5)));
    assert!(p.len() == 2 && p[0].contains("grew from") && p[1].contains("src/new.rs has"), "{p:?}");
    let stale = format!(
        "[file sizes]\nbig.rs {}\nnew.rs {}\nok.rs 900\ngone.rs 900\n",
        MAX_LINES + 20,
        MAX_LINES + 1
    );
    let p = check_sizes(&sizes, &debt(&stale));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p[0].contains("lower its count to 810")
            && p[1].contains("within 800")
            && p[2].contains("gone"),
        "{p:?}"
    );
}

#[test]
fn the_function_size_ratchet_only_shrinks() {
    let fns: BTreeMap<String, usize> =
        [("a/x.rs:S::f#2", MAX_FN_LINES + 10), ("a/x.rs:g", MAX_FN_LINES + 1), ("b.rs:h", 3)]
            .into_iter()
            .map(|(f, n)| (f.to_string(), n))
            .collect();
    let debt = |text: &str| parse_debt(text).expect("parses");
    let known = format!(
        "[file sizes]\n[function sizes]\na/x.rs  S::f#2  {}  # why #1\na/x.rs g {}\n",
        MAX_FN_LINES + 10,
        MAX_FN_LINES + 1
    );
    assert_eq!(debt(&known).fns.get("a/x.rs:S::f#2"), Some(&(MAX_FN_LINES + 10)));
    assert_eq!(check_fns(&fns, &debt(&known)), Vec::<String>::new());
    let p = check_fns(&fns, &debt(&format!("[function sizes]\na/x.rs S::f#2 {MAX_FN_LINES}\n")));
    assert!(
        p.len() == 2 && p[0].contains("grew from 150 to 160") && p[1].contains("src/a/x.rs:g has"),
        "{p:?}"
    );
    let stale = "[function sizes]\na/x.rs S::f#2 170\na/x.rs g 151\nb.rs h 200\nb.rs k 200\n";
    let p = check_fns(&fns, &debt(stale));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p[0].contains("lower its count to 160")
            && p[1].contains("src/b.rs:h has 3 lines of code, within 150")
            && p[2].contains("src/b.rs:k (in"),
        "{p:?}"
    );
    assert!(parse_debt("[function sizes]\na/x.rs 200\n").is_err());
    assert!(parse_debt("[function sizes]\na/x.rs f 200\na/x.rs f 201\n").is_err());
}
