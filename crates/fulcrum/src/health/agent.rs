//! An agent's answer (HAProxy's `tcpcheck_agent_expect_reply`): one line of words separated by
//! spaces, tabs or commas, up to CR or LF, with an optional `# description`. Words: a health
//! state (`up`, `down`, `stopped`, `fail`), an administrative state (`ready`, `drain`,
//! `maint`), a weight (`75%`), `maxconn:<n>`; the last of each kind wins, anything else is an
//! error to report. Pure: the backend's status entry point applies the result (an
//! [`AgentReply`], which lives beside `AgentAdmin` in `backend::status`).

use crate::backend::status::AgentAdmin;
pub use crate::backend::status::AgentReply;

/// Parses the first line of `buf`; `None` while no CR or LF has arrived.
pub fn parse(buf: &[u8]) -> Option<AgentReply> {
    let end = buf.iter().position(|&b| b == b'\n' || b == b'\r' || b == 0)?;
    if buf[end] == 0 {
        // HAProxy reads the line as a C string: a NUL ends it early.
        return parse_line(&buf[..end]);
    }
    parse_line(&buf[..end])
}

fn parse_line(line: &[u8]) -> Option<AgentReply> {
    let text = String::from_utf8_lossy(line);
    let mut r = AgentReply::default();
    let mut rest: &str = &text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        if let Some(desc) = rest.strip_prefix('#') {
            r.desc = desc.trim_start_matches([' ', '\t']).to_string();
            break;
        }
        let end = rest.find([' ', '\t', ',']).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let lower = word.to_ascii_lowercase();
        match lower.as_str() {
            "up" => r.health = Some((word.to_string(), true)),
            "down" | "stopped" | "fail" => r.health = Some((word.to_string(), false)),
            "ready" => r.admin = Some(AgentAdmin::Ready),
            "drain" => r.admin = Some(AgentAdmin::Drain),
            "maint" => r.admin = Some(AgentAdmin::Maint),
            _ if word.starts_with(|c: char| c.is_ascii_digit()) && word.contains('%') => {
                r.weight = Some(word.to_string())
            }
            _ if lower.starts_with("maxconn:") => r.maxconn = Some(word[8..].to_string()),
            _ => {
                r.error.get_or_insert_with(|| word.to_string());
            }
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_any_order_and_case_the_last_of_a_kind_wins() {
        let r = parse(b"DOWN 50% drain, maxconn:30 up 75%\r\n").expect("line");
        assert_eq!(r.health, Some(("up".to_string(), true)));
        assert_eq!(r.admin, Some(AgentAdmin::Drain));
        assert_eq!((r.weight.as_deref(), r.maxconn.as_deref()), (Some("75%"), Some("30")));
        assert_eq!(r.error, None);
    }

    #[test]
    fn a_description_follows_a_sharp_and_unknown_words_are_errors() {
        let r = parse(b"down bogus other # disk full\n").expect("line");
        assert_eq!(r.health, Some(("down".to_string(), false)));
        assert_eq!(r.error.as_deref(), Some("bogus"));
        assert_eq!(r.desc, "disk full");
    }

    #[test]
    fn no_line_end_means_wait() {
        assert_eq!(parse(b"up 50%"), None);
        assert_eq!(parse(b"\n"), Some(AgentReply::default()));
    }
}
