//! HAProxy's `h1-case-adjust` map, compiled once per plan: the case HTTP/1 header names are
//! given on the way out when a proxy sets `option h1-case-adjust-bogus-client|server`
//! (`fulcrum_http::Head::adjust_name_case` applies it). The `h1-case-adjust-file` is read here,
//! with HAProxy's messages.
//!
//! Must not touch: heads, sessions.

use std::collections::HashMap;

/// Lower-case name -> the name to send.
#[derive(Debug, Default)]
pub struct CaseMap(HashMap<Vec<u8>, Vec<u8>>);

impl CaseMap {
    /// The global section's pairs, then its file's; `Err` with HAProxy's message when the file
    /// cannot be read or holds a bad line. `Ok(None)` when there is nothing to adjust.
    pub fn from_config(c: &fulcrum_config::h1_case::CaseAdjust) -> Result<Option<CaseMap>, String> {
        let mut all = c.clone();
        if let Some(path) = &c.file {
            let name = path.display().to_string();
            let text = std::fs::read(path).map_err(|_| {
                format!("h1-headers-case-adjust-file '{name}': failed to open file.")
            })?;
            all.add_file(&name, &String::from_utf8_lossy(&text))?;
        }
        if all.pairs.is_empty() {
            return Ok(None);
        }
        let map = all
            .pairs
            .iter()
            .map(|(f, t)| (f.to_ascii_lowercase().into_bytes(), t.clone().into_bytes()));
        Ok(Some(CaseMap(map.collect())))
    }

    /// The name `name` (any case) is sent as, if the map has it.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        // Names are at most 255 bytes (the parser's limit): lowered on the stack.
        let mut low = [0u8; 256];
        let low = low.get_mut(..name.len())?;
        low.copy_from_slice(name);
        low.make_ascii_lowercase();
        self.0.get(&low[..]).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_finds_names_in_any_case_and_reads_its_file() {
        let dir = std::env::temp_dir().join(format!("fulcrum-case-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("names");
        std::fs::write(&file, "x-two X-Two\n").expect("file");
        let mut c = fulcrum_config::h1_case::CaseAdjust::default();
        c.add("x-one", "X-ONE").expect("pair");
        c.file = Some(file.clone());
        let m = CaseMap::from_config(&c).expect("reads").expect("a map");
        assert_eq!(m.get(b"X-One"), Some(&b"X-ONE"[..]));
        assert_eq!(m.get(b"x-two"), Some(&b"X-Two"[..]));
        assert_eq!(m.get(b"x-three"), None);
        c.file = Some(dir.join("missing"));
        let e = CaseMap::from_config(&c).expect_err("no file");
        assert!(e.ends_with("missing': failed to open file."), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
