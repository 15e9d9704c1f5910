//! Environment variables in addresses: HAProxy expands `$NAME` and `${NAME}` in every address
//! (`bind`, `server`, `log` targets) even outside double quotes, an unset one giving nothing
//! (its `env_expand` in `str2sa_range`), so `bind *:${PORT}` works unquoted. The variables a
//! configuration names are looked up once, when it is loaded, and kept for its parsing.
//!
//! Must not touch: words elsewhere (only double quotes expand them there, in the lexer).

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    static VARS: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Each `$NAME` / `${NAME}` of `text`: (start, end, name).
fn refs(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = text[i..].find('$') {
        let at = i + off;
        let rest = &text[at + 1..];
        if let Some(inner) = rest.strip_prefix('{') {
            if let Some(close) = inner.find('}') {
                let name = &inner[..close];
                if !name.is_empty() && name.chars().all(is_name) {
                    out.push((at, at + 2 + close + 1, name));
                    i = at + 2 + close + 1;
                    continue;
                }
            }
        } else {
            let n = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
            if n > 0 {
                out.push((at, at + 1 + n, &rest[..n]));
                i = at + 1 + n;
                continue;
            }
        }
        i = at + 1;
    }
    out
}

/// Looks up every variable the texts name (for [`expand`] during this load).
pub fn prepare<'a>(texts: impl Iterator<Item = &'a str>, env: crate::EnvLookup<'_>) {
    let mut vars = HashMap::new();
    for t in texts {
        for (_, _, name) in refs(t) {
            if let Some(v) = env(name) {
                vars.insert(name.to_string(), v);
            }
        }
    }
    VARS.with(|v| *v.borrow_mut() = vars);
}

/// A variable changed by `setenv` and its kin while the files are read.
pub fn set(name: &str, value: Option<&str>) {
    VARS.with(|v| match value {
        Some(val) => {
            v.borrow_mut().insert(name.to_string(), val.to_string());
        }
        None => {
            v.borrow_mut().remove(name);
        }
    });
}

/// `resetenv`: keeps the variables `keep` says.
pub fn retain(keep: impl Fn(&str) -> bool) {
    VARS.with(|v| v.borrow_mut().retain(|k, _| keep(k)));
}

/// Forgets the variables once the configuration is loaded.
pub fn clear() {
    VARS.with(|v| v.borrow_mut().clear());
}

/// `text` with its variables replaced (an unset one by nothing).
pub fn expand(text: &str) -> std::borrow::Cow<'_, str> {
    let found = refs(text);
    if found.is_empty() {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    VARS.with(|v| {
        let v = v.borrow();
        for (start, end, name) in found {
            out.push_str(&text[last..start]);
            out.push_str(v.get(name).map_or("", String::as_str));
            last = end;
        }
    });
    out.push_str(&text[last..]);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_both_forms_expand_and_unset_ones_vanish() {
        let env = |n: &str| match n {
            "PORT" => Some("8080".to_string()),
            "HOST" => Some("10.0.0.1".to_string()),
            _ => None,
        };
        prepare(["*:${PORT} $HOST:${GONE} ${bad-name}"].into_iter(), &env);
        assert_eq!(expand("*:${PORT}"), "*:8080");
        assert_eq!(expand("$HOST:80"), "10.0.0.1:80");
        assert_eq!(expand("${GONE}:${PORT}"), ":8080");
        assert_eq!(expand("a$:${bad-name}"), "a$:${bad-name}");
        assert_eq!(expand("no vars"), "no vars");
        clear();
        assert_eq!(expand("*:${PORT}"), "*:");
    }
}
