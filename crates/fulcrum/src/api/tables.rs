//! The runtime API's stick-table commands: `show table [<t> [filters|key <k>]]`,
//! `clear table <t> [filters|key <k>]`, `set table <t> key <k> [data.<type> <v>]*`, with
//! HAProxy 2.6's outputs and messages.

use std::fmt::Write as _;
use std::sync::Arc;

use fulcrum_config::{CliLevel, DataType, TableKey};

use crate::rules::stick::parse_key;
use crate::stick::{freq, now, tick, Entry, Key, Table, Tables};

fn type_name(k: TableKey) -> &'static str {
    match k {
        TableKey::Ip => "ip",
        TableKey::Ipv6 => "ipv6",
        TableKey::Integer => "integer",
        TableKey::String { .. } => "string",
        TableKey::Binary { .. } => "binary",
    }
}

fn header(t: &Table, out: &mut String) {
    let _ = writeln!(
        out,
        "# table: {}, type: {}, size:{}, used:{}",
        t.name,
        type_name(t.key),
        t.size,
        t.used()
    );
}

/// A string key as HAProxy prints it (escaped, up to a NUL).
fn show_key(t: &Table, k: &Key) -> String {
    match (k, t.key) {
        (Key::Int(i), _) => (*i as u32).to_string(),
        (Key::Bytes(b), TableKey::String { .. }) => {
            let mut s = String::new();
            for &c in b.iter().take_while(|c| **c != 0) {
                match c {
                    b' ' => s.push_str("\\ "),
                    b'=' => s.push_str("\\="),
                    b'\\' => s.push_str("\\\\"),
                    b'\t' => s.push_str("\\t"),
                    b'\n' => s.push_str("\\n"),
                    b'\r' => s.push_str("\\r"),
                    0x1b => s.push_str("\\e"),
                    0x21..=0x7e => s.push(c as char),
                    _ => {
                        let _ = write!(s, "\\x{c:02X}");
                    }
                }
            }
            s
        }
        (k, kt) => k.show(kt),
    }
}

/// The order HAProxy keeps keys in (the stored bytes compared as memory).
fn sort_bytes(k: &Key) -> Vec<u8> {
    match k {
        Key::V4(a) => a.to_vec(),
        Key::V6(a) => a.to_vec(),
        Key::Int(i) => (*i as u32).to_le_bytes().to_vec(),
        Key::Bytes(b) => b.to_vec(),
    }
}

/// One entry's line.
fn entry_line(t: &Table, e: &Arc<Entry>, out: &mut String) {
    let now = now();
    let uses = e.trackers.load(std::sync::atomic::Ordering::Relaxed);
    let exp = t.expires_in(e, now).unwrap_or(0);
    let _ = write!(out, "{:p}: key={} use={uses} exp={exp}", Arc::as_ptr(e), show_key(t, &e.key));
    let w = e.data();
    for s in &t.layout.stored {
        let name = s.ty.name();
        for i in 0..s.elems as u16 {
            let label = if s.ty.is_array() {
                match name.split_once('_') {
                    Some((a, b)) => format!("{a}{i}_{b}"),
                    None => format!("{name}{i}"),
                }
            } else {
                name.to_string()
            };
            if s.ty == DataType::ServerKey {
                let id = freq::read(&t.layout, &w, s.ty, 0, 0).unwrap_or(0);
                match crate::stick::dict::name(id) {
                    Some(n) => {
                        let _ = write!(out, " {label}={n}");
                    }
                    None => {
                        let _ = write!(out, " {label}=-");
                    }
                }
                continue;
            }
            let v = freq::read(&t.layout, &w, s.ty, i, tick(now)).unwrap_or(0);
            let v = match s.ty {
                DataType::ServerId => (v as u32 as i32).to_string(),
                _ => v.to_string(),
            };
            if s.ty.is_rate() {
                let _ = write!(out, " {label}({})={v}", freq::period(&t.layout, s.ty));
            } else {
                let _ = write!(out, " {label}={v}");
            }
        }
    }
    out.push('\n');
}

/// A `data.<type> <op> <value>` filter.
struct Filter {
    ty: DataType,
    op: String,
    value: i64,
}

impl Filter {
    fn keeps(&self, t: &Table, e: &Entry) -> bool {
        let v = t.read(e, self.ty, 0).unwrap_or(0) as i64;
        match self.op.as_str() {
            "eq" => v == self.value,
            "ne" => v != self.value,
            "le" => v <= self.value,
            "ge" => v >= self.value,
            "lt" => v < self.value,
            _ => v > self.value,
        }
    }
}

/// What follows the table name: filters, or a key.
enum Select {
    All(Vec<Filter>),
    Key(String),
}

fn select(t: &Table, args: &[String], verb: &str) -> Result<Select, String> {
    let a = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    if a(3) == "key" {
        if a(4).is_empty() {
            return Err("Key value expected".into());
        }
        return Ok(Select::Key(a(4).to_string()));
    }
    let mut filters = Vec::new();
    let mut i = 3;
    while !a(i).is_empty() {
        let n = filters.len() + 1;
        if filters.len() == 4 {
            return Err(format!(
                "Detected extra data in filter, {}th word of input, after '{}'",
                i + 1,
                a(i - 1)
            ));
        }
        let Some(name) = a(i).strip_prefix("data.") else {
            if filters.is_empty() {
                return Err(if verb == "clear" {
                    "Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>".into()
                } else {
                    "Optional argument only supports \"data.<store_data_type>\" <operator> <value> and key <key>".into()
                });
            }
            return Err(format!("Filter entry #{n}: Unknown data type"));
        };
        let Some(ty) = DataType::from_name(name) else {
            return Err(format!("Filter entry #{n}: Unknown data type"));
        };
        if !t.layout.has(ty) {
            return Err(format!("Filter entry #{n}: Data type not stored in this table"));
        }
        let op = a(i + 1);
        if !matches!(op, "eq" | "ne" | "le" | "ge" | "lt" | "gt") {
            return Err(format!(
                "Filter entry #{n}: Require and operator among \"eq\", \"ne\", \"le\", \"ge\", \"lt\", \"gt\""
            ));
        }
        let Ok(value) = a(i + 2).parse::<i64>() else {
            return Err(format!(
                "Filter entry #{n}: Require a valid integer value to compare against"
            ));
        };
        filters.push(Filter { ty, op: op.to_string(), value });
        i += 3;
    }
    Ok(Select::All(filters))
}

/// Parses a key typed on the CLI as HAProxy does (`ip` is lenient: what does not parse is
/// 0.0.0.0).
fn cli_key(t: &Table, text: &str, verb: &str) -> Result<Key, String> {
    match t.key {
        TableKey::Binary { .. } => {
            let what = match verb {
                "show" => "Showing keys from",
                "clear" => "Removing keys from",
                _ => "Inserting keys into",
            };
            Err(format!(
                "{what} tables of type other than ip, ipv6, string and integer is not supported"
            ))
        }
        TableKey::Ip => Ok(parse_key(t.key, text).unwrap_or(Key::V4([0; 4]))),
        TableKey::Integer => {
            let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<u64>() {
                Ok(v) if v <= u64::from(u32::MAX) => Ok(Key::Int(v as u32 as i32)),
                _ => Err("Invalid key".into()),
            }
        }
        _ => parse_key(t.key, text).ok_or_else(|| "Invalid key".into()),
    }
}

/// `show|clear|set table ...`. `level`: the session's (operators may look at entries and
/// change them).
pub fn run(tables: &Tables, verb: &str, args: &[String], level: CliLevel, out: &mut String) {
    let a = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    if a(2).is_empty() {
        match verb {
            "show" => {
                let mut all: Vec<&Arc<Table>> = tables.values().collect();
                all.iter().for_each(|t| t.purge(now()));
                all.sort_by_key(|t| std::cmp::Reverse(t.order));
                for t in all {
                    header(t, out);
                }
            }
            "clear" => out.push_str("Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>\n"),
            _ => out.push_str("Required arguments: <table> key <key> [data.<store_data_type> <value>]*\n"),
        }
        return;
    }
    let Some(t) = tables.get(a(2)) else {
        out.push_str("No such table\n");
        return;
    };
    // What has expired goes before anything is shown or counted.
    t.purge(now());
    let oper = level >= CliLevel::Operator;
    if verb == "set" && !a(3).is_empty() && a(3) != "key" {
        out.push_str(
            "content-based lookup is only supported with the \"show\" and \"clear\" actions\n",
        );
        return;
    }
    let sel = match select(t, args, verb) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "{e}");
            return;
        }
    };
    match (verb, sel) {
        ("set", Select::All(_)) if !a(3).is_empty() => out.push_str(
            "content-based lookup is only supported with the \"show\" and \"clear\" actions\n",
        ),
        ("set", Select::All(_)) => {}
        ("set", Select::Key(k)) => set(t, &k, &args[5..], oper, out),
        (_, Select::Key(_)) if !oper => out.push_str("Permission denied\n"),
        ("show", Select::Key(k)) => match cli_key(t, &k, verb) {
            Err(e) => {
                let _ = writeln!(out, "{e}");
            }
            Ok(key) => {
                if let Some(e) = t.lookup(&key, now()) {
                    header(t, out);
                    entry_line(t, &e, out);
                }
            }
        },
        ("show", Select::All(filters)) => {
            header(t, out);
            if !oper {
                out.push_str("# contents not dumped due to insufficient privileges\n");
                return;
            }
            let mut entries = t.entries(now());
            entries.sort_by_cached_key(|e| sort_bytes(&e.key));
            for e in entries.iter().filter(|e| filters.iter().all(|f| f.keeps(t, e))) {
                entry_line(t, e, out);
            }
        }
        (_, _) if !oper => out.push_str("Permission denied\n"),
        (_, Select::Key(k)) => match cli_key(t, &k, verb) {
            Err(e) => {
                let _ = writeln!(out, "{e}");
            }
            Ok(key) => {
                if t.lookup(&key, now()).is_some() && !t.remove(&key) {
                    out.push_str("Entry currently in use, cannot remove\n");
                }
            }
        },
        (_, Select::All(filters)) => {
            for e in t.entries(now()) {
                if filters.iter().all(|f| f.keeps(t, &e)) {
                    t.remove(&e.key);
                }
            }
        }
    }
}

/// One entry as `show table <t>` prints it (`0x..: key=<k> use=0 exp=0 server_id=3
/// server_key=s3 gpc0=1 ...`, the id optional), made in `t` with its stored counters and
/// server (for `fulcrum explain --table`). Rates, `use` and `exp` are not restored.
pub fn load_line(t: &Table, line: &str) -> Result<(), String> {
    let line = match line.split_once(": ") {
        Some((id, rest)) if id.starts_with("0x") => rest,
        _ => line,
    };
    let mut words = line.split_whitespace();
    let key = words
        .next()
        .and_then(|w| w.strip_prefix("key="))
        .ok_or_else(|| format!("'{line}': no 'key=' first"))?;
    let key = cli_key(t, key, "set")?;
    let now = now();
    let e = t.get_or_create(key, now).ok_or("Unable to allocate a new entry")?;
    e.touch(now);
    for w in words {
        let Some((label, v)) = w.split_once('=') else {
            return Err(format!("'{w}': expected <data>=<value>"));
        };
        let Some(ty) = DataType::from_name(label).filter(|ty| t.layout.has(*ty)) else {
            continue; // `use`, `exp`, rates (`conn_rate(10000)`), array elements
        };
        match ty {
            DataType::ServerKey if v != "-" => {
                freq::set(&t.layout, &mut e.data(), ty, 0, crate::stick::dict::intern(v));
            }
            _ if ty.is_rate() || ty == DataType::ServerKey => {}
            _ => {
                let v: i64 = v.parse().map_err(|_| format!("'{w}': not an integer"))?;
                freq::set(&t.layout, &mut e.data(), ty, 0, v as u64);
            }
        }
    }
    Ok(())
}

/// `set table <t> key <k> [data.<type> <v>]*`: the entry is made (and touched) first; each
/// value is set in turn until one is wrong.
fn set(t: &Table, k: &str, rest: &[String], oper: bool, out: &mut String) {
    if !oper {
        out.push_str("Permission denied\n");
        return;
    }
    let key = match cli_key(t, k, "set") {
        Ok(k) => k,
        Err(e) => {
            let _ = writeln!(out, "{e}");
            return;
        }
    };
    let now = now();
    let Some(e) = t.get_or_create(key, now) else {
        out.push_str("Unable to allocate a new entry\n");
        return;
    };
    e.touch(now);
    let mut i = 0;
    while i < rest.len() {
        let Some(name) = rest[i].strip_prefix("data.") else {
            out.push_str("\"data.<type>\" followed by a value expected\n");
            return;
        };
        let Some(v) = rest.get(i + 1) else {
            out.push_str("\"data.<type>\" followed by a value expected\n");
            return;
        };
        let Some(ty) = DataType::from_name(name) else {
            out.push_str("Unknown data type\n");
            return;
        };
        if !t.layout.has(ty) {
            out.push_str("Data type not stored in this table\n");
            return;
        }
        let Ok(v) = v.parse::<i64>() else {
            out.push_str("Require a valid integer value to store\n");
            return;
        };
        if ty != DataType::ServerKey {
            let v = match ty {
                DataType::BytesInCnt | DataType::BytesOutCnt => v as u64,
                _ => u64::from(v as u32),
            };
            freq::set(&t.layout, &mut e.data(), ty, 0, v);
        }
        i += 2;
    }
}
