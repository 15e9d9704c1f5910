//! Mail alerts: `mailers` sections (`mailer <name> <ip>:<port>`, `timeout mail`), a proxy's
//! `email-alert from|to|mailers|myhostname|level` lines, and HAProxy 2.6's checks of them once
//! every section is read (an incomplete `email-alert` set is ignored with a warning, an unknown
//! `mailers` name is an error, a section no proxy uses is removed with a warning). The engine
//! sends the messages (`fulcrum::mail`).

use std::time::Duration;

use crate::args::{invalid_char, no_extra, Diags};
use crate::diag::Diagnostic;
use crate::lexer::Line;
use crate::model::{Config, Proxy, ServerAddr, ServerPort, Span};
use crate::proxy::type_word;

/// HAProxy's `DEF_MAILALERTTIME`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A `mailers <name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailersSection {
    pub name: String,
    pub span: Span,
    pub mailers: Vec<Mailer>,
    /// `timeout mail`: how long one alert's SMTP exchange with one mailer may last.
    pub timeout: Duration,
}

/// `mailer <name> <host>:<port>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mailer {
    pub name: String,
    /// The address as written (an IP address or a name the engine resolves at start-up).
    pub host: String,
    pub port: u16,
    pub span: Span,
}

/// A proxy's `email-alert` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailAlert {
    pub mailers: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    /// `myhostname`: what `HELO` says (the machine's host name otherwise).
    pub myhostname: Option<String>,
    /// `level`: alerts at this syslog level or more urgent are sent (default `alert`, 1).
    pub level: u8,
    /// Some `email-alert` line was given (HAProxy's `email_alert.set`).
    pub set: bool,
}

impl Default for EmailAlert {
    fn default() -> Self {
        EmailAlert { mailers: None, from: None, to: None, myhostname: None, level: 1, set: false }
    }
}

impl EmailAlert {
    /// The three settings an alert needs are all present.
    pub fn complete(&self) -> bool {
        self.mailers.is_some() && self.from.is_some() && self.to.is_some()
    }
}

/// `mailers <name>`: a new section, or `None` when the line is refused (its lines are then
/// skipped, as HAProxy aborts on these errors).
pub fn start(
    line: &Line,
    sections: &[MailersSection],
    diags: &mut Diags,
) -> Option<MailersSection> {
    let name = line.arg(1);
    if name.is_empty() {
        diags.alert(line, "missing name for mailers section.");
        return None;
    }
    if let Some(c) = invalid_char(name) {
        diags.alert(line, format!("character '{c}' is not permitted in 'mailers' name '{name}'."));
        return None;
    }
    if let Some(other) = sections.iter().find(|s| s.name == name) {
        let msg = format!(
            "mailers section '{name}' has the same name as another mailers section declared at {}.",
            other.span
        );
        diags.alert(line, msg);
    }
    Some(MailersSection {
        name: name.to_string(),
        span: line.span.clone(),
        mailers: Vec::new(),
        timeout: DEFAULT_TIMEOUT,
    })
}

/// One line inside a `mailers` section.
pub fn line(s: &mut MailersSection, line: &Line, diags: &mut Diags) {
    let kw = line.arg(0);
    match kw {
        "mailer" => {
            let (name, addr) = (line.arg(1), line.arg(2));
            if addr.is_empty() {
                let msg = "'mailer' expects <name> and <addr>[:<port>] as arguments.";
                return diags.alert(line, msg);
            }
            if let Some(c) = invalid_char(name) {
                let msg = format!("character '{c}' is not permitted in server name '{name}'.");
                return diags.alert(line, msg);
            }
            match mailer_addr(addr) {
                Ok((host, port)) => s.mailers.push(Mailer {
                    name: name.to_string(),
                    host,
                    port,
                    span: line.span.clone(),
                }),
                Err(e) => diags.alert(line, format!("'mailer {name}' : {e}")),
            }
        }
        "timeout" => match line.arg(1) {
            "" => diags.alert(line, "'timeout' expects 'mail' and <time> as arguments."),
            "mail" if line.arg(2).is_empty() => {
                diags.alert(line, "'timeout mail' expects <time> as argument.")
            }
            "mail" => {
                let v = line.arg(2);
                match crate::duration::parse_time(v) {
                    Ok(d) => {
                        if no_extra(line, 3, "timeout mail", diags) {
                            s.timeout = d;
                        }
                    }
                    Err(crate::duration::TimeError::Overflow) => diags.alert(line, format!("timer overflow in argument <{v}> to <timeout mail>, maximum value is 2147483647 ms (~24.8 days).")),
                    Err(crate::duration::TimeError::BadChar(c)) => diags
                        .alert(line, format!("unexpected character '{c}' in argument to <timeout mail>.")),
                    Err(crate::duration::TimeError::Missing) => {}
                }
            }
            other => diags.alert(
                line,
                format!("'timeout' expects 'mail' and <time> as arguments got '{other}'."),
            ),
        },
        _ => diags.alert(line, format!("unknown keyword '{kw}' in 'mailers' section")),
    }
}

/// A mailer's `<addr>:<port>`: TCP only, port required.
fn mailer_addr(text: &str) -> Result<(String, u16), String> {
    match crate::server::parse_server_addr(text)? {
        ServerAddr::Unix(_) => Err("TCP not supported for this address family.".to_string()),
        ServerAddr::Inet { host, port: ServerPort::Fixed(p) } => Ok((host, p)),
        ServerAddr::Inet { port: ServerPort::Same, .. } => {
            Err(format!("missing port specification in '{text}'"))
        }
        ServerAddr::Inet { port: ServerPort::Offset(_), .. } => {
            Err(format!("port offsets are not allowed in '{text}'"))
        }
    }
}

/// A proxy's `email-alert <what> <value>` line.
pub fn email_alert(ea: &mut EmailAlert, line: &Line, diags: &mut Diags) {
    let what = line.arg(1);
    let value = line.arg(2);
    match what {
        "" => return diags.alert(line, "missing argument after 'email-alert'."),
        "from" => ea.from = Some(value.to_string()),
        "to" => ea.to = Some(value.to_string()),
        "mailers" => ea.mailers = Some(value.to_string()),
        "myhostname" => ea.myhostname = Some(value.to_string()),
        "level" => match crate::logtargets::LEVELS.iter().position(|l| *l == value) {
            Some(n) => ea.level = n as u8,
            // HAProxy 2.6 names the arguments the other way round.
            None => {
                let msg = format!("unknown log level '{what}' after '{value}'");
                return diags.alert(line, msg);
            }
        },
        other => return diags.alert(line, format!("email-alert: unknown argument '{other}'.")),
    }
    ea.set = true;
}

/// The message for `email-alert` followed by no known word.
pub fn unknown(second: &str) -> String {
    if second.is_empty() {
        "missing argument after 'email-alert'.".to_string()
    } else {
        format!("email-alert: unknown argument '{second}'.")
    }
}

/// HAProxy 2.6's checks of a proxy's `email-alert` settings.
pub fn check(config: &Config, p: &Proxy, out: &mut Vec<Diagnostic>) {
    let ea = &p.email_alert;
    if !ea.set {
        return;
    }
    if !ea.complete() {
        let msg = format!("'email-alert' will be ignored for {} '{}' (the presence any of 'email-alert from', 'email-alert level' 'email-alert mailers', 'email-alert myhostname', or 'email-alert to' requires each of 'email-alert from', 'email-alert mailers' and 'email-alert to' to be present).", type_word(p.kind), p.name);
        return out.push(Diagnostic::warning(None, msg));
    }
    if let Some(name) = &ea.mailers {
        if !config.mailers.iter().any(|m| &m.name == name) {
            let msg = format!("Proxy '{}': unable to find mailers '{name}'.", p.name);
            out.push(Diagnostic::alert(None, msg));
        }
    }
}

/// `Removing incomplete section 'mailers <name>'.` for each section no proxy's complete
/// `email-alert` set names (the engine drops them).
pub fn unused(config: &Config, out: &mut Vec<Diagnostic>) {
    for m in &config.mailers {
        let used = config.proxies.iter().any(|p| {
            let ea = &p.email_alert;
            ea.set && ea.complete() && ea.mailers.as_deref() == Some(&m.name)
        });
        if !used {
            let msg = format!("Removing incomplete section 'mailers {}'.", m.name);
            out.push(Diagnostic::warning(None, msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Severity;

    fn load(text: &str) -> (crate::Config, Vec<(Severity, String)>) {
        let src = crate::Source { name: "t.cfg".into(), text: text.into() };
        let (c, d, _) = crate::load_partial(&[src], &|_| None);
        (c, d.iter().map(|d| (d.severity, d.message.clone())).collect())
    }

    #[test]
    fn a_mailers_section_and_a_complete_email_alert() {
        let (c, d) = load("mailers mta\n mailer smtp1 127.0.0.1:2525\n mailer smtp2 ::1:25\n timeout mail 20s\nbackend b\n email-alert mailers mta\n email-alert from lb@example.com\n email-alert to ops@example.com\n email-alert level notice\n email-alert myhostname lb1\n");
        assert!(d.is_empty(), "{d:?}");
        let m = &c.mailers[0];
        assert_eq!((m.name.as_str(), m.timeout.as_secs(), m.mailers.len()), ("mta", 20, 2));
        assert_eq!((m.mailers[1].host.as_str(), m.mailers[1].port), ("::1", 25));
        let ea = &c.proxies[0].email_alert;
        assert_eq!((ea.level, ea.myhostname.as_deref()), (5, Some("lb1")));
        assert!(ea.complete());
    }

    #[test]
    fn haproxys_messages() {
        let (_, d) =
            load("mailers mta\n mailer m 127.0.0.1:25\nbackend b\n email-alert from a@b\n");
        let has =
            |d: &[(Severity, String)], s: Severity, m: &str| d.iter().any(|x| x.0 == s && x.1 == m);
        assert!(has(&d, Severity::Warning, "'email-alert' will be ignored for backend 'b' (the presence any of 'email-alert from', 'email-alert level' 'email-alert mailers', 'email-alert myhostname', or 'email-alert to' requires each of 'email-alert from', 'email-alert mailers' and 'email-alert to' to be present)."), "{d:?}");
        assert!(has(&d, Severity::Warning, "Removing incomplete section 'mailers mta'."), "{d:?}");
        let (_, d) = load(
            "backend b\n email-alert mailers zz\n email-alert from a@b\n email-alert to c@d\n",
        );
        assert!(has(&d, Severity::Alert, "Proxy 'b': unable to find mailers 'zz'."), "{d:?}");
        for (text, msg) in [
            ("mailers\n", "missing name for mailers section."),
            ("mailers m\n mailer a\n", "'mailer' expects <name> and <addr>[:<port>] as arguments."),
            (
                "mailers m\n mailer a 127.0.0.1\n",
                "'mailer a' : missing port specification in '127.0.0.1'",
            ),
            (
                "mailers m\n mailer a /tmp/s\n",
                "'mailer a' : TCP not supported for this address family.",
            ),
            ("mailers m\n timeout\n", "'timeout' expects 'mail' and <time> as arguments."),
            ("mailers m\n timeout mail\n", "'timeout mail' expects <time> as argument."),
            (
                "mailers m\n timeout mail 5x\n",
                "unexpected character 'x' in argument to <timeout mail>.",
            ),
            (
                "mailers m\n timeout connect 5s\n",
                "'timeout' expects 'mail' and <time> as arguments got 'connect'.",
            ),
            ("mailers m\n foo\n", "unknown keyword 'foo' in 'mailers' section"),
            ("backend b\n email-alert\n", "missing argument after 'email-alert'."),
            ("backend b\n email-alert level loud\n", "unknown log level 'level' after 'loud'"),
            ("backend b\n email-alert bcc x\n", "email-alert: unknown argument 'bcc'."),
        ] {
            let (_, d) = load(text);
            assert!(
                d.iter().any(|(s, m)| *s == Severity::Alert && m.ends_with(msg)),
                "{text}: {d:?}"
            );
        }
    }
}
