//! Servers added and deleted at run time (the runtime API's `add server` and `del server`):
//! the configuration texts in force with one `server` line added at the end of its backend's
//! section, or removed, after HAProxy 2.6's checks (with its messages). The caller builds a
//! new generation from them, which carries every other server's state by name; the added
//! server then starts as HAProxy's dynamic servers do, in maintenance with its checks off.
//!
//! A reload from the files forgets these changes, as HAProxy's reload does. Must not touch:
//! sockets, state other than the added server's start.

use std::sync::Arc;

use fulcrum_config::Source;

use crate::runtime::NewPlan;
use crate::shared::Shared;

/// Words that start a section.
const SECTIONS: &[&str] = &[
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "userlist",
    "peers",
    "resolvers",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "cache",
    "fcgi-app",
];

fn first_words(line: &str) -> (Option<&str>, Option<&str>) {
    let mut w = line.split_whitespace();
    (w.next(), w.next())
}

/// Where backend `name`'s section is: the source, the line after its header, the line that
/// ends it (the next section's header, or the end of the file).
fn section(sources: &[Source], name: &str) -> Option<(usize, usize, usize)> {
    for (i, s) in sources.iter().enumerate() {
        let lines: Vec<&str> = s.text.lines().collect();
        let Some(start) = lines.iter().position(
            |l| matches!(first_words(l), (Some("backend" | "listen"), Some(n)) if n == name),
        ) else {
            continue;
        };
        let end = lines[start + 1..]
            .iter()
            .position(|l| first_words(l).0.is_some_and(|w| SECTIONS.contains(&w)))
            .map_or(lines.len(), |p| start + 1 + p);
        return Some((i, start + 1, end));
    }
    None
}

/// A word as the configuration reads it back: bare, or in single quotes (nothing is expanded
/// or escaped there), or in double quotes with `"`, `\` and `$` escaped when it holds a `'`.
fn quoted(w: &str) -> String {
    if !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || "#\"'\\$".contains(c)) {
        return w.to_string();
    }
    if !w.contains('\'') {
        return format!("'{w}'");
    }
    format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\"").replace('$', "\\$"))
}

fn with_lines(sources: &[Source], i: usize, lines: Vec<String>) -> Vec<Source> {
    let mut out = sources.to_vec();
    out[i].text = lines.join("\n") + "\n";
    out
}

/// `add server <backend>/<name> <address> [<keyword>...]`: the texts with the server added.
pub fn add(
    current: &Arc<Shared>,
    sources: &[Source],
    backend: &str,
    name: &str,
    words: &[String],
) -> Result<Vec<Source>, Vec<String>> {
    let Some(be) = current.proxies.backend(backend) else {
        return Err(vec!["No such backend.".into()]);
    };
    if !be.dynamic_weights() {
        return Err(vec![
            "Backend must use a dynamic load balancing to support dynamic servers.".into()
        ]);
    }
    if be.servers.iter().any(|s| s.name == name) {
        return Err(vec!["Already exists a server with the same name in backend.\n".into()]);
    }
    // As HAProxy 2.6: these keywords cannot apply to a server added at run time.
    for kw in ["cookie"] {
        if words.iter().any(|w| w == kw) {
            return Err(vec![format!("'{kw}' option is not accepted for dynamic server\n")]);
        }
    }
    let Some((i, _, end)) = section(sources, backend) else {
        return Err(vec!["No such backend.".into()]);
    };
    let mut lines: Vec<String> = sources[i].text.lines().map(str::to_string).collect();
    let mut line = format!("    server {}", quoted(name));
    for w in words {
        line.push(' ');
        line.push_str(&quoted(w));
    }
    lines.insert(end, line);
    Ok(with_lines(sources, i, lines))
}

/// The added server starts in maintenance, its checks off.
pub fn start_added(next: &NewPlan, backend: &str, name: &str) {
    let Some(be) = next.shared.proxies.backend(backend) else { return };
    if let Some(idx) = be.server_index(name) {
        be.start_dynamic(idx);
    }
}

/// `del server <backend>/<name>`: the texts without the server.
pub fn delete(
    current: &Arc<Shared>,
    sources: &[Source],
    backend: &str,
    name: &str,
) -> Result<Vec<Source>, Vec<String>> {
    let Some(be) = current.proxies.backend(backend) else {
        return Err(vec!["No such backend.".into()]);
    };
    let Some(srv) = be.server_index(name).map(|i| &be.servers[i]) else {
        return Err(vec!["No such server.".into()]);
    };
    if !srv.state().admin.maint() {
        return Err(vec!["Only servers in maintenance mode can be deleted.".into()]);
    }
    if srv.cur_conns() > 0 {
        return Err(vec!["Server still has connections attached to it, cannot remove it.".into()]);
    }
    let refused = || {
        vec!["This server cannot be removed at runtime due to other configuration elements pointing to it.".into()]
    };
    let Some((i, start, end)) = section(sources, backend) else { return Err(refused()) };
    let mut lines: Vec<String> = sources[i].text.lines().map(str::to_string).collect();
    let at = (start..end).find(|&n| {
        matches!(first_words(&lines[n]), (Some("server"), Some(n)) if n == name || n == quoted(name))
    });
    let Some(at) = at else { return Err(refused()) };
    lines.remove(at);
    Ok(with_lines(sources, i, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Vec<Source> {
        vec![Source { name: "a.cfg".into(), text: text.into() }]
    }

    #[test]
    fn a_section_ends_at_the_next_section_or_the_end_of_its_file() {
        let s = src("global\n daemon\nbackend be\n server a 1.1.1.1:80\n\nfrontend fe\n bind :80\nlisten l\n server b 2.2.2.2:80\n");
        assert_eq!(section(&s, "be"), Some((0, 3, 5)));
        assert_eq!(section(&s, "l"), Some((0, 8, 9)));
        assert_eq!(section(&s, "fe"), None, "a frontend holds no servers");
        assert_eq!(section(&s, "nope"), None);
    }

    #[test]
    fn words_are_quoted_only_when_the_configuration_would_read_them_otherwise() {
        assert_eq!(quoted("1.2.3.4:80"), "1.2.3.4:80");
        assert_eq!(quoted("a b"), "'a b'");
        assert_eq!(quoted("x#y"), "'x#y'");
        assert_eq!(quoted("${HOME}"), "'${HOME}'");
        assert_eq!(quoted(""), "''");
        assert_eq!(quoted("it's"), "\"it's\"");
        // The configuration reads each back as the word it was.
        for w in ["a b", "x#y", "${HOME}", "it's $x \"q\""] {
            let text = format!("listen be\n bind 127.0.0.1:1\n description {}\n", quoted(w));
            let loaded = fulcrum_config::load(&src(&text), &|_| None).expect("loads");
            let be = loaded.config.proxies.iter().find(|p| p.name == "be").expect("be");
            assert_eq!(be.description.as_deref(), Some(w), "{text}");
        }
    }
}
