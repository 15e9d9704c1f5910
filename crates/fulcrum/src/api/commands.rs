//! The runtime API's commands: the table (words, level, usage line), `help` and HAProxy's
//! suggestions for an unknown command, and the commands about the process and proxies.
//! Server commands are in `servers`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use fulcrum_config::CliLevel;

use super::{Session, View};
use crate::stats::{render, rows, ObjType};

/// One command: its leading words, the level it needs, its usage and help text.
struct Cmd {
    words: &'static [&'static str],
    level: CliLevel,
    usage: &'static str,
    help: &'static str,
}

use CliLevel::{Admin, Operator, User};

/// Every command Fulcrum answers, sorted as `help` lists them.
#[rustfmt::skip]
const COMMANDS: &[Cmd] = &[
    Cmd { words: &["add", "acl"], level: Operator, usage: "add acl [@<ver>] <acl> <pattern>", help: "add an acl entry" },
    Cmd { words: &["add", "server"], level: Admin, usage: "add server <bk>/<srv>", help: "create a new server" },
    Cmd { words: &["add", "map"], level: Operator, usage: "add map [@<ver>] <map> <key> <val>", help: "add a map entry (payload supported instead of key/val)" },
    Cmd { words: &["clear", "acl"], level: Operator, usage: "clear acl [@<ver>] <acl>", help: "clear the contents of this acl" },
    Cmd { words: &["commit", "acl"], level: Operator, usage: "commit acl @<ver> <acl>", help: "commit the ACL at this version" },
    Cmd { words: &["commit", "map"], level: Operator, usage: "commit map @<ver> <map>", help: "commit the map at this version" },
    Cmd { words: &["clear", "counters"], level: Operator, usage: "clear counters [all]", help: "clear max statistics counters (or all counters)" },
    Cmd { words: &["clear", "table"], level: User, usage: "clear table <table> [<filter>]*", help: "remove an entry from a table (filter: data/key)" },
    Cmd { words: &["clear", "map"], level: Operator, usage: "clear map [@<ver>] <map>", help: "clear the contents of this map" },
    Cmd { words: &["del", "acl"], level: Operator, usage: "del acl <acl> [<key>|#<ref>]", help: "delete acl entries matching <key>" },
    Cmd { words: &["del", "server"], level: Admin, usage: "del server <bk>/<srv>", help: "remove a dynamically added server" },
    Cmd { words: &["del", "map"], level: Operator, usage: "del map <map> [<key>|#<ref>]", help: "delete map entries matching <key>" },
    Cmd { words: &["disable", "agent"], level: Admin, usage: "disable agent", help: "disable agent checks" },
    Cmd { words: &["disable", "frontend"], level: Admin, usage: "disable frontend <frontend>", help: "temporarily disable specific frontend" },
    Cmd { words: &["disable", "health"], level: Admin, usage: "disable health", help: "disable health checks" },
    Cmd { words: &["disable", "server"], level: Admin, usage: "disable server (DEPRECATED)", help: "disable a server for maintenance (use 'set server' instead)" },
    Cmd { words: &["enable", "agent"], level: Admin, usage: "enable agent", help: "enable agent checks" },
    Cmd { words: &["enable", "frontend"], level: Admin, usage: "enable frontend <frontend>", help: "re-enable specific frontend" },
    Cmd { words: &["enable", "health"], level: Admin, usage: "enable health", help: "enable health checks" },
    Cmd { words: &["enable", "server"], level: Admin, usage: "enable server  (DEPRECATED)", help: "enable a disabled server (use 'set server' instead)" },
    Cmd { words: &["experimental-mode"], level: Admin, usage: "experimental-mode [on|off]", help: "toggle experimental mode" },
    Cmd { words: &["get", "acl"], level: Operator, usage: "get acl <acl> <value>", help: "report the patterns matching a sample for an ACL" },
    Cmd { words: &["get", "map"], level: Operator, usage: "get map <map> <value>", help: "report the keys and values matching a sample for a map" },
    Cmd { words: &["get", "var"], level: Operator, usage: "get var <name>", help: "retrieve contents of a process-wide variable" },
    Cmd { words: &["get", "weight"], level: User, usage: "get weight <bk>/<srv>", help: "report a server's current weight" },
    Cmd { words: &["operator"], level: User, usage: "operator", help: "lower the level of the current CLI session to operator" },
    Cmd { words: &["prepare", "acl"], level: Operator, usage: "prepare acl <acl>", help: "prepare a new version for atomic ACL replacement" },
    Cmd { words: &["prepare", "map"], level: Operator, usage: "prepare map <acl>", help: "prepare a new version for atomic map replacement" },
    Cmd { words: &["reload"], level: Admin, usage: "reload", help: "read the configuration again and apply it in this process, keeping server states" },
    Cmd { words: &["set", "map"], level: Operator, usage: "set map <map> [<key>|#<ref>] <value>", help: "modify a map entry" },
    Cmd { words: &["set", "maxconn", "frontend"], level: Admin, usage: "set maxconn frontend <frontend> <value>", help: "change a frontend's maxconn setting" },
    Cmd { words: &["set", "maxconn", "global"], level: Admin, usage: "set maxconn global <value>", help: "change the per-process maxconn setting" },
    Cmd { words: &["set", "maxconn", "server"], level: Admin, usage: "set maxconn server <bk>/<srv>", help: "change a server's maxconn setting" },
    Cmd { words: &["set", "profiling"], level: Admin, usage: "set profiling <what> {auto|on|off}", help: "enable/disable resource profiling (tasks,memory)" },
    Cmd { words: &["set", "rate-limit"], level: Admin, usage: "set rate-limit <setting> <value>", help: "change a rate limiting value" },
    Cmd { words: &["set", "server"], level: Admin, usage: "set server <bk>/<srv> [opts]", help: "change a server's state, weight, address or ssl" },
    Cmd { words: &["set", "table"], level: User, usage: "set table <table> key <k> [data.* <v>]*", help: "update or create a table entry's data" },
    Cmd { words: &["set", "timeout"], level: User, usage: "set timeout [cli] <delay>", help: "change a timeout setting" },
    Cmd { words: &["set", "var"], level: Admin, usage: "set var <name> [fmt|expr] {<fmt>|<expr>}", help: "set a process-wide variable (experimental)" },
    Cmd { words: &["set", "weight"], level: Admin, usage: "set weight <bk>/<srv>  (DEPRECATED)", help: "change a server's weight (use 'set server' instead)" },
    Cmd { words: &["show", "acl"], level: Operator, usage: "show acl [@<ver>] <acl>]", help: "report available acls or dump an acl's contents" },
    Cmd { words: &["show", "activity"], level: User, usage: "show activity", help: "show per-thread activity stats (for support/developers)" },
    Cmd { words: &["show", "backend"], level: User, usage: "show backend", help: "list backends in the current running config" },
    Cmd { words: &["show", "cache"], level: Admin, usage: "show cache", help: "show cache status" },
    Cmd { words: &["show", "cli", "level"], level: User, usage: "show cli level", help: "display the level of the current CLI session" },
    Cmd { words: &["show", "errors"], level: Operator, usage: "show errors [<px>] [request|response]", help: "report last request and/or response errors for each proxy" },
    Cmd { words: &["show", "env"], level: Operator, usage: "show env [var]", help: "dump environment variables known to the process" },
    Cmd { words: &["show", "info"], level: User, usage: "show info [desc|json|typed|float]*", help: "report information about the running process" },
    Cmd { words: &["show", "map"], level: Operator, usage: "show map [@ver] [map]", help: "report available maps or dump a map's contents" },
    Cmd { words: &["show", "pools"], level: User, usage: "show pools", help: "report information about the memory pools usage" },
    Cmd { words: &["show", "profiling"], level: User, usage: "show profiling [<what>|<#lines>|byaddr]*", help: "show profiling state (all,status,tasks,memory)" },
    Cmd { words: &["show", "servers", "conn"], level: User, usage: "show servers conn [<backend>]", help: "dump server connections status (all or for a single backend)" },
    Cmd { words: &["show", "servers", "state"], level: User, usage: "show servers state [<backend>]", help: "dump volatile server information (all or for a single backend)" },
    Cmd { words: &["show", "sess"], level: Operator, usage: "show sess [id]", help: "report the list of current sessions or dump this exact session" },
    Cmd { words: &["show", "stat"], level: User, usage: "show stat [desc|json|no-maint|typed|up]*", help: "report counters for each proxy and server" },
    Cmd { words: &["show", "table"], level: User, usage: "show table <table> [<filter>]*", help: "report table usage stats or dump this table's contents (filter: data/key)" },
    Cmd { words: &["show", "version"], level: User, usage: "show version", help: "show version of the current process" },
    Cmd { words: &["shutdown", "frontend"], level: Admin, usage: "shutdown frontend <frontend>", help: "stop a specific frontend" },
    Cmd { words: &["shutdown", "session"], level: Admin, usage: "shutdown session [id]", help: "kill a specific session" },
    Cmd { words: &["shutdown", "sessions", "server"], level: Admin, usage: "shutdown sessions server <bk>/<srv>", help: "kill sessions on a server" },
    Cmd { words: &["user"], level: User, usage: "user", help: "lower the level of the current CLI session to user" },
];

/// The lines every list ends with.
const ALWAYS: &[(&str, &str)] = &[
    ("help [<command>]", "list matching or all commands"),
    ("prompt", "toggle interactive mode with prompt"),
    ("quit", "disconnect"),
];

fn usage_line(out: &mut String, usage: &str, help: &str) {
    let _ = writeln!(out, "  {usage:<40}: {help}");
}

/// Words of a command line (HAProxy splits at spaces and tabs; `\` escapes the next one).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    any = true;
                }
            }
            ' ' | '\t' => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Adds `word`'s letter pairs to a fingerprint (HAProxy's `update_word_fingerprint`).
fn fingerprint(fp: &mut [u8; 1024], word: &str) {
    let class = |c: u8| match c.to_ascii_lowercase() {
        c @ b'a'..=b'z' => usize::from(c - b'a' + 1),
        b'0'..=b'9' => 27,
        _ => 28,
    };
    let mut from = 28;
    for c in word.bytes() {
        let to = class(c);
        fp[32 * from + to] = fp[32 * from + to].wrapping_add(1);
        from = to;
    }
    fp[32 * from + 28] = fp[32 * from + 28].wrapping_add(1);
}

fn distance(a: &[u8; 1024], b: &[u8; 1024]) -> usize {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (i32::from(*x) - i32::from(*y)).unsigned_abs() as usize)
        .sum()
}

/// HAProxy's answer to a command it does not know (`cli_gen_usage_msg`): the commands
/// closest to it, or all of them.
fn usage(sess: &Session, args: &[String], help: bool, out: &mut String) {
    let visible = || COMMANDS.iter().filter(|c| c.level <= sess.level);
    // How many leading words some command matches exactly.
    let length = visible()
        .map(|c| c.words.iter().zip(args).take_while(|(w, a)| **w == a.as_str()).count())
        .max()
        .unwrap_or(0);
    out.push_str(if help {
        "The following commands are valid at this level:\n"
    } else if length == 0 && args.is_empty() {
        "Unknown command. Please enter one of the following commands only:\n"
    } else {
        "Unknown command, but maybe one of the following ones is a better match:\n"
    });
    let mut matches: Vec<(usize, &Cmd)> = Vec::new();
    if !help && args.len() > length {
        for c in visible() {
            let prefix = c.words.iter().zip(args).take_while(|(w, a)| **w == a.as_str()).count();
            if prefix.min(length) != length || prefix > length {
                continue;
            }
            let (mut wa, mut wb) = ([0u8; 1024], [0u8; 1024]);
            let mut total = 0;
            for a in args.iter().skip(length).take(5 - length.min(5)) {
                fingerprint(&mut wa, a);
                total += a.len();
            }
            for w in c.words.iter().skip(length) {
                fingerprint(&mut wb, w);
                total += w.len();
            }
            let d = distance(&wa, &wb);
            if d < 5 * total / 2 {
                matches.push((d, c));
            }
        }
        matches.sort_by_key(|m| m.0);
        matches.truncate(5);
    }
    if let Some(&(best, _)) = matches.first() {
        for (d, c) in &matches {
            if *d > 5 * best / 2 {
                break;
            }
            usage_line(out, c.usage, c.help);
        }
    } else {
        let words_match = |c: &&Cmd| c.words.iter().zip(args).take(length).all(|(w, a)| *w == a);
        for c in visible().filter(words_match) {
            usage_line(out, c.usage, c.help);
        }
    }
    for (u, h) in ALWAYS {
        usage_line(out, u, h);
    }
}

fn find(args: &[String]) -> Option<&'static Cmd> {
    COMMANDS
        .iter()
        .filter(|c| c.words.len() <= args.len() && c.words.iter().zip(args).all(|(w, a)| *w == a))
        .max_by_key(|c| c.words.len())
}

/// Runs one command, writing its answer into `out`.
pub fn run(sess: &mut Session, line: &str, out: &mut String) {
    let args = words(line);
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    match a(0) {
        "help" => return usage(sess, &args[1..], true, out),
        "prompt" => {
            sess.prompt = !sess.prompt;
            return;
        }
        "quit" => {
            sess.quit = true;
            return;
        }
        _ => {}
    }
    let Some(cmd) = find(&args) else {
        return usage(sess, &args, false, out);
    };
    if cmd.level > sess.level {
        out.push_str("Permission denied\n");
        return;
    }
    // The plan current when the command runs (a reload may replace it between commands).
    let Some(shared) = crate::shared::shared() else { return };
    let api = &View { shared };
    match cmd.words {
        ["operator"] | ["user"] => {
            let want = if a(0) == "user" { User } else { Operator };
            if want > sess.level {
                out.push_str("Permission denied\n");
            } else {
                sess.level = want;
            }
        }
        // Answered by the session, once the main loop did it.
        ["reload"] => sess.edit = Some(crate::runtime::Edit::Files),
        ["add", "server"] | ["del", "server"] => server_edit(sess, &args, out),
        ["show", "cli", "level"] => out.push_str(match sess.level {
            User => "user\n",
            Operator => "operator\n",
            Admin => "admin\n",
        }),
        ["show", "version"] => {
            let _ = writeln!(out, "{}", env!("CARGO_PKG_VERSION"));
        }
        ["show", "info"] => show_info(api, &args[2..], out),
        ["show", "stat"] => show_stat(api, sess.level, &args[2..], out),
        ["show", "backend"] => {
            out.push_str("# name\n");
            for be in api.shared.proxies.backends.iter() {
                let _ = writeln!(out, "{}", be.name);
            }
        }
        ["set", "timeout"] => set_timeout(sess, &args, out),
        ["clear", "counters"] => clear_counters(api, sess.level, a(2), out),
        ["disable" | "enable", "frontend"] => frontend_state(api, &args, out),
        ["set", "maxconn", "frontend"] => set_maxconn_frontend(api, a(3), a(4), out),
        ["set", "maxconn", "global"] => set_maxconn_global(api, a(3), out),
        ["set", "rate-limit"] => set_rate_limit(api, &args, out),
        ["get", "var"] => get_var(api, a(2), out),
        ["experimental-mode"] => match a(1) {
            "" => {
                let state = if sess.experimental { "on" } else { "off" };
                let _ = writeln!(out, "experimental-mode is {state}");
            }
            "on" => sess.experimental = true,
            "off" => sess.experimental = false,
            _ => out.push_str("error: 'on' or 'off' expected.\n"),
        },
        ["set", "var"] if !sess.experimental => {
            out.push_str("This command is restricted to experimental mode only.\n")
        }
        ["set", "var"] => set_var(api, &args, out),
        ["show", "errors"] => show_errors(api, a(2), a(3), out),
        ["show", "sess"] => crate::runtime::sessions::show(out),
        ["show", "activity"] => crate::runtime::sessions::activity(out),
        ["show", "profiling"] => crate::runtime::profiling::show(out),
        ["set", "profiling"] => out.push_str(crate::runtime::profiling::set(a(2), a(3))),
        ["show", "pools"] => show_pools(out),
        ["show", "cache"] => {
            let now = crate::cache::now();
            api.shared.proxies.caches.0.iter().for_each(|c| c.show(now, out));
        }
        ["shutdown", "session"] => shutdown_session(a(2), out),
        ["show", "env"] => show_env(a(2), out),
        ["shutdown", "frontend"] => frontend_state(api, &args, out),
        [verb, "table"] => {
            super::tables::run(&api.shared.proxies.tables, verb, &args, sess.level, out)
        }
        [verb, "map"] => {
            let payload = sess.payload.as_deref();
            super::maps::run(crate::rules::refs::Kind::Map, verb, &args, payload, out)
        }
        [verb, "acl"] => {
            let payload = sess.payload.as_deref();
            super::maps::run(crate::rules::refs::Kind::Acl, verb, &args, payload, out)
        }
        _ => super::servers::run(api, cmd.words, &args, out),
    }
}

/// `add server` / `del server`: checks `<bk>/<srv>`, then leaves the edit to the main loop.
fn server_edit(sess: &mut Session, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    let Some((backend, name)) = a(2).split_once('/') else {
        out.push_str("Require 'backend/server'.");
        return;
    };
    let (backend, name) = (backend.to_string(), name.to_string());
    sess.edit = Some(if a(0) == "add" {
        crate::runtime::Edit::AddServer { backend, name, words: args[3..].to_vec() }
    } else {
        crate::runtime::Edit::DelServer { backend, name }
    });
}

/// `clear counters [all]`: the max counters of every proxy and server, or all of them (admin).
fn clear_counters(api: &View, level: CliLevel, arg: &str, out: &mut String) {
    let all = arg == "all";
    if all && level < Admin {
        out.push_str("Permission denied\n");
        return;
    }
    let fes = api.shared.proxies.frontends.iter().map(|f| &f.counters);
    let bes =
        api.shared.proxies.backends.iter().flat_map(|b| {
            std::iter::once(&b.counters).chain(b.servers.iter().map(|s| &s.counters))
        });
    for c in fes.chain(bes) {
        if all {
            c.clear_all();
        } else {
            c.clear_max();
        }
    }
}

/// `set maxconn frontend <frontend> <value>`.
fn set_maxconn_frontend(api: &View, name: &str, value: &str, out: &mut String) {
    let Some(fe) = api.shared.proxies.frontend(name) else {
        out.push_str(if name.is_empty() {
            "Frontend name expected.\n"
        } else {
            "No such frontend.\n"
        });
        return;
    };
    match value.parse::<u32>() {
        Ok(v) => fe.limit.set_max(v),
        Err(_) => out.push_str("Integer value expected.\n"),
    }
}

/// `set maxconn global <value>`.
fn set_maxconn_global(api: &View, value: &str, out: &mut String) {
    // As HAProxy's atoi(): what is not a number is 0, and 0 means "as at start".
    let v = atoi(value);
    let hard = i64::from(api.shared.process.hard_maxconn);
    if v > hard {
        out.push_str("Value out of range.\n");
        return;
    }
    let v = if v <= 0 { hard } else { v };
    api.shared.global_limit.set_max(v as u32);
}

/// `shutdown session <id>`: the id in decimal or `0x` hexadecimal, as `show sess` gives it.
fn shutdown_session(id: &str, out: &mut String) {
    let parsed = match id.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => id.parse().ok(),
    };
    match parsed.filter(|&p| p != 0) {
        None => out.push_str("Session pointer expected (use 'show sess').\n"),
        Some(p) if !crate::runtime::sessions::shutdown(p) => {
            out.push_str("No such session (use 'show sess').\n")
        }
        Some(_) => {}
    }
}

/// `show env [<name>]`: the process's environment, or one variable of it.
fn show_env(name: &str, out: &mut String) {
    match name {
        "" => {
            for (k, v) in std::env::vars_os() {
                let _ = writeln!(out, "{}={}", k.to_string_lossy(), v.to_string_lossy());
            }
        }
        name => match std::env::var_os(name) {
            Some(v) => {
                let _ = writeln!(out, "{name}={}", v.to_string_lossy());
            }
            None => out.push_str("Variable not found\n"),
        },
    }
}

/// C's `atoi`: an optional sign and the leading digits; 0 without any.
fn atoi(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    if neg {
        -n
    } else {
        n
    }
}

fn show_info(api: &View, opts: &[String], out: &mut String) {
    let lines = crate::stats::info::lines(&api.shared.process, &api.shared);
    if opts.iter().any(|o| o == "json") {
        render::info_json(out, &lines);
    } else if opts.iter().any(|o| o == "typed") {
        render::info_typed(out, &lines);
    } else {
        render::info_plain(out, &lines);
    }
}

/// `show stat [<iid> <type> <sid>] [typed|json|up|no-maint]`: HAProxy's filters (`-1` for
/// any proxy or server; type a mask: 1 frontends, 2 backends, 4 servers).
fn show_stat(api: &View, level: CliLevel, args: &[String], out: &mut String) {
    let mut iid = -1i64;
    let mut mask = 15u32;
    let mut sid = -1i64;
    let mut rest = args;
    if args.len() >= 3 {
        if let (Ok(i), Ok(t), Ok(s)) =
            (args[0].parse::<i64>(), args[1].parse::<i64>(), args[2].parse::<i64>())
        {
            iid = i;
            mask = if t < 0 { 15 } else { (t as u32) & 15 };
            sid = s;
            rest = &args[3..];
        }
    }
    let has = |w: &str| rest.iter().any(|o| o == w);
    let scope = rows::Scope {
        global_maxconn: api.shared.global_limit.max(),
        frontends: &api.shared.proxies.frontends,
        legends: level >= Operator,
    };
    let mut rows = rows::all(&scope, &api.shared.proxies.backends, |id, t| {
        let bit = match t {
            ObjType::Frontend => 1,
            ObjType::Backend => 2,
            ObjType::Server => 4,
            ObjType::Listener => 8,
        };
        (iid < 0 || i64::from(id) == iid) && mask & bit != 0
    });
    rows.retain(|r| {
        !matches!(r.obj, ObjType::Server | ObjType::Listener) || sid < 0 || i64::from(r.sid) == sid
    });
    if has("up") || has("no-maint") {
        rows.retain(|r| {
            let Some(crate::stats::Val::Str(st)) =
                r.get("status").filter(|_| r.obj == ObjType::Server)
            else {
                return true;
            };
            if has("up") {
                st.starts_with("UP") || st == "no check"
            } else {
                !st.starts_with("MAINT")
            }
        });
    }
    if has("json") {
        render::json_rows(out, &rows);
    } else if has("typed") {
        for r in &rows {
            render::typed_row(out, r);
        }
    } else {
        render::csv_header(out);
        for r in &rows {
            render::csv_row(out, r);
        }
    }
}

/// `show pools`: Fulcrum has no memory pools of its own; what the allocator holds, in
/// HAProxy's layout (glibc's counts).
fn show_pools(out: &mut String) {
    out.push_str("Dumping pools usage. Use SIGQUIT to flush them.\n");
    let (arena, used) = crate::sys::heap_usage();
    let _ = writeln!(
        out,
        "  - Pool malloc (system allocator, per-thread caches up to 4096 bytes) : {arena} bytes allocated, {used} bytes used"
    );
    let _ = writeln!(out, "Total: 1 pools, {arena} bytes allocated, {used} used.");
}

/// `show errors [<proxy>|<iid>] [request|response]`.
fn show_errors(api: &View, which: &str, kind: &str, out: &mut String) {
    use crate::stats::snapshots::{render, ProxyErrors};
    let s = &api.shared;
    let iid = if which.is_empty() {
        -1
    } else {
        let named = s.proxies.frontends.iter().map(|f| (&f.name, f.id));
        let named = named.chain(s.proxies.backends.iter().map(|b| (&b.name, b.id)));
        match named.into_iter().find(|(n, _)| n.as_str() == which) {
            Some((_, id)) => i64::from(id),
            None => atoi(which),
        }
    };
    if iid == 0 {
        out.push_str("No such proxy.\n");
        return;
    }
    let (want_req, want_resp) = (kind != "response", kind != "request");
    let mut ids: Vec<(u32, &str)> =
        s.proxies.frontends.iter().map(|f| (f.id, f.name.as_str())).collect();
    ids.extend(s.proxies.backends.iter().map(|b| (b.id, b.name.as_str())));
    ids.sort_unstable();
    ids.dedup();
    let other_id = |snap: &Option<crate::counters::Snapshot>| {
        snap.as_ref().and_then(|s| s.other.as_ref().map(|o| i64::from(o.1)))
    };
    let proxies: Vec<ProxyErrors<'_>> = ids
        .into_iter()
        .map(|(id, name)| {
            let fe = s.proxies.frontend_by_id(id);
            let be = s.proxies.backend_by_id(id);
            let mut p = ProxyErrors {
                name,
                id,
                request: fe.and_then(|f| f.invalid_req.get()).filter(|_| want_req),
                response: be.and_then(|b| b.invalid_rep.get()).filter(|_| want_resp),
            };
            if iid >= 0 && i64::from(id) != iid {
                if other_id(&p.request) != Some(iid) {
                    p.request = None;
                }
                if other_id(&p.response) != Some(iid) {
                    p.response = None;
                }
            }
            p
        })
        .collect();
    render(&proxies, s.bufsize, out);
}

fn set_timeout(sess: &mut Session, args: &[String], out: &mut String) {
    if args.get(2).map(String::as_str) != Some("cli") {
        out.push_str("'set timeout' only supports 'cli'.\n");
        return;
    }
    let unit = fulcrum_config::duration::TimeUnit::S;
    match args.get(3).map(|v| fulcrum_config::duration::parse_time_in(v, unit)) {
        Some(Ok(t)) if !t.value.is_zero() => sess.timeout = t.value,
        _ => out.push_str("Expects an integer value.\n"),
    }
}

/// `get var proc.<name>`: HAProxy's `<name>: type=<t> value=<v>` line.
/// `set var proc.<name> [expr] <expr>` / `set var proc.<name> fmt <format>` (HAProxy's
/// experimental command): evaluated with no connection, as global `set-var` lines are.
fn set_var(api: &View, args: &[String], out: &mut String) {
    use crate::rules::sample::{Value, Vars};
    let a = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let Some(name) = a(2).strip_prefix("proc.").filter(|n| !n.is_empty()) else {
        out.push_str("Missing process-wide variable identifier.\n");
        return;
    };
    let (fmt, text) = match a(3) {
        "fmt" => (true, args.get(4..).map(|w| w.join(" ")).unwrap_or_default()),
        "expr" => (false, a(4).to_string()),
        _ => (false, a(3).to_string()),
    };
    if text.is_empty() {
        out.push_str("Missing either 'expr' or 'fmt' followed by an expression.\n");
        return;
    }
    let Some(fe) = api.shared.proxies.frontends.first() else { return };
    let vars = Vars::default();
    let ctx =
        crate::rules::sample::Ctx::process(&fe.proc_vars, &crate::rules::view::NoBackends, &vars);
    let eval = |text: &str| -> Result<Option<Value<'static>>, String> {
        let (p, _) = fulcrum_config::sample::parse(text, fulcrum_config::sample::End::Input)
            .map_err(|e| e.plain())?;
        let c = crate::rules::sample::compile(
            &p.expr,
            &mut |_, _| Err("no maps here".to_string()),
            &|_| Err("no stick tables here".to_string()),
            &|_| Err("no userlists here".to_string()),
        )?;
        Ok(c.eval(&ctx).map(Value::into_owned))
    };
    let value = if fmt {
        let f = match fulcrum_config::logformat::parse(&text, fulcrum_config::sample::Ctx::Monitor)
        {
            Ok(f) => f,
            Err(m) => {
                let _ = writeln!(out, "{m}");
                return;
            }
        };
        let mut buf = Vec::new();
        for part in &f.parts {
            match part {
                fulcrum_config::LogPart::Lit(s) => buf.extend_from_slice(s.as_bytes()),
                fulcrum_config::LogPart::Sep => buf.push(b' '),
                fulcrum_config::LogPart::Sample(e, _) => {
                    if let Ok(Some(v)) = eval(&e.text) {
                        buf.extend_from_slice(&v.as_bytes());
                    }
                }
                fulcrum_config::LogPart::Var(..) => {}
            }
        }
        Ok(Some(Value::Str(std::borrow::Cow::Owned(buf))))
    } else {
        eval(&text)
    };
    match value {
        Ok(Some(v)) => fe.proc_vars.set(name, v),
        Ok(None) => {}
        Err(m) => {
            let _ = writeln!(out, "{m}");
        }
    }
}

fn get_var(api: &View, name: &str, out: &mut String) {
    use crate::rules::sample::Value;
    if name.is_empty() {
        out.push_str("Missing process-wide variable identifier.\n");
        return;
    }
    let found = name
        .strip_prefix("proc.")
        .and_then(|n| api.shared.proxies.frontends.first().and_then(|fe| fe.proc_vars.get(n)));
    let Some(v) = found else {
        out.push_str("Variable not found.\n");
        return;
    };
    let ty = match &v {
        Value::Str(_) => "str",
        Value::Int(_) => "sint",
        Value::Ip(std::net::IpAddr::V4(_)) => "ipv4",
        Value::Ip(_) => "ipv6",
        Value::Bool(_) => "bool",
    };
    let _ = write!(out, "{name}: type={ty} value=<{}>", String::from_utf8_lossy(&v.as_bytes()));
}

fn frontend_state(api: &View, args: &[String], out: &mut String) {
    let name = args.get(2).map_or("", String::as_str);
    if name.is_empty() {
        out.push_str("A frontend name is expected.\n");
        return;
    }
    let Some(fe) = api.shared.proxies.frontend(name) else {
        out.push_str("No such frontend.\n");
        return;
    };
    // `shutdown frontend` stops it as `disable` does (its sockets stay, quiet).
    let disable = args[0] != "enable";
    let was = fe.disabled.swap(disable, Ordering::Relaxed);
    if disable && was {
        out.push_str("Frontend was already shut down.\n");
    } else if !disable && !was {
        out.push_str("Frontend is already enabled.\n");
    } else if !disable {
        fe.enabled.notify_waiters();
    }
}

/// `set rate-limit connections|sessions|ssl-sessions|http-compression global <n>`, with
/// HAProxy 2.6's messages (the value read by `atoi`).
fn set_rate_limit(api: &View, args: &[String], out: &mut String) {
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    let s = &api.shared;
    let which = match (a(2), a(3)) {
        ("connections", "global") => Some(&s.conn_rate),
        ("sessions", "global") => Some(&s.sess_rate),
        ("ssl-sessions", "global") => Some(&s.ssl_rate),
        ("http-compression", "global") => None,
        _ => {
            out.push_str(concat!(
                "'set rate-limit' only supports :\n",
                "   - 'connections global' to set the per-process maximum connection rate\n",
                "   - 'sessions global' to set the per-process maximum session rate\n",
                "   - 'ssl-sessions global' to set the per-process maximum SSL session rate\n",
                "   - 'http-compression global' to set the per-process maximum compression speed in kB/s\n",
            ));
            return;
        }
    };
    if a(4).is_empty() {
        return out.push_str("Expects an integer value.\n");
    }
    let v = atoi(a(4)) as i32;
    if v < 0 {
        return out.push_str("Value out of range.\n");
    }
    match which {
        Some(rate) => rate.set_max(v as u32),
        None => s.comp_rate.set_max(v as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_blanks_with_escapes() {
        assert_eq!(words("  show  stat\ttyped "), ["show", "stat", "typed"]);
        assert_eq!(words("set map m a\\ b 1"), ["set", "map", "m", "a b", "1"]);
    }

    #[test]
    fn the_longest_command_wins() {
        let a = words("set maxconn global 10");
        assert_eq!(find(&a).map(|c| c.words), Some(&["set", "maxconn", "global"][..]));
        assert!(find(&words("set")).is_none());
    }

    #[test]
    fn an_unknown_command_gets_close_suggestions_then_the_fixed_lines() {
        let sess = Session {
            level: Admin,
            prompt: false,
            timeout: Default::default(),
            quit: false,
            edit: None,
            master: false,
            payload: None,
            experimental: false,
        };
        let mut out = String::new();
        usage(&sess, &words("show stats"), false, &mut out);
        assert!(out.starts_with(
            "Unknown command, but maybe one of the following ones is a better match:\n"
        ));
        assert!(
            out.contains("  show stat [desc|json|no-maint|typed|up]*: report counters"),
            "{out}"
        );
        assert!(out.ends_with("  quit                                    : disconnect\n"));
        let mut all = String::new();
        usage(&Session { level: User, ..sess }, &[], true, &mut all);
        assert!(all.contains("get weight") && !all.contains("set server"), "{all}");
    }
}
