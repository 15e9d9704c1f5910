//! External checks: `option external-check`, `external-check command|path` (a proxy's lines)
//! and HAProxy 2.6's checks of them once every section is read (`global external-check` is
//! required, `insecure-fork-wanted` advised, a command without a leading `/` needs a path).
//! The engine runs the program (`fulcrum::health::external`).

use crate::args::{no_extra, Diags};
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::model::{CheckKind, Config, Proxy};
use crate::proxy::{type_word, ProxyBuild};

/// `option external-check`: the proxy's check option becomes the external program (the last
/// check option wins, as with the others).
pub fn option(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if crate::check::negated(line, diags) || !no_extra(line, 2, "option external-check", diags) {
        return;
    }
    b.proxy.health_check.kind = CheckKind::External;
}

/// `external-check command <cmd>` / `external-check path <path>`.
pub fn line(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    let what = line.arg(1);
    if line.arg(2).is_empty() {
        return diags.alert(line, format!("missing argument after '{what}'."));
    }
    if !no_extra(line, 3, "external-check", diags) {
        return;
    }
    let x = &mut b.proxy.health_check.external;
    let slot = if what == "command" { &mut x.command } else { &mut x.path };
    *slot = Some(line.arg(2).to_string());
}

/// The message for `external-check` followed by anything but `command` or `path`.
pub fn unknown(second: &str) -> String {
    if second.is_empty() {
        "missing argument after 'external-check'.".to_string()
    } else {
        format!("'external-check' only supports 'command' and 'path'. but got '{second}'.")
    }
}

/// HAProxy 2.6's checks (`check_config_validity`), for one proxy.
pub fn check(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    let h = &p.health_check;
    let external = h.kind == CheckKind::External;
    let name = &p.name;
    if external {
        if !config.global.external_check {
            let msg = format!("Proxy '{name}' : 'option external-check' unable to find required 'global.external-check'.");
            out.push(Diagnostic::alert(None, msg));
        }
        if h.external.command.is_none() {
            let msg = format!("Proxy '{name}' : 'option external-check' unable to find required 'external-check command'.");
            out.push(Diagnostic::alert(None, msg));
        }
        if !config.global.insecure_fork_wanted {
            let msg = format!("Proxy '{name}' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail.");
            out.push(Diagnostic::warning(None, msg));
        }
    }
    let ignored = |kw: &str| {
        let msg = format!(
            "'{kw}' will be ignored for {} '{name}' (requires 'option external-check').",
            type_word(p.kind)
        );
        Diagnostic::warning(None, msg)
    };
    if let Some(cmd) = &h.external.command {
        if !external {
            out.push(ignored("external-check command"));
        }
        if !cmd.starts_with('/') && h.external.path.is_none() {
            let msg = format!("Proxy '{name}': 'external-check command' does not have a leading '/' and 'external-check path' is not set.");
            out.push(Diagnostic::alert(None, msg));
        }
    }
    if h.external.path.is_some() && !external {
        out.push(ignored("external-check path"));
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Severity;

    fn load(text: &str) -> (crate::Config, Vec<crate::Diagnostic>) {
        let src = crate::Source { name: "t.cfg".into(), text: text.into() };
        let (c, d, _) = crate::load_partial(&[src], &|_| None);
        (c, d)
    }

    fn diags(text: &str) -> Vec<(Severity, String)> {
        load(text).1.iter().map(|d| (d.severity, d.message.clone())).collect()
    }

    const GLOBAL: &str = "global\n external-check\n insecure-fork-wanted\n";

    #[test]
    fn a_complete_external_check_loads_silently() {
        let text = format!("{GLOBAL}defaults\n timeout connect 1s\n timeout client 1s\n timeout server 1s\nbackend b\n option external-check\n external-check command /bin/true\n server s 127.0.0.1:80 check\n");
        assert_eq!(diags(&text), vec![]);
        let (c, _) = load(&text);
        let b = &c.proxies[0];
        assert_eq!(b.health_check.kind, crate::model::CheckKind::External);
        assert_eq!(b.health_check.external.command.as_deref(), Some("/bin/true"));
    }

    #[test]
    fn haproxys_messages_for_what_is_missing() {
        let d = diags("backend b\n option external-check\n external-check command check.sh\n");
        let has = |sev: Severity, text: &str| d.iter().any(|(s, m)| *s == sev && m == text);
        assert!(has(Severity::Alert, "Proxy 'b' : 'option external-check' unable to find required 'global.external-check'."), "{d:?}");
        assert!(has(Severity::Warning, "Proxy 'b' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail."), "{d:?}");
        assert!(has(Severity::Alert, "Proxy 'b': 'external-check command' does not have a leading '/' and 'external-check path' is not set."), "{d:?}");
        let d = diags(&format!("{GLOBAL}backend b\n option external-check\n"));
        assert!(d.iter().any(|(_, m)| m == "Proxy 'b' : 'option external-check' unable to find required 'external-check command'."), "{d:?}");
        let d = diags(&format!(
            "{GLOBAL}listen l\n external-check command /x\n external-check path /bin\n"
        ));
        assert!(d.iter().any(|(s, m)| *s == Severity::Warning && m == "'external-check command' will be ignored for proxy 'l' (requires 'option external-check')."), "{d:?}");
        assert!(d.iter().any(|(_, m)| m == "'external-check path' will be ignored for proxy 'l' (requires 'option external-check')."), "{d:?}");
    }

    #[test]
    fn line_errors() {
        for (line, msg) in [
            ("external-check", "missing argument after 'external-check'."),
            (
                "external-check foo",
                "'external-check' only supports 'command' and 'path'. but got 'foo'.",
            ),
            ("external-check command", "missing argument after 'command'."),
            (
                "external-check path /a /b",
                "'external-check' cannot handle unexpected argument '/b'.",
            ),
            (
                "option external-check x",
                "'option external-check' cannot handle unexpected argument 'x'.",
            ),
            (
                "no option external-check",
                "negation/default is not supported for option 'external-check'.",
            ),
        ] {
            let d = diags(&format!("{GLOBAL}backend b\n {line}\n"));
            assert!(
                d.iter().any(|(s, m)| *s == Severity::Alert && m.ends_with(msg)),
                "{line}: {d:?}"
            );
        }
    }
}
