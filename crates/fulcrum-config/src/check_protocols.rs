//! The protocol check options: `option redis-check`, `option mysql-check`, `option pgsql-check`,
//! `option smtpchk`, `option ldap-check`, `option spop-check` and `option ssl-hello-chk`. As HAProxy does, each one
//! builds a list of tcp-check steps (the bytes sent, the expects with their statuses and
//! messages), so the engine runs them as any other check; `check::finish` uses the list while
//! the option is the proxy's last check option.
//!
//! The lists are HAProxy 2.6.12's (the last 2.6 release): next to 2.6.0's, its SMTP check accepts
//! multi-line EHLO replies and ends with `QUIT`, and its PostgreSQL check accepts any
//! authentication request.

use crate::args::{no_extra, Diags};
use crate::check::negated;
use crate::lexer::Line;
use crate::model::*;
use crate::proxy::ProxyBuild;

/// `option redis-check`: `PING` in RESP, `+PONG` expected.
pub fn redis(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 2, "option redis-check", diags) {
        return;
    }
    let mut pong = ExpectStep::new(ExpectKind::String(b"+PONG\r\n".to_vec()));
    pong.error_status = Some(CheckStatus::L7Sts);
    pong.on_error = Some(CheckMessage::Payload(Payload::line(0)));
    pong.on_success = Some(CheckMessage::Text("Redis server is ok".into()));
    let steps = vec![send(b"*1\r\n$4\r\nPING\r\n".to_vec()), CheckStep::Expect(pong)];
    set(b, CheckKind::Redis, steps);
}

/// Where the client hello carries its time.
pub const SSL_HELLO_TIME_AT: usize = 11;

/// HAProxy's SSLv3 client hello, time left at zero: a handshake record, 39 RSA/DH cipher
/// suites (0x0001-0x001B, 0x002F-0x003A), no session, NULL compression.
pub fn ssl_client_hello() -> Vec<u8> {
    let mut h = vec![0x16, 0x03, 0x00, 0x00, 0x79, 0x01, 0x00, 0x00, 0x75, 0x03, 0x00];
    h.extend_from_slice(&[0; 4]);
    h.extend_from_slice(b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n");
    h.extend_from_slice(&[0x00, 0x00, 0x4e]);
    for suite in (0x01..=0x1bu16).chain(0x2f..=0x3a) {
        h.extend_from_slice(&suite.to_be_bytes());
    }
    h.extend_from_slice(&[0x01, 0x00]);
    h
}

/// `option ssl-hello-chk`: an SSLv3 client hello; a handshake or alert record expected.
pub fn ssl_hello(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 2, "option ssl-hello-chk", diags) {
        return;
    }
    let hello = SendStep::Dated { data: ssl_client_hello(), time_at: SSL_HELLO_TIME_AT };
    let mut record = ExpectStep::new(ExpectKind::BinaryRegex("^1[56]".into()));
    record.min_recv = 5;
    record.ok_status = Some(CheckStatus::L6Ok);
    record.error_status = Some(CheckStatus::L6Rsp);
    record.tout_status = Some(CheckStatus::L6Timeout);
    set(b, CheckKind::SslHello, vec![CheckStep::Send(hello), CheckStep::Expect(record)]);
}

/// `option smtpchk [EHLO|HELO <domain>]`: a 2xx greeting, then a 2xx answer to `HELO localhost`
/// (or the command given) and to `QUIT`. Other arguments quietly mean `HELO localhost`.
pub fn smtp(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 4, "option smtpchk", diags) {
        return;
    }
    let (verb, domain) = (line.arg(2), line.arg(3));
    let command = if matches!(verb, "EHLO" | "HELO") && !domain.is_empty() {
        format!("{verb} {domain}\r\n")
    } else {
        "HELO localhost\r\n".to_string()
    };
    // The text after the reply code, and the code itself.
    let reply = || Some(CheckMessage::Payload(Payload { ltrim_spaces: true, ..Payload::line(4) }));
    let expect = |pattern: &str, min_recv: i64, error: CheckStatus| {
        let mut e = ExpectStep::new(ExpectKind::Regex(pattern.into()));
        e.min_recv = min_recv;
        e.error_status = Some(error);
        e.on_error = reply();
        e.status_code = Some(Payload::new(0, 3));
        e
    };
    let mut greeting = expect("^[0-9]{3}[ \r]", 4, CheckStatus::L7Rsp);
    greeting.on_error = Some(CheckMessage::Payload(Payload::line(0)));
    greeting.status_code = None;
    let mut bye = expect("^2[0-9]{2}[- \r]", 4, CheckStatus::L7Sts);
    bye.on_success = reply();
    let steps = vec![
        connect_linger(),
        CheckStep::Expect(greeting),
        CheckStep::Expect(expect("^2[0-9]{2}[ \r]", 4, CheckStatus::L7Sts)),
        send(command.into_bytes()),
        // Every line of a multi-line reply up to the last one.
        CheckStep::Expect(expect("^(2[0-9]{2}-[^\r]*\r\n)*2[0-9]{2}[ \r]", -1, CheckStatus::L7Sts)),
        send(b"QUIT\r\n".to_vec()),
        CheckStep::Expect(bye),
    ];
    set(b, CheckKind::Smtp, steps);
}

/// `option pgsql-check user <name>`: a startup message without database; any authentication
/// request ('R') is an answer, an error ('E') is reported with its severity.
pub fn pgsql(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 4, "option pgsql-check", diags) {
        return;
    }
    let (key, user) = (line.arg(2), line.arg(3));
    if key.is_empty() || user.is_empty() {
        return diags.alert(line, "'option pgsql-check' expects 'user <username>' as argument.");
    }
    if key != "user" {
        return diags.alert(line, "'option pgsql-check' only supports optional values: 'user'.");
    }
    let mut startup = ((15 + user.len()) as u32).to_be_bytes().to_vec();
    startup.extend_from_slice(&[0x00, 0x03, 0x00, 0x00]);
    startup.extend_from_slice(b"user\0");
    startup.extend_from_slice(user.as_bytes());
    startup.extend_from_slice(&[0x00, 0x00]);
    let mut not_error = ExpectStep::new(ExpectKind::Regex("^E".into()));
    not_error.inverse = true;
    not_error.min_recv = 5;
    not_error.error_status = Some(CheckStatus::L7Rsp);
    not_error.on_error = Some(CheckMessage::Payload(Payload::new(6, 0)));
    let mut auth = ExpectStep::new(ExpectKind::BinaryRegex(
        "^52000000[A-Z0-9]{2}000000(00|02|03|04|05|06|07|09|0A)".into(),
    ));
    auth.min_recv = 9;
    auth.error_status = Some(CheckStatus::L7Sts);
    auth.on_success = Some(CheckMessage::Text("PostgreSQL server is ok".into()));
    auth.on_error = Some(CheckMessage::Text("PostgreSQL unknown error".into()));
    let steps = vec![
        connect_linger(),
        send(startup),
        CheckStep::Expect(not_error),
        CheckStep::Expect(auth),
    ];
    set(b, CheckKind::Pgsql, steps);
}

/// `option mysql-check [user <name> [post-41|pre-41]]`: the server's handshake must not be an
/// error; with a user, a login packet (protocol 4.1 by default) and `COM_QUIT` are sent at once
/// and the packet after the handshake must not be an error either.
pub fn mysql(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 5, "option mysql-check", diags) {
        return;
    }
    let (key, user, version) = (line.arg(2), line.arg(3), line.arg(4));
    let mut steps = vec![connect_linger()];
    let handshake =
        CheckStep::Expect(ExpectStep::new(ExpectKind::Custom(CustomExpect::MysqlHandshake)));
    if key.is_empty() {
        steps.push(handshake);
        return set(b, CheckKind::Mysql, steps);
    }
    if key != "user" {
        let msg =
            format!("'option mysql-check' only supports optional values: 'user' (got '{key}').");
        return diags.alert(line, msg);
    }
    if user.is_empty() {
        return diags.alert(line, "'option mysql-check user' expects <username> as argument.");
    }
    let post41 = match version {
        "" | "post-41" => true,
        "pre-41" => false,
        other => {
            let msg =
                format!("keyword 'user' only supports 'post-41' and 'pre-41' (got '{other}').");
            return diags.alert(line, msg);
        }
    };
    steps.push(send(mysql_login(user.as_bytes(), post41)));
    steps.push(handshake);
    steps.push(CheckStep::Expect(ExpectStep::new(ExpectKind::Custom(CustomExpect::MysqlOk))));
    set(b, CheckKind::Mysql, steps);
}

/// A MySQL client authentication packet for `user` without password, then `COM_QUIT`.
fn mysql_login(user: &[u8], post41: bool) -> Vec<u8> {
    // Capabilities, maximum packet size (and for 4.1: character set utf8, 23 reserved bytes).
    let fixed: &[u8] = if post41 {
        &[0x00, 0x82, 0x00, 0x00, 0x00, 0x80, 0x00, 0x01, 0x21]
    } else {
        &[0x00, 0x80, 0x00, 0x00, 0x01]
    };
    let reserved = if post41 { 23 } else { 0 };
    let len = (fixed.len() + reserved + user.len() + 2) as u32;
    let mut p = len.to_le_bytes()[..3].to_vec();
    p.push(1); // sequence id
    p.extend_from_slice(fixed);
    p.resize(p.len() + reserved, 0);
    p.extend_from_slice(user);
    p.extend_from_slice(&[0x00, 0x00]); // end of the name, empty password
    p.extend_from_slice(&[0x01, 0x00, 0x00, 0x00, 0x01]); // COM_QUIT
    p
}

/// `option ldap-check`: an anonymous LDAPv3 bind; a successful bind response expected.
pub fn ldap(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 2, "option ldap-check", diags) {
        return;
    }
    let bind = [0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];
    let mut ber = ExpectStep::new(ExpectKind::BinaryRegex("^30".into()));
    ber.min_recv = 14;
    ber.on_error = Some(CheckMessage::Text("Not LDAPv3 protocol".into()));
    let steps = vec![
        send(bind.to_vec()),
        CheckStep::Expect(ber),
        CheckStep::Expect(ExpectStep::new(ExpectKind::Custom(CustomExpect::LdapBind))),
    ];
    set(b, CheckKind::Ldap, steps);
}

/// HAProxy 2.6's health check HELLO (`spoe_prepare_healthcheck_request`): `supported-versions`
/// "2.0", `max-frame-size` 16380, empty `capabilities`, `healthcheck` true.
pub const SPOP_CHECK_HELLO: [u8; 82] = *b"\x00\x00\x00\x4e\x01\x00\x00\x00\x01\x00\x00\
    \x12supported-versions\x08\x032.0\
    \x0emax-frame-size\x03\xfc\xf0\x06\
    \x0ccapabilities\x08\x00\
    \x0bhealthcheck\x11";

/// `option spop-check`: HAProxy's HELLO with `healthcheck`; the agent's HELLO expected.
pub fn spop(b: &mut ProxyBuild, line: &Line, diags: &mut Diags) {
    if negated(line, diags) || !no_extra(line, 2, "option spop-check", diags) {
        return;
    }
    let mut hello = ExpectStep::new(ExpectKind::Custom(CustomExpect::SpopHello));
    hello.min_recv = 4;
    set(b, CheckKind::Spop, vec![send(SPOP_CHECK_HELLO.to_vec()), CheckStep::Expect(hello)]);
}

/// Makes `kind` the proxy's check, with `steps`.
fn set(b: &mut ProxyBuild, kind: CheckKind, steps: Vec<CheckStep>) {
    b.proxy.health_check.kind = kind;
    b.checks.protocol = steps;
}

fn send(data: Vec<u8>) -> CheckStep {
    CheckStep::Send(SendStep::Bytes { data, comment: None })
}

/// HAProxy's `connect default linger`: the server's address, closed without a reset.
fn connect_linger() -> CheckStep {
    CheckStep::Connect(ConnectStep { linger: true, ..ConnectStep::default() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_spop_check_hello_is_haproxys() {
        // Captured from HAProxy 2.6.12's `option spop-check`.
        let hex = "0000004e0100000001000012737570706f727465642d76657273696f6e730803322e300e6d61782d6672616d652d73697a6503fcf0060c6361706162696c697469657308000b6865616c7468636865636b11";
        let got: String = super::SPOP_CHECK_HELLO.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, hex);
        let (h, d) = build("option spop-check");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!((h.kind, h.steps.len()), (CheckKind::Spop, 2));
    }

    use super::*;

    fn build(text: &str) -> (HealthCheck, Vec<String>) {
        let (b, d) = crate::check::tests::build(text);
        (b.proxy.health_check, d)
    }

    fn sent(s: &CheckStep) -> &[u8] {
        match s {
            CheckStep::Send(SendStep::Bytes { data, .. }) => data,
            other => panic!("not a send: {other:?}"),
        }
    }

    fn expect(s: &CheckStep) -> &ExpectStep {
        match s {
            CheckStep::Expect(e) => e,
            other => panic!("not an expect: {other:?}"),
        }
    }

    #[test]
    fn redis_check_sends_ping_and_wants_pong() {
        let (h, d) = build("option redis-check");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::Redis);
        assert_eq!(sent(&h.steps[0]), b"*1\r\n$4\r\nPING\r\n");
        let e = expect(&h.steps[1]);
        assert_eq!(e.kind, ExpectKind::String(b"+PONG\r\n".to_vec()));
        assert_eq!(e.error_status, Some(CheckStatus::L7Sts));
        assert_eq!(e.on_error, Some(CheckMessage::Payload(Payload::line(0))));
        assert_eq!(e.on_success, Some(CheckMessage::Text("Redis server is ok".into())));
        assert_eq!(h.steps.len(), 2);
    }

    #[test]
    fn ssl_hello_is_haproxys_126_byte_client_hello() {
        let (h, d) = build("option ssl-hello-chk");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::SslHello);
        let CheckStep::Send(SendStep::Dated { data, time_at }) = &h.steps[0] else {
            panic!("{:?}", h.steps[0]);
        };
        assert_eq!((data.len(), *time_at), (126, 11));
        // Record length and handshake length as written in the record itself.
        assert_eq!(usize::from(data[4]), data.len() - 5);
        assert_eq!(usize::from(data[8]), data.len() - 9);
        assert_eq!(&data[15..43], b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n");
        assert_eq!(&data[43..46], &[0x00, 0x00, 0x4e]);
        assert_eq!(&data[46..50], &[0x00, 0x01, 0x00, 0x02]);
        assert_eq!(&data[120..], &[0x00, 0x39, 0x00, 0x3a, 0x01, 0x00]);
        let e = expect(&h.steps[1]);
        assert_eq!((e.min_recv, e.ok_status), (5, Some(CheckStatus::L6Ok)));
        assert_eq!(
            (e.error_status, e.tout_status),
            (Some(CheckStatus::L6Rsp), Some(CheckStatus::L6Timeout))
        );
    }

    #[test]
    fn smtp_check_says_helo_localhost_then_quit() {
        let (h, d) = build("option smtpchk");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::Smtp);
        assert_eq!(h.steps.len(), 7);
        assert!(matches!(&h.steps[0], CheckStep::Connect(c) if c.linger));
        assert_eq!(sent(&h.steps[3]), b"HELO localhost\r\n");
        assert_eq!(sent(&h.steps[5]), b"QUIT\r\n");
        let greeting = expect(&h.steps[1]);
        assert_eq!(greeting.kind, ExpectKind::Regex("^[0-9]{3}[ \r]".into()));
        assert_eq!((greeting.min_recv, greeting.status_code), (4, None));
        let ehlo = expect(&h.steps[4]);
        assert_eq!(ehlo.min_recv, -1);
        assert_eq!(ehlo.status_code, Some(Payload::new(0, 3)));
        let bye = expect(&h.steps[6]);
        let text = Payload { offset: 4, len: 0, ltrim_spaces: true, cut_crlf: true };
        assert_eq!(bye.on_success, Some(CheckMessage::Payload(text)));
        assert_eq!(bye.error_status, Some(CheckStatus::L7Sts));
    }

    #[test]
    fn smtp_check_takes_ehlo_or_helo_with_a_domain_and_ignores_anything_else() {
        let (h, _) = build("option smtpchk EHLO mx.example");
        assert_eq!(sent(&h.steps[3]), b"EHLO mx.example\r\n");
        for other in ["option smtpchk EHLO", "option smtpchk ehlo x", "option smtpchk FOO bar"] {
            let (h, d) = build(other);
            assert!(d.is_empty(), "{d:?}");
            assert_eq!(sent(&h.steps[3]), b"HELO localhost\r\n", "{other}");
        }
        let (_, d) = build("option smtpchk EHLO a b");
        assert_eq!(d, ["'option smtpchk' cannot handle unexpected argument 'b'."]);
    }

    #[test]
    fn pgsql_check_sends_a_startup_message_for_the_user() {
        let (h, d) = build("option pgsql-check user bob");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::Pgsql);
        assert_eq!(sent(&h.steps[1]), b"\x00\x00\x00\x12\x00\x03\x00\x00user\x00bob\x00\x00");
        let not_error = expect(&h.steps[2]);
        assert!(not_error.inverse);
        assert_eq!(not_error.on_error, Some(CheckMessage::Payload(Payload::new(6, 0))));
        assert_eq!(expect(&h.steps[3]).min_recv, 9);
    }

    #[test]
    fn pgsql_check_messages_are_haproxys() {
        let expects = "'option pgsql-check' expects 'user <username>' as argument.";
        assert_eq!(build("option pgsql-check").1, [expects]);
        assert_eq!(build("option pgsql-check user").1, [expects]);
        assert_eq!(
            build("option pgsql-check usr bob").1,
            ["'option pgsql-check' only supports optional values: 'user'."]
        );
        assert_eq!(
            build("option pgsql-check user bob x").1,
            ["'option pgsql-check' cannot handle unexpected argument 'x'."]
        );
    }

    #[test]
    fn mysql_check_without_user_only_reads_the_handshake() {
        let (h, d) = build("option mysql-check");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::Mysql);
        assert_eq!(h.steps.len(), 2);
        assert_eq!(expect(&h.steps[1]).kind, ExpectKind::Custom(CustomExpect::MysqlHandshake));
    }

    #[test]
    fn mysql_check_logs_in_as_the_user_with_41_or_40_packets() {
        let (h, d) = build("option mysql-check user bob");
        assert!(d.is_empty(), "{d:?}");
        let mut want = b"\x25\x00\x00\x01\x00\x82\x00\x00\x00\x80\x00\x01\x21".to_vec();
        want.extend_from_slice(&[0; 23]);
        want.extend_from_slice(b"bob\x00\x00\x01\x00\x00\x00\x01");
        assert_eq!(sent(&h.steps[1]), want);
        assert_eq!(expect(&h.steps[3]).kind, ExpectKind::Custom(CustomExpect::MysqlOk));
        let (h41, _) = build("option mysql-check user bob post-41");
        assert_eq!(h41, h);
        let (h, _) = build("option mysql-check user bob pre-41");
        assert_eq!(
            sent(&h.steps[1]),
            b"\x0a\x00\x00\x01\x00\x80\x00\x00\x01bob\x00\x00\x01\x00\x00\x00\x01"
        );
    }

    #[test]
    fn mysql_check_messages_are_haproxys() {
        assert_eq!(
            build("option mysql-check usr").1,
            ["'option mysql-check' only supports optional values: 'user' (got 'usr')."]
        );
        assert_eq!(
            build("option mysql-check user").1,
            ["'option mysql-check user' expects <username> as argument."]
        );
        assert_eq!(
            build("option mysql-check user bob post-42").1,
            ["keyword 'user' only supports 'post-41' and 'pre-41' (got 'post-42')."]
        );
        assert_eq!(
            build("option mysql-check user bob post-41 x").1,
            ["'option mysql-check' cannot handle unexpected argument 'x'."]
        );
    }

    #[test]
    fn ldap_check_binds_anonymously() {
        let (h, d) = build("option ldap-check");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(h.kind, CheckKind::Ldap);
        assert_eq!(sent(&h.steps[0]), b"\x30\x0c\x02\x01\x01\x60\x07\x02\x01\x03\x04\x00\x80\x00");
        let ber = expect(&h.steps[1]);
        assert_eq!(
            (ber.min_recv, ber.on_error.clone()),
            (14, Some(CheckMessage::Text("Not LDAPv3 protocol".into())))
        );
        assert_eq!(expect(&h.steps[2]).kind, ExpectKind::Custom(CustomExpect::LdapBind));
    }

    #[test]
    fn options_without_arguments_refuse_extra_ones_and_negation() {
        for opt in ["redis-check", "ssl-hello-chk", "ldap-check"] {
            let (h, d) = build(&format!("option {opt} x"));
            assert_eq!(d, [format!("'option {opt}' cannot handle unexpected argument 'x'.")]);
            assert_eq!(h.kind, CheckKind::Connect);
        }
        for opt in ["redis-check", "mysql-check", "httpchk", "tcp-check"] {
            let (_, d) = build(&format!("no option {opt}"));
            assert_eq!(d, [format!("negation/default is not supported for option '{opt}'.")]);
        }
    }

    #[test]
    fn the_last_check_option_wins() {
        let (h, _) = build("option redis-check\noption httpchk /\noption ldap-check");
        assert_eq!((h.kind, h.steps.len()), (CheckKind::Ldap, 3));
        let (h, _) = build("option redis-check\ntcp-check send x\noption tcp-check");
        assert_eq!((h.kind, h.steps.len()), (CheckKind::Tcp, 1));
        let (h, _) = build("option tcp-check\ntcp-check send x\noption redis-check");
        assert_eq!((h.kind, h.steps.len()), (CheckKind::Redis, 2));
    }
}
