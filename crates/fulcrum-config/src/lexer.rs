//! Line lexer: turns configuration text into lines of words (HAProxy §2.2-2.3).
//!
//! Owns quoting (`"..."` with escapes and `$VAR` / `${VAR}` / `${VAR-default}` expansion,
//! `'...'` literal), backslash escapes outside quotes, `#` comments, and the file:line span of
//! every line. The environment comes from the caller's lookup; `std::env` is never read.

use std::sync::Arc;

use crate::model::Span;
use crate::EnvLookup;

/// One non-empty configuration line split into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub span: Span,
    pub words: Vec<String>,
}

impl Line {
    /// The word at `i`, or "" when the line is shorter (as HAProxy's `args[i]`).
    pub fn arg(&self, i: usize) -> &str {
        self.words.get(i).map(String::as_str).unwrap_or("")
    }
}

/// Splits a whole file into lines; lines that fail to lex are reported as `(span, message)`.
pub fn lex_source(name: &str, text: &str, env: EnvLookup<'_>) -> (Vec<Line>, Vec<(Span, String)>) {
    let file: Arc<str> = Arc::from(name);
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let span = Span { file: file.clone(), line: i as u32 + 1 };
        match split_words(raw, env) {
            Ok(words) if words.is_empty() => {}
            Ok(words) => lines.push(Line { span, words }),
            Err(msg) => errors.push((span, msg)),
        }
    }
    (lines, errors)
}

/// HAProxy 2.6's refusal of a file whose last line has no line feed (it may have been cut
/// short while written), in its words: the line, and the position after its last byte.
pub fn missing_lf(name: &str, text: &str) -> Option<String> {
    if text.is_empty() || text.ends_with('\n') {
        return None;
    }
    let line = text.matches('\n').count() + 1;
    let position = text.rsplit('\n').next().map_or(0, str::len) + 1;
    Some(format!(
        "parsing [{name}:{line}]: Missing LF on last line, file might have been truncated at \
         position {position}."
    ))
}

/// Splits one line into words, applying quotes, escapes, comments and environment expansion.
pub fn split_words(line: &str, env: EnvLookup<'_>) -> Result<Vec<String>, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                i += 1;
            }
            '#' => break,
            '\\' => {
                in_word = true;
                i = escape(&chars, i, &mut cur);
            }
            '\'' => {
                in_word = true;
                let end = find_close(&chars, i + 1, '\'')
                    .ok_or_else(|| format!("unmatched quote at position {}", i + 1))?;
                cur.extend(&chars[i + 1..end]);
                i = end + 1;
            }
            '"' => {
                in_word = true;
                i = double_quoted(&chars, i, &mut cur, &mut words, env)?;
            }
            _ => {
                in_word = true;
                cur.push(c);
                i += 1;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Handles a backslash at `i`; returns the next index.
fn escape(chars: &[char], i: usize, cur: &mut String) -> usize {
    match chars.get(i + 1) {
        Some(&n @ (' ' | '#' | '\\' | '"' | '\'' | '$')) => {
            cur.push(n);
            i + 2
        }
        Some(&'t') => {
            cur.push('\t');
            i + 2
        }
        Some(&'n') => {
            cur.push('\n');
            i + 2
        }
        Some(&'r') => {
            cur.push('\r');
            i + 2
        }
        _ => {
            cur.push('\\');
            i + 1
        }
    }
}

fn find_close(chars: &[char], from: usize, q: char) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j] == q)
}

/// Parses a double-quoted string starting at the quote at `start`; returns the index after the
/// closing quote. `${VAR[*]}` splits the value into several words, as HAProxy does.
fn double_quoted(
    chars: &[char],
    start: usize,
    cur: &mut String,
    words: &mut Vec<String>,
    env: EnvLookup<'_>,
) -> Result<usize, String> {
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(format!("unmatched quote at position {}", start + 1));
        };
        match c {
            '"' => return Ok(i + 1),
            '\\' => i = escape(chars, i, cur),
            '$' => i = expand_var(chars, i, cur, words, env)?,
            _ => {
                cur.push(c);
                i += 1;
            }
        }
    }
}

fn is_var_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_var_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands `$NAME`, `${NAME}`, `${NAME-default}` or `${NAME[*]}` at `i` (the `$`).
fn expand_var(
    chars: &[char],
    i: usize,
    cur: &mut String,
    words: &mut Vec<String>,
    env: EnvLookup<'_>,
) -> Result<usize, String> {
    let braced = chars.get(i + 1) == Some(&'{');
    let name_start = if braced { i + 2 } else { i + 1 };
    // As HAProxy: inside double quotes, a `$` must start a variable name (`\$` for the sign).
    match chars.get(name_start) {
        Some(&c) if is_var_first(c) => {}
        _ => {
            return Err(format!(
                "forbidden first char in environment variable name at position {}",
                name_start + 1
            ))
        }
    }
    let mut j = name_start;
    while j < chars.len() && is_var_char(chars[j]) {
        j += 1;
    }
    let name: String = chars[name_start..j].iter().collect();
    let value = env(&name);
    if !braced {
        cur.push_str(value.as_deref().unwrap_or(""));
        return Ok(j);
    }
    let mut split = false;
    let mut default = None;
    if chars[j..].starts_with(&['[', '*', ']']) {
        split = true;
        j += 3;
    } else if chars.get(j) == Some(&'-') {
        let end = find_close(chars, j + 1, '}');
        let end = end.ok_or_else(|| format!("missing '}}' after '${{' at position {}", i + 1))?;
        default = Some(chars[j + 1..end].iter().collect::<String>());
        j = end;
    }
    if chars.get(j) != Some(&'}') {
        return Err(format!("missing '}}' after '${{' at position {}", i + 1));
    }
    let value = value.or(default).unwrap_or_default();
    if split {
        let mut parts = value.split_whitespace();
        if let Some(first) = parts.next() {
            cur.push_str(first);
        }
        for p in parts {
            words.push(std::mem::take(cur));
            cur.push_str(p);
        }
    } else {
        cur.push_str(&value);
    }
    Ok(j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "FOO" => Some("foo".into()),
            "EMPTY" => Some(String::new()),
            "LIST" => Some("a b  c".into()),
            _ => None,
        }
    }

    fn w(s: &str) -> Vec<String> {
        split_words(s, &env).expect("lexes")
    }

    #[test]
    fn blanks_and_comments() {
        assert_eq!(w("  bind\t:80   name x "), ["bind", ":80", "name", "x"]);
        assert_eq!(w("x#y"), ["x"]);
        assert_eq!(w("x #y z"), ["x"]);
        assert_eq!(w("# only a comment"), Vec::<String>::new());
        assert_eq!(w("\"x#y\""), ["x#y"]);
    }

    #[test]
    fn escapes_outside_quotes() {
        assert_eq!(w(r"a\ b\#c"), ["a b#c"]);
        assert_eq!(w(r#"\\ \" \' \$"#), ["\\", "\"", "'", "$"]);
        assert_eq!(w(r"a\qb"), [r"a\qb"]);
    }

    #[test]
    fn double_quotes_expand_env() {
        assert_eq!(w(r#""a${FOO}b""#), ["afoob"]);
        assert_eq!(w(r#""a$FOO b""#), ["afoo b"]);
        assert_eq!(w(r#""u[${UNSET}]""#), ["u[]"]);
        assert_eq!(w(r#""d[${UNSET-def}]" "${FOO-def}""#), ["d[def]", "foo"]);
        assert_eq!(w(r#""${EMPTY-def}""#), [""]);
        assert_eq!(w(r#""a\"b\\c\$d""#), ["a\"b\\c$d"]);
        assert_eq!(w(r#"x"${LIST[*]}"y"#), ["xa", "b", "cy"]);
        // HAProxy 2.6 refuses a `$` that starts no name inside double quotes.
        assert_eq!(
            split_words(r#""5$""#, &env),
            Err("forbidden first char in environment variable name at position 4".into())
        );
    }

    #[test]
    fn single_quotes_and_bare_words_are_literal() {
        assert_eq!(w("'q${FOO}q'"), ["q${FOO}q"]);
        assert_eq!(w("${FOO}"), ["${FOO}"]);
        assert_eq!(w("'a b'c\"d\""), ["a bcd"]);
        assert_eq!(w("\"\""), [""]);
    }

    #[test]
    fn lex_errors() {
        assert!(split_words("\"abc", &env).is_err());
        assert!(split_words("'abc", &env).is_err());
        let e = split_words("\"${ } x\"", &env).expect_err("bad var");
        assert!(e.contains("forbidden first char"), "{e}");
        assert!(split_words("\"${FOO\"", &env).is_err());
    }

    #[test]
    fn spans_are_one_based_and_skip_blank_lines() {
        let (lines, errs) = lex_source("t.cfg", "\nglobal\n  # c\n  daemon\n\"x", &env);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].span.to_string(), "t.cfg:2");
        assert_eq!(lines[1].words, ["daemon"]);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0.line, 5);
    }
}
