//! The proxy's `stats` keywords (the statistics page): `enable`, `uri`, `realm`, `auth`,
//! `refresh`, `scope`, `hide-version`, `show-legends`, `show-modules`, `show-node`,
//! `show-desc`, `admin`, `http-request`, with HAProxy 2.6's messages. Any of them turns the
//! page on (with HAProxy's default URI) for the proxy, and `defaults` pass them on.

use crate::args::Diags;
use crate::lexer::Line;
use crate::model::{StatsAction, StatsPage, StatsRule};
use crate::proxy::ProxyBuild;
use crate::sample::Ctx;

pub fn proxy_line(b: &mut ProxyBuild, line: &Line, kw: &str, diags: &mut Diags) {
    let arg = line.arg(2);
    match kw {
        "stats admin" => return admin(b, line, diags),
        "stats http-request" => return http_request(b, line, diags),
        _ => {}
    }
    let page = b.proxy.stats.get_or_insert_with(StatsPage::default);
    match kw {
        "stats enable" => {}
        "stats uri" if arg.is_empty() => diags.alert(line, "'uri' needs an URI prefix."),
        "stats uri" => page.uri = arg.to_string(),
        "stats realm" if arg.is_empty() => diags.alert(line, "'realm' needs an realm name."),
        // HAProxy keeps the rest of the line (a realm may have spaces).
        "stats realm" => page.realm = Some(line.words[2..].join(" ")),
        "stats refresh" => {
            let unit = crate::duration::TimeUnit::S;
            match crate::duration::parse_time_in(arg, unit) {
                Ok(t) => page.refresh = Some(t.value),
                Err(crate::duration::TimeError::BadChar(c)) => diags.alert(
                    line,
                    format!("unexpected character '{c}' in argument to stats refresh interval."),
                ),
                Err(_) => diags.alert(line, "'refresh' needs a positive interval in seconds."),
            }
        }
        "stats auth" if arg.is_empty() => {
            diags.alert(line, "'auth' needs a user:password account.")
        }
        // As HAProxy: without a colon, the word is a user with an empty password.
        "stats auth" => {
            let (user, pass) = arg.split_once(':').unwrap_or((arg, ""));
            page.auth.push((user.to_string(), pass.to_string()));
        }
        "stats scope" if arg.is_empty() => diags.alert(line, "'scope' needs a proxy name."),
        "stats scope" => page.scope.push(arg.to_string()),
        "stats hide-version" => page.hide_version = true,
        "stats show-legends" => page.show_legends = true,
        "stats show-modules" => page.show_modules = true,
        "stats show-node" => {
            let ok =
                arg.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
            if !ok {
                return diags.alert(line, "'stats show-node' invalid node name - should be a stringwith digits(0-9), letters(A-Z, a-z), hyphen(-) or underscode(_).");
            }
            page.show_node = Some((!arg.is_empty()).then(|| arg.to_string()));
        }
        "stats show-desc" => {
            if arg.is_empty() {
                diags.warning(
                    line,
                    "'show-desc' requires a parameter or 'desc' to be set in the global section.",
                );
            }
            page.show_desc = Some((!arg.is_empty()).then(|| line.words[2..].join(" ")));
        }
        _ => diags.alert(line, format!("'{kw}' is not supported yet")),
    }
}

fn admin(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let msg = "'stats admin' requires either 'if' or 'unless' followed by a condition.";
    if !matches!(line.arg(2), "if" | "unless") {
        return diags.alert(line, msg);
    }
    let wrap = |m: &str| format!("error detected while parsing a 'stats admin' condition : {m}");
    let unexpected = |_: &str| msg.to_string();
    let Ok(Some(cond)) =
        crate::rules::condition(&b.proxy, line, 2, Ctx::HttpRequest, &wrap, &unexpected, diags)
    else {
        return;
    };
    b.proxy.stats.get_or_insert_with(StatsPage::default).admin.push(cond);
}

fn http_request(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let name = b.proxy.name.clone();
    let (action, at) = match line.arg(2) {
        "allow" => (StatsAction::Allow, 3),
        "deny" => (StatsAction::Deny, 3),
        "auth" if line.arg(3) == "realm" => {
            if line.arg(4).is_empty() {
                return diags.alert(line, format!("error detected in proxy '{name}' while parsing 'http-request auth' rule : missing realm value."));
            }
            (StatsAction::Auth(Some(line.arg(4).to_string())), 5)
        }
        "auth" => (StatsAction::Auth(None), 3),
        "" => {
            return diags.alert(
                line,
                "'stats http-request' expects 'allow', 'deny' or 'auth', but got '' (missing argument).",
            )
        }
        other => {
            return diags.alert(
                line,
                format!("'stats http-request {other}' is not supported yet (Fulcrum supports 'allow', 'deny' and 'auth')"),
            )
        }
    };
    let wrap =
        |m: &str| format!("error detected while parsing a 'stats http-request' condition : {m}");
    let unexpected = |w: &str| {
        format!("error detected in proxy '{name}' while parsing 'http-request' rule : expects 'if' or 'unless', got '{w}'.")
    };
    let Ok(cond) =
        crate::rules::condition(&b.proxy, line, at, Ctx::HttpRequest, &wrap, &unexpected, diags)
    else {
        return;
    };
    b.proxy
        .stats
        .get_or_insert_with(StatsPage::default)
        .http_request
        .push(StatsRule { action, cond });
}
