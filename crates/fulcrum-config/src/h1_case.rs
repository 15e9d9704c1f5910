//! `h1-case-adjust <from> <to>` and `h1-case-adjust-file <file>` (global): the case HTTP/1
//! header names are given on the way out by proxies with `option h1-case-adjust-bogus-client`
//! (responses to clients) or `option h1-case-adjust-bogus-server` (requests to servers), for
//! peers that wrongly read names case-sensitively. Read with HAProxy 2.6's checks and messages
//! (`mux_h1.c`: `add_hdr_case_adjust`, and the file's reader, which the binary runs when it
//! makes its plan). Must not touch: headers themselves.

use crate::args::Diags;
use crate::lexer::Line;

/// The adjustments: `(from, to)` in the order read (the file's come after).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaseAdjust {
    pub pairs: Vec<(String, String)>,
    /// `h1-case-adjust-file` (the last one given).
    pub file: Option<std::path::PathBuf>,
}

impl CaseAdjust {
    /// HAProxy's `add_hdr_case_adjust`: `to` must be given, differ from `from` only in case,
    /// and `from` (any case) be new.
    pub fn add(&mut self, from: &str, to: &str) -> Result<(), String> {
        if to.is_empty() {
            return Err("expect <to>".into());
        }
        if !from.eq_ignore_ascii_case(to) {
            // (HAProxy's spelling.)
            return Err("<from> and <to> must not differ execpt the case".into());
        }
        if self.pairs.iter().any(|(f, _)| f.eq_ignore_ascii_case(from)) {
            return Err(format!("duplicate entry '{from}'"));
        }
        self.pairs.push((from.to_string(), to.to_string()));
        Ok(())
    }

    /// Adds the lines of an `h1-case-adjust-file` (`<from> <to>` each; blank lines and lines
    /// starting with `#` skipped), as HAProxy's post-parser reads it: the first bad line stops
    /// the reading with `Err(HAProxy's message)`.
    pub fn add_file(&mut self, name: &str, text: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start_matches([' ', '\t']);
            if line.is_empty() || line.starts_with(['#', '\r']) {
                continue;
            }
            let key_end = line.find([' ', '\t', '\r']).unwrap_or(line.len());
            let (from, rest) = line.split_at(key_end);
            let rest = rest.trim_start_matches([' ', '\t']);
            let value = rest.split('\r').next().unwrap_or("").trim_end_matches([' ', '\t']);
            if let Err(e) = self.add(from, value) {
                return Err(format!(
                    "h1-headers-case-adjust-file '{name}' : {e} at line {}.",
                    i + 1
                ));
            }
        }
        Ok(())
    }
}

/// `h1-case-adjust` / `h1-case-adjust-file` lines of the global section.
pub fn line(kw: &str, line: &Line, c: &mut CaseAdjust, diags: &mut Diags) {
    let max = if kw == "h1-case-adjust" { 3 } else { 2 };
    if !crate::args::no_extra(line, max, kw, diags) {
        return;
    }
    if kw == "h1-case-adjust-file" {
        match line.arg(1) {
            "" => diags.alert(line, format!("'{kw}' expects <file> as argument.")),
            f => c.file = Some(f.into()),
        }
        return;
    }
    let (from, to) = (line.arg(1), line.arg(2));
    if from.is_empty() || to.is_empty() {
        return diags.alert(line, format!("'{kw}' expects <from> and <to> as argument."));
    }
    if let Err(e) = c.add(from, to) {
        diags.alert(line, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_files_are_checked_as_haproxy_checks_them() {
        let mut c = CaseAdjust::default();
        assert_eq!(c.add("content-length", "Content-Length"), Ok(()));
        assert_eq!(
            c.add("Content-Length", "CONTENT-LENGTH"),
            Err("duplicate entry 'Content-Length'".into())
        );
        assert_eq!(
            c.add("x-a", "X-B"),
            Err("<from> and <to> must not differ execpt the case".into())
        );
        let text = "# names\n\n  x-one   X-One  \nx-two\tX-TWO\r\nx-three\n";
        assert_eq!(
            c.add_file("h.txt", text),
            Err("h1-headers-case-adjust-file 'h.txt' : expect <to> at line 5.".into())
        );
        let names: Vec<&str> = c.pairs.iter().map(|p| p.1.as_str()).collect();
        assert_eq!(names, ["Content-Length", "X-One", "X-TWO"]);
    }
}
