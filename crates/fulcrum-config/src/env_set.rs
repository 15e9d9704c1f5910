//! `setenv`, `presetenv`, `unsetenv` and `resetenv` (global): changes to the environment that
//! the lines after them see, as HAProxy 2.6 makes them while it reads its files (`"${PORT}"`
//! and unquoted `${PORT}` in addresses alike). The changes are kept in an overlay over the
//! environment the loader was given (this crate does no I/O); [`Overlay::changes`] tells the
//! program what to apply to its own environment (`show env`). Lines are checked, with
//! HAProxy's messages, by [`check`].

use std::collections::HashMap;

use crate::args::Diags;
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::EnvLookup;

/// The environment changes read so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    /// Set (`Some`) or removed (`None`) variables.
    vars: HashMap<String, Option<String>>,
    /// After `resetenv`: the only variables of the given environment still there.
    kept: Option<Vec<String>>,
}

/// What the program applies to its environment once the configuration is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// `resetenv`: every variable but these goes (before `set`).
    pub keep_only: Option<Vec<String>>,
    /// Variables set (`Some`) or removed (`None`), in name order.
    pub set: Vec<(String, Option<String>)>,
}

/// The name `setenv(3)` refuses: empty, or holding `=`.
fn invalid(name: &str) -> bool {
    name.is_empty() || name.contains('=')
}

impl Overlay {
    /// `name`'s value: as changed here, else from `base`.
    pub fn lookup(&self, name: &str, base: EnvLookup<'_>) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        match &self.kept {
            Some(keep) if !keep.iter().any(|k| k == name) => None,
            _ => base(name),
        }
    }

    /// Applies one line of the `global` section (a line HAProxy would refuse changes nothing;
    /// [`check`] reports it).
    pub fn apply(&mut self, words: &[String], base: EnvLookup<'_>) {
        let arg = |i: usize| words.get(i).map_or("", String::as_str);
        match arg(0) {
            kw @ ("setenv" | "presetenv") if !arg(2).is_empty() && words.len() <= 4 => {
                let name = arg(1);
                if invalid(name) || (kw == "presetenv" && self.lookup(name, base).is_some()) {
                    return;
                }
                self.set(name, Some(arg(2)));
            }
            "unsetenv" => {
                for name in words[1..].iter().take_while(|n| !invalid(n)) {
                    self.set(name, None);
                }
            }
            "resetenv" => {
                let keep: Vec<String> = words[1..].to_vec();
                let gone: Vec<String> =
                    self.vars.keys().filter(|k| !keep.contains(k)).cloned().collect();
                for name in gone {
                    self.set(&name, None);
                }
                self.kept = Some(match self.kept.take() {
                    Some(before) => keep.into_iter().filter(|k| before.contains(k)).collect(),
                    None => keep,
                });
                crate::addr_env::retain(|name| self.lookup(name, base).is_some());
            }
            _ => {}
        }
    }

    fn set(&mut self, name: &str, value: Option<&str>) {
        crate::addr_env::set(name, value);
        self.vars.insert(name.to_string(), value.map(str::to_string));
    }

    /// What the program applies to its environment.
    pub fn changes(&self) -> Changes {
        let mut set: Vec<_> = self.vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        set.sort();
        Changes { keep_only: self.kept.clone(), set }
    }
}

/// Whether `kw` is one of these keywords.
pub fn is_env_keyword(kw: &str) -> bool {
    matches!(kw, "setenv" | "presetenv" | "unsetenv" | "resetenv")
}

/// Checks a `setenv`/`presetenv`/`unsetenv`/`resetenv` line, with HAProxy's messages (the
/// change itself was made while the files were read, by [`Overlay::apply`]).
pub fn check(line: &Line, diags: &mut Diags) {
    let kw = line.arg(0);
    let at = &line.span;
    let alert = |diags: &mut Diags, msg: String| {
        diags.list.push(Diagnostic::alert(None, format!("parsing [{at}]: {msg}")));
    };
    match kw {
        "setenv" | "presetenv" => {
            if let Some(extra) = line.words.get(4) {
                return diags
                    .alert(line, format!("'{kw}' cannot handle unexpected argument '{extra}'."));
            }
            if line.arg(2).is_empty() {
                return alert(diags, format!("'{kw}' expects a name and a value."));
            }
            if invalid(line.arg(1)) {
                let name = line.arg(1);
                alert(diags, format!("'{kw}' failed on variable '{name}' : Invalid argument."));
            }
        }
        "unsetenv" => {
            if line.arg(1).is_empty() {
                return alert(diags, format!("'{kw}' expects at least one variable name."));
            }
            if let Some(name) = line.words[1..].iter().find(|n| invalid(n)) {
                alert(diags, format!("'{kw}' failed on variable '{name}' : Invalid argument."));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn later_lines_see_the_changes_as_haproxy_makes_them() {
        let base = |n: &str| match n {
            "HOME" => Some("/root".to_string()),
            "PORT" => Some("80".to_string()),
            _ => None,
        };
        let mut o = Overlay::default();
        o.apply(&words("presetenv PORT 8080"), &base);
        o.apply(&words("presetenv ADDR 10.0.0.1"), &base);
        assert_eq!(o.lookup("PORT", &base).as_deref(), Some("80"), "presetenv keeps a value");
        assert_eq!(o.lookup("ADDR", &base).as_deref(), Some("10.0.0.1"));
        o.apply(&words("setenv PORT 8080"), &base);
        assert_eq!(o.lookup("PORT", &base).as_deref(), Some("8080"));
        o.apply(&words("unsetenv ADDR"), &base);
        assert_eq!(o.lookup("ADDR", &base), None);
        o.apply(&words("resetenv PORT"), &base);
        assert_eq!(o.lookup("HOME", &base), None, "resetenv drops what it does not name");
        assert_eq!(o.lookup("PORT", &base).as_deref(), Some("8080"));
        let c = o.changes();
        assert_eq!(c.keep_only, Some(vec!["PORT".to_string()]));
        assert_eq!(c.set, [("ADDR".into(), None), ("PORT".into(), Some("8080".into()))]);
        crate::addr_env::clear();
    }
}
