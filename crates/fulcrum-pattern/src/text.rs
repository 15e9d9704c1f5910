//! Line splitting for `-f` pattern files and map files, as HAProxy's readers do it
//! (`pat_ref_read_from_file` and `pat_ref_read_from_file_smp`).
//!
//! Owns: which lines are comments or empty, what is stripped, and the 1-based line numbers.
//! Must not touch: parsing of the values themselves (done by the pattern sets).
//!
//! Pattern files: a line whose very first character is `#` is a comment (so a pattern
//! starting with `#` can be written with a leading blank); leading spaces and tabs are
//! stripped; the pattern ends at the first CR or LF; trailing blanks are *kept* and are part
//! of the pattern; lines empty after stripping are skipped.
//!
//! Map files: same comment rule and leading strip; the key is the first run of characters
//! other than space, tab, CR and LF; the value is the rest of the line after the blanks that
//! follow the key, up to the first CR or LF, with trailing spaces and tabs removed. A key
//! alone on its line has an empty value.

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn cut_at_eol(s: &str) -> &str {
    match s.find(['\r', '\n']) {
        Some(p) => &s[..p],
        None => s,
    }
}

/// The patterns of a `-f` file with their line numbers.
pub(crate) fn pattern_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').enumerate().filter_map(|(i, line)| {
        if line.starts_with('#') {
            return None;
        }
        let pattern = cut_at_eol(line.trim_start_matches([' ', '\t']));
        (!pattern.is_empty()).then_some((i + 1, pattern))
    })
}

/// The `(key, value)` entries of a map file with their line numbers.
pub(crate) fn map_lines(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    text.split('\n').enumerate().filter_map(|(i, line)| {
        if line.starts_with('#') {
            return None;
        }
        let rest = cut_at_eol(line.trim_start_matches([' ', '\t']));
        if rest.is_empty() {
            return None;
        }
        let key_end = rest.bytes().position(is_blank).unwrap_or(rest.len());
        let (key, rest) = rest.split_at(key_end);
        let value = rest.trim_matches([' ', '\t']);
        Some((i + 1, key, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_files_skip_comments_and_blank_lines_and_keep_trailing_blanks() {
        let text = "# comment\n\n   \t\n  alpha\n\tbeta  \r\n #kept\ngamma\rdelta\nlast";
        let got: Vec<_> = pattern_lines(text).collect();
        assert_eq!(got, vec![(4, "alpha"), (5, "beta  "), (6, "#kept"), (7, "gamma"), (8, "last")]);
    }

    #[test]
    fn map_files_split_key_and_value_and_trim_the_value() {
        let text = "#c\n  key1   value with  spaces  \t\r\nkeyonly\n\tk2\tv2\n #k3 v3\n\n";
        let got: Vec<_> = map_lines(text).collect();
        assert_eq!(
            got,
            vec![
                (2, "key1", "value with  spaces"),
                (3, "keyonly", ""),
                (4, "k2", "v2"),
                (5, "#k3", "v3")
            ]
        );
    }
}
