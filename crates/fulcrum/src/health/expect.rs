//! Evaluating one `expect` step of a check on the bytes received so far (HAProxy's
//! `tcpcheck_eval_expect` and `tcpcheck_eval_expect_http`): match, wait for more, or fail with
//! the status and message HAProxy gives. Protocol checks' own analyses are in `custom`; the
//! `on-success`/`on-error` messages and response codes they take from the answer are read here.
//! Pure: the check runner feeds it.

use fulcrum_config::{
    CheckMessage, CheckStatus, CustomExpect, ExpectKind, ExpectStep, HeaderExpect, HeaderMatch,
    Payload,
};
use fulcrum_pattern::Rx as Regex;
use regex::bytes::RegexBuilder;

use super::custom;

use super::http::Response;

/// An expect step with its patterns compiled.
#[derive(Debug)]
pub struct Expect {
    pub step: ExpectStep,
    regex: Option<Regex>,
    value_regex: Option<Regex>,
}

impl Expect {
    pub fn new(step: ExpectStep) -> Self {
        // Byte by byte, as HAProxy's PCRE matches (`[^\r]` takes any byte, not only UTF-8);
        // a pattern only Unicode mode accepts (a non-ASCII class) keeps it.
        // What only PCRE takes (back-references, look-around) is compiled with PCRE2.
        let compile = |p: &str| {
            let r = RegexBuilder::new(p).unicode(false).build();
            let r = r.or_else(|_| regex::bytes::Regex::new(p)).map(Regex::Fast);
            r.ok().or_else(|| fulcrum_pattern::compile_regex(p, false).ok())
        };
        let (regex, value_regex) = match &step.kind {
            ExpectKind::Regex(p)
            | ExpectKind::BinaryRegex(p)
            | ExpectKind::StatusRegex(p)
            | ExpectKind::BodyRegex(p) => (compile(p), None),
            // Header names match whatever their case, as HAProxy compiles them (`REG_ICASE`).
            ExpectKind::Header(h) => (
                (h.name_match == HeaderMatch::Reg)
                    .then(|| fulcrum_pattern::compile_regex(&h.name, true).ok())
                    .flatten(),
                match (&h.value, h.value_match) {
                    (Some(v), HeaderMatch::Reg) => compile(v),
                    _ => None,
                },
            ),
            _ => (None, None),
        };
        Expect { step, regex, value_regex }
    }
}

/// The outcome of one evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eval {
    /// Matched as wanted: next step.
    Continue,
    /// Not conclusive yet: read more.
    Wait,
    /// The check failed; `code` is the response code logs show (`code: 1045`).
    Fail { status: CheckStatus, code: Option<u16>, desc: String },
    /// Matched, and the analysis reports the check passed at once (HAProxy's MySQL and LDAP
    /// analyses do, then the run reports again as it ends).
    Passed { status: CheckStatus, code: Option<u16>, desc: String },
}

/// How messages are worded: plain `tcp-check` rules get HAProxy's generic text, protocol
/// checks (HTTP, redis...) only their comment.
#[derive(Clone, Copy, Debug)]
pub struct Wording {
    pub tcp_check: bool,
    pub step_id: u32,
    /// The step is the check's last.
    pub last_step: bool,
}

/// A TCP expect over `buf` (everything received since the last send).
pub fn tcp(x: &Expect, buf: &[u8], last_read: bool, w: Wording) -> Eval {
    let e = &x.step;
    if let ExpectKind::Custom(c) = e.kind {
        return custom(x, c, buf, last_read, w);
    }
    if !last_read {
        if let ExpectKind::String(p) | ExpectKind::Binary(p) = &e.kind {
            if buf.len() < p.len() {
                return Eval::Wait;
            }
        }
        if e.min_recv > 0 && (buf.len() as i64) < e.min_recv {
            return Eval::Wait;
        }
    }
    let matched = match &e.kind {
        ExpectKind::String(p) | ExpectKind::Binary(p) => contains(buf, p),
        ExpectKind::Regex(_) => x.regex.as_ref().is_some_and(|r| r.is_match(buf)),
        ExpectKind::BinaryRegex(_) => {
            let hex: Vec<u8> = buf.iter().flat_map(|b| hex_pair(*b)).collect();
            x.regex.as_ref().is_some_and(|r| r.is_match(&hex))
        }
        _ => false,
    };
    if !matched && !last_read && e.min_recv == -1 {
        return Eval::Wait;
    }
    if matched != e.inverse {
        return Eval::Continue;
    }
    let status = e.error_status.unwrap_or(CheckStatus::L7Rsp);
    Eval::Fail { status, code: status_code(e, buf), desc: error_text(e, matched, w, "", buf) }
}

/// A protocol's own analysis of the answer.
fn custom(x: &Expect, c: CustomExpect, buf: &[u8], last_read: bool, w: Wording) -> Eval {
    let ev = match c {
        CustomExpect::MysqlHandshake => custom::mysql_handshake(buf, last_read, w.last_step),
        CustomExpect::MysqlOk => custom::mysql_ok(buf, last_read, w.last_step),
        CustomExpect::LdapBind => custom::ldap_bind(buf, last_read),
        CustomExpect::SpopHello => custom::spop_hello(buf, last_read),
        // The runner reads agents' answers itself.
        CustomExpect::Agent => return Eval::Continue,
    };
    match ev {
        Eval::Fail { status, code, desc } => Eval::Fail {
            status,
            code: status_code(&x.step, buf).or(code),
            desc: error_text(&x.step, false, w, &desc, buf),
        },
        other => other,
    }
}

/// HAProxy's `tcpcheck_expect_onerror_message` for a TCP expect: the analysis' own text
/// (`info`), else the step's `on-error`, else for `tcp-check` rules the generic text; then the
/// comment.
fn error_text(e: &ExpectStep, matched: bool, w: Wording, info: &str, buf: &[u8]) -> String {
    let mut msg = String::new();
    if !info.is_empty() {
        msg.push_str(info);
    } else if let Some(m) = &e.on_error {
        msg.push_str(&message(m, buf));
    } else if w.tcp_check {
        msg.push_str(if matched {
            "TCPCHK matched unwanted content"
        } else {
            "TCPCHK did not match content"
        });
        let id = w.step_id;
        match &e.kind {
            ExpectKind::String(p) => {
                msg.push_str(&format!(" '{}' at step {id}", String::from_utf8_lossy(p)))
            }
            ExpectKind::Binary(_) => msg.push_str(&format!(" (binary) at step {id}")),
            ExpectKind::Regex(_) => msg.push_str(&format!(" (regex) at step {id}")),
            ExpectKind::BinaryRegex(_) => msg.push_str(&format!(" (binary regex) at step {id}")),
            ExpectKind::Custom(_) => msg.push_str(&format!(" (custom function) at step {id}")),
            _ => {}
        }
    }
    if let Some(c) = &e.comment {
        msg.push_str(" comment: ");
        msg.push_str(c);
    }
    msg
}

/// An `on-success` / `on-error` message over the answer received.
pub fn message(m: &CheckMessage, buf: &[u8]) -> String {
    match m {
        CheckMessage::Text(t) => t.clone(),
        CheckMessage::Payload(p) => payload(p, buf).map(text).unwrap_or_default(),
    }
}

/// The response code an expect step takes from the answer (`status-code`): the number the
/// bytes start with (0 if none), as HAProxy casts a string to an integer. `None` when the
/// bytes are not there, or the number is negative (not shown as HAProxy shows it).
pub fn status_code(e: &ExpectStep, buf: &[u8]) -> Option<u16> {
    let bytes = payload(e.status_code.as_ref()?, buf).filter(|b| !b.is_empty())?;
    let (negative, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let n = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
    if negative && n != 0 {
        return None;
    }
    // HAProxy keeps the code in a C `short` for logs.
    Some(n as u16)
}

/// `res.payload(<offset>,<len>)` with its converters; `None` when the bytes are not there.
fn payload<'a>(p: &Payload, buf: &'a [u8]) -> Option<&'a [u8]> {
    let end = if p.len == 0 { buf.len() } else { p.offset.checked_add(p.len)? };
    let mut b = buf.get(p.offset..end)?;
    if p.ltrim_spaces {
        let spaces = b.iter().take_while(|&&c| c == b' ').count();
        b = &b[spaces..];
    }
    if p.cut_crlf {
        b = &b[..b.iter().position(|&c| c == b'\r' || c == b'\n').unwrap_or(b.len())];
    }
    Some(b)
}

/// Received bytes as message text: up to the first NUL, as HAProxy's C strings end.
pub fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// An HTTP expect over the response received so far (`None`: no complete head yet).
#[cfg(test)]
pub fn http(x: &Expect, resp: Option<&Response>, last_read: bool, disable_404: bool) -> Eval {
    http_with(x, None, resp, last_read, disable_404)
}

/// As [`http`], a header expect's name and value taken from `rendered` (`name-lf`,
/// `value-lf` rendered for this run) when given.
pub fn http_with(
    x: &Expect,
    rendered: Option<&HeaderExpect>,
    resp: Option<&Response>,
    last_read: bool,
    disable_404: bool,
) -> Eval {
    let e = &x.step;
    let fail = |status: CheckStatus, desc: String| {
        let mut msg = match &e.on_error {
            // `res.payload` reads nothing from an HTTP answer, as in HAProxy.
            Some(m) => message(m, b""),
            None => desc,
        };
        if let Some(c) = &e.comment {
            msg.push_str(" comment: ");
            msg.push_str(c);
        }
        Eval::Fail { status, code: None, desc: msg }
    };
    let Some(resp) = resp else {
        return if last_read { fail(CheckStatus::L7Rsp, String::new()) } else { Eval::Wait };
    };
    let last_read = last_read || resp.complete;
    // A 404 from a server that is up is accepted here; the runner turns it into L7OKC.
    if disable_404 && resp.status == 404 {
        return Eval::Continue;
    }
    let reason = resp.reason.clone();
    let sts = e.error_status.unwrap_or(CheckStatus::L7Sts);
    let (matched, status, desc) = match &e.kind {
        ExpectKind::Status(ranges) => {
            let m = ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&resp.status));
            (m, sts, reason)
        }
        ExpectKind::StatusRegex(_) => {
            let code = resp.status.to_string();
            (x.regex.as_ref().is_some_and(|r| r.is_match(code.as_bytes())), sts, reason)
        }
        ExpectKind::Header(h) => (header_matches(x, rendered.unwrap_or(h), resp), sts, reason),
        ExpectKind::Body(_) | ExpectKind::BodyRegex(_) => {
            let rsp = e.error_status.unwrap_or(CheckStatus::L7Rsp);
            if resp.body.is_empty() {
                if !last_read {
                    return Eval::Wait;
                }
                return fail(rsp, "HTTP content check could not find a response body".into());
            }
            if !last_read {
                let short = match &e.kind {
                    ExpectKind::Body(p) => resp.body.len() < p.len(),
                    _ => false,
                };
                if short || (e.min_recv > 0 && (resp.body.len() as i64) < e.min_recv) {
                    return Eval::Wait;
                }
            }
            let m = match &e.kind {
                ExpectKind::Body(p) => contains(&resp.body, p),
                _ => x.regex.as_ref().is_some_and(|r| r.is_match(&resp.body)),
            };
            if !m && !last_read && e.min_recv == -1 {
                return Eval::Wait;
            }
            let text = if e.inverse {
                "HTTP check matched unwanted content"
            } else {
                "HTTP content check did not match"
            };
            (m, rsp, text.to_string())
        }
        _ => (false, CheckStatus::L7Rsp, String::new()),
    };
    if matched != e.inverse {
        Eval::Continue
    } else {
        fail(status, desc)
    }
}

fn header_matches(x: &Expect, h: &HeaderExpect, resp: &Response) -> bool {
    let values = |name: &str| -> Vec<String> {
        let mut out = Vec::new();
        for (n, v) in &resp.headers {
            if n.eq_ignore_ascii_case(name) {
                if h.full {
                    out.push(v.clone());
                } else {
                    out.extend(v.split(',').map(|s| s.trim().to_string()));
                }
            }
        }
        out
    };
    let name_ok = |n: &str| match h.name_match {
        HeaderMatch::Str => n.eq_ignore_ascii_case(&h.name),
        HeaderMatch::Beg => n.to_ascii_lowercase().starts_with(&h.name.to_ascii_lowercase()),
        HeaderMatch::End => n.to_ascii_lowercase().ends_with(&h.name.to_ascii_lowercase()),
        HeaderMatch::Sub => n.to_ascii_lowercase().contains(&h.name.to_ascii_lowercase()),
        HeaderMatch::Reg => x.regex.as_ref().is_some_and(|r| r.is_match(n.as_bytes())),
    };
    let mut names: Vec<&str> =
        resp.headers.iter().map(|(n, _)| n.as_str()).filter(|n| name_ok(n)).collect();
    names.dedup();
    let Some(want) = &h.value else { return !names.is_empty() };
    names.iter().flat_map(|n| values(n)).any(|v| match h.value_match {
        HeaderMatch::Str => v == *want,
        HeaderMatch::Beg => v.starts_with(want.as_str()),
        HeaderMatch::End => v.ends_with(want.as_str()),
        HeaderMatch::Sub => v.contains(want.as_str()),
        HeaderMatch::Reg => x.value_regex.as_ref().is_some_and(|r| r.is_match(v.as_bytes())),
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

fn hex_pair(b: u8) -> [u8; 2] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(kind: ExpectKind) -> Expect {
        Expect::new(ExpectStep::new(kind))
    }

    const W: Wording = Wording { tcp_check: true, step_id: 2, last_step: true };

    #[test]
    fn a_string_waits_for_enough_bytes_then_matches_or_fails_at_the_end() {
        let e = x(ExpectKind::String(b"+PONG".to_vec()));
        assert_eq!(tcp(&e, b"+PO", false, W), Eval::Wait);
        assert_eq!(tcp(&e, b"-ERR x", false, W), Eval::Wait);
        assert_eq!(tcp(&e, b"xx+PONG\r\n", false, W), Eval::Continue);
        assert_eq!(
            tcp(&e, b"-ERR x", true, W),
            Eval::Fail {
                status: CheckStatus::L7Rsp,
                code: None,
                desc: "TCPCHK did not match content '+PONG' at step 2".into()
            }
        );
    }

    #[test]
    fn inverse_binary_regex_and_min_recv() {
        let mut e = ExpectStep::new(ExpectKind::BinaryRegex("^0A0B".into()));
        e.inverse = true;
        e.min_recv = 2;
        let e = Expect::new(e);
        assert_eq!(tcp(&e, b"\x0a", false, W), Eval::Wait);
        assert!(matches!(tcp(&e, b"\x0a\x0b", false, W), Eval::Fail { .. }));
        assert_eq!(tcp(&e, b"\x0b\x0a", false, W), Eval::Continue);
    }

    fn resp(status: u16, body: &[u8]) -> Response {
        Response {
            status,
            reason: "Reason".into(),
            headers: vec![("X-State".into(), "ok, ready".into())],
            body: body.to_vec(),
            complete: true,
        }
    }

    #[test]
    fn http_status_headers_and_body() {
        let st = x(ExpectKind::Status(vec![(200, 399)]));
        assert_eq!(http(&st, Some(&resp(302, b"")), false, false), Eval::Continue);
        assert_eq!(
            http(&st, Some(&resp(500, b"")), false, false),
            Eval::Fail { status: CheckStatus::L7Sts, code: None, desc: "Reason".into() }
        );
        assert_eq!(http(&st, None, false, false), Eval::Wait);
        assert_eq!(http(&st, Some(&resp(404, b"")), false, true), Eval::Continue);
        let h = x(ExpectKind::Header(HeaderExpect {
            name: "x-state".into(),
            name_match: HeaderMatch::Str,
            value: Some("ready".into()),
            value_match: HeaderMatch::Str,
            full: false,
            name_lf: None,
            value_lf: None,
        }));
        assert_eq!(http(&h, Some(&resp(200, b"")), false, false), Eval::Continue);
        let b = x(ExpectKind::Body(b"alive".to_vec()));
        assert_eq!(http(&b, Some(&resp(200, b"I am alive")), false, false), Eval::Continue);
        assert_eq!(
            http(&b, Some(&resp(200, b"dead")), false, false),
            Eval::Fail {
                status: CheckStatus::L7Rsp,
                code: None,
                desc: "HTTP content check did not match".into()
            }
        );
    }

    /// SMTP's reply text and code, as `option smtpchk` takes them.
    fn smtp_reply(pattern: &str) -> Expect {
        let mut e = ExpectStep::new(ExpectKind::Regex(pattern.into()));
        e.min_recv = 4;
        e.error_status = Some(CheckStatus::L7Sts);
        let text = Payload { ltrim_spaces: true, ..Payload::line(4) };
        e.on_error = Some(CheckMessage::Payload(text));
        e.status_code = Some(Payload::new(0, 3));
        Expect::new(e)
    }

    const PROTO: Wording = Wording { tcp_check: false, step_id: 3, last_step: false };

    #[test]
    fn a_failed_protocol_expect_gives_the_reply_text_and_code() {
        let e = smtp_reply("^2[0-9]{2}[ \r]");
        assert_eq!(
            tcp(&e, b"554  5.7.1 <x>: denied\r\nmore", false, PROTO),
            Eval::Fail {
                status: CheckStatus::L7Sts,
                code: Some(554),
                desc: "5.7.1 <x>: denied".into()
            }
        );
        // Fewer bytes than the code: no code, no text.
        assert_eq!(
            tcp(&e, b"55", true, PROTO),
            Eval::Fail { status: CheckStatus::L7Sts, code: None, desc: String::new() }
        );
        // Not a number: HAProxy's cast reads 0.
        assert_eq!(status_code(&e.step, b"abc def"), Some(0));
        assert_eq!(tcp(&e, b"250 ok\r\n", false, PROTO), Eval::Continue);
    }

    #[test]
    fn payload_messages_stop_at_a_nul_and_read_nothing_past_the_end() {
        let error = b"E\x00\x00\x00\x20SFATAL\x00VFATAL\x00C28000\x00";
        assert_eq!(message(&CheckMessage::Payload(Payload::new(6, 0)), error), "FATAL");
        assert_eq!(message(&CheckMessage::Payload(Payload::new(60, 0)), error), "");
        assert_eq!(message(&CheckMessage::Payload(Payload::line(0)), b"-ERR x\r\ny"), "-ERR x");
        assert_eq!(message(&CheckMessage::Payload(Payload::new(0, 3)), b"ab"), "");
    }

    #[test]
    fn protocol_steps_fail_with_their_comment_only_and_tcp_check_with_haproxys_text() {
        let mut e = ExpectStep::new(ExpectKind::String(b"+PONG".to_vec()));
        e.comment = Some("ping".into());
        let e = Expect::new(e);
        let fail = |w| match tcp(&e, b"-ERR", true, w) {
            Eval::Fail { desc, .. } => desc,
            other => panic!("{other:?}"),
        };
        assert_eq!(fail(PROTO), " comment: ping");
        assert_eq!(fail(W), "TCPCHK did not match content '+PONG' at step 2 comment: ping");
    }

    #[test]
    fn regexes_match_bytes_as_haproxys_pcre_does() {
        // A multi-line EHLO reply whose first line is not UTF-8.
        let mut e = smtp_reply("^(2[0-9]{2}-[^\r]*\r\n)*2[0-9]{2}[ \r]");
        e.step.min_recv = -1;
        assert_eq!(tcp(&e, b"250-caf\xe9\r\n250 ok\r\n", false, PROTO), Eval::Continue);
        // Until the last line, more is awaited.
        assert_eq!(tcp(&e, b"250-caf\xe9\r\n", false, PROTO), Eval::Wait);
    }
}
