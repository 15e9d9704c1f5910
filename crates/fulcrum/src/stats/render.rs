//! Rows and info lines as text: HAProxy's CSV (`show stat`, `;csv`), typed output
//! (`show stat typed`, `show info typed`) and JSON (`show stat json`, `show info json`).

use std::fmt::Write as _;

use super::fields::{nature_word, origin_word, scope_word, MODULES, NAMES};
use super::{Field, Row, Val};

/// The CSV header line (`# pxname,svname,...,`), with the `-` column before the modules'.
pub fn csv_header(out: &mut String) {
    out.push_str("# ");
    for (i, name) in NAMES.iter().enumerate() {
        if i == MODULES {
            out.push_str("-,");
        }
        out.push_str(name);
        out.push(',');
    }
    out.push('\n');
}

/// Writes a CSV value, quoted as HAProxy's `csv_enc` quotes (only when it holds a comma, a
/// quote or a line break; quotes doubled).
fn csv_value(out: &mut String, v: &Val) {
    match v {
        Val::Str(s) if s.contains([',', '"', '\n', '\r']) => {
            out.push('"');
            out.push_str(&s.replace('"', "\"\""));
            out.push('"');
        }
        v => {
            let _ = write!(out, "{v}");
        }
    }
}

pub fn csv_row(out: &mut String, row: &Row) {
    for (i, f) in row.fields.iter().enumerate() {
        if i == MODULES {
            out.push_str("-,");
        }
        if let Some(f) = f {
            csv_value(out, &f.val);
        }
        out.push(',');
    }
    out.push('\n');
}

/// `show stat typed`: one line per present field,
/// `F.<iid>.<sid>.<pos>.<name>.<pid>:<tags>:<type>:<value>`.
pub fn typed_row(out: &mut String, row: &Row) {
    for (i, f) in row.fields.iter().enumerate() {
        let Some(Field { tags, val }) = f else { continue };
        let _ = writeln!(
            out,
            "{}.{}.{}.{i}.{}.1:{}:{}:{val}",
            row.obj.letter(),
            row.iid,
            row.sid,
            NAMES[i],
            std::str::from_utf8(tags).unwrap_or("???"),
            val.type_name(),
        );
    }
}

/// A JSON string with HAProxy's escapes.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_value(out: &mut String, v: &Val) {
    let _ = write!(out, "{{\"type\":\"{}\",\"value\":", v.type_name());
    match v {
        Val::Str(s) => json_str(out, s),
        v => {
            let _ = write!(out, "{v}");
        }
    }
    out.push('}');
}

fn json_tags(out: &mut String, t: &[u8; 3]) {
    let _ = write!(
        out,
        "\"tags\":{{\"origin\":\"{}\",\"nature\":\"{}\",\"scope\":\"{}\"}}",
        origin_word(t[0]),
        nature_word(t[1]),
        scope_word(t[2])
    );
}

/// `show stat json`: an array of rows, each an array of its present fields.
pub fn json_rows(out: &mut String, rows: &[Row]) {
    out.push('[');
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('[');
        let mut first = true;
        for (i, f) in row.fields.iter().enumerate() {
            let Some(Field { tags, val }) = f else { continue };
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(
                out,
                "{{\"objType\":\"{}\",\"proxyId\":{},\"id\":{},\"field\":{{\"pos\":{i},\"name\":\"{}\"}},\"processNum\":1,",
                row.obj.word(),
                row.iid,
                row.sid,
                NAMES[i],
            );
            json_tags(out, tags);
            out.push_str(",\"value\":");
            json_value(out, val);
            out.push('}');
        }
        out.push(']');
    }
    out.push_str("]\n");
}

/// One `show info` line.
pub struct InfoLine {
    pub pos: usize,
    pub name: &'static str,
    pub tags: &'static str,
    pub val: Val,
}

pub fn info_plain(out: &mut String, lines: &[InfoLine]) {
    for l in lines {
        let _ = writeln!(out, "{}: {}", l.name, l.val);
    }
}

pub fn info_typed(out: &mut String, lines: &[InfoLine]) {
    for l in lines {
        let _ = writeln!(out, "{}.{}.1:{}:{}:{}", l.pos, l.name, l.tags, l.val.type_name(), l.val);
    }
}

pub fn info_json(out: &mut String, lines: &[InfoLine]) {
    out.push('[');
    for (n, l) in lines.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"field\":{{\"pos\":{},\"name\":\"{}\"}},\"processNum\":1,",
            l.pos, l.name
        );
        let t = l.tags.as_bytes();
        json_tags(out, &[t[0], t[1], t[2]]);
        out.push_str(",\"value\":");
        json_value(out, &l.val);
        out.push('}');
    }
    out.push_str("]\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{fields, ObjType};

    #[test]
    fn the_header_has_haproxy_s_columns_and_the_modules_separator() {
        let mut h = String::new();
        csv_header(&mut h);
        assert!(h.starts_with("# pxname,svname,qcur,"));
        assert!(h.contains(",agg_check_status,-,ssl_sess,"));
        assert!(h.ends_with("h1_spliced_bytes_out,\n"));
        assert_eq!(h.matches(',').count(), 128);
        let mut v = fields::NAMES.to_vec();
        v.sort_unstable();
        assert!(v.windows(2).all(|w| w[0] != w[1]), "names are unique");
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let mut r = Row::new(ObjType::Server, 3, 1);
        r.set("pxname", "KNS", Val::Str("be".into()));
        r.set("last_chk", "SGP", Val::Str("a, \"b\"".into()));
        let mut out = String::new();
        csv_row(&mut out, &r);
        assert!(out.starts_with("be,,"));
        assert!(out.contains(",\"a, \"\"b\"\"\","));
        assert_eq!(out.matches(",-,").count(), 1);
    }

    #[test]
    fn typed_and_json_carry_positions_tags_and_types() {
        let mut r = Row::new(ObjType::Frontend, 2, 0);
        r.set("scur", "MGP", Val::U32(7));
        let mut t = String::new();
        typed_row(&mut t, &r);
        assert_eq!(t, "F.2.0.4.scur.1:MGP:u32:7\n");
        let mut j = String::new();
        json_rows(&mut j, &[r]);
        assert_eq!(
            j,
            "[[{\"objType\":\"Frontend\",\"proxyId\":2,\"id\":0,\"field\":{\"pos\":4,\"name\":\"scur\"},\"processNum\":1,\"tags\":{\"origin\":\"Metric\",\"nature\":\"Gauge\",\"scope\":\"Process\"},\"value\":{\"type\":\"u32\",\"value\":7}}]]\n"
        );
    }
}
