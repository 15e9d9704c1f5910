//! The answer analyses of protocol checks that no pattern expresses, as HAProxy writes them
//! (`tcpcheck_mysql_expect_iniths`, `tcpcheck_mysql_expect_ok`, `tcpcheck_ldap_expect_bindrsp`,
//! `tcpcheck_spop_expect_agenthello`):
//! pure functions over the bytes received since the last send. A failure's `desc` is only
//! HAProxy's info text; `expect` adds the step's `on-error` and comment around it.
//!
//! HAProxy reads some bytes without checking they arrived (an earlier expect made them likely);
//! here a missing byte is a short answer, or an answer that is not the protocol.

use fulcrum_config::CheckStatus;

use super::expect::{text, Eval};

/// MySQL's initial handshake: a whole packet that is not an error packet. `last_step`: this is
/// the check's last step, which reports the server version itself.
pub fn mysql_handshake(buf: &[u8], last_read: bool, last_step: bool) -> Eval {
    mysql_packet(buf, 0, last_read, last_step)
}

/// The packet after the handshake (the answer to the login sent at connection time): not an
/// error packet.
pub fn mysql_ok(buf: &[u8], last_read: bool, last_step: bool) -> Eval {
    // The handshake before it was checked whole by the step before.
    let handshake = 4 + le24(buf, 0).unwrap_or(0);
    mysql_packet(buf, handshake, last_read, last_step)
}

/// A MySQL packet at `offset`: 3 bytes of length (little-endian), a sequence id, the payload;
/// an error packet's payload is 0xff, a 2-byte error code and the message.
fn mysql_packet(buf: &[u8], offset: usize, last_read: bool, last_step: bool) -> Eval {
    let whole = le24(buf, offset).is_some_and(|len| buf.len() >= offset + 4 + len);
    if !whole {
        if !last_read {
            return Eval::Wait;
        }
        // Truncated, or an invalid length.
        return Eval::Fail { status: CheckStatus::L7Rsp, code: Some(0), desc: String::new() };
    }
    if buf.get(offset + 4) == Some(&0xff) {
        let byte = |i: usize| u16::from(buf.get(offset + i).copied().unwrap_or(0));
        let error = byte(5) | (byte(6) << 8);
        let desc = buf.get(offset + 7..).map(text).unwrap_or_default();
        return Eval::Fail { status: CheckStatus::L7Sts, code: Some(error), desc };
    }
    if !last_step {
        return Eval::Continue;
    }
    // The server version, a NUL-terminated string in the handshake at the start of the buffer.
    let version = buf.get(5..).map(text).unwrap_or_default();
    Eval::Passed { status: CheckStatus::L7Ok, code: Some(0), desc: version }
}

/// A little-endian 24-bit length at `at`.
fn le24(buf: &[u8], at: usize) -> Option<usize> {
    let b = buf.get(at..at + 3)?;
    Some(usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16)
}

/// An SPOE agent's answer to the check's HELLO (`tcpcheck_spop_expect_agenthello`): its whole
/// frame (at least 4 bytes came: the step's `min-recv`), an agent HELLO as the SPOE reads one
/// (frames up to 16380 bytes); a DISCONNECT or anything else fails with the SPOP reason of its
/// status.
pub fn spop_hello(buf: &[u8], last_read: bool) -> Eval {
    use fulcrum_spop as spop;
    let Some(len) = buf.get(..4) else {
        return if last_read { spop_failed(spop::status::INVALID) } else { Eval::Wait };
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    if !last_read && buf.len() < 4 + len {
        return Eval::Wait;
    }
    let frame = match spop::Frame::parse(buf, u32::MAX) {
        Ok(Some((f, _))) => f,
        Ok(None) => return spop_failed(spop::status::INVALID),
        Err(code) => return spop_failed(code),
    };
    if frame.kind == spop::FRAME_AGENT_DISCONNECT {
        let code = spop::agent_disconnect(&frame).map_or_else(|c| c, |d| d.status);
        return spop_failed(code);
    }
    match spop::agent_hello(&frame, spop::MAX_FRAME_SIZE) {
        // (HAProxy's text is replaced when the check ends: its stats show code 0, no text.)
        Ok(_) => Eval::Passed {
            status: CheckStatus::L7Ok,
            code: Some(0),
            desc: "SPOA server is ok".into(),
        },
        Err(code) => spop_failed(code),
    }
}

/// A failed SPOP check: `L7RSP` with the reason of SPOP status `code` (an unknown one as
/// "an unknown error occurred").
fn spop_failed(code: u32) -> Eval {
    let desc = fulcrum_spop::status::reason(code).into();
    Eval::Fail { status: CheckStatus::L7Rsp, code: None, desc }
}

const NOT_LDAP: &str = "Not LDAPv3 protocol";

/// An LDAPv3 bind response to message 1 (BER): `30 <len> 02 01 01 61 <len> 0a 01 <result>`, the
/// result code 0 (success).
pub fn ldap_bind(buf: &[u8], last_read: bool) -> Eval {
    let short = || {
        if last_read {
            Eval::Fail { status: CheckStatus::L7Rsp, code: Some(0), desc: String::new() }
        } else {
            Eval::Wait
        }
    };
    let not_ldap =
        || Eval::Fail { status: CheckStatus::L7Rsp, code: Some(0), desc: NOT_LDAP.into() };
    // The LDAPMessage length: short form, or long form on 2 or 4 bytes (Active Directory).
    let Some(&first) = buf.get(1) else { return short() };
    let (extra, len) = if first & 0x80 != 0 {
        let n = usize::from(first & 0x7f);
        if buf.len() < 1 + n {
            return short();
        }
        let len = match (n, buf.get(2..2 + n)) {
            (2, Some(b)) => usize::from(u16::from_be_bytes([b[0], b[1]])),
            (4, Some(b)) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
            (2 | 4, None) => return short(),
            _ => return not_ldap(),
        };
        (n, len)
    } else {
        (0, usize::from(first))
    };
    if buf.len() < (2 + extra).saturating_add(len) {
        return short();
    }
    // messageID 1, then protocolOp bindResponse.
    let mut at = 2 + extra;
    if buf.get(at..at + 4) != Some(&[0x02, 0x01, 0x01, 0x61]) {
        return not_ldap();
    }
    at += 4;
    // The bindResponse length, skipped.
    let len_bytes = match buf.get(at) {
        Some(&b) if b & 0x80 != 0 => usize::from(b & 0x7f),
        _ => 0,
    };
    at += 1 + len_bytes;
    // resultCode: ENUMERATED, one byte.
    if buf.get(at..at + 2) != Some(&[0x0a, 0x01]) {
        return not_ldap();
    }
    let Some(&result) = buf.get(at + 2) else { return short() };
    if result != 0 {
        let desc = "See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9".into();
        return Eval::Fail { status: CheckStatus::L7Sts, code: Some(u16::from(result)), desc };
    }
    Eval::Passed { status: CheckStatus::L7Ok, code: Some(0), desc: "Success".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MySQL 5.7 handshake (protocol 10, version `5.7.44-log`, native password plugin).
    fn handshake() -> Vec<u8> {
        let mut payload =
            b"\x0a5.7.44-log\x00\x07\x00\x00\x00abcdefgh\x00\xff\xf7\x21\x02\x00\xff\x81\x15"
                .to_vec();
        payload.extend_from_slice(&[0; 10]);
        payload.extend_from_slice(b"ijklmnopqrst\x00mysql_native_password\x00");
        packet(0, &payload)
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    fn passed(desc: &str) -> Eval {
        Eval::Passed { status: CheckStatus::L7Ok, code: Some(0), desc: desc.into() }
    }

    fn failed(status: CheckStatus, code: u16, desc: &str) -> Eval {
        Eval::Fail { status, code: Some(code), desc: desc.into() }
    }

    #[test]
    fn a_mysql_handshake_as_last_step_reports_the_server_version() {
        let hs = handshake();
        assert_eq!(mysql_handshake(&hs, false, true), passed("5.7.44-log"));
        assert_eq!(mysql_handshake(&hs, false, false), Eval::Continue);
    }

    #[test]
    fn a_partial_mysql_packet_waits_then_fails_when_nothing_more_comes() {
        let hs = handshake();
        for cut in [0, 3, 4, 20, hs.len() - 1] {
            assert_eq!(mysql_handshake(&hs[..cut], false, true), Eval::Wait, "{cut}");
            assert_eq!(
                mysql_handshake(&hs[..cut], true, true),
                failed(CheckStatus::L7Rsp, 0, ""),
                "{cut}"
            );
        }
    }

    #[test]
    fn a_mysql_error_packet_gives_its_code_and_message() {
        let err = packet(0, b"\xff\x6a\x04Host 'x' is not allowed to connect to this MySQL server");
        assert_eq!(
            mysql_handshake(&err, false, true),
            failed(
                CheckStatus::L7Sts,
                1130,
                "Host 'x' is not allowed to connect to this MySQL server"
            )
        );
    }

    #[test]
    fn after_a_login_the_packet_after_the_handshake_decides() {
        let mut buf = handshake();
        assert_eq!(mysql_ok(&buf, false, true), Eval::Wait);
        let ok = packet(2, b"\x00\x00\x00\x02\x00\x00\x00");
        buf.extend_from_slice(&ok[..5]);
        assert_eq!(mysql_ok(&buf, false, true), Eval::Wait);
        buf.extend_from_slice(&ok[5..]);
        // The version still comes from the handshake at the start of the buffer.
        assert_eq!(mysql_ok(&buf, false, true), passed("5.7.44-log"));
        let mut denied = handshake();
        denied.extend(packet(
            2,
            b"\xff\x15\x04#28000Access denied for user 'bob'@'h' (using password: NO)",
        ));
        assert_eq!(
            mysql_ok(&denied, false, true),
            failed(
                CheckStatus::L7Sts,
                1045,
                "#28000Access denied for user 'bob'@'h' (using password: NO)"
            )
        );
    }

    #[test]
    fn a_mysql_error_packet_too_short_for_its_code_does_not_panic() {
        assert_eq!(
            mysql_handshake(b"\x01\x00\x00\x00\xff", false, true),
            failed(CheckStatus::L7Sts, 0, "")
        );
        assert_eq!(mysql_ok(b"\xff\xff\xff", true, true), failed(CheckStatus::L7Rsp, 0, ""));
    }

    const BIND_OK: &[u8] = b"\x30\x0c\x02\x01\x01\x61\x07\x0a\x01\x00\x04\x00\x04\x00";

    #[test]
    fn an_ldap_bind_success_passes_with_haproxys_text() {
        assert_eq!(ldap_bind(BIND_OK, false), passed("Success"));
    }

    #[test]
    fn an_ldap_bind_failure_gives_the_result_code() {
        let mut denied = BIND_OK.to_vec();
        denied[9] = 49; // invalidCredentials
        assert_eq!(
            ldap_bind(&denied, false),
            failed(
                CheckStatus::L7Sts,
                49,
                "See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9"
            )
        );
    }

    #[test]
    fn ldap_lengths_in_long_form_are_read_on_two_or_four_bytes() {
        // Active Directory: 30 84 <4-byte length> ... 61 84 <4-byte length>.
        let ad = b"\x30\x84\x00\x00\x00\x10\x02\x01\x01\x61\x84\x00\x00\x00\x07\x0a\x01\x00\x04\x00\x04\x00";
        assert_eq!(ldap_bind(ad, false), passed("Success"));
        let two = b"\x30\x82\x00\x0c\x02\x01\x01\x61\x07\x0a\x01\x00\x04\x00\x04\x00";
        assert_eq!(ldap_bind(two, false), passed("Success"));
        let three = b"\x30\x83\x00\x00\x0c\x02\x01\x01\x61\x07\x0a\x01\x00\x04\x00\x04\x00";
        assert_eq!(ldap_bind(three, false), failed(CheckStatus::L7Rsp, 0, NOT_LDAP));
    }

    #[test]
    fn an_ldap_answer_to_another_message_or_operation_is_not_ldap() {
        let mut other_id = BIND_OK.to_vec();
        other_id[4] = 2;
        assert_eq!(ldap_bind(&other_id, false), failed(CheckStatus::L7Rsp, 0, NOT_LDAP));
        let mut no_enum = BIND_OK.to_vec();
        no_enum[7] = 0x02;
        assert_eq!(ldap_bind(&no_enum, false), failed(CheckStatus::L7Rsp, 0, NOT_LDAP));
    }

    #[test]
    fn a_short_ldap_answer_waits_then_fails_without_text() {
        // Says 49 bytes follow ('0' '1' ...): HAProxy waits for them.
        assert_eq!(ldap_bind(b"0123456789abcdef", false), Eval::Wait);
        assert_eq!(ldap_bind(b"0123456789abcdef", true), failed(CheckStatus::L7Rsp, 0, ""));
        for cut in 0..BIND_OK.len() - 1 {
            assert_ne!(ldap_bind(&BIND_OK[..cut], true), passed("Success"), "{cut}");
        }
        // Lengths that claim more than exists never read past the end.
        assert_eq!(ldap_bind(b"\x30\x84\xff\xff\xff\xff", true), failed(CheckStatus::L7Rsp, 0, ""));
        assert_eq!(
            ldap_bind(b"\x30\x00\x02\x01\x01\x61\xff", true),
            failed(CheckStatus::L7Rsp, 0, NOT_LDAP)
        );
    }
}
